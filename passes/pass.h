/* pass.h - graph passes and the pass manager.
 *
 * A pass maps a graph to a new graph (graphs are append-only and hash-consed,
 * so a pass rebuilds: it re-adds the nodes it keeps, rewritten, into a fresh
 * graph, and identical nodes merge on the way). The pass manager runs a named
 * pipeline ("dce,cse"), verifies the graph after every pass when asked (debug
 * and test builds, and `tjit opt`), and can dump the graph after any pass.
 */
#ifndef TJ_PASSES_PASS_H
#define TJ_PASSES_PASS_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir/graph.h"

/* Returns the rewritten graph (a new one, or g itself when nothing changed),
 * or NULL with a message in err. g stays owned by the caller. */
typedef ir_graph *(*ps_pass_fn)(ir_graph *g, char *err, size_t nerr);

typedef struct ps_pass {
    const char *name;
    const char *help;
    ps_pass_fn run;
} ps_pass;

/* The registered passes, NULL-terminated. */
extern const ps_pass ps_passes[];
const ps_pass *ps_pass_find(const char *name);

typedef struct ps_options {
    bool verify;              /* ir_verify after each pass */
    const char *dump_after;   /* comma list of pass names (or "all") to print to stderr */
} ps_options;

/* Runs the comma-separated pipeline on g. Returns the final graph (which may
 * be g itself; every intermediate graph is freed), or NULL with "pass NAME:
 * message" in err; g is never freed. */
ir_graph *ps_run_pipeline(ir_graph *g, const char *pipeline, const ps_options *opt, char *err,
                          size_t nerr);

/* The passes (one file each, registered in pm.c). */
ir_graph *ps_dce(ir_graph *g, char *err, size_t nerr);
ir_graph *ps_cse(ir_graph *g, char *err, size_t nerr);
ir_graph *ps_decompose(ir_graph *g, char *err, size_t nerr);   /* decompose.c */
/* decompose, keeping whole the composites whose eager kernel codegen prefers
 * (sdpa); what compiled plans run. */
ir_graph *ps_decompose_codegen(ir_graph *g, char *err, size_t nerr);
/* The decomposition of one application of op (a DCOMP row's eager path): a
 * graph whose inputs are the present inputs in[k] (NULL: absent) in order,
 * decomposed to prims, one output. NULL with the reason in err. The caller
 * frees it. */
ir_graph *ps_decompose_one(ir_op op, const ir_type *const *in, int nin, const ir_attrs *a,
                           char *err, size_t nerr);
/* Whether decomposition g (of ps_decompose_one) ends in views of its first
 * input that do not expand it (tile, repeat replay as copies): the chain,
 * from the output down, into chain[0..*nc) (at most max). */
bool ps_decomp_views_input(const ir_graph *g, const ir_node **chain, int max, int *nc);
ir_graph *ps_simplify(ir_graph *g, char *err, size_t nerr);    /* simplify.c */
/* sum/prod/amax/amin to fewer than 16 results over 2^16+ elements each ->
 * partial reductions over a reshaped view, then a small final one (split.c). */
ir_graph *ps_split_reductions(ir_graph *g, char *err, size_t nerr);
/* batch_norm after conv2d/linear/matmul on weights folded into their weight
 * and bias (fold_bn.c); what freeze runs first. */
ir_graph *ps_fold_bn(ir_graph *g, char *err, size_t nerr);

/* 2-D matmuls with few rows on one right operand, independent of each other,
 * into one taller matmul whose row slices replace them (merge_mm.c). */
ir_graph *ps_merge_matmuls(ir_graph *g, char *err, size_t nerr);

/* ---- int8 quantization ---- */
/* dequantize -> linear/matmul/conv2d (-> relu) (-> quantize_per_tensor)
 * into qlinear/qconv2d, the int8 ops (fold_quant.c). */
ir_graph *ps_fold_quant(ir_graph *g, char *err, size_t nerr);

#endif
