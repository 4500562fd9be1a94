/* test_vmath.c - accuracy of ir/vmath.h. Each f32 formula is compared
 * with libm in double over a sweep of its range (every k-th float in order,
 * so every binade is covered, plus a linear sweep of the central part) and
 * its error in ulp of the float result must stay within the bound stated in
 * the comment above it. The exact functions (rounding, fmod, max/min, ...)
 * must match bit for bit, special values included.
 * TJ_VMATH_SAMPLES=n sets the floats per sweep (default 200000) and prints
 * each measured maximum: that is how the stated bounds were measured. */
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

/* ---- measuring --------------------------------------------------------------------- */

/* |got - ref| in ulp of ref as a float (denormal spacing below FLT_MIN).
 * NaN must give NaN, and a ref beyond the float range must give that inf. */
static double ulp_err(float got, double ref)
{
    if (isnan(ref))
        return isnan(got) ? 0 : INFINITY;
    if (isinf((float)ref))
        return got == (float)ref ? 0 : INFINITY;
    if (!isfinite(got))
        return INFINITY;
    int e;
    frexp(ref, &e);
    double u = fmax(ldexp(1.0, e - 24), ldexp(1.0, -149));
    return fabs((double)got - ref) / u;
}

/* Floats in order: a monotone map from float to int64 and back. */
static int64_t ord(float x)
{
    uint32_t u = vm_bits_f32(x);
    return (u >> 31) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

static float unord(int64_t o)
{
    return vm_from_bits_f32(o < 0 ? (uint32_t)(-o) | 0x80000000u : (uint32_t)o);
}

static int64_t samples(void)
{
    const char *s = getenv("TJ_VMATH_SAMPLES");
    return s && atoll(s) > 0 ? atoll(s) : 200000;
}

typedef float (*fn1)(float);
typedef double (*ref1)(double);

typedef struct {
    const char *name;
    fn1 f;
    ref1 ref;
    float lo, hi;     /* the range the bound is stated for */
    double bound;     /* max ulp, as stated in vmath.h */
} case1;

static double sweep_max(const case1 *c, float *worst)
{
    double mx = 0;
    int64_t n = samples(), a = ord(c->lo), b = ord(c->hi);
    int64_t step = (b - a) / n > 1 ? (b - a) / n : 1;
    for (int64_t o = a; o <= b; o += step) {
        float x = unord(o);
        double e = ulp_err(c->f(x), c->ref(x));
        if (e > mx)
            mx = e, *worst = x;
    }
    /* the central part, linearly */
    float lo = fmaxf(c->lo, -16.0f), hi = fminf(c->hi, 16.0f);
    for (int64_t k = 0; k <= n && lo < hi; k++) {
        float x = lo + (hi - lo) * (float)k / (float)n;
        double e = ulp_err(c->f(x), c->ref(x));
        if (e > mx)
            mx = e, *worst = x;
    }
    return mx;
}

static void check_cases(const case1 *cs, size_t n)
{
    int bad = -1;
    float bad_x = 0;
    double bad_e = 0;
    for (size_t i = 0; i < n; i++) {
        float worst = 0;
        double mx = sweep_max(&cs[i], &worst);
        if (getenv("TJ_VMATH_SAMPLES"))
            printf("%-10s [%g, %g] max %.3f ulp at %.9g\n", cs[i].name, cs[i].lo, cs[i].hi, mx,
                   worst);
        if (mx > cs[i].bound && bad < 0)
            bad = (int)i, bad_x = worst, bad_e = mx;
    }
    if (bad >= 0)
        fail_msg("%s: %.3f ulp at %.9g (got %.9g, libm %.9g), bound %.2f", cs[bad].name, bad_e,
                 bad_x, cs[bad].f(bad_x), cs[bad].ref(bad_x), cs[bad].bound);
}

/* ---- the unary f32 functions ----------------------------------------------------------- */
#define W(name) static float w_##name(float x) { return vm_##name##_f32(x); }
W(exp) W(exp2) W(expm1) W(log) W(log2) W(log10) W(log1p) W(sqrt) W(sin) W(cos) W(tan) W(asin)
W(acos) W(atan) W(sinh) W(cosh) W(tanh) W(asinh) W(acosh) W(atanh) W(erf) W(erfc) W(sigmoid)
W(gelu) W(gelu_tanh) W(silu) W(softplus) W(cbrt) W(erfinv) W(lgamma) W(digamma)
#undef W

static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_gelu(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double r_gelu_tanh(double x)
{
    double u = sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    return x / (1 + exp(-2 * u));   /* = x (1 + tanh u) / 2 without its cancellation */
}
static double r_silu(double x) { return x / (1 + exp(-x)); }
static double r_softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
/* erfinv in double by Newton on libm's erf/erfc (vm_erfinv_f64), checked
 * here against erf itself */
static double r_erfinv(double x) { return vm_erfinv_f64(x); }
/* digamma in double: the f64 column (libm's log, 16-term series), checked
 * against lgamma's difference quotient in test_gamma_f64 */
static double r_digamma(double x) { return vm_digamma_f64(x); }

#define BIG FLT_MAX
#define ERFINV_ULP 3.5
static const case1 unary_cases[] = {
    {"exp", w_exp, exp, -104, 89, 1.1},
    {"exp2", w_exp2, exp2, -151, 129, 1.0},
    {"expm1", w_expm1, expm1, -20, 89, 1.5},
    {"log", w_log, log, 0, BIG, 0.9},
    {"log2", w_log2, log2, 0, BIG, 1.4},
    {"log10", w_log10, log10, 0, BIG, 2.1},
    {"log1p", w_log1p, log1p, -1, BIG, 2.4},
    {"sqrt", w_sqrt, sqrt, 0, BIG, 0.5},
    {"sin", w_sin, sin, -BIG, BIG, 0.6},
    {"cos", w_cos, cos, -BIG, BIG, 0.6},
    {"tan", w_tan, tan, -BIG, BIG, 0.8},
    {"asin", w_asin, asin, -1, 1, 2.1},
    {"acos", w_acos, acos, -1, 1, 1.4},
    {"atan", w_atan, atan, -BIG, BIG, 2.3},
    {"sinh", w_sinh, sinh, -90, 90, 1.7},
    {"cosh", w_cosh, cosh, -90, 90, 1.5},
    {"tanh", w_tanh, tanh, -BIG, BIG, 2.0},
    {"asinh", w_asinh, asinh, -BIG, BIG, 2.8},
    {"acosh", w_acosh, acosh, 1, BIG, 3.1},
    {"atanh", w_atanh, atanh, -1, 1, 3.2},
    {"erf", w_erf, erf, -BIG, BIG, 2.5},
    {"erfc", w_erfc, erfc, -BIG, BIG, 4.3},
    {"sigmoid", w_sigmoid, r_sigmoid, -BIG, BIG, 2.8},
    {"gelu", w_gelu, r_gelu, -13, BIG, 5.4},
    {"gelu_tanh", w_gelu_tanh, r_gelu_tanh, -1, BIG, 2.8},
    {"gelu_tanh", w_gelu_tanh, r_gelu_tanh, -3, -1, 17.0},
    {"gelu_tanh", w_gelu_tanh, r_gelu_tanh, -5, -3, 50.0},
    {"silu", w_silu, r_silu, -87, BIG, 3.1},
    {"softplus", w_softplus, r_softplus, -BIG, BIG, 2.8},
    {"cbrt", w_cbrt, cbrt, -BIG, BIG, 0.51},
    {"erfinv", w_erfinv, r_erfinv, -1, 1, ERFINV_ULP},
    {"lgamma", w_lgamma, lgamma, 2.5, BIG, 0.6},
    {"lgamma", w_lgamma, lgamma, 0, 0.9, 0.6},
    {"digamma", w_digamma, r_digamma, 2, BIG, 0.6},
    {"digamma", w_digamma, r_digamma, 0, 1.3, 0.6},
};

static void test_unary_ulp(void **state)
{
    (void)state;
    check_cases(unary_cases, sizeof unary_cases / sizeof *unary_cases);
}

/* NaN, infinities, zeros, the float extremes: within the bound too (or the
 * same NaN/inf class), outside the stated ranges as well. */
/* vm_sigmoid_f32 divides at a 2^-64 scale and scales back once: every float
 * of [-110, -80], where the result turns denormal and then 0, within the
 * bound in denormal ulps, 0 exactly where sigmoid rounds to 0, and the
 * result never above 1 or below 0 on a sweep of all floats. */
static void test_sigmoid_denormal_results(void **state)
{
    (void)state;
    for (int64_t o = ord(-110.0f); o <= ord(-80.0f); o++) {
        float x = unord(o), got = vm_sigmoid_f32(x);
        double want = r_sigmoid(x);
        if (ulp_err(got, want) > 2.8)
            fail_msg("sigmoid(%.9g) = %a, libm %a: %.2f ulp", x, got, want, ulp_err(got, want));
        if ((float)want == 0.0f && got != 0.0f)
            fail_msg("sigmoid(%.9g) = %a, want 0", x, got);
    }
    int64_t step = (ord(INFINITY) - ord(-INFINITY)) / 1000003;
    for (int64_t o = ord(-INFINITY); o <= ord(INFINITY); o += step) {
        float got = vm_sigmoid_f32(unord(o));
        if (!(got >= 0.0f && got <= 1.0f))
            fail_msg("sigmoid(%.9g) = %.9g, outside [0, 1]", unord(o), got);
    }
}

/* The parts tanh and sigmoid are built from, densely: vm_tanh_f32 reduces
 * with ln2 in one float (vm_exp_reduce1_f32) and vm_sigmoid_f32 uses the
 * degree-4 polynomial (vm_expr_poly4_f32). Every 64th float of tanh's
 * [0, 10] (where 1 - e^-2x cancels and n is small; beyond 10 tanh is 1
 * within half an ulp), every 128th of sigmoid's [-104, 17] (denormal to 1),
 * each within its stated bound, and 1 + r + r^2 p4(r) within 2^-26 of e^r
 * relative over every 16th float of [-ln2/2, ln2/2]. */
static void test_tanh_sigmoid_dense(void **state)
{
    (void)state;
    double mt = 0, ms = 0, mp = 0;
    float wt = 0, ws = 0, wp = 0;
    for (int64_t o = ord(0.0f); o <= ord(10.0f); o += 64) {
        float x = unord(o);
        double e = ulp_err(vm_tanh_f32(x), tanh((double)x));
        if (e > mt)
            mt = e, wt = x;
    }
    for (int64_t o = ord(-104.0f); o <= ord(17.0f); o += 128) {
        float x = unord(o);
        double e = ulp_err(vm_sigmoid_f32(x), r_sigmoid(x));
        if (e > ms)
            ms = e, ws = x;
    }
    for (int64_t o = ord(-0.3466f); o <= ord(0.3466f); o += 16) {
        float r = unord(o);
        double p = 1.0 + r + (double)r * r * vm_expr_poly4_f32(r);
        double e = fabs(p - exp((double)r)) / exp((double)r);
        if (e > mp)
            mp = e, wp = r;
    }
    if (getenv("TJ_VMATH_SAMPLES"))
        printf("dense: tanh %.3f ulp at %.9g, sigmoid %.3f ulp at %.9g, poly4 2^%.2f at %.9g\n", mt, wt,
               ms, ws, log2(mp), wp);
    if (mt > 2.0)
        fail_msg("tanh(%.9g): %.3f ulp, bound 2.0", wt, mt);
    if (ms > 2.8)
        fail_msg("sigmoid(%.9g): %.3f ulp, bound 2.8", ws, ms);
    if (mp > 0x1p-26)
        fail_msg("1 + r + r^2 p4(r) at r = %.9g: 2^%.2f relative", wp, log2(mp));
}

static void test_unary_specials(void **state)
{
    (void)state;
    const float xs[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, FLT_MIN, -FLT_MIN,
                        FLT_TRUE_MIN, -FLT_TRUE_MIN, FLT_MAX, -FLT_MAX, 1.0f, -1.0f, 1e-30f,
                        -1e-30f, 200.0f, -200.0f};
    for (size_t i = 0; i < sizeof unary_cases / sizeof *unary_cases; i++) {
        const case1 *c = &unary_cases[i];
        for (size_t k = 0; k < sizeof xs / sizeof *xs; k++) {
            float got = c->f(xs[k]);
            double want = c->ref(xs[k]);
            if (fabs(want) < FLT_MIN && fabs(want) > 0 && !strcmp(c->name, "silu"))
                continue;   /* silu's bound is for results >= FLT_MIN */
            if (ulp_err(got, want) > c->bound)
                fail_msg("%s(%g) = %.9g, libm %.9g", c->name, xs[k], got, want);
            if (want == 0 && got != 0)
                fail_msg("%s(%g) = %g, want 0", c->name, xs[k], got);
        }
    }
    /* signed zeros where the odd functions keep them */
    fn1 odd[] = {w_sin, w_tan, w_atan, w_sinh, w_tanh, w_asinh, w_atanh, w_erf, w_expm1, w_log1p,
                 w_asin};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++)
        if (!signbit(odd[i](-0.0f)) || signbit(odd[i](0.0f)))
            fail_msg("odd function %zu loses the sign of zero", i);
}

/* ---- exact functions -------------------------------------------------------------------- */
static bool same(float a, float b)
{
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

static void test_rounding_exact(void **state)
{
    (void)state;
    int64_t n = samples(), a = ord(-FLT_MAX), b = ord(FLT_MAX), step = (b - a) / (4 * n);
    const float extra[] = {0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 0.49999997f, 8388607.5f,
                           -8388607.5f, 8388608.0f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN};
    for (int64_t o = a; o <= b + (int64_t)(sizeof extra / sizeof *extra); o += step) {
        float x = o <= b ? unord(o) : extra[o - b - 1];
        if (o > b)
            step = 1;
        if (!same(vm_floor_f32(x), floorf(x)) || !same(vm_ceil_f32(x), ceilf(x)) ||
            !same(vm_trunc_f32(x), truncf(x)) || !same(vm_round_f32(x), nearbyintf(x)))
            fail_msg("rounding %.9g: floor %g ceil %g trunc %g round %g", x, vm_floor_f32(x),
                     vm_ceil_f32(x), vm_trunc_f32(x), vm_round_f32(x));
        if (!same(vm_abs_f32(x), fabsf(x)) || vm_isinf_f32(x) != (isinf(x) != 0) ||
            vm_isfinite_f32(x) != (isfinite(x) != 0))
            fail_msg("abs/isinf/isfinite %.9g", x);
        float sg = x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f;
        if (vm_sign_f32(x) != sg || vm_sign_f64(x) != sg)
            fail_msg("sign %.9g", x);
    }
    assert_true(same(vm_relu_f32(-0.0f), -0.0f) && isnan(vm_relu_f32(NAN)) &&
                vm_relu_f32(-3.0f) == 0.0f && vm_relu_f32(2.0f) == 2.0f);
}

/* A small deterministic generator of float bit patterns. */
static uint32_t rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

static void test_fmod_remainder_exact(void **state)
{
    (void)state;
    uint64_t s = 1;
    int64_t n = samples() * 4;
    for (int64_t k = 0; k < n; k++) {
        float x = vm_from_bits_f32(rng(&s)), y = vm_from_bits_f32(rng(&s));
        if (k % 4 == 1)
            y = (float)(int)(rng(&s) % 19) - 9.0f;               /* small, zero */
        if (k % 4 == 2)
            x = (float)(int)(rng(&s) % 2001) - 1000.0f;
        float want = fmodf(x, y);
        if (!same(vm_fmod_f32(x, y), want))
            fail_msg("fmod(%.9g, %.9g) = %.9g, want %.9g", x, y, vm_fmod_f32(x, y), want);
        float r = want != 0 && ((want < 0) != (y < 0)) ? want + y : want;
        if (!same(vm_remainder_f32(x, y), r))
            fail_msg("remainder(%.9g, %.9g) = %.9g, want %.9g", x, y, vm_remainder_f32(x, y), r);
    }
    const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 3.0f, FLT_TRUE_MIN};
    for (size_t i = 0; i < 9; i++)
        for (size_t j = 0; j < 9; j++)
            if (!same(vm_fmod_f32(sp[i], sp[j]), fmodf(sp[i], sp[j])))
                fail_msg("fmod(%g, %g)", sp[i], sp[j]);
    /* Python semantics of remainder */
    assert_true(vm_remainder_f32(5, -3) == -1 && vm_remainder_f32(-5, 3) == 1 &&
                same(vm_remainder_f32(-0.0f, 2), -0.0f) && vm_remainder_f32(3, INFINITY) == 3 &&
                isnan(vm_remainder_f32(5, 0)));
    assert_true(vm_remainder_f64(5, -3) == -1 && vm_remainder_f64(-5, 3) == 1);
}

static void test_max_min(void **state)
{
    (void)state;
    const float v[] = {NAN, -INFINITY, -1.0f, -0.0f, 0.0f, 2.0f, INFINITY};
    for (size_t i = 0; i < 7; i++)
        for (size_t j = 0; j < 7; j++) {
            float a = v[i], b = v[j];
            float mx = vm_max_f32(a, b), mn = vm_min_f32(a, b);
            if (isnan(a) || isnan(b)) {
                assert_true(isnan(mx) && isnan(mn) && isnan(vm_max_f64(a, b)) &&
                            isnan(vm_min_f64(a, b)));
                continue;
            }
            assert_true(mx == fmaxf(a, b) && mn == fminf(a, b));
            assert_true(vm_max_f64(a, b) == fmax(a, b) && vm_min_f64(a, b) == fmin(a, b));
        }
}

static void test_pow_ulp(void **state)
{
    (void)state;
    int64_t n = samples() / 100, a = ord(1e-30f), b = ord(1e30f), step = (b - a) / n;
    double mx = 0;
    float wx = 0, wy = 0;
    for (int64_t o = a; o <= b; o += step) {
        for (int k = -200; k <= 200; k++) {
            float x = unord(o), y = (float)k * 0.37f;
            if (k % 3 == 0)
                x = -x, y = (float)(k / 3);                          /* negative base */
            double e = ulp_err(vm_pow_f32(x, y), pow(x, y));
            if (e > mx)
                mx = e, wx = x, wy = y;
        }
    }
    if (getenv("TJ_VMATH_SAMPLES"))
        printf("pow        max %.3f ulp at (%.9g, %.9g)\n", mx, wx, wy);
    if (mx > 1.0)
        fail_msg("pow(%.9g, %.9g) = %.9g: %.3f ulp", wx, wy, vm_pow_f32(wx, wy), mx);
    /* C99 special cases */
    const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, 3.0f, -3.0f,
                        2.5f, INFINITY, -INFINITY, NAN, 1e-45f};
    for (size_t i = 0; i < 15; i++)
        for (size_t j = 0; j < 15; j++) {
            float x = sp[i], y = sp[j], got = vm_pow_f32(x, y), want = powf(x, y);
            if (!same(got, want))
                fail_msg("pow(%g, %g) = %g, want %g", x, y, got, want);
        }
}

static void test_atan2_ulp(void **state)
{
    (void)state;
    int64_t n = (int64_t)sqrt((double)samples() * 5);
    int64_t a = ord(-FLT_MAX), b = ord(FLT_MAX), step = (b - a) / n;
    double mx = 0;
    float wy = 0, wx = 0;
    for (int64_t i = a; i <= b; i += step)
        for (int64_t j = a; j <= b; j += step) {
            float y = unord(i), x = unord(j);
            double e = ulp_err(vm_atan2_f32(y, x), atan2(y, x));
            if (e > mx)
                mx = e, wy = y, wx = x;
        }
    if (getenv("TJ_VMATH_SAMPLES"))
        printf("atan2      max %.3f ulp at (%.9g, %.9g)\n", mx, wy, wx);
    if (mx > 2.7)
        fail_msg("atan2(%.9g, %.9g): %.3f ulp", wy, wx, mx);
    const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e-45f};
    for (size_t i = 0; i < 8; i++)
        for (size_t j = 0; j < 8; j++) {
            float got = vm_atan2_f32(sp[i], sp[j]), want = (float)atan2(sp[i], sp[j]);
            if (!same(got, want))
                fail_msg("atan2(%g, %g) = %.9g, want %.9g", sp[i], sp[j], got, want);
        }
}

static void test_int_formulas(void **state)
{
    (void)state;
    /* torch: negative exponents give 0 except for bases 1 and -1 */
    assert_int_equal(vm_ipow(2, 10), 1024);
    assert_int_equal(vm_ipow(-3, 3), -27);
    assert_int_equal(vm_ipow(5, 0), 1);
    assert_int_equal(vm_ipow(0, 0), 1);
    assert_int_equal(vm_ipow(2, -1), 0);
    assert_int_equal(vm_ipow(1, -5), 1);
    assert_int_equal(vm_ipow(-1, -3), -1);
    assert_int_equal(vm_ipow(-1, -4), 1);
    assert_int_equal(vm_ipow(0, -1), 0);
    assert_int_equal((int32_t)vm_ipow(3, 21), (int32_t)10460353203ll);   /* wraps like i32 */
    /* Python %: sign of the divisor; 0 for a zero divisor */
    assert_int_equal(vm_iremainder(5, -3), -1);
    assert_int_equal(vm_iremainder(-5, 3), 1);
    assert_int_equal(vm_iremainder(-6, 3), 0);
    assert_int_equal(vm_iremainder(7, 2), 1);
    assert_int_equal(vm_iremainder(7, 0), 0);
    assert_int_equal(vm_iremainder(INT64_MIN, -1), 0);
}

/* ---- the prims of vmath_prims.h ------------------------------------------------------------ */

static void test_erfinv_f64(void **state)
{
    (void)state;
    /* the reference itself: erf(erfinv(x)) == x, erfc in the tail */
    for (int k = -999; k <= 999; k++) {
        double x = k / 1000.0, y = vm_erfinv_f64(x);
        assert_true(fabs(erf(y) - x) <= 4e-16 * fmax(fabs(x), 1e-3));
    }
    for (double t = 1e-3; t > 1e-300; t *= 1e-7) {
        double y = vm_erfinv_f64(1 - t);
        if (1 - t < 1)
            assert_true(fabs(erfc(y) - (1 - (1 - t))) <= 1e-14 * (1 - (1 - t)));
    }
    assert_true(vm_erfinv_f64(1) == INFINITY && vm_erfinv_f64(-1) == -INFINITY);
    assert_true(isnan(vm_erfinv_f64(1.5)) && isnan(vm_erfinv_f64(NAN)));
    assert_true(signbit(vm_erfinv_f64(-0.0)) && vm_erfinv_f32(1.0f) == INFINITY &&
                vm_erfinv_f32(-1.0f) == -INFINITY && isnan(vm_erfinv_f32(1.0000001f)));
}

static void test_gamma_f64(void **state)
{
    (void)state;
    for (double x = -9.87; x < 40; x += 0.0731) {
        if (x < 0 && fabs(x - nearbyint(x)) < 0.05)
            continue;   /* the difference quotient is no reference next to a pole */
        if (fabs(vm_lgamma_f64(x) - lgamma(x)) > 1e-13 * fmax(1, fabs(lgamma(x))))
            fail_msg("lgamma_f64(%g) = %.17g, libm %.17g", x, vm_lgamma_f64(x), lgamma(x));
        double h = 1e-5, d = (lgamma(x + h) - lgamma(x - h)) / (2 * h);
        if (fabs(vm_digamma_f64(x) - d) > 1e-6 * fmax(1, fabs(d)))
            fail_msg("digamma_f64(%g) = %.17g, lgamma' %.17g", x, vm_digamma_f64(x), d);
    }
    assert_true(vm_lgamma_f64(-3) == INFINITY && vm_lgamma_f64(0) == INFINITY &&
                vm_lgamma_f64(-INFINITY) == INFINITY && vm_lgamma_f32(-3.0f) == INFINITY &&
                vm_lgamma_f32(-0.0f) == INFINITY);
    assert_true(isnan(vm_digamma_f64(-2)) && vm_digamma_f64(0.0) == -INFINITY &&
                vm_digamma_f64(-0.0) == INFINITY && isnan(vm_digamma_f32(-2.0f)) &&
                vm_digamma_f32(0.0f) == -INFINITY && vm_digamma_f32(INFINITY) == INFINITY);
    for (float x = -7.9f; x < 0; x += 0.37f)   /* the reflection, to float accuracy */
        if (fabs(vm_lgamma_f32(x) - lgamma(x)) > 2e-7 * fmax(1, fabs(lgamma(x))))
            fail_msg("lgamma(%g) = %.9g, libm %.9g", x, vm_lgamma_f32(x), lgamma(x));
}

static void test_hypot_ulp(void **state)
{
    (void)state;
    int64_t n = (int64_t)sqrt((double)samples() * 5);
    int64_t a = ord(-FLT_MAX), b = ord(FLT_MAX), step = (b - a) / n;
    double mx = 0;
    for (int64_t i = a; i <= b; i += step)
        for (int64_t j = a; j <= b; j += step) {
            float x = unord(i), y = unord(j);
            double e = ulp_err(vm_hypot_f32(x, y), hypot(x, y));
            if (e > mx)
                mx = e;
        }
    if (getenv("TJ_VMATH_SAMPLES"))
        printf("hypot      max %.3f ulp\n", mx);
    assert_true(mx <= 0.5001);
    const float sp[] = {0.0f, -0.0f, 1.0f, INFINITY, -INFINITY, NAN, FLT_TRUE_MIN, FLT_MAX};
    for (size_t i = 0; i < 8; i++)
        for (size_t j = 0; j < 8; j++)
            if (!same(vm_hypot_f32(sp[i], sp[j]), hypotf(sp[i], sp[j])))
                fail_msg("hypot(%g, %g) = %g", sp[i], sp[j], vm_hypot_f32(sp[i], sp[j]));
}

static void test_prims_exact(void **state)
{
    (void)state;
    uint64_t s = 7;
    const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_TRUE_MIN,
                        -FLT_TRUE_MIN, FLT_MAX, -FLT_MAX, FLT_MIN, 2.5f};
    for (int64_t k = 0; k < samples() * 2 + 14 * 14; k++) {
        float a, b;
        if (k < 14 * 14)
            a = sp[k / 14], b = sp[k % 14];
        else
            a = vm_from_bits_f32(rng(&s)), b = k % 3 ? vm_from_bits_f32(rng(&s)) : a;
        /* quiet NaNs: glibc's fmax gives NaN for a signaling one */
        a = isnan(a) ? copysignf(NAN, a) : a;
        b = isnan(b) ? copysignf(NAN, b) : b;
        if (!same(vm_nextafter_f32(a, b), nextafterf(a, b)))
            fail_msg("nextafter(%g, %g) = %a, want %a", a, b, vm_nextafter_f32(a, b), nextafterf(a, b));
        /* a tie of signed zeros gives a, as PyTorch's fmax (glibc's gives +0 / -0) */
        if (!same(vm_fmax_f32(a, b), a == b ? a : fmaxf(a, b)) ||
            !same(vm_fmin_f32(a, b), a == b ? a : fminf(a, b)))
            fail_msg("fmax/fmin(%g, %g)", a, b);
        if (!same(vm_copysign_f32(a, b), copysignf(a, b)))
            fail_msg("copysign(%g, %g)", a, b);
        if (vm_signbit_f32(a) != (signbit(a) != 0) || vm_signbit_f64(a) != (signbit(a) != 0))
            fail_msg("signbit(%g)", a);
    }
    /* cbrt keeps the sign of zero and passes inf and NaN */
    assert_true(same(vm_cbrt_f32(-0.0f), -0.0f) && vm_cbrt_f32(-INFINITY) == -INFINITY &&
                isnan(vm_cbrt_f32(NAN)) && vm_cbrt_f32(-27.0f) == -3.0f);
}

static void test_int_prims(void **state)
{
    (void)state;
    assert_int_equal(vm_ishl(1, 3, 32), 8);
    assert_int_equal(vm_ishl(1, 32, 32), 0);            /* count >= bits: 0 */
    assert_int_equal(vm_ishl(5, -1, 32), 0);            /* negative count: 0 */
    assert_int_equal((int32_t)vm_ishl(1, 31, 32), INT32_MIN);
    assert_int_equal(vm_ishl(-1, 63, 64), INT64_MIN);   /* no undefined behavior */
    assert_int_equal(vm_ishr(-8, 1, 32), -4);
    assert_int_equal(vm_ishr(-8, 40, 32), -1);           /* the sign fill */
    assert_int_equal(vm_ishr(8, 40, 32), 0);
    assert_int_equal(vm_ishr(8, -2, 32), 0);
    assert_int_equal(vm_igcd(12, -18, 32), 6);
    assert_int_equal(vm_igcd(0, -5, 64), 5);
    assert_int_equal(vm_igcd(0, 0, 8), 0);
    assert_int_equal(vm_igcd(INT32_MIN, 0, 32), INT32_MIN);   /* wraps, as PyTorch */
    assert_int_equal(vm_igcd(-128, 64, 8), 64);
    assert_int_equal(vm_igcd(INT64_MIN, -1, 64), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_ulp),        cmocka_unit_test(test_unary_specials),
        cmocka_unit_test(test_sigmoid_denormal_results),
        cmocka_unit_test(test_tanh_sigmoid_dense),
        cmocka_unit_test(test_rounding_exact),   cmocka_unit_test(test_fmod_remainder_exact),
        cmocka_unit_test(test_max_min),          cmocka_unit_test(test_pow_ulp),
        cmocka_unit_test(test_atan2_ulp),        cmocka_unit_test(test_int_formulas),
        cmocka_unit_test(test_erfinv_f64),       cmocka_unit_test(test_hypot_ulp),
        cmocka_unit_test(test_gamma_f64),
        cmocka_unit_test(test_prims_exact),      cmocka_unit_test(test_int_prims),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
