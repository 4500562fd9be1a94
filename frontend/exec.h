/* exec.h - internal to the frontend: the graph executor (exec.c). */
#ifndef TJ_FE_EXEC_H
#define TJ_FE_EXEC_H

#include "../ir/graph.h"
#include "fe.h"

/* For each value slot (inputs, then nodes), the index of the last node that
 * reads it (g->nnodes for outputs, -1 if unused). malloc'd; NULL when out of
 * memory. */
int *fe_exec_last_use(const ir_graph *g);

/* Runs g on concrete inputs[0..g->ninputs) and stores its outputs in
 * outs[0..g->noutputs) (refs 1, in no scope). Returns 0, or -1 with an error
 * naming the failing node. */
int fe_exec(const ir_graph *g, tj_tensor *const *inputs, const int *last_use, tj_tensor **outs);

#endif
