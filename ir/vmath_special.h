/* vmath_special.h - the scalar formulas of ops.def's "special functions and
 * remaining prims (issue 11)" block: erfcx, ndtri, i0, i0e, i1, i1e,
 * bessel_j0, bessel_j1, polygamma, igamma, igammac and frexp. Included at the
 * end of ir/vmath.h, whose rules they follow: static inline, plain C11,
 * branch-free selects in the f32 formulas (fixed trip counts, fully
 * unrolled), no libm call in them (sqrt is the instruction). Most f32
 * formulas compute in double and round once; the f64 formulas use libm.
 * The bound above each f32 function is measured by tests/test_vmath_special.c
 * against a long double or double reference, and asserted there.
 * Every f32 loop vectorizes with no calls (objdump of the eager clones: ymm
 * in the x86-64-v3 one, zmm in v4; the JIT's asm dump): every loop in a
 * formula has a fixed trip count and is unrolled completely, every branch
 * is a select (no ||, no fmax: gcc if-converts neither), and no int64 ->
 * double conversion (AVX2 has none). polygamma, igamma and igammac with a
 * scalar operand: gcc keeps the predicates on it in the loop as invariants
 * and gives up, so the eager kernels repeat the scalar over a block and run
 * the vector-vector loop (runtime/k_pointwise.c).
 * Coefficient tables: the Cephes Math Library (3-clause BSD), as PyTorch's
 * ATen/native/Math.h uses them; Temme's expansion's: scripts/temme.py.
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

/* max 2.3 ulp (j0) and 2.4 ulp (j1) where |J| >= 1e-3 (x in [-1e4, 1e4]),
 * 3e-10 absolute elsewhere (near the zeros), against glibc's j0/j1; 0 at
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
 * vmath's vectorizable vm_logd/vm_expd and vm_erfcd (the f32 columns
 * compute in double; every loop has a fixed trip count and is unrolled
 * completely, so the element loops around them vectorize), _l with libm's
 * log/exp/erfc and more terms, its long loops unrolled by 8 only (the f64
 * columns, scalar loops anyway). */
#define VM_STR_(s) #s
#define VM_UNROLL(n) _Pragma(VM_STR_(GCC unroll n))

/* Stirling's series of ln Gamma(z) - ((z - 1/2) ln z - z + ln sqrt(2 pi)),
 * z >= 8 (to 1/z^13: 1e-17). */
VM_FORCE_INLINE double vm_stirling_ser(double z)
{
    double w = 1.0 / z, w2 = w * w;
    return w * (1.0 / 12 + w2 * (-1.0 / 360 + w2 * (1.0 / 1260 + w2 * (-1.0 / 1680 +
           w2 * (1.0 / 1188 + w2 * (-691.0 / 360360 + w2 * (1.0 / 156)))))));
}

/* erfc in double, vectorizable (for igamma's f32 column): Cephes's rational
 * approximations, 1 - x T(x^2)/U(x^2) below 1, e^-x^2 P(x)/Q(x) on [1, 8),
 * e^-x^2 R(x)/S(x) beyond (x^2 split exactly for the exponential); 0 past
 * 26.5 (2e-307), 2 - erfc(-x) for x < 0. Max 10.5 ulp of a double (3e-16
 * relative, where 1 - erf cancels below 1) on [-6, 26.5] against erfcl
 * (tests/test_vmath_special.c). */
static const double vm_erfc_p[9] = {2.46196981473530512524E-10, 5.64189564831068821977E-1,
    7.46321056442269912687E0, 4.86371970985681366614E1, 1.96520832956077098242E2,
    5.26445194995477358631E2, 9.34528527171957607540E2, 1.02755188689515710272E3,
    5.57535335369399327526E2};
static const double vm_erfc_q[9] = {1.0, 1.32281951154744992508E1, 8.67072140885989742329E1,
    3.54937778887819891062E2, 9.75708501743205489753E2, 1.82390916687909736289E3,
    2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2};
static const double vm_erfc_r[6] = {5.64189583547755073984E-1, 1.27536670759978104416E0,
    5.01905042251180477414E0, 6.16021097993053585195E0, 7.40974269950448939160E0,
    2.97886665372100240670E0};
static const double vm_erfc_s[7] = {1.0, 2.26052863220117276590E0, 9.39603524938001434673E0,
    1.20489539808096656605E1, 1.70814450747565897222E1, 9.60896809063285878198E0,
    3.36907645100081516050E0};
static const double vm_erf_t[5] = {9.60497373987051638749E0, 9.00260197203842689217E1,
    2.23200534594684319226E3, 7.00332514112805075473E3, 5.55923013010394962768E4};
static const double vm_erf_u[6] = {1.0, 3.35617141647503099647E1, 5.21357949780152679795E2,
    4.59432382970980127987E3, 2.26290000613890934246E4, 4.92673942608635921086E4};

VM_FORCE_INLINE double vm_erfcd(double x)
{
    double a = fabs(x), ac = a > 26.5 ? 26.5 : a;
    double z = ac * ac, zl = fma(ac, ac, -z);
    double e = vm_expd(-z) * (1.0 - zl);
    double mid = e * vm_polevl(ac, vm_erfc_p, 9) / vm_polevl(ac, vm_erfc_q, 9);
    double far = e * vm_polevl(ac, vm_erfc_r, 6) / vm_polevl(ac, vm_erfc_s, 7);
    double r = ac < 8.0 ? mid : far;
    r = a > 26.5 ? 0.0 : r;
    double ef = x * vm_polevl(z, vm_erf_t, 5) / vm_polevl(z, vm_erf_u, 6);
    r = x < 0.0 ? 2.0 - r : r;
    r = a < 1.0 ? 1.0 - ef : r;
    return x != x ? x : r;
}

/* Hurwitz zeta by Euler-Maclaurin: VM_ZETA_N terms, then at u = v + N the
 * integral, the half term and the Bernoulli terms B_2j / (2j)! to j = 8. */
#define VM_ZETA_N 16
static const double vm_zeta_b[8] = {1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600,
                                    1.0 / 47900160, -691.0 / 1307674368000.0,
                                    1.0 / 74724249600.0, -3617.0 / 10670622842880000.0};

/* Temme's uniform expansion (DLMF 8.12.3-4), for a > 20, |x - a| < 0.3 a:
 * Q(a, x) = erfc(eta sqrt(a/2)) / 2 + e^(-a eta^2/2) / sqrt(2 pi a) sum_k c_k(eta) a^-k,
 * P = 1 - Q, eta^2 / 2 = x/a - 1 - ln(x/a), eta of the sign of x - a.
 * vm_temme_d[k][n]: the Taylor coefficients of c_k, computed in exact
 * rationals by scripts/temme.py (Cephes's table, igam.h, agrees); k < 12 and
 * n < 17 reach 1e-17 where |eta| < 0.35 and a > 20. */
static const double vm_temme_d[12][17] = {
    {-0.33333333333333331, 0.083333333333333329, -0.014814814814814815,
     0.0011574074074074073, 0.00035273368606701942, -0.0001787551440329218,
     3.9192631785224377e-05, -2.185448510679992e-06, -1.85406221071516e-06,
     8.2967113409530865e-07, -1.7665952736826078e-07, 6.7078535434014984e-09,
     1.0261809784240309e-08, -4.3820360184533529e-09, 9.1476995822367902e-10,
     -2.5514193994946248e-11, -5.8307721325504256e-11},
    {-0.0018518518518518519, -0.003472222222222222, 0.0026455026455026454,
     -0.00099022633744855963, 0.00020576131687242798, -4.018775720164609e-07,
     -1.8098550334489977e-05, 7.6491609160811098e-06, -1.6120900894563446e-06,
     4.647127802807434e-09, 1.3786334469157209e-07, -5.7525456035177047e-08,
     1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09,
     4.1627929918425828e-10, -8.5639070264929801e-11},
    {0.0041335978835978834, -0.0026813271604938273, 0.0007716049382716049,
     2.0093878600823047e-06, -0.0001073665322636516, 5.2923448829120125e-05,
     -1.2760635188618728e-05, 3.4235787340961378e-08, 1.3721957309062934e-06,
     -6.2989921383800548e-07, 1.4280614206064242e-07, -2.0477098421990866e-10,
     -1.409252991086752e-08, 6.2289740849220218e-09, -1.3670488396617114e-09,
     9.428356159014678e-13, 1.2872252400089318e-10},
    {0.00064943415637860077, 0.00022947209362139917, -0.0004691894943952557,
     0.00026772063206283885, -7.5618016718839766e-05, -2.3965051138672968e-07,
     1.1082654115347302e-05, -5.6749528269915965e-06, 1.4230900732435883e-06,
     -2.7861080291528143e-11, -1.6958404091930278e-07, 8.0994649053880827e-08,
     -1.9111168485973655e-08, 2.3928620439808118e-12, 2.0620131815488797e-09,
     -9.460496661855133e-10, 2.1541049775774907e-10},
    {-0.00086188829091671173, 0.00078403922172006662, -0.00029907248030319018,
     -1.4638452578843418e-06, 6.6414982154651219e-05, -3.9683650471794347e-05,
     1.1375726970678419e-05, 2.5074972262375329e-10, -1.6954149536558305e-06,
     8.9075075322053094e-07, -2.2929348340008049e-07, 2.9567941375440492e-11,
     2.8865829742708783e-08, -1.4189739437803219e-08, 3.4463580499464896e-09,
     -2.3024517174528067e-13, -3.9409233028046403e-10},
    {-0.00033679855336635813, -6.9728137583658571e-05, 0.00027727532449593918,
     -0.00019932570516188847, 6.797780477937208e-05, 1.4190629206439671e-07,
     -1.3594048189768693e-05, 8.018470256334202e-06, -2.2914811765080952e-06,
     -3.2524735512984538e-10, 3.4652846491085265e-07, -1.8447187191171344e-07,
     4.8240967037894184e-08, -1.7989466721743514e-14, -6.3061945000135231e-09,
     3.1624176287745678e-09, -7.8409242536974288e-10},
    {0.00053130793646399225, -0.00059216643735369393, 0.0002708782096718045,
     7.9023532326603281e-07, -8.1539693675619691e-05, 5.6116827531062497e-05,
     -1.8329116582843375e-05, -3.0796134506033047e-09, 3.4651553688036091e-06,
     -2.0291327396058603e-06, 5.7887928631490039e-07, 2.3386306738266568e-13,
     -8.828600746330484e-08, 4.7435958880408125e-08, -1.2545415020710383e-08,
     8.6496488580102926e-14, 1.6846058979264062e-09},
    {0.00034436760689237765, 5.1717909082605919e-05, -0.00033493161081142234,
     0.00028126951547632369, -0.00010976582244684731, -1.2741009095484485e-07,
     2.7744451511563645e-05, -1.8263488805711332e-05, 5.7876949497350525e-06,
     4.9387589339362701e-10, -1.0595367014026043e-06, 6.1667143761104078e-07,
     -1.7562973359060463e-07, -1.2974473287015439e-12, 2.6954236062889659e-08,
     -1.4578352908731272e-08, 3.887645959386175e-09},
    {-0.00065262391859530937, 0.00083949872067208726, -0.00043829709854172099,
     -6.9690914584205523e-07, 0.00016644846642067547, -0.00012783517679769218,
     4.6299532636913042e-05, 4.557909867922708e-09, -1.0595271125805195e-05,
     6.7833429048651668e-06, -2.1075476666258803e-06, -1.7213731432817144e-11,
     3.7735877416110978e-07, -2.1867506700122867e-07, 6.2202288040189267e-08,
     6.5977038267330002e-16, -9.5903864974256859e-09},
    {-0.00059676129019274626, -7.2048954160200109e-05, 0.0006782308837667328,
     -0.0006401475260262758, 0.00027750107634328704, 1.8197008380465151e-07,
     -8.4795071170685031e-05, 6.1051920825015314e-05, -2.1073920183404862e-05,
     -8.8585890141255993e-10, 4.5284535953805374e-06, -2.8427815022504407e-06,
     8.7082341778646408e-07, 3.6886101871706966e-12, -1.5344695190702061e-07,
     8.8624667787906948e-08, -2.5184812301826817e-08},
    {0.0013324454494800656, -0.0019144384985654776, 0.0011089369134596636,
     9.9324041226422995e-07, -0.00050874501293093194, 0.00042735056665392886,
     -0.00016858853767910798, -8.1301893922785004e-09, 4.5284402370562144e-05,
     -3.1270536747817339e-05, 1.0449868285303381e-05, 4.8435226265680926e-11,
     -2.1482565873456259e-06, 1.329369701097492e-06, -4.029569309210103e-07,
     -1.7567877666323291e-13, 7.0145043163668253e-08},
    {0.001579727660730835, 0.00016251626278391583, -0.0020633421035543276,
     0.0021389686185689098, -0.0010108559391263003, -3.9912705529919201e-07,
     0.00036235025084764691, -0.00028143901463712157, 0.00010449513336495887,
     2.1211418491830298e-09, -2.5779417251947842e-05, 1.7281818956040464e-05,
     -5.6413773872904282e-06, -1.1024320105776174e-11, 1.1223224418895174e-06,
     -6.8693396379526738e-07, 2.0653236975414888e-07},
};

#define VM_SPECIAL_GAMMA(SUF, LOG, EXP, ERFC, KS, KC, US, UC) \
/* ln Gamma(a), a > 0 */ \
VM_FORCE_INLINE double vm_lgamma_pos##SUF(double a) \
{ \
    int small = a < 8.0; \
    double z = small ? a + 8.0 : a; \
    double p = a * (a + 1) * (a + 2) * (a + 3) * (a + 4) * (a + 5) * (a + 6) * (a + 7); \
    double l = (z - 0.5) * LOG(z) - z + 0.91893853320467274178 + vm_stirling_ser(z); \
    return small ? l - LOG(p) : l; \
} \
/* n! zeta(n + 1, v) for v >= 0, given s = n + 1 and lf = ln n! (the \
 * factorial inside each exponential, so that large n neither overflows nor \
 * underflows on its own) */ \
VM_FORCE_INLINE double vm_hzeta##SUF(double s, double lf, double v) \
{ \
    double sum = 0.0; \
    VM_UNROLL(16) \
    for (int k = 0; k < VM_ZETA_N; k++) \
        sum += EXP(lf - s * LOG(v + k)); \
    double u = v + VM_ZETA_N, w = 1.0 / u, w2 = w * w; \
    double base = EXP(lf - s * LOG(u)); \
    double poch = s, wp = w, tail = 0.5 + u / (s - 1.0); \
    VM_UNROLL(8) \
    for (int j = 0; j < 8; j++) { \
        tail += vm_zeta_b[j] * poch * wp; \
        poch *= (s + 2 * j + 1) * (s + 2 * j + 2); \
        wp *= w2; \
    } \
    return sum + base * tail; \
} \
/* psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for an integer n >= 1 (else \
 * NaN; n = 0 is left to the caller, digamma). x < 0, x = -m + f, f in \
 * (0, 1), g = 1 - f: the m terms of zeta(n + 1, x) that precede f are \
 * (-1)^(n+1) (zeta(n + 1, g) - zeta(n + 1, 1 - x)), so every Hurwitz zeta \
 * is taken at a positive argument (f and g exact, 1 - x for a float x; \
 * 3 zetas of 17 exponentials and logarithms, where x >= 0 needs 1). At \
 * x = 0 and the negative integers: +inf for odd n, -inf for even n \
 * (PyTorch's zeta). */ \
VM_FORCE_INLINE double vm_polygamma##SUF(double n, double x) \
{ \
    double s = n + 1.0, lf = vm_lgamma_pos##SUF(s); \
    int odd = s * 0.5 != floor(s * 0.5), neg = x < 0.0; \
    double f = x - floor(x), g = ceil(x) - x; \
    double zx = vm_hzeta##SUF(s, lf, neg ? f : x); \
    double zg = vm_hzeta##SUF(s, lf, neg ? g : 1.0); \
    double zr = vm_hzeta##SUF(s, lf, neg ? 1.0 - x : 1.0); \
    double ng = -zg, nr = -zr; \
    double z = (zx + (odd ? ng : zg)) + (odd ? zr : nr); /* zx - zg first: 0 at f = 1/2 */ \
    z = neg ? z : zx; \
    double nz = -z, r = odd ? nz : z; \
    double pole = odd ? -INFINITY : INFINITY; \
    r = (x <= 0.0) & (x == floor(x)) ? pole : r; \
    r = x == INFINITY ? 0.0 : r; \
    return (n < 1.0) | (n != floor(n)) | (x != x) ? NAN : r; \
} \
/* ln(1 + t) - t for t > -1, given r = 1 + t (x / a): for t in (-1/2, 1) \
 * from u = t / (2 + t), |u| < 1/3, -t u + 2 (u^3/3 + u^5/5 + ... + u^37/37) \
 * (no cancellation; 1e-17 relative), else LOG(r) - t. */ \
VM_FORCE_INLINE double vm_log1pmx##SUF(double t, double r) \
{ \
    double u = t / (2.0 + t), u2 = u * u, p = 1.0 / 37; \
    VM_UNROLL(17) \
    for (int k = 35; k >= 3; k -= 2) \
        p = p * u2 + 1.0 / k; \
    double ser = 2.0 * u * u2 * p - t * u; \
    return (t > -0.5) & (t < 1.0) ? ser : LOG(r) - t; \
} \
/* P(a, x) and Q(a, x) = 1 - P, PyTorch's special values; q: which one. \
 * Temme's expansion for a > 20 and |x - a| < 0.3 a, else the series of P \
 * for x < a + 1 (KS terms) and Cephes's continued fraction of Q otherwise \
 * (KC steps). The prefactor x^a e^-x / Gamma(a): from a >= 8 as \
 * e^(a (ln(1 + t) - t)) sqrt(a / (2 pi)) e^-stirling(a), t = (x - a) / a, \
 * which does not cancel (the direct a ln x - x - ln Gamma(a) loses \
 * a ln x ulps); that exponential is also Temme's e^(-a eta^2/2). */ \
VM_FORCE_INLINE double vm_igam##SUF(double a, double x, int q) \
{ \
    double t = (x - a) / a, lm = vm_log1pmx##SUF(t, x / a); \
    double e = EXP(a * lm); \
    double ax = EXP(a * LOG(x) - x - vm_lgamma_pos##SUF(a)); \
    ax = a >= 8.0 ? e * sqrt(a * 0.15915494309189533577) * EXP(-vm_stirling_ser(a)) : ax; \
    double r = a, c = 1.0, ser = 1.0; \
    VM_UNROLL(US) \
    for (int k = 0; k < KS; k++) { \
        r += 1.0; \
        c *= x / r; \
        ser += c; \
    } \
    double p = ser * ax / a; \
    double y = 1.0 - a, zz = x + y + 1.0, cc = 0.0; \
    double pkm2 = 1.0, qkm2 = x, pkm1 = x + 1.0, qkm1 = zz * x; \
    VM_UNROLL(UC) \
    for (int k = 0; k < KC; k++) { \
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
    double e2 = -2.0 * lm; \
    double eta = copysign(sqrt(e2 > 0.0 ? e2 : 0.0), t), w = 1.0 / a, sum = 0.0; \
    VM_UNROLL(12) \
    for (int k = 11; k >= 0; k--) { \
        double ck = vm_temme_d[k][16]; \
        VM_UNROLL(16) \
        for (int j = 15; j >= 0; j--) \
            ck = ck * eta + vm_temme_d[k][j]; \
        sum = sum * w + ck; \
    } \
    double rt = e * sum / sqrt(6.28318530717958647693 * a), nrt = -rt; \
    double z = eta * sqrt(0.5 * a); \
    double tail = 0.5 * ERFC(fabs(z)) + (z < 0.0 ? nrt : rt); /* Q if x > a, else P */ \
    double tq = z < 0.0 ? 1.0 - tail : tail, tp = z < 0.0 ? tail : 1.0 - tail; \
    int use_ser = x < a + 1.0; \
    double lower = use_ser ? p : 1.0 - cf, upper = use_ser ? 1.0 - p : cf; \
    int asym = (a > 20.0) & (fabs(t) < 0.3); \
    lower = asym ? tp : lower; \
    upper = asym ? tq : upper; \
    double v = q ? upper : lower; \
    v = x == INFINITY ? (double)!q : v; \
    v = a == INFINITY ? (double)q : v; \
    v = x == 0.0 ? (double)q : v; \
    v = a == 0.0 ? (double)!q : v; \
    int bad = (a < 0.0) | (x < 0.0) | ((a == 0.0) & (x == 0.0)) | \
              ((a == INFINITY) & (x == INFINITY)) | (a != a) | (x != x); /* no ||: one select */ \
    return bad ? NAN : v; \
}

VM_SPECIAL_GAMMA(_d, vm_logd, vm_expd, vm_erfcd, 64, 96, 64, 96)
VM_SPECIAL_GAMMA(_l, log, exp, erfc, 128, 128, 8, 8)

/* max 0.5 ulp for n in [1, 4], x in [-1000, 40], and n in [5, 12], x in
 * [-60, 60], away from the poles (measured against long double sums; the
 * f32 result computed in double, rounded once; PyTorch's f32 kernel sums in
 * float). The f64 column: 88 ulp, times the sum's cancellation (sum |terms|
 * / |sum|) near the zeros of the even orders. n = 0: digamma. */
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

/* Regularized lower (igamma) and upper (igammac) incomplete gamma
 * functions, in double, rounded once: max 0.5 ulp for a in (0, 100], x in
 * [0, 400] (6e-11 absolute where the value is below 1e-3: 1 - P cancels
 * for small a), and for a in [20, 1e4], x in a +- 40 sqrt(a) (every value,
 * to the float denormals). The f64 column: 11000 ulp where a <= 100 (the
 * same 1 - P) and 3200 ulp for large a (at values near 1e-300, where the
 * exponent a (ln(1 + t) - t) ~ -700 carries its own rounding). */
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
