/* qstatic.c - static post-training quantization (tjit.h: tj_qstatic_*,
 * tj_quantize_static), in torch.ao's eager-mode style: the model marks its
 * quantization points, observers record ranges over calibration batches,
 * and the compiled model then runs int8 kernels.
 *
 *   observe   tj_qstatic_act(q, id, x) records min/max of x (per tensor) and
 *             returns x; tj_qstatic_weight(q, id, w) returns w
 *   finish    activations: affine u8, scale = (max - min) / 255 over a range
 *             that holds 0, zero point = rne(-min / scale); weights:
 *             symmetric i8 per output channel (dim 0), scale = max|w| / 127,
 *             kept quantized
 *   quantized tj_qstatic_act returns dequantize(quantize_per_tensor(x)),
 *             tj_qstatic_weight dequantize_per_channel(the kept int8 weight):
 *             traced by tj_compile, passes/fold_quant.c folds each
 *             dequantize -> conv2d/linear (-> relu) -> quantize into
 *             qconv2d/qlinear (s32 sums on the int8 GEMM)
 *
 * A weight changed after tj_quantize_static is not seen (its int8 copy is
 * kept); quantize again.
 */
#include <math.h>
#include <stdlib.h>

#include "fe.h"

enum { QS_MAX_SITES = 256 };

typedef struct qs_act {
    bool seen;
    double lo, hi;
    double scale;
    int64_t zp;
} qs_act;

typedef struct qs_weight {
    tj_tensor *src;                /* the weight seen in calibration (retained) */
    tj_tensor *q, *scales, *zps;   /* its int8 form, kept when quantized */
} qs_weight;

struct tj_qstatic {
    bool quantized;
    qs_act act[QS_MAX_SITES];
    qs_weight w[QS_MAX_SITES];
};

tj_qstatic *tj_qstatic_new(void)
{
    tj_qstatic *q = calloc(1, sizeof *q);
    if (!q)
        rt_error("tj_qstatic_new: out of memory");
    return q;
}

void tj_qstatic_free(tj_qstatic *q)
{
    if (!q)
        return;
    for (int i = 0; i < QS_MAX_SITES; i++) {
        tj_release(q->w[i].src);
        tj_release(q->w[i].q);
        tj_release(q->w[i].scales);
        tj_release(q->w[i].zps);
    }
    free(q);
}

static bool site_ok(const char *fn, const tj_qstatic *q, int id)
{
    if (!q) {
        rt_error("%s: q is NULL", fn);
        return false;
    }
    if (id < 0 || id >= QS_MAX_SITES) {
        rt_error("%s: id %d is out of range [0, %d)", fn, id, QS_MAX_SITES);
        return false;
    }
    return true;
}

tj_tensor *tj_qstatic_act(tj_qstatic *q, int id, tj_tensor *x)
{
    if (!x || !site_ok("tj_qstatic_act", q, id))
        return NULL;
    qs_act *a = &q->act[id];
    if (q->quantized) {
        if (!a->seen) {
            rt_error("tj_qstatic_act: site %d saw no calibration batch", id);
            return NULL;
        }
        return tj_dequantize(tj_quantize_per_tensor(x, a->scale, a->zp, TJ_U8), a->scale, a->zp);
    }
    tj_scope_begin();
    double lo = tj_item(tj_amin(x, NULL, 0, false)), hi = tj_item(tj_amax(x, NULL, 0, false));
    tj_scope_end();
    if (isnan(lo) || isnan(hi)) {
        rt_error("tj_qstatic_act: site %d: the calibration values hold NaN (or x is empty)", id);
        return NULL;
    }
    a->lo = a->seen ? fmin(a->lo, lo) : lo;
    a->hi = a->seen ? fmax(a->hi, hi) : hi;
    a->seen = true;
    return x;
}

tj_tensor *tj_qstatic_weight(tj_qstatic *q, int id, tj_tensor *w)
{
    if (!w || !site_ok("tj_qstatic_weight", q, id))
        return NULL;
    qs_weight *k = &q->w[id];
    if (!q->quantized) {
        if (k->src && k->src != w) {
            rt_error("tj_qstatic_weight: site %d was given two different weights", id);
            return NULL;
        }
        if (!k->src)
            k->src = tj_retain(w);
        return w;
    }
    if (!k->q) {
        rt_error("tj_qstatic_weight: site %d was not seen in calibration", id);
        return NULL;
    }
    return tj_dequantize_per_channel(k->q, k->scales, k->zps, 0);
}

/* The affine u8 parameters of [lo, hi] (widened to hold 0). */
static void act_params(qs_act *a)
{
    double lo = fmin(a->lo, 0), hi = fmax(a->hi, 0);
    double s = (hi - lo) / 255;
    a->scale = s > 0 && isfinite(s) ? s : 1.0;
    double z = nearbyint(-lo / a->scale);
    a->zp = z < 0 ? 0 : z > 255 ? 255 : (int64_t)z;
}

/* w's symmetric i8 per output channel, kept in k. */
static int weight_params(qs_weight *k, tj_tensor *w)
{
    int64_t c = tj_ndim(w) > 0 ? tj_shape(w)[0] : 0;
    int dims[TJ_MAX_DIMS];
    int nd = 0;
    for (int d = 1; d < tj_ndim(w); d++)
        dims[nd++] = d;
    tj_scope_begin();
    tj_tensor *mx = nd ? tj_amax(tj_abs(w), dims, nd, false) : tj_abs(w);
    tj_tensor *s = tj_div_s(tj_cast(mx, TJ_F32), 127.0);
    /* a zero channel: scale 1 */
    s = tj_where(tj_gt_s(s, 0.0), s, tj_full(TJ_F32, 1, &c, 1.0));
    tj_tensor *z = tj_zeros(TJ_I64, 1, &c);
    tj_tensor *qw = tj_quantize_per_channel(tj_cast(w, TJ_F32), s, z, 0, TJ_I8);
    if (qw) {
        k->q = tj_keep(qw);
        k->scales = tj_keep(s);
        k->zps = tj_keep(z);
    }
    tj_scope_end();
    return qw ? 0 : -1;
}

int tj_quantize_static(tj_qstatic *q, tj_model_fn fn, void *ctx, tj_calib_fn calib,
                       void *calib_ctx)
{
    if (!q || !fn || !calib) {
        rt_error("tj_quantize_static: %s is NULL", !q ? "q" : !fn ? "fn" : "calib");
        return -1;
    }
    if (q->quantized) {
        rt_error("tj_quantize_static: q is quantized already (make a new one)");
        return -1;
    }
    int batches = 0;
    for (;; batches++) {
        tj_scope_begin();
        tj_tensor *in[TJ_QSTATIC_MAX_INPUTS];
        int n = calib(calib_ctx, batches, in);
        tj_tensor *out = n > 0 ? fn(ctx, in, n) : NULL;
        tj_scope_end();
        if (n <= 0)
            break;
        if (!out)
            return -1;   /* the model's error stands */
    }
    if (batches == 0) {
        rt_error("tj_quantize_static: the calibration callback gave no batch");
        return -1;
    }
    for (int i = 0; i < QS_MAX_SITES; i++) {
        if (q->act[i].seen)
            act_params(&q->act[i]);
        if (q->w[i].src && weight_params(&q->w[i], q->w[i].src))
            return -1;
    }
    q->quantized = true;
    return 0;
}
