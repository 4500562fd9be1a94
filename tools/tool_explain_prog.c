/* tool_explain_prog.c - `tjit explain` on a program that is not a suite case:
 * an ONNX model (MODEL.onnx with --in files) or a user's shared object
 * (LIB.so exposing tjit_model and tjit_inputs: docs/cli.md). Either is
 * compiled with tj_compile, called N times, compared with eager, and
 * tj_explain's report printed: graphs, guards, breaks with reasons and call
 * sites, recompiles with reasons, kernels, eager calls, compile time. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

enum { MAX_ARGS = 64 };

static double max_abs_diff(tj_tensor *a, tj_tensor *b)
{
    tj_tensor *d = tj_amax(tj_abs(tj_sub(tj_cast(a, TJ_F64), tj_cast(b, TJ_F64))), NULL, 0, false);
    return d ? tj_item(d) : NAN;
}

static void report(const char *name, tj_compiled *c, tj_tensor **got, tj_tensor **want, int n)
{
    char *text = tj_explain(c);
    printf("%s\n%s", name, text ? text : "");
    free(text);
    for (int k = 0; k < n; k++)
        printf("output %d: max abs diff compiled vs eager: %.3g\n", k, max_abs_diff(got[k], want[k]));
    printf("\n");
}

int tool_explain_onnx(const char *file, const char **in_files, int nin, int calls, bool freeze)
{
    tj_onnx *m = tj_onnx_load(file);
    if (!m) {
        fprintf(stderr, "tjit explain: %s\n", tj_last_error());
        return 1;
    }
    int ninputs = tj_onnx_num_inputs(m), rc = 1;
    tj_tensor *in[MAX_ARGS], *got[MAX_ARGS], *want[MAX_ARGS];
    tj_compiled *c = NULL;
    tj_scope_begin();
    if (ninputs == 0 || nin == 0 || nin % ninputs || nin > MAX_ARGS) {
        fprintf(stderr, "tjit explain: %s takes %d inputs (%s...), %d --in files given\n", file,
                ninputs, ninputs ? tj_onnx_input_name(m, 0) : "", nin);
        goto out;
    }
    for (int k = 0; k < nin; k++)
        if (!(in[k] = tj_load_npy(in_files[k])))
            goto fail;
    /* several sets of inputs: call k takes set k mod the count (shapes that
     * change show recompiles or a symbolic dim) */
    int nsets = nin / ninputs, n = -1;
    tj_tensor **set = in;
    c = tj_compile_multi(tj_onnx_run, m, &(tj_compile_options){.name = "onnx", .freeze = freeze});
    for (int k = 0; c && k < calls; k++) {
        set = in + (k % nsets) * ninputs;
        if ((n = tj_call_multi(c, set, ninputs, got, MAX_ARGS)) < 0)
            break;
    }
    if (n < 0 || tj_onnx_run(m, set, ninputs, want, MAX_ARGS) != n)
        goto fail;
    report(file, c, got, want, n);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "tjit explain: %s: %s\n", file, tj_last_error());
out:
    tj_compiled_free(c);
    tj_scope_end();
    tj_onnx_free(m);
    return rc;
}

/* The entry points of a user's shared object (docs/cli.md). */
typedef void *(*setup_fn)(void);
typedef int (*inputs_fn)(void *ctx, int call, tj_tensor **args, int max);
typedef void (*teardown_fn)(void *ctx);

int tool_explain_so(const char *file, int calls, bool freeze)
{
    char path[4096];   /* dlopen searches the library path for a name without a slash */
    snprintf(path, sizeof path, "%s%s", strchr(file, '/') ? "" : "./", file);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "tjit explain: %s\n", dlerror());
        return 1;
    }
    tj_model_fn model;
    inputs_fn inputs;
    setup_fn setup;
    teardown_fn teardown;
    *(void **)&model = dlsym(h, "tjit_model");
    *(void **)&inputs = dlsym(h, "tjit_inputs");
    *(void **)&setup = dlsym(h, "tjit_setup");
    *(void **)&teardown = dlsym(h, "tjit_teardown");
    if (!model || !inputs) {
        fprintf(stderr, "tjit explain: %s defines no %s (docs/cli.md: tjit_model and tjit_inputs)\n",
                file, model ? "tjit_inputs" : "tjit_model");
        dlclose(h);
        return 1;
    }
    int rc = 1;
    void *ctx = setup ? setup() : NULL;
    tj_compiled *c = NULL;
    tj_scope_begin();
    if (setup && !ctx) {
        fprintf(stderr, "tjit explain: %s: tjit_setup failed: %s\n", file, tj_last_error());
        goto out;
    }
    c = tj_compile(model, ctx, &(tj_compile_options){.name = "model", .freeze = freeze});
    tj_tensor *args[MAX_ARGS], *got = NULL;
    int nargs = -1;
    for (int k = 0; c && k < calls; k++) {
        if ((nargs = inputs(ctx, k, args, MAX_ARGS)) < 0 || nargs > MAX_ARGS) {
            fprintf(stderr, "tjit explain: %s: tjit_inputs(call %d) failed: %s\n", file, k,
                    tj_last_error());
            goto out;
        }
        if (!(got = tj_call(c, args, nargs)))
            break;
    }
    tj_tensor *want = got ? model(ctx, args, nargs) : NULL;
    if (!want) {
        fprintf(stderr, "tjit explain: %s: %s\n", file, tj_last_error());
        goto out;
    }
    report(file, c, &got, &want, 1);
    rc = 0;
out:
    tj_compiled_free(c);
    tj_scope_end();
    if (teardown)
        teardown(ctx);
    dlclose(h);
    return rc;
}
