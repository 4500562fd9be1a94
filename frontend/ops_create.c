/* ops_create.c - public entry points of the creation and random ops: empty,
 * zeros, ones, full, scalar (all the full op), arange, manual_seed, rand,
 * randn. A random op reserves its counters from the global generator here and
 * records (seed, offset) in its attributes, so a traced graph replays a draw
 * exactly and the kernel's values do not depend on the thread count. */
#include "fe.h"
#include "../runtime/random.h"

/* The shape attribute of a creation op: a count the rule rejects (outside
 * 0..TJ_MAX_DIMS) is kept as given so the message names it; NULL shape with
 * dims is refused here. */
static bool shape_attr(ir_op op, ir_attr *s, int ndim, const int64_t *shape)
{
    if (ndim > 0 && ndim <= IR_MAX_LIST && !shape) {
        rt_error("%s(): shape is NULL for %d dims", ir_ops[op].name, ndim);
        return false;
    }
    if (ndim < 0 || ndim > IR_MAX_LIST)
        s->n = ndim;   /* the rule rejects it: "shape has 20 entries (expected 0..8)" */
    else
        ir_attr_ints(s, shape, ndim);
    return true;
}

static tj_tensor *full(tj_dtype dt, int ndim, const int64_t *shape, double value)
{
    ir_attrs at = {0};
    if (!shape_attr(OP_full, &at.a[0], ndim, shape))
        return NULL;
    ir_attr_float(&at.a[1], value);
    ir_attr_int(&at.a[2], dt);
    return fe_apply(OP_full, NULL, 0, &at);
}

/* Uninitialized memory is never handed out: empty is zeros. */
tj_tensor *tj_empty(tj_dtype dt, int ndim, const int64_t *shape)
{
    return full(dt, ndim, shape, 0);
}

tj_tensor *tj_zeros(tj_dtype dt, int ndim, const int64_t *shape)
{
    return full(dt, ndim, shape, 0);
}

tj_tensor *tj_ones(tj_dtype dt, int ndim, const int64_t *shape)
{
    return full(dt, ndim, shape, 1);
}

tj_tensor *tj_full(tj_dtype dt, int ndim, const int64_t *shape, double value)
{
    return full(dt, ndim, shape, value);
}

tj_tensor *tj_scalar(tj_dtype dt, double value) { return full(dt, 0, NULL, value); }

tj_tensor *tj_arange(tj_dtype dt, double start, double end, double step)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], start);
    ir_attr_float(&at.a[1], end);
    ir_attr_float(&at.a[2], step);
    ir_attr_int(&at.a[3], dt);
    return fe_apply(OP_arange, NULL, 0, &at);
}

void tj_manual_seed(uint64_t seed) { fe_rng_seed(seed); }

/* Counters are reserved only for a request the rule accepts, so a failed
 * call leaves the generator where it was. */
static tj_tensor *draw(ir_op op, tj_dtype dt, int ndim, const int64_t *shape)
{
    ir_attrs at = {0};
    if (!shape_attr(op, &at.a[0], ndim, shape))
        return NULL;
    ir_attr_int(&at.a[1], dt);
    ir_attr_int(&at.a[2], 0);
    ir_attr_int(&at.a[3], 0);
    ir_type ty;
    char why[8];
    if (ir_infer(op, NULL, 0, &at, &ty, why, sizeof why) == 0) {
        uint64_t seed, offset = fe_rng_reserve((uint64_t)ir_type_numel(&ty), &seed);
        ir_attr_int(&at.a[2], (int64_t)seed);
        ir_attr_int(&at.a[3], (int64_t)offset);
    }
    return fe_apply(op, NULL, 0, &at);
}

tj_tensor *tj_rand(tj_dtype dt, int ndim, const int64_t *shape)
{
    return draw(OP_rand, dt, ndim, shape);
}

tj_tensor *tj_randn(tj_dtype dt, int ndim, const int64_t *shape)
{
    return draw(OP_randn, dt, ndim, shape);
}
