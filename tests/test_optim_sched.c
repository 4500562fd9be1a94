/* test_optim_sched.c - the training loop's helpers against PyTorch
 * (tests/golden/optim, from scripts/golden/optim.py): learning-rate
 * schedules (tj_lr_at against torch.optim.lr_scheduler), a learning rate set
 * between calls of a compiled training step (read as a tensor: one graph, the
 * new value every call), gradient clipping by norm and by value (eager and
 * traced without a break), and the optimizer's state saved and restored for
 * a checkpoint; with the error of each entry point. */
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

static const int64_t milestones[] = {2, 5, 9};
static const tj_lr_schedule warmup_cosine = {
    .kind = TJ_LR_COSINE, .warmup = 3, .warmup_factor = 0.1, .total = 8, .min_lr = 0.01};

/* The lr of steps 0..11 (base 0.1) against each torch scheduler's. */
static void test_schedules(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        tj_lr_schedule s;
    } cases[] = {
        {"step", {.kind = TJ_LR_STEP, .step_size = 3, .gamma = 0.5}},
        {"exponential", {.kind = TJ_LR_EXPONENTIAL, .gamma = 0.9}},
        {"cosine", {.kind = TJ_LR_COSINE, .total = 10, .min_lr = 0.001}},
        {"linear", {.kind = TJ_LR_LINEAR, .start_factor = 0.25, .end_factor = 0.75, .total = 4}},
        {"multistep", {.kind = TJ_LR_MULTISTEP, .milestones = milestones, .nmilestones = 3, .gamma = 0.3}},
        {"polynomial", {.kind = TJ_LR_POLYNOMIAL, .total = 8, .power = 2}},
        {"onecycle", {.kind = TJ_LR_ONECYCLE, .total = 12, .pct_start = 0.3, .div_factor = 25,
                      .final_div_factor = 1e4}},
        {"onecycle3", {.kind = TJ_LR_ONECYCLE, .total = 12, .pct_start = 0.25, .div_factor = 10,
                       .final_div_factor = 100, .three_phase = true, .anneal_linear = true}},
        {"warmup_cosine", warmup_cosine},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char name[32];
        snprintf(name, sizeof name, "lr_%s", cases[k].name);
        tj_tensor *want = tu_golden("optim", name);
        double got[12];
        for (int t = 0; t < 12; t++)
            got[t] = tj_lr_at(&cases[k].s, 0.1, t);
        tu_assert_close(tu_tensor(TJ_F64, 1, (int64_t[]){12}, got), want, 1e-13, 1e-15);
    }
    tj_lr_schedule c = {.kind = TJ_LR_CONSTANT};
    assert_true(tj_lr_at(&c, 0.25, 1000) == 0.25);
}

typedef struct step_ctx {
    tj_tensor *w, *c;
    tj_optimizer *opt;
    double max_norm;   /* > 0: clip_grad_norm before the update */
    double norm_type;  /* clip_fn's */
} step_ctx;

static tj_tensor *loss_of(step_ctx *s)
{
    return tj_sum(tj_add(tj_mul(tj_mul(s->w, s->w), s->c), s->w), NULL, 0, false);
}

/* zero_grad, L = sum(w*w*c + w), backward, [clip], update; returns L */
static tj_tensor *train_step(void *p, tj_tensor *const *args, int nargs)
{
    step_ctx *s = p;
    (void)args;
    (void)nargs;
    tj_optimizer_zero_grad(s->opt);
    tj_tensor *loss = loss_of(s);
    if (tj_backward(loss) != 0)
        return NULL;
    if (s->max_norm > 0 && !tj_clip_grad_norm(&s->w, 1, s->max_norm, 2))
        return NULL;
    if (tj_optimizer_step(s->opt) != 0)
        return NULL;
    return tj_detach(loss);
}

/* n steps, eager or through one compiled step, the lr set from sched before
 * each (sched NULL: left alone); w against the golden want. */
static void run_steps(step_ctx *s, bool compiled, const tj_lr_schedule *sched, double base, int n,
                      const char *want)
{
    tj_compiled *c = compiled ? tj_compile(train_step, s, &(tj_compile_options){.name = "step"}) : NULL;
    for (int t = 0; t < n; t++) {
        if (sched) {
            double lr = tj_lr_at(sched, base, t);
            assert_int_equal(tj_optimizer_set_lr(s->opt, lr), 0);
            assert_true(tj_optimizer_lr(s->opt) == lr);
        }
        tj_scope_begin();
        if (!(compiled ? tj_call(c, NULL, 0) : train_step(s, NULL, 0)))
            fail_msg("%s step %d: %s", want, t, tj_last_error());
        tj_scope_end();
    }
    tu_assert_close(s->w, tu_golden("optim", want), 1e-12, 1e-12);
    if (c) {
        tu_assert_one_graph(c, 0);   /* one graph for every lr: the step reads the lr tensor */
        tj_compiled_free(c);
    }
}

static void test_lr_set_between_calls(void **state)
{
    (void)state;
    for (int compiled = 0; compiled < 2; compiled++) {
        step_ctx s = {tj_clone(tu_golden("optim", "w0")), tu_golden("optim", "c"), NULL, 0, 0};
        assert_int_equal(tj_requires_grad(s.w, true), 0);
        s.opt = tj_sgd(&s.w, 1, &(tj_sgd_options){.lr = 0.1, .momentum = 0.9});
        assert_non_null(s.opt);
        run_steps(&s, compiled, &warmup_cosine, 0.1, 8, "sched");
        tj_optimizer_free(s.opt);
    }
}

/* The gradient at w0 clipped to norm 2 in the 2-, inf- and 1.5-norm, and
 * the total norm returned, eager and from a compiled function that returns
 * the total (its gradient set after the call). */
static tj_tensor *clip_fn(void *p, tj_tensor *const *args, int nargs)
{
    step_ctx *s = p;
    (void)args;
    (void)nargs;
    tj_zero_grad(s->w);
    if (tj_backward(loss_of(s)) != 0)
        return NULL;
    return tj_clip_grad_norm(&s->w, 1, 2.0, s->norm_type);
}

static void test_clip_norm(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        double p;
    } norms[] = {{"2", 2}, {"inf", INFINITY}, {"1p5", 1.5}};
    for (size_t k = 0; k < sizeof norms / sizeof *norms; k++) {
        char gname[32], tname[32];
        snprintf(gname, sizeof gname, "clip_%s_grad", norms[k].name);
        snprintf(tname, sizeof tname, "clip_%s_total", norms[k].name);
        for (int compiled = 0; compiled < 2; compiled++) {
            step_ctx s = {tj_clone(tu_golden("optim", "w0")), tu_golden("optim", "c"), NULL, 0, norms[k].p};
            assert_int_equal(tj_requires_grad(s.w, true), 0);
            tj_compiled *c = compiled ? tj_compile(clip_fn, &s, NULL) : NULL;
            tj_tensor *total = compiled ? tj_call(c, NULL, 0) : clip_fn(&s, NULL, 0);
            if (!total)
                fail_msg("clip %s: %s", norms[k].name, tj_last_error());
            if (c)
                tu_assert_calls(c, 0, -1, " 0 graph breaks");
            tu_assert_close_any(total, tu_golden("optim", tname), 1e-13, 0);
            tu_assert_close(tj_grad(s.w), tu_golden("optim", gname), 1e-13, 1e-15);
            tj_compiled_free(c);
            tj_release(s.w);
        }
    }
    /* a norm under max_norm leaves the gradient alone; no gradient: total 0 */
    tj_tensor *w = tj_ones(TJ_F32, 1, (int64_t[]){4});
    assert_int_equal(tj_requires_grad(w, true), 0);
    tj_tensor *t0 = tj_clip_grad_norm(&w, 1, 1.0, 2);
    assert_non_null(t0);
    assert_true(tj_item(t0) == 0);
    assert_int_equal(tj_backward(tj_sum(tj_mul_s(w, 0.25), NULL, 0, false)), 0);
    tj_tensor *t1 = tj_clip_grad_norm(&w, 1, 1.0, 2);
    assert_non_null(t1);
    assert_true(fabs(tj_item(t1) - 0.5) < 1e-7);
    tu_assert_close(tj_grad(w), tj_full(TJ_F32, 1, (int64_t[]){4}, 0.25), 0, 0);
}

static void test_clip_value(void **state)
{
    (void)state;
    step_ctx s = {tj_clone(tu_golden("optim", "w0")), tu_golden("optim", "c"), NULL, 0, 0};
    assert_int_equal(tj_requires_grad(s.w, true), 0);
    assert_int_equal(tj_backward(loss_of(&s)), 0);
    assert_int_equal(tj_clip_grad_value(&s.w, 1, 3.0), 0);
    tu_assert_close(tj_grad(s.w), tu_golden("optim", "clip_value_grad"), 0, 0);
}

/* Three SGD steps with the gradient clipped to norm 1.5 before each, eager
 * and as one compiled step (no break: the total norm stays a tensor). */
static void test_clip_in_step(void **state)
{
    (void)state;
    for (int compiled = 0; compiled < 2; compiled++) {
        step_ctx s = {tj_clone(tu_golden("optim", "w0")), tu_golden("optim", "c"), NULL, 1.5, 0};
        assert_int_equal(tj_requires_grad(s.w, true), 0);
        s.opt = tj_sgd(&s.w, 1, &(tj_sgd_options){.lr = 0.1});
        run_steps(&s, compiled, NULL, 0, 3, "clip_train");
        tj_optimizer_free(s.opt);
    }
}

/* A checkpoint: Adam (amsgrad) and RMSprop (centered, momentum) run 3
 * steps; their state and weights are saved as .npy, loaded into a fresh
 * optimizer over fresh weights, and both run 2 more steps (compiled, for the
 * resumed one): the weights agree bit for bit with the uninterrupted run. */
static void checkpoint(tj_optimizer *(*make)(tj_tensor **w), const char *first_names)
{
    char dir[] = "/tmp/tjit-ckpt-XXXXXX", path[256], name[64];
    assert_non_null(mkdtemp(dir));
    step_ctx a = {tj_clone(tu_golden("optim", "w0")), tu_golden("optim", "c"), NULL, 0, 0};
    assert_int_equal(tj_requires_grad(a.w, true), 0);
    a.opt = make(&a.w);
    assert_non_null(a.opt);
    assert_int_equal(tj_optimizer_set_lr(a.opt, 0.03), 0);
    for (int t = 0; t < 3; t++)
        assert_non_null(train_step(&a, NULL, 0));
    int n = tj_optimizer_num_state(a.opt);
    char names[256] = "";
    for (int i = 0; i < n; i++) {
        tj_tensor *st = tj_optimizer_state(a.opt, i, name, sizeof name);
        assert_non_null(st);
        strcat(names, i ? " " : "");
        strcat(names, name);
        snprintf(path, sizeof path, "%s/%s.npy", dir, name);
        assert_int_equal(tj_save_npy(st, path), 0);
    }
    assert_string_equal(names, first_names);
    snprintf(path, sizeof path, "%s/w.npy", dir);
    assert_int_equal(tj_save_npy(a.w, path), 0);

    step_ctx b = {tj_keep(tj_load_npy(path)), a.c, NULL, 0, 0};
    assert_int_equal(tj_requires_grad(b.w, true), 0);
    b.opt = make(&b.w);
    assert_int_equal(tj_optimizer_num_state(b.opt), n);
    for (int i = 0; i < n; i++) {
        tj_tensor *st = tj_optimizer_state(b.opt, i, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s.npy", dir, name);
        assert_int_equal(tj_copy_(st, tj_load_npy(path)), 0);
    }
    assert_true(tj_optimizer_lr(b.opt) == 0.03);
    tj_compiled *c = tj_compile(train_step, &b, NULL);
    for (int t = 0; t < 2; t++) {
        assert_non_null(train_step(&a, NULL, 0));
        assert_non_null(tj_call(c, NULL, 0));
    }
    tu_assert_close(b.w, a.w, 1e-15, 1e-15);
    tj_compiled_free(c);
    tj_optimizer_free(a.opt);
    tj_optimizer_free(b.opt);
    tj_release(a.w);
    tj_release(b.w);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(system(path), 0);
}

static tj_optimizer *make_adam(tj_tensor **w)
{
    return tj_adam(w, 1, &(tj_adam_options){.lr = 0.1, .beta1 = 0.5, .beta2 = 0.6, .eps = 1e-8, .amsgrad = true});
}

static tj_optimizer *make_rmsprop(tj_tensor **w)
{
    return tj_rmsprop(w, 1, &(tj_rmsprop_options){.lr = 0.1, .alpha = 0.9, .eps = 1e-8, .momentum = 0.5,
                                                  .centered = true});
}

static void test_checkpoint(void **state)
{
    (void)state;
    checkpoint(make_adam, "lr step exp_avg.0 exp_avg_sq.0 max_exp_avg_sq.0");
    checkpoint(make_rmsprop, "lr square_avg.0 momentum_buffer.0 grad_avg.0");
}

static tj_tensor *set_lr_inside(void *p, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    if (tj_optimizer_set_lr(p, 0.5) != 0)
        return NULL;
    return tj_add_s(args[0], 1);
}

static void test_errors(void **state)
{
    (void)state;
    tj_tensor *w = tj_keep(tj_zeros(TJ_F32, 1, (int64_t[]){3}));
    tj_optimizer *o = tj_sgd(&w, 1, NULL);
    assert_int_equal(tj_optimizer_set_lr(o, -1), -1);
    assert_non_null(strstr(tj_last_error(), "finite and >= 0"));
    assert_int_equal(tj_optimizer_set_lr(o, NAN), -1);
    assert_int_equal(tj_optimizer_set_lr(NULL, 1), -1);
    assert_true(isnan(tj_optimizer_lr(NULL)));
    assert_true(tj_optimizer_lr(o) == 1e-3);
    /* inside a trace the value would be baked into the graph: a break, the
     * function runs eagerly and sets it */
    tj_compiled *c = tj_compile(set_lr_inside, o, NULL);
    tj_tensor *y = tj_call(c, &w, 1);
    assert_non_null(y);
    tu_assert_close(y, tj_ones(TJ_F32, 1, (int64_t[]){3}), 0, 0);
    assert_true(tj_optimizer_lr(o) == 0.5);
    tu_assert_calls(c, 1, -1, "tj_optimizer_set_lr inside the compiled function");
    tj_compiled_free(c);
    tu_assert_error(tj_optimizer_state(o, 1, NULL, 0), "index 1 out of [0, 1)", NULL);
    tu_assert_error(tj_optimizer_state(o, -1, NULL, 0), "out of", NULL);
    assert_int_equal(tj_optimizer_num_state(NULL), 0);
    tj_optimizer_free(o);

    tu_assert_error(tj_clip_grad_norm(&w, 1, -1, 2), "max_norm", NULL);
    tu_assert_error(tj_clip_grad_norm(&w, 1, 1, 0), "norm_type", NULL);
    tj_tensor *none = NULL;
    tu_assert_error(tj_clip_grad_norm(&none, 1, 1, 2), "parameter 0 is NULL", NULL);
    tu_assert_error(tj_clip_grad_norm(NULL, 2, 1, 2), "2 parameters", NULL);
    assert_int_equal(tj_clip_grad_value(&w, 1, -1), -1);
    assert_non_null(strstr(tj_last_error(), "clip_value"));
    tj_clear_error();
    assert_int_equal(tj_clip_grad_value(&none, 1, 1), -1);
    tj_clear_error();

    assert_true(isnan(tj_lr_at(NULL, 1, 0)));
    assert_true(isnan(tj_lr_at(&(tj_lr_schedule){.kind = TJ_LR_STEP}, 1, 0)));
    assert_non_null(strstr(tj_last_error(), "step_size > 0"));
    assert_true(isnan(tj_lr_at(&(tj_lr_schedule){.kind = TJ_LR_COSINE, .total = 10}, 1, -1)));
    assert_true(isnan(tj_lr_at(&(tj_lr_schedule){.kind = TJ_LR_LINEAR, .total = 0}, 1, 0)));
    assert_true(isnan(tj_lr_at(&(tj_lr_schedule){.kind = TJ_LR_CONSTANT, .warmup = 2, .warmup_factor = 2}, 1, 0)));
    assert_true(isnan(tj_lr_at(&(tj_lr_schedule){.kind = (tj_lr_kind)99}, 1, 0)));
    assert_non_null(strstr(tj_last_error(), "unknown schedule kind 99"));
    assert_true(isnan(tj_lr_at(&(tj_lr_schedule){.kind = TJ_LR_MULTISTEP, .nmilestones = 2, .gamma = 0.5}, 1, 0)));
    assert_non_null(strstr(tj_last_error(), "milestones for nmilestones >= 0 (MULTISTEP)"));
    assert_true(isnan(tj_lr_at(&(tj_lr_schedule){.kind = TJ_LR_MULTISTEP, .milestones = (const int64_t[]){4, 4},
                                                 .nmilestones = 2, .gamma = 0.5},
                               1, 0)));
    assert_non_null(strstr(tj_last_error(), "milestones must increase (4 after 4)"));
    assert_true(isnan(tj_lr_at(&(tj_lr_schedule){.kind = TJ_LR_POLYNOMIAL, .total = 4, .power = -1}, 1, 0)));
    assert_non_null(strstr(tj_last_error(), "power >= 0 (POLYNOMIAL)"));
    tj_lr_schedule oc = {.kind = TJ_LR_ONECYCLE, .total = 10, .pct_start = 0.3, .div_factor = 25,
                         .final_div_factor = 1e4};
    assert_true(isnan(tj_lr_at(&oc, 1, 11)));
    assert_non_null(strstr(tj_last_error(), "ONECYCLE step 11 past total 10"));
    oc.div_factor = 0;
    assert_true(isnan(tj_lr_at(&oc, 1, 0)));
    assert_non_null(strstr(tj_last_error(), "div factors > 0 (ONECYCLE)"));
    tj_clear_error();
    tj_release(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_schedules), T(test_lr_set_between_calls), T(test_clip_norm), T(test_clip_value),
        T(test_clip_in_step), T(test_checkpoint), T(test_errors),
#undef T
    };
    tu_use_build_cache();
    return tu_run_jit_suite("optim_sched", tests, sizeof tests / sizeof *tests, "compiled training steps");
}
