/* test_freeze.c - tj_compile_options.freeze: what reads only weights is
 * folded into constants once; results equal eager's; writing a frozen
 * weight in place or releasing it makes the next call trace again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

typedef struct weights {
    tj_tensor *w, *b, *mean, *var, *g, *beta;
} weights;

/* bn(x @ w^T + b), eval mode: w's transpose and bn's scale/shift read only weights */
static tj_tensor *model(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    weights *p = ctx;
    tj_tensor *y = tj_add(tj_matmul(x[0], tj_transpose(p->w, 0, 1)), p->b);
    return tj_relu(tj_batch_norm(y, p->mean, p->var, p->g, p->beta, 1e-5));
}

/* Held by us alone (no scope holds them), so tj_release frees them. */
static void init(weights *p)
{
    tj_scope_begin();
    p->w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){6, 5}));
    p->b = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){6}));
    p->mean = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){6}));
    p->var = tj_keep(tj_add_s(tj_abs(tj_randn(TJ_F32, 1, (int64_t[]){6})), 0.5));
    p->g = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){6}));
    p->beta = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){6}));
    tj_scope_end();
}

static void release(weights *p)
{
    tj_release(p->w);
    tj_release(p->b);
    tj_release(p->mean);
    tj_release(p->var);
    tj_release(p->g);
    tj_release(p->beta);
}

static void check(tj_compiled *c, weights *p)
{
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 5});
    tu_assert_close(tj_call(c, &x, 1), model(p, &x, 1), 1e-5, 1e-5);
}

static int graphs(tj_compiled *c)
{
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    return st.graphs;
}

static void test_freeze_folds(void **state)
{
    (void)state;
    weights p;
    init(&p);
    tj_compiled *c = tj_compile(model, &p, &(tj_compile_options){.name = "frozen", .freeze = true});
    for (int k = 0; k < 3; k++)
        check(c, &p);
    assert_int_equal(graphs(c), 1);
    tu_assert_explain(c, "frozen: what reads only weights was folded into constants (1 batch");
    /* bn folded into the matmul (passes/fold_bn.c), then w'^T and b' folded:
     * matmul, add, relu on x and two constants */
    tu_assert_explain(c, "3 nodes, 3 inputs (2 captured)");
    tj_compiled_free(c);
    release(&p);
}

static void test_frozen_weight_changed(void **state)
{
    (void)state;
    weights p;
    init(&p);
    tj_compiled *c = tj_compile(model, &p, &(tj_compile_options){.name = "frozen_w", .freeze = true});
    check(c, &p);
    /* written in place: the folded constants are stale, the next call retraces */
    assert_int_equal(tj_copy_(p.var, tj_full(TJ_F32, 1, (int64_t[]){6}, 2.0)), 0);
    check(c, &p);
    assert_int_equal(graphs(c), 2);
    tu_assert_explain(c, "recompiled because captured tensor");
    /* released and replaced: that graph is dropped, the next call retraces */
    tj_release(p.w);
    tj_scope_begin();
    p.w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){6, 5}));
    tj_scope_end();
    check(c, &p);
    check(c, &p);
    tu_assert_explain(c, "was released");
    tj_compiled_free(c);

    /* not frozen: the plan reads the weight each call, no retrace */
    c = tj_compile(model, &p, &(tj_compile_options){.name = "live"});
    check(c, &p);
    assert_int_equal(tj_copy_(p.var, tj_full(TJ_F32, 1, (int64_t[]){6}, 3.0)), 0);
    check(c, &p);
    assert_int_equal(graphs(c), 1);
    tj_compiled_free(c);
    release(&p);
}

/* Nothing reads only weights: freeze changes nothing. */
static tj_tensor *model_plain(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    return tj_mul(x[0], ctx);
}

static void test_freeze_nothing_to_fold(void **state)
{
    (void)state;
    tj_tensor *w = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){7}));
    tj_compiled *c = tj_compile(model_plain, w, &(tj_compile_options){.name = "plain", .freeze = true});
    tj_tensor *x = tj_randn(TJ_F32, 1, (int64_t[]){7});
    tu_assert_close(tj_call(c, &x, 1), model_plain(w, &x, 1), 0, 0);
    char *text = tj_explain(c);
    assert_null(strstr(text, "frozen"));
    free(text);
    tj_compiled_free(c);
    tj_release(w);
}

/* ---- batch norm folded into the conv/linear/matmul before it (passes/fold_bn.c) ---- */

typedef struct bnw {
    tj_tensor *w, *b, *mean, *var, *g, *beta;   /* b, g, beta may be NULL */
    int64_t groups;
} bnw;

static tj_tensor *keep_randn(int nd, const int64_t *shape)
{
    return tj_keep(tj_randn(TJ_F32, nd, shape));
}

/* Channels ch; the conv weight [ch, cin/groups, 3, 3] or the linear one [ch, cin]. */
static void bn_init(bnw *p, bool conv, int64_t ch, int64_t cin, int64_t groups, bool bias,
                    bool affine)
{
    tj_scope_begin();
    int64_t c1[1] = {ch};
    p->w = conv ? keep_randn(4, (int64_t[]){ch, cin / groups, 3, 3}) : keep_randn(2, (int64_t[]){ch, cin});
    p->b = bias ? keep_randn(1, c1) : NULL;
    p->mean = keep_randn(1, c1);
    p->var = tj_keep(tj_add_s(tj_abs(tj_randn(TJ_F32, 1, c1)), 0.5));
    p->g = affine ? keep_randn(1, c1) : NULL;
    p->beta = affine ? keep_randn(1, c1) : NULL;
    p->groups = groups;
    tj_scope_end();
}

static void bn_release(bnw *p)
{
    tj_tensor *all[] = {p->w, p->b, p->mean, p->var, p->g, p->beta};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        if (all[k])
            tj_release(all[k]);
}

static tj_tensor *bn_of(bnw *p, tj_tensor *y)
{
    return tj_batch_norm(y, p->mean, p->var, p->g, p->beta, 1e-5);
}

static tj_tensor *model_conv_bn(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    bnw *p = ctx;
    tj_tensor *y = tj_conv2d(x[0], p->w, p->b, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                             (int64_t[]){1, 1}, p->groups);
    return tj_relu(bn_of(p, y));
}

static tj_tensor *model_linear_bn(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    bnw *p = ctx;
    return bn_of(p, tj_linear(x[0], p->w, p->b));
}

/* matmul on a weight [in, out] (here w^T of the linear weight), bn over the features */
static tj_tensor *model_matmul_bn(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    bnw *p = ctx;
    tj_tensor *y = tj_matmul(x[0], tj_transpose(p->w, 0, 1));
    return bn_of(p, p->b ? tj_add(y, p->b) : y);
}

/* Frozen: equals eager on three calls, one graph, and the graph is what explain says. */
static void check_bn_fold(tj_model_fn fn, bnw *p, int nd, const int64_t *xshape, const char *want)
{
    tj_compiled *c = tj_compile(fn, p, &(tj_compile_options){.name = "bn_fold", .freeze = true});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_randn(TJ_F32, nd, xshape);
        tu_assert_close(tj_call(c, &x, 1), fn(p, &x, 1), 1e-4, 1e-4);
    }
    assert_int_equal(graphs(c), 1);
    tu_assert_explain(c, "frozen: what reads only weights was folded into constants (1 batch "
                          "norm folded into the conv/linear/matmul before it)");
    tu_assert_explain(c, want);
    tj_compiled_free(c);
}

static void test_fold_conv_bn(void **state)
{
    (void)state;
    const int64_t xs[4] = {2, 4, 6, 6};
    bnw p;
    /* conv without bias: conv2d(x, w', b') and relu remain; inputs x, w', b' */
    bn_init(&p, true, 8, 4, 1, false, true);
    check_bn_fold(model_conv_bn, &p, 4, xs, "2 nodes, 3 inputs (2 captured)");
    bn_release(&p);
    /* with bias, grouped */
    bn_init(&p, true, 8, 4, 2, true, true);
    check_bn_fold(model_conv_bn, &p, 4, xs, "2 nodes, 3 inputs (2 captured)");
    bn_release(&p);
    /* depthwise, bn without affine */
    bn_init(&p, true, 4, 4, 4, true, false);
    check_bn_fold(model_conv_bn, &p, 4, xs, "2 nodes, 3 inputs (2 captured)");
    bn_release(&p);
}

static void test_fold_linear_bn(void **state)
{
    (void)state;
    const int64_t xs[2] = {5, 7};
    bnw p;
    bn_init(&p, false, 6, 7, 1, true, true);
    check_bn_fold(model_linear_bn, &p, 2, xs, "2 nodes, 3 inputs (2 captured)");
    bn_release(&p);
    bn_init(&p, false, 6, 7, 1, false, false);
    check_bn_fold(model_linear_bn, &p, 2, xs, "2 nodes, 3 inputs (2 captured)");
    bn_release(&p);
}

static void test_fold_matmul_bn(void **state)
{
    (void)state;
    const int64_t xs[2] = {5, 7};
    bnw p;
    bn_init(&p, false, 6, 7, 1, true, true);
    check_bn_fold(model_matmul_bn, &p, 2, xs, "2 nodes, 3 inputs (2 captured)");
    bn_release(&p);
    bn_init(&p, false, 6, 7, 1, false, false);
    check_bn_fold(model_matmul_bn, &p, 2, xs, "2 nodes, 3 inputs (2 captured)");
    bn_release(&p);
}

/* A folded weight is stale once its source changes: the version guard retraces. */
static void test_fold_bn_weight_changed(void **state)
{
    (void)state;
    const int64_t xs[4] = {1, 4, 5, 5};
    bnw p;
    bn_init(&p, true, 8, 4, 1, true, true);
    tj_compiled *c = tj_compile(model_conv_bn, &p,
                                &(tj_compile_options){.name = "bn_fold_w", .freeze = true});
    tj_tensor *x = tj_randn(TJ_F32, 4, xs);
    tu_assert_close(tj_call(c, &x, 1), model_conv_bn(&p, &x, 1), 1e-4, 1e-4);
    assert_int_equal(tj_copy_(p.mean, tj_full(TJ_F32, 1, (int64_t[]){8}, 0.25)), 0);
    tu_assert_close(tj_call(c, &x, 1), model_conv_bn(&p, &x, 1), 1e-4, 1e-4);
    assert_int_equal(tj_copy_(p.w, tj_full(TJ_F32, 4, (int64_t[]){8, 4, 3, 3}, 0.5)), 0);
    tu_assert_close(tj_call(c, &x, 1), model_conv_bn(&p, &x, 1), 1e-4, 1e-4);
    assert_int_equal(graphs(c), 3);
    tu_assert_explain(c, "recompiled because captured tensor");
    tj_compiled_free(c);
    bn_release(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_freeze_folds), T(test_frozen_weight_changed), T(test_freeze_nothing_to_fold),
        T(test_fold_conv_bn), T(test_fold_linear_bn), T(test_fold_matmul_bn),
        T(test_fold_bn_weight_changed),
#undef T
    };
    return cmocka_run_group_tests_name("freeze", tests, NULL, NULL);
}
