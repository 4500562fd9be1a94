/* blas.h - the bridge to OpenBLAS, loaded at run time (runtime/blas.c).
 *
 * OpenBLAS is dlopen()ed on first use so that, on a CPU with AVX-512 and no
 * OPENBLAS_CORETYPE set by the user, it can be told to use its AVX-512
 * ("SkylakeX") kernels before it initializes (Debian's build otherwise picks
 * its AVX2 "Haswell" kernels on CPUs it does not know).
 */
#ifndef TJ_RT_BLAS_H
#define TJ_RT_BLAS_H

#include <stdbool.h>
#include <stdint.h>

/* Row-major C = alpha * op(A) @ op(B) + beta * C; lda/ldb/ldc in elements.
 * Return 0, or -1 with an error recorded when OpenBLAS cannot be loaded. */
int rt_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc);
int rt_dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
             const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
             double *c, int64_t ldc);

/* How a rows x cols matrix with strides rs, cs (elements) is passed to BLAS:
 * as is (trans false) or transposed, with leading dimension ld; false when
 * neither (it must be packed first). */
bool rt_blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans, int64_t *ld);

/* linalg via LAPACK (issue 11): the address of one of OpenBLAS's symbols (a
 * LAPACK routine such as "dgetrf_"), loading it if needed; NULL with an error
 * recorded when it cannot be loaded or lacks the symbol. */
void *rt_blas_sym(const char *name);

/* Keeps OpenBLAS's thread count equal to the runtime pool's (pool.c calls it). */
void rt_blas_set_threads(int n);

/* For kernels that call GEMM from inside rt_parallel_for chunks: OpenBLAS
 * runs single-threaded between begin and end (when the pool has more than one
 * thread), so the pool's threads and OpenBLAS's do not oversubscribe the
 * cores. Process-wide; calls nest. */
void rt_blas_serial_begin(void);
void rt_blas_serial_end(void);

/* "SkylakeX" etc.: the core OpenBLAS runs with (loading it if needed), or NULL
 * with an error recorded when it cannot be loaded. */
const char *rt_blas_core(void);

/* Whether OpenBLAS runs kernels narrower than the CPU's vectors: a CPU with
 * AVX-512 (avx512f/bw/vl/dq) and a core other than OpenBLAS's AVX-512 ones
 * (SkylakeX, Cooperlake, SapphireRapids): OPENBLAS_CORETYPE set by the user
 * to an AVX2 core, or a build that does not know the CPU. Loads OpenBLAS;
 * false when it cannot (the error is left to the call that needs it).
 * TJIT_BLAS_NARROW=0/1 overrides (tests, measurements). */
bool rt_blas_narrow(void);

#endif
