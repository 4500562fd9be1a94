/* ops_idx.c - public entry points of the indexing, scan and shape rows
 * (ops.def's "indexing, scans and shapes" section): they fill attributes and
 * call fe_apply. */
#include <stdlib.h>

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

/* ---- search ---------------------------------------------------------------------------- */

tj_tensor *tj_searchsorted(tj_tensor *sorted, tj_tensor *values, bool right)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], right);
    return fe_apply(OP_searchsorted, (tj_tensor *[]){sorted, values}, 2, &at);
}

tj_tensor *tj_bucketize(tj_tensor *values, tj_tensor *boundaries, bool right)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], right);
    return fe_apply(OP_bucketize, (tj_tensor *[]){values, boundaries}, 2, &at);
}

/* ---- data-dependent shapes ------------------------------------------------------------- */

static bool usable(tj_tensor *x, const char *what)
{
    if (!x) {
        if (!rt_has_error())
            rt_error("%s: input is NULL", what);
        return false;
    }
    if (rt_dead(x)) {
        rt_error("%s: input 0 is a released tensor (used after tj_release)", what);
        return false;
    }
    return true;
}

tj_tensor *tj_nonzero(tj_tensor *x)
{
    if (!usable(x, "nonzero") || fe_trace_needs_values(x, "tj_nonzero"))
        return NULL;
    tj_tensor *nz = tj_contiguous(tj_ne_s(x, 0));   /* NaN counts, as in torch */
    const uint8_t *p = nz ? tj_data(nz) : NULL;
    if (!p && nz && rt_numel(nz))
        return NULL;
    int64_t n = rt_numel(x), count = 0, nd = x->ndim;
    for (int64_t k = 0; k < n; k++)
        count += p[k] != 0;
    int64_t *pos = malloc((size_t)(count * nd + 1) * sizeof *pos);
    if (!pos) {
        rt_error("nonzero: out of memory");
        return NULL;
    }
    for (int64_t k = 0, m = 0; k < n; k++) {
        if (!p[k])
            continue;
        for (int64_t d = nd - 1, r = k; d >= 0; d--) {
            pos[m * nd + d] = r % x->shape[d];
            r /= x->shape[d];
        }
        m++;
    }
    tj_tensor *r = tj_from_data(TJ_I64, 2, (int64_t[]){count, nd}, pos);
    free(pos);
    return r;
}

/* The elements of x (broadcast with mask) where mask is true, in order: a
 * take at the mask's flat nonzero positions, so the gradient flows to x. */
tj_tensor *tj_masked_select(tj_tensor *x, tj_tensor *mask)
{
    if (!usable(x, "masked_select") || !usable(mask, "masked_select"))
        return NULL;
    if (mask->dtype != TJ_BOOL) {
        char head[256];
        rt_describe_inputs("masked_select", (tj_tensor *[]){x, mask}, 2, head, sizeof head);
        rt_error("%s: mask must be bool, got %s", head, tj_dtype_name(mask->dtype));
        return NULL;
    }
    tj_tensor *both = tj_logical_and(mask, tj_ne(x, x));   /* the broadcast shape (values unused) */
    if (!both)
        return NULL;
    tj_tensor *xb = tj_expand(x, both->ndim, both->shape);
    tj_tensor *mb = tj_reshape(tj_expand(mask, both->ndim, both->shape), 1, (int64_t[]){-1});
    tj_tensor *pos = tj_nonzero(mb);
    if (!pos)
        return NULL;
    return tj_take(xb, tj_reshape(pos, 1, (int64_t[]){-1}));
}

/* ---- lists ----------------------------------------------------------------------------- */

int tj_chunk(tj_tensor *x, int chunks, int dim, tj_tensor **out, int max)
{
    if (!usable(x, "chunk"))
        return -1;
    int d = ir_norm_dim(dim, x->ndim);
    if (chunks <= 0 || x->ndim == 0 || d < 0) {
        char head[256];
        rt_describe_inputs("chunk", &x, 1, head, sizeof head);
        rt_error("%s: %s", head, chunks <= 0 ? "chunks must be positive" : "dim out of range");
        return -1;
    }
    fe_trace_shape_read(x);
    int64_t len = x->shape[d], size = (len + chunks - 1) / chunks;
    return tj_split(x, size > 0 ? size : 1, d, out, max);
}

int tj_unbind(tj_tensor *x, int dim, tj_tensor **out, int max)
{
    if (!usable(x, "unbind"))
        return -1;
    int d = ir_norm_dim(dim, x->ndim);
    if (x->ndim == 0 || d < 0 || (max > 0 && !out)) {
        char head[256];
        rt_describe_inputs("unbind", &x, 1, head, sizeof head);
        rt_error("%s: %s", head, max > 0 && !out ? "out is NULL" : "dim out of range");
        return -1;
    }
    fe_trace_shape_read(x);
    int64_t n = x->shape[d];
    for (int64_t k = 0; k < n && k < max; k++)
        if (!(out[k] = tj_squeeze(tj_narrow(x, d, k, 1), &d, 1)))
            return -1;
    return (int)n;
}

int tj_meshgrid(tj_tensor *const *xs, int n, bool xy, tj_tensor **out)
{
    int64_t shape[TJ_MAX_DIMS];
    if (n < 1 || n > TJ_MAX_DIMS || !xs || !out) {
        rt_error("meshgrid(): needs 1 to %d tensors and an out array, got %d", TJ_MAX_DIMS, n);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        if (!usable(xs[k], "meshgrid"))
            return -1;
        if (xs[k]->ndim > 1) {
            rt_error("meshgrid(): input %d has %d dims (expected 0 or 1)", k, xs[k]->ndim);
            return -1;
        }
        fe_trace_shape_read(xs[k]);
        shape[k] = xs[k]->ndim ? xs[k]->shape[0] : 1;
    }
    bool swap = xy && n >= 2;   /* 'xy': the first two dims trade places */
    if (swap) {
        int64_t t = shape[0];
        shape[0] = shape[1], shape[1] = t;
    }
    for (int k = 0; k < n; k++) {
        int at = swap && k < 2 ? 1 - k : k;
        int64_t view[TJ_MAX_DIMS];
        for (int j = 0; j < n; j++)
            view[j] = j == at ? shape[at] : 1;
        if (!(out[k] = tj_expand(tj_reshape(xs[k], n, view), n, shape)))
            return -1;
    }
    return n;
}

/* torch.hstack / vstack: cat along dim 1 (0 for 1-D inputs) / dim 0, after
 * atleast_1d / atleast_2d. */
static tj_tensor *stack_like(tj_tensor *const *xs, int n, bool vertical)
{
    tj_tensor *parts[FE_MAX_INPUTS];
    if (n < 1 || n > FE_MAX_INPUTS || !xs) {
        rt_error("%s(): needs 1 to %d tensors, got %d", vertical ? "vstack" : "hstack",
                 FE_MAX_INPUTS, n);
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        tj_tensor *x = xs[k];
        if (!usable(x, vertical ? "vstack" : "hstack"))
            return NULL;
        if (x->ndim == 0)
            x = tj_reshape(x, vertical ? 2 : 1, (int64_t[]){1, 1});
        else if (vertical && x->ndim == 1)
            x = tj_unsqueeze(x, 0);
        parts[k] = x;
    }
    return tj_cat(parts, n, vertical || parts[0]->ndim == 1 ? 0 : 1);
}

tj_tensor *tj_hstack(tj_tensor *const *xs, int n) { return stack_like(xs, n, false); }
tj_tensor *tj_vstack(tj_tensor *const *xs, int n) { return stack_like(xs, n, true); }

tj_tensor *tj_where_xs(tj_tensor *cond, tj_tensor *a, double b)
{
    return tj_where(cond, a, a ? fe_wrap_scalar(b, a) : NULL);
}

tj_tensor *tj_where_sx(tj_tensor *cond, double a, tj_tensor *b)
{
    return tj_where(cond, b ? fe_wrap_scalar(a, b) : NULL, b);
}

tj_tensor *tj_fill(tj_tensor *x, double value) { return tj_full_like(x, value); }

tj_tensor *tj_maximum_value(tj_dtype dt)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dt);
    return fe_apply(OP_maximum_value, NULL, 0, &at);
}

tj_tensor *tj_minimum_value(tj_dtype dt)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dt);
    return fe_apply(OP_minimum_value, NULL, 0, &at);
}
