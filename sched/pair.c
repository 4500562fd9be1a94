/* pair.c - GEMM steps on the pool's two threads (sched_int.h, sc_plan.par):
 * two adjacent independent GEMM steps at once, one per thread (a pair), or
 * one GEMM cut into column blocks the threads claim (a split), each block a
 * single-threaded OpenBLAS call.
 *
 * A training step's backward has pairs: dX = dY W and dW = dY^T X read the
 * same gradient and nothing of each other. On two threads, OpenBLAS splitting
 * each of these small GEMMs (128x512x512, 512x512x128) over both threads and
 * joining twice costs more than each GEMM on a thread of its own, with no
 * join inside either; and a GEMM whose blocks the pool's threads claim one by
 * one is not held up by a thread the OS has descheduled, as OpenBLAS's fixed
 * partition is (P7's measurements: docs/perf.md, "Inter-op parallelism in
 * the backward").
 *
 * On by default: since a k <= 256 GEMM runs on tjit's GEMM (k_matmul.c),
 * pairs and splits made P7's compiled step 1.8-2.9% faster on the quiet
 * machine, in both orders of a paired probe, and left the inference cases
 * level (docs/perf.md, "GEMMs on two threads by default", 2026-11-29; with
 * OpenBLAS on every GEMM they had been 4-11% slower there); under load,
 * where a descheduled thread holds up OpenBLAS's fixed halves, they gained
 * 1.2-2.6x. TJIT_INTEROP=0 turns them off.
 *
 *   formed    after the memory plan (plan.c, finish_steps), outside blocked
 *             regions and the tail:
 *             pair: steps i and i+1 are eager matmuls (f32/f64), the second
 *               reads nothing the first writes, neither's output shares bytes
 *               with the other's inputs or output (the memory plan may give
 *               step i+1 the buffer of a value step i reads last), each has
 *               at least SC_PAIR_MIN multiply-adds and the smaller at least
 *               half the larger (a GEMM twice the other's size runs
 *               single-threaded longer than the two would take on both).
 *             split: any other eager f32 matmul of two matrices with at least
 *               SC_PAIR_MIN multiply-adds and SC_SPLIT_COLS columns, on a
 *               CPU without AVX-512 (split_wanted).
 *             Not with TJIT_INTEROP=0; TJIT_GEMM_SPLIT=0 forms no split, =1
 *             splits on any CPU (both read when a plan is built).
 *   run       with exactly two runtime threads (rt_threads()): OpenBLAS
 *             serial (rt_blas_serial_begin), the pair's two steps as the
 *             chunks of one rt_parallel_for, the split's column blocks as
 *             tasks claimed one at a time (rt_parallel_tasks: a thread that
 *             starts late still takes the blocks left; before 2026-11-30 the
 *             four blocks were two chunks of two);
 *             otherwise one step after the other, as any step. A split whose
 *             operands BLAS cannot take as they are (rt_blas_layout) runs
 *             whole, as does one on a weight kept in another form
 *             (rt_gemm_kept: frozen, packed once, autotuned or int8, or a
 *             captured weight packed while it does not change; its GEMM path
 *             is k_matmul.c's: a captured weight that changes every call, as
 *             a trained one, runs on OpenBLAS and is split) and one that
 *             k_matmul.c sends to tjit's own GEMM
 *             (rt_gemm_own_f32: it cuts its columns over the pool itself);
 *             a pair's steps see the caller's frozen weights on either
 *             thread (rt_gemm_frozen is per thread). A pair's step on tjit's
 *             GEMM runs single-threaded like OpenBLAS's: its rt_parallel_for
 *             is nested in the pair's chunk, so it runs serially. OpenBLAS's threads
 *             split a GEMM's m and n, not k, so either way is expected to
 *             give the same values (the tests compare within rounding).
 *
 * Exported models (aot_load.c) run without either.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/blas.h"
#include "../runtime/contract.h"
#include "../runtime/env.h"
#include "../runtime/gemm.h"
#include "sched_int.h"

#define SC_PAIR_MIN ((int64_t)1 << 21)   /* multiply-adds of each GEMM, at least */
#define SC_SPLIT_COLS 128                 /* columns of a split GEMM, at least */
#define SC_SPLIT_BLOCKS 4                 /* column blocks of a split GEMM */

/* The multiply-adds of eager matmul step s, or 0 when it cannot pair: not
 * one whose GEMM applies its epilogue kernel (epi.c; asked for with
 * TJIT_GEMM_EPILOGUE=1, on a kept weight, which a split would run whole). */
static int64_t gemm_macs(const ir_graph *g, const sc_plan *p, const step *s)
{
    if (s->kind != S_EAGER || s->region >= 0 || (p->epi && p->epi[s - p->steps].kstep >= 0))
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

/* Whether eager matmul step s can run split: f32 matrices, enough columns. */
static bool splittable(const ir_graph *g, const sc_plan *p, const step *s)
{
    const ir_node *n = g->nodes[s->node];
    const ir_type *o = &p->types[ir_slot(g, n)];
    return o->dtype == TJ_F32 && o->ndim == 2 && p->types[ir_slot(g, n->in[0])].ndim == 2 &&
           p->types[ir_slot(g, n->in[1])].ndim == 2 && o->shape[1] >= SC_SPLIT_COLS;
}

/* Whether lone GEMMs are split: TJIT_GEMM_SPLIT=1/0, else only on CPUs
 * without AVX-512. There, an f32 GEMM that is not tjit's own runs on
 * OpenBLAS's AVX-512 kernels, whose own two threads beat four column blocks
 * of single-threaded calls (each packs all of A): on an Intel Xeon (family
 * 6 model 207) split off made P7's step 3.4-6.3% faster (train_paired
 * B/A 0.937, 0.962) and P4 0.93-1.05x eager against 1.04-1.18x; with
 * OpenBLAS on AVX2 kernels those GEMMs are tjit's own, which no split
 * takes (docs/perf.md, "Column blocks off on AVX-512"). */
static bool split_wanted(void)
{
    int sw = rt_env_switch("TJIT_GEMM_SPLIT");
    return sw >= 0 ? sw : tjg_isa_current() < TJG_AVX512;
}

int sc_plan_pairs(const ir_graph *g, sc_plan *p)
{
    free(p->par);
    p->par = NULL;
    if (rt_env_switch("TJIT_INTEROP") == 0)
        return 0;
    bool split = split_wanted();
    int end = p->nsteps - p->ntail;
    for (int i = 0; i < end; i++) {
        const step *s = &p->steps[i], *t = i + 1 < end ? &p->steps[i + 1] : NULL;
        int64_t a = gemm_macs(g, p, s), b = t ? gemm_macs(g, p, t) : 0;
        int64_t lo = a < b ? a : b, hi = a < b ? b : a;
        int what = SC_PAR_NONE;
        if (lo >= SC_PAIR_MIN && 2 * lo >= hi) {
            int sb = p->buf_of[ir_slot(g, g->nodes[s->node])], tb = p->buf_of[ir_slot(g, g->nodes[t->node])];
            if (!bufs_overlap(p, sb, tb) && !writes_into_reads(g, p, s, t) && !writes_into_reads(g, p, t, s))
                what = SC_PAR_PAIR;
        }
        if (!what && split && a >= SC_PAIR_MIN && splittable(g, p, s))
            what = SC_PAR_SPLIT;
        if (!what)
            continue;
        if (!p->par && !(p->par = calloc((size_t)p->nsteps, sizeof *p->par)))
            return -1;
        p->par[i] = (unsigned char)what;
        i += what == SC_PAR_PAIR;   /* a step is in one pair at most */
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
    tj_tensor *const *frozen;   /* the caller's frozen weights (rt_gemm_frozen) */
    int nfrozen;
    unsigned flags;
} pair_ctx;

static void pair_range(void *c_, int64_t b, int64_t e)
{
    pair_ctx *c = c_;
    tj_tensor *const *fz;   /* this thread's, put back after */
    int nfz;
    unsigned ffz;
    rt_gemm_frozen_get(&fz, &nfz, &ffz);
    rt_gemm_frozen(c->frozen, c->nfrozen, c->flags);
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
    rt_gemm_frozen(fz, nfz, ffz);
}

/* A split GEMM: C = op(A) op(B), column blocks [n * b / nb, n * (b + 1) / nb)
 * rounded to 16 columns. */
typedef struct split_ctx {
    bool ta, tb;
    int64_t m, n, k, lda, ldb, ldc, nb;
    const float *a, *b;
    float *c;
    int rc[SC_SPLIT_BLOCKS];
    char err[SC_SPLIT_BLOCKS][512];
} split_ctx;

static int64_t split_col(const split_ctx *c, int64_t b)
{
    return b >= c->nb ? c->n : (c->n * b / c->nb) / 16 * 16;
}

static void split_range(void *c_, int64_t b, int64_t e)
{
    split_ctx *c = c_;
    for (int64_t q = b; q < e; q++) {
        int64_t n0 = split_col(c, q), n1 = split_col(c, q + 1);
        const float *bp = c->b + (c->tb ? n0 * c->ldb : n0);
        c->rc[q] = rt_sgemm(c->ta, c->tb, c->m, n1 - n0, c->k, 1.0f, c->a, c->lda, bp, c->ldb, 0.0f,
                            c->c + n0, c->ldc);
        if (c->rc[q])
            snprintf(c->err[q], sizeof c->err[q], "%s", tj_last_error());
    }
}

static atomic_uint_fast64_t split_count;   /* sc_split_count */

uint64_t sc_split_count(void) { return atomic_load(&split_count); }

/* Step i's GEMM in column blocks on the pool: 0, 1 when its operands need
 * packing (run it whole), -1 with the message in why. */
static int run_split(const ir_graph *g, const sc_plan *p, int i, tj_tensor **vals, char *why, size_t nwhy)
{
    const ir_node *n = g->nodes[p->steps[i].node];
    const tj_tensor *a = vals[ir_slot(g, n->in[0])], *b = vals[ir_slot(g, n->in[1])];
    tj_tensor *o = vals[ir_slot(g, n)];
    split_ctx c = {.m = o->shape[0], .n = o->shape[1], .k = a->shape[1], .ldc = o->strides[0], .nb = SC_SPLIT_BLOCKS};
    /* tjit's own GEMM (k_matmul.c's rule): whole, on the caller's thread,
     * where it cuts its columns over the pool itself */
    if (rt_gemm_own_f32(c.m, c.n, c.k))
        return 1;
    if (o->strides[1] != 1 || !rt_blas_layout(c.m, c.k, a->strides[0], a->strides[1], &c.ta, &c.lda) ||
        !rt_blas_layout(c.k, c.n, b->strides[0], b->strides[1], &c.tb, &c.ldb))
        return 1;
    /* a weight packed once, or in int8, or kept packed while it does not
     * change: its own path. One that changes every call (a trained weight)
     * runs on OpenBLAS as any operand, so it is split. Asked last: the
     * lookup moves the kept copy's state on as the GEMM's own would. */
    if (rt_gemm_kept(b, c.m))
        return 1;
    c.a = rt_ptr(a), c.b = rt_ptr(b), c.c = rt_ptr(o);
    atomic_fetch_add(&split_count, 1);
    rt_blas_serial_begin();
    rt_parallel_tasks(c.nb, split_range, &c);   /* each block claimed alone */
    rt_blas_serial_end();
    rt_bump_version(o);
    for (int q = 0; q < c.nb; q++)
        if (c.rc[q]) {
            snprintf(why, nwhy, "%s", c.err[q]);
            return -1;
        }
    return 0;
}

int sc_pair_run(const ir_graph *g, const sc_plan *p, int i, tj_tensor **vals, sc_call_mem *m)
{
    int np = p->par[i] == SC_PAR_PAIR ? 2 : 1;
    for (int k = 0; k < np; k++) {
        int slot = ir_slot(g, g->nodes[p->steps[i + k].node]);
        if (!(vals[slot] = sc_mem_tensor(p, m, slot)))
            return -1;
    }
    pair_ctx c = {g, p, i, vals, {0, 0}, {"", ""}, NULL, 0, 0};
    rt_gemm_frozen_get(&c.frozen, &c.nfrozen, &c.flags);
    if (np == 1) {
        bool prof = rt_prof_on();
        rt_prof_id prev = 0;
        int64_t t0 = prof ? sc_prof_start(p, i, &prev) : 0;
        c.rc[0] = run_split(g, p, i, vals, c.err[0], sizeof c.err[0]);
        if (prof)
            sc_prof_stop(p, i, t0, prev);
        if (c.rc[0] > 0) {   /* operands BLAS cannot take as they are: the step whole */
            c.rc[0] = 0;
            pair_range(&c, 0, 1);
        }
    } else {
        rt_blas_serial_begin();
        rt_parallel_for(2, 1, pair_range, &c);
        rt_blas_serial_end();
    }
    for (int k = 0; k < np; k++)
        if (c.rc[k]) {
            const ir_node *n = g->nodes[p->steps[i + k].node];
            tj_tensor *in[2] = {vals[ir_slot(g, n->in[0])], vals[ir_slot(g, n->in[1])]};
            sc_node_failed(g, n, in, c.err[k]);
            return -1;
        }
    return i + np - 1;
}
