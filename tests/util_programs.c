/* util_programs.c - the random programs' wider op set (tests/test_programs.c).
 *
 * Step kinds beyond the generator's first ones: index reads and writes
 * (gather, take_along_dim, scatter_add, index_add, embedding), stack,
 * repeat and tile, scans (cumprod, cummax, logcumsumexp), einsum, attention,
 * eval-mode batch norm, group and instance norm, linear, more pointwise
 * formulas, triangles and diagonals, windows (unfold), chunks, resampling
 * (interpolate), medians and vector norms, and masked_select (a shape that
 * depends on the data: a graph break). Every index is a constant of the
 * program, drawn from the generator, so eager and compiled read the same.
 */
#include <math.h>
#include <stdint.h>

#include "util_programs.h"

/* An i64 tensor of the given shape with values in [0, hi). */
static tj_tensor *indices(gen *g, int nd, const int64_t *shape, int64_t hi)
{
    static const int64_t none = 0;
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= shape[i];
    if (n > MAX_NUMEL)
        return NULL;
    int64_t idx[MAX_NUMEL];
    for (int64_t i = 0; i < n; i++)
        idx[i] = rnd(g, (int)hi);
    return tj_from_data(TJ_I64, nd, nd ? shape : &none, idx);
}

/* a's shape with dim d set to k, into shape (returns a's rank). */
static int shape_with(const tj_tensor *a, int d, int64_t k, int64_t *shape)
{
    int nd = tj_ndim(a);
    for (int i = 0; i < nd; i++)
        shape[i] = i == d ? k : tj_size(a, i);
    return nd;
}

/* A constant vector of n values c0 + c1 i in a's float dtype. */
static tj_tensor *ramp(const tj_tensor *a, int64_t n, double c0, double c1)
{
    return tj_add_s(tj_mul_s(tj_arange(tj_dtype_of(a), 0, (double)n, 1), c1), c0);
}

/* Index reads and writes along dim d of a (size n > 0). */
static tj_tensor *indexing(gen *g, tj_tensor *a, tj_tensor *b, int d, int64_t n)
{
    int64_t shape[8];
    int nd = tj_ndim(a);
    tj_tensor *src = tj_cast(tj_broadcast_to(b, nd, tj_shape(a)), tj_dtype_of(num(a)));
    switch (rnd(g, 5)) {
    case 0:
        note(g, "gather dim %d", d);
        return tj_gather(a, d, indices(g, nd, tj_shape(a), n));
    case 1: {
        int64_t k = 1 + rnd(g, 3);
        note(g, "take_along_dim %d, %lld", d, (long long)k);
        shape_with(a, d, k, shape);
        return tj_take_along_dim(a, indices(g, nd, shape, n), d);
    }
    case 2:
        note(g, "scatter_add dim %d", d);
        return tj_scatter_add(num(a), d, indices(g, nd, tj_shape(a), n), src);
    case 3: {
        int64_t k = 1 + rnd(g, 3);
        note(g, "index_add dim %d, %lld rows, alpha 0.5", d, (long long)k);
        tj_tensor *rows = tj_narrow(src, d, 0, k < n ? k : n);
        int64_t m = tj_size(rows, d);
        return tj_index_add(num(a), d, indices(g, 1, &m, n), rows, tj_dtype_is_float(tj_dtype_of(a)) ? 0.5 : 1);
    }
    default:
        if (nd == 2) {
            int64_t ishape[2] = {2, 3};
            note(g, "embedding rows of a");
            return tj_embedding(a, indices(g, 2, ishape, tj_size(a, 0)));
        }
        note(g, "index_select dim %d", d);
        return tj_index_select(a, d, indices(g, 1, (int64_t[]){4}, n));
    }
}

/* Scans along dim d. */
static tj_tensor *scan(gen *g, tj_tensor *a, int d, bool exact)
{
    switch (rnd(g, exact ? 1 : 3)) {
    case 0: note(g, "cummax %d", d); return tj_cummax(num(a), d, NULL);
    case 1: note(g, "cumprod(1+a/10) %d", d); return tj_cumprod(tj_add_s(tj_mul_s(flt(a), 0.1), 1), d);
    default: note(g, "logcumsumexp %d", d); return tj_logcumsumexp(flt(a), d);
    }
}

/* Norms over a [N, C, ...] value with C <= 64: batch norm (eval), group
 * norm, instance norm; the running stats and affine maps are constants. */
static tj_tensor *norm(gen *g, tj_tensor *a)
{
    tj_tensor *x = flt(a);
    int64_t c = tj_size(x, 1);
    tj_tensor *w = rnd(g, 2) ? ramp(x, c, 0.5, 0.25) : NULL, *bias = w ? ramp(x, c, -0.1, 0.05) : NULL;
    switch (rnd(g, 3)) {
    case 0:
        note(g, "batch_norm eval, affine %d", w != NULL);
        return tj_batch_norm(x, ramp(x, c, -0.2, 0.1), ramp(x, c, 0.5, 0.3), w, bias, 1e-5);
    case 1: {
        int64_t groups = c % 2 == 0 && rnd(g, 2) ? 2 : 1;
        note(g, "group_norm %lld groups, affine %d", (long long)groups, w != NULL);
        return tj_group_norm(x, groups, w, bias, NORM_EPS);
    }
    default:
        if (tj_ndim(x) >= 3) {
            note(g, "instance_norm, affine %d", w != NULL);
            return tj_instance_norm(x, w, bias, NORM_EPS);
        }
        note(g, "group_norm 1 group");
        return tj_group_norm(x, 1, NULL, NULL, NORM_EPS);
    }
}

/* Matrix steps over the last two dims (the last at most 64): einsum,
 * attention, linear. */
static tj_tensor *matrices(gen *g, tj_tensor *a)
{
    tj_tensor *x = flt(a);
    int nd = tj_ndim(x);
    int64_t k = tj_size(x, -1);
    switch (rnd(g, 3)) {
    case 0:
        if (nd == 2) {
            note(g, "einsum ij,kj->ik");
            return tj_einsum("ij,kj->ik", (tj_tensor *[]){x, x}, 2);
        }
        note(g, "einsum ...ij->...ji");
        return tj_einsum("...ij->...ji", (tj_tensor *[]){x}, 1);
    case 1: {
        bool causal = rnd(g, 2);
        tj_tensor *q = nd == 2 ? tj_unsqueeze(x, 0) : x;
        note(g, "attention(a, a/2, a) causal %d", causal);
        return tj_scaled_dot_product_attention(q, tj_mul_s(q, 0.5), q, NULL, causal, 0.125 * (1 + rnd(g, 8)));
    }
    default: {
        int64_t out = 1 + rnd(g, 4), wshape[2] = {out, k};
        double wv[4 * 64];
        for (int64_t i = 0; i < out * k; i++)
            wv[i] = (rnd(g, 2001) - 1000) / 2000.0;
        tj_tensor *w = tj_cast(tj_from_data(TJ_F64, 2, wshape, wv), tj_dtype_of(x));
        bool bias = rnd(g, 2);
        note(g, "linear %lld->%lld bias %d", (long long)k, (long long)out, bias);
        return tj_linear(x, w, bias ? ramp(x, out, 0.1, -0.2) : NULL);
    }
    }
}

/* More pointwise formulas (b: a partner of a's broadcast shape). */
static tj_tensor *pointwise(gen *g, tj_tensor *a, tj_tensor *b, bool exact)
{
    if (exact) {
        note(g, "where_sx(a>0, 7, a)");
        return tj_where_sx(tj_gt_s(num(a), 0), 7, num(a));
    }
    tj_tensor *x = flt(a), *y = flt(b);
    switch (rnd(g, 7)) {
    case 0: note(g, "lerp_s(a, b, 0.3)"); return tj_lerp_s(x, tj_cast(y, tj_dtype_of(x)), 0.3);
    case 1: note(g, "addcdiv(a, b, |b|+1, 0.5)"); return tj_addcdiv(x, y, tj_add_s(tj_abs(y), 1), 0.5);
    case 2: note(g, "xlogy(relu a, |b|+0.5)"); return tj_xlogy(tj_relu(x), tj_add_s(tj_abs(y), 0.5));
    case 3: note(g, "nan_to_num(log a)"); return tj_nan_to_num(tj_log(x), 0.5, 100, -100);
    case 4: note(g, "hardtanh -0.5 0.5"); return tj_hardtanh(x, -0.5, 0.5);
    case 5: note(g, "mish"); return tj_mish(x);
    default: note(g, "where_sx(a>0, 2.5, a)"); return tj_where_sx(tj_gt_s(x, 0), 2.5, x);
    }
}

/* Shapes: stack, repeat, tile, unfold, chunks, triangles, diagonals. */
static tj_tensor *shapes(gen *g, tj_tensor *a, int d)
{
    int nd = tj_ndim(a);
    int64_t n = tj_size(a, d), numel = tj_numel(a);
    switch (rnd(g, 6)) {
    case 0:
        if (numel * 2 <= MAX_NUMEL) {
            int at = rnd(g, nd + 1);
            note(g, "stack(a, -a) at %d", at);
            return tj_stack((tj_tensor *[]){num(a), tj_neg(num(a))}, 2, at);
        }
        break;
    case 1:
        if (numel * 2 <= MAX_NUMEL && nd < 4) {
            int64_t reps[5] = {1, 1, 1, 1, 1};
            reps[rnd(g, nd + 1)] = 2;
            bool tile = rnd(g, 2);
            note(g, "%s with a 2 among %d", tile ? "tile" : "repeat", nd + 1);
            return tile ? tj_tile(a, reps, nd + 1) : tj_repeat(a, reps, nd + 1);
        }
        break;
    case 2:
        if (n >= 2 && numel * 2 <= MAX_NUMEL) {
            note(g, "unfold %d size 2 step 1", d);
            return tj_unfold(a, d, 2, 1);
        }
        break;
    case 3:
        if (n >= 2) {
            tj_tensor *out[3];
            int k = tj_chunk(a, 2 + rnd(g, 2), d, out, 3);
            if (k <= 0)
                return NULL;
            int pick = rnd(g, k);
            note(g, "chunk %d, piece %d of %d", d, pick, k);
            return out[pick];
        }
        break;
    case 4:
        if (nd >= 2) {
            int64_t diag = rnd(g, 3) - 1;
            note(g, "triu %lld", (long long)diag);
            return tj_triu(a, diag);
        }
        break;
    default:
        if (nd >= 2) {
            note(g, "diagonal of the last two dims");
            return tj_diagonal(a, 0, nd - 2, nd - 1);
        }
        break;
    }
    note(g, "flip %d", d);
    return tj_flip(a, (int[]){d}, 1);
}

tj_tensor *tu_program_step(gen *g, tj_tensor *a, tj_tensor *b, tj_tensor *w, bool exact)
{
    (void)w;
    int nd = tj_ndim(a), d = nd ? rnd(g, nd) : 0;
    int64_t n = nd ? tj_size(a, d) : 0;
    switch (rnd(g, 9)) {
    case 0:
        if (nd && n > 0 && tj_numel(a) > 0)
            return indexing(g, a, b, d, n);
        break;
    case 1:
        if (nd)
            return scan(g, a, d, exact);
        break;
    case 2:
        if (!exact && nd >= 2 && tj_size(a, 1) <= 64)
            return norm(g, a);
        break;
    case 3:
        if (!exact && nd >= 2 && tj_size(a, -1) <= 64 && tj_size(a, -2) <= 64 &&
            tj_numel(a) * tj_size(a, -2) <= 4 * MAX_NUMEL)
            return matrices(g, a);
        break;
    case 4: return pointwise(g, a, b, exact);
    case 5:
        if (nd)
            return shapes(g, a, d);
        break;
    case 6:
        if (!exact && (nd == 3 || nd == 4) && tj_numel(a) * (nd == 4 ? 4 : 2) <= MAX_NUMEL && tj_numel(a) > 0) {
            bool lin = nd == 4 && rnd(g, 2);
            note(g, "interpolate x2 %s", lin ? "bilinear" : "nearest");
            double sf[2] = {2, 2};
            return tj_interpolate(flt(a), NULL, sf, nd - 2, lin ? TJ_INTERP_BILINEAR : TJ_INTERP_NEAREST, false);
        }
        break;
    case 7:
        if (nd && n > 0) {
            bool keep = rnd(g, 2);
            if (exact || rnd(g, 2)) {
                note(g, "median %d keep %d", d, keep);
                return tj_median(num(a), d, keep);
            }
            double ord = (double[]){2, 1, INFINITY}[rnd(g, 3)];
            note(g, "vector_norm ord %g dim %d", ord, d);
            return tj_vector_norm(flt(a), ord, &d, 1, keep);
        }
        break;
    default:
        note(g, "masked_select(a > 0) (graph break)");
        g->broke = true;
        return tj_masked_select(num(a), tj_gt_s(num(a), 0));
    }
    note(g, "contiguous");
    return tj_contiguous(a);
}
