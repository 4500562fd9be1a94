/* ops_reduce.c - public entry points of the reductions (sum, mean, prod, amax,
 * amin, logsumexp, all, any, var, std, argmax, argmin, xor_sum): fill the attributes
 * (dims, [correction], keepdim) and call fe_apply. */
#include <stdio.h>

#include "fe.h"

/* A dims list the attribute cannot hold: the error names op and input. */
static tj_tensor *bad_dims(ir_op op, tj_tensor *x, int ndims)
{
    char head[256];
    rt_describe_inputs(ir_ops[op].name, &x, 1, head, sizeof head);
    rt_error("%s: bad dims list (%d dims%s)", head, ndims,
             ndims < 0 || ndims > IR_MAX_LIST ? "" : ", dims is NULL");
    return NULL;
}

static tj_tensor *reduce(ir_op op, tj_tensor *x, const int *dims, int ndims, bool keepdim)
{
    if (x && (ndims < 0 || ndims > IR_MAX_LIST || (ndims > 0 && !dims)))
        return bad_dims(op, x, ndims);
    ir_attrs at = {0};
    ir_attr_dims(&at.a[0], dims, x ? ndims : 0);
    ir_attr_int(&at.a[ir_ops[op].nattrs - 1], keepdim);
    return fe_apply(op, &x, 1, &at);
}

#define TJ_REDUCE_FN(name) \
    tj_tensor *tj_##name(tj_tensor *x, const int *dims, int ndims, bool keepdim) \
    { \
        return reduce(OP_##name, x, dims, ndims, keepdim); \
    }
TJ_REDUCE_FN(sum)
TJ_REDUCE_FN(mean)
TJ_REDUCE_FN(prod)
TJ_REDUCE_FN(amax)
TJ_REDUCE_FN(amin)
TJ_REDUCE_FN(logsumexp)
TJ_REDUCE_FN(all)
TJ_REDUCE_FN(any)
TJ_REDUCE_FN(xor_sum)   /* remaining prims (issue 11) */
#undef TJ_REDUCE_FN

static tj_tensor *var_like(ir_op op, tj_tensor *x, const int *dims, int ndims,
                           int64_t correction, bool keepdim)
{
    if (x && (ndims < 0 || ndims > IR_MAX_LIST || (ndims > 0 && !dims)))
        return bad_dims(op, x, ndims);
    ir_attrs at = {0};
    ir_attr_dims(&at.a[0], dims, x ? ndims : 0);
    ir_attr_int(&at.a[1], correction);
    ir_attr_int(&at.a[2], keepdim);
    return fe_apply(op, &x, 1, &at);
}

tj_tensor *tj_var(tj_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    return var_like(OP_var, x, dims, ndims, correction, keepdim);
}

tj_tensor *tj_std(tj_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim)
{
    return var_like(OP_std, x, dims, ndims, correction, keepdim);
}

tj_tensor *tj_argmax(tj_tensor *x, int dim, bool keepdim)
{
    return reduce(OP_argmax, x, &dim, dim == TJ_ALL_DIMS ? 0 : 1, keepdim);
}

tj_tensor *tj_argmin(tj_tensor *x, int dim, bool keepdim)
{
    return reduce(OP_argmin, x, &dim, dim == TJ_ALL_DIMS ? 0 : 1, keepdim);
}
