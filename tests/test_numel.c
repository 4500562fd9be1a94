/* test_numel.c - element counts beyond int64: every way of making a shape
 * whose count does not fit (expand and broadcast_to of a one-element tensor,
 * broadcasting in binary and ternary ops and matmul's batch dims, cat,
 * creation, reshape, conv2d's padded input) fails with a message naming the
 * op, its input shapes and the shape that overflows, eagerly, while tracing
 * a compiled model, and in the text IR; counts with a size 0 are 0 whatever
 * the other sizes; the largest count that fits (2^62 by expand) works;
 * tj_numel of a header whose count cannot fit reports it instead of
 * wrapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../ir/graph.h"
#include "../runtime/rt.h"
#include "util.h"

#define S(...) (int64_t[]){__VA_ARGS__}
#define P32 (1LL << 32)
#define TOO_MANY "has more than 2^63-1 elements"

static tj_tensor *one(int ndim)
{
    int64_t shape[TJ_MAX_DIMS];
    for (int d = 0; d < ndim; d++)
        shape[d] = 1;
    return tj_ones(TJ_F32, ndim, shape);
}

static void test_expand(void **state)
{
    (void)state;
    tu_assert_error(tj_expand(one(1), 2, S(P32, P32)), "expand(f32[1])",
                    "the result shape [4294967296,4294967296] " TOO_MANY, NULL);
    tu_assert_error(tj_broadcast_to(one(1), 2, S(P32, P32)), "expand(f32[1])", TOO_MANY, NULL);
    /* 2^63 is one too many (PyTorch refuses it too); 2^62 fits */
    tu_assert_error(tj_expand(one(2), 2, S(1LL << 31, P32)), "expand(f32[1,1])", TOO_MANY, NULL);
    tj_tensor *big = tj_expand(one(1), 1, S(1LL << 62));
    assert_non_null(big);
    assert_true(tj_numel(big) == 1LL << 62);
    /* a sum over 2^64 ones: the expand fails, so does the sum, with its message */
    tu_assert_error(tj_sum(tj_expand(one(2), 2, S(P32, P32)), NULL, 0, false),
                    "expand(f32[1,1])", TOO_MANY, NULL);
    /* with a size 0 the count is 0, in any order */
    assert_int_equal(tj_numel(tj_expand(one(3), 3, S(0, 1LL << 40, 1LL << 40))), 0);
    assert_int_equal(tj_numel(tj_expand(one(3), 3, S(1LL << 40, 1LL << 40, 0))), 0);
}

static void test_broadcasting_ops(void **state)
{
    (void)state;
    tj_tensor *col = tj_expand(one(2), 2, S(P32, 1)), *row = tj_expand(one(2), 2, S(1, P32));
    assert_non_null(col);
    assert_non_null(row);
    tu_assert_error(tj_add(col, row), "add(f32[4294967296,1], f32[1,4294967296])",
                    "[4294967296,4294967296] " TOO_MANY, NULL);
    tu_assert_error(tj_mul_s(tj_add(col, row), 2), "add(", TOO_MANY, NULL);
    tu_assert_error(tj_where(tj_gt(col, col), col, row), "where(bool[4294967296,1]", TOO_MANY,
                    NULL);
    tu_assert_error(tj_lerp_s(col, row, 0.5), "lerp(", TOO_MANY, NULL);
    /* matmul's broadcast batch dims */
    tj_tensor *a = tj_expand(one(4), 4, S(P32, 1, 2, 2)), *b = tj_expand(one(4), 4, S(1, P32, 2, 2));
    tu_assert_error(tj_matmul(a, b), "matmul(f32[4294967296,1,2,2], f32[1,4294967296,2,2])",
                    TOO_MANY, NULL);
}

static void test_cat_create_reshape(void **state)
{
    (void)state;
    tj_tensor *half = tj_expand(one(1), 1, S(1LL << 62));
    tj_tensor *two[2] = {half, half};
    tu_assert_error(tj_cat(two, 2, 0), "cat(f32[4611686018427387904], f32[4611686018427387904])",
                    "the sizes in dim 0 add up to more than 2^63-1", NULL);
    tu_assert_error(tj_zeros(TJ_F32, 3, S(P32, P32, 2)), "full()",
                    "shape [4294967296,4294967296,2] " TOO_MANY, NULL);
    assert_int_equal(tj_numel(tj_zeros(TJ_F32, 3, S(P32, P32, 0))), 0);
    /* fits in int64, not in memory: the allocation says so */
    tu_assert_error(tj_zeros(TJ_F64, 1, S(1LL << 62)), "tensor size overflows",
                    "f64[4611686018427387904]", NULL);
    tu_assert_error(tj_reshape(one(1), 2, S(P32, P32)), "reshape(f32[1])",
                    "shape [4294967296,4294967296] " TOO_MANY, NULL);
}

static void test_conv_padding(void **state)
{
    (void)state;
    tj_tensor *x = tj_expand(one(4), 4, S(1, 1, 1, INT64_MAX));
    tj_tensor *w = one(4);
    tu_assert_error(tj_conv2d(x, w, NULL, S(1, 1), S(1, 1), S(1, 1), 1),
                    "conv2d(f32[1,1,1,9223372036854775807], f32[1,1,1,1])",
                    "input size 9223372036854775807 with padding 1 is more than 2^63-1", NULL);
}

/* ---- compiled: the same message from the trace ------------------------------------------ */

static tj_tensor *model_sum_expand(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    return tj_sum(tj_expand(args[0], 2, S(P32, P32)), NULL, 0, false);
}

static tj_tensor *model_add(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    return tj_add(tj_expand(args[0], 2, S(P32, 1)), tj_expand(args[0], 2, S(1, P32)));
}

static void test_compiled(void **state)
{
    (void)state;
    tj_tensor *x = one(2);
    tj_compiled *c = tj_compile(model_sum_expand, NULL, NULL);
    tu_assert_error(tj_call(c, &x, 1), "expand(f32[1,1])", TOO_MANY, NULL);
    tj_compiled_free(c);
    c = tj_compile(model_add, NULL, NULL);
    tu_assert_error(tj_call(c, &x, 1), "add(f32[4294967296,1], f32[1,4294967296])", TOO_MANY,
                    NULL);
    tj_compiled_free(c);
}

/* ---- text IR and headers ---------------------------------------------------------------- */

static void test_graph_rules(void **state)
{
    (void)state;
    const char *src = "graph @g(%x: f32[1,1]) {\n"
                      "  %0 = expand %x {shape=[4294967296,4294967296]} : f32[4294967296,4294967296]\n"
                      "  return %0\n"
                      "}\n";
    char err[512];
    ir_graph *g = ir_parse(src, strlen(src), "o.tir", err, sizeof err);
    if (g) {
        ir_graph_free(g);
        fail_msg("parsed a graph with an overflowing type");
    }
    if (!strstr(err, TOO_MANY))
        fail_msg("message: %s", err);
}

static void test_numel_of_header(void **state)
{
    (void)state;
    /* no op makes such a header; tj_numel still reports instead of wrapping */
    tj_tensor *x = one(1);
    tj_tensor *v = rt_tensor_view(x, 2, S(P32, P32), S(0, 0), 0);
    assert_non_null(v);
    assert_true(tj_numel(v) == -1);
    tu_assert_error(NULL, "numel(f32[4294967296,4294967296])", TOO_MANY, NULL);
    tj_release(v);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
    const struct CMUnitTest tests[] = {
        T(test_expand),       T(test_broadcasting_ops), T(test_cat_create_reshape),
        T(test_conv_padding), T(test_compiled),         T(test_graph_rules),
        T(test_numel_of_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
