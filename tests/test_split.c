/* test_split.c - graphs split at graph breaks (frontend/segment.c): the
 * pieces around a tj_item, a loop whose trip count is a tensor's value, a
 * value one path reads and another does not, a write before a break, a
 * random op in the middle, writes into views after a break (and into one of
 * two tensors the trace made one value). Compiled results are compared with eager ones;
 * the stats say which pieces ran as kernels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

static void assert_explain_has(tj_compiled *c, const char *what)
{
    if (getenv("SPLIT_DEBUG")) {
        char *t = tj_explain(c);
        fprintf(stderr, "%s\n", t);
        free(t);
    }
    char *text = tj_explain(c);
    assert_non_null(text);
    if (!strstr(text, what))
        fail_msg("explain lacks \"%s\":\n%s", what, text);
    free(text);
}

static bool jit(void)
{
    const char *b = getenv("TJIT_BACKEND");
    return !(b && !strcmp(b, "eager"));
}

/* Three pointwise chains with two value reads between them. */
static tj_tensor *model_two_breaks(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *a = tj_add_s(tj_mul_s(tj_exp(x[0]), 0.5), 1.0);
    double s = tj_item(tj_mean(a, NULL, 0, false));            /* break 1 */
    tj_tensor *b = tj_mul_s(tj_tanh(tj_sub_s(a, s)), 2.0);
    double m = tj_item(tj_amax(b, NULL, 0, false));           /* break 2 */
    return tj_div_s(tj_add(tj_sigmoid(b), a), m + 1.0);
}

static void test_two_breaks_three_graphs(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_two_breaks, NULL, &(tj_compile_options){.name = "two"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){16, 64});
    for (int k = 0; k < 3; k++) {
        tj_tensor *y = tj_call(c, &x, 1);
        tu_assert_close(y, model_two_breaks(NULL, &x, 1), 1e-5, 1e-5);
    }
    tj_compiled_stats st;
    assert_explain_has(c, "split");
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.calls, 3);
    assert_int_equal(st.eager_calls, 0);
    assert_int_equal(st.split.graphs, 3);
    assert_int_equal(st.split.breaks, 2);
    assert_int_equal(st.split.runs, 6);            /* calls 2 and 3, three pieces each */
    assert_int_equal((int)st.split.executor_runs, 3);   /* the first call's new pieces */
    assert_int_equal((int)st.split.late, 0);
    if (jit()) {
        assert_int_equal(st.split.compiled, 3);    /* each piece ran as kernels */
        assert_true(st.split.kernels >= 3);
    }
    assert_explain_has(c, "split at graph breaks");
    assert_explain_has(c, "3 compiled pieces (2 end at a break)");
    assert_explain_has(c, "then graph break: tj_item reads values at");
    assert_explain_has(c, "test_split.c:");
    assert_explain_has(c, "ends at the return");
    tj_compiled_free(c);
}

/* The trip count is a tensor's value: each count is another last piece. */
static tj_tensor *model_loop(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    int trips = (int)tj_item(tj_sum(x[1], NULL, 0, false));
    tj_tensor *y = x[0];
    for (int k = 0; k < trips; k++)
        y = tj_add_s(tj_mul_s(tj_tanh(y), 0.9), 0.1);
    return y;
}

static void test_loop_trip_count(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_loop, NULL, &(tj_compile_options){.name = "loop"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 32});
    int counts[] = {2, 3, 2, 3, 0};
    for (int k = 0; k < 5; k++) {
        tj_tensor *args[2] = {x, tj_full(TJ_F32, 1, (int64_t[]){2}, counts[k] / 2.0)};
        tj_tensor *y = tj_call(c, args, 2);
        tu_assert_close(y, model_loop(NULL, args, 2), 1e-6, 1e-6);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.eager_calls, 0);
    /* the sum before the break; the loop of 2, of 3 (of 0: no op, no piece) */
    assert_int_equal(st.split.graphs, 3);
    assert_int_equal(st.split.breaks, 1);
    assert_int_equal((int)st.split.executor_runs, 3);
    if (jit())
        assert_int_equal(st.split.compiled, 3);
    tj_compiled_free(c);
}

/* One path reads a value of the first piece that the other does not. */
static tj_tensor *model_paths(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    double flag = tj_item(x[1]);
    tj_tensor *a = tj_exp(x[0]);
    tj_tensor *b = tj_mul_s(a, 2.0);
    double s = tj_item(tj_sum(b, NULL, 0, false));
    return flag > 0 ? tj_add_s(a, s) : tj_mul_s(b, s);
}

static void test_late_value(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_paths, NULL, &(tj_compile_options){.name = "paths"});
    tj_tensor *x = tj_mul_s(tj_randn(TJ_F32, 1, (int64_t[]){50}), 0.1);
    double flags[] = {0, 1, 1, 0, 1};
    for (int k = 0; k < 5; k++) {
        tj_tensor *args[2] = {x, tj_full(TJ_F32, 0, NULL, flags[k])};
        tu_assert_close(tj_call(c, args, 2), model_paths(NULL, args, 2), 1e-5, 1e-5);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.eager_calls, 0);
    /* the second call read exp(x), which the piece did not output: recomputed
     * once, then the piece outputs it */
    assert_int_equal((int)st.split.late, 1);
    tj_compiled_free(c);
}

/* An argument written before the break, and a path after it that reads a
 * value of the first piece which the compiled piece does not output: the
 * piece is recomputed (late) from the argument's value before the write,
 * not after it (found by test_programs). */
static tj_tensor *model_late_write(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    if (tj_add_s_(x[1], 1) != 0)
        return NULL;
    tj_tensor *a = tj_mul(x[0], x[1]);
    tj_tensor *b = tj_add_s(a, 0.5);
    double flag = tj_item(x[2]);
    return flag > 0 ? tj_mul_s(b, 2) : tj_neg(a);
}

/* Calls model compiled and eagerly with the second argument written, the
 * flag choosing the path after the break: the paths that read a value of
 * the first piece late must match eager, the written argument too. */
static void check_late(tj_model_fn model, const char *name)
{
    tj_compiled *c = tj_compile(model, NULL, &(tj_compile_options){.name = name});
    int64_t shape[] = {3, 5};
    tj_tensor *x = tj_randn(TJ_F32, 2, shape);
    double flags[] = {1, 1, 0, 0, 1};
    for (int k = 0; k < 5; k++) {
        tj_tensor *yc = tj_randn(TJ_F32, 2, shape), *ye = tj_clone(yc);
        tj_tensor *flag = tj_full(TJ_F32, 0, NULL, flags[k]);
        tj_tensor *got = tj_call(c, (tj_tensor *[]){x, yc, flag}, 3);
        tu_assert_close(got, model(NULL, (tj_tensor *[]){x, ye, flag}, 3), 1e-6, 1e-6);
        tu_assert_close(yc, ye, 0, 0);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.eager_calls, 0);
    assert_true(st.split.late >= 1);
    tj_compiled_free(c);
}

static void test_late_value_after_write(void **state)
{
    (void)state;
    check_late(model_late_write, "late_write");
}

/* The same with the write after the break, into an argument that a view
 * of an earlier piece reads (run eagerly at a break of its own): the late
 * recompute read the written argument (random programs, autocast seed
 * 530623). */
static tj_tensor *model_late_view_write(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *v = tj_slice(x[1], 0, 0, 2, 1);
    tj_tensor *a = tj_mul(x[0], x[1]);
    tj_tensor *b = tj_add_s(a, 0.5);
    double flag = tj_item(x[2]);
    if (tj_mul_s_(tj_slice(x[1], 0, 1, 3, 1), 2) != 0)   /* v, live, sees it */
        return NULL;
    return tj_add(flag > 0 ? tj_mul_s(b, 2) : tj_neg(a), tj_sum(v, NULL, 0, false));
}

static void test_late_value_after_view_write(void **state)
{
    (void)state;
    check_late(model_late_view_write, "late_view");
}

/* A captured buffer written before the break: the write lands before the
 * eager code reads it, every call. */
static tj_tensor *model_buffer(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *buf = ctx;
    if (tj_copy_(buf, tj_add(buf, x[0])) != 0)
        return NULL;
    double s = tj_item(tj_sum(buf, NULL, 0, false));
    return tj_mul_s(tj_sin(x[0]), s);
}

static void test_buffer_write_before_break(void **state)
{
    (void)state;
    int64_t shape[] = {4, 8};
    tj_tensor *buf = tj_keep(tj_zeros(TJ_F32, 2, shape));
    tj_tensor *twin = tj_keep(tj_zeros(TJ_F32, 2, shape));
    tj_tensor *x = tj_randn(TJ_F32, 2, shape);
    tj_compiled *c = tj_compile(model_buffer, buf, &(tj_compile_options){.name = "buffer"});
    for (int k = 0; k < 4; k++) {
        tj_tensor *y = tj_call(c, &x, 1);
        tu_assert_close(y, model_buffer(twin, &x, 1), 1e-5, 1e-5);
        tu_assert_close(buf, twin, 1e-6, 1e-6);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.eager_calls, 0);
    assert_explain_has(c, "split");
    assert_int_equal(st.split.graphs, 2);
    tj_compiled_free(c);
    tj_release(buf);
    tj_release(twin);
}

/* Writes on both sides of a break: the argument before it, the argument and
 * a buffer after it (a split call's second piece records writes again; it
 * crashed, its write list freed and its capacity kept). */
static tj_tensor *model_writes_twice(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *buf = ctx;
    if (tj_add_s_(x[0], 1) != 0)
        return NULL;
    double s = tj_item(tj_sum(x[0], NULL, 0, false));
    if (tj_mul_s_(x[0], 2) != 0 || tj_copy_(buf, tj_add_s(buf, s)) != 0)
        return NULL;
    return tj_mul_s(x[0], s);
}

static void test_writes_in_two_pieces(void **state)
{
    (void)state;
    int64_t shape[] = {3, 5};
    tj_tensor *buf = tj_keep(tj_zeros(TJ_F32, 2, shape)), *twin = tj_keep(tj_zeros(TJ_F32, 2, shape));
    tj_compiled *c = tj_compile(model_writes_twice, buf, &(tj_compile_options){.name = "twice"});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_mul_s(tj_randn(TJ_F32, 2, shape), 0.1), *xe = tj_clone(x);
        tu_assert_close(tj_call(c, &x, 1), model_writes_twice(twin, &xe, 1), 1e-5, 1e-5);
        tu_assert_close(x, xe, 0, 0);
        tu_assert_close(buf, twin, 1e-5, 1e-5);
    }
    assert_explain_has(c, "split");
    tj_compiled_free(c);
    tj_release(buf);
    tj_release(twin);
}

/* Dropout in training mode after a tj_item break runs eagerly on values,
 * with no break of its own (in a graph without breaks it is traced:
 * tests/test_random_graph.c). */
static tj_tensor *model_dropout(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *r = tj_relu(tj_add_s(x[0], 0.25));
    double s = tj_item(tj_amax(r, NULL, 0, false));
    tj_tensor *h = tj_dropout(r, 0.5, true);
    return tj_mul_s(tj_exp(h), s);
}

static void test_random_op_in_the_middle(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_dropout, NULL, &(tj_compile_options){.name = "drop"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    /* the first call traces the model first */
    assert_non_null(tj_call(c, &x, 1));
    for (int k = 0; k < 3; k++) {
        tj_manual_seed(100 + (uint64_t)k);
        tj_tensor *y = tj_call(c, &x, 1);
        tj_manual_seed(100 + (uint64_t)k);
        tu_assert_close(y, model_dropout(NULL, &x, 1), 1e-6, 1e-6);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.eager_calls, 0);
    assert_int_equal(st.split.graphs, 2);
    assert_int_equal(st.split.breaks, 1);
    assert_explain_has(c, "4 random ops run eagerly");
    tj_compiled_free(c);
}

/* A piece whose values nothing reads (a dead exp, flushed because the
 * dropout after it reads an argument's values, in a call split at a later
 * tj_item): the piece kept the graph's
 * outputs without their slots, and the next call read them uninitialised
 * (random programs, f32 seed 1102318 of the generator with random steps). */
static tj_tensor *model_dead_piece(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    tj_exp(x[0]);
    tj_tensor *d = tj_dropout(x[0], 0.5, true);
    return tj_mul_s(d, tj_item(tj_amax(d, NULL, 0, false)));
}

static void test_dead_piece(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_dead_piece, NULL, &(tj_compile_options){.name = "dead"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){8, 16});
    for (int k = 0; k < 4; k++) {
        tj_manual_seed(40 + (uint64_t)k);
        tj_tensor *y = tj_call(c, &x, 1);
        if (!y)
            fail_msg("call %d: %s", k, tj_last_error());
        tj_manual_seed(40 + (uint64_t)k);
        tu_assert_close(y, model_dead_piece(NULL, &x, 1), 0, 0);
    }
    assert_explain_has(c, "piece 1 (graph 1 of a call): 1 nodes, 1 inputs, 0 outputs");
    tj_compiled_free(c);
}

/* Several results across a break, one of them an argument. */
static int model_multi(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)ctx;
    (void)n;
    (void)max;
    tj_tensor *a = tj_neg(x[0]);
    double s = tj_item(tj_amin(a, NULL, 0, false));
    out[0] = tj_add_s(a, s);
    out[1] = a;
    out[2] = x[0];
    return 3;
}

static void test_results_across_break(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile_multi(model_multi, NULL, &(tj_compile_options){.name = "multi"});
    tj_tensor *x = tj_randn(TJ_F32, 1, (int64_t[]){10});
    for (int k = 0; k < 3; k++) {
        tj_tensor *got[3], *want[3];
        assert_int_equal(tj_call_multi(c, &x, 1, got, 3), 3);
        assert_int_equal(model_multi(NULL, &x, 1, want, 3), 3);
        for (int i = 0; i < 3; i++)
            tu_assert_close(got[i], want[i], 1e-6, 1e-6);
    }
    tj_compiled_free(c);
}

/* After a break, writes into views of a clone (a slice, then a slice of its
 * transpose) while another view of it is held, and into a transposed
 * argument: a split call breaks at each and writes eagerly, so the base, the
 * held view and the argument show the writes as in eager. */
static int model_view_write(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)ctx;
    (void)n;
    (void)max;
    tj_tensor *a = tj_exp(x[0]);
    double s = tj_item(tj_amax(a, NULL, 0, false));   /* break */
    tj_tensor *r = tj_clone(tj_mul_s(a, 1.0 / s));
    tj_tensor *rows = tj_slice(r, 0, 1, 3, 1);       /* a view the program holds */
    if (tj_mul_s_(tj_slice(r, 1, 0, 2, 1), -2.0) != 0)
        return -1;
    if (tj_add_s_(tj_slice(tj_transpose(r, 0, 1), 0, 5, 6, 1), 10.0) != 0)
        return -1;
    if (tj_add_s_(tj_slice(tj_transpose(x[1], 0, 1), 0, 0, 1, 1), 1.0) != 0)
        return -1;
    out[0] = tj_add_s(r, 1.0);
    out[1] = tj_mul_s(rows, 3.0);
    out[2] = tj_sum(x[1], NULL, 0, false);
    return 3;
}

static void test_view_write_after_break(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile_multi(model_view_write, NULL, &(tj_compile_options){.name = "vw"});
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 6});
        tj_tensor *y0 = tj_randn(TJ_F32, 2, (int64_t[]){3, 5});
        tj_tensor *ea[2] = {x, tj_clone(y0)}, *ca[2] = {x, tj_clone(y0)};
        tj_tensor *got[3], *want[3];
        assert_int_equal(model_view_write(NULL, ea, 2, want, 3), 3);
        if (tj_call_multi(c, ca, 2, got, 3) != 3)
            fail_msg("compiled: %s", tj_last_error());
        for (int i = 0; i < 3; i++)
            tu_assert_close(got[i], want[i], 1e-6, 1e-6);
        tu_assert_close(ca[1], ea[1], 0, 0);   /* the argument, written through a view */
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.eager_calls, 0);
    assert_explain_has(c, "into a view");
    if (jit())
        assert_true(st.split.compiled >= 1);
    tj_compiled_free(c);
}

/* The shape of random program 100177 (mixed mode): a copy of a strided
 * argument and a clone of it are one value of the trace (the same op on the
 * same input), but two tensors eagerly. A write into the clone must not reach
 * the copy nor a view of it; it must reach the views of the clone. *mode: 0
 * the write (rows 0 and 2, a view no trace can write) is the call's only
 * break: a first trace meets it, later calls split there; 1 the same after a
 * tj_item that gave both tensors one value of the piece before; 2 a write
 * into rows 0..1 after the tj_item (a slice of a concrete tensor: written
 * back when the piece ends), the view of rows 1..3 returned as it is (a
 * trace reads a view made before a write into its base as it was; see
 * docs/tracing.md). */
static int model_twins(void *ctx, tj_tensor *const *x, int n, tj_tensor **out, int max)
{
    (void)n;
    (void)max;
    int mode = *(const int *)ctx;
    tj_tensor *a = tj_contiguous(x[0]);   /* x[0] is strided: a copy */
    tj_tensor *r = tj_clone(x[0]);
    tj_tensor *av = tj_transpose(a, 0, 1), *rv = tj_slice(r, 0, 1, 4, 1);
    double s = mode ? tj_item(tj_amax(x[1], NULL, 0, false)) : 1.0;
    if (tj_mul_s_(mode == 2 ? tj_slice(r, 0, 0, 2, 1) : tj_slice(r, 0, 0, 4, 2), -2.0 * s) != 0)
        return -1;
    out[0] = tj_add(tj_sum(a, NULL, 0, false), x[1]);
    out[1] = tj_mul_s(av, 3.0);
    out[2] = mode == 2 ? rv : tj_mul_s(rv, 3.0);   /* 2: read in the piece, it would be stale */
    out[3] = tj_add_s(r, 1.0);
    out[4] = a;
    return 5;
}

static void test_view_write_twins(void **state)
{
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        tj_compiled *c = tj_compile_multi(model_twins, &mode, &(tj_compile_options){.name = "twins"});
        for (int k = 0; k < 3; k++) {
            tj_tensor *big = tj_randn(TJ_F64, 2, (int64_t[]){62, 1});
            tj_tensor *x[2] = {tj_slice(big, 0, 0, 62, 2), tj_randn(TJ_F64, 1, (int64_t[]){1})};
            tj_tensor *got[5], *want[5];
            assert_int_equal(model_twins(&mode, x, 2, want, 5), 5);
            if (tj_call_multi(c, x, 2, got, 5) != 5)
                fail_msg("compiled, mode %d: %s", mode, tj_last_error());
            for (int i = 0; i < 5; i++)
                tu_assert_close(got[i], want[i], 1e-12, 1e-12);
        }
        tj_compiled_stats st;
        assert_int_equal(tj_compiled_stats_get(c, &st), 0);
        assert_int_equal(st.eager_calls, 0);
        assert_explain_has(c, mode == 2 ? "tj_item" : "into a view");
        tj_compiled_free(c);
    }
}

/* Random programs mixed seed 900607 and f64 seed 904012: a view of an
 * argument taken before a break (a value of its own after the first piece),
 * written in place after it, then the argument itself written: the second
 * write read the argument as it was before the first (arg 5: 5 * 3 + 1
 * eagerly, 6 compiled). */
static tj_tensor *model_view_then_base(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *v = tj_unsqueeze(x[0], 0);
    tj_tensor *s = tj_sum(tj_nonzero(tj_gt_s(x[1], 0)), NULL, 0, false);   /* the break */
    if (tj_mul_s_(v, 3) != 0 || tj_add_s_(x[0], 1) != 0)
        return NULL;
    return tj_add(tj_cast(tj_abs(v), TJ_F32), tj_cast(s, TJ_F32));
}

static void test_view_write_then_base(void **state)
{
    (void)state;
    tj_dtype dts[] = {TJ_I32, TJ_F32};
    for (int d = 0; d < 2; d++) {
        tj_compiled *c = tj_compile(model_view_then_base, NULL, &(tj_compile_options){.name = "view_base"});
        for (int k = 0; k < 3; k++) {
            tj_tensor *ca[2] = {tj_full(dts[d], 0, NULL, 5 + k), tj_full(TJ_F32, 0, NULL, 1)};
            tj_tensor *ea[2] = {tj_clone(ca[0]), ca[1]};
            tj_tensor *got = tj_call(c, ca, 2);
            if (!got)
                fail_msg("compiled: %s", tj_last_error());
            tu_assert_close(got, model_view_then_base(NULL, ea, 2), 0, 0);
            tu_assert_close(ca[0], ea[0], 0, 0);
        }
        tj_compiled_stats st;
        assert_int_equal(tj_compiled_stats_get(c, &st), 0);
        assert_int_equal(st.eager_calls, 0);
        assert_explain_has(c, "into a view");
        tj_compiled_free(c);
    }
}

/* tj_detach of a traced value, written, then both read; with a break (ctx
 * set) between: the detached header was not tracked by the split call, so
 * the next piece took it (still symbolic) as a concrete input and crashed
 * (random programs, f64 seed 1600080); with or without, the write through it
 * was not seen by the value it shares storage with (compiled 5 where eager
 * gives 6 per element at x = 0). */
static tj_tensor *model_detach(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *y = tj_exp(x[0]), *d = tj_detach(y);
    double m = ctx ? tj_item(tj_amax(y, NULL, 0, false)) : 2;   /* the break */
    if (tj_add_s_(d, 1) != 0)
        return NULL;
    return tj_add(tj_mul_s(tj_clone(d), m), y);
}

static void test_detach_written(void **state)
{
    (void)state;
    for (int brk = 0; brk < 2; brk++) {
        void *ctx = brk ? &brk : NULL;
        tj_compiled *c = tj_compile(model_detach, ctx, &(tj_compile_options){.name = "detach"});
        for (int k = 0; k < 3; k++) {
            tj_tensor *x = k ? tj_randn(TJ_F32, 1, (int64_t[]){31}) : tj_zeros(TJ_F32, 1, (int64_t[]){31});
            tj_tensor *got = tj_call(c, &x, 1);
            if (!got)
                fail_msg("compiled call %d: %s", k, tj_last_error());
            tu_assert_close(got, model_detach(ctx, &x, 1), 1e-6, 1e-6);
        }
        tj_compiled_stats st;
        assert_int_equal(tj_compiled_stats_get(c, &st), 0);
        assert_int_equal(st.eager_calls, 0);
        /* with the break, the write into d (a view of y then) is one more */
        assert_int_equal(st.split.breaks, brk ? 2 : 0);
        tj_compiled_free(c);
    }
}

/* After a break an argument is concrete; written in place, its storage
 * holds the old values until the piece's write-back. A random op on it (it
 * ran eagerly on the storage: random programs, f64 seed 1600945), tj_item
 * of it and a clone of its tj_detach (a new header over the old storage:
 * f64 seed 1801468) read the written values. ctx: 0 dropout, 1 tj_item,
 * 2 detach. */
static tj_tensor *model_read_written(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    double m = tj_item(tj_amax(x[1], NULL, 0, false));   /* the break */
    if (tj_add_s_(x[0], 1) != 0)
        return NULL;
    if (*(int *)ctx == 0)
        return tj_mul_s(tj_dropout(x[0], 0.4, true), m);
    if (*(int *)ctx == 2)
        return tj_mul_s(tj_clone(tj_detach(x[0])), m);
    return tj_mul_s(x[0], tj_item(x[0]) + m);
}

static void test_read_written_arg(void **state)
{
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        tj_compiled *c = tj_compile(model_read_written, &mode, &(tj_compile_options){.name = "read_written"});
        for (int k = 0; k < 3; k++) {
            int64_t n = mode == 1 ? 1 : 64;
            tj_tensor *ca[2] = {tj_full(TJ_F64, 1, &n, 2.0 + k), tj_full(TJ_F64, 0, NULL, 1.5)};
            tj_tensor *ea[2] = {tj_clone(ca[0]), ca[1]};
            tj_manual_seed(7 + (uint64_t)k);
            tj_tensor *got = tj_call(c, ca, 2);
            if (!got)
                fail_msg("mode %d, call %d: %s", mode, k, tj_last_error());
            tj_manual_seed(7 + (uint64_t)k);
            tu_assert_close(got, model_read_written(&mode, ea, 2), 0, 0);
            tu_assert_close(ca[0], ea[0], 0, 0);
        }
        tj_compiled_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_two_breaks_three_graphs), T(test_loop_trip_count),         T(test_late_value),
        T(test_buffer_write_before_break), T(test_random_op_in_the_middle), T(test_results_across_break),
        T(test_late_value_after_write), T(test_late_value_after_view_write),   T(test_writes_in_two_pieces),
        T(test_view_write_after_break), T(test_view_write_twins), T(test_view_write_then_base), T(test_dead_piece),
        T(test_detach_written), T(test_read_written_arg),
#undef T
    };
    return cmocka_run_group_tests_name("split", tests, NULL, NULL);
}
