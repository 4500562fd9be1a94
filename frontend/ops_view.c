/* ops_view.c - public entry points of the view ops (reshape, view, permute,
 * transpose, slice, expand, broadcast_to, squeeze, unsqueeze, flatten) and of
 * the copies (contiguous, clone, copy_). Each fills the op's attributes and
 * calls fe_apply; transpose and flatten are spelled as permute and reshape. */
#include <stdio.h>

#include "autograd.h"
#include "trace.h"
#include "../runtime/iter.h"

/* A list attribute; a bad list (negative count, too long, NULL values) is
 * marked n = -1, which the op's rule rejects with a message. */
static void ints_attr(ir_attr *a, const int64_t *v, int n)
{
    if (n < 0 || n > IR_MAX_LIST || (n > 0 && !v))
        a->n = -1;
    else
        ir_attr_ints(a, v, n);
}

static void dims_attr(ir_attr *a, const int *v, int n)
{
    if (n < 0 || n > IR_MAX_LIST || (n > 0 && !v))
        a->n = -1;
    else
        ir_attr_dims(a, v, n);
}

/* Records "name(f32[2,3]): reason" for an entry point that rejects its
 * arguments before reaching fe_apply. */
static void fail(const char *name, tj_tensor *x, const char *reason)
{
    char head[256];
    rt_describe_inputs(name, &x, 1, head, sizeof head);
    rt_error("%s: %s", head, reason);
}

tj_tensor *tj_reshape(tj_tensor *x, int ndim, const int64_t *shape)
{
    ir_attrs at = {0};
    ints_attr(&at.a[0], shape, ndim);
    return fe_apply(OP_reshape, &x, 1, &at);
}

/* Whether reshaping x by `at` needs no copy (x concrete or symbolic: a
 * symbolic tensor has eager's strides); a reshape the rule rejects counts
 * as possible (fe_apply then reports the rule's reason). */
static bool view_possible(tj_tensor *x, const ir_attrs *at)
{
    ir_type in, out;
    const ir_type *tp = &in;
    char why[8];
    int64_t strides[TJ_MAX_DIMS];
    rt_type_of(x, &in);
    if (ir_infer(OP_reshape, &tp, 1, at, &out, why, sizeof why) != 0)
        return true;
    return rt_view_strides(OP_reshape, x, at, &out, strides, NULL);
}

tj_tensor *tj_view(tj_tensor *x, int ndim, const int64_t *shape)
{
    ir_attrs at = {0};
    ints_attr(&at.a[0], shape, ndim);
    if (x && !rt_dead(x) && !view_possible(x, &at)) {
        fail("view", x, "the input's strides cannot express this shape without a copy; use "
                        "reshape");
        return NULL;
    }
    return fe_apply(OP_reshape, &x, 1, &at);
}

tj_tensor *tj_permute(tj_tensor *x, const int *perm)
{
    ir_attrs at = {0};
    if (x)
        dims_attr(&at.a[0], perm, x->ndim);
    return fe_apply(OP_permute, &x, 1, &at);
}

tj_tensor *tj_transpose(tj_tensor *x, int dim0, int dim1)
{
    if (!x)
        return fe_apply(OP_permute, &x, 1, NULL);
    int n = x->ndim, d0 = ir_norm_dim(dim0, n), d1 = ir_norm_dim(dim1, n);
    if (d0 < 0 || d1 < 0) {
        char why[96];
        snprintf(why, sizeof why, "dim %d out of range for %d dims", d0 < 0 ? dim0 : dim1, n);
        fail("transpose", x, why);
        return NULL;
    }
    int perm[TJ_MAX_DIMS];
    for (int d = 0; d < n; d++)
        perm[d] = d == d0 ? d1 : d == d1 ? d0 : d;
    return tj_permute(x, perm);
}

tj_tensor *tj_slice(tj_tensor *x, int dim, int64_t start, int64_t end, int64_t step)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    ir_attr_int(&at.a[1], start);
    ir_attr_int(&at.a[2], end);
    ir_attr_int(&at.a[3], step);
    return fe_apply(OP_slice, &x, 1, &at);
}

tj_tensor *tj_expand(tj_tensor *x, int ndim, const int64_t *shape)
{
    ir_attrs at = {0};
    ints_attr(&at.a[0], shape, ndim);
    return fe_apply(OP_expand, &x, 1, &at);
}

tj_tensor *tj_broadcast_to(tj_tensor *x, int ndim, const int64_t *shape)
{
    return tj_expand(x, ndim, shape);
}

tj_tensor *tj_squeeze(tj_tensor *x, const int *dims, int ndims)
{
    ir_attrs at = {0};
    dims_attr(&at.a[0], dims, ndims);
    return fe_apply(OP_squeeze, &x, 1, &at);
}

tj_tensor *tj_unsqueeze(tj_tensor *x, int dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return fe_apply(OP_unsqueeze, &x, 1, &at);
}

tj_tensor *tj_flatten(tj_tensor *x, int start_dim, int end_dim)
{
    if (!x)
        return fe_apply(OP_reshape, &x, 1, NULL);
    int n = x->ndim, s = ir_norm_dim(start_dim, n), e = ir_norm_dim(end_dim, n);
    char why[96];
    if (s < 0 || e < 0) {
        snprintf(why, sizeof why, "dim %d out of range for %d dims", s < 0 ? start_dim : end_dim,
                 n);
        fail("flatten", x, why);
        return NULL;
    }
    if (s > e) {
        snprintf(why, sizeof why, "start_dim %d comes after end_dim %d", s, e);
        fail("flatten", x, why);
        return NULL;
    }
    int64_t shape[TJ_MAX_DIMS], k = 0, merged = 1;
    fe_trace_shape_read(x);   /* the new shape is computed from x's sizes */
    for (int d = 0; d < s; d++)
        shape[k++] = x->shape[d];
    for (int d = s; d <= e && n > 0; d++)
        merged *= x->shape[d];
    shape[k++] = merged;
    for (int d = e + 1; d < n; d++)
        shape[k++] = x->shape[d];
    return tj_reshape(x, (int)k, shape);
}

/* x itself when contiguous, as in eager: a write into the result reaches
 * x. A symbolic tensor's strides are the ones eager would give it (an
 * argument's, its views', trace.c), so a trace aliases the same way. */
tj_tensor *tj_contiguous(tj_tensor *x)
{
    if (x && (x->storage || x->sym) && rt_is_contiguous(x))
        return rt_own(tj_retain(x));
    return fe_apply(OP_copy, &x, 1, NULL);
}

tj_tensor *tj_clone(tj_tensor *x) { return fe_apply(OP_copy, &x, 1, NULL); }

/* In place: dst = src broadcast to dst's shape and converted to its dtype.
 * A src that shares dst's storage is copied first, so overlap is harmless. */
/* The shape a traced copy_ expands src to: dst's, with -1 (keep) where a
 * symbolic dim of dst is the same symbol in src, so a write stays
 * dynamic (a size there would be the example's, which the symbolic rule
 * refuses, and the dims would go static). */
static void copy_shape(const tj_tensor *dst, const tj_tensor *src, int64_t *shape)
{
    const ir_node *dn = dst->sym, *sn = src->sym;
    int lead = dst->ndim - src->ndim;
    for (int d = 0; d < dst->ndim; d++) {
        shape[d] = dst->shape[d];
        if (dn && sn && d >= lead && IR_IS_SYM(dn->type.shape[d]) &&
            sn->type.shape[d - lead] == dn->type.shape[d])
            shape[d] = -1;
    }
}

int tj_copy_(tj_tensor *dst, tj_tensor *src)
{
    tj_tensor *in[2] = {dst, src};
    char head[512];
    if (!dst || !src) {
        if (!rt_has_error())
            rt_error("copy_: %s is NULL", dst ? "src" : "dst");
        return -1;
    }
    if (rt_check_live(in, 2, "copy_") != 0)
        return -1;
    if (fe_ag_check_inplace(dst, src, "copy_"))
        return -1;
    rt_describe_inputs("copy_", in, 2, head, sizeof head);
    fe_trace *tr = fe_trace_current();
    if (fe_write_overlaps(tr, dst)) {
        rt_error("%s: dst has several elements in one memory location (an expanded view, or "
                 "overlapping as_strided windows)", head);
        return -1;
    }
    if (tr) {
        /* Functionalized: the graph computes dst's new value; the call writes
         * it back (trace_effects.c). */
        int64_t shape[TJ_MAX_DIMS];
        copy_shape(dst, src, shape);
        tj_tensor *v = tj_cast(tj_expand(src, dst->ndim, shape), dst->dtype);
        const ir_node *dn = dst->sym;
        bool whole = dn && !ir_node_is_view(dn);
        /* a view's write rebases its base's history (a CopySlices node) */
        bool rebase = whole || fe_ag_is_view(dst);
        if (v && !rebase && dn && tj_grad_enabled() && fe_ag_requires_grad(v)) {
            /* a view of an argument or a capture without history (a view of
             * the trace's own value keeps a lineage: fe_ag_view_made) */
            fe_trace_break(tr, "a write of a value that requires grad through a view of a tensor "
                               "without autograd history");
            rt_error("%s: a write of a value that requires grad through a view of a tensor without "
                     "autograd history is a graph break", head);
            return -1;
        }
        return v && fe_trace_write_data(tr, dst, v) == 0 && (!rebase || fe_ag_rebase(dst, v) == 0) ? 0 : -1;
    }
    tj_tensor *tmp = NULL, *from = src;   /* from: the history dst takes */
    if (src->storage == dst->storage) {
        tmp = rt_tensor_new(src->dtype, src->ndim, src->shape);
        if (!tmp || rt_convert(tmp, src) != 0) {
            tj_release(tmp);
            return -1;
        }
        src = tmp;
    }
    int rc = rt_convert(dst, src);
    tj_release(tmp);
    rt_bump_version(dst);
    /* the whole of dst, or a view (its base's history is rebased) */
    bool rebase = rt_holds_storage(dst) || fe_ag_is_view(dst) || dst->view_of;
    if (rc == 0 && rebase && fe_ag_wants_grad(&from, 1)) {   /* from's history, cast and expanded */
        tj_tensor *v = tj_cast(tj_expand(from, dst->ndim, dst->shape), dst->dtype);
        rc = v ? fe_ag_rebase(dst, v) : -1;
    } else if (rc == 0 && rebase) {
        rc = fe_ag_rebase(dst, from);   /* no history: dst's old one ends here */
    }
    if (rc != 0) {
        char why[512];
        snprintf(why, sizeof why, "%s", tj_last_error());
        rt_error("%s: %s", head, why);
    }
    return rc;
}
