/* infer.c - ir_infer(): checks what every op shares (input count, presence,
 * dtypes) and dispatches to the op's rule; also the pointwise unary and
 * binary rules, which come straight from the `rule` column of ops.def. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "infer.h"

static const ir_infer_fn rules[IR_NUM_OPS] = {
#define OP(name, kind, nmin, nmax, decomp, attrs) [OP_##name] = ir_infer_##name,
#define UNARY(name, rule, decomp, f32, f64, i) [OP_##name] = ir_infer_unary,
#define BINARY(name, rule, decomp, f32, f64, i) [OP_##name] = ir_infer_binary,
#include "ops.def"
};

int ir_fail(char *err, size_t nerr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && nerr)
        vsnprintf(err, nerr, fmt, ap);
    va_end(ap);
    return -1;
}

int ir_fail_numel(char *err, size_t nerr, const char *what, int ndim, const int64_t *shape)
{
    char s[IR_MAX_LIST * 24 + 4];
    size_t k = (size_t)snprintf(s, sizeof s, "[");
    for (int d = 0; d < ndim && k < sizeof s; d++)
        k += (size_t)snprintf(s + k, sizeof s - k, d ? ",%lld" : "%lld", (long long)shape[d]);
    if (k < sizeof s)
        snprintf(s + k, sizeof s - k, "]");
    return ir_fail(err, nerr, "%s %s has more than 2^63-1 elements", what, s);
}

void ir_set(ir_type *out, tj_dtype dtype, int ndim, const int64_t *shape)
{
    out->dtype = dtype;
    out->ndim = ndim;
    out->weak = false;
    for (int d = 0; d < ndim; d++)
        out->shape[d] = shape[d];
}

int ir_dims_mask(const ir_attr *dims, int ndim, uint32_t *mask, char *err, size_t nerr)
{
    *mask = 0;
    if (dims->n == 0) {
        *mask = ndim ? (uint32_t)((1u << ndim) - 1) : 0;
        return 0;
    }
    for (int k = 0; k < dims->n; k++) {
        int d = ir_norm_dim(dims->i[k], ndim);
        if (d < 0)
            return ir_fail(err, nerr, "dim %lld out of range for %d dims", (long long)dims->i[k],
                           ndim);
        if (ndim == 0)
            continue;
        if (*mask & (1u << d))
            return ir_fail(err, nerr, "dim %d appears twice", d);
        *mask |= 1u << d;
    }
    return 0;
}

uint32_t ir_dims_of(const ir_attr *dims, int ndim)
{
    uint32_t mask;
    char why[128];
    return ir_dims_mask(dims, ndim, &mask, why, sizeof why) == 0 ? mask : 0;
}

int ir_innermost(uint32_t mask, int ndim)
{
    int k = __builtin_popcount(mask);
    uint32_t last = ndim >= 32 ? ~0u : (1u << ndim) - 1;
    return ndim > 0 && k > 0 && mask == (last & ~((1u << (ndim - k)) - 1)) ? k : 0;
}

int ir_infer(ir_op op, const ir_type *const *in, int nin, const ir_attrs *a, ir_type *out,
             char *err, size_t nerr)
{
    if ((unsigned)op >= IR_NUM_OPS)
        return ir_fail(err, nerr, "unknown op %d", (int)op);
    const ir_opinfo *info = &ir_ops[op];
    if (nin < info->nmin || (info->nmax >= 0 && nin > info->nmax))
        return ir_fail(err, nerr, "takes %d..%d inputs, got %d", info->nmin,
                       info->nmax < 0 ? 999 : info->nmax, nin);
    for (int k = 0; k < nin; k++) {
        if (!in[k]) {
            if (k < info->nmin)
                return ir_fail(err, nerr, "input %d is missing", k);
            continue;
        }
        if (!ir_dtype_supported(in[k]->dtype))
            return ir_fail(err, nerr, "input %d has unsupported dtype %s", k,
                           tj_dtype_name(in[k]->dtype));
        if (in[k]->ndim < 0 || in[k]->ndim > TJ_MAX_DIMS)
            return ir_fail(err, nerr, "input %d has %d dims (at most %d)", k, in[k]->ndim,
                           TJ_MAX_DIMS);
    }
    out->weak = false;
    if (rules[op](op, in, nin, a, out, err, nerr))
        return -1;
    /* every rule's result: its element count must fit in int64 (views such
     * as expand make shapes no allocation has checked) */
    int64_t n;
    if (!ir_numel_checked(out->ndim, out->shape, &n))
    {
        char t[IR_MAX_LIST * 24 + 8];   /* the result is a type: symbolic dims print as sK */
        return ir_fail(err, nerr, "the result shape %s has more than 2^63-1 elements",
                       strchr(ir_type_str(out, t, sizeof t), '['));
    }
    return 0;
}

/* ---- pointwise rules ------------------------------------------------------ */

static ir_rule rule_of(ir_op op) { return ir_ops[op].rule; }

/* The dtype a pointwise op computes in, given the promoted input dtype. */
static tj_dtype compute_for(ir_rule rule, tj_dtype promoted)
{
    switch (rule) {
    case IR_RULE_FLOAT:
    case IR_RULE_TRUEDIV:
        return ir_dtype_is_float(promoted) ? promoted : TJ_F32;
    case IR_RULE_INTPOW:
        return promoted == TJ_BOOL ? TJ_I64 : promoted;
    default:
        return promoted;
    }
}

static tj_dtype result_for(ir_rule rule, tj_dtype compute)
{
    switch (rule) {
    case IR_RULE_PRED:
    case IR_RULE_LOGICAL:
    case IR_RULE_CMP:
        return TJ_BOOL;
    case IR_RULE_EXPONENT:
        return TJ_I32;
    default:
        return compute;
    }
}

static int check_rule(ir_rule rule, tj_dtype dt, char *err, size_t nerr)
{
    ir_category c = ir_dtype_category(dt);
    if ((rule == IR_RULE_SAME || rule == IR_RULE_ROUND || rule == IR_RULE_SUB ||
         rule == IR_RULE_NUMERIC) &&
        c == IR_CAT_BOOL)
        return ir_fail(err, nerr, "not defined for bool");
    if (rule == IR_RULE_BITWISE && c == IR_CAT_FLOAT)
        return ir_fail(err, nerr, "needs integer or bool inputs, got %s", tj_dtype_name(dt));
    if ((rule == IR_RULE_FLOATONLY || rule == IR_RULE_EXPONENT) && c != IR_CAT_FLOAT)
        return ir_fail(err, nerr, "not defined for %s (floating-point inputs only, as in PyTorch)",
                       tj_dtype_name(dt));
    if (rule == IR_RULE_INTONLY && c != IR_CAT_INT)
        return ir_fail(err, nerr, "not defined for %s (integer inputs only, as in PyTorch)",
                       tj_dtype_name(dt));
    return 0;
}

tj_dtype ir_compute_dtype(ir_op op, const ir_type *const *in, int nin)
{
    ir_kind k = ir_ops[op].kind;
    tj_dtype p = ir_promote(in, nin);
    if (k == IR_UNARY || k == IR_BINARY)
        return compute_for(rule_of(op), p);
    return p;
}

int ir_infer_unary(IR_INFER_ARGS)
{
    (void)nin;
    (void)a;
    ir_rule rule = rule_of(op);
    if (check_rule(rule, in[0]->dtype, err, nerr))
        return -1;
    tj_dtype c = compute_for(rule, in[0]->dtype);
    ir_set(out, result_for(rule, c), in[0]->ndim, in[0]->shape);
    return 0;
}

int ir_infer_binary(IR_INFER_ARGS)
{
    (void)a;
    ir_rule rule = rule_of(op);
    int ndim;
    int64_t shape[TJ_MAX_DIMS];
    if (!ir_broadcast(in[0], in[1], &ndim, shape))
        return ir_fail(err, nerr, "shapes cannot be broadcast together");
    tj_dtype p = ir_promote(in, nin);
    if (check_rule(rule, p, err, nerr))
        return -1;
    /* PyTorch: subtraction with any bool operand is an error, even when the
     * other operand promotes the pair to a number. */
    if (rule == IR_RULE_SUB && (in[0]->dtype == TJ_BOOL || in[1]->dtype == TJ_BOOL))
        return ir_fail(err, nerr, "not defined for bool");
    ir_set(out, result_for(rule, compute_for(rule, p)), ndim, shape);
    out->weak = in[0]->weak && in[1]->weak;
    return 0;
}

/* scalar: the wrapped number of a tensor-scalar op (tj_add_s, ...): a 0-dim
 * value whose type is weak, so it promotes like a Python number. */
int ir_infer_scalar(IR_INFER_ARGS)
{
    tj_dtype dt = (tj_dtype)a->a[1].i[0];
    if (dt != TJ_I64 && dt != TJ_F64 && dt != TJ_BOOL)
        return ir_fail(err, nerr, "a wrapped scalar is i64, f64 or bool, not %s", tj_dtype_name(dt));
    ir_set(out, dt, 0, NULL);
    out->weak = true;
    return 0;
}
