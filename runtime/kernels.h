/* kernels.h - internal to the runtime: prototypes of the eager kernels, one
 * per OP row of ops.def (rt_k_<name>), plus the shared pointwise entry points.
 * A missing kernel is a link error, so the table in kernels.c stays whole. */
#ifndef TJ_RT_KERNELS_H
#define TJ_RT_KERNELS_H

#include <math.h>

#include "rt.h"

#define RT_KERNEL_ARGS \
    ir_op op, tj_tensor *out, tj_tensor *const *in, int nin, const ir_attrs *a

#define RT_DECL_UNARY(name)
#define RT_DECL_BINARY(name)
#define RT_DECL_VIEW(name)
#define RT_DECL_K(name) int rt_k_##name(RT_KERNEL_ARGS);
#define RT_DECL_TERNARY RT_DECL_K
#define RT_DECL_POINTWISE RT_DECL_K
#define RT_DECL_REDUCE RT_DECL_K
#define RT_DECL_MOVE RT_DECL_K
#define RT_DECL_CONTRACT RT_DECL_K
#define RT_DECL_NN RT_DECL_K
#define RT_DECL_CREATE RT_DECL_K
#define RT_DECL_RANDOM RT_DECL_K
#define RT_DD_PRIM(kind, name) RT_DECL_##kind(name)
#define RT_DD_COMP(kind, name) RT_DECL_##kind(name)
#define RT_DD_DCOMP(kind, name)
#define OP(name, kind, nmin, nmax, decomp, attrs) RT_DD_##decomp(kind, name)
#define UNARY(name, rule, decomp, f32, f64, i)
#define BINARY(name, rule, decomp, f32, f64, i)
#include "../ir/ops.def"

int rt_k_unary(RT_KERNEL_ARGS);
int rt_k_binary(RT_KERNEL_ARGS);

/* ---- f16 and bf16 (k_half.c) ---- */
#define RT_HALF_MAX_INPUTS 16
/* Whether an input or the result type ty is f16 or bf16. */
bool rt_half_involved(tj_tensor *const *in, int nin, const ir_type *ty);
/* op with f16/bf16 operands: its own narrow kernel, else in f32, rounded once. */
int rt_half_run(RT_KERNEL_ARGS);
/* op's f32 kernel on widened copies of the f16/bf16 inputs, rounded once. */
int rt_half_via_f32(RT_KERNEL_ARGS);
/* matmul with an f16/bf16 operand (k_matmul.c): the hook of native kernels. */
int rt_k_matmul_half(RT_KERNEL_ARGS);
int rt_k_linear_half(RT_KERNEL_ARGS);
int rt_k_conv2d_half(RT_KERNEL_ARGS);   /* bf16 on the direct kernels (k_conv.c) */

/* ---- int8 quantization (k_quant.c, k_qgemm.c) ---- */
/* c per-channel scales (float tensor s) and zero points (integer tensor z)
 * as f32/i32 arrays (malloc'd, freed by the caller even on failure), each
 * checked: a scale positive and finite, a zero point in [lo, hi]. 0, or -1
 * with an error naming op `name` and the channel. */
int rt_q_channels(const char *name, const tj_tensor *s, const tj_tensor *z, int64_t c, int64_t lo,
                  int64_t hi, float **scale, int32_t **zp);
/* quantize_per_tensor's formula: clamp(rne(v / scale) + zp, lo, hi); NaN gives zp. */
static inline int64_t rt_q_round(float v, float scale, int32_t zp, int64_t lo, int64_t hi)
{
    float r = nearbyintf(v / scale);
    double t = (r == r ? (double)r : 0.0) + zp;
    return t < (double)lo ? lo : t > (double)hi ? hi : (int64_t)t;
}

#endif
