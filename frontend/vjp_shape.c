/* vjp_shape.c - gradient rules of reductions, views and data movement. A
 * reduction's gradient is put back over the reduced dims (ag_unreduce); a
 * view's is the inverse view; a gather's is a sum of the gradient into the
 * places it read from, written as a one-hot product in tjit ops. */
#include <string.h>

#include "autograd.h"

#define X (c->in[0])
#define Y (c->out)

/* The keepdim attribute: last in a reduction's schema. */
static bool keepdim_of(const ag_ctx *c) { return c->a->a[c->op == OP_var || c->op == OP_std ? 2 : 1].i[0] != 0; }

static tj_tensor *unreduce(const ag_ctx *c, tj_tensor *t) { return ag_unreduce(t, &c->a->a[0], keepdim_of(c), X); }

/* Elements reduced into each result element. */
static int64_t reduced_count(const ag_ctx *c)
{
    uint32_t mask = ir_dims_of(&c->a->a[0], X->ndim);
    int64_t n = 1;
    for (int d = 0; d < X->ndim; d++)
        if (mask >> d & 1)
            n *= X->shape[d];
    return n;
}

/* The reduced dims as a list for tj_sum. */
static int reduced_dims(const ag_ctx *c, int *dims)
{
    uint32_t mask = ir_dims_of(&c->a->a[0], X->ndim);
    int n = 0;
    for (int d = 0; d < X->ndim; d++)
        if (mask >> d & 1)
            dims[n++] = d;
    return n;
}

AG_VJP(sum) { AG_SET(0, unreduce(c, g)); return 0; }
AG_VJP(mean) { AG_SET(0, tj_div_s(unreduce(c, g), (double)reduced_count(c))); return 0; }

/* d prod / d x_i = prod of the others: y / x_i without zeros; with one zero,
 * the product of the non-zeros at the zero and 0 elsewhere; with more, 0. */
AG_VJP(prod)
{
    int dims[TJ_MAX_DIMS], nd = reduced_dims(c, dims);
    tj_tensor *zero = tj_eq_s(X, 0);
    tj_tensor *nz = tj_sum(tj_cast(zero, TJ_I64), dims, nd, true);
    tj_tensor *p1 = tj_prod(tj_where(zero, ag_const(X, 1), X), dims, nd, true);
    tj_tensor *gu = unreduce(c, g);
    tj_tensor *at_zero = ag_masked(tj_mul(gu, p1), tj_logical_and(zero, tj_eq_s(nz, 1)));
    tj_tensor *elsewhere = ag_masked(tj_div(tj_mul(gu, p1), X),
                                     tj_logical_and(tj_logical_not(zero), tj_eq_s(nz, 0)));
    AG_SET(0, tj_add(at_zero, elsewhere));
    return 0;
}

/* Ties share the gradient evenly (PyTorch's amax/amin rule). */
static int extreme_vjp(const ag_ctx *c, tj_tensor *g, tj_tensor **gx)
{
    int dims[TJ_MAX_DIMS], nd = reduced_dims(c, dims);
    tj_tensor *hit = tj_cast(tj_eq(X, unreduce(c, Y)), X->dtype);
    tj_tensor *n = tj_sum(hit, dims, nd, true);
    AG_SET(0, tj_div(tj_mul(unreduce(c, g), hit), n));
    return 0;
}

AG_VJP(amax) { return extreme_vjp(c, g, gx); }
AG_VJP(amin) { return extreme_vjp(c, g, gx); }
AG_VJP(logsumexp) { AG_SET(0, tj_mul(unreduce(c, g), tj_exp(tj_sub(X, unreduce(c, Y))))); return 0; }

/* var: 2 (x - mean) / (N - correction); std: (x - mean) / ((N - correction) y) */
static tj_tensor *centered(const ag_ctx *c)
{
    int dims[TJ_MAX_DIMS], nd = reduced_dims(c, dims);
    return tj_sub(X, tj_mean(X, dims, nd, true));
}

AG_VJP(var)
{
    double dof = (double)(reduced_count(c) - c->a->a[1].i[0]);
    AG_SET(0, tj_mul(unreduce(c, g), tj_mul_s(centered(c), 2.0 / dof)));
    return 0;
}

AG_VJP(std)
{
    double dof = (double)(reduced_count(c) - c->a->a[1].i[0]);
    AG_SET(0, tj_div(tj_mul(unreduce(c, g), centered(c)), tj_mul_s(unreduce(c, Y), dof)));
    return 0;
}

/* ---- views ------------------------------------------------------------------------------ */

static tj_tensor *as_input(const ag_ctx *c, tj_tensor *g) { return tj_reshape(g, X->ndim, X->shape); }

AG_VJP(reshape) { AG_SET(0, as_input(c, g)); return 0; }
AG_VJP(squeeze) { AG_SET(0, as_input(c, g)); return 0; }
AG_VJP(unsqueeze) { AG_SET(0, as_input(c, g)); return 0; }
AG_VJP(expand) { AG_SET(0, g); return 0; }   /* the tape sums over the expanded dims */
AG_VJP(copy) { AG_SET(0, g); return 0; }

AG_VJP(permute)
{
    int inv[TJ_MAX_DIMS];
    for (int k = 0; k < X->ndim; k++)
        inv[ir_norm_dim(c->a->a[0].i[k], X->ndim)] = k;
    AG_SET(0, tj_permute(g, inv));
    return 0;
}

AG_VJP(slice)
{
    int d = ir_norm_dim(c->a->a[0].i[0], X->ndim);
    int64_t start = ir_slice_bound(c->a->a[1].i[0], X->shape[d]);
    AG_SET(0, ag_unslice(g, d, start, c->a->a[3].i[0], X->shape[d]));
    return 0;
}

AG_VJP(flip)
{
    int dims[TJ_MAX_DIMS];
    for (int k = 0; k < c->a->a[0].n; k++)
        dims[k] = (int)c->a->a[0].i[k];
    AG_SET(0, tj_flip(g, dims, c->a->a[0].n));
    return 0;
}

/* ---- data movement ---------------------------------------------------------------------- */

AG_VJP(cat)
{
    int d = ir_norm_dim(c->a->a[0].i[0], Y->ndim);
    int64_t off = 0;
    for (int k = 0; k < c->nin; k++) {
        const tj_tensor *x = c->in[k];
        /* PyTorch's cat skips 1-dim empty inputs of any other shape. */
        int64_t len = x->ndim == Y->ndim ? x->shape[d] : 0;
        AG_SET(k, tj_slice(g, d, off, off + len, 1));
        off += len;
    }
    return 0;
}

/* pads: (before, after) pairs from the last dim; negative values cropped. */
AG_VJP(pad)
{
    const ir_attr *p = &c->a->a[0];
    tj_tensor *r = g;
    for (int k = 0; k < p->n / 2 && r; k++) {
        int d = X->ndim - 1 - k;
        int64_t before = p->i[2 * k], after = p->i[2 * k + 1];
        int64_t kept = X->shape[d] - (before < 0 ? -before : 0) - (after < 0 ? -after : 0);
        int64_t s = before > 0 ? before : 0;
        r = tj_slice(r, d, s, s + (kept > 0 ? kept : 0), 1);
        r = ag_pad_dim(r, d, before < 0 ? -before : 0, after < 0 ? -after : 0);
    }
    AG_SET(0, r);
    return 0;
}

/* one_hot(index, n)[..., j] = (index[...] == j), in dtype dt. */
static tj_tensor *one_hot(tj_tensor *index, int64_t n, tj_dtype dt)
{
    tj_tensor *classes = tj_arange(TJ_I64, 0, (double)n, 1);
    return tj_cast(tj_eq(tj_unsqueeze(index, index ? index->ndim : 0), classes), dt);
}

/* x [.., J, ..] indexed along dim by index [N]: g [.., N, ..] -> [.., J, ..]
 * as g (moved to the last dim) @ one_hot [N, J]. */
static tj_tensor *index_sum(tj_tensor *g, tj_tensor *index, int dim, int64_t J)
{
    int nd = g->ndim, perm[TJ_MAX_DIMS], inv[TJ_MAX_DIMS];
    for (int k = 0, j = 0; k < nd; k++)
        if (k != dim)
            perm[j++] = k;
    perm[nd - 1] = dim;
    for (int k = 0; k < nd; k++)
        inv[perm[k]] = k;
    tj_tensor *r = tj_matmul(tj_permute(g, perm), one_hot(tj_reshape(index, 1, (int64_t[]){-1}), J, g->dtype));
    return r ? tj_permute(r, inv) : NULL;
}

AG_VJP(index_select)
{
    int d = ir_norm_dim(c->a->a[0].i[0], X->ndim);
    AG_SET(0, index_sum(g, c->in[1], d, X->shape[d]));
    return 0;
}

/* gather: y[..i..] = x[..index[..i..]..] along dim. Each g element goes to
 * the x element its index names: sum over i of (index == j) * g, then zeros
 * where x is larger than index in the other dims. */
AG_VJP(gather)
{
    int d = ir_norm_dim(c->a->a[0].i[0], X->ndim);
    tj_tensor *index = c->in[1];
    int nd = X->ndim;
    int64_t J = X->shape[d], shape[TJ_MAX_DIMS];
    for (int k = 0; k < nd; k++)
        shape[k] = k == d ? J : 1;
    tj_tensor *classes = tj_reshape(tj_arange(TJ_I64, 0, (double)J, 1), nd, shape);
    /* [.., I, 1, ..] == [.., 1, J, ..] at dims d, d+1 */
    tj_tensor *hit = tj_eq(tj_unsqueeze(index, d + 1), tj_unsqueeze(classes, d));
    tj_tensor *r = tj_sum(ag_masked(tj_unsqueeze(g, d + 1), hit), (int[]){d}, 1, false);
    for (int k = 0; k < nd && r; k++)
        if (k != d)
            r = ag_pad_dim(r, k, 0, X->shape[k] - r->shape[k]);
    AG_SET(0, r);
    return 0;
}

/* as_strided (remaining prims, issue 11): y[i] = x_flat[off(i)], off(i) =
 * storage_offset + sum(i_d stride_d) over x's elements in row-major order, so
 * the gradient adds g at those offsets (index_add: overlapping windows sum). */
AG_VJP(as_strided)
{
    const ir_attr *sz = &c->a->a[0], *st = &c->a->a[1];
    int n = sz->n;
    int64_t numel = tj_numel(X), flat = -1;
    tj_tensor *off = tj_scalar(TJ_I64, (double)c->a->a[2].i[0]);
    for (int d = 0; d < n; d++) {
        int64_t shape[TJ_MAX_DIMS];
        for (int k = 0; k < n; k++)
            shape[k] = k == d ? sz->i[d] : 1;
        tj_tensor *r = tj_mul_s(tj_arange(TJ_I64, 0, (double)sz->i[d], 1), (double)st->i[d]);
        off = tj_add(off, tj_reshape(r, n, shape));
    }
    off = tj_reshape(tj_expand(off, n, sz->i), 1, &flat);
    tj_tensor *dx = tj_index_add(tj_zeros(g ? g->dtype : TJ_F32, 1, &numel), 0, off,
                                 tj_reshape(g, 1, &flat), 1);
    AG_SET(0, tj_reshape(dx, X->ndim, X->shape));
    return 0;
}
