/* fuse.h - the fusion pass: which nodes of a graph run together as one
 * kernel (fuse.c). Its output, groups, epilogues and limits, is the contract
 * codegen lowers, in ir/fusion.h.
 */
#ifndef TJ_PASSES_FUSE_H
#define TJ_PASSES_FUSE_H

#include <stddef.h>

#include "../ir/fusion.h"

/* Partitions g (a decomposed graph) into groups (ir/fusion.h); g must
 * outlive the result. NULL with a message in err when out of memory. */
ir_fusion *ps_fuse(const ir_graph *g, char *err, size_t nerr);

/* How a compiled plan runs prim op on f32 operands (decided by the same
 * classification fusion applies to a node of that op): "kernel" (generated
 * kernels), "view" (a view: no kernel), "eager call" (its runtime kernel,
 * called from the plan; why says the reason); composites: "decomposed". */
const char *ps_fuse_lowering(int op, char *why, size_t nw);

#endif
