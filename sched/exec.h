/* exec.h - the graph executor, node by node on the eager kernels (exec.c). */
#ifndef TJ_SC_EXEC_H
#define TJ_SC_EXEC_H

#include "../ir/graph.h"
#include "../runtime/rt.h"

/* For each value slot (inputs, then nodes), the index of the last node that
 * reads it (g->nnodes for outputs, -1 if unused). malloc'd; NULL when out of
 * memory. */
int *sc_exec_last_use(const ir_graph *g);

/* Runs g on concrete inputs[0..g->ninputs) and stores its outputs in
 * outs[0..g->noutputs) (refs 1, in no scope). Returns 0, or -1 with an error
 * naming the failing node. */
int sc_exec(const ir_graph *g, tj_tensor *const *inputs, const int *last_use, tj_tensor **outs);

#endif
