/* contract.h - internal to the runtime's contraction kernels (k_matmul.c,
 * k_conv.c): a GEMM over any dtype the contractions accept, on strided
 * matrices, and a strided copy that packs or broadcasts into a contiguous
 * buffer. Both live in k_matmul.c.
 */
#ifndef TJ_RT_CONTRACT_H
#define TJ_RT_CONTRACT_H

#include "rt.h"

/* A strided matrix view: element (i, j) is at p + (i * rs + j * cs) elements. */
typedef struct rt_mat {
    const void *p;
    int64_t rs, cs;
} rt_mat;

/* C[m,n] (rows ldc apart, unit column stride) = A[m,k] @ B[k,n] (+ C when
 * accumulate). f32/f64 go to OpenBLAS, passing transposed operands by flag
 * and packing only operands whose strides BLAS cannot express; i32, i64, u8
 * use a blocked kernel that wraps on overflow like PyTorch. Returns 0, or -1
 * with an error recorded (OpenBLAS missing, out of memory). */
int rt_gemm(tj_dtype dt, int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b, bool accumulate,
            void *c, int64_t ldc);

/* Whether an f32 matmul's GEMM of this shape whose B is not a kept weight
 * runs on tjit's own GEMM (B packed in the call) rather than OpenBLAS:
 * TJIT_OWN_F32=1/0 forces it, else a rule measured per shape (k_matmul.c,
 * docs/perf.md). sched/pair.c asks before cutting a GEMM for OpenBLAS. */
bool rt_gemm_own_f32(int64_t m, int64_t n, int64_t k);

/* Whether a matmul of m rows on b (a 2-D f32 right operand) runs on a form
 * of b kept across calls (packed for tjit's GEMM, or int8): b is a weight
 * the running compiled call names (tjg_frozen) and, unfrozen, has not
 * changed since the last call. Makes the cache lookup the GEMM itself would
 * make (so a weight seen changing stays on OpenBLAS, as in the GEMM). false:
 * it runs as any operand (OpenBLAS, or rt_gemm_own_f32's rule), and
 * sched/pair.c may cut it in column blocks. */
bool rt_gemm_kept(const tj_tensor *b, int64_t m);

/* Copies src (ndim dims, strides in elements, element size esize) into the
 * contiguous dst of shape `shape`; src dims are right-aligned to shape and a
 * src dim may be missing or have stride 0 (broadcast). */
void rt_copy_strided(void *dst, int ndim, const int64_t *shape, const void *src, int sndim,
                     const int64_t *sshape, const int64_t *sstrides, size_t esize);

#endif
