/* vmath.h - the scalar formulas of the pointwise ops, part of the op table
 * (in ir/ so that the runtime, the passes and the JIT share them: the f32/f64/int columns
 * of the UNARY and BINARY rows of ir/ops.def name these; the softmax, norm
 * and random kernels use some of them too).
 *
 * Every function is `static inline`, plain C11 with no intrinsics, and the f32
 * transcendentals call no libm: range reduction, a minimax polynomial and 2^n
 * made from exponent bits. sin/cos/tan (exact Payne-Hanek reduction), pow and
 * fmod work in double internally, in 64-bit lanes only. Special cases (NaN,
 * +-inf, overflow, underflow) are selects, not branches, so loops over any of
 * them vectorize with gcc (AVX-512 with the kernels' target_clones; checked
 * with objdump), and the same header compiles with clang to the LLVM bitcode
 * the JIT inlines (use -ffp-contract=off there to get the eager bits: gcc
 * under -std=c11 does not contract a*b+c into an fma).
 *
 * Vectorizing with gcc 12 needs care: the build passes -fno-trapping-math
 * (else `c ? x * k : x` stays a branch); selects pick between values computed
 * before them; predicates on a possibly loop-invariant operand (pow's y) are
 * integers, not float selects.
 *
 * Polynomials and range reductions use fmaf/fma explicitly: one rounding per
 * step, which is both more accurate and about 1.5x faster than a multiply and
 * an add (the suite's exp-bound kernels measured 72 vs 49 cycles per 16
 * floats). Explicit calls, not compiler contraction, keep eager and JIT bits
 * identical: gcc and LLVM both turn fmaf into vfmadd on x86-64-v3/v4, where
 * contraction would pick different pairs in each compiler. On a CPU without
 * FMA (the "default" target_clones variant) fmaf is a correctly rounded libm
 * call: the same bits, slower.
 *
 * Accuracy: the bound above each f32 function is its max error in ulp of the
 * float result against libm in double (so it includes the final rounding),
 * measured over a dense sweep of the stated range; tests/test_vmath.c
 * re-measures it and asserts the bound.
 */
#ifndef TJ_VMATH_H
#define TJ_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Helpers that gcc would otherwise keep out of line where a loop calls them
 * many times (a call in the loop stops its vectorization). */
#define VM_FORCE_INLINE static inline __attribute__((always_inline))

/* ---- bits ------------------------------------------------------------------ */
static inline uint32_t vm_bits_f32(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float vm_from_bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* |x| with the sign of s. */
static inline float vm_copysign_f32(float x, float s)
{
    return vm_from_bits_f32((vm_bits_f32(x) & 0x7fffffffu) | (vm_bits_f32(s) & 0x80000000u));
}

/* exact; fabsf, not a bit mask, so compilers know the result is not negative
 * and drop the clamps and selects that only matter for negative arguments. */
static inline float vm_abs_f32(float x) { return fabsf(x); }

/* 2^n for n in [-126, 127], from exponent bits. */
static inline float vm_pow2i_f32(int32_t n)
{
    return vm_from_bits_f32((uint32_t)(n + 127) << 23);
}

/* Round to nearest even, for |v| < 2^22 (float) or 2^51 (double). */
static inline float vm_rint_small_f32(float v) { return (v + 12582912.0f) - 12582912.0f; }
static inline double vm_rint_small_f64(double v)
{
    return (v + 6755399441055744.0) - 6755399441055744.0;
}

/* 2^n for n in [-1022, 1023]. */
static inline double vm_pow2i_f64(int64_t n)
{
    uint64_t u = (uint64_t)(n + 1023) << 52;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* ---- exp family ---------------------------------------------------------------- */
/* (e^r - 1 - r) / r^2 for r in [-ln2/2, ln2/2] (Cephes expf polynomial). */
static inline float vm_expr_poly_f32(float r)
{
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    return fmaf(p, r, 5.0000001201e-1f);
}

/* e^r for r in [-ln2/2, ln2/2]. */
static inline float vm_expr_f32(float r) { return fmaf(vm_expr_poly_f32(r), r * r, r) + 1.0f; }

/* The same quotient one degree lower (Chebyshev interpolation at 5 nodes):
 * e^r = 1 + r + r^2 p(r) to 2^-26.6 relative (the degree-5 one: 2^-32), one
 * fma less, for formulas whose own error leaves room for it (sigmoid). */
static inline float vm_expr_poly4_f32(float r)
{
    float p = 1.3926176120e-3f;
    p = fmaf(p, r, 8.3631730745e-3f);
    p = fmaf(p, r, 4.1666554662e-2f);
    p = fmaf(p, r, 1.6666577026e-1f);
    return fmaf(p, r, 5.0e-1f);
}

/* x = n ln2 + r, |r| <= ln2/2, for |x| < 2^22 ln2: n rounded to nearest with
 * the 1.5*2^23 trick (returned in *ni), ln2 split Cody-Waite style (n times
 * the high part is exact). */
static inline float vm_exp_reduce_f32(float x, int32_t *ni)
{
    float t = fmaf(x, 1.44269504088896341f, 12582912.0f);
    float n = t - 12582912.0f;
    *ni = (int32_t)(vm_bits_f32(t) - 0x4b400000u);
    float r = fmaf(n, -0.693359375f, x);
    return fmaf(n, 2.12194440e-4f, r);
}

/* The same with ln2 in one float (one fma less): r is off by up to |n| 1.9e-9,
 * i.e. e^x by |n| 2^-29 relative, which only formulas that add e^x (x <= 0)
 * to 1 can afford: in tanh's 1 -+ e^x the error is |n| 2^(n-29) absolute,
 * at most 2^-30 (n = -1, -2) and falling with |n|. */
static inline float vm_exp_reduce1_f32(float x, int32_t *ni)
{
    float t = fmaf(x, 1.44269504088896341f, 12582912.0f);
    float n = t - 12582912.0f;
    *ni = (int32_t)(vm_bits_f32(t) - 0x4b400000u);
    return fmaf(n, -0.693147182464599609375f, x);
}

/* e^x * 2^k for small k >= -2: x = n ln2 + r, n rounded with the 1.5*2^23
 * trick, ln2 split Cody-Waite style, and 2^(n+k) applied in two halves so
 * results that overflow a single scale factor, or are denormal, stay right.
 * NaN passes through; overflow gives inf, underflow 0. */
static inline float vm_expk_f32(float x, int32_t k)
{
    float xc = x > 90.0f ? 90.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    int32_t ni;
    float r = vm_exp_reduce_f32(xc, &ni);
    ni += k;
    /* exp(x) rounds to 0 for x <= -104: scale by 2^-127 * 2^-127, which are
     * exact zeros, instead of multiplying denormals (a microcode assist that
     * made masked softmax rows 6x slower). */
    ni = x <= -104.0f ? -254 : ni;
    int32_t n1 = ni >> 1;
    return vm_expr_f32(r) * vm_pow2i_f32(n1) * vm_pow2i_f32(ni - n1);
}

/* max 1.1 ulp on [-104, 89]; inf, 0 and NaN exact. */
static inline float vm_exp_f32(float x) { return vm_expk_f32(x, 0); }

/* max 1.0 ulp on [-151, 129]: 2^x = 2^n 2^r, r in [-1/2, 1/2], degree-6 fit. */
static inline float vm_exp2_f32(float x)
{
    float xc = x > 130.0f ? 130.0f : x;
    xc = xc < -151.0f ? -151.0f : xc;
    float t = xc + 12582912.0f;
    float r = xc - (t - 12582912.0f);
    int32_t ni = (int32_t)(vm_bits_f32(t) - 0x4b400000u);
    float p = 1.5345808060e-04f;
    p = fmaf(p, r, 1.3399930904e-03f);
    p = fmaf(p, r, 9.6184890717e-03f);
    p = fmaf(p, r, 5.5503286421e-02f);
    p = fmaf(p, r, 2.4022646248e-01f);
    p = fmaf(p, r, 6.9314718246e-01f);
    p = fmaf(p, r, 1.0f);
    int32_t n1 = ni >> 1;
    return p * vm_pow2i_f32(n1) * vm_pow2i_f32(ni - n1);
}

/* max 1.5 ulp on [-20, 89]. expm1(x) = 2^n expm1(r) + (2^n - 1), computed as
 * 2 (s expm1(r) + (s - 1/2)) with s = 2^(n-1), so no step overflows early. */
static inline float vm_expm1_f32(float x)
{
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -18.0f ? -18.0f : xc;
    int32_t ni;
    float r = vm_exp_reduce_f32(xc, &ni);
    float p = 1.9861945475e-04f;
    p = fmaf(p, r, 1.3926153770e-03f);
    p = fmaf(p, r, 8.3333458751e-03f);
    p = fmaf(p, r, 4.1666556150e-02f);
    p = fmaf(p, r, 1.6666667163e-01f);
    float em = p * (r * r * r) + r * r * 0.5f + r;
    float s = vm_pow2i_f32(ni - 1);
    float y = 2.0f * (s * em + (s - 0.5f));
    y = x > 88.8f ? INFINITY : y;
    y = x < -17.4f ? -1.0f : y;
    return x == 0.0f ? x : y;     /* keeps -0 */
}

/* ---- log family ------------------------------------------------------------------ */
/* Splits x > 0 (normal or denormal) into x = 2^e (1 + f), f in [sqrt(1/2)-1, sqrt(2)-1),
 * and returns log(1 + f) - f, the small correction (Cephes logf polynomial). */
typedef struct { float f, c, e; } vm_logparts_f32;

static inline vm_logparts_f32 vm_log_split_f32(float x)
{
    int tiny = x < 1.17549435e-38f;
    float xscaled = x * 8388608.0f;
    float xs = tiny ? xscaled : x;
    uint32_t u = vm_bits_f32(xs);
    int32_t e = (int32_t)(u >> 23) - 126 - (tiny ? 23 : 0);
    float m = vm_from_bits_f32((u & 0x007fffffu) | 0x3f000000u);   /* [0.5, 1) */
    int lo = m < 0.707106781186547524f;
    e = lo ? e - 1 : e;
    float m2 = m + m;
    float f = (lo ? m2 : m) - 1.0f;
    float z = f * f;
    float p = 7.0376836292e-2f;
    p = fmaf(p, f, -1.1514610310e-1f);
    p = fmaf(p, f, 1.1676998740e-1f);
    p = fmaf(p, f, -1.2420140846e-1f);
    p = fmaf(p, f, 1.4249322787e-1f);
    p = fmaf(p, f, -1.6668057665e-1f);
    p = fmaf(p, f, 2.0000714765e-1f);
    p = fmaf(p, f, -2.4999993993e-1f);
    p = fmaf(p, f, 3.3333331174e-1f);
    vm_logparts_f32 r = {f, p * f * z - 0.5f * z, (float)e};
    return r;
}

/* The IEEE special cases shared by the logs: x < 0 -> NaN, 0 -> -inf, inf, NaN. */
static inline float vm_log_special_f32(float x, float y)
{
    y = x < 0.0f ? NAN : y;
    y = x == 0.0f ? -INFINITY : y;
    y = x == INFINITY ? INFINITY : y;
    return x != x ? x : y;
}

/* max 0.9 ulp on (0, inf), denormals included. */
static inline float vm_log_f32(float x)
{
    vm_logparts_f32 s = vm_log_split_f32(x);
    float y = s.e * -2.12194440e-4f + s.c + s.f + s.e * 0.693359375f;
    return vm_log_special_f32(x, y);
}

/* max 1.4 ulp on (0, inf): e + log(m) log2(e), log(m) = f + c kept split. */
static inline float vm_log2_f32(float x)
{
    vm_logparts_f32 s = vm_log_split_f32(x);
    float l = s.c * 1.44269504088896341f + s.f * 0.44269504088896341f + s.f;
    return vm_log_special_f32(x, l + s.e);
}

/* max 2.1 ulp on (0, inf). */
static inline float vm_log10_f32(float x)
{
    vm_logparts_f32 s = vm_log_split_f32(x);
    float y = (s.c + s.f) * 0.434294481903251828f + s.e * 7.90315020e-7f + s.e * 0.30102920532f;
    return vm_log_special_f32(x, y);
}

/* max 2.4 ulp on (-1, inf): log(u) * x / (u - 1), u = 1 + x, which cancels
 * the rounding of u. */
static inline float vm_log1p_f32(float x)
{
    float u = 1.0f + x;
    float m = u - 1.0f;
    float y = vm_log_f32(u) * (x / m);
    y = m == 0.0f ? x : y;
    return x == INFINITY ? x : y;
}

/* exact (IEEE sqrt; with -fno-math-errno gcc emits the instruction, no call). */
static inline float vm_sqrt_f32(float x) { return sqrtf(x); }

/* ---- trigonometric ------------------------------------------------------------------- */
/* 2/pi in 24-bit chunks: 2/pi = sum_k vm_2opi[k] 2^(-24(k+1)). */
static const double vm_2opi[9] = {10680707.0, 7228996.0,  1387004.0, 2578385.0, 16069853.0,
                                  12639074.0, 9804092.0, 4427841.0, 16666979.0};

static inline uint64_t vm_bits_f64(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double vm_from_bits_f64(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline void vm_two_sum_f64(double a, double b, double *s, double *e)
{
    *s = a + b;
    double bb = *s - a;
    *e = (a - (*s - bb)) + (b - bb);
}

/* Chunk j of 2/pi counted from the first one that matters for a (see below);
 * selects, not a table index, so the loop stays in 64-bit lanes. */
static inline double vm_2opi_pick(double a, int j)
{
    double c = vm_2opi[j];
    c = a >= 0x1p49 ? vm_2opi[j + 1] : c;
    c = a >= 0x1p73 ? vm_2opi[j + 2] : c;
    c = a >= 0x1p97 ? vm_2opi[j + 3] : c;
    c = a >= 0x1p121 ? vm_2opi[j + 4] : c;
    return c;
}

typedef struct { double r, q; } vm_quadrant;

/* Payne-Hanek reduction of a = |x| (x any float, a in double): a = (q + f) pi/2,
 * f in [-1/2, 1/2], q in {0,1,2,3}. a*2/pi mod 4 is summed from the five 24-bit
 * chunks of 2/pi that matter at a's magnitude (earlier ones only add multiples
 * of 4), each product a*chunk exact in double, the leading ones reduced mod 4
 * and added with exact two-sums; f keeps ~2^-70 absolute accuracy, enough for
 * the float closest to a multiple of pi/2. All in double, so it vectorizes. */
static inline vm_quadrant vm_rem_pio2(double a)
{
    double sc = 0x1p-24;
    sc = a >= 0x1p49 ? 0x1p-48 : sc;
    sc = a >= 0x1p73 ? 0x1p-72 : sc;
    sc = a >= 0x1p97 ? 0x1p-96 : sc;
    sc = a >= 0x1p121 ? 0x1p-120 : sc;
    double t0 = a * vm_2opi_pick(a, 0) * sc;
    double t1 = a * vm_2opi_pick(a, 1) * (sc * 0x1p-24);
    double t2 = a * vm_2opi_pick(a, 2) * (sc * 0x1p-48);
    double t3 = a * vm_2opi_pick(a, 3) * (sc * 0x1p-72);
    double t4 = a * vm_2opi_pick(a, 4) * (sc * 0x1p-96);
    t0 -= 4.0 * vm_rint_small_f64(t0 * 0.25);
    t1 -= 4.0 * vm_rint_small_f64(t1 * 0.25);
    double j0 = vm_rint_small_f64(t0), j1 = vm_rint_small_f64(t1);
    double s, e1, e2;
    vm_two_sum_f64(t0 - j0, t1 - j1, &s, &e1);
    vm_two_sum_f64(s, t2, &s, &e2);
    double j2 = vm_rint_small_f64(s);
    double f = (s - j2) + (e1 + e2 + (t3 + t4));
    double j = j0 + j1 + j2;
    double q = j - 4.0 * vm_rint_small_f64(j * 0.25);
    double q4 = q + 4.0;
    vm_quadrant r = {f * 1.5707963267948966, q < 0.0 ? q4 : q};
    return r;
}

/* sin and cos of r in [-pi/4, pi/4] (Cephes sinf/cosf polynomials), in float
 * for callers with their own exact reduction (runtime/random.c), ... */
static inline float vm_sinr_f32(float r)
{
    float z = r * r;
    return ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
}

static inline float vm_cosr_f32(float r)
{
    float z = r * r;
    float y = (2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f;
    return y * z * z - 0.5f * z + 1.0f;
}

/* ... and in double, for the f32 sin/cos/tan below. */
static inline double vm_sinr(double r)
{
    double z = r * r;
    return ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
}

static inline double vm_cosr(double r)
{
    double z = r * r;
    double y = (2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2;
    return y * z * z - 0.5 * z + 1.0;
}

/* x with its sign bit flipped when s is negative. */
static inline float vm_mulsign_f32(float x, float s)
{
    return vm_from_bits_f32(vm_bits_f32(x) ^ (vm_bits_f32(s) & 0x80000000u));
}

/* max 0.6 ulp for every finite float (exact reduction, polynomial in double);
 * inf, NaN -> NaN. */
static inline float vm_sin_f32(float x)
{
    float a = vm_abs_f32(x);
    vm_quadrant q = vm_rem_pio2((double)a);
    double s = vm_sinr(q.r), c = vm_cosr(q.r);
    double y = ((q.q == 1.0) | (q.q == 3.0)) ? c : s;
    double ny = -y;
    y = q.q >= 2.0 ? ny : y;
    float nan = x - x;
    return a < INFINITY ? vm_mulsign_f32((float)y, x) : nan;
}

/* max 0.6 ulp for every finite float; inf, NaN -> NaN. */
static inline float vm_cos_f32(float x)
{
    float a = vm_abs_f32(x);
    vm_quadrant q = vm_rem_pio2((double)a);
    double s = vm_sinr(q.r), c = vm_cosr(q.r);
    double y = ((q.q == 1.0) | (q.q == 3.0)) ? s : c;
    double ny = -y;
    y = ((q.q == 1.0) | (q.q == 2.0)) ? ny : y;
    float nan = x - x;
    return a < INFINITY ? (float)y : nan;
}

/* max 0.8 ulp for every finite float; inf, NaN -> NaN. Cephes tanf polynomial. */
static inline float vm_tan_f32(float x)
{
    float a = vm_abs_f32(x);
    vm_quadrant q = vm_rem_pio2((double)a);
    double z = q.r * q.r;
    double p = 9.38540185543e-3;
    p = fma(p, z, 3.11992232697e-3);
    p = fma(p, z, 2.44301354525e-2);
    p = fma(p, z, 5.34112807005e-2);
    p = fma(p, z, 1.33387994085e-1);
    p = fma(p, z, 3.33331568548e-1);
    double t = p * z * q.r + q.r;
    double cot = -1.0 / t;
    t = ((q.q == 1.0) | (q.q == 3.0)) ? cot : t;
    float nan = x - x;
    return a < INFINITY ? vm_mulsign_f32((float)t, x) : nan;
}

/* asin of s in [0, 1/2] (Cephes asinf polynomial). */
static inline float vm_asinr_f32(float s)
{
    float z = s * s;
    float p = 4.2163199048e-2f;
    p = fmaf(p, z, 2.4181311049e-2f);
    p = fmaf(p, z, 4.5470025998e-2f);
    p = fmaf(p, z, 7.4953002686e-2f);
    p = fmaf(p, z, 1.6666752422e-1f);
    return p * z * s + s;
}

/* max 2.1 ulp on [-1, 1]; |x| > 1 -> NaN. Above 1/2: pi/2 - 2 asin(sqrt((1-|x|)/2)). */
static inline float vm_asin_f32(float x)
{
    float a = vm_abs_f32(x);
    int big = a > 0.5f;
    float h = vm_sqrt_f32(0.5f * (1.0f - a));
    float s = big ? h : a;
    float p = vm_asinr_f32(s);
    float q = (1.57079637050628662f - 2.0f * p) - 4.37113900018624283e-8f;
    float y = big ? q : p;
    return vm_copysign_f32(y, x);
}

/* max 1.4 ulp on [-1, 1]; |x| > 1 -> NaN. */
static inline float vm_acos_f32(float x)
{
    float a = vm_abs_f32(x);
    int big = a > 0.5f;
    float h = vm_sqrt_f32(0.5f * (1.0f - a));
    float s = big ? h : a;
    float p = vm_copysign_f32(vm_asinr_f32(s), x);              /* asin(s) with x's sign */
    float pio2 = 1.57079637050628662f, pio2_lo = -4.37113900018624283e-8f;
    float small = (pio2 - p) + pio2_lo;
    float pos = 2.0f * p;
    float neg = (2.0f * pio2 + 2.0f * p) + 2.0f * pio2_lo;
    float y = x < 0.0f ? neg : pos;
    return big ? y : small;
}

/* atan of t in [0, 1]: above tan(pi/8), atan(t) = pi/4 + atan((t-1)/(t+1))
 * (Cephes atanf polynomial). */
static inline float vm_atan01_f32(float t)
{
    int mid = t > 0.414213562373095f;
    float v = (t - 1.0f) / (t + 1.0f);
    float u = mid ? v : t;
    float z = u * u;
    float p = 8.05374449538e-2f;
    p = fmaf(p, z, -1.38776856032e-1f);
    p = fmaf(p, z, 1.99777106478e-1f);
    p = fmaf(p, z, -3.33329491539e-1f);
    float y = p * z * u + u;
    float w = (0.785398185253143311f + y) - 2.18556950009312142e-8f;
    return mid ? w : y;
}

/* pi/2 - y, with pi/2 split for accuracy. */
static inline float vm_pio2_minus_f32(float y)
{
    return (1.57079637050628662f - y) - 4.37113900018624283e-8f;
}

/* max 2.3 ulp on R; +-inf -> +-pi/2. */
static inline float vm_atan_f32(float x)
{
    float a = vm_abs_f32(x);
    int big = a > 1.0f;
    float inv = 1.0f / a;
    float y = vm_atan01_f32(big ? inv : a);
    float c = vm_pio2_minus_f32(y);
    y = big ? c : y;
    return vm_copysign_f32(y, x);
}

/* max 2.7 ulp on R^2, with IEEE atan2's signed zeros and infinities. */
static inline float vm_atan2_f32(float y, float x)
{
    float ax = vm_abs_f32(x), ay = vm_abs_f32(y);
    float lo = ax < ay ? ax : ay, hi = ax < ay ? ay : ax;
    float t = lo / hi;
    t = hi == 0.0f ? 0.0f : t;                          /* 0/0 */
    t = lo == INFINITY ? 1.0f : t;                      /* inf/inf */
    float nan = x + y;
    t = ((x != x) | (y != y)) ? nan : t;
    /* |y| > |x|: pi/2 -+ a; else x < 0: pi - a; else a (pi and pi/2 split hi + lo) */
    float a = vm_atan01_f32(t), na = -a;
    int swap = ay > ax, neg = (int)(vm_bits_f32(x) >> 31);
    float bh = neg ? 3.14159274101257324f : 0.0f, bl = neg ? -8.74227800037248566e-8f : 0.0f;
    bh = swap ? 1.57079637050628662f : bh;
    bl = swap ? -4.37113900018624283e-8f : bl;
    float r = (bh + (swap != neg ? na : a)) + bl;
    return vm_copysign_f32(r, y);
}

/* ---- hyperbolic ------------------------------------------------------------------- */
/* max 1.7 ulp on [-90, 90]: small |x| a polynomial (Cephes sinhf), else h - 1/(4h), h = e^|x|/2. */
static inline float vm_sinh_f32(float x)
{
    float a = vm_abs_f32(x);
    float z = x * x;
    float small = ((2.03721912945e-4f * z + 8.33028376239e-3f) * z + 1.66667160211e-1f) * z * x + x;
    float h = vm_expk_f32(a, -1);
    float big = vm_copysign_f32(h - 0.25f / h, x);
    return a <= 1.0f ? small : big;
}

/* max 1.5 ulp on [-90, 90]. */
static inline float vm_cosh_f32(float x)
{
    float h = vm_expk_f32(vm_abs_f32(x), -1);
    return h + 0.25f / h;
}

/* max 2.0 ulp on R (1.91 measured over every float of [0, 10]):
 * (1 - e)/(1 + e), e = e^-2|x| = (1 + m) 2^n with m =
 * e^r - 1 from the exp polynomial (no + 1, so small |x| keeps its digits),
 * both sides formed with one rounding each: 1 - e = (1 - 2^n) - m 2^n and
 * 1 + e = (1 + 2^n) + m 2^n (1 -+ 2^n exact). One path for all x, no
 * select between a small-x polynomial and the exp form; |x| is clamped
 * where tanh is 1 in float, so one 2^n scale factor does. -2|x| is an add
 * (exact, and off the multiply ports) and the reduction uses ln2 in one
 * float (vm_exp_reduce1_f32): 1.906 ulp at 0.511 over every float of
 * [0, 10] (every 61st float of R: 1.847, as with the two-part ln2). The
 * degree-4 polynomial is not enough here: 2.03 ulp at 0.124 over every
 * float of [0, 10]. */
static inline float vm_tanh_f32(float x)
{
    float a = vm_abs_f32(x);
    float xc = -(a + a);
    xc = xc < -87.0f ? -87.0f : xc;
    int32_t n;
    float r = vm_exp_reduce1_f32(xc, &n);
    float m = fmaf(vm_expr_poly_f32(r), r * r, r);
    float sc = vm_pow2i_f32(n);
    float num = fmaf(-m, sc, 1.0f - sc);
    float den = fmaf(m, sc, 1.0f + sc);
    return vm_copysign_f32(num / den, x);
}

/* max 2.8 ulp on R: log1p(a + a^2/(1 + sqrt(1 + a^2))), large |a| log(a) + ln2. */
static inline float vm_asinh_f32(float x)
{
    float a = vm_abs_f32(x);
    float a2 = a * a;
    float small = vm_log1p_f32(a + a2 / (1.0f + vm_sqrt_f32(1.0f + a2)));
    float big = vm_log_f32(a) + 0.693147180559945309f;
    return vm_copysign_f32(a > 4096.0f ? big : small, x);
}

/* max 3.1 ulp on [1, inf): log1p((x-1) + sqrt((x-1)(x+1))); x < 1 -> NaN. */
static inline float vm_acosh_f32(float x)
{
    float d = x - 1.0f;
    float small = vm_log1p_f32(d + vm_sqrt_f32(d * (x + 1.0f)));
    float big = vm_log_f32(x) + 0.693147180559945309f;
    float y = x > 4096.0f ? big : small;
    return x < 1.0f ? NAN : y;                   /* also -inf, where small is inf */
}

/* max 3.2 ulp on (-1, 1): log1p(2a/(1-a))/2; +-1 -> +-inf, |x| > 1 -> NaN. */
static inline float vm_atanh_f32(float x)
{
    float a = vm_abs_f32(x);
    return vm_copysign_f32(0.5f * vm_log1p_f32((a + a) / (1.0f - a)), x);
}

/* ---- erf ------------------------------------------------------------------------ */
/* erf(x)/x = P(x^2) on |x| <= 1 (Cephes erff polynomial). */
static inline float vm_erf_small_f32(float x)
{
    float z = x * x;
    float p = 7.853861353153693e-5f;
    p = fmaf(p, z, -8.010193625184903e-4f);
    p = fmaf(p, z, 5.188327685732524e-3f);
    p = fmaf(p, z, -2.685381193529856e-2f);
    p = fmaf(p, z, 1.128358514861418e-1f);
    p = fmaf(p, z, -3.761262582423300e-1f);
    p = fmaf(p, z, 1.128379165726710f);
    return p * x;
}

/* x^2 = h + l exactly (the fma gives the rounding error of x*x). */
static inline void vm_square2_f32(float x, float *h, float *l)
{
    *h = x * x;
    *l = fmaf(x, x, -*h);
}

/* g(t) of erfc's form e^(-a^2) g(t) / (1 + 2a), t = (a-2)/(a+2) (below; also erfcx's). */
static inline float vm_erfc_g_f32(float t)
{
    float g = -2.276376617e-04f;
    g = fmaf(g, t, -1.265981584e-03f);
    g = fmaf(g, t, 1.148580108e-03f);
    g = fmaf(g, t, 8.659420535e-03f);
    g = fmaf(g, t, -8.006330580e-03f);
    g = fmaf(g, t, -5.421130359e-02f);
    g = fmaf(g, t, 1.640488207e-01f);
    g = fmaf(g, t, -1.660308242e-01f);
    g = fmaf(g, t, -9.276376665e-02f);
    g = fmaf(g, t, 1.276978374e+00f);
    return g;
}

/* erfc(a) for a in [1/2, inf), given a^2 = sh + sl exactly: e^(-a^2) g(t) / (1 + 2a)
 * with t = (a-2)/(a+2) (Shepherd & Laframboise's form; g fit here to relative
 * 2^-26). The exact a^2 keeps e^(-a^2) at full precision up to the underflow. */
static inline float vm_erfc_core_f32(float a, float sh, float sl)
{
    a = a > 10.5f ? 10.5f : a;
    float t = (a - 2.0f) / (a + 2.0f);
    float g = vm_erfc_g_f32(t);
    float e = vm_exp_f32(-sh) * (1.0f - sl);
    e = sh > 112.0f ? 0.0f : e;             /* also a = inf, where sl is NaN */
    return e * g / (1.0f + 2.0f * a);
}

static inline float vm_erfc_big_f32(float a)
{
    float sh, sl;
    vm_square2_f32(a, &sh, &sl);
    return vm_erfc_core_f32(a, sh, sl);
}

/* max 2.5 ulp on R. */
static inline float vm_erf_f32(float x)
{
    float a = vm_abs_f32(x);
    float big = vm_copysign_f32(1.0f - vm_erfc_big_f32(a), x);
    return a < 1.0f ? vm_erf_small_f32(x) : big;
}

/* max 4.3 ulp on R (values down to the denormals near 10.05). */
static inline float vm_erfc_f32(float x)
{
    float a = vm_abs_f32(x);
    float c = vm_erfc_big_f32(a);
    float c2 = 2.0f - c;
    float small = 1.0f - vm_erf_small_f32(x);
    float y = x < 0.0f ? c2 : c;
    return a < 0.5f ? small : y;
}

/* ---- activations ------------------------------------------------------------------ */
/* max 2.8 ulp on R (2.44 measured over every float of [-110, 20]): 1/(1 + e^-x)
 * on one path, scaled by 2^-64: s = 2^-64 / (2^-64 + e 2^-64), with
 * e 2^-64 = (1 + m) 2^(n-64) a normal float for all of -x in [-30, 104]
 * (sigmoid is 1 in float above 17; e^104 2^-64 is 2^86). The denominator is
 * one fma, m 2^(n-64) + (2^(n-64) + 2^-64), with m = e^r - 1 from the
 * degree-4 polynomial (its 2^-26.6 is at most 0.2 ulp here), and the
 * quotient 2^-64 / d is one correctly rounded division: the same bits as
 * (1/d) 2^-64 where the result is normal, one rounding instead of two for
 * the denormal results of x in (-104, -87.3]. No select on the sign of x and
 * no e/(1 + e) branch: P1's loop without the tanh (clang -O3, AVX2) has 36
 * vector instructions per 8 floats against 48 with the two-branch form this
 * replaced, and P1's whole loop in L1 went from 29.6 to 24.4 cycles per 8
 * floats on Zen 3. The shorter polynomial and the single division take
 * two multiply-port ops per vector off it and the fma denominator an add;
 * with tanh's two (its one-float reduction, -2|x| as an add) P1's loop in
 * cache is 21.7 cycles per 8 floats (docs/perf.md, "P1: fewer
 * multiply-port ops"). NaN passes through; -inf gives 0, +inf 1. */
static inline float vm_sigmoid_f32(float x)
{
    float z = -x;
    z = z < -30.0f ? -30.0f : z;
    z = z > 104.0f ? 104.0f : z;
    int32_t n;
    float r = vm_exp_reduce_f32(z, &n);
    float m = fmaf(vm_expr_poly4_f32(r), r * r, r);   /* e^r - 1 */
    float sc = vm_pow2i_f32(n - 64);
    float d = fmaf(m, sc, sc + 5.42101086242752217e-20f);   /* 2^-64 + e^z 2^-64 */
    return 5.42101086242752217e-20f / d;                     /* 2^-64 / d */
}
static inline double vm_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }

/* exact; NaN stays NaN, -0 stays -0 (like torch). */
static inline float vm_relu_f32(float x) { return x < 0.0f ? 0.0f : x; }

/* max 5.4 ulp on [-13, inf) (results >= FLT_MIN): x Phi(x) = x erfc(-x/sqrt2) / 2,
 * no cancellation for x < 0; a^2 = x^2/2 is formed exactly from x, so large
 * negative x stays accurate. */
static inline float vm_gelu_f32(float x)
{
    float a = x * -0.707106781186547524f;
    float sh, sl;
    vm_square2_f32(x, &sh, &sl);
    float big = vm_erfc_core_f32(vm_abs_f32(a), 0.5f * sh, 0.5f * sl);
    float big2 = 2.0f - big;
    float small = 1.0f - vm_erf_small_f32(a);
    float c = a < 0.0f ? big2 : big;
    c = vm_abs_f32(a) < 0.5f ? small : c;
    return 0.5f * x * c;
}
static inline double vm_gelu_f64(double x) { return 0.5 * x * erfc(x * -0.70710678118654752440); }

/* max 2.8 ulp on [-1, inf), 17 ulp on [-3, -1), 50 ulp on [-5, -3): the rounding
 * of u is amplified by e^-2u far left (torch's own f32 1 + tanh u cancels there).
 * x (1 + tanh u) / 2 = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3). */
static inline float vm_gelu_tanh_f32(float x)
{
    float u = 0.797884560802865356f * (x + 0.044715f * x * x * x);
    return x / (1.0f + vm_exp_f32(-2.0f * u));
}
static inline double vm_gelu_tanh_f64(double x)
{
    double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

/* max 3.1 ulp on [-87, inf) (results >= FLT_MIN): x sigmoid(x). */
static inline float vm_silu_f32(float x)
{
    float e = vm_exp_f32(-vm_abs_f32(x));
    float s = x / (1.0f + e);
    float es = e * s;
    return x < 0.0f ? es : s;
}
static inline double vm_silu_f64(double x) { return x / (1.0 + exp(-x)); }

/* max 2.8 ulp on R: x > 20 ? x : log1p(e^x) (torch's beta 1, threshold 20). */
static inline float vm_softplus_f32(float x)
{
    float y = vm_log1p_f32(vm_exp_f32(x));
    return x > 20.0f ? x : y;
}
static inline double vm_softplus_f64(double x) { return x > 20.0 ? x : log1p(exp(x)); }

/* ---- rounding and classification (exact) ---------------------------------------------- */
/* |x| rounded half to even when |x| < 2^23 (larger floats are integers). */
static inline float vm_rint_abs_f32(float a)
{
    float r = (a + 8388608.0f) - 8388608.0f;
    return a < 8388608.0f ? r : a;
}

static inline float vm_round_f32(float x)
{
    return vm_copysign_f32(vm_rint_abs_f32(vm_abs_f32(x)), x);
}

static inline float vm_trunc_abs_f32(float a)
{
    float r = vm_rint_abs_f32(a);
    float r1 = r - 1.0f;
    return r > a ? r1 : r;
}

static inline float vm_trunc_f32(float x)
{
    return vm_copysign_f32(vm_trunc_abs_f32(vm_abs_f32(x)), x);
}

static inline float vm_floor_f32(float x)
{
    float a = vm_abs_f32(x);
    float r = vm_rint_abs_f32(a);
    float rp = r + 1.0f, rm = r - 1.0f;
    float up = r < a ? rp : r;                   /* ceil(|x|) */
    float dn = r > a ? rm : r;                   /* floor(|x|) */
    return vm_copysign_f32(x < 0.0f ? up : dn, x);
}

static inline float vm_ceil_f32(float x)
{
    float a = vm_abs_f32(x);
    float r = vm_rint_abs_f32(a);
    float rp = r + 1.0f, rm = r - 1.0f;
    float up = r < a ? rp : r;
    float dn = r > a ? rm : r;
    return vm_copysign_f32(x < 0.0f ? dn : up, x);
}

static inline float vm_sign_f32(float x) { return (float)((x > 0.0f) - (x < 0.0f)); }
static inline double vm_sign_f64(double x) { return (double)((x > 0.0) - (x < 0.0)); }

static inline int vm_isinf_f32(float x) { return (vm_bits_f32(x) & 0x7fffffffu) == 0x7f800000u; }
static inline int vm_isfinite_f32(float x) { return (vm_bits_f32(x) & 0x7f800000u) != 0x7f800000u; }

/* ---- binary ------------------------------------------------------------------------- */
/* torch.maximum / minimum: NaN in either operand gives NaN. */
static inline float vm_max_f32(float a, float b)
{
    float m = a < b ? b : a;
    m = b != b ? b : m;
    return a != a ? a : m;
}
static inline float vm_min_f32(float a, float b)
{
    float m = b < a ? b : a;
    m = b != b ? b : m;
    return a != a ? a : m;
}
static inline double vm_max_f64(double a, double b)
{
    double m = a < b ? b : a;
    m = b != b ? b : m;
    return a != a ? a : m;
}
static inline double vm_min_f64(double a, double b)
{
    double m = b < a ? b : a;
    m = b != b ? b : m;
    return a != a ? a : m;
}

/* ln|x| in double to ~2^-40 relative (for pow): |x| = 2^e m, m in [sqrt(1/2),
 * sqrt(2)), log m = 2 atanh(s), s = (m-1)/(m+1), an odd series to s^13.
 * In 64-bit lanes only (e from the exponent bits by the 2^52 trick). */
static inline double vm_log_pow_f64(float x)
{
    double a = (double)vm_abs_f32(x);          /* float denormals are double normals */
    uint64_t u = vm_bits_f64(a);
    double m = vm_from_bits_f64((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    double e = vm_from_bits_f64((u >> 52) | 0x4330000000000000ull) - 4503599627371519.0;
    double mh = m * 0.5, e1 = e + 1.0;
    e = m > 1.41421356237309505 ? e1 : e;
    m = m > 1.41421356237309505 ? mh : m;
    double s = (m - 1.0) / (m + 1.0), z = s * s;
    double p = 1.0 / 13;
    p = fma(p, z, 1.0 / 11);
    p = fma(p, z, 1.0 / 9);
    p = fma(p, z, 1.0 / 7);
    p = fma(p, z, 1.0 / 5);
    p = fma(p, z, 1.0 / 3);
    p = fma(p, z, 1.0);
    double y = 2.0 * s * p + e * 0.693147180559945309;
    y = a == 0.0 ? -INFINITY : y;
    y = a == INFINITY ? INFINITY : y;
    return a != a ? a : y;
}

/* e^x in double, vectorizable: x = n ln2 + r (|r| <= ln2/2, Cody-Waite), a
 * degree-13 Taylor polynomial (2e-17 relative), 2^n from the exponent bits.
 * x is clamped to [-708, 708] (callers round to float or handle the ends). */
VM_FORCE_INLINE double vm_expd(double x)
{
    double xc = x > 708.0 ? 708.0 : x;
    xc = xc < -708.0 ? -708.0 : xc;
    double t = xc * 1.4426950408889634 + 6755399441055744.0;
    double n = t - 6755399441055744.0;
    int64_t ni = (int64_t)(vm_bits_f64(t) - 0x4338000000000000ull);
    double r = xc - n * 6.93147180369123816490e-01;
    r = r - n * 1.90821492927058770002e-10;
    double p = 1.0 / 6227020800.0;
    p = fma(p, r, 1.0 / 479001600.0);
    p = fma(p, r, 1.0 / 39916800.0);
    p = fma(p, r, 1.0 / 3628800.0);
    p = fma(p, r, 1.0 / 362880.0);
    p = fma(p, r, 1.0 / 40320.0);
    p = fma(p, r, 1.0 / 5040.0);
    p = fma(p, r, 1.0 / 720.0);
    p = fma(p, r, 1.0 / 120.0);
    p = fma(p, r, 1.0 / 24.0);
    p = fma(p, r, 1.0 / 6.0);
    p = fma(p, r, 0.5);
    p = fma(p, r, 1.0);
    p = fma(p, r, 1.0);
    return x != x ? x : p * vm_pow2i_f64(ni);
}

/* e^v rounded to float, v in double (for pow): vm_expd on v clamped to
 * where a float result is finite or subnormal. */
static inline float vm_exp_pow_f64(double v)
{
    double vc = v > 90.0 ? 90.0 : v;
    return (float)vm_expd(vc < -104.0 ? -104.0 : vc);
}

/* 1 when y is an integer, 2 when it is an odd one, from its bits (integer
 * ops only: float selects on a loop-invariant y defeat gcc 12's vectorizer). */
static inline int32_t vm_int_class_f32(float y)
{
    uint32_t u = vm_bits_f32(y) & 0x7fffffffu;
    int32_t e = (int32_t)(u >> 23) - 127;
    uint32_t mant = (u & 0x007fffffu) | 0x00800000u;
    int32_t sh = 23 - e;                             /* fraction bits of y */
    int32_t shc = sh < 0 ? 0 : sh > 24 ? 24 : sh;
    int32_t whole = (int32_t)((mant & ((1u << shc) - 1u)) == 0u) & (sh <= 24);
    int32_t isint = (u == 0u) | (e >= 23) | whole;
    int32_t oddbit = (int32_t)(((mant << 7) >> (7 + shc)) << 31) >> 30;   /* bit shc: 0 or -2 */
    int32_t odd = oddbit & -((sh >= 0) & (sh <= 23) & isint);
    return -(u <= 0x7f800000u) & (isint | odd);
}

/* max 1.0 ulp (x^y = e^(y ln|x|) evaluated in double); C99 pow's special cases:
 * x^0 = 1 and 1^y = 1 even for NaN, (-1)^+-inf = 1, negative x with a non-integer
 * y is NaN, and odd integer y keeps the sign of x (also for -0 and -inf). */
static inline float vm_pow_f32(float x, float y)
{
    float ay = vm_abs_f32(y);
    int32_t cls = vm_int_class_f32(y);
    float r = vm_exp_pow_f64((double)y * vm_log_pow_f64(x));
    float neg = -r;
    int32_t xneg = (int32_t)(vm_bits_f32(x) >> 31);
    r = (xneg & (cls >> 1)) != 0 ? neg : r;
    r = ((x < 0.0f) & (x > -INFINITY) & (cls == 0) & (ay < INFINITY)) ? NAN : r;
    r = ((vm_abs_f32(x) == 1.0f) & (ay == INFINITY)) ? 1.0f : r;
    r = ((x == 1.0f) | (y == 0.0f)) ? 1.0f : r;
    return r;
}

/* C fmod (exact, sign of x): |x| is reduced by |y| 2^s in 13 exact steps of at
 * least 23 bits of quotient each, in double (64-bit lanes); y = 0 or x = inf -> NaN. */
static inline float vm_fmod_f32(float x, float y)
{
    float ay = vm_abs_f32(y);
    double a = (double)vm_abs_f32(x), b = (double)ay;
    int64_t eb = (int64_t)(vm_bits_f64(b) >> 52);
#pragma GCC unroll 13
    for (int k = 0; k < 13; k++) {
        int64_t s = (int64_t)(vm_bits_f64(a) >> 52) - eb - 23;
        s = s < 0 ? 0 : s;
        s = s > 300 ? 300 : s;
        double bs = b * vm_pow2i_f64(s);
        double q = a / bs;
        double t = vm_rint_small_f64(q);
        double t1 = t - 1.0;
        t = t > q ? t1 : t;
        t = q < 4503599627370496.0 ? t : q;
        a = a - t * bs;
    }
    float r = vm_copysign_f32((float)a, x);
    float inf_check = x - x;
    return ((ay == INFINITY) & (inf_check == 0.0f)) ? x : r;
}

/* Python's % on floats (torch.remainder): fmod, moved to the sign of y. */
static inline float vm_remainder_f32(float x, float y)
{
    float m = vm_fmod_f32(x, y);
    float my = m + y;
    return ((m != 0.0f) & ((m < 0.0f) != (y < 0.0f))) ? my : m;
}
static inline double vm_remainder_f64(double x, double y)
{
    double m = fmod(x, y);
    return m != 0.0 && ((m < 0.0) != (y < 0.0)) ? m + y : m;
}

/* Integer power (wraps like the machine type after truncation; a negative
 * exponent gives 0 except for bases 1 and -1, like torch). */
static inline int64_t vm_ipow(int64_t a, int64_t b)
{
    if (b < 0)
        return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)a;
    for (uint64_t e = (uint64_t)b; e; e >>= 1) {
        r = (e & 1) ? r * x : r;
        x *= x;
    }
    return (int64_t)r;
}

/* Integer Python % (sign of the divisor); divisor 0 gives 0. */
/* C's % (the sign of the dividend), with x % 0 and x % -1 defined as 0 (the
 * minimum % -1 overflows); one int64 form for every integer dtype. */
static inline int64_t vm_ifmod(int64_t a, int64_t b)
{
    return b == 0 || b == -1 ? 0 : a % b;
}

static inline int64_t vm_iremainder(int64_t a, int64_t b)
{
    if (b == 0 || b == -1)
        return 0;
    int64_t m = a % b;
    return m != 0 && ((m < 0) != (b < 0)) ? m + b : m;
}

#include "vmath_prims.h"
#include "vmath_special.h"

#endif /* TJ_VMATH_H */
