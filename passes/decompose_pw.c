/* decompose_pw.c - the decompositions of the elementwise DCOMP rows of
 * ir/ops.def (activations, logit ... addcdiv): each is the whole definition
 * of its op, eager (frontend/apply_decomp.c runs it), compiled (the fused
 * prims) and differentiated (autograd on the prims). Each follows PyTorch
 * 1.13's CPU kernel: the same formula in the same order and dtype, so the
 * results agree to a few ulp; constants are weak scalars, so an f32 input
 * computes in f32 as PyTorch's kernels convert their Scalar arguments. The
 * rows' dtype rules are in ir/infer_elemwise.c.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "decomp.h"

static ir_node *b_gt_s(ps_builder *b, ir_node *x, double v) { return b_bin_s(b, OP_gt, x, v); }
static ir_node *b_max_s(ps_builder *b, ir_node *x, double v) { return b_bin_s(b, OP_maximum, x, v); }
static ir_node *b_min_s(ps_builder *b, ir_node *x, double v) { return b_bin_s(b, OP_minimum, x, v); }

/* x and y in dtype dt. */
static void cast2(ps_builder *b, ir_node *const *in, tj_dtype dt, ir_node **x, ir_node **y)
{
    *x = ps_b_cast(b, in[0], dt);
    *y = ps_b_cast(b, in[1], dt);
}

/* ---- activations ------------------------------------------------------------------- */

/* x > 0 ? x : x slope */
ir_node *ps_decomp_leaky_relu(PS_DECOMP_ARGS)
{
    return b_where(b, b_gt_s(b, in[0], 0), in[0], b_mul_s(b, in[0], a->a[0].f));
}

/* x > 0 ? x pos : expm1(x in) neg, torch's elu kernel with its coefficients */
static ir_node *elu_form(ps_builder *b, ir_node *x, double pos, double neg, double in_scale)
{
    ir_node *e = b_un(b, OP_expm1, in_scale == 1 ? x : b_mul_s(b, x, in_scale));
    return b_where(b, b_gt_s(b, x, 0), pos == 1 ? x : b_mul_s(b, x, pos), b_mul_s(b, e, neg));
}

ir_node *ps_decomp_elu(PS_DECOMP_ARGS) { return elu_form(b, in[0], 1, a->a[0].f, 1); }

ir_node *ps_decomp_selu(PS_DECOMP_ARGS)
{
    const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
    return elu_form(b, in[0], scale, alpha * scale, 1);
}

/* celu = elu with input scale 1/alpha */
ir_node *ps_decomp_celu(PS_DECOMP_ARGS)
{
    return elu_form(b, in[0], 1, a->a[0].f, 1.0 / a->a[0].f);
}

/* min(max(x + 3, 0), 6) */
static ir_node *relu6_of_x3(ps_builder *b, ir_node *x)
{
    return b_min_s(b, b_max_s(b, b_add_s(b, x, 3), 0), 6);
}

/* x min(max(x + 3, 0), 6) / 6 */
ir_node *ps_decomp_hardswish(PS_DECOMP_ARGS)
{
    return b_div_s(b, b_mul(b, in[0], relu6_of_x3(b, in[0])), 6);
}

/* min(max(x + 3, 0), 6) / 6 */
ir_node *ps_decomp_hardsigmoid(PS_DECOMP_ARGS) { return b_div_s(b, relu6_of_x3(b, in[0]), 6); }

static ir_node *clamp_op(ps_builder *b, ir_node *x, double lo, double hi)
{
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_float(&at.a[0], lo);
    ir_attr_float(&at.a[1], hi);
    return ps_b_op(b, OP_clamp, &x, 1, &at);
}

ir_node *ps_decomp_hardtanh(PS_DECOMP_ARGS) { return clamp_op(b, in[0], a->a[0].f, a->a[1].f); }
ir_node *ps_decomp_relu6(PS_DECOMP_ARGS) { return clamp_op(b, in[0], 0, 6); }

/* x tanh(log1p(exp(x))) (torch's mish: softplus without a threshold) */
ir_node *ps_decomp_mish(PS_DECOMP_ARGS)
{
    ir_node *sp = b_un(b, OP_log1p, b_exp(b, in[0]));
    return b_mul(b, in[0], b_un(b, OP_tanh, sp));
}

/* x / (1 + |x|) */
ir_node *ps_decomp_softsign(PS_DECOMP_ARGS)
{
    return b_div(b, in[0], b_add_s(b, b_un(b, OP_abs, in[0]), 1));
}

/* min(x, 0) - log1p(exp(-|x|)) */
ir_node *ps_decomp_logsigmoid(PS_DECOMP_ARGS)
{
    ir_node *t = b_un(b, OP_log1p, b_exp(b, b_neg(b, b_un(b, OP_abs, in[0]))));
    return b_sub(b, b_min_s(b, in[0], 0), t);
}

/* x - tanh(x) */
ir_node *ps_decomp_tanhshrink(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    return b_sub(b, x, b_un(b, OP_tanh, x));
}

/* x > l ? x - l : x < -l ? x + l : 0 (NaN gives 0, as PyTorch) */
ir_node *ps_decomp_softshrink(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    double l = a->a[0].f;
    ir_node *inner = b_where_xs(b, b_bin_s(b, OP_lt, x, -l), b_add_s(b, x, l), 0);
    return b_where(b, b_gt_s(b, x, l), b_add_s(b, x, -l), inner);
}

/* -l <= x <= l ? 0 : x */
ir_node *ps_decomp_hardshrink(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    double l = a->a[0].f;
    ir_node *in_band = b_bin(b, OP_logical_and, b_bin_s(b, OP_ge, x, -l), b_bin_s(b, OP_le, x, l));
    return b_where_sx(b, in_band, 0, x);
}

/* x <= threshold ? value : x, threshold and value converted to x's dtype
 * (an integer x truncates them, as PyTorch's Scalar conversion) */
ir_node *ps_decomp_threshold(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    double th = a->a[0].f, v = a->a[1].f;
    if (ir_dtype_is_float(x->type.dtype))
        return b_where_sx(b, b_bin_s(b, OP_le, x, th), v, x);
    ir_node *cond = b_bin(b, OP_le, x, ps_b_scalar(b, trunc(th), TJ_I64));
    return b_where(b, cond, ps_b_scalar(b, trunc(v), TJ_I64), x);
}

static ir_node *slice_op(ps_builder *b, ir_node *x, int d, int64_t start, int64_t end)
{
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_int(&at.a[0], d);
    ir_attr_int(&at.a[1], start);
    ir_attr_int(&at.a[2], end);
    ir_attr_int(&at.a[3], 1);
    return ps_b_op(b, OP_slice, &x, 1, &at);
}

/* first half * sigmoid(second half) along dim */
ir_node *ps_decomp_glu(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    int d = ir_norm_dim(a->a[0].i[0], x->type.ndim);
    int64_t h = x->type.shape[d] / 2;
    ir_node *s = b_un(b, OP_sigmoid, slice_op(b, x, d, h, 2 * h));
    return b_mul(b, slice_op(b, x, d, 0, h), s);
}

/* x > 0 ? x : w x, w along the channel dim (1) */
ir_node *ps_decomp_prelu(PS_DECOMP_ARGS)
{
    ir_node *x = in[0], *w = in[1];
    int nd = x->type.ndim;
    int64_t shape[TJ_MAX_DIMS];
    int64_t nw = w->type.ndim ? w->type.shape[0] : 1;
    int k = 0;
    if (nw != 1 || nd < 2)
        shape[k++] = nw;
    for (int d = 2; d < nd && nw != 1; d++)
        shape[k++] = 1;
    ir_node *ws = ps_b_reshape(b, w, shape, nw == 1 ? 0 : k);
    return b_where(b, b_gt_s(b, x, 0), x, b_mul(b, ws, x));
}

/* ---- other elementwise --------------------------------------------------------------- */

/* log(x / (1 - x)), x clamped to [eps, 1 - eps] first when eps >= 0 */
ir_node *ps_decomp_logit(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    double eps = a->a[0].f;
    if (eps >= 0)
        x = b_min_s(b, b_max_s(b, x, eps), 1 - eps);
    return b_log(b, b_div(b, x, b_rsub_s(b, 1, x)));
}

/* x == 0 ? 1 : sin(pi x) / (pi x) */
ir_node *ps_decomp_sinc(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    ir_node *px = b_mul_s(b, x, M_PI);
    return b_where_sx(b, b_bin_s(b, OP_eq, x, 0), 1, b_div(b, b_un(b, OP_sin, px), px));
}

ir_node *ps_decomp_deg2rad(PS_DECOMP_ARGS) { return b_mul_s(b, ps_b_float(b, in[0]), M_PI / 180); }
ir_node *ps_decomp_rad2deg(PS_DECOMP_ARGS) { return b_mul_s(b, ps_b_float(b, in[0]), 180 / M_PI); }

/* x - trunc(x) */
ir_node *ps_decomp_frac(PS_DECOMP_ARGS) { return b_sub(b, in[0], b_un(b, OP_trunc, in[0])); }

ir_node *ps_decomp_isposinf(PS_DECOMP_ARGS) { return b_bin_s(b, OP_eq, in[0], INFINITY); }
ir_node *ps_decomp_isneginf(PS_DECOMP_ARGS) { return b_bin_s(b, OP_eq, in[0], -INFINITY); }

/* NaN -> nan, inf -> posinf, -inf -> neginf (a NaN attribute: the dtype's
 * largest or lowest finite value); integers and bool unchanged */
ir_node *ps_decomp_nan_to_num(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    if (!ir_dtype_is_float(x->type.dtype))
        return x;
    double big = x->type.dtype == TJ_F32 ? FLT_MAX : DBL_MAX;
    double pos = isnan(a->a[1].f) ? big : a->a[1].f, neg = isnan(a->a[2].f) ? -big : a->a[2].f;
    ir_node *r = b_where_sx(b, b_bin_s(b, OP_eq, x, -INFINITY), neg, x);
    r = b_where_sx(b, b_bin_s(b, OP_eq, x, INFINITY), pos, r);
    return b_where_sx(b, b_un(b, OP_isnan, x), a->a[0].f, r);
}

/* Phi(x) = erfc(-x / sqrt 2) / 2 */
ir_node *ps_decomp_ndtr(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    return b_mul_s(b, b_un(b, OP_erfc, b_mul_s(b, x, -M_SQRT1_2)), 0.5);
}

/* y NaN ? NaN : x == 0 ? 0 : x log(y), in the float result dtype */
ir_node *ps_decomp_xlogy(PS_DECOMP_ARGS)
{
    ir_node *x, *y;
    cast2(b, in, n->type.dtype, &x, &y);
    ir_node *r = b_where_sx(b, b_bin_s(b, OP_eq, x, 0), 0, b_mul(b, x, b_log(b, y)));
    return b_where(b, b_un(b, OP_isnan, y), y, r);
}

/* x == 0 ? values : x > 0 */
ir_node *ps_decomp_heaviside(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    ir_node *pos = ps_b_cast(b, b_gt_s(b, x, 0), n->type.dtype);
    return b_where(b, b_bin_s(b, OP_eq, x, 0), in[1], pos);
}

/* a, b infinite and equal ? a : m + log(1 + e^-|a - b|), m = max(a, b);
 * base 2: log2(1 + 2^-|a - b|) (PyTorch 1.13's kernels: log of 1 + e, not
 * log1p, so a tiny e is lost the same way) */
static ir_node *logaddexp_form(ps_builder *b, const ir_node *n, ir_node *const *in, bool base2)
{
    ir_node *x, *y;
    cast2(b, in, n->type.dtype, &x, &y);
    ir_node *d = b_neg(b, b_un(b, OP_abs, b_sub(b, x, y)));
    ir_node *e1 = b_add_s(b, b_un(b, base2 ? OP_exp2 : OP_exp, d), 1);
    ir_node *r = b_add(b, b_bin(b, OP_maximum, x, y), b_un(b, base2 ? OP_log2 : OP_log, e1));
    ir_node *same_inf = b_bin(b, OP_logical_and, b_un(b, OP_isinf, x), b_bin(b, OP_eq, x, y));
    return b_where(b, same_inf, x, r);
}

ir_node *ps_decomp_logaddexp(PS_DECOMP_ARGS) { return logaddexp_form(b, n, in, false); }
ir_node *ps_decomp_logaddexp2(PS_DECOMP_ARGS) { return logaddexp_form(b, n, in, true); }

/* pow in f64 */
ir_node *ps_decomp_float_power(PS_DECOMP_ARGS)
{
    ir_node *x, *y;
    cast2(b, in, TJ_F64, &x, &y);
    return b_bin(b, OP_pow, x, y);
}

/* a + value t1 t2 and a + value t1 / t2 in the result dtype, value a weak
 * scalar (the kernels' order: (value t1) t2; an integer result truncates it) */
static ir_node *addc(ps_builder *b, const ir_node *n, const ir_attrs *a, ir_node *const *in, ir_op op)
{
    tj_dtype dt = n->type.dtype;
    ir_node *x = ps_b_cast(b, in[0], dt), *t1 = ps_b_cast(b, in[1], dt), *t2 = ps_b_cast(b, in[2], dt);
    bool f = ir_dtype_is_float(dt);   /* an integer result truncates value, as PyTorch */
    ir_node *v = ps_b_scalar(b, f ? a->a[0].f : trunc(a->a[0].f), f ? TJ_F64 : TJ_I64);
    return b_add(b, x, b_bin(b, op, b_mul(b, t1, v), t2));
}

ir_node *ps_decomp_addcmul(PS_DECOMP_ARGS) { return addc(b, n, a, in, OP_mul); }
ir_node *ps_decomp_addcdiv(PS_DECOMP_ARGS) { return addc(b, n, a, in, OP_div); }
