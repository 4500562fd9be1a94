/* trace.c - recording ops into a graph while a compiled model is traced.
 *
 * fe_apply hands every op to fe_trace_apply when this thread has a current
 * trace. The op is checked twice: with the concrete example types of this
 * call (so a bad call fails with exactly the message eager gives) and as a
 * graph node (whose type may carry symbolic dims). The result is a symbolic
 * tensor: no storage, the example shape, and the node in t->sym.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/random.h"
#include "trace.h"

static _Thread_local fe_trace *current;
static atomic_uint_least64_t serials;   /* the last trace's serial (fe_trace.serial) */

fe_trace *fe_trace_current(void) { return current; }

fe_trace *fe_trace_begin(const char *name)
{
    if (current)
        return NULL;
    fe_trace *tr = calloc(1, sizeof *tr);
    if (!tr)
        return NULL;
    tr->g = ir_graph_new(name);
    if (!tr->g) {
        free(tr);
        return NULL;
    }
    tr->serial = atomic_fetch_add_explicit(&serials, 1, memory_order_relaxed) + 1;
    current = tr;
    rt_set_tracing(true);
    return tr;
}

uint64_t fe_trace_serial(void)
{
    return current ? current->serial : 0;
}

void fe_trace_end(fe_trace *tr)
{
    if (!tr)
        return;
    if (current == tr) {
        current = NULL;
        rt_set_tracing(false);
    }
    fe_trace_writes_free(tr);
    for (int k = 0; k < tr->nvreads; k++)
        tj_release(tr->vreads[k]);
    free(tr->vreads);
    fe_draws_free(&tr->draws);
    if (tr->caps)
        for (int k = 0; k < tr->ncaps; k++)
            tj_release(tr->caps[k]);
    free(tr->caps);
    free(tr->cap_nodes);
    free(tr->ckpt);
    ir_graph_free(tr->g);
    free(tr);
}

void fe_trace_mark_checkpoint(fe_trace *tr, int lo, int hi)
{
    if (lo >= hi)
        return;
    int (*v)[2] = rt_grow(tr->ckpt, &tr->ckpt_cap, tr->nckpt, sizeof *tr->ckpt);
    if (!v) {
        tr->failed = true;
        rt_error("out of memory while tracing");
        return;
    }
    tr->ckpt = v;
    tr->ckpt[tr->nckpt][0] = lo;
    tr->ckpt[tr->nckpt++][1] = hi;
}

int *fe_trace_checkpoint_regions(const fe_trace *tr)
{
    if (!tr->nckpt || !tr->g->nnodes)
        return NULL;
    int *r = calloc((size_t)tr->g->nnodes, sizeof *r);
    for (int k = 0; r && k < tr->nckpt; k++)   /* an outer one, recorded later, wins */
        for (int i = tr->ckpt[k][0]; i < tr->ckpt[k][1] && i < tr->g->nnodes; i++)
            r[i] = k + 1;
    return r;
}

void fe_trace_pause(fe_trace *tr)
{
    (void)tr;
    current = NULL;
    rt_set_tracing(false);
}

void fe_trace_resume(fe_trace *tr)
{
    current = tr;
    rt_set_tracing(true);
}

/* A new storage token of this trace (fe_alias_of): odd, so never a
 * storage's address. */
static uint64_t new_alias(fe_trace *tr) { return ++tr->aliases << 1 | 1; }

tj_tensor *fe_trace_arg(fe_trace *tr, ir_node *n, const ir_type *ex, const tj_tensor *example)
{
    tj_tensor *t = rt_own(rt_tensor_symbolic(ex, n));
    if (!t)
        return NULL;
    t->alias = new_alias(tr);
    if (example && example->ndim == t->ndim)   /* eager's strides: what aliases what */
        memcpy(t->strides, example->strides, sizeof t->strides);
    return t;
}

tj_tensor *fe_trace_pinned(const tj_tensor *t)
{
    fe_trace *tr = current;
    if (!tr || !t || !t->sym)
        return (tj_tensor *)t;
    ir_type ex;
    rt_type_of(t, &ex);
    tj_tensor *p = rt_own(rt_tensor_symbolic(&ex, t->sym));
    if (!p)
        return NULL;
    memcpy(p->strides, t->strides, sizeof p->strides);
    p->weak = t->weak;
    p->alias = new_alias(tr);   /* no write of the trace is its storage's */
    return p;
}

static void trace_break(fe_trace *tr, const char *fmt, const char *what)
{
    if (tr->brk[0])
        return;
    char where[160];
    if (tr->nops)
        snprintf(where, sizeof where, " (after %d op%s, the last %s)", tr->nops,
                 tr->nops == 1 ? "" : "s", ir_ops[tr->last_op].name);
    else
        snprintf(where, sizeof where, " (before any op)");
    char msg[320];
    snprintf(msg, sizeof msg, fmt, what);
    snprintf(tr->brk, sizeof tr->brk, "%s%s", msg, where);
}


uint64_t fe_rng_reserve(uint64_t n, uint64_t *seed)
{
    fe_trace *tr = current;
    if (!tr || tr->seg)   /* eagerly, or eagerly between a split call's pieces */
        return rt_rng_reserve(n, seed);
    *seed = 0;
    uint64_t j = fe_draws_add(&tr->draws, n);
    if (j == UINT64_MAX) {
        tr->failed = true;
        rt_error("out of memory while tracing");
        return 0;   /* not call-relative: fe_trace_apply breaks on it */
    }
    return RT_RNG_CALL | j;
}

void fe_rng_seed(uint64_t seed)
{
    if (current && !current->seg)
        trace_break(current, "%s inside a compiled function", "tj_manual_seed");
    rt_rng_seed(seed);
}

void fe_trace_view_write_break(fe_trace *tr)
{
    trace_break(tr, "%s into a view of a traced tensor", "tj_copy_ (or an in-place op)");
}

void fe_trace_break(fe_trace *tr, const char *why)
{
    tr->nosplit = true;   /* the rest of the call runs eagerly, as it must */
    trace_break(tr, "%s", why);
}

bool fe_trace_refuse_state(const char *what)
{
    fe_trace *tr = fe_trace_current();
    if (!tr)
        return false;
    tr->nosplit = true;   /* the rest of the call runs eagerly, as it must */
    trace_break(tr, "tj_%s inside the compiled function (state kept across calls: make it before the "
                "first call)", what);
    return true;
}

static ir_node *capture(fe_trace *tr, tj_tensor *x)
{
    for (int k = 0; k < tr->ncaps; k++)
        if (tr->caps[k] == x)
            return tr->cap_nodes[k];
    if (tr->ncaps == tr->cap_cap) {
        int cap = tr->cap_cap ? 2 * tr->cap_cap : 16;
        tj_tensor **c = realloc(tr->caps, (size_t)cap * sizeof *c);
        if (c)
            tr->caps = c;
        ir_node **n = realloc(tr->cap_nodes, (size_t)cap * sizeof *n);
        if (n)
            tr->cap_nodes = n;
        if (!c || !n) {
            rt_error("out of memory while tracing");
            return NULL;
        }
        tr->cap_cap = cap;
    }
    ir_type ty;
    rt_type_of(x, &ty);
    ir_node *n = ir_graph_input(tr->g, NULL, &ty, true);
    if (!n) {
        rt_error("tracing: %s", ir_graph_error(tr->g));
        return NULL;
    }
    tr->caps[tr->ncaps] = tj_retain(x);
    tr->cap_nodes[tr->ncaps++] = n;
    return n;
}

/* n, x's node, when no in-place write replaced the base of its views;
 * else the same views (permute, slice, expand, squeeze, unsqueeze) of the
 * base's value now, x rebound to them: eager reads a view through the
 * storage its base was written in. x itself (no views) reads its value now
 * when a value of the trace was written through a slice of it (an overwrite
 * for each tensor of its storage, write_slices). Only writes into x's storage count: a
 * twin of the base (one node, another tensor: clone(y) taken twice) was
 * not written. A chain through reshape (a copy when the strides forbid a
 * view) or as_strided breaks the graph instead, and the call runs eagerly.
 * NULL on error. */
static ir_node *current_view(fe_trace *tr, tj_tensor *x, ir_node *n)
{
    const ir_node *chain[64];
    int nc;
    ir_node *b = (ir_node *)ir_view_chain(n, chain, 64, &nc), *now = b;
    uint64_t alias = fe_alias_of(x);
    for (int k = 0; k < tr->novw; k++)   /* in order: a base written twice follows both */
        if (tr->ovw[k].old == now && (nc || tr->ovw[k].each) &&
            (!alias || !tr->ovw[k].alias || tr->ovw[k].alias == alias))
            now = tr->ovw[k].now;
    if (nc == 0) {   /* x itself, written through a view of it (write_slices) or not */
        x->sym = now;
        return now;
    }
    if (now == b && nc < 64)
        return n;
    /* x shares the written storage, so each reshape of its chain was a view
     * in eager (one that copied gave x a storage of its own, fe_trace_apply),
     * unless a symbolic dim hid the strides */
    const char *copying = nc == 64 ? "64 views" : NULL;   /* too deep to follow: eager */
    for (int k = 0; k < nc && !copying; k++)
        if (chain[k]->op == OP_as_strided ||
            (chain[k]->op == OP_reshape && (ir_type_has_sym(&chain[k]->in[0]->type) || ir_type_has_sym(&chain[k]->type))))
            copying = ir_ops[chain[k]->op].name;
    if (copying) {
        fe_trace_break(tr, "a view read after an in-place write into its base, through reshape, "
                           "as_strided or 64 views");
        rt_error("tracing: a view read after an in-place write into its base (through %s) is a graph "
                 "break", copying);
        return NULL;
    }
    for (int k = nc - 1; k >= 0 && now; k--) {
        ir_attrs a;
        ir_node_attrs(chain[k], &a);
        now = ir_graph_add(tr->g, chain[k]->op, &now, 1, &a);
    }
    if (!now) {
        tr->failed = true;
        rt_error("tracing: %s", ir_graph_error(tr->g));
        return NULL;
    }
    x->sym = now;
    return now;
}

ir_node *fe_trace_value(fe_trace *tr, tj_tensor *x)
{
    if (!x->sym && tr->seg)
        fe_seg_used(tr, x);
    if (!x->sym)
        return capture(tr, x);
    ir_node *n = x->sym;
    /* A symbolic tensor of another trace (kept past its compile) is no value here. */
    bool mine = ir_node_is_input(n) ? n->id < tr->g->ninputs && tr->g->inputs[n->id] == n
                                    : n->id < tr->g->nnodes && tr->g->nodes[n->id] == n;
    if (!mine && tr->seg) {   /* a value of an earlier piece of this call */
        if (fe_seg_values(tr, x, "a later piece") != 0)
            return NULL;
        fe_seg_used(tr, x);
        return capture(tr, x);
    }
    if (!mine) {
        rt_error("tracing: a tensor from an earlier trace was used (symbolic tensors do not "
                 "outlive the call that traced them)");
        return NULL;
    }
    return tr->novw ? current_view(tr, x, n) : n;
}

/* An op's rule could not follow a symbolic dim: the trace is redone with
 * static dims (compile.c), and explain's log names the first such op. */
void fe_trace_dyn_unsupported(fe_trace *tr, const char *fmt, ...)
{
    if (!tr->dyn_unsupported) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tr->dyn_why, sizeof tr->dyn_why, fmt, ap);
        va_end(ap);
    }
    tr->dyn_unsupported = true;
}

/* Whether the node type sym describes the example type ex of this call:
 * static dims equal, symbolic dims equal to their symbol's size plus its
 * offset, and that at least 2 (a symbolic size is never 0 or 1: x[1:] of a
 * dim of size 2 stays static). */
static bool symbolic_agrees(const fe_trace *tr, const ir_type *sym, const ir_type *ex)
{
    if (sym->ndim != ex->ndim || sym->dtype != ex->dtype)
        return false;
    for (int d = 0; d < sym->ndim; d++) {
        int64_t s = sym->shape[d], k = IR_IS_SYM(s) ? ir_sym_index(s) : 0;
        if (!IR_IS_SYM(s) ? s != ex->shape[d]
                          : k >= tr->nsyms || tr->symval[k] + ir_sym_delta(s) != ex->shape[d] ||
                                ex->shape[d] < 2)
            return false;
    }
    return true;
}

tj_tensor *fe_trace_apply(fe_trace *tr, ir_op op, tj_tensor *const *in, int nin,
                          const ir_attrs *a)
{
    if (tr->seg && (ir_ops[op].kind == IR_RANDOM || op == OP_dropout || op == OP_scalar))
        return fe_seg_eager(tr, op, in, nin, a);
    if (ir_ops[op].kind == IR_RANDOM || op == OP_dropout) {
        /* in the graph with counters relative to the call (fe_rng_reserve) */
        bool rel = (uint64_t)a->a[op == OP_dropout ? 2 : 3].i[0] & RT_RNG_CALL;
        if (!rel)
            trace_break(tr, "random op %s drawn outside the trace", ir_ops[op].name);
    }

    /* The example types: the same rule and message as eager. */
    ir_type ex[FE_MAX_INPUTS], out;
    const ir_type *tp[FE_MAX_INPUTS];
    ir_node *nodes[FE_MAX_INPUTS];
    for (int k = 0; k < nin; k++) {
        tp[k] = NULL;
        nodes[k] = NULL;
        if (!in[k])
            continue;
        rt_type_of(in[k], &ex[k]);
        tp[k] = &ex[k];
    }
    char reason[256];
    if (ir_infer(op, tp, nin, a, &out, reason, sizeof reason) != 0) {
        char head[512], at[512];
        rt_describe_inputs(ir_ops[op].name, in, nin, head, sizeof head);
        rt_error("%s: %s%s", head, reason, rt_callsite_suffix(at, sizeof at));
        return NULL;
    }
    for (int k = 0; k < nin; k++)
        if (in[k] && !(nodes[k] = fe_trace_value(tr, in[k]))) {
            tr->failed = true;
            return NULL;
        }
    ir_node *n = ir_graph_add(tr->g, op, nodes, nin, a);
    if (!n) {
        /* The example types passed, so the symbolic ones (dynamic dims) did not. */
        char at[512];
        rt_error("tracing: %s%s", ir_graph_error(tr->g), rt_callsite_suffix(at, sizeof at));
        fe_trace_dyn_unsupported(tr, "%s", ir_graph_error(tr->g));
        return NULL;
    }
    if (!n->file)   /* the user's line that made it (tjit.h's call-site macros) */
        n->file = rt_callsite(&n->line);
    if (!symbolic_agrees(tr, &n->type, &out)) {
        /* The rule computed a size it cannot know for a symbolic dim. */
        fe_trace_dyn_unsupported(tr, "%s gives sizes its rule cannot express on them", ir_ops[op].name);
        rt_error("tracing: %s cannot follow symbolic dims yet", ir_ops[op].name);
        return NULL;
    }
    tr->nops++;
    tr->last_op = op;
    if (ir_ops[op].kind == IR_RANDOM || op == OP_dropout)   /* its count follows symbolic dims */
        fe_draws_type(&tr->draws, (uint64_t)a->a[op == OP_dropout ? 2 : 3].i[0] & ~RT_RNG_CALL,
                      &n->type);
    tj_tensor *r = rt_own(rt_tensor_symbolic(&out, n));
    /* a view stands for its input's storage, with the strides eager gives it;
     * a reshape the strides forbid is a copy in eager: a new contiguous
     * tensor, a storage of its own, as any other op's result */
    bool view = ir_ops[op].kind == IR_VIEW && in[0];
    if (r && view && !rt_view_strides(op, in[0], a, &out, r->strides, &r->offset) && op == OP_reshape &&
        !ir_type_has_sym(&nodes[0]->type) && !ir_type_has_sym(&out))
        view = false;
    if (r)
        r->alias = view ? fe_alias_of(in[0]) : new_alias(tr);
    if (r && tr->seg && fe_seg_track(tr, r, view ? in[0] : NULL) != 0) {
        tr->failed = true;
        return NULL;
    }
    return r;
}

/* A concrete tensor whose values the model read while traced: what it read
 * is baked into the graph, so the entry is guarded on its version. */
static void value_read(fe_trace *tr, const tj_tensor *t)
{
    for (int k = 0; k < tr->nvreads; k++)
        if (tr->vreads[k] == t)
            return;
    tj_tensor **v = rt_grow(tr->vreads, &tr->vread_cap, tr->nvreads, sizeof *tr->vreads);
    if (!v) {
        tr->failed = true;
        rt_error("out of memory while tracing");
        return;
    }
    tr->vreads = v;
    tr->vreads[tr->nvreads++] = tj_retain((tj_tensor *)t);
}

bool fe_trace_needs_values(const tj_tensor *t, const char *what)
{
    if (t && current && current->seg) {   /* a split call: the values now (a concrete
                                             * tensor the piece wrote: after its writes) */
        if (fe_seg_values(current, (tj_tensor *)t, what) != 0)
            return true;
    } else if (t && !t->sym && current && fe_trace_written(current, t)) {
        /* written by this trace: its storage is stale until the write-back */
        trace_break(current, "%s reads the values of a tensor the trace wrote", what);
        rt_error("%s: the tensor was written by the trace and has no values yet", what);
        return true;
    }
    if (t && !t->sym && current && current->seg)
        fe_seg_used(current, t);
    if (t && !t->sym && !t->made_tracing && current)
        value_read(current, t);
    if (!t || !t->sym)
        return false;
    fe_trace *tr = current;
    if (tr)
        trace_break(tr, "%s reads the values of a traced tensor", what);
    rt_error("%s: the tensor is being traced and has no values yet", what);
    return true;
}

void fe_trace_type(const tj_tensor *t, ir_type *ty)
{
    if (t->sym)
        *ty = ((const ir_node *)t->sym)->type;
    else
        rt_type_of(t, ty);
}

tj_tensor *fe_sym_full(int64_t dim, int rank, int at, double value, tj_dtype dt)
{
    fe_trace *tr = current;
    if (!tr || !IR_IS_SYM(dim))
        return NULL;
    for (int i = 0; i < tr->nargs; i++) {
        tj_tensor *t = tr->args[i];
        const ir_node *n = t ? t->sym : NULL;
        int e = -1;
        for (int d = 0; n && d < n->type.ndim && e < 0; d++)
            e = n->type.shape[d] == IR_SYM(ir_sym_index(dim)) ? d : -1;
        if (e < 0)
            continue;
        for (int d = 0; d < t->ndim && t; d++)   /* [sK] from argument i's dim e */
            if (d != e && t->shape[d] != 1)
                t = tj_narrow(t, d, 0, 1);
        t = t ? tj_reshape(t, 1, (int64_t[]){-1}) : NULL;
        if (t && ir_sym_delta(dim) < 0)   /* sK-C */
            t = tj_slice(t, 0, 0, ir_sym_delta(dim), 1);
        int64_t shape[TJ_MAX_DIMS];
        for (int d = 0; d < rank; d++)
            shape[d] = d == at ? -1 : 1;
        t = t ? tj_cast(tj_full_like(t, value), dt) : NULL;
        if (t && ir_sym_delta(dim) > 0)   /* sK+C */
            t = tj_pad(t, (int64_t[]){0, ir_sym_delta(dim)}, 1, value);
        return t ? tj_reshape(t, rank, shape) : NULL;
    }
    return NULL;
}

tj_tensor *fe_count(const tj_tensor *x, uint32_t mask, tj_dtype dt)
{
    ir_type tx;
    fe_trace_type(x, &tx);
    int64_t n = 1;
    tj_tensor *c = NULL;   /* the symbolic dims' product */
    for (int d = 0; d < x->ndim; d++) {
        if (!(mask >> d & 1))
            continue;
        if (!IR_IS_SYM(tx.shape[d])) {
            n *= x->shape[d];
            continue;
        }
        tj_tensor *s = fe_sym_full(tx.shape[d], 1, 0, 1.0, TJ_F64), *k = s ? tj_sum(s, NULL, 0, false) : NULL;
        if (!k) {   /* no argument has the symbol: the example's size (a trace checked at
                     * other sizes drops the graph) */
            fe_trace_shape_read(x);
            n *= x->shape[d];
            continue;
        }
        c = c ? tj_mul(c, k) : k;
    }
    if (!c)
        return tj_scalar(dt, (double)n);
    return tj_cast(n == 1 ? c : tj_mul_s(c, (double)n), dt);
}

void fe_trace_any_size_read(const tj_tensor *t)
{
    if (t && t->sym && current && current->nsyms > 0 && !current->sizes_checked)
        current->dyn_read = true;
}

void fe_trace_shape_read(const tj_tensor *t)
{
    if (!t || !t->sym || !current || current->sizes_checked)
        return;
    const ir_node *n = t->sym;
    for (int d = 0; d < n->type.ndim; d++)
        if (IR_IS_SYM(n->type.shape[d]))
            current->dyn_read = true;
}
