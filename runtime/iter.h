/* iter.h - the elementwise iteration machinery of the runtime.
 *
 * An rt_iter walks an output tensor and up to RT_ITER_MAX-1 inputs broadcast
 * to its shape (stride 0 on broadcast dims) in the output's row-major order.
 * rt_iter_init drops size-1 dims and merges dims whose strides line up for
 * every operand, so a contiguous (or contiguous-plus-scalar) problem becomes
 * one long row; rt_iter_run splits the flat element range across the thread
 * pool and calls a row function on each run of the innermost dim.
 *
 * Also the dtype conversions of the runtime: rt_cvt_row converts a strided
 * row between any two supported dtypes (float -> int truncates like torch,
 * NaN and out-of-range give INT_MIN; -> bool is != 0; f16 and bf16 go through
 * f32, rounding to nearest even: ir/half.h), and rt_convert copies a whole
 * tensor into another with broadcasting and conversion.
 */
#ifndef TJ_RT_ITER_H
#define TJ_RT_ITER_H

#include "rt.h"

#define RT_ITER_MAX 4          /* operands: the output plus up to 3 inputs */
#define RT_GRAIN 32768         /* elements per parallel chunk, at least */
#define RT_BLOCK 1024          /* elements per packed block (stack buffers) */

/* The dtypes with per-dtype kernels: X(ID, ctype). f16 and bf16 have only
 * conversions (RT_HALF below); other kernels see them as f32 (eager.c). */
#define RT_DTYPES(X) X(BOOL, uint8_t) X(U8, uint8_t) X(I8, int8_t) X(I16, int16_t) \
    X(I32, int32_t) X(I64, int64_t) \
    X(F32, float) X(F64, double)
#define RT_HALF(X) X(F16, uint16_t) X(BF16, uint16_t)

/* Innermost loops get AVX-512 and AVX2 versions, picked at load time. */
#define RT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

typedef struct rt_iter {
    int nops;                                   /* output + inputs */
    int ndim;                                   /* >= 1 after coalescing */
    int64_t numel;
    int64_t shape[TJ_MAX_DIMS];                 /* innermost last */
    int64_t strides[RT_ITER_MAX][TJ_MAX_DIMS];  /* in bytes */
    char *data[RT_ITER_MAX];                    /* element 0 of each operand */
} rt_iter;

/* A run of n elements of the innermost dim: ptrs[k] is operand k's first
 * element (0 = output), steps[k] its stride in bytes (0: broadcast). */
typedef void (*rt_row_fn)(void *ctx, char *const *ptrs, const int64_t *steps, int64_t n);

/* Sets up iteration over out and in[0..nin) broadcast to out's shape. Returns
 * -1 with an error when an input cannot be broadcast to out's shape. */
int rt_iter_init(rt_iter *it, tj_tensor *out, tj_tensor *const *in, int nin);

/* Calls fn over every element, in parallel chunks of at least grain elements. */
void rt_iter_run(const rt_iter *it, int64_t grain, rt_row_fn fn, void *ctx);

/* Converts n elements from src (dtype st, stride sstep bytes) into dst (dtype dt,
 * stride dstep bytes). Both dtypes must be supported. */
void rt_cvt_row(void *dst, tj_dtype dt, int64_t dstep, const void *src, tj_dtype st,
                int64_t sstep, int64_t n);

/* Writes in, broadcast to out's shape and converted to out's dtype, into out
 * (any strides). Returns 0, or -1 with an error (shapes, dtypes). */
int rt_convert(tj_tensor *out, const tj_tensor *in);

#endif
