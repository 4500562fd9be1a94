/* tjit_inspect.h - the inspection API of tjit: what the `tjit` tool is built
 * on, for tools of your own. The model API is tjit.h; this header adds a
 * window on the compiler's insides, at the level of its text IR (docs/ir.md):
 *
 *   - graphs: parse a text graph, print it, look at its inputs;
 *   - passes: run a named pipeline ("decompose,simplify") on a graph,
 *     verifying it after every pass, with dumps between passes;
 *   - fusion: how a graph splits into kernels and eager calls;
 *   - runs: a graph on tensors, node by node with the eager kernels or
 *     compiled (fused LLVM kernels and eager calls);
 *   - the op table (ir/ops.def): names, kinds, arities, attributes.
 *
 *   #include <tjit_inspect.h>
 *
 *   tj_graph *g = tj_graph_parse(text, strlen(text), "model.tir");
 *   if (!g || tj_graph_run_passes(g, "decompose,simplify", NULL) != 0)
 *       fprintf(stderr, "%s\n", tj_last_error());
 *   char *fused = g ? tj_graph_print_fused(g) : NULL;   // malloc'd
 *   tj_graph_free(g);
 *
 * docs/api.md describes every function. Errors follow tjit.h: NULL or -1
 * with a message in tj_last_error(); a NULL graph is an error, never a crash.
 * A graph handle is not thread-safe; distinct handles may be used from
 * distinct threads. Compiled-plan statistics of a tj_compiled handle
 * (tj_compiled_stats_get) are part of tjit.h.
 */
#ifndef TJIT_INSPECT_H
#define TJIT_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tjit.h"

#ifdef __cplusplus
extern "C" {
#endif
TJ_API_BEGIN

/* ---- graphs ------------------------------------------------------------ */
/* A graph in the text IR: inputs (arguments and params), op nodes, outputs. */
typedef struct tj_graph tj_graph;

/* Parses one graph from text[0..len) (need not be NUL-terminated); file names
 * the source in messages (NULL: "<input>"). NULL on error, with the message
 * "file:LINE:COL: error: what", the source line and a caret under the place,
 * each line ending in a newline. The result passes the verifier. */
tj_graph *tj_graph_parse(const char *text, size_t len, const char *file);
void tj_graph_free(tj_graph *g);   /* NULL is fine */

/* The text form (docs/ir.md), malloc'd: the caller frees it. It parses back
 * to the same graph, byte for byte. NULL on error. */
char *tj_graph_print(const tj_graph *g);

const char *tj_graph_name(const tj_graph *g);   /* "mlp" for graph @mlp; NULL on error */
int tj_graph_num_inputs(const tj_graph *g);     /* params included; -1 on error */
int tj_graph_num_outputs(const tj_graph *g);    /* -1 on error */

/* One input of a graph, as its header declares it. */
typedef struct tj_graph_input {
    const char *name;       /* without the %; valid while the graph lives */
    tj_dtype dtype;
    int ndim;
    int64_t shape[TJ_MAX_DIMS];   /* a symbolic dim (s0, s1, ...) is -1 - k */
    bool symbolic;          /* some dim is symbolic: its size comes with the tensor */
    bool param;             /* declared `param` (a weight) */
    char type[256];         /* the text form: "f32[s0,1024]" */
} tj_graph_input;

/* Fills out with input k (0 <= k < tj_graph_num_inputs); 0, or -1 on error. */
int tj_graph_input_info(const tj_graph *g, int k, tj_graph_input *out);

/* ---- passes ------------------------------------------------------------ */
int tj_pass_count(void);
const char *tj_pass_name(int k);   /* NULL out of range */
const char *tj_pass_help(int k);   /* one line; NULL out of range */

/* Runs the comma-separated pipeline ("decompose,simplify"; "" runs nothing)
 * on g, verifying the graph after every pass, and replaces g's graph with the
 * result. dump_after: a comma list of pass names (or "all") after which the
 * graph is printed to stderr, or NULL. 0, or -1 with "pass NAME: why" (g is
 * then unchanged). */
int tj_graph_run_passes(tj_graph *g, const char *pipeline, const char *dump_after);

/* ---- fusion ------------------------------------------------------------ */
/* How the (decomposed) graph splits into fused kernels and eager calls, with
 * the reason for each decision not to fuse, as `TJIT_DUMP=fused` prints it.
 * malloc'd; NULL on error. */
char *tj_graph_print_fused(const tj_graph *g);

/* ---- dumps ------------------------------------------------------------- */
/* Whether stage ("graph", a pipeline step such as "fuse" or "memory", or an
 * older name such as "prims", "llvm", "asm"; docs/cli.md) is selected by the
 * comma list stages: names, "all", or a level 1..5 of the dump ladder; NULL:
 * $TJIT_DUMP. */
bool tj_dump_enabled(const char *stages, const char *stage);
/* 0 when every entry of the comma list stages is a stage name, "all" or a
 * level; else -1 with an error naming the bad entry and the valid ones. */
int tj_dump_check(const char *stages);
/* When stages selects "graph": writes g's text form as a dump of that stage,
 * the way TJIT_DUMP does (to stderr, or a file under $TJIT_DUMP_DIR). 0, or
 * -1 on error. */
int tj_graph_dump(const tj_graph *g, const char *stages);

/* ---- running a graph --------------------------------------------------- */
/* Runs g on inputs[0..tj_graph_num_inputs) (params included, in the graph's
 * input order), writing its outputs to outs[0..tj_graph_num_outputs), each
 * owned by the current scope (as an op's result). eager: node by node with
 * the eager kernels, the graph as it is; otherwise compiled: decomposed,
 * simplified, fused, LLVM kernels and eager calls (the graph executor when
 * TJIT_BACKEND=eager or without the JIT), stages dumped as $TJIT_DUMP says.
 * Each compiled run builds its plan anew (kernels come from the kernel
 * cache after the first). Each input must have its declared type: the
 * dtype, the rank, every static size, and one size per symbol (s0 is the
 * same size wherever it appears); a mismatch is an error naming the input,
 * the expected and the given type. 0, or -1 with the failing input or node
 * in the message. */
int tj_graph_run(const tj_graph *g, tj_tensor *const *inputs, tj_tensor **outs, bool eager);

/* ---- the op table (ir/ops.def) ------------------------------------------- */
#define TJ_OP_MAX_ATTRS 6

typedef struct tj_op_info {
    const char *name;   /* as the text IR spells it: "add", "layer_norm" */
    const char *kind;   /* unary binary ternary pointwise reduce view move contract
                         * nn create random */
    int nmin, nmax;     /* inputs; nmax -1: variadic */
    bool prim;          /* a primitive; false: a composite, decomposed into prims */
    const char *rule;   /* dtype rule of a pointwise row ("same", "float", ...); "" */
    const char *lowering;   /* how compiled plans run it on f32 operands: "kernel"
                             * (generated kernels), "view", "eager call" (its
                             * runtime kernel, from the plan), "decomposed" (composites) */
    int nattrs;
    struct {
        const char *name;
        const char *kind;   /* int ints bool float dtype reduction */
    } attrs[TJ_OP_MAX_ATTRS];
} tj_op_info;

int tj_op_count(void);
/* Fills out with op k (0 <= k < tj_op_count(), the order of ops.def); 0, or
 * -1 out of range. The strings are static. */
int tj_op_get(int k, tj_op_info *out);
/* The index of the op named name, or -1. */
int tj_op_find(const char *name);

TJ_API_END
#ifdef __cplusplus
}
#endif
#endif /* TJIT_INSPECT_H */
