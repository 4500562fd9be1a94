/* decomp_norm.c - decompositions of the normalization, norm and distance
 * DCOMP rows (rules in ir/infer_nnorm.c), torch's formulas:
 *
 *   group_norm      x viewed as [N, G, rest], layer_norm over rest, viewed
 *                   back, then w [C,1..] and b [C,1..]
 *   instance_norm   layer_norm over the spatial dims, then w and b
 *   local_response_norm  d = x^2 zero-padded along C by (size/2, (size-1)/2),
 *                   the mean of each size-channel window, x / (k + alpha d)^beta
 *   vector_norm     ord 2: sqrt(sum x^2); 1: sum |x|; inf/-inf: amax/amin |x|;
 *                   0: count of nonzeros; else sum(|x|^ord)^(1/ord)
 *   cosine_similarity  sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps), dim),
 *                   on the broadcast operands
 *   pairwise_distance  vector_norm(x1 - x2 + eps, p, last dim)
 *   nll_loss        cross_entropy's class-index branch (decompose.c)
 */
#include <math.h>

#include "decomp.h"

/* t [C] viewed as [C, 1, ...] against an [N, C, ...] x of nd dims. */
static ir_node *per_channel(ps_builder *b, ir_node *t, int nd)
{
    for (int k = 0; t && k < nd - 2; k++)
        t = ps_b_unsqueeze(b, t, t->type.ndim);
    return t;
}

static ir_node *affine(ps_builder *b, const ir_node *n, ir_node *y, ir_node *const *in)
{
    int nd = n->type.ndim;
    if (n->nin > 1 && in[1])
        y = b_mul(b, y, per_channel(b, in[1], nd));
    if (n->nin > 2 && in[2])
        y = b_add(b, y, per_channel(b, in[2], nd));
    return y;
}

static ir_node *layer_norm(ps_builder *b, ir_node *x, int64_t ndims, double eps)
{
    ir_attrs a = {0};
    ir_attr_int(&a.a[0], ndims);
    ir_attr_float(&a.a[1], eps);
    return ps_b_op(b, OP_layer_norm, &x, 1, &a);
}

ir_node *ps_decomp_group_norm(PS_DECOMP_ARGS)
{
    const ir_type *t = &in[0]->type;
    int64_t g = a->a[0].i[0], rest = 1;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0)
            return ps_b_fail(b, "group_norm with a symbolic dim is not supported");
    for (int d = 1; d < t->ndim; d++)
        rest *= t->shape[d];
    ir_node *xr = ps_b_reshape(b, in[0], (int64_t[]){t->shape[0], g, rest / g}, 3);
    ir_node *y = ps_b_reshape(b, layer_norm(b, xr, 1, a->a[1].f), t->shape, t->ndim);
    return affine(b, n, y, in);
}

ir_node *ps_decomp_instance_norm(PS_DECOMP_ARGS)
{
    return affine(b, n, layer_norm(b, in[0], in[0]->type.ndim - 2, a->a[0].f), in);
}

ir_node *ps_decomp_local_response_norm(PS_DECOMP_ARGS)
{
    (void)n;
    ir_node *x = in[0];
    int nd = x->type.ndim;
    int64_t size = a->a[0].i[0], c = x->type.shape[1];
    if (c < 0)
        return ps_b_fail(b, "local_response_norm with symbolic channels is not supported");
    ir_attrs pa = {0};
    int64_t pads[2 * TJ_MAX_DIMS] = {0};
    pads[2 * (nd - 2)] = size / 2;       /* F.pad order: the last dim first */
    pads[2 * (nd - 2) + 1] = (size - 1) / 2;
    ir_attr_ints(&pa.a[0], pads, 2 * (nd - 1));
    ir_attr_float(&pa.a[1], 0);
    ir_node *sq = b_mul(b, x, x), *p = ps_b_op(b, OP_pad, &sq, 1, &pa), *s = NULL;
    for (int64_t j = 0; j < size; j++) {
        ir_attrs sa = {0};
        ir_attr_int(&sa.a[0], 1);
        ir_attr_int(&sa.a[1], j);
        ir_attr_int(&sa.a[2], j + c);
        ir_attr_int(&sa.a[3], 1);
        ir_node *w = ps_b_op(b, OP_slice, &p, 1, &sa);
        s = s ? b_add(b, s, w) : w;
    }
    ir_node *d = b_add_s(b, b_mul_s(b, b_div_s(b, s, (double)size), a->a[1].f), a->a[3].f);
    return b_div(b, x, b_bin_s(b, OP_pow, d, a->a[2].f));
}

static ir_node *vnorm(ps_builder *b, ir_node *x, double ord, const int64_t *dims, int nd,
                      bool keep)
{
    ir_node *ax = b_un(b, OP_abs, x);
    if (ord == 2)
        return b_un(b, OP_sqrt, b_sum(b, b_mul(b, x, x), dims, nd, keep));
    if (ord == 1)
        return b_sum(b, ax, dims, nd, keep);
    if (isinf(ord))
        return ps_b_reduce(b, ord > 0 ? OP_amax : OP_amin, ax, dims, nd, keep);
    if (ord == 0)
        return b_sum(b, ps_b_cast(b, b_bin_s(b, OP_ne, x, 0), x ? x->type.dtype : TJ_F32), dims,
                     nd, keep);
    ir_node *s = b_sum(b, b_bin_s(b, OP_pow, ax, ord), dims, nd, keep);
    return b_bin_s(b, OP_pow, s, 1.0 / ord);
}

ir_node *ps_decomp_vector_norm(PS_DECOMP_ARGS)
{
    (void)n;
    return vnorm(b, in[0], a->a[0].f, a->a[1].i, a->a[1].n, a->a[2].i[0] != 0);
}

/* x1 and x2 cast and expanded to the broadcast type of dtype dt. */
static void broadcast2(ps_builder *b, ir_node *const *in, tj_dtype dt, ir_node **o1, ir_node **o2)
{
    ir_type t = {dt, 0, false, {0}};
    if (!in[0] || !in[1] || !ir_broadcast(&in[0]->type, &in[1]->type, &t.ndim, t.shape)) {
        *o1 = *o2 = NULL;
        return;
    }
    *o1 = ps_b_like(b, in[0], &t);
    *o2 = ps_b_like(b, in[1], &t);
    if (!*o1 || !*o2)
        *o1 = ps_b_fail(b, "cannot broadcast the operands here (a symbolic dim?)");
}

ir_node *ps_decomp_cosine_similarity(PS_DECOMP_ARGS)
{
    ir_node *x1, *x2;
    broadcast2(b, in, n->type.dtype, &x1, &x2);
    if (!x1)
        return NULL;
    int64_t d = ir_norm_dim(a->a[0].i[0], x1->type.ndim);
    double eps = a->a[1].f;
    ir_node *n1 = b_bin_s(b, OP_maximum, vnorm(b, x1, 2, &d, 1, true), eps);
    ir_node *n2 = b_bin_s(b, OP_maximum, vnorm(b, x2, 2, &d, 1, true), eps);
    return b_sum(b, b_mul(b, b_div(b, x1, n1), b_div(b, x2, n2)), &d, 1, false);
}

ir_node *ps_decomp_pairwise_distance(PS_DECOMP_ARGS)
{
    ir_node *diff = b_add_s(b, ps_b_cast(b, b_sub(b, in[0], in[1]), n->type.dtype), a->a[1].f);
    int64_t last = diff ? diff->type.ndim - 1 : 0;
    return vnorm(b, diff, a->a[0].f, &last, 1, a->a[2].i[0] != 0);
}
