/* decomp_adaptive.c - decompositions of the adaptive pools, cdist and
 * matrix_norm (rules in ir/infer_adaptive.c):
 *
 *   adaptive pools  per pooled dim, output i reduces the window [floor(i n / o),
 *                   ceil((i + 1) n / o)) of the n inputs; the 2-D and 3-D
 *                   pools do D, H then W (a mean of equal-length row means is
 *                   the window's mean). A mean whose windows all have length
 *                   n / o is a reshape and a mean; one whose windows have at
 *                   most ADAPT_TAPS entries (upsampling: interpolate's area)
 *                   sums index_selects at s + k (k < the longest window, past a
 *                   window's end masked by where, not multiplied by 0, so inf
 *                   stays in its own windows) and divides by the lengths; any
 *                   other (and amax) is one slice per output, reduced with
 *                   keepdim and concatenated
 *   cdist           vector_norm(x1[..., :, None, :] - x2[..., None, :, :], p, -1)
 *   matrix_norm     vector_norm(x, 2, dims), the Frobenius norm
 */
#include "decomp.h"

enum { ADAPT_TAPS = 8 };

/* Window i of n inputs pooled to o: [win_start, win_end). */
static int64_t win_start(int64_t i, int64_t n, int64_t o) { return i * n / o; }
static int64_t win_end(int64_t i, int64_t n, int64_t o) { return ((i + 1) * n + o - 1) / o; }

/* The mean over windows of n / o entries each: x [.., n, ..] viewed as
 * [.., o, n / o, ..], its mean over dim d + 1. */
static ir_node *mean_split(ps_builder *b, ir_node *x, int d, int64_t o)
{
    int nd = x->type.ndim;
    int64_t shape[TJ_MAX_DIMS], r = d + 1;
    if (nd == TJ_MAX_DIMS)
        return ps_b_fail(b, "an adaptive pool of a %d-D input", nd);
    for (int k = 0; k <= nd; k++)
        shape[k] = k < d        ? x->type.shape[k]
                   : k == d     ? o
                   : k == d + 1 ? x->type.shape[d] / o
                                : x->type.shape[k - 1];
    return ps_b_reduce(b, OP_mean, ps_b_reshape(b, x, shape, nd + 1), &r, 1, false);
}

/* The mean over windows of at most kmax entries: the sum of x at s + k over
 * k < kmax, where(s + k < e, ., 0) for the windows shorter than k + 1, over
 * the window lengths. The index vectors come from arange (exact in f64). */
static ir_node *mean_taps(ps_builder *b, ir_node *x, int d, int64_t o, int64_t kmax, int64_t kmin)
{
    int64_t n = x->type.shape[d];
    int nd = x->type.ndim;
    ir_node *i = ps_b_arange(b, o, TJ_F64);
    ir_node *s = b_un(b, OP_floor, b_div_s(b, b_mul_s(b, i, (double)n), (double)o));
    ir_node *e = b_un(b, OP_ceil, b_div_s(b, b_mul_s(b, b_add_s(b, i, 1), (double)n), (double)o));
    ir_node *last = ps_b_cast(b, b_add_s(b, e, -1), TJ_I64), *first = ps_b_cast(b, s, TJ_I64);
    ir_node *y = NULL;
    for (int64_t k = 0; k < kmax; k++) {
        ir_node *at = b_bin(b, OP_minimum, b_add_s(b, first, (double)k), last);
        ir_node *t = ps_b_index_select(b, x, d, at);
        if (k >= kmin)
            t = b_where_xs(b, ps_b_along(b, b_bin(b, OP_lt, b_add_s(b, s, (double)k), e), d, nd), t,
                           0);
        y = k ? b_add(b, y, t) : t;
    }
    return b_div(b, y, ps_b_along(b, ps_b_cast(b, b_sub(b, e, s), x->type.dtype), d, nd));
}

static ir_node *adapt_dim(ps_builder *b, ir_node *x, int d, int64_t o, ir_op red)
{
    if (!x)
        return NULL;
    int64_t n = x->type.shape[d], kmax = 0, kmin = n;
    for (int64_t i = 0; i < o; i++) {
        int64_t len = win_end(i, n, o) - win_start(i, n, o);
        kmax = len > kmax ? len : kmax;
        kmin = len < kmin ? len : kmin;
    }
    if (red == OP_mean && o > 0 && n % o == 0)
        return mean_split(b, x, d, o);
    if (red == OP_mean && o > 0 && kmax <= ADAPT_TAPS)
        return mean_taps(b, x, d, o, kmax, kmin);
    ir_node *parts[4096];
    if (o > 4096)
        return ps_b_fail(b, "output size %lld is more than 4096", (long long)o);
    if (o == 0) {   /* an empty result: the first 0 entries */
        ir_attrs sa = {0};
        ir_attr_int(&sa.a[0], d);
        ir_attr_int(&sa.a[3], 1);
        return ps_b_op(b, OP_slice, &x, 1, &sa);
    }
    for (int64_t i = 0; i < o; i++) {
        ir_attrs sa = {0};
        ir_attr_int(&sa.a[0], d);
        ir_attr_int(&sa.a[1], win_start(i, n, o));
        ir_attr_int(&sa.a[2], win_end(i, n, o));
        ir_attr_int(&sa.a[3], 1);
        int64_t dd = d;
        parts[i] = ps_b_reduce(b, red, ps_b_op(b, OP_slice, &x, 1, &sa), &dd, 1, true);
    }
    if (o == 1)
        return parts[0];
    ir_attrs ca = {0};
    ir_attr_int(&ca.a[0], d);
    return ps_b_op(b, OP_cat, parts, (int)o, &ca);
}

static ir_node *adaptive(ps_builder *b, const ir_attrs *a, ir_node *x, int k, ir_op red)
{
    int nd = x->type.ndim;
    for (int j = 0; j < k; j++)
        x = adapt_dim(b, x, nd - k + j, a->a[0].i[j], red);
    return x;
}

ir_node *ps_decomp_adaptive_avg_pool1d(PS_DECOMP_ARGS)
{
    (void)n;
    return adaptive(b, a, in[0], 1, OP_mean);
}

ir_node *ps_decomp_adaptive_avg_pool2d(PS_DECOMP_ARGS)
{
    (void)n;
    return adaptive(b, a, in[0], 2, OP_mean);
}

ir_node *ps_decomp_adaptive_avg_pool3d(PS_DECOMP_ARGS)
{
    (void)n;
    return adaptive(b, a, in[0], 3, OP_mean);
}

ir_node *ps_decomp_adaptive_max_pool2d(PS_DECOMP_ARGS)
{
    (void)n;
    return adaptive(b, a, in[0], 2, OP_amax);
}

static ir_node *vector_norm(ps_builder *b, ir_node *x, double ord, const int64_t *dims, int nd,
                            bool keep)
{
    ir_attrs va = {0};
    ir_attr_float(&va.a[0], ord);
    ir_attr_ints(&va.a[1], dims, nd);
    ir_attr_int(&va.a[2], keep);
    return ps_b_op(b, OP_vector_norm, &x, 1, &va);
}

ir_node *ps_decomp_cdist(PS_DECOMP_ARGS)
{
    (void)n;
    ir_node *x1 = in[0], *x2 = in[1];
    ir_node *d = b_sub(b, ps_b_unsqueeze(b, x1, x1->type.ndim - 1),
                       ps_b_unsqueeze(b, x2, x2->type.ndim - 2));
    int64_t last = d ? d->type.ndim - 1 : 0;
    return vector_norm(b, d, a->a[0].f, &last, 1, false);
}

ir_node *ps_decomp_matrix_norm(PS_DECOMP_ARGS)
{
    (void)n;
    int nd = in[0]->type.ndim;
    int64_t dims[2] = {nd - 2, nd - 1};
    const int64_t *dp = a->a[0].n ? a->a[0].i : dims;
    return vector_norm(b, in[0], 2, dp, 2, a->a[1].i[0] != 0);
}
