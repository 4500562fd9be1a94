/* test_aot_dynamic.c - the partitioned backward of compiled calls over
 * symbolic dims (frontend/aot_joint.c): one joint graph serves every size of
 * a symbolic entry. Gradient rules that need a size take it from the
 * arguments (fe_sym_full, fe_count): means, variances, cross-entropy over
 * probabilities, broadcasts back onto a symbolic dim, index_select, causal
 * attention over a symbolic sequence, slices of it put back (cat, narrow,
 * pad), strided pools' zeros interleaved, dropout's mask drawn again, tril
 * decomposed on the symbols, and batch norm's running variance in the
 * forward. Each model here is called at six sizes, its results,
 * gradients and running statistics against eager's (f64), with one joint
 * and no eager call. Where a rule fails on the symbols (index_select's,
 * over the symbolic dim) or the joint differs at other sizes, the entry gets
 * one static joint per shape, up to the limit, as explain says.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

enum { W1, W2, GAMMA, BETA, CONV, GCONV, FC, NGRAD, RM = NGRAD, RV, IDX, NW };

typedef struct model {
    const char *name;
    tj_model_fn fn;
    int nargs;
    int dyn;   /* argument 0: [s, 8] (0), [2, s, 8] (1) or [s, 2, 8, 8] (2) */
} model;

/* Batch norm (training) with its running statistics, reshapes through a
 * symbolic dim, an unbiased variance over it and a mean. */
static tj_tensor *bn_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    tj_tensor *h = tj_batch_norm_train(tj_matmul(a[0], w[W1]), w[RM], w[RV], w[GAMMA], w[BETA], 0.1, 1e-5);
    h = tj_reshape(tj_reshape(tj_relu(h), 3, (int64_t[]){-1, 2, 4}), 2, (int64_t[]){-1, 8});
    tj_tensor *v = tj_var(h, (int[]){0}, 1, 1, false);
    return tj_add(tj_mean(tj_matmul(h, w[W2]), NULL, 0, false), tj_sum(v, NULL, 0, false));
}

/* Cross-entropy over class probabilities (argument 1), mean over the rows. */
static tj_tensor *ce_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    return tj_cross_entropy(tj_matmul(tj_tanh(tj_matmul(a[0], w[W1])), w[W2]), a[1]);
}

/* Dropout over the symbolic dim: its gradient draws the mask again. */
static tj_tensor *dropout_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    return tj_matmul(tj_dropout(tj_tanh(tj_matmul(a[0], w[W1])), 0.3, true), w[W2]);
}

/* tril over the symbolic dim: a composite a trace recording gradients
 * decomposes, here on the symbols (its mask counted along them). */
static tj_tensor *tril_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    return tj_matmul(tj_tril(tj_tanh(tj_matmul(a[0], w[W1])), -1), w[W2]);
}

/* A mean over the symbolic dim broadcast back onto it. */
static tj_tensor *mean_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    tj_tensor *h = tj_tanh(tj_matmul(a[0], w[W1]));
    return tj_matmul(tj_mul(h, tj_mean(h, (int[]){0}, 1, true)), w[W2]);
}

/* Causal attention over a symbolic sequence (x [2, s0, 8]). */
static tj_tensor *attention_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    tj_tensor *q = tj_matmul(a[0], w[W1]), *k = tj_tanh(q), *v = tj_mul(q, w[GAMMA]);
    return tj_matmul(tj_scaled_dot_product_attention(q, k, v, NULL, true, -1.0), w[W2]);
}

/* Slices of the symbolic dim whose gradients are put back at offsets that
 * are sizes: a rotation by cat, a row, the last rows, a pad of it. */
static tj_tensor *slices_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    tj_tensor *h = tj_tanh(tj_matmul(a[0], w[W1]));
    tj_tensor *rot = tj_cat((tj_tensor *[]){tj_slice(h, 0, 2, INT64_MAX, 1), tj_slice(h, 0, 0, 2, 1)}, 2, 0);
    tj_tensor *row = tj_narrow(h, 0, 1, 1), *last = tj_slice(h, 0, -3, INT64_MAX, 1);
    tj_tensor *p = tj_pad(tj_mul(rot, h), (int64_t[]){0, 0, 1, 2}, 2, 0.5);
    tj_tensor *s = tj_add(tj_sum(p, (int[]){0}, 1, true), tj_sum(last, (int[]){0}, 1, true));
    return tj_matmul(tj_add(tj_mul(h, row), s), w[W2]);
}

/* A small convnet over a symbolic batch (x [s0, 2, 8, 8]): convolution,
 * training-mode batch norm, a convolution of 2 groups (its weight gradient
 * per group: the batch is symbolic), max and average pools (strided: their
 * gradients interleave zeros, reshaping through the batch), flattened into a
 * linear. */
static tj_tensor *cnn_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    tj_tensor *h = tj_conv2d(a[0], w[CONV], NULL, NULL, (int64_t[]){1, 1}, NULL, 1);
    h = tj_relu(tj_batch_norm_train(h, w[RM], w[RV], w[GAMMA], w[BETA], 0.1, 1e-5));
    h = tj_add(h, tj_conv2d(h, w[GCONV], NULL, NULL, (int64_t[]){1, 1}, NULL, 2));
    h = tj_add(tj_max_pool2d(h, (int64_t[]){2, 2}, NULL, NULL, NULL),
               tj_avg_pool2d(h, (int64_t[]){2, 2}, NULL, NULL, true));
    return tj_matmul(tj_reshape(h, 2, (int64_t[]){-1, 8 * 4 * 4}), w[FC]);
}

/* Rows picked from the symbolic dim: index_select's gradient adds them back
 * (index_add, then scatter_add, into zeros of the symbolic size). */
static tj_tensor *index_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    tj_tensor *rows = tj_index_select(tj_tanh(tj_matmul(a[0], w[W1])), 0, w[IDX]);
    return tj_matmul(rows, w[W2]);
}

/* Columns picked: index_add along a static dim of a tensor with a symbolic
 * one (its decomposition would expand the index to the symbolic size) cannot
 * follow the symbol yet. */
static tj_tensor *columns_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    tj_tensor *cols = tj_index_select(tj_tanh(tj_matmul(a[0], w[W1])), 1, w[IDX]);
    return tj_matmul(tj_mul(tj_tanh(a[0]), tj_sum(cols, NULL, 0, false)), w[W2]);
}

/* A model that is not the same function at each trace (it counts them). */
static int traces;
static tj_tensor *counting_model(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor **w = ctx;
    (void)n;
    return tj_mul_s(tj_matmul(tj_tanh(tj_matmul(a[0], w[W1])), w[W2]), 1.0 + traces++ % 2);
}

static void weights(tj_tensor **w)
{
    tj_manual_seed(5);
    w[W1] = tj_randn(TJ_F64, 2, (int64_t[]){8, 8});
    w[W2] = tj_randn(TJ_F64, 2, (int64_t[]){8, 4});
    w[GAMMA] = tj_randn(TJ_F64, 1, (int64_t[]){8});
    w[BETA] = tj_randn(TJ_F64, 1, (int64_t[]){8});
    w[CONV] = tj_mul_s(tj_randn(TJ_F64, 4, (int64_t[]){8, 2, 3, 3}), 0.3);
    w[GCONV] = tj_mul_s(tj_randn(TJ_F64, 4, (int64_t[]){8, 4, 3, 3}), 0.2);
    w[FC] = tj_mul_s(tj_randn(TJ_F64, 2, (int64_t[]){128, 4}), 0.1);
    w[RM] = tj_zeros(TJ_F64, 1, (int64_t[]){8});
    w[RV] = tj_ones(TJ_F64, 1, (int64_t[]){8});
    w[IDX] = tj_from_data(TJ_I64, 1, (int64_t[]){3}, (int64_t[]){0, 4, 1});
    for (int k = 0; k < NGRAD; k++)
        assert_int_equal(tj_requires_grad(w[k], true), 0);
}

/* The arguments of m at size s of its symbolic dim. */
static void make_args(const model *m, int64_t s, tj_tensor **a)
{
    int64_t shape[4] = {s, 8, 0, 0};
    int nd = 2;
    if (m->dyn == 1) {   /* [2, s, 8] */
        shape[0] = 2, shape[1] = s, shape[2] = 8;
        nd = 3;
    } else if (m->dyn == 2) {   /* images [s, 2, 8, 8] */
        shape[1] = 2, shape[2] = shape[3] = 8;
        nd = 4;
    }
    a[0] = tj_randn(TJ_F64, nd, shape);
    a[1] = tj_softmax(tj_randn(TJ_F64, 2, (int64_t[]){s, 4}), 1);
    assert_int_equal(tj_mark_dynamic(a[0], m->dyn == 1), 0);
    if (m->nargs > 1)
        assert_int_equal(tj_mark_dynamic(a[1], 0), 0);
}

/* Calls m compiled and eagerly at each of sizes[0..n): results, gradients
 * and running statistics the same (f64); c is left for the caller's checks. */
static tj_compiled *run_sizes(const model *m, tj_tensor **w, const int64_t *sizes, int n)
{
    tj_compiled *c = tj_compile(m->fn, w, &(tj_compile_options){.name = m->name});
    for (int i = 0; i < n; i++) {
        tj_scope_begin();
        tj_tensor *a[2], *want[NGRAD], *before[2], *stat[2];
        make_args(m, sizes[i], a);
        for (int k = 0; k < 2; k++)
            before[k] = tj_clone(w[RM + k]);
        tj_manual_seed(100 + (uint64_t)i);   /* the same draws, eager and compiled */
        tj_tensor *y0 = m->fn(w, a, m->nargs);
        assert_non_null(y0);
        assert_int_equal(tj_backward(tj_sum(y0, NULL, 0, false)), 0);
        for (int k = 0; k < NGRAD; k++) {
            want[k] = tj_grad(w[k]) ? tj_clone(tj_grad(w[k])) : NULL;
            tj_zero_grad(w[k]);
        }
        for (int k = 0; k < 2; k++) {   /* eager's running statistics; the call's start where it did */
            stat[k] = tj_clone(w[RM + k]);
            assert_int_equal(tj_copy_(w[RM + k], before[k]), 0);
        }
        tj_manual_seed(100 + (uint64_t)i);
        tj_tensor *y1 = tj_call(c, a, m->nargs);
        if (!y1)
            fail_msg("%s at %lld: %s", m->name, (long long)sizes[i], tj_last_error());
        if (tj_backward(tj_sum(y1, NULL, 0, false)) != 0)
            fail_msg("%s at %lld: backward: %s", m->name, (long long)sizes[i], tj_last_error());
        tu_assert_close(y1, y0, 1e-12, 1e-12);
        for (int k = 0; k < NGRAD; k++) {
            if (!want[k]) {
                assert_null(tj_grad(w[k]));
                continue;
            }
            assert_non_null(tj_grad(w[k]));
            tu_assert_close(tj_grad(w[k]), want[k], 1e-10, 1e-10);
            tj_zero_grad(w[k]);
        }
        for (int k = 0; k < 2; k++)
            tu_assert_close(w[RM + k], stat[k], 1e-12, 1e-12);
        tj_scope_end();
    }
    return c;
}

static void test_symbolic_rules(void **state)
{
    (void)state;
    const model models[] = {
        {"bn", bn_model, 1, 0},
        {"ce", ce_model, 2, 0},
        {"mean", mean_model, 1, 0},
        {"slices", slices_model, 1, 0},
        {"dropout", dropout_model, 1, 0},
        {"tril", tril_model, 1, 0},
        {"cnn", cnn_model, 1, 2},
        {"attention", attention_model, 1, 1},
        {"index", index_model, 1, 0},
    };
    const int64_t sizes[] = {6, 9, 14, 9, 21, 5};
    for (int i = 0; i < (int)(sizeof models / sizeof *models); i++) {
        tj_scope_begin();
        tj_tensor *w[NW];
        weights(w);
        tj_compiled *c = run_sizes(&models[i], w, sizes, 6);
        tj_compiled_stats s;
        assert_int_equal(tj_compiled_stats_get(c, &s), 0);
        char *ex = tj_explain(c);
        if (s.graphs != 1 || s.backward.partitioned != 1 || !strstr(ex, "for arguments f64[") ||
            strstr(ex, "traced on these shapes"))
            fail_msg("%s: not one symbolic joint:\n%s", models[i].name, ex);
        free(ex);
        tu_assert_calls(c, 0, 6, NULL);
        tj_compiled_free(c);
        for (int k = 0; k < NW; k++)
            tj_release(w[k]);
        tj_scope_end();
    }
}

/* Where the joint cannot follow the symbols, one static joint per shape:
 * index_add fails on them (up to the limit, then aot.c's recomputing
 * backward); a model that traces differently each time fails the check at
 * other sizes. */
static void test_static_fallback(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *w[NW];
    weights(w);
    const model m = {"columns", columns_model, 1, 0};
    const int64_t sizes[] = {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 6};
    tj_compiled *c = run_sizes(&m, w, sizes, 11);
    tj_compiled_stats s;
    assert_int_equal(tj_compiled_stats_get(c, &s), 0);
    assert_int_equal(s.graphs, 1);
    assert_int_equal(s.backward.partitioned, 8);   /* 6 .. 13; 14 and 15 recompute */
    tu_assert_calls(c, 0, -1, "backward of result 0 for arguments f64[6,8]: joint graph partitioned");
    tu_assert_explain(c, "traced on these shapes, one joint per shape: index_add: "
                         "index_add(f64[s0,8], i64[3], f64[s0,3]): dim 0 has a symbolic size");
    tu_assert_explain(c, "backward not partitioned for 2 calls: 8 argument shapes have partitioned "
                         "backwards (the limit)");
    tj_compiled_free(c);

    c = tj_compile(counting_model, w, &(tj_compile_options){.name = "counting"});
    tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){6, 8});
    assert_int_equal(tj_mark_dynamic(x, 0), 0);
    assert_non_null(tj_call(c, &x, 1));   /* the entry's trace */
    assert_int_equal(tj_backward(tj_sum(tj_call(c, &x, 1), NULL, 0, false)), 0);
    tu_assert_explain(c, "traced on these shapes, one joint per shape: a gradient rule or the model "
                         "computes with the sizes of a symbolic dim (the joint graph differs at other "
                         "sizes)");
    tj_compiled_free(c);
    for (int k = 0; k < NW; k++)
        tj_release(w[k]);
    tj_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolic_rules),
        cmocka_unit_test(test_static_fallback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
