/* reinplace.c - graph outputs stored straight into the graph inputs they
 * are written back to (sc_plans_set_into, sched_int.h), as Inductor
 * re-inplaces a copy_ into a graph input: a compiled training step's update
 * stores the new weight into the weight, and the caller copies nothing.
 *
 *   inputs sharing memory (a weight and a view of it the trace captured
 *     as a constant, the same tensor as an argument and a capture) form a
 *     group, as the call's inputs are (sc_input_groups): a read of any of
 *     them is a read of each
 *   per output o that the caller writes back into input x (into[j]):
 *     o is materialized by a kernel outside blocked regions, whose stored
 *       values no later step reads (they are outputs at most); no other
 *       output is o or a view of it, none is x's group or a view of it, no
 *       other output goes into x's group; x has o's dtype and shape and is
 *       contiguous
 *   those kernels move, in their order, to the end of the plan (the tail)
 *   then per candidate, in that order: no step after its kernel reads x or
 *       a view of x, and the kernel reads x through one buffer at most, at
 *       the element it stores (cg_launch_can_alias: element i from element
 *       i, nothing of x read after its element is stored) and nothing else
 *       of x's group; the kernel's
 *       loads of x then read the output buffer (cg_launch_alias), and the
 *       output buffer is x's memory (SC_INPUT, mem.c)
 *   the tail keeps the kernels with at least one store into an input; the
 *       others go back where they were (nothing after them read them)
 *
 * Per call, plan.c runs such a plan only for inputs grouped the same way
 * (else it builds another), and run.c makes every tensor the tail
 * stores before its first step: the writes into inputs are the last thing a
 * run does, and nothing after them can fail.
 */
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

/* The memory a slot owns, an input's group standing for the input. */
static int mem_of(const sc_plan *p, const int *grp, int o)
{
    return o >= 0 && o < p->ninputs ? grp[o] : o;
}

static void note(int *last, int o, int at)
{
    if (o >= 0 && last[o] < at)
        last[o] = at;
}

/* last[m] = at (when later) for the memory m of every value step i reads
 * (a view's owner for a view; a kernel's buffers name owners). */
static void note_reads(const ir_graph *g, const sc_plan *p, const int *grp, int i, int at, int *last)
{
    const step *s = &p->steps[i];
    if (s->kind == S_KERNEL) {
        for (int a = 0; a < s->launch->nargs; a++)
            if (!s->launch->k.bufs[a].out)
                note(last, mem_of(p, grp, s->launch->args[a].base), at);
        return;
    }
    const ir_node *nd = g->nodes[s->node];
    for (int j = 0; j < nd->nin; j++)
        if (nd->in[j])
            note(last, mem_of(p, grp, p->owner[ir_slot(g, nd->in[j])]), at);
}

/* Whether input x can hold output o: o's dtype and shape, contiguous. */
static bool input_fits(const sc_plan *p, int x, int o)
{
    const ir_type *tx = &p->types[x], *to = &p->types[o];
    if (tx->dtype != to->dtype || tx->ndim != to->ndim)
        return false;
    int64_t st[TJ_MAX_DIMS];
    rt_contiguous_strides(tx->ndim, tx->shape, st);
    for (int d = 0; d < tx->ndim; d++)
        if (tx->shape[d] != to->shape[d] || (tx->shape[d] > 1 && p->in_strides[x][d] != st[d]))
            return false;
    return true;
}

/* Whether the kernel of step i may move to the end: no later step reads
 * what it stores (last: each owner's last reader). */
static bool movable(const sc_plan *p, int i, const int *last)
{
    const cg_launch *l = p->steps[i].launch;
    for (int k = 0; k < l->nstore; k++)
        if (last[l->store_slot[k]] > i)
            return false;
    return true;
}

/* Per slot, the input output slot o may go into, or -1 (the rules above
 * the tail); last: each memory's last reader in step order. */
static void candidates(const ir_graph *g, const sc_plan *p, const int *into, const int *grp, const int *last,
                       int *cand, int *refs)
{
    for (int s = 0; s < p->nslots; s++)
        cand[s] = -1, refs[s] = 0;
    for (int j = 0; j < g->noutputs; j++) {   /* outputs naming each memory, writes into each */
        int o = p->owner[ir_slot(g, g->outputs[j])];
        if (o >= 0)
            refs[mem_of(p, grp, o)]++;
        if (into[j] >= 0 && into[j] < g->ninputs)
            refs[grp[into[j]]] += 1 << 16;
    }
    for (int j = 0; j < g->noutputs; j++) {
        int x = into[j], o = ir_slot(g, g->outputs[j]);
        if (x < 0 || x >= g->ninputs || o < g->ninputs || p->def[o] < 0 || p->owner[o] != o ||
            p->unplanned[o] || refs[o] != 1 || refs[grp[x]] != 1 << 16 || !input_fits(p, x, o))
            continue;
        const step *s = &p->steps[p->def[o]];
        if (s->kind == S_KERNEL && s->region < 0 && movable(p, p->def[o], last))
            cand[o] = x;
    }
}

/* Store o of the kernel at step i goes into input x, if the kernel reads x
 * at most through one buffer that may alias o's, and nothing else of x's
 * group (then it does). */
static bool store_into(sc_plan *p, const int *grp, int i, int o, int x)
{
    cg_launch *l = p->steps[i].launch;
    int bi = -1, bo = -1;
    for (int a = 0; a < l->nargs; a++) {
        int m = mem_of(p, grp, l->args[a].base);
        if (l->k.bufs[a].out && l->args[a].base == o)
            bo = a;
        else if (!l->k.bufs[a].out && m == grp[x]) {
            if (bi >= 0 || l->args[a].base != x)
                return false;
            bi = a;
        }
    }
    if (bo < 0 || (bi >= 0 && (l->args[bi].offset != 0 || !cg_launch_can_alias(l, bi, bo))))
        return false;
    if (bi >= 0)
        cg_launch_alias(l, bi, bo);
    p->into[o] = x;
    return true;
}

/* Moves the steps marked in tail to the end, in their order (none is in a
 * region: the regions' step ranges shift with the others). */
static int move_to_tail(sc_plan *p, const bool *tail)
{
    step *ns = malloc(sizeof *ns * ((size_t)p->nsteps + 1));
    int *at = malloc(sizeof *at * ((size_t)p->nsteps + 1)), n = 0;
    if (!ns || !at) {
        free(ns), free(at);
        return -1;
    }
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < p->nsteps; i++)
            if (tail[i] == (pass == 1)) {
                at[i] = n;
                ns[n++] = p->steps[i];
            }
    for (int r = 0; r < p->nregions; r++) {
        p->regions[r].first = at[p->regions[r].first];
        p->regions[r].last = at[p->regions[r].last];
    }
    memcpy(p->steps, ns, sizeof *ns * (size_t)p->nsteps);
    free(ns), free(at);
    return 0;
}

int sc_mem_reinplace(const ir_graph *g, sc_plan *p, const int *into, const int *grp)
{
    size_t n = (size_t)p->nslots + 1;
    if (!p->into && !(p->into = malloc(n * sizeof(int))))
        return -1;
    for (int s = 0; s < p->nslots; s++)
        p->into[s] = -1;
    p->ntail = 0;
    if (!into || !grp)
        return 0;
    if (sc_mem_lifetimes(g, p))
        return -1;
    int *last = malloc(n * sizeof(int)), *cand = malloc(n * sizeof(int)), *refs = malloc(n * sizeof(int));
    int *pos = malloc(sizeof(int) * ((size_t)p->nsteps + 1));
    bool *tail = calloc((size_t)p->nsteps + 1, sizeof(bool)), *keep = calloc((size_t)p->nsteps + 1, sizeof(bool));
    int rc = -1;
    if (!last || !cand || !refs || !pos || !tail || !keep)
        goto out;
    for (int s = 0; s < p->nslots; s++)
        last[s] = -1;
    for (int i = 0; i < p->nsteps; i++)
        note_reads(g, p, grp, i, i, last);
    candidates(g, p, into, grp, last, cand, refs);
    for (int s = 0; s < p->nslots; s++)
        if (cand[s] >= 0)
            tail[p->def[s]] = true;
    int nt = 0;   /* each step's position once the candidates' kernels are last */
    for (int i = 0; i < p->nsteps; i++)
        nt += tail[i];
    for (int i = 0, k = 0; i < p->nsteps; i++)
        pos[i] = tail[i] ? p->nsteps - nt + k++ : i - k;
    for (int s = 0; s < p->nslots; s++)
        last[s] = -1;
    for (int i = 0; i < p->nsteps; i++)
        note_reads(g, p, grp, i, pos[i], last);
    for (int i = 0; i < p->nsteps; i++) {
        const cg_launch *l = tail[i] ? p->steps[i].launch : NULL;
        for (int k = 0; l && k < l->nstore; k++) {
            int o = l->store_slot[k], x = cand[o];
            if (x >= 0 && last[grp[x]] <= pos[i] && store_into(p, grp, i, o, x))
                keep[i] = true;
        }
    }
    for (int i = 0; i < p->nsteps; i++)
        p->ntail += keep[i];
    rc = p->ntail ? move_to_tail(p, keep) : 0;
out:
    free(last), free(cand), free(refs), free(pos), free(tail), free(keep);
    return rc;
}

/* ---- the inputs' memory groups --------------------------------------------------------------- */

typedef struct span {
    const char *lo, *hi;
    int k;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : x->k - y->k;
}

int sc_input_groups(tj_tensor *const *inputs, int n, int *grp)
{
    span few[64], *sp = n <= 64 ? few : malloc(sizeof *sp * (size_t)n);
    if (!sp)
        return -1;
    for (int k = 0; k < n; k++) {
        const rt_storage *st = inputs[k]->storage;
        sp[k] = (span){st->data, (const char *)st->data + st->nbytes, k};
    }
    qsort(sp, (size_t)n, sizeof *sp, span_cmp);
    /* runs of overlapping storages (sorted by start): each input's group is
     * the run's first input */
    for (int i = 0, j; i < n; i = j) {
        const char *hi = sp[i].hi;
        int first = sp[i].k;
        for (j = i + 1; j < n && (sp[j].lo < hi || sp[j].lo == sp[i].lo); j++) {
            hi = sp[j].hi > hi ? sp[j].hi : hi;
            first = sp[j].k < first ? sp[j].k : first;
        }
        for (int t = i; t < j; t++)
            grp[sp[t].k] = first;
    }
    if (sp != few)
        free(sp);
    return 0;
}
