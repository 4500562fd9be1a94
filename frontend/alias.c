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
 * stays, as eager's reshape would copy too. Which results eager made views,
 * and of what, is decided when tracing (fe_alias_viewed) from the storage
 * each traced tensor stands for: a view of a twin (clone(x) twice: one node,
 * two storages) views that twin, not the first result of the node.
 */
#include "trace.h"

#define ALIAS_MAX_CHAIN 32

/* The base of n below its view ops (chain[0..*len) from n down), or NULL. */
static const ir_node *view_base(const ir_node *n, const ir_node **chain, int *len)
{
    const ir_node *b = ir_view_chain(n, chain, ALIAS_MAX_CHAIN, len);
    return ir_node_is_view(b) ? NULL : b;
}

int fe_alias_viewed(fe_trace *tr, tj_tensor *const *res, ir_node **outs, int nres, int8_t *view)
{
    for (int k = 0; k < nres; k++) {
        const ir_node *chain[ALIAS_MAX_CHAIN];
        int len;
        const ir_node *base = view_base(outs[k], chain, &len);
        bool input = base && ir_node_is_input(base), result = false;
        view[k] = -1;
        if (input) {   /* arguments first, then the captures */
            int id = base->id;
            const tj_tensor *h = id < tr->nargs ? tr->args[id]
                                 : id - tr->nargs < tr->ncaps ? tr->caps[id - tr->nargs] : NULL;
            if (h && fe_alias_of(h) == fe_alias_of(res[k]))
                view[k] = FE_VIEWS_INPUT;
        }
        for (int j = 0; base && !input && len && j < nres && view[k] < 0; j++)
            if (j != k && outs[j] == base) {
                result = true;
                if (fe_alias_of(res[j]) == fe_alias_of(res[k]))
                    view[k] = (int8_t)j;
            }
        /* eagerly a tensor of its own: the plan must not return the
         * input's or another result's memory */
        if (view[k] == -1 && (input || result) && !(outs[k] = ir_graph_add(tr->g, OP_copy, &outs[k], 1, NULL))) {
            rt_error("tracing: %s", ir_graph_error(tr->g));
            return -1;
        }
    }
    return 0;
}

void fe_alias_results(const ir_graph *g, int nresults, const int8_t *view, tj_tensor *const *inputs,
                      tj_tensor **outs)
{
    for (int k = 0; k < nresults; k++) {
        const ir_node *chain[ALIAS_MAX_CHAIN];
        int len;
        const ir_node *base = view_base(g->outputs[k], chain, &len);
        if (!base || view[k] == -1)
            continue;   /* computed, or a tensor of its own: the plan's tensor is the result */
        tj_tensor *v = view[k] == FE_VIEWS_INPUT ? (ir_node_is_input(base) ? inputs[base->id] : NULL)
                       : g->outputs[view[k]] == base ? outs[view[k]] : NULL;
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
