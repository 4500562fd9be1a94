/* inspect_ops.c - the op-table half of the inspection API (tjit_inspect.h):
 * ir/ops.def's rows (ir_ops[]) as tj_op_info, with the names of kinds, dtype
 * rules and attribute kinds that `tjit ops` and docs/ops.md print. */
#include <string.h>

#include <tjit_inspect.h>

#include "fe.h"
#include "../passes/fuse.h"

_Static_assert(IR_MAX_ATTRS <= TJ_OP_MAX_ATTRS, "tj_op_info holds every attribute of a row");

static const char *rule_name(ir_rule r)
{
    static const char *const names[] = {
        [IR_RULE_NONE] = "",          [IR_RULE_SAME] = "same",       [IR_RULE_FLOAT] = "float",
        [IR_RULE_ROUND] = "round",    [IR_RULE_PRED] = "pred",       [IR_RULE_LOGICAL] = "logical",
        [IR_RULE_BITWISE] = "bitwise", [IR_RULE_ARITH] = "arith",    [IR_RULE_SUB] = "sub",
        [IR_RULE_NUMERIC] = "numeric", [IR_RULE_TRUEDIV] = "truediv", [IR_RULE_CMP] = "cmp",
        [IR_RULE_FLOATONLY] = "floatonly", [IR_RULE_INTONLY] = "intonly", [IR_RULE_INTPOW] = "intpow",
        [IR_RULE_EXPONENT] = "exponent",
    };
    _Static_assert(sizeof names / sizeof *names == IR_RULE_LAST + 1, "a name per dtype rule");
    return names[r];
}

static const char *attr_kind_name(ir_attr_kind k)
{
    static const char *const names[] = {
        [IR_ATTR_INT] = "int",     [IR_ATTR_INTS] = "ints",   [IR_ATTR_BOOL] = "bool",
        [IR_ATTR_FLOAT] = "float", [IR_ATTR_DTYPE] = "dtype", [IR_ATTR_REDUCTION] = "reduction",
        [IR_ATTR_ROUNDING] = "rounding", [IR_ATTR_REDUCE_OP] = "reduce_op", [IR_ATTR_RNG] = "rng",
    };
    _Static_assert(sizeof names / sizeof *names == IR_ATTR_LAST + 1, "a name per attribute kind");
    return names[k];
}

int tj_op_count(void) { return IR_NUM_OPS; }

int tj_op_get(int k, tj_op_info *out)
{
    memset(out, 0, sizeof *out);
    if (k < 0 || k >= IR_NUM_OPS) {
        rt_error("tj_op_get: no op %d (the table has %d)", k, IR_NUM_OPS);
        return -1;
    }
    const ir_opinfo *o = &ir_ops[k];
    out->name = o->name;
    out->kind = ir_kind_name(o->kind);
    out->nmin = o->nmin;
    out->nmax = o->nmax;
    out->prim = o->prim;
    out->rule = rule_name(o->rule);
    char why[160];
    out->lowering = ps_fuse_lowering(k, why, sizeof why);
    out->nattrs = o->nattrs;
    for (int i = 0; i < o->nattrs; i++) {
        out->attrs[i].name = o->attrs[i].name;
        out->attrs[i].kind = attr_kind_name(o->attrs[i].kind);
    }
    return 0;
}

int tj_op_find(const char *name)
{
    ir_op op = name ? ir_op_from_name(name) : IR_NUM_OPS;
    return op == IR_NUM_OPS ? -1 : (int)op;
}
