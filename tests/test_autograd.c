/* test_autograd.c - eager autograd: the tape, its errors, and every gradient
 * rule checked against central finite differences in f64 (gradcheck).
 *
 * The gradcheck cases are text-IR graphs in tests/grad/cases.tir; each is run
 * op by op through the eager API (so the tape records it), the loss is
 * sum_k sum(y_k * r_k) for fixed random r_k, and every float input's
 * gradient is compared with (L(x + h) - L(x - h)) / 2h at every element.
 * Every op with a gradient rule must appear in some case.
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

#include "../frontend/autograd.h"
#include "../ir/graph.h"
#include "util.h"
#include "util_gradcases.h"

/* The cases' inputs: one generator over all of test_gradcheck. */
static uint64_t rng_state;

/* tests/golden/gradcases/<graph>.<what>.npy (scripts/golden/gradcases.py:
 * PyTorch's inputs, seeds and gradients for the graphs of cases.tir), or NULL. */
static tj_tensor *golden_case(const char *graph, const char *what)
{
    char path[512];
    const char *dir = getenv("TJ_GOLDEN_DIR");
    snprintf(path, sizeof path, "%s/gradcases/%s.%s.npy", dir ? dir : "tests/golden", graph, what);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fclose(f);
    tj_tensor *t = tj_load_npy(path);
    if (!t)
        fail_msg("%s: %s", path, tj_last_error());
    return t;
}

/* Counts of the comparisons with PyTorch's gradients. */
static int golden_compared, golden_bad;

static double loss_value(const ir_graph *g, tj_tensor **slot, tj_tensor **r)
{
    tj_no_grad_begin();
    tj_scope_begin();
    double v = tu_case_run(g, slot) == 0 ? tj_item(tu_case_loss(g, slot, r)) : NAN;
    tj_scope_end();
    tj_no_grad_end();
    return v;
}

static int check_case(const ir_graph *g, unsigned char *covered)
{
    int bad = 0;
    tj_tensor **slot = calloc((size_t)(g->ninputs + g->nnodes), sizeof *slot);
    tj_tensor **r = calloc((size_t)g->noutputs, sizeof *r);
    assert_true(slot && r);
    bool golden = golden_case(g->name, g->inputs[0]->name) != NULL;
    for (int k = 0; k < g->ninputs; k++) {
        slot[k] = golden ? tj_clone(golden_case(g->name, g->inputs[k]->name)) : tu_case_input(g->inputs[k], &rng_state);
        assert_non_null(slot[k]);
        if (tu_case_wants_grad(g->inputs[k]))
            assert_int_equal(tj_requires_grad(slot[k], true), 0);
    }
    for (int k = 0; k < g->nnodes; k++)
        covered[g->nodes[k]->op] |= golden ? 2 : 1;
    assert_int_equal(tu_case_run(g, slot), 0);
    for (int k = 0; k < g->noutputs; k++) {
        const ir_type *t = &g->outputs[k]->type;
        char name[16];
        snprintf(name, sizeof name, "r%d", k);
        r[k] = golden ? golden_case(g->name, name) : tj_randn(TJ_F64, t->ndim, t->shape);
    }
    tj_tensor *l = tu_case_loss(g, slot, r);
    assert_non_null(l);
    if (tj_backward(l) != 0)
        fail_msg("@%s: backward: %s", g->name, tj_last_error());
    const double h = 1e-6;
    for (int k = 0; k < g->ninputs; k++) {
        if (!tu_case_wants_grad(g->inputs[k]))
            continue;
        tj_tensor *x = slot[k], *gx = tj_grad(x);
        char what[64];
        snprintf(what, sizeof what, "%s.grad", g->inputs[k]->name);
        tj_tensor *want = golden ? golden_case(g->name, what) : NULL;
        if (want) {
            golden_compared++;
            tj_tensor *got = gx ? gx : tj_zeros(TJ_F64, x->ndim, x->shape);
            if (!tu_all_close(got, want, 1e-7) && golden_bad++ < 5)
                fprintf(stderr, "@%s: d/d%%%s differs from PyTorch's gradient\n", g->name,
                        g->inputs[k]->name);
        }
        double *xv = tj_data(x);
        for (int64_t e = 0; e < tj_numel(x); e++) {
            double save = xv[e];
            xv[e] = save + h;
            double lp = loss_value(g, slot, r);
            xv[e] = save - h;
            double lm = loss_value(g, slot, r);
            xv[e] = save;
            double num = (lp - lm) / (2 * h), ana = gx ? ((double *)tj_data(tj_contiguous(gx)))[e] : 0;
            if (!(fabs(num - ana) <= 1e-5 + 1e-4 * fabs(num))) {
                if (bad++ < 5)
                    fprintf(stderr, "@%s: d/d%%%s[%lld]: tape %.9g, finite differences %.9g\n",
                            g->name, g->inputs[k]->name, (long long)e, ana, num);
            }
        }
    }
    free(slot);
    free(r);
    return bad;
}

typedef struct gradcheck_run {
    unsigned char covered[IR_NUM_OPS];   /* 1: a case; 2: a case with PyTorch's gradients */
    int cases;
} gradcheck_run;

static int gradcheck_case(const ir_graph *g, void *ctx)
{
    gradcheck_run *run = ctx;
    run->cases++;
    return check_case(g, run->covered);
}

static void test_gradcheck(void **state)
{
    (void)state;
    gradcheck_run run = {{0}, 0};
    unsigned char *covered = run.covered;
    rng_state = 1;
    tj_manual_seed(1);
    int bad = tu_cases_each(gradcheck_case, &run), cases = run.cases;
    /* ops PyTorch cannot reproduce, with the reason (skipped.txt, by the script) */
    char skipped[4096] = "";
    FILE *sf = fopen("tests/golden/gradcases/skipped.txt", "r");
    if (sf) {
        size_t n = fread(skipped, 1, sizeof skipped - 1, sf);
        skipped[n] = 0;
        fclose(sf);
    }
    int missing = 0, no_golden = 0;
    for (int op = 0; op < IR_NUM_OPS; op++) {
        if (!ag_rules[op]->vjp)
            continue;
        if (!covered[op]) {
            fprintf(stderr, "gradcheck: no case exercises %s\n", ir_ops[op].name);
            missing++;
        }
        char key[64];
        snprintf(key, sizeof key, "%s: ", ir_ops[op].name);
        if (covered[op] && !(covered[op] & 2) && !strstr(skipped, key)) {
            fprintf(stderr, "gradcheck: no PyTorch gradient for %s (run make golden)\n", ir_ops[op].name);
            no_golden++;
        }
    }
    printf("gradcheck: %d cases, %d mismatches with finite differences, %d gradients compared "
           "with PyTorch's, %d mismatches, %d ops without a case, %d without PyTorch's gradient\n",
           cases, bad, golden_compared, golden_bad, missing, no_golden);
    assert_int_equal(bad, 0);
    assert_int_equal(golden_bad, 0);
    assert_int_equal(missing, 0);
    assert_int_equal(no_golden, 0);
}

/* ---- golden gradients from PyTorch (scripts/golden/grad.py) ------------------------ */

typedef tj_tensor *(*golden_fn)(tj_tensor **in);

static tj_tensor *g_add(tj_tensor **in) { return tj_add(in[0], in[1]); }
static tj_tensor *g_mul(tj_tensor **in) { return tj_mul(in[0], in[1]); }
static tj_tensor *g_div(tj_tensor **in) { return tj_div(in[0], in[1]); }
static tj_tensor *g_maximum(tj_tensor **in) { return tj_maximum(in[0], in[1]); }
static tj_tensor *g_relu(tj_tensor **in) { return tj_relu(in[0]); }
static tj_tensor *g_abs(tj_tensor **in) { return tj_abs(in[0]); }
static tj_tensor *g_sum(tj_tensor **in) { return tj_sum(in[0], (int[]){0, 2}, 2, false); }
static tj_tensor *g_amax(tj_tensor **in) { return tj_amax(in[0], (int[]){1}, 1, false); }
static tj_tensor *g_tmatmul(tj_tensor **in) { return tj_matmul(tj_transpose(in[0], 0, 1), in[1]); }
static tj_tensor *g_matmul(tj_tensor **in) { return tj_matmul(in[0], in[1]); }
static tj_tensor *g_conv(tj_tensor **in)
{
    return tj_conv2d(in[0], in[1], in[2], (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, 2);
}
static tj_tensor *g_maxpool(tj_tensor **in)
{
    return tj_max_pool2d(in[0], (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){1, 1});
}
static tj_tensor *g_maxpool_ext(tj_tensor **in)
{
    tj_max_pool2d_options o = tj_max_pool2d_defaults();
    o.stride = (int64_t[]){2, 2};
    o.padding = (int64_t[]){1, 1};
    o.ceil_mode = true;
    return tj_max_pool2d_ex(in[0], (int64_t[]){3, 3}, &o, NULL);
}
static tj_tensor *g_avgpool(tj_tensor **in)
{
    return tj_avg_pool2d(in[0], (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 1}, false);
}
static tj_tensor *g_layer_norm(tj_tensor **in) { return tj_layer_norm(in[0], 1, in[1], in[2], 1e-5); }
static tj_tensor *g_batch_norm(tj_tensor **in) { return tj_batch_norm(in[0], in[1], in[2], in[3], in[4], 1e-5); }
static tj_tensor *g_embedding(tj_tensor **in) { return tj_embedding(in[0], in[1]); }
static tj_tensor *g_sdpa(tj_tensor **in) { return tj_scaled_dot_product_attention(in[0], in[1], in[2], NULL, true, 0); }
static tj_tensor *g_xent(tj_tensor **in) { return tj_cross_entropy(in[0], in[1]); }
static tj_tensor *g_xent_opts(tj_tensor **in, tj_reduction red, int64_t ignore, double smoothing)
{
    tj_cross_entropy_options o = {red, in[2], ignore, smoothing};
    return tj_cross_entropy_ex(in[0], in[1], &o);
}
static tj_tensor *g_xent_nd(tj_tensor **in) { return g_xent_opts(in, TJ_REDUCTION_MEAN, 2, 0.2); }
static tj_tensor *g_xent_none(tj_tensor **in) { return g_xent_opts(in, TJ_REDUCTION_NONE, -1, 0); }
static tj_tensor *g_xent_probs(tj_tensor **in) { return g_xent_opts(in, TJ_REDUCTION_SUM, -100, 0.1); }
static tj_tensor *g_log_softmax(tj_tensor **in) { return tj_log_softmax(in[0], 1); }
static tj_tensor *g_gelu_tanh(tj_tensor **in) { return tj_gelu_tanh(in[0]); }

static tj_tensor *bn_running[2];   /* set by test_golden_gradients for g_bn_train */
static tj_tensor *g_bn_train(tj_tensor **in)
{
    return tj_batch_norm_train(in[0], bn_running[0], bn_running[1], in[1], in[2], 0.1, 1e-5);
}

static const struct {
    const char *name;
    golden_fn fn;
} golden_cases[] = {
    {"batch_norm_train", g_bn_train},
    {"add_broadcast", g_add},  {"mul_broadcast", g_mul},       {"div", g_div},
    {"maximum_ties", g_maximum}, {"relu_zero", g_relu},        {"abs_zero", g_abs},
    {"sum_dims", g_sum},       {"amax_ties", g_amax},          {"transpose_matmul", g_tmatmul},
    {"matmul_batch", g_matmul}, {"conv2d", g_conv},            {"max_pool2d", g_maxpool},
    {"avg_pool2d", g_avgpool}, {"layer_norm", g_layer_norm},   {"batch_norm", g_batch_norm},
    {"embedding", g_embedding}, {"sdpa_causal", g_sdpa},       {"cross_entropy", g_xent},
    {"log_softmax", g_log_softmax}, {"gelu_tanh", g_gelu_tanh},
    {"cross_entropy_nd", g_xent_nd}, {"cross_entropy_none", g_xent_none},
    {"cross_entropy_probs", g_xent_probs}, {"max_pool2d_ext", g_maxpool_ext},
};

/* tests/golden/grad/<case>.<what>.npy, or NULL when there is none. */
static tj_tensor *golden_opt(const char *c, const char *what)
{
    char path[256];
    const char *dir = getenv("TJ_GOLDEN_DIR");
    snprintf(path, sizeof path, "%s/grad/%s.%s.npy", dir ? dir : "tests/golden", c, what);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fclose(f);
    return tj_load_npy(path);
}

static void test_golden_gradients(void **state)
{
    (void)state;
    bn_running[0] = tj_clone(golden_opt("batch_norm_train", "rm"));
    bn_running[1] = tj_clone(golden_opt("batch_norm_train", "rv"));
    for (size_t c = 0; c < sizeof golden_cases / sizeof *golden_cases; c++) {
        const char *name = golden_cases[c].name;
        tj_tensor *in[8] = {0};
        char what[16];
        int n = 0;
        for (; n < 8; n++) {
            snprintf(what, sizeof what, "in%d", n);
            if (!(in[n] = golden_opt(name, what)))
                break;
            snprintf(what, sizeof what, "grad%d", n);
            if (golden_opt(name, what))
                assert_int_equal(tj_requires_grad(in[n], true), 0);
        }
        assert_true(n > 0);
        tj_tensor *y = golden_cases[c].fn(in);
        if (!y)
            fail_msg("%s: %s", name, tj_last_error());
        assert_int_equal(tj_backward_seed(y, golden_opt(name, "seed")), 0);
        for (int k = 0; k < n; k++) {
            snprintf(what, sizeof what, "grad%d", k);
            tj_tensor *want = golden_opt(name, what);
            if (!want)
                continue;
            if (!tj_grad(in[k]))
                fail_msg("%s: input %d got no gradient", name, k);
            tj_tensor *got = tj_grad(in[k]);
            assert_int_equal(tj_ndim(got), tj_ndim(want));
            assert_memory_equal(tj_shape(got), tj_shape(want), (size_t)tj_ndim(want) * sizeof(int64_t));
            if (!tu_all_close(got, want, 1e-4))
                fail_msg("%s: the gradient of input %d differs from PyTorch's", name, k);
        }
    }
    tu_assert_close(bn_running[0], golden_opt("batch_norm_train", "rm_after"), 1e-5, 1e-6);
    tu_assert_close(bn_running[1], golden_opt("batch_norm_train", "rv_after"), 1e-5, 1e-6);
}

/* ---- the tape's behaviour and errors ---------------------------------------------------- */

static tj_tensor *vec(double a, double b, double c)
{
    return tu_tensor(TJ_F32, 1, (int64_t[]){3}, (double[]){a, b, c});
}

static void test_accumulate_and_zero(void **state)
{
    (void)state;
    tj_tensor *w = vec(1, 2, 3);
    assert_int_equal(tj_requires_grad(w, true), 0);
    assert_true(tj_get_requires_grad(w));
    assert_null(tj_grad(w));
    for (int k = 0; k < 2; k++)
        assert_int_equal(tj_backward(tj_sum(tj_mul(w, w), NULL, 0, false)), 0);
    tu_assert_close(tj_grad(w), vec(4, 8, 12), 0, 0);   /* 2w, twice */
    tj_zero_grad(w);
    assert_null(tj_grad(w));
}

static void test_no_grad_records_nothing(void **state)
{
    (void)state;
    tj_tensor *w = vec(1, 2, 3);
    tj_requires_grad(w, true);
    tj_no_grad_begin();
    assert_false(tj_grad_enabled());
    tj_tensor *y = tj_mul(w, w);
    tj_no_grad_end();
    assert_true(tj_grad_enabled());
    assert_false(tj_get_requires_grad(y));
    tu_assert_error(tj_backward(tj_sum(y, NULL, 0, false)) == 0 ? (void *)1 : NULL,
                    "does not require grad", NULL);
    /* no input requires grad: nothing recorded */
    tj_tensor *x = vec(1, 2, 3);
    assert_false(tj_get_requires_grad(tj_exp(x)));
}

static void test_detach_and_seed(void **state)
{
    (void)state;
    tj_tensor *w = vec(1, 2, 3);
    tj_requires_grad(w, true);
    tj_tensor *d = tj_detach(tj_mul(w, w));
    assert_false(tj_get_requires_grad(d));
    tj_tensor *y = tj_mul(tj_mul(w, w), d);   /* d is a constant: dy/dw = 2 w d */
    tu_assert_error(tj_backward(y) == 0 ? (void *)1 : NULL, "seed is needed", NULL);
    assert_int_equal(tj_backward_seed(y, vec(1, 1, 2)), 0);
    tu_assert_close(tj_grad(w), vec(2, 16, 108), 1e-6, 0);
    tu_assert_error(tj_backward_seed(tj_mul(w, w), tj_ones(TJ_F32, 1, (int64_t[]){2})) == 0 ? (void *)1 : NULL,
                    "another shape", NULL);
}

static void test_errors(void **state)
{
    (void)state;
    tj_tensor *i = tj_arange(TJ_I64, 0, 3, 1);
    tu_assert_error(tj_requires_grad(i, true) == 0 ? (void *)1 : NULL, "only float", NULL);
    tu_assert_error(tj_requires_grad(NULL, true) == 0 ? (void *)1 : NULL, "NULL", NULL);
    tu_assert_error(tj_backward(NULL) == 0 ? (void *)1 : NULL, "NULL", NULL);
    tj_tensor *w = vec(1, 2, 3);
    tj_requires_grad(w, true);
    tj_tensor *y = tj_mul(w, w);
    tu_assert_error(tj_requires_grad(y, true) == 0 ? (void *)1 : NULL, "not a leaf", NULL);
    /* the tape is freed by a backward: a second one through it fails */
    tj_tensor *l = tj_sum(y, NULL, 0, false);
    assert_int_equal(tj_backward(l), 0);
    tu_assert_error(tj_backward(l) == 0 ? (void *)1 : NULL, "TJ_RETAIN_GRAPH", NULL);
    /* a saved tensor written in place before backward */
    tj_tensor *x = vec(1, 2, 3);
    tj_requires_grad(x, true);
    tj_tensor *e = tj_exp(x);            /* saves its result */
    tj_tensor *l2 = tj_sum(tj_mul(e, e), NULL, 0, false);
    assert_int_equal(tj_copy_(e, vec(0, 0, 0)), 0);
    tu_assert_error(tj_backward(l2) == 0 ? (void *)1 : NULL, "modified in place", NULL);
    /* a leaf that requires grad cannot be written in place with grad on */
    tu_assert_error(tj_copy_(x, vec(0, 0, 0)) == 0 ? (void *)1 : NULL, "in place", NULL);
    tj_no_grad_begin();
    assert_int_equal(tj_copy_(x, vec(0, 0, 0)), 0);
    tj_no_grad_end();
}

/* In-place writes into saved values, as PyTorch's saved-tensor check: an
 * error where a rule needs the old values, also those of an input that
 * needs no gradient; none where no rule reads them (found by test_programs'
 * training steps: a clone written in place was refused). */
static void test_saved_values_written(void **state)
{
    (void)state;
    tj_tensor *a = vec(1, 2, 3), *b = vec(10, 20, 30);
    tj_requires_grad(a, true);
    tj_tensor *y = tj_mul(a, b);   /* a's gradient reads b, which needs none */
    assert_int_equal(tj_add_s_(b, 1), 0);
    tu_assert_error(tj_backward(tj_sum(y, NULL, 0, false)) == 0 ? (void *)1 : NULL,
                    "input 1 of mul (f32[3]) was modified in place after it was saved", NULL);
    assert_null(tj_grad(a));
    /* clone's and add's rules read no values: the write is not an error */
    tj_tensor *w = vec(1, 2, 3);
    tj_requires_grad(w, true);
    tj_tensor *r = tj_clone(tj_mul_s(w, 2));
    assert_int_equal(tj_add_s_(r, 1), 0);
    assert_int_equal(tj_backward(tj_sum(tj_mul(r, r), NULL, 0, false)), 0);
    tu_assert_close(tj_grad(w), vec(12, 20, 28), 0, 0);   /* 2 * 2 (2 w + 1) */
}

/* Integer and bool inputs (indices, masks) never get a gradient. */
static void test_nondifferentiable_inputs(void **state)
{
    (void)state;
    tj_tensor *w = tu_tensor(TJ_F32, 2, (int64_t[]){3, 2}, (double[]){1, 2, 3, 4, 5, 6});
    tj_requires_grad(w, true);
    tj_tensor *idx = tu_tensor(TJ_I64, 1, (int64_t[]){3}, (double[]){2, 0, 2});
    tj_tensor *e = tj_embedding(w, idx);
    assert_int_equal(tj_backward(tj_sum(e, NULL, 0, false)), 0);
    tu_assert_close(tj_grad(w), tu_tensor(TJ_F32, 2, (int64_t[]){3, 2}, (double[]){1, 1, 0, 0, 2, 2}), 0, 0);
    assert_null(tj_grad(idx));
    assert_false(tj_get_requires_grad(tj_gt_s(w, 2)));
}

/* cumprod's gradient at zeros (one zero, two zeros, a zero first and last in
 * a row), against the products written out: d y_j / d x_i is the product of
 * x_k over k <= j, k != i. */
static void test_cumprod_zeros(void **state)
{
    (void)state;
    enum { R = 4, N = 5 };
    const double v[R][N] = {{2, 0, 3, 0.5, 4}, {1.5, 2, 0, 0, -1}, {0, 3, -2, 1, 2}, {1, 2, 3, -1, 0}};
    const double w[N] = {0.3, -1, 2, 0.7, 1.1};   /* seed: g_j */
    tj_tensor *x = tu_tensor(TJ_F64, 2, (int64_t[]){R, N}, &v[0][0]);
    tj_requires_grad(x, true);
    tj_tensor *seed = tj_expand(tu_tensor(TJ_F64, 1, (int64_t[]){N}, w), 2, (int64_t[]){R, N});
    assert_int_equal(tj_backward_seed(tj_cumprod(x, 1), seed), 0);
    double want[R][N];
    for (int r = 0; r < R; r++)
        for (int i = 0; i < N; i++) {
            double s = 0;
            for (int j = i; j < N; j++) {
                double p = 1;
                for (int k = 0; k <= j; k++)
                    p *= k == i ? 1 : v[r][k];
                s += w[j] * p;
            }
            want[r][i] = s;
        }
    tu_assert_close(tj_grad(x), tu_tensor(TJ_F64, 2, (int64_t[]){R, N}, &want[0][0]), 1e-12, 1e-12);
}

/* An in-place write over the whole of a non-leaf (y = clone(w); y *= 0.75)
 * takes the written value's history, as PyTorch's copy_ does: the backward
 * ignored the write (d sum(y)/dw was 1, silently; found by the random
 * programs' train mode, seed 714148). Eager, and in a compiled step whose
 * backward is traced. */
static tj_tensor *inplace_loss(tj_tensor *w, tj_tensor *x)
{
    tj_tensor *y = tj_clone(w), *z = tj_clone(w), *u = tj_clone(w);
    if (tj_mul_s_(y, 0.75) != 0 || tj_add_(z, x) != 0 || tj_copy_(u, tj_full(TJ_F64, 0, NULL, 2)) != 0)
        return NULL;
    tj_tensor *l = tj_add(tj_sum(y, NULL, 0, false), tj_sum(tj_mul(z, z), NULL, 0, false));
    return tj_add(l, tj_sum(tj_atan2(w, tj_abs(y)), NULL, 0, false));   /* d/dw atan2(w, .75|w|) = 0 */
}

static tj_tensor *inplace_step(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *w = ctx, *l = inplace_loss(w, x[0]);
    return l && tj_backward(l) == 0 ? tj_detach(l) : NULL;
}

static void test_inplace_history(void **state)
{
    (void)state;
    double wv[3] = {0.7, -1.3, 2.0}, xv[3] = {0.5, 1.0, -3.0}, want[3];
    for (int k = 0; k < 3; k++)   /* 0.75 + 2 (w + x) + 0 */
        want[k] = 0.75 + 2 * (wv[k] + xv[k]);
    tj_tensor *x = tj_from_data(TJ_F64, 1, (int64_t[]){3}, xv);
    tj_tensor *w = tj_keep(tj_from_data(TJ_F64, 1, (int64_t[]){3}, wv));
    assert_int_equal(tj_requires_grad(w, true), 0);
    assert_int_equal(tj_backward(inplace_loss(w, x)), 0);
    tu_assert_close(tj_grad(w), tj_from_data(TJ_F64, 1, (int64_t[]){3}, want), 1e-12, 1e-12);
    tj_compiled *c = tj_compile(inplace_step, w, &(tj_compile_options){.name = "inplace_step"});
    for (int k = 0; k < 2; k++) {
        tj_zero_grad(w);
        assert_non_null(tj_call(c, &x, 1));
        tu_assert_close(tj_grad(w), tj_from_data(TJ_F64, 1, (int64_t[]){3}, want), 1e-12, 1e-12);
    }
    tj_compiled_free(c);
    tj_release(w);
}

/* std's gradient where a row is constant: 0, as PyTorch's (the function
 * stays 0 nearby). The rounded mean of equal values centred them to a
 * nonzero over a std of the same size: 0.68 and NaN (found by the random
 * programs' grad mode, seed 6881435, through cummax's equal running maxima). */
static void test_std_constant_rows(void **state)
{
    (void)state;
    const double v[2][16] = {{1.874, 1.874, 1.874, 1.874, 1.874, 1.874, 1.874, 1.874, 1.874, 1.874, 1.874,
                              1.874, 1.874, 1.874, 1.874, 1.874},
                             {0.1, 0.4, -0.3, 0.9, 0.2, 0.5, -0.1, 0.8, 0.3, 0.6, 0.0, 0.7, -0.2, 0.35, 0.45, 0.15}};
    tj_tensor *x = tu_tensor(TJ_F64, 2, (int64_t[]){2, 16}, &v[0][0]);
    assert_int_equal(tj_requires_grad(x, true), 0);
    assert_int_equal(tj_backward(tj_sum(tj_std(x, (int[]){1}, 1, 1, false), NULL, 0, false)), 0);
    const double *g = tj_data(tj_contiguous(tj_grad(x)));
    double mean = 0, ss = 0;
    for (int k = 0; k < 16; k++)
        mean += v[1][k] / 16;
    for (int k = 0; k < 16; k++)
        ss += (v[1][k] - mean) * (v[1][k] - mean);
    for (int k = 0; k < 16; k++) {
        assert_true(g[k] == 0.0);   /* the constant row */
        assert_true(fabs(g[16 + k] - (v[1][k] - mean) / (15 * sqrt(ss / 15))) < 1e-12);
    }
}

/* A traced backward reads a saved value as it was saved, though the model
 * wrote it in place afterwards (y = std(x); y *= 0.75): the functionalized
 * graph's gradient, the same as with the write out of place. It read the
 * written value: a wrong gradient, silently (random programs' grad mode,
 * seed 6881435); eagerly the backward is refused. */
static bool written_in_place;
static tj_tensor *std_scaled(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *y = tj_std(a[0], (int[]){1}, 1, 1, false);
    if (written_in_place ? tj_mul_s_(y, 0.75) != 0 : !(y = tj_mul_s(y, 0.75)))
        return NULL;
    tj_tensor *t = tj_clamp(y, -1.5, 2);
    return tj_sin(tj_mul(t, tj_sum(t, (int[]){-1}, 1, true)));
}

static void test_traced_saved_values(void **state)
{
    (void)state;
    tj_manual_seed(11);
    tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){3, 16});
    assert_int_equal(tj_requires_grad(x, true), 0);
    written_in_place = false;
    assert_int_equal(tj_backward(tj_sum(std_scaled(NULL, &x, 1), NULL, 0, false)), 0);
    tj_tensor *want = tj_clone(tj_grad(x));
    tj_zero_grad(x);
    written_in_place = true;
    tu_assert_error(tj_backward(tj_sum(std_scaled(NULL, &x, 1), NULL, 0, false)) == 0 ? (void *)1 : NULL,
                    "the result of std (f64[3]) was modified in place after it was saved", NULL);
    tj_zero_grad(x);
    tj_compiled *c = tj_compile(std_scaled, NULL, &(tj_compile_options){.name = "std_scaled"});
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tj_backward(tj_sum(tj_call(c, &x, 1), NULL, 0, false)), 0);
        tu_assert_close(tj_grad(x), want, 1e-12, 1e-12);
        tj_zero_grad(x);
    }
    tu_assert_calls(c, 0, 2, "joint graph partitioned");
    tj_compiled_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_accumulate_and_zero), T(test_no_grad_records_nothing), T(test_detach_and_seed),
        T(test_errors),              T(test_nondifferentiable_inputs), T(test_gradcheck),
        T(test_golden_gradients),    T(test_cumprod_zeros),              T(test_saved_values_written), T(test_inplace_history),
        T(test_std_constant_rows),   T(test_traced_saved_values),
#undef T
    };
    return cmocka_run_group_tests_name("autograd", tests, NULL, NULL);
}
