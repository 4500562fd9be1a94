/* freeze_bench.c - the suite's P6 (a ResNet basic block in eval mode:
 * conv3x3 64->64, batch norm, relu, twice, plus the input) compiled with
 * and without tj_compile_options.freeze, for docs/perf.md.
 *
 *   make build/examples/freeze_bench && build/examples/freeze_bench [batch] [iters]
 *
 * Prints CPU time per call (this process, all threads) after two warm-up
 * calls; set TJIT_NUM_THREADS=1 for one thread. A benchmark, not a test: it
 * checks only that the results agree.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tjit.h>

typedef struct block {
    tj_tensor *w[10];   /* per conv: weight, running mean, var, gamma, beta */
} block;

static tj_tensor *conv_bn(tj_tensor *x, tj_tensor *const *w)
{
    static const int64_t one[2] = {1, 1};
    tj_tensor *y = tj_conv2d(x, w[0], NULL, one, one, one, 1);
    return tj_batch_norm(y, w[1], w[2], w[3], w[4], 1e-5);
}

static tj_tensor *model(void *ctx, tj_tensor *const *in, int n)
{
    (void)n;
    block *b = ctx;
    tj_tensor *h = tj_relu(conv_bn(in[0], b->w));
    return tj_relu(tj_add(conv_bn(h, b->w + 5), in[0]));
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double time_it(tj_compiled *c, tj_tensor *x, int iters, tj_tensor **keep)
{
    for (int k = 0; k < 2; k++) {
        tj_scope_begin();
        tj_tensor *y = tj_call(c, &x, 1);
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
        if (!tj_call(c, &x, 1))
            exit(1);
        tj_scope_end();
    }
    return (cpu_ms() - t0) / iters;
}

int main(int argc, char **argv)
{
    int64_t batch = argc > 1 ? atoll(argv[1]) : 8;
    int iters = argc > 2 ? atoi(argv[2]) : 5;
    tj_manual_seed(0);
    tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){batch, 64, 56, 56});
    block b;
    for (int k = 0; k < 2; k++) {
        tj_tensor **w = b.w + 5 * k;
        w[0] = tj_mul_s(tj_randn(TJ_F32, 4, (int64_t[]){64, 64, 3, 3}), 1.0 / sqrt(576.0));
        w[1] = tj_mul_s(tj_randn(TJ_F32, 1, (int64_t[]){64}), 0.1);
        w[2] = tj_add_s(tj_rand(TJ_F32, 1, (int64_t[]){64}), 0.5);
        w[3] = tj_randn(TJ_F32, 1, (int64_t[]){64});
        w[4] = tj_randn(TJ_F32, 1, (int64_t[]){64});
    }
    tj_compiled *plain = tj_compile(model, &b, &(tj_compile_options){.name = "p6"});
    tj_compiled *frozen = tj_compile(model, &b, &(tj_compile_options){.name = "p6_frozen", .freeze = true});
    tj_tensor *yp, *yf;
    double tp = time_it(plain, x, iters, &yp);
    double tf = time_it(frozen, x, iters, &yf);
    double d = tj_item(tj_amax(tj_abs(tj_sub(yp, yf)), NULL, 0, false));
    tj_compiled_stats sp, sf;
    tj_compiled_stats_get(plain, &sp);
    tj_compiled_stats_get(frozen, &sf);
    printf("P6 batch %lld, %d threads, CPU ms per call (max |frozen - not| %.2g)\n",
           (long long)batch, tj_num_threads(), d);
    printf("  compiled          %9.2f  (%d kernels, %d eager calls per call)\n", tp,
           sp.plan.kernels, sp.plan.eager_calls);
    printf("  compiled, frozen  %9.2f  (%d kernels, %d eager calls per call; %.2fx)\n", tf,
           sf.plan.kernels, sf.plan.eager_calls, tp / tf);
    tj_release(yp);
    tj_release(yf);
    tj_compiled_free(plain);
    tj_compiled_free(frozen);
    for (int k = 0; k < 10; k++)
        tj_release(b.w[k]);
    tj_release(x);
    return 0;
}
