/* test_conv3d.c - ops.def's "3-D and transposed convolution, 3-D pools" rows
 * (conv3d, conv_transpose1d/2d/3d, max_pool3d, avg_pool3d) beyond what
 * test_opinfo.c (values against PyTorch, eager and compiled) and
 * test_autograd.c (gradients against finite differences and PyTorch) check:
 * every error path with a message naming the op and the shapes, the adjoint
 * identity <conv(x, w), y> = <x, conv_transpose(y, w)> that ties the two
 * decompositions together, and a compiled model of all six against eager. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"
#include "../ir/ir.h"

static tj_tensor *R(tj_dtype dt, int nd, const int64_t *shape) { return tj_randn(dt, nd, shape); }

static const int64_t one3[3] = {1, 1, 1}, zero3[3] = {0, 0, 0};

static void test_conv3d_errors(void **state)
{
    (void)state;
    tj_tensor *x = R(TJ_F32, 5, (int64_t[]){2, 4, 5, 6, 5});
    tj_tensor *w = R(TJ_F32, 5, (int64_t[]){6, 4, 3, 2, 3});
    tu_assert_error(tj_conv3d(R(TJ_F32, 3, (int64_t[]){4, 5, 6}), w, NULL, NULL, NULL, NULL, 1),
                    "conv3d(f32[4,5,6], f32[6,4,3,2,3])", "input must be 4-D or 5-D (batched), got 3-D",
                    NULL);
    tu_assert_error(tj_conv3d(x, R(TJ_F32, 4, (int64_t[]){6, 4, 3, 2}), NULL, NULL, NULL, NULL, 1),
                    "conv3d(f32[2,4,5,6,5], f32[6,4,3,2])", "weight must be 5-D, got 4-D", NULL);
    tu_assert_error(tj_conv3d(x, R(TJ_F32, 5, (int64_t[]){6, 3, 3, 2, 3}), NULL, NULL, NULL, NULL, 1),
                    "conv3d", "input has 4 channels, weight expects 3 (3 per group x 1 groups)", NULL);
    tu_assert_error(tj_conv3d(x, R(TJ_F32, 5, (int64_t[]){5, 2, 3, 2, 3}), NULL, NULL, NULL, NULL, 2),
                    "conv3d", "output channels 5 are not divisible by groups 2", NULL);
    tu_assert_error(tj_conv3d(x, w, NULL, NULL, NULL, NULL, 0), "conv3d",
                    "groups must be positive, got 0", NULL);
    tu_assert_error(tj_conv3d(x, w, NULL, (int64_t[]){1, 0, 1}, NULL, NULL, 1), "conv3d",
                    "stride 0 is out of range (must be positive)", NULL);
    tu_assert_error(tj_conv3d(x, w, NULL, NULL, (int64_t[]){0, -1, 0}, NULL, 1), "conv3d",
                    "padding -1 is out of range (must be non-negative)", NULL);
    tu_assert_error(tj_conv3d(x, w, NULL, NULL, NULL, (int64_t[]){1, 6, 1}, 1), "conv3d",
                    "kernel 2 (dilated 7) is larger than the padded input 6 along spatial dim 1",
                    NULL);
    tu_assert_error(tj_conv3d(x, w, R(TJ_F32, 1, (int64_t[]){5}), NULL, NULL, NULL, 1),
                    "conv3d(f32[2,4,5,6,5], f32[6,4,3,2,3], f32[5])",
                    "bias must be 1-D with 6 elements", NULL);
    tu_assert_error(tj_conv3d(x, R(TJ_F64, 5, (int64_t[]){6, 4, 3, 2, 3}), NULL, NULL, NULL, NULL, 1),
                    "conv3d", "input, weight and bias must have one dtype, got f32 and f64", NULL);
    tj_tensor *xb = tj_ones(TJ_BOOL, 5, (int64_t[]){2, 4, 5, 6, 5});
    tu_assert_error(tj_conv3d(xb, tj_ones(TJ_BOOL, 5, (int64_t[]){6, 4, 3, 2, 3}), NULL, NULL, NULL,
                              NULL, 1),
                    "conv3d", "not defined for bool (needs a number dtype)", NULL);
    tu_assert_error(tj_conv3d(R(TJ_F32, 5, (int64_t[]){2, 4, 0, 6, 5}), w, NULL, NULL, NULL, NULL, 1),
                    "conv3d", "spatial dim 0 is 0 (must be static and positive)", NULL);
    tu_assert_error(tj_conv3d(x, R(TJ_F32, 5, (int64_t[]){6, 4, 0, 2, 3}), NULL, NULL, NULL, NULL, 1),
                    "conv3d", "weight has kernel size 0 along spatial dim 0", NULL);
    tu_assert_error(tj_conv3d(x, R(TJ_F32, 5, (int64_t[]){0, 4, 3, 2, 3}), NULL, NULL, NULL, NULL, 1),
                    "conv3d", "weight has 0 output channels", NULL);
}

static void test_conv_transpose_errors(void **state)
{
    (void)state;
    tj_tensor *x1 = R(TJ_F32, 3, (int64_t[]){2, 4, 5}), *w1 = R(TJ_F32, 3, (int64_t[]){4, 3, 3});
    tu_assert_error(tj_conv_transpose1d(R(TJ_F32, 1, (int64_t[]){5}), w1, NULL, 1, 0, 0, 1, 1),
                    "conv_transpose1d(f32[5], f32[4,3,3])",
                    "input must be 2-D or 3-D (batched), got 1-D", NULL);
    tu_assert_error(tj_conv_transpose1d(x1, w1, NULL, 2, 0, 2, 1, 1), "conv_transpose1d",
                    "output_padding 2 must be smaller than the stride 2 or the dilation 1", NULL);
    tu_assert_error(tj_conv_transpose1d(x1, w1, NULL, 1, 9, 0, 1, 1), "conv_transpose1d",
                    "output size -11 along spatial dim 0 is not positive", NULL);
    tu_assert_error(tj_conv_transpose1d(x1, w1, NULL, 1, 0, 0, 3, 1), "conv_transpose1d",
                    "input channels 4 are not divisible by groups 3", NULL);
    tu_assert_error(tj_conv_transpose1d(x1, R(TJ_F32, 3, (int64_t[]){3, 3, 3}), NULL, 1, 0, 0, 1, 1),
                    "conv_transpose1d(f32[2,4,5], f32[3,3,3])",
                    "input has 4 channels, weight expects 3", NULL);
    tu_assert_error(tj_conv_transpose1d(x1, w1, R(TJ_F32, 1, (int64_t[]){4}), 1, 0, 0, 2, 1),
                    "conv_transpose1d", "bias must be 1-D with 6 elements", NULL);
    tu_assert_error(tj_conv_transpose1d(x1, w1, NULL, 1, 0, 0, 1, 0), "conv_transpose1d",
                    "dilation 0 is out of range (must be positive)", NULL);
    tj_tensor *x2 = R(TJ_F32, 4, (int64_t[]){1, 4, 3, 3}), *w2 = R(TJ_F32, 4, (int64_t[]){4, 2, 2, 2});
    tu_assert_error(tj_conv_transpose2d(x2, w2, NULL, NULL, NULL, (int64_t[]){0, 1}, 1, NULL),
                    "conv_transpose2d(f32[1,4,3,3], f32[4,2,2,2])",
                    "output_padding 1 must be smaller than the stride 1 or the dilation 1", NULL);
    tu_assert_error(tj_conv_transpose2d(x2, R(TJ_F32, 3, (int64_t[]){4, 2, 2}), NULL, NULL, NULL,
                                        NULL, 1, NULL),
                    "conv_transpose2d", "weight must be 4-D, got 3-D", NULL);
    tj_tensor *x3 = R(TJ_F32, 5, (int64_t[]){1, 2, 2, 2, 2});
    tu_assert_error(tj_conv_transpose3d(x3, R(TJ_F32, 5, (int64_t[]){2, 1, 2, 2, 2}), NULL, NULL,
                                        (int64_t[]){0, 5, 0}, NULL, 1, NULL),
                    "conv_transpose3d(f32[1,2,2,2,2], f32[2,1,2,2,2])",
                    "output size -7 along spatial dim 1 is not positive", NULL);
}

static void test_pool3d_errors(void **state)
{
    (void)state;
    tj_tensor *x = R(TJ_F32, 5, (int64_t[]){2, 3, 6, 5, 7});
    const int64_t k3[3] = {3, 3, 3};
    tu_assert_error(tj_max_pool3d(x, NULL, NULL, NULL, NULL, false), "max_pool3d(f32[2,3,6,5,7])",
                    "kernel size is missing", NULL);
    tu_assert_error(tj_max_pool3d(x, (int64_t[]){3, 0, 3}, NULL, NULL, NULL, false), "max_pool3d",
                    "kernel 0 is out of range (must be positive)", NULL);
    tu_assert_error(tj_max_pool3d(x, k3, NULL, (int64_t[]){1, 2, 1}, NULL, false), "max_pool3d",
                    "padding 2 is more than half the kernel size 3", NULL);
    tu_assert_error(tj_avg_pool3d(x, (int64_t[]){7, 2, 2}, NULL, NULL, false, true),
                    "avg_pool3d(f32[2,3,6,5,7])",
                    "kernel 7 (dilated 7) is larger than the padded input 6 along spatial dim 0",
                    NULL);
    tu_assert_error(tj_max_pool3d(x, k3, (int64_t[]){1, 1, -2}, NULL, NULL, false), "max_pool3d",
                    "stride -2 is out of range (must be positive)", NULL);
    tu_assert_error(tj_max_pool3d(x, k3, NULL, NULL, (int64_t[]){1, 0, 1}, false), "max_pool3d",
                    "dilation 0 is out of range (must be positive)", NULL);
    tu_assert_error(tj_avg_pool3d(R(TJ_F32, 3, (int64_t[]){3, 5, 7}), k3, NULL, NULL, false, true),
                    "avg_pool3d(f32[3,5,7])", "input must be 4-D or 5-D (batched), got 3-D", NULL);
    tu_assert_error(tj_avg_pool3d(tj_ones(TJ_I64, 5, (int64_t[]){2, 3, 6, 5, 7}), k3, NULL, NULL,
                                  false, true),
                    "avg_pool3d(i64[2,3,6,5,7])", "not defined for i64 (needs a float dtype)", NULL);
    tu_assert_error(tj_max_pool3d(R(TJ_F32, 5, (int64_t[]){2, 0, 6, 5, 7}), k3, NULL, NULL, NULL,
                                  false),
                    "max_pool3d(f32[2,0,6,5,7])", "input has 0 channels", NULL);
}

/* The rule of op on types in[0..nin) fails with a reason containing want. */
static void rule_fails(ir_op op, const ir_type *const *in, int nin, const ir_attrs *a,
                       const char *want)
{
    ir_type out;
    char err[256] = "";
    if (ir_infer(op, in, nin, a, &out, err, sizeof err) == 0)
        fail_msg("%s: expected \"%s\", the rule passed", ir_ops[op].name, want);
    if (!strstr(err, want))
        fail_msg("%s: \"%s\" lacks \"%s\"", ir_ops[op].name, err, want);
}

static ir_type ty(int nd, const int64_t *shape)
{
    ir_type t = {TJ_F32, nd, false, {0}};
    memcpy(t.shape, shape, (size_t)nd * sizeof *shape);
    return t;
}

/* What the public API cannot reach: symbolic sizes (-1), huge ones, list lengths. */
static void test_rule_errors(void **state)
{
    (void)state;
    ir_type x = ty(5, (int64_t[]){1, -1, 4, 4, 4}), w = ty(5, (int64_t[]){2, 2, 1, 1, 1});
    ir_attrs a = {0};
    rule_fails(OP_conv3d, (const ir_type *[]){&x, &w}, 2, &a,
               "symbolic channel counts are not supported");
    ir_type xs = ty(5, (int64_t[]){1, 2, -1, 4, 4});
    rule_fails(OP_conv3d, (const ir_type *[]){&xs, &w}, 2, &a, "spatial dim 0 is ");
    ir_type big = ty(5, (int64_t[]){1, 2, INT64_MAX / 2, 4, 4});
    ir_attr_ints(&a.a[0], (int64_t[]){4}, 1);   /* stride 4: (D - 1) 4 overflows */
    rule_fails(OP_conv_transpose3d, (const ir_type *[]){&big, &w}, 2, &a,
               "output size along spatial dim 0 is more than 2^63-1");
    ir_type huge = ty(5, (int64_t[]){1, 2, INT64_MAX - 1, 4, 4});
    ir_attrs ap = {0};
    ir_attr_ints(&ap.a[1], (int64_t[]){1}, 1);   /* padding 1 */
    rule_fails(OP_conv3d, (const ir_type *[]){&huge, &w}, 2, &ap, "with padding 1 is more than 2^63-1");
    ir_attrs al = {0};
    ir_attr_ints(&al.a[0], (int64_t[]){1, 1}, 2);
    rule_fails(OP_conv3d, (const ir_type *[]){&x, &w}, 2, &al, "stride needs 1 or 3 values, got 2");
    ir_attrs ab = {0};
    ir_attr_ints(&ab.a[0], (int64_t[]){(int64_t)1 << 31}, 1);
    rule_fails(OP_max_pool3d, (const ir_type *[]){&x}, 1, &ab, "kernel 2147483648 is out of range");
}

/* conv3d puts one slice per depth tap in the graph: at most 1024. */
static void test_depth_taps_limit(void **state)
{
    (void)state;
    tj_tensor *x = tj_zeros(TJ_F32, 5, (int64_t[]){1, 1, 1025, 1, 1});
    tu_assert_error(tj_conv3d(x, x, NULL, NULL, NULL, NULL, 1), "conv3d",
                    "depth kernel 1025 is more than 1024", NULL);
}

/* sum(a * b) as a double. */
static double dot(tj_tensor *a, tj_tensor *b)
{
    tj_tensor *s = tj_sum(tj_mul(a, b), NULL, 0, false);
    assert_non_null(s);
    return tj_item(s);
}

/* conv_transpose is the adjoint of conv (same stride, padding, dilation,
 * groups): <conv(x, w), y> = <x, conv_transpose(y, w)> for every x, y, when
 * output_padding makes the transposed result x's size. */
static void test_adjoint(void **state)
{
    (void)state;
    /* 1-D: x [2,4,11], w [6,2,3], groups 2, stride 3, padding 1, dilation 2 */
    tj_tensor *x = R(TJ_F64, 3, (int64_t[]){2, 4, 11}), *w = R(TJ_F64, 3, (int64_t[]){6, 2, 3});
    tj_tensor *y = tj_conv1d(x, w, NULL, 3, 1, 2, 2);
    assert_non_null(y);   /* [2,6,3]: (11 + 2 - 5) / 3 + 1 */
    tj_tensor *r = R(TJ_F64, 3, tj_shape(y));
    tj_tensor *xt = tj_conv_transpose1d(r, w, NULL, 3, 1, 2, 2, 2);
    assert_non_null(xt);
    assert_int_equal(tj_shape(xt)[2], 11);
    assert_float_equal(dot(y, r), dot(x, xt), 1e-9 * (1 + fabs(dot(y, r))));
    /* 2-D and 3-D */
    tj_tensor *x2 = R(TJ_F64, 4, (int64_t[]){1, 3, 7, 8}), *w2 = R(TJ_F64, 4, (int64_t[]){2, 3, 3, 2});
    const int64_t s2[2] = {2, 3}, p2[2] = {1, 0}, d2[2] = {1, 2};
    tj_tensor *y2 = tj_conv2d(x2, w2, NULL, s2, p2, d2, 1);
    assert_non_null(y2);   /* [1,2,4,2] */
    tj_tensor *r2 = R(TJ_F64, 4, tj_shape(y2));
    tj_tensor *t2 = tj_conv_transpose2d(r2, w2, NULL, s2, p2, (int64_t[]){0, 2}, 1, d2);
    assert_non_null(t2);
    assert_memory_equal(tj_shape(t2), tj_shape(x2), 4 * sizeof(int64_t));
    assert_float_equal(dot(y2, r2), dot(x2, t2), 1e-9 * (1 + fabs(dot(y2, r2))));
    tj_tensor *x3 = R(TJ_F64, 5, (int64_t[]){2, 4, 5, 6, 4});
    tj_tensor *w3 = R(TJ_F64, 5, (int64_t[]){4, 2, 2, 3, 2});
    const int64_t s3[3] = {2, 1, 2}, p3[3] = {1, 1, 0}, d3[3] = {2, 1, 1};
    tj_tensor *y3 = tj_conv3d(x3, w3, NULL, s3, p3, d3, 2);
    assert_non_null(y3);   /* [2,4,3,6,2] */
    tj_tensor *r3 = R(TJ_F64, 5, tj_shape(y3));
    tj_tensor *t3 = tj_conv_transpose3d(r3, w3, NULL, s3, p3, (int64_t[]){0, 0, 0}, 2, d3);
    assert_non_null(t3);
    assert_memory_equal(tj_shape(t3), tj_shape(x3), 5 * sizeof(int64_t));
    assert_float_equal(dot(y3, r3), dot(x3, t3), 1e-9 * (1 + fabs(dot(y3, r3))));
}

/* All six in one model, relu between (the pointwise fuses around the convolutions). */
static tj_tensor *model(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx, (void)n;
    const int64_t k2[3] = {2, 2, 2}, s2[3] = {2, 2, 2};
    tj_tensor *y = tj_relu(tj_conv3d(a[0], a[1], a[2], NULL, one3, NULL, 1));   /* [1,4,6,6,6] */
    y = tj_max_pool3d(y, k2, NULL, NULL, NULL, false);                         /* [1,4,3,3,3] */
    y = tj_conv_transpose3d(y, a[3], NULL, s2, zero3, NULL, 1, NULL);          /* [1,2,6,6,6] */
    y = tj_avg_pool3d(y, (int64_t[]){3, 3, 3}, one3, one3, true, false);      /* [1,2,6,6,6] */
    tj_tensor *z = tj_reshape(y, 4, (int64_t[]){1, 12, 6, 6});
    z = tj_conv_transpose2d(z, a[4], NULL, (int64_t[]){2, 2}, (int64_t[]){1, 1},
                            (int64_t[]){1, 1}, 2, NULL);                         /* [1,4,12,12] */
    z = tj_reshape(z, 3, (int64_t[]){1, 4, 144});
    return tj_conv_transpose1d(tj_tanh(z), a[5], NULL, 1, 0, 0, 1, 1);         /* [1,3,146] */
}

static void test_compiled_equals_eager(void **state)
{
    (void)state;
    tj_tensor *a[6] = {
        R(TJ_F32, 5, (int64_t[]){1, 3, 6, 6, 6}), R(TJ_F32, 5, (int64_t[]){4, 3, 3, 3, 3}),
        R(TJ_F32, 1, (int64_t[]){4}), R(TJ_F32, 5, (int64_t[]){4, 2, 2, 2, 2}),
        R(TJ_F32, 4, (int64_t[]){12, 2, 3, 3}), R(TJ_F32, 3, (int64_t[]){4, 3, 3}),
    };
    tj_tensor *want = model(NULL, a, 6);
    assert_non_null(want);
    tj_compiled *m = tj_compile(model, NULL, &(tj_compile_options){.name = "conv3d"});
    assert_non_null(m);
    tj_tensor *got = tj_call(m, a, 6);
    assert_non_null(got);
    tu_assert_close(got, want, 1e-5, 1e-5);
    tj_compiled_free(m);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
    const struct CMUnitTest tests[] = {
        T(test_conv3d_errors),
        T(test_conv_transpose_errors),
        T(test_pool3d_errors),
        T(test_rule_errors),
        T(test_depth_taps_limit),
        T(test_adjoint),
        T(test_compiled_equals_eager),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
