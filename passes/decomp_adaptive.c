/* decomp_adaptive.c - decompositions of the adaptive pools, cdist and
 * matrix_norm (rules in ir/infer_adaptive.c):
 *
 *   adaptive pools  per pooled dim, one slice per output index i over
 *                   [floor(i n / o), ceil((i + 1) n / o)), reduced (mean or
 *                   amax, keepdim) and concatenated; the 2-D pools do H then W
 *                   (a mean of equal-length row means is the window's mean)
 *   cdist           vector_norm(x1[..., :, None, :] - x2[..., None, :, :], p, -1)
 *   matrix_norm     vector_norm(x, 2, dims), the Frobenius norm
 */
#include "decomp.h"

static ir_node *adapt_dim(ps_builder *b, ir_node *x, int d, int64_t o, ir_op red)
{
    if (!x)
        return NULL;
    int64_t n = x->type.shape[d];
    ir_node *parts[4096];
    if (o > 4096)
        return ps_b_fail(b, "output size %lld is more than 4096", (long long)o);
    if (o == 0) {   /* an empty result: the first 0 entries */
        ir_attrs sa = {0};
        ir_attr_int(&sa.a[0], d);
        ir_attr_int(&sa.a[3], 1);
        return ps_b_op(b, OP_slice, &x, 1, &sa);
    }
    for (int64_t i = 0; i < o; i++) {
        int64_t s = i * n / o, e = ((i + 1) * n + o - 1) / o;
        ir_attrs sa = {0};
        ir_attr_int(&sa.a[0], d);
        ir_attr_int(&sa.a[1], s);
        ir_attr_int(&sa.a[2], e);
        ir_attr_int(&sa.a[3], 1);
        int64_t dd = d;
        parts[i] = ps_b_reduce(b, red, ps_b_op(b, OP_slice, &x, 1, &sa), &dd, 1, true);
    }
    if (o == 1)
        return parts[0];
    ir_attrs ca = {0};
    ir_attr_int(&ca.a[0], d);
    return ps_b_op(b, OP_cat, parts, (int)o, &ca);
}

static ir_node *adaptive(ps_builder *b, const ir_attrs *a, ir_node *x, int k, ir_op red)
{
    int nd = x->type.ndim;
    for (int j = 0; j < k; j++)
        x = adapt_dim(b, x, nd - k + j, a->a[0].i[j], red);
    return x;
}

ir_node *ps_decomp_adaptive_avg_pool1d(PS_DECOMP_ARGS)
{
    (void)n;
    return adaptive(b, a, in[0], 1, OP_mean);
}

ir_node *ps_decomp_adaptive_avg_pool2d(PS_DECOMP_ARGS)
{
    (void)n;
    return adaptive(b, a, in[0], 2, OP_mean);
}

ir_node *ps_decomp_adaptive_max_pool2d(PS_DECOMP_ARGS)
{
    (void)n;
    return adaptive(b, a, in[0], 2, OP_amax);
}

static ir_node *vector_norm(ps_builder *b, ir_node *x, double ord, const int64_t *dims, int nd,
                            bool keep)
{
    ir_attrs va = {0};
    ir_attr_float(&va.a[0], ord);
    ir_attr_ints(&va.a[1], dims, nd);
    ir_attr_int(&va.a[2], keep);
    return ps_b_op(b, OP_vector_norm, &x, 1, &va);
}

ir_node *ps_decomp_cdist(PS_DECOMP_ARGS)
{
    (void)n;
    ir_node *x1 = in[0], *x2 = in[1];
    ir_node *d = b_sub(b, ps_b_unsqueeze(b, x1, x1->type.ndim - 1),
                       ps_b_unsqueeze(b, x2, x2->type.ndim - 2));
    int64_t last = d ? d->type.ndim - 1 : 0;
    return vector_norm(b, d, a->a[0].f, &last, 1, false);
}

ir_node *ps_decomp_matrix_norm(PS_DECOMP_ARGS)
{
    (void)n;
    int nd = in[0]->type.ndim;
    int64_t dims[2] = {nd - 2, nd - 1};
    const int64_t *dp = a->a[0].n ? a->a[0].i : dims;
    return vector_norm(b, in[0], 2, dp, 2, a->a[1].i[0] != 0);
}
