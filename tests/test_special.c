/* test_special.c - the public entry points of the special functions
 * (tjit.h's "special functions and remaining prims" section) beyond what
 * test_opinfo's PyTorch samples cover: their error paths (a negative
 * polygamma order, integer inputs where PyTorch refuses them, igamma's
 * gradient in a), frexp's two results, and compiled == eager on a chain of
 * them. The formulas' accuracy: test_vmath_special.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../include/tjit.h"
#include "util.h"

static void test_errors(void **state)
{
    (void)state;
    tj_scope_begin();
    const int64_t s[1] = {3};
    tj_tensor *x = tu_tensor(TJ_F32, 1, s, (const double[]){0.5, 1.5, 3.0});
    tj_tensor *xi = tu_tensor(TJ_I32, 1, s, (const double[]){1, 2, 3});
    tu_assert_error(tj_polygamma_n(-1, x), "polygamma", "negative n", NULL);
    tu_assert_error(tj_igamma(xi, xi), "igamma", "not defined for i32", NULL);
    const int64_t s2[1] = {2};
    tu_assert_error(tj_igammac(x, tj_ones(TJ_F32, 1, s2)), "igammac", "broadcast", NULL);
    tu_assert_error(tj_frexp(xi), "frexp", "floating-point", NULL);
    tu_assert_error(tj_frexp_exponent(xi), "frexp_exponent", "floating-point", NULL);
    assert_null(tj_polygamma_n(1, NULL));
    /* igamma has no gradient in a, as in PyTorch: backward reports it */
    tj_tensor *a = tu_tensor(TJ_F64, 1, s, (const double[]){0.5, 1.5, 3.0});
    assert_int_equal(tj_requires_grad(a, true), 0);
    tj_tensor *l = tj_sum(tj_igamma(a, tj_full(TJ_F64, 1, s, 2.0)), NULL, 0, false);
    assert_non_null(l);
    assert_int_equal(tj_backward(l), -1);
    assert_non_null(strstr(tj_last_error(), "gradient with respect to a"));
    tj_scope_end();
}

static void test_frexp_pair(void **state)
{
    (void)state;
    tj_scope_begin();
    const int64_t s[1] = {5};
    tj_tensor *x = tu_tensor(TJ_F64, 1, s, (const double[]){6.0, -0.75, 0.0, 1e-310, INFINITY});
    tj_tensor *m = tj_frexp(x), *e = tj_frexp_exponent(x);
    assert_int_equal(tj_dtype_of(m), TJ_F64);
    assert_int_equal(tj_dtype_of(e), TJ_I32);
    const double wm[5] = {0.75, -0.75, 0.0, 0.5752618031559393, INFINITY};
    const double we[5] = {3, 0, 0, -1029, 0};
    for (int64_t k = 0; k < 5; k++) {
        assert_true(fabs(tj_get(m, &k) - wm[k]) <= 1e-15 || tj_get(m, &k) == wm[k]);
        assert_true(tj_get(e, &k) == we[k]);
    }
    tj_scope_end();
}

/* A scalar operand of polygamma, igamma, igammac (the eager kernels repeat
 * it over a block for the vector-vector loop, runtime/k_pointwise.c): the
 * same values as the operand broadcast in full, past one block (1024), for
 * a contiguous and a transposed (converted block by block) other operand. */
static void test_scalar_operand(void **state)
{
    (void)state;
    tj_scope_begin();
    const int64_t s[2] = {50, 61};
    double v[50 * 61];
    for (int k = 0; k < 50 * 61; k++)
        v[k] = -40.0 + 0.03 * k + (k % 7) * 1e-3;
    for (int dt = 0; dt < 2; dt++) {
        tj_tensor *x = tu_tensor(dt ? TJ_F64 : TJ_F32, 2, s, v);
        tj_tensor *xt = tj_transpose(tj_contiguous(tj_transpose(x, 0, 1)), 0, 1);
        tj_tensor *ax = tj_abs(x), *axt = tj_abs(xt);
        for (int layout = 0; layout < 2; layout++) {
            tj_tensor *y = layout ? xt : x, *ay = layout ? axt : ax;
            tu_assert_close(tj_polygamma_n(2, y), tj_polygamma(tj_full_like(y, 2), y), 0, 0);
            tu_assert_close(tj_polygamma(tj_full_like(y, 1), tj_scalar(tj_dtype_of(y), -7.25)),
                            tj_polygamma(tj_full_like(y, 1), tj_full_like(y, -7.25)), 0, 0);
            tj_tensor *a = tj_scalar(tj_dtype_of(y), 30.5);
            tu_assert_close(tj_igamma(a, ay), tj_igamma(tj_full_like(ay, 30.5), ay), 0, 0);
            tu_assert_close(tj_igammac(ay, a), tj_igammac(ay, tj_full_like(ay, 30.5)), 0, 0);
        }
    }
    tj_scope_end();
}

/* erfcx(i0e(x)) + polygamma(1, x) * igammac(2, x): one fused kernel when
 * compiled, the same values as eager within the formulas' rounding. */
static tj_tensor *chain(void *ctx, tj_tensor *const *in, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *x = in[0];
    tj_tensor *two = tj_full_like(x, 2.0);
    return tj_add(tj_erfcx(tj_i0e(x)), tj_mul(tj_polygamma_n(1, x), tj_igammac(two, x)));
}

static void test_compiled_chain(void **state)
{
    (void)state;
    tj_scope_begin();
    const int64_t s[1] = {67};
    double v[67];
    for (int k = 0; k < 67; k++)
        v[k] = 0.05 + 0.3 * k;
    tj_tensor *x = tu_tensor(TJ_F32, 1, s, v);
    tj_tensor *want = chain(NULL, &x, 1);
    tj_compiled *c = tj_compile(chain, NULL, NULL);
    assert_non_null(c);
    tj_tensor *got = tj_call(c, &x, 1);
    assert_non_null(got);
    tu_assert_close(got, want, 4e-6, 0);
    tj_compiled_free(c);
    tj_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_frexp_pair),
        cmocka_unit_test(test_scalar_operand),
        cmocka_unit_test(test_compiled_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
