/* test_aot_block.c - a transformer-style block trained through a compiled
 * module, against the same block eager: layer norm, causal attention,
 * dropout twice, a GELU MLP, training-mode batch norm (its running
 * statistics written by every call) and two results (the output and a loss
 * of it). Every call runs its forward plan and one partitioned backward (no
 * eager call, no recomputed forward); outputs, gradients and running
 * statistics match eager's over four steps, each drawing its own masks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "util.h"

enum { WQ, WK, WV, WO, W1, W2, LN_G, LN_B, BN_G, BN_B, NPARAM, RM = NPARAM, RV, NTENSOR };

static int block(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    tj_tensor **p = ctx, *x = args[0];
    (void)nargs;
    (void)max;
    tj_tensor *h = tj_layer_norm(x, 1, p[LN_G], p[LN_B], 1e-5);
    tj_tensor *att = tj_scaled_dot_product_attention(tj_matmul(h, p[WQ]), tj_matmul(h, p[WK]),
                                                     tj_matmul(h, p[WV]), NULL, true, -1.0);
    x = tj_add(x, tj_dropout(tj_matmul(att, p[WO]), 0.1, true));
    tj_tensor *f = tj_matmul(tj_gelu_tanh(tj_matmul(x, p[W1])), p[W2]);
    tj_tensor *rows = tj_reshape(f, 2, (int64_t[]){-1, tj_size(f, 2)});   /* channels: the last dim */
    tj_tensor *bn = tj_batch_norm_train(rows, p[RM], p[RV], p[BN_G], p[BN_B], 0.1, 1e-5);
    outs[0] = tj_add(x, tj_dropout(tj_reshape(bn, 3, tj_shape(f)), 0.1, true));
    outs[1] = tj_mean(tj_mul(outs[0], outs[0]), NULL, 0, false);
    return 2;
}

static void init(tj_tensor **p)
{
    tj_manual_seed(3);
    const int64_t dd[2] = {16, 16}, d1[2] = {16, 32}, d2[2] = {32, 16}, d[1] = {16};
    for (int k = WQ; k <= WO; k++)
        p[k] = tj_mul_s(tj_randn(TJ_F32, 2, dd), 0.25);
    p[W1] = tj_mul_s(tj_randn(TJ_F32, 2, d1), 0.25);
    p[W2] = tj_mul_s(tj_randn(TJ_F32, 2, d2), 0.25);
    p[LN_G] = tj_rand(TJ_F32, 1, d);
    p[BN_G] = tj_rand(TJ_F32, 1, d);
    p[LN_B] = tj_randn(TJ_F32, 1, d);
    p[BN_B] = tj_randn(TJ_F32, 1, d);
    p[RM] = tj_zeros(TJ_F32, 1, d);
    p[RV] = tj_ones(TJ_F32, 1, d);
    for (int k = 0; k < NPARAM; k++)
        assert_int_equal(tj_requires_grad(p[k], true), 0);
}

static void test_block(void **state)
{
    (void)state;
    tj_tensor *pe[NTENSOR], *pc[NTENSOR];
    init(pe);
    init(pc);
    tj_compiled *c = tj_compile_multi(block, pc, &(tj_compile_options){.name = "block"});
    for (int step = 0; step < 4; step++) {
        tj_manual_seed(100 + (uint64_t)step);
        tj_tensor *x = tj_randn(TJ_F32, 3, (int64_t[]){2, 8, 16}), *re[2], *rc[2];
        tj_manual_seed(200 + (uint64_t)step);   /* the same masks both ways */
        assert_int_equal(block(pe, &x, 1, re, 2), 2);
        assert_int_equal(tj_backward(tj_add(tj_sum(re[0], NULL, 0, false), re[1])), 0);
        tj_manual_seed(200 + (uint64_t)step);
        if (tj_call_multi(c, &x, 1, rc, 2) != 2 || tj_backward(tj_add(tj_sum(rc[0], NULL, 0, false), rc[1])) != 0)
            fail_msg("step %d: %s", step, tj_last_error());
        tu_assert_close(rc[0], re[0], 1e-5, 1e-5);
        for (int k = 0; k < NTENSOR; k++) {
            tj_tensor *want = k < NPARAM ? tj_grad(pe[k]) : pe[k], *got = k < NPARAM ? tj_grad(pc[k]) : pc[k];
            assert_non_null(want);
            assert_non_null(got);
            tu_assert_close(got, want, 1e-4, 1e-5);
            if (k < NPARAM) {
                tj_zero_grad(pe[k]);
                tj_zero_grad(pc[k]);
            }
        }
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.breaks, 0);
    assert_int_equal(st.backward.partitioned, 1);
    tu_assert_calls(c, 0, 4, "backward of results 0, 1: joint graph partitioned");
    tu_assert_explain(c, "(2 written back)");
    tj_compiled_free(c);
    for (int k = 0; k < NTENSOR; k++) {
        tj_release(pe[k]);
        tj_release(pc[k]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_block, tu_scope_setup, tu_scope_teardown),
    };
    return tu_run_jit_suite("aot_block", tests, sizeof tests / sizeof tests[0],
                            "a transformer-style block trained compiled against eager");
}
