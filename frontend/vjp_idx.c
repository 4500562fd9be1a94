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

/* d y_j / d x_i = y_j / x_i for j >= i: exact where x has no zeros (a zero
 * gives inf or NaN, where PyTorch's rule takes the products around it). */
AG_VJP(cumprod)
{
    int d = X->ndim ? dim_of(c) : 0;
    AG_SET(0, X->ndim ? tj_div(rev_cumsum(tj_mul(g, Y), d), X) : g);
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
