/* fold_quant.c - the quantization fold: dequantize -> linear/matmul/conv2d (->
 * relu) (-> quantize_per_tensor) becomes one int8 op, qlinear or qconv2d
 * (ir/ops.def; eager kernels runtime/k_qgemm.c: u8 x s8, s32 sums, vpdpbusd
 * with VNNI; the convolution by im2col).
 * A rule table run by the rewrite driver (passes/rewrite.h), to a fixed point:
 *
 *   qlinear          linear(dequantize(qx), dequantize(qw), bias?)
 *                    -> qlinear(qx, qw, scales, zero_points, bias?) {dtype=f32}
 *                    (qx per tensor; qw [N, K] per channel along 0 or per
 *                    tensor: its scale and zero point become [N] constants;
 *                    the bias f32 [N])
 *   qmatmul          matmul(dequantize(qx), dequantize(qw)) with qw [K, N]
 *                    (per channel along 1 or per tensor): the same on qw
 *                    transposed (a view)
 *   qconv2d          conv2d(dequantize(qx), dequantize(qw), bias?) with qw
 *                    [O, C/g, kh, kw] per channel along 0 or per tensor ->
 *                    qconv2d (the int8 convolution: im2col + the int8 GEMM)
 *   requantize       quantize_per_tensor(qlinear {dtype=f32}) -> qlinear
 *                    {dtype=u8/i8, out_scale, out_zero_point}
 *                    (qconv2d likewise)
 *   requantize-relu  quantize_per_tensor(relu(qlinear {dtype=f32})) ->
 *                    maximum(qlinear {dtype=q}, out_zero_point): quantizing
 *                    is monotone and maps 0 to the zero point, so this is
 *                    exactly the quantized relu
 *
 * The results equal the unfused graph's up to f32 rounding: the unfused
 * graph sums dequantized f32 products, the fold sums the integers exactly
 * (s32) and scales once; a requantized value can differ by one step where
 * the f32 result sits at a rounding tie.
 */
#include <string.h>

#include "../ir/window2d.h"
#include "rewrite.h"

/* x = dequantize(q) per tensor: q, and its scale and zero point in *s, *z. */
static ir_node *per_tensor(const ir_node *x, double *s, int64_t *z)
{
    if (!x || x->op != OP_dequantize || (x->nin > 1 && x->in[1]))
        return NULL;
    *s = x->attrs[0].f;
    *z = x->attrs[1].i[0];
    return x->in[0];
}

/* w = dequantize(q) of a 2-D q, per channel along `axis` or per tensor:
 * q, with the channel scales and zero points (constants [size] made here
 * for a per-tensor q). NULL when it is neither. (ndim: 4 for a conv weight,
 * per channel along 0.) */
static ir_node *weight(ps_builder *b, const ir_node *w, int ndim, int axis, ir_node **sc,
                       ir_node **zp)
{
    if (!w || w->op != OP_dequantize || w->type.ndim != ndim)
        return NULL;
    ir_node *q = w->in[0];
    int64_t c = q->type.shape[axis];
    if (w->nin > 1 && w->in[1]) {
        int64_t ax = w->attrs[2].i[0];
        if ((ax < 0 ? ax + ndim : ax) != axis)
            return NULL;
        *sc = w->in[1];
        *zp = w->in[2];
        return q;
    }
    if (IR_IS_SYM(c))
        return NULL;
    ir_type ts = {.dtype = TJ_F32, .ndim = 1, .shape = {c}};
    ir_type tz = {.dtype = TJ_I64, .ndim = 1, .shape = {c}};
    *sc = ps_b_const(b, w->attrs[0].f, &ts);
    *zp = ps_b_const(b, (double)w->attrs[1].i[0], &tz);
    return *sc && *zp ? q : NULL;
}

static ir_node *qlinear(ps_builder *b, ir_node *qx, double xs, int64_t xz, ir_node *qw,
                        ir_node *sc, ir_node *zp, ir_node *bias)
{
    ir_attrs a = {0};
    ir_attr_float(&a.a[0], xs);
    ir_attr_int(&a.a[1], xz);
    ir_attr_float(&a.a[2], 1.0);
    ir_attr_int(&a.a[3], 0);
    ir_attr_int(&a.a[4], TJ_F32);
    return ps_b_op(b, OP_qlinear, (ir_node *[]){qx, qw, sc, zp, bias}, bias ? 5 : 4, &a);
}

static ir_node *rule_qlinear(ps_builder *b, ir_node *n)
{
    double xs;
    int64_t xz;
    ir_node *sc, *zp, *bias = n->nin > 2 ? n->in[2] : NULL;
    ir_node *qx = per_tensor(n->in[0], &xs, &xz);
    if (!qx || (bias && (bias->type.dtype != TJ_F32 || bias->type.ndim != 1 || bias->type.weak)))
        return NULL;
    ir_node *qw = weight(b, n->in[1], 2, 0, &sc, &zp);
    if (!qw || (bias && bias->type.shape[0] != qw->type.shape[0]))
        return NULL;
    return qlinear(b, qx, xs, xz, qw, sc, zp, bias);
}

static ir_node *rule_qmatmul(ps_builder *b, ir_node *n)
{
    double xs;
    int64_t xz;
    ir_node *sc, *zp;
    ir_node *qx = per_tensor(n->in[0], &xs, &xz);
    if (!qx || qx->type.ndim < 1)
        return NULL;
    ir_node *qw = weight(b, n->in[1], 2, 1, &sc, &zp);
    if (!qw)
        return NULL;
    return qlinear(b, qx, xs, xz, ps_b_transpose_last2(b, qw), sc, zp, NULL);
}

static ir_node *rule_qconv2d(ps_builder *b, ir_node *n)
{
    double xs;
    int64_t xz;
    ir_node *sc, *zp, *bias = n->nin > 2 ? n->in[2] : NULL;
    ir_node *qx = per_tensor(n->in[0], &xs, &xz);
    if (!qx || qx->type.ndim != 4 ||
        (bias && (bias->type.dtype != TJ_F32 || bias->type.ndim != 1 || bias->type.weak)))
        return NULL;
    ir_node *qw = weight(b, n->in[1], 4, 0, &sc, &zp);
    ir_attrs ca;
    ir_window2d wd;
    char why[256];
    ir_node_attrs(n, &ca);
    if (!qw || ir_window2d_of(OP_conv2d, &ca, &qw->type.shape[2], &wd, why, sizeof why))
        return NULL;
    ir_attrs a = {0};
    ir_attr_float(&a.a[0], xs);
    ir_attr_int(&a.a[1], xz);
    ir_attr_float(&a.a[2], 1.0);
    ir_attr_int(&a.a[3], 0);
    ir_attr_int(&a.a[4], TJ_F32);
    const int64_t win[7] = {wd.stride[0], wd.stride[1], wd.padding[0], wd.padding[1],
                            wd.dilation[0], wd.dilation[1], wd.groups};
    a.a[5].n = 7;
    memcpy(a.a[5].i, win, sizeof win);
    return ps_b_op(b, OP_qconv2d, (ir_node *[]){qx, qw, sc, zp, bias}, bias ? 5 : 4, &a);
}

/* The int8 op of q = quantize_per_tensor(y) with y's f32 qlinear/qconv2d f. */
static ir_node *requant(ps_builder *b, const ir_node *q, const ir_node *f)
{
    if (!f || (f->op != OP_qlinear && f->op != OP_qconv2d) || f->attrs[4].i[0] != TJ_F32)
        return NULL;
    ir_attrs a;
    ir_node_attrs(f, &a);
    a.a[2] = q->attrs[0];   /* scale, zero_point, dtype */
    a.a[3] = q->attrs[1];
    a.a[4] = q->attrs[2];
    return ps_b_op(b, f->op, f->in, f->nin, &a);
}

static ir_node *rule_requantize(ps_builder *b, ir_node *n) { return requant(b, n, n->in[0]); }

static ir_node *rule_requantize_relu(ps_builder *b, ir_node *n)
{
    const ir_node *r = n->in[0];
    if (r->op != OP_relu)
        return NULL;
    ir_node *q = requant(b, n, r->in[0]);
    return q ? b_bin(b, OP_maximum, q, ps_b_scalar(b, (double)n->attrs[1].i[0], TJ_I64)) : NULL;
}

static const ps_rule rules[] = {
    {"qlinear", OP_linear, rule_qlinear},
    {"qmatmul", OP_matmul, rule_qmatmul},
    {"qconv2d", OP_conv2d, rule_qconv2d},
    {"requantize", OP_quantize_per_tensor, rule_requantize},
    {"requantize-relu", OP_quantize_per_tensor, rule_requantize_relu},
};

ir_graph *ps_fold_quant(ir_graph *g, char *err, size_t nerr)
{
    ps_rewrite_opts o = {.pass = "fold_quant"};
    return ps_rewrite(g, rules, (int)(sizeof rules / sizeof *rules), &o, err, nerr);
}
