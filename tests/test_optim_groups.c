/* test_optim_groups.c - parameter groups against torch.optim's
 * param_groups (tests/golden/optim, scripts/golden/optim.py): w in group 0
 * and b in group 1 with options of their own, three steps of SGD, AdamW,
 * RMSprop and Adagrad on L = sum(w w c + w) + sum(b b cb + b), eager and as
 * one compiled step; a cosine schedule over both groups' base lrs
 * (tj_optimizer_schedule); ReduceLROnPlateau (tj_plateau) on a fixed metric
 * sequence; the state listing; the errors. */
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

typedef struct step_ctx {
    tj_tensor *w, *b, *c, *cb;
    tj_optimizer *opt;
} step_ctx;

/* The two-group optimizer of each golden configuration (as optim.py's). */
static tj_optimizer *make(const char *name, step_ctx *s)
{
    tj_optimizer *o = NULL;
    int g = -1;
    if (!strcmp(name, "sgd")) {
        o = tj_sgd(&s->w, 1, &(tj_sgd_options){.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01});
        g = o ? tj_sgd_add_group(o, &s->b, 1, &(tj_sgd_options){.lr = 0.2}) : -1;
    } else if (!strcmp(name, "adamw")) {
        o = tj_adam(&s->w, 1, &(tj_adam_options){.lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                                  .weight_decay = 0.1, .decoupled = true});
        g = o ? tj_adam_add_group(o, &s->b, 1, &(tj_adam_options){.lr = 0.2, .beta1 = 0.8, .beta2 = 0.9,
                                                                   .eps = 1e-8, .decoupled = true})
              : -1;
    } else if (!strcmp(name, "rmsprop")) {
        o = tj_rmsprop(&s->w, 1, &(tj_rmsprop_options){.lr = 0.01, .alpha = 0.99, .eps = 1e-8,
                                                        .momentum = 0.5, .centered = true});
        g = o ? tj_rmsprop_add_group(o, &s->b, 1, &(tj_rmsprop_options){.lr = 0.01, .alpha = 0.99, .eps = 1e-8})
              : -1;
    } else if (!strcmp(name, "adagrad")) {
        o = tj_adagrad(&s->w, 1, &(tj_adagrad_options){.lr = 0.1, .lr_decay = 0.3, .eps = 1e-10});
        g = o ? tj_adagrad_add_group(o, &s->b, 1, &(tj_adagrad_options){.lr = 0.3, .eps = 1e-10}) : -1;
    } else if (!strcmp(name, "plateau")) {
        o = tj_sgd(&s->w, 1, &(tj_sgd_options){.lr = 0.1});
        g = o ? tj_sgd_add_group(o, &s->b, 1, &(tj_sgd_options){.lr = 0.05}) : -1;
    } else if (!strcmp(name, "sched")) {
        o = tj_sgd(&s->w, 1, &(tj_sgd_options){.lr = 0.1});
        g = o ? tj_sgd_add_group(o, &s->b, 1, &(tj_sgd_options){.lr = 0.02}) : -1;
    }
    if (!o || g != 1)
        fail_msg("%s: %s", name, tj_last_error());
    assert_int_equal(tj_optimizer_num_groups(o), 2);
    return o;
}

static tj_tensor *train_step(void *p, tj_tensor *const *args, int nargs)
{
    step_ctx *s = p;
    (void)args;
    (void)nargs;
    tj_optimizer_zero_grad(s->opt);
    tj_tensor *lw = tj_sum(tj_add(tj_mul(tj_mul(s->w, s->w), s->c), s->w), NULL, 0, false);
    tj_tensor *lb = tj_sum(tj_add(tj_mul(tj_mul(s->b, s->b), s->cb), s->b), NULL, 0, false);
    if (tj_backward(tj_add(lw, lb)) != 0 || tj_optimizer_step(s->opt) != 0)
        return NULL;
    return tj_detach(lw);
}

static void ctx_make(step_ctx *s, const char *name)
{
    *s = (step_ctx){tj_clone(tu_golden("optim", "w0")), tj_clone(tu_golden("optim", "b0")),
                    tu_golden("optim", "c"), tu_golden("optim", "cb"), NULL};
    assert_int_equal(tj_requires_grad(s->w, true), 0);
    assert_int_equal(tj_requires_grad(s->b, true), 0);
    s->opt = make(name, s);
}

static void assert_no_break(tj_compiled *c, const char *name)
{
    char *ex = tj_explain(c);
    if (!strstr(ex, " 0 graph breaks") || !strstr(ex, "1 graph"))
        fail_msg("%s: the compiled step broke the graph or retraced:\n%s", name, ex);
    free(ex);
}

static void run_config(const char *name, bool compiled)
{
    step_ctx s;
    ctx_make(&s, name);
    tj_compiled *c = compiled ? tj_compile(train_step, &s, NULL) : NULL;
    for (int k = 0; k < 3; k++) {
        tj_scope_begin();
        if (!(compiled ? tj_call(c, NULL, 0) : train_step(&s, NULL, 0)))
            fail_msg("%s step %d: %s", name, k, tj_last_error());
        tj_scope_end();
    }
    char key[64];
    snprintf(key, sizeof key, "groups_%s_w", name);
    tu_assert_close(s.w, tu_golden("optim", key), 1e-12, 1e-12);
    snprintf(key, sizeof key, "groups_%s_b", name);
    tu_assert_close(s.b, tu_golden("optim", key), 1e-12, 1e-12);
    if (compiled) {
        assert_no_break(c, name);
        tj_compiled_free(c);
    }
    tj_optimizer_free(s.opt);
}

static const char *const configs[] = {"sgd", "adamw", "rmsprop", "adagrad"};

static void test_groups_eager(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof configs / sizeof *configs; k++)
        run_config(configs[k], false);
}

static void test_groups_compiled(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof configs / sizeof *configs; k++)
        run_config(configs[k], true);
}

/* CosineAnnealingLR(T_max 6, eta_min 0.001) over groups at 0.1 and 0.02:
 * each group anneals from its own base; group 1's lr at each step and the
 * weights after six steps as torch's, eagerly and compiled (no retrace). */
static void test_groups_schedule(void **state)
{
    (void)state;
    tj_lr_schedule cos = {.kind = TJ_LR_COSINE, .total = 6, .min_lr = 0.001};
    const double *want_lr = tj_data(tu_golden("optim", "groups_sched_lr1"));
    for (int compiled = 0; compiled < 2; compiled++) {
        step_ctx s;
        ctx_make(&s, "sched");
        tj_compiled *c = compiled ? tj_compile(train_step, &s, NULL) : NULL;
        for (int k = 0; k < 6; k++) {
            assert_int_equal(tj_optimizer_schedule(s.opt, &cos, k), 0);
            assert_true(fabs(tj_optimizer_group_lr(s.opt, 1) - want_lr[k]) < 1e-15);
            assert_true(tj_optimizer_lr(s.opt) == tj_optimizer_group_lr(s.opt, 0));
            tj_scope_begin();
            if (!(compiled ? tj_call(c, NULL, 0) : train_step(&s, NULL, 0)))
                fail_msg("step %d: %s", k, tj_last_error());
            tj_scope_end();
        }
        tu_assert_close(s.w, tu_golden("optim", "groups_sched_w"), 1e-12, 1e-12);
        tu_assert_close(s.b, tu_golden("optim", "groups_sched_b"), 1e-12, 1e-12);
        if (c) {
            assert_no_break(c, "sched");
            tj_compiled_free(c);
        }
        /* one lr for all groups, then one group's */
        assert_int_equal(tj_optimizer_set_lr(s.opt, 0.25), 0);
        assert_true(tj_optimizer_group_lr(s.opt, 0) == 0.25 && tj_optimizer_group_lr(s.opt, 1) == 0.25);
        assert_int_equal(tj_optimizer_set_group_lr(s.opt, 1, 0.5), 0);
        assert_true(tj_optimizer_group_lr(s.opt, 0) == 0.25 && tj_optimizer_group_lr(s.opt, 1) == 0.5);
        tj_optimizer_free(s.opt);
    }
}

/* The listing: each group's lr, the step, then the slots where their group
 * keeps them (amsgrad in group 1 only); indices count across groups. */
static void test_groups_state(void **state)
{
    (void)state;
    tj_tensor *p[3] = {tj_zeros(TJ_F32, 1, (int64_t[]){2}), tj_zeros(TJ_F32, 1, (int64_t[]){3}),
                       tj_zeros(TJ_F64, 0, NULL)};
    tj_optimizer *o = tj_adam(p, 1, NULL);
    assert_non_null(o);
    assert_int_equal(tj_adam_add_group(o, p + 1, 2, &(tj_adam_options){.lr = 0.5, .beta1 = 0.9, .beta2 = 0.99,
                                                                         .amsgrad = true}),
                     1);
    static const char *const names[] = {"lr", "lr.1", "step", "exp_avg.0", "exp_avg.1", "exp_avg.2",
                                         "exp_avg_sq.0", "exp_avg_sq.1", "exp_avg_sq.2",
                                         "max_exp_avg_sq.1", "max_exp_avg_sq.2"};
    int n = (int)(sizeof names / sizeof *names);
    assert_int_equal(tj_optimizer_num_state(o), n);
    for (int i = 0; i < n; i++) {
        char name[32];
        tj_tensor *t = tj_optimizer_state(o, i, name, sizeof name);
        assert_non_null(t);
        assert_string_equal(name, names[i]);
        if (i >= 3)
            assert_int_equal(tj_dtype_of(t), tj_dtype_of(p[name[strlen(name) - 1] - '0']));
    }
    assert_true(tj_item(tj_optimizer_state(o, 1, NULL, 0)) == 0.5);
    tu_assert_error(tj_optimizer_state(o, n, NULL, 0), "index 11 out of [0, 11)", NULL);
    tj_optimizer_free(o);
}

static tj_tensor *add_inside(void *p, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *w = tj_zeros(TJ_F32, 1, (int64_t[]){3});
    if (tj_sgd_add_group(p, &w, 1, NULL) >= 0)
        return tj_add_s(args[0], 1);
    return NULL;
}

static void test_groups_errors(void **state)
{
    (void)state;
    tj_tensor *w = tj_zeros(TJ_F32, 1, (int64_t[]){3}), *b = tj_zeros(TJ_F32, 1, (int64_t[]){3});
    tj_optimizer *o = tj_sgd(&w, 1, NULL);
    assert_non_null(o);
    assert_int_equal(tj_adam_add_group(o, &b, 1, NULL), -1);
    tu_assert_error(NULL, "adam add_group: the optimizer is sgd", NULL);
    assert_int_equal(tj_sgd_add_group(o, &w, 1, NULL), -1);
    tu_assert_error(NULL, "sgd add_group: parameter 0 is already optimized (as parameter 0)", NULL);
    tj_tensor *twice[2] = {b, b};
    assert_int_equal(tj_sgd_add_group(o, twice, 2, NULL), -1);
    tu_assert_error(NULL, "parameter 1 is already optimized (as parameter 0)", NULL);
    assert_int_equal(tj_sgd_add_group(o, &b, 1, &(tj_sgd_options){.lr = 0.1, .nesterov = true}), -1);
    tu_assert_error(NULL, "sgd add_group", "nesterov", NULL);
    assert_int_equal(tj_sgd_add_group(NULL, &b, 1, NULL), -1);
    tu_assert_error(NULL, "the optimizer is NULL", NULL);
    assert_int_equal(tj_optimizer_num_groups(o), 1);
    assert_int_equal(tj_optimizer_set_group_lr(o, 1, 0.1), -1);
    tu_assert_error(NULL, "optimizer_set_group_lr: group 1 out of [0, 1)", NULL);
    assert_true(isnan(tj_optimizer_group_lr(o, -1)));
    tu_assert_error(NULL, "group -1 out of [0, 1)", NULL);
    assert_int_equal(tj_optimizer_set_group_lr(o, 0, -2), -1);
    tu_assert_error(NULL, "lr -2 for group 0", NULL);
    assert_int_equal(tj_optimizer_schedule(o, &(tj_lr_schedule){.kind = TJ_LR_STEP}, 3), -1);
    tu_assert_error(NULL, "step_size", NULL);
    assert_int_equal(tj_optimizer_schedule(NULL, &(tj_lr_schedule){.kind = TJ_LR_CONSTANT}, 3), -1);
    tu_assert_error(NULL, "optimizer_schedule: the optimizer is NULL", NULL);
    /* a group added while traced: a graph break, the call runs eagerly */
    tj_compiled *c = tj_compile(add_inside, o, NULL);
    assert_non_null(tj_call(c, &w, 1));
    tu_assert_calls(c, 1, -1, "tj_sgd_add_group inside the compiled function");
    tj_compiled_free(c);
    assert_int_equal(tj_optimizer_num_groups(o), 2);
    /* a group made after steps joins in from then on */
    assert_int_equal(tj_sgd_add_group(o, &b, 1, &(tj_sgd_options){.lr = 0.5}), 2);
    assert_int_equal(tj_requires_grad(b, true), 0);
    assert_int_equal(tj_backward(tj_sum(tj_mul_s(b, 2), NULL, 0, false)), 0);
    assert_int_equal(tj_optimizer_step(o), 0);
    tu_assert_close(b, tj_full(TJ_F32, 1, (int64_t[]){3}, -1), 0, 0);
    tu_assert_close(w, tj_zeros(TJ_F32, 1, (int64_t[]){3}), 0, 0);
    tj_optimizer_free(o);
}

/* ReduceLROnPlateau over groups at 0.1 and 0.05 on optim.py's 14 metrics,
 * in min mode with a relative threshold and a cooldown, and in max mode with
 * an absolute one: both groups' lrs after each step as torch's; a compiled
 * step between the plateau's steps reads the lr it set without a retrace. */
static void test_groups_plateau(void **state)
{
    (void)state;
    static const struct {
        const char *golden;
        tj_plateau_options opt;
    } cases[] = {
        {"plateau_min_rel", {.factor = 0.5, .patience = 1, .threshold = 0.01, .cooldown = 1, .min_lr = 0.01,
                             .eps = 1e-8}},
        {"plateau_max_abs", {.maximize = true, .factor = 0.3, .patience = 2, .threshold = 0.05,
                             .threshold_abs = true, .eps = 1e-8}},
    };
    tj_tensor *metrics = tu_golden("optim", "plateau_metrics");
    const double *m = tj_data(metrics);
    int64_t n = tj_shape(metrics)[0];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const double *want = tj_data(tu_golden("optim", cases[k].golden));
        step_ctx s;
        ctx_make(&s, "plateau");
        tj_compiled *c = tj_compile(train_step, &s, NULL);
        tj_plateau *p = tj_plateau_new(s.opt, &cases[k].opt);
        assert_non_null(p);
        int reductions = 0;
        for (int64_t t = 0; t < n; t++) {
            double before = tj_optimizer_group_lr(s.opt, 0);
            int r = tj_plateau_step(p, m[t]);
            assert_true(r == 0 || r == 1);
            reductions += r;
            assert_int_equal(r, tj_optimizer_group_lr(s.opt, 0) != before);
            for (int g = 0; g < 2; g++)
                if (fabs(tj_optimizer_group_lr(s.opt, g) - want[t * 2 + g]) > 1e-15)
                    fail_msg("%s step %lld group %d: lr %.17g, torch's %.17g", cases[k].golden, (long long)t, g,
                             tj_optimizer_group_lr(s.opt, g), want[t * 2 + g]);
            tj_scope_begin();
            if (!tj_call(c, NULL, 0))
                fail_msg("%s step %lld: %s", cases[k].golden, (long long)t, tj_last_error());
            tj_scope_end();
        }
        assert_true(reductions > 0);
        assert_no_break(c, cases[k].golden);
        tj_plateau_free(p);
        tj_compiled_free(c);
        tj_optimizer_free(s.opt);
    }
}

static tj_tensor *plateau_inside(void *p, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    if (tj_plateau_step(p, 1.0) < 0)
        return NULL;
    return tj_add_s(args[0], 1);
}

/* Bad options, a NaN metric, NULLs; a step inside a traced function is a
 * graph break, counted once (by the eager run after it): with patience 0 a
 * second count of the same metric would reduce. */
static void test_plateau_errors(void **state)
{
    (void)state;
    tj_tensor *w = tj_zeros(TJ_F32, 1, (int64_t[]){3});
    tj_optimizer *o = tj_sgd(&w, 1, &(tj_sgd_options){.lr = 0.1});
    assert_non_null(o);
    assert_null(tj_plateau_new(NULL, NULL));
    tu_assert_error(NULL, "plateau: the optimizer is NULL", NULL);
    assert_null(tj_plateau_new(o, &(tj_plateau_options){.factor = 1}));
    tu_assert_error(NULL, "plateau: factor 1", "need factor in [0, 1)", NULL);
    assert_null(tj_plateau_new(o, &(tj_plateau_options){.factor = 0.5, .patience = -1}));
    tu_assert_error(NULL, "patience -1", NULL);
    assert_null(tj_plateau_new(o, &(tj_plateau_options){.factor = 0.5, .threshold = NAN}));
    tu_assert_error(NULL, "threshold nan", NULL);
    assert_null(tj_plateau_new(o, &(tj_plateau_options){.factor = 0.5, .min_lr = -1}));
    tu_assert_error(NULL, "min_lr -1", NULL);
    assert_int_equal(tj_plateau_step(NULL, 1), -1);
    tu_assert_error(NULL, "plateau step: the plateau is NULL", NULL);
    tj_plateau *p = tj_plateau_new(o, &(tj_plateau_options){.factor = 0.5});
    assert_non_null(p);
    assert_int_equal(tj_plateau_step(p, NAN), -1);
    tu_assert_error(NULL, "plateau step: the metric is NaN", NULL);
    tj_compiled *c = tj_compile(plateau_inside, p, NULL);
    assert_non_null(tj_call(c, &w, 1));
    tu_assert_calls(c, 1, -1, "tj_plateau_step inside the compiled function");
    tj_compiled_free(c);
    assert_true(tj_optimizer_group_lr(o, 0) == 0.1);
    assert_int_equal(tj_plateau_step(p, 1.0), 1);   /* a bad step past patience 0 */
    assert_true(fabs(tj_optimizer_group_lr(o, 0) - 0.05) < 1e-17);
    tj_plateau_free(p);
    /* the defaults: patience 10, factor 0.1 */
    p = tj_plateau_new(o, NULL);
    for (int k = 0; k < 11; k++)
        assert_int_equal(tj_plateau_step(p, 2.0), 0);
    assert_int_equal(tj_plateau_step(p, 2.0), 1);
    assert_true(fabs(tj_optimizer_group_lr(o, 0) - 0.005) < 1e-17);
    tj_plateau_free(p);
    tj_plateau_free(NULL);
    tj_optimizer_free(o);
}

int main(void)
{
    tu_use_build_cache();
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_groups_eager), T(test_groups_compiled), T(test_groups_schedule), T(test_groups_state),
        T(test_groups_errors), T(test_groups_plateau), T(test_plateau_errors),
#undef T
    };
    return tu_run_jit_suite("optim_groups", tests, sizeof tests / sizeof *tests, "parameter groups");
}
