/* decomp_interp.c - decompositions of ops.def's "interpolate, embedding_bag,
 * einsum, scatter_reduce" DCOMP rows (rules in ir/infer_interp.c):
 *
 *   upsample_nearest     per resized dim, index_select at PyTorch's nearest index
 *                        min(floor(i * scale), in - 1) in f32 (scale: 1 / scale_factor,
 *                        or in / out); out == in keeps the dim, out == 2 in takes i >> 1;
 *                        where those indices are i / k (out = k in) or i k (in = k out),
 *                        checked here entry by entry, a view instead (expand + reshape,
 *                        or a strided slice), so integer factors fuse into one copy
 *   upsample_bilinear2d  per dim, W then H (PyTorch's order): two index_selects at
 *                        i0 = trunc(src), i1 = min(i0 + 1, in - 1) with
 *                        src = scale (i + 0.5) - 0.5 clamped at 0 (align_corners: scale
 *                        (in - 1) / (out - 1), src = scale i), computed in f64, and
 *                        a l0 + b l1 with l1 = clamp(src - i0, 0, 1), l0 = 1 - l1
 *   upsample_bicubic2d   per dim, W then H: four index_selects at floor(src) - 1 .. + 2,
 *                        clamped to [0, in - 1] (upsample_bicubic2d's border), src not
 *                        clamped, weighted by PyTorch's cubic convolution (A = -0.75)
 *                        of t = src - floor(src); the scale rounded to x's dtype as
 *                        PyTorch's, the coordinates, weights and sums in f64 and the
 *                        result rounded once (the weights cancel: f32 arithmetic,
 *                        PyTorch's own included, is off by several ulps of the inputs).
 *                        Every output reads its four taps, even where out == in (as
 *                        PyTorch's, so a non-finite neighbour gives NaN there too).
 *                        Gathers, not a matmul by an [out, in] weight matrix: 4 reads
 *                        per output instead of in, and inf/NaN reach only their taps
 *   embedding_bag        rows = index_select(weight, 0, indices) (times
 *                        per_sample_weights); 2-D indices: sum, mean or amax over
 *                        the bag dim; 1-D: each index's bag is searchsorted(offsets,
 *                        i, right) - 1, and the rows are scatter_add'ed (sum, mean:
 *                        divided by the bag's count, at least 1) or scatter_reduce'd
 *                        (amax, include_self false) into zeros, so an empty bag is 0;
 *                        with padding_idx (1-D or 2-D) an entry equal to it goes to
 *                        one extra bag, dropped at the end: not summed, not counted,
 *                        no gradient, and a bag of padding only is 0 (torch's)
 * The index and weight vectors depend on static sizes only: arange and
 * pointwise prims, so they fold or fuse, and no gradient reaches them.
 */
#include <math.h>
#include <string.h>

#include "decomp.h"

static ir_node *b_dim1(ps_builder *b, ir_op op, ir_node *const *in, int nin, int64_t dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return ps_b_op(b, op, in, nin, &at);
}

/* A number of dtype dt (a 0-dim cast, so f32 arithmetic stays f32). */
static ir_node *num(ps_builder *b, double v, tj_dtype dt)
{
    return ps_b_cast(b, ps_b_scalar(b, v, TJ_F64), dt);
}

/* ---- interpolate --------------------------------------------------------------------- */

/* PyTorch's compute_scales_value: 1 / scale_factor when one is given, else in / out. */
static double scale_of(double given, int64_t in, int64_t out, tj_dtype dt)
{
    if (given > 0)
        return dt == TJ_F64 ? 1.0 / given : (double)(float)(1.0 / given);
    return dt == TJ_F64 ? (double)in / (double)out : (double)((float)in / (float)out);
}

/* PyTorch's nearest index of output i (nearest_idx, in float). */
static int64_t nearest_at(int64_t i, int64_t in, int64_t out, float s)
{
    if (out == in)
        return i;
    if (out == 2 * in)
        return i >> 1;
    int64_t t = (int64_t)floorf((float)i * s);
    return t < in - 1 ? t : in - 1;
}

/* Whether PyTorch's indices along the dim are i / k (out = k in) or i k (in = k out). */
static bool nearest_is(int64_t in, int64_t out, float s, int64_t k, bool up)
{
    for (int64_t i = 0; i < out; i++)
        if (nearest_at(i, in, out, s) != (up ? i / k : i * k))
            return false;
    return true;
}

/* An integer factor whose indices are exactly PyTorch's is a view (each entry
 * repeated k times: unsqueeze, expand, reshape; every k-th: a strided slice),
 * which fuses; any other size gathers at the index vector. */
static ir_node *nearest_dim(ps_builder *b, ir_node *x, int d, int64_t out, double given)
{
    int64_t in = x ? x->type.shape[d] : 0;
    if (!x || out == in)
        return x;
    float s = (float)scale_of(given, in, out, TJ_F32);
    if (out % in == 0 && nearest_is(in, out, s, out / in, true)) {
        int64_t shape[TJ_MAX_DIMS];
        int nd = x->type.ndim;
        memcpy(shape, x->type.shape, sizeof shape);
        ir_node *u = ps_b_unsqueeze(b, x, d + 1);
        int64_t es[TJ_MAX_DIMS + 1];
        for (int j = 0, m = 0; j <= nd; j++)
            es[j] = j == d + 1 ? out / in : shape[m++];
        ir_attrs ea = {0};
        ir_attr_ints(&ea.a[0], es, nd + 1);
        ir_node *e = ps_b_op(b, OP_expand, &u, 1, &ea);
        shape[d] = out;
        return ps_b_reshape(b, e, shape, nd);
    }
    if (in % out == 0 && nearest_is(in, out, s, in / out, false)) {
        ir_attrs sa = {0};
        ir_attr_int(&sa.a[0], d);
        ir_attr_int(&sa.a[1], 0);
        ir_attr_int(&sa.a[2], in);
        ir_attr_int(&sa.a[3], in / out);
        return ps_b_op(b, OP_slice, &x, 1, &sa);
    }
    double sv = out == 2 * in ? 0.5 : (double)s;
    ir_node *src = b_un(b, OP_floor, b_mul(b, ps_b_arange(b, out, TJ_F32), num(b, sv, TJ_F32)));
    ir_node *ix = b_bin(b, OP_minimum, ps_b_cast(b, src, TJ_I64), num(b, (double)(in - 1), TJ_I64));
    return ps_b_index_select(b, x, d, ix);
}

ir_node *ps_decomp_upsample_nearest(PS_DECOMP_ARGS)
{
    (void)n;
    int k = a->a[0].n;
    ir_node *x = in[0];
    for (int j = 0; j < k; j++)
        x = nearest_dim(b, x, 2 + j, a->a[0].i[j], a->a[1 + 3 - k + j].f);
    return x ? x : ps_b_fail(b, "upsample_nearest failed");
}

/* Along dim d of x: sum over k < n of x[idx[k]] w[k], left to right, the
 * weights [out] broadcast along d. */
static ir_node *taps(ps_builder *b, ir_node *x, int d, ir_node *const *idx, ir_node *const *w,
                     int n)
{
    ir_node *y = NULL;
    for (int k = 0; k < n && x; k++) {
        ir_node *t = b_mul(b, ps_b_index_select(b, x, d, idx[k]),
                           ps_b_along(b, w[k], d, x->type.ndim));
        y = k ? b_add(b, y, t) : t;
    }
    return y;
}

/* PyTorch's source coordinate of each output i (area_pixel_compute_source_index)
 * in dtype ct: scale i with align_corners (scale (in - 1) / (out - 1)), else
 * scale (i + 0.5) - 0.5, clamped at 0 unless cubic; the scale rounded to x's
 * dtype dt first. */
static ir_node *source_coord(ps_builder *b, int64_t in, int64_t out, bool corners, double given,
                             tj_dtype dt, tj_dtype ct, bool cubic)
{
    ir_node *i = ps_b_arange(b, out, ct);
    if (corners) {
        double s = out > 1 ? (dt == TJ_F64 ? (double)(in - 1) / (double)(out - 1)
                                           : (double)((float)(in - 1) / (float)(out - 1)))
                           : 0;
        return b_mul(b, i, num(b, s, ct));
    }
    ir_node *t = b_mul(b, b_add(b, i, num(b, 0.5, ct)), num(b, scale_of(given, in, out, dt), ct));
    t = b_sub(b, t, num(b, 0.5, ct));
    return cubic ? t : b_bin(b, OP_maximum, t, num(b, 0, ct));
}

/* Along dim d of x: a[i0] l0 + a[i1] l1. As PyTorch's CPU kernel: the scale in
 * x's dtype, the source coordinate and l1 in f64 (its accscalar_t), l1 then
 * rounded to x's dtype and l0 = 1 - l1 there. */
static ir_node *linear_dim(ps_builder *b, ir_node *x, int d, int64_t out, bool corners,
                           double given)
{
    if (!x)
        return NULL;
    int64_t in = x->type.shape[d];
    if (out == in)
        return x;
    tj_dtype dt = x->type.dtype;
    ir_node *src = source_coord(b, in, out, corners, given, dt, TJ_F64, false);
    ir_node *i0 = ps_b_cast(b, src, TJ_I64);
    ir_node *i1 = b_bin(b, OP_minimum, b_add(b, i0, num(b, 1, TJ_I64)),
                        num(b, (double)(in - 1), TJ_I64));
    ir_node *l1 = b_sub(b, src, ps_b_cast(b, i0, TJ_F64));
    l1 = b_bin(b, OP_minimum, b_bin(b, OP_maximum, l1, num(b, 0, TJ_F64)), num(b, 1, TJ_F64));
    l1 = ps_b_cast(b, l1, dt);
    return taps(b, x, d, (ir_node *[]){i0, i1}, (ir_node *[]){b_sub(b, num(b, 1, dt), l1), l1}, 2);
}

ir_node *ps_decomp_upsample_bilinear2d(PS_DECOMP_ARGS)
{
    (void)n;
    bool corners = a->a[1].i[0] != 0;
    ir_node *x = linear_dim(b, in[0], 3, a->a[0].i[1], corners, a->a[3].f);
    return linear_dim(b, x, 2, a->a[0].i[0], corners, a->a[2].f);
}

/* PyTorch's cubic convolution (get_cubic_upsample_coefficients, A = -0.75),
 * operation for operation: c1(x) = ((A + 2) x - (A + 3)) x x + 1 for |x| <= 1,
 * c2(x) = ((A x - 5 A) x + 8 A) x - 4 A for 1 < |x| < 2. */
#define CUBIC_A (-0.75)

static ir_node *cubic1(ps_builder *b, ir_node *x, tj_dtype ct)
{
    ir_node *p = b_sub(b, b_mul(b, x, num(b, CUBIC_A + 2, ct)), num(b, CUBIC_A + 3, ct));
    return b_add(b, b_mul(b, b_mul(b, p, x), x), num(b, 1, ct));
}

static ir_node *cubic2(ps_builder *b, ir_node *x, tj_dtype ct)
{
    ir_node *p = b_sub(b, b_mul(b, x, num(b, CUBIC_A, ct)), num(b, 5 * CUBIC_A, ct));
    p = b_add(b, b_mul(b, p, x), num(b, 8 * CUBIC_A, ct));
    return b_sub(b, b_mul(b, p, x), num(b, 4 * CUBIC_A, ct));
}

/* Along dim d of x (f64): the four taps floor(src) - 1 .. + 2, clamped to the
 * border, weighted c2(t + 1), c1(t), c1(1 - t), c2(2 - t); dt is the input's
 * dtype (the scale's rounding). */
static ir_node *cubic_dim(ps_builder *b, ir_node *x, int d, int64_t out, bool corners, double given,
                          tj_dtype dt)
{
    if (!x)
        return NULL;
    int64_t in = x->type.shape[d];
    const tj_dtype ct = TJ_F64;
    ir_node *src = source_coord(b, in, out, corners, given, dt, ct, true);
    ir_node *fl = b_un(b, OP_floor, src), *i0 = ps_b_cast(b, fl, TJ_I64);
    ir_node *t = b_sub(b, src, fl), *u = b_sub(b, num(b, 1, ct), t);
    ir_node *idx[4], *w[4] = {cubic2(b, b_add(b, t, num(b, 1, ct)), ct), cubic1(b, t, ct),
                              cubic1(b, u, ct), cubic2(b, b_add(b, u, num(b, 1, ct)), ct)};
    for (int k = 0; k < 4; k++) {
        ir_node *j = b_add(b, i0, num(b, k - 1, TJ_I64));
        idx[k] = b_bin(b, OP_maximum, b_bin(b, OP_minimum, j, num(b, (double)(in - 1), TJ_I64)),
                       num(b, 0, TJ_I64));
    }
    return taps(b, x, d, idx, w, 4);
}

ir_node *ps_decomp_upsample_bicubic2d(PS_DECOMP_ARGS)
{
    (void)n;
    bool corners = a->a[1].i[0] != 0;
    tj_dtype dt = in[0]->type.dtype;
    ir_node *x = cubic_dim(b, ps_b_cast(b, in[0], TJ_F64), 3, a->a[0].i[1], corners, a->a[3].f, dt);
    return ps_b_cast(b, cubic_dim(b, x, 2, a->a[0].i[0], corners, a->a[2].f, dt), dt);
}

/* ---- embedding_bag ------------------------------------------------------------------- */

static ir_node *bag_of_2d(ps_builder *b, const ir_node *n, ir_node *rows, int64_t mode,
                          int64_t bags, int64_t len)
{
    int64_t one = 1;
    if (len == 0 && rows) {   /* every bag empty: zeros */
        ir_type zt = n->type;
        zt.dtype = rows->type.dtype;
        return ps_b_const(b, 0, &zt);
    }
    ir_op red = mode == TJ_REDUCE_AMAX ? OP_amax : mode == TJ_REDUCE_MEAN ? OP_mean : OP_sum;
    ir_node *r = ps_b_reduce(b, red, rows, &one, 1, false);
    if (r && r->type.shape[0] != n->type.shape[0]) {   /* include_last_offset: one bag fewer */
        ir_attrs sa = {0};
        ir_attr_int(&sa.a[0], 0);
        ir_attr_int(&sa.a[1], 0);
        ir_attr_int(&sa.a[2], bags - 1);
        ir_attr_int(&sa.a[3], 1);
        r = ps_b_op(b, OP_slice, &r, 1, &sa);
    }
    return r;
}

/* The first n rows of x. */
static ir_node *first_rows(ps_builder *b, ir_node *x, int64_t n)
{
    if (!x || x->type.shape[0] == n)
        return x;
    ir_attrs sa = {0};
    ir_attr_int(&sa.a[0], 0);
    ir_attr_int(&sa.a[1], 0);
    ir_attr_int(&sa.a[2], n);
    ir_attr_int(&sa.a[3], 1);
    return ps_b_op(b, OP_slice, &x, 1, &sa);
}

/* rows [cnt, D] reduced into slots bags by their bag index bag [cnt] (scatter_add,
 * or scatter_reduce amax without the zeros it starts from), the first nb kept. */
static ir_node *bag_scatter(ps_builder *b, ir_node *rows, ir_node *bag, int64_t mode, int64_t slots,
                            int64_t nb)
{
    if (!rows)
        return NULL;
    int64_t cnt = rows->type.shape[0], d = rows->type.shape[1];
    tj_dtype dt = rows->type.dtype;
    ir_node *zero = ps_b_const(b, 0, &(ir_type){.dtype = dt, .ndim = 2, .shape = {slots, d}});
    ir_attrs ea = {0};
    ir_attr_ints(&ea.a[0], (int64_t[]){cnt, d}, 2);
    ir_node *bix = ps_b_op(b, OP_expand, (ir_node *[]){ps_b_unsqueeze(b, bag, 1)}, 1, &ea);
    if (mode == TJ_REDUCE_AMAX) {
        ir_attrs sa = {0};
        ir_attr_int(&sa.a[0], 0);
        ir_attr_int(&sa.a[1], TJ_REDUCE_AMAX);
        ir_attr_int(&sa.a[2], false);
        return first_rows(b, ps_b_op(b, OP_scatter_reduce, (ir_node *[]){zero, bix, rows}, 3, &sa),
                          nb);
    }
    ir_node *sum = b_dim1(b, OP_scatter_add, (ir_node *[]){zero, bix, rows}, 3, 0);
    if (mode == TJ_REDUCE_MEAN) {
        ir_node *ones = ps_b_const(b, 1, &(ir_type){.dtype = dt, .ndim = 1, .shape = {cnt}});
        ir_node *count_in[3] = {ps_b_const(b, 0,
                                           &(ir_type){.dtype = dt, .ndim = 1, .shape = {slots}}),
                                bag, ones};
        ir_node *count = b_dim1(b, OP_scatter_add, count_in, 3, 0);
        count = b_bin(b, OP_maximum, count, num(b, 1, dt));
        sum = b_div(b, sum, ps_b_unsqueeze(b, count, 1));
    }
    return first_rows(b, sum, nb);
}

/* rows are bagged by a reduction over L ([B, L] indices without padding), else
 * by bag_scatter: each index's bag from offsets (searchsorted) or its row of
 * [B, L]; a padding entry's bag is an extra one, dropped at the end. */
ir_node *ps_decomp_embedding_bag(PS_DECOMP_ARGS)
{
    ir_node *w = in[0], *ix = ps_b_cast(b, in[1], TJ_I64);
    ir_node *off = n->nin > 2 ? in[2] : NULL, *psw = n->nin > 3 ? in[3] : NULL;
    int64_t mode = a->a[0].i[0], d = w->type.shape[1], nb = n->type.shape[0];
    int64_t cnt = ix ? ir_type_numel(&ix->type) : 0;
    bool pad = a->a[2].n == 1;
    ir_node *flat = ps_b_reshape(b, ix, &cnt, 1);
    ir_node *rows = ps_b_index_select(b, w, 0, flat); /* [cnt, D] */
    if (psw)
        rows = b_mul(b, rows, ps_b_unsqueeze(b, ps_b_reshape(b, psw, &cnt, 1), 1));
    ir_node *bag;
    if (!off) {
        int64_t bags = in[1]->type.shape[0], len = in[1]->type.shape[1];
        if (!pad)
            return bag_of_2d(b, n, ps_b_reshape(b, rows, (int64_t[]){bags, len, d}, 3), mode, bags,
                             len);
        ir_attrs ea = {0};
        ir_attr_ints(&ea.a[0], (int64_t[]){bags, len}, 2);
        ir_node *r = ps_b_unsqueeze(b, ps_b_arange(b, bags, TJ_I64), 1);
        bag = ps_b_reshape(b, ps_b_op(b, OP_expand, &r, 1, &ea), &cnt, 1);
    } else {
        ir_attrs ra = {0};
        ir_attr_int(&ra.a[0], true);
        ir_node *sorted_in[2] = {ps_b_cast(b, off, TJ_I64), ps_b_arange(b, cnt, TJ_I64)};
        bag = b_sub(b, ps_b_op(b, OP_searchsorted, sorted_in, 2, &ra), num(b, 1, TJ_I64));
    }
    if (pad)
        bag = b_where(b, b_bin(b, OP_eq, flat, num(b, (double)a->a[2].i[0], TJ_I64)),
                      num(b, (double)nb, TJ_I64), bag);
    return bag_scatter(b, rows, bag, mode, nb + pad, nb);
}
