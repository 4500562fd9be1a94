/* test_keep.c - weight-only values kept across calls (frontend/keep.c): an
 * autocast linear's weight cast is computed once and reused; written in
 * place (tj_copy_ or through tj_data) between calls it is computed again and
 * the result is right, without a retrace; a weight the graph writes is not
 * kept; symbolic dims; a result over a kept value is the caller's own; kept
 * values whose inputs the rest also reads; two threads calling at once;
 * TJIT_KEEP_WEIGHT_VALUES=0; export carries the kept values with the weights. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

typedef struct weights {
    tj_tensor *w, *b;
} weights;

/* linear(x, w, b) under autocast bf16, the result in f32 (as tjit bench's A4) */
static tj_tensor *model_autocast(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    weights *p = ctx;
    tj_tensor *y = tj_autocast(TJ_BF16) == 0 ? tj_linear(x[0], p->w, p->b) : NULL;
    tj_autocast_end();
    return tj_cast(y, TJ_F32);
}

/* x @ (2 w)^T: the scaled weight's transpose made contiguous is kept */
static tj_tensor *model_scaled(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    weights *p = ctx;
    return tj_matmul(x[0], tj_contiguous(tj_transpose(tj_mul_s(p->w, 2.0), 0, 1)));
}

/* reads cast(w), then halves w in place: w is written by the graph */
static tj_tensor *model_writes(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    weights *p = ctx;
    tj_tensor *y = tj_matmul(x[0], tj_transpose(tj_cast(tj_cast(p->w, TJ_BF16), TJ_F32), 0, 1));
    return tj_copy_(p->w, tj_mul_s(p->w, 0.5)) == 0 ? y : NULL;
}

/* a result that is a view of a weight-only value, and x's use of it */
static int model_view_out(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)n;
    (void)max;
    weights *p = ctx;
    tj_tensor *s = tj_mul_s(p->w, 3.0);
    out[0] = tj_reshape(s, 1, (int64_t[]){tj_numel(p->w)});
    out[1] = tj_matmul(x[0], tj_transpose(s, 0, 1));
    return 2;
}

/* s = 2 w is a result (made per call) and read by a kept cast; w^T is a view
 * read by a matmul and by a kept contiguous copy: w square */
static int model_shared(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)n;
    (void)max;
    weights *p = ctx;
    tj_tensor *s = tj_mul_s(p->w, 2.0), *t = tj_transpose(p->w, 0, 1);
    out[0] = s;
    out[1] = tj_add(tj_matmul(x[0], tj_cast(tj_cast(s, TJ_BF16), TJ_F32)),
                    tj_add(tj_matmul(x[0], t), tj_matmul(x[0], tj_contiguous(t))));
    return 2;
}

static void init(weights *p, int64_t out, int64_t in)
{
    tj_scope_begin();
    p->w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){out, in}));
    p->b = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){out}));
    tj_scope_end();
}

static void release(weights *p)
{
    tj_release(p->w);
    tj_release(p->b);
}

static int graphs(tj_compiled *c)
{
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    return st.graphs;
}

static bool explains(tj_compiled *c, const char *what)
{
    char *t = tj_explain(c);
    bool has = t && strstr(t, what);
    free(t);
    return has;
}

/* Compiled equals eager bit for bit (same kernels on the same bf16 values). */
static void assert_same(tj_tensor *got, tj_tensor *want)
{
    tu_assert_close(got, want, 0, 0);
}

static void test_keep_reused(void **state)
{
    (void)state;
    weights p;
    init(&p, 24, 16);
    tj_compiled *c = tj_compile(model_autocast, &p, &(tj_compile_options){.name = "keep_reused"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    for (int k = 0; k < 3; k++)
        assert_same(tj_call(c, &x, 1), model_autocast(&p, &x, 1));
    assert_int_equal(graphs(c), 1);
    tu_assert_explain(c, "keeps 2 weight-only values across calls");
    tu_assert_explain(c, "computed 1 time;");
    tu_assert_explain(c, "kept value 0: bf16[24,16] = cast of captured tensor 0");
    tu_assert_explain(c, "kept value 1: bf16[24] = cast of captured tensor 1");
    tj_compiled_free(c);
    release(&p);
}

static void test_keep_weight_changed(void **state)
{
    (void)state;
    weights p;
    init(&p, 24, 16);
    tj_compiled *c = tj_compile(model_autocast, &p, &(tj_compile_options){.name = "keep_changed"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    assert_same(tj_call(c, &x, 1), model_autocast(&p, &x, 1));
    assert_same(tj_call(c, &x, 1), model_autocast(&p, &x, 1));
    /* in place, between calls: computed again, no retrace */
    assert_int_equal(tj_copy_(p.w, tj_randn(TJ_F32, 2, (int64_t[]){24, 16})), 0);
    assert_same(tj_call(c, &x, 1), model_autocast(&p, &x, 1));
    tu_assert_explain(c, "computed 2 times;");
    /* through a tj_data pointer (bumps no version: its count is stamped) */
    float *b = tj_data(p.b);
    for (int k = 0; k < 24; k++)
        b[k] = (float)k;
    tj_tensor *y = tj_call(c, &x, 1);
    assert_same(y, model_autocast(&p, &x, 1));
    tu_assert_explain(c, "computed 3 times;");
    assert_same(tj_call(c, &x, 1), y);   /* unchanged: not again */
    tu_assert_explain(c, "computed 3 times;");
    assert_int_equal(graphs(c), 1);
    /* released: the guard fails, the next call traces the new weight */
    tj_release(p.w);
    p.w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){24, 16}));
    assert_same(tj_call(c, &x, 1), model_autocast(&p, &x, 1));
    tu_assert_explain(c, "recompiled because captured tensor 0 was released");
    tj_compiled_free(c);
    release(&p);
}

static void test_keep_contiguous_transpose(void **state)
{
    (void)state;
    weights p;
    init(&p, 12, 20);
    tj_compiled *c = tj_compile(model_scaled, &p, &(tj_compile_options){.name = "keep_scaled"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){5, 20});
    for (int k = 0; k < 2; k++)
        tu_assert_close(tj_call(c, &x, 1), model_scaled(&p, &x, 1), 1e-5, 1e-5);
    tu_assert_explain(c, "keeps 1 weight-only value across calls");
    tu_assert_explain(c, "kept value 0: f32[20,12] = ");
    assert_int_equal(tj_copy_(p.w, tj_full(TJ_F32, 2, (int64_t[]){12, 20}, 0.25)), 0);
    tu_assert_close(tj_call(c, &x, 1), model_scaled(&p, &x, 1), 1e-5, 1e-5);
    tu_assert_explain(c, "computed 2 times;");
    tj_compiled_free(c);
    release(&p);
}

static void test_keep_not_written(void **state)
{
    (void)state;
    weights p, q;
    init(&p, 6, 10);
    tj_scope_begin();
    q.w = tj_keep(tj_clone(p.w));
    q.b = tj_keep(tj_clone(p.b));
    tj_scope_end();
    tj_compiled *c = tj_compile(model_writes, &p, &(tj_compile_options){.name = "keep_writes"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){3, 10});
    for (int k = 0; k < 3; k++) {   /* w halves every call, here and in eager's copy */
        tu_assert_close(tj_call(c, &x, 1), model_writes(&q, &x, 1), 1e-6, 1e-6);
        tu_assert_close(p.w, q.w, 0, 0);
    }
    assert_int_equal(graphs(c), 1);
    assert_false(explains(c, "weight-only value"));
    tj_compiled_free(c);
    release(&p);
    release(&q);
}

static void test_keep_symbolic(void **state)
{
    (void)state;
    weights p;
    init(&p, 24, 16);
    tj_compiled *c = tj_compile(model_autocast, &p, &(tj_compile_options){.name = "keep_sym"});
    const int64_t rows[] = {3, 5, 9, 7};
    for (int k = 0; k < 4; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){rows[k], 16});
        assert_same(tj_call(c, &x, 1), model_autocast(&p, &x, 1));
    }
    assert_int_equal(graphs(c), 2);   /* static 3, then s0 for the rest */
    tu_assert_explain(c, "1 symbolic dim, 3 calls");
    tu_assert_explain(c, "keeps 2 weight-only values across calls (0.0 MB), computed 1 time;");
    assert_false(explains(c, "computed 2 times"));   /* once per graph, whatever the size */
    tj_compiled_free(c);
    release(&p);
}

/* A result viewing a kept value is the caller's: writing into it changes
 * neither the kept value nor the next call's results. */
static void test_keep_result_own(void **state)
{
    (void)state;
    weights p;
    init(&p, 6, 10);
    tj_compiled *c = tj_compile_multi(model_view_out, &p, &(tj_compile_options){.name = "keep_view"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){3, 10}), *got[2], *want[2];
    assert_int_equal(model_view_out(&p, &x, 1, want, 2), 2);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(tj_call_multi(c, &x, 1, got, 2), 2);
        tu_assert_close(got[0], want[0], 0, 0);
        tu_assert_close(got[1], want[1], 1e-5, 1e-5);
        assert_int_equal(tj_copy_(got[0], tj_zeros(TJ_F32, 1, (int64_t[]){60})), 0);
    }
    tu_assert_explain(c, "keeps 1 weight-only value across calls");
    tj_compiled_free(c);
    release(&p);
}

/* Kept values whose inputs the run graph also reads (a result, a view). */
static void test_keep_shared_inputs(void **state)
{
    (void)state;
    weights p;
    init(&p, 8, 8);
    tj_compiled *c = tj_compile_multi(model_shared, &p, &(tj_compile_options){.name = "keep_shared"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){3, 8}), *got[2], *want[2];
    for (int k = 0; k < 3; k++) {
        if (k == 2)
            assert_int_equal(tj_copy_(p.w, tj_randn(TJ_F32, 2, (int64_t[]){8, 8})), 0);
        assert_int_equal(model_shared(&p, &x, 1, want, 2), 2);
        assert_int_equal(tj_call_multi(c, &x, 1, got, 2), 2);
        tu_assert_close(got[0], want[0], 0, 0);
        tu_assert_close(got[1], want[1], 1e-5, 1e-5);
    }
    tu_assert_explain(c, "keeps 2 weight-only values across calls");
    tu_assert_explain(c, "computed 2 times;");
    tu_assert_explain(c, "kept value 0: f32[8,8] = copy of captured tensor 0");
    tu_assert_explain(c, "kept value 1: f32[8,8] = cast of captured tensor 0");
    tj_compiled_free(c);
    release(&p);
}

static void test_keep_off(void **state)
{
    (void)state;
    weights p;
    init(&p, 24, 16);
    setenv("TJIT_KEEP_WEIGHT_VALUES", "0", 1);
    tj_compiled *c = tj_compile(model_autocast, &p, &(tj_compile_options){.name = "keep_off"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    assert_same(tj_call(c, &x, 1), model_autocast(&p, &x, 1));
    unsetenv("TJIT_KEEP_WEIGHT_VALUES");
    assert_false(explains(c, "weight-only value"));
    tj_compiled_free(c);
    release(&p);
}

typedef struct call_arg {
    tj_compiled *c;
    tj_tensor *x, *out;
} call_arg;

static void *call_thread(void *p)
{
    call_arg *a = p;
    tj_scope_begin();
    for (int i = 0; i < 4; i++) {
        tj_tensor *y = tj_call(a->c, &a->x, 1);
        tj_release(a->out);
        a->out = y ? tj_keep(y) : NULL;
    }
    tj_scope_end();
    return NULL;
}

/* Two threads call at once: the values are computed once (under the
 * entry's lock), and both get the eager result. */
static void test_keep_threads(void **state)
{
    (void)state;
    weights p;
    init(&p, 24, 16);
    tj_compiled *c = tj_compile(model_autocast, &p, &(tj_compile_options){.name = "keep_threads"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    call_arg a[2] = {{c, x, NULL}, {c, x, NULL}};
    tu_run_threads(2, call_thread, a, sizeof *a);
    tj_tensor *want = model_autocast(&p, &x, 1);
    for (int i = 0; i < 2; i++) {
        assert_non_null(a[i].out);
        assert_same(a[i].out, want);
        tj_release(a[i].out);
    }
    assert_int_equal(graphs(c), 1);
    tu_assert_explain(c, "8 calls");
    tu_assert_explain(c, "computed 1 time;");
    tj_compiled_free(c);
    release(&p);
}

/* tj_export: the kept values go with the weights (the loaded model gives
 * the compiled result); without the weights the entry is refused, naming why. */
static void test_keep_export(void **state)
{
    (void)state;
    weights p;
    init(&p, 24, 16);
    tj_compiled *c = tj_compile(model_autocast, &p, &(tj_compile_options){.name = "keep_export"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    tj_tensor *y = tj_call(c, &x, 1);
    assert_non_null(y);
    char so[64], h[64];
    snprintf(so, sizeof so, "/tmp/tjit_keep_export_%d.so", (int)getpid());
    snprintf(h, sizeof h, "/tmp/tjit_keep_export_%d.h", (int)getpid());
    assert_int_equal(tj_export(c, so, &(tj_export_options){.no_weights = true}), -1);
    tu_assert_error(NULL, "keeps weight-only values across calls", "TJIT_KEEP_WEIGHT_VALUES=0", NULL);
    assert_int_not_equal(access(so, F_OK), 0);
    assert_int_equal(tj_export(c, so, NULL), 0);
    tj_aot_model *m = tj_aot_load(so);
    assert_non_null(m);
    tj_tensor *out[1];
    assert_int_equal(tj_aot_run(m, &x, 1, out, 1), 1);
    assert_same(out[0], y);
    tj_aot_free(m);
    remove(so);
    remove(h);
    tj_compiled_free(c);
    release(&p);
}

int main(void)
{
    tu_use_build_cache();
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_keep_reused), T(test_keep_weight_changed), T(test_keep_contiguous_transpose),
        T(test_keep_not_written), T(test_keep_symbolic), T(test_keep_result_own),
        T(test_keep_shared_inputs), T(test_keep_threads), T(test_keep_off), T(test_keep_export),
#undef T
    };
    return tu_run_jit_suite("keep", tests, sizeof tests / sizeof *tests, "kept values run on plans");
}
