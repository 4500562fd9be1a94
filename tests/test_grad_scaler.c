/* test_grad_scaler.c - loss scaling (tj_grad_scaler, torch.cuda.amp's
 * GradScaler): an f16 gradient that flushes to zero unscaled survives a
 * scaled backward; with a power-of-two scale a scaled f32 step equals the
 * plain one to the bit; a non-finite gradient skips the whole step (weights,
 * moments and step count as if it never ran) and backs the scale off, which
 * grows again after growth_interval clean steps, eagerly and as one compiled
 * step with no break; unscale before clipping; the errors. */
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

/* Under f16 autocast a linear layer's output gradient of 1e-9 is below
 * f16's smallest subnormal (6e-8): the weight's gradient is 0. Scaled by
 * 2^16 it is 6.6e-5, and the unscaled gradient matches the f32 one to f16's
 * precision. */
static void test_f16_underflow(void **state)
{
    (void)state;
    tj_manual_seed(1);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){16, 8});
    tj_tensor *w = tj_keep(tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){4, 8}), 0.5));
    assert_int_equal(tj_requires_grad(w, true), 0);
    tj_tensor *grads[3];
    for (int mode = 0; mode < 3; mode++) {   /* f32, f16 plain, f16 scaled */
        tj_grad_scaler *sc = mode == 2 ? tj_grad_scaler_new(NULL) : NULL;
        tj_sgd_options so = {.lr = 0};
        tj_optimizer *o = tj_sgd(&w, 1, &so);
        tj_zero_grad(w);
        if (mode)
            assert_int_equal(tj_autocast(TJ_F16), 0);
        tj_tensor *y = tj_linear(x, w, NULL);
        assert_int_equal(tj_dtype_of(y), mode ? TJ_F16 : TJ_F32);
        tj_tensor *loss = tj_mul_s(tj_sum(y, NULL, 0, false), 1e-9);
        if (mode)
            tj_autocast_end();
        assert_int_equal(tj_backward(sc ? tj_grad_scaler_scale(sc, loss) : loss), 0);
        if (sc) {
            assert_int_equal(tj_grad_scaler_unscale(sc, o), 0);
            assert_int_equal(tj_grad_scaler_step(sc, o), 0);
            assert_int_equal(tj_grad_scaler_update(sc), 0);
            assert_true(tj_grad_scaler_get_scale(sc) == 65536);   /* 1 clean step of 2000 */
        }
        grads[mode] = tj_clone(tj_grad(w));
        tj_optimizer_free(o);
        tj_grad_scaler_free(sc);
    }
    assert_true(tj_item(tj_amax(tj_abs(grads[0]), NULL, 0, false)) > 1e-9);
    tu_assert_close(grads[1], tj_zeros(TJ_F32, 2, (int64_t[]){4, 8}), 0, 0);
    tu_assert_close(grads[2], grads[0], 2e-3, 1e-12);
    tj_release(w);
}

/* ---- training steps: an MLP, Adam, inputs with an inf on some steps ----------------- */

typedef struct mlp {
    tj_tensor *w[2];   /* [8,16], [16,3] */
    tj_optimizer *opt;
    tj_grad_scaler *sc;   /* NULL: plain steps */
    bool unscale_clip;    /* unscale, clip_grad_norm(0.5), then step */
    bool brk;             /* front(): a host read after the unscale */
} mlp;

static tj_tensor *mlp_step(void *p, tj_tensor *const *a, int n)
{
    (void)n;
    mlp *m = p;
    tj_optimizer_zero_grad(m->opt);
    tj_tensor *h = tj_tanh(tj_matmul(a[0], m->w[0]));
    tj_tensor *loss = tj_cross_entropy(tj_matmul(h, m->w[1]), a[1]);
    if (tj_backward(m->sc ? tj_grad_scaler_scale(m->sc, loss) : loss) != 0)
        return NULL;
    if (m->unscale_clip && ((m->sc && tj_grad_scaler_unscale(m->sc, m->opt) != 0) ||
                            !tj_clip_grad_norm(m->w, 2, 0.5, 2)))
        return NULL;
    if (m->sc ? tj_grad_scaler_step(m->sc, m->opt) != 0 || tj_grad_scaler_update(m->sc) != 0
              : tj_optimizer_step(m->opt) != 0)
        return NULL;
    return tj_detach(loss);
}

static void mlp_make(mlp *m, const tj_grad_scaler_options *so, bool clip)
{
    static const int64_t shapes[2][2] = {{8, 16}, {16, 3}};
    tj_manual_seed(7);
    for (int k = 0; k < 2; k++) {
        m->w[k] = tj_keep(tj_mul_s(tj_randn(TJ_F32, 2, shapes[k]), 0.4));
        assert_int_equal(tj_requires_grad(m->w[k], true), 0);
    }
    m->opt = tj_adam(m->w, 2, &(tj_adam_options){.lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
    m->sc = so ? tj_grad_scaler_new(so) : NULL;
    m->unscale_clip = clip;
    m->brk = false;
    assert_non_null(m->opt);
}

static void mlp_free(mlp *m)
{
    tj_optimizer_free(m->opt);
    tj_grad_scaler_free(m->sc);
    tj_release(m->w[0]);
    tj_release(m->w[1]);
}

/* Step k's batch; bad: an inf among the inputs (every gradient NaN). */
static void batch(int k, bool bad, tj_tensor **a)
{
    tj_manual_seed(200 + (uint64_t)k);
    a[0] = tj_randn(TJ_F32, 2, (int64_t[]){32, 8});
    a[1] = tj_cast(tj_floor(tj_mul_s(tj_rand(TJ_F32, 1, (int64_t[]){32}), 3)), TJ_I64);
    if (bad)
        a[0] = tj_where(tj_eq_s(tj_arange(TJ_I64, 0, 256, 1), 37), tj_scalar(TJ_F32, INFINITY),
                        tj_reshape(a[0], 1, (int64_t[]){256}));
    a[0] = tj_reshape(a[0], 2, (int64_t[]){32, 8});
}

/* Six steps with a scale of 2^10 and growth_interval 2; steps 2 and 3 see
 * an inf. The weights equal, to the bit, plain Adam's over the four clean
 * batches (a power-of-two scale is exact, and a skipped step leaves the
 * moments and the step count alone); the scale goes 1024 -> 2048 (two clean
 * steps) -> 1024 -> 512 (backoffs) -> 512 -> 1024. Compiled, the whole step
 * (scale, backward, unscale, step, update) is one graph with no break, its
 * weights equal to eager's within f32 fusion rounding, its scales the same. */
static void run_skips(bool clip)
{
    static const bool bad[6] = {false, false, true, true, false, false};
    static const double scales[6] = {1024, 2048, 1024, 512, 512, 1024};
    tj_grad_scaler_options so = {.init_scale = 1024, .growth_factor = 2, .backoff_factor = 0.5,
                                 .growth_interval = 2};
    mlp ref, e, c;
    mlp_make(&ref, NULL, clip);
    mlp_make(&e, &so, clip);
    mlp_make(&c, &so, clip);
    tj_compiled *step = tj_compile(mlp_step, &c, NULL);
    for (int k = 0; k < 6; k++) {
        tj_scope_begin();
        tj_tensor *a[2];
        batch(k, bad[k], a);
        if (!bad[k])
            assert_non_null(mlp_step(&ref, a, 2));
        tj_tensor *le = mlp_step(&e, a, 2), *lc = tj_call(step, a, 2);
        if (!le || !lc)
            fail_msg("step %d: %s", k, tj_last_error());
        assert_true(tj_grad_scaler_get_scale(e.sc) == scales[k]);
        assert_true(tj_grad_scaler_get_scale(c.sc) == scales[k]);
        tj_scope_end();
    }
    for (int k = 0; k < 2; k++) {
        tu_assert_close(e.w[k], ref.w[k], 0, 0);
        tu_assert_close(c.w[k], e.w[k], 2e-5, 1e-6);
    }
    /* Adam's step count: four steps taken, two skipped */
    char name[32];
    tj_tensor *t = tj_optimizer_state(e.opt, 1, name, sizeof name);
    assert_string_equal(name, "step");
    assert_true(tj_item(t) == 4);
    assert_true(tj_item(tj_optimizer_state(c.opt, 1, NULL, 0)) == 4);
    tu_assert_one_graph(step, 0);
    tj_compiled_free(step);
    mlp_free(&ref);
    mlp_free(&e);
    mlp_free(&c);
}

static void test_skip_and_backoff(void **state)
{
    (void)state;
    run_skips(false);
}

/* The same with tj_grad_scaler_unscale and clip_grad_norm before the step
 * (the clip sees the true gradients). */
static void test_unscale_then_clip(void **state)
{
    (void)state;
    run_skips(true);
}

/* ---- the parts on either side of a compiled call ---------------------------------- */

/* The front of a step: zero_grad, forward, scaled backward, unscale (and,
 * with brk, a host read of the loss after it: a graph break, so the traced
 * unscale is thrown away and the call runs eagerly). */
static tj_tensor *front(void *p, tj_tensor *const *a, int n)
{
    (void)n;
    mlp *m = p;
    tj_optimizer_zero_grad(m->opt);
    tj_tensor *loss = tj_cross_entropy(tj_matmul(tj_tanh(tj_matmul(a[0], m->w[0])), m->w[1]), a[1]);
    if (tj_backward(tj_grad_scaler_scale(m->sc, loss)) != 0 || tj_grad_scaler_unscale(m->sc, m->opt) != 0)
        return NULL;
    if (m->brk)
        (void)tj_item(loss);   /* traced: a graph break after the unscale */
    return tj_detach(loss);
}

static tj_tensor *back(void *p, tj_tensor *const *a, int n)
{
    (void)a;
    (void)n;
    mlp *m = p;
    if (tj_grad_scaler_step(m->sc, m->opt) != 0 || tj_grad_scaler_update(m->sc) != 0)
        return NULL;
    return tj_grad_scaler_scale(m->sc, tj_ones(TJ_F32, 0, NULL));
}

/* The step split across a compiled call and eager code, three ways: the
 * front compiled and the back eager (the stage travels as a tensor: the
 * eager step must not unscale again); the front compiled with a graph break
 * after its unscale (the abandoned trace's unscale must not count); the
 * front eager and the back compiled (the compiled step must not unscale
 * what the eager unscale did). Each matches the whole step run eagerly. */
static void test_split_across_calls(void **state)
{
    (void)state;
    static const bool bad[6] = {false, false, true, true, false, false};
    static const double scales[6] = {1024, 2048, 1024, 512, 512, 1024};
    tj_grad_scaler_options so = {.init_scale = 1024, .growth_factor = 2, .backoff_factor = 0.5,
                                 .growth_interval = 2};
    for (int way = 0; way < 3; way++) {
        mlp e, c;
        mlp_make(&e, &so, false);
        mlp_make(&c, &so, false);
        c.brk = way == 1;
        tj_compiled *fc = way < 2 ? tj_compile(front, &c, NULL) : NULL;
        tj_compiled *bc = way == 2 ? tj_compile(back, &c, NULL) : NULL;
        for (int k = 0; k < 6; k++) {
            tj_scope_begin();
            tj_tensor *a[2];
            batch(k, bad[k], a);
            tj_tensor *le = mlp_step(&e, a, 2);
            tj_tensor *lc = fc ? tj_call(fc, a, 2) : front(&c, a, 2);
            tj_tensor *bk = lc ? bc ? tj_call(bc, NULL, 0) : back(&c, NULL, 0) : NULL;
            if (!le || !lc || !bk)
                fail_msg("way %d step %d: %s", way, k, tj_last_error());
            assert_true(tj_grad_scaler_get_scale(c.sc) == scales[k]);
            tj_scope_end();
        }
        for (int k = 0; k < 2; k++)
            tu_assert_close(c.w[k], e.w[k], 2e-5, 1e-6);
        tu_assert_calls(fc ? fc : bc, way == 1 ? 6 : 0, -1, way == 1 ? "tj_item" : " 0 graph breaks");
        tj_compiled_free(fc);
        tj_compiled_free(bc);
        mlp_free(&e);
        mlp_free(&c);
    }
}

/* Growth stops where the scale would overflow f32. */
static void test_growth_capped(void **state)
{
    (void)state;
    tj_grad_scaler *sc = tj_grad_scaler_new(&(tj_grad_scaler_options){
        .init_scale = 0x1p127, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 1});
    tj_tensor *w = tj_ones(TJ_F32, 1, (int64_t[]){2});
    assert_int_equal(tj_requires_grad(w, true), 0);
    tj_optimizer *o = tj_sgd(&w, 1, NULL);
    assert_int_equal(tj_backward(tj_grad_scaler_scale(sc, tj_sum(tj_mul_s(w, 0x1p-120), NULL, 0, false))), 0);
    assert_int_equal(tj_grad_scaler_step(sc, o), 0);
    assert_int_equal(tj_grad_scaler_update(sc), 0);
    assert_true(tj_grad_scaler_get_scale(sc) == 0x1p127);
    char name[32];
    tj_tensor *tr = tj_grad_scaler_state(sc, 1, name, sizeof name);
    assert_string_equal(name, "_growth_tracker");
    assert_true(tj_item(tr) == 0);
    tj_optimizer_free(o);
    tj_grad_scaler_free(sc);
}

/* State made inside a traced function: a graph break (the call runs eagerly). */
static tj_tensor *made_inside(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    if (ctx) {
        tj_grad_scaler *sc = tj_grad_scaler_new(NULL);
        tj_grad_scaler_free(sc);
        return sc ? tj_neg(args[0]) : NULL;
    }
    tj_optimizer *o = tj_adam(args, 1, NULL);
    tj_optimizer_free(o);
    return o ? tj_neg(args[0]) : NULL;
}

static void test_errors(void **state)
{
    (void)state;
    tj_tensor *x = tj_ones(TJ_F32, 1, (int64_t[]){2});
    for (int k = 0; k < 2; k++) {
        tj_compiled *c = tj_compile(made_inside, k ? x : NULL, NULL);
        assert_non_null(tj_call(c, &x, 1));
        tu_assert_calls(c, 1, -1, k ? "tj_grad_scaler_new inside the compiled function" : "tj_adam inside the compiled function");
        tj_compiled_free(c);
    }
    tu_assert_error(tj_grad_scaler_new(&(tj_grad_scaler_options){.init_scale = 0, .growth_factor = 2,
                                                                  .backoff_factor = 0.5, .growth_interval = 1}),
                    "grad_scaler: init_scale 0", NULL);
    tu_assert_error(tj_grad_scaler_new(&(tj_grad_scaler_options){.init_scale = 1, .growth_factor = 2,
                                                                  .backoff_factor = 1, .growth_interval = 1}),
                    "backoff_factor in (0, 1)", NULL);
    tu_assert_error(tj_grad_scaler_new(&(tj_grad_scaler_options){.init_scale = 1, .growth_factor = 2,
                                                                  .backoff_factor = 0.5, .growth_interval = 0}),
                    "growth_interval in [1, 2^31)", NULL);
    tj_grad_scaler *sc = tj_grad_scaler_new(NULL);
    assert_non_null(sc);
    assert_true(tj_grad_scaler_get_scale(sc) == 65536);
    tj_tensor *w = tj_ones(TJ_F32, 1, (int64_t[]){2});
    assert_int_equal(tj_requires_grad(w, true), 0);
    tj_optimizer *o = tj_sgd(&w, 1, NULL);
    tu_assert_error(tj_grad_scaler_scale(sc, tj_zeros(TJ_I64, 0, NULL)), "the loss is i64", NULL);
    tu_assert_error(tj_grad_scaler_scale(sc, NULL), "the loss is NULL", NULL);
    tu_assert_error(tj_grad_scaler_scale(NULL, w), "the scaler is NULL", NULL);
    assert_int_equal(tj_grad_scaler_update(sc), -1);
    tu_assert_error(NULL, "grad_scaler update: no optimizer was unscaled", NULL);
    assert_int_equal(tj_backward(tj_grad_scaler_scale(sc, tj_sum(w, NULL, 0, false))), 0);
    assert_int_equal(tj_grad_scaler_unscale(sc, o), 0);
    tu_assert_close(tj_grad(w), tj_ones(TJ_F32, 1, (int64_t[]){2}), 0, 0);
    assert_int_equal(tj_grad_scaler_unscale(sc, o), -1);
    tu_assert_error(NULL, "already unscaled since the last update", NULL);
    assert_int_equal(tj_grad_scaler_step(sc, o), 0);
    assert_int_equal(tj_grad_scaler_step(sc, o), -1);
    tu_assert_error(NULL, "grad_scaler step: the optimizer already stepped", NULL);
    assert_int_equal(tj_grad_scaler_unscale(sc, o), -1);
    tu_assert_error(NULL, "grad_scaler unscale: the optimizer already stepped since the last update", NULL);
    assert_int_equal(tj_grad_scaler_step(sc, NULL), -1);
    tu_assert_error(NULL, "the optimizer is NULL", NULL);
    assert_int_equal(tj_grad_scaler_update(sc), 0);
    assert_int_equal(tj_grad_scaler_update(NULL), -1);
    tu_assert_error(NULL, "the scaler is NULL", NULL);
    assert_true(isnan(tj_grad_scaler_get_scale(NULL)));
    tu_assert_error(NULL, "the scaler is NULL", NULL);
    assert_int_equal(tj_grad_scaler_num_state(sc), 2);
    char name[32];
    assert_true(tj_item(tj_grad_scaler_state(sc, 0, name, sizeof name)) == 65536);
    assert_string_equal(name, "scale");
    tu_assert_error(tj_grad_scaler_state(sc, 2, NULL, 0), "index 2 out of [0, 2)", NULL);
    tj_optimizer_free(o);
    tj_grad_scaler_free(sc);
}

int main(void)
{
    tu_use_build_cache();
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_f16_underflow), T(test_skip_and_backoff), T(test_unscale_then_clip), T(test_split_across_calls),
        T(test_growth_capped),
        T(test_errors),
#undef T
    };
    return tu_run_jit_suite("grad_scaler", tests, sizeof tests / sizeof *tests, "compiled scaled steps");
}
