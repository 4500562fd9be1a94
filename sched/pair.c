/* pair.c - inter-op parallelism: two adjacent, independent GEMM steps of a
 * plan run at the same time, one per thread, each a single-threaded
 * OpenBLAS call (sched_int.h, sc_plan.pair).
 *
 * A training step's backward has such pairs: dX = dY W and dW = dY^T X read
 * the same gradient and nothing of each other. On two threads, OpenBLAS
 * splitting each of these small GEMMs (128x512x512, 512x512x128) over both
 * threads and joining twice costs more than each GEMM on a thread of its
 * own, with no join inside either (P7's measurements: docs/perf.md,
 * "Inter-op parallelism in the backward").
 *
 *   formed    after the memory plan (plan.c, finish_steps): steps i and i+1
 *             are eager matmuls (f32/f64, BLAS), outside blocked regions and
 *             the tail, the second reads nothing the first writes, neither's
 *             output shares bytes with the other's inputs or output (the
 *             memory plan may give step i+1 the buffer of a value step i reads
 *             last), and each has at least SC_PAIR_MIN multiply-adds, the
 *             smaller at least half the larger (a GEMM twice the other's
 *             size runs single-threaded longer than the two would take on
 *             both threads). TJIT_INTEROP=0 forms none (read when a plan is
 *             built).
 *   run       with exactly two runtime threads (rt_threads()): OpenBLAS
 *             serial (rt_blas_serial_begin), the two steps as the two chunks
 *             of one rt_parallel_for; otherwise one after the other, as any
 *             step. OpenBLAS's threads split a GEMM's m and n, not k, so
 *             either way is expected to give the same values (the tests
 *             compare within rounding).
 *
 * Exported models (aot_load.c) run without pairs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/blas.h"
#include "sched_int.h"

#define SC_PAIR_MIN ((int64_t)1 << 21)   /* multiply-adds of each GEMM, at least */

static bool enabled(void)
{
    const char *e = getenv("TJIT_INTEROP");
    return !(e && !strcmp(e, "0"));
}

/* The multiply-adds of eager matmul step s, or 0 when it cannot pair. */
static int64_t gemm_macs(const ir_graph *g, const sc_plan *p, const step *s)
{
    if (s->kind != S_EAGER || s->region >= 0)
        return 0;
    const ir_node *n = g->nodes[s->node];
    int slot = ir_slot(g, n);
    const ir_type *o = &p->types[slot];
    if (n->op != OP_matmul || (o->dtype != TJ_F32 && o->dtype != TJ_F64) || p->buf_of[slot] < 0 ||
        (p->bufs[p->buf_of[slot]].where != SC_ARENA && p->bufs[p->buf_of[slot]].where != SC_OWN))
        return 0;
    const ir_type *a = &p->types[ir_slot(g, n->in[0])];
    if (o->ndim < 2 || a->ndim < 2)
        return 0;
    return ir_type_numel(o) * a->shape[a->ndim - 1];
}

/* The buffer whose memory value `slot` is in (through views), or -1 (a graph
 * input's own memory). */
static int buf_of_value(const sc_plan *p, int slot)
{
    int o = p->owner[slot];
    return o >= 0 ? p->buf_of[o] : -1;
}

static bool bufs_overlap(const sc_plan *p, int a, int b)
{
    if (a < 0 || b < 0)
        return false;
    if (a == b)
        return true;
    const sc_buf *x = &p->bufs[a], *y = &p->bufs[b];
    return x->where == SC_ARENA && y->where == SC_ARENA && x->offset < y->offset + y->bytes &&
           y->offset < x->offset + x->bytes;
}

/* Whether step w's output shares memory with anything step r reads. */
static bool writes_into_reads(const ir_graph *g, const sc_plan *p, const step *w, const step *r)
{
    int wb = p->buf_of[ir_slot(g, g->nodes[w->node])];
    const ir_node *n = g->nodes[r->node];
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] && bufs_overlap(p, wb, buf_of_value(p, ir_slot(g, n->in[j]))))
            return true;
    return false;
}

int sc_plan_pairs(const ir_graph *g, sc_plan *p)
{
    free(p->pair);
    p->pair = NULL;
    if (!enabled())
        return 0;
    for (int i = 0; i + 1 < p->nsteps - p->ntail; i++) {
        const step *s = &p->steps[i], *t = &p->steps[i + 1];
        int64_t a = gemm_macs(g, p, s), b = gemm_macs(g, p, t);
        int64_t lo = a < b ? a : b, hi = a < b ? b : a;
        if (lo < SC_PAIR_MIN || 2 * lo < hi)
            continue;
        int sb = p->buf_of[ir_slot(g, g->nodes[s->node])], tb = p->buf_of[ir_slot(g, g->nodes[t->node])];
        if (bufs_overlap(p, sb, tb) || writes_into_reads(g, p, s, t) || writes_into_reads(g, p, t, s))
            continue;
        if (!p->pair && !(p->pair = calloc((size_t)p->nsteps, sizeof *p->pair)))
            return -1;
        p->pair[i] = true;
        i++;   /* a step is in one pair at most */
    }
    return 0;
}

/* ---- running a pair ------------------------------------------------------------------------------ */

typedef struct pair_ctx {
    const ir_graph *g;
    const sc_plan *p;
    int first;
    tj_tensor **vals;
    int rc[2];
    char err[2][512];
} pair_ctx;

static void pair_range(void *c_, int64_t b, int64_t e)
{
    pair_ctx *c = c_;
    for (int64_t k = b; k < e; k++) {
        int i = c->first + (int)k;
        const ir_node *n = c->g->nodes[c->p->steps[i].node];
        tj_tensor *in[2];
        for (int j = 0; j < 2; j++)
            in[j] = c->vals[ir_slot(c->g, n->in[j])];
        ir_attrs a;
        ir_node_attrs(n, &a);
        bool prof = rt_prof_on();
        rt_prof_id prev = 0;
        int64_t t0 = prof ? sc_prof_start(c->p, i, &prev) : 0;
        c->rc[k] = rt_run_kernel(n->op, c->vals[ir_slot(c->g, n)], in, n->nin, &a);
        if (prof)
            sc_prof_stop(c->p, i, t0, prev);
        if (c->rc[k])   /* this thread's message, for the caller's */
            snprintf(c->err[k], sizeof c->err[k], "%s", tj_last_error());
    }
}

int sc_pair_run(const ir_graph *g, const sc_plan *p, int i, tj_tensor **vals, sc_call_mem *m)
{
    for (int k = 0; k < 2; k++) {
        int slot = ir_slot(g, g->nodes[p->steps[i + k].node]);
        if (!(vals[slot] = sc_mem_tensor(p, m, slot)))
            return -1;
    }
    pair_ctx c = {g, p, i, vals, {0, 0}, {"", ""}};
    rt_blas_serial_begin();
    rt_parallel_for(2, 1, pair_range, &c);
    rt_blas_serial_end();
    for (int k = 0; k < 2; k++)
        if (c.rc[k]) {
            const ir_node *n = g->nodes[p->steps[i + k].node];
            tj_tensor *in[2] = {vals[ir_slot(g, n->in[0])], vals[ir_slot(g, n->in[1])]};
            sc_node_failed(g, n, in, c.err[k]);
            return -1;
        }
    return 0;
}
