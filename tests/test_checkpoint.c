/* test_checkpoint.c - tj_checkpoint (activation checkpointing): gradients
 * through checkpointed blocks equal those without, to the bit (an MLP block
 * with layer_norm, gelu and dropout, the argument and the weights needing
 * gradients; two blocks in a row; a gradient penalty through one), the
 * block runs again once per backward, what it made is freed after the
 * forward, hooks and TJ_RETAIN_GRAPH behave as without; inside tj_compile
 * it is traced inline and the partition computes the blocks again in the
 * backward plan (fewer bytes saved, the same gradients); a compiled function
 * called inside runs eagerly there; a returned view of a buffer the block
 * wrote carries the write's history; and the refusals: a block
 * that records other ops when run again, an argument written after the
 * forward, bad arguments, a failing block. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

enum { B = 16, D = 32 };

typedef struct block {
    tj_tensor *w1, *b1, *w2, *g, *beta;   /* kept, requiring grad */
    double p;                             /* dropout probability */
    int runs;                             /* calls of block_fn */
    int extra;                            /* > 0: one more op from the second run on */
} block;

/* y = x + dropout(gelu(layer_norm(x) w1 + b1)) w2 */
static int block_fn(void *ctx, tj_tensor *const *a, int n, tj_tensor **out, int max)
{
    (void)n;
    (void)max;
    block *bk = ctx;
    bk->runs++;
    tj_tensor *h = tj_layer_norm(a[0], 1, bk->g, bk->beta, 1e-5);
    h = tj_gelu(tj_add(tj_matmul(h, bk->w1), bk->b1));
    if (bk->p > 0)
        h = tj_dropout(h, bk->p, true);
    if (bk->extra && bk->runs > 1)
        h = tj_mul_s(h, 1.0);
    out[0] = tj_add(a[0], tj_matmul(h, bk->w2));
    return out[0] ? 1 : -1;
}

static void block_make(block *bk, tj_dtype dt, double p)
{
    memset(bk, 0, sizeof *bk);
    tj_tensor **w[5] = {&bk->w1, &bk->b1, &bk->w2, &bk->g, &bk->beta};
    const int64_t shapes[5][2] = {{D, 2 * D}, {2 * D, 0}, {2 * D, D}, {D, 0}, {D, 0}};
    for (int k = 0; k < 5; k++) {
        *w[k] = tj_keep(tj_mul_s(tj_randn(dt, shapes[k][1] ? 2 : 1, shapes[k]), 0.3));
        assert_int_equal(tj_requires_grad(*w[k], true), 0);
    }
    bk->p = p;
}

static void block_free(block *bk)
{
    tj_tensor *w[5] = {bk->w1, bk->b1, bk->w2, bk->g, bk->beta};
    for (int k = 0; k < 5; k++)
        tj_release(w[k]);
}

static tj_tensor *run_block(block *bk, tj_tensor *x, bool ckpt)
{
    tj_tensor *y = NULL;
    int r = ckpt ? tj_checkpoint(block_fn, bk, &x, 1, &y, 1) : block_fn(bk, &x, 1, &y, 1);
    return r == 1 ? y : NULL;
}

/* loss = sum(sin(block(block(x)))) from the same seed, checkpointed or not;
 * the gradients of x and the weights into g[0..6). */
static void grads(block *bk, tj_tensor *x0, bool ckpt, int nblocks, tj_tensor **g)
{
    tj_tensor *w[5] = {bk->w1, bk->b1, bk->w2, bk->g, bk->beta};
    for (int k = 0; k < 5; k++)
        tj_zero_grad(w[k]);
    tj_tensor *x = tj_clone(x0);
    assert_int_equal(tj_requires_grad(x, true), 0);
    tj_manual_seed(7);
    tj_tensor *h = tj_mul_s(x, 1.5);   /* a node before the blocks */
    for (int k = 0; k < nblocks; k++)
        h = run_block(bk, h, ckpt);
    assert_non_null(h);
    assert_int_equal(tj_backward(tj_sum(tj_sin(h), NULL, 0, false)), 0);
    g[0] = tj_grad(x);
    for (int k = 0; k < 5; k++)
        g[k + 1] = tj_clone(tj_grad(w[k]));
}

static void test_same_gradients(void **state)
{
    (void)state;
    tj_dtype dts[2] = {TJ_F64, TJ_F32};
    for (int d = 0; d < 2; d++) {
        for (int nb = 1; nb <= 2; nb++) {
            tj_manual_seed(1);
            block bk;
            block_make(&bk, dts[d], 0.25);
            tj_tensor *x = tj_randn(dts[d], 2, (int64_t[]){B, D});
            tj_tensor *want[6], *got[6];
            grads(&bk, x, false, nb, want);
            assert_int_equal(bk.runs, nb);
            bk.runs = 0;
            grads(&bk, x, true, nb, got);
            assert_int_equal(bk.runs, 2 * nb);   /* each block once more, in the backward */
            for (int k = 0; k < 6; k++)
                tu_assert_close(got[k], want[k], 0, 0);
            block_free(&bk);
        }
    }
}

/* What the blocks made is freed after the forward, where without a
 * checkpoint the saved values hold it: the bytes allocated after the
 * forward of four blocks (tj_alloc_live_bytes), and the peak over forward
 * and backward, which holds one block's values at a time. */
static void test_frees_activations(void **state)
{
    (void)state;
    size_t after[2], peak[2];
    for (int ckpt = 0; ckpt < 2; ckpt++) {
        tj_manual_seed(1);
        block bk;
        block_make(&bk, TJ_F32, 0);
        tj_scope_begin();
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4096, D});   /* 512 KiB; the hidden 1 MiB */
        assert_int_equal(tj_requires_grad(x, true), 0);
        size_t before = tj_alloc_live_bytes();
        tj_alloc_peak_bytes(true);
        tj_tensor *y = x;
        for (int k = 0; k < 4; k++)
            y = run_block(&bk, y, ckpt);
        assert_non_null(y);
        after[ckpt] = tj_alloc_live_bytes() - before;
        assert_int_equal(tj_backward(tj_sum(y, NULL, 0, false)), 0);
        assert_non_null(tj_grad(bk.w1));
        peak[ckpt] = tj_alloc_peak_bytes(false) - before;
        tj_scope_end();
        block_free(&bk);
    }
    /* per block, layer_norm's result, the matmul, the bias add and gelu:
     * 3.5 MiB saved without; with, the blocks' results alone (0.5 MiB each) */
    if (!(after[0] >= after[1] + 4 * (3u << 20)) || !(peak[1] + (8u << 20) <= peak[0]))
        fail_msg("after the forward %zu bytes with the checkpoints, %zu without; peak %zu with, %zu without",
                 after[1], after[0], peak[1], peak[0]);
    if (getenv("TJ_VERBOSE"))
        fprintf(stderr, "after the forward %zu bytes with the checkpoints, %zu without; peak %zu with, %zu without\n",
                after[1], after[0], peak[1], peak[0]);
}

/* A ready-hook on a weight inside runs once per backward; TJ_RETAIN_GRAPH
 * keeps the values made again for a second backward (no third run). */
static void test_hooks_and_retain(void **state)
{
    (void)state;
    tj_manual_seed(2);
    block bk;
    int hook_calls = 0;
    block_make(&bk, TJ_F64, 0);
    tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){B, D});
    assert_int_equal(tj_set_grad_hook(bk.w1, tu_count_hook, &hook_calls), 0);
    tj_tensor *loss = tj_sum(tj_square(run_block(&bk, x, true)), NULL, 0, false);
    assert_int_equal(tj_backward_ex(loss, NULL, TJ_RETAIN_GRAPH), 0);
    tj_tensor *g1 = tj_clone(tj_grad(bk.w1));
    assert_int_equal(tj_backward(loss), 0);
    assert_int_equal(hook_calls, 2);
    assert_int_equal(bk.runs, 2);
    tu_assert_close(tj_grad(bk.w1), tj_mul_s(g1, 2), 1e-12, 0);
    /* the tape is used now */
    assert_int_equal(tj_backward(loss), -1);
    assert_non_null(strstr(tj_last_error(), "already used"));
    tj_clear_error();
    assert_int_equal(tj_set_grad_hook(bk.w1, NULL, NULL), 0);
    block_free(&bk);
}

/* A gradient penalty through a checkpointed block: the double backward
 * reads the values made again with their histories. */
static void test_create_graph(void **state)
{
    (void)state;
    tj_tensor *pen[2];
    for (int ckpt = 0; ckpt < 2; ckpt++) {
        tj_manual_seed(3);
        block bk;
        block_make(&bk, TJ_F64, 0);
        tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){B, D});
        assert_int_equal(tj_requires_grad(x, true), 0);
        tj_tensor *y = tj_sum(tj_tanh(run_block(&bk, x, ckpt)), NULL, 0, false), *gx;
        assert_int_equal(tj_gradients(&y, NULL, 1, &x, 1, TJ_CREATE_GRAPH, &gx), 0);
        assert_int_equal(tj_backward(tj_sum(tj_square(gx), NULL, 0, false)), 0);
        pen[ckpt] = tj_clone(tj_grad(bk.w2));
        block_free(&bk);
    }
    tu_assert_close(pen[1], pen[0], 1e-12, 1e-14);
}

typedef struct outer {
    block *bk;
} outer;

static tj_tensor *compiled_fn(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    return run_block(ctx, a[0], true);
}

/* Two blocks, checkpointed or not, with their own weights; compiled. */
typedef struct two {
    block b[2];
    bool ckpt;
} two;

static tj_tensor *two_fn(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    two *t = ctx;
    tj_tensor *h = run_block(&t->b[0], tj_tanh(a[0]), t->ckpt);
    return h ? run_block(&t->b[1], h, t->ckpt) : NULL;
}

/* The bytes the partitioned forward saves, from tj_explain. */
static long long saved_bytes(tj_compiled *c)
{
    char *ex = tj_explain(c);
    const char *at = strstr(ex, "the forward saves ");
    long long values = -1, bytes = -1;
    if (at)
        sscanf(at, "the forward saves %lld value%*[s ](%lld bytes", &values, &bytes);
    if (bytes < 0)
        fail_msg("no partitioned backward:\n%s", ex);
    free(ex);
    return bytes;
}

/* Traced: the block inline (one graph, no break) and its nodes marked: the
 * partition computes them again in the backward plan (the matmuls too) and
 * saves only what leaves a block, so the forward saves less; the gradients
 * equal eager's. */
static void test_compiled(void **state)
{
    (void)state;
    tj_manual_seed(4);
    block bk;
    block_make(&bk, TJ_F64, 0);
    tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){B, D});
    tj_tensor *want[2];
    assert_int_equal(tj_backward(tj_sum(tj_sin(run_block(&bk, x, true)), NULL, 0, false)), 0);
    want[0] = tj_clone(tj_grad(bk.w1));
    tj_zero_grad(bk.w1);
    tj_compiled *c = tj_compile(compiled_fn, &bk, NULL);
    for (int k = 0; k < 2; k++) {
        tj_zero_grad(bk.w1);
        tj_tensor *y = tj_call(c, &x, 1);
        assert_non_null(y);
        assert_int_equal(tj_backward(tj_sum(tj_sin(y), NULL, 0, false)), 0);
        tu_assert_close(tj_grad(bk.w1), want[0], 1e-12, 1e-14);
    }
    tu_assert_calls(c, 0, -1, " 0 graph breaks");
    tj_compiled_free(c);

    /* two blocks, with and without checkpoints: same gradients, fewer bytes saved */
    two t[2];
    long long bytes[2];
    tj_tensor *g[2][6];
    for (int ck = 0; ck < 2; ck++) {
        tj_manual_seed(6);
        block_make(&t[ck].b[0], TJ_F64, 0);
        block_make(&t[ck].b[1], TJ_F64, 0);
        t[ck].ckpt = ck;
        tj_compiled *tc = tj_compile(two_fn, &t[ck], NULL);
        tj_tensor *y = tj_call(tc, &x, 1);
        assert_non_null(y);
        assert_int_equal(tj_backward(tj_sum(tj_square(y), NULL, 0, false)), 0);
        tj_tensor *w[6] = {t[ck].b[0].w1, t[ck].b[0].w2, t[ck].b[0].g, t[ck].b[1].w1, t[ck].b[1].b1, t[ck].b[1].beta};
        for (int k = 0; k < 6; k++)
            g[ck][k] = tj_clone(tj_grad(w[k]));
        bytes[ck] = saved_bytes(tc);
        tu_assert_calls(tc, 0, -1, " 0 graph breaks");
        tj_compiled_free(tc);
    }
    for (int k = 0; k < 6; k++)
        tu_assert_close(g[1][k], g[0][k], 1e-12, 1e-14);
    /* without: layer_norm's result, the matmuls' inputs and gelu's, per block;
     * with: what enters and leaves each block (f64 [16,32] each) */
    if (getenv("TJ_VERBOSE"))
        fprintf(stderr, "compiled: the forward saves %lld bytes with checkpoints, %lld without\n", bytes[1],
                bytes[0]);
    if (!(bytes[1] * 2 < bytes[0]))
        fail_msg("the forward saves %lld bytes with checkpoints, %lld without", bytes[1], bytes[0]);
    for (int ck = 0; ck < 2; ck++) {
        block_free(&t[ck].b[0]);
        block_free(&t[ck].b[1]);
    }
    /* with dropout: its draw stays in the forward, its mask is saved (a
     * bool), the rest of the block is computed again; the compiled call runs
     * no step eagerly and draws what eager draws */
    bk.p = 0.25;
    tj_manual_seed(9);
    tj_zero_grad(bk.w1);
    assert_int_equal(tj_backward(tj_sum(tj_sin(run_block(&bk, x, true)), NULL, 0, false)), 0);
    tj_tensor *wd = tj_clone(tj_grad(bk.w1));
    tj_zero_grad(bk.w1);
    c = tj_compile(compiled_fn, &bk, NULL);
    tj_manual_seed(9);
    assert_int_equal(tj_backward(tj_sum(tj_sin(tj_call(c, &x, 1)), NULL, 0, false)), 0);
    tu_assert_close(tj_grad(bk.w1), wd, 1e-12, 1e-14);
    tu_assert_calls(c, 0, -1, "= ne bool[16,64]");
    char *ex = tj_explain(c);
    if (strstr(ex, "= dropout f64"))   /* the mask is saved, not the result */
        fail_msg("a dropout's result saved:\n%s", ex);
    free(ex);
    tj_compiled_free(c);
    bk.p = 0;
    /* without grad mode: fn itself, nothing recorded */
    tj_no_grad_begin();
    tj_tensor *y = run_block(&bk, x, true);
    tj_no_grad_end();
    assert_non_null(y);
    assert_false(tj_get_requires_grad(y));
    block_free(&bk);
}

/* A block that calls a compiled function: inside the checkpoint the
 * function runs eagerly (its first call would record other nodes than the
 * run again's compiled one); the gradients equal those without. */
static tj_tensor *inner_fn(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    block *bk = ctx;
    return tj_tanh(tj_matmul(a[0], bk->w1));
}

typedef struct calls_inner {
    block *bk;
    tj_compiled *inner;
} calls_inner;

static int outer_fn(void *ctx, tj_tensor *const *a, int n, tj_tensor **out, int max)
{
    (void)n;
    (void)max;
    calls_inner *ci = ctx;
    tj_tensor *h = tj_call(ci->inner, a, 1);
    out[0] = h ? tj_matmul(h, ci->bk->w2) : NULL;
    return out[0] ? 1 : -1;
}

static void test_compiled_inside(void **state)
{
    (void)state;
    tj_manual_seed(8);
    block bk;
    block_make(&bk, TJ_F64, 0);
    tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){B, D}), *g[2][2];
    for (int ck = 0; ck < 2; ck++) {
        calls_inner ci = {&bk, tj_compile(inner_fn, &bk, NULL)};
        tj_zero_grad(bk.w1);
        tj_zero_grad(bk.w2);
        tj_tensor *y;
        assert_int_equal(ck ? tj_checkpoint(outer_fn, &ci, &x, 1, &y, 1) : outer_fn(&ci, &x, 1, &y, 1), 1);
        assert_int_equal(tj_backward(tj_sum(tj_sin(y), NULL, 0, false)), 0);
        g[ck][0] = tj_clone(tj_grad(bk.w1));
        g[ck][1] = tj_clone(tj_grad(bk.w2));
        tj_compiled_stats st;
        tj_compiled_stats_get(ci.inner, &st);
        if (ck)   /* the forward and the run again, both eager */
            assert_int_equal((int)st.eager_calls, 2);
        tj_compiled_free(ci.inner);
    }
    for (int k = 0; k < 2; k++)
        tu_assert_close(g[1][k], g[0][k], 0, 0);
    block_free(&bk);
}

/* A block that returns a view of a buffer it made and then wrote with a
 * value that requires grad (out = zeros; v = out[:2]; out <- 2 a): the view's
 * history is the write's, though the buffer goes with the block's scope
 * (train program 7212985: it kept the history from before the write). */
static int buffer_fn(void *ctx, tj_tensor *const *a, int n, tj_tensor **out, int max)
{
    (void)ctx;
    (void)n;
    (void)max;
    tj_tensor *buf = tj_zeros(TJ_F64, 1, (int64_t[]){4});
    out[0] = tj_slice(buf, 0, 0, 2, 1);
    return tj_copy_(buf, tj_mul_s(a[0], 2)) == 0 ? 1 : -1;
}

static void test_view_of_written_buffer(void **state)
{
    (void)state;
    tj_tensor *g[2];
    for (int ck = 0; ck < 2; ck++) {
        tj_tensor *a = tj_arange(TJ_F64, 1, 5, 1), *y;
        assert_int_equal(tj_requires_grad(a, true), 0);
        assert_int_equal(ck ? tj_checkpoint(buffer_fn, NULL, &a, 1, &y, 1) : buffer_fn(NULL, &a, 1, &y, 1), 1);
        assert_int_equal(tj_backward(tj_sum(tj_square(y), NULL, 0, false)), 0);
        g[ck] = tj_grad(a);
    }
    /* d/da sum((2 a[:2])^2) = 8 a on the first two, 0 after */
    tu_assert_close(g[0], tu_tensor(TJ_F64, 1, (int64_t[]){4}, (double[]){8, 16, 0, 0}), 0, 0);
    tu_assert_close(g[1], g[0], 0, 0);
    /* without a checkpoint, the buffer's scope ended before the view is read:
     * written with a history while a view held it weakly, the buffer is
     * pinned until the view goes, so the write's history is still found */
    tj_tensor *a = tj_arange(TJ_F64, 1, 5, 1), *y;
    assert_int_equal(tj_requires_grad(a, true), 0);
    tj_scope_begin();
    assert_int_equal(buffer_fn(NULL, &a, 1, &y, 1), 1);
    tj_keep(y);
    tj_scope_end();
    tj_tensor *loss = tj_add(tj_sum(tj_square(y), NULL, 0, false), tj_sum(a, NULL, 0, false));
    assert_int_equal(tj_backward(loss), 0);
    tu_assert_close(tj_grad(a), tu_tensor(TJ_F64, 1, (int64_t[]){4}, (double[]){9, 17, 1, 1}), 0, 0);
    tj_release(y);
}

static int fail_fn(void *ctx, tj_tensor *const *a, int n, tj_tensor **out, int max)
{
    (void)ctx;
    (void)n;
    (void)max;
    out[0] = tj_matmul(a[0], a[0]);   /* [3] @ [3]: a scalar; [2,3] @ [2,3] fails */
    return out[0] ? 1 : -1;
}

static int null_fn(void *ctx, tj_tensor *const *a, int n, tj_tensor **out, int max)
{
    (void)ctx;
    (void)a;
    (void)n;
    (void)max;
    out[0] = NULL;
    return 1;
}

static int write_fn(void *ctx, tj_tensor *const *a, int n, tj_tensor **out, int max)
{
    (void)ctx;
    (void)n;
    (void)max;
    if (tj_mul_s_(a[0], 2) != 0)
        return -1;
    out[0] = tj_sin(a[0]);
    return 1;
}

static void test_errors(void **state)
{
    (void)state;
    tj_manual_seed(5);
    block bk;
    block_make(&bk, TJ_F64, 0);
    tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){B, D}), *y;
    /* another op when run again */
    bk.extra = 1;
    tj_tensor *bad = tj_sum(run_block(&bk, x, true), NULL, 0, false);
    assert_int_equal(tj_backward_ex(bad, NULL, TJ_RETAIN_GRAPH), -1);
    assert_non_null(strstr(tj_last_error(), "the function recorded"));
    tj_clear_error();
    bk.extra = 0;
    /* a second backward through the kept graph does not use what that run made */
    assert_int_equal(tj_backward(bad), -1);
    if (!strstr(tj_last_error(), "failed when run again for an earlier backward"))
        fail_msg("%s", tj_last_error());
    tj_clear_error();
    /* the argument written after the forward */
    tj_tensor *xc = tj_clone(x);
    tj_tensor *loss = tj_sum(run_block(&bk, xc, true), NULL, 0, false);
    assert_int_equal(tj_add_s_(xc, 1), 0);
    assert_int_equal(tj_backward(loss), -1);
    assert_non_null(strstr(tj_last_error(), "argument 0"));
    assert_non_null(strstr(tj_last_error(), "modified in place after the forward"));
    tj_clear_error();
    /* an argument the block writes in place: refused at once */
    tj_tensor *xw = tj_clone(x);
    assert_int_equal(tj_checkpoint(write_fn, NULL, &xw, 1, &y, 1), -1);
    assert_non_null(strstr(tj_last_error(), "wrote argument 0 in place"));
    tj_clear_error();
    /* bad calls */
    assert_int_equal(tj_checkpoint(NULL, NULL, &x, 1, &y, 1), -1);
    assert_non_null(strstr(tj_last_error(), "fn NULL"));
    assert_int_equal(tj_checkpoint(block_fn, &bk, &x, 1, &y, 0), -1);
    tj_tensor *none = NULL;
    assert_int_equal(tj_checkpoint(block_fn, &bk, &none, 1, &y, 1), -1);
    assert_non_null(strstr(tj_last_error(), "argument 0 is NULL"));
    tj_clear_error();
    /* a failing block: its own error */
    tj_tensor *m = tj_randn(TJ_F64, 2, (int64_t[]){2, 3});
    assert_int_equal(tj_requires_grad(m, true), 0);
    assert_int_equal(tj_checkpoint(fail_fn, NULL, &m, 1, &y, 1), -1);
    assert_non_null(strstr(tj_last_error(), "matmul"));
    tj_clear_error();
    assert_int_equal(tj_checkpoint(null_fn, NULL, &m, 1, &y, 1), -1);
    assert_non_null(strstr(tj_last_error(), "or a NULL one"));
    tj_clear_error();
    block_free(&bk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_same_gradients), T(test_frees_activations), T(test_hooks_and_retain), T(test_create_graph),
        T(test_compiled), T(test_compiled_inside), T(test_view_of_written_buffer), T(test_errors),
#undef T
    };
    tu_use_build_cache();
    return tu_run_jit_suite("checkpoint", tests, sizeof tests / sizeof *tests, "compiled checkpoints");
}
