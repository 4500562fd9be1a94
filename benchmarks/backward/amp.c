/* amp.c - `make bench-backward-amp`: mixed-precision training steps
 * (docs/training.md, "Loss scaling for f16"): an MLP 784-1024-1024-10 with
 * relu and cross-entropy, AdamW, one step = zero_grad, forward, backward,
 * update, eager and compiled whole, in four precisions: f32; f32 through a
 * gradient scaler (what the scaler's unscale, check, masked step and update
 * cost); bf16 autocast; f16 autocast with the scaler. Prints the median and
 * best ms of the steps and the loss after them (the same batch each step,
 * so it falls); benchmarks/pytorch/amp_train.py times f32 and bf16
 * autocast in PyTorch.
 *
 *   build/bench-backward-amp [--threads N] [--reps N] [--batch B] [--cpu-time] [--only f32|f32s|bf16|f16s]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit.h"
#include "timing.h"

enum { IN = 784, HID = 1024, OUT = 10, NW = 6 };

typedef enum { P_F32, P_F32_SCALED, P_BF16, P_F16_SCALED, NPREC } precision;
static const char *const prec_names[NPREC] = {"f32", "f32 scaled", "bf16 autocast", "f16 autocast scaled"};
static const char *const prec_flags[NPREC] = {"f32", "f32s", "bf16", "f16s"};

typedef struct model {
    tj_tensor *w[NW];   /* w1 b1 w2 b2 w3 b3 */
    tj_optimizer *opt;
    tj_grad_scaler *sc;
    precision prec;
} model;

static tj_tensor *train_step(void *ctx, tj_tensor *const *a, int n)
{
    (void)n;
    model *m = ctx;
    tj_optimizer_zero_grad(m->opt);
    if (m->prec == P_BF16 || m->prec == P_F16_SCALED)
        tj_autocast(m->prec == P_BF16 ? TJ_BF16 : TJ_F16);
    tj_tensor *h = tj_relu(tj_linear(a[0], m->w[0], m->w[1]));
    h = tj_relu(tj_linear(h, m->w[2], m->w[3]));
    tj_tensor *loss = tj_cross_entropy(tj_linear(h, m->w[4], m->w[5]), a[1]);
    if (m->prec == P_BF16 || m->prec == P_F16_SCALED)
        tj_autocast_end();
    if (tj_backward(m->sc ? tj_grad_scaler_scale(m->sc, loss) : loss) != 0)
        return NULL;
    if (m->sc ? tj_grad_scaler_step(m->sc, m->opt) != 0 || tj_grad_scaler_update(m->sc) != 0
              : tj_optimizer_step(m->opt) != 0)
        return NULL;
    return tj_detach(loss);
}

static tj_tensor *param(tj_tensor *t)
{
    tj_requires_grad(t, true);
    return tj_keep(t);
}

static int make(model *m, precision p)
{
    static const int64_t shapes[NW][2] = {{HID, IN}, {HID, 0}, {HID, HID}, {HID, 0}, {OUT, HID}, {OUT, 0}};
    tj_manual_seed(1);
    for (int k = 0; k < NW; k++)
        m->w[k] = param(tj_mul_s(tj_randn(TJ_F32, shapes[k][1] ? 2 : 1, shapes[k]), shapes[k][1] ? 0.03 : 0));
    m->opt = tj_adam(m->w, NW, &(tj_adam_options){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                                   .weight_decay = 0.01, .decoupled = true});
    m->sc = p == P_F32_SCALED || p == P_F16_SCALED ? tj_grad_scaler_new(NULL) : NULL;
    m->prec = p;
    return m->opt && (m->sc || (p != P_F32_SCALED && p != P_F16_SCALED)) ? 0 : -1;
}

static void unmake(model *m)
{
    tj_optimizer_free(m->opt);
    tj_grad_scaler_free(m->sc);
    for (int k = 0; k < NW; k++)
        tj_release(m->w[k]);
}

typedef struct run {
    model *m;
    tj_compiled *cc;
    tj_tensor *a[2];
    double loss;
} run;

static int run_step(void *ctx, int i)
{
    (void)i;
    run *r = ctx;
    tj_scope_begin();
    tj_tensor *l = r->cc ? tj_call(r->cc, r->a, 2) : train_step(r->m, r->a, 2);
    r->loss = l ? tj_item(l) : 0;
    tj_scope_end();
    return l ? 0 : -1;
}

int main(int argc, char **argv)
{
    int reps = 20, batch = 512, only = -1;
    for (int i = 1; i < argc; i++) {
        if (shared_flag(argc, argv, &i, &reps, &batch))
            continue;
        if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            for (int p = 0; p < NPREC; p++)
                only = strcmp(argv[i + 1], prec_flags[p]) ? only : p;
            if (only >= 0) {
                i++;
                continue;
            }
        }
        fprintf(stderr, "usage: %s [--threads N] [--reps N] [--batch B] [--cpu-time] [--only f32|f32s|bf16|f16s]\n",
                argv[0]);
        return 2;
    }
    if (reps < 1 || batch < 1) {
        fprintf(stderr, "bench-backward-amp: --reps and --batch at least 1\n");
        return 2;
    }
    tj_scope_begin();
    tj_manual_seed(2);
    tj_tensor *x = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){batch, IN}));
    tj_tensor *y = tj_keep(tj_cast(tj_floor(tj_mul_s(tj_rand(TJ_F32, 1, (int64_t[]){batch}), OUT)), TJ_I64));
    printf("MLP %d-%d-%d-%d, relu, cross-entropy, AdamW, batch %d, %d threads, %s ms, %d steps after 2:\n", IN, HID,
           HID, OUT, batch, tj_num_threads(), cpu_time ? "CPU" : "wall", reps);
    for (int p = 0; p < NPREC; p++) {
        if (only >= 0 && p != only)
            continue;
        for (int compiled = 0; compiled < 2; compiled++) {
            model m;
            if (make(&m, (precision)p) != 0) {
                fprintf(stderr, "bench-backward-amp: %s\n", tj_last_error());
                return 1;
            }
            run r = {&m, compiled ? tj_compile(train_step, &m, &(tj_compile_options){.name = "amp_step"}) : NULL,
                     {x, y}, 0};
            double med, best;
            if (time_steps(run_step, &r, 2, reps, &med, &best) != 0) {
                fprintf(stderr, "bench-backward-amp: %s %s: %s\n", prec_names[p],
                        compiled ? "compiled" : "eager", tj_last_error());
                return 1;
            }
            printf("  %-20s %-8s median %8.2f  best %8.2f  loss after %d steps %.4f", prec_names[p],
                   compiled ? "compiled" : "eager", med, best, reps + 2, r.loss);
            if (m.sc)
                printf("  scale %g", tj_grad_scaler_get_scale(m.sc));
            if (r.cc) {
                tj_compiled_stats st;
                tj_compiled_stats_get(r.cc, &st);
                printf("  (%d graph, %d breaks)", st.graphs, st.breaks);
                tj_compiled_free(r.cc);
            }
            printf("\n");
            unmake(&m);
        }
    }
    tj_release(x);
    tj_release(y);
    tj_scope_end();
    return 0;
}
