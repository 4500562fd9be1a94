/* ops_idx.c - public entry points of the indexing, scan and shape rows
 * (ops.def's "indexing, scans and shapes" section): they fill attributes and
 * call fe_apply. */
#include "fe.h"

/* A list argument: its n entries, or a list the rule rejects (n = -1) when
 * n is out of range or the pointer is NULL. */
static void ints_attr(ir_attr *at, const int64_t *v, int n)
{
    if (n < 0 || n > IR_MAX_LIST || (n > 0 && !v))
        at->n = -1;
    else
        ir_attr_ints(at, v, n);
}

static void dims_attr(ir_attr *at, const int *v, int n)
{
    if (n < 0 || n > IR_MAX_LIST || (n > 0 && !v))
        at->n = -1;
    else
        ir_attr_dims(at, v, n);
}

static tj_tensor *with_int(ir_op op, tj_tensor *x, int64_t v)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], v);
    return fe_apply(op, &x, 1, &at);
}

tj_tensor *tj_narrow(tj_tensor *x, int dim, int64_t start, int64_t length)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], start);
    ir_attr_int(&at.a[2], length);
    return fe_apply(OP_narrow, &x, 1, &at);
}

tj_tensor *tj_movedim(tj_tensor *x, const int *src, const int *dst, int n)
{
    ir_attrs at = {0};
    dims_attr(&at.a[0], src, n);
    dims_attr(&at.a[1], dst, n);
    return fe_apply(OP_movedim, &x, 1, &at);
}

tj_tensor *tj_t(tj_tensor *x) { return fe_apply(OP_t, &x, 1, NULL); }

tj_tensor *tj_unflatten(tj_tensor *x, int dim, const int64_t *sizes, int n)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ints_attr(&at.a[1], sizes, n);
    return fe_apply(OP_unflatten, &x, 1, &at);
}

tj_tensor *tj_expand_as(tj_tensor *x, tj_tensor *other)
{
    return fe_apply(OP_expand_as, (tj_tensor *[]){x, other}, 2, NULL);
}

tj_tensor *tj_view_as(tj_tensor *x, tj_tensor *other)
{
    return fe_apply(OP_view_as, (tj_tensor *[]){x, other}, 2, NULL);
}

tj_tensor *tj_tril(tj_tensor *x, int64_t diagonal) { return with_int(OP_tril, x, diagonal); }
tj_tensor *tj_triu(tj_tensor *x, int64_t diagonal) { return with_int(OP_triu, x, diagonal); }

tj_tensor *tj_masked_fill(tj_tensor *x, tj_tensor *mask, double value)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], value);
    return fe_apply(OP_masked_fill, (tj_tensor *[]){x, mask}, 2, &at);
}
