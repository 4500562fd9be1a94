/* vjp_nn.c - gradient rules of contractions and network ops: matmul and
 * linear, conv2d (input gradient as a convolution of the stride-dilated
 * gradient with the flipped kernel; weight gradient as a convolution of the
 * input with the gradient), norms, pools (per kernel offset: strided views of
 * the input, or of max_pool2d's positions, and ag_unslice back), embedding,
 * dropout, attention and cross-entropy (logits, probability targets and class
 * weights). All in tjit ops, so they trace like any other op. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"

#define X (c->in[0])
#define Y (c->out)

static tj_tensor *mT(tj_tensor *t) { return t ? tj_transpose(t, -1, -2) : NULL; }
static tj_tensor *chan_sum(tj_tensor *t);

/* ---- contractions --------------------------------------------------------------------- */

/* torch.matmul: 1-D operands gain a dim (a in front, b behind) that the
 * result drops; batch dims broadcast (the tape sums them back). */
AG_VJP(matmul)
{
    tj_tensor *a = c->in[0], *b = c->in[1];
    bool a1 = a->ndim == 1, b1 = b->ndim == 1;
    tj_tensor *a2 = a1 ? tj_unsqueeze(a, 0) : a, *b2 = b1 ? tj_unsqueeze(b, 1) : b;
    tj_tensor *g2 = g;
    if (a1 && b1)
        g2 = tj_reshape(g, 2, (int64_t[]){1, 1});
    else if (a1)
        g2 = tj_unsqueeze(g, g->ndim - 1);
    else if (b1)
        g2 = tj_unsqueeze(g, g->ndim);
    if (c->need[0]) {
        tj_tensor *ga = tj_matmul(g2, mT(b2));
        AG_SET(0, a1 ? tj_squeeze(ga, (int[]){-2}, 1) : ga);
    }
    if (c->need[1]) {
        tj_tensor *gb = tj_matmul(mT(a2), g2);
        AG_SET(1, b1 ? tj_squeeze(gb, (int[]){-1}, 1) : gb);
    }
    return 0;
}

/* y = x w^T + b, w [out, in] */
AG_VJP(linear)
{
    tj_tensor *w = c->in[1];
    int64_t o = w->shape[0], i = w->shape[1];
    AG_SET(0, tj_matmul(g, w));
    AG_SET(1, tj_matmul(mT(tj_reshape(g, 2, (int64_t[]){-1, o})), tj_reshape(X, 2, (int64_t[]){-1, i})));
    if (c->nin > 2)
        AG_SET(2, g);
    return 0;
}

/* A pair attribute (stride, padding, ...): n == 0 gives dflt, n == 1 both. */
static void pair_of(const ir_attr *a, int64_t dflt0, int64_t dflt1, int64_t *out)
{
    out[0] = a->n > 0 ? a->i[0] : dflt0;
    out[1] = a->n > 1 ? a->i[1] : a->n == 1 ? a->i[0] : dflt1;
}

/* Input gradient: the stride-dilated g correlated with the flipped kernel,
 * per group with in and out channels swapped; padded so each input position
 * gets every output it fed. */
static tj_tensor *conv_grad_input(const ag_ctx *c, tj_tensor *g, const int64_t *st,
                                  const int64_t *pd, const int64_t *dl, int64_t G)
{
    tj_tensor *w = c->in[1];
    int64_t C = X->shape[1], O = w->shape[0], Cg = w->shape[1], Og = O / G;
    tj_tensor *wt = tj_reshape(w, 5, (int64_t[]){G, Og, Cg, w->shape[2], w->shape[3]});
    wt = tj_contiguous(tj_flip(tj_reshape(tj_contiguous(tj_transpose(wt, 1, 2)), 4,
                                          (int64_t[]){C, Og, w->shape[2], w->shape[3]}),
                               (int[]){2, 3}, 2));
    tj_tensor *gd = ag_interleave(ag_interleave(g, 2, st[0]), 3, st[1]);
    /* The full correlation (padding: kernel extent - 1) covers input rows
     * -pd .. (out-1)*stride + extent-1 - pd; keep 0 .. H-1 (zeros past the end
     * for the rows no output read). */
    int64_t p[2];
    for (int k = 0; k < 2; k++)
        p[k] = (w->shape[2 + k] - 1) * dl[k];
    tj_tensor *gx = tj_conv2d(tj_contiguous(gd), wt, NULL, (int64_t[]){1, 1}, p, dl, G);
    for (int k = 0; k < 2 && gx; k++) {
        int64_t len = X->shape[2 + k], have = gx->shape[2 + k] - pd[k];
        gx = tj_slice(gx, 2 + k, pd[k], pd[k] + len, 1);
        if (gx && have < len)
            gx = ag_pad_dim(gx, 2 + k, 0, len - have);
    }
    return gx;
}

/* The n tensors t concatenated along dim 0, at most an op's inputs
 * (FE_MAX_INPUTS) at a time (t is overwritten with the partial results). */
static tj_tensor *cat_many(tj_tensor **t, int64_t n)
{
    while (n > FE_MAX_INPUTS) {
        int64_t m = 0;
        for (int64_t i = 0; i < n; i += FE_MAX_INPUTS) {
            int64_t k = n - i < FE_MAX_INPUTS ? n - i : FE_MAX_INPUTS;
            if (!(t[m++] = k == 1 ? t[i] : tj_cat(t + i, (int)k, 0)))
                return NULL;
        }
        n = m;
    }
    return tj_cat(t, (int)n, 0);
}

/* Weight gradient of G > 1 groups in one convolution: x as Cg images of
 * G*N channels, group-major ([N,G,Cg,H,W] -> [Cg,G,N,H,W]), convolved with g
 * as O filters of N channels in G groups: out[cl, o] sums x[n, group(o)*Cg +
 * cl] * g[n, o] over n, a group's filters reading its own N channels. For a
 * static batch (G*N of a symbolic one is no symbol plus a count). */
static tj_tensor *conv_grad_weight_grouped(const ag_ctx *c, tj_tensor *g, const int64_t *st,
                                           const int64_t *pd, const int64_t *dl, int64_t G)
{
    tj_tensor *w = c->in[1];
    int64_t N = X->shape[0], Cg = w->shape[1], H = X->shape[2], W = X->shape[3];
    tj_tensor *xg = tj_reshape(X, 5, (int64_t[]){N, G, Cg, H, W});
    xg = tj_reshape(tj_contiguous(tj_permute(xg, (int[]){2, 1, 0, 3, 4})), 4,
                    (int64_t[]){Cg, G * N, H, W});
    tj_tensor *r = tj_conv2d(xg, tj_contiguous(tj_transpose(g, 0, 1)), NULL, dl, pd, st, G);
    r = tj_slice(tj_slice(r, 2, 0, w->shape[2], 1), 3, 0, w->shape[3], 1);
    return r ? tj_contiguous(tj_transpose(r, 0, 1)) : NULL;
}

/* Weight gradient, per group: the input (channels as batch) convolved with g
 * (batch as channels), stride and dilation swapped, cut to the kernel size;
 * groups over a static batch in one convolution. */
static tj_tensor *conv_grad_weight(const ag_ctx *c, tj_tensor *g, const int64_t *st,
                                   const int64_t *pd, const int64_t *dl, int64_t G)
{
    tj_tensor *w = c->in[1];
    int64_t Cg = w->shape[1], Og = w->shape[0] / G;
    ir_type tx;
    fe_trace_type(X, &tx);
    if (G > 1 && !IR_IS_SYM(tx.shape[0]))
        return conv_grad_weight_grouped(c, g, st, pd, dl, G);
    if (G > INT_MAX) {   /* tj_cat's count */
        rt_error("conv2d backward: %lld groups", (long long)G);
        return NULL;
    }
    tj_tensor **parts = malloc(sizeof *parts * (size_t)G), *r = NULL;
    if (!parts) {
        rt_error("conv2d backward: out of memory for %lld groups", (long long)G);
        return NULL;
    }
    int64_t k = 0;
    for (; k < G; k++) {
        tj_tensor *xg = tj_contiguous(tj_transpose(tj_slice(X, 1, k * Cg, (k + 1) * Cg, 1), 0, 1));
        tj_tensor *gg = tj_contiguous(tj_transpose(tj_slice(g, 1, k * Og, (k + 1) * Og, 1), 0, 1));
        tj_tensor *p = tj_conv2d(xg, gg, NULL, dl, pd, st, 1);
        p = tj_slice(tj_slice(p, 2, 0, w->shape[2], 1), 3, 0, w->shape[3], 1);
        if (!(parts[k] = tj_transpose(p, 0, 1)))
            break;
    }
    if (k == G)
        r = G == 1 ? tj_contiguous(parts[0]) : cat_many(parts, G);
    free(parts);
    return r;
}

AG_VJP(conv2d)
{
    int64_t st[2], pd[2], dl[2], G = c->a->a[3].i[0] > 0 ? c->a->a[3].i[0] : 1;
    pair_of(&c->a->a[0], 1, 1, st);
    pair_of(&c->a->a[1], 0, 0, pd);
    pair_of(&c->a->a[2], 1, 1, dl);
    if (g->shape[2] == 0 || g->shape[3] == 0 || X->shape[0] == 0) {
        AG_SET(0, tj_zeros(X->dtype, X->ndim, X->shape));
        AG_SET(1, tj_zeros(c->in[1]->dtype, 4, c->in[1]->shape));
    } else {
        AG_SET(0, conv_grad_input(c, g, st, pd, dl, G));
        AG_SET(1, conv_grad_weight(c, g, st, pd, dl, G));
    }
    if (c->nin > 2)
        AG_SET(2, chan_sum(g));
    return 0;
}

/* ---- normalization ---------------------------------------------------------------------- */

AG_VJP(softmax)
{
    int d = (int)c->a->a[0].i[0];
    AG_SET(0, tj_mul(Y, tj_sub(g, tj_sum(tj_mul(g, Y), &d, 1, true))));
    return 0;
}

AG_VJP(log_softmax)
{
    int d = (int)c->a->a[0].i[0];
    AG_SET(0, tj_sub(g, tj_mul(tj_exp(Y), tj_sum(g, &d, 1, true))));
    return 0;
}

/* The last n dims of x. */
static int last_dims(const tj_tensor *x, int n, int *dims)
{
    for (int k = 0; k < n; k++)
        dims[k] = x->ndim - n + k;
    return n;
}

/* xhat = (x - mean) rstd; gx = rstd (gh - mean(gh) - xhat mean(gh xhat)), gh = g w */
AG_VJP(layer_norm)
{
    int dims[TJ_MAX_DIMS], nd = last_dims(X, (int)c->a->a[0].i[0], dims);
    tj_tensor *w = c->nin > 1 ? c->in[1] : NULL;
    tj_tensor *mean = tj_mean(X, dims, nd, true);
    tj_tensor *rstd = tj_rsqrt(tj_add_s(tj_var(X, dims, nd, 0, true), c->a->a[1].f));
    tj_tensor *xhat = tj_mul(tj_sub(X, mean), rstd);
    tj_tensor *gh = w ? tj_mul(g, w) : g;
    if (c->need[0]) {
        tj_tensor *t = tj_sub(tj_sub(gh, tj_mean(gh, dims, nd, true)),
                              tj_mul(xhat, tj_mean(tj_mul(gh, xhat), dims, nd, true)));
        AG_SET(0, tj_mul(rstd, t));
    }
    if (c->nin > 1)
        AG_SET(1, tj_mul(g, xhat));
    if (c->nin > 2)
        AG_SET(2, g);
    return 0;
}

/* y = x r w, r = rsqrt(mean(x^2) + eps); gx = r (gh - x r^2 mean(gh x)) */
AG_VJP(rms_norm)
{
    int dims[TJ_MAX_DIMS], nd = last_dims(X, (int)c->a->a[0].i[0], dims);
    tj_tensor *w = c->nin > 1 ? c->in[1] : NULL;
    tj_tensor *r = tj_rsqrt(tj_add_s(tj_mean(tj_square(X), dims, nd, true), c->a->a[1].f));
    tj_tensor *gh = w ? tj_mul(g, w) : g;
    if (c->need[0]) {
        tj_tensor *t = tj_mul(tj_mul(X, tj_square(r)), tj_mean(tj_mul(gh, X), dims, nd, true));
        AG_SET(0, tj_mul(r, tj_sub(gh, t)));
    }
    if (c->nin > 1)
        AG_SET(1, tj_mul(g, tj_mul(X, r)));
    return 0;
}

/* [C] as [1, C, 1, ...] against x */
static tj_tensor *chan(const tj_tensor *x, tj_tensor *t)
{
    int64_t shape[TJ_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        shape[d] = d == 1 ? -1 : 1;
    return t ? tj_reshape(t, x->ndim, shape) : NULL;
}

/* Sums over every dim but the channel dim 1: [N, C, ...] -> [C]. */
static tj_tensor *chan_sum(tj_tensor *t)
{
    int dims[TJ_MAX_DIMS], n = 0;
    for (int d = 0; t && d < t->ndim; d++)
        if (d != 1)
            dims[n++] = d;
    return t ? tj_sum(t, dims, n, false) : NULL;
}

/* y = (x - mean) s w + b, s = rsqrt(var + eps), per channel */
AG_VJP(batch_norm)
{
    tj_tensor *mean = c->in[1], *var = c->in[2];
    tj_tensor *w = c->nin > 3 ? c->in[3] : NULL;
    tj_tensor *s = tj_rsqrt(tj_add_s(var, c->a->a[0].f));
    tj_tensor *sw = w ? tj_mul(s, w) : s;
    tj_tensor *xc = tj_sub(X, chan(X, mean));
    AG_SET(0, tj_mul(g, chan(X, sw)));
    AG_SET(1, tj_neg(chan_sum(tj_mul(g, chan(X, sw)))));
    if (c->need[2]) {
        tj_tensor *gxc = chan_sum(tj_mul(g, xc));
        tj_tensor *ds = tj_mul_s(tj_mul(s, tj_square(s)), -0.5);
        AG_SET(2, tj_mul(tj_mul(gxc, w ? w : ag_const(X, 1)), ds));
    }
    if (c->nin > 3)
        AG_SET(3, chan_sum(tj_mul(g, tj_mul(xc, chan(X, s)))));
    if (c->nin > 4)
        AG_SET(4, chan_sum(g));
    return 0;
}

/* ---- pools ------------------------------------------------------------------------------ */

/* A pool's geometry; the pooled dims are the last two. pr is the padding
 * after the input: pd, or more where ceil mode hangs the last window over it. */
typedef struct pool_geom {
    int64_t k[2], st[2], pd[2], pr[2], dl[2], out[2];
} pool_geom;

static void pool_geom_of(const ag_ctx *c, bool dilation, pool_geom *pg)
{
    pair_of(&c->a->a[0], 1, 1, pg->k);
    pair_of(&c->a->a[1], pg->k[0], pg->k[1], pg->st);
    pair_of(&c->a->a[2], 0, 0, pg->pd);
    if (dilation)
        pair_of(&c->a->a[3], 1, 1, pg->dl);
    else
        pg->dl[0] = pg->dl[1] = 1;
    for (int d = 0; d < 2; d++) {
        pg->out[d] = Y->shape[Y->ndim - 2 + d];
        int64_t end = (pg->out[d] - 1) * pg->st[d] + pg->dl[d] * (pg->k[d] - 1) + 1;
        int64_t over = end - X->shape[X->ndim - 2 + d] - pg->pd[d];
        pg->pr[d] = over > pg->pd[d] ? over : pg->pd[d];
    }
}

/* The strided view of the padded input xp holding, at each output
 * position, the element at kernel offset (i, j) of its window. */
static tj_tensor *window(tj_tensor *xp, const pool_geom *pg, int64_t i, int64_t j)
{
    int h = xp ? xp->ndim - 2 : 0;
    int64_t o[2] = {i * pg->dl[0], j * pg->dl[1]};
    for (int k = 0; k < 2 && xp; k++)
        xp = tj_slice(xp, h + k, o[k], o[k] + (pg->out[k] - 1) * pg->st[k] + 1, pg->st[k]);
    return xp;
}

/* The adjoint of window: t (output-shaped) placed into zeros of size full. */
static tj_tensor *unwindow(tj_tensor *t, const int64_t *full, const pool_geom *pg, int64_t i,
                           int64_t j)
{
    int h = t ? t->ndim - 2 : 0;
    int64_t o[2] = {i * pg->dl[0], j * pg->dl[1]};
    for (int k = 0; k < 2 && t; k++)
        t = ag_unslice(t, h + k, o[k], pg->st[k], full[k]);
    return t;
}

/* Pads the last two dims of x by pg's padding with value. */
static tj_tensor *pool_pad(tj_tensor *x, const pool_geom *pg, double value)
{
    return tj_pad(x, (int64_t[]){pg->pd[1], pg->pr[1], pg->pd[0], pg->pr[0]}, 2, value);
}

/* The padding cut off again: back to x's last two dims. */
static tj_tensor *pool_crop(tj_tensor *t, const tj_tensor *x, const pool_geom *pg)
{
    int h = x->ndim - 2;
    for (int k = 0; k < 2 && t; k++)
        t = tj_slice(t, h + k, pg->pd[k], pg->pd[k] + x->shape[h + k], 1);
    return t;
}

/* Each output's gradient goes to the element its index names (the op
 * max_pool2d_indices: PyTorch's choice, the first maximum of the window, the
 * last NaN). Per kernel offset, the window of the padded map of positions
 * (-1 in the padding) is compared with the indices: one offset matches. */
AG_VJP(max_pool2d)
{
    pool_geom pg;
    pool_geom_of(c, true, &pg);
    int h = X->ndim - 2;
    int64_t hw[2] = {X->shape[h], X->shape[h + 1]};
    tj_tensor *idx = fe_apply(OP_max_pool2d_indices, c->in, 1, c->a);
    tj_tensor *pos = tj_arange(TJ_I64, 0, (double)(hw[0] * hw[1]), 1), *sum = NULL;
    if (!(pos = pool_pad(tj_reshape(pos, 2, hw), &pg, -1)) || !idx)
        return -1;
    int64_t full[2] = {pos->shape[0], pos->shape[1]};
    for (int64_t i = 0; i < pg.k[0]; i++) {
        for (int64_t j = 0; j < pg.k[1]; j++) {
            tj_tensor *hit = tj_eq(window(pos, &pg, i, j), idx);
            tj_tensor *part = unwindow(ag_masked(g, hit), full, &pg, i, j);
            if (!(sum = sum ? tj_add(sum, part) : part))
                return -1;
        }
    }
    AG_SET(0, pool_crop(sum, X, &pg));
    return 0;
}

/* Each output's gradient, over its divisor, to every input element of its
 * window. The divisor of each output is read off the op itself: the pool of
 * ones is (inputs counted) / divisor, whatever made the divisor (the padding
 * counted or not, ceil mode's clipped windows, divisor_override). */
AG_VJP(avg_pool2d)
{
    pool_geom pg;
    pool_geom_of(c, false, &pg);
    int h = X->ndim - 2;
    int64_t H = X->shape[h], W = X->shape[h + 1];
    tj_tensor *ones = tj_ones(g->dtype, 4, (int64_t[]){1, 1, H, W});
    tj_tensor *onesp = pool_pad(ones, &pg, 0.0), *count = NULL;
    if (!onesp)
        return -1;
    for (int64_t i = 0; i < pg.k[0]; i++)
        for (int64_t j = 0; j < pg.k[1]; j++)
            if (!(count = count ? tj_add(count, window(onesp, &pg, i, j)) : window(onesp, &pg, i, j)))
                return -1;
    tj_tensor *pooled = fe_apply(OP_avg_pool2d, &ones, 1, c->a);
    tj_tensor *gs = tj_mul(g, tj_reshape(tj_div(pooled, count), 2, (int64_t[]){pg.out[0], pg.out[1]}));
    tj_tensor *sum = NULL;
    int64_t full[2] = {onesp->shape[2], onesp->shape[3]};
    for (int64_t i = 0; i < pg.k[0]; i++)
        for (int64_t j = 0; j < pg.k[1]; j++)
            if (!(sum = sum ? tj_add(sum, unwindow(gs, full, &pg, i, j)) : unwindow(gs, full, &pg, i, j)))
                return -1;
    AG_SET(0, pool_crop(sum, X, &pg));
    return 0;
}

AG_NONDIFF(max_pool2d_indices, "integer result")
AG_NONDIFF(quantize_per_tensor, "integer result")
AG_NONDIFF(quantize_per_channel, "integer result")
AG_NONDIFF(dequantize, "an integer input")
AG_NONDIFF(qlinear, "integer inputs (the quantization fold's int8 GEMM)")
AG_NONDIFF(qconv2d, "integer inputs (the quantization fold's int8 convolution)")

/* ---- the rest ------------------------------------------------------------------------------ */

/* weight [V, D], indices [...] -> [..., D]: rows summed back by index. */
AG_VJP(embedding)
{
    tj_tensor *w = c->in[0];
    int64_t d = w->shape[1];
    tj_tensor *rows = tj_cast(tj_reshape(c->in[1], 1, (int64_t[]){-1}), TJ_I64);
    AG_SET(0, tj_index_add(tj_zeros(g->dtype, 2, w->shape), 0, rows, tj_reshape(g, 2, (int64_t[]){-1, d}), 1.0));
    return 0;
}

/* g times the mask scaled by 1/(1-p), the mask drawn again from the op's
 * seed and offset (the same dropout of ones: kept where nonzero; of x's
 * shape, symbolic dims too), a bool read by the select itself: what a
 * compiled backward saves, a byte an element. g * 0 where dropped, as
 * PyTorch's product (an infinite gradient there gives NaN). */
AG_VJP(dropout)
{
    double p = c->a->a[0].f;
    tj_tensor *ones = tj_ones_like(X);
    tj_tensor *drawn = ones ? fe_apply(OP_dropout, &ones, 1, c->a) : NULL;
    tj_tensor *keep = drawn ? tj_ne_s(drawn, 0) : NULL;
    AG_SET(0, keep ? tj_where(keep, tj_mul_s(g, p < 1 ? 1.0 / (1.0 - p) : 0.0), tj_mul_s(g, 0.0)) : NULL);
    return 0;
}

/* 0 .. n-1 (i64) along dim of t, n its size: over a symbolic dim, a cumsum
 * of ones (fe_sym_full), so the graph holds at every size. */
static tj_tensor *positions_along(const tj_tensor *t, int dim)
{
    ir_type ty;
    fe_trace_type(t, &ty);
    tj_tensor *ones = IR_IS_SYM(ty.shape[dim]) ? fe_sym_full(ty.shape[dim], 1, 0, 1.0, TJ_I64) : NULL;
    return ones ? tj_sub_s(tj_cumsum(ones, 0), 1) : tj_arange(TJ_I64, 0, (double)t->shape[dim], 1);
}

/* s = q k^T scale (+ mask), p = softmax(s), y = p v */
AG_VJP(sdpa)
{
    tj_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
    tj_tensor *mask = c->nin > 3 ? c->in[3] : NULL;
    double scale = c->a->a[1].f > 0 ? c->a->a[1].f : 1.0 / sqrt((double)q->shape[q->ndim - 1]);
    tj_tensor *s = tj_mul_s(tj_matmul(q, mT(k)), scale);
    if (mask && mask->dtype == TJ_BOOL)
        s = tj_where(mask, s, ag_const(q, -INFINITY));
    else if (mask)
        s = tj_add(s, mask);
    if (c->a->a[0].i[0]) {
        tj_tensor *row = tj_unsqueeze(positions_along(q, q->ndim - 2), 1);
        tj_tensor *col = positions_along(k, k->ndim - 2);
        s = tj_where(tj_le(col, row), s, ag_const(q, -INFINITY));
    }
    tj_tensor *p = tj_softmax(s, -1);
    tj_tensor *gp = tj_matmul(g, mT(v));
    int last = -1;
    tj_tensor *gs = tj_mul(p, tj_sub(gp, tj_sum(tj_mul(gp, p), &last, 1, true)));
    AG_SET(0, tj_mul_s(tj_matmul(gs, k), scale));
    AG_SET(1, tj_mul_s(tj_matmul(mT(gs), q), scale));
    AG_SET(2, tj_matmul(mT(p), g));
    if (mask)
        AG_SET(3, gs);
    return 0;
}

/* ---- cross-entropy ---------------------------------------------------------------------- */

/* What a cross-entropy gradient needs (k_loss.c's names): the class dim cd,
 * C, the label smoothing e, the weights wb broadcast along cd (or NULL),
 * softmax p and log_softmax ls of the logits. */
typedef struct ce_parts {
    int cd;
    int64_t ncls, red;
    double e;
    tj_tensor *wb, *p, *ls;
} ce_parts;

/* g, a gradient of the reduced loss, as a factor per row broadcast along cd:
 * none: g unsqueezed at cd; sum: g; mean: g / den. */
static tj_tensor *ce_row_scale(const ce_parts *k, tj_tensor *g, tj_tensor *den)
{
    if (k->red == TJ_REDUCTION_NONE)
        return tj_unsqueeze(g, k->cd);
    return k->red == TJ_REDUCTION_SUM ? g : tj_div(g, den);
}

/* A [C]-shaped sum of t over every dim but cd. */
static tj_tensor *ce_class_sum(const ce_parts *k, tj_tensor *t)
{
    int dims[TJ_MAX_DIMS], n = 0;
    for (int d = 0; t && d < t->ndim; d++)
        if (d != k->cd)
            dims[n++] = d;
    return n ? tj_sum(t, dims, n, false) : t;
}

/* probabilities: row loss -sum_c w_c q_c ls_c, q = t (1 - e) + e / C;
 * d/dx = (sum_c w_c q_c) p - w q, d/dt = -(1 - e) w ls, d/dw = -q ls */
static int ce_vjp_probs(const ag_ctx *c, const ce_parts *k, tj_tensor *g, tj_tensor **gx)
{
    tj_tensor *t = c->in[1];
    tj_tensor *q = k->e > 0 ? tj_add_s(tj_mul_s(t, 1 - k->e), k->e / (double)k->ncls) : t;
    tj_tensor *qw = k->wb ? tj_mul(q, k->wb) : q;
    uint32_t rows = ~(uint32_t)0 >> (32 - X->ndim) & ~(1u << k->cd);   /* every dim but the classes' */
    tj_tensor *s = ce_row_scale(k, g, fe_count(X, rows, g->dtype));
    int cd = k->cd;
    AG_SET(0, tj_mul(s, tj_sub(tj_mul(tj_sum(qw, &cd, 1, true), k->p), qw)));
    tj_tensor *wls = k->wb ? tj_mul(k->ls, k->wb) : k->ls;
    AG_SET(1, tj_mul(s, tj_mul_s(wls, -(1 - k->e))));
    if (c->nin > 2)
        AG_SET(2, ce_class_sum(k, tj_mul(s, tj_neg(tj_mul(q, k->ls)))));
    return 0;
}

/* indices: row loss (1 - e) w_t (-ls_t) + e/C sum_c w_c (-ls_c) where t is
 * counted (valid), else 0; with hot the one-hot of t on valid rows and W the
 * weights' sum: d/dx = (1 - e) w_t (p - hot) + e/C valid (W p - w),
 * d/dw = -ls ((1 - e) hot + e/C valid), and a mean divides by D = sum w_t
 * (so d/dw of the mean L also has -L hot / D). */
static int ce_vjp_indices(const ag_ctx *c, const ce_parts *k, tj_tensor *g, tj_tensor **gx)
{
    tj_tensor *t = c->in[1], *w = c->nin > 2 ? c->in[2] : NULL;
    int cd = k->cd;
    tj_tensor *t64 = tj_cast(t, TJ_I64);
    tj_tensor *valid = tj_ne(t64, tj_scalar(TJ_I64, (double)c->a->a[1].i[0]));
    tj_tensor *tc = tj_where(valid, t64, tj_scalar(TJ_I64, 0));
    tj_tensor *classes = tj_arange(TJ_I64, 0, (double)k->ncls, 1);
    for (int j = 0; j < X->ndim - 1 - cd; j++)
        classes = tj_unsqueeze(classes, -1);
    tj_tensor *vu = tj_unsqueeze(valid, cd);
    tj_tensor *hot = tj_cast(tj_logical_and(tj_eq(tj_unsqueeze(tc, cd), classes), vu), X->dtype);
    tj_tensor *wt = k->wb ? tj_sum(tj_mul(hot, k->wb), &cd, 1, false) : tj_cast(valid, X->dtype);
    tj_tensor *s = ce_row_scale(k, g, k->red == TJ_REDUCTION_MEAN ? tj_sum(wt, NULL, 0, false) : NULL);
    tj_tensor *vf = tj_cast(vu, X->dtype);
    tj_tensor *d = tj_mul(tj_mul_s(tj_unsqueeze(wt, cd), 1 - k->e), tj_sub(k->p, hot));
    if (k->e > 0) {
        tj_tensor *wsum = w ? tj_sum(w, NULL, 0, false) : ag_const(X, (double)k->ncls);
        tj_tensor *sm = tj_sub(tj_mul(wsum, k->p), k->wb ? k->wb : ag_const(X, 1));
        d = tj_add(d, tj_mul(tj_mul_s(vf, k->e / (double)k->ncls), sm));
    }
    AG_SET(0, tj_mul(s, d));
    if (!w)
        return 0;
    tj_tensor *dw = tj_mul(tj_neg(k->ls), tj_add(tj_mul_s(hot, 1 - k->e),
                                                 tj_mul_s(vf, k->e / (double)k->ncls)));
    dw = ag_masked(dw, vu);   /* ignored rows: 0 even where ls is infinite */
    if (k->red == TJ_REDUCTION_MEAN)
        dw = tj_sub(dw, tj_mul(Y, hot));
    AG_SET(2, ce_class_sum(k, tj_mul(s, dw)));
    return 0;
}

AG_VJP(cross_entropy)
{
    tj_tensor *w = c->nin > 2 ? c->in[2] : NULL;
    ce_parts k = {.cd = X->ndim == 1 ? 0 : 1, .red = c->a->a[0].i[0],
                  .e = c->a->a[2].f > 0 ? c->a->a[2].f : 0};
    k.ncls = X->shape[k.cd];
    k.wb = w;
    for (int j = 0; w && j < X->ndim - 1 - k.cd; j++)
        k.wb = tj_unsqueeze(k.wb, -1);
    k.p = tj_softmax(X, k.cd);
    k.ls = tj_log_softmax(X, k.cd);
    if (!k.p || !k.ls || (w && !k.wb))
        return -1;
    if (ir_dtype_is_float(c->in[1]->dtype))
        return ce_vjp_probs(c, &k, g, gx);
    return ce_vjp_indices(c, &k, g, gx);
}
