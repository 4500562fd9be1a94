/* test_conv_wino.c - Winograd F(4x4, 3x3) (runtime/k_conv_direct.c,
 * conv_wino_kernels.h: wino4_in, wino4_out) against an f64 reference and
 * against F(2x2, 3x3): output sizes that cut tiles at the border (1x1, 3x3,
 * 5x7, 57x57), padding 0 and 1, groups, bias, an NHWC view, bf16 in and
 * out, 1 and 2 threads, TJIT_CONV=wino4 forcing it (and the grid kernel where it does not
 * fit), and the rule's choice on the ResNet shapes; on each instruction
 * set the CPU has (AVX-512F, then AVX2 + FMA). On a CPU with neither there
 * is no Winograd: the tests say so and check only that the forced path
 * still gives the right result.
 *
 * The bound: data as P6's (input N(0,1), weights N(0,1)/sqrt(fan_in),
 * outputs of order 1), |F(4x4) - f64| <= WINO4_TOL * max(1, |f64|);
 * benchmarks/probes/conv_shapes.c err measured 3.1e-5 (64 channels) to
 * 4.8e-5 (512) of the outputs' rms, F(2x2) 1.8e-6 to 3.3e-6
 * (docs/perf.md, Winograd F(4x4, 3x3) on AVX2). */
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
#include "util.h"

#define WINO4_TOL 1e-4   /* F(4x4) against f64, times max(1, |ref|) */
#define WINO2_TOL 1e-5   /* F(2x2) against f64 */

/* The instruction set the tests run on (rt_conv_isa_force: each of the
 * CPU's in turn, main). */
static rt_conv_isa isa;

/* Whether it has the Winograd kernels (AVX-512F, AVX2 + FMA). */
static bool has_wino(void)
{
    return isa != RT_CONV_NONE;
}

/* conv2d on path (TJIT_CONV, NULL: the rule); checks that kernel `kind` ran
 * once when kind >= 0. */
static tj_tensor *conv_on(const char *path, int kind, tj_tensor *x, tj_tensor *w, tj_tensor *b,
                          int64_t pad, int64_t groups)
{
    if (path)
        setenv("TJIT_CONV", path, 1);
    else
        unsetenv("TJIT_CONV");
    int64_t one[2] = {1, 1}, pd[2] = {pad, pad};
    int64_t before = kind >= 0 ? rt_conv_direct_runs(isa, (rt_conv_kind)kind) : 0;
    tj_tensor *y = tj_conv2d(x, w, b, one, pd, one, groups);
    if (!y)
        fail_msg("conv2d (%s): %s", path ? path : "rule", tj_last_error());
    if (kind >= 0)
        assert_int_equal(rt_conv_direct_runs(isa, (rt_conv_kind)kind), before + 1);
    unsetenv("TJIT_CONV");
    return y;
}

/* x [n, c, h, w], w [o, c/groups, 3, 3], padding, groups, bias */
static const int64_t shapes[][8] = {
    {1, 4, 1, 1, 5, 1, 1, 1},    /* 1x1 output: one tile, 15 of 16 outputs cut */
    {2, 6, 3, 3, 7, 0, 1, 0},    /* 1x1, padding 0 */
    {1, 8, 3, 3, 8, 1, 1, 1},    /* 3x3 */
    {2, 5, 5, 5, 9, 0, 1, 1},    /* 3x3, padding 0 */
    {1, 12, 5, 7, 20, 1, 1, 0},  /* 5x7 */
    {1, 8, 7, 9, 6, 0, 1, 1},    /* 5x7, padding 0 */
    {1, 8, 57, 57, 12, 1, 1, 1}, /* 57x57: whole rows of 8 tiles and a cut one */
    {1, 6, 59, 59, 4, 0, 1, 0},  /* 57x57, padding 0 */
    {2, 16, 13, 11, 16, 1, 2, 1}, /* groups */
    {1, 8, 10, 10, 8, 1, 8, 0},  /* depthwise */
    {1, 64, 20, 20, 64, 1, 1, 0}, /* P6's channels */
};
enum { NSHAPE = sizeof shapes / sizeof *shapes };

/* Input N(0,1) and weights N(0,1)/sqrt(fan_in) (and a bias N(0,1)) of
 * shape s. */
static void data(const int64_t *s, tj_tensor **x, tj_tensor **w, tj_tensor **b)
{
    *x = tj_randn(TJ_F32, 4, (int64_t[]){s[0], s[1], s[2], s[3]});
    *w = tj_randn(TJ_F32, 4, (int64_t[]){s[4], s[1] / s[6], 3, 3});
    float *wd = tj_data(*w);
    for (int64_t i = 0; i < tj_numel(*w); i++)
        wd[i] /= sqrtf((float)(s[1] / s[6] * 9));
    *b = s[7] ? tj_randn(TJ_F32, 1, (int64_t[]){s[4]}) : NULL;
}

/* F(4x4) and F(2x2) forced on every shape, 1 and 2 threads: within their
 * bounds of the f64 conv (the GEMM paths on f64 copies), and F(4x4) within
 * the sum of both bounds of F(2x2). */
static void test_wino4_f64(void **state)
{
    (void)state;
    bool wino = has_wino();
    if (!wino)
        print_message("skipped: no Winograd kernels on this CPU (AVX-512F or AVX2 + FMA); "
                      "the forced paths run the grid kernel\n");
    int before = tj_num_threads();
    tj_manual_seed(43);
    double worst4 = 0, worst2 = 0;
    for (int k = 0; k < NSHAPE; k++) {
        const int64_t *s = shapes[k];
        tj_tensor *x, *w, *b;
        data(s, &x, &w, &b);
        tj_tensor *ref = conv_on("gemm", -1, tj_cast(x, TJ_F64), tj_cast(w, TJ_F64),
                                 b ? tj_cast(b, TJ_F64) : NULL, s[5], s[6]);
        for (int t = 1; t <= 2; t++) {
            tj_set_num_threads(t);
            tj_tensor *y4 = conv_on("wino4", wino ? RT_CONV_WINO4 : -1, x, w, b, s[5], s[6]);
            tj_tensor *y2 = conv_on("wino", wino ? RT_CONV_WINO : -1, x, w, b, s[5], s[6]);
            double e4 = tu_max_rel_err(y4, ref), e2 = tu_max_rel_err(y2, ref);
            if (e4 > WINO4_TOL || e2 > WINO2_TOL)
                fail_msg("shape %d, %d threads: F(4x4) %.3g (bound %g), F(2x2) %.3g (bound %g)",
                         k, t, e4, WINO4_TOL, e2, WINO2_TOL);
            tu_assert_close(y4, y2, WINO4_TOL + WINO2_TOL, WINO4_TOL + WINO2_TOL);
            worst4 = fmax(worst4, e4);
            worst2 = fmax(worst2, e2);
        }
    }
    /* an NHWC view (columns c apart: the phase planes' strided copy, not
     * deint_row's), 9x10 output */
    tj_tensor *xv = tj_permute(tj_randn(TJ_F32, 4, (int64_t[]){2, 9, 10, 8}), (int[]){0, 3, 1, 2});
    tj_tensor *wv = tj_randn(TJ_F32, 4, (int64_t[]){6, 8, 3, 3});
    tj_tensor *ref = conv_on("gemm", -1, tj_cast(xv, TJ_F64), tj_cast(wv, TJ_F64), NULL, 1, 1);
    tj_tensor *y4 = conv_on("wino4", wino ? RT_CONV_WINO4 : -1, xv, wv, NULL, 1, 1);
    assert_true(tu_max_rel_err(y4, ref) <= WINO4_TOL * 3);   /* weights N(0,1): outputs ~3 */
    print_message("max error against f64: F(4x4) %.2e, F(2x2) %.2e\n", worst4, worst2);
    tj_set_num_threads(before);
}

/* bf16 in and out on F(4x4): the f32 F(4x4) of the widened data rounded
 * once to bf16, bit for bit (widening is exact, the sums are the same),
 * 1 and 2 threads; whole rows of 8 tiles (32 columns) round in registers,
 * cut tiles through the scalar stores. */
static void test_wino4_bf16(void **state)
{
    (void)state;
    bool wino = has_wino();
    int before = tj_num_threads();
    tj_manual_seed(44);
    for (int k = 0; k < NSHAPE; k++) {
        const int64_t *s = shapes[k];
        tj_tensor *x, *w, *b;
        data(s, &x, &w, &b);
        tj_tensor *xb = tj_cast(x, TJ_BF16), *wb = tj_cast(w, TJ_BF16);
        tj_tensor *bb = b ? tj_cast(b, TJ_BF16) : NULL;
        tj_tensor *x32 = tj_cast(xb, TJ_F32), *w32 = tj_cast(wb, TJ_F32);
        tj_tensor *b32 = bb ? tj_cast(bb, TJ_F32) : NULL;
        for (int t = 1; t <= 2; t++) {
            tj_set_num_threads(t);
            int kind = wino ? RT_CONV_WINO4 : -1;
            tj_tensor *ref = conv_on("wino4", kind, x32, w32, b32, s[5], s[6]);
            tj_tensor *got = conv_on("wino4", kind, xb, wb, bb, s[5], s[6]);
            assert_int_equal(tj_dtype_of(got), TJ_BF16);
            tj_tensor *r = tj_cast(ref, TJ_BF16);
            const uint16_t *pg = tj_data(got), *pr = tj_data(r);
            for (int64_t i = 0; i < tj_numel(r); i++)
                if (pg[i] != pr[i])
                    fail_msg("shape %d, %d threads: element %lld is 0x%04x, f32 F(4x4) rounded "
                             "0x%04x", k, t, (long long)i, pg[i], pr[i]);
        }
    }
    tj_set_num_threads(before);
}

/* TJIT_CONV=wino4 where F(4x4) does not fit (stride 2, 5x5, dilation 2):
 * the grid kernel runs, right. A NaN and an infinity in the input spoil the
 * outputs whose 3x3 window holds them, and (Winograd: the transforms mix a
 * tile's whole 6x6 input) the rest of those tiles, no other: F(4x4)'s planes
 * have a zero row and column past the last tile, so no tile reads the next
 * plane or row (a finite value there cancels only to rounding, an infinite
 * one not at all). */
static void test_wino4_forcing(void **state)
{
    (void)state;
    bool wino = has_wino();
    tj_manual_seed(45);
    tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){1, 8, 11, 13});
    static const int64_t ks[3] = {3, 5, 3}, st[3] = {2, 1, 1}, dl[3] = {1, 1, 2};
    for (int k = 0; k < 3; k++) {
        tj_tensor *w = tj_randn(TJ_F32, 4, (int64_t[]){8, 8, ks[k], ks[k]});
        int64_t s2[2] = {st[k], st[k]}, p2[2] = {1, 1}, d2[2] = {dl[k], dl[k]};
        setenv("TJIT_CONV", "gemm", 1);
        tj_tensor *ref = tj_conv2d(x, w, NULL, s2, p2, d2, 1);
        setenv("TJIT_CONV", "wino4", 1);
        int64_t grid = rt_conv_direct_runs(isa, RT_CONV_GRID);
        tu_assert_close(tj_conv2d(x, w, NULL, s2, p2, d2, 1), ref, 1e-5, 1e-4);
        if (wino)
            assert_int_equal(rt_conv_direct_runs(isa, RT_CONV_GRID), grid + 1);
    }
    /* 9x10 input, padding 1: 9x10 outputs, tiles 3x3 (the last row and
     * column of tiles cut); a NaN at (2, 3), an infinity at (0, 0): without
     * the planes' last row and column the last row and column of tiles
     * would read it (plane (1, 1)'s first row and column, past plane
     * (0, 1)'s last) */
    tj_tensor *xn = tj_randn(TJ_F32, 4, (int64_t[]){1, 2, 9, 10});
    float *xd = tj_data(xn);
    xd[2 * 10 + 3] = NAN;
    xd[90] = INFINITY;
    tj_tensor *w = tj_randn(TJ_F32, 4, (int64_t[]){3, 2, 3, 3});
    tj_tensor *y = conv_on("wino4", wino ? RT_CONV_WINO4 : -1, xn, w, NULL, 1, 1);
    const float *v = tj_data(y);
    for (int o = 0; o < 3; o++)
        for (int r = 0; r < 9; r++)
            for (int c = 0; c < 10; c++) {
                bool nan_near = abs(r - 2) <= 1 && abs(c - 3) <= 1;
                /* the tile's input rows and columns (padding 1): 4t - 1 .. 4t + 4 */
                int r0 = r / 4 * 4 - 1, c0 = c / 4 * 4 - 1;
                bool in_tile = (2 >= r0 && 2 <= r0 + 5 && 3 >= c0 && 3 <= c0 + 5) ||
                               (0 >= r0 && 0 <= r0 + 5 && 0 >= c0 && 0 <= c0 + 5);
                float e = v[(o * 9 + r) * 10 + c];
                if (!in_tile && !isfinite(e))
                    fail_msg("output %d (%d, %d) is %g, its tile away from the NaN and the "
                             "infinity", o, r, c, e);
                if (nan_near && !isnan(e))
                    fail_msg("output %d (%d, %d) is %g next to the NaN", o, r, c, e);
            }
}

/* The rule on the ResNet 3x3 shapes (docs/perf.md): F(4x4) at 64 channels
 * 56x56 and 128 at 28x28; at 256 at 14x14 F(4x4) on AVX2, F(2x2) on
 * AVX-512 (16 tiles a vector: F(4x4)'s grid keeps too little of 4x4
 * tiles); not Winograd at 512 at 7x7 (its tiles would keep an eighth of
 * their outputs). */
static void test_wino4_rule(void **state)
{
    (void)state;
    if (!has_wino()) {
        print_message("skipped: no Winograd kernels on this CPU (AVX-512F or AVX2 + FMA)\n");
        return;
    }
    /* channels, size, F(4x4) runs on AVX2, on AVX-512, F(2x2) on AVX-512 */
    static const int64_t rs[][5] = {{64, 56, 1, 1, 0}, {128, 28, 1, 1, 0}, {256, 14, 1, 0, 1}, {512, 7, 0, 0, 0}};
    for (int k = 0; k < 4; k++) {
        rt_conv_shape s = {.n = 1, .c = rs[k][0], .h = rs[k][1], .w = rs[k][1],
                           .o = rs[k][0], .groups = 1, .kh = 3, .kw = 3,
                           .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1,
                           .oh = rs[k][1], .ow = rs[k][1]};
        s.xs[3] = 1, s.xs[2] = s.w, s.xs[1] = s.h * s.w, s.xs[0] = s.c * s.xs[1];
        s.ws[3] = 1, s.ws[2] = 3, s.ws[1] = 9, s.ws[0] = s.c * 9;
        tj_tensor *x = tj_zeros(TJ_F32, 4, (int64_t[]){1, s.c, s.h, s.w});
        tj_tensor *w = tj_zeros(TJ_F32, 4, (int64_t[]){s.o, s.c, 3, 3});
        int64_t before4 = rt_conv_direct_runs(isa, RT_CONV_WINO4), before2 = rt_conv_direct_runs(isa, RT_CONV_WINO);
        assert_true(rt_conv_direct_wins(&s));
        assert_non_null(conv_on(NULL, -1, x, w, NULL, 1, 1));
        bool avx512 = isa == RT_CONV_AVX512;
        assert_int_equal(rt_conv_direct_runs(isa, RT_CONV_WINO4), before4 + rs[k][avx512 ? 3 : 2]);
        assert_int_equal(rt_conv_direct_runs(isa, RT_CONV_WINO), before2 + (avx512 ? rs[k][4] : 0));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_wino4_f64),
        T(test_wino4_bf16),
        T(test_wino4_forcing),
        T(test_wino4_rule),
#undef T
    };
    int failed = 0;
    rt_conv_isa_force(-1);
    rt_conv_isa best = rt_conv_isa_current();
    for (int i = best; i >= (best == RT_CONV_NONE ? RT_CONV_NONE : RT_CONV_AVX2); i--) {
        isa = (rt_conv_isa)i;
        rt_conv_isa_force(i);
        print_message("conv kernels: %s\n", i == RT_CONV_AVX512 ? "AVX-512" : i == RT_CONV_AVX2 ? "AVX2" : "none");
        failed += cmocka_run_group_tests(tests, NULL, NULL);
    }
    rt_conv_isa_force(-1);
    return failed;
}
