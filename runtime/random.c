/* random.c - Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3", SC'11; the Random123 reference) and the global generator.
 *
 * Element i of a draw at (seed, offset) has counter c = offset + i and is
 * made from words of one Philox block (key = seed, low word then high word;
 * block number in words 0 and 1 of the counter, words 2 and 3 zero); a
 * block's four words serve as many elements as a value needs words for:
 *   uniform f32 (one word): block c / 4, word c % 4; its top 24 bits times
 *           2^-24                                                 -> [0, 1)
 *   uniform f64 (two words): block c / 2, words 2 (c % 2) (hi) and
 *           2 (c % 2) + 1 (lo); the top 53 bits of hi:lo, times 2^-53
 *   normal f32 (a pair of words gives two): block c / 4, u1 from word
 *           2 t and u2 from word 2 t + 1, t = (c % 4) / 2; Box-Muller's
 *           sqrt(-2 ln(1 - u1)) times cos(2 pi u2) for even c, sin for odd,
 *           computed in float with ir/vmath.h (|z| <= 5.77, the limit of a
 *           24-bit u1)
 *   normal f64 (a block gives two): block c / 2, u1 from words 0:1, u2 from
 *           words 2:3; sqrt(-2 ln(1 - u1)) times cos(2 pi u2) for even c,
 *           sin for odd, in double with libm
 * So a value depends only on (seed, counter): any split of the range over
 * threads gives the same tensor, and draws at different offsets never share
 * a word. Blocks are made BATCH at a time in lane arrays, so the rounds
 * vectorize; one block per value made four times the rounds f32 needs.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "iter.h"
#include "random.h"
#include "../ir/vmath.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
#define BATCH 64

/* ---- the global generator -------------------------------------------------- */

static _Atomic uint64_t rng_seed;     /* 0 at process start */
static _Atomic uint64_t rng_offset;

void rt_rng_seed(uint64_t seed)
{
    atomic_store(&rng_seed, seed);
    atomic_store(&rng_offset, 0);
}

static _Thread_local rt_rng_tape *tape;   /* this thread's (checkpoints) */

static uint64_t reserve(uint64_t n, uint64_t *seed)
{
    *seed = atomic_load(&rng_seed);
    return atomic_fetch_add(&rng_offset, n);
}

uint64_t rt_rng_reserve(uint64_t n, uint64_t *seed)
{
    if (!tape)
        return reserve(n, seed);
    if (tape->replay) {
        if (tape->pos < tape->len && tape->e[tape->pos][0] == n) {
            *seed = tape->e[tape->pos][1];
            return tape->e[tape->pos++][2];
        }
        tape->mismatch = true;
        return reserve(n, seed);
    }
    uint64_t first = reserve(n, seed);
    uint64_t(*e)[3] = rt_grow(tape->e, &tape->cap, tape->len, sizeof *tape->e);
    if (!e) {
        tape->failed = true;
        return first;
    }
    tape->e = e;
    uint64_t *r = tape->e[tape->len++];
    r[0] = n;
    r[1] = *seed;
    r[2] = first;
    return first;
}

rt_rng_tape *rt_rng_tape_begin(rt_rng_tape *t, bool replay)
{
    rt_rng_tape *prev = tape;
    t->replay = replay;
    t->pos = 0;
    tape = t;
    return prev;
}

void rt_rng_tape_end(rt_rng_tape *prev) { tape = prev; }

void rt_rng_tape_free(rt_rng_tape *t)
{
    free(t->e);
    t->e = NULL;
    t->len = t->cap = t->pos = 0;
}

static _Thread_local rt_rng_frame call_rng;   /* the running compiled call's draws */

void rt_rng_call_begin(uint64_t total, const uint64_t *at, uint64_t ndraws, rt_rng_frame *save)
{
    *save = call_rng;
    call_rng.on = true;
    call_rng.at = at;
    call_rng.ndraws = ndraws;
    call_rng.base = rt_rng_reserve(total, &call_rng.seed);
}

void rt_rng_call_end(const rt_rng_frame *save) { call_rng = *save; }

int rt_rng_resolve(uint64_t seed_attr, uint64_t offset_attr, uint64_t *seed, uint64_t *offset)
{
    if (!(offset_attr & RT_RNG_CALL)) {
        *seed = seed_attr;
        *offset = offset_attr;
        return 0;
    }
    if (!call_rng.on) {
        rt_error("a random op of a traced graph ran outside a compiled call (its draws are "
                 "reserved by the call)");
        return -1;
    }
    uint64_t j = offset_attr & ~RT_RNG_CALL;
    if (j >= call_rng.ndraws) {
        rt_error("a random op of a traced graph is draw %llu of its call, which reserved %llu",
                 (unsigned long long)j, (unsigned long long)call_rng.ndraws);
        return -1;
    }
    *seed = call_rng.seed;
    *offset = call_rng.base + call_rng.at[j];
    return 0;
}

/* ---- Philox ----------------------------------------------------------------- */

void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Blocks for counters first .. first+n-1 (n <= BATCH) into lane arrays w[0..3]. */
RT_CLONES static void philox_batch(uint64_t seed, uint64_t first, int n, uint32_t w[4][BATCH])
{
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    uint32_t *restrict c0 = w[0], *restrict c1 = w[1], *restrict c2 = w[2], *restrict c3 = w[3];
    for (int j = 0; j < BATCH; j++) {
        uint64_t c = first + (uint64_t)(j < n ? j : 0);
        c0[j] = (uint32_t)c;
        c1[j] = (uint32_t)(c >> 32);
        c2[j] = 0;
        c3[j] = 0;
    }
    for (int r = 0; r < 10; r++) {
        for (int j = 0; j < BATCH; j++) {
            uint64_t p0 = (uint64_t)PHILOX_M0 * c0[j], p1 = (uint64_t)PHILOX_M1 * c2[j];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[j] ^ k0;
            uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[j] ^ k1;
            c0[j] = n0;
            c1[j] = (uint32_t)p1;
            c2[j] = n2;
            c3[j] = (uint32_t)p0;
        }
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
}

/* ---- distributions ------------------------------------------------------------ */

static inline float u24(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }

static inline double u53(uint32_t hi, uint32_t lo)
{
    return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}

/* Turns BATCH blocks w into per values each, in value order, into vals. */
typedef void batch_fn(uint32_t w[4][BATCH], void *vals);

/* Values offset .. offset+n-1 of a stream of per values a block (1, 2 or 4)
 * of es bytes each into out: BATCH blocks at a time through batch, the
 * first block's first skip values (those of counters before offset) left
 * out. A chunk never runs past the counter's wrap (block 0 follows there,
 * not the next block). */
static void draw(uint64_t seed, uint64_t offset, void *out, int64_t n, int per, size_t es, batch_fn *batch)
{
    uint32_t w[4][BATCH];
    double vals[2 * BATCH];   /* per * BATCH values: 1 KiB for f32 and f64 alike */
    for (int64_t i = 0; i < n;) {
        uint64_t c = offset + (uint64_t)i;
        int skip = (int)(c % (uint64_t)per);
        int64_t left = n - i;
        if (c && 0 - c < (uint64_t)left)
            left = (int64_t)(0 - c);
        int64_t blocks = (skip + left + per - 1) / per;
        int nb = blocks < BATCH ? (int)blocks : BATCH;
        philox_batch(seed, c / (uint64_t)per, nb, w);
        batch(w, vals);
        int64_t m = left < (int64_t)nb * per - skip ? left : (int64_t)nb * per - skip;
        memcpy((char *)out + (size_t)i * es, (char *)vals + (size_t)skip * es, (size_t)m * es);
        i += m;
    }
}

/* The four words of each block as floats, value order: f[4 b + t] = word t
 * of block b. */
RT_CLONES static void uniform_f32_batch(uint32_t w[4][BATCH], void *vals)
{
    float *restrict f = vals;
    for (int b = 0; b < BATCH; b++)
        for (int t = 0; t < 4; t++)
            f[4 * b + t] = u24(w[t][b]);
}

void rt_philox_uniform_f32(uint64_t seed, uint64_t offset, float *out, int64_t n)
{
    draw(seed, offset, out, n, 4, sizeof *out, uniform_f32_batch);
}

/* Two values a block, value order: d[2 b + t] from words 2 t, 2 t + 1 of block b. */
RT_CLONES static void uniform_f64_batch(uint32_t w[4][BATCH], void *vals)
{
    double *restrict d = vals;
    for (int b = 0; b < BATCH; b++)
        for (int t = 0; t < 2; t++)
            d[2 * b + t] = u53(w[2 * t][b], w[2 * t + 1][b]);
}

void rt_philox_uniform_f64(uint64_t seed, uint64_t offset, double *out, int64_t n)
{
    draw(seed, offset, out, n, 2, sizeof *out, uniform_f64_batch);
}

/* Box-Muller: 1 - u1 lies in (0, 1], so the log is finite. f32 uses the
 * branch-free vmath formulas so the loop vectorizes; f64 uses libm.
 *
 * cos(2 pi u) and sin(2 pi u) for u in [0, 1) (a multiple of 2^-24): the
 * reduction to r in [-pi/4, pi/4] and a quadrant is exact, then vmath's
 * polynomials. */
static inline void sincos_2pi_f32(float u, float *sn, float *cs)
{
    float w = 4.0f * (u - vm_rint_small_f32(u));   /* [-2, 2] quarter turns */
    float q = vm_rint_small_f32(w);
    float r = (w - q) * 1.57079632679489662f;
    float s = vm_sinr_f32(r), c = vm_cosr_f32(r);
    int32_t k = (int32_t)q & 3;                     /* k pi/2 + r */
    float a = (k & 1) ? s : c, b = (k & 1) ? c : s;
    *cs = (k == 1 || k == 2) ? -a : a;
    *sn = (k == 2 || k == 3) ? -b : b;
}

/* log(x) for x in [2^-24, 1]: vm_log_f32 without its special cases (NaN,
 * inf, 0, negatives), which this domain never meets and whose selects keep
 * gcc 12 from vectorizing the loop. */
static inline float log_unit_f32(float x)
{
    vm_logparts_f32 s = vm_log_split_f32(x);
    return s.e * -2.12194440e-4f + s.c + s.f + s.e * 0.693359375f;
}

/* Four values a block, value order: the pair of words 2 t, 2 t + 1 of
 * block b gives f[4 b + 2 t] = r cos(2 pi u2) and f[4 b + 2 t + 1] =
 * r sin(2 pi u2), r = sqrt(-2 ln(1 - u1)). */
RT_CLONES static void normal_f32_batch(uint32_t w[4][BATCH], void *vals)
{
    float *restrict f = vals;
    float zc[2][BATCH], zs[2][BATCH];
    for (int t = 0; t < 2; t++)
        for (int b = 0; b < BATCH; b++) {
            float r = vm_sqrt_f32(-2.0f * log_unit_f32(1.0f - u24(w[2 * t][b]))), sn, cs;
            sincos_2pi_f32(u24(w[2 * t + 1][b]), &sn, &cs);
            zc[t][b] = r * cs;
            zs[t][b] = r * sn;
        }
    for (int b = 0; b < BATCH; b++)
        for (int t = 0; t < 2; t++) {
            f[4 * b + 2 * t] = zc[t][b];
            f[4 * b + 2 * t + 1] = zs[t][b];
        }
}

void rt_philox_normal_f32(uint64_t seed, uint64_t offset, float *out, int64_t n)
{
    draw(seed, offset, out, n, 4, sizeof *out, normal_f32_batch);
}

/* Two values a block: u1 from words 0:1, u2 from words 2:3, d[2 b] =
 * r cos(2 pi u2) and d[2 b + 1] = r sin(2 pi u2), r = sqrt(-2 ln(1 - u1)),
 * in double with libm. */
static void normal_f64_batch(uint32_t w[4][BATCH], void *vals)
{
    double *restrict d = vals;
    for (int b = 0; b < BATCH; b++) {
        double r = sqrt(-2.0 * log(1.0 - u53(w[0][b], w[1][b]))), t = 2.0 * M_PI * u53(w[2][b], w[3][b]);
        d[2 * b] = r * cos(t);
        d[2 * b + 1] = r * sin(t);
    }
}

void rt_philox_normal_f64(uint64_t seed, uint64_t offset, double *out, int64_t n)
{
    draw(seed, offset, out, n, 2, sizeof *out, normal_f64_batch);
}
