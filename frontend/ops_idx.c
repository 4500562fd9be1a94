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

tj_tensor *tj_index_fill(tj_tensor *x, int dim, tj_tensor *index, double value)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_float(&at.a[1], value);
    return fe_apply(OP_index_fill, (tj_tensor *[]){x, index}, 2, &at);
}

static tj_tensor *diag_op(ir_op op, tj_tensor *x, int64_t offset, int dim1, int dim2)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], offset);
    ir_attr_int(&at.a[1], dim1);
    ir_attr_int(&at.a[2], dim2);
    return fe_apply(op, &x, 1, &at);
}

tj_tensor *tj_diagonal(tj_tensor *x, int64_t offset, int dim1, int dim2)
{
    return diag_op(OP_diagonal, x, offset, dim1, dim2);
}

tj_tensor *tj_diag_embed(tj_tensor *x, int64_t offset, int dim1, int dim2)
{
    return diag_op(OP_diag_embed, x, offset, dim1, dim2);
}

tj_tensor *tj_diag(tj_tensor *x, int64_t diagonal)
{
    if (x && !rt_dead(x) && x->ndim != 1 && x->ndim != 2) {
        char head[256];
        rt_describe_inputs("diag", &x, 1, head, sizeof head);
        rt_error("%s: expects a 1-D or 2-D tensor, got %d dims", head, x->ndim);
        return NULL;
    }
    if (x && !rt_dead(x) && x->ndim == 2)
        return diag_op(OP_diagonal, x, diagonal, 0, 1);
    return diag_op(OP_diag_embed, x, diagonal, 0, 1);
}

tj_tensor *tj_repeat(tj_tensor *x, const int64_t *repeats, int n)
{
    ir_attrs at = {0};
    ints_attr(&at.a[0], repeats, n);
    return fe_apply(OP_repeat, &x, 1, &at);
}

tj_tensor *tj_tile(tj_tensor *x, const int64_t *dims, int n)
{
    ir_attrs at = {0};
    ints_attr(&at.a[0], dims, n);
    return fe_apply(OP_tile, &x, 1, &at);
}

tj_tensor *tj_repeat_interleave(tj_tensor *x, int64_t repeats, int dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], repeats);
    ir_attr_int(&at.a[1], dim);
    return fe_apply(OP_repeat_interleave, &x, 1, &at);
}

tj_tensor *tj_roll(tj_tensor *x, const int64_t *shifts, const int *dims, int n)
{
    ir_attrs at = {0};
    ints_attr(&at.a[0], shifts, n > 0 ? n : 1);
    dims_attr(&at.a[1], dims, n > 0 ? n : 0);
    return fe_apply(OP_roll, &x, 1, &at);
}

tj_tensor *tj_unfold(tj_tensor *x, int dim, int64_t size, int64_t step)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], size);
    ir_attr_int(&at.a[2], step);
    return fe_apply(OP_unfold, &x, 1, &at);
}

tj_tensor *tj_take(tj_tensor *x, tj_tensor *index)
{
    return fe_apply(OP_take, (tj_tensor *[]){x, index}, 2, NULL);
}

tj_tensor *tj_take_along_dim(tj_tensor *x, tj_tensor *index, int dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return fe_apply(OP_take_along_dim, (tj_tensor *[]){x, index}, 2, &at);
}

tj_tensor *tj_one_hot(tj_tensor *index, int64_t num_classes)
{
    return with_int(OP_one_hot, index, num_classes);
}

tj_tensor *tj_full_like(tj_tensor *x, double value)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], value);
    return fe_apply(OP_full_like, &x, 1, &at);
}

tj_tensor *tj_zeros_like(tj_tensor *x) { return tj_full_like(x, 0); }
tj_tensor *tj_ones_like(tj_tensor *x) { return tj_full_like(x, 1); }
tj_tensor *tj_empty_like(tj_tensor *x) { return tj_full_like(x, 0); }

tj_tensor *tj_eye(tj_dtype dt, int64_t n, int64_t m)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], n);
    ir_attr_int(&at.a[1], m);
    ir_attr_int(&at.a[2], dt);
    return fe_apply(OP_eye, NULL, 0, &at);
}

tj_tensor *tj_linspace(tj_dtype dt, double start, double end, int64_t steps)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], start);
    ir_attr_float(&at.a[1], end);
    ir_attr_int(&at.a[2], steps);
    ir_attr_int(&at.a[3], dt);
    return fe_apply(OP_linspace, NULL, 0, &at);
}

tj_tensor *tj_logspace(tj_dtype dt, double start, double end, int64_t steps, double base)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], start);
    ir_attr_float(&at.a[1], end);
    ir_attr_int(&at.a[2], steps);
    ir_attr_float(&at.a[3], base);
    ir_attr_int(&at.a[4], dt);
    return fe_apply(OP_logspace, NULL, 0, &at);
}

/* ---- scans and sorts ------------------------------------------------------------------- */

tj_tensor *tj_cumsum(tj_tensor *x, int dim) { return with_int(OP_cumsum, x, dim); }
tj_tensor *tj_cumprod(tj_tensor *x, int dim) { return with_int(OP_cumprod, x, dim); }
tj_tensor *tj_logcumsumexp(tj_tensor *x, int dim) { return with_int(OP_logcumsumexp, x, dim); }

/* Values through the row op, and the positions when asked for. */
static tj_tensor *with_indices(tj_tensor *v, tj_tensor **indices, tj_tensor *ix)
{
    if (indices)
        *indices = v ? ix : NULL;
    return v && (!indices || ix) ? v : NULL;
}

tj_tensor *tj_cummax(tj_tensor *x, int dim, tj_tensor **indices)
{
    tj_tensor *v = with_int(OP_cummax, x, dim);
    return with_indices(v, indices, v && indices ? with_int(OP_cummax_indices, x, dim) : NULL);
}

tj_tensor *tj_cummin(tj_tensor *x, int dim, tj_tensor **indices)
{
    tj_tensor *v = with_int(OP_cummin, x, dim);
    return with_indices(v, indices, v && indices ? with_int(OP_cummin_indices, x, dim) : NULL);
}

static tj_tensor *sort_op(ir_op op, tj_tensor *x, int dim, bool descending)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], descending);
    return fe_apply(op, &x, 1, &at);
}

tj_tensor *tj_argsort(tj_tensor *x, int dim, bool descending)
{
    return sort_op(OP_argsort, x, dim, descending);
}

tj_tensor *tj_sort(tj_tensor *x, int dim, bool descending, tj_tensor **indices)
{
    tj_tensor *v = sort_op(OP_sort, x, dim, descending);
    return with_indices(v, indices, v && indices ? tj_argsort(x, dim, descending) : NULL);
}

/* positions [from, from + k) of the sorted lines, for the indices. */
static tj_tensor *sorted_positions(tj_tensor *x, int dim, bool desc, int64_t from, int64_t k)
{
    tj_tensor *s = tj_argsort(x, dim, desc);
    return s && s->ndim ? tj_slice(s, dim, from, from + k, 1) : s;
}

tj_tensor *tj_topk(tj_tensor *x, int64_t k, int dim, bool largest, tj_tensor **indices)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], k);
    ir_attr_int(&at.a[1], dim);
    ir_attr_int(&at.a[2], largest);
    tj_tensor *v = fe_apply(OP_topk, &x, 1, &at);
    return with_indices(v, indices, v && indices ? sorted_positions(x, dim, largest, 0, k) : NULL);
}

tj_tensor *tj_kthvalue(tj_tensor *x, int64_t k, int dim, bool keepdim, tj_tensor **indices)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], k);
    ir_attr_int(&at.a[1], dim);
    ir_attr_int(&at.a[2], keepdim);
    tj_tensor *v = fe_apply(OP_kthvalue, &x, 1, &at);
    tj_tensor *ix = v && indices ? sorted_positions(x, dim, false, k - 1, 1) : NULL;
    if (ix && ix->ndim && !keepdim)
        ix = tj_squeeze(ix, &dim, 1);
    return with_indices(v, indices, ix);
}

tj_tensor *tj_median(tj_tensor *x, int dim, bool keepdim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], keepdim);
    return fe_apply(OP_median, &x, 1, &at);
}

static tj_tensor *extreme_dim(bool max, tj_tensor *x, int dim, bool keepdim, tj_tensor **indices)
{
    tj_tensor *v = max ? tj_amax(x, &dim, 1, keepdim) : tj_amin(x, &dim, 1, keepdim);
    tj_tensor *ix = v && indices ? (max ? tj_argmax : tj_argmin)(x, dim, keepdim) : NULL;
    return with_indices(v, indices, ix);
}

tj_tensor *tj_max_dim(tj_tensor *x, int dim, bool keepdim, tj_tensor **indices)
{
    return extreme_dim(true, x, dim, keepdim, indices);
}

tj_tensor *tj_min_dim(tj_tensor *x, int dim, bool keepdim, tj_tensor **indices)
{
    return extreme_dim(false, x, dim, keepdim, indices);
}

/* ---- scatters ------------------------------------------------------------------------ */

static tj_tensor *three(ir_op op, tj_tensor *x, tj_tensor *index, tj_tensor *src, ir_attrs *at)
{
    return fe_apply(op, (tj_tensor *[]){x, index, src}, 3, at);
}

tj_tensor *tj_scatter(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *src)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return three(OP_scatter, x, index, src, &at);
}

tj_tensor *tj_scatter_add(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *src)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return three(OP_scatter_add, x, index, src, &at);
}

tj_tensor *tj_index_add(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *source, double alpha)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_float(&at.a[1], alpha);
    return three(OP_index_add, x, index, source, &at);
}

tj_tensor *tj_index_copy(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *source)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return three(OP_index_copy, x, index, source, &at);
}

tj_tensor *tj_index_put(tj_tensor *x, tj_tensor *const *indices, int n, tj_tensor *values,
                        bool accumulate)
{
    tj_tensor *in[2 + TJ_MAX_DIMS];
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], accumulate);
    if (n < 1 || n > TJ_MAX_DIMS || !indices) {
        char head[256];
        rt_describe_inputs("index_put", &x, x ? 1 : 0, head, sizeof head);
        rt_error("%s: needs 1 to %d index tensors, got %d", head, TJ_MAX_DIMS, n);
        return NULL;
    }
    in[0] = x, in[1] = values;
    for (int k = 0; k < n; k++)
        in[2 + k] = indices[k];
    return fe_apply(OP_index_put, in, 2 + n, &at);
}
