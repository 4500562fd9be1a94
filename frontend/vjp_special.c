/* vjp_special.c - gradient rules of ops.def's "special functions and
 * remaining prims (issue 11)" block, after PyTorch's derivatives.yaml. In the
 * rules x = c->in[0] (a, b for binary ops), y = c->out, g = dL/dy. */
#include <math.h>

#include "autograd.h"

#define X (c->in[0])
#define A (c->in[0])
#define B (c->in[1])
#define Y (c->out)

#define UNARY_VJP(name, factor) \
    AG_VJP(name) { AG_SET(0, tj_mul(g, (factor))); return 0; }

/* f where x != 0, v where x == 0 (the limits of the i1 and j1 rules) */
static tj_tensor *at_zero(tj_tensor *x, tj_tensor *f, double v)
{
    return tj_where_xs(tj_ne_s(x, 0), f, v);
}

UNARY_VJP(erfcx, tj_sub_s(tj_mul_s(tj_mul(X, Y), 2), 2 / sqrt(M_PI)))   /* 2x y - 2/sqrt(pi) */
UNARY_VJP(ndtri, tj_mul_s(tj_exp(tj_mul_s(tj_square(Y), 0.5)), sqrt(2 * M_PI)))
UNARY_VJP(i0, tj_i1(X))
UNARY_VJP(i0e, tj_sub(tj_i1e(X), tj_mul(tj_sign(X), Y)))                 /* i1e - sgn(x) i0e */
UNARY_VJP(i1, at_zero(X, tj_sub(tj_i0(X), tj_div(Y, X)), 0.5))          /* i0 - i1 / x */
UNARY_VJP(i1e, at_zero(X, tj_sub(tj_i0e(X), tj_mul(Y, tj_add(tj_sign(X), tj_reciprocal(X)))), 0.5))
UNARY_VJP(bessel_j0, tj_neg(tj_bessel_j1(X)))
UNARY_VJP(bessel_j1, at_zero(X, tj_sub(tj_bessel_j0(X), tj_div(Y, X)), 0.5))  /* j0 - j1 / x */
UNARY_VJP(frexp, tj_exp2(tj_neg(tj_frexp_exponent(X))))                  /* 2^-e */
AG_NONDIFF(frexp_exponent, "integer result")

/* polygamma(n, x): d/dx = polygamma(n + 1, x); n is an integer (no gradient). */
AG_VJP(polygamma)
{
    if (c->need[0]) {
        rt_error("polygamma: n is an integer, it has no gradient");
        return -1;
    }
    AG_SET(1, tj_mul(g, tj_polygamma(tj_add_s(A, 1), B)));
    return 0;
}

/* d/dx P(a, x) = e^-x x^(a-1) / Gamma(a) = -d/dx Q(a, x); PyTorch has no
 * gradient in a either. */
static int igamma_vjp(const ag_ctx *c, tj_tensor *g, tj_tensor **gx, double sign)
{
    if (c->need[0]) {
        rt_error("igamma: the gradient with respect to a is not implemented (as in PyTorch)");
        return -1;
    }
    tj_tensor *l = tj_sub(tj_sub(tj_mul(tj_sub_s(A, 1), tj_log(B)), B), tj_lgamma(A));
    AG_SET(1, tj_mul(g, tj_mul_s(tj_exp(l), sign)));
    return 0;
}

AG_VJP(igamma) { return igamma_vjp(c, g, gx, 1); }
AG_VJP(igammac) { return igamma_vjp(c, g, gx, -1); }
