/* test_contract.c - matmul, linear, conv2d, max_pool2d and avg_pool2d against
 * PyTorch (golden data from scripts/golden/contract.py), on contiguous and
 * non-contiguous operands, every dtype they take, empty shapes, and every
 * error path of their rules; the pools' ceil_mode, return_indices and
 * divisor_override eager and compiled. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../ir/window2d.h"
#include "../runtime/blas.h"
#include "../runtime/conv_direct.h"
#include "../runtime/gemm.h"
#include "util.h"

/* ---- helpers ------------------------------------------------------------------------- */

static tj_tensor *in(const char *c, const char *name)
{
    char b[128];
    snprintf(b, sizeof b, "%s_%s", c, name);
    return tu_golden("contract", b);
}

static void check(const char *c, tj_tensor *got, double tol)
{
    tj_tensor *want = in(c, "out");
    /* The golden writer stores 0-D results as [1] (np.ascontiguousarray). */
    if (got && tj_ndim(got) == 0)
        want = tj_reshape(want, 0, NULL);
    tu_assert_close(got, want, tol, tol);
}

static tj_tensor *zeros(tj_dtype dt, int ndim, ...)
{
    int64_t shape[TJ_MAX_DIMS];
    va_list ap;
    va_start(ap, ndim);
    for (int d = 0; d < ndim; d++)
        shape[d] = va_arg(ap, int64_t);
    va_end(ap);
    tj_tensor *t = tj_zeros(dt, ndim, shape);
    assert_non_null(t);
    return t;
}

#define Z(dt, ...) zeros(dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), __VA_ARGS__)
#define F32(...) Z(TJ_F32, __VA_ARGS__)

static const int64_t P11[2] = {1, 1}, S11[2] = {1, 1}, D11[2] = {1, 1};

/* ---- matmul --------------------------------------------------------------------------- */

static void test_matmul_ranks(void **state)
{
    (void)state;
    static const char *cases[] = {"mm_1_1", "mm_1_2", "mm_2_1",  "mm_2_2",   "mm_3_2",
                                  "mm_2_3", "mm_1_3", "mm_3_1",  "mm_bcast", "mm_4_4",
                                  "mm_big", "mm_f64", "mm_k0",   "mm_m0"};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        check(cases[k], tj_matmul(in(cases[k], "a"), in(cases[k], "b")), 1e-5);
}

static void test_matmul_ints(void **state)
{
    (void)state;
    static const char *cases[] = {"mm_i64", "mm_i64_1_1", "mm_u8", "mm_i8", "mm_k0_i64"};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        check(cases[k], tj_matmul(in(cases[k], "a"), in(cases[k], "b")), 0);
    /* a @ b.T on i32: the transposed right operand is packed */
    tj_tensor *bt = tj_transpose(in("mm_i32_t", "b"), 0, 1);
    check("mm_i32_t", tj_matmul(in("mm_i32_t", "a"), bt), 0);
    bt = tj_transpose(in("mm_i16_t", "b"), 0, 1);
    check("mm_i16_t", tj_matmul(in("mm_i16_t", "a"), bt), 0);
}

static void test_matmul_views(void **state)
{
    (void)state;
    /* transposed operands go to BLAS by flag */
    tj_tensor *at = tj_transpose(in("mm_tt", "a"), 0, 1);
    tj_tensor *bt = tj_transpose(in("mm_tt", "b"), 0, 1);
    assert_false(tj_is_contiguous(at));
    check("mm_tt", tj_matmul(at, bt), 1e-5);
    check("mm_btt", tj_matmul(tj_transpose(in("mm_btt", "a"), 1, 2),
                              tj_transpose(in("mm_btt", "b"), 1, 2)), 1e-5);
    /* strided slices: packed */
    tj_tensor *as = tj_slice(in("mm_slice", "a"), 1, 0, 8, 2);
    tj_tensor *bs = tj_slice(tj_slice(in("mm_slice", "b"), 0, 0, 8, 2), 1, 1, 6, 1);
    check("mm_slice", tj_matmul(as, bs), 1e-5);
    /* a stride-0 batch dim */
    tj_tensor *ae = tj_expand(in("mm_expand", "a"), 3, (int64_t[]){2, 3, 4});
    check("mm_expand", tj_matmul(ae, in("mm_expand", "b")), 1e-5);
}

static void test_matmul_extremes(void **state)
{
    (void)state;
    check("mm_ext", tj_matmul(in("mm_ext", "a"), in("mm_ext", "b")), 1e-6);
}

static void test_matmul_errors(void **state)
{
    (void)state;
    tu_assert_error(tj_matmul(F32(2, 3), tj_zeros(TJ_F32, 0, NULL)), "matmul(f32[2,3], f32[])",
                    "at least 1 dim", "0-D", NULL);
    tu_assert_error(tj_matmul(F32(2, 3), Z(TJ_F64, 3, 2)), "matmul(f32[2,3], f64[3,2])",
                    "same dtype", "f32 and f64", NULL);
    tu_assert_error(tj_matmul(Z(TJ_BOOL, 2, 3), Z(TJ_BOOL, 3, 2)), "matmul(bool[2,3]",
                    "not defined for bool", NULL);
    tu_assert_error(tj_matmul(F32(2, 3), F32(4, 2)), "matmul(f32[2,3], f32[4,2])",
                    "inner dimensions differ: a has 3 (dim -1), b has 4 (dim -2)", NULL);
    tu_assert_error(tj_matmul(F32(3), F32(4)), "matmul(f32[3], f32[4])",
                    "inner dimensions differ: a has 3 (dim -1), b has 4 (dim 0)", NULL);
    tu_assert_error(tj_matmul(F32(2, 2, 3), F32(3, 3, 2)), "matmul(f32[2,2,3], f32[3,3,2])",
                    "batch dims [2] and [3] cannot be broadcast", NULL);
    assert_null(tj_matmul(NULL, F32(2)));
    tj_clear_error();
}

/* ---- linear --------------------------------------------------------------------------- */

static void test_linear(void **state)
{
    (void)state;
    static const char *with_bias[] = {"lin_bias", "lin_x1", "lin_w1b", "lin_b2", "lin_k0",
                                      "lin_f64"};
    for (size_t k = 0; k < sizeof with_bias / sizeof *with_bias; k++) {
        const char *c = with_bias[k];
        check(c, tj_linear(in(c, "x"), in(c, "w"), in(c, "b")), 1e-5);
    }
    check("lin_nobias", tj_linear(in("lin_nobias", "x"), in("lin_nobias", "w"), NULL), 1e-5);
    check("lin_w1", tj_linear(in("lin_w1", "x"), in("lin_w1", "w"), NULL), 1e-5);
    check("lin_i64", tj_linear(in("lin_i64", "x"), in("lin_i64", "w"), in("lin_i64", "b")), 0);
}

static void test_linear_views(void **state)
{
    (void)state;
    tj_tensor *x = tj_transpose(in("lin_views", "x"), 0, 1);
    tj_tensor *w = tj_transpose(in("lin_views", "wt"), 0, 1);
    check("lin_views", tj_linear(x, w, in("lin_views", "b")), 1e-5);
    tj_tensor *xp = tj_slice(tj_permute(in("lin_nofold", "x"), (int[]){1, 0, 2}), 0, 0, 8, 2);
    check("lin_nofold", tj_linear(xp, in("lin_nofold", "w"), in("lin_nofold", "b")), 1e-5);
}

static void test_linear_errors(void **state)
{
    (void)state;
    tu_assert_error(tj_linear(tj_zeros(TJ_F32, 0, NULL), F32(3, 4), NULL),
                    "linear(f32[], f32[3,4])",
                    "at least 1 dim", NULL);
    tu_assert_error(tj_linear(F32(2, 4), F32(2, 3, 4), NULL), "linear(f32[2,4], f32[2,3,4])",
                    "weight must be 2-D", "got 3-D", NULL);
    tu_assert_error(tj_linear(F32(2, 4), F32(3, 4), Z(TJ_F64, 3)),
                    "linear(f32[2,4], f32[3,4], f64[3])", "same dtype", "f32 and f64", NULL);
    tu_assert_error(tj_linear(Z(TJ_BOOL, 2, 4), Z(TJ_BOOL, 3, 4), NULL), "not defined for bool",
                    NULL);
    tu_assert_error(tj_linear(F32(2, 4), F32(3, 5), NULL), "linear(f32[2,4], f32[3,5])",
                    "input has 4 features", "weight expects 5", NULL);
    tu_assert_error(tj_linear(F32(2, 4), F32(3, 4), F32(5)), "linear(f32[2,4], f32[3,4], f32[5])",
                    "bias [5] does not broadcast to the output [2,3]", NULL);
    tu_assert_error(tj_linear(F32(2, 4), F32(3, 4), F32(1, 2, 3)), "bias [1,2,3]", NULL);
}

/* ---- conv2d ----------------------------------------------------------------------------- */

typedef struct conv_case {
    const char *name;
    int64_t stride[2], padding[2], dilation[2], groups;
    bool bias;
} conv_case;

static tj_tensor *run_conv(const conv_case *c, tj_tensor *x, tj_tensor *w)
{
    return tj_conv2d(x, w, c->bias ? in(c->name, "b") : NULL, c->stride, c->padding,
                     c->dilation, c->groups);
}

static void test_conv2d(void **state)
{
    (void)state;
    static const conv_case cases[] = {
        {"conv_basic", {1, 1}, {0, 0}, {1, 1}, 1, true},
        {"conv_nobias", {1, 1}, {0, 0}, {1, 1}, 1, false},
        {"conv_spd", {2, 1}, {1, 2}, {2, 1}, 1, true},
        {"conv_groups", {1, 1}, {1, 1}, {1, 1}, 2, true},
        {"conv_dw", {2, 2}, {1, 1}, {1, 1}, 4, true},
        {"conv_dw_mult", {1, 1}, {1, 0}, {1, 2}, 4, false},
        {"conv_1x1", {1, 1}, {0, 0}, {1, 1}, 1, true},
        {"conv_1x1_s2", {2, 2}, {0, 0}, {1, 1}, 1, true},
        {"conv_3d", {1, 1}, {1, 1}, {1, 1}, 1, true},
        {"conv_tiles", {1, 1}, {1, 1}, {1, 1}, 1, true},
        {"conv_f64", {1, 1}, {1, 1}, {1, 1}, 2, true},
        {"conv_i64", {2, 2}, {1, 1}, {1, 1}, 1, true},
        {"conv_dw_i64", {1, 1}, {1, 1}, {1, 1}, 2, false},
        {"conv_shift", {1, 1}, {1, 1}, {1, 1}, 1, true},
        {"conv_shift_gd", {1, 1}, {2, 1}, {2, 1}, 2, true},
        {"conv_shift_1x1p", {1, 1}, {1, 1}, {1, 1}, 1, false},
        {"conv_shift_f64", {1, 1}, {1, 1}, {1, 1}, 1, false},
        {"conv_shift_i64", {1, 1}, {1, 1}, {1, 1}, 1, true},
        {"conv_noshift", {1, 1}, {1, 1}, {1, 1}, 1, true},
        {"conv_dw_u8", {1, 1}, {1, 1}, {1, 1}, 2, false},
        {"conv_dw_i32", {2, 2}, {1, 1}, {1, 1}, 2, true},
        {"conv_u8", {2, 2}, {1, 1}, {1, 1}, 1, true},
        {"conv_shift_u8", {1, 1}, {1, 1}, {1, 1}, 1, false},
        {"conv_dw_i8", {1, 1}, {1, 1}, {1, 1}, 2, false},
        {"conv_dw_i16", {2, 2}, {1, 1}, {1, 1}, 2, true},
        {"conv_i16", {2, 2}, {1, 1}, {1, 1}, 1, true},
        {"conv_shift_i8", {1, 1}, {1, 1}, {1, 1}, 1, false},
        {"conv_c0", {1, 1}, {0, 0}, {1, 1}, 1, true},
        {"conv_n0", {1, 1}, {0, 0}, {1, 1}, 1, true},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const conv_case *c = &cases[k];
        tj_tensor *got = run_conv(c, in(c->name, "x"), in(c->name, "w"));
        if (!got)
            fail_msg("%s: %s", c->name, tj_last_error());
        check(c->name, got, 1e-5);
    }
}

/* The instruction sets of the direct conv this CPU can run, best first, and
 * RT_CONV_NONE (the GEMM paths only); returns how many. */
static int conv_isas(rt_conv_isa *isas)
{
    rt_conv_isa_force(-1);
    int n = 0;
    for (int i = (int)rt_conv_isa_current(); i >= RT_CONV_NONE; i--)
        isas[n++] = (rt_conv_isa)i;
    return n;
}

/* Forces the conv path TJIT_CONV names (NULL: the rule). */
static void conv_path(const char *path)
{
    if (path)
        setenv("TJIT_CONV", path, 1);
    else
        unsetenv("TJIT_CONV");
}

/* Direct convs counted on any instruction set, by any kernel. */
static int64_t conv_direct_runs(void)
{
    int64_t n = 0;
    for (int i = 0; i < RT_CONV_NISA; i++)
        for (int k = 0; k < RT_CONV_NKIND; k++)
            n += rt_conv_direct_runs((rt_conv_isa)i, (rt_conv_kind)k);
    return n;
}

/* The kernel TJIT_CONV=path forces on isa for a conv with kernel w, stride
 * and dilation: Winograd (wino: F(2x2, 3x3), wino4: F(4x4, 3x3)) takes 3x3
 * stride-1 undilated convs on AVX2 and AVX-512 (else the grid kernel runs). */
static rt_conv_kind forced_kind(const char *path, rt_conv_isa isa, tj_tensor *w,
                                const int64_t *stride, const int64_t *dilation)
{
    if (path[0] == 'r')
        return RT_CONV_ROWS;
    bool fits = tj_shape(w)[2] == 3 && tj_shape(w)[3] == 3 && stride[0] == 1 && stride[1] == 1 &&
                dilation[0] == 1 && dilation[1] == 1;
    if (path[0] != 'w' || isa == RT_CONV_NONE || !fits)
        return RT_CONV_GRID;
    return path[4] ? RT_CONV_WINO4 : RT_CONV_WINO;
}

/* Runs case c on the path TJIT_CONV names (NULL: the rule) and checks that a
 * forced kernel ran on isa, once (none at all on RT_CONV_NONE: the GEMM
 * paths). */
static tj_tensor *run_conv_on(const conv_case *c, const char *path, rt_conv_isa isa)
{
    bool forced = path && strcmp(path, "gemm") != 0;
    tj_tensor *w = in(c->name, "w");
    rt_conv_kind kind = forced ? forced_kind(path, isa, w, c->stride, c->dilation) : RT_CONV_GRID;
    int64_t before = rt_conv_direct_runs(isa, kind), all = conv_direct_runs();
    tj_tensor *got = run_conv(c, in(c->name, "x"), w);
    if (!got)
        fail_msg("%s (%s): %s", c->name, path ? path : "rule", tj_last_error());
    if (isa == RT_CONV_NONE)
        assert_int_equal(conv_direct_runs(), all);
    else if (forced)
        assert_int_equal(rt_conv_direct_runs(isa, kind), before + 1);
    return got;
}

/* The direct f32 conv (runtime/k_conv_direct.c) and the GEMM paths on one
 * case per shape class (stride 1 and 2, 1x1, 3x3, 5x5, 7x7, groups,
 * depthwise, dilation, small spatial sizes), each forced with TJIT_CONV,
 * (direct: the grid kernel, rows: the row kernel, wino: Winograd where it
 * fits, gemm), then chosen by the shape rule; 1 and 2 threads; on every
 * instruction set this CPU has
 * (AVX-512, AVX2, each forced in turn) and with none (TJIT_CONV=direct then
 * falls back to the GEMM paths). */
static void test_conv2d_direct(void **state)
{
    (void)state;
    static const conv_case cases[] = {
        {"convd_3x3", {1, 1}, {1, 1}, {1, 1}, 1, true},
        {"convd_3x3_s2", {2, 2}, {1, 1}, {1, 1}, 1, true},
        {"convd_5x5", {1, 1}, {2, 2}, {1, 1}, 1, false},
        {"convd_7x7_s2", {2, 2}, {3, 3}, {1, 1}, 1, true},
        {"convd_1x1", {1, 1}, {0, 0}, {1, 1}, 1, true},
        {"convd_1x1_s2", {2, 2}, {0, 0}, {1, 1}, 1, false},
        {"convd_dw", {1, 1}, {1, 1}, {1, 1}, 32, true},
        {"convd_dw_s2", {2, 2}, {1, 1}, {1, 1}, 16, true},
        {"convd_groups", {1, 1}, {1, 1}, {1, 1}, 4, true},
        {"convd_dil", {1, 1}, {2, 2}, {2, 2}, 1, true},
        {"convd_small", {1, 1}, {1, 1}, {1, 1}, 1, true},
        {"convd_rect", {2, 1}, {0, 2}, {1, 3}, 1, true},
    };
    static const char *const paths[] = {"direct", "rows", "wino", "wino4", "gemm", NULL};
    int before = tj_num_threads();
    rt_conv_isa isas[RT_CONV_NISA];
    int nisa = conv_isas(isas);
    for (int i = 0; i < nisa; i++) {
        rt_conv_isa_force((int)isas[i]);
        for (int t = 1; t <= 2; t++) {
            tj_set_num_threads(t);
            for (int p = 0; p < 6; p++) {
                conv_path(paths[p]);
                for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
                    check(cases[k].name, run_conv_on(&cases[k], paths[p], isas[i]), 1e-5);
            }
        }
    }
    rt_conv_isa_force(-1);
    unsetenv("TJIT_CONV");
    tj_set_num_threads(before);
}

/* The direct conv runs on the widest instruction set the CPU has, unless
 * TJIT_ISA caps it: a CPU with AVX2 and FMA (no AVX-512) runs the AVX2
 * kernels, so a build or a rule that silently lost them fails here. Then
 * shapes that reach each AVX2 micro-kernel (grid 4x3, 2x6 and 1x8, rows of
 * 16 channels by 6, 5, 4 columns and of 8 by 14, 12, 8, 7, channel and
 * column tails, batch 3, bias or none) and Winograd (3x3 stride 1: odd and
 * even output sizes, padding 0, 1, 2, groups, depthwise, 1-7 output
 * channels per block) against the GEMM paths on random data, on every set
 * this CPU has. */
/* The absolute tolerance of a direct path against the GEMM path on N(0,1)
 * inputs and weights: F(4x4)'s error follows the products summed (up to
 * 144 here: 1.2e-4 to 1.7e-4 against f64 over five seeds), not the result,
 * which may be near 0; the other paths' stays under 1e-4. */
static double wino4_atol(const char *path) { return strcmp(path, "wino4") ? 1e-4 : 5e-4; }

static void test_conv2d_direct_isa(void **state)
{
    (void)state;
    rt_conv_isa_force(-1);
    rt_conv_isa want = RT_CONV_NONE;
    if (__builtin_cpu_supports("avx512f"))
        want = RT_CONV_AVX512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = RT_CONV_AVX2;
    const char *cap = getenv("TJIT_ISA");
    if (!cap || !*cap)
        assert_int_equal(rt_conv_isa_current(), want);
    /* one source of truth: the GEMM's variant, capped, caps the conv's set */
    rt_conv_isa cur = rt_conv_isa_current();
    tjg_isa_force(TJG_GENERIC);
    assert_int_equal(rt_conv_isa_current(), RT_CONV_NONE);
    tjg_isa_force(TJG_AVX2);
    assert_int_equal(rt_conv_isa_current(), cur < RT_CONV_AVX2 ? cur : RT_CONV_AVX2);
    tjg_isa_force(-1);
    assert_int_equal(rt_conv_isa_current(), cur);
    /* x [n, c, h, w], w [o, c/g, k, k], stride, padding, groups */
    static const int64_t shapes[][9] = {
        {3, 12, 14, 10, 20, 3, 1, 1, 1}, {1, 12, 9, 15, 3, 3, 1, 1, 1},
        {2, 6, 11, 11, 6, 3, 2, 0, 6},   {1, 8, 20, 27, 9, 5, 1, 2, 1},
        {2, 16, 10, 12, 32, 3, 1, 1, 2}, {1, 4, 17, 17, 8, 7, 2, 3, 1},
        {1, 5, 14, 14, 7, 3, 1, 1, 1},   {2, 16, 21, 23, 8, 3, 1, 0, 1},
        {1, 8, 7, 30, 6, 3, 1, 2, 1},    {1, 4, 13, 13, 4, 3, 1, 1, 4},
    };
    static const char *const paths[] = {"direct", "rows", "wino", "wino4"};
    rt_conv_isa isas[RT_CONV_NISA];
    int nisa = conv_isas(isas);
    tj_manual_seed(13);
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        const int64_t *s = shapes[k];
        tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){s[0], s[1], s[2], s[3]});
        tj_tensor *w = tj_randn(TJ_F32, 4, (int64_t[]){s[4], s[1] / s[8], s[5], s[5]});
        tj_tensor *b = tj_randn(TJ_F32, 1, (int64_t[]){s[4]});
        int64_t st[2] = {s[6], s[6]}, pd[2] = {s[7], s[7]};
        setenv("TJIT_CONV", "gemm", 1);
        tj_tensor *ref = tj_conv2d(x, w, b, st, pd, D11, s[8]);
        tj_tensor *nob = tj_conv2d(x, w, NULL, st, pd, D11, s[8]);
        assert_non_null(ref);
        assert_non_null(nob);
        for (int i = 0; i < nisa; i++) {
            rt_conv_isa_force((int)isas[i]);
            for (int p = 0; p < 4; p++) {
                setenv("TJIT_CONV", paths[p], 1);
                rt_conv_kind kind = forced_kind(paths[p], isas[i], w, st, D11);
                int64_t before = rt_conv_direct_runs(isas[i], kind);
                tu_assert_close(tj_conv2d(x, w, k % 2 ? b : NULL, st, pd, D11, s[8]),
                                k % 2 ? ref : nob, 1e-5, wino4_atol(paths[p]));
                if (isas[i] != RT_CONV_NONE)
                    assert_int_equal(rt_conv_direct_runs(isas[i], kind), before + 1);
            }
        }
        rt_conv_isa_force(-1);
    }
    unsetenv("TJIT_CONV");
}

/* The direct kernels whose prepared weights are kept across calls. */
static const char *const kept_paths[] = {"wino", "wino4", "direct", "rows"};

/* max |a - b| over two f32 tensors of one shape */
static double max_diff(tj_tensor *a, tj_tensor *b)
{
    const float *pa = tj_data(a), *pb = tj_data(b);
    double diff = 0;
    for (int64_t i = 0; i < tj_numel(a); i++)
        diff = fmax(diff, fabs((double)pa[i] - pb[i]));
    return diff;
}

/* The weight-reuse tests' input x and weight w (seeded), or false (named
 * as skipped) on a CPU without direct conv kernels. */
static bool reuse_setup(unsigned seed, tj_tensor **x, tj_tensor **w)
{
    rt_conv_isa isas[RT_CONV_NISA];
    if (conv_isas(isas) == 1) {
        print_message("skipped: no direct conv kernels on this CPU\n");
        return false;
    }
    tj_manual_seed(seed);
    *x = tj_randn(TJ_F32, 4, (int64_t[]){2, 16, 12, 13});
    *w = tj_randn(TJ_F32, 4, (int64_t[]){24, 16, 3, 3});
    return true;
}

/* The prepared weights kept across calls: kept after a second miss on the
 * same weights within the last 8 misses (two convs alternating, as in a
 * region), then taken (Winograd's transform, the grid and row kernels'
 * packing); a write through the weight's raw pointer (no version bump) is
 * seen: the result follows the new weights (against the GEMM paths). Nine
 * convs in turn: none kept. */
static void test_conv2d_weight_reuse(void **state)
{
    (void)state;
    tj_tensor *x, *w;
    if (!reuse_setup(7, &x, &w))
        return;
    for (int p = 0; p < 4; p++) {
        setenv("TJIT_CONV", kept_paths[p], 1);
        if (p)   /* weights of its own: where Winograd falls back to the grid kernel (AVX-512),
                  * the previous path's kept entry would match */
            w = tj_randn(TJ_F32, 4, (int64_t[]){24, 16, 3, 3});
        tj_tensor *ws[9];
        for (int k = 0; k < 9; k++)
            ws[k] = tj_randn(TJ_F32, 4, (int64_t[]){24, 16, 3, 3});
        int64_t hits = rt_conv_weight_hits();
        for (int k = 0; k < 18; k++)   /* nine in turn: each misses, none kept */
            assert_non_null(tj_conv2d(x, ws[k % 9], NULL, S11, P11, D11, 1));
        assert_int_equal(rt_conv_weight_hits(), hits);
        for (int k = 0; k < 4; k++)   /* two alternating: kept at their second call */
            assert_non_null(tj_conv2d(x, k % 2 ? ws[0] : w, NULL, S11, P11, D11, 1));
        assert_int_equal(rt_conv_weight_hits(), hits);
        tj_tensor *a = tj_conv2d(x, w, NULL, S11, P11, D11, 1);
        assert_int_equal(rt_conv_weight_hits(), hits + 1);
        float *wd = tj_data(w);
        wd[5 * 16 * 9 + 7] += 1.0f;   /* output channel 5, through the raw pointer */
        tj_tensor *b = tj_conv2d(x, w, NULL, S11, P11, D11, 1);
        assert_int_equal(rt_conv_weight_hits(), hits + 1);
        setenv("TJIT_CONV", "gemm", 1);
        tu_assert_close(b, tj_conv2d(x, w, NULL, S11, P11, D11, 1), 1e-5, wino4_atol(kept_paths[p]));
        assert_true(max_diff(a, b) > 0.1);   /* the new weight changed the result */
    }
    unsetenv("TJIT_CONV");
}

/* conv2d(x, w) with w captured: a compiled call's capture */
static tj_tensor *model_conv(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    return tj_conv2d(x[0], ctx, NULL, S11, P11, D11, 1);
}

/* A compiled call's captured conv weight is found in the kept prepared
 * weights by its storage (serial, stamp, offset) rather than its bytes: kept
 * at its second call, taken from the third; an in-place write (tj_copy_)
 * and a write through tj_data between calls each change the stamp, so the
 * next call follows the new weights (against the GEMM paths), without a
 * second graph. */
static void test_conv2d_weight_reuse_compiled(void **state)
{
    (void)state;
    tj_tensor *x, *w;
    if (!reuse_setup(11, &x, &w))
        return;
    for (int p = 0; p < 4; p++) {
        setenv("TJIT_CONV", kept_paths[p], 1);
        tj_compiled *c = tj_compile(model_conv, w, &(tj_compile_options){.name = "conv_kept"});
        assert_non_null(c);
        for (int k = 0; k < 2; k++)
            assert_non_null(tj_call(c, &x, 1));
        int64_t hits = rt_conv_weight_hits();
        tj_tensor *a = tj_call(c, &x, 1);
        assert_non_null(a);
        assert_int_equal(rt_conv_weight_hits(), hits + 1);
        for (int how = 0; how < 2; how++) {
            if (how == 0) {
                assert_int_equal(tj_copy_(w, tj_mul_s(w, -0.5)), 0);
            } else {
                float *wd = tj_data(w);
                wd[5 * 16 * 9 + 7] += 1.0f;   /* output channel 5 */
            }
            tj_tensor *b = tj_call(c, &x, 1);
            assert_non_null(b);
            setenv("TJIT_CONV", "gemm", 1);
            tu_assert_close(b, tj_conv2d(x, w, NULL, S11, P11, D11, 1), 1e-5, 1e-4);
            setenv("TJIT_CONV", kept_paths[p], 1);
            assert_true(max_diff(a, b) > 0.1);   /* the new weight changed the result */
            a = b;
        }
        tj_compiled_stats st;
        assert_int_equal(tj_compiled_stats_get(c, &st), 0);
        assert_int_equal(st.graphs, 1);
        tj_compiled_free(c);
    }
    unsetenv("TJIT_CONV");
}

/* Whether bf16 (or f16) tensor got holds exactly the bits of f32 tensor
 * ref rounded to its type (tj_cast: round to nearest even). */
static void assert_half_of(tj_tensor *got, tj_tensor *ref, tj_dtype dt, const char *what)
{
    assert_non_null(got);
    assert_int_equal(tj_dtype_of(got), dt);
    tj_tensor *r = tj_cast(ref, dt);
    assert_int_equal(tj_numel(got), tj_numel(r));
    const uint16_t *a = tj_data(got), *b = tj_data(r);
    for (int64_t i = 0; i < tj_numel(r); i++)
        if (a[i] != b[i])
            fail_msg("%s %s: element %lld is 0x%04x, f32 conv rounded 0x%04x",
                     tj_dtype_name(dt), what, (long long)i, a[i], b[i]);
}

static void assert_bf16_of(tj_tensor *got, tj_tensor *ref, const char *what)
{
    assert_half_of(got, ref, TJ_BF16, what);
}

/* Winograd's whole tile rows (32 columns in registers): input channel 0 all
 * ones but a NaN, channel 1 zero; output channel 0 weighs its pixel 1 and the
 * right neighbour 2^-8 (inside: 1 + 2^-8, a tie, to 1), channel 1 the
 * neighbour 3 * 2^-8 (1 + 3 * 2^-8, a tie, to 1 + 2^-6); exact in f32
 * through the transforms. Equal to the f32 conv rounded, NaN included. */
static void wino_ties(void)
{
    enum { H = 6, W = 36 };
    float xv[2 * H * W] = {0}, wv[2 * 2 * 9] = {0};
    for (int i = 0; i < H * W; i++)
        xv[i] = 1.0f;
    xv[4 * W + 30] = NAN;
    wv[4] = 1.0f, wv[5] = 0x1p-8f;                   /* out 0, in 0: centre, right */
    wv[2 * 9 + 4] = 1.0f, wv[2 * 9 + 5] = 0x3p-8f;   /* out 1, in 0 */
    tj_tensor *x = tj_from_data(TJ_F32, 4, (int64_t[]){1, 2, H, W}, xv);
    tj_tensor *w = tj_from_data(TJ_F32, 4, (int64_t[]){2, 2, 3, 3}, wv);
    setenv("TJIT_CONV", "wino", 1);
    tj_tensor *ref = tj_conv2d(x, w, NULL, S11, P11, D11, 1);
    tj_tensor *got = tj_conv2d(tj_cast(x, TJ_BF16), tj_cast(w, TJ_BF16), NULL, S11, P11, D11, 1);
    assert_bf16_of(got, ref, "wino ties");
    const uint16_t *v = tj_data(got);
    assert_int_equal(v[W + 3], 0x3f80);           /* 1 + 2^-8 -> 1 */
    assert_int_equal(v[H * W + W + 3], 0x3f82);   /* 1 + 3 * 2^-8 -> 1 + 2^-6 */
    assert_true((v[4 * W + 29] & 0x7fff) > 0x7f80);   /* the NaN's neighbour: NaN */
}

/* bf16 and f16 conv2d: on the direct kernels (grid, row, Winograd; every
 * set this CPU has, then none: the f32 GEMM paths on widened copies; f16
 * widened and rounded by F16C where the CPU has it), 1 and 2 threads, on
 * test_conv2d_direct_isa's shapes with bf16- (f16-) representable data:
 * the result is the f32 conv of the same path rounded once to bf16 (its f32
 * sums are the same: widening is exact), bit for bit; the direct kernel ran
 * (40 columns: whole rows of 8 Winograd tiles, rounded in registers on
 * AVX2). Then ties: 1 + 2^-8 rounds to 1, 1 + 2^-7 + 2^-8 to 1 + 2^-6
 * (even), through the grid and row kernels' stores and Winograd's. */
static void test_conv2d_bf16(void **state)
{
    (void)state;
    static const int64_t shapes[][9] = {
        {3, 12, 14, 10, 20, 3, 1, 1, 1}, {2, 6, 11, 11, 6, 3, 2, 0, 6},
        {1, 8, 20, 27, 9, 5, 1, 2, 1},   {2, 16, 10, 12, 32, 3, 1, 1, 2},
        {1, 5, 14, 14, 7, 3, 1, 1, 1},   {1, 8, 7, 30, 6, 3, 1, 2, 1},
        {1, 8, 12, 40, 8, 3, 1, 1, 1},
    };
    static const char *const paths[] = {"direct", "rows", "wino", "wino4", NULL};
    int before = tj_num_threads();
    rt_conv_isa isas[RT_CONV_NISA];
    int nisa = conv_isas(isas);
    tj_manual_seed(18);
    for (size_t k = 0; k < 2 * sizeof shapes / sizeof *shapes; k++) {
        const int64_t *s = shapes[k / 2];
        tj_dtype dt = k % 2 ? TJ_F16 : TJ_BF16;
        tj_tensor *xb = tj_cast(tj_randn(TJ_F32, 4, (int64_t[]){s[0], s[1], s[2], s[3]}), dt);
        tj_tensor *wb = tj_cast(tj_randn(TJ_F32, 4, (int64_t[]){s[4], s[1] / s[8], s[5], s[5]}),
                                dt);
        tj_tensor *bb = k / 2 % 2 ? tj_cast(tj_randn(TJ_F32, 1, (int64_t[]){s[4]}), dt) : NULL;
        tj_tensor *x = tj_cast(xb, TJ_F32), *w = tj_cast(wb, TJ_F32);
        tj_tensor *b = bb ? tj_cast(bb, TJ_F32) : NULL;
        int64_t st[2] = {s[6], s[6]}, pd[2] = {s[7], s[7]};
        for (int i = 0; i < nisa; i++) {
            rt_conv_isa_force((int)isas[i]);
            for (int t = 1; t <= 2; t++) {
                tj_set_num_threads(t);
                for (int p = 0; p < 5; p++) {
                    conv_path(paths[p]);
                    tj_tensor *ref = tj_conv2d(x, w, b, st, pd, D11, s[8]);
                    int64_t all = conv_direct_runs();
                    tj_tensor *got = tj_conv2d(xb, wb, bb, st, pd, D11, s[8]);
                    assert_half_of(got, ref, dt, paths[p] ? paths[p] : "rule");
                    if (isas[i] != RT_CONV_NONE && paths[p])
                        assert_int_equal(conv_direct_runs(), all + 1);
                }
            }
        }
        rt_conv_isa_force(-1);
    }
    /* ties, through the grid and row kernels' stores */
    const float xv[4] = {1.0f, 1.0f + 0x1p-7f, 0x1p-8f, 0x1p-8f}, ones[2] = {1.0f, 1.0f};
    tj_tensor *x = tj_cast(tj_from_data(TJ_F32, 4, (int64_t[]){1, 2, 1, 2}, xv), TJ_BF16);
    tj_tensor *w = tj_cast(tj_from_data(TJ_F32, 4, (int64_t[]){1, 2, 1, 1}, ones), TJ_BF16);
    for (int p = 0; p < 2; p++) {
        setenv("TJIT_CONV", kept_paths[p], 1);
        tj_tensor *y = tj_conv2d(x, w, NULL, NULL, NULL, NULL, 1);
        assert_non_null(y);
        const uint16_t *v = tj_data(y);
        assert_int_equal(v[0], 0x3f80);   /* 1 */
        assert_int_equal(v[1], 0x3f82);   /* 1 + 2^-6 */
    }
    wino_ties();
    unsetenv("TJIT_CONV");
    tj_set_num_threads(before);
}

static void test_conv2d_threads(void **state)
{
    (void)state;
    /* The tiled paths (im2col, shifted GEMMs) with 1 and 2 threads: tiles
     * split the image rows. */
    int before = tj_num_threads();
    static const conv_case cases[] = {
        {"conv_tiles", {1, 1}, {1, 1}, {1, 1}, 1, true},
        {"conv_shift_gd", {1, 1}, {2, 1}, {2, 1}, 2, true},
    };
    for (int t = 1; t <= 2; t++) {
        tj_set_num_threads(t);
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
            check(cases[k].name, run_conv(&cases[k], in(cases[k].name, "x"),
                                          in(cases[k].name, "w")), 1e-5);
    }
    tj_set_num_threads(before);
}

static void test_conv2d_defaults_and_views(void **state)
{
    (void)state;
    /* NULL stride/padding/dilation mean 1, 0, 1 */
    check("conv_basic", tj_conv2d(in("conv_basic", "x"), in("conv_basic", "w"),
                                  in("conv_basic", "b"), NULL, NULL, NULL, 1), 1e-5);
    tj_tensor *x = tj_permute(in("conv_nhwc", "x"), (int[]){0, 3, 1, 2});
    check("conv_nhwc", tj_conv2d(x, in("conv_nhwc", "w"), in("conv_nhwc", "b"), S11, P11, D11, 1),
          1e-5);
    x = tj_permute(in("conv_nhwc_1x1", "x"), (int[]){0, 3, 1, 2});
    check("conv_nhwc_1x1", tj_conv2d(x, in("conv_nhwc_1x1", "w"), NULL, NULL, NULL, NULL, 1),
          1e-5);
    x = tj_permute(in("conv_shift_nhwc", "x"), (int[]){0, 3, 1, 2});
    check("conv_shift_nhwc",
          tj_conv2d(x, in("conv_shift_nhwc", "w"), NULL, S11, P11, D11, 1), 1e-5);
    tj_tensor *w = tj_permute(in("conv_wview", "wt"), (int[]){3, 0, 1, 2});
    check("conv_wview", tj_conv2d(in("conv_wview", "x"), w, NULL, S11, P11, D11, 1), 1e-5);
}

static void test_conv2d_errors(void **state)
{
    (void)state;
    tj_tensor *x = F32(1, 4, 5, 5), *w = F32(2, 4, 3, 3);
    tu_assert_error(tj_conv2d(F32(4, 5), w, NULL, NULL, NULL, NULL, 1),
                    "conv2d(f32[4,5], f32[2,4,3,3])", "input must be 3-D", "got 2-D", NULL);
    tu_assert_error(tj_conv2d(F32(1, 4, 0, 5), w, NULL, NULL, NULL, NULL, 1),
                    "conv2d(f32[1,4,0,5]", "empty spatial dim", NULL);
    tu_assert_error(tj_conv2d(x, F32(2, 4, 3), NULL, NULL, NULL, NULL, 1),
                    "conv2d(f32[1,4,5,5], f32[2,4,3])", "weight must be 4-D", NULL);
    tu_assert_error(tj_conv2d(x, Z(TJ_F64, 2, 4, 3, 3), NULL, NULL, NULL, NULL, 1),
                    "same dtype", "f32 and f64", NULL);
    tu_assert_error(tj_conv2d(Z(TJ_BOOL, 1, 4, 5, 5), Z(TJ_BOOL, 2, 4, 3, 3), NULL, NULL, NULL,
                              NULL, 1), "not defined for bool", NULL);
    tu_assert_error(tj_conv2d(x, w, NULL, NULL, NULL, NULL, 0), "groups must be positive, got 0",
                    NULL);
    tu_assert_error(tj_conv2d(x, F32(3, 2, 3, 3), NULL, NULL, NULL, NULL, 2),
                    "conv2d(f32[1,4,5,5], f32[3,2,3,3])",
                    "output channels 3 are not divisible by groups 2", NULL);
    tu_assert_error(tj_conv2d(x, F32(0, 4, 3, 3), NULL, NULL, NULL, NULL, 1),
                    "weight has 0 output channels", NULL);
    tu_assert_error(tj_conv2d(x, F32(2, 3, 3, 3), NULL, NULL, NULL, NULL, 1),
                    "input has 4 channels, weight expects 3 (3 per group x 1 groups)", NULL);
    tu_assert_error(tj_conv2d(x, w, F32(3), NULL, NULL, NULL, 1),
                    "conv2d(f32[1,4,5,5], f32[2,4,3,3], f32[3])",
                    "bias must be 1-D with 2 elements, got [3]", NULL);
    tu_assert_error(tj_conv2d(x, F32(2, 4, 6, 6), NULL, NULL, NULL, NULL, 1),
                    "kernel 6x6 (dilated 6x6) is larger than the padded input 5x5", NULL);
    tu_assert_error(tj_conv2d(x, w, NULL, NULL, (int64_t[]){0, 1}, (int64_t[]){3, 1}, 1),
                    "kernel 3x3 (dilated 7x3) is larger than the padded input 5x7", NULL);
    tu_assert_error(tj_conv2d(x, w, NULL, (int64_t[]){0, 1}, NULL, NULL, 1),
                    "stride must be positive, got [0, 1]", NULL);
    tu_assert_error(tj_conv2d(x, w, NULL, (int64_t[]){-1, 1}, NULL, NULL, 1),
                    "stride must be positive, got [-1, 1]", NULL);
    tu_assert_error(tj_conv2d(x, w, NULL, NULL, (int64_t[]){0, -1}, NULL, 1),
                    "padding must be non-negative, got [0, -1]", NULL);
    tu_assert_error(tj_conv2d(x, w, NULL, NULL, NULL, (int64_t[]){1, 0}, 1),
                    "dilation must be positive, got [1, 0]", NULL);
    tu_assert_error(tj_conv2d(x, w, NULL, (int64_t[]){(int64_t)1 << 40, 1}, NULL, NULL, 1),
                    "stride [1099511627776, 1] is too large", NULL);
    tu_assert_error(tj_conv2d(x, F32(2, 4, 0, 3), NULL, NULL, NULL, NULL, 1),
                    "kernel size must be positive, got [0, 3]", NULL);
    assert_null(tj_conv2d(x, NULL, NULL, NULL, NULL, NULL, 1));
    tj_clear_error();
}

/* ---- pools ------------------------------------------------------------------------------ */

typedef struct pool_case {
    const char *name;
    int64_t k[2], s[2], p[2], d[2];
    bool avg, cip, transpose;
} pool_case;

static void test_pools(void **state)
{
    (void)state;
    static const pool_case cases[] = {
        {"max_k2", {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, false, false},
        {"max_k3s2p1", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, false},
        {"max_dil", {3, 3}, {1, 1}, {1, 1}, {2, 2}, false, false, false},
        {"max_rect", {2, 3}, {1, 2}, {1, 1}, {2, 1}, false, false, false},
        {"max_3d", {2, 2}, {1, 1}, {0, 0}, {1, 1}, false, false, false},
        {"max_f64", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, false},
        {"max_ext", {2, 2}, {1, 1}, {0, 0}, {1, 1}, false, false, false},
        {"max_tr", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, true},
        {"avg_k2", {2, 2}, {2, 2}, {0, 0}, {1, 1}, true, true, false},
        {"avg_pad_in", {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, false},
        {"avg_pad_ex", {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false, false},
        {"avg_rect", {3, 2}, {2, 1}, {1, 1}, {1, 1}, true, false, false},
        {"avg_rect_in", {3, 2}, {2, 1}, {1, 1}, {1, 1}, true, true, false},
        {"avg_f64", {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, true, false},
        {"avg_i64", {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, false},
        {"avg_tr", {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, false, true},
        {"pool_n0_max", {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, false, false},
        {"pool_n0_avg", {2, 2}, {2, 2}, {0, 0}, {1, 1}, true, true, false},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const pool_case *c = &cases[k];
        tj_tensor *x = in(c->name, "x");
        if (c->transpose)
            x = tj_transpose(x, 2, 3);
        tj_tensor *got = c->avg ? tj_avg_pool2d(x, c->k, c->s, c->p, c->cip)
                                : tj_max_pool2d(x, c->k, c->s, c->p, c->d);
        if (!got)
            fail_msg("%s: %s", c->name, tj_last_error());
        check(c->name, got, 1e-6);
    }
}

static void test_pool_defaults(void **state)
{
    (void)state;
    /* NULL stride means the kernel; NULL padding 0; NULL dilation 1 */
    check("max_k2", tj_max_pool2d(in("max_k2", "x"), (int64_t[]){2, 2}, NULL, NULL, NULL), 0);
    check("avg_k2", tj_avg_pool2d(in("avg_k2", "x"), (int64_t[]){2, 2}, NULL, NULL, true), 1e-6);
}

static void test_pool_errors(void **state)
{
    (void)state;
    tj_tensor *x = F32(1, 2, 5, 5);
    const int64_t k3[2] = {3, 3};
    tu_assert_error(tj_max_pool2d(Z(TJ_I64, 1, 2, 5, 5), k3, NULL, NULL, NULL),
                    "max_pool2d(i64[1,2,5,5])", "not defined for i64 (needs f32 or f64)", NULL);
    tu_assert_error(tj_avg_pool2d(Z(TJ_I32, 1, 2, 5, 5), k3, NULL, NULL, true),
                    "avg_pool2d(i32[1,2,5,5])", "not defined for i32 (needs f32 or f64 or i64)",
                    NULL);
    tu_assert_error(tj_max_pool2d(F32(5, 5), k3, NULL, NULL, NULL), "max_pool2d(f32[5,5])",
                    "input must be 3-D [C,H,W] or 4-D [N,C,H,W], got 2-D", NULL);
    tu_assert_error(tj_avg_pool2d(F32(1, 0, 5, 5), k3, NULL, NULL, true),
                    "avg_pool2d(f32[1,0,5,5])",
                    "input has 0 channels", NULL);
    tu_assert_error(tj_max_pool2d(F32(1, 2, 5, 0), k3, NULL, NULL, NULL), "empty spatial dim",
                    NULL);
    tu_assert_error(tj_max_pool2d(x, NULL, NULL, NULL, NULL), "max_pool2d(f32[1,2,5,5])",
                    "kernel size is missing", NULL);
    tu_assert_error(tj_avg_pool2d(x, (int64_t[]){0, 2}, NULL, NULL, true),
                    "kernel size must be positive, got [0, 2]", NULL);
    tu_assert_error(tj_max_pool2d(x, k3, (int64_t[]){0, 0}, NULL, NULL),
                    "stride must be positive, got [0, 0]", NULL);
    tu_assert_error(tj_max_pool2d(x, k3, NULL, (int64_t[]){2, 2}, NULL),
                    "padding [2, 2] exceeds half the kernel size [3, 3]", NULL);
    tu_assert_error(tj_avg_pool2d(x, k3, NULL, (int64_t[]){-1, 0}, true),
                    "padding must be non-negative, got [-1, 0]", NULL);
    tu_assert_error(tj_max_pool2d(x, k3, NULL, NULL, (int64_t[]){0, 1}),
                    "dilation must be positive, got [0, 1]", NULL);
    tu_assert_error(tj_max_pool2d(x, (int64_t[]){6, 6}, NULL, NULL, NULL),
                    "max_pool2d(f32[1,2,5,5])",
                    "kernel 6x6 (dilated 6x6) is larger than the padded input 5x5", NULL);
    tu_assert_error(tj_max_pool2d(x, k3, NULL, NULL, (int64_t[]){3, 1}),
                    "kernel 3x3 (dilated 7x3) is larger than the padded input 5x5", NULL);
    assert_null(tj_avg_pool2d(NULL, k3, NULL, NULL, true));
    tj_clear_error();
}

/* ---- pools: ceil_mode, return_indices, divisor_override, eager and compiled -------------- */

typedef struct pool_ex_case {
    const char *name;
    int64_t k[2], s[2], p[2], d[2];
    bool avg, ceil, cip, transpose;
    int64_t div;   /* divisor_override; 0: none */
} pool_ex_case;

static const pool_ex_case ex_cases[] = {
    {"maxc_k3s2", {3, 3}, {2, 2}, {0, 0}, {1, 1}, false, true, false, false, 0},
    {"maxc_p1", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true, false, false, 0},
    {"maxc_drop", {2, 2}, {2, 2}, {1, 1}, {1, 1}, false, true, false, false, 0},
    {"maxc_big", {6, 6}, {2, 2}, {0, 0}, {1, 1}, false, true, false, false, 0},
    {"maxc_dil", {3, 3}, {2, 2}, {1, 1}, {2, 2}, false, true, false, false, 0},
    {"maxc_rect", {2, 3}, {3, 2}, {1, 1}, {1, 2}, false, true, false, false, 0},
    {"maxc_3d", {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, true, false, false, 0},
    {"maxc_f64", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true, false, false, 0},
    {"maxi_k3s2p1", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false, false, false, 0},
    {"maxi_ties", {3, 3}, {1, 1}, {1, 1}, {1, 1}, false, false, false, false, 0},
    {"maxi_ext", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true, false, false, 0},
    {"maxi_tr", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, true, false, true, 0},
    {"maxi_wide", {2, 3}, {1, 2}, {0, 1}, {1, 1}, false, true, false, false, 0},
    {"avgc_in", {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, true, false, 0},
    {"avgc_ex", {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, false, false, 0},
    {"avgc_drop", {2, 2}, {2, 2}, {1, 1}, {1, 1}, true, true, true, false, 0},
    {"avgc_big", {6, 6}, {2, 2}, {0, 0}, {1, 1}, true, true, true, false, 0},
    {"avgc_rect", {3, 2}, {2, 3}, {1, 1}, {1, 1}, true, true, true, false, 0},
    {"avgd_5", {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false, true, false, 5},
    {"avgd_neg", {2, 2}, {2, 2}, {0, 0}, {1, 1}, true, false, true, false, -3},
    {"avgd_ceil", {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, false, false, 4},
    {"avgd_f64", {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, true, true, false, 7},
    {"avgd_i64", {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, true, false, 4},
    {"avgc_i64", {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true, false, false, 0},
    {"avgd_i64_neg", {2, 2}, {2, 2}, {0, 0}, {1, 1}, true, true, true, false, -1},
};

/* One case through the _ex entry points: the pooled result, and for max_pool2d
 * the indices (torch's return_indices) as a second result. */
static int model_pool(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    const pool_ex_case *c = ctx;
    (void)nargs;
    (void)max;
    tj_tensor *x = c->transpose ? tj_transpose(args[0], 2, 3) : args[0];
    if (c->avg) {
        tj_avg_pool2d_options o = tj_avg_pool2d_defaults();
        o.stride = c->s;
        o.padding = c->p;
        o.ceil_mode = c->ceil;
        o.count_include_pad = c->cip;
        o.divisor_override = c->div;
        return (outs[0] = tj_avg_pool2d_ex(x, c->k, &o)) ? 1 : -1;
    }
    tj_max_pool2d_options o = tj_max_pool2d_defaults();
    o.stride = c->s;
    o.padding = c->p;
    o.dilation = c->d;
    o.ceil_mode = c->ceil;
    return (outs[0] = tj_max_pool2d_ex(x, c->k, &o, &outs[1])) ? 2 : -1;
}

static void test_pool_options(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof ex_cases / sizeof *ex_cases; k++) {
        const pool_ex_case *c = &ex_cases[k];
        tj_tensor *x = in(c->name, "x"), *outs[2] = {NULL, NULL};
        bool exact = tj_dtype_of(x) == TJ_I64;
        for (int compiled = 0; compiled < 2; compiled++) {
            int n;
            if (compiled) {
                tj_compiled *m = tj_compile_multi(model_pool, (void *)c,
                                                  &(tj_compile_options){.name = "pool"});
                n = tj_call_multi(m, &x, 1, outs, 2);
                tj_compiled_stats st;
                assert_int_equal(tj_compiled_stats_get(m, &st), 0);
                tj_compiled_free(m);
                if (n > 0 && (st.graphs != 1 || st.eager_calls != 0))
                    fail_msg("%s: ran eagerly (graphs %d)", c->name, st.graphs);
            } else {
                n = model_pool((void *)c, &x, 1, outs, 2);
            }
            if (n < 0)
                fail_msg("%s%s: %s", c->name, compiled ? " compiled" : "", tj_last_error());
            assert_int_equal(n, c->avg ? 1 : 2);
            if (!tu_all_close(outs[0], in(c->name, "out"), exact ? 0 : 1e-6) ||
                (!c->avg && !tu_all_close(outs[1], in(c->name, "idx"), 0)))
                print_error("case %s%s\n", c->name, compiled ? " compiled" : "");
            check(c->name, outs[0], exact ? 0 : 1e-6);
            if (!c->avg)
                tu_assert_close(outs[1], in(c->name, "idx"), 0, 0);
        }
    }
}

/* The plain forms are the _ex forms with the defaults; a NULL opts is the defaults. */
static void test_pool_option_defaults(void **state)
{
    (void)state;
    tj_max_pool2d_options m = tj_max_pool2d_defaults();
    assert_true(!m.stride && !m.padding && !m.dilation && !m.ceil_mode);
    tj_avg_pool2d_options a = tj_avg_pool2d_defaults();
    assert_true(!a.stride && !a.padding && !a.ceil_mode && a.count_include_pad &&
                a.divisor_override == 0);
    const int64_t k2[2] = {2, 2};
    tj_tensor *x = in("max_k2", "x"), *idx = NULL;
    check("max_k2", tj_max_pool2d_ex(x, k2, NULL, NULL), 0);
    check("max_k2", tj_max_pool2d_ex(x, k2, &m, &idx), 0);
    assert_non_null(idx);
    assert_int_equal(tj_dtype_of(idx), TJ_I64);
    check("avg_k2", tj_avg_pool2d_ex(in("avg_k2", "x"), k2, NULL), 1e-6);
    a.count_include_pad = false;
    a.stride = (int64_t[]){2, 2};
    a.padding = P11;
    check("avg_pad_ex", tj_avg_pool2d_ex(in("avg_pad_ex", "x"), (int64_t[]){3, 3}, &a), 1e-6);
}

/* The gradient of sum(max_pool2d(x)) counts, at each input element, the
 * windows whose index names it: the values' rule and the indices agree. */
static void test_pool_indices_grad(void **state)
{
    (void)state;
    tj_tensor *x = tj_clone(in("maxi_k3s2p1", "x")), *idx = NULL;
    assert_int_equal(tj_requires_grad(x, true), 0);
    tj_max_pool2d_options o = tj_max_pool2d_defaults();
    o.stride = (int64_t[]){2, 2};
    o.padding = P11;
    tj_tensor *y = tj_max_pool2d_ex(x, (int64_t[]){3, 3}, &o, &idx);
    assert_non_null(y);
    assert_int_equal(tj_backward(tj_sum(y, NULL, 0, false)), 0);
    tj_tensor *gx = tj_contiguous(tj_grad(x)), *ic = tj_contiguous(idx);
    const float *gd = tj_data(gx);
    const int64_t *id = tj_data(ic);
    int64_t planes = tj_shape(x)[0] * tj_shape(x)[1], hw = tj_shape(x)[2] * tj_shape(x)[3];
    int64_t ohw = tj_shape(y)[2] * tj_shape(y)[3];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t e = 0; e < hw; e++) {
            int64_t count = 0;
            for (int64_t q = 0; q < ohw; q++)
                count += id[p * ohw + q] == e;
            if (gd[p * hw + e] != (float)count)
                fail_msg("plane %lld element %lld: gradient %g, %lld windows pick it",
                         (long long)p, (long long)e, gd[p * hw + e], (long long)count);
        }
}

static void test_pool_option_errors(void **state)
{
    (void)state;
    tj_tensor *x = F32(1, 2, 5, 5), *idx = x;
    tj_max_pool2d_options m = tj_max_pool2d_defaults();
    m.ceil_mode = true;
    m.stride = (int64_t[]){2, 2};
    /* ceil mode keeps a kernel over the input while a window fits: 5 + 1 >= 6 */
    assert_non_null(tj_max_pool2d_ex(x, (int64_t[]){6, 6}, &m, NULL));
    tu_assert_error(tj_max_pool2d_ex(x, (int64_t[]){8, 8}, &m, &idx), "max_pool2d(f32[1,2,5,5])",
                    "kernel 8x8 (dilated 8x8) leaves no window in the padded input 5x5, even "
                    "with ceil_mode and stride [2, 2]", NULL);
    assert_null(idx);
    m.ceil_mode = false;
    tu_assert_error(tj_max_pool2d_ex(x, (int64_t[]){6, 6}, &m, NULL),
                    "kernel 6x6 (dilated 6x6) is larger than the padded input 5x5", NULL);
    idx = x;
    tu_assert_error(tj_max_pool2d_ex(Z(TJ_I64, 1, 2, 5, 5), (int64_t[]){2, 2}, NULL, &idx),
                    "max_pool2d(i64[1,2,5,5])", "not defined for i64 (needs f32 or f64)", NULL);
    assert_null(idx);
    idx = x;
    assert_null(tj_max_pool2d_ex(NULL, (int64_t[]){2, 2}, NULL, &idx));
    assert_null(idx);
    m.padding = (int64_t[]){2, 1};
    tu_assert_error(tj_max_pool2d_ex(x, (int64_t[]){3, 3}, &m, NULL),
                    "padding [2, 1] exceeds half the kernel size [3, 3]", NULL);
    tj_avg_pool2d_options a = tj_avg_pool2d_defaults();
    a.ceil_mode = true;
    a.stride = (int64_t[]){3, 3};
    tu_assert_error(tj_avg_pool2d_ex(x, (int64_t[]){8, 8}, &a), "avg_pool2d(f32[1,2,5,5])",
                    "leaves no window in the padded input 5x5, even with ceil_mode and stride "
                    "[3, 3]", NULL);
    a.divisor_override = 3;
    tu_assert_error(tj_avg_pool2d_ex(Z(TJ_BOOL, 1, 2, 5, 5), (int64_t[]){2, 2}, &a),
                    "avg_pool2d(bool[1,2,5,5])", "not defined for bool", NULL);
    a.stride = (int64_t[]){0, 1};
    tu_assert_error(tj_avg_pool2d_ex(x, (int64_t[]){2, 2}, &a), "avg_pool2d(f32[1,2,5,5])",
                    "stride must be positive, got [0, 1]", NULL);
    assert_null(tj_avg_pool2d_ex(NULL, (int64_t[]){2, 2}, &a));
    tj_clear_error();
}

/* Attribute lists from text IR may hold 0, 1 or 2 values (not more). */
static void test_window_attrs(void **state)
{
    (void)state;
    ir_attrs a = {0};
    ir_window2d w;
    char err[128];
    ir_attr_ints(&a.a[0], (int64_t[]){3}, 1);
    assert_int_equal(ir_window2d_of(OP_max_pool2d, &a, NULL, &w, err, sizeof err), 0);
    assert_true(w.kernel[0] == 3 && w.kernel[1] == 3 && w.stride[0] == 3 && w.stride[1] == 3);
    assert_true(w.padding[0] == 0 && w.dilation[1] == 1 && w.groups == 1);
    assert_true(ir_window2d_of(OP_avg_pool2d, &a, NULL, &w, err, sizeof err) == 0 &&
                w.count_include_pad);
    ir_attr_ints(&a.a[1], (int64_t[]){1, 2, 3}, 3);
    assert_int_equal(ir_window2d_of(OP_max_pool2d, &a, NULL, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "stride needs 1 or 2 values, got 3"));
    ir_attrs c = {0};
    assert_int_equal(ir_window2d_of(OP_conv2d, &c, (int64_t[]){3, 2}, &w, err, sizeof err), 0);
    assert_true(w.kernel[1] == 2 && w.stride[0] == 1 && w.groups == 1);
}

/* ---- BLAS bridge ---------------------------------------------------------------------------- */

static void test_blas_bridge(void **state)
{
    (void)state;
    const char *core = rt_blas_core();
    assert_non_null(core);
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
        const char *env = getenv("OPENBLAS_CORETYPE");
        assert_non_null(env);   /* set by the bridge unless the user had set it */
    }
    /* k = 0 scales C by beta without calling BLAS */
    float c[4] = {1, 2, 3, 4};
    assert_int_equal(rt_sgemm(false, false, 2, 2, 0, 1.0f, c, 1, c, 1, 1.0f, c, 2), 0);
    assert_true(c[0] == 1 && c[3] == 4);
    assert_int_equal(rt_sgemm(false, false, 2, 2, 0, 1.0f, c, 1, c, 1, 0.0f, c, 2), 0);
    assert_true(c[0] == 0 && c[3] == 0);
    /* thread count changes before and after load are accepted */
    rt_blas_set_threads(1);
    rt_blas_set_threads(tj_num_threads());
    double a[6] = {1, 2, 3, 4, 5, 6}, r[4];
    assert_int_equal(rt_dgemm(false, true, 2, 2, 3, 1.0, a, 3, a, 3, 0.0, r, 2), 0);
    assert_true(r[0] == 14 && r[1] == 32 && r[2] == 32 && r[3] == 77);
}

/* Run in a child process (a fresh OpenBLAS state) with TJIT_OPENBLAS naming
 * a missing library, then one without CBLAS: the ops that need BLAS fail
 * with the reason, integer matmul still works. Exit status 0 when all is as
 * expected. */
static int child_without_blas(void)
{
    tj_scope_begin();
    const char *why = getenv("TJ_EXPECT");
    tj_tensor *a = tj_ones(TJ_F32, 2, (int64_t[]){2, 3});
    tj_tensor *b = tj_ones(TJ_F32, 2, (int64_t[]){3, 2});
    tj_tensor *ab[3] = {tj_matmul(a, b), NULL, NULL};
    int bad = ab[0] || !strstr(tj_last_error(), "matmul(f32[2,3], f32[3,2]): ") ||
              !strstr(tj_last_error(), why);
    tj_tensor *ba = tj_ones(TJ_F32, 3, (int64_t[]){4, 2, 3});
    ab[1] = tj_matmul(ba, tj_ones(TJ_F32, 3, (int64_t[]){4, 3, 2}));   /* parallel batches */
    bad |= ab[1] || !strstr(tj_last_error(), why);
    ab[2] = tj_conv2d(tj_ones(TJ_F32, 4, (int64_t[]){1, 2, 4, 4}),
                      tj_ones(TJ_F32, 4, (int64_t[]){3, 2, 3, 3}), NULL, NULL, NULL, NULL, 1);
    bad |= ab[2] || !strstr(tj_last_error(), "conv2d(f32[1,2,4,4], f32[3,2,3,3]): ") ||
           !strstr(tj_last_error(), why);
    bad |= rt_blas_core() != NULL;
    tj_tensor *i = tj_ones(TJ_I64, 2, (int64_t[]){2, 2});
    bad |= tj_matmul(i, i) == NULL;
    if (bad)
        fprintf(stderr, "unexpected: %s\n", tj_last_error());
    tj_scope_end();
    return bad;
}

static const char *self_path;   /* argv[0]: /proc/self/exe is valgrind under valgrind */

/* This test binary run again as `self mode` with only the environment envp;
 * its exit status. */
static int run_self(const char *mode, char *const envp[])
{
    char *argv[] = {(char *)self_path, (char *)mode, NULL};
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execve(self_path, argv, envp);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void run_child(const char *lib, const char *expect)
{
    char e1[512], e2[512];
    snprintf(e1, sizeof e1, "TJIT_OPENBLAS=%s", lib);
    snprintf(e2, sizeof e2, "TJ_EXPECT=%s", expect);
    /* TJIT_GEMM_SMALL=0: the small f32 GEMMs would otherwise run on tjit's
     * own tiles, which need no OpenBLAS (runtime/gemm_small.c) */
    char *envp[] = {e1, e2, "TJIT_NUM_THREADS=2", "TJIT_GEMM_SMALL=0", NULL};
    assert_int_equal(run_self("--no-blas", envp), 0);
}

static void test_blas_missing(void **state)
{
    (void)state;
    run_child("/nonexistent/libopenblas.so.0",
              "OpenBLAS (/nonexistent/libopenblas.so.0, from TJIT_OPENBLAS) not found: install "
              "libopenblas0 or run scripts/install-deps.sh");
    run_child("libm.so.6", "libm.so.6 lacks cblas_sgemm/cblas_dgemm");
}

/* rt_blas_narrow in a child whose OpenBLAS is loaded with
 * OPENBLAS_CORETYPE=core (and TJIT_BLAS_NARROW=narrow unless NULL): true
 * exactly on an AVX-512 CPU with a core other than OpenBLAS's AVX-512 ones
 * (AVX2 kernels then, which tjit's GEMM outruns: runtime/k_matmul.c). */
static bool narrow_in_child(const char *core, const char *narrow)
{
    char e1[128], e2[128];
    snprintf(e1, sizeof e1, "OPENBLAS_CORETYPE=%s", core);
    snprintf(e2, sizeof e2, "TJIT_BLAS_NARROW=%s", narrow ? narrow : "");
    char *envp[] = {e1, narrow ? e2 : NULL, NULL};
    int status = run_self("--narrow", envp);
    assert_true(status == 10 || status == 11);
    return status == 10;
}

static void test_blas_narrow(void **state)
{
    (void)state;
    bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    assert_int_equal(narrow_in_child("Haswell", NULL), avx512);
    assert_false(narrow_in_child("SkylakeX", NULL));
    assert_false(narrow_in_child("skylakex", NULL));   /* OpenBLAS takes the name in any case */
    assert_true(narrow_in_child("SkylakeX", "1"));
    assert_false(narrow_in_child("Haswell", "0"));
    assert_int_equal(narrow_in_child("Haswell", "2"), avx512);   /* not 0/1: the rule */
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--no-blas") == 0)
        return child_without_blas();
    if (argc > 1 && strcmp(argv[1], "--narrow") == 0)
        return rt_blas_narrow() ? 10 : 11;
    self_path = argv[0];
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_matmul_ranks),     T(test_matmul_ints),   T(test_matmul_views),
        T(test_matmul_extremes),  T(test_matmul_errors), T(test_linear),
        T(test_linear_views),     T(test_linear_errors), T(test_conv2d),
        T(test_conv2d_threads),   T(test_conv2d_weight_reuse), T(test_conv2d_weight_reuse_compiled), T(test_conv2d_bf16),
        T(test_conv2d_direct),   T(test_conv2d_direct_isa), T(test_conv2d_defaults_and_views),
        T(test_conv2d_errors),    T(test_pools),         T(test_pool_defaults),
        T(test_pool_errors),      T(test_pool_options),  T(test_pool_option_defaults),
        T(test_pool_indices_grad), T(test_pool_option_errors), T(test_window_attrs),
        T(test_blas_bridge),
        T(test_blas_missing),
        T(test_blas_narrow),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
