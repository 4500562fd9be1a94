/* k_pool_avx512.c - max_pool2d's 2x2 stride-2 rows on AVX-512F (k_conv.c,
 * max_win_plane): 16 outputs a vector from two masked loads of each input
 * row, split into even and odd columns by vpermt2ps, so rows of 7 and 14
 * outputs (P12's pools) run as one masked vector where the plain loop ran
 * scalar. The same taps in the same order with the same NaN rule as the
 * scalar loop (MAX_OF: the later tap when it is greater or a NaN), so the
 * same bits, NaN payloads and signed zeros included. */
#include <immintrin.h>

#include "k_conv.h"

/* MAX_OF(x, v) of k_conv.c, lane by lane. */
__attribute__((target("avx512f"))) static inline __m512 max_of(__m512 x, __m512 v)
{
    __mmask16 k = _mm512_cmp_ps_mask(x, v, _CMP_GT_OQ) | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(k, v, x);
}

__attribute__((target("avx512f"))) void rt_max2_row_f32_avx512(const float *x0, const float *x1, float *y,
                                                               int64_t n)
{
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    for (int64_t q = 0; q < n; q += 16, x0 += 32, x1 += 32) {
        int64_t m = n - q < 16 ? n - q : 16;
        __mmask16 mo = (__mmask16)((1u << m) - 1);
        __mmask16 ma = (__mmask16)(m >= 8 ? 0xffffu : (1u << 2 * m) - 1);
        __mmask16 mb = (__mmask16)(m > 8 ? (1u << (2 * m - 16)) - 1 : 0);
        __m512 a0 = _mm512_maskz_loadu_ps(ma, x0), b0 = _mm512_maskz_loadu_ps(mb, x0 + 16);
        __m512 a1 = _mm512_maskz_loadu_ps(ma, x1), b1 = _mm512_maskz_loadu_ps(mb, x1 + 16);
        __m512 v = max_of(_mm512_permutex2var_ps(a0, od, b0), _mm512_permutex2var_ps(a0, ev, b0));
        v = max_of(_mm512_permutex2var_ps(a1, ev, b1), v);
        v = max_of(_mm512_permutex2var_ps(a1, od, b1), v);
        _mm512_mask_storeu_ps(y + q, mo, v);
    }
}
