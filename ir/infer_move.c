/* infer_move.c - shape/dtype rules of the data-movement ops (copy, cat,
 * gather, index_select, pad, flip) and of the creation and random ops (full,
 * arange, rand, randn), following PyTorch's checks and messages. */
#include <math.h>

#include "infer.h"

int ir_infer_copy(IR_INFER_ARGS)
{
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

/* torch.cat skips 1-D tensors of size 0 (a legacy rule) when placing inputs,
 * though they still take part in dtype promotion. */
static bool cat_skipped(const ir_type *t) { return t->ndim == 1 && t->shape[0] == 0; }

int ir_infer_cat(IR_INFER_ARGS)
{
    const ir_type *ref = NULL;
    for (int k = 0; k < nin; k++)
        if (!in[k])
            return ir_fail(err, nerr, "input %d is missing", k);
    for (int k = 0; k < nin && !ref; k++)
        if (!cat_skipped(in[k]))
            ref = in[k];
    tj_dtype dt = ir_promote(in, nin);
    if (!ref) {
        ir_set(out, dt, 1, (int64_t[]){0});
        return 0;
    }
    if (ref->ndim == 0)
        return ir_fail(err, nerr, "cannot concatenate 0-dim tensors");
    int d = ir_norm_dim(a->a[0].i[0], ref->ndim);
    if (d < 0)
        return ir_fail(err, nerr, "dim %lld out of range for %d dims", (long long)a->a[0].i[0],
                       ref->ndim);
    ir_set(out, dt, ref->ndim, ref->shape);
    out->shape[d] = 0;
    for (int k = 0; k < nin; k++) {
        if (cat_skipped(in[k]))
            continue;
        if (in[k]->ndim != ref->ndim)
            return ir_fail(err, nerr, "input %d has %d dims, expected %d", k, in[k]->ndim,
                           ref->ndim);
        for (int j = 0; j < ref->ndim; j++)
            if (j != d && in[k]->shape[j] != ref->shape[j])
                return ir_fail(err, nerr, "input %d has size %s in dim %d, expected %s", k,
                               IR_DIM(in[k]->shape[j]), j, IR_DIM(ref->shape[j]));
        int64_t v = in[k]->shape[d], *o = &out->shape[d];
        if (IR_IS_SYM(v) && IR_IS_SYM(*o))   /* 0 (static) when no input added yet */
            return ir_fail(err, nerr, "the sizes %s and %s in dim %d add two symbols",
                           IR_DIM(*o), IR_DIM(v), d);
        bool ok = IR_IS_SYM(v) ? ir_dim_add(v, *o, o) : ir_dim_add(*o, v, o);
        if (!ok)
            return ir_fail(err, nerr, "the sizes in dim %d add up to more than 2^63-1", d);
    }
    return 0;
}

/* PyTorch's gather: index i64 with x's number of dims (a 0-dim tensor counts
 * as one dim), no larger than x outside `dim`; the result has index's shape. */
int ir_infer_gather(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *ix = in[1];
    int nd = x->ndim ? x->ndim : 1;
    if (ix->dtype != TJ_I64)
        return ir_fail(err, nerr, "index must be i64, got %s", tj_dtype_name(ix->dtype));
    if ((ix->ndim ? ix->ndim : 1) != nd)
        return ir_fail(err, nerr, "index has %d dims, input has %d", ix->ndim, x->ndim);
    int d = ir_norm_dim(a->a[0].i[0], x->ndim);
    if (d < 0)
        return ir_fail(err, nerr, "dim %lld out of range for %d dims", (long long)a->a[0].i[0],
                       x->ndim);
    for (int j = 0; j < x->ndim && ix->ndim; j++)
        if (j != d && ix->shape[j] > x->shape[j])
            return ir_fail(err, nerr, "index has size %s in dim %d, larger than the input's %s",
                           IR_DIM(ix->shape[j]), j, IR_DIM(x->shape[j]));
    ir_set(out, x->dtype, ix->ndim, ix->shape);
    return 0;
}

int ir_infer_index_select(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *ix = in[1];
    if (ix->dtype != TJ_I64 && ix->dtype != TJ_I32)
        return ir_fail(err, nerr, "index must be i32 or i64, got %s", tj_dtype_name(ix->dtype));
    if (ix->ndim > 1)
        return ir_fail(err, nerr, "index must have 0 or 1 dims, got %d", ix->ndim);
    int d = ir_norm_dim(a->a[0].i[0], x->ndim);
    if (d < 0)
        return ir_fail(err, nerr, "dim %lld out of range for %d dims", (long long)a->a[0].i[0],
                       x->ndim);
    int64_t n = ir_type_numel(ix);
    if (x->ndim == 0 && n != 1)
        return ir_fail(err, nerr, "index into a 0-dim tensor must have 1 element, got %lld",
                       (long long)n);
    ir_set(out, x->dtype, x->ndim, x->shape);
    if (x->ndim)
        out->shape[d] = n;
    return 0;
}

/* pads holds (before, after) pairs from the last dim backwards; negative
 * entries crop. */
int ir_infer_pad(IR_INFER_ARGS)
{
    const ir_attr *p = &a->a[0];
    int ndim = in[0]->ndim;
    if (p->n < 0 || p->n % 2 || p->n / 2 > ndim)
        return ir_fail(err, nerr, "needs at most %d (before, after) pairs, got %d entries", ndim,
                       p->n);
    ir_set(out, in[0]->dtype, ndim, in[0]->shape);
    for (int k = 0; k < p->n / 2; k++) {
        int d = ndim - 1 - k;
        int64_t size, sum;
        if (__builtin_add_overflow(p->i[2 * k], p->i[2 * k + 1], &sum) ||
            !ir_dim_add(in[0]->shape[d], sum, &size))
            return ir_fail(err, nerr, "padding (%lld, %lld) makes dim %d of size %s negative",
                           (long long)p->i[2 * k], (long long)p->i[2 * k + 1], d,
                           IR_DIM(in[0]->shape[d]));
        out->shape[d] = size;
    }
    return 0;
}

int ir_infer_flip(IR_INFER_ARGS)
{
    uint32_t mask;
    if (a->a[0].n < 0 || a->a[0].n > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "dims has %d entries (expected 0..%d)", a->a[0].n, TJ_MAX_DIMS);
    if (ir_dims_mask(&a->a[0], in[0]->ndim, &mask, err, nerr))
        return -1;
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

/* ---- creation ------------------------------------------------------------------ */

static int check_dtype(int64_t dt, bool float_only, char *err, size_t nerr)
{
    if (dt < 0 || dt >= TJ_NUM_DTYPES)
        return ir_fail(err, nerr, "unknown dtype %lld", (long long)dt);
    if (!ir_dtype_supported((tj_dtype)dt) || (float_only && !ir_dtype_is_float((tj_dtype)dt)))
        return ir_fail(err, nerr, "unsupported dtype %s%s", tj_dtype_name((tj_dtype)dt),
                       float_only ? " (needs f32 or f64)" : "");
    return 0;
}

/* The shape attribute of a creation op: at most TJ_MAX_DIMS sizes, none negative. */
static int create_shape(const ir_attr *s, tj_dtype dt, ir_type *out, char *err, size_t nerr)
{
    if (s->n < 0 || s->n > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "shape has %d entries (expected 0..%d)", s->n, TJ_MAX_DIMS);
    int64_t numel;
    for (int d = 0; d < s->n; d++)
        if (s->i[d] < 0)
            return ir_fail(err, nerr, "negative size %lld in dim %d", (long long)s->i[d], d);
    if (!ir_numel_checked(s->n, s->i, &numel))
        return ir_fail_numel(err, nerr, "shape", s->n, s->i);
    ir_set(out, dt, s->n, s->i);
    return 0;
}

int ir_infer_full(IR_INFER_ARGS)
{
    if (check_dtype(a->a[2].i[0], false, err, nerr))
        return -1;
    return create_shape(&a->a[0], (tj_dtype)a->a[2].i[0], out, err, nerr);
}

int ir_infer_rand(IR_INFER_ARGS)
{
    if (check_dtype(a->a[1].i[0], true, err, nerr))
        return -1;
    return create_shape(&a->a[0], (tj_dtype)a->a[1].i[0], out, err, nerr);
}

int ir_infer_randn(IR_INFER_ARGS) { return ir_infer_rand(op, in, nin, a, out, err, nerr); }

/* torch.arange's length: ceil((end - start) / step) in double. Integer dtypes
 * compute with start, end and step truncated (so the checks use those), and
 * i64 also takes its length from the truncated values. */
static int arange_length(double start, double end, double step, tj_dtype dt, int64_t *len,
                         char *err, size_t nerr)
{
    if (!isfinite(start) || !isfinite(end) || !isfinite(step))
        return ir_fail(err, nerr, "unsupported range %g -> %g step %g", start, end, step);
    double xs = start, xe = end, xst = step;
    if (!ir_dtype_is_float(dt)) {
        if (fabs(start) >= 0x1p62 || fabs(end) >= 0x1p62 || fabs(step) >= 0x1p62)
            return ir_fail(err, nerr, "range %g -> %g step %g overflows %s", start, end, step,
                           tj_dtype_name(dt));
        xs = trunc(start), xe = trunc(end), xst = trunc(step);
    }
    if (xst == 0)
        return ir_fail(err, nerr, "step must be nonzero");
    if (!((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs)))
        return ir_fail(err, nerr, "end %g is on the wrong side of start %g for step %g", end,
                       start, step);
    double size = dt == TJ_I64 ? ceil((xe - xs) / xst) : ceil((end - start) / step);
    if (!(size >= 0 && size <= 0x1p62))
        return ir_fail(err, nerr, "invalid size %g", size);
    *len = (int64_t)size;
    return 0;
}

int ir_infer_arange(IR_INFER_ARGS)
{
    int64_t dt = a->a[3].i[0], len;
    if (check_dtype(dt, false, err, nerr))
        return -1;
    if (dt == TJ_BOOL)
        return ir_fail(err, nerr, "unsupported dtype bool");
    if (arange_length(a->a[0].f, a->a[1].f, a->a[2].f, (tj_dtype)dt, &len, err, nerr))
        return -1;
    ir_set(out, (tj_dtype)dt, 1, &len);
    return 0;
}
