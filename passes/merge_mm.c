/* merge_mm.c - merge_matmuls: GEMMs with few rows that share their right
 * operand and do not depend on each other become one taller GEMM.
 *
 * An unrolled RNN projects every step's input through the same weight
 * (x_t @ W_ih^T, t = 0..T-1) before the recurrence: T GEMM calls of m rows,
 * each streaming W (and, on OpenBLAS, packing it) again. One GEMM of T*m rows
 * reads W once per row block, in one call; each old result is a row slice of
 * the merged one (a view, no copy). P9 (docs/perf.md): 8-12% of the compiled
 * call.
 *
 *   matched   2-D matmuls of one float dtype reading the same right operand
 *             node [K, N] (static sizes), each with at most MM_MAX_ROWS rows,
 *             whose left operands [m_i, K] depend on no member of their own
 *             group (marked in SSA order from the group's first member) and
 *             that no group formed before needs for its own left operands;
 *             two or more (find_groups).
 *   merged    left = the members' left operands stacked along rows: when they
 *             are consecutive dim-0 slices (step 1) of one value, optionally
 *             reshaped to [m_i, K], a reshape of one slice of that value (a
 *             view); otherwise a cat (one copy of the left operands, 1/N of
 *             the GEMM's work). The merged matmul is built where the first
 *             member stood, after the nodes its left operands need (moved
 *             earlier: they read no member of this group, and earlier groups'
 *             merged matmuls are built by then). Member i becomes
 *             slice(merged, 0, r_i, r_i + m_i).
 *
 * Rows of a GEMM are computed independently, so each member's values are
 * those of its own GEMM up to the summation order of the GEMM library's
 * kernels (tests compare with the eager results within rounding).
 */
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

#define MM_MAX_ROWS 256   /* rows of a member, at most ("small" GEMMs) */

typedef struct mm_ctx {
    const ir_graph *g;
    ir_node **map;        /* old slot -> new node (NULL: not built yet) */
    int *group;           /* old node id -> its group's first member id, or -1 */
    ir_node **merged;     /* old node id -> its slice of the merged result */
    const ir_node **stack;   /* new_of's walk: at most one entry per node */
} mm_ctx;

static bool is_static(const ir_type *t)
{
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0)
            return false;
    return true;
}

/* Whether n is a matmul that can join a group. */
static bool candidate(const ir_node *n)
{
    if (n->op != OP_matmul || n->nin != 2 || !n->in[0] || !n->in[1])
        return false;
    const ir_type *a = &n->in[0]->type, *w = &n->in[1]->type;
    return a->ndim == 2 && w->ndim == 2 && ir_dtype_is_float(n->type.dtype) && !n->type.weak &&
           a->dtype == n->type.dtype && w->dtype == n->type.dtype && is_static(a) && is_static(w) &&
           a->shape[0] <= MM_MAX_ROWS;
}

/* Whether candidates p and q can share a group: one right operand, one k. */
static bool same_operand(const ir_node *p, const ir_node *q)
{
    return p->in[1] == q->in[1] && p->in[0]->type.shape[1] == q->in[0]->type.shape[1];
}

/* Marks in early[] every op node n's left operand needs (n's cone). */
static void mark_cone(const ir_graph *g, bool *early, const ir_node *left)
{
    if (ir_node_is_input(left))
        return;
    early[left->id] = true;
    for (int k = left->id; k >= 0; k--) {
        if (!early[k])
            continue;
        const ir_node *n = g->nodes[k];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] && !ir_node_is_input(n->in[j]))
                early[n->in[j]->id] = true;
    }
}

/* Groups: ctx->group[id] = the first member's id for members of groups of two
 * or more, else -1. 0, or -1 out of memory.
 *
 * Groups form in the order of their first members. From a first member k
 * (a candidate in no group yet, with a later one on the same operand), one
 * scan in SSA order marks what depends on the group's members (dep); a later
 * candidate on the same operand joins unless its left operand is marked (it
 * reads a member: the recurrence) or it is needed early (early: in the cone
 * of a left operand of a group formed before, which is built before this
 * group's merged matmul). A left operand may depend on members of earlier
 * groups (a backward's dG_t on the forward's projections): those are built
 * first. O(candidates x nodes). */
static int find_groups(mm_ctx *c, int *ngroups)
{
    const ir_graph *g = c->g;
    int nn = g->nnodes;
    bool *dep = calloc((size_t)nn + 1, sizeof *dep);
    bool *early = calloc((size_t)nn + 1, sizeof *early);
    if (!dep || !early) {
        free(dep);
        free(early);
        return -1;
    }
    for (int k = 0; k < nn; k++)
        c->group[k] = -1;
    *ngroups = 0;
    for (int k = 0; k < nn; k++) {
        const ir_node *first = g->nodes[k];
        if (c->group[k] >= 0 || early[k] || !candidate(first))
            continue;
        bool later = false;
        for (int q = k + 1; q < nn && !later; q++)
            later = c->group[q] < 0 && !early[q] && candidate(g->nodes[q]) &&
                    same_operand(first, g->nodes[q]);
        if (!later)
            continue;
        memset(dep + k, 0, (size_t)(nn - k) * sizeof *dep);
        int members = 1;
        c->group[k] = k;
        dep[k] = true;
        for (int q = k + 1; q < nn; q++) {
            const ir_node *n = g->nodes[q];
            for (int j = 0; j < n->nin && !dep[q]; j++)
                if (n->in[j] && !ir_node_is_input(n->in[j]) && dep[n->in[j]->id])
                    dep[q] = true;
            if (dep[q] || c->group[q] >= 0 || early[q] || !candidate(n) || !same_operand(first, n))
                continue;
            if (!ir_node_is_input(n->in[0]) && dep[n->in[0]->id])
                continue;
            c->group[q] = k;
            dep[q] = true;
            members++;
        }
        if (members < 2) {
            c->group[k] = -1;
            continue;
        }
        (*ngroups)++;
        for (int q = k; q < nn; q++)
            if (c->group[q] == k)
                mark_cone(g, early, g->nodes[q]->in[0]);
    }
    free(dep);
    free(early);
    return 0;
}

/* Old n re-added with its inputs mapped (hash-consing makes the rebuild
 * return this same node when it reaches n). */
static ir_node *build_old(ps_builder *b, mm_ctx *c, const ir_node *n)
{
    ir_node *small[16] = {0}, **in = small;
    if (n->nin > 16 && !(in = calloc((size_t)n->nin, sizeof *in)))
        return ps_b_fail(b, "out of memory");
    for (int j = 0; j < n->nin; j++)
        in[j] = n->in[j] ? c->map[ir_slot(c->g, n->in[j])] : NULL;
    ir_attrs a;
    ir_node_attrs(n, &a);
    ir_node *r = ps_b_op(b, n->op, in, n->nin, &a);
    if (in != small)
        free(in);
    return r;
}

/* The new node for old root, building it and the nodes it needs now if the
 * rebuild has not reached them yet: a post-order walk on an explicit stack
 * (a long unrolled recurrence is too deep to recurse); the graph being
 * acyclic, no node is on the stack twice. */
static ir_node *new_of(ps_builder *b, mm_ctx *c, const ir_node *root)
{
    const ir_graph *g = c->g;
    if (c->map[ir_slot(g, root)])
        return c->map[ir_slot(g, root)];
    int sp = 0;
    c->stack[sp++] = root;
    while (sp > 0) {
        const ir_node *n = c->stack[sp - 1];
        const ir_node *next = NULL;
        for (int j = 0; j < n->nin && !next; j++)
            if (n->in[j] && !c->map[ir_slot(g, n->in[j])])
                next = n->in[j];
        if (next) {
            c->stack[sp++] = next;
            continue;
        }
        if (!(c->map[ir_slot(g, n)] = build_old(b, c, n)))
            return NULL;
        sp--;
    }
    return c->map[ir_slot(g, root)];
}

/* The dim-0 slice x is of (through an optional reshape to 2-D): its source,
 * start and end, or false. */
static bool row_slice(const ir_node *x, const ir_node **src, int64_t *s, int64_t *e)
{
    const ir_node *v = x->op == OP_reshape ? x->in[0] : x;
    if (v->op != OP_slice || v->attrs[0].i[0] != 0 || v->attrs[3].i[0] != 1)
        return false;
    *src = v->in[0];
    *s = v->attrs[1].i[0];
    *e = v->attrs[2].i[0];
    return is_static(&(*src)->type);
}

/* The members' left operands stacked along rows: a view of their common
 * source when they are its consecutive dim-0 slices, else a cat. */
static ir_node *stacked(ps_builder *b, mm_ctx *c, const ir_node *const *mem, int nm, int64_t rows)
{
    const ir_node *src = NULL;
    int64_t s0 = 0, end = 0;
    bool view = true;
    for (int i = 0; i < nm && view; i++) {
        const ir_node *si;
        int64_t s, e;
        if (!row_slice(mem[i]->in[0], &si, &s, &e) || (i > 0 && (si != src || s != end)))
            view = false;
        src = si;
        s0 = i == 0 ? s : s0;
        end = e;
    }
    int64_t k = mem[0]->in[0]->type.shape[1];
    if (view) {
        ir_attrs a = {0};
        ir_attr_int(&a.a[0], 0);
        ir_attr_int(&a.a[1], s0);
        ir_attr_int(&a.a[2], end);
        ir_attr_int(&a.a[3], 1);
        ir_node *sl = new_of(b, c, src);
        sl = ps_b_op(b, OP_slice, &sl, 1, &a);
        return ps_b_reshape(b, sl, (int64_t[]){rows, k}, 2);
    }
    ir_node **in = calloc((size_t)nm, sizeof *in);
    if (!in)
        return ps_b_fail(b, "out of memory");
    for (int i = 0; i < nm; i++)
        if (!(in[i] = new_of(b, c, mem[i]->in[0]))) {
            free(in);
            return NULL;
        }
    ir_attrs a = {0};
    ir_attr_int(&a.a[0], 0);
    ir_node *r = ps_b_op(b, OP_cat, in, nm, &a);
    free(in);
    return r;
}

/* Builds group f's merged matmul and every member's slice of it. */
static int build_group(ps_builder *b, mm_ctx *c, int f, ir_node *w)
{
    const ir_graph *g = c->g;
    int nm = 0;
    for (int k = f; k < g->nnodes; k++)
        nm += c->group[k] == f;
    const ir_node **mem = calloc((size_t)nm, sizeof *mem);
    if (!mem) {
        ps_b_fail(b, "out of memory");
        return -1;
    }
    int64_t rows = 0;
    nm = 0;
    for (int k = f; k < g->nnodes; k++)
        if (c->group[k] == f) {
            mem[nm++] = g->nodes[k];
            rows += g->nodes[k]->in[0]->type.shape[0];
        }
    ir_node *in[2] = {stacked(b, c, mem, nm, rows), w};
    ir_node *m = ps_b_op(b, OP_matmul, in, 2, NULL);
    int64_t r = 0;
    for (int i = 0; i < nm && m; i++) {
        int64_t mi = mem[i]->in[0]->type.shape[0];
        ir_attrs a = {0};
        ir_attr_int(&a.a[0], 0);
        ir_attr_int(&a.a[1], r);
        ir_attr_int(&a.a[2], r + mi);
        ir_attr_int(&a.a[3], 1);
        c->merged[mem[i]->id] = ps_b_op(b, OP_slice, &m, 1, &a);
        r += mi;
    }
    free(mem);
    return m ? 0 : -1;
}

static ir_node *hook(ps_builder *b, const ir_node *old, ir_node *const *in, void *ctx)
{
    mm_ctx *c = ctx;
    for (int k = 0; k < c->g->ninputs && !c->map[k]; k++)   /* the rebuild's inputs */
        c->map[k] = b->g->inputs[k];
    int f = c->group[old->id];
    ir_node *r;
    if (f < 0) {
        ir_attrs a;
        ir_node_attrs(old, &a);
        r = ps_b_op(b, old->op, in, old->nin, &a);
    } else {
        if (!c->merged[old->id] && build_group(b, c, f, in[1]) != 0)
            return NULL;
        r = c->merged[old->id];
    }
    c->map[ir_slot(c->g, old)] = r;
    return r;
}

ir_graph *ps_merge_matmuls(ir_graph *g, char *err, size_t nerr)
{
    mm_ctx c = {.g = g};
    size_t ns = (size_t)ir_nslots(g) + 1, nn = (size_t)g->nnodes + 1;
    c.group = malloc(nn * sizeof *c.group);
    int ngroups = 0;
    if (!c.group || find_groups(&c, &ngroups) != 0) {
        free(c.group);
        snprintf(err, nerr, "out of memory");
        return NULL;
    }
    if (ngroups == 0) {
        free(c.group);
        return g;
    }
    ir_graph *h = NULL;
    c.map = calloc(ns, sizeof *c.map);
    c.merged = calloc(nn, sizeof *c.merged);
    c.stack = malloc(ns * sizeof *c.stack);
    if (c.map && c.merged && c.stack)
        h = ps_rebuild(g, NULL, hook, &c, err, nerr);
    else
        snprintf(err, nerr, "out of memory");
    free(c.map);
    free(c.merged);
    free(c.stack);
    free(c.group);
    return h;
}
