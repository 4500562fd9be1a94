/* test_idx.c - the indexing functions that are not rows of ops.def, against
 * PyTorch (tests/golden/idx, scripts/golden/idx.py): nonzero and
 * masked_select (data-dependent shapes: a graph break when traced, with the
 * gradient of masked_select), chunk, unbind, meshgrid, hstack, vstack,
 * where with a number arm, the indices of topk/sort/kthvalue/cummax and of
 * max/min along a dim; and their errors. The rows themselves are covered by
 * test_opinfo (values, eager and compiled), test_autograd (gradients) and
 * test_passes (decompositions). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

static tj_tensor *G(const char *name) { return tu_golden("idx", name); }

static void same(tj_tensor *got, const char *name)
{
    assert_non_null(got);
    tu_assert_close(got, G(name), 0, 0);
}

static void test_nonzero(void **state)
{
    (void)state;
    same(tj_nonzero(G("x")), "nonzero");
    int64_t shape[2] = {2, 2};
    tj_tensor *i = tu_tensor(TJ_I32, 2, shape, (double[]){0, 3, 7, 0});
    same(tj_nonzero(i), "nonzero_i");
    tj_tensor *e = tj_nonzero(tj_zeros(TJ_F32, 1, (int64_t[]){0}));
    assert_non_null(e);
    assert_int_equal(tj_size(e, 0), 0);
    assert_int_equal(tj_size(e, 1), 1);
    tu_assert_error(tj_nonzero(NULL), "nonzero: input is NULL", NULL);
}

static void test_masked_select_and_grad(void **state)
{
    (void)state;
    tj_tensor *x = tj_keep(tj_clone(G("x")));
    assert_int_equal(tj_requires_grad(x, true), 0);
    tj_tensor *s = tj_masked_select(x, G("mask"));
    same(s, "masked_select");
    assert_int_equal(tj_backward(tj_sum(tj_mul(s, G("masked_select_r")), NULL, 0, false)), 0);
    tu_assert_close(tj_grad(x), G("masked_select_grad"), 0, 0);
    tj_release(x);
    tu_assert_error(tj_masked_select(G("x"), G("x")), "masked_select", "mask must be bool", NULL);
}

/* nonzero inside a compiled model: a graph break; the call is split there
 * into compiled pieces, with nonzero run eagerly between them. */
static tj_tensor *model_nonzero(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    return tj_masked_select(tj_mul_s(args[0], 2), tj_gt_s(args[0], 0));
}

static void test_nonzero_breaks_the_graph(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_nonzero, NULL, &(tj_compile_options){.name = "nz"});
    tj_tensor *x = G("x");
    for (int k = 0; k < 2; k++)
        tu_assert_close(tj_call(c, &x, 1), model_nonzero(NULL, &x, 1), 0, 0);
    char *text = tj_explain(c);
    assert_non_null(text);
    if (!strstr(text, "split at graph breaks (the first: tj_nonzero reads the values of a traced tensor") ||
        !strstr(text, "then graph break: tj_nonzero reads values"))
        fail_msg("explain lacks the break:\n%s", text);
    free(text);
    tj_compiled_free(c);
}

static void test_lists(void **state)
{
    (void)state;
    tj_tensor *out[8];
    char name[32];
    assert_int_equal(tj_chunk(G("x"), 3, 1, out, 8), 2);
    for (int k = 0; k < 2; k++)
        snprintf(name, sizeof name, "chunk%d", k), same(out[k], name);
    assert_int_equal(tj_unbind(G("x"), -1, out, 8), 4);
    for (int k = 0; k < 4; k++)
        snprintf(name, sizeof name, "unbind%d", k), same(out[k], name);
    tj_tensor *a = tj_arange(TJ_F32, 1, 3, 1), *b = tj_arange(TJ_F32, 3, 6, 1),
              *c = tj_arange(TJ_F32, 6, 7, 1);
    assert_int_equal(tj_meshgrid((tj_tensor *[]){a, b, c}, 3, true, out), 3);
    for (int k = 0; k < 3; k++)
        snprintf(name, sizeof name, "mesh_xy%d", k), same(out[k], name);
    assert_int_equal(tj_meshgrid((tj_tensor *[]){a, b}, 2, false, out), 2);
    for (int k = 0; k < 2; k++)
        snprintf(name, sizeof name, "mesh_ij%d", k), same(out[k], name);
    same(tj_hstack((tj_tensor *[]){a, b, c}, 3), "hstack");
    same(tj_hstack((tj_tensor *[]){G("x"), tj_narrow(G("x"), 1, 0, 1)}, 2), "hstack2");
    tj_tensor *row = tj_expand(tj_unsqueeze(a, 0), 2, (int64_t[]){2, 2});
    same(tj_vstack((tj_tensor *[]){row, tj_arange(TJ_F32, 7, 9, 1)}, 2), "vstack");
    same(tj_where_xs(G("mask"), G("x"), 2.5), "where_xs");
    assert_int_equal(tj_chunk(G("x"), 0, 1, out, 8), -1);
    tu_assert_error(NULL, "chunk", "chunks must be positive", NULL);
    assert_int_equal(tj_unbind(G("x"), 2, out, 8), -1);
    tu_assert_error(NULL, "unbind", "dim out of range", NULL);
    assert_int_equal(tj_meshgrid((tj_tensor *[]){G("x")}, 1, false, out), -1);
    tu_assert_error(NULL, "meshgrid", "has 2 dims", NULL);
}

static void test_indices(void **state)
{
    (void)state;
    tj_tensor *y = G("y"), *ix = NULL;
    assert_non_null(tj_topk(y, 2, 1, true, &ix));
    same(ix, "topk_i");
    assert_non_null(tj_sort(y, 1, true, &ix));
    same(ix, "sort_i");
    assert_non_null(tj_kthvalue(y, 2, 1, false, &ix));
    same(ix, "kth_i");
    assert_non_null(tj_cummax(y, 1, &ix));
    same(ix, "cummax_i");
    same(tj_max_dim(y, 0, false, &ix), "max_v");
    same(ix, "max_i");
    assert_non_null(tj_min_dim(y, 1, true, &ix));
    same(ix, "min_i");
    assert_null(tj_topk(y, 9, 1, true, &ix));
    assert_null(ix);
    tu_assert_error(NULL, "topk(f64[2,5])", "k 9 is out of range", NULL);
}

/* The i64 limits exactly (the golden data holds doubles). */
static void test_limits(void **state)
{
    (void)state;
    tj_tensor *hi = tj_maximum_value(TJ_I64), *lo = tj_minimum_value(TJ_I64);
    assert_non_null(hi);
    assert_non_null(lo);
    assert_true(*(const int64_t *)tj_data(hi) == INT64_MAX);
    assert_true(*(const int64_t *)tj_data(lo) == INT64_MIN);
    assert_null(tj_maximum_value(TJ_BOOL));
    tu_assert_error(NULL, "maximum_value", "unsupported dtype bool", NULL);
}

/* Errors name the row, and a row's decomposition never leaks. */
static void test_errors(void **state)
{
    (void)state;
    tj_tensor *x = G("x");
    assert_null(tj_narrow(x, 1, 3, 2));
    tu_assert_error(NULL, "narrow(f64[3,4])", "exceeds the size 4 of dim 1", NULL);
    assert_null(tj_movedim(x, (int[]){0, 0}, (int[]){0, 1}, 2));
    tu_assert_error(NULL, "movedim", "repeated dim", NULL);
    assert_null(tj_index_add(x, 0, tj_full(TJ_I64, 1, (int64_t[]){1}, 5), tj_ones(TJ_F64, 2, (int64_t[]){1, 4}), 1));
    tu_assert_error(NULL, "index_add(f64[3,4], i64[1], f64[1,4])", "index 5 is out of range", NULL);
    assert_null(tj_scatter(x, 0, tj_zeros(TJ_I64, 2, (int64_t[]){1, 4}), tj_ones(TJ_F32, 2, (int64_t[]){1, 4})));
    tu_assert_error(NULL, "scatter", "src has dtype f32", NULL);
    assert_null(tj_one_hot(tj_zeros(TJ_I64, 1, (int64_t[]){2}), -1));
    tu_assert_error(NULL, "one_hot", "data-dependent", NULL);
    assert_null(tj_cumsum(NULL, 0));
    assert_null(tj_eye(TJ_F32, -2, 3));
    tu_assert_error(NULL, "eye", "non-negative", NULL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_nonzero), T(test_masked_select_and_grad), T(test_nonzero_breaks_the_graph),
        T(test_lists), T(test_indices), T(test_limits), T(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
