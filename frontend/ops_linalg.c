/* ops_linalg.c - public entry points of the linear-algebra rows of ops.def's
 * "nn and linalg" section (products on matmul, tensordot, trace, cross):
 * they fill the attributes and call fe_apply. */
#include "fe.h"

static tj_tensor *two(ir_op op, tj_tensor *a, tj_tensor *b)
{
    return fe_apply(op, (tj_tensor *[]){a, b}, 2, NULL);
}

tj_tensor *tj_bmm(tj_tensor *a, tj_tensor *b) { return two(OP_bmm, a, b); }
tj_tensor *tj_mv(tj_tensor *m, tj_tensor *v) { return two(OP_mv, m, v); }
tj_tensor *tj_dot(tj_tensor *a, tj_tensor *b) { return two(OP_dot, a, b); }
tj_tensor *tj_outer(tj_tensor *a, tj_tensor *b) { return two(OP_outer, a, b); }

static tj_tensor *add_product(ir_op op, tj_tensor *c, tj_tensor *a, tj_tensor *b, double beta,
                              double alpha)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], beta);
    ir_attr_float(&at.a[1], alpha);
    return fe_apply(op, (tj_tensor *[]){c, a, b}, 3, &at);
}

tj_tensor *tj_addmm(tj_tensor *c, tj_tensor *a, tj_tensor *b, double beta, double alpha)
{
    return add_product(OP_addmm, c, a, b, beta, alpha);
}

tj_tensor *tj_addmv(tj_tensor *c, tj_tensor *m, tj_tensor *v, double beta, double alpha)
{
    return add_product(OP_addmv, c, m, v, beta, alpha);
}

tj_tensor *tj_baddbmm(tj_tensor *c, tj_tensor *a, tj_tensor *b, double beta, double alpha)
{
    return add_product(OP_baddbmm, c, a, b, beta, alpha);
}

tj_tensor *tj_tensordot(tj_tensor *a, tj_tensor *b, const int *dims_a, const int *dims_b, int n)
{
    if (n < 0 || n > TJ_MAX_DIMS) {
        rt_error("tensordot: %d contracted dims (0 to %d)", n, TJ_MAX_DIMS);
        return NULL;
    }
    ir_attrs at = {0};
    ir_attr_dims(&at.a[0], dims_a, n);
    ir_attr_dims(&at.a[1], dims_b, n);
    return fe_apply(OP_tensordot, (tj_tensor *[]){a, b}, 2, &at);
}

tj_tensor *tj_trace(tj_tensor *x) { return fe_apply(OP_trace, &x, 1, NULL); }

tj_tensor *tj_cross(tj_tensor *a, tj_tensor *b, int dim)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], dim);
    return fe_apply(OP_cross, (tj_tensor *[]){a, b}, 2, &at);
}
