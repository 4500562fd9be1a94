/* onnx.h - internal to the frontend: an ONNX model as onnx_read.c parses it
 * (protobuf wire format, read directly: no protobuf library) and onnx_run.c
 * and onnx_ops.c interpret it with tjit's ops (eagerly, or traced by
 * tj_compile_multi into a graph like any model function). */
#ifndef TJ_FE_ONNX_H
#define TJ_FE_ONNX_H

#include "../ir/arena.h"
#include "fe.h"

/* AttributeProto types */
enum { OX_FLOAT = 1, OX_INT = 2, OX_STRING = 3, OX_TENSOR = 4, OX_FLOATS = 6, OX_INTS = 7 };

typedef struct ox_attr {
    const char *name;
    int type;
    double f;
    int64_t i;
    const char *s;           /* NUL-terminated */
    int64_t *ints;
    double *floats;
    int n;                   /* entries of ints or floats */
    tj_tensor *t;            /* owned by the model */
} ox_attr;

typedef struct ox_node {
    const char *op, *name, *domain;
    const char **in, **out;  /* "" for an input left out */
    int nin, nout, nattrs;
    ox_attr *attrs;
    int *in_slot, *out_slot; /* values (tj_onnx.nvalues) they name; -1: left out */
    const struct ox_op *fn;  /* its mapping (onnx_ops.c) */
} ox_node;

/* A graph input or output: name, element type (tj_dtype, -1 unknown), dims
 * (-1: symbolic, named by dim_param or not at all). */
typedef struct ox_value_info {
    const char *name;
    int dtype;
    int ndim;                /* -1: no shape given */
    int64_t dims[TJ_MAX_DIMS];
    const char *dim_param[TJ_MAX_DIMS];
} ox_value_info;

struct tj_onnx {
    ir_arena arena;
    const char *path;
    int64_t opset;           /* of the default domain */
    ox_node *nodes;
    int nnodes, ninits, ninputs, noutputs;
    const char **init_names;
    tj_tensor **inits;       /* owned */
    ox_value_info *inputs;   /* the graph inputs that are not initializers */
    ox_value_info *outputs;
    /* values, numbered at load: initializers, inputs, then node outputs */
    int nvalues;
    int *input_slot, *output_slot;
};

/* ---- running (onnx_run.c, onnx_ops.c) --------------------------------------- */
#define OX_HOST_MAX 64   /* the most elements of a value kept on the host */

/* A value while the graph runs: a tensor, and for small integer values
 * (shapes and their arithmetic, as exporters emit them) the elements on the
 * host too, so that ops taking shapes, axes or starts read them without
 * reading tensor data (which a trace cannot do). */
typedef struct ox_val {
    tj_tensor *t;            /* current scope; NULL until made (from host) */
    bool host;
    int dtype;               /* of a host value */
    int ndim;
    int64_t shape[TJ_MAX_DIMS];
    int64_t n;
    int64_t hv[OX_HOST_MAX];
} ox_val;

typedef struct ox_run ox_run;
typedef int (*ox_op_fn)(ox_run *r, const ox_node *n, ox_val **in, ox_val **out);
typedef struct ox_op {
    const char *name;
    ox_op_fn fn;
    int nmin, nmax;          /* inputs */
} ox_op;
/* The mapping of an ONNX op type (default domain), or NULL. */
const ox_op *ox_op_find(const char *op_type);

/* v's tensor, made from its host elements on first need; NULL with an error. */
tj_tensor *ox_tensor(ox_run *r, ox_val *v);
/* Sets v to tensor t (NULL: fails with the op's error). 0 or -1. */
int ox_set(ox_val *v, tj_tensor *t);
/* Sets v to a host integer value of dtype dt, ndim dims; 0 or -1 (too big). */
int ox_set_host(ox_val *v, int dt, int ndim, const int64_t *shape, const int64_t *values);
/* Sets v to the constant t (an initializer or a Constant's value), with a host
 * copy of its elements when it is a small integer tensor. */
void ox_set_const(ox_val *v, tj_tensor *t);
/* Fails with "onnx: node 'name' (Op): why". */
int ox_fail(ox_run *r, const ox_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* v's elements as integers (host values only: a shape, axes, ...); what names
 * the input in the error when v is computed from tensor data. */
const int64_t *ox_ints(ox_run *r, const ox_node *n, const ox_val *v, const char *what, int64_t *count);

/* Parses the ModelProto in data[0..n) (path names it in errors) into m (zeroed
 * by the caller). 0, or -1 with an error; tj_onnx_free frees what was made. */
int ox_parse(tj_onnx *m, const uint8_t *data, size_t n);
/* The tjit dtype of an ONNX TensorProto.DataType, or -1. */
int ox_dtype(int64_t onnx_type);
/* The attribute called name of node n, or NULL. */
const ox_attr *ox_attr_get(const ox_node *n, const char *name);

#endif
