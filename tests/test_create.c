/* test_create.c - creation and random ops: full/zeros/ones/empty/scalar,
 * arange against PyTorch (tests/golden/move), Philox against the Random123
 * known answers, and the rand/randn streams (determinism, thread count,
 * offsets, moments), plus every error path of the family. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/random.h"
#include "util.h"

#define S(...) (int64_t[]){__VA_ARGS__}

/* ---- full and friends ------------------------------------------------------------ */

static void test_zeros_ones_empty(void **state)
{
    (void)state;
    tj_dtype dts[] = {TJ_F32, TJ_F64, TJ_I32, TJ_I64, TJ_I16, TJ_I8, TJ_BOOL, TJ_U8};
    for (size_t k = 0; k < sizeof dts / sizeof *dts; k++) {
        tj_tensor *z = tj_zeros(dts[k], 2, S(3, 70000)), *o = tj_ones(dts[k], 2, S(3, 70000));
        tj_tensor *e = tj_empty(dts[k], 3, S(2, 0, 4));
        assert_non_null(z);
        assert_non_null(o);
        assert_non_null(e);
        assert_int_equal(tj_dtype_of(z), dts[k]);
        assert_int_equal(tj_numel(e), 0);
        assert_int_equal(tj_ndim(e), 3);
        assert_true(tj_get(z, S(2, 69999)) == 0 && tj_get(z, S(0, 0)) == 0);
        assert_true(tj_get(o, S(2, 69999)) == 1 && tj_get(o, S(1, 12345)) == 1);
    }
}

static void test_full_values(void **state)
{
    (void)state;
    struct { tj_dtype dt; double v, want; } c[] = {
        {TJ_F32, 0.1, (float)0.1}, {TJ_F64, -2.5, -2.5},  {TJ_I32, 1.7, 1},
        {TJ_I64, -3.9, -3},        {TJ_U8, -1, 255},      {TJ_BOOL, 0.5, 1},
        {TJ_BOOL, 0, 0},           {TJ_I32, NAN, 0},      {TJ_F32, INFINITY, INFINITY},
        {TJ_I8, -128, -128},       {TJ_I8, 2.9, 2},       {TJ_I16, -32768.5, -32768},
        {TJ_I16, 1234, 1234},
    };
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        tj_tensor *t = tj_full(c[k].dt, 1, S(5), c[k].v);
        assert_non_null(t);
        assert_true(tj_get(t, S(4)) == c[k].want);
    }
    tj_tensor *n = tj_full(TJ_F64, 1, S(3), NAN);
    assert_true(isnan(tj_get(n, S(2))));
}

static void test_scalar(void **state)
{
    (void)state;
    tj_tensor *s = tj_scalar(TJ_I64, 42);
    assert_non_null(s);
    assert_int_equal(tj_ndim(s), 0);
    assert_int_equal(tj_numel(s), 1);
    assert_true(tj_item(s) == 42);
}

static void test_create_errors(void **state)
{
    (void)state;
    tu_assert_error(tj_zeros(TJ_F32, 2, S(3, -1)), "full()", "negative size -1 in dim 1", NULL);
    tu_assert_error(tj_ones(TJ_C64, 1, S(3)), "full()", "unsupported dtype c64", NULL);
    tu_assert_error(tj_full((tj_dtype)99, 1, S(3), 0), "full()", "unknown dtype 99", NULL);
    tu_assert_error(tj_empty(TJ_F32, 9, S(1, 1, 1, 1, 1, 1, 1, 1, 1)), "full()",
                    "shape has 9 entries", NULL);
    tu_assert_error(tj_zeros(TJ_F32, 2, NULL), "full()", "shape is NULL for 2 dims", NULL);
    /* the count given and the limit, not a stand-in */
    int64_t twenty[20] = {0};
    tu_assert_error(tj_zeros(TJ_F32, 20, twenty), "full()", "shape has 20 entries (expected 0..8)",
                    NULL);
    tu_assert_error(tj_ones(TJ_F32, -3, twenty), "full()", "shape has -3 entries", NULL);
    tu_assert_error(tj_zeros(TJ_F32, 2, S(1LL << 40, 1LL << 40)), "full()",
                    "shape [1099511627776,1099511627776] has more than 2^63-1 elements", NULL);
}

/* ---- arange ------------------------------------------------------------------------ */

static void test_arange_golden(void **state)
{
    (void)state;
    struct { const char *name; tj_dtype dt; double s, e, st; } c[] = {
        {"ar_f32", TJ_F32, 0, 1, 0.1},         {"ar_f64", TJ_F64, 5, -3, -0.7},
        {"ar_i64", TJ_I64, 0, 5, 1.5},         {"ar_i32", TJ_I32, 0, 5, 1.5},
        {"ar_i64_neg", TJ_I64, -3, 10.5, 4},   {"ar_u8", TJ_U8, 250, 0, -7},
        {"ar_f32_long", TJ_F32, -1000, 1000, 0.37}, {"ar_empty", TJ_F32, 2, 2, 1},
        {"ar_i8", TJ_I8, -100, 100, 13},       {"ar_i16", TJ_I16, -30000, 30000, 1234.5},
    };
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        tj_tensor *got = tj_arange(c[k].dt, c[k].s, c[k].e, c[k].st);
        tu_assert_close(got, tu_golden("move", c[k].name), 1e-6, 1e-4);
    }
}

static void test_arange_errors(void **state)
{
    (void)state;
    tu_assert_error(tj_arange(TJ_F32, 0, 5, 0), "arange()", "step must be nonzero", NULL);
    tu_assert_error(tj_arange(TJ_I64, 0, 5, 0.5), "arange()", "step must be nonzero", NULL);
    tu_assert_error(tj_arange(TJ_F32, 0, 5, -1), "arange()", "wrong side", NULL);
    tu_assert_error(tj_arange(TJ_I32, 5, 0, 1), "arange()", "wrong side", NULL);
    tu_assert_error(tj_arange(TJ_F32, 0, INFINITY, 1), "arange()", "unsupported range", NULL);
    tu_assert_error(tj_arange(TJ_F64, NAN, 1, 1), "arange()", "unsupported range", NULL);
    tu_assert_error(tj_arange(TJ_BOOL, 0, 2, 1), "arange()", "unsupported dtype bool", NULL);
    tu_assert_error(tj_arange(TJ_C64, 0, 2, 1), "arange()", "unsupported dtype c64", NULL);
    tu_assert_error(tj_arange(TJ_I64, 0, 1e19, 1), "arange()", "overflows i64", NULL);
    tu_assert_error(tj_arange(TJ_F64, 0, 1e300, 1e-300), "arange()", "invalid size", NULL);
}

/* ---- Philox ----------------------------------------------------------------------------- */

/* Random123's known-answer vectors (kat_vectors, philox4x32 with 10 rounds). */
static void test_philox_kat(void **state)
{
    (void)state;
    struct { uint32_t ctr[4], key[2], want[4]; } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t k = 0; k < sizeof kat / sizeof *kat; k++) {
        uint32_t out[4];
        rt_philox4x32_10(kat[k].ctr, kat[k].key, out);
        for (int j = 0; j < 4; j++)
            assert_int_equal(out[j], kat[k].want[j]);
    }
}

/* The batched generator agrees with the reference block function: value i
 * of a draw has counter c = offset + i; f32 uniform takes word c % 4 of
 * block c / 4, f64 uniform words 2 (c % 2) and 2 (c % 2) + 1 of block c / 2,
 * f32 normal the pair t = (c % 4) / 2 of block c / 4 (cos for even c, sin
 * for odd), f64 normal block c / 2 (likewise; random.c). */
static void block_of(uint64_t seed, uint64_t b, uint32_t out[4])
{
    uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0, 0};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    rt_philox4x32_10(ctr, key, out);
}

static void test_philox_stream_matches_blocks(void **state)
{
    (void)state;
    enum { N = 203 };
    uint64_t seed = 0x123456789abcdefULL;
    const uint64_t offs[] = {0xfffffffffffffff0ULL, 0xfffffffffffffff3ULL, 5, 2};   /* wraps, unaligned */
    for (size_t o = 0; o < sizeof offs / sizeof *offs; o++) {
        uint64_t off = offs[o];
        float u[N], z[N];
        double d[N], zd[N];
        rt_philox_uniform_f32(seed, off, u, N);
        rt_philox_uniform_f64(seed, off, d, N);
        rt_philox_normal_f32(seed, off, z, N);
        rt_philox_normal_f64(seed, off, zd, N);
        for (int i = 0; i < N; i++) {
            uint64_t c = off + (uint64_t)i;
            uint32_t b4[4], b2[4];
            block_of(seed, c / 4, b4);
            block_of(seed, c / 2, b2);
            uint32_t hi = b2[2 * (c % 2)], lo = b2[2 * (c % 2) + 1];
            assert_true(u[i] == (float)(b4[c % 4] >> 8) * 0x1p-24f);
            assert_true(d[i] == (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53);
            /* the normals: Box-Muller of their words' uniforms */
            int t = (int)(c % 4) / 2;
            double u1 = (double)(b4[2 * t] >> 8) * 0x1p-24, u2 = (double)(b4[2 * t + 1] >> 8) * 0x1p-24;
            double r = sqrt(-2 * log(1 - u1)), want = r * (c % 2 ? sin(2 * M_PI * u2) : cos(2 * M_PI * u2));
            assert_true(fabs(z[i] - want) < 1e-5);
            double v1 = (double)((((uint64_t)b2[0] << 32) | b2[1]) >> 11) * 0x1p-53;
            double v2 = (double)((((uint64_t)b2[2] << 32) | b2[3]) >> 11) * 0x1p-53;
            double rd = sqrt(-2 * log(1 - v1)), td = 2 * M_PI * v2;
            assert_true(zd[i] == rd * (c % 2 ? sin(td) : cos(td)));
        }
    }
}

/* Any split of a range gives the same values (what threads rely on). */
static void test_philox_split_invariance(void **state)
{
    (void)state;
    enum { N = 1000 };
    float whole[N], parts[N];
    double nw[N], np[N];
    rt_philox_normal_f32(7, 100, whole, N);
    rt_philox_normal_f64(7, 100, nw, N);
    for (int b = 0; b < N; b += 77) {
        int n = N - b < 77 ? N - b : 77;
        rt_philox_normal_f32(7, 100 + (uint64_t)b, parts + b, n);
        rt_philox_normal_f64(7, 100 + (uint64_t)b, np + b, n);
    }
    assert_memory_equal(whole, parts, sizeof whole);
    assert_memory_equal(nw, np, sizeof nw);
}

static void test_philox_offsets_differ(void **state)
{
    (void)state;
    enum { N = 1000 };
    float a[N + 1], b[N];
    rt_philox_uniform_f32(5, 0, a, N + 1);
    rt_philox_uniform_f32(5, 1, b, N);
    assert_memory_equal(a + 1, b, sizeof b);   /* offset 1 is the stream shifted by one */
    int same = 0;
    for (int i = 0; i < N; i++)
        same += a[i] == b[i];
    assert_true(same < 5);
    rt_philox_uniform_f32(6, 0, b, N);         /* another seed: another stream */
    same = 0;
    for (int i = 0; i < N; i++)
        same += a[i] == b[i];
    assert_true(same < 5);
}

/* ---- rand / randn -------------------------------------------------------------------------- */

static void moments(tj_tensor *t, double *mean, double *sd, double *lo, double *hi)
{
    int64_t n = tj_numel(t);
    double s = 0, s2 = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double v = tj_dtype_of(t) == TJ_F32 ? ((float *)tj_data(t))[i] : ((double *)tj_data(t))[i];
        s += v;
        s2 += v * v;
        *lo = v < *lo ? v : *lo;
        *hi = v > *hi ? v : *hi;
    }
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
}

static void test_rand_moments(void **state)
{
    (void)state;
    tj_manual_seed(1234);
    tj_dtype dts[] = {TJ_F32, TJ_F64};
    for (int k = 0; k < 2; k++) {
        double m, sd, lo, hi;
        tj_tensor *u = tj_rand(dts[k], 2, S(1000, 1000));
        assert_non_null(u);
        moments(u, &m, &sd, &lo, &hi);
        assert_true(fabs(m - 0.5) < 2e-3);
        assert_true(fabs(sd - sqrt(1.0 / 12)) < 2e-3);
        assert_true(lo >= 0 && lo < 1e-4 && hi < 1 && hi > 1 - 1e-4);
        tj_tensor *g = tj_randn(dts[k], 1, S(1000000));
        assert_non_null(g);
        moments(g, &m, &sd, &lo, &hi);
        assert_true(fabs(m) < 5e-3);
        assert_true(fabs(sd - 1) < 5e-3);
        assert_true(lo < -4 && hi > 4 && isfinite(lo) && isfinite(hi));
    }
}

static void test_rand_seed_determinism(void **state)
{
    (void)state;
    tj_manual_seed(99);
    tj_tensor *a = tj_rand(TJ_F32, 2, S(30, 40)), *b = tj_randn(TJ_F64, 1, S(77));
    tj_tensor *c = tj_rand(TJ_F32, 2, S(30, 40));
    tj_manual_seed(99);
    tj_tensor *a2 = tj_rand(TJ_F32, 2, S(30, 40)), *b2 = tj_randn(TJ_F64, 1, S(77));
    tu_assert_close(a2, a, 0, 0);
    tu_assert_close(b2, b, 0, 0);
    assert_memory_not_equal(tj_data(a), tj_data(c), 1200 * sizeof(float));
    tj_manual_seed(100);
    tj_tensor *a3 = tj_rand(TJ_F32, 2, S(30, 40));
    assert_memory_not_equal(tj_data(a), tj_data(a3), 1200 * sizeof(float));
}

/* The global stream is element-exact: two draws of n equal one draw of 2n. */
static void test_rand_consecutive_draws(void **state)
{
    (void)state;
    tj_manual_seed(3);
    tj_tensor *a = tj_randn(TJ_F32, 1, S(1000)), *b = tj_randn(TJ_F32, 1, S(1000));
    tj_manual_seed(3);
    tj_tensor *ab = tj_randn(TJ_F32, 1, S(2000));
    assert_memory_equal(tj_data(a), tj_data(ab), 1000 * sizeof(float));
    assert_memory_equal(tj_data(b), (float *)tj_data(ab) + 1000, 1000 * sizeof(float));
}

static void test_rand_threads(void **state)
{
    (void)state;
    int saved = tj_num_threads();
    tj_dtype dts[] = {TJ_F32, TJ_F64};
    for (int k = 0; k < 2; k++) {
        size_t bytes = 300001 * tj_dtype_size(dts[k]);
        tj_set_num_threads(1);
        tj_manual_seed(2024);
        tj_tensor *u1 = tj_rand(dts[k], 1, S(300001)), *n1 = tj_randn(dts[k], 1, S(300001));
        tj_set_num_threads(2);
        tj_manual_seed(2024);
        tj_tensor *u2 = tj_rand(dts[k], 1, S(300001)), *n2 = tj_randn(dts[k], 1, S(300001));
        assert_memory_equal(tj_data(u1), tj_data(u2), bytes);
        assert_memory_equal(tj_data(n1), tj_data(n2), bytes);
    }
    tj_set_num_threads(saved);
}

static void test_rand_errors(void **state)
{
    (void)state;
    tj_manual_seed(8);
    tu_assert_error(tj_rand(TJ_I64, 1, S(3)), "rand()", "unsupported dtype i64", NULL);
    tu_assert_error(tj_randn(TJ_BOOL, 1, S(3)), "randn()", "unsupported dtype bool", NULL);
    tu_assert_error(tj_randn(TJ_C64, 1, S(3)), "randn()", "unsupported dtype c64", NULL);
    tu_assert_error(tj_rand(TJ_F32, 2, S(2, -3)), "rand()", "negative size -3 in dim 1", NULL);
    tu_assert_error(tj_randn(TJ_F32, -1, S(2)), "randn()", "shape has -1 entries", NULL);
    tu_assert_error(tj_rand(TJ_F32, 12, S(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)), "rand()", "shape has 12 entries (expected 0..8)",
                    NULL);
    tu_assert_error(tj_rand(TJ_F32, 2, NULL), "rand()", "shape is NULL for 2 dims", NULL);
    /* a failed call leaves the generator where it was */
    tj_tensor *a = tj_rand(TJ_F32, 1, S(10));
    tj_manual_seed(8);
    tj_tensor *b = tj_rand(TJ_F32, 1, S(10));
    tu_assert_close(a, b, 0, 0);
}

/* A call's draws (runtime/random.h): draw j reads base + at[j] of the call's
 * reservation; outside a call, or past its draws, a call-relative offset is
 * an error. */
static void test_rng_call_frames(void **state)
{
    (void)state;
    uint64_t seed, off, at[2] = {0, 6}, base;
    tj_clear_error();
    assert_int_equal(rt_rng_resolve(0, RT_RNG_CALL | 0, &seed, &off), -1);
    assert_non_null(strstr(tj_last_error(), "ran outside a compiled call"));
    tj_manual_seed(3);
    base = rt_rng_reserve(0, &seed);
    rt_rng_frame outer, inner;
    rt_rng_call_begin(10, at, 2, &outer);
    assert_int_equal(rt_rng_resolve(0, RT_RNG_CALL | 1, &seed, &off), 0);
    assert_int_equal(seed, 3);
    assert_int_equal(off, base + 6);
    rt_rng_call_begin(4, at, 1, &inner);   /* nested: its own reservation after the outer's */
    assert_int_equal(rt_rng_resolve(0, RT_RNG_CALL | 0, &seed, &off), 0);
    assert_int_equal(off, base + 10);
    tj_clear_error();
    assert_int_equal(rt_rng_resolve(0, RT_RNG_CALL | 1, &seed, &off), -1);
    assert_non_null(strstr(tj_last_error(), "is draw 1 of its call, which reserved 1"));
    rt_rng_call_end(&inner);
    assert_int_equal(rt_rng_resolve(0, RT_RNG_CALL | 1, &seed, &off), 0);
    assert_int_equal(off, base + 6);
    rt_rng_call_end(&outer);
    assert_int_equal(rt_rng_resolve(5, 9, &seed, &off), 0);   /* absolute: the attributes */
    assert_true(seed == 5 && off == 9);
    assert_int_equal(rt_rng_reserve(0, &seed), base + 14);
    tj_clear_error();
}

static void test_rand_empty_and_scalar(void **state)
{
    (void)state;
    tj_tensor *e = tj_rand(TJ_F32, 2, S(0, 5)), *s = tj_randn(TJ_F64, 0, NULL);
    assert_non_null(e);
    assert_int_equal(tj_numel(e), 0);
    assert_non_null(s);
    assert_int_equal(tj_ndim(s), 0);
    assert_true(isfinite(tj_item(s)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_zeros_ones_empty),
        T(test_full_values),
        T(test_scalar),
        T(test_create_errors),
        T(test_arange_golden),
        T(test_arange_errors),
        T(test_philox_kat),
        T(test_philox_stream_matches_blocks),
        T(test_philox_split_invariance),
        T(test_philox_offsets_differ),
        T(test_rand_moments),
        T(test_rand_seed_determinism),
        T(test_rand_consecutive_draws),
        T(test_rand_threads),
        T(test_rand_errors), T(test_rng_call_frames),
        T(test_rand_empty_and_scalar),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
