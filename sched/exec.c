/* exec.c - the graph executor: runs a graph node by node with the eager
 * kernels. It is the reference for compiled code and the fallback for ops
 * without a lowering.
 *
 * Each node's concrete type is recomputed from its inputs' concrete types
 * (ir_infer), so one graph with symbolic dims runs at any size its guards
 * admit. A value is released right after its last use.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../passes/pass.h"
#include "exec.h"

int *sc_exec_last_use(const ir_graph *g)
{
    int n = ir_nslots(g);
    int *last = malloc((size_t)(n ? n : 1) * sizeof *last);
    if (!last)
        return NULL;
    for (int k = 0; k < n; k++)
        last[k] = -1;
    for (int k = 0; k < g->nnodes; k++)
        for (int j = 0; j < g->nodes[k]->nin; j++)
            if (g->nodes[k]->in[j])
                last[ir_slot(g, g->nodes[k]->in[j])] = k;
    for (int k = 0; k < g->noutputs; k++)
        last[ir_slot(g, g->outputs[k])] = g->nnodes;   /* outputs live to the end */
    return last;
}

#define EXEC_MAX_IN 256

/* A DCOMP node (no kernel): its decomposition at these types, run here. */
static tj_tensor *run_decomposed(const ir_node *n, tj_tensor *const *in, const ir_type *const *tp,
                                 const ir_attrs *a)
{
    char err[256];
    ir_graph *d = ps_decompose_one(n->op, tp, n->nin, a, err, sizeof err);
    if (!d) {
        rt_error("%s", err);
        return NULL;
    }
    tj_tensor *args[EXEC_MAX_IN], *r = NULL;
    int na = 0;
    for (int j = 0; j < n->nin; j++)
        if (in[j])
            args[na++] = in[j];
    int *last = sc_exec_last_use(d);
    if (!last)
        rt_error("out of memory");
    else if (sc_exec(d, args, last, &r) != 0)
        r = NULL;
    free(last);
    ir_graph_free(d);
    return r;
}

static tj_tensor *run_node(const ir_graph *g, const ir_node *n, tj_tensor **vals)
{
    tj_tensor *in[EXEC_MAX_IN];
    ir_type ty[EXEC_MAX_IN], out;
    const ir_type *tp[EXEC_MAX_IN];
    if (n->nin > EXEC_MAX_IN) {
        rt_error("%s: %d inputs (the executor takes at most %d) (node %%%d of graph @%s)",
                 ir_ops[n->op].name, n->nin, EXEC_MAX_IN, n->id, g->name);
        return NULL;
    }
    for (int j = 0; j < n->nin; j++) {
        in[j] = n->in[j] ? vals[ir_slot(g, n->in[j])] : NULL;
        tp[j] = NULL;
        if (in[j]) {
            rt_type_of(in[j], &ty[j]);
            tp[j] = &ty[j];
        }
    }
    ir_attrs a;
    ir_node_attrs(n, &a);
    char reason[256], head[512];
    if (ir_infer(n->op, tp, n->nin, &a, &out, reason, sizeof reason) != 0) {
        rt_describe_inputs(ir_ops[n->op].name, in, n->nin, head, sizeof head);
        rt_error("%s: %s (node %%%d of graph @%s)", head, reason, n->id, g->name);
        return NULL;
    }
    tj_tensor *r = ir_ops[n->op].eager_decomp ? run_decomposed(n, in, tp, &a)
                                              : rt_eager(n->op, in, n->nin, &a, &out);
    if (!r) {
        char why[512];
        snprintf(why, sizeof why, "%s", tj_last_error());
        rt_describe_inputs(ir_ops[n->op].name, in, n->nin, head, sizeof head);
        rt_error("%s: %s (node %%%d of graph @%s)", head, why, n->id, g->name);
    }
    return r;
}

int sc_exec(const ir_graph *g, tj_tensor *const *inputs, const int *last_use, tj_tensor **outs)
{
    int nslots = ir_nslots(g);
    tj_tensor *stack_vals[256];
    tj_tensor **vals = nslots <= 256 ? stack_vals : calloc((size_t)nslots, sizeof *vals);
    if (!vals) {
        rt_error("out of memory running graph @%s", g->name);
        return -1;
    }
    for (int k = 0; k < g->ninputs; k++)
        vals[k] = inputs[k];
    int k = 0;
    for (; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        int s = ir_slot(g, n);
        if (!(vals[s] = run_node(g, n, vals)))
            break;
        for (int j = 0; j < n->nin; j++) {
            const ir_node *in = n->in[j];
            if (in && !ir_node_is_input(in) && last_use[ir_slot(g, in)] == k) {
                tj_release(vals[ir_slot(g, in)]);
                vals[ir_slot(g, in)] = NULL;
            }
        }
        if (last_use[s] < 0) {   /* dead node: free at once */
            tj_release(vals[s]);
            vals[s] = NULL;
        }
    }
    if (k == g->nnodes)
        for (int j = 0; j < g->noutputs; j++)
            outs[j] = tj_retain(vals[ir_slot(g, g->outputs[j])]);
    for (int j = 0; j < k; j++)
        tj_release(vals[ir_slot(g, g->nodes[j])]);
    if (vals != stack_vals)
        free(vals);
    return k == g->nnodes ? 0 : -1;
}
