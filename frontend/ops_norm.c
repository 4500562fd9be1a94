/* ops_norm.c - public entry points of the normalizations (softmax,
 * log_softmax, layer_norm, rms_norm, batch_norm): fill the attributes and
 * call fe_apply. */
#include "fe.h"

tj_tensor *tj_softmax(tj_tensor *x, int dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return fe_apply(OP_softmax, &x, 1, &at);
}

tj_tensor *tj_log_softmax(tj_tensor *x, int dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return fe_apply(OP_log_softmax, &x, 1, &at);
}

tj_tensor *tj_layer_norm(tj_tensor *x, int ndims, tj_tensor *w, tj_tensor *b, double eps)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], ndims);
    ir_attr_float(&at.a[1], eps);
    tj_tensor *in[3] = {x, w, b};
    return fe_apply(OP_layer_norm, in, 3, &at);
}

tj_tensor *tj_rms_norm(tj_tensor *x, int ndims, tj_tensor *w, double eps)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], ndims);
    ir_attr_float(&at.a[1], eps);
    tj_tensor *in[2] = {x, w};
    return fe_apply(OP_rms_norm, in, 2, &at);
}

tj_tensor *tj_batch_norm(tj_tensor *x, tj_tensor *mean, tj_tensor *var, tj_tensor *w,
                         tj_tensor *b, double eps)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], eps);
    tj_tensor *in[5] = {x, mean, var, w, b};
    return fe_apply(OP_batch_norm, in, 5, &at);
}

/* Training mode: normalizes with the batch's statistics (biased variance)
 * over every dim but 1, written as batch_norm of those statistics so the
 * gradient flows through them; then, without gradient, moves the running
 * statistics toward the batch's (unbiased variance), as PyTorch does. */
tj_tensor *tj_batch_norm_train(tj_tensor *x, tj_tensor *running_mean, tj_tensor *running_var,
                               tj_tensor *w, tj_tensor *b, double momentum, double eps)
{
    if (!x) {
        if (!rt_has_error())
            rt_error("batch_norm_train: x is NULL");
        return NULL;
    }
    if (x->ndim < 2) {
        char d[64];
        rt_error("batch_norm_train(%s): x needs a batch and a channel dim", tj_describe(x, d, sizeof d));
        return NULL;
    }
    if (!(momentum >= 0 && momentum <= 1)) {
        rt_error("batch_norm_train: momentum %g is not in [0, 1]", momentum);
        return NULL;
    }
    int dims[TJ_MAX_DIMS], nd = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != 1)
            dims[nd++] = d;
    tj_tensor *mean = tj_mean(x, dims, nd, false), *var = tj_var(x, dims, nd, 0, false);
    tj_tensor *y = tj_batch_norm(x, mean, var, w, b, eps);
    if (!y || (!running_mean && !running_var))
        return y;
    int rc = 0;
    tj_no_grad_begin();
    if (running_mean)
        rc = tj_copy_(running_mean, tj_add(tj_mul_s(running_mean, 1 - momentum), tj_mul_s(mean, momentum)));
    if (running_var && rc == 0) {
        /* momentum n / (n - 1) (1 for n = 1), n the count over the batch's
         * dims (a tensor over symbolic ones: fe_count) */
        tj_tensor *n = fe_count(x, ~(uint32_t)0 >> (32 - x->ndim) & ~2u, TJ_F64);
        tj_tensor *unbias = tj_where(tj_gt_s(n, 1), tj_div(n, tj_sub_s(n, 1)), tj_scalar(TJ_F64, 1));
        tj_tensor *f = tj_cast(tj_mul_s(unbias, momentum), var->dtype);
        rc = tj_copy_(running_var, tj_add(tj_mul_s(running_var, 1 - momentum), tj_mul(var, f)));
    }
    tj_no_grad_end();
    return rc == 0 ? y : NULL;
}
