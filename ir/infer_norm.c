/* infer_norm.c - shape/dtype rules: softmax, log_softmax, layer_norm, rms_norm, batch_norm (to be written). */
#include "infer.h"

int ir_infer_softmax(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_log_softmax(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_layer_norm(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_rms_norm(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_batch_norm(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

