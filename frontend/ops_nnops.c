/* ops_nnops.c - public entry points of the network rows of ops.def's "nn and
 * linalg" section (1-D convolution and pools, pixel shuffles): they fill the
 * attributes and call fe_apply. */
#include "fe.h"

tj_tensor *tj_conv1d(tj_tensor *x, tj_tensor *w, tj_tensor *bias, int64_t stride,
                     int64_t padding, int64_t dilation, int64_t groups)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], stride);
    ir_attr_int(&at.a[1], padding);
    ir_attr_int(&at.a[2], dilation);
    ir_attr_int(&at.a[3], groups);
    return fe_apply(OP_conv1d, (tj_tensor *[]){x, w, bias}, bias ? 3 : 2, &at);
}

tj_tensor *tj_max_pool1d(tj_tensor *x, int64_t kernel, int64_t stride, int64_t padding,
                         int64_t dilation, bool ceil_mode)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], kernel);
    ir_attr_int(&at.a[1], stride);
    ir_attr_int(&at.a[2], padding);
    ir_attr_int(&at.a[3], dilation);
    ir_attr_int(&at.a[4], ceil_mode);
    return fe_apply(OP_max_pool1d, &x, 1, &at);
}

tj_tensor *tj_avg_pool1d(tj_tensor *x, int64_t kernel, int64_t stride, int64_t padding,
                         bool count_include_pad, bool ceil_mode)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], kernel);
    ir_attr_int(&at.a[1], stride);
    ir_attr_int(&at.a[2], padding);
    ir_attr_int(&at.a[3], count_include_pad);
    ir_attr_int(&at.a[4], ceil_mode);
    return fe_apply(OP_avg_pool1d, &x, 1, &at);
}

tj_tensor *tj_pixel_shuffle(tj_tensor *x, int64_t upscale_factor)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], upscale_factor);
    return fe_apply(OP_pixel_shuffle, &x, 1, &at);
}

tj_tensor *tj_pixel_unshuffle(tj_tensor *x, int64_t downscale_factor)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], downscale_factor);
    return fe_apply(OP_pixel_unshuffle, &x, 1, &at);
}
