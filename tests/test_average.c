/* test_average.c - weight averaging (tj_average_ema, tj_average_swa)
 * against torch.optim.swa_utils.AveragedModel (tests/golden/optim, from
 * scripts/golden/optim.py): five updates with the weights moved by a
 * formula, eagerly and inside a compiled function; an EMA updated inside a
 * compiled SGD step against the same steps eager; the errors. */
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

typedef struct pair {
    tj_tensor *w0, *b0;   /* the starting values */
    tj_tensor *p[2];      /* w, b */
    tj_average *avg;
} pair;

/* args[0]: t (f64 0-dim). w = w0 (1 + 0.3 t) + sin(t), b = b0 (1 - 0.2 t),
 * then the average's update; returns sum(b). */
static tj_tensor *move_and_update(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    pair *s = ctx;
    tj_tensor *t = args[0];
    tj_no_grad_begin();
    int rc = tj_copy_(s->p[0], tj_add(tj_mul(s->w0, tj_add_s(tj_mul_s(t, 0.3), 1)), tj_sin(t)));
    if (rc == 0)
        rc = tj_copy_(s->p[1], tj_mul(s->b0, tj_rsub_s(tj_mul_s(t, 0.2), 1, 1)));
    tj_no_grad_end();
    if (rc != 0 || tj_average_update(s->avg) != 0)
        return NULL;
    return tj_sum(s->p[1], NULL, 0, false);
}

static void run_golden(const char *kind, bool compiled)
{
    pair s = {.w0 = tu_golden("optim", "w0"), .b0 = tu_golden("optim", "b0")};
    s.p[0] = tj_clone(s.w0);
    s.p[1] = tj_clone(s.b0);
    assert_int_equal(tj_requires_grad(s.p[0], true), 0);
    s.avg = kind[0] == 'e' ? tj_average_ema(s.p, 2, 0.9) : tj_average_swa(s.p, 2);
    assert_non_null(s.avg);
    assert_int_equal(tj_average_count(s.avg), 0);
    tu_assert_close(tj_average_get(s.avg, 0), s.w0, 0, 0);   /* a copy at first */
    assert_false(tj_get_requires_grad(tj_average_get(s.avg, 0)));
    tj_compiled *c = compiled ? tj_compile(move_and_update, &s, NULL) : NULL;
    for (int t = 0; t < 5; t++) {
        tj_scope_begin();
        tj_tensor *tt = tj_scalar(TJ_F64, t);
        if (!(compiled ? tj_call(c, &tt, 1) : move_and_update(&s, &tt, 1)))
            fail_msg("%s update %d: %s", kind, t, tj_last_error());
        tj_scope_end();
    }
    char key[32];
    snprintf(key, sizeof key, "avg_%s_w", kind);
    tu_assert_close(tj_average_get(s.avg, 0), tu_golden("optim", key), 1e-13, 1e-13);
    snprintf(key, sizeof key, "avg_%s_b", kind);
    tu_assert_close(tj_average_get(s.avg, 1), tu_golden("optim", key), 1e-13, 1e-13);
    assert_int_equal(tj_average_count(s.avg), 5);
    if (c) {
        tu_assert_one_graph(c, -1);
        tj_compiled_free(c);
    }
    tj_average_free(s.avg);
}

static void test_ema_eager(void **state)
{
    (void)state;
    run_golden("ema", false);
}

static void test_swa_eager(void **state)
{
    (void)state;
    run_golden("swa", false);
}

static void test_compiled(void **state)
{
    (void)state;
    run_golden("ema", true);
    run_golden("swa", true);
}

/* ---- an EMA inside a compiled training step ------------------------------------------ */

typedef struct train {
    tj_tensor *w, *c;
    tj_optimizer *opt;
    tj_average *ema;
} train;

static tj_tensor *train_step(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    train *m = ctx;
    tj_optimizer_zero_grad(m->opt);
    tj_tensor *loss = tj_sum(tj_square(tj_sub(tj_mul(m->w, m->c), args[0])), NULL, 0, false);
    if (tj_backward(loss) != 0 || tj_optimizer_step(m->opt) != 0 || tj_average_update(m->ema) != 0)
        return NULL;
    return tj_detach(loss);
}

/* Eight SGD-momentum steps with an EMA (decay 0.75) of the f32 weight:
 * compiled and eager agree within f32 rounding, the average differs from
 * the weight and lags it. */
static void test_in_training_step(void **state)
{
    (void)state;
    train m[2];
    for (int k = 0; k < 2; k++) {
        tj_manual_seed(5);
        m[k].w = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){64}));
        m[k].c = tj_keep(tj_rand(TJ_F32, 1, (int64_t[]){64}));
        assert_int_equal(tj_requires_grad(m[k].w, true), 0);
        m[k].opt = tj_sgd(&m[k].w, 1, &(tj_sgd_options){.lr = 0.1, .momentum = 0.5});
        m[k].ema = tj_average_ema(&m[k].w, 1, 0.75);
        assert_non_null(m[k].ema);
    }
    tj_compiled *c = tj_compile(train_step, &m[1], NULL);
    for (int t = 0; t < 8; t++) {
        tj_scope_begin();
        tj_manual_seed(50 + (uint64_t)t);
        tj_tensor *y = tj_randn(TJ_F32, 1, (int64_t[]){64});
        tj_tensor *le = train_step(&m[0], &y, 1), *lc = tj_call(c, &y, 1);
        if (!le || !lc)
            fail_msg("step %d: %s", t, tj_last_error());
        tu_assert_close(lc, le, 1e-5, 1e-6);
        tj_scope_end();
    }
    tu_assert_close(m[1].w, m[0].w, 1e-5, 1e-6);
    tu_assert_close(tj_average_get(m[1].ema, 0), tj_average_get(m[0].ema, 0), 1e-5, 1e-6);
    assert_true(tj_item(tj_amax(tj_abs(tj_sub(tj_average_get(m[0].ema, 0), m[0].w)), NULL, 0, false)) > 1e-3);
    assert_int_equal(tj_average_count(m[1].ema), 8);
    tu_assert_one_graph(c, 0);
    tj_compiled_free(c);
    for (int k = 0; k < 2; k++) {
        tj_average_free(m[k].ema);
        tj_optimizer_free(m[k].opt);
        tj_release(m[k].w);
        tj_release(m[k].c);
    }
}

static tj_tensor *make_inside(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    tj_average *a = tj_average_swa(args, 1);
    tj_average_free(a);
    return a ? tj_neg(args[0]) : NULL;
}

static void test_errors(void **state)
{
    (void)state;
    tj_tensor *w = tj_zeros(TJ_F32, 1, (int64_t[]){3}), *i = tj_zeros(TJ_I32, 1, (int64_t[]){3}), *none = NULL;
    tu_assert_error(tj_average_ema(&w, 1, 1.5), "average_ema: decay 1.5: must be in [0, 1]", NULL);
    tu_assert_error(tj_average_ema(&w, 1, NAN), "decay nan", NULL);
    tu_assert_error(tj_average_swa(&i, 1), "average_swa: tensor 0 is not a float tensor", NULL);
    tu_assert_error(tj_average_swa(&none, 1), "tensor 0 is NULL", NULL);
    tu_assert_error(tj_average_swa(NULL, 2), "average_swa: 2 tensors", NULL);
    assert_int_equal(tj_average_update(NULL), -1);
    tu_assert_error(NULL, "average_update: the average is NULL", NULL);
    assert_int_equal(tj_average_count(NULL), -1);
    tu_assert_error(NULL, "the average is NULL", NULL);
    tj_average *a = tj_average_swa(&w, 1);
    tu_assert_error(tj_average_get(a, 1), "average_get: index 1 out of [0, 1)", NULL);
    tj_average_free(a);
    tj_compiled *c = tj_compile(make_inside, NULL, NULL);
    assert_non_null(tj_call(c, &w, 1));   /* a graph break: the call runs eagerly */
    tu_assert_calls(c, 1, -1, "tj_average_swa inside the compiled function (state kept across calls");
    tj_compiled_free(c);
}

int main(void)
{
    tu_use_build_cache();
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_ema_eager), T(test_swa_eager), T(test_compiled), T(test_in_training_step), T(test_errors),
#undef T
    };
    return tu_run_jit_suite("average", tests, sizeof tests / sizeof *tests, "averages in compiled steps");
}
