/* inspect.c - public functions that read a tensor's shape or values. While a
 * model is traced its tensors are symbolic: reading values is a graph break
 * (the call then runs eagerly), reading a dynamic dim specializes it. */
#include <math.h>
#include <stdio.h>

#include "fe.h"

/* A released handle: reported (its header is poisoned, runtime/tensor.c). */
static bool dead(const tj_tensor *t, const char *what)
{
    tj_tensor *in = (tj_tensor *)t;
    return rt_check_live(&in, 1, what) != 0;
}

/* A NULL tensor: the error that made it stays; with none pending, one naming
 * the function. */
static void null_tensor(const char *what)
{
    if (!rt_has_error())
        rt_error("%s: the tensor is NULL", what);
}

int64_t tj_size(const tj_tensor *t, int dim)
{
    if (!t) {
        null_tensor("tj_size");
        return -1;
    }
    if (dead(t, "size"))
        return -1;
    fe_trace_shape_read(t);
    int d = ir_norm_dim(dim, t->ndim);
    if (d < 0 || t->ndim == 0) {
        char b[96];
        rt_error("size: dim %d out of range for %s", dim, tj_describe(t, b, sizeof b));
        return -1;
    }
    return t->shape[d];
}

/* tj_shape and tj_data: runtime/access.c (libtjit_rt has them too). */

double tj_get(const tj_tensor *t, const int64_t *index)
{
    if (!t) {
        null_tensor("tj_get");
        return NAN;
    }
    if (dead(t, "get") || fe_trace_needs_values(t, "tj_get"))
        return NAN;
    for (int d = 0; d < t->ndim; d++) {
        if (index[d] < 0 || index[d] >= t->shape[d]) {
            char b[96];
            rt_error("get: index %lld out of range for dim %d of %s", (long long)index[d], d,
                     tj_describe(t, b, sizeof b));
            return NAN;
        }
    }
    return rt_load_f64(t, index);
}

double tj_item(tj_tensor *t)
{
    if (!t) {
        null_tensor("tj_item");
        return NAN;
    }
    if (dead(t, "item") || fe_trace_needs_values(t, "tj_item"))
        return NAN;
    if (rt_numel(t) != 1) {
        char b[96];
        rt_error("item: needs a tensor with one element, got %s", tj_describe(t, b, sizeof b));
        return NAN;
    }
    int64_t zero[TJ_MAX_DIMS] = {0};
    return tj_get(t, zero);
}
