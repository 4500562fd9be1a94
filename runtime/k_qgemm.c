/* k_qgemm.c - eager kernels of the int8 GEMM ops that the quantization fold
 * makes (ir/ops.def: qlinear; passes/fold_quant.c): u8 x s8 products with
 * s32 sums on tjit's GEMM (runtime/gemm.h: vpdpbusd where the CPU has VNNI),
 * dequantized, bias added, and either kept in f32 or requantized with
 * quantize_per_tensor's formula (rt_q_round).
 *
 *   A  the quantized input as u8: an i8 input is shifted by +128 with its
 *      zero point (exact), so the sums are of (a - za) whatever its dtype
 *   B  the weight as s8: a u8 weight is shifted by -128 with its zero
 *      points; what zero points remain (an asymmetric weight) are taken out
 *      of the exact sums as -zw[j] * sum_k (a - za), added before the bias
 *   C  (sum_k (a - za) * (w - zw)) * x_scale * w_scale[j] + bias[j]
 */
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "kernels.h"

/* Scratch of one call, freed as a whole. */
typedef struct qg_mem {
    uint8_t *a;        /* [m, k] u8 */
    int8_t *w;         /* [n, k] s8 */
    float *ws, *bias, *a_scale, *res, *c;
    int32_t *wz, *a_zp;
} qg_mem;

static void qg_free(qg_mem *s)
{
    free(s->a), free(s->w), free(s->ws), free(s->bias), free(s->a_scale), free(s->res);
    free(s->c), free(s->wz), free(s->a_zp);
}

static void *qg_alloc(size_t n, size_t es) { return malloc((n ? n : 1) * es); }

/* t's elements (u8 or i8, any strides) in row-major order, shifted by `shift`
 * into dst (as unsigned bytes; the caller reads them as u8 or s8). */
static void gather_bytes(const tj_tensor *t, uint8_t *dst, int shift)
{
    int64_t idx[TJ_MAX_DIMS] = {0}, n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    const uint8_t *base = (const uint8_t *)t->storage->data;
    for (int64_t e = 0; e < n; e++) {
        int64_t off = t->offset;
        for (int d = 0; d < t->ndim; d++)
            off += idx[d] * t->strides[d];
        dst[e] = (uint8_t)(base[off] + shift);
        for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->shape[d]; d--)
            idx[d] = 0;
    }
}

/* out (f32 [m, n], or u8/i8 requantized) = the int8 product of a [m, k]
 * (u8, zero point za, scale sa) and w [n, k] (s8, zero points wz, scales
 * ws), plus bias. s holds the operands; it gets the rest of the scratch. */
static int qgemm(const char *name, qg_mem *s, int64_t m, int64_t n, int64_t k, int32_t za,
                 float sa, tj_tensor *out, const ir_attrs *a)
{
    tjg_packed p = {0};
    if (tjg_pack_s8(&p, s->w, 1, k, k, n, s->ws))
        return -1;
    bool asym = false;
    for (int64_t j = 0; j < n; j++)
        asym = asym || s->wz[j] != 0;
    s->a_scale = qg_alloc((size_t)m, sizeof(float));
    s->a_zp = qg_alloc((size_t)m, sizeof(int32_t));
    bool q = out->dtype != TJ_F32;
    if (q)
        s->c = qg_alloc((size_t)(m * n), sizeof(float));
    if (asym)
        s->res = qg_alloc((size_t)(m * n), sizeof(float));
    int r = -1;
    if (!s->a_scale || !s->a_zp || (q && !s->c) || (asym && !s->res)) {
        rt_error("%s: out of memory", name);
        goto done;
    }
    for (int64_t i = 0; i < m; i++) {
        s->a_scale[i] = sa;
        s->a_zp[i] = za;
        if (!asym)
            continue;
        int64_t rsum = 0;   /* sum_k (a - za): exact */
        for (int64_t kk = 0; kk < k; kk++)
            rsum += (int64_t)s->a[i * k + kk] - za;
        for (int64_t j = 0; j < n; j++)
            s->res[i * n + j] = -(float)((int64_t)s->wz[j] * rsum) * (sa * s->ws[j]);
    }
    tjg_epilogue e = {.bias = s->bias, .res = s->res, .ldr = n};
    float *c = q ? s->c : (float *)rt_ptr(out);
    if ((r = tjg_gemm_u8s8(m, s->a, k, s->a_zp, s->a_scale, &p, c, n, &e)) != 0)
        goto done;
    if (q) {
        float os = (float)a->a[2].f;
        int32_t oz = (int32_t)a->a[3].i[0];
        int64_t lo = out->dtype == TJ_U8 ? 0 : -128, hi = out->dtype == TJ_U8 ? 255 : 127;
        uint8_t *o = rt_ptr(out);
        for (int64_t e2 = 0; e2 < m * n; e2++)
            o[e2] = (uint8_t)rt_q_round(c[e2], os, oz, lo, hi);
    }
done:
    tjg_packed_free(&p);
    return r;
}

/* The weight [n, k] as s8 with its per-channel scales and zero points
 * (shifted with it), and the bias as a contiguous f32 [n] (or NULL). */
static int weight_side(const char *name, qg_mem *s, const tj_tensor *w, const tj_tensor *ws,
                       const tj_tensor *wz, const tj_tensor *bias, int64_t n, int64_t k)
{
    bool wu = w->dtype == TJ_U8;
    if (rt_q_channels(name, ws, wz, n, wu ? 0 : -128, wu ? 255 : 127, &s->ws, &s->wz))
        return -1;
    if (!(s->w = qg_alloc((size_t)(n * k), 1)))
        return rt_error("%s: out of memory", name), -1;
    gather_bytes(w, (uint8_t *)s->w, wu ? -128 : 0);
    for (int64_t j = 0; wu && j < n; j++)
        s->wz[j] -= 128;
    if (bias) {
        if (!(s->bias = qg_alloc((size_t)n, sizeof(float))))
            return rt_error("%s: out of memory", name), -1;
        for (int64_t j = 0; j < n; j++)
            s->bias[j] = (float)rt_load_f64(bias, &j);
    }
    return 0;
}

int rt_k_qlinear(RT_KERNEL_ARGS)
{
    const char *name = "qlinear";
    const tj_tensor *x = in[0], *w = in[1], *bias = nin > 4 ? in[4] : NULL;
    int64_t k = w->shape[1], n = w->shape[0], m = 1;
    for (int d = 0; d + 1 < x->ndim; d++)
        m *= x->shape[d];
    qg_mem s = {0};
    int r = -1;
    bool xi = x->dtype == TJ_I8;
    if (weight_side(name, &s, w, in[2], in[3], bias, n, k))
        goto done;
    if (!(s.a = qg_alloc((size_t)(m * k), 1))) {
        rt_error("%s: out of memory", name);
        goto done;
    }
    gather_bytes(x, s.a, xi ? 128 : 0);
    r = m == 0 || n == 0 ? 0
                         : qgemm(name, &s, m, n, k, (int32_t)a->a[1].i[0] + (xi ? 128 : 0),
                                 (float)a->a[0].f, out, a);
done:
    qg_free(&s);
    return r;
}
