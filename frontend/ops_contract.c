/* ops_contract.c - public entry points of the contractions (matmul, linear,
 * conv2d) and the 2-D pools: they fill the attributes and call fe_apply.
 * A NULL stride, padding or dilation leaves the attribute empty, which the
 * rule (ir_window2d_of) reads as the default: stride 1 for conv2d and the
 * kernel for pools, padding 0, dilation 1. */
#include "fe.h"

tj_tensor *tj_matmul(tj_tensor *a, tj_tensor *b)
{
    tj_tensor *in[2] = {a, b};
    return fe_apply(OP_matmul, in, 2, NULL);
}

tj_tensor *tj_linear(tj_tensor *x, tj_tensor *w, tj_tensor *b)
{
    tj_tensor *in[3] = {x, w, b};
    return fe_apply(OP_linear, in, b ? 3 : 2, NULL);
}

/* Sets a 2-value list attribute, or leaves it empty (default) for NULL. */
static void set_pair(ir_attr *at, const int64_t *v)
{
    if (v)
        ir_attr_ints(at, v, 2);
}

tj_tensor *tj_conv2d(tj_tensor *x, tj_tensor *w, tj_tensor *b, const int64_t stride[2],
                     const int64_t padding[2], const int64_t dilation[2], int64_t groups)
{
    ir_attrs at = {0};
    set_pair(&at.a[0], stride);
    set_pair(&at.a[1], padding);
    set_pair(&at.a[2], dilation);
    ir_attr_int(&at.a[3], groups);
    tj_tensor *in[3] = {x, w, b};
    return fe_apply(OP_conv2d, in, b ? 3 : 2, &at);
}

tj_tensor *tj_max_pool2d(tj_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], const int64_t dilation[2])
{
    ir_attrs at = {0};
    set_pair(&at.a[0], kernel);
    set_pair(&at.a[1], stride);
    set_pair(&at.a[2], padding);
    set_pair(&at.a[3], dilation);
    return fe_apply(OP_max_pool2d, &x, 1, &at);
}

tj_tensor *tj_avg_pool2d(tj_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], bool count_include_pad)
{
    ir_attrs at = {0};
    set_pair(&at.a[0], kernel);
    set_pair(&at.a[1], stride);
    set_pair(&at.a[2], padding);
    ir_attr_int(&at.a[3], count_include_pad);
    return fe_apply(OP_avg_pool2d, &x, 1, &at);
}
