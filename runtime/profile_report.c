/* profile_report.c - what a profiling session shows: the summary table
 * (tj_profile_rows, tj_profile_table: one row per name and kind, sorted by
 * total time, like torch.profiler's key_averages) and the chrome trace
 * (tj_profile_write_trace: the Trace Event Format that Perfetto and
 * chrome://tracing load, one lane per thread), both from the snapshot the
 * last tj_profile_end made (profile.c).
 *
 * Self time: an event's time minus that of the table events nested in it on
 * the same thread (a plan run's self time is what it spends between its
 * kernels). Chunks and blocks are parts of other events: trace only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"

static bool in_table(int cat) { return cat <= RT_PROF_GRAPH; }

typedef struct agg {
    rt_prof_id name;
    int cat;
    int64_t calls, total, self, bytes, flops;   /* ns; flops -1: unknown */
} agg;

static int cmp_key(const void *a_, const void *b_)
{
    const rt_prof_ev *a = *(rt_prof_ev *const *)a_, *b = *(rt_prof_ev *const *)b_;
    if (a->name != b->name)
        return a->name < b->name ? -1 : 1;
    return a->cat - b->cat;
}

static int cmp_total(const void *a_, const void *b_)
{
    const agg *a = a_, *b = b_;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    return a->cat - b->cat;
}

/* Per table event, its self time (events are sorted by lane, then t0,
 * outer first). NULL when out of memory. */
static int64_t *self_times(const rt_prof_snap *s)
{
    int64_t *self = malloc(sizeof *self * (size_t)(s->nev + 1));
    int64_t *stack = malloc(sizeof *stack * (size_t)(s->nev + 1));
    if (!self || !stack) {
        free(self), free(stack);
        return NULL;
    }
    int64_t top = 0;
    for (int64_t i = 0; i < s->nev; i++) {
        const rt_prof_ev *e = &s->ev[i];
        self[i] = e->t1 - e->t0;
        if (!in_table(e->cat))
            continue;
        while (top > 0 && (s->ev[stack[top - 1]].lane != e->lane || s->ev[stack[top - 1]].t1 <= e->t0))
            top--;
        if (top > 0)
            self[stack[top - 1]] -= e->t1 - e->t0;
        stack[top++] = i;
    }
    free(stack);
    return self;
}

/* The rows, sorted by total time (malloc'd, *n of them); NULL when out of memory. */
static agg *aggregate(const rt_prof_snap *s, int *n)
{
    *n = 0;
    int64_t *self = self_times(s);
    const rt_prof_ev **p = malloc(sizeof *p * (size_t)(s->nev + 1));
    agg *rows = malloc(sizeof *rows * (size_t)(s->nev + 1));
    if (!self || !p || !rows) {
        free(self), free(p), free(rows);
        return NULL;
    }
    int64_t m = 0;
    for (int64_t i = 0; i < s->nev; i++)
        if (in_table(s->ev[i].cat))
            p[m++] = &s->ev[i];
    qsort(p, (size_t)m, sizeof *p, cmp_key);
    for (int64_t i = 0; i < m; i++) {
        const rt_prof_ev *e = p[i];
        if (*n == 0 || cmp_key(&p[i - 1], &p[i]) != 0)
            rows[(*n)++] = (agg){e->name, e->cat, 0, 0, 0, 0, 0};
        agg *r = &rows[*n - 1];
        r->calls++;
        r->total += e->t1 - e->t0;
        r->self += self[e - s->ev];
        r->bytes += e->bytes;
        r->flops = r->flops < 0 || e->flops < 0 ? -1 : r->flops + e->flops;
    }
    qsort(rows, (size_t)*n, sizeof *rows, cmp_total);
    free(self), free(p);
    return rows;
}

static void fill_row(const rt_prof_snap *s, const agg *a, int64_t self_all, tj_profile_row *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", rt_prof_snap_name(s, a->name));
    snprintf(r->kind, sizeof r->kind, "%s", rt_prof_cat_names[a->cat]);
    r->calls = a->calls;
    r->total_ms = (double)a->total / 1e6;
    r->self_ms = (double)a->self / 1e6;
    r->avg_us = (double)a->total / 1e3 / (double)a->calls;
    r->bytes = a->bytes;
    r->flops = a->flops;
    r->gbps = a->total > 0 ? (double)a->bytes / (double)a->total : 0;
    r->gflops = a->total > 0 && a->flops > 0 ? (double)a->flops / (double)a->total : 0;
    r->self_percent = self_all > 0 ? 100.0 * (double)a->self / (double)self_all : 0;
}

static int rows_of(const char *who, tj_profile_row *rows, int max)
{
    const rt_prof_snap *s = rt_prof_snap_get(who);
    if (!s)
        return -1;
    int n;
    agg *a = aggregate(s, &n);
    if (!a) {
        rt_prof_snap_put();
        rt_error("%s: out of memory", who);
        return -1;
    }
    int64_t self_all = 0;
    for (int k = 0; k < n; k++)
        self_all += a[k].self;
    for (int k = 0; k < n && k < max; k++)
        fill_row(s, &a[k], self_all, &rows[k]);
    free(a);
    rt_prof_snap_put();
    return n;
}

int tj_profile_rows(tj_profile_row *rows, int max)
{
    if (max < 0 || (max > 0 && !rows)) {
        rt_error("profile_rows: rows is NULL or max (%d) is negative", max);
        return -1;
    }
    return rows_of("profile_rows", rows, max);
}

/* ---- the table ------------------------------------------------------------------------ */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    for (int tries = 0; tries < 2 && !b->oom; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = true;
            return;
        }
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = (b->cap + (size_t)k + 1) * 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

static const char *human_bytes(int64_t v, char *buf, size_t n)
{
    static const char *unit[] = {"B", "KB", "MB", "GB", "TB"};
    double x = (double)v;
    int u = 0;
    while (x >= 1000 && u < 4) {
        x /= 1000;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", x, unit[u]);
    return buf;
}

char *tj_profile_table(int max_rows)
{
    int n = rows_of("profile_table", NULL, 0);
    if (n < 0)
        return NULL;
    tj_profile_row *rows = calloc((size_t)n + 1, sizeof *rows);
    if (!rows || (n = rows_of("profile_table", rows, n)) < 0) {
        free(rows);
        if (!rows)
            rt_error("profile_table: out of memory");
        return NULL;
    }
    const rt_prof_snap *s = rt_prof_snap_get("profile_table");
    if (!s) {
        free(rows);
        return NULL;
    }
    sbuf b = {0};
    put(&b, "tjit profile: %lld events on %d thread%s over %.3f ms", (long long)s->nev, s->nlanes,
        s->nlanes == 1 ? "" : "s", (double)(s->t_end - s->t_begin) / 1e6);
    if (s->dropped)
        put(&b, " (%lld dropped: a thread's buffer was full)", (long long)s->dropped);
    rt_prof_snap_put();
    put(&b, "\n%-40s %-6s %8s %10s %10s %10s %10s %8s %8s %7s\n", "name", "kind", "calls",
        "total ms", "self ms", "avg us", "bytes", "GB/s", "GFLOP/s", "self %");
    int shown = max_rows > 0 && max_rows < n ? max_rows : n;
    for (int k = 0; k < shown; k++) {
        const tj_profile_row *r = &rows[k];
        char by[32], gb[16] = "-", gf[16] = "-";
        if (r->bytes > 0)
            snprintf(gb, sizeof gb, "%.2f", r->gbps);
        if (r->flops > 0)
            snprintf(gf, sizeof gf, "%.2f", r->gflops);
        put(&b, "%-40.40s %-6s %8lld %10.3f %10.3f %10.2f %10s %8s %8s %6.1f%%\n", r->name, r->kind,
            (long long)r->calls, r->total_ms, r->self_ms, r->avg_us,
            r->bytes > 0 ? human_bytes(r->bytes, by, sizeof by) : "-", gb, gf, r->self_percent);
    }
    if (shown < n)
        put(&b, "(%d more rows)\n", n - shown);
    free(rows);
    if (b.oom) {
        free(b.p);
        rt_error("profile_table: out of memory");
        return NULL;
    }
    return b.p;
}

/* ---- the chrome trace ---------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

int tj_profile_write_trace(const char *path)
{
    if (!path || !*path) {
        rt_error("profile_write_trace: the path is NULL or empty");
        return -1;
    }
    const rt_prof_snap *s = rt_prof_snap_get("profile_write_trace");
    if (!s)
        return -1;
    FILE *f = fopen(path, "w");
    if (!f) {
        rt_prof_snap_put();
        rt_error("profile_write_trace: cannot write %s", path);
        return -1;
    }
    int pid = (int)getpid();
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"tjit\"}}",
            pid);
    for (int l = 0; l < s->nlanes; l++) {
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", pid, l);
        json_str(f, s->lane_names[l]);
        fprintf(f, "}}");
    }
    for (int64_t i = 0; i < s->nev; i++) {
        const rt_prof_ev *e = &s->ev[i];
        fprintf(f, ",\n{\"name\":");
        json_str(f, rt_prof_snap_name(s, e->name));
        fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d",
                rt_prof_cat_names[e->cat], (double)(e->t0 - s->t_begin) / 1e3,
                (double)(e->t1 - e->t0) / 1e3, pid, e->lane);
        if (in_table(e->cat))
            fprintf(f, ",\"args\":{\"bytes\":%lld,\"flops\":%lld}", (long long)e->bytes, (long long)e->flops);
        fputc('}', f);
    }
    fprintf(f, "\n]}\n");
    rt_prof_snap_put();
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        rt_error("profile_write_trace: error writing %s", path);
        return -1;
    }
    return 0;
}
