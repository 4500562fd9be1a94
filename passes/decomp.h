/* decomp.h - internal to passes/: the signature of a decomposition
 * (passes/decompose.c holds the table and the pass) and the prototypes of
 * the ones defined in other files: every COMPOSITE row of ir/ops.def has
 * ps_decomp_<name> in passes/decompose_pw.c. */
#ifndef TJ_PASSES_DECOMP_H
#define TJ_PASSES_DECOMP_H

#include "build.h"

/* The original node n (type, attributes a) and its inputs in[], rebuilt;
 * returns the replacement (NULL with the builder failed). */
#define PS_DECOMP_ARGS ps_builder *b, const ir_node *n, const ir_attrs *a, ir_node *const *in

#define COMPOSITE(name, kind, nmin, nmax, attrs) ir_node *ps_decomp_##name(PS_DECOMP_ARGS);
#include "../ir/ops.def"

#endif
