/* fuse.c - fusion of a graph's nodes into kernel groups (see fuse.h).
 *
 * Greedy, in SSA order: each fusible node starts a group and merges with the
 * groups of its producers (through any views between them) when the union
 * stays legal:
 *
 *   - no cycle: nothing outside the union sits between two of its nodes;
 *   - one domain: a pointwise union's sinks (nodes it does not read itself)
 *     share one shape; a union with reductions has one reduced tensor shape
 *     and one count of reduced trailing dims, and its sinks are full values
 *     of that shape or row values;
 *   - one index map per node, computed from the sinks down: broadcasts and
 *     the views permute/expand/squeeze/unsqueeze (and reshapes that only add
 *     or drop size-1 dims) compose; a reduction is read at its own row only;
 *   - no recomputation: each node is full, a row value (ROWS) or a scalar,
 *     or cheap (add, compare, where, ...) and not stored; stored nodes are
 *     not scalars in a larger loop;
 *   - size: nodes, buffers and reductions within IR_FUSE_MAX_* (ir/fusion.h:
 *     derived from what one kernel can hold).
 *
 * What cannot be fused keeps a reason for the `fused` dump.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse.h"

typedef enum { C_PW, C_RED, C_VIEW, C_CONST, C_OTHER } ncls;

typedef struct fz {
    const ir_graph *g;
    int n;
    ncls *cls;
    int *cstart, *cons;            /* consumers of each node (CSR) */
    bool *is_out;                  /* a graph output */
    int *parent, *next, *last, *size;
    int *mark, stamp;              /* mark[k] == stamp: in the union under test */
    int *seen, seen_stamp;
    int *gseen;                    /* gseen[root] == seen_stamp: its group's members were reached */
    signed char (*map)[TJ_MAX_DIMS];
    bool *mapset;
    ir_fusion *f;
    char why[256];
} fz;

/* ---- reasons ------------------------------------------------------------------------ */

static void add_reason(fz *F, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_reason(fz *F, const char *fmt, ...)
{
    ir_fusion *f = F->f;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **r = realloc(f->reasons, (size_t)(f->nreasons + 1) * sizeof *r);
    if (!r)
        return;
    f->reasons = r;
    if ((r[f->nreasons] = strdup(buf)))
        f->nreasons++;
}

static bool failf(fz *F, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool failf(fz *F, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(F->why, sizeof F->why, fmt, ap);
    va_end(ap);
    return false;
}

static const char *opname(const ir_node *n) { return ir_ops[n->op].name; }

/* ---- classification ------------------------------------------------------------------ */

/* The reduced dims of a reduction node as a mask over its input's dims. */
static unsigned red_mask(const ir_node *n) { return ir_dims_of(&n->attrs[0], n->in[0]->type.ndim); }

static bool types_ok(const ir_node *n)
{
    if (!ir_dtype_supported(n->type.dtype))
        return false;
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] && !ir_dtype_supported(n->in[j]->type.dtype))
            return false;
    return true;
}

static ncls classify_reduce(const ir_node *n, char *why, size_t nw)
{
    bool anyall = n->op == OP_any || n->op == OP_all;   /* amax/amin of x as bool */
    if (!anyall && n->op != OP_sum && n->op != OP_prod && n->op != OP_amax && n->op != OP_amin &&
        n->op != OP_var && n->op != OP_xor_sum) {
        snprintf(why, nw, "reduction kind without a kernel lowering (eager call)");
        return C_OTHER;
    }
    /* floats reduce in their own dtype; integers and bools as torch does:
     * sum and prod in i64, amax, amin and xor_sum in the element type */
    tj_dtype in = n->in[0]->type.dtype, out = n->type.dtype;
    bool fl = ir_dtype_is_float(in);
    if (!anyall &&
        (fl ? out != in || n->op == OP_xor_sum
            : n->op == OP_var || out != (n->op == OP_sum || n->op == OP_prod ? TJ_I64 : in))) {
        snprintf(why, nw, "%s from %s to %s runs eagerly", ir_ops[n->op].name, tj_dtype_name(in),
                 tj_dtype_name(out));
        return C_OTHER;
    }
    if (!ir_innermost(red_mask(n), n->in[0]->type.ndim)) {
        snprintf(why, nw, "reduces dims that are not the innermost (eager call)");
        return C_OTHER;
    }
    return C_RED;
}

static ncls classify(const ir_node *n, char *why, size_t nw)
{
    const ir_opinfo *o = &ir_ops[n->op];
    why[0] = '\0';
    if (o->kind == IR_VIEW)
        return C_VIEW;
    if (!types_ok(n)) {
        snprintf(why, nw, "dtype without kernels");
        return C_OTHER;
    }
    switch (o->kind) {
    case IR_UNARY: return C_PW;
    case IR_BINARY:
        if ((n->op == OP_fmod || n->op == OP_remainder) && !ir_dtype_is_float(n->type.dtype)) {
            snprintf(why, nw, "integer %s runs eagerly (a zero divisor is an error)", o->name);
            return C_OTHER;
        }
        return C_PW;
    case IR_TERNARY:
        if (n->op == OP_where)
            return C_PW;
        break;
    case IR_POINTWISE:
        if (n->op == OP_clamp && ir_dtype_is_float(n->type.dtype))
            return C_PW;
        if (n->op == OP_cast)
            return C_PW;
        snprintf(why, nw, n->op == OP_clamp ? "integer clamp runs eagerly" : "no kernel lowering (eager call)");
        return C_OTHER;
    case IR_REDUCE: return classify_reduce(n, why, nw);
    case IR_CREATE:
        if (n->op == OP_scalar || n->op == OP_full)
            return C_CONST;
        break;
    default: break;
    }
    if (!why[0] && ir_op_lapack(n->op))   /* linalg via LAPACK (issue 11) */
        snprintf(why, nw, "LAPACK routine, no kernel lowering (eager call)");
    if (!why[0])
        snprintf(why, nw, o->prim ? "%s op (eager call)" : "composite %s op, not decomposed (eager call)",
                 ir_kind_name(o->kind));
    return C_OTHER;
}

const char *ps_fuse_lowering(int op, char *why, size_t nw)
{
    why[0] = '\0';
    if (op < 0 || op >= IR_NUM_OPS || !ir_ops[op].prim)
        return "decomposed";
    /* a node of op over f32[4,8] operands, attributes zero (reductions: all dims) */
    ir_node x = {.op = IR_OP_INPUT, .nin = 0, .type = {.dtype = TJ_F32, .ndim = 2, .shape = {4, 8}}};
    ir_node *ins[8] = {&x, &x, &x, &x, &x, &x, &x, &x};
    ir_attr attrs[IR_MAX_ATTRS] = {{0}};
    for (int k = 0; k < ir_ops[op].nattrs; k++)
        if (ir_ops[op].attrs[k].kind == IR_ATTR_DTYPE)
            attrs[k].i[0] = TJ_F32;
    ir_node n = {.op = (ir_op)op, .nin = ir_ops[op].nmin > 8 ? 8 : ir_ops[op].nmin, .type = x.type, .in = ins,
                 .attrs = attrs};
    switch (classify(&n, why, nw)) {
    case C_PW:
    case C_RED:
    case C_CONST: return "kernel";
    case C_VIEW: return "view";
    default: return "eager call";
    }
}

/* ---- union-find with member lists ------------------------------------------------------ */

static int find(fz *F, int k)
{
    while (F->parent[k] != k)
        k = F->parent[k] = F->parent[F->parent[k]];
    return k;
}

static void unite(fz *F, int a, int b)
{
    a = find(F, a);
    b = find(F, b);
    if (a == b)
        return;
    F->parent[b] = a;
    F->next[F->last[a]] = b;
    F->last[a] = F->last[b];
    F->size[a] += F->size[b];
}

/* ---- helpers over the union under test ------------------------------------------------ */

static bool member(const fz *F, const ir_node *n)
{
    return n && !ir_node_is_input(n) && F->mark[n->id] == F->stamp;
}


/* The node at the end of a chain of views starting at n. */
static const ir_node *chain_end(const ir_node *n)
{
    while (ir_node_is_view(n))
        n = n->in[0];
    return n;
}

/* Whether node k is read (through views) by a member, or by a non-member /
 * the graph's result. */
static void uses(const fz *F, int k, bool *in_union, bool *outside)
{
    for (int c = F->cstart[k]; c < F->cstart[k + 1]; c++) {
        const ir_node *u = F->g->nodes[F->cons[c]];
        if (member(F, u))
            *in_union = true;
        else if (ir_node_is_view(u))
            uses(F, u->id, in_union, outside);
        else
            *outside = true;
    }
    if (F->is_out[k])
        *outside = true;
}

/* ---- index maps ---------------------------------------------------------------------------- */

/* Map of an operand of shape `so` broadcast to shape `sc` read at map mc. */
static void broadcast_map(const ir_type *so, const ir_type *sc, const signed char *mc, signed char *mo)
{
    int lead = sc->ndim - so->ndim;
    for (int d = 0; d < so->ndim; d++)
        mo[d] = so->shape[d] == 1 && sc->shape[d + lead] != 1 ? -1 : mc[d + lead];
}

/* Map of view v's input given v's map; false when the view is not plain
 * index arithmetic over the dims (slice, or a reshape that moves elements). */
static bool view_map(const ir_node *v, const signed char *mv, signed char *mi)
{
    const ir_type *ti = &v->in[0]->type, *to = &v->type;
    const ir_attr *a = v->attrs;
    switch (v->op) {
    case OP_permute:
        for (int k = 0; k < to->ndim; k++)
            mi[ir_norm_dim(a[0].i[k], ti->ndim)] = mv[k];
        return true;
    case OP_expand:
        broadcast_map(ti, to, mv, mi);
        return true;
    case OP_squeeze:
    case OP_unsqueeze:
    case OP_reshape: {
        /* the same dims once size-1 dims are dropped: map them in order */
        int j = 0;
        for (int d = 0; d < ti->ndim; d++) {
            if (ti->shape[d] == 1) {
                mi[d] = -1;
                continue;
            }
            while (j < to->ndim && to->shape[j] == 1)
                j++;
            if (j == to->ndim || to->shape[j] != ti->shape[d])
                return false;
            mi[d] = mv[j++];
        }
        while (j < to->ndim && to->shape[j] == 1)
            j++;
        return j == to->ndim;
    }
    default: return false;
    }
}

static bool set_map(fz *F, const ir_node *m, const signed char *mp)
{
    if (!F->mapset[m->id]) {
        memcpy(F->map[m->id], mp, TJ_MAX_DIMS);
        F->mapset[m->id] = true;
        return true;
    }
    if (memcmp(F->map[m->id], mp, (size_t)m->type.ndim))
        return failf(F, "%%%d %s would be read at two different indices", m->id, opname(m));
    return true;
}

/* Propagates map mo of operand o (the value as read, before its views) down
 * its view chain to the member at the end, if any. */
static bool push_map(fz *F, const ir_node *o, const signed char *mo)
{
    const ir_node *end = chain_end(o);
    if (!member(F, end))
        return true;
    signed char cur[TJ_MAX_DIMS], nxt[TJ_MAX_DIMS];
    memcpy(cur, mo, TJ_MAX_DIMS);
    for (const ir_node *v = o; ir_node_is_view(v); v = v->in[0]) {
        memset(nxt, -1, sizeof nxt);
        if (!view_map(v, cur, nxt))
            return failf(F, "reads %%%d %s through %s, which moves elements", end->id, opname(end), opname(v));
        memcpy(cur, nxt, TJ_MAX_DIMS);
    }
    return set_map(F, end, cur);
}

/* The map of a reduction's result: its kept dims follow the outer domain dims. */
static void row_map(const ir_node *r, signed char *m)
{
    bool keep = r->attrs[ir_ops[r->op].nattrs - 1].i[0] != 0;   /* keepdim is the last attribute */
    memset(m, -1, TJ_MAX_DIMS);
    int nd = r->in[0]->type.ndim, nred = __builtin_popcount(red_mask(r));
    for (int d = 0; d < r->type.ndim; d++)
        m[d] = (signed char)(keep && d >= nd - nred ? -1 : d);
}

/* ---- the legality check ----------------------------------------------------------------------- */

typedef struct uinfo {
    int ids[IR_FUSE_MAX_NODES + 1];
    int n;
    bool rows;
    ir_type dom;
    int nred, dom_node;
    bool dom_input;
} uinfo;

/* Pushes the first non-view, non-member nodes that read k (views between
 * members are index arithmetic, not steps). */
static void frontier(fz *F, int k, int *stack, int *sp)
{
    for (int c = F->cstart[k]; c < F->cstart[k + 1]; c++) {
        int m = F->cons[c];
        if (F->mark[m] == F->stamp || F->seen[m] == F->seen_stamp)
            continue;
        F->seen[m] = F->seen_stamp;
        if (ir_node_is_view(F->g->nodes[m]))
            frontier(F, m, stack, sp);
        else
            stack[(*sp)++] = m;
    }
}

static bool no_cycle(fz *F, const uinfo *u)
{
    F->seen_stamp++;
    int *stack = malloc(sizeof(int) * 2 * ((size_t)F->n + 1)), sp = 0;
    if (!stack)
        return failf(F, "out of memory");
    int *origin = stack + F->n + 1;   /* the first node outside the union on the path */
    for (int i = 0; i < u->n; i++)
        frontier(F, u->ids[i], stack, &sp);
    for (int i = 0; i < sp; i++)
        origin[i] = stack[i];
    bool ok = true;
    while (sp && ok) {
        int k = stack[--sp], o = origin[sp];
        /* a node reached is its whole group reached: a group runs as one
         * kernel, after all its inputs, so a path through any member of it
         * leads on from every member (node paths alone miss a cycle through
         * a group of unrelated chains, e.g. an update that also holds the
         * step's scalars) */
        int r = find(F, k);
        if (F->gseen[r] != F->seen_stamp) {
            F->gseen[r] = F->seen_stamp;
            for (int m = r; m >= 0; m = F->next[m])
                if (F->seen[m] != F->seen_stamp) {
                    F->seen[m] = F->seen_stamp;
                    origin[sp] = o;
                    stack[sp++] = m;
                }
        }
        for (int c = F->cstart[k]; c < F->cstart[k + 1] && ok; c++) {
            int m = F->cons[c];
            if (F->mark[m] == F->stamp)
                ok = failf(F, "%%%d %s sits between them", o, opname(F->g->nodes[o]));
            else if (F->seen[m] != F->seen_stamp) {
                F->seen[m] = F->seen_stamp;
                origin[sp] = o;
                stack[sp++] = m;
            }
        }
    }
    free(stack);
    return ok;
}

/* Domain of the union: the reduced shape, or the shape of its last sink. */
static bool domain(fz *F, uinfo *u)
{
    u->rows = false;
    for (int i = u->n - 1; i >= 0; i--) {
        const ir_node *n = F->g->nodes[u->ids[i]];
        if (F->cls[n->id] != C_RED)
            continue;
        int nred = __builtin_popcount(red_mask(n));
        if (u->rows && (!ir_shape_equal(&u->dom, &n->in[0]->type) || nred != u->nred))
            return failf(F, "reductions over different shapes");
        u->rows = true;
        u->dom = n->in[0]->type;
        u->nred = nred;
        u->dom_node = n->id;
        u->dom_input = true;
    }
    for (int i = u->n - 1; i >= 0 && !u->rows; i--) {
        bool in_u = false, out = false;
        uses(F, u->ids[i], &in_u, &out);
        if (!in_u) {
            u->dom = F->g->nodes[u->ids[i]]->type;
            u->dom_node = u->ids[i];
            u->dom_input = false;
            u->nred = 0;
            break;
        }
    }
    return true;
}

/* The map a sink gets: identity on the domain, or a row map. */
static bool sink_map(fz *F, const uinfo *u, const ir_node *n)
{
    signed char m[TJ_MAX_DIMS];
    memset(m, -1, sizeof m);
    int outer = u->dom.ndim - u->nred;
    if (F->cls[n->id] == C_RED) {
        row_map(n, m);
    } else if (ir_shape_equal(&n->type, &u->dom)) {
        for (int d = 0; d < n->type.ndim; d++)
            m[d] = (signed char)d;
    } else if (u->rows && n->type.ndim >= outer) {
        for (int d = 0; d < n->type.ndim; d++) {
            bool kept = d < outer && n->type.shape[d] == u->dom.shape[d];
            if (!kept && !(d >= outer && n->type.shape[d] == 1))
                return failf(F, "its result %%%d %s is neither the domain nor a row", n->id, opname(n));
            m[d] = (signed char)(kept ? d : -1);
        }
    } else {
        return failf(F, "its result %%%d %s has another shape than the group's", n->id, opname(n));
    }
    return set_map(F, n, m);
}

static bool node_maps(fz *F, const uinfo *u, const ir_node *n)
{
    if (F->cls[n->id] == C_RED) {
        signed char rm[TJ_MAX_DIMS], id[TJ_MAX_DIMS];
        row_map(n, rm);
        if (memcmp(rm, F->map[n->id], (size_t)n->type.ndim))
            return failf(F, "the reduction %%%d would be read outside its row", n->id);
        for (int d = 0; d < TJ_MAX_DIMS; d++)
            id[d] = (signed char)(d < n->in[0]->type.ndim ? d : -1);
        return push_map(F, n->in[0], id);
    }
    for (int j = 0; j < n->nin; j++) {
        if (!n->in[j])
            continue;
        signed char mo[TJ_MAX_DIMS];
        memset(mo, -1, sizeof mo);
        broadcast_map(&n->in[j]->type, &n->type, F->map[n->id], mo);
        if (!push_map(F, n->in[j], mo))
            return false;
    }
    return true;
}

/* A node worth recomputing along broadcast dims rather than storing: a few
 * instructions, no transcendental, no division. */
static bool cheap_op(ir_op op)
{
    switch (op) {
    case OP_add: case OP_sub: case OP_mul: case OP_neg: case OP_abs: case OP_maximum:
    case OP_minimum: case OP_eq: case OP_ne: case OP_lt: case OP_le: case OP_gt: case OP_ge:
    case OP_logical_and: case OP_logical_or: case OP_logical_xor: case OP_logical_not:
    case OP_bitwise_and: case OP_bitwise_or: case OP_bitwise_xor: case OP_bitwise_not:
    case OP_where: case OP_cast: case OP_clamp: case OP_isnan: case OP_sign:
        return true;
    default: return false;
    }
}

/* Each member must be full, a row value (ROWS) or a scalar that is not
 * stored; a cheap node that is not stored may also be recomputed along
 * broadcast dims. */
static bool masks_ok(fz *F, const uinfo *u)
{
    unsigned full = 0, outer = 0;
    for (int d = 0; d < u->dom.ndim; d++)
        if (u->dom.shape[d] != 1) {
            full |= 1u << d;
            if (d < u->dom.ndim - u->nred)
                outer |= 1u << d;
        }
    for (int i = 0; i < u->n; i++) {
        const ir_node *n = F->g->nodes[u->ids[i]];
        unsigned m = 0;
        for (int d = 0; d < n->type.ndim; d++) {
            int t = F->map[n->id][d];
            if (t < 0 || u->dom.shape[t] == 1)
                continue;
            if (m >> t & 1)
                return failf(F, "%%%d %s reads one index twice", n->id, opname(n));
            m |= 1u << t;
        }
        bool in_u = false, out = false;
        uses(F, n->id, &in_u, &out);
        if (m == full || (u->rows && m == outer) || (m == 0 && (!out || full == 0)) ||
            (!out && F->cls[n->id] == C_PW && cheap_op(n->op)))
            continue;
        return failf(F, "%%%d %s would be recomputed along broadcast dims", n->id, opname(n));
    }
    return true;
}

/* Distinct buffers the union would need (operands read from outside, and
 * stores), reductions and nodes: within codegen's limits. */
static bool small_enough(fz *F, const uinfo *u)
{
    int stores = 0, nleaves = 0, reds = 0;
    const ir_node *leaves[IR_FUSE_MAX_BUFS + 1];
    for (int i = 0; i < u->n; i++) {
        const ir_node *n = F->g->nodes[u->ids[i]];
        reds += F->cls[n->id] == C_RED;
        bool in_u = false, out = false;
        uses(F, n->id, &in_u, &out);
        stores += out;
        for (int j = 0; j < n->nin && nleaves <= IR_FUSE_MAX_BUFS; j++) {
            const ir_node *o = n->in[j];
            if (!o || member(F, chain_end(o)) ||
                (!ir_node_is_input(chain_end(o)) && F->cls[chain_end(o)->id] == C_CONST))
                continue;
            int l = 0;
            while (l < nleaves && leaves[l] != o)
                l++;
            if (l == nleaves)
                leaves[nleaves++] = o;
        }
    }
    if (u->n > IR_FUSE_MAX_NODES || stores + nleaves > IR_FUSE_MAX_BUFS || reds > IR_FUSE_MAX_REDS)
        return failf(F, "the group would be too large for one kernel");
    return true;
}

static bool check_union(fz *F, int ra, int rb, uinfo *u)
{
    F->stamp++;
    u->n = 0;
    for (int r = 0; r < 2; r++)
        for (int k = r ? rb : ra; k >= 0; k = F->next[k]) {
            if (u->n == IR_FUSE_MAX_NODES)
                return failf(F, "the group would be too large for one kernel");
            F->mark[k] = F->stamp;
            u->ids[u->n++] = k;
        }
    /* ascending ids */
    for (int i = 1; i < u->n; i++)
        for (int j = i; j > 0 && u->ids[j - 1] > u->ids[j]; j--) {
            int t = u->ids[j];
            u->ids[j] = u->ids[j - 1];
            u->ids[j - 1] = t;
        }
    if (!no_cycle(F, u) || !domain(F, u) || !small_enough(F, u))
        return false;
    for (int i = 0; i < u->n; i++)
        F->mapset[u->ids[i]] = false;
    for (int i = u->n - 1; i >= 0; i--) {
        const ir_node *n = F->g->nodes[u->ids[i]];
        if (!F->mapset[n->id] && !sink_map(F, u, n))
            return false;
        if (!node_maps(F, u, n))
            return false;
    }
    return masks_ok(F, u);
}

/* ---- driver -------------------------------------------------------------------------------- */

static int fz_init(fz *F, const ir_graph *g, ir_fusion *f)
{
    int n = g->nnodes;
    memset(F, 0, sizeof *F);
    F->g = g;
    F->n = n;
    F->f = f;
    size_t m = (size_t)n + 1;
    F->cls = calloc(m, sizeof *F->cls);
    F->cstart = calloc(m + 1, sizeof *F->cstart);
    F->is_out = calloc(m, sizeof *F->is_out);
    F->parent = calloc(m, sizeof(int));
    F->next = calloc(m, sizeof(int));
    F->last = calloc(m, sizeof(int));
    F->size = calloc(m, sizeof(int));
    F->mark = calloc(m, sizeof(int));
    F->seen = calloc(m, sizeof(int));
    F->gseen = calloc(m, sizeof(int));
    F->mapset = calloc(m, sizeof(bool));
    F->map = calloc(m, sizeof *F->map);
    int ncons = 0;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < g->nodes[k]->nin; j++)
            ncons += g->nodes[k]->in[j] != NULL;
    F->cons = calloc((size_t)ncons + 1, sizeof(int));
    if (!F->cls || !F->cstart || !F->is_out || !F->parent || !F->next || !F->last || !F->size ||
        !F->mark || !F->seen || !F->gseen || !F->mapset || !F->map || !F->cons)
        return -1;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < g->nodes[k]->nin; j++) {
            const ir_node *i = g->nodes[k]->in[j];
            if (i && !ir_node_is_input(i))
                F->cstart[i->id + 1]++;
        }
    for (int k = 0; k < n; k++)
        F->cstart[k + 1] += F->cstart[k];
    int *fill = calloc(m, sizeof(int));
    if (!fill)
        return -1;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < g->nodes[k]->nin; j++) {
            const ir_node *i = g->nodes[k]->in[j];
            if (i && !ir_node_is_input(i))
                F->cons[F->cstart[i->id] + fill[i->id]++] = k;
        }
    free(fill);
    for (int k = 0; k < g->noutputs; k++)
        if (!ir_node_is_input(g->outputs[k]))
            F->is_out[g->outputs[k]->id] = true;
    for (int k = 0; k < n; k++) {
        F->parent[k] = k;
        F->next[k] = -1;
        F->last[k] = k;
        F->size[k] = 1;
    }
    return 0;
}

static void fz_free(fz *F)
{
    free(F->cls);
    free(F->cstart);
    free(F->cons);
    free(F->is_out);
    free(F->parent);
    free(F->next);
    free(F->last);
    free(F->size);
    free(F->mark);
    free(F->seen);
    free(F->gseen);
    free(F->mapset);
    free(F->map);
}

/* Tries to merge n's group with the group of each producer. */
static void merge_producers(fz *F, const ir_node *n, uinfo *u)
{
    for (int j = 0; j < n->nin; j++) {
        const ir_node *p = n->in[j] ? chain_end(n->in[j]) : NULL;
        if (!p || ir_node_is_input(p) || (F->cls[p->id] != C_PW && F->cls[p->id] != C_RED))
            continue;
        int rp = find(F, p->id), rn = find(F, n->id);
        if (rp == rn)
            continue;
        if (check_union(F, rn, rp, u))
            unite(F, rn, rp);
        else
            add_reason(F, "%%%d %s: not fused with %%%d %s: %s", n->id, opname(n), p->id, opname(p), F->why);
    }
}

/* Group order. Kernel and eager groups: Kahn's algorithm over their
 * dependences (through views), smallest first. Constants come first; each
 * view right after the group of the value it views (views between nodes of
 * one kernel group would otherwise make a cycle). */
static int kahn(fz *F, ir_fusion *f, const int *rg, int *order)
{
    int ng = f->ngroups, n = 0;
    int *indeg = calloc((size_t)ng + 1, sizeof(int));
    bool *done = calloc((size_t)ng + 1, sizeof(bool));
    if (!indeg || !done) {
        free(indeg), free(done);
        return -1;
    }
    /* edge e -> k for every op input whose view chain ends at op node e */
#define EDGES(BODY) \
    for (int k = 0; k < F->n; k++) { \
        const ir_node *nk = F->g->nodes[k]; \
        if (F->cls[k] == C_VIEW) \
            continue; \
        for (int j = 0; j < nk->nin; j++) { \
            const ir_node *e = nk->in[j] ? chain_end(nk->in[j]) : NULL; \
            if (e && !ir_node_is_input(e) && rg[e->id] != rg[k]) { BODY } \
        } \
    }
    EDGES(indeg[rg[k]]++;)
    for (int gi = 0; gi < ng; gi++)
        done[gi] = f->groups[gi].kind == IR_GROUP_VIEW;
    for (;;) {
        int pick = -1;
        for (int gi = 0; gi < ng && pick < 0; gi++)
            if (!done[gi] && indeg[gi] == 0)
                pick = gi;
        if (pick < 0)
            break;
        done[pick] = true;
        order[n++] = pick;
        EDGES(if (rg[e->id] == pick) indeg[rg[k]]--;)
    }
#undef EDGES
    free(indeg);
    free(done);
    return n;
}

static int order_groups(fz *F, ir_fusion *f, int *rg)
{
    int ng = f->ngroups;
    int *order = malloc(sizeof(int) * ((size_t)ng + 1)), *out = malloc(sizeof(int) * ((size_t)ng + 1));
    ir_group *sorted = malloc(sizeof *sorted * ((size_t)ng + 1));
    int nk = order && out && sorted ? kahn(F, f, rg, order) : -1, n = 0;
    if (nk < 0) {
        free(order), free(out), free(sorted);
        return -1;
    }
    /* views of graph inputs first, then each group followed by views of it */
    for (int k = 0; k < F->n; k++)
        if (F->cls[k] == C_VIEW && ir_node_is_input(chain_end(F->g->nodes[k])))
            out[n++] = rg[k];
    for (int i = 0; i < nk; i++) {
        out[n++] = order[i];
        for (int k = 0; k < F->n; k++) {
            const ir_node *e = chain_end(F->g->nodes[k]);
            if (F->cls[k] == C_VIEW && !ir_node_is_input(e) && rg[e->id] == order[i])
                out[n++] = rg[k];
        }
    }
    if (n != ng) {   /* cannot happen: merges keep the group graph acyclic (no_cycle) */
        free(order), free(out), free(sorted);
        return -2;
    }
    int *newidx = order;
    for (int i = 0; i < ng; i++) {
        sorted[i] = f->groups[out[i]];
        newidx[out[i]] = i;
    }
    for (int k = 0; k < F->n; k++)
        f->group_of[k] = newidx[rg[k]];
    free(f->groups);
    f->groups = sorted;
    free(order);
    free(out);
    return 0;
}

static int build_groups(fz *F, ir_fusion *f, uinfo *u)
{
    int *root_group = malloc(sizeof(int) * ((size_t)F->n + 1));
    f->groups = calloc((size_t)F->n + 1, sizeof *f->groups);
    if (!root_group || !f->groups) {
        free(root_group);
        return -1;
    }
    for (int k = 0; k < F->n; k++)
        if (find(F, k) == k)
            root_group[k] = f->ngroups++;
    for (int k = 0; k < F->n; k++)
        root_group[k] = root_group[find(F, k)];
    for (int k = 0; k < F->n; k++) {
        if (find(F, k) != k)
            continue;
        ir_group *gr = &f->groups[root_group[k]];
        gr->nodes = malloc(sizeof(int) * (size_t)F->size[k]);
        if (!gr->nodes) {
            free(root_group);
            return -1;
        }
        for (int m = k; m >= 0; m = F->next[m])
            gr->nodes[gr->nnodes++] = m;
        ncls c = F->cls[k];
        gr->kind = c == C_VIEW ? IR_GROUP_VIEW : c == C_OTHER ? IR_GROUP_EAGER : c == C_CONST ? IR_GROUP_CONST : IR_GROUP_PW;
        if (gr->kind != IR_GROUP_PW)
            continue;
        /* final maps and domain of this group */
        check_union(F, k, -1, u);
        gr->kind = u->rows ? IR_GROUP_ROWS : IR_GROUP_PW;
        gr->dom_node = u->dom_node;
        gr->dom_input = u->dom_input;
        gr->nred = u->nred;
        for (int i = 0; i < u->n; i++) {
            int m = u->ids[i];
            gr->nodes[i] = m;
            memcpy(f->map[m], F->map[m], TJ_MAX_DIMS);
            bool in_u = false, out = false;
            uses(F, m, &in_u, &out);
            f->stored[m] = out;
        }
    }
    int rc = order_groups(F, f, root_group);
    free(root_group);
    return rc;
}

/* ---- epilogues ------------------------------------------------------------------------------ */

/* Whether consumer c reads m (one of its operands) at c's own index: m has
 * the domain's shape and c's map is the identity on m's dims. */
static bool reads_at_own_index(const fz *F, const ir_fusion *f, const ir_node *c, const ir_node *m)
{
    if (F->cls[c->id] == C_RED)
        return true;   /* a reduction reads its input at the domain's index */
    if (c->type.ndim != m->type.ndim)
        return false;
    for (int d = 0; d < m->type.ndim; d++)
        if (m->type.shape[d] != 1 && f->map[c->id][d] != d)
            return false;
    return true;
}

/* The kernel group whose epilogue eager node m can be, or -1 (see ir/fusion.h);
 * *first gets the first member reading m. When a kernel reads m but cannot
 * be its epilogue, why says so. */
static int epilogue_group(const fz *F, const ir_fusion *f, const ir_node *m, int *first, char *why, size_t nw)
{
    why[0] = '\0';
    if ((m->op != OP_matmul && m->op != OP_conv2d) || !ir_dtype_is_float(m->type.dtype) ||
        F->cstart[m->id] == F->cstart[m->id + 1])
        return -1;
    int g = -1;
    for (int c = F->cstart[m->id]; c < F->cstart[m->id + 1] && g < 0; c++) {
        const ir_group *gc = &f->groups[f->group_of[F->cons[c]]];
        if (ir_group_is_kernel(gc->kind))
            g = f->group_of[F->cons[c]];
    }
    if (g < 0)
        return -1;   /* no kernel reads it */
    const ir_group *gr = &f->groups[g];
    const ir_node *dn = F->g->nodes[gr->dom_node];
    if (F->is_out[m->id])
        snprintf(why, nw, "no epilogue: it is a result of the graph");
    else if (gr->epilogue_of >= 0)
        snprintf(why, nw, "no epilogue: its kernel finishes another result");
    else if (!ir_shape_equal(gr->dom_input ? &dn->in[0]->type : &dn->type, &m->type))
        snprintf(why, nw, "no epilogue: the kernel reading it has another shape");
    if (why[0])
        return -1;
    *first = F->n;
    for (int c = F->cstart[m->id]; c < F->cstart[m->id + 1]; c++) {
        const ir_node *u = F->g->nodes[F->cons[c]];
        if (f->group_of[u->id] != g) {
            snprintf(why, nw, "no epilogue: %%%d %s reads it outside the kernel", u->id, opname(u));
            return -1;
        }
        if (!reads_at_own_index(F, f, u, m)) {
            snprintf(why, nw, "no epilogue: %%%d %s reads it at another index", u->id, opname(u));
            return -1;
        }
        if (u->id < *first)
            *first = u->id;
    }
    return g;
}

/* Moves group `from` to just before group `to` (from < to; nothing between
 * them reads it) and renumbers. */
static void move_group_before(ir_fusion *f, int from, int to)
{
    ir_group moved = f->groups[from];
    memmove(&f->groups[from], &f->groups[from + 1], sizeof *f->groups * (size_t)(to - 1 - from));
    f->groups[to - 1] = moved;
    for (int gi = from; gi < to; gi++)
        for (int i = 0; i < f->groups[gi].nnodes; i++)
            f->group_of[f->groups[gi].nodes[i]] = gi;
}

/* Marks each matmul or conv2d that a kernel group finishes and places it
 * right before that group. (Moves renumber groups: a group is known by a
 * member (epilogue_of holds the eager node's id until the end.) */
static void find_epilogues(fz *F, ir_fusion *f)
{
    for (int gi = 0; gi < f->ngroups; gi++)
        f->groups[gi].epilogue = f->groups[gi].epilogue_of = -1;
    char why[160];
    for (int k = 0; k < F->n; k++) {
        const ir_node *m = F->g->nodes[k];
        int first, g = F->cls[k] == C_OTHER ? epilogue_group(F, f, m, &first, why, sizeof why) : -1;
        if (g < 0) {
            if (F->cls[k] == C_OTHER && why[0])
                add_reason(F, "%%%d %s: %s", k, opname(m), why);
            continue;
        }
        if (f->group_of[k] != g - 1)
            move_group_before(f, f->group_of[k], g);
        f->groups[f->group_of[first]].epilogue_of = k;
        add_reason(F, "%%%d %s: epilogue of %%%d %s", first, opname(F->g->nodes[first]), k, opname(m));
    }
    for (int gi = 0; gi < f->ngroups; gi++) {
        ir_group *gr = &f->groups[gi];
        if (gr->kind != IR_GROUP_PW && gr->kind != IR_GROUP_ROWS)
            continue;
        if (gr->epilogue_of >= 0) {
            gr->epilogue_of = f->group_of[gr->epilogue_of];
            f->groups[gr->epilogue_of].epilogue = gi;
        }
    }
}

ir_fusion *ps_fuse(const ir_graph *g, char *err, size_t nerr)
{
    ir_fusion *f = calloc(1, sizeof *f);
    fz F = {0};
    uinfo *u = malloc(sizeof *u);
    if (!f || !u || fz_init(&F, g, f))
        goto oom;
    f->g = g;
    f->group_of = calloc((size_t)g->nnodes + 1, sizeof(int));
    f->map = calloc((size_t)g->nnodes + 1, sizeof *f->map);
    f->stored = calloc((size_t)g->nnodes + 1, sizeof(bool));
    if (!f->group_of || !f->map || !f->stored)
        goto oom;
    char why[200];
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        F.cls[k] = classify(n, why, sizeof why);
        if (F.cls[k] == C_OTHER)
            add_reason(&F, "%%%d %s: %s", k, opname(n), why);
        if (F.cls[k] == C_PW || F.cls[k] == C_RED)
            merge_producers(&F, n, u);
    }
    int rc = build_groups(&F, f, u);
    if (rc == -2) {
        snprintf(err, nerr, "fuse: the groups it formed depend on each other in a cycle (a fusion bug)");
        goto fail;
    }
    if (rc)
        goto oom;
    find_epilogues(&F, f);
    fz_free(&F);
    free(u);
    return f;
oom:
    snprintf(err, nerr, "out of memory");
fail:
    if (f && F.g)
        fz_free(&F);
    free(u);
    ir_fusion_free(f);
    return NULL;
}
