/* autograd.h - internal to the frontend: the tape (autograd.c) and the
 * vector-Jacobian products of the ops (vjp*.c).
 *
 * Every op goes through fe_apply; when grad mode is on and an input requires
 * grad, fe_ag_record adds a node to the tape: the op, its attributes, the
 * inputs and the result, saved as detached headers (same storage or the same
 * traced value, no autograd state), and where each input's gradient goes (the
 * node that made the input, or the leaf itself). tj_backward walks the nodes
 * reachable from a result in reverse creation order and calls each op's VJP.
 *
 * A VJP is written in tjit ops (the public entry points), so the same rule
 * runs eagerly and, while a trace is recording, becomes the backward graph.
 * The table of VJPs is generated from ir/ops.def: every row must define
 * ag_vjp_<name> (vjp*.c) or the build fails.
 */
#ifndef TJ_FE_AUTOGRAD_H
#define TJ_FE_AUTOGRAD_H

#include "fe.h"

/* What a VJP sees. in[k] and out are the saved values; need[k] says whether
 * input k wants a gradient (a float input that requires grad). */
typedef struct ag_ctx {
    ir_op op;
    const ir_attrs *a;
    int nin;
    tj_tensor *const *in;
    tj_tensor *out;
    const bool *need;
} ag_ctx;

/* Sets gx[k] for each k with need[k] to the gradient of input k given the
 * gradient gy of the result (in the current scope; NULL when the input gets
 * no gradient). A gradient may have the result's broadcast shape or dtype:
 * the tape sums it over broadcast dims and casts it to the input's type.
 * Returns 0, or -1 with an error set. */
typedef int (*ag_vjp_fn)(const ag_ctx *c, tj_tensor *gy, tj_tensor **gx);

/* An op's gradient rule: its VJP, or why it has none (its result is never
 * differentiable: integer or bool results, or no inputs). */
typedef struct ag_rule {
    ag_vjp_fn vjp;
    const char *nondiff;
} ag_rule;

/* Every row of ops.def defines ag_rule_<name> with AG_VJP or AG_NONDIFF (in
 * vjp*.c); a row without one is a link error. */
#define OP(name, kind, nmin, nmax, decomp, attrs) extern const ag_rule ag_rule_##name;
#include "../ir/ops.def"
extern const ag_rule *const ag_rules[IR_NUM_OPS];

#define AG_VJP(name)                                                                  \
    static int ag_vjp_##name(const ag_ctx *c, tj_tensor *g, tj_tensor **gx);          \
    const ag_rule ag_rule_##name = {ag_vjp_##name, NULL};                             \
    static int ag_vjp_##name(const ag_ctx *c, tj_tensor *g, tj_tensor **gx)
#define AG_NONDIFF(name, why) const ag_rule ag_rule_##name = {NULL, why};

/* In a VJP: sets gx[k] to expr when input k needs a gradient; returns -1
 * from the VJP when expr fails. */
#define AG_SET(k, expr)                                                               \
    do {                                                                              \
        if (c->need[k] && !(gx[k] = (expr)))                                          \
            return -1;                                                                \
    } while (0)

/* Records op (inputs in, result r just made) on the tape when grad mode is on
 * and an input requires grad. Returns r, or NULL (error set; r stays in its
 * scope) when out of memory. */
tj_tensor *fe_ag_record(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                        tj_tensor *r);
/* A compiled backward (compile.c): given the saved tensors of a compiled
 * call and the gradients g of its results on the tape, sends the gradients
 * to the leaves (accumulating into .grad). Runs with grad mode on. 0 or -1
 * (error set). */
typedef struct fe_ag_compiled {
    /* in[0..nsaved) the saved tensors, in[nsaved..nsaved+nwatch) the watched;
     * g[k] the gradient of result k (NULL: none reached it); gargs[0..nargs)
     * (NULL each) gets the gradients of the arguments that require grad, sent
     * on like any node's (in the current scope) */
    int (*run)(void *ctx, tj_tensor *const *in, int nsaved, int nwatch, tj_tensor *const *g,
               tj_tensor **gargs);
    void (*release)(void *ctx);   /* drops the node's hold on ctx */
} fe_ag_compiled;
/* Puts r[0..nr) (a compiled call's results, fresh tensors) on the tape as
 * the outputs of one node of the compiled-backward kind (a backward reaching
 * any of them runs it once, with the gradients of all): it holds saved[0..nsaved) (retained, their
 * versions checked at backward; the first nargs are the call's arguments, the
 * rest values its forward saved), watch[0..nwatch) (the captured weights the
 * backward reads again: retained, versions checked, except those unread
 * marks: a weight the call wrote that the backward does not read; unread may
 * be NULL), both passed to kind->run, and ctx (one hold, released with the
 * node; also on failure). The arguments that require grad get the gradients
 * kind->run gives them. 0, or -1 (error set). */
int fe_ag_record_compiled(tj_tensor *const *r, int nr, tj_tensor *const *saved, int nsaved, int nargs,
                          tj_tensor *const *watch, int nwatch, const bool *unread,
                          const fe_ag_compiled *kind, void *ctx);
/* The backward from several roots ys[0..n) at once, each with its seed
 * (seeds or seeds[k] NULL: ones, for one element), as tj_backward_seed does
 * one: every node they reach runs once. 0 or -1 (error set). */
int fe_ag_backward_roots(tj_tensor *const *ys, tj_tensor *const *seeds, int n);
/* For each of leaves[0..nl): bit r of reach[l], the backward from root ys[r]
 * (r < 64) would reach it (a recorded node takes it as an input that needs
 * a gradient), as eager's does. 0 or -1 (out of memory). */
int fe_ag_reach(tj_tensor *const *ys, int n, tj_tensor *const *leaves, int nl, uint64_t *reach);
/* Whether grad mode is on and a float input of in[0..nin) requires grad. */
bool fe_ag_wants_grad(tj_tensor *const *in, int nin);
/* Whether this thread runs a tj_checkpoint block (its forward, or its run
 * again for a backward): a compiled call there runs its function eagerly. */
bool fe_ag_checkpointing(void);
/* Whether t requires grad (a leaf marked so, or made by a recorded op). */
bool fe_ag_requires_grad(const tj_tensor *t);
/* Whether t is a leaf that requires grad (marked so, made by no recorded op). */
bool fe_ag_is_leaf(const tj_tensor *t);
/* An in-place write of src to dst is about to happen: fails (-1, error set)
 * while grad mode is on when dst is a leaf that requires grad or a view of
 * one, or a view made in no-grad mode and src requires grad; else bumps
 * nothing and returns 0. The writer bumps the storage version after writing. */
int fe_ag_check_inplace(const tj_tensor *dst, const tj_tensor *src, const char *what);

/* r, the result of view op (attributes a) on x, made: when it shares x's
 * storage and is float, it is marked made in no-grad mode (or a view of such
 * a view). Made in grad mode while x has no history, an eager r keeps a weak
 * reference to the tensor under its chain of views (view_of) and the gen of
 * that tensor's history it saw; a traced r (of a traced x) its lineage, as
 * fe_ag_record gives the views of tensors with history. So a write through
 * it, or into its base, gives the other a history (autograd.c). 0 or -1 (out
 * of memory). */
int fe_ag_view_made(ir_op op, const ir_attrs *a, tj_tensor *r, tj_tensor *x);

/* A write of value over the whole of dst happened: dst's history becomes
 * value's (the gradient of dst goes to what made value; dst's old value gets
 * none), as PyTorch's copy_ does. When dst is a view with a lineage
 * (fe_ag_is_view), its base's history becomes a CopySlices node instead:
 * the view's part of the base's gradient goes to value, the rest to the
 * base's old history, and every view of the base read afterwards takes its
 * history from that. Nothing in no-grad mode or when neither has a history.
 * 0 or -1 (out of memory). */
int fe_ag_rebase(tj_tensor *dst, const tj_tensor *value);

/* Whether t is a view with a lineage (autograd_views.c): a write into it
 * rebases its base's history (fe_ag_rebase). */
bool fe_ag_is_view(const tj_tensor *t);

/* Adds g (leaf's shape and dtype) into leaf's gradient: in place when it has
 * one, else a fresh copy; while tracing, into the trace's gradient. 0 or -1. */
int fe_ag_accumulate(tj_tensor *leaf, tj_tensor *g);
/* As fe_ag_accumulate, for a TJ_CREATE_GRAPH backward: a gradient with a
 * history becomes the .grad itself (the sum recorded), not a copy. */
int fe_ag_accumulate_graph(tj_tensor *leaf, tj_tensor *g);

/* Sets leaf's gradient to g (copied into the current one in place when it
 * has one of g's type, else a fresh copy). 0 or -1. */
int fe_ag_set_grad(tj_tensor *leaf, tj_tensor *g);
/* Makes g leaf's gradient, as it is, when nothing else holds g or its storage
 * (a plan's fresh output): the old gradient is dropped, not written (PyTorch's
 * zero_grad(set_to_none) then backward); else fe_ag_set_grad. 0 or -1. */
int fe_ag_take_grad(tj_tensor *leaf, tj_tensor *g);

/* Whether leaf has a ready-hook (tj_set_grad_hook). */
bool fe_ag_has_hook(const tj_tensor *leaf);
/* Around a compiled call that sets hooked gradients: fe_ag_set_grad inside
 * runs a leaf's hook (once) as a backward would. begin returns what end
 * restores (calls nest). */
uint64_t fe_ag_hooks_begin(void);
/* A compiled backward node, while it runs, gave leaf its last part: the
 * leaf's ready-hook runs now (once) when no other node is still to send one. */
int fe_ag_part_final(tj_tensor *leaf);
void fe_ag_hooks_end(uint64_t outer);

/* ---- helpers shared by the VJP files --------------------------------------------- */
/* Sizes in gradient rules. A rule traced on symbolic dims (a symbolic
 * joint, aot_joint.c) must not compute with the example's sizes: these
 * follow x's symbols where it has them (in a trace: its graph type), and are
 * the plain sizes otherwise (eagerly, statically traced). A rule that still
 * reads a size makes the joint static (aot_joint.c checks the graph at two
 * sizes). */
/* g summed over the dims broadcasting added to x's shape. */
tj_tensor *ag_sum_to(tj_tensor *g, const tj_tensor *x);
/* g broadcast to x's shape (g's dims are 1 or x's). */
tj_tensor *ag_expand_to(tj_tensor *g, const tj_tensor *x);
/* Zeros of x's shape (an expanded 0-dim zero of dtype dt). */
tj_tensor *ag_zeros_of(const tj_tensor *x, tj_dtype dt);
/* g (x's element count) reshaped to x's shape. */
tj_tensor *ag_reshape_to(tj_tensor *g, const tj_tensor *x);
/* Counts of elements: fe_count (fe.h). */
/* A 0-dim constant of t's dtype. */
tj_tensor *ag_const(const tj_tensor *t, double v);
/* g where mask, else 0 (mask bool, broadcast). */
tj_tensor *ag_masked(tj_tensor *g, tj_tensor *mask);
/* g, of a reduction's result, with the reduced dims put back (size 1) when
 * the reduction dropped them, then broadcast to x's shape (ag_expand_to). */
tj_tensor *ag_unreduce(tj_tensor *g, const ir_attr *dims, bool keepdim, const tj_tensor *x);
/* g padded with zeros along dim: before, after (both >= 0). */
tj_tensor *ag_pad_dim(tj_tensor *g, int dim, int64_t before, int64_t after);
/* g with step-1 zeros between its elements along dim: n -> (n-1)*step+1. */
tj_tensor *ag_interleave(tj_tensor *g, int dim, int64_t step);
/* Places g (a slice along dim from start with step) into zeros that are len
 * long along dim: the adjoint of a strided slice. */
tj_tensor *ag_unslice(tj_tensor *g, int dim, int64_t start, int64_t step, int64_t len);
/* The same for a slice of x along dim from start (the slice's attribute:
 * negative from the back) by step, following a symbolic dim of x (step 1). */
tj_tensor *ag_unslice_of(tj_tensor *g, const tj_tensor *x, int dim, int64_t start, int64_t step);

/* ---- views (autograd_views.c) ------------------------------------------------------ */
/* A copy of t's header (its storage, or its traced value) without autograd
 * state; refs 1, in no scope. */
tj_tensor *ag_detached(const tj_tensor *t);

/* How a view was made from its base: the last op of its chain, and the
 * lineage of that op's input (parent; NULL when the input is the base).
 * Shared by the view's state, its views' lineages and the CopySlices nodes
 * of writes through it (counted). It does not hold the base: the base's
 * history holds the CopySlices node, which holds this. */
typedef struct ag_view ag_view;
struct ag_view {
    atomic_int refs;
    ag_view *parent;         /* retained, or NULL */
    int depth;               /* ops in the chain */
    bool ok;                 /* its write can be differentiated (not: as_strided
                              * of a base that does not hold its storage) */
    ir_op op;
    ir_attrs attrs;
    tj_tensor *in;           /* a detached header of the op's input */
    int ndim;                /* the view's shape */
    int64_t shape[TJ_MAX_DIMS];
};

/* Whether r, the result of a view op of x, shares x's storage (not: a
 * reshape that copied). */
bool ag_view_shares(const tj_tensor *r, const tj_tensor *x);
/* The lineage of r, the result of view op `op` (attributes a) of x: x's
 * (parent, NULL when x is no view) and one more op; base is the chain's
 * base, xd a detached header of x (retained). NULL when out of memory
 * (error set). */
ag_view *ag_view_extend(ag_view *parent, const tj_tensor *base, tj_tensor *xd, ir_op op,
                        const ir_attrs *a, const tj_tensor *r);
/* v's chain from the base, first op first: few when it has room (nfew),
 * else an allocation the caller frees; NULL when out of memory (error set). */
const ag_view **ag_view_chain(const ag_view *v, const ag_view **few, int nfew);
void ag_view_release(ag_view *v);
/* g (the base's shape) read through the view: the view's part of it. */
tj_tensor *ag_view_replay(const ag_view *v, tj_tensor *g);
/* g with zeros on the view's elements. */
tj_tensor *ag_view_outside(const ag_view *v, tj_tensor *g);

#endif
