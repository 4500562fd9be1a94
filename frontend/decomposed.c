/* decomposed.c - the eager form of the COMPOSITE rows of ir/ops.def: ops
 * defined by their decomposition alone (leaky_relu, elu, hardswish, ...).
 *
 * Such a row has no eager kernel and no gradient rule of its own. fe_apply
 * hands it here: the op is put in a one-node graph over the inputs' types,
 * the decompose pass (passes/decompose.c, the one definition) rewrites it
 * into primitives, and each node of the result runs through fe_apply. So
 * eagerly the prims' kernels compute it, a trace records the prims (the
 * compiled form fuses them), and autograd differentiates the prims: the
 * gradient is the decomposition's, as PrimTorch's references are. The
 * pointwise UNARY/BINARY composites it meets (sigmoid, softplus's log1p, ...)
 * stay whole: they have kernels (ps_decompose_codegen).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/graph.h"
#include "../passes/pass.h"
#include "fe.h"

const bool fe_decomposed[IR_NUM_OPS] = {
#define COMPOSITE(name, kind, nmin, nmax, attrs) [OP_##name] = true,
#include "../ir/ops.def"
};

/* Runs the nodes of d (its inputs bound to in[], by input position) and
 * returns the value of its first output, or NULL (error set). */
static tj_tensor *run(const ir_graph *d, tj_tensor *const *bound, tj_tensor **val)
{
    for (int k = 0; k < d->nnodes; k++) {
        const ir_node *n = d->nodes[k];
        tj_tensor *in[FE_MAX_INPUTS];
        for (int j = 0; j < n->nin; j++) {
            const ir_node *m = n->in[j];
            in[j] = !m ? NULL : m->op == IR_OP_INPUT ? bound[m->id] : val[m->id];
        }
        ir_attrs a;
        ir_node_attrs(n, &a);
        if (!(val[k] = fe_apply(n->op, in, n->nin, &a)))
            return NULL;
    }
    const ir_node *o = d->outputs[0];
    if (o->op != IR_OP_INPUT)
        return val[o->id];
    tj_tensor *src = bound[o->id];   /* an identity: the result is still a new tensor */
    return fe_apply(OP_copy, &src, 1, NULL);
}

static bool is_half(tj_dtype dt) { return dt == TJ_F16 || dt == TJ_BF16; }

/* f16/bf16 inputs: the op in f32, its result rounded once to out (as the
 * compiled form decomposes half composites in f32). */
static tj_tensor *in_f32(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                         tj_dtype out)
{
    tj_tensor *w[FE_MAX_INPUTS];
    for (int k = 0; k < nin; k++) {
        w[k] = in[k];
        if (in[k] && is_half(in[k]->dtype)) {
            ir_attrs c = {0};
            ir_attr_int(&c.a[0], TJ_F32);
            if (!(w[k] = fe_apply(OP_cast, &in[k], 1, &c)))
                return NULL;
        }
    }
    tj_tensor *r = fe_apply(op, w, nin, a);
    if (!r || r->dtype == out)
        return r;
    ir_attrs c = {0};
    ir_attr_int(&c.a[0], out);
    return fe_apply(OP_cast, &r, 1, &c);
}

tj_tensor *fe_apply_decomposed(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                               const ir_type *const *types, tj_dtype out)
{
    for (int k = 0; k < nin; k++)
        if (types[k] && is_half(types[k]->dtype))
            return in_f32(op, in, nin, a, out);
    char err[512] = "";
    ir_graph *g = ir_graph_new(ir_ops[op].name), *d = NULL;
    tj_tensor *bound[FE_MAX_INPUTS], **val = NULL, *r = NULL;
    ir_node *x[FE_MAX_INPUTS];
    if (!g)
        goto oom;
    int nb = 0;
    for (int k = 0; k < nin; k++) {
        x[k] = NULL;
        if (!types[k])
            continue;
        if (!(x[k] = ir_graph_input(g, NULL, types[k], false)))
            goto graph_err;
        bound[nb++] = in[k];
    }
    ir_node *y = ir_graph_add(g, op, x, nin, a);
    if (!y)
        goto graph_err;
    if (ir_graph_set_outputs(g, &y, 1))
        goto graph_err;
    if (!(d = ps_decompose_codegen(g, err, sizeof err))) {
        rt_error("%s: its decomposition failed: %s", ir_ops[op].name, err[0] ? err : "out of memory");
        goto done;
    }
    if (d->nnodes && !(val = calloc((size_t)d->nnodes, sizeof *val)))
        goto oom;
    r = run(d, bound, val);
    goto done;
graph_err:
    rt_error("%s", ir_graph_error(g));
    goto done;
oom:
    rt_error("%s: out of memory", ir_ops[op].name);
done:
    free(val);
    if (d != g)
        ir_graph_free(d);
    ir_graph_free(g);
    return r;
}
