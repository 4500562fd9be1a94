/* ops_strided.c - public entry points of the remaining strided prims of
 * issue 11: as_strided (a VIEW row of ops.def) and empty_strided (zeros of
 * the storage its strides need, viewed by as_strided: no row of its own). */
#include <stdio.h>

#include "fe.h"

static void list_attr(ir_attr *a, const int64_t *v, int n)
{
    if (n < 0 || n > IR_MAX_LIST || (n > 0 && !v))
        a->n = -1;   /* the shape rule reports the bad list */
    else
        ir_attr_ints(a, v, n);
}

tj_tensor *tj_as_strided(tj_tensor *x, int ndim, const int64_t *size, const int64_t *stride,
                         int64_t storage_offset)
{
    ir_attrs at = {0};
    list_attr(&at.a[0], size, ndim);
    list_attr(&at.a[1], stride, ndim);
    ir_attr_int(&at.a[2], storage_offset);
    return fe_apply(OP_as_strided, &x, 1, &at);
}

tj_tensor *tj_empty_strided(tj_dtype dt, int ndim, const int64_t *size, const int64_t *stride)
{
    if (ndim < 0 || ndim > TJ_MAX_DIMS || (ndim > 0 && (!size || !stride))) {
        rt_error("empty_strided: bad size/stride lists (%d dims%s)", ndim,
                 ndim < 0 || ndim > TJ_MAX_DIMS ? "" : ", a list is NULL");
        return NULL;
    }
    int64_t need = 1;   /* 1 + the last offset reached; 0 with no elements */
    for (int d = 0; d < ndim; d++) {
        if (size[d] < 0 || stride[d] < 0) {
            rt_error("empty_strided: negative %s %lld in dim %d", size[d] < 0 ? "size" : "stride",
                     (long long)(size[d] < 0 ? size[d] : stride[d]), d);
            return NULL;
        }
        int64_t step;
        if (__builtin_mul_overflow(size[d] - 1, stride[d], &step) || __builtin_add_overflow(need, step, &need)) {
            rt_error("empty_strided: the strides overflow");
            return NULL;
        }
    }
    for (int d = 0; d < ndim; d++)
        if (size[d] == 0)
            need = 0;
    return tj_as_strided(tj_zeros(dt, 1, &need), ndim, size, stride, 0);
}
