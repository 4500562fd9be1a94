/* autograd.c - reverse-mode automatic differentiation on a tape.
 *
 *   fe_apply --(an input requires grad, grad mode on)--> fe_ag_record: a node
 *   tj_backward(y): nodes reachable from y, newest first (creation order is a
 *       topological order), each node's gradient summed from its consumers,
 *       its op's VJP (vjp*.c) run with grad mode off, the input gradients
 *       summed to the input's shape and cast to its dtype, then sent to the
 *       node that made the input or added into the leaf's .grad.
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

#include "autograd.h"
#include "trace.h"
#include "../runtime/iter.h"

typedef struct ag_node ag_node;

typedef struct ag_meta {
    rt_agmeta base;          /* first: the runtime's release hook */
    bool requires_grad;      /* a leaf the user marked */
    tj_tensor *grad;         /* leaf: accumulated gradient (retained) */
    ag_node *fn;             /* non-leaf: the node that made it (retained) ... */
    int fn_out;              /* ... its output fn_out (a compiled call's node has several) */
    tj_grad_hook_fn hook;    /* leaf: runs when its gradient of a backward is final */
    void *hook_ctx;
    int pending;             /* during a backward: recorded uses still to send a part */
    uint64_t touched;        /* the backward (bw_gen) that last wrote its gradient */
    uint64_t fired;          /* the backward its hook last ran in */
    ag_view *view;           /* a view: how it was made from its base (autograd_views.c) */
    tj_tensor *view_base;    /* a view: its base (retained) */
    uint64_t view_gen;       /* a view: the base's gen its fn was made from */
    uint64_t gen;            /* a base: how many times a write replaced its history */
} ag_meta;

typedef struct ag_input {
    tj_tensor *saved;        /* detached header */
    unsigned version;        /* storage version when saved */
    bool unchecked;          /* a compiled node's watched weight its backward does not read */
    bool need;
    ag_node *fn;             /* gradient goes to this node (retained), its output out ... */
    int out;
    tj_tensor *leaf;         /* ... or into this leaf's .grad (retained) */
} ag_input;

struct ag_node {
    atomic_int refs;
    ir_op op;
    ir_attrs attrs;
    uint64_t seq;            /* creation order */
    bool released;           /* saved values dropped by a backward */
    ag_view *slices;         /* a write through this view of in[0] (CopySlices):
                              * in[1] is the written value */
    int walk;                /* during a backward: 1 + its index in the walk; else 0 */
    tj_tensor *out;          /* detached header of the result */
    const fe_ag_compiled *compiled;   /* a compiled call's node: its backward ... */
    void *cctx;              /* ... and its state; in[0..nargs) holds the call's
                              * arguments, in[nargs..nin) the weights it read */
    int nargs, nsaved;       /* in[0..nsaved) saved (nargs of them arguments), then watched */
    int nout;                /* a compiled call's results on the tape (else 1: the result) */
    unsigned out_version;
    int nin;
    ag_input in[];
};

/* A backward's walk over the nodes (below); send passes a node's input
 * gradients on. */
typedef struct walk walk;
static int send(walk *w, ag_node *n, tj_tensor **gx);

static atomic_uint_fast64_t node_seq;
static _Thread_local int no_grad_depth;
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

static ag_meta *meta_of(const tj_tensor *t) { return t ? (ag_meta *)t->ag : NULL; }

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
    const ag_meta *m = meta_of(t);
    return m && m->requires_grad && !fn_of(t);
}

bool fe_ag_requires_grad(const tj_tensor *t)
{
    const ag_meta *m = meta_of(t);
    return (m && m->requires_grad) || fn_of(t);   /* fn_of: a view may take its base's history */
}

bool fe_ag_is_view(const tj_tensor *t)
{
    const ag_meta *m = meta_of(t);
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

static unsigned version_of(const tj_tensor *t)
{
    return t->storage ? atomic_load_explicit(&t->storage->version, memory_order_relaxed) : 0;
}

/* ---- nodes ----------------------------------------------------------------------- */

static void node_drop_saved(ag_node *n)
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
    node_drop_saved(n);
    if (n->compiled)
        n->compiled->release(n->cctx);
    ag_view_release(n->slices);
    for (int k = 0; k < n->nin; k++) {
        node_release(n->in[k].fn);
        tj_release(n->in[k].leaf);
    }
    free(n);
}

/* Where the gradient of t (an input of a node) goes: to the node that made
 * it, or into t itself, a leaf; e->need says whether it wants one. */
static void link_input(ag_input *e, tj_tensor *t)
{
    e->need = ir_dtype_is_float(t->dtype) && fe_ag_requires_grad(t);
    ag_node *f = e->need ? fn_of(t) : NULL;
    if (f)
        atomic_fetch_add(&f->refs, 1);
    e->fn = f;
    e->out = f ? meta_of(t)->fn_out : 0;
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
    return n;
}

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
        n->in[0].version = version_of(s->in);
        if (k == 0) {
            link_input(&n->in[0], m->view_base);
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
    const ag_meta *bm = meta_of(base);
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
    return adopt_lineage(t, base, m ? m->view_gen : 0) == 0 ? meta_of(t) : m;
}

/* The node that made t, made again first when t is a view whose base was
 * written since (regen). */
static ag_node *fn_of(const tj_tensor *t)
{
    ag_meta *m = meta_of(t);
    if ((!m || !m->view) && t->view_of)
        m = adopt_if_written((tj_tensor *)t, m);
    if (m && m->view) {
        const ag_meta *bm = meta_of(m->view_base);
        if ((bm ? bm->gen : 0) != m->view_gen)
            regen(m, bm);   /* out of memory: the error is set, the old history kept */
    }
    return m ? m->fn : NULL;
}

bool fe_ag_wants_grad(tj_tensor *const *in, int nin)
{
    bool any = false;
    for (int k = 0; k < nin && no_grad_depth == 0; k++)
        any |= in[k] && ir_dtype_is_float(in[k]->dtype) && fe_ag_requires_grad(in[k]);
    return any;
}

/* m (a view's state) takes lineage v (its hold) of base. */
static void set_lineage(ag_meta *m, ag_view *v, tj_tensor *base)
{
    const ag_meta *bm = meta_of(base);
    ag_view_release(m->view);
    tj_release(m->view_base);
    m->view = v;
    m->view_base = tj_retain(base);
    m->view_gen = bm ? bm->gen : 0;
}

tj_tensor *fe_ag_record(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                        tj_tensor *r)
{
    if (!r || no_grad_depth > 0 || !ir_dtype_is_float(r->dtype))
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
        free(n);
        return NULL;
    }
    n->attrs = *a;
    bool ok = (n->out = ag_detached(r)) != NULL;
    n->out_version = version_of(r);
    for (int k = 0; k < nin && ok; k++) {
        ag_input *e = &n->in[k];
        if (!in[k])
            continue;
        ok = (e->saved = ag_detached(in[k])) != NULL;
        e->version = version_of(in[k]);
        link_input(e, in[k]);
    }
    if (!ok) {
        node_release(n);
        return NULL;
    }
    node_release(rm->fn);   /* r is fresh: none, but keep the invariant */
    rm->fn = n;
    rm->fn_out = 0;
    if (ir_ops[op].kind == IR_VIEW && ag_view_shares(r, in[0])) {   /* a view of in[0]: its lineage */
        const ag_meta *im = meta_of(in[0]);
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
        n->in[k].version = version_of(t);
        n->in[k].unchecked = k >= nsaved && unread && unread[k - nsaved];
        if (k < nargs)   /* an argument that requires grad gets one */
            link_input(&n->in[k], t);
    }
    for (int k = 0; k < nr; k++) {   /* result k is output k (each holds the node) */
        ag_meta *rm = meta_of(r[k]);
        if (k)
            atomic_fetch_add(&n->refs, 1);
        node_release(rm->fn);
        rm->fn = n;
        rm->fn_out = k;
    }
    return 0;
}

/* A compiled call's node: its backward plan on the saved arguments, with
 * grad mode on (the backward is traced from the model's tape); the
 * arguments' gradients go on as any node's. */
static int run_compiled(walk *w, ag_node *n, tj_tensor *const *g)
{
    char d[64];
    for (int k = 0; k < n->nin; k++) {
        const tj_tensor *s = n->in[k].saved;
        if (!n->in[k].unchecked && version_of(s) != n->in[k].version) {
            bool arg = k < n->nargs, kept = k < n->nsaved;
            rt_error("backward: %s %d of a compiled call (%s) was modified in place "
                     "after the call (version %u, saved at %u)",
                     arg ? "argument" : kept ? "saved value" : "captured weight",
                     arg ? k : kept ? k - n->nargs : k - n->nsaved,
                     tj_describe(s, d, sizeof d), version_of(s), n->in[k].version);
            return -1;
        }
    }
    tj_tensor *few[FE_MAX_INPUTS] = {0}, **in = n->nin <= FE_MAX_INPUTS ? few : malloc(sizeof *in * (size_t)n->nin);
    if (!in) {
        rt_error("backward: out of memory");
        return -1;
    }
    for (int k = 0; k < n->nin; k++)
        in[k] = n->in[k].saved;
    int depth = no_grad_depth;
    no_grad_depth = 0;
    tj_tensor **gx = calloc((size_t)n->nin + 1, sizeof *gx);   /* gx[0..nargs): the arguments' */
    int rc = gx ? n->compiled->run(n->cctx, in, n->nsaved, n->nin - n->nsaved, g, gx) : -1;
    no_grad_depth = depth;
    if (!gx)
        rt_error("backward: out of memory");
    if (rc == 0)
        rc = send(w, n, gx);   /* in[nargs..) need none: their gradients went into .grad */
    free(gx);
    if (in != few)
        free(in);
    return rc;
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
        n->in[k].version = version_of(in[k]);
        link_input(&n->in[k], in[k]);
    }
    node_release(bm->fn);
    bm->fn = n;
    bm->fn_out = 0;
    bm->gen++;   /* its views' histories are made again when read */
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
    const ag_meta *bm = meta_of(base);
    if (adopt_lineage(dst, base, bm ? bm->gen : 0))
        return -1;
    return rebase_view(meta_of(dst)->view, base, value);
}

int fe_ag_rebase(tj_tensor *dst, const tj_tensor *value)
{
    ag_meta *d = meta_of(dst);
    if (no_grad_depth == 0 && d && d->view)
        return rebase_view(d->view, d->view_base, (tj_tensor *)value);
    int rc = no_grad_depth == 0 ? rebase_unrecorded(dst, (tj_tensor *)value) : 1;
    if (rc <= 0)
        return rc;
    ag_node *vf = fn_of(value);
    if (no_grad_depth != 0 || ((!d || !d->fn) && !vf))
        return 0;   /* no history on either side */
    if (!(d = meta_get(dst)))
        return -1;
    if (vf)
        atomic_fetch_add(&vf->refs, 1);
    node_release(d->fn);
    d->fn = vf;
    d->fn_out = vf ? meta_of(value)->fn_out : 0;
    d->gen++;   /* its views' histories are made again when read */
    return 0;
}

/* r, a view of x without a lineage, remembers x's base (x's own, or x) and
 * the base's writes so far, which are not r's to follow (adopt_if_written
 * compares them when r is read). 0, or -1 out of memory. */
static int remember_base(tj_tensor *r, tj_tensor *x)
{
    if (!(r->view_of = x->view_of ? rt_wref_retain(x->view_of) : rt_wref_of(x)))
        return -1;
    const ag_meta *bm = meta_of(rt_wref_get(r->view_of));
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
    r->view_no_grad = x->view_no_grad || no_grad_depth > 0;
    if (no_grad_depth > 0)
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
    const ag_meta *im = meta_of(x);
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
    if (no_grad_depth == 0 && dst->view_no_grad && ir_dtype_is_float(src->dtype) &&
        fe_ag_requires_grad(src)) {
        rt_error("%s: a view made in no-grad mode (or a view of one) cannot be written in grad "
                 "mode with a value that requires grad: its base would not get the gradient "
                 "(make the view in grad mode, or write in tj_no_grad)", what);
        return -1;
    }
    const ag_meta *m = meta_of(dst);
    if (no_grad_depth == 0 && m && m->requires_grad && !m->fn) {
        rt_error("%s: a leaf tensor that requires grad cannot be written in place "
                 "(use tj_no_grad_begin/end around the update)", what);
        return -1;
    }
    const ag_view *v = m && no_grad_depth == 0 ? m->view : NULL;
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
    ag_meta *m = on ? meta_get(t) : meta_of(t);
    if (m && m->fn) {
        rt_error("requires_grad(%s): the tensor is the result of a recorded op (not a leaf); "
                 "use tj_detach to make a leaf", tj_describe(t, d, sizeof d));
        return -1;
    }
    if (on && !m)
        return -1;
    if (m)
        m->requires_grad = on;
    return 0;
}

bool tj_get_requires_grad(const tj_tensor *t) { return fe_ag_requires_grad(t); }

tj_tensor *tj_grad(const tj_tensor *t)
{
    const ag_meta *m = meta_of(t);
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
    ag_meta *m = meta_of(t);
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
    const ag_meta *m = meta_of(leaf);
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
    if (m->grad && rt_is_contiguous(m->grad) && same_type(m->grad, g)) {
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
static int fire_hook(tj_tensor *leaf, ag_meta *m)
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
    ag_meta *m = meta_of(leaf);
    if (!bw_gen || !m || !m->hook)
        return 0;
    m->touched = bw_gen;
    return m->pending == 0 ? fire_hook(leaf, m) : 0;
}

int fe_ag_set_grad(tj_tensor *leaf, tj_tensor *g)
{
    return set_grad(leaf, g) == 0 ? grad_written(leaf) : -1;
}

bool fe_ag_has_hook(const tj_tensor *leaf)
{
    const ag_meta *m = meta_of(leaf);
    return m && m->hook;
}

int fe_ag_part_final(tj_tensor *leaf)
{
    ag_meta *m = meta_of(leaf);
    /* the node running now is the last one still to send a part */
    if (!bw_gen || !m || !m->hook || m->pending != 1 || m->touched != bw_gen)
        return 0;
    return fire_hook(leaf, m);
}

uint64_t fe_ag_hooks_begin(void)
{
    uint64_t outer = bw_gen;
    bw_gen = atomic_fetch_add(&bw_seq, 1) + 1;
    return outer;
}

void fe_ag_hooks_end(uint64_t outer) { bw_gen = outer; }

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
    ag_meta *m = meta_of(leaf);
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
        no_grad_depth++;
        tj_tensor *d = fe_apply(OP_permute, &t, 1, &a);
        no_grad_depth--;
        if (d)
            d->view_no_grad = t->view_no_grad;
        return d;
    }
    tj_tensor *d = ag_detached(t);
    return d ? rt_own(d) : NULL;
}

void tj_no_grad_begin(void) { no_grad_depth++; }
void tj_no_grad_end(void)
{
    if (no_grad_depth > 0)
        no_grad_depth--;
}
bool tj_grad_enabled(void) { return no_grad_depth == 0; }

/* ---- backward ------------------------------------------------------------------------- */

struct walk {
    ag_node **nodes;         /* reachable nodes */
    int *slot;               /* per node: where its outputs' gradients start in grads */
    tj_tensor **grads;       /* per output of each node: its gradient so far */
    int n, cap;
};

static int node_index(const walk *w, const ag_node *n) { (void)w; return n->walk - 1; }

/* Where the gradient of output out of node n accumulates. */
static tj_tensor **grad_of(walk *w, const ag_node *n, int out) { return &w->grads[w->slot[node_index(w, n)] + out]; }

static int collect(walk *w, ag_node *root)
{
    /* Depth-first with an explicit stack: graphs can be thousands of ops deep. */
    int sp = 0, scap = 16;
    ag_node **stack = malloc((size_t)scap * sizeof *stack);
    if (!stack)
        return -1;
    stack[sp++] = root;
    while (sp > 0) {
        ag_node *n = stack[--sp];
        if (n->walk)
            continue;
        if (w->n == w->cap) {
            int cap = w->cap ? 2 * w->cap : 64;
            ag_node **nn = realloc(w->nodes, (size_t)cap * sizeof *nn);
            if (!nn)
                goto oom;
            w->nodes = nn;
            w->cap = cap;
        }
        w->nodes[w->n++] = n;
        n->walk = w->n;
        for (int k = 0; k < n->nin; k++) {
            if (!n->in[k].fn)
                continue;
            if (sp == scap) {
                ag_node **ns = realloc(stack, (size_t)(scap *= 2) * sizeof *ns);
                if (!ns)
                    goto oom;
                stack = ns;
            }
            stack[sp++] = n->in[k].fn;
        }
    }
    free(stack);
    return 0;
oom:
    free(stack);
    return -1;
}

static int by_seq_desc(const void *a, const void *b)
{
    uint64_t x = (*(ag_node *const *)a)->seq, y = (*(ag_node *const *)b)->seq;
    return (x < y) - (x > y);
}

/* acc + g, or g when acc is NULL (both in the current scope). */
static tj_tensor *accumulate(tj_tensor *acc, tj_tensor *g) { return acc ? tj_add(acc, g) : g; }

/* g shaped and typed like the saved input x. */
static tj_tensor *fit(tj_tensor *g, const tj_tensor *x)
{
    g = ag_sum_to(g, x->ndim, x->shape);
    if (g && g->dtype != x->dtype)
        g = tj_cast(g, x->dtype);
    return g;
}

static int run_rule(ag_node *n, tj_tensor *g, tj_tensor **gx);
static int send(walk *w, ag_node *n, tj_tensor **gx);

/* A write through a view of a base (n->slices): the view's part of the
 * base's gradient g goes to the written value, the rest to the base's old
 * history. Reads no saved values: a later write does not stop it. */
static int copy_slices(ag_node *n, tj_tensor *g, tj_tensor **gx)
{
    if ((n->in[0].need && !(gx[0] = ag_view_outside(n->slices, g))) ||
        (n->in[1].need && !(gx[1] = ag_view_replay(n->slices, g))))
        return -1;
    return 0;
}

static int run_node(walk *w, int i)
{
    ag_node *n = w->nodes[i];
    if (n->released) {
        rt_error("backward: the graph through %s was already used by a backward and freed "
                 "(double backward is not supported)",
                 n->compiled ? "a compiled call" : ir_ops[n->op].name);
        return -1;
    }
    tj_tensor **g = grad_of(w, n, 0);
    if (n->compiled)
        return run_compiled(w, n, g);
    tj_tensor *gx[FE_MAX_INPUTS] = {0};
    if (n->slices ? copy_slices(n, *g, gx) : run_rule(n, *g, gx))
        return -1;
    return send(w, n, gx);
}

/* Runs n's gradient rule on g; 0 or -1 (error set). */
static int run_rule(ag_node *n, tj_tensor *g, tj_tensor **gx)
{
    char d[64];
    /* A saved value written in place since (its storage's version moved):
     * the rule gets a poisoned copy of its header (RT_STALE: shape and dtype
     * readable, an op reading its values fails), so a backward fails where a
     * rule needs the old values, and only there, as PyTorch's saved-tensor
     * check: not for a clone written afterwards, always for a factor of a
     * product, needed or not by the gradient's own input. */
    tj_tensor *saved[FE_MAX_INPUTS], *out = n->out, *poisoned[8];
    bool need[FE_MAX_INPUTS];
    int npoison = 0, first = -2;   /* first stale: input k, or -1 the result */
    for (int k = -1; k < n->nin; k++) {
        tj_tensor *t = k < 0 ? n->out : n->in[k].saved;
        if (k >= 0) {
            saved[k] = t;
            need[k] = n->in[k].need;
        }
        if (!t || version_of(t) == (k < 0 ? n->out_version : n->in[k].version))
            continue;
        tj_tensor *p = npoison < 8 ? malloc(sizeof *p) : NULL;
        if (!p) {
            first = first == -2 ? k : first;
            npoison = -1;   /* refuse: more stale values than copies */
            break;
        }
        *p = *t;
        p->magic = RT_STALE;
        poisoned[npoison++] = p;
        *(k < 0 ? &out : &saved[k]) = p;
        first = first == -2 ? k : first;
    }
    ag_ctx c = {n->op, &n->attrs, n->nin, saved, out, need};
    int rc = npoison < 0 ? -1 : ag_rules[n->op]->vjp(&c, g, gx);
    for (int k = 0; k < npoison; k++)
        free(poisoned[k]);
    if (rc != 0 && first >= 0) {
        const tj_tensor *t = n->in[first].saved;
        rt_error("backward: input %d of %s (%s) was modified in place after it was saved "
                 "(version %u, saved at %u)", first, ir_ops[n->op].name, tj_describe(t, d, sizeof d),
                 version_of(t), n->in[first].version);
    } else if (rc != 0 && first == -1) {
        rt_error("backward: the result of %s (%s) was modified in place after it was saved",
                 ir_ops[n->op].name, tj_describe(n->out, d, sizeof d));
    }
    return rc != 0 ? -1 : 0;
}

/* Sends n's input gradients gx to the nodes that made its inputs, or into
 * the leaves; 0 or -1. */
static int send(walk *w, ag_node *n, tj_tensor **gx)
{
    for (int k = 0; k < n->nin; k++) {
        ag_input *e = &n->in[k];
        if (!e->need || !gx[k])
            continue;
        tj_tensor *g = fit(gx[k], e->saved);
        if (!g)
            return -1;
        if (e->fn) {
            tj_tensor **acc = grad_of(w, e->fn, e->out);
            if (!(*acc = accumulate(*acc, g)))
                return -1;
        } else if (fe_ag_accumulate(e->leaf, g) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Input k of n when it is a leaf with a ready-hook (a compiled call's inputs
 * are the tensors themselves), else NULL. */
static ag_meta *hooked_input(const ag_node *n, int k)
{
    const tj_tensor *t = n->compiled ? n->in[k].saved : n->in[k].leaf;
    ag_meta *m = meta_of(t);
    return m && m->hook && !m->fn ? m : NULL;
}

/* Counts, or with done uncounts and fires, the parts n will send to hooked
 * leaves: a leaf's hook runs after the last node that uses it. */
static int count_parts(const ag_node *n, int delta)
{
    for (int k = 0; k < n->nin; k++) {
        ag_meta *m = hooked_input(n, k);
        if (!m)
            continue;
        m->pending += delta;
        if (delta < 0 && m->pending == 0 && m->touched == bw_gen && m->fired != bw_gen &&
            fire_hook(n->compiled ? n->in[k].saved : n->in[k].leaf, m) != 0)
            return -1;
    }
    return 0;
}

/* Root y of a backward and its seed (NULL: ones, y of one element); 0 or -1. */
static int check_root(tj_tensor *y, tj_tensor *seed)
{
    char d[64], e[64];
    if (!y) {
        if (!rt_has_error())
            rt_error("backward: tensor is NULL");
        return -1;
    }
    tj_tensor *in[2] = {y, seed};
    if (rt_check_live(in, 2, "backward") != 0)
        return -1;
    ag_meta *m = meta_of(y);
    if (!m || !(m->fn || m->requires_grad)) {
        rt_error("backward(%s): the tensor does not require grad (no input of the ops that "
                 "made it requires grad)", tj_describe(y, d, sizeof d));
        return -1;
    }
    if (!seed && rt_numel(y) != 1) {
        rt_error("backward(%s): a gradient seed is needed for a result with more than one "
                 "element (use tj_backward_seed)", tj_describe(y, d, sizeof d));
        return -1;
    }
    if (seed && (seed->ndim != y->ndim || memcmp(seed->shape, y->shape, (size_t)y->ndim * sizeof y->shape[0]))) {
        rt_error("backward(%s): seed %s has another shape", tj_describe(y, d, sizeof d),
                 tj_describe(seed, e, sizeof e));
        return -1;
    }
    fe_trace_any_size_read(y);   /* traced: the rules read the example's sizes */
    return 0;
}

/* Whether a gradient reached an output of node i. */
static bool reached(walk *w, int i)
{
    for (int k = 0; k < w->nodes[i]->nout; k++)
        if (*grad_of(w, w->nodes[i], k))
            return true;
    return false;
}

/* The backward from roots ys[0..n) (checked) with gradients g0[0..n): one
 * walk over every node they reach, each run once with all its parts. */
static int backward_from(tj_tensor *const *ys, tj_tensor *const *g0, int n)
{
    int rc = -1;
    walk w = {0};
    for (int r = 0; r < n; r++) {
        ag_node *f = meta_of(ys[r])->fn;
        if (f && collect(&w, f) != 0) {
            rt_error("backward: out of memory");
            goto out;
        }
    }
    qsort(w.nodes, (size_t)w.n, sizeof *w.nodes, by_seq_desc);
    int nslots = 0;
    if (w.n && !(w.slot = malloc(sizeof *w.slot * (size_t)w.n))) {
        rt_error("backward: out of memory");
        goto out;
    }
    for (int i = 0; i < w.n; i++) {
        w.nodes[i]->walk = i + 1;
        w.slot[i] = nslots;
        nslots += w.nodes[i]->nout;
        count_parts(w.nodes[i], 1);
    }
    if (!(w.grads = calloc((size_t)nslots + 1, sizeof *w.grads))) {
        rt_error("backward: out of memory");
        goto out;
    }
    for (int r = 0; r < n; r++) {
        ag_meta *m = meta_of(ys[r]);
        if (!m->fn) {   /* a leaf: its gradient is the seed */
            tj_tensor *g = fit(g0[r], ys[r]);
            if (!g || fe_ag_accumulate(ys[r], g) != 0)
                goto out;
            continue;
        }
        tj_tensor **acc = grad_of(&w, m->fn, m->fn_out);
        if (!(*acc = accumulate(*acc, g0[r])))
            goto out;
    }
    for (int i = 0; i < w.n; i++) {
        /* no gradient flowed here: the node's parts are none */
        if ((reached(&w, i) && run_node(&w, i) != 0) || count_parts(w.nodes[i], -1) != 0)
            goto out;
    }
    for (int i = 0; i < w.n; i++)
        node_drop_saved(w.nodes[i]);
    rc = 0;
out:
    for (int i = 0; i < w.n; i++) {
        for (int k = 0; k < w.nodes[i]->nin; k++) {
            ag_meta *hm = hooked_input(w.nodes[i], k);
            if (hm)
                hm->pending = 0;   /* after a failure, parts never sent */
        }
        w.nodes[i]->walk = 0;
    }
    free(w.nodes);
    free(w.slot);
    free(w.grads);
    return rc;
}

int fe_ag_backward_roots(tj_tensor *const *ys, tj_tensor *const *seeds, int n)
{
    for (int r = 0; r < n; r++)
        if (check_root(ys[r], seeds ? seeds[r] : NULL) != 0)
            return -1;
    tj_scope_begin();
    no_grad_depth++;
    uint64_t outer_gen = bw_gen;
    bw_gen = atomic_fetch_add(&bw_seq, 1) + 1;
    tj_tensor *few[8], **g0 = n <= 8 ? few : malloc(sizeof *g0 * (size_t)n);
    bool ok = g0 != NULL;
    for (int r = 0; r < n && ok; r++)
        ok = (g0[r] = seeds && seeds[r] ? seeds[r] : tj_ones(ys[r]->dtype, ys[r]->ndim, ys[r]->shape)) != NULL;
    int rc = ok ? backward_from(ys, g0, n) : -1;
    if (g0 != few)
        free(g0);
    no_grad_depth--;
    bw_gen = outer_gen;
    tj_scope_end();
    return rc;
}

int tj_backward_seed(tj_tensor *y, tj_tensor *seed) { return fe_ag_backward_roots(&y, &seed, 1); }

int tj_backward(tj_tensor *y) { return tj_backward_seed(y, NULL); }
