/* autograd.c - reverse-mode automatic differentiation on a tape: recording,
 * leaves' gradients and ready-hooks, grad mode (the tape's records:
 * ag_tape.h; the backward walk: backward.c).
 *
 *   fe_apply --(an input requires grad, grad mode on)--> fe_ag_record: a node
 *   a compiled call --> fe_ag_record_compiled: one node, its results its outputs
 *   tj_backward(y): backward.c
 *
 * Ownership: a tensor's state (ag_meta) holds its node (non-leaf) or its
 * accumulated gradient (leaf). A node holds its saved values (detached
 * headers), the nodes of its inputs and the leaves it feeds, never its own
 * result, so there are no cycles. After a backward the nodes it ran drop their
 * saved values (backward through them again is an error), as PyTorch does
 * without retain_graph.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_tape.h"
#include "autograd.h"
#include "trace.h"
#include "../runtime/iter.h"

static atomic_uint_fast64_t node_seq;
_Thread_local int ag_no_grad_depth;
/* The backward running on this thread (a number from bw_seq), 0 outside one. */
static atomic_uint_fast64_t bw_seq;
static _Thread_local uint64_t bw_gen;

/* ---- tensor state -------------------------------------------------------------- */

static void node_release(ag_node *n);

static void meta_release(rt_agmeta *m)
{
    ag_meta *am = (ag_meta *)m;
    tj_release(am->grad);
    node_release(am->fn);
    ag_view_release(am->view);
    tj_release(am->view_base);
    free(am);
}

static ag_meta *meta_get(tj_tensor *t)
{
    if (!t->ag) {
        ag_meta *m = calloc(1, sizeof *m);
        if (!m) {
            rt_error("out of memory recording a gradient");
            return NULL;
        }
        m->base.release = meta_release;
        t->ag = &m->base;
    }
    return (ag_meta *)t->ag;
}

static ag_node *fn_of(const tj_tensor *t);

bool fe_ag_is_leaf(const tj_tensor *t)
{
    const ag_meta *m = ag_meta_of(t);
    return m && m->requires_grad && !fn_of(t);
}

bool fe_ag_requires_grad(const tj_tensor *t)
{
    const ag_meta *m = ag_meta_of(t);
    return (m && m->requires_grad) || fn_of(t);   /* fn_of: a view may take its base's history */
}

bool fe_ag_is_view(const tj_tensor *t)
{
    const ag_meta *m = ag_meta_of(t);
    return m && m->view;
}

tj_tensor *ag_detached(const tj_tensor *t)
{
    tj_tensor *d = rt_tensor_view(t, t->ndim, t->shape, t->strides, t->offset);
    if (d) {
        d->sym = t->sym;
        d->weak = t->weak;
    }
    return d;
}

/* ---- nodes ----------------------------------------------------------------------- */

void ag_node_drop_saved(ag_node *n)
{
    for (int k = 0; k < n->nin; k++) {
        tj_release(n->in[k].saved);
        n->in[k].saved = NULL;
    }
    tj_release(n->out);
    n->out = NULL;
    n->released = true;
}

static void node_release(ag_node *n)
{
    if (!n || atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1)
        return;
    ag_node_drop_saved(n);
    if (n->compiled)
        n->compiled->release(n->cctx);
    if (n->ckpt)
        ag_ckpt_release(n->ckpt);
    ag_view_release(n->slices);
    for (int k = 0; k < n->nin; k++) {
        node_release(n->in[k].fn);
        tj_release(n->in[k].leaf);
    }
    free(n);
}

/* Where the gradient of t (an input of a node) goes: to the node that made
 * it, or into t itself, a leaf; e->need says whether it wants one. */
void ag_link_input(ag_input *e, tj_tensor *t)
{
    e->need = ir_dtype_is_float(t->dtype) && fe_ag_requires_grad(t);
    ag_node *f = e->need ? fn_of(t) : NULL;
    if (f)
        atomic_fetch_add(&f->refs, 1);
    e->fn = f;
    e->out = f ? ag_meta_of(t)->fn_out : 0;
    e->leaf = e->need && !f ? tj_retain(t) : NULL;
}

/* A node of op with nin inputs (none linked), numbered now; NULL when out
 * of memory (error set). */
static ag_node *node_new(ir_op op, int nin)
{
    ag_node *n = calloc(1, sizeof *n + (size_t)nin * sizeof n->in[0]);
    if (!n) {
        rt_error("%s: out of memory recording a gradient", ir_ops[op].name);
        return NULL;
    }
    atomic_init(&n->refs, 1);
    n->op = op;
    n->seq = atomic_fetch_add(&node_seq, 1) + 1;
    n->nin = nin;
    n->nout = 1;
    if (ag_collect)
        ag_ckpt_add(n);
    return n;
}

void ag_node_release(ag_node *n) { node_release(n); }

/* A view's history made again from its base's current one, one node per op
 * of its chain, as PyTorch regenerates a view's grad_fn after its base was
 * written. 0 or -1 (out of memory). */
static int regen(ag_meta *m, const ag_meta *bm)
{
    const ag_view *few[16], **c = ag_view_chain(m->view, few, 16);
    if (!c)
        return -1;
    ag_node *prev = NULL;   /* the history so far (one hold) */
    bool any = fe_ag_requires_grad(m->view_base), failed = false;
    for (int k = 0; k < m->view->depth && any && !failed; k++) {
        const ag_view *s = c[k];
        ag_node *n = node_new(s->op, 1);
        if (n && !(n->in[0].saved = ag_detached(s->in))) {
            node_release(n);
            n = NULL;
        }
        if (!n) {
            failed = true;
            break;
        }
        n->attrs = s->attrs;
        n->in[0].version = ag_version_of(s->in);
        if (k == 0) {
            ag_link_input(&n->in[0], m->view_base);
        } else {
            n->in[0].need = true;
            n->in[0].fn = prev;   /* the hold passes to n */
        }
        prev = n;
    }
    if (c != few)
        free(c);
    if (failed) {
        node_release(prev);
        return -1;
    }
    node_release(m->fn);
    m->fn = prev;
    m->fn_out = 0;
    m->view_gen = bm ? bm->gen : 0;
    return 0;
}

static int adopt_lineage(tj_tensor *t, tj_tensor *base, uint64_t gen);

/* t (unrecorded: an eager view made while its base had no history, so no
 * lineage) once the base was written since t was made (its gen moved past
 * the one t saw): t takes a lineage over the base, which regen then follows,
 * as PyTorch regenerates every view of a written base. Its state, or m. */
static ag_meta *adopt_if_written(tj_tensor *t, ag_meta *m)
{
    tj_tensor *base = rt_wref_get(t->view_of);   /* NULL: released */
    const ag_meta *bm = ag_meta_of(base);
    if (!bm || bm->gen == (m ? m->view_gen : 0))
        return m;
    if (t->sym) {   /* a traced view of an argument or a capture (fe_ag_view_made) */
        fe_trace *tr = fe_trace_current();
        if (tr && fe_ag_requires_grad(base))
            fe_trace_break(tr, "a view of an argument or a captured tensor read after a write into "
                               "its base with a value that requires grad");
        return m;
    }
    if (!rt_holds_storage(base))
        return m;
    return adopt_lineage(t, base, m ? m->view_gen : 0) == 0 ? ag_meta_of(t) : m;
}

/* The node that made t, made again first when t is a view whose base was
 * written since (regen). */
static ag_node *fn_of(const tj_tensor *t)
{
    ag_meta *m = ag_meta_of(t);
    if ((!m || !m->view) && t->view_of)
        m = adopt_if_written((tj_tensor *)t, m);
    if (m && m->view) {
        const ag_meta *bm = ag_meta_of(m->view_base);
        if ((bm ? bm->gen : 0) != m->view_gen)
            regen(m, bm);   /* out of memory: the error is set, the old history kept */
    }
    return m ? m->fn : NULL;
}

ag_node *ag_fn_of(const tj_tensor *t) { return fn_of(t); }

tj_tensor *ag_give_history(tj_tensor *t, ag_node *fn, int out)
{
    ag_meta *m = meta_get(t);
    if (!m)
        return NULL;
    atomic_fetch_add(&fn->refs, 1);
    node_release(m->fn);
    m->fn = fn;
    m->fn_out = out;
    return t;
}

tj_tensor *ag_with_history(const tj_tensor *saved, ag_node *fn, int out)
{
    tj_tensor *d = ag_detached(saved);
    if (d && !ag_give_history(d, fn, out)) {
        tj_release(d);
        return NULL;
    }
    return d ? rt_own(d) : NULL;
}

bool fe_ag_wants_grad(tj_tensor *const *in, int nin)
{
    bool any = false;
    for (int k = 0; k < nin && ag_no_grad_depth == 0; k++)
        any |= in[k] && ir_dtype_is_float(in[k]->dtype) && fe_ag_requires_grad(in[k]);
    return any;
}

/* m (a view's state) takes lineage v (its hold) of base. */
static void set_lineage(ag_meta *m, ag_view *v, tj_tensor *base)
{
    const ag_meta *bm = ag_meta_of(base);
    ag_view_release(m->view);
    tj_release(m->view_base);
    m->view = v;
    m->view_base = tj_retain(base);
    m->view_gen = bm ? bm->gen : 0;
}

tj_tensor *fe_ag_record(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                        tj_tensor *r)
{
    if (!r || ag_no_grad_depth > 0 || !ir_dtype_is_float(r->dtype))
        return r;
    bool any = false;
    for (int k = 0; k < nin; k++)
        any |= in[k] && ir_dtype_is_float(in[k]->dtype) && fe_ag_requires_grad(in[k]);
    if (!any)
        return r;
    if (!ag_rules[op]->vjp) {
        /* Such rows have non-float results; a float result here is a table bug. */
        rt_error("%s: no gradient rule (%s)", ir_ops[op].name, ag_rules[op]->nondiff);
        return NULL;
    }
    ag_node *n = node_new(op, nin);
    ag_meta *rm = n ? meta_get(r) : NULL;
    if (!n || !rm) {
        node_release(n);   /* a checkpoint collecting it holds it too */
        return NULL;
    }
    n->attrs = *a;
    bool ok = (n->out = ag_detached(r)) != NULL;
    n->out_version = ag_version_of(r);
    for (int k = 0; k < nin && ok; k++) {
        ag_input *e = &n->in[k];
        if (!in[k])
            continue;
        ok = (e->saved = ag_detached(in[k])) != NULL;
        e->version = ag_version_of(in[k]);
        ag_link_input(e, in[k]);
    }
    if (!ok) {
        node_release(n);
        return NULL;
    }
    node_release(rm->fn);   /* r is fresh: none, but keep the invariant */
    rm->fn = n;
    rm->fn_out = 0;
    fe_trace *tr = fe_trace_current();
    if (tr)
        tr->taped = true;
    if (ir_ops[op].kind == IR_VIEW && ag_view_shares(r, in[0])) {   /* a view of in[0]: its lineage */
        const ag_meta *im = ag_meta_of(in[0]);
        tj_tensor *base = im && im->view ? im->view_base : in[0];
        ag_view *v = ag_view_extend(im ? im->view : NULL, base, n->in[0].saved, op, a, r);
        if (!v)
            return NULL;
        set_lineage(rm, v, base);
    }
    return r;
}

int fe_ag_record_compiled(tj_tensor *const *r, int nr, tj_tensor *const *saved, int nsaved, int nargs,
                          tj_tensor *const *watch, int nwatch, const bool *unread,
                          const fe_ag_compiled *kind, void *ctx)
{
    ag_node *n = calloc(1, sizeof *n + (size_t)(nsaved + nwatch) * sizeof n->in[0]);
    bool ok = n != NULL;
    for (int k = 0; k < nr && ok; k++)
        ok = meta_get(r[k]) != NULL;
    if (!ok) {
        free(n);
        kind->release(ctx);
        if (!rt_has_error())
            rt_error("tj_call: out of memory recording a gradient");
        return -1;
    }
    atomic_init(&n->refs, 1);
    n->op = IR_NUM_OPS;   /* no row of ops.def: the compiled kind */
    n->compiled = kind;
    n->cctx = ctx;
    n->seq = atomic_fetch_add(&node_seq, 1) + 1;
    n->nin = nsaved + nwatch;
    n->nsaved = nsaved;
    n->nargs = nargs;
    n->nout = nr;
    for (int k = 0; k < n->nin; k++) {
        /* the tensor itself (not a detached view): the backward runs on it */
        tj_tensor *t = k < nsaved ? saved[k] : watch[k - nsaved];
        n->in[k].saved = tj_retain(t);
        n->in[k].version = ag_version_of(t);
        n->in[k].unchecked = k >= nsaved && unread && unread[k - nsaved];
        if (k < nargs)   /* an argument that requires grad gets one */
            ag_link_input(&n->in[k], t);
    }
    for (int k = 0; k < nr; k++) {   /* result k is output k (each holds the node) */
        ag_meta *rm = ag_meta_of(r[k]);
        if (k)
            atomic_fetch_add(&n->refs, 1);
        node_release(rm->fn);
        rm->fn = n;
        rm->fn_out = k;
    }
    return 0;
}

/* A write of value through view lv of its base: the base's history becomes
 * a CopySlices node (in[0] the base's old history, in[1] value's). */
static int rebase_view(ag_view *lv, tj_tensor *base, tj_tensor *value)
{
    if (!fe_ag_requires_grad(base) && !(ir_dtype_is_float(value->dtype) && fe_ag_requires_grad(value)))
        return 0;   /* no history on either side */
    ag_meta *bm = meta_get(base);
    ag_node *n = bm ? node_new(OP_copy, 2) : NULL;
    if (!n)
        return -1;
    n->slices = lv;
    atomic_fetch_add(&lv->refs, 1);
    tj_tensor *in[2] = {base, value};
    for (int k = 0; k < 2; k++) {
        if (!(n->in[k].saved = ag_detached(in[k]))) {
            node_release(n);
            return -1;
        }
        n->in[k].version = ag_version_of(in[k]);
        ag_link_input(&n->in[k], in[k]);
    }
    node_release(bm->fn);
    bm->fn = n;
    bm->fn_out = 0;
    bm->gen++;   /* its views' histories are made again when read */
    rt_wref_pin(base);   /* views that hold it weakly find it then */
    return 0;
}

/* t, a view made while its base had no history (no lineage recorded): its
 * lineage now, as_strided over the base's storage (eagerly: fe_ag_view_made's
 * view_of, a base that holds its storage), made from the base's gen. 0 or -1. */
static int adopt_lineage(tj_tensor *t, tj_tensor *base, uint64_t gen)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_ints(&a.a[0], t->shape, t->ndim);
    ir_attr_ints(&a.a[1], t->strides, t->ndim);
    ir_attr_int(&a.a[2], t->offset);
    tj_tensor *bd = ag_detached(base);
    ag_meta *d = bd ? meta_get(t) : NULL;
    ag_view *v = d ? ag_view_extend(NULL, base, bd, OP_as_strided, &a, t) : NULL;
    tj_release(bd);
    if (!v)
        return -1;
    set_lineage(d, v, base);
    d->view_gen = gen;
    return 0;
}

/* dst, an unrecorded (eager) view, written with value that requires grad:
 * its lineage now, so the base's history becomes a CopySlices node as for a
 * view recorded with its base's history (traced views of the trace's values
 * keep a lineage, fe_ag_view_made; of an argument or a capture, such a write
 * is a graph break: ops_view.c). 1 when dst is no such view, 0, -1. */
static int rebase_unrecorded(tj_tensor *dst, tj_tensor *value)
{
    tj_tensor *base = dst->view_of ? rt_wref_get(dst->view_of) : NULL;   /* NULL: released */
    if (!base || !ir_dtype_is_float(value->dtype) || !fe_ag_requires_grad(value))
        return 1;
    if (!rt_holds_storage(base)) {
        rt_error("copy_: a value that requires grad written through a view of a tensor that does "
                 "not hold its whole storage cannot be differentiated");
        return -1;
    }
    const ag_meta *bm = ag_meta_of(base);
    if (adopt_lineage(dst, base, bm ? bm->gen : 0))
        return -1;
    return rebase_view(ag_meta_of(dst)->view, base, value);
}

int fe_ag_rebase(tj_tensor *dst, const tj_tensor *value)
{
    ag_meta *d = ag_meta_of(dst);
    if (ag_no_grad_depth == 0 && d && d->view)
        return rebase_view(d->view, d->view_base, (tj_tensor *)value);
    int rc = ag_no_grad_depth == 0 ? rebase_unrecorded(dst, (tj_tensor *)value) : 1;
    if (rc <= 0)
        return rc;
    ag_node *vf = fn_of(value);
    if (ag_no_grad_depth != 0 || ((!d || !d->fn) && !vf))
        return 0;   /* no history on either side */
    if (!(d = meta_get(dst)))
        return -1;
    if (vf)
        atomic_fetch_add(&vf->refs, 1);
    node_release(d->fn);
    d->fn = vf;
    d->fn_out = vf ? ag_meta_of(value)->fn_out : 0;
    d->gen++;   /* its views' histories are made again when read */
    rt_wref_pin(dst);   /* views that hold it weakly find it then */
    return 0;
}

/* r, a view of x without a lineage, remembers x's base (x's own, or x) and
 * the base's writes so far, which are not r's to follow (adopt_if_written
 * compares them when r is read). 0, or -1 out of memory. */
static int remember_base(tj_tensor *r, tj_tensor *x)
{
    if (!(r->view_of = rt_wref_view(x->view_of ? rt_wref_retain(x->view_of) : rt_wref_of(x))))
        return -1;
    const ag_meta *bm = ag_meta_of(rt_wref_get(r->view_of));
    if (bm && bm->gen) {
        ag_meta *m = meta_get(r);
        if (!m)
            return -1;
        m->view_gen = bm->gen;
    }
    return 0;
}

int fe_ag_view_made(ir_op op, const ir_attrs *a, tj_tensor *r, tj_tensor *x)
{
    if (!ag_view_shares(r, x) || !ir_dtype_is_float(r->dtype))
        return 0;
    r->view_no_grad = x->view_no_grad || ag_no_grad_depth > 0;
    if (ag_no_grad_depth > 0)
        return 0;
    if (!r->sym != !x->sym)
        return 0;   /* a traced view of a concrete tensor: trace.c follows such writes */
    if (!r->sym)
        return remember_base(r, x);
    /* traced: the lineage itself, even while x has no history (a cost at
     * trace time only; fe_ag_record replaces it when x has one), so a write
     * through r, or into its base, reaches the other in the graph */
    if (fe_ag_requires_grad(x))
        return 0;
    const ag_meta *im = ag_meta_of(x);
    tj_tensor *base = im && im->view ? im->view_base : x;
    if (x->view_of || ir_node_is_input(base->sym))
        /* an argument's or a capture's view (or a view of one): writes through
         * it break the graph (ops_view.c); it remembers its base as an eager
         * view does, so that a read after a write into the base with a value
         * that requires grad breaks too (adopt_if_written) */
        return remember_base(r, x);
    tj_tensor *xd = ag_detached(x);
    ag_meta *m = xd ? meta_get(r) : NULL;
    ag_view *v = m ? ag_view_extend(im ? im->view : NULL, base, xd, op, a, r) : NULL;
    tj_release(xd);
    if (!v)
        return -1;
    set_lineage(m, v, base);
    return 0;
}

int fe_ag_check_inplace(const tj_tensor *dst, const tj_tensor *src, const char *what)
{
    if (ag_no_grad_depth == 0 && dst->view_no_grad && ir_dtype_is_float(src->dtype) &&
        fe_ag_requires_grad(src)) {
        rt_error("%s: a view made in no-grad mode (or a view of one) cannot be written in grad "
                 "mode with a value that requires grad: its base would not get the gradient "
                 "(make the view in grad mode, or write in tj_no_grad)", what);
        return -1;
    }
    const ag_meta *m = ag_meta_of(dst);
    if (ag_no_grad_depth == 0 && m && m->requires_grad && !m->fn) {
        rt_error("%s: a leaf tensor that requires grad cannot be written in place "
                 "(use tj_no_grad_begin/end around the update)", what);
        return -1;
    }
    const ag_view *v = m && ag_no_grad_depth == 0 ? m->view : NULL;
    if (v && fe_ag_is_leaf(m->view_base)) {
        rt_error("%s: a view of a leaf tensor that requires grad cannot be written in place "
                 "(use tj_no_grad_begin/end around the update)", what);
        return -1;
    }
    if (v && !v->ok && fe_ag_requires_grad(m->view_base)) {
        rt_error("%s: a write through an as_strided view of a tensor that does not hold its "
                 "whole storage cannot be differentiated", what);
        return -1;
    }
    return 0;
}

/* ---- public: marking and reading ------------------------------------------------------ */

int tj_requires_grad(tj_tensor *t, bool on)
{
    if (!t) {
        if (!rt_has_error())
            rt_error("requires_grad: tensor is NULL");
        return -1;
    }
    if (rt_check_live(&t, 1, "requires_grad") != 0)
        return -1;
    char d[64];
    if (on && !ir_dtype_is_float(t->dtype)) {
        rt_error("requires_grad(%s): only float tensors can require grad", tj_describe(t, d, sizeof d));
        return -1;
    }
    ag_meta *m = on ? meta_get(t) : ag_meta_of(t);
    if (m && m->fn) {
        rt_error("requires_grad(%s): the tensor is the result of a recorded op (not a leaf); "
                 "use tj_detach to make a leaf", tj_describe(t, d, sizeof d));
        return -1;
    }
    if (on && !m)
        return -1;
    if (m)
        m->requires_grad = on;
    fe_trace *tr = on ? fe_trace_current() : NULL;
    if (tr)
        tr->taped = true;
    return 0;
}

bool tj_get_requires_grad(const tj_tensor *t) { return fe_ag_requires_grad(t); }

tj_tensor *tj_grad(const tj_tensor *t)
{
    const ag_meta *m = ag_meta_of(t);
    fe_trace *tr = fe_trace_current();
    if (tr && t && !t->sym) {
        /* while tracing: the gradient as the trace left it, else the one
         * from before the call (and the graph is guarded on it) */
        bool found;
        tj_tensor *g = fe_trace_grad(tr, t, &found);
        if (found && g && m && m->hook && !tr->brk[0])
            /* the hook (data parallelism) may change the gradient after the
             * call: what reads it must run after the call, not in the graph */
            snprintf(tr->brk, sizeof tr->brk, "a read of the gradient of a leaf with a ready-hook "
                     "(tj_set_grad_hook, e.g. data parallelism) after a backward in the same "
                     "compiled function: compile the update (tj_optimizer_step) separately, after the sync");
        if (found)
            return g;
        if (fe_trace_guard_grad(tr, (tj_tensor *)t, m ? m->grad : NULL) != 0)
            tr->failed = true;
    }
    return m ? m->grad : NULL;
}

void tj_zero_grad(tj_tensor *t)
{
    ag_meta *m = ag_meta_of(t);
    fe_trace *tr = fe_trace_current();
    if (tr && t && !t->sym) {
        if (fe_trace_set_grad(tr, t, NULL) != 0)
            tr->failed = true;
        return;
    }
    if (m) {
        tj_release(m->grad);
        m->grad = NULL;
    }
}

int tj_set_grad(tj_tensor *leaf, tj_tensor *g)
{
    char d[64], e[64];
    tj_tensor *in[2] = {leaf, g};
    if (!leaf || !g) {
        if (!rt_has_error())
            rt_error("set_grad: tensor is NULL");
        return -1;
    }
    if (rt_check_live(in, 2, "set_grad") != 0)
        return -1;
    const ag_meta *m = ag_meta_of(leaf);
    if (!m || !m->requires_grad || m->fn || leaf->sym || g->sym ||
        leaf->ndim != g->ndim || memcmp(leaf->shape, g->shape, (size_t)g->ndim * sizeof g->shape[0]) ||
        g->dtype != leaf->dtype) {
        rt_error("set_grad(%s, %s): needs a leaf that requires grad and a gradient of its "
                 "dtype and shape, outside a trace", tj_describe(leaf, d, sizeof d), tj_describe(g, e, sizeof e));
        return -1;
    }
    return fe_ag_set_grad(leaf, g);
}

static bool same_type(const tj_tensor *a, const tj_tensor *b)
{
    return a->dtype == b->dtype && a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof a->shape[0]);
}

static int set_grad(tj_tensor *leaf, tj_tensor *g)
{
    ag_meta *m = meta_get(leaf);
    if (!m)
        return -1;
    /* in place, unless the gradient has a history (TJ_CREATE_GRAPH's): its
     * nodes saved it as it is */
    if (m->grad && !fe_ag_requires_grad(m->grad) && rt_is_contiguous(m->grad) && same_type(m->grad, g)) {
        if (rt_convert(m->grad, g) != 0)
            return -1;
        rt_bump_version(m->grad);
        return 0;
    }
    tj_tensor *c = rt_tensor_new(g->dtype, g->ndim, g->shape);
    if (!c || rt_convert(c, g) != 0) {
        tj_release(c);
        return -1;
    }
    tj_release(m->grad);
    m->grad = c;
    return 0;
}

/* Runs leaf's ready-hook once per backward; a second part arriving after it
 * ran (possible only through a compiled call's writes) is an error rather
 * than a gradient the hook never saw. */
int ag_fire_hook(tj_tensor *leaf, ag_meta *m)
{
    char d[64];
    if (m->fired == bw_gen) {
        rt_error("backward: a part of the gradient of %s arrived after its ready-hook ran",
                 tj_describe(leaf, d, sizeof d));
        return -1;
    }
    m->fired = bw_gen;
    return m->hook(leaf, m->hook_ctx);
}

/* After leaf's gradient changed in a backward: its hook runs when no recorded
 * use of it is still to send a part. */
static int grad_written(tj_tensor *leaf)
{
    ag_meta *m = ag_meta_of(leaf);
    if (!bw_gen || !m || !m->hook)
        return 0;
    m->touched = bw_gen;
    return m->pending == 0 ? ag_fire_hook(leaf, m) : 0;
}

int fe_ag_set_grad(tj_tensor *leaf, tj_tensor *g)
{
    return set_grad(leaf, g) == 0 ? grad_written(leaf) : -1;
}

bool fe_ag_has_hook(const tj_tensor *leaf)
{
    const ag_meta *m = ag_meta_of(leaf);
    return m && m->hook;
}

int fe_ag_part_final(tj_tensor *leaf)
{
    ag_meta *m = ag_meta_of(leaf);
    /* the node running now is the last one still to send a part */
    if (!bw_gen || !m || !m->hook || m->pending != 1 || m->touched != bw_gen)
        return 0;
    return ag_fire_hook(leaf, m);
}

uint64_t fe_ag_hooks_begin(void)
{
    uint64_t outer = bw_gen;
    bw_gen = atomic_fetch_add(&bw_seq, 1) + 1;
    return outer;
}

void fe_ag_hooks_end(uint64_t outer) { bw_gen = outer; }

bool ag_hook_due(const ag_meta *m) { return m->touched == bw_gen && m->fired != bw_gen; }

int tj_set_grad_hook(tj_tensor *leaf, tj_grad_hook_fn fn, void *ctx)
{
    char d[64];
    if (!leaf) {
        if (!rt_has_error())
            rt_error("set_grad_hook: tensor is NULL");
        return -1;
    }
    if (rt_check_live(&leaf, 1, "set_grad_hook") != 0)
        return -1;
    ag_meta *m = ag_meta_of(leaf);
    if (!m || !m->requires_grad || m->fn) {
        rt_error("set_grad_hook(%s): only a leaf that requires grad has a gradient to watch",
                 tj_describe(leaf, d, sizeof d));
        return -1;
    }
    m->hook = fn;
    m->hook_ctx = fn ? ctx : NULL;
    return 0;
}

int fe_ag_take_grad(tj_tensor *leaf, tj_tensor *g)
{
    ag_meta *m = meta_get(leaf);
    if (!m)
        return -1;
    bool own = atomic_load(&g->refs) == 1 && g->storage && atomic_load(&g->storage->refs) == 1 &&
               !g->ag && !g->weak && g->offset == 0 && rt_is_contiguous(g) && same_type(leaf, g);
    if (!own)
        return fe_ag_set_grad(leaf, g);
    tj_release(m->grad);
    m->grad = tj_retain(g);
    return grad_written(leaf);
}

int fe_ag_accumulate(tj_tensor *leaf, tj_tensor *g)
{
    fe_trace *tr = fe_trace_current();
    tj_tensor *old = tj_grad(leaf);
    /* while tracing, a hooked leaf's gradient is a write like any other: the
     * call sets it, and runs the hook, as soon as the plan's step that makes
     * it has run (compile.c); a read of it later in the trace breaks (tj_grad) */
    if (tr && !leaf->sym) {
        tj_tensor *sum = old ? tj_add(old, g) : g;
        return sum ? fe_trace_set_grad(tr, leaf, sum) : -1;
    }
    if (tr) {   /* a traced leaf (a joint's argument, aot_joint.c): the traced value */
        tj_tensor *sum = old ? tj_add(old, g) : g;
        ag_meta *m = sum ? meta_get(leaf) : NULL;
        if (!m)
            return -1;
        tj_retain(sum);
        tj_release(m->grad);
        m->grad = sum;
        return 0;
    }
    /* in place when it has one, as PyTorch accumulates: the gradient keeps
     * its identity (and a compiled step's guard on it holds) */
    tj_tensor *sum = old ? tj_add(old, g) : g;
    return sum ? fe_ag_set_grad(leaf, sum) : -1;
}

int fe_ag_accumulate_graph(tj_tensor *leaf, tj_tensor *g)
{
    ag_meta *m = meta_get(leaf);
    if (!m)
        return -1;
    if (!fe_ag_requires_grad(g) && !(m->grad && fe_ag_requires_grad(m->grad)))
        return fe_ag_accumulate(leaf, g);   /* no history on either side: a gradient as any */
    tj_tensor *sum = m->grad ? tj_add(m->grad, g) : g;   /* recorded: the sum keeps both histories */
    if (!sum)
        return -1;
    tj_retain(sum);
    tj_release(m->grad);
    m->grad = sum;
    return grad_written(leaf);
}

tj_tensor *tj_detach(tj_tensor *t)
{
    if (!t || rt_check_live(&t, 1, "detach") != 0)
        return NULL;
    if (fe_trace_current()) {
        /* traced: a view of t (the identity permutation) made in no-grad
         * mode, so writes through either reach the other as eagerly (they
         * share storage), a split call tracks it, and a concrete t the trace
         * wrote reads as written; no history, and no no-grad view's refusal
         * (PyTorch's detach is no differentiable view) */
        int64_t perm[TJ_MAX_DIMS];
        for (int k = 0; k < t->ndim; k++)
            perm[k] = k;
        ir_attrs a;
        memset(&a, 0, sizeof a);
        ir_attr_ints(&a.a[0], perm, t->ndim);
        ag_no_grad_depth++;
        tj_tensor *d = fe_apply(OP_permute, &t, 1, &a);
        ag_no_grad_depth--;
        if (d)
            d->view_no_grad = t->view_no_grad;
        return d;
    }
    tj_tensor *d = ag_detached(t);
    return d ? rt_own(d) : NULL;
}

void tj_no_grad_begin(void) { ag_no_grad_depth++; }
void tj_no_grad_end(void)
{
    if (ag_no_grad_depth > 0)
        ag_no_grad_depth--;
}
bool tj_grad_enabled(void) { return ag_no_grad_depth == 0; }

