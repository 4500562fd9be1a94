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

/* v^-s for an integer s >= 1 by repeated multiplication */
static long double ipowinv(long double v, int s)
{
    long double p = 1;
    for (int i = 0; i < s; i++)
        p *= v;
    return 1 / p;
}

/* psi^(n)(x) = (-1)^(n+1) n! sum_k (x+k)^-(n+1), summed directly (the terms
 * at negative x + k too) with compensation from k = 0 to x + k >= 20000,
 * then the integral, half and first Bernoulli terms. *cond (if not NULL):
 * the sum of |terms| over |sum|, the reference's own error in ulp of long
 * double (terms of both signs cancel at negative x for odd n + 1). */
static long double ref_polygamma_c(int n, long double x, long double *cond)
{
    long double s = 0, comp = 0, fact = 1, abs = 0;
    long k = 0;
    if (x < 0 && (n + 1) % 2 && x - floorl(x) == 0.5L)
        k = 2 * (long)-floorl(x);   /* x = -m - 1/2: the terms to k = 2m cancel in pairs */
    for (; k < 20000 || x + k < 20000; k++) {
        long double p = ipowinv(x + k, n + 1), y = p - comp, t = s + y;
        comp = (t - s) - y;
        s = t;
        abs += fabsl(p);
    }
    long double v = x + k;
    s += 1 / (n * powl(v, n)) + 0.5L / powl(v, n + 1) + (n + 1) / (12 * powl(v, n + 2));
    for (int i = 2; i <= n; i++)
        fact *= i;
    if (cond)
        *cond = abs / fabsl(s);
    return (n % 2 ? 1 : -1) * fact * s;
}

static long double ref_polygamma(int n, long double x) { return ref_polygamma_c(n, x, NULL); }

/* ln Gamma(a) - ((a - 1/2) ln a - a + ln sqrt(2 pi)) for a >= 8: Stirling's
 * series to B_20 (1e-21) */
static long double ref_stirling(long double a)
{
    static const long double b[10] = {1.0L / 6, -1.0L / 30, 1.0L / 42, -1.0L / 30, 5.0L / 66,
                                      -691.0L / 2730, 7.0L / 6, -3617.0L / 510, 43867.0L / 798,
                                      -174611.0L / 330};
    long double s = 0, w = 1 / a, p = w;
    for (int j = 1; j <= 10; j++, p *= w * w)
        s += b[j - 1] / (2 * j * (2 * j - 1)) * p;
    return s;
}

/* x^a e^-x / Gamma(a) in long double: for a >= 8 as
 * e^(a (log1p(t) - t)) sqrt(a / 2 pi) e^-stirling(a), t = (x - a) / a, which
 * keeps a ln x's rounding out (a = 1e4: ln x ~ 9, a ln x ~ 1e5) */
static long double ref_igam_fac(long double a, long double x)
{
    if (a < 8)
        return expl(a * logl(x) - x - lgammal(a));
    long double t = (x - a) / a;
    return expl(a * (log1pl(t) - t) - ref_stirling(a)) * sqrtl(a / (2 * 3.14159265358979323846264338327950288L));
}

/* P(a, x) by its series for x < a + 1, Q by Lentz's continued fraction
 * otherwise, each to convergence, in long double. */
static long double ref_igam(long double a, long double x, int q)
{
    if (x == 0)
        return q;
    long double ax = ref_igam_fac(a, x);
    if (x < a + 1) {
        long double r = a, c = 1, s = 1;
        for (int k = 0; k < 1000000 && c > s * 1e-21L; k++)
            s += (c *= x / (r += 1));
        long double p = s * ax / a;
        return q ? 1 - p : p;
    }
    long double b = x + 1 - a, cc = 1 / 1e-300L, d = 1 / b, h = d;
    for (int i = 1; i < 1000000; i++) {
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

/* polygamma(order, x) for x on [lo, hi] (n + 1 points), off the poles:
 * the max ulp of the f32 and f64 columns, and where */
static void pg_sweep(int order, double lo, double hi, int64_t n, double *mx, double *mx64,
                     double *wx)
{
    *mx = *mx64 = *wx = 0;
    for (int64_t k = 0; k <= n; k++) {
        float x = (float)(lo + (hi - lo) * (double)k / (double)n);
        if (fabsf(x - nearbyintf(x)) < 1e-3f)
            continue;   /* the poles: relative error of the huge values */
        long double cond, r = ref_polygamma_c(order, x, &cond);
        if (cond > 1e9)
            continue;   /* the reference is off by more than 1e-3 float ulp */
        double e = ulp_err(vm_polygamma_f32((float)order, x), r, 24);
        /* f64: in ulp over the cancellation ratio of the sum (near the zeros
         * of the even orders the terms cancel, in double as in long double) */
        if (cond < 1e3)   /* else the reference is off by more than a double ulp */
            *mx64 = fmax(*mx64, ulp_err(vm_polygamma_f64(order, x), r, 53) / fmax(1, (double)cond));
        if (e > *mx)
            *mx = e, *wx = x;
    }
}

/* orders 1 to 4 on (-6, 40] (direct sums) and [-1000, -6] (reflected), 5 to
 * 12 on [-60, 60], single points far out */
static void test_polygamma(void **state)
{
    (void)state;
    static const struct { int lo, hi; double x0, x1, b, b64; } sw[] = {
        {1, 4, -5.9, 40, 1.0, 96}, {1, 4, -1000, -6, 1.0, 96}, {5, 12, -60, 60, 1.0, 128}};
    for (size_t i = 0; i < sizeof sw / sizeof *sw; i++)
        for (int order = sw[i].lo; order <= sw[i].hi; order++) {
            double mx, mx64, wx;
            pg_sweep(order, sw[i].x0, sw[i].x1, samples() / 50, &mx, &mx64, &wx);
            if (getenv("TJ_VMATH_SAMPLES"))
                printf("polygamma  n=%d [%g, %g] f32 max %.3f ulp at %g, f64 max %.1f ulp\n", order,
                       sw[i].x0, sw[i].x1, mx, wx, mx64);
            if (mx > sw[i].b || mx64 > sw[i].b64)
                fail_msg("polygamma(%d) on [%g, %g]: %.3f ulp at %g, f64 %.1f ulp", order,
                         sw[i].x0, sw[i].x1, mx, wx, mx64);
        }
    static const float far[] = {-12345.25f, -999999.5f, -77777.7f, -6.0001f, -30.999f};
    for (int order = 1; order <= 4; order++)
        for (size_t i = 0; i < sizeof far / sizeof *far; i++) {
            long double r = ref_polygamma(order, far[i]);
            double e = ulp_err(vm_polygamma_f32((float)order, far[i]), r, 24);
            double e64 = ulp_err(vm_polygamma_f64(order, far[i]), r, 53);
            if (e > 1.0 || e64 > 64)
                fail_msg("polygamma(%d, %.9g): %.3f ulp, f64 %.1f ulp", order, far[i], e, e64);
        }
    /* n = 0 is digamma; poles (+inf for odd n, -inf for even, PyTorch's
     * zeta); the domain (n an integer >= 0) */
    assert_true(vm_polygamma_f32(0, 2.5f) == vm_digamma_f32(2.5f));
    assert_true(vm_polygamma_f32(1, 0.0f) == INFINITY && vm_polygamma_f32(2, 0.0f) == -INFINITY);
    assert_true(vm_polygamma_f32(3, -7.0f) == INFINITY && vm_polygamma_f32(4, -1e6f) == -INFINITY);
    assert_true(vm_polygamma_f64(1, -3.0) == INFINITY && vm_polygamma_f64(2, -INFINITY) == -INFINITY);
    assert_true(isnan(vm_polygamma_f32(1.5f, 1.0f)) && isnan(vm_polygamma_f32(-1, 1.0f)));
    assert_true(vm_polygamma_f32(3, INFINITY) == 0.0f && isnan(vm_polygamma_f32(1, NAN)));
    assert_true(isnan(vm_polygamma_f64(2, NAN)) && isnan(vm_polygamma_f64(2.5, -6.5)));
}

/* P and Q of a in (0, 100], x in [0, 400]: in ulp, or absolute 1e-9 where
 * the value is below 1e-3 (as 1 - P cancels for small a) */
static void igamma_small(double *mx, double *mx64, double *ab, float *wa, float *wx)
{
    int64_t n = samples() / 100;
    for (int64_t i = 1; i <= n; i++) {
        float a = (float)(100.0 * pow((double)i / (double)n, 2));
        for (int64_t j = 0; j <= n; j++) {
            float x = (float)(400.0 * pow((double)j / (double)n, 2));
            for (int q = 0; q < 2; q++) {
                long double r = ref_igam(a, x, q);
                float got = q ? vm_igammac_f32(a, x) : vm_igamma_f32(a, x);
                double got64 = q ? vm_igammac_f64(a, x) : vm_igamma_f64(a, x);
                if (fabsl(r) < 1e-3L) {
                    *ab = fmax(*ab, (double)fabsl(got - r));
                    continue;
                }
                double e = ulp_err(got, r, 24);
                *mx64 = fmax(*mx64, ulp_err(got64, r, 53));
                if (e > *mx)
                    *mx = e, *wa = a, *wx = x;
            }
        }
    }
}

/* P and Q of a in [20, 1e4] (log-spaced), x = a + u sqrt(a), u in [-40, 40]
 * (every value, in ulp, down to the float denormals) */
static void igamma_large(double *mx, double *mx64, float *wa, float *wx)
{
    int64_t n = samples() / 200;
    for (int64_t i = 0; i <= n; i++) {
        float a = (float)(20.0 * pow(500.0, (double)i / (double)n));
        for (int64_t j = 0; j <= 2 * n; j++) {
            float x = (float)(a + (-40.0 + 80.0 * (double)j / (double)(2 * n)) * sqrt(a));
            if (x < 0)
                continue;
            for (int q = 0; q < 2; q++) {
                long double r = ref_igam(a, x, q);
                float got = q ? vm_igammac_f32(a, x) : vm_igamma_f32(a, x);
                double got64 = q ? vm_igammac_f64(a, x) : vm_igamma_f64(a, x);
                double e = ulp_err(got, r, 24);
                *mx64 = fmax(*mx64, ulp_err(got64, r, 53));
                if (e > *mx)
                    *mx = e, *wa = a, *wx = x;
            }
        }
    }
}

static void test_igamma(void **state)
{
    (void)state;
    double mx = 0, mx64 = 0, ab = 0, lmx = 0, lmx64 = 0;
    float wa = 0, wx = 0, lwa = 0, lwx = 0;
    igamma_small(&mx, &mx64, &ab, &wa, &wx);
    igamma_large(&lmx, &lmx64, &lwa, &lwx);
    if (getenv("TJ_VMATH_SAMPLES"))
        printf("igamma(c)  a (0, 100], x [0, 400] f32 max %.3f ulp at (%g, %g), %.3g abs below "
               "1e-3; f64 max %.1f ulp\n"
               "igamma(c)  a [20, 1e4], x a +- 40 sqrt(a) f32 max %.3f ulp at (%g, %g); f64 max "
               "%.1f ulp\n", mx, wa, wx, ab, mx64, lmx, lwa, lwx, lmx64);
    if (mx > 1.0 || ab > 1e-9 || mx64 > 16384)
        fail_msg("igamma: %.3f ulp at (%g, %g), %.3g abs, f64 %.1f ulp", mx, wa, wx, ab, mx64);
    if (lmx > 1.0 || lmx64 > 4096)
        fail_msg("igamma, large a: %.3f ulp at (%g, %g), f64 %.1f ulp", lmx, lwa, lwx, lmx64);
    /* PyTorch's special values */
    assert_true(vm_igamma_f32(0, 1) == 1.0f && vm_igammac_f32(0, 1) == 0.0f);
    assert_true(vm_igamma_f32(2, 0) == 0.0f && vm_igammac_f32(2, 0) == 1.0f);
    assert_true(vm_igamma_f32(2, INFINITY) == 1.0f && vm_igammac_f32(INFINITY, 3) == 1.0f);
    assert_true(isnan(vm_igamma_f32(-1, 1)) && isnan(vm_igammac_f32(1, -1)) &&
                isnan(vm_igamma_f32(0, 0)) && isnan(vm_igamma_f32(INFINITY, INFINITY)));
    assert_true(isnan(vm_igamma_f64(NAN, 1)) && vm_igammac_f64(1, 0) == 1.0);
    assert_true(vm_igamma_f32(1e30f, 1e20f) == 0.0f && vm_igammac_f32(1e5f, 1e30f) == 0.0f);
}

/* vm_erfcd (igamma's f32 column) against erfcl, in ulp of a double */
static void test_erfcd(void **state)
{
    (void)state;
    int64_t n = samples() * 5;
    double mx = 0, wx = 0;
    for (int64_t k = 0; k <= n; k++) {
        double x = -6.0 + 32.5 * (double)k / (double)n;
        double e = ulp_err(vm_erfcd(x), erfcl(x), 53);
        if (e > mx)
            mx = e, wx = x;
    }
    if (getenv("TJ_VMATH_SAMPLES"))
        printf("erfcd      [-6, 26.5] max %.3f ulp (double) at %.17g\n", mx, wx);
    if (mx > 12.0)
        fail_msg("erfcd: %.3f ulp at %.17g", mx, wx);
    assert_true(vm_erfcd(30.0) == 0.0 && vm_erfcd(-30.0) == 2.0 && isnan(vm_erfcd(NAN)));
    assert_true(vm_erfcd(INFINITY) == 0.0 && vm_erfcd(0.0) == 1.0);
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
        cmocka_unit_test(test_erfcd),
        cmocka_unit_test(test_frexp_exact), cmocka_unit_test(test_unary_specials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
