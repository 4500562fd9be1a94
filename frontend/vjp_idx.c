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

/* The gradient of src: what g holds where src was written, zero where src
 * reached past the index's shape. */
static tj_tensor *src_grad(const ag_ctx *c, tj_tensor *g)
{
    tj_tensor *ix = c->in[1], *src = c->in[2];
    tj_tensor *r = tj_gather(g, dim_of(c), ix);
    int64_t pads[2 * TJ_MAX_DIMS];
    bool pad = false;
    for (int k = 0; k < src->ndim && r; k++) {   /* (before, after) from the last dim */
        pads[2 * k] = 0;
        pads[2 * k + 1] = src->shape[src->ndim - 1 - k] - ix->shape[ix->ndim - 1 - k];
        pad |= pads[2 * k + 1] != 0;
    }
    return pad ? tj_pad(r, pads, src->ndim, 0) : r;
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
