/* eager.c - rt_eager(): one op on concrete inputs whose result type is
 * already inferred: makes the view (copying first when a reshape needs it) or
 * runs the op's eager kernel. Shared by the eager API (frontend/apply.c) and
 * the graph executor and plans (sched/). */
#include "rt.h"

tj_tensor *rt_eager(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                    const ir_type *ty)
{
    if (ir_ops[op].kind == IR_VIEW) {
        bool need_copy = false;
        tj_tensor *v = rt_view_op(op, in[0], a, ty, &need_copy);
        if (v || !need_copy)
            return v;
        /* A reshape the strides cannot express: copy, then view. */
        ir_type ct;
        rt_type_of(in[0], &ct);
        tj_tensor *c = rt_tensor_of(&ct);
        if (!c)
            return NULL;
        tj_tensor *src = in[0];
        if (rt_kernels[OP_copy](OP_copy, c, &src, 1, NULL) != 0) {
            tj_release(c);
            return NULL;
        }
        v = rt_view_op(op, c, a, ty, &need_copy);
        tj_release(c);
        return v;
    }
    tj_tensor *out = rt_tensor_of(ty);
    if (!out)
        return NULL;
    if (rt_kernels[op](op, out, in, nin, a) != 0) {
        tj_release(out);
        return NULL;
    }
    return out;
}
