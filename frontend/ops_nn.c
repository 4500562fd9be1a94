/* ops_nn.c - public entry points of embedding, dropout, scaled dot-product
 * attention and cross_entropy (the simple form: torch's defaults; and _ex with
 * reduction, weight, ignore_index, label_smoothing): they fill the attributes
 * and call fe_apply.
 *
 * Dropout in training draws its mask from the global generator: it reserves
 * numel(x) counters (rt_rng_reserve) and passes (seed, offset) as attributes,
 * so the op is a pure function of its attributes (and traceable). Not
 * training, or p == 0, it is the identity and returns x itself.
 */
#include "../runtime/random.h"
#include "autograd.h"
#include "trace.h"

tj_tensor *tj_embedding(tj_tensor *weight, tj_tensor *indices)
{
    tj_tensor *in[2] = {weight, indices};
    return fe_apply(OP_embedding, in, 2, NULL);
}

tj_tensor *tj_dropout(tj_tensor *x, double p, bool training)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], p);
    ir_attr_int(&at.a[1], 0);
    ir_attr_int(&at.a[2], 0);
    if (x && (!training || p == 0)) {
        /* The identity, once the rule accepts x and p: x retained into the
         * scope, so the caller owns the result like any op's. */
        ir_type t, out;
        rt_type_of(x, &t);
        const ir_type *tp = &t;
        char why[256];
        if (ir_infer(OP_dropout, &tp, 1, &at, &out, why, sizeof why) == 0)
            return rt_own(tj_retain(x));
        return fe_apply(OP_dropout, &x, 1, &at);   /* reports the rule's error */
    }
    if (x) {
        uint64_t seed, offset = fe_rng_reserve((uint64_t)rt_numel(x), &seed);
        ir_attr_int(&at.a[1], (int64_t)seed);
        ir_attr_int(&at.a[2], (int64_t)offset);
    }
    fe_trace *tr = fe_trace_current();
    if (x && tr && tr->in_ckpt && fe_ag_wants_grad(&x, 1) && p < 1) {
        /* Traced for a backward inside tj_checkpoint: the draw alone, a
         * dropout of ones (1/(1-p) where kept), its mask, and x scaled where
         * kept: the kernel's values (x * scale or 0), but the partition can
         * save the mask, a byte an element, and compute the result again from
         * it and x (the draw stays in the forward: the backward's call would
         * draw others). Elsewhere the one kernel (measured faster there). */
        tj_tensor *ones = tj_ones_like(x);
        tj_tensor *drawn = ones ? fe_apply(OP_dropout, &ones, 1, &at) : NULL;
        return drawn ? tj_where_xs(tj_ne_s(drawn, 0), tj_mul_s(x, 1.0 / (1.0 - p)), 0) : NULL;
    }
    return fe_apply(OP_dropout, &x, 1, &at);
}

tj_tensor *tj_scaled_dot_product_attention(tj_tensor *q, tj_tensor *k, tj_tensor *v,
                                           tj_tensor *mask, bool causal, double scale)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], causal);
    ir_attr_float(&at.a[1], scale);
    tj_tensor *in[4] = {q, k, v, mask};
    return fe_apply(OP_sdpa, in, mask ? 4 : 3, &at);
}

tj_cross_entropy_options tj_cross_entropy_defaults(void)
{
    return (tj_cross_entropy_options){.reduction = TJ_REDUCTION_MEAN, .weight = NULL,
                                      .ignore_index = TJ_IGNORE_INDEX_DEFAULT,
                                      .label_smoothing = 0};
}

tj_tensor *tj_cross_entropy_ex(tj_tensor *logits, tj_tensor *target,
                               const tj_cross_entropy_options *opts)
{
    tj_cross_entropy_options d = tj_cross_entropy_defaults();
    if (!opts)
        opts = &d;
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], (int)opts->reduction);   /* an enum may be unsigned: -1 stays -1 */
    ir_attr_int(&at.a[1], opts->ignore_index);
    ir_attr_float(&at.a[2], opts->label_smoothing);
    tj_tensor *in[3] = {logits, target, opts->weight};
    return fe_apply(OP_cross_entropy, in, opts->weight ? 3 : 2, &at);
}

tj_tensor *tj_cross_entropy(tj_tensor *logits, tj_tensor *target)
{
    return tj_cross_entropy_ex(logits, target, NULL);
}
