/* ir.h - the IR layer's vocabulary: dtypes, value types, the op enum and its
 * descriptor table (generated from ops.def), attributes, and the shape/dtype
 * rules (ir_infer) shared by eager execution and tracing.
 *
 * The ir layer depends on nothing but the public header's plain types.
 */
#ifndef TJ_IR_H
#define TJ_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../include/tjit.h"

/* ---- dtypes --------------------------------------------------------------- */
typedef enum { IR_CAT_BOOL, IR_CAT_INT, IR_CAT_FLOAT, IR_CAT_COMPLEX } ir_category;

ir_category ir_dtype_category(tj_dtype dt);
bool ir_dtype_valid(tj_dtype dt);                /* in the enum range */
bool ir_dtype_supported(tj_dtype dt);            /* has kernels: all but c64 */
/* f16 or bf16: stored narrow, computed in f32 and rounded once per op
 * (ir/half.h converts; runtime/eager.c, codegen/lower.c). */
bool ir_dtype_is_half(tj_dtype dt);
tj_dtype ir_dtype_wide(tj_dtype dt);             /* f32 for f16 and bf16, else dt */
bool ir_dtype_is_float(tj_dtype dt);
tj_dtype ir_dtype_from_name(const char *name);   /* TJ_NUM_DTYPES when unknown */
/* The range of an integer or bool dtype (bool: 0..1). */
void ir_int_range(tj_dtype dt, int64_t *min, int64_t *max);
/* The dtype of a scalar v given beside a tensor of dtype `like` (the _s ops,
 * clamp's bounds), weak in promotion like a Python number: i64 when v is an
 * integer that int64 holds and the tensor is an integer or bool one (a
 * Python int), else f64 (a Python float). */
tj_dtype ir_scalar_dtype(double v, tj_dtype like);

/* ---- value types ---------------------------------------------------------- */
/* The type of a value: dtype and shape. weak marks a wrapped scalar (from the
 * _s ops): in promotion it counts by category only, like a Python number. */
typedef struct ir_type {
    tj_dtype dtype;
    int ndim;
    bool weak;
    int64_t shape[TJ_MAX_DIMS];
} ir_type;

int64_t ir_type_numel(const ir_type *t);
/* The element count of a shape in *n: 0 when a size is 0, else the product
 * of the sizes (a symbolic size, < 0, counts as 1). False when that product
 * does not fit in int64: the one overflow check of element counts, applied
 * by ir_infer to every result, by ir_type_check to every graph type and by
 * the runtime to every tensor it allocates and in tj_numel. */
bool ir_numel_checked(int ndim, const int64_t *shape, int64_t *n);
bool ir_type_equal(const ir_type *a, const ir_type *b);
/* Same rank and sizes (dtype and weak flag aside). */
bool ir_shape_equal(const ir_type *a, const ir_type *b);
/* Symbolic dims inside ir_type.shape: a negative entry. IR_SYM(k) is symbol
 * sk, any size >= 2 (the guards, frontend/guards.c); ir_sym_at(k, c) is sk + c
 * for a static offset c, 0 < |c| < 2^30 (s0-1: x[1:] of a dim of size s0),
 * also a size >= 2 wherever the graph runs (the guards hold sk >= 2 - c).
 * The encoding is canonical: two entries are the same size exactly when they
 * are equal. */
#define IR_SYM(k) (-(int64_t)(k) - 1)
#define IR_IS_SYM(d) ((d) < 0)
#define IR_MAX_SYM ((int64_t)1 << 31)   /* symbols are s0 .. s2147483647 */
#define IR_MAX_SYM_DELTA ((int64_t)1 << 30)
static inline uint64_t ir_sym_bits(int64_t d) { return (uint64_t)-(d + 1); }
/* The symbol k of a symbolic dim d, and its offset c (0 for IR_SYM(k)). */
static inline int64_t ir_sym_index(int64_t d) { return (int64_t)(ir_sym_bits(d) & 0xffffffffu); }
static inline int64_t ir_sym_delta(int64_t d)
{
    uint64_t z = ir_sym_bits(d) >> 32;   /* zigzag: 0, -1, 1, -2, ... as 0, 1, 2, 3, ... */
    return z & 1 ? -(int64_t)(z >> 1) - 1 : (int64_t)(z >> 1);
}
static inline int64_t ir_sym_at(int64_t k, int64_t c)
{
    uint64_t z = c >= 0 ? (uint64_t)c << 1 : (((uint64_t)-(c + 1)) << 1) | 1;
    return -(int64_t)(((uint64_t)k + 1) + (z << 32));
}
/* The size of dim d where symbol k has the size symval[k] (static: d). */
static inline int64_t ir_dim_at(int64_t d, const int64_t *symval)
{
    return IR_IS_SYM(d) ? symval[ir_sym_index(d)] + ir_sym_delta(d) : d;
}
/* *out = d + c for a dim d (static or symbolic) and a static c: false when
 * the sum is negative (static) or its offset leaves IR_MAX_SYM_DELTA. */
bool ir_dim_add(int64_t d, int64_t c, int64_t *out);
/* A slice [start, end) by step (Python's bounds: negative from the back,
 * end >= INT64_MAX / 2 to the end) of a symbolic size n: *size is static
 * where n >= *need (x[0:5]: 5 where n >= 5; x[-3:]: 3 where n >= 3), or n
 * plus a count (x[1:-1]: n - 2, *need 0: the guards hold every offset
 * symbol >= 2). False where the size is neither (a step to the end, a
 * start from the back to an end from the front). need may be NULL. */
bool ir_slice_symbolic(int64_t n, int64_t start, int64_t end, int64_t step, int64_t *size,
                       int64_t *need);
/* One dim as messages and the text IR print it: the size, sK for the
 * symbolic dim IR_SYM(K), sK-C or sK+C for ir_sym_at(K, -C or C) (a negative
 * size); buf has IR_DIM_BUF bytes. */
#define IR_DIM_BUF 32
char *ir_dim_str(int64_t d, char *buf);
/* ir_dim_str into a temporary that lives to the end of the enclosing
 * statement: printf("%s", IR_DIM(d)). */
#define IR_DIM(d) ir_dim_str((d), (char[IR_DIM_BUF]){0})
/* "f32[2,s0]" into buf (at least 96 bytes fits any type); returns buf. */
char *ir_type_str(const ir_type *t, char *buf, size_t n);

/* PyTorch's result_type over 1..n operands (weak ones by category only). */
tj_dtype ir_promote(const ir_type *const *ts, int n);
/* NumPy broadcast of a and b into out; false when incompatible. */
bool ir_broadcast(const ir_type *a, const ir_type *b, int *ndim, int64_t *shape);
/* Normalizes dim in [-ndim, ndim) to [0, ndim); -1 when out of range.
 * For ndim 0, dims -1 and 0 are accepted and map to 0 (PyTorch's rule). */
int ir_norm_dim(int64_t dim, int ndim);
/* Python slice clamping of one bound (start or end) against a dim of size n. */
int64_t ir_slice_bound(int64_t v, int64_t n);
/* linalg via LAPACK (issue 11): whether solve's B (bndim dims) is a vector
 * right-hand side for A (andim dims): torch.linalg.solve's rule (infer_lapack.c). */
bool ir_solve_vector_rhs(int andim, const int64_t *ashape, int bndim, const int64_t *bshape);
/* Whether op is one of those rows (their kernels call LAPACK: eager calls in plans). */
bool ir_op_lapack(int op);

/* ---- ops ------------------------------------------------------------------ */
typedef enum ir_op {
#define OP(name, kind, nmin, nmax, decomp, attrs) OP_##name,
#include "ops.def"
    IR_NUM_OPS
} ir_op;

typedef enum {
    IR_UNARY, IR_BINARY, IR_TERNARY, IR_POINTWISE, IR_REDUCE, IR_VIEW, IR_MOVE,
    IR_CONTRACT, IR_NN, IR_CREATE, IR_RANDOM
} ir_kind;

/* Dtype rules of the pointwise rows (column `rule` of UNARY/BINARY). */
typedef enum {
    IR_RULE_NONE,
    IR_RULE_SAME,     /* numeric in, same dtype out; bool rejected */
    IR_RULE_FLOAT,    /* float math: int/bool computes and returns f32 (binary: promoted, then float) */
    IR_RULE_ROUND,    /* floats rounded; integers returned unchanged; bool rejected */
    IR_RULE_PRED,     /* -> bool (isnan, ...) */
    IR_RULE_LOGICAL,  /* any dtype, nonzero is true -> bool */
    IR_RULE_BITWISE,  /* integers and bool only, promoted */
    IR_RULE_ARITH,    /* promoted */
    IR_RULE_SUB,      /* promoted, bool rejected */
    IR_RULE_NUMERIC,  /* promoted, a bool result rejected (pow, fmod, remainder of two bools) */
    IR_RULE_TRUEDIV,  /* promoted, then int/bool -> f32 */
    IR_RULE_CMP,      /* computed in the promoted dtype -> bool */
    IR_RULE_FLOATONLY, /* float math defined for floats only: the promoted dtype must be float */
    IR_RULE_INTONLY,  /* integers only (bool and floats refused), promoted */
    IR_RULE_INTPOW,   /* as pow(x, 2): numbers keep their dtype, bool computes in i64 */
    IR_RULE_EXPONENT  /* floating-point inputs only -> i32 (frexp's exponent) */
} ir_rule;
#define IR_RULE_LAST IR_RULE_EXPONENT

/* REDUCTION, ROUNDING and REDUCE_OP are word attributes: one of the names
 * ir_attr_word lists (the value is the index, which is the public enum's value:
 * tj_reduction, tj_rounding, tj_reduce_op). RNG is a random op's counter
 * offset: N, the generator's counters from N, or with IR_RNG_CALL set
 * (written call+N) the running call's draw N (a traced random op: each run
 * of the graph draws anew, runtime/random.h). */
typedef enum {
    IR_ATTR_INT, IR_ATTR_INTS, IR_ATTR_BOOL, IR_ATTR_FLOAT, IR_ATTR_DTYPE, IR_ATTR_REDUCTION,
    IR_ATTR_ROUNDING, IR_ATTR_REDUCE_OP, IR_ATTR_RNG
} ir_attr_kind;
#define IR_ATTR_LAST IR_ATTR_RNG
#define IR_RNG_CALL ((uint64_t)1 << 63)

/* The name of value v of a word attribute kind ("mean"), NULL when v is not
 * one; and the value a name spells (-1 when none). */
const char *ir_attr_word(ir_attr_kind kind, int64_t v);
int64_t ir_attr_word_value(ir_attr_kind kind, const char *name, size_t len);
bool ir_attr_is_word(ir_attr_kind kind);

#define IR_MAX_ATTRS 6
#define IR_MAX_LIST (2 * TJ_MAX_DIMS)

typedef struct ir_attr_desc {
    const char *name;
    ir_attr_kind kind;
} ir_attr_desc;

typedef struct ir_opinfo {
    const char *name;
    ir_kind kind;
    int nmin, nmax;       /* nmax -1: variadic */
    bool prim;            /* false: composite (decomposed by passes) */
    bool eager_decomp;    /* a DCOMP row: no eager kernel, eager calls run its decomposition */
    ir_rule rule;         /* pointwise rows; IR_RULE_NONE otherwise */
    int nattrs;
    ir_attr_desc attrs[IR_MAX_ATTRS];
} ir_opinfo;

extern const ir_opinfo ir_ops[IR_NUM_OPS];
/* Whether op draws random numbers (an attribute of kind IR_ATTR_RNG: rand,
 * randn, dropout): run again, it would draw others. */
bool ir_op_draws(ir_op op);
const char *ir_kind_name(ir_kind k);
ir_op ir_op_from_name(const char *name);   /* IR_NUM_OPS when unknown */

/* One attribute value: i[0] holds INT, BOOL and DTYPE; i[0..n) holds INTS;
 * f holds FLOAT. Attributes sit in the op's schema order. */
typedef struct ir_attr {
    int n;
    int64_t i[IR_MAX_LIST];
    double f;
} ir_attr;

typedef struct ir_attrs {
    ir_attr a[IR_MAX_ATTRS];
} ir_attrs;

/* Small constructors used by the frontend to fill attributes. */
void ir_attr_int(ir_attr *a, int64_t v);
void ir_attr_float(ir_attr *a, double v);
void ir_attr_ints(ir_attr *a, const int64_t *v, int n);
/* The dims of a dims attribute that passed its op's rule, as a bitmask over
 * ndim dims (an empty list: every dim; an invalid list: 0). */
uint32_t ir_dims_of(const ir_attr *dims, int ndim);
/* k >= 1 when mask is exactly the last k of ndim dims, else 0. */
int ir_innermost(uint32_t mask, int ndim);
void ir_attr_dims(ir_attr *a, const int *v, int n);
/* The length of the diagonal at offset off of an [n1, n2] matrix, and
 * tile's dims as repeat's repeats for an input of ndim dims (infer_idx.c). */
int64_t ir_diag_len(int64_t n1, int64_t n2, int64_t off);
void ir_tile_repeats(const ir_attr *dims, int ndim, ir_attr *r);
/* torch.movedim(src, dst)'s permutation of ndim dims into perm (infer_idx.c);
 * -1 with the reason in err. */
int ir_movedim_perm(const ir_attr *src, const ir_attr *dst, int ndim, int64_t *perm,
                    char *err, size_t nerr);

/* ---- shape and dtype rules ------------------------------------------------ */
/* Computes the result type of op on inputs in[0..nin) (NULL for an absent
 * optional input). Returns 0, or -1 with the reason (no op name, no shapes:
 * the caller adds those) written to err. Never touches data. */
int ir_infer(ir_op op, const ir_type *const *in, int nin, const ir_attrs *a, ir_type *out,
             char *err, size_t nerr);

/* The dtype the pointwise op computes in (e.g. f32 for exp on i64, the
 * promoted type for eq); for other kinds, the result dtype. */
tj_dtype ir_compute_dtype(ir_op op, const ir_type *const *in, int nin);

/* ---- cost (cost.c) ---------------------------------------------------------- */
/* The operations op does on inputs in[0..nin) giving out (concrete types),
 * by the rule of its family (cost.c says which); -1 when not known. */
int64_t ir_flops(ir_op op, const ir_type *const *in, int nin, const ir_type *out);
/* Element count times element size. */
int64_t ir_type_bytes(const ir_type *t);

#endif /* TJ_IR_H */
