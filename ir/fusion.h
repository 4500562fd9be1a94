/* fusion.h - the contract between fusion and codegen: which nodes of a graph
 * run together as one kernel (groups, index maps, epilogues) and how large a
 * kernel may be. passes/fuse.c makes an ir_fusion (ps_fuse); codegen/lower.c
 * lowers its kernel groups; sched/ runs its groups in order. Both sides
 * include this header, so the contract and its limits are written once
 * (fusion.c: freeing, counting, the text form).
 *
 * A fusion partitions a (decomposed) graph into groups, in an order they can
 * run in:
 *
 *   IR_GROUP_PW     a maximal pointwise chain: unary, binary, where, cast,
 *                   clamp, scalar constants; views and broadcasts between its
 *                   nodes are index arithmetic. One loop over the domain.
 *   IR_GROUP_ROWS   reductions over the innermost dims (sum, prod, amax, amin, var)
 *                   with the pointwise ops before them and after them that
 *                   stay in the same row: softmax (amax, sub, exp, sum, div)
 *                   and layer_norm are one group each.
 *   IR_GROUP_EAGER  one node run by its eager kernel (matmul, gather, ...).
 *   IR_GROUP_VIEW   one view node of a materialized value: no work, its
 *                   strides fold into the loads of whoever reads it.
 *   IR_GROUP_CONST  a scalar or full constant: kernels inline its value; it
 *                   is made only when an eager call or the result needs it.
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
 * Each decision not to fuse leaves a reason, shown by ir_fusion_print
 * (`TJIT_DUMP=fused`, `tjit opt --emit=fused`).
 */
#ifndef TJ_IR_FUSION_H
#define TJ_IR_FUSION_H

#include <stdbool.h>
#include <stddef.h>

#include "graph.h"

/* ---- limits -----------------------------------------------------------------------------
 * What one kernel can hold: codegen sizes its kernels by these (codegen/kernel.h's
 * CG_MAX_BUFS, CG_MAX_INSTS, CG_MAX_STAGES are these numbers). */
#define IR_KERNEL_MAX_BUFS 32     /* buffers a kernel loads or stores */
#define IR_KERNEL_MAX_INSTS 512   /* instructions of its body */
#define IR_KERNEL_MAX_STAGES 16   /* passes over a row: reductions, then the stores after them */

/* What fusion lets into one group, below those capacities because lowering
 * adds to a group: a value read from outside at two index maps is two
 * buffers; a var is two reduction stages, and stores after a reduction take
 * a stage of their own; a node lowers to one instruction or a few (formula
 * call, conversions, constants; a var about fifteen), and the node limit
 * leaves 2.5 per node. A group that still lowers past a capacity runs node by
 * node on the eager kernels (cg_lower's reason). */
#define IR_FUSE_MAX_BUFS (IR_KERNEL_MAX_BUFS - 4)      /* loads + stores per group */
#define IR_FUSE_MAX_REDS (IR_KERNEL_MAX_STAGES / 2)    /* reductions per group */
#define IR_FUSE_MAX_NODES 200                           /* nodes per group */
_Static_assert(IR_FUSE_MAX_NODES * 5 / 2 <= IR_KERNEL_MAX_INSTS,
               "a fused group's nodes at 2.5 instructions each fit one kernel");

/* ---- groups ----------------------------------------------------------------------------- */

typedef enum { IR_GROUP_PW, IR_GROUP_ROWS, IR_GROUP_EAGER, IR_GROUP_VIEW, IR_GROUP_CONST } ir_group_kind;

typedef struct ir_group {
    ir_group_kind kind;
    int nnodes;
    int *nodes;          /* node ids, ascending (SSA order) */
    int dom_node;        /* kernels: the domain is this node's shape ... */
    bool dom_input;      /* ... or its input 0's (ROWS: the reduced tensor) */
    int nred;            /* ROWS: how many trailing domain dims are reduced */
    int epilogue;        /* EAGER (matmul, conv2d): its epilogue kernel group, or -1 */
    int epilogue_of;     /* kernel: the eager group whose output it finishes, or -1 */
} ir_group;

typedef struct ir_fusion {
    const ir_graph *g;
    int ngroups;
    ir_group *groups;    /* in an order that respects every dependence */
    int *group_of;       /* per node id: its group */
    signed char (*map)[TJ_MAX_DIMS];   /* per node id: domain dim of each dim, or -1 */
    bool *stored;        /* per node id: a kernel writes it to memory */
    int nreasons;
    char **reasons;      /* "%7 add: not fused with %5 matmul: ..." */
} ir_fusion;

static inline bool ir_group_is_kernel(ir_group_kind k) { return k == IR_GROUP_PW || k == IR_GROUP_ROWS; }

void ir_fusion_free(ir_fusion *f);   /* NULL is fine */

/* Groups of kind in f; IR_GROUP_PW counts every kernel (PW and ROWS). */
int ir_fusion_count(const ir_fusion *f, ir_group_kind kind);

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
char *ir_fusion_print(const ir_fusion *f);

#endif
