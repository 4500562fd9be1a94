/* views.c - view ops (to be written). */
#include "rt.h"

tj_tensor *rt_view_op(ir_op op, tj_tensor *x, const ir_attrs *a, const ir_type *out)
{
    rt_error("not implemented yet");
    return NULL;
}
