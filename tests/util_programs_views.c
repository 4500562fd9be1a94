/* util_programs_views.c - the random programs' fourth step family: what
 * aliases what, and the ops of the table no earlier family drew. Pieces of
 * splits, unbinds and chunks (views of their input), view and view_as,
 * sliding windows through as_strided on a value of its own, in-place
 * binary writes with a tensor operand (mul_, sub_, div_, copy_) into a
 * clone or through a transposed, sliced or unsqueezed view of one, with
 * views taken before the write read after it; fill, expand_as, rsub; special functions
 * (digamma, polygamma, Bessel, ndtr, ndtri, erfcx, frexp), degree
 * conversions, infinity tests and the integer forms (bitwise and logical
 * not, xor_sum, floor_divide); linspace and meshgrid; the small linear
 * algebra of LAPACK (cholesky, slogdet, qr) on matrices made well
 * conditioned; conv3d and the 3-D adaptive pool; embedding_bag. Nothing is
 * written into a step's input: the writes go into clones, so the weight
 * that eager and compiled share is never touched.
 */
#include <math.h>
#include <stdint.h>

#include "util_programs.h"

/* b as a tensor a's shape can take in place: b itself when it broadcasts
 * to a's shape (partner's rule), else its sum (a 0-dim tensor). */
static tj_tensor *operand(tj_tensor *a, tj_tensor *b)
{
    int nd = tj_ndim(a), nb = tj_ndim(b);
    bool fits = nb <= nd;
    for (int i = 1; fits && i <= nb; i++)
        fits = tj_size(b, -i) == 1 || tj_size(b, -i) == tj_size(a, -i);
    return tj_cast(fits ? b : tj_sum(b, NULL, 0, false), tj_dtype_of(a));
}

/* One of x's pieces (pieces made by split, split_with_sizes, unbind or
 * chunk along d, n = x's size there > 0). */
static tj_tensor *piece(gen *g, tj_tensor *x, int d, int64_t n)
{
    tj_tensor *out[8];
    int got;
    switch (rnd(g, 4)) {
    case 0: {
        int64_t size = 1 + rnd(g, (int)(n < 4 ? n : 4));
        got = tj_split(x, size, d, out, 8);
        note(g, "split %lld dim %d", (long long)size, d);
        break;
    }
    case 1: {
        int64_t first = rnd(g, (int)n + 1), sizes[2] = {first, n - first};
        got = tj_split_with_sizes(x, sizes, 2, d, out);
        note(g, "split_with_sizes [%lld, %lld] dim %d", (long long)sizes[0], (long long)sizes[1], d);
        break;
    }
    case 2:
        if (n <= 8) {
            got = tj_unbind(x, d, out, 8);
            note(g, "unbind dim %d", d);
            break;
        }
        /* fall through */
    default: {
        int chunks = 1 + rnd(g, 3);
        got = tj_chunk(x, chunks, d, out, 8);
        note(g, "chunk %d dim %d", chunks, d);
        break;
    }
    }
    if (got <= 0)
        return NULL;
    int i = rnd(g, got < 8 ? got : 8);
    note(g, "piece %d", i);
    return out[i];
}

/* In-place writes with a tensor operand into a clone of a (a third of the
 * time a base without history, which a write of a value that requires grad
 * gives one: a clone of a detached a, or in the grad mode, whose gradients
 * are checked against differences of the values, a constant like a), or
 * through a view of the clone; a view taken before the write is read after
 * it. */
static tj_tensor *writes(gen *g, tj_tensor *a, tj_tensor *b, bool exact)
{
    bool fresh = rnd(g, 3) == 0, grad = g->p->mode == M_GRAD;
    if (fresh)
        note(g, grad ? "a constant like a (no history)" : "clone of a detached value (no history)");
    tj_tensor *x = exact ? num(a) : flt(a);
    tj_tensor *c = fresh && grad ? tj_full_like(x, 0.75) : tj_clone(fresh ? tj_detach(x) : x);
    tj_tensor *src = operand(c, b);
    int nd = tj_ndim(c);
    tj_tensor *before = nd >= 2 ? tj_transpose(c, 0, nd - 1) : tj_neg(c);   /* a view, or a value */
    int rc;
    switch (rnd(g, 6)) {
    case 4:
        if (nd >= 2 && tj_size(c, nd - 1) > 0) {   /* a slice of the transposed clone: its last column */
            note(g, "clone^T row 0 *= 3 (its first column)");
            rc = tj_mul_s_(tj_slice(tj_transpose(c, 0, nd - 1), 0, 0, 1, 1), 3);
            break;
        }
        /* fall through */
    case 5:
        if (nd && tj_size(c, 0) > 0) {
            note(g, "unsqueeze(clone)[:, 0] += 1");
            rc = tj_add_s_(tj_slice(tj_unsqueeze(c, 0), 1, 0, 1, 1), 1);
            break;
        }
        /* fall through */
    case 0: note(g, "clone *= b in place"); rc = tj_mul_(c, src); break;
    case 1: note(g, "clone -= b in place"); rc = tj_sub_(c, src); break;
    case 2:
        if (!exact) {
            note(g, "clone /= |b|+1 in place");
            rc = tj_div_(c, tj_add_s(tj_abs(src), 1));
            break;
        }
        /* fall through */
    default:
        if (nd >= 2) {   /* through the transposed view: b transposed alike */
            tj_tensor *v = tj_transpose(c, 0, nd - 1), *s = tj_broadcast_to(src, nd, tj_shape(c));
            note(g, "clone^T = b^T - 1 (copy_)");
            rc = tj_copy_(v, tj_add_s(tj_transpose(s, 0, nd - 1), -1));
        } else {
            note(g, "clone = b (copy_)");
            rc = tj_copy_(c, src);
        }
        break;
    }
    if (rc != 0)
        return NULL;
    if (nd >= 2 && rnd(g, 2)) {
        note(g, "the view taken before");
        return before;
    }
    return c;
}

static tj_tensor *pointwise(gen *g, tj_tensor *a, bool exact)
{
    if (exact) {
        tj_tensor *x = num(a);
        switch (rnd(g, 5)) {
        case 0: note(g, "bitwise_not"); return tj_bitwise_not(tj_dtype_of(a) == TJ_BOOL ? a : x);
        case 1: note(g, "logical_not"); return tj_logical_not(a);
        case 2: note(g, "floor_divide_s 3"); return tj_floor_divide_s(x, 3);
        case 3: note(g, "fill 7"); return tj_fill(x, 7);
        default:
            note(g, "xor_sum all");
            return tj_xor_sum(tj_cast(x, TJ_I64), NULL, 0, false);
        }
    }
    tj_tensor *x = flt(a);
    switch (rnd(g, 20)) {
    case 0: note(g, "digamma(|a|+0.5)"); return tj_digamma(tj_add_s(tj_abs(x), 0.5));
    case 1: note(g, "polygamma 1 (|a|+0.5)"); return tj_polygamma_n(1, tj_add_s(tj_abs(x), 0.5));
    case 2: note(g, "i0(clamp 5)"); return tj_i0(tj_clamp(x, -5, 5));
    case 3: note(g, "i1(clamp 5)"); return tj_i1(tj_clamp(x, -5, 5));
    case 4: note(g, "i1e"); return tj_i1e(x);
    case 5: note(g, "bessel_j0"); return tj_bessel_j0(x);
    case 6: note(g, "bessel_j1"); return tj_bessel_j1(x);
    case 7: note(g, "ndtr"); return tj_ndtr(x);
    case 8: note(g, "ndtri(sigmoid(clamp 4))"); return tj_ndtri(tj_sigmoid(tj_clamp(x, -4, 4)));
    case 9: note(g, "erfcx(clamp -2)"); return tj_erfcx(tj_clamp_min(x, -2));
    case 10: note(g, "frexp mantissa"); return tj_frexp(x);
    case 11: note(g, "frexp exponent"); return tj_frexp_exponent(x);
    case 12: note(g, "deg2rad"); return tj_deg2rad(x);
    case 13: note(g, "rad2deg"); return tj_rad2deg(x);
    case 14: note(g, "isinf|isposinf|isneginf of 1/a");
        return tj_logical_or(tj_isinf(tj_reciprocal(x)), tj_logical_xor(tj_isposinf(x), tj_isneginf(x)));
    case 15: note(g, "softplus beta 2 threshold 5"); return tj_softplus_ex(x, 2, 5);
    case 16: note(g, "fix"); return tj_fix(tj_mul_s(x, 3));
    case 17: note(g, "add_s_ex 1.5 alpha -2"); return tj_add_s_ex(x, 1.5, -2);
    case 18: note(g, "div_s_ex 0.7 floor"); return tj_div_s_ex(x, 0.7, TJ_ROUNDING_FLOOR);
    default: note(g, "xlogy(a, |a|+0.5)"); return tj_xlogy(x, tj_add_s(tj_abs(x), 0.5));
    }
}

/* cholesky, slogdet, qr of M (tu_program_spd). */
static tj_tensor *lapack(gen *g, tj_tensor *a)
{
    tj_tensor *x = flt(a), *m2, *m = tu_program_spd(x, &m2), *other = NULL;
    if (!m) {
        note(g, "matrix_norm of a as a column");
        return tj_matrix_norm(tj_reshape(x, 2, (int64_t[]){tj_numel(x), 1}), NULL, false);
    }
    int64_t r = tj_size(m, 0);
    switch (rnd(g, 4)) {
    case 0: {
        bool up = rnd(g, 2);
        note(g, "cholesky(A A^T/k + 2I) upper %d, %lld x %lld", up, (long long)r, (long long)r);
        return tj_cholesky(m, up);
    }
    case 1:
        note(g, "slogdet(A A^T/k + 2I), %lld x %lld, times its sign", (long long)r, (long long)r);
        tj_tensor *l = tj_slogdet(m, &other);
        return l && other ? tj_mul(l, other) : NULL;
    case 2:
        note(g, "qr(A A^T/k + 2I): R, %lld x %lld", (long long)r, (long long)r);
        return tj_qr(m, &other) ? other : NULL;
    default:
        note(g, "matrix_norm(A)");
        return tj_matrix_norm(m2, NULL, false);
    }
}

/* linspace, meshgrid, conv3d, adaptive_avg_pool3d, embedding_bag. */
static tj_tensor *others(gen *g, tj_tensor *a)
{
    tj_tensor *x = flt(a);
    int nd = tj_ndim(x);
    int64_t n = nd ? tj_size(x, -1) : 1;
    switch (rnd(g, 4)) {
    case 0:
        if (nd) {
            note(g, "a + linspace(-1, 2, last)");
            return tj_add(x, tj_linspace(tj_dtype_of(x), -1, 2, n));
        }
        break;
    case 1:
        if (nd && n <= 32 && tj_numel(x) / (n ? n : 1) <= 32) {
            tj_tensor *rows = tj_flatten(tj_narrow(x, nd - 1, 0, 1), 0, -1);
            tj_tensor *cols = tj_flatten(tj_narrow(x, nd - 1, n ? n - 1 : 0, 1), 0, -1), *out[2];
            if (n && tj_meshgrid((tj_tensor *[]){rows, cols}, 2, rnd(g, 2), out) == 2) {
                note(g, "meshgrid(first row, last column): product");
                return tj_mul(out[0], out[1]);
            }
        }
        break;
    case 2:
        if (nd == 4 && tj_size(x, 1) <= 8 && tj_size(x, 2) >= 2 && n >= 2) {
            int64_t c = tj_size(x, 1), co = 1 + rnd(g, 3);
            double w[8 * 3 * 4];
            for (int i = 0; i < co * c * 4; i++)
                w[i] = (rnd(g, 2001) - 1000) / 2000.0;
            tj_tensor *wt = tj_cast(tj_from_data(TJ_F64, 5, (int64_t[]){co, c, 1, 2, 2}, w), tj_dtype_of(x));
            note(g, "conv3d 1x2x2 %lld->%lld on [N,C,1,H,W], then adaptive_avg_pool3d 1x2x1", (long long)c,
                 (long long)co);
            tj_tensor *y = tj_conv3d(tj_unsqueeze(x, 2), wt, NULL, NULL, NULL, NULL, 1);
            return tj_squeeze(tj_adaptive_avg_pool3d(y, 1, 2, 1), (int[]){2}, 1);
        }
        break;
    default:
        if (nd >= 1 && n > 0 && n <= 64 && tj_numel(x) > 0 && tj_numel(x) / n <= 64) {
            int64_t rows = tj_numel(x) / n, len = 1 + rnd(g, 6), bags = 1 + rnd(g, 3);
            tj_tensor *idx = tu_program_indices(g, 1, &len, rows);
            int64_t offs[3] = {0, rnd(g, (int)len + 1), 0};
            offs[2] = offs[1] + rnd(g, (int)(len - offs[1]) + 1);
            tj_reduce_op mode = (tj_reduce_op[]){TJ_REDUCE_SUM, TJ_REDUCE_MEAN, TJ_REDUCE_AMAX}[rnd(g, 3)];
            note(g, "embedding_bag of a's rows, %lld indices, %lld bags, mode %d", (long long)len, (long long)bags,
                 (int)mode);
            return tj_embedding_bag(tj_reshape(x, 2, (int64_t[]){rows, n}), idx,
                                    tj_from_data(TJ_I64, 1, &bags, offs), mode, NULL, false);
        }
        break;
    }
    note(g, "rsub(a, a, 0.5)");
    return tj_rsub(x, x, 0.5);
}

tj_tensor *tu_program_views(gen *g, tj_tensor *a, tj_tensor *b, bool exact)
{
    int nd = tj_ndim(a), d = nd ? rnd(g, nd) : 0;
    int64_t n = nd ? tj_size(a, d) : 0, total = tj_numel(a);
    switch (rnd(g, 8)) {
    case 0:
        if (nd && n > 0)
            return piece(g, a, d, n);
        break;
    case 1:
        if (tj_is_contiguous(a)) {
            note(g, "view flat");
            return tj_view(a, 1, &total);
        }
        note(g, "view_as a flat b");
        return tj_view_as(a, tj_flatten(tj_broadcast_to(b, nd, tj_shape(a)), 0, -1));
    case 2:
        if (total >= 2) {   /* windows of w over a fresh copy: its whole storage */
            int64_t w = 1 + rnd(g, total < 4 ? (int)total : 4), m = total - w + 1;
            note(g, "as_strided windows %lld of a contiguous copy", (long long)w);
            return tj_as_strided(tj_mul_s(num(a), 1), 2, (int64_t[]){m, w}, (int64_t[]){1, 1}, 0);
        }
        break;
    case 3: return writes(g, a, b, exact);
    case 4: return pointwise(g, a, exact);
    case 5:
        if (!exact)
            return lapack(g, a);
        break;
    case 6:
        if (!exact)
            return others(g, a);
        break;
    default:
        note(g, "expand_as(b, a) + a");
        return tj_add(num(a), tj_expand_as(num(operand(a, b)), a));
    }
    note(g, "abs");
    return tj_abs(num(a));
}
