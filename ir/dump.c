/* dump.c - TJIT_DUMP and TJIT_DUMP_DIR: printing compile stages.
 *
 * TJIT_DUMP is a comma-separated list of stages: graph (tracing), the steps
 * of the compiled-graph pipeline by name (sched/plan.c), llvm, asm; `all` for
 * every one. Each dump goes to stderr
 * under a header line, or, when TJIT_DUMP_DIR is set, to a numbered file
 * DIR/NNNN-<name>.<stage>.tir (numbers count up per process).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"

static bool list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if ((len == n && !strncmp(p, item, n)) || (len == 3 && !strncmp(p, "all", 3)))
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

bool ir_dump_enabled(const char *stages, const char *stage)
{
    if (!stages)
        stages = getenv("TJIT_DUMP");
    return stages && list_has(stages, stage);
}

int ir_dump_text(const char *stage, const char *name, const char *text)
{
    static atomic_int counter;
    const char *dir = getenv("TJIT_DUMP_DIR");
    if (!dir || !*dir) {
        fprintf(stderr, "// ---- tjit dump: %s of @%s ----\n%s", stage, name, text);
        return 0;
    }
    char path[4096];
    int k = atomic_fetch_add(&counter, 1) + 1;
    snprintf(path, sizeof path, "%s/%04d-%s.%s.tir", dir, k, name, stage);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tjit: cannot write dump %s\n", path);
        return -1;
    }
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -1;
}
