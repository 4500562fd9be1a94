/* ops_nnorm.c - public entry points of the normalization, norm and distance
 * rows of ops.def's "nn and linalg" section, and nll_loss: they fill the
 * attributes and call fe_apply. */
#include "fe.h"

static tj_tensor *norm3(ir_op op, tj_tensor *x, tj_tensor *w, tj_tensor *b, const ir_attrs *at)
{
    return fe_apply(op, (tj_tensor *[]){x, w, b}, b ? 3 : w ? 2 : 1, at);
}

tj_tensor *tj_group_norm(tj_tensor *x, int64_t groups, tj_tensor *w, tj_tensor *b, double eps)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], groups);
    ir_attr_float(&at.a[1], eps);
    return norm3(OP_group_norm, x, w, b, &at);
}

tj_tensor *tj_instance_norm(tj_tensor *x, tj_tensor *w, tj_tensor *b, double eps)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], eps);
    return norm3(OP_instance_norm, x, w, b, &at);
}

tj_tensor *tj_local_response_norm(tj_tensor *x, int64_t size, double alpha, double beta, double k)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], size);
    ir_attr_float(&at.a[1], alpha);
    ir_attr_float(&at.a[2], beta);
    ir_attr_float(&at.a[3], k);
    return fe_apply(OP_local_response_norm, &x, 1, &at);
}

tj_tensor *tj_vector_norm(tj_tensor *x, double ord, const int *dims, int ndims, bool keepdim)
{
    if (ndims < 0 || ndims > TJ_MAX_DIMS) {
        rt_error("vector_norm: %d dims (0 to %d)", ndims, TJ_MAX_DIMS);
        return NULL;
    }
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], ord);
    ir_attr_dims(&at.a[1], dims, ndims);
    ir_attr_int(&at.a[2], keepdim);
    return fe_apply(OP_vector_norm, &x, 1, &at);
}

tj_tensor *tj_cosine_similarity(tj_tensor *x1, tj_tensor *x2, int dim, double eps)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_float(&at.a[1], eps);
    return fe_apply(OP_cosine_similarity, (tj_tensor *[]){x1, x2}, 2, &at);
}

tj_tensor *tj_pairwise_distance(tj_tensor *x1, tj_tensor *x2, double p, double eps, bool keepdim)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], p);
    ir_attr_float(&at.a[1], eps);
    ir_attr_int(&at.a[2], keepdim);
    return fe_apply(OP_pairwise_distance, (tj_tensor *[]){x1, x2}, 2, &at);
}

static tj_tensor *adaptive(ir_op op, tj_tensor *x, const int64_t *size, int n)
{
    ir_attrs at = {0};
    ir_attr_ints(&at.a[0], size, n);
    return fe_apply(op, &x, 1, &at);
}

tj_tensor *tj_adaptive_avg_pool1d(tj_tensor *x, int64_t size)
{
    return adaptive(OP_adaptive_avg_pool1d, x, &size, 1);
}

tj_tensor *tj_adaptive_avg_pool2d(tj_tensor *x, int64_t h, int64_t w)
{
    return adaptive(OP_adaptive_avg_pool2d, x, (int64_t[]){h, w}, 2);
}

tj_tensor *tj_adaptive_avg_pool3d(tj_tensor *x, int64_t d, int64_t h, int64_t w)
{
    return adaptive(OP_adaptive_avg_pool3d, x, (int64_t[]){d, h, w}, 3);
}

tj_tensor *tj_adaptive_max_pool2d(tj_tensor *x, int64_t h, int64_t w)
{
    return adaptive(OP_adaptive_max_pool2d, x, (int64_t[]){h, w}, 2);
}

tj_tensor *tj_cdist(tj_tensor *x1, tj_tensor *x2, double p)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], p);
    return fe_apply(OP_cdist, (tj_tensor *[]){x1, x2}, 2, &at);
}

tj_tensor *tj_matrix_norm(tj_tensor *x, const int *dims, bool keepdim)
{
    ir_attrs at = {0};
    if (dims)
        ir_attr_dims(&at.a[0], dims, 2);
    ir_attr_int(&at.a[1], keepdim);
    return fe_apply(OP_matrix_norm, &x, 1, &at);
}

tj_tensor *tj_nll_loss(tj_tensor *logp, tj_tensor *target, tj_tensor *weight,
                       tj_reduction reduction, int64_t ignore_index)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], reduction);
    ir_attr_int(&at.a[1], ignore_index);
    return fe_apply(OP_nll_loss, (tj_tensor *[]){logp, target, weight}, weight ? 3 : 2, &at);
}
