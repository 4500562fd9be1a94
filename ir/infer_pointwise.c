/* infer_pointwise.c - shape/dtype rules: where, lerp, clamp, cast (to be written). */
#include "infer.h"

int ir_infer_where(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_lerp(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_clamp(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

int ir_infer_cast(IR_INFER_ARGS)
{
    return ir_fail(err, nerr, "not implemented yet");
}

