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

#endif
