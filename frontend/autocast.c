/* autocast.c - tj_autocast(dt) ... tj_autocast_end(): mixed precision in a
 * per-thread scope, like torch.autocast("cpu", dtype=torch.bfloat16).
 *
 * Inside the scope fe_apply casts the float inputs of some ops first:
 *   low   matmul, linear, conv2d: f32 inputs to the scope's dtype (bf16 or
 *         f16), so they run (and return) in it;
 *   f32   softmax, log_softmax, layer_norm, rms_norm, batch_norm,
 *         cross_entropy and the float reductions (sum, mean, prod, var, std,
 *         logsumexp): f16/bf16 inputs to f32, so they return f32;
 *   others promote as usual (a bf16 matmul result added to an f32 bias
 *   gives f32, as in PyTorch).
 * f64 tensors and wrapped numbers are never cast (torch's is_eligible). The
 * casts are ordinary cast ops: traced into graphs, differentiated by
 * autograd. A compiled handle guards on the scope's dtype (compile.c), so a
 * graph traced inside the scope is not reused outside it. tj_autocast(TJ_F32)
 * turns it off in a nested scope (torch: enabled=False).
 */
#include <string.h>

#include "fe.h"

#define FE_AUTOCAST_DEPTH 32

static _Thread_local tj_dtype stack[FE_AUTOCAST_DEPTH];
static _Thread_local int depth;
static _Thread_local int over;   /* scopes opened beyond the depth (ended first) */

typedef enum { AC_NONE, AC_LOW, AC_F32 } ac_policy;

/* The one list of what autocast does per op (torch's CPU lists, trimmed to
 * tjit's ops). */
static ac_policy policy(ir_op op)
{
    switch (op) {
    case OP_matmul:
    case OP_linear:
    case OP_conv2d: return AC_LOW;
    case OP_softmax:
    case OP_log_softmax:
    case OP_layer_norm:
    case OP_rms_norm:
    case OP_batch_norm:
    case OP_cross_entropy:
    case OP_sum:
    case OP_mean:
    case OP_prod:
    case OP_var:
    case OP_std:
    case OP_logsumexp: return AC_F32;
    default: return AC_NONE;
    }
}

tj_dtype fe_autocast_dtype(void) { return depth > 0 ? stack[depth - 1] : TJ_F32; }

int tj_autocast(tj_dtype dt)
{
    bool ok = dt == TJ_BF16 || dt == TJ_F16 || dt == TJ_F32;
    if (depth == FE_AUTOCAST_DEPTH) {
        over++;
        rt_error("tj_autocast: more than %d nested scopes", FE_AUTOCAST_DEPTH);
        return -1;
    }
    /* a bad dtype still opens a scope (the enclosing one's), so begin and
     * end stay balanced */
    stack[depth] = ok ? dt : fe_autocast_dtype();
    depth++;
    if (!ok) {
        rt_error("tj_autocast: dtype %s is not bf16, f16 or f32 (off)", tj_dtype_name(dt));
        return -1;
    }
    return 0;
}

void tj_autocast_end(void)
{
    if (over > 0)
        over--;
    else if (depth > 0)
        depth--;
}

int fe_autocast_inputs(ir_op op, tj_tensor *const *in, int nin, tj_tensor **cast)
{
    tj_dtype ac = fe_autocast_dtype();
    ac_policy p = ac == TJ_F32 ? AC_NONE : policy(op);
    if (p == AC_NONE)
        return 0;
    tj_dtype to = p == AC_LOW ? ac : TJ_F32;
    int n = 0;
    for (int k = 0; k < nin; k++) {
        tj_tensor *x = in[k];
        bool eligible = x && !x->weak && ir_dtype_is_float(x->dtype) && x->dtype != TJ_F64 &&
                        x->dtype != to && (p == AC_LOW || ir_dtype_is_half(x->dtype));
        cast[k] = x;
        if (!eligible)
            continue;
        ir_attrs at;
        memset(&at, 0, sizeof at);
        ir_attr_int(&at.a[0], to);
        if (!(cast[k] = fe_apply(OP_cast, &x, 1, &at)))
            return -1;
        n++;
    }
    return n;
}
