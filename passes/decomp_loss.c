/* decomp_loss.c - decompositions of the element-wise losses (DCOMP rows of
 * ops.def; rules in ir/infer_loss.c), torch's formulas, d = input - target:
 *
 *   mse_loss          d^2
 *   l1_loss           |d|
 *   smooth_l1_loss    |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta   (beta 0: |d|)
 *   huber_loss        |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta)
 *   binary_cross_entropy  -w (t max(log p, -100) + (1 - t) max(log(1 - p), -100))
 *   binary_cross_entropy_with_logits  m = max(-x, 0), l = 1 + (pw - 1) t:
 *                     w ((1 - t) x + l (log(exp(-m) + exp(-x - m)) + m))
 *   kl_div            t (log t - x), 0 where t is 0; log_target: exp(t) (t - x)
 *
 * then mean (over every element; NaN when there are none), sum or none.
 */
#include <math.h>

#include "decomp.h"

ir_node *ps_loss_reduce(ps_builder *b, ir_node *l, int64_t reduction)
{
    if (reduction == TJ_REDUCTION_MEAN)
        return b_mean(b, l, NULL, 0, false);
    if (reduction == TJ_REDUCTION_SUM)
        return b_sum(b, l, NULL, 0, false);
    return l;
}

static ir_node *diff(ps_builder *b, ir_node *const *in) { return b_sub(b, in[0], in[1]); }

ir_node *ps_decomp_mse_loss(PS_DECOMP_ARGS)
{
    (void)n;
    ir_node *d = diff(b, in);
    return ps_loss_reduce(b, b_mul(b, d, d), a->a[0].i[0]);
}

ir_node *ps_decomp_l1_loss(PS_DECOMP_ARGS)
{
    (void)n;
    return ps_loss_reduce(b, b_un(b, OP_abs, diff(b, in)), a->a[0].i[0]);
}

ir_node *ps_decomp_smooth_l1_loss(PS_DECOMP_ARGS)
{
    (void)n;
    double beta = a->a[1].f;
    ir_node *ad = b_un(b, OP_abs, diff(b, in)), *l = ad;
    if (beta > 0) {
        ir_node *quad = b_div_s(b, b_mul_s(b, b_mul(b, ad, ad), 0.5), beta);
        l = b_where(b, b_bin_s(b, OP_lt, ad, beta), quad, b_add_s(b, ad, -0.5 * beta));
    }
    return ps_loss_reduce(b, l, a->a[0].i[0]);
}

ir_node *ps_decomp_huber_loss(PS_DECOMP_ARGS)
{
    double delta = a->a[1].f;
    ir_node *d = diff(b, in);
    if (d && d->type.dtype != n->type.dtype)
        d = ps_b_cast(b, d, n->type.dtype);
    ir_node *ad = b_un(b, OP_abs, d);
    ir_node *quad = b_mul_s(b, b_mul(b, ad, ad), 0.5);
    ir_node *lin = b_mul_s(b, b_add_s(b, ad, -0.5 * delta), delta);
    return ps_loss_reduce(b, b_where(b, b_bin_s(b, OP_lt, ad, delta), quad, lin), a->a[0].i[0]);
}

ir_node *ps_decomp_binary_cross_entropy(PS_DECOMP_ARGS)
{
    ir_node *p = in[0], *t = in[1], *w = n->nin > 2 ? in[2] : NULL;
    ir_node *lp = b_bin_s(b, OP_maximum, b_log(b, p), -100);
    ir_node *lq = b_bin_s(b, OP_maximum, b_log(b, b_rsub_s(b, 1, p)), -100);
    ir_node *l = b_neg(b, b_add(b, b_mul(b, t, lp), b_mul(b, b_rsub_s(b, 1, t), lq)));
    if (w)
        l = ps_b_cast(b, b_mul(b, l, w), n->type.dtype);
    return ps_loss_reduce(b, l, a->a[0].i[0]);
}

ir_node *ps_decomp_binary_cross_entropy_with_logits(PS_DECOMP_ARGS)
{
    ir_node *x = in[0], *t = in[1];
    ir_node *w = n->nin > 2 ? in[2] : NULL, *pw = n->nin > 3 ? in[3] : NULL;
    ir_node *m = b_bin_s(b, OP_maximum, b_neg(b, x), 0);
    ir_node *lse = b_add(b, b_log(b, b_add(b, b_exp(b, b_neg(b, m)),
                                            b_exp(b, b_sub(b, b_neg(b, x), m)))), m);
    if (pw)
        lse = b_mul(b, b_add_s(b, b_mul(b, b_add_s(b, pw, -1), t), 1), lse);
    ir_node *l = b_add(b, b_mul(b, b_rsub_s(b, 1, t), x), lse);
    if (w)
        l = b_mul(b, l, w);
    if (l && l->type.dtype != n->type.dtype)
        l = ps_b_cast(b, l, n->type.dtype);
    return ps_loss_reduce(b, l, a->a[0].i[0]);
}

ir_node *ps_decomp_kl_div(PS_DECOMP_ARGS)
{
    (void)n;
    ir_node *x = in[0], *t = in[1], *l;
    if (a->a[1].i[0])
        l = b_mul(b, b_exp(b, t), b_sub(b, t, x));
    else   /* xlogy(t, t) - t x: 0 where t is 0, NaN where t is NaN */
        l = b_where_sx(b, b_bin_s(b, OP_eq, t, 0), 0,
                       b_mul(b, t, b_log(b, t)));
    if (!a->a[1].i[0])
        l = b_sub(b, l, b_mul(b, t, x));
    return ps_loss_reduce(b, l, a->a[0].i[0]);
}
