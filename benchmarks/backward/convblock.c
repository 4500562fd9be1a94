/* convblock.c - `make bench-backward-conv`: one training step's forward and
 * backward of a ResNet basic block, eager against a compiled call (tj_call,
 * then tj_backward_seed through it: the partitioned backward of
 * docs/training.md); benchmarks/pytorch/convblock_train.py times the same
 * step in PyTorch.
 *
 *   build/bench-backward-conv [--threads N] [--reps N] [--batch B] [--cpu-time] [--eval]
 *
 * Model: P6's block in training mode, y = relu(bn2(conv2(relu(bn1(conv1(x))))) + x),
 * x [B,64,56,56], convs 64->64 3x3 pad 1 without bias, batch norms with the
 * batch's statistics (running statistics updated by every call); --eval uses
 * the running statistics instead (P6's inference block, with gradients). The
 * conv weights and the norms' gamma and beta require grad; one step = forward,
 * backward with a ones seed, the gradients dropped. Prints the median and
 * best ms of each over --reps steps (after 3 warm-up steps), the ratio of the
 * medians, the compiled handle's first call (trace, compile of the forward
 * and backward plans) and what the partition saved.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit.h"
#include "timing.h"

enum { W_CONV, W_GAMMA, W_BETA, W_MEAN, W_VAR, NW };

typedef struct block {
    tj_tensor *w[2][NW];
    bool eval;
} block;

static tj_tensor *conv_bn(const block *b, int k, tj_tensor *x)
{
    static const int64_t one[2] = {1, 1};
    tj_tensor *const *w = b->w[k];
    tj_tensor *y = tj_conv2d(x, w[W_CONV], NULL, one, one, one, 1);
    return b->eval ? tj_batch_norm(y, w[W_MEAN], w[W_VAR], w[W_GAMMA], w[W_BETA], 1e-5)
                   : tj_batch_norm_train(y, w[W_MEAN], w[W_VAR], w[W_GAMMA], w[W_BETA], 0.1, 1e-5);
}

static tj_tensor *block_fn(void *ctx, tj_tensor *const *args, int nargs)
{
    const block *b = ctx;
    (void)nargs;
    tj_tensor *h = tj_relu(conv_bn(b, 0, args[0]));
    return tj_relu(tj_add(conv_bn(b, 1, h), args[0]));
}

/* One forward + backward; 0 or -1. */
static int step(block *b, tj_compiled *c, tj_tensor *x, tj_tensor *seed)
{
    tj_scope_begin();
    tj_tensor *y = c ? tj_call(c, &x, 1) : block_fn(b, &x, 1);
    int rc = y && tj_backward_seed(y, seed) == 0 ? 0 : -1;
    for (int k = 0; k < 2; k++)
        for (int i = W_CONV; i <= W_BETA; i++)
            tj_zero_grad(b->w[k][i]);
    tj_scope_end();
    return rc;
}

typedef struct run {
    block *b;
    tj_compiled *c;
    tj_tensor *x, *seed;
} run;

static int run_step(void *ctx, int i)
{
    run *r = ctx;
    (void)i;
    return step(r->b, r->c, r->x, r->seed);
}

static int measure(block *b, tj_compiled *c, tj_tensor *x, tj_tensor *seed, int reps, double *med,
                   double *best)
{
    run r = {b, c, x, seed};
    return time_steps(run_step, &r, 3, reps, med, best);
}

int main(int argc, char **argv)
{
    int reps = 11, batch = 8;
    block b = {.eval = false};
    for (int i = 1; i < argc; i++) {
        if (shared_flag(argc, argv, &i, &reps, &batch))
            continue;
        if (!strcmp(argv[i], "--eval"))
            b.eval = true;
        else {
            fprintf(stderr, "usage: %s [--threads N] [--reps N] [--batch B] [--cpu-time] [--eval]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || batch < 2) {
        fprintf(stderr, "bench-backward-conv: --reps at least 1, --batch at least 2\n");
        return 2;
    }
    tj_scope_begin();
    tj_manual_seed(1);
    for (int k = 0; k < 2; k++) {
        tj_tensor **w = b.w[k];
        w[W_CONV] = tj_mul_s(tj_randn(TJ_F32, 4, (int64_t[]){64, 64, 3, 3}), 0.06);
        w[W_GAMMA] = tj_ones(TJ_F32, 1, (int64_t[]){64});
        w[W_BETA] = tj_zeros(TJ_F32, 1, (int64_t[]){64});
        w[W_MEAN] = tj_zeros(TJ_F32, 1, (int64_t[]){64});
        w[W_VAR] = tj_ones(TJ_F32, 1, (int64_t[]){64});
        for (int i = W_CONV; i <= W_BETA; i++)
            tj_requires_grad(w[i], true);
    }
    tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){batch, 64, 56, 56});
    tj_tensor *seed = tj_ones(TJ_F32, 4, (int64_t[]){batch, 64, 56, 56});
    tj_compiled *c = tj_compile(block_fn, &b, &(tj_compile_options){.name = "convblock"});
    double t0 = now_ms(), em, eb, cm, cb;
    int rc = step(&b, c, x, seed);
    double first = now_ms() - t0;
    if (rc != 0 || measure(&b, NULL, x, seed, reps, &em, &eb) != 0 ||
        measure(&b, c, x, seed, reps, &cm, &cb) != 0) {
        fprintf(stderr, "bench-backward-conv: %s\n", tj_last_error());
        return 1;
    }
    tj_compiled_stats s;
    tj_compiled_stats_get(c, &s);
    printf("ResNet basic block %dx64x56x56 (%s batch norm), forward + backward, %d threads, %s ms, %d steps:\n",
           batch, b.eval ? "eval" : "training", tj_num_threads(), cpu_time ? "CPU" : "wall", reps);
    printf("  compiled calls run eagerly: %lu of %lu\n", (unsigned long)s.eager_calls, (unsigned long)s.calls);
    printf("  eager     median %.2f  best %.2f\n", em, eb);
    printf("  compiled  median %.2f  best %.2f  (%.2fx eager)  first call %.1f ms\n", cm, cb, em / cm, first);
    printf("  backward: %s, %d saved (%lld bytes), %d recomputed, %d matmul/conv2d\n",
           s.backward.partitioned ? "partitioned" : "recomputes the forward", s.backward.saved,
           (long long)s.backward.saved_bytes, s.backward.recomputed, s.backward.contractions);
    tj_compiled_free(c);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < NW; i++)
            tj_release(b.w[k][i]);
    tj_scope_end();
    return 0;
}
