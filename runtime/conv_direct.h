/* conv_direct.h - internal to the runtime: the direct f32 convolution with
 * an AVX-512 register-blocked micro-kernel (runtime/k_conv_direct.c), which
 * k_conv.c's conv2d chooses per shape. */
#ifndef TJ_RT_CONV_DIRECT_H
#define TJ_RT_CONV_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

/* One conv2d's shape: input [n, c, h, w] with element strides xs (n, c, h,
 * w); weight [o, c/groups, kh, kw] with element strides ws; output
 * [n, o, oh, ow], contiguous. */
typedef struct rt_conv_shape {
    int64_t n, c, h, w, xs[4];
    int64_t o, groups, kh, kw, ws[4];
    int64_t sh, sw, ph, pw, dh, dw, oh, ow;
} rt_conv_shape;

/* Whether the direct kernel runs this f32 conv on this CPU and is expected to
 * beat the GEMM paths (the rule measured in docs/perf.md); TJIT_CONV=direct
 * or TJIT_CONV=gemm overrides the expectation (not the CPU). */
bool rt_conv_direct_wins(const rt_conv_shape *s);

/* y = conv(x, w) + bias (bias NULL or [o] with stride bstride). Returns -1
 * with the error recorded when out of memory. */
int rt_conv_direct_f32(const rt_conv_shape *s, const float *x, const float *w,
                       const float *bias, int64_t bstride, float *y);

#endif
