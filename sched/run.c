/* run.c - running a built plan (sched_int.h): the steps in order, kernels
 * over their tiles on the thread pool, eager kernels into planned buffers,
 * regions block by block; before the tail (kernels storing into graph
 * inputs, reinplace.c) the tensors of all its stores, so that nothing fails
 * once an input is written; two independent GEMMs at once where the plan pairs
 * them (pair.c). Shared by compiled calls (plan.c) and exported
 * models (aot_load.c); part of libtjit_rt, so it needs no LLVM: a kernel step
 * holds only its function's address.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

/* ---- running a plan --------------------------------------------------------------------------- */

typedef struct launch_ctx {
    cg_kernel_fn fn;
    char **bufs;
    const int64_t *sz;
} launch_ctx;

static void launch_range(void *c_, int64_t b, int64_t e)
{
    const launch_ctx *c = c_;
    c->fn(c->bufs, b, e, c->sz);
}

static int run_kernel(const sc_plan *p, const step *s, tj_tensor **vals, sc_call_mem *m)
{
    const cg_launch *l = s->launch;
    for (int k = 0; k < l->nstore; k++)   /* the tail's are made already */
        if (!vals[l->store_slot[k]] && !(vals[l->store_slot[k]] = sc_mem_tensor(p, m, l->store_slot[k])))
            return -1;
    char *bufs[CG_MAX_BUFS];
    for (int a = 0; a < l->nargs; a++) {
        const tj_tensor *t = vals[l->args[a].base];
        bufs[a] = (char *)rt_ptr(t) + l->args[a].offset * (int64_t)tj_dtype_size(t->dtype);
    }
    if (l->ntiles <= l->grain) {
        if (l->ntiles > 0)
            s->fn(bufs, 0, l->ntiles, l->sz);
        return 0;
    }
    launch_ctx c = {s->fn, bufs, l->sz};
    rt_parallel_for(l->ntiles, l->grain, launch_range, &c);
    return 0;
}

/* Node n by its eager kernel, into its planned buffer (views, and reshapes
 * that copy, by rt_eager). */
static int run_node(const ir_graph *g, const sc_plan *p, const ir_node *n, tj_tensor **vals, sc_call_mem *m)
{
    tj_tensor *in[64];
    for (int j = 0; j < n->nin && j < 64; j++)
        in[j] = n->in[j] ? vals[ir_slot(g, n->in[j])] : NULL;
    ir_attrs a;
    ir_node_attrs(n, &a);
    int slot = ir_slot(g, n);
    if (p->buf_of[slot] < 0) {
        if ((vals[slot] = rt_eager(n->op, in, n->nin, &a, &p->types[slot])))
            return 0;
    } else if ((vals[slot] = sc_mem_tensor(p, m, slot))) {
        if (rt_run_kernel(n->op, vals[slot], in, n->nin, &a) == 0)
            return 0;
        tj_release(vals[slot]);
        vals[slot] = NULL;
    }
    char why[512];
    snprintf(why, sizeof why, "%s", tj_last_error());
    sc_node_failed(g, n, in, why);
    return -1;
}

void sc_node_failed(const ir_graph *g, const ir_node *n, tj_tensor *const *in, const char *why)
{
    char head[512];
    rt_describe_inputs(ir_ops[n->op].name, in, n->nin, head, sizeof head);
    rt_error("%s: %s (node %%%d of graph @%s)", head, why, n->id, g->name);
}

/* The stride of a dim of size 1 never moves an index: it is not compared (a
 * weight exported as a contiguous copy of a [5,1] view with strides [1,5]
 * has [1,1]); nor are the strides of an empty tensor, which address
 * nothing. */
bool sc_plan_matches(const sc_plan *p, tj_tensor *const *inputs)
{
    for (int k = 0; k < p->ninputs; k++) {
        const tj_tensor *t = inputs[k];
        const ir_type *ty = &p->types[k];
        if (t->dtype != ty->dtype || t->ndim != ty->ndim ||
            memcmp(t->shape, ty->shape, sizeof(int64_t) * (size_t)t->ndim))
            return false;
        bool empty = false;
        for (int d = 0; d < t->ndim; d++)
            empty |= t->shape[d] == 0;
        for (int d = 0; d < t->ndim && !empty; d++)
            if (t->shape[d] != 1 && t->strides[d] != p->in_strides[k][d])
                return false;
    }
    return true;
}

/* Before the tail (the kernels storing into graph inputs, reinplace.c): the
 * tensors of all its stores, so that once an input is written no step can
 * fail (a kernel cannot). 0, or -1 when out of memory: nothing written yet. */
static int tail_begin(const sc_plan *p, tj_tensor **vals, sc_call_mem *m)
{
    for (int i = p->nsteps - p->ntail; i < p->nsteps; i++) {
        const cg_launch *l = p->steps[i].launch;
        for (int k = 0; k < l->nstore; k++)
            if (!vals[l->store_slot[k]] && !(vals[l->store_slot[k]] = sc_mem_tensor(p, m, l->store_slot[k])))
                return -1;
    }
    return 0;
}

/* Matmul step i with its fused epilogue (epi.c): the bias and activation
 * handed to tjit's GEMM; *skip becomes the kernel step when the GEMM
 * applied them (otherwise that kernel runs as any). */
static int run_epi(const ir_graph *g, const sc_plan *p, int i, tj_tensor **vals, sc_call_mem *m,
                   int *skip)
{
    const sc_epi *e = &p->epi[i];
    const tj_tensor *bias = vals[e->bias];
    bool ok = bias && bias->dtype == TJ_F32 && bias->ndim == 1 && bias->strides[0] == 1;
    if (ok)
        rt_gemm_epi_begin(rt_ptr(bias), bias->shape[0], e->act, e->f32);
    int rc = run_node(g, p, g->nodes[p->steps[i].node], vals, m);
    if (ok && rt_gemm_epi_end() && rc == 0)
        *skip = e->kstep;
    return rc;
}

/* The kernel step whose work a GEMM's epilogue did: its stores made, not
 * computed. */
static int run_skipped(const sc_plan *p, const step *s, tj_tensor **vals, sc_call_mem *m)
{
    const cg_launch *l = s->launch;
    for (int k = 0; k < l->nstore; k++)
        if (!vals[l->store_slot[k]] &&
            !(vals[l->store_slot[k]] = sc_mem_tensor(p, m, l->store_slot[k])))
            return -1;
    return 0;
}

/* Calls nt->fn for each watched output whose value is there (the step that
 * makes it has run) and was not reported yet. 0, or -1 when a call failed. */
static int notify_ready(const ir_graph *g, const sc_notify *nt, tj_tensor **vals, bool *done)
{
    for (int i = 0; nt && i < nt->n; i++) {
        tj_tensor *v = vals[ir_slot(g, g->outputs[nt->outputs[i]])];
        if (done[i] || !v)
            continue;
        done[i] = true;
        if (nt->fn(nt->ctx, i, v) != 0)
            return -1;
    }
    return 0;
}

int sc_plan_run(const ir_graph *g, const sc_plan *p, tj_tensor *const *inputs, tj_tensor **outs,
                const sc_notify *nt)
{
    tj_tensor *stack_vals[256];
    tj_tensor **vals = p->nslots <= 256 ? stack_vals : malloc(sizeof *vals * (size_t)p->nslots);
    if (!vals) {
        rt_error("out of memory running graph @%s", g->name);
        return -1;
    }
    memset(vals, 0, sizeof *vals * (size_t)p->nslots);
    for (int k = 0; k < g->ninputs; k++)
        vals[k] = inputs[k];
    bool few_done[64], *done = NULL;
    if (nt && nt->n > 0) {
        done = nt->n <= 64 ? few_done : malloc(sizeof *done * (size_t)nt->n);
        if (!done) {
            if (vals != stack_vals)
                free(vals);
            rt_error("out of memory running graph @%s", g->name);
            return -1;
        }
        memset(done, 0, sizeof *done * (size_t)nt->n);
    }
    sc_call_mem m;
    int rc = sc_mem_begin(p, &m, inputs);
    if (rc == 0 && done)   /* outputs that are inputs */
        rc = notify_ready(g, nt, vals, done);
    int skip = -1;   /* a kernel step done by a GEMM's epilogue (run_epi) */
    for (int i = 0; i < p->nsteps && rc == 0; i++) {
        const step *s = &p->steps[i];
        if (p->ntail && i == p->nsteps - p->ntail && (rc = tail_begin(p, vals, &m)) != 0)
            break;
        int last = i;   /* the last step run now */
        if (p->par && p->par[i] && rt_threads() == 2) {   /* on the pool's two threads (pair.c) */
            last = sc_pair_run(g, p, i, vals, &m);
            rc = last < 0 ? -1 : 0;
            last = last < 0 ? i : last;
        } else {
            bool prof = rt_prof_on() && s->kind != S_VIEW &&
                        (s->region < 0 || p->regions[s->region].first == i);
            rt_prof_id prev = 0;
            int64_t t0 = prof ? sc_prof_start(p, i, &prev) : 0;
            if (s->region >= 0)   /* a region runs whole at its first step */
                rc = p->regions[s->region].first == i ? sc_block_run(g, p, s->region, vals, &m) : 0;
            else if (i == skip)
                rc = run_skipped(p, s, vals, &m);
            else if (p->epi && p->epi[i].kstep >= 0)
                rc = run_epi(g, p, i, vals, &m, &skip);
            else
                rc = s->kind == S_KERNEL ? run_kernel(p, s, vals, &m)
                                         : run_node(g, p, g->nodes[s->node], vals, &m);
            if (prof)
                sc_prof_stop(p, i, t0, prev);
        }
        if (rc == 0 && done)   /* what these steps finished, reported before the next runs */
            rc = notify_ready(g, nt, vals, done);
        for (int r = p->rel_start[i]; r < p->rel_start[last + 1] && rc == 0; r++) {
            tj_release(vals[p->rel[r]]);
            vals[p->rel[r]] = NULL;
        }
        i = last;
    }
    if (rc == 0)
        for (int j = 0; j < g->noutputs; j++)
            outs[j] = tj_retain(vals[ir_slot(g, g->outputs[j])]);
    for (int k = g->ninputs; k < p->nslots; k++)
        tj_release(vals[k]);
    sc_mem_end(p, &m);
    if (vals != stack_vals)
        free(vals);
    if (done != few_done)
        free(done);
    return rc;
}

