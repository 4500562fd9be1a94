/* ops_inplace.c - the in-place ops: dst op= src, written through tj_copy_.
 *
 * Each computes the out-of-place result and copies it into dst (src
 * broadcast to dst's shape, the result converted to dst's dtype), so eager
 * runs write dst's storage and traced runs are functionalized like tj_copy_
 * (trace_effects.c: the graph computes the new value, the call writes it
 * back; into slices of a weight or an argument, the whole tensor).
 */
#include "fe.h"

static int inplace(tj_tensor *dst, tj_tensor *value)
{
    if (!value)
        return -1;
    return tj_copy_(dst, value);
}

int tj_add_(tj_tensor *dst, tj_tensor *src) { return inplace(dst, tj_add(dst, src)); }
int tj_sub_(tj_tensor *dst, tj_tensor *src) { return inplace(dst, tj_sub(dst, src)); }
int tj_mul_(tj_tensor *dst, tj_tensor *src) { return inplace(dst, tj_mul(dst, src)); }
int tj_div_(tj_tensor *dst, tj_tensor *src) { return inplace(dst, tj_div(dst, src)); }
int tj_add_s_(tj_tensor *dst, double s) { return inplace(dst, tj_add_s(dst, s)); }
int tj_mul_s_(tj_tensor *dst, double s) { return inplace(dst, tj_mul_s(dst, s)); }
