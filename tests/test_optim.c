/* test_optim.c - optimizers against torch.optim (tests/golden/optim, from
 * scripts/golden/optim.py): three steps of each configuration on
 * L = sum(w * w * c + w), eager and as one compiled training step. */
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

typedef struct config {
    const char *name;
    bool adam;
    tj_sgd_options sgd;
    tj_adam_options adam_opt;
} config;

static const config configs[] = {
    {"sgd", false, {.lr = 0.1}, {.lr = 0}},
    {"sgd_momentum", false, {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01}, {.lr = 0}},
    {"sgd_nesterov", false, {.lr = 0.05, .momentum = 0.8, .nesterov = true}, {.lr = 0}},
    {"adam", true, {.lr = 0}, {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}},
    {"adam_l2", true, {.lr = 0}, {.lr = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1}},
    {"adamw", true, {.lr = 0},
     {.lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1, .decoupled = true}},
};

static tj_optimizer *make(const config *cf, tj_tensor *w)
{
    return cf->adam ? tj_adam(&w, 1, &cf->adam_opt) : tj_sgd(&w, 1, &cf->sgd);
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
    for (int k = 0; k < 3; k++) {
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

static void test_bad_options(void **state)
{
    (void)state;
    tj_tensor *w = tj_zeros(TJ_F32, 1, (int64_t[]){3});
    tu_assert_error(tj_sgd(&w, 1, &(tj_sgd_options){.lr = -1}), "lr", NULL);
    tu_assert_error(tj_sgd(&w, 1, &(tj_sgd_options){.lr = 1, .nesterov = true}), "nesterov", NULL);
    tu_assert_error(tj_adam(&w, 1, &(tj_adam_options){.lr = 1, .beta1 = 1}), "betas", NULL);
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
        T(test_eager), T(test_compiled_step), T(test_bad_options),
#undef T
    };
    return cmocka_run_group_tests_name("optim", tests, NULL, NULL);
}
