/* marks.c - tj_mark_dynamic and tj_mark_static: per-dim marks on a tensor
 * that tj_call reads when it makes the guards of a new graph (compile.c). */
#include "fe.h"

static int mark(tj_tensor *t, int dim, bool dynamic, const char *what)
{
    if (!t) {
        rt_error("%s: the tensor is NULL", what);
        return -1;
    }
    if (rt_check_live(&t, 1, what) != 0)
        return -1;
    int d = dim < 0 ? dim + t->ndim : dim;
    if (d < 0 || d >= t->ndim) {
        rt_error("%s: dim %d out of range for %d dims", what, dim, t->ndim);
        return -1;
    }
    uint32_t bit = 1u << d;
    t->dyn_mark = dynamic ? t->dyn_mark | bit : t->dyn_mark & ~bit;
    t->static_mark = dynamic ? t->static_mark & ~bit : t->static_mark | bit;
    return 0;
}

int tj_mark_dynamic(tj_tensor *t, int dim) { return mark(t, dim, true, "tj_mark_dynamic"); }
int tj_mark_static(tj_tensor *t, int dim) { return mark(t, dim, false, "tj_mark_static"); }
