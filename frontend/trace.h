/* trace.h - internal to the frontend: the recording state of one trace.
 *
 * While a compiled model is traced, this thread's current trace is set and
 * fe_apply records every op into its graph instead of running a kernel. The
 * model's arguments are symbolic tensors (no storage) bound to the graph's
 * first inputs; concrete tensors the model reaches (weights) become params,
 * held by reference in `caps` (retained) in the order they were met.
 */
#ifndef TJ_FE_TRACE_H
#define TJ_FE_TRACE_H

#include "../ir/graph.h"
#include "fe.h"

struct fe_trace {
    ir_graph *g;
    tj_tensor **caps;      /* captured concrete tensors (retained) */
    ir_node **cap_nodes;   /* their param nodes */
    int ncaps, cap_cap;
    int nops;              /* ops recorded (for break positions) */
    ir_op last_op;
    char brk[512];         /* the first graph break, "" if none */
    bool dyn_read;         /* the model read the size of a symbolic dim */
    bool dyn_unsupported;  /* an op's rule could not follow a symbolic dim */
    const int64_t *symval; /* this call's size of each symbol (set by the caller) */
    int nsyms;
    bool failed;           /* out of memory or a graph error */
};

/* Starts recording on this thread into a new graph named name; NULL when out
 * of memory or when this thread already records (traces do not nest: a
 * compiled model called while tracing is inlined into the outer trace). */
fe_trace *fe_trace_begin(const char *name);
/* Stops recording and frees the trace (its graph too unless taken: set
 * tr->g = NULL first to keep it; caps are released unless taken likewise). */
void fe_trace_end(fe_trace *tr);
/* A symbolic tensor for graph input n of a trace, with example type ex. */
tj_tensor *fe_trace_arg(fe_trace *tr, ir_node *n, const ir_type *ex);
/* The graph node of a value met while tracing (symbolic: its node; concrete:
 * its param, made on first meeting); NULL on error. */
ir_node *fe_trace_value(fe_trace *tr, tj_tensor *x);

#endif
