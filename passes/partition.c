/* partition.c - splits a joint forward/backward graph into a forward graph
 * that also returns the values the backward needs and a backward graph that
 * reads them instead of computing the forward again (partition.h has the
 * contract and the cost rule).
 *
 *   joint --(which values read a tangent)--> forward nodes | backward nodes
 *         --(the forward values backward nodes read, in graph order:
 *            save, or recompute from the cone of pointwise producers)-->
 *         forward: the forward nodes its outputs and the saved values need
 *         backward: the backward nodes, the recomputed ones, saved inputs
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition.h"

enum { UNDECIDED, SAVED, RECOMP };

typedef struct part {
    const ir_graph *g;
    int nfwd;
    bool *dep;         /* per slot: reads a tangent (directly or not) */
    bool *stored;      /* per op node: the forward stores it anyway */
    unsigned char *st; /* per op node: UNDECIDED, SAVED, RECOMP */
    int *mark;         /* per op node: the last cone walk that met it */
    int walk;
    ir_node **stack;
    int64_t saved_bytes;
    const int64_t *symval;   /* the traced size of each symbol, or NULL */
    FILE *rep;
} part;

bool ps_is_tangent(const ir_node *n)
{
    return ir_node_is_input(n) && n->name && !strncmp(n->name, "tangent", 7);
}

/* Pointwise values, views, layout moves (copy, pad, flip, cat) and
 * full_like (of its input's shape: the sizes of symbolic dims, vjp.c):
 * memory bound, cheap to compute again inside a fused kernel or a copy.
 * Not eq and ne: they compare a value with one derived from it (amax's
 * ties: x == max(x)), and x computed again in another kernel may round
 * otherwise than the x the saved max came from (a reciprocal multiplied
 * for a division): the mask is saved, a byte an element. */
static bool cheap(ir_op op)
{
    if (op == OP_eq || op == OP_ne)
        return false;
    if (op == OP_copy || op == OP_pad || op == OP_flip || op == OP_cat || op == OP_full_like)
        return true;
    switch (ir_ops[op].kind) {
    case IR_UNARY:
    case IR_BINARY:
    case IR_TERNARY:
    case IR_POINTWISE:
    case IR_VIEW:
    case IR_CREATE: return true;
    default: return false;
    }
}

/* Bytes of a value at the traced sizes of its symbolic dims (without them
 * a symbolic dim counts as 1: the rule compares values of one graph, where
 * the same symbols appear on both sides). */
static int64_t bytes_of(const part *p, const ir_node *n)
{
    int64_t e = tj_dtype_size(n->type.dtype);
    for (int d = 0; d < n->type.ndim; d++) {
        int64_t s = n->type.shape[d];
        e *= !IR_IS_SYM(s) ? s : p->symval ? ir_dim_at(s, p->symval) : 1;
    }
    return e;
}

/* What moving v between the plans costs: once when stored anyway. */
static int64_t move_cost(const part *p, const ir_node *v)
{
    return bytes_of(p, v) * (p->stored[v->id] ? 1 : 2);
}

static void report(part *p, const char *what, const ir_node *n, const char *why)
{
    char t[IR_TYPE_BUF];
    fprintf(p->rep, "%s %%%d = %s %s (%lld bytes)%s%s\n", what, n->id, ir_ops[n->op].name,
            ir_type_fmt(&n->type, t, sizeof t), (long long)bytes_of(p, n), why[0] ? ": " : "", why);
}

static void save(part *p, const ir_node *n, const char *why)
{
    if (p->st[n->id] == SAVED)
        return;
    p->st[n->id] = SAVED;
    p->saved_bytes += bytes_of(p, n);
    report(p, "saved", n, why);
}

/* Walks the cone of pointwise/view producers of v (v excluded when first is
 * false); apply: mark its inside RECOMP and save its edge. Returns the cost
 * of the edge (values not saved yet), or -1 when the cone is too large. */
static int64_t cone(part *p, const ir_node *v, bool apply)
{
    int sp = 0, inside = 0;
    int64_t cost = 0;
    p->walk++;
    p->stack[sp++] = (ir_node *)v;
    p->mark[v->id] = p->walk;
    while (sp > 0) {
        const ir_node *n = p->stack[--sp];
        for (int j = 0; j < n->nin; j++) {
            const ir_node *u = n->in[j];
            if (!u || ir_node_is_input(u) || p->mark[u->id] == p->walk)
                continue;
            p->mark[u->id] = p->walk;
            if (p->st[u->id] != UNDECIDED)
                continue;   /* saved, or computed again for another value: free */
            if (!cheap(u->op) || p->stored[u->id]) {   /* stored anyway: stop there */
                if (apply)
                    save(p, u, "read by a recomputed value");
                cost += move_cost(p, u);
                continue;
            }
            if (++inside > PS_PARTITION_MAX_CHAIN)
                return -1;
            if (apply)
                p->st[u->id] = RECOMP;
            p->stack[sp++] = (ir_node *)u;
        }
    }
    return cost;
}

/* Decides one forward value the backward reads. */
static void decide(part *p, const ir_node *v)
{
    if (p->st[v->id] != UNDECIDED)
        return;
    if (ir_ops[v->op].kind == IR_VIEW) {
        /* a view is free: decide what it views, then view it again */
        const ir_node *b = v;
        while (ir_node_is_view(b)) {
            p->st[b->id] = RECOMP;
            b = b->in[0];
        }
        if (!ir_node_is_input(b))
            decide(p, b);
        return;
    }
    if (!cheap(v->op)) {
        save(p, v, "");
        return;
    }
    int64_t keep = move_cost(p, v), redo = cone(p, v, false);
    char why[128];
    if (redo < 0 || redo >= keep) {
        if (redo < 0)
            snprintf(why, sizeof why, "more than %d producers to recompute", PS_PARTITION_MAX_CHAIN);
        else
            snprintf(why, sizeof why, "recomputing moves %lld bytes, saving %lld", (long long)redo,
                     (long long)keep);
        save(p, v, why);
        return;
    }
    p->st[v->id] = RECOMP;
    cone(p, v, true);
}

/* The forward's classification: dep, stored. 0 or -1. */
static int classify(part *p, char *err, size_t nerr)
{
    const ir_graph *g = p->g;
    for (int k = 0; k < g->ninputs; k++)
        p->dep[k] = ps_is_tangent(g->inputs[k]);
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        bool d = false;
        for (int j = 0; j < n->nin; j++)
            d |= n->in[j] && p->dep[ir_slot(g, n->in[j])];
        p->dep[g->ninputs + k] = d;
        for (int j = 0; !d && !cheap(n->op) && j < n->nin; j++)
            if (n->in[j] && !ir_node_is_input(n->in[j]))
                p->stored[n->in[j]->id] = true;
    }
    for (int k = 0; k < g->noutputs; k++) {
        const ir_node *o = g->outputs[k];
        if (k < p->nfwd && p->dep[ir_slot(g, o)]) {
            snprintf(err, nerr, "partition: forward output %d reads a tangent", k);
            return -1;
        }
        if (k < p->nfwd && !ir_node_is_input(o))
            p->stored[o->id] = true;
    }
    return 0;
}

/* Copies op node n into h with its inputs mapped; NULL with err set. */
static ir_node *copy(ir_graph *h, const ir_node *n, ir_node **map, const ir_graph *g, char *err,
                     size_t nerr)
{
    ir_node *in[256], **ins = n->nin <= 256 ? in : malloc(sizeof *ins * (size_t)n->nin);
    if (!ins) {
        snprintf(err, nerr, "out of memory");
        return NULL;
    }
    for (int j = 0; j < n->nin; j++)
        ins[j] = n->in[j] ? map[ir_slot(g, n->in[j])] : NULL;
    ir_attrs a;
    ir_node_attrs(n, &a);
    ir_node *r = ir_graph_add(h, n->op, ins, n->nin, &a);
    if (!r)
        snprintf(err, nerr, "partition: %s", ir_graph_error(h));
    else if (n->file && !r->file) {
        r->file = ir_arena_strndup(&h->arena, n->file, strlen(n->file));   /* h's own copy */
        r->line = n->line;
    }
    if (ins != in)
        free(ins);
    return r;
}

/* The graph named <g>_<suffix> with g's inputs (tangents when with_tangents). */
static ir_graph *start(const ir_graph *g, const char *suffix, bool with_tangents, ir_node **map,
                       char *err, size_t nerr)
{
    char name[256];
    snprintf(name, sizeof name, "%s_%s", g->name, suffix);
    ir_graph *h = ir_graph_new(name);
    for (int k = 0; h && k < g->ninputs; k++) {
        const ir_node *x = g->inputs[k];
        if (!with_tangents && ps_is_tangent(x))
            continue;
        if (!(map[k] = ir_graph_input(h, x->name, &x->type, x->param))) {
            snprintf(err, nerr, "partition: %s", ir_graph_error(h));
            ir_graph_free(h);
            return NULL;
        }
    }
    if (!h)
        snprintf(err, nerr, "out of memory");
    return h;
}

static ir_graph *build_forward(part *p, char *err, size_t nerr)
{
    const ir_graph *g = p->g;
    ir_node **map = calloc((size_t)ir_nslots(g) + 1, sizeof *map);
    bool *need = calloc((size_t)g->nnodes + 1, sizeof *need);
    ir_node **outs = calloc((size_t)g->noutputs + (size_t)g->nnodes + 1, sizeof *outs);
    ir_graph *h = map && need && outs ? start(g, "forward", false, map, err, nerr) : NULL;
    if (!map || !need || !outs)
        snprintf(err, nerr, "out of memory");
    for (int k = 0; h && k < p->nfwd; k++)
        if (!ir_node_is_input(g->outputs[k]))
            need[g->outputs[k]->id] = true;
    for (int k = 0; h && k < g->nnodes; k++)
        need[k] |= p->st[k] == SAVED;
    for (int k = g->nnodes - 1; h && k >= 0; k--)
        for (int j = 0; need[k] && j < g->nodes[k]->nin; j++) {
            const ir_node *u = g->nodes[k]->in[j];
            if (u && !ir_node_is_input(u))
                need[u->id] = true;
        }
    for (int k = 0; h && k < g->nnodes; k++)
        if (need[k] && !(map[g->ninputs + k] = copy(h, g->nodes[k], map, g, err, nerr))) {
            ir_graph_free(h);
            h = NULL;
        }
    int n = 0;
    for (int k = 0; h && k < p->nfwd; k++)
        outs[n++] = map[ir_slot(g, g->outputs[k])];
    for (int k = 0; h && k < g->nnodes; k++)
        if (p->st[k] == SAVED)
            outs[n++] = map[g->ninputs + k];
    if (h && ir_graph_set_outputs(h, outs, n) != 0) {
        snprintf(err, nerr, "partition: %s", ir_graph_error(h));
        ir_graph_free(h);
        h = NULL;
    }
    free(map);
    free(need);
    free(outs);
    return h;
}

static ir_graph *build_backward(part *p, char *err, size_t nerr)
{
    const ir_graph *g = p->g;
    ir_node **map = calloc((size_t)ir_nslots(g) + 1, sizeof *map);
    bool *need = calloc((size_t)g->nnodes + 1, sizeof *need);
    ir_node **outs = calloc((size_t)g->noutputs + 1, sizeof *outs);
    ir_graph *h = map && need && outs ? start(g, "backward", true, map, err, nerr) : NULL;
    if (!map || !need || !outs)
        snprintf(err, nerr, "out of memory");
    for (int k = 0, s = 0; h && k < g->nnodes; k++) {
        if (p->st[k] != SAVED)
            continue;
        char name[32];
        snprintf(name, sizeof name, "saved%d", s++);
        if (!(map[g->ninputs + k] = ir_graph_input(h, name, &g->nodes[k]->type, false))) {
            snprintf(err, nerr, "partition: %s", ir_graph_error(h));
            ir_graph_free(h);
            h = NULL;
        }
    }
    for (int k = p->nfwd; h && k < g->noutputs; k++)
        if (!ir_node_is_input(g->outputs[k]))
            need[g->outputs[k]->id] = true;
    for (int k = g->nnodes - 1; h && k >= 0; k--) {
        if (!need[k] || p->st[k] == SAVED)
            continue;
        for (int j = 0; j < g->nodes[k]->nin; j++) {
            const ir_node *u = g->nodes[k]->in[j];
            if (u && !ir_node_is_input(u))
                need[u->id] = true;
        }
    }
    for (int k = 0; h && k < g->nnodes; k++) {
        if (!need[k] || p->st[k] == SAVED)
            continue;
        if (!(map[g->ninputs + k] = copy(h, g->nodes[k], map, g, err, nerr))) {
            ir_graph_free(h);
            h = NULL;
        }
    }
    for (int k = p->nfwd; h && k < g->noutputs; k++)
        outs[k - p->nfwd] = map[ir_slot(g, g->outputs[k])];
    if (h && ir_graph_set_outputs(h, outs, g->noutputs - p->nfwd) != 0) {
        snprintf(err, nerr, "partition: %s", ir_graph_error(h));
        ir_graph_free(h);
        h = NULL;
    }
    free(map);
    free(need);
    free(outs);
    return h;
}

/* Decides every forward value the backward reads, in graph order. */
static void decide_all(part *p)
{
    const ir_graph *g = p->g;
    bool *read = calloc((size_t)g->nnodes + 1, sizeof *read);
    if (!read)
        return;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int j = 0; p->dep[g->ninputs + k] && j < n->nin; j++)
            if (n->in[j] && !ir_node_is_input(n->in[j]) && !p->dep[ir_slot(g, n->in[j])])
                read[n->in[j]->id] = true;
    }
    for (int k = p->nfwd; k < g->noutputs; k++) {
        const ir_node *o = g->outputs[k];
        if (!ir_node_is_input(o) && !p->dep[ir_slot(g, o)])
            read[o->id] = true;
    }
    for (int k = 0; k < g->nnodes; k++)
        if (read[k])
            decide(p, g->nodes[k]);
    free(read);
}

int ps_partition_joint(const ir_graph *g, int nfwd, const int64_t *symval, ps_partition *out, char *err,
                       size_t nerr)
{
    memset(out, 0, sizeof *out);
    if (nfwd < 0 || nfwd >= g->noutputs) {
        snprintf(err, nerr, "partition: %d forward outputs of %d (the backward needs one)", nfwd,
                 g->noutputs);
        return -1;
    }
    part p = {.g = g, .nfwd = nfwd, .symval = symval};
    size_t n = (size_t)g->nnodes + 1;
    char *text = NULL;
    size_t len = 0;
    p.dep = calloc((size_t)ir_nslots(g) + 1, sizeof *p.dep);
    p.stored = calloc(n, sizeof *p.stored);
    p.st = calloc(n, sizeof *p.st);
    p.mark = calloc(n, sizeof *p.mark);
    p.stack = calloc(n, sizeof *p.stack);
    p.rep = open_memstream(&text, &len);
    int rc = -1;
    if (!p.dep || !p.stored || !p.st || !p.mark || !p.stack || !p.rep) {
        snprintf(err, nerr, "out of memory");
        goto out;
    }
    if (classify(&p, err, nerr) != 0)
        goto out;
    decide_all(&p);
    for (int k = 0; k < g->nnodes; k++) {
        if (p.st[k] == SAVED)
            out->nsaved++;
        ir_kind kind = ir_ops[g->nodes[k]->op].kind;
        if (p.st[k] == RECOMP && kind != IR_VIEW && kind != IR_CREATE) {   /* free ones unlisted */
            out->nrecomputed++;
            report(&p, "recomputed", g->nodes[k], "");
        }
    }
    out->saved_bytes = p.saved_bytes;
    if (!(out->fwd = build_forward(&p, err, nerr)) || !(out->bwd = build_backward(&p, err, nerr)))
        goto out;
    rc = 0;
out:
    if (p.rep)
        fclose(p.rep);
    if (rc == 0 && !text) {
        snprintf(err, nerr, "out of memory");
        rc = -1;
    }
    if (rc == 0)
        out->report = text;
    else {
        free(text);
        ps_partition_free(out);
    }
    free(p.dep);
    free(p.stored);
    free(p.st);
    free(p.mark);
    free(p.stack);
    return rc;
}

void ps_partition_free(ps_partition *p)
{
    ir_graph_free(p->fwd);
    ir_graph_free(p->bwd);
    free(p->report);
    memset(p, 0, sizeof *p);
}
