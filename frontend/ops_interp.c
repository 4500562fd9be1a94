/* ops_interp.c - public entry points of ops.def's "interpolate, embedding_bag,
 * einsum, scatter_reduce" block (einsum: ops_einsum.c): they fill the
 * attributes and call fe_apply. tj_interpolate picks the row of its mode and
 * turns a scale factor into the output size, as F.interpolate does. */
#include <math.h>

#include "fe.h"

tj_tensor *tj_scatter_reduce(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *src,
                             tj_reduce_op reduce, bool include_self)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], reduce);
    ir_attr_int(&at.a[2], include_self);
    return fe_apply(OP_scatter_reduce, (tj_tensor *[]){x, index, src}, 3, &at);
}

static tj_tensor *interp_fail(tj_tensor *x, const char *why, int k)
{
    char head[256];
    rt_describe_inputs("interpolate", &x, 1, head, sizeof head);
    rt_error("%s: %s (k = %d)", head, why, k);
    return NULL;
}

/* The mode's checks; NULL when x, k and align_corners suit it. */
static const char *interp_refusal(tj_interp_mode mode, int k, bool align_corners)
{
    switch (mode) {
    case TJ_INTERP_BILINEAR:
    case TJ_INTERP_BICUBIC:
        return k == 2                       ? NULL
               : mode == TJ_INTERP_BILINEAR ? "bilinear needs 2 spatial dims"
                                            : "bicubic needs 2 spatial dims";
    case TJ_INTERP_NEAREST:
    case TJ_INTERP_AREA:
        return align_corners ? "align_corners is only for bilinear and bicubic" : NULL;
    }
    return "mode must be nearest, bilinear, bicubic or area";
}

tj_tensor *tj_interpolate(tj_tensor *x, const int64_t *size, const double *scale_factor, int k,
                          tj_interp_mode mode, bool align_corners)
{
    if (!x)
        return NULL;
    if (k < 1 || k > 3)
        return interp_fail(x, "1, 2 or 3 spatial dims are supported", k);
    if (x->ndim != k + 2)
        return interp_fail(x, "the input must have 2 + k dims [N,C,spatial...]", k);
    if (!size == !scale_factor)
        return interp_fail(x, "give either size or scale_factor", k);
    const char *why = interp_refusal(mode, k, align_corners);
    if (why)
        return interp_fail(x, why, k);
    int64_t out[3];
    double sc[3] = {0, 0, 0};   /* d, h, w: the last k used */
    for (int j = 0; j < k; j++) {
        if (scale_factor) {
            double s = scale_factor[j];
            if (!(s > 0) || !isfinite(s))
                return interp_fail(x, "scale_factor must be positive and finite", k);
            fe_trace_shape_read(x);
            out[j] = (int64_t)floor((double)x->shape[2 + j] * s);
            sc[3 - k + j] = s;
        } else {
            out[j] = size[j];
        }
    }
    ir_attrs at = {0};
    ir_attr_ints(&at.a[0], out, k);
    switch (mode) {
    case TJ_INTERP_NEAREST:
        for (int j = 0; j < 3; j++)
            ir_attr_float(&at.a[1 + j], sc[j]);
        return fe_apply(OP_upsample_nearest, &x, 1, &at);
    case TJ_INTERP_AREA: {
        static const ir_op pools[3] = {OP_adaptive_avg_pool1d, OP_adaptive_avg_pool2d,
                                       OP_adaptive_avg_pool3d};
        return fe_apply(pools[k - 1], &x, 1, &at);
    }
    default:
        ir_attr_int(&at.a[1], align_corners);
        ir_attr_float(&at.a[2], sc[1]);
        ir_attr_float(&at.a[3], sc[2]);
        return fe_apply(mode == TJ_INTERP_BICUBIC ? OP_upsample_bicubic2d : OP_upsample_bilinear2d,
                        &x, 1, &at);
    }
}

tj_tensor *tj_embedding_bag(tj_tensor *weight, tj_tensor *indices, tj_tensor *offsets,
                            tj_reduce_op mode, tj_tensor *per_sample_weights,
                            bool include_last_offset)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], mode);
    ir_attr_int(&at.a[1], include_last_offset);
    int n = per_sample_weights ? 4 : offsets ? 3 : 2;
    return fe_apply(OP_embedding_bag,
                    (tj_tensor *[]){weight, indices, offsets, per_sample_weights}, n, &at);
}
