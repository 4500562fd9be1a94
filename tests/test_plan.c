/* test_plan.c - the memory plan and the blocked regions of compiled graphs
 * (sched/mem.c, sched/block.c) against the graph executor
 * (what TJIT_BACKEND=eager runs).
 *
 * Graphs are text IR run through a plan set directly (sc_plans_run), so the
 * plan's memory stats can be checked too: intermediates reuse one arena by
 * lifetime (no more than the executor holds at its peak), kernels write in
 * place over inputs that die there (and not where a later read would see the
 * new value), outputs never share memory with the arena or each other across
 * calls, a value returned twice, inputs returned, sizes that change between
 * calls. Regions: matmul + epilogue + matmul (attention, an MLP), conv2d
 * blocks, a GEMM per batch, threads sharing a plan. The pool runs 2 threads
 * here, so the plans (which depend on the thread count) are the same on every
 * machine.
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

#include "../codegen/jit.h"
#include "../sched/exec.h"
#include "../frontend/fe.h"
#include "../sched/sched.h"
#include "util.h"
#include "util_ir.h"

/* ---- helpers ------------------------------------------------------------------------- */

/* Runs g on in through plan set ps and on the graph executor; compares every
 * output within rtol, atol. */
static void run_both_on(sc_plan_set *ps, const ir_graph *g, tj_tensor **in, double rtol, double atol,
                        const char *what)
{
    int rc = tu_plans_vs_exec(ps, g, in, rtol, atol);
    if (rc != 0)
        fail_msg("%s: %s", what, rc < 0 ? tj_last_error() : "not compiled");
}

/* The same with a fresh plan set; m gets its memory plan. */
static void run_both(const ir_graph *g, tj_tensor **in, double rtol, double atol, sc_plan_mem *m, const char *what)
{
    sc_plan_set *ps = sc_plans_new(g, g->name);
    run_both_on(ps, g, in, rtol, atol, what);
    if (m)
        sc_plans_mem(ps, m);
    sc_plans_free(ps);
}

static int64_t bytes_of(const ir_type *t)
{
    int64_t n = (int64_t)tj_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* The most bytes of results the graph executor holds at once on g (static
 * shapes, no views): each node's result from its run until its last use. */
static int64_t exec_peak(const ir_graph *g)
{
    int *last = sc_exec_last_use(g);
    int64_t live = 0, peak = 0;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        live += bytes_of(&n->type);
        peak = live > peak ? live : peak;
        for (int j = 0; j < n->nin; j++) {
            const ir_node *in = n->in[j];
            bool again = false;   /* an input read twice is freed once */
            for (int i = 0; i < j; i++)
                again = again || n->in[i] == in;
            if (in && !again && !ir_node_is_input(in) && last[ir_slot(g, in)] == k)
                live -= bytes_of(&in->type);
        }
        if (last[ir_slot(g, n)] < 0)
            live -= bytes_of(&n->type);
    }
    free(last);
    return peak;
}

static tj_tensor *randn(int ndim, const int64_t *shape, double scale)
{
    return tj_mul_s(tj_randn(TJ_F32, ndim, shape), scale);
}

/* ---- the arena ------------------------------------------------------------------------- */

/* Pointwise kernels between eager calls (flips, a MOVE op plans run
 * eagerly): each kernel's result is an intermediate the arena holds, mostly
 * written in place over the one before. */
static const char *chain_src =
    "graph @chain(%x: f32[64,256], %y: f32[64,256]) {\n"
    "  %0 = exp %x : f32[64,256]\n"
    "  %1 = flip %0 {dims=[0]} : f32[64,256]\n"
    "  %2 = sub %0, %1 : f32[64,256]\n"
    "  %3 = tanh %2 : f32[64,256]\n"
    "  %4 = flip %3 {dims=[0]} : f32[64,256]\n"
    "  %5 = mul %3, %4 : f32[64,256]\n"
    "  %6 = add %5, %y : f32[64,256]\n"
    "  %7 = flip %6 {dims=[0]} : f32[64,256]\n"
    "  %8 = mul %6, %7 : f32[64,256]\n"
    "  %9 = flip %8 {dims=[0]} : f32[64,256]\n"
    "  %10 = sub %8, %9 : f32[64,256]\n"
    "  %11 = mul %10, %2 : f32[64,256]\n"
    "  return %11, %9\n"
    "}\n";

static void test_chain_reuses_the_arena(void **state)
{
    ir_graph *g = tu_parse(chain_src);
    tj_tensor *in[2] = {randn(2, (int64_t[]){64, 256}, 0.5), randn(2, (int64_t[]){64, 256}, 1)};
    sc_plan_mem m;
    run_both(g, in, 1e-6, 1e-6, &m, "chain");
    assert_true(m.in_place >= 2);
    assert_true(m.arena_bytes <= m.live_bound);   /* greedy by size reaches the bound here */
    assert_true(m.peak_bytes < m.unplanned_bytes);
    assert_true(m.peak_bytes <= exec_peak(g));
    assert_int_equal(m.regions, 0);
    ir_graph_free(g);
}

/* The suite's P1 at 1M: one kernel; the plan holds the result only, the
 * executor three values at once. Bit for bit. */
static void test_p1_chain_peak(void **state)
{
    ir_graph *g = tu_parse("graph @p1(%x: f32[1048576]) {\n"
                        "  %0 = scalar {value=1.702, dtype=f64} : f64[] weak\n"
                        "  %1 = mul %x, %0 : f32[1048576]\n"
                        "  %2 = sigmoid %1 : f32[1048576]\n"
                        "  %3 = tanh %x : f32[1048576]\n"
                        "  %4 = mul %3, %2 : f32[1048576]\n"
                        "  %5 = scalar {value=0.5, dtype=f64} : f64[] weak\n"
                        "  %6 = mul %x, %5 : f32[1048576]\n"
                        "  %7 = add %4, %6 : f32[1048576]\n"
                        "  return %7\n"
                        "}\n");
    tj_tensor *x = randn(1, (int64_t[]){1048576}, 3);
    sc_plan_mem m;
    run_both(g, &x, 0, 0, &m, "p1");
    assert_int_equal(m.peak_bytes, 4 << 20);
    assert_int_equal(m.arena_bytes, 0);
    assert_true(m.peak_bytes <= exec_peak(g));
    assert_true(exec_peak(g) >= 3 * (4 << 20));
    ir_graph_free(g);
}

/* Eager calls (flips) in a row: a buffer whose life ends at a step is not
 * reused by what that step writes. The arena holds what the executor holds
 * at its peak; the result's own memory comes on top (the arena is one block
 * for the whole call), still far below what eager code holds (everything). */
static void test_arena_offsets_do_not_overlap_live_values(void **state)
{
    ir_graph *g = tu_parse("graph @ov(%x: f32[32,128]) {\n"
                        "  %0 = exp %x : f32[32,128]\n"
                        "  %1 = flip %0 {dims=[0]} : f32[32,128]\n"
                        "  %2 = flip %1 {dims=[1]} : f32[32,128]\n"
                        "  %3 = flip %2 {dims=[0]} : f32[32,128]\n"
                        "  %4 = add %3, %0 : f32[32,128]\n"
                        "  return %4\n"
                        "}\n");
    tj_tensor *x = randn(2, (int64_t[]){32, 128}, 0.1);
    sc_plan_mem m;
    run_both(g, &x, 1e-6, 1e-6, &m, "eager chain");
    assert_int_equal(m.arena_bytes, 3 * 32 * 128 * 4);   /* %0 and two flips live at once */
    assert_int_equal(m.arena_bytes, exec_peak(g));
    assert_true(m.peak_bytes < m.unplanned_bytes);
    ir_graph_free(g);
}

/* ---- in place ---------------------------------------------------------------------------- */

/* One kernel stores %1 = tanh(y), %3 = p@q + 1 and %4 = %1 * %3, in that
 * order, and p@q dies there. %1 may not be written over p@q (the load of p@q
 * for %3 comes after %1's store); %3 may. Both are results: the buffer
 * becomes theirs. */
static void test_inplace_store_order(void **state)
{
    ir_graph *g = tu_parse("graph @order(%p: f32[16,8], %q: f32[8,32], %y: f32[16,32]) {\n"
                        "  %0 = matmul %p, %q : f32[16,32]\n"
                        "  %1 = tanh %y : f32[16,32]\n"
                        "  %2 = scalar {value=1, dtype=f64} : f64[] weak\n"
                        "  %3 = add %0, %2 : f32[16,32]\n"
                        "  %4 = mul %1, %3 : f32[16,32]\n"
                        "  return %1, %3, %4\n"
                        "}\n");
    tj_tensor *in[3] = {randn(2, (int64_t[]){16, 8}, 1), randn(2, (int64_t[]){8, 32}, 1),
                        randn(2, (int64_t[]){16, 32}, 1)};
    sc_plan_mem m;
    run_both(g, in, 1e-6, 1e-6, &m, "store order");
    assert_int_equal(m.in_place, 1);
    ir_graph_free(g);
}

/* Rows kernels: layer_norm and softmax over a dying matmul result (read by
 * every stage; in place: each stage reads it before the one that stores);
 * a kernel reading its input at two indices (x + x^T) is not in place. */
static void test_inplace_rows_and_refusals(void **state)
{
    ir_graph *g = tu_parse("graph @rows(%p: f32[48,16], %q: f32[16,48], %w: f32[48] param) {\n"
                        "  %0 = matmul %p, %q : f32[48,48]\n"
                        "  %1 = sum %0 {dims=[0], keepdim=true} : f32[1,48]\n"
                        "  %2 = layer_norm %0, %w {ndims=1, eps=1e-05} : f32[48,48]\n"
                        "  %3 = matmul %2, %2 : f32[48,48]\n"
                        "  %4 = sum %3 {dims=[0], keepdim=true} : f32[1,48]\n"
                        "  %5 = softmax %3 {dim=1} : f32[48,48]\n"
                        "  %6 = matmul %5, %5 : f32[48,48]\n"
                        "  %7 = sum %6 {dims=[0], keepdim=true} : f32[1,48]\n"
                        "  %8 = permute %6 {perm=[1,0]} : f32[48,48]\n"
                        "  %9 = add %6, %8 : f32[48,48]\n"
                        "  return %9, %1, %4, %7\n"
                        "}\n");
    tj_tensor *in[3] = {randn(2, (int64_t[]){48, 16}, 1), randn(2, (int64_t[]){16, 48}, 1),
                        randn(1, (int64_t[]){48}, 1)};
    sc_plan_mem m;
    run_both(g, in, 1e-5, 1e-5, &m, "rows in place");
    assert_int_equal(m.in_place, 2);   /* layer_norm and softmax; not x + x^T */
    ir_graph_free(g);
}

/* ---- outputs ------------------------------------------------------------------------------ */

static const char *outputs_src =
    "graph @outs(%x: f32[16,32], %y: f32[16,32]) {\n"
    "  %0 = exp %x : f32[16,32]\n"
    "  %1 = flip %0 {dims=[0]} : f32[16,32]\n"
    "  %2 = permute %x {perm=[1,0]} : f32[32,16]\n"
    "  %3 = tanh %1 : f32[16,32]\n"
    "  %4 = add %3, %y : f32[16,32]\n"
    "  %5 = permute %4 {perm=[1,0]} : f32[32,16]\n"
    "  %6 = flip %4 {dims=[1]} : f32[16,32]\n"
    "  %7 = mul %6, %1 : f32[16,32]\n"
    "  return %x, %2, %4, %5, %4, %7\n"
    "}\n";

/* Inputs returned (as is and as a view), a value returned twice and as a
 * view, results computed in place: the results of one call stay as they are
 * through the next call (no result lives in the arena). */
static void test_outputs_alias_inputs_and_survive(void **state)
{
    ir_graph *g = tu_parse(outputs_src);
    sc_plan_set *ps = sc_plans_new(g, g->name);
    tj_tensor *in[2] = {randn(2, (int64_t[]){16, 32}, 1), randn(2, (int64_t[]){16, 32}, 1)};
    tj_tensor *first[6], *keep[6];
    assert_int_equal(sc_plans_run(ps, in, first), 0);
    for (int k = 0; k < 6; k++)
        keep[k] = tj_contiguous(rt_own(first[k]));   /* copies of the values */
    assert_ptr_equal(first[0], in[0]);
    assert_ptr_equal(tj_data(tj_contiguous(first[2])), tj_data(first[4]));
    assert_ptr_equal(first[2], first[4]);
    tj_tensor *in2[2] = {randn(2, (int64_t[]){16, 32}, 1), randn(2, (int64_t[]){16, 32}, 1)};
    run_both_on(ps, g, in2, 1e-6, 1e-6, "second call");
    for (int k = 0; k < 6; k++)
        tu_assert_close(first[k], keep[k], 0, 0);
    run_both_on(ps, g, in, 1e-6, 1e-6, "third call");
    sc_plans_free(ps);
    ir_graph_free(g);
}

/* ---- sizes that change ------------------------------------------------------------------------ */

static tj_tensor *model_mlp_rows(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor *const *w = ctx;
    tj_tensor *h = tj_gelu_tanh(tj_linear(a[0], w[0], w[1]));
    return tj_softmax(tj_add(tj_linear(h, w[2], NULL), a[0]), -1);
}

/* A symbolic row count: one graph, a memory plan per size. */
static void test_symbolic_sizes_across_calls(void **state)
{
    tj_tensor *w[3] = {randn(2, (int64_t[]){96, 40}, 0.2), randn(1, (int64_t[]){96}, 1),
                       randn(2, (int64_t[]){40, 96}, 0.1)};
    tj_compiled *c = tj_compile(model_mlp_rows, w, &(tj_compile_options){.name = "dyn"});
    int64_t rows[] = {5, 50, 130, 7, 300, 50};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        tj_tensor *x = randn(2, (int64_t[]){rows[i], 40}, 1);
        tj_tensor *got = tj_call(c, &x, 1);
        if (!got)
            fail_msg("%s", tj_last_error());
        tu_assert_close(got, model_mlp_rows(w, &x, 1), 1e-5, 1e-6);
    }
    char *t = tj_explain(c);
    assert_non_null(strstr(t, "1 symbolic dim"));
    free(t);
    tj_compiled_free(c);
}

/* ---- regions ------------------------------------------------------------------------------------ */

static const char *attention_src =
    "graph @att(%q: f32[2,3,200,32], %k: f32[2,3,200,32], %v: f32[2,3,200,32]) {\n"
    "  %0 = permute %k {perm=[0,1,3,2]} : f32[2,3,32,200]\n"
    "  %1 = matmul %q, %0 : f32[2,3,200,200]\n"
    "  %2 = scalar {value=0.17, dtype=f64} : f64[] weak\n"
    "  %3 = mul %1, %2 : f32[2,3,200,200]\n"
    "  %4 = softmax %3 {dim=-1} : f32[2,3,200,200]\n"
    "  %5 = matmul %4, %v : f32[2,3,200,32]\n"
    "  return %5\n"
    "}\n";

static void attention_inputs(tj_tensor **in)
{
    for (int k = 0; k < 3; k++)
        in[k] = randn(4, (int64_t[]){2, 3, 200, 32}, 1);
}

/* q k^T, softmax, @ v: blocks of 81 query rows (64 KB of scores; the last
 * block 38 rows), the scores in per-thread scratch, the softmax over them in
 * place. */
static void test_region_attention(void **state)
{
    ir_graph *g = tu_parse(attention_src);
    tj_tensor *in[3];
    attention_inputs(in);
    sc_plan_mem m;
    run_both(g, in, 1e-5, 1e-6, &m, "attention");
    assert_int_equal(m.regions, 1);
    assert_int_equal(m.scratch_bytes, 2 * (81 * 200 * 4 + 32));   /* 64-byte aligned */
    assert_int_equal(m.in_place, 1);
    assert_int_equal(m.peak_bytes, 2 * 3 * 200 * 32 * 4 + m.scratch_bytes);
    assert_true(m.peak_bytes <= exec_peak(g));
    setenv("TJIT_BLOCKS", "0", 1);
    sc_plan_mem whole;
    run_both(g, in, 1e-5, 1e-6, &whole, "attention, no blocks");
    unsetenv("TJIT_BLOCKS");
    assert_int_equal(whole.regions, 0);
    assert_true(whole.peak_bytes > m.peak_bytes);
    ir_graph_free(g);
}

/* The decomposed sdpa (causal mask, scale) and a hand-written one through
 * tj_compile agree with eager. */
static tj_tensor *model_sdpa(void *ctx, tj_tensor *const *a, int n)
{
    return tj_scaled_dot_product_attention(a[0], a[1], a[2], NULL, true, 0.125);
}

static void test_region_sdpa(void **state)
{
    tj_tensor *in[3];
    attention_inputs(in);
    tj_compiled *c = tj_compile(model_sdpa, NULL, &(tj_compile_options){.name = "sdpa"});
    tj_tensor *got = tj_call(c, in, 3);
    if (!got)
        fail_msg("%s", tj_last_error());
    tu_assert_close(got, model_sdpa(NULL, in, 3), 1e-5, 1e-6);
    tj_compiled_free(c);
}

static tj_tensor *model_p4(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor *const *w = ctx, *x = a[0];
    tj_tensor *h = tj_gelu_tanh(tj_linear(x, w[0], w[1]));
    return tj_layer_norm(tj_add(tj_linear(h, w[2], w[3]), x), 1, w[4], w[5], 1e-5);
}

/* The suite's P4 (x f32[rows,d], d -> 2d -> d): small weights run block by
 * block (the region of tests/tool/fuse_epilogue.tir), P4's own size (8 MB
 * weights: every block would pack them again) as whole GEMMs with their
 * epilogues in place. Both within float rounding of eager. */
static void p4_case(int64_t rows, int64_t d)
{
    tj_scope_begin();
    tj_tensor *w[6] = {randn(2, (int64_t[]){2 * d, d}, 1 / sqrt((double)d)), randn(1, (int64_t[]){2 * d}, 1),
                       randn(2, (int64_t[]){d, 2 * d}, 1 / sqrt(2.0 * (double)d)), randn(1, (int64_t[]){d}, 1),
                       randn(1, (int64_t[]){d}, 1), randn(1, (int64_t[]){d}, 1)};
    tj_tensor *x = randn(2, (int64_t[]){rows, d}, 1);
    tj_compiled *c = tj_compile(model_p4, w, &(tj_compile_options){.name = "p4"});
    for (int i = 0; i < 2; i++) {
        tj_tensor *got = tj_call(c, &x, 1);
        if (!got)
            fail_msg("%s", tj_last_error());
        tu_assert_close(got, model_p4(w, &x, 1), 2e-5, 2e-5);
    }
    tj_compiled_free(c);
    tj_scope_end();
}

static void test_p4_like(void **state)
{
    p4_case(200, 64);
    p4_case(256, 128);
    p4_case(256, 1024);
}

/* ResNet's basic block on 4 images, an image per block: both convs, the
 * batch norms and relus, the residual add. */
static void test_region_conv_block(void **state)
{
    ir_graph *g = tu_parse("graph @block(%x: f32[4,8,12,12], %k: f32[8,8,3,3] param, %m: f32[8] param, "
                        "%v: f32[8] param, %g: f32[8] param, %b: f32[8] param) {\n"
                        "  %0 = conv2d %x, %k {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : f32[4,8,12,12]\n"
                        "  %1 = batch_norm %0, %m, %v, %g, %b {eps=1e-05} : f32[4,8,12,12]\n"
                        "  %2 = relu %1 : f32[4,8,12,12]\n"
                        "  %3 = conv2d %2, %k {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : f32[4,8,12,12]\n"
                        "  %4 = add %3, %x : f32[4,8,12,12]\n"
                        "  %5 = relu %4 : f32[4,8,12,12]\n"
                        "  return %5\n"
                        "}\n");
    tj_tensor *in[6] = {randn(4, (int64_t[]){4, 8, 12, 12}, 1), randn(4, (int64_t[]){8, 8, 3, 3}, 0.2),
                        randn(1, (int64_t[]){8}, 0.1), tj_add_s(tj_rand(TJ_F32, 1, (int64_t[]){8}), 0.5),
                        randn(1, (int64_t[]){8}, 1), randn(1, (int64_t[]){8}, 1)};
    sc_plan_mem m;
    run_both(g, in, 1e-5, 1e-5, &m, "conv block");
    assert_int_equal(m.regions, 1);
    assert_int_equal(m.in_place, 2);
    assert_int_equal(m.scratch_bytes, 2 * 8 * 12 * 12 * 4);
    ir_graph_free(g);
}

/* The block under autocast(bf16) (the suite's A6): bf16 convs, f32 batch
 * norm between casts, an image per block as in f32 (the direct kernels take
 * bf16); the same bits as the executor's whole-tensor run. */
static void test_region_conv_block_bf16(void **state)
{
    ir_graph *g = tu_parse("graph @block(%x: bf16[4,8,12,12], %k: bf16[8,8,3,3] param, %m: f32[8] param, "
                        "%v: f32[8] param, %g: f32[8] param, %b: f32[8] param) {\n"
                        "  %0 = conv2d %x, %k {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : bf16[4,8,12,12]\n"
                        "  %1 = cast %0 {dtype=f32} : f32[4,8,12,12]\n"
                        "  %2 = batch_norm %1, %m, %v, %g, %b {eps=1e-05} : f32[4,8,12,12]\n"
                        "  %3 = relu %2 : f32[4,8,12,12]\n"
                        "  %4 = cast %3 {dtype=bf16} : bf16[4,8,12,12]\n"
                        "  %5 = conv2d %4, %k {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : bf16[4,8,12,12]\n"
                        "  %6 = cast %5 {dtype=f32} : f32[4,8,12,12]\n"
                        "  %7 = relu %6 : f32[4,8,12,12]\n"
                        "  return %7\n"
                        "}\n");
    tj_tensor *in[6] = {tj_cast(randn(4, (int64_t[]){4, 8, 12, 12}, 1), TJ_BF16),
                        tj_cast(randn(4, (int64_t[]){8, 8, 3, 3}, 0.2), TJ_BF16),
                        randn(1, (int64_t[]){8}, 0.1), tj_add_s(tj_rand(TJ_F32, 1, (int64_t[]){8}), 0.5),
                        randn(1, (int64_t[]){8}, 1), randn(1, (int64_t[]){8}, 1)};
    sc_plan_mem m;
    run_both(g, in, 0, 0, &m, "conv block bf16");
    assert_int_equal(m.regions, 1);
    ir_graph_free(g);
}

/* The same from f32 input and weights, as tj_autocast makes it: the input's
 * cast to bf16 runs per block at the head of the region (a prologue), its
 * bf16 copy in scratch, not in the arena (where it is without regions);
 * the executor's result to f32 rounding (its batch norm runs unfused). */
static void test_region_conv_prologue(void **state)
{
    ir_graph *g = tu_parse("graph @block(%x: f32[4,8,12,12], %k: f32[8,8,3,3] param, %m: f32[8] param, "
                        "%v: f32[8] param, %g: f32[8] param, %b: f32[8] param) {\n"
                        "  %0 = cast %x {dtype=bf16} : bf16[4,8,12,12]\n"
                        "  %1 = cast %k {dtype=bf16} : bf16[8,8,3,3]\n"
                        "  %2 = conv2d %0, %1 {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : bf16[4,8,12,12]\n"
                        "  %3 = cast %2 {dtype=f32} : f32[4,8,12,12]\n"
                        "  %4 = batch_norm %3, %m, %v, %g, %b {eps=1e-05} : f32[4,8,12,12]\n"
                        "  %5 = add %4, %x : f32[4,8,12,12]\n"
                        "  %6 = relu %5 : f32[4,8,12,12]\n"
                        "  return %6\n"
                        "}\n");
    tj_tensor *in[6] = {randn(4, (int64_t[]){4, 8, 12, 12}, 1), randn(4, (int64_t[]){8, 8, 3, 3}, 0.2),
                        randn(1, (int64_t[]){8}, 0.1), tj_add_s(tj_rand(TJ_F32, 1, (int64_t[]){8}), 0.5),
                        randn(1, (int64_t[]){8}, 1), randn(1, (int64_t[]){8}, 1)};
    const int64_t copy = 4 * 8 * 12 * 12 * 2;   /* the bf16 copy of x */
    sc_plan_mem m, whole;
    run_both(g, in, 1e-5, 1e-5, &m, "conv prologue");
    assert_int_equal(m.regions, 1);
    assert_true(m.arena_bytes < copy);
    setenv("TJIT_BLOCKS", "0", 1);
    run_both(g, in, 1e-5, 1e-5, &whole, "conv prologue, no regions");
    unsetenv("TJIT_BLOCKS");
    assert_int_equal(whole.regions, 0);
    assert_true(whole.arena_bytes >= copy);
    ir_graph_free(g);
}

/* A prologue made before an earlier region: moving it to its own region's
 * head shifts that region's steps one up, and the region's bounds with
 * them (they once stayed, so region 0 began after its conv: a crash found
 * by test_programs). */
static void test_region_prologue_across_region(void **state)
{
    ir_graph *g = tu_parse("graph @two(%x: f32[4,8,12,12], %z: f32[4,8,12,12], %k: f32[8,8,3,3] param, "
                        "%k2: f32[8,8,3,3] param) {\n"
                        "  %0 = cast %x {dtype=bf16} : bf16[4,8,12,12]\n"
                        "  %1 = cast %k2 {dtype=bf16} : bf16[8,8,3,3]\n"
                        "  %2 = conv2d %z, %k {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : f32[4,8,12,12]\n"
                        "  %3 = relu %2 : f32[4,8,12,12]\n"
                        "  %4 = conv2d %0, %1 {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : bf16[4,8,12,12]\n"
                        "  %5 = cast %4 {dtype=f32} : f32[4,8,12,12]\n"
                        "  %6 = relu %5 : f32[4,8,12,12]\n"
                        "  return %3, %6\n"
                        "}\n");
    tj_tensor *in[4] = {randn(4, (int64_t[]){4, 8, 12, 12}, 1), randn(4, (int64_t[]){4, 8, 12, 12}, 1),
                        randn(4, (int64_t[]){8, 8, 3, 3}, 0.2), randn(4, (int64_t[]){8, 8, 3, 3}, 0.2)};
    sc_plan_mem m;
    run_both(g, in, 1e-5, 1e-5, &m, "prologue across a region");
    assert_int_equal(m.regions, 2);
    ir_graph_free(g);
}

/* Batches with right operands too large to pack again per block of rows:
 * a batch per block. Also a matmul without epilogue chained to another. */
static void test_region_per_batch(void **state)
{
    ir_graph *g = tu_parse("graph @pb(%a: f32[4,96,256], %b: f32[4,256,2304], %c: f32[2304,16]) {\n"
                        "  %0 = matmul %a, %b : f32[4,96,2304]\n"
                        "  %1 = relu %0 : f32[4,96,2304]\n"
                        "  %2 = matmul %1, %c : f32[4,96,16]\n"
                        "  return %2\n"
                        "}\n");
    tj_tensor *in[3] = {randn(3, (int64_t[]){4, 96, 256}, 1), randn(3, (int64_t[]){4, 256, 2304}, 0.1),
                        randn(2, (int64_t[]){2304, 16}, 0.1)};
    sc_plan_mem m;
    run_both(g, in, 1e-5, 1e-5, &m, "per batch");
    assert_int_equal(m.regions, 1);
    assert_int_equal(m.scratch_bytes, 2 * 96 * 2304 * 4);   /* a batch of %0 per thread */
    ir_graph *g2 = tu_parse("graph @mm(%a: f32[300,40], %b: f32[40,50], %c: f32[50,30]) {\n"
                         "  %0 = matmul %a, %b : f32[300,50]\n"
                         "  %1 = matmul %0, %c : f32[300,30]\n"
                         "  return %1\n"
                         "}\n");
    tj_tensor *in2[3] = {randn(2, (int64_t[]){300, 40}, 1), randn(2, (int64_t[]){40, 50}, 1),
                         randn(2, (int64_t[]){50, 30}, 1)};
    run_both(g2, in2, 1e-5, 1e-4, &m, "two matmuls");
    assert_int_equal(m.regions, 1);
    ir_graph_free(g);
    ir_graph_free(g2);
}

/* e = exp(y) is the right operand of a GEMM run in row blocks, and its
 * epilogue adds e at its own index, where e dies: the epilogue may not write
 * over e (other blocks' GEMMs still read all of it). */
static void test_region_no_inplace_over_shared(void **state)
{
    ir_graph *g = tu_parse("graph @shared(%a: f32[64,64], %y: f32[64,64]) {\n"
                        "  %0 = exp %y : f32[64,64]\n"
                        "  %1 = matmul %a, %0 : f32[64,64]\n"
                        "  %2 = add %0, %1 : f32[64,64]\n"
                        "  %3 = tanh %2 : f32[64,64]\n"
                        "  return %3\n"
                        "}\n");
    tj_tensor *in[2] = {randn(2, (int64_t[]){64, 64}, 0.2), randn(2, (int64_t[]){64, 64}, 0.5)};
    sc_plan_mem m;
    run_both(g, in, 1e-5, 1e-6, &m, "shared operand");
    assert_int_equal(m.regions, 1);
    assert_int_equal(m.in_place, 1);   /* over the GEMM's output, not over e */
    ir_graph_free(g);
}

/* ---- threads ------------------------------------------------------------------------------------ */

typedef struct call_arg {
    tj_compiled *c;
    tj_tensor **in;
    tj_tensor *out;
} call_arg;

static void *call_thread(void *p)
{
    call_arg *a = p;
    tj_scope_begin();
    for (int i = 0; i < 3; i++) {
        tj_tensor *y = tj_call(a->c, a->in, 3);
        tj_release(a->out);
        a->out = y ? tj_keep(y) : NULL;
    }
    tj_scope_end();
    return NULL;
}

static tj_tensor *model_attention(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor *s = tj_mul_s(tj_matmul(a[0], tj_transpose(a[1], 2, 3)), 0.17);
    return tj_matmul(tj_softmax(s, -1), a[2]);
}

/* Two threads run one plan with a region at once (its blocks on the pool,
 * each call its own arena and scratch). */
static void test_region_threads(void **state)
{
    tj_tensor *in[3];
    attention_inputs(in);
    tj_compiled *c = tj_compile(model_attention, NULL, &(tj_compile_options){.name = "mt"});
    call_arg a[2] = {{c, in, NULL}, {c, in, NULL}};
    tu_run_threads(2, call_thread, a, sizeof *a);
    tj_tensor *want = model_attention(NULL, in, 3);
    for (int i = 0; i < 2; i++) {
        assert_non_null(a[i].out);
        tu_assert_close(a[i].out, want, 1e-5, 1e-6);
        tj_release(a[i].out);
    }
    tj_compiled_free(c);
}

/* ---- column kernels ------------------------------------------------------------------- */

/* Reductions over dims that are not the innermost: split_reductions permutes
 * them last and the kernels walk the rows of x, 64 results at a time
 * (codegen/kernel.h). Blocks that end early (200 and 33 are not multiples of
 * 64), a middle dim, two dims, kept dims, stages that store per element
 * (softmax, log_softmax), var, prod, amin, and a block whose rows are not
 * adjacent in the input (permute, lane stride 33) all match the executor. */
static void test_column_kernels(void **state)
{
    ir_graph *g = tu_parse("graph @cols(%x: f32[300,200], %y: f32[7,130,33]) {\n"
                        "  %0 = softmax %x {dim=0} : f32[300,200]\n"
                        "  %1 = var %x {dims=[0], correction=1, keepdim=true} : f32[1,200]\n"
                        "  %2 = amax %y {dims=[1], keepdim=false} : f32[7,33]\n"
                        "  %3 = exp %y : f32[7,130,33]\n"
                        "  %4 = sum %3 {dims=[0,1], keepdim=true} : f32[1,1,33]\n"
                        "  %5 = log_softmax %y {dim=1} : f32[7,130,33]\n"
                        "  %6 = mul %x, %x : f32[300,200]\n"
                        "  %7 = prod %6 {dims=[0], keepdim=false} : f32[200]\n"
                        "  %8 = amin %y {dims=[0], keepdim=false} : f32[130,33]\n"
                        "  %9 = permute %y {perm=[2,0,1]} : f32[33,7,130]\n"
                        "  %10 = sum %9 {dims=[1], keepdim=false} : f32[33,130]\n"
                        "  return %0, %1, %2, %4, %5, %7, %8, %10\n"
                        "}\n");
    tj_tensor *in[2] = {randn(2, (int64_t[]){300, 200}, 1.0), randn(3, (int64_t[]){7, 130, 33}, 1.0)};
    run_both(g, in, 1e-5, 1e-6, NULL, "cols");
    ir_graph_free(g);
}

/* Dims 0, 2 and 3 of NCHW (batch-norm statistics) and dims 0 and 3: the
 * innermost run reduced first, the rest by a column kernel; against the executor. */
static void test_reductions_in_two(void **state)
{
    ir_graph *g = tu_parse("graph @two(%x: f32[6,20,9,70]) {\n"
                        "  %0 = mul %x, %x : f32[6,20,9,70]\n"
                        "  %1 = sum %0 {dims=[0,2,3], keepdim=true} : f32[1,20,1,1]\n"
                        "  %2 = amax %x {dims=[0,3], keepdim=false} : f32[20,9]\n"
                        "  %3 = mean %x {dims=[0,2,3], keepdim=false} : f32[20]\n"
                        "  %4 = var %x {dims=[0,2,3], correction=0, keepdim=false} : f32[20]\n"
                        "  return %1, %2, %3, %4\n"
                        "}\n");
    tj_tensor *in[1] = {randn(4, (int64_t[]){6, 20, 9, 70}, 1.0)};
    run_both(g, in, 1e-5, 1e-6, NULL, "two");
    ir_graph_free(g);
}

/* With room for one loaded kernel, the kernels of freed plans are unloaded
 * (least recently used first) and come back from the kernel cache when a
 * graph needs them again, computing the same values. */
static void test_kernels_unloaded(void **state)
{
    cg_jit_stats s0, s1;
    cg_jit_stats_get(&s0);
    cg_jit_set_max_loaded(1);
    tj_tensor *in[1] = {randn(1, (int64_t[]){1000}, 1.0)};
    for (int i = 0; i < 4; i++) {
        char src[256];
        snprintf(src, sizeof src,
                 "graph @unload(%%x: f32[1000]) {\n"
                 "  %%0 = scalar {value=%d.5, dtype=f64} : f64[] weak\n"
                 "  %%1 = mul %%x, %%0 : f32[1000]\n"
                 "  %%2 = exp %%1 : f32[1000]\n"
                 "  return %%2\n"
                 "}\n", i % 3);   /* the fourth graph is the first one again */
        ir_graph *g = tu_parse(src);
        sc_plan_set *ps = sc_plans_new(g, g->name);
        run_both_on(ps, g, in, 1e-6, 1e-6, "unload");
        cg_jit_stats_get(&s1);
        assert_true(s1.loaded >= 1);   /* this plan's kernel stays while the plan holds it */
        sc_plans_free(ps);
        ir_graph_free(g);
    }
    cg_jit_stats_get(&s1);
    assert_true(s1.loaded <= 1);
    assert_true(s1.evicted >= s0.evicted + 3);
    assert_true(s1.from_cache >= s0.from_cache + 1);   /* the first graph's kernel, reloaded */
    cg_jit_set_max_loaded(0);
}

int main(void)
{
    tu_use_build_cache();
    tj_set_num_threads(2);
    tj_manual_seed(7);
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_chain_reuses_the_arena),
        T(test_p1_chain_peak),
        T(test_arena_offsets_do_not_overlap_live_values),
        T(test_inplace_store_order),
        T(test_inplace_rows_and_refusals),
        T(test_outputs_alias_inputs_and_survive),
        T(test_symbolic_sizes_across_calls),
        T(test_region_attention),
        T(test_region_sdpa),
        T(test_p4_like),
        T(test_region_conv_block), T(test_region_conv_block_bf16), T(test_region_conv_prologue), T(test_region_prologue_across_region),
        T(test_region_per_batch),
        T(test_region_no_inplace_over_shared),
        T(test_region_threads),
        T(test_column_kernels),
        T(test_reductions_in_two),
        T(test_kernels_unloaded),
#undef T
    };
    return tu_run_jit_suite("plan", tests, sizeof tests / sizeof tests[0], "compiled graphs run on the graph executor");
}
