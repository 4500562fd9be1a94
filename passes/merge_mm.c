/* merge_mm.c - merge_matmuls: GEMMs with few rows that share their right
 * operand and do not depend on each other become one taller GEMM.
 *
 * An unrolled RNN projects every step's input through the same weight
 * (x_t @ W_ih^T, t = 0..T-1) before the recurrence: T GEMMs of m rows, each
 * packing W again and each too short to keep a core's FMA units busy. One GEMM
 * of T*m rows packs W once and runs at the rate of a taller one; each old
 * result is a row slice of the merged one (a view, no copy).
 *
 *   matched   2-D matmuls of one float dtype reading the same right operand
 *             node [K, N] (static sizes), each with at most MM_MAX_ROWS rows,
 *             whose left operands [m_i, K] depend on none of the group (a
 *             backward walk would find no member: checked by marking, in SSA
 *             order, every node that depends on a member); two or more.
 *   merged    left = the members' left operands stacked along rows: when they
 *             are consecutive dim-0 slices (step 1) of one value, optionally
 *             reshaped to [m_i, K], a reshape of one slice of that value (a
 *             view); otherwise a cat (one copy of the left operands, 1/N of
 *             the GEMM's work). The merged matmul is built where the first
 *             member stood, after the nodes its left operands need (moved
 *             earlier: they depend on no member, so nothing they read
 *             changes). Member i becomes slice(merged, 0, r_i, r_i + m_i).
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

/* Groups: ctx->group[id] = the first member's id for members of groups of two
 * or more, else -1. 0, or -1 out of memory. */
static int find_groups(mm_ctx *c, int *ngroups)
{
    const ir_graph *g = c->g;
    int nn = g->nnodes;
    bool *dep = calloc((size_t)nn + 1, sizeof *dep);   /* depends on a tentative member */
    int *count = calloc((size_t)nn + 1, sizeof *count);
    if (!dep || !count) {
        free(dep);
        free(count);
        return -1;
    }
    for (int k = 0; k < nn; k++)
        c->group[k] = -1;
    /* First pass: each candidate joins the group of the first earlier
     * candidate on the same right operand whose group its left operand does
     * not depend on. A node depending on members of several groups is marked
     * for each: dep bits per group would be exact; one bit per node is
     * conservative (a left operand depending on any member starts a new
     * group of its own). */
    for (int k = 0; k < nn; k++) {
        const ir_node *n = g->nodes[k];
        for (int j = 0; j < n->nin && !dep[k]; j++)
            if (n->in[j] && !ir_node_is_input(n->in[j]) && dep[n->in[j]->id])
                dep[k] = true;
        if (!candidate(n))
            continue;
        const ir_node *a = n->in[0];
        bool a_dep = !ir_node_is_input(a) && dep[a->id];
        if (!a_dep) {
            for (int p = 0; p < k; p++) {
                const ir_node *q = g->nodes[p];
                if (c->group[p] == p && q->in[1] == n->in[1] && q->in[0]->type.shape[1] ==
                                                                   a->type.shape[1]) {
                    c->group[k] = p;
                    count[p]++;
                    break;
                }
            }
        }
        if (c->group[k] < 0 && !a_dep) {
            c->group[k] = k;
            count[k] = 1;
        }
        if (c->group[k] >= 0)
            dep[k] = true;
    }
    *ngroups = 0;
    for (int k = 0; k < nn; k++) {
        int f = c->group[k];
        if (f >= 0 && count[f] < 2)
            c->group[k] = -1;
        else if (f == k)
            (*ngroups)++;
    }
    free(dep);
    free(count);
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
