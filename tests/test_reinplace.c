/* test_reinplace.c - outputs written back into graph inputs, stored there by
 * the kernels that compute them (sched/reinplace.c, sc_plans_set_into), and
 * the compiled training steps that use it (frontend/compile.c: write_back).
 *
 * Text IR through a plan set, against the graph executor on copies of the
 * inputs: where it is safe the output is a header over the input's storage
 * and the input holds the new value; where it is not (the old value read
 * after a kernel that cannot go last, read at another index by the kernel,
 * returned, the output returned twice, two outputs into one input, a strided
 * input, memory shared with another input the kernel reads) the output has
 * memory of its own and the input is untouched. Inputs sharing memory get a
 * plan of their own. A run that fails leaves the inputs as they were.
 *
 * Then tj_compile: a step updating a weight held at an offset in a larger
 * storage (the rest untouched), weights sharing a storage and a strided one
 * (copied), a step returning its new weight or a view of the old one (as
 * eagerly), a write into an argument, the version bumped once per call, a
 * second compiled function seeing the update, TJIT_REINPLACE=0, and a call
 * failing in its plan (the weights as they were). test_optim.c runs SGD
 * with momentum and AdamW.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../codegen/jit.h"
#include "../sched/exec.h"
#include "../sched/sched_int.h"
#include "../frontend/fe.h"
#include "util.h"
#include "util_ir.h"

static tj_tensor *randn(int ndim, const int64_t *shape)
{
    return tj_randn(TJ_F32, ndim, shape);
}

/* Runs g on in through ps (whose outputs go into the inputs into names) and
 * on the executor over copies of in: every output as the executor's, each
 * input holding its output where the plan stored it there (the output a
 * header over its storage, at its offset) and untouched elsewhere. Returns
 * how many outputs were stored into inputs. */
static int run_into(sc_plan_set *ps, const ir_graph *g, const int *into, tj_tensor **in, const char *what)
{
    tj_tensor *copy[8], *got[8], *want[8];
    for (int k = 0; k < g->ninputs; k++)
        copy[k] = tj_clone(in[k]);
    int *last = sc_exec_last_use(g);
    assert_int_equal(sc_exec(g, copy, last, want), 0);
    free(last);
    int rc = sc_plans_run(ps, in, got);
    if (rc != 0)
        fail_msg("%s: %s", what, rc < 0 ? tj_last_error() : "not compiled");
    int stored = 0;
    const rt_storage *changed[8];
    for (int j = 0; j < g->noutputs; j++) {
        rt_own(got[j]);
        rt_own(want[j]);
        tu_assert_close(got[j], want[j], 1e-6, 1e-6);
        int x = into[j];
        if (x >= 0 && got[j]->storage == in[x]->storage) {
            assert_int_equal(got[j]->offset, in[x]->offset);
            tu_assert_close(in[x], want[j], 1e-6, 1e-6);
            changed[stored++] = in[x]->storage;
        }
    }
    for (int k = 0; k < g->ninputs; k++) {
        bool written = false;
        for (int s = 0; s < stored; s++)
            written |= in[k]->storage == changed[s];
        if (!written)
            tu_assert_close(in[k], copy[k], 0, 0);
    }
    return stored;
}

/* The count of outputs stored into inputs of the plan ps built last. */
static int plan_into(sc_plan_set *ps)
{
    sc_plan_mem m;
    sc_plans_mem(ps, &m);
    return m.into;
}

/* A fresh plan set for src, its outputs going into the inputs into names. */
static int once(const char *src, const int *into, tj_tensor **in, const char *what)
{
    ir_graph *g = tu_parse(src);
    sc_plan_set *ps = sc_plans_new(g, g->name);
    assert_int_equal(sc_plans_set_into(ps, into), 0);
    int n = run_into(ps, g, into, in, what);
    assert_int_equal(plan_into(ps), n);
    sc_plans_free(ps);
    ir_graph_free(g);
    return n;
}

static const char *sgd_src =
    "graph @sgd(%w: f32[16,32] param, %g: f32[16,32]) {\n"
    "  %0 = scalar {value=0.1, dtype=f64} : f64[] weak\n"
    "  %1 = mul %g, %0 : f32[16,32]\n"
    "  %2 = sub %w, %1 : f32[16,32]\n"
    "  %3 = sum %g {dims=[0,1], keepdim=false} : f32[]\n"
    "  return %3, %2\n"
    "}\n";

/* SGD with momentum: one kernel stores the new buffer and the new weight,
 * each over the input it reads at the same index; both go in, for three
 * calls (the inputs' values carry over), and the weight's memory is the
 * same (its data pointer unchanged). */
static void test_stored_into_inputs(void **state)
{
    ir_graph *g = tu_parse("graph @momentum(%w: f32[16,32] param, %b: f32[16,32] param, %g: f32[16,32]) {\n"
                        "  %0 = scalar {value=0.9, dtype=f64} : f64[] weak\n"
                        "  %1 = mul %b, %0 : f32[16,32]\n"
                        "  %2 = add %1, %g : f32[16,32]\n"
                        "  %3 = scalar {value=0.1, dtype=f64} : f64[] weak\n"
                        "  %4 = mul %2, %3 : f32[16,32]\n"
                        "  %5 = sub %w, %4 : f32[16,32]\n"
                        "  %6 = sum %5 {dims=[0,1], keepdim=false} : f32[]\n"
                        "  return %6, %5, %2\n"
                        "}\n");
    sc_plan_set *ps = sc_plans_new(g, g->name);
    int into[3] = {-1, 0, 1};
    assert_int_equal(sc_plans_set_into(ps, into), 0);
    int64_t sh[2] = {16, 32};
    tj_tensor *in[3] = {randn(2, sh), tj_zeros(TJ_F32, 2, sh), NULL};
    const void *data = tj_data(in[0]);
    for (int k = 0; k < 3; k++) {
        in[2] = randn(2, sh);
        assert_int_equal(run_into(ps, g, into, in, "momentum"), 2);
    }
    assert_int_equal(plan_into(ps), 2);
    assert_ptr_equal(tj_data(in[0]), data);
    sc_plans_free(ps);
    ir_graph_free(g);
    /* the weight-only step: the sum of g is another kernel */
    tj_tensor *in2[2] = {randn(2, sh), randn(2, sh)};
    assert_int_equal(once(sgd_src, (int[]){-1, 0}, in2, "sgd"), 1);
}

/* Where storing into the input is not safe, the output is copied back by
 * the caller as before: each case keeps the input untouched. */
static void test_refused(void **state)
{
    int64_t sh[2] = {16, 16};
    /* the new value is read later (its kernel cannot go last), and the old
     * weight after it by a matmul */
    tj_tensor *in[2] = {randn(2, sh), randn(2, sh)};
    assert_int_equal(once("graph @after(%w: f32[16,16] param, %g: f32[16,16]) {\n"
                          "  %0 = sub %w, %g : f32[16,16]\n"
                          "  %1 = matmul %0, %w : f32[16,16]\n"
                          "  return %1, %0\n"
                          "}\n",
                          (int[]){-1, 0}, in, "read after"),
                     0);
    /* both kernels may go last, but the second reads the weight the first
     * would store into: only the second stores (into v) */
    tj_tensor *in3[2] = {randn(2, sh), randn(3, (int64_t[]){2, 16, 16})};
    assert_int_equal(once("graph @order(%w: f32[16,16] param, %v: f32[2,16,16] param) {\n"
                          "  %0 = neg %w : f32[16,16]\n"
                          "  %1 = add %v, %w : f32[2,16,16]\n"
                          "  return %0, %1\n"
                          "}\n",
                          (int[]){0, 1}, in3, "read by a later tail kernel"),
                     1);
    /* the kernel reads the weight at another index (w + w^T) */
    assert_int_equal(once("graph @transposed(%w: f32[16,16] param) {\n"
                          "  %0 = permute %w {perm=[1,0]} : f32[16,16]\n"
                          "  %1 = add %w, %0 : f32[16,16]\n"
                          "  return %1\n"
                          "}\n",
                          (int[]){0}, in, "w + w^T"),
                     0);
    /* the old weight is returned too */
    assert_int_equal(once("graph @old(%w: f32[16,16] param, %g: f32[16,16]) {\n"
                          "  %0 = sub %w, %g : f32[16,16]\n"
                          "  return %w, %0\n"
                          "}\n",
                          (int[]){-1, 0}, in, "old returned"),
                     0);
    /* the new value is returned twice */
    assert_int_equal(once("graph @twice(%w: f32[16,16] param, %g: f32[16,16]) {\n"
                          "  %0 = sub %w, %g : f32[16,16]\n"
                          "  return %0, %0\n"
                          "}\n",
                          (int[]){-1, 0}, in, "returned twice"),
                     0);
    /* two outputs go into the same input */
    assert_int_equal(once("graph @two(%w: f32[16,16] param, %g: f32[16,16]) {\n"
                          "  %0 = sub %w, %g : f32[16,16]\n"
                          "  %1 = add %w, %g : f32[16,16]\n"
                          "  return %0, %1\n"
                          "}\n",
                          (int[]){0, 0}, in, "two writes"),
                     0);
    /* a strided weight (a transposed view) */
    int64_t sh2[2] = {16, 32};
    tj_tensor *base = randn(2, (int64_t[]){32, 16});
    tj_tensor *in2[2] = {tj_transpose(base, 0, 1), randn(2, sh2)};
    assert_false(tj_is_contiguous(in2[0]));
    assert_int_equal(once(sgd_src, (int[]){-1, 0}, in2, "strided"), 0);
    /* ... also when the new value does not read it (a kernel storing in its
     * own layout) */
    const char *set_src = "graph @set(%w: f32[16,32] param, %g: f32[16,32]) {\n"
                          "  %0 = scalar {value=2, dtype=f64} : f64[] weak\n"
                          "  %1 = mul %g, %0 : f32[16,32]\n"
                          "  return %1\n"
                          "}\n";
    assert_int_equal(once(set_src, (int[]){0}, in2, "strided, not read"), 0);
    in2[0] = tj_clone(in2[0]);
    assert_int_equal(once(set_src, (int[]){0}, in2, "contiguous, not read"), 1);
}

/* Inputs sharing memory: a read of one is a read of the other. The kernel
 * reading w - v with v another header over w's storage may not store into
 * w (a plan of its own, built for that call); with v apart it does, and the
 * first plan serves again. A matmul reading the alias before the update is
 * no obstacle: the update runs after it. */
static void test_shared_memory(void **state)
{
    ir_graph *g = tu_parse("graph @sub2(%w: f32[16,32] param, %v: f32[16,32]) {\n"
                        "  %0 = sub %w, %v : f32[16,32]\n"
                        "  return %0\n"
                        "}\n");
    sc_plan_set *ps = sc_plans_new(g, g->name);
    int into[1] = {0};
    assert_int_equal(sc_plans_set_into(ps, into), 0);
    int64_t sh[2] = {16, 32};
    tj_tensor *w = randn(2, sh);
    tj_tensor *apart[2] = {w, randn(2, sh)}, *shared[2] = {w, tj_detach(w)};
    assert_int_equal(run_into(ps, g, into, apart, "apart"), 1);
    assert_int_equal(run_into(ps, g, into, shared, "shared"), 0);
    assert_int_equal(plan_into(ps), 0);
    assert_int_equal(run_into(ps, g, into, apart, "apart again"), 1);
    const ir_graph *pg;
    const sc_plan *plans[8];
    assert_int_equal(sc_plans_get(ps, &pg, plans, 8), 2);
    sc_plans_free(ps);
    ir_graph_free(g);

    tj_tensor *in[3] = {w, NULL, randn(2, (int64_t[]){32, 8})};
    in[1] = tj_detach(w);
    assert_int_equal(once("graph @before(%w: f32[16,32] param, %v: f32[16,32], %g: f32[32,8]) {\n"
                          "  %0 = matmul %v, %g : f32[16,8]\n"
                          "  %1 = neg %w : f32[16,32]\n"
                          "  return %0, %1\n"
                          "}\n",
                          (int[]){-1, 0}, in, "alias read before"),
                     1);
}

/* A run that fails (an index out of range in an eager call) stores into no
 * input: the kernels that do run last. */
static void test_failed_run_leaves_inputs(void **state)
{
    ir_graph *g = tu_parse("graph @fail(%w: f32[16,32] param, %t: f32[8,32], %i: i64[4]) {\n"
                        "  %0 = neg %w : f32[16,32]\n"
                        "  %1 = index_select %t, %i {dim=0} : f32[4,32]\n"
                        "  return %1, %0\n"
                        "}\n");
    sc_plan_set *ps = sc_plans_new(g, g->name);
    int into[2] = {-1, 0};
    assert_int_equal(sc_plans_set_into(ps, into), 0);
    tj_tensor *w = randn(2, (int64_t[]){16, 32}), *w0 = tj_clone(w);
    tj_tensor *in[3] = {w, randn(2, (int64_t[]){8, 32}), tu_tensor(TJ_I64, 1, (int64_t[]){4}, (double[]){1, 2, 3, 4})};
    assert_int_equal(run_into(ps, g, into, in, "good index"), 1);   /* w is -w0 now */
    tu_assert_close(w, tj_neg(w0), 0, 0);
    w0 = tj_clone(w);
    in[2] = tu_tensor(TJ_I64, 1, (int64_t[]){4}, (double[]){1, 2, 99, 4});
    tj_tensor *out[2];
    assert_int_equal(sc_plans_run(ps, in, out), -1);
    assert_non_null(strstr(tj_last_error(), "out of range"));
    tj_clear_error();
    tu_assert_close(w, w0, 0, 0);
    sc_plans_free(ps);
    ir_graph_free(g);
}

/* ---- compiled updates (tj_compile) ------------------------------------------------------- */

/* Weights updated in place by a compiled function: w <- w - 0.1 tanh(x),
 * returning sum(x) (+ sum(x[idx]) with an index argument), the new weight
 * (ret 1) or a view of the weight taken before the update (ret 2). */
typedef struct upd {
    tj_tensor *w[2];
    int n, ret;
} upd;

static tj_tensor *update(void *p, tj_tensor *const *a, int n)
{
    upd *u = p;
    tj_tensor *before = u->ret == 2 ? tj_transpose(u->w[0], 0, 1) : NULL, *nw = NULL;
    for (int k = 0; k < u->n; k++) {
        nw = tj_sub(u->w[k], tj_mul_s(tj_tanh(a[0]), 0.1 * (k + 1)));
        if (!nw || tj_copy_(u->w[k], nw) != 0)
            return NULL;
    }
    tj_tensor *s = tj_sum(a[0], NULL, 0, false);
    if (n > 1)
        s = tj_add(s, tj_sum(tj_index_select(a[0], 0, a[1]), NULL, 0, false));
    return u->ret == 1 ? nw : u->ret == 2 ? before : s;
}

static unsigned version(const tj_tensor *t) { return atomic_load(&t->storage->version); }

/* Runs update compiled on c and eagerly on e (the same weights, apart) for
 * `calls` calls: results and weights as eager's, each weight's version one
 * more per call (per write into its storage), its data where it was; `stored` weights stored by the
 * plan. Returns the compiled function (the caller frees it). */
static tj_compiled *run_update(upd *c, upd *e, int calls, int stored)
{
    tj_compiled *f = tj_compile(update, c, &(tj_compile_options){.name = "update"});
    const void *data[2];
    unsigned v0[2];
    for (int k = 0; k < c->n; k++) {
        data[k] = tj_data(c->w[k]);
        v0[k] = version(c->w[k]);
    }
    tj_tensor *prev = NULL, *prev_want = NULL;
    for (int i = 0; i < calls; i++) {
        tj_tensor *x = randn(2, c->w[0]->shape);
        tj_tensor *want = update(e, &x, 1), *got = tj_call(f, &x, 1);
        if (!want || !got)
            fail_msg("call %d: %s", i, tj_last_error());
        tu_assert_close(got, want, 1e-6, 1e-6);
        if (prev && c->ret != 2)   /* an earlier result is not the weight's memory (a view is) */
            tu_assert_close(prev, prev_want, 1e-6, 1e-6);
        prev = got, prev_want = tj_clone(want);
    }
    tj_compiled_stats st;
    tj_compiled_stats_get(f, &st);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.plan.writes_stored, stored);
    for (int k = 0; k < c->n; k++) {
        tu_assert_close(c->w[k], e->w[k], 1e-6, 1e-6);
        assert_ptr_equal(tj_data(c->w[k]), data[k]);
        unsigned writes = 0;   /* per call, one bump per write into the storage */
        for (int j = 0; j < c->n; j++)
            writes += c->w[j]->storage == c->w[k]->storage;
        assert_int_equal(version(c->w[k]) - v0[k], (unsigned)calls * writes);
    }
    return f;
}

/* A weight at an offset in a larger storage is stored into at its offset:
 * the rest of the storage keeps its values. */
static void test_compiled_offset_weight(void **state)
{
    tj_tensor *base = randn(2, (int64_t[]){48, 8}), *base0 = tj_clone(base), *ebase = tj_clone(base);
    upd c = {{tj_slice(base, 0, 16, 32, 1)}, 1, 0}, e = {{tj_slice(ebase, 0, 16, 32, 1)}, 1, 0};
    assert_true(tj_is_contiguous(c.w[0]) && c.w[0]->offset == 128);
    tj_compiled_free(run_update(&c, &e, 3, 1));
    tu_assert_close(tj_slice(base, 0, 0, 16, 1), tj_slice(base0, 0, 0, 16, 1), 0, 0);
    tu_assert_close(tj_slice(base, 0, 32, 48, 1), tj_slice(base0, 0, 32, 48, 1), 0, 0);
}

/* Two weights in one storage (each a slice of it), and a strided weight:
 * copied after the call, as before. */
static void test_compiled_shared_and_strided(void **state)
{
    tj_tensor *base = randn(2, (int64_t[]){32, 8}), *ebase = tj_clone(base);
    upd c = {{tj_slice(base, 0, 0, 16, 1), tj_slice(base, 0, 16, 32, 1)}, 2, 0};
    upd e = {{tj_slice(ebase, 0, 0, 16, 1), tj_slice(ebase, 0, 16, 32, 1)}, 2, 0};
    tj_compiled_free(run_update(&c, &e, 3, 0));
    tj_tensor *t = randn(2, (int64_t[]){8, 16}), *et = tj_clone(t);
    upd cs = {{tj_transpose(t, 0, 1)}, 1, 0}, es = {{tj_transpose(et, 0, 1)}, 1, 0};
    tj_compiled_free(run_update(&cs, &es, 3, 0));
}

/* The new weight returned (it must not become the weight: the next call
 * would change it), or a view of the weight made before the update (it
 * shows the new values, as eagerly): copied after the call. */
static void test_compiled_returns_weight(void **state)
{
    tj_tensor *w = randn(2, (int64_t[]){16, 8});
    upd c = {{w}, 1, 1}, e = {{tj_clone(w)}, 1, 1};
    tj_compiled_free(run_update(&c, &e, 3, 0));
    c.ret = e.ret = 2;
    tj_compiled_free(run_update(&c, &e, 3, 0));
    c.ret = e.ret = 0;   /* the same weights, a sum returned: stored */
    tj_compiled_free(run_update(&c, &e, 3, 1));
}

static tj_tensor *double_it(void *p, tj_tensor *const *a, int n)
{
    (void)a, (void)n;
    return tj_mul_s(((upd *)p)->w[0], 2);
}

/* Another compiled function reading the weight sees each update, a frozen
 * one too (its version guard traces again); TJIT_REINPLACE=0 copies. */
static void test_compiled_shared_weight_and_switch(void **state)
{
    tj_tensor *w = randn(2, (int64_t[]){16, 8});
    upd c = {{w}, 1, 0}, e = {{tj_clone(w)}, 1, 0};
    tj_compiled *g = tj_compile(double_it, &c, NULL);
    tj_compiled *fz = tj_compile(double_it, &c, &(tj_compile_options){.freeze = true});
    for (int i = 0; i < 2; i++) {
        tj_compiled_free(run_update(&c, &e, 2, 1));
        tu_assert_close(tj_call(g, NULL, 0), tj_mul_s(e.w[0], 2), 1e-6, 1e-6);
        tu_assert_close(tj_call(fz, NULL, 0), tj_mul_s(e.w[0], 2), 1e-6, 1e-6);
    }
    tj_compiled_free(g);
    tj_compiled_free(fz);
    setenv("TJIT_REINPLACE", "0", 1);
    tj_compiled_free(run_update(&c, &e, 2, 0));
    unsetenv("TJIT_REINPLACE");
}

static tj_tensor *scale_arg(void *p, tj_tensor *const *a, int n)
{
    (void)p, (void)n;
    tj_tensor *y = tj_sum(a[0], NULL, 0, false);
    return tj_copy_(a[0], tj_mul_s(a[0], 2)) == 0 ? y : NULL;
}

/* A write into an argument is stored there too (each call's argument: the
 * plan serves any tensor of that signature). */
static void test_compiled_argument(void **state)
{
    tj_compiled *f = tj_compile(scale_arg, NULL, NULL);
    for (int i = 0; i < 3; i++) {
        tj_tensor *x = randn(2, (int64_t[]){16, 8}), *x0 = tj_clone(x);
        tu_assert_close(tj_call(f, &x, 1), tj_sum(x0, NULL, 0, false), 1e-5, 1e-5);
        tu_assert_close(x, tj_mul_s(x0, 2), 0, 0);
    }
    tj_compiled_stats st;
    tj_compiled_stats_get(f, &st);
    assert_int_equal(st.plan.writes_stored, 1);
    tj_compiled_free(f);
}

/* A call whose plan fails (an index out of range, before the update in the
 * traced order) leaves the weight and its version as they were. */
static void test_compiled_failure_leaves_weight(void **state)
{
    tj_tensor *w = randn(2, (int64_t[]){16, 8});
    upd c = {{w}, 1, 0};
    tj_compiled *f = tj_compile(update, &c, NULL);
    tj_tensor *x = randn(2, (int64_t[]){16, 8});
    tj_tensor *good[2] = {x, tu_tensor(TJ_I64, 1, (int64_t[]){2}, (double[]){3, 5})};
    tj_tensor *bad[2] = {x, tu_tensor(TJ_I64, 1, (int64_t[]){2}, (double[]){3, 50})};
    assert_non_null(tj_call(f, good, 2));
    tj_compiled_stats st;
    tj_compiled_stats_get(f, &st);
    assert_int_equal(st.plan.writes_stored, 1);
    tj_tensor *w0 = tj_clone(w);
    unsigned v = version(w);
    tu_assert_error(tj_call(f, bad, 2), "out of range", NULL);
    tu_assert_close(w, w0, 0, 0);
    assert_int_equal(version(w), v);
    tj_compiled_free(f);
}

static void test_skipped(void **state) { (void)state; }

int main(void)
{
    tu_use_build_cache();
    tj_set_num_threads(2);
    tj_manual_seed(11);
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_stored_into_inputs),
        T(test_refused),
        T(test_shared_memory),
        T(test_failed_run_leaves_inputs),
        T(test_compiled_offset_weight),
        T(test_compiled_shared_and_strided),
        T(test_compiled_returns_weight),
        T(test_compiled_shared_weight_and_switch),
        T(test_compiled_argument),
        T(test_compiled_failure_leaves_weight),
#undef T
    };
    char why[512] = "TJIT_BACKEND=eager";
    if (!sc_backend_llvm() || !cg_jit_available(why, sizeof why)) {
        const struct CMUnitTest none[] = {cmocka_unit_test(test_skipped)};
        fprintf(stderr, "reinplace: no JIT (%s); nothing is stored into inputs\n", why);
        return cmocka_run_group_tests_name("reinplace", none, NULL, NULL);
    }
    return cmocka_run_group_tests_name("reinplace", tests, NULL, NULL);
}
