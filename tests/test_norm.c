/* test_norm.c - softmax, log_softmax, layer_norm, rms_norm and batch_norm
 * against PyTorch: the cases of tests/golden/norm/cases.txt (made by
 * scripts/golden/norm.py) over f32 and f64, every dim, contiguous and
 * permuted/sliced/expanded inputs, optional weight and bias, empty tensors
 * and extreme values; then large shapes against a double reference, and
 * every error path of the rules. */
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

/* ---- golden cases ------------------------------------------------------------------- */

typedef struct gcase {
    char op[16], x[16], view[4], arg[8], eps[32], p[4][16], dt[8], shape[64];
    long off;
} gcase;

static tj_tensor *load(const char *name)
{
    char b[32];
    if (!strcmp(name, "-"))
        return NULL;
    snprintf(b, sizeof b, "in_%s", name);
    return tu_golden("norm", b);
}

static tj_tensor *run_op(const gcase *c)
{
    tj_tensor *x = tu_view(load(c->x), c->view[0]);
    tj_tensor *w = load(c->p[0]), *b = load(c->p[1]), *m = load(c->p[2]), *v = load(c->p[3]);
    int arg = atoi(c->arg);
    double eps = atof(c->eps);
    assert_non_null(x);
    if (!strcmp(c->op, "softmax")) return tj_softmax(x, arg);
    if (!strcmp(c->op, "log_softmax")) return tj_log_softmax(x, arg);
    if (!strcmp(c->op, "layer_norm")) return tj_layer_norm(x, arg, w, b, eps);
    if (!strcmp(c->op, "rms_norm")) return tj_rms_norm(x, arg, w, eps);
    if (!strcmp(c->op, "batch_norm")) return tj_batch_norm(x, m, v, w, b, eps);
    fail_msg("unknown op %s in cases.txt", c->op);
    return NULL;
}

static void check_case(const gcase *c, tj_tensor *want_all)
{
    tj_tensor *got = run_op(c);
    if (!got)
        fail_msg("%s %s %s %s: %s", c->op, c->x, c->view, c->arg, tj_last_error());
    tj_tensor *want = tu_golden_part(want_all, c->off, c->shape);
    if (strcmp(tj_dtype_name(tj_dtype_of(got)), c->dt))
        fail_msg("%s %s: dtype %s, expected %s", c->op, c->x, tj_dtype_name(tj_dtype_of(got)),
                 c->dt);
    double tol = strcmp(c->dt, "f64") ? 1e-5 : 1e-12;
    if (!tu_all_close(got, want, tol))
        print_error("case: %s %s %s %s eps %s\n", c->op, c->x, c->view, c->arg, c->eps);
    tu_assert_close_any(got, want, tol, tol);
}

static void run_cases(const char *op)
{
    char line[256];
    FILE *f = tu_golden_cases("norm");
    tj_tensor *want = tu_golden("norm", "want");
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        gcase c;
        if (sscanf(line, "%15s %15s %3s %7s %31s %15s %15s %15s %15s %7s %63s %ld", c.op, c.x,
                   c.view, c.arg, c.eps, c.p[0], c.p[1], c.p[2], c.p[3], c.dt, c.shape,
                   &c.off) != 12 ||
            strcmp(c.op, op))
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
GOLDEN_TEST(softmax)
GOLDEN_TEST(log_softmax)
GOLDEN_TEST(layer_norm)
GOLDEN_TEST(rms_norm)
GOLDEN_TEST(batch_norm)

/* ---- large shapes against a double reference ------------------------------------------ */

/* softmax (lg: log_softmax) of row r of a contiguous f32 [R, C] over dim 1, at column j. */
static double ref_softmax(const float *x, int64_t C, int64_t r, int64_t j, bool lg)
{
    double m = -INFINITY, s = 0;
    for (int64_t k = 0; k < C; k++)
        m = fmax(m, x[r * C + k]);
    for (int64_t k = 0; k < C; k++)
        s += exp(x[r * C + k] - m);
    return lg ? x[r * C + j] - m - log(s) : exp(x[r * C + j] - m) / s;
}

static void test_large_softmax(void **state)
{
    (void)state;
    tj_manual_seed(11);
    const int64_t R = 257, C = 5003;
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){R, C});
    tj_tensor *xt = tj_contiguous(tj_transpose(x, 0, 1));   /* [C, R]: softmax over dim 0 */
    const float *p = tj_data(x);
    for (int lg = 0; lg < 2; lg++) {
        tj_tensor *y = lg ? tj_log_softmax(x, 1) : tj_softmax(x, 1);
        tj_tensor *yt = lg ? tj_log_softmax(xt, 0) : tj_softmax(xt, 0);
        assert_non_null(y);
        assert_non_null(yt);
        for (int64_t r = 0; r < R; r += 17)
            for (int64_t j = 0; j < C; j += 331) {
                double want = ref_softmax(p, C, r, j, lg);
                double a = tj_get(y, (int64_t[]){r, j}), b = tj_get(yt, (int64_t[]){j, r});
                assert_true(fabs(a - want) <= 1e-5 * (1e-3 + fabs(want)));
                assert_true(fabs(b - want) <= 1e-5 * (1e-3 + fabs(want)));
            }
    }
}

static void test_large_layer_norm(void **state)
{
    (void)state;
    tj_manual_seed(12);
    const int64_t R = 64, C = 9001;
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){R, C});
    tj_tensor *w = tj_randn(TJ_F32, 1, (int64_t[]){C}), *b = tj_randn(TJ_F32, 1, (int64_t[]){C});
    tj_tensor *y = tj_layer_norm(x, 1, w, b, 1e-5), *z = tj_rms_norm(x, 1, w, 1e-5);
    assert_non_null(y);
    assert_non_null(z);
    const float *p = tj_data(x), *pw = tj_data(w), *pb = tj_data(b);
    for (int64_t r = 0; r < R; r += 7) {
        double s = 0, s2 = 0, q = 0;
        for (int64_t k = 0; k < C; k++)
            s += p[r * C + k], q += (double)p[r * C + k] * p[r * C + k];
        double mean = s / C;
        for (int64_t k = 0; k < C; k++)
            s2 += (p[r * C + k] - mean) * (p[r * C + k] - mean);
        double rstd = 1 / sqrt(s2 / C + 1e-5), rr = 1 / sqrt(q / C + 1e-5);
        for (int64_t j = 0; j < C; j += 97) {
            double want = (p[r * C + j] - mean) * rstd * pw[j] + pb[j];
            double wz = p[r * C + j] * rr * pw[j];
            assert_true(fabs(tj_get(y, (int64_t[]){r, j}) - want) < 1e-4 * (1 + fabs(want)));
            assert_true(fabs(tj_get(z, (int64_t[]){r, j}) - wz) < 1e-4 * (1 + fabs(wz)));
        }
    }
}

/* Rows are independent: one thread or two give the same bits. */
static void test_thread_invariance(void **state)
{
    (void)state;
    tj_manual_seed(13);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){512, 300});
    int saved = tj_num_threads();
    tj_tensor *r[2][3];
    for (int k = 0; k < 2; k++) {
        tj_set_num_threads(k + 1);
        r[k][0] = tj_softmax(x, -1);
        r[k][1] = tj_softmax(x, 0);
        r[k][2] = tj_layer_norm(x, 1, NULL, NULL, 1e-5);
    }
    tj_set_num_threads(saved);
    for (int k = 0; k < 3; k++)
        tu_assert_close(r[0][k], r[1][k], 0, 0);
}

/* ---- errors ----------------------------------------------------------------------------- */

static tj_tensor *zeros(tj_dtype dt, int nd, const int64_t *shape)
{
    tj_tensor *t = tj_zeros(dt, nd, shape);
    assert_non_null(t);
    return t;
}

static void test_errors_softmax(void **state)
{
    (void)state;
    tj_tensor *x = zeros(TJ_F32, 2, (int64_t[]){2, 3});
    tj_tensor *i = zeros(TJ_I64, 2, (int64_t[]){2, 3});
    tu_assert_error(tj_softmax(x, 2), "softmax(f32[2,3])", "dim 2 out of range", NULL);
    tu_assert_error(tj_log_softmax(x, -3), "log_softmax(f32[2,3])", "out of range", NULL);
    tu_assert_error(tj_softmax(i, 1), "softmax(i64[2,3])", "floating-point", NULL);
    tu_assert_error(tj_log_softmax(zeros(TJ_BOOL, 1, (int64_t[]){3}), 0), "log_softmax(bool[3])",
                    "floating-point", NULL);
    tu_assert_error(tj_softmax(tj_scalar(TJ_F32, 1), 1), "softmax(f32[])", "out of range", NULL);
    tu_assert_error(tj_softmax(NULL, 0), "softmax", "NULL", NULL);
    tu_assert_error(tj_log_softmax(NULL, 0), "log_softmax", "NULL", NULL);
}

static void test_errors_layer_norm(void **state)
{
    (void)state;
    tj_tensor *x = zeros(TJ_F32, 2, (int64_t[]){2, 3});
    tj_tensor *w4 = zeros(TJ_F32, 1, (int64_t[]){4}), *w3 = zeros(TJ_F32, 1, (int64_t[]){3});
    tj_tensor *w23 = zeros(TJ_F32, 2, (int64_t[]){2, 3}), *d3 = zeros(TJ_F64, 1, (int64_t[]){3});
    tu_assert_error(tj_layer_norm(x, 1, w4, NULL, 1e-5), "layer_norm(f32[2,3], f32[4], none)",
                    "weight shape must equal the normalized shape [3]", NULL);
    tu_assert_error(tj_layer_norm(x, 1, w3, w4, 1e-5), "layer_norm(f32[2,3], f32[3], f32[4])",
                    "bias shape", "[3]", NULL);
    tu_assert_error(tj_layer_norm(x, 1, w23, NULL, 1e-5), "layer_norm", "f32[2,3]",
                    "weight shape", NULL);
    tu_assert_error(tj_layer_norm(x, 2, w3, NULL, 1e-5), "weight shape",
                    "normalized shape [2,3]", NULL);
    tu_assert_error(tj_layer_norm(x, 1, d3, NULL, 1e-5), "layer_norm", "weight has dtype f64",
                    NULL);
    tu_assert_error(tj_layer_norm(x, 0, NULL, NULL, 1e-5), "layer_norm(f32[2,3], none, none)",
                    "ndims 0", NULL);
    tu_assert_error(tj_layer_norm(x, 3, NULL, NULL, 1e-5), "layer_norm", "ndims 3", NULL);
    tu_assert_error(tj_layer_norm(zeros(TJ_I32, 1, (int64_t[]){3}), 1, NULL, NULL, 1e-5),
                    "layer_norm(i32[3]", "floating-point", NULL);
    tu_assert_error(tj_layer_norm(NULL, 1, w3, NULL, 1e-5), "layer_norm", "NULL", NULL);
    tu_assert_error(tj_rms_norm(x, 1, w4, 1e-5), "rms_norm(f32[2,3], f32[4])",
                    "weight shape must equal the normalized shape [3]", NULL);
    tu_assert_error(tj_rms_norm(x, -1, NULL, 1e-5), "rms_norm", "ndims -1", NULL);
    tu_assert_error(tj_rms_norm(x, 1, d3, 1e-5), "rms_norm", "dtype f64", NULL);
    tu_assert_error(tj_rms_norm(zeros(TJ_I64, 1, (int64_t[]){3}), 1, NULL, 1e-5),
                    "rms_norm(i64[3]", "floating-point", NULL);
    tu_assert_error(tj_rms_norm(NULL, 1, NULL, 1e-5), "rms_norm", "NULL", NULL);
}

static void test_errors_batch_norm(void **state)
{
    (void)state;
    tj_tensor *x = zeros(TJ_F32, 3, (int64_t[]){2, 3, 4});
    tj_tensor *c3 = zeros(TJ_F32, 1, (int64_t[]){3}), *c4 = zeros(TJ_F32, 1, (int64_t[]){4});
    tj_tensor *c13 = zeros(TJ_F32, 2, (int64_t[]){1, 3}), *d3 = zeros(TJ_F64, 1, (int64_t[]){3});
    tu_assert_error(tj_batch_norm(x, c4, c3, NULL, NULL, 1e-5),
                    "batch_norm(f32[2,3,4], f32[4], f32[3], none, none)",
                    "running_mean must be 1-D of size C = 3", NULL);
    tu_assert_error(tj_batch_norm(x, c3, c13, NULL, NULL, 1e-5), "batch_norm",
                    "running_var must be 1-D", NULL);
    tu_assert_error(tj_batch_norm(x, c3, c3, c4, NULL, 1e-5), "batch_norm", "weight must be",
                    NULL);
    tu_assert_error(tj_batch_norm(x, c3, c3, c3, c4, 1e-5), "batch_norm", "bias must be", NULL);
    tu_assert_error(tj_batch_norm(x, d3, c3, NULL, NULL, 1e-5), "batch_norm",
                    "running_mean has dtype f64", NULL);
    tu_assert_error(tj_batch_norm(c3, c3, c3, NULL, NULL, 1e-5), "batch_norm(f32[3]",
                    "at least 2 dims", NULL);
    tu_assert_error(tj_batch_norm(zeros(TJ_I64, 2, (int64_t[]){2, 3}), c3, c3, NULL, NULL, 1e-5),
                    "batch_norm(i64[2,3]", "floating-point", NULL);
    tu_assert_error(tj_batch_norm(NULL, c3, c3, NULL, NULL, 1e-5), "batch_norm", "NULL", NULL);
    tu_assert_error(tj_batch_norm(x, NULL, c3, NULL, NULL, 1e-5), "batch_norm", "NULL", NULL);
    tu_assert_error(tj_batch_norm(x, c3, NULL, NULL, NULL, 1e-5), "batch_norm", "NULL", NULL);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
    const struct CMUnitTest tests[] = {
        T(test_golden_softmax),    T(test_golden_log_softmax), T(test_golden_layer_norm),
        T(test_golden_rms_norm),   T(test_golden_batch_norm),  T(test_large_softmax),
        T(test_large_layer_norm),  T(test_thread_invariance),  T(test_errors_softmax),
        T(test_errors_layer_norm), T(test_errors_batch_norm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
