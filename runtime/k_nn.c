/* k_nn.c - eager kernels of the neural-network composites (cross_entropy's
 * is in k_loss.c):
 *
 *   embedding      out[..., :] = weight[indices[...], :]      (row gather, any dtype)
 *   dropout        out[i] = u(seed, offset+i) >= p ? x[i] / (1-p) : 0
 *                  (u: Philox uniform of x's dtype; dropped elements are exactly 0)
 *   sdpa           softmax(q k^T * scale + mask) v, blocked over query rows
 *
 * sdpa, for each (batch, block of query rows, sdpa_bq): S = scale * q k^T with
 * BLAS into a per-thread scratch (k^T transposed once per batch a worker
 * takes up, a plain product being faster than BLAS's transposed one), the
 * mask (or the causal triangle) applied, a row softmax, then O = P v with
 * BLAS. A causal block only multiplies the keys it can see (0 .. its last
 * row), which halves the work. One worker per pool thread claims blocks
 * (or whole batches, where there are many) from a shared counter, with
 * OpenBLAS held to one thread meanwhile: concurrent multi-threaded OpenBLAS
 * calls from two pool threads oversubscribe the cores and measured 10x
 * slower; one loop on the caller letting OpenBLAS thread each small GEMM
 * measured 2x slower (P5 shape, q, k, v f32[4,8,256,64] causal, 2 cores:
 * 2.0 ms here vs 4.2 ms that way).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "blas.h"
#include "iter.h"
#include "k_rows.h"
#include "kernels.h"
#include "random.h"
#include "../ir/vmath.h"

/* ---- strided access --------------------------------------------------------------- */

static int64_t numel_of(const tj_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* Walks a tensor's elements in row-major order; off is in elements from the
 * start of the storage. */
typedef struct walk {
    const tj_tensor *t;
    int64_t idx[TJ_MAX_DIMS];
    int64_t off;
} walk;

static void walk_init(walk *w, const tj_tensor *t, int64_t flat)
{
    w->t = t;
    w->off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t s = t->shape[d] > 0 ? t->shape[d] : 1;
        w->idx[d] = flat % s;
        flat /= s;
        w->off += w->idx[d] * t->strides[d];
    }
}

static inline void walk_next(walk *w)
{
    const tj_tensor *t = w->t;
    for (int d = t->ndim - 1; d >= 0; d--) {
        w->off += t->strides[d];
        if (++w->idx[d] < t->shape[d])
            return;
        w->off -= t->strides[d] * t->shape[d];
        w->idx[d] = 0;
    }
}

/* Element at storage offset off of an i32 or i64 tensor. */
static inline int64_t index_at(const tj_tensor *t, int64_t off)
{
    const void *p = t->storage->data;
    return t->dtype == TJ_I64 ? ((const int64_t *)p)[off] : ((const int32_t *)p)[off];
}

/* Copies n elements of a float tensor, starting at row-major position w,
 * densely into dst. */
static void gather_elems(walk *w, void *dst, int64_t n)
{
    const void *src = w->t->storage->data;
    for (int64_t i = 0; i < n; i++, walk_next(w)) {
        if (w->t->dtype == TJ_F32)
            ((float *)dst)[i] = ((const float *)src)[w->off];
        else
            ((double *)dst)[i] = ((const double *)src)[w->off];
    }
}

/* A new contiguous copy of a float tensor t (refs 1, in no scope). */
static tj_tensor *dense_copy(const tj_tensor *t)
{
    tj_tensor *c = rt_tensor_new(t->dtype, t->ndim, t->shape);
    if (!c)
        return NULL;
    walk w;
    walk_init(&w, t, 0);
    gather_elems(&w, c->storage->data, numel_of(t));
    return c;
}

/* Reads every index of t (i32/i64) into rows, checking 0 <= index < limit. */
static int load_indices(const tj_tensor *t, int64_t *rows, int64_t n, int64_t limit,
                        const char *what, const char *limit_name)
{
    walk w;
    walk_init(&w, t, 0);
    for (int64_t i = 0; i < n; i++, walk_next(&w)) {
        int64_t r = index_at(t, w.off);
        if (r < 0 || r >= limit) {
            rt_error("%s %lld is out of range for %s = %lld", what, (long long)r, limit_name,
                     (long long)limit);
            return -1;
        }
        rows[i] = r;
    }
    return 0;
}

/* ---- embedding ------------------------------------------------------------------------ */

typedef struct emb_ctx {
    const tj_tensor *w;
    const int64_t *rows;
    char *out;
    int64_t d;
    size_t es;
} emb_ctx;

static void emb_range(void *p, int64_t b, int64_t e)
{
    const emb_ctx *c = p;
    const tj_tensor *w = c->w;
    const char *base = w->storage->data;
    int64_t s0 = w->strides[0], s1 = w->strides[1], d = c->d;
    for (int64_t i = b; i < e; i++) {
        char *dst = c->out + (size_t)(i * d) * c->es;
        int64_t off = w->offset + c->rows[i] * s0;
        if (s1 == 1 || d <= 1) {
            memcpy(dst, base + (size_t)off * c->es, (size_t)d * c->es);
            continue;
        }
        for (int64_t j = 0; j < d; j++, off += s1)   /* any dtype: an element's bytes */
            memcpy(dst + (size_t)j * c->es, base + (size_t)off * c->es, c->es);
    }
}

int rt_k_embedding(RT_KERNEL_ARGS)
{
    (void)op, (void)nin, (void)a;
    const tj_tensor *w = in[0], *idx = in[1];
    int64_t n = numel_of(idx), d = w->shape[1];
    size_t nbytes = (size_t)(n > 0 ? n : 1) * sizeof(int64_t);
    int64_t *rows = rt_alloc(nbytes);
    if (!rows)
        return -1;
    if (load_indices(idx, rows, n, w->shape[0], "index", "V") != 0) {
        rt_free(rows, nbytes);
        return -1;
    }
    emb_ctx c = {w, rows, rt_ptr(out), d, tj_dtype_size(w->dtype)};
    rt_parallel_for(n, RT_GRAIN / (d > 0 ? d : 1) + 1, emb_range, &c);
    rt_free(rows, nbytes);
    return 0;
}

/* ---- dropout -------------------------------------------------------------------------- */

#define DROP_BLOCK 512

typedef struct drop_ctx {
    const tj_tensor *x;
    void *out;
    double p;
    uint64_t seed, offset;
    bool dense;
} drop_ctx;

RT_CLONES static void drop_f32(float *restrict o, const float *restrict x,
                               const float *restrict u, int64_t n, float p, float scale)
{
    for (int64_t j = 0; j < n; j++)
        o[j] = u[j] >= p ? x[j] * scale : 0.0f;
}

RT_CLONES static void drop_f64(double *restrict o, const double *restrict x,
                               const double *restrict u, int64_t n, double p, double scale)
{
    for (int64_t j = 0; j < n; j++)
        o[j] = u[j] >= p ? x[j] * scale : 0.0;
}

static void drop_range(void *ctx, int64_t b, int64_t e)
{
    const drop_ctx *c = ctx;
    bool f32 = c->x->dtype == TJ_F32;
    size_t es = f32 ? 4 : 8;
    double scale = c->p < 1 ? 1.0 / (1.0 - c->p) : 0.0;
    union {
        float f[DROP_BLOCK];
        double d[DROP_BLOCK];
    } u, xs;
    walk w;
    walk_init(&w, c->x, c->dense ? 0 : b);
    for (int64_t i = b; i < e; i += DROP_BLOCK) {
        int64_t m = e - i < DROP_BLOCK ? e - i : DROP_BLOCK;
        const void *xp = (const char *)rt_ptr(c->x) + (size_t)i * es;
        if (!c->dense) {
            gather_elems(&w, &xs, m);
            xp = &xs;
        }
        void *op = (char *)c->out + (size_t)i * es;
        if (f32) {
            rt_philox_uniform_f32(c->seed, c->offset + (uint64_t)i, u.f, m);
            drop_f32(op, xp, u.f, m, (float)c->p, (float)scale);
        } else {
            rt_philox_uniform_f64(c->seed, c->offset + (uint64_t)i, u.d, m);
            drop_f64(op, xp, u.d, m, c->p, scale);
        }
    }
}

int rt_k_dropout(RT_KERNEL_ARGS)
{
    (void)op, (void)nin;
    drop_ctx c = {in[0], rt_ptr(out), a->a[0].f, 0, 0, rt_is_contiguous(in[0])};
    if (numel_of(in[0]) == 0)   /* no draws (a traced one reserved none either) */
        return 0;
    if (rt_rng_resolve((uint64_t)a->a[1].i[0], (uint64_t)a->a[2].i[0], &c.seed, &c.offset) != 0)
        return -1;
    rt_parallel_for(numel_of(in[0]), RT_GRAIN, drop_range, &c);
    return 0;
}

/* ---- vector reductions for sdpa's short rows (k_rows.h's 64-lane sums are
 * tuned for long rows and measured 1.5x slower on rows of 256) ---------------- */

typedef float rt_v16f __attribute__((vector_size(64)));
typedef int32_t rt_v16i __attribute__((vector_size(64)));

/* The 16 lanes of v folded in halves (8, 4, 2, 1): four dependent steps
 * where a lane-by-lane loop made sixteen. Causal rows are short (P5's
 * average 128 scores), so the two folds per row are a large part of the
 * row's cost. */
#define RT_V16_FOLD(v, OP)                                                                       \
    do {                                                                                         \
        v = OP(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, \
                                          6, 7));                                                \
        v = OP(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9,  \
                                          10, 11));                                              \
        v = OP(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15,  \
                                          12, 13));                                              \
        v = OP(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12,  \
                                          15, 14));                                              \
    } while (0)

/* Lane-wise a > b ? a : b (a NaN lane of a is not taken); a + b. Macros:
 * a function returning a 64-byte vector changes the ABI without AVX-512. */
#define V16_MAX(a, b) ((rt_v16f)((((a) > (b)) & (rt_v16i)(a)) | (~((a) > (b)) & (rt_v16i)(b))))
#define V16_ADD(a, b) ((a) + (b))

/* Max of x[0..n); NaN elements are skipped (the exp of the row makes them NaN again). */
static inline float vmax_f32(const float *restrict x, int64_t n)
{
    rt_v16f m = (rt_v16f){0} - INFINITY;
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        rt_v16f a;
        memcpy(&a, x + j, sizeof a);
        m = V16_MAX(a, m);
    }
    RT_V16_FOLD(m, V16_MAX);
    float r = m[0];
    for (; j < n; j++)
        r = x[j] > r ? x[j] : r;
    return r;
}

static inline float vsum_f32(const float *restrict x, int64_t n)
{
    rt_v16f s = {0};
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        rt_v16f a;
        memcpy(&a, x + j, sizeof a);
        s += a;
    }
    RT_V16_FOLD(s, V16_ADD);
    float r = s[0];
    for (; j < n; j++)
        r += x[j];
    return r;
}
#undef RT_V16_FOLD
#undef V16_MAX
#undef V16_ADD

/* ---- sdpa ------------------------------------------------------------------------------- */

/* Query rows per block: 32 where S is short, the block's scores (32 x S)
 * then in L1 through the softmax's passes and a causal block's masked half
 * smaller, else 64, where the products' larger m pays. Measured against 64
 * (q, k, v [n, 8, L = S, 64], 2 threads, process pairs, wall): S 128 1.00
 * causal / 1.04 not; 256 0.85 / 0.79 (P5 0.84); 512 0.88 / 1.14; 1024
 * 1.04 / 1.11. */
static int64_t sdpa_bq(int64_t s, bool causal) { return s <= (causal ? 512 : 256) ? 32 : 64; }

/* q, k, v or mask seen through the output's batch dims [..., rows, cols]:
 * broadcast dims have stride 0; strides in elements. */
typedef struct sdpa_mat {
    const char *base;
    int64_t bstride[TJ_MAX_DIMS];
    int64_t rs, cs;
} sdpa_mat;

typedef struct sdpa_ctx {
    tj_dtype dt;
    size_t es;
    int nb;                      /* batch dims of the output */
    const int64_t *bshape;
    int64_t l, s, e, ev, nblk, ntask;
    int64_t bq;                  /* query rows per block (sdpa_bq) */
    int64_t claim;               /* tasks a worker claims at once: 1, or a batch's nblk */
    double scale;
    bool causal, has_mask, mask_bool;
    sdpa_mat q, k, v, m;
    char *out;
    atomic_int_fast64_t next;    /* the next task to claim */
    atomic_bool failed;
} sdpa_ctx;

/* Aligns t's dims to the right of [batch (nb dims), rows, cols]. */
static void mat_of(sdpa_mat *m, const tj_tensor *t, int nb)
{
    int lead = nb + 2 - t->ndim;
    int64_t st[TJ_MAX_DIMS + 2];
    for (int d = 0; d < nb + 2; d++) {
        int td = d - lead;
        st[d] = td >= 0 && t->shape[td] != 1 ? t->strides[td] : 0;
    }
    m->base = rt_ptr(t);
    memcpy(m->bstride, st, (size_t)nb * sizeof *st);
    m->rs = st[nb];
    m->cs = st[nb + 1];
}

/* Whether BLAS can read m as a [rows, cols] matrix in place (unit column
 * stride, rows apart by at least cols); sets a valid leading dim when so. */
static bool mat_blas_ok(sdpa_mat *m, int64_t rows, int64_t cols)
{
    int64_t ld = cols > 1 ? cols : 1;
    if (cols > 1 && m->cs != 1)
        return false;
    if (rows <= 1)
        m->rs = ld;
    return m->rs >= ld;
}

static int64_t mat_offset(const sdpa_mat *m, const sdpa_ctx *c, int64_t bi)
{
    int64_t off = 0;
    for (int d = c->nb - 1; d >= 0; d--) {
        off += (bi % c->bshape[d]) * m->bstride[d];
        bi /= c->bshape[d];
    }
    return off;
}

static int gemm(const sdpa_ctx *c, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                const void *a, int64_t lda, const void *b, int64_t ldb, void *out, int64_t ldc)
{
    if (c->dt == TJ_F32)
        return rt_sgemm(false, trans_b, m, n, k, (float)alpha, a, lda, b, ldb, 0.0f, out, ldc);
    return rt_dgemm(false, trans_b, m, n, k, alpha, a, lda, b, ldb, 0.0, out, ldc);
}

/* Masks one score row: bool false -> -inf, float mask added. */
#define SDPA_MASK_ROW(T)                                                                   \
    static void mask_row_##T(T *restrict s, const void *mp, int64_t ms, int64_t n, bool b)  \
    {                                                                                      \
        if (b) {                                                                           \
            const uint8_t *m = mp;                                                         \
            for (int64_t j = 0; j < n; j++)                                                \
                s[j] = m[j * ms] ? s[j] : (T)-INFINITY;                                    \
        } else {                                                                           \
            const T *m = mp;                                                               \
            for (int64_t j = 0; j < n; j++)                                                \
                s[j] += m[j * ms];                                                         \
        }                                                                                  \
    }
SDPA_MASK_ROW(float)
SDPA_MASK_ROW(double)
#undef SDPA_MASK_ROW

/* Softmax over s[0..valid); s[valid..n) (keys a causal row cannot see) -> 0.
 * The row is ld >= n floats wide, ld a multiple of 16: the scores from valid
 * to the next multiple of 16 are set to -inf first, so every pass runs on
 * whole vectors (exp(-inf - max) is 0 and adds nothing to the sum) instead
 * of ending in a scalar tail of up to 15 exps, which most causal rows have.
 * A row with every score -inf gives NaN, like the formula. */
RT_CLONES static void softmax_row_f32(float *restrict s, int64_t valid, int64_t n)
{
    int64_t w = (valid + 15) & ~(int64_t)15;
    for (int64_t j = valid; j < w; j++)
        s[j] = -INFINITY;
    float mx = vmax_f32(s, w);
    for (int64_t j = 0; j < w; j++)
        s[j] = vm_exp_f32(s[j] - mx);
    float k = 1.0f / vsum_f32(s, w);
    for (int64_t j = 0; j < w; j++)
        s[j] *= k;
    for (int64_t j = valid; j < n; j++)
        s[j] = 0;
}

static void softmax_row_f64(double *s, int64_t valid, int64_t n)
{
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < valid; j++)
        mx = s[j] > mx ? s[j] : mx;
    for (int64_t j = 0; j < valid; j++) {
        s[j] = exp(s[j] - mx);
        sum += s[j];
    }
    for (int64_t j = 0; j < valid; j++)
        s[j] /= sum;
    memset(s + valid, 0, (size_t)(n - valid) * sizeof *s);
}

/* Mask and softmax of the m x kend scores of query rows i0.., rows ld apart. */
static void sdpa_softmax(const sdpa_ctx *c, void *scores, int64_t m, int64_t kend, int64_t ld,
                         int64_t i0, int64_t mask_off)
{
    size_t mes = c->mask_bool ? 1 : c->es;
    for (int64_t r = 0; r < m; r++) {
        int64_t i = i0 + r, valid = c->causal ? (i + 1 < kend ? i + 1 : kend) : kend;
        const void *mrow = c->has_mask ? c->m.base + (size_t)(mask_off + i * c->m.rs) * mes : NULL;
        if (c->dt == TJ_F32) {
            float *row = (float *)scores + r * ld;
            if (c->has_mask)
                mask_row_float(row, mrow, c->m.cs, kend, c->mask_bool);
            softmax_row_f32(row, valid, kend);
        } else {
            double *row = (double *)scores + r * ld;
            if (c->has_mask)
                mask_row_double(row, mrow, c->m.cs, kend, c->mask_bool);
            softmax_row_f64(row, valid, kend);
        }
    }
}

/* A score row's width: kend rounded up to whole 16-float vectors
 * (softmax_row_f32). */
static int64_t score_ld(int64_t kend) { return (kend + 15) & ~(int64_t)15; }

/* A worker's scratch: a block of scores, and k^T of the batch whose keys
 * it last read ([E, S], rows S apart): q k^T as a plain product (NN) runs
 * at 1.2-1.7x OpenBLAS's rate with k^T read in place (NT) at P5's shapes,
 * one thread (gemm_bench 64xkendx64: 160-169 against 95-104 GFLOP/s up
 * to kend 128, 119 against 104 at 256), and consecutive tasks are one
 * batch's query blocks, so a worker transposes each k about once. */
typedef struct sdpa_scratch {
    void *scores, *kt;
    int64_t kt_off;   /* k's element offset whose transpose kt holds; -1: none */
} sdpa_scratch;

typedef float rt_v8f __attribute__((vector_size(32)));

/* dst[j * rows + i] = src[i * rs + j]: 8 x 8 blocks transposed in vector
 * registers (three rounds of shuffles), the edges element by element. */
RT_CLONES static void transpose_float(float *restrict dst, const float *restrict src,
                                      int64_t rows, int64_t cols, int64_t rs)
{
    int64_t r8 = rows & ~(int64_t)7, c8 = cols & ~(int64_t)7;
    for (int64_t i = 0; i < r8; i += 8)
        for (int64_t j = 0; j < c8; j += 8) {
            rt_v8f r[8], t[8], u[8];
            for (int k = 0; k < 8; k++)
                memcpy(&r[k], src + (i + k) * rs + j, sizeof r[k]);
            for (int k = 0; k < 8; k += 2) {
                t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
                t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
            }
            for (int k = 0; k < 8; k += 4)
                for (int h = 0; h < 2; h++) {
                    u[k + 2 * h] = __builtin_shufflevector(t[k + h], t[k + 2 + h], 0, 1, 8, 9, 4,
                                                           5, 12, 13);
                    u[k + 2 * h + 1] = __builtin_shufflevector(t[k + h], t[k + 2 + h], 2, 3, 10,
                                                               11, 6, 7, 14, 15);
                }
            for (int k = 0; k < 4; k++) {   /* u[k], u[k + 4]: columns k and k + 4 */
                r[k] = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
                r[k + 4] = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
            }
            for (int k = 0; k < 8; k++)
                memcpy(dst + (j + k) * rows + i, &r[k], sizeof r[k]);
        }
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = i < r8 ? c8 : 0; j < cols; j++)
            dst[j * rows + i] = src[i * rs + j];
}

static void transpose_double(double *restrict dst, const double *restrict src, int64_t rows,
                             int64_t cols, int64_t rs)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            dst[j * rows + i] = src[i * rs + j];
}

/* Task t: batch t / nblk, its query blocks last first (under causal the
 * later blocks cost more, so the cheap ones are left to even out the end). */
static int sdpa_task(const sdpa_ctx *c, int64_t t, sdpa_scratch *w)
{
    int64_t bi = t / c->nblk, blk = c->nblk - 1 - t % c->nblk;
    int64_t i0 = blk * c->bq, m = c->l - i0 < c->bq ? c->l - i0 : c->bq;
    int64_t kend = c->causal ? (i0 + m < c->s ? i0 + m : c->s) : c->s;
    size_t es = c->es;
    int64_t koff = mat_offset(&c->k, c, bi);
    const char *q = c->q.base + (size_t)(mat_offset(&c->q, c, bi) + i0 * c->q.rs) * es;
    const char *k = c->k.base + (size_t)koff * es;
    const char *v = c->v.base + (size_t)mat_offset(&c->v, c, bi) * es;
    char *o = c->out + (size_t)((bi * c->l + i0) * c->ev) * es;
    if (w->kt_off != koff) {
        if (c->dt == TJ_F32)
            transpose_float(w->kt, (const float *)k, c->s, c->e, c->k.rs);
        else
            transpose_double(w->kt, (const double *)k, c->s, c->e, c->k.rs);
        w->kt_off = koff;
    }
    int64_t ld = score_ld(kend);
    if (gemm(c, false, m, kend, c->e, c->scale, q, c->q.rs, w->kt, c->s, w->scores, ld) != 0)
        return -1;
    sdpa_softmax(c, w->scores, m, kend, ld, i0, c->has_mask ? mat_offset(&c->m, c, bi) : 0);
    return gemm(c, false, m, c->ev, kend, 1.0, w->scores, ld, v, c->v.rs, o, c->ev);
}

/* One worker: claims tasks until none are left, so a thread the OS delays
 * leaves its share to the others (a task's result never depends on who runs it). */
static void sdpa_worker(void *p, int64_t b, int64_t e)
{
    (void)b, (void)e;
    sdpa_ctx *c = p;
    int64_t s1 = c->s > 0 ? c->s : 1, e1 = c->e > 0 ? c->e : 1;
    size_t nscores = (size_t)(c->bq * score_ld(s1)) * c->es, nkt = (size_t)(s1 * e1) * c->es;
    sdpa_scratch w = {rt_alloc(nscores), rt_alloc(nkt), -1};
    int rc = w.scores && w.kt ? 0 : -1;
    for (int64_t t0; rc == 0 && (t0 = atomic_fetch_add(&c->next, c->claim)) < c->ntask;)
        for (int64_t t = t0; rc == 0 && t < t0 + c->claim && t < c->ntask; t++)
            rc = sdpa_task(c, t, &w);
    if (rc != 0)
        atomic_store(&c->failed, true);
    if (w.scores)
        rt_free(w.scores, nscores);
    if (w.kt)
        rt_free(w.kt, nkt);
}

/* Reads t in place when BLAS can, else through a dense copy kept in *copy. */
static int sdpa_input(sdpa_mat *m, const tj_tensor *t, int nb, tj_tensor **copy)
{
    int64_t rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1];
    mat_of(m, t, nb);
    if (mat_blas_ok(m, rows, cols))
        return 0;
    *copy = dense_copy(t);
    if (!*copy)
        return -1;
    mat_of(m, *copy, nb);
    mat_blas_ok(m, rows, cols);
    return 0;
}

/* Runs every task: on one worker per pool thread with OpenBLAS single-
 * threaded, or on the caller alone (letting OpenBLAS thread) when there is
 * too little work to split. */
static void sdpa_run(sdpa_ctx *c)
{
    int64_t work = c->bq * (c->s + 1) * (c->e + c->ev + 1);
    int64_t workers = c->ntask / (1 + (1 << 18) / work);
    workers = workers < rt_threads() ? workers : rt_threads();
    /* a batch's blocks together (one transpose of its k) where there are
     * batches enough to keep every worker busy to the end */
    c->claim = c->ntask / c->nblk >= 4 * workers ? c->nblk : 1;
    if (workers < 2) {
        sdpa_worker(c, 0, 1);
        return;
    }
    rt_blas_serial_begin();
    rt_parallel_for(workers, 1, sdpa_worker, c);
    rt_blas_serial_end();
}

int rt_k_sdpa(RT_KERNEL_ARGS)
{
    (void)op;
    tj_tensor *q = in[0], *k = in[1], *v = in[2], *mask = nin > 3 ? in[3] : NULL;
    tj_tensor *copies[3] = {NULL, NULL, NULL};
    sdpa_ctx c = {.dt = q->dtype, .es = tj_dtype_size(q->dtype), .nb = out->ndim - 2,
                  .bshape = out->shape, .l = q->shape[q->ndim - 2], .s = k->shape[k->ndim - 2],
                  .e = q->shape[q->ndim - 1], .ev = v->shape[v->ndim - 1],
                  .causal = a->a[0].i[0] != 0, .has_mask = mask != NULL,
                  .mask_bool = mask && mask->dtype == TJ_BOOL, .out = rt_ptr(out)};
    c.bq = sdpa_bq(c.s, c.causal);
    c.nblk = (c.l + c.bq - 1) / c.bq;
    c.scale = a->a[1].f > 0 ? a->a[1].f : 1.0 / sqrt((double)c.e);
    atomic_init(&c.next, 0);
    atomic_init(&c.failed, false);
    int64_t nbatch = 1;
    for (int d = 0; d < c.nb; d++)
        nbatch *= c.bshape[d];
    if (numel_of(out) == 0)
        return 0;
    int rc = rt_blas_core() ? 0 : -1;
    if (rc == 0)
        rc = sdpa_input(&c.q, q, c.nb, &copies[0]) | sdpa_input(&c.k, k, c.nb, &copies[1]) |
             sdpa_input(&c.v, v, c.nb, &copies[2]);
    if (mask)
        mat_of(&c.m, mask, c.nb);
    if (rc == 0) {
        c.ntask = nbatch * c.nblk;
        sdpa_run(&c);
        if (atomic_load(&c.failed)) {
            rt_error("out of memory or BLAS failure in a worker thread");
            rc = -1;
        }
    }
    for (int i = 0; i < 3; i++)
        tj_release(copies[i]);
    return rc;
}
