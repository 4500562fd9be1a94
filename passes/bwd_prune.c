/* bwd_prune.c - a backward graph for a backward some of whose tangents got
 * no gradient (a compiled call's results that no backward reached): the
 * values that depend on tangents only through those are structural zeros and
 * go, as eager's walk sums nothing where no gradient arrives (partition.h).
 *
 * A backward graph is linear in its tangents, so a node whose every
 * tangent-dependent operand is such a zero is one too. An add of one and a
 * live value is the live value (a sub: negated when the zero comes first),
 * broadcast to the node's type; any other node reading one (a cat of
 * gradient pieces, a select) takes zeros of its type; an output that is a
 * zero becomes zeros. Multiplying the zero tangent through instead would
 * give 0 * inf = NaN where a forward value is infinite.
 */
#include <stdio.h>
#include <stdlib.h>

#include "build.h"
#include "partition.h"

/* The new node for old node n given its operands' state; zero: it is one. */
static ir_node *prune_node(ps_builder *b, const ir_node *n, ir_node **map, const bool *dep,
                           const bool *zero, const ir_graph *g, bool *is_zero)
{
    ir_node *in[64];
    int live = 0, zeros = 0, nin = n->nin < 64 ? n->nin : 64;
    for (int k = 0; k < nin; k++) {
        const ir_node *x = n->in[k];
        in[k] = x ? map[ir_slot(g, x)] : NULL;
        if (x && dep[ir_slot(g, x)])
            zero[ir_slot(g, x)] ? zeros++ : live++;
    }
    *is_zero = zeros > 0 && live == 0;
    if (*is_zero)
        return NULL;
    ir_attrs a;
    ir_node_attrs(n, &a);
    if (zeros && (n->op == OP_add || n->op == OP_sub) && nin == 2) {
        bool first = zero[ir_slot(g, n->in[0])];
        ir_node *v = first ? in[1] : in[0];
        if (first && n->op == OP_sub)
            v = ps_b_op(b, OP_neg, &v, 1, NULL);
        return v ? ps_b_like(b, v, &n->type) : NULL;
    }
    for (int k = 0; zeros && k < nin; k++)
        if (n->in[k] && zero[ir_slot(g, n->in[k])])
            in[k] = ps_b_const(b, 0, &n->in[k]->type);
    return ps_b_op(b, n->op, in, n->nin, &a);
}

ir_graph *ps_backward_prune(const ir_graph *bwd, const bool *absent, char *err, size_t nerr)
{
    int ns = ir_nslots(bwd);
    ir_node **map = calloc((size_t)ns + 1, sizeof *map);
    bool *dep = calloc((size_t)ns + 1, sizeof *dep), *zero = calloc((size_t)ns + 1, sizeof *zero);
    ir_node **outs = calloc((size_t)bwd->noutputs + 1, sizeof *outs);
    ir_graph *h = map && dep && zero && outs ? ir_graph_new(bwd->name) : NULL;
    ps_builder b;
    ps_b_init(&b, h);
    if (!h)
        ps_b_fail(&b, "out of memory");
    for (int k = 0; h && !b.failed && k < bwd->ninputs; k++) {
        const ir_node *x = bwd->inputs[k];
        if (!(map[k] = ir_graph_input(h, x->name, &x->type, x->param)))
            ps_b_fail(&b, "%s", ir_graph_error(h));
        dep[k] = ps_is_tangent(x);
        zero[k] = dep[k] && absent[k];
    }
    for (int i = 0; !b.failed && i < bwd->nnodes; i++) {
        const ir_node *n = bwd->nodes[i];
        int s = ir_slot(bwd, n);
        for (int k = 0; k < n->nin; k++)
            dep[s] |= n->in[k] && dep[ir_slot(bwd, n->in[k])];
        if (n->nin > 64)
            ps_b_fail(&b, "%s: %d operands", ir_ops[n->op].name, n->nin);
        else if (!(map[s] = prune_node(&b, n, map, dep, zero, bwd, &zero[s])) && !zero[s])
            ps_b_fail(&b, "%s: %s", ir_ops[n->op].name, b.err[0] ? b.err : "not rebuilt");
    }
    for (int o = 0; !b.failed && o < bwd->noutputs; o++) {
        const ir_node *x = bwd->outputs[o];
        outs[o] = zero[ir_slot(bwd, x)] ? ps_b_const(&b, 0, &x->type) : map[ir_slot(bwd, x)];
    }
    if (!b.failed && ir_graph_set_outputs(h, outs, bwd->noutputs) != 0)
        ps_b_fail(&b, "%s", ir_graph_error(h));
    if (b.failed) {
        snprintf(err, nerr, "backward prune: %s", b.err);
        ir_graph_free(h);
        h = NULL;
    }
    free(map);
    free(dep);
    free(zero);
    free(outs);
    return h;
}
