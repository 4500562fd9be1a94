/* test_partition.c - the joint forward/backward partition (passes/partition.c).
 *
 * Text in, text out: each case is a joint graph (inputs named tangent* are the
 * incoming gradients, the first outputs the forward's) and the exact forward
 * graph, backward graph and save/recompute report the partition makes. Each
 * case also runs on random inputs: the joint graph, and the forward then the
 * backward on the forward's saved values, must give the same outputs bit for
 * bit (the same kernels on the same values). Error cases: forward counts out
 * of range, a forward output that reads a tangent. And the backward pruned of
 * a tangent no gradient reached (passes/bwd_prune.c), text in, text out;
 * the minimum cut itself (passes/mincut.c) on known networks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../passes/mincut.h"
#include "../passes/partition.h"
#include "../sched/exec.h"
#include "util.h"
#include "util_ir.h"

static void run(const ir_graph *g, tj_tensor **inputs, tj_tensor **outs)
{
    int *last = sc_exec_last_use(g);
    assert_non_null(last);
    int rc = sc_exec(g, inputs, last, outs);
    free(last);
    if (rc != 0)
        fail_msg("running @%s failed: %s", g->name, tj_last_error());
}

/* The joint graph and forward-then-backward agree on random inputs. */
static void check_values(const ir_graph *j, int nfwd, const ps_partition *p)
{
    tj_tensor *in[32], *fin[32], *bin[64], *jout[32], *fout[64], *bout[32];
    int nf = 0;
    for (int k = 0; k < j->ninputs; k++) {
        const ir_node *x = j->inputs[k];
        in[k] = tj_randn(x->type.dtype, x->type.ndim, x->type.shape);
        assert_non_null(in[k]);
        bin[k] = in[k];
        if (!ps_is_tangent(x))
            fin[nf++] = in[k];
    }
    run(j, in, jout);
    run(p->fwd, fin, fout);
    for (int k = 0; k < p->nsaved; k++)
        bin[j->ninputs + k] = fout[nfwd + k];
    run(p->bwd, bin, bout);
    for (int k = 0; k < j->noutputs; k++) {
        tj_tensor *got = k < nfwd ? fout[k] : bout[k - nfwd];
        if (!tu_all_close(got, jout[k], 0))
            fail_msg("output %d differs between the joint graph and forward+backward", k);
    }
    for (int k = 0; k < j->noutputs; k++)
        tj_release(jout[k]);
    for (int k = 0; k < nfwd + p->nsaved; k++)
        tj_release(fout[k]);
    for (int k = 0; k < j->noutputs - nfwd; k++)
        tj_release(bout[k]);
}

static void expect_partition(const char *src, int nfwd, const char *want)
{
    ir_graph *j = tu_parse(src);
    ps_partition p;
    char err[512];
    if (ps_partition_joint(j, nfwd, NULL, NULL, &p, err, sizeof err) != 0)
        fail_msg("%s", err);
    char vf[512], vb[512];
    if (ir_verify(p.fwd, vf, sizeof vf) != 0 || ir_verify(p.bwd, vb, sizeof vb) != 0)
        fail_msg("an invalid graph: %s %s", vf, vb);
    char *f = ir_print(p.fwd, NULL), *b = ir_print(p.bwd, NULL), *got = NULL;
    assert_non_null(f);
    assert_non_null(b);
    assert_true(asprintf(&got, "%s%s%s", f, b, p.report) > 0);
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    check_values(j, nfwd, &p);
    free(f);
    free(b);
    free(got);
    ps_partition_free(&p);
    ir_graph_free(j);
}

/* relu(x @ w1) @ w2 and its backward, a joint graph. */
static const char mlp_relu_joint[] =
    "graph @mlp(%x: f32[4,3], %tangent: f32[4,2], %w1: f32[3,8] param, %w2: f32[8,2] param) {\n"
    "  %0 = matmul %x, %w1 : f32[4,8]\n"
    "  %1 = relu %0 : f32[4,8]\n"
    "  %2 = matmul %1, %w2 : f32[4,2]\n"
    "  %3 = permute %1 {perm=[1,0]} : f32[8,4]\n"
    "  %4 = matmul %3, %tangent : f32[8,2]\n"
    "  %5 = permute %w2 {perm=[1,0]} : f32[2,8]\n"
    "  %6 = matmul %tangent, %5 : f32[4,8]\n"
    "  %7 = scalar {value=0, dtype=f64} : f64[] weak\n"
    "  %8 = gt %0, %7 : bool[4,8]\n"
    "  %9 = where %8, %6, %7 : f32[4,8]\n"
    "  %10 = permute %x {perm=[1,0]} : f32[3,4]\n"
    "  %11 = matmul %10, %9 : f32[3,8]\n"
    "  return %2, %11, %4\n"
    "}\n";

/* relu(x @ w1) @ w2: relu's result is saved (the forward stores it anyway for
 * the second matmul; recomputing it would store the first matmul's result only
 * for the backward), and so is relu's mask (a bool: 1 byte an element, less
 * than the matmul result it comes from); views are viewed again, the inputs
 * are not saved. */
static void test_mlp_relu(void **state)
{
    (void)state;
    expect_partition(
        mlp_relu_joint,
        1,
        "graph @mlp_forward(%x: f32[4,3], %w1: f32[3,8] param, %w2: f32[8,2] param) {\n"
        "  %0 = matmul %x, %w1 : f32[4,8]\n"
        "  %1 = relu %0 : f32[4,8]\n"
        "  %2 = matmul %1, %w2 : f32[4,2]\n"
        "  %3 = scalar {value=0, dtype=f64} : f64[] weak\n"
        "  %4 = gt %0, %3 : bool[4,8]\n"
        "  return %2, %1, %4\n"
        "}\n"
        "graph @mlp_backward(%x: f32[4,3], %tangent: f32[4,2], %w1: f32[3,8] param, %w2: f32[8,2] param, %saved0: f32[4,8], %saved1: bool[4,8]) {\n"
        "  %0 = permute %saved0 {perm=[1,0]} : f32[8,4]\n"
        "  %1 = matmul %0, %tangent : f32[8,2]\n"
        "  %2 = permute %w2 {perm=[1,0]} : f32[2,8]\n"
        "  %3 = matmul %tangent, %2 : f32[4,8]\n"
        "  %4 = scalar {value=0, dtype=f64} : f64[] weak\n"
        "  %5 = where %saved1, %3, %4 : f32[4,8]\n"
        "  %6 = permute %x {perm=[1,0]} : f32[3,4]\n"
        "  %7 = matmul %6, %5 : f32[3,8]\n"
        "  return %7, %1\n"
        "}\n"
        "saved %1 = relu f32[4,8] (128 bytes): moves 128 bytes, the forward stores it anyway\n"
        "saved %8 = gt bool[4,8] (32 bytes): moves 64 bytes, written and read for the backward\n"
        "the cut: 192 bytes written and read for the backward\n");
}

/* The same joint with activation checkpoints (tj_checkpoint, traced):
 * relu(x @ w1) one block, @ w2 another, the backward's nodes -1. The first
 * block is computed again in the backward, its matmul too (and relu's mask
 * from it, instead of saving the mask); the second block's input, relu's
 * result, is saved: each block is computed again from its own inputs. */
static void test_checkpoint_regions(void **state)
{
    (void)state;
    ir_graph *j = tu_parse(mlp_relu_joint);
    const int region[12] = {1, 1, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    ps_partition p;
    char err[512];
    if (ps_partition_joint(j, 1, NULL, region, &p, err, sizeof err) != 0)
        fail_msg("%s", err);
    if (p.nsaved != 1 || !strstr(p.report, "saved %1 = relu f32[4,8]") ||
        !strstr(p.report, "recomputed %0 = matmul f32[4,8]") || !strstr(p.report, "recomputed %8 = gt") ||
        strstr(p.report, "saved %8"))
        fail_msg("%d saved:\n%s", p.nsaved, p.report);
    check_values(j, 1, &p);
    ps_partition_free(&p);
    /* without the second block's mark, nothing leaves the first: all of it is
     * computed again, nothing saved */
    const int one[12] = {1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    if (ps_partition_joint(j, 1, NULL, one, &p, err, sizeof err) != 0)
        fail_msg("%s", err);
    if (p.nsaved != 0 || !strstr(p.report, "recomputed %1 = relu"))
        fail_msg("%d saved:\n%s", p.nsaved, p.report);
    check_values(j, 1, &p);
    ps_partition_free(&p);
    ir_graph_free(j);
}

/* tanh(x @ w1) @ w2, tanh's gradient read from its result: the tanh value is
 * saved (the forward stores it anyway for the second matmul; recomputing it
 * would store the first matmul's result only for the backward: 2x its bytes). */
static void test_mlp_tanh(void **state)
{
    (void)state;
    expect_partition(
        "graph @mlp(%x: f32[4,3], %tangent: f32[4,2], %w1: f32[3,8] param, %w2: f32[8,2] param) {\n"
        "  %0 = matmul %x, %w1 : f32[4,8]\n"
        "  %1 = tanh %0 : f32[4,8]\n"
        "  %2 = matmul %1, %w2 : f32[4,2]\n"
        "  %3 = permute %1 {perm=[1,0]} : f32[8,4]\n"
        "  %4 = matmul %3, %tangent : f32[8,2]\n"
        "  %5 = permute %w2 {perm=[1,0]} : f32[2,8]\n"
        "  %6 = matmul %tangent, %5 : f32[4,8]\n"
        "  %7 = mul %1, %1 : f32[4,8]\n"
        "  %8 = scalar {value=1, dtype=f64} : f64[] weak\n"
        "  %9 = sub %8, %7 : f32[4,8]\n"
        "  %10 = mul %6, %9 : f32[4,8]\n"
        "  %11 = permute %x {perm=[1,0]} : f32[3,4]\n"
        "  %12 = matmul %11, %10 : f32[3,8]\n"
        "  return %2, %12, %4\n"
        "}\n",
        1,
        "graph @mlp_forward(%x: f32[4,3], %w1: f32[3,8] param, %w2: f32[8,2] param) {\n"
        "  %0 = matmul %x, %w1 : f32[4,8]\n"
        "  %1 = tanh %0 : f32[4,8]\n"
        "  %2 = matmul %1, %w2 : f32[4,2]\n"
        "  return %2, %1\n"
        "}\n"
        "graph @mlp_backward(%x: f32[4,3], %tangent: f32[4,2], %w1: f32[3,8] param, %w2: f32[8,2] param, %saved0: f32[4,8]) {\n"
        "  %0 = permute %saved0 {perm=[1,0]} : f32[8,4]\n"
        "  %1 = matmul %0, %tangent : f32[8,2]\n"
        "  %2 = permute %w2 {perm=[1,0]} : f32[2,8]\n"
        "  %3 = matmul %tangent, %2 : f32[4,8]\n"
        "  %4 = mul %saved0, %saved0 : f32[4,8]\n"
        "  %5 = scalar {value=1, dtype=f64} : f64[] weak\n"
        "  %6 = sub %5, %4 : f32[4,8]\n"
        "  %7 = mul %3, %6 : f32[4,8]\n"
        "  %8 = permute %x {perm=[1,0]} : f32[3,4]\n"
        "  %9 = matmul %8, %7 : f32[3,8]\n"
        "  return %9, %1\n"
        "}\n"
        "saved %1 = tanh f32[4,8] (128 bytes): moves 128 bytes, the forward stores it anyway\n"
        "recomputed %7 = mul f32[4,8] (128 bytes)\n"
        "recomputed %9 = sub f32[4,8] (128 bytes)\n"
        "the cut: 128 bytes written and read for the backward\n");
}

/* silu(x) = x * sigmoid(x) on an input: recomputed whole (its cone is the
 * input: nothing to save); the sum's result is saved. */
static void test_pointwise_from_input(void **state)
{
    (void)state;
    expect_partition(
        "graph @silu(%x: f32[4,8], %tangent: f32[]) {\n"
        "  %0 = sigmoid %x : f32[4,8]\n"
        "  %1 = mul %x, %0 : f32[4,8]\n"
        "  %2 = sum %1 {dims=[], keepdim=false} : f32[]\n"
        "  %3 = expand %tangent {shape=[4,8]} : f32[4,8]\n"
        "  %4 = mul %3, %0 : f32[4,8]\n"
        "  %5 = scalar {value=1, dtype=f64} : f64[] weak\n"
        "  %6 = sub %5, %0 : f32[4,8]\n"
        "  %7 = mul %x, %6 : f32[4,8]\n"
        "  %8 = mul %0, %7 : f32[4,8]\n"
        "  %9 = add %4, %8 : f32[4,8]\n"
        "  %10 = mul %3, %9 : f32[4,8]\n"
        "  return %2, %10\n"
        "}\n",
        1,
        "graph @silu_forward(%x: f32[4,8]) {\n"
        "  %0 = sigmoid %x : f32[4,8]\n"
        "  %1 = mul %x, %0 : f32[4,8]\n"
        "  %2 = sum %1 {dims=[], keepdim=false} : f32[]\n"
        "  return %2\n"
        "}\n"
        "graph @silu_backward(%x: f32[4,8], %tangent: f32[]) {\n"
        "  %0 = sigmoid %x : f32[4,8]\n"
        "  %1 = expand %tangent {shape=[4,8]} : f32[4,8]\n"
        "  %2 = mul %1, %0 : f32[4,8]\n"
        "  %3 = scalar {value=1, dtype=f64} : f64[] weak\n"
        "  %4 = sub %3, %0 : f32[4,8]\n"
        "  %5 = mul %x, %4 : f32[4,8]\n"
        "  %6 = mul %0, %5 : f32[4,8]\n"
        "  %7 = add %2, %6 : f32[4,8]\n"
        "  %8 = mul %1, %7 : f32[4,8]\n"
        "  return %8\n"
        "}\n"
        "recomputed %0 = sigmoid f32[4,8] (128 bytes)\n"
        "recomputed %6 = sub f32[4,8] (128 bytes)\n"
        "recomputed %7 = mul f32[4,8] (128 bytes)\n"
        "recomputed %8 = mul f32[4,8] (128 bytes)\n"
        "the cut: 0 bytes written and read for the backward\n");
}

/* A backward output that reads no tangent is computed from saved values too;
 * the forward outputs are listed first, then the saved ones. */
static void test_forward_value_as_backward_output(void **state)
{
    (void)state;
    expect_partition(
        "graph @f(%x: f32[4,8], %tangent: f32[4]) {\n"
        "  %0 = amax %x {dims=[1], keepdim=false} : f32[4]\n"
        "  %1 = exp %0 : f32[4]\n"
        "  %2 = mul %tangent, %1 : f32[4]\n"
        "  return %1, %2, %0\n"
        "}\n",
        1,
        "graph @f_forward(%x: f32[4,8]) {\n"
        "  %0 = amax %x {dims=[1], keepdim=false} : f32[4]\n"
        "  %1 = exp %0 : f32[4]\n"
        "  return %1, %0\n"
        "}\n"
        "graph @f_backward(%x: f32[4,8], %tangent: f32[4], %saved0: f32[4]) {\n"
        "  %0 = exp %saved0 : f32[4]\n"
        "  %1 = mul %tangent, %0 : f32[4]\n"
        "  return %1, %saved0\n"
        "}\n"
        "saved %0 = amax f32[4] (16 bytes)\n"
        "recomputed %1 = exp f32[4] (16 bytes)\n"
        "the cut: 32 bytes written and read for the backward\n");
}

/* A layout copy of an input (what a weight gradient's matmul reads) and a
 * softmax (an nn composite): the softmax's result is saved; the copy costs
 * as many bytes saved (written in the forward, read in the backward) as made
 * again (the matmul reads it from memory), a move with no arithmetic: of the
 * equal cuts, the one that holds less between the plans makes it again. */
static void test_copy_recomputed_softmax_saved(void **state)
{
    (void)state;
    expect_partition(
        "graph @f(%x: f32[4,8], %tangent: f32[4,8], %w: f32[8,8] param) {\n"
        "  %0 = matmul %x, %w : f32[4,8]\n"
        "  %1 = softmax %0 {dim=-1} : f32[4,8]\n"
        "  %2 = permute %x {perm=[1,0]} : f32[8,4]\n"
        "  %3 = copy %2 : f32[8,4]\n"
        "  %4 = mul %tangent, %1 : f32[4,8]\n"
        "  %5 = matmul %3, %4 : f32[8,8]\n"
        "  return %1, %5\n"
        "}\n",
        1,
        "graph @f_forward(%x: f32[4,8], %w: f32[8,8] param) {\n"
        "  %0 = matmul %x, %w : f32[4,8]\n"
        "  %1 = softmax %0 {dim=-1} : f32[4,8]\n"
        "  return %1, %1\n"
        "}\n"
        "graph @f_backward(%x: f32[4,8], %tangent: f32[4,8], %w: f32[8,8] param, %saved0: f32[4,8]) {\n"
        "  %0 = permute %x {perm=[1,0]} : f32[8,4]\n"
        "  %1 = copy %0 : f32[8,4]\n"
        "  %2 = mul %tangent, %saved0 : f32[4,8]\n"
        "  %3 = matmul %1, %2 : f32[8,8]\n"
        "  return %3\n"
        "}\n"
        "saved %1 = softmax f32[4,8] (128 bytes)\n"
        "recomputed %3 = copy f32[8,4] (128 bytes)\n"
        "the cut: 384 bytes written and read for the backward\n");
}

/* sum(sin(m) + cos(m)), m = x @ w: the backward reads both sin(m) and cos(m)
 * (its gradient is e cos(m) - e sin(m)). Each alone costs what m costs
 * (written and read for the backward: 256 bytes), so a choice made per value
 * saves both (512); the cut saves m once and computes both again. */
static void test_shared_producer_saved_once(void **state)
{
    (void)state;
    expect_partition(
        "graph @sc(%x: f32[4,3], %tangent: f32[], %w: f32[3,8] param) {\n"
        "  %0 = matmul %x, %w : f32[4,8]\n"
        "  %1 = sin %0 : f32[4,8]\n"
        "  %2 = cos %0 : f32[4,8]\n"
        "  %3 = add %1, %2 : f32[4,8]\n"
        "  %4 = sum %3 {dims=[], keepdim=false} : f32[]\n"
        "  %5 = expand %tangent {shape=[4,8]} : f32[4,8]\n"
        "  %6 = mul %5, %2 : f32[4,8]\n"
        "  %7 = mul %5, %1 : f32[4,8]\n"
        "  %8 = sub %6, %7 : f32[4,8]\n"
        "  %9 = permute %x {perm=[1,0]} : f32[3,4]\n"
        "  %10 = matmul %9, %8 : f32[3,8]\n"
        "  return %4, %10\n"
        "}\n",
        1,
        "graph @sc_forward(%x: f32[4,3], %w: f32[3,8] param) {\n"
        "  %0 = matmul %x, %w : f32[4,8]\n"
        "  %1 = sin %0 : f32[4,8]\n"
        "  %2 = cos %0 : f32[4,8]\n"
        "  %3 = add %1, %2 : f32[4,8]\n"
        "  %4 = sum %3 {dims=[], keepdim=false} : f32[]\n"
        "  return %4, %0\n"
        "}\n"
        "graph @sc_backward(%x: f32[4,3], %tangent: f32[], %w: f32[3,8] param, %saved0: f32[4,8]) {\n"
        "  %0 = sin %saved0 : f32[4,8]\n"
        "  %1 = cos %saved0 : f32[4,8]\n"
        "  %2 = expand %tangent {shape=[4,8]} : f32[4,8]\n"
        "  %3 = mul %2, %1 : f32[4,8]\n"
        "  %4 = mul %2, %0 : f32[4,8]\n"
        "  %5 = sub %3, %4 : f32[4,8]\n"
        "  %6 = permute %x {perm=[1,0]} : f32[3,4]\n"
        "  %7 = matmul %6, %5 : f32[3,8]\n"
        "  return %7\n"
        "}\n"
        "saved %0 = matmul f32[4,8] (128 bytes): read by a recomputed value\n"
        "recomputed %1 = sin f32[4,8] (128 bytes)\n"
        "recomputed %2 = cos f32[4,8] (128 bytes)\n"
        "the cut: 256 bytes written and read for the backward\n");
}

/* A chain of pointwise ops longer than PS_PARTITION_MAX_CHAIN from an input:
 * the values past that depth are not computed again (the backward would run
 * the whole chain); the last one, which the backward reads, is saved. */
static void test_long_chain_saved(void **state)
{
    (void)state;
    enum { N = PS_PARTITION_MAX_CHAIN + 2 };
    char *src = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&src, &len);
    assert_non_null(m);
    fprintf(m, "graph @chain(%%x: f32[4], %%tangent: f32[4]) {\n  %%0 = neg %%x : f32[4]\n");
    for (int k = 1; k < N; k++)
        fprintf(m, "  %%%d = neg %%%d : f32[4]\n", k, k - 1);
    fprintf(m, "  %%%d = mul %%tangent, %%%d : f32[4]\n  return %%%d, %%%d\n}\n", N, N - 1, N - 1, N);
    fclose(m);
    ir_graph *j = tu_parse(src);
    ps_partition p;
    char err[512];
    if (ps_partition_joint(j, 1, NULL, NULL, &p, err, sizeof err) != 0)
        fail_msg("%s", err);
    char want[256];
    snprintf(want, sizeof want,
             "saved %%%d = neg f32[4] (16 bytes): more than %d pointwise producers in a chain\n"
             "the cut: 16 bytes written and read for the backward\n",
             N - 1, PS_PARTITION_MAX_CHAIN);
    assert_string_equal(p.report, want);
    assert_int_equal(p.nsaved, 1);
    assert_int_equal(p.nrecomputed, 0);
    check_values(j, 1, &p);
    ps_partition_free(&p);
    ir_graph_free(j);
    free(src);
}

/* The maximum flow of the textbook network (CLRS 3rd ed., figure 26.6: 23)
 * and its cut's sides; a network whose every path is infinite; edges past
 * the first growth. */
static void test_mincut(void **state)
{
    (void)state;
    static const int e[][3] = {{0, 1, 16}, {0, 2, 13}, {2, 1, 4},  {1, 3, 12}, {3, 2, 9},
                               {2, 4, 14}, {4, 3, 7},  {3, 5, 20}, {4, 5, 4}};
    ps_flow *f = ps_flow_new(6);
    assert_non_null(f);
    for (int k = 0; k < 9; k++)
        assert_int_equal(ps_flow_edge(f, e[k][0], e[k][1], e[k][2]), 0);
    assert_int_equal(ps_flow_max(f, 0, 5), 23);
    bool side[6];
    ps_flow_source_side(f, 0, side);   /* the cut {s, v1, v2, v4}: 12 + 7 + 4 */
    assert_true(side[0] && side[1] && side[2] && !side[3] && side[4] && !side[5]);
    ps_flow_free(f);

    f = ps_flow_new(3);
    assert_int_equal(ps_flow_edge(f, 0, 1, PS_FLOW_INF), 0);
    assert_int_equal(ps_flow_edge(f, 1, 2, INT64_MAX), 0);
    assert_true(ps_flow_max(f, 0, 2) >= PS_FLOW_INF);
    ps_flow_free(f);

    enum { N = 200 };   /* a chain of N vertices: the cut is its thinnest edge */
    f = ps_flow_new(N);
    for (int v = 0; v + 1 < N; v++)
        assert_int_equal(ps_flow_edge(f, v, v + 1, v == 123 ? 5 : 1000 + v), 0);
    assert_int_equal(ps_flow_max(f, 0, N - 1), 5);
    bool chain[N];
    ps_flow_source_side(f, 0, chain);
    for (int v = 0; v < N; v++)
        assert_int_equal(chain[v], v <= 123);
    ps_flow_free(f);
}

static void expect_error(const char *src, int nfwd, const char *want)
{
    ir_graph *j = tu_parse(src);
    ps_partition p;
    char err[512] = "";
    assert_int_equal(ps_partition_joint(j, nfwd, NULL, NULL, &p, err, sizeof err), -1);
    if (!strstr(err, want))
        fail_msg("got \"%s\", want \"%s\"", err, want);
    assert_null(p.fwd);
    assert_null(p.bwd);
    assert_null(p.report);
    ir_graph_free(j);
}

/* The backward for a backward that reached only tangent0: what depends on
 * tangents only through tangent1 goes; an add with it is the other operand,
 * a sub from it is negated, a cat takes zeros for it, an output that is it
 * becomes zeros. On random inputs the pruned graph gives what the whole one
 * gives with tangent1 zero (where x is finite and not 0). */
/* amax's ties: the backward's mask x == max(x) is saved (a bool), not
 * computed again from x: a division computed again in another kernel may
 * round otherwise than the x the saved max came from, and the gradient went
 * nowhere (random programs' grad mode, seed 6923475). */
static void test_tie_mask_saved(void **state)
{
    (void)state;
    expect_partition(
        "graph @ties(%x: f32[2,3], %tangent: f32[2,1], %w: f32[3] param) {\n"
        "  %0 = div %x, %w : f32[2,3]\n"
        "  %1 = amax %0 {dims=[1], keepdim=true} : f32[2,1]\n"
        "  %2 = expand %1 {shape=[2,3]} : f32[2,3]\n"
        "  %3 = eq %0, %2 : bool[2,3]\n"
        "  %4 = cast %3 {dtype=f32} : f32[2,3]\n"
        "  %5 = expand %tangent {shape=[2,3]} : f32[2,3]\n"
        "  %6 = mul %5, %4 : f32[2,3]\n"
        "  %7 = div %6, %w : f32[2,3]\n"
        "  return %1, %7\n"
        "}\n",
        1,
        "graph @ties_forward(%x: f32[2,3], %w: f32[3] param) {\n"
        "  %0 = div %x, %w : f32[2,3]\n"
        "  %1 = amax %0 {dims=[1], keepdim=true} : f32[2,1]\n"
        "  %2 = expand %1 {shape=[2,3]} : f32[2,3]\n"
        "  %3 = eq %0, %2 : bool[2,3]\n"
        "  return %1, %3\n"
        "}\n"
        "graph @ties_backward(%x: f32[2,3], %tangent: f32[2,1], %w: f32[3] param, %saved0: bool[2,3]) {\n"
        "  %0 = cast %saved0 {dtype=f32} : f32[2,3]\n"
        "  %1 = expand %tangent {shape=[2,3]} : f32[2,3]\n"
        "  %2 = mul %1, %0 : f32[2,3]\n"
        "  %3 = div %2, %w : f32[2,3]\n"
        "  return %3\n"
        "}\n"
        "saved %3 = eq bool[2,3] (6 bytes): read by a recomputed value\n"
        "recomputed %4 = cast f32[2,3] (24 bytes)\n"
        "the cut: 12 bytes written and read for the backward\n");
}

static void test_backward_prune(void **state)
{
    (void)state;
    ir_graph *g = tu_parse(
        "graph @b(%x: f32[4], %tangent0: f32[4], %tangent1: f32[4], %saved0: f32[4]) {\n"
        "  %0 = mul %tangent0, %saved0 : f32[4]\n"
        "  %1 = div %tangent1, %x : f32[4]\n"
        "  %2 = add %0, %1 : f32[4]\n"
        "  %3 = neg %tangent1 : f32[4]\n"
        "  %4 = cat %0, %3 {dim=0} : f32[8]\n"
        "  %5 = sub %1, %0 : f32[4]\n"
        "  return %2, %4, %5, %1\n"
        "}\n");
    char err[256];
    bool absent[4] = {false, false, true, false};
    ir_graph *h = ps_backward_prune(g, absent, err, sizeof err);
    if (!h)
        fail_msg("%s", err);
    char *got = ir_print(h, NULL);
    const char *want =
        "graph @b(%x: f32[4], %tangent0: f32[4], %tangent1: f32[4], %saved0: f32[4]) {\n"
        "  %0 = mul %tangent0, %saved0 : f32[4]\n"
        "  %1 = full {shape=[4], value=0, dtype=f32} : f32[4]\n"
        "  %2 = cat %0, %1 {dim=0} : f32[8]\n"
        "  %3 = neg %0 : f32[4]\n"
        "  return %0, %2, %3, %1\n"
        "}\n";
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    tj_tensor *in[4], *outg[4], *outh[4];
    for (int k = 0; k < 4; k++)
        in[k] = k == 2 ? tj_zeros(TJ_F32, 1, (int64_t[]){4}) : tj_add_s(tj_rand(TJ_F32, 1, (int64_t[]){4}), 1);
    run(g, in, outg);
    run(h, in, outh);
    for (int k = 0; k < 4; k++)
        if (!tu_all_close(outh[k], outg[k], 0))
            fail_msg("output %d differs from the whole graph's with tangent1 zero", k);
    free(got);
    ir_graph_free(h);
    ir_graph_free(g);
}

static void test_errors(void **state)
{
    (void)state;
    const char *src = "graph @f(%x: f32[4], %tangent: f32[4]) {\n"
                      "  %0 = exp %x : f32[4]\n"
                      "  %1 = mul %tangent, %0 : f32[4]\n"
                      "  return %0, %1\n"
                      "}\n";
    expect_error(src, 2, "partition: 2 forward outputs of 2 (the backward needs one)");
    expect_error(src, -1, "partition: -1 forward outputs of 2");
    const char *bad = "graph @f(%x: f32[4], %tangent: f32[4]) {\n"
                      "  %0 = exp %x : f32[4]\n"
                      "  %1 = mul %tangent, %0 : f32[4]\n"
                      "  return %1, %0\n"
                      "}\n";
    expect_error(bad, 1, "partition: forward output 0 reads a tangent");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_mlp_relu), T(test_checkpoint_regions),
        T(test_mlp_tanh),
        T(test_pointwise_from_input),
        T(test_forward_value_as_backward_output),
        T(test_copy_recomputed_softmax_saved),
        T(test_tie_mask_saved), T(test_shared_producer_saved_once), T(test_long_chain_saved), T(test_mincut), T(test_backward_prune), T(test_errors),
#undef T
    };
    return cmocka_run_group_tests_name("partition", tests, NULL, NULL);
}
