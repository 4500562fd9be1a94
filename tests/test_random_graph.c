/* test_random_graph.c - random ops (tj_rand, tj_randn, tj_dropout) traced
 * into compiled graphs: each call draws fresh counters, the same ones eager
 * draws op by op from the same generator state (bit for bit), and the cases
 * that stay graph breaks (tj_manual_seed inside) say so and still match
 * eager; a forward whose results require grad keeps its masks for the
 * backward; masks over symbolic dims draw as many counters as each call's
 * sizes give.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

static double max_diff(tj_tensor *a, tj_tensor *b)
{
    return tj_item(tj_amax(tj_abs(tj_sub(a, b)), NULL, 0, false));
}

/* Two dropouts, a rand and a randn around pointwise work. */
static tj_tensor *model_draws(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *h = tj_dropout(tj_relu(x[0]), 0.5, true);
    tj_tensor *u = tj_rand(TJ_F32, 1, (int64_t[]){tj_size(x[0], 1)});
    tj_tensor *z = tj_randn(TJ_F64, 2, (int64_t[]){tj_size(x[0], 0), tj_size(x[0], 1)});
    return tj_add(tj_mul(tj_dropout(h, 0.25, true), u), tj_cast(z, TJ_F32));
}

/* Eager and compiled from the same seed, calls apart: bit for bit, fresh
 * draws each call, one graph without breaks; again after another draw
 * between calls (the graph reads the generator where it is). */
static void test_draws_match_eager(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_draws, NULL, &(tj_compile_options){.name = "draws"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){48, 100});
    tj_tensor *want[4], *got[4];
    for (int pass = 0; pass < 2; pass++) {
        tj_manual_seed(11);
        for (int k = 0; k < 4; k++) {
            if (k == 2)
                tj_rand(TJ_F32, 1, (int64_t[]){7});   /* the generator moves between calls */
            if (pass == 0)
                want[k] = model_draws(NULL, &x, 1);
            else if (!(got[k] = tj_call(c, &x, 1)))
                fail_msg("compiled call %d: %s", k, tj_last_error());
        }
    }
    for (int k = 0; k < 4; k++) {
        tu_assert_close(got[k], want[k], 0, 0);
        if (k)
            assert_true(max_diff(got[k], got[k - 1]) > 0.1);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.eager_calls, 0);
    tu_assert_explain(c, "1 graph captured, 0 graph breaks");
    tj_compiled_free(c);
}

/* Frozen: a mask over a weight is no constant of the graph. */
static tj_tensor *model_weight_mask(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    return tj_matmul(x[0], tj_dropout(ctx, 0.5, true));
}

static void test_frozen_mask(void **state)
{
    (void)state;
    tj_tensor *w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){16, 8}));
    tj_compiled *c = tj_compile(model_weight_mask, w,
                                &(tj_compile_options){.name = "frozen_mask", .freeze = true});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 16});
    tj_tensor *want[3], *got[3];
    tj_manual_seed(3);
    for (int k = 0; k < 3; k++)
        want[k] = model_weight_mask(w, &x, 1);
    tj_manual_seed(3);
    for (int k = 0; k < 3; k++)
        assert_non_null(got[k] = tj_call(c, &x, 1));
    for (int k = 0; k < 3; k++)
        tu_assert_close(got[k], want[k], 1e-5, 1e-5);
    assert_true(max_diff(got[1], got[2]) > 0.01);
    tj_compiled_free(c);
    tj_release(w);
}

/* A training step with dropout, backward and SGD in one compiled call: the
 * backward's mask is the forward's (the same counters of the same call). */
typedef struct step {
    tj_tensor *w;
    tj_optimizer *opt;
} step;

static tj_tensor *train_step(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    step *s = ctx;
    tj_optimizer_zero_grad(s->opt);
    tj_tensor *h = tj_dropout(tj_tanh(tj_matmul(x[0], s->w)), 0.3, true);
    tj_tensor *loss = tj_sum(tj_square(h), NULL, 0, false);
    if (tj_backward(loss) != 0 || tj_optimizer_step(s->opt) != 0)
        return NULL;
    return tj_detach(loss);
}

static void test_training_step(void **state)
{
    (void)state;
    tj_tensor *w0 = tj_randn(TJ_F32, 2, (int64_t[]){12, 10}), *x = tj_randn(TJ_F32, 2, (int64_t[]){6, 12});
    step se = {tj_keep(tj_clone(w0)), NULL}, sc = {tj_keep(tj_clone(w0)), NULL};
    tj_sgd_options o = {.lr = 0.1};
    assert_int_equal(tj_requires_grad(se.w, true), 0);
    assert_int_equal(tj_requires_grad(sc.w, true), 0);
    se.opt = tj_sgd(&se.w, 1, &o);
    sc.opt = tj_sgd(&sc.w, 1, &o);
    tj_compiled *c = tj_compile(train_step, &sc, &(tj_compile_options){.name = "dropout_step"});
    tj_manual_seed(5);
    tj_tensor *le[3], *lc[3];
    for (int k = 0; k < 3; k++)
        le[k] = train_step(&se, &x, 1);
    tj_manual_seed(5);
    for (int k = 0; k < 3; k++)
        if (!(lc[k] = tj_call(c, &x, 1)))
            fail_msg("compiled step %d: %s", k, tj_last_error());
    for (int k = 0; k < 3; k++)
        tu_assert_close(lc[k], le[k], 1e-5, 1e-5);
    tu_assert_close(sc.w, se.w, 1e-5, 1e-6);
    assert_true(max_diff(sc.w, w0) > 1e-3);
    tu_assert_explain(c, "0 graph breaks");
    tj_compiled_free(c);
    tj_optimizer_free(se.opt);
    tj_optimizer_free(sc.opt);
    tj_release(se.w);
    tj_release(sc.w);
}

/* Breaks: tj_manual_seed inside (a graph would not seed again), a result
 * that requires grad (its backward would run in another call); a mask over
 * symbolic dims makes the dims static. Each says why, and the calls still
 * match eager. */
static tj_tensor *model_seeded(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    tj_manual_seed(99);
    return tj_dropout(x[0], 0.5, true);
}

static tj_tensor *model_grad(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    return tj_mul(tj_dropout(x[0], 0.5, true), ctx);
}

static tj_tensor *model_mask(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    return tj_exp(tj_dropout(x[0], 0.5, true));
}

static void test_breaks(void **state)
{
    (void)state;
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 32});
    tj_compiled *c = tj_compile(model_seeded, NULL, &(tj_compile_options){.name = "seeded"});
    tj_tensor *a = tj_call(c, &x, 1), *b = tj_call(c, &x, 1);
    assert_non_null(a);
    tu_assert_close(b, a, 0, 0);   /* seeded alike each call */
    tu_assert_close(a, model_seeded(NULL, &x, 1), 0, 0);
    tu_assert_explain(c, "tj_manual_seed inside a compiled function");
    tj_compiled_free(c);
}

/* Two results, both on the tape: one partitioned backward for both. */
static int model_grad2(void *ctx, tj_tensor *const *x, int n, tj_tensor **outs, int max)
{
    (void)max;
    outs[0] = model_grad(ctx, x, n);
    outs[1] = tj_exp(outs[0]);
    return 2;
}

/* Dropout in a compiled forward whose results require grad: the partitioned
 * backward reads the mask the forward drew (saved), so each call draws what
 * eager draws, and its gradient is eager's, bit for bit; the generator ends
 * where eager leaves it; so with two results on the tape. */
static void test_grad_draws(void **state)
{
    (void)state;
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 32});
    tj_tensor *w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){8, 32}));
    assert_int_equal(tj_requires_grad(w, true), 0);
    tj_compiled *c = tj_compile(model_grad, w, &(tj_compile_options){.name = "grad"});
    for (int step = 0; step < 3; step++) {
        tj_manual_seed(4 + (uint64_t)step);
        tj_tensor *g = tj_call(c, &x, 1), *g2 = tj_call(c, &x, 1);
        assert_non_null(g);
        assert_non_null(g2);
        assert_int_equal(tj_backward(tj_sum(tj_add(g, g2), NULL, 0, false)), 0);
        tj_tensor *gw = tj_clone(tj_grad(w)), *after = tj_rand(TJ_F32, 1, (int64_t[]){3});
        tj_zero_grad(w);
        tj_manual_seed(4 + (uint64_t)step);
        tj_tensor *e = model_grad(w, &x, 1), *e2 = model_grad(w, &x, 1);
        assert_int_equal(tj_backward(tj_sum(tj_add(e, e2), NULL, 0, false)), 0);
        tu_assert_close(g, e, 0, 0);
        tu_assert_close(g2, e2, 0, 0);
        assert_true(max_diff(g, g2) > 0);   /* fresh draws each call */
        tu_assert_close(gw, tj_grad(w), 0, 0);
        tu_assert_close(after, tj_rand(TJ_F32, 1, (int64_t[]){3}), 0, 0);
        tj_zero_grad(w);
    }
    tu_assert_calls(c, 0, 6, "= dropout f32[8,32]");
    tj_compiled_free(c);

    c = tj_compile_multi(model_grad2, w, &(tj_compile_options){.name = "grad2"});
    tj_tensor *r[2], *q[2];
    tj_manual_seed(9);
    assert_int_equal(tj_call_multi(c, &x, 1, r, 2), 2);
    assert_int_equal(tj_backward(tj_sum(tj_add(r[0], r[1]), NULL, 0, false)), 0);
    tj_tensor *gw = tj_clone(tj_grad(w));
    tj_zero_grad(w);
    tj_manual_seed(9);
    assert_int_equal(model_grad2(w, &x, 1, q, 2), 2);
    assert_int_equal(tj_backward(tj_sum(tj_add(q[0], q[1]), NULL, 0, false)), 0);
    tu_assert_close(r[1], q[1], 0, 0);
    tu_assert_close(gw, tj_grad(w), 0, 0);
    tu_assert_calls(c, 0, -1, "backward of results 0, 1: joint graph partitioned");
    tj_compiled_free(c);

    /* a symbolic batch: one partitioned backward for every row count, each
     * call's draws laid out with its own sizes */
    tj_tensor *v = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){32}));
    assert_int_equal(tj_requires_grad(v, true), 0);
    c = tj_compile(model_grad, v, &(tj_compile_options){.name = "rows"});
    for (int rows = 2; rows < 12; rows++) {
        tj_tensor *xr = tj_randn(TJ_F32, 2, (int64_t[]){rows, 32}), *y[2];
        assert_int_equal(tj_mark_dynamic(xr, 0), 0);
        for (int pass = 0; pass < 2; pass++) {
            tj_manual_seed(50 + (uint64_t)rows);
            y[pass] = pass ? tj_call(c, &xr, 1) : model_grad(v, &xr, 1);
            assert_non_null(y[pass]);
            assert_int_equal(tj_backward(tj_sum(y[pass], NULL, 0, false)), 0);
            gw = tj_clone(tj_grad(v));
            tj_zero_grad(v);
            q[pass] = gw;
        }
        tu_assert_close(y[1], y[0], 0, 0);
        tu_assert_close(q[1], q[0], 1e-6, 1e-6);
    }
    tu_assert_calls(c, 0, -1, "backward of result 0 for arguments f32[s0,32]: joint graph partitioned");
    tj_compiled_free(c);
    tj_release(v);
    tj_release(w);
}

/* Two dropouts over symbolic rows, then a static draw whose counters start
 * after theirs: the call's draws are laid out with its own sizes. */
static tj_tensor *model_dyn_draws(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *h = tj_dropout(tj_dropout(tj_relu(x[0]), 0.5, true), 0.25, true);
    return tj_mul(tj_exp(h), tj_sum(tj_rand(TJ_F32, 1, (int64_t[]){7}), NULL, 0, false));
}

/* One symbolic graph serves every row count and draws, call after call,
 * what eager draws (bit for bit), leaving the generator where eager does. */
static void test_dynamic_draws(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_dyn_draws, NULL, &(tj_compile_options){.name = "dynamic"});
    const int rows[] = {3, 4, 5, 9, 4, 2};
    tj_tensor *want[6], *got[6], *after[2];
    for (int pass = 0; pass < 2; pass++) {
        tj_manual_seed(8);
        for (int k = 0; k < 6; k++) {
            tj_manual_seed(8 + (uint64_t)k / 3);   /* reseeded, and calls in a row */
            tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){rows[k], 100});
            if (pass == 0)
                want[k] = model_dyn_draws(NULL, &x, 1);
            else if (!(got[k] = tj_call(c, &x, 1)))
                fail_msg("rows %d: %s", rows[k], tj_last_error());
        }
        after[pass] = tj_rand(TJ_F32, 1, (int64_t[]){5});
    }
    for (int k = 0; k < 6; k++)
        tu_assert_close(got[k], want[k], 0, 0);
    tu_assert_close(after[1], after[0], 0, 0);
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.graphs, 2);   /* 3 rows static, then s0 */
    assert_int_equal(st.eager_calls, 0);
    tu_assert_explain(c, "1 symbolic dim, 5 calls");
    tu_assert_explain(c, "0 graph breaks");
    char *ex = tj_explain(c);
    assert_null(strstr(ex, "dims stay static"));
    assert_null(strstr(ex, "graph executor"));
    free(ex);
    tj_compiled_free(c);
}

/* A dropout over no elements: no draws, and the graph runs without a
 * reservation (random programs, autocast seed 1102415: the rand kernel asked
 * for the call's counters that no frame held). */
static void test_empty_draw(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_mask, NULL, &(tj_compile_options){.name = "empty"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){0, 5});
    for (int k = 0; k < 2; k++) {
        tj_tensor *y = tj_call(c, &x, 1);
        if (!y)
            fail_msg("call %d: %s", k, tj_last_error());
        assert_int_equal(tj_numel(y), 0);
    }
    tj_compiled_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_draws_match_eager), T(test_frozen_mask), T(test_training_step), T(test_breaks), T(test_grad_draws), T(test_dynamic_draws),
        T(test_empty_draw),
#undef T
    };
    return cmocka_run_group_tests_name("random_graph", tests, NULL, NULL);
}
