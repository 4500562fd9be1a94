/* op.c - the op descriptor table, generated from ops.def, and name lookups. */
#include <string.h>

#include "ir.h"

#define A(aname, akind) {#aname, IR_ATTR_##akind},
#define OP(oname, okind, onmin, onmax, odecomp, oattrs) \
    [OP_##oname] = {#oname, IR_##okind, onmin, onmax, IR_DECOMP_##odecomp, IR_RULE_NONE, \
                    IR_COUNT_ATTRS(oattrs), {oattrs}},
#define UNARY(oname, orule, odecomp, f32, f64, i) \
    [OP_##oname] = {#oname, IR_UNARY, 1, 1, IR_DECOMP_##odecomp, IR_RULE_##orule, 0, {{0}}},
#define BINARY(oname, orule, odecomp, f32, f64, i) \
    [OP_##oname] = {#oname, IR_BINARY, 2, 2, IR_DECOMP_##odecomp, IR_RULE_##orule, 0, {{0}}},
#define IR_DECOMP_PRIM true, false
#define IR_DECOMP_COMP false, false
#define IR_DECOMP_DCOMP false, true

/* Counts the A(...) entries of an attrs argument: each A expands to one
 * initializer, so the count is the size of a throwaway array of them. */
#define IR_COUNT_ATTRS(...) \
    ((int)(sizeof((ir_attr_desc[]){__VA_ARGS__{NULL, 0}}) / sizeof(ir_attr_desc)) - 1)

const ir_opinfo ir_ops[IR_NUM_OPS] = {
#include "ops.def"
};
#undef A

bool ir_op_draws(ir_op op)
{
    for (int a = 0; a < ir_ops[op].nattrs; a++)
        if (ir_ops[op].attrs[a].kind == IR_ATTR_RNG)
            return true;
    return false;
}

const char *ir_kind_name(ir_kind k)
{
    static const char *const names[] = {"unary",    "binary", "ternary", "pointwise",
                                        "reduce",   "view",   "move",    "contract",
                                        "nn",       "create", "random"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

ir_op ir_op_from_name(const char *name)
{
    for (int op = 0; op < IR_NUM_OPS; op++)
        if (strcmp(ir_ops[op].name, name) == 0)
            return (ir_op)op;
    return IR_NUM_OPS;
}

/* ---- word attributes ------------------------------------------------------- */

/* The names of a word kind's values, in the order of the public enum. */
static const char *const reduction_words[] = {
    [TJ_REDUCTION_MEAN] = "mean", [TJ_REDUCTION_SUM] = "sum", [TJ_REDUCTION_NONE] = "none"};
_Static_assert(sizeof reduction_words / sizeof *reduction_words == TJ_REDUCTION_NONE + 1,
               "a name per tj_reduction");

static const char *const rounding_words[] = {
    [TJ_ROUNDING_NONE] = "none", [TJ_ROUNDING_TRUNC] = "trunc", [TJ_ROUNDING_FLOOR] = "floor"};
_Static_assert(sizeof rounding_words / sizeof *rounding_words == TJ_ROUNDING_FLOOR + 1,
               "a name per tj_rounding");

/* issue 11: scatter_reduce's reduce and embedding_bag's mode */
static const char *const reduce_op_words[] = {
    [TJ_REDUCE_SUM] = "sum", [TJ_REDUCE_PROD] = "prod", [TJ_REDUCE_MEAN] = "mean",
    [TJ_REDUCE_AMAX] = "amax", [TJ_REDUCE_AMIN] = "amin"};
_Static_assert(sizeof reduce_op_words / sizeof *reduce_op_words == TJ_REDUCE_AMIN + 1,
               "a name per tj_reduce_op");

static int words_of(ir_attr_kind kind, const char *const **w)
{
    if (kind == IR_ATTR_REDUCE_OP) {
        *w = reduce_op_words;
        return (int)(sizeof reduce_op_words / sizeof *reduce_op_words);
    }
    if (kind == IR_ATTR_REDUCTION) {
        *w = reduction_words;
        return (int)(sizeof reduction_words / sizeof *reduction_words);
    }
    if (kind == IR_ATTR_ROUNDING) {
        *w = rounding_words;
        return (int)(sizeof rounding_words / sizeof *rounding_words);
    }
    *w = NULL;
    return 0;
}

bool ir_attr_is_word(ir_attr_kind kind)
{
    const char *const *w;
    return words_of(kind, &w) > 0;
}

const char *ir_attr_word(ir_attr_kind kind, int64_t v)
{
    const char *const *w;
    int n = words_of(kind, &w);
    return v >= 0 && v < n ? w[v] : NULL;
}

int64_t ir_attr_word_value(ir_attr_kind kind, const char *name, size_t len)
{
    const char *const *w;
    int n = words_of(kind, &w);
    for (int k = 0; k < n; k++)
        if (strlen(w[k]) == len && !strncmp(w[k], name, len))
            return k;
    return -1;
}

void ir_attr_int(ir_attr *a, int64_t v)
{
    a->n = 1;
    a->i[0] = v;
}

void ir_attr_float(ir_attr *a, double v)
{
    a->n = 1;
    a->f = v;
}

void ir_attr_ints(ir_attr *a, const int64_t *v, int n)
{
    a->n = n;
    for (int k = 0; k < n; k++)
        a->i[k] = v[k];
}

void ir_attr_dims(ir_attr *a, const int *v, int n)
{
    a->n = n;
    for (int k = 0; k < n; k++)
        a->i[k] = v[k];
}
