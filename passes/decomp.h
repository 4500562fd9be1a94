/* decomp.h - internal to passes/: what the decomposition files share. The
 * composites of ops.def's older rows are decomposed in decompose.c; the
 * DCOMP rows (composites with no eager kernel) in decomp_*.c by family
 * (decomp_loss.c, decomp_nn.c, decomp_linalg.c, decomp_idx.c, decompose_pw.c for
 * the elementwise ones, ...), one ps_decomp_<name> each, declared here from the
 * table. */
#ifndef TJ_PASSES_DECOMP_H
#define TJ_PASSES_DECOMP_H

#include "build.h"

/* n: the node being replaced (its type and attributes), a: its attributes,
 * in: its inputs, already rebuilt. Returns a node of n's type, or NULL after
 * recording the failure in b. */
#define PS_DECOMP_ARGS ps_builder *b, const ir_node *n, const ir_attrs *a, ir_node *const *in

#define PS_DD_PRIM(name)
#define PS_DD_COMP(name)
#define PS_DD_DCOMP(name) ir_node *ps_decomp_##name(PS_DECOMP_ARGS);
#define OP(name, kind, nmin, nmax, decomp, attrs) PS_DD_##decomp(name)
#define UNARY(name, rule, decomp, f32, f64, i)
#define BINARY(name, rule, decomp, f32, f64, i)
#include "../ir/ops.def"
#undef PS_DD_PRIM
#undef PS_DD_COMP
#undef PS_DD_DCOMP

/* The reduction of a loss per element l: mean, sum or none (tj_reduction). */
ir_node *ps_loss_reduce(ps_builder *b, ir_node *l, int64_t reduction);

#endif
