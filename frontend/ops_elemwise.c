/* ops_elemwise.c - public entry points of the elementwise DCOMP rows of
 * ops.def (activations, logit ... addcdiv; they run as their decompositions,
 * frontend/apply_decomp.c) and the aliases PyTorch has for existing ops
 * (floor_divide, true_divide, rsub, clamp_min/max, fix). */
#include <math.h>

#include "fe.h"

static tj_tensor *op1(ir_op op, tj_tensor *x, int nattr, const double *v)
{
    ir_attrs at = {0};
    for (int k = 0; k < nattr; k++)
        ir_attr_float(&at.a[k], v[k]);
    return fe_apply(op, &x, 1, &at);
}

static tj_tensor *op2(ir_op op, tj_tensor *a, tj_tensor *b)
{
    tj_tensor *in[2] = {a, b};
    return fe_apply(op, in, 2, NULL);
}

#define PLAIN1(name) tj_tensor *tj_##name(tj_tensor *x) { return op1(OP_##name, x, 0, NULL); }
#define ARG1(name) \
    tj_tensor *tj_##name(tj_tensor *x, double v) { return op1(OP_##name, x, 1, &v); }
#define PLAIN2(name) \
    tj_tensor *tj_##name(tj_tensor *a, tj_tensor *b) { return op2(OP_##name, a, b); }

ARG1(leaky_relu)
ARG1(elu)
PLAIN1(selu)
ARG1(celu)
PLAIN1(hardswish)
PLAIN1(hardsigmoid)
PLAIN1(relu6)
PLAIN1(mish)
PLAIN1(softsign)
PLAIN1(logsigmoid)
PLAIN1(tanhshrink)
ARG1(softshrink)
ARG1(hardshrink)
ARG1(logit)
PLAIN1(sinc)
PLAIN1(deg2rad)
PLAIN1(rad2deg)
PLAIN1(frac)
PLAIN1(isposinf)
PLAIN1(isneginf)
PLAIN1(ndtr)
PLAIN2(xlogy)
PLAIN2(heaviside)
PLAIN2(logaddexp)
PLAIN2(logaddexp2)
PLAIN2(float_power)
PLAIN2(prelu)

tj_tensor *tj_hardtanh(tj_tensor *x, double min_val, double max_val)
{
    return op1(OP_hardtanh, x, 2, (double[]){min_val, max_val});
}

tj_tensor *tj_threshold(tj_tensor *x, double threshold, double value)
{
    return op1(OP_threshold, x, 2, (double[]){threshold, value});
}

tj_tensor *tj_nan_to_num(tj_tensor *x, double nan, double posinf, double neginf)
{
    return op1(OP_nan_to_num, x, 3, (double[]){nan, posinf, neginf});
}

tj_tensor *tj_glu(tj_tensor *x, int dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return fe_apply(OP_glu, &x, 1, &at);
}

static tj_tensor *addc(ir_op op, tj_tensor *a, tj_tensor *t1, tj_tensor *t2, double value)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], value);
    tj_tensor *in[3] = {a, t1, t2};
    return fe_apply(op, in, 3, &at);
}

tj_tensor *tj_addcmul(tj_tensor *a, tj_tensor *t1, tj_tensor *t2, double value)
{
    return addc(OP_addcmul, a, t1, t2, value);
}

tj_tensor *tj_addcdiv(tj_tensor *a, tj_tensor *t1, tj_tensor *t2, double value)
{
    return addc(OP_addcdiv, a, t1, t2, value);
}

/* ---- aliases ------------------------------------------------------------------------ */

tj_tensor *tj_floor_divide(tj_tensor *a, tj_tensor *b) { return tj_div_ex(a, b, TJ_ROUNDING_FLOOR); }
tj_tensor *tj_floor_divide_s(tj_tensor *a, double b) { return tj_div_s_ex(a, b, TJ_ROUNDING_FLOOR); }
tj_tensor *tj_true_divide(tj_tensor *a, tj_tensor *b) { return tj_div(a, b); }
tj_tensor *tj_rsub(tj_tensor *a, tj_tensor *b, double alpha) { return tj_sub_ex(b, a, alpha); }

tj_tensor *tj_rsub_s(tj_tensor *a, double b, double alpha)
{
    return tj_sub_ex(a ? fe_wrap_scalar(b, a) : NULL, a, alpha);
}

tj_tensor *tj_clamp_min(tj_tensor *x, double min) { return tj_clamp(x, min, INFINITY); }
tj_tensor *tj_clamp_max(tj_tensor *x, double max) { return tj_clamp(x, -INFINITY, max); }
tj_tensor *tj_fix(tj_tensor *x) { return tj_trunc(x); }
