/* graph.h - the SSA graph of tjit: nodes, hash-consing, text form, verifier.
 *
 * A graph is what tracing records and what passes rewrite: a list of inputs
 * (function arguments and captured weights, "params"), a list of op nodes in
 * SSA order (each node's inputs come before it), and one or more outputs.
 * Every op node is one row of ir/ops.def applied to earlier nodes, with its
 * attributes and the result type that ir_infer computes; each has exactly one
 * result. Its text form (docs/ir.md):
 *
 *   graph @mlp(%x: f32[256,1024], %w1: f32[1024,2048] param, %b1: f32[2048] param) {
 *     %0 = matmul %x, %w1 : f32[256,2048]
 *     %1 = add %0, %b1 : f32[256,2048]
 *     %2 = gelu_tanh %1 : f32[256,2048]
 *     %3 = sum %2 {dims=[1], keepdim=false} : f32[256]
 *     return %3
 *   }
 *
 * Building one (error handling elided; every call returns NULL or -1 and
 * leaves a message in ir_graph_error(g)):
 *
 *   ir_graph *g = ir_graph_new("mlp");
 *   ir_type tx = {TJ_F32, 2, false, {256, 1024}};
 *   ir_node *x = ir_graph_input(g, "x", &tx, false);
 *   ir_node *w = ir_graph_input(g, "w1", &tw, true);          // a param
 *   ir_node *y = ir_graph_add(g, OP_matmul, (ir_node *[]){x, w}, 2, NULL);
 *   ir_graph_set_outputs(g, &y, 1);
 *   char *text = ir_print(g, NULL);                          // malloc'd
 *   ir_graph_free(g);                                        // frees every node
 *
 * Hash-consing: ir_graph_add returns the existing node when one with the same
 * op, inputs, attributes and type is already in the graph, so a graph never
 * holds two identical nodes (CSE is free) and the printed text is the graph's
 * identity. This includes rand/randn: their attributes carry the seed and
 * offset, and two draws with the same seed and offset are the same value.
 * Inputs are never merged (two arguments of the same type are distinct).
 *
 * Canonical form, so that print(parse(text)) == text for printed text: nodes
 * are immutable once added (only aux may change); trailing absent optional
 * inputs are dropped (linear(x, w, NULL) is linear(x, w)); attributes are
 * normalized (BOOL to 0/1, scalar kinds get n = 1, unused slots cleared) and
 * every NaN is stored as the one quiet NaN that prints as `nan`.
 *
 * Symbolic dims: a shape entry < 0 is symbol k = -(1 + entry), printed `sk`
 * (IR_SYM(0) == -1 prints as s0), or a symbol plus a static offset (ir_sym_at,
 * printed `s0-1`: a slice, pad or cat of a symbolic dim). Two equal entries
 * are the same size.
 *
 * Memory: everything a graph holds lives in its arena (ir/arena.h) plus two
 * growable arrays; ir_graph_free releases all of it. Graphs are not
 * thread-safe; distinct graphs may be used from distinct threads.
 */
#ifndef TJ_IR_GRAPH_H
#define TJ_IR_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"
#include "ir.h"

/* The op of a graph input node (one past the last row of ops.def). */
#define IR_OP_INPUT IR_NUM_OPS

/* Symbolic dims inside ir_type.shape: IR_SYM, ir_sym_at and the rest in ir/ir.h. */

/* Buffer sizes that always suffice for ir_type_fmt and ir_double_fmt. */
#define IR_TYPE_BUF 256
#define IR_DOUBLE_BUF 32

typedef struct ir_node {
    ir_op op;              /* a row of ops.def, or IR_OP_INPUT */
    int id;                /* index in g->inputs (inputs) or g->nodes (ops) */
    int nin;               /* number of entries in `in` */
    bool param;            /* inputs only: a captured weight, not an argument */
    ir_type type;          /* the result type (symbolic dims and weak included) */
    struct ir_node **in;   /* the input nodes; NULL for an absent optional input */
    ir_attr *attrs;        /* ir_ops[op].nattrs entries in schema order (or NULL) */
    const char *name;      /* inputs only: the name without '%' (NULL for ops) */
    const char *file;      /* ops: the call site that made it (the user's C file,
                              or the text IR's `# file:line`), or NULL; printed,
                              never hashed or compared (a shared node keeps the first) */
    int line;
    void *aux;             /* free for the user (pass maps, tracing); never
                              printed, hashed or compared */
    uint64_t hash;         /* private: the hash-consing key */
} ir_node;

/* Read the public fields directly; change a graph only through the functions
 * below. Arrays hold their count of entries. */
typedef struct ir_graph {
    const char *name;      /* without '@' */
    ir_node **inputs;      /* arguments and params, in signature order */
    int ninputs;
    ir_node **nodes;       /* op nodes in SSA order; nodes[k]->id == k */
    int nnodes;
    ir_node **outputs;     /* what the graph returns (may repeat a node) */
    int noutputs;

    /* private */
    ir_arena arena;
    int cap_inputs, cap_nodes;
    ir_node **table;       /* open-addressing hash of op nodes */
    size_t table_cap;
    char err[512];
} ir_graph;

/* ---- building ------------------------------------------------------------ */

/* An empty graph named name ("main" when NULL). NULL when out of memory or when
 * the name is not an identifier ([A-Za-z_][A-Za-z0-9_.]*). */
ir_graph *ir_graph_new(const char *name);
void ir_graph_free(ir_graph *g);   /* NULL is fine */

/* The message of the last failed call on g ("" if none). */
const char *ir_graph_error(const ir_graph *g);

/* Appends an input (param: a captured weight). name: an identifier, unique
 * among the inputs, or NULL for a fresh one ("arg<k>" or "param<k>"). The
 * type needs a valid dtype, 0..TJ_MAX_DIMS dims, and a concrete element count
 * that fits in int64. Inputs may be added at any time (tracing meets weights
 * late); they print first, in the order they were added. NULL on error. */
ir_node *ir_graph_input(ir_graph *g, const char *name, const ir_type *t, bool param);

/* Adds op applied to in[0..nin) (nodes of g; NULL for an absent optional
 * input) with attributes attrs (schema order; NULL means all zero). The result
 * type comes from ir_infer. Returns the node, an existing identical node, or
 * NULL with "op(f32[2,3], ...): reason" in ir_graph_error(g). */
ir_node *ir_graph_add(ir_graph *g, ir_op op, ir_node *const *in, int nin, const ir_attrs *attrs);

/* Sets what the graph returns: n >= 1 nodes of g (copied). 0 or -1. */
int ir_graph_set_outputs(ir_graph *g, ir_node *const *out, int n);
/* Whether a and b have the same inputs (types, param or not) and the same op
 * nodes in the same order (op, inputs by position, attributes, type); names,
 * call sites and outputs are not compared. Two traces of one program that
 * took the same path give the same body. */
bool ir_graph_same_body(const ir_graph *a, const ir_graph *b);

/* The input named name (without '%'), or NULL. */
ir_node *ir_graph_find_input(const ir_graph *g, const char *name);

/* ---- nodes and types ----------------------------------------------------- */

static inline bool ir_node_is_input(const ir_node *n) { return n->op == IR_OP_INPUT; }

/* Slots number every value of g in one range, as executors, plans and pass
 * maps index them: the inputs first (0 .. ninputs-1), then op node k at
 * ninputs + k; ir_nslots(g) of them. */
static inline int ir_slot(const ir_graph *g, const ir_node *n)
{
    return ir_node_is_input(n) ? n->id : g->ninputs + n->id;
}
static inline int ir_nslots(const ir_graph *g) { return g->ninputs + g->nnodes; }

/* n's attributes as a full ir_attrs (for ir_infer and kernels). */
void ir_node_attrs(const ir_node *n, ir_attrs *out);

/* Whether n is a view op's node (its value a view of its first input). */
bool ir_node_is_view(const ir_node *n);
/* The node under n's chain of views (n when n is no view). */
const ir_node *ir_view_root(const ir_node *n);
/* Whether n's chain of views has a reshape above an expand (the
 * decomposition of tile, repeat, repeat_interleave): eagerly a copy, as in
 * PyTorch, where a replay of the views would give a stride-0 view. */
bool ir_view_chain_expands(const ir_node *n);
/* The chain of views under n: chain[0] = n, chain[k + 1] = chain[k]->in[0],
 * as long as each is a view node, at most max of them (*len: how many).
 * Returns the node under the chain (n when n is no view), or, for a chain
 * longer than max, the view after the last one recorded. */
const ir_node *ir_view_chain(const ir_node *n, const ir_node **chain, int max, int *len);

/* Checks a type for use as an input or result: valid dtype, 0..TJ_MAX_DIMS
 * dims, symbol numbers below IR_MAX_SYM, and the product of the nonzero
 * |shape[d]| (a symbol counts as its magnitude, -shape[d]) fits in int64, so
 * that size arithmetic on any subset of the dims cannot overflow.
 * 0, or -1 with the reason in err. */
int ir_type_check(const ir_type *t, char *err, size_t nerr);

/* Checks attributes against op's schema: INTS lists of 0..IR_MAX_LIST values,
 * BOOL 0 or 1, DTYPE in range. 0, or -1 with the reason in err. */
int ir_attrs_check(ir_op op, const ir_attrs *a, char *err, size_t nerr);

/* True when a name is an identifier: [A-Za-z_][A-Za-z0-9_.]*. */
bool ir_name_valid(const char *s, size_t n);

/* Whether a dim of t is symbolic (IR_IS_SYM). */
bool ir_type_has_sym(const ir_type *t);

/* Type equality including the weak flag (ir_type_equal ignores it). */
bool ir_type_same(const ir_type *a, const ir_type *b);

/* "f32[s0,1024]", "f64[] weak": the text form of a type; returns buf.
 * A buffer of IR_TYPE_BUF bytes always fits. */
char *ir_type_fmt(const ir_type *t, char *buf, size_t n);

/* The shortest text that strtod reads back as the same double ("0.1",
 * "-0", "5e-324", "inf", "-inf", "nan"); returns buf (IR_DOUBLE_BUF bytes).
 * Uses printf/strtod: the text form assumes LC_NUMERIC is "C" (the default). */
char *ir_double_fmt(double v, char *buf);

/* An attribute's value as the text form writes it ("[1,0]", "f32", "mean",
 * "call+8"); returns buf. A buffer of IR_ATTR_BUF bytes always fits. */
#define IR_ATTR_BUF (IR_MAX_LIST * 21 + 8)
char *ir_attr_fmt(ir_attr_kind kind, const ir_attr *v, char *buf, size_t n);

/* ---- text form ------------------------------------------------------------ */

/* The text form of g, NUL-terminated and malloc'd (the caller frees it); its
 * length goes to *len when len is not NULL. Op nodes are numbered %0.. in
 * order; inputs keep their names. NULL when out of memory. A graph without
 * outputs prints `return` alone (the parser rejects that). */
char *ir_print(const ir_graph *g, size_t *len);
/* Writes the text form to f; 0 or -1 on a write or memory error. */
int ir_print_file(const ir_graph *g, FILE *f);

/* Parses one graph from src[0..len) (need not be NUL-terminated; any bytes are
 * safe). file names the source in messages (NULL: "<input>"). Returns the
 * graph, or NULL with a message in err[0..nerr) of the form
 *
 *   file:LINE:COL: error: message
 *   <the source line>
 *          ^
 *
 * Checks names (defined before use, once), op names, attribute names and
 * kinds against the schema, and that each written result type equals the type
 * ir_infer computes. The result passes ir_verify. */
ir_graph *ir_parse(const char *src, size_t len, const char *file, char *err, size_t nerr);

/* ---- verifier ------------------------------------------------------------- */

/* Checks every invariant: input nodes well formed and uniquely named; each op
 * node's arity within nmin..nmax, attributes valid for its schema, inputs
 * defined earlier in this graph (SSA order, no dangling uses), and its type
 * equal to what ir_infer recomputes; at least one output, each a node of g.
 * Returns 0, or -1 with the first problem in err[0..nerr). */
int ir_verify(const ir_graph *g, char *err, size_t nerr);

#endif
