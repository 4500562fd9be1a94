/* test_conv_small.c - the kernels behind P11 and P12 (docs/perf.md, Small
 * convolutions: P11 and P12): max_pool2d's windows 2x2 and 3x3 at stride 2
 * (runtime/k_conv.c, max_win_plane) bit for bit against a scalar tap walk,
 * NaN payloads and signed zeros included, over padding 0 and 1, ceil mode,
 * odd sizes, f32 and f64, an NHWC view (the general tap walk), 1 and 2
 * threads; and the conv rule's choices for small images (runtime/
 * k_conv_direct.c): a dense conv of one input channel on the grid kernel,
 * Winograd at 14x14 with 16-48 channels (not at 7x7), each against an
 * f64 conv (the GEMM paths on f64 copies), also where its blocks start at
 * every output row (test_row_aligned). On a CPU without AVX2 + FMA the
 * rule's kernels differ: the tests say so and check only the results. And
 * convolutions whose outputs are small (runtime/k_conv_gemm.c: whole images
 * a GEMM) against the definition. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/conv_direct.h"
#include "../runtime/gemm.h"
#include "util.h"

/* Whether this CPU runs the AVX2 direct kernels (the rule measured here). */
static bool has_avx2(void)
{
    rt_conv_isa_force(-1);
    return rt_conv_isa_current() == RT_CONV_AVX2;
}

/* ---- max_pool2d windows ----------------------------------------------------------------- */

/* Element i of a pool input from r (N(0,1)) and u (U(0,1)): a NaN with
 * its own payload, -0, +0 or -inf at random, else r, made negative in every
 * other run of 64 elements so that many windows top out at zeros of both
 * signs (ties) or hold two NaNs. */
static double special(int64_t i, double r, double u, bool f64, uint64_t *bits)
{
    *bits = 0;
    if (u < 0.08) {
        *bits = f64 ? 0x7ff8000000000000u | (uint64_t)i : 0x7fc00000u | (uint64_t)(i & 0x3fffff);
        return NAN;
    }
    return u < 0.25 ? -0.0 : u < 0.4 ? 0.0 : u < 0.43 ? -INFINITY : i / 64 % 2 ? r : -fabs(r);
}

/* Fills x (contiguous f32 or f64) with special(). */
static void fill_special(tj_tensor *x)
{
    bool f64 = tj_dtype_of(x) == TJ_F64;
    tj_tensor *r = tj_randn(TJ_F64, 1, (int64_t[]){tj_numel(x)});
    tj_tensor *u = tj_rand(TJ_F64, 1, (int64_t[]){tj_numel(x)});
    const double *rd = tj_data(r), *ud = tj_data(u);
    for (int64_t i = 0; i < tj_numel(x); i++) {
        uint64_t bits;
        double v = special(i, rd[i], ud[i], f64, &bits);
        if (f64) {
            double *d = (double *)tj_data(x) + i;
            *d = v;
            if (bits)
                memcpy(d, &bits, sizeof bits);
        } else {
            float *d = (float *)tj_data(x) + i, f = (float)v;
            uint32_t b32 = (uint32_t)bits;
            *d = f;
            if (bits)
                memcpy(d, &b32, sizeof b32);
        }
    }
}

/* The tap walk's max: taps row by row, then column; v = x where x > v or x
 * is NaN; padding and what lies past the input skipped. */
static double ref_max(const tj_tensor *x, int64_t n, int64_t c, int64_t oy, int64_t ox, int64_t k,
                      int64_t p, uint64_t *bits)
{
    const int64_t *sh = tj_shape((tj_tensor *)x);
    bool f64 = tj_dtype_of(x) == TJ_F64;
    double v = -INFINITY;
    uint64_t vb = f64 ? 0xfff0000000000000u : 0xff800000u;
    for (int64_t kh = 0; kh < k; kh++)
        for (int64_t kw = 0; kw < k; kw++) {
            int64_t ih = oy * 2 - p + kh, iw = ox * 2 - p + kw;
            if (ih < 0 || ih >= sh[2] || iw < 0 || iw >= sh[3])
                continue;
            int64_t at = ((n * sh[1] + c) * sh[2] + ih) * sh[3] + iw;
            double xv;
            uint64_t xb = 0;
            if (f64) {
                xv = ((const double *)tj_data((tj_tensor *)x))[at];
                memcpy(&xb, &xv, sizeof xv);
            } else {
                float f = ((const float *)tj_data((tj_tensor *)x))[at];
                uint32_t b;
                memcpy(&b, &f, sizeof f);
                xv = f, xb = b;
            }
            if (xv > v || xv != xv)
                v = xv, vb = xb;
        }
    *bits = vb;
    return v;
}

/* y (the pool of contiguous x, window k, stride 2, padding p) bit for bit
 * against ref_max. */
static void check_pool(const char *what, tj_tensor *y, const tj_tensor *x, int64_t k, int64_t p)
{
    if (!y)
        fail_msg("%s: %s", what, tj_last_error());
    const int64_t *ys = tj_shape(y);
    bool f64 = tj_dtype_of(y) == TJ_F64;
    int64_t i = 0;
    for (int64_t n = 0; n < ys[0]; n++)
        for (int64_t c = 0; c < ys[1]; c++)
            for (int64_t oy = 0; oy < ys[2]; oy++)
                for (int64_t ox = 0; ox < ys[3]; ox++, i++) {
                    uint64_t want, got = 0;
                    ref_max(x, n, c, oy, ox, k, p, &want);
                    if (f64) {
                        memcpy(&got, (const double *)tj_data(y) + i, 8);
                    } else {
                        uint32_t g32;
                        memcpy(&g32, (const float *)tj_data(y) + i, 4);
                        got = g32;
                    }
                    if (got != want)
                        fail_msg("%s: output [%lld,%lld,%lld,%lld] bits %llx, the tap walk %llx",
                                 what, (long long)n, (long long)c, (long long)oy, (long long)ox,
                                 (unsigned long long)got, (unsigned long long)want);
                }
}

/* n, c, h, w, kernel, padding, ceil mode */
static const int64_t pools[][7] = {
    {2, 3, 28, 28, 2, 0, 0},   /* P12's first pool, a few channels */
    {1, 4, 14, 14, 2, 0, 0},   /* P12's second: 7 columns */
    {1, 2, 15, 13, 2, 0, 0},   /* odd: a row and a column left over */
    {1, 2, 15, 13, 2, 0, 1},   /* odd, ceil: the last window hangs over */
    {1, 2, 9, 10, 2, 1, 0},    /* 2x2 with padding */
    {1, 3, 112, 112, 3, 1, 0}, /* P11's pool */
    {2, 2, 17, 23, 3, 1, 0},   /* odd sizes */
    {1, 2, 17, 24, 3, 1, 1},   /* ceil */
    {1, 2, 8, 9, 3, 0, 0},     /* 3x3 without padding */
    {1, 2, 8, 9, 3, 0, 1},
    {1, 1, 1, 1, 3, 1, 0},     /* one element, all but one tap padding */
    {1, 1, 2, 3, 2, 0, 1},
    {3, 1, 4, 70, 3, 1, 0},    /* wide rows: whole vectors and a tail */
    {1, 2, 6, 70, 2, 0, 0},    /* 2x2, 35 columns: two vectors of 16 (AVX-512) and a tail */
    {1, 2, 4, 32, 2, 1, 0},    /* 2x2 padded: 15 inner columns, the edges by max_at */
};
enum { NPOOL = sizeof pools / sizeof *pools };

/* On each instruction set the pools take (AVX-512: the 2x2 rows by
 * vpermt2ps, k_pool_avx512.c; below it the plain loop), 1 and 2 threads. */
static void test_max_windows_bits(void **state)
{
    (void)state;
    int before = tj_num_threads();
    tjg_isa_force(-1);
    tjg_isa best = tjg_isa_current();
    for (int run = 0; run < (best >= TJG_AVX512 ? 4 : 2); run++) {
        int threads = run % 2 + 1;
        tjg_isa_force(run < 2 ? -1 : TJG_AVX2);
        tj_set_num_threads(threads);
        for (int f64 = 0; f64 < 2; f64++)
            for (int k = 0; k < NPOOL; k++) {
                const int64_t *s = pools[k];
                char what[96];
                snprintf(what, sizeof what, "pool %d (%s, %d threads, %s)", k, f64 ? "f64" : "f32",
                         threads, tjg_isa_name(tjg_isa_current()));
                tj_tensor *x = tj_zeros(f64 ? TJ_F64 : TJ_F32, 4, (int64_t[]){s[0], s[1], s[2], s[3]});
                fill_special(x);
                int64_t kk[2] = {s[4], s[4]}, st[2] = {2, 2}, pd[2] = {s[5], s[5]};
                tj_max_pool2d_options o = tj_max_pool2d_defaults();
                o.stride = st, o.padding = pd, o.ceil_mode = s[6];
                check_pool(what, tj_max_pool2d_ex(x, kk, &o, NULL), x, s[4], s[5]);
                /* the same values as an NHWC view: the general tap walk */
                tj_tensor *nhwc = tj_contiguous(tj_permute(x, (int[]){0, 2, 3, 1}));
                tj_tensor *view = tj_permute(nhwc, (int[]){0, 3, 1, 2});
                strcat(what, ", NHWC view");
                check_pool(what, tj_max_pool2d_ex(view, kk, &o, NULL), x, s[4], s[5]);
            }
    }
    tjg_isa_force(-1);
    tj_set_num_threads(before);
}

/* ---- the conv rule on small images ------------------------------------------------------- */

/* The rule's conv of x [n, c, h, w] by o filters k x k (padding k / 2, bias)
 * against the f64 conv: within tol, and on AVX2 run on kernel `kind` (-1:
 * none of the direct kernels). */
static void rule_conv(const int64_t *s, int64_t o, int64_t k, int kind, double tol)
{
    tj_tensor *x = tj_randn(TJ_F32, 4, s);
    tj_tensor *w = tj_randn(TJ_F32, 4, (int64_t[]){o, s[1], k, k});
    tj_tensor *b = tj_randn(TJ_F32, 1, (int64_t[]){o});
    float *wd = tj_data(w);
    for (int64_t i = 0; i < tj_numel(w); i++)
        wd[i] /= sqrtf((float)(s[1] * k * k));
    int64_t one[2] = {1, 1}, pd[2] = {k / 2, k / 2};
    unsetenv("TJIT_CONV");
    bool avx2 = has_avx2();
    int64_t runs[4];
    for (int q = 0; q < 4; q++)
        runs[q] = rt_conv_direct_runs(RT_CONV_AVX2, (rt_conv_kind)q);
    tj_tensor *y = tj_conv2d(x, w, b, one, pd, one, 1);
    if (!y)
        fail_msg("conv2d [%lld,%lld,%lld,%lld] -> %lld: %s", (long long)s[0], (long long)s[1],
                 (long long)s[2], (long long)s[3], (long long)o, tj_last_error());
    tj_tensor *ref = tj_conv2d(tj_cast(x, TJ_F64), tj_cast(w, TJ_F64), tj_cast(b, TJ_F64), one,
                               pd, one, 1);
    double e = tu_max_rel_err(y, ref);
    if (e > tol)
        fail_msg("conv2d [%lld,%lld,%lld,%lld] -> %lld: error %g over %g", (long long)s[0],
                 (long long)s[1], (long long)s[2], (long long)s[3], (long long)o, e, tol);
    for (int q = 0; q < 4 && avx2; q++)
        if (rt_conv_direct_runs(RT_CONV_AVX2, (rt_conv_kind)q) != runs[q] + (q == kind))
            fail_msg("conv2d [%lld,%lld,%lld,%lld] -> %lld, %lldx%lld: kernel %d ran %lld times, "
                     "expected kernel %d", (long long)s[0], (long long)s[1], (long long)s[2],
                     (long long)s[3], (long long)o, (long long)k, (long long)k, q,
                     (long long)(rt_conv_direct_runs(RT_CONV_AVX2, (rt_conv_kind)q) - runs[q]),
                     kind);
}

/* One input channel (P12's first conv): the grid kernel, not the GEMM
 * paths' tap walk; odd sizes and output channels past a block of 4. Where
 * the grid kernel would keep under 70% of its work (5 channels in two
 * blocks of 4, a 1x1 image) the GEMM paths still run. */
static void test_one_channel(void **state)
{
    (void)state;
    if (!has_avx2())
        print_message("skipped: the rule's kernel (AVX2 + FMA only); results checked\n");
    /* x [n, 1, h, w], outputs, the kernel the rule runs */
    static const int64_t xs[][6] = {
        {1, 1, 28, 28, 32, RT_CONV_GRID}, {2, 1, 13, 7, 5, -1},          {1, 1, 1, 1, 3, -1},
        {1, 1, 30, 31, 33, RT_CONV_GRID}, {3, 1, 9, 40, 8, RT_CONV_GRID},
    };
    for (int k = 0; k < 5; k++) {
        rule_conv(xs[k], xs[k][4], 3, (int)xs[k][5], 1e-5);
        rule_conv(xs[k], xs[k][4], 5, (int)xs[k][5], 1e-5);
    }
}

/* Winograd at 14x14 with 16-48 channels (68% of F(2x2)'s grid kept, so
 * Winograd fits; F(4x4)'s products per kept output are then within 0.8 of
 * F(2x2)'s, so F(4x4) runs: P12's second conv), not at 14x13 (63%: the
 * cut column of tiles) nor 7x7 (67%), nor where its weights are too many
 * to keep. */
static void test_wino_small_images(void **state)
{
    (void)state;
    if (!has_avx2())
        print_message("skipped: the rule's kernel (AVX2 + FMA only); results checked\n");
    rule_conv((int64_t[]){1, 32, 14, 14}, 64, 3, RT_CONV_WINO4, 1e-4);
    rule_conv((int64_t[]){2, 16, 14, 14}, 20, 3, RT_CONV_WINO4, 1e-4);
    rule_conv((int64_t[]){1, 48, 14, 13}, 48, 3, RT_CONV_GRID, 1e-5);   /* 63% kept */
    rule_conv((int64_t[]){1, 32, 7, 7}, 64, 3, RT_CONV_ROWS, 1e-5);
    /* 512 -> 512: F(2x2)'s transformed weights (16 MiB and more) are past
     * what is kept across calls, so each call would transform them again */
    rule_conv((int64_t[]){1, 512, 7, 7}, 512, 3, RT_CONV_ROWS, 1e-4);
}

/* Grid blocks that start at every output row where its valid columns are
 * whole blocks of 24 and one of 16 (the stem's 112, and 16, 40, 48): no junk
 * columns computed, the last block on the 4 x 2 tail kernel, channels past
 * a block of 4 through the tile; against the f64 conv, on 1 and 2
 * threads. */
static void test_row_aligned(void **state)
{
    (void)state;
    if (!has_avx2())
        print_message("skipped: the rule's kernel (AVX2 + FMA only); results checked\n");
    int threads = tj_num_threads();
    for (int t = 1; t <= 2; t++) {
        tj_set_num_threads(t);
        rule_conv((int64_t[]){1, 3, 20, 48}, 8, 3, RT_CONV_GRID, 1e-5);    /* 2 x 24 */
        rule_conv((int64_t[]){2, 3, 17, 40}, 7, 5, RT_CONV_GRID, 1e-5);    /* 24 + 16, 4 + 3 */
        rule_conv((int64_t[]){1, 3, 40, 16}, 12, 7, RT_CONV_GRID, 1e-5);    /* the tail alone */
        rule_conv((int64_t[]){1, 3, 6, 112}, 64, 7, RT_CONV_GRID, 1e-5);   /* the stem's row */
    }
    tj_set_num_threads(threads);
}

/* ---- small outputs: whole images per GEMM ------------------------------------------- */

/* conv2d by the definition, in double: x [n,c,h,w] (any strides), w
 * [o,c/g,kh,kw], bias or NULL; stride s, padding p, dilation d, groups g. */
static tj_tensor *conv_by_definition(tj_tensor *x, tj_tensor *w, tj_tensor *b, const int64_t *s,
                                     const int64_t *p, const int64_t *d, int64_t g)
{
    x = tj_contiguous(tj_cast(x, TJ_F64));
    w = tj_contiguous(tj_cast(w, TJ_F64));
    const int64_t *xs = tj_shape(x), *ws = tj_shape(w);
    int64_t oh = (xs[2] + 2 * p[0] - d[0] * (ws[2] - 1) - 1) / s[0] + 1;
    int64_t ow = (xs[3] + 2 * p[1] - d[1] * (ws[3] - 1) - 1) / s[1] + 1, og = ws[0] / g;
    tj_tensor *y = tj_zeros(TJ_F64, 4, (int64_t[]){xs[0], ws[0], oh, ow});
    const double *xd = tj_data(x), *wd = tj_data(w);
    const double *bd = b ? tj_data(tj_contiguous(tj_cast(b, TJ_F64))) : NULL;
    double *yd = tj_data(y);
    for (int64_t n = 0; n < xs[0]; n++)
        for (int64_t o = 0; o < ws[0]; o++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    double acc = bd ? bd[o] : 0;
                    for (int64_t c = 0; c < ws[1]; c++)
                        for (int64_t u = 0; u < ws[2]; u++)
                            for (int64_t v = 0; v < ws[3]; v++) {
                                int64_t r = i * s[0] - p[0] + u * d[0], q = j * s[1] - p[1] + v * d[1];
                                if (r < 0 || r >= xs[2] || q < 0 || q >= xs[3])
                                    continue;
                                int64_t ci = o / og * ws[1] + c;
                                acc += xd[((n * xs[1] + ci) * xs[2] + r) * xs[3] + q] *
                                       wd[((o * ws[1] + c) * ws[2] + u) * ws[3] + v];
                            }
                    yd[((n * ws[0] + o) * oh + i) * ow + j] = acc;
                }
    return y;
}

/* Outputs of fewer than 64 pixels an image: several whole images share a GEMM
 * (runtime/k_conv_gemm.c), with the columns transposed where the kernel is
 * wider than the output (a weight gradient's convolution: the kernel is the
 * image, the output the 3x3 kernel). Against the definition, f32 and f64 (and
 * i32, exact), bias or none, strides, padding, dilation, groups, a batch that
 * does not divide into the tiles, a transposed input view; 1 and 2 threads. */
static void test_small_outputs(void **state)
{
    (void)state;
    typedef struct {
        int64_t x[4], o, k[2], s[2], p[2], d[2], g;
    } cs;
    static const cs cases[] = {
        {{13, 3, 10, 10}, 5, {10, 10}, {1, 1}, {1, 1}, {1, 1}, 1},   /* the weight gradient's */
        {{9, 4, 6, 6}, 6, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1},        /* 3x3 outputs, not wide */
        {{5, 4, 9, 9}, 6, {3, 3}, {1, 1}, {0, 0}, {2, 2}, 2},        /* dilation, groups */
        {{7, 2, 12, 11}, 3, {9, 8}, {2, 1}, {2, 0}, {1, 1}, 1},      /* wide, uneven */
        {{3, 6, 8, 8}, 4, {8, 8}, {1, 1}, {0, 0}, {1, 1}, 2},        /* one pixel an image */
        {{1, 3, 10, 10}, 4, {10, 10}, {1, 1}, {1, 1}, {1, 1}, 1},    /* one image, wide */
        {{1, 6, 9, 9}, 6, {8, 8}, {1, 1}, {1, 1}, {1, 1}, 6},        /* depthwise's gradient */
    };
    int threads = tj_num_threads();
    for (int t = 1; t <= 2; t++) {
        tj_set_num_threads(t);
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            const cs *c = &cases[k];
            for (int v = 0; v < 4; v++) {   /* f32, f32 + bias, f64 on a view, i32 */
                tj_dtype dt = v == 2 ? TJ_F64 : v == 3 ? TJ_I32 : TJ_F32;
                int64_t ts[4] = {c->x[1], c->x[0], c->x[2], c->x[3]};
                tj_tensor *x = v == 2 ? tj_transpose(tj_randn(TJ_F64, 4, ts), 0, 1)
                                      : tj_randn(TJ_F32, 4, c->x);
                tj_tensor *w = tj_randn(TJ_F32, 4, (int64_t[]){c->o, c->x[1] / c->g, c->k[0], c->k[1]});
                tj_tensor *b = v == 1 ? tj_randn(TJ_F32, 1, (int64_t[]){c->o}) : NULL;
                if (dt == TJ_I32) {
                    x = tj_cast(tj_round(tj_mul_s(x, 3)), TJ_I32);
                    w = tj_cast(tj_round(tj_mul_s(w, 3)), TJ_I32);
                }
                tj_tensor *y = tj_conv2d(x, tj_cast(w, dt), b, c->s, c->p, c->d, c->g);
                if (!y)
                    fail_msg("case %zu, variant %d: %s", k, v, tj_last_error());
                tj_tensor *ref = conv_by_definition(x, w, b, c->s, c->p, c->d, c->g);
                assert_int_equal(tj_ndim(y), 4);
                for (int d = 0; d < 4; d++)
                    assert_int_equal(tj_shape(y)[d], tj_shape(ref)[d]);
                double e = tu_max_rel_err(tj_cast(y, TJ_F64), ref);
                if (e > (dt == TJ_I32 ? 0 : dt == TJ_F64 ? 1e-12 : 1e-4))
                    fail_msg("case %zu, variant %d, %d threads: error %g", k, v, t, e);
            }
        }
    }
    tj_set_num_threads(threads);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_max_windows_bits),
        T(test_one_channel),
        T(test_wino_small_images),
        T(test_row_aligned),
        T(test_small_outputs),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
