/* gemm_avx2.c - the AVX2 + FMA micro-kernels of runtime/gemm.c (the avx2
 * variant, and int8 on AVX-512 CPUs without VNNI). 16 ymm registers cannot
 * hold a TJG_MR x 32 tile of C, so a tile is done as four 6 x 16 sub-tiles
 * (the Haswell register block: 12 accumulators, two ymm of the B panel, one
 * broadcast row of A), each over all kg groups of k.
 *
 *   f32   vfmadd231ps, one k per group
 *   bf16  a (k, k+1) pair is two f32 halves (shift, mask), A's before the
 *         kernel (split_a), B's once per k-block of a panel (widen_b, into
 *         an L1/L2 scratch that every sliver of the block reads); then the
 *         f32 kernels over twice the groups. Widening B as it was loaded,
 *         in every micro-kernel call, put 5 integer uops beside 24 FMAs per
 *         pair and left bf16 10-20% behind f32 on Zen 3 (docs/perf.md).
 *   f16   the same structure with F16C (a cpuid bit of its own: these
 *         functions run only where tjg_f16c()): pairs separated by a byte
 *         shuffle, then vcvtph2ps (exact), for A in split_a and for B once
 *         per k-block (widen_b); the f32 kernels; C rounded by vcvtps2ph
 *         (nearest even) in gemm.c's epilogue (tjg_f32_to_f16_f16c).
 *   int8  a u8 x s8 quad is two halves of s16 pairs (bytes 0, 2 and 1, 3;
 *         B sign-extended as loaded, A zero-extended by split_a); vpmaddwd
 *         and vpaddd. Exact: vpmaddubsw is not used, its s16 sums saturate
 *         (255 * 127 * 2 > 32767).
 *
 * A is split once per packed block (gemm.c calls split_a), not in every
 * micro-kernel call: the split in the kernel cost bf16 and int8 a tenth of
 * their rate. One sub-tile routine serves the three types (KIND is a
 * constant where it is inlined). Each function carries its own target
 * attribute, like gemm_x86.c: gemm.c calls these only when
 * tjg_isa_current() says so.
 */
#include <string.h>

#include "gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline

enum { K_F32, K_BF16, K_S8, ROWS = 6, B_AHEAD = 8 };

/* Half h of each group in v: bf16 as f32 (element k, then k + 1); int8 as
 * s16 pairs (bytes 0 and 2, then 1 and 3), B's sign-extended. */
AVX2_INLINE __m256 half_b(int kind, __m256i v, int h)
{
    if (kind == K_BF16)
        return _mm256_castsi256_ps(h ? _mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u))
                                     : _mm256_slli_epi32(v, 16));
    return _mm256_castsi256_ps(h ? _mm256_srai_epi16(v, 8)
                                 : _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8));
}

/* The same for A, whose int8 bytes are unsigned (zero-extended). */
AVX2_INLINE __m128i half_a(int kind, __m128i v, int h)
{
    if (kind == K_BF16)
        return h ? _mm_and_si128(v, _mm_set1_epi32((int)0xffff0000u)) : _mm_slli_epi32(v, 16);
    return h ? _mm_srli_epi16(v, 8) : _mm_and_si128(v, _mm_set1_epi32(0x00ff00ff));
}

/* acc + a * b: an f32 FMA, or the s16 pairs' products summed into s32
 * (accumulators are __m256 for every type: mixing vector types in the
 * accumulator array made gcc spill them). */
AVX2_INLINE __m256 madd(int kind, __m256 a, __m256 b, __m256 acc)
{
    if (kind != K_S8)
        return _mm256_fmadd_ps(a, b, acc);
    __m256i p = _mm256_madd_epi16(_mm256_castps_si256(a), _mm256_castps_si256(b));
    acc = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(acc), p));
    /* keeps gcc from reassociating the s32 sums across rows (spills) */
    __asm__("" : "+x"(acc));
    return acc;
}

/* C[rows, 16] (+)= A[rows, kg groups] @ B[kg groups, 16], rows <= ROWS (a
 * constant where it is inlined): a at the sub-tile's first row in the
 * sliver (MR words per group, or 2 MR split), b at its first column in the
 * panel (NR words per group). */
AVX2_INLINE void sub_tile(int kind, int rows, int64_t kg, const float *a, const int32_t *b,
                          int32_t *c, int64_t ldc, bool accum, bool pf)
{
    __m256 acc[ROWS][2];
    _Pragma("GCC unroll 6") for (int r = 0; r < rows; r++) acc[r][0] = acc[r][1] =
        _mm256_setzero_ps();
    const int halves = kind == K_F32 ? 1 : 2;
    for (int64_t p = 0; p < kg; p++, b += TJG_NR) {
        /* both cache lines of a group, B_AHEAD groups ahead: a panel's
         * first sliver reads it from memory (+10% on 96x2048x1024) */
        if (pf) {
            _mm_prefetch((const char *)(b + B_AHEAD * TJG_NR), _MM_HINT_T0);
            _mm_prefetch((const char *)(b + B_AHEAD * TJG_NR + 16), _MM_HINT_T0);
        }
        _Pragma("GCC unroll 2") for (int h = 0; h < halves; h++)
        {
            __m256i v0 = _mm256_loadu_si256((const __m256i *)b);
            __m256i v1 = _mm256_loadu_si256((const __m256i *)(b + 8));
            __m256 b0 = kind == K_F32 ? _mm256_castsi256_ps(v0) : half_b(kind, v0, h);
            __m256 b1 = kind == K_F32 ? _mm256_castsi256_ps(v1) : half_b(kind, v1, h);
            _Pragma("GCC unroll 6") for (int r = 0; r < rows; r++)
            {
                __m256 av = _mm256_broadcast_ss(a + r);
                acc[r][0] = madd(kind, av, b0, acc[r][0]);
                acc[r][1] = madd(kind, av, b1, acc[r][1]);
            }
            a += TJG_MR;
        }
    }
    _Pragma("GCC unroll 6") for (int r = 0; r < rows; r++)
    {
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
        {
            float *at = (float *)(c + r * ldc + 8 * h);
            __m256 s = acc[r][h];
            if (accum && kind == K_S8)
                s = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(s),
                                                         _mm256_loadu_si256((__m256i *)at)));
            else if (accum)
                s = _mm256_add_ps(s, _mm256_loadu_ps(at));
            _mm256_storeu_ps(at, s);
        }
    }
}

/* The TJG_MR x TJG_NR tile: each 16-column half of the panel (one cache
 * line per group), its sub-tiles down the sliver while it is in L1. */
AVX2_INLINE void tile(int kind, int64_t kg, const void *a, const void *b, void *c, int64_t ldc,
                      bool accum)
{
    for (int h = 0; h < TJG_NR; h += 16)
        for (int r0 = 0; r0 < TJG_MR; r0 += ROWS)
            sub_tile(kind, ROWS, kg, (const float *)a + r0, (const int32_t *)b + h,
                     (int32_t *)c + r0 * ldc + h, ldc, accum, true);
}

AVX2 static void uk_f32(int64_t kg, const void *a, const void *b, void *c, int64_t ldc, bool acc)
{
    tile(K_F32, kg, a, b, c, ldc, acc);
}

/* f32, half a panel: C[rows, 16] (+)= A-sliver @ the 16 columns at b (NR
 * words apart per group), rows <= MR: gemm.c runs it over every sliver of a
 * block per half panel, so the KC x 16 half (16 KB) stays in L1 across the
 * slivers. A last sliver of fewer rows runs a sub-tile of its rest (1-5
 * rows, each count its own inlined copy): P4's 256 rows had 12 computed
 * for the last 4, through the tile kernel and a copy of the tile. */
AVX2 static void uk_f32_half(int64_t kg, const void *a, const void *b, float *c, int64_t ldc,
                             bool acc, int rows)
{
    /* C's rows are read (acc) or written after the k loop: fetched now, so
     * their misses (C of a wide block is out of L2) overlap the loop */
    for (int r = 0; r < rows; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + 15), _MM_HINT_T0);
    }
    /* a rest of 7 or 8 rows as 4 + 3 or 4 + 4: a 1- or 2-row sub-tile has
     * 2 or 4 FMA chains, a fraction of the FMA ports' rate (a 128-row
     * block, 10 slivers and 8 rows, ran 91 GFLOP/s against 93-94 at 120,
     * 126, 132 or 256 rows on one Zen 3 core: docs/perf.md, Strassen's
     * half-size products). Each element's sum is the same either way. */
    for (int r0 = 0, step; r0 < rows; r0 += step) {
        const float *ar = (const float *)a + r0;
        int32_t *cr = (int32_t *)c + r0 * ldc;
        int left = rows - r0;
        step = left == 7 || left == 8 ? 4 : left < ROWS ? left : ROWS;
        switch (step) {
        case 6: sub_tile(K_F32, 6, kg, ar, b, cr, ldc, acc, false); break;
        case 5: sub_tile(K_F32, 5, kg, ar, b, cr, ldc, acc, false); break;
        case 4: sub_tile(K_F32, 4, kg, ar, b, cr, ldc, acc, false); break;
        case 3: sub_tile(K_F32, 3, kg, ar, b, cr, ldc, acc, false); break;
        case 2: sub_tile(K_F32, 2, kg, ar, b, cr, ldc, acc, false); break;
        default: sub_tile(K_F32, 1, kg, ar, b, cr, ldc, acc, false); break;
        }
    }
}

tjg_half_kernel tjg_f32_half_avx2(void) { return uk_f32_half; }

/* kg groups of a bf16 panel (NR words of (k, k+1) pairs each) into 2 kg rows
 * of NR f32: row 2p + h holds half h of group p's pairs (the f32 panel). */
AVX2 static void widen_bf16(int64_t kg, const uint32_t *b, float *out)
{
    for (int64_t p = 0; p < kg; p++, b += TJG_NR, out += 2 * TJG_NR)
        _Pragma("GCC unroll 4") for (int j = 0; j < TJG_NR; j += 8)
        {
            __m256i v = _mm256_loadu_si256((const __m256i *)(b + j));
            _mm256_storeu_ps(out + j, half_b(K_BF16, v, 0));
            _mm256_storeu_ps(out + TJG_NR + j, half_b(K_BF16, v, 1));
        }
}

AVX2 static void uk_s8(int64_t kg, const void *a, const void *b, void *c, int64_t ldc, bool acc)
{
    tile(K_S8, kg, a, b, c, ldc, acc);
}

/* n groups of MR words (a packed A block) into 2n: each group's halves. */
AVX2_INLINE void split(int kind, int64_t n, const uint32_t *a, uint32_t *out)
{
    for (int64_t q = 0; q < n; q++, a += TJG_MR, out += 2 * TJG_MR)
        _Pragma("GCC unroll 3") for (int r = 0; r < TJG_MR; r += 4)
        {
            __m128i v = _mm_loadu_si128((const __m128i *)(a + r));
            _mm_storeu_si128((__m128i *)(out + r), half_a(kind, v, 0));
            _mm_storeu_si128((__m128i *)(out + TJG_MR + r), half_a(kind, v, 1));
        }
}

AVX2 static void split_bf16(int64_t n, const uint32_t *a, uint32_t *out)
{
    split(K_BF16, n, a, out);
}

AVX2 static void split_s8(int64_t n, const uint32_t *a, uint32_t *out)
{
    split(K_S8, n, a, out);
}

/* 8 x 8 32-bit units: out[c * ldo + r] = in[r][c]. */
AVX2_INLINE void t8x8(const __m256 in[8], uint32_t *out, int64_t ldo)
{
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(in[i], in[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(in[i], in[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps((float *)(out + i * ldo), _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps((float *)(out + (i + 4) * ldo),
                         _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
}

AVX2 void tjg_transpose8_avx2(const void *in, int64_t ldi, int64_t nq, uint32_t *out,
                              int64_t ldo)
{
    const char *src = in;
    int64_t q = 0;
    for (; q + 8 <= nq; q += 8) {
        __m256 v[8];
        for (int r = 0; r < 8; r++)
            v[r] = _mm256_loadu_ps((const float *)(src + r * ldi + 4 * q));
        t8x8(v, out + q * ldo, ldo);
    }
    for (; q < nq; q++)
        for (int r = 0; r < 8; r++)
            memcpy(&out[q * ldo + r], src + r * ldi + 4 * q, 4);
}

#define F16C __attribute__((target("avx2,fma,f16c")))

/* Bytes of four (lo, hi) f16 pairs (a 128-bit lane) reordered as the four
 * lo halves, then the four hi halves. */
F16C static inline __m256i f16_unpair(__m256i v)
{
    const __m256i sh = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                        0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    return _mm256_shuffle_epi8(v, sh);
}

/* kg groups of an f16 panel (NR words of (k, k+1) pairs) into 2 kg rows of
 * NR f32, as widen_bf16. */
F16C static void widen_f16(int64_t kg, const uint32_t *b, float *out)
{
    for (int64_t p = 0; p < kg; p++, b += TJG_NR, out += 2 * TJG_NR)
        _Pragma("GCC unroll 4") for (int j = 0; j < TJG_NR; j += 8)
        {
            /* lanes [lo 0-3, hi 0-3 | lo 4-7, hi 4-7] -> [lo 0-7 | hi 0-7] */
            __m256i v = _mm256_permute4x64_epi64(
                f16_unpair(_mm256_loadu_si256((const __m256i *)(b + j))), 0xd8);
            _mm256_storeu_ps(out + j, _mm256_cvtph_ps(_mm256_castsi256_si128(v)));
            _mm256_storeu_ps(out + TJG_NR + j, _mm256_cvtph_ps(_mm256_extracti128_si256(v, 1)));
        }
}

/* n groups of MR words of f16 pairs (a packed A block) into 2n rows of MR
 * f32: each group's lo halves, then its hi halves (split_a). */
F16C static void split_f16(int64_t n, const uint32_t *a, uint32_t *out)
{
    const __m128i sh = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    for (int64_t q = 0; q < n; q++, a += TJG_MR, out += 2 * TJG_MR)
        _Pragma("GCC unroll 3") for (int r = 0; r < TJG_MR; r += 4)
        {
            __m256 f = _mm256_cvtph_ps(
                _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(a + r)), sh));
            _mm_storeu_ps((float *)(out + r), _mm256_castps256_ps128(f));
            _mm_storeu_ps((float *)(out + TJG_MR + r), _mm256_extractf128_ps(f, 1));
        }
}

F16C void tjg_f32_to_f16_f16c(const float *s, uint16_t *d, int64_t n)
{
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm_storeu_si128((__m128i *)(d + j),
                         _mm256_cvtps_ph(_mm256_loadu_ps(s + j), _MM_FROUND_TO_NEAREST_INT));
    if (j < n) {   /* the tail through a buffer: no read or write past n */
        float t[8] = {0};
        uint16_t h[8];
        memcpy(t, s + j, (size_t)(n - j) * 4);
        _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(_mm256_loadu_ps(t),
                                                       _MM_FROUND_TO_NEAREST_INT));
        memcpy(d + j, h, (size_t)(n - j) * 2);
    }
}

F16C int64_t tjg_f16_to_f32_f16c(const uint16_t *s, int64_t st, float *d, int64_t n)
{
    int64_t q = 0;
    if (st == 1) {
        for (; q + 8 <= n; q += 8)
            _mm256_storeu_ps(d + q, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + q))));
        return q;
    }
    /* stride 2: the even halves of 16 (bytes 0-1, 4-5, ... of each lane) */
    const __m256i ev = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                        0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    for (; q + 8 < n; q += 8) {   /* reads s[2q .. 2q + 15] <= s[2 (n - 1)] */
        __m256i v = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(s + 2 * q)), ev);
        v = _mm256_permute4x64_epi64(v, 0x08);   /* qwords 0, 2 */
        _mm256_storeu_ps(d + q, _mm256_cvtph_ps(_mm256_castsi256_si128(v)));
    }
    return q;
}

tjg_kernel tjg_kernel_f16c(void) { return (tjg_kernel){uk_f32, split_f16, widen_f16}; }

tjg_kernel tjg_kernel_avx2(tjg_type t)
{
    switch (t) {
    case TJG_F32: return (tjg_kernel){uk_f32, NULL, NULL};
    case TJG_BF16: return (tjg_kernel){uk_f32, split_bf16, widen_bf16};
    case TJG_S8: return (tjg_kernel){uk_s8, split_s8, NULL};
    case TJG_F16: return tjg_f16c() ? tjg_kernel_f16c() : (tjg_kernel){NULL, NULL, NULL};
    }
    return (tjg_kernel){NULL, NULL, NULL};
}

#else
tjg_kernel tjg_kernel_f16c(void) { return (tjg_kernel){NULL, NULL, NULL}; }

void tjg_f32_to_f16_f16c(const float *s, uint16_t *d, int64_t n)
{
    (void)s, (void)d, (void)n;
}

int64_t tjg_f16_to_f32_f16c(const uint16_t *s, int64_t st, float *d, int64_t n)
{
    (void)s, (void)st, (void)d, (void)n;
    return 0;
}

tjg_half_kernel tjg_f32_half_avx2(void) { return NULL; }

tjg_kernel tjg_kernel_avx2(tjg_type t)
{
    (void)t;
    return (tjg_kernel){NULL, NULL, NULL};
}

void tjg_transpose8_avx2(const void *in, int64_t ldi, int64_t nq, uint32_t *out, int64_t ldo)
{
    (void)in, (void)ldi, (void)nq, (void)out, (void)ldo;
}
#endif
