/* test_qstatic.c - static post-training quantization (tjit.h: tj_qstatic_*,
 * tj_quantize_static; frontend/qstatic.c) on a small convnet: calibration
 * chooses the parameters (activations affine u8 holding 0, weights
 * symmetric i8 per channel), the quantized model compiled (its conv2d and
 * linear folded into int8 kernels) equals the same model run eagerly
 * (unfused dequantize -> f32 ops) within a quantization step, and its top-1
 * agrees with the f32 model's on most inputs; every error path. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

typedef struct net {
    tj_tensor *w1, *b1, *w2, *b2, *fw, *fb;
    tj_qstatic *q;   /* NULL: the f32 model */
} net;

static tj_tensor *act(const net *n, int id, tj_tensor *x)
{
    return n->q ? tj_qstatic_act(n->q, id, x) : x;
}

static tj_tensor *wt(const net *n, int id, tj_tensor *w)
{
    return n->q ? tj_qstatic_weight(n->q, id, w) : w;
}

/* conv 3->8 3x3 pad 1, relu, conv 8->8 3x3 stride 2, relu, flatten, linear -> 10 */
static tj_tensor *model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    const net *n = ctx;
    tj_tensor *x = act(n, 0, args[0]);
    x = tj_relu(tj_conv2d(x, wt(n, 0, n->w1), n->b1, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                          (int64_t[]){1, 1}, 1));
    x = act(n, 1, x);
    x = tj_relu(tj_conv2d(x, wt(n, 1, n->w2), n->b2, (int64_t[]){2, 2}, (int64_t[]){0, 0},
                          (int64_t[]){1, 1}, 1));
    x = act(n, 2, tj_flatten(x, 1, -1));
    return tj_linear(x, wt(n, 2, n->fw), n->fb);
}

static net make_net(void)
{
    tj_manual_seed(5);
    net n = {0};
    n.w1 = tj_mul_s(tj_randn(TJ_F32, 4, (int64_t[]){8, 3, 3, 3}), 0.3);
    n.b1 = tj_mul_s(tj_randn(TJ_F32, 1, (int64_t[]){8}), 0.1);
    n.w2 = tj_mul_s(tj_randn(TJ_F32, 4, (int64_t[]){8, 8, 3, 3}), 0.15);
    n.b2 = tj_mul_s(tj_randn(TJ_F32, 1, (int64_t[]){8}), 0.1);
    n.fw = tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){10, 8 * 5 * 5}), 0.07);
    n.fb = tj_mul_s(tj_randn(TJ_F32, 1, (int64_t[]){10}), 0.1);
    return n;
}

static tj_tensor *batch(int i)
{
    tj_manual_seed(100 + (uint64_t)i);
    return tj_randn(TJ_F32, 4, (int64_t[]){16, 3, 11, 11});
}

static int calib(void *ctx, int i, tj_tensor **in)
{
    (void)ctx;
    if (i >= 4)
        return 0;
    in[0] = batch(i);
    return 1;
}

static int argmax_row(const float *p, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        best = p[j] > p[best] ? j : best;
    return best;
}

static void test_convnet(void **state)
{
    (void)state;
    net f = make_net(), qn = f;
    qn.q = tj_qstatic_new();
    assert_int_equal(tj_quantize_static(qn.q, model, &qn, calib, NULL), 0);
    tj_compiled *c = tj_compile(model, &qn, NULL);
    int agree = 0, total = 0;
    for (int i = 10; i < 14; i++) {
        tj_tensor *x = batch(i);
        tj_tensor *want = model(&f, &x, 1), *eager = model(&qn, &x, 1), *got = tj_call(c, &x, 1);
        assert_non_null(got);
        /* compiled int8 vs the unfused quantized model: f32 rounding, which
         * may move an activation by one step (its scale) at a tie */
        tu_assert_close(got, eager, 0.02, 0.05);
        const float *pg = tj_data(got), *pw = tj_data(want);
        for (int r = 0; r < 16; r++, total++)
            agree += argmax_row(pg + r * 10, 10) == argmax_row(pw + r * 10, 10);
    }
    printf("#summary qstatic convnet: top-1 agreement int8 vs f32 %d of %d\n", agree, total);
    assert_true(agree * 10 >= total * 8);
    tj_compiled_free(c);
    tj_qstatic_free(qn.q);
}

static int no_batch(void *ctx, int i, tj_tensor **in)
{
    (void)ctx, (void)i, (void)in;
    return 0;
}

static tj_tensor *two_weights(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    const net *n = ctx;
    tj_tensor *a = tj_qstatic_weight(n->q, 0, n->fw), *b = tj_qstatic_weight(n->q, 0, n->w1);
    return a && b ? args[0] : NULL;
}

static void test_errors(void **state)
{
    (void)state;
    net n = make_net();
    n.q = tj_qstatic_new();
    tj_tensor *x = batch(0);
    tu_assert_error(tj_qstatic_act(n.q, 256, x), "tj_qstatic_act: id 256 is out of range [0, 256)", NULL);
    tu_assert_error(tj_qstatic_act(NULL, 0, x), "tj_qstatic_act: q is NULL", NULL);
    tu_assert_error(tj_qstatic_weight(n.q, -1, x), "tj_qstatic_weight: id -1 is out of range", NULL);
    assert_int_equal(tj_quantize_static(n.q, model, &n, NULL, NULL), -1);
    tu_assert_error(NULL, "tj_quantize_static: calib is NULL", NULL);
    assert_int_equal(tj_quantize_static(n.q, model, &n, no_batch, NULL), -1);
    tu_assert_error(NULL, "the calibration callback gave no batch", NULL);
    assert_int_equal(tj_quantize_static(n.q, two_weights, &n, calib, NULL), -1);
    tu_assert_error(NULL, "tj_qstatic_weight: site 0 was given two different weights", NULL);
    tj_qstatic_free(n.q);

    n.q = tj_qstatic_new();
    tj_tensor *nan = tj_full(TJ_F32, 1, (int64_t[]){3}, NAN);
    tu_assert_error(tj_qstatic_act(n.q, 3, nan), "site 3: the calibration values hold NaN", NULL);
    assert_int_equal(tj_quantize_static(n.q, model, &n, calib, NULL), 0);
    tu_assert_error(tj_qstatic_act(n.q, 7, x), "tj_qstatic_act: site 7 saw no calibration batch", NULL);
    tu_assert_error(tj_qstatic_weight(n.q, 9, n.w1), "tj_qstatic_weight: site 9 was not seen in calibration", NULL);
    assert_int_equal(tj_quantize_static(n.q, model, &n, calib, NULL), -1);
    tu_assert_error(NULL, "q is quantized already", NULL);
    tj_qstatic_free(n.q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_convnet, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_errors, tu_scope_setup, tu_scope_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
