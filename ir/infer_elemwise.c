/* infer_elemwise.c - shape/dtype rules of the elementwise DCOMP rows of
 * ops.def (leaky_relu ... addcdiv): PyTorch 1.13's dtypes, and its refusals
 * (most activations take floating-point input only). Each result has the
 * broadcast shape of the inputs. */
#include <math.h>

#include "infer.h"

static int not_for(const char *what, tj_dtype dt, char *err, size_t nerr)
{
    return ir_fail(err, nerr, "not defined for %s (%s, as in PyTorch)", tj_dtype_name(dt), what);
}

/* x of a floating-point dtype, kept. */
static int float_only(const ir_type *x, ir_type *out, char *err, size_t nerr)
{
    if (!ir_dtype_is_float(x->dtype))
        return not_for("floating-point inputs only", x->dtype, err, nerr);
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

/* Float math: integers and bool compute in f32 (the FLOAT rule); no_bool
 * refuses bool (an abs or a sub of the decomposition would). */
static int to_float(const ir_type *x, bool no_bool, ir_type *out, char *err, size_t nerr)
{
    if (no_bool && x->dtype == TJ_BOOL)
        return not_for("numbers only", x->dtype, err, nerr);
    ir_set(out, ir_dtype_is_float(x->dtype) ? x->dtype : TJ_F32, x->ndim, x->shape);
    return 0;
}

/* The inputs broadcast together into out's shape, their promoted dtype in
 * out->dtype. */
static int broadcast(const ir_type *const *in, int nin, ir_type *out, char *err, size_t nerr)
{
    ir_type acc = *in[0];
    for (int k = 1; k < nin; k++) {
        ir_type next = acc;
        if (!ir_broadcast(&acc, in[k], &next.ndim, next.shape))
            return ir_fail(err, nerr, "shapes cannot be broadcast together");
        acc = next;
    }
    ir_set(out, ir_promote(in, nin), acc.ndim, acc.shape);
    return 0;
}

#define FLOAT_ONLY(name) \
    int ir_infer_##name(IR_INFER_ARGS) { return float_only(in[0], out, err, nerr); }
FLOAT_ONLY(leaky_relu)
FLOAT_ONLY(elu)
FLOAT_ONLY(selu)
FLOAT_ONLY(celu)
FLOAT_ONLY(hardswish)
FLOAT_ONLY(hardsigmoid)
FLOAT_ONLY(mish)
FLOAT_ONLY(logsigmoid)
FLOAT_ONLY(softshrink)
FLOAT_ONLY(hardshrink)
FLOAT_ONLY(frac)
#undef FLOAT_ONLY

int ir_infer_softsign(IR_INFER_ARGS) { return to_float(in[0], true, out, err, nerr); }
int ir_infer_tanhshrink(IR_INFER_ARGS) { return to_float(in[0], true, out, err, nerr); }
int ir_infer_logit(IR_INFER_ARGS) { return to_float(in[0], false, out, err, nerr); }
int ir_infer_sinc(IR_INFER_ARGS) { return to_float(in[0], false, out, err, nerr); }
int ir_infer_deg2rad(IR_INFER_ARGS) { return to_float(in[0], false, out, err, nerr); }
int ir_infer_rad2deg(IR_INFER_ARGS) { return to_float(in[0], false, out, err, nerr); }
int ir_infer_ndtr(IR_INFER_ARGS) { return to_float(in[0], false, out, err, nerr); }

/* hardtanh(x, min_val, max_val) and relu6 (0, 6): clamp's rule. */
static int clamp_rule(const ir_type *const *in, double lo, double hi, ir_type *out, char *err,
                      size_t nerr)
{
    if (in[0]->dtype == TJ_BOOL)
        return not_for("numbers only", TJ_BOOL, err, nerr);
    ir_attrs b = {0};
    ir_attr_float(&b.a[0], lo);
    ir_attr_float(&b.a[1], hi);
    return ir_infer_clamp(OP_clamp, in, 1, &b, out, err, nerr);
}

int ir_infer_hardtanh(IR_INFER_ARGS) { return clamp_rule(in, a->a[0].f, a->a[1].f, out, err, nerr); }
int ir_infer_relu6(IR_INFER_ARGS) { return clamp_rule(in, 0, 6, out, err, nerr); }

/* threshold(x, threshold, value): numbers keep their dtype (bool refused);
 * an integer x truncates both, which must fit its dtype (PyTorch's checked
 * conversion of its Scalars). */
int ir_infer_threshold(IR_INFER_ARGS)
{
    tj_dtype dt = in[0]->dtype;
    if (dt == TJ_BOOL)
        return not_for("numbers only", TJ_BOOL, err, nerr);
    int64_t lo, hi;
    for (int k = 0; k < 2 && !ir_dtype_is_float(dt); k++) {
        double v = trunc(a->a[k].f);
        ir_int_range(dt, &lo, &hi);
        if (!(v >= (double)lo && v <= (double)hi))
            return ir_fail(err, nerr, "%s %.17g is out of range for %s", k ? "value" : "threshold",
                           a->a[k].f, tj_dtype_name(dt));
    }
    ir_set(out, dt, in[0]->ndim, in[0]->shape);
    return 0;
}

/* isposinf, isneginf: any dtype -> bool (integers are never infinite). */
static int pred(const ir_type *x, ir_type *out)
{
    ir_set(out, TJ_BOOL, x->ndim, x->shape);
    return 0;
}
int ir_infer_isposinf(IR_INFER_ARGS) { return pred(in[0], out); }
int ir_infer_isneginf(IR_INFER_ARGS) { return pred(in[0], out); }

/* nan_to_num: any dtype, kept (only floats change). */
int ir_infer_nan_to_num(IR_INFER_ARGS)
{
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

/* glu(x, dim): halves of an even dim; floating-point x. */
int ir_infer_glu(IR_INFER_ARGS)
{
    if (float_only(in[0], out, err, nerr))
        return -1;
    if (in[0]->ndim == 0)
        return ir_fail(err, nerr, "glu does not take a 0-dim tensor");
    int d = ir_norm_dim(a->a[0].i[0], in[0]->ndim);
    if (d < 0)
        return ir_fail(err, nerr, "dim %lld out of range for %d dims", (long long)a->a[0].i[0],
                       in[0]->ndim);
    int64_t n = in[0]->shape[d];
    if (n < 0)
        return ir_fail(err, nerr, "dim %d must have a static size", d);
    if (n % 2)
        return ir_fail(err, nerr, "dim %d of size %lld cannot be halved", d, (long long)n);
    out->shape[d] = n / 2;
    return 0;
}

/* prelu(x, weight): floating-point, one dtype; weight of one element or of
 * x's channel count (dim 1; a 0-dim or 1-dim x has one channel). */
int ir_infer_prelu(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *w = in[1];
    if (float_only(x, out, err, nerr))
        return -1;
    if (w->dtype != x->dtype)
        return ir_fail(err, nerr, "weight must have the input's dtype %s, got %s",
                       tj_dtype_name(x->dtype), tj_dtype_name(w->dtype));
    if (w->ndim > 1)
        return ir_fail(err, nerr, "weight must have at most 1 dim, got %d", w->ndim);
    int64_t nw = w->ndim ? w->shape[0] : 1, ch = x->ndim >= 2 ? x->shape[1] : 1;
    if (nw != 1 && nw != ch)
        return ir_fail(err, nerr, "weight has %lld elements; the input has %lld channels",
                       (long long)nw, (long long)ch);
    return 0;
}

/* ---- binary and ternary --------------------------------------------------- */

/* xlogy(x, y): promoted, then float (integers give f32). */
int ir_infer_xlogy(IR_INFER_ARGS)
{
    if (broadcast(in, 2, out, err, nerr))
        return -1;
    if (!ir_dtype_is_float(out->dtype))
        out->dtype = TJ_F32;
    return 0;
}

/* logaddexp, logaddexp2: promoted, floating-point only. */
static int float_promoted(const ir_type *const *in, int nin, ir_type *out, char *err, size_t nerr)
{
    if (broadcast(in, nin, out, err, nerr))
        return -1;
    if (!ir_dtype_is_float(out->dtype))
        return not_for("floating-point inputs only", out->dtype, err, nerr);
    return 0;
}
int ir_infer_logaddexp(IR_INFER_ARGS) { return float_promoted(in, 2, out, err, nerr); }
int ir_infer_logaddexp2(IR_INFER_ARGS) { return float_promoted(in, 2, out, err, nerr); }

/* heaviside(x, values): one dtype (PyTorch refuses two), any. */
int ir_infer_heaviside(IR_INFER_ARGS)
{
    if (in[0]->dtype != in[1]->dtype)
        return ir_fail(err, nerr, "x and values must have one dtype, got %s and %s",
                       tj_dtype_name(in[0]->dtype), tj_dtype_name(in[1]->dtype));
    return broadcast(in, 2, out, err, nerr);
}

/* float_power(a, b): f64 always. */
int ir_infer_float_power(IR_INFER_ARGS)
{
    if (broadcast(in, 2, out, err, nerr))
        return -1;
    out->dtype = TJ_F64;
    return 0;
}

/* addcmul(a, t1, t2, value): promoted, not bool; an integer result
 * truncates value (PyTorch's Scalar conversion), which must be finite. addcdiv: t1 and t2 floating-point (PyTorch refuses an
 * integer division), promoted. */
int ir_infer_addcmul(IR_INFER_ARGS)
{
    if (broadcast(in, 3, out, err, nerr))
        return -1;
    if (out->dtype == TJ_BOOL)
        return not_for("numbers only", TJ_BOOL, err, nerr);
    double v = a->a[0].f;
    if (!ir_dtype_is_float(out->dtype) && !(isfinite(v) && fabs(v) < 9.2e18))
        return ir_fail(err, nerr, "value %.17g does not fit %s", v, tj_dtype_name(out->dtype));
    return 0;
}

int ir_infer_addcdiv(IR_INFER_ARGS)
{
    if (!ir_dtype_is_float(ir_promote(in + 1, 2)))
        return ir_fail(err, nerr, "integer division of tensor1 by tensor2 is not supported "
                                  "(as in PyTorch: use floating-point tensors)");
    return broadcast(in, 3, out, err, nerr);
}
