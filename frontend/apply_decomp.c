/* apply_decomp.c - the eager path of DCOMP rows (ir/ops.def): composites with
 * no kernel of their own. fe_apply hands such an op here; its decomposition
 * (passes/decompose.c, the one definition) is built for these input types and
 * each of its nodes is applied through fe_apply in order. So the prims run
 * eagerly, autograd records the prims (no VJP of its own is needed) and a
 * trace that needs gradients records them too. A trace without gradients
 * records the composite itself (fe_apply): the compiled pipeline decomposes
 * it with the graph's symbolic dims. f16/bf16 inputs: the decomposition
 * (passes/decompose.c) casts them to f32 and its result back, so a DCOMP row
 * on half inputs computes in f32 and is rounded once, eager as compiled. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../passes/pass.h"
#include "autograd.h"

static tj_tensor *fail(ir_op op, tj_tensor *const *in, int nin, const char *why)
{
    char head[512], msg[768];
    snprintf(msg, sizeof msg, "%s", why);
    rt_describe_inputs(ir_ops[op].name, in, nin, head, sizeof head);
    rt_error("%s: %s", head, msg);
    return NULL;
}

/* Whether out shares the storage of one of g's inputs (vals[0..ninputs)). */
static bool shares(const ir_graph *g, tj_tensor *const *vals, const tj_tensor *out)
{
    for (int k = 0; k < g->ninputs; k++)
        if (vals[k] && vals[k]->storage == out->storage)
            return true;
    return false;
}

/* Applies g's nodes to vals (inputs already set); the output, kept past the
 * scope the intermediates die in, or NULL. Autocast is off inside: it casts
 * the composite's inputs (fe_apply) and never its prims, as in PyTorch (an
 * op's autocast wrapper runs its body with autocast excluded) and as a
 * compiled plan does (a trace records the composite; the passes decompose it
 * outside any scope): a dot of f32 vectors is f32 inside an f16 scope,
 * though its decomposition is a matmul. */
static tj_tensor *replay(const ir_graph *g, tj_tensor **vals)
{
    tj_tensor *ins[FE_MAX_INPUTS], *r = NULL;
    if (tj_autocast(TJ_F32) != 0) {   /* more nested scopes than allowed: the error says so */
        tj_autocast_end();
        return NULL;
    }
    tj_scope_begin();
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int j = 0; j < n->nin; j++)
            ins[j] = n->in[j] ? vals[ir_slot(g, n->in[j])] : NULL;
        ir_attrs at;
        ir_node_attrs(n, &at);
        if (!(vals[g->ninputs + k] = fe_apply(n->op, ins, n->nin, &at)))
            break;
    }
    tj_tensor *out = vals[ir_slot(g, g->outputs[0])];
    if (out && (g->outputs[0]->op == IR_OP_INPUT || (ir_view_chain_expands(g->outputs[0]) && shares(g, vals, out))))
        out = fe_apply(OP_copy, &out, 1, NULL);   /* an identity, or a repeat: still a new tensor */
    if (out)
        r = tj_keep(out);
    tj_scope_end();
    tj_autocast_end();
    return r;
}

/* g's text without types (each line cut at " : ", the header line dropped):
 * its ops, uses and attributes. Malloc'd, NULL out of memory. */
static char *untyped(const ir_graph *g)
{
    char *t = ir_print(g, NULL);
    if (!t)
        return NULL;
    char *w = t, *line = strchr(t, '\n');   /* past the header */
    for (line = line ? line + 1 : t + strlen(t); *line;) {
        char *end = strchr(line, '\n'), *cut = strstr(line, " : ");
        size_t keep = (size_t)((cut && (!end || cut < end) ? cut : end ? end : line + strlen(line)) - line);
        memmove(w, line, keep);
        w += keep;
        *w++ = '\n';
        line = end ? end + 1 : line + strlen(line);
    }
    *w = '\0';
    return t;
}

/* Whether op decomposes on the types t1 and on t2 into the same ops and
 * attributes (types aside); false when either fails. */
static bool same_decomposition(ir_op op, const ir_type *const *t1, const ir_type *const *t2, int nin,
                               const ir_attrs *a)
{
    char err[64];
    ir_graph *g1 = ps_decompose_one(op, t1, nin, a, err, sizeof err);
    ir_graph *g2 = g1 ? ps_decompose_one(op, t2, nin, a, err, sizeof err) : NULL;
    char *s1 = g1 ? untyped(g1) : NULL, *s2 = g2 ? untyped(g2) : NULL;
    bool same = s1 && s2 && strcmp(s1, s2) == 0;
    free(s1);
    free(s2);
    ir_graph_free(g1);
    ir_graph_free(g2);
    return same;
}

bool fe_decomp_reads_sizes(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                           const ir_type *const *types)
{
    ir_type alt[FE_MAX_INPUTS];
    const ir_type *ta[FE_MAX_INPUTS];
    bool sym = false;
    for (int k = 0; k < nin && k < FE_MAX_INPUTS; k++) {
        ta[k] = types[k];
        if (!in[k] || !types[k])
            continue;
        ir_type st;
        fe_trace_type(in[k], &st);
        alt[k] = *types[k];
        for (int d = 0; d < st.ndim && d < alt[k].ndim; d++)
            if (IR_IS_SYM(st.shape[d])) {   /* each symbol alike: 7 more */
                alt[k].shape[d] += 7;
                sym = true;
            }
        ta[k] = &alt[k];
    }
    return sym && !same_decomposition(op, types, ta, nin, a);
}

/* The symbolic types of in[0..nin) into st, and whether op's decomposition
 * on them holds no symbol in its attributes (the same text with every
 * symbol renumbered). */
static bool free_of_symbols(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a, ir_type *st,
                            ir_type *alt)
{
    const ir_type *ts[FE_MAX_INPUTS], *ta[FE_MAX_INPUTS];
    bool sym = false;
    for (int k = 0; k < nin; k++) {
        ts[k] = ta[k] = NULL;
        if (!in[k])
            continue;
        fe_trace_type(in[k], &st[k]);
        alt[k] = st[k];
        for (int d = 0; d < alt[k].ndim; d++)   /* each symbol another one: s0 as s17 */
            if (IR_IS_SYM(alt[k].shape[d]))
                alt[k].shape[d] = ir_sym_at(ir_sym_index(alt[k].shape[d]) + 17, ir_sym_delta(alt[k].shape[d]));
        sym |= ir_type_has_sym(&st[k]);
        ts[k] = &st[k];
        ta[k] = &alt[k];
    }
    return sym && same_decomposition(op, ts, ta, nin, a);
}

tj_tensor *fe_apply_decomposed_symbolic(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                                        bool *tried)
{
    *tried = false;
    if (nin > FE_MAX_INPUTS)
        return NULL;
    ir_type *st = malloc(sizeof *st * 2 * ((size_t)nin + 1));
    const ir_type *tp[FE_MAX_INPUTS];
    tj_tensor *r = NULL;
    if (st && free_of_symbols(op, in, nin, a, st, st + nin + 1)) {
        for (int k = 0; k < nin; k++)
            tp[k] = in[k] ? &st[k] : NULL;
        *tried = true;
        r = fe_apply_decomposed(op, in, nin, a, tp);
    }
    free(st);
    return r;
}

bool fe_decomp_fails_symbolic(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                              char *why, size_t n)
{
    ir_type st[FE_MAX_INPUTS];
    const ir_type *ts[FE_MAX_INPUTS];
    bool sym = false;
    for (int k = 0; k < nin && k < FE_MAX_INPUTS; k++) {
        ts[k] = NULL;
        if (!in[k])
            continue;
        fe_trace_type(in[k], &st[k]);
        ts[k] = &st[k];
        sym |= ir_type_has_sym(&st[k]);
    }
    if (!sym || nin > FE_MAX_INPUTS)
        return false;
    ir_graph *g = ps_decompose_one(op, ts, nin, a, why, n);
    ir_graph_free(g);
    return g == NULL;
}

bool fe_decomp_is_view(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                       const ir_type *const *types)
{
    if (ir_ops[op].kind != IR_MOVE || nin < 1 || !in[0])
        return false;
    char err[64];
    ir_graph *g = ps_decompose_one(op, types, nin, a, err, sizeof err);
    if (!g)
        return false;
    /* eager replays the chain on in[0]'s strides (a traced tensor has
     * eager's): a view when every step is one (a reshape the strides forbid
     * copies, so does a reshape of an expand: replay), and as_strided, or a
     * reshape over symbolic dims, is not followed */
    const ir_node *chain[64];
    int nc;
    bool view = ps_decomp_views_input(g, chain, 64, &nc), sym = false;
    for (int k = 0; k < nc; k++) {
        view &= chain[k]->op != OP_as_strided;
        sym |= ir_type_has_sym(&chain[k]->type) || ir_type_has_sym(&chain[k]->in[0]->type);
    }
    tj_tensor h = {.magic = RT_LIVE, .refs = 1, .dtype = in[0]->dtype, .ndim = in[0]->ndim};
    memcpy(h.shape, in[0]->shape, sizeof h.shape);
    memcpy(h.strides, in[0]->strides, sizeof h.strides);
    for (int k = nc - 1; k >= 0 && view; k--) {   /* permutes, slices, squeezes: always views */
        ir_attrs at;
        ir_node_attrs(chain[k], &at);
        int64_t st[TJ_MAX_DIMS];
        view = !(sym && chain[k]->op == OP_reshape) && rt_view_strides(chain[k]->op, &h, &at, &chain[k]->type, st, NULL);
        h.ndim = chain[k]->type.ndim;
        memcpy(h.shape, chain[k]->type.shape, sizeof h.shape);
        memcpy(h.strides, st, sizeof h.strides);
    }
    ir_graph_free(g);
    return view;
}

tj_tensor *fe_apply_decomposed(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                               const ir_type *const *types)
{
    char err[256];
    ir_graph *g = ps_decompose_one(op, types, nin, a, err, sizeof err);
    if (!g)
        return fail(op, in, nin, err);
    tj_tensor **vals = calloc((size_t)ir_nslots(g), sizeof *vals);
    if (!vals) {
        ir_graph_free(g);
        return fail(op, in, nin, "out of memory");
    }
    for (int k = 0, j = 0; k < nin; k++)
        if (in[k])
            vals[j++] = in[k];
    tj_tensor *r = replay(g, vals);
    free(vals);
    ir_graph_free(g);
    if (!r) {
        char why[512];
        snprintf(why, sizeof why, "%s", tj_last_error());
        return fail(op, in, nin, why[0] ? why : "failed");
    }
    return rt_own(r);
}
