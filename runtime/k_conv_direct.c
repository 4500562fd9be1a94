/* k_conv_direct.c - the direct f32 (and bf16, f16) convolution: micro-kernels
 * register-blocked over KO output channels x QV vectors of output positions,
 * AVX-512 (16 floats per zmm, k_conv_direct_avx512.c) and AVX2 + FMA
 * (8 per ymm, k_conv_direct_avx2.c), behind one geometry, packing, phase planes and rule, with the
 * vector length VL a parameter of the instruction set (rt_conv_kernels).
 * This file: geometry, phase planes, packing, kept weights, Winograd, the
 * rule and the entry; the kernels' tasks on the thread pool, their bands
 * and the row kernel's fused epilogue and pool are k_conv_bands.c's (one
 * call's state, dj, in conv_direct_int.h).
 *
 * Layout. The input is copied once per call into phase planes: for stride
 * (sh, sw) each channel of the zero-padded input [Hp, Wp] becomes sh*sw
 * planes [hq, wq], plane (a, b) holding padded elements (i*sh + a, j*sw + b)
 * (polyphase; stride 1 is one plane, the padded image). Output pixel
 * (oh, ow) at tap (kh, kw) then reads plane ((kh*dh) % sh, (kw*dw) % sw) at
 * (oh + kh*dh/sh, ow + kw*dw/sw): on a flat output grid q = oh*wq + ow every
 * tap is the plane shifted by a constant, toff[tap]. The grid has wq - ow
 * junk columns per row, computed and dropped (not where blocks start at
 * every row: row_align); the last block reads past the last plane into
 * zeroed slack.
 *
 * Micro-kernel. acc[KO][QV] vector accumulators start at the bias; for
 * every input channel of the group and every tap: QV unaligned loads of the
 * shifted plane, KO broadcasts of packed weights ([ob][c][tap][KO]), KO*QV
 * FMAs. AVX-512 with KO=4, QV=6: 24 accumulators, 10 loads per 24 FMAs
 * (AVX2: 4 x 3, see its file). Blocks of the grid are split over the thread
 * pool (image, group, block). An f32 block inside one output row's valid
 * columns is stored by the micro-kernel straight into the output (its
 * channels os apart); the others go through a small tile into the output's
 * valid columns (the tile's copies cost the stem conv 5% of P11).
 *
 * Row kernel (small images, where junk columns and the tail would be a third
 * of the grid kernel's work): the vector runs over output channels instead,
 * a block being 4-14 columns of one output row (CK_RBLOCK).
 *
 * Winograd F(2x2, 3x3) and F(4x4, 3x3) (3x3 stride 1; the transforms
 * written once, conv_wino_kernels.h): the same
 * phase planes and grid micro-kernel on transformed tiles, 16 products per
 * 4 outputs (F(4x4): 36 per 16) where the kernels above make 36 per 4 (see
 * its section below). F(4x4) makes the planes of a few images at a time,
 * so its tiles are transformed while the planes are in cache.
 *
 * Choice (rt_conv_direct_wins): the GEMM paths of k_conv.c for 1x1 and
 * depthwise stride 1 (not a dense conv of one input channel; on AVX2 also strided convs with 8+ channels per
 * group); Winograd where it fits, keeps enough of its tiles and its
 * transformed weights can be kept across calls (wino_kept), F(4x4)
 * where it makes at most 0.8 of F(2x2)'s products per kept output; else the
 * kernel that discards less, when it keeps at least min_keep (70%) of what
 * it computes; measured in docs/perf.md (make bench-conv), the numbers per
 * instruction set. The set is the GEMM's (rt_conv_isa_current, from
 * tjg_isa_current: AVX-512, else AVX2 + FMA, capped by TJIT_ISA); without
 * either the GEMM paths run.
 *
 * bf16 or f16 (all operands): the input is widened as it is copied to the
 * phase planes (f16 by F16C's vcvtph2ps where the CPU has it), the weights
 * as they are packed or transformed (exact), the sums are the f32 ones, and
 * the output is rounded once to bf16 or f16 (RNE; f16 by vcvtps2ph) in the
 * stores. Packed and transformed weights are kept across calls (see
 * prepare_weights).
 *
 * Sums run over (c, kh, kw) in that order with FMA, as the GEMM paths do
 * over K; results agree with them to rounding (tests/test_contract.c).
 * Winograd's sums run over (c, transform position) on transformed values:
 * F(2x2) agrees with an f64 conv to 1.8e-6-3.3e-6 of the output's rms
 * (measured max over outputs, 64-512 channels, P6-like data: conv_shapes
 * err), F(4x4) to 3.1e-5-4.8e-5 (its transforms scale terms by up to 25 in
 * and 64 out, which the sums' rounding follows); tests/test_conv_wino.c
 * bounds F(4x4) by 1e-4 x max(1, |f64|).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conv_direct_int.h"
#include "gemm.h"
#include "iter.h"
#include "rt.h"

/* ---- the instruction set ----------------------------------------------------------- */

static atomic_int isa_forced = -1;  /* rt_conv_isa_force */
static _Atomic int64_t runs[RT_CONV_NISA][RT_CONV_NKIND];

/* The conv's set of the GEMM's variant (runtime/gemm_isa.c: cpuid, the
 * OS's register state, TJIT_ISA): its AVX-512 variants and up run the
 * AVX-512F kernels, its AVX2 (+ FMA) the AVX2 ones. */
static rt_conv_isa isa_of(tjg_isa g)
{
    return g >= TJG_AVX512 ? RT_CONV_AVX512 : g == TJG_AVX2 ? RT_CONV_AVX2 : RT_CONV_NONE;
}

/* The best set the CPU has, whatever TJIT_ISA says. */
static rt_conv_isa isa_cpu(void) { return isa_of(tjg_isa_select(tjg_cpu_features(), NULL)); }

rt_conv_isa rt_conv_isa_current(void)
{
    int v = (int)isa_of(tjg_isa_current());
    int f = atomic_load_explicit(&isa_forced, memory_order_relaxed);
    return (rt_conv_isa)(f >= 0 && f < v ? f : v);
}

void rt_conv_isa_force(int isa) { atomic_store(&isa_forced, isa); }

int64_t rt_conv_direct_runs(rt_conv_isa isa, rt_conv_kind kind)
{
    return (unsigned)isa < RT_CONV_NISA && (unsigned)kind < RT_CONV_NKIND
               ? atomic_load(&runs[isa][kind])
               : 0;
}

static const rt_conv_kernels *kernels_of(rt_conv_isa isa)
{
    return isa == RT_CONV_AVX512 ? &rt_conv_avx512 : isa == RT_CONV_AVX2 ? &rt_conv_avx2 : NULL;
}

/* ---- per-call preparation ----------------------------------------------------------- */

/* d[q] = x[2q] for q < n: every other input column (stride 2 over rows
 * whose columns are 1 apart go to deint_row; this is for the rest, stride 1
 * over a view with columns 2 apart), vectorized where the CPU allows. */
RT_CLONES static void copy_stride2(float *restrict d, const float *restrict x, int64_t n)
{
    for (int64_t q = 0; q < n; q++)
        d[q] = x[2 * q];
}

/* d[q] = x[q*st] widened from bf16 (exact: vpmovzxwd, vpslld 16) for q < n.
 * Stride 2 (deint_row takes Winograd's planes): x[2q] is the low half of the 32-bit unit at
 * x + 2q, so the unit shifted left 16 is it (vpslld on whole vectors; the
 * generic strided loop stayed scalar and cost A6 a fifth more than f32's
 * copy_stride2); the last element alone, not to read past x[2(n-1)]. */
RT_CLONES static void widen_bf16(float *restrict d, const uint16_t *restrict x, int64_t st,
                                 int64_t n)
{
    if (st == 1) {
        for (int64_t q = 0; q < n; q++)
            d[q] = ir_bf16_to_f32(x[q]);
    } else if (st == 2 && n > 0) {
        for (int64_t q = 0; q < n - 1; q++) {
            uint32_t u;
            memcpy(&u, x + 2 * q, 4);
            d[q] = ir_bits_f32(u << 16);
        }
        d[n - 1] = ir_bf16_to_f32(x[2 * (n - 1)]);
    } else {
        for (int64_t q = 0; q < n; q++)
            d[q] = ir_bf16_to_f32(x[q * st]);
    }
}

/* d[q] = x[q*st] widened from f16 for q < n: F16C's vcvtph2ps where the
 * CPU has it (strides 1 and 2), else ir/half.h's (exact either way). */
static void widen_f16(float *restrict d, const uint16_t *restrict x, int64_t st, int64_t n)
{
    int64_t q = tjg_f16c() && (st == 1 || st == 2) ? tjg_f16_to_f32_f16c(x, st, d, n) : 0;
    for (; q < n; q++)
        d[q] = ir_f16_to_f32(x[q * st]);
}

void rt_conv_narrow_f16(uint16_t *d, const float *src, int64_t n)
{
    if (tjg_f16c()) {
        tjg_f32_to_f16_f16c(src, d, n);
        return;
    }
    for (int64_t q = 0; q < n; q++)
        d[q] = ir_f32_to_f16(src[q]);
}

/* Columns q..q+e of deint_row's middle part: d_b[q] = s[sw*q + b]. Inlined
 * with e = 8, each loop is a fixed 8 columns that gcc vectorizes whole. */
static inline __attribute__((always_inline)) void deint_run(float *restrict d0,
                                                            float *restrict d1,
                                                            float *restrict d2,
                                                            float *restrict d3, const void *x,
                                                            bool bf16, int64_t sw, int64_t q,
                                                            int64_t e)
{
    const float *restrict xf = x;
    const uint16_t *restrict xh = x;
    if (sw == 2 && !bf16)
        for (int64_t k = q; k < q + e; k++)
            d0[k] = xf[2 * k], d1[k] = xf[2 * k + 1];
    else if (sw == 2)
        for (int64_t k = q; k < q + e; k++)
            d0[k] = ir_bf16_to_f32(xh[2 * k]), d1[k] = ir_bf16_to_f32(xh[2 * k + 1]);
    else if (!bf16)
        for (int64_t k = q; k < q + e; k++)
            d0[k] = xf[4 * k], d1[k] = xf[4 * k + 1], d2[k] = xf[4 * k + 2],
            d3[k] = xf[4 * k + 3];
    else
        for (int64_t k = q; k < q + e; k++)
            d0[k] = ir_bf16_to_f32(xh[4 * k]), d1[k] = ir_bf16_to_f32(xh[4 * k + 1]),
            d2[k] = ir_bf16_to_f32(xh[4 * k + 2]), d3[k] = ir_bf16_to_f32(xh[4 * k + 3]);
}

/* Row i of the sw planes (a, 0..sw-1) (d: plane (a, 0)'s, the planes pd
 * floats apart), sw 2 or 4, from one contiguous input row x (f32, or bf16
 * widened): plane b's column q < wq is input column q*sw + b - pw when in
 * [0, w), else 0. Where every plane's column is inside, each input vector is
 * loaded once for all sw planes, 8 columns at a time, the last 8 overlapping
 * the ones before rather than a scalar tail (rows of 14 columns at F(4x4)
 * and 56x56); separate strided passes per plane cost F(4x4) a sixth of its
 * time. */
RT_CLONES static void deint_row(float *d, int64_t pd, const void *x, bool bf16, int64_t sw,
                                int64_t pw, int64_t w, int64_t wq)
{
    int64_t qa = cdiv(pw, sw), qb = w - sw + pw >= 0 ? (w - sw + pw) / sw + 1 : 0;
    qb = qb < wq ? qb : wq;
    qa = qa < qb ? qa : qb;
    const float *xf = x;
    const uint16_t *xh = x;
    for (int64_t b = 0; b < sw; b++)
        for (int64_t q = 0; q < wq; q = q + 1 == qa ? qb : q + 1) {
            int64_t col = q * sw + b - pw;
            float v = 0.0f;
            if (col >= 0 && col < w)
                v = bf16 ? ir_bf16_to_f32(xh[col]) : xf[col];
            d[b * pd + q] = v;
        }
    int64_t n = qb - qa, x0 = qa * sw - pw;
    const void *s = bf16 ? (const void *)(xh + x0) : (const void *)(xf + x0);
    float *d0 = d + qa, *d1 = d + pd + qa;
    float *d2 = sw == 4 ? d1 + pd : d1, *d3 = sw == 4 ? d2 + pd : d1;   /* sw 2: unused */
    if (n < 8) {
        deint_run(d0, d1, d2, d3, s, bf16, sw, 0, n);
        return;
    }
    for (int64_t q = 0; q < n; q += 8)
        deint_run(d0, d1, d2, d3, s, bf16, sw, q + 8 <= n ? q : n - 8, 8);
}

/* Phase planes of channels p0..p1 (p = image * c + channel). Plane (a, b)
 * row i is padded row i*sh + a; its columns q in [lo, hi) come from input
 * columns q*sw + b - pw, the others are padding. */
static void phase_planes(void *ctx, int64_t p0, int64_t p1)
{
    const dj *j = ctx;
    const rt_conv_shape *s = &j->s;
    for (int64_t p = p0; p < p1; p++) {
        int64_t pi = p + j->n0 * s->c;   /* Winograd: p counts image n0's channels */
        int64_t xp = (pi / s->c) * s->xs[0] + (pi % s->c) * s->xs[1];
        float *d = j->xq + p * j->plane;
        if (s->xs[3] == 1 && (s->sw == 2 || s->sw == 4) && j->dt != TJ_F16) {   /* a row's planes at once */
            int64_t pd = j->hq * j->wq;
            for (int64_t i = 0; i < j->hq; i++)   /* the input's rows in order */
                for (int64_t a = 0; a < s->sh; a++) {
                    float *dr = d + a * s->sw * pd + i * j->wq;
                    int64_t r = i * s->sh + a - s->ph;
                    if (r < 0 || r >= s->h) {
                        for (int64_t b = 0; b < s->sw; b++)
                            memset(dr + b * pd, 0, (size_t)j->wq * sizeof *d);
                        continue;
                    }
                    int64_t xr = xp + r * s->xs[2];
                    bool bf16 = j->dt == TJ_BF16;
                    deint_row(dr, pd, bf16 ? (const void *)((const uint16_t *)j->x + xr)
                                           : (const void *)((const float *)j->x + xr),
                              bf16, s->sw, s->pw, s->w, j->wq);
                }
            continue;
        }
        for (int64_t a = 0; a < s->sh; a++)
            for (int64_t b = 0; b < s->sw; b++) {
                int64_t off = b - s->pw, lo = off >= 0 ? 0 : cdiv(-off, s->sw);
                int64_t hi = s->w - 1 - off < 0 ? 0 : (s->w - 1 - off) / s->sw + 1;
                hi = hi < j->wq ? hi : j->wq;
                lo = lo < hi ? lo : hi;
                for (int64_t i = 0; i < j->hq; i++, d += j->wq) {
                    int64_t r = i * s->sh + a - s->ph;
                    if (r < 0 || r >= s->h) {
                        memset(d, 0, (size_t)j->wq * sizeof *d);
                        continue;
                    }
                    int64_t xr = xp + r * s->xs[2] + (lo * s->sw + off) * s->xs[3];
                    int64_t st = s->sw * s->xs[3];
                    const float *xf = j->dt != TJ_F32 ? NULL : (const float *)j->x + xr;
                    memset(d, 0, (size_t)lo * sizeof *d);
                    if (j->dt == TJ_BF16)
                        widen_bf16(d + lo, (const uint16_t *)j->x + xr, st, hi - lo);
                    else if (j->dt == TJ_F16)
                        widen_f16(d + lo, (const uint16_t *)j->x + xr, st, hi - lo);
                    else if (st == 1)
                        memcpy(d + lo, xf, (size_t)(hi - lo) * sizeof *d);
                    else if (st == 2)
                        copy_stride2(d + lo, xf, hi - lo);
                    else
                        for (int64_t q = lo; q < hi; q++)
                            d[q] = xf[(q - lo) * st];
                    memset(d + hi, 0, (size_t)(j->wq - hi) * sizeof *d);
                }
            }
    }
}

/* Weights [o][cg][kh][kw] (strided) -> [g][ob][cg][tap][ko] (row kernel:
 * ko = VL*kv), zeros past og. */
static void pack_weights(const dj *j, const void *w)
{
    const rt_conv_shape *s = &j->s;
    int64_t ko = j->rows ? j->kv * j->k->vl : j->ko, ogp = j->nob * ko;
    for (int64_t g = 0; g < s->groups; g++)
        for (int64_t o = 0; o < ogp; o++)
            for (int64_t c = 0; c < j->cg; c++)
                for (int64_t t = 0; t < j->ntap; t++) {
                    float v = 0.0f;
                    if (o < j->og)
                        v = elem(j, w, (g * j->og + o) * s->ws[0] + c * s->ws[1] +
                                           (t / s->kw) * s->ws[2] + (t % s->kw) * s->ws[3]);
                    j->wk[(((g * j->nob + o / ko) * j->cg + c) * j->ntap + t) * ko + o % ko] = v;
                }
}

/* ---- prepared weights kept across calls ------------------------------------------------- */

/* The packed or Winograd-transformed weights of recent calls, so a conv that
 * runs again on the same weights (a compiled region calls it once per
 * image; a model once per call) uses them in place instead of transforming
 * again (a copy cost F(4x4) at 256 channels, 9.4 MB, a fifth of a
 * one-image call). A call holds a reference; an entry in use is not
 * replaced.
 * An entry is found by the layout it was made for and the raw weights
 * themselves, compared in full (a write through a raw pointer bumps no
 * version, so nothing less is safe): a copy of them is kept. A weight that
 * the running compiled call names (rt_gemm_frozen: its captures) is found
 * by its storage's serial, stamp and offset instead, under the contract of
 * the packed GEMM weights (gemm_cache.c; tj_compile_options.freeze): the
 * compare read 2.4 MB per call at 256 channels. Within one run of a region
 * (rt_conv_band.token) an entry that matched by content once is found by
 * the weights' address for the other images (P12: the compare was 2.4% of
 * its samples, 64 convs a call on unfrozen weights). Kept only
 * when the same weights (address and layout) were among the last WCACHE_N
 * misses (a region alternates two convs per image), so a model whose many
 * convs each run once per call costs no copies. Contiguous weights only;
 * WCACHE_N entries, the least recently used one not in use replaced, one
 * mutex. */
#define WCACHE_N 8
#define WCACHE_MAX ((size_t)16 << 20)   /* bytes of one entry's prepared weights, at most */

typedef struct wkey {
    int64_t isa, wino, wm, rows, vl, ko, kv, nob, cg, og, groups, ntap, uxs, kh, kw, dt;
} wkey;

/* Who the weights are: a capture of the running compiled call (trusted) by
 * its storage, else by its bytes alone, or by their address under the
 * token (rt_conv_band) of the call that matched them by their bytes (a
 * region's calls see the weights through headers of serial 0: the address
 * is what tells two convs' weights apart there). */
typedef struct wid {
    uint64_t serial;
    unsigned stamp;
    int64_t offset;
    bool trusted;
    uint64_t token;
    const void *addr;
} wid;

typedef struct wslot {
    wkey key;
    wid id;               /* whose weights these were when last matched (its token: the
                           * last one matched or made under) */
    void *raw;
    float *prep;
    size_t nraw, nprep;   /* bytes of raw (f32, bf16 or f16), floats of prep */
    uint64_t tick;
    bool used;
    int refs;             /* calls using prep now */
} wslot;

static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static wslot wslots[WCACHE_N];
static uint64_t wticks;
static struct {             /* the last WCACHE_N misses: layout and weights */
    wkey key;
    const void *w;
} wmiss[WCACHE_N];
static int wmiss_next;
static _Atomic int64_t whits;

int64_t rt_conv_weight_hits(void) { return atomic_load(&whits); }

static void wcache_lock(void) { pthread_mutex_lock(&wlock); }
static void wcache_unlock(void) { pthread_mutex_unlock(&wlock); }
__attribute__((constructor)) static void wcache_init(void)
{
    pthread_atfork(wcache_lock, wcache_unlock, wcache_unlock);
}

static void wslot_drop(wslot *e)
{
    rt_free(e->raw, e->nraw);
    rt_free(e->prep, e->nprep * sizeof(float));
    e->used = false;
}

__attribute__((destructor)) static void wcache_fini(void)
{
    for (int i = 0; i < WCACHE_N; i++)
        if (wslots[i].used)
            wslot_drop(&wslots[i]);
}

static void wino_weights(const dj *j, const void *w);

/* j->wk[0..nprep) = the weights w prepared for j's kernel: the kept ones
 * when the cache holds them (borrowed: release_weights), else made in a
 * buffer of the call's own (and a copy kept when they fit). -1: out of
 * memory. */
static int prepare_weights(dj *j, const void *w, const wid *id, size_t nprep)
{
    const rt_conv_shape *s = &j->s;
    int64_t kh = j->wino ? 3 : s->kh, kw = j->wino ? 3 : s->kw;
    size_t nraw = (size_t)(s->o * j->cg * kh * kw) * (j->dt != TJ_F32 ? 2 : 4);   /* bytes */
    bool contiguous = s->ws[3] == 1 && s->ws[2] == kw && s->ws[1] == kh * kw &&
                      s->ws[0] == j->cg * kh * kw;
    wkey k = (wkey){j->isa, j->wino, j->wm, j->rows, j->k->vl, j->ko, j->kv, j->nob, j->cg, j->og,
                    s->groups, j->ntap, j->uxs, kh, kw, j->dt};
    bool keep = contiguous && nprep * sizeof(float) <= WCACHE_MAX;
    if (keep) {
        pthread_mutex_lock(&wlock);
        bool again = false;
        for (int i = 0; i < WCACHE_N; i++)
            again = again || (wmiss[i].w == w && !memcmp(&wmiss[i].key, &k, sizeof k));
        for (int i = 0; i < WCACHE_N; i++) {
            wslot *e = &wslots[i];
            bool same = (id->trusted && e->id.serial == id->serial && e->id.stamp == id->stamp &&
                         e->id.offset == id->offset) ||
                        (id->token && e->id.token == id->token && e->id.addr == id->addr);
            if (e->used && !memcmp(&e->key, &k, sizeof k) && e->nraw == nraw &&
                e->nprep == nprep && (same || !memcmp(e->raw, w, nraw))) {
                e->id = *id;
                e->refs++;
                e->tick = ++wticks;
                pthread_mutex_unlock(&wlock);
                j->wk = e->prep;
                j->wsl = e;
                atomic_fetch_add(&whits, 1);
                return 0;
            }
        }
        wmiss[wmiss_next].key = k;
        wmiss[wmiss_next].w = w;
        wmiss_next = (wmiss_next + 1) % WCACHE_N;
        keep = again;
        pthread_mutex_unlock(&wlock);
    }
    j->wk = rt_alloc(nprep * sizeof(float));
    if (!j->wk)
        return -1;
    j->wkbytes = nprep * sizeof(float);
    if (j->wino)
        wino_weights(j, w);
    else
        pack_weights(j, w);
    if (!keep)
        return 0;
    void *raw = rt_alloc(nraw);
    float *prep = rt_alloc(nprep * sizeof(float));
    if (!raw || !prep) {   /* not kept: nothing else changes */
        if (raw)
            rt_free(raw, nraw);
        if (prep)
            rt_free(prep, nprep * sizeof(float));
        return 0;
    }
    memcpy(raw, w, nraw);
    memcpy(prep, j->wk, nprep * sizeof(float));
    pthread_mutex_lock(&wlock);
    wslot *e = NULL;   /* a free slot, else the least recently used not in use */
    for (int i = 0; i < WCACHE_N && !(e && !e->used); i++)
        if (!wslots[i].used || (!wslots[i].refs && (!e || wslots[i].tick < e->tick)))
            e = &wslots[i];
    if (e && e->used)
        wslot_drop(e);
    if (e)
        *e = (wslot){k, *id, raw, prep, nraw, nprep, ++wticks, true, 0};
    pthread_mutex_unlock(&wlock);
    if (!e) {   /* every entry in use: not kept */
        rt_free(raw, nraw);
        rt_free(prep, nprep * sizeof(float));
    }
    return 0;
}

/* Gives back what prepare_weights gave j: the kept entry's reference, or
 * the call's own buffer. */
static void release_weights(dj *j)
{
    if (j->wsl) {
        pthread_mutex_lock(&wlock);
        j->wsl->refs--;
        pthread_mutex_unlock(&wlock);
    } else if (j->wk) {
        rt_free(j->wk, j->wkbytes);
    }
}

/* ---- Winograd F(2x2, 3x3) and F(4x4, 3x3) ----------------------------------------------- */

/* A 3x3 stride-1 conv as m x m output tiles (m = 2 or 4): Y = A^T [sum over
 * c of (G g G^T) . (B^T d B)] A per (m+2)x(m+2) input tile d; F(2x2) makes
 * 16 products per 4 outputs, F(4x4) 36 per 16, where the direct kernels make
 * 9 per output. The tiles (stride m) are the output grid of an (m+2)x(m+2)
 * stride-m conv over the same padded input, so that conv's geometry
 * (use_wino) gives the phase planes, the tile offsets and the grid blocks.
 * Per block of wnb grid blocks: the input transform of its tiles (all
 * channels of the group), then for each of the (m+2)^2 transform positions
 * xi and each channel block the grid micro-kernel as a GEMM over the
 * channels (one tap, the transformed weights as its weights), then the
 * output transform (the instruction set's wino_in and wino_out, wino4_in and
 * wino4_out).
 *
 * F(4x4) uses Lavin and Gray's matrices (points 0, 1, -1, 2, -2, inf):
 *   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0;
 *          0 2 -1 -2 1 0; 0 4 0 -5 0 1],
 *   G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6;
 *        1/24 -1/12 1/6; 0 0 1],
 *   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
 * Its error is larger than F(2x2)'s (the transforms scale terms by up to 8
 * and 1/24 and sum 36 of them): measured in docs/perf.md (Winograd F(4x4,
 * 3x3) on AVX2) and bounded in tests/test_conv_wino.c. */
#define WINO_NB 2       /* F(2x2): grid blocks per Winograd block */
#define WINO4_NB 1      /* F(4x4): its 36 planes of transformed tiles stay in L2 */
#define WINO_PAD 16     /* floats between the transform planes (else they share cache sets) */

/* G of F(2x2, 3x3) and of F(4x4, 3x3) (rows 0..m+1). */
static const double wino_g2[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
static const double wino_g4[6][3] = {{1.0 / 4, 0, 0},
                                     {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                     {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                     {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                     {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                     {0, 0, 1}};

/* Weights [o][cg][3][3] (strided) -> U = G g G^T (in f64, rounded once to
 * f32), as [xi (uxs apart)][g][ob][cg][ko], zeros past og. */
static void wino_weights(const dj *j, const void *w)
{
    const rt_conv_shape *s = &j->s;
    int64_t ko = j->ko, n = j->wm + 2;
    const double(*gm)[3] = j->wm == 4 ? wino_g4 : wino_g2;
    for (int64_t gb = 0; gb < s->groups * j->nob; gb++)
        for (int64_t c = 0; c < j->cg; c++) {
            /* the ko output channels innermost: the arithmetic vectorizes */
            double g[3][3][4] = {{{0}}}, t[6][3][4];
            float u[36][4];
            for (int64_t o = 0; o < ko && gb % j->nob * ko + o < j->og; o++) {
                int64_t wp = (gb / j->nob * j->og + gb % j->nob * ko + o) * s->ws[0] + c * s->ws[1];
                for (int r = 0; r < 3; r++)
                    for (int k = 0; k < 3; k++)
                        g[r][k][o] = elem(j, w, wp + r * s->ws[2] + k * s->ws[3]);
            }
            for (int64_t i = 0; i < n; i++)
                for (int k = 0; k < 3; k++)
                    for (int o = 0; o < 4; o++)
                        t[i][k][o] = gm[i][0] * g[0][k][o] + gm[i][1] * g[1][k][o] +
                                     gm[i][2] * g[2][k][o];
            for (int64_t i = 0; i < n; i++)
                for (int64_t l = 0; l < n; l++)
                    for (int o = 0; o < 4; o++)
                        u[i * n + l][o] = (float)(t[i][0][o] * gm[l][0] + t[i][1][o] * gm[l][1] +
                                                  t[i][2][o] * gm[l][2]);
            float *d = j->wk + (gb * j->cg + c) * ko;
            for (int64_t xi = 0; xi < j->wnp; xi++, d += j->uxs) {
                if (ko == 4) {   /* one 16-byte move, not a call */
                    memcpy(d, u[xi], sizeof u[xi]);
                    continue;
                }
                for (int64_t o = 0; o < ko; o++)
                    d[o] = u[xi][o];
            }
        }
}

/* Winograd tasks t0..t1 of images n0.. (their planes in xq): t = ((image -
 * n0) * groups + group) * nwb + block. */
static void run_wino(void *ctx, int64_t t0, int64_t t1)
{
    dj *j = ctx;
    const rt_conv_shape *s = &j->s;
    static const int64_t off0[1] = {0};
    static const float zero[4] = {0};
    int64_t qn = j->qv * j->k->vl, ko = j->ko, nb = j->wnb, np = j->wnp;
    int64_t vxs = j->cg * nb * qn + WINO_PAD, mxs = j->nob * ko * nb * qn + WINO_PAD;
    size_t bytes = (size_t)(np * (vxs + mxs)) * sizeof(float);
    float *v = rt_alloc(bytes);
    if (!v) {
        atomic_store(&j->failed, 1);
        return;
    }
    float *m = v + np * vxs;
    bool f4 = j->wm == 4;
    for (int64_t t = t0; t < t1; t++) {
        int64_t wb = t % j->nwb, g = (t / j->nwb) % s->groups, nq = t / (j->nwb * s->groups);
        int64_t n = j->n0 + nq;
        int64_t q0 = wb * nb * qn, nkb = j->nqb - wb * nb;
        nkb = nkb < nb ? nkb : nb;
        (f4 ? j->k->wino4_in : j->k->wino_in)(j->xq + (nq * s->c + g * j->cg) * j->plane + q0,
                                              j->cg, j->plane, j->toff, nkb * qn, v, vxs);
        for (int64_t xi = 0; xi < np; xi++)
            for (int64_t ob = 0; ob < j->nob; ob++)
                for (int64_t kb = 0; kb < nkb; kb++)
                    j->fn(v + xi * vxs + kb * qn,
                          j->wk + xi * j->uxs + (g * j->nob + ob) * j->cg * ko, j->cg,
                          nkb * qn, off0, 1, zero, m + xi * mxs + (ob * nb + kb) * ko * qn, qn);
        rt_conv_wino_out o = {
            .y = j->dt != TJ_F32 ? (void *)((uint16_t *)j->y + (n * s->o + g * j->og) * j->woh * j->wow)
                         : (void *)((float *)j->y + (n * s->o + g * j->og) * j->woh * j->wow),
            .dt = j->dt, .f16c = j->dt == TJ_F16 && tjg_f16c(),
            .bias = j->wbias ? j->wbias + g * j->og : NULL,
            .no = j->og, .ko = ko, .qn = qn, .nob = j->nob, .nkb = nkb, .kbs = nb,
            .q0 = q0, .wq = j->wq, .tyn = s->oh, .txn = s->ow, .oh = j->woh, .ow = j->wow};
        (f4 ? j->k->wino4_out : j->k->wino_out)(m, mxs, &o);
    }
    rt_free(v, bytes);
}

/* ---- entry points ---------------------------------------------------------------------- */

/* The geometry of both kernels on instruction set isa (the grid kernel's
 * micro-kernel in j->fn). */
static void geometry(const rt_conv_shape *s, rt_conv_isa isa, dj *j)
{
    const rt_conv_kernels *k = kernels_of(isa);
    j->s = *s;
    j->k = k;
    j->isa = isa;
    j->cg = s->c / s->groups;
    j->og = s->o / s->groups;
    int gi = 0;
    while (k->grid[gi].ko > j->og)
        gi++;
    j->ko = k->grid[gi].ko;
    j->qv = k->grid[gi].qv;
    j->fn = k->grid[gi].fn;
    j->nob = cdiv(j->og, j->ko);
    j->hq = cdiv(s->h + 2 * s->ph, s->sh);
    j->wq = cdiv(s->w + 2 * s->pw, s->sw);
    j->plane = s->sh * s->sw * j->hq * j->wq;
    j->ngrid = s->oh * j->wq;
    j->nqb = cdiv(j->ngrid, j->qv * k->vl);
    j->qoff = 0;
    j->qend = j->ngrid;
    j->bnq = j->nqb;
    j->ycs = s->oh * s->ow;
    j->rseg = j->rbase = 0;
    j->ntap = s->kh * s->kw;
    /* the row kernel: the segment length that fits the row best */
    j->kv = j->og > k->vl ? 2 : 1;
    const int *lens = k->rlen[j->kv - 1];
    double best = 0;
    for (int i = 0; i < 4 && lens[i]; i++) {
        double f = (double)s->ow / (double)(cdiv(s->ow, lens[i]) * lens[i]);
        if (f > best + 1e-9)
            best = f, j->rp = lens[i];
    }
    j->nseg = cdiv(s->ow, j->rp);
    j->rows = false;
    j->wino = false;
    j->wm = j->wnp = j->wnb = 0;
    j->uxs = 0;
}

/* Whether Winograd F(m x m, 3x3) (m = 2, 4) takes shape s on kernels k. */
static bool wino_fits(const rt_conv_shape *s, const rt_conv_kernels *k, int m)
{
    return (m == 4 ? k->wino4_in != NULL : k->wino_in != NULL) && s->kh == 3 && s->kw == 3 && s->sh == 1 && s->sw == 1 && s->dh == 1 &&
           s->dw == 1;
}

/* Switches j to Winograd F(m x m, 3x3): the geometry of the (m+2)x(m+2)
 * stride-m conv whose output grid is the tile grid. Its planes get a row and
 * a column past the last tile (F(4x4): cdiv(h + 2ph, 4) rows can be one
 * short), zeros, so no tile reads the next plane or row: a finite value
 * there would cancel only to rounding, an infinite one not at all. */
static void use_wino(dj *j, int m)
{
    rt_conv_shape t = j->s;
    int64_t oh = t.oh, ow = t.ow;
    t.kh = t.kw = m + 2;
    t.sh = t.sw = m;
    t.oh = cdiv(oh, m);
    t.ow = cdiv(ow, m);
    geometry(&t, j->isa, j);
    const rt_conv_kernels *k = j->k;
    if (m == 4 && k->wgrid.fn && j->og >= k->wgrid.ko) {   /* F(4x4)'s GEMMs' block of this set, if any */
        j->ko = k->wgrid.ko;
        j->qv = k->wgrid.qv;
        j->fn = k->wgrid.fn;
        j->nob = cdiv(j->og, j->ko);
    }
    j->hq = j->hq > t.oh + 1 ? j->hq : t.oh + 1;
    j->wq = j->wq > t.ow + 1 ? j->wq : t.ow + 1;
    j->plane = t.sh * t.sw * j->hq * j->wq;
    j->ngrid = t.oh * j->wq;
    j->nqb = cdiv(j->ngrid, j->qv * j->k->vl);
    j->wino = true;
    j->wm = m;
    j->wnp = (m + 2) * (m + 2);
    j->wnb = m == 4 ? WINO4_NB : WINO_NB;
    j->woh = oh;
    j->wow = ow;
    j->nwb = cdiv(j->nqb, j->wnb);
    j->uxs = t.groups * j->nob * j->ko * j->cg + WINO_PAD;
}

/* Switches j to the row kernel (its micro-kernel and channel blocks). */
static void use_rows(dj *j)
{
    const int *lens = j->k->rlen[j->kv - 1];
    int i = 0;
    while (lens[i] != j->rp)
        i++;
    j->rows = true;
    j->fn = j->k->rows[j->kv - 1][i];
    j->nob = cdiv(j->og, j->kv * j->k->vl);
}

/* Useful fraction of the work the grid kernel (rows: the row kernel) does:
 * valid outputs over computed ones (junk columns, the last block's tail,
 * output channels padded to a block). */
static double efficiency(const dj *j, bool rows)
{
    int64_t vl = j->k->vl;
    if (j->wino)
        return (double)(j->woh * j->wow) / (double)(j->wm * j->wm * j->nqb * j->qv * vl) * (double)j->og /
               (double)(j->nob * j->ko);
    if (rows)
        return (double)j->s.ow / (double)(j->nseg * j->rp) * (double)j->og /
               (double)(cdiv(j->og, j->kv * vl) * j->kv * vl);
    double pos = (double)(j->s.oh * j->s.ow) / (double)(j->nqb * j->qv * vl);
    return pos * (double)j->og / (double)(j->nob * j->ko);
}

/* Whether Winograd's transformed weights (use_wino's) fit the kept ones
 * (WCACHE_MAX): past that every call transforms them again, which cost
 * [1,512,7,7] -> 512 11.5-12.2 ms against 5.0-5.5 on the row and GEMM
 * paths, and [8,512,7,7] as much as it saved (docs/perf.md, bench-conv). */
static bool wino_kept(const dj *j) { return (size_t)(j->wnp * j->uxs) * sizeof(float) <= WCACHE_MAX; }

/* Which kernel (grid, row, Winograd F(2x2) or F(4x4)), from TJIT_CONV or
 * the rule; false: none (the GEMM paths). */
static bool choose(const rt_conv_shape *s, dj *j)
{
    rt_conv_isa isa = rt_conv_isa_current();
    if (isa == RT_CONV_NONE || s->kh * s->kw > MAX_TAPS || s->n == 0 || s->oh <= 0 ||
        s->ow <= 0)
        return false;
    geometry(s, isa, j);
    const char *env = getenv("TJIT_CONV");
    bool rows = false;
    int wino = 0;   /* Winograd F(wino x wino, 3x3) */
    if (env && (!strcmp(env, "direct") || !strcmp(env, "rows"))) {
        rows = env[0] == 'r';
    } else if (env && (!strcmp(env, "wino") || !strcmp(env, "wino4"))) {
        int m = env[4] ? 4 : 2;
        wino = wino_fits(s, j->k, m) ? m : 0;   /* else the grid kernel */
    } else if (env && !strcmp(env, "gemm")) {
        return false;
    } else {
        /* Chosen by measurement (docs/perf.md, 16 shapes, one thread): the
         * GEMM paths win on 1x1 (no taps to share loads over) and on
         * depthwise stride 1 (their row kernel; a dense conv of one input
         * channel, P12's first, runs the grid kernel: 30 us against their
         * 50 at [1,1,28,28] -> 32 on AVX2); the row kernel where it
         * wastes clearly less than the grid kernel (small images), given
         * two vectors of output channels per group (AVX-512: 32, AVX2: 16)
         * and, on AVX2, 8 input channels (the 3-channel 7x7 stem runs
         * better on the grid kernel there); on AVX-512, whose row tiles go
         * to the output by 16 x 16 transposes (rows_put), wherever it wastes
         * no more than the grid kernel (rows_gain, rows_c: the stem 1.46x
         * and 64 -> 128 3x3/2 at 56x56 1.14x faster than on the grid kernel
         * on an Intel Xeon, docs/perf.md); either only when it wastes under
         * 30%. On AVX2 (a Zen 3) the GEMM paths also
         * win on strided convs with 8+ channels per group (3x3 stride 2,
         * 64 -> 128 at 56x56: 68 GFLOP/s against 59 for either kernel). */
        bool strided = s->sh > 1 || s->sw > 1;
        if (j->ntap == 1 || (j->cg == 1 && s->groups > 1 && !strided) ||
            (j->k->strided_gemm && strided && j->cg >= 8))
            return false;
        if (wino_fits(s, j->k, 2) && j->cg >= j->k->wino_c[0]) {
            use_wino(j, 2);
            double e2 = efficiency(j, false);
            if (e2 >= j->k->wino_keep[j->cg >= j->k->wino_c[1]] && wino_kept(j)) {
                /* F(4x4) when its products per kept output (36/16 over its
                 * efficiency) are at most wino4_gain of F(2x2)'s */
                if (wino_fits(s, j->k, 4) && j->cg >= j->k->wino4_c) {
                    geometry(s, isa, j);   /* use_wino starts from the conv's own */
                    use_wino(j, 4);
                    if (2.25 / efficiency(j, false) <= j->k->wino4_gain * 4.0 / e2 && wino_kept(j))
                        return true;
                    geometry(s, isa, j);
                    use_wino(j, 2);
                }
                return true;
            }
            geometry(s, isa, j);
        }
        double eg = efficiency(j, false), er = efficiency(j, true);
        rows = j->kv == 2 && j->cg >= j->k->rows_c && er > eg + j->k->rows_gain;
        if ((rows ? er : eg) < j->k->min_keep)
            return false;
    }
    if (wino)
        use_wino(j, wino);
    else if (rows)
        use_rows(j);
    return true;
}


bool rt_conv_direct_wins(const rt_conv_shape *s)
{
    dj j;
    return choose(s, &j);
}

int rt_conv_direct(const rt_conv_shape *s, tj_dtype dt, const void *x, const tj_tensor *wt,
                   const void *bias, int64_t bstride, void *y)
{
    int rc = 0;
    const void *w = rt_ptr(wt);
    unsigned flags;
    const rt_storage *st = wt->storage;
    rt_conv_band *hook = rt_conv_band_get();
    wid id = {st->serial, rt_storage_stamp(st), wt->offset, tjg_frozen(st, &flags),
              hook ? hook->token : 0, w};
    dj *j = malloc(sizeof *j);
    if (!j) {
        rt_error("out of memory for the convolution's buffers");
        return -1;
    }
    if (!choose(s, j)) {
        /* the caller asked rt_conv_direct_wins first: only a changed
         * TJIT_CONV or instruction set gets here; the grid kernel takes any
         * shape, on any set this CPU has */
        rt_conv_isa isa = rt_conv_isa_current();
        if (isa == RT_CONV_NONE)
            isa = isa_cpu();
        if (isa == RT_CONV_NONE) {
            free(j);
            rt_error("conv2d: no direct kernel for this CPU");
            return -1;
        }
        geometry(s, isa, j);
    }
    rt_conv_kind kind = j->wino ? (j->wm == 4 ? RT_CONV_WINO4 : RT_CONV_WINO)
                        : j->rows ? RT_CONV_ROWS : RT_CONV_GRID;
    atomic_fetch_add(&runs[j->isa][kind], 1);
    atomic_init(&j->failed, 0);
    j->x = x;
    j->dt = dt;
    j->y = y;
    j->bias = bias;
    j->bstride = bstride;
    s = &j->s;   /* Winograd: the 4x4 stride-2 conv of its tiles */
    int64_t maxoff = 0;
    for (int64_t t = 0; t < j->ntap; t++) {
        int64_t kh = t / s->kw, kw = t % s->kw, rh = kh * s->dh, rw = kw * s->dw;
        j->toff[t] = ((rh % s->sh) * s->sw + rw % s->sw) * j->hq * j->wq +
                     (rh / s->sh) * j->wq + rw / s->sw;
        if (j->toff[t] > maxoff)
            maxoff = j->toff[t];
    }
    /* the last block reads up to qv*VL - 1 past the grid (Winograd: its
     * last block's wnb grid blocks), shifted by maxoff */
    int64_t vl = j->k->vl, qn = j->qv * vl;
    int64_t slack = (j->wino ? j->nwb * j->wnb : j->nqb) * qn - j->ngrid + maxoff + vl +
                    j->nseg * j->rp + qn;   /* + qn: a row band's last block */
    /* F(4x4): a few images' planes at a time, transformed while they are in
     * cache (all images' first cost it at batch 8 a third more; F(2x2), with
     * a quarter of the planes per image, measured 3% slower this way): the
     * fewest images whose tasks split evenly over the threads */
    int64_t nimg = s->n, per = s->groups * j->nwb, nt = rt_threads();
    if (j->wino && j->wm == 4)
        for (nimg = 1; nimg < s->n && (nimg * per < nt || nimg * per % nt);)
            nimg++;
    size_t xbytes = (size_t)(nimg * s->c * j->plane + slack) * sizeof(float);
    size_t wfloats = (size_t)(s->groups * j->nob * (j->rows ? j->kv * vl : j->ko) * j->cg *
                              j->ntap);
    if (j->wino)
        wfloats = (size_t)(j->wnp * j->uxs);
    size_t bbytes = j->wino && bias ? (size_t)s->o * sizeof(float) : 0;
    j->xq = rt_alloc(xbytes);
    j->wbias = bbytes ? rt_alloc(bbytes) : NULL;
    j->wk = NULL;
    j->wkbytes = 0;
    j->wsl = NULL;
    if (!j->xq || (bbytes && !j->wbias) || prepare_weights(j, w, &id, wfloats) < 0) {
        if (j->xq)
            rt_free(j->xq, xbytes);
        if (j->wbias)
            rt_free(j->wbias, bbytes);
        free(j);
        rt_error("out of memory for the convolution's buffers");
        return -1;
    }
    memset(j->xq + nimg * s->c * j->plane, 0, (size_t)slack * sizeof(float));
    for (int64_t o = 0; o < s->o && j->wbias; o++)
        j->wbias[o] = bias_of(j, o);
    j->n0 = 0;
    if (j->wino) {
        for (; j->n0 < s->n; j->n0 += nimg) {
            int64_t k = s->n - j->n0 < nimg ? s->n - j->n0 : nimg;
            rt_parallel_for(k * s->c, 16384 / (j->plane + 1) + 1, phase_planes, j);
            rt_parallel_for(k * s->groups * j->nwb, 1, run_wino, j);
        }
    } else if (j->rows) {
        rt_parallel_for(s->n * s->c, 16384 / (j->plane + 1) + 1, phase_planes, j);
        rc = rt_convd_rows(j);
    } else {
        rt_parallel_for(s->n * s->c, 16384 / (j->plane + 1) + 1, phase_planes, j);
        rc = rt_convd_grid(j);
    }
    int failed = atomic_load(&j->failed);
    rt_free(j->xq, xbytes);
    if (j->wbias)
        rt_free(j->wbias, bbytes);
    release_weights(j);
    free(j);
    if (failed) {
        rt_error("out of memory for the convolution's buffers");
        return -1;
    }
    return rc;
}
