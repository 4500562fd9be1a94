/* fe.h - internal to the frontend: the one path every op takes.
 *
 * fe_apply() checks inputs, computes the result type with the op's rule
 * (ir_infer, shared with tracing), runs the eager kernel or makes the view,
 * and hands the result to the caller's scope. Public entry points are thin:
 * they fill attributes and call fe_apply.
 */
#ifndef TJ_FE_H
#define TJ_FE_H

#include "../ir/ir.h"
#include "../runtime/rt.h"

/* Returns the result, owned by the current scope, or NULL with an error
 * "name(f32[2,3], ...): reason". A NULL mandatory input returns NULL and
 * keeps the error that produced it. */
tj_tensor *fe_apply(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a);

/* A wrapped scalar (weak type) for the _s ops: i64 for integral values
 * combined with integer tensors, else f64. Owned by the current scope. */
tj_tensor *fe_wrap_scalar(double v, const tj_tensor *like);

#endif
