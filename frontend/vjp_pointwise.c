/* vjp_pointwise.c - gradient rules of the pointwise ops (ops.def's UNARY,
 * BINARY and other pointwise rows), after PyTorch's derivatives.yaml. In the
 * rules, x = c->in[0] (a, b for binary ops), y = c->out, g = dL/dy. */
#include <math.h>

#include "autograd.h"

#define X (c->in[0])
#define A (c->in[0])
#define B (c->in[1])
#define Y (c->out)
#define K(v) ag_const(g, (v))

/* g * f, the common shape of a unary rule. */
#define UNARY_VJP(name, factor) \
    AG_VJP(name) { AG_SET(0, tj_mul(g, (factor))); return 0; }

static tj_tensor *zeros_like(const tj_tensor *t) { return tj_zeros(t->dtype, t->ndim, t->shape); }

/* 1 - t */
static tj_tensor *rsub1(tj_tensor *t) { return tj_add_s(tj_neg(t), 1); }

/* 1 - t*t */
static tj_tensor *one_minus_sq(tj_tensor *t) { return rsub1(tj_square(t)); }

UNARY_VJP(abs, tj_sign(X))
AG_VJP(neg) { AG_SET(0, tj_neg(g)); return 0; }
AG_VJP(sign) { AG_SET(0, zeros_like(g)); return 0; }
AG_VJP(floor) { AG_SET(0, zeros_like(g)); return 0; }
AG_VJP(ceil) { AG_SET(0, zeros_like(g)); return 0; }
AG_VJP(round) { AG_SET(0, zeros_like(g)); return 0; }
AG_VJP(trunc) { AG_SET(0, zeros_like(g)); return 0; }
UNARY_VJP(exp, Y)
UNARY_VJP(exp2, tj_mul_s(Y, M_LN2))
UNARY_VJP(expm1, tj_add_s(Y, 1))
AG_VJP(log) { AG_SET(0, tj_div(g, X)); return 0; }
AG_VJP(log2) { AG_SET(0, tj_div(g, tj_mul_s(X, M_LN2))); return 0; }
AG_VJP(log10) { AG_SET(0, tj_div(g, tj_mul_s(X, M_LN10))); return 0; }
AG_VJP(log1p) { AG_SET(0, tj_div(g, tj_add_s(X, 1))); return 0; }
AG_VJP(sqrt) { AG_SET(0, tj_div(g, tj_mul_s(Y, 2))); return 0; }
UNARY_VJP(rsqrt, tj_mul_s(tj_mul(Y, tj_square(Y)), -0.5))
UNARY_VJP(reciprocal, tj_neg(tj_square(Y)))
UNARY_VJP(square, tj_mul_s(X, 2))
UNARY_VJP(sin, tj_cos(X))
UNARY_VJP(cos, tj_neg(tj_sin(X)))
UNARY_VJP(tan, tj_add_s(tj_square(Y), 1))
UNARY_VJP(asin, tj_rsqrt(one_minus_sq(X)))
UNARY_VJP(acos, tj_neg(tj_rsqrt(one_minus_sq(X))))
UNARY_VJP(atan, tj_reciprocal(tj_add_s(tj_square(X), 1)))
UNARY_VJP(sinh, tj_cosh(X))
UNARY_VJP(cosh, tj_sinh(X))
UNARY_VJP(tanh, one_minus_sq(Y))
UNARY_VJP(asinh, tj_rsqrt(tj_add_s(tj_square(X), 1)))
UNARY_VJP(acosh, tj_rsqrt(tj_sub_s(tj_square(X), 1)))
UNARY_VJP(atanh, tj_reciprocal(one_minus_sq(X)))
UNARY_VJP(erf, tj_mul_s(tj_exp(tj_neg(tj_square(X))), M_2_SQRTPI))
UNARY_VJP(erfc, tj_mul_s(tj_exp(tj_neg(tj_square(X))), -M_2_SQRTPI))
UNARY_VJP(sigmoid, tj_mul(Y, rsub1(Y)))
AG_VJP(relu) { AG_SET(0, ag_masked(g, tj_gt_s(Y, 0))); return 0; }

/* d/dx x*Phi(x) = Phi(x) + x*phi(x) */
UNARY_VJP(gelu, tj_add(tj_mul_s(tj_add_s(tj_erf(tj_mul_s(X, M_SQRT1_2)), 1), 0.5),
                       tj_mul(X, tj_mul_s(tj_exp(tj_mul_s(tj_square(X), -0.5)),
                                          0.5 * M_2_SQRTPI * M_SQRT1_2))))

/* y = x/2 (1 + tanh(u)), u = k (x + 0.044715 x^3), k = sqrt(2/pi):
 * y' = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3*0.044715 x^2) */
AG_VJP(gelu_tanh)
{
    const double k = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
    tj_tensor *x2 = tj_square(X);
    tj_tensor *t = tj_tanh(tj_mul_s(tj_add(X, tj_mul_s(tj_mul(x2, X), kappa)), k));
    tj_tensor *left = tj_mul_s(tj_add_s(t, 1), 0.5);
    tj_tensor *right = tj_mul(tj_mul_s(X, 0.5),
                              tj_mul(one_minus_sq(t), tj_mul_s(tj_add_s(tj_mul_s(x2, 3 * kappa), 1), k)));
    AG_SET(0, tj_mul(g, tj_add(left, right)));
    return 0;
}

/* s (1 + x (1 - s)), s = sigmoid(x) */
AG_VJP(silu)
{
    tj_tensor *s = tj_sigmoid(X);
    AG_SET(0, tj_mul(g, tj_mul(s, tj_add_s(tj_mul(X, rsub1(s)), 1))));
    return 0;
}

/* softplus(x) = log1p(exp(x beta)) / beta, linear where x beta > threshold:
 * g there, else g sigmoid(x beta) (torch's softplus_backward). */
AG_VJP(softplus)
{
    double beta = c->a->a[0].f, th = c->a->a[1].f;
    tj_tensor *xb = tj_mul_s(X, beta);
    AG_SET(0, tj_where(tj_gt_s(xb, th), g, tj_mul(g, tj_sigmoid(xb))));
    return 0;
}

/* ---- binary -------------------------------------------------------------------------- */

AG_VJP(add)
{
    AG_SET(0, g);
    AG_SET(1, g);
    return 0;
}

AG_VJP(sub)
{
    AG_SET(0, g);
    AG_SET(1, tj_neg(g));
    return 0;
}

AG_VJP(mul)
{
    AG_SET(0, tj_mul(g, B));
    AG_SET(1, tj_mul(g, A));
    return 0;
}

AG_VJP(div)
{
    AG_SET(0, tj_div(g, B));
    AG_SET(1, tj_neg(tj_div(tj_mul(g, Y), B)));
    return 0;
}

/* a^b: b a^(b-1) (0 where b == 0), and a^b log a (0 where a == 0 and b >= 0). */
AG_VJP(pow)
{
    AG_SET(0, ag_masked(tj_mul(g, tj_mul(B, tj_pow(A, tj_sub_s(B, 1)))), tj_ne_s(B, 0)));
    AG_SET(1, ag_masked(tj_mul(g, tj_mul(Y, tj_log(A))),
                        tj_logical_not(tj_logical_and(tj_eq_s(A, 0), tj_ge_s(B, 0)))));
    return 0;
}

/* Ties split the gradient evenly, as PyTorch does. */
static int select_vjp(const ag_ctx *c, tj_tensor *g, tj_tensor **gx, bool max)
{
    tj_tensor *half = tj_where(tj_eq(A, B), tj_mul_s(g, 0.5), g);
    AG_SET(0, ag_masked(half, max ? tj_ge(A, B) : tj_le(A, B)));
    AG_SET(1, ag_masked(half, max ? tj_ge(B, A) : tj_le(B, A)));
    return 0;
}

AG_VJP(maximum) { return select_vjp(c, g, gx, true); }
AG_VJP(minimum) { return select_vjp(c, g, gx, false); }

AG_VJP(atan2)
{
    tj_tensor *r = tj_add(tj_square(A), tj_square(B));
    AG_SET(0, tj_div(tj_mul(g, B), r));
    AG_SET(1, tj_div(tj_mul(g, tj_neg(A)), r));
    return 0;
}

AG_VJP(fmod)
{
    AG_SET(0, g);
    AG_SET(1, tj_neg(tj_mul(g, tj_trunc(tj_div(A, B)))));
    return 0;
}

AG_VJP(remainder)
{
    AG_SET(0, g);
    AG_SET(1, tj_neg(tj_mul(g, tj_floor(tj_div(A, B)))));
    return 0;
}

/* ---- other pointwise ------------------------------------------------------------------- */

AG_VJP(where)
{
    tj_tensor *cond = c->in[0];
    AG_SET(1, ag_masked(g, cond));
    AG_SET(2, ag_masked(g, tj_logical_not(cond)));
    return 0;
}

/* a + w (b - a) */
AG_VJP(lerp)
{
    tj_tensor *w = c->in[2];
    AG_SET(0, tj_mul(g, rsub1(w)));
    AG_SET(1, tj_mul(g, w));
    AG_SET(2, tj_mul(g, tj_sub(B, A)));
    return 0;
}

/* a + alpha b, a - alpha b */
AG_VJP(add_alpha)
{
    AG_SET(0, g);
    AG_SET(1, tj_mul_s(g, c->a->a[0].f));
    return 0;
}

AG_VJP(sub_alpha)
{
    AG_SET(0, g);
    AG_SET(1, tj_mul_s(g, -c->a->a[0].f));
    return 0;
}

/* rounded: zero, as PyTorch's div with a rounding mode */
AG_VJP(div_mode)
{
    AG_SET(0, zeros_like(g));
    AG_SET(1, zeros_like(g));
    return 0;
}

AG_VJP(clamp)
{
    double lo = c->a->a[0].f, hi = c->a->a[1].f;
    AG_SET(0, ag_masked(g, tj_logical_and(tj_ge_s(X, lo), tj_le_s(X, hi))));
    return 0;
}

AG_VJP(cast)
{
    AG_SET(0, g);   /* the tape casts it back to the input's dtype */
    return 0;
}

/* ---- more pointwise prims (issue 11) ---------------------------------------------------- */

UNARY_VJP(cbrt, tj_reciprocal(tj_mul_s(tj_square(Y), 3)))          /* 1 / (3 y^2) */
UNARY_VJP(erfinv, tj_mul_s(tj_exp(tj_square(Y)), 0.5 * sqrt(M_PI)))  /* sqrt(pi)/2 e^(y^2) */

/* a: y / a (+-1), 0 where a == 0 (torch's copysign_tensor_self_backward); b: 0 */
AG_VJP(copysign)
{
    AG_SET(0, ag_masked(tj_mul(g, tj_div(Y, A)), tj_ne_s(A, 0)));
    AG_SET(1, zeros_like(g));
    return 0;
}

AG_VJP(hypot)
{
    AG_SET(0, tj_div(tj_mul(g, A), Y));
    AG_SET(1, tj_div(tj_mul(g, B), Y));
    return 0;
}

/* The operand fmax/fmin chose gets g: a where a >= b (<=) or b is NaN. */
static int fselect_vjp(const ag_ctx *c, tj_tensor *g, tj_tensor **gx, bool max)
{
    tj_tensor *pick_a = tj_logical_or(max ? tj_ge(A, B) : tj_le(A, B), tj_isnan(B));
    AG_SET(0, ag_masked(g, pick_a));
    AG_SET(1, ag_masked(g, tj_logical_not(pick_a)));
    return 0;
}

AG_VJP(fmax) { return fselect_vjp(c, g, gx, true); }
AG_VJP(fmin) { return fselect_vjp(c, g, gx, false); }

UNARY_VJP(lgamma, tj_digamma(X))

/* psi'(x) for x > 0: sum_{k<8} 1/(x+k)^2 plus the asymptotic series at
 * z = x + 8 (to 1/z^9: 1e-10 relative). */
static tj_tensor *trigamma_pos(tj_tensor *x)
{
    tj_tensor *sum = tj_reciprocal(tj_square(x));
    for (int k = 1; k < 8; k++)
        sum = tj_add(sum, tj_reciprocal(tj_square(tj_add_s(x, k))));
    tj_tensor *w = tj_reciprocal(tj_add_s(x, 8)), *w2 = tj_square(w);
    tj_tensor *t = tj_add_s(tj_mul_s(w2, -1.0 / 30), 1.0 / 42);
    t = tj_add_s(tj_mul(t, w2), -1.0 / 30);
    t = tj_add_s(tj_mul(t, w2), 1.0 / 6);
    t = tj_add_s(tj_mul(t, w), 0.5);
    t = tj_add_s(tj_mul(t, w), 1);
    return tj_add(sum, tj_mul(t, w));
}

/* digamma' = psi'(x); x < 0 by the reflection pi^2 / sin^2(pi x) - psi'(1 - x) */
AG_VJP(digamma)
{
    tj_tensor *refl = tj_sub(tj_mul_s(tj_reciprocal(tj_square(tj_sin(tj_mul_s(X, M_PI)))), M_PI * M_PI),
                             trigamma_pos(tj_rsub_s(X, 1, 1)));
    AG_SET(0, tj_mul(g, tj_where(tj_lt_s(X, 0), refl, trigamma_pos(X))));
    return 0;
}
