/* test_reduce.c - the reductions (sum, mean, prod, amax, amin, logsumexp, all,
 * any, var, std, argmax, argmin) against PyTorch, eagerly and compiled: the
 * cases listed in tests/golden/reduce/cases.txt (made by
 * scripts/golden/reduce.py) over f32, f64, integer and bool inputs, dim sets
 * with negative and non-adjacent dims, keepdim both ways,
 * permuted/sliced/expanded views, empty tensors (reduced size-0 dims give the
 * identity) and extreme values; then large shapes (every strategy and the split of R into parts)
 * against a double-precision reference, thread-count invariance, and every
 * error path of the rules and entry points. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../frontend/fe.h"
#include "util.h"

/* ---- golden cases ------------------------------------------------------------------- */

typedef struct gcase {
    char op[16], inp[16], view[4], dims[32], corr[8], dt[8], shape[64];
    int keep;
    long off;
} gcase;

static tj_tensor *run_op(const gcase *c, tj_tensor *x)
{
    int64_t d64[TJ_MAX_DIMS];
    int dims[TJ_MAX_DIMS], nd = tu_parse_ints(c->dims, d64);
    for (int k = 0; k < nd; k++)
        dims[k] = (int)d64[k];
    bool kd = c->keep != 0;
    int64_t corr = strcmp(c->corr, "-") ? atoll(c->corr) : 1;
    const char *op = c->op;
    if (!strcmp(op, "sum")) return tj_sum(x, dims, nd, kd);
    if (!strcmp(op, "mean")) return tj_mean(x, dims, nd, kd);
    if (!strcmp(op, "prod")) return tj_prod(x, dims, nd, kd);
    if (!strcmp(op, "amax")) return tj_amax(x, dims, nd, kd);
    if (!strcmp(op, "amin")) return tj_amin(x, dims, nd, kd);
    if (!strcmp(op, "logsumexp")) return tj_logsumexp(x, dims, nd, kd);
    if (!strcmp(op, "all")) return tj_all(x, dims, nd, kd);
    if (!strcmp(op, "any")) return tj_any(x, dims, nd, kd);
    if (!strcmp(op, "var")) return tj_var(x, dims, nd, corr, kd);
    if (!strcmp(op, "std")) return tj_std(x, dims, nd, corr, kd);
    if (!strcmp(op, "argmax")) return tj_argmax(x, nd ? dims[0] : TJ_ALL_DIMS, kd);
    if (!strcmp(op, "argmin")) return tj_argmin(x, nd ? dims[0] : TJ_ALL_DIMS, kd);
    fail_msg("unknown op %s in cases.txt", op);
    return NULL;
}

static tj_tensor *model_case(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    return run_op(ctx, args[0]);
}

/* The case eagerly (compiled false) or as a compiled model of one op. */
static void check_case_as(const gcase *c, tj_tensor *want_all, bool compiled)
{
    char name[32];
    snprintf(name, sizeof name, "in_%s", c->inp);
    tj_tensor *x = tu_view(tu_golden("reduce", name), c->view[0]);
    assert_non_null(x);
    tj_compiled *m = compiled ? tj_compile(model_case, (void *)c, NULL) : NULL;
    tj_tensor *got = compiled ? tj_call(m, &x, 1) : run_op(c, x);
    tj_compiled_free(m);
    if (!got)
        fail_msg("%s %s %s %s%s: %s", c->op, c->inp, c->view, c->dims,
                 compiled ? " compiled" : "", tj_last_error());
    tj_tensor *want = tu_golden_part(want_all, c->off, c->shape);
    if (strcmp(tj_dtype_name(tj_dtype_of(got)), c->dt))
        fail_msg("%s %s: dtype %s, expected %s", c->op, c->inp, tj_dtype_name(tj_dtype_of(got)),
                 c->dt);
    bool f64 = !strcmp(c->dt, "f64"), f32 = !strcmp(c->dt, "f32");
    double tol = f64 ? 1e-12 : f32 ? 1e-5 : 0;
    if (!tu_all_close(got, want, tol))
        print_error("case: %s %s %s %s k%d c%s%s\n", c->op, c->inp, c->view, c->dims, c->keep,
                    c->corr, compiled ? " compiled" : "");
    tu_assert_close_any(got, want, tol, tol);
}

/* Every case runs eagerly and compiled, but one: std of the f32 row of
 * extremes whose variance (~3e76) exceeds FLT_MAX while its root does not;
 * the eager kernel redoes such a row in double, a compiled var kernel
 * computes in f32 and gives inf. */
static void check_case(const gcase *c, tj_tensor *want_all)
{
    check_case_as(c, want_all, false);
    if (!(strcmp(c->op, "std") == 0 && strcmp(c->inp, "xe_f32") == 0))
        check_case_as(c, want_all, true);
}

/* Runs every line of cases.txt whose op is `op`. */
static void run_cases(const char *op)
{
    char line[256];
    FILE *f = tu_golden_cases("reduce");
    tj_tensor *want = tu_golden("reduce", "want");
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        gcase c;
        if (sscanf(line, "%15s %15s %3s %31s %d %7s %7s %63s %ld", c.op, c.inp, c.view, c.dims,
                   &c.keep, c.corr, c.dt, c.shape, &c.off) != 9)
            continue;
        if (strcmp(c.op, op))
            continue;
        tj_scope_begin();
        check_case(&c, want);
        tj_scope_end();
        n++;
    }
    fclose(f);
    assert_true(n > 0);
}

#define GOLDEN_TEST(op) \
    static void test_golden_##op(void **state) \
    { \
        (void)state; \
        run_cases(#op); \
    }
GOLDEN_TEST(sum)
GOLDEN_TEST(mean)
GOLDEN_TEST(prod)
GOLDEN_TEST(amax)
GOLDEN_TEST(amin)
GOLDEN_TEST(logsumexp)
GOLDEN_TEST(all)
GOLDEN_TEST(any)
GOLDEN_TEST(var)
GOLDEN_TEST(std)
GOLDEN_TEST(argmax)
GOLDEN_TEST(argmin)

/* ---- large shapes against a double reference ------------------------------------------- */

/* Reference reduction of a contiguous f32 [R, C] over dim `dim` (0 or 1). */
static double ref_at(const float *x, int64_t R, int64_t C, int dim, int64_t k, const char *op)
{
    int64_t n = dim == 0 ? R : C, step = dim == 0 ? C : 1, base = dim == 0 ? k : k * C;
    double s = 0, m = -INFINITY, s2 = 0;
    int64_t am = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = x[base + i * step];
        s += v;
        if (v > m)
            m = v, am = i;
    }
    for (int64_t i = 0; i < n; i++) {
        double v = x[base + i * step] - s / (double)n;
        s2 += v * v;
    }
    if (!strcmp(op, "sum"))
        return s;
    if (!strcmp(op, "var"))
        return s2 / (double)(n - 1);
    if (!strcmp(op, "argmax"))
        return (double)am;
    double e = 0;
    for (int64_t i = 0; i < n; i++)
        e += exp(x[base + i * step] - m);
    return m + log(e);   /* logsumexp */
}

static tj_tensor *big_op(const char *op, tj_tensor *x, int dim)
{
    if (!strcmp(op, "sum"))
        return tj_sum(x, &dim, 1, false);
    if (!strcmp(op, "var"))
        return tj_var(x, &dim, 1, 1, false);
    if (!strcmp(op, "argmax"))
        return tj_argmax(x, dim, false);
    return tj_logsumexp(x, &dim, 1, false);
}

static void check_big(int64_t R, int64_t C)
{
    static const char *ops[] = {"sum", "var", "argmax", "logsumexp"};
    tj_manual_seed(7);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){R, C});
    assert_non_null(x);
    const float *p = tj_data(x);
    for (int dim = 0; dim < 2; dim++)
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
            tj_tensor *y = big_op(ops[k], x, dim);
            assert_non_null(y);
            int64_t n = dim == 0 ? C : R;
            for (int64_t j = 0; j < n; j += 1 + n / 97) {
                double want = ref_at(p, R, C, dim, j, ops[k]), got = tj_get(y, &j);
                if (fabs(got - want) > 1e-4 * (1 + fabs(want)))
                    fail_msg("%s over dim %d of [%lld,%lld] at %lld: got %.9g, want %.9g",
                             ops[k], dim, (long long)R, (long long)C, (long long)j, got, want);
            }
        }
}

/* [R, C] shapes that take the inner path with parts, the outer path with one
 * and with several column blocks (with parts), and plain row splits. */
static void test_large_shapes(void **state)
{
    (void)state;
    check_big(3, 70001);
    check_big(70001, 3);
    check_big(5000, 40);
    check_big(300, 1000);
    check_big(1000, 300);
    check_big(100, 2500);
}

static void test_large_full(void **state)
{
    (void)state;
    tj_manual_seed(3);
    tj_tensor *x = tj_rand(TJ_F32, 1, (int64_t[]){1 << 20});
    const float *p = tj_data(x);
    double s = 0;
    for (int64_t i = 0; i < (1 << 20); i++)
        s += p[i];
    /* U[0,1): the f32 blocked sum stays within a few ulp of the exact sum */
    assert_true(fabs(tj_item(tj_sum(x, NULL, 0, false)) - s) < 1e-6 * s);
    assert_true(fabs(tj_item(tj_mean(x, NULL, 0, false)) - s / (1 << 20)) < 1e-6);
    tj_tensor *t = tj_transpose(tj_reshape(x, 2, (int64_t[]){1024, 1024}), 0, 1);
    assert_true(fabs(tj_item(tj_sum(t, NULL, 0, false)) - s) < 1e-6 * s);
}

/* The split into units depends on shapes only: one thread or two give the same bits. */
static void test_thread_invariance(void **state)
{
    (void)state;
    tj_manual_seed(5);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4000, 300});
    int saved = tj_num_threads(), d0 = 0, d1 = 1;
    tj_tensor *a[4], *b[4];
    for (int pass = 0; pass < 2; pass++) {
        tj_set_num_threads(pass ? 2 : 1);
        tj_tensor **r = pass ? b : a;
        r[0] = tj_sum(x, &d0, 1, false);
        r[1] = tj_sum(x, NULL, 0, false);
        r[2] = tj_var(x, &d1, 1, 1, false);
        r[3] = tj_logsumexp(x, &d0, 1, false);
    }
    tj_set_num_threads(saved);
    for (int k = 0; k < 4; k++)
        tu_assert_close(a[k], b[k], 0, 0);
}

/* ---- direct checks -------------------------------------------------------------------------- */

static tj_tensor *f32v(int n, const double *v)
{
    float f[16];
    for (int k = 0; k < n; k++)
        f[k] = (float)v[k];
    return tj_from_data(TJ_F32, 1, (int64_t[]){n}, f);
}

static void test_scalar_and_size1(void **state)
{
    (void)state;
    tj_tensor *s = tj_scalar(TJ_F32, 2.5);
    int d0 = 0, dm1 = -1;
    assert_int_equal(tj_ndim(tj_sum(s, &d0, 1, false)), 0);
    assert_true(tj_item(tj_sum(s, &dm1, 1, true)) == 2.5);
    assert_true(tj_item(tj_amax(s, NULL, 0, false)) == 2.5);
    assert_true(tj_item(tj_argmax(s, 0, false)) == 0);
    assert_true(isnan(tj_item(tj_var(s, NULL, 0, 1, false))));
    /* reducing only size-1 dims copies the values */
    tj_tensor *x = tj_randn(TJ_F32, 3, (int64_t[]){5, 1, 40});
    int d1 = 1;
    tu_assert_close(tj_sum(x, &d1, 1, false), tj_reshape(x, 2, (int64_t[]){5, 40}), 0, 0);
    tu_assert_close(tj_amin(x, &d1, 1, true), x, 0, 0);
}

/* A kept dim of stride 0 (an expanded view) that the reduction vectorizes
 * along: its block width once divided by that stride (SIGFPE, found by
 * test_programs). Every kind against the same values made contiguous. */
static void test_expanded_kept_dim(void **state)
{
    (void)state;
    tj_tensor *x = tj_expand(tj_randn(TJ_F32, 2, (int64_t[]){1, 7}), 2, (int64_t[]){16, 7});
    tj_tensor *xc = tj_contiguous(x);
    int d1 = 1;
    tu_assert_close(tj_sum(x, &d1, 1, true), tj_sum(xc, &d1, 1, true), 1e-6, 1e-6);
    tu_assert_close(tj_mean(x, &d1, 1, false), tj_mean(xc, &d1, 1, false), 1e-6, 1e-6);
    tu_assert_close(tj_amax(x, &d1, 1, false), tj_amax(xc, &d1, 1, false), 0, 0);
    tu_assert_close(tj_var(x, &d1, 1, 1, false), tj_var(xc, &d1, 1, 1, false), 1e-6, 1e-6);
    tu_assert_close(tj_argmin(x, 1, false), tj_argmin(xc, 1, false), 0, 0);
}

static void test_nan_and_ties(void **state)
{
    (void)state;
    tj_tensor *x = f32v(6, (double[]){1, NAN, 3, NAN, 3, -1});
    assert_true(isnan(tj_item(tj_amax(x, NULL, 0, false))));
    assert_true(isnan(tj_item(tj_amin(x, NULL, 0, false))));
    assert_true(tj_item(tj_argmax(x, 0, false)) == 1);   /* the first NaN */
    assert_true(tj_item(tj_argmin(x, TJ_ALL_DIMS, false)) == 1);
    tj_tensor *t = f32v(5, (double[]){2, 7, 7, -3, -3});
    assert_true(tj_item(tj_argmax(t, 0, false)) == 1);
    assert_true(tj_item(tj_argmin(t, 0, false)) == 3);
    assert_true(tj_item(tj_any(f32v(2, (double[]){0, NAN}), NULL, 0, false)) == 1);
}

/* i64 sums are exact beyond 2^53 and wrap on overflow like PyTorch. */
static void test_int_exact(void **state)
{
    (void)state;
    int64_t v[3] = {(1LL << 60) + 1, 3, INT64_MAX};
    tj_tensor *x = tj_from_data(TJ_I64, 1, (int64_t[]){2}, v);
    int64_t s = *(int64_t *)tj_data(tj_sum(x, NULL, 0, false));
    assert_true(s == (1LL << 60) + 4);
    tj_tensor *w = tj_from_data(TJ_I64, 1, (int64_t[]){2}, v + 1);
    int64_t ws = *(int64_t *)tj_data(tj_sum(w, NULL, 0, false));
    assert_true(ws == (int64_t)((uint64_t)INT64_MAX + 3u));
    int64_t mx = *(int64_t *)tj_data(tj_amax(tj_from_data(TJ_I64, 1, (int64_t[]){3}, v), NULL, 0,
                                              false));
    assert_true(mx == INT64_MAX);
}

/* ---- errors ----------------------------------------------------------------------------- */

static void test_errors_dims(void **state)
{
    (void)state;
    tj_tensor *x = tj_zeros(TJ_F32, 3, (int64_t[]){2, 3, 4});
    tu_assert_error(tj_sum(x, (int[]){3}, 1, false), "sum(f32[2,3,4])", "dim 3 out of range",
                    NULL);
    tu_assert_error(tj_amax(x, (int[]){-4}, 1, false), "amax(f32[2,3,4])", "out of range", NULL);
    tu_assert_error(tj_mean(x, (int[]){0, -3}, 2, true), "mean(f32[2,3,4])", "appears twice",
                    NULL);
    tu_assert_error(tj_var(x, (int[]){1, 1}, 2, 1, false), "var(f32[2,3,4])", "appears twice",
                    NULL);
    tu_assert_error(tj_argmax(x, 5, false), "argmax(f32[2,3,4])", "out of range", NULL);
    tu_assert_error(tj_argmin(x, -4, true), "argmin(f32[2,3,4])", "out of range", NULL);
    tu_assert_error(tj_prod(x, NULL, 2, false), "prod(f32[2,3,4])", "dims is NULL", NULL);
    tu_assert_error(tj_all(x, (int[]){0}, -1, false), "all(f32[2,3,4])", "bad dims", NULL);
    tu_assert_error(tj_std(x, (int[]){0}, 99, 1, false), "std(f32[2,3,4])", "bad dims", NULL);
    tu_assert_error(tj_logsumexp(x, (int[]){0, 1, 2, 0}, 4, false), "logsumexp(f32[2,3,4])",
                    "appears twice", NULL);
    tu_assert_error(tj_any(x, (int[]){7}, 1, false), "any(f32[2,3,4])", "out of range", NULL);
    tu_assert_error(tj_amin(x, (int[]){0, 0}, 2, false), "amin(f32[2,3,4])", "twice", NULL);
    tu_assert_error(tj_sum(tj_scalar(TJ_F32, 1), (int[]){1}, 1, false), "sum(f32[])",
                    "out of range", NULL);
}

static void test_errors_dtypes(void **state)
{
    (void)state;
    tj_tensor *i = tj_zeros(TJ_I64, 2, (int64_t[]){2, 3});
    tj_tensor *b = tj_zeros(TJ_BOOL, 1, (int64_t[]){4});
    tu_assert_error(tj_mean(i, NULL, 0, false), "mean(i64[2,3])", "floating-point", NULL);
    tu_assert_error(tj_var(i, NULL, 0, 1, false), "var(i64[2,3])", "floating-point", NULL);
    tu_assert_error(tj_std(b, NULL, 0, 1, false), "std(bool[4])", "floating-point", NULL);
    tu_assert_error(tj_argmax(b, 0, false), "argmax(bool[4])", "bool", NULL);
    tu_assert_error(tj_argmin(b, TJ_ALL_DIMS, false), "argmin(bool[4])", "bool", NULL);
}

static void test_errors_empty(void **state)
{
    (void)state;
    tj_tensor *z = tj_zeros(TJ_F32, 2, (int64_t[]){0, 3});
    int d0 = 0;
    tu_assert_error(tj_amax(z, &d0, 1, false), "amax(f32[0,3])", "size 0", NULL);
    tu_assert_error(tj_amin(z, NULL, 0, false), "amin(f32[0,3])", "size 0", NULL);
    tu_assert_error(tj_argmax(z, 0, true), "argmax(f32[0,3])", "size 0", NULL);
    tu_assert_error(tj_argmin(z, TJ_ALL_DIMS, false), "argmin(f32[0,3])", "empty", NULL);
    /* the kept dim empty: fine, an empty result */
    assert_int_equal(tj_numel(tj_amax(z, (int[]){1}, 1, false)), 0);
}

/* argmax with two dims cannot come from tj_argmax; the op path still rejects
 * it (as it would a traced or parsed graph's node). */
static void test_errors_arg_two_dims(void **state)
{
    (void)state;
    tj_tensor *x = tj_zeros(TJ_F32, 2, (int64_t[]){2, 3});
    ir_attrs at = {0};
    ir_attr_dims(&at.a[0], (int[]){0, 1}, 2);
    tu_assert_error(fe_apply(OP_argmax, &x, 1, &at), "argmax(f32[2,3])", "one dim", NULL);
    tu_assert_error(fe_apply(OP_argmin, &x, 1, &at), "argmin(f32[2,3])", "one dim", NULL);
}

static void test_errors_null(void **state)
{
    (void)state;
    tu_assert_error(tj_sum(NULL, NULL, 0, false), "sum", "NULL", NULL);
    tu_assert_error(tj_mean(NULL, (int[]){0}, 1, false), "mean", "NULL", NULL);
    tu_assert_error(tj_prod(NULL, NULL, -1, false), "prod", "NULL", NULL);
    tu_assert_error(tj_amax(NULL, NULL, 0, false), "amax", "NULL", NULL);
    tu_assert_error(tj_amin(NULL, NULL, 0, false), "amin", "NULL", NULL);
    tu_assert_error(tj_logsumexp(NULL, NULL, 0, false), "logsumexp", "NULL", NULL);
    tu_assert_error(tj_all(NULL, NULL, 0, false), "all", "NULL", NULL);
    tu_assert_error(tj_any(NULL, NULL, 0, false), "any", "NULL", NULL);
    tu_assert_error(tj_var(NULL, NULL, 0, 1, false), "var", "NULL", NULL);
    tu_assert_error(tj_std(NULL, NULL, 0, 1, false), "std", "NULL", NULL);
    tu_assert_error(tj_argmax(NULL, 0, false), "argmax", "NULL", NULL);
    tu_assert_error(tj_argmin(NULL, TJ_ALL_DIMS, false), "argmin", "NULL", NULL);
    /* a NULL from an earlier failure keeps that failure's message */
    tj_tensor *bad = tj_sum(tj_zeros(TJ_F32, 1, (int64_t[]){2}), (int[]){4}, 1, false);
    tu_assert_error(tj_amax(bad, NULL, 0, false), "sum(f32[2])", "out of range", NULL);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
    const struct CMUnitTest tests[] = {
        T(test_golden_sum),         T(test_golden_mean),         T(test_golden_prod),
        T(test_golden_amax),        T(test_golden_amin),         T(test_golden_logsumexp),
        T(test_golden_all),         T(test_golden_any),          T(test_golden_var),
        T(test_golden_std),         T(test_golden_argmax),       T(test_golden_argmin),
        T(test_large_shapes),       T(test_large_full),          T(test_thread_invariance),
        T(test_scalar_and_size1),   T(test_nan_and_ties),        T(test_int_exact),
        T(test_expanded_kept_dim),
        T(test_errors_dims),        T(test_errors_dtypes),       T(test_errors_empty),
        T(test_errors_arg_two_dims), T(test_errors_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
