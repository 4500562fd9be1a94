/* test_conv_pool.c - pooling fused after a conv in compiled plans
 * (sched/block.c, "pool"): a max_pool2d or avg_pool2d reading a conv2d's
 * value, or its epilogue's (bias, batch norm, activation), runs per image
 * inside the conv's blocked region. Fused results are compared bit for bit
 * with the same plan unfused (TJIT_CONV_POOL=0: the same kernels on the same
 * values) and within rounding with eager (the epilogue kernel's formulas and
 * the conv per image), over kernel sizes, strides, padding, dilation,
 * ceil_mode, count_include_pad, divisor_override, odd sizes, batch 1 and
 * more, groups and depthwise convs, on 1 and 2 threads. Each refusal (a
 * pooled value with another reader, a result of the graph, indices asked
 * for, a training graph, TJIT_CONV_POOL=0) is checked to leave the pool
 * outside the region, by tj_explain's note.
 *
 * Where the conv's row kernel runs it, the epilogue (scale, shift, relu)
 * and a 2x2 or 3x3 stride-2 max pool run on the conv's rows instead
 * (sched/cpost.c, runtime/k_conv_post.c): test_post_rows compares that
 * with the same plan without it (TJIT_CONV_POST=0) bit for bit, NaNs in
 * the input included, over both instruction sets. test_region_weights and
 * test_region_two_convs: the kept prepared conv weights within and across a
 * region's runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "../runtime/conv_direct.h"
#include "util.h"

/* One case: conv2d (x [n,c,h,w], weight [o, c/groups, k, k]), then an
 * optional bias, batch norm and activation, then a pool. */
typedef struct cfg {
    int64_t n, c, h, w, o, groups, k, cs, cp;   /* conv: kernel, stride, padding */
    bool bias, bn, konst;                       /* konst: y * 0.7 - 0.1 after the bn */
    int act;                                    /* 0 relu, 1 none, 2 gelu */
    bool avg;
    int64_t pk[2], ps[2], pp[2], pd[2];         /* pool kernel, stride, padding, dilation */
    bool ceil, cip;                             /* ceil_mode, count_include_pad (avg) */
    int64_t divisor;                            /* avg divisor_override, 0: none */
    int extra;                                  /* 0 none, 1 the pooled value is also a result,
                                                 * 2 another pool reads it, 3 indices too */
    tj_tensor *wt, *b, *mean, *var, *g, *beta;  /* weights (kept) */
} cfg;

static tj_tensor *keep_randn(int ndim, const int64_t *shape, double scale, double shift)
{
    return tj_keep(tj_add_s(tj_mul_s(tj_randn(TJ_F32, ndim, shape), scale), shift));
}

static void cfg_weights(cfg *c)
{
    int64_t ws[4] = {c->o, c->c / c->groups, c->k, c->k}, os[1] = {c->o};
    c->wt = keep_randn(4, ws, 0.3, 0);
    c->b = keep_randn(1, os, 0.5, 0);
    c->mean = keep_randn(1, os, 0.2, 0);
    c->var = tj_keep(tj_add_s(tj_rand(TJ_F32, 1, os), 0.5));
    c->g = keep_randn(1, os, 0.5, 1);
    c->beta = keep_randn(1, os, 0.5, 0);
}

static void cfg_release(cfg *c)
{
    tj_tensor *t[6] = {c->wt, c->b, c->mean, c->var, c->g, c->beta};
    for (int k = 0; k < 6; k++)
        tj_release(t[k]);
}

/* The value the pool reads. */
static tj_tensor *pooled_value(const cfg *c, tj_tensor *x)
{
    int64_t st[2] = {c->cs, c->cs}, pd[2] = {c->cp, c->cp}, one[2] = {1, 1};
    tj_tensor *y = tj_conv2d(x, c->wt, c->bias ? c->b : NULL, st, pd, one, c->groups);
    if (c->bn)
        y = tj_batch_norm(y, c->mean, c->var, c->g, c->beta, 1e-5);
    if (c->konst)
        y = tj_add_s(tj_mul_s(y, 0.7), -0.1);
    return c->act == 0 ? tj_relu(y) : c->act == 2 ? tj_gelu(y) : y;
}

static tj_tensor *pool(const cfg *c, tj_tensor *y, tj_tensor **indices)
{
    if (c->avg)
        return tj_avg_pool2d_ex(y, c->pk,
                                &(tj_avg_pool2d_options){.stride = c->ps, .padding = c->pp,
                                                         .ceil_mode = c->ceil, .count_include_pad = c->cip,
                                                         .divisor_override = c->divisor});
    return tj_max_pool2d_ex(y, c->pk,
                            &(tj_max_pool2d_options){.stride = c->ps, .padding = c->pp,
                                                     .dilation = c->pd, .ceil_mode = c->ceil},
                            indices);
}

static int model(void *ctx, tj_tensor *const *a, int n, tj_tensor **outs, int max)
{
    const cfg *c = ctx;
    tj_tensor *y = pooled_value(c, a[0]), *idx = NULL;
    outs[0] = pool(c, y, c->extra == 3 ? &idx : NULL);
    if (c->extra == 1)
        outs[1] = y;
    else if (c->extra == 2)   /* an eager reader: the region reaches the pool */
        outs[1] = tj_avg_pool2d(y, (int64_t[]){3, 3}, NULL, NULL, false);
    else if (c->extra == 3)
        outs[1] = idx;
    return outs[0] ? 1 + (c->extra != 0) : -1;
}

/* Whether every element of a and b has the same bits. */
static void assert_same_bits(tj_tensor *a, tj_tensor *b, const char *what)
{
    a = tj_contiguous(a);
    b = tj_contiguous(b);
    assert_int_equal(tj_numel(a), tj_numel(b));
    if (memcmp(tj_data(a), tj_data(b), (size_t)tj_numel(a) * tj_dtype_size(tj_dtype_of(a))) != 0)
        fail_msg("%s: fused and unfused results differ in their bits", what);
}

/* Calls c's compiled model fused and with TJIT_CONV_POOL=0 and eager; the
 * results agree (fused and unfused bit for bit), and tj_explain of the fused
 * handle says `note` (NULL: nothing about pools). */
static void check(cfg *c, const char *note, const char *what)
{
    int64_t xs[4] = {c->n, c->c, c->h, c->w};
    tj_tensor *x = tj_randn(TJ_F32, 4, xs), *want[2], *got[2], *plain[2];
    int nout = model(c, &x, 1, want, 2);
    assert_true(nout >= 1);
    tj_compiled *cf = tj_compile_multi(model, c, &(tj_compile_options){.name = "conv_pool"});
    if (tj_call_multi(cf, &x, 1, got, 2) != nout)
        fail_msg("%s: %s", what, tj_last_error());
    setenv("TJIT_CONV_POOL", "0", 1);
    tj_compiled *cu = tj_compile_multi(model, c, &(tj_compile_options){.name = "conv_pool_off"});
    int nu = tj_call_multi(cu, &x, 1, plain, 2);
    unsetenv("TJIT_CONV_POOL");
    if (nu != nout)
        fail_msg("%s unfused: %s", what, tj_last_error());
    for (int k = 0; k < nout; k++) {
        tu_assert_close_any(got[k], want[k], 1e-5, 1e-5);
        assert_same_bits(got[k], plain[k], what);
    }
    char *e = tj_explain(cf);
    assert_non_null(e);
    if (note ? !strstr(e, note) : strstr(e, "pooling after conv") != NULL)
        fail_msg("%s: tj_explain should %s \"%s\":\n%s", what, note ? "say" : "not mention pools",
                 note ? note : "pooling after conv", e);
    free(e);
    if (note && strstr(note, "1 fused")) {   /* the switch turns it off */
        e = tj_explain(cu);
        if (!strstr(e, "0 fused") || !strstr(e, "TJIT_CONV_POOL=0"))
            fail_msg("%s: TJIT_CONV_POOL=0 should leave the pool unfused:\n%s", what, e);
        free(e);
    }
    tj_compiled_free(cf);
    tj_compiled_free(cu);
}

#define FUSED "pooling after conv: 1 fused"

static cfg base(void)
{
    return (cfg){.n = 4, .c = 3, .h = 16, .w = 16, .o = 8, .groups = 1, .k = 3, .cs = 1, .cp = 1,
                 .bias = true, .bn = true, .pk = {2, 2}, .ps = {2, 2}, .pd = {1, 1}};
}

static void run_cfg(cfg c, const char *note, const char *what)
{
    cfg_weights(&c);
    check(&c, note, what);
    cfg_release(&c);
}

/* The ResNet stem's shape at a smaller size: conv 7x7 stride 2 pad 3, bn,
 * relu, max_pool 3x3 stride 2 pad 1. */
static void test_stem(void **state)
{
    cfg c = base();
    c.h = c.w = 45;
    c.k = 7, c.cs = 2, c.cp = 3, c.o = 16, c.bias = false;
    c.pk[0] = c.pk[1] = 3, c.pp[0] = c.pp[1] = 1;
    run_cfg(c, FUSED, "stem");
}

/* max_pool2d over kernel sizes, strides, padding, dilation and ceil_mode, odd sizes. */
static void test_max_windows(void **state)
{
    static const int64_t v[][6] = {
        /* kh kw sh sw ph pw */
        {2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}, {3, 2, 1, 2, 1, 0}, {1, 1, 1, 1, 0, 0},
        {5, 3, 3, 1, 2, 1}, {2, 3, 1, 3, 0, 1},
    };
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++)
        for (int ceil = 0; ceil < 2; ceil++)
            for (int dil = 1; dil <= 2; dil++) {
                cfg c = base();
                c.h = 15, c.w = 13;
                c.pk[0] = v[i][0], c.pk[1] = v[i][1], c.ps[0] = v[i][2], c.ps[1] = v[i][3];
                c.pp[0] = v[i][4], c.pp[1] = v[i][5], c.pd[0] = dil, c.pd[1] = 3 - dil;
                c.ceil = ceil;
                char what[96];
                snprintf(what, sizeof what, "max window %d ceil %d dilation %d", i, ceil, dil);
                run_cfg(c, FUSED, what);
            }
}

/* avg_pool2d with and without count_include_pad, ceil_mode, divisor_override. */
static void test_avg_windows(void **state)
{
    static const int64_t v[][6] = {
        {2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}, {3, 2, 1, 2, 1, 1}, {5, 3, 3, 2, 2, 1},
    };
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++)
        for (int m = 0; m < 6; m++) {
            cfg c = base();
            c.avg = true;
            c.h = 17, c.w = 11;
            c.pk[0] = v[i][0], c.pk[1] = v[i][1], c.ps[0] = v[i][2], c.ps[1] = v[i][3];
            c.pp[0] = v[i][4], c.pp[1] = v[i][5];
            c.cip = m & 1, c.ceil = (m >> 1) & 1, c.divisor = m >= 4 ? 3 : 0;
            char what[96];
            snprintf(what, sizeof what, "avg window %d cip %d ceil %d divisor %lld", i, c.cip, c.ceil,
                     (long long)c.divisor);
            run_cfg(c, FUSED, what);
        }
}

/* What the pool reads: the conv alone, conv + bias, bn without bias, other
 * activations; grouped and depthwise convs; strided convs. */
static void test_epilogues_and_groups(void **state)
{
    cfg c = base();
    c.bias = c.bn = false, c.act = 1;
    run_cfg(c, FUSED, "the conv's own value");
    c = base(), c.bn = false;
    run_cfg(c, FUSED, "bias, relu");
    c = base(), c.bias = false, c.act = 2;
    run_cfg(c, FUSED, "bn, gelu");
    c = base(), c.c = 8, c.groups = 2, c.o = 6;
    run_cfg(c, FUSED, "groups 2");
    c = base(), c.c = 8, c.groups = 8, c.o = 8, c.avg = true;
    run_cfg(c, FUSED, "depthwise, avg");
    c = base(), c.c = 16, c.groups = 16, c.o = 32, c.k = 5, c.cp = 2, c.cs = 2, c.h = 21, c.w = 19;
    run_cfg(c, FUSED, "depthwise x2, 5x5 stride 2");
    c = base(), c.c = 32, c.o = 32, c.h = c.w = 14;   /* Winograd's shapes */
    run_cfg(c, FUSED, "32 -> 32 3x3");
}

/* c compiled fused with the conv in bands of `chans` output channels
 * (TJIT_CONV_BAND) and without (=0): the same bits, and bands ran (as many
 * as `bands` per image when positive; none when negative). */
static void check_bands(cfg c, const char *chans, int64_t bands, const char *what)
{
    cfg_weights(&c);
    int64_t xs[4] = {c.n, c.c, c.h, c.w};
    tj_tensor *x = tj_randn(TJ_F32, 4, xs), *got[2], *plain[2];
    setenv("TJIT_CONV_BAND", chans, 1);
    tj_compiled *cb = tj_compile_multi(model, &c, &(tj_compile_options){.name = "conv_band"});
    int64_t before = rt_conv_band_runs();
    int nb = tj_call_multi(cb, &x, 1, got, 2);
    int64_t ran = rt_conv_band_runs() - before;
    setenv("TJIT_CONV_BAND", "0", 1);
    tj_compiled *cu = tj_compile_multi(model, &c, &(tj_compile_options){.name = "conv_band_off"});
    before = rt_conv_band_runs();
    int nu = tj_call_multi(cu, &x, 1, plain, 2);
    assert_int_equal(rt_conv_band_runs(), before);
    unsetenv("TJIT_CONV_BAND");
    if (nb < 1 || nb != nu)
        fail_msg("%s: %s", what, tj_last_error());
    if (bands > 0 ? ran != bands * c.n : bands < 0 ? ran != 0 : ran == 0)
        fail_msg("%s: %lld bands ran", what, (long long)ran);
    for (int k = 0; k < nb; k++)
        assert_same_bits(got[k], plain[k], what);
    char *e = tj_explain(cu);
    if (!strstr(e, "TJIT_CONV_BAND=0"))
        fail_msg("%s: tj_explain should say the bands are off:\n%s", what, e);
    free(e);
    tj_compiled_free(cb);
    tj_compiled_free(cu);
    cfg_release(&c);
}

/* The conv in bands of output channels (the stem's store-bound conv):
 * bit for bit the unbanded plan's, over odd sizes, both pools, paddings,
 * strides 1 and 2, band sizes that do and do not divide the channels, 1
 * and 2 threads. */
static void test_bands(void **state)
{
    int threads = tj_num_threads();
    for (int t = 1; t <= 2; t++) {
        tj_set_num_threads(t);
        cfg c = base();   /* the stem's shape, smaller */
        c.h = 45, c.w = 43, c.k = 7, c.cs = 2, c.cp = 3, c.o = 16, c.bias = false;
        c.pk[0] = c.pk[1] = 3, c.pp[0] = c.pp[1] = 1;
        check_bands(c, "4", 4, "stem, bands of 4");
        check_bands(c, "8", 2, "stem, bands of 8");
        check_bands(c, "12", 2, "stem, bands of 12 and 4");
        c.avg = true, c.cip = true;
        check_bands(c, "4", 4, "stem, avg pool");
        c = base(), c.h = 15, c.w = 13, c.o = 12, c.cp = 0;   /* stride 1, no padding */
        c.pk[0] = c.pk[1] = 3, c.ps[0] = c.ps[1] = 2, c.pp[0] = c.pp[1] = 1;
        check_bands(c, "4", 3, "3x3 stride 1, max 3x3/2");
        c.avg = true, c.ceil = true;
        check_bands(c, "8", 2, "3x3 stride 1, avg, ceil_mode");
        c.bn = false;   /* bias and relu: an image per tile, so no bands */
        check_bands(c, "8", -1, "3x3 stride 1, avg, bias only");
        /* 31 columns: 16 output columns, where the grid kernel keeps its blocks full
         * enough to be chosen on AVX-512 too (11 ran the GEMM path there) */
        c = base(), c.h = 17, c.w = 31, c.cs = 2, c.o = 20;
        check_bands(c, "4", 5, "3x3 stride 2 pad 1, max 2x2/2");
    }
    tj_set_num_threads(threads);
}

/* The conv in bands of output rows (TJIT_CONV_BAND=rN): the epilogue and
 * the pool on each band's rows, the pool's rows above kept across bands;
 * bit for bit the unbanded plan's, over bands that do not divide the rows,
 * bands shorter than the pool's overlap, both max windows, no epilogue and
 * a gelu one, 1 and 2 threads; where it does not apply (an avg pool, an
 * epilogue tile per image, batch 1, bands past the rows) the channel bands'
 * rule runs, here none. */
static void test_row_bands(void **state)
{
    int threads = tj_num_threads();
    for (int t = 1; t <= 2; t++) {
        tj_set_num_threads(t);
        cfg c = base();   /* the stem's shape, smaller: 23 conv rows */
        c.h = 45, c.w = 43, c.k = 7, c.cs = 2, c.cp = 3, c.o = 16, c.bias = false;
        c.pk[0] = c.pk[1] = 3, c.pp[0] = c.pp[1] = 1;
        check_bands(c, "r4", 6, "stem, rows of 4");
        check_bands(c, "r5", 5, "stem, rows of 5");
        check_bands(c, "r2", 12, "stem, rows of 2");
        check_bands(c, "r21", 2, "stem, rows of 21 and 2");
        check_bands(c, "r22", -1, "stem, rows past the buffer");
        check_bands(c, "r", -1, "stem, the default rows: one band");
        c.act = 2;
        check_bands(c, "r4", 6, "stem, bn and gelu");
        c.bn = false, c.act = 1;
        check_bands(c, "r3", 8, "stem, the conv's own value");
        c.n = 1;   /* no region: the plan as without bands */
        setenv("TJIT_CONV_BAND", "r4", 1);
        int64_t before = rt_conv_band_runs();
        run_cfg(c, NULL, "stem, batch 1, rows of 4");
        assert_int_equal(rt_conv_band_runs(), before);
        unsetenv("TJIT_CONV_BAND");
        c = base(), c.h = c.w = 45, c.k = 7, c.cs = 2, c.cp = 3, c.o = 16, c.bias = false;
        c.pk[0] = c.pk[1] = 3, c.pp[0] = c.pp[1] = 1, c.avg = true;
        check_bands(c, "r4", -1, "stem, avg pool");
        c = base(), c.h = 15, c.w = 13, c.o = 12, c.cp = 0;   /* stride 1, no padding */
        c.pk[0] = c.pk[1] = 3, c.ps[0] = c.ps[1] = 2, c.pp[0] = c.pp[1] = 1;
        check_bands(c, "r3", 5, "3x3 stride 1, max 3x3/2, rows of 3");
        c.ceil = true;
        check_bands(c, "r4", 4, "3x3 stride 1, max 3x3/2 ceil_mode, rows of 4");
        c.bn = false;   /* bias and relu: an image per tile, so no bands */
        check_bands(c, "r4", -1, "3x3 stride 1, bias only");
        c = base(), c.h = 17, c.w = 31, c.cs = 2, c.o = 20;
        check_bands(c, "r2", 5, "3x3 stride 2 pad 1, max 2x2/2, rows of 2");
        check_bands(c, "r1", 9, "3x3 stride 2 pad 1, max 2x2/2, rows of 1");
    }
    tj_set_num_threads(threads);
}

/* Batch 1 forms no region (a block is an image; the conv splits its rows over
 * the threads instead): the plan runs unfused and says nothing of pools;
 * batch 3 on one thread and two. */
static void test_batch_and_threads(void **state)
{
    int threads = tj_num_threads();
    cfg c = base();
    c.n = 1;
    run_cfg(c, NULL, "batch 1");
    for (int t = 1; t <= 2; t++) {
        tj_set_num_threads(t);
        c = base(), c.n = 3, c.h = 9, c.w = 23;
        run_cfg(c, FUSED, t == 1 ? "batch 3, 1 thread" : "batch 3, 2 threads");
        c.avg = true, c.ceil = true;
        run_cfg(c, FUSED, t == 1 ? "batch 3 avg, 1 thread" : "batch 3 avg, 2 threads");
    }
    tj_set_num_threads(threads);
}

/* Two conv blocks in a row (P12's shape): both pools in the one region,
 * both noted by tj_explain (with the rows path's notes). */
static tj_tensor *two_blocks(void *ctx, tj_tensor *const *a, int n)
{
    cfg *c = ctx;
    return pool(&c[1], pooled_value(&c[1], pool(&c[0], pooled_value(&c[0], a[0]), NULL)), NULL);
}

static void test_two_blocks(void **state)
{
    cfg c[2] = {base(), base()};
    c[0].c = 1, c[0].h = c[0].w = 28, c[0].o = 8;
    c[1].c = 8, c[1].h = c[1].w = 14, c[1].o = 16;
    cfg_weights(&c[0]);
    cfg_weights(&c[1]);
    tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){6, 1, 28, 28});
    tj_compiled *cf = tj_compile(two_blocks, c, &(tj_compile_options){.name = "two_blocks"});
    tj_tensor *got = tj_call(cf, &x, 1);
    if (!got)
        fail_msg("%s", tj_last_error());
    tu_assert_close(got, two_blocks(c, &x, 1), 1e-5, 1e-5);
    tu_assert_explain(cf, "pooling after conv: 2 fused");
    char *e = tj_explain(cf);   /* both pools' notes, the rows path's too, whole */
    int rows = 0;
    for (const char *q = e; (q = strstr(q, "when its row kernel runs it")) != NULL; q++)
        rows++;
    if (rows != 2)
        fail_msg("tj_explain should note both pools on the conv's rows:\n%s", e);
    free(e);
    tj_compiled_free(cf);
    cfg_release(&c[0]);
    cfg_release(&c[1]);
}

/* Refusals: the pooled value is a result of the graph, another op reads it,
 * the indices are asked for (max_pool2d_indices reads it too). */
static void test_refusals(void **state)
{
    cfg c = base();
    c.extra = 1;
    run_cfg(c, "pooling after conv: 0 fused", "the pooled value is a result");
    c.extra = 1;
    run_cfg(c, "is a result of the graph", "the pooled value is a result (why)");
    c.extra = 2;
    run_cfg(c, "has another reader", "another op reads the pooled value");
    c.extra = 3;
    run_cfg(c, "has another reader", "indices asked for");
}

/* A training graph: the weights require grad, so the forward keeps what the
 * backward reads (the pooled value) as a result: the pool stays unfused,
 * and the gradient is eager's. */
static tj_tensor *model_one(void *ctx, tj_tensor *const *a, int n)
{
    return tj_sum(pool(ctx, pooled_value(ctx, a[0]), NULL), NULL, 0, false);
}

static void test_training_unfused(void **state)
{
    cfg c = base();
    cfg_weights(&c);
    assert_int_equal(tj_requires_grad(c.wt, true), 0);
    tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){4, 3, 16, 16});
    tj_compiled *cf = tj_compile(model_one, &c, &(tj_compile_options){.name = "train"});
    tj_tensor *loss = tj_call(cf, &x, 1);
    if (!loss)
        fail_msg("%s", tj_last_error());
    assert_int_equal(tj_backward(loss), 0);
    tj_tensor *g1 = tj_clone(tj_grad(c.wt));
    tj_zero_grad(c.wt);
    assert_int_equal(tj_backward(model_one(&c, &x, 1)), 0);
    tu_assert_close(g1, tj_grad(c.wt), 1e-4, 1e-4);
    char *e = tj_explain(cf);
    if (strstr(e, "pooling after conv") && !strstr(e, "0 fused"))
        fail_msg("a training graph's pool should stay unfused:\n%s", e);
    free(e);
    tj_compiled_free(cf);
    cfg_release(&c);
}

/* c compiled with the epilogue and pool on the conv's rows and without
 * (TJIT_CONV_POST=0), the row kernel forced (TJIT_CONV=rows), the input
 * with NaNs at every nan-th element (0: none): the same bits, close to
 * eager where there are no NaNs, and the rows path ran for every image
 * when `on` is 1, never when 0 (-1: either). */
static void check_post(cfg c, int nan, int on, const char *what)
{
    cfg_weights(&c);
    int64_t xs[4] = {c.n, c.c, c.h, c.w};
    tj_tensor *x = tj_contiguous(tj_randn(TJ_F32, 4, xs)), *got[2], *plain[2], *want[2];
    for (int64_t e = nan - 1; nan && e < tj_numel(x); e += nan)
        ((float *)tj_data(x))[e] = e % 3 ? NAN : -NAN;
    setenv("TJIT_CONV", "rows", 1);
    tj_compiled *cp = tj_compile_multi(model, &c, &(tj_compile_options){.name = "conv_post"});
    int64_t before = rt_conv_post_runs();
    int np = tj_call_multi(cp, &x, 1, got, 2);
    int64_t ran = rt_conv_post_runs() - before;
    setenv("TJIT_CONV_POST", "0", 1);
    tj_compiled *cu = tj_compile_multi(model, &c, &(tj_compile_options){.name = "conv_post_off"});
    before = rt_conv_post_runs();
    int nu = tj_call_multi(cu, &x, 1, plain, 2);
    assert_int_equal(rt_conv_post_runs(), before);
    unsetenv("TJIT_CONV_POST");
    int ne = model(&c, &x, 1, want, 2);
    unsetenv("TJIT_CONV");
    if (np < 1 || np != nu || np != ne)
        fail_msg("%s: %s", what, tj_last_error());
    if (on >= 0 && ran != (on ? c.n : 0))
        fail_msg("%s: the rows path ran %lld times for %lld images", what, (long long)ran,
                 (long long)c.n);
    for (int k = 0; k < np; k++) {
        assert_same_bits(got[k], plain[k], what);
        if (!nan)
            tu_assert_close_any(got[k], want[k], 1e-5, 1e-5);
    }
    if (on > 0)
        tu_assert_explain(cp, "when its row kernel runs it");
    tj_compiled_free(cp);
    tj_compiled_free(cu);
    cfg_release(&c);
}

/* The epilogue and pool on the row kernel's rows: the stem's shape and
 * others, odd sizes, channels that fill no lane block (40, 5), both max
 * windows with and without padding, ceil_mode, every epilogue the rows
 * path takes (the conv alone, a bias and relu, bn without relu, constants
 * as scale and shift) and two it
 * does not (gelu, an avg pool), NaNs, AVX-512 and AVX2 where the CPU has
 * them, 1 and 2 threads. */
static void test_post_rows(void **state)
{
    int threads = tj_num_threads();
    const rt_conv_isa isas[2] = {RT_CONV_AVX512, RT_CONV_AVX2};
    for (int i = 0; i < 2; i++) {
        rt_conv_isa_force((int)isas[i]);
        if (rt_conv_isa_current() != isas[i])
            continue;
        for (int t = 1; t <= 2; t++) {
            tj_set_num_threads(t);
            cfg c = base();   /* the stem's shape, smaller */
            c.h = 45, c.w = 43, c.k = 7, c.cs = 2, c.cp = 3, c.o = 16, c.bias = false;
            c.pk[0] = c.pk[1] = 3, c.pp[0] = c.pp[1] = 1;
            check_post(c, 0, true, "stem");
            check_post(c, 97, true, "stem, NaNs");
            c.o = 40, c.h = 38, c.w = 41;
            check_post(c, 0, true, "stem, 40 channels");
            c.ceil = true, c.pp[0] = c.pp[1] = 0;
            check_post(c, 0, true, "stem, 40 channels, unpadded pool, ceil_mode");
            c = base(), c.h = 15, c.w = 13, c.o = 5, c.bn = false;   /* bias in the conv, relu */
            check_post(c, 0, true, "3x3, bias and relu, max 2x2/2");
            check_post(c, 31, true, "3x3, bias and relu, max 2x2/2, NaNs");
            c.bias = false, c.act = 1;
            check_post(c, 0, true, "3x3, the conv alone");
            c.konst = true, c.act = 0;
            check_post(c, 0, true, "3x3, constant scale and shift, relu");
            check_post(c, 29, true, "3x3, constant scale and shift, relu, NaNs");
            c = base(), c.h = 17, c.w = 19, c.act = 1, c.pk[0] = c.pk[1] = 3;
            check_post(c, 0, true, "3x3, bn without relu, max 3x3/2");
            c.act = 2;
            check_post(c, 0, false, "3x3, bn and gelu");
            c.act = 0, c.avg = true;
            check_post(c, 0, false, "3x3, bn, relu, avg pool");
        }
    }
    rt_conv_isa_force(-1);
    tj_set_num_threads(threads);
}

/* conv2d of argument a[0] with weight argument a[1] (not a capture), then
 * bias, bn, relu and a 3x3/2 max pool: one region. */
static int model_w(void *ctx, tj_tensor *const *a, int n, tj_tensor **outs, int max)
{
    cfg c = *(const cfg *)ctx;
    c.wt = a[1];
    outs[0] = pool(&c, pooled_value(&c, a[0]), NULL);
    return outs[0] ? 1 : -1;
}

/* The kept prepared weights inside a region (rt_conv_band.token): the
 * images of a call after the first take them (every image hits once they
 * are kept), and a write through the weight's raw pointer between calls
 * (no version bump) is seen by the next call, on each kernel. */
static void test_region_weights(void **state)
{
    static const char *const paths[3] = {"rows", "direct", "wino"};
    for (int p = 0; p < 3; p++) {
        cfg c = base();
        c.n = 6, c.c = 16, c.o = 32, c.h = c.w = 14;
        c.pk[0] = c.pk[1] = 3, c.pp[0] = c.pp[1] = 1;
        cfg_weights(&c);
        tj_tensor *a[2] = {tj_randn(TJ_F32, 4, (int64_t[]){c.n, c.c, c.h, c.w}),
                           tj_contiguous(tj_randn(TJ_F32, 4, (int64_t[]){c.o, c.c, 3, 3}))}, *y[1];
        setenv("TJIT_CONV", paths[p], 1);
        tj_compiled *cf = tj_compile_multi(model_w, &c, &(tj_compile_options){.name = "region_w"});
        for (int k = 0; k < 2; k++)   /* kept by now */
            assert_int_equal(tj_call_multi(cf, a, 2, y, 1), 1);
        int64_t hits = rt_conv_weight_hits();
        assert_int_equal(tj_call_multi(cf, a, 2, y, 1), 1);
        if (rt_conv_weight_hits() - hits != c.n)
            fail_msg("%s: %lld of %lld images took the kept weights", paths[p],
                     (long long)(rt_conv_weight_hits() - hits), (long long)c.n);
        tj_tensor *before = y[0];
        ((float *)tj_data(a[1]))[5 * 16 * 9 + 4] += 2.0f;   /* output channel 5 */
        assert_int_equal(tj_call_multi(cf, a, 2, y, 1), 1);
        tj_tensor *want[1];
        assert_int_equal(model_w(&c, a, 2, want, 1), 1);
        unsetenv("TJIT_CONV");
        tu_assert_close_any(y[0], want[0], 1e-4, 1e-4);
        tj_tensor *d = tj_amax(tj_abs(tj_sub(y[0], before)), NULL, 0, false);
        if (tj_item(d) < 0.1)
            fail_msg("%s: the raw write to the weights was not seen", paths[p]);
        tj_compiled_free(cf);
        cfg_release(&c);
    }
}

/* A basic block (conv, bn, relu, conv, bn, + x, relu) whose two convs
 * have the same shape and weights of their own, arguments a[1] and a[2]:
 * one region, the weights seen through headers of serial 0. */
static tj_tensor *basic_block(void *ctx, tj_tensor *const *a, int n)
{
    cfg c = *(const cfg *)ctx;
    c.wt = a[1];
    tj_tensor *h = pooled_value(&c, a[0]);
    c.wt = a[2];
    c.act = 1;
    return tj_relu(tj_add(pooled_value(&c, h), a[0]));
}

/* The kept prepared weights of two same-shaped convs in one region run
 * (rt_conv_band.token) stay apart: compiled is eager's within rounding on
 * each kernel, three calls in a row (the third on kept weights). */
static void test_region_two_convs(void **state)
{
    static const char *const paths[4] = {"rows", "direct", "wino", "wino4"};
    for (int p = 0; p < 4; p++) {
        cfg c = base();
        c.n = 4, c.c = c.o = 16, c.h = c.w = 12, c.bias = false;
        cfg_weights(&c);
        tj_tensor *a[3] = {tj_randn(TJ_F32, 4, (int64_t[]){c.n, c.c, c.h, c.w}),
                           tj_mul_s(tj_randn(TJ_F32, 4, (int64_t[]){c.o, c.c, 3, 3}), 0.2),
                           tj_mul_s(tj_randn(TJ_F32, 4, (int64_t[]){c.o, c.c, 3, 3}), 0.2)};
        setenv("TJIT_CONV", paths[p], 1);
        tj_compiled *cf = tj_compile(basic_block, &c, &(tj_compile_options){.name = "basic_block"});
        tj_tensor *want = basic_block(&c, a, 3);
        for (int k = 0; k < 3; k++) {
            tj_tensor *y = tj_call(cf, a, 3);
            if (!y)
                fail_msg("%s: %s", paths[p], tj_last_error());
            tu_assert_close_any(y, want, 1e-4, 1e-4);
        }
        unsetenv("TJIT_CONV");
        tj_compiled_free(cf);
        cfg_release(&c);
    }
}

/* Random convs and epilogues (seeded): kernel 1-7, stride 1-2, padding,
 * 1-20 input and 1-70 output channels, odd sizes, each epilogue part and
 * activation, both max windows, padding and ceil_mode, some NaNs, through
 * the rows path where the plan takes it: the same bits as without it. */
static void test_post_random(void **state)
{
    uint64_t r = 0x9e3779b97f4a7c15u;
#define RND(n) ((int64_t)((r = r * 6364136223846793005u + 1442695040888963407u) >> 33) % (n))
    for (int i = 0; i < 48; i++) {
        cfg c = base();
        c.n = 2 + RND(3), c.c = 1 + RND(20), c.o = 1 + RND(70);
        c.k = 1 + 2 * RND(4), c.cs = 1 + RND(2), c.cp = RND(c.k / 2 + 1);
        c.h = c.k + 4 + RND(30), c.w = c.k + 4 + RND(30);
        c.bias = RND(2), c.bn = RND(2), c.konst = RND(3) == 0, c.act = (int)RND(3);
        c.pk[0] = c.pk[1] = 2 + RND(2), c.pp[0] = c.pp[1] = c.pk[0] == 3 ? RND(2) : 0;
        c.ceil = RND(4) == 0;
        char what[160];
        snprintf(what, sizeof what,
                 "random %d: [%lld,%lld,%lld,%lld] -> %lld k%lld s%lld p%lld, bias %d bn %d "
                 "konst %d act %d, max %lld pad %lld ceil %d",
                 i, (long long)c.n, (long long)c.c, (long long)c.h, (long long)c.w, (long long)c.o,
                 (long long)c.k, (long long)c.cs, (long long)c.cp, c.bias, c.bn, c.konst, c.act,
                 (long long)c.pk[0], (long long)c.pp[0], c.ceil);
        check_post(c, RND(3) == 0 ? 37 : 0, -1, what);
    }
#undef RND
}

int main(void)
{
    tj_manual_seed(5);
    tj_set_num_threads(2);
    tu_use_build_cache();
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_stem),
        T(test_bands),
        T(test_row_bands),
        T(test_max_windows),
        T(test_avg_windows),
        T(test_epilogues_and_groups),
        T(test_batch_and_threads),
        T(test_two_blocks),
        T(test_refusals),
        T(test_training_unfused),
        T(test_post_rows),
        T(test_region_weights),
        T(test_region_two_convs),
        T(test_post_random),
#undef T
    };
    return tu_run_jit_suite("conv_pool", tests, sizeof tests / sizeof tests[0],
                            "compiled graphs run on the graph executor");
}
