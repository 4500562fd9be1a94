/* checkpoint.c - activation checkpointing (torch.utils.checkpoint, the
 * non-reentrant kind): tj_checkpoint runs a function with its ops recorded
 * as usual, then drops the values those nodes saved that the function made
 * (its intermediate activations; what it read from outside, arguments and
 * weights, stays saved with its version); a backward that reaches one of the
 * nodes runs the function again once, with grad mode on, the same arguments
 * and the same random draws (the generator's reservations replayed,
 * runtime/random.c), and the nodes made the i-th time take their saved
 * values from the i-th node made again. The graph itself (links, leaves,
 * hooks) is the one recorded: only saved values move.
 *
 *   forward:  fn(args) recorded -> nodes n0..nk, saved values made inside dropped
 *   backward: reaches ni (deferred) -> fn(args) again, recorded -> m0..mk;
 *             ni's saved values <- mi's (mi released); the rule runs
 *
 * A function that records other ops when run again (a branch on values it
 * does not take as arguments) or draws other random numbers is refused with
 * an error; an argument written in place, by the function or after the
 * forward, too. A compiled function called inside runs eagerly there (its
 * first call, or a recompile, would record other nodes than a later call).
 */
#include <stdlib.h>
#include <string.h>

#include "ag_tape.h"
#include "trace.h"
#include "../runtime/random.h"

struct ag_ckpt {
    atomic_int refs;
    tj_model_multi_fn fn;
    void *ctx;
    int nargs, max;
    tj_tensor **args;        /* retained */
    unsigned *versions;      /* of args at the forward */
    uint64_t serial0;        /* storages from this serial on were made by fn */
    rt_rng_tape rng;         /* the forward's reservations */
    ag_node **nodes;         /* collected (retained): the forward's, then the run again's */
    int n, cap, nfwd;
    bool again, failed;
    bool broken;             /* the run again failed: no values to give */
};

_Thread_local ag_ckpt *ag_collect;

bool fe_ag_checkpointing(void) { return ag_collect != NULL; }

void ag_ckpt_add(ag_node *n)
{
    ag_ckpt *c = ag_collect;
    ag_node **v = rt_grow(c->nodes, &c->cap, c->n, sizeof *c->nodes);
    if (!v) {
        c->failed = true;
        return;
    }
    c->nodes = v;
    atomic_fetch_add(&n->refs, 1);
    c->nodes[c->n++] = n;
}

static void drop_nodes(ag_ckpt *c)
{
    for (int i = 0; i < c->n; i++)
        ag_node_release(c->nodes[i]);
    c->n = 0;
}

void ag_ckpt_release(ag_ckpt *c)
{
    if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    drop_nodes(c);
    for (int k = 0; k < c->nargs; k++)
        tj_release(c->args[k]);
    rt_rng_tape_free(&c->rng);
    free(c->nodes);
    free(c->args);
    free(c->versions);
    free(c);
}

/* fn's results' histories settled before its scope ends: a result that is a
 * view of a value fn made and then wrote (with a value that requires grad)
 * takes the written base's history now, while the base lives (it holds
 * only a weak reference to it; after the scope the base is gone and the
 * view would keep the history it had before the write). The same in the
 * forward and the run again, so both record the same nodes. */
static void settle(tj_tensor **outs, int r, int max)
{
    for (int k = 0; k < r && k < max; k++)
        if (outs[k])
            (void)ag_fn_of(outs[k]);
}

/* Whether t is a value fn made (its storage is newer than the checkpoint). */
static bool made_inside(const ag_ckpt *c, const tj_tensor *t)
{
    return t && t->storage && t->storage->serial >= c->serial0;
}

/* The forward's nodes give up the saved values fn made and wait for the run
 * again; the collection is emptied for it. */
static void defer(ag_ckpt *c)
{
    for (int i = 0; i < c->n; i++) {
        ag_node *n = c->nodes[i];
        bool dropped = false;
        for (int k = 0; k < n->nin; k++) {
            if (made_inside(c, n->in[k].saved)) {
                tj_release(n->in[k].saved);
                n->in[k].saved = NULL;
                dropped = true;
            }
        }
        if (made_inside(c, n->out)) {
            tj_release(n->out);
            n->out = NULL;
            dropped = true;
        }
        n->ckpt_k = i;
        if (dropped) {
            n->deferred = true;
            n->ckpt = c;
            atomic_fetch_add(&c->refs, 1);
        }
    }
    c->nfwd = c->n;
    drop_nodes(c);
}

/* Runs fn again with grad mode on, collecting its nodes; 0 or -1. */
static int run_again(ag_ckpt *c)
{
    char d[64];
    for (int k = 0; k < c->nargs; k++) {
        if (ag_version_of(c->args[k]) != c->versions[k]) {
            rt_error("checkpoint: argument %d (%s) was modified in place after the forward (version "
                     "%u, %u then): the backward would run the function on other values",
                     k, tj_describe(c->args[k], d, sizeof d), ag_version_of(c->args[k]), c->versions[k]);
            return -1;
        }
    }
    tj_tensor **outs = calloc((size_t)c->max, sizeof *outs);
    if (!outs) {
        rt_error("checkpoint: out of memory");
        return -1;
    }
    fe_trace *tr = fe_trace_current();
    if (tr) {
        /* the backward traced through a checkpoint recorded eagerly */
        fe_trace_break(tr, "a backward through tj_checkpoint's nodes recorded outside the compiled function");
        fe_trace_pause(tr);
    }
    int depth = ag_no_grad_depth;
    ag_no_grad_depth = 0;
    ag_ckpt *outer = ag_collect;
    ag_collect = c;
    rt_rng_tape *tape = rt_rng_tape_begin(&c->rng, true);
    tj_scope_begin();
    int r = c->fn(c->ctx, c->args, c->nargs, outs, c->max);
    settle(outs, r, c->max);
    tj_scope_end();
    rt_rng_tape_end(tape);
    ag_collect = outer;
    ag_no_grad_depth = depth;
    if (tr)
        fe_trace_resume(tr);
    free(outs);
    c->again = true;
    if (r < 0) {
        if (!rt_has_error())
            rt_error("checkpoint: the function failed when run again for the backward");
        return -1;
    }
    if (c->failed) {
        rt_error("checkpoint: out of memory");
        return -1;
    }
    if (c->rng.mismatch || c->rng.pos != c->rng.len) {
        rt_error("checkpoint: run again for the backward, the function drew other random numbers "
                 "than in the forward");
        return -1;
    }
    if (c->n != c->nfwd) {
        rt_error("checkpoint: run again for the backward, the function recorded %d ops, %d in the "
                 "forward (it must record the same ops: no branch on values it does not take as "
                 "arguments)", c->n, c->nfwd);
        return -1;
    }
    return 0;
}

int ag_ckpt_restore(ag_node *n)
{
    ag_ckpt *c = n->ckpt;
    if (c->broken) {
        rt_error("checkpoint: the function failed when run again for an earlier backward: its "
                 "values cannot be made");
        return -1;
    }
    if (!c->again && run_again(c) != 0) {
        c->broken = true;   /* what it collected is no match: never used */
        drop_nodes(c);
        return -1;
    }
    ag_node *m = n->ckpt_k < c->n ? c->nodes[n->ckpt_k] : NULL;
    if (!m || m->op != n->op || m->nin != n->nin) {
        rt_error("checkpoint: run again for the backward, the function's op %d was %s, %s in the "
                 "forward", n->ckpt_k, m ? ir_ops[m->op].name : "missing", ir_ops[n->op].name);
        return -1;
    }
    for (int k = 0; k < n->nin; k++) {
        if (!n->in[k].saved && m->in[k].saved) {
            n->in[k].saved = tj_retain(m->in[k].saved);
            n->in[k].version = m->in[k].version;
        }
    }
    if (!n->out && m->out) {
        n->out = tj_retain(m->out);
        n->out_version = m->out_version;
    }
    n->deferred = false;
    c->nodes[n->ckpt_k] = NULL;   /* its values live on in n */
    ag_node_release(m);
    return 0;
}

int tj_checkpoint(tj_model_multi_fn fn, void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs,
                  int max)
{
    if (!fn || nargs < 0 || (nargs && !args) || !outs || max <= 0) {
        rt_error("checkpoint: fn %s, %d args, outs %s, max %d", fn ? "given" : "NULL", nargs,
                 outs ? "given" : "NULL", max);
        return -1;
    }
    for (int k = 0; k < nargs; k++) {
        if (!args[k]) {
            rt_error("checkpoint: argument %d is NULL", k);
            return -1;
        }
    }
    if (rt_check_live((tj_tensor **)args, nargs, "checkpoint") != 0)
        return -1;
    fe_trace *tr = fe_trace_current();
    if (tr) {
        /* traced: the nodes it makes are marked for the partition, which
         * computes them again in the backward plan (partition.c) */
        int lo = tr->g->nnodes;
        tr->in_ckpt++;
        int r = fn(ctx, args, nargs, outs, max);
        tr->in_ckpt--;
        if (r >= 0)
            fe_trace_mark_checkpoint(tr, lo, tr->g->nnodes);
        return r;
    }
    /* nothing recorded, or inside another checkpoint or its run again: fn
     * itself */
    if (ag_no_grad_depth > 0 || ag_collect)
        return fn(ctx, args, nargs, outs, max);
    ag_ckpt *c = calloc(1, sizeof *c);
    if (c) {
        c->args = calloc((size_t)nargs + 1, sizeof *c->args);
        c->versions = calloc((size_t)nargs + 1, sizeof *c->versions);
    }
    if (!c || !c->args || !c->versions) {
        if (c) {
            free(c->args);
            free(c->versions);
        }
        free(c);
        rt_error("checkpoint: out of memory");
        return -1;
    }
    atomic_init(&c->refs, 1);
    c->fn = fn;
    c->ctx = ctx;
    c->max = max;
    for (int k = 0; k < nargs; k++) {
        c->args[c->nargs++] = tj_retain(args[k]);
        c->versions[k] = ag_version_of(args[k]);
    }
    c->serial0 = rt_storage_serial_next();
    rt_rng_tape *tape = rt_rng_tape_begin(&c->rng, false);
    ag_collect = c;
    tj_scope_begin();
    int r = fn(ctx, args, nargs, outs, max);
    settle(outs, r, max);
    for (int k = 0; k < r && k < max; k++)   /* the caller's, past the scope */
        tj_retain(outs[k]);
    tj_scope_end();
    ag_collect = NULL;
    rt_rng_tape_end(tape);
    bool holes = r > max;
    for (int k = 0; k < r && k < max; k++) {
        holes |= !outs[k];
        outs[k] = outs[k] ? rt_own(outs[k]) : NULL;
    }
    int wrote = -1;   /* an argument fn wrote in place: run again, it would start from that */
    for (int k = 0; r >= 0 && k < nargs && wrote < 0; k++)
        wrote = ag_version_of(args[k]) != c->versions[k] ? k : -1;
    if (r >= 0 && (c->failed || c->rng.failed || holes || wrote >= 0)) {
        for (int k = 0; k < r && k < max; k++)
            outs[k] = NULL;   /* in the scope: released with it */
        if (holes)
            rt_error("checkpoint: the function returned %d results with room for %d, or a NULL one", r, max);
        else if (wrote >= 0)
            rt_error("checkpoint: the function wrote argument %d in place; run again for the backward, it "
                     "would start from the written value (write into a clone of it instead)", wrote);
        else
            rt_error("checkpoint: out of memory");
        r = -1;
    }
    if (r < 0) {
        if (!rt_has_error())
            rt_error("checkpoint: the function failed without a message");
        drop_nodes(c);
    } else {
        defer(c);
    }
    ag_ckpt_release(c);
    return r;
}
