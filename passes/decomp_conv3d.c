/* decomp_conv3d.c - decompositions of ops.def's "3-D and transposed
 * convolution, 3-D pools" rows (geometry and rules: ir/infer_conv3d.c):
 *
 *   conv3d        one conv2d: x permuted to [N,D,C,H,W]; for each depth tap kd
 *                 the strided depth slice x[:, kd*dil + s*i] (after depth
 *                 padding), the kD slices concatenated per group into channels
 *                 -> [N*D', groups*kD*C/groups, H, W]; w [O,Cg,kD,kH,kW] ->
 *                 [O, kD*Cg, kH, kW]; the result [N*D',O,H',W'] permuted back
 *   conv_transpose1d/2d/3d  strided without dilation: the sub-pixel form
 *                 (conv_transpose_phases), one stride-1 convolution whose
 *                 output channels hold the stride phases, interleaved; else
 *                 the convolution (conv1d/2d/3d, stride 1) of x with stride-1
 *                 zeros inserted between its elements, padded by dil(k-1) - p
 *                 before and dil(k-1) - p + output_padding after (negative:
 *                 cropped), with w [C,O/g,k..] regrouped to [O, C/g, k..] and
 *                 flipped in space (the phases do a 1/stride^nd share of its
 *                 multiplications, the rest being the inserted zeros)
 *   max_pool3d, avg_pool3d  separable: the 2-D pool over (H, W) of
 *                 [N, C*D, H, W], then the 2-D pool with kernel (kD, 1) over
 *                 [N*C, 1, D, H'*W']. Max is separable; so is the average,
 *                 because torch's divisor (with or without the padding) is
 *                 the product of each dim's count.
 */
#include <string.h>

#include "../ir/infer.h"
#include "decomp.h"

enum { MAX_TAPS = 1024 };   /* conv3d: depth taps, each a slice in the graph */

static int geometry(ps_builder *b, const ir_node *n, ir_node *const *in, const ir_attrs *a,
                    ir_convnd *c)
{
    const ir_type *t[3];
    for (int k = 0; k < n->nin; k++)
        t[k] = in[k] ? &in[k]->type : NULL;
    char err[256];
    if (ir_convnd_of(n->op, t, n->nin, a, c, err, sizeof err)) {
        ps_b_fail(b, "%s", err);
        return -1;
    }
    if (c->batched && in[0]->type.shape[0] < 0) {
        ps_b_fail(b, "%s: a symbolic batch dim is not supported", ir_ops[n->op].name);
        return -1;
    }
    return 0;
}

static ir_node *op_ints(ps_builder *b, ir_op op, ir_node *x, const int64_t *v, int nv)
{
    ir_attrs at = {0};
    ir_attr_ints(&at.a[0], v, nv);
    return ps_b_op(b, op, &x, 1, &at);
}

/* pads: (before, after) pairs from the last dim backwards, as OP_pad. */
static ir_node *pad(ps_builder *b, ir_node *x, const int64_t *pads, int n)
{
    ir_attrs at = {0};
    ir_attr_ints(&at.a[0], pads, n);
    ir_attr_float(&at.a[1], 0);
    return ps_b_op(b, OP_pad, &x, 1, &at);
}

static ir_node *slice(ps_builder *b, ir_node *x, int64_t dim, int64_t start, int64_t end,
                      int64_t step)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], start);
    ir_attr_int(&at.a[2], end);
    ir_attr_int(&at.a[3], step);
    return ps_b_op(b, OP_slice, &x, 1, &at);
}

/* The convolution op of nd spatial dims with stride 1, no padding. */
static ir_node *conv(ps_builder *b, int nd, ir_node *x, ir_node *w, ir_node *bias,
                     const int64_t *stride, const int64_t *padding, const int64_t *dil,
                     int64_t groups)
{
    ir_attrs at = {0};
    ir_op op = nd == 1 ? OP_conv1d : nd == 2 ? OP_conv2d : OP_conv3d;
    if (nd == 1) {
        ir_attr_int(&at.a[0], stride[0]);
        ir_attr_int(&at.a[1], padding[0]);
        ir_attr_int(&at.a[2], dil[0]);
    } else {
        ir_attr_ints(&at.a[0], stride, nd);
        ir_attr_ints(&at.a[1], padding, nd);
        ir_attr_ints(&at.a[2], dil, nd);
    }
    ir_attr_int(&at.a[3], groups);
    return ps_b_op(b, op, (ir_node *[]){x, w, bias}, bias ? 3 : 2, &at);
}

ir_node *ps_decomp_conv3d(PS_DECOMP_ARGS)
{
    ir_convnd c;
    if (geometry(b, n, in, a, &c))
        return NULL;
    if (c.kernel[0] > MAX_TAPS)
        return ps_b_fail(b, "conv3d: depth kernel %lld is more than %d", (long long)c.kernel[0],
                         MAX_TAPS);
    ir_node *x = c.batched ? in[0] : ps_b_unsqueeze(b, in[0], 0);
    int64_t N = x->type.shape[0], C = x->type.shape[1], H = c.in[1], W = c.in[2];
    int64_t G = c.groups, Cg = C / G, O = c.out_channels, kD = c.kernel[0], Do = c.out[0];
    int64_t sD = c.stride[0], dD = c.dilation[0];
    x = ps_b_permute(b, x, (int64_t[]){0, 2, 1, 3, 4});   /* [N, D, C, H, W] */
    if (c.padding[0])
        x = pad(b, x, (int64_t[]){0, 0, 0, 0, 0, 0, c.padding[0], c.padding[0]}, 8);
    ir_node *taps[MAX_TAPS];
    for (int64_t kd = 0; kd < kD; kd++) {   /* [N, D', G, 1, Cg, H, W] */
        ir_node *s = slice(b, x, 1, kd * dD, kd * dD + (Do - 1) * sD + 1, sD);
        taps[kd] = ps_b_reshape(b, s, (int64_t[]){N, Do, G, 1, Cg, H, W}, 7);
    }
    ir_node *xs = taps[0];
    if (kD > 1) {
        ir_attrs ca = {0};
        ir_attr_int(&ca.a[0], 3);
        xs = ps_b_op(b, OP_cat, taps, (int)kD, &ca);
    }
    xs = ps_b_reshape(b, xs, (int64_t[]){N * Do, G * kD * Cg, H, W}, 4);
    ir_node *w = ps_b_permute(b, in[1], (int64_t[]){0, 2, 1, 3, 4});   /* [O, kD, Cg, kH, kW] */
    w = ps_b_reshape(b, w, (int64_t[]){O, kD * Cg, c.kernel[1], c.kernel[2]}, 4);
    ir_node *y = conv(b, 2, xs, w, n->nin > 2 ? in[2] : NULL, &c.stride[1], &c.padding[1],
                      &c.dilation[1], G);
    y = ps_b_reshape(b, y, (int64_t[]){N, Do, O, c.out[1], c.out[2]}, 5);
    y = ps_b_permute(b, y, (int64_t[]){0, 2, 1, 3, 4});
    return c.batched ? y : ps_b_squeeze(b, y, (int64_t[]){0}, 1);
}

/* x [N, C, L..] with s-1 zeros after each element along each spatial dim
 * (the trailing ones too: the padding that follows takes them into account). */
static ir_node *dilate(ps_builder *b, ir_node *x, const ir_convnd *c)
{
    bool any = false;
    for (int d = 0; d < c->nd; d++)
        any |= c->stride[d] > 1;
    if (!any)
        return x;
    int64_t shape[2 + 2 * 3], pads[4 * 3], flat[2 + 3];
    shape[0] = flat[0] = x->type.shape[0];
    shape[1] = flat[1] = x->type.shape[1];
    for (int d = 0; d < c->nd; d++) {
        shape[2 + 2 * d] = c->in[d];
        shape[3 + 2 * d] = 1;
        flat[2 + d] = c->in[d] * c->stride[d];
        /* pairs from the last dim backwards: the size-1 dim of d is pair 2(nd-1-d) */
        int k = 2 * (c->nd - 1 - d);
        pads[2 * k] = 0, pads[2 * k + 1] = c->stride[d] - 1;
        pads[2 * k + 2] = 0, pads[2 * k + 3] = 0;
    }
    x = ps_b_reshape(b, x, shape, 2 + 2 * c->nd);
    x = pad(b, x, pads, 4 * c->nd);
    return ps_b_reshape(b, x, flat, 2 + c->nd);
}

/* Stride > 1, dilation 1: the sub-pixel form. Along a dim of stride s and kernel
 * K (J = ceil(K / s) taps per phase), result index t = o + p = q s + r takes
 * sum_j x[q - j] w[r + s j]: for each phase r a stride-1 convolution of x
 * by w[r::s] flipped, with padding J (row q + 1 holds q). The phases are
 * stacked into the output channels of one convolution, [N, G, s.., O/G, Q..],
 * interleaved to [N, O, Q s..] and sliced to [s + p, s + p + out). */
static ir_node *conv_transpose_phases(ps_builder *b, const ir_convnd *c, ir_node *x, ir_node *w0,
                                      ir_node *bias)
{
    int nd = c->nd;
    const ir_type *wt = &w0->type;
    int64_t N = x->type.shape[0], G = c->groups, Cin = wt->shape[0], Og = wt->shape[1];
    int64_t J[3], P = 1, wpads[6], wsplit[2 + 6], wperm[2 + 6], flip[3];
    int64_t ph[4 + 3], perm7[4 + 3], wfin[2 + 3], ysplit[2 + 6], yperm[2 + 6], yflat[2 + 3];
    wsplit[0] = Cin, wsplit[1] = Og;
    for (int d = 0; d < nd; d++) {
        int64_t s = c->stride[d], k = nd - 1 - d;
        J[d] = (c->kernel[d] + s - 1) / s;
        P *= s;
        wpads[2 * k] = 0, wpads[2 * k + 1] = J[d] * s - c->kernel[d];
        wsplit[2 + 2 * d] = J[d], wsplit[3 + 2 * d] = s;
        flip[d] = 2 + 2 * d;
        wperm[d] = 3 + 2 * d;            /* [s.., Og, Cin, J..] */
        wperm[nd + 2 + d] = 2 + 2 * d;
    }
    wperm[nd] = 1, wperm[nd + 1] = 0;
    ir_node *w = pad(b, w0, wpads, 2 * nd);
    w = ps_b_reshape(b, w, wsplit, 2 + 2 * nd);
    w = op_ints(b, OP_flip, w, flip, nd);
    w = ps_b_permute(b, w, wperm);
    /* [P, Og, G, Cin/G, J..] -> [G, P, Og, Cin/G, J..] -> [G P Og, Cin/G, J..] */
    ph[0] = P, ph[1] = Og, ph[2] = G, ph[3] = Cin / G;
    perm7[0] = 2, perm7[1] = 0, perm7[2] = 1, perm7[3] = 3;
    wfin[0] = G * P * Og, wfin[1] = Cin / G;
    for (int d = 0; d < nd; d++)
        ph[4 + d] = J[d], perm7[4 + d] = 4 + d, wfin[2 + d] = J[d];
    w = ps_b_reshape(b, w, ph, 4 + nd);
    w = ps_b_permute(b, w, perm7);
    w = ps_b_reshape(b, w, wfin, 2 + nd);
    int64_t ones[3] = {1, 1, 1};
    ir_node *y = conv(b, nd, x, w, NULL, ones, J, ones, G);
    /* [N G, s.., Og, Q..] -> [N G, Og, Q1, s1, ..] -> [N, O, Q1 s1, ..] */
    ysplit[0] = N * G;
    yperm[0] = 0, yperm[1] = nd + 1;
    ysplit[nd + 1] = Og;
    yflat[0] = N, yflat[1] = G * Og;
    for (int d = 0; d < nd; d++) {
        int64_t q = c->in[d] + J[d] + 1;
        ysplit[1 + d] = c->stride[d];
        ysplit[nd + 2 + d] = q;
        yperm[2 + 2 * d] = nd + 2 + d, yperm[3 + 2 * d] = 1 + d;
        yflat[2 + d] = q * c->stride[d];
    }
    y = ps_b_reshape(b, y, ysplit, 2 + 2 * nd);
    y = ps_b_permute(b, y, yperm);
    y = ps_b_reshape(b, y, yflat, 2 + nd);
    for (int d = 0; d < nd; d++) {
        int64_t start = c->stride[d] + c->padding[d];
        y = slice(b, y, 2 + d, start, start + c->out[d], 1);
    }
    if (!bias)
        return y;
    int64_t bshape[1 + 3] = {c->out_channels, 1, 1, 1};
    return b_add(b, y, ps_b_reshape(b, bias, bshape, 1 + nd));
}

static ir_node *conv_transpose(PS_DECOMP_ARGS)
{
    ir_convnd c;
    if (geometry(b, n, in, a, &c))
        return NULL;
    int nd = c.nd;
    ir_node *x = c.batched ? in[0] : ps_b_unsqueeze(b, in[0], 0);
    bool strided = false, dilated = false;
    for (int d = 0; d < nd; d++)
        strided |= c.stride[d] > 1, dilated |= c.dilation[d] > 1;
    if (strided && !dilated) {
        ir_node *y = conv_transpose_phases(b, &c, x, in[1], n->nin > 2 ? in[2] : NULL);
        return c.batched ? y : ps_b_squeeze(b, y, (int64_t[]){0}, 1);
    }
    x = dilate(b, x, &c);
    int64_t pads[2 * 3];
    for (int d = 0; d < nd; d++) {
        int64_t edge = c.dilation[d] * (c.kernel[d] - 1) - c.padding[d];
        int k = nd - 1 - d;
        pads[2 * k] = edge;
        pads[2 * k + 1] = edge + c.out_pad[d] - (c.stride[d] - 1);
    }
    x = pad(b, x, pads, 2 * nd);
    /* w [Cin, Og, k..] -> [G, Cin/G, Og, k..] -> [G, Og, Cin/G, k..] -> [O, Cin/G, k..] */
    const ir_type *wt = &in[1]->type;
    int64_t G = c.groups, Cin = wt->shape[0], Og = wt->shape[1];
    int64_t shape[3 + 3], perm[3 + 3], flip[3];
    shape[0] = G, shape[1] = Cin / G, shape[2] = Og;
    perm[0] = 0, perm[1] = 2, perm[2] = 1;
    for (int d = 0; d < nd; d++) {
        shape[3 + d] = c.kernel[d];
        perm[3 + d] = 3 + d;
        flip[d] = 2 + d;
    }
    ir_node *w = ps_b_reshape(b, in[1], shape, 3 + nd);
    w = ps_b_permute(b, w, perm);
    int64_t wshape[2 + 3] = {G * Og, Cin / G};
    for (int d = 0; d < nd; d++)
        wshape[2 + d] = c.kernel[d];
    w = op_ints(b, OP_flip, ps_b_reshape(b, w, wshape, 2 + nd), flip, nd);
    int64_t ones[3] = {1, 1, 1}, zeros[3] = {0, 0, 0};
    ir_node *y = conv(b, nd, x, w, n->nin > 2 ? in[2] : NULL, ones, zeros, c.dilation, G);
    return c.batched ? y : ps_b_squeeze(b, y, (int64_t[]){0}, 1);
}

ir_node *ps_decomp_conv_transpose1d(PS_DECOMP_ARGS) { return conv_transpose(b, n, a, in); }
ir_node *ps_decomp_conv_transpose2d(PS_DECOMP_ARGS) { return conv_transpose(b, n, a, in); }
ir_node *ps_decomp_conv_transpose3d(PS_DECOMP_ARGS) { return conv_transpose(b, n, a, in); }

/* The 2-D pool's attributes: kernel, stride, padding as given (2 each). */
static void pool2d_attrs(const ir_node *n, const ir_convnd *c, const int64_t *k, const int64_t *s,
                         const int64_t *p, const int64_t *d, ir_attrs *at)
{
    memset(at, 0, sizeof *at);
    ir_attr_ints(&at->a[0], k, 2);
    ir_attr_ints(&at->a[1], s, 2);
    ir_attr_ints(&at->a[2], p, 2);
    if (n->op == OP_max_pool3d) {
        ir_attr_ints(&at->a[3], d, 2);
        ir_attr_int(&at->a[4], c->ceil_mode);
    } else {
        ir_attr_int(&at->a[3], c->count_include_pad);
        ir_attr_int(&at->a[4], c->ceil_mode);
        ir_attr_int(&at->a[5], 0);
    }
}

static ir_node *pool3d(PS_DECOMP_ARGS)
{
    ir_convnd c;
    if (geometry(b, n, in, a, &c))
        return NULL;
    ir_op op2 = n->op == OP_max_pool3d ? OP_max_pool2d : OP_avg_pool2d;
    const ir_type *t = &in[0]->type;
    int64_t N = c.batched ? t->shape[0] : 1, C = c.out_channels, D = c.in[0];
    ir_node *x = ps_b_reshape(b, in[0], (int64_t[]){N, C * D, c.in[1], c.in[2]}, 4);
    ir_attrs at;
    pool2d_attrs(n, &c, &c.kernel[1], &c.stride[1], &c.padding[1], &c.dilation[1], &at);
    ir_node *y = ps_b_op(b, op2, &x, 1, &at);   /* [N, C*D, H', W'] */
    y = ps_b_reshape(b, y, (int64_t[]){N * C, 1, D, c.out[1] * c.out[2]}, 4);
    pool2d_attrs(n, &c, (int64_t[]){c.kernel[0], 1}, (int64_t[]){c.stride[0], 1},
                 (int64_t[]){c.padding[0], 0}, (int64_t[]){c.dilation[0], 1}, &at);
    y = ps_b_op(b, op2, &y, 1, &at);            /* [N*C, 1, D', H'*W'] */
    return ps_b_reshape(b, y, n->type.shape, n->type.ndim);
}

ir_node *ps_decomp_max_pool3d(PS_DECOMP_ARGS) { return pool3d(b, n, a, in); }
ir_node *ps_decomp_avg_pool3d(PS_DECOMP_ARGS) { return pool3d(b, n, a, in); }
