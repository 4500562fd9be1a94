/* infer_idx.c - shape/dtype rules of the indexing, scan and shape rows of
 * ops.def's "indexing, scans and shapes" section (narrow, movedim, t,
 * unflatten, expand_as, view_as, tril, triu, masked_fill, ...), following
 * PyTorch's checks. Rows that restate a view take that view's rule. */
#include <string.h>

#include "infer.h"

/* dim of x, normalized, or -1 with the reason in err. */
static int one_dim(int64_t dim, int ndim, char *err, size_t nerr)
{
    int d = ir_norm_dim(dim, ndim);
    if (d < 0)
        ir_fail(err, nerr, "dim %lld out of range for %d dims", (long long)dim, ndim);
    return d;
}

int ir_infer_narrow(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    if (x->ndim == 0)
        return ir_fail(err, nerr, "cannot narrow a 0-dim tensor");
    int d = one_dim(a->a[0].i[0], x->ndim, err, nerr);
    if (d < 0)
        return -1;
    int64_t n = x->shape[d], start = a->a[1].i[0], len = a->a[2].i[0];
    if (n < 0)
        return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    if (start < -n || start > n)
        return ir_fail(err, nerr, "start %lld out of range for a dim of size %lld",
                       (long long)start, (long long)n);
    if (start < 0)
        start += n;
    if (len < 0 || len > n - start)
        return ir_fail(err, nerr, "start %lld + length %lld exceeds the size %lld of dim %d",
                       (long long)start, (long long)len, (long long)n, d);
    ir_set(out, x->dtype, x->ndim, x->shape);
    out->shape[d] = len;
    return 0;
}

/* torch.movedim's permutation: perm[dst[k]] = src[k], the other dims in
 * order in the free places. -1 with the reason in err. */
int ir_movedim_perm(const ir_attr *src, const ir_attr *dst, int ndim, int64_t *perm, char *err,
                    size_t nerr)
{
    if (src->n != dst->n)
        return ir_fail(err, nerr, "source has %d dims and destination %d", src->n, dst->n);
    uint32_t used_s = 0, used_d = 0;
    for (int k = 0; k < ndim; k++)
        perm[k] = -1;
    for (int k = 0; k < src->n; k++) {
        int s = one_dim(src->i[k], ndim, err, nerr), t;
        if (s < 0 || (t = one_dim(dst->i[k], ndim, err, nerr)) < 0)
            return -1;
        if ((used_s >> s & 1) || (used_d >> t & 1))
            return ir_fail(err, nerr, "repeated dim in %s", used_s >> s & 1 ? "source" : "destination");
        used_s |= 1u << s, used_d |= 1u << t;
        perm[t] = s;
    }
    int next = 0;
    for (int k = 0; k < ndim; k++) {
        if (perm[k] >= 0)
            continue;
        while (used_s >> next & 1)
            next++;
        perm[k] = next++;
    }
    return 0;
}

int ir_infer_movedim(IR_INFER_ARGS)
{
    int64_t perm[TJ_MAX_DIMS];
    int nd = in[0]->ndim ? in[0]->ndim : 1;
    if (ir_movedim_perm(&a->a[0], &a->a[1], nd, perm, err, nerr))
        return -1;
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    for (int k = 0; k < in[0]->ndim; k++)
        out->shape[k] = in[0]->shape[perm[k]];
    return 0;
}

int ir_infer_t(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    if (x->ndim > 2)
        return ir_fail(err, nerr, "expects a tensor of at most 2 dims, got %d", x->ndim);
    ir_set(out, x->dtype, x->ndim, x->shape);
    if (x->ndim == 2)
        out->shape[0] = x->shape[1], out->shape[1] = x->shape[0];
    return 0;
}

int ir_infer_unflatten(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    const ir_attr *s = &a->a[1];
    if (x->ndim == 0)
        return ir_fail(err, nerr, "cannot unflatten a 0-dim tensor");
    int d = one_dim(a->a[0].i[0], x->ndim, err, nerr);
    if (d < 0)
        return -1;
    if (s->n < 1 || x->ndim - 1 + s->n > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "sizes has %d entries (expected 1..%d)", s->n,
                       TJ_MAX_DIMS - x->ndim + 1);
    if (x->shape[d] < 0)
        return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    ir_attrs r;
    ir_type part = {x->dtype, 1, false, {x->shape[d]}}, got;
    const ir_type *pp = &part;
    memset(&r, 0, sizeof r);
    r.a[0] = *s;
    if (ir_infer_reshape(OP_reshape, &pp, 1, &r, &got, err, nerr))
        return -1;
    out->dtype = x->dtype;
    out->weak = false;
    out->ndim = x->ndim - 1 + got.ndim;
    int m = 0;
    for (int k = 0; k < x->ndim; k++) {
        if (k != d) {
            out->shape[m++] = x->shape[k];
            continue;
        }
        for (int j = 0; j < got.ndim; j++)
            out->shape[m++] = got.shape[j];
    }
    return 0;
}

/* expand_as and view_as: expand and reshape to the other's shape. */
static int like_other(ir_op view, IR_INFER_ARGS)
{
    (void)op, (void)nin;
    ir_attrs r;
    memset(&r, 0, sizeof r);
    ir_attr_ints(&r.a[0], in[1]->shape, in[1]->ndim);
    return view == OP_expand ? ir_infer_expand(view, in, 1, &r, out, err, nerr)
                             : ir_infer_reshape(view, in, 1, &r, out, err, nerr);
}

int ir_infer_expand_as(IR_INFER_ARGS) { return like_other(OP_expand, op, in, nin, a, out, err, nerr); }
int ir_infer_view_as(IR_INFER_ARGS) { return like_other(OP_reshape, op, in, nin, a, out, err, nerr); }

static int triangle(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    if (in[0]->ndim < 2)
        return ir_fail(err, nerr, "needs at least 2 dims, got %d", in[0]->ndim);
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

int ir_infer_tril(IR_INFER_ARGS) { return triangle(op, in, nin, a, out, err, nerr); }
int ir_infer_triu(IR_INFER_ARGS) { return triangle(op, in, nin, a, out, err, nerr); }

int ir_infer_masked_fill(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    const ir_type *x = in[0], *m = in[1];
    int nd;
    int64_t shape[TJ_MAX_DIMS];
    if (m->dtype != TJ_BOOL)
        return ir_fail(err, nerr, "mask must be bool, got %s", tj_dtype_name(m->dtype));
    if (!ir_broadcast(x, m, &nd, shape))
        return ir_fail(err, nerr, "the input and the mask cannot be broadcast together");
    ir_set(out, x->dtype, nd, shape);
    return 0;
}

/* ---- diagonals ----------------------------------------------------------------------- */

/* The length of the diagonal at offset off of an [n1, n2] matrix. */
int64_t ir_diag_len(int64_t n1, int64_t n2, int64_t off)
{
    int64_t l = off >= 0 ? (n1 < n2 - off ? n1 : n2 - off) : (n1 + off < n2 ? n1 + off : n2);
    return l > 0 ? l : 0;
}

/* Two distinct dims of ndim, normalized into d1, d2. */
static int dim_pair(const ir_attrs *a, int k, int ndim, int *d1, int *d2, char *err, size_t nerr)
{
    if ((*d1 = one_dim(a->a[k].i[0], ndim, err, nerr)) < 0 ||
        (*d2 = one_dim(a->a[k + 1].i[0], ndim, err, nerr)) < 0)
        return -1;
    if (*d1 == *d2)
        return ir_fail(err, nerr, "dim1 and dim2 are both dim %d", *d1);
    return 0;
}

int ir_infer_diagonal(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    int d1, d2;
    if (x->ndim < 2)
        return ir_fail(err, nerr, "needs at least 2 dims, got %d", x->ndim);
    if (dim_pair(a, 1, x->ndim, &d1, &d2, err, nerr))
        return -1;
    if (x->shape[d1] < 0 || x->shape[d2] < 0)
        return ir_fail(err, nerr, "the diagonal's dims must have static sizes");
    out->dtype = x->dtype, out->weak = false, out->ndim = x->ndim - 1;
    int m = 0;
    for (int k = 0; k < x->ndim; k++)
        if (k != d1 && k != d2)
            out->shape[m++] = x->shape[k];
    out->shape[m] = ir_diag_len(x->shape[d1], x->shape[d2], a->a[0].i[0]);
    return 0;
}

int ir_infer_diag_embed(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    int nd = x->ndim + 1, d1, d2;
    if (x->ndim < 1 || nd > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "needs 1 to %d dims, got %d", TJ_MAX_DIMS - 1, x->ndim);
    if (dim_pair(a, 1, nd, &d1, &d2, err, nerr))
        return -1;
    int64_t off = a->a[0].i[0], len = x->shape[x->ndim - 1];
    if (len < 0)
        return ir_fail(err, nerr, "the last dim must have a static size");
    if (off > INT32_MAX || off < -INT32_MAX)
        return ir_fail(err, nerr, "offset %lld is too large", (long long)off);
    int64_t n = len + (off < 0 ? -off : off);
    out->dtype = x->dtype, out->weak = false, out->ndim = nd;
    int m = 0;
    for (int k = 0; k < nd; k++)
        out->shape[k] = (k == d1 || k == d2) ? n : x->shape[m++];
    int64_t numel;
    if (!ir_numel_checked(nd, out->shape, &numel))
        return ir_fail_numel(err, nerr, "the result", nd, out->shape);
    return 0;
}

int ir_infer_one_hot(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    int64_t c = a->a[0].i[0];
    if (x->dtype != TJ_I64)
        return ir_fail(err, nerr, "one_hot takes an i64 tensor, got %s", tj_dtype_name(x->dtype));
    if (c < 0)
        return ir_fail(err, nerr, "num_classes must be given (>= 0), got %lld: inferring it "
                       "from the values is data-dependent", (long long)c);
    if (c == 0 && ir_type_numel(x) != 0)
        return ir_fail(err, nerr, "num_classes 0 leaves no class for the values");
    if (x->ndim + 1 > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "too many dims");
    ir_set(out, TJ_I64, x->ndim + 1, x->shape);
    out->shape[x->ndim] = c;
    int64_t numel;
    if (!ir_numel_checked(out->ndim, out->shape, &numel))
        return ir_fail_numel(err, nerr, "the result", out->ndim, out->shape);
    return 0;
}

int ir_infer_full_like(IR_INFER_ARGS)
{
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

/* ---- repeats ------------------------------------------------------------------------- */

int ir_infer_repeat(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    const ir_attr *r = &a->a[0];
    if (r->n < x->ndim || r->n > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "repeats has %d entries; needs %d to %d (the input has %d dims)",
                       r->n, x->ndim, TJ_MAX_DIMS, x->ndim);
    int lead = r->n - x->ndim, extra = 0;
    out->dtype = x->dtype, out->weak = false, out->ndim = r->n;
    for (int d = 0; d < r->n; d++) {
        int64_t s = d < lead ? 1 : x->shape[d - lead];
        if (r->i[d] < 0)
            return ir_fail(err, nerr, "negative repeat %lld in dim %d", (long long)r->i[d], d);
        if (s < 0 && r->i[d] != 1)
            return ir_fail(err, nerr, "dim %d has a symbolic size", d);
        extra += r->i[d] != 1 && s != 1;
        if (s >= 0 && __builtin_mul_overflow(s, r->i[d], &out->shape[d]))
            return ir_fail(err, nerr, "dim %d overflows", d);
        if (s < 0)
            out->shape[d] = s;
    }
    if (r->n + extra > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "repeating %d dims of %d needs more than %d dims", extra, r->n,
                       TJ_MAX_DIMS);
    int64_t numel;
    if (!ir_numel_checked(out->ndim, out->shape, &numel))
        return ir_fail_numel(err, nerr, "the result", out->ndim, out->shape);
    return 0;
}

/* tile: repeat with dims padded by leading ones to the input's rank. */
void ir_tile_repeats(const ir_attr *dims, int ndim, ir_attr *r)
{
    memset(r, 0, sizeof *r);
    int lead = ndim > dims->n ? ndim - dims->n : 0;
    r->n = dims->n + lead;
    for (int d = 0; d < r->n && d < IR_MAX_LIST; d++)
        r->i[d] = d < lead ? 1 : dims->i[d - lead];
}

int ir_infer_tile(IR_INFER_ARGS)
{
    ir_attrs r;
    if (a->a[0].n < 0 || a->a[0].n > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "dims has %d entries (expected 0..%d)", a->a[0].n, TJ_MAX_DIMS);
    memset(&r, 0, sizeof r);
    ir_tile_repeats(&a->a[0], in[0]->ndim, &r.a[0]);
    return ir_infer_repeat(op, in, nin, &r, out, err, nerr);
}

int ir_infer_repeat_interleave(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    int64_t r = a->a[0].i[0];
    int nd = x->ndim;
    if (nd == 0)
        return ir_fail(err, nerr, "a 0-dim tensor has no dim to repeat along");
    int d = one_dim(a->a[1].i[0], nd, err, nerr);
    if (d < 0)
        return -1;
    if (r < 0)
        return ir_fail(err, nerr, "repeats must be non-negative, got %lld", (long long)r);
    if (x->ndim + 1 > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "too many dims");
    int64_t s = x->ndim ? x->shape[d] : 1;
    if (s < 0)
        return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    ir_set(out, x->dtype, nd, x->shape);
    if (!x->ndim)
        out->shape[0] = 1;
    if (__builtin_mul_overflow(s, r, &out->shape[d]))
        return ir_fail(err, nerr, "dim %d overflows", d);
    int64_t numel;
    if (!ir_numel_checked(out->ndim, out->shape, &numel))
        return ir_fail_numel(err, nerr, "the result", out->ndim, out->shape);
    return 0;
}

int ir_infer_roll(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    const ir_attr *sh = &a->a[0], *dm = &a->a[1];
    if (sh->n < 1 || sh->n > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "shifts has %d entries (expected 1..%d)", sh->n, TJ_MAX_DIMS);
    if (dm->n == 0 ? sh->n != 1 : dm->n != sh->n)
        return ir_fail(err, nerr, "shifts has %d entries and dims %d", sh->n, dm->n);
    for (int k = 0; k < dm->n; k++) {
        int d = one_dim(dm->i[k], x->ndim, err, nerr);
        if (d < 0)
            return -1;
        if (x->ndim && x->shape[d] < 0)
            return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    }
    for (int d = 0; d < x->ndim && dm->n == 0; d++)
        if (x->shape[d] < 0)
            return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

/* ---- index-based --------------------------------------------------------------------- */

int ir_infer_take(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *ix = in[1];
    if (ix->dtype != TJ_I64)
        return ir_fail(err, nerr, "index must be i64, got %s", tj_dtype_name(ix->dtype));
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] < 0)
            return ir_fail(err, nerr, "the input's dim %d has a symbolic size", d);
    if (ir_type_numel(x) == 0 && ir_type_numel(ix) != 0)
        return ir_fail(err, nerr, "cannot take from an empty tensor");
    ir_set(out, x->dtype, ix->ndim, ix->shape);
    return 0;
}

int ir_infer_take_along_dim(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *ix = in[1];
    if (ix->dtype != TJ_I64)
        return ir_fail(err, nerr, "index must be i64, got %s", tj_dtype_name(ix->dtype));
    if (x->ndim != ix->ndim || x->ndim == 0)
        return ir_fail(err, nerr, "index has %d dims, input has %d (at least 1)", ix->ndim, x->ndim);
    int d = one_dim(a->a[0].i[0], x->ndim, err, nerr);
    if (d < 0)
        return -1;
    ir_set(out, x->dtype, x->ndim, x->shape);
    for (int k = 0; k < x->ndim; k++) {
        int64_t p = x->shape[k], q = ix->shape[k];
        if (k == d)
            out->shape[k] = q;
        else if (p == q || q == 1)
            out->shape[k] = p;
        else if (p == 1)
            out->shape[k] = q;
        else
            return ir_fail(err, nerr, "sizes %s and %s in dim %d cannot be broadcast", IR_DIM(p),
                           IR_DIM(q), k);
    }
    return 0;
}

int ir_infer_unfold(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    int64_t size = a->a[1].i[0], step = a->a[2].i[0];
    if (x->ndim == 0 || x->ndim + 1 > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "needs 1 to %d dims, got %d", TJ_MAX_DIMS - 1, x->ndim);
    int d = one_dim(a->a[0].i[0], x->ndim, err, nerr);
    if (d < 0)
        return -1;
    int64_t n = x->shape[d];
    if (n < 0)
        return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    if (step <= 0)
        return ir_fail(err, nerr, "step must be positive, got %lld", (long long)step);
    if (size < 0 || size > n)
        return ir_fail(err, nerr, "size %lld does not fit dim %d of size %lld", (long long)size, d,
                       (long long)n);
    ir_set(out, x->dtype, x->ndim + 1, x->shape);
    out->shape[d] = (n - size) / step + 1;
    out->shape[x->ndim] = size;
    return 0;
}

int ir_infer_index_fill(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *ix = in[1];
    if (ix->dtype != TJ_I64)
        return ir_fail(err, nerr, "index must be i64, got %s", tj_dtype_name(ix->dtype));
    if (ix->ndim > 1)
        return ir_fail(err, nerr, "index must have 0 or 1 dims, got %d", ix->ndim);
    int d = one_dim(a->a[0].i[0], x->ndim, err, nerr);
    if (d < 0)
        return -1;
    if (x->ndim && x->shape[d] < 0)
        return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

/* ---- creation ------------------------------------------------------------------------ */

static int create_dtype(int64_t dt, bool no_bool, char *err, size_t nerr)
{
    if (dt < 0 || dt >= TJ_NUM_DTYPES || !ir_dtype_supported((tj_dtype)dt))
        return ir_fail(err, nerr, "unsupported dtype %lld", (long long)dt);
    if (no_bool && dt == TJ_BOOL)
        return ir_fail(err, nerr, "unsupported dtype bool");
    return 0;
}

int ir_infer_eye(IR_INFER_ARGS)
{
    int64_t n = a->a[0].i[0], m = a->a[1].i[0];
    if (create_dtype(a->a[2].i[0], false, err, nerr))
        return -1;
    if (m == -1)
        m = n;
    if (n < 0 || m < 0)
        return ir_fail(err, nerr, "sizes must be non-negative, got n=%lld m=%lld", (long long)n,
                       (long long)m);
    int64_t shape[2] = {n, m}, numel;
    if (!ir_numel_checked(2, shape, &numel))
        return ir_fail_numel(err, nerr, "the result", 2, shape);
    ir_set(out, (tj_dtype)a->a[2].i[0], 2, shape);
    return 0;
}

int ir_infer_linspace(IR_INFER_ARGS)
{
    int64_t steps = a->a[2].i[0];
    int64_t dt = op == OP_logspace ? a->a[4].i[0] : a->a[3].i[0];
    if (create_dtype(dt, true, err, nerr))
        return -1;
    if (steps < 0)
        return ir_fail(err, nerr, "number of steps must be non-negative, got %lld",
                       (long long)steps);
    ir_set(out, (tj_dtype)dt, 1, &steps);
    return 0;
}

int ir_infer_logspace(IR_INFER_ARGS) { return ir_infer_linspace(op, in, nin, a, out, err, nerr); }

/* ---- scans and sorts ----------------------------------------------------------------- */

/* One dim of x (a 0-dim tensor takes 0 and -1). */
static int scan_dim(const ir_type *x, const ir_attrs *a, int k, char *err, size_t nerr)
{
    return one_dim(a->a[k].i[0], x->ndim, err, nerr);
}

int ir_infer_cumsum(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    if (scan_dim(x, a, 0, err, nerr) < 0)
        return -1;
    ir_set(out, ir_dtype_is_float(x->dtype) ? x->dtype : TJ_I64, x->ndim, x->shape);
    return 0;
}

int ir_infer_cumprod(IR_INFER_ARGS) { return ir_infer_cumsum(op, in, nin, a, out, err, nerr); }

int ir_infer_logcumsumexp(IR_INFER_ARGS)
{
    if (!ir_dtype_is_float(in[0]->dtype))
        return ir_fail(err, nerr, "needs a float tensor, got %s", tj_dtype_name(in[0]->dtype));
    return ir_infer_cumsum(op, in, nin, a, out, err, nerr);
}

int ir_infer_cummax_indices(IR_INFER_ARGS)
{
    if (scan_dim(in[0], a, 0, err, nerr) < 0)
        return -1;
    ir_set(out, TJ_I64, in[0]->ndim, in[0]->shape);
    return 0;
}

int ir_infer_cummin_indices(IR_INFER_ARGS) { return ir_infer_cummax_indices(op, in, nin, a, out, err, nerr); }
int ir_infer_argsort(IR_INFER_ARGS) { return ir_infer_cummax_indices(op, in, nin, a, out, err, nerr); }

int ir_infer_cummax(IR_INFER_ARGS)
{
    if (scan_dim(in[0], a, 0, err, nerr) < 0)
        return -1;
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

int ir_infer_cummin(IR_INFER_ARGS) { return ir_infer_cummax(op, in, nin, a, out, err, nerr); }
int ir_infer_sort(IR_INFER_ARGS) { return ir_infer_cummax(op, in, nin, a, out, err, nerr); }

int ir_infer_topk(IR_INFER_ARGS)
{
    const ir_type *x = in[0];
    int d = scan_dim(x, a, 1, err, nerr);
    if (d < 0)
        return -1;
    int64_t k = a->a[0].i[0], n = x->ndim ? x->shape[d] : 1;
    if (n < 0)
        return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    if (k < 0 || k > n)
        return ir_fail(err, nerr, "k %lld is out of range for a dim of size %lld", (long long)k,
                       (long long)n);
    ir_set(out, x->dtype, x->ndim, x->shape);
    if (x->ndim)
        out->shape[d] = k;
    return 0;
}

/* kthvalue and median: one value per line, dim kept or dropped. */
static int select_one(const ir_type *x, int64_t k, int d, bool keepdim, ir_type *out, char *err,
                      size_t nerr)
{
    int64_t n = x->ndim ? x->shape[d] : 1;
    if (n < 0)
        return ir_fail(err, nerr, "dim %d has a symbolic size", d);
    if (k < 1 || k > n)
        return ir_fail(err, nerr, "k %lld is out of range for a dim of size %lld", (long long)k,
                       (long long)n);
    ir_set(out, x->dtype, x->ndim, x->shape);
    if (!x->ndim)
        return 0;
    if (keepdim) {
        out->shape[d] = 1;
        return 0;
    }
    out->ndim--;
    for (int j = d; j < out->ndim; j++)
        out->shape[j] = x->shape[j + 1];
    return 0;
}

int ir_infer_kthvalue(IR_INFER_ARGS)
{
    int d = scan_dim(in[0], a, 1, err, nerr);
    return d < 0 ? -1 : select_one(in[0], a->a[0].i[0], d, a->a[2].i[0] != 0, out, err, nerr);
}

int ir_infer_median(IR_INFER_ARGS)
{
    int d = scan_dim(in[0], a, 0, err, nerr);
    if (d < 0)
        return -1;
    int64_t n = in[0]->ndim ? in[0]->shape[d] : 1;
    return select_one(in[0], n > 0 ? (n + 1) / 2 : 1, d, a->a[1].i[0] != 0, out, err, nerr);
}

/* ---- scatters ------------------------------------------------------------------------ */

/* torch.scatter's checks: index i64 of x's rank, src of x's dtype and rank,
 * index no larger than src anywhere nor than x outside dim. */
int ir_infer_scatter(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *ix = in[1], *src = in[2];
    int nd = x->ndim ? x->ndim : 1;
    if (ix->dtype != TJ_I64)
        return ir_fail(err, nerr, "index must be i64, got %s", tj_dtype_name(ix->dtype));
    if (src->dtype != x->dtype)
        return ir_fail(err, nerr, "src has dtype %s, the input %s", tj_dtype_name(src->dtype),
                       tj_dtype_name(x->dtype));
    if ((ix->ndim ? ix->ndim : 1) != nd || (src->ndim ? src->ndim : 1) != nd)
        return ir_fail(err, nerr, "index and src must have the input's %d dims", x->ndim);
    int d = one_dim(a->a[0].i[0], x->ndim, err, nerr);
    if (d < 0)
        return -1;
    for (int k = 0; k < ix->ndim; k++) {
        int64_t xs = x->ndim ? x->shape[k] : 1, ss = src->ndim ? src->shape[k] : 1;
        /* the input's size along dim bounds only the index's values (the
         * kernel checks them): it may be symbolic */
        if (ix->shape[k] < 0 || (xs < 0 && k != d) || ss < 0)
            return ir_fail(err, nerr, "dim %d has a symbolic size", k);
        if (ix->shape[k] > ss || (k != d && ix->shape[k] > xs))
            return ir_fail(err, nerr, "index has size %lld in dim %d, larger than %s's %lld",
                           (long long)ix->shape[k], k, ix->shape[k] > ss ? "src" : "the input",
                           (long long)(ix->shape[k] > ss ? ss : xs));
    }
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

int ir_infer_scatter_add(IR_INFER_ARGS) { return ir_infer_scatter(op, in, nin, a, out, err, nerr); }

/* scatter's checks, and reduce one of tj_reduce_op's (issue 11) */
int ir_infer_scatter_reduce(IR_INFER_ARGS)
{
    if (!ir_attr_word(IR_ATTR_REDUCE_OP, a->a[1].i[0]))
        return ir_fail(err, nerr, "reduce %lld is not sum, prod, mean, amax or amin",
                       (long long)a->a[1].i[0]);
    return ir_infer_scatter(op, in, nin, a, out, err, nerr);
}

/* index_add and index_copy: a 1-D index (or 0-dim) along dim of x, source of
 * x's shape with index's length in dim. */
int ir_infer_index_add(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *ix = in[1], *src = in[2];
    if (ix->dtype != TJ_I64)
        return ir_fail(err, nerr, "index must be i64, got %s", tj_dtype_name(ix->dtype));
    if (ix->ndim > 1)
        return ir_fail(err, nerr, "index must have 0 or 1 dims, got %d", ix->ndim);
    if (src->dtype != x->dtype)
        return ir_fail(err, nerr, "source has dtype %s, the input %s", tj_dtype_name(src->dtype),
                       tj_dtype_name(x->dtype));
    int d = one_dim(a->a[0].i[0], x->ndim, err, nerr);
    if (d < 0)
        return -1;
    int64_t n = ir_type_numel(ix);
    bool ok = src->ndim == x->ndim || (x->ndim <= 1 && src->ndim <= 1);
    for (int k = 0; ok && k < src->ndim && x->ndim; k++)
        ok = src->shape[k] == (k == d ? n : x->shape[k]);
    if (ok && x->ndim == 0)
        ok = ir_type_numel(src) == n && n == 1;
    if (!ok)
        return ir_fail(err, nerr, "source must have the input's shape with %lld in dim %d",
                       (long long)n, d);
    for (int k = 0; k < x->ndim; k++)   /* along dim: bounds the index's values only */
        if (x->shape[k] < 0 && k != d)
            return ir_fail(err, nerr, "dim %d has a symbolic size", k);
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

int ir_infer_index_copy(IR_INFER_ARGS) { return ir_infer_index_add(op, in, nin, a, out, err, nerr); }

/* x[i0, i1, ...] = values: i64 (or bool-free) index tensors for the leading
 * dims, broadcast together; values broadcast to their shape followed by the
 * dims not indexed. */
int ir_infer_index_put(IR_INFER_ARGS)
{
    const ir_type *x = in[0], *v = in[1];
    int m = nin - 2, bn = 0;
    int64_t bs[TJ_MAX_DIMS];
    if (m < 1 || m > x->ndim)
        return ir_fail(err, nerr, "needs 1 to %d index tensors, got %d", x->ndim, m);
    if (v->dtype != x->dtype)
        return ir_fail(err, nerr, "values have dtype %s, the input %s", tj_dtype_name(v->dtype),
                       tj_dtype_name(x->dtype));
    ir_type acc = {TJ_I64, 0, false, {0}};
    for (int k = 0; k < m; k++) {
        const ir_type *ix = in[2 + k];
        if (!ix)
            return ir_fail(err, nerr, "index %d is missing", k);
        if (ix->dtype != TJ_I64)
            return ir_fail(err, nerr, "index %d must be i64, got %s", k, tj_dtype_name(ix->dtype));
        if (!ir_broadcast(&acc, ix, &bn, bs))
            return ir_fail(err, nerr, "the index tensors cannot be broadcast together");
        acc.ndim = bn;
        memcpy(acc.shape, bs, sizeof bs);
    }
    if (acc.ndim + x->ndim - m > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "too many dims");
    ir_type want = acc;
    for (int k = m; k < x->ndim; k++)
        want.shape[want.ndim++] = x->shape[k];
    int nd;
    int64_t shape[TJ_MAX_DIMS];
    if (!ir_broadcast(&want, v, &nd, shape) || nd != want.ndim ||
        memcmp(shape, want.shape, (size_t)nd * sizeof *shape))
        return ir_fail(err, nerr, "values do not broadcast to the indexed shape");
    for (int k = 0; k < x->ndim; k++)
        if (x->shape[k] < 0)
            return ir_fail(err, nerr, "dim %d has a symbolic size", k);
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

/* ---- searchsorted and bucketize -------------------------------------------------------- */

static int search_rule(const ir_type *seq, const ir_type *v, ir_type *out, char *err, size_t nerr)
{
    if (seq->ndim == 0)
        return ir_fail(err, nerr, "the sorted sequence needs at least 1 dim");
    if (seq->dtype == TJ_BOOL || v->dtype == TJ_BOOL)
        return ir_fail(err, nerr, "bool inputs are not supported");
    if (seq->ndim > 1) {
        bool ok = v->ndim == seq->ndim;
        for (int k = 0; ok && k < seq->ndim - 1; k++)
            ok = v->shape[k] == seq->shape[k];
        if (!ok)
            return ir_fail(err, nerr, "the values must have the sequence's leading dims");
    }
    if (seq->shape[seq->ndim - 1] < 0)
        return ir_fail(err, nerr, "the sequence has a symbolic length");
    if (v->ndim + 1 > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "too many dims");
    ir_set(out, TJ_I64, v->ndim, v->shape);
    return 0;
}

int ir_infer_searchsorted(IR_INFER_ARGS) { return search_rule(in[0], in[1], out, err, nerr); }

int ir_infer_bucketize(IR_INFER_ARGS)
{
    if (in[1]->ndim != 1)
        return ir_fail(err, nerr, "boundaries must have 1 dim, got %d", in[1]->ndim);
    return search_rule(in[1], in[0], out, err, nerr);
}

int ir_infer_maximum_value(IR_INFER_ARGS)
{
    if (create_dtype(a->a[0].i[0], true, err, nerr))
        return -1;
    ir_set(out, (tj_dtype)a->a[0].i[0], 0, NULL);
    return 0;
}

int ir_infer_minimum_value(IR_INFER_ARGS) { return ir_infer_maximum_value(op, in, nin, a, out, err, nerr); }
