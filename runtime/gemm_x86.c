/* gemm_x86.c - the AVX-512 micro-kernels of runtime/gemm.c (and the choice
 * among them and gemm_avx2.c's by variant): a TJG_MR x 32 tile of C held in
 * 2*TJG_MR zmm accumulators, a row of A broadcast per step, two zmm of the
 * packed B panel loaded per step.
 *
 *   f32        vfmadd231ps, one k per step
 *   bf16       vdpbf16ps (avx512_bf16, on AMD: tjg_bf16_dot): a (k, k+1)
 *              pair per step, f32 sums; elsewhere the f32 kernel on A split
 *              and each k-block of a B panel widened to f32 once by
 *              gemm_avx2.c's functions, as f16 below: on two threads of an
 *              Intel Xeon without AMX 256x2048x1024 ran at 139-140 GFLOP/s
 *              on vdpbf16ps, 163-171 on the former in-kernel conversion (two
 *              FMAs per pair), 238-242 widened (docs/perf.md)
 *   int8       vpdpbusd (avx512_vnni): u8 x s8 quads into s32 sums (exact)
 *   f16        the f32 kernel on A and each k-block of a B panel widened to
 *              f32 once by gemm_avx2.c's F16C functions (split_a, widen_b),
 *              as AVX2's f16 is on its own f32 kernel: on two Zen 5 threads
 *              256x2048x1024 went from 180-187 GFLOP/s (AVX2's kernel) to
 *              342-344, f32's rate (docs/perf.md, "f16 GEMM on AVX-512")
 *
 * Each function carries its own target attribute: the library is built for
 * baseline x86-64, and gemm.c calls these only when tjg_isa_current() says
 * the CPU has the instructions.
 */
#include "gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define MR TJG_MR

/* Stores (or adds) the 2*MR accumulators into C. */
#define STORE_F32(acc)                                                                    \
    do {                                                                                  \
        float *cf = c;                                                                    \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)                             \
        {                                                                                 \
            float *row = cf + r * ldc;                                                    \
            if (accum) {                                                                  \
                acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_loadu_ps(row));               \
                acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_loadu_ps(row + 16));          \
            }                                                                             \
            _mm512_storeu_ps(row, acc[r][0]);                                             \
            _mm512_storeu_ps(row + 16, acc[r][1]);                                        \
        }                                                                                 \
    } while (0)

__attribute__((target("avx512f"))) static void uk_f32(int64_t kg, const void *a_,
                                                      const void *b_, void *c, int64_t ldc,
                                                      bool accum)
{
    const float *a = a_, *b = b_;
    __m512 acc[MR][2];
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] =
        _mm512_setzero_ps();
    for (int64_t p = 0; p < kg; p++) {
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)
        {
            __m512 av = _mm512_set1_ps(a[r]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
        a += MR;
        b += TJG_NR;
    }
    STORE_F32(acc);
}

__attribute__((target("avx512f,avx512bf16"))) static void uk_bf16(int64_t kg, const void *a_,
                                                                  const void *b_, void *c,
                                                                  int64_t ldc, bool accum)
{
    const int32_t *a = a_, *b = b_;
    __m512 acc[MR][2];
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] =
        _mm512_setzero_ps();
    for (int64_t p = 0; p < kg; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16);
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)
        {
            __m512bh av = (__m512bh)_mm512_set1_epi32(a[r]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
        }
        a += MR;
        b += TJG_NR;
    }
    STORE_F32(acc);
}

__attribute__((target("avx512f,avx512vnni"))) static void uk_s8(int64_t kg, const void *a_,
                                                                const void *b_, void *c_,
                                                                int64_t ldc, bool accum)
{
    const int32_t *a = a_, *b = b_;
    int32_t *c = c_;
    __m512i acc[MR][2];
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] =
        _mm512_setzero_si512();
    for (int64_t p = 0; p < kg; p++) {
        __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 16);
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)
        {
            __m512i av = _mm512_set1_epi32(a[r]);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
        }
        a += MR;
        b += TJG_NR;
    }
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++)
    {
        int32_t *row = c + r * ldc;
        if (accum) {
            acc[r][0] = _mm512_add_epi32(acc[r][0], _mm512_loadu_si512(row));
            acc[r][1] = _mm512_add_epi32(acc[r][1], _mm512_loadu_si512(row + 16));
        }
        _mm512_storeu_si512(row, acc[r][0]);
        _mm512_storeu_si512(row + 16, acc[r][1]);
    }
}

tjg_kernel tjg_kernel_x86(tjg_type t, tjg_isa isa)
{
    if (isa < TJG_AVX512)
        return isa == TJG_AVX2 ? tjg_kernel_avx2(t) : (tjg_kernel){NULL, NULL, NULL};
    switch (t) {
    case TJG_F32: return (tjg_kernel){uk_f32, NULL, NULL};
    case TJG_BF16: {   /* vdpbf16ps, or AVX2's split of A and widening of B, this f32 kernel */
        if (isa >= TJG_AVX512_BF16 && tjg_bf16_dot())
            return (tjg_kernel){uk_bf16, NULL, NULL};
        tjg_kernel k = tjg_kernel_avx2(TJG_BF16);
        k.uk = uk_f32;
        return k;
    }
    case TJG_F16: {   /* F16C's split of A and widening of B (gemm_avx2.c), this f32 kernel */
        tjg_kernel k = tjg_f16c() ? tjg_kernel_f16c() : (tjg_kernel){NULL, NULL, NULL};
        if (k.uk)
            k.uk = uk_f32;
        return k;
    }
    case TJG_S8:   /* without VNNI: the AVX2 kernel (AVX-512 CPUs have AVX2) */
        return isa >= TJG_AVX512_BF16 ? (tjg_kernel){uk_s8, NULL, NULL} : tjg_kernel_avx2(t);
    }
    return (tjg_kernel){NULL, NULL, NULL};
}

#else
tjg_kernel tjg_kernel_x86(tjg_type t, tjg_isa isa)
{
    (void)t;
    (void)isa;
    return (tjg_kernel){NULL, NULL, NULL};
}
#endif
