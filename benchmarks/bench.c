/* bench.c - the runner of the benchmark suite (see bench.h). For one case:
 *
 *   setup (seeded inputs and weights)
 *   eager:    a first call (checked: f32, every value finite; its resident-
 *             memory growth is the eager peak), warm-up, timed iterations
 *   compiled: tj_compile(c->run, &args); a first call (traces and compiles,
 *             checked, compared with the eager result: max abs diff), a
 *             second call (its resident-memory growth is the compiled peak),
 *             warm-up, timed iterations; kernels from the plan
 *   first calls: a fresh process (`tjit bench --first-call CASE`, this very
 *             executable) with TJIT_CACHE_DIR on a new empty directory, then
 *             another on the same directory: cold and warm kernel cache;
 *             three such pairs, the medians
 *
 * Timed iterations run until both the iteration count and the minimum time
 * are reached; the median is the result. Each iteration opens and closes a
 * scope, so the time includes freeing the intermediates and the result. */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tjit.h>

#include "bench.h"

#define BENCH_MAX_ITERS 100000
#define BENCH_WARMUP_FRACTION 0.2   /* of min_time, spent warming up */
#define BENCH_FIRST_CALL_RUNS 3     /* pairs of first-call processes; medians */

extern char **environ;

double bench_clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double now_ms(void) { return bench_clock_ms(CLOCK_MONOTONIC); }

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
    tj_alloc_trim();
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

/* What a path calls: the model itself, or tj_call of its compiled handle. */
typedef struct callee {
    const char *path;   /* "eager", "compiled": for messages */
    bench_model_fn fn;
    void *ctx;
} callee;

static tj_tensor *call_compiled(void *ctx, tj_tensor *const *args, int nargs)
{
    return tj_call(ctx, args, nargs);
}

static tj_tensor *invoke(const callee *f, bench_args *a)
{
    return f->fn(f->ctx, a->t, a->ninputs);
}

/* The first result must be a float32 tensor of finite values. */
static int check_output(tj_tensor *y, const char *path, bench_result *r)
{
    char d[96], stage[32];
    snprintf(stage, sizeof stage, "%s check", path);
    if (tj_dtype_of(y) != TJ_F32 || tj_numel(y) == 0)
        return fail(r, stage, tj_describe(y, d, sizeof d));
    tj_tensor *c = tj_contiguous(y);
    const float *p = c ? tj_data(c) : NULL;
    if (!p)
        return fail(r, stage, tj_last_error());
    for (int64_t k = 0, n = tj_numel(c); k < n; k++)
        if (!isfinite(p[k])) {
            snprintf(d, sizeof d, "element %lld of the result is %g", (long long)k, p[k]);
            return fail(r, stage, d);
        }
    return 0;
}

/* A training case's weights after its first step: <id>.upd<k>.npy for a->t[k]. */
static int save_updated(const char *dir, const bench_case *c, const bench_args *a, bench_result *r)
{
    char path[1024];
    for (int k = a->ninputs; k < a->n; k++) {
        snprintf(path, sizeof path, "%s/%s.upd%d.npy", dir, c->id, k);
        if (tj_save_npy(a->t[k], path) != 0)
            return fail(r, "save", tj_last_error());
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

/* One checked call: its time in *ms, its resident-memory growth in *peak
 * (if peak), its result kept in *keep (if keep; the caller releases it). */
static int checked_call(const callee *f, bench_args *a, double *ms, int64_t *peak,
                        tj_tensor **keep, bench_result *r)
{
    int64_t base = peak ? peak_reset() : -1;
    tj_clear_error();
    tj_scope_begin();
    double t0 = now_ms();
    tj_tensor *y = invoke(f, a);
    double t1 = now_ms();
    if (peak)
        *peak = peak_since(base);
    *ms = t1 - t0;
    int rc = y ? check_output(y, f->path, r) : fail(r, f->path, tj_last_error());
    if (rc == 0 && keep)
        *keep = tj_keep(y);
    tj_scope_end();
    return rc;
}

/* One timed call in its own scope, on clock `id`; returns its time in ms or
 * -1 on failure. */
static double timed_call(const callee *f, bench_args *a, clockid_t id, bench_result *r)
{
    tj_scope_begin();
    double t0 = bench_clock_ms(id);
    tj_tensor *y = invoke(f, a);
    tj_scope_end();
    double t1 = bench_clock_ms(id);
    if (!y) {
        fail(r, f->path, tj_last_error());
        return -1;
    }
    return t1 - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The process's page faults so far (minor + major), or -1. Faults per call
 * show whether a steady-state call touches fresh pages (an output or an
 * intermediate the allocator did not keep). */
static double page_faults(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0)
        return -1;
    return (double)u.ru_minflt + (double)u.ru_majflt;
}

/* Warm-up, then timed iterations until both o->iters and o->min_time. */
static int measure(const callee *f, bench_args *a, const bench_opts *o, bench_timing *t,
                   bench_result *r)
{
    clockid_t id = o->cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    double start = now_ms(), warm = o->min_time * BENCH_WARMUP_FRACTION * 1e3;
    while (now_ms() - start < warm)
        if (timed_call(f, a, id, r) < 0)
            return -1;
    int cap = o->iters > 64 ? o->iters : 64, n = 0;
    double *ts = malloc(sizeof *ts * (size_t)cap), total = 0;
    double faults0 = page_faults();
    while (ts && n < BENCH_MAX_ITERS && (n < o->iters || total < o->min_time * 1e3)) {
        if (n == cap) {
            double *grown = realloc(ts, sizeof *ts * (size_t)(cap *= 2));
            if (!grown)
                break;
            ts = grown;
        }
        if ((ts[n] = timed_call(f, a, id, r)) < 0) {
            free(ts);
            return -1;
        }
        total += ts[n++];
    }
    if (!ts || n == 0) {
        free(ts);
        return fail(r, "measure", "out of memory");
    }
    t->faults = faults0 >= 0 ? (page_faults() - faults0) / n : NAN;
    t->ms = bench_median(ts, n);
    t->min_ms = ts[0];
    t->iters = n;
    t->done = true;
    free(ts);
    return 0;
}

/* max |x - y| over two f32 results of the same shape; -1 on a mismatch. */
static int max_abs_diff(tj_tensor *x, tj_tensor *y, double tol, double *out, bench_result *r)
{
    char dx[96], dy[96], why[256];
    if (tj_ndim(x) != tj_ndim(y) || tj_numel(x) != tj_numel(y) ||
        memcmp(tj_shape(x), tj_shape(y), sizeof(int64_t) * (size_t)tj_ndim(x))) {
        snprintf(why, sizeof why, "the compiled result is %s, the eager one %s",
                 tj_describe(y, dy, sizeof dy), tj_describe(x, dx, sizeof dx));
        return fail(r, "compare", why);
    }
    tj_scope_begin();
    tj_tensor *cx = tj_contiguous(x), *cy = tj_contiguous(y);
    const float *px = cx ? tj_data(cx) : NULL, *py = cy ? tj_data(cy) : NULL;
    double d = 0, scale = 1;
    for (int64_t k = 0, n = px && py ? tj_numel(cx) : 0; k < n; k++) {
        d = fmax(d, fabs((double)px[k] - py[k]));
        scale = fmax(scale, fabs((double)px[k]));
    }
    int rc = px && py ? 0 : fail(r, "compare", tj_last_error());
    tj_scope_end();
    *out = d;
    if (rc == 0 && !(d <= tol * scale)) {
        snprintf(why, sizeof why, "max |compiled - eager| is %.3g, above %.3g", d, tol * scale);
        return fail(r, "compare", why);
    }
    return rc;
}

/* ---- first calls in fresh processes ---------------------------------------------- */

int bench_first_call_child(const bench_case *c)
{
    if (c->skip) {
        fprintf(stderr, "tjit bench --first-call %s: skipped: %s\n", c->id, c->skip);
        return 1;
    }
    bench_args a = {0};
    tj_scope_begin();
    tj_manual_seed(BENCH_SEED);
    bool ok = c->setup(&a) == 0 && c->run(&a, a.t, a.ninputs);
    tj_scope_end();
    tj_compiled *comp = NULL;
    double t[3] = {0};
    for (int k = 0; k < 2 && ok; k++) {
        tj_scope_begin();
        t[k] = now_ms();
        if (k == 0)
            comp = tj_compile(c->run, &a, &(tj_compile_options){.name = c->name,
                                                                 .quantize_dynamic = bench_int8(c)});
        ok = comp && tj_call(comp, a.t, a.ninputs);
        t[k + 1] = now_ms();
        tj_scope_end();
    }
    if (ok)
        printf("%.4f %.4f\n", t[1] - t[0], t[2] - t[1]);
    else
        fprintf(stderr, "tjit bench --first-call %s: %s\n", c->id, tj_last_error());
    tj_compiled_free(comp);
    c->teardown(&a);
    return ok ? 0 : 1;
}

/* The environment of a child: ours without the cache and dump variables, and
 * TJIT_CACHE_DIR=dir. malloc'd array of borrowed strings but the last. */
static char **child_env(const char *dir)
{
    static const char *const drop[] = {"TJIT_CACHE_DIR=", "TJIT_CACHE=", "TJIT_DUMP=",
                                       "TJIT_DUMP_DIR="};
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc(sizeof *env * (n + 2)), *cache = malloc(strlen(dir) + 16);
    if (!env || !cache) {
        free(env);
        free(cache);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool keep = true;
        for (size_t j = 0; j < sizeof drop / sizeof *drop; j++)
            keep &= strncmp(environ[i], drop[j], strlen(drop[j])) != 0;
        if (keep)
            env[k++] = environ[i];
    }
    sprintf(cache, "TJIT_CACHE_DIR=%s", dir);
    env[k++] = cache;
    env[k] = NULL;
    return env;
}

static void child_env_free(char **env)
{
    if (!env)
        return;
    size_t k = 0;
    while (env[k + 1])
        k++;
    free(env[k]);   /* the TJIT_CACHE_DIR string, always last */
    free(env);
}

/* Runs argv[0] with env, its stdout into out (n bytes, NUL-terminated), and
 * waits for it. Returns 0 with its wait status in *status, or an errno. */
static int run_capture(char *const argv[], char *const env[], char *out, size_t n, int *status)
{
    int fd[2];
    if (pipe(fd))
        return errno;
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int err = posix_spawn_file_actions_init(&fa);
    if (!err) {
        posix_spawn_file_actions_addclose(&fa, fd[0]);
        posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
        posix_spawn_file_actions_addclose(&fa, fd[1]);
        fflush(NULL);
        err = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(fd[1]);
    size_t got = 0;
    while (!err && got + 1 < n) {
        ssize_t m = read(fd[0], out + got, n - 1 - got);
        if (m > 0)
            got += (size_t)m;
        else if (m == 0 || errno != EINTR)
            break;
    }
    out[got] = '\0';
    close(fd[0]);
    while (!err && waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            err = errno;
    return err;
}

/* Runs `<this executable> bench --first-call ID --threads N` with the kernel
 * cache in dir and reads the two times it prints. 0, or -1 with why. */
static int spawn_first_call(const bench_case *c, const char *dir, int threads,
                            bench_first_call *fc, char *why, size_t nwhy)
{
    char exe[4096], nthreads[16], out[128];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        snprintf(why, nwhy, "cannot find this executable: %s", strerror(errno));
        return -1;
    }
    exe[len] = '\0';
    snprintf(nthreads, sizeof nthreads, "%d", threads);
    char *argv[] = {exe, "bench", "--first-call", (char *)c->id, "--threads", nthreads, NULL};
    char **env = child_env(dir);
    int st = 0, err = env ? run_capture(argv, env, out, sizeof out, &st) : ENOMEM;
    child_env_free(env);
    if (err) {
        snprintf(why, nwhy, "cannot run %.300s: %s", exe, strerror(err));
        return -1;
    }
    char *end, *end2;
    double first = strtod(out, &end), second = strtod(end, &end2);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || end == out || end2 == end || !(first >= 0) ||
        !(second >= 0)) {
        snprintf(why, nwhy, "`%.300s bench --first-call %s` failed (wait status %d)", exe, c->id,
                 st);
        return -1;
    }
    *fc = (bench_first_call){first, first - second};
    return 0;
}

/* Removes the cache directory made for the children (flat: files only). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        char path[4096 + 256];
        for (struct dirent *e; (e = readdir(d));)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        closedir(d);
    }
    rmdir(dir);
}

/* A new empty cache directory, a cold and then a warm child on it. */
static int first_call_pair(const bench_case *c, int threads, bench_first_call *cold,
                           bench_first_call *warm, char *why, size_t nwhy)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tjit-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(why, nwhy, "cannot make a directory %.300s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = spawn_first_call(c, dir, threads, cold, why, nwhy);
    if (rc == 0)
        rc = spawn_first_call(c, dir, threads, warm, why, nwhy);
    remove_dir(dir);
    return rc;
}

/* BENCH_FIRST_CALL_RUNS pairs of first calls; the medians are the result. */
static void first_calls(const bench_case *c, bench_result *r, FILE *progress)
{
    double v[4][BENCH_FIRST_CALL_RUNS];
    char why[400];
    for (int k = 0; k < BENCH_FIRST_CALL_RUNS; k++) {
        bench_first_call cold, warm;
        if (first_call_pair(c, r->threads, &cold, &warm, why, sizeof why) != 0) {
            fail(r, "first call", why);
            return;
        }
        v[0][k] = cold.ms, v[1][k] = cold.compile_ms;
        v[2][k] = warm.ms, v[3][k] = warm.compile_ms;
    }
    int n = BENCH_FIRST_CALL_RUNS;
    r->cold = (bench_first_call){bench_median(v[0], n), bench_median(v[1], n)};
    r->warm = (bench_first_call){bench_median(v[2], n), bench_median(v[3], n)};
    if (progress)
        fprintf(progress, "%s %-10s first call in a new process (median of %d): %.1f ms with a "
                          "cold kernel cache (%.1f ms compiling), %.1f ms warm (%.1f ms)\n",
                c->id, c->name, n, r->cold.ms, r->cold.compile_ms, r->warm.ms,
                r->warm.compile_ms);
}

/* ---- the two paths ------------------------------------------------------------------ */

/* A training case's weights as setup made them (snap[k] for a->t[k]), and
 * putting them back (gradients dropped) so each checked call starts alike. */
static void run_eager(const bench_case *c, bench_args *a, const bench_opts *o, FILE *progress,
                      tj_tensor *const *snap, tj_tensor **y, bench_result *r)
{
    callee f = {"eager", c->run, a};
    bench_restore(a, snap);
    if (checked_call(&f, a, &r->eager.first_ms, &r->eager.peak_bytes, y, r) != 0)
        return;
    if (o->save_dir && c->trains && save_updated(o->save_dir, c, a, r) != 0)
        return;
    bench_restore(a, snap);   /* saved as the call saw them */
    if (o->save_dir && save(o->save_dir, c, a, *y, r) != 0)
        return;
    if (progress)
        fprintf(progress, "%s %-10s eager first call %.3f ms; timing\n", c->id, c->name,
                r->eager.first_ms);
    measure(&f, a, o, &r->eager, r);
}

static void run_compiled(const bench_case *c, bench_args *a, const bench_opts *o, FILE *progress,
                         tj_tensor *const *snap, tj_tensor *ye, bench_result *r)
{
    bool int8 = o->int8 || bench_int8(c);
    tj_compiled *comp = tj_compile(c->run, a, &(tj_compile_options){.name = c->name,
                                                                    .freeze = o->freeze,
                                                                    .autotune = o->autotune,
                                                                    .quantize_dynamic = int8});
    if (!comp) {
        fail(r, "tj_compile", tj_last_error());
        return;
    }
    callee f = {"compiled", call_compiled, comp};
    tj_tensor *yc = NULL;
    double ms;
    for (int k = 0; o->dynamic && k < a->ninputs; k++)   /* a batch of any size >= 2 */
        if (tj_ndim(a->t[k]) >= 1 && tj_size(a->t[k], 0) >= 2 && tj_mark_dynamic(a->t[k], 0) != 0) {
            fail(r, "tj_mark_dynamic", tj_last_error());
            tj_compiled_free(comp);
            return;
        }
    bench_restore(a, snap);
    if (checked_call(&f, a, &r->compiled.first_ms, NULL, &yc, r) == 0 &&
        max_abs_diff(ye, yc,
                     int8 ? BENCH_TOLERANCE_INT8
                             : bench_tolerance(c) > 0 ? bench_tolerance(c) : BENCH_TOLERANCE,
                     &r->max_abs_diff, r) == 0 &&
        checked_call(&f, a, &ms, &r->compiled.peak_bytes, NULL, r) == 0) {
        tj_compiled_stats st;
        tj_compiled_stats_get(comp, &st);
        r->graph_breaks = st.breaks;
        r->kernels = st.plan.compiled ? st.plan.kernels : 0;
        r->eager_calls = st.plan.compiled ? st.plan.eager_calls : -1;
        if (progress)
            fprintf(progress, "%s %-10s compiled first call %.3f ms (%d kernel%s, %d eager "
                              "call%s); timing\n", c->id, c->name, r->compiled.first_ms,
                    r->kernels, r->kernels == 1 ? "" : "s", r->eager_calls,
                    r->eager_calls == 1 ? "" : "s");
        measure(&f, a, o, &r->compiled, r);
    }
    tj_release(yc);
    tj_compiled_free(comp);
}

void bench_run(const bench_case *c, const bench_opts *o, FILE *progress, bench_result *r)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->eager.peak_bytes = r->compiled.peak_bytes = -1;
    r->cold = r->warm = (bench_first_call){NAN, NAN};
    r->max_abs_diff = NAN;
    r->kernels = r->eager_calls = -1;
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
    tj_tensor *ye = NULL, *snap[BENCH_MAX_ARGS] = {0}, *const *sp = c->trains ? snap : NULL;
    if (rc != 0)
        fail(r, "setup", tj_last_error());
    else if (c->trains && bench_snapshot(&a, snap) != 0)
        fail(r, "snapshot", tj_last_error());
    else
        run_eager(c, &a, o, progress, sp, &ye, r);
    if (r->status == BENCH_OK && !o->eager_only)
        run_compiled(c, &a, o, progress, sp, ye, r);
    tj_release(ye);
    for (int k = 0; k < BENCH_MAX_ARGS; k++)
        tj_release(snap[k]);
    c->teardown(&a);
    if (r->status == BENCH_OK && !o->eager_only)
        first_calls(c, r, progress);
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

/* A number, or null when unknown (or not finite: JSON has no NaN). */
static void json_num(FILE *f, const char *key, const char *fmt, double v, bool known)
{
    fprintf(f, ", \"%s\": ", key);
    if (known && isfinite(v))
        fprintf(f, fmt, v);
    else
        fprintf(f, "null");
}

static double speedup(const bench_result *r)
{
    return r->eager.done && r->compiled.done && r->compiled.ms > 0 ? r->eager.ms / r->compiled.ms
                                                                   : NAN;
}

static void json_timing(FILE *f, const char *path, const bench_timing *t)
{
    char key[64];
    snprintf(key, sizeof key, "%s_ms", path);
    json_num(f, key, "%.4f", t->ms, t->done);
    snprintf(key, sizeof key, "%s_min_ms", path);
    json_num(f, key, "%.4f", t->min_ms, t->done);
    snprintf(key, sizeof key, "%s_first_ms", path);
    json_num(f, key, "%.4f", t->first_ms, t->done);
}

void bench_print_json(FILE *f, const bench_result *r)
{
    static const char *const status[] = {"ok", "failed", "skipped"};
    fprintf(f, "{\"case\": \"%s\", \"name\": \"%s\", \"system\": \"tjit\", \"status\": \"%s\"",
            r->c->id, r->c->name, status[r->status]);
    fprintf(f, ", \"error\": ");
    if (r->status == BENCH_OK)
        fprintf(f, "null");
    else
        json_string(f, r->error);
    json_timing(f, "eager", &r->eager);
    json_num(f, "iters", "%.0f", r->eager.iters, r->eager.done);
    json_timing(f, "compiled", &r->compiled);
    json_num(f, "compiled_iters", "%.0f", r->compiled.iters, r->compiled.done);
    json_num(f, "speedup", "%.4f", speedup(r), true);
    json_num(f, "first_call_cold_ms", "%.4f", r->cold.ms, true);
    json_num(f, "first_call_warm_ms", "%.4f", r->warm.ms, true);
    json_num(f, "compile_cold_ms", "%.4f", r->cold.compile_ms, true);
    json_num(f, "compile_warm_ms", "%.4f", r->warm.compile_ms, true);
    json_num(f, "kernels", "%.0f", r->kernels, r->kernels >= 0);
    json_num(f, "eager_calls", "%.0f", r->eager_calls, r->eager_calls >= 0);
    json_num(f, "graph_breaks", "%.0f", r->graph_breaks, r->kernels >= 0);
    json_num(f, "peak_bytes", "%.0f", (double)r->eager.peak_bytes, r->eager.peak_bytes >= 0);
    json_num(f, "compiled_peak_bytes", "%.0f", (double)r->compiled.peak_bytes,
             r->compiled.peak_bytes >= 0);
    json_num(f, "eager_faults_per_call", "%.1f", r->eager.faults, r->eager.done);
    json_num(f, "compiled_faults_per_call", "%.1f", r->compiled.faults, r->compiled.done);
    json_num(f, "max_abs_diff", "%.3g", r->max_abs_diff, true);
    fprintf(f, ", \"threads\": %d}\n", r->threads);
}

void bench_print_table_head(FILE *f, int threads)
{
    fprintf(f, "tjit bench: %d thread%s; ms are medians per call; cold/warm: the first compiled "
               "call in a new process with an empty/filled kernel cache (compile: its excess "
               "over the second call); kernels: fused kernels + eager calls per call; flt: page faults per timed call\n",
            threads, threads == 1 ? "" : "s");
    fprintf(f, "%-4s %-10s %9s %9s %7s %8s %9s %8s %9s %7s %8s %8s %9s %9s %9s  %s\n", "case",
            "name", "eager ms", "comp ms", "speedup", "cold ms", "(compile)", "warm ms",
            "(compile)", "kernels", "eager MB", "comp MB", "eager flt", "comp flt", "max diff",
            "status");
}

/* v formatted with fmt, or "-" when unknown. */
static const char *cell(char *buf, size_t n, const char *fmt, double v, bool known)
{
    if (known && isfinite(v))
        snprintf(buf, n, fmt, v);
    else
        snprintf(buf, n, "-");
    return buf;
}

void bench_print_table_row(FILE *f, const bench_result *r)
{
    char b[12][32], kern[32] = "-";
    const bench_timing *e = &r->eager, *c = &r->compiled;
    if (r->kernels >= 0)
        snprintf(kern, sizeof kern, "%d+%d", r->kernels, r->eager_calls);
    fprintf(f, "%-4s %-10s %9s %9s %7s %8s %9s %8s %9s %7s %8s %8s %9s %9s %9s  ", r->c->id,
            r->c->name,
            cell(b[0], 32, "%.3f", e->ms, e->done), cell(b[1], 32, "%.3f", c->ms, c->done),
            cell(b[2], 32, "%.2fx", speedup(r), true), cell(b[3], 32, "%.1f", r->cold.ms, true),
            cell(b[4], 32, "%.1f", r->cold.compile_ms, true),
            cell(b[5], 32, "%.1f", r->warm.ms, true),
            cell(b[6], 32, "%.1f", r->warm.compile_ms, true), kern,
            cell(b[7], 32, "%.1f", e->peak_bytes / 1048576.0, e->peak_bytes >= 0),
            cell(b[8], 32, "%.1f", c->peak_bytes / 1048576.0, c->peak_bytes >= 0),
            cell(b[10], 32, "%.1f", e->faults, e->done), cell(b[11], 32, "%.1f", c->faults, c->done),
            cell(b[9], 32, "%.2e", r->max_abs_diff, true));
    if (r->status == BENCH_OK)
        fprintf(f, "ok\n");
    else
        fprintf(f, "%s: %s\n", r->status == BENCH_SKIPPED ? "skipped" : "FAILED", r->error);
}

void bench_print_summary(FILE *f, const bench_result *rs, int n)
{
    double logsum = 0;
    int m = 0, faster = 0;
    for (int k = 0; k < n; k++) {
        double s = speedup(&rs[k]);
        if (isfinite(s) && s > 0) {
            logsum += log(s);
            m++;
            faster += s > 1;
        }
    }
    if (m)
        fprintf(f, "geometric-mean speedup %.2fx over %d case%s; compiled faster in %d of %d\n",
                exp(logsum / m), m, m == 1 ? "" : "s", faster, m);
    else
        fprintf(f, "no case ran both paths: no speedup to report\n");
}
