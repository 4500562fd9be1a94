/* ops_loss.c - public entry points of the element-wise losses (mse, l1,
 * smooth_l1, huber, binary cross-entropy on probabilities and on logits,
 * kl_div): they fill the attributes and call fe_apply. */
#include "fe.h"

static tj_tensor *loss(ir_op op, tj_tensor *const *in, int nin, tj_reduction red, double f,
                       bool has_f)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], red);
    if (has_f)
        ir_attr_float(&at.a[1], f);
    return fe_apply(op, in, nin, &at);
}

tj_tensor *tj_mse_loss(tj_tensor *input, tj_tensor *target, tj_reduction reduction)
{
    return loss(OP_mse_loss, (tj_tensor *[]){input, target}, 2, reduction, 0, false);
}

tj_tensor *tj_l1_loss(tj_tensor *input, tj_tensor *target, tj_reduction reduction)
{
    return loss(OP_l1_loss, (tj_tensor *[]){input, target}, 2, reduction, 0, false);
}

tj_tensor *tj_smooth_l1_loss(tj_tensor *input, tj_tensor *target, tj_reduction reduction,
                             double beta)
{
    return loss(OP_smooth_l1_loss, (tj_tensor *[]){input, target}, 2, reduction, beta, true);
}

tj_tensor *tj_huber_loss(tj_tensor *input, tj_tensor *target, tj_reduction reduction,
                         double delta)
{
    return loss(OP_huber_loss, (tj_tensor *[]){input, target}, 2, reduction, delta, true);
}

tj_tensor *tj_binary_cross_entropy(tj_tensor *p, tj_tensor *target, tj_tensor *weight,
                                   tj_reduction reduction)
{
    return loss(OP_binary_cross_entropy, (tj_tensor *[]){p, target, weight}, weight ? 3 : 2,
                reduction, 0, false);
}

tj_tensor *tj_binary_cross_entropy_with_logits(tj_tensor *logits, tj_tensor *target,
                                               tj_tensor *weight, tj_tensor *pos_weight,
                                               tj_reduction reduction)
{
    tj_tensor *in[4] = {logits, target, weight, pos_weight};
    return loss(OP_binary_cross_entropy_with_logits, in, pos_weight ? 4 : weight ? 3 : 2,
                reduction, 0, false);
}

tj_tensor *tj_kl_div(tj_tensor *input, tj_tensor *target, tj_reduction reduction,
                     bool log_target)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], reduction);
    ir_attr_int(&at.a[1], log_target);
    return fe_apply(OP_kl_div, (tj_tensor *[]){input, target}, 2, &at);
}
