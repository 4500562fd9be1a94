/* kernels.c - the eager kernel table, one entry per row of ops.def. */
#include "kernels.h"

#define RT_K_UNARY(name) rt_k_unary
#define RT_K_BINARY(name) rt_k_binary
#define RT_K_VIEW(name) NULL
#define RT_K_OTHER(name) rt_k_##name
#define RT_K_TERNARY RT_K_OTHER
#define RT_K_POINTWISE RT_K_OTHER
#define RT_K_REDUCE RT_K_OTHER
#define RT_K_MOVE RT_K_OTHER
#define RT_K_CONTRACT RT_K_OTHER
#define RT_K_NN RT_K_OTHER
#define RT_K_CREATE RT_K_OTHER
#define RT_K_RANDOM RT_K_OTHER

const rt_kernel_fn rt_kernels[IR_NUM_OPS] = {
#define OP(name, kind, nmin, nmax, decomp, attrs) [OP_##name] = RT_K_##kind(name),
#define COMPOSITE(name, kind, nmin, nmax, attrs) [OP_##name] = rt_k_decomposed,
#include "../ir/ops.def"
};

int rt_k_decomposed(RT_KERNEL_ARGS)
{
    rt_error("%s has no kernel: it runs as its decomposition (decompose the graph first)",
             ir_ops[op].name);
    return -1;
}

int rt_k_scalar(RT_KERNEL_ARGS)
{
    double v = a->a[0].f;
    switch (out->dtype) {
    case TJ_I64: *(int64_t *)rt_ptr(out) = (int64_t)v; break;
    case TJ_BOOL: *(uint8_t *)rt_ptr(out) = v != 0; break;
    default: *(double *)rt_ptr(out) = v; break;
    }
    return 0;
}
