/* bench.h - the runner of the benchmark suite (benchmarks/bench.c): times a
 * case on the eager path and compiled (tj_compile + tj_call), measures the
 * first compiled call in fresh processes with a cold and a warm kernel cache,
 * and prints results as a table or as JSON lines (the fields of
 * shared/bench/SUITE.md).
 */
#ifndef TJ_BENCH_H
#define TJ_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "suite.h"

typedef struct bench_opts {
    int iters;              /* timed iterations, at least */
    double min_time;        /* seconds of timed iterations, at least */
    const char *save_dir;   /* non-NULL: write <id>.arg<k>.npy and <id>.out.npy there */
    bool eager_only;        /* skip the compiled path */
    bool cpu_time;          /* time the steady state by the process's CPU time (all
                               threads: on a loaded machine, with --threads 1, the
                               work done rather than the wait for a core) */
    /* the compiled path's GEMM options (tj_compile_options): weights frozen
     * (packed once), autotuned, or int8 (quantize_dynamic; its compare
     * tolerance is BENCH_TOLERANCE_INT8) */
    bool freeze, autotune, int8;
    bool dynamic;           /* the compiled path's inputs have dim 0 marked dynamic
                               (tj_mark_dynamic): one symbolic graph for every batch */
} bench_opts;

typedef enum { BENCH_OK, BENCH_FAILED, BENCH_SKIPPED } bench_status;

/* Timings of one path (eager or compiled). */
typedef struct bench_timing {
    bool done;              /* measured */
    double ms;              /* median per iteration, steady state */
    double min_ms;
    double first_ms;        /* the first call in this process */
    int iters;
    int64_t peak_bytes;     /* resident-set growth during one call; -1 unknown */
    double faults;          /* page faults (minor + major, getrusage) per timed call;
                             * NAN unknown */
} bench_timing;

/* A first call in a new process that has set the case up and run it eagerly
 * once (so its allocator, thread pools and BLAS are warm, as in `tjit bench`
 * itself). */
typedef struct bench_first_call {
    double ms;              /* tj_compile and the first tj_call */
    double compile_ms;      /* ms minus the second call's: what compiling added */
} bench_first_call;

typedef struct bench_result {
    const bench_case *c;
    bench_status status;
    char error[512];        /* why it failed or was skipped */
    int threads;
    bench_timing eager;     /* peak: during the first call */
    bench_timing compiled;  /* peak: during the first call after compiling */
    /* The first compiled call (tj_compile + trace + compile + run) in a new
     * process with an empty kernel cache directory (cold), then in another on
     * the same directory (warm); medians of 3 such pairs. NAN when unknown. */
    bench_first_call cold, warm;
    int kernels, eager_calls;   /* per compiled call; -1 unknown */
    int graph_breaks;
    double max_abs_diff;        /* |compiled - eager|; NAN unknown */
} bench_result;

/* Sets up, checks, times and tears down one case. Never aborts: a failing op
 * gives status BENCH_FAILED and its message. Progress goes to `progress`
 * (NULL: quiet). */
void bench_run(const bench_case *c, const bench_opts *o, FILE *progress, bench_result *r);

/* The child side of the first-call measurement (`tjit bench --first-call
 * CASE` runs it): sets the case up, calls it eagerly once, then times
 * tj_compile with the first tj_call, and a second tj_call, and prints both ms
 * on one line of stdout. Returns the exit code. */
int bench_first_call_child(const bench_case *c);

/* ms on clock id (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, ...). */
double bench_clock_ms(clockid_t id);
/* Sorts v[0..n) (n >= 1) and returns its median. */
double bench_median(double *v, int n);

/* One JSON object on one line, with the fields SUITE.md lists. */
void bench_print_json(FILE *f, const bench_result *r);
void bench_print_table_head(FILE *f, int threads);
void bench_print_table_row(FILE *f, const bench_result *r);
/* The closing line: geometric-mean speedup and how many cases compiled faster. */
void bench_print_summary(FILE *f, const bench_result *rs, int n);

#endif
