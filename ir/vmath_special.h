/* vmath_special.h - the scalar formulas of ops.def's "special functions and
 * remaining prims (issue 11)" block: erfcx, ndtri, i0, i0e, i1, i1e,
 * bessel_j0, bessel_j1, polygamma, igamma, igammac and frexp. Included at the
 * end of ir/vmath.h, whose rules they follow: static inline, plain C11,
 * branch-free selects in the f32 formulas (fixed trip counts, fully
 * unrolled), no libm call in them (sqrt is the instruction). Most f32
 * formulas compute in double and round once; the f64 formulas use libm.
 * The bound above each f32 function is measured by tests/test_vmath_special.c
 * against a long double or double reference, and asserted there.
 * Vectorized (zmm, no calls; objdump of the eager clones, the JIT's asm
 * dump): erfcx, ndtri, i0/i0e/i1/i1e, bessel_j0/j1, frexp. polygamma, igamma
 * and igammac have no calls either but stay scalar loops in both gcc and
 * LLVM (their unrolled sums are past the vectorizers' limits); not yet fixed.
 * Coefficient tables: the Cephes Math Library (3-clause BSD), as PyTorch's
 * ATen/native/Math.h uses them.
 */
#ifndef TJ_VMATH_SPECIAL_H
#define TJ_VMATH_SPECIAL_H

/* ---- double helpers ---------------------------------------------------------------------- */
/* Cephes chbevl: sum' c[i] T_i(x/2), c[0] the highest order. */
VM_FORCE_INLINE double vm_chbevl(double x, const double *c, int n)
{
    double b0 = c[0], b1 = 0.0, b2 = 0.0;
#pragma GCC unroll 32
    for (int i = 1; i < n; i++) {
        b2 = b1;
        b1 = b0;
        b0 = x * b1 - b2 + c[i];
    }
    return 0.5 * (b0 - b2);
}

/* Horner's rule, c[0] the highest order. */
VM_FORCE_INLINE double vm_polevl(double x, const double *c, int n)
{
    double p = c[0];
#pragma GCC unroll 16
    for (int i = 1; i < n; i++)
        p = p * x + c[i];
    return p;
}

/* ---- modified Bessel functions I0, I1 ----------------------------------------------------- */
/* e^-x I0(x) on [0, 8] in T_i(x/2 - 2); e^-x sqrt(x) I0(x) on [8, inf) in T_i(32/x - 2) */
static const double vm_i0_a[30] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15,  -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11,  -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8,  6.04699502254191894932E-8,  -2.67079385394061173391E-7,
    1.11738753912010371815E-6,   -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5,  1.88502885095841655729E-4,  -5.76375574538582365885E-4,
    1.63947561694133579842E-3,   -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2,  4.93052842396707084878E-2,  -9.49010970480476444210E-2,
    1.71620901522208775349E-1,   -3.04682672343198398683E-1, 6.76795274409476084995E-1};
static const double vm_i0_b[25] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17,  -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15,  3.81168066935262242075E-15,  -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14,  3.85277838274214270114E-13,
    7.18012445138366623367E-13,  -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11,  4.94060238822496958910E-10,
    3.39623202570838634515E-9,   2.26666899049817806459E-8,   2.04891858946906374183E-7,
    2.89137052083475648297E-6,   6.88975834691682398426E-5,   3.36911647825569408990E-3,
    8.04490411014108831608E-1};
/* e^-x I1(x) / x on [0, 8]; e^-x sqrt(x) I1(x) on [8, inf) */
static const double vm_i1_a[29] = {
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9,  -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6,  -1.32731636560394358279E-5,
    4.78156510755005422638E-5,  -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3,  -1.05640848946261981558E-2,
    2.47264490306265168283E-2,  -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1};
static const double vm_i1_b[25] = {
    7.51729631084210481353E-18,  4.41434832307170791151E-18,  -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16,  3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14,  -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12,  1.41258074366137813316E-11,
    3.25260358301548823856E-11,  -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9,  -2.63146884688951950684E-8,  -2.51223623787020892529E-7,
    -3.88256480887769039346E-6,  -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
    7.78576235018280120474E-1};

/* e^-a I0(a) and e^-a I1(a) for a = |x| >= 0 (inf: 0) */
VM_FORCE_INLINE double vm_i0e_d(double a)
{
    double s = vm_chbevl(a * 0.5 - 2.0, vm_i0_a, 30);
    double l = vm_chbevl(32.0 / a - 2.0, vm_i0_b, 25) / sqrt(a);
    return a <= 8.0 ? s : l;
}

VM_FORCE_INLINE double vm_i1e_d(double a)
{
    double s = vm_chbevl(a * 0.5 - 2.0, vm_i1_a, 29) * a;
    double l = vm_chbevl(32.0 / a - 2.0, vm_i1_b, 25) / sqrt(a);
    return a <= 8.0 ? s : l;
}

/* max 0.5 ulp on R (all four; measured 0.500: Cephes's Chebyshev series in
 * double, rounded once); I0 and I1 overflow to inf past 89.4 (inf at +-inf,
 * where PyTorch gives NaN), the e^-x scaled ones reach 0 at inf. The f64
 * column: max 3.3 (i0), 3.2 (i0e), 12.2 (i1), 7.3 (i1e) ulp. */
VM_FORCE_INLINE float vm_i0_f32(float x)
{
    double a = fabs((double)x);
    return (float)(a == INFINITY ? a : vm_expd(a) * vm_i0e_d(a));
}

VM_FORCE_INLINE float vm_i0e_f32(float x)
{
    double a = fabs((double)x);
    return (float)(a == INFINITY ? 0.0 : vm_i0e_d(a));
}

VM_FORCE_INLINE float vm_i1_f32(float x)
{
    double a = fabs((double)x);
    return (float)copysign(a == INFINITY ? a : vm_expd(a) * vm_i1e_d(a), (double)x);
}

VM_FORCE_INLINE float vm_i1e_f32(float x)
{
    double a = fabs((double)x);
    return (float)copysign(a == INFINITY ? 0.0 : vm_i1e_d(a), (double)x);
}

/* f64: the same series with libm's exp (PyTorch's kernels: exp overflows
 * past 709.78, so I0 and I1 are inf from there, as in PyTorch). */
VM_FORCE_INLINE double vm_i0_f64(double x)
{
    return isinf(x) ? INFINITY : exp(fabs(x)) * vm_i0e_d(fabs(x));
}
VM_FORCE_INLINE double vm_i0e_f64(double x) { return isinf(x) ? 0.0 : vm_i0e_d(fabs(x)); }
VM_FORCE_INLINE double vm_i1_f64(double x)
{
    return copysign(isinf(x) ? INFINITY : exp(fabs(x)) * vm_i1e_d(fabs(x)), x);
}
VM_FORCE_INLINE double vm_i1e_f64(double x)
{
    return copysign(isinf(x) ? 0.0 : vm_i1e_d(fabs(x)), x);
}

/* ---- Bessel functions J0, J1 ------------------------------------------------------------- */
static const double vm_j0_pp[7] = {7.96936729297347051624e-04, 8.28352392107440799803e-02,
    1.23953371646414299388e+00, 5.44725003058768775090e+00, 8.74716500199817011941e+00,
    5.30324038235394892183e+00, 9.99999999999999997821e-01};
static const double vm_j0_pq[7] = {9.24408810558863637013e-04, 8.56288474354474431428e-02,
    1.25352743901058953537e+00, 5.47097740330417105182e+00, 8.76190883237069594232e+00,
    5.30605288235394617618e+00, 1.00000000000000000218e+00};
static const double vm_j0_qp[8] = {-1.13663838898469149931e-02, -1.28252718670509318512e+00,
    -1.95539544257735972385e+01, -9.32060152123768231369e+01, -1.77681167980488050595e+02,
    -1.47077505154951170175e+02, -5.14105326766599330220e+01, -6.05014350600728481186e+00};
static const double vm_j0_qq[8] = {1.0, 6.43178256118178023184e+01, 8.56430025976980587198e+02,
    3.88240183605401609683e+03, 7.24046774195652478189e+03, 5.93072701187316984827e+03,
    2.06209331660327847417e+03, 2.42005740240291393179e+02};
static const double vm_j0_rp[4] = {-4.79443220978201773821e+09, 1.95617491946556577543e+12,
    -2.49248344360967716204e+14, 9.70862251047306323952e+15};
static const double vm_j0_rq[9] = {1.0, 4.99563147152651017219e+02, 1.73785401676374683123e+05,
    4.84409658339962045305e+07, 1.11855537045356834862e+10, 2.11277520115489217587e+12,
    3.10518229857422583814e+14, 3.18121955943204943306e+16, 1.71086294081043136091e+18};
static const double vm_j1_pp[7] = {7.62125616208173112003e-04, 7.31397056940917570436e-02,
    1.12719608129684925192e+00, 5.11207951146807644818e+00, 8.42404590141772420927e+00,
    5.21451598682361504063e+00, 1.00000000000000000254e+00};
static const double vm_j1_pq[7] = {5.71323128072548699714e-04, 6.88455908754495404082e-02,
    1.10514232634061696926e+00, 5.07386386128601488557e+00, 8.39985554327604159757e+00,
    5.20982848682361821619e+00, 9.99999999999999997461e-01};
static const double vm_j1_qp[8] = {5.10862594750176621635e-02, 4.98213872951233449420e+00,
    7.58238284132545283818e+01, 3.66779609360150777800e+02, 7.10856304998926107277e+02,
    5.97489612400613639965e+02, 2.11688757100572135698e+02, 2.52070205858023719784e+01};
static const double vm_j1_qq[8] = {1.0, 7.42373277035675149943e+01, 1.05644886038262816351e+03,
    4.98641058337653607651e+03, 9.56231892404756170795e+03, 7.99704160447350683650e+03,
    2.82619278517639096600e+03, 3.36093607810698293419e+02};
static const double vm_j1_rp[4] = {-8.99971225705559398224e+08, 4.52228297998194034323e+11,
    -7.27494245221818276015e+13, 3.68295732863852883286e+15};
static const double vm_j1_rq[9] = {1.0, 6.20836478118054335476e+02, 2.56987256757748830383e+05,
    8.35146791431949253037e+07, 2.21511595479792499675e+10, 4.74914122079991414898e+12,
    7.84369607876235854894e+14, 8.95222336184627338078e+16, 5.32278620332680085395e+18};

/* Cephes j0/j1 for a = |x| given sin a and cos a: a rational function of a^2
 * on [0, 5] (times the zeros' factors), the Hankel asymptotic form beyond
 * (P cos(a - phase) - (5/a) Q sin(a - phase)) sqrt(2/(pi a)), with the phase's
 * cos and sin from those of a: phase pi/4 for j0, 3pi/4 for j1. */
VM_FORCE_INLINE double vm_j0_d(double a, double sa, double ca)
{
    double z = a * a, w = 25.0 / z;
    double small = (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) *
                   vm_polevl(z, vm_j0_rp, 4) / vm_polevl(z, vm_j0_rq, 9);
    double p = vm_polevl(w, vm_j0_pp, 7) / vm_polevl(w, vm_j0_pq, 7);
    double q = vm_polevl(w, vm_j0_qp, 8) / vm_polevl(w, vm_j0_qq, 8);
    double c = (ca + sa) * 0.70710678118654752440, s = (sa - ca) * 0.70710678118654752440;
    double big = (p * c - 5.0 / a * q * s) * 0.79788456080286535588 / sqrt(a);
    big = a == INFINITY ? 0.0 : big;
    return a <= 5.0 ? small : big;
}

VM_FORCE_INLINE double vm_j1_d(double a, double sa, double ca)
{
    double z = a * a, w = 25.0 / z;
    double small = vm_polevl(z, vm_j1_rp, 4) / vm_polevl(z, vm_j1_rq, 9) * a *
                   (z - 1.46819706421238932572e+01) * (z - 4.92184563216946036703e+01);
    double p = vm_polevl(w, vm_j1_pp, 7) / vm_polevl(w, vm_j1_pq, 7);
    double q = vm_polevl(w, vm_j1_qp, 8) / vm_polevl(w, vm_j1_qq, 8);
    double c = (sa - ca) * 0.70710678118654752440, s = -(sa + ca) * 0.70710678118654752440;
    double big = (p * c - 5.0 / a * q * s) * 0.79788456080286535588 / sqrt(a);
    big = a == INFINITY ? 0.0 : big;
    return a <= 5.0 ? small : big;
}

/* sin and cos of a float a >= 0 in double (vmath's exact reduction, the
 * float-accurate polynomials); inf and NaN give NaN. */
VM_FORCE_INLINE void vm_sincos_red_f32(double a, double *s, double *c)
{
    vm_quadrant q = vm_rem_pio2(a);
    double sr = vm_sinr(q.r), cr = vm_cosr(q.r);
    int odd = (q.q == 1.0) | (q.q == 3.0);
    double sv = odd ? cr : sr, cv = odd ? sr : cr;
    double nsv = -sv, ncv = -cv;
    *s = q.q >= 2.0 ? nsv : sv;
    *c = (q.q == 1.0) | (q.q == 2.0) ? ncv : cv;
}

/* max 1.2 ulp (j0) and 2.4 ulp (j1) where |J| >= 1e-3 (x in [-1e4, 1e4]),
 * 2e-10 absolute elsewhere (near the zeros), against glibc's j0/j1; 0 at
 * +-inf (PyTorch: NaN, a known difference). f64: 3.4e-16 absolute. */
VM_FORCE_INLINE float vm_bessel_j0_f32(float x)
{
    double a = fabs((double)x), s, c;
    vm_sincos_red_f32(a, &s, &c);
    return (float)vm_j0_d(a, s, c);
}

VM_FORCE_INLINE float vm_bessel_j1_f32(float x)
{
    double a = fabs((double)x), s, c;
    vm_sincos_red_f32(a, &s, &c);
    double v = vm_j1_d(a, s, c), nv = -v;
    return (float)(x < 0.0f ? nv : v);
}

VM_FORCE_INLINE double vm_bessel_j0_f64(double x)
{
    double a = fabs(x);
    return vm_j0_d(a, sin(a), cos(a));
}

VM_FORCE_INLINE double vm_bessel_j1_f64(double x)
{
    double a = fabs(x);
    double v = vm_j1_d(a, sin(a), cos(a));
    return x < 0.0 ? -v : v;
}

/* ---- erfcx ------------------------------------------------------------------------------- */
/* 1/(x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k to k = 16, in double:
 * erfcx's asymptotic series, below e^-100 relative from x = 10. */
VM_FORCE_INLINE double vm_erfcx_asym_d(double x)
{
    double w = 1.0 / (2.0 * x * x), s = 1.0, term = 1.0;
#pragma GCC unroll 16
    for (int k = 1; k <= 16; k++) {
        term *= -(2.0 * k - 1.0) * w;
        s += term;
    }
    return 0.56418958354775628695 / x * s;
}

/* max 2.4 ulp on R: e^(x^2) erfc(x). |x| < 1/2: e^(x^2) (1 - erf(x)); x in
 * [1/2, 10): vmath's erfc core without its e^(-x^2), g(t) / (1 + 2x); from
 * 10 the asymptotic series (in double); x <= -1/2: 2 e^(x^2) - erfcx(-x),
 * x^2 split exactly; inf below -9.38. */
VM_FORCE_INLINE float vm_erfcx_f32(float x)
{
    float a = vm_abs_f32(x);
    float ac = a > 10.0f ? 10.0f : a;
    float t = (ac - 2.0f) / (ac + 2.0f);
    float g = vm_erfc_g_f32(t);
    float big = g / (1.0f + 2.0f * ac);
    double ad = a >= 10.0f ? (double)a : 10.0;
    big = a >= 10.0f ? (float)vm_erfcx_asym_d(ad) : big;
    float sh, sl;
    vm_square2_f32(a, &sh, &sl);
    float e = vm_exp_f32(sh) * (1.0f + sl);
    e = sh > 89.0f ? INFINITY : e;
    float small = e * (1.0f - vm_erf_small_f32(x));
    float neg = 2.0f * e - big;
    float r = x < 0.0f ? neg : big;
    r = a < 0.5f ? small : r;
    return x != x ? x : r;
}

/* f64: e^(x^2) erfc(x) with x^2 split exactly (libm's exp and erfc) below
 * 12, the asymptotic series from 12 (error below e^-144). */
VM_FORCE_INLINE double vm_erfcx_f64(double x)
{
    double h = x * x, l = fma(x, x, -h);
    double direct = exp(h) * (1.0 + l) * erfc(x);
    double r = x >= 12.0 ? vm_erfcx_asym_d(x) : direct;
    r = x < -26.7 ? INFINITY : r;
    return x != x ? x : r;
}

/* ---- ndtri ------------------------------------------------------------------------------- */
static const double vm_ndtri_p0[5] = {-5.99633501014107895267E1, 9.80010754185999661536E1,
    -5.66762857469070293439E1, 1.39312609387279679503E1, -1.23916583867381258016E0};
static const double vm_ndtri_q0[9] = {1.0, 1.95448858338141759834E0, 4.67627912898881538453E0,
    8.63602421390890590575E1, -2.25462687854119370527E2, 2.00260212380060660359E2,
    -8.20372256168333339912E1, 1.59056225126211695515E1, -1.18331621121330003142E0};
static const double vm_ndtri_p1[9] = {4.05544892305962419923E0, 3.15251094599893866154E1,
    5.71628192246421288162E1, 4.40805073893200834700E1, 1.46849561928858024014E1,
    2.18663306850790267539E0, -1.40256079171354495875E-1, -3.50424626827848203418E-2,
    -8.57456785154685413611E-4};
static const double vm_ndtri_q1[9] = {1.0, 1.57799883256466749731E1, 4.53907635128879210584E1,
    4.13172038254672030440E1, 1.50425385692907503408E1, 2.50464946208309415979E0,
    -1.42182922854787788574E-1, -3.80806407691578277194E-2, -9.33259480895457427372E-4};
static const double vm_ndtri_p2[9] = {3.23774891776946035970E0, 6.91522889068984211695E0,
    3.93881025292474443415E0, 1.33303460815807542389E0, 2.01485389549179081538E-1,
    1.23716634817820021358E-2, 3.01581553508235416007E-4, 2.65806974686737550832E-6,
    6.23974539184983293730E-9};
static const double vm_ndtri_q2[9] = {1.0, 6.02427039364742014255E0, 3.67983563856160859403E0,
    1.37702099489081330271E0, 2.16236993594496635890E-1, 1.34204006088543189037E-2,
    3.28014464682127739104E-4, 2.89247864745380683936E-6, 6.79019408009981274425E-9};

/* Cephes ndtri for y0 in (0, 1), given log of the tail probability (the
 * smaller of y0 and 1 - y0): a rational function of (y0 - 1/2)^2 in the
 * middle, of 1/sqrt(-2 log y) in the tails. */
VM_FORCE_INLINE double vm_ndtri_d(double y0, double logy, double sq)
{
    int flip = y0 > 1.0 - 0.13533528323661269189;
    double y = flip ? 1.0 - y0 : y0;
    double yc = y0 - 0.5, y2 = yc * yc;
    double mid = (yc + yc * (y2 * vm_polevl(y2, vm_ndtri_p0, 5) / vm_polevl(y2, vm_ndtri_q0, 9))) *
                 2.50662827463100050242;
    double x = sq, z = 1.0 / x;
    double x0 = x - logy / x;
    double x1a = z * vm_polevl(z, vm_ndtri_p1, 9) / vm_polevl(z, vm_ndtri_q1, 9);
    double x1b = z * vm_polevl(z, vm_ndtri_p2, 9) / vm_polevl(z, vm_ndtri_q2, 9);
    double tail = x0 - (x < 8.0 ? x1a : x1b);
    tail = flip ? tail : -tail;
    double r = y > 0.13533528323661269189 ? mid : tail;
    r = y0 == 0.0 ? -INFINITY : r;
    r = y0 == 1.0 ? INFINITY : r;
    return (y0 < 0.0 || y0 > 1.0) ? NAN : r;
}

/* max 0.5 ulp on (0, 1) (in double, rounded once; the f64 column 3.9 ulp);
 * 0 -> -inf, 1 -> inf, outside [0, 1] NaN. */
VM_FORCE_INLINE float vm_ndtri_f32(float x)
{
    double y0 = x, y = x > 0.5f ? 1.0 - y0 : y0;
    double yl = y > 0.0 ? y : 1.0;
    double sq = sqrt(-2.0 * vm_logd(yl));
    return x != x ? x : (float)vm_ndtri_d(y0, vm_logd(sq), sq);
}

VM_FORCE_INLINE double vm_ndtri_f64(double x)
{
    double y = x > 0.5 ? 1.0 - x : x;
    double yl = y > 0.0 ? y : 1.0;
    double sq = sqrt(-2.0 * log(yl));
    return x != x ? x : vm_ndtri_d(x, log(sq), sq);
}

/* ---- polygamma, igamma, igammac ---------------------------------------------------------- */
/* Each in two versions generated by VM_SPECIAL_GAMMA: suffix _d with
 * vmath's vectorizable vm_logd/vm_expd (the f32 columns compute in double),
 * _l with libm's log/exp (the f64 columns). */

/* Stirling's series for ln Gamma(z), z >= 8, given lz = ln z (to 1/z^13: 1e-17). */
VM_FORCE_INLINE double vm_stirling_d(double z, double lz)
{
    double w = 1.0 / z, w2 = w * w;
    double ser = w * (1.0 / 12 + w2 * (-1.0 / 360 + w2 * (1.0 / 1260 + w2 * (-1.0 / 1680 +
                 w2 * (1.0 / 1188 + w2 * (-691.0 / 360360 + w2 * (1.0 / 156)))))));
    return (z - 0.5) * lz - z + 0.91893853320467274178 + ser;
}

/* Hurwitz zeta by Euler-Maclaurin: VM_ZETA_N terms, then at v = x + N the
 * integral, the half term and the Bernoulli terms B_2j / (2j)! to j = 8. */
#define VM_ZETA_N 16
static const double vm_zeta_b[8] = {1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600,
                                    1.0 / 47900160, -691.0 / 1307674368000.0,
                                    1.0 / 74724249600.0, -3617.0 / 10670622842880000.0};

#define VM_SPECIAL_GAMMA(SUF, LOG, EXP, K) \
/* ln Gamma(a), a > 0 */ \
VM_FORCE_INLINE double vm_lgamma_pos##SUF(double a) \
{ \
    int small = a < 8.0; \
    double z = small ? a + 8.0 : a; \
    double p = a * (a + 1) * (a + 2) * (a + 3) * (a + 4) * (a + 5) * (a + 6) * (a + 7); \
    double l = vm_stirling_d(z, LOG(z)); \
    return small ? l - LOG(p) : l; \
} \
/* psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for an integer n >= 1, x > 6 - N \
 * (else NaN); n = 0 is left to the caller (digamma). */ \
VM_FORCE_INLINE double vm_polygamma##SUF(double n, double x) \
{ \
    double s = n + 1.0, f = vm_lgamma_pos##SUF(s); \
    int odd = s * 0.5 != floor(s * 0.5); \
    double sum = 0.0; \
    _Pragma("GCC unroll 16") \
    for (int k = 0; k < VM_ZETA_N; k++) { \
        double v = x + k; \
        double t = EXP(f - s * LOG(fabs(v))), nt = -t; \
        sum += (v < 0.0) & odd ? nt : t; \
    } \
    double v = x + VM_ZETA_N, w = 1.0 / v, w2 = w * w; \
    double base = EXP(f - s * LOG(v)); \
    double poch = s, wp = w, tail = 0.5 + v / n; \
    _Pragma("GCC unroll 8") \
    for (int j = 0; j < 8; j++) { \
        tail += vm_zeta_b[j] * poch * wp; \
        poch *= (s + 2 * j + 1) * (s + 2 * j + 2); \
        wp *= w2; \
    } \
    double z = sum + base * tail, nz = -z; \
    double r = odd ? nz : z; \
    r = x == INFINITY ? 0.0 : r; \
    return (n < 1.0 || n != floor(n) || x <= 10.0 - VM_ZETA_N || x != x) ? NAN : r; \
} \
/* P(a, x) and Q(a, x) = 1 - P: the series of P for x < a + 1, Cephes's \
 * continued fraction of Q otherwise, K steps each (96 in f32: converged for \
 * a <= ~250); PyTorch's special values. q: which one. */ \
VM_FORCE_INLINE double vm_igam##SUF(double a, double x, int q) \
{ \
    double ax = EXP(a * LOG(x) - x - vm_lgamma_pos##SUF(a)); \
    double r = a, c = 1.0, ser = 1.0; \
    _Pragma("GCC unroll 8") \
    for (int k = 0; k < K; k++) { \
        r += 1.0; \
        c *= x / r; \
        ser += c; \
    } \
    double p = ser * ax / a; \
    double y = 1.0 - a, zz = x + y + 1.0, cc = 0.0; \
    double pkm2 = 1.0, qkm2 = x, pkm1 = x + 1.0, qkm1 = zz * x; \
    _Pragma("GCC unroll 8") \
    for (int k = 0; k < K; k++) { \
        cc += 1.0; \
        y += 1.0; \
        zz += 2.0; \
        double yc = y * cc; \
        double pk = pkm1 * zz - pkm2 * yc, qk = qkm1 * zz - qkm2 * yc; \
        double sc = fabs(pk) > 0x1p500 ? 0x1p-500 : 1.0; \
        pkm2 = pkm1 * sc; \
        pkm1 = pk * sc; \
        qkm2 = qkm1 * sc; \
        qkm1 = qk * sc; \
    } \
    double cf = pkm1 / qkm1 * ax; \
    int use_ser = x < a + 1.0; \
    double lower = use_ser ? p : 1.0 - cf, upper = use_ser ? 1.0 - p : cf; \
    double v = q ? upper : lower; \
    v = x == INFINITY ? (double)!q : v; \
    v = a == INFINITY ? (double)q : v; \
    v = x == 0.0 ? (double)q : v; \
    v = a == 0.0 ? (double)!q : v; \
    int bad = a < 0.0 || x < 0.0 || (a == 0.0 && x == 0.0) || (a == INFINITY && x == INFINITY); \
    return bad || a != a || x != x ? NAN : v; \
}

VM_SPECIAL_GAMMA(_d, vm_logd, vm_expd, 96)
VM_SPECIAL_GAMMA(_l, log, exp, 400)

/* max 0.5 ulp for n in [1, 4], x in (-6, 40] away from the poles (measured;
 * the f32 result computed in double; PyTorch's f32 kernel sums in float;
 * f64 column: 56 ulp); n = 0: digamma; x <= -6: NaN (a known difference). */
VM_FORCE_INLINE float vm_polygamma_f32(float n, float x)
{
    double r = vm_polygamma_d((double)n, (double)x);
    return n == 0.0f ? vm_digamma_f32(x) : (float)r;
}

VM_FORCE_INLINE double vm_polygamma_f64(double n, double x)
{
    double r = vm_polygamma_l(n, x);
    return n == 0.0 ? vm_digamma_f64(x) : r;
}

/* max 0.5 ulp (6e-11 absolute where the value is below 1e-3) for a in
 * (0, 100], x in [0, 400] (in double, rounded once): regularized lower
 * (igamma) and upper (igammac) incomplete gamma functions. The f64 column:
 * 6000 ulp (1.3e-12 relative; a ln x - x - lgamma(a) cancels). */
VM_FORCE_INLINE float vm_igamma_f32(float a, float x) { return (float)vm_igam_d(a, x, 0); }
VM_FORCE_INLINE float vm_igammac_f32(float a, float x) { return (float)vm_igam_d(a, x, 1); }
VM_FORCE_INLINE double vm_igamma_f64(double a, double x) { return vm_igam_l(a, x, 0); }
VM_FORCE_INLINE double vm_igammac_f64(double a, double x) { return vm_igam_l(a, x, 1); }

/* ---- frexp (exact) ----------------------------------------------------------------------- */
/* x = m 2^e, |m| in [1/2, 1); 0, inf and NaN: m = x, e = 0 (glibc, PyTorch).
 * Denormals are scaled by 2^25 first. */
VM_FORCE_INLINE float vm_frexp_mant_f32(float x)
{
    float s = vm_abs_f32(x) < 0x1p-126f ? x * 0x1p25f : x;
    float m = vm_from_bits_f32((vm_bits_f32(s) & 0x807fffffu) | 0x3f000000u);
    return (x == 0.0f || !vm_isfinite_f32(x)) ? x : m;
}

VM_FORCE_INLINE int32_t vm_frexp_exp_f32(float x)
{
    int den = vm_abs_f32(x) < 0x1p-126f;
    float s = den ? x * 0x1p25f : x;
    int32_t e = (int32_t)((vm_bits_f32(s) >> 23) & 0xffu) - 126 - (den ? 25 : 0);
    return (x == 0.0f || !vm_isfinite_f32(x)) ? 0 : e;
}

VM_FORCE_INLINE double vm_frexp_mant_f64(double x)
{
    int e;
    return frexp(x, &e);
}

VM_FORCE_INLINE int32_t vm_frexp_exp_f64(double x)
{
    int e;
    frexp(x, &e);
    return isfinite(x) ? e : 0;
}

#endif
