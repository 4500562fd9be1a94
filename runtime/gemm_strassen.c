/* gemm_strassen.c - one level of Strassen's product in Winograd's form (7
 * multiplies, 15 additions) for f32 GEMMs whose B is a kept weight
 * (runtime/gemm.h, docs/perf.md). With A, B and C cut into 2 x 2 quadrants:
 *
 *   B side, once per weight and version (tjg_pack_f32_strassen, kept by
 *   gemm_cache.c):  T1 = B12 - B11, T2 = B22 - T1, T3 = B22 - B12,
 *                   T4 = T2 - B21; B11, B21, B22, T1-T4 packed.
 *   A side, per call (one pass):  S1 = A21 + A22, S2 = S1 - A11,
 *                   S3 = A11 - A21, S4 = A12 - S2; where this CPU's kernel
 *                   reads A as tjg_gemm packs it (tjg_alayout_f32), A11,
 *                   A12, A21, A22 are packed sliver by sliver and S1-S4
 *                   formed from the packed slivers (a_pack), and the
 *                   products read them packed (tjg_gemm_packed_a).
 *   products (tjg_gemm; on several threads the column halves of the seven
 *   claimed one by one):  P1 = A11 B11, P2 = A12 B21,
 *                   P3 = S4 B22, P4 = A22 T4, P5 = S1 T1, P6 = S2 T2,
 *                   P7 = S3 T3.
 *   C side (one pass, the epilogue applied there, once per element):
 *                   C11 = P1 + P2, U2 = P1 + P6, U3 = U2 + P7,
 *                   C12 = U2 + P5 + P3, C21 = U3 - P4, C22 = U3 + P5.
 *
 * The products are 7/8 of the plain GEMM's multiply-adds. The rounding
 * differs from the plain sums: the bound is normwise (|C - AB| <= c u
 * ||A|| ||B||), not per element (tests/test_gemm_strassen.c measures it).
 */
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "gemm.h"
#include "rt.h"

/* On by default where P4 measured faster with it: AVX2 (Zen 3, docs/perf.md,
 * tenth session). Not on AVX-512: on two Zen 5 threads P4 compiled ran
 * 8.7-8.9 ms with it against 7.9-8.0 without (three alternations), and its
 * first call 110 ms longer, packing the B-side sums (docs/perf.md,
 * "OpenBLAS on AVX2 kernels"). */
static bool strassen_default(void) { return tjg_isa_current() == TJG_AVX2; }
/* k per block of the products where A's operands are packed once, against
 * the GEMM's own 256: a half panel of B is 6 KB of L1 beside the next one
 * being prefetched (the products have half P4's rows, so B's half panels
 * come twice as often per multiply-add). P4 paired on one Zen 3 core: 96
 * 3.4% faster than 256, 128 1% faster, 192 and 64 2-3% slower than 128
 * and 96 (docs/perf.md). Other rounding than 256's k-blocks (the partial
 * sums of each block added to C's). */
enum { STRASSEN_KC = 96 };

static atomic_ullong strassen_calls;

unsigned long long tjg_strassen_calls(void) { return atomic_load(&strassen_calls); }

static atomic_ullong packed_calls;

unsigned long long tjg_strassen_packed_calls(void) { return atomic_load(&packed_calls); }

bool tjg_strassen_wanted(int64_t m, int64_t n, int64_t k)
{
    int sw = rt_env_switch("TJIT_STRASSEN");
    bool on = sw >= 0 ? sw : strassen_default();
    return on && m % 2 == 0 && n % 2 == 0 && k % 2 == 0 && m >= TJG_STRASSEN_MIN_M &&
           n >= TJG_STRASSEN_MIN_NK && k >= TJG_STRASSEN_MIN_NK &&
           m * n * k >= TJG_STRASSEN_MIN_MNK;
}

/* ---- B side ---------------------------------------------------------------------------- */

/* A kh x nh operand: element (kk, j) at p[kk * rs + j * cs]. */
typedef struct mat { const float *p; int64_t rs, cs; } mat;

/* d = x - y over kh x nh, d in B's orientation (d's rows or columns
 * contiguous as B's are: dr, dc), the inner loop along the unit stride
 * (a linear's weight is B transposed: a row-major loop would read a cache
 * line per element). */
static void diff_b(float *d, int64_t dr, int64_t dc, mat x, mat y, int64_t kh, int64_t nh)
{
    if (dc == 1) {
        for (int64_t kk = 0; kk < kh; kk++)
            for (int64_t j = 0; j < nh; j++)
                d[kk * dr + j] = x.p[kk * x.rs + j * x.cs] - y.p[kk * y.rs + j * y.cs];
    } else {
        for (int64_t j = 0; j < nh; j++)
            for (int64_t kk = 0; kk < kh; kk++)
                d[kk + j * dc] = x.p[kk * x.rs + j * x.cs] - y.p[kk * y.rs + j * y.cs];
    }
}

int tjg_pack_f32_strassen(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k,
                          int64_t n)
{
    int64_t kh = k / 2, nh = n / 2;
    bool tr = cs != 1 && rs == 1;                 /* B's columns contiguous */
    int64_t dr = tr ? 1 : nh, dc = tr ? kh : 1;   /* T1-T4's strides */
    mat b11 = {b, rs, cs}, b12 = {b + nh * cs, rs, cs}, b21 = {b + kh * rs, rs, cs};
    mat b22 = {b + kh * rs + nh * cs, rs, cs};
    size_t tb = (size_t)(kh * nh > 0 ? kh * nh : 1) * sizeof(float);
    *p = (tjg_packed){.type = TJG_F32, .k = k, .n = n, .kp = k};
    p->parts = rt_alloc(7 * sizeof *p->parts);
    if (p->parts)
        memset(p->parts, 0, 7 * sizeof *p->parts);
    float *t1 = rt_alloc(tb), *t = rt_alloc(tb);
    int r = -1;
    if (!p->parts || !t1 || !t)
        goto done;
    mat m1 = {t1, dr, dc}, mt = {t, dr, dc};
    if (tjg_pack_f32(&p->parts[0], b11.p, rs, cs, kh, nh) ||
        tjg_pack_f32(&p->parts[1], b21.p, rs, cs, kh, nh) ||
        tjg_pack_f32(&p->parts[2], b22.p, rs, cs, kh, nh))
        goto done;
    diff_b(t1, dr, dc, b12, b11, kh, nh);   /* T1 */
    if (tjg_pack_f32(&p->parts[4], t1, dr, dc, kh, nh))
        goto done;
    diff_b(t, dr, dc, b22, b12, kh, nh);    /* T3 */
    if (tjg_pack_f32(&p->parts[6], t, dr, dc, kh, nh))
        goto done;
    diff_b(t, dr, dc, b22, m1, kh, nh);     /* T2 */
    if (tjg_pack_f32(&p->parts[5], t, dr, dc, kh, nh))
        goto done;
    diff_b(t, dr, dc, mt, b21, kh, nh);     /* T4 = T2 - B21, in place */
    if (tjg_pack_f32(&p->parts[3], t, dr, dc, kh, nh))
        goto done;
    for (int q = 0; q < 7; q++)
        p->nbytes += p->parts[q].nbytes;
    r = 0;
done:
    if (t1)
        rt_free(t1, tb);
    if (t)
        rt_free(t, tb);
    if (r && p->parts)
        tjg_packed_free(p);
    return r;
}

/* ---- A side ---------------------------------------------------------------------------- */

typedef struct call {
    int64_t mh, nh, kh;
    const float *a;
    int64_t rs, cs;
    float *s;        /* S1-S4, mh x kh each, contiguous */
    float *prod;     /* P1-P7, mh rows ldp apart each */
    int64_t ldp;
    float *c;
    int64_t ldc;
    const tjg_epilogue *e;
    const float *lhs[7];   /* the products' left operands */
    tjg_alayout l;         /* where packed (ap): the operands' layout */
    float *ap;             /* A11, A12, A22, S1, S2, S3, S4 packed, l.words apart */
    const tjg_packed *b;
    atomic_int failed;
} call;

/* The passes: AVX2 (+ FMA) where the CPU has it, else SSE2 (gemm.c's clones). */
#define SUMS_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))

SUMS_CLONES static void a_sums(void *ctx, int64_t i0, int64_t i1)
{
    const call *g = ctx;
    int64_t kh = g->kh, cs = g->cs, sz = g->mh * kh;
    for (int64_t i = i0; i < i1; i++) {
        const float *a11 = g->a + i * g->rs, *a12 = a11 + kh * cs;
        const float *a21 = a11 + g->mh * g->rs, *a22 = a21 + kh * cs;
        float *s1 = g->s + i * kh, *s2 = s1 + sz, *s3 = s2 + sz, *s4 = s3 + sz;
        if (cs == 1) {
            for (int64_t kk = 0; kk < kh; kk++) {
                float x1 = a21[kk] + a22[kk], x2 = x1 - a11[kk];
                s1[kk] = x1, s2[kk] = x2, s3[kk] = a11[kk] - a21[kk], s4[kk] = a12[kk] - x2;
            }
            continue;
        }
        for (int64_t kk = 0; kk < kh; kk++) {
            float v11 = a11[kk * cs], v21 = a21[kk * cs];
            float x1 = v21 + a22[kk * cs], x2 = x1 - v11;
            s1[kk] = x1, s2[kk] = x2, s3[kk] = v11 - v21, s4[kk] = a12[kk * cs] - x2;
        }
    }
}

/* The sums on packed slivers (pack_a copies A's elements: a sum of packed
 * operands is the packed sum): S3's place holds A21 on entry. The same
 * operations as a_sums', so the same bits. */
SUMS_CLONES static void packed_sums(int64_t n, const float *restrict a11,
                                    const float *restrict a12, const float *restrict a22,
                                    float *restrict s1, float *restrict s2, float *restrict s3,
                                    float *restrict s4)
{
    for (int64_t i = 0; i < n; i++) {
        float v11 = a11[i], v21 = s3[i], x1 = v21 + a22[i], x2 = x1 - v11;
        s1[i] = x1, s2[i] = x2, s3[i] = v11 - v21, s4[i] = a12[i] - x2;
    }
}

/* A's quadrants packed sliver by sliver (task t: k-block t / slivers, sliver
 * t % slivers) as the products read them, and S1-S4 formed from the packed
 * slivers while they are in L1: A is read once, packed once (as the plain
 * GEMM packs it), and the products pack nothing. */
static void a_pack(void *ctx, int64_t t0, int64_t t1)
{
    const call *g = ctx;
    const tjg_alayout *l = &g->l;
    int64_t rs = g->rs, cs = g->cs, w = l->words;
    const float *a11 = g->a, *a12 = a11 + g->kh * cs, *a21 = a11 + g->mh * rs;
    const float *a22 = a21 + g->kh * cs;
    float *o = g->ap;
    for (int64_t t = t0; t < t1; t++) {
        int64_t kb = t % l->nkb, s = t / l->nkb;
        tjg_pack_a_f32(l, a11, rs, cs, kb, s, s + 1, o);
        tjg_pack_a_f32(l, a12, rs, cs, kb, s, s + 1, o + w);
        tjg_pack_a_f32(l, a22, rs, cs, kb, s, s + 1, o + 2 * w);
        tjg_pack_a_f32(l, a21, rs, cs, kb, s, s + 1, o + 5 * w);
        int64_t nkg = l->k - kb * l->kc < l->kc ? l->k - kb * l->kc : l->kc;
        float *p = o + kb * l->block + s * nkg * TJG_MR;
        packed_sums(nkg * TJG_MR, p, p + w, p + 2 * w, p + 3 * w, p + 4 * w, p + 5 * w, p + 6 * w);
    }
}

/* ---- C side ---------------------------------------------------------------------------- */

SUMS_CLONES static void c_sums(void *ctx, int64_t i0, int64_t i1)
{
    const call *g = ctx;
    int64_t nh = g->nh, pz = g->mh * g->ldp;
    float alpha = g->e->alpha != 0 ? g->e->alpha : 1.0f;
    for (int64_t i = i0; i < i1; i++) {
        const float *p1 = g->prod + i * g->ldp, *p2 = p1 + pz, *p3 = p2 + pz, *p4 = p3 + pz;
        const float *p5 = p4 + pz, *p6 = p5 + pz, *p7 = p6 + pz;
        float *c11 = g->c + i * g->ldc, *c12 = c11 + nh;
        float *c21 = c11 + g->mh * g->ldc, *c22 = c21 + nh;
        for (int64_t j = 0; j < nh; j++) {
            float u2 = p1[j] + p6[j], u3 = u2 + p7[j];
            c11[j] = alpha * (p1[j] + p2[j]);
            c12[j] = alpha * (u2 + p5[j] + p3[j]);
            c21[j] = alpha * (u3 - p4[j]);
            c22[j] = alpha * (u3 + p5[j]);
        }
        tjg_epi_tail(g->e, c11, i, 0, nh);
        tjg_epi_tail(g->e, c12, i, nh, nh);
        tjg_epi_tail(g->e, c21, g->mh + i, 0, nh);
        tjg_epi_tail(g->e, c22, g->mh + i, nh, nh);
    }
}

enum { ROWS_PER_CHUNK = 8 };

/* Product q's columns [j0, j0 + nj) (j0 a whole panel) on this thread. */
static int product(call *g, int q, int64_t j0, int64_t nj)
{
    const tjg_packed *p = &g->b->parts[q];
    tjg_packed v = *p;
    v.n = nj, v.data = (float *)p->data + j0 / TJG_NR * p->kp * TJG_NR;
    if (g->ap) {   /* P1-P7's operands: A11, A12, S4, A22, S1, S2, S3 */
        static const int which[7] = {0, 1, 6, 2, 3, 4, 5};
        return tjg_gemm_packed_a(&g->l, g->ap + which[q] * g->l.words, &v,
                                 g->prod + q * g->mh * g->ldp + j0, g->ldp, NULL);
    }
    bool quad = q == 0 || q == 1 || q == 3;   /* a quadrant of A, else an S */
    return tjg_gemm(g->mh, g->lhs[q], false, quad ? g->rs : g->kh, quad ? g->cs : 1, &v,
                    g->prod + q * g->mh * g->ldp + j0, g->ldp, NULL, NULL);
}

/* TASK_SPLIT column parts of each product, claimed one by one */
enum { TASK_SPLIT = 2 };

static void product_tasks(void *ctx, int64_t t0, int64_t t1)
{
    call *g = ctx;
    int64_t panels = (g->nh + TJG_NR - 1) / TJG_NR;
    for (int64_t t = t0; t < t1; t++) {
        int64_t part = t % TASK_SPLIT, p0 = panels * part / TASK_SPLIT;
        int64_t p1 = panels * (part + 1) / TASK_SPLIT;
        int64_t j0 = p0 * TJG_NR, j1 = p1 * TJG_NR < g->nh ? p1 * TJG_NR : g->nh;
        if (j1 > j0 && product(g, (int)(t / TASK_SPLIT), j0, j1 - j0))
            atomic_store(&g->failed, 1);
    }
}

int tjg_gemm_strassen(int64_t m, const float *a, int64_t rs, int64_t cs, const tjg_packed *b,
                      float *c, int64_t ldc, const tjg_epilogue *e)
{
    tjg_epilogue none = {0};
    if (!e)
        e = &none;
    if (!b->parts || m % 2 || e->accumulate || e->out_bf16 || e->out_f16)
        return 1;
    call g = {.mh = m / 2, .nh = b->n / 2, .kh = b->k / 2, .a = a, .rs = rs, .cs = cs,
              .c = c, .ldc = ldc, .e = e};
    if (g.mh == 0 || g.nh == 0)
        return 1;
    /* the products' rows padded off a multiple of 1024 floats (gemm.c's
     * L1-set reason) and to whole cache lines */
    g.ldp = (g.nh + 15) / 16 * 16 + 16;
    if (g.ldp % 1024 == 0)
        g.ldp += 16;
    /* A's operands packed once where the kernel reads A as tjg_gemm packs
     * it (TJIT_STRASSEN_PACK=0, for measuring: the S pass and each product
     * packing its own) */
    const char *pv = getenv("TJIT_STRASSEN_PACK");
    bool packed = !(pv && pv[0] == '0') && !tjg_alayout_f32(g.mh, g.kh, STRASSEN_KC, &g.l);
    size_t sb = packed ? (size_t)(7 * g.l.words) * sizeof(float)
                       : (size_t)(4 * g.mh * (g.kh > 0 ? g.kh : 1)) * sizeof(float);
    size_t pb = (size_t)(7 * g.mh * g.ldp) * sizeof(float);
    g.s = rt_alloc(sb);
    g.prod = g.s ? rt_alloc(pb) : NULL;
    int r = -1;
    if (!g.prod)
        goto done;
    if (packed) {
        g.ap = g.s;
        rt_parallel_for(g.l.nkb * ((g.mh + TJG_MR - 1) / TJG_MR), 1, a_pack, &g);
    } else {
        rt_parallel_for(g.mh, ROWS_PER_CHUNK, a_sums, &g);
    }
    int64_t sz = g.mh * g.kh;
    const float *lhs[7] = {a, a + g.kh * cs, g.s + 3 * sz, a + g.mh * rs + g.kh * cs,
                           g.s, g.s + sz, g.s + 2 * sz};
    memcpy(g.lhs, lhs, sizeof lhs);
    g.b = b;
    atomic_init(&g.failed, 0);
    /* on several threads the products' column halves are claimed one by
     * one, each run on one thread: one pool dispatch for the seven instead
     * of two per product (A's packing, then the column tasks) and no wait
     * at the end of each; TJIT_STRASSEN_TASKS=0 (for measuring) runs each
     * product on the pool in turn (docs/perf.md) */
    const char *tv = getenv("TJIT_STRASSEN_TASKS");
    if (!(tv && tv[0] == '0') && rt_threads_here() > 1) {
        rt_parallel_tasks(7 * TASK_SPLIT, product_tasks, &g);
        if (atomic_load(&g.failed))
            goto done;
    } else {
        for (int q = 0; q < 7; q++)
            if (product(&g, q, 0, g.nh))
                goto done;
    }
    rt_parallel_for(g.mh, ROWS_PER_CHUNK, c_sums, &g);
    atomic_fetch_add(&strassen_calls, 1);
    if (packed)
        atomic_fetch_add(&packed_calls, 1);
    r = 0;
done:
    if (g.prod)
        rt_free(g.prod, pb);
    if (g.s)
        rt_free(g.s, sb);
    return r;
}
