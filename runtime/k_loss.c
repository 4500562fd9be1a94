/* k_loss.c - the eager kernel of cross_entropy, torch's semantics:
 *
 *   logits x [C], [N,C] or [N,C,d...]; a row is one batch position (n, d...)
 *   and its C class values; lse = logsumexp of the row, -log p_c = lse - x_c.
 *   class indices t:      loss = (1-e) w_t (lse - x_t) + e/C sum_c w_c (lse - x_c),
 *                         0 (and weight 0) when t == ignore_index
 *   class probabilities:  loss = sum_c w_c q_c (lse - x_c), q = t (1-e) + e/C
 *   reduction none: the losses (batch shape); sum; mean: their sum over the
 *   sum of w_t of the counted rows (index targets), over the row count
 *   (probabilities).
 *
 * e is label_smoothing (taken as 0 when not positive), w the class weights
 * (1 without). Rows are made contiguous first: logits whose class dim is not
 * the innermost (d... present, or strided) are copied class-last, in their
 * dtype; probabilities and weights are read as f64. lse is computed as the
 * reductions do (max, then a blocked sum of exp), everything after in double.
 */
#include <math.h>
#include <string.h>

#include "iter.h"
#include "k_rows.h"
#include "kernels.h"

typedef struct ce_ctx {
    const tj_tensor *x;        /* [rows, C] contiguous */
    const tj_tensor *q;        /* probabilities [rows, C] f64 contiguous, or NULL */
    const int64_t *target;     /* class indices [rows], or NULL */
    const double *w;           /* [C] or NULL */
    int64_t ncls, ignore;
    double eps;
    double *loss, *den;        /* per row */
} ce_ctx;

/* logsumexp of a row: max + log(sum(exp(x - max))), sums in double blocks. */
RT_CLONES static double lse_f32(const float *restrict x, int64_t n)
{
    float mx = rt_row_max_f32(x, n);
    return (double)mx + log(rt_row_expsum_f32(x, n, mx));
}

RT_CLONES static double lse_f64(const double *restrict x, int64_t n)
{
    double mx = rt_row_max_f64(x, n);
    return mx + log(rt_row_expsum_f64(x, n, mx));
}

static inline double row_at(const ce_ctx *c, int64_t r, int64_t k)
{
    int64_t i = r * c->ncls + k;
    return c->x->dtype == TJ_F32 ? ((const float *)rt_ptr(c->x))[i]
                                 : ((const double *)rt_ptr(c->x))[i];
}

static double row_lse(const ce_ctx *c, int64_t r)
{
    int64_t n = c->ncls;
    if (n == 0)
        return -INFINITY;
    if (c->x->dtype == TJ_F32)
        return lse_f32((const float *)rt_ptr(c->x) + r * n, n);
    return lse_f64((const double *)rt_ptr(c->x) + r * n, n);
}

/* sum_c w_c s_c (lse - x_c), s the row's smoothed probabilities or 1 */
static double weighted_nll_sum(const ce_ctx *c, int64_t r, double lse)
{
    const double *q = c->q ? (const double *)rt_ptr(c->q) + r * c->ncls : NULL;
    double s = 0, e = c->eps, u = e / (double)c->ncls;
    for (int64_t k = 0; k < c->ncls; k++) {
        double p = q ? (e > 0 ? q[k] * (1 - e) + u : q[k]) : 1.0;
        s += (c->w ? c->w[k] : 1.0) * p * (lse - row_at(c, r, k));
    }
    return s;
}

static void ce_range(void *p, int64_t b, int64_t e)
{
    const ce_ctx *c = p;
    for (int64_t r = b; r < e; r++) {
        if (c->q) {
            c->loss[r] = weighted_nll_sum(c, r, row_lse(c, r));
            c->den[r] = 1;
            continue;
        }
        int64_t t = c->target[r];
        if (t == c->ignore) {
            c->loss[r] = c->den[r] = 0;
            continue;
        }
        double lse = row_lse(c, r), wt = c->w ? c->w[t] : 1.0;
        double l = wt * (lse - row_at(c, r, t));
        if (c->eps > 0)
            l = (1 - c->eps) * l + c->eps / (double)c->ncls * weighted_nll_sum(c, r, lse);
        c->loss[r] = l;
        c->den[r] = wt;
    }
}

/* A contiguous copy of t with dim `cd` moved last, in dtype dt (refs 1, no
 * scope); t itself (retained) when it is already laid out so. */
static tj_tensor *class_last(tj_tensor *t, int cd, tj_dtype dt)
{
    int n = t->ndim;
    int64_t shape[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
    for (int d = 0, k = 0; d < n; d++)
        if (d != cd) {
            shape[k] = t->shape[d];
            strides[k++] = t->strides[d];
        }
    shape[n - 1] = t->shape[cd];
    strides[n - 1] = t->strides[cd];
    tj_tensor *v = rt_tensor_view(t, n, shape, strides, t->offset);
    if (!v)
        return NULL;
    if (v->dtype == dt && rt_is_contiguous(v))
        return v;
    tj_tensor *c = rt_tensor_new(dt, n, shape);
    if (c && rt_convert(c, v) != 0) {
        tj_release(c);
        c = NULL;
    }
    tj_release(v);
    return c;
}

/* The class indices of t in row order, each in [0, C) or equal to ignore. */
static int load_targets(const tj_tensor *t, int64_t *out, int64_t n, int64_t ncls,
                        int64_t ignore)
{
    tj_tensor *c = rt_tensor_new(TJ_I64, t->ndim, t->shape);
    if (!c || rt_convert(c, t) != 0) {
        tj_release(c);
        return -1;
    }
    const int64_t *v = rt_ptr(c);
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        out[i] = v[i];
        if (v[i] != ignore && (v[i] < 0 || v[i] >= ncls)) {
            rt_error("target %lld is out of range for the class count C = %lld",
                     (long long)v[i], (long long)ncls);
            rc = -1;
        }
    }
    tj_release(c);
    return rc;
}

/* Per-row losses into out (reduction none) or their reduction. */
static void ce_store(tj_tensor *out, const ce_ctx *c, int64_t rows, int64_t red)
{
    double s = 0, d = 0;
    for (int64_t r = 0; r < rows && red != TJ_REDUCTION_NONE; r++) {
        s += c->loss[r];
        d += c->den[r];
    }
    double one = red == TJ_REDUCTION_SUM ? s : s / d;   /* 0 / 0 = NaN: nothing counted */
    for (int64_t r = 0; r < (red == TJ_REDUCTION_NONE ? rows : 1); r++) {
        double v = red == TJ_REDUCTION_NONE ? c->loss[r] : one;
        if (out->dtype == TJ_F32)
            ((float *)rt_ptr(out))[r] = (float)v;
        else
            ((double *)rt_ptr(out))[r] = v;
    }
}

int rt_k_cross_entropy(RT_KERNEL_ARGS)
{
    (void)op;
    tj_tensor *x = in[0], *t = in[1], *w = nin > 2 ? in[2] : NULL;
    int cd = x->ndim == 1 ? 0 : 1;
    int64_t ncls = x->shape[cd], rows = 1;
    for (int d = 0; d < x->ndim; d++)
        rows *= d == cd ? 1 : x->shape[d];
    ce_ctx c = {.ncls = ncls, .ignore = a->a[1].i[0], .eps = a->a[2].f > 0 ? a->a[2].f : 0};
    /* loss, den, targets: R each; weights: C */
    int64_t R = rows > 0 ? rows : 1;
    size_t nb = (size_t)(3 * R + ncls) * sizeof(double);
    double *buf = rt_alloc(nb);
    if (!buf)
        return -1;
    c.loss = buf;
    c.den = buf + R;
    tj_tensor *xc = class_last(x, cd, x->dtype), *qc = NULL, *wc = NULL;
    int rc = xc ? 0 : -1;
    c.x = xc;
    if (rc == 0 && ir_dtype_is_float(t->dtype)) {
        c.q = qc = class_last(t, cd, TJ_F64);
        rc = qc ? 0 : -1;
    } else if (rc == 0) {
        int64_t *tg = (int64_t *)(buf + 2 * R);
        rc = load_targets(t, tg, rows, ncls, c.ignore);
        c.target = tg;
    }
    if (rc == 0 && w) {
        wc = rt_tensor_new(TJ_F64, 1, &ncls);
        rc = wc && rt_convert(wc, w) == 0 ? 0 : -1;
        c.w = wc ? memcpy(buf + 3 * R, rt_ptr(wc), (size_t)ncls * sizeof(double)) : NULL;
    }
    if (rc == 0) {
        rt_parallel_for(rows, RT_GRAIN / (ncls > 0 ? ncls : 1) + 1, ce_range, &c);
        ce_store(out, &c, rows, a->a[0].i[0]);
    }
    tj_release(xc);
    tj_release(qc);
    tj_release(wc);
    rt_free(buf, nb);
    return rc;
}
