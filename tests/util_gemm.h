/* util_gemm.h - helpers of the GEMM kernel suites (test_gemm.c,
 * test_gemm_raw.c, test_gemm_f16.c): a fixed pseudo-random fill, the
 * shapes every variant runs, a check against double sums and the variants
 * to run.
 */
#ifndef TJ_TEST_UTIL_GEMM_H
#define TJ_TEST_UTIL_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "../runtime/gemm.h"

typedef struct tu_dims { int64_t m, n, k; } tu_dims;

/* Sizes around MR (12), NR (32), the AVX2 sub-tiles (6 x 16), MC (96),
 * and the k-blocks (256 groups); k = 1, odd k (half a bf16 pair, part of
 * an int8 quad); last slivers of every row count 1-5 past whole 6-row
 * sub-tiles (m % 12: 1, 2, 3, 4, 5, 10) on full panels. */
extern const tu_dims tu_gemm_shapes[];
extern const size_t tu_gemm_nshapes;

/* The next value of the sequence at *s, in [-0.5, 0.5). */
float tu_frand(unsigned *s);
/* x[0..n) from the sequence started at seed. */
void tu_fill(float *x, int64_t n, unsigned seed);
/* Fails the test (naming what and the element) where |got - want| exceeds
 * tol (1 + |want|). */
void tu_gemm_check_close(const float *got, const double *want, int64_t n, double tol,
                         const char *what);
/* The variants up to top this CPU has, in out (count returned); the others
 * printed as skipped ("#summary skipped variant NAME<what>: ..."). */
int tu_gemm_variants(tjg_isa *out, tjg_isa top, const char *what);
/* fn(isa, ctx) under each of those variants (tjg_isa_force), on 1 and then
 * 2 threads; the thread count and the variant restored after. */
void tu_gemm_each(tjg_isa top, const char *what, void (*fn)(tjg_isa isa, void *ctx), void *ctx);

#endif
