/* freeze.c - tj_compile_options.freeze: captured weights as constants.
 *
 * The nodes of a traced graph that read only weights (params), never an
 * argument, compute the same value on every call: a weight's transpose, a
 * batch norm's scale 1/sqrt(var + eps) * gamma and shift. Frozen, they are
 * evaluated once, when the graph is made (on the graph executor), and the
 * graph is rebuilt with their values as its params:
 *
 *   graph(x, w, mean, var, g, b)          graph(x, wT', scale', shift')
 *     wT = transpose w          ->          y = matmul x, wT'
 *     y = matmul x, wT                      z = y * scale' + shift'
 *     ...
 *
 * The caller (compile.c) keeps the folded values (held) and guards the
 * original weights by identity and version: releasing one or writing it in
 * place makes the next call trace again (a recompile, within the limit).
 * Weights that unfolded nodes read stay params of the new graph, read on
 * every call. Before that, passes/fold_bn.c moves a batch norm after a
 * conv2d, linear or matmul on weights into their weight and bias, so the
 * folded graph is conv2d(x, w', b') alone.
 */
#include <stdlib.h>

#include "../passes/pass.h"
#include "../sched/exec.h"
#include "trace.h"

static ir_node *map_in(ir_node *const *map, const ir_graph *g, const ir_node *n)
{
    return n ? map[ir_slot(g, n)] : NULL;
}

/* Adds node n of g to out with inputs through map; NULL on error. */
static ir_node *copy_node(ir_graph *out, const ir_graph *g, const ir_node *n, ir_node *const *map)
{
    ir_node *in[FE_MAX_INPUTS];
    for (int k = 0; k < n->nin; k++)
        in[k] = map_in(map, g, n->in[k]);
    ir_attrs at;
    ir_node_attrs(n, &at);
    /* no call site: n's may live in the decomposed graph's arena, freed next */
    return ir_graph_add(out, n->op, in, n->nin, &at);
}

static int count_bn(const ir_graph *g)
{
    int n = 0;
    for (int k = 0; g && k < g->nnodes; k++)
        n += g->nodes[k]->op == OP_batch_norm;
    return n;
}

int fe_freeze_graph(const ir_graph *g0, tj_tensor *const *caps, ir_graph **out, tj_tensor ***consts,
                    int **src, int *nconsts, int *nbn)
{
    *out = NULL;
    *consts = NULL;
    *nconsts = 0;
    *nbn = 0;
    /* batch norm after a conv2d/linear/matmul on weights into that op's
     * weight and bias (passes/fold_bn.c), then composites (batch_norm into
     * its arithmetic), so their weight-only parts can fold */
    char err[256];
    ir_graph *bg = ps_fold_bn((ir_graph *)g0, err, sizeof err);
    if (bg)
        *nbn = count_bn(g0) - count_bn(bg);
    ir_graph *dg = bg ? ps_decompose_codegen(bg, err, sizeof err) : NULL;
    if (bg != g0 && dg != bg)   /* dg == bg: freed once, as dg */
        ir_graph_free(bg);
    if (!dg) {
        rt_error("freeze %s: %s", g0->name, err);
        return -1;
    }
    const ir_graph *g = dg;
    int ns = ir_nslots(g), rc = -1, nf = 0;
    bool *fold = NULL;
    bool *cst = calloc((size_t)ns + 1, sizeof *cst);       /* reads only weights */
    bool *front = calloc((size_t)ns + 1, sizeof *front);   /* a folded value a kept node reads */
    ir_node **map = calloc((size_t)ns + 1, sizeof *map);
    ir_node **fnodes = calloc((size_t)ns + 1, sizeof *fnodes);
    ir_graph *ev = ir_graph_new("freeze"), *ng = ir_graph_new(g->name);
    tj_tensor **params = calloc((size_t)g->ninputs + 1, sizeof *params);
    tj_tensor **vals = NULL;
    if (!cst || !front || !map || !fnodes || !ev || !ng || !params)
        goto out;
    /* cst: reads no argument (weights and constants only); fold: cst and
     * reads a weight (a pure constant, say a scalar, stays a node) */
    fold = calloc((size_t)ns + 1, sizeof *fold);
    if (!fold)
        goto out;
    for (int k = 0; k < g->ninputs; k++)
        cst[k] = fold[k] = g->inputs[k]->param;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        bool c = ir_ops[n->op].kind != IR_RANDOM, w = false;   /* a draw differs per call */
        for (int i = 0; i < n->nin; i++)
            if (n->in[i]) {
                c &= cst[ir_slot(g, n->in[i])];
                w |= fold[ir_slot(g, n->in[i])];
            }
        cst[g->ninputs + k] = c;
        fold[g->ninputs + k] = c && w;
    }
    /* the frontier: folded nodes (not bare params) that kept nodes or outputs read */
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int i = 0; !fold[g->ninputs + k] && i < n->nin; i++)
            if (n->in[i] && !ir_node_is_input(n->in[i]) && fold[ir_slot(g, n->in[i])])
                front[ir_slot(g, n->in[i])] = true;
    }
    for (int k = 0; k < g->noutputs; k++)
        if (!ir_node_is_input(g->outputs[k]) && fold[ir_slot(g, g->outputs[k])])
            front[ir_slot(g, g->outputs[k])] = true;
    for (int s = g->ninputs; s < ns; s++)
        if (front[s])
            fnodes[nf++] = g->nodes[s - g->ninputs];
    if (nf == 0) {
        rc = 0;   /* nothing to fold */
        goto out;
    }
    /* evaluate the folded part once: its params, its nodes */
    int np = 0;
    for (int k = 0; k < g->ninputs; k++)
        if (g->inputs[k]->param) {
            params[np] = caps[np];
            if (!(map[k] = ir_graph_input(ev, NULL, &g->inputs[k]->type, true)))
                goto out;
            np++;
        }
    for (int k = 0; k < g->nnodes; k++)
        if (cst[g->ninputs + k] && !(map[g->ninputs + k] = copy_node(ev, g, g->nodes[k], map)))
            goto out;
    ir_node **eo = malloc(sizeof *eo * (size_t)nf);
    if (!eo)
        goto out;
    for (int k = 0; k < nf; k++)
        eo[k] = map[ir_slot(g, fnodes[k])];
    int so = ir_graph_set_outputs(ev, eo, nf);
    free(eo);
    int *lu = so == 0 ? sc_exec_last_use(ev) : NULL;
    vals = calloc((size_t)nf + 1, sizeof *vals);
    if (!lu || !vals || sc_exec(ev, params, lu, vals) != 0) {
        free(lu);
        goto out;
    }
    free(lu);
    /* the new graph: arguments, the weights kept nodes still read, the
     * folded values; then the kept nodes */
    tj_tensor **cs = calloc((size_t)(np + nf) + 1, sizeof *cs);
    int *from = calloc((size_t)(np + nf) + 1, sizeof *from);
    if (!cs || !from) {
        free(cs);
        free(from);
        goto out;
    }
    int nc = 0;
    for (int k = 0, p = 0; k < g->ninputs; k++) {
        const ir_node *in = g->inputs[k];
        map[k] = NULL;
        if (in->param) {
            bool used = false;
            for (int j = 0; j < g->nnodes && !used; j++)
                for (int i = 0; !fold[g->ninputs + j] && i < g->nodes[j]->nin; i++)
                    used |= g->nodes[j]->in[i] == in;
            for (int j = 0; j < g->noutputs; j++)
                used |= g->outputs[j] == in;
            if (used && (map[k] = ir_graph_input(ng, NULL, &in->type, true)))
                from[nc++] = p;   /* the weight itself, read on every call */
            p++;
            if (used && !map[k])
                goto fail_cs;
        } else if (!(map[k] = ir_graph_input(ng, in->name, &in->type, false))) {
            goto fail_cs;
        }
    }
    for (int k = 0; k < nf; k++) {
        ir_type t;
        rt_type_of(vals[k], &t);
        t.weak = fnodes[k]->type.weak;
        if (!(map[ir_slot(g, fnodes[k])] = ir_graph_input(ng, NULL, &t, true)))
            goto fail_cs;
        from[nc] = -1;
        cs[nc++] = vals[k];
        vals[k] = NULL;
    }
    for (int k = 0; k < g->nnodes; k++)
        if (!fold[g->ninputs + k] && !(map[g->ninputs + k] = copy_node(ng, g, g->nodes[k], map)))
            goto fail_cs;
    ir_node **no = malloc(sizeof *no * (size_t)g->noutputs + 1);
    if (!no)
        goto fail_cs;
    for (int k = 0; k < g->noutputs; k++)
        no[k] = map[ir_slot(g, g->outputs[k])];
    so = ir_graph_set_outputs(ng, no, g->noutputs);
    free(no);
    if (so != 0)
        goto fail_cs;
    /* drop what only folded nodes read (bn's eps scalar, say) */
    ir_graph *lg = ps_dce(ng, err, sizeof err);
    if (!lg) {
        rt_error("freeze %s: %s", g->name, err);
        goto fail_cs;
    }
    if (lg != ng) {
        ir_graph_free(ng);
        ng = lg;
    }
    *out = ng;
    ng = NULL;
    *consts = cs;
    *src = from;
    *nconsts = nc;
    rc = 1;
    goto out;
fail_cs:
    for (int k = 0; k < nc; k++)
        tj_release(cs[k]);
    free(cs);
    free(from);
out:
    if (rc < 0 && !rt_has_error())
        rt_error("freeze %s: out of memory", g->name);
    for (int k = 0; vals && k < nf; k++)
        tj_release(vals[k]);
    free(vals);
    free(params);
    ir_graph_free(ev);
    ir_graph_free(ng);
    free(fnodes);
    free(map);
    free(front);
    free(fold);
    free(cst);
    if (dg != g0)
        ir_graph_free(dg);
    return rc;
}
