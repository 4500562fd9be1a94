/* conv_direct_int.h - internal to the direct convolution's two files:
 * k_conv_direct.c (geometry, phase planes, packing, kept weights, Winograd,
 * the rule and the entry) and k_conv_bands.c (the grid and row kernels'
 * tasks, their bands, the fused epilogue and pool). One call's state (dj)
 * and its small helpers. */
#ifndef TJ_RT_CONV_DIRECT_INT_H
#define TJ_RT_CONV_DIRECT_INT_H

#include <stdatomic.h>
#include <string.h>

#include "conv_direct.h"

#define MAX_TAPS 256

typedef struct dj {
    rt_conv_shape s;
    const rt_conv_kernels *k;       /* the instruction set's kernels */
    rt_conv_isa isa;
    rt_conv_block_fn fn;            /* the chosen micro-kernel */
    const void *x;                  /* of dtype dt (f32, bf16, f16: x, w, bias and y) */
    tj_dtype dt;
    float *xq;                      /* phase planes [n][c][sh*sw][hq][wq] + slack */
    float *wk;                      /* packed weights [groups][nob][cg][ntap][ko] */
    size_t wkbytes;                 /* wk's bytes when this call owns it, else 0 */
    struct wslot *wsl;              /* the kept entry wk is borrowed from, or NULL */
    const void *bias;
    int64_t bstride;
    void *y;
    int64_t hq, wq, plane, ngrid, cg, og, ko, qv, nob, nqb, ntap;
    bool rows;                      /* the row kernel (below) instead of the grid kernel */
    bool wino;                      /* Winograd F(2x2, 3x3) or F(4x4, 3x3) (below) */
    int64_t wm, wnp, wnb;           /* Winograd: outputs per tile side (2, 4), transform
                                     * positions ((wm + 2)^2), grid blocks per Winograd block */
    int64_t woh, wow, nwb, uxs;     /* Winograd: output size, blocks per image, U's xi stride */
    int64_t n0;                     /* Winograd: xq holds the planes of images n0.. (a few at
                                     * a time); else 0 and all images' */
    float *wbias;                   /* Winograd: the bias, contiguous, or NULL */
    atomic_int failed;              /* a task ran out of memory */
    int64_t rp, kv, nseg;           /* row kernel: positions, vectors of channels, segments
                                     * per row */
    int64_t nrc;                    /* row kernel: chunks of rows per task */
    int64_t rr0, rr1;               /* row kernel: the output rows to run (row bands: a band's) */
    int64_t ob0, ob1;               /* grid kernel: the channel blocks to run */
    int64_t qoff, qend, bnq;        /* grid kernel: its blocks start at grid position qoff,
                                     * bnq of them per image and group, stored up to qend
                                     * (else 0, ngrid, nqb; row bands: one band's rows) */
    int64_t ycs;                    /* grid kernel: output elements per channel (else oh*ow) */
    int64_t rseg, rbase;            /* grid kernel: blocks per output row when they start at
                                     * every row (0: along the grid), the first row's index */
    int64_t toff[MAX_TAPS];
} dj;

static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Element i of weights or bias v, as f32 (bf16, f16 widened: exact). */
static inline float elem(const dj *j, const void *v, int64_t i)
{
    if (j->dt == TJ_F32)
        return ((const float *)v)[i];
    uint16_t h = ((const uint16_t *)v)[i];
    return j->dt == TJ_F16 ? ir_f16_to_f32(h) : ir_bf16_to_f32(h);
}

/* The bias of output channel o (0 without one). */
static inline float bias_of(const dj *j, int64_t o)
{
    return j->bias ? elem(j, j->bias, o * j->bstride) : 0.0f;
}

/* y[at..at+n) = src[0..n), rounded to bf16 or f16 when the output is. */
static inline void put_out(const dj *j, int64_t at, const float *src, int64_t n)
{
    if (j->dt != TJ_F32)
        rt_conv_narrow(j->dt, (uint16_t *)j->y + at, src, n);
    else
        memcpy((float *)j->y + at, src, (size_t)n * sizeof(float));
}

/* ---- k_conv_bands.c ----------------------------------------------------------------- */
/* The grid kernel's blocks of call j (phase planes made), whole or in the
 * bands of the calling thread's hook (rt_conv_band_set). 0, or -1 when a
 * band's callback failed. */
int rt_convd_grid(dj *j);
/* The row kernel's rows of call j, whole, in row bands, or with the hook's
 * epilogue and pool (rt_conv_post); 0 or -1 as rt_convd_grid. */
int rt_convd_rows(dj *j);

#endif
