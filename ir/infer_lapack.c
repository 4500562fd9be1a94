/* infer_lapack.c - shape/dtype rules of ops.def's "linalg via LAPACK" rows
 * (kernels: runtime/k_lapack.c). Matrices are the last two dims, batched over
 * the leading ones; the operands are floats (integers and bool are refused,
 * as torch.linalg does; f16/bf16 compute in f32) and the result keeps the
 * input's dtype:
 *
 *   inv           [*,n,n] -> [*,n,n]
 *   solve         A [*,n,n], B [*,n,k] -> [*,n,k], batch dims broadcast; B is
 *                 a vector [*,n] when it is 1-D or when its shape is A's
 *                 without the last dim (torch.linalg.solve's rule) -> [*,n]
 *   det, slogdet, slogdet_sign   [*,n,n] -> [*]
 *   cholesky      [*,n,n] -> [*,n,n]
 *   qr_q, qr_r    [*,m,n] -> [*,m,k] and [*,k,n], k = min(m,n)
 */
#include <string.h>

#include "infer.h"

/* A float matrix (or batch of them): at least 2 dims, square when asked. */
static int matrix(const ir_type *t, const char *what, bool square, char *err, size_t nerr)
{
    if (!ir_dtype_is_float(t->dtype))
        return ir_fail(err, nerr, "%s must be a floating-point tensor, got %s (as torch.linalg)",
                       what, tj_dtype_name(t->dtype));
    if (t->ndim < 2)
        return ir_fail(err, nerr, "%s must have at least 2 dims [*,m,n], got %d-D", what,
                       t->ndim);
    if (square && t->shape[t->ndim - 1] != t->shape[t->ndim - 2])
        return ir_fail(err, nerr, "%s must be batches of square matrices, got %s by %s", what,
                       IR_DIM(t->shape[t->ndim - 2]), IR_DIM(t->shape[t->ndim - 1]));
    return 0;
}

int ir_infer_inv(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    if (matrix(in[0], "the input", true, err, nerr))
        return -1;
    ir_set(out, in[0]->dtype, in[0]->ndim, in[0]->shape);
    return 0;
}

int ir_infer_cholesky(IR_INFER_ARGS) { return ir_infer_inv(op, in, nin, a, out, err, nerr); }

/* [*,n,n] -> [*] */
int ir_infer_det(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    if (matrix(in[0], "the input", true, err, nerr))
        return -1;
    ir_set(out, in[0]->dtype, in[0]->ndim - 2, in[0]->shape);
    return 0;
}

int ir_infer_slogdet(IR_INFER_ARGS) { return ir_infer_det(op, in, nin, a, out, err, nerr); }
int ir_infer_slogdet_sign(IR_INFER_ARGS) { return ir_infer_det(op, in, nin, a, out, err, nerr); }

static int qr(const ir_type *x, bool q, ir_type *out, char *err, size_t nerr)
{
    if (matrix(x, "the input", false, err, nerr))
        return -1;
    int nd = x->ndim;
    int64_t m = x->shape[nd - 2], n = x->shape[nd - 1], shape[TJ_MAX_DIMS];
    if (m < 0 || n < 0)
        return ir_fail(err, nerr, "needs concrete matrix sizes, got %s by %s", IR_DIM(m),
                       IR_DIM(n));
    memcpy(shape, x->shape, sizeof shape);
    int64_t k = m < n ? m : n;
    shape[nd - 2] = q ? m : k;
    shape[nd - 1] = q ? k : n;
    ir_set(out, x->dtype, nd, shape);
    return 0;
}

int ir_infer_qr_q(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    return qr(in[0], true, out, err, nerr);
}

int ir_infer_qr_r(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    return qr(in[0], false, out, err, nerr);
}

bool ir_solve_vector_rhs(int andim, const int64_t *ashape, int bndim, const int64_t *bshape)
{
    return bndim == 1 ||
           (bndim == andim - 1 && !memcmp(ashape, bshape, (size_t)bndim * sizeof *ashape));
}

int ir_infer_solve(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    const ir_type *A = in[0], *B = in[1];
    if (matrix(A, "A", true, err, nerr))
        return -1;
    if (B->dtype != A->dtype)
        return ir_fail(err, nerr, "A and B must have one dtype, got %s and %s",
                       tj_dtype_name(A->dtype), tj_dtype_name(B->dtype));
    if (B->ndim < 1)
        return ir_fail(err, nerr, "B must have at least 1 dim, got 0-D");
    bool vec = ir_solve_vector_rhs(A->ndim, A->shape, B->ndim, B->shape);
    int64_t n = A->shape[A->ndim - 1], bn = B->shape[B->ndim - (vec ? 1 : 2)];
    if (bn != n)
        return ir_fail(err, nerr, "A is %s by %s but B has %s rows", IR_DIM(n), IR_DIM(n),
                       IR_DIM(bn));
    ir_type ba = *A, bb = *B;
    ba.ndim = A->ndim - 2;
    bb.ndim = B->ndim - (vec ? 1 : 2);
    int nd;
    int64_t shape[TJ_MAX_DIMS + 2];
    if (!ir_broadcast(&ba, &bb, &nd, shape)) {
        char s1[IR_MAX_LIST * 24 + 8], s2[IR_MAX_LIST * 24 + 8];
        return ir_fail(err, nerr, "batch dims of A (%s) and B (%s) cannot be broadcast",
                       strchr(ir_type_str(&ba, s1, sizeof s1), '['),
                       strchr(ir_type_str(&bb, s2, sizeof s2), '['));
    }
    if (nd + (vec ? 1 : 2) > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "result has more than %d dims", TJ_MAX_DIMS);
    shape[nd++] = n;
    if (!vec)
        shape[nd++] = B->shape[B->ndim - 1];
    ir_set(out, A->dtype, nd, shape);
    return 0;
}

bool ir_op_lapack(int op)
{
    switch (op) {
    case OP_inv: case OP_solve: case OP_det: case OP_slogdet: case OP_slogdet_sign:
    case OP_cholesky: case OP_qr_q: case OP_qr_r: return true;
    default: return false;
    }
}
