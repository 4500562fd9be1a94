/* autograd_views.c - how a view was made from its base, for in-place writes
 * through it (PyTorch's CopySlices and view regeneration).
 *
 * A recorded view op (slice, permute, reshape as a view, squeeze, unsqueeze,
 * expand, as_strided; narrow, select, transpose, diagonal, movedim, t and
 * view_as run as these) whose result shares its input's storage gets a
 * lineage: the chain of view ops from its base (the first tensor of the
 * chain that is no view; the view's state holds it). The tape (autograd.c)
 * uses it two ways:
 *
 *   a write through the view: the base's history becomes a CopySlices node:
 *       the base's gradient g, read through the view (ag_view_replay), goes
 *       to what made the written value; the rest (ag_view_outside) to the
 *       base's old history;
 *   a read of any view of that base afterwards: its history is made again
 *       from the base's new one, one node per op of the chain.
 *
 * Both are written in tjit ops, so they run eagerly and, in a traced
 * training step, become graph nodes, like every gradient rule.
 */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "trace.h"

bool ag_view_shares(const tj_tensor *r, const tj_tensor *x)
{
    return r != x && (r->storage ? r->storage == x->storage : r->alias && fe_alias_of(r) == fe_alias_of(x));
}

ag_view *ag_view_extend(ag_view *parent, const tj_tensor *base, tj_tensor *xd, ir_op op,
                        const ir_attrs *a, const tj_tensor *r)
{
    ag_view *v = malloc(sizeof *v);
    if (!v) {
        rt_error("%s: out of memory recording a view for autograd", ir_ops[op].name);
        return NULL;
    }
    atomic_init(&v->refs, 1);
    v->parent = parent;
    if (parent)
        atomic_fetch_add(&parent->refs, 1);
    v->depth = parent ? parent->depth + 1 : 1;
    /* as_strided reads storage positions: replayable only on a gradient laid
     * out as the base's storage (a base that holds it; traced, a fresh value) */
    v->ok = !parent || parent->ok;
    if (op == OP_as_strided)
        v->ok &= base->storage ? rt_holds_storage(base) : !parent;
    v->op = op;
    v->attrs = *a;
    v->in = tj_retain(xd);
    v->ndim = r->ndim;
    memcpy(v->shape, r->shape, sizeof v->shape);
    return v;
}

void ag_view_release(ag_view *v)
{
    while (v && atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) == 1) {
        ag_view *parent = v->parent;   /* iteratively: chains can be long */
        tj_release(v->in);
        free(v);
        v = parent;
    }
}

const ag_view **ag_view_chain(const ag_view *v, const ag_view **few, int nfew)
{
    const ag_view **c = v->depth <= nfew ? few : malloc((size_t)v->depth * sizeof *c);
    if (!c) {
        rt_error("out of memory replaying a view for autograd");
        return NULL;
    }
    for (int k = v->depth - 1; k >= 0; k--, v = v->parent)
        c[k] = v;
    return c;
}

tj_tensor *ag_view_replay(const ag_view *v, tj_tensor *g)
{
    const ag_view *few[16], **c = ag_view_chain(v, few, 16);
    if (!c)
        return NULL;
    bool strided = false;
    for (int k = 0; k < v->depth; k++)
        strided |= c[k]->op == OP_as_strided;
    /* as_strided counts positions in the base's storage: g row-major in
     * storage of its own (the base holds its storage: ag_view_extend) */
    if (strided && g->storage && !rt_holds_storage(g))
        g = tj_clone(g);
    for (int k = 0; k < v->depth && g; k++) {
        const ag_view *s = c[k];
        if (s->op != OP_as_strided) {
            g = fe_apply(s->op, &g, 1, &s->attrs);
            continue;
        }
        const ir_attr *sz = &s->attrs.a[0], *st = &s->attrs.a[1];
        g = tj_as_strided(g, sz->n, sz->i, st->i, s->attrs.a[2].i[0]);
    }
    if (c != few)
        free(c);
    return g;
}

tj_tensor *ag_view_outside(const ag_view *v, tj_tensor *g)
{
    /* the view's elements in the base: ones through the chain's adjoints
     * (ones of the view's shape: the base's replayed, so a traced chain
     * follows symbolic dims) */
    tj_tensor *m = ag_view_replay(v, ag_expand_to(tj_scalar(g->dtype, 1), g));
    for (const ag_view *s = v; s && m; s = s->parent) {
        tj_tensor *in = s->in, *gx = NULL;
        bool need = true;
        ag_ctx c = {s->op, &s->attrs, 1, &in, NULL, &need};
        if (ag_rules[s->op]->vjp(&c, m, &gx) != 0)
            return NULL;
        m = ag_sum_to(gx, in);
    }
    return m ? ag_masked(g, tj_eq_s(m, 0)) : NULL;
}
