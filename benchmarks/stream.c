/* stream.c - the STREAM-triad probe (stream.h): a[i] = b[i] + s*c[i] in float32,
 * split across the runtime pool like an eager pointwise kernel.
 *
 * The arrays come from aligned_alloc, not tjit's allocator, so the probe neither takes
 * nor leaves blocks in the runtime's block cache. They are first touched in
 * parallel with the same split as the timed runs. GB/s are 1e9 bytes per
 * second; see stream.h for the two byte counts. */
#include <stdlib.h>
#include <time.h>

#include <tjit.h>

#include "stream.h"

#define STREAM_GRAIN 32768          /* floats per chunk, at least (tj_parallel_for) */
#define STREAM_TARGET_S 0.4         /* timed seconds when reps is not given */
#define STREAM_MIN_REPS 10
#define STREAM_MAX_REPS 500

typedef struct triad {
    float *a;
    const float *b, *c;
    float s;
} triad;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static void triad_loop(float *restrict a, const float *restrict b, const float *restrict c,
                       float s, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

static void triad_range(void *ctx, int64_t begin, int64_t end)
{
    triad *t = ctx;
    triad_loop(t->a + begin, t->b + begin, t->c + begin, t->s, end - begin);
}

static void init_range(void *ctx, int64_t begin, int64_t end)
{
    triad *t = ctx;
    float *b = (float *)t->b, *c = (float *)t->c;
    for (int64_t i = begin; i < end; i++) {
        t->a[i] = 0.0f;
        b[i] = 1.0f;
        c[i] = 2.0f;
    }
}

/* Seconds of one parallel triad. */
static double timed_triad(triad *t, int64_t n)
{
    double t0 = now_s();
    tj_parallel_for(n, STREAM_GRAIN, triad_range, t);
    return now_s() - t0;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void summarize(double *secs, int reps, int64_t n, bench_stream_result *r)
{
    qsort(secs, (size_t)reps, sizeof *secs, cmp_double);
    double best = secs[0];
    double median = reps % 2 ? secs[reps / 2] : 0.5 * (secs[reps / 2 - 1] + secs[reps / 2]);
    double bytes = (double)n * sizeof(float);
    r->reps = reps;
    r->best_ms = best * 1e3;
    r->median_ms = median * 1e3;
    r->best_gbps = 3 * bytes / best * 1e-9;
    r->median_gbps = 3 * bytes / median * 1e-9;
    r->best_gbps_wa = 4 * bytes / best * 1e-9;
    r->median_gbps_wa = 4 * bytes / median * 1e-9;
}

/* The repetitions to time: as given, or what fits STREAM_TARGET_S. */
static int choose_reps(int reps, double one)
{
    if (reps > 0)
        return reps;
    double fit = STREAM_TARGET_S / (one > 1e-9 ? one : 1e-9);
    return fit < STREAM_MIN_REPS ? STREAM_MIN_REPS : fit > STREAM_MAX_REPS ? STREAM_MAX_REPS : (int)fit;
}

int bench_stream_run(int64_t n, int reps, bench_stream_result *r)
{
    if (n < 1 || (uint64_t)n > ((uint64_t)1 << 40) / sizeof(float))
        return -1;
    size_t bytes = ((size_t)n * sizeof(float) + 63) / 64 * 64;
    float *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes), *c = aligned_alloc(64, bytes);
    double *secs = NULL;
    int rc = -1;
    if (!a || !b || !c)
        goto done;
    triad t = {a, b, c, 3.0f};
    tj_parallel_for(n, STREAM_GRAIN, init_range, &t);
    reps = choose_reps(reps, timed_triad(&t, n));     /* the warm-up */
    if (!(secs = malloc((size_t)reps * sizeof *secs)))
        goto done;
    for (int k = 0; k < reps; k++)
        secs[k] = timed_triad(&t, n);
    if (a[0] != 7.0f || a[n / 2] != 7.0f || a[n - 1] != 7.0f)
        goto done;
    r->n = n;
    r->threads = tj_num_threads();
    summarize(secs, reps, n, r);
    rc = 0;
done:
    free(secs);
    free(a);
    free(b);
    free(c);
    return rc;
}

double bench_stream_gbps(int64_t n)
{
    bench_stream_result r;
    return bench_stream_run(n, 0, &r) ? 0.0 : r.median_gbps;
}
