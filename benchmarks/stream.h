/* stream.h - a STREAM-triad bandwidth probe (benchmarks/stream.c): how fast
 * this machine moves float32 arrays through the runtime's thread pool, the
 * bound of memory-bound kernels such as the suite's P1. `tjit stream` prints it. */
#ifndef TJ_BENCH_STREAM_H
#define TJ_BENCH_STREAM_H

#include <stdint.h>

typedef struct bench_stream_result {
    int64_t n;              /* floats per array */
    int threads;            /* tj_num_threads() during the run */
    int reps;               /* timed repetitions */
    double median_ms, best_ms;
    /* Bytes per element: 12 (read b and c, write a: STREAM's count), or 16
     * counting the read of a that a write-allocate cache makes. */
    double median_gbps, best_gbps;          /* 12 bytes per element */
    double median_gbps_wa, best_gbps_wa;    /* 16 bytes per element */
} bench_stream_result;

/* Runs a[i] = b[i] + s*c[i] over n floats with tj_parallel_for: first touch in
 * parallel, one warm-up, then `reps` timed runs (reps <= 0: as many as fit in
 * about 0.4 s, 10 to 500). Returns 0, or -1 when n < 1 or memory runs out. */
int bench_stream_run(int64_t n, int reps, bench_stream_result *r);

/* The median triad bandwidth over n floats, GB/s counting 3 arrays (12 bytes
 * per element); 0 when the run failed. */
double bench_stream_gbps(int64_t n);

#endif
