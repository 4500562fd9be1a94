/* k_conv.h - what the conv2d and pool kernels share (k_conv.c) with the
 * im2col + GEMM convolution (k_conv_gemm.c): the window geometry, the row
 * walk's helpers and a convolution's job. Internal to runtime/. */
#ifndef TJ_RUNTIME_K_CONV_H
#define TJ_RUNTIME_K_CONV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/window2d.h"
#include "tjit.h"

#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

/* max_pool2d's maximum of a tap x into the running v: the later tap where
 * it is greater or a NaN, so a window's result is its first greatest tap or
 * its last NaN, however its taps are grouped (k_conv.c's pools,
 * k_conv_post.c's); MAX_NN where x is no NaN (vmaxps). */
#define MAX_OF(x, v) ((x) > (v) || (x) != (x) ? (x) : (v))
#define MAX_NN(x, v) ((x) > (v) ? (x) : (v))

/* The geometry of one 2-D window op on a strided input. */
typedef struct geom {
    ir_window2d w;
    int64_t n, c, h, wd;        /* input: images, channels, height, width */
    int64_t oh, ow;             /* output height, width */
    int64_t xs[4];              /* input strides n, c, h, w (n: 0 when 3-D) */
} geom;

/* Output columns [lo, hi) whose tap at offset `off` (input col = ow*s + off)
 * falls inside [0, n). */
static inline void valid_range(int64_t off, int64_t s, int64_t n, int64_t out, int64_t *lo,
                        int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = n - 1 - off < 0 ? 0 : (n - 1 - off) / s + 1;
    *lo = l < out ? l : out;
    *hi = h < out ? h : out;
    if (*hi < *lo)
        *hi = *lo;
}

/* The input row of output row oh's tap kh, or -1 when it is padding. */
static inline int64_t tap_row(const geom *g, int64_t oh, int64_t kh)
{
    int64_t ih = oh * g->w.stride[0] - g->w.padding[0] + kh * g->w.dilation[0];
    return ih >= 0 && ih < g->h ? ih : -1;
}

/* Runs LOOP (which reads the stride as s_) with s_ a constant 1 or 2 where
 * it is, so the common strides vectorize without gathers. */
#define BY_STRIDE(st, LOOP)           \
    do {                              \
        if ((st) == 1) {              \
            const int64_t s_ = 1;     \
            LOOP;                     \
        } else if ((st) == 2) {       \
            const int64_t s_ = 2;     \
            LOOP;                     \
        } else {                      \
            const int64_t s_ = (st);  \
            LOOP;                     \
        }                             \
    } while (0)

/* One conv2d call. */
typedef struct conv_job {
    geom g;
    tj_dtype dt;
    size_t es;
    const char *x;
    const char *wt;             /* weight, contiguous [O, C/g*KH*KW] */
    const char *bias;           /* NULL or [O], stride bstride */
    int64_t bstride;
    char *y;                    /* output, contiguous [N, O, OH, OW] */
    int64_t o, groups, cg, og, kdim;
    int64_t rows;               /* output rows per tile */
    int64_t tiles;              /* tiles per (image, group) */
    int64_t nb;                 /* images per tile */
    bool whole;                 /* tiles of nb whole images (k_conv_gemm.c) */
    char *xpad;                 /* shifted GEMMs: the padded input [N, C, hp, wp] */
    int64_t hp, wp;
    const char *wtap;           /* shifted GEMMs: the weight as [KH*KW, O, C/g] */
    atomic_int failed;
} conv_job;

/* Whether the image itself is the column matrix (1x1, stride 1, no padding,
 * rows of the image contiguous with each other). */
static inline bool rt_conv_is_pointwise(const geom *g)
{
    const ir_window2d *w = &g->w;
    return w->kernel[0] == 1 && w->kernel[1] == 1 && w->stride[0] == 1 && w->stride[1] == 1 &&
           w->padding[0] == 0 && w->padding[1] == 0 &&
           (g->h == 1 || g->xs[2] == g->wd * g->xs[3]);
}

/* y[q] = the max of x0[2q], x0[2q+1], x1[2q], x1[2q+1] for q < n, with
 * k_conv.c's tap order and NaN rule (its 2x2 stride-2 max pool rows), on
 * AVX-512F: only where tjg_isa_current() has it (k_pool_avx512.c). */
void rt_max2_row_f32_avx512(const float *x0, const float *x1, float *y, int64_t n);

/* Fills n output values with the bias of channel o (zero without bias). */
void rt_conv_fill_bias(const conv_job *j, char *y, int64_t o, int64_t n);
/* Whole images per im2col tile where the outputs are small; 0: tiles of rows. */
int64_t rt_conv_images_per_tile(const conv_job *j);
/* Runs im2col + GEMM tiles t0..t1 of j (an rt_range_fn; j->rows, tiles, nb set). */
void rt_conv_gemm_tiles(void *ctx, int64_t t0, int64_t t1);

#endif
