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

static void assert_explain_has(tj_compiled *c, const char *what)
{
    char *text = tj_explain(c);
    assert_non_null(text);
    if (!strstr(text, what))
        fail_msg("explain lacks \"%s\":\n%s", what, text);
    free(text);
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
    assert_explain_has(c, "frozen: what reads only weights was folded into constants");
    /* b, and folded: w^T, the scale, the shift (mean, var, gamma, beta gone) */
    assert_explain_has(c, "6 nodes, 5 inputs (4 captured)");
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
    assert_explain_has(c, "recompiled because captured tensor");
    /* released and replaced: that graph is dropped, the next call retraces */
    tj_release(p.w);
    tj_scope_begin();
    p.w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){6, 5}));
    tj_scope_end();
    check(c, &p);
    check(c, &p);
    assert_explain_has(c, "was released");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_freeze_folds), T(test_frozen_weight_changed), T(test_freeze_nothing_to_fold),
#undef T
    };
    return cmocka_run_group_tests_name("freeze", tests, NULL, NULL);
}
