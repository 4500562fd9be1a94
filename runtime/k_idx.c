/* k_idx.c - eager kernels of the scan, sort and scatter prims of ops.def's
 * "indexing, scans and shapes" section: cumsum, cumprod, logcumsumexp,
 * cummax_indices, cummin_indices, argsort, scatter, scatter_add, scatter_reduce.
 *
 * Each works on "lines": the elements along one dim, for every position of
 * the other dims. The inputs are first copied into a contiguous work tensor
 * of f64 (float inputs: exact for f32, and the double accumulation
 * PyTorch's CPU scans use) or i64 (integers and bool: exact), the line is
 * processed in that type, and the result converted once into the output.
 * Lines are split over the thread pool.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "iter.h"
#include "kernels.h"

/* A contiguous copy of t in f64 (floats) or i64 (the rest); NULL on error. */
static tj_tensor *work_of(const tj_tensor *t, bool as_float)
{
    tj_tensor *w = rt_tensor_new(as_float ? TJ_F64 : TJ_I64, t->ndim, t->shape);
    if (w && rt_convert(w, t) != 0) {
        tj_release(w);
        return NULL;
    }
    return w;
}

/* The line layout of a contiguous tensor of shape along dim. */
typedef struct lines {
    int64_t outer, n, inner;   /* element (o, k, i) at (o n + k) inner + i */
} lines;

static lines lines_of(const tj_tensor *t, int64_t dim_attr)
{
    lines L = {1, 1, 1};
    int d = t->ndim ? ir_norm_dim(dim_attr, t->ndim) : 0;
    for (int k = 0; k < t->ndim; k++) {
        if (k < d)
            L.outer *= t->shape[k];
        else if (k == d)
            L.n = t->shape[k];
        else
            L.inner *= t->shape[k];
    }
    return L;
}

/* ---- scans ---------------------------------------------------------------------------- */

typedef struct scan_ctx {
    lines L;
    ir_op op;
    bool flt;
    void *x, *y;   /* work arrays: double or int64_t */
} scan_ctx;

static double log_add_exp(double a, double b)
{
    double lo = a < b ? a : b, hi = a < b ? b : a;
    if (isnan(lo) || isnan(hi))
        return NAN;
    if (isinf(hi) && lo == hi)   /* -inf + -inf, inf + inf */
        return hi;
    return hi + log1p(exp(lo - hi));
}

/* PyTorch's cummax/cummin: a NaN always takes over; after one, nothing
 * does; ties take the later index (>=, <=). */
#define CUM_ARG(T, isnan_)                                                              \
    static void cum_arg_##T(const T *x, int64_t *y, int64_t n, int64_t s, bool max)     \
    {                                                                                   \
        T best = x[0];                                                                  \
        int64_t at = 0;                                                                 \
        for (int64_t k = 0; k < n; k++) {                                               \
            T v = x[k * s];                                                             \
            if (isnan_(v) || (!isnan_(best) && (max ? v >= best : v <= best)))           \
                best = v, at = k;                                                       \
            y[k * s] = at;                                                              \
        }                                                                               \
    }
#define NO_NAN(v) ((void)(v), false)
CUM_ARG(double, isnan)
CUM_ARG(int64_t, NO_NAN)

static void scan_line(const scan_ctx *c, int64_t base)
{
    int64_t n = c->L.n, s = c->L.inner;
    if (c->op == OP_cummax_indices || c->op == OP_cummin_indices) {
        bool max = c->op == OP_cummax_indices;
        if (c->flt)
            cum_arg_double((const double *)c->x + base, (int64_t *)c->y + base, n, s, max);
        else
            cum_arg_int64_t((const int64_t *)c->x + base, (int64_t *)c->y + base, n, s, max);
        return;
    }
    if (c->flt) {
        const double *x = (const double *)c->x + base;
        double *y = (double *)c->y + base, acc = c->op == OP_cumprod ? 1 : 0;
        for (int64_t k = 0; k < n; k++) {
            double v = x[k * s];
            acc = c->op == OP_cumsum    ? acc + v
                  : c->op == OP_cumprod ? acc * v
                  : k == 0              ? v
                                        : log_add_exp(acc, v);
            y[k * s] = acc;
        }
        return;
    }
    const int64_t *x = (const int64_t *)c->x + base;
    int64_t *y = (int64_t *)c->y + base;
    uint64_t acc = c->op == OP_cumprod ? 1 : 0;   /* wraps as PyTorch's int64 does */
    for (int64_t k = 0; k < n; k++) {
        acc = c->op == OP_cumsum ? acc + (uint64_t)x[k * s] : acc * (uint64_t)x[k * s];
        y[k * s] = (int64_t)acc;
    }
}

static void scan_range(void *ctx, int64_t begin, int64_t end)
{
    const scan_ctx *c = ctx;
    for (int64_t l = begin; l < end; l++)
        scan_line(c, (l / c->L.inner) * c->L.n * c->L.inner + l % c->L.inner);
}

static int scan(ir_op op, tj_tensor *out, const tj_tensor *x, int64_t dim)
{
    if (rt_numel(x) == 0)
        return 0;
    bool flt = ir_dtype_is_float(x->dtype);
    bool idx = op == OP_cummax_indices || op == OP_cummin_indices;
    tj_tensor *w = work_of(x, flt);
    tj_tensor *y = w ? rt_tensor_new(idx ? TJ_I64 : w->dtype, x->ndim, x->shape) : NULL;
    int rc = -1;
    if (y) {
        scan_ctx c = {lines_of(x, dim), op, flt, rt_ptr(w), rt_ptr(y)};
        int64_t grain = RT_GRAIN / (c.L.n ? c.L.n : 1);
        rt_parallel_for(c.L.outer * c.L.inner, grain > 0 ? grain : 1, scan_range, &c);
        rc = rt_convert(out, y);
    }
    tj_release(y);
    tj_release(w);
    return rc;
}

int rt_k_cumsum(RT_KERNEL_ARGS) { return scan(op, out, in[0], a->a[0].i[0]); }
int rt_k_cumprod(RT_KERNEL_ARGS) { return scan(op, out, in[0], a->a[0].i[0]); }
int rt_k_logcumsumexp(RT_KERNEL_ARGS) { return scan(op, out, in[0], a->a[0].i[0]); }
int rt_k_cummax_indices(RT_KERNEL_ARGS) { return scan(op, out, in[0], a->a[0].i[0]); }
int rt_k_cummin_indices(RT_KERNEL_ARGS) { return scan(op, out, in[0], a->a[0].i[0]); }

/* ---- argsort: a stable merge sort of each line's indices ------------------------------- */

typedef struct sort_ctx {
    lines L;
    bool flt, desc;
    const void *x;
    int64_t *y, *buf;   /* buf: 2 n indices */
} sort_ctx;

/* a before b: ascending with NaN last, or descending with NaN first;
 * equal keys keep their order (the merge is stable). */
static bool before(const sort_ctx *c, const void *line, int64_t s, int64_t a, int64_t b)
{
    if (c->flt) {
        double u = ((const double *)line)[a * s], v = ((const double *)line)[b * s];
        if (isnan(u) || isnan(v))
            return c->desc ? isnan(u) && !isnan(v) : !isnan(u) && isnan(v);
        return c->desc ? u > v : u < v;
    }
    int64_t u = ((const int64_t *)line)[a * s], v = ((const int64_t *)line)[b * s];
    return c->desc ? u > v : u < v;
}

static void merge_sort(const sort_ctx *c, const void *line, int64_t s, int64_t *ix, int64_t *tmp,
                       int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = before(c, line, s, ix[j], ix[i]) ? ix[j++] : ix[i++];
            while (i < mid)
                tmp[k++] = ix[i++];
            while (j < hi)
                tmp[k++] = ix[j++];
        }
        memcpy(ix, tmp, (size_t)n * sizeof *ix);
    }
}

/* One thread: the lines share one buffer (sorting is not a hot path yet). */
static void sort_lines(const sort_ctx *c, int64_t begin, int64_t end)
{
    int64_t n = c->L.n, s = c->L.inner, *ix = c->buf;
    size_t esz = c->flt ? sizeof(double) : sizeof(int64_t);
    for (int64_t l = begin; l < end; l++) {
        int64_t base = (l / s) * n * s + l % s;
        const char *line = (const char *)c->x + base * (int64_t)esz;
        for (int64_t k = 0; k < n; k++)
            ix[k] = k;
        merge_sort(c, line, s, ix, ix + n, n);
        for (int64_t k = 0; k < n; k++)
            c->y[base + k * s] = ix[k];
    }
}

int rt_k_argsort(RT_KERNEL_ARGS)
{
    const tj_tensor *x = in[0];
    if (rt_numel(x) == 0)
        return 0;
    bool flt = ir_dtype_is_float(x->dtype);
    sort_ctx c = {lines_of(x, a->a[0].i[0]), flt, a->a[1].i[0] != 0, NULL, rt_ptr(out), NULL};
    c.buf = malloc((size_t)(2 * c.L.n) * sizeof *c.buf);
    tj_tensor *w = c.buf ? work_of(x, flt) : NULL;
    if (!w) {
        if (!c.buf)
            rt_error("out of memory");
        free(c.buf);
        return -1;
    }
    c.x = rt_ptr(w);
    sort_lines(&c, 0, c.L.outer * c.L.inner);
    tj_release(w);
    free(c.buf);
    return 0;
}

/* ---- scatter, scatter_add and scatter_reduce: one pass over the index, in order ---------- */

/* How src's values meet x's: SC_SET overwrites (scatter), the rest are tj_reduce_op. */
#define SC_SET (-1)

static double reduce_f(int mode, double o, double v)
{
    switch (mode) {
    case TJ_REDUCE_PROD: return o * v;
    case TJ_REDUCE_AMAX: return isnan(v) || v > o ? v : o;   /* NaN propagates, as PyTorch */
    case TJ_REDUCE_AMIN: return isnan(v) || v < o ? v : o;
    case SC_SET: return v;
    default: return o + v;                                  /* sum, mean */
    }
}

static int64_t reduce_i(int mode, int64_t o, int64_t v)
{
    switch (mode) {
    case TJ_REDUCE_PROD: return (int64_t)((uint64_t)o * (uint64_t)v);
    case TJ_REDUCE_AMAX: return v > o ? v : o;
    case TJ_REDUCE_AMIN: return v < o ? v : o;
    case SC_SET: return v;
    default: return (int64_t)((uint64_t)o + (uint64_t)v);
    }
}

/* The start of an element that include_self=false leaves out: the reduction's identity. */
static double ident_f(int mode)
{
    return mode == TJ_REDUCE_PROD ? 1 : mode == TJ_REDUCE_AMAX ? -INFINITY
           : mode == TJ_REDUCE_AMIN ? INFINITY : 0;
}

static int64_t ident_i(int mode)
{
    return mode == TJ_REDUCE_PROD ? 1 : mode == TJ_REDUCE_AMAX ? INT64_MIN
           : mode == TJ_REDUCE_AMIN ? INT64_MAX : 0;
}

/* The offsets in x (and in src) of index element e along d; -1 when out of range. */
static int64_t scatter_at(int64_t e, int nd, int d, const int64_t *ishape, const int64_t *xshape,
                          const int64_t *xst, const int64_t *sst, int64_t t, int64_t *so)
{
    int64_t rem = e, xo = 0;
    *so = 0;
    if (t < 0 || t >= xshape[d]) {
        rt_error("index %lld is out of range for dim %d of size %lld", (long long)t, d,
                 (long long)xshape[d]);
        return -1;
    }
    for (int k = nd - 1; k >= 0; k--) {
        int64_t c = rem % ishape[k];
        rem /= ishape[k];
        xo += (k == d ? t : c) * xst[k];
        *so += c * sst[k];
    }
    return xo;
}

/* mode SC_SET, TJ_REDUCE_SUM (scatter_add) or any tj_reduce_op (scatter_reduce). Elements
 * reached are counted (mean divides by the count, self included when include_self; an
 * integer mean rounds down, as PyTorch); with include_self false each reached element
 * starts from the reduction's identity. */
static int scatter(tj_tensor *out, tj_tensor *const *in, int64_t dim_attr, int mode,
                   bool include_self)
{
    const tj_tensor *x = in[0], *ix = in[1], *src = in[2];
    bool flt = ir_dtype_is_float(x->dtype);
    tj_tensor *w = work_of(x, flt), *iw = w ? work_of(ix, false) : NULL;
    tj_tensor *sw = iw ? work_of(src, flt) : NULL;
    int64_t *cnt = NULL;
    int rc = -1;
    if (!sw)
        goto out;
    int nd = x->ndim ? x->ndim : 1, d = ir_norm_dim(dim_attr, x->ndim);
    int64_t xshape[TJ_MAX_DIMS], xst[TJ_MAX_DIMS], sst[TJ_MAX_DIMS], ishape[TJ_MAX_DIMS];
    for (int k = 0; k < nd; k++) {
        xshape[k] = x->ndim ? x->shape[k] : 1;
        ishape[k] = ix->ndim ? ix->shape[k] : 1;
    }
    rt_contiguous_strides(nd, xshape, xst);
    for (int k = nd - 1, s = 1; k >= 0; k--) {   /* src's own contiguous strides */
        sst[k] = s;
        s *= src->ndim ? src->shape[k] : 1;
    }
    const int64_t *ip = rt_ptr(iw);
    int64_t n = rt_numel(ix), nx = rt_numel(x), so;
    bool counted = mode == TJ_REDUCE_MEAN || (mode != SC_SET && !include_self);
    if (counted && !(cnt = calloc((size_t)(nx ? nx : 1), sizeof *cnt))) {
        rt_error("out of memory");
        goto out;
    }
    for (int64_t e = 0; e < n && counted; e++) {
        int64_t xo = scatter_at(e, nd, d, ishape, xshape, xst, sst, ip[e], &so);
        if (xo < 0)
            goto out;
        if (!include_self && !cnt[xo]) {
            if (flt)
                ((double *)rt_ptr(w))[xo] = ident_f(mode);
            else
                ((int64_t *)rt_ptr(w))[xo] = ident_i(mode);
        }
        cnt[xo]++;
    }
    for (int64_t e = 0; e < n; e++) {
        int64_t xo = scatter_at(e, nd, d, ishape, xshape, xst, sst, ip[e], &so);
        if (xo < 0)
            goto out;
        if (flt) {
            double *o = (double *)rt_ptr(w) + xo;
            *o = reduce_f(mode, *o, ((const double *)rt_ptr(sw))[so]);
        } else {
            int64_t *o = (int64_t *)rt_ptr(w) + xo;
            *o = reduce_i(mode, *o, ((const int64_t *)rt_ptr(sw))[so]);
        }
    }
    for (int64_t k = 0; k < nx && mode == TJ_REDUCE_MEAN; k++) {
        int64_t c = cnt[k] + include_self;
        if (!cnt[k] || c == 1)
            continue;
        if (flt) {
            ((double *)rt_ptr(w))[k] /= (double)c;
        } else {
            int64_t *o = (int64_t *)rt_ptr(w) + k, q = *o / c;
            *o = q - (q * c != *o && *o < 0);   /* floor */
        }
    }
    rc = rt_convert(out, w);
out:
    free(cnt);
    tj_release(sw);
    tj_release(iw);
    tj_release(w);
    return rc;
}

int rt_k_scatter(RT_KERNEL_ARGS) { return scatter(out, in, a->a[0].i[0], SC_SET, true); }
int rt_k_scatter_add(RT_KERNEL_ARGS) { return scatter(out, in, a->a[0].i[0], TJ_REDUCE_SUM, true); }
int rt_k_scatter_reduce(RT_KERNEL_ARGS)
{
    return scatter(out, in, a->a[0].i[0], (int)a->a[1].i[0], a->a[2].i[0] != 0);
}
