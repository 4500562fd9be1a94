/* test_gemm_rows.c - the row quantizer of tjit's int8 GEMM
 * (tjg_quantize_rows_u8, runtime/gemm.h): the u8 rows, scales and zero
 * points quantize_dynamic feeds the u8 x s8 kernels.
 *
 *   test_quantize_rows       scale, zero point, NaN, qmax 127 (7-bit rows for
 *                            the AVX2 kernel) and 255, a long row, the same
 *                            bytes under every variant the CPU has
 *   test_quantize_rows_avx2  the AVX2 quantizer's bytes, scales and zero
 *                            points equal the generic loop's (halves, NaN,
 *                            infinities, both clamps, 1 and 2 threads)
 */
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

static float frand(unsigned *s) { return tu_frand(s); }

static int variants(tjg_isa *out) { return tu_gemm_variants(out, TJG_AMX, ""); }

static void test_quantize_rows(void **state)
{
    (void)state;
    float x[2][5] = {{-1.0f, 0.0f, 0.5f, 2.0f, 1.0f}, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f}};
    uint8_t q[10];
    float s[2];
    int32_t zp[2];
    tjg_quantize_rows_u8(2, 5, &x[0][0], 5, q, s, zp, 255);
    assert_true(fabsf(s[0] - 3.0f / 255) < 1e-7f);
    assert_int_equal(zp[0], 85);
    assert_int_equal(q[0], 0);
    assert_int_equal(q[1], 85);
    assert_int_equal(q[3], 255);
    for (int j = 0; j < 5; j++)   /* dequantized within half a step */
        assert_true(fabsf((float)(q[j] - zp[0]) * s[0] - x[0][j]) <= s[0] / 2 + 1e-6f);
    assert_true(s[1] == 1.0f && zp[1] == 0 && q[5] == 0);
    /* a NaN: out of the range, quantized to the zero point */
    float y[4] = {NAN, -1.0f, 1.0f, 0.0f};
    uint8_t qy[4];
    tjg_quantize_rows_u8(1, 4, y, 4, qy, s, zp, 255);
    assert_true(fabsf(s[0] - 2.0f / 255) < 1e-7f);
    assert_int_equal(qy[0], zp[0]);
    for (int j = 1; j < 4; j++)
        assert_true(fabsf((float)(qy[j] - zp[0]) * s[0] - y[j]) <= s[0] / 2 + 1e-6f);
    /* qmax 127 (reduce_range): 7-bit values, the step doubled */
    tjg_quantize_rows_u8(2, 5, &x[0][0], 5, q, s, zp, 127);
    assert_true(fabsf(s[0] - 3.0f / 127) < 1e-7f);
    assert_int_equal(zp[0], 42);
    assert_int_equal(q[0], 0);
    assert_int_equal(q[3], 127);
    for (int j = 0; j < 10; j++)
        assert_true(q[j] <= 127);
    for (int j = 0; j < 5; j++)
        assert_true(fabsf((float)(q[j] - zp[0]) * s[0] - x[0][j]) <= s[0] / 2 + 1e-6f);
    assert_true(s[1] == 1.0f && zp[1] == 0 && q[5] == 0);
    /* a long row (AVX2's min/max over 32-element blocks, then the tail):
     * a NaN in a block, the min in a block, the max in the tail; the same
     * under every variant */
    float z[70];
    uint8_t qz[70], qz0[70];
    for (int j = 0; j < 70; j++)
        z[j] = 0.01f * (float)(j % 13) - 0.05f;
    z[3] = NAN, z[40] = -3.0f, z[69] = 5.0f;
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        tjg_quantize_rows_u8(1, 70, z, 70, qz, s, zp, 255);
        assert_true(fabsf(s[0] - 8.0f / 255) < 1e-6f);
        assert_int_equal(qz[3], zp[0]);
        assert_int_equal(qz[40], 0);
        assert_int_equal(qz[69], 255);
        if (v == 0)
            memcpy(qz0, qz, sizeof qz);
        assert_memory_equal(qz, qz0, sizeof qz);
    }
    tjg_isa_force(-1);
}

/* The AVX2 row quantizer (tjg_quantize_avx2: 32 elements at a time, the
 * scalar loop for the tail) gives the generic variant's bytes, scales and
 * zero points: rows of 1-1030 elements, halves that round to even (a row
 * of step 1), NaNs and infinities in the vector part and the tail, values
 * at both clamps; qmax 127 and 255; 1 and 2 threads (rows split). */
static void test_quantize_rows_avx2(void **state)
{
    (void)state;
    enum { M = 150 };
    static const int64_t ks[] = {1, 31, 32, 33, 97, 1030};
    int threads = tj_num_threads();
    for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
        int64_t k = ks[t];
        float *x = malloc((size_t)(M * k) * 4);
        uint8_t *q = malloc((size_t)(M * k)), *q0 = malloc((size_t)(M * k));
        float s[M], s0[M];
        int32_t zp[M], zp0[M];
        unsigned seed = 11;
        for (int64_t i = 0; i < M * k; i++)
            x[i] = (frand(&seed) - 0.3f) * (float)(1 + i / k % 7);
        for (int64_t j = 0; j < k; j++)   /* row 1: step 1, halves (j / 2 + 0.5) */
            x[k + j] = j == 0 ? 0.0f : j == k - 1 ? 127.0f : (float)(j % 254) * 0.5f;
        x[2 * k + k / 2] = NAN, x[3 * k + k - 1] = NAN;
        x[4 * k] = INFINITY, x[5 * k + k / 3] = -INFINITY;
        for (int qmax = 127; qmax <= 255; qmax += 128)
            for (int th = 1; th <= 2; th++) {
                tj_set_num_threads(th);
                tjg_isa_force(TJG_GENERIC);
                tjg_quantize_rows_u8(M, k, x, k, q0, s0, zp0, qmax);
                tjg_isa_force(-1);
                tjg_quantize_rows_u8(M, k, x, k, q, s, zp, qmax);
                assert_memory_equal(q, q0, (size_t)(M * k));
                assert_memory_equal(s, s0, sizeof s);
                assert_memory_equal(zp, zp0, sizeof zp);
            }
        free(x), free(q), free(q0);
    }
    tj_set_num_threads(threads);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_rows),
        cmocka_unit_test(test_quantize_rows_avx2),
    };
    return cmocka_run_group_tests_name("gemm_rows", tests, NULL, NULL);
}
