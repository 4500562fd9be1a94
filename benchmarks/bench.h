/* bench.h - the runner of the benchmark suite (benchmarks/bench.c): times a
 * case on the eager path and prints results as a table or as JSON lines.
 *
 * The result record already has the fields of a compiled run (SUITE.md:
 * compiled_ms, speedup, first-call times, kernels, max_abs_diff); they print
 * as null until tj_compile exists and the runner fills them.
 */
#ifndef TJ_BENCH_H
#define TJ_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "suite.h"

typedef struct bench_opts {
    int iters;              /* timed iterations, at least */
    double min_time;        /* seconds of timed iterations, at least */
    const char *save_dir;   /* non-NULL: write <id>.arg<k>.npy and <id>.out.npy there */
} bench_opts;

typedef enum { BENCH_OK, BENCH_FAILED, BENCH_SKIPPED } bench_status;

typedef struct bench_result {
    const bench_case *c;
    bench_status status;
    char error[512];        /* why it failed or was skipped */
    double eager_ms;        /* median per iteration, steady state */
    double eager_min_ms;
    double eager_first_ms;  /* the first call (cold allocator and caches) */
    int iters;
    int threads;
    int64_t peak_bytes;     /* resident-set growth during one call; -1 unknown */
} bench_result;

/* Sets up, checks, times and tears down one case. Never aborts: a failing op
 * gives status BENCH_FAILED and its message. Progress goes to `progress`
 * (NULL: quiet). */
void bench_run(const bench_case *c, const bench_opts *o, FILE *progress, bench_result *r);

/* One JSON object on one line, with the fields SUITE.md lists. */
void bench_print_json(FILE *f, const bench_result *r);
void bench_print_table_head(FILE *f);
void bench_print_table_row(FILE *f, const bench_result *r);

#endif
