/* ops_interp.c - public entry points of ops.def's "interpolate, embedding_bag,
 * einsum, scatter_reduce" block (einsum: ops_einsum.c): they fill the
 * attributes and call fe_apply. tj_interpolate picks the row of its mode and
 * turns a scale factor into the output size, as F.interpolate does. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

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

/* An error "embedding_bag(shapes): reason"; returns -1. */
static int bag_fail(tj_tensor *const *in, int n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bag_fail(tj_tensor *const *in, int n, const char *fmt, ...)
{
    char head[512], why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rt_describe_inputs("embedding_bag", in, n, head, sizeof head);
    rt_error("%s: %s", head, why);
    return -1;
}

/* embedding_bag's attributes from its options; padding_idx in [-V, V) is made
 * a row (V added to a negative one). -1 with an error naming the op. */
static int bag_attrs(tj_tensor *const *in, int n, const tj_embedding_bag_options *o, ir_attrs *at)
{
    ir_attr_int(&at->a[0], o->mode);
    ir_attr_int(&at->a[1], o->include_last_offset);
    ir_attr_ints(&at->a[2], NULL, 0);
    if (o->has_padding_idx) {
        int64_t v = in[0]->ndim ? in[0]->shape[0] : 0, p = o->padding_idx;
        if (p < -v || p >= v)
            return bag_fail(in, n,
                            "padding_idx %lld is out of range for weight's %lld rows "
                            "(%lld through %lld)",
                            (long long)p, (long long)v, (long long)-v, (long long)(v - 1));
        ir_attr_ints(&at->a[2], (int64_t[]){p < 0 ? p + v : p}, 1);
    }
    if (!(o->max_norm >= 0) || !(o->norm_type >= 0))
        return bag_fail(in, n, "max_norm (%g) and norm_type (%g) must not be negative or NaN",
                        o->max_norm, o->norm_type);
    return 0;
}

/* torch's embedding_renorm_, in place in weight (no gradient): the rows that
 * indices name, scaled to max_norm / (norm + 1e-7) where their p-norm exceeds
 * max_norm (the scale in f64, as torch's double, then rounded to weight's
 * dtype). Written with tj_copy_, so a trace functionalizes it. */
static int renorm_rows(tj_tensor *w, tj_tensor *indices, double max_norm, double p)
{
    int64_t all = -1;
    int dim1 = 1;
    tj_no_grad_begin();
    tj_tensor *ix = tj_reshape(tj_cast(indices, TJ_I64), 1, &all);
    tj_tensor *rows = tj_index_select(w, 0, ix);
    tj_tensor *norm = tj_cast(tj_vector_norm(rows, p, &dim1, 1, true), TJ_F64);
    tj_tensor *scale = tj_where_xs(tj_gt_s(norm, max_norm),
                                   tj_div(tj_full(TJ_F64, 0, NULL, max_norm), tj_add_s(norm, 1e-7)),
                                   1);
    tj_tensor *now = tj_index_copy(w, 0, ix, tj_mul(rows, tj_cast(scale, w ? w->dtype : TJ_F32)));
    int rc = now ? tj_copy_(w, now) : -1;
    tj_no_grad_end();
    return rc;
}

tj_tensor *tj_embedding_bag_ex(tj_tensor *weight, tj_tensor *indices, tj_tensor *offsets,
                               const tj_embedding_bag_options *options)
{
    static const tj_embedding_bag_options none;
    const tj_embedding_bag_options *o = options ? options : &none;
    tj_tensor *in[4] = {weight, indices, offsets, o->per_sample_weights};
    int n = in[3] ? 4 : offsets ? 3 : 2;
    ir_attrs at = {0};
    if (!weight || !indices)
        return fe_apply(OP_embedding_bag, in, n, &at); /* its message for a NULL input */
    if (rt_check_live(in, n, "embedding_bag") != 0 || bag_attrs(in, n, o, &at) != 0)
        return NULL;
    if (o->max_norm > 0) {
        /* the whole call is checked first: a refused one writes nothing */
        ir_type types[4];
        const ir_type *tp[4] = {NULL, NULL, NULL, NULL};
        for (int k = 0; k < n; k++)
            if (in[k])
                rt_type_of(in[k], &types[k]), tp[k] = &types[k];
        char why[512];
        ir_type out;
        if (ir_infer(OP_embedding_bag, tp, n, &at, &out, why, sizeof why) != 0) {
            bag_fail(in, n, "%s", why);
            return NULL;
        }
        if (renorm_rows(weight, indices, o->max_norm, o->norm_type > 0 ? o->norm_type : 2) != 0) {
            snprintf(why, sizeof why, "%s", tj_last_error());
            bag_fail(in, n, "max_norm: %s", why);
            return NULL;
        }
    }
    return fe_apply(OP_embedding_bag, in, n, &at);
}

tj_tensor *tj_embedding_bag(tj_tensor *weight, tj_tensor *indices, tj_tensor *offsets,
                            tj_reduce_op mode, tj_tensor *per_sample_weights,
                            bool include_last_offset)
{
    tj_embedding_bag_options o = {.mode = mode,
                                  .per_sample_weights = per_sample_weights,
                                  .include_last_offset = include_last_offset};
    return tj_embedding_bag_ex(weight, indices, offsets, &o);
}
