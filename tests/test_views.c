/* test_views.c - view ops and copies: each view of x = arange(60) as [3,4,5]
 * against PyTorch (values, strides and storage offset from
 * tests/golden/move/<case>{,_st}.npy), storage sharing (writes through a view
 * reach the base), reshape copying when strides forbid a view, view, contiguous,
 * clone, copy_, and every error path of the family. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/rt.h"
#include "util.h"

#define S(...) (int64_t[]){__VA_ARGS__}
#define D(...) (int[]){__VA_ARGS__}
#define END INT64_MAX

static tj_tensor *base(void)
{
    tj_tensor *x = tj_reshape(tj_arange(TJ_F32, 0, 60, 1), 3, S(3, 4, 5));
    assert_non_null(x);
    return x;
}

/* x[:, :1, :1], shape [3,1,1] */
static tj_tensor *corner(tj_tensor *x) { return tj_slice(tj_slice(x, 1, 0, 1, 1), 2, 0, 1, 1); }

/* Values, strides and offset of v against torch; shares: 1 when v must be a
 * view of x's storage, 0 when it must be a copy, -1 when not checked. */
static void check_view(const char *name, tj_tensor *x, tj_tensor *v, int shares)
{
    char st[64];
    if (!v)
        fail_msg("%s: NULL: %s", name, tj_last_error());
    tu_assert_close(v, tu_golden("move", name), 0, 0);
    snprintf(st, sizeof st, "%s_st", name);
    tj_tensor *want = tu_golden("move", st);
    const int64_t *w = tj_data(want);
    assert_int_equal(tj_numel(want), tj_ndim(v) + 1);
    for (int d = 0; d < tj_ndim(v); d++)
        if (tj_strides(v)[d] != w[d])
            fail_msg("%s: stride %d is %lld, torch has %lld", name, d,
                     (long long)tj_strides(v)[d], (long long)w[d]);
    if (shares == 1) {
        assert_ptr_equal(v->storage, x->storage);
        assert_int_equal(tj_offset(v), w[tj_ndim(v)]);
    } else if (shares == 0) {
        assert_ptr_not_equal(v->storage, x->storage);
    }
}

#define VIEW_CASES(X) \
    X(r_12_5, tj_reshape(x, 2, S(12, 5)), 1) \
    X(r_neg1, tj_reshape(x, 2, S(-1, 10)), 1) \
    X(r_ones, tj_reshape(x, 5, S(3, 1, 4, 5, 1)), 1) \
    X(r_perm_view, tj_reshape(tj_permute(x, D(2, 0, 1)), 2, S(5, 12)), 1) \
    X(r_perm_copy, tj_reshape(tj_permute(x, D(2, 1, 0)), 2, S(5, 12)), 0) \
    X(r_tr_split, tj_reshape(tj_transpose(x, 0, 1), 4, S(2, 2, 3, 5)), 1) \
    X(r_tr_copy, tj_reshape(tj_transpose(x, 0, 1), 2, S(4, 15)), 0) \
    X(r_slice_view, tj_reshape(tj_slice(x, 1, 0, END, 2), 2, S(6, 5)), 1) \
    X(r_slice_copy, tj_reshape(tj_slice(x, 1, 0, END, 2), 2, S(3, 10)), 0) \
    X(r_expand_view, tj_reshape(tj_expand(corner(x), 3, S(3, 4, 2)), 4, S(3, 2, 2, 2)), 1) \
    X(r_expand_copy, tj_reshape(tj_expand(corner(x), 3, S(3, 4, 2)), 1, S(24)), 0) \
    X(r_mid1, tj_reshape(tj_slice(x, 1, 1, 2, 1), 2, S(3, 5)), 1) \
    X(r_split_step, tj_reshape(tj_slice(x, 2, 0, END, 2), 4, S(3, 2, 2, 3)), 1) \
    X(r_expand_split, tj_reshape(tj_expand(tj_slice(x, 0, 0, 1, 1), 3, S(4, 4, 5)), 3, \
                                 S(2, 2, 20)), 1) \
    X(r_scalar, tj_reshape(tj_scalar(TJ_F32, 7), 2, S(1, 1)), -1) \
    X(r_to_scalar, \
      tj_reshape(tj_slice(tj_slice(tj_slice(x, 0, 1, 2, 1), 1, 2, 3, 1), 2, 3, 4, 1), 0, NULL), \
      1) \
    X(r_empty, tj_reshape(tj_zeros(TJ_F32, 2, S(0, 3)), 2, S(3, 0)), -1) \
    X(p_201, tj_permute(x, D(2, 0, 1)), 1) \
    X(t_02, tj_transpose(x, 0, -1), 1) \
    X(s_chain, tj_slice(tj_slice(tj_slice(x, 0, 1, END, 1), 1, 0, END, 2), -1, -3, END, 1), 1) \
    X(s_clamp, tj_slice(x, 1, -100, 100, 3), 1) \
    X(s_empty, tj_slice(x, 1, 3, 1, 1), 1) \
    X(s_step_big, tj_slice(x, 2, 1, 5, 10), 1) \
    X(e_lead, tj_expand(tj_slice(x, 1, 0, 1, 1), 4, S(2, 3, 4, 5)), 1) \
    X(e_neg1, tj_expand(tj_slice(x, 1, 0, 1, 1), 3, S(-1, 4, -1)), 1) \
    X(e_new1, tj_broadcast_to(x, 4, S(1, 3, 4, 5)), 1) \
    X(e_new1_bcast, \
      tj_expand(tj_squeeze(tj_slice(tj_slice(x, 0, 0, 1, 1), 1, 0, 1, 1), D(0, 1), 2), 3, \
                S(1, 1, 5)), \
      1) \
    X(sq_all, tj_squeeze(corner(x), NULL, 0), 1) \
    X(sq_dim, tj_squeeze(corner(x), D(1), 1), 1) \
    X(sq_not1, tj_squeeze(x, D(0), 1), 1) \
    X(sq_two, tj_squeeze(corner(x), D(-1, 1), 2), 1) \
    X(u_0, tj_unsqueeze(x, 0), 1) \
    X(u_expanded, tj_unsqueeze(tj_expand(tj_slice(x, 1, 0, 1, 1), 3, S(3, 4, 5)), 1), 1) \
    X(u_last_nc, tj_unsqueeze(tj_slice(x, 1, 0, END, 2), -1), 1) \
    X(u_mid_nc, tj_unsqueeze(tj_permute(x, D(2, 0, 1)), 2), 1) \
    X(f_12, tj_flatten(x, 1, 2), 1) \
    X(f_all_copy, tj_flatten(tj_permute(x, D(1, 0, 2)), 0, -1), 0) \
    X(f_scalar, tj_flatten(tj_scalar(TJ_F32, 7), 0, -1), -1)

#define X(name, expr, shares) \
    static void test_##name(void **state) \
    { \
        (void)state; \
        tj_tensor *x = base(); \
        check_view(#name, x, expr, shares); \
    }
VIEW_CASES(X)
#undef X

/* ---- storage sharing ---------------------------------------------------------------- */

static void test_write_through_views(void **state)
{
    (void)state;
    tj_tensor *x = base();
    tj_tensor *r = tj_reshape(x, 2, S(12, 5));
    ((float *)tj_data(r))[7] = -1;                         /* r[1,2] = x[0,1,2] */
    assert_true(tj_get(x, S(0, 1, 2)) == -1);
    tj_tensor *s = tj_slice(tj_slice(x, 0, 1, END, 1), 1, 0, END, 2);
    ((float *)tj_data(s))[0] = -2;                         /* s[0,0,0] = x[1,0,0] */
    assert_true(tj_get(x, S(1, 0, 0)) == -2);
    tj_tensor *p = tj_permute(x, D(2, 0, 1));              /* p[4,2,3] = x[2,3,4] */
    float *pp = tj_data(p);
    const int64_t *ps = tj_strides(p);
    pp[4 * ps[0] + 2 * ps[1] + 3 * ps[2]] = -3;
    assert_true(tj_get(x, S(2, 3, 4)) == -3);
    /* and the other way: writes to the base show through the views */
    ((float *)tj_data(x))[59] = 1000;
    assert_true(tj_get(p, S(4, 2, 3)) == 1000);
    assert_true(tj_get(tj_unsqueeze(x, 1), S(2, 0, 3, 4)) == 1000);
    assert_true(tj_get(tj_expand(tj_slice(x, 0, 2, 3, 1), 3, S(4, 4, 5)), S(3, 3, 4)) == 1000);
}

static void test_reshape_copy_is_independent(void **state)
{
    (void)state;
    tj_tensor *x = base();
    tj_tensor *c = tj_reshape(tj_transpose(x, 0, 1), 1, S(60));
    assert_non_null(c);
    assert_true(tj_is_contiguous(c));
    ((float *)tj_data(c))[0] = -5;
    assert_true(tj_get(x, S(0, 0, 0)) == 0);
    assert_true(tj_get(c, S(5)) == 20);                    /* transpose(x)[0,1,0] = x[1,0,0] */
}

static tj_tensor *view_4x15(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    return tj_view(x[0], 2, S(4, 15));
}

static void test_view(void **state)
{
    (void)state;
    tj_tensor *x = base();
    tj_tensor *v = tj_view(tj_transpose(x, 0, 1), 4, S(2, 2, 3, 5));
    assert_non_null(v);
    assert_ptr_equal(v->storage, x->storage);
    tu_assert_close(v, tu_golden("move", "r_tr_split"), 0, 0);
    tu_assert_error(tj_view(tj_transpose(x, 0, 1), 2, S(4, 15)), "view(f32[4,3,5])",
                    "use reshape", NULL);
    tu_assert_error(tj_view(x, 2, S(7, -1)), "reshape(f32[3,4,5])", "cannot take a shape", NULL);
    assert_null(tj_view(NULL, 1, S(3)));
    /* compiled alike: a traced argument has its example's strides */
    tj_compiled *c = tj_compile(view_4x15, NULL, NULL);
    tj_tensor *xt = tj_transpose(x, 0, 1);
    tu_assert_error(tj_call(c, &xt, 1), "view(f32[4,3,5])", "use reshape", NULL);
    tj_tensor *xc = tj_contiguous(xt);
    tu_assert_close(tj_call(c, &xc, 1), tj_view(xc, 2, S(4, 15)), 0, 0);
    tj_compiled_free(c);
}

static void test_contiguous_and_clone(void **state)
{
    (void)state;
    tj_tensor *x = base();
    assert_ptr_equal(tj_contiguous(x), x);
    tj_tensor *t = tj_transpose(x, 0, 2);
    tj_tensor *c = tj_contiguous(t);
    assert_ptr_not_equal(c, t);
    assert_true(tj_is_contiguous(c));
    assert_ptr_not_equal(c->storage, x->storage);
    tu_assert_close(c, tu_golden("move", "t_02"), 0, 0);
    tj_tensor *k = tj_clone(x);
    assert_ptr_not_equal(k->storage, x->storage);
    tu_assert_close(k, x, 0, 0);
    tj_tensor *e = tj_clone(tj_zeros(TJ_I64, 2, S(0, 4)));
    assert_non_null(e);
    assert_int_equal(tj_numel(e), 0);
    assert_null(tj_contiguous(NULL));
    assert_null(tj_clone(NULL));
}

static void test_copy_(void **state)
{
    (void)state;
    tj_tensor *x = base();
    /* a broadcast i32 row into a permuted f32 view of x */
    tj_tensor *row = tj_from_data(TJ_I32, 1, S(3), (int32_t[]){7, 8, 9});
    tj_tensor *p = tj_permute(x, D(2, 1, 0));              /* [5,4,3] */
    assert_int_equal(tj_copy_(p, row), 0);
    assert_true(tj_get(x, S(0, 0, 0)) == 7 && tj_get(x, S(1, 3, 4)) == 8);
    assert_true(tj_get(x, S(2, 2, 1)) == 9);
    /* overlapping source and destination: as if the source were read first */
    tj_tensor *y = tj_arange(TJ_I64, 0, 6, 1);
    assert_int_equal(tj_copy_(tj_slice(y, 0, 1, END, 1), tj_slice(y, 0, 0, 5, 1)), 0);
    for (int64_t i = 1; i < 6; i++)
        assert_true(tj_get(y, &i) == (double)(i - 1));
    assert_int_equal(tj_copy_(tj_expand(tj_slice(x, 0, 0, 1, 1), 3, S(3, 4, 5)), x), -1);
    tu_assert_error(NULL, "copy_(f32[3,4,5], f32[3,4,5])", "expanded", NULL);
    assert_int_equal(tj_copy_(x, tj_zeros(TJ_F32, 1, S(4))), -1);
    tu_assert_error(NULL, "copy_(f32[3,4,5], f32[4])", "cannot broadcast", NULL);
    tj_clear_error();
    assert_int_equal(tj_copy_(NULL, x), -1);
    assert_string_equal(tj_last_error(), "copy_: dst is NULL");
    tj_clear_error();
    assert_int_equal(tj_copy_(x, NULL), -1);
}

static void test_transpose_0dim_and_1dim(void **state)
{
    (void)state;
    tj_tensor *s = tj_transpose(tj_scalar(TJ_F64, 3), 0, -1);
    assert_non_null(s);
    assert_int_equal(tj_ndim(s), 0);
    tj_tensor *v = tj_transpose(tj_arange(TJ_I32, 0, 4, 1), 0, 0);
    assert_non_null(v);
    assert_true(tj_get(v, S(3)) == 3);
    tj_tensor *e = tj_squeeze(tj_scalar(TJ_F32, 1), D(0), 1);
    assert_non_null(e);
    assert_int_equal(tj_ndim(e), 0);
    tj_tensor *u = tj_unsqueeze(tj_scalar(TJ_F32, 1), -1);
    assert_int_equal(tj_ndim(u), 1);
    assert_int_equal(tj_strides(u)[0], 1);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_reshape_errors(void **state)
{
    (void)state;
    tj_tensor *x = base();
    tu_assert_error(tj_reshape(x, 2, S(7, 9)), "reshape(f32[3,4,5])",
                    "shape has 63 elements, input has 60", NULL);
    tu_assert_error(tj_reshape(x, 3, S(-1, 3, -1)), "reshape(f32[3,4,5])",
                    "only one dim may be -1", NULL);
    tu_assert_error(tj_reshape(x, 2, S(-2, -30)), "reshape(f32[3,4,5])", "invalid size -2", NULL);
    tu_assert_error(tj_reshape(x, 2, S(7, -1)), "reshape(f32[3,4,5])", "cannot take a shape",
                    NULL);
    tu_assert_error(tj_reshape(tj_zeros(TJ_F32, 1, S(0)), 2, S(0, -1)), "reshape(f32[0])",
                    "ambiguous", NULL);
    tu_assert_error(tj_reshape(x, 9, S(1, 1, 1, 1, 1, 3, 4, 5, 1)), "reshape(f32[3,4,5])",
                    "shape has 9 entries", NULL);
    tu_assert_error(tj_reshape(x, 2, NULL), "reshape(f32[3,4,5])", "shape has -1 entries", NULL);
    tu_assert_error(tj_reshape(x, 3, S(1LL << 40, 1LL << 40, 2)), "reshape(f32[3,4,5])",
                    "shape [1099511627776,1099511627776,2] has more than 2^63-1 elements", NULL);
    /* a size 0 makes the count 0 whatever the other sizes: no overflow */
    tu_assert_error(tj_reshape(x, 3, S(1LL << 40, 1LL << 40, 0)), "reshape(f32[3,4,5])",
                    "shape has 0 elements, input has 60", NULL);
    tu_assert_error(tj_reshape(NULL, 1, S(3)), "reshape: input 0 is NULL", NULL);
}

static void test_permute_errors(void **state)
{
    (void)state;
    tj_tensor *x = base();
    tu_assert_error(tj_permute(x, D(0, 1, 1)), "permute(f32[3,4,5])", "repeats dim 1", NULL);
    tu_assert_error(tj_permute(x, D(0, 1, 3)), "permute(f32[3,4,5])", "entry 3 out of range",
                    NULL);
    tu_assert_error(tj_permute(x, NULL), "permute(f32[3,4,5])", "perm has -1 entries", NULL);
    tu_assert_error(tj_transpose(x, 0, 3), "transpose(f32[3,4,5])", "dim 3 out of range", NULL);
    tu_assert_error(tj_transpose(x, -4, 0), "transpose(f32[3,4,5])", "dim -4 out of range",
                    NULL);
    assert_null(tj_permute(NULL, D(0)));
    assert_null(tj_transpose(NULL, 0, 1));
}

static void test_slice_errors(void **state)
{
    (void)state;
    tj_tensor *x = base();
    tu_assert_error(tj_slice(x, 1, 0, 2, 0), "slice(f32[3,4,5])", "step must be positive, got 0",
                    NULL);
    tu_assert_error(tj_slice(x, 1, 0, 2, -1), "slice(f32[3,4,5])", "step must be positive",
                    NULL);
    tu_assert_error(tj_slice(x, 3, 0, 2, 1), "slice(f32[3,4,5])", "dim 3 out of range", NULL);
    tu_assert_error(tj_slice(tj_scalar(TJ_F32, 1), 0, 0, 1, 1), "slice(f32[])", "0-dim", NULL);
    assert_null(tj_slice(NULL, 0, 0, 1, 1));
}

static void test_expand_errors(void **state)
{
    (void)state;
    tj_tensor *x = base();
    tu_assert_error(tj_expand(x, 3, S(3, 8, 5)), "expand(f32[3,4,5])",
                    "size 8 in dim 1 must match the existing size 4", NULL);
    tu_assert_error(tj_expand(x, 2, S(4, 5)), "expand(f32[3,4,5])", "fewer than the input's 3",
                    NULL);
    tu_assert_error(tj_expand(x, 4, S(-1, 3, 4, 5)), "expand(f32[3,4,5])",
                    "-1 is not allowed in new leading dim 0", NULL);
    tu_assert_error(tj_expand(corner(x), 3, S(3, -2, 1)), "expand(f32[3,1,1])",
                    "invalid size -2", NULL);
    tu_assert_error(tj_expand(x, 9, S(1, 1, 1, 1, 1, 1, 3, 4, 5)), "expand(f32[3,4,5])",
                    "shape has 9 entries", NULL);
    tu_assert_error(tj_broadcast_to(x, 3, S(3, 4, 6)), "expand(f32[3,4,5])", "must match", NULL);
    assert_null(tj_expand(NULL, 1, S(1)));
}

static void test_squeeze_unsqueeze_flatten_errors(void **state)
{
    (void)state;
    tj_tensor *x = base();
    tu_assert_error(tj_squeeze(x, D(3), 1), "squeeze(f32[3,4,5])", "dim 3 out of range", NULL);
    tu_assert_error(tj_squeeze(x, D(1, -2), 2), "squeeze(f32[3,4,5])", "appears twice", NULL);
    tu_assert_error(tj_squeeze(x, NULL, 2), "squeeze(f32[3,4,5])", "dims has -1 entries", NULL);
    tu_assert_error(tj_unsqueeze(x, 4), "unsqueeze(f32[3,4,5])", "dim 4 out of range [-4, 3]",
                    NULL);
    tu_assert_error(tj_unsqueeze(x, -5), "unsqueeze(f32[3,4,5])", "out of range", NULL);
    tj_tensor *big = tj_zeros(TJ_F32, 8, S(1, 1, 1, 1, 1, 1, 1, 2));
    tu_assert_error(tj_unsqueeze(big, 0), "unsqueeze(f32[1,1,1,1,1,1,1,2])",
                    "more than 8 dims", NULL);
    tu_assert_error(tj_flatten(x, 0, 3), "flatten(f32[3,4,5])", "dim 3 out of range", NULL);
    tu_assert_error(tj_flatten(x, 2, 1), "flatten(f32[3,4,5])", "start_dim 2 comes after", NULL);
    assert_null(tj_squeeze(NULL, NULL, 0));
    assert_null(tj_unsqueeze(NULL, 0));
    assert_null(tj_flatten(NULL, 0, -1));
}

/* rt_view_op refuses an op that is not a view (an internal misuse). */
static void test_view_op_not_a_view(void **state)
{
    (void)state;
    tj_tensor *x = base();
    ir_type ty;
    rt_type_of(x, &ty);
    bool need_copy = true;
    ir_attrs at = {0};
    assert_null(rt_view_op(OP_flip, x, &at, &ty, &need_copy));
    assert_false(need_copy);
    tu_assert_error(NULL, "flip is not a view op", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown),
#define X(name, expr, shares) T(test_##name)
        VIEW_CASES(X)
#undef X
        T(test_write_through_views)
        T(test_reshape_copy_is_independent)
        T(test_view)
        T(test_contiguous_and_clone)
        T(test_copy_)
        T(test_transpose_0dim_and_1dim)
        T(test_reshape_errors)
        T(test_permute_errors)
        T(test_slice_errors)
        T(test_expand_errors)
        T(test_squeeze_unsqueeze_flatten_errors)
        T(test_view_op_not_a_view)
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
