/* infer_norm.c - shape/dtype rules of the normalizations: softmax,
 * log_softmax (attr dim), layer_norm (x, w?, b?; attrs ndims, eps), rms_norm
 * (x, w?; ndims, eps) and batch_norm in eval mode (x [N,C,...], mean, var,
 * w?, b?; eps). All need a floating-point input (PyTorch has no integer
 * kernels for them) and give its dtype and shape. Parameters must have the
 * input's dtype (like PyTorch, no promotion): w and b of layer_norm/rms_norm
 * the normalized shape (the last ndims dims of x), those of batch_norm 1-D of
 * size C.
 */
#include "infer.h"

static int need_float(const ir_type *x, char *err, size_t nerr)
{
    if (!ir_dtype_is_float(x->dtype))
        return ir_fail(err, nerr, "needs a floating-point input, got %s",
                       tj_dtype_name(x->dtype));
    return 0;
}

static int softmax_like(const ir_type *x, const ir_attrs *a, ir_type *out, char *err,
                        size_t nerr)
{
    if (need_float(x, err, nerr))
        return -1;
    if (ir_norm_dim(a->a[0].i[0], x->ndim) < 0)
        return ir_fail(err, nerr, "dim %lld out of range for %d dims", (long long)a->a[0].i[0],
                       x->ndim);
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

int ir_infer_softmax(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    return softmax_like(in[0], a, out, err, nerr);
}

int ir_infer_log_softmax(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    return softmax_like(in[0], a, out, err, nerr);
}

/* "[3,4]" of the last n dims of x. */
static const char *tail_str(const ir_type *x, int n, char *buf, size_t size)
{
    ir_type t = {x->dtype, n, false, {0}};
    for (int d = 0; d < n; d++)
        t.shape[d] = x->shape[x->ndim - n + d];
    ir_type_str(&t, buf, size);
    char *br = buf;
    while (*br && *br != '[')
        br++;
    return br;
}

/* A parameter p (may be absent) must have x's dtype and the shape of x's last n dims. */
static int check_param(const char *what, const ir_type *p, const ir_type *x, int n, char *err,
                       size_t nerr)
{
    if (!p)
        return 0;
    char buf[96];
    if (p->dtype != x->dtype)
        return ir_fail(err, nerr, "%s has dtype %s, expected %s like the input", what,
                       tj_dtype_name(p->dtype), tj_dtype_name(x->dtype));
    bool ok = p->ndim == n;
    for (int d = 0; ok && d < n; d++)
        ok = p->shape[d] == x->shape[x->ndim - n + d];
    if (!ok)
        return ir_fail(err, nerr, "%s shape must equal the normalized shape %s", what,
                       tail_str(x, n, buf, sizeof buf));
    return 0;
}

static int norm_like(const ir_type *const *in, int nin, const ir_attrs *a, ir_type *out,
                     char *err, size_t nerr)
{
    const ir_type *x = in[0];
    int64_t n = a->a[0].i[0];
    if (need_float(x, err, nerr))
        return -1;
    if (n < 1 || n > x->ndim)
        return ir_fail(err, nerr, "ndims %lld must be in [1, %d] (the input's dims)",
                       (long long)n, x->ndim);
    if (check_param("weight", nin > 1 ? in[1] : NULL, x, (int)n, err, nerr) ||
        check_param("bias", nin > 2 ? in[2] : NULL, x, (int)n, err, nerr))
        return -1;
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

int ir_infer_layer_norm(IR_INFER_ARGS)
{
    (void)op;
    return norm_like(in, nin, a, out, err, nerr);
}

int ir_infer_rms_norm(IR_INFER_ARGS)
{
    (void)op;
    return norm_like(in, nin, a, out, err, nerr);
}

int ir_infer_batch_norm(IR_INFER_ARGS)
{
    (void)op, (void)a;
    static const char *const names[] = {"input", "running_mean", "running_var", "weight", "bias"};
    const ir_type *x = in[0];
    if (need_float(x, err, nerr))
        return -1;
    if (x->ndim < 2)
        return ir_fail(err, nerr, "needs an input of at least 2 dims [N, C, ...]");
    for (int k = 1; k < nin; k++) {
        const ir_type *p = in[k];
        if (!p)
            continue;
        if (p->dtype != x->dtype)
            return ir_fail(err, nerr, "%s has dtype %s, expected %s like the input", names[k],
                           tj_dtype_name(p->dtype), tj_dtype_name(x->dtype));
        if (p->ndim != 1 || p->shape[0] != x->shape[1])
            return ir_fail(err, nerr, "%s must be 1-D of size C = %s", names[k],
                           IR_DIM(x->shape[1]));
    }
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}
