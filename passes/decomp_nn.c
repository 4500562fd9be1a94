/* decomp_nn.c - decompositions of the network DCOMP rows (rules in
 * ir/infer_nnops.c):
 *
 *   conv1d, max_pool1d, avg_pool1d   a size-1 H dim inserted before L (and in
 *                  the weight), the 2-D op, H dropped again
 *   pixel_shuffle  [.., C r r, H, W] -> [.., C, r, r, H, W] -> permuted to
 *                  [.., C, H, r, W, r] -> [.., C, H r, W r]; unshuffle inverts it
 */
#include <string.h>

#include "../ir/infer.h"
#include "decomp.h"

static ir_node *add_h(ps_builder *b, ir_node *x)
{
    return x ? ps_b_unsqueeze(b, x, x->type.ndim - 1) : NULL;
}

static ir_node *drop_h(ps_builder *b, ir_node *y)
{
    return y ? ps_b_squeeze(b, y, (int64_t[]){y->type.ndim - 2}, 1) : NULL;
}

static void pair(ir_attr *a, int64_t h, int64_t v) { ir_attr_ints(a, (int64_t[]){h, v}, 2); }

ir_node *ps_decomp_conv1d(PS_DECOMP_ARGS)
{
    ir_attrs a2 = {0};
    pair(&a2.a[0], 1, a->a[0].i[0]);
    pair(&a2.a[1], 0, a->a[1].i[0]);
    pair(&a2.a[2], 1, a->a[2].i[0]);
    ir_attr_int(&a2.a[3], a->a[3].i[0]);
    ir_node *in2[3] = {add_h(b, in[0]), add_h(b, in[1]), n->nin > 2 ? in[2] : NULL};
    return drop_h(b, ps_b_op(b, OP_conv2d, in2, n->nin, &a2));
}

static ir_node *pool1d(ps_builder *b, ir_op op, ir_op op2, const ir_attrs *a, ir_node *x)
{
    ir_attrs a2;
    ir_pool1d_attrs(op, a, &a2);
    ir_node *x2 = add_h(b, x);
    return drop_h(b, ps_b_op(b, op2, &x2, 1, &a2));
}

ir_node *ps_decomp_max_pool1d(PS_DECOMP_ARGS)
{
    (void)n;
    return pool1d(b, OP_max_pool1d, OP_max_pool2d, a, in[0]);
}

ir_node *ps_decomp_avg_pool1d(PS_DECOMP_ARGS)
{
    (void)n;
    return pool1d(b, OP_avg_pool1d, OP_avg_pool2d, a, in[0]);
}

/* x [lead.., c, h, w] viewed as [lead.., s0, .., s4], permuted by perm5 on
 * those five dims, reshaped to the result's shape. */
static ir_node *shuffle(ps_builder *b, const ir_node *n, ir_node *x, const int64_t *five,
                        const int64_t *perm5)
{
    int lead = x->type.ndim - 3, nd = lead + 5;
    int64_t shape[TJ_MAX_DIMS + 2], perm[TJ_MAX_DIMS + 2];
    for (int d = 0; d < lead; d++) {
        if (x->type.shape[d] < 0)
            return ps_b_fail(b, "a symbolic batch dim is not supported");
        shape[d] = x->type.shape[d], perm[d] = d;
    }
    for (int k = 0; k < 5; k++)
        shape[lead + k] = five[k], perm[lead + k] = lead + perm5[k];
    ir_node *v = ps_b_permute(b, ps_b_reshape(b, x, shape, nd), perm);
    return ps_b_reshape(b, v, n->type.shape, n->type.ndim);
}

ir_node *ps_decomp_pixel_shuffle(PS_DECOMP_ARGS)
{
    const ir_type *t = &in[0]->type;
    int64_t r = a->a[0].i[0], c = t->shape[t->ndim - 3] / (r * r);
    int64_t five[5] = {c, r, r, t->shape[t->ndim - 2], t->shape[t->ndim - 1]};
    /* [c, r1, r2, h, w] -> [c, h, r1, w, r2] */
    return shuffle(b, n, in[0], five, (int64_t[]){0, 3, 1, 4, 2});
}

ir_node *ps_decomp_pixel_unshuffle(PS_DECOMP_ARGS)
{
    const ir_type *t = &in[0]->type;
    int64_t r = a->a[0].i[0];
    int64_t five[5] = {t->shape[t->ndim - 3], t->shape[t->ndim - 2] / r, r,
                       t->shape[t->ndim - 1] / r, r};
    /* [c, h, r1, w, r2] -> [c, r1, r2, h, w] */
    return shuffle(b, n, in[0], five, (int64_t[]){0, 2, 4, 1, 3});
}
