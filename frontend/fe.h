/* fe.h - internal to the frontend: the one path every op takes.
 *
 * fe_apply() checks inputs, computes the result type with the op's rule
 * (ir_infer, shared with tracing), runs the eager kernel or makes the view,
 * and hands the result to the caller's scope. Public entry points are thin:
 * they fill attributes and call fe_apply.
 */
#ifndef TJ_FE_H
#define TJ_FE_H

#include "../ir/ir.h"
#include "../runtime/rt.h"

/* The most inputs one op takes (cat of many tensors). */
#define FE_MAX_INPUTS 256

/* Returns the result, owned by the current scope, or NULL with an error
 * "name(f32[2,3], ...): reason". A NULL mandatory input returns NULL and
 * keeps the error that produced it. */
tj_tensor *fe_apply(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a);

/* Whether the decomposition of DCOMP row op (a MOVE: narrow, movedim, t,
 * expand_as) is a chain of views of its first input that are views whatever
 * the strides (no reshape, no as_strided), as its eager result is: a trace
 * then records those views, so that writes through the result reach the
 * input and reads of it see the input's writes. */
bool fe_decomp_is_view(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                       const ir_type *const *types);
/* While tracing: whether the decomposition of op on these inputs (types:
 * their example types) depends on the size of a symbolic dim, i.e. differs
 * when every symbolic dim is larger (narrow's negative start made absolute,
 * a reshape to the example's sizes). Such an application reads the sizes:
 * the dims specialize (fe_apply), else the example's sizes would be baked
 * into the graph's prims. */
bool fe_decomp_reads_sizes(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                           const ir_type *const *types);
/* While tracing: op applied through its decomposition built on the inputs'
 * symbolic types, when that holds no symbol in its attributes (the same
 * text with every symbol renumbered): its prims then follow the symbolic
 * dims (a tril's mask counted along them) where the decomposition at the
 * example's types reads their sizes. *tried false: not so (the caller
 * specializes); else the result, or NULL with the error. */
tj_tensor *fe_apply_decomposed_symbolic(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                                        bool *tried);
/* While tracing a DCOMP row recorded whole (no gradients): whether its
 * decomposition fails on the inputs' symbolic types (a reshape to a product of
 * sizes, a count of a symbolic dim); why gets the reason. The graph could only
 * run on the executor (it has no kernel to fall back on): the dims specialize. */
bool fe_decomp_fails_symbolic(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                              char *why, size_t n);
/* A DCOMP row (no kernel of its own) applied through its decomposition, each
 * prim through fe_apply (apply_decomp.c); types: those of in[]. */
tj_tensor *fe_apply_decomposed(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                               const ir_type *const *types);

/* ---- tracing (trace.c) ------------------------------------------------------ */
typedef struct fe_trace fe_trace;

/* The trace this thread is recording, or NULL (ops then run eagerly). */
fe_trace *fe_trace_current(void);
/* Reserves n counters for a random op (tj_rand, tj_randn, tj_dropout):
 * eagerly (or between a split call's pieces) from the global generator
 * (rt_rng_reserve); while tracing a graph, the call's next draw j
 * (RT_RNG_CALL | j; the trace keeps its type, draws.c, and each run of the
 * graph reserves all its draws at once: runtime/random.h), *seed 0. */
uint64_t fe_rng_reserve(uint64_t n, uint64_t *seed);
/* tj_manual_seed: while tracing a graph also a break (a graph would not
 * seed again on later calls; the call runs split, seeding each time). */
void fe_rng_seed(uint64_t seed);
/* Records op as a graph node (concrete inputs become params) and returns a
 * symbolic tensor for it in the current scope; NULL with the same message
 * eager execution would give when the op's rule rejects the inputs. */
tj_tensor *fe_trace_apply(fe_trace *tr, ir_op op, tj_tensor *const *in, int nin,
                          const ir_attrs *a);
/* Called by API functions that need values (tj_item, tj_data, ...): when t is
 * symbolic, records a graph break naming what (the call) and returns true. */
bool fe_trace_needs_values(const tj_tensor *t, const char *what);
/* Called when user code reads the shape of a traced tensor; a dynamic dim
 * read this way is specialized (the trace is redone with it static). */
void fe_trace_shape_read(const tj_tensor *t);
/* The same for what may follow any size of the trace, not only t's: t's
 * strides or storage offset (tj_strides, tj_offset: those of a view follow
 * its base's sizes even where its own are static, x[:, 0:1] of [3, s0] has
 * strides [s0, 1]) and a backward from t run while tracing (the gradient
 * rules compute with the sizes: a mean's count, a slice's padding). Every
 * dynamic dim of the trace specializes. */
void fe_trace_any_size_read(const tj_tensor *t);
/* An op cannot follow the trace's symbolic dims (its rule, its decomposition):
 * the trace is redone with them static; the first such reason is logged for
 * tj_explain ("an op cannot follow symbolic dims yet (...)"). */
void fe_trace_dyn_unsupported(fe_trace *tr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* t's type as the trace sees it: the symbolic type of a traced tensor
 * (symbolic dims compare as symbols, no size is read), else t's own. */
void fe_trace_type(const tj_tensor *t, ir_type *ty);
/* A symbolic t as its value is now, unmoved by later writes into its storage
 * (a new header of the current scope; t itself when not symbolic or not
 * tracing): what a traced backward reads of a saved tensor, as AOTAutograd's
 * functionalized graph does, where eager autograd would refuse a value
 * written since it was saved. NULL out of memory. */
tj_tensor *fe_trace_pinned(const tj_tensor *t);
/* Sizes that follow symbolic dims while tracing, read from the arguments
 * (which every plan has) rather than from a value that would have to be
 * kept for its shape. fe_sym_full: a tensor of dtype dt, rank dims, all 1
 * but dim `at`, of symbolic size dim (sK, sK-C or sK+C), filled with value; NULL
 * where no argument has the symbol (or outside a trace). fe_count: the
 * element count of x's dims in mask as a 0-dim tensor of dtype dt; where
 * one is symbolic, a product of sums of ones (in f64: exact), else
 * tj_scalar of the number. */
tj_tensor *fe_sym_full(int64_t dim, int rank, int at, double value, tj_dtype dt);
tj_tensor *fe_count(const tj_tensor *x, uint32_t mask, tj_dtype dt);

/* A wrapped scalar (weak type) for the _s ops: i64 for integral values
 * combined with integer tensors, else f64. Owned by the current scope. */
tj_tensor *fe_wrap_scalar(double v, const tj_tensor *like);

/* ---- autocast (autocast.c) ---------------------------------------------------- */
/* The dtype of this thread's innermost tj_autocast scope; TJ_F32 when none. */
tj_dtype fe_autocast_dtype(void);
/* Inside a scope: op's inputs with autocast's casts applied, in cast[0..nin)
 * (results of cast ops, owned by the current scope). Returns how many were
 * cast (0: use in as it is), or -1 with a cast's error. */
int fe_autocast_inputs(ir_op op, tj_tensor *const *in, int nin, tj_tensor **cast);

#endif
