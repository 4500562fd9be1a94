/* compiled.h - internal to the frontend: what a compiled function holds (its
 * entries: one per input signature, with guards, graph, plans and captured
 * tensors), shared by compile.c (tracing, guards, calls) and explain.c
 * (tj_explain and the statistics). */
#ifndef TJ_FE_COMPILED_H
#define TJ_FE_COMPILED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "../sched/sched.h"
#include "trace.h"
#include "autograd.h"

#define FE_MAX_ARGS 64
#define FE_MAX_RESULTS 64
#define FE_MAX_SYMS (FE_MAX_ARGS * TJ_MAX_DIMS)
/* Partitioned backwards per entry: one per pattern of arguments that
 * require grad, or, where a backward cannot follow an entry's symbols, one
 * per argument shape, at most this many (Dynamo's cache limit); other
 * shapes recompute (aot.c). */
#define FE_JOINT_SHAPES 8

typedef struct guard {
    tj_dtype dtype;
    int ndim;
    bool contiguous;
    signed char storage;            /* as_strided read it as its own storage: 1 it held its
                                     * whole storage (the graph's case), -1 it did not (an
                                     * eager entry); 0 unchecked */
    int64_t shape[TJ_MAX_DIMS];     /* IR_SYM(k) for a symbolic dim */
    int64_t strides[TJ_MAX_DIMS];   /* checked when not contiguous */
} guard;

/* A concrete tensor an entry depends on: a capture (graph param) or a
 * tensor whose values the trace read. */
typedef struct capref {
    tj_tensor *t;       /* retained when w is NULL; else valid while w says it lives */
    rt_wref *w;         /* weak reference to t, or NULL: a constant the model made */
    unsigned version;   /* t's storage version when traced */
    bool values;        /* its values were read while tracing: guarded on version */
} capref;

/* Values that depend only on captures, kept across calls (keep.c). */
typedef struct fe_keep fe_keep;

typedef struct entry {
    int nargs;
    guard *args;
    ir_graph *g;            /* NULL: this signature runs eagerly or split */
    char *eager_why;        /* the graph break that made it eager or split */
    fe_split *split;        /* split at its breaks (segment.c), or NULL */
    capref *caps;           /* 0..ncaps-1: g->inputs[nargs + k]; then value reads */
    int ncaps, nrefs;
    int *write_ref;         /* per write: index in caps of its target, or -1 */
    int *guard_ref;         /* per gradient guard: index in caps of its leaf, or -1 */
    atomic_int busy;        /* calls running its plan (it is not freed meanwhile) */
    int *last_use;
    int nsyms;
    int64_t *symval;        /* the traced size of each symbol (duck sizing) */
    int64_t *symmin;        /* its least size the graph's offsets allow (sK-2: 4; in symval's block) */
    sc_plan_set *plans;     /* compiled kernels (plan.h); NULL: graph executor */
    int nresults;           /* the function's results: outputs 0 .. nresults-1 */
    uint64_t res_grad;      /* traced in grad mode: bit k, result k required grad; */
    int8_t res_view[FE_MAX_RESULTS];   /* what result k viewed eagerly (fe_alias_viewed) */
    uint64_t res_twin;      /* bit k: result k is another tensor than an earlier result of
                             * the same value (equal nodes are shared): returned as a copy */
    int8_t res_same[FE_MAX_RESULTS];   /* with twins: the first result that is the same
                                        * tensor as result k, or -1 */
    bool grad_known;        /* false: traced in no-grad mode (every float result may) */
    tj_dtype autocast;      /* the tj_autocast dtype it was traced in (TJ_F32: none) */
    fe_write *writes;       /* written back after each call: the outputs after the
                             * results (trace_effects.c) */
    int nwrites;
    fe_grad_guard *grad_guards;   /* leaves whose gradient the graph read */
    int nguards;
    atomic_ulong calls;
    double trace_ms;        /* what tracing the function took */
    bool frozen;            /* weights folded (freeze_entry) */
    int bn_folded;          /* of which batch norms into a conv/linear/matmul (fold_bn) */
    fe_keep *keep;          /* weight-only values kept across calls (keep.c), or NULL;
                             * plans then run its graph, not g */
    fe_joint *joints[FE_JOINT_SHAPES];   /* the partitioned backwards (aot_joint.c), made
                             * on the first call in grad mode: one for all the entry's
                             * shapes (per argmask), or, joint_static, one per argument
                             * shape seen; none: aot.c's, because joint_why */
    int njoints;
    bool joint_static;      /* a symbolic entry's backward reads a symbolic size: its
                             * joints are traced per shape */
    char *joint_why[2];     /* why not (set once: the reason holds for every shape);
                             * [1]: with arguments that require grad (then eager) */
    atomic_ulong joint_misses;   /* symbolic entry: grad-mode calls of shapes past the limit */
    fe_draws draws;         /* its random ops' draws per call (runtime/random.h) */
} entry;

struct tj_compiled {
    tj_model_fn fn;          /* one result ... */
    tj_model_multi_fn mfn;   /* ... or several */
    void *ctx;
    char name[64];
    int limit;
    bool no_dynamic, dyn_disabled, freeze;
    unsigned gemm_flags;         /* RT_GEMM_AUTOTUNE, RT_GEMM_INT8 (runtime/gemm.h) */
    pthread_mutex_t lock;
    entry **entries;
    int nentries, cap;
    uint32_t dyn[FE_MAX_ARGS];   /* dims marked dynamic, per argument */
    atomic_int nargs;            /* the argument count of the first call; -1 before */
    int traces;                  /* entries made so far (some may have been dropped) */
    char **log;                  /* recompiles and limit events, for explain */
    int nlog, logcap;
    bool limit_logged;
    atomic_ulong calls, eager_calls;
    fe_aot *aot[FE_MAX_RESULTS];   /* per result: its compiled backward (aot.c), made
                                    * on the first call in grad mode that needs it */
};

/* guards.c. fe_guard_of: the guard of t as it is (static sizes, its
 * layout). fe_entry_check: whether args pass e's guards (symbols bound
 * consistently and at least e->symmin); why gets the first that failed,
 * *passed counts the checks that held (the closest entry for messages).
 * fe_entry_symbols: each symbol's size in args, which passed e's guards.
 * fe_symbol_mins: e->symmin from the offset symbols of g (sK-C needs sK >=
 * C + 2). fe_version_of: t's storage version. fe_entry_dead: a capture of e
 * was released (e can never pass again). fe_write_dst: the tensor write k of
 * e goes to (a capture, its target, or an argument). */
void fe_guard_of(const tj_tensor *t, guard *g);
bool fe_entry_check(const entry *e, tj_tensor *const *args, int nargs, char *why, size_t n,
                    int *passed);
void fe_entry_symbols(const entry *e, tj_tensor *const *args, int64_t *symval);
void fe_symbol_mins(const ir_graph *g, entry *e);
unsigned fe_version_of(const tj_tensor *t);
bool fe_entry_dead(const entry *e);
/* The captures' guards of e (why: the first that failed). */
bool fe_caps_check(const entry *e, char *why, size_t n);
tj_tensor *fe_write_dst(const entry *e, int k, tj_tensor *const *args);
/* Whether a weak capture's tensor was released since the trace. */
bool fe_cap_released(const capref *r);
/* Whether e's capture guards fail now (a capture released, or written after
 * the trace read its values): a call would trace again, not run e. */
bool fe_entry_stale(const entry *e);

/* keep.c. fe_keep_entry: splits off e's weight-only values (not with
 * TJIT_KEEP_WEIGHT_VALUES=0); e->keep NULL when nothing is kept or the split
 * failed (then the graph runs as traced: keeping is an optimization); 0.
 * The graph plans run: e->g, or the keep's (inputs: args, captures, then
 * the kept values). fe_keep_values: the kept values for captures caps
 * (computed again when one they read changed), retained into out; 0 or -1.
 * fe_keep_unalias: a result sharing a kept value's memory replaced by a copy
 * (refs 1, no scope); 0 or -1. */
int fe_keep_entry(entry *e, const char *name);
const ir_graph *fe_keep_run_graph(const entry *e);
int fe_keep_count(const fe_keep *k);
int fe_keep_values(fe_keep *k, tj_tensor *const *caps, tj_tensor **out);
int fe_keep_unalias(const fe_keep *k, tj_tensor *const *vals, tj_tensor **outs, int nresults);
void fe_keep_explain(FILE *f, const fe_keep *k);
void fe_keep_free(fe_keep *k);

#endif
