/* ops_inplace.c - the in-place ops: dst op= src, written through tj_copy_.
 *
 * Each computes the out-of-place result and copies it into dst (src
 * broadcast to dst's shape, the result converted to dst's dtype when its
 * category, bool < integer < float, is not above dst's: PyTorch's rule for
 * in-place ops, so an integer tensor *= 0.75 is an error, not a
 * truncation), so eager
 * runs write dst's storage and traced runs are functionalized like tj_copy_
 * (trace_effects.c: the graph computes the new value, the call writes it
 * back; into slices of a weight or an argument, the whole tensor).
 */
#include "fe.h"

static int inplace(const char *op, tj_tensor *dst, tj_tensor *value)
{
    if (!value)
        return -1;
    if (ir_dtype_category(tj_dtype_of(value)) > ir_dtype_category(tj_dtype_of(dst))) {
        ir_type tv, td;
        char sv[96], sd[96];
        rt_type_of(value, &tv);
        rt_type_of(dst, &td);
        rt_error("%s: the result %s cannot be cast to the destination %s in place (a float into "
                 "an integer or bool tensor, an integer into a bool one)",
                 op, ir_type_str(&tv, sv, sizeof sv), ir_type_str(&td, sd, sizeof sd));
        return -1;
    }
    return tj_copy_(dst, value);
}

int tj_add_(tj_tensor *dst, tj_tensor *src) { return inplace("add_", dst, tj_add(dst, src)); }
int tj_sub_(tj_tensor *dst, tj_tensor *src) { return inplace("sub_", dst, tj_sub(dst, src)); }
int tj_mul_(tj_tensor *dst, tj_tensor *src) { return inplace("mul_", dst, tj_mul(dst, src)); }
int tj_div_(tj_tensor *dst, tj_tensor *src) { return inplace("div_", dst, tj_div(dst, src)); }
int tj_add_s_(tj_tensor *dst, double s) { return inplace("add_s_", dst, tj_add_s(dst, s)); }
int tj_mul_s_(tj_tensor *dst, double s) { return inplace("mul_s_", dst, tj_mul_s(dst, s)); }
