/* k_conv_direct_avx2.c - the direct f32 convolution's micro-kernels for
 * AVX2 + FMA (8 floats per ymm, 16 registers); the geometry, packing, phase
 * planes, drivers and rule are k_conv_direct.c's, which dispatches here when
 * the CPU has AVX2 and FMA but not AVX-512F.
 *
 * Grid kernel (acc[KO][QV] ymm, KO output channels x QV*8 grid positions):
 * 4 x 3 keeps the QV loaded vectors and one broadcast weight in registers,
 * 12 accumulators + 3 + 1 = 16, 3 unaligned loads and 4 broadcasts per 12
 * FMAs. With fewer output channels per group the weights stay in registers
 * instead and the input vector is loaded per column (2 x 6, 1 x 8), so
 * nothing spills. Row kernel (acc[P][KV], 8*KV output channels x P columns
 * of one output row): P*KV + KV + 1 <= 16, so KV = 2 takes up to 6 columns,
 * KV = 1 up to 14. Winograd's input and output transforms, F(2x2, 3x3) and
 * F(4x4, 3x3), 8 tiles per vector (their GEMMs are the grid kernel's).
 * Measured on a Zen 3 in docs/perf.md (Convolution on AVX2 machines,
 * Winograd F(4x4, 3x3) on AVX2); every function is compiled for avx2,fma
 * (the library targets baseline x86-64).
 */
#include <immintrin.h>

#include "conv_direct.h"
#include "conv_direct_kernels.h"

#define VL 8                        /* floats per ymm */
#define CK_TARGET __attribute__((target("avx2,fma")))
#define CK_V __m256
#define CK_VL VL
#define CK_SET1 _mm256_set1_ps
#define CK_LOAD _mm256_load_ps
#define CK_LOADU _mm256_loadu_ps
#define CK_STOREU _mm256_storeu_ps
#define CK_FMADD _mm256_fmadd_ps
CK_BLOCK(block_4_3, 4, 3, 0)
CK_BLOCK(block_4_2, 4, 2, 0)
CK_BLOCK(blockw_2_6, 2, 6, 1)
CK_BLOCK(blockw_1_8, 1, 8, 1)
CK_RBLOCK(rblock_6_2, 6, 2)
CK_RBLOCK(rblock_5_2, 5, 2)
CK_RBLOCK(rblock_4_2, 4, 2)
CK_RBLOCK(rblock_14_1, 14, 1)
CK_RBLOCK(rblock_12_1, 12, 1)
CK_RBLOCK(rblock_8_1, 8, 1)
CK_RBLOCK(rblock_7_1, 7, 1)

/* ---- Winograd F(2x2, 3x3) transforms (k_conv_direct.c, run_wino) ------------------------ */

/* V = B^T d B per 4x4 tile d, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
 * VL tiles (consecutive grid positions) per vector. */
CK_TARGET static void wino_in(const float *xp, int64_t cg, int64_t plane, const int64_t *toff,
                              int64_t npos, float *v, int64_t vxs)
{
    for (int64_t c = 0; c < cg; c++, xp += plane, v += npos)
        for (int64_t p = 0; p < npos; p += VL) {
            __m256 d[4][4], t[4][4];
            _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++)
                d[k / 4][k % 4] = _mm256_loadu_ps(xp + toff[k] + p);
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
                t[0][k] = _mm256_sub_ps(d[0][k], d[2][k]);
                t[1][k] = _mm256_add_ps(d[1][k], d[2][k]);
                t[2][k] = _mm256_sub_ps(d[2][k], d[1][k]);
                t[3][k] = _mm256_sub_ps(d[1][k], d[3][k]);
            }
            float *vp = v + p;
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++, vp += 4 * vxs) {
                _mm256_store_ps(vp, _mm256_sub_ps(t[r][0], t[r][2]));
                _mm256_store_ps(vp + vxs, _mm256_add_ps(t[r][1], t[r][2]));
                _mm256_store_ps(vp + 2 * vxs, _mm256_sub_ps(t[r][2], t[r][1]));
                _mm256_store_ps(vp + 3 * vxs, _mm256_sub_ps(t[r][1], t[r][3]));
            }
        }
}

/* d[i] = r[i] for i < n <= 4*VL, without a call (Zen 3's masked stores
 * are slow: vmaskmovps took a quarter of the output transform). */
CK_TARGET static inline void put_row(float *d, const float *r, int64_t n)
{
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {   /* unrolled: not memmove */
        if (n < VL)
            break;
        _mm256_storeu_ps(d, _mm256_loadu_ps(r));
        n -= VL, d += VL, r += VL;
    }
    if (n & 4) {
        _mm_storeu_ps(d, _mm_loadu_ps(r));
        d += 4, r += 4;
    }
    if (n & 2) {
        d[0] = r[0], d[1] = r[1];
        d += 2, r += 2;
    }
    if (n & 1)
        d[0] = r[0];
}

/* y[at..at+n) = r[0..n) of the block's output (g->y: f32, or bf16/f16
 * rounded once, rt_conv_narrow). */
CK_TARGET static inline void put_out(const rt_conv_wino_out *g, int64_t at, const float *r,
                                     int64_t n)
{
    if (g->dt != TJ_F32)
        rt_conv_narrow(g->dt, (uint16_t *)g->y + at, r, n);
    else
        put_row((float *)g->y + at, r, n);
}

/* Eight f32 rounded to bf16 as ir_f32_to_bf16 (RNE, a NaN quieted), each
 * in the low 16 bits of its lane. */
CK_TARGET static inline __m256i bf16_lanes(__m256 x)
{
    __m256i u = _mm256_castps_si256(x), hi = _mm256_srli_epi32(u, 16);
    __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
}

/* 16 f32 (lo, then hi) rounded to bf16 at d. */
CK_TARGET static inline void store_bf16(uint16_t *d, __m256 lo, __m256 hi)
{
    __m256i p = _mm256_packus_epi32(bf16_lanes(lo), bf16_lanes(hi));   /* lanes: lo0 hi0 lo1 hi1 */
    _mm256_storeu_si256((__m256i *)d, _mm256_permute4x64_epi64(p, 0xd8));
}

/* 16 f32 (lo, then hi) rounded to f16 at d (vcvtps2ph, nearest even: the
 * bits of rt_conv_narrow); only where g->f16c says the CPU has F16C. */
__attribute__((target("avx2,fma,f16c"))) static void store_f16(uint16_t *d, __m256 lo, __m256 hi)
{
    _mm_storeu_si128((__m128i *)d, _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
    _mm_storeu_si128((__m128i *)(d + 8), _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
}

/* Writes rows[a] (output row m*ty + a, a < m), each the m x m tiles of VL
 * grid positions from q interleaved (m*VL floats), to the output channel at
 * yc (elements from g->y): the parts inside the tile grid and the output,
 * row by row of tiles. */
CK_TARGET static void wino_put(const rt_conv_wino_out *g, int64_t yc, int64_t q, int64_t m,
                               const float *rows)
{
    for (int64_t p = 0; p < VL;) {
        int64_t ty = (q + p) / g->wq, tx = (q + p) % g->wq;
        int64_t cnt = VL - p < g->wq - tx ? VL - p : g->wq - tx;
        int64_t nt = cnt < g->txn - tx ? cnt : g->txn - tx;
        int64_t ncol = m * nt < g->ow - m * tx ? m * nt : g->ow - m * tx;
        for (int64_t a = 0; a < m && ty < g->tyn && nt > 0; a++)
            if (m * ty + a < g->oh)
                put_out(g, yc + (m * ty + a) * g->ow + m * tx, rows + a * m * VL + m * p, ncol);
        p += cnt;
    }
}

/* Y = A^T M A + bias for VL tiles of F(2x2), A^T = [1 1 1 0; 0 1 -1 -1]
 * (M at mp, its 16 positions mxs apart): r[a][0..1] = output row a of the
 * tiles, interleaved tile by tile (2 columns each). */
CK_TARGET static inline void wino2_tile(const float *mp, int64_t mxs, __m256 b, __m256 r[4][4])
{
    __m256 d[4][4], t[2][4];
    _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++)
        d[k / 4][k % 4] = _mm256_load_ps(mp + k * mxs);
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
        t[0][k] = _mm256_add_ps(_mm256_add_ps(d[0][k], d[1][k]), d[2][k]);
        t[1][k] = _mm256_sub_ps(_mm256_sub_ps(d[1][k], d[2][k]), d[3][k]);
    }
    _Pragma("GCC unroll 2") for (int a = 0; a < 2; a++) {
        __m256 c0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t[a][0], t[a][1]), t[a][2]), b);
        __m256 c1 = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(t[a][1], t[a][2]), t[a][3]), b);
        __m256 lo = _mm256_unpacklo_ps(c0, c1), hi = _mm256_unpackhi_ps(c0, c1);
        r[a][0] = _mm256_permute2f128_ps(lo, hi, 0x20);
        r[a][1] = _mm256_permute2f128_ps(lo, hi, 0x31);
    }
}

/* ---- Winograd F(4x4, 3x3) transforms (k_conv_direct.c: the matrices) -------------------- */

/* v = B^T d for one column (or row) of 6 vectors. */
CK_TARGET static inline void bt6(const __m256 *d, __m256 *v)
{
    __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f);
    __m256 a = _mm256_sub_ps(d[3], d[1]), b = _mm256_sub_ps(d[4], d[2]);
    v[0] = _mm256_fmadd_ps(four, d[0], _mm256_fnmadd_ps(five, d[2], d[4]));
    v[1] = _mm256_fnmadd_ps(four, _mm256_add_ps(d[1], d[2]), _mm256_add_ps(d[3], d[4]));
    v[2] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[1], d[2]), _mm256_sub_ps(d[4], d[3]));
    v[3] = _mm256_fmadd_ps(two, a, b);
    v[4] = _mm256_fnmadd_ps(two, a, b);
    v[5] = _mm256_fmadd_ps(four, d[1], _mm256_fnmadd_ps(five, d[3], d[5]));
}

/* V = B^T d B per 6x6 tile d, VL tiles (consecutive grid positions) per
 * vector: the columns, then the rows, stored at the 36 positions. */
CK_TARGET static void wino4_in(const float *xp, int64_t cg, int64_t plane, const int64_t *toff,
                               int64_t npos, float *v, int64_t vxs)
{
    for (int64_t c = 0; c < cg; c++, xp += plane, v += npos)
        for (int64_t p = 0; p < npos; p += VL) {
            __m256 t[6][6];
            _Pragma("GCC unroll 6") for (int k = 0; k < 6; k++) {
                __m256 d[6], r[6];
                _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++) {
                    d[i] = _mm256_loadu_ps(xp + toff[i * 6 + k] + p);
                }
                bt6(d, r);
                _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++) t[i][k] = r[i];
            }
            float *vp = v + p;
            _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++, vp += 6 * vxs) {
                __m256 r[6];
                bt6(t[i], r);
                _Pragma("GCC unroll 6") for (int k = 0; k < 6; k++)
                    _mm256_store_ps(vp + k * vxs, r[k]);
            }
        }
}

/* y = A^T d for one column (or row) of 6 vectors. */
CK_TARGET static inline void at6(const __m256 *d, __m256 *y)
{
    __m256 s1 = _mm256_add_ps(d[1], d[2]), s2 = _mm256_add_ps(d[3], d[4]);
    __m256 e1 = _mm256_sub_ps(d[1], d[2]), e2 = _mm256_sub_ps(d[3], d[4]);
    y[0] = _mm256_add_ps(_mm256_add_ps(d[0], s1), s2);
    y[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), e2, e1);
    y[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), s2, s1);
    y[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), e2, e1), d[5]);
}

/* The same for F(4x4): r[a][0..3] = output row a of VL tiles, 4 columns
 * each, the columns transposed into rows tile by tile. */
CK_TARGET static inline void wino4_tile(const float *mp, int64_t mxs, __m256 b, __m256 r[4][4])
{
    __m256 t[4][6];
    _Pragma("GCC unroll 6") for (int k = 0; k < 6; k++) {
        __m256 d[6], y[4];
        _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++)
            d[i] = _mm256_load_ps(mp + (i * 6 + k) * mxs);
        at6(d, y);
        _Pragma("GCC unroll 4") for (int a = 0; a < 4; a++) t[a][k] = y[a];
    }
    _Pragma("GCC unroll 4") for (int a = 0; a < 4; a++) {
        __m256 y[4];
        at6(t[a], y);
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) y[k] = _mm256_add_ps(y[k], b);
        __m256 l0 = _mm256_unpacklo_ps(y[0], y[1]), h0 = _mm256_unpackhi_ps(y[0], y[1]);
        __m256 l1 = _mm256_unpacklo_ps(y[2], y[3]), h1 = _mm256_unpackhi_ps(y[2], y[3]);
        __m256 u0 = _mm256_shuffle_ps(l0, l1, 0x44), u1 = _mm256_shuffle_ps(l0, l1, 0xee);
        __m256 u2 = _mm256_shuffle_ps(h0, h1, 0x44), u3 = _mm256_shuffle_ps(h0, h1, 0xee);
        r[a][0] = _mm256_permute2f128_ps(u0, u1, 0x20);
        r[a][1] = _mm256_permute2f128_ps(u2, u3, 0x20);
        r[a][2] = _mm256_permute2f128_ps(u0, u1, 0x31);
        r[a][3] = _mm256_permute2f128_ps(u2, u3, 0x31);
    }
}

/* Stores r (wino2_tile's or wino4_tile's, M = 2 or 4), the tiles of VL grid
 * positions from q, to the output channel at yc: whole rows of tiles
 * straight from registers (bf16 and f16 rounded there, as rt_conv_narrow),
 * the others through wino_put. */
CK_TARGET static inline __attribute__((always_inline)) void wino_store(
    const rt_conv_wino_out *g, int64_t yc, int64_t q, int M, __m256 r[4][4])
{
    int64_t ty = q / g->wq, tx = q % g->wq;
    bool whole = tx + VL <= g->txn && ty < g->tyn && M * ty + M - 1 < g->oh &&
                 M * (tx + VL) <= g->ow;
    if (whole && g->dt == TJ_BF16) {
        uint16_t *y0 = (uint16_t *)g->y + yc + M * ty * g->ow + M * tx;
        for (int a = 0; a < M; a++, y0 += g->ow)
            for (int k = 0; k < M; k += 2)
                store_bf16(y0 + k * VL, r[a][k], r[a][k + 1]);
    } else if (whole && g->f16c) {
        uint16_t *y0 = (uint16_t *)g->y + yc + M * ty * g->ow + M * tx;
        for (int a = 0; a < M; a++, y0 += g->ow)
            for (int k = 0; k < M; k += 2)
                store_f16(y0 + k * VL, r[a][k], r[a][k + 1]);
    } else if (whole && g->dt == TJ_F32) {
        float *y0 = (float *)g->y + yc + M * ty * g->ow + M * tx;
        for (int a = 0; a < M; a++, y0 += g->ow)
            for (int k = 0; k < M; k++)
                _mm256_storeu_ps(y0 + k * VL, r[a][k]);
    } else {
        float rows[4 * 4 * VL] __attribute__((aligned(32)));
        for (int a = 0; a < M; a++)
            for (int k = 0; k < M; k++)
                _mm256_store_ps(rows + (a * M + k) * VL, r[a][k]);
        wino_put(g, yc, q, M, rows);
    }
}

/* Y = A^T M A + bias per tile of F(M x M, 3x3), M = 2 or 4, for every
 * output channel and grid block of the block (rt_conv_wino_out). */
CK_TARGET static inline __attribute__((always_inline)) void wino_out_m(
    const float *m, int64_t mxs, const rt_conv_wino_out *g, int M)
{
    for (int64_t ob = 0; ob < g->nob; ob++)
        for (int64_t kb = 0; kb < g->nkb; kb++)
            for (int64_t o = 0; o < g->ko && ob * g->ko + o < g->no; o++) {
                int64_t oc = ob * g->ko + o;
                __m256 b = _mm256_set1_ps(g->bias ? g->bias[oc] : 0.0f);
                const float *mp = m + ((ob * g->kbs + kb) * g->ko + o) * g->qn;
                for (int64_t v = 0; v < g->qn; v += VL) {
                    __m256 r[4][4];
                    if (M == 2)
                        wino2_tile(mp + v, mxs, b, r);
                    else
                        wino4_tile(mp + v, mxs, b, r);
                    wino_store(g, oc * g->oh * g->ow, g->q0 + kb * g->qn + v, M, r);
                }
            }
}

CK_TARGET static void wino_out(const float *m, int64_t mxs, const rt_conv_wino_out *g)
{
    wino_out_m(m, mxs, g, 2);
}

CK_TARGET static void wino4_out(const float *m, int64_t mxs, const rt_conv_wino_out *g)
{
    wino_out_m(m, mxs, g, 4);
}

/* The rule's numbers, measured on a Zen 3 (docs/perf.md, Convolution on
 * AVX2 machines; make bench-conv, one thread): the row kernel against the
 * grid kernel as on AVX-512 (rows won at 28x28 and below, tied at 56x56);
 * the GEMM paths on strided convs with 8+ channels per group (3x3 s2 64 ->
 * 128 at 56x56: 68 GFLOP/s, both kernels 59); Winograd from 16 channels
 * when 67.5% of its grid is kept (28x28 x 16-32 channels, groups of 16:
 * 10-25% faster than the best direct kernel; 14x14, 68.1% kept: 32 -> 64
 * at batch 1, P12's second conv, F(2x2) and F(4x4) 82-85 us against the
 * direct kernels' 110-165, 16 -> 32 28-42 us against 33-48, docs/perf.md,
 * Small convolutions: P11 and P12; not 7x7, 66.7% kept, where it was no
 * faster at 16-48 channels), from 64 when 45% (14x14 x 256: 1.4x, 7x7 x 512 with half
 * its tiles kept: 1.2x); F(4x4) where F(2x2) would run, from 16 channels,
 * when its products per kept output are at most 0.8 of F(2x2)'s (56x56,
 * 28x28 and 14x14 with 64-256 channels, 1.1-1.4x F(2x2); not 7x7, where its
 * tiles keep an eighth: 2x slower). */
const rt_conv_kernels rt_conv_avx2 = {
    .vl = VL,
    .grid = {{4, 3, block_4_3}, {2, 6, blockw_2_6}, {1, 8, blockw_1_8}},
    .tail = {4, 2, block_4_2},
    .rlen = {{14, 12, 8, 7}, {6, 5, 4, 0}},
    .rows = {{rblock_14_1, rblock_12_1, rblock_8_1, rblock_7_1},
             {rblock_6_2, rblock_5_2, rblock_4_2, NULL}},
    .rows_gain = 0.05,
    .min_keep = 0.7,
    .wino_in = wino_in,
    .wino_out = wino_out,
    .wino4_in = wino4_in,
    .wino4_out = wino4_out,
    .strided_gemm = true,
    .wino_c = {16, 64},
    .wino_keep = {0.675, 0.45},
    .wino4_c = 16,
    .wino4_gain = 0.8,
};
