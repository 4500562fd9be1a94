/* k_quant.c - eager kernels of the int8 quantization ops (ir/ops.def:
 * quantize_per_tensor, quantize_per_channel, dequantize; rules in
 * ir/infer_quant.c). Rounding is to nearest even (nearbyint), like
 * PyTorch's quantize_per_tensor; per-channel scales and zero points are data,
 * checked here: a scale that is not positive and finite or a zero point
 * outside the quantized dtype is an error naming the channel.
 */
#include <math.h>
#include <stdlib.h>

#include "kernels.h"

/* Per channel (or one for the tensor): scales, zero points, the quantized range. */
typedef struct qjob {
    const float *scale;
    const int32_t *zp;
    int64_t lo, hi;          /* the quantized range */
} qjob;

static double load_any(const tj_tensor *t, int64_t off)
{
    const char *p = (const char *)t->storage->data + off * (int64_t)tj_dtype_size(t->dtype);
    switch (t->dtype) {
    case TJ_F32: return *(const float *)p;
    case TJ_F64: return *(const double *)p;
    case TJ_U8: return *(const uint8_t *)p;
    case TJ_I8: return *(const int8_t *)p;
    default: return NAN;   /* not reached: the rules admit the types above */
    }
}

/* Per channel (c of them): the scales and zero points as f32/i32, checked
 * (kernels.h; runtime/k_qgemm.c uses it too). */
int rt_q_channels(const char *name, const tj_tensor *s, const tj_tensor *z, int64_t c,
                    int64_t lo, int64_t hi, float **scale, int32_t **zp)
{
    *scale = malloc((size_t)(c > 0 ? c : 1) * sizeof **scale);
    *zp = malloc((size_t)(c > 0 ? c : 1) * sizeof **zp);
    if (!*scale || !*zp) {
        rt_error("%s: out of memory", name);
        return -1;
    }
    for (int64_t j = 0; j < c; j++) {
        double sv = rt_load_f64(s, &j), zv = rt_load_f64(z, &j);
        if (!(sv > 0) || !isfinite(sv) || !((float)sv > 0) || !isfinite((float)sv)) {
            rt_error("%s: scale %lld is %g: scales must be positive and finite", name,
                     (long long)j, sv);
            return -1;
        }
        if (zv < (double)lo || zv > (double)hi) {
            rt_error("%s: zero point %lld is %g, out of range [%lld, %lld]", name, (long long)j, zv,
                     (long long)lo, (long long)hi);
            return -1;
        }
        (*scale)[j] = (float)sv;
        (*zp)[j] = (int32_t)zv;
    }
    return 0;
}

/* Runs over every element of x (any strides) with its channel along axis
 * (-1: none); quantizes (q true) or dequantizes into the contiguous out. */
static void convert(const tj_tensor *x, tj_tensor *out, int axis, const qjob *j, bool q)
{
    int64_t idx[TJ_MAX_DIMS] = {0}, n = 1;
    for (int d = 0; d < x->ndim; d++)
        n *= x->shape[d];
    for (int64_t k = 0; k < n; k++) {
        int64_t off = x->offset;
        for (int d = 0; d < x->ndim; d++)
            off += idx[d] * x->strides[d];
        int64_t ch = axis >= 0 ? idx[axis] : 0;
        double v = load_any(x, off);
        if (q) {
            int64_t qv = rt_q_round((float)v, j->scale[ch], j->zp[ch], j->lo, j->hi);
            if (out->dtype == TJ_U8)
                ((uint8_t *)rt_ptr(out))[k] = (uint8_t)qv;
            else
                ((int8_t *)rt_ptr(out))[k] = (int8_t)qv;
        } else {
            ((float *)rt_ptr(out))[k] = (float)(v - j->zp[ch]) * j->scale[ch];
        }
        for (int d = x->ndim - 1; d >= 0 && ++idx[d] == x->shape[d]; d--)
            idx[d] = 0;
    }
}

static int run(const char *name, const tj_tensor *x, tj_tensor *out, tj_dtype qdt, int axis,
               const tj_tensor *s, const tj_tensor *z, double scale, int64_t zp, bool q)
{
    qjob j = {.lo = qdt == TJ_U8 ? 0 : -128, .hi = qdt == TJ_U8 ? 255 : 127};
    float *sc = NULL, one_s = (float)scale;
    int32_t *zs = NULL, one_z = (int32_t)zp;
    int r = 0;
    if (s) {
        r = rt_q_channels(name, s, z, x->shape[axis], j.lo, j.hi, &sc, &zs);
        j.scale = sc, j.zp = zs;
    } else {
        j.scale = &one_s, j.zp = &one_z;
        axis = -1;
    }
    if (r == 0)
        convert(x, out, axis, &j, q);
    free(sc);
    free(zs);
    return r;
}

static int norm_axis(int64_t axis, int ndim) { return (int)(axis < 0 ? axis + ndim : axis); }

int rt_k_quantize_per_tensor(RT_KERNEL_ARGS)
{
    return run("quantize_per_tensor", in[0], out, out->dtype, -1, NULL, NULL, a->a[0].f,
               a->a[1].i[0], true);
}

int rt_k_quantize_per_channel(RT_KERNEL_ARGS)
{
    return run("quantize_per_channel", in[0], out, out->dtype,
               norm_axis(a->a[0].i[0], in[0]->ndim), in[1], in[2], 0, 0, true);
}

int rt_k_dequantize(RT_KERNEL_ARGS)
{
    bool pc = nin > 2 && in[1];
    return run("dequantize", in[0], out, in[0]->dtype, pc ? norm_axis(a->a[2].i[0], in[0]->ndim) : -1,
               pc ? in[1] : NULL, pc ? in[2] : NULL, a->a[0].f, a->a[1].i[0], false);
}
