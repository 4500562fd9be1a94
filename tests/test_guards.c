/* test_guards.c - what a compiled call checks before it runs: captured
 * weights by identity (a released and replaced weight is traced again, never
 * read stale or after its release), the version of a tensor whose values the
 * trace read, a training step that writes its own weights without retracing,
 * the argument count, and handles used after tj_release. Compiled results are
 * always compared with eager ones. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

/* A 0-dim f64 tensor the test owns alone (refs 1, in no scope), so that
 * tj_release frees it. */
static tj_tensor *scalar_owned(double v)
{
    tj_scope_begin();
    tj_tensor *k = tj_keep(tj_full(TJ_F64, 0, NULL, v));
    tj_scope_end();
    return k;
}

static tj_tensor *weight(int64_t a, int64_t b)
{
    tj_scope_begin();
    tj_tensor *w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){a, b}));
    tj_scope_end();
    return w;
}

static void assert_explain_has(tj_compiled *c, const char *what, bool want)
{
    char *text = tj_explain(c);
    assert_non_null(text);
    if (!strstr(text, what) == want)
        fail_msg("explain %s \"%s\":\n%s", want ? "lacks" : "has", what, text);
    free(text);
}

static tj_compiled_stats stats(tj_compiled *c)
{
    tj_compiled_stats s;
    assert_int_equal(tj_compiled_stats_get(c, &s), 0);
    return s;
}

typedef struct mlp {
    tj_tensor *w1, *w2;
} mlp;

/* relu(x @ w1) @ w2: the weights are reached through ctx */
static tj_tensor *model_mlp(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    mlp *m = ctx;
    return tj_matmul(tj_relu(tj_matmul(args[0], m->w1)), m->w2);
}

/* Release a weight and point ctx at a new one of the same shape: the next
 * call uses the new one (the old graph is dropped, a new one traced), and it
 * keeps doing so through more swaps than the recompile limit allows graphs. */
static void test_swapped_weight(void **state)
{
    (void)state;
    tj_manual_seed(3);
    mlp m = {weight(8, 16), weight(16, 4)};
    tj_compiled *c = tj_compile(model_mlp, &m, &(tj_compile_options){.name = "mlp"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){5, 8});
    tu_assert_close(tj_call(c, &x, 1), model_mlp(&m, &x, 1), 1e-5, 1e-5);
    for (int k = 0; k < 10; k++) {
        tj_release(m.w1);
        m.w1 = weight(8, 16);
        tu_assert_close(tj_call(c, &x, 1), model_mlp(&m, &x, 1), 1e-5, 1e-5);
        tu_assert_close(tj_call(c, &x, 1), model_mlp(&m, &x, 1), 1e-5, 1e-5);
    }
    assert_explain_has(c, "captured tensor 0 was released (graph 1 dropped)", true);
    assert_explain_has(c, "1 graph captured", true);
    assert_explain_has(c, "recompile limit", false);
    tj_compiled_stats s = stats(c);
    assert_int_equal(s.eager_calls, 0);
    assert_int_equal(s.calls, 21);
    /* the second weight too */
    tj_release(m.w2);
    m.w2 = weight(16, 4);
    tu_assert_close(tj_call(c, &x, 1), model_mlp(&m, &x, 1), 1e-5, 1e-5);
    assert_explain_has(c, "captured tensor 1 was released", true);
    tj_compiled_free(c);
    tj_release(m.w1);
    tj_release(m.w2);
}

/* The graph reads a capture's storage on every call: an in-place update made
 * outside the compiled function is seen, without a retrace. */
static void test_inplace_update_seen(void **state)
{
    (void)state;
    tj_manual_seed(4);
    mlp m = {weight(8, 16), weight(16, 4)};
    tj_compiled *c = tj_compile(model_mlp, &m, NULL);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){5, 8});
    tu_assert_close(tj_call(c, &x, 1), model_mlp(&m, &x, 1), 1e-5, 1e-5);
    assert_int_equal(tj_copy_(m.w2, tj_randn(TJ_F32, 2, (int64_t[]){16, 4})), 0);
    assert_int_equal(tj_copy_(m.w1, tj_full(TJ_F32, 0, NULL, 0.5)), 0);
    tu_assert_close(tj_call(c, &x, 1), model_mlp(&m, &x, 1), 1e-5, 1e-5);
    assert_int_equal(stats(c).graphs, 1);
    assert_explain_has(c, "recompiled", false);
    tj_compiled_free(c);
    tj_release(m.w1);
    tj_release(m.w2);
}

typedef struct scaled {
    tj_tensor *scale;   /* 0-dim: its value is read with tj_item while traced */
} scaled;

static tj_tensor *model_scaled(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    scaled *s = ctx;
    return tj_mul_s(tj_exp(args[0]), tj_item(s->scale));
}

/* A value the trace read from a captured tensor is baked into the graph: the
 * tensor's version is guarded, so an in-place change retraces. */
static void test_value_read_is_versioned(void **state)
{
    (void)state;
    scaled s = {scalar_owned(2.0)};
    tj_compiled *c = tj_compile(model_scaled, &s, NULL);
    tj_tensor *x = tj_randn(TJ_F32, 1, (int64_t[]){6});
    tu_assert_close(tj_call(c, &x, 1), model_scaled(&s, &x, 1), 1e-6, 1e-6);
    tu_assert_close(tj_call(c, &x, 1), model_scaled(&s, &x, 1), 1e-6, 1e-6);
    assert_int_equal(stats(c).graphs, 1);
    assert_int_equal(tj_copy_(s.scale, tj_full(TJ_F64, 0, NULL, 5.0)), 0);
    tu_assert_close(tj_call(c, &x, 1), model_scaled(&s, &x, 1), 1e-6, 1e-6);
    assert_explain_has(c, "captured tensor 0 was changed in place, and the trace read its values",
                       true);
    assert_explain_has(c, "version: the trace read its values", true);
    tj_compiled_free(c);
    tj_release(s.scale);
}

typedef struct step_ctx {
    tj_tensor *w, *c;
    tj_optimizer *opt;
} step_ctx;

static tj_tensor *train_step(void *p, tj_tensor *const *args, int nargs)
{
    step_ctx *s = p;
    tj_optimizer_zero_grad(s->opt);
    tj_tensor *y = tj_matmul(args[0], s->w);
    tj_tensor *loss = tj_mean(tj_square(tj_sub(y, s->c)), NULL, 0, false);
    if (tj_backward(loss) != 0 || tj_optimizer_step(s->opt) != 0)
        return NULL;
    (void)nargs;
    return tj_detach(loss);
}

/* A compiled training step writes its weight, gradient and optimizer state
 * back after each call (bumping their versions): it is traced once, and
 * matches the same steps run eagerly. */
static void test_training_step_traces_once(void **state)
{
    (void)state;
    tj_manual_seed(5);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){6, 3});
    step_ctx s[2];
    for (int k = 0; k < 2; k++) {
        tj_manual_seed(6);
        s[k] = (step_ctx){weight(3, 2), weight(6, 2), NULL};
        assert_int_equal(tj_requires_grad(s[k].w, true), 0);
        s[k].opt = tj_adam(&s[k].w, 1, &(tj_adam_options){.lr = 0.1, .beta1 = 0.9,
                                                           .beta2 = 0.999, .eps = 1e-8});
        assert_non_null(s[k].opt);
    }
    tj_compiled *c = tj_compile(train_step, &s[0], NULL);
    for (int k = 0; k < 3; k++) {
        tj_tensor *got = tj_call(c, &x, 1);
        if (!got)
            fail_msg("step %d: %s", k, tj_last_error());
        tu_assert_close(got, train_step(&s[1], &x, 1), 1e-5, 1e-6);
    }
    tu_assert_close(s[0].w, s[1].w, 1e-5, 1e-6);
    tj_compiled_stats st = stats(c);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.breaks, 0);
    assert_int_equal(st.eager_calls, 0);
    assert_explain_has(c, "recompiled", false);
    tj_compiled_free(c);
    for (int k = 0; k < 2; k++) {
        tj_optimizer_free(s[k].opt);
        tj_release(s[k].w);
        tj_release(s[k].c);
    }
}

static tj_tensor *model_one_arg(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    return tj_neg(args[0]);
}

/* The first call fixes the argument count; another count is an error (the
 * model is not run on too few arguments). */
static void test_nargs_checked(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_one_arg, NULL, &(tj_compile_options){.name = "one"});
    tj_tensor *x = tj_randn(TJ_F32, 1, (int64_t[]){4});
    tu_assert_close(tj_call(c, &x, 1), tj_neg(x), 0, 0);
    tu_assert_error(tj_call(c, NULL, 0), "tj_call(one): 0 args given, the model takes 1", NULL);
    tu_assert_error(tj_call(c, (tj_tensor *[]){x, x}, 2), "2 args given, the model takes 1",
                    NULL);
    tj_tensor *outs[1];
    assert_int_equal(tj_call_multi(c, NULL, 0, outs, 1), -1);
    tu_assert_error(NULL, "0 args given", NULL);
    tu_assert_close(tj_call(c, &x, 1), tj_neg(x), 0, 0);
    assert_int_equal(stats(c).graphs, 1);
    tj_compiled_free(c);
}

/* A released handle used again is an error naming the call, not a crash:
 * its header is poisoned and kept from reuse for a while (RT_QUARANTINE). */
static void test_use_after_release(void **state)
{
    (void)state;
    tj_tensor *x = weight(2, 2);
    tj_tensor *y = tj_randn(TJ_F32, 2, (int64_t[]){2, 2});
    tj_release(x);
    tu_assert_error(tj_neg(x), "neg: input 0 is a released tensor (used after tj_release)", NULL);
    tu_assert_error(tj_add(y, x), "add: input 1 is a released tensor", NULL);
    tu_assert_error(tj_reshape(x, 2, (int64_t[]){2, 2}), "released tensor", NULL);
    assert_true(isnan(tj_item(x)));
    tu_assert_error(NULL, "item: the tensor was released", NULL);
    tu_assert_error(tj_data(x), "data: the tensor was released", NULL);
    assert_int_equal(tj_copy_(y, x), -1);
    tu_assert_error(NULL, "copy_: input 1 is a released tensor", NULL);
    assert_int_equal(tj_copy_(x, y), -1);
    tu_assert_error(NULL, "copy_: input 0 is a released tensor", NULL);
    char b[32];
    assert_string_equal(tj_describe(x, b, sizeof b), "released");
    tj_compiled *c = tj_compile(model_one_arg, NULL, &(tj_compile_options){.name = "one"});
    tu_assert_error(tj_call(c, &x, 1), "tj_call(one): arg 0 is a released tensor", NULL);
    tj_compiled_free(c);
    /* released twice: reported, nothing freed twice */
    tj_release(x);
    tu_assert_error(NULL, "tj_release: the tensor was released", NULL);
    assert_null(tj_retain(x));
    tu_assert_error(NULL, "tj_retain", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_swapped_weight),         T(test_inplace_update_seen),
        T(test_value_read_is_versioned), T(test_training_step_traces_once),
        T(test_nargs_checked),          T(test_use_after_release),
#undef T
    };
    return cmocka_run_group_tests_name("guards", tests, NULL, NULL);
}
