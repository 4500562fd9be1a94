/* fuse.h - fusion: which nodes of a graph run together as one kernel.
 *
 * ps_fuse partitions a (decomposed) graph into groups, in an order they can
 * run in:
 *
 *   PS_KERNEL_PW    a maximal pointwise chain: unary, binary, where, cast,
 *                   clamp, scalar constants; views and broadcasts between its
 *                   nodes are index arithmetic. One loop over the domain.
 *   PS_KERNEL_ROWS  reductions over the innermost dims (sum, prod, amax, amin, var)
 *                   with the pointwise ops before them and after them that
 *                   stay in the same row: softmax (amax, sub, exp, sum, div)
 *                   and layer_norm are one group each.
 *   PS_EAGER        one node run by its eager kernel (matmul, gather, ...).
 *   PS_VIEW         one view node of a materialized value: no work, its
 *                   strides fold into the loads of whoever reads it.
 *   PS_CONST        a scalar or full constant: kernels inline its value; it
 *                   is made only when an eager call or the result needs it.
 *
 * Epilogues: a kernel group that is the only reader of a matmul or conv2d
 * output, reads it at its own index (the group's domain is that output's
 * shape), and that output is not the graph's result: the kernel finishes
 * that output. The eager group is placed right before it and the plan runs
 * the two as one step (the GEMM, then the kernel over the output while it is
 * in cache, in place where it can; sched/sched.h).
 *
 * Epilogues: a kernel group that is the only reader of a matmul or conv2d
 * output, reads it at its own index (the group's domain is that output's
 * shape) and is not the graph's result, finishes that output: the eager group
 * is placed right before it, and the plan runs the two as one step (the GEMM,
 * then the kernel over the output while it is in cache, in place where it
 * can; sched/sched.h).
 *
 * Within a kernel group every node is evaluated at one index map from the
 * group's domain: for each of the node's dims, the domain dim it follows or
 * -1 (a broadcast dim, index 0). Nodes are either full (every domain dim of
 * size > 1), row values (exactly the outer dims; ROWS only) or scalars; a
 * node that would be recomputed along broadcast dims is not fused. A node is
 * stored when something outside its group (or the graph's result) reads it.
 *
 * Each decision not to fuse leaves a reason, shown by ps_fusion_print
 * (`TJIT_DUMP=fused`, `tjit opt --emit=fused`).
 */
#ifndef TJ_PASSES_FUSE_H
#define TJ_PASSES_FUSE_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir/graph.h"

typedef enum { PS_KERNEL_PW, PS_KERNEL_ROWS, PS_EAGER, PS_VIEW, PS_CONST } ps_group_kind;

typedef struct ps_group {
    ps_group_kind kind;
    int nnodes;
    int *nodes;          /* node ids, ascending (SSA order) */
    int dom_node;        /* kernels: the domain is this node's shape ... */
    bool dom_input;      /* ... or its input 0's (ROWS: the reduced tensor) */
    int nred;            /* ROWS: how many trailing domain dims are reduced */
    int epilogue;        /* EAGER (matmul, conv2d): its epilogue kernel group, or -1 */
    int epilogue_of;     /* kernel: the eager group whose output it finishes, or -1 */
} ps_group;

typedef struct ps_fusion {
    const ir_graph *g;
    int ngroups;
    ps_group *groups;    /* in an order that respects every dependence */
    int *group_of;       /* per node id: its group */
    signed char (*map)[TJ_MAX_DIMS];   /* per node id: domain dim of each dim, or -1 */
    bool *stored;        /* per node id: a kernel writes it to memory */
    int nreasons;
    char **reasons;      /* "%7 add: not fused with %5 matmul: ..." */
} ps_fusion;

/* Partitions g. NULL with a message in err when out of memory. */
ps_fusion *ps_fuse(const ir_graph *g, char *err, size_t nerr);
void ps_fusion_free(ps_fusion *f);

/* The text form (malloc'd): one line per group, then the reasons.
 *
 *   fused @softmax: 1 kernel, 0 eager calls {
 *     kernel 0 rows f32[2048,1024] reduce 1: %0 amax, %1 sub, %2 exp, %3 sum, %4 div; stores %4
 *   }
 *
 * An epilogue says so at the end of its line and in a reason line:
 *
 *     eager 2: %1 matmul
 *     kernel 3 pointwise f32[256,2048]: %2 add, ...; stores %15; epilogue of %1 matmul
 *   // %2 add: epilogue of %1 matmul
 */
char *ps_fusion_print(const ps_fusion *f);

/* Kernels and eager calls in f. */
int ps_fusion_count(const ps_fusion *f, ps_group_kind kind);

#endif
