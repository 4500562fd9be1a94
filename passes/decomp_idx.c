/* decomp_idx.c - the decompositions of the indexing, scan and shape rows of
 * ops.def (its "indexing, scans and shapes" section). Most are XOP rows:
 * the eager API runs these same decompositions op by op
 * (frontend/expand.c), so what is written here is the op's one definition.
 * They use views (slice, permute, reshape, expand), where over iota masks,
 * gather and index_select, and the scan/sort/scatter prims of that section. */
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

/* arange(0, n) of i64; n must be static. */
static ir_node *b_iota(ps_builder *b, int64_t n)
{
    if (IR_IS_SYM(n))
        return ps_b_fail(b, "needs a static size where it has a symbolic one");
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_float(&at.a[0], 0);
    ir_attr_float(&at.a[1], (double)n);
    ir_attr_float(&at.a[2], 1);
    ir_attr_int(&at.a[3], TJ_I64);
    return ps_b_op(b, OP_arange, NULL, 0, &at);
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
    ir_node *rows = ps_b_unsqueeze(b, b_iota(b, x->type.shape[nd - 2]), 1);
    ir_node *cols = b_iota(b, x->type.shape[nd - 1]);
    ir_node *keep = b_bin_s(b, cmp, b_sub(b, cols, rows), (double)k);
    return b_where(b, keep, x, b_value(b, 0, n->type.dtype));
}

ir_node *ps_decomp_tril(PS_DECOMP_ARGS) { return triangle(b, n, in[0], a->a[0].i[0], OP_le); }
ir_node *ps_decomp_triu(PS_DECOMP_ARGS) { return triangle(b, n, in[0], a->a[0].i[0], OP_ge); }

ir_node *ps_decomp_masked_fill(PS_DECOMP_ARGS)
{
    return b_where(b, in[1], b_value(b, a->a[0].f, n->type.dtype), in[0]);
}
