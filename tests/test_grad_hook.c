/* test_grad_hook.c - gradient ready-hooks (tj_set_grad_hook, what libtjit_dist's
 * data parallelism is built on) and tj_set_grad: a hook runs once per
 * backward, after the last part of its leaf's gradient, in eager and
 * compiled backwards; its failure fails the backward; a compiled training
 * step that would read a hooked gradient breaks to eager; a compiled
 * forward + backward sets each hooked gradient, and runs its hook, as soon
 * as the plan's step that makes it has run (backward order, no break), and
 * a compiled update chained after it matches eager. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

typedef struct seen {
    int calls;
    char order[8];           /* tags of the leaves, in hook order */
    double grad0;            /* tj_grad(leaf)[0] when its hook ran */
    bool fail;
} seen;

typedef struct tagged {
    seen *s;
    char tag;
} tagged;

static int hook(tj_tensor *leaf, void *ctx)
{
    tagged *t = ctx;
    if (t->s->fail) {
        tj_set_error("hook %c refused", t->tag);
        return -1;
    }
    t->s->order[t->s->calls++ % 7] = t->tag;
    t->s->grad0 = tj_get(tj_grad(leaf), (int64_t[]){0});
    return 0;
}

static tj_tensor *vec3(double a, double b, double c)
{
    return tu_tensor(TJ_F32, 1, (int64_t[]){3}, (double[]){a, b, c});
}

/* w reaches the loss through two ops: the hook sees the sum of both parts. */
static void test_hook_after_last_part(void **state)
{
    (void)state;
    seen s = {0};
    tagged t = {&s, 'w'};
    tj_tensor *w = vec3(1, 2, 3);
    tj_requires_grad(w, true);
    assert_int_equal(tj_set_grad_hook(w, hook, &t), 0);
    tj_tensor *l = tj_sum(tj_add(tj_mul(w, w), tj_mul_s(w, 3)), NULL, 0, false);   /* d/dw = 2w + 3 */
    assert_int_equal(tj_backward(l), 0);
    assert_int_equal(s.calls, 1);
    assert_true(s.grad0 == 5.0);
    /* a second backward: the hook sees the accumulated gradient */
    assert_int_equal(tj_backward(tj_sum(tj_mul_s(w, 2), NULL, 0, false)), 0);
    assert_int_equal(s.calls, 2);
    assert_true(s.grad0 == 7.0);
    /* removed: no call */
    assert_int_equal(tj_set_grad_hook(w, NULL, NULL), 0);
    assert_int_equal(tj_backward(tj_sum(w, NULL, 0, false)), 0);
    assert_int_equal(s.calls, 2);
}

/* The leaf used last in the forward is ready first. */
static void test_hook_order(void **state)
{
    (void)state;
    seen s = {0};
    tagged ta = {&s, 'a'}, tb = {&s, 'b'};
    tj_tensor *a = vec3(1, 2, 3), *b = vec3(4, 5, 6);
    tj_requires_grad(a, true);
    tj_requires_grad(b, true);
    tj_set_grad_hook(a, hook, &ta);
    tj_set_grad_hook(b, hook, &tb);
    tj_tensor *h = tj_exp(tj_mul(a, a));
    tj_tensor *l = tj_sum(tj_mul(h, b), NULL, 0, false);
    assert_int_equal(tj_backward(l), 0);
    assert_int_equal(s.calls, 2);
    assert_memory_equal(s.order, "ba", 2);
}

static void test_hook_errors(void **state)
{
    (void)state;
    seen s = {.fail = true};
    tagged t = {&s, 'w'};
    tj_tensor *w = vec3(1, 2, 3);
    tu_assert_error(tj_set_grad_hook(w, hook, &t) == 0 ? (void *)1 : NULL, "only a leaf that requires grad", NULL);
    tj_requires_grad(w, true);
    tu_assert_error(tj_set_grad_hook(tj_mul(w, w), hook, &t) == 0 ? (void *)1 : NULL, "only a leaf", NULL);
    tu_assert_error(tj_set_grad_hook(NULL, hook, &t) == 0 ? (void *)1 : NULL, "NULL", NULL);
    assert_int_equal(tj_set_grad_hook(w, hook, &t), 0);
    tu_assert_error(tj_backward(tj_sum(tj_mul(w, w), NULL, 0, false)) == 0 ? (void *)1 : NULL,
                    "hook w refused", NULL);
    /* after the failure the next backward starts clean */
    s.fail = false;
    assert_int_equal(tj_backward(tj_sum(tj_mul(w, w), NULL, 0, false)), 0);
    assert_int_equal(s.calls, 1);
}

static void test_set_grad(void **state)
{
    (void)state;
    tj_tensor *w = vec3(1, 2, 3);
    tu_assert_error(tj_set_grad(w, vec3(0, 0, 0)) == 0 ? (void *)1 : NULL, "requires grad", NULL);
    tj_requires_grad(w, true);
    assert_int_equal(tj_set_grad(w, vec3(7, 8, 9)), 0);
    tu_assert_close(tj_grad(w), vec3(7, 8, 9), 0, 0);
    tj_tensor *g = tj_grad(w);
    assert_int_equal(tj_set_grad(w, vec3(1, 1, 1)), 0);
    assert_ptr_equal(tj_grad(w), g);   /* in place: the gradient keeps its identity */
    tu_assert_close(g, vec3(1, 1, 1), 0, 0);
    tu_assert_error(tj_set_grad(w, tj_ones(TJ_F32, 1, (int64_t[]){4})) == 0 ? (void *)1 : NULL,
                    "dtype and shape", NULL);
    tu_assert_error(tj_set_grad(w, tj_ones(TJ_F64, 1, (int64_t[]){3})) == 0 ? (void *)1 : NULL,
                    "dtype and shape", NULL);
    tu_assert_error(tj_set_grad(w, NULL) == 0 ? (void *)1 : NULL, "NULL", NULL);
}

static tj_tensor *weighted(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    return tj_sum(tj_mul(tj_exp(a[0]), ctx), NULL, 0, false);
}

/* A compiled call's backward: the hook runs once, on the whole gradient. */
static void test_hook_compiled_backward(void **state)
{
    (void)state;
    seen s = {0};
    tagged t = {&s, 'w'};
    tj_tensor *w = vec3(1, 2, 3);
    tj_requires_grad(w, true);
    tj_set_grad_hook(w, hook, &t);
    tj_compiled *c = tj_compile(weighted, w, NULL);
    tj_tensor *x = vec3(0, 1, 2);
    for (int k = 0; k < 2; k++) {
        tj_zero_grad(w);
        assert_int_equal(tj_backward(tj_call(c, &x, 1)), 0);
        assert_int_equal(s.calls, k + 1);
        assert_true(s.grad0 == 1.0);   /* exp(0) */
        tu_assert_close(tj_grad(w), tj_exp(x), 1e-6, 0);
    }
    tj_compiled_free(c);
}

typedef struct stepctx {
    tj_tensor *w;
    tj_optimizer *opt;
} stepctx;

static tj_tensor *train_step(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    stepctx *m = ctx;
    tj_tensor *loss = tj_sum(tj_mul(tj_mul(a[0], m->w), m->w), NULL, 0, false);
    if (tj_backward(loss) != 0 || tj_optimizer_step(m->opt) != 0)
        return NULL;
    tj_optimizer_zero_grad(m->opt);
    return loss;
}

/* A whole training step compiled: its update's read of the hooked leaf's
 * gradient after the backward is a graph break (the update must not read a
 * gradient the hook may still change), so it runs eagerly, the hook runs each
 * step and the update is eager's; explain says why. */
static void test_hooked_step_breaks(void **state)
{
    (void)state;
    seen s = {0};
    tagged t = {&s, 'w'};
    stepctx m = {vec3(1, 2, 3), NULL};
    tj_requires_grad(m.w, true);
    m.opt = tj_sgd(&m.w, 1, &(tj_sgd_options){.lr = 0.1});
    tj_set_grad_hook(m.w, hook, &t);
    tj_compiled *c = tj_compile(train_step, &m, NULL);
    tj_tensor *x = vec3(1, 1, 1);
    for (int k = 0; k < 3; k++)
        assert_non_null(tj_call(c, &x, 1));
    assert_int_equal(s.calls, 3);
    tj_compiled_stats st;
    tj_compiled_stats_get(c, &st);
    assert_int_equal(st.breaks, 1);
    assert_int_equal(st.graphs, 0);
    char *ex = tj_explain(c);
    if (!strstr(ex, "a read of the gradient of a leaf with a ready-hook"))
        fail_msg("explain:\n%s", ex);
    free(ex);
    /* w <- w - 0.1 * 2w, three times */
    tu_assert_close(m.w, vec3(0.512, 1.024, 1.536), 1e-6, 0);
    tj_compiled_free(c);
    tj_optimizer_free(m.opt);
}

/* ---- a compiled forward + backward into hooked leaves ------------------------ */

static tj_tensor *randn_seeded(uint64_t seed, int ndim, const int64_t *shape)
{
    tj_manual_seed(seed);
    return tj_randn(TJ_F32, ndim, shape);
}

typedef struct mlp {
    tj_tensor *w[4];         /* w1 [4,8], b1 [8], w2 [8,3], b2 [3] */
    tj_optimizer *opt;
    char order[8];           /* tags of the hooks, in order */
    int calls;
    bool w1_unset_at_layer2; /* when a layer-2 hook ran, w1 had no gradient yet */
    bool first;
} mlp;

typedef struct mlp_tag {
    mlp *m;
    char tag;                /* 'A' w1, 'a' b1, 'B' w2, 'b' b2 */
} mlp_tag;

static int mlp_hook(tj_tensor *leaf, void *ctx)
{
    mlp_tag *t = ctx;
    (void)leaf;
    t->m->order[t->m->calls++ % 7] = t->tag;
    if (t->m->first && (t->tag == 'B' || t->tag == 'b'))
        t->m->w1_unset_at_layer2 &= tj_grad(t->m->w[0]) == NULL;
    return 0;
}

/* zero_grad, L = sum(tanh(x w1 + b1) w2 + b2)^2), backward: the
 * gradients are the call's writes, no update inside. */
static tj_tensor *fwd_bwd(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    mlp *m = ctx;
    tj_optimizer_zero_grad(m->opt);
    tj_tensor *h = tj_tanh(tj_add(tj_matmul(a[0], m->w[0]), m->w[1]));
    tj_tensor *y = tj_add(tj_matmul(h, m->w[2]), m->w[3]);
    tj_tensor *loss = tj_sum(tj_mul(y, y), NULL, 0, false);
    return tj_backward(loss) == 0 ? tj_detach(loss) : NULL;
}

static tj_tensor *update(void *ctx, tj_tensor *const *a, int n)
{
    (void)a;
    (void)n;
    mlp *m = ctx;
    return tj_optimizer_step(m->opt) == 0 ? tj_detach(m->w[3]) : NULL;
}

static void mlp_init(mlp *m, mlp_tag *tags, bool adam)
{
    static const int64_t shapes[4][2] = {{4, 8}, {8, 0}, {8, 3}, {3, 0}};
    static const char names[4] = {'A', 'a', 'B', 'b'};
    *m = (mlp){0};
    m->w1_unset_at_layer2 = true;
    for (int k = 0; k < 4; k++) {
        m->w[k] = tj_keep(tj_mul_s(randn_seeded(k + 1, shapes[k][1] ? 2 : 1, shapes[k]), 0.5));
        tj_requires_grad(m->w[k], true);
        tags[k] = (mlp_tag){m, names[k]};
        assert_int_equal(tj_set_grad_hook(m->w[k], mlp_hook, &tags[k]), 0);
    }
    m->opt = adam ? tj_adam(m->w, 4, &(tj_adam_options){.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999,
                                                        .eps = 1e-8, .weight_decay = 0.01, .decoupled = true})
                  : tj_sgd(m->w, 4, &(tj_sgd_options){.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01});
    assert_non_null(m->opt);
}

static void mlp_free(mlp *m)
{
    tj_optimizer_free(m->opt);
    for (int k = 0; k < 4; k++)
        tj_release(m->w[k]);
}

/* Between backward and update, what data parallelism's sync does: each
 * gradient replaced (in place) by another value, here half of it. */
static void fake_sync(mlp *m)
{
    for (int k = 0; k < 4; k++)
        assert_int_equal(tj_set_grad(m->w[k], tj_mul_s(tj_grad(m->w[k]), 0.5)), 0);
}

/* K steps of [forward + backward, sync, update], eager and compiled (two
 * handles chained, each one graph with no break): the same weights within
 * 1e-5 (f32; the compiled plans sum in another order), the hooks once per
 * gradient per step in the same layer order as eager (layer 2 before
 * layer 1), the first ones while the plan still had w1's gradient to make. */
static void run_chained(bool adam)
{
    mlp e, c;
    mlp_tag te[4], tc[4];
    mlp_init(&e, te, adam);
    mlp_init(&c, tc, adam);
    tj_compiled *fb = tj_compile(fwd_bwd, &c, &(tj_compile_options){.name = "fwd_bwd"});
    tj_compiled *up = tj_compile(update, &c, &(tj_compile_options){.name = "update"});
    enum { K = 4 };
    for (int k = 0; k < K; k++) {
        tj_scope_begin();
        tj_tensor *x = randn_seeded(100 + k, 2, (int64_t[]){5, 4});
        e.first = c.first = k == 0;
        e.calls = c.calls = 0;
        tj_tensor *le = fwd_bwd(&e, &x, 1), *lc = tj_call(fb, &x, 1);
        if (!le || !lc)
            fail_msg("step %d: %s", k, tj_last_error());
        tu_assert_close(lc, le, 1e-5, 1e-5);
        assert_int_equal(c.calls, 4);
        assert_int_equal(e.calls, 4);
        /* backward order: both of layer 2 before both of layer 1 */
        assert_true(strchr("Bb", c.order[0]) && strchr("Bb", c.order[1]));
        assert_true(strchr("Aa", c.order[2]) && strchr("Aa", c.order[3]));
        for (int i = 0; i < 4; i++)
            tu_assert_close(tj_grad(c.w[i]), tj_grad(e.w[i]), 1e-5, 1e-5);
        fake_sync(&e);
        fake_sync(&c);
        assert_int_equal(tj_optimizer_step(e.opt), 0);
        if (!tj_call(up, NULL, 0))
            fail_msg("update %d: %s", k, tj_last_error());
        tj_scope_end();
    }
    assert_true(c.w1_unset_at_layer2);
    for (int i = 0; i < 4; i++)
        tu_assert_close(c.w[i], e.w[i], 1e-5, 1e-5);
    tj_compiled_stats st;
    tj_compiled_stats_get(fb, &st);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.breaks, 0);
    assert_int_equal((int)st.eager_calls, 0);
    tj_compiled_stats_get(up, &st);
    assert_int_equal(st.graphs, 1);   /* the gradients kept their identity: no retrace */
    assert_int_equal(st.breaks, 0);
    if (st.eager_calls) {
        char *ux = tj_explain(up);
        fail_msg("update: %lu eager calls:\n%s", st.eager_calls, ux);
    }
    char *ex = tj_explain(fb);
    if (!strstr(ex, " 0 graph breaks") || !strstr(ex, "ready-hook"))
        fail_msg("explain:\n%s", ex);
    free(ex);
    tj_compiled_free(fb);
    tj_compiled_free(up);
    mlp_free(&e);
    mlp_free(&c);
}

static void test_hooked_backward_compiled_sgd(void **state)
{
    (void)state;
    run_chained(false);
}

static void test_hooked_backward_compiled_adamw(void **state)
{
    (void)state;
    run_chained(true);
}

/* Hooks set or removed after the trace: the graph is traced again (the
 * hooked gradients are set in the plan, the others at the end). */
static void test_hook_guard(void **state)
{
    (void)state;
    mlp m;
    mlp_tag t[4];
    mlp_init(&m, t, false);
    tj_compiled *fb = tj_compile(fwd_bwd, &m, NULL);
    tj_tensor *x = randn_seeded(7, 2, (int64_t[]){5, 4});
    assert_non_null(tj_call(fb, &x, 1));
    assert_int_equal(m.calls, 4);
    tj_set_grad_hook(m.w[0], NULL, NULL);
    assert_non_null(tj_call(fb, &x, 1));
    assert_int_equal(m.calls, 7);
    tj_compiled_stats st;
    tj_compiled_stats_get(fb, &st);
    assert_int_equal(st.graphs, 2);
    tj_compiled_free(fb);
    mlp_free(&m);
}

static tj_tensor *fwd_only(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    mlp *m = ctx;
    tj_tensor *h = tj_tanh(tj_add(tj_matmul(a[0], m->w[0]), m->w[1]));
    tj_tensor *y = tj_add(tj_matmul(h, m->w[2]), m->w[3]);
    return tj_sum(tj_mul(y, y), NULL, 0, false);
}

/* A compiled forward's partitioned backward (a compiled call on the tape):
 * the hooks run as its plan makes each gradient, layer 2 before layer 1. */
static void test_hooked_joint_backward(void **state)
{
    (void)state;
    mlp m;
    mlp_tag t[4];
    mlp_init(&m, t, false);
    tj_compiled *f = tj_compile(fwd_only, &m, NULL);
    tj_tensor *x = randn_seeded(9, 2, (int64_t[]){5, 4});
    for (int k = 0; k < 2; k++) {
        m.calls = 0;
        m.first = true;
        tj_optimizer_zero_grad(m.opt);
        assert_int_equal(tj_backward(tj_call(f, &x, 1)), 0);
        assert_int_equal(m.calls, 4);
        assert_true(strchr("Bb", m.order[0]) && strchr("Bb", m.order[1]));
        assert_true(strchr("Aa", m.order[2]) && strchr("Aa", m.order[3]));
    }
    assert_true(m.w1_unset_at_layer2);
    tj_tensor *want[4];
    m.first = false;
    tj_optimizer_zero_grad(m.opt);
    assert_int_equal(tj_backward(fwd_only(&m, &x, 1)), 0);
    for (int i = 0; i < 4; i++)
        want[i] = tj_clone(tj_grad(m.w[i]));
    tj_optimizer_zero_grad(m.opt);
    assert_int_equal(tj_backward(tj_call(f, &x, 1)), 0);
    for (int i = 0; i < 4; i++)
        tu_assert_close(tj_grad(m.w[i]), want[i], 1e-5, 1e-5);
    tj_compiled_stats st;
    tj_compiled_stats_get(f, &st);
    assert_int_equal(st.breaks, 0);
    tj_compiled_free(f);
    mlp_free(&m);
}

/* A hook that fails stops the compiled call with its error. */
static int refuse(tj_tensor *leaf, void *ctx)
{
    (void)leaf;
    (void)ctx;
    tj_set_error("hook refused");
    return -1;
}

static void test_hook_fails_compiled(void **state)
{
    (void)state;
    mlp m;
    mlp_tag t[4];
    mlp_init(&m, t, false);
    tj_compiled *fb = tj_compile(fwd_bwd, &m, NULL);
    tj_tensor *x = randn_seeded(7, 2, (int64_t[]){5, 4});
    assert_non_null(tj_call(fb, &x, 1));
    tj_set_grad_hook(m.w[2], refuse, NULL);
    tj_set_grad_hook(m.w[3], refuse, NULL);
    tu_assert_error(tj_call(fb, &x, 1), "hook refused", NULL);
    tj_compiled_free(fb);
    mlp_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_hook_after_last_part), T(test_hook_order), T(test_hook_errors), T(test_set_grad),
        T(test_hook_compiled_backward), T(test_hooked_step_breaks),
        T(test_hooked_backward_compiled_sgd), T(test_hooked_backward_compiled_adamw),
        T(test_hook_guard), T(test_hook_fails_compiled), T(test_hooked_joint_backward),
#undef T
    };
    return cmocka_run_group_tests_name("grad_hook", tests, NULL, NULL);
}
