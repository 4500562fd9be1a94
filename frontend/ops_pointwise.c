/* ops_pointwise.c - public entry points of the pointwise ops, generated from
 * the UNARY and BINARY rows of ops.def, plus the ternary ops, softplus, add/sub
 * with alpha, div with a rounding mode, and cast. */
#include <math.h>

#include "fe.h"

#define UNARY(name, rule, decomp, f32, f64, i) \
    tj_tensor *tj_##name(tj_tensor *x) { return fe_apply(OP_##name, &x, 1, NULL); }
#define BINARY(name, rule, decomp, f32, f64, i) \
    tj_tensor *tj_##name(tj_tensor *a, tj_tensor *b) \
    { \
        tj_tensor *in[2] = {a, b}; \
        return fe_apply(OP_##name, in, 2, NULL); \
    } \
    tj_tensor *tj_##name##_s(tj_tensor *a, double b) \
    { \
        if (!a) \
            return fe_apply(OP_##name, &a, 1, NULL); \
        tj_tensor *in[2] = {a, fe_wrap_scalar(b, a)}; \
        return fe_apply(OP_##name, in, 2, NULL); \
    }
#include "../ir/ops.def"

tj_tensor *tj_where(tj_tensor *cond, tj_tensor *a, tj_tensor *b)
{
    tj_tensor *in[3] = {cond, a, b};
    return fe_apply(OP_where, in, 3, NULL);
}

tj_tensor *tj_lerp(tj_tensor *a, tj_tensor *b, tj_tensor *w)
{
    tj_tensor *in[3] = {a, b, w};
    return fe_apply(OP_lerp, in, 3, NULL);
}

tj_tensor *tj_lerp_s(tj_tensor *a, tj_tensor *b, double w)
{
    tj_tensor *in[3] = {a, b, a && b ? fe_wrap_scalar(w, NULL) : NULL};
    return fe_apply(OP_lerp, in, 3, NULL);
}

tj_tensor *tj_clamp(tj_tensor *x, double lo, double hi)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], lo);
    ir_attr_float(&at.a[1], hi);
    return fe_apply(OP_clamp, &x, 1, &at);
}

/* a op alpha*b; alpha 1 is the plain op (add, sub) */
static tj_tensor *alpha_op(ir_op op, ir_op plain, tj_tensor *a, tj_tensor *b, double alpha)
{
    tj_tensor *in[2] = {a, b};
    if (alpha == 1)
        return fe_apply(plain, in, 2, NULL);
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], alpha);
    return fe_apply(op, in, 2, &at);
}

tj_tensor *tj_add_ex(tj_tensor *a, tj_tensor *b, double alpha)
{
    return alpha_op(OP_add_alpha, OP_add, a, b, alpha);
}

tj_tensor *tj_sub_ex(tj_tensor *a, tj_tensor *b, double alpha)
{
    return alpha_op(OP_sub_alpha, OP_sub, a, b, alpha);
}

tj_tensor *tj_add_s_ex(tj_tensor *a, double b, double alpha)
{
    return alpha_op(OP_add_alpha, OP_add, a, a ? fe_wrap_scalar(b, a) : NULL, alpha);
}

tj_tensor *tj_sub_s_ex(tj_tensor *a, double b, double alpha)
{
    return alpha_op(OP_sub_alpha, OP_sub, a, a ? fe_wrap_scalar(b, a) : NULL, alpha);
}

/* rounding none is div itself */
static tj_tensor *div_mode(tj_tensor *a, tj_tensor *b, tj_rounding mode)
{
    tj_tensor *in[2] = {a, b};
    if (mode == TJ_ROUNDING_NONE)
        return fe_apply(OP_div, in, 2, NULL);
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], mode);
    return fe_apply(OP_div_mode, in, 2, &at);
}

tj_tensor *tj_div_ex(tj_tensor *a, tj_tensor *b, tj_rounding mode) { return div_mode(a, b, mode); }

tj_tensor *tj_div_s_ex(tj_tensor *a, double b, tj_rounding mode)
{
    return div_mode(a, a ? fe_wrap_scalar(b, a) : NULL, mode);
}

tj_tensor *tj_softplus(tj_tensor *x) { return tj_softplus_ex(x, 1, 20); }

tj_tensor *tj_softplus_ex(tj_tensor *x, double beta, double threshold)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], beta);
    ir_attr_float(&at.a[1], threshold);
    return fe_apply(OP_softplus, &x, 1, &at);
}

tj_tensor *tj_cast(tj_tensor *x, tj_dtype dt)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dt);
    return fe_apply(OP_cast, &x, 1, &at);
}

/* ---- special functions (issue 11) ---------------------------------------------------------- */
/* torch.special.polygamma(n, x): n a weak integer scalar, the first operand. */
tj_tensor *tj_polygamma_n(int n, tj_tensor *x)
{
    if (x && n < 0) {
        tj_set_error("polygamma(n, x): n = %d, a negative n is not supported (as in PyTorch)", n);
        return NULL;
    }
    tj_tensor *in[2] = {x ? fe_wrap_scalar(n, x) : NULL, x};
    return fe_apply(OP_polygamma, in, 2, NULL);
}
