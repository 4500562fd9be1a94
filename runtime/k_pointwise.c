/* k_pointwise.c - eager kernels of the pointwise ops: every UNARY and BINARY
 * row of ir/ops.def (rt_k_unary, rt_k_binary), plus where, lerp, clamp,
 * softplus, add/sub with alpha, div with a rounding mode, cast.
 *
 * The loops of the UNARY/BINARY rows are generated from the rows themselves:
 * for each compute dtype the row's rule allows, one contiguous loop (binary:
 * also vector-scalar and scalar-vector, but for the BY_BLOCK_ rows, whose
 * scalar operand is repeated over a block) whose body is the row's f32, f64 or
 * int formula (ir/vmath.h), cloned for AVX-512/AVX2. Tables indexed by
 * [op][dtype] dispatch them. The iterator (iter.h) broadcasts and coalesces;
 * a row that is strided, or whose dtype differs from the compute dtype (mixed
 * inputs), is converted block by block into a stack buffer first.
 */
#include <math.h>
#include <string.h>

#include "iter.h"
#include "kernels.h"
#include "../ir/vmath.h"

#pragma GCC diagnostic ignored "-Wtype-limits"   /* int formulas on u8: x < 0 */

/* ---- what the generator needs to know per dtype and rule ---------------------- */
#define CT_BOOL uint8_t
#define CT_U8 uint8_t
#define CT_I8 int8_t
#define CT_I16 int16_t
#define CT_I32 int32_t
#define CT_I64 int64_t
#define CT_F32 float
#define CT_F64 double
#define CT(D) CT_##D

/* The formula column a compute dtype uses. */
#define PICK_F32(f32, f64, i) f32
#define PICK_F64(f32, f64, i) f64
#define PICK_BOOL(f32, f64, i) i
#define PICK_U8(f32, f64, i) i
#define PICK_I8(f32, f64, i) i
#define PICK_I16(f32, f64, i) i
#define PICK_I32(f32, f64, i) i
#define PICK_I64(f32, f64, i) i

/* Compute dtypes of each rule (ir/ir.h): G(D, ...) for each. */
#define CD_FLOAT(G, ...) G(F32, __VA_ARGS__) G(F64, __VA_ARGS__)
#define CD_INT(G, ...) G(U8, __VA_ARGS__) G(I8, __VA_ARGS__) G(I16, __VA_ARGS__) \
    G(I32, __VA_ARGS__) G(I64, __VA_ARGS__)
#define CD_SAME(G, ...) CD_FLOAT(G, __VA_ARGS__) CD_INT(G, __VA_ARGS__)
#define CD_ALL(G, ...) CD_SAME(G, __VA_ARGS__) G(BOOL, __VA_ARGS__)
#define CD_BITWISE(G, ...) G(BOOL, __VA_ARGS__) CD_INT(G, __VA_ARGS__)
#define CD_ROUND CD_SAME
#define CD_SUB CD_SAME
#define CD_NUMERIC CD_SAME
#define CD_TRUEDIV CD_FLOAT
#define CD_PRED CD_ALL
#define CD_LOGICAL CD_ALL
#define CD_ARITH CD_ALL
#define CD_CMP CD_ALL
#define CD_FLOATONLY CD_FLOAT
#define CD_INTONLY CD_INT
#define CD_INTPOW CD_SAME
#define CD_EXPONENT CD_FLOAT

/* Result dtype for a compute dtype. */
#define RES_PRED(D) BOOL
#define RES_LOGICAL(D) BOOL
#define RES_CMP(D) BOOL
#define RES_SAME(D) D
#define RES_FLOAT(D) D
#define RES_ROUND(D) D
#define RES_BITWISE(D) D
#define RES_ARITH(D) D
#define RES_SUB(D) D
#define RES_NUMERIC(D) D
#define RES_TRUEDIV(D) D
#define RES_FLOATONLY(D) D
#define RES_INTONLY(D) D
#define RES_INTPOW(D) D
#define RES_EXPONENT(D) I32

/* Storing a value: bools are 0/1 (bitwise ops keep bit 0, so ~ is logical not). */
#define STORE(R, rule, v) STORE_##R(rule, v)
#define STORE_BOOL(rule, v) ((uint8_t)(BOOLV_##rule(v)))
#define STORE_U8(rule, v) ((uint8_t)(v))
#define STORE_I8(rule, v) ((int8_t)(v))
#define STORE_I16(rule, v) ((int16_t)(v))
#define STORE_I32(rule, v) ((int32_t)(v))
#define STORE_I64(rule, v) ((int64_t)(v))
#define STORE_F32(rule, v) ((float)(v))
#define STORE_F64(rule, v) ((double)(v))
#define BOOLV_BITWISE(v) ((v) & 1)
#define BOOLV_SAME(v) ((v) != 0)
#define BOOLV_FLOAT BOOLV_SAME
#define BOOLV_ROUND BOOLV_SAME
#define BOOLV_PRED BOOLV_SAME
#define BOOLV_LOGICAL BOOLV_SAME
#define BOOLV_ARITH BOOLV_SAME
#define BOOLV_SUB BOOLV_SAME
#define BOOLV_NUMERIC BOOLV_SAME
#define BOOLV_TRUEDIV BOOLV_SAME
#define BOOLV_CMP BOOLV_SAME
#define BOOLV_FLOATONLY BOOLV_SAME
#define BOOLV_INTONLY BOOLV_SAME
#define BOOLV_INTPOW BOOLV_SAME
#define BOOLV_EXPONENT BOOLV_SAME

/* ---- generated loops ---------------------------------------------------------------- */
typedef void (*u_loop)(void *restrict o, const void *restrict x, int64_t n);
typedef void (*b_loop)(void *restrict o, const void *restrict a, const void *restrict b, int64_t n);
enum { VV, VS, SV, NVAR };   /* binary operand layouts: vector or scalar */

#define U_GEN(D, name, rule, f32, f64, i) \
    U_LOOP(D, name, RES_##rule(D), rule, PICK_##D(f32, f64, i))
#define U_LOOP(D, name, R, rule, expr) \
    RT_CLONES static void u_##name##_##D(void *restrict o_, const void *restrict x_, int64_t n) \
    { \
        CT(R) *restrict o = o_; \
        const CT(D) *restrict px = x_; \
        for (int64_t k = 0; k < n; k++) { \
            const CT(D) x = px[k]; \
            (void)x; \
            o[k] = STORE(R, rule, expr); \
        } \
    }

/* Rows with no vs and sv loops: a scalar operand is repeated over a block
 * for their vv loop instead (vv_on_block). gcc 12 leaves these formulas'
 * predicates on the scalar (one operand's special values and ranges) in
 * the loop as invariants and vectorizes neither variant; the repeated block
 * is written once per row of the iteration, nothing beside formulas of
 * hundreds of operations. tj_polygamma_n(n, x) is such a call.
 * IF_BY_BLOCK(name, yes, no) picks yes for them (the empty expansion puts
 * yes second), no for every other row. */
#define BY_BLOCK_polygamma ,
#define BY_BLOCK_igamma ,
#define BY_BLOCK_igammac ,
#define SECOND_(a, b, ...) b
#define SECOND(...) SECOND_(__VA_ARGS__)
#define IF_BY_BLOCK(name, yes, no) SECOND(BY_BLOCK_##name yes, no, )

#define B_GEN(D, name, rule, f32, f64, i) \
    B_LOOPS(D, name, RES_##rule(D), rule, PICK_##D(f32, f64, i))
#define B_LOOPS(D, name, R, rule, expr) \
    B_LOOP(D, name, R, rule, expr, vv, pa[k], pb[k]) \
    IF_BY_BLOCK(name, B_NO_SCALAR_LOOPS, B_SCALAR_LOOPS)(D, name, R, rule, expr)
#define B_SCALAR_LOOPS(D, name, R, rule, expr) \
    B_LOOP(D, name, R, rule, expr, vs, pa[k], pb[0]) \
    B_LOOP(D, name, R, rule, expr, sv, pa[0], pb[k])
#define B_NO_SCALAR_LOOPS(D, name, R, rule, expr)
#define B_LOOP(D, name, R, rule, expr, var, la, lb) \
    RT_CLONES static void b_##name##_##D##_##var(void *restrict o_, const void *restrict a_, \
                                                  const void *restrict b_, int64_t n) \
    { \
        CT(R) *restrict o = o_; \
        const CT(D) *restrict pa = a_, *restrict pb = b_; \
        for (int64_t k = 0; k < n; k++) { \
            const CT(D) a = la, b = lb; \
            (void)a; \
            (void)b; \
            o[k] = STORE(R, rule, expr); \
        } \
    }

#define UNARY(name, rule, decomp, f32, f64, i) CD_##rule(U_GEN, name, rule, f32, f64, i)
#define BINARY(name, rule, decomp, f32, f64, i) CD_##rule(B_GEN, name, rule, f32, f64, i)
#include "../ir/ops.def"

#define U_ENT(D, name) [OP_##name][TJ_##D] = u_##name##_##D,
#define B_ENT(D, name) \
    [OP_##name][TJ_##D] = {b_##name##_##D##_vv, IF_BY_BLOCK(name, B_NO_SCALAR, B_SCALAR)(D, name)},
#define B_SCALAR(D, name) b_##name##_##D##_vs, b_##name##_##D##_sv
#define B_NO_SCALAR(D, name) NULL, NULL

static const u_loop u_loops[IR_NUM_OPS][TJ_NUM_DTYPES] = {
#define UNARY(name, rule, decomp, f32, f64, i) CD_##rule(U_ENT, name)
#include "../ir/ops.def"
};

static const b_loop b_loops[IR_NUM_OPS][TJ_NUM_DTYPES][NVAR] = {
#define BINARY(name, rule, decomp, f32, f64, i) CD_##rule(B_ENT, name)
#include "../ir/ops.def"
};

/* ---- shared helpers ------------------------------------------------------------------ */

/* Elements [i, i+m) of a row (stride step, dtype st) as a contiguous array of
 * dtype dt: the row itself when it already is one, else converted into buf. */
static const void *block_of(const char *p, int64_t step, tj_dtype st, tj_dtype dt, int64_t i,
                            int64_t m, void *buf)
{
    int64_t sz = (int64_t)tj_dtype_size(dt);
    if (st == dt && step == sz)
        return p + i * step;
    rt_cvt_row(buf, dt, sz, p + i * step, st, step, m);
    return buf;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static tj_dtype compute_dtype(ir_op op, tj_tensor *const *in, int nin)
{
    ir_type t[RT_ITER_MAX];
    const ir_type *tp[RT_ITER_MAX];
    for (int k = 0; k < nin; k++) {
        rt_type_of(in[k], &t[k]);
        tp[k] = &t[k];
    }
    tj_dtype cd = ir_compute_dtype(op, tp, nin);
    return ir_dtype_is_half(cd) ? TJ_F32 : cd;   /* f16/bf16 compute in f32 (k_half.c) */
}

/* The result of a block computed in f32 into buf, rounded into a half output
 * row o (the narrow results of f16/bf16 operands: the f32 value rounded once,
 * as k_half.c's rule says). */
static void narrow_block(char *o, tj_dtype od, const float *buf, int64_t m)
{
    rt_cvt_row(o, od, (int64_t)tj_dtype_size(od), buf, TJ_F32, (int64_t)sizeof(float), m);
}

static int no_kernel(ir_op op, tj_dtype dt)
{
    rt_error("no %s kernel for %s", ir_ops[op].name, tj_dtype_name(dt));
    return -1;
}

/* The output rows are contiguous (the kernels' contract); a strided output
 * would go through rt_convert by the caller. */
static int check_out(const tj_tensor *out)
{
    if (rt_is_contiguous(out))
        return 0;
    rt_error("output must be contiguous");
    return -1;
}

/* ---- unary ----------------------------------------------------------------------------- */
typedef struct {
    u_loop fn;
    tj_dtype cd, in, od;
    int64_t osize;
    bool narrow;         /* od is f16/bf16: each block is computed in f32, then rounded */
} unary_ctx;

static void unary_rows(void *c_, char *const *p, const int64_t *st, int64_t n)
{
    const unary_ctx *c = c_;
    if (c->in == c->cd && st[1] == (int64_t)tj_dtype_size(c->cd) && !c->narrow) {
        c->fn(p[0], p[1], n);
        return;
    }
    _Alignas(64) char buf[RT_BLOCK * 8];
    _Alignas(64) float res[RT_BLOCK];
    for (int64_t i = 0; i < n; i += RT_BLOCK) {
        int64_t m = min64(RT_BLOCK, n - i);
        char *o = c->narrow ? (char *)res : p[0] + i * c->osize;
        c->fn(o, block_of(p[1], st[1], c->in, c->cd, i, m, buf), m);
        if (c->narrow)
            narrow_block(p[0] + i * c->osize, c->od, res, m);
    }
}

int rt_k_unary(RT_KERNEL_ARGS)
{
    tj_dtype cd = compute_dtype(op, in, 1);
    u_loop fn = u_loops[op][cd];
    if (!fn)
        return no_kernel(op, cd);
    rt_iter it;
    if (check_out(out) || rt_iter_init(&it, out, in, 1))
        return -1;
    unary_ctx c = {fn, cd, in[0]->dtype, out->dtype, (int64_t)tj_dtype_size(out->dtype),
                   ir_dtype_is_half(out->dtype)};
    rt_iter_run(&it, RT_GRAIN, unary_rows, &c);
    return 0;
}

/* ---- binary ------------------------------------------------------------------------------ */
typedef struct {
    const b_loop *fn;    /* [NVAR] */
    tj_dtype cd, ta, tb;
    int64_t csize, osize;
    bool check_zero;     /* integer fmod/remainder: a zero divisor sets zero */
    bool by_block;       /* no vs/sv loops (BY_BLOCK_ rows): a scalar goes through vv_on_block */
    bool narrow;         /* od is f16/bf16: each block is computed in f32, then rounded */
    tj_dtype od;
    int zero;
} binary_ctx;

/* o = fn[VV](a, b) over n elements, one of a (var SV) or b (VS) a scalar
 * (compute dtype, the other contiguous in it). */
static void vv_on_block(const binary_ctx *c, char *o, const char *a, const char *b, int var,
                        int64_t n)
{
    _Alignas(64) char rep[RT_BLOCK * 8];
    const char *s = var == SV ? a : b, *v = var == SV ? b : a;
    for (int64_t i = 0; i < min64(RT_BLOCK, n); i++)
        memcpy(rep + i * c->csize, s, (size_t)c->csize);
    for (int64_t i = 0; i < n; i += RT_BLOCK) {
        int64_t m = min64(RT_BLOCK, n - i);
        const char *vi = v + i * c->csize;
        c->fn[VV](o + i * c->osize, var == SV ? rep : vi, var == SV ? vi : rep, m);
    }
}

/* Whether one of the n divisors at p (stride step, dtype t: an integer or
 * bool, so zero is all bytes zero) is zero. */
static bool has_zero(const char *p, int64_t step, tj_dtype t, int64_t n)
{
    size_t sz = tj_dtype_size(t);
    for (int64_t k = 0; k < n; k++) {
        const char *e = p + k * step;
        bool z = true;
        for (size_t j = 0; j < sz; j++)
            z &= e[j] == 0;
        if (z)
            return true;
    }
    return false;
}

/* True when operand (dtype t, stride step) can be passed as is: a contiguous
 * vector or a broadcast scalar of the compute dtype. */
static bool direct(const binary_ctx *c, tj_dtype t, int64_t step)
{
    return t == c->cd && (step == c->csize || step == 0);
}

static void binary_rows(void *c_, char *const *p, const int64_t *st, int64_t n)
{
    binary_ctx *c = c_;
    if (c->check_zero && has_zero(p[2], st[2], c->tb, st[2] ? n : 1))
        __atomic_store_n(&c->zero, 1, __ATOMIC_RELAXED);
    if (direct(c, c->ta, st[1]) && direct(c, c->tb, st[2]) && (st[1] | st[2]) && !c->narrow) {
        int var = st[1] == 0 ? SV : st[2] == 0 ? VS : VV;
        if (var != VV && c->by_block)
            vv_on_block(c, p[0], p[1], p[2], var, n);
        else
            c->fn[var](p[0], p[1], p[2], n);
        return;
    }
    _Alignas(64) char bufa[RT_BLOCK * 8], bufb[RT_BLOCK * 8];
    _Alignas(64) float res[RT_BLOCK];
    for (int64_t i = 0; i < n; i += RT_BLOCK) {
        int64_t m = min64(RT_BLOCK, n - i);
        char *o = c->narrow ? (char *)res : p[0] + i * c->osize;
        /* a scalar b stays a scalar; everything else becomes a vector block */
        bool bs = st[2] == 0;
        const void *a = block_of(p[1], st[1], c->ta, c->cd, i, m, bufa);
        const void *b = block_of(p[2], st[2], c->tb, c->cd, bs ? 0 : i, bs ? 1 : m, bufb);
        if (bs && c->by_block)
            vv_on_block(c, o, a, b, VS, m);
        else
            c->fn[bs ? VS : VV](o, a, b, m);
        if (c->narrow)
            narrow_block(p[0] + i * c->osize, c->od, res, m);
    }
}

int rt_k_binary(RT_KERNEL_ARGS)
{
    tj_dtype cd = compute_dtype(op, in, 2);
    const b_loop *fn = b_loops[op][cd];
    if (!fn[VV])
        return no_kernel(op, cd);
    rt_iter it;
    if (check_out(out) || rt_iter_init(&it, out, in, 2))
        return -1;
    binary_ctx c = {fn, cd, in[0]->dtype, in[1]->dtype, (int64_t)tj_dtype_size(cd),
                    (int64_t)tj_dtype_size(out->dtype),
                    (op == OP_fmod || op == OP_remainder) && !ir_dtype_is_float(cd),
                    !fn[VS], ir_dtype_is_half(out->dtype), out->dtype, 0};
    rt_iter_run(&it, RT_GRAIN, binary_rows, &c);
    if (__atomic_load_n(&c.zero, __ATOMIC_RELAXED)) {
        rt_error("ZeroDivisionError: integer division by zero");
        return -1;
    }
    return 0;
}

/* ---- where, lerp, clamp --------------------------------------------------------------- */
/* Each block of every input is made a contiguous array of the dtype the op
 * computes in (block_of), then one typed loop runs over it. */
typedef void (*t_loop)(void *restrict o, const void *restrict x, const void *restrict y,
                       const void *restrict z, int64_t n, const ir_attrs *a);

typedef struct {
    t_loop fn;
    int nin;
    tj_dtype want[3], have[3];
    int64_t osize;
    const ir_attrs *attrs;
} ternary_ctx;

static void ternary_rows(void *c_, char *const *p, const int64_t *st, int64_t n)
{
    const ternary_ctx *c = c_;
    _Alignas(64) char buf[3][RT_BLOCK * 8];
    for (int64_t i = 0; i < n; i += RT_BLOCK) {
        int64_t m = min64(RT_BLOCK, n - i);
        const void *x[3] = {NULL, NULL, NULL};
        for (int k = 0; k < c->nin; k++)
            x[k] = block_of(p[k + 1], st[k + 1], c->have[k], c->want[k], i, m, buf[k]);
        c->fn(p[0] + i * c->osize, x[0], x[1], x[2], m, c->attrs);
    }
}

static int run_ternary(t_loop fn, tj_tensor *out, tj_tensor *const *in, int nin,
                       const tj_dtype *want, const ir_attrs *a)
{
    rt_iter it;
    if (check_out(out) || rt_iter_init(&it, out, in, nin))
        return -1;
    ternary_ctx c = {fn, nin, {0}, {0}, (int64_t)tj_dtype_size(out->dtype), a};
    for (int k = 0; k < nin; k++) {
        c.want[k] = want[k];
        c.have[k] = in[k]->dtype;
    }
    rt_iter_run(&it, RT_GRAIN, ternary_rows, &c);
    return 0;
}

/* where selects whole elements, so one loop per element size serves every dtype. */
#define WHERE_LOOP(bits) \
    RT_CLONES static void where_##bits(void *restrict o_, const void *restrict c_, \
                                       const void *restrict a_, const void *restrict b_, \
                                       int64_t n, const ir_attrs *attrs) \
    { \
        uint##bits##_t *restrict o = o_; \
        const uint8_t *restrict c = c_; \
        const uint##bits##_t *restrict a = a_, *restrict b = b_; \
        for (int64_t k = 0; k < n; k++) \
            o[k] = c[k] ? a[k] : b[k]; \
    }
WHERE_LOOP(8)
WHERE_LOOP(16)
WHERE_LOOP(32)
WHERE_LOOP(64)

int rt_k_where(RT_KERNEL_ARGS)
{
    size_t sz = tj_dtype_size(out->dtype);
    t_loop fn = sz == 1 ? where_8 : sz == 2 ? where_16 : sz == 4 ? where_32 : where_64;
    tj_dtype want[3] = {TJ_BOOL, out->dtype, out->dtype};
    return run_ternary(fn, out, in, 3, want, a);
}

/* torch's lerp: exact at both ends, w < 1/2 from a, else from b. */
#define LERP_LOOP(D, T) \
    RT_CLONES static void lerp_##D(void *restrict o_, const void *restrict a_, \
                                   const void *restrict b_, const void *restrict w_, int64_t n, \
                                   const ir_attrs *attrs) \
    { \
        T *restrict o = o_; \
        const T *restrict a = a_, *restrict b = b_, *restrict w = w_; \
        for (int64_t k = 0; k < n; k++) { \
            T d = b[k] - a[k]; \
            o[k] = w[k] < (T)0.5 ? a[k] + w[k] * d : b[k] - d * ((T)1 - w[k]); \
        } \
    }
LERP_LOOP(F32, float)
LERP_LOOP(F64, double)

int rt_k_lerp(RT_KERNEL_ARGS)
{
    t_loop fn = out->dtype == TJ_F32 ? lerp_F32 : out->dtype == TJ_F64 ? lerp_F64 : NULL;
    if (!fn)
        return no_kernel(op, out->dtype);
    tj_dtype want[3] = {out->dtype, out->dtype, out->dtype};
    return run_ternary(fn, out, in, 3, want, a);
}

/* clamp(x, lo, hi) = min(max(x, lo), hi) in the result dtype (x converted to
 * it): NaN in x or a bound gives NaN (floats). An integer result has integer
 * bounds that fit it (ir_infer_clamp), or none (-inf, inf): the type's range. */
#define CLAMP_FLOAT(D, T, sfx) \
    RT_CLONES static void clamp_##D(void *restrict o_, const void *restrict x_, \
                                    const void *restrict y_, const void *restrict z_, \
                                    int64_t n, const ir_attrs *attrs) \
    { \
        T *restrict o = o_; \
        const T *restrict x = x_; \
        T lo = (T)attrs->a[0].f, hi = (T)attrs->a[1].f; \
        for (int64_t k = 0; k < n; k++) \
            o[k] = vm_min_##sfx(vm_max_##sfx(x[k], lo), hi); \
    }
CLAMP_FLOAT(F32, float, f32)
CLAMP_FLOAT(F64, double, f64)

static int64_t int_bound(double v, tj_dtype dt)
{
    int64_t tmin, tmax;
    ir_int_range(dt, &tmin, &tmax);
    return v == -INFINITY ? tmin : v == INFINITY ? tmax : (int64_t)v;
}

#define CLAMP_INT(D, T) \
    RT_CLONES static void clamp_##D(void *restrict o_, const void *restrict x_, \
                                    const void *restrict y_, const void *restrict z_, \
                                    int64_t n, const ir_attrs *attrs) \
    { \
        T *restrict o = o_; \
        const T *restrict x = x_; \
        T lo = (T)int_bound(attrs->a[0].f, TJ_##D), hi = (T)int_bound(attrs->a[1].f, TJ_##D); \
        for (int64_t k = 0; k < n; k++) { \
            T v = x[k] < lo ? lo : x[k]; \
            o[k] = v > hi ? hi : v; \
        } \
    }
CLAMP_INT(U8, uint8_t)
CLAMP_INT(I8, int8_t)
CLAMP_INT(I16, int16_t)
CLAMP_INT(I32, int32_t)
CLAMP_INT(I64, int64_t)

int rt_k_clamp(RT_KERNEL_ARGS)
{
    static const t_loop loops[TJ_NUM_DTYPES] = {
        [TJ_F32] = clamp_F32, [TJ_F64] = clamp_F64, [TJ_U8] = clamp_U8, [TJ_I8] = clamp_I8,
        [TJ_I16] = clamp_I16, [TJ_I32] = clamp_I32, [TJ_I64] = clamp_I64,
    };
    t_loop fn = loops[out->dtype];
    if (!fn)
        return no_kernel(op, out->dtype);
    tj_dtype want[1] = {out->dtype};
    return run_ternary(fn, out, in, 1, want, a);
}

/* softplus(x) = x beta > threshold ? x : log1p(exp(x beta)) / beta, beta and
 * threshold in the result dtype (torch's kernel); f32 with the vmath exp and
 * log1p the JIT uses for the decomposition's exp and log1p. */
#define SOFTPLUS_LOOP(D, T, EXP, LOG1P) \
    RT_CLONES static void softplus_##D(void *restrict o_, const void *restrict x_, \
                                       const void *restrict y_, const void *restrict z_, \
                                       int64_t n, const ir_attrs *attrs) \
    { \
        T *restrict o = o_; \
        const T *restrict x = x_; \
        T beta = (T)attrs->a[0].f, th = (T)attrs->a[1].f; \
        for (int64_t k = 0; k < n; k++) { \
            T xb = x[k] * beta, y = LOG1P(EXP(xb)) / beta; \
            o[k] = xb > th ? x[k] : y; \
        } \
    }
SOFTPLUS_LOOP(F32, float, vm_exp_f32, vm_log1p_f32)
SOFTPLUS_LOOP(F64, double, exp, log1p)

int rt_k_softplus(RT_KERNEL_ARGS)
{
    t_loop fn = out->dtype == TJ_F32 ? softplus_F32 : out->dtype == TJ_F64 ? softplus_F64 : NULL;
    if (!fn)
        return no_kernel(op, out->dtype);
    tj_dtype want[1] = {out->dtype};
    return run_ternary(fn, out, in, 1, want, a);
}

/* add_alpha, sub_alpha: a + alpha b, a - alpha b in the result dtype (alpha
 * converted to it, as torch does; integers wrap, -fwrapv; u8 alpha -1 is 255;
 * bool: a or (alpha and b)). One rounding of alpha b and one of the sum, as
 * the decomposition's mul and add. */
#define ALPHA_FLOAT(D, T, name, OPR) \
    RT_CLONES static void name##_##D(void *restrict o_, const void *restrict a_, \
                                     const void *restrict b_, const void *restrict z_, \
                                     int64_t n, const ir_attrs *attrs) \
    { \
        T *restrict o = o_; \
        const T *restrict a = a_, *restrict b = b_; \
        T al = (T)attrs->a[0].f; \
        for (int64_t k = 0; k < n; k++) { \
            T p = al * b[k]; \
            o[k] = a[k] OPR p; \
        } \
    }
#define ALPHA_INT(D, T, name, OPR) \
    RT_CLONES static void name##_##D(void *restrict o_, const void *restrict a_, \
                                     const void *restrict b_, const void *restrict z_, \
                                     int64_t n, const ir_attrs *attrs) \
    { \
        T *restrict o = o_; \
        const T *restrict a = a_, *restrict b = b_; \
        T al = (T)(int64_t)attrs->a[0].f; \
        for (int64_t k = 0; k < n; k++) \
            o[k] = (T)(a[k] OPR (T)(al * b[k])); \
    }
#define ALPHA_ALL(name, OPR) \
    ALPHA_FLOAT(F32, float, name, OPR) ALPHA_FLOAT(F64, double, name, OPR) \
    ALPHA_INT(U8, uint8_t, name, OPR) ALPHA_INT(I8, int8_t, name, OPR) \
    ALPHA_INT(I16, int16_t, name, OPR) ALPHA_INT(I32, int32_t, name, OPR) \
    ALPHA_INT(I64, int64_t, name, OPR)
ALPHA_ALL(add_alpha, +)
ALPHA_ALL(sub_alpha, -)

static void add_alpha_BOOL(void *restrict o_, const void *restrict a_, const void *restrict b_,
                           const void *restrict z_, int64_t n, const ir_attrs *attrs)
{
    uint8_t *restrict o = o_;
    const uint8_t *restrict a = a_, *restrict b = b_;
    uint8_t al = attrs->a[0].f != 0;
    for (int64_t k = 0; k < n; k++)
        o[k] = a[k] || (al && b[k]);
}

#define ALPHA_TABLE(name, bool_loop) \
    {[TJ_F32] = name##_F32, [TJ_F64] = name##_F64, [TJ_U8] = name##_U8, [TJ_I8] = name##_I8, \
     [TJ_I16] = name##_I16, [TJ_I32] = name##_I32, [TJ_I64] = name##_I64, [TJ_BOOL] = bool_loop}

int rt_k_add_alpha(RT_KERNEL_ARGS)
{
    static const t_loop loops[TJ_NUM_DTYPES] = ALPHA_TABLE(add_alpha, add_alpha_BOOL);
    t_loop fn = loops[out->dtype];
    if (!fn)
        return no_kernel(op, out->dtype);
    tj_dtype want[2] = {out->dtype, out->dtype};
    return run_ternary(fn, out, in, 2, want, a);
}

int rt_k_sub_alpha(RT_KERNEL_ARGS)
{
    static const t_loop loops[TJ_NUM_DTYPES] = ALPHA_TABLE(sub_alpha, NULL);   /* bool: refused by the rule */
    t_loop fn = loops[out->dtype];
    if (!fn)
        return no_kernel(op, out->dtype);
    tj_dtype want[2] = {out->dtype, out->dtype};
    return run_ternary(fn, out, in, 2, want, a);
}

/* div_mode: torch.div with rounding_mode trunc or floor, in the result
 * dtype. Floats: trunc(a / b); floor is c10's div_floor_floating (Python's
 * a // b from fmod, with a / b's IEEE result for b = 0). Integers: C's
 * truncating division, floor one less when the signs differ and a remainder
 * is left; the most negative value over -1 wraps (C would trap); a zero
 * divisor sets *zero (PyTorch raises ZeroDivisionError). */
#define DIVF(D, T, TRUNC, FMOD, FLOOR, COPYSIGN) \
    static inline T div_floor_##D(T a, T b) \
    { \
        if (b == 0) \
            return a / b; \
        T mod = FMOD(a, b), q = (a - mod) / b; \
        if (mod != 0 && (b < 0) != (mod < 0)) \
            q -= 1; \
        if (q == 0) \
            return COPYSIGN((T)0, a / b); \
        T fl = FLOOR(q); \
        return q - fl > (T)0.5 ? fl + 1 : fl; \
    } \
    static void div_mode_##D(void *restrict o_, const void *restrict a_, const void *restrict b_, \
                             int64_t n, bool floor_mode, int *zero) \
    { \
        T *restrict o = o_; \
        const T *restrict a = a_, *restrict b = b_; \
        (void)zero; \
        for (int64_t k = 0; k < n; k++) \
            o[k] = floor_mode ? div_floor_##D(a[k], b[k]) : TRUNC(a[k] / b[k]); \
    }
DIVF(F32, float, truncf, fmodf, floorf, copysignf)
DIVF(F64, double, trunc, fmod, floor, copysign)

#define DIVI(D, T, SIGNED) \
    static void div_mode_##D(void *restrict o_, const void *restrict a_, const void *restrict b_, \
                             int64_t n, bool floor_mode, int *zero) \
    { \
        T *restrict o = o_; \
        const T *restrict a = a_, *restrict b = b_; \
        for (int64_t k = 0; k < n; k++) { \
            T x = a[k], y = b[k]; \
            if (y == 0) { \
                __atomic_store_n(zero, 1, __ATOMIC_RELAXED); \
                o[k] = 0; \
                continue; \
            } \
            if (SIGNED && y == (T)-1) { \
                o[k] = (T)(0 - x);   /* -fwrapv: the minimum stays itself */ \
                continue; \
            } \
            T q = x / y; \
            o[k] = floor_mode && SIGNED && (x < 0) != (y < 0) && q * y != x ? q - 1 : q; \
        } \
    }
DIVI(U8, uint8_t, 0)
DIVI(I8, int8_t, 1)
DIVI(I16, int16_t, 1)
DIVI(I32, int32_t, 1)
DIVI(I64, int64_t, 1)

typedef void (*div_loop)(void *restrict o, const void *restrict a, const void *restrict b,
                         int64_t n, bool floor_mode, int *zero);
typedef struct {
    div_loop fn;
    tj_dtype dt, ta, tb;
    int64_t osize;
    bool floor_mode;
    int zero;
} div_ctx;

static void div_rows(void *c_, char *const *p, const int64_t *st, int64_t n)
{
    div_ctx *c = c_;
    _Alignas(64) char bufa[RT_BLOCK * 8], bufb[RT_BLOCK * 8];
    for (int64_t i = 0; i < n; i += RT_BLOCK) {
        int64_t m = min64(RT_BLOCK, n - i);
        const void *a = block_of(p[1], st[1], c->ta, c->dt, i, m, bufa);
        const void *b = block_of(p[2], st[2], c->tb, c->dt, i, m, bufb);
        c->fn(p[0] + i * c->osize, a, b, m, c->floor_mode, &c->zero);
    }
}

int rt_k_div_mode(RT_KERNEL_ARGS)
{
    static const div_loop loops[TJ_NUM_DTYPES] = {
        [TJ_F32] = div_mode_F32, [TJ_F64] = div_mode_F64, [TJ_U8] = div_mode_U8,
        [TJ_I8] = div_mode_I8, [TJ_I16] = div_mode_I16, [TJ_I32] = div_mode_I32,
        [TJ_I64] = div_mode_I64,
    };
    div_loop fn = loops[out->dtype];
    if (!fn)
        return no_kernel(op, out->dtype);
    rt_iter it;
    if (check_out(out) || rt_iter_init(&it, out, in, 2))
        return -1;
    div_ctx c = {fn, out->dtype, in[0]->dtype, in[1]->dtype, (int64_t)tj_dtype_size(out->dtype),
                 a->a[0].i[0] == TJ_ROUNDING_FLOOR, 0};
    rt_iter_run(&it, RT_GRAIN, div_rows, &c);
    if (__atomic_load_n(&c.zero, __ATOMIC_RELAXED)) {
        rt_error("ZeroDivisionError: integer division by zero");
        return -1;
    }
    return 0;
}

int rt_k_cast(RT_KERNEL_ARGS) { return rt_convert(out, in[0]); }
