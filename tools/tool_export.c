/* tool_export.c - `tjit export CASE|MODEL.onnx -o model.so`: compiles a suite
 * case (benchmarks/suite.c) or an ONNX model at its inputs, calls it once and
 * exports it (tj_export, docs/export.md); --save-io DIR writes the inputs and
 * the compiled call's outputs as .npy (what a loader's results are checked
 * against). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../benchmarks/suite.h"
#include "tool.h"

#define MAX_IO 64

static void usage(FILE *f)
{
    fprintf(f, "usage: tjit export CASE|MODEL.onnx -o OUT.so [--in A.npy ...] [--name NAME]\n"
               "                   [--no-weights] [--save-io DIR]\n"
               "  Compiles the suite case CASE (P4, ...; its inputs) or the ONNX model (its\n"
               "  inputs from the --in files), calls it once and writes OUT.so (kernels, plan,\n"
               "  weights) and OUT.h (the typed entry point NAME_run; docs/export.md).\n"
               "  --name NAME    C identifier of the entry points (default: the case id, or model)\n"
               "  --no-weights   leave the weights out: they become trailing arguments\n"
               "  --save-io DIR  DIR/in0.npy ... (the arguments)\n"
               "                 and DIR/out0.npy ... (the compiled call's results)\n");
}

static int save_all(const char *dir, const char *what, tj_tensor *const *t, int n)
{
    for (int k = 0; k < n; k++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s%d.npy", dir, what, k);
        if (tj_save_npy(t[k], p) != 0)
            return -1;
    }
    return 0;
}

static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int tool_export(int argc, char **argv)
{
    const char *src = NULL, *out = NULL, *io = NULL, *name = NULL, *ins[MAX_IO];
    int nin = 0;
    bool no_weights = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--in") && i + 1 < argc && nin < MAX_IO) {
            ins[nin++] = argv[++i];
        } else if (!strcmp(argv[i], "--name") && i + 1 < argc) {
            name = argv[++i];
        } else if (!strcmp(argv[i], "--save-io") && i + 1 < argc) {
            io = argv[++i];
        } else if (!strcmp(argv[i], "--no-weights")) {
            no_weights = true;
        } else if (argv[i][0] != '-' && !src) {
            src = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!src || !out) {
        usage(stderr);
        return 2;
    }
    size_t sl = strlen(src);
    bool onnx = sl > 5 && !strcmp(src + sl - 5, ".onnx");
    const bench_case *bc = onnx ? NULL : bench_find(src);
    if (!onnx && (!bc || bc->skip || bc->trains)) {
        fprintf(stderr, "tjit export: %s is not an inference case of the suite nor a .onnx file\n", src);
        return 2;
    }
    bench_args a = {0};
    tj_onnx *m = NULL;
    tj_compiled *c = NULL;
    tj_tensor *args[MAX_IO], *res[MAX_IO];
    int nargs = 0, nres = -1, rc = 1;
    if (onnx) {
        if ((m = tj_onnx_load(src)))
            for (; nargs < nin && (args[nargs] = tj_load_npy(ins[nargs])); nargs++) {
            }
        if (m && nargs == nin)
            c = tj_compile_multi(tj_onnx_run, m, &(tj_compile_options){.name = name ? name : "model"});
    } else if (bc->setup(&a) == 0) {
        nargs = a.ninputs;
        for (int k = 0; k < nargs; k++)
            args[k] = a.t[k];
        c = tj_compile(bc->run, &a, &(tj_compile_options){.name = name ? name : bc->id});
    }
    if (c) {
        tj_scope_begin();
        double t0 = clock_ms(CLOCK_MONOTONIC), c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        nres = onnx ? tj_call_multi(c, args, nargs, res, MAX_IO) : (res[0] = tj_call(c, args, nargs)) ? 1 : -1;
        double t1 = clock_ms(CLOCK_MONOTONIC), c1 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        if (nres > 0 && tj_export(c, out, &(tj_export_options){.name = name, .no_weights = no_weights}) == 0) {
            fprintf(stderr, "tjit export: wrote %s (first compiled call %.1f ms, %.1f CPU ms)\n", out, t1 - t0,
                    c1 - c0);
            rc = 0;
            if (io && (save_all(io, "in", args, nargs) || save_all(io, "out", res, nres)))
                rc = 1;
        }
        tj_scope_end();
    }
    if (rc)
        fprintf(stderr, "tjit export: %s\n", tj_last_error());
    tj_compiled_free(c);
    for (int k = 0; onnx && k < nargs; k++)
        tj_release(args[k]);
    tj_onnx_free(m);
    if (bc)
        bc->teardown(&a);
    return rc;
}
