/* gemm_avx2_q8.c - the AVX2 int8 micro-kernel for 7-bit activations
 * (runtime/gemm.h): u8 A whose every byte is <= 127 times s8 B, the form of
 * quantize_dynamic's reduced-range rows (tjg_quantize_rows_u8 with qmax
 * 127, PyTorch's reduce_range) on CPUs without VNNI.
 *
 *   vpmaddubsw  a u8 x s8 quad's two pairs, each summed to s16: 32 products
 *               per instruction. A pair's sum saturates above 32767; with
 *               a <= 127 it is within 2 * 127 * 128 = 32512, so exact
 *   vpmaddwd    with ones: the two s16 pair sums of a column into s32
 *   vpaddd      into the s32 accumulators
 *
 * It reads the packed layouts as they are (B's quads, A's quads MR per
 * group, no split_a: the quad is what vpmaddubsw multiplies), as a TJG_MR x
 * TJG_NR tile in four 6 x 16 sub-tiles (12 accumulators, the ones, a
 * broadcast quad of A and one product: 15 registers; B is vpmaddubsw's
 * memory operand). gemm.c picks it only for
 * an A it has checked to be 7-bit (tjg_u8_is_7bit); any byte above 127 takes
 * gemm_avx2.c's exact vpmaddwd kernel instead (the static int8 ops' full-
 * range u8). On Zen 3 both instructions issue on the same two multiply
 * pipes, so the gain over the vpmaddwd kernel is in what it no longer does
 * (widening B, splitting A, half the adds), docs/perf.md.
 *
 * Also here: the 7-bit check of A (tjg_u8_is_7bit) and the AVX2 min/max and
 * rounding of the row quantizer (tjg_minmax_avx2, tjg_quantize_avx2).
 */
#include "gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2_Q8 __attribute__((target("avx2")))

enum { ROWS = 6, B_AHEAD = 8 };

/* One row of a sub-tile over one quad: acc0/acc1 (columns 0-7, 8-15) +=
 * the broadcast quad *a times the 16 columns at b (read from L1 as
 * vpmaddubsw's memory operand: 12 accumulators, the ones, the broadcast
 * and one product are 15 registers; as intrinsics gcc kept B in two more
 * and spilled accumulators). */
#define Q8_ROW(acc0, acc1, a, b)                                                          \
    do {                                                                                  \
        __m256i av_, t_;                                                                  \
        __asm__("vpbroadcastd %[ar], %[av]\n\t"                                           \
                "vpmaddubsw %[b0], %[av], %[t]\n\t"                                       \
                "vpmaddubsw %[b1], %[av], %[av]\n\t"                                      \
                "vpmaddwd %[one], %[t], %[t]\n\t"                                         \
                "vpmaddwd %[one], %[av], %[av]\n\t"                                       \
                "vpaddd %[t], %[c0], %[c0]\n\t"                                           \
                "vpaddd %[av], %[c1], %[c1]"                                              \
                : [c0] "+x"(acc0), [c1] "+x"(acc1), [av] "=&x"(av_), [t] "=&x"(t_)        \
                : [ar] "m"(*(const int32_t *)(a)), [b0] "m"(*(const __m256i *)(b)),        \
                  [b1] "m"(*(const __m256i *)((b) + 8)), [one] "x"(ones));                \
    } while (0)

/* C[ROWS, 16] (+)= A[ROWS, kg quads] @ B[kg quads, 16] in s32: a at the
 * sub-tile's first row in the sliver (MR words per quad), b at its first
 * column in the panel (NR words per quad). */
__attribute__((target("avx2"), always_inline)) static inline void
sub_tile(int64_t kg, const int32_t *a, const int32_t *b, int32_t *c, int64_t ldc, bool accum)
{
    __m256i acc[ROWS][2];
    _Pragma("GCC unroll 6") for (int r = 0; r < ROWS; r++) acc[r][0] = acc[r][1] =
        _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t p = 0; p < kg; p++, a += TJG_MR, b += TJG_NR) {
        _mm_prefetch((const char *)(b + B_AHEAD * TJG_NR), _MM_HINT_T0);
        _Pragma("GCC unroll 6") for (int r = 0; r < ROWS; r++)
            Q8_ROW(acc[r][0], acc[r][1], a + r, b);
    }
    _Pragma("GCC unroll 6") for (int r = 0; r < ROWS; r++)
    {
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
        {
            __m256i *at = (__m256i *)(c + r * ldc + 8 * h);
            __m256i s = acc[r][h];
            if (accum)
                s = _mm256_add_epi32(s, _mm256_loadu_si256(at));
            _mm256_storeu_si256(at, s);
        }
    }
}

AVX2_Q8 static void uk_q8(int64_t kg, const void *a, const void *b, void *c, int64_t ldc,
                          bool accum)
{
    for (int h = 0; h < TJG_NR; h += 16)
        for (int r0 = 0; r0 < TJG_MR; r0 += ROWS)
            sub_tile(kg, (const int32_t *)a + r0, (const int32_t *)b + h,
                     (int32_t *)c + r0 * ldc + h, ldc, accum);
}

/* Whether every byte of the rows is <= 127: their OR's top bit, 32 bytes
 * at a time, row by row (a full-range A, the static int8 ops' usual one,
 * stops at its first row with a byte above 127). */
AVX2_Q8 static bool rows_7bit(int64_t m, int64_t k, const uint8_t *a, int64_t lda)
{
    for (int64_t i = 0; i < m; i++) {
        const uint8_t *row = a + i * lda;
        __m256i any = _mm256_setzero_si256();
        uint8_t tail = 0;
        int64_t j = 0;
        for (; j + 32 <= k; j += 32)
            any = _mm256_or_si256(any, _mm256_loadu_si256((const __m256i *)(row + j)));
        for (; j < k; j++)
            tail |= row[j];
        if (_mm256_movemask_epi8(any) || tail > 127)
            return false;
    }
    return true;
}

/* vminps(x, lo) is x < lo ? x : lo: a NaN x leaves lo, as the scalar loop. */
AVX2_Q8 static int64_t minmax(int64_t k, const float *x, float *lo, float *hi)
{
    __m256 l[4], h[4];
    for (int u = 0; u < 4; u++)
        l[u] = _mm256_set1_ps(*lo), h[u] = _mm256_set1_ps(*hi);
    int64_t j = 0;
    for (; j + 32 <= k; j += 32)
        for (int u = 0; u < 4; u++) {
            __m256 v = _mm256_loadu_ps(x + j + 8 * u);
            l[u] = _mm256_min_ps(v, l[u]);
            h[u] = _mm256_max_ps(v, h[u]);
        }
    float lv[8], hv[8];
    _mm256_storeu_ps(lv, _mm256_min_ps(_mm256_min_ps(l[0], l[1]), _mm256_min_ps(l[2], l[3])));
    _mm256_storeu_ps(hv, _mm256_max_ps(_mm256_max_ps(h[0], h[1]), _mm256_max_ps(h[2], h[3])));
    for (int u = 0; u < 8; u++) {
        *lo = lv[u] < *lo ? lv[u] : *lo;
        *hi = hv[u] > *hi ? hv[u] : *hi;
    }
    return j;
}

/* Half a panel (16 columns): C[rows, 16] (+)= A-sliver @ B's 16 columns at
 * b, rows <= MR, into s32 sums (a block's scratch, whole 6-row sub-tiles:
 * the rows past `rows` are the scratch's own). gemm.c runs it over every
 * sliver of a block per half panel (the half-panel order), so the KC x 16
 * half (256 quads: 16 KB) stays in L1 across the slivers, where uk_q8's
 * whole panel (32 KB with the sliver) was read from L2 by each. */
AVX2_Q8 static void uk_q8_half(int64_t kg, const void *a, const void *b, float *c, int64_t ldc,
                               bool acc, int rows)
{
    for (int r0 = 0; r0 < rows; r0 += ROWS)
        sub_tile(kg, (const int32_t *)a + r0, b, (int32_t *)c + r0 * ldc, ldc, acc);
}

/* q[j] = clamp(round(x[j] * inv) + z, 0, qmax) for the first multiple of 32
 * of k, the scalar loop's bits: vroundps to nearest even (nearbyintf in the
 * default mode, which gcc called through the PLT per element), a NaN
 * product to 0 before the zero point is added; the f32 results, whole
 * numbers in 0..qmax, packed to bytes in order. */
AVX2_Q8 static int64_t quantize(int64_t k, const float *x, uint8_t *q, float inv, int32_t z,
                                int qmax)
{
    const __m256 vi = _mm256_set1_ps(inv), vz = _mm256_set1_ps((float)z),
                 vq = _mm256_set1_ps((float)qmax), zero = _mm256_setzero_ps();
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int64_t j = 0;
    for (; j + 32 <= k; j += 32) {
        __m256i w[4];
        for (int u = 0; u < 4; u++) {
            __m256 t = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * u), vi),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            t = _mm256_andnot_ps(_mm256_cmp_ps(t, t, _CMP_UNORD_Q), t);
            t = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(t, vz), zero), vq);
            w[u] = _mm256_cvttps_epi32(t);
        }
        __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(w[0], w[1]),
                                        _mm256_packs_epi32(w[2], w[3]));
        _mm256_storeu_si256((__m256i *)(q + j), _mm256_permutevar8x32_epi32(b, order));
    }
    return j;
}

tjg_kernel tjg_kernel_avx2_q8(void) { return (tjg_kernel){uk_q8, NULL, NULL}; }

tjg_half_kernel tjg_q8_half_avx2(void) { return uk_q8_half; }

int64_t tjg_minmax_avx2(int64_t k, const float *x, float *lo, float *hi)
{
    return tjg_isa_current() >= TJG_AVX2 ? minmax(k, x, lo, hi) : 0;
}

int64_t tjg_quantize_avx2(int64_t k, const float *x, uint8_t *q, float inv, int32_t z, int qmax)
{
    return tjg_isa_current() >= TJG_AVX2 ? quantize(k, x, q, inv, z, qmax) : 0;
}

bool tjg_u8s8_reduce_range(tjg_isa isa) { return isa == TJG_AVX2 || isa == TJG_AVX512; }
#else
tjg_kernel tjg_kernel_avx2_q8(void) { return (tjg_kernel){NULL, NULL, NULL}; }

tjg_half_kernel tjg_q8_half_avx2(void) { return NULL; }

int64_t tjg_minmax_avx2(int64_t k, const float *x, float *lo, float *hi)
{
    (void)k, (void)x, (void)lo, (void)hi;
    return 0;
}

int64_t tjg_quantize_avx2(int64_t k, const float *x, uint8_t *q, float inv, int32_t z, int qmax)
{
    (void)k, (void)x, (void)q, (void)inv, (void)z, (void)qmax;
    return 0;
}

bool tjg_u8s8_reduce_range(tjg_isa isa)
{
    (void)isa;
    return false;
}
#endif

bool tjg_u8_is_7bit(int64_t m, int64_t k, const uint8_t *a, int64_t lda)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (tjg_isa_current() >= TJG_AVX2)
        return rows_7bit(m, k, a, lda);
#endif
    uint8_t any = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < k; j++)
            any |= a[i * lda + j];
    return any <= 127;
}
