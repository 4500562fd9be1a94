/* checkpoint.c - `make bench-backward-checkpoint`: activation checkpointing
 * (tj_checkpoint; docs/training.md, "Activation checkpointing") on a stack
 * of residual MLP blocks, forward + backward, eager and compiled, with and
 * without checkpoints: the step's time and the most memory allocated during
 * it (tj_alloc_peak_bytes: tensor data and the runtime's buffers, beyond
 * what was allocated before the step), and for compiled calls what the
 * partition saved; benchmarks/pytorch/checkpoint_train.py times the same
 * steps with torch.utils.checkpoint.
 *
 *   build/bench-backward-checkpoint [--threads N] [--reps N] [--batch B] [--layers L] [--cpu-time]
 *
 * Block k: h + linear(dropout(gelu(linear(layer_norm(h), w1, b1)), 0.1), w2,
 * b2), width 256, hidden 1024, f32; the loss sum(h) after L blocks (8),
 * batch 2048; the gradients dropped after each step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit.h"
#include "timing.h"

enum { D = 256, H = 1024, MAXL = 64 };

typedef struct layer {
    tj_tensor *w1, *b1, *w2, *b2, *g, *beta;
} layer;

typedef struct stack {
    layer l[MAXL];
    int n;
    bool ckpt;
} stack;

static int block(void *ctx, tj_tensor *const *a, int n, tj_tensor **out, int max)
{
    (void)n;
    (void)max;
    const layer *l = ctx;
    tj_tensor *h = tj_gelu(tj_linear(tj_layer_norm(a[0], 1, l->g, l->beta, 1e-5), l->w1, l->b1));
    out[0] = tj_add(a[0], tj_linear(tj_dropout(h, 0.1, true), l->w2, l->b2));
    return out[0] ? 1 : -1;
}

static tj_tensor *forward(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    stack *s = ctx;
    tj_tensor *h = a[0];
    for (int k = 0; k < s->n && h; k++)
        if ((s->ckpt ? tj_checkpoint(block, &s->l[k], &h, 1, &h, 1) : block(&s->l[k], &h, 1, &h, 1)) != 1)
            return NULL;
    return h ? tj_sum(h, NULL, 0, false) : NULL;
}

typedef struct run {
    stack *s;
    tj_compiled *cc;
    tj_tensor *x;
    size_t peak;   /* the largest step's */
} run;

static int run_step(void *ctx, int i)
{
    (void)i;
    run *r = ctx;
    tj_scope_begin();
    size_t base = tj_alloc_live_bytes();
    tj_alloc_peak_bytes(true);
    tj_tensor *l = r->cc ? tj_call(r->cc, &r->x, 1) : forward(r->s, &r->x, 1);
    int rc = l && tj_backward(l) == 0 ? 0 : -1;
    size_t peak = tj_alloc_peak_bytes(false) - base;
    r->peak = peak > r->peak ? peak : r->peak;
    for (int k = 0; k < r->s->n; k++) {
        tj_tensor *w[6] = {r->s->l[k].w1, r->s->l[k].b1, r->s->l[k].w2, r->s->l[k].b2, r->s->l[k].g, r->s->l[k].beta};
        for (int j = 0; j < 6; j++)
            tj_zero_grad(w[j]);
    }
    tj_scope_end();
    return rc;
}

static tj_tensor *param(tj_tensor *t)
{
    tj_requires_grad(t, true);
    return t;
}

int main(int argc, char **argv)
{
    int reps = 5, batch = 2048, layers = 8;
    for (int i = 1; i < argc; i++) {
        if (shared_flag(argc, argv, &i, &reps, &batch))
            continue;
        if (!strcmp(argv[i], "--layers") && i + 1 < argc) {
            layers = atoi(argv[++i]);
            continue;
        }
        fprintf(stderr, "usage: %s [--threads N] [--reps N] [--batch B] [--layers L] [--cpu-time]\n", argv[0]);
        return 2;
    }
    if (reps < 1 || batch < 1 || layers < 1 || layers > MAXL) {
        fprintf(stderr, "bench-backward-checkpoint: --reps and --batch at least 1, --layers 1 to %d\n", MAXL);
        return 2;
    }
    tj_scope_begin();
    tj_manual_seed(1);
    stack s = {.n = layers};
    for (int k = 0; k < layers; k++) {
        layer *l = &s.l[k];
        l->w1 = param(tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){H, D}), 1.0 / 16));
        l->b1 = param(tj_zeros(TJ_F32, 1, (int64_t[]){H}));
        l->w2 = param(tj_mul_s(tj_randn(TJ_F32, 2, (int64_t[]){D, H}), 1.0 / 32));
        l->b2 = param(tj_zeros(TJ_F32, 1, (int64_t[]){D}));
        l->g = param(tj_ones(TJ_F32, 1, (int64_t[]){D}));
        l->beta = param(tj_zeros(TJ_F32, 1, (int64_t[]){D}));
    }
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){batch, D});
    printf("residual MLP blocks, %d layers, batch %d, width %d, hidden %d, f32, %d threads, %s ms, %d steps:\n",
           layers, batch, D, H, tj_num_threads(), cpu_time ? "CPU" : "wall", reps);
    for (int compiled = 0; compiled < 2; compiled++) {
        for (int ckpt = 0; ckpt < 2; ckpt++) {
            s.ckpt = ckpt;
            run r = {&s, compiled ? tj_compile(forward, &s, &(tj_compile_options){.name = "stack"}) : NULL, x, 0};
            double med, best;
            if (time_steps(run_step, &r, 1, reps, &med, &best) != 0) {
                fprintf(stderr, "bench-backward-checkpoint: %s\n", tj_last_error());
                return 1;
            }
            printf("  %-8s %-12s median %8.1f  best %8.1f  peak %7.1f MB", compiled ? "compiled" : "eager",
                   ckpt ? "checkpointed" : "plain", med, best, r.peak / 1e6);
            if (r.cc) {
                tj_compiled_stats st;
                tj_compiled_stats_get(r.cc, &st);
                printf("  saved %d (%.1f MB), recomputed %d", st.backward.saved, st.backward.saved_bytes / 1e6,
                       st.backward.recomputed);
                tj_compiled_free(r.cc);
            }
            printf("\n");
        }
    }
    for (int k = 0; k < layers; k++) {
        tj_tensor *w[6] = {s.l[k].w1, s.l[k].b1, s.l[k].w2, s.l[k].b2, s.l[k].g, s.l[k].beta};
        for (int j = 0; j < 6; j++)
            tj_zero_grad(w[j]);
    }
    tj_scope_end();
    return 0;
}
