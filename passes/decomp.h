/* decomp.h - internal to passes/: the signature of a decomposition
 * (ps_decomp_<name>), and the prototypes of the XOP rows' decompositions,
 * which live in their family's file (decomp_idx.c) rather than in
 * decompose.c. */
#ifndef TJ_PASSES_DECOMP_H
#define TJ_PASSES_DECOMP_H

#include "build.h"

/* n: the node being replaced (its type and attributes), a: its attributes,
 * in: its inputs, already rebuilt. Returns a node of n's type, or NULL after
 * recording the failure in b. */
#define PS_DECOMP_ARGS ps_builder *b, const ir_node *n, const ir_attrs *a, ir_node *const *in

#define OP(name, kind, nmin, nmax, decomp, attrs)
#define XOP(name, kind, nmin, nmax, attrs) ir_node *ps_decomp_##name(PS_DECOMP_ARGS);
#include "../ir/ops.def"

#endif
