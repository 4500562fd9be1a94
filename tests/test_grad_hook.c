/* test_grad_hook.c - gradient ready-hooks (tj_set_grad_hook, what libtjit_dist's
 * data parallelism is built on) and tj_set_grad: a hook runs once per
 * backward, after the last part of its leaf's gradient, in eager and
 * compiled backwards; its failure fails the backward; a compiled training
 * step that would read a hooked gradient breaks to eager. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

/* A whole training step compiled: its backward into a hooked leaf is a
 * graph break (the update must not read a gradient the hook has not seen),
 * so it runs eagerly, the hook runs each step and the update is eager's. */
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
    /* w <- w - 0.1 * 2w, three times */
    tu_assert_close(m.w, vec3(0.512, 1.024, 1.536), 1e-6, 0);
    tj_compiled_free(c);
    tj_optimizer_free(m.opt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_hook_after_last_part), T(test_hook_order), T(test_hook_errors), T(test_set_grad),
        T(test_hook_compiled_backward), T(test_hooked_step_breaks),
#undef T
    };
    return cmocka_run_group_tests_name("grad_hook", tests, NULL, NULL);
}
