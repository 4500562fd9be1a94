/* explain.c - tj_explain and tj_compiled_stats_get: what a compiled function
 * did (graphs, guards, breaks and split pieces, recompiles, kernels, eager
 * calls, compile times, the partitioned backward), from its entries
 * (compiled.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dump.h"
#include "../sched/exec.h"
#include "compiled.h"

static void explain_guards(FILE *f, const entry *e)
{
    for (int k = 0; k < e->nargs; k++) {
        const guard *g = &e->args[k];
        ir_type t = {g->dtype, g->ndim, false, {0}};
        memcpy(t.shape, g->shape, sizeof t.shape);
        char b[IR_TYPE_BUF];
        fprintf(f, "    guard arg %d: %s %s%s\n", k, ir_type_fmt(&t, b, sizeof b),
                g->contiguous ? "contiguous" : "strided",
                g->storage > 0   ? ", its whole storage (as_strided reads it)"
                : g->storage < 0 ? ", a view of its storage (as_strided reads it: eager)"
                                 : "");
    }
    for (int k = 0; k < e->nsyms; k++)
        if (e->symmin[k] > 2)
            fprintf(f, "    guard s%d >= %lld (the graph's slices and offsets of it)\n", k,
                    (long long)e->symmin[k]);
    for (int k = 0; k < e->nrefs; k++) {
        const capref *r = &e->caps[k];
        char b[IR_TYPE_BUF];
        fprintf(f, "    guard captured tensor %d (%s%s): %s\n", k,
                r->w ? "identity" : "a constant the model made, held",
                r->values ? ", version: the trace read its values" : "",
                fe_cap_released(r) ? "released" : tj_describe(r->t, b, sizeof b));
    }
}

/* What a call writes back: in-place updates and gradients (trace_effects.c);
 * stored: of the updates, those the plan's kernels store into their tensors. */
static void explain_writes(FILE *f, const entry *e, int stored)
{
    int data = 0, grads = 0, none = 0, hooked = 0;
    for (int k = 0; k < e->nwrites; k++) {
        hooked += e->writes[k].kind == FE_WRITE_GRAD && e->writes[k].hooked;
        data += e->writes[k].kind == FE_WRITE_DATA;
        grads += e->writes[k].kind == FE_WRITE_GRAD;
        none += e->writes[k].kind == FE_WRITE_GRAD_NONE;
    }
    char how[96] = "";
    if (stored)
        snprintf(how, sizeof how, " (%d stored there by the plan's kernels, %d copied)", stored, data - stored);
    if (e->nwrites)
        fprintf(f, "    writes back per call: %d tensor%s in place%s, %d gradient%s set, %d dropped "
                   "(functionalized in the graph)\n", data, data == 1 ? "" : "s", how, grads,
                grads == 1 ? "" : "s", none);
    if (hooked)
        fprintf(f, "    %d gradient%s with a ready-hook: each set, and its hook run, as soon as the "
                   "plan's step that makes it has run\n", hooked, hooked == 1 ? "" : "s");
    for (int k = 0; k < e->nguards; k++)
        fprintf(f, "    guard gradient of a leaf: %s (read before it was set)\n",
                e->grad_guards[k].prior ? "the same tensor" : "none");
}

static void explain_plan(FILE *f, const entry *e)
{
    fprintf(f, "    traced in %.1f ms%s", e->trace_ms,
            e->frozen ? "; frozen: what reads only weights was folded into constants" : "");
    if (e->bn_folded)
        fprintf(f, " (%d batch norm%s folded into the conv/linear/matmul before %s)",
                e->bn_folded, e->bn_folded > 1 ? "s" : "", e->bn_folded > 1 ? "them" : "it");
    fprintf(f, "\n");
    sc_plan_info pi = {0};
    sc_plan_mem pm = {0};
    if (e->plans) {
        sc_plans_info(e->plans, &pi);
        sc_plans_mem(e->plans, &pm);
    }
    if (pi.compiled)
        fprintf(f, "    compiled: %d kernel%s, %d eager call%s per call (built in %.1f ms)\n", pi.kernels,
                pi.kernels == 1 ? "" : "s", pi.eager_calls, pi.eager_calls == 1 ? "" : "s", pi.compile_ms);
    else if (pi.why[0])
        fprintf(f, "    graph executor: %s\n", pi.why);
    if (pi.compiled && pi.pool_notes[0])   /* sched/block.c */
        fprintf(f, "    pooling after conv: %d fused: %s\n", pi.conv_pools, pi.pool_notes);
    if (e->keep)
        fe_keep_explain(f, e->keep);
    explain_writes(f, e, pi.compiled ? pm.into : 0);
}

int tj_compiled_stats_get(const tj_compiled *c, tj_compiled_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!c) {
        rt_error("tj_compiled_stats_get: the compiled handle is NULL");
        return -1;
    }
    tj_compiled *m = (tj_compiled *)c;
    pthread_mutex_lock(&m->lock);
    out->calls = atomic_load(&m->calls);
    out->eager_calls = atomic_load(&m->eager_calls);
    const entry *last = NULL;
    for (int i = 0; i < c->nentries; i++) {
        const entry *e = c->entries[i];
        if (e->split) {
            fe_split_info si;
            fe_split_stats(e->split, &si);
            out->split.graphs += si.graphs;
            out->split.breaks += si.breaks;
            out->split.compiled += si.compiled;
            out->split.kernels += si.kernels;
            out->split.runs += si.runs;
            out->split.executor_runs += si.executor_runs;
            out->split.late += si.late;
            continue;
        }
        e->g ? out->graphs++ : out->breaks++;
        if (e->g)
            last = e;
    }
    sc_plan_info pi = {0};
    sc_plan_mem pm = {0};
    if (last && last->plans) {
        sc_plans_info(last->plans, &pi);
        sc_plans_mem(last->plans, &pm);
    }
    for (int i = 0; i < c->nentries; i++)
        for (int k = 0; k < c->entries[i]->njoints; k++)
            fe_joint_stats(c->entries[i]->joints[k], out);
    const tj_compiled *bwd[FE_MAX_RESULTS];
    for (int k = 0; k < FE_MAX_RESULTS; k++)
        bwd[k] = fe_aot_compiled(m->aot[k]);   /* held until c is freed */
    pthread_mutex_unlock(&m->lock);
    for (int k = 0; k < FE_MAX_RESULTS; k++) {
        tj_compiled_stats b;
        if (bwd[k] && tj_compiled_stats_get(bwd[k], &b) == 0) {
            out->backward.graphs += b.graphs;
            out->backward.breaks += b.breaks;
            out->backward.calls += b.calls;
            out->backward.eager_calls += b.eager_calls;
        }
    }
    out->plan.compiled = pi.compiled;
    snprintf(out->plan.why, sizeof out->plan.why, "%s", pi.why);
    out->plan.kernels = pi.kernels;
    out->plan.eager_calls = pi.eager_calls;
    out->plan.compile_ms = pi.compile_ms;
    out->plan.arena_bytes = pm.arena_bytes;
    out->plan.output_bytes = pm.own_bytes;
    out->plan.scratch_bytes = pm.scratch_bytes;
    out->plan.peak_bytes = pm.peak_bytes;
    out->plan.buffers = pm.buffers;
    out->plan.writes_stored = pm.into;
    return 0;
}

char *tj_explain(const tj_compiled *c)
{
    if (!c) {
        rt_error("tj_explain: the compiled handle is NULL");
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        rt_error("tj_explain: out of memory");
        return NULL;
    }
    tj_compiled *m = (tj_compiled *)c;
    pthread_mutex_lock(&m->lock);
    int graphs = 0, breaks = 0;
    for (int i = 0; i < c->nentries; i++)
        c->entries[i]->g || c->entries[i]->split ? graphs++ : breaks++;
    fprintf(f, "compiled %s: %lu calls, %d graph%s captured, %d graph break%s, %lu eager calls\n",
            c->name, (unsigned long)atomic_load(&m->calls), graphs, graphs == 1 ? "" : "s",
            breaks, breaks == 1 ? "" : "s", (unsigned long)atomic_load(&m->eager_calls));
    for (int i = 0; i < c->nentries; i++) {
        const entry *e = c->entries[i];
        if (e->split)
            fprintf(f, "  graph %d: split at graph breaks (the first: %s); %lu calls\n", i + 1,
                    e->eager_why, (unsigned long)atomic_load(&m->entries[i]->calls));
        if (e->split)
            fe_split_explain(e->split, f);
        else if (e->g)
            fprintf(f, "  graph %d: %d nodes, %d inputs (%d captured), %d symbolic dim%s, %lu calls\n",
                    i + 1, e->g->nnodes, e->g->ninputs, e->ncaps, e->nsyms,
                    e->nsyms == 1 ? "" : "s", (unsigned long)atomic_load(&m->entries[i]->calls));
        else
            fprintf(f, "  graph break %d: %s; %lu calls ran eagerly\n", i + 1, e->eager_why,
                    (unsigned long)atomic_load(&m->entries[i]->calls));
        explain_plan(f, e);
        explain_guards(f, e);
        for (int k = 0; k < e->njoints; k++)
            fe_joint_explain(e->joints[k], e->nsyms > 0, f);
        if (e->njoints == FE_JOINT_SHAPES && atomic_load(&e->joint_misses))
            fprintf(f, "  backward not partitioned for %lu calls: %d argument shapes have "
                       "partitioned backwards (the limit); other shapes %s\n",
                    (unsigned long)atomic_load(&e->joint_misses), FE_JOINT_SHAPES,
                    e->nwrites || e->draws.n ? "run eagerly (the model writes to tensors or draws "
                                               "random numbers, which aot.c's backward would do again)"
                                             : "recompute the forward (aot.c's)");
        if (e->joint_why[0] && (e->nwrites || e->draws.n))
            fprintf(f, "  calls in grad mode run eagerly: %s (the model %s, which aot.c's "
                       "backward would do again)\n",
                    e->joint_why[0], e->nwrites ? "writes to tensors" : "draws random numbers");
        else if (e->joint_why[0])
            fprintf(f, "  backward not partitioned: %s (aot.c's: saves the arguments, recomputes "
                       "the forward)\n", e->joint_why[0]);
        if (e->joint_why[1])
            fprintf(f, "  calls with arguments that require grad run eagerly: %s\n", e->joint_why[1]);
    }
    if (c->nlog)
        fprintf(f, "  log:\n");
    for (int i = 0; i < c->nlog; i++)
        fprintf(f, "    %s\n", c->log[i]);
    for (int k = 0; k < FE_MAX_RESULTS; k++) {
        char *b = c->aot[k] ? tj_explain(fe_aot_compiled(c->aot[k])) : NULL;
        if (!b)
            continue;
        /* aot.c: the backward recomputes the forward from the saved arguments */
        fprintf(f, "  backward of result %d: saves the call's arguments, recomputes the "
                   "forward values its gradients read\n", k);
        char *save = NULL;
        for (char *line = strtok_r(b, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            fprintf(f, "    %s\n", line);
        free(b);
    }
    pthread_mutex_unlock(&m->lock);
    fclose(f);
    return buf;
}
