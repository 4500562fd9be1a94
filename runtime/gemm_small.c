/* gemm_small.c - f32 GEMMs too small to pay for packing or for waking
 * threads (the rule: tjg_small), on the calling thread.
 *
 *   tjg_small           whether m*n*k is at most TJIT_GEMM_SMALL multiply-adds
 *                       (default 3 x 2^18); tjg_gemm (gemm.c) and k_matmul.c's
 *                       OpenBLAS calls then run on the calling thread
 *   tjg_gemm_f32_small  C[m,n] (+)= A[m,k] @ B[k,n] with B's rows contiguous,
 *                       read in place: tiles of up to 6 rows x 16 columns, each
 *                       element of A broadcast from where it is (any strides:
 *                       a transposed A as dW = dY^T X reads it), one sum per
 *                       element of C over k in order; AVX2 + FMA, or portable C
 *   tjg_gemm_f32_small_dot  the same with A's rows and B's columns contiguous
 *                       in k (x @ w^T of a linear: P7's logits, n = 10): tiles
 *                       of 2 rows x 4 columns, eight partial sums each
 *
 * Why (docs/perf.md, "Small GEMMs"): a training step's GEMMs with a 10-class
 * side (P7: dh = dlogits @ W, k = 10; dW = dlogits^T h, m = 10) are 0.65M
 * multiply-adds, about 25 us on one Zen 3 core; split over two threads they
 * waited for the other thread (the pool's or OpenBLAS's) longer than that,
 * and packing B (tjit's GEMM) or OpenBLAS's m = 10 kernels ran them at
 * 40-50 GFLOP/s where the direct tiles run (see docs/perf.md).
 */
#include <stdlib.h>
#include <string.h>

#include <immintrin.h>

#include "gemm.h"

/* Multiply-adds at or under which a GEMM runs on the calling thread: 3 x
 * 2^18 (786432). On Zen 3 (gemm_bench, best of reps, warm, docs/perf.md)
 * 128x512x10 ran at 69 GFLOP/s on these tiles against 51 for tjit's GEMM
 * on two threads, but 128x512x16 (2^20) at 71 against 102. */
#define SMALL_MNK ((int64_t)3 << 18)

bool tjg_small(int64_t m, int64_t n, int64_t k)
{
    int64_t lim = SMALL_MNK;
    const char *v = getenv("TJIT_GEMM_SMALL");   /* read per call: measurable per call */
    if (v && *v) {
        char *end;
        long long x = strtoll(v, &end, 10);
        if (*end == '\0' && x >= 0)
            lim = x;
    }
    k = k > 1 ? k : 1;
    return n <= lim / k && m <= lim / k / (n > 1 ? n : 1);
}

/* ---- portable ------------------------------------------------------------------------ */

/* Both layouts: A's (i, kk) at a[i*ars + kk*acs], B's (kk, j) at
 * b[kk*brs + j*bcs]; one sum per element over k in order. */
static void small_generic(int64_t m, int64_t n, int64_t k, const float *a, int64_t ars,
                          int64_t acs, const float *b, int64_t brs, int64_t bcs, float *c,
                          int64_t ldc, bool acc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float s = 0;
            for (int64_t kk = 0; kk < k; kk++)
                s = __builtin_fmaf(a[i * ars + kk * acs], b[kk * brs + j * bcs], s);
            c[i * ldc + j] = acc ? c[i * ldc + j] + s : s;
        }
}

/* ---- AVX2 + FMA ---------------------------------------------------------------------- */

#define SMALL_MR 6

/* Rows i..i+R (R a constant where inlined) of columns j..j+16, the last
 * `cols` of them masked when tail (lo, hi: the masks of the two halves). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
tile_avx2(int R, bool tail, __m256i lo, __m256i hi, int64_t k, const float *a, int64_t rs,
          int64_t cs, const float *b, int64_t ldb, float *c, int64_t ldc, bool acc)
{
    __m256 s[SMALL_MR][2];
    for (int r = 0; r < R; r++)
        s[r][0] = s[r][1] = _mm256_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++) {
        const float *bk = b + kk * ldb;
        /* the row's next column blocks: B from memory is read along its
         * rows (a column block alone is one line per row, 2 KB apart at
         * n = 512, which the hardware prefetchers do not follow) */
        _mm_prefetch((const char *)(bk + 48), _MM_HINT_T0);
        __m256 b0 = tail ? _mm256_maskload_ps(bk, lo) : _mm256_loadu_ps(bk);
        __m256 b1 = tail ? _mm256_maskload_ps(bk + 8, hi) : _mm256_loadu_ps(bk + 8);
        for (int r = 0; r < R; r++) {
            __m256 av = _mm256_broadcast_ss(a + r * rs + kk * cs);
            s[r][0] = _mm256_fmadd_ps(av, b0, s[r][0]);
            s[r][1] = _mm256_fmadd_ps(av, b1, s[r][1]);
        }
    }
    for (int r = 0; r < R; r++) {
        float *cr = c + r * ldc;
        if (tail) {
            if (acc) {
                s[r][0] = _mm256_add_ps(_mm256_maskload_ps(cr, lo), s[r][0]);
                s[r][1] = _mm256_add_ps(_mm256_maskload_ps(cr + 8, hi), s[r][1]);
            }
            _mm256_maskstore_ps(cr, lo, s[r][0]);
            _mm256_maskstore_ps(cr + 8, hi, s[r][1]);
        } else {
            if (acc) {
                s[r][0] = _mm256_add_ps(_mm256_loadu_ps(cr), s[r][0]);
                s[r][1] = _mm256_add_ps(_mm256_loadu_ps(cr + 8), s[r][1]);
            }
            _mm256_storeu_ps(cr, s[r][0]);
            _mm256_storeu_ps(cr + 8, s[r][1]);
        }
    }
}

/* All row groups of one column block (tail: masked). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
column_avx2(bool tail, __m256i lo, __m256i hi, int64_t m, int64_t k, const float *a,
            int64_t rs, int64_t cs, const float *b, int64_t ldb, float *c, int64_t ldc,
            bool acc)
{
    for (int64_t i = 0; i < m; i += SMALL_MR) {
        const float *ai = a + i * rs;
        float *ci = c + i * ldc;
        switch (m - i < SMALL_MR ? m - i : SMALL_MR) {
        case 6: tile_avx2(6, tail, lo, hi, k, ai, rs, cs, b, ldb, ci, ldc, acc); break;
        case 5: tile_avx2(5, tail, lo, hi, k, ai, rs, cs, b, ldb, ci, ldc, acc); break;
        case 4: tile_avx2(4, tail, lo, hi, k, ai, rs, cs, b, ldb, ci, ldc, acc); break;
        case 3: tile_avx2(3, tail, lo, hi, k, ai, rs, cs, b, ldb, ci, ldc, acc); break;
        case 2: tile_avx2(2, tail, lo, hi, k, ai, rs, cs, b, ldb, ci, ldc, acc); break;
        default: tile_avx2(1, tail, lo, hi, k, ai, rs, cs, b, ldb, ci, ldc, acc); break;
        }
    }
}

/* Every column block of m rows. */
__attribute__((target("avx2,fma"))) static void
columns_avx2(int64_t m, int64_t n, int64_t k, const float *a, int64_t rs, int64_t cs,
             const float *b, int64_t ldb, float *c, int64_t ldc, bool acc)
{
    __m256i ones = _mm256_set1_epi32(-1);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        column_avx2(false, ones, ones, m, k, a, rs, cs, b + j, ldb, c + j, ldc, acc);
    if (j < n) {
        int rem = (int)(n - j);
        __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256i lo = _mm256_cmpgt_epi32(_mm256_set1_epi32(rem), idx);
        __m256i hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(rem - 8), idx);
        column_avx2(true, lo, hi, m, k, a, rs, cs, b + j, ldb, c + j, ldc, acc);
    }
}

/* B of at most this many elements (64 KB) is read again by every row group:
 * C is then written along its rows, 6 at a time, which the prefetchers
 * follow (k = 10: C is most of the traffic); a larger B goes column block
 * by column block, each block's k x 16 in L1 while every row group reads it. */
enum { SMALL_B_ROWS_OUTER = 16384 };

__attribute__((target("avx2,fma"))) static void
small_avx2(int64_t m, int64_t n, int64_t k, const float *a, int64_t rs, int64_t cs,
           const float *b, int64_t ldb, float *c, int64_t ldc, bool acc)
{
    if (k * n > SMALL_B_ROWS_OUTER) {
        columns_avx2(m, n, k, a, rs, cs, b, ldb, c, ldc, acc);
        return;
    }
    for (int64_t i = 0; i < m; i += SMALL_MR)
        columns_avx2(m - i < SMALL_MR ? m - i : SMALL_MR, n, k, a + i * rs, rs, cs, b, ldb,
                     c + i * ldc, ldc, acc);
}

/* ---- dot products: A's rows and B's columns contiguous in k --------------------------- */

__attribute__((target("avx2,fma"), always_inline)) static inline float hsum_avx2(__m256 v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

#define DOT_MR 2
#define DOT_NR 4

/* Rows i..i+R by columns j..j+C (constants where inlined): eight partial
 * sums per element over k (the last k % 8 masked), then added across. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
dot_tile_avx2(int R, int C, int64_t k, __m256i kmask, const float *a, int64_t lda,
              const float *b, int64_t ldb, float *c, int64_t ldc, bool acc)
{
    __m256 s[DOT_MR][DOT_NR];
    for (int r = 0; r < R; r++)
        for (int q = 0; q < C; q++)
            s[r][q] = _mm256_setzero_ps();
    int64_t kk = 0;
    for (; kk + 8 <= k; kk += 8) {
        __m256 av[DOT_MR];
        for (int r = 0; r < R; r++)
            av[r] = _mm256_loadu_ps(a + r * lda + kk);
        for (int q = 0; q < C; q++) {
            __m256 bv = _mm256_loadu_ps(b + q * ldb + kk);
            for (int r = 0; r < R; r++)
                s[r][q] = _mm256_fmadd_ps(av[r], bv, s[r][q]);
        }
    }
    if (kk < k) {
        __m256 av[DOT_MR];
        for (int r = 0; r < R; r++)
            av[r] = _mm256_maskload_ps(a + r * lda + kk, kmask);
        for (int q = 0; q < C; q++) {
            __m256 bv = _mm256_maskload_ps(b + q * ldb + kk, kmask);
            for (int r = 0; r < R; r++)
                s[r][q] = _mm256_fmadd_ps(av[r], bv, s[r][q]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int q = 0; q < C; q++) {
            float v = hsum_avx2(s[r][q]);
            c[r * ldc + q] = acc ? c[r * ldc + q] + v : v;
        }
}

#define DOT_CASE(R, C)                                                                         \
    case (R) * 8 + (C): dot_tile_avx2(R, C, k, kmask, ai, lda, bj, ldb, cij, ldc, acc); break;

__attribute__((target("avx2,fma"))) static void
dot_avx2(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
         int64_t ldb, float *c, int64_t ldc, bool acc)
{
    __m256i kmask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(k % 8)),
                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int64_t i = 0; i < m; i += DOT_MR) {
        int rows = m - i < DOT_MR ? (int)(m - i) : DOT_MR;
        const float *ai = a + i * lda;
        for (int64_t j = 0; j < n; j += DOT_NR) {
            int cols = n - j < DOT_NR ? (int)(n - j) : DOT_NR;
            const float *bj = b + j * ldb;
            float *cij = c + i * ldc + j;
            switch (rows * 8 + cols) {
            DOT_CASE(2, 4) DOT_CASE(2, 3) DOT_CASE(2, 2) DOT_CASE(2, 1)
            DOT_CASE(1, 4) DOT_CASE(1, 3) DOT_CASE(1, 2)
            default: dot_tile_avx2(1, 1, k, kmask, ai, lda, bj, ldb, cij, ldc, acc); break;
            }
        }
    }
}
#undef DOT_CASE

void tjg_gemm_f32_small_dot(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                            const float *b, int64_t ldb, float *c, int64_t ldc, bool acc)
{
    if (m <= 0 || n <= 0)
        return;
    if (tjg_isa_current() >= TJG_AVX2)
        dot_avx2(m, n, k, a, lda, b, ldb, c, ldc, acc);
    else
        small_generic(m, n, k, a, lda, 1, b, 1, ldb, c, ldc, acc);
}

void tjg_gemm_f32_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rs,
                        int64_t cs, const float *b, int64_t ldb, float *c, int64_t ldc,
                        bool acc)
{
    if (m <= 0 || n <= 0)
        return;
    if (tjg_isa_current() >= TJG_AVX2)
        small_avx2(m, n, k, a, rs, cs, b, ldb, c, ldc, acc);
    else
        small_generic(m, n, k, a, rs, cs, b, ldb, 1, c, ldc, acc);
}
