/* k_conv_gemm.c - conv2d as im2col + GEMM (k_conv.c dispatches here when
 * no direct, pointwise or shifted way applies): tiles of output rows of one
 * image and group, a tile's columns [C/g*KH*KW, pixels] sized to stay in L2,
 * then W_g [O/g, C/g*KH*KW] @ cols. Where an image's output is small (fewer
 * than RT_CONV_MIN_COLS pixels: the weight gradient's convolution, whose
 * "kernel" is the whole image and output the 3x3 kernel), a tile takes
 * several whole images side by side, one GEMM for all, and builds columns
 * that run along the kernel's rows when the kernel is wider than the output.
 */
#include <string.h>

#include "contract.h"
#include "k_conv.h"
#include "kernels.h"

/* cols[(c*KH + kh)*KW + kw][pixel] for channels c0.. of image n, output
 * rows r0..r1 (a row-major [kdim, (r1-r0)*OW] matrix, rows ld apart).
 * Elements are moved as unsigned integers of their size. */
#define IM2COL(U)                                                                          \
    CLONES static void im2col_##U(const conv_job *j, U *cols, int64_t n, int64_t c0,       \
                                  int64_t r0, int64_t r1, int64_t ld)                      \
    {                                                                                      \
        const geom *g = &j->g;                                                             \
        int64_t st = g->w.stride[1] * g->xs[3];                                            \
        for (int64_t c = 0; c < j->cg; c++) {                                              \
            const U *xp = (const U *)j->x + n * g->xs[0] + (c0 + c) * g->xs[1];            \
            for (int64_t kh = 0; kh < g->w.kernel[0]; kh++)                                \
                for (int64_t kw = 0; kw < g->w.kernel[1]; kw++) {                          \
                    U *d = cols + ((c * g->w.kernel[0] + kh) * g->w.kernel[1] + kw) * ld;  \
                    int64_t off = kw * g->w.dilation[1] - g->w.padding[1], lo, hi;         \
                    valid_range(off, g->w.stride[1], g->wd, g->ow, &lo, &hi);              \
                    for (int64_t oh = r0; oh < r1; oh++, d += g->ow) {                     \
                        int64_t ih = tap_row(g, oh, kh);                                   \
                        if (ih < 0) {                                                      \
                            memset(d, 0, (size_t)g->ow * sizeof(U));                       \
                            continue;                                                      \
                        }                                                                  \
                        const U *s = xp + ih * g->xs[2] + (lo * g->w.stride[1] + off) *    \
                                                              g->xs[3];                    \
                        for (int64_t q = 0; q < lo; q++)                                   \
                            d[q] = 0;                                                      \
                        U *dl = d + lo;                                                    \
                        BY_STRIDE(st, for (int64_t q = 0; q < hi - lo; q++) dl[q] = s[q * s_]); \
                        for (int64_t q = hi; q < g->ow; q++)                               \
                            d[q] = 0;                                                      \
                    }                                                                      \
                }                                                                          \
        }                                                                                  \
    }
IM2COL(uint8_t)
IM2COL(uint16_t)
IM2COL(uint32_t)
IM2COL(uint64_t)
#undef IM2COL

static void im2col(const conv_job *j, void *cols, int64_t n, int64_t c0, int64_t r0, int64_t r1,
                   int64_t ld)
{
    if (j->es == 4)
        im2col_uint32_t(j, cols, n, c0, r0, r1, ld);
    else if (j->es == 8)
        im2col_uint64_t(j, cols, n, c0, r0, r1, ld);
    else if (j->es == 2)
        im2col_uint16_t(j, cols, n, c0, r0, r1, ld);
    else
        im2col_uint8_t(j, cols, n, c0, r0, r1, ld);
}

/* The transpose: cols[pixel][(c*KH + kh)*KW + kw] for every output pixel of
 * image n, rows kdim apart: runs of KW input elements, where the kernel is
 * wider than the output (a weight gradient's kernel is the whole image). */
#define IM2COL_T(U)                                                                        \
    CLONES static void im2col_t_##U(const conv_job *j, U *cols, int64_t n, int64_t c0)     \
    {                                                                                      \
        const geom *g = &j->g;                                                             \
        int64_t kh_n = g->w.kernel[0], kw_n = g->w.kernel[1];                              \
        int64_t st = g->w.dilation[1] * g->xs[3];                                          \
        for (int64_t oh = 0; oh < g->oh; oh++)                                             \
            for (int64_t ow = 0; ow < g->ow; ow++) {                                       \
                U *d = cols + (oh * g->ow + ow) * j->kdim;                                 \
                int64_t off = ow * g->w.stride[1] - g->w.padding[1], lo, hi;               \
                valid_range(off, g->w.dilation[1], g->wd, kw_n, &lo, &hi);                 \
                for (int64_t c = 0; c < j->cg; c++) {                                      \
                    const U *xp = (const U *)j->x + n * g->xs[0] + (c0 + c) * g->xs[1];    \
                    for (int64_t kh = 0; kh < kh_n; kh++, d += kw_n) {                     \
                        int64_t ih = tap_row(g, oh, kh);                                   \
                        if (ih < 0) {                                                      \
                            memset(d, 0, (size_t)kw_n * sizeof(U));                        \
                            continue;                                                      \
                        }                                                                  \
                        const U *s = xp + ih * g->xs[2] +                                  \
                                     (off + lo * g->w.dilation[1]) * g->xs[3];             \
                        for (int64_t q = 0; q < lo; q++)                                   \
                            d[q] = 0;                                                      \
                        U *dl = d + lo;                                                    \
                        BY_STRIDE(st, for (int64_t q = 0; q < hi - lo; q++) dl[q] = s[q * s_]); \
                        for (int64_t q = hi; q < kw_n; q++)                                \
                            d[q] = 0;                                                      \
                    }                                                                      \
                }                                                                          \
            }                                                                              \
    }
IM2COL_T(uint8_t)
IM2COL_T(uint16_t)
IM2COL_T(uint32_t)
IM2COL_T(uint64_t)
#undef IM2COL_T

static void im2col_t(const conv_job *j, void *cols, int64_t n, int64_t c0)
{
    if (j->es == 4)
        im2col_t_uint32_t(j, cols, n, c0);
    else if (j->es == 8)
        im2col_t_uint64_t(j, cols, n, c0);
    else if (j->es == 2)
        im2col_t_uint16_t(j, cols, n, c0);
    else
        im2col_t_uint8_t(j, cols, n, c0);
}

/* A tile of nb whole images (their outputs small: the weight gradient's
 * convolution has a few pixels and a kernel of the whole image): one GEMM
 * over their columns side by side into tmp [og, nb * OH*OW], then each
 * image's rows copied out. Where the kernel is wider than the output, the
 * columns are built transposed (runs along the kernel rows) and the GEMM
 * reads them so. */
static int batched_tile(const conv_job *j, char *cols, char *tmp, int64_t n, int64_t nb,
                        int64_t grp)
{
    int64_t es = (int64_t)j->es, ohw = j->g.oh * j->g.ow, ld = nb * ohw, o0 = grp * j->og;
    bool wide = j->g.w.kernel[1] > j->g.ow;   /* runs along the kernel: the transpose */
    for (int64_t i = 0; i < nb; i++) {
        if (wide)
            im2col_t(j, cols + i * ohw * j->kdim * es, n + i, grp * j->cg);
        else
            im2col(j, cols + i * ohw * es, n + i, grp * j->cg, 0, j->g.oh, ld);
    }
    for (int64_t o = 0; o < j->og; o++)
        rt_conv_fill_bias(j, tmp + o * ld * es, o0 + o, ld);
    rt_mat w = {j->wt + o0 * j->kdim * es, j->kdim, 1};
    rt_mat b = wide ? (rt_mat){cols, 1, j->kdim} : (rt_mat){cols, ld, 1};
    if (rt_gemm(j->dt, j->og, ld, j->kdim, w, b, true, tmp, ld))
        return -1;
    for (int64_t i = 0; i < nb; i++)
        for (int64_t o = 0; o < j->og; o++)
            memcpy(j->y + ((n + i) * j->o + o0 + o) * ohw * es, tmp + (o * ld + i * ohw) * es,
                   (size_t)(ohw * es));
    return 0;
}

/* Runs tiles t0..t1 (t = (n / nb * groups + g) * tiles + tile) with one
 * cols buffer. */
void rt_conv_gemm_tiles(void *ctx, int64_t t0, int64_t t1)
{
    conv_job *j = ctx;
    const geom *g = &j->g;
    bool direct = rt_conv_is_pointwise(g);
    int64_t ohw = g->oh * g->ow;
    size_t cbytes = direct ? 0 : (size_t)(j->kdim * j->rows * g->ow * j->nb) * j->es;
    size_t tbytes = j->whole ? (size_t)(j->og * j->nb * ohw) * j->es : 0;
    char *cols = cbytes ? rt_alloc(cbytes) : NULL, *tmp = tbytes ? rt_alloc(tbytes) : NULL;
    if ((cbytes && !cols) || (tbytes && !tmp))
        atomic_store(&j->failed, 1);
    for (int64_t t = t0; t < t1 && !atomic_load(&j->failed); t++) {
        int64_t tile = t % j->tiles, grp = (t / j->tiles) % j->groups;
        int64_t n = t / (j->tiles * j->groups) * j->nb;
        if (j->whole) {
            int64_t nb = g->n - n < j->nb ? g->n - n : j->nb;
            if (batched_tile(j, cols, tmp, n, nb, grp))
                atomic_store(&j->failed, 1);
            continue;
        }
        int64_t r0 = tile * j->rows, r1 = r0 + j->rows < g->oh ? r0 + j->rows : g->oh;
        int64_t np = (r1 - r0) * g->ow, o0 = grp * j->og;
        char *y = j->y + ((n * j->o + o0) * ohw + r0 * g->ow) * (int64_t)j->es;
        for (int64_t o = 0; o < j->og; o++)
            rt_conv_fill_bias(j, y + o * ohw * (int64_t)j->es, o0 + o, np);
        rt_mat b;
        if (direct)
            b = (rt_mat){j->x + (n * g->xs[0] + grp * j->cg * g->xs[1] + r0 * g->xs[2]) *
                                    (int64_t)j->es,
                         g->xs[1], g->xs[3]};
        else {
            im2col(j, cols, n, grp * j->cg, r0, r1, np);
            b = (rt_mat){cols, np, 1};
        }
        rt_mat w = {j->wt + o0 * j->kdim * (int64_t)j->es, j->kdim, 1};
        if (rt_gemm(j->dt, j->og, np, j->kdim, w, b, true, y, ohw))
            atomic_store(&j->failed, 1);
    }
    if (cols)
        rt_free(cols, cbytes);
    if (tmp)
        rt_free(tmp, tbytes);
}


/* Whole images per im2col tile where one image's GEMM would have fewer than
 * RT_CONV_MIN_COLS columns: enough for that many (their columns at most
 * RT_CONV_BATCH_BYTES), keeping a tile per thread; one where the kernel is
 * wider than the output (the transposed columns). 0: tiles of rows. */
#define RT_CONV_MIN_COLS 64
#define RT_CONV_BATCH_BYTES ((int64_t)8 << 20)

int64_t rt_conv_images_per_tile(const conv_job *j)
{
    int64_t ohw = j->g.oh * j->g.ow, col = j->kdim * ohw * (int64_t)j->es;
    bool wide = j->g.w.kernel[1] > j->g.ow;
    if (rt_conv_is_pointwise(&j->g) || ohw >= RT_CONV_MIN_COLS || col <= 0 || (j->g.n < 2 && !wide))
        return 0;
    int64_t nb = (RT_CONV_MIN_COLS + ohw - 1) / ohw, fit = RT_CONV_BATCH_BYTES / col,
            spread = (j->g.n * j->groups + rt_threads() - 1) / rt_threads();
    nb = nb < fit ? nb : fit;
    nb = nb < spread ? nb : spread;
    return nb < j->g.n ? (nb > 1 ? nb : 1) : j->g.n;
}

