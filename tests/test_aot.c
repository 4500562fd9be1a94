/* test_aot.c - the compiled backward (frontend/aot_joint.c, frontend/aot.c):
 * tj_backward through the result of tj_call runs a compiled backward graph
 * whose gradients equal eager autograd's; it is traced once, never built in
 * no-grad mode, and misuse (a second backward, an argument, a captured weight
 * or a saved value changed in place before it) is an error. A model with one
 * result on the tape gets the partitioned backward: its forward plan saves
 * what the backward reads (the matmuls are not run again: the backward graph
 * holds only the gradients' matmuls), one per argument shape where dims are
 * symbolic; several results get aot.c's, which recomputes the forward.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tjit_inspect.h"
#include "util.h"

/* A two-layer MLP with its weights reached through ctx. */
typedef struct mlp {
    tj_tensor *w1, *b1, *w2;
} mlp;

static tj_tensor *mlp_fn(void *ctx, tj_tensor *const *args, int nargs)
{
    mlp *m = ctx;
    (void)nargs;
    tj_tensor *h = tj_tanh(tj_add(tj_matmul(args[0], m->w1), m->b1));
    return tj_matmul(tj_relu(h), m->w2);
}

/* Two results: the hidden layer and the output. */
static int mlp_multi(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    mlp *m = ctx;
    (void)nargs;
    (void)max;
    outs[0] = tj_tanh(tj_add(tj_matmul(args[0], m->w1), m->b1));
    outs[1] = tj_matmul(outs[0], m->w2);
    return 2;
}

static void mlp_init(mlp *m, bool grad)
{
    m->w1 = tj_randn(TJ_F32, 2, (int64_t[]){16, 32});
    m->b1 = tj_randn(TJ_F32, 1, (int64_t[]){32});
    m->w2 = tj_randn(TJ_F32, 2, (int64_t[]){32, 4});
    assert_int_equal(tj_requires_grad(m->w1, grad), 0);
    assert_int_equal(tj_requires_grad(m->b1, grad), 0);
    assert_int_equal(tj_requires_grad(m->w2, grad), 0);
}

static void mlp_free(mlp *m)
{
    tj_release(m->w1);
    tj_release(m->b1);
    tj_release(m->w2);
}

/* The loss on top of the model's result: eager ops after the compiled call. */
static tj_tensor *loss_of(tj_tensor *y) { return tj_sum(tj_mul(y, y), NULL, 0, false); }

/* The gradients of the weights (copies, in the current scope), then zeroed. */
static void take_grads(mlp *m, tj_tensor **g)
{
    tj_tensor *w[3] = {m->w1, m->b1, m->w2};
    for (int k = 0; k < 3; k++) {
        assert_non_null(tj_grad(w[k]));
        g[k] = tj_contiguous(tj_mul(tj_grad(w[k]), tj_full(TJ_F32, 0, NULL, 1.0)));
        tj_zero_grad(w[k]);
    }
}

static void test_mlp_grads(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_manual_seed(7);
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile(mlp_fn, &m, &(tj_compile_options){.name = "mlp"});
    for (int step = 0; step < 3; step++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
        tj_tensor *want[3], *got[3];
        assert_int_equal(tj_backward(loss_of(mlp_fn(&m, &x, 1))), 0);
        take_grads(&m, want);
        tj_tensor *y = tj_call(c, &x, 1);
        assert_non_null(y);
        assert_true(tj_get_requires_grad(y));
        assert_int_equal(tj_backward(loss_of(y)), 0);
        take_grads(&m, got);
        for (int k = 0; k < 3; k++)
            tu_assert_close(got[k], want[k], 1e-5, 1e-5);
    }
    tj_compiled_stats s;
    assert_int_equal(tj_compiled_stats_get(c, &s), 0);
    assert_int_equal(s.graphs, 1);
    assert_int_equal(s.backward.graphs, 1);   /* traced once, run three times */
    assert_int_equal(s.backward.breaks, 0);
    assert_int_equal((int)s.backward.calls, 3);
    assert_int_equal((int)s.backward.eager_calls, 0);
    /* partitioned: relu(h) and tanh's derivative saved; the backward runs
     * the three matmuls of the gradients (dW2, dh, dW1), not the forward's two */
    assert_int_equal(s.backward.partitioned, 1);
    assert_int_equal(s.backward.saved, 2);
    assert_int_equal((int)s.backward.saved_bytes, 2 * 8 * 32 * 4);
    assert_int_equal(s.backward.contractions, 3);
    char *ex = tj_explain(c);
    assert_non_null(ex);
    assert_non_null(strstr(ex, "backward of result 0: joint graph partitioned: the forward saves "
                               "2 values (2048 bytes)"));
    assert_non_null(strstr(ex, "runs 3 matmul/conv2d; 3 backward runs"));
    assert_non_null(strstr(ex, "saved %3 = relu f32[8,32] (1024 bytes)"));
    assert_non_null(strstr(ex, "recomputed %10 = gt bool[8,32]"));
    free(ex);
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* Gradients accumulate into .grad across backwards, as eagerly. */
static void test_accumulates(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_manual_seed(8);
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile(mlp_fn, &m, NULL);
    tj_tensor *x1 = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    tj_tensor *x2 = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    tj_tensor *want[3], *got[3];
    assert_int_equal(tj_backward(loss_of(mlp_fn(&m, &x1, 1))), 0);
    assert_int_equal(tj_backward(loss_of(mlp_fn(&m, &x2, 1))), 0);
    take_grads(&m, want);
    assert_int_equal(tj_backward(loss_of(tj_call(c, &x1, 1))), 0);
    assert_int_equal(tj_backward(loss_of(tj_call(c, &x2, 1))), 0);
    take_grads(&m, got);
    for (int k = 0; k < 3; k++)
        tu_assert_close(got[k], want[k], 1e-5, 1e-5);
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* c's backward: one partitioned joint graph for its two results, run runs times. */
static void assert_one_joint(tj_compiled *c, long runs)
{
    tj_compiled_stats s;
    assert_int_equal(tj_compiled_stats_get(c, &s), 0);
    assert_int_equal(s.backward.graphs, 1);
    assert_int_equal(s.backward.partitioned, 1);
    tu_assert_calls(c, 0, runs, "backward of results 0, 1: joint graph partitioned: the forward saves");
}

/* The results of a multi-result model are the outputs of one node: a
 * backward through either or both runs the partitioned backward once
 * (without the tangent of a result no gradient reached). */
static void test_multi(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_manual_seed(9);
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile_multi(mlp_multi, &m, NULL);
    for (int through = 0; through < 3; through++) {   /* result 0, result 1, both */
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
        tj_tensor *want[3], *got[3], *r[2];
        for (int pass = 0; pass < 2; pass++) {
            if (pass)
                assert_int_equal(tj_call_multi(c, &x, 1, r, 2), 2);
            else
                assert_int_equal(mlp_multi(&m, &x, 1, r, 2), 2);
            tj_tensor *l = through == 0 ? loss_of(r[0]) : through == 1 ? loss_of(r[1])
                                                                        : tj_add(loss_of(r[0]), loss_of(r[1]));
            assert_int_equal(tj_backward(l), 0);
            tj_tensor *w[3] = {m.w1, m.b1, m.w2};
            for (int k = 0; k < 3; k++) {   /* result 0 does not reach w2 */
                (pass ? got : want)[k] = tj_grad(w[k]) ? tj_clone(tj_grad(w[k])) : NULL;
                tj_zero_grad(w[k]);
            }
        }
        for (int k = 0; k < 3; k++) {
            assert_true(!got[k] == !want[k]);
            if (want[k])
                tu_assert_close(got[k], want[k], 1e-5, 1e-5);
        }
    }
    assert_one_joint(c, 3);
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* A gradient that is zero by its rule (sign's) is still set, as eagerly,
 * through the result that reaches it; a weight only an unreached result
 * reaches gets none. */
static int sign_and_b(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    mlp *m = ctx;
    (void)nargs;
    (void)max;
    outs[0] = tj_sign(tj_matmul(args[0], m->w1));
    outs[1] = tj_mul(args[0], tj_sum(m->b1, NULL, 0, false));
    return 2;
}

static void test_zero_gradients(void **state)
{
    (void)state;
    tj_scope_begin();
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile_multi(sign_and_b, &m, NULL);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    assert_int_equal(tj_requires_grad(x, true), 0);
    for (int through = 0; through < 2; through++)
        for (int pass = 0; pass < 2; pass++) {
            tj_tensor *r[2];
            if (pass)
                assert_int_equal(tj_call_multi(c, &x, 1, r, 2), 2);
            else
                assert_int_equal(sign_and_b(&m, &x, 1, r, 2), 2);
            assert_int_equal(tj_backward(loss_of(r[through])), 0);
            assert_true(!tj_grad(m.w1) == (through == 1));
            assert_true(!tj_grad(m.b1) == (through == 0));
            assert_non_null(tj_grad(x));
            if (through == 0)   /* sign's gradient: zeros */
                tu_assert_close(tj_grad(x), tj_zeros(TJ_F32, 2, (int64_t[]){8, 16}), 0, 0);
            tj_zero_grad(m.w1);
            tj_zero_grad(m.b1);
            tj_zero_grad(x);
        }
    tu_assert_calls(c, 0, -1, NULL);
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* A backward through one result only: the other's backward would divide by
 * zero (sqrt at 0), which its zero tangent would turn into NaN; the backward
 * without that result's tangent gives eager's finite gradient. */
static int sqrt_and_scaled(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    mlp *m = ctx;
    (void)nargs;
    (void)max;
    outs[0] = tj_sqrt(tj_mul(args[0], args[0]));
    outs[1] = tj_mul(args[0], tj_sum(m->b1, NULL, 0, false));
    return 2;
}

static void test_unreached_result(void **state)
{
    (void)state;
    tj_scope_begin();
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile_multi(sqrt_and_scaled, &m, NULL);
    tj_tensor *x = tj_relu(tj_randn(TJ_F32, 2, (int64_t[]){8, 16}));   /* exact zeros */
    assert_int_equal(tj_requires_grad(x, true), 0);
    for (int through = 1; through >= 0; through--) {   /* result 1 alone, then both */
        tj_tensor *want[2], *got[2];
        for (int pass = 0; pass < 2; pass++) {
            tj_tensor *r[2];
            if (pass)
                assert_int_equal(tj_call_multi(c, &x, 1, r, 2), 2);
            else
                assert_int_equal(sqrt_and_scaled(&m, &x, 1, r, 2), 2);
            tj_tensor *l = loss_of(r[1]);
            assert_int_equal(tj_backward(through ? l : tj_add(l, tj_sum(r[0], NULL, 0, false))), 0);
            (pass ? got : want)[0] = tj_clone(tj_grad(x));
            (pass ? got : want)[1] = tj_clone(tj_grad(m.b1));
            tj_zero_grad(x);
            tj_zero_grad(m.b1);
        }
        for (int k = 0; k < 2; k++)
            tu_assert_close(got[k], want[k], 1e-5, 1e-5);
        if (through)
            assert_true(tj_item(tj_sum(tj_isnan(got[0]), NULL, 0, false)) == 0);
    }
    tu_assert_explain(c, "backward of results 0, 1: joint graph partitioned");
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* Results that are the inputs themselves (the argument, a weight, one the
 * model reads nowhere else) come back as those tensors, their gradients
 * their own; a view of a weight is on the tape with the others. */
static tj_tensor *returned_only;

static int mlp_inputs_out(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    mlp *m = ctx;
    (void)max;
    outs[0] = mlp_fn(ctx, args, nargs);
    outs[1] = m->w1;
    outs[2] = args[0];
    outs[3] = tj_transpose(m->w2, 0, 1);
    outs[4] = returned_only;
    outs[5] = tj_reshape(returned_only, 1, (int64_t[]){3});   /* a node the passes remove */
    return 6;
}

static void test_results_inputs(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_manual_seed(21);
    mlp m;
    mlp_init(&m, true);
    returned_only = tj_randn(TJ_F32, 1, (int64_t[]){3});
    assert_int_equal(tj_requires_grad(returned_only, true), 0);
    tj_compiled *c = tj_compile_multi(mlp_inputs_out, &m, NULL);
    for (int step = 0; step < 3; step++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16}), *want[5], *got[5], *r[6];
        assert_int_equal(tj_requires_grad(x, true), 0);
        for (int pass = 0; pass < 2; pass++) {
            if (pass && tj_call_multi(c, &x, 1, r, 6) != 6)
                fail_msg("%s", tj_last_error());
            else if (!pass)
                assert_int_equal(mlp_inputs_out(&m, &x, 1, r, 6), 6);
            assert_true(r[1] == m.w1 && r[2] == x && r[4] == returned_only && r[5] != returned_only);
            tj_tensor *l = loss_of(r[0]);
            for (int k = 1; k < 6; k++)
                l = tj_add(l, loss_of(r[k]));
            assert_int_equal(tj_backward(l), 0);
            tj_tensor **g = pass ? got : want;
            take_grads(&m, g);
            g[3] = tj_clone(tj_grad(x));
            g[4] = tj_clone(tj_grad(returned_only));
            tj_zero_grad(x);
            tj_zero_grad(returned_only);
        }
        for (int k = 0; k < 5; k++)
            tu_assert_close(got[k], want[k], 1e-5, 1e-5);
    }
    tu_assert_explain(c, "backward of results 0, 3, 5: joint graph partitioned");
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* A loss and the outputs: one partitioned backward for both; a backward
 * through the loss, through the outputs, or through both gives eager's
 * gradients. */
static int mlp_loss_and_out(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    (void)max;
    outs[1] = mlp_fn(ctx, args, nargs);
    outs[0] = loss_of(outs[1]);
    return 2;
}

static void test_loss_and_outputs(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_manual_seed(13);
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile_multi(mlp_loss_and_out, &m, NULL);
    for (int through = 0; through < 3; through++) {   /* the loss, the outputs, both */
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
        tj_tensor *want[3], *got[3], *r[2];
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 0)
                assert_int_equal(mlp_loss_and_out(&m, &x, 1, r, 2), 2);
            else
                assert_int_equal(tj_call_multi(c, &x, 1, r, 2), 2);
            tj_tensor *l = through == 0 ? r[0] : through == 1 ? tj_sum(r[1], NULL, 0, false)
                                                              : tj_add(r[0], tj_sum(r[1], NULL, 0, false));
            if (tj_backward(l) != 0)
                fail_msg("through %d, pass %d: %s", through, pass, tj_last_error());
            take_grads(&m, pass ? got : want);
        }
        for (int k = 0; k < 3; k++)
            tu_assert_close(got[k], want[k], 1e-5, 1e-5);
    }
    assert_one_joint(c, 3);
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* Compiled modules in a chain: the second's argument (the first's result)
 * requires grad, and so may the input; each call runs its partitioned
 * backward, which gives the argument its gradient, so every weight's and the
 * input's gradient equals eager's. */
static tj_tensor *layer2(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    return tj_tanh(tj_matmul(args[0], ctx));
}

/* Two results, both reaching the argument: one backward gives its gradient. */
static int layer2_twice(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    (void)max;
    outs[0] = layer2(ctx, args, nargs);
    outs[1] = tj_mul_s(args[0], 2);
    return 2;
}

static void test_argument_grads(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_manual_seed(17);
    mlp m;
    mlp_init(&m, true);
    tj_tensor *w3 = tj_randn(TJ_F32, 2, (int64_t[]){4, 5});
    assert_int_equal(tj_requires_grad(w3, true), 0);
    tj_compiled *c1 = tj_compile(mlp_fn, &m, NULL), *c2 = tj_compile(layer2, w3, NULL);
    for (int step = 0; step < 4; step++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16}), *want[5], *got[5];
        assert_int_equal(tj_requires_grad(x, step % 2 == 1), 0);   /* the input too, every other */
        for (int pass = 0; pass < 2; pass++) {
            tj_tensor *h = pass ? tj_call(c1, &x, 1) : mlp_fn(&m, &x, 1);
            tj_tensor *y = pass ? tj_call(c2, &h, 1) : layer2(w3, &h, 1);
            if (!y || tj_backward(loss_of(y)) != 0)
                fail_msg("step %d, pass %d: %s", step, pass, tj_last_error());
            tj_tensor **g = pass ? got : want;
            take_grads(&m, g);
            g[3] = tj_clone(tj_grad(w3));
            g[4] = step % 2 ? tj_clone(tj_grad(x)) : NULL;
            tj_zero_grad(w3);
            if (step % 2)
                tj_zero_grad(x);
        }
        for (int k = 0; k < 5; k++)
            if (want[k])
                tu_assert_close(got[k], want[k], 1e-5, 1e-5);
    }
    tj_compiled_stats s;
    assert_int_equal(tj_compiled_stats_get(c2, &s), 0);
    assert_int_equal((int)s.eager_calls, 0);
    assert_int_equal(s.backward.partitioned, 1);
    char *ex = tj_explain(c2);
    assert_non_null(strstr(ex, "2 gradients (of arguments 0)"));
    free(ex);
    assert_int_equal(tj_compiled_stats_get(c1, &s), 0);
    assert_int_equal((int)s.eager_calls, 0);
    assert_int_equal(s.backward.partitioned, 2);   /* x without grad, and with */
    tj_compiled_free(c2);

    /* two results: the argument's gradient would come from two backwards */
    tj_compiled *c3 = tj_compile_multi(layer2_twice, w3, NULL);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 4}), *r[2], *want, *got;
    assert_int_equal(tj_requires_grad(x, true), 0);
    for (int pass = 0; pass < 2; pass++) {
        if (pass)
            assert_int_equal(tj_call_multi(c3, &x, 1, r, 2), 2);
        else
            assert_int_equal(layer2_twice(w3, &x, 1, r, 2), 2);
        assert_int_equal(tj_backward(tj_add(loss_of(r[0]), loss_of(r[1]))), 0);
        *(pass ? &got : &want) = tj_clone(tj_grad(x));
        tj_zero_grad(x);
        tj_zero_grad(w3);
    }
    tu_assert_close(got, want, 1e-5, 1e-5);
    assert_int_equal(tj_compiled_stats_get(c3, &s), 0);
    assert_int_equal((int)s.eager_calls, 0);
    ex = tj_explain(c3);
    assert_non_null(strstr(ex, "backward of results 0, 1: joint graph partitioned"));
    assert_non_null(strstr(ex, "2 gradients (of arguments 0)"));
    free(ex);
    tj_compiled_free(c3);
    tj_compiled_free(c1);
    tj_release(w3);
    mlp_free(&m);
    tj_scope_end();
}

/* No grad mode, or no weight requiring grad: nothing goes on the tape and no
 * backward is made (inference unchanged). */
static void test_no_grad(void **state)
{
    (void)state;
    tj_scope_begin();
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile(mlp_fn, &m, NULL);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    tj_no_grad_begin();
    tj_tensor *y = tj_call(c, &x, 1);
    tj_no_grad_end();
    assert_non_null(y);
    assert_false(tj_get_requires_grad(y));
    tu_assert_error(tj_backward(tj_sum(y, NULL, 0, false)) == 0 ? (void *)1 : NULL,
                    "does not require grad", NULL);
    mlp_free(&m);
    mlp_init(&m, false);
    y = tj_call(c, &x, 1);   /* new weights: traced again, none requires grad */
    assert_non_null(y);
    assert_false(tj_get_requires_grad(y));
    tj_compiled_stats s;
    assert_int_equal(tj_compiled_stats_get(c, &s), 0);
    assert_int_equal(s.backward.graphs + s.backward.breaks, 0);
    assert_int_equal((int)s.backward.calls, 0);
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

static void test_errors(void **state)
{
    (void)state;
    tj_scope_begin();
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile(mlp_fn, &m, NULL);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    /* a second backward through the same call */
    tj_tensor *l = loss_of(tj_call(c, &x, 1));
    assert_int_equal(tj_backward(l), 0);
    tu_assert_error(tj_backward(l) == 0 ? (void *)1 : NULL, "already used by a backward", NULL);
    tj_tensor *y = tj_call(c, &x, 1), *seed = tj_ones(TJ_F32, 2, (int64_t[]){8, 4});
    assert_int_equal(tj_backward_seed(y, seed), 0);
    tu_assert_error(tj_backward_seed(y, seed) == 0 ? (void *)1 : NULL,
                    "already used by a backward", "compiled call", NULL);
    /* the saved argument changed in place before the backward */
    l = loss_of(tj_call(c, &x, 1));
    assert_int_equal(tj_copy_(x, tj_zeros(TJ_F32, 2, (int64_t[]){8, 16})), 0);
    tu_assert_error(tj_backward(l) == 0 ? (void *)1 : NULL, "argument 0 of a compiled call",
                    "modified in place", NULL);
    /* a captured weight updated in place (an optimizer step) before the
     * backward: its gradient would be taken at the new value */
    x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    l = loss_of(tj_call(c, &x, 1));
    tj_no_grad_begin();
    assert_int_equal(tj_copy_(m.w2, tj_mul_s(m.w2, 0.5)), 0);
    tj_no_grad_end();
    tu_assert_error(tj_backward(l) == 0 ? (void *)1 : NULL, "captured weight 2 of a compiled call",
                    "modified in place", NULL);
    /* the argument released by its owner: the call holds it, backward works */
    tj_scope_begin();
    tj_tensor *x2 = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    tj_tensor *l2 = tj_retain(loss_of(tj_call(c, &x2, 1)));
    tj_scope_end();
    assert_int_equal(tj_backward(l2), 0);
    tj_release(l2);
    /* the handle freed before the backward: the tape holds the backward */
    l = loss_of(tj_call(c, &x, 1));
    tj_compiled_free(c);
    assert_int_equal(tj_backward(l), 0);
    mlp_free(&m);
    tj_scope_end();
}

/* An argument that requires grad: the call runs eagerly, gradients flow. */
static void test_arg_grad(void **state)
{
    (void)state;
    tj_scope_begin();
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile(mlp_fn, &m, NULL);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    assert_int_equal(tj_requires_grad(x, true), 0);
    assert_int_equal(tj_backward(loss_of(mlp_fn(&m, &x, 1))), 0);
    tj_tensor *want = tj_contiguous(tj_mul(tj_grad(x), tj_full(TJ_F32, 0, NULL, 1.0)));
    tj_zero_grad(x);
    assert_int_equal(tj_backward(loss_of(tj_call(c, &x, 1))), 0);
    tu_assert_close(tj_grad(x), want, 1e-5, 1e-5);
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* tanh(x @ w): the backward reads the result itself, saved by the forward:
 * the node holds the result's storage, so writing to the result before the
 * backward is an error, as eagerly. */
static tj_tensor *tanh_fn(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    return tj_tanh(tj_matmul(args[0], ((mlp *)ctx)->w1));
}

static void test_saved_result(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_manual_seed(10);
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile(tanh_fn, &m, &(tj_compile_options){.name = "th"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    assert_int_equal(tj_backward(loss_of(tanh_fn(&m, &x, 1))), 0);
    tj_tensor *want = tj_contiguous(tj_mul_s(tj_grad(m.w1), 1.0));
    tj_zero_grad(m.w1);
    assert_int_equal(tj_backward(loss_of(tj_call(c, &x, 1))), 0);
    tu_assert_close(tj_grad(m.w1), want, 1e-5, 1e-5);
    tj_compiled_stats s;
    assert_int_equal(tj_compiled_stats_get(c, &s), 0);
    assert_int_equal(s.backward.partitioned, 1);
    assert_int_equal(s.backward.saved, 1);   /* the result; 1 - y^2 recomputed from it */
    assert_int_equal(s.backward.contractions, 1);
    char *ex = tj_explain(c);
    assert_non_null(strstr(ex, "saved %1 = tanh f32[8,32] (1024 bytes)"));
    free(ex);
    tj_tensor *y = tj_call(c, &x, 1), *l = loss_of(y);
    assert_int_equal(tj_copy_(y, tj_zeros(TJ_F32, 2, (int64_t[]){8, 32})), 0);
    tu_assert_error(tj_backward(l) == 0 ? (void *)1 : NULL, "modified in place", NULL);
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* A dim that changes between calls becomes symbolic: that entry's forward is
 * one graph and so is its partitioned backward, for every batch size (its
 * saved bytes counted at the traced size; test_aot_dynamic.c has more).
 * Gradients equal eager's at every size. A seed of another dtype is an error
 * (as eagerly: the VJPs' matmuls refuse it). */
static void test_symbolic_shapes(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_manual_seed(11);
    mlp m;
    mlp_init(&m, true);
    tj_compiled *c = tj_compile(mlp_fn, &m, NULL);
    const int sizes[] = {8, 12, 16, 12, 20, 24, 28, 32, 36, 40, 44, 16, 48};
    for (int i = 0; i < (int)(sizeof sizes / sizeof *sizes); i++) {
        int b = sizes[i];
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){b, 16}), *want[3], *got[3];
        tj_tensor *seed = tj_randn(TJ_F32, 2, (int64_t[]){b, 4});
        if (i < 2)
            tu_assert_error(tj_backward_seed(tj_call(c, &x, 1), tj_cast(seed, TJ_F64)) == 0 ? (void *)1 : NULL,
                            i ? "the gradient of result 0 is f64[12,4], the compiled backward takes f32[12,4]"
                              : "the gradient of result 0 is f64[8,4], the compiled backward takes f32[8,4]",
                            NULL);
        assert_int_equal(tj_backward_seed(mlp_fn(&m, &x, 1), seed), 0);
        take_grads(&m, want);
        if (tj_backward_seed(tj_call(c, &x, 1), seed) != 0)
            fail_msg("b=%d: %s", b, tj_last_error());
        take_grads(&m, got);
        for (int k = 0; k < 3; k++)
            tu_assert_close(got[k], want[k], 1e-5, 1e-5);
    }
    tj_compiled_stats s;
    assert_int_equal(tj_compiled_stats_get(c, &s), 0);
    assert_int_equal(s.graphs, 2);
    assert_int_equal(s.backward.partitioned, 1 + 1);   /* the static entry's, the symbolic one's */
    tu_assert_explain(c, "backward of result 0 for arguments f32[s0,16]: joint graph partitioned: "
                         "the forward saves 2 values (3072 bytes at s0=12), the backward recomputes 1 "
                         "value and runs 3 matmul/conv2d; 12 backward runs");
    tj_compiled_free(c);
    mlp_free(&m);
    tj_scope_end();
}

/* TJIT_DUMP knows the joint graph's stages. */
static void test_dump_stages(void **state)
{
    (void)state;
    assert_int_equal(tj_dump_check("joint,forward,backward"), 0);
    assert_true(tj_dump_enabled("2", "joint"));
    assert_true(tj_dump_enabled("2", "backward"));
    assert_false(tj_dump_enabled("1", "forward"));
}

/* A model that writes to a tensor (a running statistic) takes the
 * partitioned backward when a weight requires grad: its forward writes back
 * once per call and the backward reads none of what it wrote, so two calls
 * before their backwards hold (the written tensor's version is not checked). */
typedef struct stat_model {
    mlp m;
    tj_tensor *count;
    bool reads;   /* the result is scaled by the count before the write */
} stat_model;

static tj_tensor *stat_fn(void *ctx, tj_tensor *const *args, int nargs)
{
    stat_model *s = ctx;
    tj_tensor *scale = s->reads ? tj_add(s->count, tj_full(TJ_F32, 0, NULL, 1.0)) : NULL;
    if (tj_copy_(s->count, tj_add(s->count, tj_full(TJ_F32, 0, NULL, 1.0))) != 0)
        return NULL;
    tj_tensor *y = mlp_fn(&s->m, args, nargs);
    return scale ? tj_mul(y, scale) : y;
}

/* Two compiled calls, then their backwards, against one eager step doubled;
 * the count after three calls (the third in no-grad mode). */
static void check_writes(stat_model *s, tj_compiled *c)
{
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16}), *want[3], *got[3];
    assert_int_equal(tj_backward(loss_of(stat_fn(s, &x, 1))), 0);
    take_grads(&s->m, want);
    tj_copy_(s->count, tj_zeros(TJ_F32, 0, NULL));
    tj_tensor *y1 = tj_call(c, &x, 1), *y2 = tj_call(c, &x, 1);
    assert_non_null(y1);
    assert_non_null(y2);
    assert_true(tj_item(s->count) == 2.0);
    assert_int_equal(tj_backward(loss_of(y1)), 0);
    assert_int_equal(tj_backward(loss_of(y2)), 0);
    take_grads(&s->m, got);
    for (int k = 0; k < 3; k++)   /* y2's scale is the count after one call: 2 */
        tu_assert_close(got[k], tj_mul_s(want[k], s->reads ? 1 + 4 : 2), 1e-5, 1e-5);
    tj_no_grad_begin();   /* inference: the compiled plan runs */
    assert_non_null(tj_call(c, &x, 1));
    tj_no_grad_end();
    assert_true(tj_item(s->count) == 3.0);
}

static void test_writes(void **state)
{
    (void)state;
    tj_scope_begin();
    stat_model s = {.count = tj_zeros(TJ_F32, 0, NULL)};
    mlp_init(&s.m, true);
    tj_compiled *c = tj_compile(stat_fn, &s, NULL);
    check_writes(&s, c);
    tu_assert_calls(c, 0, 2, "4 outputs (1 written back)");
    tj_compiled_free(c);
    /* the backward reads the count from before the write: eagerly */
    s.reads = true;
    tj_copy_(s.count, tj_zeros(TJ_F32, 0, NULL));
    c = tj_compile(stat_fn, &s, NULL);
    check_writes(&s, c);
    tu_assert_calls(c, 2, 0, "calls in grad mode run eagerly: the backward reads a tensor the model writes");
    tj_compiled_free(c);
    tj_release(s.count);
    mlp_free(&s.m);
    tj_scope_end();
}

/* Writes the partitioned forward cannot take over: into an argument (the
 * tape node holds the arguments as saved), into a weight that requires grad
 * (in no-grad mode inside the model); those calls run eagerly, explain says
 * why, and the writes happen once a call. */
static tj_tensor *writes_arg(void *ctx, tj_tensor *const *args, int nargs)
{
    if (tj_copy_(args[1], tj_add_s(args[1], 1.0)) != 0)
        return NULL;
    return mlp_fn(ctx, args, nargs);
}

static tj_tensor *writes_weight(void *ctx, tj_tensor *const *args, int nargs)
{
    mlp *m = ctx;
    tj_no_grad_begin();
    int rc = tj_copy_(m->b1, tj_mul_s(m->b1, 0.5));
    tj_no_grad_end();
    return rc == 0 ? mlp_fn(ctx, args, nargs) : NULL;
}

static void test_writes_refused(void **state)
{
    (void)state;
    tj_scope_begin();
    mlp m;
    mlp_init(&m, true);
    tj_model_fn fns[2] = {writes_arg, writes_weight};
    const char *why[2] = {"calls in grad mode run eagerly: the model writes to an argument",
                          "calls in grad mode run eagerly: the model writes to a tensor that requires grad"};
    for (int f = 0; f < 2; f++) {
        tj_compiled *c = tj_compile(fns[f], &m, NULL);
        tj_tensor *args[2] = {tj_randn(TJ_F32, 2, (int64_t[]){8, 16}), tj_zeros(TJ_F32, 0, NULL)};
        tj_tensor *b0 = tj_clone(m.b1);
        for (int k = 0; k < 2; k++)
            assert_int_equal(tj_backward(loss_of(tj_call(c, args, 2))), 0);
        if (f == 0)
            assert_true(tj_item(args[1]) == 2.0);
        else
            tu_assert_close(m.b1, tj_mul_s(b0, 0.25), 0, 0);
        assert_non_null(tj_grad(m.w1));
        tu_assert_calls(c, 2, -1, why[f]);
        tj_compiled_free(c);
        tj_zero_grad(m.w1);
        tj_zero_grad(m.b1);
        tj_zero_grad(m.w2);
    }
    mlp_free(&m);
    tj_scope_end();
}

/* A convolution with batch norm in training mode: the running statistics
 * and the gradients after three compiled steps are eager's. */
typedef struct bn_model {
    tj_tensor *w, *gamma, *beta, *mean, *var;
} bn_model;

static tj_tensor *bn_fn(void *ctx, tj_tensor *const *args, int nargs)
{
    bn_model *m = ctx;
    (void)nargs;
    tj_tensor *h = tj_conv2d(args[0], m->w, NULL, NULL, (int64_t[]){1, 1}, NULL, 1);
    return tj_relu(tj_batch_norm_train(h, m->mean, m->var, m->gamma, m->beta, 0.1, 1e-5));
}

static void bn_init(bn_model *m)
{
    tj_manual_seed(11);
    m->w = tj_randn(TJ_F32, 4, (int64_t[]){6, 3, 3, 3});
    m->gamma = tj_rand(TJ_F32, 1, (int64_t[]){6});
    m->beta = tj_randn(TJ_F32, 1, (int64_t[]){6});
    m->mean = tj_zeros(TJ_F32, 1, (int64_t[]){6});
    m->var = tj_ones(TJ_F32, 1, (int64_t[]){6});
    tj_tensor *p[3] = {m->w, m->gamma, m->beta};
    for (int k = 0; k < 3; k++)
        assert_int_equal(tj_requires_grad(p[k], true), 0);
}

static void test_batch_norm_train(void **state)
{
    (void)state;
    tj_scope_begin();
    bn_model e, m;
    bn_init(&e);
    bn_init(&m);
    tj_compiled *c = tj_compile(bn_fn, &m, NULL);
    for (int step = 0; step < 3; step++) {
        tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){4, 3, 8, 8});
        assert_int_equal(tj_backward(loss_of(bn_fn(&e, &x, 1))), 0);
        assert_int_equal(tj_backward(loss_of(tj_call(c, &x, 1))), 0);
        tj_tensor *pe[3] = {e.w, e.gamma, e.beta}, *pm[3] = {m.w, m.gamma, m.beta};
        for (int k = 0; k < 3; k++) {
            tu_assert_close(tj_grad(pm[k]), tj_grad(pe[k]), 1e-4, 1e-4);
            tj_zero_grad(pm[k]);
            tj_zero_grad(pe[k]);
        }
        tu_assert_close(m.mean, e.mean, 1e-5, 1e-6);
        tu_assert_close(m.var, e.var, 1e-5, 1e-6);
    }
    tu_assert_calls(c, 0, 3, "(2 written back)");
    tj_compiled_free(c);
    tj_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_grads), cmocka_unit_test(test_accumulates),
        cmocka_unit_test(test_multi),     cmocka_unit_test(test_no_grad),
        cmocka_unit_test(test_errors),    cmocka_unit_test(test_arg_grad),
        cmocka_unit_test(test_writes), cmocka_unit_test(test_saved_result),
        cmocka_unit_test(test_dump_stages), cmocka_unit_test(test_symbolic_shapes),
        cmocka_unit_test(test_loss_and_outputs), cmocka_unit_test(test_argument_grads),
        cmocka_unit_test(test_batch_norm_train), cmocka_unit_test(test_results_inputs),
        cmocka_unit_test(test_zero_gradients), cmocka_unit_test(test_writes_refused),
        cmocka_unit_test(test_unreached_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
