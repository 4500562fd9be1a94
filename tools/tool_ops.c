/* tool_ops.c - `tjit ops`: the op table as text, or as docs/ops.md. */
#include <stdio.h>
#include <string.h>

#include "../ir/ir.h"
#include "tool.h"

static const char *attr_kind(ir_attr_kind k)
{
    static const char *const names[] = {"int", "ints", "bool", "float", "dtype"};
    return names[k];
}

static const char *rule_name(ir_rule r)
{
    static const char *const names[] = {"",      "same",    "float", "round",   "pred", "logical",
                                        "bitwise", "arith", "sub",   "truediv", "cmp"};
    return names[r];
}

static void arity(const ir_opinfo *o, char *buf, size_t n)
{
    if (o->nmax < 0)
        snprintf(buf, n, "%d+", o->nmin);
    else if (o->nmax != o->nmin)
        snprintf(buf, n, "%d-%d", o->nmin, o->nmax);
    else
        snprintf(buf, n, "%d", o->nmin);
}

static void attrs(const ir_opinfo *o, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < o->nattrs && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s:%s", i ? " " : "", o->attrs[i].name,
                              attr_kind(o->attrs[i].kind));
}

int tool_ops(int argc, char **argv)
{
    bool md = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--markdown"))
            md = true;
        else if (!strcmp(argv[i], "--help")) {
            printf("usage: tjit ops [--markdown]\n  lists every op of ir/ops.def: kind, "
                   "inputs, prim or composite, dtype rule, attributes\n");
            return 0;
        } else {
            fprintf(stderr, "tjit ops: unknown flag '%s'\n", argv[i]);
            return 2;
        }
    }
    if (md)
        printf("# Op list\n\nGenerated from `ir/ops.def` by `tjit ops --markdown` (`make docs`); "
               "do not edit.\n%d ops.\n\n| op | kind | inputs | prim | dtype rule | attributes |\n"
               "|---|---|---|---|---|---|\n",
               IR_NUM_OPS);
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ir_opinfo *o = &ir_ops[op];
        char ar[16], at[256];
        arity(o, ar, sizeof ar);
        attrs(o, at, sizeof at);
        if (md)
            printf("| `%s` | %s | %s | %s | %s | %s |\n", o->name, ir_kind_name(o->kind), ar,
                   o->prim ? "prim" : "composite", rule_name(o->rule), at);
        else
            printf("%-14s %-9s %-4s %-9s %-8s %s\n", o->name, ir_kind_name(o->kind), ar,
                   o->prim ? "prim" : "composite", rule_name(o->rule), at);
    }
    return 0;
}
