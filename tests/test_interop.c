/* test_interop.c - inter-op parallelism in compiled plans (sched/pair.c): two
 * adjacent independent GEMM steps run at once, one per thread.
 *
 * Text IR through a plan set against the graph executor: the backward's pair
 * dX = dY W, dW = dY^T X is paired (the plan says so, their buffers and the
 * values they read share no bytes) and gives the executor's results on 2
 * threads and on 1 (where the pair runs one step after the other); no pair
 * with TJIT_INTEROP=0, for a GEMM reading the other's result, for GEMMs of
 * unequal size or too small; an intermediate read last by the first GEMM is
 * not the second's buffer while they run together. A paired GEMM that fails
 * on the worker thread (OpenBLAS not found, the first GEMM of this process)
 * fails the call with the op, the message and the node, as does a column
 * block of a split GEMM (TJIT_OWN_F32=0: these GEMMs on OpenBLAS). A split
 * GEMM that tjit's own GEMM takes runs whole. Then a compiled
 * training step (an MLP, cross-entropy, backward, SGD) against the eager step
 * on copies of the weights for several steps, weights and gradients, at 1 and
 * 2 threads, with the pairs on and off, GEMMs by the shape rule, all on
 * tjit's own GEMM (TJIT_OWN_F32=1) and all on OpenBLAS. A GEMM alone runs in column blocks
 * (transposed operands, uneven blocks, one BLAS cannot take: whole), or whole
 * with TJIT_GEMM_SPLIT=0; one on a captured weight runs whole on the kept
 * packed copy while the weight does not change, in column blocks in a call
 * that sees it changed, whole when frozen. Paired GEMMs on frozen int8
 * weights run int8 on either thread.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../sched/exec.h"
#include "../runtime/contract.h"
#include "../runtime/gemm.h"
#include "../sched/sched_int.h"
#include "../frontend/fe.h"
#include "util.h"
#include "util_ir.h"

static tj_tensor *randn(int ndim, const int64_t *shape) { return tj_mul_s(tj_randn(TJ_F32, ndim, shape), 0.25); }

/* Runs g through ps and the executor on in: the outputs agree. 0, or -1
 * with the plan's error (the executor's results not compared). */
static int run_both(sc_plan_set *ps, const ir_graph *g, tj_tensor **in)
{
    int rc = tu_plans_vs_exec(ps, g, in, 1e-4, 1e-4);
    if (rc > 0)
        fail_msg("not compiled");
    return rc;
}

static bool overlap(const sc_plan *p, int a, int b)
{
    if (a < 0 || b < 0)
        return false;
    const sc_buf *x = &p->bufs[a], *y = &p->bufs[b];
    return a == b || (x->where == SC_ARENA && y->where == SC_ARENA && x->offset < y->offset + y->bytes &&
                      y->offset < x->offset + x->bytes);
}

/* The pairs of the plan ps built last (each checked: two eager matmuls
 * whose outputs share no bytes with each other or with what the other
 * reads). */
static int pairs_of(sc_plan_set *ps)
{
    const ir_graph *g;
    const sc_plan *plans[4];
    int n = sc_plans_get(ps, &g, plans, 4), count = 0;
    assert_true(n >= 1);
    const sc_plan *p = plans[n - 1];
    for (int i = 0; p->par && i + 1 < p->nsteps; i++) {
        if (p->par[i] != SC_PAR_PAIR)
            continue;
        count++;
        for (int k = 0; k < 2; k++) {
            const step *s = &p->steps[i + k], *o = &p->steps[i + 1 - k];
            assert_int_equal(s->kind, S_EAGER);
            assert_int_equal(g->nodes[s->node]->op, OP_matmul);
            int sb = p->buf_of[ir_slot(g, g->nodes[s->node])];
            assert_false(overlap(p, sb, p->buf_of[ir_slot(g, g->nodes[o->node])]));
            const ir_node *on = g->nodes[o->node];
            for (int j = 0; j < on->nin; j++) {
                int w = p->owner[ir_slot(g, on->in[j])];
                assert_false(overlap(p, sb, w >= 0 ? p->buf_of[w] : -1));
            }
        }
    }
    return count;
}

/* The steps of the plan ps built last that run in column blocks. */
static int splits_of(sc_plan_set *ps)
{
    const ir_graph *g;
    const sc_plan *p;
    assert_int_equal(sc_plans_get(ps, &g, &p, 1), 1);
    int n = 0;
    for (int i = 0; p->par && i < p->nsteps; i++)
        n += p->par[i] == SC_PAR_SPLIT;
    return n;
}

/* Runs src on fresh inputs of its input shapes (three calls, 2 threads, then
 * one on 1 thread) against the executor; returns count of its plan. */
static int run_src(const char *src, int nin, const int64_t (*shapes)[2], int (*count)(sc_plan_set *))
{
    ir_graph *g = tu_parse(src);
    sc_plan_set *ps = sc_plans_new(g, g->name);
    tj_tensor *in[8];
    for (int k = 0; k < nin; k++)
        in[k] = randn(2, shapes[k]);
    for (int c = 0; c < 3; c++)
        assert_int_equal(run_both(ps, g, in), 0);
    int n = count(ps);
    tj_set_num_threads(1);
    assert_int_equal(run_both(ps, g, in), 0);
    tj_set_num_threads(2);
    sc_plans_free(ps);
    ir_graph_free(g);
    return n;
}

static int pairs_in(const char *src, int nin, const int64_t (*shapes)[2])
{
    return run_src(src, nin, shapes, pairs_of);
}

/* The backward of a linear layer, P7's second: dX = dY W, dW = dY^T X (33.5M
 * multiply-adds each; W too large for a blocked region). */
static const char *bwd_src =
    "graph @bwd(%dy: f32[128,512], %x: f32[128,512], %w: f32[512,512]) {\n"
    "  %0 = permute %dy {perm=[1,0]} : f32[512,128]\n"
    "  %1 = matmul %dy, %w : f32[128,512]\n"
    "  %2 = matmul %0, %x : f32[512,512]\n"
    "  %3 = relu %1 : f32[128,512]\n"
    "  return %3, %2\n"
    "}\n";
static const int64_t bwd_shapes[3][2] = {{128, 512}, {128, 512}, {512, 512}};

/* OpenBLAS cannot be loaded (TJIT_OPENBLAS names no file) at the first
 * GEMMs of this process, a pair: the call fails naming matmul, the reason
 * and the node, from whichever thread ran it; with the variable unset the
 * next call loads it and runs. Runs first (nothing has loaded OpenBLAS). */
static void test_pair_failure(void **state)
{
    setenv("TJIT_OWN_F32", "0", 1);   /* these GEMMs on OpenBLAS, not tjit's own */
    setenv("TJIT_GEMM_SPLIT", "1", 1);   /* the split on any CPU (read as plans are built) */
    ir_graph *g = tu_parse(bwd_src);
    sc_plan_set *ps = sc_plans_new(g, g->name);
    tj_tensor *in[3];
    for (int k = 0; k < 3; k++)
        in[k] = randn(2, bwd_shapes[k]);
    setenv("TJIT_OPENBLAS", "/nonexistent/libopenblas-for-test.so", 1);
    assert_int_equal(run_both(ps, g, in), -1);
    const char *e = tj_last_error();
    assert_non_null(strstr(e, "matmul"));
    assert_non_null(strstr(e, "not found"));
    assert_non_null(strstr(e, "of graph @bwd"));
    tj_clear_error();
    /* a split GEMM's block failing on either thread: the same (a failed load
     * is not remembered, so this call tries again) */
    ir_graph *g2 = tu_parse("graph @splitfail(%x: f32[128,512], %w: f32[512,512]) {\n"
                         "  %0 = matmul %x, %w : f32[128,512]\n"
                         "  return %0\n"
                         "}\n");
    sc_plan_set *ps2 = sc_plans_new(g2, g2->name);
    assert_int_equal(run_both(ps2, g2, (tj_tensor *[]){in[0], in[2]}), -1);
    e = tj_last_error();
    assert_non_null(strstr(e, "matmul"));
    assert_non_null(strstr(e, "not found"));
    assert_non_null(strstr(e, "of graph @splitfail"));
    tj_clear_error();
    assert_int_equal(splits_of(ps2), 1);
    unsetenv("TJIT_OPENBLAS");
    assert_int_equal(run_both(ps2, g2, (tj_tensor *[]){in[0], in[2]}), 0);
    sc_plans_free(ps2);
    ir_graph_free(g2);
    assert_int_equal(pairs_of(ps), 1);
    assert_int_equal(run_both(ps, g, in), 0);
    sc_plans_free(ps);
    ir_graph_free(g);
    unsetenv("TJIT_OWN_F32");
    unsetenv("TJIT_GEMM_SPLIT");
}

static void test_pair_formed(void **state)
{
    assert_int_equal(pairs_in(bwd_src, 3, bwd_shapes), 1);
    setenv("TJIT_INTEROP", "0", 1);
    assert_int_equal(pairs_in(bwd_src, 3, bwd_shapes), 0);
    unsetenv("TJIT_INTEROP");   /* the default: on */
    assert_int_equal(pairs_in(bwd_src, 3, bwd_shapes), 1);
    setenv("TJIT_INTEROP", "1", 1);
}

/* Not paired: the second GEMM reads the first's result; one GEMM four times
 * the other's size; GEMMs below the size. */
static void test_pair_refused(void **state)
{
    static const int64_t dep_shapes[2][2] = {{128, 512}, {512, 512}};
    assert_int_equal(pairs_in("graph @dep(%x: f32[128,512], %w: f32[512,512]) {\n"
                              "  %0 = matmul %x, %w : f32[128,512]\n"
                              "  %1 = matmul %0, %w : f32[128,512]\n"
                              "  return %1\n"
                              "}\n",
                              2, dep_shapes),
                     0);
    static const int64_t uneq_shapes[4][2] = {{128, 512}, {512, 512}, {128, 2048}, {2048, 512}};
    assert_int_equal(pairs_in("graph @uneq(%x: f32[128,512], %w: f32[512,512], %y: f32[128,2048], "
                              "%v: f32[2048,512]) {\n"
                              "  %0 = matmul %x, %w : f32[128,512]\n"
                              "  %1 = matmul %y, %v : f32[128,512]\n"
                              "  return %0, %1\n"
                              "}\n",
                              4, uneq_shapes),
                     0);
    static const int64_t small_shapes[3][2] = {{32, 64}, {32, 64}, {64, 64}};
    assert_int_equal(pairs_in("graph @small(%dy: f32[32,64], %x: f32[32,64], %w: f32[64,64]) {\n"
                              "  %0 = permute %dy {perm=[1,0]} : f32[64,32]\n"
                              "  %1 = matmul %dy, %w : f32[32,64]\n"
                              "  %2 = matmul %0, %x : f32[64,64]\n"
                              "  return %1, %2\n"
                              "}\n",
                              3, small_shapes),
                     0);
}

/* An intermediate (%0) read last by the first GEMM, then a GEMM independent
 * of it: the memory plan may give the second GEMM's result %0's bytes, and
 * then the two do not run together (pairs_of checks every pair formed); the
 * results are the executor's either way. merge_matmuls is off here: it would
 * make %1 and %5 (both on %w, independent) one GEMM, and this graph is about
 * the pairs the memory plan allows. */
static void test_pair_memory(void **state)
{
    static const int64_t shapes[4][2] = {{128, 512}, {512, 512}, {128, 512}, {512, 512}};
    setenv("TJIT_MERGE_MATMULS", "0", 1);
    int pairs = pairs_in("graph @mem(%a: f32[128,512], %w: f32[512,512], %b: f32[128,512], %v: f32[512,512]) {\n"
             "  %0 = tanh %a : f32[128,512]\n"
             "  %1 = matmul %0, %w : f32[128,512]\n"
             "  %2 = matmul %b, %v : f32[128,512]\n"
             "  %3 = mul %1, %2 : f32[128,512]\n"
             "  %4 = matmul %3, %w : f32[128,512]\n"
             "  %5 = matmul %b, %w : f32[128,512]\n"
             "  %6 = add %4, %5 : f32[128,512]\n"
             "  return %6\n"
             "}\n",
             4, shapes);
    unsetenv("TJIT_MERGE_MATMULS");
    assert_true(pairs >= 1);
}

/* The refusal itself, on a built plan whose buffers are moved: a paired
 * GEMM's result put over the arena bytes of a value the other GEMM reads
 * (or over the other's result) unpairs them; put back, they pair again. */
static void test_pair_overlap_refused(void **state)
{
    static const int64_t shapes[4][2] = {{128, 512}, {512, 512}, {128, 512}, {512, 512}};
    ir_graph *g = tu_parse("graph @ovl(%a: f32[128,512], %w: f32[512,512], %b: f32[128,512], %v: f32[512,512]) {\n"
                        "  %0 = tanh %a : f32[128,512]\n"
                        "  %1 = matmul %b, %v : f32[128,512]\n"
                        "  %2 = matmul %0, %w : f32[128,512]\n"
                        "  %3 = mul %1, %2 : f32[128,512]\n"
                        "  return %3\n"
                        "}\n");
    sc_plan_set *ps = sc_plans_new(g, g->name);
    tj_tensor *in[4];
    for (int k = 0; k < 4; k++)
        in[k] = randn(2, shapes[k]);
    assert_int_equal(run_both(ps, g, in), 0);
    const ir_graph *pg;
    const sc_plan *cp;
    assert_int_equal(sc_plans_get(ps, &pg, &cp, 1), 1);
    sc_plan *p = (sc_plan *)cp;
    int moved = 0;
    for (int i = 0; i + 1 < p->nsteps; i++) {
        if (!p->par || p->par[i] != SC_PAR_PAIR)
            continue;
        for (int k = 0; k < 2; k++) {
            int out = p->buf_of[ir_slot(pg, pg->nodes[p->steps[i + k].node])];
            const ir_node *o = pg->nodes[p->steps[i + 1 - k].node];
            int targets[4], nt = 0;
            targets[nt++] = p->buf_of[ir_slot(pg, o)];
            for (int j = 0; j < o->nin; j++) {
                int w = p->owner[ir_slot(pg, o->in[j])];
                if (w >= 0 && p->buf_of[w] >= 0)
                    targets[nt++] = p->buf_of[w];
            }
            for (int t = 0; t < nt; t++) {
                sc_buf keep = p->bufs[out];
                if (p->bufs[targets[t]].where != SC_ARENA)
                    continue;
                p->bufs[out].where = SC_ARENA;
                p->bufs[out].offset = p->bufs[targets[t]].offset;
                assert_int_equal(sc_plan_pairs(pg, p), 0);
                assert_false(p->par && p->par[i] == SC_PAR_PAIR);
                p->bufs[out] = keep;
                assert_int_equal(sc_plan_pairs(pg, p), 0);
                assert_true(p->par && p->par[i] == SC_PAR_PAIR);
                moved++;
            }
        }
    }
    assert_true(moved >= 1);   /* %0 (tanh, in the arena) is read by one of the pair */
    sc_plans_free(ps);
    ir_graph_free(g);
}

static int splits_in(const char *src, int nin, const int64_t (*shapes)[2])
{
    return run_src(src, nin, shapes, splits_of);
}

/* A GEMM alone in column blocks (TJIT_GEMM_SPLIT=1; by default only
 * without AVX-512): a linear's (B transposed) and a weight gradient's (A
 * transposed, 784 columns: blocks of 192, 192, 192, 208); both as the
 * executor's; none with TJIT_GEMM_SPLIT=0, nor below 128 columns. A left
 * operand BLAS cannot take (every other column) runs whole. */
static void test_split(void **state)
{
    static const char *src =
        "graph @split(%x: f32[128,512], %w: f32[512,512], %z: f32[128,784]) {\n"
        "  %0 = permute %w {perm=[1,0]} : f32[512,512]\n"
        "  %1 = matmul %x, %0 : f32[128,512]\n"
        "  %2 = tanh %1 : f32[128,512]\n"
        "  %3 = permute %2 {perm=[1,0]} : f32[512,128]\n"
        "  %4 = matmul %3, %z : f32[512,784]\n"
        "  return %4\n"
        "}\n";
    static const int64_t shapes[3][2] = {{128, 512}, {512, 512}, {128, 784}};
    assert_int_equal(splits_in(src, 3, shapes), tjg_isa_current() < TJG_AVX512 ? 2 : 0);
    setenv("TJIT_GEMM_SPLIT", "1", 1);
    assert_int_equal(splits_in(src, 3, shapes), 2);
    /* the split steps on tjit's own GEMM: whole, as the executor's */
    setenv("TJIT_OWN_F32", "1", 1);
    assert_int_equal(splits_in(src, 3, shapes), 2);
    unsetenv("TJIT_OWN_F32");
    setenv("TJIT_GEMM_SPLIT", "0", 1);
    assert_int_equal(splits_in(src, 3, shapes), 0);
    setenv("TJIT_GEMM_SPLIT", "1", 1);
    static const int64_t narrow[2][2] = {{1024, 512}, {512, 64}};
    assert_int_equal(splits_in("graph @narrow(%x: f32[1024,512], %w: f32[512,64]) {\n"
                               "  %0 = matmul %x, %w : f32[1024,64]\n"
                               "  return %0\n"
                               "}\n",
                               2, narrow),
                     0);
    static const int64_t strided[2][2] = {{128, 1024}, {512, 512}};
    assert_int_equal(splits_in("graph @strided(%x: f32[128,1024], %w: f32[512,512]) {\n"
                               "  %0 = slice %x {dim=1, start=0, end=1024, step=2} : f32[128,512]\n"
                               "  %1 = matmul %0, %w : f32[128,512]\n"
                               "  return %1\n"
                               "}\n",
                               2, strided),
                     1);
    unsetenv("TJIT_GEMM_SPLIT");
}

/* A linear on a captured weight (kept across calls: packed for tjit's GEMM
 * while it does not change, runtime/k_matmul.c) planned in column blocks:
 * a call that sees the weight changed (a training step's forward) runs it on
 * OpenBLAS in column blocks; one that sees it unchanged runs the kept packed
 * copy whole; frozen, always whole. Values as eager's on every call. */
static tj_tensor *relu_linear(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    return tj_relu(tj_linear(x[0], *(tj_tensor **)ctx, NULL));
}

static void kept_split_case(bool freeze)
{
    tj_tensor *w = tj_keep(randn(2, (int64_t[]){512, 512})), *x = randn(2, (int64_t[]){128, 512});
    tj_compiled *f = tj_compile(relu_linear, &w, &(tj_compile_options){.name = "kept_split", .freeze = freeze});
    /* packed where tjit's GEMM takes this shape kept (AVX2 and up); seen
     * changed, whole where it takes it with B packed in the call (the rule
     * of rt_gemm_own_f32: with OpenBLAS on AVX2 kernels on an AVX-512 CPU) */
    bool packs = tjg_isa_current() >= TJG_AVX2, raw = rt_gemm_own_f32(128, 512, 512);
    for (int call = 0; call < 6; call++) {
        /* calls 1, 3, 5 see it changed (not frozen: freeze folds, writes unseen) */
        if (call % 2 && !freeze)
            assert_int_equal(tj_mul_s_(w, -0.75), 0);
        uint64_t before = sc_split_count();
        tj_tensor *got = tj_call(f, &x, 1);
        if (!got)
            fail_msg("call %d: %s", call, tj_last_error());
        if (!freeze)
            tu_assert_close(got, relu_linear(&w, &x, 1), 1e-4, 1e-4);
        bool split = !freeze && (call % 2 || !packs) && !raw;
        assert_int_equal(sc_split_count() - before, split);
    }
    tj_compiled_free(f);
    tj_release(w);
    tjg_cache_clear();
}

static void test_split_kept_weight(void **state)
{
    /* both GEMM rules on an AVX-512 CPU: OpenBLAS on its AVX-512 kernels
     * and on AVX2 ones (TJIT_BLAS_NARROW, runtime/blas.h) */
    setenv("TJIT_GEMM_SPLIT", "1", 1);   /* the split on any CPU */
    for (int narrow = 0; narrow < 2; narrow++) {
        setenv("TJIT_BLAS_NARROW", narrow ? "1" : "0", 1);
        kept_split_case(false);
        kept_split_case(true);
    }
    unsetenv("TJIT_BLAS_NARROW");
    unsetenv("TJIT_GEMM_SPLIT");
}

/* Two linears on frozen int8 weights (tj_compile_options.quantize_dynamic):
 * paired, each GEMM runs int8 on whichever thread takes it (the caller's
 * frozen weights handed over), so the result is the unpaired plan's; an f32
 * GEMM on the worker would differ by the quantization error (about 1e-2). */
static tj_tensor *two_linears(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *const *w = ctx;
    return tj_add(tj_linear(x[0], w[0], NULL), tj_linear(x[0], w[1], NULL));
}

static void test_pair_frozen_int8(void **state)
{
    tj_tensor *w[2] = {randn(2, (int64_t[]){512, 512}), randn(2, (int64_t[]){512, 512})};
    tj_tensor *x = randn(2, (int64_t[]){128, 512});
    tj_compile_options o = {.name = "two_linears", .quantize_dynamic = true};
    tj_compiled *on = tj_compile(two_linears, w, &o);
    tj_tensor *got = tj_call(on, &x, 1);
    setenv("TJIT_INTEROP", "0", 1);
    tj_compiled *off = tj_compile(two_linears, w, &o);
    tj_tensor *want = tj_call(off, &x, 1);
    setenv("TJIT_INTEROP", "1", 1);
    if (!got || !want)
        fail_msg("%s", tj_last_error());
    for (int c = 0; c < 3; c++)   /* the pair on 2 threads, call after call */
        tu_assert_close(tj_call(on, &x, 1), want, 1e-6, 1e-6);
    tu_assert_close(got, want, 1e-6, 1e-6);
    assert_false(tu_all_close(want, two_linears(w, &x, 1), 1e-4));   /* int8, not f32 */
    tj_compiled_free(on);
    tj_compiled_free(off);
}

/* ---- a compiled training step ------------------------------------------------------------ */

enum { BATCH = 64, IN = 128, HID = 256, OUT = 10, NW = 6 };

typedef struct mlp {
    tj_tensor *w[NW];   /* w1 [HID,IN], b1, w2 [HID,HID], b2, w3 [OUT,HID], b3 */
} mlp;

static tj_tensor *train_step(void *ctx, tj_tensor *const *in, int n)
{
    (void)n;
    tj_tensor *const *w = ((mlp *)ctx)->w;
    for (int k = 0; k < NW; k++)
        tj_zero_grad(w[k]);
    tj_tensor *h = tj_relu(tj_linear(in[0], w[0], w[1]));
    h = tj_relu(tj_linear(h, w[2], w[3]));
    tj_tensor *loss = tj_cross_entropy(tj_linear(h, w[4], w[5]), in[1]);
    if (!loss || tj_backward(loss) != 0)
        return NULL;
    int rc = 0;
    tj_no_grad_begin();
    for (int k = 0; k < NW && rc == 0; k++)
        rc = tj_copy_(w[k], tj_sub(w[k], tj_mul_s(tj_grad(w[k]), 0.01)));
    tj_no_grad_end();
    return rc == 0 ? tj_detach(loss) : NULL;
}

/* Whether a memory dump in dir says a step runs at once with another. */
static bool dumped_pair(const char *dir)
{
    DIR *d = opendir(dir);
    bool found = false;
    struct dirent *e;
    while (d && !found && (e = readdir(d))) {
        if (!strstr(e->d_name, ".memory."))
            continue;
        char path[1024], line[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        while (f && !found && fgets(line, sizeof line, f))
            found = strstr(line, "at once with step") != NULL;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

/* Four steps compiled and eager on copies of the same weights: losses,
 * weights and gradients agree; the plan pairs GEMMs unless interop is 0. */
static void check_training(int threads, bool interop)
{
    tj_set_num_threads(threads);
    if (!interop)
        setenv("TJIT_INTEROP", "0", 1);
    char dir[] = "/tmp/tjit-interop-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TJIT_DUMP", "memory", 1);
    setenv("TJIT_DUMP_DIR", dir, 1);
    static const int64_t shapes[NW][2] = {{HID, IN}, {HID, 0}, {HID, HID}, {HID, 0}, {OUT, HID}, {OUT, 0}};
    mlp c, e;
    for (int k = 0; k < NW; k++) {
        tj_tensor *w = tj_mul_s(randn(shapes[k][1] ? 2 : 1, shapes[k]), 0.05);
        c.w[k] = tj_clone(w);
        e.w[k] = tj_clone(w);
        assert_int_equal(tj_requires_grad(c.w[k], true), 0);
        assert_int_equal(tj_requires_grad(e.w[k], true), 0);
    }
    tj_compiled *f = tj_compile(train_step, &c, &(tj_compile_options){.name = "interop_step"});
    assert_non_null(f);
    for (int s = 0; s < 4; s++) {
        tj_tensor *in[2] = {randn(2, (int64_t[]){BATCH, IN}),
                            tj_cast(tj_floor(tj_mul_s(tj_rand(TJ_F32, 1, (int64_t[]){BATCH}), OUT)), TJ_I64)};
        tj_tensor *want = train_step(&e, in, 2), *got = tj_call(f, in, 2);
        if (!want || !got)
            fail_msg("step %d: %s", s, tj_last_error());
        tu_assert_close(got, want, 1e-5, 1e-5);
        for (int k = 0; k < NW; k++) {
            tu_assert_close(c.w[k], e.w[k], 1e-5, 1e-5);
            tu_assert_close(tj_grad(c.w[k]), tj_grad(e.w[k]), 1e-4, 1e-5);
        }
    }
    tj_compiled_free(f);
    unsetenv("TJIT_DUMP");
    unsetenv("TJIT_DUMP_DIR");
    assert_int_equal(dumped_pair(dir), interop);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    setenv("TJIT_INTEROP", "1", 1);
    tj_set_num_threads(2);
}

static void test_training_step(void **state)
{
    /* the GEMMs by the shape rule (runtime/k_matmul.c), then all on tjit's
     * own GEMM (a pair's two on one thread each) and all on OpenBLAS */
    static const char *own[3] = {NULL, "1", "0"};
    for (int o = 0; o < 3; o++) {
        if (own[o])
            setenv("TJIT_OWN_F32", own[o], 1);
        for (int threads = 1; threads <= 2; threads++) {
            check_training(threads, true);
            check_training(threads, false);
        }
    }
    unsetenv("TJIT_OWN_F32");
}

int main(void)
{
    tu_use_build_cache();
    setenv("TJIT_INTEROP", "1", 1);   /* on: what these tests are about (the default too) */
    tj_set_num_threads(2);
    tj_manual_seed(11);
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_pair_failure),   /* first: OpenBLAS not loaded yet */
        T(test_pair_formed),
        T(test_pair_refused),
        T(test_pair_memory),
        T(test_pair_overlap_refused),
        T(test_split),
        T(test_split_kept_weight),
        T(test_pair_frozen_int8),
        T(test_training_step),
#undef T
    };
    return tu_run_jit_suite("interop", tests, sizeof tests / sizeof tests[0], "compiled graphs run on the graph executor");
}
