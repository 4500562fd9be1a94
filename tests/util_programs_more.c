/* util_programs_more.c - the random programs' third step family (after the
 * first kinds and the wider set of tests/util_programs.c): the ops of the
 * table no earlier family drew. More pointwise formulas (inverse and
 * hyperbolic trigonometry, logs and exps of other bases, rounding, shrinks
 * and other activations, special functions on domains where they are well
 * conditioned), binary forms with rounding modes and alphas, 1-D and 3-D
 * pools, adaptive pools, 1-D and transposed convolutions, batched and
 * vector products, distances, losses, index writes (scatter with each
 * reduction, index_put, index_copy, index_fill, take), searches, sorting
 * with indices, running minima, shape ops (pixel shuffles, movedim,
 * unflatten, stacks, diagonals, glu, prelu, cross) and small linear algebra
 * (det, inv, solve on matrices made well conditioned). Every index and
 * constant is drawn from the generator, so eager and compiled read the
 * same; where an op's result depends on the order of writes (scatter,
 * index_put and index_copy without accumulation), the indices along the
 * written dim are distinct.
 */
#include <math.h>
#include <stdint.h>

#include "util_programs.h"

/* An i64 tensor of shape (rank nd) whose values along dim d are distinct,
 * in [0, n) (shape[d] <= n): (j + an offset drawn per line) mod n. */
static tj_tensor *distinct_along(gen *g, int nd, const int64_t *shape, int d, int64_t n)
{
    static const int64_t none = 0;
    int64_t total = 1, inner = 1;
    for (int i = 0; i < nd; i++)
        total *= shape[i];
    for (int i = d + 1; i < nd; i++)
        inner *= shape[i];
    if (total > MAX_NUMEL || n <= 0)
        return NULL;
    int64_t idx[MAX_NUMEL], off[MAX_NUMEL];
    for (int64_t i = 0; i < total; i++)
        off[i] = rnd(g, (int)n);
    for (int64_t i = 0; i < total; i++) {
        int64_t j = nd ? i / inner % shape[d] : 0, line = i % inner + i / (inner * (nd ? shape[d] : 1)) * inner;
        idx[i] = (j + off[line]) % n;
    }
    return tj_from_data(TJ_I64, nd, nd ? shape : &none, idx);
}

/* A constant tensor of shape in dt, values uniform in [-s, s]. */
static tj_tensor *consts(gen *g, tj_dtype dt, int nd, const int64_t *shape, double s)
{
    int64_t total = 1;
    for (int i = 0; i < nd; i++)
        total *= shape[i];
    if (total > MAX_NUMEL)
        return NULL;
    double v[MAX_NUMEL];
    for (int64_t i = 0; i < total; i++)
        v[i] = s * (rnd(g, 2001) - 1000) / 1000.0;
    return tj_cast(tj_from_data(TJ_F64, nd, shape, v), dt);
}

tj_tensor *tu_program_unary_more(gen *g, tj_tensor *a, bool exact)
{
    if (exact) {
        switch (rnd(g, 4)) {
        case 0: note(g, "relu6"); return tj_relu6(num(a));
        case 1: note(g, "threshold(a, 1, -4)"); return tj_threshold(num(a), 1, -4);
        case 2: note(g, "clamp_min -2"); return tj_clamp_min(num(a), -2);
        default: note(g, "clamp_max 3"); return tj_clamp_max(num(a), 3);
        }
    }
    tj_tensor *x = flt(a);
    switch (rnd(g, 36)) {
    case 0: note(g, "acos(clamp .9)"); return tj_acos(tj_clamp(x, -0.9, 0.9));
    case 1: note(g, "asin(clamp .9)"); return tj_asin(tj_clamp(x, -0.9, 0.9));
    case 2: note(g, "cos"); return tj_cos(x);
    case 3: note(g, "cosh(clamp 8)"); return tj_cosh(tj_clamp(x, -8, 8));
    case 4: note(g, "sinh(clamp 8)"); return tj_sinh(tj_clamp(x, -8, 8));
    case 5: note(g, "tan(clamp 1.2)"); return tj_tan(tj_clamp(x, -1.2, 1.2));
    case 6: note(g, "log1p|a|"); return tj_log1p(tj_abs(x));
    case 7: note(g, "log2(|a|+0.5)"); return tj_log2(tj_add_s(tj_abs(x), 0.5));
    case 8: note(g, "log10(|a|+0.5)"); return tj_log10(tj_add_s(tj_abs(x), 0.5));
    case 9: note(g, "exp2(clamp 20)"); return tj_exp2(tj_clamp(x, -20, 20));
    case 10: note(g, "erfc"); return tj_erfc(x);
    case 11: note(g, "ceil"); return tj_ceil(x);
    case 12: note(g, "round"); return tj_round(x);
    case 13: note(g, "trunc"); return tj_trunc(x);
    case 14: note(g, "frac"); return tj_frac(x);
    case 15: note(g, "reciprocal(|a|+0.5)"); return tj_reciprocal(tj_add_s(tj_abs(x), 0.5));
    case 16: note(g, "cbrt"); return tj_cbrt(x);
    case 17: note(g, "logit(sigmoid(clamp 5))"); return tj_logit(tj_sigmoid(tj_clamp(x, -5, 5)), -1);
    case 18: note(g, "logsigmoid"); return tj_logsigmoid(x);
    case 19: note(g, "softsign"); return tj_softsign(x);
    case 20: note(g, "selu"); return tj_selu(x);
    case 21: note(g, "celu 0.7"); return tj_celu(x, 0.7);
    case 22: note(g, "elu 1.3"); return tj_elu(x, 1.3);
    case 23: note(g, "relu6(3a)"); return tj_relu6(tj_mul_s(x, 3));
    case 24: note(g, "hardsigmoid"); return tj_hardsigmoid(x);
    case 25: note(g, "hardshrink 0.5"); return tj_hardshrink(x, 0.5);
    case 26: note(g, "softshrink 0.5"); return tj_softshrink(x, 0.5);
    case 27: note(g, "tanhshrink"); return tj_tanhshrink(x);
    case 28: note(g, "sinc"); return tj_sinc(x);
    case 29: /* off 0, where a rounding-level zero would flip it (docs/testing.md) */
        note(g, "isfinite(1/(a-0.25)) | signbit(a-0.25)");
        x = tj_sub_s(x, 0.25);
        return tj_logical_or(tj_isfinite(tj_reciprocal(x)), tj_signbit(x));
    case 30: note(g, "i0e"); return tj_i0e(x);
    case 31: note(g, "asinh"); return tj_asinh(x);
    case 32: note(g, "acosh(|a|+1.1)"); return tj_acosh(tj_add_s(tj_abs(x), 1.1));
    case 33: note(g, "atanh(clamp .8)"); return tj_atanh(tj_clamp(x, -0.8, 0.8));
    case 34: note(g, "erfinv(clamp .8)"); return tj_erfinv(tj_clamp(x, -0.8, 0.8));
    default: note(g, "lgamma(|a|+0.5)"); return tj_lgamma(tj_add_s(tj_abs(x), 0.5));
    }
}

static tj_tensor *binary_more(gen *g, tj_tensor *a, tj_tensor *b, bool exact)
{
    if (exact) {
        switch (rnd(g, 3)) {
        case 0: note(g, "div_ex floor (|b|+1)"); return tj_div_ex(num(a), tj_add_s(tj_abs(num(b)), 1), TJ_ROUNDING_FLOOR);
        case 1: note(g, "div_ex trunc (|b|+1)"); return tj_div_ex(num(a), tj_add_s(tj_abs(num(b)), 1), TJ_ROUNDING_TRUNC);
        default: note(g, "sub_ex alpha 2"); return tj_sub_ex(num(a), num(b), 2);
        }
    }
    tj_tensor *x = flt(a), *y = tj_cast(flt(b), tj_dtype_of(x));
    switch (rnd(g, 9)) {
    case 0: note(g, "float_power(|a|+0.1, clamp b)"); return tj_float_power(tj_add_s(tj_abs(x), 0.1), tj_clamp(y, -2, 2));
    case 1: note(g, "logaddexp2"); return tj_logaddexp2(x, y);
    case 2: note(g, "div_ex floor (|b|+0.5)"); return tj_div_ex(x, tj_add_s(tj_abs(y), 0.5), TJ_ROUNDING_FLOOR);
    case 3: note(g, "true_divide (|b|+0.5)"); return tj_true_divide(x, tj_add_s(tj_abs(y), 0.5));
    case 4: note(g, "sub_ex alpha 0.5"); return tj_sub_ex(x, y, 0.5);
    case 5: note(g, "lerp(a, b, sigmoid b)"); return tj_lerp(x, y, tj_sigmoid(y));
    case 6: note(g, "where_xs(b>0.25, a, -1.5)"); return tj_where_xs(tj_gt_s(y, 0.25), x, -1.5);
    case 7: note(g, "heaviside(a-0.25, b)"); return tj_heaviside(tj_sub_s(x, 0.25), y);
    default:
        if (tj_ndim(x)) {
            note(g, "cosine_similarity last");
            return tj_cosine_similarity(x, y, -1, 1e-8);
        }
        note(g, "hypot-like sqrt(a^2 + b^2)");
        return tj_sqrt(tj_add(tj_square(x), tj_square(y)));
    }
}

/* Pools and convolutions over 3-D [N, C, L] and 4-D [N, C, H, W] values. */
static tj_tensor *windows(gen *g, tj_tensor *a)
{
    tj_tensor *x = flt(a);
    int nd = tj_ndim(x);
    int64_t c = tj_size(x, 1), l = tj_size(x, -1);
    if (nd == 3 && l >= 3) {
        switch (rnd(g, 4)) {
        case 0: {
            bool cip = rnd(g, 2), ceil = rnd(g, 2);
            note(g, "avg_pool1d 3 stride 2 pad 1 include_pad %d ceil %d", cip, ceil);
            return tj_avg_pool1d(x, 3, 2, 1, cip, ceil);
        }
        case 1: {
            int64_t dil = 1 + (l >= 5 && rnd(g, 2));
            note(g, "max_pool1d 2 stride 1 dilation %lld", (long long)dil);
            return tj_max_pool1d(x, 2, 1, 0, dil, false);
        }
        case 2:
            if (c <= 16) {
                int64_t co = 1 + rnd(g, 4), st = 1 + rnd(g, 2);
                note(g, "conv1d 3 %lld->%lld stride %lld pad 1 bias", (long long)c, (long long)co, (long long)st);
                return tj_conv1d(x, consts(g, tj_dtype_of(x), 3, (int64_t[]){co, c, 3}, 0.4),
                                 consts(g, tj_dtype_of(x), 1, (int64_t[]){co}, 0.2), st, 1, 1, 1);
            }
            break;
        default:
            if (c <= 16 && tj_numel(x) * 3 <= MAX_NUMEL) {
                int64_t co = 1 + rnd(g, 3);
                note(g, "conv_transpose1d 3 %lld->%lld stride 2 pad 1", (long long)c, (long long)co);
                return tj_conv_transpose1d(x, consts(g, tj_dtype_of(x), 3, (int64_t[]){c, co, 3}, 0.4), NULL, 2, 1,
                                           1, 1, 1);
            }
            break;
        }
        note(g, "adaptive_avg_pool1d 2");
        return tj_adaptive_avg_pool1d(x, 2);
    }
    if (nd == 4 && tj_size(x, 2) >= 2 && l >= 2) {
        switch (rnd(g, 4)) {
        case 0: note(g, "adaptive_avg_pool2d 3x2"); return tj_adaptive_avg_pool2d(x, 3, 2);
        case 1: note(g, "adaptive_max_pool2d 2x3"); return tj_adaptive_max_pool2d(x, 2, 3);
        case 2:
            if (c <= 16 && tj_numel(x) * 4 <= MAX_NUMEL) {
                int64_t co = 1 + rnd(g, 3);
                note(g, "conv_transpose2d 2x2 %lld->%lld stride 2", (long long)c, (long long)co);
                return tj_conv_transpose2d(x, consts(g, tj_dtype_of(x), 4, (int64_t[]){c, co, 2, 2}, 0.5),
                                           consts(g, tj_dtype_of(x), 1, (int64_t[]){co}, 0.2), (int64_t[]){2, 2},
                                           (int64_t[]){0, 0}, (int64_t[]){0, 0}, 1, (int64_t[]){1, 1});
            }
            break;
        default: {
            tj_tensor *v = tj_unsqueeze(x, 2);   /* [N, C, 1, H, W] */
            bool mx = rnd(g, 2);
            note(g, "%s_pool3d 1x2x2 on [N,C,1,H,W]", mx ? "max" : "avg");
            const int64_t k[3] = {1, 2, 2}, s[3] = {1, 2, 1}, p[3] = {0, 0, 0}, dl[3] = {1, 1, 1};
            return tj_squeeze(mx ? tj_max_pool3d(v, k, s, p, dl, false) : tj_avg_pool3d(v, k, s, p, false, true),
                              (int[]){2}, 1);
        }
        }
        note(g, "local_response_norm 3");
        return tj_local_response_norm(x, 3, 1e-2, 0.75, 1.0);
    }
    note(g, "softsign");
    return tj_softsign(x);
}

/* Products and distances (the last dim at most 64). */
static tj_tensor *products(gen *g, tj_tensor *a, tj_tensor *b)
{
    tj_tensor *x = flt(a);
    int nd = tj_ndim(x);
    tj_tensor *y = tj_cast(tj_broadcast_to(flt(b), nd, tj_shape(x)), tj_dtype_of(x));
    int64_t k = nd ? tj_size(x, -1) : 1, rows = k ? tj_numel(x) / k : 0;
    bool square_fits = rows * rows <= 4 * MAX_NUMEL;
    switch (rnd(g, 7)) {
    case 0:
        if (nd == 3 && square_fits) {
            note(g, "baddbmm(a a^T, a, b^T, 0.5, 2)");
            tj_tensor *xt = tj_transpose(x, 1, 2);
            return tj_baddbmm(tj_bmm(x, xt), x, tj_transpose(y, 1, 2), 0.5, 2);
        }
        if (nd == 2 && square_fits) {
            note(g, "addmm(a a^T, a, b^T, 1, -1)");
            return tj_addmm(tj_matmul(x, tj_transpose(x, 0, 1)), x, tj_transpose(y, 0, 1), 1, -1);
        }
        break;
    case 1:
        if (nd == 2) {
            note(g, "mv(a, b[0])");
            return tj_mv(x, tj_squeeze(tj_narrow(y, 0, 0, 1), (int[]){0}, 1));
        }
        break;
    case 2:
        note(g, "dot(flat a, flat b)");
        return tj_dot(tj_flatten(x, 0, -1), tj_flatten(y, 0, -1));
    case 3:
        if (tj_numel(x) <= 64) {
            note(g, "outer(flat a, flat a)");
            tj_tensor *f = tj_flatten(x, 0, -1);
            return tj_outer(f, f);
        }
        break;
    case 4:
        if (nd >= 2 && square_fits) {
            note(g, "tensordot(a, b, last with last)");
            return tj_tensordot(x, y, (int[]){nd - 1}, (int[]){nd - 1}, 1);
        }
        break;
    case 5:
        if ((nd == 2 || nd == 3) && square_fits) {
            double p = (double[]){2, 1}[rnd(g, 2)];
            note(g, "cdist(a, b) p %g", p);
            return tj_cdist(x, y, p);
        }
        break;
    default:
        if (nd && k == 3) {
            note(g, "cross last");
            return tj_cross(x, y, -1);
        }
        if (nd) {
            note(g, "pairwise_distance(a, b)");
            return tj_pairwise_distance(x, y, 2, 1e-6, rnd(g, 2));
        }
        break;
    }
    note(g, "mul(a, b)");
    return tj_mul(x, y);
}

/* Losses of a against a target made from b; class indices are constants. */
static tj_tensor *losses(gen *g, tj_tensor *a, tj_tensor *b)
{
    tj_tensor *x = flt(a);
    int nd = tj_ndim(x);
    tj_tensor *y = tj_cast(tj_broadcast_to(flt(b), nd, tj_shape(x)), tj_dtype_of(x));
    tj_reduction red = (tj_reduction)rnd(g, 3);
    switch (rnd(g, 8)) {
    case 0: note(g, "mse_loss red %d", red); return tj_mse_loss(x, y, red);
    case 1: note(g, "l1_loss red %d", red); return tj_l1_loss(x, y, red);
    case 2: note(g, "smooth_l1_loss beta 0.5 red %d", red); return tj_smooth_l1_loss(x, y, red, 0.5);
    case 3: note(g, "huber_loss delta 0.7 red %d", red); return tj_huber_loss(x, y, red, 0.7);
    case 4:
        if (nd) {
            note(g, "kl_div(log_softmax a, softmax b) red %d", red);
            return tj_kl_div(tj_log_softmax(x, -1), tj_softmax(y, -1), red, false);
        }
        break;
    case 5: note(g, "bce_with_logits(a, sigmoid b) red %d", red);
        return tj_binary_cross_entropy_with_logits(x, tj_sigmoid(y), NULL, NULL, red);
    case 6: note(g, "bce(sigmoid a, sigmoid b) red %d", red);
        return tj_binary_cross_entropy(tj_sigmoid(tj_clamp(x, -8, 8)), tj_sigmoid(y), NULL, red);
    default:
        if (nd == 2 && tj_size(x, 0) > 0 && tj_size(x, 1) > 0) {
            int64_t n = tj_size(x, 0), c = tj_size(x, 1);
            tj_tensor *t = tu_program_indices(g, 1, &n, c);
            if (rnd(g, 2)) {
                note(g, "cross_entropy [%lld,%lld]", (long long)n, (long long)c);
                return tj_cross_entropy(x, t);
            }
            note(g, "nll_loss(log_softmax a) red %d", red);
            return tj_nll_loss(tj_log_softmax(x, 1), t, NULL, red, TJ_IGNORE_INDEX_DEFAULT);
        }
        break;
    }
    note(g, "mse_loss mean");
    return tj_mse_loss(x, y, TJ_REDUCTION_MEAN);
}

/* Index writes along dim d of a (size n > 0); b broadcasts to a's shape. */
static tj_tensor *writes(gen *g, tj_tensor *a, tj_tensor *b, int d, int64_t n)
{
    int nd = tj_ndim(a);
    int64_t shape[8];
    for (int i = 0; i < nd; i++)
        shape[i] = tj_size(a, i);
    tj_tensor *x = num(a), *src = tj_cast(tj_broadcast_to(b, nd, tj_shape(a)), tj_dtype_of(x));
    bool fl = tj_dtype_is_float(tj_dtype_of(x));
    switch (rnd(g, 6)) {
    case 0: {
        int64_t k = 1 + rnd(g, (int)n);
        shape[d] = k;
        note(g, "scatter dim %d, %lld distinct per line", d, (long long)k);
        return tj_scatter(x, d, distinct_along(g, nd, shape, d, n), tj_narrow(src, d, 0, k));
    }
    case 1: {
        tj_reduce_op op = (tj_reduce_op)rnd(g, 5);
        if (!fl && op == TJ_REDUCE_MEAN)
            op = TJ_REDUCE_SUM;
        bool self = rnd(g, 2);
        note(g, "scatter_reduce dim %d op %d include_self %d", d, (int)op, self);
        tj_tensor *s = op == TJ_REDUCE_PROD && fl ? tj_add_s(tj_mul_s(src, 0.1), 1) : src;
        return tj_scatter_reduce(x, d, tu_program_indices(g, nd, shape, n), s, op, self);
    }
    case 2: {
        int64_t n0 = shape[0], k = 1 + rnd(g, (int)(n0 < 3 ? n0 : 3));
        bool acc = rnd(g, 2);
        note(g, "index_put dim 0 of %lld rows, accumulate %d", (long long)k, acc);
        tj_tensor *rows = acc ? tu_program_indices(g, 1, &k, n0) : distinct_along(g, 1, &k, 0, n0);
        return tj_index_put(x, &rows, 1, tj_narrow(src, 0, 0, k), acc);
    }
    case 3: {
        int64_t k = 1 + rnd(g, (int)n);
        note(g, "index_copy dim %d, %lld rows", d, (long long)k);
        return tj_index_copy(x, d, distinct_along(g, 1, &k, 0, n), tj_narrow(src, d, 0, k));
    }
    case 4: {
        int64_t k = 1 + rnd(g, 3);
        note(g, "index_fill dim %d, %lld picks, -2", d, (long long)k);
        return tj_index_fill(x, d, tu_program_indices(g, 1, &k, n), -2);
    }
    default: {
        int64_t k = 2 + rnd(g, 5), total = tj_numel(x);
        note(g, "take %lld of flat a", (long long)k);
        return tj_take(x, tu_program_indices(g, 1, &k, total));
    }
    }
}

/* Searches, sorting with indices, running minima, one_hot. */
static tj_tensor *searches(gen *g, tj_tensor *a, tj_tensor *b, int d, int64_t n, bool exact)
{
    tj_tensor *x = num(a);
    bool keep = rnd(g, 2), idx = rnd(g, 2);
    tj_tensor *ix = NULL, *r;
    switch (rnd(g, 9)) {
    case 0: note(g, "argsort dim %d", d); return tj_argsort(x, d, rnd(g, 2));
    case 1: {
        int64_t k = 1 + rnd(g, (int)n);
        note(g, "kthvalue %lld dim %d keep %d, %s", (long long)k, d, keep, idx ? "indices" : "values");
        r = tj_kthvalue(x, k, d, keep, &ix);
        return idx ? ix : r;
    }
    case 2:
        note(g, "max_dim %d keep %d, %s", d, keep, idx ? "indices" : "values");
        r = tj_max_dim(x, d, keep, &ix);
        return idx ? ix : r;
    case 3:
        note(g, "min_dim %d keep %d, %s", d, keep, idx ? "indices" : "values");
        r = tj_min_dim(x, d, keep, &ix);
        return idx ? ix : r;
    case 4: note(g, "argmin %d keep %d", d, keep); return tj_argmin(x, d, keep);
    case 5:
        note(g, "cummin %d, %s", d, idx ? "indices" : "values");
        r = tj_cummin(x, d, &ix);
        return idx ? ix : r;
    case 6: note(g, "all(a > 0.25) dim %d", d); return tj_all(tj_gt_s(x, 0.25), &d, 1, keep);
    case 7: {
        if (exact) {
            note(g, "one_hot(argmax %d), 5 classes", d);
            return tj_one_hot(tj_remainder(tj_argmax(x, d, keep), tj_scalar(TJ_I64, 5)), 5);
        }
        static const double bounds[] = {-1.5, -0.5, 0.125, 0.25, 1, 2};   /* none at 0 */
        note(g, "bucketize(a, 6 bounds) right %d", keep);
        return tj_bucketize(x, tj_cast(tj_from_data(TJ_F64, 1, (int64_t[]){6}, bounds), tj_dtype_of(x)), keep);
    }
    default: {
        note(g, "searchsorted(sort(flat a), b) right %d", keep);
        tj_tensor *s = tj_sort(tj_flatten(x, 0, -1), 0, false, NULL);
        return tj_searchsorted(s, tj_cast(num(b), tj_dtype_of(x)), keep);
    }
    }
}

/* Shape ops: pixel shuffles, movedim, unflatten, stacks, diagonals, glu,
 * prelu, repeat_interleave. */
static tj_tensor *reshapes(gen *g, tj_tensor *a, tj_tensor *b, int d, int64_t n, bool exact)
{
    int nd = tj_ndim(a);
    switch (rnd(g, 9)) {
    case 0:
        if (nd == 4 && tj_size(a, 1) % 4 == 0) {
            note(g, "pixel_shuffle 2");
            return tj_pixel_shuffle(a, 2);
        }
        if (nd == 4 && tj_size(a, 2) % 2 == 0 && tj_size(a, 3) % 2 == 0) {
            note(g, "pixel_unshuffle 2");
            return tj_pixel_unshuffle(a, 2);
        }
        break;
    case 1:
        if (nd >= 2) {
            int e = (d + 1) % nd;
            note(g, "movedim %d -> %d", d, e);
            return tj_movedim(a, &d, &e, 1);
        }
        break;
    case 2:
        if (n % 2 == 0 && n > 0) {
            note(g, "unflatten %d into (2, -1)", d);
            return tj_unflatten(a, d, (int64_t[]){2, -1}, 2);
        }
        break;
    case 3:
        if (nd && tj_numel(a) * 2 <= MAX_NUMEL) {
            bool h = rnd(g, 2);
            note(g, "%s(a, b)", h ? "hstack" : "vstack");
            tj_tensor *y = tj_cast(tj_broadcast_to(b, nd, tj_shape(a)), tj_dtype_of(a));
            tj_tensor *xs[2] = {a, y};
            return h ? tj_hstack(xs, 2) : tj_vstack(xs, 2);
        }
        break;
    case 4:
        if (nd == 1 && n * n <= MAX_NUMEL) {
            note(g, "diag_embed offset 1");
            return tj_diag_embed(a, 1, -2, -1);
        }
        if (nd == 2) {
            bool tr = rnd(g, 2);
            note(g, tr ? "trace" : "diag -1");
            return tr ? tj_trace(a) : tj_diag(a, -1);
        }
        break;
    case 5:
        if (!exact && n % 2 == 0 && n > 0) {
            note(g, "glu %d", d);
            return tj_glu(flt(a), d);
        }
        break;
    case 6:
        if (!exact && nd >= 2 && tj_size(a, 1) <= 64) {
            int64_t c = tj_size(a, 1);
            tj_tensor *x = flt(a);
            note(g, "prelu per channel");
            return tj_prelu(x, consts(g, tj_dtype_of(x), 1, &c, 0.5));
        }
        break;
    case 7:
        if (nd == 2) {
            note(g, "t");
            return tj_t(a);
        }
        break;
    default:
        if (nd && tj_numel(a) * 2 <= MAX_NUMEL) {
            note(g, "repeat_interleave 2 dim %d", d);
            return tj_repeat_interleave(a, 2, d);
        }
        break;
    }
    note(g, "movedim 0 -> -1");
    return nd ? tj_movedim(a, (int[]){0}, (int[]){-1}, 1) : tj_clone(a);
}

/* det, inv, solve on M = A A^T / k + 2 I (A: a as r x k, r <= 8): symmetric
 * positive definite with eigenvalues >= 2, so well conditioned. */
tj_tensor *tu_program_spd(tj_tensor *x, tj_tensor **a2)
{
    int64_t total = tj_numel(x), k = tj_ndim(x) ? tj_size(x, -1) : 1;
    if (k == 0 || total / k == 0 || total / k > 8)
        return NULL;
    int64_t r = total / k;
    tj_tensor *m2 = *a2 = tj_reshape(x, 2, (int64_t[]){r, k});
    return tj_add(tj_mul_s(tj_matmul(m2, tj_t(m2)), 1.0 / (double)k), tj_mul_s(tj_eye(tj_dtype_of(x), r, -1), 2));
}

static tj_tensor *linalg(gen *g, tj_tensor *a)
{
    tj_tensor *x = flt(a), *m2, *m = tu_program_spd(x, &m2);
    if (!m) {
        note(g, "square");
        return tj_square(x);
    }
    int64_t r = tj_size(m, 0);
    switch (rnd(g, 3)) {
    case 0: note(g, "det(A A^T/k + 2I), %lld x %lld", (long long)r, (long long)r); return tj_det(m);
    case 1: note(g, "inv(A A^T/k + 2I), %lld x %lld", (long long)r, (long long)r); return tj_inv(m);
    default: note(g, "solve(A A^T/k + 2I, A), %lld x %lld", (long long)r, (long long)r); return tj_solve(m, m2);
    }
}

tj_tensor *tu_program_inner(void *ctx, tj_tensor *const *in, int n)
{
    (void)n;
    prog *p = ctx;
    gen g = {.s = p->seed * 2246822519u + 5u, .p = p};
    bool exact = p->mode == M_INT;
    tj_tensor *x = in[0];
    tj_dtype dt = tj_dtype_of(x);   /* in place keeps the category: floats alone take *= 0.75 */
    bool whole = exact || !(dt == TJ_F16 || dt == TJ_BF16 || dt == TJ_F32 || dt == TJ_F64);
    if (rnd(&g, 3) == 0 && (whole ? tu_program_bump_(x) : tj_mul_s_(x, 0.75)) != 0)   /* the caller's tensor */
        return NULL;
    for (int s = 0, steps = 1 + rnd(&g, 3); s < steps && x; s++)
        x = exact ? tj_add_s(tj_abs(num(x)), s) : tu_program_unary(&g, x);
    if (x && tj_ndim(x) && rnd(&g, 2))
        x = tj_mul(x, tj_sum(num(x), (int[]){-1}, 1, true));
    return x;
}

bool tu_program_draws(const prog *p)
{
    bool mode = p->mode == M_F32 || p->mode == M_F64 || p->mode == M_MIXED || p->mode == M_AUTOCAST ||
                p->mode == M_GRAD || p->mode == M_TRAIN;
    return mode && p->seed % 16 != 9 && p->seed % 8 != 5;
}

tj_tensor *tu_program_more(gen *g, tj_tensor *a, tj_tensor *b, bool exact)
{
    int nd = tj_ndim(a), d = nd ? rnd(g, nd) : 0;
    int64_t n = nd ? tj_size(a, d) : 0;
    if (g->p->inner && rnd(g, 6) == 0) {
        /* it may write its argument: never the weight eager and compiled share */
        tj_tensor *x = g->near_weight ? tj_clone(a) : a;
        note(g, "a compiled function's call (inlined when traced)");
        return tj_call(g->p->inner, &x, 1);
    }
    if (tu_program_draws(g->p) && rnd(g, 10) == 0) {
        tj_tensor *f = flt(a);
        switch (rnd(g, 3)) {
        case 0: note(g, "dropout 0.4 (training)"); return tj_dropout(f, 0.4, true);
        case 1: note(g, "a * rand_like(a)"); return tj_mul(f, tj_rand(tj_dtype_of(f), nd, tj_shape(f)));
        default: note(g, "a + randn_like(a)"); return tj_add(f, tj_randn(tj_dtype_of(f), nd, tj_shape(f)));
        }
    }
    if (g->p->stat && is_float(a) && tj_numel(a) > 0 && rnd(g, 8) == 0) {
        /* a compiled call's partitioned forward writes it back; read before
         * the write, its old value is the backward's: those calls run eagerly */
        tj_tensor *s = g->p->stat, *r = a;
        if (rnd(g, 2)) {
            note(g, "a * stat, then stat = 0.9 stat + 0.1 mean(a) in place");
            r = tj_mul(a, tj_cast(s, tj_dtype_of(a)));
            /* a stat this call wrote depends on the arguments through a
             * no-grad path: the loss's derivative follows it, the gradient
             * does not (as in PyTorch) */
            g->p->not_derivative |= g->stat_written;
        } else {
            note(g, "stat = 0.9 stat + 0.1 mean(a) in place");
        }
        tj_no_grad_begin();
        int rc = tj_copy_(s, tj_add(tj_mul_s(s, 0.9), tj_mul_s(tj_mean(tj_cast(a, TJ_F64), NULL, 0, false), 0.1)));
        tj_no_grad_end();
        g->stat_written = true;
        return rc == 0 ? r : NULL;
    }
    bool windowed = !exact && (nd == 3 || nd == 4) && tj_numel(a) > 0;
    if (windowed && rnd(g, 3) == 0)   /* 3-D and 4-D values are rarer than the others */
        return windows(g, a);
    switch (rnd(g, 8)) {
    case 0: return tu_program_unary_more(g, a, exact);
    case 1: return binary_more(g, a, b, exact);
    case 2:
        if (windowed)
            return windows(g, a);
        break;
    case 3:
        if (!exact && (nd == 0 || tj_size(a, -1) <= 64) && tj_numel(a) <= 1024)
            return products(g, a, b);
        break;
    case 4:
        if (!exact)
            return losses(g, a, b);
        break;
    case 5:
        if (nd && n > 0 && tj_numel(a) > 0)
            return writes(g, a, b, d, n);
        break;
    case 6:
        if (nd && n > 0 && tj_numel(a) > 0)
            return searches(g, a, b, d, n, exact);
        break;
    default:
        if (!exact && rnd(g, 3) == 0 && tj_numel(a) > 0)
            return linalg(g, a);
        return reshapes(g, a, b, d, n, exact);
    }
    note(g, "neg");
    return tj_neg(num(a));
}
