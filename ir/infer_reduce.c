/* infer_reduce.c - shape/dtype rules of the reductions: sum, mean, prod, amax,
 * amin, logsumexp, all, any, var, std, argmax, argmin, xor_sum.
 *
 * Attributes: dims (INTS; empty = every dim), [correction (INT) for var/std],
 * keepdim (BOOL). The result drops the reduced dims, or keeps them as size 1
 * with keepdim. Dtypes follow PyTorch: sum/prod of integers and bool give i64;
 * mean/var/std need a float input; logsumexp of an integer or bool input
 * computes in f32; amax/amin keep the dtype; all/any give bool (u8 for a u8
 * input, as PyTorch 1.13 does); argmax/argmin
 * give i64, take at most one dim (none: the flattened tensor) and reject bool.
 * Reductions without an identity (amax, amin, argmax, argmin) reject a reduced
 * dim of size 0.
 */
#include "infer.h"

void ir_reduced_shape(const ir_type *t, uint32_t mask, bool keepdim, ir_type *out,
                          tj_dtype dt)
{
    int n = 0;
    int64_t shape[TJ_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        if (!(mask & (1u << d)))
            shape[n++] = t->shape[d];
        else if (keepdim)
            shape[n++] = 1;
    }
    ir_set(out, dt, n, shape);
}

/* Index of the keepdim attribute: last in the schema. */
static bool keepdim_of(ir_op op, const ir_attrs *a)
{
    return a->a[ir_ops[op].nattrs - 1].i[0] != 0;
}

/* Shared tail: dims -> mask -> result type. */
static int reduce_to(ir_op op, const ir_type *x, const ir_attrs *a, tj_dtype dt,
                     ir_type *out, uint32_t *mask, char *err, size_t nerr)
{
    if (ir_dims_mask(&a->a[0], x->ndim, mask, err, nerr))
        return -1;
    ir_reduced_shape(x, *mask, keepdim_of(op, a), out, dt);
    return 0;
}

/* Reductions without an identity need every reduced dim non-empty. */
static int check_nonempty(const ir_type *x, uint32_t mask, char *err, size_t nerr)
{
    for (int d = 0; d < x->ndim; d++)
        if ((mask & (1u << d)) && x->shape[d] == 0)
            return ir_fail(err, nerr, "cannot reduce over dim %d of size 0 (no identity)", d);
    return 0;
}

static int need_float(const ir_type *x, char *err, size_t nerr)
{
    if (!ir_dtype_is_float(x->dtype))
        return ir_fail(err, nerr, "needs a floating-point input, got %s",
                       tj_dtype_name(x->dtype));
    return 0;
}

/* sum and prod: integers and bool accumulate in i64. */
static int infer_sum_like(IR_INFER_ARGS)
{
    (void)nin;
    uint32_t mask;
    tj_dtype dt = ir_dtype_is_float(in[0]->dtype) ? in[0]->dtype : TJ_I64;
    return reduce_to(op, in[0], a, dt, out, &mask, err, nerr);
}

static int infer_float_only(IR_INFER_ARGS)
{
    (void)nin;
    uint32_t mask;
    if (need_float(in[0], err, nerr))
        return -1;
    return reduce_to(op, in[0], a, in[0]->dtype, out, &mask, err, nerr);
}

static int infer_extreme(IR_INFER_ARGS)
{
    (void)nin;
    uint32_t mask;
    if (reduce_to(op, in[0], a, in[0]->dtype, out, &mask, err, nerr))
        return -1;
    return check_nonempty(in[0], mask, err, nerr);
}

static int infer_logical(IR_INFER_ARGS)
{
    (void)nin;
    uint32_t mask;
    tj_dtype dt = in[0]->dtype == TJ_U8 ? TJ_U8 : TJ_BOOL;
    return reduce_to(op, in[0], a, dt, out, &mask, err, nerr);
}

int ir_infer_sum(IR_INFER_ARGS) { return infer_sum_like(op, in, nin, a, out, err, nerr); }
int ir_infer_prod(IR_INFER_ARGS) { return infer_sum_like(op, in, nin, a, out, err, nerr); }
int ir_infer_mean(IR_INFER_ARGS) { return infer_float_only(op, in, nin, a, out, err, nerr); }
int ir_infer_var(IR_INFER_ARGS) { return infer_float_only(op, in, nin, a, out, err, nerr); }
int ir_infer_std(IR_INFER_ARGS) { return infer_float_only(op, in, nin, a, out, err, nerr); }
int ir_infer_amax(IR_INFER_ARGS) { return infer_extreme(op, in, nin, a, out, err, nerr); }
int ir_infer_amin(IR_INFER_ARGS) { return infer_extreme(op, in, nin, a, out, err, nerr); }
int ir_infer_all(IR_INFER_ARGS) { return infer_logical(op, in, nin, a, out, err, nerr); }
int ir_infer_any(IR_INFER_ARGS) { return infer_logical(op, in, nin, a, out, err, nerr); }

int ir_infer_logsumexp(IR_INFER_ARGS)
{
    (void)nin;
    uint32_t mask;
    tj_dtype dt = ir_dtype_is_float(in[0]->dtype) ? in[0]->dtype : TJ_F32;
    return reduce_to(op, in[0], a, dt, out, &mask, err, nerr);
}

static int infer_arg(IR_INFER_ARGS)
{
    (void)nin;
    uint32_t mask;
    const ir_type *x = in[0];
    if (a->a[0].n > 1)
        return ir_fail(err, nerr, "takes one dim or none, got %d dims", a->a[0].n);
    if (x->dtype == TJ_BOOL)
        return ir_fail(err, nerr, "not defined for bool");
    if (reduce_to(op, x, a, TJ_I64, out, &mask, err, nerr))
        return -1;
    if (a->a[0].n == 0 && ir_type_numel(x) == 0)
        return ir_fail(err, nerr, "cannot reduce an empty tensor without a dim");
    return check_nonempty(x, mask, err, nerr);
}

int ir_infer_argmax(IR_INFER_ARGS) { return infer_arg(op, in, nin, a, out, err, nerr); }
int ir_infer_argmin(IR_INFER_ARGS) { return infer_arg(op, in, nin, a, out, err, nerr); }

/* xor_sum (PrimTorch's prim): integers and bool only, x's dtype; an empty
 * reduction gives 0. */
int ir_infer_xor_sum(IR_INFER_ARGS)
{
    (void)nin;
    uint32_t mask;
    if (ir_dtype_is_float(in[0]->dtype))
        return ir_fail(err, nerr, "needs an integer or bool input, got %s",
                       tj_dtype_name(in[0]->dtype));
    return reduce_to(op, in[0], a, in[0]->dtype, out, &mask, err, nerr);
}
