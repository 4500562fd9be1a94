/* vmath_prims.h - the scalar formulas of the pointwise prims of ops.def's
 * "more pointwise prims" section (cbrt, signbit, hypot, nextafter, fmax/fmin,
 * gcd, the shifts, erfinv, lgamma, digamma); included at the end of ir/vmath.h, whose rules
 * they follow: static inline, plain C11, branch-free f32 selects, no libm in
 * the f32 loops (sqrt is the instruction), the bound above each f32 function
 * measured and re-checked by tests/test_vmath.c.
 */
#ifndef TJ_VMATH_PRIMS_H
#define TJ_VMATH_PRIMS_H

/* ---- sign bits and neighbours (exact) ------------------------------------------------- */
static inline int vm_signbit_f32(float x) { return (int)(vm_bits_f32(x) >> 31); }
static inline int vm_signbit_f64(double x) { return (int)(vm_bits_f64(x) >> 63); }

/* C's nextafterf: the float after a in the direction of b; b when a == b,
 * NaN when either is, +-the least denormal (b's sign) from +-0. */
static inline float vm_nextafter_f32(float a, float b)
{
    uint32_t u = vm_bits_f32(a);
    int away = (b > a) == (a > 0.0f);   /* a's magnitude grows */
    float step = vm_from_bits_f32(away ? u + 1u : u - 1u);
    float tiny = vm_from_bits_f32(1u | (vm_bits_f32(b) & 0x80000000u));
    float r = a == 0.0f ? tiny : step;
    r = a == b ? b : r;
    return (a != a || b != b) ? a + b : r;
}

/* torch.fmax / fmin (C's fmax): a NaN operand is ignored (NaN only when both
 * are); a tie gives a (fmax(-0, +0) is -0), as PyTorch's kernel does. */
static inline float vm_fmax_f32(float a, float b) { return (a >= b || b != b) ? a : b; }
static inline float vm_fmin_f32(float a, float b) { return (a <= b || b != b) ? a : b; }
static inline double vm_fmax_f64(double a, double b) { return (a >= b || b != b) ? a : b; }
static inline double vm_fmin_f64(double a, double b) { return (a <= b || b != b) ? a : b; }

/* ---- integers ------------------------------------------------------------------------- */
/* torch's shifts on a `bits`-wide integer: a shift by a negative amount or by
 * bits or more gives 0 (left) or the sign fill (right); the left shift wraps. */
static inline int64_t vm_ishl(int64_t a, int64_t b, int bits)
{
    return b < 0 || b >= bits || b >= 64 ? 0 : (int64_t)((uint64_t)a << b);
}

static inline int64_t vm_ishr(int64_t a, int64_t b, int bits)
{
    return b < 0 || b >= bits || b >= 64 ? (a < 0 ? -1 : 0) : a >> b;
}

/* v wrapped to a `bits`-wide signed integer (bits >= 64: v). */
static inline int64_t vm_iwrap(int64_t v, int bits)
{
    return bits >= 64 ? v : (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
}

/* torch.gcd on a `bits`-wide signed integer (64 for u8, whose values are
 * never negative): Euclid on the absolute values, each step stored back to
 * the type as PyTorch's calc_gcd does (so the most negative value stays
 * negative: gcd(INT_MIN, 0) is INT_MIN). */
static inline int64_t vm_igcd(int64_t a, int64_t b, int bits)
{
    a = vm_iwrap(a < 0 ? (int64_t)(0 - (uint64_t)a) : a, bits);
    b = vm_iwrap(b < 0 ? (int64_t)(0 - (uint64_t)b) : b, bits);
    while (a != 0) {
        int64_t c = a;
        a = a == -1 ? 0 : vm_iwrap(b % a, bits);
        b = c;
    }
    return b;
}

/* ---- roots ------------------------------------------------------------------------------ */
/* max 0.5 ulp on R (0.5 + 1e-4: the double result rounded once): sqrt of a
 * double sum of exact double squares; an infinite operand gives inf (NaN
 * beside it too), as C's hypot. */
static inline float vm_hypot_f32(float a, float b)
{
    double x = a, y = b;
    float r = (float)sqrt(x * x + y * y);
    return (vm_isinf_f32(a) | vm_isinf_f32(b)) ? INFINITY : r;
}

/* max 0.5 ulp on R (+ double rounding): a guess from the exponent bits (the
 * bits / 3 trick, ~6%), two Halley steps t (t^3 + 2d) / (2t^3 + d) in
 * double (error cubed each time), rounded once; denormals scaled by 2^120
 * first. 0, inf and NaN pass through with their sign. */
static inline float vm_cbrt_f32(float x)
{
    float a = vm_abs_f32(x);
    int tiny = a < 0x1p-100f;
    float s = tiny ? a * 0x1p120f : a;
    int32_t third = (int32_t)((float)(int32_t)vm_bits_f32(s) * (1.0f / 3.0f));
    double t = vm_from_bits_f32((uint32_t)third + 709921077u), d = s;
    double t3 = t * t * t;
    t = t * (t3 + 2.0 * d) / (2.0 * t3 + d);
    t3 = t * t * t;
    t = t * (t3 + 2.0 * d) / (2.0 * t3 + d);
    float r = (float)(tiny ? t * 0x1p-40 : t);
    r = (a == 0.0f || a != a || vm_isinf_f32(a)) ? a : r;
    return vm_copysign_f32(r, x);
}

/* ---- erfinv ----------------------------------------------------------------------------- */
/* max 3.5 ulp on [-1, 1]. erfinv(x) = x p(w), w = -log((1 - x)(1 + x)), with Giles's single-precision
 * polynomials ("Approximating the erfinv function", GPU Computing Gems, 2011)
 * in w - 2.5 (w < 5) or sqrt(w) - 3; +-1 -> +-inf, |x| > 1 -> NaN. */
static inline float vm_erfinv_f32(float x)
{
    float w = -vm_log_f32((1.0f - x) * (1.0f + x));
    float c = w - 2.5f;
    float p = 2.81022636e-08f;
    p = fmaf(p, c, 3.43273939e-07f);
    p = fmaf(p, c, -3.5233877e-06f);
    p = fmaf(p, c, -4.39150654e-06f);
    p = fmaf(p, c, 0.00021858087f);
    p = fmaf(p, c, -0.00125372503f);
    p = fmaf(p, c, -0.00417768164f);
    p = fmaf(p, c, 0.246640727f);
    p = fmaf(p, c, 1.50140941f);
    float t = vm_sqrt_f32(w) - 3.0f;
    float q = -0.000200214257f;
    q = fmaf(q, t, 0.000100950558f);
    q = fmaf(q, t, 0.00134934322f);
    q = fmaf(q, t, -0.00367342844f);
    q = fmaf(q, t, 0.00573950773f);
    q = fmaf(q, t, -0.0076224613f);
    q = fmaf(q, t, 0.00943887047f);
    q = fmaf(q, t, 1.00167406f);
    q = fmaf(q, t, 2.83297682f);
    float r = x * (w < 5.0f ? p : q);
    r = vm_abs_f32(x) == 1.0f ? x * INFINITY : r;
    return vm_abs_f32(x) > 1.0f ? NAN : r;
}

/* f64: Giles's polynomials in double as the guess, then Newton steps on
 * erf (|x| <= 1/2) or on erfc against 1 - |x| (exact there), which keep
 * the tail's relative accuracy; libm's erf, erfc and exp. */
static inline double vm_erfinv_f64(double x)
{
    double a = fabs(x), w = -log((1.0 - a) * (1.0 + a)), c = w - 2.5, t = sqrt(w) - 3.0;
    double p = 2.81022636e-08;
    p = p * c + 3.43273939e-07; p = p * c - 3.5233877e-06; p = p * c - 4.39150654e-06;
    p = p * c + 0.00021858087;  p = p * c - 0.00125372503; p = p * c - 0.00417768164;
    p = p * c + 0.246640727;    p = p * c + 1.50140941;
    double q = -0.000200214257;
    q = q * t + 0.000100950558; q = q * t + 0.00134934322; q = q * t - 0.00367342844;
    q = q * t + 0.00573950773;  q = q * t - 0.0076224613;  q = q * t + 0.00943887047;
    q = q * t + 1.00167406;     q = q * t + 2.83297682;
    double y = a * (w < 5.0 ? p : q);
    for (int k = 0; k < 3; k++) {
        double d = 1.12837916709551257390 * exp(-y * y);   /* 2 / sqrt(pi) */
        y = a <= 0.5 ? y - (erf(y) - a) / d : y + (erfc(y) - (1.0 - a)) / d;
    }
    y = a == 1.0 ? INFINITY : a > 1.0 ? NAN : y;
    return x != x ? x : copysign(y, x);
}

/* ---- gamma family (f32 in double) ------------------------------------------------------ */
/* ln x for a positive normal double (float inputs widen to normal doubles):
 * x = 2^e m, m in [sqrt(1/2), sqrt 2), ln m = 2 atanh(s), s = (m - 1)/(m + 1),
 * the odd series to s^21 (|s| < 0.172: 5e-17); 0 -> -inf, inf -> inf. */
VM_FORCE_INLINE double vm_logd(double x)
{
    uint64_t u = vm_bits_f64(x);   /* the exponent as a double by the 2^52 trick: AVX2 has no i64 -> f64 */
    double e = vm_from_bits_f64((u >> 52) | 0x4330000000000000ull) - 4503599627371519.0;
    double m = vm_from_bits_f64((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    int big = m > 1.4142135623730951;
    m = big ? m * 0.5 : m;
    e = big ? e + 1.0 : e;
    double s = (m - 1.0) / (m + 1.0), z = s * s;
    double p = 1.0 / 21;
    p = p * z + 1.0 / 19; p = p * z + 1.0 / 17; p = p * z + 1.0 / 15; p = p * z + 1.0 / 13;
    p = p * z + 1.0 / 11; p = p * z + 1.0 / 9;  p = p * z + 1.0 / 7;  p = p * z + 1.0 / 5;
    p = p * z + 1.0 / 3;  p = p * z + 1.0;
    double r = e * 6.93147180369123816490e-01 + (e * 1.90821492927058770002e-10 + 2.0 * s * p);
    r = x == 0.0 ? -INFINITY : r;
    return x == INFINITY ? INFINITY : r;
}

/* sin and cos of pi r, r = a - rint(a) in [-1/2, 1/2] (exact): sin(pi a) and
 * cos(pi a) up to the common sign (-1)^rint(a); the float-accurate vmath
 * polynomials. */
VM_FORCE_INLINE void vm_sincospi_red(double a, double *s, double *c)
{
    double r = a >= 8388608.0 ? 0.0 : a - vm_rint_small_f64(a), t = fabs(r);   /* 2^23: an integer float */
    int far = t > 0.25;
    double v = (far ? 0.5 - t : t) * 3.14159265358979323846;
    double sv = vm_sinr(v), cv = vm_cosr(v);
    *s = copysign(far ? cv : sv, r);
    *c = far ? sv : cv;
}

/* max 0.6 ulp on (0, 0.9] and [2.5, inf) (computed in double, rounded once),
 * 1e-7 absolute near the zeros (1, 2 exact; -2.46, ...): for
 * a = |x| < 8, lgamma(a + 8) - ln(a (a+1) ... (a+7)); Stirling's series to
 * 1/z^7 for z >= 8; x < 0 by the reflection ln(pi / |sin(pi x)|) -
 * lgamma(a) - ln a. Poles (0, negative integers) and +-inf give +inf. */
VM_FORCE_INLINE float vm_lgamma_f32(float x)
{
    double a = fabs((double)x);
    int small = a < 8.0;
    double z = small ? a + 8.0 : a, w = 1.0 / z, w2 = w * w;
    double ser = w * (1.0 / 12 + w2 * (-1.0 / 360 + w2 * (1.0 / 1260 + w2 * (-1.0 / 1680))));
    double lz = vm_logd(z);
    double l = (z - 0.5) * lz - z + 0.91893853320467274178 + ser;
    double p = a * (a + 1) * (a + 2) * (a + 3) * (a + 4) * (a + 5) * (a + 6) * (a + 7);
    l = small ? l - vm_logd(p) : l;
    double s, c;
    vm_sincospi_red(a, &s, &c);
    double neg = 1.14472988584940017414 - vm_logd(fabs(s)) - l - vm_logd(a);
    double r = x < 0.0f ? neg : l;
    r = (x == 1.0f || x == 2.0f) ? 0.0 : r;
    r = vm_isinf_f32(x) ? INFINITY : r;
    return (float)r;
}

/* max 0.6 ulp on (0, 1.3] and [2, inf) (in double, rounded once), 1e-7
 * absolute near the zeros (1.4616..., one in each negative unit interval):
 * for a = |x| < 8,
 * psi(a + 8) - sum 1/(a+k); the asymptotic series to 1/z^10 for z >= 8;
 * x < 0 by the reflection psi(a) + 1/a + pi cot(pi a). PyTorch's special
 * values: psi(+-0) = -+inf, NaN at the negative integers, psi(inf) = inf. */
VM_FORCE_INLINE float vm_digamma_f32(float x)
{
    double a = fabs((double)x);
    int small = a < 8.0;
    double z = small ? a + 8.0 : a, w = 1.0 / z, w2 = w * w;
    double ser = w2 * (1.0 / 12 - w2 * (1.0 / 120 - w2 * (1.0 / 252 - w2 * (1.0 / 240 - w2 * (1.0 / 132)))));
    double p = vm_logd(z) - 0.5 * w - ser;
    double sum = 1 / a + 1 / (a + 1) + 1 / (a + 2) + 1 / (a + 3) + 1 / (a + 4) + 1 / (a + 5) +
                 1 / (a + 6) + 1 / (a + 7);
    p = small ? p - sum : p;
    double s, c;
    vm_sincospi_red(a, &s, &c);
    double neg = p + 1.0 / a + 3.14159265358979323846 * c / s;
    double r = x < 0.0f ? neg : p;
    r = (x < 0.0f) & (s == 0.0) ? NAN : r;
    double zr = vm_signbit_f32(x) ? INFINITY : -INFINITY;   /* one select each: gcc if-converts */
    r = x == 0.0f ? zr : r;
    r = x == INFINITY ? INFINITY : r;
    return (float)r;
}

/* f64: the same shift, series and reflection with libm's log and sin (the
 * series to 1/z^15 / 1/z^16, below 1e-16 for z >= 8). */
static inline double vm_lgamma_f64(double x)
{
    double a = fabs(x);
    int small = a < 8.0;
    double z = small ? a + 8.0 : a, w = 1.0 / z, w2 = w * w;
    double ser = w * (1.0 / 12 + w2 * (-1.0 / 360 + w2 * (1.0 / 1260 + w2 * (-1.0 / 1680 +
                 w2 * (1.0 / 1188 + w2 * (-691.0 / 360360 + w2 * (1.0 / 156 + w2 * (-3617.0 / 122400))))))));
    double l = (z - 0.5) * log(z) - z + 0.91893853320467274178 + ser;
    double p = a * (a + 1) * (a + 2) * (a + 3) * (a + 4) * (a + 5) * (a + 6) * (a + 7);
    l = small ? l - log(p) : l;
    double r = a - nearbyint(a);
    double s = a >= 4503599627370496.0 ? 0.0 : sin(3.14159265358979323846 * r);
    double neg = 1.14472988584940017414 - log(fabs(s)) - l - log(a);
    double y = x < 0.0 ? neg : l;
    y = (x == 1.0 || x == 2.0) ? 0.0 : y;
    return isinf(x) ? INFINITY : y;
}

static inline double vm_digamma_f64(double x)
{
    double a = fabs(x);
    int small = a < 8.0;
    double z = small ? a + 8.0 : a, w = 1.0 / z, w2 = w * w;
    double ser = w2 * (1.0 / 12 - w2 * (1.0 / 120 - w2 * (1.0 / 252 - w2 * (1.0 / 240 - w2 * (1.0 / 132 -
                 w2 * (691.0 / 32760 - w2 * (1.0 / 12 - w2 * (3617.0 / 8160))))))));
    double p = log(z) - 0.5 * w - ser;
    double sum = 1 / a + 1 / (a + 1) + 1 / (a + 2) + 1 / (a + 3) + 1 / (a + 4) + 1 / (a + 5) +
                 1 / (a + 6) + 1 / (a + 7);
    p = small ? p - sum : p;
    double r = a - nearbyint(a), pr = 3.14159265358979323846 * r;
    double s = a >= 4503599627370496.0 ? 0.0 : sin(pr);
    double neg = p + 1.0 / a + 3.14159265358979323846 * cos(pr) / s;
    double y = x < 0.0 ? neg : p;
    y = (x < 0.0 && s == 0.0) ? NAN : y;
    y = x == 0.0 ? (signbit(x) ? INFINITY : -INFINITY) : y;
    return x == INFINITY ? INFINITY : y;
}

#endif
