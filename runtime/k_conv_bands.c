/* k_conv_bands.c - the direct convolution's tasks (conv_direct_int.h): the
 * grid kernel's blocks and the row kernel's rows over the thread pool,
 * whole or in the bands a blocked region asks for on the calling thread
 * (rt_conv_band: bands of output channels or rows, each followed by the
 * region's callback), or, for the row kernel, with the region's epilogue
 * and max pool on each row (rt_conv_post, k_conv_post.c). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conv_direct_int.h"
#include "rt.h"

/* ---- the blocks ------------------------------------------------------------------------ */

/* Copies output block tile [ko][qn] at grid position q0 to the valid
 * columns of output channels o0.. (at most `no` of them) of image n. */
static void store_tile(const dj *j, const float *tile, int64_t n, int64_t o0, int64_t no,
                       int64_t q0, int64_t qn)
{
    const rt_conv_shape *s = &j->s;
    int64_t q1 = q0 + qn < j->qend ? q0 + qn : j->qend;
    for (int64_t o = 0; o < no; o++) {
        int64_t yo = (n * s->o + o0 + o) * j->ycs;
        const float *t = tile + o * qn - q0;
        for (int64_t q = q0; q < q1;) {
            int64_t r = q / j->wq, c = q % j->wq, end = c + (q1 - q);
            if (end > j->wq)
                end = j->wq;
            int64_t e = end < s->ow ? end : s->ow;
            if (c < e)
                put_out(j, yo + r * s->ow + c, t + q, e - c);
            q += end - c;
        }
    }
}

/* Tasks t0..t1: t = (image * groups + group) * bnq + block, the block at
 * grid position qoff + block * qv * VL, or with rseg (blocks that start at
 * every output row: no junk columns computed) segment block % rseg of row
 * rbase + block / rseg, its last one on the tail kernel. */
static void run_blocks(void *ctx, int64_t t0, int64_t t1)
{
    const dj *j = ctx;
    const rt_conv_shape *s = &j->s;
    int64_t ko = j->ko, qn = j->qv * j->k->vl;
    float tile[RT_CONV_TILE] __attribute__((aligned(64)));
    float bias[4];
    for (int64_t t = t0; t < t1; t++) {
        int64_t qb = t % j->bnq, g = (t / j->bnq) % s->groups, n = t / (j->bnq * s->groups);
        int64_t q0 = j->qoff + qb * qn, w = qn;
        rt_conv_block_fn fn = j->fn;
        if (j->rseg) {
            int64_t sg = qb % j->rseg;
            q0 = (j->rbase + qb / j->rseg) * j->wq + sg * qn;
            if (s->ow - sg * qn < qn)
                w = s->ow - sg * qn, fn = j->k->tail.fn;   /* row_align: w is its width */
        }
        const float *xp = j->xq + (n * s->c + g * j->cg) * j->plane + q0;
        /* f32 and the block inside one row's valid columns: straight to y */
        int64_t r = q0 / j->wq, col = q0 % j->wq;
        bool direct = j->dt == TJ_F32 && col + w <= s->ow && q0 + w <= j->qend;
        float *yd = direct ? (float *)j->y + (n * s->o + g * j->og) * j->ycs + r * s->ow + col
                           : NULL;
        for (int64_t ob = j->ob0; ob < j->ob1; ob++) {
            int64_t o0 = ob * ko, no = j->og - o0 < ko ? j->og - o0 : ko;
            for (int64_t o = 0; o < ko; o++)
                bias[o] = o < no ? bias_of(j, g * j->og + o0 + o) : 0.0f;
            const float *wp = j->wk + (g * j->nob + ob) * j->cg * j->ntap * ko;
            if (direct && no == ko) {
                fn(xp, wp, j->cg, j->plane, j->toff, j->ntap, bias, yd + o0 * j->ycs, j->ycs);
                continue;
            }
            fn(xp, wp, j->cg, j->plane, j->toff, j->ntap, bias, tile, w);
            store_tile(j, tile, n, g * j->og + o0, no, q0, w);
        }
    }
}

/* Row kernel tasks t0..t1: t = ((image * groups + group) * nob + channel
 * block) * nrc + row chunk of rows [rr0, rr1); every row of the chunk and
 * segment inside (the block's weights and the image stay in L2). Row chunks
 * only where there are fewer blocks than 4 per thread. Channel o's row oh
 * goes to element o * ycs + oh * ow of y. */
static void run_rows(void *ctx, int64_t t0, int64_t t1)
{
    const dj *j = ctx;
    const rt_conv_shape *s = &j->s;
    int64_t lanes = j->kv * j->k->vl;
    float tile[RT_CONV_TILE] __attribute__((aligned(64)));
    float bias[RT_CONV_LANES];
    int64_t rows = cdiv(j->rr1 - j->rr0, j->nrc);
    for (int64_t tr = t0; tr < t1; tr++) {
        int64_t t = tr / j->nrc, oh0 = j->rr0 + tr % j->nrc * rows;
        int64_t oh1 = oh0 + rows < j->rr1 ? oh0 + rows : j->rr1;
        int64_t ob = t % j->nob, g = (t / j->nob) % s->groups, n = t / (j->nob * s->groups);
        int64_t o0 = g * j->og + ob * lanes;
        int64_t no = j->og - ob * lanes < lanes ? j->og - ob * lanes : lanes;
        for (int64_t o = 0; o < lanes; o++)
            bias[o] = o < no ? bias_of(j, o0 + o) : 0.0f;
        const float *xp = j->xq + (n * s->c + g * j->cg) * j->plane;
        const float *wp = j->wk + (g * j->nob + ob) * j->cg * j->ntap * lanes;
        int64_t y = (n * s->o + o0) * j->ycs;
        float row[RT_CONV_TILE / RT_CONV_LANES];
        for (int64_t oh = oh0; oh < oh1; oh++)
            for (int64_t sg = 0; sg < j->nseg; sg++) {
                int64_t ow0 = sg * j->rp, np = s->ow - ow0 < j->rp ? s->ow - ow0 : j->rp;
                j->fn(xp + oh * j->wq + ow0, wp, j->cg, j->plane, j->toff, j->ntap, bias, tile, 0);
                if (j->dt == TJ_F32 && j->k->rows_put) {
                    j->k->rows_put(tile, lanes, no, np, (float *)j->y + y + oh * s->ow + ow0,
                                   j->ycs);
                    continue;
                }
                for (int64_t o = 0; o < no; o++) {
                    for (int64_t p = 0; p < np; p++)
                        row[p] = tile[p * lanes + o];
                    put_out(j, y + o * j->ycs + oh * s->ow + ow0, row, np);
                }
            }
    }
}

static _Thread_local rt_conv_band *band_hook;

static _Atomic int64_t band_runs;

void rt_conv_band_set(rt_conv_band *b) { band_hook = b; }

rt_conv_band *rt_conv_band_get(void) { return band_hook; }

int64_t rt_conv_band_runs(void) { return atomic_load(&band_runs); }

/* Blocks that start at every output row (rseg) where the row's valid
 * columns are whole blocks and at most one block of the tail kernel: no
 * junk columns computed (the stem: 112 = 4 x 24 + 16, against 2.7% of the
 * grid wasted), and every f32 block stored straight to the output. Each
 * output is the same sum as on the grid's blocks. */
static void row_align(dj *j)
{
    const rt_conv_shape *s = &j->s;
    int64_t vl = j->k->vl, qn = j->qv * vl, rem = s->ow % qn;
    if (!j->k->tail.fn || j->ko != j->k->tail.ko || (rem && rem != j->k->tail.qv * vl))
        return;
    j->rseg = cdiv(s->ow, qn);
    j->nqb = j->bnq = s->oh * j->rseg;
}

/* Row bands of the hook bd: per band of output rows [r0, r1) the blocks
 * from grid position r0 * wq on (the last one runs past r1 * wq; what lies
 * past is computed and dropped), every channel block, stored in the hook's
 * buffer; then bd->done. Every output is the sum of the same products in
 * the same order as in the whole call (a lane's sum does not depend on
 * where its block starts), so the bits are the same. */
static int grid_row_bands(dj *j, rt_conv_band *bd)
{
    const rt_conv_shape *s = &j->s;
    size_t es = tj_dtype_size(j->dt);
    int64_t qn = j->qv * j->k->vl;
    j->ycs = bd->rcs;
    for (int64_t r0 = 0; r0 < s->oh; r0 += bd->rows) {
        int64_t r1 = r0 + bd->rows < s->oh ? r0 + bd->rows : s->oh;
        j->qoff = r0 * j->wq;
        j->qend = r1 * j->wq;
        j->bnq = j->rseg ? (r1 - r0) * j->rseg : cdiv(j->qend - j->qoff, qn);
        j->rbase = r0;
        j->y = (char *)bd->ry + (bd->rtop - r0) * s->ow * (int64_t)es;
        rt_parallel_for(j->bnq, 1, run_blocks, j);
        atomic_fetch_add(&band_runs, 1);
        if (atomic_load(&j->failed) || bd->done(bd->ctx, r0, r1))
            return -1;
    }
    return 0;
}

/* The row kernel's tasks over rows [r0, r1) of every block, the rows
 * chunked so that every thread gets four tasks where there are fewer
 * blocks. */
static void rows_run(dj *j, int64_t r0, int64_t r1)
{
    const rt_conv_shape *s = &j->s;
    int64_t blocks = s->n * s->groups * j->nob;
    j->rr0 = r0;
    j->rr1 = r1;
    j->nrc = cdiv(4 * (int64_t)rt_threads(), blocks);
    j->nrc = j->nrc < r1 - r0 ? j->nrc : r1 - r0;
    rt_parallel_for(blocks * j->nrc, 1, run_rows, j);
}

/* rt_conv_rowsrc's bias: of channel block ob of the one group. */
static void rows_bias(const void *ctx, int64_t ob, float *b)
{
    const dj *j = ctx;
    int64_t lanes = j->kv * j->k->vl, o0 = ob * lanes;
    for (int64_t o = 0; o < lanes; o++)
        b[o] = o0 + o < j->og ? bias_of(j, o0 + o) : 0.0f;
}

/* rt_conv_rowsrc's row: output row oh of channel block ob of the one
 * image and group into buf [nseg * rp][lanes]. */
static void rows_row(const void *ctx, int64_t ob, int64_t oh, const float *b, float *buf)
{
    const dj *j = ctx;
    int64_t lanes = j->kv * j->k->vl;
    const float *wp = j->wk + ob * j->cg * j->ntap * lanes;
    for (int64_t sg = 0; sg < j->nseg; sg++)
        j->fn(j->xq + oh * j->wq + sg * j->rp, wp, j->cg, j->plane, j->toff, j->ntap, b,
              buf + sg * j->rp * lanes, 0);
}

/* The row kernel's rows, whole or in the row bands of the calling thread's
 * hook (rt_conv_band; channel bands are the grid kernel's only): per band
 * of output rows [r0, r1) every block's rows stored in the hook's buffer,
 * then bd->done. A row's sums do not depend on the band, so the bits are
 * the whole call's. */
static int rows_bands(dj *j)
{
    const rt_conv_shape *s = &j->s;
    rt_conv_band *bd = band_hook;
    if (!bd || s->n != 1 || s->groups != 1 || bd->rows <= 0 || bd->rows >= s->oh) {
        rows_run(j, 0, s->oh);
        return 0;
    }
    bd->used = true;
    size_t es = tj_dtype_size(j->dt);
    j->ycs = bd->rcs;
    for (int64_t r0 = 0; r0 < s->oh; r0 += bd->rows) {
        int64_t r1 = r0 + bd->rows < s->oh ? r0 + bd->rows : s->oh;
        j->y = (char *)bd->ry + (bd->rtop - r0) * s->ow * (int64_t)es;
        rows_run(j, r0, r1);
        atomic_fetch_add(&band_runs, 1);
        if (atomic_load(&j->failed) || bd->done(bd->ctx, r0, r1))
            return -1;
    }
    return 0;
}

/* The grid kernel's blocks, whole or in the bands of the calling thread's
 * hook (rt_conv_band). */
static int grid_bands(dj *j)
{
    const rt_conv_shape *s = &j->s;
    rt_conv_band *bd = band_hook;
    int64_t all = s->n * s->groups * j->nqb;
    j->ob0 = 0;
    j->ob1 = j->nob;
    if (bd && s->n == 1 && s->groups == 1 && bd->rows > 0 && bd->rows < s->oh) {
        bd->used = true;
        return grid_row_bands(j, bd);
    }
    if (!bd || s->n != 1 || s->groups != 1 || bd->rows > 0 || bd->chans <= 0 ||
        bd->chans % j->ko || bd->chans >= s->o) {
        rt_parallel_for(all, 1, run_blocks, j);
        return 0;
    }
    bd->used = true;
    char *y = j->y;
    size_t es = tj_dtype_size(j->dt);
    for (int64_t o0 = 0; o0 < s->o; o0 += bd->chans) {
        int64_t o1 = o0 + bd->chans < s->o ? o0 + bd->chans : s->o;
        j->ob0 = o0 / j->ko;
        j->ob1 = cdiv(o1, j->ko);
        j->y = y - (size_t)(o0 * s->oh * s->ow) * es;
        rt_parallel_for(all, 1, run_blocks, j);
        atomic_fetch_add(&band_runs, 1);
        if (atomic_load(&j->failed) || bd->done(bd->ctx, o0, o1))
            return -1;
    }
    return 0;
}

int rt_convd_grid(dj *j)
{
    row_align(j);
    return grid_bands(j);
}

int rt_convd_rows(dj *j)
{
    const rt_conv_shape *s = &j->s;
    rt_conv_band *bd = band_hook;
    if (!bd || !bd->post || j->dt != TJ_F32 || s->n != 1 || s->groups != 1)
        return rows_bands(j);
    bd->used = bd->posted = true;   /* the epilogue and pool on the rows (k_conv_post.c) */
    rt_conv_rowsrc src = {s->o, s->oh, s->ow, j->kv * j->k->vl, j->nob, j->nseg * j->rp, j->k->vl,
                          j, rows_bias, rows_row, j->k->rows_put};
    return rt_conv_post_run(&src, bd->post);
}
