/* penalty.c - `make bench-backward-penalty`: a WGAN-GP critic's training step
 * (a gradient penalty: gradients of gradients), eager against a compiled
 * call (tj_call of the critic's loss, whose penalty takes tj_gradients with
 * TJ_CREATE_GRAPH inside the trace, then tj_backward through it: a compiled,
 * partitioned second-order backward; docs/training.md, "Higher-order
 * gradients"); benchmarks/pytorch/penalty_train.py times the same step in
 * PyTorch.
 *
 *   build/bench-backward-penalty [--threads N] [--reps N] [--batch B] [--cpu-time]
 *
 * Critic: D(x) = linear(leaky_relu(linear(leaky_relu(linear(x))))), 784 ->
 * 512 -> 512 -> 1, slope 0.2. One step: x = eps real + (1 - eps) fake (a leaf),
 * g = dD(x)/dx (recorded), loss = mean(D(fake)) - mean(D(real)) + 10
 * mean((|g|_row - 1)^2), backward into the six weights, the gradients
 * dropped. Prints the median and best ms of each over --reps steps (after 3
 * warm-up steps), the ratio of the medians, the compiled handle's first call
 * and what the partition saved.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit.h"
#include "timing.h"

enum { NL = 3 };

typedef struct critic {
    tj_tensor *w[NL], *b[NL];
} critic;

static tj_tensor *critic_of(const critic *c, tj_tensor *x)
{
    for (int k = 0; k < NL && x; k++) {
        x = tj_linear(x, c->w[k], c->b[k]);
        if (k + 1 < NL)
            x = tj_leaky_relu(x, 0.2);
    }
    return x;
}

/* args: real, fake [B,784], eps [B,1]; the critic's loss with the penalty. */
static tj_tensor *critic_loss(void *ctx, tj_tensor *const *a, int n)
{
    const critic *c = ctx;
    (void)n;
    tj_tensor *x = tj_add(tj_mul(a[2], a[0]), tj_mul(tj_rsub_s(a[2], 1, 1), a[1])), *g;
    if (!x || tj_requires_grad(x, true) != 0)
        return NULL;
    tj_tensor *d = tj_sum(critic_of(c, x), NULL, 0, false);
    if (!d || tj_gradients(&d, NULL, 1, &x, 1, TJ_CREATE_GRAPH, &g) != 0)
        return NULL;
    tj_tensor *norm = tj_sqrt(tj_sum(tj_square(g), (int[]){1}, 1, false));
    tj_tensor *gp = tj_mean(tj_square(tj_sub_s(norm, 1)), NULL, 0, false);
    tj_tensor *w = tj_sub(tj_mean(critic_of(c, a[1]), NULL, 0, false), tj_mean(critic_of(c, a[0]), NULL, 0, false));
    return tj_add(w, tj_mul_s(gp, 10));
}

/* One forward + backward; 0 or -1. */
static int step(critic *c, tj_compiled *cc, tj_tensor *const *args)
{
    tj_scope_begin();
    tj_tensor *l = cc ? tj_call(cc, args, 3) : critic_loss(c, args, 3);
    int rc = l && tj_backward(l) == 0 ? 0 : -1;
    for (int k = 0; k < NL; k++) {
        tj_zero_grad(c->w[k]);
        tj_zero_grad(c->b[k]);
    }
    tj_scope_end();
    return rc;
}

typedef struct run {
    critic *c;
    tj_compiled *cc;
    tj_tensor *const *args;
} run;

static int run_step(void *ctx, int i)
{
    run *r = ctx;
    (void)i;
    return step(r->c, r->cc, r->args);
}

static int measure(critic *c, tj_compiled *cc, tj_tensor *const *args, int reps, double *med, double *best)
{
    run r = {c, cc, args};
    return time_steps(run_step, &r, 3, reps, med, best);
}

int main(int argc, char **argv)
{
    int reps = 51, batch = 128;
    for (int i = 1; i < argc; i++) {
        if (shared_flag(argc, argv, &i, &reps, &batch))
            continue;
        fprintf(stderr, "usage: %s [--threads N] [--reps N] [--batch B] [--cpu-time]\n", argv[0]);
        return 2;
    }
    if (reps < 1 || batch < 1) {
        fprintf(stderr, "bench-backward-penalty: --reps and --batch at least 1\n");
        return 2;
    }
    tj_scope_begin();
    tj_manual_seed(1);
    static const int64_t dims[NL + 1] = {784, 512, 512, 1};
    critic c;
    for (int k = 0; k < NL; k++) {
        c.w[k] = tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){dims[k + 1], dims[k]}), 1.0 / 28);
        c.b[k] = tj_zeros(TJ_F32, 1, (int64_t[]){dims[k + 1]});
        tj_requires_grad(c.w[k], true);
        tj_requires_grad(c.b[k], true);
    }
    tj_tensor *args[3] = {tj_randn(TJ_F32, 2, (int64_t[]){batch, 784}),
                          tj_randn(TJ_F32, 2, (int64_t[]){batch, 784}), tj_rand(TJ_F32, 2, (int64_t[]){batch, 1})};
    tj_compiled *cc = tj_compile(critic_loss, &c, &(tj_compile_options){.name = "critic"});
    double t0 = now_ms(), em, eb, cm, cb;
    int rc = step(&c, cc, args);
    double first = now_ms() - t0;
    if (rc != 0 || measure(&c, NULL, args, reps, &em, &eb) != 0 || measure(&c, cc, args, reps, &cm, &cb) != 0) {
        fprintf(stderr, "bench-backward-penalty: %s\n", tj_last_error());
        return 1;
    }
    tj_compiled_stats s;
    tj_compiled_stats_get(cc, &s);
    printf("WGAN-GP critic step, batch %d, MLP 784-512-512-1, %d threads, %s ms, %d steps:\n", batch,
           tj_num_threads(), cpu_time ? "CPU" : "wall", reps);
    printf("  compiled calls run eagerly: %lu of %lu\n", (unsigned long)s.eager_calls, (unsigned long)s.calls);
    printf("  eager     median %.3f  best %.3f\n", em, eb);
    printf("  compiled  median %.3f  best %.3f  (%.2fx eager)  first call %.1f ms\n", cm, cb, em / cm, first);
    printf("  backward: %s, %d saved (%lld bytes), %d recomputed, %d matmul/conv2d\n",
           s.backward.partitioned ? "partitioned" : "recomputes the forward", s.backward.saved,
           (long long)s.backward.saved_bytes, s.backward.recomputed, s.backward.contractions);
    tj_compiled_free(cc);
    for (int k = 0; k < NL; k++) {
        tj_release(c.w[k]);
        tj_release(c.b[k]);
    }
    tj_scope_end();
    return 0;
}
