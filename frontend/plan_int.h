/* plan_int.h - internal to the plan files: the structures of a compiled plan
 * and what plan.c (steps, compiling, running), plan_mem.c (memory: lifetimes,
 * in place, the arena) and plan_block.c (blocked regions: a GEMM and its
 * epilogue block by block) share.
 *
 * Values are numbered in slots like the graph executor's: graph inputs first,
 * then node k at ninputs + k. A slot is *materialized* by the step that
 * writes it (a kernel's stores, an eager call's result); a view slot lives in
 * its owner's memory (the materialized slot or input its view chain ends at).
 * Each materialized slot writes a *buffer*; a slot written in place over a
 * dying input shares that input's buffer.
 */
#ifndef TJ_FE_PLAN_INT_H
#define TJ_FE_PLAN_INT_H

#include "../codegen/jit.h"
#include "../codegen/lower.h"
#include "../passes/fuse.h"
#include "plan.h"

typedef enum { S_KERNEL, S_EAGER, S_VIEW } skind;

typedef struct step {
    skind kind;
    int node;             /* EAGER, VIEW */
    int group;
    cg_launch *launch;    /* KERNEL */
    cg_kernel_fn fn;
    int region;           /* the blocked region it belongs to, or -1 */
    int64_t tq;           /* KERNEL in a region: tiles per block unit (plan_block.c) */
    signed char slice[3][TJ_MAX_DIMS];   /* EAGER in a region: per input, the dim cut by
                                          * each block dim, or -1 (not cut) */
} step;

/* Where a buffer lives during a call. */
typedef enum {
    FE_ARENA,     /* at `offset` in the call's arena (one rt_alloc block per call) */
    FE_OWN,       /* its own allocation: a graph output (or what one views); the caller owns it */
    FE_SCRATCH,   /* inside one blocked region only: a block's part, in that block's scratch */
    FE_UNPLANNED  /* made by fe_eager (a reshape that copies) */
} fe_where;

typedef struct fe_buf {
    int64_t bytes;        /* a multiple of 64 (FE_SCRATCH: per block) */
    int64_t offset;       /* FE_ARENA: from the arena's start; FE_SCRATCH: from the scratch's */
    int first, last;      /* the step writing it first and the last step reading it */
    fe_where where;
    int region;           /* FE_SCRATCH */
} fe_buf;

/* A run of steps executed block by block: block b computes a slice of every
 * value the region makes (their dims [0, nd) are the block dims): one index
 * of each of dims [0, nd-1) and `chunk` indices of dim nd-1. Its steps are
 * one or more eager calls (matmul, conv2d) on slices of their inputs, each
 * followed by its epilogue kernel on the matching tiles. */
typedef struct fe_region {
    int first, last;              /* steps */
    int nd;
    int64_t size[TJ_MAX_DIMS];    /* sizes of the block dims */
    int64_t chunk, nq, nblocks;   /* nq: block units (product of the sizes) */
    int64_t scratch_bytes;        /* per thread: the FE_SCRATCH buffers of one block */
} fe_region;

typedef struct fe_plan {
    int ninputs, nslots;
    ir_type *types;       /* per slot, concrete */
    int64_t (*in_strides)[TJ_MAX_DIMS];
    cg_geom *geom;
    step *steps;
    int nsteps;
    int *last_use;        /* per slot: the last step that reads it */
    int *rel_start, *rel; /* per step: the slots to release after it */
    int kernels, eager;
    double compile_ms;
    /* memory (plan_mem.c) */
    int *owner;           /* per slot: the slot whose memory it is in, -1: none */
    int *def;             /* per slot: the step that materializes it, or -1 */
    bool *unplanned;      /* per slot: materialized by fe_eager (a reshape that copies) */
    int *inplace_of;      /* per slot: the slot whose buffer it writes in place, or -1 */
    int *buf_of;          /* per materialized slot: its buffer, or -1 */
    fe_buf *bufs;
    int nbufs;
    fe_plan_mem mem;
    fe_region *regions;
    int nregions;
} fe_plan;

/* What plan_build has at hand while it builds a plan. */
typedef struct builder {
    const ir_graph *g;
    const ps_fusion *f;
    fe_plan *p;
    int cap;
    bool *force_eager;    /* per group */
    bool *done;           /* per slot: has a producing step */
    bool failed;
} builder;

static inline int fe_slot_of(const ir_graph *g, const ir_node *n)
{
    return ir_node_is_input(n) ? n->id : g->ninputs + n->id;
}

/* ---- plan_mem.c -------------------------------------------------------------------------- */
/* Sets p->owner and p->last_use for the steps as they are. 0, or -1 when out of memory. */
int fe_mem_lifetimes(const ir_graph *g, fe_plan *p);
/* Rewrites kernels that can store a result over an input dying there
 * (before they are compiled). 0 or -1 (out of memory). */
int fe_mem_inplace(const ir_graph *g, fe_plan *p);
/* Buffers, their places and the stats (after the steps are final). */
int fe_mem_plan(const ir_graph *g, fe_plan *p);
void fe_mem_free(fe_plan *p);

/* One call's memory. */
typedef struct fe_call_mem {
    char *arena;
    rt_storage *hdr;      /* per buffer: a header over its arena bytes */
    tj_tensor **own;      /* per buffer: the FE_OWN allocation, made when first written */
    bool leaked;
} fe_call_mem;
int fe_mem_begin(const fe_plan *p, fe_call_mem *m);
/* The tensor of materialized slot `slot` (refs 1): a contiguous view of its
 * buffer. NULL with an error when out of memory. */
tj_tensor *fe_mem_tensor(const fe_plan *p, fe_call_mem *m, int slot);
void fe_mem_end(const fe_plan *p, fe_call_mem *m);
/* The plan's text for TJIT_DUMP=plan (malloc'd). */
char *fe_mem_print(const ir_graph *g, const fe_plan *p);

/* ---- plan_block.c -------------------------------------------------------------------------- */
/* Finds blocked regions among the steps (moving steps that do not depend on
 * a region to before it) and sets up their steps. 0 or -1 (out of memory). */
int fe_block_regions(builder *b);
/* Runs region r (its values' tensors that live outside it exist in vals). */
int fe_block_run(const ir_graph *g, const fe_plan *p, int r, tj_tensor **vals, fe_call_mem *m);

#endif
