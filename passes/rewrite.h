/* rewrite.h - the rewrite machinery shared by decompose and simplify: a
 * rebuild that lets a hook replace each node, and a tinygrad-style rule
 * driver (a table of named pattern -> rewrite functions run to a fixed point).
 *
 *   sweep:  rebuild g into h node by node (SSA order); each node is re-added
 *           with its rewritten inputs, then every rule whose op matches is
 *           tried on it; when one returns a replacement, the rules run again
 *           on the replacement (at most max_per_node times), and the final
 *           node stands for the original in the rest of the graph.
 *   driver: sweeps until one fires no rule (the fixed point), then drops dead
 *           nodes (ps_dce). More than max_sweeps sweeps, or a node rewritten
 *           more than max_per_node times in one sweep, is reported as
 *           non-termination, naming the rule that fired last.
 *
 * A rule gets the node n (already in the new graph, inputs rewritten) and a
 * builder on that graph; it returns a node of exactly n's type (ir_type_same:
 * dtype, shape and weak flag) that computes the same values, or NULL when the
 * pattern does not match. A rule that fails to build (its builder records an
 * error) counts as not matching; a replacement of another type is a bug in
 * the rule and fails the pass.
 *
 * With TJIT_DEBUG_RULES=1 in the environment every rewrite is printed to
 * stderr ("simplify: sweep 1: mul-one: mul %x, %2 : f32[4,8] -> %x"), and a
 * summary line per run counts the rewrites of each rule.
 */
#ifndef TJ_PASSES_REWRITE_H
#define TJ_PASSES_REWRITE_H

#include <stdio.h>

#include "build.h"
#include "pass.h"

/* Replaces old (of the graph being rebuilt) in the new graph b->g: in holds
 * old's inputs as already rewritten (NULL for absent ones). Returns the node
 * that stands for old, or NULL after recording an error in b. */
typedef ir_node *(*ps_node_hook)(ps_builder *b, const ir_node *old, ir_node *const *in,
                                 void *ctx);

/* Rebuilds g into a new graph (same name, every input in order): each op
 * node that keep marks (by node id; NULL keeps all), its inputs already
 * rebuilt, is replaced by hook's result, or without a hook re-added as it is
 * (identical nodes merge); the outputs follow. The one rebuild loop of the
 * passes. NULL with "%k = op: message" in err. */
ir_graph *ps_rebuild(const ir_graph *g, const bool *keep, ps_node_hook hook, void *ctx, char *err,
                     size_t nerr);

#define PS_ANY_OP (-1)

typedef ir_node *(*ps_rule_fn)(ps_builder *b, ir_node *n);

typedef struct ps_rule {
    const char *name;   /* what the debug dump shows */
    int op;             /* the op it matches (an ir_op), or PS_ANY_OP */
    ps_rule_fn fn;
} ps_rule;

typedef struct ps_rewrite_opts {
    const char *pass;   /* name in messages and dumps ("simplify") */
    int max_sweeps;     /* 0: 32 */
    int max_per_node;   /* 0: 64 */
    FILE *log;          /* every rewrite and a summary; NULL: stderr if TJIT_DEBUG_RULES=1 */
} ps_rewrite_opts;

/* Runs rules[0..nrules) over g to a fixed point and drops dead nodes.
 * Returns g itself when nothing changed, else a new graph; NULL with a
 * message in err (non-termination, a rule that changed a type, out of memory). */
ir_graph *ps_rewrite(ir_graph *g, const ps_rule *rules, int nrules, const ps_rewrite_opts *opts,
                     char *err, size_t nerr);

/* True when op has a decomposition (every composite row; passes/decompose.c). */
bool ps_has_decomposition(ir_op op);

/* The rule table of simplify (passes/simplify.c). */
extern const ps_rule ps_simplify_rules[];
extern const int ps_simplify_nrules;

#endif
