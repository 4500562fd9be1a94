/* trace.h - internal to the frontend: the recording state of one trace.
 *
 * While a compiled model is traced, this thread's current trace is set and
 * fe_apply records every op into its graph instead of running a kernel. The
 * model's arguments are symbolic tensors (no storage) bound to the graph's
 * first inputs; concrete tensors the model reaches (weights) become params,
 * held by reference in `caps` (retained) in the order they were met.
 */
#ifndef TJ_FE_TRACE_H
#define TJ_FE_TRACE_H

#include "../ir/graph.h"
#include "../runtime/random.h"
#include "fe.h"

/* A write the traced function made to a tensor that outlives the call. The
 * graph computes the new value (an extra output, after the function's
 * result) and each call writes it back (trace_effects.c). */
typedef enum {
    FE_WRITE_DATA,        /* copy the value into the tensor (in place) */
    FE_WRITE_GRAD,        /* the value is the leaf's new gradient */
    FE_WRITE_GRAD_NONE    /* the leaf's gradient is dropped (tj_zero_grad) */
} fe_write_kind;

typedef struct fe_write {
    fe_write_kind kind;
    tj_tensor *target;    /* concrete tensor (retained); NULL: argument `arg` */
    int arg;
    tj_tensor *value;     /* symbolic new value (retained); NULL for GRAD_NONE */
    bool hooked;          /* GRAD: the leaf had a ready-hook when traced (a guard) */
} fe_write;

/* A leaf whose gradient from before the call the trace read: the graph is
 * only valid while that gradient is the same tensor (or still none). */
typedef struct fe_grad_guard {
    tj_tensor *leaf;      /* retained */
    tj_tensor *prior;     /* retained; NULL: the leaf had no gradient */
} fe_grad_guard;

/* An in-place write replaced value old by now (trace_effects.c): views of old
 * taken before the write read the base's new value (fe_trace_value), and so
 * does every tensor of the storage when a slice of a value of the trace was
 * written (each: no tensor was rebound to the new value; a whole write
 * rebinds the written tensor, and others holding old, autograd's saved
 * values among them, keep it). */
typedef struct fe_overwrite {
    ir_node *old, *now;
    uint64_t alias;   /* the written tensor's storage (fe_alias_of) */
    bool each;
} fe_overwrite;

/* The storage t stands for: a concrete tensor's own, or the token a trace
 * gave a symbolic one (fe_trace_apply: a view shares its input's, any other
 * op's result gets a new one). Two tensors of one value (equal nodes are
 * shared) may stand for two storages: a write into one is not seen by the
 * other's views. */
static inline uint64_t fe_alias_of(const tj_tensor *t)
{
    return t->storage ? (uint64_t)(uintptr_t)t->storage : t->alias;
}

/* The random draws of a traced graph, in trace order (draws.c): draw j
 * takes numel(t[j]) counters, symbolic dims counted per call. */
typedef struct fe_draws {
    ir_type *t;
    int n, cap;
} fe_draws;
/* Adds a draw of n counters (its type set later by fe_draws_type); its index,
 * or UINT64_MAX when out of memory. */
uint64_t fe_draws_add(fe_draws *d, uint64_t n);
void fe_draws_type(fe_draws *d, uint64_t j, const ir_type *t);
bool fe_draws_symbolic(const fe_draws *d);
/* Where each draw starts (at[0..d->n)) with the symbols' sizes symval, and
 * the total: what a call reserves. */
uint64_t fe_draws_layout(const fe_draws *d, const int64_t *symval, uint64_t *at);
void fe_draws_free(fe_draws *d);
/* One run of a graph with draws d: fe_draws_begin reserves their counters
 * at once (sizes with the symbols' symval, NULL for a static graph) and
 * makes them the thread's call frame until fe_draws_end. Out of memory:
 * nothing reserved (the run's first random op fails with a message). */
#define FE_DRAWS_FEW 16
typedef struct fe_draws_run {
    bool on;
    rt_rng_frame save;
    uint64_t few[FE_DRAWS_FEW], *at;
} fe_draws_run;
void fe_draws_begin(fe_draws_run *r, const fe_draws *d, const int64_t *symval);
void fe_draws_end(fe_draws_run *r);

struct fe_trace {
    ir_graph *g;
    tj_tensor **caps;      /* captured concrete tensors (retained) */
    ir_node **cap_nodes;   /* their param nodes */
    int ncaps, cap_cap;
    int nops;              /* ops recorded (for break positions) */
    ir_op last_op;
    char brk[512];         /* the first graph break, "" if none */
    bool dyn_read;         /* the model read the size of a symbolic dim */
    bool sizes_checked;    /* size reads are not recorded: the caller traces again at
                            * other sizes and keeps the graph only where both agree
                            * (a symbolic joint, aot_joint.c) */
    bool dyn_unsupported;  /* an op's rule could not follow a symbolic dim */
    char dyn_why[256];     /* the first such op and why (for explain's log) */
    const int64_t *symval; /* this call's size of each symbol (set by the caller) */
    int nsyms;
    bool failed;           /* out of memory or a graph error */
    tj_tensor *const *args; /* the function's symbolic arguments (set by the caller) */
    tj_tensor *const *examples; /* the concrete arguments they stand for, or NULL */
    int nargs;
    uint64_t exact_args;   /* bit k: as_strided read argument k as its own storage
                            * (compile.c guards whether it holds it; ops_strided.c) */
    fe_write *writes;      /* in-place writes and gradients, one per target */
    int nwrites, write_cap;
    fe_grad_guard *grad_guards;
    int nguards, guard_cap;
    fe_overwrite *ovw;     /* values replaced by in-place writes, in order */
    int novw, ovw_cap;
    uint64_t aliases;      /* storage tokens given out (fe_alias_of) */
    tj_tensor **vreads;    /* concrete tensors whose values the trace read (retained) */
    int nvreads, vread_cap;
    struct fe_segrun *seg; /* a call of a split entry (segment.c), or NULL */
    bool nosplit;          /* broke where a split call could not run it right */
    bool taped;            /* a leaf made or an op recorded on the tape while tracing:
                            * a split call's pieces keep no tape, so none */
    fe_draws draws;        /* its random ops' draws, per call (fe_rng_reserve) */
    int (*ckpt)[2];        /* node ids [lo, hi) made inside tj_checkpoint, innermost first */
    int nckpt, ckpt_cap;
    int in_ckpt;           /* tj_checkpoint blocks being traced now (nested) */
    uint64_t serial;       /* this trace's number, unique in the process (from 1) */
};

/* Starts recording on this thread into a new graph named name; NULL when out
 * of memory or when this thread already records (traces do not nest: a
 * compiled model called while tracing is inlined into the outer trace). */
fe_trace *fe_trace_begin(const char *name);
/* Stops recording and frees the trace (its graph too unless taken: set
 * tr->g = NULL first to keep it; caps are released unless taken likewise). */
void fe_trace_end(fe_trace *tr);
/* A symbolic tensor for graph input n of a trace, with example type ex and
 * the strides of example (the concrete argument; NULL: contiguous). */
tj_tensor *fe_trace_arg(fe_trace *tr, ir_node *n, const ir_type *ex, const tj_tensor *example);
/* The graph node of a value met while tracing (symbolic: its node; concrete:
 * its param, made on first meeting); NULL on error. */
ir_node *fe_trace_value(fe_trace *tr, tj_tensor *x);

/* Runs a model function (compile.c): its results in outs[0..n) (the current
 * scope's); n, or -1 with an error set. */
int fe_run_model(tj_model_fn fn, tj_model_multi_fn mfn, void *ctx, const char *name,
                 tj_tensor *const *args, int nargs, tj_tensor **outs, int max);

/* ---- the backward of compiled calls (aot.c) -------------------------------------- */
typedef struct fe_aot fe_aot;
/* The backward state of result k of a compiled model (one hold); NULL on error. */
fe_aot *fe_aot_new(tj_model_fn fn, tj_model_multi_fn mfn, void *ctx, const char *name, int k);
void fe_aot_release(fe_aot *a);
/* Puts r, result k of a compiled call on args, on the tape (compiled kind);
 * r, or NULL with an error set. */
tj_tensor *fe_aot_attach(fe_aot *a, tj_tensor *r, tj_tensor *const *args, int nargs,
                         tj_tensor *const *caps, int ncaps);
/* The backward's compiled handle (for stats and explain). */
const tj_compiled *fe_aot_compiled(const fe_aot *a);

/* ---- the partitioned backward of compiled calls (aot_joint.c) -------------------- */
typedef struct fe_joint fe_joint;
/* A symbolic entry's dims, for a joint that serves all its shapes: the
 * arguments' types with their symbols (IR_SYM(k)), each symbol's traced
 * size and least size (the entry's guards). */
typedef struct fe_joint_syms {
    const ir_type *argt;
    const int64_t *symval, *symmin;
    int nsyms;
} fe_joint_syms;
/* Traces the joint forward + backward of a model's results that require
 * grad (one tangent each) on the signature of args, whose graph entry
 * captured caps[0..ncaps), partitions it and compiles both parts. With sy,
 * on the entry's symbols: one joint then serves every shape its guards pass
 * (fe_joint_fits); where the backward cannot follow them (a gradient rule
 * reads a symbolic size) it is traced static on args' shapes, and the
 * caller makes one per shape (fe_joint_symbolic says which). argmask: bit
 * i, argument i requires grad: the backward gives its gradient too. NULL
 * with the reason in why when it cannot be used (the caller keeps aot.c's
 * backward, or runs the call eagerly); no error is left set. */
fe_joint *fe_joint_new(tj_model_fn fn, tj_model_multi_fn mfn, void *ctx, const char *name,
                       uint64_t argmask, tj_tensor *const *args, int nargs, tj_tensor *const *caps,
                       int ncaps, const fe_joint_syms *sy, char *why, size_t n);
bool fe_joint_symbolic(const fe_joint *j);
/* The least size of each symbol (symmin[0..nsyms), raised) that keeps the
 * offset symbols of g at 2 or more and its static slices of symbolic dims
 * in range (guards.c). */
void fe_graph_symbol_mins(const ir_graph *g, int64_t *symmin, int nsyms);
void fe_joint_release(fe_joint *j);
/* Runs the forward plan: its results in outs (the current scope's), those
 * that require grad on the tape as one node's outputs, with the saved
 * values; n results or -1. */
int fe_joint_call(fe_joint *j, tj_tensor *const *args, int nargs, tj_tensor *const *caps, int ncaps,
                  tj_tensor **outs);
int fe_joint_results(const fe_joint *j);
/* Whether args have the types (shapes, or sizes its symbols allow) j was
 * traced for, and argmask (bit i: argument i requires grad) is its. */
bool fe_joint_fits(const fe_joint *j, tj_tensor *const *args, int nargs, uint64_t argmask);
/* tj_explain's lines for it (shapes: name the argument types it is for), and
 * its share of tj_compiled_stats.backward. */
void fe_joint_explain(const fe_joint *j, bool shapes, FILE *f);
void fe_joint_stats(const fe_joint *j, tj_compiled_stats *out);

/* ---- writes (trace_effects.c) ---------------------------------------------------- */
/* dst <- value (value has dst's type): later reads of dst in this trace see
 * value, and the call writes it back when dst outlives the call. */
int fe_trace_write_data(fe_trace *tr, tj_tensor *dst, tj_tensor *value);
/* A call's write-back of a data write: dst <- val (val has dst's shape),
 * copied unless the plan stored it there already; dst's version is bumped
 * either way (guards and autograd see it). 0 or -1. */
int fe_write_data(tj_tensor *dst, const tj_tensor *val);
/* Whether t, a concrete tensor (a weight, or in a split call an argument or a
 * tensor an earlier piece made), was written by the trace so far: its
 * storage holds its old values until the write-back. */
bool fe_trace_written(fe_trace *tr, const tj_tensor *t);
/* Whether a write into dst would land several of its elements in one memory
 * location (a dim of stride 0 and size > 1: an expanded view; overlapping
 * as_strided windows), which copy_ refuses: by dst's strides
 * (rt_overlaps_itself), and while tracing (tr) by those of the argument the
 * call was given when dst is one or slices of one. */
bool fe_write_overlaps(fe_trace *tr, const tj_tensor *dst);
/* The gradient of concrete leaf as this trace left it: *found false when the
 * trace has not set it (the caller then reads the leaf's own, guarded). */
tj_tensor *fe_trace_grad(fe_trace *tr, const tj_tensor *leaf, bool *found);
/* Sets the traced gradient of a concrete leaf (NULL: none). */
int fe_trace_set_grad(fe_trace *tr, tj_tensor *leaf, tj_tensor *value);
/* Records that the trace read leaf's gradient from before the call. */
int fe_trace_guard_grad(fe_trace *tr, tj_tensor *leaf, tj_tensor *prior);
/* Releases the writes and guards (fe_trace_end does; callers that take them
 * set the arrays to NULL first). */
void fe_trace_writes_free(fe_trace *tr);

/* view[k] for each traced result res[k] (its node outs[k]): FE_VIEWS_INPUT
 * when it shares the storage of the argument or capture under its chain of
 * views, as it did eagerly; j when it so views result j; -1 otherwise, and
 * then a result whose node is, or views, an input or another result gets a
 * copy node in outs[k]. 0 or -1 (alias.c). */
#define FE_VIEWS_INPUT (-2)
int fe_alias_viewed(fe_trace *tr, tj_tensor *const *res, ir_node **outs, int nres, int8_t *view);
/* Results of a compiled call (outs[0..nresults), g's first outputs, run on
 * inputs) that viewed an input or another result eagerly (view, from
 * fe_alias_viewed) become views of that tensor, as eagerly (alias.c). */
void fe_alias_results(const ir_graph *g, int nresults, const int8_t *view, tj_tensor *const *inputs,
                      tj_tensor **outs);
/* freeze.c: folds the nodes of g that read only its params (caps, in
 * order) into constants: 1 with *out a new graph whose params are, in
 * order, (*src)[i] >= 0: the weight caps[(*src)[i]], or -1: the folded value
 * (*consts)[i] (refs 1); 0 when nothing folds; -1 with an error.
 * *nbn: the batch norms folded into the conv/linear/matmul before them. */
int fe_freeze_graph(const ir_graph *g, tj_tensor *const *caps, ir_graph **out, tj_tensor ***consts,
                    int **src, int *nconsts, int *nbn);
/* Records the graph break of a write into a view it cannot functionalize. */
void fe_trace_view_write_break(fe_trace *tr);
/* Records that the op nodes of ids [lo, hi) were made inside tj_checkpoint
 * (the partition computes them again in the backward). */
void fe_trace_mark_checkpoint(fe_trace *tr, int lo, int hi);
/* The region of each op node of tr's graph (0: none; a nested checkpoint is
 * part of its outermost), in a new array of g->nnodes entries, or NULL when
 * there is none (or out of memory: tr->failed). */
int *fe_trace_checkpoint_regions(const fe_trace *tr);
/* Records a graph break (the first wins) for why; the call then runs eagerly
 * (no split: what follows may depend on eager state). */
void fe_trace_break(fe_trace *tr, const char *why);
/* The serial of the trace this thread records, 0 when none: host state a
 * traced function sets (its C code runs once, at trace time) belongs to
 * that trace, and a trace that broke leaves it behind. */
uint64_t fe_trace_serial(void);
/* While tracing: a graph break for tj_<what> (an optimizer, a group, a
 * scaler, an average: state kept across calls, which a traced call cannot
 * make), and true; the caller returns without making it. */
bool fe_trace_refuse_state(const char *what);
/* Stops and restarts recording on this thread (an eager step inside a trace). */
void fe_trace_pause(fe_trace *tr);
void fe_trace_resume(fe_trace *tr);

/* ---- graphs split at breaks (segment.c) -------------------------------------------- */
typedef struct fe_split fe_split;     /* an entry's compiled pieces */
typedef struct fe_segrun fe_segrun;   /* one call of it */
fe_split *fe_split_new(const char *name);
void fe_split_free(fe_split *sp);
/* Runs the model on args as pieces split at its breaks: n results in outs
 * (the current scope's), or -1 with an error set. */
int fe_split_call(fe_split *sp, tj_model_fn fn, tj_model_multi_fn mfn, void *ctx,
                  tj_tensor *const *args, int nargs, tj_tensor **outs, int max);
/* Hooks of trace.c while tr->seg is set: a symbolic tensor made (tracked;
 * parent: the tensor it views when a view op made it, else NULL);
 * a concrete tensor read (its piece outputs it from now on); a tensor whose
 * values are needed by what, symbolic or a concrete one the piece wrote
 * (fe_trace_written) (the piece so far runs; t gets its values, the writes
 * land; 0 or -1); a random op (run eagerly on values). */
int fe_seg_track(fe_trace *tr, tj_tensor *t, tj_tensor *parent);
void fe_seg_used(fe_trace *tr, const tj_tensor *t);
int fe_seg_values(fe_trace *tr, tj_tensor *t, const char *what);
/* A write into a view of a traced tensor (not a slice of a weight or an
 * argument) in a split call: a break. The piece so far runs, the tensor
 * under dst's views (the base, by the views fe_seg_track recorded) gets a
 * storage of its own if another tensor shares it, the views of it the
 * program holds are made again on it, and the write runs eagerly, seen
 * through them all as in eager. 0 or -1. */
int fe_seg_view_write(fe_trace *tr, tj_tensor *dst, tj_tensor *value);
/* Whether t (concrete: an argument or a tensor an earlier piece made) shares
 * its storage with other tensors of this split call, by the views it
 * recorded: a live header views t, or t is a view of another tensor. A
 * write into t must then run eagerly (fe_seg_view_write): the others, values
 * of their own after their pieces (t among them), read it through storage. */
bool fe_seg_shares_storage(fe_trace *tr, tj_tensor *t);
tj_tensor *fe_seg_eager(fe_trace *tr, ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a);

typedef struct fe_split_info {
    int graphs, breaks, kernels, compiled;   /* pieces, those ending at a break, their kernels,
                                              * pieces built as kernels */
    unsigned long runs, executor_runs, late, eager_ops;
} fe_split_info;
void fe_split_stats(fe_split *sp, fe_split_info *out);
void fe_split_explain(fe_split *sp, FILE *f);

#endif
