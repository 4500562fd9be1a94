/* kernels.h - internal to the runtime: prototypes of the eager kernels, one
 * per OP row of ops.def (rt_k_<name>), plus the shared pointwise entry points.
 * A missing kernel is a link error, so the table in kernels.c stays whole. */
#ifndef TJ_RT_KERNELS_H
#define TJ_RT_KERNELS_H

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
#define OP(name, kind, nmin, nmax, decomp, attrs) RT_DECL_##kind(name)
#define UNARY(name, rule, decomp, f32, f64, i)
#define BINARY(name, rule, decomp, f32, f64, i)
#define COMPOSITE(name, kind, nmin, nmax, attrs)
#include "../ir/ops.def"

/* The kernel of every COMPOSITE row: an error (the frontend runs those as
 * their decomposition, frontend/decomposed.c; a graph reaches the executor
 * decomposed). */
int rt_k_decomposed(RT_KERNEL_ARGS);

int rt_k_unary(RT_KERNEL_ARGS);
int rt_k_binary(RT_KERNEL_ARGS);

#endif
