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
#define IR_DECOMP_PRIM true
#define IR_DECOMP_COMP false

/* Counts the A(...) entries of an attrs argument: each A expands to one
 * initializer, so the count is the size of a throwaway array of them. */
#define IR_COUNT_ATTRS(...) \
    ((int)(sizeof((ir_attr_desc[]){__VA_ARGS__{NULL, 0}}) / sizeof(ir_attr_desc)) - 1)

const ir_opinfo ir_ops[IR_NUM_OPS] = {
#include "ops.def"
};
#undef A

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
