/* guards.c - the guards of a compiled function's entries (compiled.h): what
 * a call's arguments must match (dtype, rank, static sizes, symbolic sizes
 * bound consistently and at least their least size, layout), the captures'
 * identity and versions, and the gradient guards; the least size of each
 * symbol that a graph's offset symbols (sK-C) need.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "autograd.h"
#include "compiled.h"

void fe_guard_of(const tj_tensor *t, guard *g)
{
    g->dtype = t->dtype;
    g->ndim = t->ndim;
    g->contiguous = rt_is_contiguous(t);
    for (int d = 0; d < t->ndim; d++) {
        g->shape[d] = t->shape[d];
        g->strides[d] = t->strides[d];
    }
}

static bool fail(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool fail(char *why, size_t n, const char *fmt, ...)
{
    if (why) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* Whether t passes g; symval holds the sizes bound to symbols so far; *passed
 * counts the checks that held (to find the closest entry for messages). */
static bool guard_check(const guard *g, const tj_tensor *t, int arg, int64_t *symval,
                        char *why, size_t n, int *passed)
{
    if (t->dtype != g->dtype)
        return fail(why, n, "arg %d: dtype is %s, the guard expects %s", arg,
                    tj_dtype_name(t->dtype), tj_dtype_name(g->dtype));
    if (t->ndim != g->ndim)
        return fail(why, n, "arg %d: %d dims, the guard expects %d", arg, t->ndim, g->ndim);
    *passed += 2;
    for (int d = 0; d < g->ndim; d++, ++*passed) {
        int64_t v = t->shape[d], s = g->shape[d];
        if (!IR_IS_SYM(s)) {
            if (v != s)
                return fail(why, n, "arg %d: dim %d is %lld, the guard expects %lld", arg, d,
                            (long long)v, (long long)s);
            continue;
        }
        int64_t k = ir_sym_index(s);
        if (v < 2)
            return fail(why, n, "arg %d: dim %d is %lld, symbolic s%lld needs >= 2", arg, d,
                        (long long)v, (long long)k);
        if (symval[k] >= 0 && symval[k] != v)
            return fail(why, n, "arg %d: dim %d is %lld, but s%lld is %lld here", arg, d,
                        (long long)v, (long long)k, (long long)symval[k]);
        symval[k] = v;
    }
    if (g->storage > 0 && !rt_holds_storage(t))
        return fail(why, n, "arg %d: a view, where as_strided's graph reads its whole storage", arg);
    if (g->storage < 0 && rt_holds_storage(t))
        return fail(why, n, "arg %d: its whole storage, where as_strided's entry is for views", arg);
    if (g->contiguous) {
        if (!rt_is_contiguous(t))
            return fail(why, n, "arg %d: not contiguous, the guard expects contiguous", arg);
    } else {
        for (int d = 0; d < g->ndim; d++)
            if (t->shape[d] > 1 && t->strides[d] != g->strides[d])
                return fail(why, n, "arg %d: stride %d is %lld, the guard expects %lld", arg, d,
                            (long long)t->strides[d], (long long)g->strides[d]);
    }
    ++*passed;
    return true;
}

void fe_entry_symbols(const entry *e, tj_tensor *const *args, int64_t *symval)
{
    int passed = 0;
    for (int k = 0; k < e->nsyms; k++)
        symval[k] = -1;
    for (int k = 0; k < e->nargs; k++)
        guard_check(&e->args[k], args[k], k, symval, NULL, 0, &passed);
}

unsigned fe_version_of(const tj_tensor *t)
{
    return atomic_load_explicit(&t->storage->version, memory_order_relaxed);
}

bool fe_cap_released(const capref *r) { return r->w && rt_wref_get(r->w) != r->t; }

/* The captures' guards: each weak one still alive (the same tensor: a weak
 * reference never outlives its tensor's identity), each one whose values
 * were read unchanged. A pointer and a version compare per capture. */
bool fe_caps_check(const entry *e, char *why, size_t n)
{
    for (int k = 0; k < e->nrefs; k++) {
        const capref *r = &e->caps[k];
        if (fe_cap_released(r))
            return fail(why, n, "captured tensor %d was released", k);
        if (r->values && fe_version_of(r->t) != r->version)
            return fail(why, n, "captured tensor %d was changed in place, and the trace read "
                        "its values", k);
    }
    return true;
}

bool fe_entry_stale(const entry *e)
{
    char why[8];
    return !fe_caps_check(e, why, sizeof why);
}

/* Whether e can never pass its guards again: a capture was freed. */
bool fe_entry_dead(const entry *e)
{
    for (int k = 0; k < e->nrefs; k++)
        if (fe_cap_released(&e->caps[k]))
            return true;
    return false;
}

/* The tensor write k of e goes to: a capture, its target, or an argument. */
tj_tensor *fe_write_dst(const entry *e, int k, tj_tensor *const *args)
{
    const fe_write *w = &e->writes[k];
    return e->write_ref[k] >= 0 ? e->caps[e->write_ref[k]].t : w->target ? w->target : args[w->arg];
}

bool fe_entry_check(const entry *e, tj_tensor *const *args, int nargs, char *why, size_t n,
                    int *passed)
{
    *passed = 0;
    if (nargs != e->nargs)
        return fail(why, n, "%d args, the guard expects %d", nargs, e->nargs);
    int64_t symval[FE_MAX_SYMS];
    for (int k = 0; k < e->nsyms; k++)
        symval[k] = -1;
    for (int k = 0; k < nargs; k++) {
        if (!guard_check(&e->args[k], args[k], k, symval, why, n, passed))
            return false;
    }
    for (int k = 0; k < e->nsyms; k++, ++*passed)
        if (symval[k] >= 0 && symval[k] < e->symmin[k])
            return fail(why, n, "s%d is %lld, the graph's slices and offsets of it need s%d >= %lld", k,
                        (long long)symval[k], k, (long long)e->symmin[k]);
    if (e->autocast != fe_autocast_dtype())
        return fail(why, n, "autocast is %s, the guard expects %s", tj_dtype_name(fe_autocast_dtype()),
                    tj_dtype_name(e->autocast));
    if (!fe_caps_check(e, why, n))
        return false;
    *passed += e->nrefs;
    for (int k = 0; k < e->nwrites; k++) {
        /* a hooked gradient is set as its step ends and may not be read in the graph */
        const fe_write *w = &e->writes[k];
        if (w->kind != FE_WRITE_DATA && fe_ag_has_hook(fe_write_dst(e, k, args)) != w->hooked)
            return fail(why, n, "a gradient ready-hook was %s a leaf the graph sets the gradient of",
                        w->hooked ? "removed from" : "set on");
    }
    for (int k = 0; k < e->nguards; k++) {
        const fe_grad_guard *gg = &e->grad_guards[k];
        tj_tensor *leaf = e->guard_ref[k] >= 0 ? e->caps[e->guard_ref[k]].t : gg->leaf;
        if (tj_grad(leaf) != gg->prior)
            return fail(why, n, "the gradient of a leaf is %s (traced when it %s)",
                        tj_grad(gg->leaf) ? "another tensor" : "none",
                        gg->prior ? "had one" : "had none");
        ++*passed;
    }
    return true;
}

/* The least size of each symbol that keeps every offset symbol of g at 2 or
 * more (sK-C needs sK >= C + 2: x[1:] of a dim of size 2 would have size 1,
 * which broadcasts, so the graph does not hold there). */
static void need_at_least(int64_t *symmin, int nsyms, int64_t s, int64_t v)
{
    if (!IR_IS_SYM(s) || ir_sym_index(s) >= nsyms)
        return;
    int64_t *m = &symmin[ir_sym_index(s)];
    *m = v - ir_sym_delta(s) > *m ? v - ir_sym_delta(s) : *m;
}

void fe_graph_symbol_mins(const ir_graph *g, int64_t *symmin, int nsyms)
{
    for (int i = 0; g && i < g->nnodes; i++) {
        const ir_node *n = g->nodes[i];
        for (int d = 0; d < n->type.ndim; d++)
            need_at_least(symmin, nsyms, n->type.shape[d], 2);
        /* a slice with a static size of a symbolic dim holds where the dim
         * has its end (x[0:5]: s0 >= 5) */
        int d = n->op == OP_slice ? ir_norm_dim(n->attrs[0].i[0], n->in[0]->type.ndim) : -1;
        int64_t size, need;
        if (d >= 0 && IR_IS_SYM(n->in[0]->type.shape[d]) &&
            ir_slice_symbolic(n->in[0]->type.shape[d], n->attrs[1].i[0], n->attrs[2].i[0],
                              n->attrs[3].i[0], &size, &need))
            need_at_least(symmin, nsyms, n->in[0]->type.shape[d], need);
    }
}

void fe_symbol_mins(const ir_graph *g, entry *e) { fe_graph_symbol_mins(g, e->symmin, e->nsyms); }

