/* k_conv_post.c - a conv's pointwise epilogue (scale, shift, relu) and its
 * max pool run on the row kernel's output rows while they are in L1
 * (conv_direct.h, rt_conv_post; sched/cpost.c plans it, sched/block.c runs
 * it inside a conv region). Per block of `lanes` output channels and per
 * output row: the row kernel's [cols][lanes] row, the epilogue on it, the
 * pool's column taps into a ring of three pooled rows, and each pool output
 * row, as soon as its last input row is done, from the ring's rows into the
 * block's pooled planes [poh * pow][lanes]; at the block's end those go to
 * the output's [o][poh][pow] by the set's rows_put, vl positions at a time,
 * each channel's stores running along its plane (stored row by row across
 * the block's 32 planes they cost P11 a further 4%: docs/perf.md). The
 * channels stay in the vector lanes throughout, so every tap of the pool is
 * a whole vector, where max_pool2d on the unfused plan's NCHW rows splits
 * even and odd columns; and the conv's and the epilogue's outputs (3.2 MB an
 * image in P11) are never stored.
 *
 * Bits: the epilogue rounds as the plan's kernel does (a product, then a
 * sum, never an FMA: -std=c11 compiles with -ffp-contract=off; relu as
 * ir/vmath.h's vm_relu_f32), and each pool output is MAX_OF (k_conv.h) over
 * its window's taps, the column taps of each row and then the rows, in
 * order: that is the first greatest tap, or the last NaN, however the taps
 * are grouped, as max_pool2d's result is.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "../ir/vmath.h"
#include "conv_direct.h"
#include "iter.h"
#include "k_conv.h"
#include "rt.h"

#define RING 3   /* pooled rows kept: a window's rows, k <= 3 */


/* The epilogue on n columns of L lanes, with the product (MUL), the sum
 * (ADD) and relu (RELU) where set; whether any result is a NaN. */
static inline __attribute__((always_inline)) int post_on(float *restrict v, int64_t n, int64_t L,
                                                         const float *restrict sc,
                                                         const float *restrict sh, bool MUL,
                                                         bool ADD, bool RELU)
{
    int32_t nan[RT_CONV_LANES] = {0}, any = 0;   /* per lane: no reduction per column */
    for (int64_t c = 0; c < n; c++, v += L)
        for (int64_t l = 0; l < L; l++) {
            float t = v[l];
            if (MUL)
                t = t * sc[l];
            if (ADD)
                t = t + sh[l];
            if (RELU)
                t = vm_relu_f32(t);
            v[l] = t;
            nan[l] |= t != t;
        }
    for (int64_t l = 0; l < L; l++)
        any |= nan[l];
    return any;
}

RT_CLONES static int post_row(float *restrict v, int64_t n, int64_t L, const float *restrict sc,
                              const float *restrict sh, bool relu)
{
    switch ((sc ? 4 : 0) | (sh ? 2 : 0) | relu) {
    case 7: return post_on(v, n, L, sc, sh, true, true, true);
    case 6: return post_on(v, n, L, sc, sh, true, true, false);
    case 5: return post_on(v, n, L, sc, sh, true, false, true);
    case 4: return post_on(v, n, L, sc, sh, true, false, false);
    case 3: return post_on(v, n, L, sc, sh, false, true, true);
    case 2: return post_on(v, n, L, sc, sh, false, true, false);
    case 1: return post_on(v, n, L, sc, sh, false, false, true);
    default: return post_on(v, n, L, sc, sh, false, false, false);
    }
}

/* Pooled columns of row r ([ow][L]) into h ([pw][L]): column q the maximum
 * over input columns 2q - pad + kw, kw < K, inside [0, ow) (none: -inf);
 * NAN: whether r holds a NaN. */
static inline __attribute__((always_inline)) void cols_on(float *restrict h,
                                                          const float *restrict r, int64_t ow,
                                                          int64_t L, int pad, int64_t pw, int K,
                                                          bool NAN_)
{
    for (int64_t q = 0; q < pw; q++, h += L) {
        int64_t c0 = 2 * q - pad;
        if (c0 >= 0 && c0 + K <= ow) {   /* every tap inside: one pass */
            const float *x0 = r + c0 * L, *x1 = x0 + L, *x2 = x1 + L;
            if (K == 3 && NAN_)
                for (int64_t l = 0; l < L; l++)
                    h[l] = MAX_OF(x2[l], MAX_OF(x1[l], x0[l]));
            else if (K == 3)
                for (int64_t l = 0; l < L; l++)
                    h[l] = MAX_NN(x2[l], MAX_NN(x1[l], x0[l]));
            else if (NAN_)
                for (int64_t l = 0; l < L; l++)
                    h[l] = MAX_OF(x1[l], x0[l]);
            else
                for (int64_t l = 0; l < L; l++)
                    h[l] = MAX_NN(x1[l], x0[l]);
            continue;
        }
        for (int64_t l = 0; l < L; l++)
            h[l] = -INFINITY;
        for (int kw = 0; kw < K; kw++) {   /* MAX_OF(x, -inf) is x */
            int64_t c = c0 + kw;
            for (int64_t l = 0; c >= 0 && c < ow && l < L; l++)
                h[l] = MAX_OF(r[c * L + l], h[l]);
        }
    }
}

RT_CLONES static void pool_cols(float *restrict h, const float *restrict r, int64_t ow, int64_t L,
                                int k, int pad, int64_t pw, int nan)
{
    if (k == 3)
        nan ? cols_on(h, r, ow, L, pad, pw, 3, true) : cols_on(h, r, ow, L, pad, pw, 3, false);
    else
        nan ? cols_on(h, r, ow, L, pad, pw, 2, true) : cols_on(h, r, ow, L, pad, pw, 2, false);
}

/* Pool output row t ([n] floats) from the ring's rows top .. top + k - 1
 * inside [0, oh); nan[r % RING]: whether row r holds a NaN. */
RT_CLONES static void pool_rows(float *restrict t, const float *restrict ring, const int *nan,
                                int64_t top, int k, int64_t oh, int64_t n)
{
    int m = 0;
    for (int kh = 0; kh < k; kh++) {
        int64_t r = top + kh;
        if (r < 0 || r >= oh)
            continue;
        const float *x = ring + r % RING * n;
        if (!m++)
            memcpy(t, x, (size_t)n * sizeof(float));
        else if (nan[r % RING])
            for (int64_t e = 0; e < n; e++)
                t[e] = MAX_OF(x[e], t[e]);
        else
            for (int64_t e = 0; e < n; e++)
                t[e] = MAX_NN(x[e], t[e]);
    }
    for (int64_t e = 0; !m && e < n; e++)
        t[e] = -INFINITY;
}

/* Tile [np][L] to y[o*ys + p], o < no, p < np (no rows_put on this set). */
static void put_scalar(const float *tile, int64_t L, int64_t no, int64_t np, float *y, int64_t ys)
{
    for (int64_t o = 0; o < no; o++)
        for (int64_t p = 0; p < np; p++)
            y[o * ys + p] = tile[p * L + o];
}

static _Atomic int64_t post_runs;

int64_t rt_conv_post_runs(void) { return atomic_load(&post_runs); }

int rt_conv_post_run(const rt_conv_rowsrc *r, const rt_conv_post *q)
{
    int64_t L = r->lanes, pw = q->pow, plane = q->poh * q->pow;
    if (q->k < 1 || q->k > RING || L > RT_CONV_LANES) {
        rt_error("conv2d: no fused pool for a %dx%d window over %lld lanes", q->k, q->k,
                 (long long)L);
        return -1;
    }
    /* the row, the ring, the block's pool output [poh * pow][L] (each
     * channel's plane then stored whole: the stores run along it), the
     * scale, shift and bias */
    size_t bytes = (size_t)((r->cols + RING * pw + plane + 3) * L) * sizeof(float);
    float *buf = rt_alloc(bytes);
    if (!buf) {
        rt_error("conv2d: out of memory for the fused pool's rows (%zu bytes)", bytes);
        return -1;
    }
    float *ring = buf + r->cols * L, *pb = ring + RING * pw * L, *sc = pb + plane * L, *sh = sc + L,
          *bias = sh + L;
    void (*put)(const float *, int64_t, int64_t, int64_t, float *, int64_t) =
        r->put ? r->put : put_scalar;
    for (int64_t ob = 0; ob < r->nob; ob++) {
        int64_t o0 = ob * L, no = r->o - o0 < L ? r->o - o0 : L;
        for (int64_t l = 0; l < L; l++) {
            sc[l] = q->scale && l < no ? q->scale[o0 + l] : 1.0f;
            sh[l] = q->shift && l < no ? q->shift[o0 + l] : 0.0f;
        }
        r->bias(r->ctx, ob, bias);
        int nan[RING] = {0};
        int64_t next = 0;   /* the next pool output row */
        for (int64_t oh = 0; oh < r->oh; oh++) {
            r->row(r->ctx, ob, oh, bias, buf);
            int n = post_row(buf, r->ow, L, q->scale ? sc : NULL, q->shift ? sh : NULL, q->relu);
            nan[oh % RING] = n;
            pool_cols(ring + oh % RING * pw * L, buf, r->ow, L, q->k, q->padw, pw, n);
            for (; next < q->poh; next++) {
                int64_t top = 2 * next - q->padh, last = top + q->k - 1;
                if ((last < r->oh - 1 ? last : r->oh - 1) > oh)
                    break;
                pool_rows(pb + next * pw * L, ring, nan, top, q->k, r->oh, pw * L);
            }
        }
        for (int64_t p0 = 0; p0 < plane; p0 += r->vl)
            put(pb + p0 * L, L, no, plane - p0 < r->vl ? plane - p0 : r->vl,
                q->py + o0 * plane + p0, plane);
    }
    rt_free(buf, bytes);
    atomic_fetch_add(&post_runs, 1);
    return 0;
}
