/* k_norm.c - eager kernels of the normalizations: softmax, log_softmax,
 * layer_norm, rms_norm, batch_norm (eval mode), for f32 and f64.
 *
 * A non-contiguous input is first copied to a contiguous one (like PyTorch).
 * softmax over the last dim works row by row: one pass for the max, one for
 * exp (stored) and its sum, one to scale; rows split across threads. Over
 * another dim, blocks of up to CB columns of the [outer, D, inner] layout run
 * the same passes vectorized across the columns. layer_norm and rms_norm
 * normalize rows of the flattened last `ndims` dims: mean, then the sum of
 * squared deviations (the row stays in L1), then y = (x - mean) * rstd * w + b.
 * batch_norm folds the running statistics into y = x * alpha[c] + beta[c].
 * Row statistics come from k_rows.h (lane-parallel, blocked into double).
 */
#include <math.h>

#include "iter.h"
#include "k_rows.h"
#include "kernels.h"

enum { CB = 256 };

/* x when contiguous, else a contiguous copy stored in *tmp (to release). */
static tj_tensor *dense(tj_tensor *x, tj_tensor **tmp)
{
    *tmp = NULL;
    if (!x || rt_is_contiguous(x))
        return x;
    tj_tensor *c = rt_tensor_new(x->dtype, x->ndim, x->shape);
    if (c && rt_convert(c, x) != 0) {
        tj_release(c);
        c = NULL;
    }
    return *tmp = c;
}

static int64_t grain_for(int64_t per_unit)
{
    return per_unit >= 32768 ? 1 : 32768 / (per_unit > 0 ? per_unit : 1);
}

/* ---- softmax, log_softmax ---------------------------------------------------------- */

typedef struct smx {
    const void *x;
    void *y;
    int64_t D, inner, nblk;
    bool log, f64;
} smx;

#define SOFTMAX_DEFINE(T, S, EXP) \
    RT_CLONES static void softmax_row_##S(const T *restrict x, T *restrict y, int64_t n, \
                                          bool lg) \
    { \
        T m = rt_row_max_##S(x, n); \
        if (lg) { \
            T ls = (T)log(rt_row_expsum_##S(x, n, m)); \
            for (int64_t i = 0; i < n; i++) \
                y[i] = x[i] - m - ls; \
            return; \
        } \
        double s = 0; \
        RT_LANE_SUM(T, T, RT_LN_##S, x, n, (y[k_] = EXP(v - m)), s); \
        T inv = (T)(1.0 / s); \
        for (int64_t i = 0; i < n; i++) \
            y[i] *= inv; \
    } \
    /* w columns j of rows d (stride st): softmax over d for each j; sums \
     * in T over chunks of 64 rows, chunks added in double. */ \
    RT_CLONES static void softmax_cols_##S(const T *restrict x, T *restrict y, int64_t D, \
                                           int64_t st, int64_t w, bool lg) \
    { \
        T m[CB], acc[CB], f[CB]; \
        double s[CB]; \
        for (int64_t j = 0; j < w; j++) \
            m[j] = x[j], s[j] = 0; \
        for (int64_t d = 0; d < D; d++) \
            for (int64_t j = 0; j < w; j++) { \
                T v = x[d * st + j]; \
                m[j] = (v > m[j] || v != v) ? v : m[j]; \
            } \
        for (int64_t d0 = 0; d0 < D; d0 += 64) { \
            for (int64_t j = 0; j < w; j++) \
                acc[j] = 0; \
            for (int64_t d = d0; d < D && d < d0 + 64; d++) \
                for (int64_t j = 0; j < w; j++) { \
                    T e = EXP(x[d * st + j] - m[j]); \
                    y[d * st + j] = e; \
                    acc[j] += e; \
                } \
            for (int64_t j = 0; j < w; j++) \
                s[j] += acc[j]; \
        } \
        for (int64_t j = 0; j < w; j++) \
            f[j] = lg ? (T)log(s[j]) : (T)(1.0 / s[j]); \
        if (lg) \
            for (int64_t d = 0; d < D; d++) \
                for (int64_t j = 0; j < w; j++) \
                    y[d * st + j] = x[d * st + j] - m[j] - f[j]; \
        else \
            for (int64_t d = 0; d < D; d++) \
                for (int64_t j = 0; j < w; j++) \
                    y[d * st + j] *= f[j]; \
    }
SOFTMAX_DEFINE(float, f32, vm_exp_f32)
SOFTMAX_DEFINE(double, f64, exp)

static void softmax_units(void *ctx, int64_t u0, int64_t u1)
{
    const smx *c = ctx;
    size_t es = c->f64 ? 8 : 4;
    for (int64_t u = u0; u < u1; u++) {
        int64_t off = u * c->D, w = 1;
        if (c->inner > 1) {
            int64_t o = u / c->nblk, j0 = u % c->nblk * CB;
            off = o * c->D * c->inner + j0;
            w = c->inner - j0 < CB ? c->inner - j0 : CB;
        }
        const char *x = (const char *)c->x + off * (int64_t)es;
        char *y = (char *)c->y + off * (int64_t)es;
        if (c->inner == 1 && c->f64)
            softmax_row_f64((const double *)x, (double *)y, c->D, c->log);
        else if (c->inner == 1)
            softmax_row_f32((const float *)x, (float *)y, c->D, c->log);
        else if (c->f64)
            softmax_cols_f64((const double *)x, (double *)y, c->D, c->inner, w, c->log);
        else
            softmax_cols_f32((const float *)x, (float *)y, c->D, c->inner, w, c->log);
    }
}

static int softmax_run(tj_tensor *out, tj_tensor *xin, const ir_attrs *a, bool lg)
{
    tj_tensor *tmp, *x = dense(xin, &tmp);
    if (!x)
        return -1;
    int dim = ir_norm_dim(a->a[0].i[0], x->ndim);
    smx c = {rt_ptr(x), out->storage->data, 1, 1, 1, lg, x->dtype == TJ_F64};
    int64_t outer = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d < dim)
            outer *= x->shape[d];
        else if (d > dim)
            c.inner *= x->shape[d];
    }
    c.D = x->ndim ? x->shape[dim] : 1;
    c.nblk = (c.inner + CB - 1) / CB;
    int64_t units = c.inner > 1 ? outer * c.nblk : outer;
    if (c.D > 0 && c.inner > 0)
        rt_parallel_for(units, grain_for(c.D * (c.inner < CB ? c.inner : CB)), softmax_units,
                        &c);
    tj_release(tmp);
    return 0;
}

int rt_k_softmax(RT_KERNEL_ARGS) { return softmax_run(out, in[0], a, false); }
int rt_k_log_softmax(RT_KERNEL_ARGS) { return softmax_run(out, in[0], a, true); }

/* ---- layer_norm, rms_norm ---------------------------------------------------------- */

typedef struct lnorm {
    const void *x, *w, *b;
    void *y;
    int64_t N;
    double eps;
    bool rms, f64;
} lnorm;

#define LAYER_NORM_DEFINE(T, S) \
    RT_CLONES static void layer_norm_row_##S(const T *restrict x, T *restrict y, int64_t n, \
                                             const T *restrict w, const T *restrict b, \
                                             double eps) \
    { \
        double mean, m2; \
        rt_row_moments_##S(x, n, false, &mean, &m2); \
        T m = (T)mean, r = (T)(1.0 / sqrt(m2 / (double)n + eps)); \
        if (w && b) \
            for (int64_t i = 0; i < n; i++) \
                y[i] = (x[i] - m) * r * w[i] + b[i]; \
        else if (w) \
            for (int64_t i = 0; i < n; i++) \
                y[i] = (x[i] - m) * r * w[i]; \
        else if (b) \
            for (int64_t i = 0; i < n; i++) \
                y[i] = (x[i] - m) * r + b[i]; \
        else \
            for (int64_t i = 0; i < n; i++) \
                y[i] = (x[i] - m) * r; \
    } \
    /* y = x * rsqrt(mean(x^2) + eps) * w */ \
    RT_CLONES static void rms_norm_row_##S(const T *restrict x, T *restrict y, int64_t n, \
                                           const T *restrict w, double eps) \
    { \
        double mean, m2; \
        rt_row_moments_##S(x, n, true, &mean, &m2); \
        T r = (T)(1.0 / sqrt(m2 / (double)n + eps)); \
        if (w) \
            for (int64_t i = 0; i < n; i++) \
                y[i] = x[i] * r * w[i]; \
        else \
            for (int64_t i = 0; i < n; i++) \
                y[i] = x[i] * r; \
    }
LAYER_NORM_DEFINE(float, f32)
LAYER_NORM_DEFINE(double, f64)

static void norm_units(void *ctx, int64_t u0, int64_t u1)
{
    const lnorm *c = ctx;
    size_t es = c->f64 ? 8 : 4;
    for (int64_t u = u0; u < u1; u++) {
        const char *x = (const char *)c->x + u * c->N * (int64_t)es;
        char *y = (char *)c->y + u * c->N * (int64_t)es;
        if (c->rms && c->f64)
            rms_norm_row_f64((const double *)x, (double *)y, c->N, c->w, c->eps);
        else if (c->rms)
            rms_norm_row_f32((const float *)x, (float *)y, c->N, c->w, c->eps);
        else if (c->f64)
            layer_norm_row_f64((const double *)x, (double *)y, c->N, c->w, c->b, c->eps);
        else
            layer_norm_row_f32((const float *)x, (float *)y, c->N, c->w, c->b, c->eps);
    }
}

static int norm_run(tj_tensor *out, tj_tensor *const *in, int nin, const ir_attrs *a, bool rms)
{
    tj_tensor *tx, *tw, *tb;
    tj_tensor *x = dense(in[0], &tx), *w = dense(nin > 1 ? in[1] : NULL, &tw);
    tj_tensor *b = dense(nin > 2 ? in[2] : NULL, &tb);
    int rc = -1;
    if (x && (w || nin < 2 || !in[1]) && (b || nin < 3 || !in[2])) {
        lnorm c = {rt_ptr(x), w ? rt_ptr(w) : NULL, b ? rt_ptr(b) : NULL, out->storage->data,
                   1, a->a[1].f, rms, x->dtype == TJ_F64};
        for (int d = x->ndim - (int)a->a[0].i[0]; d < x->ndim; d++)
            c.N *= x->shape[d];
        int64_t rows = c.N ? rt_numel(x) / c.N : 0;
        rt_parallel_for(rows, grain_for(c.N), norm_units, &c);
        rc = 0;
    }
    tj_release(tx);
    tj_release(tw);
    tj_release(tb);
    return rc;
}

int rt_k_layer_norm(RT_KERNEL_ARGS) { return norm_run(out, in, nin, a, false); }
int rt_k_rms_norm(RT_KERNEL_ARGS) { return norm_run(out, in, nin, a, true); }

/* ---- batch_norm ------------------------------------------------------------------------- */

typedef struct bnorm {
    const void *x;
    void *y;
    const void *alpha, *beta;   /* C each, in x's dtype */
    int64_t C, S;
    bool f64;
} bnorm;

#define AFFINE_DEFINE(T, S) \
    /* y = x * a + b with scalar a, b (sa == 0) or per-element a[i], b[i]. */ \
    RT_CLONES static void affine_##S(const T *restrict x, T *restrict y, int64_t n, \
                                     const T *restrict a, const T *restrict b, int sa) \
    { \
        if (sa == 0) \
            for (int64_t i = 0; i < n; i++) \
                y[i] = x[i] * a[0] + b[0]; \
        else \
            for (int64_t i = 0; i < n; i++) \
                y[i] = x[i] * a[i] + b[i]; \
    }
AFFINE_DEFINE(float, f32)
AFFINE_DEFINE(double, f64)

/* S == 1: unit n is a row of C channels; else unit (n, c) is S elements. */
static void bnorm_units(void *ctx, int64_t u0, int64_t u1)
{
    const bnorm *c = ctx;
    size_t es = c->f64 ? 8 : 4;
    for (int64_t u = u0; u < u1; u++) {
        int64_t ch = c->S == 1 ? 0 : u % c->C, n = c->S == 1 ? c->C : c->S;
        int64_t off = c->S == 1 ? u * c->C : u * c->S;
        const char *x = (const char *)c->x + off * (int64_t)es;
        char *y = (char *)c->y + off * (int64_t)es;
        const char *al = (const char *)c->alpha + ch * (int64_t)es;
        const char *be = (const char *)c->beta + ch * (int64_t)es;
        if (c->f64)
            affine_f64((const double *)x, (double *)y, n, (const double *)al,
                       (const double *)be, c->S == 1);
        else
            affine_f32((const float *)x, (float *)y, n, (const float *)al, (const float *)be,
                       c->S == 1);
    }
}

/* alpha = w / sqrt(var + eps), beta = b - mean * alpha, computed in double. */
static void bnorm_terms(tj_tensor *const *in, int nin, double eps, int64_t C, bool f64,
                        void *alpha, void *beta)
{
    for (int64_t c = 0; c < C; c++) {
        double mean = rt_load_f64(in[1], &c), var = rt_load_f64(in[2], &c);
        double w = nin > 3 && in[3] ? rt_load_f64(in[3], &c) : 1;
        double b = nin > 4 && in[4] ? rt_load_f64(in[4], &c) : 0;
        double al = w / sqrt(var + eps), be = b - mean * al;
        if (f64)
            ((double *)alpha)[c] = al, ((double *)beta)[c] = be;
        else
            ((float *)alpha)[c] = (float)al, ((float *)beta)[c] = (float)be;
    }
}

int rt_k_batch_norm(RT_KERNEL_ARGS)
{
    tj_tensor *tmp, *x = dense(in[0], &tmp);
    if (!x)
        return -1;
    bool f64 = x->dtype == TJ_F64;
    int64_t C = x->shape[1], S = 1, es = f64 ? 8 : 4;
    for (int d = 2; d < x->ndim; d++)
        S *= x->shape[d];
    size_t bytes = (size_t)(2 * (C > 0 ? C : 1) * es);
    char *terms = rt_alloc(bytes);
    if (!terms) {
        tj_release(tmp);
        return -1;
    }
    bnorm c = {rt_ptr(x), out->storage->data, terms, terms + C * es, C, S, f64};
    bnorm_terms(in, nin, a->a[0].f, C, f64, terms, terms + C * es);
    int64_t units = S == 1 ? x->shape[0] : x->shape[0] * C;
    if (C > 0 && S > 0)
        rt_parallel_for(units, grain_for(S == 1 ? C : S), bnorm_units, &c);
    rt_free(terms, bytes);
    tj_release(tmp);
    return 0;
}
