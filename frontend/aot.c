/* aot.c - the backward of a compiled call (the AOTAutograd counterpart, first
 * step): tj_backward reaching a result of tj_call runs a compiled backward.
 *
 *   tj_call, grad mode on, a captured weight requires grad:
 *       the forward plan runs as for inference; each float result gets a
 *       tape node of the compiled kind (autograd.c) holding the call's
 *       arguments (the saved tensors) and this file's state for its result k
 *   tj_backward reaching that node:
 *       bwd(x..., seed) is a compiled handle of its own (<name>_backward,
 *       static shapes): traced once per signature, it reruns the model on the
 *       symbolic arguments with grad mode on, so the tape records the model's
 *       ops, and calls tj_backward_seed(result k, seed) inside the trace; the
 *       VJP rules become the graph and the leaves' gradients become its
 *       write-backs (trace_effects.c), accumulated into .grad after each run.
 *
 * Partition: everything the backward needs is recomputed from the saved
 * arguments and the weights (the forward plan saves nothing but its inputs),
 * so the backward graph holds the forward ops its VJPs read; the passes fuse
 * them with the gradient ops (a pointwise forward value is recomputed inside
 * the fused backward kernel that reads it). Nothing is built or kept when
 * grad mode is off or no weight requires grad: inference is unchanged.
 * Arguments that require grad make the call run eagerly (compile.c).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "trace.h"

struct fe_aot {
    atomic_int refs;
    tj_model_fn fn;
    tj_model_multi_fn mfn;
    void *ctx;
    char name[80];
    int k;                 /* the result this backward differentiates */
    tj_compiled *bwd;      /* bwd(x..., seed) */
};

#define AOT_MAX_RESULTS 64

/* The backward model: the forward on args[0..nargs-1), then the gradient of
 * its result k with seed args[nargs-1]; returns the seed (its graph's one
 * output; the gradients are the write-backs). */
static int bwd_fn(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    fe_aot *a = ctx;
    tj_tensor *res[AOT_MAX_RESULTS];
    (void)max;
    int n = fe_run_model(a->fn, a->mfn, a->ctx, a->name, args, nargs - 1, res, AOT_MAX_RESULTS);
    if (n < 0)
        return -1;
    if (a->k >= n) {
        rt_error("%s: the model returned %d results in the backward, result %d is gone",
                 a->name, n, a->k);
        return -1;
    }
    if (tj_backward_seed(res[a->k], args[nargs - 1]) != 0)
        return -1;
    outs[0] = args[nargs - 1];
    return 1;
}

fe_aot *fe_aot_new(tj_model_fn fn, tj_model_multi_fn mfn, void *ctx, const char *name, int k)
{
    fe_aot *a = calloc(1, sizeof *a);
    if (!a) {
        rt_error("tj_call(%s): out of memory", name);
        return NULL;
    }
    atomic_init(&a->refs, 1);
    a->fn = fn;
    a->mfn = mfn;
    a->ctx = ctx;
    a->k = k;
    snprintf(a->name, sizeof a->name, "%s", name);
    char bname[96];
    snprintf(bname, sizeof bname, "%s_backward", name);
    tj_compile_options o = {.name = bname, .no_dynamic = true};
    if (!(a->bwd = tj_compile_multi(bwd_fn, a, &o))) {
        free(a);
        return NULL;
    }
    return a;
}

void fe_aot_release(fe_aot *a)
{
    if (!a || atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1)
        return;
    tj_compiled_free(a->bwd);
    free(a);
}

static void aot_release(void *ctx) { fe_aot_release(ctx); }

static int aot_run(void *ctx, tj_tensor *const *saved, int nsaved, int nwatch, tj_tensor *const *g,
                   tj_tensor **gargs)
{
    (void)nwatch;   /* the backward reads the weights through ctx again */
    (void)gargs;    /* no argument requires grad (compile.c runs such calls eagerly or
                     * with the partitioned backward) */
    fe_aot *a = ctx;
    tj_tensor *args[AOT_MAX_RESULTS + 1], *out[1];
    if (nsaved >= AOT_MAX_RESULTS) {
        rt_error("backward(%s): %d arguments, at most %d", a->name, nsaved, AOT_MAX_RESULTS - 1);
        return -1;
    }
    memcpy(args, saved, (size_t)nsaved * sizeof *args);
    args[nsaved] = g[0];   /* its one result's */
    return tj_call_multi(a->bwd, args, nsaved + 1, out, 1) == 1 ? 0 : -1;
}

static const fe_ag_compiled aot_kind = {aot_run, aot_release};

tj_tensor *fe_aot_attach(fe_aot *a, tj_tensor *r, tj_tensor *const *args, int nargs,
                         tj_tensor *const *caps, int ncaps)
{
    atomic_fetch_add(&a->refs, 1);   /* the node's hold */
    return fe_ag_record_compiled(&r, 1, args, nargs, nargs, caps, ncaps, NULL, &aot_kind, a) == 0 ? r : NULL;
}

const tj_compiled *fe_aot_compiled(const fe_aot *a) { return a ? a->bwd : NULL; }
