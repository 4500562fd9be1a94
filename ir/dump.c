/* dump.c - TJIT_DUMP and TJIT_DUMP_DIR: printing compile stages.
 *
 * TJIT_DUMP is a comma-separated list of stage names, `all`, or a level N of
 * the ladder (every stage whose level is 1..N, docs/cli.md). The stages are
 * the dump points below (outside the pipeline) and the steps of the
 * compiled-graph pipeline, registered by sched/plan.c from its own table. An
 * unknown name in $TJIT_DUMP is reported once per process, with the valid
 * ones. Each dump goes to stderr under a header line, or, when TJIT_DUMP_DIR
 * is set, to a numbered file DIR/NNNN-<name>.<stage>.<ext> (numbers count up
 * per process; the directory is made, with its parents, when missing).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dump.h"

/* The dump points outside the pipeline. */
static const ir_dump_stage points[] = {
    {"stats", NULL, 1, "txt"},   /* per plan: counts and compile times (sched/plan.c) */
    {"graph", NULL, 2, "tir"},   /* the traced or parsed graph (frontend) */
    {"keep", NULL, 2, "txt"},    /* weight-only values kept across calls (frontend/keep.c) */
    {"llvm", NULL, 4, "ll"},     /* each kernel's optimized LLVM IR (codegen) */
    {"asm", NULL, 5, "s"},       /* each kernel's assembly (codegen) */
};

enum { MAX_TABLES = 4 };
static struct table {
    const char *base;
    int n;
    size_t stride;
} tables[MAX_TABLES] = {{(const char *)points, sizeof points / sizeof *points, sizeof *points}};
static int ntables = 1;

void ir_dump_register(const void *table, int n, size_t stride)
{
    if (ntables < MAX_TABLES)
        tables[ntables++] = (struct table){table, n, stride};
}

static const ir_dump_stage *stage_at(int t, int i)
{
    return (const ir_dump_stage *)(tables[t].base + (size_t)i * tables[t].stride);
}

/* The stage named name (or by its older name), or NULL. */
static const ir_dump_stage *find(const char *name, size_t len)
{
    for (int t = 0; t < ntables; t++)
        for (int i = 0; i < tables[t].n; i++) {
            const ir_dump_stage *s = stage_at(t, i);
            if ((strlen(s->name) == len && !strncmp(s->name, name, len)) ||
                (s->also && strlen(s->also) == len && !strncmp(s->also, name, len)))
                return s;
        }
    return NULL;
}

/* A level entry ("0".."99"): its value; else -1. */
static int level_of(const char *p, size_t len)
{
    if (len == 0 || len > 2)
        return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

/* Calls f on each entry of the comma list; stops at the first nonzero. */
static int each_entry(const char *list, int (*f)(const char *p, size_t len, void *arg), void *arg)
{
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int rc = len ? f(p, len, arg) : 0;
        if (rc)
            return rc;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

typedef struct want {
    const char *stage;
    const ir_dump_stage *s;
} want;

static int selects(const char *p, size_t len, void *arg)
{
    const want *w = arg;
    if ((len == 3 && !strncmp(p, "all", 3)) || (strlen(w->stage) == len && !strncmp(p, w->stage, len)))
        return 1;
    int lv = level_of(p, len);
    return lv >= 0 && w->s && w->s->level <= lv;
}

static int is_bad(const char *p, size_t len, void *arg)
{
    (void)arg;
    return !(len == 3 && !strncmp(p, "all", 3)) && level_of(p, len) < 0 && !find(p, len);
}

static int first_bad(const char *p, size_t len, void *arg)
{
    if (!is_bad(p, len, NULL))
        return 0;
    snprintf(arg, 64, "%.*s", (int)(len < 63 ? len : 63), p);
    return 1;
}

int ir_dump_check(const char *stages, char *why, size_t n)
{
    char bad[64];
    if (!each_entry(stages, first_bad, bad))
        return 0;
    size_t k = (size_t)snprintf(why, n, "unknown dump stage \"%s\" (stages: all, a level 1..%d", bad,
                                IR_DUMP_MAX_LEVEL);
    for (int lv = 1; lv <= IR_DUMP_MAX_LEVEL; lv++)
        for (int t = 0; t < ntables; t++)
            for (int i = 0; i < tables[t].n; i++) {
                const ir_dump_stage *s = stage_at(t, i);
                if (s->level == lv && k < n)
                    k += (size_t)snprintf(why + k, n - k, ", %s%s%s%s", s->name, s->also ? " [" : "",
                                          s->also ? s->also : "", s->also ? "]" : "");
            }
    if (k < n)
        snprintf(why + k, n - k, ")");
    return -1;
}

bool ir_dump_enabled(const char *stages, const char *stage)
{
    if (!stages) {
        static atomic_flag warned = ATOMIC_FLAG_INIT;
        stages = getenv("TJIT_DUMP");
        if (!stages || !*stages)
            return false;
        char why[1024];
        if (each_entry(stages, is_bad, NULL) && ir_dump_check(stages, why, sizeof why) &&
            !atomic_flag_test_and_set(&warned))
            fprintf(stderr, "tjit: TJIT_DUMP: %s\n", why);
    }
    want w = {stage, find(stage, strlen(stage))};
    return each_entry(stages, selects, &w) != 0;
}

/* mkdir -p dir (mode 0700, less the umask). 0, or -1 with errno set. */
static int make_dir(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (char *p = path + 1; ; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = 0;
        struct stat st;
        if (mkdir(path, 0700) != 0 && (errno != EEXIST || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
            if (errno == EEXIST)
                errno = ENOTDIR;
            return -1;
        }
        *p = c;
        if (!c)
            return 0;
    }
}

int ir_dump_text(const char *stage, const char *name, const char *text)
{
    static atomic_int counter;
    const char *dir = getenv("TJIT_DUMP_DIR");
    if (!dir || !*dir) {
        fprintf(stderr, "// ---- tjit dump: %s of @%s ----\n%s", stage, name, text);
        return 0;
    }
    if (make_dir(dir) != 0) {
        fprintf(stderr, "tjit: cannot create the dump directory %s (TJIT_DUMP_DIR): %s\n", dir,
                strerror(errno));
        return -1;
    }
    const ir_dump_stage *s = find(stage, strlen(stage));
    char path[4096];
    int k = atomic_fetch_add(&counter, 1) + 1;
    snprintf(path, sizeof path, "%s/%04d-%s.%s.%s", dir, k, name, stage, s ? s->ext : "txt");
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tjit: cannot write dump %s: %s\n", path, strerror(errno));
        return -1;
    }
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -1;
}
