/* infer_view.c - shape/dtype rules of the view ops: reshape, permute, slice,
 * expand, squeeze, unsqueeze, as_strided. Each keeps the input dtype; the runtime
 * (runtime/views.c) turns the result shape into strides over shared storage. */
#include "infer.h"

/* A list attribute with n entries outside [0, max] (the frontend marks a bad
 * or NULL list with n = -1) is rejected here, once for every view op. */
static int check_list(const ir_attr *l, int max, const char *what, char *err, size_t nerr)
{
    if (l->n < 0 || l->n > max)
        return ir_fail(err, nerr, "%s has %d entries (expected 0..%d)", what, l->n, max);
    return 0;
}

/* Python slice clamping of one bound against a dim of size n. */
int64_t ir_slice_bound(int64_t v, int64_t n)
{
    if (v < 0)
        v = v < -n ? 0 : v + n;
    return v > n ? n : v;
}

int ir_infer_reshape(IR_INFER_ARGS)
{
    const ir_attr *s = &a->a[0];
    if (check_list(s, TJ_MAX_DIMS, "shape", err, nerr))
        return -1;
    int infer = -1;
    int64_t known, shape[TJ_MAX_DIMS];
    for (int d = 0; d < s->n; d++) {
        shape[d] = s->i[d];
        if (s->i[d] == -1) {
            if (infer >= 0)
                return ir_fail(err, nerr, "only one dim may be -1 (dims %d and %d are)", infer, d);
            infer = d;
        } else if (s->i[d] < 0) {
            return ir_fail(err, nerr, "invalid size %lld in dim %d", (long long)s->i[d], d);
        }
    }
    if (!ir_numel_checked(s->n, s->i, &known))   /* the -1 counts as 1 */
        return ir_fail_numel(err, nerr, "shape", s->n, s->i);
    int64_t numel;   /* a symbolic size counts as 1 */
    if (!ir_numel_checked(in[0]->ndim, in[0]->shape, &numel))
        return ir_fail_numel(err, nerr, "input", in[0]->ndim, in[0]->shape);
    int sym = -1;   /* the input's one symbolic dim */
    for (int d = 0; d < in[0]->ndim; d++)
        if (IR_IS_SYM(in[0]->shape[d]) && numel) {
            if (sym >= 0)
                return ir_fail(err, nerr, "a shape of two symbolic dims (%s, %s) is not expressed",
                               IR_DIM(in[0]->shape[sym]), IR_DIM(in[0]->shape[d]));
            sym = d;
        }
    if (sym >= 0) {
        /* the -1 stands for the symbol where the static sizes match
         * ([s0,768] to [-1,12,64] is [s0,12,64]); a multiple of it is not
         * expressed */
        if (infer < 0)
            return ir_fail(err, nerr, "a shape without -1 cannot hold symbolic dim %s",
                           IR_DIM(in[0]->shape[sym]));
        if (known != numel)
            return ir_fail(err, nerr, "the -1 would be %s times %lld/%lld: only %s itself is expressed",
                           IR_DIM(in[0]->shape[sym]), (long long)numel, (long long)known,
                           IR_DIM(in[0]->shape[sym]));
        shape[infer] = in[0]->shape[sym];
        ir_set(out, in[0]->dtype, s->n, shape);
        return 0;
    }
    if (infer >= 0) {
        if (known == 0)
            return ir_fail(err, nerr, "the -1 in dim %d is ambiguous with a zero-size dim", infer);
        if (numel % known != 0)
            return ir_fail(err, nerr, "%lld elements cannot take a shape with a -1 and %lld others",
                           (long long)numel, (long long)known);
        shape[infer] = numel / known;
    } else if (known != numel) {
        return ir_fail(err, nerr, "shape has %lld elements, input has %lld", (long long)known,
                       (long long)numel);
    }
    ir_set(out, in[0]->dtype, s->n, shape);
    return 0;
}

int ir_infer_permute(IR_INFER_ARGS)
{
    const ir_attr *p = &a->a[0];
    int ndim = in[0]->ndim;
    if (p->n != ndim)
        return ir_fail(err, nerr, "perm has %d entries, input has %d dims", p->n, ndim);
    int64_t shape[TJ_MAX_DIMS];
    uint32_t seen = 0;
    for (int k = 0; k < ndim; k++) {
        int d = ir_norm_dim(p->i[k], ndim);
        if (d < 0)
            return ir_fail(err, nerr, "perm entry %lld out of range for %d dims",
                           (long long)p->i[k], ndim);
        if (seen & (1u << d))
            return ir_fail(err, nerr, "perm repeats dim %d", d);
        seen |= 1u << d;
        shape[k] = in[0]->shape[d];
    }
    ir_set(out, in[0]->dtype, ndim, shape);
    return 0;
}

bool ir_slice_symbolic(int64_t n, int64_t start, int64_t end, int64_t step, int64_t *size,
                       int64_t *need)
{
    bool to_end = end >= INT64_MAX / 2;
    int64_t e1 = to_end ? 0 : end, at_least = 0, c;
    if (start <= -INT64_MAX / 2 || e1 <= -INT64_MAX / 2)   /* beyond any size: no negation */
        return false;
    if (start >= 0 && !to_end && end >= 0) {           /* x[1:5]: 4 where n >= 5 */
        *size = end > start ? (end - start - 1) / step + 1 : 0;
        at_least = end > start ? end : 0;
    } else if (start < 0 && (to_end || end < 0)) {     /* x[-3:-1]: 2 where n >= 3 */
        *size = e1 > start ? (e1 - start - 1) / step + 1 : 0;
        at_least = e1 > start ? -start : 0;
    } else if (start >= 0 && (to_end || end < 0) && step == 1) {   /* x[1:-1]: n - 2 */
        if (__builtin_sub_overflow(e1, start, &c) || !ir_dim_add(n, c, size))
            return false;
    } else {
        return false;
    }
    if (need)
        *need = at_least;
    return true;
}

int ir_infer_slice(IR_INFER_ARGS)
{
    int ndim = in[0]->ndim;
    int64_t step = a->a[3].i[0];
    if (ndim == 0)
        return ir_fail(err, nerr, "cannot slice a 0-dim tensor");
    int d = ir_norm_dim(a->a[0].i[0], ndim);
    if (d < 0)
        return ir_fail(err, nerr, "dim %lld out of range for %d dims", (long long)a->a[0].i[0],
                       ndim);
    if (step <= 0)
        return ir_fail(err, nerr, "step must be positive, got %lld", (long long)step);
    int64_t n = in[0]->shape[d];
    ir_set(out, in[0]->dtype, ndim, in[0]->shape);
    if (n < 0) {
        if (ir_slice_symbolic(n, a->a[1].i[0], a->a[2].i[0], step, &out->shape[d], NULL))
            return 0;
        return ir_fail(err, nerr, "bounds %lld..%lld step %lld of symbolic dim %d: the size is not "
                       "static or the symbol plus a count", (long long)a->a[1].i[0],
                       (long long)a->a[2].i[0], (long long)step, d);
    }
    int64_t start = ir_slice_bound(a->a[1].i[0], n), end = ir_slice_bound(a->a[2].i[0], n);
    out->shape[d] = end > start ? (end - start - 1) / step + 1 : 0;
    return 0;
}

int ir_infer_expand(IR_INFER_ARGS)
{
    const ir_attr *s = &a->a[0];
    int ndim = in[0]->ndim;
    if (check_list(s, TJ_MAX_DIMS, "shape", err, nerr))
        return -1;
    if (s->n < ndim)
        return ir_fail(err, nerr, "shape has %d dims, fewer than the input's %d", s->n, ndim);
    int64_t shape[TJ_MAX_DIMS];
    int lead = s->n - ndim;
    for (int d = 0; d < s->n; d++) {
        int64_t want = s->i[d], have = d >= lead ? in[0]->shape[d - lead] : 1;
        if (want == -1 && d < lead)
            return ir_fail(err, nerr, "size -1 is not allowed in new leading dim %d", d);
        if (want < -1)
            return ir_fail(err, nerr, "invalid size %lld in dim %d", (long long)want, d);
        if (want == -1)
            want = have;
        if (want != have && have != 1)
            return ir_fail(err, nerr, "size %lld in dim %d must match the existing size %s",
                           (long long)want, d, IR_DIM(have));
        shape[d] = want;
    }
    ir_set(out, in[0]->dtype, s->n, shape);
    return 0;
}

int ir_infer_squeeze(IR_INFER_ARGS)
{
    int ndim = in[0]->ndim;
    uint32_t mask;
    if (check_list(&a->a[0], TJ_MAX_DIMS, "dims", err, nerr) ||
        ir_dims_mask(&a->a[0], ndim, &mask, err, nerr))
        return -1;
    int64_t shape[TJ_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < ndim; d++)
        if (!((mask >> d) & 1) || in[0]->shape[d] != 1)
            shape[n++] = in[0]->shape[d];
    ir_set(out, in[0]->dtype, n, shape);
    return 0;
}

int ir_infer_unsqueeze(IR_INFER_ARGS)
{
    int ndim = in[0]->ndim;
    int64_t dim = a->a[0].i[0];
    if (ndim >= TJ_MAX_DIMS)
        return ir_fail(err, nerr, "the result would have more than %d dims", TJ_MAX_DIMS);
    if (dim < -ndim - 1 || dim > ndim)
        return ir_fail(err, nerr, "dim %lld out of range [%d, %d]", (long long)dim, -ndim - 1,
                       ndim);
    int d = (int)(dim < 0 ? dim + ndim + 1 : dim);
    int64_t shape[TJ_MAX_DIMS];
    for (int k = 0, j = 0; k <= ndim; k++)
        shape[k] = k == d ? 1 : in[0]->shape[j++];
    ir_set(out, in[0]->dtype, ndim + 1, shape);
    return 0;
}

/* as_strided (remaining prims, issue 11): sizes and strides of equal count,
 * none negative, and the last element reached, offset + sum((size-1)*stride),
 * within x's elements (a result with no elements reaches none). */
int ir_infer_as_strided(IR_INFER_ARGS)
{
    (void)nin;
    const ir_attr *sz = &a->a[0], *st = &a->a[1];
    int64_t off = a->a[2].i[0], n, xn = ir_type_numel(in[0]), last = off;
    if (check_list(sz, TJ_MAX_DIMS, "size", err, nerr) || check_list(st, TJ_MAX_DIMS, "stride", err, nerr))
        return -1;
    if (sz->n != st->n)
        return ir_fail(err, nerr, "size has %d entries, stride %d", sz->n, st->n);
    if (off < 0)
        return ir_fail(err, nerr, "negative storage_offset %lld", (long long)off);
    for (int d = 0; d < sz->n; d++) {
        if (sz->i[d] < 0)
            return ir_fail(err, nerr, "negative size %lld in dim %d", (long long)sz->i[d], d);
        if (st->i[d] < 0)
            return ir_fail(err, nerr, "negative stride %lld in dim %d (not supported)", (long long)st->i[d], d);
    }
    if (!ir_numel_checked(sz->n, sz->i, &n))
        return ir_fail(err, nerr, "the size overflows");
    for (int d = 0; n > 0 && d < sz->n; d++) {
        int64_t step;
        if (__builtin_mul_overflow(sz->i[d] - 1, st->i[d], &step) || __builtin_add_overflow(last, step, &last))
            return ir_fail(err, nerr, "the strides overflow");
    }
    if (n > 0 && last >= xn)
        return ir_fail(err, nerr, "reaches element %lld, outside the input's %lld elements",
                       (long long)last, (long long)xn);
    ir_set(out, in[0]->dtype, sz->n, sz->i);
    return 0;
}
