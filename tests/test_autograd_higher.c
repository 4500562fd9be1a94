/* test_autograd_higher.c - gradients of gradients (TJ_CREATE_GRAPH), the
 * gradients of chosen inputs (tj_gradients), another backward through a kept
 * graph (TJ_RETAIN_GRAPH), and their errors.
 *
 * The second-order check runs every graph of tests/grad/cases.tir: with L the
 * case's loss and v a random direction, the Hessian-vector product
 * d<dL/dx, v>/dx from a backward through the recorded first backward is
 * compared with the central difference (dL/dx(x + h v) - dL/dx(x - h v)) / 2h
 * of first-order gradients, which test_autograd checks against finite
 * differences and PyTorch. So every gradient rule is itself checked as a
 * function that can be differentiated again.
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
#include "util.h"
#include "util_gradcases.h"

/* ---- the second-order check over cases.tir ---------------------------------------- */

typedef struct hvp_run {
    uint64_t rng;
    int cases, checked, bad, refused, jvps;
} hvp_run;

/* The inputs that get gradients, into xs; how many. */
static int grad_inputs(const ir_graph *g, tj_tensor **slot, tj_tensor **xs)
{
    int nx = 0;
    for (int k = 0; k < g->ninputs; k++)
        if (tu_case_wants_grad(g->inputs[k]))
            xs[nx++] = slot[k];
    return nx;
}

/* Cases whose double backward is refused, and why (as PyTorch refuses it). */
static const struct {
    const char *graph, *why;
} refused[] = {
    {"scatter_prod_zeros", "scatter_reduce: a gradient of the gradient (TJ_CREATE_GRAPH) of reduce prod "
                           "where several zeros of src reach one place is not supported"},
};

/* dL/dx at the slots' current input values (a fresh tape), into gx; 0, or
 * -1 where the case is refused (checked: why). */
static int first_order(const ir_graph *g, tj_tensor **slot, tj_tensor **r, tj_tensor **xs, int nx,
                       unsigned flags, tj_tensor **gx)
{
    assert_int_equal(tu_case_run(g, slot), 0);
    tj_tensor *l = tu_case_loss(g, slot, r);
    assert_non_null(l);
    const char *why = NULL;
    for (size_t k = 0; flags & TJ_CREATE_GRAPH && k < sizeof refused / sizeof refused[0]; k++)
        why = strcmp(g->name, refused[k].graph) ? why : refused[k].why;
    int rc = tj_gradients(&l, NULL, 1, xs, nx, flags | TJ_ALLOW_UNUSED, gx);
    if (why) {
        tu_assert_error(rc == 0 ? (void *)1 : NULL, why, NULL);
        return -1;
    }
    if (rc != 0)
        fail_msg("@%s: gradients: %s", g->name, tj_last_error());
    return 0;
}

/* Each input moved by h v (in place, outside the tape). */
static void move_inputs(tj_tensor **xs, tj_tensor **v, int nx, double h)
{
    for (int k = 0; k < nx; k++) {
        double *x = tj_data(xs[k]);
        const double *d = tj_data(v[k]);
        for (int64_t e = 0; e < tj_numel(xs[k]); e++)
            x[e] += h * d[e];
    }
}

/* Outputs idx[0..n) of a run at x + s v (no tape), as copies, into y. */
static void outputs_at(const ir_graph *g, tj_tensor **slot, tj_tensor **xs, tj_tensor **v, int nx, double s,
                       const int *idx, int n, tj_tensor **y)
{
    move_inputs(xs, v, nx, s);
    tj_no_grad_begin();
    assert_int_equal(tu_case_run(g, slot), 0);
    for (int i = 0; i < n; i++)
        y[i] = tj_clone(tu_case_output(g, slot, idx[i]));
    tj_no_grad_end();
    move_inputs(xs, v, nx, -s);
}

/* J v of the case's f64 outputs along v (tj_jvp: two backward passes)
 * against central differences of the outputs; mismatches. */
static int jvp_case(const ir_graph *g, tj_tensor **slot, tj_tensor **xs, tj_tensor **v, int nx, hvp_run *run)
{
    tj_tensor *ys[8], *jv[8], *yp[8], *ym[8];
    int idx[8], ny = 0, bad = 0;
    assert_int_equal(tu_case_run(g, slot), 0);   /* a tape at x */
    for (int k = 0; k < g->noutputs && ny < 8; k++) {
        tj_tensor *o = tu_case_output(g, slot, k);
        if (tj_dtype_of(o) == TJ_F64 && tj_get_requires_grad(o))
            idx[ny] = k, ys[ny++] = o;
    }
    if (!ny)
        return 0;
    if (tj_jvp(ys, ny, xs, v, nx, 0, jv) != 0)
        fail_msg("@%s: jvp: %s", g->name, tj_last_error());
    const double h = 1e-6;
    outputs_at(g, slot, xs, v, nx, h, idx, ny, yp);
    outputs_at(g, slot, xs, v, nx, -h, idx, ny, ym);
    run->jvps++;
    for (int k = 0; k < ny; k++) {
        const double *a = tj_data(tj_contiguous(jv[k])), *p = tj_data(tj_contiguous(yp[k])),
                     *m = tj_data(tj_contiguous(ym[k]));
        for (int64_t e = 0; e < tj_numel(jv[k]); e++) {
            double num = (p[e] - m[e]) / (2 * h);
            if (!(fabs(num - a[e]) <= 1e-5 + 1e-4 * fabs(num)) && bad++ < 3)
                fprintf(stderr, "@%s: J v of output %d [%lld]: jvp %.9g, differences %.9g\n", g->name, idx[k],
                        (long long)e, a[e], num);
        }
    }
    return bad;
}

static int hvp_case(const ir_graph *g, void *ctx)
{
    hvp_run *run = ctx;
    int n = g->ninputs + g->nnodes, bad = 0;
    tj_tensor **slot = calloc((size_t)n, sizeof *slot), **r = calloc((size_t)g->noutputs, sizeof *r);
    tj_tensor *xs[16], *v[16], *gx[16], *hv[16], *gp[16], *gm[16];
    assert_true(slot && r && g->ninputs <= 16);
    for (int k = 0; k < g->ninputs; k++) {
        slot[k] = tu_case_input(g->inputs[k], &run->rng);
        if (tu_case_wants_grad(g->inputs[k]))
            assert_int_equal(tj_requires_grad(slot[k], true), 0);
    }
    int nx = grad_inputs(g, slot, xs);
    for (int k = 0; k < g->noutputs; k++) {
        const ir_type *t = &g->outputs[k]->type;
        r[k] = tj_randn(TJ_F64, t->ndim, t->shape);
    }
    for (int k = 0; k < nx; k++)
        v[k] = tj_randn(TJ_F64, xs[k]->ndim, xs[k]->shape);
    if (!nx)
        goto done;
    run->cases++;
    /* the Hessian-vector product through the recorded backward */
    if (first_order(g, slot, r, xs, nx, TJ_CREATE_GRAPH, gx) != 0) {
        run->refused++;
        goto done;
    }
    tj_tensor *s = NULL;
    for (int k = 0; k < nx; k++) {
        tj_tensor *t = tj_sum(tj_mul(gx[k], v[k]), NULL, 0, false);
        s = s ? tj_add(s, t) : t;
    }
    assert_non_null(s);
    if (tj_get_requires_grad(s)) {
        if (tj_gradients(&s, NULL, 1, xs, nx, TJ_ALLOW_UNUSED, hv) != 0)
            fail_msg("@%s: second backward: %s", g->name, tj_last_error());
    } else {   /* no gradient depends on x: the case is linear in it */
        for (int k = 0; k < nx; k++)
            hv[k] = tj_zeros(TJ_F64, xs[k]->ndim, xs[k]->shape);
    }
    /* against central differences of first-order gradients along v */
    const double h = 1e-5;
    move_inputs(xs, v, nx, h);
    first_order(g, slot, r, xs, nx, 0, gp);
    move_inputs(xs, v, nx, -2 * h);
    first_order(g, slot, r, xs, nx, 0, gm);
    move_inputs(xs, v, nx, h);
    for (int k = 0; k < nx; k++) {
        const double *a = tj_data(tj_contiguous(hv[k])), *p = tj_data(tj_contiguous(gp[k])),
                     *m = tj_data(tj_contiguous(gm[k]));
        for (int64_t e = 0; e < tj_numel(xs[k]); e++) {
            double num = (p[e] - m[e]) / (2 * h);
            run->checked++;
            if (!(fabs(num - a[e]) <= 1e-5 + 1e-4 * fabs(num)) && bad++ < 3)
                fprintf(stderr, "@%s: Hv of input %d [%lld]: double backward %.9g, differences %.9g\n",
                        g->name, k, (long long)e, a[e], num);
        }
    }
    bad += jvp_case(g, slot, xs, v, nx, run);
done:
    free(slot);
    free(r);
    return bad;
}

static void test_hessian_vector_cases(void **state)
{
    (void)state;
    hvp_run run = {.rng = 7};
    tj_manual_seed(7);
    int bad = tu_cases_each(hvp_case, &run);
    printf("double backward: %d cases (%d refused), %d Hessian-vector elements, %d jvps, %d mismatches "
           "with differences\n", run.cases, run.refused, run.checked, run.jvps, bad);
    assert_true(run.cases > 30);
    assert_int_equal(run.refused, sizeof refused / sizeof refused[0]);
    assert_int_equal(bad, 0);
}

/* ---- closed forms ------------------------------------------------------------------- */

static tj_tensor *vec(double a, double b, double c)
{
    return tu_tensor(TJ_F64, 1, (int64_t[]){3}, (double[]){a, b, c});
}

/* f = sum(x^3): gradient 3 x^2, Hessian-vector product 6 x v, third 6 v w. */
static void test_cubic_closed_form(void **state)
{
    (void)state;
    tj_tensor *x = vec(1, -2, 0.5), *v = vec(1, 2, 3), *w = vec(-1, 1, 2);
    assert_int_equal(tj_requires_grad(x, true), 0);
    tj_tensor *f = tj_sum(tj_mul(tj_mul(x, x), x), NULL, 0, false), *g, *hv, *t;
    assert_int_equal(tj_gradients(&f, NULL, 1, &x, 1, TJ_CREATE_GRAPH, &g), 0);
    tu_assert_close(g, vec(3, 12, 0.75), 1e-15, 0);
    assert_true(tj_get_requires_grad(g));
    tj_tensor *gv = tj_sum(tj_mul(g, v), NULL, 0, false);
    assert_int_equal(tj_gradients(&gv, NULL, 1, &x, 1, TJ_CREATE_GRAPH, &hv), 0);
    tu_assert_close(hv, vec(6, -24, 9), 1e-15, 0);
    tj_tensor *hw = tj_sum(tj_mul(hv, w), NULL, 0, false);
    assert_int_equal(tj_gradients(&hw, NULL, 1, &x, 1, 0, &t), 0);
    tu_assert_close(t, vec(-6, 12, 36), 1e-15, 0);
    assert_null(tj_grad(x));   /* tj_gradients writes no .grad */
}

/* tj_jvp: y1 = x^3 elementwise, y2 = A x: J v = 3 x^2 v and A v; the ys'
 * graph kept for a backward after; its errors. */
static void test_jvp(void **state)
{
    (void)state;
    tj_tensor *x = vec(1, -2, 0.5), *v = vec(1, 2, 3), *jv[2];
    tj_tensor *a = tu_tensor(TJ_F64, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
    assert_int_equal(tj_requires_grad(x, true), 0);
    tj_tensor *ys[2] = {tj_mul(tj_mul(x, x), x), tj_matmul(a, x)};
    assert_int_equal(tj_jvp(ys, 2, &x, &v, 1, 0, jv), 0);
    tu_assert_close(jv[0], vec(3, 24, 2.25), 1e-15, 0);
    tu_assert_close(jv[1], tu_tensor(TJ_F64, 1, (int64_t[]){2}, (double[]){14, 32}), 1e-15, 0);
    assert_false(tj_get_requires_grad(jv[0]));
    assert_int_equal(tj_backward(tj_sum(ys[1], NULL, 0, false)), 0);   /* the graph was kept */
    tu_assert_close(tj_grad(x), vec(5, 7, 9), 0, 0);
    tj_tensor *short_v = tu_tensor(TJ_F64, 1, (int64_t[]){2}, (double[]){1, 1});
    tu_assert_error(tj_jvp(ys, 2, &x, &short_v, 1, 0, jv) == 0 ? (void *)1 : NULL,
                    "jvp: tangent 0 (f64[2]) does not have the shape of input (f64[3])", NULL);
    tu_assert_error(tj_jvp(ys, 2, &x, &v, 1, TJ_RETAIN_GRAPH, jv) == 0 ? (void *)1 : NULL,
                    "jvp: unknown flags 0x1", NULL);
    tu_assert_error(tj_jvp(ys, 0, &x, &v, 1, 0, jv) == 0 ? (void *)1 : NULL, "jvp: needs at least one output",
                    NULL);
}

/* A gradient penalty, as WGAN-GP trains: D(x) = sum(tanh(x W)), loss =
 * sum((dD/dx)^2); the loss's gradient in W goes through the first backward.
 * Checked against central differences over every element of W. */
static tj_tensor *penalty(tj_tensor *x, tj_tensor *w, bool create)
{
    tj_tensor *d = tj_sum(tj_tanh(tj_matmul(x, w)), NULL, 0, false), *gx;
    if (tj_gradients(&d, NULL, 1, &x, 1, create ? TJ_CREATE_GRAPH : 0, &gx) != 0)
        return NULL;
    return tj_sum(tj_mul(gx, gx), NULL, 0, false);
}

static void test_gradient_penalty(void **state)
{
    (void)state;
    tj_manual_seed(3);
    tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){4, 3}), *w = tj_randn(TJ_F64, 2, (int64_t[]){3, 5});
    assert_int_equal(tj_requires_grad(x, true), 0);
    assert_int_equal(tj_requires_grad(w, true), 0);
    tj_tensor *l = penalty(x, w, true);
    assert_non_null(l);
    assert_int_equal(tj_backward(l), 0);
    tj_tensor *gw = tj_clone(tj_grad(w));
    assert_non_null(gw);
    double *wv = tj_data(w);
    const double *a = tj_data(gw);
    for (int64_t e = 0; e < tj_numel(w); e++) {
        double save = wv[e], h = 1e-6;
        wv[e] = save + h;
        double lp = tj_item(penalty(x, w, false));
        wv[e] = save - h;
        double lm = tj_item(penalty(x, w, false));
        wv[e] = save;
        assert_true(fabs((lp - lm) / (2 * h) - a[e]) <= 1e-6 + 1e-5 * fabs(a[e]));
    }
}

/* tj_backward_ex(TJ_CREATE_GRAPH): .grad keeps its history, and a backward
 * of a function of it adds the second-order part, as PyTorch's
 * x.grad.sum().backward() after backward(create_graph=True). */
static void test_backward_create_graph(void **state)
{
    (void)state;
    tj_tensor *x = vec(1, 2, 3);
    assert_int_equal(tj_requires_grad(x, true), 0);
    tj_tensor *f = tj_sum(tj_mul(tj_mul(x, x), x), NULL, 0, false);
    assert_int_equal(tj_backward_ex(f, NULL, TJ_CREATE_GRAPH), 0);
    tj_tensor *g = tj_grad(x);
    tu_assert_close(g, vec(3, 12, 27), 0, 0);
    assert_true(tj_get_requires_grad(g));
    assert_int_equal(tj_backward(tj_sum(g, NULL, 0, false)), 0);   /* adds 6 x */
    tu_assert_close(tj_grad(x), vec(9, 24, 45), 0, 0);
    tj_zero_grad(x);   /* the history held the leaf: the cycle ends here */
    /* a first-order backward afterwards accumulates as before */
    assert_int_equal(tj_backward(tj_sum(tj_mul(x, x), NULL, 0, false)), 0);
    tu_assert_close(tj_grad(x), vec(2, 4, 6), 0, 0);
    tj_zero_grad(x);
}

/* ---- against PyTorch's (scripts/golden/grad2.py) ------------------------------------- */

static tj_tensor *gold(const char *c, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "%s.%s", c, what);
    return tu_golden("grad2", name);
}

static tj_tensor *gold_leaf(const char *c, const char *what)
{
    tj_tensor *t = tj_clone(gold(c, what));
    assert_int_equal(tj_requires_grad(t, true), 0);
    return t;
}

static tj_tensor *mlp_loss(tj_tensor **in, tj_tensor *t)
{
    tj_tensor *h = tj_gelu(tj_add(tj_matmul(in[0], in[1]), in[2]));
    return tj_cross_entropy(tj_matmul(tj_layer_norm(h, 1, NULL, NULL, 1e-5), in[3]), t);
}

static tj_tensor *attention_loss(tj_tensor **in, tj_tensor *wo)
{
    return tj_sum(tj_mul(tj_scaled_dot_product_attention(in[0], in[1], in[2], NULL, true, 0), wo), NULL, 0,
                  false);
}

static tj_tensor *conv_loss(tj_tensor **in, tj_tensor *unused)
{
    (void)unused;
    tj_tensor *y = tj_conv2d(in[0], in[1], NULL, (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, 2);
    return tj_mean(tj_tanh(y), NULL, 0, false);
}

/* The Hessian-vector product of case c's loss along PyTorch's directions. */
static void check_hvp(const char *c, const char *const *names, int n,
                      tj_tensor *(*loss)(tj_tensor **in, tj_tensor *k), tj_tensor *k)
{
    tj_tensor *x[8], *g[8], *hv[8], *s = NULL;
    char what[32];
    for (int i = 0; i < n; i++)
        x[i] = gold_leaf(c, names[i]);
    tj_tensor *l = loss(x, k);
    assert_int_equal(tj_gradients(&l, NULL, 1, x, n, TJ_CREATE_GRAPH, g), 0);
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "v_%s", names[i]);
        tj_tensor *t = tj_sum(tj_mul(g[i], gold(c, what)), NULL, 0, false);
        s = s ? tj_add(s, t) : t;
    }
    assert_int_equal(tj_gradients(&s, NULL, 1, x, n, 0, hv), 0);
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "hv_%s", names[i]);
        tu_assert_close(hv[i], gold(c, what), 1e-9, 1e-12);
    }
}

static void test_pytorch_second_order(void **state)
{
    (void)state;
    /* the penalty's gradients */
    tj_tensor *x = gold_leaf("penalty", "x"), *w = gold_leaf("penalty", "w");
    assert_int_equal(tj_backward(penalty(x, w, true)), 0);
    tu_assert_close(tj_grad(x), gold("penalty", "gp_x"), 1e-10, 1e-12);
    tu_assert_close(tj_grad(w), gold("penalty", "gp_w"), 1e-10, 1e-12);
    check_hvp("mlp", (const char *[]){"x", "w1", "b1", "w2"}, 4, mlp_loss, gold("mlp", "t"));
    check_hvp("attention", (const char *[]){"q", "k", "v"}, 3, attention_loss, gold("attention", "wo"));
    check_hvp("conv", (const char *[]){"x", "w"}, 2, conv_loss, NULL);
}

/* ---- tj_gradients and TJ_RETAIN_GRAPH ------------------------------------------------ */

static void test_gradients_inputs(void **state)
{
    (void)state;
    tj_tensor *x = vec(1, 2, 3), *w = vec(2, 0, -1), *u = vec(0, 0, 0), *g[3];
    int hook_calls = 0;
    assert_int_equal(tj_requires_grad(x, true), 0);
    assert_int_equal(tj_requires_grad(w, true), 0);
    assert_int_equal(tj_requires_grad(u, true), 0);
    assert_int_equal(tj_set_grad_hook(w, tu_count_hook, &hook_calls), 0);
    tj_tensor *h = tj_mul(x, w);   /* a non-leaf input: dL/dh */
    tj_tensor *l = tj_sum(tj_mul(h, h), NULL, 0, false);
    tj_tensor *xs[3] = {h, x, u};
    tu_assert_error(tj_gradients(&l, NULL, 1, xs, 3, TJ_RETAIN_GRAPH, g) == 0 ? (void *)1 : NULL,
                    "gradients: input 2 (f64[3]) is not reached from the outputs (pass TJ_ALLOW_UNUSED",
                    NULL);
    assert_int_equal(tj_gradients(&l, NULL, 1, xs, 3, TJ_RETAIN_GRAPH | TJ_ALLOW_UNUSED, g), 0);
    tu_assert_close(g[0], vec(4, 0, -6), 0, 0);    /* 2 h */
    tu_assert_close(g[1], vec(8, 0, 6), 0, 0);     /* 2 h w */
    tu_assert_close(g[2], vec(0, 0, 0), 0, 0);
    assert_null(tj_grad(x));
    assert_null(tj_grad(w));
    assert_int_equal(hook_calls, 0);
    /* the graph was kept: a backward into .grad, twice with TJ_RETAIN_GRAPH */
    assert_int_equal(tj_backward_ex(l, NULL, TJ_RETAIN_GRAPH), 0);
    assert_int_equal(hook_calls, 1);
    assert_int_equal(tj_backward(l), 0);
    tu_assert_close(tj_grad(w), vec(8, 0, -36), 0, 0);   /* 2 (2 h x) */
    assert_int_equal(hook_calls, 2);
    tu_assert_error(tj_backward(l) == 0 ? (void *)1 : NULL, "pass TJ_RETAIN_GRAPH to the first", NULL);
}

/* Only the part of the graph between the outputs and the inputs runs: a
 * branch into another leaf is not differentiated (its saved value was
 * written, which would fail its rule). */
static void test_gradients_prunes(void **state)
{
    (void)state;
    tj_tensor *x = vec(1, 2, 3), *w = vec(1, 1, 1), *g;
    assert_int_equal(tj_requires_grad(x, true), 0);
    assert_int_equal(tj_requires_grad(w, true), 0);
    tj_tensor *e = tj_exp(w);   /* saves its result */
    tj_tensor *l = tj_sum(tj_add(tj_mul(x, x), tj_mul(e, tj_detach(x))), NULL, 0, false);
    tj_no_grad_begin();
    assert_int_equal(tj_copy_(e, vec(0, 0, 0)), 0);
    tj_no_grad_end();
    assert_int_equal(tj_gradients(&l, NULL, 1, &x, 1, TJ_RETAIN_GRAPH, &g), 0);
    tu_assert_close(g, vec(2, 4, 6), 0, 0);
    tu_assert_error(tj_gradients(&l, NULL, 1, &w, 1, 0, &g) == 0 ? (void *)1 : NULL,
                    "was modified in place", NULL);
}

static void test_errors(void **state)
{
    (void)state;
    tj_tensor *x = vec(1, 2, 3), *c = vec(1, 1, 1), *g = NULL;
    assert_int_equal(tj_requires_grad(x, true), 0);
    tj_tensor *l = tj_sum(tj_mul(x, x), NULL, 0, false);
    tu_assert_error(tj_gradients(&l, NULL, 1, &c, 1, 0, &g) == 0 ? (void *)1 : NULL,
                    "gradients: input 0 (f64[3]) does not require grad", NULL);
    tj_tensor *none = NULL;
    tu_assert_error(tj_gradients(&l, NULL, 1, &none, 1, 0, &g) == 0 ? (void *)1 : NULL,
                    "gradients: input 0 is NULL", NULL);
    tu_assert_error(tj_gradients(&l, NULL, 0, &x, 1, 0, &g) == 0 ? (void *)1 : NULL,
                    "at least one output and one input", NULL);
    tu_assert_error(tj_gradients(&l, NULL, 1, &x, 1, 8, &g) == 0 ? (void *)1 : NULL,
                    "gradients: unknown flags 0x8", NULL);
    tu_assert_error(tj_backward_ex(l, NULL, 16) == 0 ? (void *)1 : NULL, "backward: unknown flags 0x10",
                    NULL);
    tj_tensor *y = tj_mul(x, x);
    tu_assert_error(tj_gradients(&y, NULL, 1, &x, 1, 0, &g) == 0 ? (void *)1 : NULL, "seed is needed",
                    NULL);
    assert_null(g);
    tj_tensor *cst = tj_sum(c, NULL, 0, false);
    tu_assert_error(tj_gradients(&cst, NULL, 1, &x, 1, 0, &g) == 0 ? (void *)1 : NULL,
                    "does not require grad", NULL);
}

/* ---- with tj_compile ------------------------------------------------------------------ */

static tj_tensor *w_model;

static tj_tensor *mlp(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx;
    (void)n;
    return tj_sum(tj_tanh(tj_matmul(a[0], w_model)), NULL, 0, false);
}

/* A leaf made inside a model from its argument (as WGAN-GP marks its
 * interpolated inputs), or NULL. */
static tj_tensor *leaf_of(tj_tensor *a)
{
    tj_tensor *x = tj_mul_s(a, 1.0);
    return x && tj_requires_grad(x, true) == 0 ? x : NULL;
}

/* The penalty inside a compiled function, on a leaf made there (as WGAN-GP
 * marks its interpolated inputs): the recorded first backward is traced
 * into the graph like any op, and a backward through the call's result
 * differentiates it again. */
static tj_tensor *penalty_model(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *x = leaf_of(a[0]);
    return x ? penalty(x, w_model, true) : NULL;
}

/* tj_backward_ex(TJ_CREATE_GRAPH) inside: a graph break, eager's results. */
static tj_tensor *grad_sum_model(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *x = leaf_of(a[0]);
    if (!x || tj_backward_ex(tj_sum(tj_tanh(tj_matmul(x, w_model)), NULL, 0, false), NULL, TJ_CREATE_GRAPH) != 0)
        return NULL;
    tj_tensor *r = tj_sum(tj_square(tj_grad(x)), NULL, 0, false);
    tj_zero_grad(x);   /* the recorded .grad's history holds x: the cycle ends here */
    return r;
}

/* The penalty after a graph break: a function that made a leaf (a tape
 * inside) is not split at its break (a split call's pieces keep no tape);
 * it runs eagerly, with eager's values (it failed, and leaked, split). */
static tj_tensor *penalty_after_break(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *x = leaf_of(a[0]), *g;
    if (!x)
        return NULL;
    double m = tj_item(tj_amax(x, NULL, 0, false));   /* a graph break */
    if (isnan(m))
        return NULL;
    tj_tensor *d = tj_sum(tj_add_s(tj_tanh(tj_matmul(x, w_model)), m), NULL, 0, false);
    if (tj_gradients(&d, NULL, 1, &x, 1, TJ_CREATE_GRAPH, &g) != 0)
        return NULL;
    return tj_sum(tj_square(g), NULL, 0, false);
}

static void test_compiled(void **state)
{
    (void)state;
    tj_manual_seed(5);
    tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){4, 3}), *xl = tj_clone(x);
    w_model = tj_randn(TJ_F64, 2, (int64_t[]){3, 5});
    assert_int_equal(tj_requires_grad(xl, true), 0);
    assert_int_equal(tj_requires_grad(w_model, true), 0);
    tj_tensor *want = penalty(xl, w_model, true), *gw;
    assert_int_equal(tj_gradients(&want, NULL, 1, &w_model, 1, 0, &gw), 0);
    tj_compiled *c = tj_compile(penalty_model, NULL, &(tj_compile_options){.name = "penalty"});
    for (int k = 0; k < 2; k++) {
        tj_tensor *got = tj_call(c, &x, 1);
        assert_non_null(got);
        tu_assert_close(got, want, 1e-12, 0);
        assert_int_equal(tj_backward(got), 0);
        tu_assert_close(tj_grad(w_model), gw, 1e-10, 1e-12);
        tj_zero_grad(w_model);
    }
    tj_compiled_stats st;
    tj_compiled_stats_get(c, &st);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.breaks, 0);
    assert_int_equal(st.eager_calls, 0);
    tu_assert_calls(c, 0, 2, "joint graph partitioned");   /* a second-order backward, compiled */
    tj_compiled_free(c);
    c = tj_compile(grad_sum_model, NULL, &(tj_compile_options){.name = "grad_sum"});
    tj_tensor *eager = grad_sum_model(NULL, &x, 1), *got = tj_call(c, &x, 1);
    assert_true(eager && got);
    tu_assert_close(got, eager, 1e-12, 0);
    tu_assert_explain(c, "a backward with TJ_CREATE_GRAPH into .grad");
    tj_compiled_free(c);
    c = tj_compile(penalty_after_break, NULL, &(tj_compile_options){.name = "after_break"});
    for (int k = 0; k < 2; k++) {
        tj_tensor *e = penalty_after_break(NULL, &x, 1), *r = tj_call(c, &x, 1);
        assert_true(e && r);
        tu_assert_close(r, e, 1e-12, 0);
    }
    tu_assert_calls(c, 2, -1, "tj_item reads the values of a traced tensor");
    tj_compiled_free(c);
    /* through a compiled call's backward (its weight requires grad): refused, with why */
    tj_compiled *m = tj_compile(mlp, NULL, &(tj_compile_options){.name = "mlp"});
    tj_tensor *y = tj_call(m, &x, 1), *g;
    assert_non_null(y);
    tu_assert_error(tj_gradients(&y, NULL, 1, &w_model, 1, 0, &g) == 0 ? (void *)1 : NULL,
                    "gradients: the graph goes through a compiled call", NULL);
    y = tj_call(m, &x, 1);
    tu_assert_error(tj_backward_ex(y, NULL, TJ_CREATE_GRAPH) == 0 ? (void *)1 : NULL,
                    "is not differentiable", NULL);
    y = tj_call(m, &x, 1);   /* a first-order backward through it as before */
    assert_int_equal(tj_backward(y), 0);
    assert_non_null(tj_grad(w_model));
    tu_assert_calls(m, 0, 1, NULL);
    tj_compiled_free(m);
}

/* tj_gradients (first order) inside a compiled function: traced like any
 * backward into the graph, no break (a saliency map: d out / d input); and
 * tj_jvp. */
static tj_tensor *saliency(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *x = leaf_of(a[0]), *g;
    if (!x)
        return NULL;
    tj_tensor *y = tj_sum(tj_tanh(tj_matmul(x, w_model)), NULL, 0, false);
    return tj_gradients(&y, NULL, 1, &x, 1, 0, &g) == 0 ? g : NULL;
}

/* tj_jvp inside a compiled function: both passes traced, one graph. */
static tj_tensor *jvp_tangent;

static tj_tensor *jvp_model(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *x = leaf_of(a[0]), *jv;
    if (!x)
        return NULL;
    tj_tensor *y = tj_tanh(tj_matmul(x, w_model));
    return tj_jvp(&y, 1, &x, &jvp_tangent, 1, 0, &jv) == 0 ? jv : NULL;
}

static void test_compiled_gradients(void **state)
{
    (void)state;
    tj_manual_seed(9);
    w_model = tj_randn(TJ_F32, 2, (int64_t[]){3, 5});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 3}), *want = saliency(NULL, &x, 1);
    assert_non_null(want);
    tj_compiled *c = tj_compile(saliency, NULL, &(tj_compile_options){.name = "saliency"});
    for (int k = 0; k < 2; k++)
        tu_assert_close(tj_call(c, &x, 1), want, 1e-6, 1e-7);
    tj_compiled_stats st;
    tj_compiled_stats_get(c, &st);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.breaks, 0);
    assert_int_equal(st.eager_calls, 0);
    tj_compiled_free(c);
    jvp_tangent = tj_randn(TJ_F32, 2, (int64_t[]){4, 3});
    want = jvp_model(NULL, &x, 1);
    assert_non_null(want);
    c = tj_compile(jvp_model, NULL, &(tj_compile_options){.name = "jvp"});
    for (int k = 0; k < 2; k++)
        tu_assert_close(tj_call(c, &x, 1), want, 1e-6, 1e-7);
    tj_compiled_stats_get(c, &st);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.breaks, 0);
    assert_int_equal(st.eager_calls, 0);
    tj_compiled_free(c);
}

/* A whole WGAN-GP critic step compiled: the penalty's recorded gradient, the
 * backward through it and Adam's update, one graph; against eager step by
 * step (the weights and the optimizer's state written back by the plan). */
static tj_tensor *gp_w[2];
static tj_optimizer *gp_opt;

static tj_tensor *gp_critic(tj_tensor *x)
{
    return tj_linear(tj_leaky_relu(tj_linear(x, gp_w[0], NULL), 0.2), gp_w[1], NULL);
}

static tj_tensor *gp_step(void *ctx, tj_tensor *const *a, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *x = leaf_of(a[0]), *g;
    if (!x)
        return NULL;
    tj_tensor *d = tj_sum(gp_critic(x), NULL, 0, false);
    if (tj_gradients(&d, NULL, 1, &x, 1, TJ_CREATE_GRAPH, &g) != 0)
        return NULL;
    tj_tensor *norm = tj_sqrt(tj_sum(tj_square(g), (int[]){1}, 1, false));
    tj_tensor *gp = tj_mean(tj_square(tj_sub_s(norm, 1)), NULL, 0, false);
    tj_tensor *loss = tj_add(tj_mean(gp_critic(a[1]), NULL, 0, false), tj_mul_s(gp, 10));
    tj_optimizer_zero_grad(gp_opt);
    if (tj_backward(loss) != 0 || tj_optimizer_step(gp_opt) != 0)
        return NULL;
    return tj_detach(loss);
}

static void test_compiled_training_step(void **state)
{
    (void)state;
    double loss[2][5];
    tj_tensor *w_end[2];
    for (int compiled = 0; compiled < 2; compiled++) {
        tj_manual_seed(21);
        gp_w[0] = tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){16, 8}), 0.3);
        gp_w[1] = tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){1, 16}), 0.3);
        for (int k = 0; k < 2; k++)
            assert_int_equal(tj_requires_grad(gp_w[k], true), 0);
        gp_opt = tj_adam(gp_w, 2, &(tj_adam_options){.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
        tj_tensor *x[2] = {tj_randn(TJ_F32, 2, (int64_t[]){4, 8}), tj_randn(TJ_F32, 2, (int64_t[]){4, 8})};
        tj_compiled *c = compiled ? tj_compile(gp_step, NULL, &(tj_compile_options){.name = "gp_step"}) : NULL;
        for (int k = 0; k < 5; k++) {
            tj_tensor *l = c ? tj_call(c, x, 2) : gp_step(NULL, x, 2);
            if (!l)
                fail_msg("step %d: %s", k, tj_last_error());
            loss[compiled][k] = tj_item(l);
        }
        w_end[compiled] = tj_clone(gp_w[0]);
        if (c) {
            tj_compiled_stats st;
            tj_compiled_stats_get(c, &st);
            assert_int_equal(st.graphs, 1);
            assert_int_equal(st.breaks, 0);
            assert_int_equal(st.eager_calls, 0);
            tj_compiled_free(c);
        }
        tj_optimizer_free(gp_opt);
    }
    for (int k = 0; k < 5; k++)
        assert_true(fabs(loss[0][k] - loss[1][k]) <= 1e-5 * (1 + fabs(loss[0][k])));
    assert_true(loss[0][4] < loss[0][0]);   /* it trains */
    tu_assert_close(w_end[1], w_end[0], 1e-5, 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_hessian_vector_cases), T(test_cubic_closed_form), T(test_jvp), T(test_gradient_penalty),
        T(test_backward_create_graph), T(test_gradients_inputs),  T(test_gradients_prunes),
        T(test_errors),                T(test_compiled),          T(test_pytorch_second_order),
        T(test_compiled_gradients), T(test_compiled_training_step),
#undef T
    };
    return cmocka_run_group_tests_name("autograd_higher", tests, NULL, NULL);
}
