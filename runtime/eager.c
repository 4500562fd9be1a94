/* eager.c - rt_eager(): one op on concrete inputs whose result type is
 * already inferred: makes the view (copying first when a reshape needs it) or
 * runs the op's eager kernel. Shared by the eager API (frontend/apply.c) and
 * the graph executor and plans (sched/). While profiling, each is an event
 * (profile.h). */
#include "profile.h"

static tj_tensor *eager(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
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
    if (rt_run_kernel(op, out, in, nin, a) != 0) {
        tj_release(out);
        return NULL;
    }
    return out;
}

tj_tensor *rt_eager(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                    const ir_type *ty)
{
    if (!rt_prof_on())
        return eager(op, in, nin, a, ty);
    int64_t t0 = rt_prof_now();
    rt_prof_id prev = rt_prof_label_set(rt_prof_op(op));
    tj_tensor *r = eager(op, in, nin, a, ty);
    rt_prof_label_set(prev);
    if (r)
        rt_prof_eager_done(op, in, nin, r, t0);
    return r;
}
