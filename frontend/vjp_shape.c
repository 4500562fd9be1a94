/* vjp_shape.c - gradient rules of reductions, views and data movement. A
 * reduction's gradient is put back over the reduced dims (ag_unreduce); a
 * view's is the inverse view; a gather's is a sum of the gradient into the
 * places it read from (scatter_add, index_add). */
#include <string.h>

#include "autograd.h"

#define X (c->in[0])
#define Y (c->out)

/* The keepdim attribute: last in a reduction's schema. */
static bool keepdim_of(const ag_ctx *c) { return c->a->a[c->op == OP_var || c->op == OP_std ? 2 : 1].i[0] != 0; }

static tj_tensor *unreduce(const ag_ctx *c, tj_tensor *t) { return ag_unreduce(t, &c->a->a[0], keepdim_of(c), X); }

/* Elements reduced into each result element (ag_count: a 0-dim tensor of
 * x's dtype, f32 for halves, following symbolic dims), less `less`. */
static tj_tensor *reduced_count(const ag_ctx *c, int64_t less)
{
    tj_dtype dt = ir_dtype_is_half(X->dtype) ? TJ_F32 : X->dtype;
    tj_tensor *n = fe_count(X, ir_dims_of(&c->a->a[0], X->ndim), dt);
    return less ? tj_sub_s(n, (double)less) : n;
}

/* The reduced dims as a list for tj_sum. */
static int reduced_dims(const ag_ctx *c, int *dims)
{
    uint32_t mask = ir_dims_of(&c->a->a[0], X->ndim);
    int n = 0;
    for (int d = 0; d < X->ndim; d++)
        if (mask >> d & 1)
            dims[n++] = d;
    return n;
}

AG_VJP(sum) { AG_SET(0, unreduce(c, g)); return 0; }
AG_VJP(mean) { AG_SET(0, tj_div(unreduce(c, g), reduced_count(c, 0))); return 0; }

/* The product of x's elements before each along d (1 for the first): the
 * cumprod shifted by one. */
static tj_tensor *cumprod_before(tj_tensor *x, int d)
{
    int64_t pads[2 * TJ_MAX_DIMS] = {0};
    int np = x->ndim - d;   /* (before, after) pairs from the last dim down to d */
    pads[2 * (np - 1)] = 1;
    return tj_slice(tj_pad(tj_cumprod(x, d), pads, np, 1.0), d, 0, -1, 1);
}

/* The product over dims[0..nd) of x's elements other than each one, with no
 * division (zeros anywhere) and from ops that differentiate again (a
 * gradient of the gradient): along one dim, the products before and after;
 * over more, that times the others of the products along the first dim. */
static tj_tensor *prod_others(tj_tensor *x, const int *dims, int nd)
{
    int d = dims[0];
    tj_tensor *after = tj_flip(cumprod_before(tj_flip(x, &d, 1), d), &d, 1);
    tj_tensor *r = tj_mul(cumprod_before(x, d), after);
    return nd > 1 ? tj_mul(r, prod_others(tj_prod(x, dims, 1, true), dims + 1, nd - 1)) : r;
}

/* d prod / d x_i = the product of the others (PyTorch's rule where x has zeros). */
AG_VJP(prod)
{
    int dims[TJ_MAX_DIMS], nd = reduced_dims(c, dims);
    tj_tensor *gu = unreduce(c, g);
    AG_SET(0, nd ? tj_mul(gu, prod_others(X, dims, nd)) : gu);
    return 0;
}

/* Ties share the gradient evenly (PyTorch's amax/amin rule). */
static int extreme_vjp(const ag_ctx *c, tj_tensor *g, tj_tensor **gx)
{
    int dims[TJ_MAX_DIMS], nd = reduced_dims(c, dims);
    tj_tensor *hit = tj_cast(tj_eq(X, unreduce(c, Y)), X->dtype);
    tj_tensor *n = tj_sum(hit, dims, nd, true);
    AG_SET(0, tj_div(tj_mul(unreduce(c, g), hit), n));
    return 0;
}

AG_VJP(amax) { return extreme_vjp(c, g, gx); }
AG_VJP(amin) { return extreme_vjp(c, g, gx); }
AG_VJP(logsumexp) { AG_SET(0, tj_mul(unreduce(c, g), tj_exp(tj_sub(X, unreduce(c, Y))))); return 0; }

/* var: 2 (x - mean) / (N - correction); std: (x - mean) / ((N - correction) y) */
/* x - mean over the reduced dims, shifted by a corner x0 of each reduced
 * block first: where x is constant along them it is exactly 0 (the mean of
 * equal values, rounded, is not always that value, and std's gradient
 * divides the difference by a std as small; PyTorch gives 0 there). */
static tj_tensor *centered(const ag_ctx *c)
{
    int dims[TJ_MAX_DIMS], nd = reduced_dims(c, dims);
    tj_tensor *x0 = X;
    for (int k = 0; k < nd; k++)
        if (X->shape[dims[k]] == 0)
            return tj_sub(X, tj_mean(X, dims, nd, true));   /* no corner */
    for (int k = 0; k < nd && x0; k++)
        x0 = tj_narrow(x0, dims[k], 0, 1);
    tj_tensor *s = tj_sub(X, x0);
    return tj_sub(s, tj_mean(s, dims, nd, true));
}

AG_VJP(var)
{
    tj_tensor *dof = reduced_count(c, c->a->a[1].i[0]);
    AG_SET(0, tj_mul(unreduce(c, g), tj_mul(centered(c), tj_div(ag_const(X, 2.0), dof))));
    return 0;
}

/* 0 where the deviation is 0 (PyTorch's std_backward: x constant along the
 * dims, so std stays 0 near it; x - mean, rounded, over 0 was inf or NaN) */
AG_VJP(std)
{
    tj_tensor *dof = reduced_count(c, c->a->a[1].i[0]), *y = unreduce(c, Y);
    AG_SET(0, ag_masked(tj_div(tj_mul(unreduce(c, g), centered(c)), tj_mul(y, dof)), tj_ne_s(y, 0)));
    return 0;
}

/* ---- views ------------------------------------------------------------------------------ */

static tj_tensor *as_input(const ag_ctx *c, tj_tensor *g) { return ag_reshape_to(g, X); }

AG_VJP(reshape) { AG_SET(0, as_input(c, g)); return 0; }
AG_VJP(squeeze) { AG_SET(0, as_input(c, g)); return 0; }
AG_VJP(unsqueeze) { AG_SET(0, as_input(c, g)); return 0; }
AG_VJP(expand) { AG_SET(0, g); return 0; }   /* the tape sums over the expanded dims */
AG_VJP(copy) { AG_SET(0, g); return 0; }

AG_VJP(permute)
{
    int inv[TJ_MAX_DIMS];
    for (int k = 0; k < X->ndim; k++)
        inv[ir_norm_dim(c->a->a[0].i[k], X->ndim)] = k;
    AG_SET(0, tj_permute(g, inv));
    return 0;
}

AG_VJP(slice)
{
    int d = ir_norm_dim(c->a->a[0].i[0], X->ndim);
    AG_SET(0, ag_unslice_of(g, X, d, c->a->a[1].i[0], c->a->a[3].i[0]));
    return 0;
}

AG_VJP(flip)
{
    int dims[TJ_MAX_DIMS];
    for (int k = 0; k < c->a->a[0].n; k++)
        dims[k] = (int)c->a->a[0].i[k];
    AG_SET(0, tj_flip(g, dims, c->a->a[0].n));
    return 0;
}

/* ---- data movement ---------------------------------------------------------------------- */

/* Input k's part of g: [pre, pre + len) along d, each bound counted from
 * the front or from the back (-post), whichever is a number: a symbolic
 * length before or after it then needs no size (lens: the example's, sym:
 * symbolic ones). */
AG_VJP(cat)
{
    int d = ir_norm_dim(c->a->a[0].i[0], Y->ndim), n = c->nin;
    int64_t lens[FE_MAX_INPUTS], total = 0;
    bool sym[FE_MAX_INPUTS];
    for (int k = 0; k < n; k++) {
        const tj_tensor *x = c->in[k];
        ir_type t;
        fe_trace_type(x, &t);
        /* PyTorch's cat skips 1-dim empty inputs of any other shape. */
        lens[k] = x->ndim == Y->ndim ? x->shape[d] : 0;
        sym[k] = x->ndim == Y->ndim && IR_IS_SYM(t.shape[d]);
        total += lens[k];
    }
    int64_t pre = 0;
    for (int k = 0; k < n; k++) {
        bool pre_sym = false, post_sym = false;
        for (int j = 0; j < n; j++)
            *(j < k ? &pre_sym : &post_sym) |= j != k && sym[j];
        int64_t post = total - pre - lens[k];
        bool from_back = pre_sym && !sym[k] && !post_sym;   /* else pre (a size where pre_sym) */
        int64_t start = !from_back ? pre : post + lens[k] ? -(post + lens[k]) : INT64_MAX;
        int64_t end = !post_sym ? (post ? -post : INT64_MAX) : pre + lens[k];
        AG_SET(k, tj_slice(g, d, start, end, 1));
        pre += lens[k];
    }
    return 0;
}

/* pads: (before, after) pairs from the last dim; negative values cropped. */
AG_VJP(pad)
{
    const ir_attr *p = &c->a->a[0];
    tj_tensor *r = g;
    for (int k = 0; k < p->n / 2 && r; k++) {
        int d = X->ndim - 1 - k;
        int64_t before = p->i[2 * k], after = p->i[2 * k + 1];
        int64_t s = before > 0 ? before : 0;   /* [s, -after): no size needed */
        r = tj_slice(r, d, s, after > 0 ? -after : INT64_MAX, 1);
        r = ag_pad_dim(r, d, before < 0 ? -before : 0, after < 0 ? -after : 0);
    }
    AG_SET(0, r);
    return 0;
}

/* index_select: y = x indexed along dim by index [N]; g [.., N, ..] goes
 * back to the rows index names, summed where it names one twice. */
AG_VJP(index_select)
{
    int d = ir_norm_dim(c->a->a[0].i[0], X->ndim);
    AG_SET(0, tj_index_add(ag_zeros_of(X, g->dtype), d, c->in[1], g, 1.0));
    return 0;
}

/* gather: y[..i..] = x[..index[..i..]..] along dim. Each g element goes to
 * the x element its index names (scatter_add: summed where several name
 * one; zeros where x is larger than index in the other dims). */
AG_VJP(gather)
{
    int d = ir_norm_dim(c->a->a[0].i[0], X->ndim);
    AG_SET(0, tj_scatter_add(ag_zeros_of(X, g->dtype), d, c->in[1], g));
    return 0;
}

/* as_strided (remaining prims, issue 11) */

/* The positions off + sum_d i_d stride_d of a strided geometry, flat in the
 * row-major order of size (i64 [numel]). */
static tj_tensor *positions(int n, const int64_t *size, const int64_t *stride, int64_t off)
{
    int64_t flat = -1;
    tj_tensor *p = tj_scalar(TJ_I64, (double)off);
    for (int d = 0; d < n; d++) {
        int64_t shape[TJ_MAX_DIMS];
        for (int k = 0; k < n; k++)
            shape[k] = k == d ? size[d] : 1;
        tj_tensor *r = tj_mul_s(tj_arange(TJ_I64, 0, (double)size[d], 1), (double)stride[d]);
        p = tj_add(p, tj_reshape(r, n, shape));
    }
    return tj_reshape(tj_expand(p, n, size), 1, &flat);
}

/* 1 + the last position of a geometry with elements. */
static int64_t extent(int n, const int64_t *size, const int64_t *stride, int64_t off)
{
    for (int d = 0; d < n; d++)
        off += (size[d] - 1) * stride[d];
    return off + 1;
}

/* Whether two elements of the geometry may share a position: PyTorch's
 * test, dims by increasing stride, each stride past the extent before it. */
static bool may_overlap(int n, const int64_t *size, const int64_t *stride)
{
    int order[TJ_MAX_DIMS], m = 0;
    for (int d = 0; d < n; d++)
        if (size[d] > 1)
            order[m++] = d;
    for (int i = 1; i < m; i++)   /* insertion sort by stride */
        for (int j = i; j > 0 && stride[order[j]] < stride[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int64_t reach = 0;   /* the last position the dims so far reach */
    for (int i = 0; i < m; i++) {
        int d = order[i];
        if (stride[d] <= reach)
            return true;
        reach += (size[d] - 1) * stride[d];
    }
    return false;
}

/* PyTorch's as_strided_backward. Positions count x's storage when
 * tj_as_strided recorded the node eagerly (attribute slot 3 set: ops_strided.c),
 * else x's own elements in row-major order (a graph's, or an eager call of the
 * row itself): g is added at the positions y read (index_add: overlapping
 * windows sum), and x's gradient is that sum at each of its positions, divided
 * by how many of x's elements share it (an expanded x); positions x does not
 * cover get none. */
AG_VJP(as_strided)
{
    const ir_attr *sz = &c->a->a[0], *st = &c->a->a[1];
    bool storage = c->a->a[3].i[0] != 0 && X->storage;
    int64_t xs[TJ_MAX_DIMS], xoff = storage ? X->offset : 0, yoff = c->a->a[2].i[0];
    int64_t nx = tj_numel(X), ny = tj_numel(g), flat = -1;
    if (storage)
        memcpy(xs, X->strides, sizeof xs);
    else
        rt_contiguous_strides(X->ndim, X->shape, xs);
    if (nx == 0 || ny == 0) {
        AG_SET(0, tj_zeros(g->dtype, X->ndim, X->shape));
        return 0;
    }
    int64_t lo = xoff < yoff ? xoff : yoff, ex = extent(X->ndim, X->shape, xs, xoff) - lo,
            ey = extent(sz->n, sz->i, st->i, yoff) - lo, e = ex > ey ? ex : ey;
    tj_tensor *buf = tj_index_add(tj_zeros(g->dtype, 1, &e), 0, positions(sz->n, sz->i, st->i, yoff - lo),
                                  tj_reshape(g, 1, &flat), 1);
    if (!storage || (lo == xoff && e == nx && rt_is_contiguous(X))) {   /* x's: 0 .. nx - 1 */
        AG_SET(0, tj_reshape(e == nx ? buf : tj_narrow(buf, 0, 0, nx), X->ndim, X->shape));
        return 0;
    }
    tj_tensor *px = positions(X->ndim, X->shape, xs, xoff - lo);
    tj_tensor *dx = tj_index_select(buf, 0, px);
    if (may_overlap(X->ndim, X->shape, xs)) {
        tj_tensor *cnt = tj_index_add(tj_zeros(g->dtype, 1, &e), 0, px, tj_ones(g->dtype, 1, &nx), 1);
        dx = tj_div(dx, tj_index_select(cnt, 0, px));
    }
    AG_SET(0, tj_reshape(dx, X->ndim, X->shape));
    return 0;
}
