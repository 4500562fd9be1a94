/* split_bench.c - a model with one graph break in the middle (tj_item of a
 * mean), pointwise chains on both sides, run eagerly, compiled (split into
 * two pieces around the break), and compiled without the break (the mean
 * kept as a tensor: one graph), for docs/perf.md.
 *
 *   make build/examples/split_bench && build/examples/split_bench [n] [iters]
 *
 * Prints CPU time per call (this process, all threads) for each, after two
 * warm-up calls; set TJIT_NUM_THREADS=1 for one thread. A benchmark, not a
 * test: it checks only that the results agree.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tjit.h>

static tj_tensor *before(tj_tensor *x)
{
    tj_tensor *a = tj_mul(tj_tanh(x), tj_sigmoid(tj_mul_s(x, 1.702)));
    return tj_add(tj_mul_s(a, 0.5), tj_exp(tj_neg(tj_abs(x))));
}

static tj_tensor *after(tj_tensor *c, tj_tensor *x)
{
    tj_tensor *b = tj_mul(tj_tanh(c), tj_add_s(tj_sigmoid(x), 0.25));
    return tj_add(tj_mul_s(b, 0.5), tj_square(c));
}

/* The break: the mean as a number, used as a scalar after it. */
static tj_tensor *model_break(void *ctx, tj_tensor *const *in, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *a = before(in[0]);
    double m = tj_item(tj_mean(a, NULL, 0, false));
    return after(tj_sub_s(a, m), in[0]);   /* a wrapped scalar: an input of the piece */
}

/* The same without the break: the mean stays a tensor. */
static tj_tensor *model_whole(void *ctx, tj_tensor *const *in, int n)
{
    (void)ctx;
    (void)n;
    tj_tensor *a = before(in[0]);
    return after(tj_sub(a, tj_mean(a, NULL, 0, false)), in[0]);
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

typedef tj_tensor *(*model_fn)(void *, tj_tensor *const *, int);

static double time_it(tj_compiled *c, model_fn eager, tj_tensor *x, int iters, tj_tensor **keep)
{
    for (int k = 0; k < 2; k++) {
        tj_scope_begin();
        tj_tensor *y = c ? tj_call(c, &x, 1) : eager(NULL, &x, 1);
        if (!y) {
            fprintf(stderr, "failed: %s\n", tj_last_error());
            exit(1);
        }
        if (k == 1)
            *keep = tj_keep(y);
        tj_scope_end();
    }
    double t0 = cpu_ms();
    for (int k = 0; k < iters; k++) {
        tj_scope_begin();
        if (!(c ? tj_call(c, &x, 1) : eager(NULL, &x, 1)))
            exit(1);
        tj_scope_end();
    }
    return (cpu_ms() - t0) / iters;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 4194304;
    int iters = argc > 2 ? atoi(argv[2]) : 20;
    tj_manual_seed(0);
    tj_tensor *x = tj_randn(TJ_F32, 1, &n);
    tj_tensor *ye, *ys, *yw;
    tj_compiled *split = tj_compile(model_break, NULL, &(tj_compile_options){.name = "split"});
    tj_compiled *whole = tj_compile(model_whole, NULL, &(tj_compile_options){.name = "whole"});
    double te = time_it(NULL, model_break, x, iters, &ye);
    double ts = time_it(split, NULL, x, iters, &ys);
    double tw = time_it(whole, NULL, x, iters, &yw);
    double d = tj_item(tj_amax(tj_abs(tj_sub(ye, ys)), NULL, 0, false));
    tj_compiled_stats st;
    tj_compiled_stats_get(split, &st);
    printf("n %lld, %d threads, CPU ms per call (max |split - eager| %.2g)\n", (long long)n,
           tj_num_threads(), d);
    printf("  eager             %8.3f\n", te);
    printf("  compiled, split   %8.3f  (%.2fx eager; %d pieces, %d kernels)\n", ts, te / ts,
           st.split.graphs, st.split.kernels);
    printf("  compiled, whole   %8.3f  (%.2fx eager; no break)\n", tw, te / tw);
    tj_release(ye);
    tj_release(ys);
    tj_release(yw);
    tj_compiled_free(split);
    tj_compiled_free(whole);
    tj_release(x);
    return 0;
}
