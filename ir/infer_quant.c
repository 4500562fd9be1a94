/* infer_quant.c - shape/dtype rules of the int8 quantization ops
 * (quantize_per_tensor, quantize_per_channel, dequantize): the quantized
 * dtype is u8 or i8, a scale must be positive and finite, a zero point must
 * fit the quantized dtype, a per-channel axis must be one of x's dims and the
 * scales and zero points must have its size. Per-channel values are data,
 * checked by the kernels (runtime/k_quant.c).
 */
#include <math.h>
#include <string.h>

#include "infer.h"
#include "window2d.h"

static int check_qdtype(tj_dtype dt, char *err, size_t nerr)
{
    if (dt != TJ_U8 && dt != TJ_I8)
        return ir_fail(err, nerr, "the quantized dtype must be u8 or i8, got %s",
                       tj_dtype_name(dt));
    return 0;
}

static int check_scale_zp(double scale, int64_t zp, tj_dtype dt, char *err, size_t nerr)
{
    if (!(scale > 0) || !isfinite(scale))
        return ir_fail(err, nerr, "scale must be positive and finite, got %g", scale);
    int64_t lo = dt == TJ_U8 ? 0 : -128, hi = dt == TJ_U8 ? 255 : 127;
    if (zp < lo || zp > hi)
        return ir_fail(err, nerr, "zero_point %lld is out of range for %s [%lld, %lld]",
                       (long long)zp, tj_dtype_name(dt), (long long)lo, (long long)hi);
    return 0;
}

/* scales (float) and zero_points (integer), 1-D of x's size along axis;
 * *axis normalized. */
static int check_channels(const ir_type *x, const ir_type *s, const ir_type *z, int64_t *axis,
                          char *err, size_t nerr)
{
    if (*axis < -x->ndim || *axis >= x->ndim || x->ndim == 0)
        return ir_fail(err, nerr, "axis %lld is out of range for a %d-D tensor",
                       (long long)*axis, x->ndim);
    if (*axis < 0)
        *axis += x->ndim;
    int64_t c = x->shape[*axis];
    if (s->ndim != 1 || s->shape[0] != c || !ir_dtype_is_float(s->dtype))
        return ir_fail(err, nerr, "scales must be a 1-D float tensor of %lld (the size of dim %lld)",
                       (long long)c, (long long)*axis);
    if (z->ndim != 1 || z->shape[0] != c || ir_dtype_category(z->dtype) != IR_CAT_INT)
        return ir_fail(err, nerr,
                       "zero_points must be a 1-D integer tensor of %lld (the size of dim %lld)",
                       (long long)c, (long long)*axis);
    return 0;
}

int ir_infer_quantize_per_tensor(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    tj_dtype dt = (tj_dtype)a->a[2].i[0];
    if (x->dtype != TJ_F32 && x->dtype != TJ_F64)
        return ir_fail(err, nerr, "x must be f32 or f64, got %s", tj_dtype_name(x->dtype));
    if (check_qdtype(dt, err, nerr) || check_scale_zp(a->a[0].f, a->a[1].i[0], dt, err, nerr))
        return -1;
    ir_set(out, dt, x->ndim, x->shape);
    return 0;
}

int ir_infer_quantize_per_channel(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    tj_dtype dt = (tj_dtype)a->a[1].i[0];
    int64_t axis = a->a[0].i[0];
    if (x->dtype != TJ_F32 && x->dtype != TJ_F64)
        return ir_fail(err, nerr, "x must be f32 or f64, got %s", tj_dtype_name(x->dtype));
    if (check_qdtype(dt, err, nerr) || check_channels(x, in[1], in[2], &axis, err, nerr))
        return -1;
    ir_set(out, dt, x->ndim, x->shape);
    return 0;
}

int ir_infer_dequantize(IR_INFER_ARGS)
{
    const ir_type *q = in[0];
    if (check_qdtype(q->dtype, err, nerr))
        return -1;
    bool per_channel = nin > 1 && in[1];
    if (per_channel != (nin > 2 && in[2] != NULL))
        return ir_fail(err, nerr, "scales and zero_points go together (per channel) or not at all");
    int64_t axis = a->a[2].i[0];
    if (per_channel ? check_channels(q, in[1], in[2], &axis, err, nerr)
                    : check_scale_zp(a->a[0].f, a->a[1].i[0], q->dtype, err, nerr))
        return -1;
    ir_set(out, TJ_F32, q->ndim, q->shape);
    return 0;
}

/* ---- the fold's int8 GEMMs (passes/fold_quant.c) -------------------------------------- */

/* qx's quantization, the weight's channels (N of them), the bias, the
 * output dtype (f32, or u8/i8 with its own scale and zero point). */
static int check_qgemm(const ir_type *const *in, int nin, const ir_attrs *a, int64_t n,
                       char *err, size_t nerr)
{
    const ir_type *x = in[0], *w = in[1], *b = nin > 4 ? in[4] : NULL;
    if (check_qdtype(x->dtype, err, nerr) || check_qdtype(w->dtype, err, nerr) ||
        check_scale_zp(a->a[0].f, a->a[1].i[0], x->dtype, err, nerr))
        return -1;
    int64_t axis = 0;
    if (check_channels(w, in[2], in[3], &axis, err, nerr))
        return -1;
    if (b && (b->ndim != 1 || b->shape[0] != n || b->dtype != TJ_F32))
        return ir_fail(err, nerr, "bias must be f32 [%lld]", (long long)n);
    tj_dtype dt = (tj_dtype)a->a[4].i[0];
    char why[256];
    if (dt != TJ_F32 && (check_qdtype(dt, why, sizeof why) ||
                         check_scale_zp(a->a[2].f, a->a[3].i[0], dt, why, sizeof why)))
        return ir_fail(err, nerr, "the output (f32, or u8/i8 quantized): %s", why);
    return 0;
}

int ir_infer_qlinear(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *w = in[1];
    if (x->ndim < 1 || w->ndim != 2 || w->shape[1] != x->shape[x->ndim - 1])
        return ir_fail(err, nerr, "weight must be 2-D [N, K] with K = x's last dim");
    if (check_qgemm(in, nin, a, w->shape[0], err, nerr))
        return -1;
    int64_t shape[TJ_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = w->shape[0];
    ir_set(out, (tj_dtype)a->a[4].i[0], x->ndim, shape);
    return 0;
}

void ir_qconv_window(const ir_attrs *a, const int64_t *w_shape, ir_window2d *w)
{
    const int64_t *v = a->a[5].i;
    *w = (ir_window2d){.kernel = {w_shape[2], w_shape[3]}, .stride = {v[0], v[1]},
                       .padding = {v[2], v[3]}, .dilation = {v[4], v[5]}, .groups = v[6]};
}

int ir_infer_qconv2d(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *w = in[1];
    const ir_attr *win = &a->a[5];
    if (x->ndim != 4 || w->ndim != 4)
        return ir_fail(err, nerr, "input and weight must be 4-D");
    if (win->n != 7)
        return ir_fail(err, nerr, "window must hold 7 values (stride, padding, dilation, groups)");
    for (int k = 0; k < 7; k++)
        if (k < 2 || k >= 4 ? win->i[k] < 1 : win->i[k] < 0)
            return ir_fail(err, nerr, "window value %d is %lld: strides, dilations and groups "
                           "must be positive, paddings not negative", k, (long long)win->i[k]);
    int64_t g = win->i[6];
    for (int d = 0; d < 4; d++)
        if (x->shape[d] < 0 || w->shape[d] < 0)   /* symbolic */
            return ir_fail(err, nerr, "symbolic sizes are not supported");
    if (x->shape[1] % g || w->shape[0] % g || w->shape[1] * g != x->shape[1])
        return ir_fail(err, nerr, "channels: input %lld, weight [%lld, %lld] and groups %lld disagree",
                       (long long)x->shape[1], (long long)w->shape[0], (long long)w->shape[1],
                       (long long)g);
    if (check_qgemm(in, nin, a, w->shape[0], err, nerr))
        return -1;
    ir_window2d wd;
    ir_qconv_window(a, w->shape, &wd);
    int64_t shape[4] = {x->shape[0], w->shape[0], ir_window_out(&wd, 0, x->shape[2]),
                        ir_window_out(&wd, 1, x->shape[3])};
    if (shape[2] <= 0 || shape[3] <= 0)
        return ir_fail(err, nerr, "the window does not fit the input");
    ir_set(out, (tj_dtype)a->a[4].i[0], 4, shape);
    return 0;
}
