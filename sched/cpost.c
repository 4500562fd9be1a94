/* cpost.c - a conv's epilogue and max pool on the conv's rows (sched_int.h,
 * sc_plan.cpost): in a conv region (block.c, an image per block), an f32
 * conv2d step followed by its epilogue kernel computing only
 * relu(conv * scale + shift) (each part optional, scale and shift f32
 * values of one element per output channel, batch norm in eval, a bias, or
 * constants)
 * and then a max_pool2d of it (2x2 or 3x3 window, stride 2, undilated),
 * where nothing else reads the conv's or the kernel's value, hands the
 * epilogue and the pool to the conv: when its row kernel runs it
 * (runtime/k_conv_post.c) the two steps are skipped and neither value is
 * stored; when another kernel runs it, the steps run as planned. Same bits
 * either way.
 *
 * P11 (the ResNet stem) spent a third of its call after the conv: the 3.2 MB
 * image written, read by the bn+relu kernel, written again, read by the
 * pool that split even and odd columns (docs/perf.md, "The stem's epilogue
 * and pool on the conv's rows"). TJIT_CONV_POST=0 (read when a plan is
 * built) turns it off. Exported models run without it (aot_load.c: cpost
 * NULL).
 */
#include <stdlib.h>
#include <string.h>

#include "../ir/window2d.h"
#include "../runtime/env.h"
#include "sched_int.h"

/* Whether node v is read by nothing but `reader` and is no graph result. */
static bool only_reader(const ir_graph *g, const ir_node *v, const ir_node *reader)
{
    for (int j = 0; j < g->noutputs; j++)
        if (g->outputs[j] == v)
            return false;
    for (int k = 0; k < g->nnodes; k++)
        for (int j = 0; j < g->nodes[k]->nin; j++)
            if (g->nodes[k]->in[j] == v && g->nodes[k] != reader)
                return false;
    return true;
}

/* The slot of operand a of a node over the conv's [n, C, h, w] value when a
 * is f32 with one element per channel (aligned from the right, every other
 * dim 1), reached from its root by reshapes, squeezes and unsqueezes only,
 * the root of C elements; -2 with *c its value when a (through views) is a
 * scalar or full, which the kernel inlines as a constant of that value;
 * else -1. */
static int channel_operand(const ir_graph *g, const sc_plan *p, const ir_node *a, int64_t C,
                           float *c)
{
    const ir_node *root = ir_view_root(a);
    if (!ir_node_is_input(root) && (root->op == OP_scalar || root->op == OP_full)) {
        *c = (float)(root->op == OP_scalar ? root->attrs[0].f : root->attrs[1].f);
        return -2;
    }
    const ir_type *t = &p->types[ir_slot(g, a)];
    if (t->dtype != TJ_F32 || t->ndim > 4)
        return -1;
    for (int d = 0; d < 4; d++) {
        int e = d - (4 - t->ndim);
        if ((e >= 0 ? t->shape[e] : 1) != (d == 1 ? C : 1))
            return -1;
    }
    const ir_node *r = a;
    for (; ir_node_is_view(r); r = r->in[0])
        if (r->op != OP_reshape && r->op != OP_squeeze && r->op != OP_unsqueeze)
            return -1;
    const ir_type *rt = &p->types[ir_slot(g, r)];
    return rt->dtype == TJ_F32 && ir_type_numel(rt) == C ? ir_slot(g, r) : -1;
}

/* Whether step i (a conv2d in a region) takes its epilogue and pool; *out
 * says which. */
static bool fits(const ir_graph *g, const ir_fusion *f, const sc_plan *p, int i, sc_cpost *out)
{
    const step *s = &p->steps[i];
    const ir_node *conv = g->nodes[s->node];
    const ir_type *ct = &p->types[ir_slot(g, conv)];
    if (conv->op != OP_conv2d || ct->dtype != TJ_F32 || ct->ndim != 4)
        return false;
    int64_t C = ct->shape[1];
    sc_cpost x = {.pstep = -1, .scale = -1, .shift = -1, .cscale = 0.0f, .cshift = 0.0f,
                  .relu = false};
    const ir_node *v = conv;   /* the value the pool reads */
    int k = i + 1;
    if (k < p->nsteps && p->steps[k].kind == S_KERNEL && p->steps[k].region == s->region) {
        const ir_group *gr = &f->groups[p->steps[k].group];
        if (gr->epilogue_of != s->group || gr->nnodes < 1 || gr->nnodes > 3 ||
            p->steps[k].launch->nstore != 1)
            return false;
        int stage = 0;   /* mul, add, relu in that order, each at most once */
        for (int e = 0; e < gr->nnodes; e++) {
            const ir_node *n = g->nodes[gr->nodes[e]];
            const ir_type *nt = &p->types[ir_slot(g, n)];
            if (nt->dtype != TJ_F32 || ir_type_numel(nt) != ir_type_numel(ct) ||
                !only_reader(g, v, n))
                return false;
            if (n->op == OP_relu && stage < 3 && n->nin == 1 && n->in[0] == v) {
                x.relu = true;
                stage = 3;
            } else if ((n->op == OP_mul || n->op == OP_add) && n->nin == 2 &&
                       stage < (n->op == OP_mul ? 1 : 2) && (n->in[0] == v) != (n->in[1] == v)) {
                float cv = 0.0f;
                int a = channel_operand(g, p, n->in[0] == v ? n->in[1] : n->in[0], C, &cv);
                if (a == -1)
                    return false;
                *(n->op == OP_mul ? &x.scale : &x.shift) = a;
                *(n->op == OP_mul ? &x.cscale : &x.cshift) = cv;
                stage = n->op == OP_mul ? 1 : 2;
            } else {
                return false;
            }
            v = n;
        }
        if (p->steps[k].launch->store_slot[0] != ir_slot(g, v))
            return false;
        k++;
    }
    if (k >= p->nsteps || p->steps[k].kind != S_EAGER || p->steps[k].region != s->region)
        return false;
    const ir_node *pool = g->nodes[p->steps[k].node];
    const ir_type *pt = &p->types[ir_slot(g, pool)];
    ir_attrs a;
    ir_window2d w;
    if (pool->op != OP_max_pool2d || pool->in[0] != v || !only_reader(g, v, pool) ||
        pt->dtype != TJ_F32 || pt->ndim != 4)
        return false;
    ir_node_attrs(pool, &a);
    if (ir_window2d_of(pool->op, &a, NULL, &w, NULL, 0) < 0 || w.kernel[0] != w.kernel[1] ||
        (w.kernel[0] != 2 && w.kernel[0] != 3) || w.stride[0] != 2 || w.stride[1] != 2 ||
        w.dilation[0] != 1 || w.dilation[1] != 1 || w.padding[0] < 0 || w.padding[1] < 0 ||
        2 * w.padding[0] > w.kernel[0] || 2 * w.padding[1] > w.kernel[1])
        return false;
    x.pstep = k;
    *out = x;
    return true;
}

int sc_plan_conv_posts(const ir_graph *g, const ir_fusion *f, sc_plan *p)
{
    free(p->cpost);   /* a plan built again after a kernel failed */
    p->cpost = NULL;
    if (rt_env_switch("TJIT_CONV_POST") == 0)
        return 0;
    for (int r = 0; r < p->nregions; r++)
        for (int i = p->regions[r].first; i <= p->regions[r].last; i++) {
            sc_cpost x;
            if (p->steps[i].kind != S_EAGER || !fits(g, f, p, i, &x))
                continue;
            if (!p->cpost) {
                if (!(p->cpost = malloc(sizeof *p->cpost * (size_t)p->nsteps)))
                    return -1;
                for (int j = 0; j < p->nsteps; j++)
                    p->cpost[j].pstep = -1;
            }
            p->cpost[i] = x;
            const ir_node *pool = g->nodes[p->steps[x.pstep].node];
            sc_pool_note(p,
                         "%%%d max_pool2d and the conv's epilogue on %%%d's rows when its row "
                         "kernel runs it",
                         pool->id, g->nodes[p->steps[i].node]->id);
            i = x.pstep;
        }
    return 0;
}
