/* trace_effects.c - what a traced function writes to tensors that outlive
 * it: tj_copy_ into a weight or an argument (an optimizer's update), and the
 * gradients tj_backward leaves on leaves (functionalization).
 *
 * While tracing, nothing concrete is written: a write rebinds the target to
 * its new traced value (later reads in the trace see it) and is kept in
 * tr->writes, one entry per target, the latest value winning. The caller
 * (compile.c) makes each value an extra graph output and, after every call,
 * writes it back. A write into slices of a weight or an argument (x[1:3] =
 * v) is a write of the whole tensor (where(mask, pad(v), x)); into another
 * view of a traced tensor, a graph break (the call runs eagerly). A gradient
 * read from before the call is guarded: the graph
 * holds only while the leaf's gradient is the same tensor (or still none).
 */
#include <stdlib.h>
#include <string.h>

#include "../runtime/iter.h"
#include "autograd.h"
#include "trace.h"

/* Whether the plan stored val into dst already (re-inplacing): the same
 * memory, contiguous, of the same type. */
static bool stored_in(const tj_tensor *dst, const tj_tensor *val)
{
    return val->storage == dst->storage && val->offset == dst->offset && val->dtype == dst->dtype &&
           val->ndim == dst->ndim && !memcmp(val->shape, dst->shape, sizeof(int64_t) * (size_t)dst->ndim) &&
           rt_is_contiguous(val) && rt_is_contiguous(dst);
}

int fe_write_data(tj_tensor *dst, const tj_tensor *val)
{
    if (!stored_in(dst, val) && rt_convert(dst, val) != 0)
        return -1;
    rt_bump_version(dst);
    return 0;
}

static fe_write *find_write(fe_trace *tr, fe_write_kind kind, const tj_tensor *target, int arg)
{
    bool grad = kind != FE_WRITE_DATA;
    for (int k = 0; k < tr->nwrites; k++) {
        fe_write *w = &tr->writes[k];
        if ((w->kind != FE_WRITE_DATA) == grad && w->target == target && w->arg == arg)
            return w;
    }
    return NULL;
}

/* Room for one more element of size elem in *arr (n used of *cap). */
static int reserve(void **arr, int n, int *cap, size_t elem)
{
    if (n < *cap)
        return 0;
    int ncap = *cap ? 2 * *cap : 16;
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (!p) {
        rt_error("out of memory while tracing");
        return -1;
    }
    *arr = p;
    *cap = ncap;
    return 0;
}

static int add_write(fe_trace *tr, fe_write_kind kind, tj_tensor *target, int arg, tj_tensor *value)
{
    fe_write *w = find_write(tr, kind, target, arg);
    if (!w) {
        if (reserve((void **)&tr->writes, tr->nwrites, &tr->write_cap, sizeof *tr->writes) != 0)
            return -1;
        w = &tr->writes[tr->nwrites++];
        *w = (fe_write){kind, tj_retain(target), arg, NULL, false};
    }
    tj_release(w->value);
    w->kind = kind;
    w->hooked = kind != FE_WRITE_DATA && target && fe_ag_has_hook(target);
    w->value = tj_retain(value);
    return 0;
}

/* The tensor whose traced value is node n: a capture or an argument. */
static tj_tensor *holder_of(fe_trace *tr, const ir_node *n)
{
    for (int k = 0; k < tr->ncaps; k++)
        if (tr->cap_nodes[k] == n)
            return tr->caps[k];
    for (int k = 0; k < tr->nargs; k++)
        if (tr->args[k] && tr->args[k]->sym == n)
            return tr->args[k];
    return NULL;
}

/* Records that a write into dst replaced value old by now (each: for every
 * tensor of dst's storage, fe_overwrite); 0 or -1. */
static int overwrote(fe_trace *tr, const tj_tensor *dst, ir_node *old, ir_node *now, bool each)
{
    if (!old || old == now)
        return 0;
    if (reserve((void **)&tr->ovw, tr->novw, &tr->ovw_cap, sizeof *tr->ovw) != 0)
        return -1;
    tr->ovw[tr->novw++] = (fe_overwrite){old, now, fe_alias_of(dst), each};
    return 0;
}

/* Whether a write through view p can be made one of p's input: a slice
 * with step 1, a permute, a squeeze or an unsqueeze (no element twice). */
static bool writable(const ir_node *p)
{
    return (p->op == OP_slice && p->attrs[3].i[0] == 1) || p->op == OP_permute || p->op == OP_squeeze ||
           p->op == OP_unsqueeze;
}

/* parent's new value after v was written through view p of it (whole:
 * parent's value now, for the elements p does not reach). */
static tj_tensor *unview(const ir_node *p, tj_tensor *v, tj_tensor *whole)
{
    const ir_node *parent = p->in[0];
    int nd = parent->type.ndim;
    if (p->op == OP_permute) {
        int inv[TJ_MAX_DIMS];
        for (int k = 0; k < nd; k++)
            inv[ir_norm_dim(p->attrs[0].i[k], nd)] = k;
        return tj_permute(v, inv);
    }
    if (p->op == OP_unsqueeze)
        return tj_squeeze(v, (int[]){ir_norm_dim(p->attrs[0].i[0], p->type.ndim)}, 1);
    if (p->op == OP_squeeze)
        return tj_reshape(v, nd, parent->type.shape);
    int d = ir_norm_dim(p->attrs[0].i[0], nd);
    int64_t size = parent->type.shape[d], start = ir_slice_bound(p->attrs[1].i[0], size);
    int64_t pads[2 * TJ_MAX_DIMS] = {0};
    pads[2 * (nd - 1 - d)] = start;
    pads[2 * (nd - 1 - d) + 1] = size - start - p->type.shape[d];
    tj_tensor *mask = tj_gt_s(tj_pad(tj_ones(TJ_F32, nd, p->type.shape), pads, nd, 0.0), 0.5);
    return tj_where(mask, tj_pad(v, pads, nd, 0.0), whole);
}

/* A write into a traced view: dst is slices (step 1) of a capture's or an
 * argument's value, or a chain of slices, permutes, squeezes and unsqueezes
 * of a value this trace made (buf[:, 2:4] = x into a zeros or a clone, or
 * into its transpose). The write becomes one of the whole tensor, level by
 * level: a slice's parent' = where(mask, pad(value), parent), the mask true
 * on the slice; the others' inverse views. A value of the trace is then
 * read as its new value by every tensor of its storage (an overwrite,
 * fe_trace_value). 1 when dst is another view, or a value of a call split
 * at breaks (the caller breaks the graph). */
static int write_slices(fe_trace *tr, tj_tensor *dst, tj_tensor *value)
{
    ir_node *n = dst->sym;
    int levels = 0;
    bool sliced = true;
    for (ir_node *p = n; !ir_node_is_input(p) && writable(p); p = p->in[0], levels++) {
        if (ir_type_has_sym(&p->in[0]->type) || levels >= 64)
            return 1;
        sliced &= p->op == OP_slice;
    }
    ir_node *base = n;
    for (int k = 0; k < levels; k++)
        base = base->in[0];
    tj_tensor *target = levels ? holder_of(tr, base) : NULL;
    bool made = !target && levels && !ir_node_is_input(base) && ir_ops[base->op].kind != IR_VIEW &&
                !tr->seg;   /* a value of the trace */
    if ((!target && !made) || (target && !sliced))
        return 1;
    ir_node *was = NULL;
    if (made) {   /* the base's value now: the storage's, written before or not */
        if (!(target = rt_own(rt_tensor_symbolic(&base->type, base))))
            return -1;
        target->alias = fe_alias_of(dst);
        if (!(was = fe_trace_value(tr, target)))
            return -1;
    }
    tj_tensor *v = value;
    for (ir_node *p = n; p != base && v; p = p->in[0]) {
        tj_tensor *whole = target;
        if (p->in[0] != base) {   /* a view between: of dst's storage, not a twin's */
            if (!(whole = rt_own(rt_tensor_symbolic(&p->in[0]->type, p->in[0]))))
                return -1;
            whole->alias = fe_alias_of(dst);
        }
        v = unview(p, v, whole);
    }
    /* dst keeps its view node: a later read replays the views on the
     * base's new value (fe_trace_value), so it also sees later writes */
    if (made) {
        ir_node *now = v ? fe_trace_value(tr, v) : NULL;
        return now && overwrote(tr, dst, was, now, true) == 0 ? 0 : -1;
    }
    return !v || fe_trace_write_data(tr, target, v) != 0 ? -1 : 0;
}

/* The node under n's chain of slices (slices keep their input's dims). */
static ir_node *under_slices(ir_node *n)
{
    while (!ir_node_is_input(n) && n->op == OP_slice)
        n = n->in[0];
    return n;
}

/* The concrete tensor dst (an argument or a captured tensor, or slices of
 * one: the same dims) stands for: the argument the call was given, or the
 * capture itself; NULL if none. */
static const tj_tensor *example_of(fe_trace *tr, const tj_tensor *dst)
{
    if (!dst->sym)
        return NULL;
    ir_node *n = under_slices(dst->sym);
    const tj_tensor *h = NULL;
    for (int k = 0; k < tr->nargs && !h; k++)
        if (tr->args[k] == dst)
            h = tr->examples ? tr->examples[k] : NULL;
    if (!h && (h = holder_of(tr, n)) && h->sym) {   /* an argument's input node */
        const tj_tensor *sym = h;
        h = NULL;
        for (int k = 0; k < tr->nargs; k++)
            if (tr->args[k] == sym && tr->examples)
                h = tr->examples[k];
    }
    return h && h->ndim == dst->ndim ? h : NULL;
}

/* Whether dims of size > 1 and stride 0 of ex, among those dst spans
 * (shape), put several elements in one memory location. */
static bool expanded(const tj_tensor *ex, const int64_t *shape)
{
    for (int d = 0; ex && d < ex->ndim; d++)
        if (ex->strides[d] == 0 && shape[d] > 1)
            return true;
    return false;
}

/* In a split call, whether dst's slices are of a concrete tensor that
 * shares its storage with other tensors of the call (fe_seg_shares_storage). */
static bool viewed_base(fe_trace *tr, const tj_tensor *dst)
{
    if (!tr->seg)
        return false;
    tj_tensor *h = (tj_tensor *)holder_of(tr, under_slices(dst->sym));
    return h && !h->sym && fe_seg_shares_storage(tr, h);
}

bool fe_write_overlaps(fe_trace *tr, const tj_tensor *dst)
{
    return rt_numel(dst) > 0 &&   /* no elements: nothing to share a location */
           (rt_overlaps_itself(dst) || (tr && expanded(example_of(tr, dst), dst->shape)));
}

int fe_trace_write_data(fe_trace *tr, tj_tensor *dst, tj_tensor *value)
{
    bool is_arg = false;
    for (int k = 0; k < tr->nargs; k++)
        is_arg |= tr->args[k] == dst;
    if (dst->sym && !is_arg && ir_node_is_view(dst->sym)) {
        if (!fe_trace_value(tr, dst))   /* its slices of its base's value now */
            return -1;
        /* slices of an expanded argument: the write reaches every element that
         * shares the memory, which a functional write-back cannot follow */
        const tj_tensor *ex = example_of(tr, dst);
        int rc = (ex && expanded(ex, ex->shape)) || viewed_base(tr, dst) ? 1 : write_slices(tr, dst, value);
        if (rc <= 0)
            return rc;
        if (tr->seg)   /* a split call breaks here and writes eagerly */
            return fe_seg_view_write(tr, dst, value);
        fe_trace_view_write_break(tr);   /* later calls run split at it */
        rt_error("copy_: a write into a view of a traced tensor (other than slices of a weight "
                 "or an argument whose elements have memory of their own) is a graph break");
        return -1;
    }
    ir_node *v = fe_trace_value(tr, value);
    if (!v)
        return -1;
    if (!dst->sym && tr->seg && fe_seg_shares_storage(tr, dst))   /* read through storage: eagerly */
        return fe_seg_view_write(tr, dst, value);
    if (!dst->sym) {
        /* a weight or state: its param now reads as the new value */
        if (!fe_trace_value(tr, dst))
            return -1;
        for (int k = 0; k < tr->ncaps; k++)
            if (tr->caps[k] == dst) {
                if (overwrote(tr, dst, tr->cap_nodes[k], v, false) != 0)
                    return -1;
                tr->cap_nodes[k] = v;
            }
        return add_write(tr, FE_WRITE_DATA, dst, -1, value);
    }
    int arg = -1;
    for (int k = 0; k < tr->nargs; k++)
        if (tr->args[k] == dst)
            arg = k;
    if (overwrote(tr, dst, dst->sym, v, false) != 0)
        return -1;
    dst->sym = v;   /* later reads of this header see the new value */
    return arg >= 0 ? add_write(tr, FE_WRITE_DATA, NULL, arg, value) : 0;
}

bool fe_trace_written(fe_trace *tr, const tj_tensor *t)
{
    return !t->sym && find_write(tr, FE_WRITE_DATA, t, -1) != NULL;
}

tj_tensor *fe_trace_grad(fe_trace *tr, const tj_tensor *leaf, bool *found)
{
    fe_write *w = find_write(tr, FE_WRITE_GRAD, leaf, -1);
    *found = w != NULL;
    return w ? w->value : NULL;
}

int fe_trace_set_grad(fe_trace *tr, tj_tensor *leaf, tj_tensor *value)
{
    return add_write(tr, value ? FE_WRITE_GRAD : FE_WRITE_GRAD_NONE, leaf, -1, value);
}

int fe_trace_guard_grad(fe_trace *tr, tj_tensor *leaf, tj_tensor *prior)
{
    for (int k = 0; k < tr->nguards; k++)
        if (tr->grad_guards[k].leaf == leaf)
            return 0;
    if (reserve((void **)&tr->grad_guards, tr->nguards, &tr->guard_cap, sizeof *tr->grad_guards) != 0)
        return -1;
    tr->grad_guards[tr->nguards++] = (fe_grad_guard){tj_retain(leaf), tj_retain(prior)};
    return 0;
}

void fe_trace_writes_free(fe_trace *tr)
{
    for (int k = 0; tr->writes && k < tr->nwrites; k++) {
        tj_release(tr->writes[k].target);
        tj_release(tr->writes[k].value);
    }
    for (int k = 0; tr->grad_guards && k < tr->nguards; k++) {
        tj_release(tr->grad_guards[k].leaf);
        tj_release(tr->grad_guards[k].prior);
    }
    free(tr->writes);
    free(tr->grad_guards);
    free(tr->ovw);
    tr->writes = NULL;
    tr->grad_guards = NULL;
    tr->ovw = NULL;
    tr->nwrites = tr->nguards = tr->novw = 0;
    tr->write_cap = tr->guard_cap = tr->ovw_cap = 0;   /* a split call's next piece writes again */
}
