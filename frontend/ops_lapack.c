/* ops_lapack.c - public entry points of ops.def's "linalg via LAPACK" rows:
 * tj_inv, tj_solve, tj_det, tj_slogdet, tj_cholesky, tj_qr. A second result
 * (slogdet's sign, qr's R) is its own row, made when asked for. */
#include "fe.h"

static tj_tensor *one(ir_op op, tj_tensor *x) { return fe_apply(op, &x, 1, NULL); }

tj_tensor *tj_inv(tj_tensor *x) { return one(OP_inv, x); }
tj_tensor *tj_det(tj_tensor *x) { return one(OP_det, x); }

tj_tensor *tj_solve(tj_tensor *a, tj_tensor *b)
{
    return fe_apply(OP_solve, (tj_tensor *[]){a, b}, 2, NULL);
}

/* The first result, and the second through *second when asked for. */
static tj_tensor *pair(ir_op op1, ir_op op2, tj_tensor *x, tj_tensor **second)
{
    tj_tensor *v = one(op1, x), *s = v && second ? one(op2, x) : NULL;
    if (second)
        *second = s;
    return v && (!second || s) ? v : NULL;
}

tj_tensor *tj_slogdet(tj_tensor *x, tj_tensor **sign)
{
    return pair(OP_slogdet, OP_slogdet_sign, x, sign);
}

tj_tensor *tj_qr(tj_tensor *x, tj_tensor **r) { return pair(OP_qr_q, OP_qr_r, x, r); }

tj_tensor *tj_cholesky(tj_tensor *x, bool upper)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], upper);
    return fe_apply(OP_cholesky, &x, 1, &at);
}
