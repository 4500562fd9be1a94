/* tool_stream.c - `tjit stream`: the STREAM-triad bandwidth probe
 * (benchmarks/stream.c), a table of median and best GB/s per array size. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchmarks/stream.h"
#include "tool.h"

#define STREAM_MAX_SIZES 16

static void stream_usage(FILE *f)
{
    fprintf(f,
            "usage: tjit stream [--n N]... [--threads N] [--reps N] [--help]\n"
            "  Times the STREAM triad a[i] = b[i] + s*c[i] on float32 arrays, split across\n"
            "  the runtime's thread pool, and prints median and best time and bandwidth.\n"
            "  GB/s (1e9 B/s) count 3 arrays moved per element (12 B: read b, c, write a),\n"
            "  as STREAM does; the 'wa' columns count 4 (16 B: the write-allocate read of a).\n"
            "  --n N        floats per array; K and M suffixes are 2^10 and 2^20; repeatable\n"
            "               (default: 4M, 16 MiB arrays as the suite's P1, and 64M, DRAM)\n"
            "  --threads N  runtime threads (default: TJIT_NUM_THREADS or the cores)\n"
            "  --reps N     timed repetitions (default: about 0.4 s worth, 10 to 500)\n");
}

/* A count with an optional K/M/G suffix (powers of 2), or -1. */
static int64_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : -1;
    if (!s || errno || end == s || v < 1)
        return -1;
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (*end || v > (1LL << 36) >> shift)
        return -1;
    return (int64_t)v << shift;
}

static int stream_bad(const char *what, const char *arg)
{
    fprintf(stderr, "tjit stream: %s '%s' (try tjit stream --help)\n", what, arg ? arg : "(none)");
    return 2;
}

static void print_row(const bench_stream_result *r)
{
    printf("%11lld %9.1f %7d %4d %9.3f %9.3f %8.1f %8.1f %8.1f %8.1f\n", (long long)r->n,
           (double)r->n * sizeof(float) / (1 << 20), r->threads, r->reps, r->median_ms,
           r->best_ms, r->median_gbps, r->best_gbps, r->median_gbps_wa, r->best_gbps_wa);
}

int tool_stream(int argc, char **argv)
{
    int64_t sizes[STREAM_MAX_SIZES];
    int nsizes = 0, reps = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            stream_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--n")) {
            if ((x = parse_size(v)) < 0 || nsizes == STREAM_MAX_SIZES)
                return stream_bad("--n needs a positive count (up to 64G floats), not", v);
            sizes[nsizes++] = x, i++;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "--reps")) {
            if ((x = parse_size(v)) < 0 || x > 100000)
                return stream_bad("a positive count up to 100000 is needed, not", v);
            if (a[2] == 't')
                tj_set_num_threads((int)x);
            else
                reps = (int)x;
            i++;
        } else
            return stream_bad("unknown argument", a);
    }
    if (!nsizes) {
        sizes[nsizes++] = (int64_t)4 << 20;
        sizes[nsizes++] = (int64_t)64 << 20;
    }
    printf("STREAM triad a[i] = b[i] + s*c[i], float32; GB/s: 3 arrays (12 B/element), "
           "wa: 4 arrays (write-allocate)\n");
    printf("%11s %9s %7s %4s %9s %9s %8s %8s %8s %8s\n", "n", "MiB/array", "threads", "reps",
           "median_ms", "best_ms", "med_GB/s", "best", "med_wa", "best_wa");
    int rc = 0;
    for (int k = 0; k < nsizes; k++) {
        bench_stream_result r;
        if (bench_stream_run(sizes[k], reps, &r)) {
            fprintf(stderr, "tjit stream: n=%lld: out of memory (3 arrays of %.0f MiB)\n",
                    (long long)sizes[k], (double)sizes[k] * sizeof(float) / (1 << 20));
            rc = 1;
            continue;
        }
        print_row(&r);
        fflush(stdout);
    }
    return rc;
}
