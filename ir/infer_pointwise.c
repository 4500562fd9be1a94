/* infer_pointwise.c - shape/dtype rules of the non-row pointwise ops: where,
 * lerp, clamp and cast (the UNARY/BINARY rows use ir_infer_unary/binary). */
#include "infer.h"

/* Broadcasts every present input together into out's shape. */
static int broadcast_all(const ir_type *const *in, int nin, ir_type *out, char *err, size_t nerr)
{
    ir_type acc = *in[0];
    for (int k = 1; k < nin; k++) {
        ir_type next = acc;
        if (!ir_broadcast(&acc, in[k], &next.ndim, next.shape))
            return ir_fail(err, nerr, "shapes cannot be broadcast together");
        acc = next;
    }
    out->ndim = acc.ndim;
    for (int d = 0; d < acc.ndim; d++)
        out->shape[d] = acc.shape[d];
    return 0;
}

/* where(cond, a, b): cond of any dtype (nonzero is true), a and b promoted. */
int ir_infer_where(IR_INFER_ARGS)
{
    if (broadcast_all(in, 3, out, err, nerr))
        return -1;
    out->dtype = ir_promote(in + 1, 2);
    return 0;
}

/* lerp(a, b, w): floating-point inputs only, all three broadcast and promoted. */
int ir_infer_lerp(IR_INFER_ARGS)
{
    for (int k = 0; k < 3; k++)
        if (!ir_dtype_is_float(in[k]->dtype))
            return ir_fail(err, nerr, "needs floating-point inputs, got %s",
                           tj_dtype_name(in[k]->dtype));
    tj_dtype dt = ir_promote(in, 3);
    if (broadcast_all(in, 3, out, err, nerr))
        return -1;
    out->dtype = dt;
    return 0;
}

/* clamp(x, min, max): numeric x, result of x's dtype and shape. */
int ir_infer_clamp(IR_INFER_ARGS)
{
    if (ir_dtype_category(in[0]->dtype) == IR_CAT_BOOL)
        return ir_fail(err, nerr, "not defined for bool");
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

/* cast(x, dtype): any supported dtype to any supported dtype. */
int ir_infer_cast(IR_INFER_ARGS)
{
    int64_t dt = a->a[0].i[0];
    if (dt < 0 || dt >= TJ_NUM_DTYPES)
        return ir_fail(err, nerr, "cannot cast to unknown dtype %lld", (long long)dt);
    if (!ir_dtype_supported((tj_dtype)dt))
        return ir_fail(err, nerr, "cannot cast to %s (unsupported dtype)",
                       tj_dtype_name((tj_dtype)dt));
    ir_set(out, (tj_dtype)dt, in[0]->ndim, in[0]->shape);
    return 0;
}
