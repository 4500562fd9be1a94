/* infer_nn.c - shape/dtype rules of the neural-network composites embedding,
 * dropout, sdpa (scaled dot-product attention) and cross_entropy.
 *
 *   embedding      weight [V,D] float, indices i32/i64 [...]  -> [..., D]
 *   dropout        x float, attr p in [0, 1]                  -> like x
 *   sdpa           q [...,L,E], k [...,S,E], v [...,S,Ev], mask? -> [...,L,Ev]
 *                  (batch dims broadcast; mask bool or q's dtype, broadcastable
 *                  to [...,L,S]; causal and mask exclude each other)
 *   cross_entropy  logits [C], [N,C] or [N,C,d...] float; target of class
 *                  indices (i32/i64, logits' shape without C) or of class
 *                  probabilities (float, logits' shape); weight? [C]
 *                  -> the batch shape (reduction none) or 0-dim
 */
#include <string.h>

#include "infer.h"

static bool is_index_dtype(tj_dtype dt) { return dt == TJ_I32 || dt == TJ_I64; }

int ir_infer_embedding(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    const ir_type *w = in[0], *idx = in[1];
    if (w->ndim != 2)
        return ir_fail(err, nerr, "weight must be 2-D [V, D], got %d dims", w->ndim);
    if (!is_index_dtype(idx->dtype))
        return ir_fail(err, nerr, "indices must be i32 or i64, got %s",
                       tj_dtype_name(idx->dtype));
    if (idx->ndim + 1 > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "result would have more than %d dims", TJ_MAX_DIMS);
    ir_set(out, w->dtype, idx->ndim, idx->shape);
    out->shape[out->ndim++] = w->shape[1];
    return 0;
}

int ir_infer_dropout(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    double p = a->a[0].f;
    if (!ir_dtype_is_float(in[0]->dtype))
        return ir_fail(err, nerr, "needs a float tensor, got %s", tj_dtype_name(in[0]->dtype));
    if (!(p >= 0 && p <= 1))
        return ir_fail(err, nerr, "probability p = %g is not in [0, 1]", p);
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

/* The batch dims (all but the last two) of t as a type of their own. */
static ir_type batch_of(const ir_type *t)
{
    ir_type b = {t->dtype, t->ndim - 2, false, {0}};
    memcpy(b.shape, t->shape, (size_t)b.ndim * sizeof *b.shape);
    return b;
}

/* true when m broadcasts to exactly the shape of t. */
static bool broadcasts_to(const ir_type *m, const ir_type *t)
{
    int ndim;
    int64_t shape[TJ_MAX_DIMS];
    if (m->ndim > t->ndim || !ir_broadcast(m, t, &ndim, shape))
        return false;
    return memcmp(shape, t->shape, (size_t)ndim * sizeof *shape) == 0;
}

static int sdpa_check_qkv(const ir_type *q, const ir_type *k, const ir_type *v, char *err,
                          size_t nerr)
{
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return ir_fail(err, nerr, "q, k and v need at least 2 dims ([..., L, E])");
    if (!ir_dtype_is_float(q->dtype))
        return ir_fail(err, nerr, "q, k and v must be float, got %s", tj_dtype_name(q->dtype));
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return ir_fail(err, nerr, "q, k and v must have the same dtype, got %s, %s, %s",
                       tj_dtype_name(q->dtype), tj_dtype_name(k->dtype),
                       tj_dtype_name(v->dtype));
    if (q->shape[q->ndim - 1] != k->shape[k->ndim - 1])
        return ir_fail(err, nerr, "embedding size E of q (%s) and k (%s) differ",
                       IR_DIM(q->shape[q->ndim - 1]), IR_DIM(k->shape[k->ndim - 1]));
    if (k->shape[k->ndim - 2] != v->shape[v->ndim - 2])
        return ir_fail(err, nerr, "sequence length S of k (%s) and v (%s) differ",
                       IR_DIM(k->shape[k->ndim - 2]), IR_DIM(v->shape[v->ndim - 2]));
    return 0;
}

static int sdpa_check_mask(const ir_type *mask, const ir_type *scores, bool causal, char *err,
                           size_t nerr)
{
    if (causal)
        return ir_fail(err, nerr, "takes a mask or causal, not both");
    if (mask->dtype != TJ_BOOL && mask->dtype != scores->dtype)
        return ir_fail(err, nerr, "mask must be bool or %s (q's dtype), got %s",
                       tj_dtype_name(scores->dtype), tj_dtype_name(mask->dtype));
    if (!broadcasts_to(mask, scores)) {
        char s[96];
        return ir_fail(err, nerr, "mask does not broadcast to the scores' shape %s",
                       ir_type_str(scores, s, sizeof s) + strlen(tj_dtype_name(scores->dtype)));
    }
    return 0;
}

int ir_infer_sdpa(IR_INFER_ARGS)
{
    (void)op;
    const ir_type *q = in[0], *k = in[1], *v = in[2], *mask = nin > 3 ? in[3] : NULL;
    if (sdpa_check_qkv(q, k, v, err, nerr))
        return -1;
    ir_type bq = batch_of(q), bk = batch_of(k), bv = batch_of(v), bqk;
    if (!ir_broadcast(&bq, &bk, &bqk.ndim, bqk.shape) ||
        !ir_broadcast(&bqk, &bv, &out->ndim, out->shape))
        return ir_fail(err, nerr, "batch dims of q, k and v cannot be broadcast together");
    int nb = out->ndim;
    out->dtype = q->dtype;
    out->ndim = nb + 2;
    out->shape[nb] = q->shape[q->ndim - 2];
    if (mask) {
        ir_type scores = *out;
        scores.shape[nb + 1] = k->shape[k->ndim - 2];
        if (sdpa_check_mask(mask, &scores, a->a[0].i[0] != 0, err, nerr))
            return -1;
    }
    out->shape[nb + 1] = v->shape[v->ndim - 1];
    return 0;
}

/* The class dim of cross_entropy's logits: 1, or 0 for 1-D logits [C]. */
static int ce_class_dim(const ir_type *x) { return x->ndim == 1 ? 0 : 1; }

static int ce_check_target(const ir_type *x, const ir_type *t, const ir_type *batch,
                           int64_t ignore, char *err, size_t nerr)
{
    char s1[96], s2[96];
    if (ir_shape_equal(t, x)) {   /* class probabilities, as torch decides */
        if (!ir_dtype_is_float(t->dtype))
            return ir_fail(err, nerr, "a target of logits' shape holds class probabilities "
                           "and must be float, got %s", tj_dtype_name(t->dtype));
        if (ignore >= 0)
            return ir_fail(err, nerr, "ignore_index %lld is not supported with class-probability "
                           "targets (it must be negative)", (long long)ignore);
        return 0;
    }
    if (!ir_shape_equal(t, batch))
        return ir_fail(err, nerr, "target %s is neither logits' shape without the class dim (%s) "
                       "nor logits' shape", ir_type_str(t, s1, sizeof s1),
                       ir_type_str(batch, s2, sizeof s2) + strlen(tj_dtype_name(batch->dtype)));
    if (!is_index_dtype(t->dtype))
        return ir_fail(err, nerr, "target of class indices must be i64 or i32, got %s",
                       tj_dtype_name(t->dtype));
    return 0;
}

int ir_infer_cross_entropy(IR_INFER_ARGS)
{
    (void)op;
    const ir_type *x = in[0], *t = in[1], *w = nin > 2 ? in[2] : NULL;
    int64_t red = a->a[0].i[0], ignore = a->a[1].i[0];
    double smoothing = a->a[2].f;
    if (x->ndim < 1)
        return ir_fail(err, nerr, "logits must have a class dim ([C], [N, C] or [N, C, d...]), "
                                  "got 0 dims");
    if (!ir_dtype_is_float(x->dtype))
        return ir_fail(err, nerr, "logits must be float, got %s", tj_dtype_name(x->dtype));
    if (!ir_attr_word(IR_ATTR_REDUCTION, red))
        return ir_fail(err, nerr, "reduction %lld is not one of mean, sum, none", (long long)red);
    if (smoothing > 1)   /* torch takes NaN and negative values as 0 */
        return ir_fail(err, nerr, "label_smoothing %g is not in [0, 1]", smoothing);
    int cd = ce_class_dim(x);
    int64_t ncls = x->shape[cd];
    ir_type batch = {x->dtype, x->ndim - 1, false, {0}};
    for (int d = 0, k = 0; d < x->ndim; d++)
        if (d != cd)
            batch.shape[k++] = x->shape[d];
    if (ce_check_target(x, t, &batch, ignore, err, nerr))
        return -1;
    bool probs = ir_dtype_is_float(t->dtype);
    if (w && (w->ndim != 1 || w->shape[0] != ncls)) {
        char s[96];
        return ir_fail(err, nerr, "weight must be 1-D [C] with C = %s, got %s",
                       IR_DIM(ncls), ir_type_str(w, s, sizeof s));
    }
    if (w && !probs && w->dtype != x->dtype)
        return ir_fail(err, nerr, "weight must have logits' dtype %s, got %s",
                       tj_dtype_name(x->dtype), tj_dtype_name(w->dtype));
    if (w && !ir_dtype_is_float(w->dtype))
        return ir_fail(err, nerr, "weight must be float, got %s", tj_dtype_name(w->dtype));
    /* probabilities: -(log_softmax(x) * t * w) promotes, as torch computes it */
    const ir_type *ops3[3] = {x, t, w};
    tj_dtype dt = probs ? ir_promote(ops3, w ? 3 : 2) : x->dtype;
    if (red == TJ_REDUCTION_NONE)
        ir_set(out, dt, batch.ndim, batch.shape);
    else
        ir_set(out, dt, 0, NULL);
    return 0;
}
