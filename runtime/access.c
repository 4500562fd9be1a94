/* access.c - tj_shape, tj_strides, tj_offset, tj_numel and tj_data, in the
 * runtime so that a program linked against libtjit_rt alone (an exported
 * model's, docs/export.md) can read its results. While a model is traced
 * (libtjit) its tensors are symbolic: reading a size, a stride, an offset or
 * the element count is recorded (they follow the sizes: a dynamic dim
 * specializes) and reading data is a graph break; the tracer's two hooks
 * (frontend/trace.c) are weak references here, absent in libtjit_rt, which
 * has no tracing. The other readers stay in frontend/inspect.c. */
#include "rt.h"

bool fe_trace_needs_values(const tj_tensor *t, const char *what) __attribute__((weak));
void fe_trace_shape_read(const tj_tensor *t) __attribute__((weak));
void fe_trace_any_size_read(const tj_tensor *t) __attribute__((weak));

static void shape_read(const tj_tensor *t)
{
    if (t && fe_trace_shape_read)
        fe_trace_shape_read(t);
}

const int64_t *tj_shape(const tj_tensor *t)
{
    tj_tensor *in = (tj_tensor *)t;
    if (t && rt_check_live(&in, 1, "shape") != 0)
        return NULL;
    shape_read(t);
    return t ? t->shape : NULL;
}

static void layout_read(const tj_tensor *t)
{
    if (t && fe_trace_any_size_read)
        fe_trace_any_size_read(t);
}

const int64_t *tj_strides(const tj_tensor *t)
{
    layout_read(t);
    return t ? t->strides : NULL;
}

int64_t tj_offset(const tj_tensor *t)
{
    layout_read(t);
    return t ? t->offset : -1;
}

int64_t tj_numel(const tj_tensor *t)
{
    shape_read(t);
    return rt_numel(t);
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
