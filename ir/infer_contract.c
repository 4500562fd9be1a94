/* infer_contract.c - shape/dtype rules of the contractions (matmul, linear,
 * conv2d) and of the 2-D pools (max_pool2d, max_pool2d_indices, avg_pool2d,
 * which share conv2d's window geometry), plus ir_window2d_of() that decodes
 * that geometry.
 *
 * Dtypes follow PyTorch: the operands of a contraction must have one dtype
 * (no promotion), bool is rejected; max_pool2d takes floats (its indices are
 * i64), avg_pool2d floats and i64.
 */
#include <stdio.h>

#include "infer.h"
#include "window2d.h"

/* "[2,3]" (or "[]") into buf; returns buf. */
static char *dims_str(int n, const int64_t *d, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, i ? ",%s" : "%s", IR_DIM(d[i]));
    if (k < size)
        snprintf(buf + k, size - k, "]");
    return buf;
}

/* All present inputs share one non-bool dtype. */
static int same_dtype(const ir_type *const *in, int nin, const char *names, char *err,
                      size_t nerr)
{
    tj_dtype dt = in[0]->dtype;
    for (int k = 1; k < nin; k++) {
        if (in[k] && in[k]->dtype != dt)
            return ir_fail(err, nerr, "expected %s to have the same dtype, got %s and %s", names,
                           tj_dtype_name(dt), tj_dtype_name(in[k]->dtype));
    }
    if (ir_dtype_category(dt) == IR_CAT_BOOL)
        return ir_fail(err, nerr, "not defined for bool");
    return 0;
}

/* ---- matmul and linear ----------------------------------------------------- */

/* b broadcasts to exactly t's shape (t itself does not grow). */
static bool broadcasts_to(const ir_type *b, const ir_type *t)
{
    if (b->ndim > t->ndim)
        return false;
    for (int d = 1; d <= b->ndim; d++) {
        int64_t s = b->shape[b->ndim - d];
        if (s != 1 && s != t->shape[t->ndim - d])
            return false;
    }
    return true;
}

int ir_infer_matmul(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *y = in[1];
    if (x->ndim == 0 || y->ndim == 0)
        return ir_fail(err, nerr, "both operands need at least 1 dim, got %d-D and %d-D",
                       x->ndim, y->ndim);
    if (same_dtype(in, 2, "both", err, nerr))
        return -1;
    int64_t kx = x->shape[x->ndim - 1];
    int64_t ky = y->ndim == 1 ? y->shape[0] : y->shape[y->ndim - 2];
    if (kx != ky)
        return ir_fail(err, nerr,
                       "inner dimensions differ: a has %s (dim -1), b has %s (dim %d)",
                       IR_DIM(kx), IR_DIM(ky), y->ndim == 1 ? 0 : -2);
    /* Batch dims: all but the last two (one for a 1-D operand). */
    ir_type bx = *x, by = *y;
    bx.ndim = x->ndim > 2 ? x->ndim - 2 : 0;
    by.ndim = y->ndim > 2 ? y->ndim - 2 : 0;
    int nd;
    int64_t shape[TJ_MAX_DIMS + 2];
    if (!ir_broadcast(&bx, &by, &nd, shape)) {
        char s1[96], s2[96];
        return ir_fail(err, nerr, "batch dims %s and %s cannot be broadcast",
                       dims_str(bx.ndim, bx.shape, s1, sizeof s1),
                       dims_str(by.ndim, by.shape, s2, sizeof s2));
    }
    if (x->ndim >= 2)
        shape[nd++] = x->shape[x->ndim - 2];
    if (y->ndim >= 2)
        shape[nd++] = y->shape[y->ndim - 1];
    ir_set(out, x->dtype, nd, shape);
    return 0;
}

int ir_infer_linear(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *w = in[1], *b = nin > 2 ? in[2] : NULL;
    if (x->ndim == 0)
        return ir_fail(err, nerr, "input needs at least 1 dim, got 0-D");
    if (w->ndim != 1 && w->ndim != 2)
        return ir_fail(err, nerr, "weight must be 2-D [out, in] (or 1-D [in]), got %d-D",
                       w->ndim);
    if (same_dtype(in, nin, "input, weight and bias", err, nerr))
        return -1;
    int64_t fin = x->shape[x->ndim - 1], win = w->shape[w->ndim - 1];
    if (fin != win)
        return ir_fail(err, nerr, "input has %s features (last dim), weight expects %s",
                       IR_DIM(fin), IR_DIM(win));
    int64_t shape[TJ_MAX_DIMS];
    int nd = x->ndim - 1;
    for (int d = 0; d < nd; d++)
        shape[d] = x->shape[d];
    if (w->ndim == 2)
        shape[nd++] = w->shape[0];
    ir_set(out, x->dtype, nd, shape);
    if (b && !broadcasts_to(b, out)) {
        char s1[96], s2[96];
        return ir_fail(err, nerr, "bias %s does not broadcast to the output %s",
                       dims_str(b->ndim, b->shape, s1, sizeof s1),
                       dims_str(out->ndim, out->shape, s2, sizeof s2));
    }
    return 0;
}

/* ---- window geometry --------------------------------------------------------- */

/* Reads list attribute `at` into v (0 values: keep v; 1: both dims; 2: as is). */
static int read_pair(const ir_attr *at, const char *what, int64_t v[2], char *err, size_t nerr)
{
    if (at->n > 2)
        return ir_fail(err, nerr, "%s needs 1 or 2 values, got %d", what, at->n);
    if (at->n >= 1)
        v[0] = v[1] = at->i[0];
    if (at->n == 2)
        v[1] = at->i[1];
    return 0;
}

static int check_pair(const int64_t v[2], int64_t min, const char *what, const char *need,
                      char *err, size_t nerr)
{
    const int64_t max = (int64_t)1 << 31;   /* keeps the size arithmetic far from overflow */
    if (v[0] > max || v[1] > max)
        return ir_fail(err, nerr, "%s [%lld, %lld] is too large", what, (long long)v[0],
                       (long long)v[1]);
    if (v[0] < min || v[1] < min)
        return ir_fail(err, nerr, "%s must be %s, got [%lld, %lld]", what, need,
                       (long long)v[0], (long long)v[1]);
    return 0;
}

int ir_window2d_of(ir_op op, const ir_attrs *a, const int64_t *conv_kernel, ir_window2d *w,
                   char *err, size_t nerr)
{
    *w = (ir_window2d){{0, 0}, {1, 1}, {0, 0}, {1, 1}, 1, false, false, 0};
    bool conv = op == OP_conv2d;
    if (conv) {
        w->kernel[0] = conv_kernel[0];
        w->kernel[1] = conv_kernel[1];
        if (check_pair(w->kernel, 1, "kernel size", "positive", err, nerr))
            return -1;
        if (a->a[3].n)
            w->groups = a->a[3].i[0];
        if (w->groups <= 0)
            return ir_fail(err, nerr, "groups must be positive, got %lld", (long long)w->groups);
    } else {
        if (read_pair(&a->a[0], "kernel", w->kernel, err, nerr))
            return -1;
        if (a->a[0].n == 0)
            return ir_fail(err, nerr, "kernel size is missing");
        if (check_pair(w->kernel, 1, "kernel size", "positive", err, nerr))
            return -1;
        w->stride[0] = w->kernel[0];
        w->stride[1] = w->kernel[1];
    }
    int s = conv ? 0 : 1;   /* index of the stride attribute */
    if (read_pair(&a->a[s], "stride", w->stride, err, nerr) ||
        read_pair(&a->a[s + 1], "padding", w->padding, err, nerr))
        return -1;
    if (op != OP_avg_pool2d && read_pair(&a->a[s + 2], "dilation", w->dilation, err, nerr))
        return -1;
    if (op == OP_avg_pool2d)
        w->count_include_pad = a->a[3].n ? a->a[3].i[0] != 0 : true;
    if (!conv)   /* ceil_mode follows the dilation or count_include_pad */
        w->ceil_mode = a->a[4].n && a->a[4].i[0] != 0;
    if (op == OP_avg_pool2d && a->a[5].n)
        w->divisor_override = a->a[5].i[0];
    if (check_pair(w->stride, 1, "stride", "positive", err, nerr) ||
        check_pair(w->padding, 0, "padding", "non-negative", err, nerr) ||
        check_pair(w->dilation, 1, "dilation", "positive", err, nerr))
        return -1;
    if (!conv && (2 * w->padding[0] > w->kernel[0] || 2 * w->padding[1] > w->kernel[1]))
        return ir_fail(err, nerr, "padding [%lld, %lld] exceeds half the kernel size [%lld, %lld]",
                       (long long)w->padding[0], (long long)w->padding[1],
                       (long long)w->kernel[0], (long long)w->kernel[1]);
    return 0;
}

/* Output spatial size of window w on x's last two dims; -1 when it is empty. */
static int window_out(const ir_window2d *w, const ir_type *x, int64_t o[2], char *err,
                      size_t nerr)
{
    const int64_t *hw = &x->shape[x->ndim - 2];
    int64_t padded[2];   /* padding <= 2^31 (check_pair), sizes up to 2^63-1 */
    for (int d = 0; d < 2; d++)
        if (__builtin_add_overflow(hw[d], 2 * w->padding[d], &padded[d]))
            return ir_fail(err, nerr, "input size %s with padding %lld is more than 2^63-1",
                           IR_DIM(hw[d]), (long long)w->padding[d]);
    for (int d = 0; d < 2; d++) {
        o[d] = ir_window_out(w, d, hw[d]);
        /* a symbolic size: at stride 1 the output is the symbol plus a count
         * (3x3, padding 1: s0; without padding: s0-2), which the guards hold
         * >= 2; at other strides it is not */
        int64_t span = w->dilation[d] * (w->kernel[d] - 1) + 1;
        if (IR_IS_SYM(hw[d]) &&
            (w->stride[d] != 1 || !ir_dim_add(hw[d], 2 * w->padding[d] - span + 1, &o[d])))
            return ir_fail(err, nerr, "stride %lld over symbolic size %s: the output size is not "
                           "the symbol plus a count", (long long)w->stride[d], IR_DIM(hw[d]));
    }
    if ((o[0] >= 1 || IR_IS_SYM(o[0])) && (o[1] >= 1 || IR_IS_SYM(o[1])))
        return 0;
    long long k0 = w->kernel[0], k1 = w->kernel[1];
    long long s0 = w->dilation[0] * (k0 - 1) + 1, s1 = w->dilation[1] * (k1 - 1) + 1;
    if (!w->ceil_mode)
        return ir_fail(err, nerr,
                       "kernel %lldx%lld (dilated %lldx%lld) is larger than the padded input "
                       "%lldx%lld",
                       k0, k1, s0, s1, (long long)padded[0], (long long)padded[1]);
    return ir_fail(err, nerr,
                   "kernel %lldx%lld (dilated %lldx%lld) leaves no window in the padded input "
                   "%lldx%lld, even with ceil_mode and stride [%lld, %lld]",
                   k0, k1, s0, s1, (long long)padded[0], (long long)padded[1],
                   (long long)w->stride[0], (long long)w->stride[1]);
}

/* x is [C,H,W] or [N,C,H,W]. */
static int check_image(const ir_type *x, const char *what, char *err, size_t nerr)
{
    if (x->ndim != 3 && x->ndim != 4)
        return ir_fail(err, nerr, "%s must be 3-D [C,H,W] or 4-D [N,C,H,W], got %d-D", what,
                       x->ndim);
    if (x->shape[x->ndim - 2] == 0 || x->shape[x->ndim - 1] == 0)
        return ir_fail(err, nerr, "%s has an empty spatial dim (H or W is 0)", what);
    return 0;
}

/* ---- conv2d -------------------------------------------------------------------- */

static int conv_channels(const ir_type *x, const ir_type *w, const ir_type *b, int64_t groups,
                         char *err, size_t nerr)
{
    int64_t c = x->shape[x->ndim - 3], o = w->shape[0];
    if (o == 0)
        return ir_fail(err, nerr, "weight has 0 output channels");
    if (o % groups != 0)
        return ir_fail(err, nerr, "output channels %s are not divisible by groups %lld",
                       IR_DIM(o), (long long)groups);
    if (c != w->shape[1] * groups)   /* no overflow: groups divides o, so <= o */
        return ir_fail(err, nerr,
                       "input has %s channels, weight expects %s (%s per group x %lld "
                       "groups)",
                       IR_DIM(c), IR_DIM(w->shape[1] < 0 ? w->shape[1] : w->shape[1] * groups),
                       IR_DIM(w->shape[1]), (long long)groups);
    if (b && (b->ndim != 1 || b->shape[0] != o)) {
        char s[96];
        return ir_fail(err, nerr, "bias must be 1-D with %s elements, got %s", IR_DIM(o),
                       dims_str(b->ndim, b->shape, s, sizeof s));
    }
    return 0;
}

int ir_infer_conv2d(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *w = in[1], *b = nin > 2 ? in[2] : NULL;
    if (check_image(x, "input", err, nerr))
        return -1;
    if (w->ndim != 4)
        return ir_fail(err, nerr, "weight must be 4-D [out, in/groups, kH, kW], got %d-D",
                       w->ndim);
    if (same_dtype(in, nin, "input, weight and bias", err, nerr))
        return -1;
    ir_window2d win;
    int64_t o[2];
    if (ir_window2d_of(op, a, &w->shape[2], &win, err, nerr) ||
        conv_channels(x, w, b, win.groups, err, nerr) || window_out(&win, x, o, err, nerr))
        return -1;
    int64_t shape[4];
    int nd = 0;
    if (x->ndim == 4)
        shape[nd++] = x->shape[0];
    shape[nd++] = w->shape[0];
    shape[nd++] = o[0];
    shape[nd++] = o[1];
    ir_set(out, x->dtype, nd, shape);
    return 0;
}

/* ---- pools ----------------------------------------------------------------------- */

static int infer_pool(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    tj_dtype dt = x->dtype;
    bool ok = ir_dtype_is_float(dt) || (op == OP_avg_pool2d && dt == TJ_I64);
    if (!ok)
        return ir_fail(err, nerr, "not defined for %s (needs f32 or f64%s)", tj_dtype_name(dt),
                       op == OP_avg_pool2d ? " or i64" : "");
    if (check_image(x, "input", err, nerr))
        return -1;
    if (x->shape[x->ndim - 3] == 0)
        return ir_fail(err, nerr, "input has 0 channels");
    ir_window2d win;
    int64_t o[2];
    if (ir_window2d_of(op, a, NULL, &win, err, nerr) || window_out(&win, x, o, err, nerr))
        return -1;
    int64_t shape[4];
    for (int d = 0; d < x->ndim - 2; d++)
        shape[d] = x->shape[d];
    shape[x->ndim - 2] = o[0];
    shape[x->ndim - 1] = o[1];
    ir_set(out, op == OP_max_pool2d_indices ? TJ_I64 : dt, x->ndim, shape);
    return 0;
}

int ir_infer_max_pool2d(IR_INFER_ARGS) { return infer_pool(op, in, nin, a, out, err, nerr); }

int ir_infer_avg_pool2d(IR_INFER_ARGS) { return infer_pool(op, in, nin, a, out, err, nerr); }

int ir_infer_max_pool2d_indices(IR_INFER_ARGS) { return infer_pool(op, in, nin, a, out, err, nerr); }
