/* test_programs.c - random programs, compiled against eager.
 *
 * Each seed builds a program of 4-16 steps over three arguments and a
 * captured weight: pointwise ops with broadcasting and dtype promotion,
 * tensor-scalar ops, reductions over any set of dims, softmax, cumsum,
 * views (transpose, permute, slices with steps, expand, flip, squeeze),
 * cat, pad, matmul, casts, and in-place updates of clones, of a clone's
 * slice and of an argument. It runs eagerly and through tj_compile_multi,
 * and every result (dtype, shape, values; NaN and infinities by position)
 * and every argument afterwards (the in-place write-back) must agree. Each
 * program is called three times: on new argument values, then after the
 * captured weight changed in place, so a plan that keeps a stale value
 * fails. Arguments come contiguous, transposed, sliced with a step, or
 * expanded (stride 0); a dim of size 0 now and then.
 *
 * Modes: f32, f64, mixed (f32, f64, f16, bf16, i32 and bool arguments:
 * promotion) and integer (i32, i64 and bool, compared exactly). Floats
 * agree within tol x max(1, max |eager|) per result: fusion changes the
 * order of sums, not the formulas.
 *
 * TJ_PROGRAMS=N runs N programs per mode, TJ_PROGRAMS_SEED=S starts at seed
 * S (a long campaign: TJ_PROGRAMS=5000). A failure names its seed and mode
 * and lists the program's steps.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

enum { M_F32, M_F64, M_MIXED, M_INT, M_DYN, M_GRAD, M_AUTOCAST };
static const char *const mode_name[] = {"f32", "f64", "mixed", "int", "dynamic", "grad", "autocast"};

#define MAX_NUMEL 4096
/* The norms' eps: a row of equal values (a maximum against its own sum,
 * say) normalizes its rounding residue by 1/sqrt(eps); f32 sums in another
 * order leave another residue, so 1e-5 (x316) would flag conditioning, not
 * bugs. */
#define NORM_EPS 1e-2
#define MAX_VALUES 48
#define MAX_OUTS 4

/* One program: its seed and mode, the captured weight, the steps' names. */
typedef struct prog {
    unsigned seed;
    int mode;
    tj_tensor *w;
    bool logging;
    bool f32_seen;   /* an f32 value in an f64 program: f32's tolerance */
    char log[2048];
} prog;

/* The generator's state: a linear congruential sequence (local to a call,
 * so the trace and the eager run make the same choices). */
typedef struct gen {
    unsigned s;
    prog *p;
} gen;

static int rnd(gen *g, int n)
{
    g->s = g->s * 1103515245u + 12345u;
    return (int)((g->s >> 8) % (unsigned)n);
}

static void note(gen *g, const char *fmt, ...)
{
    if (!g->p->logging)
        return;
    size_t len = strlen(g->p->log);
    if (len + 2 >= sizeof g->p->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->p->log + len, sizeof g->p->log - len, fmt, ap);
    va_end(ap);
    len = strlen(g->p->log);
    if (len + 2 < sizeof g->p->log)
        strcat(g->p->log, "; ");
}

static bool is_float(const tj_tensor *t)
{
    tj_dtype d = tj_dtype_of(t);
    return d == TJ_F32 || d == TJ_F64 || d == TJ_F16 || d == TJ_BF16;
}

/* Numbers for arithmetic: bool becomes i32. */
static tj_tensor *num(tj_tensor *t) { return tj_dtype_of(t) == TJ_BOOL ? tj_cast(t, TJ_I32) : t; }

/* Floats for float-only ops (mean, softmax, ...): integers and bool become f32. */
static tj_tensor *flt(tj_tensor *t) { return is_float(t) ? t : tj_cast(t, TJ_F32); }

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

static tj_tensor *unary(gen *g, tj_tensor *a)
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
    case 8: note(g, "sqrt|a|"); return tj_sqrt(tj_abs(num(a)));
    case 9: note(g, "rsqrt(|a|+1)"); return tj_rsqrt(tj_add_s(tj_abs(num(a)), 1));
    case 10: note(g, "erf"); return tj_erf(a);
    case 11: note(g, "gelu"); return tj_gelu(flt(a));
    case 12: note(g, "gelu_tanh"); return tj_gelu_tanh(flt(a));
    case 13: note(g, "silu"); return tj_silu(flt(a));
    case 14: note(g, "softplus"); return tj_softplus(flt(a));
    case 15: note(g, "square"); return tj_square(num(a));
    case 16: note(g, "floor"); return tj_floor(num(a));
    case 17: note(g, "sign"); return tj_sign(num(a));
    case 18: note(g, "clamp"); return tj_clamp(num(a), -1.5, 2);
    case 19: note(g, "expm1(clamp)"); return tj_expm1(tj_clamp(flt(a), -10, 10));
    case 20: note(g, "atan"); return tj_atan(a);
    case 21: note(g, "hardswish"); return tj_hardswish(flt(a));
    case 22: note(g, "leaky_relu"); return tj_leaky_relu(flt(a), 0.1);
    default: note(g, "isnan|gt0"); return tj_logical_or(tj_isnan(flt(a)), tj_gt_s(num(a), 0));
    }
}

static tj_tensor *binary(gen *g, tj_tensor *a, tj_tensor *b)
{
    switch (rnd(g, 14)) {
    case 0: note(g, "add"); return tj_add(num(a), num(b));
    case 1: note(g, "sub"); return tj_sub(num(a), num(b));
    case 2: note(g, "mul"); return tj_mul(num(a), num(b));
    case 3: note(g, "div(|b|+0.5)"); return tj_div(num(a), tj_add_s(tj_abs(num(b)), 0.5));
    case 4: note(g, "maximum"); return tj_maximum(num(a), num(b));
    case 5: note(g, "minimum"); return tj_minimum(num(a), num(b));
    case 6: note(g, "where(b>0)"); return tj_where(tj_gt_s(num(b), 0), a, b);
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
    case 7: note(g, "prod(1+a/100) %d dims", nd);
        return tj_prod(tj_add_s(tj_mul_s(flt(a), 0.01), 1), dims, nd, keep);
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
    int64_t n = tj_size(a, d);
    switch (rnd(g, 9)) {
    case 0: note(g, "transpose %d %d", d, e); return tj_transpose(a, d, e);
    case 1: {
        int perm[8];
        for (int i = 0; i < nd; i++)
            perm[i] = nd - 1 - i;
        note(g, "permute reversed");
        return tj_permute(a, perm);
    }
    case 2:
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
    case 7: note(g, "narrow %d", d); return tj_narrow(a, d, n > 1, n - (n > 1));
    default: note(g, "roll %d by 1", d); return tj_roll(a, (int64_t[]){1}, (int[]){d}, 1);
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
        return tj_add_(r, num(b)) ? NULL : r;
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
        note(g, "nonzero(a > 0), summed (graph break)");
        return tj_sum(tj_nonzero(tj_gt_s(num(a), 0)), NULL, 0, false);
    case 6:
        if (tj_numel(a) > 0) {
            note(g, "add_s item(amax) (graph break)");
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

/* A program's results: its last value and up to two more it made. */
static int pick_results(gen *g, tj_tensor **v, int nv, int nin, tj_tensor **out, int max)
{
    int k = 1 + rnd(g, max < 3 ? max : 3);
    out[0] = v[nv - 1];
    for (int i = 1; i < k; i++)
        out[i] = v[nin + rnd(g, nv - nin)];
    return k;
}

/* The program: steps over the arguments and the weight; 1-3 results. */
static int model(void *ctx, tj_tensor *const *in, int nin, tj_tensor **out, int max)
{
    prog *p = ctx;
    gen g = {.s = p->seed * 2654435761u + (unsigned)p->mode, .p = p};
    bool exact = p->mode == M_INT;
    tj_tensor *v[MAX_VALUES];
    int nv = 0;
    for (int i = 0; i < nin; i++)
        v[nv++] = in[i];
    if (!exact)
        v[nv++] = p->w;
    if (rnd(&g, 4) == 0) {
        note(&g, "arg 1 += 1 in place");
        if (tj_add_s_(in[1], 1))
            return -1;
    }
    int steps = 4 + rnd(&g, 13);
    for (int s = 0; s < steps && nv < MAX_VALUES; s++) {
        tj_tensor *a = v[rnd(&g, nv)], *r;
        int kind = rnd(&g, 11);
        if (!exact && conv_ok(a) && rnd(&g, 3) == 0)
            r = conv_block(&g, a);
        else if (kind < 3)
            r = exact ? tj_clamp(num(a), -1000, 1000) : unary(&g, a);
        else if (kind < 6) {
            tj_tensor *b = partner(&g, a, v, nv, false);
            r = exact ? binary_int(&g, a, b) : binary(&g, a, b);
        } else if (kind == 6)
            r = scalar_op(&g, a, exact);
        else if (kind == 7)
            r = reduce(&g, a, exact);
        else if (kind == 8)
            r = view(&g, a);
        else if (kind == 9)
            r = other(&g, a, partner(&g, a, v, nv, true), p->w, exact);
        else
            r = extra(&g, a, p->w, exact);
        if (!r)
            return -1;
        p->f32_seen |= p->logging && tj_dtype_of(r) == TJ_F32;
        v[nv++] = r;
    }
    return pick_results(&g, v, nv, nin, out, max);
}

/* ---- dynamic shapes ------------------------------------------------------------------------------ */

/* The dynamic mode's programs never read a size: the generator follows each
 * value's shape abstractly (a dim is 1, or base dim k of the arguments), so
 * the dims marked dynamic stay symbolic and one graph serves new sizes. */
typedef struct ashape {
    int nd;
    int d[8];   /* -1: size 1; k >= 0: the size of base dim k */
} ashape;

static bool abcast(const ashape *a, const ashape *b, ashape *r)
{
    int n = a->nd > b->nd ? a->nd : b->nd;
    r->nd = n;
    for (int i = 0; i < n; i++) {
        int da = i < n - a->nd ? -1 : a->d[i - (n - a->nd)];
        int db = i < n - b->nd ? -1 : b->d[i - (n - b->nd)];
        if (da != db && da != -1 && db != -1)
            return false;
        r->d[i] = da == -1 ? db : da;
    }
    return true;
}

static tj_tensor *dyn_step(gen *g, tj_tensor **v, ashape *sh, int nv, ashape *out)
{
    int ia = rnd(g, nv), ib = rnd(g, nv);
    tj_tensor *a = v[ia];
    ashape s = sh[ia];
    int nd = s.nd, d = nd ? rnd(g, nd) : 0;
    *out = s;
    switch (rnd(g, 8)) {
    case 0:
    case 1: return unary(g, a);
    case 2:
    case 3:
        if (abcast(&s, &sh[ib], out))
            return binary(g, a, v[ib]);
        return unary(g, a);
    case 4: {
        if (!nd)
            break;
        bool keep = rnd(g, 2);
        note(g, "sum dim %d keep %d", d, keep);
        out->nd = keep ? nd : nd - 1;
        for (int i = 0, j = 0; i < nd; i++)
            if (i != d)
                out->d[j++] = s.d[i];
            else if (keep)
                out->d[j++] = -1;
        return rnd(g, 2) ? tj_sum(a, &d, 1, keep) : tj_amax(a, &d, 1, keep);
    }
    case 5:
        if (!nd)
            break;
        note(g, "softmax %d", d);
        return tj_softmax(a, d);
    case 6:
        if (nd >= 2) {
            int e = rnd(g, nd);
            note(g, "transpose %d %d", d, e);
            out->d[d] = s.d[e];
            out->d[e] = s.d[d];
            return tj_transpose(a, d, e);
        }
        break;
    default:
        if (nd >= 2) {
            note(g, "matmul(a, a^T)");
            out->d[nd - 1] = s.d[nd - 2];
            return tj_matmul(a, tj_transpose(a, -1, -2));
        }
        if (nd) {
            note(g, "layer_norm last");
            return tj_layer_norm(a, 1, NULL, NULL, NORM_EPS);
        }
        break;
    }
    note(g, "unsqueeze 0");
    out->nd = nd + 1;
    out->d[0] = -1;
    memcpy(out->d + 1, s.d, sizeof(int) * (size_t)nd);
    return tj_unsqueeze(a, 0);
}

/* The dynamic mode's model: abstract shapes from ctx (the arguments'). */
typedef struct dprog {
    prog p;
    ashape arg[3];
} dprog;

static int model_dyn(void *ctx, tj_tensor *const *in, int nin, tj_tensor **out, int max)
{
    dprog *dp = ctx;
    gen g = {.s = dp->p.seed * 2654435761u + 17u, .p = &dp->p};
    tj_tensor *v[MAX_VALUES];
    ashape sh[MAX_VALUES];
    int nv = 0;
    for (int i = 0; i < nin; i++)
        v[nv] = in[i], sh[nv++] = dp->arg[i];
    int steps = 4 + rnd(&g, 13);
    for (int s = 0; s < steps && nv < MAX_VALUES; s++) {
        tj_tensor *r = dyn_step(&g, v, sh, nv, &sh[nv]);
        if (!r)
            return -1;
        v[nv++] = r;
    }
    return pick_results(&g, v, nv, nin, out, max);
}

/* ---- arguments ---------------------------------------------------------------------------------- */

typedef struct argspec {
    int ndim;
    int64_t shape[4];
    tj_dtype dt;
    int layout;   /* 0 contiguous, 1 transposed, 2 sliced with step 2, 3 expanded */
} argspec;

/* Normal (or small integer) values from a seed, in dt, with the layout. */
static tj_tensor *make_arg(const argspec *a, unsigned seed)
{
    int64_t shape[4], n = 1;
    memcpy(shape, a->shape, sizeof shape);
    int lay = a->layout, ed = -1;
    if (lay == 1 && a->ndim < 2)
        lay = 0;
    if (lay == 3) {
        for (int d = 0; d < a->ndim; d++)
            if (shape[d] > 1)
                ed = d;
        if (ed < 0)
            lay = 0;
        else
            shape[ed] = 1;
    }
    if (lay == 1) {
        int64_t t = shape[0];
        shape[0] = shape[a->ndim - 1];
        shape[a->ndim - 1] = t;
    }
    if (lay == 2 && a->ndim)
        shape[a->ndim - 1] *= 2;
    for (int d = 0; d < a->ndim; d++)
        n *= shape[d];
    double *buf = malloc(sizeof(double) * (size_t)(n ? n : 1));
    gen g = {.s = seed};
    for (int64_t i = 0; i < n; i++) {
        if (a->dt == TJ_BOOL || a->dt == TJ_I32 || a->dt == TJ_I64)
            buf[i] = a->dt == TJ_BOOL ? rnd(&g, 2) : rnd(&g, 19) - 9;
        else {
            double u1 = (rnd(&g, 1 << 20) + 0.5) / (1 << 20), u2 = rnd(&g, 1 << 20) / (double)(1 << 20);
            buf[i] = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
        }
    }
    tj_tensor *t = tj_cast(tj_from_data(TJ_F64, a->ndim, shape, buf), a->dt);
    free(buf);
    if (lay == 1)
        t = tj_transpose(t, 0, a->ndim - 1);
    else if (lay == 2 && a->ndim)
        t = tj_slice(t, a->ndim - 1, 1, shape[a->ndim - 1], 2);
    else if (lay == 3)
        t = tj_expand(t, a->ndim, a->shape);
    return t;
}

static tj_dtype arg_dtype(gen *g, int mode)
{
    static const tj_dtype mixed[] = {TJ_F32, TJ_F32, TJ_F64, TJ_F16, TJ_BF16, TJ_I32, TJ_BOOL};
    static const tj_dtype ints[] = {TJ_I32, TJ_I32, TJ_I64, TJ_BOOL};
    switch (mode) {
    case M_F32: return TJ_F32;
    case M_F64: return TJ_F64;
    case M_MIXED: return mixed[rnd(g, 7)];
    default: return ints[rnd(g, 4)];
    }
}

/* Three arguments: a base shape of rank 0-4 (at most 2048 elements, a dim
 * of size 0 one time in 25) and two shapes that broadcast to it. */
static void make_specs(unsigned seed, int mode, argspec *spec)
{
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 31};
    gen g = {.s = seed * 40503u + 7u};
    argspec base = {.ndim = rnd(&g, 5)};
    int64_t n = 1;
    bool image = mode != M_INT && rnd(&g, 6) == 0;   /* (N, C, H, W) for conv blocks */
    if (image) {
        int64_t img[4] = {1 + rnd(&g, 3), 1 + rnd(&g, 6), 3 + rnd(&g, 10), 3 + rnd(&g, 10)};
        base.ndim = 4;
        memcpy(base.shape, img, sizeof img);
    }
    for (int d = 0; d < base.ndim && !image; d++) {
        int64_t s = sizes[rnd(&g, 10)];
        while (n * s > 2048)
            s = s > 1 ? s / 2 : 1;
        base.shape[d] = s;
        n *= s;
    }
    if (base.ndim && rnd(&g, 25) == 0)
        base.shape[rnd(&g, base.ndim)] = 0;
    for (int i = 0; i < 3; i++) {
        spec[i] = base;
        if (i > 0) {
            int drop = rnd(&g, base.ndim + 1);   /* leading dims dropped */
            spec[i].ndim = base.ndim - drop;
            for (int d = 0; d < spec[i].ndim; d++)
                spec[i].shape[d] = rnd(&g, 3) ? base.shape[d + drop] : 1;
        }
        spec[i].dt = arg_dtype(&g, mode);
        spec[i].layout = i == 1 ? (rnd(&g, 2) ? 2 : 0) : rnd(&g, 4);
    }
}

/* ---- comparing ---------------------------------------------------------------------------------- */

/* NULL when got matches want, else why (written into why). */
static const char *mismatch(tj_tensor *got, tj_tensor *want, double tol, char *why, size_t nwhy)
{
    if (tj_dtype_of(got) != tj_dtype_of(want)) {
        snprintf(why, nwhy, "dtype %s, eager %s", tj_dtype_name(tj_dtype_of(got)),
                 tj_dtype_name(tj_dtype_of(want)));
        return why;
    }
    if (tj_ndim(got) != tj_ndim(want)) {
        snprintf(why, nwhy, "%d dims, eager %d", tj_ndim(got), tj_ndim(want));
        return why;
    }
    for (int d = 0; d < tj_ndim(got); d++)
        if (tj_size(got, d) != tj_size(want, d)) {
            snprintf(why, nwhy, "dim %d is %lld, eager %lld", d, (long long)tj_size(got, d),
                     (long long)tj_size(want, d));
            return why;
        }
    int64_t n = tj_numel(want);
    if (!n)
        return NULL;
    const double *gv = tj_data(tj_contiguous(tj_cast(got, TJ_F64)));
    const double *wv = tj_data(tj_contiguous(tj_cast(want, TJ_F64)));
    double scale = 1;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(wv[i]) && fabs(wv[i]) > scale)
            scale = fabs(wv[i]);
    for (int64_t i = 0; i < n; i++) {
        bool ok = isnan(wv[i]) ? isnan(gv[i])
                  : isinf(wv[i]) ? gv[i] == wv[i]
                                 : isfinite(gv[i]) && fabs(gv[i] - wv[i]) <= tol * scale;
        if (!ok) {
            snprintf(why, nwhy, "element %lld is %.9g, eager %.9g (tolerance %.3g)", (long long)i, gv[i],
                     wv[i], tol * scale);
            return why;
        }
    }
    return NULL;
}

static double tolerance(const prog *p, tj_tensor *want, const argspec *spec)
{
    if (p->mode == M_INT || !is_float(want))
        return 0;
    if ((p->mode == M_F64 || p->mode == M_GRAD) && !p->f32_seen)
        return 1e-9;
    if (p->mode == M_AUTOCAST)
        return 2e-2;
    for (int i = 0; i < 3; i++)
        if (spec[i].dt == TJ_F16 || spec[i].dt == TJ_BF16)
            return 2e-2;
    return 2e-4;
}

static int programs_per_mode(int dflt)
{
    const char *e = getenv("TJ_PROGRAMS");
    return e && atoi(e) > 0 ? atoi(e) : dflt;
}

/* Runs count programs of one mode from seed TJ_PROGRAMS_SEED (1); fails on
 * the first disagreement, or when eager refuses more than a fifth of them. */
/* "f32[2,3]" (a static buffer: one use per call). */
static const char *shape_text(const argspec *a)
{
    static char buf[96];
    int n = snprintf(buf, sizeof buf, "%s[", tj_dtype_name(a->dt));
    for (int d = 0; d < a->ndim && n < 80; d++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld", d ? "," : "", (long long)a->shape[d]);
    snprintf(buf + n, sizeof buf - (size_t)n, "]");
    return buf;
}

/* One call of a program eagerly (on ea) and compiled (on ca, a copy of
 * ea); fails the test where they disagree. Returns the results' count
 * (want: eager's, got: compiled's), or -1 when eager refused the program
 * (then the compiled call must fail too). ectx: eager's context (ctx, or
 * a twin with its own weights). */
static int check_call(tj_compiled *c, tj_model_multi_fn fn, void *ectx, prog *p, tj_tensor **ea,
                      tj_tensor **ca, const argspec *spec, int call, tj_tensor **want, tj_tensor **got)
{
    p->log[0] = '\0';
    p->logging = true;
    p->f32_seen = false;
    int nw = fn(ectx, ea, 3, want, MAX_OUTS);
    p->logging = false;
    if (getenv("TJ_PROGRAMS_VERBOSE") && call == 0)
        fprintf(stderr, "%s %u: %s%s\n", mode_name[p->mode], p->seed, nw < 0 ? "refused: " : "",
                nw < 0 ? tj_last_error() : p->log);
    if (nw < 0) {
        tj_clear_error();
        assert_true(tj_call_multi(c, ca, 3, got, MAX_OUTS) < 0);
        tj_clear_error();
        return -1;
    }
    int ng = tj_call_multi(c, ca, 3, got, MAX_OUTS);
    if (ng != nw) {
        char *ex = tj_explain(c);
        fail_msg("%s program %u, call %d: %d results, eager %d (%s)\nsteps: %s\n%s", mode_name[p->mode],
                 p->seed, call, ng, nw, ng < 0 ? tj_last_error() : "", p->log, ex);
        free(ex);
    }
    char why[256];
    for (int i = 0; i < nw + 3; i++) {
        tj_tensor *gt = i < nw ? got[i] : ca[i - nw], *wt = i < nw ? want[i] : ea[i - nw];
        if (mismatch(gt, wt, tolerance(p, wt, spec), why, sizeof why))
            fail_msg("%s program %u, call %d, %s %d: %s\nsteps: %s", mode_name[p->mode], p->seed, call,
                     i < nw ? "result" : "argument", i < nw ? i : i - nw, why, p->log);
    }
    return nw;
}

static unsigned first_seed(void)
{
    const char *e = getenv("TJ_PROGRAMS_SEED");
    return e ? (unsigned)strtoul(e, NULL, 10) : 1;
}

/* A generator that writes mostly invalid programs tests nothing. */
static void check_refusals(int mode, int refused, int count)
{
    if (refused * 5 > count)
        fail_msg("%s: eager refused %d of %d programs (last error: %s)", mode_name[mode], refused, count,
                 tj_last_error());
}

/* Runs count programs of one mode from seed TJ_PROGRAMS_SEED (1); fails on
 * the first disagreement, or when eager refuses more than a fifth of them. */
static void run_mode(int mode, int count)
{
    unsigned seed0 = first_seed();
    count = programs_per_mode(count);
    int refused = 0, threads = tj_num_threads();
    for (unsigned seed = seed0; seed < seed0 + (unsigned)count; seed++) {
        tj_set_num_threads(seed % 4 == 0 ? 1 : threads);   /* the one-thread paths too */
        tj_scope_begin();
        argspec spec[3];
        make_specs(seed, mode == M_AUTOCAST ? M_F32 : mode, spec);
        prog p = {.seed = seed, .mode = mode, .logging = true};
        int64_t wlen = spec[0].ndim ? spec[0].shape[spec[0].ndim - 1] : 1;
        tj_dtype wdt = mode == M_F64 ? TJ_F64 : TJ_F32;   /* f32 roundings need f32's tolerance */
        p.w = tj_keep(make_arg(&(argspec){.ndim = 1, .shape = {wlen}, .dt = wdt}, seed + 99));
        tj_compiled *c = tj_compile_multi(model, &p, &(tj_compile_options){.name = "program", .no_dynamic = true});
        for (int call = 0; call < 3; call++) {
            if (call == 2) {   /* the captured weight changes in place */
                tj_tensor *nw = make_arg(&(argspec){.ndim = 1, .shape = {wlen}, .dt = wdt}, seed + 7);
                assert_int_equal(tj_copy_(p.w, nw), 0);
            }
            tj_tensor *ea[3], *ca[3];
            for (int i = 0; i < 3; i++) {
                ea[i] = make_arg(&spec[i], seed * 3u + (unsigned)(call * 7 + i));
                ca[i] = make_arg(&spec[i], seed * 3u + (unsigned)(call * 7 + i));
                if (getenv("TJ_PROGRAMS_VERBOSE") && call == 0)
                    fprintf(stderr, "  arg %d: %s layout %d\n", i, shape_text(&spec[i]), spec[i].layout);
            }
            tj_tensor *want[MAX_OUTS], *got[MAX_OUTS];
            if (mode == M_AUTOCAST)   /* matmul and conv2d in bf16, eager and compiled */
                assert_int_equal(tj_autocast(TJ_BF16), 0);
            int n = check_call(c, model, &p, &p, ea, ca, spec, call, want, got);
            if (mode == M_AUTOCAST)
                tj_autocast_end();
            if (n < 0) {
                refused++;
                break;
            }
        }
        tj_compiled_free(c);
        tj_release(p.w);
        tj_scope_end();
    }
    tj_set_num_threads(threads);
    check_refusals(mode, refused, count);
}

/* The dynamic mode: f32 arguments of one rank (1-3), their dims of size > 1
 * marked dynamic, called at three sets of sizes (sizes 2-31: 0 and 1 are
 * specialized). */
static void run_dyn(int count)
{
    static const int64_t sizes[] = {2, 3, 5, 7, 9, 16, 31};
    unsigned seed0 = first_seed();
    count = programs_per_mode(count);
    int refused = 0;
    for (unsigned seed = seed0; seed < seed0 + (unsigned)count; seed++) {
        tj_scope_begin();
        gen g = {.s = seed * 7919u + 3u};
        dprog dp = {.p = {.seed = seed, .mode = M_DYN}};
        int nd = 1 + rnd(&g, 3);
        for (int i = 0; i < 3; i++) {
            ashape *a = &dp.arg[i];
            a->nd = i ? nd - rnd(&g, nd) : nd;   /* leading dims dropped */
            for (int k = 0; k < a->nd; k++) {
                int bd = k + (nd - a->nd);
                a->d[k] = i && !rnd(&g, 3) ? -1 : bd;
            }
        }
        tj_compiled *c = tj_compile_multi(model_dyn, &dp, &(tj_compile_options){.name = "dynamic"});
        for (int call = 0; call < 3; call++) {
            int64_t size[3];
            for (int k = 0; k < nd; k++)
                size[k] = sizes[rnd(&g, 7)];
            argspec spec[3];
            tj_tensor *ea[3], *ca[3];
            for (int i = 0; i < 3; i++) {
                /* contiguous: strided arguments stay static (docs/tracing.md) */
                spec[i] = (argspec){.ndim = dp.arg[i].nd, .dt = TJ_F32};
                for (int k = 0; k < spec[i].ndim; k++)
                    spec[i].shape[k] = dp.arg[i].d[k] < 0 ? 1 : size[dp.arg[i].d[k]];
                ea[i] = make_arg(&spec[i], seed * 5u + (unsigned)(call * 7 + i));
                ca[i] = make_arg(&spec[i], seed * 5u + (unsigned)(call * 7 + i));
                for (int k = 0; k < spec[i].ndim; k++)
                    if (dp.arg[i].d[k] >= 0)
                        assert_int_equal(tj_mark_dynamic(ca[i], k), 0);
            }
            if (getenv("TJ_PROGRAMS_VERBOSE"))
                for (int i = 0; i < 3; i++)
                    fprintf(stderr, "  call %d arg %d: %s\n", call, i, shape_text(&spec[i]));
            tj_tensor *want[MAX_OUTS], *got[MAX_OUTS];
            if (check_call(c, model_dyn, &dp, &dp.p, ea, ca, spec, call, want, got) < 0) {
                refused++;
                break;
            }
        }
        if (getenv("TJ_PROGRAMS_VERBOSE")) {
            tj_compiled_stats st;
            tj_compiled_stats_get(c, &st);
            fprintf(stderr, "  %d graphs, %d breaks, %lu eager calls\n", st.graphs, st.breaks, st.eager_calls);
            if (getenv("TJ_PROGRAMS_EXPLAIN")) {
                char *ex = tj_explain(c);
                fprintf(stderr, "%s\n", ex);
                free(ex);
            }
        }
        tj_compiled_free(c);
        tj_scope_end();
    }
    check_refusals(M_DYN, refused, count);
}

/* d loss / d (argument 0 and the weight), loss = sum_i sum(result_i) / (i + 1)
 * over the float results that require grad; 0 when none does (no backward). */
static int backward_of(tj_tensor **res, int n)
{
    tj_tensor *loss = NULL;
    for (int i = 0; i < n; i++)
        if (tj_get_requires_grad(res[i]) && tj_numel(res[i]) > 0) {
            tj_tensor *t = tj_mul_s(tj_sum(tj_cast(res[i], TJ_F64), NULL, 0, false), 1.0 / (i + 1));
            loss = loss ? tj_add(loss, t) : t;
        }
    return !loss ? 0 : tj_backward(loss) == 0 ? 1 : -1;
}

static void check_grad(const prog *p, int call, const char *what, tj_tensor *got, tj_tensor *want,
                       const argspec *spec)
{
    char why[256];
    if (!got != !want)
        fail_msg("grad program %u, call %d: %s's gradient %s compiled, %s eagerly\nsteps: %s", p->seed, call,
                 what, got ? "set" : "missing", want ? "set" : "missing", p->log);
    if (got && mismatch(got, want, tolerance(p, want, spec), why, sizeof why))
        fail_msg("grad program %u, call %d, %s's gradient: %s\nsteps: %s", p->seed, call, what, why, p->log);
}

/* The training mode: f64 programs whose argument 0 and weight require grad;
 * the compiled call's backward (the compiled backward graph where the call
 * made one) against eager's, over two calls. */
static void run_grad(int count)
{
    unsigned seed0 = first_seed();
    count = programs_per_mode(count);
    int refused = 0, backwards = 0;
    for (unsigned seed = seed0; seed < seed0 + (unsigned)count; seed++) {
        tj_scope_begin();
        argspec spec[3];
        make_specs(seed, M_F64, spec);
        spec[0].layout = 0;   /* a leaf */
        int64_t wlen = spec[0].ndim ? spec[0].shape[spec[0].ndim - 1] : 1;
        argspec ws = {.ndim = 1, .shape = {wlen}, .dt = TJ_F64};
        prog pc = {.seed = seed, .mode = M_GRAD}, pe = pc;
        pc.w = tj_keep(make_arg(&ws, seed + 99));
        pe.w = tj_keep(make_arg(&ws, seed + 99));
        assert_int_equal(tj_requires_grad(pc.w, true), 0);
        assert_int_equal(tj_requires_grad(pe.w, true), 0);
        tj_compiled *c = tj_compile_multi(model, &pc, &(tj_compile_options){.name = "grad", .no_dynamic = true});
        for (int call = 0; call < 2; call++) {
            tj_tensor *ea[3], *ca[3], *want[MAX_OUTS], *got[MAX_OUTS];
            for (int i = 0; i < 3; i++) {
                ea[i] = make_arg(&spec[i], seed * 3u + (unsigned)(call * 7 + i));
                ca[i] = make_arg(&spec[i], seed * 3u + (unsigned)(call * 7 + i));
            }
            assert_int_equal(tj_requires_grad(ea[0], true), 0);
            assert_int_equal(tj_requires_grad(ca[0], true), 0);
            int n = check_call(c, model, &pe, &pe, ea, ca, spec, call, want, got);
            if (n < 0) {
                refused++;
                break;
            }
            int be = backward_of(want, n), bc = backward_of(got, n);
            if (be != bc)
                fail_msg("grad program %u, call %d: backward %s eagerly, %s compiled (%s)\nsteps: %s", seed, call,
                         be < 0 ? "failed" : be ? "ran" : "had nothing to do",
                         bc < 0 ? "failed" : bc ? "ran" : "had nothing to do", tj_last_error(), pe.log);
            if (be < 0) {   /* refused alike: a program with an op without a gradient */
                tj_clear_error();
                refused++;
                break;
            }
            check_grad(&pe, call, "argument 0", tj_grad(ca[0]), tj_grad(ea[0]), spec);
            check_grad(&pe, call, "the weight", tj_grad(pc.w), tj_grad(pe.w), spec);
            backwards += be;
            tj_zero_grad(pc.w);
            tj_zero_grad(pe.w);
        }
        tj_compiled_free(c);
        tj_release(pc.w);
        tj_release(pe.w);
        tj_scope_end();
    }
    check_refusals(M_GRAD, refused, count);
    if (backwards * 2 < count)   /* most programs must reach a backward */
        fail_msg("grad: %d backwards in %d programs", backwards, count);
}

static void test_f32_programs(void **state) { (void)state; run_mode(M_F32, 80); }
static void test_f64_programs(void **state) { (void)state; run_mode(M_F64, 40); }
static void test_mixed_programs(void **state) { (void)state; run_mode(M_MIXED, 60); }
static void test_int_programs(void **state) { (void)state; run_mode(M_INT, 40); }
static void test_dynamic_programs(void **state) { (void)state; run_dyn(40); }
static void test_grad_programs(void **state) { (void)state; run_grad(40); }
static void test_autocast_programs(void **state) { (void)state; run_mode(M_AUTOCAST, 40); }

int main(void)
{
    tu_use_build_cache();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32_programs),
        cmocka_unit_test(test_f64_programs),
        cmocka_unit_test(test_mixed_programs),
        cmocka_unit_test(test_int_programs),
        cmocka_unit_test(test_dynamic_programs),
        cmocka_unit_test(test_grad_programs),
        cmocka_unit_test(test_autocast_programs),
    };
    return tu_run_jit_suite("programs", tests, sizeof tests / sizeof tests[0],
                            "random programs compiled against eager");
}
