/* infer_nnorm.c - shape/dtype rules of the normalization, norm and distance
 * rows of ops.def's "nn and linalg" section (DCOMP rows, decomposed in
 * passes/decomp_norm.c). Float inputs only, as torch:
 *
 *   group_norm        x [N,C,*], w? [C], b? [C]; groups divides C -> like x
 *   instance_norm     x [N,C,*] (at least 3 dims), w? [C], b? [C] -> like x
 *   local_response_norm x [N,C,*] (at least 3 dims); size >= 1 -> like x
 *   vector_norm       x, ord, dims (empty: all), keepdim -> reduced
 *   cosine_similarity x1, x2 broadcast; dim of the broadcast shape -> without it
 *   pairwise_distance x1, x2 broadcast (at least 1 dim); over the last dim;
 *                     integers compute in f32
 *   nll_loss          log-probs [C], [N,C] or [N,C,d...]; class-index target
 *                     (i64, the shape without C); weight? [C] of its dtype
 */
#include <string.h>

#include "infer.h"

static int need_float(const ir_type *t, const char *what, char *err, size_t nerr)
{
    if (!ir_dtype_is_float(t->dtype))
        return ir_fail(err, nerr, "%s must be float, got %s", what, tj_dtype_name(t->dtype));
    return 0;
}

/* w and b, when present: 1-D [C] of x's dtype. */
static int affine(const ir_type *x, const ir_type *w, const ir_type *b, char *err, size_t nerr)
{
    const ir_type *p[2] = {w, b};
    const char *names[2] = {"weight", "bias"};
    for (int k = 0; k < 2; k++) {
        if (!p[k])
            continue;
        if (p[k]->ndim != 1 || p[k]->shape[0] != x->shape[1])
            return ir_fail(err, nerr, "%s must be 1-D [C] with C = %s, got %d-D", names[k],
                           IR_DIM(x->shape[1]), p[k]->ndim);
        if (p[k]->dtype != x->dtype)
            return ir_fail(err, nerr, "%s must have the input's dtype %s, got %s", names[k],
                           tj_dtype_name(x->dtype), tj_dtype_name(p[k]->dtype));
    }
    return 0;
}

static int batch_channels(const ir_type *x, int min_nd, char *err, size_t nerr)
{
    if (x->ndim < min_nd)
        return ir_fail(err, nerr, "input must have at least %d dims [N, C, ...], got %d", min_nd,
                       x->ndim);
    return need_float(x, "input", err, nerr);
}

int ir_infer_group_norm(IR_INFER_ARGS)
{
    (void)op;
    const ir_type *x = in[0];
    int64_t g = a->a[0].i[0];
    if (batch_channels(x, 2, err, nerr))
        return -1;
    if (g < 1 || x->shape[1] < 0 || x->shape[1] % g)
        return ir_fail(err, nerr, "channels %s are not divisible by groups %lld",
                       IR_DIM(x->shape[1]), (long long)g);
    if (affine(x, nin > 1 ? in[1] : NULL, nin > 2 ? in[2] : NULL, err, nerr))
        return -1;
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

int ir_infer_instance_norm(IR_INFER_ARGS)
{
    (void)op, (void)a;
    const ir_type *x = in[0];
    if (batch_channels(x, 3, err, nerr) ||
        affine(x, nin > 1 ? in[1] : NULL, nin > 2 ? in[2] : NULL, err, nerr))
        return -1;
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

int ir_infer_local_response_norm(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    const ir_type *x = in[0];
    if (batch_channels(x, 3, err, nerr))
        return -1;
    if (a->a[0].i[0] < 1)
        return ir_fail(err, nerr, "size %lld must be positive", (long long)a->a[0].i[0]);
    ir_set(out, x->dtype, x->ndim, x->shape);
    return 0;
}

int ir_infer_vector_norm(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    const ir_type *x = in[0];
    uint32_t mask;
    if (need_float(x, "input", err, nerr) || ir_dims_mask(&a->a[1], x->ndim, &mask, err, nerr))
        return -1;
    bool keep = a->a[2].i[0] != 0;
    ir_reduced_shape(x, mask, keep, out, x->dtype);
    return 0;
}

/* x1, x2 broadcast into (nd, shape), float, one result dtype (promoted). */
static int pair_of(const ir_type *const *in, int *nd, int64_t *shape, tj_dtype *dt, char *err,
                   size_t nerr)
{
    if (need_float(in[0], "x1", err, nerr) || need_float(in[1], "x2", err, nerr))
        return -1;
    if (!ir_broadcast(in[0], in[1], nd, shape))
        return ir_fail(err, nerr, "x1 and x2 shapes cannot be broadcast together");
    *dt = ir_promote(in, 2);
    return 0;
}

int ir_infer_cosine_similarity(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    int nd;
    int64_t shape[TJ_MAX_DIMS];
    tj_dtype dt = TJ_F32;
    if (pair_of(in, &nd, shape, &dt, err, nerr))
        return -1;
    int d = ir_norm_dim(a->a[0].i[0], nd);
    if (d < 0 || nd == 0)
        return ir_fail(err, nerr, "dim %lld is out of range for %d dims", (long long)a->a[0].i[0], nd);
    memmove(&shape[d], &shape[d + 1], (size_t)(nd - d - 1) * sizeof *shape);
    ir_set(out, dt, nd - 1, shape);
    return 0;
}

int ir_infer_pairwise_distance(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    int nd;
    int64_t shape[TJ_MAX_DIMS];
    if (!ir_broadcast(in[0], in[1], &nd, shape))
        return ir_fail(err, nerr, "x1 and x2 shapes cannot be broadcast together");
    tj_dtype dt = ir_promote(in, 2);   /* integers compute in f32, as torch */
    if (!ir_dtype_is_float(dt))
        dt = TJ_F32;
    if (nd == 0)
        return ir_fail(err, nerr, "x1 and x2 need at least 1 dim");
    ir_set(out, dt, a->a[2].i[0] ? nd : nd - 1, shape);
    if (a->a[2].i[0])
        out->shape[nd - 1] = 1;
    return 0;
}

int ir_infer_nll_loss(IR_INFER_ARGS)
{
    (void)op;
    const ir_type *x = in[0], *t = in[1], *w = nin > 2 ? in[2] : NULL;
    int64_t red = a->a[0].i[0];
    if (x->ndim < 1)
        return ir_fail(err, nerr, "input must have a class dim ([C], [N,C] or [N,C,d...]), got 0 dims");
    if (need_float(x, "input", err, nerr))
        return -1;
    if (!ir_attr_word(IR_ATTR_REDUCTION, red))
        return ir_fail(err, nerr, "reduction %lld is not one of mean, sum, none", (long long)red);
    int cd = x->ndim == 1 ? 0 : 1;
    ir_type batch = {x->dtype, x->ndim - 1, false, {0}};
    for (int d = 0, k = 0; d < x->ndim; d++)
        if (d != cd)
            batch.shape[k++] = x->shape[d];
    if (t->dtype != TJ_I64)   /* torch's nll_loss takes Long targets only */
        return ir_fail(err, nerr, "target must hold class indices of dtype i64, got %s",
                       tj_dtype_name(t->dtype));
    if (!ir_shape_equal(t, &batch)) {
        char s1[96];
        return ir_fail(err, nerr, "target %s must have the input's shape without the class dim",
                       ir_type_str(t, s1, sizeof s1));
    }
    if (w && (w->ndim != 1 || w->shape[0] != x->shape[cd] || w->dtype != x->dtype))
        return ir_fail(err, nerr, "weight must be 1-D [C] with C = %s of the input's dtype",
                       IR_DIM(x->shape[cd]));
    if (red == TJ_REDUCTION_NONE)
        ir_set(out, x->dtype, batch.ndim, batch.shape);
    else
        ir_set(out, x->dtype, 0, NULL);
    return 0;
}
