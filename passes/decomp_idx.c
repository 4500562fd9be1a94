/* decomp_idx.c - the decompositions of the indexing, scan and shape rows of
 * ops.def (its "indexing, scans and shapes" section). Most are DCOMP rows:
 * the eager API runs these same decompositions op by op
 * (frontend/apply_decomp.c), so what is written here is the op's one definition.
 * They use views (slice, permute, reshape, expand), where over iota masks,
 * gather and index_select, and the scan/sort/scatter prims of that section. */
#include <math.h>
#include <string.h>

#include "decomp.h"

static ir_node *b_op1(ps_builder *b, ir_op op, ir_node *x, ir_attrs *at)
{
    return ps_b_op(b, op, &x, 1, at);
}

/* slice(x, dim, start, end, 1). */
static ir_node *b_slice(ps_builder *b, ir_node *x, int64_t dim, int64_t start, int64_t end)
{
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], start);
    ir_attr_int(&at.a[2], end);
    ir_attr_int(&at.a[3], 1);
    return b_op1(b, OP_slice, x, &at);
}

/* The value v as a 0-dim tensor of dtype dt (not weak): what torch's
 * fill-like ops make of their Python number. */
static ir_node *b_value(ps_builder *b, double v, tj_dtype dt)
{
    if (dt == TJ_BOOL)
        return ps_b_scalar(b, v != 0, TJ_BOOL);
    return ps_b_cast(b, ps_b_scalar(b, v, TJ_F64), dt);
}

ir_node *ps_decomp_narrow(PS_DECOMP_ARGS)
{
    int64_t d = a->a[0].i[0], start = a->a[1].i[0];
    int dd = ir_norm_dim(d, in[0]->type.ndim);
    if (start < 0)
        start += in[0]->type.shape[dd];
    return b_slice(b, in[0], dd, start, start + n->type.shape[dd]);
}

ir_node *ps_decomp_movedim(PS_DECOMP_ARGS)
{
    int64_t perm[TJ_MAX_DIMS];
    char err[256];
    if (in[0]->type.ndim == 0)
        return in[0];
    if (ir_movedim_perm(&a->a[0], &a->a[1], in[0]->type.ndim, perm, err, sizeof err))
        return ps_b_fail(b, "%s", err);
    return ps_b_permute(b, in[0], perm);
}

ir_node *ps_decomp_t(PS_DECOMP_ARGS)
{
    (void)n, (void)a;
    return in[0]->type.ndim < 2 ? in[0] : ps_b_transpose_last2(b, in[0]);
}

ir_node *ps_decomp_unflatten(PS_DECOMP_ARGS)
{
    (void)a, (void)in;
    return ps_b_reshape(b, in[0], n->type.shape, n->type.ndim);
}

ir_node *ps_decomp_expand_as(PS_DECOMP_ARGS)
{
    (void)a;
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_ints(&at.a[0], n->type.shape, n->type.ndim);
    return b_op1(b, OP_expand, in[0], &at);
}

ir_node *ps_decomp_view_as(PS_DECOMP_ARGS)
{
    (void)a;
    return ps_b_reshape(b, in[0], n->type.shape, n->type.ndim);
}

/* tril keeps col - row <= k, triu col - row >= k, over the last two dims. */
static ir_node *triangle(ps_builder *b, const ir_node *n, ir_node *x, int64_t k, ir_op cmp)
{
    int nd = x->type.ndim;
    for (int d = 0; d < nd; d++)
        if (x->type.shape[d] == 0)   /* no elements to mask */
            return x;
    ir_node *rows = ps_b_unsqueeze(b, ps_b_arange_of(b, x, nd - 2), 1);
    ir_node *cols = ps_b_arange_of(b, x, nd - 1);
    ir_node *keep = b_bin_s(b, cmp, b_sub(b, cols, rows), (double)k);
    return b_where(b, keep, x, b_value(b, 0, n->type.dtype));
}

ir_node *ps_decomp_tril(PS_DECOMP_ARGS) { return triangle(b, n, in[0], a->a[0].i[0], OP_le); }
ir_node *ps_decomp_triu(PS_DECOMP_ARGS) { return triangle(b, n, in[0], a->a[0].i[0], OP_ge); }

ir_node *ps_decomp_masked_fill(PS_DECOMP_ARGS)
{
    return b_where(b, in[1], b_value(b, a->a[0].f, n->type.dtype), in[0]);
}

/* ---- diagonals ---------------------------------------------------------------------- */

static ir_node *b_cat2(ps_builder *b, ir_node *x, ir_node *y, int64_t dim)
{
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_int(&at.a[0], dim);
    return ps_b_op(b, OP_cat, (ir_node *[]){x, y}, 2, &at);
}

static ir_node *b_slice_step(ps_builder *b, ir_node *x, int64_t dim, int64_t start, int64_t end,
                             int64_t step)
{
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], start);
    ir_attr_int(&at.a[2], end);
    ir_attr_int(&at.a[3], step);
    return b_op1(b, OP_slice, x, &at);
}

/* x with dims d1, d2 moved last (in that order). */
static ir_node *pair_last(ps_builder *b, ir_node *x, int d1, int d2)
{
    int64_t perm[TJ_MAX_DIMS];
    int nd = x->type.ndim, m = 0;
    for (int k = 0; k < nd; k++)
        if (k != d1 && k != d2)
            perm[m++] = k;
    perm[m++] = d1, perm[m] = d2;
    return ps_b_permute(b, x, perm);
}

/* The diagonal of the last two dims [n1, n2] is every (n2+1)-th element of
 * their flattened [n1 n2] from the offset's start. */
ir_node *ps_decomp_diagonal(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    int nd = x->type.ndim, d1 = ir_norm_dim(a->a[1].i[0], nd), d2 = ir_norm_dim(a->a[2].i[0], nd);
    int64_t off = a->a[0].i[0], n1 = x->type.shape[d1], n2 = x->type.shape[d2];
    int64_t len = n->type.shape[n->type.ndim - 1], shape[TJ_MAX_DIMS];
    ir_node *y = pair_last(b, x, d1, d2);
    for (int k = 0; k < nd - 2; k++)
        shape[k] = n->type.shape[k];
    shape[nd - 2] = n1 * n2;
    y = ps_b_reshape(b, y, shape, nd - 1);
    int64_t start = len == 0 ? 0 : off >= 0 ? off : -off * n2;
    return b_slice_step(b, y, nd - 2, start, len == 0 ? 0 : start + (len - 1) * (n2 + 1) + 1, n2 + 1);
}

/* Element (r, c) of the new [n, n] pair is x[..., r] (offset >= 0) or
 * x[..., c] (offset < 0) where c - r == offset, else 0. */
ir_node *ps_decomp_diag_embed(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    int nd = n->type.ndim, d1 = ir_norm_dim(a->a[1].i[0], nd), d2 = ir_norm_dim(a->a[2].i[0], nd);
    int64_t off = a->a[0].i[0], len = x->type.shape[x->type.ndim - 1], nn = n->type.shape[d1];
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_ints(&at.a[0], (int64_t[]){0, nn - len}, 2);
    ir_attr_float(&at.a[1], 0);
    ir_node *xp = b_op1(b, OP_pad, x, &at);
    xp = ps_b_unsqueeze(b, xp, off >= 0 ? -1 : -2);
    ir_node *rows = ps_b_unsqueeze(b, ps_b_arange(b, nn, TJ_I64), 1),
            *cols = ps_b_arange(b, nn, TJ_I64);
    ir_node *on = b_bin_s(b, OP_eq, b_sub(b, cols, rows), (double)off);
    ir_node *m = b_where(b, on, xp, b_value(b, 0, n->type.dtype));   /* [..., n, n] */
    if (d1 == nd - 2 && d2 == nd - 1)
        return m;
    /* move the pair from the end to (d1, d2) */
    int64_t perm[TJ_MAX_DIMS];
    int src = 0;
    for (int k = 0; k < nd; k++)
        perm[k] = k == d1 ? nd - 2 : k == d2 ? nd - 1 : src++;
    return ps_b_permute(b, m, perm);
}

ir_node *ps_decomp_one_hot(PS_DECOMP_ARGS)
{
    ir_node *hot = b_bin(b, OP_eq, ps_b_unsqueeze(b, in[0], -1),
                         ps_b_arange(b, a->a[0].i[0], TJ_I64));
    return ps_b_cast(b, hot, TJ_I64);
}

ir_node *ps_decomp_full_like(PS_DECOMP_ARGS)
{
    return b_where(b, ps_b_scalar(b, 1, TJ_BOOL), b_value(b, a->a[0].f, n->type.dtype), in[0]);
}

/* ---- repeats ------------------------------------------------------------------------ */

/* x (ndim <= r->n) repeated r->i[d] times along each dim d: a new dim of
 * size r before each repeated dim, expanded, merged. */
static ir_node *repeat(ps_builder *b, const ir_node *n, ir_node *x, const ir_attr *r)
{
    int lead = r->n - x->type.ndim, m = 0;
    int64_t split[2 * TJ_MAX_DIMS], big[2 * TJ_MAX_DIMS];
    for (int d = 0; d < r->n; d++) {
        int64_t s = d < lead ? 1 : x->type.shape[d - lead];
        if (r->i[d] != 1 && s != 1) {
            split[m] = 1, big[m++] = r->i[d];
            split[m] = s, big[m++] = s;
        } else {
            split[m] = s, big[m++] = s * r->i[d];
        }
    }
    ir_node *y = ps_b_reshape(b, x, split, m);
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_ints(&at.a[0], big, m);
    y = b_op1(b, OP_expand, y, &at);
    return ps_b_reshape(b, y, n->type.shape, n->type.ndim);
}

ir_node *ps_decomp_repeat(PS_DECOMP_ARGS) { return repeat(b, n, in[0], &a->a[0]); }

ir_node *ps_decomp_tile(PS_DECOMP_ARGS)
{
    ir_attr r;
    ir_tile_repeats(&a->a[0], in[0]->type.ndim, &r);
    return repeat(b, n, in[0], &r);
}

ir_node *ps_decomp_repeat_interleave(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    if (x->type.ndim == 0)
        x = ps_b_unsqueeze(b, x, 0);
    int d = ir_norm_dim(a->a[1].i[0], x->type.ndim);
    ir_node *y = ps_b_unsqueeze(b, x, d + 1);
    int64_t shape[TJ_MAX_DIMS];
    for (int k = 0; k <= x->type.ndim; k++)
        shape[k] = k <= d ? x->type.shape[k] : k == d + 1 ? a->a[0].i[0] : x->type.shape[k - 1];
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_ints(&at.a[0], shape, x->type.ndim + 1);
    return ps_b_reshape(b, b_op1(b, OP_expand, y, &at), n->type.shape, n->type.ndim);
}

/* Rolling a dim of size s by k: its last k elements, then the others. */
static ir_node *roll1(ps_builder *b, ir_node *x, int d, int64_t k)
{
    int64_t s = x->type.shape[d];
    if (s == 0)
        return x;
    k = ((k % s) + s) % s;
    if (k == 0)
        return x;
    return b_cat2(b, b_slice(b, x, d, s - k, s), b_slice(b, x, d, 0, s - k), d);
}

ir_node *ps_decomp_roll(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    const ir_attr *sh = &a->a[0], *dm = &a->a[1];
    if (dm->n == 0 || x->type.ndim == 0) {   /* the flattened tensor */
        int64_t numel = ir_type_numel(&x->type);
        ir_node *flat = roll1(b, ps_b_reshape(b, x, &numel, 1), 0, sh->i[0]);
        return ps_b_reshape(b, flat, n->type.shape, n->type.ndim);
    }
    for (int k = 0; k < dm->n; k++)
        x = roll1(b, x, ir_norm_dim(dm->i[k], x->type.ndim), sh->i[k]);
    return x;
}

/* ---- index-based -------------------------------------------------------------------- */

/* Negative indices count from the end of a dim of size s. */
static ir_node *wrap_index(ps_builder *b, ir_node *ix, int64_t s)
{
    return b_where(b, b_bin_s(b, OP_lt, ix, 0), b_add_s(b, ix, (double)s), ix);
}

ir_node *ps_decomp_take(PS_DECOMP_ARGS)
{
    ir_node *x = in[0], *ix = in[1];
    int64_t numel = ir_type_numel(&x->type), ni = ir_type_numel(&ix->type);
    ir_node *flat = ps_b_reshape(b, x, &numel, 1);
    ir_node *fi = wrap_index(b, ps_b_reshape(b, ix, &ni, 1), numel);
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_int(&at.a[0], 0);
    ir_node *r = ps_b_op(b, OP_index_select, (ir_node *[]){flat, fi}, 2, &at);
    return ps_b_reshape(b, r, n->type.shape, n->type.ndim);
}

ir_node *ps_decomp_take_along_dim(PS_DECOMP_ARGS)
{
    ir_node *x = in[0], *ix = in[1];
    int nd = x->type.ndim, d = ir_norm_dim(a->a[0].i[0], nd);
    if (nd == 0)
        return ps_b_op(b, OP_gather, (ir_node *[]){x, ix}, 2, a);
    /* both broadcast to the result's shape, x keeping its size along d */
    ir_type tx = x->type, ti = ix->type;
    tx.weak = ti.weak = false;
    for (int k = 0; k < nd; k++) {
        tx.shape[k] = k == d ? x->type.shape[k] : n->type.shape[k];
        ti.shape[k] = n->type.shape[k];
    }
    ir_node *xe = ps_b_like(b, x, &tx), *ie = ps_b_like(b, ix, &ti);
    if (!xe || !ie)
        return ps_b_fail(b, "cannot broadcast the operands here (a symbolic dim?)");
    return ps_b_op(b, OP_gather, (ir_node *[]){xe, ie}, 2, a);
}

/* Window w, element j of dim d is element w step + j: one index_select of
 * those positions, reshaped to [.., windows, size, ..] and the size dim
 * moved last. */
ir_node *ps_decomp_unfold(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    int nd = x->type.ndim, d = ir_norm_dim(a->a[0].i[0], nd);
    int64_t size = a->a[1].i[0], step = a->a[2].i[0], nw = n->type.shape[d], cnt = nw * size;
    ir_node *pos = b_add(b,
                         ps_b_unsqueeze(b, b_mul_s(b, ps_b_arange(b, nw, TJ_I64), (double)step), 1),
                         ps_b_arange(b, size, TJ_I64));
    pos = ps_b_reshape(b, pos, &cnt, 1);
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_int(&at.a[0], d);
    ir_node *sel = ps_b_op(b, OP_index_select, (ir_node *[]){x, pos}, 2, &at);
    int64_t shape[TJ_MAX_DIMS], perm[TJ_MAX_DIMS];
    for (int k = 0, m = 0; k < nd; k++) {
        shape[m++] = k == d ? nw : x->type.shape[k];
        if (k == d)
            shape[m++] = size;
    }
    sel = ps_b_reshape(b, sel, shape, nd + 1);
    for (int k = 0, m = 0; k <= nd; k++)
        if (k != d + 1)
            perm[m++] = k;
    perm[nd] = d + 1;
    return ps_b_permute(b, sel, perm);
}

/* A [s] mask of the positions index names along dim, shaped to broadcast. */
ir_node *ps_decomp_index_fill(PS_DECOMP_ARGS)
{
    ir_node *x = in[0], *ix = in[1];
    int nd = x->type.ndim, d = ir_norm_dim(a->a[0].i[0], nd ? nd : 1);
    int64_t s = nd ? x->type.shape[d] : 1, ni = ir_type_numel(&ix->type);
    ir_node *fi = wrap_index(b, ps_b_reshape(b, ix, &ni, 1), s);
    ir_node *hit = b_bin(b, OP_eq, ps_b_unsqueeze(b, ps_b_arange(b, s, TJ_I64), 1),
                         ps_b_unsqueeze(b, fi, 0));
    ir_node *mask = ps_b_reduce(b, OP_any, hit, (int64_t[]){1}, 1, false);   /* [s] */
    if (nd == 0)
        mask = ps_b_reshape(b, mask, NULL, 0);
    else {
        int64_t shape[TJ_MAX_DIMS];
        for (int k = 0; k < nd; k++)
            shape[k] = k == d ? s : 1;
        mask = ps_b_reshape(b, mask, shape, nd);
    }
    return b_where(b, mask, b_value(b, a->a[1].f, n->type.dtype), x);
}

/* ---- creation ----------------------------------------------------------------------- */

ir_node *ps_decomp_eye(PS_DECOMP_ARGS)
{
    int64_t rows = n->type.shape[0], cols = n->type.shape[1];
    ir_node *on = b_bin(b, OP_eq, ps_b_unsqueeze(b, ps_b_arange(b, rows, TJ_I64), 1),
                        ps_b_arange(b, cols, TJ_I64));
    return ps_b_cast(b, on, n->type.dtype);
}

/* torch.linspace: start + i step for the first half, end - (steps-1-i) step
 * for the rest (so both ends are exact), in f64, rounded once. */
static ir_node *linspace(ps_builder *b, double start, double end, int64_t steps)
{
    ir_node *i = ps_b_cast(b, ps_b_arange(b, steps, TJ_I64), TJ_F64);
    double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0;
    ir_node *lo = b_add_s(b, b_mul_s(b, i, step), start);
    ir_node *hi = b_rsub_s(b, end, b_mul_s(b, b_rsub_s(b, (double)(steps - 1), i), step));
    int64_t half = steps == 1 ? 1 : steps / 2;   /* one step is start alone */
    return b_where(b, b_bin_s(b, OP_lt, i, (double)half), lo, hi);
}

ir_node *ps_decomp_linspace(PS_DECOMP_ARGS)
{
    return ps_b_cast(b, linspace(b, a->a[0].f, a->a[1].f, a->a[2].i[0]), n->type.dtype);
}

ir_node *ps_decomp_logspace(PS_DECOMP_ARGS)
{
    ir_node *e = linspace(b, a->a[0].f, a->a[1].f, a->a[2].i[0]);
    ir_node *base = ps_b_cast(b, ps_b_scalar(b, a->a[3].f, TJ_F64), TJ_F64);
    return ps_b_cast(b, b_bin(b, OP_pow, base, e), n->type.dtype);
}

/* ---- scans and sorts ------------------------------------------------------------------ */

static ir_node *b_dim_op(ps_builder *b, ir_op op, ir_node *const *in, int nin, int64_t dim)
{
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_int(&at.a[0], dim);
    return ps_b_op(b, op, in, nin, &at);
}

static ir_node *b_argsort(ps_builder *b, ir_node *x, int64_t dim, bool desc)
{
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], desc);
    return b_op1(b, OP_argsort, x, &at);
}

static ir_node *gather_at(ps_builder *b, ir_node *x, ir_node *ix, int64_t dim)
{
    return b_dim_op(b, OP_gather, (ir_node *[]){x, ix}, 2, dim);
}

ir_node *ps_decomp_cummax(PS_DECOMP_ARGS)
{
    int64_t d = a->a[0].i[0];
    return gather_at(b, in[0], b_dim_op(b, OP_cummax_indices, in, 1, d), d);
}

ir_node *ps_decomp_cummin(PS_DECOMP_ARGS)
{
    int64_t d = a->a[0].i[0];
    return gather_at(b, in[0], b_dim_op(b, OP_cummin_indices, in, 1, d), d);
}

ir_node *ps_decomp_sort(PS_DECOMP_ARGS)
{
    int64_t d = a->a[0].i[0];
    return gather_at(b, in[0], b_argsort(b, in[0], d, a->a[1].i[0]), d);
}

/* The first k of a sort: the positions [from, from + k) of the sorted line. */
static ir_node *sorted_part(ps_builder *b, ir_node *x, int64_t dim, bool desc, int64_t from,
                            int64_t k)
{
    if (x->type.ndim == 0)
        return x;
    ir_node *ix = b_slice(b, b_argsort(b, x, dim, desc), dim, from, from + k);
    return gather_at(b, x, ix, dim);
}

ir_node *ps_decomp_topk(PS_DECOMP_ARGS)
{
    return sorted_part(b, in[0], a->a[1].i[0], a->a[2].i[0], 0, a->a[0].i[0]);
}

static ir_node *drop_dim(ps_builder *b, const ir_node *n, ir_node *v)
{
    return ps_b_reshape(b, v, n->type.shape, n->type.ndim);
}

ir_node *ps_decomp_kthvalue(PS_DECOMP_ARGS)
{
    return drop_dim(b, n, sorted_part(b, in[0], a->a[1].i[0], false, a->a[0].i[0] - 1, 1));
}

/* The lower median, (n+1)/2-th smallest; NaN where the line has one (the
 * sort puts NaN last, so that value alone would not show it). */
ir_node *ps_decomp_median(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    if (x->type.ndim == 0)
        return x;
    int64_t d = ir_norm_dim(a->a[0].i[0], x->type.ndim), len = x->type.shape[d];
    ir_node *v = sorted_part(b, x, d, false, len > 0 ? (len - 1) / 2 : 0, 1);
    if (ir_dtype_is_float(x->type.dtype)) {
        ir_node *nan = ps_b_reduce(b, OP_any, b_un(b, OP_isnan, x), &d, 1, true);
        v = b_where(b, nan, b_value(b, NAN, x->type.dtype), v);
    }
    return drop_dim(b, n, v);
}

/* ---- scatters ----------------------------------------------------------------------- */

/* index_add/index_copy: the 1-D index along dim expanded to source's shape
 * is scatter's index. */
static ir_node *index_scatter(ps_builder *b, ir_op op, ir_node *x, ir_node *ix, ir_node *src,
                              int64_t dim)
{
    int nd = x->type.ndim;
    if (nd == 0)
        return ps_b_op(b, op, (ir_node *[]){x, ix, src}, 3, NULL);
    int d = ir_norm_dim(dim, nd);
    int64_t ni = ir_type_numel(&ix->type), shape[TJ_MAX_DIMS];
    for (int k = 0; k < nd; k++)
        shape[k] = k == d ? ni : 1;
    ir_node *i = ps_b_reshape(b, ix, shape, nd);   /* negative indices are errors, as in torch */
    if (src->type.ndim != nd)   /* a 0-dim source of a 1-D input */
        src = ps_b_reshape(b, src, shape, nd);
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_ints(&at.a[0], src->type.shape, nd);
    i = b_op1(b, OP_expand, i, &at);
    return b_dim_op(b, op, (ir_node *[]){x, i, src}, 3, d);
}

ir_node *ps_decomp_index_add(PS_DECOMP_ARGS)
{
    ir_node *src = in[2];
    if (a->a[1].f != 1)
        src = ps_b_cast(b, b_mul_s(b, src, a->a[1].f), n->type.dtype);
    return index_scatter(b, OP_scatter_add, in[0], in[1], src, a->a[0].i[0]);
}

ir_node *ps_decomp_index_copy(PS_DECOMP_ARGS)
{
    return index_scatter(b, OP_scatter, in[0], in[1], in[2], a->a[0].i[0]);
}

/* x[i0, .., i(m-1)] = values: each index wrapped and weighted by its dim's
 * stride among the indexed dims, summed (broadcast), times the size R of
 * the dims not indexed, plus iota(R): flat positions into x viewed as 1-D,
 * one scatter (scatter_add when accumulating). */
ir_node *ps_decomp_index_put(PS_DECOMP_ARGS)
{
    ir_node *x = in[0], *v = in[1], *flat = NULL;
    int m = n->nin - 2, nd = x->type.ndim;
    int64_t rest = 1, stride = 1, numel = ir_type_numel(&x->type);
    for (int k = m; k < nd; k++)
        rest *= x->type.shape[k];
    for (int k = m - 1; k >= 0; k--) {
        ir_node *t = b_mul_s(b, wrap_index(b, in[2 + k], x->type.shape[k]), (double)stride);
        flat = flat ? b_add(b, flat, t) : t;
        stride *= x->type.shape[k];
    }
    flat = b_add(b, ps_b_unsqueeze(b, b_mul_s(b, flat, (double)rest), -1),
                 ps_b_arange(b, rest, TJ_I64));
    int64_t want[TJ_MAX_DIMS], cnt;
    int wn = flat ? flat->type.ndim - 1 : 0;
    for (int k = 0; k < wn; k++)
        want[k] = flat->type.shape[k];
    for (int k = m; k < nd; k++)
        want[wn++] = x->type.shape[k];
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_ints(&at.a[0], want, wn);
    v = b_op1(b, OP_expand, v, &at);
    cnt = flat ? ir_type_numel(&flat->type) : 0;
    ir_node *r = b_dim_op(b, a->a[0].i[0] ? OP_scatter_add : OP_scatter,
                          (ir_node *[]){ps_b_reshape(b, x, &numel, 1), ps_b_reshape(b, flat, &cnt, 1),
                                        ps_b_reshape(b, v, &cnt, 1)},
                          3, 0);
    return ps_b_reshape(b, r, n->type.shape, n->type.ndim);
}

/* ---- searchsorted and bucketize ------------------------------------------------------ */

/* The count of sequence entries below each value (<= with right): a
 * comparison of every value with its row, summed; a NaN value sorts after
 * everything, as in torch. */
static ir_node *search(ps_builder *b, const ir_node *n, ir_node *seq, ir_node *v, bool right)
{
    int64_t len = seq->type.shape[seq->type.ndim - 1], last = -1;
    ir_node *vv = ps_b_unsqueeze(b, v, -1);   /* [..., m, 1] */
    ir_node *ss = seq->type.ndim > 1 ? ps_b_unsqueeze(b, seq, -2) : seq;   /* [..., 1, len] */
    ir_node *below = b_bin(b, right ? OP_le : OP_lt, ss, vv);
    ir_node *cnt = ps_b_reduce(b, OP_sum, ps_b_cast(b, below, TJ_I64), &last, 1, false);
    if (ir_dtype_is_float(v->type.dtype))
        cnt = b_where(b, b_un(b, OP_isnan, v), ps_b_scalar(b, (double)len, TJ_I64), cnt);
    return ps_b_cast(b, cnt, n->type.dtype);
}

ir_node *ps_decomp_searchsorted(PS_DECOMP_ARGS) { return search(b, n, in[0], in[1], a->a[0].i[0]); }
ir_node *ps_decomp_bucketize(PS_DECOMP_ARGS) { return search(b, n, in[1], in[0], a->a[0].i[0]); }

/* ---- dtype limits --------------------------------------------------------------------- */

/* The dtype's extreme finite value. Every limit but i64's maximum is exact in
 * a double; that one is the bitwise not of i64's minimum, -2^63. */
static ir_node *limit(ps_builder *b, tj_dtype dt, bool max)
{
    double v;
    switch (dt) {
    case TJ_F32: v = 0x1.fffffep127; break;
    case TJ_F64: v = 0x1.fffffffffffffp1023; break;
    case TJ_U8: v = max ? 255 : 0; break;
    case TJ_I8: v = max ? 127 : -128; break;
    case TJ_I16: v = max ? 32767 : -32768; break;
    case TJ_I32: v = max ? 2147483647.0 : -2147483648.0; break;
    case TJ_I64: {
        ir_node *lo = ps_b_cast(b, ps_b_scalar(b, -0x1p63, TJ_F64), TJ_I64);
        return max ? b_un(b, OP_bitwise_not, lo) : lo;
    }
    default: return ps_b_fail(b, "no limit for dtype %s", tj_dtype_name(dt));
    }
    if (ir_dtype_is_float(dt) && !max)
        v = -v;
    return ps_b_cast(b, ps_b_scalar(b, v, TJ_F64), dt);
}

ir_node *ps_decomp_maximum_value(PS_DECOMP_ARGS) { return limit(b, n->type.dtype, true); }
ir_node *ps_decomp_minimum_value(PS_DECOMP_ARGS) { return limit(b, n->type.dtype, false); }
