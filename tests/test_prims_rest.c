/* test_prims_rest.c - the remaining PrimTorch prims of issue 11 (ops.def's
 * "remaining prims" block): xor_sum, as_strided, empty_strided, against
 * hand-computed values, eager and compiled, with their errors and gradients,
 * and as_strided's views of storages x is not all of against PyTorch
 * (tests/golden/strided, scripts/golden/strided.py). They have no OpInfo
 * samples (tests/golden/opinfo/known.txt exempts them). */
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

static tj_tensor *vec(tj_dtype dt, int64_t n, const double *v)
{
    return tu_tensor(dt, 1, (int64_t[]){n}, v);
}

/* ---- xor_sum ---- */

static void test_xor_sum_values(void **state)
{
    (void)state;
    /* 1 ^ 2 ^ 3 = 0, 5 ^ 1 = 4, 7 ^ 7 ^ 7 = 7 */
    tu_assert_close(tj_xor_sum(vec(TJ_I64, 3, (double[]){1, 2, 3}), NULL, 0, false),
                    tj_scalar(TJ_I64, 0), 0, 0);
    tj_tensor *r = tj_xor_sum(vec(TJ_I32, 2, (double[]){5, 1}), NULL, 0, false);
    assert_non_null(r);
    assert_int_equal(tj_dtype_of(r), TJ_I32);
    assert_int_equal(tj_ndim(r), 0);
    assert_int_equal((int64_t)tj_item(r), 4);
    /* negative i8 values keep their bits: -1 ^ 3 = -4 (0xff ^ 0x03 = 0xfc) */
    r = tj_xor_sum(vec(TJ_I8, 2, (double[]){-1, 3}), NULL, 0, false);
    assert_int_equal(tj_dtype_of(r), TJ_I8);
    assert_int_equal((int64_t)tj_item(r), -4);
    /* bool: the parity of the trues */
    r = tj_xor_sum(vec(TJ_BOOL, 3, (double[]){1, 1, 1}), NULL, 0, false);
    assert_int_equal(tj_dtype_of(r), TJ_BOOL);
    assert_int_equal((int64_t)tj_item(r), 1);
    r = tj_xor_sum(vec(TJ_BOOL, 4, (double[]){1, 0, 1, 0}), NULL, 0, false);
    assert_int_equal((int64_t)tj_item(r), 0);
}

static void test_xor_sum_dims(void **state)
{
    (void)state;
    /* [[1, 2, 4], [8, 3, 12]] */
    tj_tensor *x = tu_tensor(TJ_I64, 2, (int64_t[]){2, 3}, (double[]){1, 2, 4, 8, 3, 12});
    tu_assert_close(tj_xor_sum(x, (int[]){0}, 1, false), vec(TJ_I64, 3, (double[]){9, 1, 8}), 0, 0);
    tu_assert_close(tj_xor_sum(x, (int[]){1}, 1, false), vec(TJ_I64, 2, (double[]){7, 7}), 0, 0);
    tu_assert_close(tj_xor_sum(x, (int[]){-1}, 1, true),
                    tu_tensor(TJ_I64, 2, (int64_t[]){2, 1}, (double[]){7, 7}), 0, 0);
    tu_assert_close(tj_xor_sum(x, (int[]){0, 1}, 2, true),
                    tu_tensor(TJ_I64, 2, (int64_t[]){1, 1}, (double[]){0}), 0, 0);
    /* a transposed (strided) input */
    tj_tensor *xt = tj_transpose(x, 0, 1);
    tu_assert_close(tj_xor_sum(xt, (int[]){1}, 1, false), vec(TJ_I64, 3, (double[]){9, 1, 8}), 0, 0);
    /* 3-D over the middle dim: [[[1,2],[4,8]],[[3,3],[5,6]]] -> [[5,10],[6,5]] */
    tj_tensor *y = tu_tensor(TJ_U8, 3, (int64_t[]){2, 2, 2}, (double[]){1, 2, 4, 8, 3, 3, 5, 6});
    tu_assert_close(tj_xor_sum(y, (int[]){1}, 1, false),
                    tu_tensor(TJ_U8, 2, (int64_t[]){2, 2}, (double[]){5, 10, 6, 5}), 0, 0);
}

static void test_xor_sum_empty(void **state)
{
    (void)state;
    tj_tensor *e = tj_zeros(TJ_I32, 2, (int64_t[]){0, 3});
    tu_assert_close(tj_xor_sum(e, NULL, 0, false), tj_scalar(TJ_I32, 0), 0, 0);
    tu_assert_close(tj_xor_sum(e, (int[]){0}, 1, false), tj_zeros(TJ_I32, 1, (int64_t[]){3}), 0, 0);
    tj_tensor *r = tj_xor_sum(e, (int[]){1}, 1, false);
    assert_non_null(r);
    assert_int_equal(tj_numel(r), 0);
}

static void test_xor_sum_errors(void **state)
{
    (void)state;
    tu_assert_error(tj_xor_sum(vec(TJ_F32, 2, (double[]){1, 2}), NULL, 0, false), "xor_sum",
                    "needs an integer or bool input, got f32", NULL);
    tu_assert_error(tj_xor_sum(vec(TJ_F64, 2, (double[]){1, 2}), NULL, 0, false), "xor_sum", "f64", NULL);
    tu_assert_error(tj_xor_sum(vec(TJ_I64, 2, (double[]){1, 2}), (int[]){3}, 1, false), "xor_sum", NULL);
    assert_null(tj_xor_sum(NULL, NULL, 0, false));
}

static tj_tensor *model_xor(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    tj_tensor *x = tj_add_s(args[0], 3);   /* something to fuse around it */
    return tj_mul_s(tj_xor_sum(x, (int[]){1}, 1, false), 2);
}

static void test_xor_sum_compiled(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_xor, NULL, &(tj_compile_options){.name = "xor"});
    tj_tensor *x = tu_tensor(TJ_I64, 2, (int64_t[]){2, 4}, (double[]){1, 2, 3, 4, 9, 17, 33, 65});
    for (int k = 0; k < 2; k++) {
        tj_tensor *got = tj_call(c, &x, 1);
        assert_non_null(got);
        tu_assert_close(got, model_xor(NULL, &x, 1), 0, 0);
        /* (4^5^6^7) * 2 = 0, (12^20^36^68) * 2 = 2 * 120 */
        tu_assert_close(got, vec(TJ_I64, 2, (double[]){0, 240}), 0, 0);
    }
    char *why = tj_explain(c);   /* add, xor_sum and mul: one kernel */
    assert_non_null(why);
    if (!strstr(why, "1 kernel, 0 eager calls"))
        fail_msg("xor_sum did not compile to one kernel:\n%s", why);
    free(why);
    tj_compiled_free(c);
}

static void test_xor_sum_no_grad(void **state)
{
    (void)state;
    tj_tensor *x = tj_keep(tj_ones(TJ_F32, 1, (int64_t[]){3}));
    assert_int_equal(tj_requires_grad(x, true), 0);
    /* an integer result: nothing to differentiate (the float input is refused anyway) */
    assert_null(tj_xor_sum(x, NULL, 0, false));
    tj_release(x);
}


/* ---- as_strided ---- */

static tj_tensor *ar(tj_dtype dt, int64_t n) { return tj_arange(dt, 0, (double)n, 1); }

static void test_as_strided_values(void **state)
{
    (void)state;
    tj_tensor *x = ar(TJ_F32, 6);
    /* sliding windows of 3 with step 1 */
    tj_tensor *w = tj_as_strided(x, 2, (int64_t[]){4, 3}, (int64_t[]){1, 1}, 0);
    tu_assert_close(w, tu_tensor(TJ_F32, 2, (int64_t[]){4, 3},
                                 (double[]){0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5}), 0, 0);
    assert_int_equal(tj_strides(w)[0], 1);
    assert_int_equal(tj_strides(w)[1], 1);
    assert_ptr_equal(tj_data(w), tj_data(x));   /* a view: x's storage */
    /* an offset, then a 2x2 block with row stride 2 */
    tj_tensor *b = tj_as_strided(x, 2, (int64_t[]){2, 2}, (int64_t[]){2, 1}, 1);
    tu_assert_close(b, tu_tensor(TJ_F32, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4}), 0, 0);
    assert_ptr_equal(tj_data(b), (float *)tj_data(x) + 1);
    /* stride 0 repeats, 0-dim takes one element */
    tu_assert_close(tj_as_strided(x, 1, (int64_t[]){3}, (int64_t[]){0}, 5),
                    vec(TJ_F32, 3, (double[]){5, 5, 5}), 0, 0);
    tu_assert_close(tj_as_strided(x, 0, NULL, NULL, 4), tj_scalar(TJ_F32, 4), 0, 0);
    /* a non-contiguous input: its storage, as torch (no copy):
     * arange(6).reshape(2,3).t() is [[0,3],[1,4],[2,5]] over storage 0..5 */
    tj_tensor *xt = tj_transpose(tj_reshape(ar(TJ_I64, 6), 2, (int64_t[]){2, 3}), 0, 1);
    tj_tensor *v = tj_as_strided(xt, 1, (int64_t[]){3}, (int64_t[]){2}, 0);
    tu_assert_close(v, vec(TJ_I64, 3, (double[]){0, 2, 4}), 0, 0);
    assert_ptr_equal(tj_data(v), tj_data(xt));
    /* a slice: offsets count the storage, not the slice (elements before it too) */
    tj_tensor *sl = tj_narrow(x, 0, 2, 3);
    tu_assert_close(tj_as_strided(sl, 1, (int64_t[]){3}, (int64_t[]){1}, 0),
                    vec(TJ_F32, 3, (double[]){0, 1, 2}), 0, 0);
    tu_assert_close(tj_as_strided(sl, 1, (int64_t[]){2}, (int64_t[]){1}, tj_offset(sl)),
                    vec(TJ_F32, 2, (double[]){2, 3}), 0, 0);
    /* no elements: nothing reached, any offset within reason */
    tj_tensor *e = tj_as_strided(x, 2, (int64_t[]){0, 3}, (int64_t[]){100, 1}, 0);
    assert_non_null(e);
    assert_int_equal(tj_numel(e), 0);
}

/* Views of x's storage where x is not all of it, and their gradients, against
 * PyTorch's (scripts/golden/strided.py: the storage is a leaf arange(12)). */
static tj_tensor *SG(const char *case_, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "%s_%s", case_, what);
    return tu_golden("strided", name);
}

static tj_tensor *strided_case(const char *name, tj_tensor *s)
{
    if (!strcmp(name, "slice") || !strcmp(name, "slice_own"))
        return tj_narrow(s, 0, 2, 6);
    if (!strcmp(name, "transposed"))
        return tj_transpose(tj_reshape(s, 2, (int64_t[]){3, 4}), 0, 1);
    if (!strcmp(name, "expanded"))
        return tj_expand(tj_narrow(s, 0, 0, 3), 2, (int64_t[]){4, 3});
    return tj_narrow(s, 0, 1, 10);   /* windows */
}

static void test_as_strided_storage(void **state)
{
    (void)state;
    const struct {
        const char *name;
        int n;
        int64_t size[2], stride[2], off;
    } cases[] = {
        {"slice", 2, {2, 3}, {3, 1}, 0},    {"slice_own", 1, {3}, {2}, 2},
        {"transposed", 2, {4, 2}, {1, 4}, 3}, {"expanded", 1, {3}, {1}, 1},
        {"windows", 2, {4, 3}, {2, 1}, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tj_tensor *leaf = tj_keep(ar(TJ_F64, 12));
        assert_int_equal(tj_requires_grad(leaf, true), 0);
        tj_tensor *y = tj_as_strided(strided_case(cases[k].name, leaf), cases[k].n, cases[k].size,
                                     cases[k].stride, cases[k].off);
        tu_assert_close(y, SG(cases[k].name, "y"), 0, 0);
        assert_int_equal(tj_backward_seed(y, SG(cases[k].name, "g")), 0);
        tu_assert_close(tj_grad(leaf), SG(cases[k].name, "grad"), 1e-12, 1e-12);
        tj_release(leaf);
    }
}

static void test_as_strided_errors(void **state)
{
    (void)state;
    tj_tensor *x = ar(TJ_F32, 6);
    tu_assert_error(tj_as_strided(x, 2, (int64_t[]){4, 3}, (int64_t[]){1, 1}, 1), "as_strided(f32[6])",
                    "reaches element 6, outside the input's 6 elements", NULL);
    tu_assert_error(tj_as_strided(x, 2, (int64_t[]){2, 4}, (int64_t[]){3, 1}, 0), "as_strided",
                    "reaches element 6", NULL);
    tu_assert_error(tj_as_strided(x, 1, (int64_t[]){2}, (int64_t[]){-1}, 3), "as_strided",
                    "negative stride -1 in dim 0", NULL);
    tu_assert_error(tj_as_strided(x, 1, (int64_t[]){-2}, (int64_t[]){1}, 0), "as_strided",
                    "negative size -2", NULL);
    tu_assert_error(tj_as_strided(x, 1, (int64_t[]){2}, (int64_t[]){1}, -1), "as_strided",
                    "negative storage_offset", NULL);
    tu_assert_error(tj_as_strided(x, 1, NULL, (int64_t[]){1}, 0), "as_strided", "size has -1 entries", NULL);
    assert_null(tj_as_strided(NULL, 1, (int64_t[]){1}, (int64_t[]){1}, 0));
    /* bounded by the storage, not by x: a slice may reach past its end, not past
     * the storage's; an expanded x has more elements than its storage */
    tj_tensor *sl = tj_narrow(x, 0, 1, 2);
    assert_non_null(tj_as_strided(sl, 1, (int64_t[]){6}, (int64_t[]){1}, 0));
    tu_assert_error(tj_as_strided(sl, 1, (int64_t[]){6}, (int64_t[]){1}, 1), "as_strided(f32[2])",
                    "reaches element 6, outside the input's 6 elements (as_strided counts x's "
                    "storage: 6 elements)", NULL);
    tj_tensor *ex = tj_expand(tj_narrow(x, 0, 5, 1), 1, (int64_t[]){20});
    tu_assert_error(tj_as_strided(ex, 1, (int64_t[]){7}, (int64_t[]){1}, 0), "as_strided(f32[20])",
                    "reaches element 6", "storage: 6 elements", NULL);
}

static void test_as_strided_grad(void **state)
{
    (void)state;
    tj_tensor *x = tj_keep(ar(TJ_F64, 6));
    assert_int_equal(tj_requires_grad(x, true), 0);
    /* overlapping windows: element j is read once per window holding it;
     * weights 1, 10, 100 per column: grad[j] = sum of the column weights */
    tj_tensor *w = tj_as_strided(x, 2, (int64_t[]){4, 3}, (int64_t[]){1, 1}, 0);
    tj_tensor *cw = tu_tensor(TJ_F64, 1, (int64_t[]){3}, (double[]){1, 10, 100});
    assert_int_equal(tj_backward(tj_sum(tj_mul(w, cw), NULL, 0, false)), 0);
    tu_assert_close(tj_grad(x), vec(TJ_F64, 6, (double[]){1, 11, 111, 111, 110, 100}), 0, 0);
    tj_release(x);
    /* a 2-D input, offset 2, elements not read get 0 */
    tj_tensor *y = tj_keep(tj_reshape(ar(TJ_F64, 6), 2, (int64_t[]){2, 3}));
    assert_int_equal(tj_requires_grad(y, true), 0);
    tj_tensor *b = tj_as_strided(y, 1, (int64_t[]){2}, (int64_t[]){3}, 2);   /* y[0,2], y[1,2] */
    assert_int_equal(tj_backward(tj_sum(tj_mul_s(b, 5), NULL, 0, false)), 0);
    tu_assert_close(tj_grad(y), tu_tensor(TJ_F64, 2, (int64_t[]){2, 3}, (double[]){0, 0, 5, 0, 0, 5}), 0, 0);
    tj_release(y);
}

static tj_tensor *model_strided(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    tj_tensor *x = tj_add_s(args[0], 1);
    return tj_mul_s(tj_as_strided(x, 2, (int64_t[]){3, 4}, (int64_t[]){2, 1}, 1), 2);
}

static tj_tensor *model_strided_folded(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    return tj_neg(tj_as_strided(tj_mul_s(args[0], 1), 2, (int64_t[]){9, 3}, (int64_t[]){1, 1}, 1));
}

/* In a traced function as_strided needs x to hold its whole storage (a graph
 * has values, not storages): a view, or an argument or weight that does not,
 * is a graph break (the call runs eagerly, with PyTorch's view), said by
 * tj_explain; an argument that does is guarded so; a fresh result is traced. */
static tj_tensor *model_strided_view(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    return tj_as_strided(tj_narrow(args[0], 0, 2, 4), 1, (int64_t[]){3}, (int64_t[]){1}, 0);
}

static tj_tensor *model_strided_arg(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *y = tj_as_strided(ctx ? (tj_tensor *)ctx : args[0], 1, (int64_t[]){3},
                                 (int64_t[]){2}, 1);
    return ctx ? tj_add(y, args[0]) : tj_mul_s(y, 2);
}

static void test_as_strided_traced(void **state)
{
    (void)state;
    tj_tensor *x = ar(TJ_F32, 10);
    tj_compiled *c = tj_compile(model_strided_view, NULL, &(tj_compile_options){.name = "view"});
    tu_assert_close(tj_call(c, &x, 1), vec(TJ_F32, 3, (double[]){0, 1, 2}), 0, 0);   /* storage */
    /* narrow, a view in eager, traces as its slice */
    tu_assert_explain(c, "as_strided of the result of slice, eagerly a view of another tensor's "
                      "storage or possibly one: a traced graph has values, not storages");
    tj_compiled_free(c);
    /* an argument: a graph while it holds its storage, eager for a view of one */
    c = tj_compile(model_strided_arg, NULL, &(tj_compile_options){.name = "arg"});
    tj_tensor *x6 = ar(TJ_F32, 6);
    tu_assert_close(tj_call(c, &x6, 1), model_strided_arg(NULL, &x6, 1), 0, 0);
    tu_assert_explain(c, "guard arg 0: f32[6] contiguous, its whole storage (as_strided reads it)");
    tj_tensor *s6 = tj_narrow(ar(TJ_F32, 12), 0, 3, 6);   /* contiguous, at offset 3 */
    tu_assert_close(tj_call(c, &s6, 1), model_strided_arg(NULL, &s6, 1), 0, 0);
    /* storage elements 1, 3, 5 (the graph would read s6's own: 4, 6, 8) */
    tu_assert_close(tj_call(c, &s6, 1), vec(TJ_F32, 3, (double[]){2, 6, 10}), 0, 0);
    tu_assert_explain(c, "as_strided of argument 0, a view at storage offset 3");
    tu_assert_close(tj_call(c, &x6, 1), model_strided_arg(NULL, &x6, 1), 0, 0);
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.graphs, 1);   /* and one eager signature: no retrace after */
    assert_int_equal(st.breaks, 1);
    tj_compiled_free(c);
    /* a captured weight that is a slice of its storage */
    tj_tensor *w = tj_keep(tj_narrow(ar(TJ_F32, 12), 0, 2, 6));
    tj_tensor *x3 = ar(TJ_F32, 3);
    c = tj_compile(model_strided_arg, w, &(tj_compile_options){.name = "weight"});
    tu_assert_close(tj_call(c, &x3, 1), vec(TJ_F32, 3, (double[]){1, 4, 7}), 0, 0);
    tu_assert_explain(c, "as_strided of a weight at storage offset 2 of 12 elements");
    tj_compiled_free(c);
    tj_release(w);
}

static void test_as_strided_compiled(void **state)
{
    (void)state;
    tj_compiled *c = tj_compile(model_strided, NULL, &(tj_compile_options){.name = "strided"});
    tj_tensor *x = ar(TJ_F32, 10);
    for (int k = 0; k < 2; k++) {
        tj_tensor *got = tj_call(c, &x, 1);
        assert_non_null(got);
        tu_assert_close(got, model_strided(NULL, &x, 1), 0, 0);
        /* rows start at x+1 elements 1, 3, 5: (v + 1) * 2 */
        tu_assert_close(got, tu_tensor(TJ_F32, 2, (int64_t[]){3, 4},
                                       (double[]){4, 6, 8, 10, 8, 10, 12, 14, 12, 14, 16, 18}), 0, 0);
    }
    tj_compiled_free(c);
    /* x * 1 folds into a strided argument: as_strided's step copies it, then
     * views the copy with the windows' strides, which the kernel after it
     * must read (it read the copy as contiguous rows: random programs, f32
     * seed 520250) */
    c = tj_compile(model_strided_folded, NULL, &(tj_compile_options){.name = "strided_folded"});
    tj_tensor *b = ar(TJ_F32, 24), *xs = tj_slice(tj_reshape(b, 2, (int64_t[]){6, 4}), 1, 1, 4, 2);
    for (int k = 0; k < 2; k++)
        tu_assert_close(tj_call(c, &xs, 1), model_strided_folded(NULL, &xs, 1), 0, 0);
    tj_compiled_free(c);
}

/* ---- empty_strided ---- */

static void test_empty_strided(void **state)
{
    (void)state;
    /* column-major 2x3: strides 1, 2 over 6 elements */
    tj_tensor *t = tj_empty_strided(TJ_F32, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2});
    assert_non_null(t);
    assert_int_equal(tj_dtype_of(t), TJ_F32);
    assert_int_equal(tj_size(t, 0), 2);
    assert_int_equal(tj_size(t, 1), 3);
    assert_int_equal(tj_strides(t)[0], 1);
    assert_int_equal(tj_strides(t)[1], 2);
    tu_assert_close(t, tj_zeros(TJ_F32, 2, (int64_t[]){2, 3}), 0, 0);
    /* gaps between rows (stride 5 for 3 elements), and an expanded dim */
    tj_tensor *g = tj_empty_strided(TJ_I32, 3, (int64_t[]){2, 4, 3}, (int64_t[]){5, 0, 1});
    assert_non_null(g);
    assert_int_equal(tj_strides(g)[0], 5);
    assert_int_equal(tj_strides(g)[1], 0);
    assert_int_equal(tj_strides(g)[2], 1);
    assert_int_equal(tj_numel(g), 24);
    tj_tensor *e = tj_empty_strided(TJ_F64, 2, (int64_t[]){0, 4}, (int64_t[]){4, 1});
    assert_non_null(e);
    assert_int_equal(tj_numel(e), 0);
    assert_int_equal(tj_size(e, 1), 4);
    tu_assert_error(tj_empty_strided(TJ_F32, 1, (int64_t[]){3}, (int64_t[]){-1}), "empty_strided",
                    "negative stride -1 in dim 0", NULL);
    tu_assert_error(tj_empty_strided(TJ_F32, 1, NULL, NULL), "empty_strided", "a list is NULL", NULL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_xor_sum_values), T(test_xor_sum_dims), T(test_xor_sum_empty),
        T(test_xor_sum_errors), T(test_xor_sum_compiled), T(test_xor_sum_no_grad),
        T(test_as_strided_values), T(test_as_strided_errors), T(test_as_strided_grad),
        T(test_as_strided_compiled), T(test_empty_strided), T(test_as_strided_storage),
        T(test_as_strided_traced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
