/* util_programs.c - the random programs' generator (tests/test_programs.c
 * runs them): a program of 4-16 steps over three arguments and a captured
 * weight, drawn from a seed.
 *
 * The first step kinds (below the wider set): pointwise ops with
 * broadcasting and promotion, tensor-scalar ops, reductions over any dims,
 * views, softmax, cumsum, cat, pad, matmul, casts, in-place writes, norms,
 * indexing, sorting, graph breaks (tj_nonzero, tj_item) and conv blocks.
 * The wider set: index reads and writes (gather, take_along_dim,
 * scatter_add, index_add, embedding), stack, repeat and tile, scans
 * (cumprod, cummax, logcumsumexp), einsum, attention, eval-mode batch norm,
 * group and instance norm, linear, more pointwise formulas, triangles and
 * diagonals, windows (unfold), chunks, resampling (interpolate), medians
 * and vector norms, and masked_select (a shape that depends on the data: a
 * graph break). The third family, the ops neither of these draws, is in
 * tests/util_programs_more.c. Every index is a constant of the program,
 * drawn from the generator, so eager and compiled read the same.
 */
#include <math.h>
#include <stdint.h>

#include "util_programs.h"

tj_tensor *tu_program_indices(gen *g, int nd, const int64_t *shape, int64_t hi)
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
        return tj_gather(a, d, tu_program_indices(g, nd, tj_shape(a), n));
    case 1: {
        int64_t k = 1 + rnd(g, 3);
        note(g, "take_along_dim %d, %lld", d, (long long)k);
        shape_with(a, d, k, shape);
        return tj_take_along_dim(a, tu_program_indices(g, nd, shape, n), d);
    }
    case 2:
        note(g, "scatter_add dim %d", d);
        return tj_scatter_add(num(a), d, tu_program_indices(g, nd, tj_shape(a), n), src);
    case 3: {
        int64_t k = 1 + rnd(g, 3);
        note(g, "index_add dim %d, %lld rows, alpha 0.5", d, (long long)k);
        tj_tensor *rows = tj_narrow(src, d, 0, k < n ? k : n);
        int64_t m = tj_size(rows, d);
        return tj_index_add(num(a), d, tu_program_indices(g, 1, &m, n), rows, tj_dtype_is_float(tj_dtype_of(a)) ? 0.5 : 1);
    }
    default:
        if (nd == 2) {
            int64_t ishape[2] = {2, 3};
            note(g, "embedding rows of a");
            return tj_embedding(a, tu_program_indices(g, 2, ishape, tj_size(a, 0)));
        }
        note(g, "index_select dim %d", d);
        return tj_index_select(a, d, tu_program_indices(g, 1, (int64_t[]){4}, n));
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

/* The cut of the selections whose result's size depends on the values
 * (masked_select, nonzero): not 0, where a cancellation lands exactly in one
 * summation order and an ulp to either side in another (layer_norm of a
 * constant row: x - mean is 0 compiled, 6e-7 eagerly, autocast program
 * 7292038 on AVX-512), so the sizes would differ by what rounding decides. */
#define SELECT_CUT 0.0371

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

static tj_tensor *wider_step(gen *g, tj_tensor *a, tj_tensor *b, tj_tensor *w, bool exact)
{
    (void)w;
    int nd = tj_ndim(a), d = nd ? rnd(g, nd) : 0;
    int64_t n = nd ? tj_size(a, d) : 0;
    switch (rnd(g, 10)) {
    case 8:
        if (nd && n > 1) {   /* a view read after a write into its base */
            tj_tensor *c = tj_clone(num(a));
            tj_tensor *v = rnd(g, 2) ? tj_slice(c, d, 1, n, 1) : tj_transpose(c, 0, nd - 1);
            note(g, "view of a clone, then clone += b in place");
            return tj_add_(c, tj_cast(num(b), tj_dtype_of(c))) ? NULL : v;
        }
        break;
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
    case 9:
        note(g, "masked_select(a > %g) (graph break)", SELECT_CUT);
        return tj_masked_select(num(a), tj_gt_s(num(a), SELECT_CUT));
    }
    note(g, "contiguous");
    return tj_contiguous(a);
}

/* ---- the first step kinds, and the program ------------------------------------------------------ */

/* Whether a and b broadcast, and the result's element count. */
static bool bcast(const tj_tensor *a, const tj_tensor *b, int64_t *numel)
{
    int na = tj_ndim(a), nb = tj_ndim(b), n = na > nb ? na : nb;
    int64_t total = 1;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : tj_size(a, i - (n - na));
        int64_t db = i < n - nb ? 1 : tj_size(b, i - (n - nb));
        if (da != db && da != 1 && db != 1)
            return false;
        total *= da == 1 ? db : da;
    }
    *numel = total;
    return true;
}

/* A value that broadcasts with a into at most MAX_NUMEL elements; with same,
 * one whose broadcast result has a's shape (for in-place updates of a). */
static tj_tensor *partner(gen *g, tj_tensor *a, tj_tensor **v, int nv, bool same)
{
    for (int tries = 0; tries < 12; tries++) {
        tj_tensor *b = v[rnd(g, nv)];
        int64_t n;
        if (!bcast(a, b, &n) || n > MAX_NUMEL)
            continue;
        if (same && (n != tj_numel(a) || tj_ndim(b) > tj_ndim(a)))
            continue;
        return b;
    }
    return a;
}

/* A sorted set of distinct dims of a (ndims 0 means all, for reductions). */
static int some_dims(gen *g, tj_tensor *a, int *dims)
{
    int nd = tj_ndim(a), k = 0;
    for (int d = 0; d < nd; d++)
        if (rnd(g, 2))
            dims[k++] = rnd(g, 2) ? d : d - nd;
    return k;
}

tj_tensor *tu_program_unary(gen *g, tj_tensor *a)
{
    switch (rnd(g, 24)) {
    case 0: note(g, "exp(clamp)"); return tj_exp(tj_clamp(num(a), -20, 20));
    case 1: note(g, "tanh"); return tj_tanh(a);
    case 2: note(g, "sigmoid"); return tj_sigmoid(a);
    case 3: note(g, "relu"); return tj_relu(num(a));
    case 4: note(g, "abs"); return tj_abs(num(a));
    case 5: note(g, "neg"); return tj_neg(num(a));
    case 6: note(g, "sin"); return tj_sin(a);
    case 7: note(g, "log(|a|+0.5)"); return tj_log(tj_add_s(tj_abs(num(a)), 0.5));
    /* |a| + 0.01: sqrt's slope at 0 turns a sum's rounding residue (1e-7)
     * into 3e-4, over f32's tolerance: conditioning, not a fault */
    case 8: note(g, "sqrt(|a|+0.01)"); return tj_sqrt(tj_add_s(tj_abs(num(a)), 0.01));
    case 9: note(g, "rsqrt(|a|+1)"); return tj_rsqrt(tj_add_s(tj_abs(num(a)), 1));
    case 10: note(g, "erf"); return tj_erf(a);
    case 11: note(g, "gelu"); return tj_gelu(flt(a));
    case 12: note(g, "gelu_tanh"); return tj_gelu_tanh(flt(a));
    case 13: note(g, "silu"); return tj_silu(flt(a));
    case 14: note(g, "softplus"); return tj_softplus(flt(a));
    case 15: note(g, "square"); return tj_square(num(a));
    case 16: note(g, "floor(a+0.5)"); return tj_floor(tj_add_s(num(a), 0.5));
    case 17: note(g, "sign(a-0.25)"); return tj_sign(tj_sub_s(num(a), 0.25));
    case 18: note(g, "clamp"); return tj_clamp(num(a), -1.5, 2);
    case 19: note(g, "expm1(clamp)"); return tj_expm1(tj_clamp(flt(a), -10, 10));
    case 20: note(g, "atan"); return tj_atan(a);
    case 21: note(g, "hardswish"); return tj_hardswish(flt(a));
    case 22: note(g, "leaky_relu"); return tj_leaky_relu(flt(a), 0.1);
    default: note(g, "isnan|gt0.25"); return tj_logical_or(tj_isnan(flt(a)), tj_gt_s(num(a), 0.25));
    }
}

tj_tensor *tu_program_binary(gen *g, tj_tensor *a, tj_tensor *b)
{
    switch (rnd(g, 14)) {
    case 0: note(g, "add"); return tj_add(num(a), num(b));
    case 1: note(g, "sub"); return tj_sub(num(a), num(b));
    case 2: note(g, "mul"); return tj_mul(num(a), num(b));
    case 3: note(g, "div(|b|+0.5)"); return tj_div(num(a), tj_add_s(tj_abs(num(b)), 0.5));
    case 4: note(g, "maximum"); return tj_maximum(num(a), num(b));
    case 5: note(g, "minimum"); return tj_minimum(num(a), num(b));
    case 6: note(g, "where(b>0.25)"); return tj_where(tj_gt_s(num(b), 0.25), a, b);
    case 7: note(g, "add_ex(alpha 2)"); return tj_add_ex(num(a), num(b), 2);
    case 8: note(g, "lt"); return tj_lt(num(a), num(b));
    case 9: note(g, "atan2"); return tj_atan2(flt(a), flt(b));
    case 10: note(g, "logaddexp"); return tj_logaddexp(flt(a), flt(b));
    case 11: note(g, "masked_fill(a<0.3)"); return tj_masked_fill(num(a), tj_lt_s(num(a), 0.3), 3);
    case 12: note(g, "pow(|a|+0.1, clamp b)");
        return tj_pow(tj_add_s(tj_abs(flt(a)), 0.1), tj_clamp(flt(b), -2, 2));
    default: note(g, "addcmul"); return tj_addcmul(num(a), num(b), num(a), 0.5);
    }
}

/* Integer-exact binary ops (the integer mode): no float formulas. */
static tj_tensor *binary_int(gen *g, tj_tensor *a, tj_tensor *b)
{
    a = num(a);
    b = num(b);
    switch (rnd(g, 9)) {
    case 0: note(g, "add"); return tj_add(a, b);
    case 1: note(g, "sub"); return tj_sub(a, b);
    case 2: note(g, "maximum"); return tj_maximum(a, b);
    case 3: note(g, "bitwise_xor"); return tj_bitwise_xor(a, b);
    case 4: note(g, "remainder(|b|+1)"); return tj_remainder(a, tj_add_s(tj_abs(b), 1));
    case 5: note(g, "floor_divide(|b|+1)"); return tj_floor_divide(a, tj_add_s(tj_abs(b), 1));
    case 6: note(g, "where(b>0)"); return tj_where(tj_gt_s(b, 0), a, b);
    case 7: note(g, "eq"); return tj_eq(a, b);
    default: note(g, "mul(clamp)"); return tj_mul(tj_clamp(a, -9, 9), tj_clamp(b, -9, 9));
    }
}

static tj_tensor *scalar_op(gen *g, tj_tensor *a, bool exact)
{
    double s = exact ? (double)(rnd(g, 7) - 3) : (rnd(g, 9) - 4) * 0.75;
    switch (rnd(g, 5)) {
    case 0: note(g, "add_s %g", s); return tj_add_s(num(a), s);
    case 1: note(g, "mul_s %g", s); return tj_mul_s(num(a), s);
    case 2: note(g, "rsub_s %g", s); return tj_rsub_s(num(a), s, 1);
    case 3: note(g, "maximum_s %g", s); return tj_maximum_s(num(a), s);
    default: note(g, "sub_s 1"); return tj_sub_s(num(a), 1);
    }
}

static tj_tensor *reduce(gen *g, tj_tensor *a, bool exact)
{
    int dims[8], nd = some_dims(g, a, dims);
    bool keep = rnd(g, 2);
    int kinds = exact ? 4 : 9;
    switch (rnd(g, kinds)) {
    case 0: note(g, "sum %d dims keep %d", nd, keep); return tj_sum(num(a), dims, nd, keep);
    case 1: note(g, "amax %d dims keep %d", nd, keep); return tj_amax(num(a), dims, nd, keep);
    case 2: note(g, "amin %d dims keep %d", nd, keep); return tj_amin(num(a), dims, nd, keep);
    case 3: note(g, "any %d dims", nd); return tj_any(tj_gt_s(num(a), 0), dims, nd, keep);
    case 4: note(g, "mean %d dims keep %d", nd, keep); return tj_mean(flt(a), dims, nd, keep);
    case 5: note(g, "var %d dims keep %d", nd, keep); return tj_var(flt(a), dims, nd, rnd(g, 2), keep);
    case 6: note(g, "logsumexp %d dims", nd); return tj_logsumexp(flt(a), dims, nd, keep);
    case 7: {
        note(g, "prod(1+a/100) %d dims", nd);
        tj_tensor *f = tj_add_s(tj_mul_s(flt(a), 0.01), 1), *r = tj_prod(f, dims, nd, keep);
        /* n half-precision factors round n times, eager and compiled in other
         * orders: about sqrt(n) u apart (u = 2^-8 in bf16, 2^-11 in f16),
         * more than the mode's 2e-2 from n = 26 in bf16 (seeds 2400338,
         * 3502339: 186 and 130 factors, 2.7% and 2.9% apart) */
        tj_dtype dt = f ? tj_dtype_of(f) : TJ_F32;
        if (r && g->p && (dt == TJ_BF16 || dt == TJ_F16)) {
            double n = (double)tj_numel(f) / (double)(tj_numel(r) ? tj_numel(r) : 1);
            double t = 3 * sqrt(n) * (dt == TJ_BF16 ? 0x1p-8 : 0x1p-11);
            g->p->lowp_tol = t > g->p->lowp_tol ? t : g->p->lowp_tol;
        }
        return r;
    }
    default: note(g, "std %d dims", nd); return tj_std(flt(a), dims, nd, 1, keep);
    }
}

static tj_tensor *view(gen *g, tj_tensor *a)
{
    int nd = tj_ndim(a);
    if (nd == 0) {
        note(g, "unsqueeze 0");
        return tj_unsqueeze(a, 0);
    }
    int d = rnd(g, nd), e = rnd(g, nd);
    int64_t n = 0;   /* read only where needed: a read size makes dynamic dims static */
    switch (rnd(g, 12)) {
    case 0: note(g, "transpose %d %d", d, e); return tj_transpose(a, d, e);
    case 1: {
        int perm[8];
        for (int i = 0; i < nd; i++)
            perm[i] = nd - 1 - i;
        note(g, "permute reversed");
        return tj_permute(a, perm);
    }
    case 2:
        n = tj_size(a, d);
        note(g, "slice dim %d from %d step 2", d, (int)(n / 3));
        return tj_slice(a, d, n / 3, n, 2);
    case 3: note(g, "flip %d", d); return tj_flip(a, (int[]){d}, 1);
    case 4: note(g, "squeeze"); return tj_squeeze(a, NULL, 0);
    case 5:
        if (nd < 5 && tj_numel(a) * 3 <= MAX_NUMEL) {
            note(g, "unsqueeze %d, expand to 3", d);
            tj_tensor *u = tj_unsqueeze(a, d);
            int64_t shape[8];
            for (int i = 0; i <= nd; i++)
                shape[i] = i == d ? 3 : -1;
            return tj_expand(u, nd + 1, shape);
        }
        note(g, "flatten");
        return tj_flatten(a, 0, -1);
    case 6: note(g, "flatten"); return tj_flatten(a, 0, -1);
    case 7:
        n = tj_size(a, d);
        note(g, "narrow %d", d);
        return tj_narrow(a, d, n > 1, n - (n > 1));
    case 8: note(g, "roll %d by 1", d); return tj_roll(a, (int64_t[]){1}, (int[]){d}, 1);
    case 9:   /* sizes a symbol less a count (s0-1), without reading the size */
        note(g, "slice dim %d [1:-1]", d);
        return tj_slice(a, d, 1, -1, 1);
    case 10:  /* static where the dim has 3 (a guard), clamped below */
        note(g, "slice dim %d [-3:]", d);
        return tj_slice(a, d, -3, INT64_MAX, 1);
    default:  /* a rotation as a cat of slices: s0-1 + 1 is s0 again */
        note(g, "cat of dim %d [1:] and [:1]", d);
        return tj_cat((tj_tensor *[]){tj_slice(a, d, 1, INT64_MAX, 1), tj_slice(a, d, 0, 1, 1)}, 2, d);
    }
}

static tj_tensor *other(gen *g, tj_tensor *a, tj_tensor *b, tj_tensor *w, bool exact)
{
    int nd = tj_ndim(a), d = nd ? rnd(g, nd) : 0;
    switch (rnd(g, 8)) {
    case 0:
        if (nd && !exact) {
            bool lg = rnd(g, 2);
            note(g, lg ? "log_softmax %d" : "softmax %d", d);
            return lg ? tj_log_softmax(flt(a), d) : tj_softmax(flt(a), d);
        }
        break;
    case 1:
        if (nd) {
            note(g, "cumsum %d", d);
            return tj_cumsum(num(a), d);
        }
        break;
    case 2:
        if (nd && tj_numel(a) * 2 <= MAX_NUMEL) {
            note(g, "cat(a, f(a)) dim %d", d);
            return tj_cat((tj_tensor *[]){num(a), tj_mul_s(num(a), 2)}, 2, d);
        }
        break;
    case 3:
        if (nd) {
            note(g, "pad last 1,2");
            return tj_pad(num(a), (int64_t[]){1, 2}, 1, exact ? 5.0 : 0.25);
        }
        break;
    case 4:
        if (nd >= 2 && !exact && tj_size(a, -1) <= 64 && tj_numel(a) * tj_size(a, -2) <= 4 * MAX_NUMEL) {
            note(g, "matmul(a, a^T)");
            tj_tensor *f = flt(a);
            return tj_matmul(f, tj_transpose(f, -1, -2));
        }
        break;
    case 5:
        if (nd && tj_ndim(w) == 1 && tj_size(a, -1) == tj_size(w, 0) && !exact) {
            note(g, "mul by weight");
            return tj_mul(a, w);
        }
        break;
    case 6: {
        /* in place into a clone, or into a slice of one */
        tj_tensor *r = tj_clone(num(a));
        if (nd && tj_size(a, d) > 1 && rnd(g, 2)) {
            note(g, "clone, slice %d *= 2 in place", d);
            return tj_mul_s_(tj_slice(r, d, 0, 1, 1), 2) ? NULL : r;
        }
        note(g, "clone += b in place");
        return tj_add_(r, tj_cast(num(b), tj_dtype_of(r))) ? NULL : r;
    }
    default:
        if (nd >= 2) {
            note(g, "tril");
            return tj_tril(a, 0);
        }
        break;
    }
    note(g, "cast");
    return exact ? tj_cast(a, TJ_I64) : tj_cast(a, rnd(g, 2) ? TJ_F32 : TJ_F64);
}

/* A convolution block on a 4-D value (N, C, H, W): conv2d 3x3 with a
 * weight the program makes (a constant of the trace), a per-channel affine
 * map and relu (the conv's epilogue), then maybe a max or average pool
 * (fused after the conv in compiled plans); a passes conv_ok. */
static bool conv_ok(tj_tensor *a)
{
    return tj_ndim(a) == 4 && tj_size(a, 1) <= 16 && tj_size(a, 2) >= 3 && tj_size(a, 3) >= 3;
}

static tj_tensor *conv_block(gen *g, tj_tensor *a)
{
    int64_t ci = tj_size(a, 1), co = 1 + rnd(g, 6), groups = 1;
    if (ci % 2 == 0 && co % 2 == 0 && rnd(g, 3) == 0)
        groups = 2;
    int64_t wshape[4] = {co, ci / groups, 3, 3}, n = co * (ci / groups) * 9;
    double wv[16 * 16 * 9];
    for (int64_t i = 0; i < n; i++)
        wv[i] = (rnd(g, 2001) - 1000) / 3000.0;
    int64_t st = 1 + rnd(g, 2), pad = rnd(g, 2);
    note(g, "conv2d 3x3 %lld->%lld stride %lld pad %lld groups %lld", (long long)ci, (long long)co,
         (long long)st, (long long)pad, (long long)groups);
    tj_tensor *w = tj_cast(tj_from_data(TJ_F64, 4, wshape, wv), tj_dtype_of(flt(a)));
    tj_tensor *y = tj_conv2d(flt(a), w, NULL, (int64_t[]){st, st}, (int64_t[]){pad, pad}, (int64_t[]){1, 1},
                             groups);
    tj_tensor *scale = tj_add_s(tj_mul_s(tj_arange(tj_dtype_of(y), 0, (double)co, 1), 0.1), 0.5);
    y = tj_relu(tj_add_s(tj_mul(y, tj_reshape(scale, 3, (int64_t[]){co, 1, 1})), 0.05));
    if (!y || tj_size(y, 2) < 2 || tj_size(y, 3) < 2 || rnd(g, 4) == 0)
        return y;
    int64_t k = 2 + (tj_size(y, 2) >= 3 && tj_size(y, 3) >= 3 && rnd(g, 2)), ps = 1 + rnd(g, 2),
            pp = rnd(g, 2) && k == 3;
    if (rnd(g, 2)) {
        note(g, "max_pool2d %lld stride %lld pad %lld", (long long)k, (long long)ps, (long long)pp);
        return tj_max_pool2d(y, (int64_t[]){k, k}, (int64_t[]){ps, ps}, (int64_t[]){pp, pp}, (int64_t[]){1, 1});
    }
    bool cip = rnd(g, 2);
    note(g, "avg_pool2d %lld stride %lld pad %lld include_pad %d", (long long)k, (long long)ps, (long long)pp, cip);
    return tj_avg_pool2d(y, (int64_t[]){k, k}, (int64_t[]){ps, ps}, (int64_t[]){pp, pp}, cip);
}

/* Norms, indexing, sorting, and data-dependent steps that break the graph
 * (tj_nonzero's shape, tj_item's value). */
static tj_tensor *extra(gen *g, tj_tensor *a, tj_tensor *w, bool exact)
{
    int nd = tj_ndim(a), d = nd ? rnd(g, nd) : 0;
    int64_t n = nd ? tj_size(a, d) : 1;
    switch (rnd(g, 9)) {
    case 0:
        if (nd && !exact) {
            note(g, "layer_norm last");
            return tj_layer_norm(flt(a), 1, NULL, NULL, NORM_EPS);
        }
        break;
    case 1:
        if (nd && !exact) {
            note(g, "rms_norm last");
            return tj_rms_norm(flt(a), 1, NULL, NORM_EPS);
        }
        break;
    case 2:
        if (nd && n > 0) {
            int64_t idx[6];
            for (int i = 0; i < 6; i++)
                idx[i] = rnd(g, (int)n);
            note(g, "index_select dim %d", d);
            return tj_index_select(a, d, tj_from_data(TJ_I64, 1, (int64_t[]){6}, idx));
        }
        break;
    case 3:
        if (nd) {
            bool desc = rnd(g, 2);
            note(g, "sort dim %d desc %d", d, desc);
            return tj_sort(num(a), d, desc, NULL);
        }
        break;
    case 4:
        if (nd && n > 0) {
            int64_t k = 1 + rnd(g, n < 3 ? (int)n : 3);
            note(g, "topk %lld dim %d", (long long)k, d);
            return tj_topk(num(a), k, d, true, NULL);
        }
        break;
    case 5:
        note(g, "nonzero(a > %g), summed (graph break)", SELECT_CUT);
        return tj_sum(tj_nonzero(tj_gt_s(num(a), SELECT_CUT)), NULL, 0, false);
    case 6:
        if (tj_numel(a) > 0) {
            note(g, "add_s item(amax) (graph break)");
            g->p->not_derivative = true;
            double m = tj_item(tj_amax(num(a), NULL, 0, false));
            return isnan(m) ? NULL : tj_add_s(num(a), exact ? m : m * 0.5);   /* NaN: an error */
        }
        break;
    case 7:
        if (!exact && conv_ok(a))
            return conv_block(g, a);
        break;
    default:
        if (exact && nd) {
            note(g, "argmax dim %d", d);
            return tj_argmax(num(a), d, rnd(g, 2));
        }
        if (nd && tj_size(a, -1) == tj_size(w, 0) && !exact) {
            note(g, "matmul by weight");
            return tj_matmul(flt(a), w);
        }
        break;
    }
    note(g, "contiguous");
    return tj_contiguous(a);
}

/* A write into leading rows of an argument (contiguous, transposed, strided
 * or expanded: the argument's layout), of b broadcast to them when it
 * broadcasts, else of a constant; the argument is the step's value. Eager
 * refuses rows that share memory (an expanded dim among them). */
static tj_tensor *arg_slice_write(gen *g, tj_tensor *x, tj_tensor *b, bool exact)
{
    int nd = tj_ndim(x);
    if (tj_dtype_of(x) == TJ_BOOL) {
        note(g, "arg (bool) read");
        return x;
    }
    if (!nd || tj_size(x, 0) == 0) {
        note(g, "arg += 1 in place");
        return tu_program_bump_(x) ? NULL : x;
    }
    int64_t k = 1 + rnd(g, (int)(tj_size(x, 0) < 2 ? 1 : 2));
    tj_tensor *rows = tj_slice(x, 0, 0, k, 1);
    int64_t n;
    bool fits = bcast(rows, b, &n) && n == tj_numel(rows) && tj_ndim(b) <= nd;
    note(g, "arg rows 0..%lld %s in place", (long long)k, fits ? "+= b" : "*= 2");
    /* a view of a leaf that requires grad (grad mode's argument 0) is
     * written as PyTorch allows it: outside grad mode */
    bool leaf = tj_get_requires_grad(x);
    if (leaf) {
        g->p->not_derivative = true;
        tj_no_grad_begin();
    }
    /* a float into an integer argument: rounded, not truncated (a value
     * within rounding of an integer, 1 - 1 ulp from a cosine, would
     * truncate to either side) */
    tj_tensor *add = exact ? num(b) : is_float(b) && !is_float(x) ? tj_round(b) : b;
    int rc = fits ? tj_add_(rows, tj_cast(add, tj_dtype_of(x))) : tj_mul_s_(rows, 2);
    if (leaf)
        tj_no_grad_end();
    return rc ? NULL : x;
}

int tu_program_bump_(tj_tensor *x)
{
    return tj_dtype_of(x) == TJ_BOOL ? tj_copy_(x, tj_logical_not(x)) : tj_add_s_(x, 1);
}

int tu_program_results(gen *g, tj_tensor **v, int nv, int nin, tj_tensor **out, int max)
{
    int k = 1 + rnd(g, max < 3 ? max : 3);
    out[0] = v[nv - 1];
    for (int i = 1; i < k; i++)
        out[i] = v[nin + rnd(g, nv - nin)];
    return k;
}

int tu_program_model(void *ctx, tj_tensor *const *in, int nin, tj_tensor **out, int max)
{
    prog *p = ctx;
    gen g = {.s = p->seed * 2654435761u + (unsigned)p->mode, .p = p};
    bool exact = p->mode == M_INT;
    tj_tensor *v[MAX_VALUES];
    bool near_w[MAX_VALUES] = {false};   /* made from the weight: may view it */
    int nv = 0;
    for (int i = 0; i < nin; i++)
        v[nv++] = in[i];
    if (!exact) {
        near_w[nv] = true;
        v[nv++] = p->w;
    }
    if (rnd(&g, 4) == 0) {
        note(&g, "arg 1 += 1 in place");
        if (tu_program_bump_(in[1]))
            return -1;
    }
    int steps = 4 + rnd(&g, 13);
    for (int s = 0; s < steps && nv < MAX_VALUES; s++) {
        int ia = rnd(&g, nv);
        tj_tensor *a = v[ia], *r;
        g.near_weight = near_w[ia];
        int kind = rnd(&g, 14);
        if (nin && rnd(&g, 16) == 0)
            r = arg_slice_write(&g, in[rnd(&g, nin)], a, exact);
        else if (!exact && conv_ok(a) && rnd(&g, 3) == 0)
            r = conv_block(&g, a);
        else if (kind < 3)
            r = exact ? tj_clamp(num(a), -1000, 1000) : tu_program_unary(&g, a);
        else if (kind < 6) {
            tj_tensor *b = partner(&g, a, v, nv, false);
            r = exact ? binary_int(&g, a, b) : tu_program_binary(&g, a, b);
        } else if (kind == 6)
            r = scalar_op(&g, a, exact);
        else if (kind == 7)
            r = reduce(&g, a, exact);
        else if (kind == 8)
            r = view(&g, a);
        else if (kind == 9)
            r = other(&g, a, partner(&g, a, v, nv, true), p->w, exact);
        else if (kind == 10)
            r = extra(&g, a, p->w, exact);
        else if (kind == 11)
            r = wider_step(&g, a, partner(&g, a, v, nv, true), p->w, exact);
        else if (kind == 12)
            r = tu_program_more(&g, a, partner(&g, a, v, nv, true), exact);
        else
            r = tu_program_views(&g, a, partner(&g, a, v, nv, true), exact);
        if (!r)
            return -1;
        if (p->logging && tj_dtype_of(r) == TJ_F32)   /* no write while compiled calls trace */
            p->f32_seen = true;
        near_w[nv] = near_w[ia];
        v[nv++] = r;
    }
    return tu_program_results(&g, v, nv, nin, out, max);
}
