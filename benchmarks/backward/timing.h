/* timing.h - what the backward benchmarks (mlp.c, convblock.c, penalty.c) share: a
 * clock in ms (wall, or the process's CPU time), the median and best of a
 * run of step times, and the flags they all take. Header-only: each
 * benchmark is one translation unit. */
#ifndef TJ_BENCH_BACKWARD_TIMING_H
#define TJ_BENCH_BACKWARD_TIMING_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tjit.h"

static bool cpu_time;   /* --cpu-time: the process's CPU time, every thread */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_ms(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts t[0..n) and gives its median and best. */
static void median_best(double *t, int n, double *med, double *best)
{
    qsort(t, (size_t)n, sizeof *t, cmp_ms);
    *med = t[n / 2];
    *best = t[0];
}

/* Runs step(ctx, i) warm times, then reps more timed (i counting on); the
 * median and best of the timed ones. 0, or -1 (a step failed, or out of
 * memory). */
static int time_steps(int (*step)(void *ctx, int i), void *ctx, int warm, int reps, double *med, double *best)
{
    double *t = malloc(sizeof *t * (size_t)reps);
    if (!t)
        return -1;
    int rc = 0;
    for (int i = 0; i < warm && rc == 0; i++)
        rc = step(ctx, i);
    for (int i = 0; i < reps && rc == 0; i++) {
        double t0 = now_ms();
        rc = step(ctx, warm + i);
        t[i] = now_ms() - t0;
    }
    if (rc == 0)
        median_best(t, reps, med, best);
    free(t);
    return rc;
}

/* Takes argv[*i] (and its value) when it is a flag every benchmark here takes:
 * --threads N, --reps N, --batch B, --cpu-time. Whether it did. */
static bool shared_flag(int argc, char **argv, int *i, int *reps, int *batch)
{
    const char *a = argv[*i];
    bool value = *i + 1 < argc;
    if (!strcmp(a, "--threads") && value)
        tj_set_num_threads(atoi(argv[++*i]));
    else if (!strcmp(a, "--reps") && value)
        *reps = atoi(argv[++*i]);
    else if (!strcmp(a, "--batch") && value)
        *batch = atoi(argv[++*i]);
    else if (!strcmp(a, "--cpu-time"))
        cpu_time = true;
    else
        return false;
    return true;
}

#endif
