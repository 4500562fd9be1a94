/* infer_move.c - shape/dtype rules: copy, cat, gather, index_select, pad, flip, full, arange, rand, randn (to be written). */
#include "infer.h"

int ir_infer_copy(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_cat(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_gather(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_index_select(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_pad(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_flip(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_full(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_arange(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_rand(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_randn(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

