/* infer_pointwise.c - shape/dtype rules of the non-row pointwise ops: where,
 * lerp, clamp, softplus, add/sub with alpha, div with a rounding mode and
 * cast (the UNARY/BINARY rows use ir_infer_unary/binary). */
#include <math.h>

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

/* lerp(a, b, w): floating-point inputs, broadcast together. Like PyTorch,
 * no promotion: b and a tensor w must have a's dtype (a wrapped scalar w,
 * from lerp_s, takes it). */
int ir_infer_lerp(IR_INFER_ARGS)
{
    static const char *const names[3] = {"start", "end", "weight"};
    for (int k = 0; k < 3; k++)
        if (!ir_dtype_is_float(in[k]->dtype))
            return ir_fail(err, nerr, "needs floating-point inputs, got %s",
                           tj_dtype_name(in[k]->dtype));
    for (int k = 1; k < 3; k++)
        if (!in[k]->weak && in[k]->dtype != in[0]->dtype)
            return ir_fail(err, nerr, "expected %s for %s (start's dtype), got %s",
                           tj_dtype_name(in[0]->dtype), names[k], tj_dtype_name(in[k]->dtype));
    if (broadcast_all(in, 3, out, err, nerr))
        return -1;
    out->dtype = in[0]->dtype;
    return 0;
}

/* clamp(x, min, max): the bounds are scalars that promote like the _s ops'
 * (ir_scalar_dtype: an integer beside an integer or bool x is a Python int,
 * anything else a Python float), so clamp(i32, 2.5, ...) is f32; a bound of
 * -inf (min) or inf (max) is absent. PyTorch's checks: a bool result is not
 * defined, and an integer bound must fit the integer result dtype. */
int ir_infer_clamp(IR_INFER_ARGS)
{
    double b[2] = {a->a[0].f, a->a[1].f};
    bool present[2] = {b[0] != -INFINITY, b[1] != INFINITY};
    ir_type bt[2];
    const ir_type *ts[3] = {in[0], NULL, NULL};
    for (int k = 0; k < 2; k++)
        if (present[k]) {
            ir_set(&bt[k], ir_scalar_dtype(b[k], in[0]->dtype), 0, NULL);
            bt[k].weak = true;
            ts[k + 1] = &bt[k];
        }
    tj_dtype dt = ir_promote(ts, 3);
    if (dt == TJ_BOOL)
        return ir_fail(err, nerr, "not defined for bool");
    int64_t lo, hi;
    ir_int_range(dt, &lo, &hi);
    for (int k = 0; k < 2 && !ir_dtype_is_float(dt); k++)
        if (present[k] && !(b[k] >= (double)lo && b[k] <= (double)hi))
            return ir_fail(err, nerr, "%s bound %.17g is out of range for %s", k ? "max" : "min",
                           b[k], tj_dtype_name(dt));
    ir_set(out, dt, in[0]->ndim, in[0]->shape);
    return 0;
}

/* softplus(x, beta, threshold): floating-point x only (PyTorch refuses
 * integer and bool input). */
int ir_infer_softplus(IR_INFER_ARGS)
{
    if (!ir_dtype_is_float(in[0]->dtype))
        return ir_fail(err, nerr, "not defined for %s (floating-point inputs only, as in PyTorch)",
                       tj_dtype_name(in[0]->dtype));
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

/* add_alpha / sub_alpha(a, b, alpha): the shapes, dtype and bool rules of
 * add / sub; alpha (no part in promotion) must suit the result dtype, as
 * PyTorch's alpha_check and its checked conversion of alpha demand. */
static int infer_alpha(ir_op plain, IR_INFER_ARGS)
{
    (void)op;
    if (ir_infer_binary(plain, in, nin, a, out, err, nerr))
        return -1;
    double al = a->a[0].f;
    tj_dtype dt = out->dtype;
    if (ir_dtype_is_float(dt)) {
        double max = dt == TJ_F32 ? 3.4028234663852886e38 : INFINITY;
        if (isfinite(al) && fabs(al) > max)
            return ir_fail(err, nerr, "alpha %.17g does not fit %s", al, tj_dtype_name(dt));
        return 0;
    }
    if (al != floor(al) || !isfinite(al))
        return ir_fail(err, nerr, "alpha %.17g must be an integer for %s results", al,
                       tj_dtype_name(dt));
    int64_t lo, hi;
    ir_int_range(dt, &lo, &hi);
    if (dt == TJ_U8)
        lo = -hi;   /* torch converts -1 to 255 */
    if (dt != TJ_BOOL && !(al >= (double)lo && al <= (double)hi))
        return ir_fail(err, nerr, "alpha %.17g does not fit %s", al, tj_dtype_name(dt));
    return 0;
}

int ir_infer_add_alpha(IR_INFER_ARGS) { return infer_alpha(OP_add, op, in, nin, a, out, err, nerr); }
int ir_infer_sub_alpha(IR_INFER_ARGS) { return infer_alpha(OP_sub, op, in, nin, a, out, err, nerr); }

/* div_mode(a, b, rounding_mode): trunc or floor in the promoted dtype, which
 * may not be bool (PyTorch has no bool kernel); none is plain div. */
int ir_infer_div_mode(IR_INFER_ARGS)
{
    int64_t m = a->a[0].i[0];
    if (m != TJ_ROUNDING_TRUNC && m != TJ_ROUNDING_FLOOR)
        return ir_fail(err, nerr, "rounding_mode %s: div_mode rounds by trunc or floor (none is div)",
                       ir_attr_word(IR_ATTR_ROUNDING, m) ? ir_attr_word(IR_ATTR_ROUNDING, m) : "?");
    if (ir_infer_binary(OP_add, in, nin, a, out, err, nerr))   /* promoted, broadcast */
        return -1;
    if (out->dtype == TJ_BOOL)
        return ir_fail(err, nerr, "rounding_mode %s is not defined for bool",
                       ir_attr_word(IR_ATTR_ROUNDING, m));
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
