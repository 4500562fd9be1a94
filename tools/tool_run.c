/* tool_run.c - `tjit run FILE.tir`: runs a text graph on .npy inputs (or
 * random ones) and prints or saves its outputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"

#define MAX_IN 256

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tjit run FILE.tir|MODEL.onnx [--in A.npy ...] [--out DIR] [--dump-ir=STAGES]\n"
            "               [--eager] [--seed N] [--profile[=TRACE.json]] [--repeat N]\n"
            "  Runs the graph in FILE (text IR, or an ONNX model: docs/onnx.md; for a model\n"
            "  the inputs are its graph inputs, its initializers are its weights).\n"
            "  Inputs (params included) come from the --in files in\n"
            "  the graph's input order, each of its input's type (checked); without --in they\n"
            "  are random (normal floats, integers in 0..9, random bools) from --seed\n"
            "  (default 0). Outputs are saved as\n"
            "  DIR/out0.npy ... with --out, else summarized on stdout.\n"
            "  --dump-ir=STAGES print compile stages (names, all, or a level 1..5; docs/cli.md)\n"
            "  --eager          run the graph as parsed, node by node with the eager kernels\n"
            "                   (default: compiled: fused kernels and eager calls, or the\n"
            "                   graph executor when TJIT_BACKEND=eager)\n"
            "  --repeat N       (ONNX models) after one warm-up call, N timed calls: prints\n"
            "                   the median and minimum ms per call\n"
            "  --profile[=TRACE.json]  time every kernel launch and eager op of the run:\n"
            "                   the table (calls, ms, bytes, GB/s, GFLOP/s) on stderr, the\n"
            "                   chrome trace in TRACE.json (docs/perf.md)\n");
}

static tj_tensor *random_input(const tj_graph *g, int k)
{
    tj_graph_input in;
    if (tj_graph_input_info(g, k, &in) != 0)
        return NULL;
    if (in.symbolic) {
        fprintf(stderr, "tjit run: input %%%s has type %s with symbolic dims: give it with --in\n",
                in.name, in.type);
        return NULL;
    }
    if (tj_dtype_is_float(in.dtype))
        return tj_randn(in.dtype, in.ndim, in.shape);
    tj_tensor *u = tj_rand(TJ_F32, in.ndim, in.shape);
    if (in.dtype == TJ_BOOL)
        return tj_lt_s(u, 0.5);
    return tj_cast(tj_floor(tj_mul_s(u, 10)), in.dtype);
}

static void summarize(int k, tj_tensor *t)
{
    char b[128];
    int64_t n = tj_numel(t);
    printf("out%d: %s", k, tj_describe(t, b, sizeof b));
    if (n > 0) {
        tj_tensor *f = tj_cast(t, TJ_F64);
        double mean = tj_item(tj_mean(f, NULL, 0, false));
        double lo = tj_item(tj_amin(f, NULL, 0, false)), hi = tj_item(tj_amax(f, NULL, 0, false));
        printf("  mean %.6g  min %.6g  max %.6g", mean, lo, hi);
    }
    printf("\n");
}

static int save_outputs(const char *dir, tj_tensor **outs, int n)
{
    for (int k = 0; k < n; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/out%d.npy", dir, k);
        if (tj_save_npy(outs[k], path) != 0) {
            fprintf(stderr, "tjit run: %s\n", tj_last_error());
            return 1;
        }
        printf("wrote %s\n", path);
    }
    return 0;
}

/* profile: time the run (not making inputs or summing outputs); trace: where its trace goes. */
static int run(const tj_graph *g, const char **in_files, int nin, const char *out_dir, bool eager,
               bool profile, const char *trace)
{
    int ninputs = tj_graph_num_inputs(g), noutputs = tj_graph_num_outputs(g);
    if (nin && nin != ninputs) {
        fprintf(stderr, "tjit run: the graph has %d inputs, %d --in files given\n", ninputs, nin);
        return 1;
    }
    tj_tensor *inputs[MAX_IN], *outs[64];
    if (ninputs > MAX_IN || noutputs > 64) {
        fprintf(stderr, "tjit run: at most %d inputs and 64 outputs\n", MAX_IN);
        return 1;
    }
    for (int k = 0; k < ninputs; k++) {
        inputs[k] = nin ? tj_load_npy(in_files[k]) : random_input(g, k);
        if (!inputs[k]) {
            if (tj_last_error()[0])
                fprintf(stderr, "tjit run: %s\n", tj_last_error());
            return 1;
        }
    }
    if (profile)
        tj_profile_begin();
    int rc = tj_graph_run(g, inputs, outs, eager);
    if (rc != 0)
        fprintf(stderr, "tjit run: %s\n", tj_last_error());
    if (profile && tool_profile_report("tjit run", trace) != 0)
        rc = -1;
    if (rc != 0)
        return 1;
    if (out_dir)
        return save_outputs(out_dir, outs, noutputs);
    for (int k = 0; k < noutputs; k++)
        summarize(k, outs[k]);
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One call of the model: compiled when c, else eager; n outputs or -1. */
static int call_onnx(tj_onnx *m, tj_compiled *c, tj_tensor **in, int nin, tj_tensor **outs)
{
    return c ? tj_call_multi(c, in, nin, outs, 64) : tj_onnx_run(m, in, nin, outs, 64);
}

/* repeat timed calls after a warm-up: median and minimum on stdout. */
static int time_onnx(tj_onnx *m, tj_compiled *c, tj_tensor **in, int nin, int repeat)
{
    double *t = malloc((size_t)repeat * sizeof *t);
    tj_tensor *outs[64];
    int rc = t ? 0 : -1;
    for (int k = -1; k < repeat && rc == 0; k++) {
        tj_scope_begin();
        double t0 = now_ms();
        rc = call_onnx(m, c, in, nin, outs) < 0 ? -1 : 0;
        if (k >= 0)
            t[k] = now_ms() - t0;
        tj_scope_end();
    }
    if (rc == 0) {
        qsort(t, (size_t)repeat, sizeof *t, cmp_double);
        printf("%s: median %.3f ms, min %.3f ms over %d calls\n", c ? "compiled" : "eager",
               t[repeat / 2], t[0], repeat);
    } else {
        fprintf(stderr, "tjit run: %s\n", t ? tj_last_error() : "out of memory");
    }
    free(t);
    return rc;
}

/* An ONNX model: eager (tj_onnx_run) or compiled (tj_compile_multi). */
static int run_onnx(const char *file, const char **in_files, int nin, const char *out_dir, bool eager,
                    bool profile, const char *trace, int repeat)
{
    tj_onnx *m = tj_onnx_load(file);
    if (!m) {
        fprintf(stderr, "tjit run: %s\n", tj_last_error());
        return 1;
    }
    int ninputs = tj_onnx_num_inputs(m), rc = 1;
    tj_tensor *inputs[MAX_IN], *outs[64];
    tj_compiled *c = NULL;
    if (nin != ninputs || ninputs > MAX_IN) {
        fprintf(stderr, "tjit run: %s takes %d inputs (%s...), %d --in files given\n", file, ninputs,
                ninputs ? tj_onnx_input_name(m, 0) : "", nin);
        goto out;
    }
    for (int k = 0; k < ninputs; k++)
        if (!(inputs[k] = tj_load_npy(in_files[k]))) {
            fprintf(stderr, "tjit run: %s\n", tj_last_error());
            goto out;
        }
    if (!eager && !(c = tj_compile_multi(tj_onnx_run, m, &(tj_compile_options){.name = "onnx"}))) {
        fprintf(stderr, "tjit run: %s\n", tj_last_error());
        goto out;
    }
    if (repeat > 0) {
        rc = time_onnx(m, c, inputs, ninputs, repeat) == 0 ? 0 : 1;
        goto out;
    }
    if (profile)
        tj_profile_begin();
    int n = call_onnx(m, c, inputs, ninputs, outs);
    if (n < 0)
        fprintf(stderr, "tjit run: %s\n", tj_last_error());
    if (profile && tool_profile_report("tjit run", trace) != 0)
        n = -1;
    if (n < 0)
        goto out;
    rc = 0;
    if (out_dir)
        rc = save_outputs(out_dir, outs, n);
    else
        for (int k = 0; k < n; k++)
            summarize(k, outs[k]);
out:
    tj_compiled_free(c);
    tj_onnx_free(m);
    return rc;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

int tool_run(int argc, char **argv)
{
    const char *file = NULL, *out_dir = NULL, *dump = NULL, *v, *trace = NULL;
    bool profile = false;
    const char *in_files[MAX_IN];
    int nin = 0;
    bool eager = false;
    uint64_t seed = 0;
    int repeat = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--in") || !strcmp(argv[i], "--out") ||
                   !strcmp(argv[i], "--seed") || !strcmp(argv[i], "--repeat")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tjit run: %s needs a value\n", argv[i]);
                return 2;
            }
            const char *flag = argv[i++];
            if (!strcmp(flag, "--out"))
                out_dir = argv[i];
            else if (!strcmp(flag, "--seed"))
                seed = strtoull(argv[i], NULL, 10);
            else if (!strcmp(flag, "--repeat"))
                repeat = atoi(argv[i]);
            else if (nin < MAX_IN)
                in_files[nin++] = argv[i];
        } else if (tool_flag(argv[i], "--dump-ir", &v)) {
            dump = v;
        } else if (!strcmp(argv[i], "--eager")) {
            eager = true;
        } else if (tool_profile_flag(argv[i], &v)) {
            profile = true;
            trace = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "tjit run: unknown flag '%s' (tjit run --help)\n", argv[i]);
            return 2;
        } else if (file) {
            fprintf(stderr, "tjit run: one graph file only ('%s' and '%s')\n", file, argv[i]);
            return 2;
        } else {
            file = argv[i];
        }
    }
    if (!file) {
        fprintf(stderr, "tjit run: no graph file (tjit run --help)\n");
        return 2;
    }
    if (dump && tj_dump_check(dump) != 0) {
        fprintf(stderr, "tjit run: --dump-ir: %s\n", tj_last_error());
        return 2;
    }
    if (ends_with(file, ".onnx")) {
        if (dump)
            setenv("TJIT_DUMP", dump, 1);
        tj_manual_seed(seed);
        tj_scope_begin();
        int rc = run_onnx(file, in_files, nin, out_dir, eager, profile, trace, repeat);
        tj_scope_end();
        return rc;
    }
    tj_graph *g = tool_parse_file(file);
    if (!g)
        return 1;
    if (!eager && tj_graph_run_passes(g, "dce", NULL) != 0) {
        fprintf(stderr, "tjit run: %s\n", tj_last_error());
        tj_graph_free(g);
        return 1;
    }
    tj_graph_dump(g, dump);   /* the graph stage, when --dump-ir (or $TJIT_DUMP) asks for it */
    if (dump)
        setenv("TJIT_DUMP", dump, 1);   /* the later stages are dumped by the plan */
    tj_manual_seed(seed);
    tj_scope_begin();
    int rc = run(g, in_files, nin, out_dir, eager, profile, trace);
    tj_scope_end();
    tj_graph_free(g);
    return rc;
}
