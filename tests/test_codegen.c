/* test_codegen.c - compiled graphs (fusion, LLVM kernels, plans) against the
 * eager kernels.
 *
 * Every pointwise row of ops.def, compiled alone, must give the eager result
 * bit for bit (the kernels inline the same formulas, codegen/formulas/pw.c;
 * NaN matches any NaN), in every dtype its rule accepts, on large and odd
 * sizes, broadcast and strided inputs. Composite rows are decomposed first;
 * their results stay within a few ulp. Reductions, softmax and layer_norm
 * agree within float rounding. Also: the fallbacks (eager calls inside a
 * plan, groups that cannot be lowered), views, dynamic sizes, the backend
 * switch, dumps, the kernel cache across processes, the asm of P1 (zmm), and
 * the error paths, random graphs (views, reductions, norms, cat) against
 * eager, and threads sharing a plan. Kernels are cached under
 * $TJ_BUILD/kernel-cache.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../codegen/jit.h"
#include "../frontend/fe.h"
#include "util.h"

static const char *self_path;

/* ---- helpers ------------------------------------------------------------------------- */

typedef struct opctx {
    ir_op op;
    ir_attrs a;
} opctx;

static tj_tensor *model_op(void *ctx, tj_tensor *const *args, int nargs)
{
    opctx *c = ctx;
    return fe_apply(c->op, args, nargs, &c->a);
}

/* Distance in ulp of two floats of one dtype (0 when both NaN). */
static double ulps(double a, double b, tj_dtype dt)
{
    if (a != a && b != b)
        return 0;
    if (a == b)
        return 0;
    if (a != a || b != b || isinf(a) || isinf(b))
        return INFINITY;
    double m = fmax(fabs(a), fabs(b));
    double ulp = dt == TJ_F32 ? ldexp(1.0, ilogb((float)m) - 23) : ldexp(1.0, ilogb(m) - 52);
    if (dt == TJ_F32 && m < 1.17549435e-38)
        ulp = ldexp(1.0, -149);
    return fabs(a - b) / ulp;
}

/* Fails unless got and want match element by element within max_ulp or
 * within rtol * |want| + atol (floats; NaN matches NaN), or exactly (other
 * dtypes). max_ulp 0 (and no rtol, atol): bit for bit, -0 apart from 0. */
static void assert_near(tj_tensor *got, tj_tensor *want, double max_ulp, double rtol, double atol,
                        const char *what)
{
    assert_non_null(got);
    assert_non_null(want);
    if (tj_dtype_of(got) != tj_dtype_of(want) || tj_ndim(got) != tj_ndim(want) ||
        memcmp(tj_shape(got), tj_shape(want), sizeof(int64_t) * (size_t)tj_ndim(got)))
        fail_msg("%s: result type differs", what);
    tj_tensor *g = tj_contiguous(got), *w = tj_contiguous(want);
    tj_dtype dt = tj_dtype_of(g);
    int64_t n = tj_numel(g);
    const char *pg = tj_data(g), *pw = tj_data(w);
    for (int64_t i = 0; i < n; i++) {
        double a, b;
        if (dt == TJ_F32)
            a = ((const float *)pg)[i], b = ((const float *)pw)[i];
        else if (dt == TJ_F64)
            a = ((const double *)pg)[i], b = ((const double *)pw)[i];
        else {
            size_t es = tj_dtype_size(dt);
            if (memcmp(pg + (size_t)i * es, pw + (size_t)i * es, es))
                fail_msg("%s: element %lld differs", what, (long long)i);
            continue;
        }
        double u = ulps(a, b, dt);
        bool exact = max_ulp == 0 && rtol == 0 && atol == 0;
        bool ok = u <= max_ulp || (u < INFINITY && fabs(a - b) <= rtol * fabs(b) + atol);
        if (!ok || (exact && a == 0 && signbit(a) != signbit(b)))
            fail_msg("%s: element %lld is %.9g, eager %.9g (%.1f ulp)", what, (long long)i, a, b, u);
    }
}

/* Runs model on args compiled and eagerly and compares. */
static void assert_match(tj_tensor *got, tj_tensor *want, double max_ulp, const char *what)
{
    assert_near(got, want, max_ulp, 0, 0, what);
}

/* Runs model on args compiled and eagerly and compares; expect: a line the
 * compiled entry's explain must hold (NULL: any). */
static void compare_x(tj_model_fn fn, void *ctx, tj_tensor **args, int nargs, double max_ulp,
                      const char *expect, const char *what)
{
    tj_tensor *want = fn(ctx, args, nargs);
    assert_non_null(want);
    tj_compiled *c = tj_compile(fn, ctx, &(tj_compile_options){.name = "t"});
    tj_tensor *got = tj_call(c, args, nargs);
    if (!got)
        fail_msg("%s: %s", what, tj_last_error());
    /* composite rows: decomposed into prims, a few ulp off (more in the far
     * tails of gelu, where the decomposition loses relative accuracy) */
    assert_near(got, want, max_ulp, max_ulp ? 1e-4 : 0, 0, what);
    if (expect)
        tu_assert_explain(c, expect);
    tj_compiled_free(c);
}

static void compare(tj_model_fn fn, void *ctx, tj_tensor **args, int nargs, double max_ulp,
                    const char *what)
{
    compare_x(fn, ctx, args, nargs, max_ulp, NULL, what);
}

#define ONE_KERNEL "compiled: 1 kernel, 0 eager calls"

/* n values of dtype dt spread over a range, with specials every 97th. */
static tj_tensor *values(tj_dtype dt, int64_t n, double scale)
{
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40, 1e30, -1e30,
                                     88.7, -103.0, 1.0, -1.0, 0.5, 1e-7, 3.0, -0.625};
    double *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    assert_non_null(v);
    bool flt = dt == TJ_F32 || dt == TJ_F64;
    for (int64_t i = 0; i < n; i++) {
        uint64_t h = (uint64_t)i * 2654435761u % 20001;
        double x = ((double)h - 10000.0) / 10000.0 * scale;
        if (flt && i % 97 == 5)
            x = special[(i / 97) % (sizeof special / sizeof *special)];
        if (!flt)
            x = dt == TJ_BOOL ? (double)(h & 1) : dt == TJ_U8 ? (double)(h % 200)
                : dt == TJ_I8 ? (double)(h % 256) - 128   /* the whole range: sums wrap */
                : dt == TJ_I16 ? floor(x * 2000) : floor(x * 5);
        v[i] = x;
    }
    tj_tensor *t = tj_cast(tj_from_data(TJ_F64, 1, (int64_t[]){n}, v), dt);
    free(v);
    return t;
}

static int kernels_compiled(void)
{
    cg_jit_stats s;
    cg_jit_stats_get(&s);
    return (int)s.compiled;
}

/* ---- pointwise rows ------------------------------------------------------------------------- */

static const ir_op unary_ops[] = {
#define UNARY(name, rule, decomp, f32, f64, i) OP_##name,
#include "../ir/ops.def"
};
static const ir_op binary_ops[] = {
#define BINARY(name, rule, decomp, f32, f64, i) OP_##name,
#include "../ir/ops.def"
};

static const tj_dtype all_dtypes[] = {TJ_F32, TJ_F64, TJ_I32, TJ_I64, TJ_I16, TJ_I8, TJ_U8, TJ_BOOL};

/* Composite rows are decomposed into prims: a few ulp from the fused formula. */
static double tolerance(ir_op op) { return ir_ops[op].prim ? 0 : 8; }

static void check_unary(ir_op op, tj_dtype dt, int64_t n, bool strided)
{
    opctx c = {.op = op};
    tj_tensor *x = values(dt, strided ? 2 * n : n, 12);
    if (strided)
        x = tj_slice(x, 0, 1, 2 * n, 2);
    tj_tensor *probe = model_op(&c, &x, 1);
    if (!probe) {   /* the rule rejects this dtype */
        tj_clear_error();
        return;
    }
    char what[96];
    snprintf(what, sizeof what, "%s(%s[%lld]%s)", ir_ops[op].name, tj_dtype_name(dt), (long long)n,
             strided ? " strided" : "");
    compare_x(model_op, &c, &x, 1, tolerance(op), ONE_KERNEL, what);
}

static void test_unary_all(void **state)
{
    for (size_t k = 0; k < sizeof unary_ops / sizeof *unary_ops; k++)
        for (size_t d = 0; d < sizeof all_dtypes / sizeof *all_dtypes; d++) {
            tj_scope_begin();
            check_unary(unary_ops[k], all_dtypes[d], 1000003, false);
            tj_scope_end();
        }
}

/* Odd sizes and a strided input reuse each kernel (one per structure). */
static void test_unary_sizes_strided(void **state)
{
    static const ir_op ops[] = {OP_exp, OP_tanh, OP_log1p, OP_sin, OP_erf, OP_abs, OP_isnan};
    static const int64_t sizes[] = {1, 7, 1000};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        for (int d = 0; d < 2; d++)
            for (size_t s = 0; s < 3; s++) {
                tj_scope_begin();
                check_unary(ops[k], d ? TJ_F64 : TJ_F32, sizes[s], false);
                check_unary(ops[k], d ? TJ_F64 : TJ_F32, sizes[s], true);
                tj_scope_end();
            }
}

static void check_binary(ir_op op, tj_dtype da, tj_dtype db, int layout)
{
    opctx c = {.op = op};
    int64_t R = 67, C = 129;
    tj_tensor *a = tj_reshape(values(da, R * C, 6), 2, (int64_t[]){R, C});
    tj_tensor *b;
    switch (layout) {
    case 0: b = tj_reshape(values(db, C, 3), 2, (int64_t[]){1, C}); break;          /* broadcast row */
    case 1: b = tj_transpose(tj_reshape(values(db, R * C, 3), 2, (int64_t[]){C, R}), 0, 1); break;
    default: b = tj_reshape(values(db, R, 3), 2, (int64_t[]){R, 1}); break;         /* broadcast column */
    }
    tj_tensor *args[2] = {a, b};
    tj_tensor *probe = model_op(&c, args, 2);
    if (!probe) {
        tj_clear_error();
        return;
    }
    char what[96];
    snprintf(what, sizeof what, "%s(%s, %s) layout %d", ir_ops[op].name, tj_dtype_name(da),
             tj_dtype_name(db), layout);
    /* integer fmod/remainder run eagerly: a zero divisor is an error */
    bool eager = (op == OP_fmod || op == OP_remainder) && !ir_dtype_is_float(probe->dtype);
    compare_x(model_op, &c, args, 2, tolerance(op), eager ? "1 eager call" : ONE_KERNEL, what);
}

static void test_binary_all(void **state)
{
    for (size_t k = 0; k < sizeof binary_ops / sizeof *binary_ops; k++)
        for (size_t d = 0; d < sizeof all_dtypes / sizeof *all_dtypes; d++) {
            tj_scope_begin();
            check_binary(binary_ops[k], all_dtypes[d], all_dtypes[d], (int)(k % 3));
            tj_scope_end();
        }
}

/* Mixed dtypes (promotion inside the kernel) and wrapped scalars. */
static tj_tensor *model_scalars(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor *x = a[0];
    return tj_add(tj_mul_s(tj_sub_s(x, 0.25), 1.702), tj_pow_s(tj_abs(x), 1.5));
}

static void test_binary_mixed_and_scalars(void **state)
{
    check_binary(OP_add, TJ_F32, TJ_F64, 0);
    check_binary(OP_mul, TJ_I32, TJ_F32, 1);
    check_binary(OP_div, TJ_I64, TJ_I32, 2);
    check_binary(OP_lt, TJ_F64, TJ_I64, 0);
    check_binary(OP_logical_and, TJ_BOOL, TJ_F32, 2);
    check_binary(OP_bitwise_xor, TJ_U8, TJ_I32, 1);
    check_binary(OP_add, TJ_U8, TJ_I8, 0);   /* i16 */
    check_binary(OP_mul, TJ_I8, TJ_I16, 1);
    check_binary(OP_remainder, TJ_I16, TJ_I8, 2);
    tj_tensor *x = values(TJ_F32, 4099, 4);
    compare(model_scalars, NULL, &x, 1, 0, "scalars");
    x = values(TJ_I32, 513, 4);
    compare(model_scalars, NULL, &x, 1, 0, "scalars on i32");
}

/* Formulas of two dtypes in one kernel: the formula bitcode comes in one
 * part per dtype (codegen/bitcode.c), each with its own copy of the helpers
 * and constants it reads (sin's vm_2opi); both parts link into one module. */
static tj_tensor *model_two_parts(void *ctx, tj_tensor *const *a, int n)
{
    return tj_add(tj_sin(a[0]), tj_sin(tj_cast(a[0], TJ_F64)));
}

static void test_formula_parts(void **state)
{
    tj_tensor *x = values(TJ_F32, 1027, 30);
    compare_x(model_two_parts, NULL, &x, 1, 0, ONE_KERNEL, "sin on f32 and f64 in one kernel");
}

/* ---- where, cast, clamp -------------------------------------------------------------------------- */

static tj_tensor *model_where(void *ctx, tj_tensor *const *a, int n)
{
    return tj_where(tj_gt_s(a[1], 0), tj_exp(a[0]), tj_neg(a[0]));
}

static tj_tensor *model_cast(void *ctx, tj_tensor *const *a, int n)
{
    return tj_cast(tj_add_s(a[0], 1), *(tj_dtype *)ctx);
}

static tj_tensor *model_clamp(void *ctx, tj_tensor *const *a, int n)
{
    return tj_clamp(tj_mul_s(a[0], 2), -1.5, 2.25);
}

static void test_where_cast_clamp(void **state)
{
    tj_tensor *args[2] = {tj_reshape(values(TJ_F32, 63 * 65, 5), 2, (int64_t[]){63, 65}),
                          tj_reshape(values(TJ_F64, 63, 1), 2, (int64_t[]){63, 1})};
    compare_x(model_where, NULL, args, 2, 0, ONE_KERNEL, "where");
    for (size_t s = 0; s < sizeof all_dtypes / sizeof *all_dtypes; s++)
        for (size_t d = 0; d < sizeof all_dtypes / sizeof *all_dtypes; d++) {
            tj_dtype to = all_dtypes[d];
            tj_tensor *x = values(all_dtypes[s], 1001, 50);
            char what[64];
            snprintf(what, sizeof what, "cast %s -> %s", tj_dtype_name(all_dtypes[s]), tj_dtype_name(to));
            if (all_dtypes[s] != TJ_BOOL)   /* bool + 1 is rejected */
                compare_x(model_cast, &to, &x, 1, 0, ONE_KERNEL, what);
        }
    tj_tensor *x = values(TJ_F32, 999, 3);
    compare_x(model_clamp, NULL, &x, 1, 0, ONE_KERNEL, "clamp f32");
    x = values(TJ_F64, 999, 3);
    compare_x(model_clamp, NULL, &x, 1, 0, ONE_KERNEL, "clamp f64");
    x = values(TJ_I32, 999, 3);
    compare_x(model_clamp, NULL, &x, 1, 0, ONE_KERNEL, "clamp i32 (decomposed: maximum, minimum)");
}

static tj_tensor *model_cast_only(void *ctx, tj_tensor *const *a, int n)
{
    return tj_cast(a[0], *(tj_dtype *)ctx);
}

/* Float -> integer casts at the edges: truncation toward zero, and NaN, the
 * infinities and values just outside a target's range give its (i32's, for
 * narrower targets) most negative value, as the eager conversion. */
static void test_float_to_int_edges(void **state)
{
    static const double v[] = {2147483647.0, 2147483647.9, 2147483648.0, -2147483648.0, -2147483648.9,
                               -2147483649.0, 9.2233720368547748e18, 9223372036854775808.0,
                               -9223372036854775808.0, -1e19, 127.9, -128.9, 255.5, 256.0, 65535.9,
                               -0.999, 0.999, NAN, INFINITY, -INFINITY, 3e38, -3e38, 1e-45};
    int64_t n = (int64_t)(sizeof v / sizeof *v);
    const tj_dtype to[] = {TJ_I64, TJ_I32, TJ_I16, TJ_I8, TJ_U8};
    const tj_dtype from[] = {TJ_F64, TJ_F32, TJ_F16, TJ_BF16};
    for (size_t f = 0; f < sizeof from / sizeof *from; f++)
        for (size_t t = 0; t < sizeof to / sizeof *to; t++) {
            tj_tensor *x = tj_cast(tj_from_data(TJ_F64, 1, &n, v), from[f]);
            tj_dtype d = to[t];
            char what[64];
            snprintf(what, sizeof what, "cast %s -> %s at the edges", tj_dtype_name(from[f]), tj_dtype_name(d));
            compare_x(model_cast_only, &d, &x, 1, 0, ONE_KERNEL, what);
        }
}

/* ---- reductions, softmax, layer_norm ----------------------------------------------------------- */

typedef struct redctx {
    int kind;   /* 0 sum 1 amax 2 amin 3 mean 4 var 5 prod */
    int ndims;
    bool keep;
} redctx;

static tj_tensor *model_reduce(void *ctx, tj_tensor *const *a, int n)
{
    const redctx *r = ctx;
    int dims[2] = {-1, -2};
    tj_tensor *x = tj_mul_s(a[0], 0.5);
    switch (r->kind) {
    case 0: return tj_sum(x, dims, r->ndims, r->keep);
    case 1: return tj_amax(x, dims, r->ndims, r->keep);
    case 2: return tj_amin(x, dims, r->ndims, r->keep);
    case 3: return tj_mean(x, dims, r->ndims, r->keep);
    case 4: return tj_var(x, dims, r->ndims, 1, r->keep);
    default: return tj_prod(tj_add_s(tj_mul_s(x, 0.01), 1), dims, r->ndims, r->keep);
    }
}

static void check_close(tj_model_fn fn, void *ctx, tj_tensor **args, int n, double rtol, double atol,
                        const char *expect, const char *what)
{
    tj_tensor *want = fn(ctx, args, n);
    tj_compiled *c = tj_compile(fn, ctx, &(tj_compile_options){.name = "t"});
    tj_tensor *got = tj_call(c, args, n);
    if (!got)
        fail_msg("%s: %s", what, tj_last_error());
    assert_near(got, want, 0, rtol, atol, what);
    if (expect)
        tu_assert_explain(c, expect);
    tj_compiled_free(c);
}

static void test_reductions(void **state)
{
    for (int kind = 0; kind < 6; kind++)
        for (int nd = 1; nd <= 2; nd++)
            for (int keep = 0; keep < 2; keep++)
                for (int d = 0; d < 2; d++) {
                    tj_scope_begin();
                    redctx r = {kind, nd, keep};
                    tj_dtype dt = d ? TJ_F64 : TJ_F32;
                    tj_tensor *x = tj_randn(dt, 3, (int64_t[]){5, 37, 101});   /* no +-1e30 to cancel */
                    char what[64];
                    snprintf(what, sizeof what, "reduction %d over %d dims, keepdim %d, %s", kind, nd, keep,
                             tj_dtype_name(dt));
                    check_close(model_reduce, &r, &x, 1, 1e-5, 1e-5, "compiled: 1 kernel", what);
                    tj_scope_end();
                }
}

static tj_tensor *model_amax_nan(void *ctx, tj_tensor *const *a, int n)
{
    return tj_add(tj_amax(a[0], (int[]){1}, 1, true), tj_amin(a[0], (int[]){1}, 1, true));
}

static tj_tensor *model_reduce_int(void *ctx, tj_tensor *const *a, int n)
{
    const redctx *r = ctx;
    int dims[2] = {-1, -2};
    switch (r->kind) {
    case 0: return tj_sum(a[0], dims, r->ndims, r->keep);
    case 1: return tj_amax(a[0], dims, r->ndims, r->keep);
    case 2: return tj_amin(a[0], dims, r->ndims, r->keep);
    case 3: return tj_prod(a[0], dims, r->ndims, r->keep);
    case 4: return tj_any(a[0], dims, r->ndims, r->keep);
    case 5: return tj_all(a[0], dims, r->ndims, r->keep);
    default: return tj_xor_sum(a[0], dims, r->ndims, r->keep);
    }
}

/* Integer and bool reductions compile to one kernel: sum and prod in i64
 * (i8's whole range, so sums of i8 exceed i8; prods wrap as the eager loop's
 * do), amax, amin and xor_sum in the element type, signed or unsigned; any and all of
 * every dtype (floats with NaN, inf and zeros among their values). Exact. */
static void test_reductions_int(void **state)
{
    const tj_dtype dts[] = {TJ_I64, TJ_I32, TJ_I16, TJ_I8, TJ_U8, TJ_BOOL, TJ_F32, TJ_F64};
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
        for (int kind = ir_dtype_is_float(dts[d]) ? 4 : 0; kind < (ir_dtype_is_float(dts[d]) ? 6 : 7); kind++)
            for (int nd = 1; nd <= 2; nd++) {
                tj_scope_begin();
                redctx r = {kind, nd, nd == 2};
                tj_tensor *x = tj_reshape(values(dts[d], 4 * 9 * 67, 7), 3, (int64_t[]){4, 9, 67});
                if (kind == 5)   /* all: mostly true rows, so both results occur */
                    x = tj_ne_s(x, 3);
                char what[64];
                snprintf(what, sizeof what, "reduction %d of %s over %d dims", kind, tj_dtype_name(dts[d]), nd);
                compare_x(model_reduce_int, &r, &x, 1, 0, ONE_KERNEL, what);
                tj_scope_end();
            }
}

static void test_reduction_specials(void **state)
{
    double v[12] = {1, NAN, 3, -2, INFINITY, 5, 0, -0.0, 7, 8, -INFINITY, 1};
    tj_tensor *x = tj_from_data(TJ_F64, 2, (int64_t[]){3, 4}, v);
    check_close(model_amax_nan, NULL, &x, 1, 0, 0, NULL, "amax with NaN and inf");
    x = tj_cast(x, TJ_F32);
    check_close(model_amax_nan, NULL, &x, 1, 0, 0, NULL, "amax f32 with NaN and inf");
    /* over a non-innermost dim: an eager call; over dims that do not merge: the
     * group falls back to eager calls */
    redctx r = {0, 1, false};
    tj_tensor *y = tj_permute(tj_reshape(values(TJ_F32, 6 * 8 * 10, 2), 3, (int64_t[]){6, 8, 10}),
                              (int[]){0, 2, 1});
    r.ndims = 2;
    check_close(model_reduce, &r, &y, 1, 1e-5, 1e-5, NULL, "sum over dims that do not merge");
}

static tj_tensor *model_softmax(void *ctx, tj_tensor *const *a, int n) { return tj_softmax(a[0], -1); }
static tj_tensor *model_log_softmax(void *ctx, tj_tensor *const *a, int n)
{
    return tj_log_softmax(a[0], -1);
}
static tj_tensor *model_layer_norm(void *ctx, tj_tensor *const *a, int n)
{
    return tj_layer_norm(a[0], 1, a[1], a[2], 1e-5);
}

static void test_softmax_layer_norm(void **state)
{
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){129, 1000});
    check_close(model_softmax, NULL, &x, 1, 1e-5, 1e-7, "compiled: 1 kernel, 0 eager calls", "softmax");
    check_close(model_log_softmax, NULL, &x, 1, 1e-5, 1e-5, "compiled: 1 kernel", "log_softmax");
    tj_tensor *xd = tj_cast(x, TJ_F64);
    check_close(model_softmax, NULL, &xd, 1, 1e-12, 1e-15, "compiled: 1 kernel, 0 eager calls", "softmax f64");
    tj_tensor *args[3] = {tj_randn(TJ_F32, 2, (int64_t[]){77, 1024}), tj_randn(TJ_F32, 1, (int64_t[]){1024}),
                          tj_randn(TJ_F32, 1, (int64_t[]){1024})};
    check_close(model_layer_norm, NULL, args, 3, 1e-4, 1e-5, "compiled: 1 kernel, 0 eager calls", "layer_norm");
    args[0] = tj_transpose(tj_randn(TJ_F32, 2, (int64_t[]){1024, 33}), 0, 1);   /* strided rows */
    check_close(model_layer_norm, NULL, args, 3, 1e-4, 1e-5, NULL, "layer_norm of a transposed input");
}

/* ---- plans: eager calls, views, outputs, sizes, backend ------------------------------------------ */

static tj_tensor *model_mlp(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor *h = tj_gelu_tanh(tj_linear(a[0], a[1], a[2]));
    return tj_add(tj_mul_s(h, 0.5), tj_sum(h, (int[]){0}, 1, true));
}

static tj_tensor *model_views(void *ctx, tj_tensor *const *a, int n)
{
    tj_tensor *t = tj_transpose(a[0], 0, 1);                     /* [C, R] */
    tj_tensor *e = tj_exp(tj_mul_s(t, 0.1));
    tj_tensor *s = tj_slice(e, 0, 1, tj_size(e, 0), 3);         /* every third row */
    tj_tensor *r = tj_reshape(s, 1, (int64_t[]){-1});              /* needs a copy */
    tj_tensor *u = tj_unsqueeze(tj_expand(tj_unsqueeze(a[1], 0), 2, (int64_t[]){tj_size(s, 0), tj_size(s, 1)}), 0);
    return tj_add(tj_reshape(r, 3, (int64_t[]){1, tj_size(s, 0), tj_size(s, 1)}), u);
}

static tj_tensor *model_transposed_out(void *ctx, tj_tensor *const *a, int n)
{
    return tj_transpose(tj_tanh(a[0]), 0, 1);
}

static tj_tensor *model_identity(void *ctx, tj_tensor *const *a, int n) { return a[0]; }

static void test_plan_eager_calls_and_views(void **state)
{
    tj_tensor *args[3] = {tj_randn(TJ_F32, 2, (int64_t[]){33, 64}), tj_randn(TJ_F32, 2, (int64_t[]){48, 64}),
                          tj_randn(TJ_F32, 1, (int64_t[]){48})};
    check_close(model_mlp, NULL, args, 3, 1e-5, 1e-5, "eager call", "matmul + pointwise + sum");
    tj_tensor *v[2] = {tj_randn(TJ_F32, 2, (int64_t[]){10, 30}), tj_randn(TJ_F32, 1, (int64_t[]){10})};
    compare(model_views, NULL, v, 2, 0, "views");
    compare(model_transposed_out, NULL, v, 1, 0, "a view as the result");
    compare(model_identity, NULL, v, 1, 0, "an input as the result");
    tj_tensor *e = tj_zeros(TJ_F32, 2, (int64_t[]){0, 5});
    compare(model_transposed_out, NULL, &e, 1, 0, "empty");
}

static tj_tensor *model_rowwise(void *ctx, tj_tensor *const *a, int n)
{
    return tj_sub(tj_exp(a[0]), tj_sum(a[0], (int[]){-1}, 1, true));
}

/* One graph with a symbolic dim serves every size; its kernels compile once. */
static void test_dynamic_sizes_reuse_kernels(void **state)
{
    tj_compiled *c = tj_compile(model_rowwise, NULL, &(tj_compile_options){.name = "dyn"});
    int before = -1;
    for (int64_t rows = 3; rows <= 300; rows *= 3) {
        tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){rows, 17});
        tj_tensor *got = tj_call(c, &x, 1);
        assert_near(got, model_rowwise(NULL, &x, 1), 0, 1e-5, 1e-5, "rowwise");
        if (rows == 27)
            before = kernels_compiled();
    }
    assert_int_equal(kernels_compiled(), before);   /* sizes 81 and 243 compiled nothing */
    tj_compiled_free(c);
}

static void test_backend_eager(void **state)
{
    setenv("TJIT_BACKEND", "eager", 1);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){5, 1000});
    tj_compiled *c = tj_compile(model_rowwise, NULL, &(tj_compile_options){.name = "be"});
    int before = kernels_compiled();
    tj_tensor *got = tj_call(c, &x, 1);
    unsetenv("TJIT_BACKEND");
    tu_assert_close(got, model_rowwise(NULL, &x, 1), 0, 0);
    assert_int_equal(kernels_compiled(), before);
    char *t = tj_explain(c);
    assert_null(strstr(t, "compiled:"));
    free(t);
    tj_compiled_free(c);
}

static tj_tensor *model_gather(void *ctx, tj_tensor *const *a, int n)
{
    return tj_exp(tj_gather(tj_tanh(a[0]), 1, a[1]));
}

/* An eager call that fails inside a plan reports like the graph executor. */
static void test_plan_runtime_error(void **state)
{
    tj_tensor *args[2] = {tj_randn(TJ_F32, 2, (int64_t[]){3, 4}),
                          tj_from_data(TJ_I64, 2, (int64_t[]){3, 1}, (int64_t[]){0, 1, 2})};
    tj_compiled *c = tj_compile(model_gather, NULL, &(tj_compile_options){.name = "g"});
    tu_assert_close(tj_call(c, args, 2), model_gather(NULL, args, 2), 0, 0);
    args[1] = tj_from_data(TJ_I64, 2, (int64_t[]){3, 1}, (int64_t[]){0, 9, 2});
    tu_assert_error(tj_call(c, args, 2), "gather", "out of range", "graph @g", NULL);
    tj_compiled_free(c);
}

static void test_dumps(void **state)
{
    char dir[] = "/tmp/tjit-dump-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TJIT_DUMP", "prims,fused,kernels,llvm,asm", 1);
    setenv("TJIT_DUMP_DIR", dir, 1);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 8});
    tj_compiled *c = tj_compile(model_softmax, NULL, &(tj_compile_options){.name = "dumped"});
    assert_non_null(tj_call(c, &x, 1));
    unsetenv("TJIT_DUMP");
    unsetenv("TJIT_DUMP_DIR");
    tj_compiled_free(c);
    char cmd[512], out[256] = "";
    snprintf(cmd, sizeof cmd, "cd %s && grep -l 'reduce max' *kernels.txt && grep -c zmm *asm.s && "
             "grep -l 'define void @tjk_' *llvm.ll && grep -l 'kernel 0 rows' *fused.txt && "
             "grep -l amax *prims.tir; rm -rf %s", dir, dir);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(out, "dumped.kernels.txt"));   /* named by what they hold */
}

/* A relu backward and its bias gradient (a training step's): y =
 * where(m, dy, 0), m the forward's saved bool mask, stored and summed over
 * the batch (dim 0: a column kernel) or over the row (dim 1). The reduction
 * stage stores y as it sums it (lower.c, cache_in_row; before, only a value
 * with a costly call was), so no later stage reads dy and m again: the
 * kernel's text has the store in stage 0 and no stage 1; values as eager's. */
static int model_relu_bwd(void *ctx, tj_tensor *const *a, int n, tj_tensor **outs, int max)
{
    int dim = *(const int *)ctx;
    outs[0] = tj_where(a[1], a[0], tj_zeros_like(a[0]));
    outs[1] = tj_sum(outs[0], &dim, 1, false);
    return 2;
}

static void test_reduced_value_stored_in_stage(void **state)
{
    for (int dim = 0; dim < 2; dim++) {
        char dir[] = "/tmp/tjit-dump-XXXXXX";
        assert_non_null(mkdtemp(dir));
        setenv("TJIT_DUMP", "kernels", 1);
        setenv("TJIT_DUMP_DIR", dir, 1);
        tj_tensor *args[2] = {tj_randn(TJ_F32, 2, (int64_t[]){48, 40}),
                              tj_gt_s(tj_randn(TJ_F32, 2, (int64_t[]){48, 40}), 0)};
        tj_compiled *c = tj_compile_multi(model_relu_bwd, &dim, &(tj_compile_options){.name = "rb"});
        tj_tensor *got[2], *want[2];
        assert_int_equal(tj_call_multi(c, args, 2, got, 2), 2);
        unsetenv("TJIT_DUMP");
        unsetenv("TJIT_DUMP_DIR");
        assert_int_equal(model_relu_bwd(&dim, args, 2, want, 2), 2);
        tu_assert_close(got[0], want[0], 0, 0);
        tu_assert_close(got[1], want[1], 1e-6, 1e-6);
        tj_compiled_free(c);
        char cmd[512], out[256] = "";
        snprintf(cmd, sizeof cmd, "cd %s && grep -c 'stage 0: reduce sum %%[0-9]*; store' *kernels.txt; "
                 "grep -c 'stage 1' *kernels.txt; rm -rf %s", dir, dir);
        FILE *p = popen(cmd, "r");
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = '\0';
        pclose(p);
        if (strcmp(out, "1\n0\n"))
            fail_msg("dim %d: want the store in the reduction stage and no stage 1; grep counts:\n%s",
                     dim, out);
    }
}

/* ---- random graphs ------------------------------------------------------------------------------ */

static unsigned rng_state;

static int rnd(int n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (int)((rng_state >> 16) % (unsigned)n);
}

static bool is_2d(tj_tensor *a) { return tj_ndim(a) == 2 && tj_size(a, 0) > 1 && tj_size(a, 1) > 1; }

/* A random chain over x [13,37] (maybe transposed), c [13,1], r [37]:
 * pointwise ops with broadcasting, row reductions, softmax, layer_norm,
 * transposes around a pointwise op, reshapes, slices and cat. */
static tj_tensor *model_random(void *ctx, tj_tensor *const *in, int n)
{
    rng_state = *(unsigned *)ctx;
    tj_tensor *v[40] = {in[0], in[1], in[2]};
    int nv = 3, steps = 3 + rnd(10);
    for (int s = 0; s < steps; s++) {
        tj_tensor *a = v[rnd(nv)], *b = v[rnd(nv)], *r;
        bool full = tj_ndim(a) == 2 && tj_size(a, 0) == 13 && tj_size(a, 1) == 37;
        switch (rnd(12)) {
        case 0: r = tj_tanh(a); break;
        case 1: r = tj_exp(tj_mul_s(a, 0.1)); break;
        case 2: r = tj_add(a, b); break;
        case 3: r = tj_mul(a, b); break;
        case 4: r = tj_maximum(a, tj_neg(b)); break;
        case 5: r = is_2d(a) ? tj_sum(a, (int[]){1}, 1, true) : tj_abs(a); break;
        case 6: r = is_2d(a) ? tj_unsqueeze(tj_amax(a, (int[]){1}, 1, false), 1) : tj_sin(a); break;
        case 7: r = is_2d(a) ? tj_transpose(tj_sigmoid(tj_transpose(a, 0, 1)), 0, 1) : tj_sub(a, b); break;
        case 8: r = is_2d(a) ? tj_softmax(a, -1) : tj_where(tj_gt_s(a, 0), a, b); break;
        case 9: r = is_2d(a) ? tj_layer_norm(a, 1, NULL, NULL, 1e-5) : tj_square(a); break;
        case 10:
            r = full ? tj_reshape(tj_exp(tj_reshape(tj_mul_s(a, 0.1), 1, (int64_t[]){13 * 37})), 2,
                                  (int64_t[]){13, 37})
                     : tj_relu(a);
            break;
        default:
            r = full ? tj_cat((tj_tensor *[]){tj_slice(tj_tanh(a), 1, 0, 20, 1), tj_slice(a, 1, 20, 37, 1)}, 2, 1)
                     : tj_atan(a);
            break;
        }
        v[nv++] = r;
    }
    tj_tensor *out = tj_add(v[nv - 1], v[rnd(nv)]);
    return tj_add(out, tj_zeros(TJ_F64, 2, (int64_t[]){13, 37}));
}

static void test_random_graphs(void **state)
{
    for (unsigned seed = 1; seed <= 120; seed++) {
        tj_scope_begin();
        tj_tensor *x = seed % 2 ? tj_randn(TJ_F64, 2, (int64_t[]){13, 37})
                                : tj_transpose(tj_randn(TJ_F64, 2, (int64_t[]){37, 13}), 0, 1);
        tj_tensor *in[3] = {x, tj_randn(TJ_F64, 2, (int64_t[]){13, 1}), tj_randn(TJ_F64, 1, (int64_t[]){37})};
        unsigned s = seed * 7919u;
        char what[32];
        snprintf(what, sizeof what, "random graph %u", seed);
        check_close(model_random, &s, in, 3, 1e-9, 1e-9, "compiled:", what);
        tj_scope_end();
    }
}

/* ---- threads ------------------------------------------------------------------------------------ */

typedef struct call_arg {
    tj_compiled *c;
    tj_tensor *x;
    tj_tensor *out;
} call_arg;

static void *call_thread(void *p)
{
    call_arg *a = p;
    tj_scope_begin();
    tj_tensor *y = tj_call(a->c, &a->x, 1);
    a->out = y ? tj_keep(y) : NULL;
    tj_scope_end();
    return NULL;
}

/* Two threads make the first call at once: one builds the plan, both run it. */
static void test_threads_share_a_plan(void **state)
{
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){300, 301});
    tj_compiled *c = tj_compile(model_softmax, NULL, &(tj_compile_options){.name = "mt"});
    call_arg a[2] = {{c, x, NULL}, {c, x, NULL}};
    tu_run_threads(2, call_thread, a, sizeof *a);
    tj_tensor *want = model_softmax(NULL, &x, 1);
    for (int i = 0; i < 2; i++) {
        assert_near(a[i].out, want, 0, 1e-5, 1e-8, "threads");
        tj_release(a[i].out);
    }
    tu_assert_explain(c, "compiled: 1 kernel, 0 eager calls");
    tj_compiled_free(c);
}

/* ---- hand-built kernels: the cache across processes, asm, errors ------------------------------ */

/* P1's kernel: y = tanh(x) * sigmoid(c * x) + 0.5 x, built directly. */
static void p1_kernel(cg_kernel *k, double c)
{
    cg_kernel_init(k, CG_TILES, 0);
    int bx = cg_add_buf(k, TJ_F32, false, 1), by = cg_add_buf(k, TJ_F32, true, 1);
    int x = cg_add_load(k, bx);
    int h = cg_add_cvt(k, cg_add_const(k, TJ_F64, 0.5), TJ_F32);
    int s = cg_add_cvt(k, cg_add_const(k, TJ_F64, c), TJ_F32);
#define CALL(o, p, q) cg_add_inst(k, &(cg_inst){.k = CG_CALL, .dt = TJ_F32, .op = o, .cdt = TJ_F32, .a = {p, q}})
    int y = CALL(OP_add, CALL(OP_mul, CALL(OP_tanh, x, 0), CALL(OP_sigmoid, CALL(OP_mul, x, s), 0)),
                 CALL(OP_mul, x, h));
#undef CALL
    cg_add_store(k, y, by);
}

static void run_p1(cg_kernel_fn fn, double c)
{
    enum { N = 70001 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - N / 2) / 3000.0f;
    int64_t sz[5] = {N, N, 1, 1, 1};
    fn((char *[]){(char *)x, (char *)y}, 0, 1, sz);
    tj_tensor *xt = tj_from_data(TJ_F32, 1, (int64_t[]){N}, x);
    tj_tensor *want = tj_add(tj_mul(tj_tanh(xt), tj_sigmoid(tj_mul_s(xt, c))), tj_mul_s(xt, 0.5));
    assert_match(tj_from_data(TJ_F32, 1, (int64_t[]){N}, y), want, 0, "hand-built P1 kernel");
    free(x);
    free(y);
}

/* cg_jit_get_all compiles each text once, however often it is asked for
 * (copies are found loaded after the others are compiled, not compiled twice
 * at once on two threads), longest first, and fills every slot in the
 * caller's order. Kernels new to this process: constants no other test uses. */
static void test_get_all_queue(void **state)
{
    enum { N = 7 };
    double c0 = 2.0 + (double)(getpid() % 1000) / 1024.0;
    double cs[N] = {c0, c0 + 1, c0, c0 + 2, c0 + 1, c0, c0 + 3};   /* 4 texts */
    cg_kernel *ks = calloc(N, sizeof *ks);
    const cg_kernel *kp[N];
    for (int i = 0; i < N; i++) {
        p1_kernel(&ks[i], cs[i]);
        kp[i] = &ks[i];
    }
    /* a longer kernel last: a second tanh chain on the result */
    int y = ks[N - 1].stages[0].st_val[0];
    for (int r = 0; r < 6; r++)
        y = cg_add_inst(&ks[N - 1], &(cg_inst){.k = CG_CALL, .dt = TJ_F32, .op = OP_tanh, .cdt = TJ_F32, .a = {y}});
    ks[N - 1].stages[0].st_val[0] = y;
    cg_compiled out[N];
    cg_cache *mem = cg_cache_new(NULL);
    cg_jit_stats a, b;
    cg_jit_stats_get(&a);
    assert_int_equal(cg_jit_get_all(kp, N, mem, 0, out), 0);
    cg_jit_stats_get(&b);
    assert_int_equal(b.compiled - a.compiled, 4);
    assert_int_equal(b.reused - a.reused, 3);
    for (int i = 0; i < N; i++) {
        assert_non_null(out[i].fn);
        for (int j = 0; j < i; j++)
            if (cs[j] == cs[i] && i != N - 1 && j != N - 1) {
                assert_ptr_equal(out[i].fn, out[j].fn);
                assert_int_equal(out[i].origin, CG_FROM_LOADED);
            }
    }
    for (int i = 0; i < N - 1; i++)
        run_p1(out[i].fn, cs[i]);
    for (int i = 0; i < N; i++) {
        cg_jit_release(out[i].fn);
        cg_compiled_clear(&out[i]);
    }
    cg_cache_free(mem);
    free(ks);
}

/* Compiled in a child process (a fresh cache, a fresh JIT), loaded here
 * from the disk cache. */
static void test_kernel_cache_across_processes(void **state)
{
    char dir[] = "/tmp/tjit-cache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    double c = 1.0 + (double)(getpid() % 1000) / 1024.0;   /* a kernel new to both caches */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --jit-child %s %.17g compile", self_path, dir, c);
    assert_int_equal(system(cmd), 0);
    cg_cache *cache = cg_cache_new(dir);
    cg_kernel k;
    p1_kernel(&k, c);
    cg_compiled out;
    assert_int_equal(cg_jit_get(&k, cache, 0, &out), 0);
    assert_int_equal(out.origin, CG_FROM_CACHE);
    cg_cache_stats st;
    cg_cache_stats_get(cache, &st);
    assert_int_equal(st.disk_hits, 1);
    run_p1(out.fn, c);
    cg_compiled_clear(&out);
    assert_int_equal(cg_jit_get(&k, cache, 0, &out), 0);   /* now loaded in this process */
    assert_int_equal(out.origin, CG_FROM_LOADED);
    cg_compiled_clear(&out);
    cg_cache_free(cache);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* TJIT_PERF_MAP names the kernel's two functions (wrapper and body) for
 * perf: "START SIZE name" lines, in a child with a fresh JIT. */
static void test_perf_map(void **state)
{
    char dir[] = "/tmp/tjit-perfmap-XXXXXX";
    assert_non_null(mkdtemp(dir));
    double c = 2.0 + (double)(getpid() % 1000) / 1024.0;
    char cmd[1024], map[600], line[512];
    snprintf(map, sizeof map, "%s/map", dir);
    snprintf(cmd, sizeof cmd, "TJIT_PERF_MAP=%s %s --jit-child %s %.17g compile", map, self_path, dir, c);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(map, "r");
    assert_non_null(f);
    int wrapper = 0, body = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long start, size;
        char name[256];
        assert_int_equal(sscanf(line, "%llx %llx %255s", &start, &size, name), 3);
        assert_true(start != 0 && size > 0 && !strncmp(name, "tjk_", 4));
        body += strstr(name, ".body") != NULL;
        wrapper += strstr(name, ".body") == NULL;
    }
    fclose(f);
    assert_int_equal(wrapper, 1);
    assert_int_equal(body, 1);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Runs P1's kernel y = f(x) on a fixed x and compares it with the eager ops,
 * bit for bit; 0 when equal (for child processes: no cmocka asserts). */
static int p1_matches_eager(cg_kernel_fn fn, double c)
{
    enum { N = 4099 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - N / 2) / 300.0f;
    int64_t sz[5] = {N, N, 1, 1, 1};
    fn((char *[]){(char *)x, (char *)y}, 0, 1, sz);
    tj_scope_begin();
    tj_tensor *xt = tj_from_data(TJ_F32, 1, (int64_t[]){N}, x);
    tj_tensor *want = tj_add(tj_mul(tj_tanh(xt), tj_sigmoid(tj_mul_s(xt, c))), tj_mul_s(xt, 0.5));
    const float *w = want ? tj_data(want) : NULL;
    int bad = !w;
    for (int i = 0; w && i < N; i++)
        bad |= memcmp(&w[i], &y[i], sizeof y[i]) != 0;
    tj_scope_end();
    return bad;
}

/* A child process: gets P1's kernel (constant c) through a fresh cache on dir
 * and a fresh JIT; exits 0 when it came from `expect` ("compile" or "cache")
 * and computes what eager computes. */
static int jit_child(const char *dir, const char *cs, const char *expect)
{
    double c = strtod(cs, NULL);
    cg_cache *cache = cg_cache_new(dir);
    cg_kernel k;
    p1_kernel(&k, c);
    cg_compiled out;
    cg_origin want = !strcmp(expect, "cache") ? CG_FROM_CACHE : CG_FROM_COMPILE;
    int rc = cg_jit_get(&k, cache, 0, &out);
    if (rc == 0) {
        rc = out.origin != want || p1_matches_eager(out.fn, c);
        cg_compiled_clear(&out);
    }
    cg_cache_free(cache);
    return rc;
}

static void run_child(const char *dir, double c, const char *expect)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --jit-child %s %.17g %s", self_path, dir, c, expect);
    if (system(cmd) != 0)
        fail_msg("`%s` failed", cmd);
}

/* Damages the one cache entry in dir: flips a payload byte, or truncates it. */
static void damage_entry(const char *dir, bool truncate_it)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             truncate_it ? "f=$(ls %s/*.o) && truncate -s 100 \"$f\""
                         : "f=$(ls %s/*.o) && printf '\\377' | dd of=\"$f\" bs=1 seek=400 "
                           "conv=notrunc status=none",
             dir);
    assert_int_equal(system(cmd), 0);
}

/* A corrupt or truncated entry is detected and recompiled, results stay
 * right, and the entry is replaced (the next process loads it again). */
static void test_kernel_cache_damage(void **state)
{
    (void)state;
    char dir[] = "/tmp/tjit-cache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    double c = 2.0 + (double)(getpid() % 1000) / 1024.0;   /* a kernel new to every cache */
    run_child(dir, c, "compile");
    run_child(dir, c, "cache");
    for (int t = 0; t < 2; t++) {
        damage_entry(dir, t == 1);
        run_child(dir, c, "compile");   /* detected, ignored, recompiled, replaced */
        run_child(dir, c, "cache");
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The kernel is vectorized at the host's full width: zmm with AVX-512, ymm
 * with AVX2 (LLVM targets the host CPU's features). */
static void test_p1_asm_vectorized(void **state)
{
    cg_kernel k;
    p1_kernel(&k, 1.702);
    cg_compiled out;
    cg_cache *mem = cg_cache_new(NULL);
    assert_int_equal(cg_jit_get(&k, mem, CG_EMIT_ASM | CG_EMIT_LLVM, &out), 0);
    cg_cache_free(mem);
    assert_non_null(out.asm_text);
    const char *reg = __builtin_cpu_supports("avx512f") ? "zmm" : "ymm";
    if (!strstr(out.asm_text, reg))
        fail_msg("P1's kernel has no %s register: not vectorized at the host's width", reg);
    assert_non_null(strstr(out.asm_text, "vmulps"));
    assert_null(strstr(out.asm_text, "call"));           /* every formula inlined */
    assert_non_null(strstr(out.llvm, "noalias"));
    run_p1(out.fn, 1.702);
    cg_compiled_clear(&out);
}

static void test_kernel_errors(void **state)
{
    cg_kernel k;
    cg_compiled out;
    cg_kernel_init(&k, CG_TILES, 0);
    int b = cg_add_buf(&k, TJ_F32, true, 1);
    cg_add_store(&k, cg_add_inst(&k, &(cg_inst){.k = CG_CVT, .dt = TJ_F32, .a = {5}}), b);
    assert_int_equal(cg_jit_get(&k, NULL, 0, &out), -1);
    assert_non_null(strstr(out.err, "operand not defined"));
    cg_compiled_clear(&out);

    /* f16/bf16 values reduce in f32 (lower.c widens them); a half accumulator is refused */
    cg_kernel_init(&k, CG_ROWS, 1);
    int in = cg_add_buf(&k, TJ_BF16, false, 1), o = cg_add_buf(&k, TJ_BF16, true, 0);
    cg_add_row_store(&k, cg_add_reduce(&k, CG_SUM, cg_add_load(&k, in)), o);
    assert_int_equal(cg_jit_get(&k, NULL, 0, &out), -1);
    assert_non_null(strstr(out.err, "f16/bf16"));
    cg_compiled_clear(&out);

    cg_kernel_init(&k, CG_TILES, 0);
    in = cg_add_buf(&k, TJ_F32, false, 1);
    o = cg_add_buf(&k, TJ_F32, true, 1);
    int r = cg_add_reduce(&k, CG_SUM, cg_add_load(&k, in));
    cg_add_store(&k, r, o);
    assert_int_equal(cg_jit_get(&k, NULL, 0, &out), -1);   /* reductions need a rows kernel */
    assert_non_null(strstr(out.err, "reduction"));
    cg_compiled_clear(&out);
}

int main(int argc, char **argv)
{
    self_path = argv[0];
    if (argc == 5 && !strcmp(argv[1], "--jit-child"))
        return jit_child(argv[2], argv[3], argv[4]);
    tu_use_build_cache();
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_unary_all),
        T(test_unary_sizes_strided),
        T(test_binary_all),
        T(test_binary_mixed_and_scalars),
        T(test_formula_parts),
        T(test_where_cast_clamp),
        T(test_float_to_int_edges),
        T(test_reductions),
        T(test_reductions_int),
        T(test_reduction_specials),
        T(test_softmax_layer_norm),
        T(test_plan_eager_calls_and_views),
        T(test_dynamic_sizes_reuse_kernels),
        T(test_backend_eager),
        T(test_plan_runtime_error),
        T(test_dumps),
        T(test_reduced_value_stored_in_stage),
        T(test_random_graphs),
        T(test_threads_share_a_plan),
        T(test_perf_map),
        T(test_get_all_queue),
        T(test_kernel_cache_across_processes), T(test_kernel_cache_damage),
        T(test_p1_asm_vectorized),
        T(test_kernel_errors),
#undef T
    };
    return tu_run_jit_suite("codegen", tests, sizeof tests / sizeof tests[0], "compiled graphs run on the graph executor");
}
