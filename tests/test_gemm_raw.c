/* test_gemm_raw.c - tjit's f32 GEMM with B packed in the call
 * (tjg_gemm_f32_raw, runtime/gemm.c) against double sums: A and B as they
 * are, transposed or strided, accumulate, every variant this CPU supports
 * on one and two threads; the row blocks it cuts (AVX2's half-panel order
 * on one thread, the others on two). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../runtime/gemm.h"
#include "util.h"
#include "util_gemm.h"

typedef tu_dims dims;

static int variants(tjg_isa *out) { return tu_gemm_variants(out, TJG_AMX, ""); }

/* tjg_gemm_f32_raw (B packed in the call, panel by panel) against double
 * sums, with A and B each stored as is or transposed (dW = dY^T X and
 * dX = dY W^T of a training step), accumulate with alpha (C's old value
 * kept), and a layout neither BLAS nor the fast packings take (strides 2). */
static void raw_case(dims d, int ta, int tb, bool acc)
{
    int64_t sa = d.m * d.k * 2 + 1, sb = d.k * d.n * 2 + 1, sc = d.m * d.n + 1;
    float *a = malloc((size_t)sa * 4), *b = malloc((size_t)sb * 4), *c = malloc((size_t)sc * 4);
    double *ref = calloc((size_t)sc, sizeof(double));
    tu_fill(a, sa, 3), tu_fill(b, sb, 4), tu_fill(c, sc, 5);
    /* ta/tb: 0 rows contiguous, 1 transposed, 2 every other element */
    int64_t ars = ta == 1 ? 1 : ta == 2 ? 2 * d.k : d.k, acs = ta == 1 ? d.m : ta == 2 ? 2 : 1;
    int64_t brs = tb == 1 ? 1 : tb == 2 ? 2 * d.n : d.n, bcs = tb == 1 ? d.k : tb == 2 ? 2 : 1;
    for (int64_t i = 0; i < d.m; i++)
        for (int64_t j = 0; j < d.n; j++) {
            double x = 0;
            for (int64_t kk = 0; kk < d.k; kk++)
                x += (double)a[i * ars + kk * acs] * b[kk * brs + j * bcs];
            ref[i * d.n + j] = acc ? c[i * d.n + j] + 0.5 * x : x;
        }
    tjg_epilogue e = {.accumulate = acc, .alpha = acc ? 0.5f : 0};
    assert_int_equal(tjg_gemm_f32_raw(d.m, a, ars, acs, b, brs, bcs, d.k, d.n, c, d.n, &e, NULL),
                     0);
    char what[128];
    snprintf(what, sizeof what, "f32 raw B %s ta %d tb %d acc %d %lldx%lldx%lld threads %d",
             tjg_isa_name(tjg_isa_current()), ta, tb, acc, (long long)d.m, (long long)d.n,
             (long long)d.k, tj_num_threads());
    tu_gemm_check_close(c, ref, d.m * d.n, 1e-5, what);
    free(a), free(b), free(c), free(ref);
}

static void test_f32_raw(void **state)
{
    (void)state;
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    /* rows not a multiple of MR, columns not of 32 or 16 (half panels),
     * k over one k-block, rows or panels too few for a task per thread,
     * and the training step's shapes (scaled down in k); several row blocks
     * with one k-block (P7's dW GEMMs: 512 rows, k = 128): an odd count of
     * row blocks, a part panel last, k a whole k-block */
    static const dims more[] = {{127, 33, 5},  {128, 512, 300}, {300, 97, 520},
                                {40, 10, 128}, {2, 700, 9},     {26, 8, 3},
                                {265, 64, 257}, {520, 200, 128}, {265, 33, 256},
                                {600, 97, 17}};
    int threads = tj_num_threads();
    /* th 3: two threads with TJIT_GEMM_SMALL=0, so the small shapes split
     * over the pool too (they run on the calling thread by default) */
    for (int th = 1; th <= 3; th++) {
        tj_set_num_threads(th > 1 ? 2 : 1);
        if (th == 3)
            setenv("TJIT_GEMM_SMALL", "0", 1);
        for (int v = 0; v < nv; v++) {
            tjg_isa_force(vs[v]);
            for (size_t s = 0; s < tu_gemm_nshapes + sizeof more / sizeof more[0]; s++) {
                dims d = s < tu_gemm_nshapes ? tu_gemm_shapes[s] : more[s - tu_gemm_nshapes];
                for (int ta = 0; ta < 3; ta++)
                    for (int tb = 0; tb < 3; tb++)
                        raw_case(d, ta, tb, (ta + tb) % 2 == 1);
            }
        }
    }
    unsetenv("TJIT_GEMM_SMALL");
    tj_set_num_threads(threads);
    tjg_isa_force(-1);
}

/* The row blocks of tjg_gemm_f32_raw on the AVX2 half-panel order
 * (gemm.c, half_rows): with k under one k-block, A's block holds as many
 * rows as 264 x 256 floats (P7's dW = dY^T X, 512 x 784 x 128 with A
 * transposed: one block, so B is packed once, not twice); from one k-block
 * of k up, 264 rows as before. One thread; the values are raw_case's. */
static void test_raw_row_blocks(void **state)
{
    (void)state;
    if (tjg_isa_current() != TJG_AVX2) {
        printf("#summary skipped raw row blocks: not the avx2 variant\n");
        return;
    }
    int threads = tj_num_threads();
    tj_set_num_threads(1);
    static const struct { dims d; unsigned long long blocks; } cs[] = {
        {{512, 784, 128}, 1}, {{600, 97, 17}, 1}, {{1100, 64, 64}, 2},
        {{512, 200, 256}, 2}, {{600, 97, 300}, 3}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        dims d = cs[i].d;
        float *a = malloc((size_t)(d.m * d.k) * 4), *b = malloc((size_t)(d.k * d.n) * 4),
              *c = malloc((size_t)(d.m * d.n) * 4);
        tu_fill(a, d.m * d.k, 6), tu_fill(b, d.k * d.n, 7);
        unsigned long long before = tjg_raw_row_blocks();
        assert_int_equal(tjg_gemm_f32_raw(d.m, a, 1, d.m, b, d.n, 1, d.k, d.n, c, d.n, NULL, NULL),
                         0);
        if (tjg_raw_row_blocks() - before != cs[i].blocks)
            fail_msg("%lldx%lldx%lld: %llu row blocks, want %llu", (long long)d.m,
                     (long long)d.n, (long long)d.k, tjg_raw_row_blocks() - before, cs[i].blocks);
        raw_case(d, 1, 0, false);
        free(a), free(b), free(c);
    }
    tj_set_num_threads(threads);
}

/* The row blocks of tjg_gemm_f32_raw on two threads outside AVX2's
 * half-panel order (gemm.c, run): up to two blocks' rows (192) with fewer
 * tasks than two per thread in one block, the columns cut per thread (P7's
 * forward, 128 rows: 96 + 32 before, the caller's task three times the
 * other's); more rows in even blocks (200: 72 + 72 + 56); one thread, MC's
 * blocks. The values are raw_case's. */
static void test_raw_row_blocks_threads(void **state)
{
    (void)state;
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs), threads = tj_num_threads();
    static const struct { dims d; int th; unsigned long long blocks; } cs[] = {
        {{128, 512, 300}, 2, 1}, {{192, 512, 64}, 2, 1}, {{200, 512, 64}, 2, 3},
        {{128, 40, 64}, 2, 2},   /* small (tjg_small): on the calling thread alone */
        {{128, 512, 300}, 1, 2}};
    for (int v = 0; v < nv; v++) {
        if (vs[v] == TJG_AVX2 || vs[v] == TJG_AMX)
            continue;
        tjg_isa_force(vs[v]);
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            dims d = cs[i].d;
            tj_set_num_threads(cs[i].th);
            float *a = malloc((size_t)(d.m * d.k) * 4), *b = malloc((size_t)(d.k * d.n) * 4),
                  *c = malloc((size_t)(d.m * d.n) * 4);
            tu_fill(a, d.m * d.k, 6), tu_fill(b, d.k * d.n, 7);
            unsigned long long before = tjg_raw_row_blocks();
            assert_int_equal(tjg_gemm_f32_raw(d.m, a, d.k, 1, b, 1, d.k, d.k, d.n, c, d.n, NULL,
                                              NULL), 0);
            if (tjg_raw_row_blocks() - before != cs[i].blocks)
                fail_msg("%s %lldx%lldx%lld on %d threads: %llu row blocks, want %llu",
                         tjg_isa_name(vs[v]), (long long)d.m, (long long)d.n, (long long)d.k,
                         cs[i].th, tjg_raw_row_blocks() - before, cs[i].blocks);
            raw_case(d, 0, 1, false);
            free(a), free(b), free(c);
        }
    }
    tj_set_num_threads(threads);
    tjg_isa_force(-1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32_raw),
        cmocka_unit_test(test_raw_row_blocks),
        cmocka_unit_test(test_raw_row_blocks_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
