/* dce.c - dead code elimination and common-subexpression elimination.
 *
 * dce keeps the nodes some output depends on (a backward walk, nodes being
 * in SSA order) and rebuilds. cse rebuilds everything: hash-consing merges
 * identical nodes, so a graph that was built by hash-consing is already CSE'd
 * and cse only matters for graphs rewritten by other means. */
#include <stdlib.h>
#include <stdio.h>

#include "rewrite.h"

ir_graph *ps_dce(ir_graph *g, char *err, size_t nerr)
{
    bool *live = calloc((size_t)g->nnodes + 1, sizeof *live);
    if (!live) {
        snprintf(err, nerr, "out of memory");
        return NULL;
    }
    for (int k = 0; k < g->noutputs; k++)
        if (!ir_node_is_input(g->outputs[k]))
            live[g->outputs[k]->id] = true;
    int dead = 0;
    for (int k = g->nnodes - 1; k >= 0; k--) {
        if (!live[k]) {
            dead++;
            continue;
        }
        const ir_node *n = g->nodes[k];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] && !ir_node_is_input(n->in[j]))
                live[n->in[j]->id] = true;
    }
    ir_graph *h = dead ? ps_rebuild(g, live, NULL, NULL, err, nerr) : g;
    free(live);
    return h;
}

ir_graph *ps_cse(ir_graph *g, char *err, size_t nerr)
{
    return ps_rebuild(g, NULL, NULL, NULL, err, nerr);
}
