/* sched_int.h - internal to the plan files: the structures of a compiled plan
 * and what plan.c (steps, compiling, running), mem.c (memory: lifetimes,
 * in place, the arena), reinplace.c (outputs stored into the inputs they are
 * written back to) and block.c (blocked regions: a GEMM and its epilogue
 * block by block) share.
 *
 * Values are numbered in slots (ir_slot: graph inputs first, then node k at
 * ninputs + k), like the graph executor's. A slot is *materialized* by the step that
 * writes it (a kernel's stores, an eager call's result); a view slot lives in
 * its owner's memory (the materialized slot or input its view chain ends at).
 * Each materialized slot writes a *buffer*; a slot written in place over a
 * dying input shares that input's buffer; one stored into a graph input
 * (SC_INPUT) writes that input's memory.
 */
#ifndef TJ_SC_INT_H
#define TJ_SC_INT_H

#include "../codegen/jit.h"
#include "../codegen/lower.h"
#include "../passes/fuse.h"
#include "../runtime/profile.h"
#include "sched.h"

typedef enum { S_KERNEL, S_EAGER, S_VIEW } skind;

typedef struct step {
    skind kind;
    int node;             /* EAGER, VIEW */
    int group;
    cg_launch *launch;    /* KERNEL */
    cg_kernel_fn fn;
    int region;           /* the blocked region it belongs to, or -1 */
    int64_t tq;           /* KERNEL in a region: tiles per block unit (block.c) */
    signed char slice[3][TJ_MAX_DIMS];   /* EAGER in a region: per input, the dim cut by
                                          * each block dim, or -1 (not cut) */
    rt_prof_id prof_name;                /* the profiler's (prof.c): name, bytes, flops */
    int64_t prof_bytes, prof_flops;
} step;

/* Where a buffer lives during a call. */
typedef enum {
    SC_ARENA,     /* at `offset` in the call's arena (one rt_alloc block per call) */
    SC_OWN,       /* its own allocation: a graph output (or what one views); the caller owns it */
    SC_SCRATCH,   /* inside one blocked region only: a block's part, in that block's scratch */
    SC_UNPLANNED, /* made by rt_eager (a reshape that copies) */
    SC_INPUT      /* a graph output stored into graph input `region`'s memory (reinplace.c) */
} sc_where;

typedef struct sc_buf {
    int64_t bytes;        /* a multiple of 64 (SC_SCRATCH: per block) */
    int64_t offset;       /* SC_ARENA: from the arena's start; SC_SCRATCH: from the scratch's */
    int first, last;      /* the step writing it first and the last step reading it */
    sc_where where;
    int region;           /* SC_SCRATCH: its region; SC_INPUT: the input slot */
} sc_buf;

/* A run of steps executed block by block: block b computes a slice of every
 * value the region makes (their dims [0, nd) are the block dims): one index
 * of each of dims [0, nd-1) and `chunk` indices of dim nd-1. Its steps are
 * one or more eager calls (matmul, conv2d) on slices of their inputs, each
 * followed by its epilogue kernel on the matching tiles. */
typedef struct sc_region {
    int first, last;              /* steps */
    int nd;
    int64_t size[TJ_MAX_DIMS];    /* sizes of the block dims */
    int64_t chunk, nq, nblocks;   /* nq: block units (product of the sizes) */
    int64_t scratch_bytes;        /* per thread: the SC_SCRATCH buffers of one block */
    rt_prof_id prof_name;         /* the profiler's (prof.c) */
    int64_t prof_bytes, prof_flops;
} sc_region;

/* A matmul step's fused epilogue (epi.c): kernel step kstep (the next) is
 * act(value + slot bias's [n]); kstep -1: none. */
typedef struct sc_epi {
    int kstep, bias;
    signed char act;   /* a tjg_act */
    bool f32;          /* f32 GEMMs take it too (TJIT_GEMM_EPILOGUE=1), not only int8 */
} sc_epi;

/* A conv2d step of a region whose epilogue kernel and max pool run on the
 * conv's rows (cpost.c): steps up to pstep skipped when its row kernel
 * runs it. pstep -1: none. */
typedef struct sc_cpost {
    int pstep;
    int scale, shift;   /* slots of f32 values of one element per channel; -2: the
                         * constant below (a scalar or full the kernel inlines); -1: none */
    float cscale, cshift;
    bool relu;
} sc_cpost;

typedef struct sc_plan {
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
    /* memory (mem.c) */
    int *owner;           /* per slot: the slot whose memory it is in, -1: none */
    int *def;             /* per slot: the step that materializes it, or -1 */
    bool *unplanned;      /* per slot: materialized by rt_eager (a reshape that copies) */
    int *inplace_of;      /* per slot: the slot whose buffer it writes in place, or -1 */
    int *into;            /* per slot: the graph input it is stored into (reinplace.c), or
                           * -1; NULL: none */
    unsigned char *par;   /* per step, on 2 threads (pair.c): SC_PAR_PAIR: it runs at once with
                           * the next step; SC_PAR_SPLIT: its GEMM in column blocks on
                           * the pool; NULL: neither anywhere */
    int ntail;            /* the last ntail steps are the kernels storing into inputs */
    int *in_grp;          /* per input: the first input sharing memory with it (itself
                           * when none), as when built; NULL: built without storing into
                           * inputs (sc_plans_set_into) */
    int *buf_of;          /* per materialized slot: its buffer, or -1 */
    sc_buf *bufs;
    int nbufs;
    sc_plan_mem mem;
    sc_region *regions;
    int nregions;
    sc_epi *epi;          /* per step (epi.c), or NULL: no fused epilogue */
    sc_cpost *cpost;      /* per step (cpost.c), or NULL: no conv takes its pool */
    int conv_pools;       /* pools run inside a conv's region (block.c) */
    char pool_notes[1024]; /* block.c: each pool after a conv region, fused or why not */
    int64_t prof_bytes, prof_flops;   /* the steps' sums (prof.c) */
} sc_plan;

/* What plan_build has at hand while it builds a plan. */
typedef struct builder {
    const ir_graph *g;
    const ir_fusion *f;
    sc_plan *p;
    int cap;
    bool *force_eager;    /* per group */
    bool *done;           /* per slot: has a producing step */
    bool failed;
} builder;

/* ---- mem.c -------------------------------------------------------------------------- */
/* Sets p->owner and p->last_use for the steps as they are. 0, or -1 when out of memory. */
int sc_mem_lifetimes(const ir_graph *g, sc_plan *p);
/* Rewrites kernels that can store a result over an input dying there
 * (before they are compiled). 0 or -1 (out of memory). */
int sc_mem_inplace(const ir_graph *g, sc_plan *p);
/* Re-inplacing (reinplace.c): graph output j may be stored into graph input
 * into[j] (>= 0; the caller writes it back there after the call); grp: per
 * input, the first input sharing memory with it (sc_input_groups), whose
 * reads count as reads of it. Where that is safe, the kernel computing the
 * output stores it there (loads of the input read the same memory,
 * cg_launch_alias) and moves to the plan's tail. Sets p->into and p->ntail
 * (cleared when into or grp is NULL). 0 or -1 (out of memory). */
int sc_mem_reinplace(const ir_graph *g, sc_plan *p, const int *into, const int *grp);
/* grp[k] for inputs[0..n): the first input whose storage's bytes overlap
 * input k's, through any chain of overlaps (k itself when none). 0, or -1
 * when out of memory. */
int sc_input_groups(tj_tensor *const *inputs, int n, int *grp);
/* Buffers, their places and the stats (after the steps are final). */
int sc_mem_plan(const ir_graph *g, sc_plan *p);
void sc_mem_free(sc_plan *p);

/* One call's memory. */
typedef struct sc_call_mem {
    tj_tensor *const *inputs;   /* the call's graph inputs (SC_INPUT buffers) */
    char *arena;
    rt_storage *hdr;      /* per buffer: a header over its arena bytes */
    tj_tensor **own;      /* per buffer: the SC_OWN allocation, made when first written */
    bool leaked;
} sc_call_mem;
int sc_mem_begin(const sc_plan *p, sc_call_mem *m, tj_tensor *const *inputs);
/* The tensor of materialized slot `slot` (refs 1): a contiguous view of its
 * buffer. NULL with an error when out of memory. */
tj_tensor *sc_mem_tensor(const sc_plan *p, sc_call_mem *m, int slot);
void sc_mem_end(const sc_plan *p, sc_call_mem *m);
/* The plan's text (malloc'd): its steps and what each writes; once the
 * memory plan is made, the buffers too (TJIT_DUMP=lower, ..., memory: plan.c). */
char *sc_plan_print(const ir_graph *g, const sc_plan *p);

/* For export (aot_save.c): the graph ps's plans run and up to max of the
 * plans built so far (one per input signature); their count. A plan lives
 * as long as the set. */
int sc_plans_get(sc_plan_set *ps, const ir_graph **g, const sc_plan **plans, int max);

/* ---- run.c -------------------------------------------------------------------------- */
/* Runs plan p of graph g on inputs (their types are p's): outs get g's
 * outputs (refs 1, in no scope). 0, or -1 with an error naming the node. */
/* Whether inputs have p's types and strides exactly (the plan was built for them). */
bool sc_plan_matches(const sc_plan *p, tj_tensor *const *inputs);
int sc_plan_run(const ir_graph *g, const sc_plan *p, tj_tensor *const *inputs, tj_tensor **outs,
                const sc_notify *nt);   /* nt: sched.h, NULL for none */

/* Node n of g failed with message why (its eager kernel on inputs in): the
 * error naming the op, its inputs and the node. */
void sc_node_failed(const ir_graph *g, const ir_node *n, tj_tensor *const *in, const char *why);

/* ---- pair.c --------------------------------------------------------------------------- */
enum { SC_PAR_NONE, SC_PAR_PAIR, SC_PAR_SPLIT };
/* Marks, after the memory plan, adjacent independent GEMM steps that run at
 * once and GEMMs that run in column blocks on the pool (p->par); none with
 * TJIT_INTEROP=0, no column blocks with TJIT_GEMM_SPLIT=0. 0 or -1 (out of
 * memory). */
int sc_plan_pairs(const ir_graph *g, sc_plan *p);
/* Runs step i (p->par[i]) and, for a pair, step i+1 on two threads; returns
 * the last step run, or -1 with an error. */
int sc_pair_run(const ir_graph *g, const sc_plan *p, int i, tj_tensor **vals, sc_call_mem *m);
/* GEMMs run in column blocks so far, by any plan of the process (tests). */
uint64_t sc_split_count(void);

/* ---- epi.c ---------------------------------------------------------------------------- */
/* Marks matmul steps whose epilogue kernel (the next step) is a bias and an
 * activation that tjit's GEMM can apply (p->epi); none with
 * TJIT_GEMM_EPILOGUE=0. 0 or -1 (out of memory). */
int sc_plan_epilogues(const ir_graph *g, const ir_fusion *f, sc_plan *p);

/* ---- cpost.c -------------------------------------------------------------------------- */
/* Marks conv2d steps of regions whose epilogue and max pool can run on the
 * conv's rows (p->cpost); none with TJIT_CONV_POST=0. 0 or -1 (out of
 * memory). */
int sc_plan_conv_posts(const ir_graph *g, const ir_fusion *f, sc_plan *p);

/* ---- block.c -------------------------------------------------------------------------- */
/* Adds "; text" to the plan's notes on pools after convs (cut where they run out). */
void sc_pool_note(sc_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Finds blocked regions among the steps (moving steps that do not depend on
 * a region to before it) and sets up their steps. 0 or -1 (out of memory). */
int sc_block_regions(builder *b);
/* Runs region r (its values' tensors that live outside it exist in vals). */
int sc_block_run(const ir_graph *g, const sc_plan *p, int r, tj_tensor **vals, sc_call_mem *m);

/* ---- prof.c ---------------------------------------------------------------------------- */
/* The profiler's name, bytes and flops of every step, region and the plan
 * (once the plan is final). */
void sc_prof_plan(const ir_graph *g, const ir_fusion *f, sc_plan *p);
/* Around step i of a run (a region's first step: the whole region); not for views. */
int64_t sc_prof_start(const sc_plan *p, int i, rt_prof_id *prev);
void sc_prof_stop(const sc_plan *p, int i, int64_t t0, rt_prof_id prev);

#endif
