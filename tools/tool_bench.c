/* tool_bench.c - `tjit bench`: runs the benchmark suite (benchmarks/suite.c)
 * eagerly and compiled and prints a table, or one JSON object per case; with
 * the internal --first-call CASE, the child process that times a first
 * compiled call (benchmarks/bench.c starts it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchmarks/bench.h"
#include "tool.h"

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: tjit bench [CASE...] [--json] [--threads N] [--iters N] [--min-time SEC]\n"
            "                  [--eager] [--cpu-time] [--save DIR] [--profile[=TRACE.json]] [--list]\n"
            "                  [--freeze] [--autotune] [--int8] [--dynamic]\n"
            "                  [--help]\n"
            "  Runs the cases of the benchmark suite (default: all) eagerly and compiled\n"
            "  (tj_compile + tj_call) and prints per case: the median ms per iteration of\n"
            "  both (steady state, after a warm-up) and the speedup; the first compiled call\n"
            "  (trace + compile + run) in a new process with an empty kernel cache (cold ms)\n"
            "  and in another on the same cache directory (warm ms); kernels per call\n"
            "  (fused kernels + eager calls); peak memory of each path (resident-set growth\n"
            "  during one call: eager's first, compiled's first after compiling); the max\n"
            "  abs difference compiled vs eager (a case fails above 1e-4 x max(1, |eager|));\n"
            "  threads. A closing line gives the geometric-mean speedup.\n"
            "  CASE      an id (P1) or a name (softmax); --list shows them\n"
            "  --json    one JSON object per case and line (fields of shared/bench/SUITE.md,\n"
            "            null when unknown); the closing line goes to stderr\n"
            "  --threads N   runtime and BLAS threads (default: TJIT_NUM_THREADS or the cores)\n"
            "  --iters N     timed iterations; without --min-time, exactly N (quick runs)\n"
            "  --min-time S  time at least S seconds per path (default: 1 s, at least 10 iters)\n"
            "  --eager       the eager path only (no tj_compile, no first-call processes)\n"
            "  --cpu-time    steady-state ms are the process's CPU time (every thread, spinning\n"
            "                included): with --threads 1, the work a call does whatever\n"
            "                else the machine runs; first-call ms stay wall-clock\n"
            "  --freeze      compile with tj_compile_options.freeze (GEMM weights packed once)\n"
            "  --autotune    compile with .autotune (implies freeze: GEMM choice timed per weight)\n"
            "  --int8        compile with .quantize_dynamic (int8 GEMMs on the weights; the\n"
            "                compare tolerance becomes 5e-2 x max(1, |eager|))\n"
            "  --dynamic     mark dim 0 of the compiled path's inputs dynamic (one symbolic\n"
            "                graph for every batch size: what symbolic dims cost; the\n"
            "                first-call processes stay static)\n"
            "  --save DIR    write each case's inputs, weights and first eager result as\n"
            "                .npy (<id>.arg<k>.npy, <id>.out.npy) for benchmarks/pytorch/suite.py\n"
            "  --profile[=TRACE.json]  profile the timed runs of this process (eager ops\n"
            "                and compiled kernels; the timings include the profiler's cost):\n"
            "                the table on stderr, the chrome trace in TRACE.json (docs/perf.md)\n"
            "  --first-call CASE  internal: what the first-call processes run (set up CASE,\n"
            "                time tj_compile and the first tj_call, print the ms on stdout)\n"
            "Progress goes to stderr. Exit 0 when every case ran or was skipped, 1 when one\n"
            "failed, 2 on bad arguments.\n");
}

/* A positive int from a flag's value, or -1. */
static int parse_count(const char *s)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : -1;
    if (!s || errno || end == s || *end || v < 1 || v > 1000000)
        return -1;
    return (int)v;
}

static double parse_seconds(const char *s)
{
    char *end;
    double v = s ? strtod(s, &end) : -1;
    if (!s || end == s || *end || !(v >= 0 && v <= 3600))
        return -1;
    return v;
}

static int bad(const char *what, const char *arg)
{
    fprintf(stderr, "tjit bench: %s '%s' (try tjit bench --help)\n", what, arg ? arg : "(none)");
    return 2;
}

static void list_cases(void)
{
    for (int k = 0; k < bench_ncases; k++) {
        const bench_case *c = &bench_cases[k];
        printf("%-3s %-10s %s", c->id, c->name, c->work);
        if (c->skip)
            printf("  [skipped: %s]", c->skip);
        printf("\n");
    }
}

#define BENCH_MAX_CHOSEN 64

typedef struct bench_cli {
    bool json;
    const bench_case *first_call;   /* --first-call CASE: the child mode */
    int threads;
    bench_opts opts;
    int ncases;
    const bench_case *cases[BENCH_MAX_CHOSEN];
    bool profile;
    const char *trace;
} bench_cli;

/* Fills cli from argv; returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, bench_cli *cli)
{
    bool iters_set = false, time_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bench_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--list")) {
            list_cases();
            return 0;
        } else if (!strcmp(a, "--json"))
            cli->json = true;
        else if (!strcmp(a, "--eager"))
            cli->opts.eager_only = true;
        else if (!strcmp(a, "--cpu-time"))
            cli->opts.cpu_time = true;
        else if (!strcmp(a, "--freeze"))
            cli->opts.freeze = true;
        else if (!strcmp(a, "--autotune"))
            cli->opts.autotune = true;
        else if (!strcmp(a, "--int8"))
            cli->opts.int8 = true;
        else if (!strcmp(a, "--dynamic"))
            cli->opts.dynamic = true;
        else if (tool_profile_flag(a, &cli->trace))
            cli->profile = true;
        else if (!strcmp(a, "--first-call")) {
            if (!v || !(cli->first_call = bench_find(v)))
                return bad("--first-call needs a case, not", v);
            i++;
        }
        else if (!strcmp(a, "--threads")) {
            if ((cli->threads = parse_count(v)) < 0)
                return bad("--threads needs a positive count, not", v);
            i++;
        } else if (!strcmp(a, "--iters")) {
            if ((cli->opts.iters = parse_count(v)) < 0)
                return bad("--iters needs a positive count, not", v);
            iters_set = true, i++;
        } else if (!strcmp(a, "--min-time")) {
            if ((cli->opts.min_time = parse_seconds(v)) < 0)
                return bad("--min-time needs seconds in [0, 3600], not", v);
            time_set = true, i++;
        } else if (!strcmp(a, "--save")) {
            if (!v)
                return bad("--save needs a directory, not", v);
            cli->opts.save_dir = v, i++;
        } else if (a[0] == '-')
            return bad("unknown flag", a);
        else if (!bench_find(a)) {
            fprintf(stderr, "tjit bench: unknown case '%s' (cases: P1..P%d or their names; "
                            "tjit bench --list)\n", a, bench_ncases);
            return 2;
        } else if (cli->ncases < BENCH_MAX_CHOSEN)
            cli->cases[cli->ncases++] = bench_find(a);
    }
    if (iters_set && !time_set)
        cli->opts.min_time = 0;
    return -1;
}

int tool_bench(int argc, char **argv)
{
    bench_cli cli = {.opts = {.iters = 10, .min_time = 1.0}};
    int rc = parse(argc, argv, &cli);
    if (rc >= 0)
        return rc;
    if (cli.threads > 0)
        tj_set_num_threads(cli.threads);
    if (cli.first_call)
        return bench_first_call_child(cli.first_call);
    if (cli.ncases == 0)
        for (int k = 0; k < bench_ncases && k < BENCH_MAX_CHOSEN; k++)
            cli.cases[cli.ncases++] = &bench_cases[k];
    bench_result *rs = calloc((size_t)cli.ncases, sizeof *rs);
    if (!rs) {
        fprintf(stderr, "tjit bench: out of memory\n");
        return 1;
    }
    if (!cli.json) {
        bench_print_table_head(stdout, tj_num_threads());
        fflush(stdout);
    }
    bool failed = false;
    if (cli.profile)
        tj_profile_begin();
    for (int k = 0; k < cli.ncases; k++) {
        bench_run(cli.cases[k], &cli.opts, stderr, &rs[k]);
        failed |= rs[k].status == BENCH_FAILED;
        if (cli.json)
            bench_print_json(stdout, &rs[k]);
        else
            bench_print_table_row(stdout, &rs[k]);
        fflush(stdout);
    }
    if (!cli.opts.eager_only)
        bench_print_summary(cli.json ? stderr : stdout, rs, cli.ncases);
    if (cli.profile && tool_profile_report("tjit bench", cli.trace) != 0)
        failed = true;
    free(rs);
    return failed ? 1 : 0;
}
