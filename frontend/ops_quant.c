/* ops_quant.c - public entry points of the int8 quantization ops
 * (quantize_per_tensor, quantize_per_channel, dequantize and its
 * per-channel form): they fill the attributes and call fe_apply.
 */
#include "fe.h"

tj_tensor *tj_quantize_per_tensor(tj_tensor *x, double scale, int64_t zero_point, tj_dtype dtype)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], scale);
    ir_attr_int(&at.a[1], zero_point);
    ir_attr_int(&at.a[2], dtype);
    return fe_apply(OP_quantize_per_tensor, &x, 1, &at);
}

tj_tensor *tj_quantize_per_channel(tj_tensor *x, tj_tensor *scales, tj_tensor *zero_points,
                                   int axis, tj_dtype dtype)
{
    ir_attrs at = {0};
    ir_attr_int(&at.a[0], axis);
    ir_attr_int(&at.a[1], dtype);
    tj_tensor *in[3] = {x, scales, zero_points};
    return fe_apply(OP_quantize_per_channel, in, 3, &at);
}

tj_tensor *tj_dequantize(tj_tensor *q, double scale, int64_t zero_point)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], scale);
    ir_attr_int(&at.a[1], zero_point);
    return fe_apply(OP_dequantize, &q, 1, &at);
}

tj_tensor *tj_dequantize_per_channel(tj_tensor *q, tj_tensor *scales, tj_tensor *zero_points,
                                     int axis)
{
    ir_attrs at = {0};
    ir_attr_float(&at.a[0], 1.0);
    ir_attr_int(&at.a[2], axis);
    tj_tensor *in[3] = {q, scales, zero_points};
    if (q && (!scales || !zero_points)) {   /* NULL would select the per-tensor form */
        rt_error("dequantize_per_channel: %s is NULL", scales ? "zero_points" : "scales");
        return NULL;
    }
    return fe_apply(OP_dequantize, in, 3, &at);
}
