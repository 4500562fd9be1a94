/* k_conv_direct_avx512.c - the direct f32 convolution's micro-kernels for
 * AVX-512F (16 floats per zmm, 32 registers); the geometry, packing, phase
 * planes, drivers and rule are k_conv_direct.c's, which dispatches here when
 * the CPU and OS have AVX-512F.
 *
 * Grid kernel: 4 x 6 (24 zmm accumulators, 10 loads per 24 FMAs), 2 x 8
 * and 1 x 8 by output channels per group; the row kernel (for small images,
 * where the grid kernel's junk columns and tail would be a third of its
 * work) over 16 or 32 output channels, P chosen from 14, 12, 8, 7 to fit
 * the row. Winograd's input and output transforms, F(2x2, 3x3) and F(4x4,
 * 3x3), 16 tiles per vector (conv_wino_kernels.h; their GEMMs are the grid
 * kernel's). Every function is compiled for avx512f (the library targets
 * baseline x86-64).
 */
#include <immintrin.h>

#include "conv_direct.h"
#include "conv_direct_kernels.h"

#define VL 16                       /* floats per zmm */
#define CK_TARGET __attribute__((target("avx512f")))
#define CK_V __m512
#define CK_VL VL
#define CK_SET1 _mm512_set1_ps
#define CK_LOAD _mm512_load_ps
#define CK_LOADU _mm512_loadu_ps
#define CK_STOREU _mm512_storeu_ps
#define CK_FMADD _mm512_fmadd_ps
CK_BLOCK(block_4_6, 4, 6, 0)
CK_BLOCK(block_2_8, 2, 8, 0)
CK_BLOCK(block_1_8, 1, 8, 0)
CK_BLOCK(block_4_3, 4, 3, 0)   /* F(4x4)'s GEMMs (wgrid) */
CK_RBLOCK(rblock_14_2, 14, 2)
CK_RBLOCK(rblock_12_2, 12, 2)
CK_RBLOCK(rblock_8_2, 8, 2)
CK_RBLOCK(rblock_7_2, 7, 2)
CK_RBLOCK(rblock_14_1, 14, 1)
CK_RBLOCK(rblock_12_1, 12, 1)
CK_RBLOCK(rblock_8_1, 8, 1)
CK_RBLOCK(rblock_7_1, 7, 1)

/* ---- Winograd's width-specific helpers (conv_wino_kernels.h) ------------------------------ */

#define CK_STORE _mm512_store_ps
#define CK_ADD _mm512_add_ps
#define CK_SUB _mm512_sub_ps
#define CK_FNMADD _mm512_fnmadd_ps

/* d[i] = r[i] for i < n <= 4*VL: whole vectors, then one masked. */
CK_TARGET static inline void ck_put_row(float *d, const float *r, int64_t n)
{
    for (; n >= VL; n -= VL, d += VL, r += VL)
        _mm512_storeu_ps(d, _mm512_loadu_ps(r));
    if (n) {
        __mmask16 m = (__mmask16)((1u << n) - 1);
        _mm512_mask_storeu_ps(d, m, _mm512_maskz_loadu_ps(m, r));
    }
}

/* 16 f32 rounded to bf16 as ir_f32_to_bf16 (RNE, a NaN quieted). */
CK_TARGET static inline __m256i bf16_16(__m512 x)
{
    __m512i u = _mm512_castps_si512(x), hi = _mm512_srli_epi32(u, 16);
    __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}

/* 32 f32 (lo, then hi) rounded to bf16 at d. */
CK_TARGET static inline void ck_store_bf16(uint16_t *d, __m512 lo, __m512 hi)
{
    _mm256_storeu_si256((__m256i *)d, bf16_16(lo));
    _mm256_storeu_si256((__m256i *)(d + VL), bf16_16(hi));
}

/* 32 f32 (lo, then hi) rounded to f16 at d (vcvtps2ph, nearest even: the
 * bits of rt_conv_narrow). */
CK_TARGET static inline void ck_store_f16(uint16_t *d, __m512 lo, __m512 hi)
{
    _mm256_storeu_si256((__m256i *)d, _mm512_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
    _mm256_storeu_si256((__m256i *)(d + VL), _mm512_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
}

/* Two columns of 16 tiles interleaved: r[0] tiles 0-7, r[1] tiles 8-15. */
CK_TARGET static inline void ck_zip2(__m512 c0, __m512 c1, __m512 *r)
{
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    r[0] = _mm512_permutex2var_ps(c0, lo, c1);
    r[1] = _mm512_permutex2var_ps(c0, hi, c1);
}

/* Four columns of 16 tiles: the pairs of columns 0-1 and 2-3 interleaved,
 * then those pairs (64 bits) interleaved: r[k] tiles 4k .. 4k + 3. */
CK_TARGET static inline void ck_zip4(const __m512 *y, __m512 *r)
{
    const __m512i lo = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i hi = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    __m512 a[2], b[2];
    ck_zip2(y[0], y[1], a);
    ck_zip2(y[2], y[3], b);
    for (int h = 0; h < 2; h++) {
        __m512d pa = _mm512_castps_pd(a[h]), pb = _mm512_castps_pd(b[h]);
        r[2 * h] = _mm512_castpd_ps(_mm512_permutex2var_pd(pa, lo, pb));
        r[2 * h + 1] = _mm512_castpd_ps(_mm512_permutex2var_pd(pa, hi, pb));
    }
}

#include "conv_wino_kernels.h"

/* The row kernel's tile [np][lanes] into channel rows of the output:
 * 16 x 16 transposes in registers (rows past np zero, unused), each
 * channel's np values one masked store, where k_conv_direct.c's copy makes
 * 448 scalar moves and 32 memcpy calls per 14 x 32 tile (P12 7% faster
 * with this, P11 on the row kernel 20%: docs/perf.md). */
CK_TARGET static void rows_put(const float *tile, int64_t lanes, int64_t no, int64_t np, float *y,
                               int64_t ys)
{
    __mmask16 m = (__mmask16)((1u << np) - 1);
    for (int64_t o0 = 0; o0 < no; o0 += VL) {
        __m512 r[VL], t[VL];
        for (int p = 0; p < VL; p++)
            r[p] = p < np ? _mm512_loadu_ps(tile + p * lanes + o0) : _mm512_setzero_ps();
        /* 2 x 2 blocks of 32-bit, then 64-bit, then 128-bit lanes, then 256-bit */
        for (int p = 0; p < VL; p += 2) {
            t[p] = _mm512_unpacklo_ps(r[p], r[p + 1]);
            t[p + 1] = _mm512_unpackhi_ps(r[p], r[p + 1]);
        }
        for (int p = 0; p < VL; p += 4)
            for (int h = 0; h < 2; h++) {
                __m512d a = _mm512_castps_pd(t[p + h]), b = _mm512_castps_pd(t[p + 2 + h]);
                r[p + h] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
                r[p + 2 + h] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
            }
        for (int p = 0; p < VL; p += 8)
            for (int h = 0; h < 4; h++) {
                t[p + h] = _mm512_shuffle_f32x4(r[p + h], r[p + 4 + h], 0x88);
                t[p + 4 + h] = _mm512_shuffle_f32x4(r[p + h], r[p + 4 + h], 0xdd);
            }
        for (int h = 0; h < 8; h++) {
            r[h] = _mm512_shuffle_f32x4(t[h], t[h + 8], 0x88);
            r[h + 8] = _mm512_shuffle_f32x4(t[h], t[h + 8], 0xdd);
        }
        /* r[k] now holds channel o0 + c over positions 0..15, c = k with
         * its two low bits swapped (the 64-bit step's order) */
        for (int k = 0; k < VL; k++) {
            int c = (k & 12) | ((k & 1) << 1) | ((k >> 1) & 1);
            if (o0 + c < no)
                _mm512_mask_storeu_ps(y + (o0 + c) * ys, m, r[k]);
        }
    }
}

/* The rule's numbers: the row kernel and min_keep measured on AVX-512
 * (docs/perf.md, Convolution; rows_gain and rows_c since rows_put on an
 * Intel Xeon, "bf16 GEMM on Intel without AMX; ..."); Winograd's as on
 * AVX2 (k_conv_direct_avx2.c), measured on a Zen 5 in docs/perf.md
 * (Winograd on AVX-512). */
const rt_conv_kernels rt_conv_avx512 = {
    .vl = VL,
    .grid = {{4, 6, block_4_6}, {2, 8, block_2_8}, {1, 8, block_1_8}},
    .rlen = {{14, 12, 8, 7}, {14, 12, 8, 7}},
    .rows = {{rblock_14_1, rblock_12_1, rblock_8_1, rblock_7_1},
             {rblock_14_2, rblock_12_2, rblock_8_2, rblock_7_2}},
    .rows_put = rows_put,
    .rows_gain = -0.01,
    .rows_c = 1,
    .min_keep = 0.7,
    /* F(4x4)'s GEMMs on blocks of 48 tiles, not the grid kernel's 96: its
     * transformed tiles and products of a block, 2 x 36 planes of 64 channels x
     * the block, are 884 KB where 96 made 1.77 MB, past a Zen 5 core's 1 MB L2
     * (bench-conv [8,64,56,56]: 5.4-5.9 ms against 6.1-6.6; P6 compiled
     * 5.6-6.2 against 7.0-8.3; docs/perf.md). F(2x2) keeps 96 (16 planes:
     * 786 KB; at 14x14 blocks of 48 ran 11.7 ms against 9.6) */
    .wgrid = {4, 3, block_4_3},
    .wino_in = wino_in,
    .wino_out = wino_out,
    .wino4_in = wino4_in,
    .wino4_out = wino4_out,
    .strided_gemm = false,
    .wino_c = {16, 64},
    .wino_keep = {0.675, 0.45},
    .wino4_c = 16,
    .wino4_gain = 0.8,
};
