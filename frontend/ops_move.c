/* ops_move.c - public entry points of the data-movement ops: cat, stack
 * (unsqueeze each, then cat), split and split_with_sizes (slices), gather,
 * index_select, pad, flip. */
#include <stdio.h>

#include "fe.h"

tj_tensor *tj_cat(tj_tensor *const *xs, int n, int dim)
{
    if (n < 1 || !xs) {
        rt_error("cat(): needs at least one tensor, got %d", n);
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        if (!xs[k]) {   /* every input is mandatory; keep the error that made the NULL */
            if (!rt_has_error())
                rt_error("cat: input %d is NULL", k);
            return NULL;
        }
    }
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return fe_apply(OP_cat, xs, n, &at);
}

/* torch.stack: every tensor of the same shape, joined along a new dim. */
tj_tensor *tj_stack(tj_tensor *const *xs, int n, int dim)
{
    enum { MAX = FE_MAX_INPUTS };
    char head[512];
    if (n < 1 || n > MAX || !xs) {
        rt_error("stack(): needs 1 to %d tensors, got %d", MAX, n);
        return NULL;
    }
    for (int k = 0; k < n; k++)
        if (!xs[k])
            return tj_cat(xs, n, dim);   /* keeps or sets the NULL error */
    for (int k = 1; k < n; k++) {
        ir_type a, b;
        fe_trace_type(xs[0], &a);   /* symbolic dims compare as symbols */
        fe_trace_type(xs[k], &b);
        b.dtype = a.dtype;
        if (!ir_type_equal(&a, &b)) {   /* a symbol against a size: the sizes decide */
            fe_trace_shape_read(xs[0]);
            fe_trace_shape_read(xs[k]);
            rt_type_of(xs[0], &a);
            rt_type_of(xs[k], &b);
            b.dtype = a.dtype;
        }
        if (!ir_type_equal(&a, &b)) {
            rt_describe_inputs("stack", xs, n, head, sizeof head);
            rt_error("%s: input %d has a different shape from input 0", head, k);
            return NULL;
        }
    }
    tj_tensor *parts[MAX];
    for (int k = 0; k < n; k++)
        if (!(parts[k] = tj_unsqueeze(xs[k], dim)))
            return NULL;
    return tj_cat(parts, n, dim);
}

int tj_split(tj_tensor *x, int64_t size, int dim, tj_tensor **out, int max)
{
    if (!x) {
        if (!tj_last_error()[0])
            rt_error("split: input is NULL");
        return -1;
    }
    char head[256];
    rt_describe_inputs("split", &x, 1, head, sizeof head);
    int d = ir_norm_dim(dim, x->ndim);
    if (x->ndim == 0 || d < 0) {
        rt_error("%s: dim %d out of range for %d dims", head, dim, x->ndim);
        return -1;
    }
    if (size <= 0 || (max > 0 && !out)) {
        rt_error("%s: %s", head, size <= 0 ? "split size must be positive" : "out is NULL");
        return -1;
    }
    fe_trace_shape_read(x);   /* the number of pieces depends on the size */
    int64_t len = x->shape[d], count = len == 0 ? 1 : (len - 1) / size + 1;
    if (count > 0x7fffffff) {
        rt_error("%s: %lld pieces are too many", head, (long long)count);
        return -1;
    }
    for (int64_t k = 0; k < count && k < max; k++) {
        int64_t end = (k + 1) * size < len ? (k + 1) * size : len;
        if (!(out[k] = tj_slice(x, d, k * size, end, 1)))
            return -1;
    }
    return (int)count;
}

/* torch.split(x, [s0, s1, ...], dim) (split_with_sizes): n pieces of the
 * given sizes, each >= 0, which must sum to the size of dim. */
int tj_split_with_sizes(tj_tensor *x, const int64_t *sizes, int n, int dim, tj_tensor **out)
{
    if (!x) {
        if (!tj_last_error()[0])
            rt_error("split_with_sizes: input is NULL");
        return -1;
    }
    char head[256];
    rt_describe_inputs("split_with_sizes", &x, 1, head, sizeof head);
    int d = ir_norm_dim(dim, x->ndim);
    if (x->ndim == 0 || d < 0) {
        rt_error("%s: dim %d out of range for %d dims", head, dim, x->ndim);
        return -1;
    }
    if (n < 1 || !sizes || !out) {
        rt_error("%s: %s", head, n < 1 ? "needs at least one split size"
                                 : !sizes ? "sizes is NULL" : "out is NULL");
        return -1;
    }
    fe_trace_shape_read(x);   /* the sizes are checked against the shape */
    int64_t len = x->shape[d], sum = 0;
    for (int k = 0; k < n; k++)
        if (sizes[k] < 0) {
            rt_error("%s: split size %d is %lld; sizes must be non-negative", head, k,
                     (long long)sizes[k]);
            return -1;
        }
    for (int k = 0; k < n && sum <= len; k++)
        if (__builtin_add_overflow(sum, sizes[k], &sum))
            sum = INT64_MAX;   /* more than any size */
    if (sum != len) {
        char list[160];
        int m = 0;
        for (int k = 0; k < n && m < (int)sizeof list - 24; k++)
            m += snprintf(list + m, sizeof list - (size_t)m, k ? ",%lld" : "%lld", (long long)sizes[k]);
        rt_error("%s: split sizes [%s%s] must sum to %lld, the size of dim %d", head, list,
                 m >= (int)sizeof list - 24 ? ",..." : "", (long long)len, d);
        return -1;
    }
    int64_t start = 0;
    for (int k = 0; k < n; k++) {
        if (!(out[k] = tj_slice(x, d, start, start + sizes[k], 1)))
            return -1;
        start += sizes[k];
    }
    return n;
}

tj_tensor *tj_gather(tj_tensor *x, int dim, tj_tensor *index)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    tj_tensor *in[2] = {x, index};
    return fe_apply(OP_gather, in, 2, &at);
}

tj_tensor *tj_index_select(tj_tensor *x, int dim, tj_tensor *index)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    tj_tensor *in[2] = {x, index};
    return fe_apply(OP_index_select, in, 2, &at);
}

tj_tensor *tj_pad(tj_tensor *x, const int64_t *pads, int npairs, double value)
{
    ir_attrs at = {0};
    if (npairs < 0 || npairs > IR_MAX_LIST / 2 || (npairs > 0 && !pads))
        at.a[0].n = -1;   /* the rule rejects it */
    else
        ir_attr_ints(&at.a[0], pads, 2 * npairs);
    ir_attr_float(&at.a[1], value);
    return fe_apply(OP_pad, &x, 1, &at);
}

tj_tensor *tj_flip(tj_tensor *x, const int *dims, int ndims)
{
    ir_attrs at = {0};
    if (ndims < 0 || ndims > IR_MAX_LIST || (ndims > 0 && !dims))
        at.a[0].n = -1;
    else
        ir_attr_dims(&at.a[0], dims, ndims);
    return fe_apply(OP_flip, &x, 1, &at);
}
