/* compile.c - tj_compile: the per-function cache of traced graphs behind
 * guards, automatic dynamic dims, graph breaks, the recompile limit, and
 * tj_explain.
 *
 *   tj_call(c, args)
 *     tracing already?     run fn inline: the outer trace records its ops
 *     an entry's guards pass?  graph: run it (sc_exec) | eager entry: run fn
 *     else limit reached?  run fn eagerly (logged once)
 *     else trace a new entry: dims that changed against an earlier entry
 *          become symbolic (one graph then serves all their sizes); a graph
 *          break makes the entry eager for its signature
 *
 * Guards of an entry: per argument dtype, rank, each static dim's size (a
 * symbolic dim: any size >= 2, equal wherever the same symbol appears), and
 * the layout (contiguous, or the exact strides); the argument count is fixed
 * by the first call. Captured tensors (weights reached through ctx) are
 * guarded by identity: one made before the trace is held by a weak reference
 * (runtime/tensor.c), so releasing it fails the guard and the next call
 * traces again, capturing whatever ctx points at then; the plan reads a
 * capture's storage on every call, so in-place updates are seen. A tensor
 * whose values the trace read (tj_item, tj_data) is also guarded on its
 * storage version: those values are baked into the graph. A tensor the model
 * made while traced is a constant of the graph, held (retained).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ir/dump.h"
#include "../sched/exec.h"
#include "../sched/sched.h"
#include "trace.h"
#include "autograd.h"
#include "../runtime/iter.h"
#include "../runtime/random.h"
#include "compiled.h"

/* ---- entries ------------------------------------------------------------------ */

static void entry_free(entry *e)
{
    if (!e)
        return;
    for (int k = 0; e->caps && k < e->nrefs; k++) {
        if (e->caps[k].w)
            rt_wref_release(e->caps[k].w);
        else
            tj_release(e->caps[k].t);
    }
    free(e->caps);
    free(e->write_ref);
    free(e->guard_ref);
    free(e->args);
    free(e->last_use);
    free(e->eager_why);
    fe_split_free(e->split);
    fe_draws_free(&e->draws);
    free(e->symval);
    for (int k = 0; k < e->njoints; k++)
        fe_joint_release(e->joints[k]);
    free(e->joint_why[0]);
    free(e->joint_why[1]);
    sc_plans_free(e->plans);
    fe_keep_free(e->keep);
    ir_graph_free(e->g);
    fe_trace tmp = {.writes = e->writes, .nwrites = e->nwrites, .grad_guards = e->grad_guards,
                    .nguards = e->nguards};
    fe_trace_writes_free(&tmp);
    free(e);
}

static void logf_(tj_compiled *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logf_(tj_compiled *c, const char *fmt, ...)
{
    char buf[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (c->nlog == c->logcap) {
        int cap = c->logcap ? 2 * c->logcap : 8;
        char **l = realloc(c->log, (size_t)cap * sizeof *l);
        if (!l)
            return;
        c->log = l;
        c->logcap = cap;
    }
    char *s = strdup(buf);
    if (s)
        c->log[c->nlog++] = s;
}

/* Guards for a new entry: dims marked dynamic (and >= 2) become symbols;
 * equal sizes share a symbol (duck sizing), so x[s0] + y[s0] stays valid.
 * Returns 0, 1 when the entry must be static instead, -1 out of memory. */
static int make_guards(tj_compiled *c, tj_tensor *const *args, int nargs, bool dynamic,
                       entry *e)
{
    int64_t symsize[FE_MAX_SYMS];
    e->nsyms = 0;
    e->autocast = fe_autocast_dtype();
    for (int k = 0; k < nargs; k++) {
        guard *g = &e->args[k];
        fe_guard_of(args[k], g);
        /* dims that changed before (unless no_dynamic), dims marked dynamic,
         * never dims marked static */
        uint32_t want = ((c->no_dynamic ? 0 : c->dyn[k]) | args[k]->dyn_mark) & ~args[k]->static_mark;
        for (int d = 0; dynamic && d < g->ndim; d++) {
            if (!(want >> d & 1) || g->shape[d] < 2)
                continue;
            int s = 0;
            while (s < e->nsyms && symsize[s] != g->shape[d])
                s++;
            if (s == e->nsyms)
                symsize[e->nsyms++] = g->shape[d];
            g->shape[d] = IR_SYM(s);
        }
        if (dynamic && want && !rt_is_contiguous(args[k])) {
            /* its exact strides are guarded, and they follow its sizes */
            logf_(c, "arg %d is not contiguous: its dims stay static", k);
            return 1;
        }
    }
    e->symval = malloc((2 * (size_t)e->nsyms + 1) * sizeof *e->symval);
    if (!e->symval)
        return -1;
    memcpy(e->symval, symsize, (size_t)e->nsyms * sizeof *symsize);
    e->symmin = e->symval + e->nsyms;
    for (int k = 0; k < e->nsyms; k++)
        e->symmin[k] = 2;
    return 0;
}

static void dump_graph(const tj_compiled *c, const ir_graph *g)
{
    if (!ir_dump_enabled(NULL, "graph"))
        return;
    char *text = ir_print(g, NULL);
    if (text)
        ir_dump_text("graph", c->name, text);
    free(text);
}

/* Re-inplacing (sched.h, sc_plans_set_into): each value written back into
 * a capture or an argument may be stored there by the kernel computing it;
 * write_back then finds it there and copies nothing. Not when a gradient has
 * a ready-hook (the hook runs during the call and may read a weight), nor
 * with TJIT_REINPLACE=0 (for measuring). 0, or -1 out of memory. */
static int entry_into(const entry *e)
{
    const char *env = getenv("TJIT_REINPLACE");
    int n = e->g->noutputs, v = 0, few[256], *into = n <= 256 ? few : malloc(sizeof *into * (size_t)n);
    if (!into)
        return -1;
    bool use = !(env && !strcmp(env, "0"));
    for (int j = 0; j < n; j++)
        into[j] = -1;
    for (int k = 0; k < e->nwrites; k++) {
        const fe_write *w = &e->writes[k];
        int x = -1;   /* the graph input it goes to: a capture (after the args) or an argument */
        if (e->write_ref[k] >= 0 && e->write_ref[k] < e->ncaps)
            x = e->nargs + e->write_ref[k];
        else if (e->write_ref[k] < 0 && !w->target)
            x = w->arg;
        use &= !w->hooked;
        if (w->kind == FE_WRITE_DATA && e->nresults + v < n)
            into[e->nresults + v] = x;
        v += w->value != NULL;
    }
    int rc = use ? sc_plans_set_into(e->plans, into) : 0;
    if (into != few)
        free(into);
    return rc;
}

/* Runs the model function: its results in outs[0..n) (the current scope's);
 * n, or -1 with an error set. */
int fe_run_model(tj_model_fn fn, tj_model_multi_fn mfn, void *ctx, const char *name,
                 tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    if (mfn) {
        int n = mfn(ctx, args, nargs, outs, max);
        if (n > max) {
            rt_error("%s: the model returned %d results, at most %d fit", name, n, max);
            return -1;
        }
        for (int k = 0; k < n; k++)
            if (!outs[k]) {
                if (!rt_has_error())
                    rt_error("%s: result %d of the model is NULL", name, k);
                return -1;
            }
        if (n < 0 && !rt_has_error())
            rt_error("%s: the model failed without a message", name);
        return n;
    }
    outs[0] = fn(ctx, args, nargs);
    if (!outs[0] && !rt_has_error())
        rt_error("%s: the model returned NULL without a message", name);
    return outs[0] ? 1 : -1;
}

static int run_fn(const tj_compiled *c, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    return fe_run_model(c->fn, c->mfn, c->ctx, c->name, args, nargs, outs, max);
}

/* The index of t among e's concrete tensors, or -1. */
static int cap_index(const entry *e, const tj_tensor *t)
{
    for (int k = 0; t && k < e->nrefs; k++)
        if (e->caps[k].t == t)
            return k;
    return -1;
}

/* Moves the trace's captures and value reads into e: a tensor made before
 * the trace is held weakly, a constant the model made strongly; writes and
 * gradient guards on a capture refer to it by index (and hold it no more). */
static int take_caps(entry *e, fe_trace *tr)
{
    int n = tr->ncaps + tr->nvreads;
    e->caps = calloc((size_t)n + 1, sizeof *e->caps);
    e->write_ref = malloc(((size_t)e->nwrites + 1) * sizeof *e->write_ref);
    e->guard_ref = malloc(((size_t)e->nguards + 1) * sizeof *e->guard_ref);
    if (!e->caps || !e->write_ref || !e->guard_ref)
        return -1;
    e->ncaps = tr->ncaps;
    for (int k = 0; k < tr->ncaps + tr->nvreads; k++) {
        tj_tensor *t = k < tr->ncaps ? tr->caps[k] : tr->vreads[k - tr->ncaps];
        int at = cap_index(e, t);
        if (at < 0) {
            at = e->nrefs++;
            e->caps[at] = (capref){tj_retain(t), NULL, fe_version_of(t), false};
            if (!t->made_tracing) {
                if (!(e->caps[at].w = rt_wref_of(t)))
                    return -1;
                tj_release(t);   /* the entry's hold is the weak reference now */
            }
        }
        e->caps[at].values |= k >= tr->ncaps;
    }
    for (int k = 0; k < e->nwrites; k++) {
        fe_write *w = &e->writes[k];
        e->write_ref[k] = cap_index(e, w->target);
        if (e->write_ref[k] >= 0 && e->caps[e->write_ref[k]].w) {
            tj_release(w->target);
            w->target = NULL;
        }
    }
    for (int k = 0; k < e->nguards; k++) {
        fe_grad_guard *gg = &e->grad_guards[k];
        e->guard_ref[k] = cap_index(e, gg->leaf);
        if (e->guard_ref[k] >= 0 && e->caps[e->guard_ref[k]].w) {
            tj_release(gg->leaf);
            gg->leaf = NULL;
        }
    }
    return 0;
}

/* Whether a trace that broke can run split at its breaks: not a training
 * step (gradients set inside), nothing that requires grad in grad mode, no
 * tape made inside (the pieces keep no tape). */
static bool splittable(const fe_trace *tr)
{
    if (tr->nguards || tr->nosplit || tr->taped)
        return false;
    for (int k = 0; k < tr->nwrites; k++)
        if (tr->writes[k].kind != FE_WRITE_DATA)
            return false;
    for (int k = 0; tj_grad_enabled() && k < tr->ncaps; k++)
        if (fe_ag_requires_grad(tr->caps[k]))
            return false;
    return true;
}

/* tj_compile_options.freeze: what reads only weights is folded (freeze.c);
 * the folded values are held, every weight is guarded by identity and by
 * version (a write into it, or its release, makes the next call trace
 * again). Not for entries that write back or watch gradients, nor when a
 * weight requires grad in grad mode. 0, or -1 with an error. */
static int freeze_entry(entry *e)
{
    if (e->nwrites || e->nguards)
        return 0;
    tj_tensor *few[64], **caps = e->ncaps <= 64 ? few : malloc(sizeof *caps * (size_t)e->ncaps);
    if (!caps)
        return -1;
    bool grad = false;
    for (int k = 0; k < e->ncaps; k++) {
        caps[k] = e->caps[k].t;
        grad |= tj_grad_enabled() && fe_ag_requires_grad(caps[k]);
    }
    ir_graph *ng = NULL;
    tj_tensor **cs = NULL;
    int *src = NULL, nc = 0, nbn = 0;
    int rc = grad ? 0 : fe_freeze_graph(e->g, caps, &ng, &cs, &src, &nc, &nbn);
    if (caps != few)
        free(caps);
    if (rc <= 0)
        return rc;
    capref *nr = calloc((size_t)(nc + e->nrefs) + 1, sizeof *nr);
    for (int k = 0; nr && k < nc; k++) {
        if (src[k] < 0) {
            nr[k] = (capref){cs[k], NULL, fe_version_of(cs[k]), false};
            cs[k] = NULL;
            continue;
        }
        const capref *o = &e->caps[src[k]];   /* the weight again, with its own hold */
        nr[k] = (capref){o->t, NULL, o->version, false};
        if (!o->w)
            tj_retain(o->t);
        else if (!(nr[k].w = rt_wref_of(o->t))) {
            nr[k].t = NULL;
            rc = -1;
        }
    }
    if (!nr || rc < 0) {
        for (int k = 0; nr && k < nc; k++)
            if (nr[k].w)
                rt_wref_release(nr[k].w);
            else if (nr[k].t)
                tj_release(nr[k].t);
        for (int k = 0; k < nc; k++)
            tj_release(cs[k]);
        free(nr);
        free(cs);
        free(src);
        ir_graph_free(ng);
        rt_error("freeze: out of memory");
        return -1;
    }
    for (int k = 0; k < e->nrefs; k++) {   /* the traced weights: identity and version */
        nr[nc + k] = e->caps[k];
        nr[nc + k].values = true;
    }
    free(e->caps);
    e->caps = nr;
    e->ncaps = nc;
    e->nrefs += nc;
    ir_graph_free(e->g);
    e->g = ng;
    e->frozen = true;
    e->bn_folded = nbn;
    free(cs);
    free(src);
    return 0;
}

/* Runs fn on symbolic args and returns the new entry, or NULL when fn failed
 * without a graph break (the caller runs it eagerly to report the error). */
static entry *trace_entry(tj_compiled *c, tj_tensor *const *args, int nargs, bool dynamic)
{
    entry *e = calloc(1, sizeof *e);
    if (!e || !(e->args = calloc((size_t)nargs + 1, sizeof *e->args))) {
        free(e);
        rt_error("out of memory tracing %s", c->name);
        return NULL;
    }
    e->nargs = nargs;
    memset(e->res_view, -1, sizeof e->res_view);   /* no result views another until traced */
    int rc = make_guards(c, args, nargs, dynamic, e);
    if (rc != 0) {
        entry_free(e);
        if (rc > 0)
            return trace_entry(c, args, nargs, false);
        rt_error("out of memory tracing %s", c->name);
        return NULL;
    }
    fe_trace *tr = fe_trace_begin(c->name);
    if (!tr) {
        entry_free(e);
        rt_error("out of memory tracing %s", c->name);
        return NULL;
    }
    tr->symval = e->symval;
    tr->nsyms = e->nsyms;
    tj_tensor *sargs[FE_MAX_ARGS];
    tr->args = sargs;
    tr->examples = args;
    tr->nargs = nargs;
    tj_scope_begin();
    bool ok = true;
    for (int k = 0; k < nargs && ok; k++) {
        ir_type sym = {args[k]->dtype, args[k]->ndim, false, {0}}, ex;
        memcpy(sym.shape, e->args[k].shape, sizeof sym.shape);
        rt_type_of(args[k], &ex);
        char name[16];
        snprintf(name, sizeof name, "x%d", k);
        ir_node *n = ir_graph_input(tr->g, name, &sym, false);
        ok = n && (sargs[k] = fe_trace_arg(tr, n, &ex, args[k]));
    }
    tj_tensor *res[FE_MAX_RESULTS];
    int nres = ok ? run_fn(c, sargs, nargs, res, FE_MAX_RESULTS) : -1;
    for (int k = 0; k < nargs && k < 64; k++) {   /* as_strided took it as its own storage */
        if (!(tr->exact_args >> k & 1))
            continue;
        bool holds = rt_holds_storage(args[k]);
        e->args[k].storage = holds ? 1 : -1;
        if (!holds) {
            char why[256];
            snprintf(why, sizeof why,
                     "as_strided of argument %d, a view at storage offset %lld: a traced graph "
                     "has values, not storages", k, (long long)args[k]->offset);
            fe_trace_break(tr, why);
        }
    }
    /* outputs: the results, then the value of each write-back */
    ir_node **outs = nres >= 0 ? calloc((size_t)(nres + tr->nwrites + 1), sizeof *outs) : NULL;
    int nouts = 0;
    if (outs && !tr->brk[0] && !tr->failed) {
        bool good = true;
        for (int k = 0; k < nres && good; k++)
            good = (outs[nouts++] = fe_trace_value(tr, res[k])) != NULL;
        for (int k = 0; k < tr->nwrites && good; k++)
            if (tr->writes[k].value)
                good = (outs[nouts++] = fe_trace_value(tr, tr->writes[k].value)) != NULL;
        nouts = good ? nouts : 0;
    }
    for (int k = 0; k < nres && k < nouts; k++) {   /* eagerly two tensors, here one value */
        bool twin = false;
        e->res_same[k] = -1;
        for (int j = 0; j < k && e->res_same[k] < 0; j++) {
            twin |= outs[j] == outs[k] && res[j] != res[k];
            e->res_same[k] = res[j] == res[k] ? (int8_t)j : -1;   /* the same tensor again */
        }
        if (twin && e->res_same[k] < 0)
            e->res_twin |= (uint64_t)1 << k;
    }
    if (nouts >= nres && fe_alias_viewed(tr, res, outs, nres, e->res_view) != 0)
        nouts = 0;
    e->nresults = nres;
    e->grad_known = tj_grad_enabled();
    for (int k = 0; k < nres && e->grad_known; k++)
        if (fe_ag_requires_grad(res[k]))
            e->res_grad |= (uint64_t)1 << k;
    tj_scope_end();

    if ((tr->dyn_read || tr->dyn_unsupported) && dynamic && e->nsyms && !tr->brk[0]) {
        /* The model used a symbolic size as a number, or an op's rule cannot
         * follow symbolic dims: trace it static. */
        if (tr->dyn_read)
            logf_(c, "the model reads the size of a dynamic dim; dims stay static");
        else
            logf_(c, "an op cannot follow symbolic dims yet (%s); dims stay static", tr->dyn_why);
        c->dyn_disabled = true;
        free(outs);
        fe_trace_end(tr);
        entry_free(e);
        return trace_entry(c, args, nargs, false);
    }
    fe_symbol_mins(tr->g, e);
    if (tr->brk[0]) {
        e->eager_why = strdup(tr->brk);
        if (splittable(tr))
            e->split = fe_split_new(c->name);
    } else if (!nouts || ir_graph_set_outputs(tr->g, outs, nouts) != 0) {
        free(outs);
        fe_trace_end(tr);
        entry_free(e);
        return NULL;
    } else {
        char err[512];
        if (ir_verify(tr->g, err, sizeof err) != 0) {
            /* A tracer bug, not the user's: keep the call correct. */
            e->eager_why = strdup(err);
        } else {
            e->g = tr->g;
            tr->g = NULL;
            e->draws = tr->draws;
            tr->draws = (fe_draws){0};
            e->writes = tr->writes;
            e->nwrites = tr->nwrites;
            e->grad_guards = tr->grad_guards;
            e->nguards = tr->nguards;
            tr->writes = NULL;
            tr->grad_guards = NULL;
            tr->nwrites = tr->nguards = 0;
            if (take_caps(e, tr) != 0 || (c->freeze ? freeze_entry(e) : fe_keep_entry(e, c->name)) != 0 ||
                !(e->last_use = sc_exec_last_use(fe_keep_run_graph(e))) ||
                !(e->plans = sc_plans_new(fe_keep_run_graph(e), c->name)) || entry_into(e) != 0) {
                free(outs);
                fe_trace_end(tr);
                entry_free(e);
                if (!rt_has_error())
                    rt_error("out of memory tracing %s", c->name);
                return NULL;
            }
            dump_graph(c, e->g);
        }
    }
    free(outs);
    fe_trace_end(tr);
    return e;
}

/* Marks dims that differ from an earlier entry's as dynamic (sticky). */
static void mark_dynamic(tj_compiled *c, tj_tensor *const *args, int nargs)
{
    if (c->no_dynamic || c->dyn_disabled)
        return;
    for (int i = 0; i < c->nentries; i++) {
        const entry *e = c->entries[i];
        if (e->nargs != nargs)
            continue;
        for (int k = 0; k < nargs; k++) {
            const guard *g = &e->args[k];
            if (g->dtype != args[k]->dtype || g->ndim != args[k]->ndim)
                continue;
            for (int d = 0; d < g->ndim; d++)
                if (!IR_IS_SYM(g->shape[d]) && g->shape[d] != args[k]->shape[d] &&
                    args[k]->shape[d] >= 2 && !(args[k]->static_mark >> d & 1))
                    c->dyn[k] |= 1u << d;
        }
    }
}

/* The entry whose guards pass, or NULL with why set to the guard that failed
 * in the closest entry (the one that passed the most checks). */
static entry *find_entry(tj_compiled *c, tj_tensor *const *args, int nargs, char *why, size_t n)
{
    int best = -1;
    for (int i = c->nentries - 1; i >= 0; i--) {
        char w[320];
        int passed;
        if (atomic_load(&c->entries[i]->busy) == 0 && fe_entry_dead(c->entries[i])) {
            /* a capture was released: it can never match again; drop it
             * (no call runs its plan: busy is only raised under the lock) */
            fe_caps_check(c->entries[i], w, sizeof w);
            snprintf(why, n, "%s (graph %d dropped)", w, i + 1);
            best = INT32_MAX;
            entry_free(c->entries[i]);
            memmove(&c->entries[i], &c->entries[i + 1],
                    (size_t)(c->nentries - i - 1) * sizeof *c->entries);
            c->nentries--;
            continue;
        }
        if (fe_entry_check(c->entries[i], args, nargs, w, sizeof w, &passed))
            return c->entries[i];
        if (passed > best) {
            best = passed;
            snprintf(why, n, "%s", w);
        }
    }
    return NULL;
}

/* Looks up or makes the entry for args; NULL: run eagerly. */
static entry *lookup(tj_compiled *c, tj_tensor *const *args, int nargs)
{
    char why[400] = "";
    pthread_mutex_lock(&c->lock);
    entry *e = find_entry(c, args, nargs, why, sizeof why);
    if (!e && c->nentries >= c->limit) {
        if (!c->limit_logged)
            logf_(c, "recompile limit (%d) reached: calls that match no graph run eagerly "
                     "(last guard failure: %s)", c->limit, why);
        c->limit_logged = true;
    } else if (!e) {
        mark_dynamic(c, args, nargs);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        e = trace_entry(c, args, nargs, !c->dyn_disabled);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (e)
            e->trace_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (e && c->nentries == c->cap) {
            int cap = c->cap ? 2 * c->cap : 4;
            entry **l = realloc(c->entries, (size_t)cap * sizeof *l);
            if (!l) {
                entry_free(e);
                e = NULL;
            } else {
                c->entries = l;
                c->cap = cap;
            }
        }
        if (e) {
            c->entries[c->nentries++] = e;
            if (c->traces++ == 0)
                logf_(c, "graph %d: first call", c->nentries);
            else
                logf_(c, "graph %d: recompiled because %s", c->nentries, why);
        }
    }
    if (e)
        atomic_fetch_add(&e->busy, 1);
    pthread_mutex_unlock(&c->lock);
    return e;
}

/* ---- public API ------------------------------------------------------------------ */

static tj_compiled *compiled_new(tj_model_fn fn, tj_model_multi_fn mfn, void *ctx,
                                 const tj_compile_options *opts)
{
    if (!fn && !mfn) {
        rt_error("tj_compile: the model function is NULL");
        return NULL;
    }
    tj_compiled *c = calloc(1, sizeof *c);
    if (!c) {
        rt_error("tj_compile: out of memory");
        return NULL;
    }
    c->fn = fn;
    c->mfn = mfn;
    c->ctx = ctx;
    const char *name = opts && opts->name ? opts->name : "model";
    if (!ir_name_valid(name, strlen(name)) || strlen(name) >= sizeof c->name) {
        free(c);
        rt_error("tj_compile: name \"%s\" is not an identifier of at most %zu characters", name,
                 sizeof c->name - 1);
        return NULL;
    }
    strcpy(c->name, name);
    c->limit = opts && opts->recompile_limit > 0 ? opts->recompile_limit : 8;
    c->no_dynamic = opts && opts->no_dynamic;
    const char *at = getenv("TJIT_AUTOTUNE");
    bool autotune = (opts && opts->autotune) || (at && !strcmp(at, "1"));
    bool int8 = opts && opts->quantize_dynamic;
    c->gemm_flags = (autotune ? RT_GEMM_AUTOTUNE : 0) | (int8 ? RT_GEMM_INT8 : 0);
    c->freeze = (opts && opts->freeze) || autotune || int8;
    atomic_init(&c->nargs, -1);
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

tj_compiled *tj_compile(tj_model_fn fn, void *ctx, const tj_compile_options *opts)
{
    return compiled_new(fn, NULL, ctx, opts);
}

tj_compiled *tj_compile_multi(tj_model_multi_fn fn, void *ctx, const tj_compile_options *opts)
{
    return compiled_new(NULL, fn, ctx, opts);
}

void tj_compiled_free(tj_compiled *c)
{
    if (!c)
        return;
    const char *ex = getenv("TJIT_EXPLAIN");
    if (ex && *ex && strcmp(ex, "0") != 0) {   /* explain for any program (docs/cli.md) */
        char *text = tj_explain(c);
        if (text)
            fputs(text, stderr);
        free(text);
    }
    for (int i = 0; i < c->nentries; i++)
        entry_free(c->entries[i]);
    free(c->entries);
    for (int i = 0; i < c->nlog; i++)
        free(c->log[i]);
    free(c->log);
    for (int k = 0; k < FE_MAX_RESULTS; k++)
        fe_aot_release(c->aot[k]);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Whether e's graph read leaf's gradient from before the call (a guard pins it). */
static bool grad_guarded(const entry *e, const tj_tensor *leaf)
{
    for (int k = 0; k < e->nguards; k++)
        if ((e->guard_ref[k] >= 0 ? e->caps[e->guard_ref[k]].t : e->grad_guards[k].leaf) == leaf)
            return true;
    return false;
}

/* After a call: the writes the traced function made, from the graph's extra
 * outputs vals (one per write with a value), in trace order; done[k] (when
 * not NULL): write k was made during the call (a hooked gradient). */
static int write_back(const entry *e, tj_tensor *const *args, tj_tensor *const *vals, const bool *done)
{
    int v = 0;
    for (int k = 0; k < e->nwrites; k++) {
        const fe_write *w = &e->writes[k];
        tj_tensor *dst = fe_write_dst(e, k, args);
        if (done && done[k]) {
            v++;
            continue;
        }
        if (w->kind == FE_WRITE_GRAD && w->hooked) {   /* in place: its identity holds */
            if (fe_ag_set_grad(dst, vals[v++]) != 0)
                return -1;
            continue;
        }
        switch (w->kind) {
        case FE_WRITE_DATA:
            if (fe_write_data(dst, vals[v++]) != 0)
                return -1;
            break;
        case FE_WRITE_GRAD:
            /* the graph computed the whole new gradient (old + new when the
             * leaf had one, which the guards pin): replace, in place when a
             * guard pins the gradient's identity, else the output becomes it
             * (the trace dropped the old one: no copy) */
            if ((grad_guarded(e, dst) ? fe_ag_set_grad(dst, vals[v]) : fe_ag_take_grad(dst, vals[v])) != 0)
                return -1;
            v++;
            break;
        case FE_WRITE_GRAD_NONE:
            tj_zero_grad(dst);
            break;
        }
    }
    return 0;
}

static int run_entry(tj_compiled *c, entry *e, tj_tensor *const *args, int nargs,
                     tj_tensor **outs, int max);

/* The hooked gradients of a call (data parallelism): each is set, and its
 * leaf's ready-hook runs, as soon as the plan's step that makes it has run,
 * so that a bucket's allreduce starts while the rest of the backward runs. */
typedef struct hooked_run {
    const entry *e;
    tj_tensor *const *args;
    int n;
    int *out, *write;      /* per hooked gradient: its graph output, its write */
    bool *done;            /* per write */
} hooked_run;

static int hooked_ready(void *ctx, int i, tj_tensor *value)
{
    hooked_run *h = ctx;
    int k = h->write[i];
    h->done[k] = true;
    return fe_ag_set_grad(fe_write_dst(h->e, k, h->args), value);
}

/* Fills h for e's writes (h->n 0 when no gradient is hooked). 0 or -1. */
static int hooked_make(hooked_run *h, const entry *e, tj_tensor *const *args)
{
    *h = (hooked_run){e, args, 0, NULL, NULL, NULL};
    int nh = 0;
    for (int k = 0; k < e->nwrites; k++)
        nh += e->writes[k].kind == FE_WRITE_GRAD && e->writes[k].hooked;
    if (!nh)
        return 0;
    h->out = malloc(sizeof *h->out * (size_t)nh);
    h->write = malloc(sizeof *h->write * (size_t)nh);
    h->done = calloc((size_t)e->nwrites, sizeof *h->done);
    if (!h->out || !h->write || !h->done) {
        rt_error("tj_call: out of memory");
        return -1;
    }
    for (int k = 0, v = 0; k < e->nwrites; k++) {
        const fe_write *w = &e->writes[k];
        if (w->kind == FE_WRITE_GRAD && w->hooked) {
            h->out[h->n] = e->nresults + v;
            h->write[h->n++] = k;
        }
        v += w->value != NULL;
    }
    return 0;
}

static void hooked_free(hooked_run *h)
{
    free(h->out);
    free(h->write);
    free(h->done);
}

/* Puts result k (r) of a call on args on the tape with its compiled backward
 * (aot.c), made on first need; the captured weights the backward reads again
 * (caps) are watched for in-place changes until it runs. 0 or -1. */
static int attach_backward(tj_compiled *c, int k, tj_tensor *r, tj_tensor *const *args, int nargs,
                           tj_tensor *const *caps, int ncaps)
{
    pthread_mutex_lock(&c->lock);
    if (!c->aot[k])
        c->aot[k] = fe_aot_new(c->fn, c->mfn, c->ctx, c->name, k);
    fe_aot *a = c->aot[k];
    pthread_mutex_unlock(&c->lock);
    return a && fe_aot_attach(a, r, args, nargs, caps, ncaps) ? 0 : -1;
}

/* Whether result r of e goes on the tape in grad mode: a float result that
 * required grad when traced (or may: traced in no-grad mode). */
static bool on_tape(const entry *e, int r)
{
    return ir_dtype_is_float(e->g->outputs[r]->type.dtype) && (!e->grad_known || (e->res_grad >> r & 1));
}

/* The partitioned backward of e for args, made on first need (of every
 * result that requires grad; with arguments that require grad, argmask, one
 * per pattern); a symbolic entry's serves all its shapes, or, where the
 * backward cannot follow its symbols, one per argument shape (traced
 * static), up to FE_JOINT_SHAPES. NULL: the caller uses aot.c's, or runs the
 * call eagerly. */
static fe_joint *entry_joint(tj_compiled *c, entry *e, tj_tensor *const *args, int nargs,
                             tj_tensor *const *caps, uint64_t argmask)
{
    pthread_mutex_lock(&c->lock);
    fe_joint *j = NULL;
    char **why_not = &e->joint_why[argmask != 0];
    for (int i = 0; !j && i < e->njoints; i++)
        if (fe_joint_fits(e->joints[i], args, nargs, argmask))
            j = e->joints[i];
    if (!j && !*why_not && e->njoints == FE_JOINT_SHAPES)
        atomic_fetch_add(&e->joint_misses, 1);
    else if (!j && !*why_not) {
        char why[512] = "";
        ir_type argt[FE_MAX_ARGS];   /* the entry's, with its symbols */
        for (int k = 0; k < nargs; k++) {
            argt[k] = (ir_type){e->args[k].dtype, e->args[k].ndim, false, {0}};
            memcpy(argt[k].shape, e->args[k].shape, sizeof argt[k].shape);
        }
        fe_joint_syms sy = {argt, e->symval, e->symmin, e->nsyms};
        if (getenv("TJIT_PARTITION") && !strcmp(getenv("TJIT_PARTITION"), "0"))
            snprintf(why, sizeof why, "TJIT_PARTITION=0");
        else
            j = fe_joint_new(c->fn, c->mfn, c->ctx, c->name, argmask, args, nargs, caps, e->ncaps,
                             e->nsyms && !e->joint_static ? &sy : NULL, why, sizeof why);
        if (j) {
            e->joints[e->njoints++] = j;
            e->joint_static |= e->nsyms && !fe_joint_symbolic(j);   /* the next shape: static too */
        } else {
            *why_not = strdup(why);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return j;
}

/* One call: the results in outs[0..n) (in the current scope); n or -1. */
static int call_once(tj_compiled *c, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    if (!c) {
        rt_error("tj_call: the compiled handle is NULL");
        return -1;
    }
    if (nargs < 0 || nargs > FE_MAX_ARGS || (nargs && !args)) {
        rt_error("tj_call(%s): %d args (at most %d)", c->name, nargs, FE_MAX_ARGS);
        return -1;
    }
    for (int k = 0; k < nargs; k++)
        if (!args[k]) {
            if (!rt_has_error())
                rt_error("tj_call(%s): arg %d is NULL", c->name, k);
            return -1;
        }
    for (int k = 0; k < nargs; k++)
        if (rt_dead(args[k])) {
            rt_error("tj_call(%s): arg %d is a released tensor (used after tj_release)", c->name, k);
            return -1;
        }
    /* the signature: the first call fixes the argument count */
    int want = -1;
    if (!atomic_compare_exchange_strong(&c->nargs, &want, nargs) && want != nargs) {
        rt_error("tj_call(%s): %d arg%s given, the model takes %d (the count of its first call)",
                 c->name, nargs, nargs == 1 ? "" : "s", want);
        return -1;
    }
    if (fe_trace_current())
        return run_fn(c, args, nargs, outs, max);   /* inlined into the outer trace */
    if (fe_ag_checkpointing()) {
        /* inside tj_checkpoint: its ops recorded one by one, the same in the
         * forward and when the block runs again (a first call or a recompile
         * would change what the compiled path records) */
        atomic_fetch_add(&c->calls, 1);
        atomic_fetch_add(&c->eager_calls, 1);
        return run_fn(c, args, nargs, outs, max);
    }
    atomic_fetch_add(&c->calls, 1);
    entry *e = lookup(c, args, nargs);
    if (e)
        atomic_fetch_add(&e->calls, 1);
    int rc = e ? run_entry(c, e, args, nargs, outs, max) : -2;
    if (e)
        atomic_fetch_sub(&e->busy, 1);
    if (rc == -2) {
        atomic_fetch_add(&c->eager_calls, 1);
        tj_clear_error();   /* the trace's message (a graph break, a failure) is not this run's */
        return run_fn(c, args, nargs, outs, max);
    }
    return rc;
}

/* Runs entry e's graph: n results, -1 with an error, -2 when e is eager. */
static int run_entry(tj_compiled *c, entry *e, tj_tensor *const *args, int nargs,
                     tj_tensor **outs, int max)
{
    if (!e->g && e->split) {
        for (int k = 0; tj_grad_enabled() && k < nargs; k++)
            if (fe_ag_requires_grad(args[k]))
                return -2;
        return fe_split_call(e->split, c->fn, c->mfn, c->ctx, args, nargs, outs, max);
    }
    if (!e->g)
        return -2;
    /* The results go on the tape (aot.c) when a weight requires grad, unless
     * the function calls backward itself (a whole training step: its
     * gradients are write-backs). Arguments that require grad (the output of
     * another compiled module, a generator's sample) get theirs from the
     * partitioned backward, or the call runs eagerly where it cannot be made;
     * functions that write to tensors (running stats) or draw random numbers
     * (dropout) take the partitioned backward (its forward writes back once;
     * its backward reads the saved mask) or run eagerly: aot.c's backward
     * would rerun the writes and draw other numbers. */
    bool grad = false, step = false;
    uint64_t argmask = 0;   /* bit k: argument k requires grad */
    for (int k = 0; k < e->nwrites; k++)
        step |= e->writes[k].kind != FE_WRITE_DATA;
    if (tj_grad_enabled() && !step) {
        for (int k = 0; k < e->ncaps; k++)
            grad |= fe_ag_requires_grad(e->caps[k].t);
        /* no result requires grad (traced in grad mode: an update that
         * returns detached values): nothing goes on the tape */
        grad &= !(e->grad_known && e->res_grad == 0);
        for (int k = 0; k < nargs; k++)
            if (ir_dtype_is_float(args[k]->dtype) && fe_ag_requires_grad(args[k]))
                argmask |= (uint64_t)1 << k;
        grad |= argmask != 0;
    }
    if (e->nresults > max) {
        rt_error("tj_call(%s): the model returns %d results, room for %d%s", c->name, e->nresults,
                 max, max == 1 ? " (use tj_call_multi)" : "");
        return -1;
    }
    tj_tensor *few[64], **caps = NULL;   /* the weights a backward watches */
    if (grad)
        caps = e->ncaps <= 64 ? few : malloc(sizeof *caps * (size_t)e->ncaps);
    if (grad && !caps) {
        rt_error("tj_call(%s): out of memory", c->name);
        return -1;
    }
    for (int k = 0; caps && k < e->ncaps; k++)
        caps[k] = e->caps[k].t;
    fe_joint *j = grad ? entry_joint(c, e, args, nargs, caps, argmask) : NULL;
    /* without it: aot.c's backward gives arguments no gradient, and would
     * write again and draw other numbers; those calls run eagerly (-2) */
    if (j || (grad && (argmask || e->nwrites || e->draws.n))) {
        int n = j ? fe_joint_call(j, args, nargs, caps, e->ncaps, outs) : -2;
        if (caps != few)
            free(caps);
        return n;
    }
    const ir_graph *rg = fe_keep_run_graph(e);   /* after the captures: the kept values */
    int nk = fe_keep_count(e->keep), held = 0;   /* kept values, those retained for this call */
    tj_tensor *in[FE_MAX_ARGS + 256];
    tj_tensor **inputs = rg->ninputs <= (int)(sizeof in / sizeof *in)
                             ? in
                             : malloc((size_t)rg->ninputs * sizeof *inputs);
    tj_tensor **all = calloc((size_t)e->g->noutputs, sizeof *all);
    int rc = -1;
    hooked_run h;
    for (int k = 0; inputs && k < nargs; k++)
        inputs[k] = args[k];
    for (int k = 0; inputs && k < e->ncaps; k++)
        inputs[nargs + k] = e->caps[k].t;   /* alive: the guards held */
    if (hooked_make(&h, e, args) != 0) {
        /* the error is set; nothing ran */
    } else if (inputs && all && nk &&
               fe_keep_values(e->keep, inputs + nargs, inputs + nargs + e->ncaps) != 0) {
        /* the error is set; nothing ran */
    } else if (inputs && all) {
        held = nk;
        /* the captures' storages: GEMMs may keep them packed (keyed by
         * version, runtime/gemm_cache.c); without freeze not those the
         * call writes (a GEMM after the write in the same call would see
         * the version of one before it); the kept values too */
        tj_tensor *kfew[64], **kept = inputs + nargs;
        int nkept = e->ncaps + nk;
        if (!c->freeze && (kept = nkept <= 64 ? kfew : malloc(sizeof *kept * (size_t)nkept))) {
            memcpy(kept, inputs + nargs, sizeof *kept * (size_t)nkept);
            for (int k = 0; k < e->nwrites; k++)
                if (e->write_ref[k] >= 0 && e->write_ref[k] < e->ncaps)
                    kept[e->write_ref[k]] = NULL;
        }
        if (kept)
            rt_gemm_frozen(kept, nkept, c->gemm_flags | (c->freeze ? RT_GEMM_FREEZE : 0));
        uint64_t outer = h.n ? fe_ag_hooks_begin() : 0;
        sc_notify nt = {h.n, h.out, hooked_ready, &h};
        int64_t symval[FE_MAX_SYMS];
        fe_draws_run draws;   /* its random ops' counters, at once */
        if (e->draws.n && e->nsyms)
            fe_entry_symbols(e, args, symval);
        fe_draws_begin(&draws, &e->draws, symval);
        /* 1: not compiled, use the executor (then the hooks run at the end) */
        rc = sc_plans_run_notify(e->plans, inputs, all, h.n ? &nt : NULL);
        rt_gemm_frozen(NULL, 0, 0);
        if (kept && kept != kfew && kept != inputs + nargs)
            free(kept);
        if (rc > 0)
            rc = sc_exec(rg, inputs, e->last_use, all);
        fe_draws_end(&draws);
        if (rc == 0 && nk && fe_keep_unalias(e->keep, inputs + nargs + e->ncaps, all, e->nresults) != 0)
            rc = -1;
        if (rc == 0 && write_back(e, args, all + e->nresults, h.done) != 0)
            rc = -1;
        if (h.n)
            fe_ag_hooks_end(outer);
    } else {
        rt_error("tj_call(%s): out of memory", c->name);
    }
    for (int k = 0; rc == 0 && k < e->g->noutputs; k++) {
        if (k < e->nresults)
            outs[k] = rt_own(all[k]);
        else
            tj_release(all[k]);
    }
    for (int k = 0; rc == 0 && !grad && e->res_twin && k < e->nresults; k++)   /* twins: tensors of their own */
        if (e->res_twin >> k & 1 && !(outs[k] = tj_clone(outs[k])))
            rc = -1;
    if (rc == 0 && !grad)   /* arguments and views come back as eager's would (alias.c) */
        fe_alias_results(e->g, e->nresults, e->res_view, inputs, outs);
    for (int k = 0; rc == 0 && !grad && e->res_twin && k < e->nresults; k++)
        if (e->res_same[k] >= 0)   /* the same tensor as an earlier result, as eagerly */
            outs[k] = outs[e->res_same[k]];
    for (int k = 0; k < held; k++)
        tj_release(inputs[nargs + e->ncaps + k]);
    if (inputs && inputs != in)
        free(inputs);
    free(all);
    hooked_free(&h);
    for (int k = 0; rc == 0 && grad && k < e->nresults; k++)
        if (on_tape(e, k) && attach_backward(c, k, outs[k], args, nargs, caps, e->ncaps) != 0)
            rc = -1;
    if (caps != few)
        free(caps);
    return rc == 0 ? e->nresults : -1;
}

/* One call: the results in outs[0..n) (in the current scope); n or -1. A
 * success leaves the error message as it found it, like any op (none, or the
 * pending first error of the caller's chain): never one of the trace, a graph
 * break or a fallback inside the call. A failure leaves its own, never one of
 * the trace that came before the eager run. */
static int call(tj_compiled *c, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    char saved[1024] = "";
    if (rt_has_error())
        snprintf(saved, sizeof saved, "%s", tj_last_error());
    int n = call_once(c, args, nargs, outs, max);
    if (n >= 0) {
        tj_clear_error();
        if (saved[0])
            rt_error("%s", saved);
    }
    return n;
}

tj_tensor *tj_call(tj_compiled *c, tj_tensor *const *args, int nargs)
{
    tj_tensor *r[1];
    return call(c, args, nargs, r, 1) == 1 ? r[0] : NULL;
}

int tj_call_multi(tj_compiled *c, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    if (max < 0 || (max && !outs)) {
        rt_error("tj_call_multi: room for %d results", max);
        return -1;
    }
    return call(c, args, nargs, outs, max);
}
