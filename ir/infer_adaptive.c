/* infer_adaptive.c - shape/dtype rules of the adaptive pools and cdist /
 * matrix_norm of ops.def's "nn and linalg" section (DCOMP rows, decomposed in
 * passes/decomp_adaptive.c):
 *
 *   adaptive_avg_pool1d  x [N,C,L] or [C,L], output_size [l] -> [..., l]
 *   adaptive_avg_pool2d  x [N,C,H,W] or [C,H,W], output_size [h, w] -> [..., h, w]
 *   adaptive_avg_pool3d  x [N,C,D,H,W] or [C,D,H,W], output_size [d, h, w] -> [..., d, h, w]
 *   adaptive_max_pool2d  the same, max (values only)
 *   cdist                x1 [..., P, M], x2 [..., R, M] (batch dims broadcast),
 *                        p >= 0 -> [..., P, R]; float
 *   matrix_norm          Frobenius norm over two dims (default the last two)
 * Output sizes must not be negative; the pooled dims must be static and nonempty.
 */
#include <string.h>

#include "infer.h"

static int adaptive(const ir_type *x, const ir_attr *os, int k, ir_type *out, char *err,
                    size_t nerr)
{
    if (x->ndim != k + 1 && x->ndim != k + 2)
        return ir_fail(err, nerr, "input must be %d-D or %d-D, got %d-D", k + 1, k + 2, x->ndim);
    if (!ir_dtype_is_float(x->dtype))
        return ir_fail(err, nerr, "input must be float, got %s", tj_dtype_name(x->dtype));
    if (os->n != k)
        return ir_fail(err, nerr, "output_size must have %d entries, got %d", k, os->n);
    ir_set(out, x->dtype, x->ndim, x->shape);
    for (int d = 0; d < k; d++) {
        int64_t in = x->shape[x->ndim - k + d];
        if (os->i[d] < 0)
            return ir_fail(err, nerr, "output_size %lld is negative", (long long)os->i[d]);
        if (in <= 0)
            return ir_fail(err, nerr, "pooled dim %d is %s (it must be static and nonempty)",
                           x->ndim - k + d, IR_DIM(in));
        out->shape[x->ndim - k + d] = os->i[d];
    }
    return 0;
}

int ir_infer_adaptive_avg_pool1d(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    return adaptive(in[0], &a->a[0], 1, out, err, nerr);
}

int ir_infer_adaptive_avg_pool2d(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    return adaptive(in[0], &a->a[0], 2, out, err, nerr);
}

int ir_infer_adaptive_avg_pool3d(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    return adaptive(in[0], &a->a[0], 3, out, err, nerr);
}

int ir_infer_adaptive_max_pool2d(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    return adaptive(in[0], &a->a[0], 2, out, err, nerr);
}

int ir_infer_cdist(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    const ir_type *x = in[0], *y = in[1];
    if (!ir_dtype_is_float(x->dtype) || x->dtype != y->dtype)
        return ir_fail(err, nerr, "x1 and x2 must be float of one dtype, got %s and %s",
                       tj_dtype_name(x->dtype), tj_dtype_name(y->dtype));
    if (x->ndim < 2 || y->ndim < 2)
        return ir_fail(err, nerr, "x1 and x2 must have at least 2 dims, got %d and %d", x->ndim,
                       y->ndim);
    if (x->shape[x->ndim - 1] != y->shape[y->ndim - 1])
        return ir_fail(err, nerr, "x1 and x2 must have the same last dim, got %s and %s",
                       IR_DIM(x->shape[x->ndim - 1]), IR_DIM(y->shape[y->ndim - 1]));
    if (!(a->a[0].f >= 0))
        return ir_fail(err, nerr, "p %g must not be negative", a->a[0].f);
    ir_type bx = *x, by = *y;
    bx.ndim -= 2, by.ndim -= 2;
    int nd;
    int64_t shape[TJ_MAX_DIMS + 2];
    if (!ir_broadcast(&bx, &by, &nd, shape))
        return ir_fail(err, nerr, "the batch dims cannot be broadcast together");
    if (nd + 3 > TJ_MAX_DIMS)   /* the decomposition's [..., P, R, M] */
        return ir_fail(err, nerr, "more than %d batch dims", TJ_MAX_DIMS - 3);
    shape[nd++] = x->shape[x->ndim - 2];
    shape[nd++] = y->shape[y->ndim - 2];
    ir_set(out, x->dtype, nd, shape);
    return 0;
}

int ir_infer_matrix_norm(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    const ir_type *x = in[0];
    const ir_attr *dims = &a->a[0];
    if (!ir_dtype_is_float(x->dtype))
        return ir_fail(err, nerr, "input must be float, got %s", tj_dtype_name(x->dtype));
    if (x->ndim < 2)
        return ir_fail(err, nerr, "input must have at least 2 dims, got %d", x->ndim);
    if (dims->n != 0 && dims->n != 2)
        return ir_fail(err, nerr, "dims must name 2 dims (or none: the last two), got %d", dims->n);
    uint32_t mask = 3u << (x->ndim - 2);
    if (dims->n && ir_dims_mask(dims, x->ndim, &mask, err, nerr))
        return -1;
    bool keep = a->a[1].i[0] != 0;
    ir_reduced_shape(x, mask, keep, out, x->dtype);
    return 0;
}
