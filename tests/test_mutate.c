/* test_mutate.c - in-place ops (tj_add_, tj_mul_, ...) eager and inside
 * compiled models: functionalized writes into a captured buffer across
 * calls, into an argument, into slices of a buffer, batch-norm running
 * statistics in training mode; a write into another view is a graph break
 * that keeps eager semantics. Compiled results and the written tensors are
 * compared with an eager twin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/rt.h"
#include "util.h"

static void stats(tj_compiled *c, tj_compiled_stats *st) { assert_int_equal(tj_compiled_stats_get(c, st), 0); }

static void test_inplace_eager(void **state)
{
    (void)state;
    int64_t shape[] = {2, 3};
    tj_tensor *a = tj_keep(tj_full(TJ_F32, 2, shape, 2.0));
    tj_tensor *b = tj_full(TJ_F32, 1, (int64_t[]){3}, 3.0);   /* broadcast */
    assert_int_equal(tj_add_(a, b), 0);                          /* 5 */
    assert_int_equal(tj_mul_(a, b), 0);                          /* 15 */
    assert_int_equal(tj_sub_(a, b), 0);                          /* 12 */
    assert_int_equal(tj_div_(a, b), 0);                          /* 4 */
    assert_int_equal(tj_add_s_(a, 1.0), 0);                      /* 5 */
    assert_int_equal(tj_mul_s_(a, 0.5), 0);                      /* 2.5 */
    tu_assert_close(a, tj_full(TJ_F32, 2, shape, 2.5), 0, 0);
    /* the result goes back in dst's dtype when its category is not above
     * dst's (PyTorch's rule): i64 into i32 yes, a float into an integer or
     * bool tensor no (true division, a float scalar, a float operand), as
     * an integer into a bool one; tj_copy_ converts any */
    tj_tensor *i = tj_keep(tj_full(TJ_I32, 1, (int64_t[]){2}, 7));
    assert_int_equal(tj_mul_(i, tj_full(TJ_I64, 1, (int64_t[]){2}, 3)), 0);
    assert_int_equal(tj_add_s_(i, 2), 0);
    assert_true(tj_get(i, (int64_t[]){0}) == 23);
    assert_int_equal(tj_div_(i, tj_full(TJ_I32, 1, (int64_t[]){2}, 2)), -1);
    tu_assert_error(NULL, "div_", "f32[2] cannot be cast to the destination i32[2]", NULL);
    tj_clear_error();
    assert_int_equal(tj_mul_s_(i, 0.75), -1);
    tu_assert_error(NULL, "mul_s_", "cannot be cast", NULL);
    tj_clear_error();
    assert_int_equal(tj_add_(i, tj_full(TJ_F64, 0, NULL, 1)), -1);
    tj_clear_error();
    tj_tensor *flag = tj_full(TJ_BOOL, 1, (int64_t[]){2}, 1);
    assert_int_equal(tj_add_s_(flag, 1), -1);
    tu_assert_error(NULL, "add_s_", "destination bool[2]", NULL);
    tj_clear_error();
    assert_int_equal(tj_mul_(flag, tj_full(TJ_BOOL, 0, NULL, 0)), 0);
    assert_true(tj_get(flag, (int64_t[]){1}) == 0);
    assert_int_equal(tj_copy_(i, tj_full(TJ_F32, 0, NULL, 3.75)), 0);
    assert_true(tj_get(i, (int64_t[]){0}) == 3);
    /* errors: shapes, NULL */
    assert_int_equal(tj_add_(a, tj_ones(TJ_F32, 1, (int64_t[]){4})), -1);
    tu_assert_error(NULL, "add", "broadcast", NULL);
    tj_clear_error();
    assert_int_equal(tj_mul_(NULL, b), -1);
    tj_clear_error();
    tj_release(a);
    tj_release(i);
}

/* A running buffer (ctx) updated in place each call, then read. */
static tj_tensor *model_running(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *buf = ctx;
    tj_tensor *m = tj_mean(x[0], (int[]){0}, 1, false);
    if (tj_mul_s_(buf, 0.9) != 0 || tj_add_(buf, tj_mul_s(m, 0.1)) != 0)
        return NULL;
    return tj_sub(x[0], buf);
}

static void test_buffer_across_calls(void **state)
{
    (void)state;
    int64_t shape[] = {8};
    tj_tensor *buf = tj_keep(tj_zeros(TJ_F32, 1, shape));
    tj_tensor *twin = tj_keep(tj_zeros(TJ_F32, 1, shape));
    tj_compiled *c = tj_compile(model_running, buf, &(tj_compile_options){.name = "running"});
    for (int k = 0; k < 5; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 8});
        tu_assert_close(tj_call(c, &x, 1), model_running(twin, &x, 1), 1e-6, 1e-6);
        tu_assert_close(buf, twin, 1e-6, 1e-6);
    }
    tj_compiled_stats st;
    stats(c, &st);
    assert_int_equal(st.graphs, 1);   /* one graph, no break */
    assert_int_equal(st.breaks, 0);
    assert_int_equal(st.eager_calls, 0);
    tj_compiled_free(c);
    tj_release(buf);
    tj_release(twin);
}

/* Writes into the argument, in place: the caller sees them. */
static tj_tensor *model_arg(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    if (tj_mul_s_(x[0], 2.0) != 0 || tj_add_s_(x[0], 1.0) != 0)
        return NULL;
    return tj_exp(x[0]);
}

static void test_argument_mutation(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_arg, NULL, &(tj_compile_options){.name = "argw"});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 1, (int64_t[]){16}), *xe = tj_clone(x);
        tu_assert_close(tj_call(c, &x, 1), model_arg(NULL, &xe, 1), 1e-6, 1e-6);
        tu_assert_close(x, xe, 0, 0);
    }
    tj_compiled_stats st;
    stats(c, &st);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.eager_calls, 0);
    tj_compiled_free(c);
}

/* Writes into tensors whose elements share memory (expanded views, stride
 * 0), as eager does them: whole, refused (dst has several elements in one
 * location) on every call; through a slice of one row, every row that shares
 * its memory changes (a functional write-back of the whole argument wrote the
 * old rows over it, silently: the call now runs split at the write). The
 * argument, then a captured buffer. */
static tj_tensor *model_expanded_whole(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    return tj_mul_s_(x[0], 0.5) != 0 ? NULL : tj_mul_s(x[0], 1);
}

static tj_tensor *model_expanded_row(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *t = ctx ? ctx : x[0];
    if (tj_mul_s_(tj_slice(t, 0, 0, 1, 1), 5) != 0)
        return NULL;
    return tj_add(tj_mul_s(t, 1), tj_mul_s(x[0], 0));
}

static tj_tensor *expanded_rows(void)
{
    tj_tensor *row = tj_reshape(tj_arange(TJ_F64, 1, 4, 1), 2, (int64_t[]){1, 3});
    return tj_expand(row, 2, (int64_t[]){4, 3});
}

static void test_expanded_writes(void **state)
{
    (void)state;
    tj_compiled *w = tj_compile(model_expanded_whole, NULL, &(tj_compile_options){.name = "whole"});
    for (int k = 0; k < 2; k++) {
        tj_tensor *x = expanded_rows();
        tu_assert_error(model_expanded_whole(NULL, &x, 1), "copy_", "several elements in one memory location", NULL);
        tu_assert_error(tj_call(w, &x, 1), "copy_", "several elements in one memory location", NULL);
        tu_assert_close(x, expanded_rows(), 0, 0);
    }
    tj_compiled_free(w);
    tj_tensor *cbuf = tj_keep(expanded_rows()), *cbufe = tj_keep(expanded_rows());
    tj_compiled *r = tj_compile(model_expanded_row, NULL, &(tj_compile_options){.name = "row"});
    tj_compiled *cr = tj_compile(model_expanded_row, cbuf, &(tj_compile_options){.name = "row_buf"});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = expanded_rows(), *xe = expanded_rows();
        tu_assert_close(tj_call(r, &x, 1), model_expanded_row(NULL, &xe, 1), 0, 0);
        tu_assert_close(x, xe, 0, 0);
        tu_assert_close(tj_call(cr, &x, 1), model_expanded_row(cbufe, &xe, 1), 0, 0);
        tu_assert_close(cbuf, cbufe, 0, 0);
    }
    tj_compiled_free(r);
    tj_compiled_free(cr);
    tj_release(cbuf);
    tj_release(cbufe);
}

/* Overlapping as_strided windows (strides 1, 1) written in place: refused
 * like an expanded view, eagerly and compiled (the write let each memory
 * location take one window's value, and its gradient counted the others:
 * random programs, grad seed 2100714). Tensors whose elements have memory
 * of their own are written, interleaved strides among them. */
static tj_tensor *model_window_write(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx, (void)n;
    tj_tensor *w = tj_as_strided(tj_mul_s(x[0], 1), 2, (int64_t[]){3, 4}, (int64_t[]){1, 1}, 0);
    return tj_mul_s_(w, 0.5) == 0 ? w : NULL;
}

/* No elements of an expanded argument (rows of an f32[2,8,0]): nothing
 * shares a location, the write is allowed eagerly and compiled alike (after
 * a break, compiled refused it by the argument's strides: random programs,
 * autocast seed 2101161). ctx set: the break. */
static tj_tensor *model_empty_write(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    double m = ctx ? tj_item(tj_sum(x[0], NULL, 0, false)) : 0;   /* a break first */
    return tj_add_s_(tj_slice(x[0], 0, 0, 2, 1), 1) == 0 ? tj_mul_s(x[0], 2 + m) : NULL;
}

static void test_overlapping_writes(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_window_write, NULL, &(tj_compile_options){.name = "windows"});
    tj_tensor *x = tj_arange(TJ_F64, 0, 6, 1);
    tu_assert_error(model_window_write(NULL, &x, 1), "copy_", "several elements in one memory location", NULL);
    tu_assert_error(tj_call(c, &x, 1), "copy_", "several elements in one memory location", NULL);
    tj_compiled_free(c);
    for (int brk = 0; brk < 2; brk++) {
        void *ctx = brk ? &brk : NULL;
        c = tj_compile(model_empty_write, ctx, &(tj_compile_options){.name = "empty"});
        for (int k = 0; k < 2; k++) {
            tj_tensor *e = tj_expand(tj_zeros(TJ_F32, 3, (int64_t[]){1, 8, 0}), 3, (int64_t[]){2, 8, 0});
            tj_tensor *got = tj_call(c, &e, 1);
            if (!got)
                fail_msg("compiled, break %d: %s", brk, tj_last_error());
            tu_assert_close(got, model_empty_write(ctx, &e, 1), 0, 0);
        }
        tj_compiled_free(c);
    }
    static const struct { int64_t size[2], stride[2]; bool overlaps; } cases[] = {
        {{3, 4}, {1, 1}, true},  {{2, 3}, {3, 1}, false}, {{3, 2}, {1, 3}, false}, {{3, 2}, {2, 3}, false},
        {{2, 2}, {1, 1}, true},  {{4, 1}, {0, 1}, true},  {{1, 4}, {0, 1}, false}, {{2, 3}, {0, 0}, true},
        {{0, 3}, {0, 0}, false}, {{2, 2}, {4, 2}, false},
    };
    tj_tensor *buf = tj_zeros(TJ_F64, 1, (int64_t[]){16});
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tj_tensor *v = tj_as_strided(buf, 2, cases[k].size, cases[k].stride, 0);
        assert_non_null(v);
        if (rt_overlaps_itself(v) != cases[k].overlaps)
            fail_msg("case %zu: sizes [%lld, %lld], strides [%lld, %lld]: overlaps %d, want %d", k,
                     (long long)cases[k].size[0], (long long)cases[k].size[1], (long long)cases[k].stride[0],
                     (long long)cases[k].stride[1], !cases[k].overlaps, cases[k].overlaps);
        assert_int_equal(tj_add_s_(v, 1) != 0, cases[k].overlaps);
        tj_clear_error();
    }
}

/* tj_contiguous of a contiguous tensor is that tensor (eager): a write into
 * it reaches the argument, directly or through a leading slice; of a
 * transposed one it is a copy, and the argument stays. A trace gave a copy
 * every time (a symbolic tensor had no strides of its own), so the compiled
 * call left the argument unwritten, silently. */
static tj_tensor *model_contiguous_write(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *c = tj_contiguous(x[0]), *rows = tj_contiguous(tj_slice(x[1], 0, 0, 2, 1));
    if (tj_add_s_(c, 1) != 0 || tj_mul_s_(rows, 3) != 0)
        return NULL;
    return tj_add(tj_sum(c, NULL, 0, false), tj_sum(rows, NULL, 0, false));
}

static void test_contiguous_aliases(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_contiguous_write, NULL, &(tj_compile_options){.name = "contig"});
    for (int k = 0; k < 4; k++) {
        bool t = k % 2;   /* transposed arguments: contiguous copies */
        tj_tensor *a = tj_randn(TJ_F32, 2, (int64_t[]){3, 4}), *b = tj_randn(TJ_F32, 2, (int64_t[]){4, 3});
        tj_tensor *x[2] = {t ? tj_transpose(tj_clone(tj_transpose(a, 0, 1)), 0, 1) : tj_clone(a),
                           t ? tj_transpose(tj_clone(tj_transpose(b, 0, 1)), 0, 1) : tj_clone(b)};
        tj_tensor *xe[2] = {tj_clone(x[0]), tj_clone(x[1])};
        if (t)
            for (int i = 0; i < 2; i++)
                xe[i] = tj_transpose(tj_clone(tj_transpose(xe[i], 0, 1)), 0, 1);
        tu_assert_close(tj_call(c, x, 2), model_contiguous_write(NULL, xe, 2), 1e-5, 1e-5);
        tu_assert_close(x[0], xe[0], 0, 0);
        tu_assert_close(x[1], xe[1], 0, 0);
        tu_assert_close(x[0], t ? a : tj_add_s(a, 1), 0, 0);
    }
    tj_compiled_free(c);
}

/* A result the passes fold into an argument (x * 1, x + 0, a cast to x's
 * dtype) is a tensor of its own, as eagerly: the argument's write after it
 * must not reach it (the plan returned the argument itself, silently), nor
 * a view of such a result (int seed 410284: a squeeze of a cast, returned as
 * a view of the argument). A view of the argument does see the write. */
static tj_tensor *model_folded_result(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    int kind = *(const int *)ctx;
    tj_tensor *r = kind == 0   ? tj_mul_s(x[0], 1)
                   : kind == 1 ? tj_add_s(x[0], 0)
                   : kind == 2 ? tj_cast(x[0], TJ_F32)
                   : kind == 3 ? tj_reshape(x[0], 1, (int64_t[]){6})
                   : kind == 4 ? tj_unsqueeze(tj_cast(x[0], TJ_F32), 0)
                               : tj_transpose(tj_mul_s(x[0], 1), 0, 1);
    return tj_add_s_(x[0], 1) ? NULL : r;
}

static void test_folded_results(void **state)
{
    (void)state;
    for (int kind = 0; kind < 6; kind++) {
        tj_compiled *c = tj_compile(model_folded_result, &kind, &(tj_compile_options){.name = "folded"});
        for (int k = 0; k < 2; k++) {
            tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){2, 3}), *xe = tj_clone(x);
            tu_assert_close(tj_call(c, &x, 1), model_folded_result(&kind, &xe, 1), 0, 0);
            tu_assert_close(x, xe, 0, 0);
        }
        tj_compiled_free(c);
    }
}

/* Composites that are views in eager (narrow, t, movedim, and diagonal
 * where its reshape is a view): a write through one reaches the argument,
 * and one taken before a write into the argument reads the new values. A
 * trace recorded them as composites, values of their own: the argument was
 * never written, silently (diagonal: random programs, mixed seed 701516). */
static int model_composite_views(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)ctx;
    (void)n;
    (void)max;
    tj_tensor *t = tj_t(x[0]), *m = tj_movedim(x[0], (int[]){0}, (int[]){1}, 1);
    tj_tensor *d = tj_diagonal(x[0], 1, 0, 1), *dt = tj_diagonal(t, 0, 0, 1);
    if (tj_mul_s_(tj_narrow(x[0], 1, 1, 2), 0.5) != 0 || tj_add_s_(x[0], 1) != 0)
        return -1;
    out[0] = tj_mul_s(t, 1);
    out[1] = tj_mul_s(m, 1);
    out[2] = tj_mul_s(d, 1);    /* a permute, a reshape and a strided slice: a view */
    out[3] = tj_mul_s(dt, 1);   /* of the transpose: the reshape copies eagerly */
    return 4;
}

static void test_composite_views(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile_multi(model_composite_views, NULL, &(tj_compile_options){.name = "cviews"});
    for (int k = 0; k < 2; k++) {
        tj_tensor *x = tj_randn(TJ_F64, 2, (int64_t[]){2, 3}), *xe = tj_clone(x), *got[4], *want[4];
        assert_int_equal(tj_call_multi(c, &x, 1, got, 4), 4);
        assert_int_equal(model_composite_views(NULL, &xe, 1, want, 4), 4);
        for (int i = 0; i < 4; i++)
            tu_assert_close(got[i], want[i], 0, 0);
        tu_assert_close(x, xe, 0, 0);
    }
    tj_compiled_stats st;
    stats(c, &st);
    assert_int_equal(st.eager_calls, 0);
    tj_compiled_free(c);
}

/* Slices of a captured buffer assigned in place (a ring of rows). */
static tj_tensor *model_slices(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *buf = ctx;                                    /* [6, 4] */
    if (tj_copy_(tj_slice(buf, 0, 1, 3, 1), x[0]) != 0)      /* rows 1, 2 = x */
        return NULL;
    tj_tensor *col = tj_slice(tj_slice(buf, 0, 3, 6, 1), 1, -2, 4, 1);   /* rows 3..5, cols 2..3 */
    if (tj_add_s_(col, 1.0) != 0)
        return NULL;
    return tj_sum(buf, (int[]){1}, 1, false);
}

static void test_slices_in_place(void **state)
{
    (void)state;
    int64_t shape[] = {6, 4};
    tj_tensor *buf = tj_keep(tj_zeros(TJ_F32, 2, shape));
    tj_tensor *twin = tj_keep(tj_zeros(TJ_F32, 2, shape));
    tj_compiled *c = tj_compile(model_slices, buf, &(tj_compile_options){.name = "slices"});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){2, 4});
        tu_assert_close(tj_call(c, &x, 1), model_slices(twin, &x, 1), 1e-6, 1e-6);
        tu_assert_close(buf, twin, 0, 0);
    }
    tj_compiled_stats st;
    stats(c, &st);
    assert_int_equal(st.graphs, 1);   /* functionalized, not a break */
    assert_int_equal(st.breaks + st.split.graphs, 0);
    tj_compiled_free(c);
    tj_release(buf);
    tj_release(twin);
}

/* tile, repeat and repeat_interleave are new tensors, as in PyTorch: over
 * a dim of size 1 their decomposition (a reshape of an expand) gave eagerly
 * a stride-0 view of the input, which refused a write (random programs,
 * f32 seed 600305: eager refused where the compiled call wrote). */
static tj_tensor *model_repeats(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx, (void)n;
    tj_tensor *t = tj_tile(x[0], (int64_t[]){3}, 1), *r = tj_repeat(x[0], (int64_t[]){2, 1}, 2);
    tj_tensor *ri = tj_repeat_interleave(x[0], 2, 0);
    if (tj_mul_s_(t, 2) != 0 || tj_add_s_(r, 1) != 0 || tj_mul_s_(ri, -1) != 0)
        return NULL;
    return tj_add(tj_add(tj_sum(t, NULL, 0, false), tj_sum(r, NULL, 0, false)),
                  tj_add(tj_sum(ri, NULL, 0, false), tj_sum(x[0], NULL, 0, false)));
}

static void test_repeats_are_copies(void **state)
{
    (void)state;
    tj_tensor *x = tj_randn(TJ_F32, 1, (int64_t[]){1}), *xe = tj_clone(x);
    tj_tensor *want = model_repeats(NULL, &xe, 1);
    assert_non_null(want);
    tu_assert_close(xe, x, 0, 0);   /* the input is not written */
    tj_compiled *c = tj_compile(model_repeats, NULL, &(tj_compile_options){.name = "repeats"});
    tu_assert_close(tj_call(c, &x, 1), want, 1e-6, 1e-6);
    tu_assert_close(x, xe, 0, 0);
    tj_compiled_free(c);
}

/* The same copies returned from a call that then writes its argument: the
 * compiled results came back as views of the argument, the write reaching
 * them (random programs, mixed seed 148 of the generator with random
 * steps). So did a roll by a multiple of the size (a cat eagerly, which
 * simplify folds into a view: f32 seed 1901045). */
static int model_repeat_results(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)ctx, (void)n, (void)max;
    out[0] = tj_tile(x[0], (int64_t[]){1, 2}, 2);
    out[1] = tj_repeat(x[0], (int64_t[]){3, 1}, 2);
    out[2] = tj_repeat_interleave(x[0], 2, 0);
    out[3] = tj_squeeze(tj_roll(x[0], (int64_t[]){1}, (int[]){0}, 1), NULL, 0);
    return tj_mul_s_(tj_slice(x[0], 0, 0, 1, 1), 2) != 0 ? -1 : 4;
}

static void test_repeat_results(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile_multi(model_repeat_results, NULL, &(tj_compile_options){.name = "rep_res"});
    for (int k = 0; k < 2; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 1, (int64_t[]){1}), *xe = tj_clone(x), *want[4], *got[4];
        assert_int_equal(model_repeat_results(NULL, &xe, 1, want, 4), 4);
        assert_int_equal(tj_call_multi(c, &x, 1, got, 4), 4);
        for (int i = 0; i < 4; i++)
            tu_assert_close(got[i], want[i], 0, 0);
        tu_assert_close(x, xe, 0, 0);
    }
    tj_compiled_free(c);
}

/* Slice assignment into a value the call made (a zeros buffer filled by
 * rows, twice into one row; a clone's column block, and its first column
 * through its transpose; the whole buffer through an unsqueeze and a
 * squeeze), with views taken before the writes read after them:
 * functionalized, one graph (it was a graph break: writes into views were
 * followed only for slices of arguments and captured tensors). */
static int model_fill_rows(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)ctx, (void)n, (void)max;
    tj_tensor *buf = tj_zeros(TJ_F32, 2, (int64_t[]){4, 3}), *top = tj_slice(buf, 0, 0, 2, 1);
    tj_tensor *c = tj_clone(x[0]), *ct = tj_transpose(c, 0, 1);
    if (tj_copy_(tj_slice(buf, 0, 1, 3, 1), tj_slice(x[0], 0, 0, 2, 1)) != 0 ||
        tj_add_s_(tj_slice(buf, 0, 1, 2, 1), 10) != 0 ||
        tj_copy_(tj_slice(tj_slice(c, 1, 1, 3, 1), 0, 2, 4, 1), tj_full(TJ_F32, 0, NULL, -1)) != 0 ||
        tj_mul_s_(tj_slice(ct, 0, 0, 1, 1), 3) != 0 ||   /* c's first column, through c^T */
        tj_add_s_(tj_squeeze(tj_unsqueeze(buf, 0), (int[]){0}, 1), 0.25) != 0)
        return -1;
    out[0] = buf;
    out[1] = tj_mul_s(top, 2);
    out[2] = tj_add_s(ct, 0.5);
    out[3] = c;
    return 4;
}

static void test_fill_rows(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile_multi(model_fill_rows, NULL, &(tj_compile_options){.name = "fill_rows"});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 3}), *got[4], *want[4];
        assert_int_equal(tj_call_multi(c, &x, 1, got, 4), 4);
        assert_int_equal(model_fill_rows(NULL, &x, 1, want, 4), 4);
        for (int i = 0; i < 4; i++)
            tu_assert_close(got[i], want[i], 0, 0);
    }
    tj_compiled_stats st;
    stats(c, &st);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.breaks + st.eager_calls, 0);
    tj_compiled_free(c);
}

/* Views taken before an in-place write into their base read the written
 * values, as eager reads them through the storage (found by the split-call
 * work: the views kept their base's old value, silently): of an argument,
 * of a clone, of a captured buffer written whole and then again through a
 * slice (written twice), transposed and expanded. */
static tj_tensor *model_views_before(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *buf = ctx;                                           /* [4, 3] */
    tj_tensor *va = tj_transpose(tj_slice(x[0], 0, 0, 2, 1), 0, 1);   /* x[:2].T */
    tj_tensor *c = tj_clone(x[0]);
    tj_tensor *vc = tj_expand(tj_slice(c, 1, 1, 2, 1), 2, (int64_t[]){4, 3});
    tj_tensor *vb = tj_slice(buf, 0, 1, 3, 1);
    if (tj_add_s_(x[0], 1) != 0 || tj_mul_s_(c, 2) != 0 || tj_add_s_(buf, 0.5) != 0 ||
        tj_copy_(vb, tj_mul_s(vb, 3)) != 0 || tj_add_s_(vb, 1) != 0)
        return NULL;
    tj_tensor *r = tj_add(tj_sum(va, NULL, 0, false), tj_sum(vc, NULL, 0, false));
    return tj_add(r, tj_sum(vb, NULL, 0, false));
}

/* Through a reshape: eager's strides say whether it was a view (it reads the
 * write) or a copy (it does not); a graph break after the write (ctx set:
 * masked_select, so the call runs split) reads the view in the next piece
 * (int seed 400534: the split call failed where eager runs). */
static tj_tensor *model_view_reshaped(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *v = tj_reshape(tj_transpose(x[0], 0, 1), 1, (int64_t[]){6});   /* a copy in eager */
    tj_tensor *w = tj_reshape(x[0], 1, (int64_t[]){6});                        /* a view */
    tj_tensor *t = tj_neg(x[0]), *u = tj_flatten(t, 0, -1);                     /* a view of t */
    if (tj_add_s_(x[0], 1) != 0 || tj_mul_s_(t, 3) != 0)
        return NULL;
    if (ctx)
        u = tj_masked_select(u, tj_gt_s(u, -100.0));
    tj_tensor *r = tj_add(tj_sum(tj_mul(v, v), NULL, 0, false), tj_sum(tj_mul(w, w), NULL, 0, false));
    return tj_add(r, tj_sum(u, NULL, 0, false));
}

static void test_views_before_writes(void **state)
{
    (void)state;
    tj_tensor *buf = tj_keep(tj_ones(TJ_F32, 2, (int64_t[]){4, 3}));
    tj_tensor *twin = tj_keep(tj_ones(TJ_F32, 2, (int64_t[]){4, 3}));
    tj_compiled *c = tj_compile(model_views_before, buf, &(tj_compile_options){.name = "views"});
    tj_compiled *r = tj_compile(model_view_reshaped, NULL, &(tj_compile_options){.name = "reshaped"});
    tj_compiled *rs = tj_compile(model_view_reshaped, buf, &(tj_compile_options){.name = "reshaped2"});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 3}), *xe = tj_clone(x);
        tu_assert_close(tj_call(c, &x, 1), model_views_before(twin, &xe, 1), 1e-5, 1e-5);
        tu_assert_close(x, xe, 0, 0);
        tu_assert_close(buf, twin, 0, 0);
        tj_tensor *y = tj_randn(TJ_F32, 2, (int64_t[]){2, 3}), *ye = tj_clone(y);
        tu_assert_close(tj_call(r, &y, 1), model_view_reshaped(NULL, &ye, 1), 1e-5, 1e-5);
        tu_assert_close(y, ye, 0, 0);
        tu_assert_close(tj_call(rs, &y, 1), model_view_reshaped(buf, &ye, 1), 1e-5, 1e-5);
        tu_assert_close(y, ye, 0, 0);
    }
    tj_compiled_stats st;
    stats(c, &st);
    assert_int_equal(st.graphs, 1);   /* functionalized: the views replayed */
    assert_int_equal(st.eager_calls, 0);
    stats(r, &st);
    assert_int_equal(st.graphs, 1);   /* the reshapes' views followed, the copy not */
    assert_int_equal(st.breaks + st.eager_calls, 0);
    stats(rs, &st);
    assert_true(st.split.graphs >= 2);   /* pieces on both sides of the break */
    assert_int_equal(st.eager_calls, 0);
    tj_compiled_free(c);
    tj_compiled_free(r);
    tj_compiled_free(rs);
    tj_release(buf);
    tj_release(twin);
}

/* Twins: two clones of one value are one node of the trace, two storages
 * in eager. A write into one must not reach the other's views (they read
 * the written twin's value, silently, when writes were followed by node):
 * a slice of the unwritten twin read after the write, and a write into such
 * a slice (found by test_programs, int seed 301176, when such a write was a
 * graph break; functionalized now): one graph each. */
static tj_tensor *model_twins(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    bool split = ctx != NULL;
    tj_tensor *c = tj_clone(x[0]), *t = tj_clone(x[0]);
    tj_tensor *vc = tj_slice(c, 1, 0, 2, 1);
    if (tj_add_s_(c, 10) != 0)
        return NULL;
    tj_tensor *vt = tj_slice(t, 1, 0, 2, 1);
    if (split && tj_mul_s_(vt, 2) != 0)
        return NULL;
    tj_tensor *r = tj_add(tj_mul_s(tj_sum(vc, NULL, 0, false), 1000), tj_sum(vt, NULL, 0, false));
    return tj_add(r, tj_mul_s(tj_sum(t, NULL, 0, false), 1e6));
}

static void test_twin_views(void **state)
{
    (void)state;
    for (int split = 0; split < 2; split++) {
        void *ctx = split ? (void *)1 : NULL;
        tj_compiled *c = tj_compile(model_twins, ctx, &(tj_compile_options){.name = "twins"});
        for (int k = 0; k < 3; k++) {
            tj_tensor *x = tj_add_s(tj_arange(TJ_F64, 0, 6, 1), k);
            x = tj_reshape(x, 2, (int64_t[]){2, 3});
            tu_assert_close(tj_call(c, &x, 1), model_twins(ctx, &x, 1), 0, 0);
        }
        tj_compiled_stats st;
        stats(c, &st);
        assert_int_equal(st.eager_calls, 0);
        assert_int_equal(st.graphs, 1);
        assert_int_equal(st.breaks, 0);
        tj_compiled_free(c);
    }
}

/* A write into a transposed view: a graph break, eager semantics; the
 * calls run split at it (the write eagerly between two pieces). */
static tj_tensor *model_view_write(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *buf = ctx;
    if (tj_copy_(tj_transpose(buf, 0, 1), x[0]) != 0)
        return NULL;
    return tj_neg(buf);
}

static void test_other_view_write_breaks(void **state)
{
    (void)state;
    tj_tensor *buf = tj_keep(tj_zeros(TJ_F32, 2, (int64_t[]){3, 2}));
    tj_tensor *twin = tj_keep(tj_zeros(TJ_F32, 2, (int64_t[]){3, 2}));
    tj_compiled *c = tj_compile(model_view_write, buf, &(tj_compile_options){.name = "vw"});
    for (int k = 0; k < 2; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){2, 3});
        tu_assert_close(tj_call(c, &x, 1), model_view_write(twin, &x, 1), 0, 0);
        tu_assert_close(buf, twin, 0, 0);
    }
    tj_compiled_stats st;
    stats(c, &st);
    assert_int_equal(st.breaks, 0);
    assert_int_equal(st.eager_calls, 0);
    assert_int_equal(st.split.breaks, 1);
    tj_compiled_free(c);
    tj_release(buf);
    tj_release(twin);
}

/* Batch norm in training mode: running statistics written back per call. */
typedef struct bn {
    tj_tensor *mean, *var, *w, *b;
} bn;

static tj_tensor *model_bn(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    bn *p = ctx;
    return tj_relu(tj_batch_norm_train(x[0], p->mean, p->var, p->w, p->b, 0.1, 1e-5));
}

static void bn_init(bn *p)
{
    p->mean = tj_keep(tj_zeros(TJ_F32, 1, (int64_t[]){3}));
    p->var = tj_keep(tj_ones(TJ_F32, 1, (int64_t[]){3}));
    p->w = tj_keep(tj_full(TJ_F32, 1, (int64_t[]){3}, 1.5));
    p->b = tj_keep(tj_full(TJ_F32, 1, (int64_t[]){3}, 0.1));
}

static void bn_free(bn *p)
{
    tj_release(p->mean);
    tj_release(p->var);
    tj_release(p->w);
    tj_release(p->b);
}

static void test_batch_norm_running_stats(void **state)
{
    (void)state;
    bn p, q;
    bn_init(&p);
    bn_init(&q);
    tj_no_grad_begin();
    tj_compiled *c = tj_compile(model_bn, &p, &(tj_compile_options){.name = "bn_train"});
    for (int k = 0; k < 4; k++) {
        tj_tensor *x = tj_add_s(tj_randn(TJ_F32, 4, (int64_t[]){4, 3, 5, 5}), k);
        tu_assert_close(tj_call(c, &x, 1), model_bn(&q, &x, 1), 1e-5, 1e-5);
        tu_assert_close(p.mean, q.mean, 1e-5, 1e-6);
        tu_assert_close(p.var, q.var, 1e-5, 1e-6);
    }
    tj_compiled_stats st;
    stats(c, &st);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.eager_calls, 0);
    tj_compiled_free(c);
    tj_no_grad_end();
    bn_free(&p);
    bn_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_inplace_eager),       T(test_buffer_across_calls),     T(test_argument_mutation),
        T(test_slices_in_place),     T(test_other_view_write_breaks), T(test_batch_norm_running_stats),
        T(test_views_before_writes),   T(test_twin_views),              T(test_expanded_writes), T(test_overlapping_writes),
        T(test_contiguous_aliases),    T(test_folded_results),          T(test_composite_views),   T(test_fill_rows),       T(test_repeats_are_copies), T(test_repeat_results),
#undef T
    };
    return cmocka_run_group_tests_name("mutate", tests, NULL, NULL);
}
