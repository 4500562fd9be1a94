/* infer_nn.c - shape/dtype rules: embedding, dropout, sdpa, cross_entropy (to be written). */
#include "infer.h"

int ir_infer_embedding(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_dropout(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_sdpa(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_cross_entropy(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

