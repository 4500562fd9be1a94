/* build.c - the node builder of the passes (see build.h): adds nodes through
 * ir_graph_add, remembers the first failure, and makes constants, casts and
 * views with the attributes their schemas expect. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "build.h"

void ps_b_init(ps_builder *b, ir_graph *g)
{
    b->g = g;
    b->file = NULL;
    b->line = 0;
    b->failed = false;
    b->err[0] = '\0';
}

ir_node *ps_b_fail(ps_builder *b, const char *fmt, ...)
{
    if (b->failed)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
    b->failed = true;
    return NULL;
}

void ps_b_clear(ps_builder *b)
{
    b->failed = false;
    b->err[0] = '\0';
}

ir_node *ps_b_op(ps_builder *b, ir_op op, ir_node *const *in, int nin, const ir_attrs *a)
{
    if (b->failed)
        return NULL;
    for (int k = 0; k < nin && k < ir_ops[op].nmin; k++)
        if (!in[k])
            return ps_b_fail(b, "%s: input %d is missing", ir_ops[op].name, k);
    ir_node *n = ir_graph_add(b->g, op, in, nin, a);
    if (!n)
        return ps_b_fail(b, "%s", ir_graph_error(b->g));
    if (!n->file && b->file) {
        n->file = b->file;
        n->line = b->line;
    }
    return n;
}

ir_node *ps_b_scalar(ps_builder *b, double v, tj_dtype dt)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_float(&a.a[0], v);
    ir_attr_int(&a.a[1], dt);
    return ps_b_op(b, OP_scalar, NULL, 0, &a);
}

ir_node *ps_b_number(ps_builder *b, double v, const ir_node *x)
{
    return ps_b_scalar(b, v, x ? ir_scalar_dtype(v, x->type.dtype) : TJ_F64);
}

static void dims_attr(ir_attr *at, const int64_t *dims, int n)
{
    ir_attr_ints(at, dims, n);
}

ir_node *ps_b_reduce(ps_builder *b, ir_op op, ir_node *x, const int64_t *dims, int n,
                     bool keepdim)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    dims_attr(&a.a[0], dims, n);
    ir_attr_int(&a.a[ir_ops[op].nattrs - 1], keepdim);
    return ps_b_op(b, op, &x, 1, &a);
}

ir_node *ps_b_var(ps_builder *b, ir_node *x, const int64_t *dims, int n, int64_t correction,
                  bool keepdim)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    dims_attr(&a.a[0], dims, n);
    ir_attr_int(&a.a[1], correction);
    ir_attr_int(&a.a[2], keepdim);
    return ps_b_op(b, OP_var, &x, 1, &a);
}

ir_node *ps_b_permute(ps_builder *b, ir_node *x, const int64_t *perm)
{
    if (!x)
        return ps_b_op(b, OP_permute, &x, 1, NULL);
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_ints(&a.a[0], perm, x->type.ndim);
    return ps_b_op(b, OP_permute, &x, 1, &a);
}

ir_node *ps_b_transpose_last2(ps_builder *b, ir_node *x)
{
    if (!x)
        return ps_b_op(b, OP_permute, &x, 1, NULL);
    int64_t perm[TJ_MAX_DIMS];
    int n = x->type.ndim;
    for (int d = 0; d < n; d++)
        perm[d] = d;
    if (n >= 2) {
        perm[n - 2] = n - 1;
        perm[n - 1] = n - 2;
    }
    return ps_b_permute(b, x, perm);
}

ir_node *ps_b_unsqueeze(ps_builder *b, ir_node *x, int64_t dim)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_int(&a.a[0], dim);
    return ps_b_op(b, OP_unsqueeze, &x, 1, &a);
}

ir_node *ps_b_squeeze(ps_builder *b, ir_node *x, const int64_t *dims, int n)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_ints(&a.a[0], dims, n);
    return ps_b_op(b, OP_squeeze, &x, 1, &a);
}

ir_node *ps_b_reshape(ps_builder *b, ir_node *x, const int64_t *shape, int n)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_ints(&a.a[0], shape, n);
    /* A target size that is x's one symbolic dim is written -1 (the rule
     * infers it as that symbol; a symbol cannot be an attribute's size). */
    int xs = -1, ts = -1, nx = 0, nt = 0;
    for (int k = 0; x && k < x->type.ndim; k++)
        if (IR_IS_SYM(x->type.shape[k]))
            nx++, xs = k;
    for (int k = 0; k < n && k < IR_MAX_LIST; k++)
        if (IR_IS_SYM(shape[k]) || shape[k] == -1)
            nt++, ts = k;
    if (nx == 1 && nt == 1 && shape[ts] == x->type.shape[xs])
        a.a[0].i[ts] = -1;
    return ps_b_op(b, OP_reshape, &x, 1, &a);
}

ir_node *ps_b_along(ps_builder *b, ir_node *v, int d, int nd)
{
    int n = nd - d;
    if (!v || n <= 1)
        return v;
    int64_t shape[TJ_MAX_DIMS] = {v->type.shape[0]};
    for (int k = 1; k < n; k++)
        shape[k] = 1;
    return ps_b_reshape(b, v, shape, n);
}

ir_node *ps_b_arange(ps_builder *b, int64_t n, tj_dtype dt)
{
    if (IR_IS_SYM(n))
        return ps_b_fail(b, "arange needs a static size where it has a symbolic one");
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_float(&a.a[0], 0);
    ir_attr_float(&a.a[1], (double)n);
    ir_attr_float(&a.a[2], 1);
    ir_attr_int(&a.a[3], dt);
    return ps_b_op(b, OP_arange, NULL, 0, &a);
}

ir_node *ps_b_arange_of(ps_builder *b, ir_node *x, int d)
{
    if (!x)
        return NULL;
    int64_t n = x->type.shape[d];
    if (!IR_IS_SYM(n))
        return ps_b_arange(b, n, TJ_I64);
    ir_node *line = x;
    for (int k = 0; k < x->type.ndim && line; k++) {
        if (k == d || x->type.shape[k] == 1)
            continue;
        if (x->type.shape[k] == 0)
            return ps_b_fail(b, "arange along a symbolic dim of an empty tensor");
        ir_attrs a;
        memset(&a, 0, sizeof a);
        ir_attr_int(&a.a[0], k);
        ir_attr_int(&a.a[1], 0);
        ir_attr_int(&a.a[2], 1);
        ir_attr_int(&a.a[3], 1);
        line = ps_b_op(b, OP_slice, &line, 1, &a);
    }
    line = ps_b_reshape(b, line, (int64_t[]){-1}, 1);   /* [1,..,n,..,1] to [n] */
    ir_node *one = ps_b_scalar(b, 1, TJ_I64), *ones = b_where(b, line, one, one);
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_int(&a.a[0], 0);
    return b_add_s(b, ps_b_op(b, OP_cumsum, &ones, 1, &a), -1);
}

ir_node *ps_b_index_select(ps_builder *b, ir_node *x, int64_t dim, ir_node *ix)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_int(&a.a[0], dim);
    return ps_b_op(b, OP_index_select, (ir_node *[]){x, ix}, 2, &a);
}

ir_node *ps_b_cast(ps_builder *b, ir_node *x, tj_dtype dt)
{
    if (x && x->type.dtype == dt && !x->type.weak)
        return x;
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_int(&a.a[0], dt);
    return ps_b_op(b, OP_cast, &x, 1, &a);
}

ir_node *ps_b_float(ps_builder *b, ir_node *x)
{
    if (x && ir_dtype_is_float(x->type.dtype))
        return x;
    return ps_b_cast(b, x, TJ_F32);
}

/* The expand attribute that takes shape `have` to `want`, or false. */
static bool expand_shape(const ir_type *have, const ir_type *want, int64_t *shape)
{
    int lead = want->ndim - have->ndim;
    if (lead < 0)
        return false;
    for (int d = 0; d < want->ndim; d++) {
        int64_t w = want->shape[d], h = d >= lead ? have->shape[d - lead] : 1;
        if (d >= lead && w == h)
            shape[d] = -1;   /* keep (symbolic dims included) */
        else if (h == 1 && !IR_IS_SYM(w))
            shape[d] = w;
        else
            return false;
    }
    return true;
}

ir_node *ps_b_like(ps_builder *b, ir_node *x, const ir_type *t)
{
    if (!x || b->failed)
        return NULL;
    if (ir_type_same(&x->type, t))
        return x;
    if (t->weak)
        return NULL;   /* only a weak value can stand for a weak one */
    bool same_shape = ir_shape_equal(&x->type, t);
    int64_t shape[TJ_MAX_DIMS];
    if (!same_shape && !expand_shape(&x->type, t, shape))
        return NULL;
    ir_node *y = ps_b_cast(b, x, t->dtype);
    if (!same_shape) {
        ir_attrs a;
        memset(&a, 0, sizeof a);
        ir_attr_ints(&a.a[0], shape, t->ndim);
        y = ps_b_op(b, OP_expand, &y, 1, &a);
    }
    return y && ir_type_same(&y->type, t) ? y : NULL;
}

ir_node *ps_b_const(ps_builder *b, double v, const ir_type *t)
{
    if (t->weak) {
        if (t->ndim != 0 || (t->dtype != TJ_I64 && t->dtype != TJ_F64 && t->dtype != TJ_BOOL))
            return NULL;
        return ps_b_scalar(b, v, t->dtype);
    }
    for (int d = 0; d < t->ndim; d++)
        if (IR_IS_SYM(t->shape[d]))
            return NULL;
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_ints(&a.a[0], t->shape, t->ndim);
    ir_attr_float(&a.a[1], v);
    ir_attr_int(&a.a[2], t->dtype);
    return ps_b_op(b, OP_full, NULL, 0, &a);
}
