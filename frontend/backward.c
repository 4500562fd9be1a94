/* backward.c - the backward walk over the tape (ag_tape.h): from its roots,
 * the nodes they reach, newest first (creation order is a topological
 * order); each node's output gradients summed from its consumers, then its
 * op's VJP (vjp*.c) run with grad mode off, or a compiled call's backward
 * plan (several outputs: the gradients of all of them at once); the input
 * gradients summed to each input's shape and cast to its dtype, then sent to
 * the node that made the input or added into the leaf's .grad. A leaf's
 * ready-hook runs once the last node that feeds it has sent its part.
 * Each node runs in a scope of its own: what its rule makes goes when it
 * ran, its output gradients too, and its saved values (unless the graph is
 * kept), so a backward holds what is still to be used, as PyTorch's does. A
 * node tj_checkpoint deferred gets its saved values first (checkpoint.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_tape.h"
#include "trace.h"

typedef struct walk {
    ag_node **nodes;         /* reachable nodes */
    int *slot;               /* per node: where its outputs' gradients start in grads */
    tj_tensor **grads;       /* per output of each node: its gradient so far (held) */
    int n, cap, nslots;
    unsigned flags;          /* TJ_RETAIN_GRAPH, TJ_CREATE_GRAPH, TJ_ALLOW_UNUSED */
    /* tj_gradients: the inputs asked for (xs; a non-leaf's node and output in
     * xfn, xout) and their gradients so far (gx); no .grad is written */
    tj_tensor *const *xs;
    ag_node **xfn;
    int *xout;
    tj_tensor **gx;
    int nx;
    bool *needed;            /* tj_gradients: per node, whether it leads to an x */
} walk;

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

/* *slot <- *slot + g, the slot holding its value past the scope it was made
 * in: each node runs in a scope of its own, so what its rule makes is freed
 * as soon as it ran, and a gradient as soon as the node it reached ran. */
static int add_into(tj_tensor **slot, tj_tensor *g)
{
    tj_tensor *v = g ? accumulate(*slot, g) : NULL;
    if (!v)
        return -1;
    tj_retain(v);
    tj_release(*slot);
    *slot = v;
    return 0;
}

/* g shaped and typed like the saved input x. */
static tj_tensor *fit(tj_tensor *g, const tj_tensor *x)
{
    g = ag_sum_to(g, x);
    if (g && g->dtype != x->dtype)
        g = tj_cast(g, x->dtype);
    return g;
}

static int run_rule(ag_node *n, tj_tensor *g, tj_tensor **gx, bool create);
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

/* A compiled call's node: its backward plan on the saved arguments, with
 * grad mode on (the backward is traced from the model's tape); the
 * arguments' gradients go on as any node's. */
static int run_compiled(walk *w, ag_node *n, tj_tensor *const *g)
{
    char d[64];
    if (w->xs || (w->flags & TJ_CREATE_GRAPH)) {
        /* its plan sends its weights' gradients into .grad, and records nothing */
        rt_error("%s: the graph goes through a compiled call, whose backward %s (use tj_backward, "
                 "or call the model uncompiled)", w->xs ? "gradients" : "backward with TJ_CREATE_GRAPH",
                 w->xs ? "writes the weights' .grad" : "is not differentiable");
        return -1;
    }
    for (int k = 0; k < n->nin; k++) {
        const tj_tensor *s = n->in[k].saved;
        if (!n->in[k].unchecked && ag_version_of(s) != n->in[k].version) {
            bool arg = k < n->nargs, kept = k < n->nsaved;
            rt_error("backward: %s %d of a compiled call (%s) was modified in place "
                     "after the call (version %u, saved at %u)",
                     arg ? "argument" : kept ? "saved value" : "captured weight",
                     arg ? k : kept ? k - n->nargs : k - n->nsaved,
                     tj_describe(s, d, sizeof d), ag_version_of(s), n->in[k].version);
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
    int depth = ag_no_grad_depth;
    ag_no_grad_depth = 0;
    tj_tensor **gx = calloc((size_t)n->nin + 1, sizeof *gx);   /* gx[0..nargs): the arguments' */
    int rc = gx ? n->compiled->run(n->cctx, in, n->nsaved, n->nin - n->nsaved, g, gx) : -1;
    ag_no_grad_depth = depth;
    if (!gx)
        rt_error("backward: out of memory");
    if (rc == 0)
        rc = send(w, n, gx);   /* in[nargs..) need none: their gradients went into .grad */
    free(gx);
    if (in != few)
        free(in);
    return rc;
}

static int run_node(walk *w, int i)
{
    ag_node *n = w->nodes[i];
    if (n->released) {
        rt_error("backward: the graph through %s was already used by a backward and freed "
                 "(to run another backward through it, pass TJ_RETAIN_GRAPH to the first: "
                 "tj_backward_ex)", n->compiled ? "a compiled call" : ir_ops[n->op].name);
        return -1;
    }
    if (n->deferred && ag_ckpt_restore(n) != 0)
        return -1;
    tj_tensor **g = grad_of(w, n, 0);
    if (n->compiled)
        return run_compiled(w, n, g);
    tj_tensor *gx[FE_MAX_INPUTS] = {0};
    if (n->slices ? copy_slices(n, *g, gx) : run_rule(n, *g, gx, w->flags & TJ_CREATE_GRAPH))
        return -1;
    return send(w, n, gx);
}

/* Runs n's gradient rule on g; 0 or -1 (error set). With create (grad mode
 * on), the rule reads its saved values with their histories: its own ops are
 * recorded, so the gradients it makes can be differentiated again. */
static int run_rule(ag_node *n, tj_tensor *g, tj_tensor **gx, bool create)
{
    char d[64];
    /* A saved value written in place since (its storage's version moved):
     * the rule gets a poisoned copy of its header (RT_STALE: shape and dtype
     * readable, an op reading its values fails), so a backward fails where a
     * rule needs the old values, and only there, as PyTorch's saved-tensor
     * check: not for a clone written afterwards, always for a factor of a
     * product, needed or not by the gradient's own input. A traced backward
     * (the joint's) reads each saved value as it was saved instead. */
    tj_tensor *saved[FE_MAX_INPUTS], *out = n->out, *poisoned[8];
    bool need[FE_MAX_INPUTS], traced = fe_trace_current() != NULL;
    int npoison = 0, first = -2;   /* first stale: input k, or -1 the result */
    for (int k = -1; k < n->nin; k++) {
        tj_tensor *t = k < 0 ? n->out : n->in[k].saved;
        if (k >= 0) {
            saved[k] = t;
            need[k] = n->in[k].need;
        }
        if (traced && t) {   /* the values as saved (functionalized), written since or not */
            if (!(*(k < 0 ? &out : &saved[k]) = fe_trace_pinned(t)))
                return -1;
            continue;
        }
        if (!t || ag_version_of(t) == (k < 0 ? n->out_version : n->in[k].version))
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
    bool unattached = false;
    for (int k = -1; create && npoison >= 0 && !unattached && k < n->nin; k++) {
        /* the values as saved (not stale), each with its history: an input's
         * node or leaf, the result's node n itself (traced: on the pinned
         * value, a fresh header) */
        tj_tensor **v = k < 0 ? &out : &saved[k];
        const ag_input *e = k < 0 ? NULL : &n->in[k];
        if (!*v || (e && !e->need) || (*v)->magic == RT_STALE)
            continue;
        ag_node *fn = e ? e->fn : n;
        int o = e ? e->out : 0;
        bool pinned = *v != (e ? e->saved : n->out);   /* a fresh header of a traced value */
        if (!(*v = !fn ? e->leaf : pinned ? ag_give_history(*v, fn, o) : ag_with_history(*v, fn, o))) {
            rt_error("backward: out of memory");
            unattached = true;
        }
    }
    ag_ctx c = {n->op, &n->attrs, n->nin, saved, out, need};
    int rc = npoison < 0 || unattached ? -1 : ag_rules[n->op]->vjp(&c, g, gx);
    for (int k = 0; k < npoison; k++)
        free(poisoned[k]);
    if (rc != 0 && first >= 0) {
        const tj_tensor *t = n->in[first].saved;
        rt_error("backward: input %d of %s (%s) was modified in place after it was saved "
                 "(version %u, saved at %u)", first, ir_ops[n->op].name, tj_describe(t, d, sizeof d),
                 ag_version_of(t), n->in[first].version);
    } else if (rc != 0 && first == -1) {
        rt_error("backward: the result of %s (%s) was modified in place after it was saved",
                 ir_ops[n->op].name, tj_describe(n->out, d, sizeof d));
    }
    return rc != 0 ? -1 : 0;
}

/* Which x of tj_gradients the leaf is, or -1. */
static int leaf_index(const walk *w, const tj_tensor *leaf)
{
    for (int j = 0; j < w->nx; j++)
        if (!w->xfn[j] && w->xs[j] == leaf)
            return j;
    return -1;
}

/* g (leaf's shape and dtype) into leaf: its .grad (recorded with
 * TJ_CREATE_GRAPH), or with tj_gradients the gradient of the x it is (other
 * leaves get nothing); 0 or -1. */
static int into_leaf(walk *w, tj_tensor *leaf, tj_tensor *g)
{
    if (!w->xs)
        return (w->flags & TJ_CREATE_GRAPH ? fe_ag_accumulate_graph : fe_ag_accumulate)(leaf, g);
    int j = leaf_index(w, leaf);
    return j < 0 ? 0 : add_into(&w->gx[j], g);
}

/* Sends n's input gradients gx to the nodes that made its inputs, or into
 * the leaves (tj_gradients: into the xs' gradients); 0 or -1. */
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
            if (add_into(grad_of(w, e->fn, e->out), g) != 0)
                return -1;
        } else if (into_leaf(w, e->leaf, g) != 0) {
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
    ag_meta *m = ag_meta_of(t);
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
        if (delta < 0 && m->pending == 0 && ag_hook_due(m) &&
            ag_fire_hook(n->compiled ? n->in[k].saved : n->in[k].leaf, m) != 0)
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
    ag_meta *m = ag_meta_of(y);
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

/* tj_gradients: which nodes lead to an x (an input that is one, or that a
 * node leading to one made); only they run. Inputs were made before their
 * consumers: in creation order, each node's inputs are decided first. */
static int mark_needed(walk *w)
{
    if (!(w->needed = calloc((size_t)w->n + 1, sizeof *w->needed)))
        return -1;
    for (int i = w->n - 1; i >= 0; i--) {
        const ag_node *n = w->nodes[i];
        for (int k = 0; k < n->nin && !w->needed[i]; k++) {
            const ag_input *e = &n->in[k];
            if (!e->need)
                continue;
            if (!e->fn) {
                w->needed[i] = leaf_index(w, e->leaf) >= 0;
                continue;
            }
            w->needed[i] = w->needed[node_index(w, e->fn)];
            for (int j = 0; j < w->nx && !w->needed[i]; j++)
                w->needed[i] = w->xfn[j] == e->fn && w->xout[j] == e->out;
        }
        /* a compiled call's captured weights (watched) get gradients too */
        for (int k = n->nsaved; n->compiled && k < n->nin && !w->needed[i]; k++)
            w->needed[i] = leaf_index(w, n->in[k].saved) >= 0;
    }
    return 0;
}

/* tj_gradients: the gradients of the non-leaf xs node i made, complete
 * before it runs (its consumers ran first); 0 or -1. */
static int take_results(walk *w, int i)
{
    for (int j = 0; j < w->nx; j++) {
        tj_tensor *g = w->xfn[j] == w->nodes[i] ? *grad_of(w, w->nodes[i], w->xout[j]) : NULL;
        if (g && add_into(&w->gx[j], g) != 0)
            return -1;
    }
    return 0;
}

/* The backward from roots ys[0..n) (checked) with gradients g0[0..n): one
 * walk over every node they reach (tj_gradients: that lead to an x), each
 * run once with all its parts. */
static int backward_from(walk *w, tj_tensor *const *ys, tj_tensor *const *g0, int n)
{
    int rc = -1;
    bool hooks = !w->xs;   /* tj_gradients writes no .grad: no ready-hook runs */
    for (int r = 0; r < n; r++) {
        ag_node *f = ag_meta_of(ys[r])->fn;
        if (f && collect(w, f) != 0) {
            rt_error("backward: out of memory");
            goto out;
        }
    }
    qsort(w->nodes, (size_t)w->n, sizeof *w->nodes, by_seq_desc);
    int nslots = 0;
    bool keep = w->flags & (TJ_RETAIN_GRAPH | TJ_CREATE_GRAPH);
    if (w->n && !(w->slot = malloc(sizeof *w->slot * (size_t)w->n))) {
        rt_error("backward: out of memory");
        goto out;
    }
    for (int i = 0; i < w->n; i++) {
        w->nodes[i]->walk = i + 1;
        w->slot[i] = nslots;
        nslots += w->nodes[i]->nout;
        if (hooks)
            count_parts(w->nodes[i], 1);
    }
    if (!(w->grads = calloc((size_t)nslots + 1, sizeof *w->grads)) || (w->xs && mark_needed(w) != 0)) {
        rt_error("backward: out of memory");
        goto out;
    }
    w->nslots = nslots;
    for (int r = 0; r < n; r++) {
        ag_meta *m = ag_meta_of(ys[r]);
        if (!m->fn) {   /* a leaf: its gradient is the seed */
            tj_tensor *g = fit(g0[r], ys[r]);
            if (!g || into_leaf(w, ys[r], g) != 0)
                goto out;
            continue;
        }
        if (add_into(grad_of(w, m->fn, m->fn_out), g0[r]) != 0)
            goto out;
    }
    for (int i = 0; i < w->n; i++) {
        ag_node *nd = w->nodes[i];
        tj_scope_begin();
        /* no gradient flowed here: the node's parts are none */
        bool run = reached(w, i) && (!w->needed || w->needed[i]);
        bool failed = (w->xs && take_results(w, i) != 0) || (run && run_node(w, i) != 0) ||
                      (hooks && count_parts(nd, -1) != 0);
        tj_scope_end();
        for (int k = 0; k < nd->nout; k++) {   /* its gradients were used */
            tj_tensor **g = grad_of(w, nd, k);
            tj_release(*g);
            *g = NULL;
        }
        if (failed)
            goto out;
        if (run && !keep)   /* its saved values too, as PyTorch frees them */
            ag_node_drop_saved(nd);
    }
    rc = 0;
out:
    for (int k = 0; w->grads && k < w->nslots; k++)
        tj_release(w->grads[k]);
    for (int i = 0; i < w->n; i++) {
        for (int k = 0; hooks && k < w->nodes[i]->nin; k++) {
            ag_meta *hm = hooked_input(w->nodes[i], k);
            if (hm)
                hm->pending = 0;   /* after a failure, parts never sent */
        }
        w->nodes[i]->walk = 0;
    }
    free(w->nodes);
    free(w->slot);
    free(w->grads);
    free(w->needed);
    return rc;
}

int fe_ag_reach(tj_tensor *const *ys, int n, tj_tensor *const *leaves, int nl, uint64_t *reach)
{
    memset(reach, 0, sizeof *reach * (size_t)nl);
    for (int r = 0; r < n && r < 64; r++) {
        ag_meta *m = ag_meta_of(ys[r]);
        walk w = {0};
        if (m && m->fn && collect(&w, m->fn) != 0) {
            rt_error("backward: out of memory");
            return -1;
        }
        for (int i = 0; i < w.n; i++) {
            const ag_node *nd = w.nodes[i];
            for (int k = 0; k < nd->nin; k++)
                for (int l = 0; nd->in[k].need && nd->in[k].leaf && l < nl; l++)
                    reach[l] |= leaves[l] == nd->in[k].leaf ? (uint64_t)1 << r : 0;
            w.nodes[i]->walk = 0;
        }
        for (int l = 0; l < nl; l++)   /* a root that is a leaf reaches itself */
            reach[l] |= leaves[l] == ys[r] ? (uint64_t)1 << r : 0;
        free(w.nodes);
    }
    return 0;
}

/* The backward from roots ys[0..n) with seeds (NULL, or NULL each: ones)
 * over walk w (its flags, and tj_gradients' xs set); 0 or -1. */
static int backward_roots(walk *w, tj_tensor *const *ys, tj_tensor *const *seeds, int n)
{
    for (int r = 0; r < n; r++)
        if (check_root(ys[r], seeds ? seeds[r] : NULL) != 0)
            return -1;
    fe_trace *tr = fe_trace_current();
    if (tr && !w->xs && (w->flags & TJ_CREATE_GRAPH)) {
        /* a traced .grad with a history is not followed: the call runs
         * eagerly; the trace goes on without the history to finish
         * (tj_gradients with TJ_CREATE_GRAPH is traced like any backward) */
        fe_trace_break(tr, "a backward with TJ_CREATE_GRAPH into .grad (tj_backward_ex; tj_gradients is traced)");
        w->flags &= ~(unsigned)TJ_CREATE_GRAPH;
    }
    bool create = w->flags & TJ_CREATE_GRAPH;
    tj_scope_begin();
    int depth = ag_no_grad_depth;
    ag_no_grad_depth = create ? 0 : depth + 1;   /* create: recorded, even inside tj_no_grad */
    uint64_t outer_gen = fe_ag_hooks_begin();   /* this backward's number */
    tj_tensor *few[8], **g0 = n <= 8 ? few : malloc(sizeof *g0 * (size_t)n);
    bool ok = g0 != NULL;
    for (int r = 0; r < n && ok; r++)
        ok = (g0[r] = seeds && seeds[r] ? seeds[r] : tj_ones(ys[r]->dtype, ys[r]->ndim, ys[r]->shape)) != NULL;
    int rc = ok ? backward_from(w, ys, g0, n) : -1;
    if (g0 != few)
        free(g0);
    ag_no_grad_depth = depth;
    fe_ag_hooks_end(outer_gen);
    tj_scope_end();
    for (int j = 0; j < w->nx; j++)   /* held by the walk: the caller's now */
        if (w->gx[j])
            w->gx[j] = rt_own(w->gx[j]);
    return rc;
}

int fe_ag_backward_roots(tj_tensor *const *ys, tj_tensor *const *seeds, int n)
{
    walk w = {0};
    return backward_roots(&w, ys, seeds, n);
}

static bool flags_ok(unsigned flags, const char *what)
{
    if (flags & ~(unsigned)(TJ_RETAIN_GRAPH | TJ_CREATE_GRAPH | TJ_ALLOW_UNUSED)) {
        rt_error("%s: unknown flags 0x%x (TJ_RETAIN_GRAPH, TJ_CREATE_GRAPH, TJ_ALLOW_UNUSED)", what, flags);
        return false;
    }
    return true;
}

int tj_backward_ex(tj_tensor *y, tj_tensor *seed, unsigned flags)
{
    walk w = {.flags = flags};
    return flags_ok(flags, "backward") ? backward_roots(&w, &y, &seed, 1) : -1;
}

int tj_backward_seed(tj_tensor *y, tj_tensor *seed) { return tj_backward_ex(y, seed, 0); }

int tj_backward(tj_tensor *y) { return tj_backward_seed(y, NULL); }

/* tj_gradients' xs: live, float, requiring grad; their nodes in w. 0 or -1. */
static int check_inputs(walk *w, tj_tensor *const *xs, int nx)
{
    char d[64];
    for (int j = 0; j < nx; j++) {
        if (!xs[j]) {
            if (!rt_has_error())
                rt_error("gradients: input %d is NULL", j);
            return -1;
        }
        if (rt_check_live(&xs[j], 1, "gradients") != 0)
            return -1;
        if (!ir_dtype_is_float(xs[j]->dtype) || !fe_ag_requires_grad(xs[j])) {
            rt_error("gradients: input %d (%s) does not require grad", j, tj_describe(xs[j], d, sizeof d));
            return -1;
        }
        w->xfn[j] = ag_fn_of(xs[j]);
        w->xout[j] = w->xfn[j] ? ag_meta_of(xs[j])->fn_out : 0;
    }
    return 0;
}

int tj_gradients(tj_tensor *const *ys, tj_tensor *const *seeds, int ny, tj_tensor *const *xs, int nx,
                 unsigned flags, tj_tensor **gx)
{
    if (!ys || !xs || !gx || ny < 1 || nx < 1) {
        rt_error("gradients: needs at least one output and one input, and room for the gradients "
                 "(%d outputs, %d inputs)", ny, nx);
        return -1;
    }
    if (!flags_ok(flags, "gradients"))
        return -1;
    walk w = {.flags = flags, .xs = xs, .nx = nx};
    w.xfn = calloc((size_t)nx, sizeof *w.xfn);
    w.xout = calloc((size_t)nx, sizeof *w.xout);
    w.gx = gx;
    for (int j = 0; j < nx; j++)
        gx[j] = NULL;
    int rc = -1;
    if (!w.xfn || !w.xout)
        rt_error("gradients: out of memory");
    else if (check_inputs(&w, xs, nx) == 0)
        rc = backward_roots(&w, ys, seeds, ny);
    char d[64];
    for (int j = 0; rc == 0 && j < nx; j++) {
        if (gx[j])
            continue;
        if (!(flags & TJ_ALLOW_UNUSED)) {
            rt_error("gradients: input %d (%s) is not reached from the outputs (pass TJ_ALLOW_UNUSED "
                     "for zeros)", j, tj_describe(xs[j], d, sizeof d));
            rc = -1;
        } else if (!(gx[j] = tj_zeros(xs[j]->dtype, xs[j]->ndim, xs[j]->shape))) {
            rc = -1;
        }
    }
    if (rc != 0)
        for (int j = 0; j < nx; j++)
            gx[j] = NULL;   /* in the scope: released with it */
    free(w.xfn);
    free(w.xout);
    return rc;
}

/* The products J v of the seeds' gradients; the ys' graph kept (a first
 * pass with TJ_CREATE_GRAPH keeps its saved values). */
static int jvp_passes(tj_tensor *const *ys, int ny, tj_tensor *const *xs, tj_tensor *const *vs, int nx,
                      unsigned flags, tj_tensor **u, tj_tensor **g, tj_tensor **jv)
{
    for (int i = 0; i < ny; i++) {
        if (!ys[i] || !(u[i] = tj_zeros(ys[i]->dtype, ys[i]->ndim, ys[i]->shape)) || tj_requires_grad(u[i], true) != 0)
            return -1;
    }
    if (tj_gradients(ys, u, ny, xs, nx, TJ_CREATE_GRAPH | TJ_ALLOW_UNUSED, g) != 0)
        return -1;
    tj_tensor *s = NULL;
    for (int j = 0; j < nx; j++) {
        tj_tensor *t = tj_sum(tj_mul(g[j], vs[j]), NULL, 0, false);
        if (!t || !(s = s ? tj_add(s, t) : t))
            return -1;
    }
    if (fe_ag_requires_grad(s))
        return tj_gradients(&s, NULL, 1, u, ny, TJ_ALLOW_UNUSED | (flags & TJ_CREATE_GRAPH), jv);
    for (int i = 0; i < ny; i++)   /* no gradient depends on the seeds: the xs do not reach the ys */
        if (!(jv[i] = tj_zeros(ys[i]->dtype, ys[i]->ndim, ys[i]->shape)))
            return -1;
    return 0;
}

int tj_jvp(tj_tensor *const *ys, int ny, tj_tensor *const *xs, tj_tensor *const *vs, int nx, unsigned flags,
           tj_tensor **jv)
{
    char d[64], e[64];
    if (!ys || !xs || !vs || !jv || ny < 1 || nx < 1) {
        rt_error("jvp: needs at least one output and one input with its tangent, and room for the products "
                 "(%d outputs, %d inputs)", ny, nx);
        return -1;
    }
    if (flags & ~(unsigned)TJ_CREATE_GRAPH) {
        rt_error("jvp: unknown flags 0x%x (TJ_CREATE_GRAPH)", flags);
        return -1;
    }
    for (int j = 0; j < nx; j++) {
        if (!xs[j] || !vs[j]) {
            if (!rt_has_error())
                rt_error("jvp: input or tangent %d is NULL", j);
            return -1;
        }
        if (vs[j]->ndim != xs[j]->ndim || memcmp(vs[j]->shape, xs[j]->shape, sizeof xs[j]->shape[0] * (size_t)xs[j]->ndim)) {
            rt_error("jvp: tangent %d (%s) does not have the shape of input (%s)", j, tj_describe(vs[j], d, sizeof d),
                     tj_describe(xs[j], e, sizeof e));
            return -1;
        }
    }
    /* the seeds u, the first pass's gradients g, the products r */
    size_t nt = 2 * (size_t)ny + (size_t)nx;
    tj_tensor *few[24], **u = nt <= 24 ? few : calloc(nt, sizeof *u);
    if (!u) {
        rt_error("jvp: out of memory");
        return -1;
    }
    tj_tensor **g = u + ny, **r = g + nx;
    tj_scope_begin();
    int rc = jvp_passes(ys, ny, xs, vs, nx, flags, u, g, r);
    for (int i = 0; i < ny; i++)
        jv[i] = rc == 0 ? tj_retain(r[i]) : NULL;
    tj_scope_end();
    for (int i = 0; i < ny && rc == 0; i++)
        jv[i] = rt_own(jv[i]);
    if (u != few)
        free(u);
    return rc;
}
