/* test_move.c - data movement (cat, stack, split, split_with_sizes, gather, index_select, pad,
 * flip, copy) against PyTorch (tests/golden/move, made by
 * scripts/golden/move.py), including non-contiguous inputs (q transposed, a
 * transposed index), dtype promotion, empty tensors and NaN/inf/huge/tiny
 * values; large cases that take the parallel paths; every error path. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../ir/ir.h"
#include "util.h"

#define S(...) (int64_t[]){__VA_ARGS__}
#define D(...) (int[]){__VA_ARGS__}
#define END INT64_MAX

static tj_tensor *G(const char *name) { return tu_golden("move", name); }

/* q.transpose(1, 2): [3,4,5], not contiguous */
static tj_tensor *qt(void) { return tj_transpose(G("q"), 1, 2); }

static tj_tensor *i64s(int n, const int64_t *v) { return tj_from_data(TJ_I64, 1, S(n), v); }

static void same(tj_tensor *got, const char *golden) { tu_assert_close(got, G(golden), 0, 0); }

/* ---- cat, stack, split ------------------------------------------------------------ */

static void test_cat(void **state)
{
    (void)state;
    tj_tensor *a = G("a"), *e = tj_zeros(TJ_F64, 1, S(0));
    same(tj_cat((tj_tensor *[]){a, G("b")}, 2, 1), "cat_d1");
    same(tj_cat((tj_tensor *[]){a, G("c")}, 2, 0), "cat_promo");
    same(tj_cat((tj_tensor *[]){G("bl"), G("li")}, 2, -3), "cat_bool_i64");
    same(tj_cat((tj_tensor *[]){a, qt()}, 2, -1), "cat_nc");
    same(tj_cat((tj_tensor *[]){e, a, e}, 3, 0), "cat_empty");   /* f64: e promotes */
    same(tj_cat((tj_tensor *[]){G("sp"), a}, 2, 2), "cat_sp");
    same(tj_cat((tj_tensor *[]){a, tj_slice(a, 1, 0, 0, 1)}, 2, 1), "a");
    same(tj_cat(&a, 1, 0), "a");
    tj_tensor *ee = tj_cat((tj_tensor *[]){e, e}, 2, 0);
    assert_non_null(ee);
    assert_int_equal(tj_numel(ee), 0);
    assert_int_equal(tj_dtype_of(ee), TJ_F64);
}

static void test_stack(void **state)
{
    (void)state;
    tj_tensor *a = G("a");
    same(tj_stack((tj_tensor *[]){a, qt()}, 2, 0), "stack_0");
    same(tj_stack((tj_tensor *[]){a, a}, 2, -1), "stack_m1");
}

static void test_split(void **state)
{
    (void)state;
    tj_tensor *a = G("a"), *out[4] = {0};
    assert_int_equal(tj_split(a, 3, -1, out, 4), 2);
    same(out[0], "split_0");
    same(out[1], "split_1");
    out[1] = NULL;
    assert_int_equal(tj_split(a, 1, 0, out, 1), 3);        /* writes only max pieces */
    assert_null(out[1]);
    tu_assert_close(out[0], tj_slice(a, 0, 0, 1, 1), 0, 0);
}

static void test_split_more(void **state)
{
    (void)state;
    tj_tensor *x = tj_arange(TJ_I32, 0, 10, 1), *out[3];
    assert_int_equal(tj_split(x, 4, 0, out, 3), 3);
    assert_int_equal(tj_numel(out[2]), 2);
    assert_true(tj_get(out[2], S(1)) == 9);
    assert_int_equal(tj_split(x, 100, 0, out, 3), 1);
    assert_int_equal(tj_numel(out[0]), 10);
    assert_int_equal(tj_split(tj_zeros(TJ_F32, 1, S(0)), 2, 0, out, 3), 1);   /* like torch */
    assert_int_equal(tj_numel(out[0]), 0);
}

/* torch.split(x, [sizes], dim): eager and compiled, an empty piece, a view */
static const int64_t split_sizes[2][3] = {{1, 3, 0}, {2, 0, 3}};

static int split_model(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    (void)nargs;
    const int64_t *sizes = ctx;
    tj_tensor *x = sizes == split_sizes[1] ? tj_transpose(args[0], 1, 2) : args[0];
    return max < 3 ? -1 : tj_split_with_sizes(x, sizes, 3, 1, outs);
}

static void test_split_with_sizes(void **state)
{
    (void)state;
    tj_tensor *a = G("a"), *out[3];
    static const char *const names[2] = {"splits_%d", "splits_nc_%d"};
    for (int c = 0; c < 2; c++) {
        char name[32];
        tj_tensor *x = c ? tj_transpose(a, 1, 2) : a;
        assert_int_equal(tj_split_with_sizes(x, split_sizes[c], 3, c ? -2 : 1, out), 3);
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, names[c], k);
            same(out[k], name);
        }
        tj_compiled *m = tj_compile_multi(split_model, (void *)split_sizes[c], NULL);
        tj_tensor *got[3] = {0};
        assert_int_equal(tj_call_multi(m, &a, 1, got, 3), 3);
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, names[c], k);
            same(got[k], name);
        }
        tj_compiled_free(m);
    }
    assert_int_equal(tj_split_with_sizes(a, S(4), 1, 1, out), 1);   /* one piece: all of it */
    same(out[0], "a");
}

/* ---- gather, index_select ------------------------------------------------------------- */

static void test_gather(void **state)
{
    (void)state;
    tj_tensor *a = G("a"), *gi2 = G("gi2");
    same(tj_gather(a, 0, G("gi0")), "g_0");
    same(tj_gather(a, 1, G("gi1")), "g_1");
    same(tj_gather(a, -1, gi2), "g_m1");
    same(tj_gather(qt(), 2, gi2), "g_nc_x");
    same(tj_gather(a, 2, tj_transpose(G("git"), 1, 2)), "g_nc_index");
    same(tj_gather(G("c"), 1, G("gi1")), "g_int");
    same(tj_gather(G("sp"), 2, gi2), "g_sp");
    tj_tensor *e = tj_gather(a, 1, tj_zeros(TJ_I64, 3, S(3, 0, 5)));
    assert_non_null(e);
    assert_int_equal(tj_numel(e), 0);
    tj_tensor *s = tj_gather(tj_scalar(TJ_F32, 5), 0, tj_scalar(TJ_I64, 0));
    assert_non_null(s);
    assert_int_equal(tj_ndim(s), 0);
    assert_true(tj_item(s) == 5);
}

static void test_index_select(void **state)
{
    (void)state;
    tj_tensor *a = G("a");
    same(tj_index_select(a, 0, i64s(4, S(2, 0, 2, 1))), "is_0");
    same(tj_index_select(a, 1, tj_from_data(TJ_I32, 1, S(3), (int32_t[]){3, 3, 0})), "is_1");
    same(tj_index_select(qt(), -1, i64s(2, S(4, 0))), "is_m1_nc");
    same(tj_index_select(G("bl"), 2, i64s(3, S(1, 4, 1))), "is_bool");
    /* a non-contiguous index: every other entry of [2,9,0,9,2,9,1,9] */
    tj_tensor *strided = tj_slice(i64s(8, S(2, 9, 0, 9, 2, 9, 1, 9)), 0, 0, END, 2);
    same(tj_index_select(a, 0, strided), "is_0");
    tj_tensor *e = tj_index_select(a, 1, tj_zeros(TJ_I64, 1, S(0)));
    assert_non_null(e);
    assert_int_equal(tj_shape(e)[1], 0);
    tj_tensor *s = tj_index_select(tj_scalar(TJ_F64, 2.5), 0, i64s(1, S(0)));
    assert_non_null(s);
    assert_int_equal(tj_ndim(s), 0);
    assert_true(tj_item(s) == 2.5);
}

/* ---- pad, flip, copy --------------------------------------------------------------------- */

static void test_pad(void **state)
{
    (void)state;
    tj_tensor *a = G("a");
    same(tj_pad(a, S(1, 2), 1, 0), "pad_1");
    same(tj_pad(a, S(1, 0, 2, 3), 2, -1.5), "pad_2");
    same(tj_pad(a, S(-1, 2, 0, -2), 2, 0), "pad_neg");
    same(tj_pad(a, S(1, 1, 1, 1, 1, 1), 3, 7), "pad_3");
    same(tj_pad(G("c"), S(2, 1), 1, 3), "pad_int");
    same(tj_pad(qt(), S(0, 0, 1, -1), 2, 2), "pad_nc");
    same(tj_pad(a, S(-5, 0), 1, 0), "pad_crop_all");
    same(tj_pad(a, NULL, 0, 9), "a");
    tj_tensor *s = tj_pad(tj_scalar(TJ_I64, 4), NULL, 0, 1);
    assert_non_null(s);
    assert_true(tj_item(s) == 4);
    tj_tensor *e = tj_pad(tj_zeros(TJ_BOOL, 2, S(0, 2)), S(1, 0, 1, 1), 2, 1);   /* [2,3] of 1 */
    assert_non_null(e);
    assert_int_equal(tj_numel(e), 6);
    assert_true(tj_get(e, S(1, 2)) == 1);
}

static void test_flip(void **state)
{
    (void)state;
    tj_tensor *a = G("a");
    same(tj_flip(a, D(0), 1), "flip_0");
    same(tj_flip(a, D(1, 2), 2), "flip_12");
    same(tj_flip(a, D(-1, -2), 2), "flip_12");
    same(tj_flip(a, NULL, 0), "flip_all");                 /* no dims: every dim */
    same(tj_flip(qt(), D(2), 1), "flip_nc");
    same(tj_flip(G("bl"), D(1), 1), "flip_bool");
    same(tj_flip(G("sp"), D(-1), 1), "flip_sp");
    tj_tensor *e = tj_flip(tj_zeros(TJ_F32, 2, S(0, 3)), D(0, 1), 2);
    assert_non_null(e);
    assert_int_equal(tj_numel(e), 0);
}

static void test_copy(void **state)
{
    (void)state;
    tj_tensor *a = G("a");
    tj_tensor *c = tj_clone(qt());
    assert_true(tj_is_contiguous(c));
    same(c, "copy_nc");
    same(tj_contiguous(tj_expand(tj_slice(a, 1, 0, 1, 1), 3, S(3, 4, 5))), "copy_exp");
    same(tj_clone(G("sp")), "sp");
}

/* ---- large inputs: the parallel and vectorized paths ------------------------------------ */

static void test_large(void **state)
{
    (void)state;
    int64_t n = 300, m = 1000;
    tj_tensor *x = tj_reshape(tj_arange(TJ_F64, 0, (double)(n * m), 1), 2, S(n, m));
    tj_tensor *f = tj_flip(x, D(1), 1);
    assert_true(tj_get(f, S(123, 4)) == 123 * m + (m - 1 - 4));
    tj_tensor *c = tj_cat((tj_tensor *[]){x, tj_transpose(x, 0, 1)}, 2, 0);
    assert_null(c);                                        /* [300,1000] vs [1000,300] */
    tj_clear_error();
    c = tj_cat((tj_tensor *[]){x, f}, 2, 1);
    assert_true(tj_get(c, S(299, 1999)) == 299 * m);
    tj_tensor *idx = tj_flip(tj_arange(TJ_I64, 0, (double)m, 1), NULL, 0);
    tj_tensor *s = tj_index_select(x, 1, idx);
    tu_assert_close(s, f, 0, 0);
    tj_tensor *gi = tj_contiguous(tj_expand(tj_unsqueeze(idx, 0), 2, S(n, m)));
    tu_assert_close(tj_gather(x, 1, gi), f, 0, 0);
    tj_tensor *rows = tj_index_select(tj_transpose(x, 0, 1), 1, i64s(2, S(5, 7)));
    assert_true(tj_get(rows, S(999, 1)) == 7 * m + 999);
    tj_tensor *p = tj_pad(x, S(1, 1, 2, 2), 2, -1);
    assert_true(tj_get(p, S(0, 0)) == -1 && tj_get(p, S(2, 1)) == 0);
    assert_true(tj_get(p, S(301, 1000)) == 299 * m + 999 && tj_get(p, S(303, 1001)) == -1);
    tj_tensor *ints = tj_reshape(tj_arange(TJ_I32, 0, (double)(n * m), 1), 2, S(n, m));
    tj_tensor *mixed = tj_cat((tj_tensor *[]){ints, x}, 2, 0);   /* i32 + f64 -> f64 */
    assert_int_equal(tj_dtype_of(mixed), TJ_F64);
    tu_assert_close(tj_slice(mixed, 0, n, END, 1), x, 0, 0);
    tu_assert_close_any(tj_slice(mixed, 0, 0, n, 1), ints, 0, 0);
}

/* Copies of transposed sources take the tiled path: odd sizes, batch dims
 * (also broadcast ones), every element size. */
static void test_copy_transposed(void **state)
{
    (void)state;
    tj_tensor *x = tj_reshape(tj_arange(TJ_F64, 0, 3 * 70 * 45, 1), 3, S(3, 70, 45));
    tj_tensor *views[] = {
        tj_transpose(x, 1, 2),                                    /* [3,45,70] */
        tj_permute(x, D(2, 0, 1)),                                /* [45,3,70] */
        tj_transpose(tj_slice(x, 2, 1, 40, 1), 1, 2),             /* offset, odd sizes */
        tj_expand(tj_unsqueeze(tj_transpose(tj_slice(x, 0, 1, 2, 1), 1, 2), 0), 4,
                  S(2, 1, 45, 70)),                               /* stride-0 batch */
        tj_transpose(tj_reshape(tj_arange(TJ_I32, 0, 64 * 33, 1), 2, S(64, 33)), 0, 1),
        tj_transpose(tj_reshape(tj_arange(TJ_U8, 0, 250, 1), 2, S(5, 50)), 0, 1),
        tj_transpose(tj_reshape(tj_arange(TJ_U8, 0, 4096, 1), 2, S(64, 64)), 0, 1),
    };
    for (size_t k = 0; k < sizeof views / sizeof *views; k++) {
        tj_tensor *c = tj_contiguous(views[k]);
        assert_true(tj_is_contiguous(c));
        tu_assert_close(c, views[k], 0, 0);
        tu_assert_close(tj_reshape(views[k], 1, S(-1)), tj_reshape(c, 1, S(-1)), 0, 0);
    }
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void test_cat_errors(void **state)
{
    (void)state;
    tj_tensor *a = G("a"), *b = G("b");
    tu_assert_error(tj_cat((tj_tensor *[]){a, b}, 2, 0), "cat(f32[3,4,5], f32[3,2,5])",
                    "input 1 has size 2 in dim 1, expected 4", NULL);
    tu_assert_error(tj_cat((tj_tensor *[]){a, tj_zeros(TJ_F32, 2, S(4, 5))}, 2, 0),
                    "cat(f32[3,4,5], f32[4,5])", "input 1 has 2 dims, expected 3", NULL);
    tu_assert_error(tj_cat((tj_tensor *[]){a, b}, 2, 3), "cat(f32[3,4,5], f32[3,2,5])",
                    "dim 3 out of range", NULL);
    tj_tensor *s = tj_scalar(TJ_F32, 1);
    tu_assert_error(tj_cat((tj_tensor *[]){s, s}, 2, 0), "cat(f32[], f32[])", "0-dim", NULL);
    tu_assert_error(tj_cat(NULL, 0, 0), "cat()", "at least one tensor", NULL);
    tu_assert_error(tj_cat((tj_tensor *[]){a, NULL}, 2, 0), "cat: input 1 is NULL", NULL);
    tj_tensor *many[257];
    for (int k = 0; k < 257; k++)
        many[k] = a;
    tu_assert_error(tj_cat(many, 257, 0), "cat()", "more than 256 inputs", NULL);
    tu_assert_close(tj_sum(tj_cat(many, 256, 0), NULL, 0, false),
                    tj_mul_s(tj_sum(a, NULL, 0, false), 256), 1e-5, 1e-3);
    tu_assert_error(tj_stack((tj_tensor *[]){a, b}, 2, 0), "stack(f32[3,4,5], f32[3,2,5])",
                    "input 1 has a different shape", NULL);
    tu_assert_error(tj_stack(many, 257, 0), "stack()", "1 to 256 tensors", NULL);
    tu_assert_error(tj_stack((tj_tensor *[]){a, a}, 2, 4), "unsqueeze(f32[3,4,5])",
                    "out of range", NULL);
    tu_assert_error(tj_stack((tj_tensor *[]){NULL, a}, 2, 0), "cat: input 0 is NULL", NULL);
}

/* The rule itself refuses an absent cat input (tj_cat stops NULLs earlier). */
static void test_cat_rule_missing_input(void **state)
{
    (void)state;
    ir_type t = {TJ_F32, 1, false, {2}}, out;
    const ir_type *in[2] = {&t, NULL};
    ir_attrs at = {0};
    char err[128];
    assert_int_equal(ir_infer(OP_cat, in, 2, &at, &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "input 1 is missing"));
}

static void test_split_errors(void **state)
{
    (void)state;
    tj_tensor *a = G("a"), *out[4];
    assert_int_equal(tj_split(a, 0, 1, out, 4), -1);
    tu_assert_error(NULL, "split(f32[3,4,5])", "split size must be positive", NULL);
    assert_int_equal(tj_split(a, 2, 3, out, 4), -1);
    tu_assert_error(NULL, "split(f32[3,4,5])", "dim 3 out of range", NULL);
    assert_int_equal(tj_split(tj_scalar(TJ_F32, 1), 1, 0, out, 4), -1);
    tu_assert_error(NULL, "split(f32[])", "out of range for 0 dims", NULL);
    assert_int_equal(tj_split(a, 2, 0, NULL, 4), -1);
    tu_assert_error(NULL, "split(f32[3,4,5])", "out is NULL", NULL);
    assert_int_equal(tj_split(NULL, 2, 0, out, 4), -1);
    tu_assert_error(NULL, "split: input is NULL", NULL);
}

static void test_split_with_sizes_errors(void **state)
{
    (void)state;
    tj_tensor *a = G("a"), *out[4];
    assert_int_equal(tj_split_with_sizes(a, S(1, 2), 2, 1, out), -1);
    tu_assert_error(NULL, "split_with_sizes(f32[3,4,5])", "split sizes [1,2] must sum to 4",
                    "size of dim 1", NULL);
    assert_int_equal(tj_split_with_sizes(a, S(3, 3), 2, -1, out), -1);
    tu_assert_error(NULL, "split sizes [3,3] must sum to 5", NULL);
    assert_int_equal(tj_split_with_sizes(a, S(INT64_MAX, INT64_MAX), 2, 0, out), -1);
    tu_assert_error(NULL, "must sum to 3", NULL);
    assert_int_equal(tj_split_with_sizes(a, S(5, -1), 2, 1, out), -1);
    tu_assert_error(NULL, "split_with_sizes(f32[3,4,5])", "split size 1 is -1",
                    "non-negative", NULL);
    assert_int_equal(tj_split_with_sizes(a, S(4), 1, 3, out), -1);
    tu_assert_error(NULL, "dim 3 out of range", NULL);
    assert_int_equal(tj_split_with_sizes(tj_scalar(TJ_F32, 1), S(1), 1, 0, out), -1);
    tu_assert_error(NULL, "split_with_sizes(f32[])", "out of range for 0 dims", NULL);
    assert_int_equal(tj_split_with_sizes(a, S(4), 0, 1, out), -1);
    tu_assert_error(NULL, "needs at least one split size", NULL);
    assert_int_equal(tj_split_with_sizes(a, NULL, 1, 1, out), -1);
    tu_assert_error(NULL, "sizes is NULL", NULL);
    assert_int_equal(tj_split_with_sizes(a, S(4), 1, 1, NULL), -1);
    tu_assert_error(NULL, "out is NULL", NULL);
    assert_int_equal(tj_split_with_sizes(NULL, S(4), 1, 1, out), -1);
    tu_assert_error(NULL, "split_with_sizes: input is NULL", NULL);
}

static void test_gather_errors(void **state)
{
    (void)state;
    tj_tensor *a = G("a");
    tj_tensor *bad = tj_reshape(i64s(8, S(0, 1, 2, 3, 0, 1, 2, 0)), 3, S(2, 4, 1));
    tu_assert_error(tj_gather(a, 0, bad), "gather(f32[3,4,5], i64[2,4,1])",
                    "index 3 is out of range for dim 0 of size 3", NULL);
    tj_tensor *neg = tj_reshape(i64s(2, S(0, -1)), 3, S(1, 1, 2));
    tu_assert_error(tj_gather(a, 2, neg), "gather(f32[3,4,5], i64[1,1,2])",
                    "index -1 is out of range for dim 2 of size 5", NULL);
    tj_tensor *i32 = tj_zeros(TJ_I32, 3, S(1, 1, 1));
    tu_assert_error(tj_gather(a, 0, i32), "gather(f32[3,4,5], i32[1,1,1])", "index must be i64",
                    NULL);
    tu_assert_error(tj_gather(a, 0, i64s(2, S(0, 0))), "gather(f32[3,4,5], i64[2])",
                    "index has 1 dims, input has 3", NULL);
    tu_assert_error(tj_gather(a, 0, tj_zeros(TJ_I64, 3, S(1, 5, 1))),
                    "gather(f32[3,4,5], i64[1,5,1])", "size 5 in dim 1, larger than", NULL);
    tu_assert_error(tj_gather(a, 3, tj_zeros(TJ_I64, 3, S(1, 1, 1))), "gather(",
                    "dim 3 out of range", NULL);
    assert_null(tj_gather(a, 0, NULL));
    tj_clear_error();
}

static void test_index_select_errors(void **state)
{
    (void)state;
    tj_tensor *a = G("a");
    tu_assert_error(tj_index_select(a, 1, i64s(3, S(0, 4, 1))),
                    "index_select(f32[3,4,5], i64[3])",
                    "index 4 is out of range for dim 1 of size 4", NULL);
    tu_assert_error(tj_index_select(a, 1, tj_from_data(TJ_I32, 1, S(1), (int32_t[]){-2})),
                    "index_select(f32[3,4,5], i32[1])", "index -2 is out of range", NULL);
    tu_assert_error(tj_index_select(a, 1, tj_zeros(TJ_F32, 1, S(2))),
                    "index_select(f32[3,4,5], f32[2])", "index must be i32 or i64", NULL);
    tu_assert_error(tj_index_select(a, 1, tj_zeros(TJ_I64, 2, S(2, 2))), "index_select(",
                    "index must have 0 or 1 dims, got 2", NULL);
    tu_assert_error(tj_index_select(a, -4, i64s(1, S(0))), "index_select(",
                    "dim -4 out of range", NULL);
    tu_assert_error(tj_index_select(tj_scalar(TJ_F32, 1), 0, i64s(2, S(0, 0))),
                    "index_select(f32[], i64[2])", "must have 1 element, got 2", NULL);
}

static void test_pad_flip_errors(void **state)
{
    (void)state;
    tj_tensor *a = G("a");
    tu_assert_error(tj_pad(a, S(1, 1, 1, 1, 1, 1, 1, 1), 4, 0), "pad(f32[3,4,5])",
                    "at most 3 (before, after) pairs, got 8 entries", NULL);
    tu_assert_error(tj_pad(a, S(-3, -3), 1, 0), "pad(f32[3,4,5])",
                    "padding (-3, -3) makes dim 2 of size 5 negative", NULL);
    tu_assert_error(tj_pad(a, NULL, 2, 0), "pad(f32[3,4,5])", "got -1 entries", NULL);
    tu_assert_error(tj_pad(a, S(INT64_MAX, 1), 1, 0), "pad(f32[3,4,5])", "negative", NULL);
    tu_assert_error(tj_flip(a, D(3), 1), "flip(f32[3,4,5])", "dim 3 out of range", NULL);
    tu_assert_error(tj_flip(a, D(0, -3), 2), "flip(f32[3,4,5])", "appears twice", NULL);
    tu_assert_error(tj_flip(a, NULL, 2), "flip(f32[3,4,5])", "dims has -1 entries", NULL);
    assert_null(tj_pad(NULL, S(1, 1), 1, 0));
    assert_null(tj_flip(NULL, D(0), 1));
    tj_clear_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_cat),
        T(test_stack),
        T(test_split),
        T(test_split_more),
        T(test_split_with_sizes),
        T(test_gather),
        T(test_index_select),
        T(test_pad),
        T(test_flip),
        T(test_copy),
        T(test_large),
        T(test_copy_transposed),
        T(test_cat_errors),
        T(test_cat_rule_missing_input),
        T(test_split_errors),
        T(test_split_with_sizes_errors),
        T(test_gather_errors),
        T(test_index_select_errors),
        T(test_pad_flip_errors),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
