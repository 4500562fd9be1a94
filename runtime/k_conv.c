/* k_conv.c - eager kernels of conv2d, max_pool2d (and its indices) and
 * avg_pool2d.
 *
 * f32 conv2d first asks runtime/k_conv_direct.c (direct AVX-512 or AVX2
 * kernels, Winograd F(2x2, 3x3) and F(4x4, 3x3), chosen per shape:
 * rt_conv_direct_wins), and so does bf16 (rt_k_conv2d_half, through
 * k_half.c: the same kernels widening as they pack, rounding as they store;
 * elsewhere f32 on widened copies); otherwise, and for other dtypes,
 * conv2d picks one of four ways, all parallel over tiles of output rows
 * (image n, group g, rows r0..r1) with OpenBLAS single-threaded inside:
 *   direct     one input channel per group (depthwise): a GEMM would have
 *              K = KH*KW, so each tap is a vectorized multiply-add of rows.
 *   pointwise  1x1, stride 1, no padding: the image is the column matrix.
 *   shifted    stride 1 with 16+ channels per group: on a zero-padded copy
 *              of the input each tap's column matrix is the image shifted,
 *              read by BLAS in place; KH*KW GEMMs with K = C/g accumulate
 *              into an output grid (no im2col; see conv_shifted).
 *   im2col     the rest (k_conv_gemm.c): a tile's columns [C/g*KH*KW,
 *              pixels], sized to stay in L2, then W_g [O/g, C/g*KH*KW] @
 *              cols; where an image's output has fewer than 64 pixels (a
 *              weight gradient's convolution), whole images a tile.
 * The bias is preloaded into the output and the GEMMs accumulate onto it.
 * Measured on [8,64,56,56] * [64,64,3,3], pad 1, one thread: shifted 15 ms,
 * im2col 16.5 ms (OpenBLAS's kernel itself ~11 ms); parallel tiles beat
 * serial tiles with OpenBLAS's own threads.
 *
 * Pools and the direct conv work a plane at a time, a row of output at a
 * time: for each kernel tap, the output row's valid range is updated from the
 * input row with one vectorizable strided loop (no per-element bounds test).
 * Inputs may have any strides; planes are split across the thread pool.
 * In ceil mode the last window may hang over the padded input: the tap walk
 * skips what lies outside the input as it skips padding (stride 1, the only
 * case of the padded grid below, has no ceil-mode windows). max_pool2d's 2x2
 * and 3x3 windows at stride 2 on rows of unit stride (the conv nets' pools)
 * take their own loops instead (max_win_plane), with the tap walk's bits.
 */
#include <math.h>
#include <string.h>

#include "../ir/window2d.h"
#include "blas.h"
#include "contract.h"
#include "conv_direct.h"
#include "gemm.h"
#include "k_conv.h"
#include "kernels.h"

static void geom_of(ir_op op, const ir_attrs *a, const tj_tensor *x, const tj_tensor *out,
                    const int64_t *conv_kernel, geom *g)
{
    ir_window2d_of(op, a, conv_kernel, &g->w, NULL, 0);   /* checked by the rule */
    int b = x->ndim == 4;
    g->n = b ? x->shape[0] : 1;
    g->c = x->shape[b];
    g->h = x->shape[b + 1];
    g->wd = x->shape[b + 2];
    g->oh = out->shape[out->ndim - 2];
    g->ow = out->shape[out->ndim - 1];
    g->xs[0] = b ? x->strides[0] : 0;
    for (int d = 0; d < 3; d++)
        g->xs[d + 1] = x->strides[b + d];
}

/* ---- row primitives (y[j] op= x[j * st]); inlined into the target_clones
 * plane functions below, where they vectorize ------------------------------ */

#define MAX_ROW(T)                                                                         \
    static inline void max_row_##T(T *restrict y, const T *restrict x, int64_t st,         \
                                   int64_t n)                                              \
    {                                                                                      \
        BY_STRIDE(st, for (int64_t j = 0; j < n; j++) {                                    \
            T v = x[j * s_];                                                               \
            y[j] = (v > y[j] || v != v) ? v : y[j];                                        \
        });                                                                                \
    }
#define ADD_ROW(T)                                                                         \
    static inline void add_row_##T(T *restrict y, const T *restrict x, int64_t st,         \
                                   int64_t n)                                              \
    {                                                                                      \
        BY_STRIDE(st, for (int64_t j = 0; j < n; j++) y[j] = (T)(y[j] + x[j * s_]));       \
    }
#define MADD_ROW(T)                                                                        \
    static inline void madd_row_##T(T *restrict y, const T *restrict x, int64_t st, T w,   \
                                    int64_t n)                                             \
    {                                                                                      \
        BY_STRIDE(st, for (int64_t j = 0; j < n; j++) y[j] = (T)(y[j] + w * x[j * s_]));   \
    }
MAX_ROW(float)
MAX_ROW(double)
ADD_ROW(float)
ADD_ROW(double)
ADD_ROW(uint64_t)
MADD_ROW(float)
MADD_ROW(double)
MADD_ROW(uint8_t)
MADD_ROW(uint16_t)
MADD_ROW(uint32_t)
MADD_ROW(uint64_t)
#undef MAX_ROW
#undef ADD_ROW
#undef MADD_ROW

/* ---- the tap walk shared by the pools and the direct conv ------------------------ */

/* For every output row `oh` of the plane at yp (input plane at xp): runs INIT
 * (with yr, the output row), then BODY once per kernel tap (kh, kw) that
 * touches the input, then FINISH. BODY sees xr (the input element under
 * output column lo), st (input stride between output columns) and [lo, hi),
 * the output columns whose tap lies inside the input (padding is skipped). */
#define TAP_COLS 16   /* kernel widths whose column ranges FOR_TAPS works out once per plane */

/* Column range [lo[kw], hi[kw]) of each kernel column kw < n (valid_range). */
static void tap_cols(const geom *g, int64_t n, int64_t *lo, int64_t *hi)
{
    for (int64_t kw = 0; kw < n; kw++)
        valid_range(kw * g->w.dilation[1] - g->w.padding[1], g->w.stride[1], g->wd, g->ow, &lo[kw],
                    &hi[kw]);
}

#define FOR_TAPS(T, g, xp, yp, INIT, BODY, FINISH)                                          \
    do {                                                                                    \
        int64_t st = (g)->w.stride[1] * (g)->xs[3], lo_[TAP_COLS], hi_[TAP_COLS];           \
        int64_t ncol_ = (g)->w.kernel[1] <= TAP_COLS ? (g)->w.kernel[1] : 0;                \
        tap_cols(g, ncol_, lo_, hi_);                                                       \
        for (int64_t oh = 0; oh < (g)->oh; oh++) {                                          \
            T *yr = (yp) + oh * (g)->ow;                                                    \
            INIT;                                                                           \
            for (int64_t kh = 0; kh < (g)->w.kernel[0]; kh++) {                             \
                int64_t ih = tap_row(g, oh, kh);                                            \
                if (ih < 0)                                                                 \
                    continue;                                                               \
                for (int64_t kw = 0; kw < (g)->w.kernel[1]; kw++) {                         \
                    int64_t off = kw * (g)->w.dilation[1] - (g)->w.padding[1], lo, hi;      \
                    if (kw < ncol_)                                                         \
                        lo = lo_[kw], hi = hi_[kw];                                         \
                    else                                                                    \
                        valid_range(off, (g)->w.stride[1], (g)->wd, (g)->ow, &lo, &hi);     \
                    const T *xr =                                                           \
                        (xp) + ih * (g)->xs[2] + (lo * (g)->w.stride[1] + off) * (g)->xs[3]; \
                    BODY;                                                                   \
                }                                                                           \
            }                                                                               \
            FINISH;                                                                         \
        }                                                                                   \
    } while (0)

/* ---- stride-1 planes on a padded grid ------------------------------------------------- */

/* With stride 1 a plane is done on a padded grid: the input plane is copied
 * into pad [Hp, Wp] with the padding value around it, the output computed on
 * a grid [OH, Wp] (the last Wp - OW columns of each row are junk), and every
 * kernel tap becomes one long vectorized loop over the whole grid,
 * grid[q] op= pad[q + kh*dh*Wp + kw*dw], instead of OH short rows. The last
 * taps read (KW-1)*dw elements past the padded plane: slack. */
typedef struct grid_geom {
    int64_t hp, wp, npad, ngrid;   /* npad includes the slack */
} grid_geom;

static grid_geom grid_of(const geom *g)
{
    grid_geom r;
    r.hp = g->h + 2 * g->w.padding[0];
    r.wp = g->wd + 2 * g->w.padding[1];
    r.npad = r.hp * r.wp + (g->w.kernel[1] - 1) * g->w.dilation[1];
    r.ngrid = g->oh * r.wp;
    return r;
}

/* A per-chunk buffer for pad and grid, or NULL for the row-at-a-time path
 * (stride > 1, or no memory: that path needs none). */
static void *grid_alloc(const geom *g, size_t es, size_t *nbytes)
{
    if (g->w.stride[0] != 1 || g->w.stride[1] != 1)
        return NULL;
    grid_geom gg = grid_of(g);
    *nbytes = (size_t)(gg.npad + gg.ngrid) * es;
    return rt_alloc(*nbytes);
}

#define PAD_PLANE(T)                                                                       \
    static inline void pad_plane_##T(const geom *g, const grid_geom *gg, const T *xp,      \
                                     T *pad, T v)                                          \
    {                                                                                      \
        int64_t ph = g->w.padding[0], pw = g->w.padding[1];                                \
        for (int64_t q = 0; q < ph * gg->wp; q++)                                          \
            pad[q] = v;                                                                    \
        for (int64_t r = 0; r < g->h; r++) {                                               \
            T *d = pad + (r + ph) * gg->wp;                                                \
            const T *s = xp + r * g->xs[2];                                                \
            for (int64_t q = 0; q < pw; q++)                                               \
                d[q] = v;                                                                  \
            T *dl = d + pw;                                                                \
            BY_STRIDE(g->xs[3], for (int64_t q = 0; q < g->wd; q++) dl[q] = s[q * s_]);    \
            for (int64_t q = pw + g->wd; q < gg->wp; q++)                                  \
                d[q] = v;                                                                  \
        }                                                                                  \
        for (int64_t q = (ph + g->h) * gg->wp; q < gg->npad; q++)                          \
            pad[q] = v;                                                                    \
    }
PAD_PLANE(float)
PAD_PLANE(double)
PAD_PLANE(uint8_t)
PAD_PLANE(uint16_t)
PAD_PLANE(uint32_t)
PAD_PLANE(uint64_t)
#undef PAD_PLANE

/* Pads plane xp into buf with v, initializes the grid with INIT (over q),
 * then runs TAP(grid, s, n) for every kernel tap, s being the shifted pad. */
#define GRID_TAPS(T, g, gg, xp, buf, v, INIT, TAP)                                         \
    do {                                                                                   \
        T *pad_ = (buf), *grid = pad_ + (gg).npad;                                         \
        pad_plane_##T(g, &(gg), xp, pad_, v);                                              \
        for (int64_t q = 0; q < (gg).ngrid; q++)                                           \
            INIT;                                                                          \
        for (int64_t kh = 0; kh < (g)->w.kernel[0]; kh++)                                  \
            for (int64_t kw = 0; kw < (g)->w.kernel[1]; kw++) {                            \
                const T *s = pad_ + kh * (g)->w.dilation[0] * (gg).wp +                    \
                             kw * (g)->w.dilation[1];                                      \
                TAP;                                                                       \
            }                                                                              \
    } while (0)

/* ---- pools ----------------------------------------------------------------------- */

typedef struct pool_job {
    geom g;
    const char *x;
    char *y;
    int64_t oh0, oh1;   /* max_pool2d: the output rows to compute (rt_pool_rows_set) */
} pool_job;

static _Thread_local int64_t pool_rows[2];   /* rt_pool_rows_set; [0, 0): all */

void rt_pool_rows_set(int64_t oh0, int64_t oh1)
{
    pool_rows[0] = oh0;
    pool_rows[1] = oh1;
}

/* Plane p (= image * C + channel) of the input and the output. */
#define POOL_PLANES(T, j, p)                                                             \
    const T *xp = (const T *)(j)->x + ((p) / (j)->g.c) * (j)->g.xs[0] +                  \
                  ((p) % (j)->g.c) * (j)->g.xs[1];                                       \
    T *yp = (T *)(j)->y + (p) * (j)->g.oh * (j)->g.ow

/* ---- max pool windows 2x2 and 3x3 at stride 2 (the conv nets' pools).
 * The tap walk loads and stores the output row once per tap, and its 7-14
 * column rows in P12 did not vectorize. 2x2: per output row, the columns
 * whose window lies inside the input in one loop that keeps each output's
 * running max in a register, the rest through max_at. 3x3: two passes over
 * the plane, each input row's maxima along its windows' columns (hb, one
 * row of ow per input row, so a row shared by two windows is read once),
 * then each output row the max of its three rows' maxima. Both keep the tap
 * walk's order: a window's taps row by row, and grouping them by row
 * (contiguous runs of that order) keeps the first maximum and the last NaN;
 * a padding tap skipped there is max(v, -inf) = v here. So the bits are the
 * tap walk's, NaN payloads and signed zeros included (docs/perf.md, Small
 * convolutions: P11 and P12). -------------------------------------------- */

#define AI __attribute__((always_inline))

/* Whether max_win_plane takes g: kernel 2x2 or 3x3, stride 2, undilated,
 * unit column stride. */
static bool max_win_fits(const geom *g)
{
    const ir_window2d *w = &g->w;
    return w->kernel[0] == w->kernel[1] && (w->kernel[0] == 2 || w->kernel[0] == 3) &&
           w->stride[0] == 2 && w->stride[1] == 2 && w->dilation[0] == 1 &&
           w->dilation[1] == 1 && g->xs[3] == 1;
}

/* h[q], q < ow, of input row x: its K taps 2q - pw + kw in order, those
 * outside [0, wd) skipped; [lo, hi) the columns with none outside. */
#define MAX_H_ROW(T, K)                                                                    \
    static inline AI int max_h##K##_##T(T *restrict h, const T *restrict x, int64_t wd,    \
                                        int64_t ow, int64_t pw, int64_t lo, int64_t hi)    \
    {                                                                                      \
        int nan = 0;                                                                       \
        for (int64_t j = 0; j < wd; j++)                                                   \
            nan |= x[j] != x[j];                                                           \
        for (int64_t q = lo; q < hi && !nan; q++) { /* no NaN: a plain max (maxps) */      \
            T v = x[2 * q - pw];                                                           \
            for (int kw = 1; kw < K; kw++)                                                 \
                v = MAX_NN(x[2 * q - pw + kw], v);                                         \
            h[q] = v;                                                                      \
        }                                                                                  \
        for (int64_t q = lo; q < hi && nan; q++) {                                         \
            T v = x[2 * q - pw];                                                           \
            for (int kw = 1; kw < K; kw++)                                                 \
                v = MAX_OF(x[2 * q - pw + kw], v);                                         \
            h[q] = v;                                                                      \
        }                                                                                  \
        for (int64_t q = 0; q < ow; q++) {                                                 \
            if (q == lo)                                                                   \
                q = hi > lo ? hi : lo;                                                     \
            if (q >= ow)                                                                   \
                break;                                                                     \
            T v = -(T)INFINITY;                                                            \
            for (int kw = 0; kw < K; kw++) {                                               \
                int64_t iw = 2 * q - pw + kw;                                              \
                if (iw >= 0 && iw < wd)                                                    \
                    v = MAX_OF(x[iw], v);                                                  \
            }                                                                              \
            h[q] = v;                                                                      \
        }                                                                                  \
        return nan;                                                                        \
    }

/* Output [oh, q] of the plane at xp, any taps padding or past the input. */
#define MAX_AT(T)                                                                          \
    static inline AI T max_at_##T(const geom *g, const T *xp, int64_t oh, int64_t q)       \
    {                                                                                      \
        T v = -(T)INFINITY;                                                                \
        for (int64_t kh = 0; kh < g->w.kernel[0]; kh++) {                                  \
            int64_t ih = tap_row(g, oh, kh);                                               \
            for (int64_t kw = 0; kw < g->w.kernel[1] && ih >= 0; kw++) {                   \
                int64_t iw = q * 2 - g->w.padding[1] + kw;                                 \
                if (iw >= 0 && iw < g->wd)                                                 \
                    v = MAX_OF(xp[ih * g->xs[2] + iw], v);                                 \
            }                                                                              \
        }                                                                                  \
        return v;                                                                          \
    }

/* Output rows [oh0, oh1) of plane xp into yp. 2x2: rows whose windows lie
 * inside the input in one loop (x0, x1 its two rows), the rest by max_at;
 * 3x3: through hb (a row of ow per input row the output rows read, from
 * ih0 = max(0, 2 * oh0 - ph) on), or by max_at when hb is NULL. */
#define MAX_WIN_PLANE(T)                                                                   \
    static inline AI void max_win_plane_##T(const geom *g, const T *xp, T *yp, T *hb,     \
                                            int64_t oh0, int64_t oh1, bool v512)        \
    {                                                                                      \
        int64_t k = g->w.kernel[0], pw = g->w.padding[1], ow = g->ow;                      \
        int64_t lo = (pw + 1) / 2, hi = g->wd - k + pw < 0 ? 0 : (g->wd - k + pw) / 2 + 1; \
        hi = hi < ow ? hi : ow;                                                            \
        lo = lo < hi ? lo : hi;                                                            \
        int64_t ih0 = 2 * oh0 - g->w.padding[0], ih1 = 2 * (oh1 - 1) - g->w.padding[0] + k; \
        ih0 = ih0 > 0 ? ih0 : 0;                                                           \
        ih1 = ih1 < g->h ? ih1 : g->h;                                                     \
        int nan = 0; /* in the rows' maxima: else the plain max below */                   \
        for (int64_t ih = ih0; ih < ih1 && k == 3 && hb; ih++)                             \
            nan |= max_h3_##T(hb + (ih - ih0) * ow, xp + ih * g->xs[2], g->wd, ow, pw, lo, hi); \
        for (int64_t oh = oh0; oh < oh1; oh++) {                                           \
            T *restrict yr = yp + oh * ow;                                                 \
            if (k == 2) {                                                                  \
                int64_t ih = oh * 2 - g->w.padding[0];                                     \
                bool in = ih >= 0 && ih + 2 <= g->h;                                       \
                int64_t l = in ? lo : ow, h = in ? hi : ow;                                \
                const T *x0 = xp + (in ? ih : 0) * g->xs[2] - pw, *x1 = x0 + g->xs[2];     \
                if (sizeof(T) == 4 && v512 && h > l)                                       \
                    rt_max2_row_f32_avx512((const float *)x0 + 2 * l, (const float *)x1 + 2 * l, \
                                           (float *)yr + l, h - l);                        \
                for (int64_t q = sizeof(T) == 4 && v512 ? h : l; q < h; q++) {             \
                    T v = MAX_OF(x0[2 * q + 1], x0[2 * q]);                                \
                    v = MAX_OF(x1[2 * q], v);                                              \
                    yr[q] = MAX_OF(x1[2 * q + 1], v);                                      \
                }                                                                          \
                for (int64_t q = 0; q < l; q++)                                            \
                    yr[q] = max_at_##T(g, xp, oh, q);                                      \
                for (int64_t q = h; q < ow; q++)                                           \
                    yr[q] = max_at_##T(g, xp, oh, q);                                      \
                continue;                                                                  \
            }                                                                              \
            if (!hb) {                                                                     \
                for (int64_t q = 0; q < ow; q++)                                           \
                    yr[q] = max_at_##T(g, xp, oh, q);                                      \
                continue;                                                                  \
            }                                                                              \
            const T *restrict hr[3];                                                       \
            int nr = 0;                                                                    \
            for (int64_t kh = 0; kh < k; kh++) {                                           \
                int64_t r = tap_row(g, oh, kh);                                            \
                if (r >= 0)                                                                \
                    hr[nr++] = hb + (r - ih0) * ow;                                        \
            }                                                                              \
            if (nr == 3 && !nan) /* one pass, the rows' maxima in tap order */             \
                for (int64_t q = 0; q < ow; q++)                                           \
                    yr[q] = MAX_NN(hr[2][q], MAX_NN(hr[1][q], hr[0][q]));                  \
            else if (nr == 3)                                                              \
                for (int64_t q = 0; q < ow; q++)                                           \
                    yr[q] = MAX_OF(hr[2][q], MAX_OF(hr[1][q], hr[0][q]));                  \
            else if (nr == 2)                                                              \
                for (int64_t q = 0; q < ow; q++)                                           \
                    yr[q] = MAX_OF(hr[1][q], hr[0][q]);                                    \
            else                                                                           \
                for (int64_t q = 0; q < ow; q++)                                           \
                    yr[q] = nr ? hr[0][q] : -(T)INFINITY;                                  \
        }                                                                                  \
    }
MAX_H_ROW(float, 3)
MAX_H_ROW(double, 3)
MAX_AT(float)
MAX_AT(double)
MAX_WIN_PLANE(float)
MAX_WIN_PLANE(double)
#undef MAX_H_ROW
#undef MAX_AT
#undef MAX_WIN_PLANE
#undef AI

#define MAX_PLANES(T)                                                                    \
    CLONES static void max_planes_##T(void *ctx, int64_t p0, int64_t p1)                 \
    {                                                                                    \
        const pool_job *j = ctx;                                                         \
        const geom *g = &j->g;                                                           \
        grid_geom gg = grid_of(g);                                                       \
        size_t nb = 0;                                                                   \
        T *buf = grid_alloc(g, sizeof(T), &nb), ninf = -(T)INFINITY;                     \
        bool win = max_win_fits(g), rows3 = win && g->w.kernel[0] == 3;                   \
        bool part = j->oh1 > 0; /* some rows (max_win_fits: rt_pool_rows_set's check) */ \
        bool v512 = tjg_isa_current() >= TJG_AVX512;                                     \
        int64_t nr = part ? 2 * (j->oh1 - j->oh0) + 1 : g->h;                            \
        size_t hbytes = rows3 ? (size_t)(nr * g->ow) * sizeof(T) : 0;                    \
        T *hb = rows3 ? rt_alloc(hbytes) : NULL; /* none: the tap walk */                \
        for (int64_t p = p0; p < p1; p++) {                                              \
            POOL_PLANES(T, j, p);                                                        \
            if (win && (hb || !rows3 || part)) {                                         \
                max_win_plane_##T(g, xp, yp, hb, part ? j->oh0 : 0, part ? j->oh1 : g->oh, v512); \
                continue;                                                                \
            }                                                                            \
            if (!buf) {                                                                  \
                FOR_TAPS(T, g, xp, yp, for (int64_t q = 0; q < g->ow; q++) yr[q] = ninf, \
                         max_row_##T(yr + lo, xr, st, hi - lo), (void)0);                \
                continue;                                                                \
            }                                                                            \
            GRID_TAPS(T, g, gg, xp, buf, ninf, grid[q] = ninf,                           \
                      max_row_##T(grid, s, 1, gg.ngrid));                                \
            for (int64_t oh = 0; oh < g->oh; oh++)                                       \
                memcpy(yp + oh * g->ow, buf + gg.npad + oh * gg.wp,                      \
                       (size_t)g->ow * sizeof(T));                                       \
        }                                                                                \
        if (buf)                                                                         \
            rt_free(buf, nb);                                                            \
        if (hb)                                                                          \
            rt_free(hb, hbytes);                                                         \
    }
MAX_PLANES(float)
MAX_PLANES(double)
#undef MAX_PLANES

/* avg_pool2d's divisor along dim d for output index o (PyTorch's rule: the
 * window clipped to the padded input, or to the input itself). */
static int64_t avg_count(const ir_window2d *w, int d, int64_t o, int64_t n)
{
    int64_t start = o * w->stride[d] - w->padding[d];
    int64_t end = start + w->kernel[d];
    if (end > n + w->padding[d])
        end = n + w->padding[d];
    if (!w->count_include_pad) {
        start = start < 0 ? 0 : start;
        end = end < n ? end : n;
    }
    return end - start;
}

/* s / d; integers truncate toward zero, and the one quotient that overflows
 * (INT64_MIN / -1, with divisor_override -1) wraps instead of trapping. */
static inline float avg_div_float(float s, int64_t d) { return s / (float)d; }
static inline double avg_div_double(double s, int64_t d) { return s / (double)d; }
static inline int64_t avg_div_int64_t(int64_t s, int64_t d)
{
    return d == -1 ? (int64_t)(0 - (uint64_t)s) : s / d;
}

/* Output row oh from its sums yr (in place), divided by the window counts
 * or by divisor_override. */
#define AVG_DIVIDE(T, g, dst, src, oh)                                                   \
    do {                                                                                 \
        int64_t hc_ = avg_count(&(g)->w, 0, oh, (g)->h), dv_ = (g)->w.divisor_override;  \
        for (int64_t q = 0; q < (g)->ow; q++)                                            \
            (dst)[q] = avg_div_##T((src)[q],                                             \
                                   dv_ ? dv_ : hc_ * avg_count(&(g)->w, 1, q, (g)->wd)); \
    } while (0)

/* Sums in A (the unsigned twin for i64, so overflow wraps), then divides
 * (integers truncate toward zero, like PyTorch). */
#define AVG_PLANES(T, A)                                                                 \
    CLONES static void avg_planes_##T(void *ctx, int64_t p0, int64_t p1)                 \
    {                                                                                    \
        const pool_job *j = ctx;                                                         \
        const geom *g = &j->g;                                                           \
        grid_geom gg = grid_of(g);                                                       \
        size_t nb = 0;                                                                   \
        A *buf = grid_alloc(g, sizeof(A), &nb);                                          \
        for (int64_t p = p0; p < p1; p++) {                                              \
            POOL_PLANES(T, j, p);                                                        \
            if (!buf) {                                                                  \
                FOR_TAPS(T, g, xp, yp, memset(yr, 0, (size_t)g->ow * sizeof(T)),         \
                         add_row_##A((A *)yr + lo, (const A *)xr, st, hi - lo),          \
                         AVG_DIVIDE(T, g, yr, yr, oh));                                  \
                continue;                                                                \
            }                                                                            \
            GRID_TAPS(A, g, gg, (const A *)xp, buf, 0, grid[q] = 0,                      \
                      add_row_##A(grid, s, 1, gg.ngrid));                                \
            const T *sums = (const T *)(buf + gg.npad);                                  \
            for (int64_t oh = 0; oh < g->oh; oh++)                                       \
                AVG_DIVIDE(T, g, yp + oh * g->ow, sums + oh * gg.wp, oh);                \
        }                                                                                \
        if (buf)                                                                         \
            rt_free(buf, nb);                                                            \
    }
AVG_PLANES(float, float)
AVG_PLANES(double, double)
AVG_PLANES(int64_t, uint64_t)
#undef AVG_PLANES

/* The taps of output o along dim d inside the input [0, n): from *lo (the
 * first, stepping by the dilation) up to *hi (exclusive). */
static void window_taps(const geom *g, int d, int64_t o, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t dl = g->w.dilation[d], start = o * g->w.stride[d] - g->w.padding[d];
    int64_t end = start + (g->w.kernel[d] - 1) * dl + 1;
    *hi = end < n ? end : n;
    *lo = start >= 0 ? start : start + (-start + dl - 1) / dl * dl;
}

/* max_pool2d_indices: where each window's maximum is, as h * W + w in its
 * input plane, PyTorch's way: taps in window order, a tap taking over when
 * it is larger than the maximum so far or NaN (so the first maximum wins,
 * and the last NaN), the window's first tap inside the input when every
 * value is -inf. Row by row like the value kernel, over blocks of IDX_BLOCK
 * output columns whose running maxima sit on the stack: each tap updates a
 * block's valid range with one vectorizable loop (a blend of values and
 * positions). */
#define IDX_BLOCK 256

#define MAX_INDEX_ROW(T)                                                                   \
    static inline void max_index_row_##T(T *restrict m, int64_t *restrict ix,              \
                                         const T *restrict x, int64_t st, int64_t n,       \
                                         int64_t pos, int64_t step)                        \
    {                                                                                      \
        BY_STRIDE(st, for (int64_t j = 0; j < n; j++) {                                    \
            T v = x[j * s_];                                                               \
            bool u = v > m[j] || v != v;                                                   \
            m[j] = u ? v : m[j];                                                           \
            ix[j] = u ? pos + j * step : ix[j];                                            \
        });                                                                                \
    }

#define MAX_INDEX_PLANES(T)                                                                \
    MAX_INDEX_ROW(T)                                                                       \
    CLONES static void max_index_planes_##T(void *ctx, int64_t p0, int64_t p1)             \
    {                                                                                      \
        const pool_job *j = ctx;                                                           \
        const geom *g = &j->g;                                                             \
        const int64_t sw = g->w.stride[1], dw = g->w.dilation[1], pw = g->w.padding[1];    \
        T m[IDX_BLOCK];                                                                    \
        for (int64_t p = p0; p < p1; p++) {                                                \
            const T *xp = (const T *)j->x + (p / g->c) * g->xs[0] + (p % g->c) * g->xs[1]; \
            for (int64_t oh = 0; oh < g->oh; oh++) {                                       \
                int64_t *yr = (int64_t *)j->y + (p * g->oh + oh) * g->ow, h0, h1, w0, w1;  \
                window_taps(g, 0, oh, g->h, &h0, &h1);                                     \
                for (int64_t c0 = 0; c0 < g->ow; c0 += IDX_BLOCK) {                        \
                    int64_t c1 = c0 + IDX_BLOCK < g->ow ? c0 + IDX_BLOCK : g->ow;          \
                    for (int64_t q = c0; q < c1; q++) {                                    \
                        window_taps(g, 1, q, g->wd, &w0, &w1);                             \
                        m[q - c0] = -(T)INFINITY;                                          \
                        yr[q] = h0 * g->wd + w0;                                           \
                    }                                                                      \
                    for (int64_t kh = 0; kh < g->w.kernel[0]; kh++) {                      \
                        int64_t ih = tap_row(g, oh, kh), lo, hi;                           \
                        for (int64_t kw = 0; ih >= 0 && kw < g->w.kernel[1]; kw++) {       \
                            int64_t off = kw * dw - pw;                                    \
                            valid_range(off, sw, g->wd, g->ow, &lo, &hi);                  \
                            lo = lo > c0 ? lo : c0;                                        \
                            hi = hi < c1 ? hi : c1;                                        \
                            if (lo < hi)                                                   \
                                max_index_row_##T(m + (lo - c0), yr + lo,                  \
                                                  xp + ih * g->xs[2] +                     \
                                                      (lo * sw + off) * g->xs[3],          \
                                                  sw * g->xs[3], hi - lo,                  \
                                                  ih * g->wd + lo * sw + off, sw);         \
                        }                                                                  \
                    }                                                                      \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    }

MAX_INDEX_PLANES(float)
MAX_INDEX_PLANES(double)
#undef MAX_INDEX_PLANES
#undef MAX_INDEX_ROW

/* Planes per chunk: about 32K tap updates. */
static int64_t plane_grain(const geom *g, int64_t taps)
{
    int64_t work = g->oh * g->ow * (taps > 0 ? taps : 1);
    return 32768 / (work > 0 ? work : 1) + 1;
}

bool rt_pool_rows_fit(const ir_attrs *a)
{
    geom g = {0};
    ir_window2d_of(OP_max_pool2d, a, NULL, &g.w, NULL, 0);
    g.xs[3] = 1;
    return max_win_fits(&g);
}

int rt_k_max_pool2d(RT_KERNEL_ARGS)
{
    pool_job j = {.x = rt_ptr(in[0]), .y = rt_ptr(out), .oh0 = pool_rows[0], .oh1 = pool_rows[1]};
    geom_of(op, a, in[0], out, NULL, &j.g);
    rt_parallel_for(j.g.n * j.g.c, plane_grain(&j.g, j.g.w.kernel[0] * j.g.w.kernel[1]),
                    out->dtype == TJ_F32 ? max_planes_float : max_planes_double, &j);
    return 0;
}

int rt_k_max_pool2d_indices(RT_KERNEL_ARGS)
{
    pool_job j = {.x = rt_ptr(in[0]), .y = rt_ptr(out)};
    geom_of(op, a, in[0], out, NULL, &j.g);
    rt_parallel_for(j.g.n * j.g.c, plane_grain(&j.g, j.g.w.kernel[0] * j.g.w.kernel[1]),
                    in[0]->dtype == TJ_F32 ? max_index_planes_float : max_index_planes_double,
                    &j);
    return 0;
}

int rt_k_avg_pool2d(RT_KERNEL_ARGS)
{
    pool_job j = {.x = rt_ptr(in[0]), .y = rt_ptr(out)};
    geom_of(op, a, in[0], out, NULL, &j.g);
    rt_range_fn fn = out->dtype == TJ_F32   ? avg_planes_float
                     : out->dtype == TJ_F64 ? avg_planes_double
                                            : avg_planes_int64_t;
    rt_parallel_for(j.g.n * j.g.c, plane_grain(&j.g, j.g.w.kernel[0] * j.g.w.kernel[1]), fn,
                    &j);
    return 0;
}

/* ---- conv2d: shared ----------------------------------------------------------------- */

/* Fills n output values with the bias of channel o (zero without bias). */
void rt_conv_fill_bias(const conv_job *j, char *y, int64_t o, int64_t n)
{
    if (!j->bias) {
        memset(y, 0, (size_t)n * j->es);
        return;
    }
    const char *b = j->bias + o * j->bstride * (int64_t)j->es;
    uint16_t v2;
    uint32_t v4;
    uint64_t v8;
    switch (j->es) {
    case 2:
        memcpy(&v2, b, 2);
        for (int64_t k = 0; k < n; k++)
            memcpy(y + 2 * k, &v2, 2);
        break;
    case 4:
        memcpy(&v4, b, 4);
        for (int64_t k = 0; k < n; k++)
            memcpy(y + 4 * k, &v4, 4);
        break;
    case 8:
        memcpy(&v8, b, 8);
        for (int64_t k = 0; k < n; k++)
            memcpy(y + 8 * k, &v8, 8);
        break;
    default:
        memset(y, *(const uint8_t *)b, (size_t)n);
    }
}

/* ---- conv2d: direct kernel (one input channel per group) ------------------------------- */

/* Output plane p = image * O + channel o reads input channel o / (O/groups). */
#define DIRECT_PLANES(T, A)                                                              \
    CLONES static void direct_planes_##T(void *ctx, int64_t p0, int64_t p1)              \
    {                                                                                    \
        const conv_job *j = ctx;                                                         \
        const geom *g = &j->g;                                                           \
        grid_geom gg = grid_of(g);                                                       \
        size_t nb = 0;                                                                   \
        A *buf = grid_alloc(g, sizeof(A), &nb);                                          \
        for (int64_t p = p0; p < p1; p++) {                                              \
            int64_t n = p / j->o, o = p % j->o;                                          \
            const A *wk = (const A *)j->wt + o * g->w.kernel[0] * g->w.kernel[1];        \
            const A *xp = (const A *)j->x + n * g->xs[0] + (o / j->og) * g->xs[1];       \
            A *yp = (A *)j->y + p * g->oh * g->ow;                                       \
            if (!buf) {                                                                  \
                rt_conv_fill_bias(j, (char *)yp, o, g->oh * g->ow);                              \
                FOR_TAPS(A, g, xp, yp, (void)0,                                          \
                         madd_row_##A(yr + lo, xr, st, wk[kh * g->w.kernel[1] + kw],     \
                                      hi - lo),                                          \
                         (void)0);                                                       \
                continue;                                                                \
            }                                                                            \
            rt_conv_fill_bias(j, (char *)(buf + gg.npad), o, gg.ngrid);                          \
            GRID_TAPS(A, g, gg, xp, buf, 0, (void)0,                                     \
                      madd_row_##A(grid, s, 1, wk[kh * g->w.kernel[1] + kw], gg.ngrid)); \
            for (int64_t oh = 0; oh < g->oh; oh++)                                       \
                memcpy(yp + oh * g->ow, buf + gg.npad + oh * gg.wp,                      \
                       (size_t)g->ow * sizeof(A));                                       \
        }                                                                                \
        if (buf)                                                                         \
            rt_free(buf, nb);                                                            \
    }
DIRECT_PLANES(f32, float)
DIRECT_PLANES(f64, double)
DIRECT_PLANES(u8, uint8_t)
DIRECT_PLANES(i16, uint16_t)
DIRECT_PLANES(i32, uint32_t)
DIRECT_PLANES(i64, uint64_t)
#undef DIRECT_PLANES

static rt_range_fn direct_fn(tj_dtype dt)
{
    switch (dt) {
    case TJ_F32: return direct_planes_f32;
    case TJ_F64: return direct_planes_f64;
    case TJ_U8:
    case TJ_I8: return direct_planes_u8;   /* wrapping, so the same bits */
    case TJ_I16: return direct_planes_i16;
    case TJ_I32: return direct_planes_i32;
    default: return direct_planes_i64;
    }
}

/* ---- conv2d: shifted GEMMs (stride 1) ------------------------------------------------ */

/* With stride 1, the column matrix of kernel tap (kh, kw) needs no im2col:
 * on a zero-padded copy of the image [C, Hp, Wp], output pixel (oh, ow) of
 * tap (kh, kw) reads element (oh + kh*dh) * Wp + ow + kw*dw, so over a grid of
 * OH x Wp "pixels" (Wp - OW of them per row are junk and dropped) the tap's
 * columns are the padded image shifted by a constant: a plain strided matrix
 * [C/g, pixels] that BLAS reads in place. The output grid accumulates
 * W_tap [O/g, C/g] @ shifted image over the KH*KW taps (bias preloaded), then
 * its valid columns are copied out. */

#define PAD_PLANES(U)                                                                      \
    CLONES static void pad_planes_##U(void *ctx, int64_t p0, int64_t p1)                   \
    {                                                                                      \
        const conv_job *j = ctx;                                                           \
        const geom *g = &j->g;                                                             \
        int64_t ph = g->w.padding[0], pw = g->w.padding[1];                                \
        for (int64_t p = p0; p < p1; p++) {                                                \
            const U *xp = (const U *)j->x + (p / g->c) * g->xs[0] + (p % g->c) * g->xs[1]; \
            U *d = (U *)j->xpad + p * j->hp * j->wp;                                       \
            for (int64_t r = 0; r < j->hp; r++, d += j->wp) {                              \
                if (r < ph || r >= ph + g->h) {                                            \
                    memset(d, 0, (size_t)j->wp * sizeof(U));                               \
                    continue;                                                              \
                }                                                                          \
                const U *s = xp + (r - ph) * g->xs[2];                                     \
                U *dl = d + pw;                                                            \
                for (int64_t q = 0; q < pw; q++)                                           \
                    d[q] = 0;                                                              \
                BY_STRIDE(g->xs[3], for (int64_t q = 0; q < g->wd; q++) dl[q] = s[q * s_]); \
                for (int64_t q = pw + g->wd; q < j->wp; q++)                               \
                    d[q] = 0;                                                              \
            }                                                                              \
        }                                                                                  \
    }
PAD_PLANES(uint8_t)
PAD_PLANES(uint16_t)
PAD_PLANES(uint32_t)
PAD_PLANES(uint64_t)
#undef PAD_PLANES

/* Runs shifted-GEMM tiles t0..t1 (numbered like conv_tiles) with one grid. */
static void shifted_tiles(void *ctx, int64_t t0, int64_t t1)
{
    conv_job *j = ctx;
    const geom *g = &j->g;
    int64_t es = (int64_t)j->es, kh_n = g->w.kernel[0], kw_n = g->w.kernel[1];
    size_t gbytes = (size_t)(j->og * j->rows * j->wp * es);
    char *grid = rt_alloc(gbytes);
    if (!grid) {
        atomic_store(&j->failed, 1);
        return;
    }
    for (int64_t t = t0; t < t1 && !atomic_load(&j->failed); t++) {
        int64_t tile = t % j->tiles, grp = (t / j->tiles) % j->groups;
        int64_t n = t / (j->tiles * j->groups);
        int64_t r0 = tile * j->rows, r1 = r0 + j->rows < g->oh ? r0 + j->rows : g->oh;
        int64_t np = (r1 - r0) * j->wp, o0 = grp * j->og;
        for (int64_t o = 0; o < j->og; o++)
            rt_conv_fill_bias(j, grid + o * np * es, o0 + o, np);
        const char *img = j->xpad + (n * g->c + grp * j->cg) * j->hp * j->wp * es;
        for (int64_t tap = 0; tap < kh_n * kw_n; tap++) {
            int64_t shift = (r0 + tap / kw_n * g->w.dilation[0]) * j->wp +
                            tap % kw_n * g->w.dilation[1];
            rt_mat w = {j->wtap + (tap * j->o + o0) * j->cg * es, j->cg, 1};
            rt_mat b = {img + shift * es, j->hp * j->wp, 1};
            if (rt_gemm(j->dt, j->og, np, j->cg, w, b, true, grid, np))
                atomic_store(&j->failed, 1);
        }
        for (int64_t o = 0; o < j->og; o++)
            for (int64_t r = r0; r < r1; r++)
                memcpy(j->y + (((n * j->o + o0 + o) * g->oh + r) * g->ow) * es,
                       grid + (o * np + (r - r0) * j->wp) * es, (size_t)(g->ow * es));
    }
    rt_free(grid, gbytes);
}

/* ---- conv2d: dispatch ------------------------------------------------------------------ */

/* Output rows per tile: a tile's buffer (row_bytes per output row) holds
 * about RT_CONV_TILE_BYTES, and every thread gets at least one tile. */
#define RT_CONV_TILE_BYTES ((int64_t)512 << 10)

static int64_t tile_rows(const conv_job *j, int64_t row_bytes)
{
    const geom *g = &j->g;
    int64_t r = row_bytes > 0 ? RT_CONV_TILE_BYTES / row_bytes : g->oh;
    if (r < 1)
        r = 1;
    int64_t threads = rt_threads();
    int64_t per_image = (threads + g->n * j->groups - 1) / (g->n * j->groups);
    if (per_image > 1 && g->oh / per_image < r)
        r = (g->oh + per_image - 1) / per_image;
    return r < g->oh ? r : g->oh;
}

/* Runs tiles of `rows` output rows through fn on the pool, OpenBLAS
 * single-threaded inside (the tiles are the parallelism). */
static void run_tiles(conv_job *j, int64_t rows, rt_range_fn fn)
{
    j->rows = rows;
    j->tiles = (j->g.oh + rows - 1) / rows;
    rt_blas_serial_begin();
    rt_parallel_for((j->g.n + j->nb - 1) / j->nb * j->groups * j->tiles, 1, fn, j);
    rt_blas_serial_end();
}

/* Shifted GEMMs pay off once each tap's GEMM has a reasonable inner size. */
#define RT_SHIFT_MIN_CG 16

static bool use_shifted(const conv_job *j)
{
    const ir_window2d *w = &j->g.w;
    int64_t wp = j->g.wd + 2 * w->padding[1];
    return w->stride[0] == 1 && w->stride[1] == 1 && j->cg >= RT_SHIFT_MIN_CG &&
           (wp - j->g.ow) * 8 <= wp && !rt_conv_is_pointwise(&j->g);
}

static int conv_shifted(conv_job *j, const tj_tensor *w)
{
    const geom *g = &j->g;
    int64_t es = (int64_t)j->es, khw = w->shape[2] * w->shape[3];
    j->hp = g->h + 2 * g->w.padding[0];
    j->wp = g->wd + 2 * g->w.padding[1];
    /* The last tap of the last plane reads (KW-1)*dw junk elements past it. */
    int64_t slack = (w->shape[3] - 1) * g->w.dilation[1];
    size_t pbytes = (size_t)((g->n * g->c * j->hp * j->wp + slack) * es);
    size_t wbytes = (size_t)(khw * j->o * j->cg * es);
    char *xpad = rt_alloc(pbytes), *wtap = rt_alloc(wbytes);
    if (!xpad || !wtap) {
        if (xpad)
            rt_free(xpad, pbytes);
        if (wtap)
            rt_free(wtap, wbytes);
        return -1;
    }
    rt_copy_strided(wtap, 4, (int64_t[]){w->shape[2], w->shape[3], j->o, j->cg}, rt_ptr(w), 4,
                    (int64_t[]){w->shape[2], w->shape[3], j->o, j->cg},
                    (int64_t[]){w->strides[2], w->strides[3], w->strides[0], w->strides[1]},
                    j->es);
    memset(xpad + (pbytes - (size_t)(slack * es)), 0, (size_t)(slack * es));
    j->xpad = xpad;
    j->wtap = wtap;
    rt_range_fn pad = es == 4 ? pad_planes_uint32_t : es == 8 ? pad_planes_uint64_t
                      : es == 2 ? pad_planes_uint16_t : pad_planes_uint8_t;
    rt_parallel_for(g->n * g->c, 32768 / (j->hp * j->wp) + 1, pad, j);
    run_tiles(j, tile_rows(j, (j->og > j->cg ? j->og : j->cg) * j->wp * es), shifted_tiles);
    rt_free(xpad, pbytes);
    rt_free(wtap, wbytes);
    return 0;
}

/* The direct kernels' view of a conv2d (x, weight w) with geometry g. */
static rt_conv_shape direct_shape(const geom *g, const tj_tensor *w)
{
    return (rt_conv_shape){
        .n = g->n, .c = g->c, .h = g->h, .w = g->wd,
        .xs = {g->xs[0], g->xs[1], g->xs[2], g->xs[3]},
        .o = w->shape[0], .groups = g->w.groups, .kh = w->shape[2], .kw = w->shape[3],
        .ws = {w->strides[0], w->strides[1], w->strides[2], w->strides[3]},
        .sh = g->w.stride[0], .sw = g->w.stride[1], .ph = g->w.padding[0],
        .pw = g->w.padding[1], .dh = g->w.dilation[0], .dw = g->w.dilation[1],
        .oh = g->oh, .ow = g->ow};
}

/* bf16 or f16 conv2d (x, w, bias all bf16 or all f16): the direct kernels
 * where they win, widening as they pack (f16: F16C) and rounding once as
 * they store; else (and for mixed types) the f32 paths on widened copies
 * (k_half.c). */
int rt_k_conv2d_half(RT_KERNEL_ARGS)
{
    tj_tensor *x = in[0], *w = in[1], *bias = nin > 2 ? in[2] : NULL;
    tj_dtype dt = out->dtype;
    if ((dt == TJ_BF16 || dt == TJ_F16) && x->dtype == dt && w->dtype == dt &&
        (!bias || bias->dtype == dt)) {
        geom g;
        geom_of(op, a, x, out, &w->shape[2], &g);
        if (g.n == 0)
            return 0;
        rt_conv_shape cs = direct_shape(&g, w);
        if (rt_conv_direct_wins(&cs))
            return rt_conv_direct(&cs, dt, rt_ptr(x), w, bias ? rt_ptr(bias) : NULL,
                                  bias ? bias->strides[0] : 0, rt_ptr(out));
    }
    return rt_half_via_f32(op, out, in, nin, a);
}

int rt_k_conv2d(RT_KERNEL_ARGS)
{
    tj_tensor *x = in[0], *w = in[1], *bias = nin > 2 ? in[2] : NULL;
    conv_job j = {.dt = out->dtype, .es = tj_dtype_size(out->dtype), .x = rt_ptr(x),
                  .y = rt_ptr(out), .nb = 1};
    geom_of(op, a, x, out, &w->shape[2], &j.g);
    if (j.g.n == 0)
        return 0;
    j.o = w->shape[0];
    j.groups = j.g.w.groups;
    j.cg = w->shape[1];
    j.og = j.o / j.groups;
    j.kdim = j.cg * w->shape[2] * w->shape[3];
    if (bias) {
        j.bias = rt_ptr(bias);
        j.bstride = bias->strides[0];
    }
    atomic_init(&j.failed, 0);
    if (j.dt == TJ_F32) {
        rt_conv_shape cs = direct_shape(&j.g, w);
        if (rt_conv_direct_wins(&cs))
            return rt_conv_direct(&cs, TJ_F32, rt_ptr(x), w, j.bias, j.bstride,
                                  rt_ptr(out));
    }
    bool direct = j.cg == 1;
    /* Load OpenBLAS here: an error recorded on a pool thread would be lost. */
    if (!direct && ir_dtype_is_float(j.dt) && !rt_blas_core())
        return -1;
    int r = 0;
    if (!direct && use_shifted(&j)) {
        r = conv_shifted(&j, w);
    } else {
        size_t wbytes = (size_t)(j.o * j.kdim) * j.es;
        void *wpack = NULL;
        if (rt_is_contiguous(w)) {
            j.wt = rt_ptr(w);
        } else if ((wpack = rt_alloc(wbytes))) {
            rt_copy_strided(wpack, w->ndim, w->shape, rt_ptr(w), w->ndim, w->shape,
                            w->strides, j.es);
            j.wt = wpack;
        } else {
            return -1;
        }
        if (direct) {
            rt_parallel_for(j.g.n * j.o, plane_grain(&j.g, j.kdim), direct_fn(j.dt), &j);
        } else {
            int64_t row = rt_conv_is_pointwise(&j.g) ? 0 : j.kdim * j.g.ow * (int64_t)j.es;
            int64_t nb = rt_conv_images_per_tile(&j);
            j.whole = nb > 0;
            j.nb = j.whole ? nb : 1;
            run_tiles(&j, j.whole ? j.g.oh : tile_rows(&j, row), rt_conv_gemm_tiles);
        }
        if (wpack)
            rt_free(wpack, wbytes);
    }
    if (r == 0 && atomic_load(&j.failed))
        rt_error("out of memory for the convolution's buffers");
    return r || atomic_load(&j.failed) ? -1 : 0;
}
