/* tool_ops.c - `tjit ops`: the op table as text, or as docs/ops.md; with
 * --samples DIR (tests/golden/opinfo), the OpInfo samples each op has, by
 * kind, and the deliberate differences from PyTorch (DIR/known.txt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

#define MAX_KINDS 24

/* What DIR/cases.txt holds per op: samples by kind (the tags of a line). */
typedef struct samples {
    int nkinds;
    char kinds[MAX_KINDS][16];
    int *count;   /* [op * MAX_KINDS + kind]; the total in kind MAX_KINDS - 1 */
} samples;

static int kind_index(samples *s, const char *tag)
{
    for (int k = 0; k < s->nkinds; k++)
        if (!strcmp(s->kinds[k], tag))
            return k;
    if (s->nkinds == MAX_KINDS - 1)
        return -1;
    snprintf(s->kinds[s->nkinds], sizeof s->kinds[0], "%s", tag);
    return s->nkinds++;
}

static int read_samples(const char *dir, samples *s)
{
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *f = fopen(path, "r");
    s->count = calloc((size_t)tj_op_count() * MAX_KINDS, sizeof *s->count);
    if (!f || !s->count) {
        fprintf(stderr, "tjit ops: cannot read %s\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char name[64], tags[128];
        int op;
        if (!strncmp(line, "# kinds: ", 9)) {   /* the order of the kinds column */
            for (char *save = NULL, *t = strtok_r(line + 9, " \n", &save); t;
                 t = strtok_r(NULL, " \n", &save))
                kind_index(s, t);
            continue;
        }
        if (line[0] == '#' || !strncmp(line, "tol ", 4) ||
            sscanf(line, "%63s %127s", name, tags) != 2 || (op = tj_op_find(name)) < 0)
            continue;
        s->count[op * MAX_KINDS + MAX_KINDS - 1]++;
        for (char *save = NULL, *t = strtok_r(tags, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int k = kind_index(s, t);
            if (k >= 0)
                s->count[op * MAX_KINDS + k]++;
        }
    }
    fclose(f);
    return 0;
}

/* "plain 7, dtype 5, ..." for op, or "" without samples. */
static void kinds_of(const samples *s, int op, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->nkinds && k < n; i++)
        if (s->count[op * MAX_KINDS + i])
            k += (size_t)snprintf(buf + k, n - k, "%s%s %d", k ? ", " : "", s->kinds[i],
                                  s->count[op * MAX_KINDS + i]);
}

/* s with '|' escaped for a markdown table cell. */
static void print_cell(const char *s)
{
    for (; *s; s++)
        printf(*s == '|' ? "\\|" : "%c", *s);
}

/* The lines of DIR/known.txt, as two tables: deliberate differences and
 * rows without samples. */
static void print_known(const char *dir)
{
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/known.txt", dir);
    for (int exempt = 0; exempt < 2; exempt++) {
        FILE *f = fopen(path, "r");
        if (!f)
            return;
        if (exempt)
            printf("\n## Rows without samples\n\n| op | why |\n|---|---|\n");
        else
            printf("\n## Deliberate differences from PyTorch\n\nFrom `%s`, which "
                   "`tests/test_opinfo.c` holds to the samples: a sample that differs "
                   "and is not named here fails the test. *mode*: where it differs (eager, "
                   "compiled or both); *samples*: the parts of a sample's line in `cases.txt` "
                   "that name it.\n\n| op | mode | samples | difference |\n|---|---|---|---|\n",
                   path);
        while (fgets(line, sizeof line, f)) {
            char op[64], mode[16], pattern[128];
            int at = 0;
            if (line[0] == '#' || sscanf(line, "%63s %15s %127s %n", op, mode, pattern, &at) != 3)
                continue;
            line[strcspn(line, "\n")] = '\0';
            if (exempt != !strcmp(mode, "exempt"))
                continue;
            if (exempt)
                printf("| `%s` | ", op);
            else
                printf("| `%s` | %s | `%s` | ", op, mode, pattern);
            print_cell(line + at);
            printf(" |\n");
        }
        fclose(f);
    }
}

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
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--markdown"))
            md = true;
        else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--help")) {
            printf("usage: tjit ops [--markdown] [--samples DIR]\n  lists every op of "
                   "ir/ops.def: kind, inputs, prim or composite, how compiled plans run it,\n  dtype rule, attributes, then the counts;\n"
                   "  --samples DIR (tests/golden/opinfo): the OpInfo samples per op by kind, "
                   "and the\n  deliberate differences from PyTorch (DIR/known.txt)\n");
            return 0;
        } else {
            fprintf(stderr, "tjit ops: unknown flag '%s'\n", argv[i]);
            return 2;
        }
    }
    samples s = {0};
    if (dir && read_samples(dir, &s))
        return 1;
    if (md)
        printf("# Op list\n\nGenerated from `ir/ops.def` by `tjit ops --markdown%s%s` (`make "
               "docs`); do not edit.\n%d ops.\n",
               dir ? " --samples " : "", dir ? dir : "", tj_op_count());
    if (md && dir)
        printf("\n*samples*: the OpInfo samples of `%s/cases.txt` "
               "(`scripts/golden/opinfo.py`, which says what each kind means), each run by "
               "`tests/test_opinfo.c` eager and compiled against PyTorch.\n",
               dir);
    if (md)
        printf("\n*compiled*: how a compiled plan runs a prim on f32 operands (the "
               "classification fusion applies, `passes/fuse.c`): generated `kernel`s, a `view`, or "
               "an `eager call` of its runtime kernel inside the plan; composites are `decomposed` "
               "into prims first.\n"
               "\n| op | kind | inputs | prim | compiled | dtype rule | attributes |%s\n"
               "|---|---|---|---|---|---|---|%s\n",
               dir ? " samples | kinds |" : "", dir ? "---|---|" : "");
    for (int op = 0; op < tj_op_count(); op++) {
        tj_op_info o;
        tj_op_get(op, &o);
        char ar[16], at[256], kinds[512] = "";
        arity(&o, ar, sizeof ar);
        attrs(&o, at, sizeof at);
        if (dir)
            kinds_of(&s, op, kinds, sizeof kinds);
        if (md && dir)
            printf("| `%s` | %s | %s | %s | %s | %s | %s | %d | %s |\n", o.name, o.kind, ar,
                   o.prim ? "prim" : "composite", o.lowering, o.rule, at, s.count[op * MAX_KINDS + MAX_KINDS - 1],
                   kinds[0] ? kinds : "none (below)");
        else if (md)
            printf("| `%s` | %s | %s | %s | %s | %s | %s |\n", o.name, o.kind, ar,
                   o.prim ? "prim" : "composite", o.lowering, o.rule, at);
        else
            printf("%-14s %-9s %-4s %-9s %-10s %-8s %s%s%s\n", o.name, o.kind, ar,
                   o.prim ? "prim" : "composite", o.lowering, o.rule, at, kinds[0] ? "  samples: " : "", kinds);
    }
    int nprim = 0, nkernel = 0, nview = 0, neager = 0;
    for (int op = 0; op < tj_op_count(); op++) {
        tj_op_info o;
        tj_op_get(op, &o);
        nprim += o.prim;
        nkernel += !strcmp(o.lowering, "kernel");
        nview += !strcmp(o.lowering, "view");
        neager += !strcmp(o.lowering, "eager call");
    }
    printf("%s%d ops: %d prims (on f32: %d lower to generated kernels, %d are views, %d run their runtime "
           "kernel as an eager call inside plans), %d composites (decomposed into prims)\n",
           md ? "\n" : "", tj_op_count(), nprim, nkernel, nview, neager, tj_op_count() - nprim);
    if (md && dir)
        print_known(dir);
    free(s.count);
    return 0;
}
