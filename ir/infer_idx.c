/* infer_idx.c - shape/dtype rules of the indexing, scan and shape rows of
 * ops.def's "indexing, scans and shapes" section (narrow, movedim, t,
 * unflatten, expand_as, view_as, tril, triu, masked_fill, ...), following
 * PyTorch's checks. Rows that restate a view take that view's rule. */
#include <string.h>

#include "infer.h"

/* dim of x, normalized, or -1 with the reason in err. */
static int one_dim(int64_t dim, int ndim, char *err, size_t nerr)
{
    int d = ir_norm_dim(dim, ndim);
    if (d < 0)
        ir_fail(err, nerr, "dim %lld out of range for %d dims", (long long)dim, ndim);
    return d;
}

int ir_infer_narrow(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    if (x->ndim == 0)
        return ir_fail(err, nerr, "cannot narrow a 0-dim tensor");
    int d = one_dim(a->a[0].i[0], x->ndim, err, nerr);
    if (d < 0)
        return -1;
    int64_t n = x->shape[d], start = a->a[1].i[0], len = a->a[2].i[0];
    if (n < 0)
        return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    if (start < -n || start > n)
        return ir_fail(err, nerr, "start %lld out of range for a dim of size %lld",
                       (long long)start, (long long)n);
    if (start < 0)
        start += n;
    if (len < 0 || len > n - start)
        return ir_fail(err, nerr, "start %lld + length %lld exceeds the size %lld of dim %d",
                       (long long)start, (long long)len, (long long)n, d);
    ir_set(out, x->dtype, x->ndim, x->shape);
    out->shape[d] = len;
    return 0;
}

/* torch.movedim's permutation: perm[dst[k]] = src[k], the other dims in
 * order in the free places. -1 with the reason in err. */
int ir_movedim_perm(const ir_attr *src, const ir_attr *dst, int ndim, int64_t *perm, char *err,
                    size_t nerr)
{
    if (src->n != dst->n)
        return ir_fail(err, nerr, "source has %d dims and destination %d", src->n, dst->n);
    uint32_t used_s = 0, used_d = 0;
    for (int k = 0; k < ndim; k++)
        perm[k] = -1;
    for (int k = 0; k < src->n; k++) {
        int s = one_dim(src->i[k], ndim, err, nerr), t;
        if (s < 0 || (t = one_dim(dst->i[k], ndim, err, nerr)) < 0)
            return -1;
        if ((used_s >> s & 1) || (used_d >> t & 1))
            return ir_fail(err, nerr, "repeated dim in %s", used_s >> s & 1 ? "source" : "destination");
        used_s |= 1u << s, used_d |= 1u << t;
        perm[t] = s;
    }
    int next = 0;
    for (int k = 0; k < ndim; k++) {
        if (perm[k] >= 0)
            continue;
        while (used_s >> next & 1)
            next++;
        perm[k] = next++;
    }
    return 0;
}

int ir_infer_movedim(IR_INFER_ARGS)
{
    int64_t perm[TJ_MAX_DIMS];
    int nd = in[0]->ndim ? in[0]->ndim : 1;
    if (ir_movedim_perm(&a->a[0], &a->a[1], nd, perm, err, nerr))
        return -1;
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    for (int k = 0; k < in[0]->ndim; k++)
        out->shape[k] = in[0]->shape[perm[k]];
    return 0;
}

int ir_infer_t(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    if (x->ndim > 2)
        return ir_fail(err, nerr, "expects a tensor of at most 2 dims, got %d", x->ndim);
    ir_set(out, x->dtype, x->ndim, x->shape);
    if (x->ndim == 2)
        out->shape[0] = x->shape[1], out->shape[1] = x->shape[0];
    return 0;
}

int ir_infer_unflatten(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    const ir_attr *s = &a->a[1];
    if (x->ndim == 0)
        return ir_fail(err, nerr, "cannot unflatten a 0-dim tensor");
    int d = one_dim(a->a[0].i[0], x->ndim, err, nerr);
    if (d < 0)
        return -1;
    if (s->n < 1 || x->ndim - 1 + s->n > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "sizes has %d entries (expected 1..%d)", s->n,
                       TJ_MAX_DIMS - x->ndim + 1);
    if (x->shape[d] < 0)
        return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    ir_attrs r;
    ir_type part = {x->dtype, 1, false, {x->shape[d]}}, got;
    const ir_type *pp = &part;
    memset(&r, 0, sizeof r);
    r.a[0] = *s;
    if (ir_infer_reshape(OP_reshape, &pp, 1, &r, &got, err, nerr))
        return -1;
    out->dtype = x->dtype;
    out->weak = false;
    out->ndim = x->ndim - 1 + got.ndim;
    int m = 0;
    for (int k = 0; k < x->ndim; k++) {
        if (k != d) {
            out->shape[m++] = x->shape[k];
            continue;
        }
        for (int j = 0; j < got.ndim; j++)
            out->shape[m++] = got.shape[j];
    }
    return 0;
}

/* expand_as and view_as: expand and reshape to the other's shape. */
static int like_other(ir_op view, IR_INFER_ARGS)
{
    (void)op, (void)nin;
    ir_attrs r;
    memset(&r, 0, sizeof r);
    ir_attr_ints(&r.a[0], in[1]->shape, in[1]->ndim);
    return view == OP_expand ? ir_infer_expand(view, in, 1, &r, out, err, nerr)
                             : ir_infer_reshape(view, in, 1, &r, out, err, nerr);
}

int ir_infer_expand_as(IR_INFER_ARGS) { return like_other(OP_expand, op, in, nin, a, out, err, nerr); }
int ir_infer_view_as(IR_INFER_ARGS) { return like_other(OP_reshape, op, in, nin, a, out, err, nerr); }

static int triangle(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    if (in[0]->ndim < 2)
        return ir_fail(err, nerr, "needs at least 2 dims, got %d", in[0]->ndim);
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

int ir_infer_tril(IR_INFER_ARGS) { return triangle(op, in, nin, a, out, err, nerr); }
int ir_infer_triu(IR_INFER_ARGS) { return triangle(op, in, nin, a, out, err, nerr); }

int ir_infer_masked_fill(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    const ir_type *x = in[0], *m = in[1];
    int nd;
    int64_t shape[TJ_MAX_DIMS];
    if (m->dtype != TJ_BOOL)
        return ir_fail(err, nerr, "mask must be bool, got %s", tj_dtype_name(m->dtype));
    if (!ir_broadcast(x, m, &nd, shape))
        return ir_fail(err, nerr, "the input and the mask cannot be broadcast together");
    ir_set(out, x->dtype, nd, shape);
    return 0;
}
