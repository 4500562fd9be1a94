/* window2d.h - the sliding-window geometry of conv2d, max_pool2d (and its
 * indices) and avg_pool2d, decoded once from an op's attributes (ir/infer_contract.c) and
 * shared by the shape rules, the eager kernels (runtime/k_conv.c) and,
 * later, codegen, so the defaults and the output-size formula live in one
 * place.
 */
#ifndef TJ_IR_WINDOW2D_H
#define TJ_IR_WINDOW2D_H

#include "ir.h"

typedef struct ir_window2d {
    int64_t kernel[2];        /* (h, w); conv2d: the weight's last two dims */
    int64_t stride[2];        /* default: 1 for conv2d, the kernel for pools */
    int64_t padding[2];       /* default 0, on both sides */
    int64_t dilation[2];      /* default 1 (avg_pool2d: always 1) */
    int64_t groups;           /* conv2d; 1 for pools */
    bool count_include_pad;   /* avg_pool2d */
    bool ceil_mode;           /* pools: the output size rounds up (ir_window_out) */
    int64_t divisor_override; /* avg_pool2d: every window divides by it; 0: none */
} ir_window2d;

/* Decodes the attributes of op (conv2d, max_pool2d, max_pool2d_indices or
 * avg_pool2d). A list attribute may hold 0 values (the default), 1 (used
 * for both dims) or 2. conv_kernel gives conv2d's kernel (from the weight); NULL for pools.
 * Returns 0, or -1 with the reason in err for a malformed or out-of-range
 * value (non-positive stride, negative padding, ...). */
int ir_window2d_of(ir_op op, const ir_attrs *a, const int64_t *conv_kernel, ir_window2d *w,
                   char *err, size_t nerr);

/* Output size along one dim, PyTorch's pooling_output_shape: floor((in +
 * 2 pad - span) / stride) + 1, rounded up instead in ceil mode, where the last
 * window must still start inside the input or its left padding (else it is
 * dropped). May be <= 0 when no window fits, which the rules report. */
static inline int64_t ir_window_out(const ir_window2d *w, int d, int64_t in)
{
    int64_t span = w->dilation[d] * (w->kernel[d] - 1) + 1, s = w->stride[d];
    int64_t room = in + 2 * w->padding[d] - span;   /* fits: the rules check in + 2 pad */
    if (!w->ceil_mode)
        return room < 0 ? 0 : room / s + 1;
    int64_t o = room >= 0 ? room / s + 1 + (room % s != 0) : room + s - 1 >= 0 ? 1 : 0;
    /* (o - 1) * s >= in + pad, without overflow (in >= 1) */
    if (o > 1 && o - 1 > (in + w->padding[d] - 1) / s)
        o--;
    return o;
}

/* ---- int8 quantization ---- */
/* qconv2d's window (ir/ops.def): its `window` attribute, [stride h, w,
 * padding h, w, dilation h, w, groups], with the weight's kernel (w_shape
 * [O, C/g, kh, kw]). The attribute is checked by its shape rule. */
void ir_qconv_window(const ir_attrs *a, const int64_t *w_shape, ir_window2d *w);

#endif
