/* fold_bn.c - the fold_bn pass: batch norm (inference: running statistics)
 * after a conv2d, a linear or a matmul on weights is folded into that op's
 * weight and bias, as torch.fx's fuse_conv_bn_eval does for a frozen model:
 *
 *   y = bn(conv2d(x, w, b), mean, var, g, beta)
 *     alpha = g / sqrt(var + eps)                (rsqrt(var + eps) without g)
 *     shift = beta - mean * alpha                (-(mean * alpha) without beta)
 *   y = conv2d(x, w * alpha[:, None, None, None], b * alpha + shift)
 *
 * linear(x, w, b) on rows (x of rank 2, bn over its features) takes
 * w * alpha[:, None]; matmul(x, W) (both of rank 2) takes W * alpha and adds
 * shift after it, and add(matmul(x, W), b) with b of shape [F] folds b too.
 *
 * The rewrite fires only when everything the new weight and bias read is a
 * weight (reads no argument: params and what only they feed), the conv or
 * matmul feeds the bn alone, and the dtype is f32 or f64; so on a frozen graph
 * (frontend/freeze.c runs this pass first) the new weight and bias are
 * evaluated once at compile time and the bn is gone. On any other graph the
 * pass changes nothing. */
#include <stdio.h>
#include <stdlib.h>

#include "rewrite.h"

typedef struct fold_ctx {
    const ir_graph *g;
    const bool *cst;    /* by slot: reads no argument, only weights */
    const int *users;   /* by slot: readers, a graph output counting as one */
    int fired;
} fold_ctx;

static bool is_cst(const fold_ctx *c, const ir_node *n)
{
    return !n || c->cst[ir_slot(c->g, n)];
}

static bool sole_use(const fold_ctx *c, const ir_node *n)
{
    return !ir_node_is_input(n) && c->users[ir_slot(c->g, n)] == 1;
}

static bool rank2_matmul_on_weight(const fold_ctx *c, const ir_node *m)
{
    return m->op == OP_matmul && sole_use(c, m) && m->in[0]->type.ndim == 2 &&
           m->in[1]->type.ndim == 2 && is_cst(c, m->in[1]) && !is_cst(c, m->in[0]);
}

/* Whether bn (old graph) folds into its input. */
static bool foldable(const fold_ctx *c, const ir_node *bn)
{
    const ir_node *p = bn->in[0];
    tj_dtype dt = bn->type.dtype;
    if ((dt != TJ_F32 && dt != TJ_F64) || bn->type.ndim < 2 || IR_IS_SYM(bn->type.shape[1]) ||
        !sole_use(c, p))
        return false;
    for (int k = 1; k < bn->nin; k++)
        if (bn->in[k] && (!is_cst(c, bn->in[k]) || bn->in[k]->type.dtype != dt))
            return false;
    switch (p->op) {
    case OP_conv2d:
        return p->type.ndim == 4 && !is_cst(c, p->in[0]) && is_cst(c, p->in[1]) &&
               (p->nin < 3 || is_cst(c, p->in[2])) && p->in[1]->type.dtype == dt;
    case OP_linear:
        return p->type.ndim == 2 && !is_cst(c, p->in[0]) && is_cst(c, p->in[1]) &&
               (p->nin < 3 || is_cst(c, p->in[2])) && p->in[1]->type.dtype == dt;
    case OP_matmul:
        return rank2_matmul_on_weight(c, p) && p->in[1]->type.dtype == dt;
    case OP_add: {   /* add(matmul(x, W), b) with b of shape [F] */
        const ir_node *m = p->in[0], *b = p->in[1];
        return p->type.ndim == 2 && rank2_matmul_on_weight(c, m) && m->in[1]->type.dtype == dt &&
               is_cst(c, b) && b->type.ndim == 1 && b->type.shape[0] == bn->type.shape[1] &&
               b->type.dtype == dt;
    }
    default:
        return false;
    }
}

/* bn's replacement; in: bn's inputs in the new graph (in[0]: the producer). */
static ir_node *fold(ps_builder *b, const ir_node *bn, ir_node *const *in)
{
    ir_node *p = in[0], *mean = in[1], *var = in[2];
    ir_node *g = bn->nin > 3 ? in[3] : NULL, *beta = bn->nin > 4 ? in[4] : NULL;
    int64_t ch = bn->type.shape[1];
    ir_attrs ba;
    ir_node_attrs(bn, &ba);
    ir_node *sd = b_add_s(b, var, ba.a[0].f);
    ir_node *alpha = g ? b_div(b, g, b_un(b, OP_sqrt, sd)) : b_un(b, OP_rsqrt, sd);
    ir_node *ma = b_mul(b, mean, alpha);
    ir_node *shift = beta ? b_sub(b, beta, ma) : b_neg(b, ma);
    ir_attrs at;
    ir_node_attrs(p, &at);
    switch (p->op) {
    case OP_conv2d:
    case OP_linear: {
        int64_t shape[4] = {ch, 1, 1, 1};
        ir_node *w = b_mul(b, p->in[1], ps_b_reshape(b, alpha, shape, p->in[1]->type.ndim));
        ir_node *bias = p->nin > 2 && p->in[2] ? b_add(b, b_mul(b, p->in[2], alpha), shift) : shift;
        return ps_b_op(b, p->op, (ir_node *[]){p->in[0], w, bias}, 3, &at);
    }
    case OP_matmul:
        return b_add(b, b_matmul(b, p->in[0], b_mul(b, p->in[1], alpha)), shift);
    default: {   /* add(matmul(x, W), bias) */
        ir_node *m = p->in[0];
        ir_node *mm = b_matmul(b, m->in[0], b_mul(b, m->in[1], alpha));
        return b_add(b, mm, b_add(b, b_mul(b, p->in[1], alpha), shift));
    }
    }
}

static ir_node *hook(ps_builder *b, const ir_node *old, ir_node *const *in, void *ctx)
{
    fold_ctx *c = ctx;
    if (old->op == OP_batch_norm && foldable(c, old)) {
        ir_node *r = fold(b, old, in);
        if (r && !ir_type_same(&r->type, &old->type))
            return ps_b_fail(b, "fold_bn made a node of another type");
        c->fired++;
        return r;
    }
    ir_attrs a;
    ir_node_attrs(old, &a);
    return ps_b_op(b, old->op, in, old->nin, &a);
}

ir_graph *ps_fold_bn(ir_graph *g, char *err, size_t nerr)
{
    int ns = ir_nslots(g);
    bool *cst = calloc((size_t)ns + 1, sizeof *cst), any = false;
    int *users = calloc((size_t)ns + 1, sizeof *users);
    ir_graph *h = NULL;
    if (!cst || !users) {
        snprintf(err, nerr, "out of memory");
        goto out;
    }
    for (int k = 0; k < g->ninputs; k++)
        cst[k] = g->inputs[k]->param;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        bool c = true;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i]) {
                c &= cst[ir_slot(g, n->in[i])];
                users[ir_slot(g, n->in[i])]++;
            }
        cst[g->ninputs + k] = c;
        any |= n->op == OP_batch_norm;
    }
    for (int k = 0; k < g->noutputs; k++)
        users[ir_slot(g, g->outputs[k])]++;
    if (!any) {
        h = g;
        goto out;
    }
    fold_ctx c = {g, cst, users, 0};
    ir_graph *r = ps_rebuild(g, NULL, hook, &c, err, nerr);
    if (!r || c.fired == 0) {
        ir_graph_free(r);
        h = r ? g : NULL;
        goto out;
    }
    h = ps_dce(r, err, nerr);
    if (h != r)
        ir_graph_free(r);
out:
    free(cst);
    free(users);
    return h;
}
