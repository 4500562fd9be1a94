/* mymodel.c - a user's own model on tjit: a 2-layer MLP with layer_norm, run
 * eagerly and through tj_compile at two batch sizes (the batch dim becomes
 * dynamic), timed with clock_gettime (median of N calls), checked (exit 1 when
 * compiled and eager differ by more than 1e-4), and explained with tj_explain.
 *
 *   make example        builds build/examples/mymodel against build/libtjit.a and runs it
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <tjit.h>

enum { D_IN = 512, D_HID = 2048, D_OUT = 512, ITERS = 20 };
static const double TOL = 1e-4;

/* The model's weights: made once, kept alive across calls (tj_keep). */
typedef struct mlp {
    tj_tensor *w1, *b1, *w2, *b2, *ln_w, *ln_b;
} mlp;

/* y = layer_norm(gelu(x @ w1^T + b1) @ w2^T + b2 + x): an ordinary function over
 * the eager API; tj_compile traces it. Weights come through ctx. */
static tj_tensor *mlp_forward(void *ctx, tj_tensor *const *args, int nargs) {
    const mlp *m = ctx;
    (void)nargs;
    tj_tensor *x = args[0];
    tj_tensor *h = tj_gelu_tanh(tj_linear(x, m->w1, m->b1));
    tj_tensor *y = tj_add(tj_linear(h, m->w2, m->b2), x);
    return tj_layer_norm(y, 1, m->ln_w, m->ln_b, 1e-5);
}

static tj_tensor *param(int ndim, const int64_t *shape, double scale) {
    tj_scope_begin();
    tj_tensor *t = tj_keep(tj_mul_s(tj_randn(TJ_F32, ndim, shape), scale));
    tj_scope_end();
    return t;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median ms of ITERS calls of the model, eager (c == NULL) or compiled; each
 * call's temporaries are freed by its own scope. Returns -1 on an error. */
static double time_ms(tj_compiled *c, mlp *m, tj_tensor *x) {
    double t[ITERS];
    for (int i = 0; i < ITERS; i++) {
        tj_scope_begin();
        double t0 = now_ms();
        tj_tensor *y = c ? tj_call(c, &x, 1) : mlp_forward(m, &x, 1);
        t[i] = now_ms() - t0;
        tj_scope_end();
        if (!y) return -1;
    }
    qsort(t, ITERS, sizeof t[0], cmp_double);
    return t[ITERS / 2];
}

/* One batch size: first calls (the compiled one traces and compiles), check,
 * then timing. Returns 0, or 1 on an error or a mismatch. */
static int run_batch(tj_compiled *c, mlp *m, int64_t batch) {
    int rc = 0;
    tj_scope_begin();
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){batch, D_IN});
    double t0 = now_ms();
    tj_tensor *ye = mlp_forward(m, &x, 1);
    double t1 = now_ms();
    tj_tensor *yc = tj_call(c, &x, 1);
    double t2 = now_ms();
    double diff = tj_item(tj_amax(tj_abs(tj_sub(yc, ye)), NULL, 0, false));
    if (!ye || !yc || diff != diff) {
        fprintf(stderr, "mymodel: batch %lld: %s\n", (long long)batch, tj_last_error());
        rc = 1;
    } else {
        double eager = time_ms(NULL, m, x), compiled = time_ms(c, m, x);
        printf("batch %4lld: first call eager %7.3f ms, compiled %7.3f ms (trace + compile)\n",
               (long long)batch, t1 - t0, t2 - t1);
        printf("            median of %d: eager %7.3f ms, compiled %7.3f ms, speedup %.2fx, "
               "max abs diff %.2e\n", ITERS, eager, compiled, eager / compiled, diff);
        if (eager < 0 || compiled < 0) {
            fprintf(stderr, "mymodel: %s\n", tj_last_error());
            rc = 1;
        } else if (diff > TOL) {
            fprintf(stderr, "mymodel: compiled and eager differ by %.3g > %g\n", diff, TOL);
            rc = 1;
        }
    }
    tj_scope_end();
    return rc;
}

int main(void) {
    tj_manual_seed(0);
    mlp m = {
        .w1 = param(2, (int64_t[]){D_HID, D_IN}, 0.04),
        .b1 = param(1, (int64_t[]){D_HID}, 0.1),
        .w2 = param(2, (int64_t[]){D_OUT, D_HID}, 0.02),
        .b2 = param(1, (int64_t[]){D_OUT}, 0.1),
        .ln_w = param(1, (int64_t[]){D_OUT}, 1.0),
        .ln_b = param(1, (int64_t[]){D_OUT}, 0.1),
    };
    tj_compiled *c = tj_compile(mlp_forward, &m, &(tj_compile_options){.name = "mymodel"});
    int rc = c ? 0 : 1;
    printf("mymodel: %d-%d-%d MLP with layer_norm, %d threads\n", D_IN, D_HID, D_OUT,
           tj_num_threads());
    /* The second size changes dim 0: the retrace makes it symbolic (f32[s0,512]),
     * so a third size reuses that graph without compiling again. */
    const int64_t batches[] = {64, 256, 128};
    for (int i = 0; c && i < 3 && rc == 0; i++) rc = run_batch(c, &m, batches[i]);
    if (c) {
        char *report = tj_explain(c);
        if (report) printf("\n%s", report);
        free(report);
        tj_compiled_free(c);
    }
    tj_release(m.w1), tj_release(m.b1), tj_release(m.w2), tj_release(m.b2);
    tj_release(m.ln_w), tj_release(m.ln_b);
    printf(rc ? "mymodel: FAILED\n" : "mymodel: ok\n");
    return rc;
}
