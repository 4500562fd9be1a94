/* gemm_pack.c - packing a GEMM's B once (runtime/gemm.h): f32, bf16, f16
 * and int8 (with per-column scales and column sums) into panels of TJG_NR
 * columns, f32 rounded to bf16, f16 or int8 on the way, transposed sources
 * through 8 x 8 AVX2 blocks; and freeing a packed form (the Strassen form's
 * parts too). The driver that reads the panels is gemm.c.
 */
#include <math.h>
#include <string.h>

#include "../ir/half.h"
#include "gemm.h"
#include "rt.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int group_of(tjg_type t) { return t == TJG_F32 ? 1 : t == TJG_S8 ? 4 : 2; }

/* ---- packing B --------------------------------------------------------------------------- */

static int packed_alloc(tjg_packed *p, tjg_type t, int64_t k, int64_t n)
{
    int g = group_of(t);
    *p = (tjg_packed){.type = t, .k = k, .n = n, .kp = cdiv(k, g) * g};
    int64_t np = cdiv(n, TJG_NR);
    p->nbytes = (size_t)(np * (p->kp / g) * TJG_NR) * 4;
    if (p->nbytes == 0)
        p->nbytes = 64;
    p->data = rt_alloc(p->nbytes);
    if (!p->data)
        return -1;
    if (n % TJG_NR || p->kp != k)   /* padding columns or k rows read as 0 */
        memset(p->data, 0, p->nbytes);
    return 0;
}

/* Runs ELEM for every element (kk, j) of B, panel by panel, with `at`
 * its place in the panel (T elements, groups of g), along B's unit-stride
 * direction where it has one. */
#define PACK_LOOP(T, g, ELEM)                                                             \
    do {                                                                                  \
        for (int64_t j0 = 0; j0 < n; j0 += TJG_NR) {                                      \
            int64_t nj = n - j0 < TJG_NR ? n - j0 : TJG_NR;                               \
            T *pb = (T *)p->data + j0 / TJG_NR * (p->kp / (g)) * TJG_NR * (g);             \
            if (cs == 1 || rs != 1) {                                                     \
                for (int64_t kk = 0; kk < k; kk++) {                                      \
                    T *at = pb + (kk / (g)) * TJG_NR * (g) + kk % (g);                    \
                    for (int64_t j = j0; j < j0 + nj; j++, at += (g))                     \
                        ELEM;                                                             \
                }                                                                         \
            } else {                                                                      \
                for (int64_t j = j0; j < j0 + nj; j++)                                    \
                    for (int64_t kk = 0; kk < k; kk++) {                                  \
                        T *at = pb + ((kk / (g)) * TJG_NR + (j - j0)) * (g) + kk % (g);   \
                        ELEM;                                                             \
                    }                                                                     \
            }                                                                             \
        }                                                                                 \
    } while (0)

int tjg_pack_f32(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k, int64_t n)
{
    if (packed_alloc(p, TJG_F32, k, n))
        return -1;
    PACK_LOOP(float, 1, *at = b[kk * rs + j * cs]);
    return 0;
}

/* bf16 or int8 B read transposed (B[kk, j] = b[kk + j*cs]: a linear's
 * weight): each (kk, kk+1) pair or quad is 4 contiguous bytes of a row of
 * b, so a panel is a transpose of 32-bit units (in 8 x 8 blocks through
 * AVX2 registers where the CPU has them), blocked so that the rows read
 * stay in L1; the panels split over the pool. About 6x faster than
 * PACK_LOOP's element by element scatter, which took a fifth of B4's time
 * (docs/perf.md); the AVX2 transposes 4x faster again. */
typedef struct pack_t_job {
    tjg_packed *p;
    const char *b;
    int64_t ld, k, n;    /* ld: bytes between rows of b (B's columns) */
    int g, es;           /* elements per group, bytes per element */
} pack_t_job;

enum { PACK_T_UNITS = 64 };   /* groups of k per block: 32 rows x 256 bytes read */

static void pack_t_range(void *ctx, int64_t p0, int64_t p1)
{
    const pack_t_job *t = ctx;
    int64_t k = t->k, kg = t->p->kp / t->g, units = k / t->g;
    bool avx2 = tjg_isa_current() >= TJG_AVX2;
    for (int64_t pi = p0; pi < p1; pi++) {
        int64_t j0 = pi * TJG_NR, nj = t->n - j0 < TJG_NR ? t->n - j0 : TJG_NR;
        uint32_t *pb = (uint32_t *)t->p->data + pi * kg * TJG_NR;
        for (int64_t q0 = 0; q0 < units; q0 += PACK_T_UNITS) {
            int64_t q1 = q0 + PACK_T_UNITS < units ? q0 + PACK_T_UNITS : units;
            for (int64_t jj = 0; jj < nj; jj++) {
                const char *row = t->b + (j0 + jj) * t->ld;
                for (int64_t l = 0; l < PACK_T_UNITS * 4 && q1 + l / 4 < units; l += 64)
                    __builtin_prefetch(row + 4 * q1 + l);   /* the next block */
                if (avx2 && jj % 8 == 0 && jj + 8 <= nj)   /* rows jj..jj+7 at once */
                    tjg_transpose8_avx2(row + 4 * q0, t->ld, q1 - q0, &pb[q0 * TJG_NR + jj],
                                        TJG_NR);
                else if (!avx2 || jj >= nj / 8 * 8)
                    for (int64_t q = q0; q < q1; q++)
                        memcpy(&pb[q * TJG_NR + jj], row + 4 * q, 4);
            }
        }
        if (k % t->g)   /* the last group in part: the rest stays 0 */
            for (int64_t jj = 0; jj < nj; jj++)
                memcpy(&pb[units * TJG_NR + jj], t->b + (j0 + jj) * t->ld + 4 * units,
                       (size_t)(k % t->g * t->es));
    }
}

static void pack_t(tjg_packed *p, const void *b, int64_t ld, int64_t k, int64_t n, int g, int es)
{
    pack_t_job t = {p, b, ld, k, n, g, es};
    rt_parallel_for(cdiv(n, TJG_NR), cdiv(1 << 16, k * TJG_NR), pack_t_range, &t);
}

/* bf16 or f16 bits: the same panels of pairs. */
static int pack_16(tjg_packed *p, tjg_type t, const uint16_t *b, int64_t rs, int64_t cs,
                   int64_t k, int64_t n)
{
    if (packed_alloc(p, t, k, n))
        return -1;
    if (rs == 1 && cs != 1 && k > 1) {
        pack_t(p, b, cs * 2, k, n, 2, 2);
        return 0;
    }
    PACK_LOOP(uint16_t, 2, *at = b[kk * rs + j * cs]);
    return 0;
}

int tjg_pack_bf16(tjg_packed *p, const uint16_t *b, int64_t rs, int64_t cs, int64_t k,
                  int64_t n)
{
    return pack_16(p, TJG_BF16, b, rs, cs, k, n);
}

int tjg_pack_f16(tjg_packed *p, const uint16_t *b, int64_t rs, int64_t cs, int64_t k,
                 int64_t n)
{
    return pack_16(p, TJG_F16, b, rs, cs, k, n);
}

/* f32 rounded to bf16 or f16 (RNE) as it is packed. */
static int pack_f32_as_16(tjg_packed *p, tjg_type t, const float *b, int64_t rs, int64_t cs,
                          int64_t k, int64_t n)
{
    if (packed_alloc(p, t, k, n))
        return -1;
    PACK_LOOP(uint16_t, 2,
              *at = t == TJG_F16 ? ir_f32_to_f16(b[kk * rs + j * cs])
                                 : tjg_f32_to_bf16(b[kk * rs + j * cs]));
    return 0;
}

int tjg_pack_f32_as_f16(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k,
                        int64_t n)
{
    return pack_f32_as_16(p, TJG_F16, b, rs, cs, k, n);
}

int tjg_pack_f32_as_bf16(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k,
                         int64_t n)
{
    return pack_f32_as_16(p, TJG_BF16, b, rs, cs, k, n);
}

int tjg_pack_s8(tjg_packed *p, const int8_t *b, int64_t rs, int64_t cs, int64_t k, int64_t n,
                const float *scale)
{
    if (packed_alloc(p, TJG_S8, k, n))
        return -1;
    p->scale = scale;
    if (!(p->colsum = rt_alloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t)))) {
        tjg_packed_free(p);
        return -1;
    }
    memset(p->colsum, 0, (size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    if (rs == 1 && cs != 1 && k > 1) {   /* each column of B a row of b */
        pack_t(p, b, cs, k, n, 4, 1);
        for (int64_t j = 0; j < n; j++)
            for (int64_t kk = 0; kk < k; kk++)
                p->colsum[j] += b[j * cs + kk];
        return 0;
    }
    PACK_LOOP(int8_t, 4, (*at = b[kk * rs + j * cs], p->colsum[j] += b[kk * rs + j * cs]));
    return 0;
}

int tjg_pack_f32_as_s8(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k,
                       int64_t n)
{
    size_t sb = (size_t)(n > 0 ? n : 1) * sizeof(float);
    float *scale = rt_alloc(sb), *inv = rt_alloc(sb);
    int8_t *q = scale && inv ? rt_alloc((size_t)(k * n > 0 ? k * n : 1)) : NULL;
    int r = -1;
    if (!q)
        goto done;
    for (int64_t j = 0; j < n; j++) {
        float mx = 0;
        for (int64_t kk = 0; kk < k; kk++)
            mx = fmaxf(mx, fabsf(b[kk * rs + j * cs]));
        scale[j] = mx > 0 ? mx / 127.0f : 1.0f;
        inv[j] = 1.0f / scale[j];
    }
    for (int64_t kk = 0; kk < k; kk++)
        for (int64_t j = 0; j < n; j++) {
            float v = nearbyintf(b[kk * rs + j * cs] * inv[j]);
            q[kk * n + j] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
        }
    if ((r = tjg_pack_s8(p, q, n, 1, k, n, scale)) == 0) {
        p->own_scale = scale;
        scale = NULL;
    }
done:
    if (scale)
        rt_free(scale, sb);
    if (inv)
        rt_free(inv, sb);
    if (q)
        rt_free(q, (size_t)(k * n > 0 ? k * n : 1));
    return r;
}

void tjg_packed_free(tjg_packed *p)
{
    if (p->parts) {   /* the Strassen form (gemm_strassen.c) */
        for (int q = 0; q < 7; q++)
            tjg_packed_free(&p->parts[q]);
        rt_free(p->parts, 7 * sizeof *p->parts);
        p->parts = NULL;
    }
    if (p->own_scale)
        rt_free(p->own_scale, (size_t)(p->n > 0 ? p->n : 1) * sizeof(float));
    p->own_scale = NULL;
    if (p->data)
        rt_free(p->data, p->nbytes);
    if (p->colsum)
        rt_free(p->colsum, (size_t)(p->n > 0 ? p->n : 1) * sizeof(int32_t));
    p->data = NULL;
    p->colsum = NULL;
}
