/* infer_contract.c - shape/dtype rules: matmul, linear, conv2d, max_pool2d, avg_pool2d (to be written). */
#include "infer.h"

int ir_infer_matmul(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_linear(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_conv2d(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_max_pool2d(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_avg_pool2d(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

