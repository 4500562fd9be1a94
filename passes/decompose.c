/* decompose.c - the decompose pass: rewrites every composite op (a COMP row of
 * ir/ops.def, ir_ops[op].prim == false) into primitive ops, PrimTorch-style.
 *
 * Each composite row `name` has its decomposition ps_decomp_<name>() below;
 * the table `decomps` is generated from ops.def, so a COMP row without one is
 * a compile error ("used but never defined"). A decomposition gets the
 * original node (type, attributes) and its inputs already rebuilt, and builds
 * the replacement with the builder of build.h. It may use other composites
 * (layer_norm uses mean, sdpa uses softmax): the pass rebuilds the graph
 * until no composite is left, at most MAX_ROUNDS times.
 *
 * The decompositions compute what the eager kernels compute (runtime/k_*.c),
 * in the same order where it matters, so decomposed and eager results agree
 * to a few ulp: softmax, log_softmax and logsumexp subtract the max first;
 * layer_norm uses var (correction 0); constants are weak `scalar`s so type
 * promotion matches the eager _s ops. Symbolic dims survive: broadcasting
 * replaces expand, and a count over a symbolic dim is computed in the graph.
 * An index along a symbolic dim counts ones along it (ps_b_arange_of: tril,
 * sdpa's causal mask). What cannot be expressed with symbolic dims
 * (flattening the indices of embedding, the random mask of dropout) fails
 * with a message; for code generation such a composite stays whole when it
 * has an eager kernel (decompose_node). The list with each formula is in
 * docs/passes.md.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../ir/infer.h"
#include "decomp.h"
#include "rewrite.h"

/* MAX_WIDE: inputs of a composite widened from f16/bf16, at most */
enum { MAX_ROUNDS = 8, IR_MAX_DECOMP_IN = 16, MAX_WIDE = IR_MAX_DECOMP_IN };

#include "decomp.h"
typedef ir_node *(*decomp_fn)(PS_DECOMP_ARGS);

/* One prototype per COMP row (DCOMP rows: decomp.h). */
#define DECOMP_PRIM(name)
#define DECOMP_COMP(name) static ir_node *ps_decomp_##name(PS_DECOMP_ARGS);
#define DECOMP_DCOMP(name)   /* decomp.h */
#define OP(name, kind, nmin, nmax, decomp, attrs) DECOMP_##decomp(name)
#define UNARY(name, rule, decomp, f32, f64, i) DECOMP_##decomp(name)
#define BINARY(name, rule, decomp, f32, f64, i) DECOMP_##decomp(name)
#include "../ir/ops.def"
#undef DECOMP_COMP

/* ---- helpers --------------------------------------------------------------------- */

static ir_node *b_lt_s(ps_builder *b, ir_node *x, double v) { return b_bin_s(b, OP_lt, x, v); }

/* The dims [from, ndim) as a list; returns its length. */
static int tail_dims(int from, int ndim, int64_t *dims)
{
    int n = 0;
    for (int d = from; d < ndim; d++)
        dims[n++] = d;
    return n;
}

/* The number of elements a reduction over `mask` of x combines: a wrapped
 * number when those dims are static; else an i64 tensor counting them (the
 * sum of ones shaped like x) with the reduction's result shape. */
static ir_node *count_of(ps_builder *b, ir_node *x, uint32_t mask, bool keepdim)
{
    if (!x)
        return NULL;
    int64_t count = 1, dims[TJ_MAX_DIMS];
    int nd = 0;
    bool sym = false;
    for (int d = 0; d < x->type.ndim; d++) {
        if (!(mask & (1u << d)))
            continue;
        dims[nd++] = d;
        if (IR_IS_SYM(x->type.shape[d]))
            sym = true;
        else
            count *= x->type.shape[d];
    }
    if (!sym)
        return ps_b_scalar(b, (double)count, TJ_I64);
    ir_node *one = ps_b_scalar(b, 1, TJ_I64);
    return b_sum(b, b_where(b, x, one, one), dims, nd, keepdim);
}

/* True when a dim of x in mask is statically empty. */
static bool reduces_empty(const ir_node *x, uint32_t mask)
{
    for (int d = 0; d < x->type.ndim; d++)
        if ((mask & (1u << d)) && x->type.shape[d] == 0)
            return true;
    return false;
}

/* x unsqueezed at the end k times ([C] -> [C,1,1] for k = 2). */
static ir_node *trailing_ones(ps_builder *b, ir_node *x, int k)
{
    for (int j = 0; j < k && x; j++)
        x = ps_b_unsqueeze(b, x, -1);
    return x;
}

/* An op with one dim attribute (softmax, log_softmax, gather, ...). */
static ir_node *b_dim_op(ps_builder *b, ir_op op, ir_node *const *in, int nin, int64_t dim)
{
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_int(&at.a[0], dim);
    return ps_b_op(b, op, in, nin, &at);
}

/* ---- pointwise -------------------------------------------------------------------- */

/* square(x) = x * x */
static ir_node *ps_decomp_square(PS_DECOMP_ARGS) { return b_mul(b, in[0], in[0]); }

/* The f64 kernels of sigmoid and silu use exp(-x) (libm), the f32 ones
 * exp(-|x|) with a select, which never overflows; each decomposition mirrors
 * its kernel so the results agree bit for bit. */
static bool f64_formula(const ir_node *x) { return x && x->type.dtype == TJ_F64; }

/* sigmoid(x) = x < 0 ? e * s : s with e = exp(-|x|), s = 1 / (1 + e);
 * f64: 1 / (1 + exp(-x)) */
static ir_node *ps_decomp_sigmoid(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    if (f64_formula(x))
        return b_un(b, OP_reciprocal, b_add_s(b, b_exp(b, b_neg(b, x)), 1));
    ir_node *e = b_exp(b, b_neg(b, b_un(b, OP_abs, x)));
    ir_node *s = b_un(b, OP_reciprocal, b_add_s(b, e, 1));
    return b_where(b, b_lt_s(b, x, 0), b_mul(b, e, s), s);
}

/* relu(x) = x < 0 ? 0 : x (NaN and -0 pass through) */
static ir_node *ps_decomp_relu(PS_DECOMP_ARGS)
{
    return b_where_sx(b, b_lt_s(b, in[0], 0), 0, in[0]);
}

/* gelu(x) = x/2 * erfc(-x / sqrt(2)) */
static ir_node *ps_decomp_gelu(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    ir_node *c = b_un(b, OP_erfc, b_mul_s(b, x, -0.70710678118654752440));
    return b_mul(b, b_mul_s(b, x, 0.5), c);
}

/* gelu_tanh(x) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3) */
static ir_node *ps_decomp_gelu_tanh(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    ir_node *x3 = b_mul(b, b_mul(b, b_mul_s(b, x, 0.044715), x), x);
    ir_node *u = b_mul_s(b, b_add(b, x, x3), 0.79788456080286535588);
    return b_div(b, x, b_add_s(b, b_exp(b, b_mul_s(b, u, -2.0)), 1));
}

/* silu(x) = x < 0 ? e * s : s with e = exp(-|x|), s = x / (1 + e);
 * f64: x / (1 + exp(-x)) */
static ir_node *ps_decomp_silu(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    if (f64_formula(x))
        return b_div(b, x, b_add_s(b, b_exp(b, b_neg(b, x)), 1));
    ir_node *e = b_exp(b, b_neg(b, b_un(b, OP_abs, x)));
    ir_node *s = b_div(b, x, b_add_s(b, e, 1));
    return b_where(b, b_lt_s(b, x, 0), b_mul(b, e, s), s);
}

/* softplus(x) = xb > threshold ? x : log1p(exp(xb)) / beta, xb = x * beta
 * (beta 1 leaves out the product and the quotient, which change nothing) */
static ir_node *ps_decomp_softplus(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    double beta = a->a[0].f;
    ir_node *xb = beta == 1 ? x : b_mul_s(b, x, beta);
    ir_node *soft = b_un(b, OP_log1p, b_exp(b, xb));
    if (beta != 1)
        soft = b_bin_s(b, OP_div, soft, beta);
    return b_where(b, b_bin_s(b, OP_gt, xb, a->a[1].f), x, soft);
}

/* add_alpha(a, b) = a + b * alpha, sub_alpha(a, b) = a - b * alpha, both in
 * the result dtype dt (a and b cast to it; alpha a weak scalar of dt's
 * category, which the mul converts to dt as the eager kernel does);
 * bool: a + (b and alpha != 0). */
static ir_node *alpha_decomp(ps_builder *b, const ir_node *n, const ir_attrs *a,
                             ir_node *const *in, ir_op op)
{
    tj_dtype dt = n->type.dtype;
    ir_node *x = ps_b_cast(b, in[0], dt), *y = ps_b_cast(b, in[1], dt);
    double alpha = a->a[0].f;
    if (dt == TJ_BOOL)
        return b_bin(b, op, x, b_bin(b, OP_logical_and, y, ps_b_scalar(b, alpha != 0, TJ_BOOL)));
    tj_dtype st = ir_dtype_is_float(dt) ? TJ_F64 : TJ_I64;
    return b_bin(b, op, x, b_mul(b, y, ps_b_scalar(b, alpha, st)));
}

static ir_node *ps_decomp_add_alpha(PS_DECOMP_ARGS) { return alpha_decomp(b, n, a, in, OP_add); }
static ir_node *ps_decomp_sub_alpha(PS_DECOMP_ARGS) { return alpha_decomp(b, n, a, in, OP_sub); }

/* lerp(a, b, w) = w < 1/2 ? a + w (b - a) : b - (b - a)(1 - w), in the result dtype */
static ir_node *ps_decomp_lerp(PS_DECOMP_ARGS)
{
    tj_dtype dt = n->type.dtype;
    ir_node *x = ps_b_cast(b, in[0], dt), *y = ps_b_cast(b, in[1], dt);
    ir_node *w = ps_b_cast(b, in[2], dt), *d = b_sub(b, y, x);
    ir_node *lo = b_add(b, x, b_mul(b, w, d));
    ir_node *hi = b_sub(b, y, b_mul(b, d, b_rsub_s(b, 1, w)));
    return b_where(b, b_lt_s(b, w, 0.5), lo, hi);
}

/* clamp(x, lo, hi) = minimum(maximum(x, lo), hi) in the result dtype (a
 * float bound makes an integer x float: x is cast first); the bounds are
 * weak scalars of that dtype's category, an absent one (-inf, inf) left out. */
static ir_node *ps_decomp_clamp(PS_DECOMP_ARGS)
{
    tj_dtype dt = n->type.dtype;
    ir_node *x = ps_b_cast(b, in[0], dt);
    double lo = a->a[0].f, hi = a->a[1].f;
    tj_dtype bt = ir_dtype_is_float(dt) ? TJ_F64 : TJ_I64;
    if (lo != -INFINITY)
        x = b_bin(b, OP_maximum, x, ps_b_scalar(b, lo, bt));
    if (hi != INFINITY)
        x = b_bin(b, OP_minimum, x, ps_b_scalar(b, hi, bt));
    return x;
}

/* ---- reductions ------------------------------------------------------------------- */

/* mean(x, dims) = sum(x, dims) / count */
static ir_node *ps_decomp_mean(PS_DECOMP_ARGS)
{
    bool keep = a->a[1].i[0] != 0;
    uint32_t mask = ir_dims_of(&a->a[0], in[0]->type.ndim);
    ir_node *s = b_sum(b, in[0], a->a[0].i, a->a[0].n, keep);
    return b_div(b, s, count_of(b, in[0], mask, keep));
}

/* logsumexp(x, dims) = log(sum(exp(x - m))) + m, m = amax(x) (0 where infinite) */
static ir_node *ps_decomp_logsumexp(PS_DECOMP_ARGS)
{
    ir_node *x = ps_b_float(b, in[0]);
    const int64_t *dims = a->a[0].i;
    int nd = a->a[0].n;
    bool keep = a->a[1].i[0] != 0;
    uint32_t mask = ir_dims_of(&a->a[0], in[0]->type.ndim);
    if (reduces_empty(in[0], mask))   /* amax has no identity; the result is -inf */
        return b_add_s(b, b_sum(b, x, dims, nd, keep), -INFINITY);
    ir_node *m = b_amax(b, x, dims, nd, true);
    m = b_where_sx(b, b_un(b, OP_isinf, m), 0, m);
    ir_node *s = b_sum(b, b_exp(b, b_sub(b, x, m)), dims, nd, keep);
    return b_add(b, b_log(b, s), keep ? m : ps_b_squeeze(b, m, dims, nd));
}

/* std = sqrt(var) */
static ir_node *ps_decomp_std(PS_DECOMP_ARGS)
{
    return b_un(b, OP_sqrt, ps_b_var(b, in[0], a->a[0].i, a->a[0].n, a->a[1].i[0],
                                     a->a[2].i[0] != 0));
}

/* ---- contractions ------------------------------------------------------------------- */

/* linear(x, w, bias) = x @ w^T + bias */
static ir_node *ps_decomp_linear(PS_DECOMP_ARGS)
{
    ir_node *w = in[1]->type.ndim == 2 ? ps_b_transpose_last2(b, in[1]) : in[1];
    ir_node *y = b_matmul(b, in[0], w);
    return n->nin > 2 && in[2] ? b_add(b, y, in[2]) : y;
}

/* ---- normalizations ----------------------------------------------------------------- */

/* The normalized dim of softmax-like ops; -1 when that dim is empty. */
static int softmax_dim(const ir_node *x, const ir_attrs *a)
{
    int d = ir_norm_dim(a->a[0].i[0], x->type.ndim);
    return x->type.ndim > 0 && x->type.shape[d] == 0 ? -1 : d;
}

/* softmax(x, d) = e * (1 / sum(e, d)), e = exp(x - amax(x, d)): one division
 * per row, as the kernel does */
static ir_node *ps_decomp_softmax(PS_DECOMP_ARGS)
{
    int64_t d = softmax_dim(in[0], a);
    if (d < 0)
        return in[0];   /* empty along d: nothing to compute */
    ir_node *e = b_exp(b, b_sub(b, in[0], b_amax(b, in[0], &d, 1, true)));
    return b_mul(b, e, b_un(b, OP_reciprocal, b_sum(b, e, &d, 1, true)));
}

/* log_softmax(x, d) = (x - m) - log(sum(exp(x - m), d)), m = amax(x, d) */
static ir_node *ps_decomp_log_softmax(PS_DECOMP_ARGS)
{
    int64_t d = softmax_dim(in[0], a);
    if (d < 0)
        return in[0];
    ir_node *xm = b_sub(b, in[0], b_amax(b, in[0], &d, 1, true));
    return b_sub(b, xm, b_log(b, b_sum(b, b_exp(b, xm), &d, 1, true)));
}

/* layer_norm = (x - mean) * rsqrt(var + eps) * w + bias over the last ndims dims */
static ir_node *ps_decomp_layer_norm(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    int64_t dims[TJ_MAX_DIMS];
    int nd = tail_dims(x->type.ndim - (int)a->a[0].i[0], x->type.ndim, dims);
    ir_node *mu = b_mean(b, x, dims, nd, true);
    ir_node *r = b_un(b, OP_rsqrt, b_add_s(b, ps_b_var(b, x, dims, nd, 0, true), a->a[1].f));
    ir_node *y = b_mul(b, b_sub(b, x, mu), r);
    if (n->nin > 1 && in[1])
        y = b_mul(b, y, in[1]);
    if (n->nin > 2 && in[2])
        y = b_add(b, y, in[2]);
    return y;
}

/* rms_norm = x * rsqrt(mean(x^2) + eps) * w over the last ndims dims */
static ir_node *ps_decomp_rms_norm(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    int64_t dims[TJ_MAX_DIMS];
    int nd = tail_dims(x->type.ndim - (int)a->a[0].i[0], x->type.ndim, dims);
    ir_node *ms = b_mean(b, b_un(b, OP_square, x), dims, nd, true);
    ir_node *y = b_mul(b, x, b_un(b, OP_rsqrt, b_add_s(b, ms, a->a[1].f)));
    return n->nin > 1 && in[1] ? b_mul(b, y, in[1]) : y;
}

/* batch_norm (eval) = x * alpha + beta per channel (dim 1), with
 * alpha = w / sqrt(var + eps) and beta = bias - mean * alpha */
static ir_node *ps_decomp_batch_norm(PS_DECOMP_ARGS)
{
    ir_node *x = in[0], *mean = in[1], *var = in[2];
    ir_node *w = n->nin > 3 ? in[3] : NULL, *bias = n->nin > 4 ? in[4] : NULL;
    ir_node *sd = b_add_s(b, var, a->a[0].f);
    ir_node *alpha = w ? b_div(b, w, b_un(b, OP_sqrt, sd)) : b_un(b, OP_rsqrt, sd);
    ir_node *ma = b_mul(b, mean, alpha);
    ir_node *beta = bias ? b_sub(b, bias, ma) : b_neg(b, ma);
    int k = x->type.ndim - 2;   /* spatial dims after C */
    return b_add(b, b_mul(b, x, trailing_ones(b, alpha, k)), trailing_ones(b, beta, k));
}

/* ---- neural-network ops ------------------------------------------------------------ */

/* embedding(w, idx) = index_select(w, 0, idx) over the flattened indices */
static ir_node *ps_decomp_embedding(PS_DECOMP_ARGS)
{
    ir_node *w = in[0], *idx = in[1];
    int k = idx->type.ndim;
    if (k == 1)
        return b_dim_op(b, OP_index_select, (ir_node *[]){w, idx}, 2, 0);
    if (k == 0)
        return ps_b_squeeze(b, b_dim_op(b, OP_index_select, (ir_node *[]){w, idx}, 2, 0),
                            (int64_t[]){0}, 1);
    if (ir_type_has_sym(&idx->type))
        return ps_b_fail(b, "indices with %d dims and a symbolic dim cannot be flattened "
                            "(the shape rules cannot compute a symbolic size yet)", k);
    int64_t shape[TJ_MAX_DIMS];
    memcpy(shape, idx->type.shape, (size_t)k * sizeof *shape);
    shape[k] = IR_IS_SYM(w->type.shape[1]) ? -1 : w->type.shape[1];
    ir_node *flat = ps_b_reshape(b, idx, (int64_t[]){-1}, 1);
    ir_node *rows = b_dim_op(b, OP_index_select, (ir_node *[]){w, flat}, 2, 0);
    return ps_b_reshape(b, rows, shape, k + 1);
}

/* dropout(x) = rand(seed, offset) >= p ? x / (1 - p) : 0, the draw of the eager kernel */
static ir_node *ps_decomp_dropout(PS_DECOMP_ARGS)
{
    ir_node *x = in[0];
    double p = a->a[0].f;
    if (p == 0)
        return x;
    if (ir_type_has_sym(&x->type))
        return ps_b_fail(b, "the random mask needs a static shape");
    ir_attrs at;
    memset(&at, 0, sizeof at);
    ir_attr_ints(&at.a[0], x->type.shape, x->type.ndim);
    ir_attr_int(&at.a[1], x->type.dtype);
    ir_attr_int(&at.a[2], a->a[1].i[0]);
    ir_attr_int(&at.a[3], a->a[2].i[0]);
    ir_node *u = ps_b_op(b, OP_rand, NULL, 0, &at);
    ir_node *keep = b_bin_s(b, OP_ge, u, p);
    return b_where_xs(b, keep, b_mul_s(b, x, p < 1 ? 1.0 / (1.0 - p) : 0.0), 0);
}

/* sdpa(q, k, v, mask) = softmax(q @ k^T * scale, masked) @ v */
static ir_node *ps_decomp_sdpa(PS_DECOMP_ARGS)
{
    ir_node *q = in[0], *k = in[1], *v = in[2], *mask = n->nin > 3 ? in[3] : NULL;
    int64_t e = q->type.shape[q->type.ndim - 1];
    ir_node *s = b_matmul(b, q, ps_b_transpose_last2(b, k));
    if (a->a[1].f > 0)
        s = b_mul_s(b, s, a->a[1].f);
    else if (!IR_IS_SYM(e))
        s = b_mul_s(b, s, 1.0 / sqrt((double)e));
    else   /* 1/sqrt(E) of a symbolic E, counted in the graph */
        s = b_mul(b, s, b_un(b, OP_rsqrt, ps_b_cast(b, count_of(b, q, 1u << (q->type.ndim - 1),
                                                                 true), q->type.dtype)));
    if (mask && mask->type.dtype == TJ_BOOL)
        s = b_where_xs(b, mask, s, -INFINITY);
    else if (mask)
        s = b_add(b, s, mask);
    if (a->a[0].i[0]) {
        ir_node *vis = b_bin(b, OP_ge, ps_b_unsqueeze(b, ps_b_arange_of(b, q, q->type.ndim - 2), 1),
                             ps_b_arange_of(b, k, k->type.ndim - 2));
        s = b_where_xs(b, vis, s, -INFINITY);
    }
    return b_matmul(b, b_dim_op(b, OP_softmax, &s, 1, -1), v);
}

/* The mean, sum or per-row values of a loss (dims: the batch shape). den
 * NULL: the mean divides by the row count. */
static ir_node *ce_reduce(ps_builder *b, ir_node *loss, ir_node *den, int64_t red)
{
    if (red == TJ_REDUCTION_NONE)
        return loss;
    ir_node *s = b_sum(b, loss, NULL, 0, false);
    if (red == TJ_REDUCTION_SUM)
        return s;
    if (!loss)
        return NULL;
    return b_div(b, s, den ? den : count_of(b, loss, (1u << loss->type.ndim) - 1, false));
}

/* cross_entropy(x, t, w?) with ls = log_softmax(x, cd), cd the class dim,
 * e the label smoothing, w broadcast along cd (k_loss.c's formulas):
 *   probabilities  loss = -sum(ls * q * w, cd), q = t (1 - e) + e / C; mean / rows
 *   indices        valid = t != ignore, i = where(valid, t, 0), ls_t = gather(ls, cd, i),
 *                  w_t = sum(where(i == arange(C), w, 0), cd),
 *                  loss = where(valid, -(1 - e) w_t ls_t - e / C sum(w * ls, cd), 0);
 *                  mean / sum(where(valid, w_t, 0)) */
static ir_node *ce_indices(ps_builder *b, const ir_node *n, ir_node *ls, ir_node *t, ir_node *wb,
                           int64_t red, int64_t ignore, double e);

static ir_node *ps_decomp_cross_entropy(PS_DECOMP_ARGS)
{
    ir_node *x = in[0], *t = in[1], *w = n->nin > 2 ? in[2] : NULL;
    int nd = x->type.ndim;
    int64_t cd = nd == 1 ? 0 : 1, ncls = x->type.shape[cd], red = a->a[0].i[0];
    double e = a->a[2].f > 0 ? a->a[2].f : 0;
    if (e > 0 && IR_IS_SYM(ncls))
        return ps_b_fail(b, "label smoothing needs a static class count");
    ir_node *ls = b_dim_op(b, OP_log_softmax, &x, 1, cd);
    ir_node *wb = w ? trailing_ones(b, w, nd - 1 - (int)cd) : NULL;   /* [C, 1, ...] */
    if (ir_dtype_is_float(t->type.dtype)) {
        ir_node *q = e > 0 ? b_add_s(b, b_mul_s(b, t, 1 - e), e / (double)ncls) : t;
        ir_node *p = b_mul(b, ls, q);
        return ce_reduce(b, b_neg(b, b_sum(b, wb ? b_mul(b, p, wb) : p, &cd, 1, false)), NULL, red);
    }
    return ce_indices(b, n, ls, t, wb, red, a->a[1].i[0], e);
}

/* The class-index branch of cross_entropy on log-probabilities ls (also
 * nll_loss's decomposition, e = 0): wb the weights shaped [C, 1, ...]. */
static ir_node *ce_indices(ps_builder *b, const ir_node *n, ir_node *ls, ir_node *t, ir_node *wb,
                           int64_t red, int64_t ignore, double e)
{
    int nd = ls ? ls->type.ndim : 0;
    int64_t cd = nd == 1 ? 0 : 1, ncls = ls ? ls->type.shape[cd] : 0;
    ir_node *t64 = ps_b_cast(b, t, TJ_I64);
    ir_node *valid = b_bin_s(b, OP_ne, t64, (double)ignore);
    ir_node *idx = ps_b_unsqueeze(b, b_where_xs(b, valid, t64, 0), cd);
    ir_node *nll = b_neg(b, ps_b_squeeze(b, b_dim_op(b, OP_gather, (ir_node *[]){ls, idx}, 2, cd), &cd, 1));
    ir_node *wt = NULL;
    if (wb) {   /* w_t = sum(where(one_hot(t), w, 0), cd): any batch shape, symbolic too */
        if (IR_IS_SYM(ncls))
            return ps_b_fail(b, "class weights need a static class count");
        ir_node *hot = b_bin(b, OP_eq, idx,
                             trailing_ones(b, ps_b_arange(b, ncls, TJ_I64), nd - 1 - (int)cd));
        wt = b_sum(b, b_where_xs(b, hot, wb, 0), &cd, 1, false);
        nll = b_mul(b, nll, wt);
    }
    if (e > 0) {
        ir_node *smooth = b_neg(b, b_sum(b, wb ? b_mul(b, ls, wb) : ls, &cd, 1, false));
        nll = b_add(b, b_mul_s(b, nll, 1 - e), b_mul_s(b, smooth, e / (double)ncls));
    }
    ir_node *loss = b_where_xs(b, valid, nll, 0);
    ir_node *den = red != TJ_REDUCTION_MEAN ? NULL
                   : wt ? b_sum(b, b_where_xs(b, valid, wt, 0), NULL, 0, false)
                        : b_sum(b, ps_b_cast(b, valid, n->type.dtype), NULL, 0, false);
    return ce_reduce(b, loss, den, red);
}

/* nll_loss (nn and linalg, a DCOMP row): cross_entropy's class-index branch
 * on the given log-probabilities, without smoothing. */
ir_node *ps_decomp_nll_loss(PS_DECOMP_ARGS)
{
    ir_node *x = in[0], *w = n->nin > 2 ? in[2] : NULL;
    int nd = x->type.ndim;
    ir_node *wb = w ? trailing_ones(b, w, nd - 1 - (nd == 1 ? 0 : 1)) : NULL;
    return ce_indices(b, n, x, in[1], wb, a->a[0].i[0], a->a[1].i[0], 0);
}

/* ---- the pass ------------------------------------------------------------------------ */

static const decomp_fn decomps[IR_NUM_OPS] = {
#undef DECOMP_DCOMP
#define DECOMP_COMP(name) [OP_##name] = ps_decomp_##name,
#define DECOMP_DCOMP DECOMP_COMP
#define OP(name, kind, nmin, nmax, decomp, attrs) DECOMP_##decomp(name)
#define UNARY(name, rule, decomp, f32, f64, i) DECOMP_##decomp(name)
#define BINARY(name, rule, decomp, f32, f64, i) DECOMP_##decomp(name)
#include "../ir/ops.def"
#undef DECOMP_COMP
};

bool ps_has_decomposition(ir_op op) { return (unsigned)op < IR_NUM_OPS && decomps[op]; }

/* Composites the code generator keeps whole: their eager kernel beats what
 * fusing their decomposition gives (a scheduling choice, not op semantics, so
 * it lives here and not in ops.def). */
static const struct {
    ir_op op;
    const char *why;
} kept_for_codegen[] = {
    {OP_sdpa, "blocked kernel: scores stay in cache, masked blocks are skipped"},
};

/* Whether op stays whole under `keep` (NULL keeps nothing). */
static bool kept(ir_op op, const bool *keep) { return !ir_ops[op].prim && keep && keep[op]; }

/* For code generation, linear with an f16/bf16 input stays whole: an eager
 * call to runtime/k_matmul.c's rt_k_linear_half, where native bf16 GEMMs
 * hook in (matmul + bias in f32, rounded once, as eager). */
static bool kept_node(const ir_node *n, const void *keep)
{
    if (!keep || n->op != OP_linear)
        return false;
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] && ir_dtype_is_half(n->in[j]->type.dtype))
            return true;
    return false;
}

/* A composite with f16 or bf16 inputs computes in f32, as its eager kernel
 * does (runtime/k_half.c) and PrimTorch's references do: its half inputs are
 * cast to f32 here and its result back (below), so it is rounded once, not
 * after every prim. Returns in, or wide holding the cast inputs. */
static ir_node *const *widen_half(ps_builder *b, const ir_node *n, ir_node *const *in, ir_node **wide)
{
    bool any = false;
    for (int j = 0; j < n->nin && j < MAX_WIDE; j++)
        any = any || (in[j] && ir_dtype_is_half(in[j]->type.dtype));
    if (!any || n->nin > MAX_WIDE)
        return in;
    for (int j = 0; j < n->nin; j++)
        wide[j] = in[j] && ir_dtype_is_half(in[j]->type.dtype) ? ps_b_cast(b, in[j], TJ_F32) : in[j];
    return wide;
}

/* n's decomposition on in (its inputs in the graph being built). */
static ir_node *decompose_as(ps_builder *b, const ir_node *n, ir_node *const *in, const ir_attrs *attrs)
{
    ir_attrs a = *attrs;
    ir_node *wide[MAX_WIDE];
    ir_node *const *w = widen_half(b, n, in, wide);
    /* Widened, the decomposition sees an f32 result type too (the dtype most
     * compute in, e.g. the elementwise rows of decompose_pw.c), so no prim
     * rounds to f16/bf16 before the final cast below. */
    ir_node wn = *n;
    if (w != in && ir_dtype_is_half(n->type.dtype))
        wn.type.dtype = TJ_F32;
    ir_node *r = decomps[n->op](b, &wn, &a, w);
    if (!r || ir_type_same(&r->type, &n->type))
        return r;
    if (ir_shape_equal(&r->type, &n->type))   /* e.g. a weak result, or a dtype the prims promote differently */
        return ps_b_cast(b, r, n->type.dtype);
    char t1[IR_TYPE_BUF], t2[IR_TYPE_BUF];
    return ps_b_fail(b, "the decomposition gave %s instead of %s",
                     ir_type_fmt(&r->type, t1, sizeof t1), ir_type_fmt(&n->type, t2, sizeof t2));
}

/* What a round of decompose() keeps and what it did. */
typedef struct decomp_ctx {
    const bool *keep;   /* ops kept whole (NULL: none; code generation: the list above) */
    int decomposed;     /* composites this round decomposed */
} decomp_ctx;

static bool has_sym(const ir_node *n)
{
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] && ir_type_has_sym(&n->in[k]->type))
            return true;
    return ir_type_has_sym(&n->type);
}

static ir_node *decompose_node(ps_builder *b, const ir_node *n, ir_node *const *in, void *ctx)
{
    decomp_ctx *dc = ctx;
    ir_attrs a;
    ir_node_attrs(n, &a);
    if (ir_ops[n->op].prim || kept(n->op, dc->keep) || kept_node(n, dc->keep))
        return ps_b_op(b, n->op, in, n->nin, &a);
    ir_node *r = decompose_as(b, n, in, &a);
    if (!r && dc->keep && !ir_ops[n->op].eager_decomp && has_sym(n)) {
        /* For code generation, a composite with an eager kernel whose
         * decomposition cannot follow symbolic dims (a mask over them,
         * indices that would flatten to a product of sizes) stays whole:
         * an eager call of the plan, the rest of the graph compiled. */
        ps_b_clear(b);
        return ps_b_op(b, n->op, in, n->nin, &a);
    }
    dc->decomposed += r != NULL;
    return r;
}

/* The first composite of g that is not kept whole. */
static const ir_node *first_composite(const ir_graph *g, const bool *keep)
{
    for (int k = 0; k < g->nnodes; k++)
        if (!ir_ops[g->nodes[k]->op].prim && !kept(g->nodes[k]->op, keep) && !kept_node(g->nodes[k], keep))
            return g->nodes[k];
    return NULL;
}

static ir_graph *decompose(ir_graph *g, const bool *keep, char *err, size_t nerr);

ir_graph *ps_decompose(ir_graph *g, char *err, size_t nerr) { return decompose(g, NULL, err, nerr); }

ir_graph *ps_decompose_codegen(ir_graph *g, char *err, size_t nerr)
{
    bool keep[IR_NUM_OPS] = {0};
    for (size_t k = 0; k < sizeof kept_for_codegen / sizeof *kept_for_codegen; k++)
        keep[kept_for_codegen[k].op] = true;
    /* Composite UNARY/BINARY rows (sigmoid, gelu, silu, ...) have a formula
     * column the JIT inlines: kernels call it, so compiled and eager run the
     * one formula instead of a decomposition that restates it. */
    for (int op = 0; op < IR_NUM_OPS; op++)
        if (ir_ops[op].kind == IR_UNARY || ir_ops[op].kind == IR_BINARY)
            keep[op] = true;
    return decompose(g, keep, err, nerr);
}

ir_graph *ps_decompose_one(ir_op op, const ir_type *const *in, int nin, const ir_attrs *a,
                           char *err, size_t nerr)
{
    ir_graph *g = ir_graph_new(ir_ops[op].name);
    ir_node *args[IR_MAX_DECOMP_IN], *n = NULL;
    if (!g || nin > IR_MAX_DECOMP_IN) {
        snprintf(err, nerr, "%s", g ? "too many inputs" : "out of memory");
        ir_graph_free(g);
        return NULL;
    }
    bool ok = true;
    for (int k = 0; k < nin && ok; k++)
        ok = !in[k] || (args[k] = ir_graph_input(g, NULL, in[k], false)) != NULL;
    for (int k = 0; k < nin; k++)
        if (!in[k])
            args[k] = NULL;
    if (ok)
        n = ir_graph_add(g, op, args, nin, a);
    if (!n || ir_graph_set_outputs(g, &n, 1) != 0) {
        snprintf(err, nerr, "%s", ir_graph_error(g));
        ir_graph_free(g);
        return NULL;
    }
    ir_graph *d = decompose(g, NULL, err, nerr);
    if (d != g)
        ir_graph_free(g);
    return d;
}

static ir_graph *decompose(ir_graph *g, const bool *keep, char *err, size_t nerr)
{
    ir_graph *cur = g;
    for (int round = 0;; round++) {
        const ir_node *c = first_composite(cur, keep);
        if (!c)
            return cur;
        if (round == MAX_ROUNDS) {
            snprintf(err, nerr, "%s still present after %d rounds (decompositions that loop?)",
                     ir_ops[c->op].name, MAX_ROUNDS);
            break;
        }
        decomp_ctx dc = {keep, 0};
        ir_graph *next = ps_rebuild(cur, NULL, decompose_node, &dc, err, nerr);
        if (cur != g)
            ir_graph_free(cur);
        if (!next)
            return NULL;
        cur = next;
        if (!dc.decomposed)   /* what is left stays whole (decompose_node) */
            return cur;
    }
    if (cur != g)
        ir_graph_free(cur);
    return NULL;
}

bool ps_decomp_views_input(const ir_graph *g, const ir_node **chain, int max, int *nc)
{
    *nc = 0;
    const ir_node *r = g->noutputs ? ir_view_chain(g->outputs[0], chain, max, nc) : NULL;
    return r && ir_node_is_input(r) && r->id == 0 && *nc < max && !ir_view_chain_expands(g->outputs[0]);
}
