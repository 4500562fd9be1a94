/* autograd_views.c - how a view was made from its base, for in-place writes
 * through it (PyTorch's CopySlices and view regeneration).
 *
 * A recorded view op (slice, permute, reshape as a view, squeeze, unsqueeze,
 * expand, as_strided; narrow, select, transpose, diagonal, movedim, t and
 * view_as run as these) whose result shares its input's storage gets a
 * lineage: the base (the first tensor of the chain that is no view) and the
 * chain of view ops from it. The tape (autograd.c) uses it two ways:
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

ag_view *ag_view_extend(const ag_view *parent, tj_tensor *x, ir_op op, const ir_attrs *a,
                        const tj_tensor *r)
{
    int n = parent ? parent->n + 1 : 1;
    ag_view *v = calloc(1, sizeof *v + (size_t)n * sizeof v->step[0]);
    if (!v) {
        rt_error("%s: out of memory recording a view for autograd", ir_ops[op].name);
        return NULL;
    }
    atomic_init(&v->refs, 1);
    v->n = n;
    v->base = tj_retain(parent ? parent->base : x);
    /* as_strided reads storage positions: replayable only on a gradient laid
     * out as the base's storage (a base that holds it; traced, a fresh value) */
    v->ok = !parent || parent->ok;
    if (op == OP_as_strided)
        v->ok &= v->base->storage ? rt_holds_storage(v->base) : !parent;
    for (int k = 0; k < n - 1; k++) {
        v->step[k] = parent->step[k];
        tj_retain(v->step[k].in);
    }
    ag_view_step *s = &v->step[n - 1];
    s->op = op;
    s->attrs = *a;
    s->in = ag_detached(x);
    v->ndim = r->ndim;
    memcpy(v->shape, r->shape, sizeof v->shape);
    if (!s->in) {
        ag_view_release(v);
        return NULL;
    }
    return v;
}

void ag_view_release(ag_view *v)
{
    if (!v || atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int k = 0; k < v->n; k++)
        tj_release(v->step[k].in);
    tj_release(v->base);
    free(v);
}

tj_tensor *ag_view_replay(const ag_view *v, tj_tensor *g)
{
    bool strided = false;
    for (int k = 0; k < v->n; k++)
        strided |= v->step[k].op == OP_as_strided;
    /* as_strided counts positions in the base's storage: g row-major in
     * storage of its own (the base holds its storage: ag_view_extend) */
    if (strided && g->storage && !rt_holds_storage(g))
        g = tj_clone(g);
    for (int k = 0; k < v->n && g; k++) {
        const ag_view_step *s = &v->step[k];
        if (s->op != OP_as_strided) {
            g = fe_apply(s->op, &g, 1, &s->attrs);
            continue;
        }
        const ir_attr *sz = &s->attrs.a[0], *st = &s->attrs.a[1];
        g = tj_as_strided(g, sz->n, sz->i, st->i, s->attrs.a[2].i[0]);
    }
    return g;
}

tj_tensor *ag_view_outside(const ag_view *v, tj_tensor *g)
{
    /* the view's elements in the base: ones through the chain's adjoints */
    tj_tensor *m = tj_ones(g->dtype, v->ndim, v->shape);
    for (int k = v->n - 1; k >= 0 && m; k--) {
        const ag_view_step *s = &v->step[k];
        tj_tensor *in = s->in, *gx = NULL;
        bool need = true;
        ag_ctx c = {s->op, &s->attrs, 1, &in, NULL, &need};
        if (ag_rules[s->op]->vjp(&c, m, &gx) != 0)
            return NULL;
        m = ag_sum_to(gx, in->ndim, in->shape);
    }
    return m ? ag_masked(g, tj_eq_s(m, 0)) : NULL;
}
