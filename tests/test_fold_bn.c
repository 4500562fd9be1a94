/* test_fold_bn.c - the fold_bn pass (passes/fold_bn.c), text in, text out:
 * batch norm after conv2d (with and without bias, grouped, bn with and
 * without affine), linear, matmul and matmul + bias on weights becomes the
 * op alone on a new weight and bias computed from weights; cases where it
 * must not fire leave the graph as it was. Values: test_freeze.c compares
 * frozen models using this pass with eager. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../passes/pass.h"
#include "util.h"

static char *run_pass(const char *src)
{
    char err[1024];
    ir_graph *g = ir_parse(src, strlen(src), "case", err, sizeof err);
    if (!g)
        fail_msg("%s\n%s", err, src);
    ps_options opt = {.verify = true};
    ir_graph *h = ps_run_pipeline(g, "fold_bn", &opt, err, sizeof err);
    if (!h)
        fail_msg("fold_bn: %s\n%s", err, src);
    char *s = ir_print(h, NULL);
    assert_non_null(s);
    if (h != g)
        ir_graph_free(h);
    ir_graph_free(g);
    return s;
}

static void expect(const char *src, const char *want)
{
    char *got = run_pass(src);
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    free(got);
}

/* The pass must leave src as it is (printed the same). */
static void expect_same(const char *src)
{
    char err[1024];
    ir_graph *g = ir_parse(src, strlen(src), "case", err, sizeof err);
    assert_non_null(g);
    char *want = ir_print(g, NULL);
    ir_graph_free(g);
    expect(src, want);
    free(want);
}

#define BN_IN "%m: f32[4] param, %v: f32[4] param, %g: f32[4] param, %b: f32[4] param"

static void test_conv_no_bias(void **state)
{
    (void)state;
    expect("graph @t(%x: f32[2,3,8,8], %w: f32[4,3,3,3] param, " BN_IN ") {\n"
           "  %0 = conv2d %x, %w, none {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : f32[2,4,8,8]\n"
           "  %1 = batch_norm %0, %m, %v, %g, %b {eps=1e-05} : f32[2,4,8,8]\n"
           "  return %1\n}\n",
           "graph @t(%x: f32[2,3,8,8], %w: f32[4,3,3,3] param, " BN_IN ") {\n"
           "  %0 = scalar {value=1e-05, dtype=f64} : f64[] weak\n"
           "  %1 = add %v, %0 : f32[4]\n"
           "  %2 = sqrt %1 : f32[4]\n"
           "  %3 = div %g, %2 : f32[4]\n"
           "  %4 = mul %m, %3 : f32[4]\n"
           "  %5 = sub %b, %4 : f32[4]\n"
           "  %6 = reshape %3 {shape=[4,1,1,1]} : f32[4,1,1,1]\n"
           "  %7 = mul %w, %6 : f32[4,3,3,3]\n"
           "  %8 = conv2d %x, %7, %5 {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : f32[2,4,8,8]\n"
           "  return %8\n"
           "}\n");
}

/* Grouped conv with a bias, bn without affine (no gamma, no beta). */
static void test_conv_groups_bias_no_affine(void **state)
{
    (void)state;
    expect("graph @t(%x: f32[1,4,5,5], %w: f32[6,2,1,1] param, %c: f32[6] param, "
           "%m: f32[6] param, %v: f32[6] param) {\n"
           "  %0 = conv2d %x, %w, %c {stride=[2,2], padding=[0,0], dilation=[1,1], groups=2} : f32[1,6,3,3]\n"
           "  %1 = batch_norm %0, %m, %v {eps=0.001} : f32[1,6,3,3]\n"
           "  return %1\n}\n",
           "graph @t(%x: f32[1,4,5,5], %w: f32[6,2,1,1] param, %c: f32[6] param, "
           "%m: f32[6] param, %v: f32[6] param) {\n"
           "  %0 = scalar {value=0.001, dtype=f64} : f64[] weak\n"
           "  %1 = add %v, %0 : f32[6]\n"
           "  %2 = rsqrt %1 : f32[6]\n"
           "  %3 = mul %m, %2 : f32[6]\n"
           "  %4 = neg %3 : f32[6]\n"
           "  %5 = reshape %2 {shape=[6,1,1,1]} : f32[6,1,1,1]\n"
           "  %6 = mul %w, %5 : f32[6,2,1,1]\n"
           "  %7 = mul %c, %2 : f32[6]\n"
           "  %8 = add %7, %4 : f32[6]\n"
           "  %9 = conv2d %x, %6, %8 {stride=[2,2], padding=[0,0], dilation=[1,1], groups=2} : f32[1,6,3,3]\n"
           "  return %9\n"
           "}\n");
}

static void test_linear(void **state)
{
    (void)state;
    expect("graph @t(%x: f32[3,5], %w: f32[4,5] param, %c: f32[4] param, " BN_IN ") {\n"
           "  %0 = linear %x, %w, %c : f32[3,4]\n"
           "  %1 = batch_norm %0, %m, %v, %g, %b {eps=1e-05} : f32[3,4]\n"
           "  %2 = relu %1 : f32[3,4]\n"
           "  return %2\n}\n",
           "graph @t(%x: f32[3,5], %w: f32[4,5] param, %c: f32[4] param, " BN_IN ") {\n"
           "  %0 = scalar {value=1e-05, dtype=f64} : f64[] weak\n"
           "  %1 = add %v, %0 : f32[4]\n"
           "  %2 = sqrt %1 : f32[4]\n"
           "  %3 = div %g, %2 : f32[4]\n"
           "  %4 = mul %m, %3 : f32[4]\n"
           "  %5 = sub %b, %4 : f32[4]\n"
           "  %6 = reshape %3 {shape=[4,1]} : f32[4,1]\n"
           "  %7 = mul %w, %6 : f32[4,5]\n"
           "  %8 = mul %c, %3 : f32[4]\n"
           "  %9 = add %8, %5 : f32[4]\n"
           "  %10 = linear %x, %7, %9 : f32[3,4]\n"
           "  %11 = relu %10 : f32[3,4]\n"
           "  return %11\n"
           "}\n");
}

/* matmul on a weight's transpose, plus a bias: bn over the features. */
static void test_matmul_bias(void **state)
{
    (void)state;
    expect("graph @t(%x: f32[3,5], %w: f32[4,5] param, %c: f32[4] param, " BN_IN ") {\n"
           "  %0 = permute %w {perm=[1,0]} : f32[5,4]\n"
           "  %1 = matmul %x, %0 : f32[3,4]\n"
           "  %2 = add %1, %c : f32[3,4]\n"
           "  %3 = batch_norm %2, %m, %v, %g, %b {eps=1e-05} : f32[3,4]\n"
           "  return %3\n}\n",
           "graph @t(%x: f32[3,5], %w: f32[4,5] param, %c: f32[4] param, " BN_IN ") {\n"
           "  %0 = permute %w {perm=[1,0]} : f32[5,4]\n"
           "  %1 = scalar {value=1e-05, dtype=f64} : f64[] weak\n"
           "  %2 = add %v, %1 : f32[4]\n"
           "  %3 = sqrt %2 : f32[4]\n"
           "  %4 = div %g, %3 : f32[4]\n"
           "  %5 = mul %m, %4 : f32[4]\n"
           "  %6 = sub %b, %5 : f32[4]\n"
           "  %7 = mul %0, %4 : f32[5,4]\n"
           "  %8 = matmul %x, %7 : f32[3,4]\n"
           "  %9 = mul %c, %4 : f32[4]\n"
           "  %10 = add %9, %6 : f32[4]\n"
           "  %11 = add %8, %10 : f32[3,4]\n"
           "  return %11\n"
           "}\n");
    /* no bias: the shift is added after the matmul */
    expect("graph @t(%x: f32[3,5], %w: f32[5,4] param, %m: f32[4] param, %v: f32[4] param) {\n"
           "  %0 = matmul %x, %w : f32[3,4]\n"
           "  %1 = batch_norm %0, %m, %v {eps=1e-05} : f32[3,4]\n"
           "  return %1\n}\n",
           "graph @t(%x: f32[3,5], %w: f32[5,4] param, %m: f32[4] param, %v: f32[4] param) {\n"
           "  %0 = scalar {value=1e-05, dtype=f64} : f64[] weak\n"
           "  %1 = add %v, %0 : f32[4]\n"
           "  %2 = rsqrt %1 : f32[4]\n"
           "  %3 = mul %m, %2 : f32[4]\n"
           "  %4 = neg %3 : f32[4]\n"
           "  %5 = mul %w, %2 : f32[5,4]\n"
           "  %6 = matmul %x, %5 : f32[3,4]\n"
           "  %7 = add %6, %4 : f32[3,4]\n"
           "  return %7\n"
           "}\n");
}

#define CONV "conv2d %x, %w, none {stride=[1,1], padding=[0,0], dilation=[1,1], groups=1} : f32[1,4,3,3]\n"

/* Where the fold would be wrong or would not fold to constants. */
static void test_not_folded(void **state)
{
    (void)state;
    /* the conv's result is read by another node too */
    expect_same("graph @t(%x: f32[1,3,3,3], %w: f32[4,3,1,1] param, " BN_IN ") {\n"
                "  %0 = " CONV
                "  %1 = batch_norm %0, %m, %v, %g, %b {eps=1e-05} : f32[1,4,3,3]\n"
                "  %2 = add %1, %0 : f32[1,4,3,3]\n"
                "  return %2\n}\n");
    /* the conv's result is also an output */
    expect_same("graph @t(%x: f32[1,3,3,3], %w: f32[4,3,1,1] param, " BN_IN ") {\n"
                "  %0 = " CONV
                "  %1 = batch_norm %0, %m, %v, %g, %b {eps=1e-05} : f32[1,4,3,3]\n"
                "  return %1, %0\n}\n");
    /* the running mean is an argument, not a weight */
    expect_same("graph @t(%x: f32[1,3,3,3], %w: f32[4,3,1,1] param, %m: f32[4], %v: f32[4] param) {\n"
                "  %0 = " CONV
                "  %1 = batch_norm %0, %m, %v {eps=1e-05} : f32[1,4,3,3]\n"
                "  return %1\n}\n");
    /* the conv's weight is an argument */
    expect_same("graph @t(%x: f32[1,3,3,3], %w: f32[4,3,1,1], %m: f32[4] param, %v: f32[4] param) {\n"
                "  %0 = " CONV
                "  %1 = batch_norm %0, %m, %v {eps=1e-05} : f32[1,4,3,3]\n"
                "  return %1\n}\n");
    /* linear on rows of rank 3: bn's channels (dim 1) are not its features */
    expect_same("graph @t(%x: f32[2,4,5], %w: f32[4,5] param, " BN_IN ") {\n"
                "  %0 = linear %x, %w, none : f32[2,4,4]\n"
                "  %1 = batch_norm %0, %m, %v, %g, %b {eps=1e-05} : f32[2,4,4]\n"
                "  return %1\n}\n");
    /* bf16: the folded weight would round differently from eager */
    expect_same("graph @t(%x: bf16[3,5], %w: bf16[5,4] param, %m: bf16[4] param, %v: bf16[4] param) {\n"
                "  %0 = matmul %x, %w : bf16[3,4]\n"
                "  %1 = batch_norm %0, %m, %v {eps=1e-05} : bf16[3,4]\n"
                "  return %1\n}\n");
    /* no batch norm at all */
    expect_same("graph @t(%x: f32[4]) {\n  %0 = exp %x : f32[4]\n  return %0\n}\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_no_bias),
        cmocka_unit_test(test_conv_groups_bias_no_affine),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_matmul_bias),
        cmocka_unit_test(test_not_folded),
    };
    return cmocka_run_group_tests_name("fold_bn", tests, NULL, NULL);
}
