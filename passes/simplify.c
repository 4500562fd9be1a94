/* simplify.c - the simplify pass: a table of named rewrite rules run to a
 * fixed point by the driver of rewrite.c, then dead-code elimination.
 *
 * A constant is a `scalar` (weak 0-dim) or a `full` node: one value
 * everywhere. Rules, in the order they are tried:
 *
 *   fold-unary     f(c)       -> c'   pointwise UNARY rows of ops.def
 *   fold-binary    f(c1, c2)  -> c'   pointwise BINARY rows
 *   fold-cast      cast(c)    -> c'
 *   fold-where     where(c, a, b) -> a or b (cond a constant)
 *   mul-one        x * 1, 1 * x -> x
 *   mul-zero       x * 0, 0 * x -> 0  (integer and bool math only: for floats
 *                                      NaN * 0 and inf * 0 are NaN)
 *   matmul-zero    0 @ w -> expand(0 * amax(|w|, dim 0))  (2-D f32/f64: +0, or
 *                                      NaN in a column of w holding inf/NaN)
 *   add-zero       x + 0, 0 + x -> x  (floats: only x + -0.0, since
 *                                      -0.0 + 0.0 is +0.0)
 *   sub-zero       x - 0 -> x         (floats: only x - +0.0)
 *   div-one        x / 1 -> x
 *   neg-neg        -(-x) -> x
 *   permute-permute  permute(permute(x, p), q) -> permute(x, p∘q), or x when identity
 *   permute-identity permute(x, [0,1,...]) -> x
 *   reshape-reshape  reshape(reshape(x, s), t) -> reshape(x, t)
 *   reshape-same, expand-same, squeeze-noop, slice-full: a view whose result
 *                  has its input's type is its input (for these four ops that
 *                  means the view is the identity)
 *   cast-same      cast(x, dtype of x) -> x (not for a weak x: the cast makes it strong)
 *   cast-cast      cast(cast(x, a), b) -> cast(x, b) when a holds every value of
 *                  x's dtype exactly: bool -> anything, u8 -> i32/i64/f32/f64,
 *                  i32 -> i64/f64, f32 -> f64 (i64 -> f64 and i32 -> f32 round)
 *
 * Folding computes with the same scalar formulas as the eager kernels (the
 * f32/f64/int columns of ops.def, ir/vmath.h), in the dtype the kernel
 * computes in, with the kernels' conversions, so a folded constant is the
 * value the eager op would produce. Whatever cannot be represented exactly
 * (an i64 beyond 2^53 in the double attribute, a weak f32, a symbolic shape)
 * is left unfolded. Every replacement has exactly the node's type (dtype,
 * shape, weak flag): an identity whose operand has another dtype or a
 * smaller shape becomes a cast or expand of it, or is not applied.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../ir/half.h"
#include "../ir/vmath.h"
#include "rewrite.h"

/* ---- constants ------------------------------------------------------------------- */

/* One element of a constant: floats in f, integers and bool in i. */
typedef struct cval {
    tj_dtype dt;
    int64_t i;
    double f;
} cval;

static bool is_int_dtype(tj_dtype dt) { return !ir_dtype_is_float(dt); }

static bool int_range(tj_dtype dt, int64_t *lo, int64_t *hi)
{
    if (!ir_dtype_supported(dt) || ir_dtype_is_float(dt))
        return false;
    ir_int_range(dt, lo, hi);
    return true;
}

/* v in dt (f32, f16 or bf16) as a double: f16 and bf16 round to nearest
 * even (ir/half.h), as the runtime stores them. */
static double half_round(tj_dtype dt, float v)
{
    return dt == TJ_F16 ? ir_f16_to_f32(ir_f32_to_f16(v)) : dt == TJ_BF16 ? ir_bf16_to_f32(ir_f32_to_bf16(v)) : v;
}

/* The element of constant node n, when n is one and its value is exact in
 * its dtype (integer constants: integral and in range, so full's and cast's
 * conventions agree). */
static bool const_of(const ir_node *n, cval *c)
{
    double v;
    if (n->op == OP_scalar)
        v = n->attrs[0].f;
    else if (n->op == OP_full)
        v = n->attrs[1].f;
    else
        return false;
    c->dt = n->type.dtype;
    c->i = 0;
    c->f = 0;
    if (ir_dtype_is_float(c->dt)) {
        c->f = c->dt == TJ_F64 ? v : half_round(c->dt, (float)v);
        return true;
    }
    if (c->dt == TJ_BOOL) {
        c->i = v != 0;
        return true;
    }
    int64_t lo, hi;   /* (double)INT64_MAX is 2^63: out of range */
    if (!int_range(c->dt, &lo, &hi) || v != trunc(v) || v < (double)lo || v >= (double)hi + 1.0)
        return false;
    c->i = (int64_t)v;
    return true;
}

/* float -> integer as the runtime converts (runtime/iter.c): truncation; NaN
 * and out of range give the type's minimum; u8, i8, i16 go through i32 and wrap. */
static int64_t f2i32(double v)
{
    return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}

static int64_t f2i64(double v)
{
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}

/* c converted to dt like the runtime's conversions (casts and promotion). */
static cval convert(cval c, tj_dtype dt)
{
    bool fl = ir_dtype_is_float(c.dt);
    cval r = {dt, 0, 0};
    switch (dt) {
    case TJ_BOOL: r.i = fl ? c.f != 0 : c.i != 0; break;
    case TJ_U8: r.i = (uint8_t)(fl ? f2i32(c.f) : c.i); break;
    case TJ_I8: r.i = (int8_t)(fl ? f2i32(c.f) : c.i); break;
    case TJ_I16: r.i = (int16_t)(fl ? f2i32(c.f) : c.i); break;
    case TJ_I32: r.i = (int32_t)(fl ? f2i32(c.f) : c.i); break;
    case TJ_I64: r.i = fl ? f2i64(c.f) : c.i; break;
    case TJ_F32:
    case TJ_F16:
    case TJ_BF16: r.f = half_round(dt, (float)(fl ? c.f : (double)c.i)); break;
    default: r.f = fl ? c.f : (double)c.i; break;
    }
    return r;
}

/* The node holding c with type t, or NULL when c cannot be stored exactly. */
static ir_node *const_node(ps_builder *b, cval c, const ir_type *t)
{
    int64_t lo, hi;
    double v = c.f;
    if (is_int_dtype(c.dt)) {
        v = (double)c.i;   /* the attribute is a double: i64 beyond 2^53 may not fit */
        if (!int_range(c.dt, &lo, &hi) || c.i < lo || c.i > hi || v >= 0x1p63 ||
            (int64_t)v != c.i)
            return NULL;
    }
    return ps_b_const(b, v, t);
}

/* ---- folding with the formulas of ops.def ------------------------------------------ */

/* clang-format off: clang-format 14 joins the #include to a macro whose body is
 * a one-line case label (.clang-format). */
// clang-format off
static double unary_f32(ir_op op, float x)
{
    switch (op) {
#define UNARY(name, rule, decomp, f32, f64, i) \
    case OP_##name: return (double)(f32);
#include "../ir/ops.def"
    default: return NAN;
    }
}

static double unary_f64(ir_op op, double x)
{
    switch (op) {
#define UNARY(name, rule, decomp, f32, f64, i) \
    case OP_##name: return (double)(f64);
#include "../ir/ops.def"
    default: return NAN;
    }
}

/* Integer formulas run on 128-bit values, so i64 overflow cannot happen (it
 * would be undefined behavior); the result wraps to the type when stored,
 * like the eager loops' two's-complement arithmetic. */
typedef __int128 wide;

static wide unary_int(ir_op op, wide x)
{
    switch (op) {
#define UNARY(name, rule, decomp, f32, f64, i) \
    case OP_##name: return (wide)(i);
#include "../ir/ops.def"
    default: return 0;
    }
}

static double binary_f32(ir_op op, float a, float b)
{
    switch (op) {
#define BINARY(name, rule, decomp, f32, f64, i) \
    case OP_##name: return (double)(f32);
#include "../ir/ops.def"
    default: return NAN;
    }
}

static double binary_f64(ir_op op, double a, double b)
{
    switch (op) {
#define BINARY(name, rule, decomp, f32, f64, i) \
    case OP_##name: return (double)(f64);
#include "../ir/ops.def"
    default: return NAN;
    }
}

static wide binary_int(ir_op op, wide a, wide b)
{
    switch (op) {
#define BINARY(name, rule, decomp, f32, f64, i) \
    case OP_##name: return (wide)(i);
#include "../ir/ops.def"
    default: return 0;
    }
}

// clang-format on

/* The computed value (in compute dtype cd) stored as the result dtype rd, as
 * the kernels' STORE does: bool keeps the low bit for bitwise ops, else v != 0. */
static cval store(ir_op op, cval r, tj_dtype rd)
{
    if (rd == TJ_BOOL && ir_ops[op].rule == IR_RULE_BITWISE && is_int_dtype(r.dt))
        return (cval){TJ_BOOL, r.i & 1, 0};
    if (rd == r.dt && is_int_dtype(rd) && rd != TJ_BOOL)
        return convert((cval){TJ_I64, r.i, 0}, rd);   /* wrap to the type */
    return convert(r, rd);
}

/* op applied to constants x[0..nin) (UNARY or BINARY rows). */
static bool fold_pointwise(const ir_node *n, const cval *x, int nin, cval *out)
{
    const ir_type *tp[2] = {&n->in[0]->type, nin > 1 ? &n->in[1]->type : NULL};
    tj_dtype cd = ir_dtype_wide(ir_compute_dtype(n->op, tp, nin));   /* f16, bf16: in f32 */
    cval a = convert(x[0], cd), b = nin > 1 ? convert(x[1], cd) : a;
    cval r = {cd, 0, 0};
    if ((n->op == OP_fmod || n->op == OP_remainder) && !ir_dtype_is_float(cd) && b.i == 0)
        return false;   /* an integer division by zero: the kernel reports it */
    if (n->op == OP_gcd)
        return false;   /* its steps wrap to the type's width, which 128-bit folding has not */
    if (cd == TJ_F32)
        r.f = nin > 1 ? binary_f32(n->op, (float)a.f, (float)b.f) : unary_f32(n->op, (float)a.f);
    else if (cd == TJ_F64)
        r.f = nin > 1 ? binary_f64(n->op, a.f, b.f) : unary_f64(n->op, a.f);
    else if (ir_dtype_supported(cd))   /* the integer dtypes and bool */
        r.i = (int64_t)(nin > 1 ? binary_int(n->op, a.i, b.i) : unary_int(n->op, a.i));
    else
        return false;
    *out = store(n->op, r, n->type.dtype);
    return true;
}

static ir_node *fold_kind(ps_builder *b, ir_node *n, ir_kind kind)
{
    if (ir_ops[n->op].kind != kind)
        return NULL;
    cval x[2], r;
    for (int j = 0; j < n->nin; j++)
        if (!const_of(n->in[j], &x[j]))
            return NULL;
    if (!fold_pointwise(n, x, n->nin, &r))
        return NULL;
    return const_node(b, r, &n->type);
}

static ir_node *rule_fold_unary(ps_builder *b, ir_node *n) { return fold_kind(b, n, IR_UNARY); }
static ir_node *rule_fold_binary(ps_builder *b, ir_node *n) { return fold_kind(b, n, IR_BINARY); }

static ir_node *rule_fold_cast(ps_builder *b, ir_node *n)
{
    cval c;
    if (!const_of(n->in[0], &c))
        return NULL;
    return const_node(b, convert(c, n->type.dtype), &n->type);
}

static ir_node *rule_fold_where(ps_builder *b, ir_node *n)
{
    cval c;
    if (!const_of(n->in[0], &c))
        return NULL;
    bool yes = ir_dtype_is_float(c.dt) ? c.f != 0 : c.i != 0;
    return ps_b_like(b, n->in[yes ? 1 : 2], &n->type);
}

/* ---- algebra ------------------------------------------------------------------------ */

/* The dtype n computes in. */
static tj_dtype compute_of(const ir_node *n)
{
    const ir_type *tp[2] = {&n->in[0]->type, &n->in[1]->type};
    return ir_compute_dtype(n->op, tp, 2);
}

/* Input `side` of binary n is a constant equal to v in n's compute dtype;
 * sign: for a float zero, 1 requires +0.0, -1 requires -0.0, 0 either. */
static bool operand_is(const ir_node *n, int side, double v, int sign)
{
    cval c;
    if (!const_of(n->in[side], &c))
        return false;
    c = convert(c, compute_of(n));
    if (is_int_dtype(c.dt))
        return (double)c.i == v;
    if (c.f != v)
        return false;
    return sign == 0 || (sign < 0) == (signbit(c.f) != 0);
}

static ir_node *other_like(ps_builder *b, ir_node *n, int side)
{
    return ps_b_like(b, n->in[1 - side], &n->type);
}

static ir_node *rule_mul_one(ps_builder *b, ir_node *n)
{
    for (int side = 0; side < 2; side++)
        if (operand_is(n, side, 1, 0))
            return other_like(b, n, side);
    return NULL;
}

static ir_node *rule_mul_zero(ps_builder *b, ir_node *n)
{
    if (ir_dtype_is_float(compute_of(n)))
        return NULL;
    for (int side = 0; side < 2; side++)
        if (operand_is(n, side, 0, 0))
            return const_node(b, convert((cval){TJ_I64, 0, 0}, n->type.dtype), &n->type);
    return NULL;
}

/* 0 @ w (2-D, f32/f64, static, k > 0): element (i, j) sums 0 * w[kk, j] over
 * kk: +0 when column j of w is finite, NaN when it holds an inf or a NaN, the
 * same in every row. 0 * amax(|w|, dim 0) is exactly that (amax lets NaN
 * win, 0 * inf is NaN), broadcast over the rows: one pass over w instead of
 * a GEMM (an RNN's first step from a zero state). */
static ir_node *rule_matmul_zero(ps_builder *b, ir_node *n)
{
    const ir_node *a = n->in[0];
    ir_node *w = n->in[1];
    tj_dtype dt = n->type.dtype;
    cval c;
    if ((dt != TJ_F32 && dt != TJ_F64) || a->type.dtype != dt || w->type.dtype != dt ||
        a->type.ndim != 2 || w->type.ndim != 2 || a->type.shape[1] <= 0 ||
        n->type.shape[0] < 0 || n->type.shape[1] < 0 || !const_of(a, &c) || c.f != 0)
        return NULL;
    int64_t d0 = 0;
    ir_node *z = b_mul_s(b, b_amax(b, b_un(b, OP_abs, w), &d0, 1, true), 0.0);
    ir_attrs at = {0};
    ir_attr_ints(&at.a[0], n->type.shape, 2);
    return ps_b_op(b, OP_expand, &z, 1, &at);
}

static ir_node *rule_add_zero(ps_builder *b, ir_node *n)
{
    int sign = ir_dtype_is_float(compute_of(n)) ? -1 : 0;
    for (int side = 0; side < 2; side++)
        if (operand_is(n, side, 0, sign))
            return other_like(b, n, side);
    return NULL;
}

static ir_node *rule_sub_zero(ps_builder *b, ir_node *n)
{
    int sign = ir_dtype_is_float(compute_of(n)) ? 1 : 0;
    return operand_is(n, 1, 0, sign) ? other_like(b, n, 1) : NULL;
}

static ir_node *rule_div_one(ps_builder *b, ir_node *n)
{
    return operand_is(n, 1, 1, 0) ? other_like(b, n, 1) : NULL;
}

static ir_node *rule_neg_neg(ps_builder *b, ir_node *n)
{
    const ir_node *m = n->in[0];
    return m->op == OP_neg ? ps_b_like(b, m->in[0], &n->type) : NULL;
}

/* ---- views and casts ----------------------------------------------------------------- */

static bool is_identity(const int64_t *perm, int n)
{
    for (int k = 0; k < n; k++)
        if (ir_norm_dim(perm[k], n) != k)
            return false;
    return true;
}

static ir_node *rule_permute_permute(ps_builder *b, ir_node *n)
{
    const ir_node *m = n->in[0];
    if (m->op != OP_permute)
        return NULL;
    int nd = n->type.ndim;
    int64_t q[TJ_MAX_DIMS];
    for (int k = 0; k < nd; k++)
        q[k] = ir_norm_dim(m->attrs[0].i[ir_norm_dim(n->attrs[0].i[k], nd)], nd);
    if (is_identity(q, nd))
        return ps_b_like(b, m->in[0], &n->type);
    return ps_b_permute(b, m->in[0], q);
}

static ir_node *rule_permute_identity(ps_builder *b, ir_node *n)
{
    return is_identity(n->attrs[0].i, n->type.ndim) ? ps_b_like(b, n->in[0], &n->type) : NULL;
}

static ir_node *rule_reshape_reshape(ps_builder *b, ir_node *n)
{
    const ir_node *m = n->in[0];
    if (m->op != OP_reshape)
        return NULL;
    ir_node *r = ps_b_reshape(b, m->in[0], n->attrs[0].i, n->attrs[0].n);
    return r && ir_type_same(&r->type, &n->type) ? r : NULL;
}

/* A view whose result has its input's type (reshape, expand, squeeze, slice:
 * for these that is the identity). */
static ir_node *rule_view_same(ps_builder *b, ir_node *n)
{
    (void)b;
    return ir_type_same(&n->type, &n->in[0]->type) ? n->in[0] : NULL;
}

static ir_node *rule_cast_same(ps_builder *b, ir_node *n)
{
    (void)b;
    return ir_type_same(&n->type, &n->in[0]->type) ? n->in[0] : NULL;
}

/* Every value of dtype from is exact in dtype to. */
static bool lossless(tj_dtype from, tj_dtype to)
{
    if (from == to || from == TJ_BOOL)
        return true;
    switch (from) {
    case TJ_U8: return to == TJ_I16 || to == TJ_I32 || to == TJ_I64 || to == TJ_F32 || to == TJ_F64;
    case TJ_I8: return to == TJ_I16 || to == TJ_I32 || to == TJ_I64 || to == TJ_F32 || to == TJ_F64;
    case TJ_I16: return to == TJ_I32 || to == TJ_I64 || to == TJ_F32 || to == TJ_F64;
    case TJ_I32: return to == TJ_I64 || to == TJ_F64;
    case TJ_F32: return to == TJ_F64;
    default: return false;
    }
}

static ir_node *rule_cast_cast(ps_builder *b, ir_node *n)
{
    const ir_node *m = n->in[0];
    if (m->op != OP_cast || !lossless(m->in[0]->type.dtype, m->type.dtype))
        return NULL;
    return ps_b_cast(b, m->in[0], n->type.dtype);
}

/* ---- the table and the pass ------------------------------------------------------------ */

const ps_rule ps_simplify_rules[] = {
    {"fold-unary", PS_ANY_OP, rule_fold_unary},
    {"fold-binary", PS_ANY_OP, rule_fold_binary},
    {"fold-cast", OP_cast, rule_fold_cast},
    {"fold-where", OP_where, rule_fold_where},
    {"mul-one", OP_mul, rule_mul_one},
    {"mul-zero", OP_mul, rule_mul_zero},
    {"matmul-zero", OP_matmul, rule_matmul_zero},
    {"add-zero", OP_add, rule_add_zero},
    {"sub-zero", OP_sub, rule_sub_zero},
    {"div-one", OP_div, rule_div_one},
    {"neg-neg", OP_neg, rule_neg_neg},
    {"permute-permute", OP_permute, rule_permute_permute},
    {"permute-identity", OP_permute, rule_permute_identity},
    {"reshape-reshape", OP_reshape, rule_reshape_reshape},
    {"reshape-same", OP_reshape, rule_view_same},
    {"expand-same", OP_expand, rule_view_same},
    {"squeeze-noop", OP_squeeze, rule_view_same},
    {"slice-full", OP_slice, rule_view_same},
    {"cast-same", OP_cast, rule_cast_same},
    {"cast-cast", OP_cast, rule_cast_cast},
};
const int ps_simplify_nrules = (int)(sizeof ps_simplify_rules / sizeof *ps_simplify_rules);

ir_graph *ps_simplify(ir_graph *g, char *err, size_t nerr)
{
    ps_rewrite_opts o = {.pass = "simplify"};
    return ps_rewrite(g, ps_simplify_rules, ps_simplify_nrules, &o, err, nerr);
}
