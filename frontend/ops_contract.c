/* ops_contract.c - public entry points of the contractions (matmul, linear,
 * conv2d) and the 2-D pools (with their _ex forms and max_pool2d's indices):
 * they fill the attributes and call fe_apply.
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

/* ---- pools: the plain forms are the _ex forms with torch's defaults ---------------- */

tj_max_pool2d_options tj_max_pool2d_defaults(void)
{
    return (tj_max_pool2d_options){.stride = NULL, .padding = NULL, .dilation = NULL,
                                   .ceil_mode = false};
}

tj_tensor *tj_max_pool2d_ex(tj_tensor *x, const int64_t kernel[2],
                            const tj_max_pool2d_options *opts, tj_tensor **indices)
{
    tj_max_pool2d_options d = tj_max_pool2d_defaults();
    if (!opts)
        opts = &d;
    if (indices)
        *indices = NULL;
    ir_attrs at = {0};
    set_pair(&at.a[0], kernel);
    set_pair(&at.a[1], opts->stride);
    set_pair(&at.a[2], opts->padding);
    set_pair(&at.a[3], opts->dilation);
    ir_attr_int(&at.a[4], opts->ceil_mode);
    tj_tensor *y = fe_apply(OP_max_pool2d, &x, 1, &at);
    if (!y || !indices)
        return y;
    /* the indices are a second op on x (recorded, traced and compiled like
     * any other); y stays in the scope when it fails */
    return (*indices = fe_apply(OP_max_pool2d_indices, &x, 1, &at)) ? y : NULL;
}

tj_tensor *tj_max_pool2d(tj_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], const int64_t dilation[2])
{
    tj_max_pool2d_options o = tj_max_pool2d_defaults();
    o.stride = stride;
    o.padding = padding;
    o.dilation = dilation;
    return tj_max_pool2d_ex(x, kernel, &o, NULL);
}

tj_avg_pool2d_options tj_avg_pool2d_defaults(void)
{
    return (tj_avg_pool2d_options){.stride = NULL, .padding = NULL, .ceil_mode = false,
                                   .count_include_pad = true, .divisor_override = 0};
}

tj_tensor *tj_avg_pool2d_ex(tj_tensor *x, const int64_t kernel[2],
                            const tj_avg_pool2d_options *opts)
{
    tj_avg_pool2d_options d = tj_avg_pool2d_defaults();
    if (!opts)
        opts = &d;
    ir_attrs at = {0};
    set_pair(&at.a[0], kernel);
    set_pair(&at.a[1], opts->stride);
    set_pair(&at.a[2], opts->padding);
    ir_attr_int(&at.a[3], opts->count_include_pad);
    ir_attr_int(&at.a[4], opts->ceil_mode);
    ir_attr_int(&at.a[5], opts->divisor_override);
    return fe_apply(OP_avg_pool2d, &x, 1, &at);
}

tj_tensor *tj_avg_pool2d(tj_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], bool count_include_pad)
{
    tj_avg_pool2d_options o = tj_avg_pool2d_defaults();
    o.stride = stride;
    o.padding = padding;
    o.count_include_pad = count_include_pad;
    return tj_avg_pool2d_ex(x, kernel, &o);
}
