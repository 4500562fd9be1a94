/* cases_paired.c - two cases of the suite compiled in one process, calls
 * interleaved (issue 18: B4 against P4, A6 against P6 on a busy machine).
 * Each case is set up and compiled as `tjit bench` does (tj_compile, no
 * freeze); after two first calls each, per round one call of each in a
 * turn that alternates, so a change in the machine's load falls on both.
 * Prints the medians of the per-call wall and process CPU ms of each and
 * the median of the per-round ratios B/A. With VAR=VALUE, B's first calls
 * (its trace and plan) run with VAR set: the same case both ways in one
 * process (A4 A4 1 200 TJIT_KEEP_WEIGHT_VALUES=0: kept weight values, on/off).
 *
 *     build/bench/cases_paired [A [B [THREADS [ROUNDS [VAR=VALUE]]]]]   (default P4 B4 1 100)
 *
 * PAIRED_CONV_A and PAIRED_CONV_B, when set, are TJIT_CONV around A's and
 * B's calls ("" unsets it): one case, two conv kernels in one process
 * (cases_paired P6 P6 1 40 with PAIRED_CONV_A=wino: F(2x2) against the
 * rule's F(4x4)). PAIRED_STRASSEN_A and _B likewise set TJIT_STRASSEN
 * (read per call) around A's and B's calls: cases_paired P4 P4 2 200 with
 * PAIRED_STRASSEN_A=0 PAIRED_STRASSEN_B=1 (runtime/gemm_strassen.c);
 * PAIRED_STRASSEN_PACK_A and _B set TJIT_STRASSEN_PACK so, PAIRED_BAND_A and
 * _B TJIT_CONV_BAND (read per call: sched/block.c's bands of a conv region).
 * PAIRED_ENV_A=VAR=VALUE (or _B) sets any variable for A's calls (B's) and
 * unsets it for the other's.
 *
 * Built and run by `make bench-cases-paired` (BENCH_ARGS as above).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench.h"
#include "../suite.h"

enum { MAX_ROUNDS = 4096 };

/* One call of compiled f on a's inputs in its own scope: 0 or -1; the ms in
 * wall and cpu. */
static int call(tj_compiled *f, bench_args *a, double *wall, double *cpu)
{
    double w0 = bench_clock_ms(CLOCK_MONOTONIC), c0 = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    tj_scope_begin();
    tj_tensor *y = tj_call(f, a->t, a->ninputs);
    tj_scope_end();
    *wall = bench_clock_ms(CLOCK_MONOTONIC) - w0;
    *cpu = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    return y ? 0 : -1;
}

/* TJIT_CONV, TJIT_CONV_BAND, TJIT_STRASSEN and TJIT_STRASSEN_PACK for case
 * r's calls, from PAIRED_CONV_A / _B, PAIRED_BAND_A / _B, PAIRED_STRASSEN_A /
 * _B and PAIRED_STRASSEN_PACK_A / _B (unset: as is). */
static void env_for(int r)
{
    static const char *const vars[][3] = {{"PAIRED_CONV_A", "PAIRED_CONV_B", "TJIT_CONV"},
                                          {"PAIRED_BAND_A", "PAIRED_BAND_B", "TJIT_CONV_BAND"},
                                           {"PAIRED_STRASSEN_A", "PAIRED_STRASSEN_B",
                                            "TJIT_STRASSEN"},
                                           {"PAIRED_STRASSEN_PACK_A", "PAIRED_STRASSEN_PACK_B",
                                            "TJIT_STRASSEN_PACK"}};
    for (size_t k = 0; k < sizeof vars / sizeof *vars; k++) {
        const char *v = getenv(vars[k][r]);
        if (v && *v)
            setenv(vars[k][2], v, 1);
        else if (v)
            unsetenv(vars[k][2]);
    }
    /* PAIRED_ENV_A / _B = VAR=VALUE: that variable set for A's calls and
     * unset for B's, or the other way round (any setting read per call) */
    for (int k = 0; k < 2; k++) {
        const char *v = getenv(k ? "PAIRED_ENV_B" : "PAIRED_ENV_A");
        const char *eq = v ? strchr(v, '=') : NULL;
        char var[128];
        if (!eq || eq == v || (size_t)(eq - v) >= sizeof var)
            continue;
        memcpy(var, v, (size_t)(eq - v));
        var[eq - v] = '\0';
        if (k == r)
            setenv(var, eq + 1, 1);
        else
            unsetenv(var);
    }
}

int main(int argc, char **argv)
{
    const char *id[2] = {argc > 1 ? argv[1] : "P4", argc > 2 ? argv[2] : "B4"};
    int threads = argc > 3 ? atoi(argv[3]) : 1, rounds = argc > 4 ? atoi(argv[4]) : 100;
    const char *set = argc > 5 ? argv[5] : NULL, *eq = set ? strchr(set, '=') : NULL;
    char var[128] = "";
    if (eq && eq > set && (size_t)(eq - set) < sizeof var)
        memcpy(var, set, (size_t)(eq - set));
    const bench_case *c[2] = {bench_find(id[0]), bench_find(id[1])};
    if (!c[0] || !c[1] || !c[0]->setup || !c[1]->setup || threads < 1 || rounds < 1 ||
        rounds > MAX_ROUNDS || (set && !var[0])) {
        fprintf(stderr, "usage: cases_paired [A [B [THREADS [ROUNDS<=%d [VAR=VALUE]]]]]\n", MAX_ROUNDS);
        return 2;
    }
    tj_set_num_threads(threads);
    bench_args a[2];
    tj_compiled *f[2] = {NULL, NULL};
    double *wall[2], *cpu[2], *ratio = malloc(sizeof(double) * (size_t)rounds), w, t;
    for (int r = 0; r < 2; r++) {
        memset(&a[r], 0, sizeof a[r]);
        wall[r] = malloc(sizeof(double) * (size_t)rounds);
        cpu[r] = malloc(sizeof(double) * (size_t)rounds);
        env_for(r);
        char *saved = r == 1 && var[0] && getenv(var) ? strdup(getenv(var)) : NULL;
        if (r == 1 && var[0])
            setenv(var, eq + 1, 1);
        bool ok = ratio && wall[r] && cpu[r] && c[r]->setup(&a[r]) == 0 &&
                  (f[r] = tj_compile(c[r]->run, &a[r], &(tj_compile_options){.name = c[r]->name})) &&
                  !call(f[r], &a[r], &w, &t) && !call(f[r], &a[r], &w, &t);
        if (r == 1 && var[0] && saved)
            setenv(var, saved, 1);
        else if (r == 1 && var[0])
            unsetenv(var);
        free(saved);
        if (!ok) {
            fprintf(stderr, "cases_paired: %s: %s\n", c[r]->id, tj_last_error());
            return 1;
        }
    }
    for (int i = 0; i < rounds; i++)
        for (int k = 0; k < 2; k++) {
            int r = (i + k) % 2;
            env_for(r);
            if (call(f[r], &a[r], &wall[r][i], &cpu[r][i]) != 0) {
                fprintf(stderr, "cases_paired: %s round %d: %s\n", c[r]->id, i, tj_last_error());
                return 1;
            }
        }
    printf("A %s, B %s%s%s, %d thread%s, %d rounds\n", c[0]->id, c[1]->id, set ? " with " : "",
           set ? set : "", threads, threads == 1 ? "" : "s", rounds);
    for (int q = 0; q < 2; q++) {
        double **v = q ? cpu : wall, ms[2];
        for (int i = 0; i < rounds; i++)
            ratio[i] = v[1][i] / v[0][i];
        double rq = bench_median(ratio, rounds);
        for (int r = 0; r < 2; r++) {
            memcpy(ratio, v[r], sizeof(double) * (size_t)rounds);
            ms[r] = bench_median(ratio, rounds);
        }
        printf("%-4s ms: A %.3f  B %.3f | median ratio B/A %.3f\n", q ? "cpu" : "wall", ms[0],
               ms[1], rq);
    }
    for (int r = 0; r < 2; r++) {
        tj_compiled_free(f[r]);
        c[r]->teardown(&a[r]);
        free(wall[r]);
        free(cpu[r]);
    }
    free(ratio);
    return 0;
}
