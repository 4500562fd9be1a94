/* test_autograd_views.c - in-place writes through a view of a tensor with
 * history (y = clone(w); y[0:2] *= 3): the base takes the write's history,
 * as PyTorch's CopySlices, eagerly and in a compiled training step.
 *
 * Each case is a loss of a weight w and a tensor x that both require grad;
 * its gradients are checked against f64 central finite differences of the
 * same loss (run without autograd) and, for some, against values derived
 * by hand. Before the write was followed, the base's gradient ignored it.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/rt.h"
#include "util.h"

typedef tj_tensor *(*loss_fn)(tj_tensor *w, tj_tensor *x);

/* sum(y * y * r) for a fixed r of y's shape: a loss whose gradient reads y. */
static tj_tensor *weighted(tj_tensor *y)
{
    int64_t n = tj_numel(y);
    tj_tensor *r = tj_reshape(tj_add_s(tj_mul_s(tj_arange(TJ_F64, 0, (double)n, 1), 0.25), -1.1), tj_ndim(y), tj_shape(y));
    return tj_sum(tj_mul(tj_mul(y, y), r), NULL, 0, false);
}

/* ---- the cases: w f64[4,3] --------------------------------------------------------- */

/* rows 0..2 of 2w scaled by 3 (tj_mul_s_ through a slice) */
static tj_tensor *l_slice(tj_tensor *w, tj_tensor *x)
{
    (void)x;
    tj_tensor *y = tj_mul_s(w, 2);
    return tj_mul_s_(tj_slice(y, 0, 0, 2, 1), 3) ? NULL : weighted(y);
}

/* x f64[3,2] copied into columns 1..3 of y's transpose */
static tj_tensor *l_transpose(tj_tensor *w, tj_tensor *x)
{
    tj_tensor *y = tj_clone(w);
    return tj_copy_(tj_slice(tj_transpose(y, 0, 1), 1, 1, 3, 1), x) ? NULL : weighted(y);
}

/* x f64[3] added into row 2 (a select: unbind) */
static tj_tensor *l_select(tj_tensor *w, tj_tensor *x)
{
    tj_tensor *y = tj_sin(w), *rows[4];
    if (tj_unbind(y, 0, rows, 4) != 4 || tj_add_(rows[2], x))
        return NULL;
    return weighted(y);
}

/* narrow, unsqueeze and squeeze; x f64[4] written into column 1 */
static tj_tensor *l_narrow(tj_tensor *w, tj_tensor *x)
{
    tj_tensor *y = tj_clone(w);
    tj_tensor *col = tj_squeeze(tj_unsqueeze(tj_narrow(y, 1, 1, 1), 0), (int[]){0, 2}, 2);
    if (tj_mul_s_(tj_narrow(y, 1, 2, 1), -0.5) || tj_copy_(col, tj_mul(x, x)))
        return NULL;
    return weighted(y);
}

/* a view as 12 elements, every third from 2 (a strided slice); x f64[4] */
static tj_tensor *l_reshape(tj_tensor *w, tj_tensor *x)
{
    tj_tensor *y = tj_add_s(tj_mul_s(w, 1.5), 0.2);   /* exp would save y: written, refused */
    tj_tensor *v = tj_slice(tj_view(y, 1, (int64_t[]){12}), 0, 2, 12, 3);
    return tj_sub_(v, x) ? NULL : weighted(y);
}

/* the diagonal of rows 1..4 (diagonal); x f64[3] */
static tj_tensor *l_diagonal(tj_tensor *w, tj_tensor *x)
{
    tj_tensor *y = tj_clone(w);
    return tj_div_(tj_diagonal(tj_slice(y, 0, 1, 4, 1), 0, 0, 1), tj_add_s(tj_mul(x, x), 1))
               ? NULL : weighted(y);
}

/* as_strided: a 2x2 window from element 4; x f64[2,2] */
static tj_tensor *l_strided(tj_tensor *w, tj_tensor *x)
{
    tj_tensor *y = tj_mul(w, w);
    tj_tensor *v = tj_as_strided(y, 2, (int64_t[]){2, 2}, (int64_t[]){3, 1}, 4);
    return tj_copy_(v, x) ? NULL : weighted(y);
}

/* y viewed as [2,2,3], permuted (movedim), its slice written; x f64[3,2] */
static tj_tensor *l_permute(tj_tensor *w, tj_tensor *x)
{
    tj_tensor *y = tj_clone(w);
    tj_tensor *p = tj_movedim(tj_reshape(y, 3, (int64_t[]){2, 2, 3}), (int[]){2}, (int[]){0}, 1);   /* [3,2,2] */
    tj_tensor *v = tj_squeeze(tj_slice(p, 2, 1, 2, 1), (int[]){2}, 1);                             /* [3,2] */
    return tj_add_(v, x) ? NULL : weighted(y);
}

/* views taken before the writes read the new history afterwards; a use of
 * y before them keeps the old one. x f64[4] */
static tj_tensor *l_before(tj_tensor *w, tj_tensor *x)
{
    tj_tensor *y = tj_clone(w);
    tj_tensor *early = tj_mul_s(tj_sum(y, NULL, 0, false), -0.7);   /* saves no y */
    tj_tensor *rows = tj_slice(y, 0, 1, 4, 1), *col = tj_narrow(y, 1, 2, 1);
    if (tj_mul_s_(tj_slice(y, 0, 0, 2, 1), 3) ||
        tj_copy_(tj_transpose(col, 0, 1), tj_reshape(tj_tanh(x), 2, (int64_t[]){1, 4})))
        return NULL;
    return tj_add(early, tj_add(weighted(rows), tj_sum(tj_mul(y, col), NULL, 0, false)));
}

typedef struct vcase {
    const char *name;
    loss_fn f;
    int xnd;
    int64_t xshape[2];
    bool traced;   /* compiled: one graph; else a graph break, run eagerly */
} vcase;

static const vcase cases[] = {
    {"slice", l_slice, 2, {3, 2}, true},         {"transpose", l_transpose, 2, {3, 2}, true},
    {"select", l_select, 1, {3}, true},          {"narrow", l_narrow, 1, {4}, true},
    {"reshape", l_reshape, 1, {4}, false},       {"diagonal", l_diagonal, 1, {3}, false},
    {"as_strided", l_strided, 2, {2, 2}, false}, {"permute", l_permute, 2, {3, 2}, false},
    {"before", l_before, 1, {4}, true},
};

/* ---- finite differences ------------------------------------------------------------- */

static void fill(double *v, int n, double a)
{
    for (int k = 0; k < n; k++)
        v[k] = 0.3 * sin(a + 1.7 * k) + 0.1 * k - 0.4;
}

static double loss_at(const vcase *c, const double *wv, const double *xv)
{
    tj_scope_begin();
    tj_no_grad_begin();
    tj_tensor *w = tu_tensor(TJ_F64, 2, (int64_t[]){4, 3}, wv);
    tj_tensor *x = tu_tensor(TJ_F64, c->xnd, c->xshape, xv);
    tj_tensor *l = c->f(w, x);
    assert_non_null(l);
    double r = tj_item(l);
    tj_no_grad_end();
    tj_scope_end();
    return r;
}

/* (L(v + h e_k) - L(v - h e_k)) / 2h for every k, of w (which 0) or x. */
static tj_tensor *numeric(const vcase *c, double *wv, double *xv, int which)
{
    double *v = which ? xv : wv, g[12], h = 1e-6;
    int n = which ? (int)(c->xshape[0] * (c->xnd > 1 ? c->xshape[1] : 1)) : 12;
    for (int k = 0; k < n; k++) {
        double keep = v[k];
        v[k] = keep + h;
        double up = loss_at(c, wv, xv);
        v[k] = keep - h;
        g[k] = (up - loss_at(c, wv, xv)) / (2 * h);
        v[k] = keep;
    }
    return which ? tu_tensor(TJ_F64, c->xnd, c->xshape, g) : tu_tensor(TJ_F64, 2, (int64_t[]){4, 3}, g);
}

/* t's gradient, zeros when it got none. */
static tj_tensor *grad_of(tj_tensor *t)
{
    return tj_grad(t) ? tj_grad(t) : tj_zeros(TJ_F64, tj_ndim(t), tj_shape(t));
}

/* w and x requiring grad, with c's values. */
static void inputs(const vcase *c, double *wv, double *xv, tj_tensor **w, tj_tensor **x)
{
    fill(wv, 12, 0.5);
    fill(xv, 12, 2.0);
    *w = tj_keep(tu_tensor(TJ_F64, 2, (int64_t[]){4, 3}, wv));
    *x = tj_keep(tu_tensor(TJ_F64, c->xnd, c->xshape, xv));
    assert_int_equal(tj_requires_grad(*w, true), 0);
    assert_int_equal(tj_requires_grad(*x, true), 0);
}

static void test_gradcheck_views(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const vcase *c = &cases[i];
        double wv[12], xv[12];
        tj_tensor *w, *x;
        inputs(c, wv, xv, &w, &x);
        tj_tensor *l = c->f(w, x);
        if (!l || tj_backward(l) != 0)
            fail_msg("%s: %s", c->name, tj_last_error());
        tu_assert_close(grad_of(w), numeric(c, wv, xv, 0), 1e-6, 1e-7);
        tu_assert_close(grad_of(x), numeric(c, wv, xv, 1), 1e-6, 1e-7);
        tj_release(w);
        tj_release(x);
    }
}

/* By hand: y = 2w; y[0:2] *= 3; d sum(y) / dw is 6 on rows 0, 1 and 2 on
 * the others. And x copied into y's transpose: d sum(y) / dx is 1, and w
 * gets 0 where x went. */
static void test_by_hand(void **state)
{
    (void)state;
    double wv[12], xv[12], want[12];
    tj_tensor *w, *x;
    inputs(&cases[0], wv, xv, &w, &x);
    tj_tensor *y = tj_mul_s(w, 2);
    assert_int_equal(tj_mul_s_(tj_slice(y, 0, 0, 2, 1), 3), 0);
    assert_int_equal(tj_backward(tj_sum(y, NULL, 0, false)), 0);
    for (int k = 0; k < 12; k++)
        want[k] = k < 6 ? 6 : 2;
    tu_assert_close(tj_grad(w), tu_tensor(TJ_F64, 2, (int64_t[]){4, 3}, want), 0, 0);
    tj_zero_grad(w);
    y = tj_clone(w);
    assert_int_equal(tj_copy_(tj_slice(tj_transpose(y, 0, 1), 1, 1, 3, 1), x), 0);   /* y[1:3] = x^T */
    assert_int_equal(tj_backward(tj_sum(y, NULL, 0, false)), 0);
    for (int k = 0; k < 12; k++)
        want[k] = k / 3 == 1 || k / 3 == 2 ? 0 : 1;
    tu_assert_close(tj_grad(w), tu_tensor(TJ_F64, 2, (int64_t[]){4, 3}, want), 0, 0);
    tu_assert_close(tj_grad(x), tj_ones(TJ_F64, 2, (int64_t[]){3, 2}), 0, 0);
    tj_release(w);
    tj_release(x);
}

/* A view of a leaf that requires grad cannot be written (PyTorch refuses
 * it too), and a value saved for backward and then written through a view
 * still refuses the backward. */
static void test_view_errors(void **state)
{
    (void)state;
    double wv[12], xv[12];
    tj_tensor *w, *x;
    inputs(&cases[0], wv, xv, &w, &x);
    assert_int_not_equal(tj_copy_(tj_slice(w, 0, 0, 2, 1), x), 0);
    assert_non_null(strstr(tj_last_error(), "a view of a leaf tensor that requires grad"));
    tj_no_grad_begin();   /* allowed outside grad mode, as an optimizer's update */
    assert_int_equal(tj_mul_s_(tj_slice(w, 0, 3, 4, 1), 1), 0);
    tj_no_grad_end();
    tj_tensor *y = tj_clone(w), *v = tj_slice(y, 0, 0, 2, 1);
    tj_tensor *sq = tj_mul(v, v);   /* saves v */
    assert_int_equal(tj_mul_s_(tj_slice(y, 0, 1, 3, 1), 2), 0);
    assert_int_not_equal(tj_backward(tj_add(tj_sum(sq, NULL, 0, false), tj_sum(y, NULL, 0, false))), 0);
    assert_non_null(strstr(tj_last_error(), "was modified in place after it was saved"));
    tj_release(w);
    tj_release(x);
}

/* The base, its write's node and the view's lineage hold each other in
 * one direction only: once the tensors are released, the base is freed
 * (a lineage holding its base leaked every written base and its history). */
static void test_freed(void **state)
{
    (void)state;
    double wv[12], xv[12];
    tj_tensor *w, *x;
    inputs(&cases[0], wv, xv, &w, &x);
    for (int backward = 0; backward < 2; backward++) {
        tj_scope_begin();
        tj_tensor *y = tj_clone(w), *v = tj_slice(y, 0, 1, 3, 1);
        rt_wref *ref = rt_wref_of(y);
        assert_int_equal(tj_copy_(tj_transpose(v, 0, 1), tj_transpose(tj_add_s(v, 1), 0, 1)), 0);
        if (backward)
            assert_int_equal(tj_backward(weighted(v)), 0);
        tj_scope_end();
        assert_null(rt_wref_get(ref));
        rt_wref_release(ref);
    }
    tj_release(w);
    tj_release(x);
}

/* ---- compiled: a training step doing the same, traced whole ---------------------- */

typedef struct step_ctx {
    const vcase *c;
    tj_tensor *w, *x;
} step_ctx;

static tj_tensor *step(void *ctx, tj_tensor *const *args, int n)
{
    (void)args;
    (void)n;
    step_ctx *s = ctx;
    tj_tensor *l = s->c->f(s->w, s->x);
    return l && tj_backward(l) == 0 ? tj_detach(l) : NULL;
}

static void test_compiled_views(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const vcase *c = &cases[i];
        double wv[12], xv[12];
        step_ctx s = {c, NULL, NULL};
        inputs(c, wv, xv, &s.w, &s.x);
        tj_tensor *l = c->f(s.w, s.x);
        assert_non_null(l);
        assert_int_equal(tj_backward(l), 0);
        tj_tensor *gw = tj_keep(tj_clone(grad_of(s.w))), *gx = tj_keep(tj_clone(grad_of(s.x)));
        tj_tensor *nw = tj_keep(numeric(c, wv, xv, 0)), *nx = tj_keep(numeric(c, wv, xv, 1));
        tj_compiled *cc = tj_compile(step, &s, &(tj_compile_options){.name = c->name});
        for (int k = 0; k < 2; k++) {
            tj_zero_grad(s.w);
            tj_zero_grad(s.x);
            if (!tj_call(cc, NULL, 0))
                fail_msg("%s: %s", c->name, tj_last_error());
            tu_assert_close(grad_of(s.w), nw, 1e-6, 1e-7);   /* independently */
            tu_assert_close(grad_of(s.x), nx, 1e-6, 1e-7);
            tu_assert_close(grad_of(s.w), gw, 1e-12, 1e-12);   /* as eager */
            tu_assert_close(grad_of(s.x), gx, 1e-12, 1e-12);
        }
        tj_compiled_stats st;
        tj_compiled_stats_get(cc, &st);
        assert_int_equal(st.graphs, c->traced);
        assert_int_equal(st.breaks, !c->traced);
        if (!c->traced)   /* the trace cannot follow the write: it says so */
            tu_assert_explain(cc, "into a view of a traced tensor");
        tj_compiled_free(cc);
        tj_release(gw);
        tj_release(gx);
        tj_release(nw);
        tj_release(nx);
        tj_release(s.w);
        tj_release(s.x);
    }
}

/* A compiled forward called in grad mode (its backward made from the joint
 * graph, docs/training.md), then tj_backward outside: the write through the
 * view reaches the weight's gradient as eagerly. */
static tj_tensor *forward(void *ctx, tj_tensor *const *args, int n)
{
    (void)n;
    tj_tensor *y = tj_mul(ctx, args[0]);
    return tj_mul_s_(tj_transpose(tj_slice(y, 0, 1, 3, 1), 0, 1), -2) ? NULL : tj_tanh(y);
}

static void test_compiled_forward(void **state)
{
    (void)state;
    double wv[12], xv[12], want[12];
    fill(wv, 12, 0.5);
    fill(xv, 12, 2.0);
    tj_tensor *w = tj_keep(tu_tensor(TJ_F64, 2, (int64_t[]){4, 3}, wv));
    tj_tensor *x = tu_tensor(TJ_F64, 2, (int64_t[]){4, 3}, xv);
    assert_int_equal(tj_requires_grad(w, true), 0);
    for (int k = 0; k < 12; k++) {   /* d sum(tanh(s w x)) / dw, s = -2 on rows 1, 2 */
        double s = k / 3 == 1 || k / 3 == 2 ? -2 : 1, t = tanh(s * wv[k] * xv[k]);
        want[k] = (1 - t * t) * s * xv[k];
    }
    tj_compiled *c = tj_compile(forward, w, &(tj_compile_options){.name = "forward"});
    for (int call = 0; call < 3; call++) {
        tj_zero_grad(w);
        tj_tensor *y = call ? tj_call(c, &x, 1) : forward(w, &x, 1);
        assert_non_null(y);
        assert_int_equal(tj_backward(tj_sum(y, NULL, 0, false)), 0);
        tu_assert_close(tj_grad(w), tu_tensor(TJ_F64, 2, (int64_t[]){4, 3}, want), 1e-12, 1e-12);
    }
    tu_assert_explain(c, "joint graph partitioned");   /* one graph, its backward from the joint */
    tj_compiled_free(c);
    tj_release(w);
}

/* A base without history (zeros) written through a view with a value that
 * requires grad, then through its transpose: d sum(y * c) / dw is 3 c[1:3]
 * (its gradient was lost: the base kept no history). Eagerly through
 * as_strided over the base's storage; traced, through the views' lineage
 * (one graph). Through a view of a view, the tensor under both gets the
 * history. */
static tj_tensor *no_history_loss(tj_tensor *w, tj_tensor *c)
{
    tj_tensor *y = tj_zeros(TJ_F64, 2, (int64_t[]){4, 3});
    if (tj_copy_(tj_slice(y, 0, 1, 3, 1), tj_mul_s(w, 2)) != 0 || tj_mul_s_(tj_transpose(y, 0, 1), 1.5) != 0)
        return NULL;
    return tj_sum(tj_mul(y, c), NULL, 0, false);
}

typedef struct nh {
    tj_tensor *w, *c;
} nh;

static tj_tensor *no_history_step(void *ctx, tj_tensor *const *x, int n)
{
    (void)x, (void)n;
    nh *s = ctx;
    tj_zero_grad(s->w);
    tj_tensor *l = no_history_loss(s->w, s->c);
    return l && tj_backward(l) == 0 ? tj_clone(tj_grad(s->w)) : NULL;
}

static void test_base_without_history(void **state)
{
    (void)state;
    nh s = {tj_randn(TJ_F64, 2, (int64_t[]){2, 3}), tj_randn(TJ_F64, 2, (int64_t[]){4, 3})};
    assert_int_equal(tj_requires_grad(s.w, true), 0);
    tj_tensor *want = tj_mul_s(tj_slice(s.c, 0, 1, 3, 1), 3);
    tu_assert_close(no_history_step(&s, NULL, 0), want, 1e-12, 1e-12);
    tj_compiled *c = tj_compile(no_history_step, &s, &(tj_compile_options){.name = "no_history"});
    for (int k = 0; k < 2; k++) {
        tj_tensor *g = tj_call(c, NULL, 0);
        if (!g)
            fail_msg("compiled step %d: %s", k, tj_last_error());
        tu_assert_close(g, want, 1e-12, 1e-12);
    }
    tu_assert_explain(c, "0 graph breaks");   /* traced views of y keep their lineage */
    tj_compiled_free(c);
    tj_zero_grad(s.w);   /* through a view of a view: the base is the tensor under both */
    tj_tensor *big = tj_zeros(TJ_F64, 2, (int64_t[]){8, 3}), *part = tj_slice(big, 0, 4, 8, 1);
    assert_int_equal(tj_copy_(tj_slice(part, 0, 1, 3, 1), tj_mul_s(s.w, 2)), 0);
    assert_int_equal(tj_backward(tj_sum(tj_mul(big, tj_cat((tj_tensor *[]){s.c, s.c}, 2, 0)), NULL, 0, false)), 0);
    tu_assert_close(tj_grad(s.w), tj_mul_s(tj_slice(s.c, 0, 1, 3, 1), 2), 1e-12, 1e-12);
}

/* Views of a base without history made *before* a write through another
 * view (or over the whole base) and read after it: they follow the base's
 * new history as PyTorch regenerates them (their gradient was lost). y rows
 * 1-2 are 2w: d sum(v1 * c[0:2])/dw with v1 = y[0:2] is 2 c[1] in w's row
 * 0; z = 3w over the whole base, read through its transpose made before:
 * 3 c. Eagerly and as a compiled step (one graph). */
static tj_tensor *before_write_step(void *ctx, tj_tensor *const *x, int n)
{
    (void)x, (void)n;
    nh *s = ctx;
    tj_zero_grad(s->w);
    tj_tensor *y = tj_zeros(TJ_F64, 2, (int64_t[]){4, 3}), *z = tj_zeros(TJ_F64, 2, (int64_t[]){2, 3});
    tj_tensor *v1 = tj_slice(y, 0, 0, 2, 1), *zt = tj_transpose(z, 0, 1);
    if (tj_get_requires_grad(v1) || tj_copy_(tj_slice(y, 0, 1, 3, 1), tj_mul_s(s->w, 2)) != 0 ||
        tj_copy_(z, tj_mul_s(s->w, 3)) != 0 || !tj_get_requires_grad(v1))
        return NULL;
    tj_tensor *c = tj_slice(s->c, 0, 0, 2, 1);
    tj_tensor *l = tj_add(tj_sum(tj_mul(v1, c), NULL, 0, false),
                          tj_sum(tj_mul(zt, tj_transpose(c, 0, 1)), NULL, 0, false));
    return l && tj_backward(tj_add(l, tj_sum(tj_slice(y, 0, 3, 4, 1), NULL, 0, false))) == 0
               ? tj_clone(tj_grad(s->w)) : NULL;
}

static void test_views_before_write(void **state)
{
    (void)state;
    nh s = {tj_randn(TJ_F64, 2, (int64_t[]){2, 3}), tj_randn(TJ_F64, 2, (int64_t[]){4, 3})};
    assert_int_equal(tj_requires_grad(s.w, true), 0);
    tj_tensor *c = tj_slice(s.c, 0, 0, 2, 1);
    tj_tensor *want = tj_add(tj_mul_s(tj_pad(tj_slice(c, 0, 1, 2, 1), (int64_t[]){0, 0, 0, 1}, 2, 0), 2),
                             tj_mul_s(c, 3));
    tj_tensor *g = before_write_step(&s, NULL, 0);
    if (!g)
        fail_msg("eager step: %s", tj_last_error());
    tu_assert_close(g, want, 1e-12, 1e-12);
    tj_compiled *cs = tj_compile(before_write_step, &s, &(tj_compile_options){.name = "before_write"});
    for (int k = 0; k < 2; k++) {
        if (!(g = tj_call(cs, NULL, 0)))
            fail_msg("compiled step %d: %s", k, tj_last_error());
        tu_assert_close(g, want, 1e-12, 1e-12);
    }
    tu_assert_explain(cs, "0 graph breaks");
    tj_compiled_free(cs);
    tj_tensor *q = tj_zeros(TJ_F64, 1, (int64_t[]){4}), *q1 = tj_slice(q, 0, 0, 2, 1);
    assert_false(tj_get_requires_grad(q1));   /* a base not written: no history */
}

/* The same with the base an argument of a compiled step: v = x[None]
 * expanded, made before x *= 2 and x's row 0 += w (writes into an argument
 * and a slice of one, in the graph), read after them. Eagerly v follows x's new history;
 * traced it had none (random train program 4400564: the loss did not
 * require grad and w got no gradient); the read is a graph break now and the
 * call runs split, the write and the read eagerly. d sum(v)/dw = 3 (three
 * copies of row 0). */
static tj_tensor *arg_view_step(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    nh *s = ctx;
    tj_zero_grad(s->w);
    tj_tensor *v = tj_expand(tj_unsqueeze(x[0], 0), 3, (int64_t[]){3, -1, -1});
    if (tj_mul_s_(x[0], 2) != 0 || tj_add_(tj_slice(x[0], 0, 0, 1, 1), s->w) != 0)
        return NULL;
    tj_tensor *l = tj_sum(v, NULL, 0, false);   /* as a training step: backward if it can */
    if (tj_get_requires_grad(l) && tj_backward(l) != 0)
        return NULL;
    return tj_grad(s->w) ? tj_clone(tj_grad(s->w)) : tj_zeros(TJ_F64, 2, (int64_t[]){1, 3});
}

static void test_arg_view_before_write(void **state)
{
    (void)state;
    nh s = {tj_randn(TJ_F64, 2, (int64_t[]){1, 3}), NULL};
    assert_int_equal(tj_requires_grad(s.w, true), 0);
    tj_tensor *want = tj_full(TJ_F64, 2, (int64_t[]){1, 3}, 3);
    tj_compiled *cs = tj_compile(arg_view_step, &s, &(tj_compile_options){.name = "arg_view"});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){2, 3}), *g = k < 2 ? tj_call(cs, &x, 1) : arg_view_step(&s, &x, 1);
        if (!g)
            fail_msg("%s step: %s", k < 2 ? "compiled" : "eager", tj_last_error());
        tu_assert_close(g, want, 1e-12, 1e-12);
    }
    tu_assert_explain(cs, "read after a write into its base with a value that requires grad");
    tj_compiled_free(cs);
}

/* A view made in no-grad mode (or a view of one), written in grad mode with
 * a value that requires grad: refused, as PyTorch refuses it (its base
 * would not get the gradient; before, the write dropped it silently). In
 * no-grad mode, or with a value without history, the write is allowed. */
static void test_no_grad_view_write(void **state)
{
    (void)state;
    tj_tensor *w = tj_randn(TJ_F64, 1, (int64_t[]){2});
    assert_int_equal(tj_requires_grad(w, true), 0);
    tj_tensor *y = tj_zeros(TJ_F64, 1, (int64_t[]){6});
    tj_no_grad_begin();
    tj_tensor *v = tj_slice(y, 0, 0, 4, 1);
    tj_no_grad_end();
    tj_tensor *vv = tj_slice(v, 0, 1, 3, 1);   /* made in grad mode, of a no-grad view */
    const char *why = "a view made in no-grad mode (or a view of one) cannot be written in grad mode";
    tu_assert_error(tj_copy_(tj_slice(v, 0, 0, 2, 1), w) == 0 ? "" : NULL, why, NULL);
    tu_assert_error(tj_add_(vv, w) == 0 ? "" : NULL, why, NULL);
    assert_int_equal(tj_copy_(vv, tj_detach(w)), 0);
    tj_no_grad_begin();
    assert_int_equal(tj_add_(vv, w), 0);
    tj_no_grad_end();
    tu_assert_close(y, tj_pad(tj_mul_s(tj_detach(w), 2), (int64_t[]){1, 3}, 1, 0), 0, 0);
    tj_release(w);
}

int main(void)
{
    tu_use_build_cache();
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_gradcheck_views), T(test_by_hand), T(test_view_errors), T(test_freed), T(test_compiled_views),
        T(test_compiled_forward), T(test_base_without_history),
        T(test_views_before_write), T(test_arg_view_before_write), T(test_no_grad_view_write),
#undef T
    };
    return tu_run_jit_suite("autograd_views", tests, sizeof tests / sizeof tests[0], "compiled steps");
}
