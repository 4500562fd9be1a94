/* k_half.c - f16 and bf16 in eager execution: every op on them computes in
 * f32 and rounds its result once to the narrow type.
 *
 *   half inputs --widen (exact)--> f32 copies (broadcast dims stay stride 0)
 *   the op's f32 kernel (rt_kernels[op]) into an f32 result
 *   f32 result --round to nearest even (ir/half.h)--> the narrow result
 *
 * This is what PyTorch does on the CPU (its Vectorized<Half/BFloat16> ops
 * convert to float, compute, convert back; reductions accumulate in float).
 * The pointwise UNARY and BINARY rows take no detour either: their kernels
 * widen each block of the operands and round each block of the result.
 * Conversions (cast, copy) need no detour: rt_convert handles the narrow
 * types itself. An op may have a kernel of its own for the narrow types in
 * half_kernels[] below, tried first: the place where native bf16/f16 GEMMs
 * hook in (rt_k_matmul_half, rt_k_linear_half: runtime/k_matmul.c), and
 * bf16 convolution on the direct kernels (rt_k_conv2d_half: k_conv.c).
 */
#include <string.h>

#include "../ir/half.h"
#include "iter.h"
#include "kernels.h"

/* Kernels that take f16/bf16 operands as they are. */
static const rt_kernel_fn half_kernels[IR_NUM_OPS] = {
    [OP_cast] = rt_k_cast,
    [OP_copy] = rt_k_copy,
    [OP_matmul] = rt_k_matmul_half,
    [OP_linear] = rt_k_linear_half,
    [OP_conv2d] = rt_k_conv2d_half,
};

bool rt_half_involved(tj_tensor *const *in, int nin, const ir_type *ty)
{
    if (ir_dtype_is_half(ty->dtype))
        return true;
    for (int k = 0; k < nin; k++)
        if (in[k] && ir_dtype_is_half(in[k]->dtype))
            return true;
    return false;
}

tj_tensor *rt_half_widen(const tj_tensor *x)
{
    int64_t shape[TJ_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        shape[d] = x->strides[d] == 0 ? 1 : x->shape[d];   /* broadcast dims stay views */
    tj_tensor *w = rt_tensor_new(TJ_F32, x->ndim, shape);
    if (!w)
        return NULL;
    tj_tensor src = *x;   /* x with its broadcast dims cut to 1, for the conversion */
    memcpy(src.shape, shape, sizeof shape);
    if (rt_convert(w, &src)) {
        tj_release(w);
        return NULL;
    }
    for (int d = 0; d < x->ndim; d++) {
        if (x->strides[d] == 0)
            w->strides[d] = 0;
        w->shape[d] = x->shape[d];
    }
    return w;
}

/* rand's values lie in [0, 1): those that would round up to 1 in the narrow
 * type become the largest value below 1 there. */
static void rand_below_one(tj_tensor *r, tj_dtype dt)
{
    float top = dt == TJ_F16 ? 1.0f - 0x1p-11f : 1.0f - 0x1p-8f, *p = rt_ptr(r);
    int64_t n = rt_numel(r);
    for (int64_t k = 0; k < n; k++)
        p[k] = p[k] > top ? top : p[k];
}

int rt_half_via_f32(ir_op op, tj_tensor *out, tj_tensor *const *in, int nin, const ir_attrs *a)
{
    tj_tensor *w[RT_HALF_MAX_INPUTS] = {0}, *r = out;
    int rc = -1;
    if (nin > RT_HALF_MAX_INPUTS) {
        rt_error("too many inputs for an f16/bf16 op");
        return -1;
    }
    for (int k = 0; k < nin; k++) {
        w[k] = in[k];
        if (in[k] && ir_dtype_is_half(in[k]->dtype) && !(w[k] = rt_half_widen(in[k])))
            goto done;
    }
    if (ir_dtype_is_half(out->dtype) && !(r = rt_tensor_new(TJ_F32, out->ndim, out->shape)))
        goto done;
    rc = rt_kernels[op](op, r, w, nin, a);
    if (rc == 0 && r != out) {
        if (op == OP_rand)
            rand_below_one(r, out->dtype);
        rc = rt_convert(out, r);
    }
done:
    for (int k = 0; k < nin; k++)
        if (w[k] != in[k])
            tj_release(w[k]);
    if (r != out)
        tj_release(r);
    return rc;
}

int rt_half_run(ir_op op, tj_tensor *out, tj_tensor *const *in, int nin, const ir_attrs *a)
{
    /* The UNARY and BINARY rows widen and round block by block themselves
     * (k_pointwise.c): the same values as the detour, without its copies. */
    if (rt_kernels[op] == rt_k_unary || rt_kernels[op] == rt_k_binary)
        return rt_kernels[op](op, out, in, nin, a);
    if (half_kernels[op])
        return half_kernels[op](op, out, in, nin, a);
    return rt_half_via_f32(op, out, in, nin, a);
}

int rt_run_kernel(ir_op op, tj_tensor *out, tj_tensor *const *in, int nin, const ir_attrs *a)
{
    ir_type ty;
    rt_type_of(out, &ty);
    if (rt_half_involved(in, nin, &ty))
        return rt_half_run(op, out, in, nin, a);
    return rt_kernels[op](op, out, in, nin, a);
}
