/* infer_conv3d.c - shape/dtype rules of ops.def's "3-D and transposed
 * convolution, 3-D pools" rows (DCOMP rows, decomposed in
 * passes/decomp_conv3d.c), and ir_convnd_of(), which decodes their geometry
 * once for the rules and the decompositions:
 *
 *   conv3d            x [N,C,D,H,W] or [C,D,H,W], w [O,C/groups,kD,kH,kW],
 *                     bias? [O] -> [N,O,D',H',W'], D' = (D + 2p - d(k-1) - 1)/s + 1
 *   conv_transpose1d/2d/3d  x [N,C,L..] or [C,L..], w [C,O/groups,k..], bias? [O]
 *                     -> [N,O,L'..], L' = (L-1)s - 2p + d(k-1) + output_padding + 1
 *   max_pool3d        x [N,C,D,H,W] or [C,D,H,W]; kernel, stride (default:
 *                     kernel), padding (at most half the kernel), dilation,
 *                     ceil_mode -> [N,C,D',H',W'] (max_pool2d's size rule per dim)
 *   avg_pool3d        kernel, stride, padding, count_include_pad, ceil_mode
 *
 * The pools take floats, the convolutions any number dtype (as conv2d);
 * input, weight and bias share a dtype. List attributes hold 0 values (the default), 1 (every spatial dim)
 * or one per spatial dim.
 */
#include <string.h>

#include "infer.h"
#include "window2d.h"

enum { MAX_ATTR = 1 << 30 };   /* attribute values stay far from overflow */

static bool is_transposed(ir_op op)
{
    return op == OP_conv_transpose1d || op == OP_conv_transpose2d || op == OP_conv_transpose3d;
}

static bool is_pool(ir_op op) { return op == OP_max_pool3d || op == OP_avg_pool3d; }

/* Attribute at (0, 1 or nd values) into v[0..nd); def when it holds none. */
static int read_list(const ir_attr *at, int nd, const char *what, int64_t def, int64_t min,
                     int64_t *v, char *err, size_t nerr)
{
    if (at->n != 0 && at->n != 1 && at->n != nd)
        return ir_fail(err, nerr, "%s needs 1 or %d values, got %d", what, nd, at->n);
    for (int d = 0; d < nd; d++) {
        v[d] = at->n == 0 ? def : at->i[at->n == 1 ? 0 : d];
        if (v[d] < min || v[d] > MAX_ATTR)
            return ir_fail(err, nerr, "%s %lld is out of range (%s)", what, (long long)v[d],
                           min ? "must be positive" : "must be non-negative");
    }
    return 0;
}

static int read_attrs(ir_op op, const ir_attrs *a, ir_convnd *c, char *err, size_t nerr)
{
    int nd = c->nd;
    if (is_pool(op)) {
        if (a->a[0].n == 0)
            return ir_fail(err, nerr, "kernel size is missing");
        if (read_list(&a->a[0], nd, "kernel", 1, 1, c->kernel, err, nerr))
            return -1;
        if (a->a[1].n == 0)
            memcpy(c->stride, c->kernel, sizeof c->stride);
        else if (read_list(&a->a[1], nd, "stride", 1, 1, c->stride, err, nerr))
            return -1;
        if (read_list(&a->a[2], nd, "padding", 0, 0, c->padding, err, nerr))
            return -1;
        if (op == OP_max_pool3d && read_list(&a->a[3], nd, "dilation", 1, 1, c->dilation, err, nerr))
            return -1;
        if (op == OP_avg_pool3d)
            c->count_include_pad = a->a[3].n ? a->a[3].i[0] != 0 : true;
        c->ceil_mode = a->a[4].n && a->a[4].i[0] != 0;
        for (int d = 0; d < nd; d++)
            if (2 * c->padding[d] > c->kernel[d])
                return ir_fail(err, nerr, "padding %lld is more than half the kernel size %lld",
                               (long long)c->padding[d], (long long)c->kernel[d]);
        return 0;
    }
    int gi = 3, di = is_transposed(op) ? 4 : 2;   /* groups, dilation */
    if (read_list(&a->a[0], nd, "stride", 1, 1, c->stride, err, nerr) ||
        read_list(&a->a[1], nd, "padding", 0, 0, c->padding, err, nerr) ||
        read_list(&a->a[di], nd, "dilation", 1, 1, c->dilation, err, nerr))
        return -1;
    if (is_transposed(op) &&
        read_list(&a->a[2], nd, "output_padding", 0, 0, c->out_pad, err, nerr))
        return -1;
    c->groups = a->a[gi].n ? a->a[gi].i[0] : 1;
    if (c->groups < 1)
        return ir_fail(err, nerr, "groups must be positive, got %lld", (long long)c->groups);
    for (int d = 0; d < nd; d++)
        if (c->out_pad[d] >= c->stride[d] && c->out_pad[d] >= c->dilation[d])
            return ir_fail(err, nerr,
                           "output_padding %lld must be smaller than the stride %lld or the "
                           "dilation %lld",
                           (long long)c->out_pad[d], (long long)c->stride[d],
                           (long long)c->dilation[d]);
    return 0;
}

/* Input and weight channels, bias. */
static int check_channels(ir_op op, const ir_type *x, const ir_type *w, const ir_type *b,
                          ir_convnd *c, char *err, size_t nerr)
{
    int64_t ch = x->shape[x->ndim - c->nd - 1], g = c->groups;
    if (ch < 0 || w->shape[0] < 0 || w->shape[1] < 0)
        return ir_fail(err, nerr, "symbolic channel counts are not supported");
    if (is_transposed(op)) {   /* w [C_in, C_out / groups, k..] */
        if (w->shape[0] % g)
            return ir_fail(err, nerr, "input channels %lld are not divisible by groups %lld",
                           (long long)w->shape[0], (long long)g);
        if (ch != w->shape[0])
            return ir_fail(err, nerr, "input has %lld channels, weight expects %lld",
                           (long long)ch, (long long)w->shape[0]);
        c->out_channels = w->shape[1] * g;
    } else {                   /* w [C_out, C_in / groups, k..] */
        if (w->shape[0] % g)
            return ir_fail(err, nerr, "output channels %lld are not divisible by groups %lld",
                           (long long)w->shape[0], (long long)g);
        if (ch != w->shape[1] * g)
            return ir_fail(err, nerr,
                           "input has %lld channels, weight expects %lld (%lld per group x "
                           "%lld groups)",
                           (long long)ch, (long long)(w->shape[1] * g), (long long)w->shape[1],
                           (long long)g);
        c->out_channels = w->shape[0];
    }
    if (c->out_channels == 0)
        return ir_fail(err, nerr, "weight has 0 output channels");
    if (b && (b->ndim != 1 || b->shape[0] != c->out_channels))
        return ir_fail(err, nerr, "bias must be 1-D with %lld elements",
                       (long long)c->out_channels);
    return 0;
}

/* Output size of spatial dim d. */
static int out_size(ir_op op, ir_convnd *c, int d, char *err, size_t nerr)
{
    int64_t in = c->in[d], k = c->kernel[d], s = c->stride[d], p = c->padding[d];
    int64_t span = c->dilation[d] * (k - 1) + 1;
    if (is_transposed(op)) {
        int64_t o;
        if (__builtin_mul_overflow(in - 1, s, &o) || __builtin_add_overflow(o, span, &o))
            return ir_fail(err, nerr, "output size along spatial dim %d is more than 2^63-1", d);
        c->out[d] = o - 2 * p + c->out_pad[d];
        if (c->out[d] < 1)
            return ir_fail(err, nerr, "output size %lld along spatial dim %d is not positive",
                           (long long)c->out[d], d);
        return 0;
    }
    if (in > INT64_MAX - 2 * p)
        return ir_fail(err, nerr, "input size %lld with padding %lld is more than 2^63-1",
                       (long long)in, (long long)p);
    if (in + 2 * p < span)
        return ir_fail(err, nerr,
                       "kernel %lld (dilated %lld) is larger than the padded input %lld along "
                       "spatial dim %d",
                       (long long)k, (long long)span, (long long)(in + 2 * p), d);
    ir_window2d w = {{k, 1}, {s, 1}, {p, 0}, {c->dilation[d], 1}, 1, false, c->ceil_mode, 0};
    c->out[d] = ir_window_out(&w, 0, in);
    return 0;
}

int ir_convnd_of(ir_op op, const ir_type *const *in, int nin, const ir_attrs *a, ir_convnd *c,
                 char *err, size_t nerr)
{
    memset(c, 0, sizeof *c);
    c->nd = op == OP_conv_transpose1d ? 1 : op == OP_conv_transpose2d ? 2 : 3;
    for (int d = 0; d < 3; d++)
        c->kernel[d] = c->stride[d] = c->dilation[d] = 1;
    const ir_type *x = in[0], *w = !is_pool(op) ? in[1] : NULL, *b = nin > 2 ? in[2] : NULL;
    int nd = c->nd;
    if (x->ndim != nd + 1 && x->ndim != nd + 2)
        return ir_fail(err, nerr, "input must be %d-D or %d-D (batched), got %d-D", nd + 1,
                       nd + 2, x->ndim);
    if (is_pool(op) ? !ir_dtype_is_float(x->dtype) : ir_dtype_category(x->dtype) == IR_CAT_BOOL)
        return ir_fail(err, nerr, "not defined for %s (needs %s)", tj_dtype_name(x->dtype),
                       is_pool(op) ? "a float dtype" : "a number dtype");
    for (int k = 1; k < nin; k++)
        if (in[k] && in[k]->dtype != x->dtype)
            return ir_fail(err, nerr, "input, weight and bias must have one dtype, got %s and %s",
                           tj_dtype_name(x->dtype), tj_dtype_name(in[k]->dtype));
    c->batched = x->ndim == nd + 2;
    for (int d = 0; d < nd; d++) {
        c->in[d] = x->shape[x->ndim - nd + d];
        if (c->in[d] <= 0)
            return ir_fail(err, nerr, "spatial dim %d is %s (must be static and positive)", d,
                           IR_DIM(c->in[d]));
    }
    if (w) {
        if (w->ndim != nd + 2)
            return ir_fail(err, nerr, "weight must be %d-D, got %d-D", nd + 2, w->ndim);
        for (int d = 0; d < nd; d++) {
            c->kernel[d] = w->shape[2 + d];
            if (c->kernel[d] < 1)
                return ir_fail(err, nerr, "weight has kernel size %s along spatial dim %d",
                               IR_DIM(c->kernel[d]), d);
        }
    }
    if (read_attrs(op, a, c, err, nerr))
        return -1;
    if (w && check_channels(op, x, w, b, c, err, nerr))
        return -1;
    if (is_pool(op)) {
        c->out_channels = x->shape[x->ndim - nd - 1];
        if (c->out_channels == 0)
            return ir_fail(err, nerr, "input has 0 channels");
    }
    for (int d = 0; d < nd; d++)
        if (out_size(op, c, d, err, nerr))
            return -1;
    return 0;
}

static int infer(IR_INFER_ARGS)
{
    ir_convnd c;
    if (ir_convnd_of(op, in, nin, a, &c, err, nerr))
        return -1;
    int64_t shape[5];
    int k = 0;
    if (c.batched)
        shape[k++] = in[0]->shape[0];
    shape[k++] = c.out_channels;
    for (int d = 0; d < c.nd; d++)
        shape[k++] = c.out[d];
    ir_set(out, in[0]->dtype, k, shape);
    return 0;
}

int ir_infer_conv3d(IR_INFER_ARGS) { return infer(op, in, nin, a, out, err, nerr); }
int ir_infer_conv_transpose1d(IR_INFER_ARGS) { return infer(op, in, nin, a, out, err, nerr); }
int ir_infer_conv_transpose2d(IR_INFER_ARGS) { return infer(op, in, nin, a, out, err, nerr); }
int ir_infer_conv_transpose3d(IR_INFER_ARGS) { return infer(op, in, nin, a, out, err, nerr); }
int ir_infer_max_pool3d(IR_INFER_ARGS) { return infer(op, in, nin, a, out, err, nerr); }
int ir_infer_avg_pool3d(IR_INFER_ARGS) { return infer(op, in, nin, a, out, err, nerr); }
