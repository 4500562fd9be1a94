/* tool_ops.c - `tjit ops`: the op table as text, or as docs/ops.md. */
#include <stdio.h>
#include <string.h>

#include "tool.h"

static void arity(const tj_op_info *o, char *buf, size_t n)
{
    if (o->nmax < 0)
        snprintf(buf, n, "%d+", o->nmin);
    else if (o->nmax != o->nmin)
        snprintf(buf, n, "%d-%d", o->nmin, o->nmax);
    else
        snprintf(buf, n, "%d", o->nmin);
}

static void attrs(const tj_op_info *o, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < o->nattrs && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s:%s", i ? " " : "", o->attrs[i].name,
                              o->attrs[i].kind);
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
               tj_op_count());
    for (int op = 0; op < tj_op_count(); op++) {
        tj_op_info o;
        tj_op_get(op, &o);
        char ar[16], at[256];
        arity(&o, ar, sizeof ar);
        attrs(&o, at, sizeof at);
        if (md)
            printf("| `%s` | %s | %s | %s | %s | %s |\n", o.name, o.kind, ar,
                   o.prim ? "prim" : "composite", o.rule, at);
        else
            printf("%-14s %-9s %-4s %-9s %-8s %s\n", o.name, o.kind, ar,
                   o.prim ? "prim" : "composite", o.rule, at);
    }
    return 0;
}
