/* infer.h - internal to ir/: the per-op shape/dtype rule functions.
 *
 * Every OP row of ops.def has a rule ir_infer_<name>() in one of the
 * ir/infer_*.c files (a missing one is a link error); UNARY and BINARY rows
 * share ir_infer_unary() and ir_infer_binary(). ir_infer() dispatches.
 * Inputs beyond the op's nmin may be NULL; the dispatcher has already checked
 * the input count, that present inputs have supported dtypes and that
 * mandatory ones are present.
 */
#ifndef TJ_IR_INFER_H
#define TJ_IR_INFER_H

#include "ir.h"

#define IR_INFER_ARGS \
    ir_op op, const ir_type *const *in, int nin, const ir_attrs *a, ir_type *out, char *err, \
        size_t nerr

typedef int (*ir_infer_fn)(IR_INFER_ARGS);

#define OP(name, kind, nmin, nmax, decomp, attrs) int ir_infer_##name(IR_INFER_ARGS);
#define UNARY(name, rule, decomp, f32, f64, i)
#define BINARY(name, rule, decomp, f32, f64, i)
#include "ops.def"
int ir_infer_unary(IR_INFER_ARGS);
int ir_infer_binary(IR_INFER_ARGS);

/* Writes the formatted reason to err and returns -1. */
int ir_fail(char *err, size_t nerr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The reason for a shape of more elements than int64 counts: "<what>
 * [a,b,...] has more than 2^63-1 elements"; returns -1. */
int ir_fail_numel(char *err, size_t nerr, const char *what, int ndim, const int64_t *shape);

/* Sets out to dtype with in's shape. */
void ir_set(ir_type *out, tj_dtype dtype, int ndim, const int64_t *shape);

/* Normalizes and validates a list of dims (no repeats) into a bitmask;
 * an empty list selects every dim. Returns -1 with err set on a bad dim. */
int ir_dims_mask(const ir_attr *dims, int ndim, uint32_t *mask, char *err, size_t nerr);
/* out: t with the dims of mask reduced out (kept as size 1 with keepdim), dtype dt. */
void ir_reduced_shape(const ir_type *t, uint32_t mask, bool keepdim, ir_type *out, tj_dtype dt);

/* nn and linalg (issue 11): the max_pool2d/avg_pool2d attributes of a
 * max_pool1d/avg_pool1d (op) with attributes a: H has kernel 1, stride 1, no
 * padding; stride 0 is the kernel size (infer_nnops.c). */
void ir_pool1d_attrs(ir_op op, const ir_attrs *a, ir_attrs *a2);

/* ==== 3-D and transposed convolution, 3-D pools (issue 11): the geometry of
 * conv3d, conv_transpose1d/2d/3d, max_pool3d and avg_pool3d, decoded and
 * checked once (infer_conv3d.c) for their rules and decompositions. */
typedef struct ir_convnd {
    int nd;                 /* spatial dims: 1, 2 or 3 */
    bool batched;           /* the input has a batch dim */
    int64_t in[3], out[3];  /* spatial sizes of the input and the result */
    int64_t kernel[3], stride[3], padding[3], dilation[3], out_pad[3];
    int64_t groups, out_channels;
    bool count_include_pad, ceil_mode;   /* the pools */
} ir_convnd;
/* Returns 0, or -1 with the reason in err. */
int ir_convnd_of(ir_op op, const ir_type *const *in, int nin, const ir_attrs *a, ir_convnd *c,
                 char *err, size_t nerr);

#endif
