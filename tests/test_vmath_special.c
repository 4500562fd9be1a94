/* test_vmath_special.c - accuracy of ir/vmath_special.h (erfcx, ndtri, i0,
 * i0e, i1, i1e, bessel_j0/j1, polygamma, igamma/igammac, frexp). Each f32
 * formula is compared with a reference independent of it (power series,
 * continued fractions and Newton steps in long double, or glibc's double
 * j0/j1) over a sweep of its stated range, and its error in ulp of the float
 * result must stay within the bound stated in vmath_special.h; the f64
 * formulas are checked the same way in ulp of the double. frexp is exact.
 * TJ_VMATH_SAMPLES=n sets the points per sweep (default 20000) and prints the
 * measured maxima: that is how the stated bounds were measured. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../ir/vmath.h"
#include "util.h"

static int64_t samples(void)
{
    const char *s = getenv("TJ_VMATH_SAMPLES");
    return s && atoll(s) > 0 ? atoll(s) : 20000;
}

/* |got - ref| in ulp of ref as a float (or a double: bits 53) */
static double ulp_err(double got, long double ref, int bits)
{
    if (isnan(ref))
        return isnan(got) ? 0 : INFINITY;
    double r = bits == 24 ? (double)(float)ref : (double)ref;
    if (isinf(r))
        return got == r ? 0 : INFINITY;
    if (!isfinite(got))
        return INFINITY;
    int e;
    frexpl(ref, &e);
    double u = bits == 24 ? fmax(ldexp(1.0, e - 24), ldexp(1.0, -149))
                          : fmax(ldexp(1.0, e - 53), ldexp(1.0, -1074));
    return (double)fabsl((long double)got - ref) / u;
}

/* ---- references in long double ---------------------------------------------------------- */
/* I0 and I1 by their power series (all terms positive). */
static long double ref_i(int order, long double x)
{
    long double q = x * x / 4, t = order ? x / 2 : 1, s = t;
    for (int k = 1; k < 4000 && fabsl(t) > fabsl(s) * 1e-22L; k++) {
        t *= q / ((long double)k * (k + order));
        s += t;
    }
    return s;
}

static long double ref_i0(long double x) { return ref_i(0, x); }
static long double ref_i1(long double x) { return ref_i(1, x); }
static long double ref_i0e(long double x) { return expl(-fabsl(x)) * ref_i(0, x); }
static long double ref_i1e(long double x) { return expl(-fabsl(x)) * ref_i(1, x); }

static long double ref_erfcx(long double x)
{
    if (x < 100)
        return expl(x * x) * erfcl(x);
    long double w = 1 / (2 * x * x), s = 1, t = 1;
    for (int k = 1; k < 30; k++)
        s += (t *= -(2 * k - 1) * w);
    return s / (x * sqrtl(3.14159265358979323846264338327950288L));
}

/* Newton on ndtr = erfc(-x/sqrt 2)/2 (or 1 - erfc(x/sqrt 2)/2 above 1/2). */
static long double ref_ndtri(long double y)
{
    if (y <= 0 || y >= 1)
        return y == 0 ? -INFINITY : y == 1 ? INFINITY : NAN;
    long double x = vm_ndtri_f64((double)y);
    for (int k = 0; k < 4; k++) {
        long double f = y < 0.5L ? erfcl(-x / sqrtl(2)) / 2 - y : (1 - y) - erfcl(x / sqrtl(2)) / 2;
        x -= f / (expl(-x * x / 2) / sqrtl(2 * 3.14159265358979323846264338327950288L));
    }
    return x;
}

/* psi^(n)(x) = (-1)^(n+1) n! sum_k (x+k)^-(n+1): 20000 terms, then the
 * integral, half and first Bernoulli terms. */
static long double ref_polygamma(int n, long double x)
{
    long double s = 0, fact = 1;
    for (long k = 0; k < 20000; k++)
        s += 1 / powl(x + k, n + 1);
    long double v = x + 20000;
    s += 1 / (n * powl(v, n)) + 0.5L / powl(v, n + 1) + (n + 1) / (12 * powl(v, n + 2));
    for (int i = 2; i <= n; i++)
        fact *= i;
    return (n % 2 ? 1 : -1) * fact * s;
}

/* P(a, x) by its series for x < a + 1, Q by Lentz's continued fraction
 * otherwise, each to convergence, in long double. */
static long double ref_igam(long double a, long double x, int q)
{
    if (x == 0)
        return q;
    long double ax = expl(a * logl(x) - x - lgammal(a));
    if (x < a + 1) {
        long double r = a, c = 1, s = 1;
        for (int k = 0; k < 100000 && c > s * 1e-21L; k++)
            s += (c *= x / (r += 1));
        long double p = s * ax / a;
        return q ? 1 - p : p;
    }
    long double b = x + 1 - a, cc = 1 / 1e-300L, d = 1 / b, h = d;
    for (int i = 1; i < 100000; i++) {
        long double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        cc = b + an / cc;
        d = 1 / d;
        long double del = d * cc;
        h *= del;
        if (fabsl(del - 1) < 1e-21L)
            break;
    }
    long double qq = ax * h;
    return q ? qq : 1 - qq;
}

/* ---- sweeps ----------------------------------------------------------------------------- */
typedef struct {
    const char *name;
    float (*f)(float);
    double (*d)(double);
    long double (*ref)(long double);
    double lo, hi;
    double bound, bound64;   /* max ulp of the f32 and f64 formulas */
} case1;

static void sweep(const case1 *c)
{
    int64_t n = samples();
    double mx = 0, mx64 = 0, wx = 0, wx64 = 0;
    for (int64_t k = 0; k <= n; k++) {
        float x = (float)(c->lo + (c->hi - c->lo) * (double)k / (double)n);
        long double r = c->ref(x);
        double e = ulp_err(c->f(x), r, 24), e64 = ulp_err(c->d(x), r, 53);
        if (e > mx)
            mx = e, wx = x;
        if (e64 > mx64)
            mx64 = e64, wx64 = x;
    }
    if (getenv("TJ_VMATH_SAMPLES"))
        printf("%-10s [%g, %g] f32 max %.3f ulp at %.9g, f64 max %.3f ulp at %.17g\n", c->name,
               c->lo, c->hi, mx, wx, mx64, wx64);
    if (mx > c->bound)
        fail_msg("%s f32: %.3f ulp at %.9g (bound %.2f)", c->name, mx, wx, c->bound);
    if (mx64 > c->bound64)
        fail_msg("%s f64: %.3f ulp at %.17g (bound %.2f)", c->name, mx64, wx64, c->bound64);
}

#define W(name) static float w_##name(float x) { return vm_##name##_f32(x); }
W(i0) W(i0e) W(i1) W(i1e) W(erfcx) W(ndtri)
#undef W

static const case1 cases[] = {
    {"i0", w_i0, vm_i0_f64, ref_i0, -89, 89, 1.0, 16.0},
    {"i0e", w_i0e, vm_i0e_f64, ref_i0e, -700, 700, 1.0, 16.0},
    {"i1", w_i1, vm_i1_f64, ref_i1, -89, 89, 1.0, 16.0},
    {"i1e", w_i1e, vm_i1e_f64, ref_i1e, -700, 700, 1.0, 16.0},
    {"erfcx", w_erfcx, vm_erfcx_f64, ref_erfcx, -9.3, 30, 3.0, 4.0},
    {"erfcx", w_erfcx, vm_erfcx_f64, ref_erfcx, 30, 1e8, 3.0, 4.0},
    {"ndtri", w_ndtri, vm_ndtri_f64, ref_ndtri, 0, 1, 1.0, 4.0},
    {"ndtri", w_ndtri, vm_ndtri_f64, ref_ndtri, 0, 1e-30, 1.0, 4.0},
};

static void test_unary_ulp(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        sweep(&cases[i]);
}

/* J0, J1 against glibc's double j0/j1: ulp where |J| >= 1e-3, absolute
 * (2e-9) elsewhere, x in [-1e4, 1e4]; the f64 column within 1e-15 absolute. */
static void test_bessel_j(void **state)
{
    (void)state;
    int64_t n = samples() * 5;
    double mx[2] = {0}, ab[2] = {0}, ab64[2] = {0}, w[2] = {0};
    for (int64_t k = 0; k <= n; k++) {
        float x = (float)(-1e4 + 2e4 * (double)k / (double)n);
        for (int j = 0; j < 2; j++) {
            double r = j ? j1(x) : j0(x);
            float got = j ? vm_bessel_j1_f32(x) : vm_bessel_j0_f32(x);
            double got64 = j ? vm_bessel_j1_f64(x) : vm_bessel_j0_f64(x);
            ab64[j] = fmax(ab64[j], fabs(got64 - r));
            if (fabs(r) < 1e-3)
                ab[j] = fmax(ab[j], fabs(got - r));
            else if (ulp_err(got, r, 24) > mx[j])
                mx[j] = ulp_err(got, r, 24), w[j] = x;
        }
    }
    if (getenv("TJ_VMATH_SAMPLES"))
        printf("bessel_j0  f32 max %.3f ulp at %g, %.3g abs near zeros; f64 %.3g abs\n"
               "bessel_j1  f32 max %.3f ulp at %g, %.3g abs near zeros; f64 %.3g abs\n",
               mx[0], w[0], ab[0], ab64[0], mx[1], w[1], ab[1], ab64[1]);
    for (int j = 0; j < 2; j++)
        if (mx[j] > 3.5 || ab[j] > 2e-9 || ab64[j] > 1e-15)
            fail_msg("bessel_j%d: %.3f ulp at %g, %.3g abs, f64 %.3g abs", j, mx[j], w[j], ab[j],
                     ab64[j]);
    /* special values (PyTorch: NaN at +-inf, a known difference) */
    assert_true(vm_bessel_j0_f32(0.0f) == 1.0f && vm_bessel_j1_f32(-0.0f) == 0.0f);
    assert_true(vm_bessel_j0_f32(INFINITY) == 0.0f && isnan(vm_bessel_j1_f32(NAN)));
    assert_true(vm_bessel_j1_f32(-3.0f) == -vm_bessel_j1_f32(3.0f));
}

static void test_polygamma(void **state)
{
    (void)state;
    int64_t n = samples() / 50;
    for (int order = 1; order <= 4; order++) {
        double mx = 0, mx64 = 0, wx = 0;
        for (int64_t k = 0; k <= n; k++) {
            float x = (float)(-5.9 + 45.9 * (double)k / (double)n);
            if (fabsf(x - nearbyintf(x)) < 1e-3f)
                continue;   /* the poles: relative error of the huge values */
            long double r = ref_polygamma(order, x);
            double e = ulp_err(vm_polygamma_f32((float)order, x), r, 24);
            mx64 = fmax(mx64, ulp_err(vm_polygamma_f64(order, x), r, 53));
            if (e > mx)
                mx = e, wx = x;
        }
        if (getenv("TJ_VMATH_SAMPLES"))
            printf("polygamma  n=%d [-5.9, 40] f32 max %.3f ulp at %g, f64 max %.1f ulp\n", order,
                   mx, wx, mx64);
        if (mx > 2.0 || mx64 > 64)
            fail_msg("polygamma(%d): %.3f ulp at %g, f64 %.1f ulp", order, mx, wx, mx64);
    }
    /* n = 0 is digamma; poles; the domain (n an integer >= 0, x > -6) */
    assert_true(vm_polygamma_f32(0, 2.5f) == vm_digamma_f32(2.5f));
    assert_true(vm_polygamma_f32(1, 0.0f) == INFINITY && vm_polygamma_f32(2, 0.0f) == -INFINITY);
    assert_true(isnan(vm_polygamma_f32(1.5f, 1.0f)) && isnan(vm_polygamma_f32(-1, 1.0f)));
    assert_true(isnan(vm_polygamma_f32(1, -7.5f)) && vm_polygamma_f32(3, INFINITY) == 0.0f);
    assert_true(isnan(vm_polygamma_f64(2, -6.5)) && isnan(vm_polygamma_f32(1, NAN)));
}

/* P and Q in ulp, or absolute 1e-9 where the value is below 1e-3 of the
 * other (as 1 - P cancels), for a in (0, 100], x in [0, 400]. */
static void test_igamma(void **state)
{
    (void)state;
    int64_t n = samples() / 100;
    double mx = 0, mx64 = 0, ab = 0, wa = 0, wx = 0;
    for (int64_t i = 1; i <= n; i++) {
        float a = (float)(100.0 * pow((double)i / (double)n, 2));
        for (int64_t j = 0; j <= n; j++) {
            float x = (float)(400.0 * pow((double)j / (double)n, 2));
            for (int q = 0; q < 2; q++) {
                long double r = ref_igam(a, x, q);
                float got = q ? vm_igammac_f32(a, x) : vm_igamma_f32(a, x);
                double got64 = q ? vm_igammac_f64(a, x) : vm_igamma_f64(a, x);
                if (fabsl(r) < 1e-3L) {
                    ab = fmax(ab, (double)fabsl(got - r));
                    continue;
                }
                double e = ulp_err(got, r, 24);
                mx64 = fmax(mx64, ulp_err(got64, r, 53));
                if (e > mx)
                    mx = e, wa = a, wx = x;
            }
        }
    }
    if (getenv("TJ_VMATH_SAMPLES"))
        printf("igamma(c)  a (0, 100], x [0, 400] f32 max %.3f ulp at (%g, %g), %.3g abs below "
               "1e-3; f64 max %.1f ulp\n", mx, wa, wx, ab, mx64);
    if (mx > 2.0 || ab > 1e-9 || mx64 > 8192)
        fail_msg("igamma: %.3f ulp at (%g, %g), %.3g abs, f64 %.1f ulp", mx, wa, wx, ab, mx64);
    /* PyTorch's special values */
    assert_true(vm_igamma_f32(0, 1) == 1.0f && vm_igammac_f32(0, 1) == 0.0f);
    assert_true(vm_igamma_f32(2, 0) == 0.0f && vm_igammac_f32(2, 0) == 1.0f);
    assert_true(vm_igamma_f32(2, INFINITY) == 1.0f && vm_igammac_f32(INFINITY, 3) == 1.0f);
    assert_true(isnan(vm_igamma_f32(-1, 1)) && isnan(vm_igammac_f32(1, -1)) &&
                isnan(vm_igamma_f32(0, 0)) && isnan(vm_igamma_f32(INFINITY, INFINITY)));
    assert_true(isnan(vm_igamma_f64(NAN, 1)) && vm_igammac_f64(1, 0) == 1.0);
}

/* frexp: bit for bit against libm's frexpf on every k-th float. */
static void test_frexp_exact(void **state)
{
    (void)state;
    int64_t step = 0xff800000u / (uint32_t)(samples() * 50);
    for (uint64_t u = 0; u <= 0xffffffffu; u += (uint64_t)step) {
        float x = vm_from_bits_f32((uint32_t)u);
        int e = 0;
        float m = frexpf(x, &e);
        e = isfinite(x) ? e : 0;
        float got = vm_frexp_mant_f32(x);
        if ((!(got == m) && !(isnan(got) && isnan(m))) || signbit(got) != signbit(m) ||
            vm_frexp_exp_f32(x) != e)
            fail_msg("frexp(%a) = %a, %d; libm %a, %d", x, got, vm_frexp_exp_f32(x), m, e);
    }
    assert_int_equal(vm_frexp_exp_f32(FLT_TRUE_MIN), -148);
    assert_int_equal(vm_frexp_exp_f64(5e-324), -1073);
    assert_true(vm_frexp_mant_f64(-3.0) == -0.75 && vm_frexp_exp_f64(INFINITY) == 0);
    assert_true(vm_frexp_mant_f32(-0.0f) == 0.0f && signbit(vm_frexp_mant_f32(-0.0f)));
}

/* special values of the unary functions (PyTorch's) */
static void test_unary_specials(void **state)
{
    (void)state;
    assert_true(vm_i0_f32(0) == 1.0f && vm_i0_f32(INFINITY) == INFINITY && vm_i0_f32(100) == INFINITY);
    assert_true(vm_i0e_f32(-INFINITY) == 0.0f && vm_i1e_f32(-INFINITY) == 0.0f &&
                signbit(vm_i1e_f32(-INFINITY)));
    assert_true(vm_i1_f32(-INFINITY) == -INFINITY && vm_i1_f32(0) == 0.0f && isnan(vm_i1_f32(NAN)));
    assert_true(vm_erfcx_f32(INFINITY) == 0.0f && vm_erfcx_f32(-INFINITY) == INFINITY &&
                vm_erfcx_f32(-10.0f) == INFINITY && vm_erfcx_f32(0) == 1.0f && isnan(vm_erfcx_f32(NAN)));
    assert_true(vm_erfcx_f64(INFINITY) == 0.0 && vm_erfcx_f64(-30) == INFINITY);
    assert_true(vm_ndtri_f32(0) == -INFINITY && vm_ndtri_f32(1) == INFINITY &&
                vm_ndtri_f32(0.5f) == 0.0f && isnan(vm_ndtri_f32(1.5f)) && isnan(vm_ndtri_f32(-0.1f)));
    assert_true(vm_ndtri_f64(0) == -INFINITY && isnan(vm_ndtri_f64(NAN)) && isnan(vm_ndtri_f64(2)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_ulp),   cmocka_unit_test(test_bessel_j),
        cmocka_unit_test(test_polygamma),   cmocka_unit_test(test_igamma),
        cmocka_unit_test(test_frexp_exact), cmocka_unit_test(test_unary_specials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
