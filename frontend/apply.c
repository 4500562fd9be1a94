/* apply.c - fe_apply(): the path from an op call to its result. */
#include <stdio.h>
#include <string.h>

#include "autograd.h"

static tj_tensor *op_error(ir_op op, tj_tensor *const *in, int nin, const char *reason)
{
    char head[512], at[512];
    rt_describe_inputs(ir_ops[op].name, in, nin, head, sizeof head);
    rt_error("%s: %s%s", head, reason, rt_callsite_suffix(at, sizeof at));
    return NULL;
}

/* A released handle as input: its header is poisoned (runtime/tensor.c);
 * its shape is not read. */
static tj_tensor *released(ir_op op, int k)
{
    rt_error("%s: input %d is a released tensor (used after tj_release)", ir_ops[op].name, k);
    return NULL;
}

tj_tensor *fe_apply(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a)
{
    const ir_opinfo *info = &ir_ops[op];
    ir_type types[FE_MAX_INPUTS], *tp[FE_MAX_INPUTS];
    if (nin > FE_MAX_INPUTS) {
        char why[64];
        snprintf(why, sizeof why, "more than %d inputs", FE_MAX_INPUTS);
        return op_error(op, in, 0, why);
    }
    for (int k = 0; k < nin; k++) {
        if (!in[k]) {
            if (k < info->nmin) {
                if (!rt_has_error())
                    rt_error("%s: input %d is NULL%s", info->name, k, rt_callsite_suffix((char[512]){0}, 512));
                return NULL;
            }
            tp[k] = NULL;
            continue;
        }
        if (rt_dead(in[k]))
            return released(op, k);
        rt_type_of(in[k], &types[k]);
        tp[k] = &types[k];
    }
    tj_tensor *cast[FE_MAX_INPUTS];
    int ncast = fe_autocast_inputs(op, in, nin, cast);
    if (ncast < 0)
        return NULL;
    if (ncast > 0)
        return fe_apply(op, cast, nin, a);   /* the cast inputs need no casts */
    ir_type out;
    char reason[256];
    ir_attrs none;
    if (!a) {
        memset(&none, 0, sizeof none);
        a = &none;
    }
    fe_trace *tr = fe_trace_current();
    bool by_decomp = info->eager_decomp && (!tr || fe_ag_wants_grad(in, nin) ||
                                            fe_decomp_is_view(op, in, nin, a, (const ir_type *const *)tp));
    char fails[256];
    if (tr && !by_decomp && info->eager_decomp && fe_decomp_fails_symbolic(op, in, nin, a, fails, sizeof fails))
        fe_trace_dyn_unsupported(tr, "%s: %s", info->name, fails);
    if (tr && !by_decomp) {
        tj_tensor *r = fe_trace_apply(tr, op, in, nin, a);
        if (r && info->kind == IR_VIEW && fe_ag_view_made(op, a, r, in[0]) != 0) {
            tj_release(r);
            return NULL;
        }
        return fe_ag_record(op, in, nin, a, r);
    }
    if (ir_infer(op, (const ir_type *const *)tp, nin, a, &out, reason, sizeof reason) != 0)
        return op_error(op, in, nin, reason);
    if (by_decomp && tr && fe_decomp_reads_sizes(op, in, nin, a, (const ir_type *const *)tp)) {
        bool tried;   /* built on the symbols, when none lands in an attribute */
        tj_tensor *r = fe_apply_decomposed_symbolic(op, in, nin, a, &tried);
        if (tried)
            return r;
        for (int k = 0; k < nin; k++)   /* the prims would hold the example's sizes */
            fe_trace_shape_read(in[k]);
    }
    if (by_decomp)   /* a DCOMP row: its prims run (apply_decomp.c) */
        return fe_apply_decomposed(op, in, nin, a, (const ir_type *const *)tp);
    tj_tensor *r = rt_eager(op, in, nin, a, &out);
    if (r && info->kind == IR_VIEW && fe_ag_view_made(op, a, r, in[0]) != 0) {
        tj_release(r);
        r = NULL;
    }
    if (!r) {
        /* Kernel messages carry the reason; prefix the op and shapes. */
        char why[512];
        snprintf(why, sizeof why, "%s", tj_last_error());
        return op_error(op, in, nin, why[0] ? why : "failed");
    }
    return fe_ag_record(op, in, nin, a, rt_own(r));
}

tj_tensor *fe_wrap_scalar(double v, const tj_tensor *like)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], v);
    ir_attr_int(&at.a[1], like ? ir_scalar_dtype(v, like->dtype) : TJ_F64);
    return fe_apply(OP_scalar, NULL, 0, &at);
}
