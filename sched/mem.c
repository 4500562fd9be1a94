/* mem.c - where a plan's values live during a call (sched_int.h).
 *
 *   steps --lifetimes--> per materialized slot: the step writing it and the
 *            last step reading it or a view of it (graph outputs: past the end)
 *         --in place (before the kernels compile)--> a kernel storing a value
 *            of the dtype, size and index of an input that dies at that
 *            kernel writes it over that input (cg_launch_alias): one buffer
 *         --buffers--> the slots writing one memory: SC_INPUT when a graph
 *            output is stored into a graph input (reinplace.c), SC_OWN when
 *            a graph output lives in it (the caller gets it), SC_SCRATCH
 *            when a blocked region keeps it to itself (block.c), else SC_ARENA
 *         --placement--> arena offsets, greedy by size with best fit among
 *            the buffers whose lifetimes overlap (like TFLite's arena planner
 *            and ggml-alloc); 64-byte aligned
 *   call: one rt_alloc block for the arena (rt_alloc caches large blocks, so
 *         a steady-state call gets no fresh memory); each slot's tensor is a
 *         contiguous header at offset 0 of a storage header over its buffer's
 *         bytes (some eager kernels write storage->data directly)
 *
 * Graph inputs are written only where reinplace.c stored an output into
 * one (the caller asked for it: a write-back); outputs never share memory
 * with anything but what they were computed in place over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

static int64_t align64(int64_t n) { return (n + 63) / 64 * 64; }

static int64_t slot_bytes(const sc_plan *p, int s)
{
    return ir_type_numel(&p->types[s]) * (int64_t)tj_dtype_size(p->types[s].dtype);
}

/* ---- lifetimes ------------------------------------------------------------------------------ */

static void read_slot(sc_plan *p, int slot, int i)
{
    if (slot >= 0 && p->last_use[slot] < i)
        p->last_use[slot] = i;
}

/* A blocked region runs its steps once per block, block after block (and
 * blocks at once on the threads): a value made before the region that one
 * of its steps reads is read until the region's last step, not only until
 * that step (else a later step of the region could be placed over it while
 * another block still reads it). */
static void region_reads(const ir_graph *g, sc_plan *p)
{
    for (int i = 0; i < p->nsteps; i++) {
        const step *s = &p->steps[i];
        if (s->region < 0 || (s->kind == S_KERNEL ? !s->launch : s->node < 0))
            continue;
        int first = p->regions[s->region].first, last = p->regions[s->region].last;
        int nr = s->kind == S_KERNEL ? s->launch->nargs : g->nodes[s->node]->nin;
        for (int a = 0; a < nr; a++) {
            const ir_node *in = s->kind == S_KERNEL ? NULL : g->nodes[s->node]->in[a];
            int x = s->kind == S_KERNEL ? s->launch->args[a].base : in ? ir_slot(g, in) : -1;
            int o = x >= 0 ? p->owner[x] : -1;
            if (o >= g->ninputs && p->def[o] < first)
                read_slot(p, x, last);
        }
    }
}

int sc_mem_lifetimes(const ir_graph *g, sc_plan *p)
{
    size_t n = (size_t)p->nslots + 1;
    if ((!p->owner && !(p->owner = malloc(n * sizeof(int)))) || (!p->def && !(p->def = malloc(n * sizeof(int)))) ||
        (!p->unplanned && !(p->unplanned = malloc(n * sizeof(bool)))) ||
        (!p->inplace_of && !(p->inplace_of = malloc(n * sizeof(int)))))
        return -1;
    for (int s = 0; s < p->nslots; s++) {
        p->last_use[s] = p->def[s] = -1;
        p->unplanned[s] = false;
    }
    for (int i = 0; i < p->nsteps; i++) {
        const step *s = &p->steps[i];
        if (s->kind == S_KERNEL) {
            for (int a = 0; a < s->launch->nargs; a++)
                read_slot(p, s->launch->args[a].base, i);
            for (int k = 0; k < s->launch->nstore; k++)
                p->def[s->launch->store_slot[k]] = i;
            continue;
        }
        const ir_node *nd = g->nodes[s->node];
        for (int j = 0; j < nd->nin; j++)
            if (nd->in[j])
                read_slot(p, ir_slot(g, nd->in[j]), i);
        if (s->kind == S_EAGER) {
            int slot = ir_slot(g, nd);
            p->def[slot] = i;
            p->unplanned[slot] = ir_ops[nd->op].kind == IR_VIEW;
        }
    }
    for (int k = 0; k < g->noutputs; k++)
        p->last_use[ir_slot(g, g->outputs[k])] = p->nsteps;
    for (int s = 0; s < p->nslots; s++) {
        const ir_node *nd = s < g->ninputs ? NULL : g->nodes[s - g->ninputs];
        if (!nd || p->def[s] >= 0)
            p->owner[s] = s;
        else if (ir_ops[nd->op].kind == IR_VIEW)
            p->owner[s] = p->owner[ir_slot(g, nd->in[0])];
        else
            p->owner[s] = -1;
    }
    region_reads(g, p);
    return 0;
}

/* Per owner slot: the last step reading it or a view of it. malloc'd. */
static int *owner_last(const sc_plan *p)
{
    int *ol = malloc(sizeof(int) * ((size_t)p->nslots + 1));
    if (!ol)
        return NULL;
    for (int s = 0; s < p->nslots; s++)
        ol[s] = -1;
    for (int s = 0; s < p->nslots; s++)
        if (p->owner[s] >= 0 && ol[p->owner[s]] < p->last_use[s])
            ol[p->owner[s]] = p->last_use[s];
    return ol;
}

/* ---- in place ------------------------------------------------------------------------------- */

/* The kernel buffer that stores slot s. */
static int store_buf(const cg_launch *l, int s)
{
    for (int a = 0; a < l->nargs; a++)
        if (l->k.bufs[a].out && l->args[a].base == s)
            return a;
    return -1;
}

/* An input buffer of l that dies at step i and that slot s may take over.
 * In a blocked region only a value of the region (read by its own block
 * alone) may be written over: another block may still read the rest. */
static int dying_input(const ir_graph *g, const sc_plan *p, const cg_launch *l, int i, int s, const int *ol,
                       const bool *taken)
{
    int bo = store_buf(l, s), r = p->steps[i].region;
    for (int bi = 0; bi < l->nargs && bo >= 0; bi++) {
        int x = l->args[bi].base;
        if (r >= 0 && (x < g->ninputs || p->def[x] < p->regions[r].first))
            continue;
        if (l->k.bufs[bi].out || x < g->ninputs || p->owner[x] != x || p->def[x] < 0 || p->unplanned[x] ||
            ol[x] != i || taken[x] || l->args[bi].offset != 0 || p->types[x].dtype != p->types[s].dtype ||
            ir_type_numel(&p->types[x]) != ir_type_numel(&p->types[s]))
            continue;
        bool alone = true;
        for (int a = 0; a < l->nargs; a++)
            alone = alone && (a == bi || l->args[a].base != x);
        if (alone && cg_launch_can_alias(l, bi, bo))
            return bi;
    }
    return -1;
}

int sc_mem_inplace(const ir_graph *g, sc_plan *p)
{
    if (sc_mem_lifetimes(g, p))
        return -1;
    int *ol = owner_last(p);
    bool *taken = calloc((size_t)p->nslots + 1, sizeof(bool));
    if (!ol || !taken) {
        free(ol), free(taken);
        return -1;
    }
    for (int s = 0; s < p->nslots; s++)
        p->inplace_of[s] = -1;
    for (int k = 0; k < g->noutputs; k++)
        if (p->owner[ir_slot(g, g->outputs[k])] >= 0)
            ol[p->owner[ir_slot(g, g->outputs[k])]] = p->nsteps;
    for (int i = 0; i < p->nsteps; i++) {
        cg_launch *l = p->steps[i].launch;
        for (int k = 0; p->steps[i].kind == S_KERNEL && k < l->nstore; k++) {
            if (p->into && p->into[l->store_slot[k]] >= 0)
                continue;   /* stored into a graph input (reinplace.c) */
            int s = l->store_slot[k], bi = dying_input(g, p, l, i, s, ol, taken);
            if (bi < 0)
                continue;
            int x = l->args[bi].base;
            cg_launch_alias(l, bi, store_buf(l, s));
            p->inplace_of[s] = x;
            taken[x] = true;
        }
    }
    free(ol);
    free(taken);
    return 0;
}

/* ---- buffers and their places ---------------------------------------------------------------- */

static int new_buf(sc_plan *p, int64_t bytes, int first)
{
    sc_buf *nb = realloc(p->bufs, sizeof *nb * ((size_t)p->nbufs + 1));
    if (!nb)
        return -1;
    p->bufs = nb;
    nb[p->nbufs] = (sc_buf){align64(bytes), 0, first, first, SC_ARENA, -1};
    return p->nbufs++;
}

/* One buffer per materialized slot, or the buffer of the slot it is written
 * over, in step order (the slot written over comes first). */
static int make_bufs(const ir_graph *g, sc_plan *p, const int *ol)
{
    int *order = malloc(sizeof(int) * ((size_t)p->nslots + 1)), *start = calloc((size_t)p->nsteps + 2, sizeof(int));
    if (!order || !start) {
        free(order), free(start);
        return -1;
    }
    for (int s = g->ninputs; s < p->nslots; s++)   /* slots by the step writing them */
        if (p->def[s] >= 0)
            start[p->def[s] + 1]++;
    for (int i = 0; i < p->nsteps; i++)
        start[i + 1] += start[i];
    for (int s = g->ninputs; s < p->nslots; s++)
        if (p->def[s] >= 0)
            order[start[p->def[s]]++] = s;
    int n = p->nsteps > 0 ? start[p->nsteps - 1] : 0;
    free(start);
    for (int s = 0; s < p->nslots; s++)
        p->buf_of[s] = -1;
    p->nbufs = 0;
    p->mem = (sc_plan_mem){0};
    for (int k = 0; k < n; k++) {
        int s = order[k];
        if (!p->unplanned[s]) {
            int x = p->inplace_of[s], b = x >= 0 ? p->buf_of[x] : -1;
            if (b < 0 && (b = new_buf(p, slot_bytes(p, s), p->def[s])) < 0) {
                free(order);
                return -1;
            }
            p->buf_of[s] = b;
            if (p->bufs[b].last < ol[s])
                p->bufs[b].last = ol[s];
            p->mem.unplanned_bytes += align64(slot_bytes(p, s));
            p->mem.in_place += x >= 0;
        }
    }
    free(order);
    for (int s = 0; p->into && s < p->nslots; s++)
        if (p->into[s] >= 0 && p->buf_of[s] >= 0) {
            p->bufs[p->buf_of[s]].where = SC_INPUT;
            p->bufs[p->buf_of[s]].region = p->into[s];
            p->mem.into++;
        }
    for (int k = 0; k < g->noutputs; k++) {
        int o = p->owner[ir_slot(g, g->outputs[k])];
        if (o >= 0 && p->buf_of[o] >= 0 && p->bufs[p->buf_of[o]].where == SC_ARENA)
            p->bufs[p->buf_of[o]].where = SC_OWN;
    }
    return 0;
}

/* Places buffer b at the best-fitting gap among the placed buffers ids[0..n)
 * whose lifetimes overlap b's, else after them all. */
static void place_one(sc_buf *bufs, int b, const int *ids, int n, int *tmp)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (bufs[ids[i]].first <= bufs[b].last && bufs[b].first <= bufs[ids[i]].last)
            tmp[m++] = ids[i];
    for (int i = 1; i < m; i++)   /* by offset */
        for (int j = i; j > 0 && bufs[tmp[j - 1]].offset > bufs[tmp[j]].offset; j--) {
            int t = tmp[j];
            tmp[j] = tmp[j - 1];
            tmp[j - 1] = t;
        }
    int64_t end = 0, best = -1, best_gap = INT64_MAX;
    for (int i = 0; i < m; i++) {
        int64_t gap = bufs[tmp[i]].offset - end;
        if (gap >= bufs[b].bytes && gap < best_gap) {
            best = end;
            best_gap = gap;
        }
        if (bufs[tmp[i]].offset + bufs[tmp[i]].bytes > end)
            end = bufs[tmp[i]].offset + bufs[tmp[i]].bytes;
    }
    bufs[b].offset = best >= 0 ? best : end;
}

static int place_arena(sc_plan *p)
{
    int *ids = malloc(sizeof(int) * ((size_t)p->nbufs + 1)), *tmp = malloc(sizeof(int) * ((size_t)p->nbufs + 1)), n = 0;
    if (!ids || !tmp) {
        free(ids), free(tmp);
        return -1;
    }
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].where == SC_ARENA)
            ids[n++] = b;
    for (int i = 1; i < n; i++)   /* largest first; earlier first among equals */
        for (int j = i; j > 0; j--) {
            const sc_buf *a = &p->bufs[ids[j - 1]], *c = &p->bufs[ids[j]];
            if (a->bytes > c->bytes || (a->bytes == c->bytes && a->first <= c->first))
                break;
            int t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        place_one(p->bufs, ids[i], ids, i, tmp);
        const sc_buf *b = &p->bufs[ids[i]];
        if (b->offset + b->bytes > p->mem.arena_bytes)
            p->mem.arena_bytes = b->offset + b->bytes;
    }
    free(ids);
    free(tmp);
    return 0;
}

static void stats(sc_plan *p)
{
    for (int i = 0; i < p->nsteps; i++) {
        int64_t live = 0;
        for (int b = 0; b < p->nbufs; b++)
            if (p->bufs[b].where == SC_ARENA && p->bufs[b].first <= i && i <= p->bufs[b].last)
                live += p->bufs[b].bytes;
        if (live > p->mem.live_bound)
            p->mem.live_bound = live;
    }
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].where == SC_OWN)
            p->mem.own_bytes += p->bufs[b].bytes;
    int threads = rt_threads();
    for (int r = 0; r < p->nregions; r++) {
        int64_t chunks = p->regions[r].nblocks < threads ? p->regions[r].nblocks : threads;
        p->mem.scratch_bytes += chunks * p->regions[r].scratch_bytes;
    }
    p->mem.buffers = p->nbufs;
    p->mem.regions = p->nregions;
    p->mem.peak_bytes = p->mem.arena_bytes + p->mem.own_bytes + p->mem.scratch_bytes;
}

/* Whether slot s's dims [0, nd) are region r's block dims. */
static bool blocked_like(const sc_plan *p, const sc_region *r, int s)
{
    if (p->types[s].ndim < r->nd)
        return false;
    for (int d = 0; d < r->nd; d++)
        if (p->types[s].shape[d] != r->size[d])
            return false;
    return true;
}

/* Buffers written and read only inside a blocked region live in its
 * per-thread scratch, a block's part at a time. */
static void scratch_bufs(const ir_graph *g, sc_plan *p)
{
    for (int r = 0; r < p->nregions; r++) {
        sc_region *rg = &p->regions[r];
        rg->scratch_bytes = 0;
        for (int b = 0; b < p->nbufs; b++) {
            sc_buf *bf = &p->bufs[b];
            bool ok = bf->where == SC_ARENA && bf->first >= rg->first && bf->last <= rg->last;
            int64_t blk = 0;
            for (int s = g->ninputs; s < p->nslots && ok; s++)
                if (p->buf_of[s] == b) {
                    ok = blocked_like(p, rg, s);
                    int64_t bytes = align64(slot_bytes(p, s) / rg->nq * rg->chunk);
                    blk = bytes > blk ? bytes : blk;
                }
            if (!ok)
                continue;
            bf->where = SC_SCRATCH;
            bf->region = r;
            bf->offset = rg->scratch_bytes;
            bf->bytes = blk;
            rg->scratch_bytes += blk;
        }
    }
}

int sc_mem_plan(const ir_graph *g, sc_plan *p)
{
    size_t n = (size_t)p->nslots + 1;
    if (!p->buf_of && !(p->buf_of = malloc(n * sizeof(int))))
        return -1;
    int *ol = sc_mem_lifetimes(g, p) ? NULL : owner_last(p);
    if (!ol || make_bufs(g, p, ol)) {
        free(ol);
        return -1;
    }
    free(ol);
    scratch_bufs(g, p);
    if (place_arena(p))
        return -1;
    stats(p);
    return 0;
}

void sc_mem_free(sc_plan *p)
{
    free(p->owner);
    free(p->def);
    free(p->unplanned);
    free(p->inplace_of);
    free(p->into);
    free(p->in_grp);
    free(p->buf_of);
    free(p->bufs);
    free(p->regions);
    free(p->par);
}

/* ---- one call -------------------------------------------------------------------------------------- */

int sc_mem_begin(const sc_plan *p, sc_call_mem *m, tj_tensor *const *inputs)
{
    *m = (sc_call_mem){.inputs = inputs};
    if (p->nbufs == 0)
        return 0;
    m->hdr = calloc((size_t)p->nbufs, sizeof *m->hdr);
    m->own = calloc((size_t)p->nbufs, sizeof *m->own);
    if (!m->hdr || !m->own || (p->mem.arena_bytes > 0 && !(m->arena = rt_alloc((size_t)p->mem.arena_bytes)))) {
        free(m->hdr);
        free(m->own);
        *m = (sc_call_mem){.inputs = inputs};
        if (!rt_has_error())
            rt_error("out of memory");
        return -1;
    }
    for (int b = 0; b < p->nbufs; b++) {
        atomic_init(&m->hdr[b].refs, 1);
        m->hdr[b].nbytes = (size_t)p->bufs[b].bytes;
        m->hdr[b].data = p->bufs[b].where == SC_ARENA ? m->arena + p->bufs[b].offset : NULL;
    }
    return 0;
}

/* A contiguous tensor of type ty at the start of storage st (retained). */
static tj_tensor *header_over(const ir_type *ty, rt_storage *st)
{
    tj_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        rt_error("out of memory allocating a tensor header");
        return NULL;
    }
    t->magic = RT_LIVE;
    atomic_init(&t->refs, 1);
    t->dtype = ty->dtype;
    t->ndim = ty->ndim;
    t->weak = ty->weak;
    memcpy(t->shape, ty->shape, sizeof(int64_t) * (size_t)ty->ndim);
    rt_contiguous_strides(ty->ndim, ty->shape, t->strides);
    t->storage = st;
    atomic_fetch_add_explicit(&st->refs, 1, memory_order_relaxed);
    return t;
}

tj_tensor *sc_mem_tensor(const sc_plan *p, sc_call_mem *m, int slot)
{
    int b = p->buf_of[slot];
    if (p->bufs[b].where == SC_INPUT) {   /* the input's own memory (a contiguous tensor) */
        const tj_tensor *x = m->inputs[p->bufs[b].region];
        tj_tensor *t = header_over(&p->types[slot], x->storage);
        if (t)
            t->offset = x->offset;
        return t;
    }
    if (p->bufs[b].where == SC_OWN && !m->own[b]) {
        /* the caller's: a storage of its own, freed when the outputs are */
        if (!(m->own[b] = rt_tensor_new(TJ_U8, 1, &p->bufs[b].bytes)))
            return NULL;
    }
    return header_over(&p->types[slot], m->own[b] ? m->own[b]->storage : &m->hdr[b]);
}

void sc_mem_end(const sc_plan *p, sc_call_mem *m)
{
    if (!m->hdr)
        return;
    bool held = false;
    for (int b = 0; b < p->nbufs; b++) {
        held = held || atomic_load(&m->hdr[b].refs) != 1;
        tj_release(m->own[b]);
    }
    free(m->own);
    if (held)   /* a tensor still points into the arena (cannot happen): keep it */
        return;
    rt_free(m->arena, (size_t)p->mem.arena_bytes);
    free(m->hdr);
}

/* ---- text ----------------------------------------------------------------------------------------- */

/* A slot a step writes: its type, then what the steps so far decided (its
 * buffer once there are buffers, in place once that is decided). */
static void print_slot(FILE *o, const ir_graph *g, const sc_plan *p, int s)
{
    static const char *const where[] = {"arena", "own", "scratch", "unplanned", "into"};
    char t[IR_TYPE_BUF];
    fprintf(o, " %%%d %s", s - g->ninputs, ir_type_fmt(&p->types[s], t, sizeof t));
    if (p->buf_of && p->buf_of[s] < 0) {
        fprintf(o, " unplanned");
        return;
    }
    if (p->buf_of) {
        const sc_buf *bf = &p->bufs[p->buf_of[s]];
        fprintf(o, " buf%d %s", p->buf_of[s], where[bf->where]);
        if (bf->where == SC_ARENA || bf->where == SC_SCRATCH)
            fprintf(o, " [%lld, %lld)", (long long)bf->offset, (long long)(bf->offset + bf->bytes));
    }
    if (p->into && p->into[s] >= 0)   /* a write-back stored by its kernel (reinplace.c) */
        fprintf(o, "%s %%%s", p->buf_of ? "" : " into", g->inputs[p->into[s]]->name);
    if (p->inplace_of && p->inplace_of[s] >= 0)
        fprintf(o, " in place of %%%d", p->inplace_of[s] - g->ninputs);
}

static void print_step(FILE *o, const ir_graph *g, const sc_plan *p, int i)
{
    const step *s = &p->steps[i];
    if (s->kind == S_VIEW) {
        fprintf(o, "  step %d view %%%d %s\n", i, s->node, ir_ops[g->nodes[s->node]->op].name);
        return;
    }
    if (s->kind == S_EAGER) {
        fprintf(o, "  step %d eager %%%d %s ->", i, s->node, ir_ops[g->nodes[s->node]->op].name);
        print_slot(o, g, p, ir_slot(g, g->nodes[s->node]));
        if (p->par && p->par[i] == SC_PAR_PAIR)   /* pair.c */
            fprintf(o, " ; at once with step %d on 2 threads", i + 1);
        else if (p->par && p->par[i] == SC_PAR_SPLIT)
            fprintf(o, " ; in column blocks on 2 threads");
        if (p->epi && p->epi[i].kstep >= 0)   /* epi.c */
            fprintf(o, " ; step %d in its epilogue on tjit's GEMM", p->epi[i].kstep);
    } else {
        fprintf(o, "  step %d kernel ->", i);   /* its stores, in slot order */
        for (int k = 0; k < s->launch->nstore; k++)
            print_slot(o, g, p, s->launch->store_slot[k]);
    }
    fprintf(o, "\n");
}

static void print_region(FILE *o, const sc_plan *p, int r)
{
    const sc_region *rg = &p->regions[r];
    fprintf(o, "  region %d: steps %d-%d, %lld blocks of [", r, rg->first, rg->last, (long long)rg->nblocks);
    for (int d = 0; d < rg->nd; d++)
        fprintf(o, "%s%lld", d ? "," : "", (long long)(d + 1 < rg->nd ? 1 : rg->chunk));
    fprintf(o, "] of [");
    for (int d = 0; d < rg->nd; d++)
        fprintf(o, "%s%lld", d ? "," : "", (long long)rg->size[d]);
    if (p->buf_of)   /* scratch is sized by the memory plan */
        fprintf(o, "], scratch %lld bytes per thread\n", (long long)rg->scratch_bytes);
    else
        fprintf(o, "]\n");
}

char *sc_plan_print(const ir_graph *g, const sc_plan *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (!o)
        return NULL;
    const sc_plan_mem *m = &p->mem;
    char into[64] = "";
    if (m->into)
        snprintf(into, sizeof into, ", %d output%s stored into inputs", m->into, m->into == 1 ? "" : "s");
    if (!p->buf_of) {   /* before the memory plan: the steps */
        int nk = 0;
        for (int i = 0; i < p->nsteps; i++)
            nk += p->steps[i].kind == S_KERNEL;
        fprintf(o, "steps @%s: %d steps, %d kernels\n", g->name, p->nsteps, nk);
    } else
        fprintf(o, "plan @%s: %d steps, %d buffers (%d in place%s), arena %lld, outputs %lld, scratch %lld bytes; "
               "peak %lld (intermediates live at once: %lld; unplanned: %lld)\n",
            g->name, p->nsteps, m->buffers, m->in_place, into, (long long)m->arena_bytes, (long long)m->own_bytes,
            (long long)m->scratch_bytes, (long long)m->peak_bytes, (long long)m->live_bound,
            (long long)m->unplanned_bytes);
    for (int i = 0; i < p->nsteps; i++)
        print_step(o, g, p, i);
    for (int r = 0; r < p->nregions; r++)
        print_region(o, p, r);
    if (p->pool_notes[0])   /* block.c */
        fprintf(o, "  pools after conv: %s\n", p->pool_notes);
    if (fclose(o) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
