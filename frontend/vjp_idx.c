/* vjp_idx.c - gradient rules of the scan, sort and scatter prims of
 * ops.def's "indexing, scans and shapes" section (its DCOMP rows need none:
 * their decompositions' prims carry the gradient). */
#include "autograd.h"

#define X (c->in[0])
#define Y (c->out)

AG_NONDIFF(cummax_indices, "integer result")
AG_NONDIFF(cummin_indices, "integer result")
AG_NONDIFF(argsort, "integer result")

static int dim_of(const ag_ctx *c) { return (int)c->a->a[0].i[0]; }

/* The sum over positions j >= i along dim: a reversed cumsum. */
static tj_tensor *rev_cumsum(tj_tensor *g, int dim)
{
    return tj_flip(tj_cumsum(tj_flip(g, &dim, 1), dim), &dim, 1);
}

AG_VJP(cumsum)
{
    int d = X->ndim ? dim_of(c) : 0;
    AG_SET(0, X->ndim ? rev_cumsum(g, d) : g);
    return 0;
}

/* d y_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Before the first zero
 * of the row that is y_j / x_i; at the first zero z it is the cumprod of x
 * with x_z set to 1 (the products around it, as PyTorch's rule); after it,
 * every product holds x_z = 0. */
AG_VJP(cumprod)
{
    if (!X->ndim) {
        AG_SET(0, g);
        return 0;
    }
    int d = dim_of(c);
    tj_tensor *zero = tj_eq_s(X, 0);
    tj_tensor *seen = tj_cumsum(tj_cast(zero, TJ_I64), d);          /* zeros up to and at i */
    tj_tensor *before = tj_eq_s(seen, 0), *first = tj_logical_and(zero, tj_eq_s(seen, 1));
    tj_tensor *gpre = tj_div(rev_cumsum(tj_mul(g, Y), d), tj_where_xs(before, X, 1));
    tj_tensor *gz = rev_cumsum(tj_mul(g, tj_cumprod(tj_where_sx(first, 1, X), d)), d);
    AG_SET(0, tj_where(before, gpre, tj_where_xs(first, gz, 0)));
    return 0;
}

/* d y_j / d x_i = exp(x_i - y_j) for j >= i. */
AG_VJP(logcumsumexp)
{
    int d = X->ndim ? dim_of(c) : 0;
    AG_SET(0, X->ndim ? tj_mul(rev_cumsum(tj_mul(g, tj_exp(tj_neg(Y))), d), tj_exp(X)) : g);
    return 0;
}

/* r (index's shape) padded with zeros to src's shape: src past the index's
 * shape was never read. */
static tj_tensor *pad_to_src(const ag_ctx *c, tj_tensor *r)
{
    tj_tensor *ix = c->in[1], *src = c->in[2];
    int64_t pads[2 * TJ_MAX_DIMS];
    bool pad = false;
    for (int k = 0; k < src->ndim && r; k++) {   /* (before, after) from the last dim */
        pads[2 * k] = 0;
        pads[2 * k + 1] = src->shape[src->ndim - 1 - k] - ix->shape[ix->ndim - 1 - k];
        pad |= pads[2 * k + 1] != 0;
    }
    return pad ? tj_pad(r, pads, src->ndim, 0) : r;
}

/* The gradient of src: what g holds where src was written, zero where src
 * reached past the index's shape. */
static tj_tensor *src_grad(const ag_ctx *c, tj_tensor *g)
{
    return pad_to_src(c, tj_gather(g, dim_of(c), c->in[1]));
}

AG_VJP(scatter_add)
{
    AG_SET(0, g);
    AG_SET(2, src_grad(c, g));
    return 0;
}

/* The places src overwrote get no gradient from x. */
AG_VJP(scatter)
{
    AG_SET(0, tj_scatter(g, dim_of(c), c->in[1], tj_zeros_like(c->in[2])));
    AG_SET(2, src_grad(c, g));
    return 0;
}

/* ---- scatter_reduce (issue 11): PyTorch's scatter_reduce_backward ---------------------- */

/* src cut to index's shape (what the scatter read). */
static tj_tensor *src_read(const ag_ctx *c)
{
    tj_tensor *ix = c->in[1], *s = c->in[2];
    for (int k = 0; k < ix->ndim && s; k++)
        if (s->shape[k] != ix->shape[k])
            s = tj_narrow(s, k, 0, ix->shape[k]);
    return s;
}

/* prod, as PyTorch's scatter_reduce_backward, dividing by no zero: x's
 * gradient is g r / x1, x1 being x with its zeros set to 1 and r the result
 * recomputed from x1 (at a zero of x: g times the product of the others).
 * src's is gather(g y) / src where src is not 0; where it is the only zero
 * reaching its position, gather(g r') with r' the result recomputed with that
 * entry set to 1; where several zeros reach it, 0 (gather(g y) with y = 0). */
static void prod_grads(const ag_ctx *c, tj_tensor *g, tj_tensor **gs, tj_tensor **gsrc)
{
    int d = dim_of(c);
    bool self = c->a->a[2].i[0] != 0;
    tj_tensor *ix = c->in[1], *s = src_read(c);
    tj_tensor *x1 = tj_where_sx(tj_eq_s(X, 0), 1, X);
    *gs = tj_div(tj_mul(g, tj_scatter_reduce(x1, d, ix, s, TJ_REDUCE_PROD, self)), x1);
    tj_tensor *sz = tj_eq_s(s, 0);
    tj_tensor *nz = tj_gather(tj_scatter_add(tj_zeros_like(X), d, ix, tj_cast(sz, X->dtype)), d, ix);
    tj_tensor *single = tj_logical_and(sz, tj_eq_s(nz, 1));
    if (tj_grad_enabled() && !fe_trace_current() && nz) {
        /* recorded (TJ_CREATE_GRAPH): where two zeros meet, gradient 0 holds
         * here but its derivative in either zero is not 0, which no mask
         * gives; refused, as PyTorch refuses that double backward */
        tj_tensor *many = tj_any(tj_gt_s(tj_where_xs(sz, nz, 0), 1), NULL, 0, false);
        if (many && tj_item(many) != 0) {
            rt_error("scatter_reduce: a gradient of the gradient (TJ_CREATE_GRAPH) of reduce prod where "
                     "several zeros of src reach one place is not supported");
            *gs = *gsrc = NULL;
            return;
        }
    }
    tj_tensor *without = tj_scatter_reduce(X, d, ix, tj_where_sx(single, 1, s), TJ_REDUCE_PROD, self);
    *gsrc = tj_where(single, tj_gather(tj_mul(g, without), d, ix),
                     tj_div(tj_gather(tj_mul(g, Y), d, ix), tj_where_sx(sz, 1, s)));
}

/* sum: g and gather(g); prod: prod_grads; mean: both divided by the count (x
 * counted with include_self, at least 1); amax/amin: g shared evenly among
 * the values equal to the result. include_self false: x gets nothing where
 * index reached. */
AG_VJP(scatter_reduce)
{
    int d = dim_of(c), mode = (int)c->a->a[1].i[0];
    bool self = c->a->a[2].i[0] != 0;
    tj_tensor *ix = c->in[1], *gs = NULL, *gsrc = NULL;
    if (mode == TJ_REDUCE_SUM) {
        gs = g;
        gsrc = tj_gather(g, d, ix);
    } else if (mode == TJ_REDUCE_PROD) {
        prod_grads(c, g, &gs, &gsrc);
    } else if (mode == TJ_REDUCE_MEAN) {
        tj_tensor *ones = tj_ones_like(tj_gather(g, d, ix));
        tj_tensor *cnt = tj_scatter_add(self ? tj_ones_like(g) : tj_zeros_like(g), d, ix, ones);
        gs = tj_div(g, tj_clamp_min(cnt, 1));
        gsrc = tj_gather(gs, d, ix);
    } else {
        tj_tensor *self_is = tj_cast(tj_eq(X, Y), g->dtype);
        tj_tensor *src_is = tj_cast(tj_eq(src_read(c), tj_gather(Y, d, ix)), g->dtype);
        tj_tensor *share = tj_div(g, tj_scatter_add(self_is, d, ix, src_is));
        gs = tj_mul(self_is, share);
        gsrc = tj_mul(src_is, tj_gather(share, d, ix));
    }
    if (!self && gs)
        gs = tj_scatter(gs, d, ix, tj_zeros_like(tj_gather(gs, d, ix)));
    AG_SET(0, gs);
    AG_SET(2, gsrc ? pad_to_src(c, gsrc) : NULL);
    return 0;
}
