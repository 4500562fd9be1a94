/* k_qgemm.c - eager kernels of the int8 GEMM ops that the quantization fold
 * makes (ir/ops.def: qlinear, qconv2d; passes/fold_quant.c): u8 x s8 products with
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
#include "../ir/window2d.h"
#include "kernels.h"

/* Scratch of one call, freed as a whole. */
typedef struct qg_mem {
    uint8_t *a;        /* [m, k] u8 */
    int8_t *w;         /* [n, k] s8 */
    float *ws, *bias, *c;
    int32_t *wz;
} qg_mem;

static void qg_free(qg_mem *s)
{
    free(s->a), free(s->w), free(s->ws), free(s->bias), free(s->c), free(s->wz);
}

static void *qg_alloc(size_t n, size_t es) { return malloc((n ? n : 1) * es); }

/* t's elements (u8 or i8, any strides) in row-major order, shifted by `shift`
 * into dst (as unsigned bytes; the caller reads them as u8 or s8). */
static void gather_bytes(const tj_tensor *t, uint8_t *dst, int shift)
{
    int64_t idx[TJ_MAX_DIMS] = {0}, n = 1, cs[TJ_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    const uint8_t *base = (const uint8_t *)t->storage->data;
    rt_contiguous_strides(t->ndim, t->shape, cs);
    bool contiguous = true;
    for (int d = 0; d < t->ndim; d++)
        contiguous = contiguous && (t->shape[d] == 1 || t->strides[d] == cs[d]);
    if (contiguous) {   /* the common case: one pass the compiler vectorizes */
        const uint8_t *src = base + t->offset;
        for (int64_t e = 0; e < n; e++)
            dst[e] = (uint8_t)(src[e] + shift);
        return;
    }
    for (int64_t e = 0; e < n; e++) {
        int64_t off = t->offset;
        for (int d = 0; d < t->ndim; d++)
            off += idx[d] * t->strides[d];
        dst[e] = (uint8_t)(base[off] + shift);
        for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->shape[d]; d--)
            idx[d] = 0;
    }
}

/* One int8 product: c (f32 [m, n]) = (a [m, k] u8 - za) @ (w [n, k] s8 -
 * wz)^T scaled by sa * ws[j], plus bias[j] (NULL: none). */
typedef struct qg_op {
    const uint8_t *a;
    const int8_t *w;
    const float *ws, *bias;
    const int32_t *wz;
    int32_t za;
    float sa;
} qg_op;

static int qgemm(const char *name, const qg_op *o, int64_t m, int64_t n, int64_t k, float *c)
{
    tjg_packed p = {0};
    if (tjg_pack_s8(&p, o->w, 1, k, k, n, o->ws))
        return -1;
    bool asym = false;
    for (int64_t j = 0; j < n; j++)
        asym = asym || o->wz[j] != 0;
    float *a_scale = qg_alloc((size_t)m, sizeof(float)), *res = NULL;
    int32_t *a_zp = qg_alloc((size_t)m, sizeof(int32_t));
    if (asym)
        res = qg_alloc((size_t)(m * n), sizeof(float));
    int r = -1;
    if (!a_scale || !a_zp || (asym && !res)) {
        rt_error("%s: out of memory", name);
        goto done;
    }
    for (int64_t i = 0; i < m; i++) {
        a_scale[i] = o->sa;
        a_zp[i] = o->za;
        if (!asym)
            continue;
        int64_t rsum = 0;   /* sum_k (a - za): exact */
        for (int64_t kk = 0; kk < k; kk++)
            rsum += (int64_t)o->a[i * k + kk] - o->za;
        for (int64_t j = 0; j < n; j++)
            res[i * n + j] = -(float)((int64_t)o->wz[j] * rsum) * (o->sa * o->ws[j]);
    }
    tjg_epilogue e = {.bias = o->bias, .res = res, .ldr = n};
    r = tjg_gemm_u8s8(m, o->a, k, a_zp, a_scale, &p, c, n, &e);
done:
    free(a_scale), free(a_zp), free(res);
    tjg_packed_free(&p);
    return r;
}

/* Requantizes c [m, n] into dst, element (i, j) at dst[i * rs + j * cs]:
 * rt_q_round's formula (the division kept, so values equal
 * quantize_per_tensor's) in f32, which is exact here: |rne(v / s)| below
 * 2^24 adds the zero point exactly, and above it clamps either way. */
static void requant(const float *c, int64_t m, int64_t n, uint8_t *dst, int64_t rs, int64_t cs,
                    const tj_tensor *out, const ir_attrs *a)
{
    float os = (float)a->a[2].f, zf = (float)a->a[3].i[0];
    bool u = out->dtype == TJ_U8;
    float lo = u ? 0.0f : -128.0f, hi = u ? 255.0f : 127.0f;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float r = nearbyintf(c[i * n + j] / os);
            float t = (r == r ? r : 0.0f) + zf;
            t = t < lo ? lo : t > hi ? hi : t;
            dst[i * rs + j * cs] = (uint8_t)(int)t;
        }
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
    bool xi = x->dtype == TJ_I8, f32 = out->dtype == TJ_F32;
    if (weight_side(name, &s, w, in[2], in[3], bias, n, k))
        goto done;
    if (!(s.a = qg_alloc((size_t)(m * k), 1)) || (!f32 && !(s.c = qg_alloc((size_t)(m * n), 4)))) {
        rt_error("%s: out of memory", name);
        goto done;
    }
    gather_bytes(x, s.a, xi ? 128 : 0);
    qg_op o = {s.a, s.w, s.ws, s.bias, s.wz, (int32_t)a->a[1].i[0] + (xi ? 128 : 0),
               (float)a->a[0].f};
    r = m == 0 || n == 0 ? 0 : qgemm(name, &o, m, n, k, f32 ? (float *)rt_ptr(out) : s.c);
    if (r == 0 && !f32)
        requant(s.c, m, n, rt_ptr(out), n, 1, out, a);
done:
    qg_free(&s);
    return r;
}

/* ---- qconv2d: im2col (padding reads the zero point, which dequantizes to 0)
 * and one GEMM per image and group: [OH*OW, C/g*kh*kw] @ [O/g, C/g*kh*kw]^T */

/* Rows of the image b's group g: (oh, ow) -> its window, c-major like the weight. */
static void im2col(const uint8_t *x, const int64_t *xs, const ir_window2d *wd, int64_t cg,
                   int64_t g, const int64_t *os, uint8_t pad, uint8_t *col)
{
    int64_t kh = wd->kernel[0], kw = wd->kernel[1], H = xs[2], W = xs[3];
    int64_t k = cg * kh * kw;
    /* by (c, i, j), the column of every output position: rows of the
     * input read in order, the padding's positions set apart */
    for (int64_t c = 0; c < cg; c++) {
        const uint8_t *plane = x + (g * cg + c) * H * W;
        for (int64_t i = 0; i < kh; i++)
            for (int64_t j = 0; j < kw; j++) {
                uint8_t *dst = col + (c * kh + i) * kw + j;
                for (int64_t oh = 0; oh < os[0]; oh++) {
                    int64_t h = oh * wd->stride[0] - wd->padding[0] + i * wd->dilation[0];
                    uint8_t *d = dst + oh * os[1] * k;
                    if (h < 0 || h >= H) {
                        for (int64_t ow = 0; ow < os[1]; ow++)
                            d[ow * k] = pad;
                        continue;
                    }
                    const uint8_t *row = plane + h * W;
                    int64_t v0 = j * wd->dilation[1] - wd->padding[1], st = wd->stride[1];
                    for (int64_t ow = 0; ow < os[1]; ow++) {
                        int64_t v = v0 + ow * st;
                        d[ow * k] = v >= 0 && v < W ? row[v] : pad;
                    }
                }
            }
    }
}

/* C [m, og] (one image's rows) into the planes [og][m] at dst: 8 x 8 blocks
 * through AVX2 registers where the CPU has them. */
static void to_planes(const float *c, int64_t m, int64_t og, float *dst)
{
    int64_t i = 0;
    if (tjg_isa_current() >= TJG_AVX2)
        for (; i + 8 <= m; i += 8)
            tjg_transpose8_avx2(c + i * og, og * 4, og, (uint32_t *)(dst + i), m);
    for (; i < m; i++)
        for (int64_t j = 0; j < og; j++)
            dst[j * m + i] = c[i * og + j];
}

/* Columns of at most this many bytes per GEMM: images are batched into one
 * GEMM (more rows to split over the threads, the weight packed once) up to it. */
enum { COL_BYTES = 8 << 20 };

int rt_k_qconv2d(RT_KERNEL_ARGS)
{
    const char *name = "qconv2d";
    const tj_tensor *x = in[0], *w = in[1], *bias = nin > 4 ? in[4] : NULL;
    ir_window2d wd;
    ir_qconv_window(a, w->shape, &wd);
    int64_t B = x->shape[0], C = x->shape[1], O = w->shape[0], G = wd.groups;
    int64_t cg = C / G, og = O / G, k = cg * wd.kernel[0] * wd.kernel[1];
    int64_t os[2] = {out->shape[2], out->shape[3]}, m = os[0] * os[1], hw = x->shape[2] * x->shape[3];
    int64_t nb = m * k > 0 && COL_BYTES / (m * k) < B ? COL_BYTES / (m * k) : B;
    nb = nb < 1 ? 1 : nb;   /* images per GEMM */
    qg_mem s = {0};
    uint8_t *col = NULL;
    int r = -1;
    bool xi = x->dtype == TJ_I8;
    int32_t za = (int32_t)a->a[1].i[0] + (xi ? 128 : 0);
    if (weight_side(name, &s, w, in[2], in[3], bias, O, k))
        goto done;
    if (!(s.a = qg_alloc((size_t)(B * C * hw), 1)) || !(col = qg_alloc((size_t)(nb * m * k), 1)) ||
        !(s.c = qg_alloc((size_t)(nb * m * og), 4))) {
        rt_error("%s: out of memory", name);
        goto done;
    }
    gather_bytes(x, s.a, xi ? 128 : 0);
    r = 0;
    for (int64_t g = 0; g < G && r == 0 && m > 0; g++)
        for (int64_t b0 = 0; b0 < B && r == 0; b0 += nb) {
            int64_t n1 = B - b0 < nb ? B - b0 : nb;
            for (int64_t b = 0; b < n1; b++)
                im2col(s.a + (b0 + b) * C * hw, x->shape, &wd, cg, g, os, (uint8_t)za,
                       col + b * m * k);
            qg_op o = {col, s.w + g * og * k, s.ws + g * og, s.bias ? s.bias + g * og : NULL,
                       s.wz + g * og, za, (float)a->a[0].f};
            if ((r = qgemm(name, &o, n1 * m, og, k, s.c)) != 0)
                break;
            for (int64_t b = 0; b < n1; b++) {   /* [m, og] -> planes [og][m] */
                int64_t at = ((b0 + b) * O + g * og) * m;
                if (out->dtype == TJ_F32)
                    to_planes(s.c + b * m * og, m, og, (float *)rt_ptr(out) + at);
                else
                    requant(s.c + b * m * og, m, og, (uint8_t *)rt_ptr(out) + at, 1, m, out, a);
            }
        }
done:
    free(col);
    qg_free(&s);
    return r;
}
