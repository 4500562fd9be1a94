/* test_gemm_amx.c - the AMX path of tjit's GEMM (runtime/gemm_amx.c, gemm_amx.h):
 * the emulated tile operations against the Intel SDM's pseudocode (shapes
 * from the configuration, rows past it zero, tdpbf16ps's FMA order with
 * denormal inputs read as zero and denormal results flushed, round to
 * nearest even; tdpbusd exact and wrapping in s32; the #UD cases); the block
 * loop called directly below TJG_AMX_MIN_M rows; bf16 and u8 x s8 GEMMs on
 * the emulated tiles against the portable kernel (bit for bit where both sum
 * in the same order: int8 always, bf16 within one k-block; else within f32
 * rounding), over M 1-40 and M, N and K tails, A as rows, transposed and
 * strided (f32 or bf16 bits), with every epilogue (bias, activations,
 * residual before and after, alpha, accumulate, bf16 C) and the prologue, on
 * one and two threads; the same on the hardware's tiles where this CPU has
 * AMX and the OS granted the tile data (named as skipped otherwise); the
 * eager bf16 linear and matmul on the emulated tiles; the
 * dispatch: the size threshold, TJIT_ISA=amx on a CPU without AMX never
 * using the tiles. */
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
#include "../runtime/gemm_amx.h"
#include "../runtime/rt.h"
#include "util.h"
#include "util_gemm.h"

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static bool hw_amx(void) { return (tjg_cpu_features() & TJG_F_AMX) != 0; }

/* ---- the emulated tile operations ------------------------------------------------------ */

static tjg_tilecfg cfg_of(const int rows[8], const int colsb[8])
{
    tjg_tilecfg c = {.palette = 1};
    for (int t = 0; t < 8; t++)
        c.rows[t] = (uint8_t)rows[t], c.colsb[t] = (uint16_t)colsb[t];
    return c;
}

/* tileloadd and tilestored move only the configured rows x colsb; the rest
 * of a loaded tile is zero, the rest of the memory stored to is untouched. */
static void test_tile_load_store(void **state)
{
    (void)state;
    static tjg_tile_emu s;
    memset(&s, 0xab, sizeof s);
    s.fault = false;
    tjg_tile_config(&s, &(tjg_tilecfg){.palette = 1, .rows = {3, 16}, .colsb = {10, 64}});
    assert_false(s.fault);
    uint8_t mem[16 * 80], out[16 * 80];
    for (int i = 0; i < (int)sizeof mem; i++)
        mem[i] = (uint8_t)(i * 7 + 1);
    tjg_tile_load(&s, 0, mem, 80);
    for (int r = 0; r < 16; r++)
        for (int b = 0; b < 64; b++)
            assert_int_equal(s.t[0][r][b], r < 3 && b < 10 ? mem[r * 80 + b] : 0);
    memset(out, 0x5a, sizeof out);
    tjg_tile_store(&s, 0, out, 80);
    for (int i = 0; i < (int)sizeof out; i++)
        assert_int_equal(out[i], i / 80 < 3 && i % 80 < 10 ? mem[i] : 0x5a);
    tjg_tile_load(&s, 1, mem, 80);
    tjg_tile_zero(&s, 1);
    for (int r = 0; r < 16; r++)
        for (int b = 0; b < 64; b++)
            assert_int_equal(s.t[1][r][b], 0);
    /* ldtilecfg zeroes every tile */
    tjg_tile_load(&s, 0, mem, 80);
    tjg_tile_config(&s, &(tjg_tilecfg){.palette = 1, .rows = {3}, .colsb = {10}});
    assert_int_equal(s.t[0][0][0], 0);
    assert_false(s.fault);
}

/* DAZ on an FMA's inputs, FTZ on its result (the SDM's words for tdpbf16ps). */
static float flush(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0, x) : x; }

/* tdpbf16ps's pseudocode: per row m, per pair k in order, per column n:
 * two FMAs (the pair's low then high halves), DAZ, FTZ, RNE; the written
 * rows' bytes past colsb and the rows past the configured ones zeroed. */
static void test_tile_dpbf16ps(void **state)
{
    (void)state;
    static tjg_tile_emu s;
    memset(&s, 0, sizeof s);
    /* C 4 x 3 (12 bytes), A 4 x 5 pairs (20 bytes), B 5 x 3 pairs */
    int rows[8] = {4, 4, 5}, colsb[8] = {12, 20, 12};
    tjg_tilecfg cfg = cfg_of(rows, colsb);
    tjg_tile_config(&s, &cfg);
    uint16_t a[4][10] = {{0}}, b[5][6];
    float c[4][3];
    unsigned seed = 3;
    for (int q = 0; q < 10; q++)   /* row 3 random, rows 0-2 the special cases */
        a[3][q] = tjg_f32_to_bf16(tu_frand(&seed) * 8);
    for (int k = 0; k < 5; k++)
        for (int q = 0; q < 6; q++)
            b[k][q] = tjg_f32_to_bf16(tu_frand(&seed) * 8);
    for (int m = 0; m < 4; m++)
        for (int n = 0; n < 3; n++)
            c[m][n] = m == 3 ? tu_frand(&seed) : 0.0f;
    /* row 0, two FMAs of ties: 1 + 2^-24 rounds to even (1) twice, where
     * the pair's exact sum would give 1 + 2^-23; from 1 + 2^-23 (odd) the
     * first tie rounds up to 1 + 2^-22, the second stays (even) */
    a[0][0] = a[0][1] = 0x3f80;                  /* 1, 1 */
    b[0][0] = b[0][1] = b[0][2] = b[0][3] = 0x3380;   /* 2^-24 */
    c[0][0] = 1.0f, c[0][1] = 1.0f + 0x1p-23f;
    /* row 1, DAZ: a denormal bf16 (0x0001, 2^-133) against 2^100 reads as 0 */
    a[1][2] = 0x0001, b[1][0] = 0x7180;
    /* row 2, FTZ: the last FMA, 2^-70 x -2^-70 = -2^-140, is denormal: -0 */
    a[2][9] = 0x1c80, b[4][3] = 0x9c80;
    tjg_tile_load(&s, 0, c, 12);
    tjg_tile_load(&s, 1, a, 20);
    tjg_tile_load(&s, 2, b, 12);
    tjg_tile_dpbf16ps(&s, 0, 1, 2);
    assert_false(s.fault);
    float got[4][3];
    for (int m = 0; m < 4; m++)
        memcpy(got[m], s.t[0][m], 12);
    for (int m = 0; m < 4; m++)
        for (int n = 0; n < 3; n++) {
            float want = c[m][n];
            for (int k = 0; k < 5; k++)
                for (int e = 0; e < 2; e++)
                    want = flush(fmaf(flush(tjg_bf16_to_f32(a[m][2 * k + e])),
                                      flush(tjg_bf16_to_f32(b[k][2 * n + e])), flush(want)));
            if (bits_of(got[m][n]) != bits_of(want))
                fail_msg("tdpbf16ps [%d,%d]: %a, want %a", m, n, got[m][n], want);
        }
    assert_true(got[0][0] == 1.0f);
    assert_true(got[0][1] == 1.0f + 0x1p-22f);
    assert_int_equal(bits_of(got[1][0]), 0);   /* without DAZ: 2^-33 */
    assert_true(fmaf(tjg_bf16_to_f32(0x0001), tjg_bf16_to_f32(0x7180), 0) == 0x1p-33f);
    assert_int_equal(bits_of(got[2][1]), 0x80000000u);   /* without FTZ: -2^-140 */
    assert_true(fmaf(0x1p-70f, -0x1p-70f, 0) == -0x1p-140f);
    for (int m = 0; m < 16; m++)
        for (int q = m < 4 ? 12 : 0; q < 64; q++)
            assert_int_equal(s.t[0][m][q], 0);
}

/* tdpbusd: u8 x s8 quads, exact s32 sums that wrap (no saturation). */
static void test_tile_dpbusd(void **state)
{
    (void)state;
    static tjg_tile_emu s;
    memset(&s, 0, sizeof s);
    int rows[8] = {0, 0, 0, 0, 2, 0, 16, 2}, colsb[8] = {0, 0, 0, 0, 64, 0, 12, 12};
    tjg_tilecfg cfg = cfg_of(rows, colsb);
    tjg_tile_config(&s, &cfg);
    uint8_t a[2][64];
    int8_t b[16][12];
    int32_t c[2][3] = {{INT32_MAX, 0, -5}, {7, INT32_MIN, 0}};
    for (int m = 0; m < 2; m++)
        for (int q = 0; q < 64; q++)
            a[m][q] = (uint8_t)(m == 0 ? 255 : q * 37);
    for (int k = 0; k < 16; k++)   /* column 0 all 127: row 0's sum is positive */
        for (int q = 0; q < 12; q++)
            b[k][q] = (int8_t)(q < 4 || q % 3 == 2 ? 127 : q % 3 == 1 ? -128
                                                           : (k * 11 + q) % 256 - 128);
    tjg_tile_load(&s, 7, c, 12);
    tjg_tile_load(&s, 4, a, 64);
    tjg_tile_load(&s, 6, b, 12);
    tjg_tile_dpbusd(&s, 7, 4, 6);
    assert_false(s.fault);
    for (int m = 0; m < 2; m++)
        for (int n = 0; n < 3; n++) {
            int64_t sum = c[m][n];
            for (int k = 0; k < 16; k++)
                for (int e = 0; e < 4; e++)
                    sum += (int64_t)a[m][4 * k + e] * b[k][4 * n + e];
            int32_t got;
            memcpy(&got, &s.t[7][m][4 * n], 4);
            assert_int_equal(got, (int32_t)(uint32_t)(uint64_t)sum);   /* wrapped */
        }
    int32_t w;
    memcpy(&w, &s.t[7][0][0], 4);
    assert_true(w < 0);   /* INT32_MAX + a positive sum wrapped */
}

/* The #UD cases are faults of the emulation (the block loop must never
 * make one: tjg_gemm reports it as an error). */
static void test_tile_faults(void **state)
{
    (void)state;
    static tjg_tile_emu s;
    uint8_t mem[1024] = {0};
    int rows[8] = {4, 4, 8, 4, 16, 16, 16, 16}, colsb[8] = {16, 32, 16, 12, 64, 64, 64, 64};
    tjg_tilecfg cfg = cfg_of(rows, colsb);
    struct { int d, a, b; } bad[] = {
        {0, 1, 0},   /* a tile twice */
        {0, 0, 2},
        {3, 1, 2},   /* C 12 bytes against B 16 */
        {0, 4, 2},   /* C 4 rows against A 16 */
        {0, 3, 2},   /* A 12 bytes: 3 groups against B's 8 rows */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int bf = 0; bf < 2; bf++) {
            memset(&s, 0, sizeof s);
            tjg_tile_config(&s, &cfg);
            assert_false(s.fault);
            (bf ? tjg_tile_dpbf16ps : tjg_tile_dpbusd)(&s, bad[i].d, bad[i].a, bad[i].b);
            assert_true(s.fault);
        }
    memset(&s, 0, sizeof s);
    tjg_tile_config(&s, &cfg);
    tjg_tile_dpbf16ps(&s, 0, 1, 2);   /* C 4 x 16 B, A 4 x 8 pairs, B 8 x 16 B */
    assert_false(s.fault);
    tjg_tile_release(&s);
    tjg_tile_load(&s, 0, mem, 64);   /* unconfigured */
    assert_true(s.fault);
    memset(&s, 0, sizeof s);
    tjg_tile_config(&s, &(tjg_tilecfg){.palette = 2});
    assert_true(s.fault);
    memset(&s, 0, sizeof s);
    tjg_tile_config(&s, &(tjg_tilecfg){.palette = 1, .rows = {17}, .colsb = {64}});
    assert_true(s.fault);
    memset(&s, 0, sizeof s);
    tjg_tile_config(&s, &(tjg_tilecfg){.palette = 1, .rows = {16}, .colsb = {64}});
    tjg_tile_zero(&s, 1);   /* a tile the configuration leaves out */
    assert_true(s.fault);
}

/* ---- the block loop, called directly ------------------------------------------------------- */

/* Fewer rows than TJG_AMX_MIN_M (a 16-row block, and one short pair),
 * k-groups not a multiple of 16, a part panel, acc: against the SDM's
 * order (bf16: the FMA chain per element; int8: exact). */
static void block_case(bool bf16, int64_t rows, int64_t cols, int64_t k, bool acc)
{
    tjg_amx_emulate(true);
    const tjg_amx_ops *ops = tjg_amx_ops_for(bf16 ? TJG_BF16 : TJG_S8, TJG_AMX_MIN_M);
    tjg_amx_emulate(false);
    assert_non_null(ops);
    int gs = bf16 ? 2 : 4, es = bf16 ? 2 : 1;
    int64_t nkg = (k + gs - 1) / gs, ld = (nkg + 15) / 16 * 64, rp = (rows + 31) / 32 * 32;
    int64_t np = (cols + 31) / 32, ldc = np * 32;
    uint8_t *a = calloc((size_t)(rp * ld), 1);
    uint16_t *b16 = malloc((size_t)(k * cols + 1) * 2);
    int8_t *b8 = malloc((size_t)(k * cols + 1));
    uint32_t *c = malloc((size_t)(rp * ldc) * 4), *c0 = malloc((size_t)(rp * ldc) * 4);
    uint32_t tail[TJG_AMX_KG * TJG_NR];
    unsigned seed = 11;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t kk = 0; kk < k; kk++) {
            float x = tu_frand(&seed);
            if (bf16) {
                uint16_t h = tjg_f32_to_bf16(x);
                memcpy(a + i * ld + kk * es, &h, 2);
            } else {
                a[i * ld + kk] = (uint8_t)((x + 0.5f) * 255);
            }
        }
    for (int64_t q = 0; q < k * cols; q++) {
        float x = tu_frand(&seed);
        b16[q] = tjg_f32_to_bf16(x);
        b8[q] = (int8_t)(x * 255);
    }
    for (int64_t q = 0; q < rp * ldc; q++)
        c0[q] = bf16 ? bits_of(tu_frand(&seed)) : (uint32_t)(q * 1001);
    memcpy(c, c0, (size_t)(rp * ldc) * 4);
    tjg_packed p;
    assert_int_equal(bf16 ? tjg_pack_bf16(&p, b16, cols, 1, k, cols)
                          : tjg_pack_s8(&p, b8, cols, 1, k, cols, NULL), 0);
    void *st = calloc(1, ops->state_bytes);
    ops->begin(st);
    ops->block(st, bf16, rows, cols, nkg, a, ld, p.data, nkg * TJG_NR, c, ldc, acc, tail);
    assert_int_equal(ops->end(st), 0);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            uint32_t want;
            if (bf16) {
                float s = acc ? f32_of(c0[i * ldc + j]) : 0;
                for (int64_t kk = 0; kk < k; kk++) {
                    uint16_t h;
                    memcpy(&h, a + i * ld + kk * 2, 2);
                    s = fmaf(tjg_bf16_to_f32(h), tjg_bf16_to_f32(b16[kk * cols + j]), s);
                }
                want = bits_of(s);
            } else {
                int32_t s = acc ? (int32_t)c0[i * ldc + j] : 0;
                for (int64_t kk = 0; kk < k; kk++)
                    s += a[i * ld + kk] * b8[kk * cols + j];
                want = (uint32_t)s;
            }
            if (c[i * ldc + j] != want)
                fail_msg("block %s %lldx%lldx%lld acc %d [%lld,%lld]: 0x%08x, want 0x%08x",
                         bf16 ? "bf16" : "s8", (long long)rows, (long long)cols, (long long)k,
                         acc, (long long)i, (long long)j, c[i * ldc + j], want);
        }
    tjg_packed_free(&p);
    free(st), free(a), free(b16), free(b8), free(c), free(c0);
}

static void test_block_direct(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {{1, 1, 1}, {5, 20, 7}, {15, 33, 65}, {16, 32, 64},
                                        {17, 40, 33}, {3, 70, 130}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int bf = 0; bf < 2; bf++)
            for (int acc = 0; acc < 2; acc++)
                block_case(bf, shapes[s][0], shapes[s][1], shapes[s][2], acc);
}

/* ---- GEMMs: the AMX path against the portable kernel ------------------------------------ */

enum { REF, EMU, HW };   /* the portable kernel; the emulated tiles; the hardware's */

static void set_mode(int mode)
{
    tjg_amx_emulate(mode == EMU);
    tjg_isa_force(mode == REF ? TJG_GENERIC : -1);
}

typedef struct gcase {
    int64_t m, n, k;
    int alay;        /* A: 0 rows (lda k + 3), 1 transposed, 2 every other element */
    bool a_bits;     /* bf16: A as bf16 bits (else f32) */
    int epi;         /* 0 none; 1 bias, act, res before; 2 res after, alpha; 3 accumulate;
                      * 4 accumulate with alpha, bias; 5 bf16 C, bias; 6 prologue, bias */
    tjg_act act;
} gcase;

enum { NEPI = 7 };

typedef struct gdata {
    float *a, *c0, *res, *bias, *sc, *sh, *sa, *sb;
    uint16_t *a16;
    uint8_t *aq;
    int32_t *zp;
    int64_t ars, acs, lda_q;
} gdata;

static gdata gdata_new(gcase g)
{
    gdata d = {0};
    int64_t na = (g.m + 1) * (g.k + 3) * 2 + 1, nc = g.m * g.n + 1;
    d.a = malloc((size_t)na * 4), d.a16 = malloc((size_t)na * 2), d.aq = malloc((size_t)na);
    d.c0 = malloc((size_t)nc * 4), d.res = malloc((size_t)nc * 4);
    d.bias = malloc((size_t)(g.n + 1) * 4), d.sb = malloc((size_t)(g.n + 1) * 4);
    d.sc = malloc((size_t)(g.k + 1) * 4), d.sh = malloc((size_t)(g.k + 1) * 4);
    d.sa = malloc((size_t)(g.m + 1) * 4), d.zp = malloc((size_t)(g.m + 1) * 4);
    unsigned seed = 17;
    for (int64_t i = 0; i < na; i++) {
        d.a[i] = tu_frand(&seed);
        d.a16[i] = tjg_f32_to_bf16(d.a[i]);
        d.aq[i] = (uint8_t)(i % 7 == 0 ? 255 : (d.a[i] + 0.5f) * 255);
    }
    for (int64_t i = 0; i < nc; i++)
        d.c0[i] = tu_frand(&seed), d.res[i] = tu_frand(&seed);
    for (int64_t j = 0; j <= g.n; j++)
        d.bias[j] = tu_frand(&seed), d.sb[j] = 0.002f * (float)(j % 7 + 1);
    for (int64_t kk = 0; kk <= g.k; kk++)
        d.sc[kk] = 1 + tu_frand(&seed), d.sh[kk] = tu_frand(&seed);
    for (int64_t i = 0; i <= g.m; i++)
        d.sa[i] = 0.01f * (float)(i % 5 + 1), d.zp[i] = (int32_t)(i * 37 % 256);
    d.ars = g.alay == 1 ? 1 : g.alay == 2 ? 2 * g.k : g.k + 3;
    d.acs = g.alay == 1 ? g.m : g.alay == 2 ? 2 : 1;
    d.lda_q = g.alay ? g.k + 5 : g.k;   /* u8 A: rows only, maybe padded */
    return d;
}

static void gdata_free(gdata *d)
{
    free(d->a), free(d->a16), free(d->aq), free(d->c0), free(d->res), free(d->bias);
    free(d->sb), free(d->sc), free(d->sh), free(d->sa), free(d->zp);
}

static tjg_epilogue epi_of(gcase g, const gdata *d)
{
    tjg_epilogue e = {.ldr = g.n, .act = g.act};
    switch (g.epi) {
    case 1: e.bias = d->bias, e.res = d->res; break;
    case 2: e.res = d->res, e.res_after_act = true, e.alpha = 0.75f; break;
    case 3: e.accumulate = true; break;
    case 4: e.accumulate = true, e.alpha = 0.5f, e.bias = d->bias; break;
    case 5: e.out_bf16 = true, e.bias = d->bias; break;
    case 6: e.bias = d->bias; break;
    }
    return e;
}

/* One product under mode into c (f32 or bf16 bits; C starts as c0);
 * returns whether it ran on the tiles. */
static bool product(int mode, bool s8, gcase g, const gdata *d, const tjg_packed *p, void *c)
{
    set_mode(mode);
    tjg_epilogue e = epi_of(g, d);
    tjg_prologue pro = {.scale = d->sc, .shift = d->sh, .act = TJG_ACT_GELU};
    int64_t nc = g.m * g.n;
    if (e.out_bf16)
        for (int64_t i = 0; i < nc; i++)
            ((uint16_t *)c)[i] = tjg_f32_to_bf16(d->c0[i]);
    else
        memcpy(c, d->c0, (size_t)nc * 4);
    uint64_t before = tjg_amx_calls();
    if (s8)
        assert_int_equal(tjg_gemm_u8s8(g.m, d->aq, d->lda_q, d->zp, d->sa, p, c, g.n, &e), 0);
    else
        assert_int_equal(tjg_gemm(g.m, g.a_bits ? (const void *)d->a16 : d->a, g.a_bits, d->ars,
                                  d->acs, p, c, g.n, &e, g.epi == 6 ? &pro : NULL), 0);
    bool tiles = tjg_amx_calls() != before;
    set_mode(REF);
    tjg_amx_emulate(false);
    tjg_isa_force(-1);
    return tiles;
}

/* The AMX path (mode) against the portable kernel for one case. */
static void gemm_case(int mode, bool s8, gcase g)
{
    gdata d = gdata_new(g);
    int64_t nb = g.k * g.n + 1, nc = g.m * g.n + 1;
    float *b = malloc((size_t)nb * 4);
    int8_t *bq = malloc((size_t)nb);
    unsigned seed = 23;
    for (int64_t i = 0; i < nb; i++) {
        b[i] = tu_frand(&seed);
        bq[i] = (int8_t)(i % 11 == 0 ? -128 : i % 13 == 0 ? 127 : b[i] * 255);
    }
    tjg_packed p;
    assert_int_equal(s8 ? tjg_pack_s8(&p, bq, g.n, 1, g.k, g.n, d.sb)
                        : tjg_pack_f32_as_bf16(&p, b, g.n, 1, g.k, g.n), 0);
    float *want = malloc((size_t)nc * 4), *got = malloc((size_t)nc * 4);
    assert_false(product(REF, s8, g, &d, &p, want));
    bool tiles = product(mode, s8, g, &d, &p, got);
    char what[160];
    snprintf(what, sizeof what, "%s %s %lldx%lldx%lld A layout %d%s epilogue %d act %d threads %d",
             mode == EMU ? "emulated" : "hardware", s8 ? "u8s8" : "bf16", (long long)g.m,
             (long long)g.n, (long long)g.k, g.alay, g.a_bits ? " (bf16 bits)" : "", g.epi,
             (int)g.act, tj_num_threads());
    if (tiles != (g.m >= TJG_AMX_MIN_M))
        fail_msg("%s: %s the tiles", what, tiles ? "ran on" : "did not run on");
    /* the same sums: int8 (exact in s32, hardware or not), bf16 on the
     * emulation within one k-block (KCG groups: the portable kernel adds
     * each k-block's sum to C, the tiles carry one FMA chain) */
    bool exact = tiles && (s8 || (mode == EMU && g.k <= 512));
    bool out16 = g.epi == 5;
    for (int64_t i = 0; i < g.m * g.n; i++) {
        float x = out16 ? tjg_bf16_to_f32(((uint16_t *)got)[i]) : got[i];
        float y = out16 ? tjg_bf16_to_f32(((uint16_t *)want)[i]) : want[i];
        bool ok = exact ? bits_of(x) == bits_of(y)
                        : fabsf(x - y) <= (out16 ? 1.0f / 128 : 2e-5f) * (1 + fabsf(y));
        if (!ok)
            fail_msg("%s: element %lld: %a, want %a", what, (long long)i, x, y);
    }
    tjg_packed_free(&p);
    gdata_free(&d);
    free(b), free(bq), free(want), free(got);
}

/* The cases of one mode: M 1-40 on a tail shape (bf16 and int8), then
 * shapes with N and K tails, more than one row block (96 rows), more than
 * one k-block (bf16 512, int8 1024), k = 0, each with the epilogues, the A
 * layouts and the activations in turn; on one thread, then two. */
static void gemm_cases(int mode)
{
    static const int64_t shapes[][3] = {{16, 16, 32},  {17, 33, 33},  {40, 70, 300},
                                        {33, 100, 517}, {64, 64, 1030}, {100, 47, 64},
                                        {130, 200, 40}, {31, 1, 1},     {20, 33, 0},
                                        {48, 96, 1100}};
    int threads = tj_num_threads();
    for (int th = 1; th <= 2; th++) {
        tj_set_num_threads(th);
        for (int s8 = 0; s8 < 2; s8++) {
            for (int64_t m = 1; m <= 40 && th == 1; m++)
                gemm_case(mode, s8, (gcase){m, 45, s8 ? 131 : 70, (int)(m % 3), m % 2, 0, TJG_ACT_NONE});
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (int e = 0; e < NEPI; e++) {
                    if (s8 && (e == 5 || e == 6))   /* u8s8: f32 C, no prologue */
                        continue;
                    gcase g = {shapes[s][0], shapes[s][1], shapes[s][2], (int)(s + e) % 3,
                               (s + e) % 2, e, (tjg_act)((s + e) % (TJG_ACT_GELU_TANH + 1))};
                    gemm_case(mode, s8, g);
                }
        }
    }
    tj_set_num_threads(threads);
}

static void test_gemm_emulated(void **state)
{
    (void)state;
    gemm_cases(EMU);
}

static void test_gemm_hardware(void **state)
{
    (void)state;
    if (!hw_amx()) {
        printf("#summary skipped variant amx (hardware tiles): this CPU lacks AMX or the OS "
               "refused the tile data\n");
        skip();
    }
    gemm_cases(HW);
}

/* The eager bf16 linear and matmul (runtime/k_matmul.c: x [2, 20, 70], w
 * [40, 70], a bias; the weight's transposed view): 40 rows on the emulated
 * tiles, bit for bit the portable kernel's (one k-block). */
static void test_eager_bf16(void **state)
{
    (void)state;
    int64_t nx = 2 * 20 * 70, nw = 40 * 70;
    tj_tensor *x = rt_tensor_new(TJ_BF16, 3, (int64_t[]){2, 20, 70});
    tj_tensor *w = rt_tensor_new(TJ_BF16, 2, (int64_t[]){40, 70});
    tj_tensor *b = rt_tensor_new(TJ_BF16, 1, (int64_t[]){40});
    assert_non_null(x), assert_non_null(w), assert_non_null(b);
    unsigned seed = 31;
    for (int64_t i = 0; i < nx; i++)
        ((uint16_t *)rt_ptr(x))[i] = tjg_f32_to_bf16(tu_frand(&seed));
    for (int64_t i = 0; i < nw; i++)
        ((uint16_t *)rt_ptr(w))[i] = tjg_f32_to_bf16(tu_frand(&seed));
    for (int64_t i = 0; i < 40; i++)
        ((uint16_t *)rt_ptr(b))[i] = tjg_f32_to_bf16(tu_frand(&seed));
    tj_tensor *wt = rt_tensor_view(w, 2, (int64_t[]){70, 40}, (int64_t[]){1, 70}, 0);
    tj_tensor *y[2][2];
    for (int mode = REF; mode <= EMU; mode++) {
        set_mode(mode);
        uint64_t before = tjg_amx_calls();
        for (int op = 0; op < 2; op++) {
            y[mode][op] = rt_tensor_new(TJ_BF16, 3, (int64_t[]){2, 20, 40});
            assert_non_null(y[mode][op]);
            if (op)
                assert_int_equal(rt_kernels[OP_linear](OP_linear, y[mode][op],
                                                       (tj_tensor *[]){x, w, b}, 3, NULL), 0);
            else
                assert_int_equal(rt_kernels[OP_matmul](OP_matmul, y[mode][op],
                                                       (tj_tensor *[]){x, wt}, 2, NULL), 0);
        }
        assert_true((tjg_amx_calls() - before == 2) == (mode == EMU));
    }
    set_mode(REF);
    tjg_isa_force(-1);
    for (int op = 0; op < 2; op++) {
        assert_memory_equal(rt_ptr(y[EMU][op]), rt_ptr(y[REF][op]), 2 * 20 * 40 * 2);
        tj_release(y[REF][op]), tj_release(y[EMU][op]);
    }
    tj_release(wt), tj_release(x), tj_release(w), tj_release(b);
}

/* ---- dispatch ---------------------------------------------------------------------------- */

/* The threshold, the types, the variant; the features: AMX only with the
 * permission; TJIT_ISA=amx on a CPU without AMX never reaches the tiles. */
static void test_dispatch(void **state)
{
    (void)state;
    for (int t = TJG_F32; t <= TJG_F16; t++)
        for (int isa = TJG_GENERIC; isa < TJG_NISA; isa++) {
            bool tiles = isa == TJG_AMX && (t == TJG_BF16 || t == TJG_S8);
            assert_false(tjg_amx_wanted((tjg_isa)isa, (tjg_type)t, TJG_AMX_MIN_M - 1));
            assert_true(tjg_amx_wanted((tjg_isa)isa, (tjg_type)t, TJG_AMX_MIN_M) == tiles);
            assert_true(tjg_amx_wanted((tjg_isa)isa, (tjg_type)t, 100000) == tiles);
        }
    assert_int_equal(TJG_AMX_MIN_M, 16);
    unsigned f = tjg_cpu_features();
    if (f & TJG_F_AMX)
        assert_true(tjg_amx_permitted());
    /* a CPU without AMX: amx caps nothing, the best of the rest runs */
    unsigned spr = TJG_F_AVX2 | TJG_F_AVX512 | TJG_F_BF16 | TJG_F_VNNI | TJG_F_AMX;
    assert_int_equal(tjg_isa_select(spr & ~TJG_F_AMX, "amx"), TJG_AVX512_BF16);
    assert_int_equal(tjg_isa_select(TJG_F_AVX2, "amx"), TJG_AVX2);
    assert_int_equal(tjg_isa_select(spr, "amx"), TJG_AMX);
    assert_int_equal(tjg_isa_select(spr, "avx512_bf16"), TJG_AVX512_BF16);
    assert_false(tjg_amx_wanted(tjg_isa_select(spr & ~TJG_F_AMX, "amx"), TJG_BF16, 1000));
    /* the process: TJIT_ISA=amx read again; the tiles only where the CPU has them */
    setenv("TJIT_ISA", "amx", 1);
    tjg_isa_force(-1);
    assert_true((tjg_isa_current() == TJG_AMX) == ((f & TJG_F_AMX) != 0));
    for (int t = TJG_BF16; t <= TJG_S8; t++)
        assert_true((tjg_amx_ops_for((tjg_type)t, 64) != NULL) == ((f & TJG_F_AMX) != 0));
    /* a product of 64 rows: on the tiles exactly where the CPU has AMX */
    gcase g = {64, 40, 70, 0, true, 0, TJG_ACT_NONE};
    gdata d = gdata_new(g);
    float *b = calloc((size_t)(g.k * g.n), 4), *c = malloc((size_t)(g.m * g.n) * 4);
    tjg_packed p;
    assert_int_equal(tjg_pack_f32_as_bf16(&p, b, g.n, 1, g.k, g.n), 0);
    uint64_t before = tjg_amx_calls();
    assert_int_equal(tjg_gemm(g.m, d.a16, true, d.ars, d.acs, &p, c, g.n, NULL, NULL), 0);
    assert_true((tjg_amx_calls() != before) == ((f & TJG_F_AMX) != 0));
    /* capped below amx: never the tiles */
    setenv("TJIT_ISA", "avx512_bf16", 1);
    tjg_isa_force(-1);
    before = tjg_amx_calls();
    assert_int_equal(tjg_gemm(g.m, d.a16, true, d.ars, d.acs, &p, c, g.n, NULL, NULL), 0);
    assert_true(tjg_amx_calls() == before);
    for (int t = TJG_F32; t <= TJG_F16; t++)
        assert_null(tjg_amx_ops_for((tjg_type)t, 64));
    unsetenv("TJIT_ISA");
    tjg_isa_force(-1);
    /* the emulation: bf16 and int8 from the threshold on, nothing else */
    tjg_amx_emulate(true);
    assert_null(tjg_amx_ops_for(TJG_BF16, TJG_AMX_MIN_M - 1));
    assert_null(tjg_amx_ops_for(TJG_F32, 64));
    assert_null(tjg_amx_ops_for(TJG_F16, 64));
    assert_non_null(tjg_amx_ops_for(TJG_BF16, TJG_AMX_MIN_M));
    assert_non_null(tjg_amx_ops_for(TJG_S8, TJG_AMX_MIN_M));
    assert_true(tjg_amx_ops_for(TJG_S8, 64)->state_bytes >= sizeof(tjg_tile_emu));
    tjg_amx_emulate(false);
    tjg_packed_free(&p);
    gdata_free(&d);
    free(b), free(c);
}

int main(void)
{
    unsetenv("TJIT_ISA");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tile_load_store), cmocka_unit_test(test_tile_dpbf16ps),
        cmocka_unit_test(test_tile_dpbusd),     cmocka_unit_test(test_tile_faults),
        cmocka_unit_test(test_block_direct),    cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_gemm_emulated),   cmocka_unit_test(test_gemm_hardware),
        cmocka_unit_test(test_eager_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
