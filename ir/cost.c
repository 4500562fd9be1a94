/* cost.c - what one op costs, for the profiler's GB/s and GFLOP/s: the
 * floating-point (or integer) operations of an op on concrete types,
 * ir_flops, one rule per op family (the kind column of ir/ops.def), so a new
 * row is counted by its family without another table.
 *
 *   UNARY BINARY TERNARY POINTWISE  one per result element
 *   REDUCE                          one per input element
 *   CONTRACT                        2 per multiply-add: 2 * result elements * K,
 *                                   K = the contracted length (x's last dim; a
 *                                   convolution's weight elements per output
 *                                   channel), plus one per result element for a bias
 *   VIEW MOVE CREATE RANDOM         none (they move bytes)
 *   NN                              unknown (-1): composites, counted by their
 *                                   prims once compiled
 *
 * A transcendental counts as one operation, as in torch.profiler's and
 * Inductor's counts; the figure says how much arithmetic the op asks for,
 * not the instructions its kernel runs.
 */
#include "ir.h"

static int64_t contract_flops(ir_op op, const ir_type *const *in, int nin, const ir_type *out)
{
    if (nin < 2 || !in[0] || !in[1] || in[0]->ndim < 1)
        return -1;
    int64_t n = ir_type_numel(out), k;
    if (op == OP_conv2d) {   /* w: [cout, cin / groups, kh, kw] */
        if (in[1]->ndim < 1 || in[1]->shape[0] <= 0)
            return -1;
        k = ir_type_numel(in[1]) / in[1]->shape[0];
    } else {
        k = in[0]->shape[in[0]->ndim - 1];
    }
    bool bias = nin > 2 && in[2];
    return 2 * n * k + (bias ? n : 0);
}

int64_t ir_flops(ir_op op, const ir_type *const *in, int nin, const ir_type *out)
{
    if ((unsigned)op >= IR_NUM_OPS || !out)
        return -1;
    switch (ir_ops[op].kind) {
    case IR_UNARY:
    case IR_BINARY:
    case IR_TERNARY:
    case IR_POINTWISE: return ir_type_numel(out);
    case IR_REDUCE: return nin > 0 && in[0] ? ir_type_numel(in[0]) : -1;
    case IR_CONTRACT: return contract_flops(op, in, nin, out);
    case IR_VIEW:
    case IR_MOVE:
    case IR_CREATE:
    case IR_RANDOM: return 0;
    case IR_NN: return -1;
    }
    return -1;
}

int64_t ir_type_bytes(const ir_type *t) { return ir_type_numel(t) * (int64_t)tj_dtype_size(t->dtype); }
