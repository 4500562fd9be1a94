/* test_marks.c - tj_mark_dynamic and tj_mark_static: a dim symbolic from
 * the first trace, a dim kept static while it changes, no_dynamic
 * (dynamic=False) with and without marks, 0/1 sizes specialized, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

static tj_tensor *model(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    return tj_add_s(tj_mul(tj_tanh(x[0]), x[0]), 0.5);
}

/* Calls c on [rows, 8] for each rows; returns the graphs captured. */
static int run_rows(tj_compiled *c, const int64_t *rows, int n, bool mark_dyn, bool mark_static)
{
    for (int k = 0; k < n; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){rows[k], 8});
        if (mark_dyn)
            assert_int_equal(tj_mark_dynamic(x, 0), 0);
        if (mark_static)
            assert_int_equal(tj_mark_static(x, 0), 0);
        tu_assert_close(tj_call(c, &x, 1), model(NULL, &x, 1), 1e-6, 1e-6);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    return st.graphs;
}

static void test_mark_dynamic_first_trace(void **state)
{
    (void)state;
    int64_t rows[] = {4, 5, 9, 16};
    tj_compiled *c = tj_compile(model, NULL, &(tj_compile_options){.name = "marked"});
    assert_int_equal(run_rows(c, rows, 4, true, false), 1);   /* symbolic from the start */
    tu_assert_explain(c, "1 symbolic dim");
    tj_compiled_free(c);

    /* without the mark: the first size is static, the second makes it dynamic */
    c = tj_compile(model, NULL, &(tj_compile_options){.name = "auto"});
    assert_int_equal(run_rows(c, rows, 4, false, false), 2);
    tj_compiled_free(c);
}

static void test_mark_static(void **state)
{
    (void)state;
    int64_t rows[] = {4, 5, 9};
    tj_compiled *c = tj_compile(model, NULL, &(tj_compile_options){.name = "static"});
    assert_int_equal(run_rows(c, rows, 3, false, true), 3);   /* one graph per size */
    tu_assert_explain(c, "0 symbolic dims");
    tj_compiled_free(c);
}

static void test_no_dynamic(void **state)
{
    (void)state;
    int64_t rows[] = {4, 5, 9};
    /* dynamic=False: every size its own graph ... */
    tj_compiled *c = tj_compile(model, NULL, &(tj_compile_options){.name = "nodyn", .no_dynamic = true});
    assert_int_equal(run_rows(c, rows, 3, false, false), 3);
    tj_compiled_free(c);
    /* ... unless the user marked the dim */
    c = tj_compile(model, NULL, &(tj_compile_options){.name = "nodyn_marked", .no_dynamic = true});
    assert_int_equal(run_rows(c, rows, 3, true, false), 1);
    tj_compiled_free(c);
}

static void test_zero_one_specialized(void **state)
{
    (void)state;
    /* a marked dim of size 1 stays static: 1 then 3 then 5 give two graphs
     * (1; then a symbolic one for 3 and 5) */
    int64_t rows[] = {1, 3, 5, 1};
    tj_compiled *c = tj_compile(model, NULL, &(tj_compile_options){.name = "zero_one"});
    assert_int_equal(run_rows(c, rows, 4, true, false), 2);
    tj_compiled_free(c);
}

/* Size 0 is specialized like size 1 (a marked dim of size 0 gets a static
 * guard); a symbolic graph (size >= 2) never serves 0 or 1, and each of
 * them, once captured, is reused. Without marks (automatic dynamic) the
 * same: 4 then 5 make dim 0 symbolic, 1 and 0 each get their own graph. */
static void test_zero_one_specialized_more(void **state)
{
    (void)state;
    int64_t marked[] = {0, 3, 5, 0, 1};
    tj_compiled *c = tj_compile(model, NULL, &(tj_compile_options){.name = "zero_marked"});
    assert_int_equal(run_rows(c, marked, 5, true, false), 3);   /* 0; s0 for 3 and 5; 1 */
    tu_assert_explain(c, "guard arg 0: f32[0,8]");
    tu_assert_explain(c, "guard arg 0: f32[1,8]");
    tu_assert_explain(c, "guard arg 0: f32[s0,8]");
    tj_compiled_free(c);

    int64_t rows[] = {4, 5, 1, 0, 7, 1, 0, 9};
    c = tj_compile(model, NULL, &(tj_compile_options){.name = "zero_one_auto"});
    assert_int_equal(run_rows(c, rows, 8, false, false), 4);   /* 4; s0; 1; 0 */
    tu_assert_explain(c, "guard arg 0: f32[s0,8]");
    tu_assert_explain(c, "guard arg 0: f32[1,8]");
    tu_assert_explain(c, "guard arg 0: f32[0,8]");
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.calls, 8);
    assert_int_equal(st.eager_calls, 0);
    tj_compiled_free(c);
}

static void test_mark_errors(void **state)
{
    (void)state;
    tj_tensor *x = tj_ones(TJ_F32, 2, (int64_t[]){2, 3});
    assert_int_equal(tj_mark_dynamic(x, 2), -1);
    tu_assert_error(NULL, "tj_mark_dynamic", "dim 2 out of range for 2 dims", NULL);
    assert_int_equal(tj_mark_static(x, -3), -1);
    tu_assert_error(NULL, "tj_mark_static", "dim -3 out of range", NULL);
    assert_int_equal(tj_mark_dynamic(NULL, 0), -1);
    tu_assert_error(NULL, "tj_mark_dynamic", "NULL", NULL);
    assert_int_equal(tj_mark_dynamic(x, -1), 0);   /* the last dim */
    tj_clear_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_mark_dynamic_first_trace), T(test_mark_static), T(test_no_dynamic),
        T(test_zero_one_specialized), T(test_zero_one_specialized_more), T(test_mark_errors),
#undef T
    };
    return cmocka_run_group_tests_name("marks", tests, NULL, NULL);
}
