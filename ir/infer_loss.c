/* infer_loss.c - shape/dtype rules of the element-wise losses (DCOMP rows of
 * ops.def, decomposed in passes/decomp_loss.c), torch.nn.functional's:
 *
 *   mse_loss, l1_loss, smooth_l1_loss   input, target broadcast; the promoted
 *                                       dtype, which must be float
 *   huber_loss                          input float, target broadcast; input's dtype
 *   binary_cross_entropy                p and target of one shape and one float
 *                                       dtype; weight? broadcastable to it
 *   binary_cross_entropy_with_logits    x and target of one shape, float;
 *                                       weight?, pos_weight? broadcastable; the
 *                                       target's dtype (torch's)
 *   kl_div                              log-probs, target broadcast; promoted, float
 *
 * -> the broadcast shape (reduction none) or 0-dim. beta and delta must not
 * be negative (delta positive), as torch requires.
 */
#include <string.h>

#include "infer.h"

static int check_reduction(int64_t red, char *err, size_t nerr)
{
    if (!ir_attr_word(IR_ATTR_REDUCTION, red))
        return ir_fail(err, nerr, "reduction %lld is not one of mean, sum, none", (long long)red);
    return 0;
}

/* The result: shape (ndim, shape) for reduction none, else 0-dim. */
static int loss_out(ir_type *out, tj_dtype dt, int ndim, const int64_t *shape, int64_t red,
                    char *err, size_t nerr)
{
    if (check_reduction(red, err, nerr))
        return -1;
    if (red == TJ_REDUCTION_NONE)
        ir_set(out, dt, ndim, shape);
    else
        ir_set(out, dt, 0, NULL);
    return 0;
}

/* input and target broadcast; the result dtype dt (TJ_NUM_DTYPES: promoted)
 * must be float. */
static int pair_loss(const ir_type *const *in, tj_dtype dt, int64_t red, ir_type *out,
                     char *err, size_t nerr)
{
    int nd;
    int64_t shape[TJ_MAX_DIMS];
    if (!ir_broadcast(in[0], in[1], &nd, shape))
        return ir_fail(err, nerr, "input and target shapes cannot be broadcast together");
    if (dt == TJ_NUM_DTYPES)
        dt = ir_promote(in, 2);
    if (!ir_dtype_is_float(dt))
        return ir_fail(err, nerr, "the loss is computed in float, got %s (input and target "
                       "are both integer or bool)", tj_dtype_name(dt));
    return loss_out(out, dt, nd, shape, red, err, nerr);
}

int ir_infer_mse_loss(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    return pair_loss(in, TJ_NUM_DTYPES, a->a[0].i[0], out, err, nerr);
}

int ir_infer_l1_loss(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    return pair_loss(in, TJ_NUM_DTYPES, a->a[0].i[0], out, err, nerr);
}

int ir_infer_smooth_l1_loss(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (!(a->a[1].f >= 0))
        return ir_fail(err, nerr, "beta %g must not be negative", a->a[1].f);
    return pair_loss(in, TJ_NUM_DTYPES, a->a[0].i[0], out, err, nerr);
}

int ir_infer_huber_loss(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (!(a->a[1].f > 0))
        return ir_fail(err, nerr, "delta %g must be positive", a->a[1].f);
    if (!ir_dtype_is_float(in[0]->dtype))
        return ir_fail(err, nerr, "input must be float, got %s", tj_dtype_name(in[0]->dtype));
    return pair_loss(in, in[0]->dtype, a->a[0].i[0], out, err, nerr);
}

/* weight-like optional input k: broadcastable to x's shape, float. */
static int check_weight(const ir_type *x, const ir_type *w, const char *what, char *err,
                        size_t nerr)
{
    int nd;
    int64_t shape[TJ_MAX_DIMS];
    if (!w)
        return 0;
    if (!ir_dtype_is_float(w->dtype))
        return ir_fail(err, nerr, "%s must be float, got %s", what, tj_dtype_name(w->dtype));
    if (!ir_broadcast(x, w, &nd, shape) || nd != x->ndim ||
        memcmp(shape, x->shape, (size_t)nd * sizeof *shape))
        return ir_fail(err, nerr, "%s must broadcast to the input's shape", what);
    return 0;
}

static int bce_common(const ir_type *const *in, int nin, const char *xname, char *err, size_t nerr)
{
    const ir_type *x = in[0], *t = in[1];
    if (!ir_shape_equal(x, t))
        return ir_fail(err, nerr, "target must have the shape of the %s", xname);
    if (!ir_dtype_is_float(x->dtype) || !ir_dtype_is_float(t->dtype))
        return ir_fail(err, nerr, "%s and target must be float, got %s and %s", xname,
                       tj_dtype_name(x->dtype), tj_dtype_name(t->dtype));
    if (x->dtype != t->dtype && strcmp(xname, "logits"))
        return ir_fail(err, nerr, "target must have the dtype of the %s, %s, got %s", xname,
                       tj_dtype_name(x->dtype), tj_dtype_name(t->dtype));
    if (check_weight(x, nin > 2 ? in[2] : NULL, "weight", err, nerr))
        return -1;
    return check_weight(x, nin > 3 ? in[3] : NULL, "pos_weight", err, nerr);
}

int ir_infer_binary_cross_entropy(IR_INFER_ARGS)
{
    (void)op;
    if (bce_common(in, nin, "input", err, nerr))
        return -1;
    return loss_out(out, in[0]->dtype, in[0]->ndim, in[0]->shape, a->a[0].i[0], err, nerr);
}

int ir_infer_binary_cross_entropy_with_logits(IR_INFER_ARGS)
{
    (void)op;
    if (bce_common(in, nin, "logits", err, nerr))
        return -1;
    /* torch: the target's dtype (the loss is computed promoted, then cast) */
    return loss_out(out, in[1]->dtype, in[0]->ndim, in[0]->shape, a->a[0].i[0], err, nerr);
}

int ir_infer_kl_div(IR_INFER_ARGS)
{
    (void)op, (void)nin;
    if (!ir_dtype_is_float(in[0]->dtype) || !ir_dtype_is_float(in[1]->dtype))
        return ir_fail(err, nerr, "input and target must be float, got %s and %s",
                       tj_dtype_name(in[0]->dtype), tj_dtype_name(in[1]->dtype));
    return pair_loss(in, TJ_NUM_DTYPES, a->a[0].i[0], out, err, nerr);
}
