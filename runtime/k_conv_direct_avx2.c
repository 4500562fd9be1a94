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
 * F(4x4, 3x3), 8 tiles per vector (conv_wino_kernels.h, with this width's
 * shuffles and stores below; their GEMMs are the grid kernel's).
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

/* ---- Winograd's width-specific helpers (conv_wino_kernels.h) ------------------------------ */

#define CK_STORE _mm256_store_ps
#define CK_ADD _mm256_add_ps
#define CK_SUB _mm256_sub_ps
#define CK_FNMADD _mm256_fnmadd_ps

/* d[i] = r[i] for i < n <= 4*VL, without a call (Zen 3's masked stores
 * are slow: vmaskmovps took a quarter of the output transform). */
CK_TARGET static inline void ck_put_row(float *d, const float *r, int64_t n)
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
CK_TARGET static inline void ck_store_bf16(uint16_t *d, __m256 lo, __m256 hi)
{
    __m256i p = _mm256_packus_epi32(bf16_lanes(lo), bf16_lanes(hi));   /* lanes: lo0 hi0 lo1 hi1 */
    _mm256_storeu_si256((__m256i *)d, _mm256_permute4x64_epi64(p, 0xd8));
}

/* 16 f32 (lo, then hi) rounded to f16 at d (vcvtps2ph, nearest even: the
 * bits of rt_conv_narrow); only where g->f16c says the CPU has F16C. */
__attribute__((target("avx2,fma,f16c"))) static void ck_store_f16(uint16_t *d, __m256 lo, __m256 hi)
{
    _mm_storeu_si128((__m128i *)d, _mm256_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT));
    _mm_storeu_si128((__m128i *)(d + 8), _mm256_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT));
}

/* Two columns of 8 tiles interleaved: r[0] tiles 0-3, r[1] tiles 4-7. */
CK_TARGET static inline void ck_zip2(__m256 c0, __m256 c1, __m256 *r)
{
    __m256 lo = _mm256_unpacklo_ps(c0, c1), hi = _mm256_unpackhi_ps(c0, c1);
    r[0] = _mm256_permute2f128_ps(lo, hi, 0x20);
    r[1] = _mm256_permute2f128_ps(lo, hi, 0x31);
}

/* Four columns of 8 tiles: r[k] tiles 2k and 2k + 1. */
CK_TARGET static inline void ck_zip4(const __m256 *y, __m256 *r)
{
    __m256 l0 = _mm256_unpacklo_ps(y[0], y[1]), h0 = _mm256_unpackhi_ps(y[0], y[1]);
    __m256 l1 = _mm256_unpacklo_ps(y[2], y[3]), h1 = _mm256_unpackhi_ps(y[2], y[3]);
    __m256 u0 = _mm256_shuffle_ps(l0, l1, 0x44), u1 = _mm256_shuffle_ps(l0, l1, 0xee);
    __m256 u2 = _mm256_shuffle_ps(h0, h1, 0x44), u3 = _mm256_shuffle_ps(h0, h1, 0xee);
    r[0] = _mm256_permute2f128_ps(u0, u1, 0x20);
    r[1] = _mm256_permute2f128_ps(u2, u3, 0x20);
    r[2] = _mm256_permute2f128_ps(u0, u1, 0x31);
    r[3] = _mm256_permute2f128_ps(u2, u3, 0x31);
}

#include "conv_wino_kernels.h"

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
    .rows_c = 8,
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
