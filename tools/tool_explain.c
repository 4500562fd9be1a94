/* tool_explain.c - `tjit explain [CASE...]`: compiles benchmark suite cases
 * (or a program, MODEL.onnx or LIB.so: tool_explain_prog.c) with tj_compile,
 * calls each a few times, checks the compiled result against eager, and
 * prints tj_explain: graphs, node counts, guards, recompiles and graph breaks. With --backward, an inference case's weights require grad and
 * each call is followed by a backward through the compiled result: explain
 * then shows the partitioned backward (what was saved, what recomputed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../benchmarks/suite.h"
#include "tool.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tjit explain [CASE...] [--calls N] [--backward]\n"
               "       tjit explain MODEL.onnx --in A.npy ... [--calls N] [--freeze]\n"
               "       tjit explain LIB.so [--calls N] [--freeze]\n"
               "  Compiles each suite case (default: all; see tjit bench --help for the\n"
               "  list), calls it N times (default 2), compares with eager and prints what\n"
               "  tj_explain() reports: graphs captured, node counts, guards, recompiles\n"
               "  with the guard that failed, and graph breaks with their reasons.\n"
               "  --backward  inference cases: weights require grad, and each call is\n"
               "              followed by a backward through its result (a ones seed):\n"
               "              shows the compiled backward, what it saved and recomputed\n"
               "  MODEL.onnx  an ONNX model (docs/onnx.md) on the inputs given, in order;\n"
               "              several sets of inputs: call k takes set k mod their count\n"
               "  LIB.so      a user's shared object defining tjit_model and tjit_inputs\n"
               "              (and optionally tjit_setup, tjit_teardown): docs/cli.md\n"
               "  --freeze    compile with tj_compile_options.freeze (programs only)\n");
}

static double max_abs_diff(tj_tensor *a, tj_tensor *b)
{
    tj_tensor *d = tj_amax(tj_abs(tj_sub(tj_cast(a, TJ_F64), tj_cast(b, TJ_F64))), NULL, 0, false);
    return d ? tj_item(d) : NAN;
}

/* --backward: every weight requires grad; a backward after each call. */
static bool backward_mode;

static int weights_require_grad(bench_args *a)
{
    for (int k = a->ninputs; k < a->n; k++)
        if (a->t[k] && tj_dtype_is_float(tj_dtype_of(a->t[k])) && tj_requires_grad(a->t[k], true) != 0)
            return -1;
    return 0;
}

static int backward_of(tj_tensor *y)
{
    tj_tensor *seed = tj_ones(tj_dtype_of(y), tj_ndim(y), tj_shape(y));
    return seed && tj_backward_seed(y, seed) == 0 ? 0 : -1;
}

static int explain_case(const bench_case *bc, int calls)
{
    if (bc->skip) {
        printf("%s %s: skipped: %s\n\n", bc->id, bc->name, bc->skip);
        return 0;
    }
    bench_args a = {0};
    tj_tensor *snap[BENCH_MAX_ARGS] = {0};   /* a training case's weights before the calls */
    int rc = 1;
    tj_scope_begin();
    tj_compiled *c = NULL;
    if (bc->setup(&a) != 0) {
        fprintf(stderr, "tjit explain: %s: setup failed: %s\n", bc->id, tj_last_error());
        goto out;
    }
    bool bwd = backward_mode && !bc->trains && a.n > a.ninputs;   /* weights to differentiate */
    if (bwd && weights_require_grad(&a) != 0)
        goto fail;
    /* a training step updates the weights: eager repeats the compiled calls
     * from the same weights, so its last result is compared with theirs */
    tj_tensor *y = NULL, *e = NULL;
    if (bc->trains && bench_snapshot(&a, snap) != 0)
        goto fail;
    c = tj_compile(bc->run, &a, &(tj_compile_options){.name = bc->name});
    for (int k = 0; k < calls; k++)
        if ((y = tj_call(c, a.t, a.ninputs)) && bwd && backward_of(y) != 0)
            goto fail;
    if (bc->trains)
        bench_restore(&a, snap);
    for (int k = 0; k < (bc->trains ? calls : 1); k++)
        e = bc->run(&a, a.t, a.ninputs);
    if (!y || !e) {
    fail:
        fprintf(stderr, "tjit explain: %s: %s\n", bc->id, tj_last_error());
        goto out;
    }
    char *text = tj_explain(c);
    printf("%s %s (%s)\n%smax abs diff compiled vs eager: %.3g\n\n", bc->id, bc->name, bc->work,
           text ? text : "", max_abs_diff(y, e));
    free(text);
    rc = 0;
out:
    for (int k = 0; k < BENCH_MAX_ARGS; k++)
        tj_release(snap[k]);
    tj_compiled_free(c);
    tj_scope_end();
    if (bc->teardown)
        bc->teardown(&a);
    return rc;
}

int tool_explain(int argc, char **argv)
{
    int calls = 2, ncases = 0, nin = 0;
    const bench_case *cases[64];
    const char *prog = NULL, *in_files[64];
    bool freeze = false;
    for (int i = 1; i < argc; i++) {
        size_t len = strlen(argv[i]);
        if (!strcmp(argv[i], "--in")) {
            if (i + 1 >= argc || nin == 64) {
                fprintf(stderr, "tjit explain: --in needs a file (at most 64)\n");
                return 2;
            }
            in_files[nin++] = argv[++i];
            continue;
        } else if (!strcmp(argv[i], "--freeze")) {
            freeze = true;
            continue;
        } else if ((len > 5 && !strcmp(argv[i] + len - 5, ".onnx")) ||
                   (len > 3 && !strcmp(argv[i] + len - 3, ".so"))) {
            if (prog) {
                fprintf(stderr, "tjit explain: one program at a time ('%s', '%s')\n", prog, argv[i]);
                return 2;
            }
            prog = argv[i];
            continue;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--calls")) {
            if (i + 1 >= argc || (calls = atoi(argv[++i])) < 1) {
                fprintf(stderr, "tjit explain: --calls needs a count >= 1\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--backward")) {
            backward_mode = true;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "tjit explain: unknown flag '%s' (tjit explain --help)\n", argv[i]);
            return 2;
        } else if (!(cases[ncases] = bench_find(argv[i]))) {
            fprintf(stderr, "tjit explain: unknown case '%s' (tjit bench --help lists them)\n",
                    argv[i]);
            return 2;
        } else if (++ncases == 64) {
            fprintf(stderr, "tjit explain: too many cases\n");
            return 2;
        }
    }
    if (prog && ncases) {
        fprintf(stderr, "tjit explain: a program or suite cases, not both\n");
        return 2;
    }
    if ((nin || freeze) && !prog) {
        fprintf(stderr, "tjit explain: --in and --freeze are for a program (MODEL.onnx, LIB.so)\n");
        return 2;
    }
    size_t plen = prog ? strlen(prog) : 0;
    if (prog && !strcmp(prog + plen - 3, ".so")) {
        if (nin) {
            fprintf(stderr, "tjit explain: %s makes its own inputs (tjit_inputs); no --in\n", prog);
            return 2;
        }
        return tool_explain_so(prog, calls, freeze);
    }
    if (prog)
        return tool_explain_onnx(prog, in_files, nin, calls, freeze);
    if (!ncases)
        for (int k = 0; k < bench_ncases && k < 64; k++)
            cases[ncases++] = &bench_cases[k];
    int rc = 0;
    for (int k = 0; k < ncases; k++)
        rc |= explain_case(cases[k], calls);
    return rc;
}
