/* test_gemm.c - the runtime's own GEMM kernels (runtime/gemm.h): every
 * variant this CPU supports (generic, avx2, avx512, avx512_bf16, amx: its
 * tiles also in test_gemm_amx.c; those the CPU lacks are reported as skipped) against a scalar
 * reference in f32, bf16 (inputs rounded to nearest even, f32 sums) and
 * int8 (exact s32 sums, so the dequantized result is bit-exact); edges of
 * every tile and block size; the fused epilogue (scale, bias, residual
 * before/after the activation, accumulate, bf16 output) and prologue; the
 * choice of variant by features and TJIT_ISA (each supported variant
 * chosen through it), and the fallback when a feature is masked. The row
 * quantizer of the int8 GEMM: tests/test_gemm_rows.c; B packed in the
 * call: tests/test_gemm_raw.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../ir/vmath.h"
#include "../runtime/contract.h"
#include "../runtime/gemm.h"
#include "../runtime/rt.h"
#include "util.h"
#include "util_gemm.h"

typedef tu_dims dims;

static float frand(unsigned *s) { return tu_frand(s); }

/* The variants to run: those the CPU has, named as skipped otherwise. */
static int variants(tjg_isa *out) { return tu_gemm_variants(out, TJG_AMX, ""); }

/* f32 GEMM against double sums. */
static void f32_case(tjg_isa isa, dims d)
{
    float *a = malloc((size_t)(d.m * d.k + 1) * 4), *b = malloc((size_t)(d.k * d.n + 1) * 4);
    float *c = malloc((size_t)(d.m * d.n + 1) * 4);
    double *ref = calloc((size_t)(d.m * d.n + 1), sizeof(double));
    tu_fill(a, d.m * d.k, 1), tu_fill(b, d.k * d.n, 2);
    for (int64_t i = 0; i < d.m; i++)
        for (int64_t j = 0; j < d.n; j++)
            for (int64_t kk = 0; kk < d.k; kk++)
                ref[i * d.n + j] += (double)a[i * d.k + kk] * b[kk * d.n + j];
    tjg_packed p;
    /* B given transposed (column stride k) to test the strided packing */
    float *bt = malloc((size_t)(d.k * d.n + 1) * 4);
    for (int64_t kk = 0; kk < d.k; kk++)
        for (int64_t j = 0; j < d.n; j++)
            bt[j * d.k + kk] = b[kk * d.n + j];
    assert_int_equal(tjg_pack_f32(&p, bt, 1, d.k, d.k, d.n), 0);
    assert_int_equal(tjg_gemm(d.m, a, false, d.k, 1, &p, c, d.n, NULL, NULL), 0);
    char what[96];
    snprintf(what, sizeof what, "f32 %s %lldx%lldx%lld", tjg_isa_name(isa), (long long)d.m,
             (long long)d.n, (long long)d.k);
    tu_gemm_check_close(c, ref, d.m * d.n, 1e-5, what);
    tjg_packed_free(&p);
    free(a), free(b), free(bt), free(c), free(ref);
}

/* One variant's f32 cases: the shapes, then AVX2's half-panel order: more
 * rows than one block (264), row blocks with an edge sliver, part panels,
 * two k-blocks, P4's 256 rows (a last sliver of 4; with 10 panels on two
 * threads A packed once and column tasks claimed: gemm.c, shared_run; with
 * 32, a part one last, tasks of 4, 3, 2 and 1 panels: gemm.c, claim). */
static void f32_cases(tjg_isa isa, void *ctx)
{
    (void)ctx;
    static const dims big[] = {{300, 97, 520}, {265, 64, 257}, {529, 40, 3}, {256, 64, 260},
                               {256, 300, 600}, {256, 1000, 64}};
    for (size_t s = 0; s < tu_gemm_nshapes; s++)
        f32_case(isa, tu_gemm_shapes[s]);
    for (size_t s = 0; s < sizeof big / sizeof big[0]; s++)
        f32_case(isa, big[s]);
}

static void test_f32_variants(void **state)
{
    (void)state;
    tu_gemm_each(TJG_AMX, "", f32_cases, NULL);
}

static void test_bf16_rne(void **state)
{
    (void)state;
    static const struct { uint32_t in; uint16_t out; } cases[] = {
        {0x3f800000, 0x3f80}, {0x3f808000, 0x3f80} /* tie, even stays */,
        {0x3f818000, 0x3f82} /* tie, odd rounds up */, {0x3f808001, 0x3f81},
        {0x3f807fff, 0x3f80}, {0x7f7fffff, 0x7f80} /* overflow to inf */,
        {0xff800000, 0xff80}, {0x80000001, 0x8000}, {0x7fc00000, 0x7fc0},
        {0x7f800001, 0x7fc0} /* signalling NaN quieted, stays NaN */,
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float f;
        memcpy(&f, &cases[i].in, 4);
        assert_int_equal(tjg_f32_to_bf16(f), cases[i].out);
    }
    assert_true(tjg_bf16_to_f32(0x3f80) == 1.0f);
}

/* bf16 GEMM against the product of the rounded inputs (double sums). */
static void bf16_case(tjg_isa isa, dims d, bool a_bits, bool out_bf16)
{
    int64_t na = d.m * d.k, nb = d.k * d.n, nc = d.m * d.n;
    float *a = malloc((size_t)(na + 1) * 4), *b = malloc((size_t)(nb + 1) * 4);
    uint16_t *a16 = malloc((size_t)(na + 1) * 2), *c16 = malloc((size_t)(nc + 1) * 2);
    float *c = malloc((size_t)(nc + 1) * 4);
    double *ref = calloc((size_t)(nc + 1), sizeof(double));
    tu_fill(a, na, 3), tu_fill(b, nb, 4);
    for (int64_t i = 0; i < na; i++)
        a16[i] = tjg_f32_to_bf16(a[i]);
    for (int64_t i = 0; i < d.m; i++)
        for (int64_t j = 0; j < d.n; j++)
            for (int64_t kk = 0; kk < d.k; kk++)
                ref[i * d.n + j] += (double)tjg_bf16_to_f32(a16[i * d.k + kk]) *
                                    tjg_bf16_to_f32(tjg_f32_to_bf16(b[kk * d.n + j]));
    tjg_packed p;
    assert_int_equal(tjg_pack_f32_as_bf16(&p, b, d.n, 1, d.k, d.n), 0);
    tjg_epilogue e = {.out_bf16 = out_bf16};
    assert_int_equal(tjg_gemm(d.m, a_bits ? (const void *)a16 : a, a_bits, d.k, 1, &p,
                              out_bf16 ? (void *)c16 : c, d.n, &e, NULL), 0);
    char what[96];
    snprintf(what, sizeof what, "bf16 %s %lldx%lldx%lld%s%s", tjg_isa_name(isa), (long long)d.m,
             (long long)d.n, (long long)d.k, a_bits ? " a:bf16" : "", out_bf16 ? " c:bf16" : "");
    if (out_bf16) {
        /* f32 sums round to bf16: within one bf16 step (2^-8 relative) */
        for (int64_t i = 0; i < nc; i++)
            c[i] = tjg_bf16_to_f32(c16[i]);
        tu_gemm_check_close(c, ref, nc, 1.0 / 128, what);
    } else {
        tu_gemm_check_close(c, ref, nc, 1e-5, what);
    }
    tjg_packed_free(&p);
    free(a), free(b), free(a16), free(c16), free(c), free(ref);
}

/* bf16 and int8 B read transposed (a linear's weight: its own fast packing,
 * with 8 x 8 transposes in registers from avx2 up) pack to the same bytes
 * (and int8 column sums) as B read row by row, odd k and partial panels
 * too, under every variant. */
static void test_pack_transposed(void **state)
{
    (void)state;
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    static const dims more[] = {{1, 45, 300}, {1, 64, 17}, {1, 200, 130}, {1, 40, 6}};
    for (size_t s = 0; s < tu_gemm_nshapes + 4; s++) {
        dims d = s < tu_gemm_nshapes ? tu_gemm_shapes[s] : more[s - tu_gemm_nshapes];
        int64_t nb = d.k * d.n;
        uint16_t *b = malloc((size_t)(nb + 1) * 2), *bt = malloc((size_t)(nb + 1) * 2);
        int8_t *b8 = malloc((size_t)(nb + 1)), *bt8 = malloc((size_t)(nb + 1));
        unsigned seed = 7;
        for (int64_t kk = 0; kk < d.k; kk++)
            for (int64_t j = 0; j < d.n; j++) {
                float x = frand(&seed);
                b[kk * d.n + j] = bt[j * d.k + kk] = tjg_f32_to_bf16(x);
                b8[kk * d.n + j] = bt8[j * d.k + kk] = (int8_t)(x * 255);
            }
        tjg_packed p, q, p8, q8;
        assert_int_equal(tjg_pack_bf16(&p, b, d.n, 1, d.k, d.n), 0);
        assert_int_equal(tjg_pack_s8(&p8, b8, d.n, 1, d.k, d.n, NULL), 0);
        for (int v = 0; v < nv; v++) {
            tjg_isa_force(vs[v]);
            assert_int_equal(tjg_pack_bf16(&q, bt, 1, d.k, d.k, d.n), 0);
            assert_int_equal(p.nbytes, q.nbytes);
            assert_memory_equal(p.data, q.data, p.nbytes);
            assert_int_equal(tjg_pack_s8(&q8, bt8, 1, d.k, d.k, d.n, NULL), 0);
            assert_int_equal(p8.nbytes, q8.nbytes);
            assert_memory_equal(p8.data, q8.data, p8.nbytes);
            assert_memory_equal(p8.colsum, q8.colsum, (size_t)d.n * sizeof(int32_t));
            tjg_packed_free(&q);
            tjg_packed_free(&q8);
        }
        tjg_isa_force(-1);
        tjg_packed_free(&p);
        tjg_packed_free(&p8);
        free(b), free(bt), free(b8), free(bt8);
    }
}

static void test_bf16_variants(void **state)
{
    (void)state;
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        /* avx512_bf16 and amx (below its tile rows) both ways: vdpbf16ps and widened */
        for (int dot = 0; dot < (vs[v] >= TJG_AVX512_BF16 ? 2 : 1); dot++) {
            setenv("TJIT_BF16_DOT", dot ? "1" : "0", 1);
            for (size_t s = 0; s < tu_gemm_nshapes; s++) {
                bf16_case(vs[v], tu_gemm_shapes[s], true, false);
                bf16_case(vs[v], tu_gemm_shapes[s], false, true);
            }
        }
        unsetenv("TJIT_BF16_DOT");
    }
    tjg_isa_force(-1);
}

/* The widened bf16 path (B widened to f32 per panel, A split, the f32
 * kernels: AVX2's in the half-panel order, rows in blocks of up to 264;
 * AVX-512's, and avx512_bf16's with TJIT_BF16_DOT=0): bit for bit the
 * portable C kernel's result where k is one k-block of both (k <= 256: the
 * same FMAs in the same order), into f32 C (in place) and bf16 C (sums in
 * scratch, one rounding), with a bias and an accumulated f32 C; more than
 * one block of rows, edge slivers and panels, several panels (prefetched). */
static void test_bf16_widened(void **state)
{
    (void)state;
    tjg_isa best = tjg_isa_select(tjg_cpu_features(), NULL);
    if (best < TJG_AVX2) {
        printf("#summary skipped variant avx2: this CPU lacks its features\n");
        return;
    }
    tjg_isa top = best > TJG_AVX512_BF16 ? TJG_AVX512_BF16 : best;
    setenv("TJIT_BF16_DOT", "0", 1);
    static const dims ws[] = {{300, 100, 256}, {13, 33, 7}, {270, 64, 200}, {24, 32, 2},
                              {600, 96, 64}};
    for (size_t s = 0; s < sizeof ws / sizeof *ws; s++) {
        dims d = ws[s];
        int64_t na = d.m * d.k, nc = d.m * d.n;
        float *a = malloc((size_t)na * 4), *b = malloc((size_t)(d.k * d.n) * 4),
              *bias = malloc((size_t)d.n * 4), *c[2];
        uint16_t *a16 = malloc((size_t)na * 2), *c16[2];
        tu_fill(a, na, 5), tu_fill(b, d.k * d.n, 6), tu_fill(bias, d.n, 7);
        for (int64_t i = 0; i < na; i++)
            a16[i] = tjg_f32_to_bf16(a[i]);
        tjg_packed p;
        assert_int_equal(tjg_pack_f32_as_bf16(&p, b, d.n, 1, d.k, d.n), 0);
        for (int v = 0; v < 2; v++) {
            c[v] = malloc((size_t)nc * 4), c16[v] = malloc((size_t)nc * 2);
        }
        for (int iv = TJG_GENERIC; iv <= (int)top; iv++) {
            tjg_isa isa = (tjg_isa)iv;
            int v = isa != TJG_GENERIC;   /* generic's result in slot 0, each other's in 1 */
            tjg_isa_force(isa);
            tu_fill(c[v], nc, 8);
            tjg_epilogue acc = {.accumulate = true}, e16 = {.bias = bias, .out_bf16 = true};
            assert_int_equal(tjg_gemm(d.m, a16, true, d.k, 1, &p, c[v], d.n, &acc, NULL), 0);
            assert_int_equal(tjg_gemm(d.m, a, false, d.k, 1, &p, c16[v], d.n, &e16, NULL), 0);
            for (int64_t i = 0; v && i < nc; i++) {
                if (memcmp(&c[0][i], &c[1][i], 4) || c16[0][i] != c16[1][i])
                    fail_msg("bf16 widened %s %lldx%lldx%lld: element %lld: f32 %a against %a, "
                             "bf16 0x%04x against 0x%04x", tjg_isa_name(isa), (long long)d.m,
                             (long long)d.n, (long long)d.k, (long long)i, c[1][i], c[0][i],
                             c16[1][i], c16[0][i]);
            }
        }
        tjg_isa_force(-1);
        tjg_packed_free(&p);
        for (int v = 0; v < 2; v++)
            free(c[v]), free(c16[v]);
        free(a), free(b), free(bias), free(a16);
    }
    unsetenv("TJIT_BF16_DOT");
}

/* u8 x s8: the s32 sums are exact, so the result equals the reference's
 * float arithmetic bit for bit. */
static void s8_check(tjg_isa isa, dims d, const uint8_t *a, const int8_t *b, const int32_t *zp,
                     const float *sa, const float *sb)
{
    float *c = malloc((size_t)(d.m * d.n + 1) * 4);
    tjg_packed p;
    assert_int_equal(tjg_pack_s8(&p, b, d.n, 1, d.k, d.n, sb), 0);
    assert_int_equal(tjg_gemm_u8s8(d.m, a, d.k, zp, sa, &p, c, d.n, NULL), 0);
    for (int64_t i = 0; i < d.m; i++)
        for (int64_t j = 0; j < d.n; j++) {
            int64_t acc = 0;
            for (int64_t kk = 0; kk < d.k; kk++)
                acc += (int64_t)(a[i * d.k + kk] - zp[i]) * b[kk * d.n + j];
            float want = (float)acc * (sa[i] * sb[j]);
            if (c[i * d.n + j] != want)
                fail_msg("u8s8 %s %lldx%lldx%lld [%lld,%lld]: %.9g, want %.9g",
                         tjg_isa_name(isa), (long long)d.m, (long long)d.n, (long long)d.k,
                         (long long)i, (long long)j, c[i * d.n + j], want);
        }
    tjg_packed_free(&p);
    free(c);
}

/* The A and B of an int8 case: FULL A's bytes spread over 0..255, B's over
 * -128..127; SEVEN the same with A 7-bit; LOW and HIGH A 127 everywhere
 * against B -128 (pair sums -32512) or 127 (32258), zero points 0. */
enum { FULL, SEVEN, LOW, HIGH };

static void s8_case_of(tjg_isa isa, dims d, int kind)
{
    uint8_t *a = malloc((size_t)(d.m * d.k + 1));
    int8_t *b = malloc((size_t)(d.k * d.n + 1));
    float *sa = malloc((size_t)d.m * 4 + 4), *sb = malloc((size_t)d.n * 4 + 4);
    int32_t *zp = malloc((size_t)d.m * 4 + 4);
    unsigned seed = kind == FULL ? 5 : 9;
    bool edge = kind == LOW || kind == HIGH;
    for (int64_t i = 0; i < d.m * d.k; i++)
        a[i] = edge ? 127 : (uint8_t)(frand(&seed) * 511 + 255.5f) ^ (i % 3 ? 0 : 0xff);
    for (int64_t i = 0; i < d.m * d.k && kind == SEVEN; i++)
        a[i] &= 127;
    for (int64_t i = 0; i < d.k * d.n; i++)
        b[i] = (int8_t)(edge ? (kind == LOW ? -128 : 127)
                        : i % 7 == 0 ? -128 : i % 5 == 0 ? 127 : (int)(frand(&seed) * 255));
    for (int64_t i = 0; i < d.m; i++)
        sa[i] = edge ? 1.0f : 0.01f * (float)(i + 1), zp[i] = edge ? 0 : (int32_t)(i * 37 % 256);
    for (int64_t j = 0; j < d.n; j++)
        sb[j] = edge ? 1.0f : 0.003f * (float)(j % 5 + 1);
    assert_true(kind == FULL || tjg_u8_is_7bit(d.m, d.k, a, d.k));
    s8_check(isa, d, a, b, zp, sa, sb);
    if (kind == HIGH && d.k >= 2) {   /* one pair of 255s against 127s */
        const int64_t spots[3][2] = {{0, 10}, {d.m / 2, d.k - 2}, {d.m - 1, d.k / 2}};
        for (int s = 0; s < 3; s++) {
            int64_t i = spots[s][0], kk = spots[s][1] & ~(int64_t)1;
            a[i * d.k + kk] = a[i * d.k + kk + 1] = 255;
            assert_false(tjg_u8_is_7bit(d.m, d.k, a, d.k));
            s8_check(isa, d, a, b, zp, sa, sb);
            a[i * d.k + kk] = a[i * d.k + kk + 1] = 127;
        }
    }
    free(a), free(b), free(sa), free(sb), free(zp);
}

static void s8_case(tjg_isa isa, dims d) { s8_case_of(isa, d, FULL); }

static void test_s8_variants(void **state)
{
    (void)state;
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        for (size_t s = 0; s < tu_gemm_nshapes; s++)
            s8_case(vs[v], tu_gemm_shapes[s]);
    }
    tjg_isa_force(-1);
}

/* The extremes of int8: A 255 (and 0) against B -128 and 127, so that a
 * pair's sum leaves s16 (vpmaddubsw would saturate), zero points 0 and 255,
 * k long enough for large s32 sums; exact under every variant. */
static void test_s8_extremes(void **state)
{
    (void)state;
    dims d = {13, 40, 1031};
    uint8_t *a = malloc((size_t)(d.m * d.k));
    int8_t *b = malloc((size_t)(d.k * d.n));
    float sa[13], sb[40];
    int32_t zp[13];
    for (int64_t i = 0; i < d.m * d.k; i++)
        a[i] = i % 11 == 0 ? 0 : 255;
    for (int64_t i = 0; i < d.k * d.n; i++)
        b[i] = (int8_t)((i % d.n) % 2 ? 127 : -128);
    for (int i = 0; i < 13; i++)
        sa[i] = 1, zp[i] = i % 2 ? 0 : 255;
    for (int j = 0; j < 40; j++)
        sb[j] = 1;
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        s8_check(vs[v], d, a, b, zp, sa, sb);
    }
    tjg_isa_force(-1);
    free(a), free(b);
}

/* The 7-bit int8 kernel (runtime/gemm_avx2_q8.c: vpmaddubsw, exact only
 * for A <= 127) runs where tjg_u8s8_reduce_range says (AVX2, and AVX-512
 * without VNNI) on an A that tjg_u8_is_7bit passes: exact s32 sums against
 * the reference on every shape (M/N/K tails); at the saturation boundary
 * (127 against -128 and 127 in every pair: pair sums -32512 and 32258, the
 * extremes of s16 that vpmaddubsw can reach without saturating); and an A
 * with one pair of 255s (the pair 255*127*2 would saturate vpmaddubsw)
 * placed in the 32-byte body, the tail and the last row falls back to the
 * exact kernel. */
static void test_s8_7bit(void **state)
{
    (void)state;
    assert_false(tjg_u8s8_reduce_range(TJG_GENERIC));
    assert_false(tjg_u8s8_reduce_range(TJG_AVX512_BF16));   /* VNNI: exact at 8 bits */
    bool x86 = tjg_kernel_avx2_q8().uk != NULL;
    assert_true(tjg_u8s8_reduce_range(TJG_AVX2) == x86);
    assert_true(tjg_u8s8_reduce_range(TJG_AVX512) == x86);
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        for (size_t s = 0; s < tu_gemm_nshapes; s++)
            s8_case_of(vs[v], tu_gemm_shapes[s], SEVEN);
        for (int kind = LOW; kind <= HIGH; kind++) {
            s8_case_of(vs[v], (dims){13, 40, 1031}, kind);
            s8_case_of(vs[v], (dims){25, 47, 37}, kind);
        }
    }
    tjg_isa_force(-1);
}

/* The 7-bit kernel in the half-panel order (AVX2: gemm.c's half loop,
 * uk_q8_half) at 1 and 2 threads: several row blocks (m > 264), last
 * slivers of 1, 4, 7 and 11 rows, a part panel last, several k-blocks and
 * k tails, and on two threads A packed once with column tasks claimed
 * (shared_run: one row block, at least 4 panels); exact s32 sums. */
static void test_s8_7bit_half(void **state)
{
    (void)state;
    static const dims half[] = {{300, 70, 1031}, {265, 97, 40},  {256, 140, 2051},
                                {127, 200, 9},   {19, 130, 300}, {7, 33, 5}};
    int threads = tj_num_threads();
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    for (int th = 1; th <= 2; th++) {
        tj_set_num_threads(th);
        for (int v = 0; v < nv; v++) {
            tjg_isa_force(vs[v]);
            for (size_t s = 0; s < sizeof half / sizeof half[0]; s++)
                s8_case_of(vs[v], half[s], SEVEN);
        }
    }
    tj_set_num_threads(threads);
    tjg_isa_force(-1);
}

/* tjg_u8_is_7bit reads only the m x k bytes (255s between rows ignored),
 * and finds a single 128 anywhere: in a 32-byte block, in a row's tail, in
 * the last row; under each variant (AVX2's vector test and the scalar). */
static void test_is_7bit(void **state)
{
    (void)state;
    enum { M = 5, K = 70, LDA = 77 };
    uint8_t a[M * LDA];
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        for (int i = 0; i < M * LDA; i++)
            a[i] = i % LDA < K ? (uint8_t)(i * 7 % 128) : 255;
        assert_true(tjg_u8_is_7bit(M, K, a, LDA));
        assert_true(tjg_u8_is_7bit(0, K, a, LDA));
        const int at[][2] = {{0, 0}, {2, 31}, {1, 64}, {M - 1, K - 1}, {3, 40}};
        for (size_t s = 0; s < sizeof at / sizeof at[0]; s++) {
            uint8_t *p = &a[at[s][0] * LDA + at[s][1]], old = *p;
            *p = 128;
            assert_false(tjg_u8_is_7bit(M, K, a, LDA));
            *p = old;
        }
    }
    tjg_isa_force(-1);
}

static double act_ref(tjg_act act, double x)
{
    switch (act) {
    case TJG_ACT_RELU: return x < 0 ? 0 : x;
    case TJG_ACT_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
    case TJG_ACT_SIGMOID: return 1 / (1 + exp(-x));
    case TJG_ACT_TANH: return tanh(x);
    case TJG_ACT_GELU_TANH:
        return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    default: return x;
    }
}

/* Every epilogue and prologue piece at once, per variant and activation. */
static void epilogue_case(dims d)
{
    int64_t na = d.m * d.k, nb = d.k * d.n, nc = d.m * d.n;
    float *a = malloc((size_t)na * 4), *b = malloc((size_t)nb * 4), *c = malloc((size_t)nc * 4),
          *c0 = malloc((size_t)nc * 4), *res = malloc((size_t)nc * 4),
          *bias = malloc((size_t)d.n * 4), *sc = malloc((size_t)d.k * 4),
          *sh = malloc((size_t)d.k * 4);
    double *ref = malloc((size_t)nc * sizeof(double));
    tu_fill(a, na, 7), tu_fill(b, nb, 8), tu_fill(c0, nc, 9), tu_fill(res, nc, 10), tu_fill(bias, d.n, 11);
    tu_fill(sc, d.k, 12), tu_fill(sh, d.k, 13);
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    tjg_packed p;
    assert_int_equal(tjg_pack_f32(&p, b, d.n, 1, d.k, d.n), 0);
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        for (int act = TJG_ACT_NONE; act <= TJG_ACT_GELU_TANH; act++)
            for (int variant = 0; variant < 4; variant++) {
                bool after = variant & 1, accum = variant & 2;
                float alpha = accum && !after ? 1.0f : 0.75f;
                tjg_epilogue e = {.alpha = alpha, .bias = bias, .res = res, .ldr = d.n,
                                  .act = (tjg_act)act, .res_after_act = after,
                                  .accumulate = accum};
                tjg_prologue pro = {.scale = sc, .shift = sh,
                                    .act = variant ? TJG_ACT_RELU : TJG_ACT_GELU};
                for (int64_t i = 0; i < d.m; i++)
                    for (int64_t j = 0; j < d.n; j++) {
                        double s = 0;
                        for (int64_t kk = 0; kk < d.k; kk++)
                            s += act_ref(pro.act, (double)a[i * d.k + kk] * sc[kk] + sh[kk]) *
                                 b[kk * d.n + j];
                        double y = alpha * s + (accum ? c0[i * d.n + j] : 0) + bias[j];
                        y = act_ref((tjg_act)act, y + (after ? 0 : res[i * d.n + j]));
                        ref[i * d.n + j] = y + (after ? res[i * d.n + j] : 0);
                    }
                memcpy(c, c0, (size_t)nc * 4);
                assert_int_equal(tjg_gemm(d.m, a, false, d.k, 1, &p, c, d.n, &e, &pro), 0);
                char what[96];
                snprintf(what, sizeof what, "epilogue %s act %d after %d acc %d",
                         tjg_isa_name(vs[v]), act, after, accum);
                tu_gemm_check_close(c, ref, nc, 2e-5, what);
            }
    }
    tjg_isa_force(-1);
    tjg_packed_free(&p);
    free(a), free(b), free(c), free(c0), free(res), free(bias), free(sc), free(sh), free(ref);
}

/* Two panels, and (two threads) five, a part one last: AVX2's one row block
 * with A packed once and column tasks claimed (gemm.c, shared_run); 32
 * panels: tasks of 4 down to 1 (gemm.c, claim), each with its epilogue. */
static void test_epilogue_prologue(void **state)
{
    (void)state;
    int threads = tj_num_threads();
    tj_set_num_threads(2);
    epilogue_case((dims){29, 45, 270});
    epilogue_case((dims){29, 140, 270});
    epilogue_case((dims){29, 1000, 70});
    tj_set_num_threads(threads);
}

/* AVX2 f32 with C's rows 1024 floats apart: the sums go to a padded scratch
 * (gemm.c, run; tjg_padded_calls counts them) and the epilogue writes C, with
 * the bits of the in-place run at another row stride (1040), for none and
 * for bias + residual + gelu_tanh, on one thread, and on two with two row
 * blocks (the per-thread tasks) and with one (the shared run). */
static void test_padded_sums(void **state)
{
    (void)state;
    if (tjg_isa_current() != TJG_AVX2) {
        printf("#summary skipped padded sums: not the avx2 variant\n");
        return;
    }
    int threads = tj_num_threads();
    static const dims ds[] = {{50, 1000, 300}, {300, 1024, 40}, {256, 1000, 300}};
    for (int t = 0; t < 3; t++) {
        tj_set_num_threads(t ? 2 : 1);
        dims d = ds[t];
        int64_t na = d.m * d.k, nb = d.k * d.n;
        float *a = malloc((size_t)na * 4), *b = malloc((size_t)nb * 4),
              *c1 = calloc((size_t)(d.m * 1024), 4), *c2 = calloc((size_t)(d.m * 1040), 4),
              *res = malloc((size_t)(d.m * 1024) * 4), *bias = malloc((size_t)d.n * 4);
        tu_fill(a, na, 21), tu_fill(b, nb, 22), tu_fill(res, d.m * 1024, 23), tu_fill(bias, d.n, 24);
        tjg_packed p;
        assert_int_equal(tjg_pack_f32(&p, b, d.n, 1, d.k, d.n), 0);
        for (int epi = 0; epi < 2; epi++) {
            tjg_epilogue e = {.bias = bias, .res = res, .ldr = 1024, .act = TJG_ACT_GELU_TANH};
            unsigned long long before = tjg_padded_calls();
            assert_int_equal(tjg_gemm(d.m, a, false, d.k, 1, &p, c1, 1024, epi ? &e : NULL, NULL),
                             0);
            assert_true(tjg_padded_calls() == before + 1);
            assert_int_equal(tjg_gemm(d.m, a, false, d.k, 1, &p, c2, 1040, epi ? &e : NULL, NULL),
                             0);
            assert_true(tjg_padded_calls() == before + 1);
            for (int64_t i = 0; i < d.m; i++)
                assert_memory_equal(c1 + i * 1024, c2 + i * 1040, (size_t)d.n * 4);
        }
        tjg_packed_free(&p);
        free(a), free(b), free(c1), free(c2), free(res), free(bias);
    }
    tj_set_num_threads(threads);
}

static void test_isa_select(void **state)
{
    (void)state;
    unsigned all = TJG_F_AVX2 | TJG_F_AVX512 | TJG_F_BF16 | TJG_F_VNNI | TJG_F_AMX;
    unsigned zen = TJG_F_AVX2 | TJG_F_AVX512 | TJG_F_BF16 | TJG_F_VNNI;   /* Zen 4 */
    unsigned zen3 = TJG_F_AVX2;                                            /* no AVX-512 */
    assert_int_equal(tjg_isa_select(all, NULL), TJG_AMX);
    assert_int_equal(tjg_isa_select(zen, NULL), TJG_AVX512_BF16);
    assert_int_equal(tjg_isa_select(zen, "amx"), TJG_AVX512_BF16);   /* never beyond the CPU */
    assert_int_equal(tjg_isa_select(all, "avx512"), TJG_AVX512);
    assert_int_equal(tjg_isa_select(all, "avx2"), TJG_AVX2);
    assert_int_equal(tjg_isa_select(all, "generic"), TJG_GENERIC);
    assert_int_equal(tjg_isa_select(all, "bogus"), TJG_AMX);
    /* AVX2 without AVX-512: avx2 is the best, whatever the cap above it */
    assert_int_equal(tjg_isa_select(zen3, NULL), TJG_AVX2);
    assert_int_equal(tjg_isa_select(zen3, "avx512"), TJG_AVX2);
    assert_int_equal(tjg_isa_select(zen3, "amx"), TJG_AVX2);
    assert_int_equal(tjg_isa_select(zen3, "generic"), TJG_GENERIC);
    /* a feature masked: its variant is not chosen */
    assert_int_equal(tjg_isa_select(zen & ~TJG_F_BF16, "avx512_bf16"), TJG_AVX512);
    assert_int_equal(tjg_isa_select(zen & ~TJG_F_VNNI, NULL), TJG_AVX512);
    assert_int_equal(tjg_isa_select(zen & ~TJG_F_AVX512, "avx512"), TJG_AVX2);
    assert_int_equal(tjg_isa_select(zen3 & ~TJG_F_AVX2, NULL), TJG_GENERIC);   /* neither */
    /* each variant needs the features of those below it */
    assert_int_equal(tjg_isa_select(zen & ~TJG_F_AVX2, NULL), TJG_GENERIC);
    assert_int_equal(tjg_isa_select(0, "amx"), TJG_GENERIC);
    /* names round-trip */
    for (int v = TJG_GENERIC; v < TJG_NISA; v++)
        assert_int_equal(tjg_isa_select(all, tjg_isa_name((tjg_isa)v)), v);
    assert_string_equal(tjg_isa_name(TJG_AVX2), "avx2");
    /* what the process runs never exceeds the CPU */
    assert_true(tjg_isa_current() <= tjg_isa_select(tjg_cpu_features(), NULL));
    /* the kernels a variant may use: none needing a missing feature; the
     * AVX2 ones read A split in halves for bf16 and int8, and serve int8
     * on AVX-512 without VNNI */
    assert_null(tjg_kernel_x86(TJG_F32, TJG_GENERIC).uk);
    assert_null(tjg_kernel_x86(TJG_S8, TJG_GENERIC).uk);
    for (int t = TJG_F32; t <= TJG_S8; t++) {
        tjg_kernel k = tjg_kernel_x86((tjg_type)t, TJG_AVX2);
        assert_non_null(k.uk);
        assert_ptr_equal(k.uk, tjg_kernel_avx2((tjg_type)t).uk);
        assert_true((k.split_a != NULL) == (t != TJG_F32));
    }
    assert_ptr_equal(tjg_kernel_x86(TJG_S8, TJG_AVX512).uk, tjg_kernel_avx2(TJG_S8).uk);
    assert_ptr_not_equal(tjg_kernel_x86(TJG_F32, TJG_AVX512).uk, tjg_kernel_avx2(TJG_F32).uk);
    /* bf16 on AVX-512: widened (AVX2's split and widening, the AVX-512 f32
     * kernel), or vdpbf16ps on avx512_bf16 where tjg_bf16_dot says */
    tjg_kernel w = tjg_kernel_x86(TJG_BF16, TJG_AVX512);
    assert_ptr_equal(w.uk, tjg_kernel_x86(TJG_F32, TJG_AVX512).uk);
    assert_ptr_equal(w.split_a, tjg_kernel_avx2(TJG_BF16).split_a);
    assert_ptr_equal(w.widen_b, tjg_kernel_avx2(TJG_BF16).widen_b);
    setenv("TJIT_BF16_DOT", "0", 1);
    assert_ptr_equal(tjg_kernel_x86(TJG_BF16, TJG_AVX512_BF16).uk, w.uk);
    setenv("TJIT_BF16_DOT", "1", 1);
    assert_ptr_not_equal(tjg_kernel_x86(TJG_BF16, TJG_AVX512_BF16).uk, w.uk);
    assert_null(tjg_kernel_x86(TJG_BF16, TJG_AVX512_BF16).split_a);
    assert_ptr_equal(tjg_kernel_x86(TJG_BF16, TJG_AVX512).uk, w.uk);   /* no avx512_bf16 */
    unsetenv("TJIT_BF16_DOT");
    /* the rule: vdpbf16ps on AMD, widened elsewhere; TJIT_BF16_DOT=0/1 overrides */
    assert_true(tjg_bf16_dot_select(true, -1));
    assert_false(tjg_bf16_dot_select(false, -1));
    assert_false(tjg_bf16_dot_select(true, 0));
    assert_true(tjg_bf16_dot_select(false, 1));
}

/* The process's variant from TJIT_ISA (read again by tjg_isa_force(-1)),
 * restoring the caller's value afterwards. */
static tjg_isa isa_env(const char *v)
{
    if (v)
        setenv("TJIT_ISA", v, 1);
    else
        unsetenv("TJIT_ISA");
    tjg_isa_force(-1);
    return tjg_isa_current();
}

static const dims env_shapes[] = {{37, 70, 300}, {7, 17, 1}, {25, 47, 5}};

/* Each variant the CPU has, chosen through TJIT_ISA: the process runs it,
 * and f32, bf16 and int8 agree with the references; a name beyond the
 * CPU (amx here unless it has AMX) gives the best it has, an unknown name
 * changes nothing. */
static void test_isa_env(void **state)
{
    (void)state;
    char *saved = getenv("TJIT_ISA") ? strdup(getenv("TJIT_ISA")) : NULL;
    tjg_isa best = tjg_isa_select(tjg_cpu_features(), NULL);
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    for (int v = 0; v < nv; v++) {
        assert_int_equal(isa_env(tjg_isa_name(vs[v])), vs[v]);
        for (size_t s = 0; s < sizeof env_shapes / sizeof env_shapes[0]; s++) {
            f32_case(vs[v], env_shapes[s]);
            bf16_case(vs[v], env_shapes[s], false, false);
            s8_case(vs[v], env_shapes[s]);
        }
    }
    assert_int_equal(isa_env("amx"), best);
    assert_int_equal(isa_env("bogus"), best);
    assert_int_equal(isa_env(NULL), best);
    isa_env(saved);
    free(saved);
}

/* The best variant's own feature masked (TJIT_ISA one variant below it:
 * avx512 on a CPU with avx512_bf16, where bf16 runs the widened path;
 * generic on one with AVX2 alone): the process runs the variant below and
 * gives the same results. */
static void test_masked_fallback(void **state)
{
    (void)state;
    tjg_isa best = tjg_isa_select(tjg_cpu_features(), NULL);
    if (best == TJG_GENERIC) {
        printf("#summary skipped masked fallback: this CPU has no variant to mask\n");
        skip();
    }
    tjg_isa below = (tjg_isa)((best > TJG_AVX512_BF16 ? TJG_AVX512_BF16 : best) - 1);
    char *saved = getenv("TJIT_ISA") ? strdup(getenv("TJIT_ISA")) : NULL;
    assert_int_equal(isa_env(tjg_isa_name(below)), below);
    bf16_case(below, (dims){37, 70, 300}, true, true);
    s8_case(below, (dims){37, 70, 300});
    assert_int_equal(isa_env(saved), tjg_isa_select(tjg_cpu_features(), saved));
    free(saved);
}

/* The eager matmul and linear kernels on bf16 tensors run the bf16 GEMM:
 * results within one bf16 rounding of the product of the bf16 inputs;
 * batches and a transposed weight (a w^T view) included. Called at the
 * kernel level: the public API takes bf16 tensors once the dtype is
 * enabled (ir_dtype_supported). */
static void bf16_tensor(int nd, const int64_t *shape, unsigned seed, tj_tensor **t, double **v)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    uint16_t *h = malloc((size_t)n * 2);
    *v = malloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        h[i] = tjg_f32_to_bf16(frand(&seed));
        (*v)[i] = tjg_bf16_to_f32(h[i]);
    }
    *t = rt_tensor_new(TJ_BF16, nd, shape);
    assert_non_null(*t);
    memcpy(rt_ptr(*t), h, (size_t)n * 2);
    free(h);
}

static void check_bf16_out(tj_tensor *t, const double *want, int64_t n)
{
    assert_non_null(t);
    assert_int_equal(t->dtype, TJ_BF16);
    const uint16_t *h = rt_ptr(t);
    for (int64_t i = 0; i < n; i++) {
        double got = tjg_bf16_to_f32(h[i]);
        if (!(fabs(got - want[i]) <= fabs(want[i]) / 128 + 1e-6))
            fail_msg("element %lld: %.9g, want %.9g", (long long)i, got, want[i]);
    }
}

static void test_bf16_tensors(void **state)
{
    (void)state;
    tj_tensor *x, *w, *b, *y;
    double *xv, *wv, *bv;
    bf16_tensor(3, (int64_t[]){2, 5, 70}, 21, &x, &xv);
    bf16_tensor(2, (int64_t[]){40, 70}, 22, &w, &wv);
    bf16_tensor(1, (int64_t[]){40}, 23, &b, &bv);
    double *want = calloc(2 * 5 * 40, sizeof(double));
    for (int64_t i = 0; i < 10; i++)
        for (int64_t j = 0; j < 40; j++) {
            for (int64_t kk = 0; kk < 70; kk++)
                want[i * 40 + j] += xv[i * 70 + kk] * wv[j * 70 + kk];
        }
    tj_tensor *wt = rt_tensor_view(w, 2, (int64_t[]){70, 40}, (int64_t[]){1, 70}, 0);
    y = rt_tensor_new(TJ_BF16, 3, (int64_t[]){2, 5, 40});
    assert_int_equal(rt_kernels[OP_matmul](OP_matmul, y, (tj_tensor *[]){x, wt}, 2, NULL), 0);
    check_bf16_out(y, want, 400);
    for (int64_t i = 0; i < 400; i++)   /* the bias is added to the f32 sums */
        want[i] += bv[i % 40];
    assert_int_equal(rt_kernels[OP_linear](OP_linear, y, (tj_tensor *[]){x, w, b}, 3, NULL), 0);
    check_bf16_out(y, want, 400);
    /* the bias in the GEMM's epilogue (above: one GEMM) and broadcast into
     * the output first (x rows that do not fold into one GEMM: a GEMM per
     * batch): the same bits */
    tj_tensor *big = rt_tensor_new(TJ_BF16, 3, (int64_t[]){2, 6, 70});
    for (int64_t bi = 0; bi < 2; bi++)
        memcpy((uint16_t *)tj_data(big) + bi * 6 * 70, (uint16_t *)tj_data(x) + bi * 5 * 70, 5 * 70 * 2);
    tj_tensor *xs = rt_tensor_view(big, 3, (int64_t[]){2, 5, 70}, (int64_t[]){6 * 70, 70, 1}, 0);
    tj_tensor *y2 = rt_tensor_new(TJ_BF16, 3, (int64_t[]){2, 5, 40});
    assert_int_equal(rt_kernels[OP_linear](OP_linear, y2, (tj_tensor *[]){xs, w, b}, 3, NULL), 0);
    assert_memory_equal(tj_data(y2), tj_data(y), 400 * 2);
    tj_release(y2), tj_release(xs), tj_release(big);
    tj_release(y);
    tj_release(wt);
    /* batched: [2,5,70] @ [2,70,3] (each batch its own right operand) */
    tj_tensor *w3;
    double *w3v;
    bf16_tensor(3, (int64_t[]){2, 70, 3}, 24, &w3, &w3v);
    memset(want, 0, 30 * sizeof(double));
    for (int64_t bi = 0; bi < 2; bi++)
        for (int64_t i = 0; i < 5; i++)
            for (int64_t j = 0; j < 3; j++)
                for (int64_t kk = 0; kk < 70; kk++)
                    want[(bi * 5 + i) * 3 + j] += xv[(bi * 5 + i) * 70 + kk] * w3v[(bi * 70 + kk) * 3 + j];
    y = rt_tensor_new(TJ_BF16, 3, (int64_t[]){2, 5, 3});
    assert_int_equal(rt_kernels[OP_matmul](OP_matmul, y, (tj_tensor *[]){x, w3}, 2, NULL), 0);
    check_bf16_out(y, want, 30);
    tj_release(y);
    tj_release(x), tj_release(w), tj_release(b), tj_release(w3);
    free(xv), free(wv), free(bv), free(w3v), free(want);
}

/* A compiled model keeps its weights packed where tjit's GEMM runs them
 * (f32: AVX2 or AVX-512 at this shape, frozen or not; see
 * runtime/k_matmul.c): results equal eager ones, the packed copy exists
 * after the call, in-place updates of the weight (tj_copy_, tj_mul_s_, and
 * without freeze a write through tj_data) are seen by the next call, and
 * tj_alloc_trim drops the copies. Autotune gives the same results;
 * quantize_dynamic (int8 weights kept) is within its quantization error.
 * The weight is over 256 KB: smaller ones run in blocked regions
 * (sched/block.c), which keep no packed copies. */
typedef struct lin_ctx { tj_tensor *w, *b; } lin_ctx;

static tj_tensor *model_lin(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    lin_ctx *l = ctx;
    return tj_relu(tj_linear(args[0], l->w, l->b));
}

static void max_diff_le(tj_tensor *x, tj_tensor *y, double tol)
{
    assert_non_null(x);
    assert_non_null(y);
    tj_tensor *d = tj_amax(tj_abs(tj_sub(x, y)), NULL, 0, false);
    assert_non_null(d);
    assert_true(tj_item(d) <= tol);
}

static void frozen_case(bool freeze, bool autotune, bool int8)
{
    tj_alloc_trim();
    tj_scope_begin();
    lin_ctx l = {tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){512, 192})),
                 tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){512}))};
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){64, 192});
    tj_compiled *c = tj_compile(model_lin, &l, &(tj_compile_options){.name = "lin",
                                                                     .freeze = freeze,
                                                                     .autotune = autotune,
                                                                     .quantize_dynamic = int8});
    for (int call = 0; call < 7; call++) {
        tj_tensor *got = tj_call(c, &x, 1), *want = model_lin(&l, &x, 1);
        /* int8: the quantization error, about 1% of the largest output here
         * (u8 rows and s8 columns, 192 products per sum) */
        max_diff_le(got, want, int8 ? 0.02 * tj_item(tj_amax(want, NULL, 0, false)) : 1e-4);
        /* f32 weights are packed where tjit's GEMM runs them: with AVX2
         * or AVX-512 at this shape, frozen or not (runtime/k_matmul.c);
         * not frozen, a weight changed since the last call runs on
         * OpenBLAS until a second call sees it unchanged (calls 2, 4, 6) */
        bool packs = int8 || (tjg_isa_current() >= TJG_AVX2 && (freeze || call % 2 || !call));
        if (packs)
            assert_true(tjg_cache_bytes() >= (size_t)512 * 192 * (int8 ? 1 : 4));
        else
            assert_int_equal(tjg_cache_bytes(), 0);
        /* in-place updates: the next call must see them */
        if (call == 1)
            assert_int_equal(tj_copy_(l.w, tj_mul_s(l.w, -0.5)), 0);
        if (call == 3)
            assert_int_equal(tj_mul_s_(l.w, 3.0), 0);
        if (call == 5 && !freeze && !int8) {   /* freeze folds: tj_data writes unseen */
            float *p = tj_data(l.w);
            assert_non_null(p);
            for (int64_t i = 0; i < 512 * 192; i += 3)
                p[i] = -2 * p[i] + 0.25f;
        }
    }
    tj_compiled_free(c);
    tj_scope_end();
    tj_release(l.w), tj_release(l.b);
    tj_alloc_trim();
    assert_int_equal(tjg_cache_bytes(), 0);
}

/* Eager f32 matmul and linear on operands that are not kept weights, on
 * tjit's GEMM (B packed in the call) and on OpenBLAS (TJIT_OWN_F32=1, 0)
 * and by the shape rule (unset), with A and B as they are or transposed
 * views (a training step's dW = dY^T X and dX = dY W^T), against double
 * sums, on one and two threads. The override decides rt_gemm_own_f32. */
static void matmul_case(dims d, bool ta, bool tb)
{
    tj_scope_begin();
    int64_t ash[2] = {ta ? d.k : d.m, ta ? d.m : d.k}, bsh[2] = {tb ? d.n : d.k, tb ? d.k : d.n};
    tj_tensor *as = tj_randn(TJ_F32, 2, ash), *bs = tj_randn(TJ_F32, 2, bsh);
    tj_tensor *a = ta ? tj_transpose(as, 0, 1) : as, *b = tb ? tj_transpose(bs, 0, 1) : bs;
    tj_tensor *bias = tj_randn(TJ_F32, 1, (int64_t[]){d.n});
    const float *pa = tj_data(as), *pb = tj_data(bs), *pbias = tj_data(bias);
    double *ref = calloc((size_t)(d.m * d.n + 1), sizeof(double));
    for (int64_t i = 0; i < d.m; i++)
        for (int64_t j = 0; j < d.n; j++)
            for (int64_t kk = 0; kk < d.k; kk++)
                ref[i * d.n + j] += (double)(ta ? pa[kk * d.m + i] : pa[i * d.k + kk]) *
                                    (tb ? pb[j * d.k + kk] : pb[kk * d.n + j]);
    /* unset twice: OpenBLAS on its widest kernels, then on AVX2 ones on an
     * AVX-512 CPU (TJIT_BLAS_NARROW: the rule that sends more to tjit's) */
    static const char *env[4] = {"1", "0", NULL, NULL};
    for (int e = 0; e < 4; e++) {
        if (env[e])
            setenv("TJIT_OWN_F32", env[e], 1);
        else
            unsetenv("TJIT_OWN_F32");
        setenv("TJIT_BLAS_NARROW", e == 3 ? "1" : "0", 1);
        if (env[e])
            assert_int_equal(rt_gemm_own_f32(d.m, d.n, d.k),
                             e == 0 && tjg_isa_current() >= TJG_AVX2);
        char what[128];
        snprintf(what, sizeof what, "matmul TJIT_OWN_F32=%s narrow %d ta %d tb %d %lldx%lldx%lld",
                 env[e] ? env[e] : "unset", e == 3, ta, tb, (long long)d.m, (long long)d.n,
                 (long long)d.k);
        tj_tensor *c = tj_matmul(a, b);
        assert_non_null(c);
        /* randn operands: sums of k products of size 1 (rounding grows as sqrt k) */
        double tol = 1e-5 * (1 + sqrt((double)d.k));
        tu_gemm_check_close(tj_data(c), ref, d.m * d.n, tol, what);
        /* linear: x @ w^T + bias, w = b^T (w [n, k]) */
        tj_tensor *l = tj_linear(a, tj_transpose(b, 0, 1), bias);
        assert_non_null(l);
        const float *pl = tj_data(l);
        for (int64_t i = 0; i < d.m * d.n; i++)
            if (!(fabs(pl[i] - (ref[i] + pbias[i % d.n])) <= tol * (1 + fabs(ref[i]))))
                fail_msg("linear %s: element %lld: %.9g", what, (long long)i, pl[i]);
    }
    unsetenv("TJIT_OWN_F32");
    unsetenv("TJIT_BLAS_NARROW");
    free(ref);
    tj_scope_end();
}

static void test_matmul_own_f32(void **state)
{
    (void)state;
    static const dims ds[] = {{1, 1, 1},    {127, 33, 5},   {128, 96, 128}, {130, 200, 33},
                              {40, 70, 300}, {300, 65, 10}, {25, 64, 0}};
    int threads = tj_num_threads();
    for (int th = 1; th <= 2; th++) {
        tj_set_num_threads(th);
        for (size_t s = 0; s < sizeof ds / sizeof ds[0]; s++)
            for (int t = 0; t < 4; t++)
                matmul_case(ds[s], t & 1, t & 2);
    }
    tj_set_num_threads(threads);
}

/* The rule for B packed in the call with OpenBLAS on AVX2 kernels on an
 * AVX-512 CPU (TJIT_BLAS_NARROW=1): tjit's GEMM from 4 rows and 2^16
 * multiply-adds; on OpenBLAS's widest kernels (=0), none on AVX-512. */
static void test_own_rule_narrow(void **state)
{
    (void)state;
    bool avx512 = tjg_isa_current() >= TJG_AVX512;
    setenv("TJIT_BLAS_NARROW", "1", 1);
    assert_int_equal(rt_gemm_own_f32(4, 512, 512), avx512);
    assert_int_equal(rt_gemm_own_f32(64, 64, 16), avx512);
    assert_false(rt_gemm_own_f32(3, 512, 512));
    assert_false(rt_gemm_own_f32(64, 64, 15));
    setenv("TJIT_BLAS_NARROW", "0", 1);
    if (avx512)
        assert_false(rt_gemm_own_f32(4, 512, 512) || rt_gemm_own_f32(128, 512, 512));
    setenv("TJIT_OWN_F32", "0", 1);       /* the override still wins */
    setenv("TJIT_BLAS_NARROW", "1", 1);
    assert_false(rt_gemm_own_f32(128, 512, 512));
    unsetenv("TJIT_OWN_F32");
    unsetenv("TJIT_BLAS_NARROW");
}

static void test_frozen_weights(void **state)
{
    (void)state;
    frozen_case(false, false, false);
    frozen_case(true, false, false);
    frozen_case(true, true, false);
    frozen_case(false, false, true);   /* quantize_dynamic implies freeze */
}

/* rt_gemm_kept (sched/pair.c asks it before cutting a GEMM in column
 * blocks): false for a weight the running call does not name; named and
 * unfrozen, true while it is packed and unchanged, false for a call that
 * sees it changed (then true again once a second call sees it unchanged),
 * as the GEMM's own lookup decides (a transposed view is a weight of its
 * own); true whatever it holds when frozen or
 * int8; false where tjit's GEMM would not take it packed (few columns, or
 * with OpenBLAS on AVX2 kernels on an AVX-512 CPU few multiply-adds). */
static void test_gemm_kept(void **state)
{
    (void)state;
    tj_alloc_trim();
    tj_scope_begin();
    tj_tensor *w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){192, 512}));
    tj_tensor *wt = tj_transpose(w, 0, 1), *narrow = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){192, 64}));
    bool avx2 = tjg_isa_current() >= TJG_AVX2;
    assert_false(rt_gemm_kept(w, 64));
    tj_tensor *named[2] = {w, narrow};
    rt_gemm_frozen(named, 2, 0);
    assert_int_equal(rt_gemm_kept(w, 64), avx2);   /* first seen: packed */
    assert_int_equal(rt_gemm_kept(w, 64), avx2);
    assert_int_equal(tj_mul_s_(w, 2.0), 0);
    assert_false(rt_gemm_kept(w, 64));             /* changed: on OpenBLAS */
    assert_int_equal(tjg_cache_bytes(), 0);
    assert_int_equal(rt_gemm_kept(w, 64), avx2);   /* seen unchanged: packed again */
    assert_int_equal(rt_gemm_kept(wt, 64), avx2);  /* a view of it: a weight of its own */
    assert_int_equal(tj_mul_s_(w, 0.5), 0);
    assert_false(rt_gemm_kept(wt, 64));
    setenv("TJIT_BLAS_NARROW", "0", 1);   /* OpenBLAS on its widest kernels */
    assert_false(rt_gemm_kept(narrow, 64));
    /* OpenBLAS on AVX2 kernels on an AVX-512 CPU: tjit's takes it */
    setenv("TJIT_BLAS_NARROW", "1", 1);
    assert_int_equal(rt_gemm_kept(narrow, 64), tjg_isa_current() >= TJG_AVX512);
    assert_false(rt_gemm_kept(narrow, 2));   /* 2 * 64 * 192 multiply-adds: not */
    unsetenv("TJIT_BLAS_NARROW");
    rt_gemm_frozen(named, 2, RT_GEMM_FREEZE);
    assert_true(rt_gemm_kept(narrow, 64));
    rt_gemm_frozen(named, 2, RT_GEMM_INT8);
    assert_true(rt_gemm_kept(w, 64));
    rt_gemm_frozen(NULL, 0, 0);
    assert_false(rt_gemm_kept(w, 64));
    tjg_cache_clear();
    tj_scope_end();
    tj_release(w), tj_release(narrow);
    tj_alloc_trim();
}

/* quantize_dynamic's rows are quantized at 7 bits exactly where the
 * variant's kernel wants them (tjg_u8s8_reduce_range: AVX2 without VNNI),
 * at 8 bits elsewhere: under each variant the compiled linear equals the
 * product of the rows quantized with that qmax (and the weight quantized
 * per channel) and, with 7 bits, differs from the 8-bit one. */
static void test_int8_rows_range(void **state)
{
    (void)state;
    enum { M = 64, K = 192, N = 512 };
    tj_scope_begin();
    lin_ctx l = {tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){N, K})),
                 tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){N}))};
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){M, K});
    const float *xv = tj_data(x), *wv = tj_data(l.w), *bv = tj_data(l.b);
    tjg_packed p;
    assert_int_equal(tjg_pack_f32_as_s8(&p, wv, 1, K, K, N), 0);   /* B[k, n] = w[n, k] */
    static uint8_t q[M * K];
    static float ref[2][M * N];
    float sa[M];
    int32_t zp[M];
    for (int r = 0; r < 2; r++) {   /* r = 0: 8-bit rows, 1: 7-bit */
        tjg_quantize_rows_u8(M, K, xv, K, q, sa, zp, r ? 127 : 255);
        assert_int_equal(tjg_gemm_u8s8(M, q, K, zp, sa, &p, ref[r], N, NULL), 0);
        for (int i = 0; i < M * N; i++) {
            float v = ref[r][i] + bv[i % N];
            ref[r][i] = v > 0 ? v : 0;
        }
    }
    tjg_packed_free(&p);
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        tj_compiled *c = tj_compile(model_lin, &l, &(tj_compile_options){.name = "lin8",
                                                                         .quantize_dynamic = true});
        tj_tensor *got = tj_call(c, &x, 1);
        assert_non_null(got);
        const float *g = tj_data(got);
        int want = tjg_u8s8_reduce_range(vs[v]);
        double d[2] = {0, 0};
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < M * N; i++)
                d[r] = fmax(d[r], fabs(g[i] - ref[r][i]));
        if (!(d[want] <= 1e-5))
            fail_msg("%s: |compiled - %d-bit rows| %.3g", tjg_isa_name(vs[v]), 8 - want, d[want]);
        assert_true(d[!want] > 1e-3);   /* the other width gives other results */
        tj_compiled_free(c);
    }
    tjg_isa_force(-1);
    tj_scope_end();
    tj_release(l.w), tj_release(l.b);
    tj_alloc_trim();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isa_select),
        cmocka_unit_test(test_bf16_rne),
        cmocka_unit_test(test_f32_variants),
        cmocka_unit_test(test_gemm_kept),
        cmocka_unit_test(test_bf16_variants),
        cmocka_unit_test(test_bf16_widened),
        cmocka_unit_test(test_pack_transposed),
        cmocka_unit_test(test_s8_variants),
        cmocka_unit_test(test_s8_extremes),
        cmocka_unit_test(test_s8_7bit),
        cmocka_unit_test(test_s8_7bit_half),
        cmocka_unit_test(test_is_7bit),
        cmocka_unit_test(test_epilogue_prologue),
        cmocka_unit_test(test_padded_sums),
        cmocka_unit_test(test_isa_env),
        cmocka_unit_test(test_masked_fallback),
        cmocka_unit_test(test_bf16_tensors),
        cmocka_unit_test(test_frozen_weights),
        cmocka_unit_test(test_matmul_own_f32),
        cmocka_unit_test(test_own_rule_narrow),
        cmocka_unit_test(test_int8_rows_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
