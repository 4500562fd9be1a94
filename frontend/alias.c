/* alias.c - the results of a compiled call alias what eager results alias.
 *
 * A plan returns each output as a fresh tensor. Eagerly, a model that
 * returns an argument returns that tensor, and one that returns a view of
 * an argument or of another result (a reshape, a transpose, a slice) returns
 * a view sharing its storage: a write through one is seen through the other.
 * After a call, each result whose node is an input (an argument or a
 * weight), or a chain of view ops over an input or over another result's
 * node, is rebuilt that way: the view ops are applied eagerly (views copy
 * nothing) to the concrete base. The plan's copy is released; when a view
 * cannot be made eagerly (a reshape of strides that need a copy), the copy
 * stays, as eager's reshape would copy too.
 */
#include "trace.h"

#define ALIAS_MAX_CHAIN 32

/* The base of n below its view ops (chain[0..*len) from n down), or NULL. */
static const ir_node *view_base(const ir_node *n, const ir_node **chain, int *len)
{
    *len = 0;
    while (!ir_node_is_input(n) && ir_ops[n->op].kind == IR_VIEW && n->nin >= 1 && n->in[0]) {
        if (*len == ALIAS_MAX_CHAIN)
            return NULL;
        chain[(*len)++] = n;
        n = n->in[0];
    }
    return n;
}

/* The concrete tensor standing for base, or NULL: an input, or the result
 * j != k whose node is base and is not itself rebuilt. */
static tj_tensor *base_value(const ir_graph *g, const ir_node *base, int k, int nresults,
                             tj_tensor *const *inputs, tj_tensor **outs)
{
    if (ir_node_is_input(base))
        return inputs[base->id];
    for (int j = 0; j < nresults; j++)
        if (j != k && g->outputs[j] == base)
            return outs[j];
    return NULL;
}

void fe_alias_results(const ir_graph *g, int nresults, tj_tensor *const *inputs, tj_tensor **outs)
{
    for (int k = 0; k < nresults; k++) {
        const ir_node *chain[ALIAS_MAX_CHAIN];
        int len;
        const ir_node *base = view_base(g->outputs[k], chain, &len);
        if (!base || (!ir_node_is_input(base) && len == 0))
            continue;   /* computed: the plan's tensor is the result */
        tj_tensor *v = base_value(g, base, k, nresults, inputs, outs);
        if (!v)
            continue;
        tj_tensor *r = tj_retain(v);
        for (int i = len - 1; i >= 0 && r; i--) {
            ir_attrs at;
            ir_node_attrs(chain[i], &at);
            tj_tensor *in[1] = {r};
            tj_tensor *nv = fe_apply(chain[i]->op, in, 1, &at);   /* owned by the scope */
            tj_release(r);
            r = nv && nv->storage == v->storage ? tj_retain(nv) : NULL;
        }
        if (!r) {
            tj_clear_error();   /* not a view eagerly either: keep the copy */
            continue;
        }
        /* results live in the caller's scope: hand over our hold */
        outs[k] = rt_own(r);
    }
}
