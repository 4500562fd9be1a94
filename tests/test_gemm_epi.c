/* test_gemm_epi.c - fused GEMM epilogues in compiled plans (sched/epi.c,
 * on with TJIT_GEMM_EPILOGUE=1): act(x @ w^T + b) compiled, for every activation tjit's GEMM's epilogue
 * has (and none), equals eager; where tjit's GEMM runs the matmul (a frozen
 * f32 weight on AVX2 or AVX-512 at these shapes: runtime/k_matmul.c) the
 * bias and activation were applied in its epilogue (rt_gemm_epi_count) and
 * the kernel skipped; an epilogue the GEMM cannot take (abs), a bias of
 * another shape ([m, n]), TJIT_GEMM_EPILOGUE unset or 0, and the generic variant
 * (OpenBLAS, then the kernel) are not fused and still equal eager. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../runtime/gemm.h"
#include "../runtime/rt.h"
#include "tjit.h"

typedef tj_tensor *(*act_fn)(tj_tensor *);

typedef struct mctx {
    tj_tensor *w, *b;
    act_fn act;   /* NULL: none */
} mctx;

static tj_tensor *model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    mctx *c = ctx;
    tj_tensor *y = tj_add(tj_matmul(args[0], tj_transpose(c->w, 0, 1)), c->b);
    return c->act ? c->act(y) : y;
}

static tj_tensor *t_none(tj_tensor *x) { return x; }

static void max_diff_le(tj_tensor *x, tj_tensor *y, double tol)
{
    assert_non_null(x);
    assert_non_null(y);
    tj_tensor *d = tj_amax(tj_abs(tj_sub(x, y)), NULL, 0, false);
    assert_non_null(d);
    if (!(tj_item(d) <= tol))
        fail_msg("|compiled - eager| %.3g > %.3g", tj_item(d), tol);
}

/* Compiled twice over, against eager; returns how many calls the GEMM's
 * epilogue took. bias_rows: a bias [m, n] instead of [n]. */
static uint64_t run_case(act_fn act, bool bias_rows)
{
    enum { M = 64, K = 256, N = 320 };   /* a weight over 256 KB: no blocked region */
    tj_alloc_trim();
    tj_scope_begin();
    mctx c = {tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){N, K})),
              tj_keep(bias_rows ? tj_randn(TJ_F32, 2, (int64_t[]){M, N})
                                : tj_randn(TJ_F32, 1, (int64_t[]){N})),
              act == t_none ? NULL : act};
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){M, K});
    tj_compiled *cc = tj_compile(model, &c, &(tj_compile_options){.name = "epi", .freeze = true});
    assert_non_null(cc);
    uint64_t before = rt_gemm_epi_count();
    for (int call = 0; call < 3; call++)
        max_diff_le(tj_call(cc, &x, 1), model(&c, &x, 1), 1e-4);
    uint64_t taken = rt_gemm_epi_count() - before;
    tj_compiled_free(cc);
    tj_scope_end();
    tj_release(c.w), tj_release(c.b);
    return taken;
}

static void test_epilogue_fused(void **state)
{
    (void)state;
    static const act_fn acts[] = {t_none, tj_relu, tj_gelu, tj_gelu_tanh, tj_sigmoid, tj_tanh};
    bool own = tjg_isa_current() >= TJG_AVX2;   /* tjit's GEMM takes the frozen weight */
    setenv("TJIT_GEMM_EPILOGUE", "1", 1);
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        uint64_t n = run_case(acts[a], false);
        if (own && n != 3)
            fail_msg("activation %zu: %llu of 3 calls fused", a, (unsigned long long)n);
        if (!own)
            assert_int_equal(n, 0);
    }
    unsetenv("TJIT_GEMM_EPILOGUE");
}

static void test_epilogue_not_fused(void **state)
{
    (void)state;
    setenv("TJIT_GEMM_EPILOGUE", "1", 1);
    assert_int_equal(run_case(tj_abs, false), 0);   /* not an epilogue activation */
    assert_int_equal(run_case(tj_relu, true), 0);   /* bias [m, n] */
    unsetenv("TJIT_GEMM_EPILOGUE");   /* the default: off */
    assert_int_equal(run_case(tj_gelu_tanh, false), 0);
    setenv("TJIT_GEMM_EPILOGUE", "0", 1);
    assert_int_equal(run_case(tj_gelu_tanh, false), 0);
    setenv("TJIT_GEMM_EPILOGUE", "1", 1);
    tjg_isa_force(TJG_GENERIC);   /* OpenBLAS runs the f32 GEMM: the kernel runs */
    assert_int_equal(run_case(tj_gelu_tanh, false), 0);
    tjg_isa_force(-1);
    if (tjg_isa_current() >= TJG_AVX2)   /* the variant back: fused again */
        assert_int_equal(run_case(tj_gelu_tanh, false), 3);
    unsetenv("TJIT_GEMM_EPILOGUE");
}

/* quantize_dynamic (int8 GEMM on the frozen weight): the plan's bias + act
 * go to the epilogue that dequantizes the sums by default (not only with
 * TJIT_GEMM_EPILOGUE=1), 3 of 3 calls, with the output of the unfused
 * plan (TJIT_GEMM_EPILOGUE=0: the kernel step) within float rounding; odd
 * sizes (weights over 256 KB: no blocked region), 1 and 2 threads.
 * Returns the calls fused. */
static uint64_t run_int8(act_fn act, int64_t m, int64_t k, int64_t n, double *diff)
{
    tj_alloc_trim();
    tj_scope_begin();
    mctx c = {tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){n, k})),
              tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){n})), act};
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){m, k}), *y[2] = {NULL, NULL};
    uint64_t taken = 0;
    for (int pass = 0; pass < 2; pass++) {   /* fused (default), then not */
        if (pass == 1)
            setenv("TJIT_GEMM_EPILOGUE", "0", 1);
        tj_compiled *cc = tj_compile(
            model, &c, &(tj_compile_options){.name = "epi8", .quantize_dynamic = true});
        assert_non_null(cc);
        uint64_t before = rt_gemm_epi_count();
        for (int call = 0; call < 3; call++)
            y[pass] = tj_call(cc, &x, 1);
        if (pass == 0)
            taken = rt_gemm_epi_count() - before;
        else
            assert_int_equal(rt_gemm_epi_count(), before);
        tj_compiled_free(cc);
        unsetenv("TJIT_GEMM_EPILOGUE");
    }
    tj_tensor *d = tj_amax(tj_abs(tj_sub(y[0], y[1])), NULL, 0, false);
    assert_non_null(d);
    *diff = tj_item(d);
    tj_scope_end();
    tj_release(c.w), tj_release(c.b);
    return taken;
}

static void test_epilogue_int8(void **state)
{
    (void)state;
    static const act_fn acts[] = {tj_gelu_tanh, tj_relu, NULL};
    static const int64_t dims[][3] = {{64, 256, 320}, {37, 700, 97}, {265, 520, 130}};
    bool own = tjg_isa_current() >= TJG_AVX2;
    int threads = tj_num_threads();
    for (int th = 1; th <= 2; th++) {
        tj_set_num_threads(th);
        for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
            for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++) {
                double diff;
                uint64_t n = run_int8(acts[a], dims[s][0], dims[s][1], dims[s][2], &diff);
                if (own && n != 3)
                    fail_msg("int8 act %zu shape %zu: %llu of 3 calls fused", a, s,
                             (unsigned long long)n);
                if (!(diff <= 1e-4))
                    fail_msg("int8 act %zu shape %zu: fused - unfused %.3g", a, s, diff);
            }
    }
    tj_set_num_threads(threads);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epilogue_fused),
        cmocka_unit_test(test_epilogue_not_fused),
        cmocka_unit_test(test_epilogue_int8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
