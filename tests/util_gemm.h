/* util_gemm.h - helpers of the GEMM kernel suites (test_gemm.c,
 * test_gemm_f16.c): a fixed pseudo-random fill and the variants to run.
 */
#ifndef TJ_TEST_UTIL_GEMM_H
#define TJ_TEST_UTIL_GEMM_H

#include "../runtime/gemm.h"

/* The next value of the sequence at *s, in [-0.5, 0.5). */
float tu_frand(unsigned *s);
/* The variants up to top this CPU has, in out (count returned); the others
 * printed as skipped ("#summary skipped variant NAME<what>: ..."). */
int tu_gemm_variants(tjg_isa *out, tjg_isa top, const char *what);
/* fn(isa, ctx) under each of those variants (tjg_isa_force), on 1 and then
 * 2 threads; the thread count and the variant restored after. */
void tu_gemm_each(tjg_isa top, const char *what, void (*fn)(tjg_isa isa, void *ctx), void *ctx);

#endif
