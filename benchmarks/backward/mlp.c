/* mlp.c - `make bench-backward`: forward and backward of an MLP, eager
 * against a compiled call (tj_call, then tj_backward_seed through it): the
 * partitioned backward of docs/training.md. With TJIT_PARTITION=0 the
 * compiled call uses the backward that recomputes the forward instead.
 *
 *   build/bench-backward [--threads N] [--reps N] [--batch B] [--cpu-time] [--dynamic] [--chain]
 *                        [--dropout] [--bn] [--two] [--sizes N]
 *
 * Model: y = relu(tanh(x @ w1 + b1)) @ w2, x [B,256], w1 [256,1024],
 * w2 [1024,256]; one step = forward, backward with a ones seed, the
 * gradients dropped. Prints the median and best ms of each over --reps steps
 * (after 3 warm-up steps) and the ratio of the medians, and the compiled
 * handle's first call (trace + compile of the forward and backward plans).
 * --dynamic marks the batch dim dynamic (tj_mark_dynamic): the forward and
 * the partitioned backward are one symbolic graph each. --sizes N (with
 * --dynamic) cycles the steps through N batch sizes, B, B - 8, B - 16, ...;
 * the first call becomes the first call of each size, summed (what a
 * training loop over batches of changing sizes pays to compile). --chain compiles
 * the two layers as two modules called one after the other: the second one's
 * argument requires grad (its backward gives that gradient to the first's).
 * --dropout puts dropout (p 0.1, training) after the tanh: each call draws
 * its mask. --bn replaces the bias by training-mode batch norm (gamma, beta
 * learned; the running statistics written by every call). --two returns
 * the output and a loss of it (sum of squares) and runs the backward through
 * both (one seed on the output, the loss's 1 added).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit.h"
#include "timing.h"

typedef struct mlp {
    tj_tensor *w1, *b1, *w2;
    bool dropout;
    tj_tensor *gamma, *mean, *var;   /* --bn: b1 is beta */
} mlp;

/* The first layer: tanh(x @ w1 + b1), or with --bn tanh(bn(x @ w1)); --dropout after it. */
static tj_tensor *layer1(void *ctx, tj_tensor *const *args, int nargs)
{
    mlp *m = ctx;
    (void)nargs;
    tj_tensor *a = tj_matmul(args[0], m->w1);
    a = m->gamma ? tj_batch_norm_train(a, m->mean, m->var, m->gamma, m->b1, 0.1, 1e-5) : tj_add(a, m->b1);
    return m->dropout ? tj_dropout(tj_tanh(a), 0.1, true) : tj_tanh(a);
}

static tj_tensor *mlp_fn(void *ctx, tj_tensor *const *args, int nargs)
{
    mlp *m = ctx;
    return tj_matmul(tj_relu(layer1(ctx, args, nargs)), m->w2);
}

static tj_tensor *layer2(void *ctx, tj_tensor *const *args, int nargs)
{
    mlp *m = ctx;
    (void)nargs;
    return tj_matmul(tj_relu(args[0]), m->w2);
}

static tj_compiled *second;   /* --chain: layer2's module (the handle passed is layer1's) */
static bool two;              /* --two: the output and its loss */

static int mlp_two(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    (void)max;
    outs[0] = mlp_fn(ctx, args, nargs);
    outs[1] = tj_sum(tj_mul(outs[0], outs[0]), NULL, 0, false);
    return 2;
}

/* One forward + backward; 0 or -1. */
static int step(mlp *m, tj_compiled *c, tj_tensor *x, tj_tensor *seed)
{
    tj_scope_begin();
    tj_tensor *y, *h, *r[2];
    if (two && (c ? tj_call_multi(c, &x, 1, r, 2) : mlp_two(m, &x, 1, r, 2)) == 2)
        y = tj_add(tj_mul(r[0], seed), r[1]);   /* seeds: seed on the output, 1 on the loss */
    else if (two)
        y = NULL;
    else if (!c)
        y = mlp_fn(m, &x, 1);
    else if (second)   /* layer2's argument requires grad */
        y = (h = tj_call(c, &x, 1)) ? tj_call(second, &h, 1) : NULL;
    else
        y = tj_call(c, &x, 1);
    int rc = y && (two ? tj_backward(tj_sum(y, NULL, 0, false)) : tj_backward_seed(y, seed)) == 0 ? 0 : -1;
    tj_zero_grad(m->w1);
    tj_zero_grad(m->b1);
    tj_zero_grad(m->w2);
    if (m->gamma)
        tj_zero_grad(m->gamma);
    tj_scope_end();
    return rc;
}

/* Steps cycle through the n inputs x[k] (seeds seed[k]). */
typedef struct run {
    mlp *m;
    tj_compiled *c;
    tj_tensor **x, **seed;
    int n;
} run;

static int run_step(void *ctx, int i)
{
    run *r = ctx;
    return step(r->m, r->c, r->x[i % r->n], r->seed[i % r->n]);
}

static int measure(mlp *m, tj_compiled *c, tj_tensor **x, tj_tensor **seed, int n, int reps, double *med,
                   double *best)
{
    run r = {m, c, x, seed, n};
    return time_steps(run_step, &r, 3 * n, reps, med, best);
}

int main(int argc, char **argv)
{
    int reps = 21, batch = 256, nsizes = 1;
    bool dynamic = false, chain = false, dropout = false, bn = false;
    for (int i = 1; i < argc; i++) {
        if (shared_flag(argc, argv, &i, &reps, &batch))
            continue;
        if (!strcmp(argv[i], "--dynamic"))
            dynamic = true;
        else if (!strcmp(argv[i], "--chain"))
            chain = true;
        else if (!strcmp(argv[i], "--dropout"))
            dropout = true;
        else if (!strcmp(argv[i], "--bn"))
            bn = true;
        else if (!strcmp(argv[i], "--two"))
            two = true;
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            nsizes = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--threads N] [--reps N] [--batch B] [--cpu-time] [--dynamic] [--chain] "
                            "[--dropout] [--bn] [--two] [--sizes N]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || batch < 1 || nsizes < 1 || nsizes > 64 || batch - 8 * (nsizes - 1) < 2 ||
        (nsizes > 1 && !dynamic)) {
        fprintf(stderr, "bench-backward: --reps and --batch at least 1, --sizes 1 to 64 with --dynamic "
                        "and a batch of at least 8 (N - 1) + 2\n");
        return 2;
    }
    tj_scope_begin();
    tj_manual_seed(1);
    mlp m = {tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){256, 1024}), 0.06),
             tj_zeros(TJ_F32, 1, (int64_t[]){1024}),
             tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){1024, 256}), 0.03), dropout, NULL, NULL, NULL};
    if (bn) {
        m.gamma = tj_ones(TJ_F32, 1, (int64_t[]){1024});
        m.mean = tj_zeros(TJ_F32, 1, (int64_t[]){1024});
        m.var = tj_ones(TJ_F32, 1, (int64_t[]){1024});
        tj_requires_grad(m.gamma, true);
    }
    tj_requires_grad(m.w1, true);
    tj_requires_grad(m.b1, true);
    tj_requires_grad(m.w2, true);
    tj_tensor *x[64], *seed[64];
    for (int k = 0; k < nsizes; k++) {
        int64_t b = batch - 8 * k;
        x[k] = tj_randn(TJ_F32, 2, (int64_t[]){b, 256});
        seed[k] = tj_ones(TJ_F32, 2, (int64_t[]){b, 256});
        if (dynamic && tj_mark_dynamic(x[k], 0) != 0) {
            fprintf(stderr, "bench-backward: %s\n", tj_last_error());
            return 1;
        }
    }
    tj_compiled *c = two ? tj_compile_multi(mlp_two, &m, &(tj_compile_options){.name = "mlp"})
                         : tj_compile(chain ? layer1 : mlp_fn, &m, &(tj_compile_options){.name = "mlp"});
    if (chain)
        second = tj_compile(layer2, &m, &(tj_compile_options){.name = "mlp_layer2"});
    double first = 0, em, eb, cm, cb;
    for (int k = 0; k < nsizes; k++) {
        double t0 = now_ms();
        if (step(&m, c, x[k], seed[k]) != 0) {
            fprintf(stderr, "bench-backward: %s\n", tj_last_error());
            return 1;
        }
        first += now_ms() - t0;
    }
    if (measure(&m, NULL, x, seed, nsizes, reps, &em, &eb) != 0 ||
        measure(&m, c, x, seed, nsizes, reps, &cm, &cb) != 0) {
        fprintf(stderr, "bench-backward: %s\n", tj_last_error());
        return 1;
    }
    tj_compiled_stats s;
    tj_compiled_stats_get(c, &s);
    char many[64] = "";
    if (nsizes > 1)
        snprintf(many, sizeof many, " (%d batch sizes, %d to %d)", nsizes, batch - 8 * (nsizes - 1), batch);
    printf("mlp %dx256 -> 1024 -> 256%s%s%s%s%s%s, forward + backward, %d threads, %s ms, %d steps:\n", batch,
           many, dynamic ? " (batch dynamic)" : "", chain ? " (two modules chained)" : "", two ? " (output and loss)" : "",
           dropout ? " (dropout)" : "", bn ? " (batch norm, training)" : "", tj_num_threads(),
           cpu_time ? "CPU" : "wall", reps);
    printf("  compiled calls run eagerly: %lu of %lu\n", (unsigned long)s.eager_calls, (unsigned long)s.calls);
    printf("  eager     median %.3f  best %.3f\n", em, eb);
    printf("  compiled  median %.3f  best %.3f  (%.2fx eager)  first call%s %.1f ms\n", cm, cb, em / cm,
           nsizes > 1 ? " of each size, summed," : "", first);
    printf("  joint graphs partitioned: %d\n", s.backward.partitioned);
    printf("  backward: %s, %d saved (%lld bytes), %d recomputed, %d matmuls\n",
           s.backward.partitioned ? "partitioned" : "recomputes the forward", s.backward.saved,
           (long long)s.backward.saved_bytes, s.backward.recomputed, s.backward.contractions);
    if (second) {
        tj_compiled_stats_get(second, &s);
        printf("  second module: %lu of %lu calls eager; backward %s\n", (unsigned long)s.eager_calls,
               (unsigned long)s.calls, s.backward.partitioned ? "partitioned" : "not partitioned");
    }
    tj_compiled_free(second);
    tj_compiled_free(c);
    tj_release(m.w1);
    tj_release(m.b1);
    tj_release(m.w2);
    tj_release(m.gamma);
    tj_release(m.mean);
    tj_release(m.var);
    tj_scope_end();
    return 0;
}
