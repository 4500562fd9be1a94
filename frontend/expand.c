/* expand.c - fe_expand(): how the eager API runs an XOP row of ops.def, a
 * composite with no kernel of its own. The call becomes a one-node graph
 * over the inputs' types (its rule checks them, so errors read as any op's),
 * ps_decompose_op replaces that node by its decomposition (passes/decomp_*.c),
 * and each node of the result runs through fe_apply in order. So the
 * decomposition is the op's one definition: eager results, traces (which
 * record the prims), autograd (on the prims) and compiled plans all follow
 * from it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/graph.h"
#include "../passes/pass.h"
#include "fe.h"

static tj_tensor *fail(ir_op op, tj_tensor *const *in, int nin, const char *why)
{
    char head[512], at[512];
    rt_describe_inputs(ir_ops[op].name, in, nin, head, sizeof head);
    rt_error("%s: %s%s", head, why, rt_callsite_suffix(at, sizeof at));
    return NULL;
}

/* The graph's reason without its "op(types): " head, which fail() adds. */
static const char *reason_of(const char *msg)
{
    const char *p = strstr(msg, "): ");
    return p ? p + 3 : msg;
}

static tj_tensor *run(ir_op op, const ir_graph *h, tj_tensor *const *in, int nin, tj_tensor **val)
{
    for (int k = 0; k < h->ninputs; k++)
        val[k] = in[(intptr_t)h->inputs[k]->aux];
    for (int k = 0; k < h->nnodes; k++) {
        const ir_node *n = h->nodes[k];
        tj_tensor *args[FE_MAX_INPUTS];
        for (int j = 0; j < n->nin; j++)
            args[j] = n->in[j] ? val[ir_slot(h, n->in[j])] : NULL;
        ir_attrs at;
        ir_node_attrs(n, &at);
        if (!(val[h->ninputs + k] = fe_apply(n->op, args, n->nin, &at))) {
            /* a data-dependent failure of a prim (an index out of range): the op first */
            char why[512];
            snprintf(why, sizeof why, "%s", tj_last_error());
            return fail(op, in, nin, why);
        }
    }
    const ir_node *o = h->outputs[0];
    if (ir_node_is_input(o))   /* the op is the identity here (t of a vector): a new reference */
        return rt_own(tj_retain(val[o->id]));
    return val[ir_slot(h, o)];
}

tj_tensor *fe_expand(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a)
{
    ir_graph *g = ir_graph_new(ir_ops[op].name), *h = NULL;
    ir_node *ins[FE_MAX_INPUTS];
    tj_tensor *r = NULL, **val = NULL;
    char err[512];
    if (!g)
        return fail(op, in, nin, "out of memory");
    for (int k = 0; k < nin; k++) {
        ins[k] = NULL;
        if (!in[k])
            continue;
        ir_type t;
        rt_type_of(in[k], &t);
        if (!(ins[k] = ir_graph_input(g, NULL, &t, false))) {
            fail(op, in, nin, ir_graph_error(g));
            goto out;
        }
        ins[k]->aux = (void *)(intptr_t)k;   /* which argument it stands for */
    }
    ir_node *n = ir_graph_add(g, op, ins, nin, a);
    if (!n) {
        fail(op, in, nin, reason_of(ir_graph_error(g)));
        goto out;
    }
    if (ir_graph_set_outputs(g, &n, 1) || !(h = ps_decompose_op(g, op, err, sizeof err))) {
        fail(op, in, nin, h ? ir_graph_error(g) : reason_of(err));
        goto out;
    }
    /* the rebuild keeps the inputs in order; their aux is not copied */
    for (int k = 0; k < h->ninputs; k++)
        h->inputs[k]->aux = g->inputs[k]->aux;
    if (!(val = calloc((size_t)ir_nslots(h), sizeof *val))) {
        fail(op, in, nin, "out of memory");
        goto out;
    }
    r = run(op, h, in, nin, val);
out:
    free(val);
    if (h != g)
        ir_graph_free(h);
    ir_graph_free(g);
    return r;
}
