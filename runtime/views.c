/* views.c - the view ops (reshape, permute, slice, expand, squeeze,
 * unsqueeze, as_strided): each computes the strides and offset of its result over the
 * input's storage and copies nothing. The result shape comes from the op's
 * rule (ir/infer_view.c); rt_view_op returns NULL with *need_copy set for a
 * reshape whose strides cannot express the new shape, and for an as_strided
 * of a non-contiguous input (the caller copies). */
#include <string.h>

#include "rt.h"

typedef struct geom {
    int64_t strides[TJ_MAX_DIMS];
    int64_t offset;
} geom;

/* PyTorch's computeStride: the strides of x viewed as shape, or false when a
 * group of merged dims is not contiguous within itself. */
static bool reshape_strides(const tj_tensor *x, const ir_type *out, int64_t *st)
{
    int nd = out->ndim;
    if (x->ndim == 0) {
        for (int d = 0; d < nd; d++)
            st[d] = 1;
        return true;
    }
    if (ir_type_numel(out) == 0) {
        rt_contiguous_strides(nd, out->shape, st);
        return true;
    }
    int vd = nd - 1;
    int64_t base = x->strides[x->ndim - 1], tn = 1, vn = 1;
    for (int td = x->ndim - 1; td >= 0; td--) {
        tn *= x->shape[td];
        bool chunk_end = td == 0 || (x->shape[td - 1] != 1 && x->strides[td - 1] != tn * base);
        if (!chunk_end)
            continue;
        while (vd >= 0 && (vn < tn || out->shape[vd] == 1)) {
            st[vd] = vn * base;
            vn *= out->shape[vd];
            vd--;
        }
        if (vn != tn)
            return false;
        if (td > 0) {
            base = x->strides[td - 1];
            tn = vn = 1;
        }
    }
    return vd == -1;
}

static bool view_reshape(const tj_tensor *x, const ir_type *out, geom *g)
{
    /* Same shape (also every zero-size case torch keeps): the strides stay. */
    if (ir_type_numel(out) == 0 && out->ndim == x->ndim) {
        bool same = true;
        for (int d = 0; d < x->ndim; d++)
            same = same && out->shape[d] == x->shape[d];
        if (same) {
            for (int d = 0; d < x->ndim; d++)
                g->strides[d] = x->strides[d];
            return true;
        }
    }
    return reshape_strides(x, out, g->strides);
}

static void view_permute(const tj_tensor *x, const ir_attrs *a, geom *g)
{
    for (int k = 0; k < x->ndim; k++)
        g->strides[k] = x->strides[ir_norm_dim(a->a[0].i[k], x->ndim)];
}

static void view_slice(const tj_tensor *x, const ir_attrs *a, geom *g)
{
    int d = ir_norm_dim(a->a[0].i[0], x->ndim);
    int64_t n = x->shape[d], start = a->a[1].i[0];
    if (start < 0)
        start = start < -n ? 0 : start + n;
    if (start > n)
        start = n;
    for (int k = 0; k < x->ndim; k++)
        g->strides[k] = x->strides[k];
    g->offset += start * x->strides[d];
    g->strides[d] *= a->a[3].i[0];
}

/* PyTorch's inferExpandGeometry: expanded dims get stride 0; a new leading
 * dim of size 1 gets the stride it would have if it were contiguous. */
static void view_expand(const tj_tensor *x, const ir_type *out, geom *g)
{
    int lead = out->ndim - x->ndim;
    for (int d = out->ndim - 1; d >= 0; d--) {
        int64_t size, stride;
        if (d >= lead) {
            size = x->shape[d - lead];
            stride = x->strides[d - lead];
        } else {
            size = 1;
            stride = d == out->ndim - 1 ? 1 : out->shape[d + 1] * g->strides[d + 1];
        }
        g->strides[d] = size != out->shape[d] ? 0 : stride;
    }
}

static void view_squeeze(const tj_tensor *x, const ir_attrs *a, geom *g)
{
    uint32_t mask = 0;
    if (a->a[0].n == 0)
        mask = ~0u;
    for (int k = 0; k < a->a[0].n; k++)
        if (x->ndim > 0)
            mask |= 1u << ir_norm_dim(a->a[0].i[k], x->ndim);
    int n = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!((mask >> d) & 1) || x->shape[d] != 1)
            g->strides[n++] = x->strides[d];
}

static void view_unsqueeze(const tj_tensor *x, const ir_attrs *a, geom *g)
{
    int64_t dim = a->a[0].i[0];
    int d = (int)(dim < 0 ? dim + x->ndim + 1 : dim);
    for (int k = 0, j = 0; k <= x->ndim; k++) {
        if (k == d)
            g->strides[k] = d >= x->ndim ? 1 : x->shape[d] * x->strides[d];
        else
            g->strides[k] = x->strides[j++];
    }
}

/* as_strided: the strides and offset are over x's elements in row-major
 * order, so x must be contiguous (else the caller copies it first). */
static bool view_as_strided(const tj_tensor *x, const ir_attrs *a, geom *g)
{
    if (!rt_is_contiguous(x))
        return false;
    for (int d = 0; d < a->a[1].n; d++)
        g->strides[d] = a->a[1].i[d];
    g->offset = x->offset + a->a[2].i[0];
    return true;
}

/* The geometry of view op on x into g: 1, 0 when a copy is needed, -1 for
 * an op that is no view. */
static int view_geometry(ir_op op, const tj_tensor *x, const ir_attrs *a, const ir_type *out, geom *g)
{
    g->offset = x->offset;
    switch (op) {
    case OP_reshape: return view_reshape(x, out, g);
    case OP_permute: view_permute(x, a, g); return 1;
    case OP_slice: view_slice(x, a, g); return 1;
    case OP_expand: view_expand(x, out, g); return 1;
    case OP_squeeze: view_squeeze(x, a, g); return 1;
    case OP_unsqueeze: view_unsqueeze(x, a, g); return 1;
    case OP_as_strided: return view_as_strided(x, a, g);
    default: return -1;
    }
}

tj_tensor *rt_view_op(ir_op op, tj_tensor *x, const ir_attrs *a, const ir_type *out,
                      bool *need_copy)
{
    geom g;
    int rc = view_geometry(op, x, a, out, &g);
    *need_copy = rc == 0;
    if (rc < 0)
        rt_error("%s is not a view op", ir_ops[op].name);
    return rc > 0 ? rt_tensor_view(x, out->ndim, out->shape, g.strides, g.offset) : NULL;
}

bool rt_view_strides(ir_op op, const tj_tensor *x, const ir_attrs *a, const ir_type *out, int64_t *strides,
                     int64_t *offset)
{
    geom g;
    if (view_geometry(op, x, a, out, &g) <= 0)
        return false;
    memcpy(strides, g.strides, sizeof(int64_t) * (size_t)out->ndim);
    if (offset)
        *offset = g.offset;
    return true;
}
