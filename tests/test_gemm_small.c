/* test_gemm_small.c - the small GEMMs (runtime/gemm_small.c): the size rule
 * (tjg_small) at its edges and under TJIT_GEMM_SMALL; the direct tiles
 * (tjg_gemm_f32_small) of every variant this CPU supports against double
 * sums, over row groups of 1-6, masked column tails, k = 0, A as is,
 * transposed or strided, B with padded rows, accumulate, and C's padding
 * left alone; the dot products (tjg_gemm_f32_small_dot) likewise over
 * their row pairs, column groups and masked k tails; eager matmul and linear of small shapes (P7's three among
 * them) at the rule's edges (3 x 2^18; the dot products' k >= 32 and 16 rows
 * or columns, through linear's x @ w^T), with the rule on and off (OpenBLAS or tjit's
 * GEMM on one thread or two), on one and two threads, against double sums. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/gemm.h"
#include "../runtime/rt.h"
#include "util.h"
#include "util_gemm.h"

static void check_close(const float *got, const double *want, int64_t n, double tol,
                        const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]))))
            fail_msg("%s: element %lld: %.9g, want %.9g", what, (long long)i, got[i], want[i]);
}

static void test_rule(void **state)
{
    (void)state;
    unsetenv("TJIT_GEMM_SMALL");
    int64_t lim = (int64_t)3 << 18;
    assert_true(tjg_small(1, 1, 1));
    assert_true(tjg_small(128, 512, 10));   /* P7's three: 655360 */
    assert_true(tjg_small(10, 512, 128));
    assert_true(tjg_small(128, 10, 512));
    assert_true(tjg_small(1024, 768, 1));   /* exactly 3 x 2^18 */
    assert_true(tjg_small(1, 1, lim));
    assert_false(tjg_small(1, 1, lim + 1));
    assert_false(tjg_small(1025, 768, 1));
    assert_false(tjg_small(128, 512, 13));  /* 851968 */
    assert_true(tjg_small(128, 512, 12));   /* 786432 */
    assert_true(tjg_small(lim, 1, 0));      /* k = 0 counts as 1 */
    assert_false(tjg_small(lim + 1, 1, 0));
    assert_true(tjg_small(0, 5, 5));
    setenv("TJIT_GEMM_SMALL", "1000", 1);
    assert_true(tjg_small(10, 10, 10));
    assert_false(tjg_small(10, 10, 11));
    assert_false(tjg_small(11, 10, 10));
    setenv("TJIT_GEMM_SMALL", "0", 1);      /* never */
    assert_false(tjg_small(1, 1, 1));
    setenv("TJIT_GEMM_SMALL", "9000000000000000000", 1);   /* no overflow */
    assert_true(tjg_small((int64_t)1 << 20, (int64_t)1 << 20, (int64_t)1 << 20));
    assert_false(tjg_small((int64_t)1 << 21, (int64_t)1 << 21, (int64_t)1 << 21));
    setenv("TJIT_GEMM_SMALL", "x", 1);      /* not a count: the default */
    assert_true(tjg_small(1024, 768, 1));
    assert_false(tjg_small(1025, 768, 1));
    unsetenv("TJIT_GEMM_SMALL");
}

typedef struct dims { int64_t m, n, k; } dims;

/* a, b, c of sa, sb, sc floats from one seed. */
static void fill3(float **a, int64_t sa, float **b, int64_t sb, float **c, int64_t sc,
                  unsigned seed)
{
    *a = malloc((size_t)sa * 4), *b = malloc((size_t)sb * 4), *c = malloc((size_t)sc * 4);
    for (int64_t i = 0; i < sa; i++)
        (*a)[i] = tu_frand(&seed);
    for (int64_t i = 0; i < sb; i++)
        (*b)[i] = tu_frand(&seed);
    for (int64_t i = 0; i < sc; i++)
        (*c)[i] = tu_frand(&seed);
}

/* C's m x n part (rows ldc apart) against ref; the 3 floats after each of
 * the first 64 rows as saved in pad before the call. */
static void check_c(const float *c, int64_t ldc, const double *ref, dims d, const float *pad,
                    const char *what)
{
    float *got = calloc((size_t)(d.m * d.n + 1), 4);
    for (int64_t i = 0; i < d.m; i++)
        memcpy(got + i * d.n, c + i * ldc, (size_t)d.n * 4);
    check_close(got, ref, d.m * d.n, 1e-6 * (4 + sqrt((double)d.k)), what);
    for (int64_t i = 0; i < d.m && i < 64; i++)
        if (memcmp(pad + 3 * i, c + i * ldc + d.n, 3 * 4))
            fail_msg("%s: row %lld's padding written", what, (long long)i);
    free(got);
}

/* One shape: A layout ta (0 rows contiguous, 1 transposed, 2 every other
 * element), B's rows ldb = n + 5 apart, C's ldc = n + 3 (padding checked). */
static void small_case(dims d, int ta, bool acc)
{
    int64_t ldb = d.n + 5, ldc = d.n + 3;
    float *a, *b, *c;
    fill3(&a, d.m * d.k * 2 + 1, &b, d.k * ldb + 1, &c, d.m * ldc + 1, 7);
    double *ref = calloc((size_t)(d.m * d.n + 1), sizeof(double));
    int64_t rs = ta == 1 ? 1 : ta == 2 ? 2 * d.k : d.k, cs = ta == 1 ? d.m : ta == 2 ? 2 : 1;
    for (int64_t i = 0; i < d.m; i++)
        for (int64_t j = 0; j < d.n; j++) {
            double x = acc ? c[i * ldc + j] : 0;
            for (int64_t kk = 0; kk < d.k; kk++)
                x += (double)a[i * rs + kk * cs] * b[kk * ldb + j];
            ref[i * d.n + j] = x;
        }
    float pad[3 * 64];
    for (int64_t i = 0; i < d.m && i < 64; i++)
        memcpy(pad + 3 * i, c + i * ldc + d.n, 3 * 4);
    tjg_gemm_f32_small(d.m, d.n, d.k, a, rs, cs, b, ldb, c, ldc, acc);
    char what[128];
    snprintf(what, sizeof what, "small %s ta %d acc %d %lldx%lldx%lld",
             tjg_isa_name(tjg_isa_current()), ta, acc, (long long)d.m, (long long)d.n,
             (long long)d.k);
    check_c(c, ldc, ref, d, pad, what);
    free(a), free(b), free(c), free(ref);
}

/* Dot products: A's rows lda = k + 3 apart, B's columns ldb = k + 5, C's
 * rows ldc = n + 3 (padding checked). */
static void dot_case(dims d, bool acc)
{
    int64_t lda = d.k + 3, ldb = d.k + 5, ldc = d.n + 3;
    float *a, *b, *c;
    fill3(&a, d.m * lda + 1, &b, d.n * ldb + 1, &c, d.m * ldc + 1, 11);
    double *ref = calloc((size_t)(d.m * d.n + 1), sizeof(double));
    for (int64_t i = 0; i < d.m; i++)
        for (int64_t j = 0; j < d.n; j++) {
            double x = acc ? c[i * ldc + j] : 0;
            for (int64_t kk = 0; kk < d.k; kk++)
                x += (double)a[i * lda + kk] * b[j * ldb + kk];
            ref[i * d.n + j] = x;
        }
    float pad[3 * 64];
    for (int64_t i = 0; i < d.m && i < 64; i++)
        memcpy(pad + 3 * i, c + i * ldc + d.n, 3 * 4);
    tjg_gemm_f32_small_dot(d.m, d.n, d.k, a, lda, b, ldb, c, ldc, acc);
    char what[128];
    snprintf(what, sizeof what, "dot %s acc %d %lldx%lldx%lld", tjg_isa_name(tjg_isa_current()),
             acc, (long long)d.m, (long long)d.n, (long long)d.k);
    check_c(c, ldc, ref, d, pad, what);
    free(a), free(b), free(c), free(ref);
}

/* Row groups 1-6 and their tails (m 1-13), columns around 8 and 16 (the
 * masked halves), k = 0, 1 and P7's sizes scaled. */
static void small_cases(tjg_isa isa, void *ctx)
{
    (void)isa, (void)ctx;
    static const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 11, 12, 13};
    static const int64_t ns[] = {1, 7, 8, 9, 15, 16, 17, 33, 70};
    static const int64_t ks[] = {0, 1, 10, 37};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
            for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++)
                small_case((dims){ms[i], ns[j], ks[q]}, (int)((i + j + q) % 3), (i + q) % 2);
    /* dot: row pairs and a last single row, column groups of 1-4, k
     * around 8 (the masked tail) */
    static const int64_t dm[] = {1, 2, 3, 5}, dn[] = {1, 2, 3, 4, 5, 9, 10};
    static const int64_t dk[] = {0, 1, 7, 8, 9, 33, 512};
    for (size_t i = 0; i < sizeof dm / sizeof dm[0]; i++)
        for (size_t j = 0; j < sizeof dn / sizeof dn[0]; j++)
            for (size_t q = 0; q < sizeof dk / sizeof dk[0]; q++)
                dot_case((dims){dm[i], dn[j], dk[q]}, (i + j + q) % 2);
    dot_case((dims){128, 10, 512}, false);   /* P7's logits */
    static const dims p7[] = {{128, 512, 10}, {10, 512, 128}, {64, 100, 130}};
    for (size_t s = 0; s < sizeof p7 / sizeof p7[0]; s++)
        for (int ta = 0; ta < 3; ta++)
            for (int acc = 0; acc < 2; acc++)
                small_case(p7[s], ta, acc);
}

static void test_small_variants(void **state)
{
    (void)state;
    tu_gemm_each(TJG_AMX, "", small_cases, NULL);
}

/* Eager matmul (A as is or transposed) and linear (x @ w^T + b) against
 * double sums. */
static void eager_case(dims d, bool ta, const char *env)
{
    tj_scope_begin();
    int64_t ash[2] = {ta ? d.k : d.m, ta ? d.m : d.k};
    tj_tensor *as = tj_randn(TJ_F32, 2, ash), *b = tj_randn(TJ_F32, 2, (int64_t[]){d.k, d.n});
    tj_tensor *a = ta ? tj_transpose(as, 0, 1) : as;
    tj_tensor *w = tj_randn(TJ_F32, 2, (int64_t[]){d.n, d.k});
    tj_tensor *bias = tj_randn(TJ_F32, 1, (int64_t[]){d.n});
    const float *pa = tj_data(as), *pb = tj_data(b), *pw = tj_data(w), *pbias = tj_data(bias);
    double *ref = calloc((size_t)(d.m * d.n + 1), sizeof(double));
    double *lref = calloc((size_t)(d.m * d.n + 1), sizeof(double));
    for (int64_t i = 0; i < d.m; i++)
        for (int64_t j = 0; j < d.n; j++) {
            lref[i * d.n + j] = pbias[j];
            for (int64_t kk = 0; kk < d.k; kk++) {
                double x = ta ? pa[kk * d.m + i] : pa[i * d.k + kk];
                ref[i * d.n + j] += x * pb[kk * d.n + j];
                lref[i * d.n + j] += x * pw[j * d.k + kk];
            }
        }
    char what[128];
    snprintf(what, sizeof what, "TJIT_GEMM_SMALL=%s threads %d ta %d %lldx%lldx%lld",
             env ? env : "unset", tj_num_threads(), ta, (long long)d.m, (long long)d.n,
             (long long)d.k);
    double tol = 1e-5 * (1 + sqrt((double)d.k));
    tj_tensor *c = tj_matmul(a, b), *l = tj_linear(a, w, bias);
    assert_non_null(c);
    assert_non_null(l);
    check_close(tj_data(c), ref, d.m * d.n, tol, what);
    check_close(tj_data(l), lref, d.m * d.n, tol, what);
    free(ref), free(lref);
    tj_scope_end();
}

/* A strided vector on the left (one row: A's column stride 2) and on the
 * right (one column), of a matrix and of a linear's weight. */
static void vector_case(int64_t n, int64_t k)
{
    tj_scope_begin();
    tj_tensor *v2 = tj_randn(TJ_F32, 1, (int64_t[]){2 * k}), *v = tj_slice(v2, 0, 0, 2 * k, 2);
    tj_tensor *b = tj_randn(TJ_F32, 2, (int64_t[]){k, n}), *w = tj_randn(TJ_F32, 2, (int64_t[]){n, k});
    tj_tensor *bt = tj_randn(TJ_F32, 2, (int64_t[]){n, k});
    const float *pv = tj_data(v2), *pb = tj_data(b), *pw = tj_data(w), *pbt = tj_data(bt);
    double *r = calloc((size_t)(3 * n), sizeof(double));
    for (int64_t j = 0; j < n; j++)
        for (int64_t kk = 0; kk < k; kk++) {
            r[j] += (double)pv[2 * kk] * pb[kk * n + j];
            r[n + j] += (double)pv[2 * kk] * pw[j * k + kk];
            r[2 * n + j] += (double)pbt[j * k + kk] * pv[2 * kk];
        }
    tj_tensor *c[3] = {tj_matmul(v, b), tj_linear(v, w, NULL), tj_matmul(bt, v)};
    char what[96];
    snprintf(what, sizeof what, "vector threads %d n %lld k %lld", tj_num_threads(),
             (long long)n, (long long)k);
    for (int q = 0; q < 3; q++) {
        assert_non_null(c[q]);
        check_close(tj_data(c[q]), r + q * n, n, 1e-5 * (1 + sqrt((double)k)), what);
    }
    free(r);
    tj_scope_end();
}

static void test_eager(void **state)
{
    (void)state;
    /* P7's three; the rule's edge exactly and one k over it; few rows, one column */
    static const dims ds[] = {{128, 512, 10}, {10, 512, 128}, {128, 10, 512}, {128, 512, 12},
                              {128, 512, 13}, {3, 40, 7},     {30, 1, 20},    {20, 16, 31},
                              {20, 16, 32},   {20, 17, 32},   {17, 40, 32},   {16, 40, 32}};
    static const char *env[3] = {NULL, "0", "4096"};
    int threads = tj_num_threads();
    for (int th = 1; th <= 2; th++) {
        tj_set_num_threads(th);
        for (int e = 0; e < 3; e++) {
            if (env[e])
                setenv("TJIT_GEMM_SMALL", env[e], 1);
            else
                unsetenv("TJIT_GEMM_SMALL");
            for (size_t s = 0; s < sizeof ds / sizeof ds[0]; s++)
                for (int ta = 0; ta < 2; ta++)
                    eager_case(ds[s], ta, env[e]);
            vector_case(10, 512);
            vector_case(40, 33);
        }
    }
    unsetenv("TJIT_GEMM_SMALL");
    tj_set_num_threads(threads);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_small_variants),
        cmocka_unit_test(test_eager),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
