/* ops_conv3d.c - public entry points of ops.def's "3-D and transposed
 * convolution, 3-D pools" rows (conv3d, conv_transpose1d/2d/3d, max_pool3d,
 * avg_pool3d): they fill the attributes (a NULL list: the default) and call
 * fe_apply. */
#include "fe.h"

static void list(ir_attr *at, const int64_t *v, int n)
{
    if (v)
        ir_attr_ints(at, v, n);
}

tj_tensor *tj_conv3d(tj_tensor *x, tj_tensor *w, tj_tensor *bias, const int64_t stride[3],
                     const int64_t padding[3], const int64_t dilation[3], int64_t groups)
{
    ir_attrs at = {0};
    list(&at.a[0], stride, 3);
    list(&at.a[1], padding, 3);
    list(&at.a[2], dilation, 3);
    ir_attr_int(&at.a[3], groups);
    return fe_apply(OP_conv3d, (tj_tensor *[]){x, w, bias}, bias ? 3 : 2, &at);
}

static tj_tensor *transposed(ir_op op, int nd, tj_tensor *x, tj_tensor *w, tj_tensor *bias,
                             const int64_t *stride, const int64_t *padding,
                             const int64_t *output_padding, int64_t groups,
                             const int64_t *dilation)
{
    ir_attrs at = {0};
    list(&at.a[0], stride, nd);
    list(&at.a[1], padding, nd);
    list(&at.a[2], output_padding, nd);
    ir_attr_int(&at.a[3], groups);
    list(&at.a[4], dilation, nd);
    return fe_apply(op, (tj_tensor *[]){x, w, bias}, bias ? 3 : 2, &at);
}

tj_tensor *tj_conv_transpose1d(tj_tensor *x, tj_tensor *w, tj_tensor *bias, int64_t stride,
                               int64_t padding, int64_t output_padding, int64_t groups,
                               int64_t dilation)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], stride);
    ir_attr_int(&at.a[1], padding);
    ir_attr_int(&at.a[2], output_padding);
    ir_attr_int(&at.a[3], groups);
    ir_attr_int(&at.a[4], dilation);
    return fe_apply(OP_conv_transpose1d, (tj_tensor *[]){x, w, bias}, bias ? 3 : 2, &at);
}

tj_tensor *tj_conv_transpose2d(tj_tensor *x, tj_tensor *w, tj_tensor *bias,
                               const int64_t stride[2], const int64_t padding[2],
                               const int64_t output_padding[2], int64_t groups,
                               const int64_t dilation[2])
{
    return transposed(OP_conv_transpose2d, 2, x, w, bias, stride, padding, output_padding,
                      groups, dilation);
}

tj_tensor *tj_conv_transpose3d(tj_tensor *x, tj_tensor *w, tj_tensor *bias,
                               const int64_t stride[3], const int64_t padding[3],
                               const int64_t output_padding[3], int64_t groups,
                               const int64_t dilation[3])
{
    return transposed(OP_conv_transpose3d, 3, x, w, bias, stride, padding, output_padding,
                      groups, dilation);
}

tj_tensor *tj_max_pool3d(tj_tensor *x, const int64_t kernel[3], const int64_t stride[3],
                         const int64_t padding[3], const int64_t dilation[3], bool ceil_mode)
{
    ir_attrs at = {0};
    list(&at.a[0], kernel, 3);
    list(&at.a[1], stride, 3);
    list(&at.a[2], padding, 3);
    list(&at.a[3], dilation, 3);
    ir_attr_int(&at.a[4], ceil_mode);
    return fe_apply(OP_max_pool3d, &x, 1, &at);
}

tj_tensor *tj_avg_pool3d(tj_tensor *x, const int64_t kernel[3], const int64_t stride[3],
                         const int64_t padding[3], bool ceil_mode, bool count_include_pad)
{
    ir_attrs at = {0};
    list(&at.a[0], kernel, 3);
    list(&at.a[1], stride, 3);
    list(&at.a[2], padding, 3);
    ir_attr_int(&at.a[3], count_include_pad);
    ir_attr_int(&at.a[4], ceil_mode);
    return fe_apply(OP_avg_pool3d, &x, 1, &at);
}
