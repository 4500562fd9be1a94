/* infer_nnops.c - shape/dtype rules of the network rows of ops.def's "nn and
 * linalg" section (DCOMP rows, decomposed in passes/decomp_nn.c):
 *
 *   conv1d         x [N,C,L] or [C,L], w [O,C/groups,K], bias? [O]; INT stride,
 *                  padding, dilation, groups -> [N,O,L'] (conv2d's rule at H = 1)
 *   max_pool1d     x [N,C,L] or [C,L]; kernel, stride (0: kernel), padding,
 *                  dilation, ceil_mode -> [N,C,L'] (max_pool2d's rule at H = 1)
 *   avg_pool1d     kernel, stride, padding, count_include_pad, ceil_mode
 *   pixel_shuffle  [..., C r^2, H, W] -> [..., C, H r, W r]
 *   pixel_unshuffle [..., C, H r, W r] -> [..., C r^2, H, W]
 */
#include <string.h>

#include "infer.h"

/* t with a size-1 dim inserted before its last dim. */
static ir_type with_h(const ir_type *t)
{
    ir_type r = *t;
    r.ndim = t->ndim + 1;
    r.shape[r.ndim - 1] = t->shape[t->ndim - 1];
    r.shape[r.ndim - 2] = 1;
    return r;
}

/* out without its second-to-last dim (the H = 1 of the 2-D rule). */
static void drop_h(ir_type *out)
{
    out->shape[out->ndim - 2] = out->shape[out->ndim - 1];
    out->ndim--;
}

static int need_seq(const ir_type *x, char *err, size_t nerr)
{
    if (x->ndim != 2 && x->ndim != 3)
        return ir_fail(err, nerr, "input must be 2-D [C,L] or 3-D [N,C,L], got %d-D", x->ndim);
    return 0;
}

static void pair(ir_attr *a, int64_t h, int64_t v)
{
    ir_attr_ints(a, (int64_t[]){h, v}, 2);
}

int ir_infer_conv1d(IR_INFER_ARGS)
{
    (void)op;
    if (need_seq(in[0], err, nerr))
        return -1;
    if (in[1]->ndim != 3)
        return ir_fail(err, nerr, "weight must be 3-D [out, in/groups, K], got %d-D", in[1]->ndim);
    ir_type x = with_h(in[0]), w = with_h(in[1]);
    const ir_type *in2[3] = {&x, &w, nin > 2 ? in[2] : NULL};
    ir_attrs a2 = {0};
    pair(&a2.a[0], 1, a->a[0].i[0]);
    pair(&a2.a[1], 0, a->a[1].i[0]);
    pair(&a2.a[2], 1, a->a[2].i[0]);
    ir_attr_int(&a2.a[3], a->a[3].i[0]);
    if (ir_infer(OP_conv2d, in2, nin, &a2, out, err, nerr))
        return -1;
    drop_h(out);
    return 0;
}

/* The 2-D attributes of a 1-D pool: H takes kernel 1, stride 1, no padding. */
void ir_pool1d_attrs(ir_op op, const ir_attrs *a, ir_attrs *a2)
{
    memset(a2, 0, sizeof *a2);
    int64_t k = a->a[0].i[0], s = a->a[1].i[0] ? a->a[1].i[0] : k;
    pair(&a2->a[0], 1, k);
    pair(&a2->a[1], 1, s);
    pair(&a2->a[2], 0, a->a[2].i[0]);
    if (op == OP_max_pool1d) {
        pair(&a2->a[3], 1, a->a[3].i[0]);
        ir_attr_int(&a2->a[4], a->a[4].i[0]);
    } else {
        ir_attr_int(&a2->a[3], a->a[3].i[0]);
        ir_attr_int(&a2->a[4], a->a[4].i[0]);
        ir_attr_int(&a2->a[5], 0);
    }
}

static int pool1d(ir_op op, ir_op op2, const ir_type *const *in, const ir_attrs *a, ir_type *out,
                  char *err, size_t nerr)
{
    if (need_seq(in[0], err, nerr))
        return -1;
    if (a->a[1].i[0] < 0)
        return ir_fail(err, nerr, "stride %lld must be positive (0: the kernel size)",
                       (long long)a->a[1].i[0]);
    ir_type x = with_h(in[0]);
    const ir_type *in2[1] = {&x};
    ir_attrs a2;
    ir_pool1d_attrs(op, a, &a2);
    if (ir_infer(op2, in2, 1, &a2, out, err, nerr))
        return -1;
    drop_h(out);
    return 0;
}

int ir_infer_max_pool1d(IR_INFER_ARGS)
{
    (void)nin;
    return pool1d(op, OP_max_pool2d, in, a, out, err, nerr);
}

int ir_infer_avg_pool1d(IR_INFER_ARGS)
{
    (void)nin;
    return pool1d(op, OP_avg_pool2d, in, a, out, err, nerr);
}

/* What pixel_shuffle and pixel_unshuffle both check: x is [..., C, H, W], the
 * factor r (named what) is positive, and the decomposition's view of x with
 * two more dims fits. */
static int pixel_check(const ir_type *x, int64_t r, const char *what, char *err, size_t nerr)
{
    if (x->ndim < 3)
        return ir_fail(err, nerr, "input must have at least 3 dims [..., C, H, W], got %d", x->ndim);
    if (r < 1)
        return ir_fail(err, nerr, "%s %lld must be positive", what, (long long)r);
    if (x->ndim + 2 > TJ_MAX_DIMS)   /* the decomposition views it with 2 more */
        return ir_fail(err, nerr, "input has more than %d dims", TJ_MAX_DIMS - 2);
    return 0;
}

int ir_infer_pixel_shuffle(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    const ir_type *x = in[0];
    int64_t r = a->a[0].i[0];
    if (pixel_check(x, r, "upscale_factor", err, nerr) != 0)
        return -1;
    int64_t c = x->shape[x->ndim - 3];
    if (c < 0 || c % (r * r))
        return ir_fail(err, nerr, "channels %s are not divisible by upscale_factor^2 = %lld",
                       IR_DIM(c), (long long)(r * r));
    ir_set(out, x->dtype, x->ndim, x->shape);
    out->shape[x->ndim - 3] = c / (r * r);
    out->shape[x->ndim - 2] = x->shape[x->ndim - 2] * r;
    out->shape[x->ndim - 1] = x->shape[x->ndim - 1] * r;
    return 0;
}

int ir_infer_pixel_unshuffle(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    const ir_type *x = in[0];
    int64_t r = a->a[0].i[0];
    if (pixel_check(x, r, "downscale_factor", err, nerr) != 0)
        return -1;
    for (int d = x->ndim - 2; d < x->ndim; d++)
        if (x->shape[d] < 0 || x->shape[d] % r)
            return ir_fail(err, nerr, "spatial size %s is not divisible by downscale_factor %lld",
                           IR_DIM(x->shape[d]), (long long)r);
    ir_set(out, x->dtype, x->ndim, x->shape);
    out->shape[x->ndim - 3] = x->shape[x->ndim - 3] * r * r;
    out->shape[x->ndim - 2] = x->shape[x->ndim - 2] / r;
    out->shape[x->ndim - 1] = x->shape[x->ndim - 1] / r;
    return 0;
}
