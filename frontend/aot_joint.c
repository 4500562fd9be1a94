/* aot_joint.c - the partitioned backward of a compiled call: the forward plan
 * saves what the backward reads, the backward plan reads it instead of
 * running the forward again (AOTAutograd's joint graph and partitioner).
 *
 *   first call in grad mode of a graph entry:
 *     trace the joint graph: the model on symbolic arguments with grad mode
 *       on, then one backward from every result that requires grad, each
 *       seeded with a tangent input of its own (%tangent0, %tangent1, ...:
 *       fe_ag_backward_roots); every leaf weight's gradient starts as none
 *       inside the trace, so the graph returns the gradients themselves
 *       (accumulated into .grad after each backward)
 *     passes/partition.c splits it: forward (results, then saved values) and
 *       backward (joint inputs, tangents, saved values -> gradients)
 *     both are compiled (sched/), TJIT_DUMP=joint,forward,backward print them
 *   every call in grad mode: the forward plan; one tape node, whose outputs
 *     are the results on the tape, holds the arguments and the saved values
 *     (retained, versions checked) and watches the captured weights
 *   tj_backward reaching any of those results: the backward plan, once, with
 *     the gradients of all of them (where some got none: the plan pruned of
 *     their tangents, passes/bwd_prune.c, one per pattern; a leaf that only
 *     such results reach on the traced tape gets no gradient, as eagerly),
 *     then each gradient added into its weight's .grad
 *
 * A fe_joint belongs to one graph entry of compile.c (the entry's captures).
 * A symbolic entry's joint is traced on its symbols, and its plans serve
 * every shape the entry's guards pass (each call's symbols come from its
 * arguments: the tangents' shapes, the draws' layout); where a gradient
 * rule reads a symbolic size, the joint is traced static and the entry holds
 * one per argument shape (fe_joint_fits picks it). Tape nodes hold it too
 * (it outlives a freed handle). Results that are an argument or a weight themselves are not on
 * the tape (the call returns that tensor). Where the joint cannot be used
 * (a graph break or a value read in the trace, a weight that requires grad
 * without being a leaf), the caller keeps the backward of aot.c (saves the
 * arguments, recomputes the forward) and explain says why.
 *
 * The model's writes to captured tensors (running statistics) are forward
 * outputs after the results, written back by each call; the backward, run
 * after that, must read none of them (check_writes), and the tape node does
 * not check their versions. A model with writes that cannot take a joint
 * runs eagerly (compile.c): aot.c's backward would write again.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dump.h"
#include "../passes/partition.h"
#include "../sched/exec.h"
#include "../sched/sched.h"
#include "autograd.h"
#include "trace.h"

#define JOINT_MAX 64
#define JOINT_SYMS (JOINT_MAX * TJ_MAX_DIMS)
#define JOINT_SUBS 4   /* backward variants kept for results no gradient reached */

/* The backward for a backward that reached only some results on the tape:
 * bwd pruned of the others' tangents (passes/bwd_prune.c). */
typedef struct bwd_variant {
    uint64_t reached;
    ir_graph *g;
    sc_plan_set *plans;
    int *last;
} bwd_variant;

/* Where a joint input's tensor comes from. */
typedef enum { SRC_ARG, SRC_TANGENT, SRC_CAP, SRC_CONST } src_kind;
typedef struct src {
    src_kind kind;
    int idx;              /* ARG: the argument; CAP: the entry's capture */
    tj_tensor *held;      /* CONST: a constant the model made (retained) */
} src;

struct fe_joint {
    atomic_int refs;
    char name[96];
    int nargs, nres;
    int fwd_nodes;        /* the joint's op nodes the forward made (the backward's follow) */
    int ntape;            /* results on the tape (each its tangent input, in order) ... */
    int tape[JOINT_MAX];  /* ... these */
    uint64_t *gdep;       /* per backward output: bit k, result tape[k]'s backward reaches
                             its leaf (one that only results no gradient reached reach gets
                             none, as eagerly) */
    int nwv;              /* the model's writes to captures (running statistics): forward
                             outputs after the results, written back by each call ... */
    int *wcap;            /* ... into these captures (the backward reads none of them) */
    fe_draws draws;       /* the forward's random draws (dropout): each call's own; the
                             backward draws none (what it reads of them is saved) */
    ir_type *argt;        /* the arguments' types it was traced for (with symbols) */
    int nsyms;            /* symbols: the entry's (0: traced static) ... */
    int64_t *symmin;      /* ... the least size of each its graph allows ... */
    int64_t *symval;      /* ... and the traced one (saved bytes are counted at it) */
    char *static_why;     /* a symbolic entry's joint traced static: why */
    uint64_t argmask;     /* bit i: argument i requires grad (it gets one) */
    int nargg;            /* argument gradients: backward outputs ngrads.. */
    int argg[JOINT_MAX];  /* ... for these arguments */
    ir_graph *fwd, *bwd;
    sc_plan_set *fplans, *bplans;
    int *flast, *blast;
    int nin;              /* the joint's inputs, each a src */
    src *in;
    int ngrads;
    int *leaf;            /* per backward output: the capture whose .grad it adds to */
    ps_partition part;    /* report and counts (its graphs moved to fwd, bwd) */
    int ncontract;        /* matmul/conv2d nodes of the backward graph */
    atomic_ulong calls;   /* backward runs */
    pthread_mutex_t mu;   /* guards sub */
    bwd_variant sub[JOINT_SUBS];
    int nsub;
};

static const ir_dump_stage stages[] = {
    {"joint", NULL, 2, "tir"},      /* the traced forward + backward of a compiled call */
    {"forward", NULL, 2, "tir"},    /* its forward part: results, then saved values */
    {"backward", NULL, 2, "tir"},   /* its backward part: tangent and saved values in */
};

__attribute__((constructor)) static void register_stages(void)
{
    ir_dump_register(stages, (int)(sizeof stages / sizeof *stages), sizeof *stages);
}

static void dump(const char *stage, const char *name, const ir_graph *g)
{
    if (!ir_dump_enabled(NULL, stage))
        return;
    char *text = ir_print(g, NULL);
    if (text)
        ir_dump_text(stage, name, text);
    free(text);
}

static void variant_free(bwd_variant *v)
{
    sc_plans_free(v->plans);
    ir_graph_free(v->g);
    free(v->last);
    *v = (bwd_variant){0};
}

void fe_joint_release(fe_joint *j)
{
    if (!j || atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int i = 0; j->in && i < j->nin; i++)
        tj_release(j->in[i].held);
    free(j->in);
    free(j->argt);
    free(j->symmin);
    free(j->static_why);
    free(j->leaf);
    free(j->wcap);
    free(j->gdep);
    fe_draws_free(&j->draws);
    free(j->flast);
    free(j->blast);
    sc_plans_free(j->fplans);
    sc_plans_free(j->bplans);
    for (int i = 0; i < j->nsub; i++)
        variant_free(&j->sub[i]);
    pthread_mutex_destroy(&j->mu);
    ir_graph_free(j->fwd);
    ir_graph_free(j->bwd);
    ps_partition_free(&j->part);
    free(j);
}

static int index_of(tj_tensor *const *list, int n, const tj_tensor *t)
{
    for (int i = 0; i < n; i++)
        if (list[i] == t)
            return i;
    return -1;
}

/* The capture t is, or a header of (the tape saves detached headers of the
 * weights a VJP reads: same storage and layout); -1 when none. */
static int capture_of(tj_tensor *const *caps, int n, const tj_tensor *t)
{
    int at = index_of(caps, n, t);
    for (int i = 0; at < 0 && i < n; i++) {
        const tj_tensor *c = caps[i];
        if (c->storage == t->storage && c->offset == t->offset && c->ndim == t->ndim &&
            c->dtype == t->dtype &&
            !memcmp(c->shape, t->shape, sizeof c->shape[0] * (size_t)t->ndim) &&
            !memcmp(c->strides, t->strides, sizeof c->strides[0] * (size_t)t->ndim))
            at = i;
    }
    return at;
}

/* Where each input of the traced joint graph comes from; 0, or -1 with why. */
static int map_inputs(fe_joint *j, fe_trace *tr, tj_tensor *const *caps, int ncaps, char *why, size_t n)
{
    ir_graph *g = tr->g;
    if (!(j->in = calloc((size_t)g->ninputs + 1, sizeof *j->in))) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    j->nin = g->ninputs;
    for (int i = 0, c = 0, tangents = 0; i < g->ninputs; i++) {
        ir_node *x = g->inputs[i];
        if (i < j->nargs) {
            j->in[i] = (src){SRC_ARG, i, NULL};
            continue;
        }
        if (ps_is_tangent(x)) {   /* in the order they were made: the tape's */
            j->in[i] = (src){SRC_TANGENT, tangents++, NULL};
            continue;
        }
        /* params are the trace's captures in order (cap_nodes[c] is the
         * capture's value now: a write rebinds it) */
        if (!x->param || c == tr->ncaps) {
            snprintf(why, n, "input %%%s of the joint graph is no capture", x->name);
            return -1;
        }
        tj_tensor *t = tr->caps[c++];
        int at = capture_of(caps, ncaps, t);
        if (at >= 0)
            j->in[i] = (src){SRC_CAP, at, NULL};
        else if (t->made_tracing)
            j->in[i] = (src){SRC_CONST, 0, tj_retain(t)};
        else {
            snprintf(why, n, "the backward reads a tensor the forward does not capture");
            return -1;
        }
    }
    return 0;
}

/* The joint graph's outputs: the results, then each weight's gradient. */
static int set_outputs(fe_joint *j, fe_trace *tr, tj_tensor **res, tj_tensor *const *caps, int ncaps,
                       char *why, size_t n)
{
    ir_node *outs[JOINT_MAX * 4];
    tj_tensor *leaves[JOINT_MAX * 4];   /* per gradient output: its leaf */
    int no = 0;
    j->leaf = calloc((size_t)tr->nwrites + 1, sizeof *j->leaf);
    j->wcap = calloc((size_t)tr->nwrites + 1, sizeof *j->wcap);
    if (!j->leaf || !j->wcap) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    for (int r = 0; r < j->nres; r++)
        if (!(outs[no++] = fe_trace_value(tr, res[r]))) {
            snprintf(why, n, "result %d is not traced", r);
            return -1;
        }
    for (int w = 0; w < tr->nwrites; w++) {   /* writes: forward outputs after the results */
        const fe_write *wr = &tr->writes[w];
        if (wr->kind != FE_WRITE_DATA)
            continue;
        int at = wr->target ? index_of(caps, ncaps, wr->target) : -1;
        if (!wr->target || at < 0 || fe_ag_requires_grad(wr->target) || no >= JOINT_MAX * 2) {
            snprintf(why, n, "the model writes to %s",
                     !wr->target ? "an argument"
                     : at < 0    ? "a tensor it does not capture"
                                 : "a tensor that requires grad");
            return -1;
        }
        j->wcap[j->nwv++] = at;
        if (!(outs[no++] = fe_trace_value(tr, wr->value))) {
            snprintf(why, n, "a write is not traced");
            return -1;
        }
    }
    for (int w = 0; w < tr->nwrites; w++) {
        const fe_write *wr = &tr->writes[w];
        if (wr->kind == FE_WRITE_DATA)
            continue;
        if (wr->kind == FE_WRITE_GRAD_NONE)
            continue;   /* a weight the result does not reach */
        int at = index_of(caps, ncaps, wr->target);
        if (at < 0 || no >= JOINT_MAX * 3) {
            snprintf(why, n, "a gradient goes to a tensor the forward does not capture");
            return -1;
        }
        leaves[j->ngrads] = wr->target;
        j->leaf[j->ngrads++] = at;
        if (!(outs[no++] = fe_trace_value(tr, wr->value))) {
            snprintf(why, n, "a gradient is not traced");
            return -1;
        }
    }
    for (int i = 0; i < j->nargs; i++) {   /* the arguments' that require grad */
        tj_tensor *g = j->argmask >> i & 1 ? tj_grad(tr->args[i]) : NULL;
        if (!g)
            continue;   /* the result does not reach it: none, as eagerly */
        if (no >= JOINT_MAX * 4) {
            snprintf(why, n, "more than %d outputs", JOINT_MAX * 4);
            return -1;
        }
        if (!(outs[no++] = fe_trace_value(tr, g))) {
            snprintf(why, n, "an argument's gradient is not traced");
            return -1;
        }
        leaves[j->ngrads + j->nargg] = tr->args[i];
        j->argg[j->nargg++] = i;
    }
    if (j->ngrads + j->nargg == 0) {
        snprintf(why, n, "no weight or argument gets a gradient");
        return -1;
    }
    tj_tensor *roots[JOINT_MAX];
    for (int k = 0; k < j->ntape; k++)
        roots[k] = res[j->tape[k]];
    if (!(j->gdep = calloc((size_t)(j->ngrads + j->nargg), sizeof *j->gdep)) ||
        fe_ag_reach(roots, j->ntape, leaves, j->ngrads + j->nargg, j->gdep) != 0) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    if (ir_graph_set_outputs(tr->g, outs, no) != 0 || ir_verify(tr->g, why, n) != 0) {
        if (!why[0])
            snprintf(why, n, "%s", ir_graph_error(tr->g));
        return -1;
    }
    return 0;
}

/* The results on the tape: those that require grad in the trace (float),
 * but for leaves (an argument or a weight returned as it is: the call
 * returns that tensor, whose gradient is its own); 0 or -1 with why. */
static int tape_results(fe_joint *j, tj_tensor **res, char *why, size_t n)
{
    for (int r = 0; r < j->nres; r++)
        if (ir_dtype_is_float(res[r]->dtype) && fe_ag_requires_grad(res[r]) && !fe_ag_is_leaf(res[r]))
            j->tape[j->ntape++] = r;
    if (!j->ntape) {
        snprintf(why, n, "no result requires grad in the joint trace");
        return -1;
    }
    return 0;
}

/* Why the trace tr failed: its graph break, the op that could not follow its
 * symbols, or what. */
static const char *trace_failure(const fe_trace *tr, const char *what)
{
    return tr->brk[0] ? tr->brk : tr->dyn_unsupported ? tr->dyn_why : what;
}

/* Traces the joint graph of the results on the tape into tr, the arguments
 * of example types ext (the tensors examples, or NULL: contiguous); with sy
 * on its symbols (their sizes in ext). 0 or -1 with why. */
static int trace_joint(fe_joint *j, fe_trace *tr, tj_model_fn fn, tj_model_multi_fn mfn, void *ctx,
                       const ir_type *ext, tj_tensor *const *examples, tj_tensor *const *caps, int ncaps,
                       const fe_joint_syms *sy, char *why, size_t n)
{
    tj_tensor *sargs[JOINT_MAX], *res[JOINT_MAX];
    if (sy) {
        tr->symval = sy->symval;
        tr->nsyms = sy->nsyms;
    }
    tr->args = sargs;
    tr->examples = examples;
    tr->nargs = j->nargs;
    if (!(j->argt = calloc((size_t)j->nargs + 1, sizeof *j->argt))) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    for (int i = 0; i < j->nargs; i++) {
        j->argt[i] = sy ? sy->argt[i] : ext[i];   /* the graph's: with the symbols */
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        ir_node *x = ir_graph_input(tr->g, name, &j->argt[i], false);
        if (!x || !(sargs[i] = fe_trace_arg(tr, x, &ext[i], examples ? examples[i] : NULL)) ||
            (j->argmask >> i & 1 && tj_requires_grad(sargs[i], true) != 0)) {
            snprintf(why, n, "out of memory");
            return -1;
        }
    }
    j->nres = fe_run_model(fn, mfn, ctx, j->name, sargs, j->nargs, res, JOINT_MAX);
    if (j->nres < 0 || tr->brk[0] || tr->failed) {
        snprintf(why, n, "%s", trace_failure(tr, "the model failed in the joint trace"));
        return -1;
    }
    if (tape_results(j, res, why, n) != 0)
        return -1;
    /* every leaf weight's gradient starts as none: the graph's gradients
     * are the call's own, added to .grad after each backward */
    for (int c = 0; c < tr->ncaps; c++) {
        if (!fe_ag_requires_grad(tr->caps[c]))
            continue;
        if (!fe_ag_is_leaf(tr->caps[c])) {
            snprintf(why, n, "a captured tensor requires grad and is not a leaf");
            return -1;
        }
        if (fe_trace_set_grad(tr, tr->caps[c], NULL) != 0)
            return -1;
    }
    tj_tensor *roots[JOINT_MAX], *seeds[JOINT_MAX];
    for (int k = 0; k < j->ntape; k++) {   /* one tangent per result on the tape */
        ir_type t, ex;
        char name[24];
        roots[k] = res[j->tape[k]];
        fe_trace_type(roots[k], &t);
        rt_type_of(roots[k], &ex);
        snprintf(name, sizeof name, j->ntape == 1 ? "tangent" : "tangent%d", k);
        ir_node *tn = ir_graph_input(tr->g, name, &t, false);
        if (!tn || !(seeds[k] = fe_trace_arg(tr, tn, &ex, NULL))) {
            snprintf(why, n, "out of memory");
            return -1;
        }
    }
    j->fwd_nodes = tr->g->nnodes;
    if (fe_ag_backward_roots(roots, seeds, j->ntape) != 0 || tr->brk[0] || tr->failed) {
        snprintf(why, n, "%s", trace_failure(tr, "the backward failed in the joint trace"));
        return -1;
    }
    if (tr->nvreads || tr->nguards) {
        snprintf(why, n, "the trace read a tensor's values or a gradient");
        return -1;
    }
    if (tr->dyn_unsupported) {   /* an op kept going on the example's sizes */
        snprintf(why, n, "%s", tr->dyn_why);
        return -1;
    }
    /* the outputs first: a result that is a weight itself captures it there */
    if (set_outputs(j, tr, res, caps, ncaps, why, n) != 0)
        return -1;
    return map_inputs(j, tr, caps, ncaps, why, n);
}

/* Splits the traced joint graph g and builds the two plans; 0 or -1. */
static int split(fe_joint *j, const fe_trace *tr, const int64_t *sy_val, char *why, size_t n)
{
    const ir_graph *g = tr->g;
    dump("joint", j->name, g);
    int *regions = fe_trace_checkpoint_regions(tr);   /* tj_checkpoint's nodes */
    if (tr->nckpt && !regions) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    for (int k = j->fwd_nodes; regions && k < g->nnodes; k++)
        regions[k] = -1;   /* the backward's: no reader outside a checkpoint */
    int rc = ps_partition_joint(g, j->nres + j->nwv, j->nsyms ? sy_val : NULL, regions, &j->part, why, n);
    free(regions);
    if (rc != 0)
        return -1;
    j->fwd = j->part.fwd;
    j->bwd = j->part.bwd;
    j->part.fwd = j->part.bwd = NULL;
    dump("forward", j->fwd->name, j->fwd);
    dump("backward", j->bwd->name, j->bwd);
    for (int i = 0; i < j->bwd->nnodes; i++)
        j->ncontract += ir_ops[j->bwd->nodes[i]->op].kind == IR_CONTRACT;
    j->flast = sc_exec_last_use(j->fwd);
    j->blast = sc_exec_last_use(j->bwd);
    j->fplans = sc_plans_new(j->fwd, j->fwd->name);
    j->bplans = sc_plans_new(j->bwd, j->bwd->name);
    if (!j->flast || !j->blast) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    return 0;
}

/* Whether g reads x: an operand of one of its nodes, or an output. */
static bool graph_reads(const ir_graph *g, const ir_node *x)
{
    for (int i = 0; i < g->nnodes; i++)
        for (int a = 0; a < g->nodes[i]->nin; a++)
            if (g->nodes[i]->in[a] == x)
                return true;
    for (int o = 0; o < g->noutputs; o++)
        if (g->outputs[o] == x)
            return true;
    return false;
}

/* The backward runs after the call wrote back: it must read no capture the
 * forward writes, nor one sharing its storage (it would see the new values);
 * 0 or -1 with why. */
static int check_writes(const fe_joint *j, tj_tensor *const *caps, char *why, size_t n)
{
    for (int i = 0; j->nwv && i < j->nin; i++) {
        if (j->in[i].kind != SRC_CAP || !graph_reads(j->bwd, j->bwd->inputs[i]))
            continue;
        for (int w = 0; w < j->nwv; w++)
            if (caps[j->in[i].idx]->storage == caps[j->wcap[w]]->storage) {
                snprintf(why, n, "the backward reads a tensor the model writes");
                return -1;
            }
    }
    return 0;
}

/* The backward runs outside the forward's call: it must draw nothing (the
 * partition saves random values, dropout's mask among them); 0 or -1 with why. */
static int check_draws(const fe_joint *j, char *why, size_t n)
{
    for (int i = 0; j->draws.n && i < j->bwd->nnodes; i++) {
        ir_op op = j->bwd->nodes[i]->op;
        if (ir_op_draws(op)) {
            snprintf(why, n, "the backward draws random numbers (%s)", ir_ops[op].name);
            return -1;
        }
    }
    return 0;
}

/* A joint to trace into, of nsyms symbols (their least and traced sizes
 * to fill in); NULL when out of memory. */
static fe_joint *joint_alloc(const char *name, int nargs, uint64_t argmask, int nsyms)
{
    fe_joint *j = calloc(1, sizeof *j);
    if (!j || (nsyms && !(j->symmin = malloc(sizeof *j->symmin * (2 * (size_t)nsyms))))) {
        free(j);
        return NULL;
    }
    atomic_init(&j->refs, 1);
    pthread_mutex_init(&j->mu, NULL);
    snprintf(j->name, sizeof j->name, "%s", name);
    j->nargs = nargs;
    j->argmask = argmask;
    j->nsyms = nsyms;
    j->symval = nsyms ? j->symmin + nsyms : NULL;
    return j;
}

/* Whether the constants two traces of a joint made hold the same values. */
static bool same_constants(const fe_joint *a, const fe_joint *b)
{
    for (int i = 0; i < a->nin; i++) {
        tj_tensor *x = a->in[i].held, *y = b->in[i].held;
        if (!x != !y)
            return false;
        if (!x)
            continue;
        ir_type tx, ty;
        rt_type_of(x, &tx);
        rt_type_of(y, &ty);
        if (!ir_type_equal(&tx, &ty) || !rt_is_contiguous(x) || !rt_is_contiguous(y) ||
            memcmp(tj_data(x), tj_data(y), (size_t)rt_numel(x) * tj_dtype_size(x->dtype)))
            return false;
    }
    return true;
}

/* A symbolic joint's graph (text: ir_print of it, j its inputs) holds at
 * every size its guards pass only if no rule computed with the example's
 * sizes (the size reads were not recorded: tr->sizes_checked). It is traced
 * again with every symbol at another size, of the other parity (2v+1 or
 * 2v): both graphs must print the same and make the same constants. 0, or
 * -1 with why. */
static int same_at_other_sizes(const fe_joint *j, const char *text, tj_model_fn fn, tj_model_multi_fn mfn,
                               void *ctx, tj_tensor *const *caps, int ncaps, const fe_joint_syms *sy,
                               char *why, size_t n)
{
    int64_t sv[JOINT_SYMS];
    ir_type ext[JOINT_MAX];
    for (int k = 0; k < sy->nsyms; k++)
        sv[k] = sy->symval[k] & 1 ? 2 * sy->symval[k] : 2 * sy->symval[k] + 1;
    for (int i = 0; i < j->nargs; i++) {
        ext[i] = sy->argt[i];
        for (int d = 0; d < ext[i].ndim; d++)
            ext[i].shape[d] = ir_dim_at(ext[i].shape[d], sv);
    }
    fe_joint_syms other = {sy->argt, sv, sy->symmin, sy->nsyms};
    fe_joint *j2 = joint_alloc(j->name, j->nargs, j->argmask, 0);
    fe_trace *tr = j2 ? fe_trace_begin(j->name) : NULL;
    if (!tr) {
        fe_joint_release(j2);
        snprintf(why, n, "out of memory");
        return -1;
    }
    tr->sizes_checked = true;
    tj_scope_begin();
    int rc = trace_joint(j2, tr, fn, mfn, ctx, ext, NULL, caps, ncaps, &other, why, n);
    tj_scope_end();
    char *text2 = rc == 0 ? ir_print(tr->g, NULL) : NULL;
    fe_trace_end(tr);
    if (rc == 0 && (!text2 || strcmp(text, text2) != 0 || j2->nin != j->nin || !same_constants(j, j2))) {
        snprintf(why, n, "a gradient rule or the model computes with the sizes of a symbolic dim "
                         "(the joint graph differs at other sizes)");
        rc = -1;
    }
    free(text2);
    fe_joint_release(j2);
    return rc;
}

/* One joint: on the symbols of sy, or static (sy NULL). */
static fe_joint *joint_make(tj_model_fn fn, tj_model_multi_fn mfn, void *ctx, const char *name,
                            uint64_t argmask, tj_tensor *const *args, int nargs, tj_tensor *const *caps,
                            int ncaps, const fe_joint_syms *sy, char *why, size_t n)
{
    why[0] = '\0';
    fe_joint *j = joint_alloc(name, nargs, argmask, sy ? sy->nsyms : 0);
    if (!j) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    if (sy) {
        memcpy(j->symmin, sy->symmin, sizeof *j->symmin * (size_t)sy->nsyms);
        memcpy(j->symval, sy->symval, sizeof *j->symval * (size_t)sy->nsyms);
    }
    fe_trace *tr = fe_trace_begin(name);
    ir_type ext[JOINT_MAX];   /* the arguments' */
    for (int i = 0; i < nargs; i++)
        rt_type_of(args[i], &ext[i]);
    if (!tr) {
        snprintf(why, n, "cannot trace (out of memory)");
        fe_joint_release(j);
        return NULL;
    }
    tr->sizes_checked = sy != NULL;
    tj_scope_begin();
    int rc = trace_joint(j, tr, fn, mfn, ctx, ext, args, caps, ncaps, sy, why, n);
    tj_scope_end();
    char *text = NULL;   /* a symbolic joint's, to check at other sizes */
    if (rc == 0 && sy) {   /* the backward's slices and offsets may need more */
        fe_graph_symbol_mins(tr->g, j->symmin, j->nsyms);
        if (!(text = ir_print(tr->g, NULL))) {
            snprintf(why, n, "out of memory");
            rc = -1;
        }
    }
    if (rc == 0)
        rc = split(j, tr, sy ? sy->symval : NULL, why, n);
    if (rc == 0)
        rc = check_writes(j, caps, why, n);
    j->draws = tr->draws;   /* the forward's, in trace order */
    tr->draws = (fe_draws){0};
    if (rc == 0)
        rc = check_draws(j, why, n);
    fe_trace_end(tr);
    if (rc == 0 && sy)
        rc = same_at_other_sizes(j, text, fn, mfn, ctx, caps, ncaps, sy, why, n);
    free(text);
    tj_clear_error();   /* the trace's messages are not the caller's */
    if (rc != 0) {
        fe_joint_release(j);
        return NULL;
    }
    return j;
}

fe_joint *fe_joint_new(tj_model_fn fn, tj_model_multi_fn mfn, void *ctx, const char *name,
                       uint64_t argmask, tj_tensor *const *args, int nargs, tj_tensor *const *caps,
                       int ncaps, const fe_joint_syms *sy, char *why, size_t n)
{
    why[0] = '\0';
    if (nargs > JOINT_MAX || (sy && sy->nsyms > JOINT_SYMS)) {
        snprintf(why, n, nargs > JOINT_MAX ? "more than %d arguments" : "more than %d symbols",
                 nargs > JOINT_MAX ? JOINT_MAX : JOINT_SYMS);
        return NULL;
    }
    char saved_err[1024] = "";
    if (rt_has_error())
        snprintf(saved_err, sizeof saved_err, "%s", tj_last_error());
    fe_joint *j = joint_make(fn, mfn, ctx, name, argmask, args, nargs, caps, ncaps, sy && sy->nsyms ? sy : NULL,
                             why, n);
    if (!j && sy && sy->nsyms) {   /* on this call's shapes, then */
        char *sym_why = strdup(why);
        j = joint_make(fn, mfn, ctx, name, argmask, args, nargs, caps, ncaps, NULL, why, n);
        if (j)
            j->static_why = sym_why;
        else
            free(sym_why);
    }
    if (saved_err[0])
        rt_error("%s", saved_err);
    return j;
}

bool fe_joint_symbolic(const fe_joint *j) { return j->nsyms > 0; }

/* Each symbol's size in args (which passed the entry's guards) into symval;
 * false where args do not fit j's argument types (a static dim differs, a
 * symbol bound twice differently, or below its least size). */
static bool joint_symbols(const fe_joint *j, tj_tensor *const *args, int64_t *symval)
{
    for (int k = 0; k < j->nsyms; k++)
        symval[k] = -1;
    for (int i = 0; i < j->nargs; i++) {
        const ir_type *t = &j->argt[i];
        if (args[i]->dtype != t->dtype || args[i]->ndim != t->ndim)
            return false;
        for (int d = 0; d < t->ndim; d++) {
            int64_t s = t->shape[d], v = args[i]->shape[d];
            if (!IR_IS_SYM(s) ? v != s : symval[ir_sym_index(s)] >= 0 && symval[ir_sym_index(s)] != v)
                return false;
            if (IR_IS_SYM(s))   /* arguments' dims are plain symbols (the guards) */
                symval[ir_sym_index(s)] = v;
        }
    }
    for (int k = 0; k < j->nsyms; k++)
        if (symval[k] < j->symmin[k])
            return false;
    return true;
}

/* The tensor for joint input i, given the call's arguments and captures. */
static tj_tensor *input_of(const fe_joint *j, int i, tj_tensor *const *args, tj_tensor *const *caps,
                           tj_tensor *const *tangents)
{
    const src *s = &j->in[i];
    switch (s->kind) {
    case SRC_ARG: return args[s->idx];
    case SRC_TANGENT: return tangents[s->idx];
    case SRC_CAP: return caps[s->idx];
    case SRC_CONST: return s->held;
    }
    return NULL;
}

/* Runs graph g (plans ps, last uses last) on in, nt watching outputs (or
 * NULL); 0 or -1. */
static int run_graph(const ir_graph *g, sc_plan_set *ps, const int *last, tj_tensor *const *in,
                     tj_tensor **out, const sc_notify *nt)
{
    int rc = sc_plans_run_notify(ps, in, out, nt);
    if (rc > 0) {
        tj_no_grad_begin();   /* the executor's ops record nothing */
        rc = sc_exec(g, in, last, out);
        tj_no_grad_end();
    }
    return rc;
}

/* A backward gradient o is final: added into its weight's .grad at once, and
 * the weight's ready-hook run when this call was its last part (data
 * parallelism starts a bucket while the plan goes on). */
typedef struct grad_out {
    fe_joint *j;
    uint64_t reached;     /* bit k: a gradient reached result tape[k] */
    tj_tensor *const *caps;
    const int *watch;     /* the watched outputs */
    bool *done;           /* per output */
} grad_out;

static int give_grad(fe_joint *j, tj_tensor *const *caps, int o, tj_tensor *g)
{
    tj_tensor *leaf = caps[j->leaf[o]];
    return tj_grad(leaf) ? fe_ag_accumulate(leaf, g) : fe_ag_take_grad(leaf, g);
}

static int grad_ready(void *ctx, int i, tj_tensor *value)
{
    grad_out *go = ctx;
    int o = go->watch[i];
    go->done[o] = true;
    if ((go->j->gdep[o] & go->reached) && give_grad(go->j, go->caps, o, value) != 0)
        return -1;
    return fe_ag_part_final(go->caps[go->j->leaf[o]]);
}

/* The tangents of the backward of the call with arguments args from the
 * gradients g of the results on the tape (NULL: none reached it, zeros),
 * each contiguous; 0 or -1. */
static int tangents_of(const fe_joint *j, tj_tensor *const *args, tj_tensor *const *g, tj_tensor **tan)
{
    int64_t symval[JOINT_SYMS];
    if (j->nsyms && !joint_symbols(j, args, symval)) {
        rt_error("backward(%s): the saved arguments do not fit its shapes", j->name);
        return -1;
    }
    for (int i = 0; i < j->nin; i++) {
        if (j->in[i].kind != SRC_TANGENT)
            continue;
        ir_type at = j->bwd->inputs[i]->type, *tt = &at;   /* at this call's sizes */
        for (int d = 0; j->nsyms && d < at.ndim; d++)
            at.shape[d] = ir_dim_at(at.shape[d], symval);
        int k = j->in[i].idx;
        if (!g[k]) {
            if (!(tan[k] = tj_zeros(tt->dtype, tt->ndim, tt->shape)))
                return -1;
            continue;
        }
        ir_type want;
        rt_type_of(g[k], &want);
        if (!ir_type_equal(tt, &want)) {
            char a[IR_TYPE_BUF], b[IR_TYPE_BUF];
            rt_error("backward(%s): the gradient of result %d is %s, the compiled backward takes %s",
                     j->name, j->tape[k], ir_type_fmt(&want, a, sizeof a), ir_type_fmt(tt, b, sizeof b));
            return -1;
        }
        if (!(tan[k] = rt_is_contiguous(g[k]) ? g[k] : tj_contiguous(g[k])))
            return -1;
    }
    return 0;
}

/* The backward for a backward that reached the results in reached (not all
 * of them): kept (the first JOINT_SUBS patterns) or made into *tmp, which the
 * caller frees. 0, or -1 with an error. */
static int backward_for(fe_joint *j, uint64_t reached, bwd_variant *tmp, const bwd_variant **out)
{
    pthread_mutex_lock(&j->mu);
    *out = NULL;
    for (int i = 0; i < j->nsub && !*out; i++)
        if (j->sub[i].reached == reached)
            *out = &j->sub[i];
    if (!*out) {
        bool absent[JOINT_MAX * 8] = {false};
        for (int i = 0; i < j->nin; i++)
            absent[i] = j->in[i].kind == SRC_TANGENT && !(reached >> j->in[i].idx & 1);
        char err[512];
        bwd_variant v = {reached, ps_backward_prune(j->bwd, absent, err, sizeof err), NULL, NULL};
        if (v.g) {
            v.plans = sc_plans_new(v.g, v.g->name);
            v.last = sc_exec_last_use(v.g);
        }
        if (!v.g || !v.last) {
            rt_error("backward(%s): %s", j->name, v.g ? "out of memory" : err);
            variant_free(&v);
        } else if (j->nsub < JOINT_SUBS) {
            j->sub[j->nsub] = v;
            *out = &j->sub[j->nsub++];
        } else {
            *tmp = v;
            *out = tmp;
        }
    }
    pthread_mutex_unlock(&j->mu);
    return *out ? 0 : -1;
}

static int joint_run(void *ctx, tj_tensor *const *in, int nsaved, int nwatch, tj_tensor *const *g,
                     tj_tensor **gargs)
{
    fe_joint *j = ctx;
    tj_tensor *const *caps = in + nsaved;
    tj_tensor *bin[JOINT_MAX * 8], **outs = calloc((size_t)(j->ngrads + j->nargg) + 1, sizeof *outs);
    int nb = j->bwd->ninputs, rc = -1;
    (void)nwatch;
    uint64_t reached = 0;   /* bit k: a gradient reached result tape[k] */
    for (int k = 0; k < j->ntape; k++)
        reached |= g[k] ? (uint64_t)1 << k : 0;
    tj_scope_begin();
    tj_tensor *tangents[JOINT_MAX];
    if (!outs || nb > (int)(sizeof bin / sizeof *bin)) {
        rt_error("backward(%s): out of memory", j->name);
        goto out;
    }
    if (tangents_of(j, in, g, tangents) != 0)
        goto out;
    for (int i = 0; i < j->nin; i++)
        bin[i] = input_of(j, i, in, caps, tangents);
    for (int s = 0; s < j->part.nsaved; s++)
        bin[j->nin + s] = in[j->nargs + s];
    atomic_fetch_add(&j->calls, 1);
    /* hooked weights get their gradients as the plan makes them */
    int nh = 0, watch[JOINT_MAX * 8];
    bool done[JOINT_MAX * 8] = {false};
    for (int o = 0; o < j->ngrads && o < JOINT_MAX * 8; o++)
        if (fe_ag_has_hook(caps[j->leaf[o]]))
            watch[nh++] = o;
    grad_out go = {j, reached, caps, watch, done};
    sc_notify nt = {nh, watch, grad_ready, &go};
    /* results no gradient reached: the backward without their tangents */
    bwd_variant tmp = {0};
    const bwd_variant full = {reached, j->bwd, j->bplans, j->blast}, *bw = &full;
    uint64_t all = j->ntape >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << j->ntape) - 1;
    if ((reached == all || backward_for(j, reached, &tmp, &bw) == 0) &&
        run_graph(bw->g, bw->plans, bw->last, bin, outs, nh ? &nt : NULL) == 0) {
        rc = 0;
        for (int o = 0; o < j->ngrads && rc == 0; o++)
            if (!done[o] && (j->gdep[o] & reached))
                rc = give_grad(j, caps, o, outs[o]);
    }
    variant_free(&tmp);
    for (int o = 0; o < j->ngrads; o++)
        tj_release(outs[o]);
out:
    tj_scope_end();
    for (int i = 0; outs && i < j->nargg; i++) {   /* the arguments': the caller's scope */
        tj_tensor *ga = outs[j->ngrads + i];
        if (rc == 0 && (j->gdep[j->ngrads + i] & reached))
            gargs[j->argg[i]] = rt_own(ga);
        else
            tj_release(ga);
    }
    free(outs);
    return rc;
}

static void joint_kind_release(void *ctx) { fe_joint_release(ctx); }

static const fe_ag_compiled joint_kind = {joint_run, joint_kind_release};

int fe_joint_call(fe_joint *j, tj_tensor *const *args, int nargs, tj_tensor *const *caps, int ncaps,
                  tj_tensor **outs)
{
    int nf = j->fwd->ninputs, no = j->fwd->noutputs, rc = -1;
    tj_tensor **in = calloc((size_t)nf + 1, sizeof *in), **all = calloc((size_t)no + 1, sizeof *all);
    tj_tensor **saved = calloc((size_t)(nargs + j->part.nsaved) + 1, sizeof *saved);
    bool *unread = j->nwv ? calloc((size_t)ncaps + 1, sizeof *unread) : NULL;   /* the captures written */
    if (!in || !all || !saved || (j->nwv && !unread)) {
        rt_error("tj_call(%s): out of memory", j->name);
        goto out;
    }
    for (int i = 0, f = 0; i < j->nin; i++)
        if (j->in[i].kind != SRC_TANGENT)
            in[f++] = input_of(j, i, args, caps, NULL);
    int64_t symval[JOINT_SYMS];   /* the call's size of each symbol */
    if (j->nsyms && !joint_symbols(j, args, symval)) {
        rt_error("tj_call(%s): the arguments do not fit the compiled backward's shapes", j->name);
        goto out;
    }
    fe_draws_run draws;   /* the call's random draws, at once */
    fe_draws_begin(&draws, &j->draws, j->nsyms ? symval : NULL);
    int ran = run_graph(j->fwd, j->fplans, j->flast, in, all, NULL);
    fe_draws_end(&draws);
    if (ran != 0)
        goto out;
    for (int w = 0; w < j->nwv; w++)   /* the model's writes (the backward reads none) */
        if (fe_write_data(caps[j->wcap[w]], all[j->nres + w]) != 0)
            goto out;
    for (int w = 0; w < j->nwv; w++)
        unread[j->wcap[w]] = true;
    for (int i = 0; i < nargs; i++)
        saved[i] = args[i];
    /* detached headers (same storage, so a write to it still shows in its
     * version): a saved value that is the result itself must not hold the
     * result's tape node, which holds it (a cycle) */
    for (int s = 0; s < j->part.nsaved; s++)
        if (!(saved[nargs + s] = tj_detach(all[j->nres + j->nwv + s])))
            goto out;
    for (int r = 0; r < j->nres; r++) {
        outs[r] = rt_own(all[r]);
        all[r] = NULL;
    }
    atomic_fetch_add(&j->refs, 1);   /* the node's hold */
    tj_tensor *tape[JOINT_MAX];
    for (int k = 0; k < j->ntape; k++) {
        tj_tensor **t = &outs[j->tape[k]];
        for (int i = 0; i < nargs + ncaps; i++)
            if (*t == (i < nargs ? args[i] : caps[i - nargs])) {
                /* the plan returned an input for a value the trace made
                 * (contiguous of a weight): a tensor of its own, as eagerly,
                 * to carry the node (never the input's history) */
                tj_no_grad_begin();
                tj_tensor *copy = tj_clone(*t);
                tj_no_grad_end();
                if (!copy)
                    goto out;
                *t = copy;
                break;
            }
        tape[k] = *t;
    }
    rc = fe_ag_record_compiled(tape, j->ntape, saved, nargs + j->part.nsaved, nargs, caps, ncaps,
                               unread, &joint_kind, j) == 0
             ? j->nres
             : -1;
out:
    for (int o = 0; all && o < no; o++)
        tj_release(all[o]);
    free(in);
    free(all);
    free(saved);
    free(unread);
    return rc;
}

int fe_joint_results(const fe_joint *j) { return j->nres; }


bool fe_joint_fits(const fe_joint *j, tj_tensor *const *args, int nargs, uint64_t argmask)
{
    if (nargs != j->nargs || argmask != j->argmask)
        return false;
    int64_t symval[JOINT_SYMS];
    if (j->nsyms)
        return joint_symbols(j, args, symval);
    for (int i = 0; i < nargs; i++) {
        ir_type t;
        rt_type_of(args[i], &t);
        if (!ir_type_equal(&t, &j->argt[i]))
            return false;
    }
    return true;
}

void fe_joint_explain(const fe_joint *j, bool shapes, FILE *f)
{
    sc_plan_info fi = {0}, bi = {0};
    sc_plans_info(j->fplans, &fi);
    sc_plans_info(j->bplans, &bi);
    char at[256] = "";
    for (int i = 0, o = 0; shapes && i < j->nargs && o < (int)sizeof at; i++) {
        char t[IR_TYPE_BUF];
        o += snprintf(at + o, sizeof at - (size_t)o, "%s%s", i ? ", " : " for arguments ",
                      ir_type_fmt(&j->argt[i], t, sizeof t));
    }
    char which[128] = "", sizes[160] = "";
    for (int k = 0, o = 0; k < j->ntape && o < (int)sizeof which; k++)
        o += snprintf(which + o, sizeof which - (size_t)o, "%s%d", k ? ", " : "", j->tape[k]);
    for (int k = 0, o = 0; k < j->nsyms && o < (int)sizeof sizes; k++)   /* the bytes' sizes */
        o += snprintf(sizes + o, sizeof sizes - (size_t)o, "%ss%d=%lld", k ? ", " : " at ", k,
                      (long long)j->symval[k]);
    fprintf(f, "  backward of result%s %s%s: joint graph partitioned: the forward saves %d value%s "
               "(%lld bytes%s), the backward recomputes %d value%s and runs %d "
               "matmul/conv2d; %lu backward runs\n",
            j->ntape == 1 ? "" : "s", which, at, j->part.nsaved, j->part.nsaved == 1 ? "" : "s",
            (long long)j->part.saved_bytes, sizes, j->part.nrecomputed, j->part.nrecomputed == 1 ? "" : "s", j->ncontract,
            (unsigned long)atomic_load(&j->calls));
    if (j->static_why)
        fprintf(f, "    traced on these shapes, one joint per shape: %s\n", j->static_why);
    char wrote[32] = "";
    if (j->nwv)
        snprintf(wrote, sizeof wrote, " (%d written back)", j->nwv);
    fprintf(f, "    forward @%s: %d nodes, %d outputs%s; backward @%s: %d nodes, %d gradients",
            j->fwd->name, j->fwd->nnodes, j->fwd->noutputs, wrote, j->bwd->name, j->bwd->nnodes,
            j->ngrads + j->nargg);
    for (int i = 0; i < j->nargg; i++)
        fprintf(f, "%s%d", i ? ", " : " (of arguments ", j->argg[i]);
    fprintf(f, "%s\n", j->nargg ? ")" : "");
    if (fi.compiled && bi.compiled)
        fprintf(f, "    compiled: forward %d kernels, %d eager calls; backward %d kernels, %d eager calls\n",
                fi.kernels, fi.eager_calls, bi.kernels, bi.eager_calls);
    char *rep = strdup(j->part.report ? j->part.report : ""), *save = NULL;
    for (char *l = rep ? strtok_r(rep, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save))
        fprintf(f, "    %s\n", l);
    free(rep);
}

void fe_joint_stats(const fe_joint *j, tj_compiled_stats *out)
{
    out->backward.graphs++;
    out->backward.calls += atomic_load(&j->calls);
    out->backward.partitioned++;
    out->backward.saved += j->part.nsaved;
    out->backward.saved_bytes += j->part.saved_bytes;
    out->backward.recomputed += j->part.nrecomputed;
    out->backward.contractions += j->ncontract;
}
