/* segment.c - graphs split at graph breaks: the pieces of a function that
 * reads traced values (tj_item, tj_data, tj_get) or runs a random op, each
 * compiled, with the break run eagerly between them.
 *
 * A C function cannot be resumed in the middle, so a split entry runs the
 * model function on every call, lazily: its ops are traced into a fresh
 * graph (cheap: no kernel runs) until something needs values. There the
 * piece traced so far is flushed: looked up among the compiled pieces of
 * the entry by its body (ir_graph_same_body: the same ops on the same
 * inputs), run as compiled kernels, and the tensors the program still holds
 * get the values (a symbolic header becomes concrete in place); the break
 * runs eagerly with real values (the loop bound from tj_item decides how
 * many ops the next piece records), and tracing resumes into a new graph
 * whose inputs are those concrete tensors. The same at the return, for the
 * results and the write-backs.
 *
 *   call:  trace piece 0 .. break | run piece 0's plan, break eagerly |
 *          trace piece 1 .. return | run piece 1's plan, write back
 *
 * The guard of a piece is its body: a break value that changes the control
 * flow (a trip count) makes another body, which is another piece (traced
 * once, compiled from the next call on). A piece's outputs are the values
 * the rest of the program read: the first call (discovery) runs a new body
 * on the graph executor with every live tensor as an output and records
 * which of them were read later (captured by a later piece, read by the
 * eager code, returned, kept past the call); the compiled piece outputs
 * those alone, so fusion is not cut by values nobody reads. Wrapped
 * scalars (tj_mul_s(x, s) with s from tj_item) are inputs of a piece, not
 * constants, so a new value is not a new body. A call that
 * reads one it does not output ("late") recomputes that piece on the
 * executor and the next call compiles the piece with the larger set.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/iter.h"
#include "../sched/exec.h"
#include "../sched/sched.h"
#include "trace.h"

#define SPLIT_MAX_PIECES 64   /* compiled pieces per entry; beyond: the executor */

typedef struct piece {
    ir_graph *g;            /* the body and its outputs (owned) */
    int index;              /* its position in a call: 0 is the first piece */
    bool final;             /* ends at the function's return */
    int *oslot;             /* ir_slot of each output */
    int nout;               /* outputs (g's are set only when there are some) */
    int *last_use;
    sc_plan_set *plans;     /* NULL: no outputs (nothing to run) */
    atomic_bool retired;    /* replaced by one with more outputs */
    atomic_ulong runs;
    char brk[320];          /* the break that ends it, with its call site */
} piece;

struct fe_split {
    char name[64];
    pthread_mutex_t lock;
    piece **p;
    int np, cap;
    atomic_ulong executor_runs;   /* pieces run on the executor (new, late, full) */
    atomic_ulong late;            /* values recomputed because a piece did not output them */
    atomic_ulong eager_ops;       /* random ops run eagerly without a split */
};

/* A piece of this call, finished (flushed). */
typedef struct done {
    ir_graph *g;            /* this call's trace of it (owned until the call ends) */
    piece *used;            /* the compiled piece that ran, or NULL (discovery) */
    tj_tensor **in;         /* its inputs (retained) */
    int nin;
    int *slots;             /* discovery: the outputs read later; replay: extra ones */
    int nslots;
    bool final;
    char brk[320];
} done;

/* A value a discovery piece gave a header: read later or not. */
typedef struct mat {
    const tj_tensor *t;
    int d, slot;
} mat;

/* A header this call made as a view (par NULL: not a view): the tensor it
 * views, held when concrete (a symbolic one is a header of this call, held
 * by hdr: holding it here too would keep it live), its view node, and the
 * tensor under its chain of views (eagerly, the owner of its storage). */
typedef struct hview {
    tj_tensor *par;
    const ir_node *vop;
    tj_tensor *base;
    bool held;
} hview;

struct fe_segrun {
    fe_split *sp;
    tj_tensor *const *args;
    int nargs;
    tj_tensor **hdr;        /* symbolic headers this call made (retained) */
    hview *view;            /* view[k]: how hdr[k] views another tensor */
    int nhdr, caphdr;
    int *hix, nhix;         /* hdr's indices by address (open addressing; -1 empty) */
    done *d;
    int nd, capd;
    mat *m;
    int nm, capm;
    int index;
};

/* ---- small helpers ---------------------------------------------------------------- */

static int grow(void **arr, int n, int *cap, size_t elem)
{
    if (n < *cap)
        return 0;
    int nc = 2 * n + 16;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) {
        rt_error("out of memory while tracing");
        return -1;
    }
    *arr = p;
    *cap = nc;
    return 0;
}

static bool in_graph(const ir_graph *g, const ir_node *n)
{
    if (!n || n->id < 0)
        return false;
    return ir_node_is_input(n) ? n->id < g->ninputs && g->inputs[n->id] == n
                               : n->id < g->nnodes && g->nodes[n->id] == n;
}

/* Header h (symbolic) takes the values of concrete v: same storage, v's
 * strides and offset; it is concrete from now on. */
static void materialize(tj_tensor *h, const tj_tensor *v) { rt_tensor_rebind(h, v); }

static bool is_arg(const fe_trace *tr, const tj_tensor *h)
{
    for (int k = 0; k < tr->nargs; k++)
        if (tr->args[k] == h)
            return true;
    return false;
}

static bool live(const tj_tensor *h) { return atomic_load(&h->refs) > 1; }   /* more than ours */

static size_t hix_slot(const fe_segrun *R, const tj_tensor *t)
{
    return (size_t)(((uintptr_t)t >> 4) * 0x9E3779B97F4A7C15ull >> 7) & (size_t)(R->nhix - 1);
}

/* t's index in hdr, or -1 when this call did not trace it. */
static int hdr_index(const fe_segrun *R, const tj_tensor *t)
{
    for (size_t i = R->nhix ? hix_slot(R, t) : 0; R->nhix && R->hix[i] >= 0; i = (i + 1) & (size_t)(R->nhix - 1))
        if (R->hdr[R->hix[i]] == t)
            return R->hix[i];
    return -1;
}

/* Indexes hdr[0..nhdr) in a table of n slots (a power of two). 0 or -1. */
static int hix_build(fe_segrun *R, int n)
{
    int *t = malloc(sizeof *t * (size_t)n);
    if (!t) {
        rt_error("out of memory while tracing");
        return -1;
    }
    free(R->hix);
    R->hix = t;
    R->nhix = n;
    for (int i = 0; i < n; i++)
        t[i] = -1;
    for (int k = 0; k < R->nhdr; k++) {
        size_t i = hix_slot(R, R->hdr[k]);
        while (t[i] >= 0)
            i = (i + 1) & (size_t)(n - 1);
        t[i] = k;
    }
    return 0;
}

/* The tensor t views eagerly through views this call made (t when none). */
static tj_tensor *eager_base(const fe_segrun *R, tj_tensor *t)
{
    int k = hdr_index(R, t);
    return k >= 0 && R->view[k].par ? R->view[k].base : t;
}

static void piece_free(piece *p)
{
    if (!p)
        return;
    sc_plans_free(p->plans);
    free(p->last_use);
    free(p->oslot);
    ir_graph_free(p->g);
    free(p);
}

fe_split *fe_split_new(const char *name)
{
    fe_split *sp = calloc(1, sizeof *sp);
    if (!sp)
        return NULL;
    snprintf(sp->name, sizeof sp->name, "%s", name);
    pthread_mutex_init(&sp->lock, NULL);
    return sp;
}

void fe_split_free(fe_split *sp)
{
    if (!sp)
        return;
    for (int k = 0; k < sp->np; k++)
        piece_free(sp->p[k]);
    free(sp->p);
    pthread_mutex_destroy(&sp->lock);
    free(sp);
}

/* ---- running a piece -------------------------------------------------------------- */

/* The inputs of trace graph g: the arguments (piece 0), then the captures. */
static tj_tensor **piece_inputs(fe_trace *tr, const ir_graph *g)
{
    tj_tensor **in = calloc((size_t)g->ninputs + 1, sizeof *in);
    if (!in) {
        rt_error("out of memory while tracing");
        return NULL;
    }
    int nx = 0;
    for (int k = 0; k < g->ninputs; k++)
        nx += !g->inputs[k]->param;
    for (int k = 0; k < g->ninputs; k++)
        in[k] = tj_retain(k < nx ? tr->seg->args[k] : tr->caps[k - nx]);
    return in;
}

/* Runs g (outputs set) on the executor: vals[k] for output k. */
static int run_executor(fe_split *sp, const ir_graph *g, tj_tensor *const *in, tj_tensor **vals)
{
    if (g->noutputs == 0)
        return 0;
    atomic_fetch_add(&sp->executor_runs, 1);
    int *lu = sc_exec_last_use(g);
    if (!lu) {
        rt_error("out of memory while tracing");
        return -1;
    }
    int rc = sc_exec(g, in, lu, vals);
    free(lu);
    return rc;
}

static int run_piece(fe_split *sp, piece *p, tj_tensor *const *in, tj_tensor **vals)
{
    if (!p->plans)
        return 0;
    atomic_fetch_add(&p->runs, 1);
    int rc = sc_plans_run(p->plans, in, vals);
    if (rc > 0) {
        atomic_fetch_add(&sp->executor_runs, 1);
        rc = sc_exec(p->g, in, p->last_use, vals);
    }
    return rc;
}

/* The compiled piece for trace graph g at this position: the same body and
 * (final) the same outputs, or (middle) outputs that include need. */
static piece *find_piece(fe_split *sp, const ir_graph *g, int index, bool final, const int *need,
                         int nneed)
{
    piece *found = NULL;
    pthread_mutex_lock(&sp->lock);
    for (int k = 0; k < sp->np && !found; k++) {
        piece *p = sp->p[k];
        if (atomic_load(&p->retired) || p->index != index || p->final != final ||
            !ir_graph_same_body(p->g, g) || (final && p->nout != nneed))
            continue;
        bool all = true;
        for (int i = 0; i < nneed && all; i++) {
            bool has = false;
            for (int j = 0; j < p->nout && !has; j++)
                has = p->oslot[j] == need[i] && (!final || j == i);
            all = has;
        }
        if (all)
            found = p;
    }
    pthread_mutex_unlock(&sp->lock);
    return found;
}

/* ---- flushing a piece --------------------------------------------------------------- */

static int add_slot(int **s, int *n, int *cap, int slot)
{
    for (int k = 0; k < *n; k++)
        if ((*s)[k] == slot)
            return 0;
    if (grow((void **)s, *n, cap, sizeof **s) != 0)
        return -1;
    (*s)[(*n)++] = slot;
    return 0;
}

static ir_node *slot_node(const ir_graph *g, int slot)
{
    return slot < g->ninputs ? g->inputs[slot] : g->nodes[slot - g->ninputs];
}

static int late(fe_trace *tr, tj_tensor *t);
/* Before a write into dst (a tensor this call traced, concrete) runs on its
 * storage: the tensor under dst's views comes out concrete, with a storage of
 * its own when this call made it, and the views of it the program holds (dst
 * among them) are made again on it, so the write shows through all of them
 * as in eager. 0 or -1. */
static int rebase(fe_trace *tr, tj_tensor *dst);

/* A later read that a piece of this call did not output recomputes that
 * piece from its inputs (late): those of in sharing storage with dst, about
 * to be written, keep their present values as copies. 0 or -1. */
static int keep_inputs(tj_tensor **in, int nin, const tj_tensor *dst)
{
    for (int k = 0; k < nin; k++) {
        if (!in[k] || in[k]->storage != dst->storage)
            continue;
        tj_tensor *c = rt_tensor_new(in[k]->dtype, in[k]->ndim, in[k]->shape);
        if (!c || rt_convert(c, in[k]) != 0) {
            if (c)
                tj_release(c);
            return -1;
        }
        tj_release(in[k]);
        in[k] = c;
    }
    return 0;
}

/* Ends the piece being traced: runs it (compiled, or on the executor when
 * new), gives the live headers their values, writes back, and starts the
 * next piece. res: the results when final. 0 or -1. */
static int flush(fe_trace *tr, const char *brk, bool final, tj_tensor *const *res, int nres)
{
    fe_segrun *R = tr->seg;
    ir_graph *g = tr->g;
    int *want = NULL, nwant = 0, capw = 0, nneed;
    int rc = -1;
    /* views taken before an in-place write into their base: their values now */
    for (int k = 0; tr->novw && k < R->nhdr; k++) {
        tj_tensor *h = R->hdr[k];
        if (h->sym && !ir_node_is_input(h->sym) && in_graph(g, h->sym) && live(h) && !fe_trace_value(tr, h))
            return -1;
    }
    tj_tensor **in = piece_inputs(tr, g), **vals = NULL;
    if (!in)
        return -1;
    /* what must be an output: the results, the values written back */
    for (int k = 0; final && k < nres; k++)
        if (res[k]->sym && in_graph(g, res[k]->sym) && (grow((void **)&want, nwant, &capw, sizeof *want) ||
                                                       (want[nwant++] = ir_slot(g, res[k]->sym), 0)))
            goto out;
    for (int k = 0; k < tr->nwrites; k++) {
        fe_write *w = &tr->writes[k];
        if (w->kind != FE_WRITE_DATA) {
            rt_error("%s: a function with a graph break cannot set gradients in it (run it "
                     "eagerly)", R->sp->name);
            goto out;
        }
        if (add_slot(&want, &nwant, &capw, ir_slot(g, w->value->sym)) != 0)
            goto out;
    }
    nneed = nwant;
    piece *p = g->nnodes || nwant ? find_piece(R->sp, g, R->index, final, want, nwant) : NULL;
    if (!p && !final)   /* discovery: every live value of this piece */
        for (int k = 0; k < R->nhdr; k++) {
            tj_tensor *h = R->hdr[k];
            if (h->sym && !ir_node_is_input(h->sym) && in_graph(g, h->sym) && live(h) &&
                add_slot(&want, &nwant, &capw, ir_slot(g, h->sym)) != 0)
                goto out;
        }
    if (!p && nwant) {
        ir_node **on = malloc((size_t)nwant * sizeof *on);
        if (!on) {
            rt_error("out of memory while tracing");
            goto out;
        }
        for (int k = 0; k < nwant; k++)
            on[k] = slot_node(g, want[k]);
        int s = ir_graph_set_outputs(g, on, nwant);
        free(on);
        if (s != 0) {
            rt_error("tracing: %s", ir_graph_error(g));
            goto out;
        }
    }
    int nout = p ? p->nout : nwant;
    vals = calloc((size_t)nout + 1, sizeof *vals);
    if (!vals) {
        rt_error("out of memory while tracing");
        goto out;
    }
    if (g->nnodes == 0) {   /* outputs are inputs */
        for (int k = 0; k < nout; k++)
            vals[k] = tj_retain(in[p ? p->oslot[k] : want[k]]);
    } else if ((p ? run_piece(R->sp, p, in, vals) : run_executor(R->sp, g, in, vals)) != 0) {
        goto out;
    }
    /* the values by slot, then the headers, the writes, the arguments */
    int nslot = ir_nslots(g);
    tj_tensor **byslot = calloc((size_t)nslot + 1, sizeof *byslot);
    if (!byslot) {
        rt_error("out of memory while tracing");
        goto out;
    }
    for (int k = 0; k < nout; k++)
        byslot[p ? p->oslot[k] : want[k]] = vals[k];
    tj_tensor *wval[64], **wv = tr->nwrites <= 64 ? wval : malloc(sizeof *wv * (size_t)tr->nwrites);
    if (!wv) {
        free(byslot);
        rt_error("out of memory while tracing");
        goto out;
    }
    for (int k = 0; k < tr->nwrites; k++)
        wv[k] = byslot[ir_slot(g, tr->writes[k].value->sym)];
    for (int k = 0; k < R->nhdr; k++) {
        tj_tensor *h = R->hdr[k];
        if (!h->sym || ir_node_is_input(h->sym) || !in_graph(g, h->sym) || is_arg(tr, h))
            continue;
        tj_tensor *v = byslot[ir_slot(g, h->sym)];
        if (v) {
            if (!p && grow((void **)&R->m, R->nm, &R->capm, sizeof *R->m) == 0)
                R->m[R->nm++] = (mat){h, R->nd, ir_slot(g, h->sym)};
            materialize(h, v);
        }
    }
    for (int k = 0; k < tr->nargs; k++)   /* the arguments' headers view the arguments */
        if (tr->args[k]->sym)
            materialize((tj_tensor *)tr->args[k], R->args[k]);
    rc = 0;
    for (int k = 0; k < tr->nwrites && rc == 0; k++) {
        fe_write *w = &tr->writes[k];
        tj_tensor *dst = w->target ? w->target : (tj_tensor *)R->args[w->arg];
        rc = rebase(tr, w->target ? w->target : tr->args[w->arg]);
        if (rc == 0)
            rc = keep_inputs(in, g->ninputs, dst);
        for (int j = 0; j < R->nd && rc == 0; j++)
            rc = keep_inputs(R->d[j].in, R->d[j].nin, dst);
        if (rc == 0)
            rc = rt_convert(dst, wv[k]);
        rt_bump_version(dst);
    }
    if (wv != wval)
        free(wv);
    free(byslot);
    if (rc != 0)
        goto out;
    /* keep this piece's trace until the call ends */
    if (grow((void **)&R->d, R->nd, &R->capd, sizeof *R->d) != 0) {
        rc = -1;
        goto out;
    }
    done *d = &R->d[R->nd++];
    *d = (done){g, p, in, g->ninputs, NULL, 0, final, ""};
    snprintf(d->brk, sizeof d->brk, "%s", brk);
    if (!p) {   /* the values written back and returned are read */
        int cap = 0;
        for (int k = 0; k < nneed; k++)
            if (add_slot(&d->slots, &d->nslots, &cap, want[k]) != 0)
                rc = -1;
    }
    in = NULL;
    tr->g = ir_graph_new(R->sp->name);
    if (!tr->g) {
        rt_error("out of memory while tracing");
        tr->failed = true;
        rc = -1;
    }
    for (int k = 0; k < tr->ncaps; k++)
        tj_release(tr->caps[k]);
    tr->ncaps = 0;
    tr->nops = 0;
    fe_trace_writes_free(tr);
    R->index++;
out:
    for (int k = 0; vals && k < nout; k++)
        tj_release(vals[k]);
    free(vals);
    free(want);
    if (in) {
        for (int k = 0; k < g->ninputs; k++)
            tj_release(in[k]);
        free(in);
    }
    return rc;
}

/* Header t (symbolic) of a finished piece that did not output it: that
 * piece runs again on the executor for every live header it left without a
 * value; the next call compiles it with them. 0 or -1. */
static int late(fe_trace *tr, tj_tensor *t)
{
    fe_segrun *R = tr->seg;
    done *d = NULL;
    for (int k = 0; k < R->nd && !d; k++)
        if (in_graph(R->d[k].g, t->sym))
            d = &R->d[k];
    if (!d) {
        rt_error("tracing: a tensor from an earlier trace was used (symbolic tensors do not "
                 "outlive the call that traced them)");
        return -1;
    }
    atomic_fetch_add(&R->sp->late, 1);
    ir_graph *g = d->g;
    int n = 0, cap = 0, *slots = NULL, cap2 = 0;
    for (int k = 0; k < R->nhdr; k++) {
        tj_tensor *h = R->hdr[k];
        if ((h == t || live(h)) && h->sym && !ir_node_is_input(h->sym) && in_graph(g, h->sym) &&
            add_slot(&slots, &n, &cap, ir_slot(g, h->sym)) != 0) {
            free(slots);
            return -1;
        }
    }
    ir_node **on = malloc((size_t)(n + 1) * sizeof *on);
    tj_tensor **vals = calloc((size_t)n + 1, sizeof *vals);
    int rc = on && vals ? 0 : -1;
    for (int k = 0; rc == 0 && k < n; k++)
        on[k] = slot_node(g, slots[k]);
    if (rc == 0 && (ir_graph_set_outputs(g, on, n) != 0 || run_executor(R->sp, g, d->in, vals) != 0))
        rc = -1;
    for (int k = 0; rc == 0 && k < R->nhdr; k++) {
        tj_tensor *h = R->hdr[k];
        for (int j = 0; h->sym && in_graph(g, h->sym) && j < n; j++)
            if (ir_slot(g, h->sym) == slots[j]) {
                materialize(h, vals[j]);
                break;
            }
    }
    for (int k = 0; rc == 0 && k < n; k++)
        if (add_slot(&d->slots, &d->nslots, &cap2, slots[k]) != 0)
            rc = -1;
    for (int k = 0; vals && k < n; k++)
        tj_release(vals[k]);
    free(vals);
    free(on);
    free(slots);
    if (rc != 0 && !rt_has_error())
        rt_error("out of memory while tracing");
    return rc;
}

/* ---- the hooks of trace.c ------------------------------------------------------------ */

int fe_seg_track(fe_trace *tr, tj_tensor *t, tj_tensor *parent)
{
    fe_segrun *R = tr->seg;
    if (R->nhdr == R->caphdr) {
        int nc = 2 * R->nhdr + 16;
        tj_tensor **h = realloc(R->hdr, sizeof *h * (size_t)nc);
        if (h)
            R->hdr = h;
        hview *v = h ? realloc(R->view, sizeof *v * (size_t)nc) : NULL;
        if (!v) {
            rt_error("out of memory while tracing");
            return -1;
        }
        R->view = v;
        R->caphdr = nc;
    }
    bool held = parent && !parent->sym;
    int p = parent ? hdr_index(R, parent) : -1;
    tj_tensor *base = p >= 0 && R->view[p].par ? R->view[p].base : parent;
    R->view[R->nhdr] = (hview){held ? tj_retain(parent) : parent, parent ? t->sym : NULL, base, held};
    R->hdr[R->nhdr++] = tj_retain(t);
    if (2 * R->nhdr > R->nhix)   /* at most half full */
        return hix_build(R, R->nhix ? 2 * R->nhix : 64);
    size_t i = hix_slot(R, t);
    while (R->hix[i] >= 0)
        i = (i + 1) & (size_t)(R->nhix - 1);
    R->hix[i] = R->nhdr - 1;
    return 0;
}

void fe_seg_used(fe_trace *tr, const tj_tensor *t)
{
    fe_segrun *R = tr->seg;
    for (int k = 0; k < R->nm; k++)
        if (R->m[k].t == t) {
            done *d = &R->d[R->m[k].d];
            int cap = d->nslots;   /* grows by doubling from here */
            add_slot(&d->slots, &d->nslots, &cap, R->m[k].slot);
            R->m[k].t = NULL;
        }
}

int fe_seg_values(fe_trace *tr, tj_tensor *t, const char *what)
{
    if (!t->sym && !fe_trace_written(tr, t))
        return 0;   /* its storage holds its values */
    if (t->sym && !in_graph(tr->g, t->sym))
        return late(tr, t);
    char brk[320], at[300];
    snprintf(brk, sizeof brk, "%s reads values%s", what, rt_callsite_suffix(at, sizeof at));
    if (flush(tr, brk, false, NULL, 0) != 0)   /* a concrete tensor: the piece's writes land */
        return -1;
    return t->sym ? late(tr, t) : 0;
}

tj_tensor *fe_seg_eager(fe_trace *tr, ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a)
{
    if (op == OP_scalar) {
        /* a wrapped scalar (the _s ops) is an input of the piece, not a
         * constant of it: a value from tj_item changes no body */
        fe_trace_pause(tr);
        tj_tensor *r = fe_apply(op, in, nin, a);
        fe_trace_resume(tr);
        return r;
    }
    char what[96];
    snprintf(what, sizeof what, "random op %s", ir_ops[op].name);
    bool split = false;
    for (int k = 0; k < nin; k++)
        if (in[k] && (in[k]->sym || fe_trace_written(tr, in[k]))) {   /* written: stale storage */
            split = true;
            if (fe_seg_values(tr, in[k], what) != 0)
                return NULL;
        }
    if (!split)
        atomic_fetch_add(&tr->seg->sp->eager_ops, 1);
    for (int k = 0; k < nin; k++)
        if (in[k])
            fe_seg_used(tr, in[k]);
    fe_trace_pause(tr);
    tj_tensor *r = fe_apply(op, in, nin, a);
    fe_trace_resume(tr);
    return r;
}

/* ---- writes into views ------------------------------------------------------------------ */

/* Eager aliasing follows the tensors, not the trace's values: one value can
 * stand for several tensors (a copy and a clone of the same input are one
 * node, as ir_graph_add shares equal nodes), and a flush gives each tensor
 * the value of its node, so such twins come out sharing a storage, and the
 * views of a tensor come out as values of their own. Harmless while nothing
 * writes in place; before a write runs on storage (eagerly, or written back
 * after a piece), rebase() makes them alias as in eager, from the views this
 * call recorded (fe_seg_track). */

/* Header h (eager_base(h) == base, base concrete) made again as the same
 * chain of views of base: a new tensor (refs 1, in no scope) sharing base's
 * storage, or base itself (retained). */
static tj_tensor *remake_view(const fe_segrun *R, tj_tensor *h, tj_tensor *base)
{
    if (h == base)
        return tj_retain(base);
    int k = hdr_index(R, h);
    tj_tensor *in = remake_view(R, R->view[k].par, base);
    if (!in)
        return NULL;
    const ir_node *n = R->view[k].vop;
    ir_attrs a;
    memcpy(a.a, n->attrs, sizeof(ir_attr) * (size_t)ir_ops[n->op].nattrs);
    tj_tensor *v = rt_eager(n->op, &in, 1, &a, &n->type);
    tj_release(in);
    return v;
}

/* Base (a tensor this call made) takes a storage of its own when a tensor
 * other than its views holds its storage (a twin, a view of a twin). */
static int own_storage(const fe_segrun *R, tj_tensor *base)
{
    int mine = 0;
    for (int k = 0; k < R->nhdr; k++)
        mine += R->hdr[k]->storage == base->storage && eager_base(R, R->hdr[k]) == base;
    if (atomic_load(&base->storage->refs) <= mine)
        return 0;
    ir_type ty;
    rt_type_of(base, &ty);
    tj_tensor *src = base, *c = rt_eager(OP_copy, &src, 1, NULL, &ty);
    if (!c)
        return -1;
    rt_tensor_rebind(base, c);
    tj_release(c);
    return 0;
}

static int rebase(fe_trace *tr, tj_tensor *dst)
{
    fe_segrun *R = tr->seg;
    tj_tensor *base = eager_base(R, dst);
    bool made = hdr_index(R, base) >= 0 && !is_arg(tr, base);   /* a value of this call */
    if (made && base->sym && late(tr, base) != 0)
        return -1;
    if (base->sym) {
        rt_error("copy_: a write into a view whose base this call did not trace cannot run in a "
                 "function split at graph breaks (run it eagerly)");
        return -1;
    }
    if (made && own_storage(R, base) != 0)
        return -1;
    for (int k = 0; k < R->nhdr; k++) {
        tj_tensor *h = R->hdr[k];
        if (h == base || !R->view[k].par || R->view[k].base != base || (h != dst && !live(h)))
            continue;
        tj_tensor *v = remake_view(R, h, base);
        if (!v)
            return -1;
        rt_tensor_rebind(h, v);
        tj_release(v);
    }
    return 0;
}

bool fe_seg_shares_storage(fe_trace *tr, tj_tensor *base)
{
    fe_segrun *R = tr->seg;
    if (eager_base(R, base) != base)
        return true;
    for (int k = 0; k < R->nhdr; k++)
        if (R->view[k].par && R->view[k].base == base && R->hdr[k] != base && live(R->hdr[k]))
            return true;
    return false;
}

int fe_seg_view_write(fe_trace *tr, tj_tensor *dst, tj_tensor *value)
{
    /* a break: the piece so far runs, its values become concrete */
    char brk[320], at[300];
    snprintf(brk, sizeof brk, "tj_copy_ (or an in-place op) into a view%s", rt_callsite_suffix(at, sizeof at));
    if (flush(tr, brk, false, NULL, 0) != 0 || (value->sym && late(tr, value) != 0) || rebase(tr, dst) != 0)
        return -1;
    fe_seg_used(tr, eager_base(tr->seg, dst));
    fe_seg_used(tr, value);
    /* a late recompute of an earlier piece reads dst's storage as it was */
    fe_segrun *R = tr->seg;
    for (int j = 0; j < R->nd; j++)
        if (keep_inputs(R->d[j].in, R->d[j].nin, dst) != 0)
            return -1;
    fe_trace_pause(tr);
    int rc = tj_copy_(dst, value);
    fe_trace_resume(tr);
    return rc;
}

/* ---- a call ------------------------------------------------------------------------- */

/* Moves this call's new and grown pieces into sp. */
static void keep_pieces(fe_segrun *R)
{
    fe_split *sp = R->sp;
    for (int k = 0; k < R->nd; k++) {
        done *d = &R->d[k];
        if (d->used && !d->nslots)
            continue;
        if (!d->used && d->g->nnodes == 0 && d->nslots == 0)
            continue;   /* nothing ran: no piece */
        int n = 0;
        int *slots = malloc(sizeof *slots * (size_t)((d->used ? d->used->nout : 0) + d->nslots + 1));
        ir_node **on = malloc(sizeof *on * (size_t)((d->used ? d->used->nout : 0) + d->nslots + 1));
        piece *p = calloc(1, sizeof *p);
        if (!slots || !on || !p)
            goto skip;
        for (int j = 0; d->used && j < d->used->nout; j++)
            slots[n++] = d->used->oslot[j];
        for (int j = 0; j < d->nslots; j++) {
            bool has = false;
            for (int i = 0; i < n && !has; i++)
                has = slots[i] == d->slots[j];
            if (!has)
                slots[n++] = d->slots[j];
        }
        for (int j = 0; j < n; j++)
            on[j] = slot_node(d->g, slots[j]);
        if (n && ir_graph_set_outputs(d->g, on, n) != 0)
            goto skip;
        p->g = d->g;
        p->index = k;
        p->final = d->final;
        p->oslot = slots;
        p->nout = n;
        slots = NULL;
        snprintf(p->brk, sizeof p->brk, "%s", d->brk);
        if (n) {
            char name[80];
            snprintf(name, sizeof name, "%s_p%d", sp->name, k);
            p->last_use = sc_exec_last_use(d->g);
            p->plans = sc_plans_new(d->g, name);
            if (!p->last_use || !p->plans)
                goto skip;
        }
        pthread_mutex_lock(&sp->lock);
        if (sp->np < SPLIT_MAX_PIECES && grow((void **)&sp->p, sp->np, &sp->cap, sizeof *sp->p) == 0) {
            for (int j = 0; j < sp->np; j++)
                if (sp->p[j]->index == k && sp->p[j]->final == p->final &&
                    ir_graph_same_body(sp->p[j]->g, p->g))
                    atomic_store(&sp->p[j]->retired, true);
            sp->p[sp->np++] = p;
            d->g = NULL;   /* the piece owns it now */
            p = NULL;
        }
        pthread_mutex_unlock(&sp->lock);
    skip:
        if (p) {
            p->g = NULL;
            piece_free(p);
        }
        free(slots);
        free(on);
    }
}

static void run_free(fe_segrun *R)
{
    for (int k = 0; k < R->nd; k++) {
        done *d = &R->d[k];
        ir_graph_free(d->g);
        for (int i = 0; d->in && i < d->nin; i++)
            tj_release(d->in[i]);
        free(d->in);
        free(d->slots);
    }
    free(R->d);
    for (int k = 0; k < R->nhdr; k++) {
        if (R->view[k].held)
            tj_release(R->view[k].par);
        tj_release(R->hdr[k]);
    }
    free(R->hdr);
    free(R->view);
    free(R->hix);
    free(R->m);
}

int fe_split_call(fe_split *sp, tj_model_fn fn, tj_model_multi_fn mfn, void *ctx,
                  tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    fe_trace *tr = fe_trace_begin(sp->name);
    if (!tr) {
        rt_error("out of memory tracing %s", sp->name);
        return -1;
    }
    fe_segrun R = {.sp = sp, .args = args, .nargs = nargs};
    tr->seg = &R;
    tj_tensor *sargs[64];
    tr->args = sargs;
    tr->examples = args;
    tr->nargs = nargs;
    tj_scope_begin();
    int n = 0;
    for (int k = 0; k < nargs && n == 0; k++) {
        ir_type ex;
        rt_type_of(args[k], &ex);
        char name[16];
        snprintf(name, sizeof name, "x%d", k);
        ir_node *in = ir_graph_input(tr->g, name, &ex, false);
        n = in && (sargs[k] = fe_trace_arg(tr, in, &ex, args[k])) && fe_seg_track(tr, sargs[k], NULL) == 0 ? 0 : -1;
    }
    tj_tensor *res[64];
    if (n == 0)
        n = fe_run_model(fn, mfn, ctx, sp->name, sargs, nargs, res, max < 64 ? max : 64);
    if (n >= 0 && !tr->failed) {
        /* the results: symbolic ones of earlier pieces first get their values */
        for (int k = 0; k < n && n >= 0; k++)
            if (res[k]->sym && !in_graph(tr->g, res[k]->sym) && late(tr, res[k]) != 0)
                n = -1;
        if (n >= 0 && flush(tr, "return", true, res, n) != 0)
            n = -1;
        for (int k = 0; k < n; k++) {
            fe_seg_used(tr, res[k]);
            tj_retain(res[k]);
        }
    } else if (n >= 0) {
        n = -1;
    }
    tj_scope_end();
    /* what the model kept past the call must not stay symbolic */
    for (int k = 0; n >= 0 && k < R.nhdr; k++)
        if (R.hdr[k]->sym && live(R.hdr[k]) && late(tr, R.hdr[k]) != 0)
            n = -1;
    if (n >= 0)
        keep_pieces(&R);
    for (int k = 0; k < n; k++)
        outs[k] = rt_own(res[k]);
    run_free(&R);
    tr->seg = NULL;
    fe_trace_end(tr);
    return n;
}

/* ---- explain and stats ------------------------------------------------------------- */

void fe_split_stats(fe_split *sp, fe_split_info *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&sp->lock);
    for (int k = 0; k < sp->np; k++) {
        piece *p = sp->p[k];
        if (atomic_load(&p->retired))
            continue;
        out->graphs++;
        out->breaks += !p->final;
        out->runs += atomic_load(&p->runs);
        sc_plan_info pi = {0};
        if (p->plans)
            sc_plans_info(p->plans, &pi);
        out->kernels += pi.kernels;
        out->compiled += pi.compiled && pi.kernels > 0;
    }
    pthread_mutex_unlock(&sp->lock);
    out->executor_runs = atomic_load(&sp->executor_runs);
    out->late = atomic_load(&sp->late);
    out->eager_ops = atomic_load(&sp->eager_ops);
}

void fe_split_explain(fe_split *sp, FILE *f)
{
    fe_split_info si;
    fe_split_stats(sp, &si);
    fprintf(f, "    split at graph breaks: %d compiled piece%s (%d end at a break), %lu piece "
               "runs on the executor (first runs, %lu late values), %lu random ops run eagerly\n",
            si.graphs, si.graphs == 1 ? "" : "s", si.breaks, si.executor_runs, si.late, si.eager_ops);
    pthread_mutex_lock(&sp->lock);
    for (int k = 0; k < sp->np; k++) {
        piece *p = sp->p[k];
        if (atomic_load(&p->retired))
            continue;
        sc_plan_info pi = {0};
        if (p->plans)
            sc_plans_info(p->plans, &pi);
        fprintf(f, "    piece %d (graph %d of a call): %d nodes, %d inputs, %d outputs, %lu runs; ",
                k + 1, p->index + 1, p->g->nnodes, p->g->ninputs, p->nout,
                (unsigned long)atomic_load(&p->runs));
        if (pi.compiled)
            fprintf(f, "%d kernel%s, %d eager call%s (built in %.1f ms)", pi.kernels,
                    pi.kernels == 1 ? "" : "s", pi.eager_calls, pi.eager_calls == 1 ? "" : "s",
                    pi.compile_ms);
        else
            fprintf(f, "graph executor%s%s", pi.why[0] ? ": " : "", pi.why);
        if (p->final)
            fprintf(f, "; ends at the return\n");
        else
            fprintf(f, "; then graph break: %s, run eagerly\n", p->brk);
    }
    pthread_mutex_unlock(&sp->lock);
}
