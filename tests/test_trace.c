/* test_trace.c - tracing and tj_compile: weights by reference, guards,
 * recompiles and their limit, dynamic dims, graph breaks, regional
 * compilation, inlined nested calls, errors, explain and dumps. Compiled
 * results are always compared with eager ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <tjit_inspect.h>

#include "util.h"

static tj_tensor *randn2(tj_dtype dt, int64_t a, int64_t b)
{
    return tj_randn(dt, 2, (int64_t[]){a, b});
}

/* c called on random f32 [rows[k], cols] inputs, k < n, against model run
 * eagerly on each (within rtol, atol). */
static void calls_match(tj_compiled *c, tj_model_fn model, void *ctx, const int64_t *rows, int n,
                        int64_t cols, double rtol, double atol)
{
    for (int k = 0; k < n; k++) {
        tj_tensor *x = randn2(TJ_F32, rows[k], cols);
        tu_assert_close(tj_call(c, &x, 1), model(ctx, &x, 1), rtol, atol);
    }
}

/* y = tanh(x) * w + sum(x, dim 1, keepdim) */
static tj_tensor *model_weighted(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *w = ctx;
    return tj_add(tj_mul(tj_tanh(args[0]), w), tj_sum(args[0], (int[]){1}, 1, true));
}

static void test_weights_by_reference(void **state)
{
    (void)state;
    tj_manual_seed(1);
    tj_tensor *w = tj_keep(randn2(TJ_F32, 4, 8));
    tj_compiled *c = tj_compile(model_weighted, w, &(tj_compile_options){.name = "weighted"});
    assert_non_null(c);
    tj_tensor *x = randn2(TJ_F32, 4, 8);
    tu_assert_close(tj_call(c, &x, 1), model_weighted(w, &x, 1), 1e-6, 1e-6);
    /* An in-place update of the weight is seen by the next call. */
    assert_int_equal(tj_copy_(w, tj_full(TJ_F32, 0, NULL, 3.0)), 0);
    tj_tensor *y = tj_call(c, &x, 1);
    tu_assert_close(y, model_weighted(w, &x, 1), 1e-6, 1e-6);
    tu_assert_explain(c, "1 graph captured");
    tu_assert_explain(c, "captured tensor 0 (identity): f32[4,8]");
    tj_compiled_free(c);
    tj_release(w);
}

static tj_tensor *model_pointwise(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    return tj_add_s(tj_mul(tj_sigmoid(args[0]), args[0]), 0.5);
}

static void test_guard_hit_and_miss(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_pointwise, NULL, &(tj_compile_options){.no_dynamic = true});
    tj_tensor *x = randn2(TJ_F32, 3, 5);
    for (int k = 0; k < 3; k++)
        tu_assert_close(tj_call(c, &x, 1), model_pointwise(NULL, &x, 1), 0, 0);
    tu_assert_explain(c, "3 calls, 1 graph captured");
    tj_tensor *xd = tj_cast(x, TJ_F64);
    tu_assert_close(tj_call(c, &xd, 1), model_pointwise(NULL, &xd, 1), 0, 0);
    tu_assert_explain(c, "recompiled because arg 0: dtype is f64, the guard expects f32");
    tj_tensor *xt = tj_transpose(randn2(TJ_F32, 5, 3), 0, 1);   /* same shape, strided */
    tu_assert_close(tj_call(c, &xt, 1), model_pointwise(NULL, &xt, 1), 0, 0);
    tu_assert_explain(c, "not contiguous, the guard expects contiguous");
    tu_assert_explain(c, "3 graphs captured");
    tj_compiled_free(c);
}

static void test_recompile_limit(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_pointwise, NULL,
                                &(tj_compile_options){.recompile_limit = 2, .no_dynamic = true});
    calls_match(c, model_pointwise, NULL, (int64_t[]){2, 3, 4, 5, 6}, 5, 3, 0, 0);
    tu_assert_explain(c, "2 graphs captured");
    tu_assert_explain(c, "recompile limit (2) reached");
    tu_assert_explain(c, "3 eager calls");
    tj_compiled_free(c);
}

/* Pointwise, a reduction and a matmul: one graph for every batch size. */
static tj_tensor *model_dynamic(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *h = tj_matmul(tj_relu(args[0]), ctx);
    return tj_sub(h, tj_mean(h, (int[]){-1}, 1, true));
}

static void test_dynamic_dim(void **state)
{
    (void)state;
    tj_tensor *w = tj_keep(randn2(TJ_F32, 8, 6));
    tj_compiled *c = tj_compile(model_dynamic, w, NULL);
    calls_match(c, model_dynamic, w, (int64_t[]){4, 6, 10, 7, 3}, 5, 8, 1e-5, 1e-5);
    tu_assert_explain(c, "2 graphs captured");
    tu_assert_explain(c, "1 symbolic dim, 4 calls");
    tu_assert_explain(c, "guard arg 0: f32[s0,8]");
    tj_compiled_free(c);
    tj_release(w);
}

/* In-place writes (into an argument, into a clone, read through a view
 * taken before), stack, and a narrow within [0, 2) (a symbol is at least 2)
 * keep the dim dynamic: they compared or expanded to the example's sizes,
 * or sliced with bounds the rule could not follow, so the trace went static
 * (found by the random programs' dynamic mode). */
static tj_tensor *model_dynamic_writes(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    tj_tensor *c = tj_clone(args[0]), *v = tj_transpose(c, 0, 1);
    if (tj_add_(c, args[1]) != 0 || tj_mul_s_(args[0], 1.5) != 0)
        return NULL;
    tj_tensor *r = tj_sum(tj_stack((tj_tensor *[]){tj_transpose(v, 0, 1), args[0]}, 2, 0), (int[]){0}, 1, false);
    return tj_add(r, tj_narrow(args[0], 0, 1, 1));   /* a row within the symbol's least size */
}

static void test_dynamic_writes(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_dynamic_writes, NULL, NULL);
    int64_t sizes[] = {4, 6, 10};
    for (int k = 0; k < 3; k++) {
        tj_tensor *x[2] = {randn2(TJ_F32, sizes[k], 5), tj_randn(TJ_F32, 1, (int64_t[]){5})};
        tj_tensor *xe[2] = {tj_clone(x[0]), x[1]};
        tu_assert_close(tj_call(c, x, 2), model_dynamic_writes(NULL, xe, 2), 1e-6, 1e-6);
        tu_assert_close(x[0], xe[0], 0, 0);
    }
    tu_assert_explain(c, "2 graphs captured");
    tu_assert_explain(c, "guard arg 0: f32[s0,5]");
    tj_compiled_free(c);
}

/* A strided slice along the dynamic dim: compiled must match eager whether the
 * slice rule follows the symbol or the trace falls back to static dims. */
static tj_tensor *model_slice(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    return tj_exp(tj_slice(args[0], 0, 1, INT64_MAX, 2));
}

static void test_dynamic_slice(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_slice, NULL, NULL);
    calls_match(c, model_slice, NULL, (int64_t[]){4, 5, 6, 7, 8}, 5, 3, 0, 0);
    tj_compiled_free(c);
}

/* Slices, a pad and a cat whose sizes are the dynamic dim plus or minus a
 * count (s0-1, s0-2, s0): one symbolic graph serves every size the offsets
 * allow; a size below that (x[2:] of 3 rows has 1) misses the guard and is
 * traced static. */
static tj_tensor *model_offsets(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    tj_tensor *x = args[0];
    tj_tensor *y = tj_sub(tj_slice(x, 0, 1, INT64_MAX, 1), tj_slice(x, 0, 0, -1, 1));
    tj_tensor *z = tj_cat((tj_tensor *[]){y, tj_slice(x, 0, -1, INT64_MAX, 1)}, 2, 0);
    tj_tensor *p = tj_pad(tj_slice(y, 0, 1, INT64_MAX, 1), (int64_t[]){0, 0, 2, 0}, 2, 0.5);
    return tj_add(tj_mul(z, x), p);
}

static void test_dynamic_offsets(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_offsets, NULL, NULL);
    calls_match(c, model_offsets, NULL, (int64_t[]){6, 7, 9, 4, 12, 3}, 6, 3, 1e-6, 1e-6);
    /* 6 static, then 7 symbolic for 7, 9, 4 and 12; 3 on its own */
    tu_assert_explain(c, "3 graphs captured");
    tu_assert_explain(c, "guard arg 0: f32[s0,3]");
    tu_assert_explain(c, "guard s0 >= 4 (the graph's slices and offsets of it)");
    tu_assert_explain(c, "s0 is 3, the graph's slices and offsets of it need s0 >= 4");
    tj_compiled_free(c);
}

/* Slices of a static size out of a dynamic dim (the first and last 5 rows):
 * one graph where the dim has 5 rows or more, guarded so; a call with 4
 * (both slices clamp to 4) misses the guard and is traced static. */
static tj_tensor *model_ends(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    tj_tensor *x = args[0];
    return tj_add(tj_mul_s(tj_slice(x, 0, 0, 5, 1), 2), tj_slice(x, 0, -5, INT64_MAX, 1));
}

static void test_dynamic_static_slices(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_ends, NULL, NULL);
    calls_match(c, model_ends, NULL, (int64_t[]){8, 9, 12, 5, 4}, 5, 3, 0, 0);
    tu_assert_explain(c, "3 graphs captured");
    tu_assert_explain(c, "guard s0 >= 5 (the graph's slices and offsets of it)");
    tu_assert_explain(c, "s0 is 4, the graph's slices and offsets of it need s0 >= 5");
    tj_compiled_free(c);
}

/* The second call's size made one symbolic graph, which served the next
 * three calls with kernels (not the graph executor). */
static void assert_one_symbolic_graph(tj_compiled *c)
{
    tu_assert_explain(c, "2 graphs captured");
    tu_assert_explain(c, "1 symbolic dim, 3 calls");
    char *ex = tj_explain(c);
    assert_null(strstr(ex, "graph executor"));
    free(ex);
}

/* Token embeddings over a dynamic sequence length: the embedding's
 * decomposition would flatten [2,s0] indices (2 s0, no symbol plus a
 * count), so it stays an eager call; the rest of the graph is compiled. */
static tj_tensor *model_tokens(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *e = tj_embedding(ctx, args[0]);
    return tj_softmax(tj_mul_s(tj_gelu(e), 0.5), 2);
}

static void test_dynamic_kept_whole(void **state)
{
    (void)state;
    tj_tensor *w = tj_keep(randn2(TJ_F32, 40, 16));
    tj_compiled *c = tj_compile(model_tokens, w, NULL);
    for (int64_t n = 5; n < 9; n++) {
        tj_tensor *i = tj_cast(tj_floor(tj_mul_s(tj_rand(TJ_F32, 2, (int64_t[]){2, n}), 39.9)), TJ_I64);
        tu_assert_close(tj_call(c, &i, 1), model_tokens(w, &i, 1), 1e-6, 1e-6);
    }
    assert_one_symbolic_graph(c);
    tu_assert_explain(c, "compiled: 1 kernel, 1 eager call per call");
    tj_compiled_free(c);
    tj_release(w);
}

/* A causal mask over a dynamic sequence length (tril's row and column
 * indices follow the symbol): one compiled graph, no executor. */
static tj_tensor *model_causal(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    tj_tensor *s = tj_matmul(args[0], tj_transpose(args[0], 0, 1));
    tj_tensor *m = tj_tril(tj_exp(tj_sub(s, tj_amax(s, (int[]){1}, 1, true))), 0);
    return tj_div(m, tj_sum(m, (int[]){1}, 1, true));
}

static void test_dynamic_causal(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_causal, NULL, NULL);
    calls_match(c, model_causal, NULL, (int64_t[]){5, 6, 7, 8}, 4, 8, 1e-5, 1e-6);
    assert_one_symbolic_graph(c);
    tj_compiled_free(c);
}

/* Heads split and merged by reshapes whose -1 stands for the dynamic dim
 * ([s0,12] to [-1,3,4] is [s0,3,4]); a flatten of the dynamic dim with
 * another would be a multiple of it, so that model's dims stay static. */
static tj_tensor *model_heads(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *h = tj_softmax(tj_reshape(args[0], 3, (int64_t[]){-1, 3, 4}), 2);
    return ctx ? tj_reshape(h, 1, (int64_t[]){-1}) : tj_reshape(h, 2, (int64_t[]){-1, 12});
}

static void test_dynamic_reshape(void **state)
{
    (void)state;
    for (int flat = 0; flat < 2; flat++) {
        tj_compiled *c = tj_compile(model_heads, flat ? &flat : NULL, NULL);
        calls_match(c, model_heads, flat ? &flat : NULL, (int64_t[]){5, 6, 7, 8}, 4, 12, 1e-6, 1e-6);
        tu_assert_explain(c, flat ? "4 graphs captured" : "2 graphs captured");
        tj_compiled_free(c);
    }
}

/* A conv and a pool at stride 1 over a dynamic height: s0 stays s0 with
 * padding 1, a 2x2 pool makes s0-1; at stride 2 the output is not the
 * symbol plus a count, so that model's dims stay static. */
static tj_tensor *model_conv_h(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    const int64_t *stride = ctx;
    tj_tensor *y = tj_relu(tj_conv2d(args[0], args[1], NULL, stride, (int64_t[]){1, 1}, NULL, 1));
    return tj_max_pool2d(y, (int64_t[]){2, 2}, (int64_t[]){1, 1}, NULL, NULL);
}

static void test_dynamic_conv(void **state)
{
    (void)state;
    for (int64_t s = 1; s <= 2; s++) {
        int64_t stride[2] = {s, 1};
        tj_compiled *c = tj_compile(model_conv_h, stride, NULL);
        tj_tensor *w = tj_randn(TJ_F32, 4, (int64_t[]){3, 2, 3, 3});
        for (int64_t h = 5; h < 9; h++) {
            tj_tensor *x[2] = {tj_randn(TJ_F32, 4, (int64_t[]){1, 2, h, 6}), w};
            tu_assert_close(tj_call(c, x, 2), model_conv_h(stride, x, 2), 1e-5, 1e-5);
        }
        tu_assert_explain(c, s == 1 ? "2 graphs captured" : "4 graphs captured");
        if (s == 1)
            tu_assert_explain(c, "guard arg 0: f32[1,2,s0,6]");
        else
            tu_assert_explain(c, "stride 2 over symbolic size s0: the output size is not the symbol plus a count); dims stay static");
        tj_compiled_free(c);
    }
}

/* A number read off a dynamic tensor (its element count, a stride, a view's
 * offset) is a read of its sizes: the dim specializes (it used to bake the
 * traced size into the graph: a wrong mean at every other size). */
static tj_tensor *model_reads_numbers(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *x = args[0];   /* [3, n] */
    switch (*(const int *)ctx) {
    case 0: return tj_mul_s(tj_sum(x, NULL, 0, false), 1.0 / (double)tj_numel(x));
    case 1: return tj_mul_s(x, (double)tj_strides(x)[0]);
    default: return tj_add_s(x, (double)tj_offset(tj_slice(x, 1, -1, INT64_MAX, 1)));
    }
}

static void test_dynamic_number_reads(void **state)
{
    (void)state;
    for (int which = 0; which < 3; which++) {
        tj_compiled *c = tj_compile(model_reads_numbers, &which, NULL);
        for (int64_t n = 4; n < 8; n++) {
            tj_tensor *x = randn2(TJ_F32, 3, n);
            tu_assert_close(tj_call(c, &x, 1), model_reads_numbers(&which, &x, 1), 1e-6, 1e-6);
        }
        tu_assert_explain(c, "reads the size of a dynamic dim");
        tj_compiled_free(c);
    }
}

/* A composite whose decomposition reads a size: narrow from the back makes
 * its start absolute with the dim's size, so traced with the example's it
 * took rows 6..7 of every later call's x (a silently wrong slice, once slices
 * of a static size stayed symbolic); it specializes now. narrow from the
 * front reads no size and stays symbolic. */
static tj_tensor *model_narrows(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    int64_t start = *(const int64_t *)ctx;
    return tj_mul_s(tj_narrow(args[0], 0, start, 2), 2);
}

static void test_dynamic_decomp_reads(void **state)
{
    (void)state;
    for (int64_t start = -3; start <= 1; start += 4) {
        tj_compiled *c = tj_compile(model_narrows, &start, NULL);
        calls_match(c, model_narrows, &start, (int64_t[]){8, 9, 12, 5}, 4, 3, 0, 0);
        tu_assert_explain(c, start < 0 ? "the model reads the size of a dynamic dim" : "2 graphs captured");
        tj_compiled_free(c);
    }
}

/* Numbers of the sizes inside ops: batch_norm_train's running variance
 * takes var * n / (n - 1) (it baked the traced n: a wrong running variance
 * at every other batch size; now n is counted in the graph, fe_count, and
 * the dim stays symbolic), and a backward run while tracing computes with
 * the sizes (a mean's count): that specializes the dynamic dim. */
static tj_tensor *bn_stats[2], *bn_w;

static tj_tensor *model_bn_train(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    if (!ctx)
        return tj_batch_norm_train(args[0], bn_stats[0], bn_stats[1], NULL, NULL, 0.5, 1e-5);
    tj_zero_grad(bn_w);
    if (tj_backward(tj_mean(tj_mul(args[0], bn_w), NULL, 0, false)) != 0)
        return NULL;
    return tj_clone(tj_grad(bn_w));
}

static void test_dynamic_sizes_in_ops(void **state)
{
    (void)state;
    for (int bw = 0; bw < 2; bw++) {
        tj_tensor *mine[2] = {tj_keep(tj_zeros(TJ_F32, 1, (int64_t[]){3})),
                              tj_keep(tj_full(TJ_F32, 1, (int64_t[]){3}, 1))};
        tj_tensor *eager[2] = {tj_keep(tj_clone(mine[0])), tj_keep(tj_clone(mine[1]))};
        bn_w = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){3}));
        tj_requires_grad(bn_w, true);
        tj_compiled *c = tj_compile(model_bn_train, bw ? &bw : NULL, NULL);
        for (int64_t n = 3; n < 8; n++) {
            tj_tensor *x = randn2(TJ_F32, n, 3);
            memcpy(bn_stats, mine, sizeof bn_stats);
            tj_tensor *got = tj_call(c, &x, 1);
            memcpy(bn_stats, eager, sizeof bn_stats);
            tu_assert_close(got, model_bn_train(bw ? &bw : NULL, &x, 1), 1e-6, 1e-6);
            for (int k = 0; k < 2; k++)
                tu_assert_close(mine[k], eager[k], 1e-6, 1e-6);
        }
        tu_assert_explain(c, bw ? "the model reads the size of a dynamic dim; dims stay static"
                                : "(2 captured), 1 symbolic dim, 4 calls");
        tj_compiled_free(c);
        for (int k = 0; k < 2; k++) {
            tj_release(mine[k]);
            tj_release(eager[k]);
        }
        tj_release(bn_w);
    }
}

/* Reads a size to build a shape: the dynamic dim is specialized. */
static tj_tensor *model_reads_size(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    int64_t n = tj_size(args[0], 0);
    return tj_reshape(tj_exp(args[0]), 1, (int64_t[]){n * tj_size(args[0], 1)});
}

static void test_dynamic_read_specializes(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_reads_size, NULL, NULL);
    calls_match(c, model_reads_size, NULL, (int64_t[]){2, 3, 4, 5}, 4, 3, 0, 0);
    tu_assert_explain(c, "reads the size of a dynamic dim");
    tu_assert_explain(c, "4 graphs captured");
    tj_compiled_free(c);
}

/* Reads a value: a graph break; the call runs split around it (the amax
 * compiled, tj_item eagerly, the division compiled) and still matches
 * (tests/test_split.c tests the pieces). */
static tj_tensor *model_breaks(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    double m = tj_item(tj_amax(args[0], NULL, 0, false));
    return tj_div_s(args[0], m);
}

static void test_graph_break(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_breaks, NULL, &(tj_compile_options){.name = "breaks"});
    tj_tensor *x = randn2(TJ_F32, 3, 4);
    for (int k = 0; k < 2; k++) {
        tj_tensor *y = tj_call(c, &x, 1);
        tu_assert_close(y, model_breaks(NULL, &x, 1), 0, 0);
    }
    tu_assert_explain(c, "1 graph captured, 0 graph breaks, 0 eager calls");
    tu_assert_explain(c, "split at graph breaks (the first: tj_item reads the values of a traced "
                          "tensor (after 1 op, the last amax))");
    tu_assert_explain(c, "2 compiled pieces (1 end at a break)");
    tj_compiled_free(c);
}

/* An in-place write into a captured tensor: a break; eager semantics hold. */
static tj_tensor *model_writes(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *acc = ctx;
    tj_tensor *y = tj_add(args[0], acc);
    return tj_copy_(acc, y) == 0 ? y : NULL;
}

static void test_side_effect_compiled(void **state)
{
    (void)state;
    tj_tensor *acc = tj_keep(tj_zeros(TJ_F32, 1, (int64_t[]){3}));
    tj_tensor *x = tj_ones(TJ_F32, 1, (int64_t[]){3});
    tj_compiled *c = tj_compile(model_writes, acc, NULL);
    for (int k = 1; k <= 3; k++) {
        tj_tensor *y = tj_call(c, &x, 1);
        assert_non_null(y);
        assert_true(tj_get(acc, (int64_t[]){0}) == k);   /* each call accumulated once */
    }
    /* functionalized: the graph computes acc's new value, the call writes it back */
    char *ex = tj_explain(c);
    assert_non_null(strstr(ex, " 0 graph breaks"));
    free(ex);
    tj_compiled_free(c);
    tj_release(acc);
}

/* One layer, called for 4 layers with their own weights: one trace. */
static tj_tensor *layer(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    return tj_gelu_tanh(tj_linear(args[0], args[1], args[2]));
}

static void test_regional_compilation(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(layer, NULL, &(tj_compile_options){.name = "layer"});
    tj_tensor *x = randn2(TJ_F32, 4, 16), *xe = x;
    for (int l = 0; l < 4; l++) {
        tj_tensor *w = randn2(TJ_F32, 16, 16), *b = tj_randn(TJ_F32, 1, (int64_t[]){16});
        x = tj_call(c, (tj_tensor *[]){x, w, b}, 3);
        xe = layer(NULL, (tj_tensor *[]){xe, w, b}, 3);
        tu_assert_close(x, xe, 1e-5, 1e-5);
    }
    tu_assert_explain(c, "4 calls, 1 graph captured");
    tj_compiled_free(c);
}

static tj_tensor *model_outer(void *ctx, tj_tensor *const *args, int nargs)
{
    return tj_exp(tj_call(ctx, args, nargs));
}

static void test_nested_call_is_inlined(void **state)
{
    (void)state;
    tj_compiled *inner = tj_compile(model_pointwise, NULL, &(tj_compile_options){.name = "inner"});
    tj_compiled *outer = tj_compile(model_outer, inner, &(tj_compile_options){.name = "outer"});
    tj_tensor *x = randn2(TJ_F32, 2, 3);
    for (int k = 0; k < 2; k++)
        tu_assert_close(tj_call(outer, &x, 1), tj_exp(model_pointwise(NULL, &x, 1)), 0, 0);
    tu_assert_explain(outer, "graph 1: 5 nodes");   /* sigmoid mul scalar add exp */
    tu_assert_explain(inner, "compiled inner: 0 calls");
    tu_assert_error(tj_compile(NULL, NULL, NULL), "tj_compile", "NULL", NULL);
    tj_compiled_free(outer);
    tj_compiled_free(inner);
}

static tj_tensor *model_error(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    return tj_matmul(args[0], args[0]);
}

static void test_errors_match_eager(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_error, NULL, NULL);
    tj_tensor *x = randn2(TJ_F32, 2, 3);
    assert_null(model_error(NULL, &x, 1));
    char eager[512];
    snprintf(eager, sizeof eager, "%s", tj_last_error());
    tj_clear_error();
    tj_tensor *y = tj_call(c, &x, 1);
    assert_null(y);
    assert_string_equal(tj_last_error(), eager);
    tj_clear_error();
    tu_assert_error(tj_call(c, (tj_tensor *[]){NULL}, 1), "tj_call", "arg 0 is NULL", NULL);
    tu_assert_error(tj_call(NULL, &x, 1), "tj_call", "NULL", NULL);
    tu_assert_error(tj_compile(model_error, NULL, &(tj_compile_options){.name = "bad name"}),
                    "not an identifier", NULL);
    assert_null(tj_explain(NULL));
    tj_clear_error();
    tj_compiled_free(c);
}

static void test_dump_graph(void **state)
{
    (void)state;
    char dir[] = "/tmp/tjit-dump-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TJIT_DUMP", "graph", 1);
    setenv("TJIT_DUMP_DIR", dir, 1);
    tj_compiled *c = tj_compile(model_pointwise, NULL, &(tj_compile_options){.name = "dumped"});
    tj_tensor *x = randn2(TJ_F32, 2, 3);
    assert_non_null(tj_call(c, &x, 1));
    unsetenv("TJIT_DUMP");
    unsetenv("TJIT_DUMP_DIR");
    char cmd[256], line[256] = "";
    snprintf(cmd, sizeof cmd, "cat %s/*-dumped.graph.tir | head -1", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(line, sizeof line, p));
    pclose(p);
    assert_non_null(strstr(line, "graph @dumped(%x0: f32[2,3])"));
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    tj_compiled_free(c);
}

/* ---- call sites: nodes and errors name the line of the op call --------------------------- */

static int sited_line;   /* the line of model_sited's add; its exp is on the next */

static tj_tensor *model_sited(void *ctx, tj_tensor *const *args, int nargs)
{
    sited_line = __LINE__ + 1;
    tj_tensor *y = tj_add(args[0], (tj_tensor *)ctx);
    return tj_exp(y);
}

static void assert_text_has(const char *text, const char *what)
{
    if (!strstr(text, what))
        fail_msg("\"%s\" not in:\n%s", what, text);
}

/* The text of the one dump file in dir whose name ends in suffix (malloc'd). */
static char *read_dump(const char *dir, const char *suffix)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cat %s/*%s", dir, suffix);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *text = calloc(1, 1 << 16);
    assert_non_null(text);
    size_t n = fread(text, 1, (1 << 16) - 1, p);
    text[n] = '\0';
    pclose(p);
    return text;
}

static void test_callsite_dump(void **state)
{
    (void)state;
    char dir[] = "/tmp/tjit-dump-XXXXXX", want[128];
    assert_non_null(mkdtemp(dir));
    setenv("TJIT_DUMP", "graph,dce", 1);
    setenv("TJIT_DUMP_DIR", dir, 1);
    tj_tensor *w = tj_keep(randn2(TJ_F32, 2, 3)), *x = randn2(TJ_F32, 2, 3);
    tj_compiled *c = tj_compile(model_sited, w, &(tj_compile_options){.name = "sited"});
    tu_assert_close(tj_call(c, &x, 1), model_sited(w, &x, 1), 1e-6, 1e-6);
    unsetenv("TJIT_DUMP");
    unsetenv("TJIT_DUMP_DIR");
    char *graph = read_dump(dir, "-sited.graph.tir"), *prims = read_dump(dir, "-sited.dce.tir");
    snprintf(want, sizeof want, " = add %%x0, %%param1 : f32[2,3]  # tests/test_trace.c:%d\n", sited_line);
    assert_text_has(graph, want);
    snprintf(want, sizeof want, " = exp %%0 : f32[2,3]  # tests/test_trace.c:%d\n", sited_line + 1);
    assert_text_has(graph, want);
    assert_text_has(prims, want);   /* the passes keep them */
    /* the dump parses back, call sites and all: the same text */
    tj_graph *g = tj_graph_parse(graph, strlen(graph), "sited.tir");
    assert_non_null(g);
    char *again = tj_graph_print(g);
    assert_string_equal(again, graph);
    free(again);
    tj_graph_free(g);
    free(graph);
    free(prims);
    snprintf(want, sizeof want, "rm -rf %s", dir);
    assert_int_equal(system(want), 0);
    tj_compiled_free(c);
    tj_release(w);
}

static void test_callsite_errors(void **state)
{
    (void)state;
    tj_tensor *x = randn2(TJ_F32, 2, 3), *bad = tj_keep(randn2(TJ_F32, 4, 5));
    char want[128];
    /* eager */
    int line = __LINE__ + 1;
    tj_tensor *r = tj_mul(x, bad);
    snprintf(want, sizeof want, "shapes cannot be broadcast together at tests/test_trace.c:%d", line);
    tu_assert_error(r, "mul(f32[2,3], f32[4,5])", want, NULL);
    /* traced: the line in the model, not the tj_call's */
    tj_compiled *c = tj_compile(model_sited, bad, NULL);
    r = tj_call(c, &x, 1);
    snprintf(want, sizeof want, "shapes cannot be broadcast together at tests/test_trace.c:%d", sited_line);
    tu_assert_error(r, "add(f32[2,3], f32[4,5])", want, NULL);
    tj_compiled_free(c);
    tj_release(bad);
}

/* Several results: a value, a reduction of it, and an argument itself. */
static int model_three(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    (void)ctx;
    (void)nargs;
    if (max < 3)
        return -1;
    outs[0] = tj_exp(args[0]);
    outs[1] = tj_sum(outs[0], NULL, 0, false);
    outs[2] = args[0];
    return outs[0] && outs[1] ? 3 : -1;
}

static void test_multiple_results(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile_multi(model_three, NULL, NULL);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){3, 4}), *want[3], *got[3];
    assert_int_equal(model_three(NULL, &x, 1, want, 3), 3);
    for (int k = 0; k < 2; k++) {   /* traced, then replayed */
        assert_int_equal(tj_call_multi(c, &x, 1, got, 3), 3);
        for (int j = 0; j < 3; j++)
            tu_assert_close(got[j], want[j], 1e-6, 1e-6);
    }
    tu_assert_error(tj_call(c, &x, 1), "use tj_call_multi", NULL);
    tu_assert_error(tj_call_multi(c, &x, 1, got, 2) >= 0 ? (void *)1 : NULL, "room for 2", NULL);
    tu_assert_error(tj_call_multi(c, &x, 1, NULL, 3) >= 0 ? (void *)1 : NULL, "room for", NULL);
    char *ex = tj_explain(c);
    assert_non_null(strstr(ex, " 0 graph breaks"));
    free(ex);
    tj_compiled_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_weights_by_reference), T(test_guard_hit_and_miss),  T(test_recompile_limit),
        T(test_dynamic_dim), T(test_dynamic_writes), T(test_dynamic_read_specializes), T(test_dynamic_slice), T(test_dynamic_offsets), T(test_dynamic_conv), T(test_dynamic_reshape), T(test_dynamic_kept_whole), T(test_dynamic_causal), T(test_dynamic_static_slices), T(test_dynamic_number_reads), T(test_dynamic_sizes_in_ops), T(test_dynamic_decomp_reads),
        T(test_graph_break), T(test_side_effect_compiled),
        T(test_regional_compilation), T(test_nested_call_is_inlined), T(test_errors_match_eager),
        T(test_dump_graph),           T(test_callsite_dump),        T(test_callsite_errors),           T(test_multiple_results),
#undef T
    };
    return cmocka_run_group_tests_name("trace", tests, NULL, NULL);
}
