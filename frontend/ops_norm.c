/* ops_norm.c - public entry points of the normalizations (softmax,
 * log_softmax, layer_norm, rms_norm, batch_norm): fill the attributes and
 * call fe_apply. */
#include "fe.h"

tj_tensor *tj_softmax(tj_tensor *x, int dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return fe_apply(OP_softmax, &x, 1, &at);
}

tj_tensor *tj_log_softmax(tj_tensor *x, int dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return fe_apply(OP_log_softmax, &x, 1, &at);
}

tj_tensor *tj_layer_norm(tj_tensor *x, int ndims, tj_tensor *w, tj_tensor *b, double eps)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], ndims);
    ir_attr_float(&at.a[1], eps);
    tj_tensor *in[3] = {x, w, b};
    return fe_apply(OP_layer_norm, in, 3, &at);
}

tj_tensor *tj_rms_norm(tj_tensor *x, int ndims, tj_tensor *w, double eps)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], ndims);
    ir_attr_float(&at.a[1], eps);
    tj_tensor *in[2] = {x, w};
    return fe_apply(OP_rms_norm, in, 2, &at);
}

tj_tensor *tj_batch_norm(tj_tensor *x, tj_tensor *mean, tj_tensor *var, tj_tensor *w,
                         tj_tensor *b, double eps)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], eps);
    tj_tensor *in[5] = {x, mean, var, w, b};
    return fe_apply(OP_batch_norm, in, 5, &at);
}
