/* test_merge.c - the merge_matmuls pass (passes/merge_mm.c): text graphs in,
 * text graphs out (row slices of one value become a view, other left
 * operands a cat; dependent, tall or differently shaped matmuls stay
 * apart), and compiled plans of merged graphs (an unrolled LSTM) against
 * eager and the graph executor, with one GEMM call fewer per merged matmul
 * and none on a zero state (simplify's matmul-zero, inf and NaN weights).
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
#include "../passes/pass.h"
#include "../sched/sched.h"
#include "util.h"
#include "util_ir.h"

/* src through "merge_matmuls,dce" must print as want. */
static void expect_graph(const char *src, const char *want)
{
    tu_expect_passes(src, "merge_matmuls,dce", want);
}

/* Two steps' input projections, rows 0 and 1 of %x: one matmul on rows
 * [0, 2) of %x (a view), its two row slices in their place. */
static void test_row_slices_become_a_view(void **state)
{
    (void)state;
    expect_graph("graph @t(%x: f32[2,4,8], %w: f32[16,8]) {\n"
                 "  %0 = permute %w {perm=[1,0]} : f32[8,16]\n"
                 "  %1 = slice %x {dim=0, start=0, end=1, step=1} : f32[1,4,8]\n"
                 "  %2 = reshape %1 {shape=[4,8]} : f32[4,8]\n"
                 "  %3 = matmul %2, %0 : f32[4,16]\n"
                 "  %4 = tanh %3 : f32[4,16]\n"
                 "  %5 = slice %x {dim=0, start=1, end=2, step=1} : f32[1,4,8]\n"
                 "  %6 = reshape %5 {shape=[4,8]} : f32[4,8]\n"
                 "  %7 = matmul %6, %0 : f32[4,16]\n"
                 "  %8 = add %4, %7 : f32[4,16]\n"
                 "  return %8\n"
                 "}\n",
                 "graph @t(%x: f32[2,4,8], %w: f32[16,8]) {\n"
                 "  %0 = permute %w {perm=[1,0]} : f32[8,16]\n"
                 "  %1 = slice %x {dim=0, start=0, end=2, step=1} : f32[2,4,8]\n"
                 "  %2 = reshape %1 {shape=[8,8]} : f32[8,8]\n"
                 "  %3 = matmul %2, %0 : f32[8,16]\n"
                 "  %4 = slice %3 {dim=0, start=0, end=4, step=1} : f32[4,16]\n"
                 "  %5 = slice %3 {dim=0, start=4, end=8, step=1} : f32[4,16]\n"
                 "  %6 = tanh %4 : f32[4,16]\n"
                 "  %7 = add %6, %5 : f32[4,16]\n"
                 "  return %7\n"
                 "}\n");
}

/* Left operands that are not consecutive rows of one value: a cat, built
 * before the merged matmul (the second operand's exp moves up). */
static void test_other_operands_are_cat(void **state)
{
    (void)state;
    expect_graph("graph @t(%a: f32[3,8], %b: f32[5,8], %w: f32[8,16]) {\n"
                 "  %0 = matmul %a, %w : f32[3,16]\n"
                 "  %1 = exp %b : f32[5,8]\n"
                 "  %2 = matmul %1, %w : f32[5,16]\n"
                 "  return %0, %2\n"
                 "}\n",
                 "graph @t(%a: f32[3,8], %b: f32[5,8], %w: f32[8,16]) {\n"
                 "  %0 = exp %b : f32[5,8]\n"
                 "  %1 = cat %a, %0 {dim=0} : f32[8,8]\n"
                 "  %2 = matmul %1, %w : f32[8,16]\n"
                 "  %3 = slice %2 {dim=0, start=0, end=3, step=1} : f32[3,16]\n"
                 "  %4 = slice %2 {dim=0, start=3, end=8, step=1} : f32[5,16]\n"
                 "  return %3, %4\n"
                 "}\n");
}

/* What must stay as it is: a matmul reading another's result (the
 * recurrence), rows beyond the limit, different right operands, a batched
 * matmul. */
static void test_what_stays_apart(void **state)
{
    (void)state;
    const char *dependent = "graph @t(%h: f32[4,8], %w: f32[8,8]) {\n"
                            "  %0 = matmul %h, %w : f32[4,8]\n"
                            "  %1 = tanh %0 : f32[4,8]\n"
                            "  %2 = matmul %1, %w : f32[4,8]\n"
                            "  return %2\n"
                            "}\n";
    expect_graph(dependent, dependent);
    const char *tall = "graph @t(%a: f32[300,8], %b: f32[300,8], %w: f32[8,16]) {\n"
                       "  %0 = matmul %a, %w : f32[300,16]\n"
                       "  %1 = matmul %b, %w : f32[300,16]\n"
                       "  return %0, %1\n"
                       "}\n";
    expect_graph(tall, tall);
    const char *two_weights = "graph @t(%a: f32[3,8], %w: f32[8,16], %v: f32[8,16]) {\n"
                              "  %0 = matmul %a, %w : f32[3,16]\n"
                              "  %1 = matmul %a, %v : f32[3,16]\n"
                              "  return %0, %1\n"
                              "}\n";
    expect_graph(two_weights, two_weights);
    const char *batched = "graph @t(%a: f32[2,3,8], %b: f32[2,3,8], %w: f32[8,16]) {\n"
                          "  %0 = matmul %a, %w : f32[2,3,16]\n"
                          "  %1 = matmul %b, %w : f32[2,3,16]\n"
                          "  return %0, %1\n"
                          "}\n";
    expect_graph(batched, batched);
}

/* The next member reads the first one's result through others: the first
 * and third merge, the second (dependent) stays. */
static void test_dependent_member_left_out(void **state)
{
    (void)state;
    expect_graph("graph @t(%a: f32[3,8], %b: f32[3,8], %w: f32[8,8]) {\n"
                 "  %0 = matmul %a, %w : f32[3,8]\n"
                 "  %1 = matmul %0, %w : f32[3,8]\n"
                 "  %2 = matmul %b, %w : f32[3,8]\n"
                 "  return %1, %2\n"
                 "}\n",
                 "graph @t(%a: f32[3,8], %b: f32[3,8], %w: f32[8,8]) {\n"
                 "  %0 = cat %a, %b {dim=0} : f32[6,8]\n"
                 "  %1 = matmul %0, %w : f32[6,8]\n"
                 "  %2 = slice %1 {dim=0, start=0, end=3, step=1} : f32[3,8]\n"
                 "  %3 = slice %1 {dim=0, start=3, end=6, step=1} : f32[3,8]\n"
                 "  %4 = matmul %2, %w : f32[3,8]\n"
                 "  return %4, %3\n"
                 "}\n");
}

/* Two groups: the second's first left operand reads the first group's
 * result (allowed: the first merged matmul is built before it). */
static void test_group_reads_earlier_group(void **state)
{
    (void)state;
    expect_graph("graph @t(%a: f32[3,8], %b: f32[3,8], %c: f32[3,8], %w: f32[8,8], %v: f32[8,4]) {\n"
                 "  %0 = matmul %a, %w : f32[3,8]\n"
                 "  %1 = tanh %0 : f32[3,8]\n"
                 "  %2 = matmul %1, %v : f32[3,4]\n"
                 "  %3 = matmul %b, %w : f32[3,8]\n"
                 "  %4 = matmul %c, %v : f32[3,4]\n"
                 "  %5 = add %3, %1 : f32[3,8]\n"
                 "  return %2, %4, %5\n"
                 "}\n",
                 "graph @t(%a: f32[3,8], %b: f32[3,8], %c: f32[3,8], %w: f32[8,8], %v: f32[8,4]) {\n"
                 "  %0 = cat %a, %b {dim=0} : f32[6,8]\n"
                 "  %1 = matmul %0, %w : f32[6,8]\n"
                 "  %2 = slice %1 {dim=0, start=0, end=3, step=1} : f32[3,8]\n"
                 "  %3 = slice %1 {dim=0, start=3, end=6, step=1} : f32[3,8]\n"
                 "  %4 = tanh %2 : f32[3,8]\n"
                 "  %5 = cat %4, %c {dim=0} : f32[6,8]\n"
                 "  %6 = matmul %5, %v : f32[6,4]\n"
                 "  %7 = slice %6 {dim=0, start=0, end=3, step=1} : f32[3,4]\n"
                 "  %8 = slice %6 {dim=0, start=3, end=6, step=1} : f32[3,4]\n"
                 "  %9 = add %3, %4 : f32[3,8]\n"
                 "  return %7, %8, %9\n"
                 "}\n");
}

/* A matmul an earlier group needs before its merged matmul (%1, in the cone
 * of %3's left operand) joins no later group: it is built early, as it is,
 * and %4 stays alone. */
static void test_needed_early_stays(void **state)
{
    (void)state;
    expect_graph("graph @t(%a: f32[3,8], %b: f32[3,8], %c: f32[3,8], %w: f32[8,8], %v: f32[8,8]) {\n"
                 "  %0 = matmul %a, %w : f32[3,8]\n"
                 "  %1 = matmul %c, %v : f32[3,8]\n"
                 "  %2 = tanh %1 : f32[3,8]\n"
                 "  %3 = matmul %2, %w : f32[3,8]\n"
                 "  %4 = matmul %b, %v : f32[3,8]\n"
                 "  return %0, %3, %4\n"
                 "}\n",
                 "graph @t(%a: f32[3,8], %b: f32[3,8], %c: f32[3,8], %w: f32[8,8], %v: f32[8,8]) {\n"
                 "  %0 = matmul %c, %v : f32[3,8]\n"
                 "  %1 = tanh %0 : f32[3,8]\n"
                 "  %2 = cat %a, %1 {dim=0} : f32[6,8]\n"
                 "  %3 = matmul %2, %w : f32[6,8]\n"
                 "  %4 = slice %3 {dim=0, start=0, end=3, step=1} : f32[3,8]\n"
                 "  %5 = slice %3 {dim=0, start=3, end=6, step=1} : f32[3,8]\n"
                 "  %6 = matmul %b, %v : f32[3,8]\n"
                 "  return %4, %5, %6\n"
                 "}\n");
}

/* A member whose left operand sits at the end of a long chain (the second
 * step's input made by 20000 ops after the first matmul): the chain is built
 * before the merged matmul, without recursing per node. */
static void test_long_chain_moves_up(void **state)
{
    (void)state;
    ir_graph *g = ir_graph_new("chain");
    ir_type t = {.dtype = TJ_F32, .ndim = 2, .shape = {4, 8}}, wt = {.dtype = TJ_F32, .ndim = 2, .shape = {8, 16}};
    ir_node *x = ir_graph_input(g, "x", &t, false), *y = ir_graph_input(g, "y", &t, false);
    ir_node *w = ir_graph_input(g, "w", &wt, false);
    ir_node *m1 = ir_graph_add(g, OP_matmul, (ir_node *[]){y, w}, 2, NULL), *a = x;
    for (int k = 0; k < 20000 && a; k++)
        a = ir_graph_add(g, k % 2 ? OP_sin : OP_cos, &a, 1, NULL);
    assert_non_null(a);
    ir_node *m2 = ir_graph_add(g, OP_matmul, (ir_node *[]){a, w}, 2, NULL);
    assert_non_null(m2);
    assert_int_equal(ir_graph_set_outputs(g, (ir_node *[]){m1, m2}, 2), 0);
    char err[512];
    ir_graph *h = ps_merge_matmuls(g, err, sizeof err);
    if (!h)
        fail_msg("merge_matmuls: %s", err);
    int mm = 0;
    for (int k = 0; k < h->nnodes; k++)
        mm += h->nodes[k]->op == OP_matmul;
    assert_int_equal(mm, 1);
    tu_assert_verifies(h);
    ir_graph_free(h);
    ir_graph_free(g);
}

/* ---- compiled plans -------------------------------------------------------------------- */

enum { LT = 4, LB = 16, LH = 32 };

/* An LSTM cell (torch.nn.LSTMCell's weights) unrolled over LT steps, as the
 * suite's P9 at a smaller size. */
static tj_tensor *lstm(void *ctx, tj_tensor *const *in, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *h = tj_zeros(TJ_F32, 2, (int64_t[]){LB, LH}), *c = h;
    for (int t = 0; t < LT; t++) {
        tj_tensor *xt = tj_reshape(tj_slice(in[0], 0, t, t + 1, 1), 2, (int64_t[]){LB, LH});
        tj_tensor *g = tj_add(tj_linear(xt, in[1], in[2]), tj_linear(h, in[3], in[4])), *q[4];
        if (tj_split(g, LH, 1, q, 4) != 4)
            return NULL;
        c = tj_add(tj_mul(tj_sigmoid(q[1]), c), tj_mul(tj_sigmoid(q[0]), tj_tanh(q[2])));
        h = tj_mul(tj_sigmoid(q[3]), tj_tanh(c));
    }
    return h;
}

/* The eager calls of lstm's compiled plan, its result checked against eager. */
static int lstm_eager_calls(tj_tensor **in)
{
    tj_compiled *c = tj_compile(lstm, NULL, &(tj_compile_options){.name = "lstm"});
    assert_non_null(c);
    for (int k = 0; k < 2; k++) {
        tj_tensor *y = tj_call(c, in, 5);
        assert_non_null(y);
        tu_assert_close(y, lstm(NULL, in, 5), 1e-5, 1e-5);
        tj_release(y);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    tj_compiled_free(c);
    assert_true(st.plan.compiled);
    return st.plan.eager_calls;
}

static void test_lstm_compiled_matches_eager(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *in[5] = {
        tj_randn(TJ_F32, 3, (int64_t[]){LT, LB, LH}),
        tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){4 * LH, LH}), 0.2),
        tj_randn(TJ_F32, 1, (int64_t[]){4 * LH}),
        tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){4 * LH, LH}), 0.2),
        tj_randn(TJ_F32, 1, (int64_t[]){4 * LH}),
    };
    int merged = lstm_eager_calls(in);
    setenv("TJIT_MERGE_MATMULS", "0", 1);
    int apart = lstm_eager_calls(in);
    unsetenv("TJIT_MERGE_MATMULS");
    /* the LT input projections are one GEMM: LT - 1 calls fewer */
    assert_int_equal(apart - merged, LT - 1);
    tj_scope_end();
}

/* A training step through the unrolled LSTM, compiled whole (x requires
 * grad too), against eager. The forward's projections merge; the backward's
 * dG_t @ W_ih do not: each step's saved weight is a capture of its own in the
 * traced graph (one tensor at run time, LT inputs of the graph), so they
 * share no right operand node. */
static tj_tensor *lstm_grad(void *ctx, tj_tensor *const *in, int n)
{
    (void)n;
    tj_tensor *const *w = ctx;   /* x, w_ih, b_ih, w_hh, b_hh: all require grad */
    for (int k = 0; k < 5; k++)
        tj_zero_grad(w[k]);
    tj_tensor *loss = tj_sum(tj_mul(lstm(NULL, w, 5), in[0]), NULL, 0, false);
    if (tj_backward(loss) != 0)
        return NULL;
    return tj_add(tj_mul_s(tj_grad(w[0]), 1.0), tj_sum(tj_grad(w[1]), NULL, 0, false));
}

/* The eager calls of lstm_grad's compiled plan, its result checked against eager. */
static int lstm_grad_eager_calls(tj_tensor **w, tj_tensor *ct)
{
    tj_compiled *c = tj_compile(lstm_grad, w, &(tj_compile_options){.name = "lstm_grad"});
    assert_non_null(c);
    for (int k = 0; k < 2; k++) {
        tj_tensor *y = tj_call(c, &ct, 1);
        assert_non_null(y);
        tj_tensor *want = lstm_grad(w, &ct, 1);
        tu_assert_close(y, want, 1e-4, 1e-5);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_true(st.plan.compiled);
    tj_compiled_free(c);
    return st.plan.eager_calls;
}

static void test_lstm_backward_compiled(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *w[5] = {
        tj_randn(TJ_F32, 3, (int64_t[]){LT, LB, LH}),
        tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){4 * LH, LH}), 0.2),
        tj_randn(TJ_F32, 1, (int64_t[]){4 * LH}),
        tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){4 * LH, LH}), 0.2),
        tj_randn(TJ_F32, 1, (int64_t[]){4 * LH}),
    };
    for (int k = 0; k < 5; k++)
        assert_int_equal(tj_requires_grad(w[k], true), 0);
    tj_tensor *ct = tj_randn(TJ_F32, 2, (int64_t[]){LB, LH});
    int merged = lstm_grad_eager_calls(w, ct);
    setenv("TJIT_MERGE_MATMULS", "0", 1);
    int apart = lstm_grad_eager_calls(w, ct);
    unsetenv("TJIT_MERGE_MATMULS");
    assert_true(apart - merged >= LT - 1);
    tj_scope_end();
}

/* The first step from a zero state, compiled (simplify's matmul-zero: 0 @ w
 * as 0 * amax(|w|, dim 0)): against the graph executor's GEMM, with an inf,
 * a -inf and a NaN in three columns of the weight (those columns NaN, the
 * rest +0), merged input projections beside it. */
static void test_zero_state_compiled(void **state)
{
    (void)state;
    ir_graph *g = tu_parse("graph @z(%x: f32[2,8,16], %w: f32[16,32]) {\n"
                           "  %z = full {shape=[8,16], value=0, dtype=f32} : f32[8,16]\n"
                           "  %0 = matmul %z, %w : f32[8,32]\n"
                           "  %1 = slice %x {dim=0, start=0, end=1, step=1} : f32[1,8,16]\n"
                           "  %2 = reshape %1 {shape=[8,16]} : f32[8,16]\n"
                           "  %3 = matmul %2, %w : f32[8,32]\n"
                           "  %4 = slice %x {dim=0, start=1, end=2, step=1} : f32[1,8,16]\n"
                           "  %5 = reshape %4 {shape=[8,16]} : f32[8,16]\n"
                           "  %6 = matmul %5, %w : f32[8,32]\n"
                           "  %7 = add %0, %3 : f32[8,32]\n"
                           "  %8 = mul %7, %6 : f32[8,32]\n"
                           "  return %8, %0\n"
                           "}\n");
    tj_scope_begin();
    tj_tensor *w = tj_contiguous(tj_randn(TJ_F32, 2, (int64_t[]){16, 32}));
    float *p = tj_data(w);
    assert_non_null(p);
    p[3 * 32 + 5] = 1.0f / 0.0f;
    p[7 * 32 + 9] = -1.0f / 0.0f;
    p[0 * 32 + 30] = 0.0f / 0.0f;
    tj_tensor *in[2] = {tj_randn(TJ_F32, 3, (int64_t[]){2, 8, 16}), w};
    sc_plan_set *ps = sc_plans_new(g, g->name);
    int rc = tu_plans_vs_exec(ps, g, in, 1e-5, 1e-5);
    sc_plan_info info;
    sc_plans_info(ps, &info);
    sc_plans_free(ps);
    if (rc != 0)
        fail_msg("zero state: %s", rc < 0 ? tj_last_error() : "not compiled");
    assert_int_equal(info.eager_calls, 1);   /* one merged GEMM; no GEMM on the zeros */
    tj_scope_end();
    ir_graph_free(g);
}

static void no_jit(void **state)
{
    (void)state;
    skip();
}

int main(void)
{
    char why[512];
    bool jit = cg_jit_available(why, sizeof why);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_slices_become_a_view),
        cmocka_unit_test(test_other_operands_are_cat),
        cmocka_unit_test(test_what_stays_apart),
        cmocka_unit_test(test_dependent_member_left_out),
        cmocka_unit_test(test_group_reads_earlier_group),
        cmocka_unit_test(test_needed_early_stays),
        cmocka_unit_test(test_long_chain_moves_up),
        /* compiled plans: skipped without the JIT */
#define PLAN_TEST(f) {#f, jit ? f : no_jit, NULL, NULL, NULL}
        PLAN_TEST(test_lstm_compiled_matches_eager),
        PLAN_TEST(test_zero_state_compiled),
        PLAN_TEST(test_lstm_backward_compiled),
#undef PLAN_TEST
    };
    if (!jit)
        fprintf(stderr, "merge: no JIT (%s); the compiled plans are not tested\n", why);
    tu_use_build_cache();
    return cmocka_run_group_tests_name("merge", tests, NULL, NULL);
}
