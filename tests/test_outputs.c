/* test_outputs.c - the results of compiled calls: any number of them, and
 * eager's aliasing (an argument comes back as itself, a view of an argument,
 * of a weight or of another result as a view sharing its storage). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

/* out: exp(x), x, x^T, rows 1.. of exp(x), w reshaped, sum(x) */
static int model(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)n;
    (void)max;
    tj_tensor *w = ctx;
    out[0] = tj_exp(x[0]);
    out[1] = x[0];
    out[2] = tj_transpose(x[0], 0, 1);
    out[3] = tj_slice(out[0], 0, 1, 4, 1);
    out[4] = tj_reshape(w, 1, (int64_t[]){12});
    out[5] = tj_sum(x[0], NULL, 0, false);
    return 6;
}

static void test_results_alias_like_eager(void **state)
{
    (void)state;
    tj_tensor *w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){3, 4}));
    tj_compiled *c = tj_compile_multi(model, w, &(tj_compile_options){.name = "outs"});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 5});
        tj_tensor *got[6], *want[6];
        assert_int_equal(tj_call_multi(c, &x, 1, got, 6), 6);
        assert_int_equal(model(w, &x, 1, want, 6), 6);
        for (int i = 0; i < 6; i++)
            tu_assert_close(got[i], want[i], 1e-6, 1e-6);
        assert_ptr_equal(got[1], x);   /* the argument itself */
        /* views: a write through one is seen through the other */
        tj_tensor *probe = tj_full(TJ_F32, 0, NULL, 42.0);
        assert_int_equal(tj_copy_(tj_slice(tj_slice(got[2], 0, 2, 3, 1), 1, 3, 4, 1), probe), 0);
        assert_true(tj_get(x, (int64_t[]){3, 2}) == 42.0);
        assert_int_equal(tj_copy_(tj_slice(got[3], 0, 0, 1, 1), probe), 0);
        assert_true(tj_get(got[0], (int64_t[]){1, 0}) == 42.0);
        assert_int_equal(tj_copy_(tj_slice(got[4], 0, 5, 6, 1), probe), 0);
        assert_true(tj_get(w, (int64_t[]){1, 1}) == 42.0);
        tj_copy_(w, tj_randn(TJ_F32, 2, (int64_t[]){3, 4}));
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.eager_calls, 0);
    tj_compiled_free(c);
    tj_release(w);
}

/* Two results computed alike are one value of the trace (equal nodes are
 * shared) and two tensors in eager: a write into one after the call must not
 * reach the other (the plan returned one tensor twice). The same tensor
 * returned twice stays one. */
static int model_twins(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)ctx;
    (void)n;
    (void)max;
    out[0] = tj_exp(x[0]);
    out[1] = tj_exp(x[0]);
    out[2] = out[0];
    out[3] = out[1];
    out[4] = tj_transpose(tj_unsqueeze(tj_exp(x[0]), 0), 0, 1);   /* a view of a third twin */
    return 5;
}

static void test_twin_results(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile_multi(model_twins, NULL, &(tj_compile_options){.name = "twins"});
    for (int k = 0; k < 2; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 1, (int64_t[]){5}), *got[5];
        assert_int_equal(tj_call_multi(c, &x, 1, got, 5), 5);
        assert_ptr_not_equal(got[0], got[1]);
        assert_ptr_equal(got[0], got[2]);
        assert_ptr_equal(got[1], got[3]);
        assert_int_equal(tj_add_s_(got[0], 1), 0);
        tu_assert_close(got[1], tj_exp(x), 0, 0);
        tu_assert_close(got[4], tj_transpose(tj_unsqueeze(tj_exp(x), 0), 0, 1), 0, 0);
    }
    tj_compiled_free(c);
}

/* Many results: every intermediate of a chain. */
static int model_many(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)ctx;
    (void)n;
    if (max < 40)
        return -1;
    tj_tensor *h = x[0];
    for (int k = 0; k < 40; k++)
        out[k] = h = tj_add_s(tj_mul_s(h, 0.5), (double)k);
    return 40;
}

static void test_many_results(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile_multi(model_many, NULL, &(tj_compile_options){.name = "many"});
    tj_tensor *x = tj_randn(TJ_F32, 1, (int64_t[]){100});
    tj_tensor *got[40], *want[40];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tj_call_multi(c, &x, 1, got, 40), 40);
        assert_int_equal(model_many(NULL, &x, 1, want, 40), 40);
        for (int i = 0; i < 40; i++)
            tu_assert_close(got[i], want[i], 1e-6, 1e-6);
    }
    tj_compiled_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_results_alias_like_eager), T(test_many_results), T(test_twin_results),
#undef T
    };
    return cmocka_run_group_tests_name("outputs", tests, NULL, NULL);
}
