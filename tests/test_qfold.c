/* test_qfold.c - the quantization fold (passes/fold_quant.c) and its int8
 * ops, qlinear and qconv2d (ir/ops.def; runtime/k_qgemm.c).
 *
 * Text in, text out: each pattern (linear per channel with a bias, matmul
 * per tensor, conv2d with stride, padding and groups, requantize, relu then
 * requantize) folds to the graph written
 * below, and what does not match (an input quantized per channel, a weight
 * per channel along the wrong axis) is left alone. Values: every folded
 * graph runs next to its unfused original on the graph executor, under
 * every GEMM variant this CPU supports (TJIT_ISA forcing: generic, avx2,
 * avx512, avx512_bf16 with VNNI) and on the emulated AMX tiles (the convs'
 * GEMMs have the rows), and agrees with it (f32 within 1e-5 relative;
 * quantized outputs exactly, but for one step at an f32 rounding tie); the
 * f32 result equals an exact integer reference scaled once (int8 sums are
 * exact in s32), and the variants agree bit for bit. Compiled: a model of
 * the public quantization ops compiles to the fold and matches eager.
 * Errors: qlinear's shape rule (weight size, output dtype and scale, bias)
 * and qconv2d's (channels, window), and the kernel (a per-channel scale
 * that is 0 at run time). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../passes/pass.h"
#include "../runtime/gemm.h"
#include "../sched/exec.h"
#include "util.h"
#include "util_ir.h"

#define G(sig, body) "graph @t(" sig ") {\n" body "\n}\n"

static ir_graph *fold(ir_graph *g)
{
    char err[1024];
    ps_options opt = {.verify = true};
    ir_graph *h = ps_run_pipeline(g, "fold_quant", &opt, err, sizeof err);
    if (!h)
        fail_msg("%s", err);
    return h;
}

static void expect_fold(const char *src, const char *want)
{
    tu_expect_passes(src, "fold_quant", want);
}

/* ---- the cases ------------------------------------------------------------------------ */

/* linear, weight per channel, bias */
#define LINEAR_SIG "%qx: u8[2,3,64], %qw: i8[40,64], %ws: f32[40], %wz: i64[40], %b: f32[40]"
#define DQ_X " %x = dequantize %qx {scale=0.05, zero_point=128, axis=0} : f32[2,3,64]\n"
#define DQ_W " %w = dequantize %qw, %ws, %wz {scale=1, zero_point=0, axis=0} : f32[40,64]\n"
static const char *const linear_src =
    G(LINEAR_SIG, DQ_X DQ_W " %y = linear %x, %w, %b : f32[2,3,40]\n return %y");
/* the same, relu, quantized to u8 */
static const char *const relu_q_src =
    G(LINEAR_SIG, DQ_X DQ_W " %y = linear %x, %w, %b : f32[2,3,40]\n"
                            " %r = relu %y : f32[2,3,40]\n"
                            " %q = quantize_per_tensor %r {scale=0.1, zero_point=10, dtype=u8} : u8[2,3,40]\n"
                            " return %q");
/* matmul on an i8 input, a u8 weight [K, N] per tensor, quantized to i8 */
static const char *const matmul_src =
    G("%qx: i8[5,33], %qw: u8[33,70]",
      " %x = dequantize %qx {scale=0.02, zero_point=-3, axis=0} : f32[5,33]\n"
      " %w = dequantize %qw {scale=0.01, zero_point=120, axis=0} : f32[33,70]\n"
      " %y = matmul %x, %w : f32[5,70]\n"
      " %q = quantize_per_tensor %y {scale=0.05, zero_point=-2, dtype=i8} : i8[5,70]\n"
      " return %y, %q");
/* an asymmetric per-channel i8 weight (zero points not 0) */
static const char *const asym_src =
    G("%qx: u8[7,300], %qw: i8[20,300], %ws: f32[20], %wzn: i64[20]",
      " %x = dequantize %qx {scale=0.03, zero_point=7, axis=0} : f32[7,300]\n"
      " %w = dequantize %qw, %ws, %wzn {scale=1, zero_point=0, axis=0} : f32[20,300]\n"
      " %y = linear %x, %w : f32[7,20]\n return %y");

/* conv2d: u8 input, i8 weight per channel, bias, stride 2, padding 1,
 * groups 2; then quantized to i8 */
#define CONV_SIG "%qx: u8[2,4,9,9], %qw: i8[6,2,3,3], %ws: f32[6], %wz: i64[6], %b: f32[6]"
static const char *const conv_src =
    G(CONV_SIG,
      " %x = dequantize %qx {scale=0.04, zero_point=100, axis=0} : f32[2,4,9,9]\n"
      " %w = dequantize %qw, %ws, %wz {scale=1, zero_point=0, axis=0} : f32[6,2,3,3]\n"
      " %y = conv2d %x, %w, %b {stride=[2], padding=[1], dilation=[1], groups=2} : f32[2,6,5,5]\n"
      " %q = quantize_per_tensor %y {scale=0.02, zero_point=0, dtype=i8} : i8[2,6,5,5]\n"
      " return %y, %q");
/* conv2d 1x1, per-tensor u8 weight (asymmetric after the shift), no bias, dilation 2 */
static const char *const conv_pt_src =
    G("%qx: i8[1,3,7,6], %qw: u8[5,3,2,2]",
      " %x = dequantize %qx {scale=0.1, zero_point=4, axis=0} : f32[1,3,7,6]\n"
      " %w = dequantize %qw {scale=0.01, zero_point=130, axis=0} : f32[5,3,2,2]\n"
      " %y = conv2d %x, %w {stride=[1], padding=[0], dilation=[2], groups=1} : f32[1,5,5,4]\n"
      " return %y");

static void test_fold_text(void **state)
{
    (void)state;
    expect_fold(linear_src,
                "graph @t(" LINEAR_SIG ") {\n"
                "  %0 = qlinear %qx, %qw, %ws, %wz, %b {x_scale=0.05, x_zero_point=128, out_scale=1, out_zero_point=0, dtype=f32} : f32[2,3,40]\n"
                "  return %0\n"
                "}\n");
    expect_fold(relu_q_src,
                "graph @t(" LINEAR_SIG ") {\n"
                "  %0 = qlinear %qx, %qw, %ws, %wz, %b {x_scale=0.05, x_zero_point=128, out_scale=0.1, out_zero_point=10, dtype=u8} : u8[2,3,40]\n"
                "  %1 = scalar {value=1e+01, dtype=i64} : i64[] weak\n"
                "  %2 = maximum %0, %1 : u8[2,3,40]\n"
                "  return %2\n"
                "}\n");
    expect_fold(matmul_src,
                "graph @t(%qx: i8[5,33], %qw: u8[33,70]) {\n"
                "  %0 = full {shape=[70], value=0.01, dtype=f32} : f32[70]\n"
                "  %1 = full {shape=[70], value=1.2e+02, dtype=i64} : i64[70]\n"
                "  %2 = permute %qw {perm=[1,0]} : u8[70,33]\n"
                "  %3 = qlinear %qx, %2, %0, %1 {x_scale=0.02, x_zero_point=-3, out_scale=1, out_zero_point=0, dtype=f32} : f32[5,70]\n"
                "  %4 = qlinear %qx, %2, %0, %1 {x_scale=0.02, x_zero_point=-3, out_scale=0.05, out_zero_point=-2, dtype=i8} : i8[5,70]\n"
                "  return %3, %4\n"
                "}\n");
    expect_fold(conv_src,
                "graph @t(" CONV_SIG ") {\n"
                "  %0 = qconv2d %qx, %qw, %ws, %wz, %b {x_scale=0.04, x_zero_point=100, out_scale=1, out_zero_point=0, dtype=f32, window=[2,2,1,1,1,1,2]} : f32[2,6,5,5]\n"
                "  %1 = qconv2d %qx, %qw, %ws, %wz, %b {x_scale=0.04, x_zero_point=100, out_scale=0.02, out_zero_point=0, dtype=i8, window=[2,2,1,1,1,1,2]} : i8[2,6,5,5]\n"
                "  return %0, %1\n"
                "}\n");
}

/* Not folded: the input per channel; the weight per channel along K. */
static void test_fold_leaves_others(void **state)
{
    (void)state;
    const char *srcs[] = {
        G("%qx: u8[4,8], %s: f32[4], %z: i64[4], %w: f32[6,8]",
          " %x = dequantize %qx, %s, %z {scale=1, zero_point=0, axis=0} : f32[4,8]\n"
          " %y = linear %x, %w : f32[4,6]\n return %y"),
        G("%qx: u8[4,8], %qw: i8[6,8], %s: f32[8], %z: i64[8]",
          " %x = dequantize %qx {scale=0.1, zero_point=0, axis=0} : f32[4,8]\n"
          " %w = dequantize %qw, %s, %z {scale=1, zero_point=0, axis=1} : f32[6,8]\n"
          " %y = linear %x, %w : f32[4,6]\n return %y"),
    };
    for (size_t c = 0; c < sizeof srcs / sizeof *srcs; c++) {
        ir_graph *g = tu_parse(srcs[c]);
        assert_ptr_equal(fold(g), g);
        ir_graph_free(g);
    }
}

/* ---- values ----------------------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

/* Graph input n by its name (in the test's scope): q* quantized values over the dtype's range,
 * ws scales in [0.005, 0.02), wz zero points 0, wzn in [-20, 20], others N(0, 1). */
static tj_tensor *make_input(const ir_node *n)
{
    int64_t numel = ir_type_numel(&n->type);
    double *v = malloc((size_t)(numel ? numel : 1) * sizeof *v);
    assert_non_null(v);
    tj_dtype dt = n->type.dtype;
    for (int64_t k = 0; k < numel; k++) {
        double u = uniform();
        v[k] = dt == TJ_U8 ? floor(256 * u) : dt == TJ_I8 ? floor(256 * u) - 128
               : !strcmp(n->name, "ws") ? 0.005 + 0.015 * u
               : !strcmp(n->name, "wz") ? 0
               : !strcmp(n->name, "wzn") ? floor(41 * u) - 20
               : 2 * u - 1;
    }
    tj_tensor *t = tu_tensor(dt, n->type.ndim, n->type.shape, v);
    free(v);
    return t;
}

static void run(const ir_graph *g, tj_tensor *const *inputs, tj_tensor **outs)
{
    int *last = sc_exec_last_use(g);
    assert_non_null(last);
    int rc = sc_exec(g, inputs, last, outs);
    free(last);
    if (rc != 0)
        fail_msg("running the graph failed: %s", tj_last_error());
}

/* Quantized results: equal, or one step apart where the f32 value is at a
 * rounding tie (at most 1 in 50 here). */
static void assert_q_close(tj_tensor *got, tj_tensor *want)
{
    tj_tensor *d = tj_abs(tj_sub(tj_cast(got, TJ_I32), tj_cast(want, TJ_I32)));
    int64_t n = tj_numel(d), off = 0;
    const int32_t *p = tj_data(d);
    for (int64_t k = 0; k < n; k++) {
        assert_true(p[k] <= 1);
        off += p[k];
    }
    assert_true(off * 50 <= n);
}

/* The folded graph against the original, under every variant; the variants
 * give the same bits. */
static void check_values(const char *src)
{
    ir_graph *g = tu_parse(src), *h = fold(g);
    assert_ptr_not_equal(h, g);
    tj_tensor *in[8], *want[4], *got[4], *first[4];
    for (int k = 0; k < g->ninputs; k++)
        in[k] = make_input(g->inputs[k]);
    run(g, in, want);
    unsigned f = tjg_cpu_features();
    int runs = 0;
    /* v = TJG_NISA: the AMX path on the emulated tiles (runtime/gemm_amx.h),
     * where a GEMM has the rows for it */
    for (int v = TJG_GENERIC; v <= TJG_NISA; v++) {
        bool emu = v == TJG_NISA;
        if (!emu && tjg_isa_select(f, tjg_isa_name((tjg_isa)v)) != (tjg_isa)v) {
            printf("#summary skipped variant %s: this CPU lacks its features\n",
                   tjg_isa_name((tjg_isa)v));
            continue;
        }
        tjg_isa_force(emu ? -1 : v);
        tjg_amx_emulate(emu);
        run(h, in, got);
        tjg_amx_emulate(false);
        for (int o = 0; o < g->noutputs; o++) {
            if (tj_dtype_of(want[o]) == TJ_F32)
                tu_assert_close(got[o], want[o], 1e-5, 1e-5);
            else
                assert_q_close(got[o], want[o]);
            if (runs == 0)
                first[o] = got[o];
            else {
                tu_assert_close(got[o], first[o], 0, 0);
                tj_release(got[o]);
            }
        }
        runs++;
    }
    tjg_isa_force(-1);
    for (int o = 0; o < g->noutputs; o++) {
        tj_release(want[o]);
        tj_release(first[o]);
    }
    ir_graph_free(h);
    ir_graph_free(g);
}

static void test_fold_values(void **state)
{
    (void)state;
    uint64_t tiles = tjg_amx_calls();
    check_values(linear_src);
    check_values(relu_q_src);
    check_values(matmul_src);
    check_values(asym_src);
    check_values(conv_src);
    check_values(conv_pt_src);
    assert_true(tjg_amx_calls() > tiles);   /* the convs' GEMMs reached the tiles */
}

/* With a symmetric weight the f32 result is the exact integer sum scaled
 * once (one f32 rounding): checked in double. */
static void test_exact_sums(void **state)
{
    (void)state;
    ir_graph *g = tu_parse(G("%qx: u8[7,300], %qw: i8[20,300], %ws: f32[20], %wz: i64[20]",
                          " %x = dequantize %qx {scale=0.03, zero_point=7, axis=0} : f32[7,300]\n"
                          " %w = dequantize %qw, %ws, %wz {scale=1, zero_point=0, axis=0} : f32[20,300]\n"
                          " %y = linear %x, %w : f32[7,20]\n return %y"));
    ir_graph *h = fold(g);
    tj_tensor *in[4], *out[1];
    for (int k = 0; k < 4; k++)
        in[k] = make_input(g->inputs[k]);
    run(h, in, out);
    const uint8_t *x = tj_data(in[0]);
    const int8_t *w = tj_data(in[1]);
    const float *ws = tj_data(in[2]), *y = tj_data(out[0]);
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 20; j++) {
            int64_t s = 0;
            for (int k = 0; k < 300; k++)
                s += ((int64_t)x[i * 300 + k] - 7) * w[j * 300 + k];
            double want = (double)s * (double)(0.03f * ws[j]);
            assert_true(fabs(y[i * 20 + j] - want) <= 1e-6 * (1 + fabs(want)));
        }
    tj_release(out[0]);
    ir_graph_free(h);
    ir_graph_free(g);
}

/* ---- compiled ---------------------------------------------------------------------------- */

typedef struct qm { tj_tensor *qw, *ws, *wz, *b; } qm;

static tj_tensor *model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    const qm *m = ctx;
    tj_tensor *x = tj_dequantize(tj_quantize_per_tensor(args[0], 0.02, 128, TJ_U8), 0.02, 128);
    tj_tensor *w = tj_dequantize_per_channel(m->qw, m->ws, m->wz, 0);
    tj_tensor *q = tj_quantize_per_tensor(tj_relu(tj_linear(x, w, m->b)), 0.05, 0, TJ_U8);
    return tj_dequantize(q, 0.05, 0);
}

static void test_compiled(void **state)
{
    (void)state;
    ir_graph *g = tu_parse(linear_src);
    qm m = {make_input(g->inputs[1]), make_input(g->inputs[2]), make_input(g->inputs[3]),
            make_input(g->inputs[4])};
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){9, 64});
    tj_compiled *c = tj_compile(model, &m, NULL);
    tj_tensor *got = tj_call(c, &x, 1), *want = model(&m, &x, 1);
    assert_non_null(got);
    /* one output step (0.05) at an f32 rounding tie */
    tu_assert_close(got, want, 0, 0.05 + 1e-6);
    tj_compiled_free(c);
    ir_graph_free(g);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void expect_parse_error(const char *src, const char *want)
{
    char err[1024];
    ir_graph *g = ir_parse(src, strlen(src), "case", err, sizeof err);
    if (g)
        fail_msg("parsed:\n%s", src);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not contain \"%s\"", err, want);
}

#define QL(attrs, ty) " %0 = qlinear %qx, %qw, %ws, %wz {" attrs "} : " ty "\n return %0"
#define QSIG "%qx: u8[2,8], %qw: i8[4,8], %ws: f32[4], %wz: i64[4]"
#define QOK "x_scale=0.1, x_zero_point=0, out_scale=1, out_zero_point=0"

static void test_errors(void **state)
{
    (void)state;
    expect_parse_error(G("%qx: u8[2,8], %qw: i8[4,7], %ws: f32[4], %wz: i64[4]",
                         QL(QOK ", dtype=f32", "f32[2,4]")),
                       "weight must be 2-D [N, K] with K = x's last dim");
    expect_parse_error(G(QSIG, QL(QOK ", dtype=i32", "i32[2,4]")),
                       "the output (f32, or u8/i8 quantized): the quantized dtype must be u8 or i8");
    expect_parse_error(G(QSIG, QL("x_scale=0.1, x_zero_point=0, out_scale=0, out_zero_point=0, dtype=u8",
                                  "u8[2,4]")),
                       "the output (f32, or u8/i8 quantized): scale must be positive and finite");
    expect_parse_error(G(QSIG, QL("x_scale=-1, x_zero_point=0, out_scale=1, out_zero_point=0, dtype=f32",
                                  "f32[2,4]")),
                       "scale must be positive and finite, got -1");
    expect_parse_error(G(QSIG, QL("x_scale=1, x_zero_point=300, out_scale=1, out_zero_point=0, dtype=f32",
                                  "f32[2,4]")),
                       "zero_point 300 is out of range for u8");
    expect_parse_error(G(QSIG ", %b: f32[5]",
                         " %0 = qlinear %qx, %qw, %ws, %wz, %b {" QOK ", dtype=f32} : f32[2,4]\n return %0"),
                       "bias must be f32 [4]");
    expect_parse_error(G("%qx: u8[1,4,5,5], %qw: i8[6,2,3,3], %ws: f32[6], %wz: i64[6]",
                         " %0 = qconv2d %qx, %qw, %ws, %wz {" QOK ", dtype=f32, window=[1,1,0,0,1,1,1]} : f32[1,6,3,3]\n return %0"),
                       "channels: input 4, weight [6, 2] and groups 1 disagree");
    expect_parse_error(G("%qx: u8[1,2,5,5], %qw: i8[6,2,3,3], %ws: f32[6], %wz: i64[6]",
                         " %0 = qconv2d %qx, %qw, %ws, %wz {" QOK ", dtype=f32, window=[0,1,0,0,1,1,1]} : f32[1,6,3,3]\n return %0"),
                       "window value 0 is 0: strides, dilations and groups must be positive");
    expect_parse_error(G("%qx: u8[1,2,5,5], %qw: i8[6,2,3,3], %ws: f32[6], %wz: i64[6]",
                         " %0 = qconv2d %qx, %qw, %ws, %wz {" QOK ", dtype=f32, window=[1,1]} : f32[1,6,3,3]\n return %0"),
                       "window must hold 7 values");
    /* a per-channel scale of 0, found by the kernel */
    ir_graph *g = tu_parse(G(QSIG, QL(QOK ", dtype=f32", "f32[2,4]")));
    tj_tensor *in[4] = {make_input(g->inputs[0]), make_input(g->inputs[1]),
                        tu_tensor(TJ_F32, 1, (int64_t[]){4}, (double[]){0.1, 0, 0.1, 0.1}),
                        make_input(g->inputs[3])};
    tj_tensor *out[1];
    int *last = sc_exec_last_use(g);
    assert_int_equal(sc_exec(g, in, last, out), -1);
    assert_non_null(strstr(tj_last_error(), "qlinear: scale 1 is 0: scales must be positive and finite"));
    free(last);
    ir_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fold_text, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_fold_leaves_others, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_fold_values, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_exact_sums, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_compiled, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_errors, tu_scope_setup, tu_scope_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
