/* vjp.c - the table of gradient rules (generated from ops.def) and the
 * helpers the rules share. The rules themselves: vjp_pointwise.c (pointwise
 * ops), vjp_shape.c (reductions, views, data movement), vjp_nn.c
 * (contractions and network ops). */
#include <string.h>

#include "autograd.h"

const ag_rule *const ag_rules[IR_NUM_OPS] = {
#define OP(name, kind, nmin, nmax, decomp, attrs) [OP_##name] = &ag_rule_##name,
#include "../ir/ops.def"
};

/* DCOMP rows: autograd records their prims (apply_decomp.c), never them. */
#define AG_DCOMP_PRIM(name)
#define AG_DCOMP_COMP(name)
#define AG_DCOMP_DCOMP(name) AG_NONDIFF(name, "differentiated through its decomposition")
#define OP(name, kind, nmin, nmax, decomp, attrs) AG_DCOMP_##decomp(name)
#include "../ir/ops.def"

/* Ops with no inputs, or whose results are integer or bool. */
AG_NONDIFF(isnan, "bool result")
AG_NONDIFF(isinf, "bool result")
AG_NONDIFF(isfinite, "bool result")
AG_NONDIFF(logical_not, "bool result")
AG_NONDIFF(bitwise_not, "integer result")
AG_NONDIFF(eq, "bool result")
AG_NONDIFF(ne, "bool result")
AG_NONDIFF(lt, "bool result")
AG_NONDIFF(le, "bool result")
AG_NONDIFF(gt, "bool result")
AG_NONDIFF(ge, "bool result")
AG_NONDIFF(logical_and, "bool result")
AG_NONDIFF(logical_or, "bool result")
AG_NONDIFF(logical_xor, "bool result")
AG_NONDIFF(bitwise_and, "integer result")
AG_NONDIFF(bitwise_or, "integer result")
AG_NONDIFF(bitwise_xor, "integer result")
AG_NONDIFF(all, "bool result")
AG_NONDIFF(any, "bool result")
AG_NONDIFF(argmax, "integer result")
AG_NONDIFF(argmin, "integer result")
AG_NONDIFF(xor_sum, "integer or bool result")   /* remaining prims (issue 11) */
AG_NONDIFF(signbit, "bool result")
AG_NONDIFF(gcd, "integer result")
AG_NONDIFF(bitwise_left_shift, "integer result")
AG_NONDIFF(bitwise_right_shift, "integer result")
AG_NONDIFF(nextafter, "a step to the next float; PyTorch has no derivative for it either")
AG_NONDIFF(scalar, "no inputs")
AG_NONDIFF(full, "no inputs")
AG_NONDIFF(arange, "no inputs")
AG_NONDIFF(rand, "no inputs")
AG_NONDIFF(randn, "no inputs")

tj_tensor *ag_const(const tj_tensor *t, double v) { return tj_scalar(t->dtype, v); }

tj_tensor *ag_masked(tj_tensor *g, tj_tensor *mask)
{
    return g && mask ? tj_where(mask, g, ag_const(g, 0)) : NULL;
}

/* x's type as the graph has it in a trace (its symbols), else its own. */
static ir_type type_of(const tj_tensor *x)
{
    ir_type t;
    fe_trace_type(x, &t);
    return t;
}

tj_tensor *ag_sum_to(tj_tensor *g, const tj_tensor *x)
{
    if (!g)
        return NULL;
    int lead = g->ndim - x->ndim;
    if (lead > 0) {
        int dims[TJ_MAX_DIMS];
        for (int d = 0; d < lead; d++)
            dims[d] = d;
        if (!(g = tj_sum(g, dims, lead, false)))
            return NULL;
    }
    int dims[TJ_MAX_DIMS], n = 0;
    for (int d = 0; d < x->ndim && d < g->ndim; d++)   /* a symbolic dim is never 1 */
        if (x->shape[d] == 1 && g->shape[d] != 1)
            dims[n++] = d;
    if (n && !(g = tj_sum(g, dims, n, true)))
        return NULL;
    if (g->ndim != x->ndim || memcmp(g->shape, x->shape, (size_t)x->ndim * sizeof *x->shape))
        g = ag_expand_to(g, x);   /* a gradient that was broadcast itself */
    return g;
}

tj_tensor *ag_expand_to(tj_tensor *g, const tj_tensor *x)
{
    if (!g)
        return NULL;
    ir_type tg = type_of(g), tx = type_of(x);
    int64_t shape[TJ_MAX_DIMS];
    int lead = tx.ndim - tg.ndim;
    for (int d = 0; d < tx.ndim; d++) {
        int64_t have = d >= lead ? tg.shape[d - lead] : 1;
        tj_tensor *z = NULL;
        if (have == tx.shape[d] && d >= lead)
            shape[d] = -1;   /* kept: g has it (a symbol too) */
        else if (!IR_IS_SYM(tx.shape[d]))
            shape[d] = tx.shape[d];
        else if ((z = fe_sym_full(tx.shape[d], tx.ndim, d, 0.0, g->dtype))) {
            /* onto a symbolic dim: expand cannot name it, a broadcast can */
            if (!(g = tj_add(g, z)))
                return NULL;
            shape[d] = -1;
            tg = type_of(g);   /* x's rank now */
            lead = 0;
        } else {   /* the example's size (a checked trace then drops the graph) */
            fe_trace_shape_read(x);
            shape[d] = x->shape[d];
        }
    }
    return tj_expand(g, tx.ndim, shape);
}

tj_tensor *ag_zeros_of(const tj_tensor *x, tj_dtype dt) { return ag_expand_to(tj_scalar(dt, 0), x); }

/* shape (of t's traced type, ndim dims) for tj_reshape: its one symbolic
 * dim as -1, which stands for it; else the example's sizes, ex (a reshape
 * cannot name two). */
static const int64_t *reshape_shape(int64_t *shape, int ndim, const int64_t *ex)
{
    int nsym = 0;
    for (int d = 0; d < ndim; d++)
        if (IR_IS_SYM(shape[d])) {
            shape[d] = -1;
            nsym++;
        }
    return nsym <= 1 ? shape : ex;
}

tj_tensor *ag_reshape_to(tj_tensor *g, const tj_tensor *x)
{
    ir_type tx = type_of(x);
    return tj_reshape(g, x->ndim, reshape_shape(tx.shape, tx.ndim, x->shape));
}

tj_tensor *ag_unreduce(tj_tensor *g, const ir_attr *dims, bool keepdim, const tj_tensor *x)
{
    uint32_t mask = ir_dims_of(dims, x->ndim);
    if (!keepdim)
        for (int d = 0; d < x->ndim && g; d++)
            if (mask >> d & 1)
                g = tj_unsqueeze(g, d);
    return ag_expand_to(g, x);
}

tj_tensor *ag_pad_dim(tj_tensor *g, int dim, int64_t before, int64_t after)
{
    if (!g || (before == 0 && after == 0))
        return g;
    int64_t pads[2 * TJ_MAX_DIMS] = {0};
    int npairs = g->ndim - dim;
    pads[2 * (npairs - 1)] = before;
    pads[2 * (npairs - 1) + 1] = after;
    return tj_pad(g, pads, npairs, 0.0);
}

tj_tensor *ag_interleave(tj_tensor *g, int dim, int64_t step)
{
    int64_t n = g ? g->shape[dim] : 0;
    if (!g || step == 1 || n == 0)
        return g;
    /* [n] -> [n,1] -> [n,step] (zeros after each) -> [n*step] -> the first (n-1)*step+1 */
    ir_type tg = type_of(g);
    int64_t ex[TJ_MAX_DIMS];
    memcpy(ex, g->shape, sizeof ex);
    ex[dim] = n * step;
    /* the other dims as traced; a symbolic dim itself times step is no
     * symbol plus a count: the example's sizes */
    bool sym = IR_IS_SYM(tg.shape[dim]);
    tg.shape[dim] = n * step;
    int ndim = g->ndim;
    g = ag_pad_dim(tj_unsqueeze(g, dim + 1), dim + 1, 0, step - 1);
    const int64_t *to = sym ? ex : reshape_shape(tg.shape, ndim, ex);
    return tj_slice(tj_reshape(g, ndim, to), dim, 0, (n - 1) * step + 1, 1);
}

/* a - b for dims (static, or a symbol plus a count): false where that is
 * neither (two symbols, or a negative count). */
static bool dim_sub(int64_t a, int64_t b, int64_t *out)
{
    if (!IR_IS_SYM(b))
        return ir_dim_add(a, -b, out);
    if (!IR_IS_SYM(a) || ir_sym_index(a) != ir_sym_index(b))
        return false;
    *out = ir_sym_delta(a) - ir_sym_delta(b);
    return *out >= 0;
}

/* Zeros of g's shape but size n (a symbol plus a count) along dim, from an argument's size
 * (fe_sym_full); NULL where none has it. */
static tj_tensor *zeros_along(tj_tensor *g, int dim, int64_t n)
{
    tj_tensor *z = fe_sym_full(n, g->ndim, dim, 0.0, g->dtype);
    return z ? tj_add(tj_zeros_like(tj_narrow(g, dim, 0, 1)), z) : NULL;
}

tj_tensor *ag_unslice_of(tj_tensor *g, const tj_tensor *x, int dim, int64_t start, int64_t step)
{
    ir_type tx = type_of(x), tg = g ? type_of(g) : tx;
    int64_t len = tx.shape[dim], glen = tg.shape[dim], before, rest, after;
    if (!g || !IR_IS_SYM(len) || step != 1 || glen == 0 ||
        !(start >= 0 ? (before = start, true) : ir_dim_add(len, start, &before)) ||
        !dim_sub(len, before, &rest) || !dim_sub(rest, glen, &after))
        return ag_unslice(g, dim, ir_slice_bound(start, x->shape[dim]), step, x->shape[dim]);
    /* over a symbolic dim: counts padded, symbolic sizes of zeros put beside */
    tj_tensor *r = ag_pad_dim(g, dim, IR_IS_SYM(before) ? 0 : before, IR_IS_SYM(after) ? 0 : after);
    if (r && IR_IS_SYM(before))
        r = tj_cat((tj_tensor *[]){zeros_along(g, dim, before), r}, 2, dim);
    if (r && IR_IS_SYM(after))
        r = tj_cat((tj_tensor *[]){r, zeros_along(g, dim, after)}, 2, dim);
    return r;
}

tj_tensor *ag_unslice(tj_tensor *g, int dim, int64_t start, int64_t step, int64_t len)
{
    if (g && g->shape[dim] == 0) {
        int64_t shape[TJ_MAX_DIMS];
        memcpy(shape, g->shape, sizeof shape);
        shape[dim] = len;
        return tj_zeros(g->dtype, g->ndim, shape);
    }
    g = ag_interleave(g, dim, step);
    return g ? ag_pad_dim(g, dim, start, len - start - g->shape[dim]) : NULL;
}
