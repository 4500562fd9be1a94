/* ag_tape.h - internal to the frontend's autograd: the tape's records,
 * shared by autograd.c (recording, leaves' gradients and hooks) and
 * backward.c (the backward walk over the recorded nodes).
 */
#ifndef TJ_FE_AG_TAPE_H
#define TJ_FE_AG_TAPE_H

#include <stdatomic.h>

#include "autograd.h"

typedef struct ag_node ag_node;
typedef struct ag_ckpt ag_ckpt;

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
    ag_ckpt *ckpt;           /* made inside tj_checkpoint (retained): its saved values made
                              * there were dropped ... */
    int ckpt_k;              /* ... and come from the node made ckpt_k-th when it runs again */
    bool deferred;           /* some saved values are dropped until then */
    int nin;
    ag_input in[];
};

/* Grad mode: 0 on (tj_no_grad_begin counts up), per thread. */
extern _Thread_local int ag_no_grad_depth;

static inline ag_meta *ag_meta_of(const tj_tensor *t) { return t ? (ag_meta *)t->ag : NULL; }

static inline unsigned ag_version_of(const tj_tensor *t)
{
    return t->storage ? atomic_load_explicit(&t->storage->version, memory_order_relaxed) : 0;
}

/* Where the gradient of t (an input of a node) goes: to the node that made
 * it (its output), or into t itself, a leaf; e->need says whether it wants one. */
void ag_link_input(ag_input *e, tj_tensor *t);
/* The node that made t (made again first for a view whose base was written
 * since), or NULL: a leaf, or no history. */
ag_node *ag_fn_of(const tj_tensor *t);
/* A saved value as a tensor whose history is output out of fn (a
 * TJ_CREATE_GRAPH backward's rules record on it), in the current scope; NULL
 * when out of memory. */
tj_tensor *ag_with_history(const tj_tensor *saved, ag_node *fn, int out);
/* t itself (a fresh header: a traced backward's pinned value) given that
 * history; NULL when out of memory. */
tj_tensor *ag_give_history(tj_tensor *t, ag_node *fn, int out);
/* The checkpoint collecting the nodes this thread makes (checkpoint.c),
 * or NULL; ag_ckpt_add is called with each. */
extern _Thread_local ag_ckpt *ag_collect;
void ag_ckpt_add(ag_node *n);
/* n->deferred: its dropped saved values made again (the checkpoint's
 * function run again once, on its first such node); 0 or -1 (error set). */
int ag_ckpt_restore(ag_node *n);
void ag_ckpt_release(ag_ckpt *c);
/* Drops one hold on n (freed with its saved values at the last). */
void ag_node_release(ag_node *n);
/* Drops n's saved values after a backward ran it (a second one fails). */
void ag_node_drop_saved(ag_node *n);
/* Runs leaf's ready-hook, once per backward; 0 or -1. */
int ag_fire_hook(tj_tensor *leaf, ag_meta *m);
/* Whether the running backward wrote m's gradient and its hook has not run. */
bool ag_hook_due(const ag_meta *m);

#endif
