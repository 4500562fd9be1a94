/* infer_linalg.c - shape/dtype rules of the linear-algebra rows of ops.def's
 * "nn and linalg" section (DCOMP rows, decomposed in passes/decomp_linalg.c
 * onto matmul, views and pointwise ops). Operands of a product share one
 * dtype, as matmul's (torch.outer promotes, as torch does):
 *
 *   bmm       [B,N,K] x [B,K,M] -> [B,N,M] (no broadcasting)
 *   mv        [N,M] x [M] -> [N]
 *   dot       [N] x [N] -> []
 *   outer     [N], [M] -> [N,M], promoted
 *   addmm     c, [N,K] x [K,M]: c broadcast to [N,M]; beta c + alpha (a b)
 *   addmv     c, [N,M] x [M]: c broadcast to [N]
 *   baddbmm   c, [B,N,K] x [B,K,M]: c broadcast to [B,N,M]
 *   tensordot a, b, dims_a, dims_b (equal lengths, sizes match, no repeats)
 *             -> a's other dims, then b's
 *   trace     [N,M] -> [] (sum of the diagonal; integers give i64)
 *   cross     a, b broadcast, size 3 at dim, one dtype -> the broadcast shape
 *
 * beta and alpha of an integer product must be integral (torch truncates).
 */
#include <math.h>
#include <string.h>

#include "infer.h"

static int need_ndim(const ir_type *t, int nd, const char *what, const char *form, char *err,
                     size_t nerr)
{
    if (t->ndim != nd)
        return ir_fail(err, nerr, "%s must be %d-D %s, got %d-D", what, nd, form, t->ndim);
    return 0;
}

static int product(const ir_type *const *in, const ir_attrs *a, ir_type *out, char *err,
                   size_t nerr)
{
    return ir_infer(OP_matmul, in, 2, a, out, err, nerr);
}

int ir_infer_bmm(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (need_ndim(in[0], 3, "a", "[B,N,K]", err, nerr) ||
        need_ndim(in[1], 3, "b", "[B,K,M]", err, nerr))
        return -1;
    if (in[0]->shape[0] != in[1]->shape[0])
        return ir_fail(err, nerr, "batch sizes differ: %s and %s", IR_DIM(in[0]->shape[0]),
                       IR_DIM(in[1]->shape[0]));
    return product(in, a, out, err, nerr);
}

int ir_infer_mv(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (need_ndim(in[0], 2, "the matrix", "[N,M]", err, nerr) ||
        need_ndim(in[1], 1, "the vector", "[M]", err, nerr))
        return -1;
    return product(in, a, out, err, nerr);
}

int ir_infer_dot(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (need_ndim(in[0], 1, "a", "[N]", err, nerr) || need_ndim(in[1], 1, "b", "[N]", err, nerr))
        return -1;
    return product(in, a, out, err, nerr);
}

int ir_infer_outer(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    if (need_ndim(in[0], 1, "a", "[N]", err, nerr) || need_ndim(in[1], 1, "b", "[M]", err, nerr))
        return -1;
    ir_set(out, ir_promote(in, 2), 2, (int64_t[]){in[0]->shape[0], in[1]->shape[0]});
    return 0;
}

/* beta c + alpha (a b): c broadcasts to the product's shape, one dtype. */
static int add_product(const ir_type *const *in, const ir_attrs *a, ir_type *out, char *err,
                       size_t nerr)
{
    const ir_type *c = in[0];
    if (product(in + 1, NULL, out, err, nerr))
        return -1;
    if (c->dtype != out->dtype)
        return ir_fail(err, nerr, "input must have the product's dtype %s, got %s",
                       tj_dtype_name(out->dtype), tj_dtype_name(c->dtype));
    int nd;
    int64_t shape[TJ_MAX_DIMS];
    if (!ir_broadcast(c, out, &nd, shape) || nd != out->ndim ||
        memcmp(shape, out->shape, (size_t)nd * sizeof *shape)) {
        char s1[96], s2[96];
        return ir_fail(err, nerr, "input %s does not broadcast to the product's shape %s",
                       ir_type_str(c, s1, sizeof s1), ir_type_str(out, s2, sizeof s2));
    }
    for (int k = 0; k < 2; k++) {
        double v = a->a[k].f;
        if (!ir_dtype_is_float(out->dtype) && v != floor(v))
            return ir_fail(err, nerr, "%s %g must be integral for %s operands",
                           k ? "alpha" : "beta", v, tj_dtype_name(out->dtype));
    }
    return 0;
}

int ir_infer_addmm(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (need_ndim(in[1], 2, "mat1", "[N,K]", err, nerr) ||
        need_ndim(in[2], 2, "mat2", "[K,M]", err, nerr))
        return -1;
    return add_product(in, a, out, err, nerr);
}

int ir_infer_addmv(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (need_ndim(in[1], 2, "the matrix", "[N,M]", err, nerr) ||
        need_ndim(in[2], 1, "the vector", "[M]", err, nerr))
        return -1;
    return add_product(in, a, out, err, nerr);
}

int ir_infer_baddbmm(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (ir_infer_bmm(OP_bmm, in + 1, 2, a, out, err, nerr))
        return -1;
    return add_product(in, a, out, err, nerr);
}

/* The contracted dims of one operand as a mask; -1 on a bad or repeated dim. */
static int dims_mask(const ir_attr *d, int ndim, const char *what, uint32_t *mask, char *err,
                     size_t nerr)
{
    *mask = 0;
    for (int k = 0; k < d->n; k++) {
        int dd = ir_norm_dim(d->i[k], ndim);
        if (dd < 0 || ndim == 0)
            return ir_fail(err, nerr, "%s dim %lld is out of range for %d dims", what,
                           (long long)d->i[k], ndim);
        if (*mask >> dd & 1)
            return ir_fail(err, nerr, "%s dim %d appears twice", what, dd);
        *mask |= 1u << dd;
    }
    return 0;
}

int ir_infer_tensordot(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    const ir_type *x = in[0], *y = in[1];
    const ir_attr *da = &a->a[0], *db = &a->a[1];
    uint32_t ma, mb;
    if (da->n != db->n)
        return ir_fail(err, nerr, "dims_a and dims_b have different lengths (%d and %d)", da->n,
                       db->n);
    if (dims_mask(da, x->ndim, "dims_a", &ma, err, nerr) ||
        dims_mask(db, y->ndim, "dims_b", &mb, err, nerr))
        return -1;
    if (x->dtype != y->dtype)
        return ir_fail(err, nerr, "both operands must have one dtype, got %s and %s",
                       tj_dtype_name(x->dtype), tj_dtype_name(y->dtype));
    for (int k = 0; k < da->n; k++) {
        int64_t sa = x->shape[ir_norm_dim(da->i[k], x->ndim)];
        int64_t sb = y->shape[ir_norm_dim(db->i[k], y->ndim)];
        if (sa != sb)
            return ir_fail(err, nerr, "contracted dims differ in size: %s (a dim %lld) and %s "
                           "(b dim %lld)", IR_DIM(sa), (long long)da->i[k], IR_DIM(sb),
                           (long long)db->i[k]);
    }
    int nd = 0;
    int64_t shape[2 * TJ_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        if (!(ma >> d & 1))
            shape[nd++] = x->shape[d];
    for (int d = 0; d < y->ndim; d++)
        if (!(mb >> d & 1))
            shape[nd++] = y->shape[d];
    if (nd > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "the result would have %d dims (at most %d)", nd, TJ_MAX_DIMS);
    ir_set(out, x->dtype, nd, shape);
    return 0;
}

int ir_infer_trace(IR_INFER_ARGS)
{
    (void)op, (void)nin, (void)a;
    const ir_type *x = in[0];
    if (need_ndim(x, 2, "input", "[N,M]", err, nerr))
        return -1;
    if (x->dtype == TJ_BOOL)
        return ir_fail(err, nerr, "trace of a bool matrix is not supported (as in torch)");
    ir_set(out, ir_dtype_is_float(x->dtype) ? x->dtype : TJ_I64, 0, NULL);
    return 0;
}

int ir_infer_cross(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    const ir_type *x = in[0], *y = in[1];
    int nd;
    int64_t shape[TJ_MAX_DIMS];
    if (x->dtype != y->dtype)
        return ir_fail(err, nerr, "both operands must have one dtype, got %s and %s",
                       tj_dtype_name(x->dtype), tj_dtype_name(y->dtype));
    if (x->dtype == TJ_BOOL)
        return ir_fail(err, nerr, "cross of bool vectors is not supported");
    if (x->ndim != y->ndim)
        return ir_fail(err, nerr, "both operands must have the same number of dims, got %d and %d",
                       x->ndim, y->ndim);
    if (!ir_broadcast(x, y, &nd, shape))
        return ir_fail(err, nerr, "shapes cannot be broadcast together");
    int d = ir_norm_dim(a->a[0].i[0], nd);
    if (d < 0 || nd == 0)
        return ir_fail(err, nerr, "dim %lld is out of range for %d dims", (long long)a->a[0].i[0], nd);
    if (x->shape[d] != 3 || y->shape[d] != 3)
        return ir_fail(err, nerr, "dim %d must have size 3 in both operands, got %s and %s", d,
                       IR_DIM(x->shape[d]), IR_DIM(y->shape[d]));
    ir_set(out, x->dtype, nd, shape);
    return 0;
}
