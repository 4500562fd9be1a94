/* split.c - the split_reductions pass: a reduction with few results and a long
 * reduced extent becomes two, so its kernel has rows to spread over threads.
 *
 * A compiled row-reduction kernel splits its rows across the thread pool; a
 * reduction to one value (sum of a whole tensor, a loss) has one row, so it
 * ran on one core. This pass rewrites, for sum and prod over the innermost
 * dims of an f32 or f64 tensor with a static shape, and amax, amin, all and
 * any of any dtype (exact),
 *
 *   r = sum(x, innermost dims)          [R results, each over L elements]
 *   ->
 *   p = sum(reshape(x, [outer..., P, L/P]), dims=[-1])   [R*P partials]
 *   r = sum(p, dims=[-1])  (reshaped to r's type when keepdim)
 *
 * when R < SPLIT_MAX_ROWS and L >= SPLIT_MIN_LEN, with P the largest of 64,
 * 32, ..., 2 that divides L and leaves chunks of at least SPLIT_MIN_CHUNK.
 * The reshape is a view, so the fused kernel of the first reduction reads x
 * (and computes its producers) in place; the second is a small kernel over
 * R*P values. Float sums are then added in another order, as any vectorized
 * reduction already does (compiled kernels reduce with reassoc); amax and
 * amin are exact. var is not split (it would need Welford's combination).
 */
#include <stdio.h>
#include <stdlib.h>

#include "rewrite.h"

enum {
    SPLIT_MAX_ROWS = 16,          /* fewer results than this: too few rows to share */
    SPLIT_MIN_LEN = 1 << 16,      /* shorter rows take microseconds on one core */
    SPLIT_MIN_CHUNK = 1 << 12,    /* each partial still a long vectorized loop */
    SINK_MAX_IN = 4,              /* elementwise ops have at most 3 operands */
};

/* The dims reduction n reduces, as a mask over its input's dims. */
static uint32_t reduced(const ir_node *n) { return ir_dims_of(&n->attrs[0], n->in[0]->type.ndim); }

/* What the pass knows about the old graph while it rebuilds it. */
typedef struct split_ctx {
    const ir_graph *g;
    int *uses;             /* per old op node: readers (graph outputs count) */
    ir_node **now;         /* per old node (inputs first): its node in the new graph */
} split_ctx;

/* The node standing for old node n in the new graph (inputs keep their order). */
static ir_node *now_of(const split_ctx *c, const ps_builder *b, const ir_node *n)
{
    return ir_node_is_input(n) ? b->g->inputs[n->id] : c->now[ir_slot(c->g, n)];
}

static bool elementwise(const ir_node *n)
{
    switch (ir_ops[n->op].kind) {
    case IR_UNARY:
    case IR_BINARY: return true;
    default: return n->op == OP_where || n->op == OP_cast || n->op == OP_clamp;
    }
}

/* Whether old node n can be rebuilt on reshaped operands (see sink): an
 * elementwise node read only here whose operands have its shape or are 0-dim. */
static bool sinkable(const split_ctx *c, const ir_node *n)
{
    if (ir_node_is_input(n) || !elementwise(n) || c->uses[n->id] != 1 || n->nin > SINK_MAX_IN)
        return false;
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] && n->in[j]->type.ndim != 0 && !ir_shape_equal(&n->in[j]->type, &n->type))
            return false;
    return true;
}

/* n (an old node of x's shape) read through reshape(., shape): the reshape is
 * moved up through the elementwise nodes only the reduction reads, down to
 * values that are stored anyway (inputs, other ops, values read elsewhere),
 * so the fused kernel of the partial reduction reads those in place and
 * computes the chain itself. */
static ir_node *sink(split_ctx *c, ps_builder *b, const ir_node *n, const int64_t *shape, int nd)
{
    if (!sinkable(c, n))
        return ps_b_reshape(b, now_of(c, b, n), shape, nd);
    ir_node *in[SINK_MAX_IN];
    for (int j = 0; j < n->nin; j++)
        in[j] = !n->in[j] ? NULL
                : n->in[j]->type.ndim == 0 ? now_of(c, b, n->in[j])
                                           : sink(c, b, n->in[j], shape, nd);
    ir_attrs a;
    ir_node_attrs(n, &a);
    return ps_b_op(b, n->op, in, n->nin, &a);
}

static ir_node *split_reduction(split_ctx *c, ps_builder *b, const ir_node *n)
{
    const ir_node *x = n->in[0];
    const ir_type *t = &x->type;
    int nd = t->ndim;
    /* sum and prod: f32 and f64 (not f16/bf16: the partials would be rounded
     * to the narrow type); amax, amin, all and any, exact, of any dtype (a
     * gradient scaler's all(isfinite) over a whole gradient ran on one core) */
    bool exact = n->op == OP_amax || n->op == OP_amin || n->op == OP_all || n->op == OP_any;
    if ((!exact && (!ir_dtype_is_float(t->dtype) || ir_dtype_is_half(t->dtype))) ||
        n->type.dtype != t->dtype || nd == 0 || nd >= TJ_MAX_DIMS)
        return NULL;
    for (int d = 0; d < nd; d++)
        if (IR_IS_SYM(t->shape[d]))
            return NULL;
    int k = ir_innermost(reduced(n), nd);
    if (k == 0)
        return NULL;
    int64_t rows = 1, len = 1;
    for (int d = 0; d < nd - k; d++)
        rows *= t->shape[d];
    for (int d = nd - k; d < nd; d++)
        len *= t->shape[d];
    if (rows >= SPLIT_MAX_ROWS || len < SPLIT_MIN_LEN)
        return NULL;
    int64_t parts = 64;
    while (parts > 1 && (len % parts != 0 || len / parts < SPLIT_MIN_CHUNK))
        parts /= 2;
    if (parts == 1)
        return NULL;

    int64_t shape[TJ_MAX_DIMS];
    for (int d = 0; d < nd - k; d++)
        shape[d] = t->shape[d];
    shape[nd - k] = parts;
    shape[nd - k + 1] = len / parts;
    const int64_t last = -1;
    ir_node *v = sink(c, b, x, shape, nd - k + 2);
    ir_node *p = ps_b_reduce(b, n->op, v, &last, 1, false);
    ir_node *r = ps_b_reduce(b, n->op, p, &last, 1, false);
    if (r && !ir_type_equal(&r->type, &n->type))
        r = ps_b_reshape(b, r, n->type.shape, n->type.ndim);
    return r;
}

/* op over the dims in mask m of x (a node of the new graph, m not containing
 * x's last dim): x permuted so the reduced dims come last, then reduced
 * there (keepdim false). Fusion reads the permute as index arithmetic, and
 * the kernel becomes a column kernel (codegen/kernel.h) that walks x row by
 * row, 64 results at a time. */
static ir_node *reduce_permuted(ps_builder *b, ir_op op, ir_node *x, unsigned m, int64_t correction)
{
    int nd = x->type.ndim, np = 0, k = __builtin_popcount(m);
    int64_t perm[TJ_MAX_DIMS], dims[TJ_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        if (!(m & (1u << d)))
            perm[np++] = d;
    for (int d = 0; d < nd; d++)
        if (m & (1u << d))
            perm[np++] = d;
    for (int j = 0; j < k; j++)
        dims[j] = nd - k + j;
    ir_node *v = ps_b_permute(b, x, perm);
    return op == OP_var ? ps_b_var(b, v, dims, k, correction, false)
                        : ps_b_reduce(b, op, v, dims, k, false);
}

/* A reduction over dims that are not all innermost (a sum over the batch,
 * dim 0 of [R, C]):
 *   - with the last dim kept: reduce_permuted, one column kernel;
 *   - with the last dims reduced and others too (dims 0, 2 and 3 of NCHW):
 *     the innermost run first (a rows kernel, fused with the producers),
 *     then the rest by reduce_permuted (sum, prod, amax, amin only: var
 *     does not combine this way).
 * Instead of an eager call after the producers are stored. */
static ir_node *reduced_last(split_ctx *c, ps_builder *b, const ir_node *n)
{
    const ir_node *x = n->in[0];
    int nd = x->type.ndim;
    uint32_t m = reduced(n);
    if (!ir_dtype_is_float(x->type.dtype) || n->type.dtype != x->type.dtype || nd < 2 || m == 0 ||
        ir_innermost(m, nd) > 0)
        return NULL;
    int64_t corr = n->op == OP_var ? n->attrs[1].i[0] : 0;
    ir_node *r;
    if (!(m & (1u << (nd - 1)))) {
        r = reduce_permuted(b, n->op, now_of(c, b, x), m, corr);
    } else {
        if (n->op == OP_var)
            return NULL;
        int64_t inner[TJ_MAX_DIMS];
        int ni = 0;
        for (int d = nd - 1; d >= 0 && (m & (1u << d)); d--)
            ni++;
        for (int j = 0; j < ni; j++)
            inner[j] = nd - ni + j;
        ir_node *r1 = ps_b_reduce(b, n->op, now_of(c, b, x), inner, ni, false);
        r = r1 ? reduce_permuted(b, n->op, r1, m & ((1u << (nd - ni)) - 1), 0) : NULL;
    }
    /* keepdim: the reduced dims back as size 1, by a reshape, or where the
     * other sizes are symbolic (a reshape cannot spell them) by unsqueezes */
    if (r && !ir_type_equal(&r->type, &n->type) && !ir_type_has_sym(&n->type))
        return ps_b_reshape(b, r, n->type.shape, n->type.ndim);
    for (int d = 0; r && n->type.ndim == nd && d < nd; d++)
        if (m & (1u << d))
            r = ps_b_unsqueeze(b, r, d);
    return r;
}

static ir_node *split_hook(ps_builder *b, const ir_node *old, ir_node *const *in, void *ctx)
{
    split_ctx *c = ctx;
    ir_node *r = NULL;
    if (old->op == OP_sum || old->op == OP_prod || old->op == OP_amax || old->op == OP_amin ||
        old->op == OP_all || old->op == OP_any)
        r = split_reduction(c, b, old);
    if (!r && !b->failed && (old->op == OP_sum || old->op == OP_prod || old->op == OP_amax ||
                             old->op == OP_amin || old->op == OP_var))
        r = reduced_last(c, b, old);
    if (!r && !b->failed) {
        ir_attrs a;
        ir_node_attrs(old, &a);
        r = ps_b_op(b, old->op, in, old->nin, &a);
    }
    return c->now[ir_slot(c->g, old)] = r;
}

ir_graph *ps_split_reductions(ir_graph *g, char *err, size_t nerr)
{
    split_ctx c = {.g = g};
    c.uses = calloc((size_t)g->nnodes + 1, sizeof *c.uses);
    c.now = calloc((size_t)ir_nslots(g) + 1, sizeof *c.now);
    ir_graph *h = NULL;
    if (!c.uses || !c.now) {
        snprintf(err, nerr, "out of memory");
        goto done;
    }
    for (int k = 0; k < g->nnodes; k++)
        for (int j = 0; j < g->nodes[k]->nin; j++)
            if (g->nodes[k]->in[j] && !ir_node_is_input(g->nodes[k]->in[j]))
                c.uses[g->nodes[k]->in[j]->id]++;
    for (int k = 0; k < g->noutputs; k++)
        if (!ir_node_is_input(g->outputs[k]))
            c.uses[g->outputs[k]->id]++;
    h = ps_rebuild(g, NULL, split_hook, &c, err, nerr);
done:
    free(c.uses);
    free(c.now);
    return h;
}
