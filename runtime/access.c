/* access.c - tj_shape and tj_data, in the runtime so that a program linked
 * against libtjit_rt alone (an exported model's, docs/export.md) can read
 * its results. While a model is traced (libtjit) its tensors are symbolic:
 * reading a shape is recorded (a dynamic dim specializes) and reading data is
 * a graph break; the tracer's two hooks (frontend/trace.c) are weak
 * references here, absent in libtjit_rt, which has no tracing. The other
 * readers stay in frontend/inspect.c. */
#include "rt.h"

bool fe_trace_needs_values(const tj_tensor *t, const char *what) __attribute__((weak));
void fe_trace_shape_read(const tj_tensor *t) __attribute__((weak));

const int64_t *tj_shape(const tj_tensor *t)
{
    tj_tensor *in = (tj_tensor *)t;
    if (t && rt_check_live(&in, 1, "shape") != 0)
        return NULL;
    if (fe_trace_shape_read)
        fe_trace_shape_read(t);
    return t ? t->shape : NULL;
}

void *tj_data(tj_tensor *t)
{
    if (!t) {
        if (!rt_has_error())
            rt_error("tj_data: the tensor is NULL");
        return NULL;
    }
    if (rt_check_live(&t, 1, "data") != 0 || (fe_trace_needs_values && fe_trace_needs_values(t, "tj_data")))
        return NULL;
    if (t->storage)   /* the caller may write through it: kept packed copies are stale */
        atomic_fetch_add_explicit(&t->storage->raw, 1, memory_order_relaxed);
    return rt_ptr(t);
}
