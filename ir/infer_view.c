/* infer_view.c - shape/dtype rules: reshape, permute, slice, expand, squeeze, unsqueeze (to be written). */
#include "infer.h"

int ir_infer_reshape(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_permute(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_slice(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_expand(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_squeeze(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_unsqueeze(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

