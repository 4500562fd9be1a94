/* test_nnops.c - the nn and linalg ops of ops.def's "nn and linalg" section
 * beyond what test_opinfo.c (values against PyTorch, eager and compiled) and
 * test_autograd.c (gradients) check: the DCOMP path itself (a composite with
 * no kernel runs its decomposition eagerly; a trace without gradients keeps
 * the composite node, one with gradients records its prims) and every error
 * path, eager and compiled, with messages naming the op and the shapes. */
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


static tj_tensor *T2(int64_t r, int64_t c, tj_dtype dt)
{
    return tj_rand(dt, 2, (int64_t[]){r, c});
}

/* ---- the DCOMP path ----------------------------------------------------------------------- */

static tj_tensor *model_mse(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    return tj_mse_loss(args[0], args[1], TJ_REDUCTION_MEAN);
}

static void test_dcomp_traced_keeps_composite(void **state)
{
    (void)state;
    tj_tensor *args[2] = {T2(3, 4, TJ_F32), T2(3, 4, TJ_F32)};
    tj_tensor *want = tj_mse_loss(args[0], args[1], TJ_REDUCTION_MEAN);
    tj_compiled *m = tj_compile(model_mse, NULL, &(tj_compile_options){.name = "mse"});
    assert_non_null(m);
    tj_tensor *got = tj_call(m, args, 2);
    assert_non_null(got);
    tu_assert_close(got, want, 1e-6, 0);
    char *text = tj_explain(m);
    assert_non_null(text);
    if (!strstr(text, "graph 1: 1 nodes"))   /* the composite, not its prims */
        fail_msg("not one node in:\n%s", text);
    free(text);
    tj_compiled_free(m);
}

static void test_dcomp_grad_records_prims(void **state)
{
    (void)state;
    tj_tensor *x = tj_from_data(TJ_F64, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    tj_tensor *y = tj_from_data(TJ_F64, 1, (int64_t[]){3}, (double[]){0, 4, 3});
    assert_int_equal(tj_requires_grad(x, true), 0);
    tj_tensor *l = tj_mse_loss(x, y, TJ_REDUCTION_SUM);
    assert_non_null(l);
    assert_true(tj_get_requires_grad(l));
    assert_int_equal(tj_backward(l), 0);
    tj_tensor *g = tj_grad(x);   /* 2 (x - y) */
    assert_non_null(g);
    tu_assert_close(g, tj_from_data(TJ_F64, 1, (int64_t[]){3}, (double[]){2, -4, 0}), 0, 0);
}

/* ---- errors ------------------------------------------------------------------------------- */

typedef struct err_case {
    int which;
} err_case;

static tj_tensor *apply(int which, tj_tensor *const *a, int n)
{
    tj_tensor *a2 = n > 2 ? a[2] : NULL;
    switch (which) {
    case 0: return tj_mse_loss(a[0], a[1], TJ_REDUCTION_MEAN);
    case 1: return tj_l1_loss(a[0], a[1], (tj_reduction)7);
    case 2: return tj_smooth_l1_loss(a[0], a[1], TJ_REDUCTION_SUM, -1);
    case 3: return tj_huber_loss(a[0], a[1], TJ_REDUCTION_SUM, 0);
    case 4: return tj_huber_loss(a[0], a[1], TJ_REDUCTION_SUM, 1);
    case 5: return tj_binary_cross_entropy(a[0], a[1], a2, TJ_REDUCTION_MEAN);
    case 6: return tj_binary_cross_entropy_with_logits(a[0], a[1], NULL, a2, TJ_REDUCTION_MEAN);
    default: return tj_kl_div(a[0], a[1], TJ_REDUCTION_MEAN, false);
    }
}

static tj_tensor *model_err(void *ctx, tj_tensor *const *args, int nargs)
{
    return apply(((err_case *)ctx)->which, args, nargs);
}

/* Fails eagerly and compiled with a message holding head and why. */
static void check_error(int which, tj_tensor *const *args, int nargs, const char *head,
                        const char *why)
{
    err_case c = {which};
    tu_assert_error(apply(which, args, nargs), head, why, NULL);
    tj_compiled *m = tj_compile(model_err, &c, &(tj_compile_options){.name = "err"});
    assert_non_null(m);
    tu_assert_error(tj_call(m, (tj_tensor **)args, nargs), head, why, NULL);
    tj_compiled_free(m);
}

static void test_loss_errors(void **state)
{
    (void)state;
    tj_tensor *x = T2(2, 3, TJ_F32), *x4 = tj_rand(TJ_F32, 1, (int64_t[]){4});
    tj_tensor *i = tj_ones(TJ_I64, 2, (int64_t[]){2, 3}), *d = T2(2, 3, TJ_F64);
    check_error(0, (tj_tensor *[]){x, x4}, 2, "mse_loss(f32[2,3], f32[4])",
                "input and target shapes cannot be broadcast together");
    check_error(0, (tj_tensor *[]){i, i}, 2, "mse_loss(i64[2,3], i64[2,3])",
                "the loss is computed in float, got i64");
    check_error(1, (tj_tensor *[]){x, x}, 2, "l1_loss(f32[2,3], f32[2,3])",
                "reduction 7 is not one of mean, sum, none");
    check_error(2, (tj_tensor *[]){x, x}, 2, "smooth_l1_loss", "beta -1 must not be negative");
    check_error(3, (tj_tensor *[]){x, x}, 2, "huber_loss", "delta 0 must be positive");
    check_error(4, (tj_tensor *[]){i, x}, 2, "huber_loss(i64[2,3], f32[2,3])",
                "input must be float, got i64");
    check_error(5, (tj_tensor *[]){x, d, NULL}, 2, "binary_cross_entropy(f32[2,3], f64[2,3])",
                "target must have the dtype of the input, f32, got f64");
    check_error(5, (tj_tensor *[]){x, x4, NULL}, 2, "binary_cross_entropy(f32[2,3], f32[4])",
                "target must have the shape of the input");
    check_error(5, (tj_tensor *[]){x, x, x4}, 3, "binary_cross_entropy(f32[2,3], f32[2,3], f32[4])",
                "weight must broadcast to the input's shape");
    check_error(5, (tj_tensor *[]){x, x, i}, 3, "binary_cross_entropy", "weight must be float, got i64");
    check_error(6, (tj_tensor *[]){x, x, x4}, 3, "binary_cross_entropy_with_logits",
                "pos_weight must broadcast to the input's shape");
    check_error(6, (tj_tensor *[]){i, i, NULL}, 2, "binary_cross_entropy_with_logits",
                "logits and target must be float, got i64 and i64");
    check_error(7, (tj_tensor *[]){x, i}, 2, "kl_div(f32[2,3], i64[2,3])",
                "input and target must be float, got f32 and i64");
    /* NULL inputs: NULL, keeping the first error */
    tj_clear_error();
    assert_null(tj_mse_loss(NULL, x, TJ_REDUCTION_MEAN));
    assert_null(tj_kl_div(x, NULL, TJ_REDUCTION_MEAN, true));
    tj_clear_error();
}

static tj_tensor *model_linalg(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    switch (((err_case *)ctx)->which) {
    case 0: return tj_bmm(a[0], a[1]);
    case 1: return tj_mv(a[0], a[1]);
    case 2: return tj_dot(a[0], a[1]);
    case 3: return tj_addmm(a[0], a[1], a[2], 0.5, 1);
    case 4: return tj_tensordot(a[0], a[1], (int[]){1, 1}, (int[]){0, 1}, 2);
    case 5: return tj_trace(a[0]);
    case 6: return tj_tensordot(a[0], a[1], (int[]){2}, (int[]){0}, 1);
    default: return tj_cross(a[0], a[1], 1);
    }
}

static void check_linalg_error(int which, tj_tensor *const *args, int nargs, const char *head,
                               const char *why)
{
    err_case c = {which};
    tu_assert_error(model_linalg(&c, args, nargs), head, why, NULL);
    tj_compiled *m = tj_compile(model_linalg, &c, &(tj_compile_options){.name = "err"});
    assert_non_null(m);
    tu_assert_error(tj_call(m, (tj_tensor **)args, nargs), head, why, NULL);
    tj_compiled_free(m);
}

static void test_linalg_errors(void **state)
{
    (void)state;
    tj_tensor *a3 = tj_rand(TJ_F32, 3, (int64_t[]){2, 3, 4});
    tj_tensor *b3 = tj_rand(TJ_F32, 3, (int64_t[]){3, 4, 5});
    tj_tensor *m = T2(3, 4, TJ_F32), *v = tj_rand(TJ_F32, 1, (int64_t[]){3});
    tj_tensor *mi = tj_ones(TJ_I64, 2, (int64_t[]){3, 4}), *b = tj_ones(TJ_BOOL, 2, (int64_t[]){3, 3});
    check_linalg_error(0, (tj_tensor *[]){a3, b3}, 2, "bmm(f32[2,3,4], f32[3,4,5])",
                       "batch sizes differ: 2 and 3");
    check_linalg_error(0, (tj_tensor *[]){m, b3}, 2, "bmm(f32[3,4], f32[3,4,5])",
                       "a must be 3-D [B,N,K], got 2-D");
    check_linalg_error(1, (tj_tensor *[]){m, v}, 2, "mv(f32[3,4], f32[3])", "inner dimensions differ");
    check_linalg_error(2, (tj_tensor *[]){v, m}, 2, "dot(f32[3], f32[3,4])", "b must be 1-D [N], got 2-D");
    check_linalg_error(3, (tj_tensor *[]){tj_ones(TJ_I64, 2, (int64_t[]){3, 3}), mi, tj_ones(TJ_I64, 2, (int64_t[]){4, 3})}, 3, "addmm",
                       "beta 0.5 must be integral for i64 operands");
    check_linalg_error(3, (tj_tensor *[]){m, m, T2(4, 3, TJ_F32)}, 3, "addmm(f32[3,4], f32[3,4], f32[4,3])",
                       "input f32[3,4] does not broadcast to the product's shape f32[3,3]");
    check_linalg_error(4, (tj_tensor *[]){m, m}, 2, "tensordot", "dims_a dim 1 appears twice");
    check_linalg_error(6, (tj_tensor *[]){a3, m}, 2, "tensordot(f32[2,3,4], f32[3,4])",
                       "contracted dims differ in size: 4 (a dim 2) and 3 (b dim 0)");
    check_linalg_error(5, (tj_tensor *[]){a3}, 1, "trace(f32[2,3,4])", "input must be 2-D [N,M], got 3-D");
    check_linalg_error(5, (tj_tensor *[]){b}, 1, "trace(bool[3,3])", "not supported");
    check_linalg_error(7, (tj_tensor *[]){m, m}, 2, "cross(f32[3,4], f32[3,4])",
                       "dim 1 must have size 3 in both operands, got 4 and 4");
    check_linalg_error(7, (tj_tensor *[]){m, mi}, 2, "cross", "both operands must have one dtype");
    tu_assert_error(tj_tensordot(m, m, (int[]){0}, (int[]){0}, -1), "tensordot", "-1 contracted dims", NULL);
}

/* Eager messages; the opinfo samples where PyTorch raises run them compiled. */
static void test_nn_errors(void **state)
{
    (void)state;
    tj_tensor *x = tj_rand(TJ_F32, 3, (int64_t[]){2, 4, 9}), *w2 = T2(6, 4, TJ_F32);
    tu_assert_error(tj_conv1d(x, w2, NULL, 1, 0, 1, 1), "conv1d(f32[2,4,9], f32[6,4])",
                    "weight must be 3-D [out, in/groups, K], got 2-D", NULL);
    tu_assert_error(tj_conv1d(w2, tj_rand(TJ_F32, 3, (int64_t[]){6, 4, 3}), NULL, 1, 0, 1, 3),
                    "conv1d(f32[6,4], f32[6,4,3])", NULL);
    tu_assert_error(tj_max_pool1d(tj_rand(TJ_F32, 1, (int64_t[]){9}), 2, 0, 0, 1, false),
                    "max_pool1d(f32[9])", "input must be 2-D [C,L] or 3-D [N,C,L], got 1-D", NULL);
    tu_assert_error(tj_avg_pool1d(x, 2, -1, 0, true, false), "avg_pool1d(f32[2,4,9])",
                    "stride -1 must be positive (0: the kernel size)", NULL);
    tu_assert_error(tj_pixel_shuffle(w2, 2), "pixel_shuffle(f32[6,4])",
                    "input must have at least 3 dims", NULL);
    tj_tensor *img = tj_rand(TJ_F32, 4, (int64_t[]){1, 6, 2, 2});
    tu_assert_error(tj_pixel_shuffle(img, 2), "pixel_shuffle(f32[1,6,2,2])",
                    "channels 6 are not divisible by upscale_factor^2 = 4", NULL);
    tu_assert_error(tj_pixel_unshuffle(tj_rand(TJ_F32, 4, (int64_t[]){1, 6, 3, 2}), 2),
                    "pixel_unshuffle(f32[1,6,3,2])", "spatial size 3 is not divisible", NULL);
    tu_assert_error(tj_pixel_unshuffle(img, 0), "downscale_factor 0 must be positive", NULL);
}

static void test_norm_errors(void **state)
{
    (void)state;
    tj_tensor *x = tj_rand(TJ_F32, 4, (int64_t[]){2, 4, 3, 2}), *m = T2(3, 4, TJ_F32);
    tj_tensor *w3 = tj_rand(TJ_F32, 1, (int64_t[]){3}), *xi = tj_ones(TJ_I64, 2, (int64_t[]){3, 4});
    tu_assert_error(tj_group_norm(x, 3, NULL, NULL, 1e-5), "group_norm(f32[2,4,3,2])",
                    "channels 4 are not divisible by groups 3", NULL);
    tu_assert_error(tj_group_norm(x, 2, w3, NULL, 1e-5), "group_norm(f32[2,4,3,2], f32[3])",
                    "weight must be 1-D [C] with C = 4, got 1-D", NULL);
    tu_assert_error(tj_instance_norm(m, NULL, NULL, 1e-5), "instance_norm(f32[3,4])",
                    "input must have at least 3 dims", NULL);
    tu_assert_error(tj_local_response_norm(x, 0, 1e-4, 0.75, 1), "local_response_norm",
                    "size 0 must be positive", NULL);
    tu_assert_error(tj_vector_norm(xi, 2, NULL, 0, false), "vector_norm(i64[3,4])",
                    "input must be float, got i64", NULL);
    tu_assert_error(tj_vector_norm(m, 2, (int[]){2}, 1, false), "vector_norm(f32[3,4])", NULL);
    tu_assert_error(tj_cosine_similarity(m, w3, 1, 1e-8), "cosine_similarity(f32[3,4], f32[3])",
                    "x1 and x2 shapes cannot be broadcast together", NULL);
    tu_assert_error(tj_cosine_similarity(m, m, 2, 1e-8), "dim 2 is out of range for 2 dims", NULL);
    tu_assert_error(tj_pairwise_distance(m, w3, 2, 1e-6, false), "pairwise_distance", NULL);
    tj_tensor *t = tj_ones(TJ_I64, 1, (int64_t[]){3});
    tu_assert_error(tj_nll_loss(m, tj_ones(TJ_I32, 1, (int64_t[]){3}), NULL, TJ_REDUCTION_MEAN, -100),
                    "nll_loss(f32[3,4], i32[3])", "target must hold class indices of dtype i64", NULL);
    tu_assert_error(tj_nll_loss(m, tj_ones(TJ_I64, 1, (int64_t[]){4}), NULL, TJ_REDUCTION_MEAN, -100),
                    "nll_loss(f32[3,4], i64[4])", "without the class dim", NULL);
    tu_assert_error(tj_nll_loss(m, t, w3, TJ_REDUCTION_MEAN, -100), "nll_loss(f32[3,4], i64[3], f32[3])",
                    "weight must be 1-D [C] with C = 4", NULL);
    /* data-dependent: a class out of range (the gather of the decomposition reports it) */
    tj_tensor *bad = tj_from_data(TJ_I64, 1, (int64_t[]){3}, (int64_t[]){0, 4, 1});
    tu_assert_error(tj_nll_loss(m, bad, NULL, TJ_REDUCTION_MEAN, -100), "nll_loss(f32[3,4], i64[3])",
                    "index 4 is out of range", NULL);
    /* adaptive pools, cdist, matrix_norm */
    tu_assert_error(tj_adaptive_avg_pool2d(m, 2, 2), "adaptive_avg_pool2d(f32[3,4])",
                    "input must be 3-D or 4-D, got 2-D", NULL);
    tu_assert_error(tj_adaptive_max_pool2d(x, -1, 2), "adaptive_max_pool2d(f32[2,4,3,2])",
                    "output_size -1 is negative", NULL);
    tu_assert_error(tj_adaptive_avg_pool1d(tj_ones(TJ_I64, 2, (int64_t[]){3, 4}), 2),
                    "adaptive_avg_pool1d(i64[3,4])", "input must be float, got i64", NULL);
    tu_assert_error(tj_cdist(m, T2(5, 3, TJ_F32), 2), "cdist(f32[3,4], f32[5,3])",
                    "x1 and x2 must have the same last dim, got 4 and 3", NULL);
    tu_assert_error(tj_cdist(m, m, -1), "cdist", "p -1 must not be negative", NULL);
    tu_assert_error(tj_matrix_norm(w3, NULL, false), "matrix_norm(f32[3])",
                    "input must have at least 2 dims, got 1", NULL);
    tu_assert_error(tj_matrix_norm(m, (int[]){1, 1}, false), "matrix_norm(f32[3,4])", NULL);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
    const struct CMUnitTest tests[] = {
        T(test_dcomp_traced_keeps_composite),
        T(test_dcomp_grad_records_prims),
        T(test_loss_errors),
        T(test_linalg_errors),
        T(test_nn_errors),
        T(test_norm_errors),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
