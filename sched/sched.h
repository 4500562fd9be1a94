/* sched.h - the scheduling floor: running a captured graph as compiled
 * kernels plus eager calls (plan.c).
 *
 * A plan set belongs to one compiled entry (one traced graph). It runs the
 * pipeline of plan.c, a named list of steps: on the first call it
 * decomposes and simplifies the graph and fuses it (passes/fuse.h,
 * ir/fusion.h); per concrete input signature (shapes and strides) it builds
 * a plan: the steps in order (kernel launches, eager calls, views), every
 * kernel lowered and compiled (codegen/, kernels of one graph in parallel,
 * through the kernel cache), blocked regions and its memory plan
 * (sched_int.h). One kernel serves every size: a new size lowers again and
 * finds its kernels already loaded.
 *
 * TJIT_BACKEND=eager runs graphs on the graph executor (exec.c) instead;
 * llvm (the default) uses plans when the JIT is available.
 */
#ifndef TJ_SC_SCHED_H
#define TJ_SC_SCHED_H

#include <stdbool.h>

#include "../ir/graph.h"
#include "../runtime/rt.h"

typedef struct sc_plan_set sc_plan_set;

/* A plan set for graph g (borrowed: it must outlive the set) named name.
 * Cheap: the work happens on the first run. NULL when out of memory. */
sc_plan_set *sc_plans_new(const ir_graph *g, const char *name);
void sc_plans_free(sc_plan_set *ps);

/* Runs g on inputs[0..g->ninputs) as compiled code: outs get g's outputs
 * (refs 1, in no scope). Returns 0; -1 with an error set (an op failed);
 * 1 when compiled code is not used for this call (TJIT_BACKEND=eager, no
 * JIT) and the caller should run the graph executor. Thread-safe. */
int sc_plans_run(sc_plan_set *ps, tj_tensor *const *inputs, tj_tensor **outs);

/* Output watching (a compiled training step's gradients with ready-hooks,
 * docs/distributed.md): sc_plans_run_notify runs like sc_plans_run and, as
 * soon as the step that makes output outputs[i] has run (its value is final:
 * outputs are never written again), calls fn(ctx, i, value) before the next
 * step, in step order, once per watched output. value is borrowed. A nonzero
 * return stops the run (-1, the callback's error). Not called when the plan
 * is not used (return 1). */
typedef struct sc_notify {
    int n;
    const int *outputs;   /* indices into the graph's outputs */
    int (*fn)(void *ctx, int i, tj_tensor *value);
    void *ctx;
} sc_notify;
int sc_plans_run_notify(sc_plan_set *ps, tj_tensor *const *inputs, tj_tensor **outs, const sc_notify *nt);

/* Re-inplacing of written-back outputs (sched/reinplace.c). into[j] >= 0
 * says that graph output j is the new value of graph input into[j]: after
 * every successful run the caller writes it back into that input (a
 * weight's or an optimizer state's update) and keeps nothing of the input's
 * old value. Plans may then store that output straight into the input's
 * memory (the output tensor is a contiguous header over the input's
 * storage, at its offset; the caller sees that and skips its copy), when it
 * is safe: the kernel computing it is pointwise in that input (element i
 * from element i), every other read of the old value runs before it, and
 * no other input of the call shares memory with the input (checked per
 * call; a call where one does, or that watches outputs (sc_notify), runs a
 * plan without). The kernels that store into inputs run last, after the
 * memory they need is taken: a run that fails leaves every input as it was.
 * into has g's output count of entries (copied); call it before the first
 * run. 0, or -1 when out of memory. */
int sc_plans_set_into(sc_plan_set *ps, const int *into);

/* Whether TJIT_BACKEND selects the compiled backend (unset: yes). */
bool sc_backend_llvm(void);

/* What the last plan built holds (for explain and bench): kernels launched
 * per call, eager calls, and the ms its first call spent compiling. */
typedef struct sc_plan_info {
    int kernels, eager_calls;
    double compile_ms;
    bool compiled;         /* false: the set runs on the graph executor */
    char why[512];         /* ... because */
    int conv_pools;        /* max_pool2d/avg_pool2d run per image inside a conv's region */
    char pool_notes[1024]; /* each pool after a conv's region: fused, or why not (block.c) */
} sc_plan_info;
void sc_plans_info(sc_plan_set *ps, sc_plan_info *out);

/* The memory plan of the last plan built (mem.c). Per call, a plan
 * takes one arena block (rt_alloc, so cached: a steady-state call allocates
 * no fresh memory) for its intermediates, placed by lifetime; outputs (and
 * what they view) get their own allocations, owned by the caller; blocked
 * regions take block-sized scratch per thread. */
typedef struct sc_plan_mem {
    int64_t arena_bytes;     /* intermediates, reused by lifetime */
    int64_t own_bytes;       /* outputs */
    int64_t scratch_bytes;   /* blocked regions: every thread's scratch */
    int64_t peak_bytes;      /* the sum: the most a call holds at once */
    int64_t live_bound;      /* the most bytes of intermediates live at one step: no
                              * placement of them does better than this */
    int64_t unplanned_bytes; /* every materialized value on its own (no reuse) */
    int buffers, in_place, regions;
    int into;                /* outputs stored straight into graph inputs (sc_plans_set_into) */
} sc_plan_mem;
void sc_plans_mem(sc_plan_set *ps, sc_plan_mem *out);

#endif
