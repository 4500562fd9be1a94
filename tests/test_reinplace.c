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
 * eagerly), the version bumped once per call, a second compiled function
 * seeing the update, TJIT_REINPLACE=0, and a call failing in its plan (the
 * weights as they were). test_optim.c runs SGD with momentum and AdamW.
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

static ir_graph *parse(const char *src)
{
    char err[512];
    ir_graph *g = ir_parse(src, strlen(src), "test.tir", err, sizeof err);
    if (!g)
        fail_msg("%s", err);
    return g;
}

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
    ir_graph *g = parse(src);
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
    ir_graph *g = parse("graph @momentum(%w: f32[16,32] param, %b: f32[16,32] param, %g: f32[16,32]) {\n"
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
    ir_graph *g = parse("graph @sub2(%w: f32[16,32] param, %v: f32[16,32]) {\n"
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
    ir_graph *g = parse("graph @fail(%w: f32[16,32] param, %t: f32[8,32], %i: i64[4]) {\n"
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

static void test_skipped(void **state) { (void)state; }

int main(void)
{
    char cache[512];
    const char *build = getenv("TJ_BUILD") ? getenv("TJ_BUILD") : "build";
    snprintf(cache, sizeof cache, "%s/kernel-cache", build);
    setenv("TJIT_CACHE_DIR", cache, 0);
    tj_set_num_threads(2);
    tj_manual_seed(11);
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_stored_into_inputs),
        T(test_refused),
        T(test_shared_memory),
        T(test_failed_run_leaves_inputs),
#undef T
    };
    char why[512];
    if (!cg_jit_available(why, sizeof why)) {
        const struct CMUnitTest none[] = {cmocka_unit_test(test_skipped)};
        fprintf(stderr, "reinplace: no JIT (%s); nothing is stored into inputs\n", why);
        return cmocka_run_group_tests_name("reinplace", none, NULL, NULL);
    }
    return cmocka_run_group_tests_name("reinplace", tests, NULL, NULL);
}
