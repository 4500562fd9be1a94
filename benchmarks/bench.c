/* bench.c - the runner of the benchmark suite (see bench.h): for one case,
 * set up its tensors, make a first call (checked: f32, every value finite;
 * its resident-memory growth is the case's peak), warm up, then time
 * iterations until both the iteration count and the minimum time are
 * reached; the median is the result. Each iteration opens and closes a scope,
 * so the time includes freeing the intermediates and the result. */
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/rt.h"
#include "bench.h"

#define BENCH_MAX_ITERS 100000
#define BENCH_WARMUP_FRACTION 0.2   /* of min_time, spent warming up */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* ---- peak memory: growth of the resident set (Linux /proc) ---------------- */

/* A field of /proc/self/status in bytes, or -1. */
static int64_t proc_status_bytes(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    int64_t v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') {
            v = strtoll(line + n + 1, NULL, 10) * 1024;
            break;
        }
    fclose(f);
    return v;
}

/* Returns memory that is free but resident to the system, resets the peak
 * resident set to the current one and returns that, or -1 when the kernel
 * cannot reset it. */
static int64_t peak_reset(void)
{
    rt_alloc_trim();
    malloc_trim(0);
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    bool ok = fputs("5", f) >= 0;
    ok = fclose(f) == 0 && ok;
    return ok ? proc_status_bytes("VmRSS") : -1;
}

static int64_t peak_since(int64_t base)
{
    int64_t hwm = base < 0 ? -1 : proc_status_bytes("VmHWM");
    return hwm < 0 ? -1 : (hwm > base ? hwm - base : 0);
}

/* ---- one call -------------------------------------------------------------- */

static int fail(bench_result *r, const char *stage, const char *why)
{
    r->status = BENCH_FAILED;
    snprintf(r->error, sizeof r->error, "%s: %s", stage, why && *why ? why : "failed");
    return -1;
}

/* The first result must be a float32 tensor of finite values. */
static int check_output(tj_tensor *y, bench_result *r)
{
    char d[96];
    if (tj_dtype_of(y) != TJ_F32 || tj_numel(y) == 0)
        return fail(r, "check", tj_describe(y, d, sizeof d));
    tj_tensor *c = tj_contiguous(y);
    const float *p = c ? tj_data(c) : NULL;
    if (!p)
        return fail(r, "check", tj_last_error());
    for (int64_t k = 0, n = tj_numel(c); k < n; k++)
        if (!isfinite(p[k])) {
            snprintf(d, sizeof d, "element %lld of the result is %g", (long long)k, p[k]);
            return fail(r, "check", d);
        }
    return 0;
}

static int save(const char *dir, const bench_case *c, const bench_args *a, tj_tensor *y,
                bench_result *r)
{
    char path[1024];
    for (int k = 0; k <= a->n; k++) {
        if (k < a->n)
            snprintf(path, sizeof path, "%s/%s.arg%d.npy", dir, c->id, k);
        else
            snprintf(path, sizeof path, "%s/%s.out.npy", dir, c->id);
        if (tj_save_npy(k < a->n ? a->t[k] : y, path) != 0)
            return fail(r, "save", tj_last_error());
    }
    return 0;
}

/* The first call: checked, saved if asked, its time and peak memory kept. */
static int first_call(const bench_case *c, bench_args *a, const bench_opts *o,
                      bench_result *r)
{
    int64_t base = peak_reset();
    tj_clear_error();
    tj_scope_begin();
    double t0 = now_ms();
    tj_tensor *y = c->run(a, a->t, a->ninputs);
    double t1 = now_ms();
    r->peak_bytes = peak_since(base);
    r->eager_first_ms = t1 - t0;
    int rc = y ? check_output(y, r) : fail(r, "run", tj_last_error());
    if (rc == 0 && o->save_dir)
        rc = save(o->save_dir, c, a, y, r);
    tj_scope_end();
    return rc;
}

/* One timed call in its own scope; returns its time in ms or -1 on failure. */
static double timed_call(const bench_case *c, bench_args *a, bench_result *r)
{
    tj_scope_begin();
    double t0 = now_ms();
    tj_tensor *y = c->run(a, a->t, a->ninputs);
    tj_scope_end();
    double t1 = now_ms();
    if (!y) {
        fail(r, "run", tj_last_error());
        return -1;
    }
    return t1 - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Warm-up, then timed iterations until both o->iters and o->min_time. */
static void measure(const bench_case *c, bench_args *a, const bench_opts *o,
                    bench_result *r)
{
    double start = now_ms(), warm = o->min_time * BENCH_WARMUP_FRACTION * 1e3;
    while (now_ms() - start < warm)
        if (timed_call(c, a, r) < 0)
            return;
    int cap = o->iters > 64 ? o->iters : 64, n = 0;
    double *ts = malloc(sizeof *ts * (size_t)cap), total = 0;
    while (ts && n < BENCH_MAX_ITERS && (n < o->iters || total < o->min_time * 1e3)) {
        if (n == cap) {
            double *grown = realloc(ts, sizeof *ts * (size_t)(cap *= 2));
            if (!grown)
                break;
            ts = grown;
        }
        if ((ts[n] = timed_call(c, a, r)) < 0) {
            free(ts);
            return;
        }
        total += ts[n++];
    }
    if (!ts || n == 0) {
        free(ts);
        fail(r, "measure", "out of memory");
        return;
    }
    qsort(ts, (size_t)n, sizeof *ts, cmp_double);
    r->eager_ms = n % 2 ? ts[n / 2] : 0.5 * (ts[n / 2 - 1] + ts[n / 2]);
    r->eager_min_ms = ts[0];
    r->iters = n;
    free(ts);
}

void bench_run(const bench_case *c, const bench_opts *o, FILE *progress, bench_result *r)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->peak_bytes = -1;
    r->threads = tj_num_threads();
    if (c->skip) {
        r->status = BENCH_SKIPPED;
        snprintf(r->error, sizeof r->error, "%s", c->skip);
        return;
    }
    if (progress)
        fprintf(progress, "%s %-10s setting up\n", c->id, c->name);
    bench_args a = {0};
    tj_clear_error();
    tj_scope_begin();
    tj_manual_seed(BENCH_SEED);
    int rc = c->setup(&a);
    tj_scope_end();
    if (rc != 0)
        fail(r, "setup", tj_last_error());
    else if (first_call(c, &a, o, r) == 0) {
        if (progress)
            fprintf(progress, "%s %-10s first call %.3f ms; timing\n", c->id, c->name,
                    r->eager_first_ms);
        measure(c, &a, o, r);
    }
    c->teardown(&a);
    if (progress && r->status == BENCH_FAILED)
        fprintf(progress, "%s %-10s FAILED: %s\n", c->id, c->name, r->error);
}

/* ---- output ------------------------------------------------------------------ */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_ms(FILE *f, const char *key, double v, bool known)
{
    if (known)
        fprintf(f, ", \"%s\": %.4f", key, v);
    else
        fprintf(f, ", \"%s\": null", key);
}

void bench_print_json(FILE *f, const bench_result *r)
{
    static const char *const status[] = {"ok", "failed", "skipped"};
    bool ok = r->status == BENCH_OK;
    fprintf(f, "{\"case\": \"%s\", \"name\": \"%s\", \"system\": \"tjit\", \"status\": \"%s\"",
            r->c->id, r->c->name, status[r->status]);
    fprintf(f, ", \"error\": ");
    if (ok)
        fprintf(f, "null");
    else
        json_string(f, r->error);
    json_ms(f, "eager_ms", r->eager_ms, ok);
    json_ms(f, "eager_min_ms", r->eager_min_ms, ok);
    json_ms(f, "eager_first_ms", r->eager_first_ms, ok);
    fprintf(f, ", \"iters\": %d", r->iters);
    /* Filled once tj_compile exists. */
    fprintf(f, ", \"compiled_ms\": null, \"speedup\": null, \"first_call_cold_ms\": null"
               ", \"first_call_warm_ms\": null, \"kernels\": null");
    if (ok && r->peak_bytes >= 0)
        fprintf(f, ", \"peak_bytes\": %lld", (long long)r->peak_bytes);
    else
        fprintf(f, ", \"peak_bytes\": null");
    fprintf(f, ", \"max_abs_diff\": null, \"threads\": %d}\n", r->threads);
}

void bench_print_table_head(FILE *f)
{
    fprintf(f, "%-4s %-10s %10s %10s %10s %6s %7s %9s  %s\n", "case", "name", "eager ms",
            "min ms", "first ms", "iters", "threads", "peak MB", "status");
}

void bench_print_table_row(FILE *f, const bench_result *r)
{
    if (r->status != BENCH_OK) {
        fprintf(f, "%-4s %-10s %10s %10s %10s %6s %7d %9s  %s: %s\n", r->c->id, r->c->name, "-",
                "-", "-", "-", r->threads, "-",
                r->status == BENCH_SKIPPED ? "skipped" : "FAILED", r->error);
        return;
    }
    char peak[32] = "-";
    if (r->peak_bytes >= 0)
        snprintf(peak, sizeof peak, "%.1f", r->peak_bytes / 1048576.0);
    fprintf(f, "%-4s %-10s %10.3f %10.3f %10.3f %6d %7d %9s  ok\n", r->c->id, r->c->name,
            r->eager_ms, r->eager_min_ms, r->eager_first_ms, r->iters, r->threads, peak);
}
