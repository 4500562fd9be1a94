/* partition.c - splits a joint forward/backward graph into a forward graph
 * that also returns the values the backward needs and a backward graph that
 * reads them instead of computing the forward again (partition.h has the
 * contract and the cost rule).
 *
 *   joint --(which values read a tangent)--> forward nodes | backward nodes
 *         --(a minimum cut between what the forward must compute and
 *            what the backward reads, in bytes moved: the values it
 *            crosses are saved, the backward computes the rest again)-->
 *         forward: the forward nodes its outputs and the saved values need
 *         backward: the backward nodes, the recomputed ones, saved inputs
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mincut.h"
#include "partition.h"

enum { UNDECIDED, SAVED, RECOMP };

typedef struct part {
    const ir_graph *g;
    int nfwd;
    bool *dep;         /* per slot: reads a tangent (directly or not) */
    bool *stored;      /* per op node: the forward stores it anyway */
    unsigned char *st; /* per op node: UNDECIDED, SAVED, RECOMP */
    int64_t saved_bytes;
    int64_t moved;           /* the cut's bytes */
    const int64_t *symval;   /* the traced size of each symbol, or NULL */
    const int *region;       /* per op node: its checkpoint (0: none, -1: the backward's), or NULL */
    bool *escapes;           /* per op node of a checkpoint: a forward value outside it reads it */
    bool *boundary;          /* per op node: a checkpoint's input (made outside it): saved, as
                              * the checkpoint is computed again from its inputs */
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

/* The network: a source, a sink and each forward op node k as two vertices
 * joined by what saving it moves (a view: infinite, what it views is saved
 * instead); a node that must be computed in the forward hangs from the source,
 * a value the backward reads hangs the sink; producers feed readers
 * (infinite). A cut separates what the forward computes from what the
 * backward needs; the node edges it crosses are the saved values. */
enum { SOURCE, SINK };
static int vin(int k) { return 2 + 2 * k; }
static int vout(int k) { return 3 + 2 * k; }

/* Whether forward op node v may be computed again in the backward: a cheap
 * value at most PS_PARTITION_MAX_CHAIN pointwise producers deep (depth[], of
 * the nodes before it, is filled in for v). */
static bool recomputable(const ir_node *v, int *depth)
{
    bool view = ir_ops[v->op].kind == IR_VIEW;
    int d = 0;
    for (int j = 0; j < v->nin; j++) {
        const ir_node *u = v->in[j];
        if (u && !ir_node_is_input(u) && depth[u->id] > d)
            d = depth[u->id];
    }
    depth[v->id] = !cheap(v->op) ? 0 : view ? d : d + 1;
    return cheap(v->op) && (view || depth[v->id] <= PS_PARTITION_MAX_CHAIN);
}

static const char *why_saved(const part *p, const ir_node *v, const bool *read, const int *depth,
                             char *buf, size_t n)
{
    if (!cheap(v->op))
        return read[v->id] ? "" : "read by a recomputed value";
    if (depth[v->id] > PS_PARTITION_MAX_CHAIN)
        snprintf(buf, n, "more than %d pointwise producers in a chain", PS_PARTITION_MAX_CHAIN);
    else if (p->stored[v->id])
        snprintf(buf, n, "moves %lld bytes, the forward stores it anyway",
                 (long long)move_cost(p, v));
    else
        snprintf(buf, n, "moves %lld bytes, written and read for the backward",
                 (long long)move_cost(p, v));
    return buf;
}

/* Whether v reads a random draw: its value (a dropout's mask) may be saved
 * in a checkpoint, instead of the draw. */
static bool reads_draw(const ir_node *v)
{
    for (int j = 0; j < v->nin; j++)
        if (v->in[j] && !ir_node_is_input(v->in[j]) && ir_op_draws(v->in[j]->op))
            return true;
    return false;
}

/* What computing v again costs beside bytes: 1 for arithmetic, 0 for a
 * view, a layout move or a constant. */
static int64_t work(const ir_node *v)
{
    ir_kind kind = ir_ops[v->op].kind;
    bool move = kind == IR_VIEW || kind == IR_CREATE || v->op == OP_copy || v->op == OP_pad ||
                v->op == OP_flip || v->op == OP_cat || v->op == OP_full_like;
    return move ? 0 : 1;
}

/* Saves the values of a minimum cut. Capacities are bytes times scale (more
 * than the graph's node count) plus, for each value computed again, its
 * work(): of the cuts that move the fewest bytes, one that computes the
 * fewest values again; of those, the one nearest the source (the fewest
 * values held between the plans, as AOTAutograd's). 0 or -1. */
static int cut(part *p, const bool *read, const bool *mat, char *err, size_t nerr)
{
    const ir_graph *g = p->g;
    int n = g->nnodes, rc = 0;
    int64_t scale = (int64_t)n + 1;
    int *depth = calloc((size_t)n + 1, sizeof *depth);
    bool *side = calloc(2 * (size_t)n + 2, sizeof *side);
    ps_flow *f = ps_flow_new(2 * n + 2);
    if (!depth || !side || !f)
        rc = -1;
    for (int k = 0; rc == 0 && k < n; k++) {
        const ir_node *v = g->nodes[k];
        if (p->dep[g->ninputs + k])
            continue;
        bool view = ir_ops[v->op].kind == IR_VIEW, can = recomputable(v, depth);
        /* inside a checkpoint (but a random draw, rand or dropout): computed
         * again, whatever it is; saved only where a value outside the
         * checkpoint reads it */
        bool forced = p->region && p->region[k] > 0 && !ir_op_draws(v->op);
        bool inner = forced && !p->escapes[k] && !reads_draw(v);
        rc |= ps_flow_edge(f, vin(k), vout(k), view || inner ? PS_FLOW_INF : move_cost(p, v) * scale);
        /* an edge from the source is cut when v is computed again: its work,
         * and its bytes written and read where a contraction reads it */
        int64_t again = work(v) + (mat[k] && !forced ? 2 * bytes_of(p, v) * scale : 0);
        if ((!can && !forced) || p->boundary[k])
            rc |= ps_flow_edge(f, SOURCE, vin(k), PS_FLOW_INF);
        else if (again > 0)
            rc |= ps_flow_edge(f, SOURCE, vin(k), again);
        if (read[k])
            rc |= ps_flow_edge(f, vout(k), SINK, PS_FLOW_INF);
        for (int j = 0; j < v->nin; j++)
            if (v->in[j] && !ir_node_is_input(v->in[j]))
                rc |= ps_flow_edge(f, vout(v->in[j]->id), vin(k), PS_FLOW_INF);
    }
    int64_t moved = rc == 0 ? ps_flow_max(f, SOURCE, SINK) : -1;
    if (moved < 0)
        snprintf(err, nerr, "out of memory");
    else if (moved >= PS_FLOW_INF)   /* every path crosses a node edge: cannot happen */
        snprintf(err, nerr, "partition: no cut of finite size");
    else {
        ps_flow_source_side(f, SOURCE, side);
        p->moved = moved / scale;
    }
    for (int k = 0; moved >= 0 && moved < PS_FLOW_INF && k < n; k++) {
        char why[128];
        if (!p->dep[g->ninputs + k] && side[vin(k)] && !side[vout(k)])
            save(p, g->nodes[k], why_saved(p, g->nodes[k], read, depth, why, sizeof why));
    }
    ps_flow_free(f);
    free(side);
    free(depth);
    return moved >= 0 && moved < PS_FLOW_INF ? 0 : -1;
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

/* need[k]: op node k is computed in the backward or saved for it (from the
 * backward's outputs back, through values not saved). */
static void backward_needs(const part *p, bool *need)
{
    const ir_graph *g = p->g;
    for (int k = p->nfwd; k < g->noutputs; k++)
        if (!ir_node_is_input(g->outputs[k]))
            need[g->outputs[k]->id] = true;
    for (int k = g->nnodes - 1; k >= 0; k--) {
        if (!need[k] || p->st[k] == SAVED)
            continue;
        for (int j = 0; j < g->nodes[k]->nin; j++) {
            const ir_node *u = g->nodes[k]->in[j];
            if (u && !ir_node_is_input(u))
                need[u->id] = true;
        }
    }
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
    if (h)
        backward_needs(p, need);
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

/* mat[k]: forward op node k is read whole by a backward matmul or conv2d
 * (through views): a contraction reads its operands from memory, so computed
 * again the value is written and read in the backward, where a pointwise
 * reader fuses it. */
static void materialized(const part *p, bool *mat)
{
    const ir_graph *g = p->g;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        if (!p->dep[g->ninputs + k] || ir_ops[n->op].kind != IR_CONTRACT)
            continue;
        for (int j = 0; j < n->nin; j++) {
            const ir_node *u = n->in[j];
            while (u && ir_node_is_view(u))
                u = u->in[0];
            if (u && !ir_node_is_input(u) && !p->dep[ir_slot(g, u)])
                mat[u->id] = true;
        }
    }
}

/* Decides every forward value the backward reads: saved (the cut) or
 * computed again (the forward nodes the backward needs otherwise). */
static int decide_all(part *p, char *err, size_t nerr)
{
    const ir_graph *g = p->g;
    bool *read = calloc((size_t)g->nnodes + 1, sizeof *read);
    bool *need = calloc((size_t)g->nnodes + 1, sizeof *need);
    bool *mat = calloc((size_t)g->nnodes + 1, sizeof *mat);
    int rc = -1;
    if (!read || !need || !mat) {
        snprintf(err, nerr, "out of memory");
        goto out;
    }
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int j = 0; p->dep[g->ninputs + k] && j < n->nin; j++)
            if (n->in[j] && !ir_node_is_input(n->in[j]) && !p->dep[ir_slot(g, n->in[j])])
                read[n->in[j]->id] = true;
    }
    for (int k = p->nfwd; k < g->noutputs; k++) {
        const ir_node *o = g->outputs[k];
        if (!ir_node_is_input(o) && !p->dep[ir_slot(g, o)])
            read[o->id] = mat[o->id] = true;
    }
    materialized(p, mat);
    for (int k = 0; p->region && k < g->nnodes; k++) {   /* checkpoints' values read outside */
        const ir_node *n = g->nodes[k];
        for (int j = 0; !p->dep[g->ninputs + k] && p->region[k] >= 0 && j < n->nin; j++) {
            const ir_node *u = n->in[j];
            if (!u || ir_node_is_input(u) || p->region[u->id] == p->region[k])
                continue;
            if (p->region[u->id] > 0)
                p->escapes[u->id] = true;
            while (p->region[k] > 0 && u && !ir_node_is_input(u) && ir_node_is_view(u))
                u = u->in[0];   /* a view is taken again: what it views */
            if (p->region[k] > 0 && u && !ir_node_is_input(u))
                p->boundary[u->id] = true;
        }
    }
    for (int k = 0; p->region && k < p->nfwd; k++)
        if (!ir_node_is_input(g->outputs[k]))
            p->escapes[g->outputs[k]->id] = true;
    if (cut(p, read, mat, err, nerr) != 0)
        goto out;
    backward_needs(p, need);
    for (int k = 0; k < g->nnodes; k++)
        if (need[k] && !p->dep[g->ninputs + k] && p->st[k] != SAVED)
            p->st[k] = RECOMP;
    rc = 0;
out:
    free(read);
    free(need);
    free(mat);
    return rc;
}
int ps_partition_joint(const ir_graph *g, int nfwd, const int64_t *symval, const int *region,
                       ps_partition *out, char *err, size_t nerr)
{
    memset(out, 0, sizeof *out);
    if (nfwd < 0 || nfwd >= g->noutputs) {
        snprintf(err, nerr, "partition: %d forward outputs of %d (the backward needs one)", nfwd,
                 g->noutputs);
        return -1;
    }
    part p = {.g = g, .nfwd = nfwd, .symval = symval, .region = region};
    size_t n = (size_t)g->nnodes + 1;
    char *text = NULL;
    size_t len = 0;
    p.dep = calloc((size_t)ir_nslots(g) + 1, sizeof *p.dep);
    p.stored = calloc(n, sizeof *p.stored);
    p.st = calloc(n, sizeof *p.st);
    p.escapes = calloc(n, sizeof *p.escapes);
    p.boundary = calloc(n, sizeof *p.boundary);
    p.rep = open_memstream(&text, &len);
    int rc = -1;
    if (!p.dep || !p.stored || !p.st || !p.escapes || !p.boundary || !p.rep) {
        snprintf(err, nerr, "out of memory");
        goto out;
    }
    if (classify(&p, err, nerr) != 0)
        goto out;
    if (decide_all(&p, err, nerr) != 0)
        goto out;
    for (int k = 0; k < g->nnodes; k++) {
        if (p.st[k] == SAVED)
            out->nsaved++;
        ir_kind kind = ir_ops[g->nodes[k]->op].kind;
        if (p.st[k] == RECOMP && kind != IR_VIEW && kind != IR_CREATE) {   /* free ones unlisted */
            out->nrecomputed++;
            report(&p, "recomputed", g->nodes[k], "");
        }
    }
    fprintf(p.rep, "the cut: %lld bytes written and read for the backward\n", (long long)p.moved);
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
    free(p.escapes);
    free(p.boundary);
    return rc;
}

void ps_partition_free(ps_partition *p)
{
    ir_graph_free(p->fwd);
    ir_graph_free(p->bwd);
    free(p->report);
    memset(p, 0, sizeof *p);
}
