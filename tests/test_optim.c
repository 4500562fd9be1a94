/* test_optim.c - optimizers against torch.optim (tests/golden/optim, from
 * scripts/golden/optim.py): three steps of each configuration (five for
 * amsgrad) of SGD, Adam, AdamW, RMSprop and Adagrad on
 * L = sum(w * w * c + w), eager and as one compiled training step; and K
 * steps of an MLP with cross-entropy, the whole step compiled (one graph,
 * no break, its stages dumped) against the same steps eager. */
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

typedef enum { SGD, ADAM, RMSPROP, ADAGRAD } kind;

typedef struct config {
    const char *name;
    kind kind;
    int steps;
    tj_sgd_options sgd;
    tj_adam_options adam;
    tj_rmsprop_options rmsprop;
    tj_adagrad_options adagrad;
} config;

static const config configs[] = {
    {"sgd", SGD, 3, .sgd = {.lr = 0.1}},
    {"sgd_momentum", SGD, 3, .sgd = {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01}},
    {"sgd_nesterov", SGD, 3, .sgd = {.lr = 0.05, .momentum = 0.8, .nesterov = true}},
    {"adam", ADAM, 3, .adam = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}},
    {"adam_l2", ADAM, 3, .adam = {.lr = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1}},
    {"adamw", ADAM, 3,
     .adam = {.lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1, .decoupled = true}},
    {"adam_amsgrad", ADAM, 5, .adam = {.lr = 0.3, .beta1 = 0.5, .beta2 = 0.6, .eps = 1e-8, .amsgrad = true}},
    {"rmsprop", RMSPROP, 3, .rmsprop = {.lr = 0.01, .alpha = 0.99, .eps = 1e-8}},
    {"rmsprop_centered", RMSPROP, 3,
     .rmsprop = {.lr = 0.02, .alpha = 0.9, .eps = 1e-6, .weight_decay = 0.05, .momentum = 0.7, .centered = true}},
    {"adagrad", ADAGRAD, 3, .adagrad = {.lr = 0.1, .eps = 1e-10}},
    {"adagrad_decay", ADAGRAD, 3,
     .adagrad = {.lr = 0.2, .lr_decay = 0.3, .weight_decay = 0.05, .initial_accumulator_value = 0.5, .eps = 1e-8}},
};

static tj_optimizer *make_n(const config *cf, tj_tensor **w, int n)
{
    switch (cf->kind) {
    case SGD:
        return tj_sgd(w, n, &cf->sgd);
    case ADAM:
        return tj_adam(w, n, &cf->adam);
    case RMSPROP:
        return tj_rmsprop(w, n, &cf->rmsprop);
    case ADAGRAD:
        return tj_adagrad(w, n, &cf->adagrad);
    }
    return NULL;
}

static tj_optimizer *make(const config *cf, tj_tensor *w)
{
    return make_n(cf, &w, 1);
}

typedef struct step_ctx {
    tj_tensor *w, *c;
    tj_optimizer *opt;
} step_ctx;

/* One training step: zero_grad, L = sum(w*w*c + w), backward, update. */
static tj_tensor *train_step(void *p, tj_tensor *const *args, int nargs)
{
    step_ctx *s = p;
    (void)args;
    (void)nargs;
    tj_optimizer_zero_grad(s->opt);
    tj_tensor *loss = tj_sum(tj_add(tj_mul(tj_mul(s->w, s->w), s->c), s->w), NULL, 0, false);
    if (tj_backward(loss) != 0 || tj_optimizer_step(s->opt) != 0)
        return NULL;
    return tj_detach(loss);
}

static void run_config(const config *cf, bool compiled)
{
    step_ctx s = {tj_clone(tu_golden("optim", "w0")), tu_golden("optim", "c"), NULL};
    assert_int_equal(tj_requires_grad(s.w, true), 0);
    s.opt = make(cf, s.w);
    assert_non_null(s.opt);
    tj_compiled *c = compiled ? tj_compile(train_step, &s, NULL) : NULL;
    for (int k = 0; k < cf->steps; k++) {
        tj_scope_begin();
        tj_tensor *l = compiled ? tj_call(c, NULL, 0) : train_step(&s, NULL, 0);
        if (!l)
            fail_msg("%s step %d: %s", cf->name, k, tj_last_error());
        tj_scope_end();
    }
    tu_assert_close(s.w, tu_golden("optim", cf->name), 1e-12, 1e-12);
    if (compiled) {
        char *ex = tj_explain(c);
        if (!strstr(ex, " 0 graph breaks"))
            fail_msg("%s: the compiled step broke the graph:\n%s", cf->name, ex);
        free(ex);
        tj_compiled_free(c);
    }
    tj_optimizer_free(s.opt);
}

static void test_eager(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof configs / sizeof *configs; k++)
        run_config(&configs[k], false);
}

/* The whole step (zero_grad, forward, backward, update) as one compiled
 * graph whose writes go back to w, its gradient and the optimizer state. */
static void test_compiled_step(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof configs / sizeof *configs; k++)
        run_config(&configs[k], true);
}

/* ---- a whole MLP training step compiled against eager -------------------------------- */

typedef struct mlp_step {
    tj_tensor *w[4];   /* w1 [8,32], b1 [32], w2 [32,5], b2 [5] */
    tj_optimizer *opt;
} mlp_step;

static tj_tensor *mlp_train(void *p, tj_tensor *const *a, int n)
{
    (void)n;
    mlp_step *m = p;
    tj_optimizer_zero_grad(m->opt);
    tj_tensor *h = tj_relu(tj_add(tj_matmul(a[0], m->w[0]), m->w[1]));
    tj_tensor *loss = tj_cross_entropy(tj_add(tj_matmul(h, m->w[2]), m->w[3]), a[1]);
    if (tj_backward(loss) != 0 || tj_optimizer_step(m->opt) != 0)
        return NULL;
    return tj_detach(loss);
}

static void mlp_make(mlp_step *m, const config *cf)
{
    static const int64_t shapes[4][2] = {{8, 32}, {32, 0}, {32, 5}, {5, 0}};
    tj_manual_seed(3);
    for (int k = 0; k < 4; k++) {
        m->w[k] = tj_keep(tj_mul_s(tj_randn(TJ_F32, shapes[k][1] ? 2 : 1, shapes[k]), 0.3));
        assert_int_equal(tj_requires_grad(m->w[k], true), 0);
    }
    m->opt = make_n(cf, m->w, 4);
    assert_non_null(m->opt);
}

static void mlp_free(mlp_step *m)
{
    tj_optimizer_free(m->opt);
    for (int k = 0; k < 4; k++)
        tj_release(m->w[k]);
}

/* K = 6 steps on new batches: the compiled weights and losses equal eager's
 * within 2e-5 relative + 1e-6 absolute (f32; the plan fuses and sums in
 * another order); one graph, no break, no eager call; TJIT_DUMP shows the
 * traced step (forward, backward and update in one graph) and its fused form.
 * The update kernels of the two weight matrices store the new weights and
 * the optimizer's state for them (stored: SGD's momentum buffers, Adam's
 * moments) straight into their tensors, whose memory stays the same (the
 * biases' updates are column-sum kernels: copied after the call); the
 * memory dump names them. */
static void run_mlp(const config *cf, int stored)
{
    mlp_step e, c;
    mlp_make(&e, cf);
    mlp_make(&c, cf);
    char dir[] = "/tmp/tjit-dump-XXXXXX", cmd[512];
    assert_non_null(mkdtemp(dir));
    setenv("TJIT_DUMP", "graph,fuse,memory", 1);
    setenv("TJIT_DUMP_DIR", dir, 1);
    tj_compiled *step = tj_compile(mlp_train, &c, &(tj_compile_options){.name = "mlp_step"});
    const void *data[4];
    for (int k = 0; k < 4; k++)
        data[k] = tj_data(c.w[k]);
    for (int k = 0; k < 6; k++) {
        tj_scope_begin();
        tj_manual_seed(100 + (uint64_t)k);
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){16, 8});
        tj_tensor *y = tj_cast(tj_floor(tj_mul_s(tj_rand(TJ_F32, 1, (int64_t[]){16}), 5)), TJ_I64);
        tj_tensor *args[2] = {x, y};
        tj_tensor *le = mlp_train(&e, args, 2), *lc = tj_call(step, args, 2);
        if (!le || !lc)
            fail_msg("%s step %d: %s", cf->name, k, tj_last_error());
        tu_assert_close(lc, le, 2e-5, 1e-6);
        tj_scope_end();
    }
    unsetenv("TJIT_DUMP");
    unsetenv("TJIT_DUMP_DIR");
    for (int k = 0; k < 4; k++) {
        tu_assert_close(c.w[k], e.w[k], 2e-5, 1e-6);
        assert_ptr_equal(tj_data(c.w[k]), data[k]);
    }
    tj_compiled_stats st;
    tj_compiled_stats_get(step, &st);
    assert_int_equal(st.plan.writes_stored, stored);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.breaks, 0);
    assert_int_equal((int)st.eager_calls, 0);
    char *ex = tj_explain(step);
    char how[64];
    snprintf(how, sizeof how, "(%d stored there by the plan's kernels", stored);
    if (!strstr(ex, " 0 graph breaks") || !strstr(ex, "4 gradients set") || !strstr(ex, how))
        fail_msg("%s:\n%s", cf->name, ex);
    free(ex);
    /* the traced graph: the forward's cross_entropy, the backward's matmuls
     * (2 forward, 3 backward), and the update's writes as outputs */
    snprintf(cmd, sizeof cmd, "grep -c ' = matmul ' %s/*-mlp_step.graph.tir | grep -qx '[5-9]' && "
             "grep -q ' = cross_entropy ' %s/*-mlp_step.graph.tir && ls %s/*-mlp_step.fuse.* >/dev/null && "
             "test $(grep -o ' into %%param[0-9]*' %s/*-mlp_step.memory.txt | wc -l) = %d",
             dir, dir, dir, dir, stored);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "cat %s/*-mlp_step.graph.tir >&2", dir);
        (void)!system(cmd);
        fail_msg("%s: the dumped stages lack the step's parts", cf->name);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    tj_compiled_free(step);
    mlp_free(&e);
    mlp_free(&c);
}

static void test_compiled_mlp_step(void **state)
{
    (void)state;
    run_mlp(&configs[1], 4);   /* sgd_momentum (weight decay): w1, w2 and their buffers */
    run_mlp(&configs[5], 6);   /* adamw: w1, w2 and their two moments each */
    run_mlp(&configs[8], 8);   /* rmsprop_centered: w1, w2, square_avg, grad_avg, momentum_buffer */
    run_mlp(&configs[10], 4);  /* adagrad_decay: w1, w2 and their sums */
}

static void test_bad_options(void **state)
{
    (void)state;
    tj_tensor *w = tj_zeros(TJ_F32, 1, (int64_t[]){3});
    tu_assert_error(tj_sgd(&w, 1, &(tj_sgd_options){.lr = -1}), "lr", NULL);
    tu_assert_error(tj_sgd(&w, 1, &(tj_sgd_options){.lr = 1, .nesterov = true}), "nesterov", NULL);
    tu_assert_error(tj_adam(&w, 1, &(tj_adam_options){.lr = 1, .beta1 = 1}), "betas", NULL);
    tu_assert_error(tj_rmsprop(&w, 1, &(tj_rmsprop_options){.lr = 1, .alpha = 1.5}), "alpha in [0, 1]", NULL);
    tu_assert_error(tj_rmsprop(&w, 1, &(tj_rmsprop_options){.lr = 1, .momentum = -1}), "momentum", NULL);
    tu_assert_error(tj_adagrad(&w, 1, &(tj_adagrad_options){.lr = 1, .lr_decay = -0.1}), "lr_decay", NULL);
    tu_assert_error(tj_adagrad(&w, 1, &(tj_adagrad_options){.lr = NAN}), "adagrad", NULL);
    tu_assert_error(tj_sgd(&w, 1, &(tj_sgd_options){.lr = INFINITY}), "sgd: lr inf: must be finite", NULL);
    tj_tensor *i = tj_zeros(TJ_I64, 1, (int64_t[]){3});
    tu_assert_error(tj_sgd(&i, 1, NULL), "not a float", NULL);
    tj_tensor *none = NULL;
    tj_clear_error();
    tu_assert_error(tj_adam(&none, 1, NULL), "NULL", NULL);
    assert_int_equal(tj_optimizer_step(NULL), -1);
    /* no gradient yet: the parameter is left alone */
    tj_optimizer *o = tj_sgd(&w, 1, NULL);
    assert_int_equal(tj_optimizer_step(o), 0);
    tu_assert_close(w, tj_zeros(TJ_F32, 1, (int64_t[]){3}), 0, 0);
    tj_optimizer_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_eager), T(test_compiled_step), T(test_compiled_mlp_step), T(test_bad_options),
#undef T
    };
    return cmocka_run_group_tests_name("optim", tests, NULL, NULL);
}
