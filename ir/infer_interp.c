/* infer_interp.c - shape/dtype rules of ops.def's "interpolate, embedding_bag,
 * einsum, scatter_reduce" block (scatter_reduce: infer_idx.c), DCOMP rows
 * decomposed in passes/decomp_interp.c:
 *
 *   upsample_nearest     x [N,C,s1..sk] (k = 1..3 entries of size), float or u8
 *                        -> [N,C,size...]
 *   upsample_bilinear2d  x [N,C,H,W] float, size [h, w] -> [N,C,h,w]
 *   upsample_bicubic2d   the same
 *   embedding_bag        weight [V,D] float; indices i64/i32, 1-D with offsets
 *                        (1-D, indices' dtype) or 2-D [B,L] without;
 *                        per_sample_weights of indices' shape and weight's dtype,
 *                        mode sum only -> [B, D] (B: offsets' length, less one
 *                        with include_last_offset; 2-D: L's rows, less one too);
 *                        padding_idx none ([]) or one row of weight ([p], 0 <= p < V)
 * Output sizes must be positive, scales not negative, the resized dims static
 * and nonempty (torch's checks).
 */
#include "infer.h"

static int resize(const ir_type *x, const ir_attr *size, const double *scales, int k,
                  ir_type *out, char *err, size_t nerr)
{
    if (size->n != k)
        return ir_fail(err, nerr, "size must have %d entries, got %d", k, size->n);
    if (x->ndim != k + 2)
        return ir_fail(err, nerr, "input must be %d-D [N,C,...] for %d output sizes, got %d-D",
                       k + 2, k, x->ndim);
    ir_set(out, x->dtype, x->ndim, x->shape);
    for (int j = 0; j < k; j++) {
        int64_t in = x->shape[2 + j], o = size->i[j];
        if (in <= 0)
            return ir_fail(err, nerr, "resized dim %d is %s (it must be static and nonempty)",
                           2 + j, IR_DIM(in));
        if (o <= 0)
            return ir_fail(err, nerr, "output size %lld must be positive", (long long)o);
        if (!(scales[j] >= 0))
            return ir_fail(err, nerr, "scale %g must not be negative", scales[j]);
        out->shape[2 + j] = o;
    }
    return 0;
}

int ir_infer_upsample_nearest(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    int k = a->a[0].n;
    if (k < 1 || k > 3)
        return ir_fail(err, nerr, "size must have 1, 2 or 3 entries, got %d", k);
    if (!ir_dtype_is_float(in[0]->dtype) && in[0]->dtype != TJ_U8)
        return ir_fail(err, nerr, "input must be float or u8, got %s",
                       tj_dtype_name(in[0]->dtype));
    double sc[3] = {a->a[1].f, a->a[2].f, a->a[3].f};
    return resize(in[0], &a->a[0], sc + 3 - k, k, out, err, nerr);
}

int ir_infer_upsample_bilinear2d(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (!ir_dtype_is_float(in[0]->dtype))
        return ir_fail(err, nerr, "input must be float, got %s", tj_dtype_name(in[0]->dtype));
    double sc[2] = {a->a[2].f, a->a[3].f};
    return resize(in[0], &a->a[0], sc, 2, out, err, nerr);
}

int ir_infer_upsample_bicubic2d(IR_INFER_ARGS)
{
    return ir_infer_upsample_bilinear2d(op, in, nin, a, out, err, nerr);
}

static bool index_dtype(tj_dtype dt) { return dt == TJ_I64 || dt == TJ_I32; }

int ir_infer_embedding_bag(IR_INFER_ARGS)
{
    (void)op;
    const ir_type *w = in[0], *ix = in[1], *off = nin > 2 ? in[2] : NULL;
    const ir_type *psw = nin > 3 ? in[3] : NULL;
    int64_t mode = a->a[0].i[0];
    bool last = a->a[1].i[0] != 0;
    if (!ir_dtype_is_float(w->dtype) || w->ndim != 2)
        return ir_fail(err, nerr, "weight must be a 2-D float tensor [V,D], got %s %d-D",
                       tj_dtype_name(w->dtype), w->ndim);
    if (!index_dtype(ix->dtype))
        return ir_fail(err, nerr, "indices must be i64 or i32, got %s", tj_dtype_name(ix->dtype));
    if (mode != TJ_REDUCE_SUM && mode != TJ_REDUCE_MEAN && mode != TJ_REDUCE_AMAX)
        return ir_fail(err, nerr, "mode must be sum, mean or amax (max), got %s",
                       ir_attr_word(IR_ATTR_REDUCE_OP, mode) ? ir_attr_word(IR_ATTR_REDUCE_OP, mode)
                                                             : "?");
    int64_t bags;
    if (ix->ndim == 2) {
        if (off)
            return ir_fail(err, nerr, "offsets must be absent when indices are 2-D");
        bags = ix->shape[0];
    } else if (ix->ndim == 1) {
        if (!off)
            return ir_fail(err, nerr, "1-D indices need offsets");
        if (!index_dtype(off->dtype) || off->ndim != 1)
            return ir_fail(err, nerr, "offsets must be 1-D i64 or i32, got %s %d-D",
                           tj_dtype_name(off->dtype), off->ndim);
        bags = off->shape[0];
    } else {
        return ir_fail(err, nerr, "indices must be 1-D (with offsets) or 2-D, got %d-D", ix->ndim);
    }
    for (int d = 0; d < ix->ndim; d++)
        if (ix->shape[d] < 0 || bags < 0)
            return ir_fail(err, nerr, "indices and offsets must have static sizes");
    if (last && bags < 1)
        return ir_fail(err, nerr, "include_last_offset needs at least one offset");
    if (psw) {
        if (mode != TJ_REDUCE_SUM)
            return ir_fail(err, nerr, "per_sample_weights is only for mode sum");
        if (psw->dtype != w->dtype)
            return ir_fail(err, nerr, "per_sample_weights has dtype %s, weight %s",
                           tj_dtype_name(psw->dtype), tj_dtype_name(w->dtype));
        bool same = psw->ndim == ix->ndim;
        for (int d = 0; same && d < ix->ndim; d++)
            same = psw->shape[d] == ix->shape[d];
        if (!same)
            return ir_fail(err, nerr, "per_sample_weights must have the shape of indices");
    }
    const ir_attr *pad = &a->a[2];
    if (pad->n > 1)
        return ir_fail(err, nerr, "padding_idx has %d entries (none or one)", pad->n);
    if (pad->n == 1 && (pad->i[0] < 0 || (w->shape[0] >= 0 && pad->i[0] >= w->shape[0])))
        return ir_fail(err, nerr, "padding_idx %lld is not a row of weight's %s",
                       (long long)pad->i[0], IR_DIM(w->shape[0]));
    ir_set(out, w->dtype, 2, (int64_t[]){bags - last, w->shape[1]});
    return 0;
}
