/* train_paired.c - a training case (P7 by default) eagerly and compiled two
 * ways in one process, calls interleaved: the measurement behind the plan
 * options for training steps (docs/perf.md, "Inter-op parallelism in the
 * backward"). Each runner has its own copy of the case's weights (the same
 * seed); per round, every runner makes one step in its own scope, in a turn
 * that rotates, so a change in the machine's load falls on all of them. It
 * prints the medians of the per-round wall and process CPU ms of each
 * runner and of the ratios eager/A, eager/B and B/A.
 *
 *   A: compiled with the environment as given
 *   B: compiled with VAR=VALUE set while its plan is built (TJIT_INTEROP=1
 *      by default; the plan options read when a plan is built); +VAR=VALUE:
 *      set during every one of B's calls too (a setting the kernels read
 *      per call, such as TJIT_OWN_F32)
 *
 *     build/bench/train_paired [CASE [THREADS [ROUNDS [VAR=VALUE]]]]
 *
 * Built and run by `make bench-train-paired` (BENCH_ARGS as above).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench.h"
#include "../suite.h"

enum { RUNNERS = 3, MAX_ROUNDS = 4096 };

static double *wall[RUNNERS], *cpu[RUNNERS];

/* One step of runner r (0 eager, 1 and 2 compiled) in its own scope; 0 or -1. */
static int step(const bench_case *c, bench_args *a, tj_compiled *f, int r, int round)
{
    double w0 = bench_clock_ms(CLOCK_MONOTONIC), c0 = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    tj_scope_begin();
    tj_tensor *y = f ? tj_call(f, a->t, a->ninputs) : c->run(a, a->t, a->ninputs);
    tj_scope_end();
    if (round >= 0) {
        wall[r][round] = bench_clock_ms(CLOCK_MONOTONIC) - w0;
        cpu[r][round] = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    return y ? 0 : -1;
}

static void restore(const char *var, const char *saved)
{
    if (saved)
        setenv(var, saved, 1);
    else
        unsetenv(var);
}

int main(int argc, char **argv)
{
    const char *id = argc > 1 ? argv[1] : "P7";
    int threads = argc > 2 ? atoi(argv[2]) : 1, rounds = argc > 3 ? atoi(argv[3]) : 200;
    char var[128];
    snprintf(var, sizeof var, "%s", argc > 4 ? argv[4] : "TJIT_INTEROP=1");
    bool during = var[0] == '+';
    if (during)
        memmove(var, var + 1, strlen(var));
    char *eq = strchr(var, '=');
    const bench_case *c = bench_find(id);
    if (!c || !c->setup || !eq || threads < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: train_paired [CASE [THREADS [ROUNDS<=%d [VAR=VALUE]]]]\n", MAX_ROUNDS);
        return 2;
    }
    *eq = '\0';
    tj_set_num_threads(threads);
    bench_args a[RUNNERS];
    tj_compiled *f[RUNNERS] = {NULL};
    for (int r = 0; r < RUNNERS; r++) {
        memset(&a[r], 0, sizeof a[r]);
        wall[r] = malloc(sizeof(double) * (size_t)rounds);
        cpu[r] = malloc(sizeof(double) * (size_t)rounds);
        if (!wall[r] || !cpu[r] || c->setup(&a[r]) != 0) {
            fprintf(stderr, "train_paired: %s setup: %s\n", c->id, tj_last_error());
            return 1;
        }
        if (r > 0 && !(f[r] = tj_compile(c->run, &a[r], &(tj_compile_options){.name = c->name}))) {
            fprintf(stderr, "train_paired: tj_compile: %s\n", tj_last_error());
            return 1;
        }
    }
    const char *old = getenv(var);
    char *saved = old ? strdup(old) : NULL;
    for (int r = 0; r < RUNNERS; r++) {   /* first calls: plans built, B's with VAR set */
        if (r == 2)
            setenv(var, eq + 1, 1);
        if (step(c, &a[r], f[r], r, -1) != 0 || step(c, &a[r], f[r], r, -1) != 0) {
            fprintf(stderr, "train_paired: runner %d: %s\n", r, tj_last_error());
            return 1;
        }
        if (r == 2)
            restore(var, saved);
    }
    for (int i = 0; i < rounds; i++)
        for (int k = 0; k < RUNNERS; k++) {
            int r = (i + k) % RUNNERS;
            if (r == 2 && during)
                setenv(var, eq + 1, 1);
            int rc = step(c, &a[r], f[r], r, i);
            if (r == 2 && during)
                restore(var, saved);
            if (rc != 0) {
                fprintf(stderr, "train_paired: runner %d round %d: %s\n", r, i, tj_last_error());
                return 1;
            }
        }
    double *ratio = malloc(sizeof(double) * (size_t)rounds);
    if (!ratio)
        return 1;
    printf("%s, %d thread%s, %d rounds; A: compiled, B: compiled with %s=%s%s\n", c->id, threads,
           threads == 1 ? "" : "s", rounds, var, eq + 1, during ? " (in its calls too)" : "");
    const char *clk[2] = {"wall", "cpu"};
    for (int t = 0; t < 2; t++) {
        double **v = t ? cpu : wall;
        const int num[3] = {0, 0, 2}, den[3] = {1, 2, 1};
        double rq[3];
        for (int q = 0; q < 3; q++) {
            for (int i = 0; i < rounds; i++)
                ratio[i] = v[num[q]][i] / v[den[q]][i];
            rq[q] = bench_median(ratio, rounds);
        }
        double ms[RUNNERS];
        for (int r = 0; r < RUNNERS; r++) {
            memcpy(ratio, v[r], sizeof(double) * (size_t)rounds);
            ms[r] = bench_median(ratio, rounds);
        }
        printf("%-4s ms: eager %.3f  A %.3f  B %.3f | median ratios: eager/A %.3fx  eager/B %.3fx  B/A %.3fx\n",
               clk[t], ms[0], ms[1], ms[2], rq[0], rq[1], rq[2]);
    }
    for (int r = 0; r < RUNNERS; r++) {
        tj_compiled_free(f[r]);
        c->teardown(&a[r]);
        free(wall[r]);
        free(cpu[r]);
    }
    free(ratio);
    free(saved);
    return 0;
}
