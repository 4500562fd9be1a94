/* train.c - training a small MLP with tjit: autograd, an optimizer with a
 * warmup-then-cosine learning rate, gradient clipping, and the whole step
 * (forward, backward, clipping, update) compiled into one plan.
 *
 * The data is synthetic: two interleaved spirals of points in 2-D, the label
 * the spiral. Prints the loss every 50 steps (it falls) and the accuracy at
 * the end; exits 1 when training did not reach 90%. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tjit.h>

typedef struct model {
    tj_tensor *w[6];          /* w1 [64,2], b1, w2 [64,64], b2, w3 [2,64], b3 */
    tj_optimizer *opt;
    tj_tensor *x, *y;         /* the data set: x [N,2], labels i64 [N] */
} model;

static tj_tensor *logits(model *m, tj_tensor *x)
{
    tj_tensor *h = tj_tanh(tj_linear(x, m->w[0], m->w[1]));
    h = tj_tanh(tj_linear(h, m->w[2], m->w[3]));
    return tj_linear(h, m->w[4], m->w[5]);
}

/* One training step; tj_compile turns it into one compiled plan whose
 * parameter, gradient and optimizer-state updates are written back per call. */
static tj_tensor *train_step(void *ctx, tj_tensor *const *args, int nargs)
{
    model *m = ctx;
    (void)nargs;
    tj_optimizer_zero_grad(m->opt);
    tj_tensor *loss = tj_cross_entropy(logits(m, args[0]), args[1]);
    if (tj_backward(loss) != 0 || !tj_clip_grad_norm(m->w, 6, 1.0, 2) || tj_optimizer_step(m->opt) != 0)
        return NULL;
    return tj_detach(loss);
}

static void make_data(model *m, int n)
{
    float *x = malloc((size_t)n * 2 * sizeof *x);
    int64_t *y = malloc((size_t)n * sizeof *y);
    for (int i = 0; i < n; i++) {
        double t = 3.0 * (i / 2) / (n / 2) * M_PI, r = 0.2 + t / (3 * M_PI);
        double a = t + (i % 2) * M_PI;
        x[2 * i] = (float)(r * cos(a));
        x[2 * i + 1] = (float)(r * sin(a));
        y[i] = i % 2;
    }
    m->x = tj_keep(tj_from_data(TJ_F32, 2, (int64_t[]){n, 2}, x));
    m->y = tj_keep(tj_from_data(TJ_I64, 1, (int64_t[]){n}, y));
    free(x);
    free(y);
}

int main(void)
{
    model m = {0};
    const int64_t shapes[6][2] = {{64, 2}, {64, 0}, {64, 64}, {64, 0}, {2, 64}, {2, 0}};
    tj_manual_seed(0);
    for (int k = 0; k < 6; k++) {
        int nd = shapes[k][1] ? 2 : 1;
        double fan_in = k < 2 ? 2 : 64;
        m.w[k] = tj_keep(tj_mul_s(tj_randn(TJ_F32, nd, shapes[k]), 1 / sqrt(fan_in)));
        tj_requires_grad(m.w[k], true);
    }
    m.opt = tj_adam(m.w, 6, &(tj_adam_options){.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
    make_data(&m, 512);
    tj_compiled *step = tj_compile(train_step, &m, &(tj_compile_options){.name = "train_step"});
    if (!m.opt || !step) {
        fprintf(stderr, "error: %s\n", tj_last_error());
        return 1;
    }
    /* 20 steps of warmup from lr 0.001, then a cosine down to 0.0005: set
     * before each call, read by the compiled step as a tensor (no retrace) */
    tj_lr_schedule sched = {.kind = TJ_LR_COSINE, .warmup = 20, .warmup_factor = 0.1, .total = 381,
                            .min_lr = 0.0005};
    for (int it = 0; it <= 400; it++) {
        tj_optimizer_set_lr(m.opt, tj_lr_at(&sched, 0.01, it));
        tj_scope_begin();
        tj_tensor *loss = tj_call(step, (tj_tensor *[]){m.x, m.y}, 2);
        if (!loss) {
            fprintf(stderr, "step %d: %s\n", it, tj_last_error());
            return 1;
        }
        if (it % 50 == 0)
            printf("step %3d  lr %.5f  loss %.4f\n", it, tj_optimizer_lr(m.opt), tj_item(loss));
        tj_scope_end();
    }
    tj_scope_begin();
    tj_no_grad_begin();
    tj_tensor *pred = tj_argmax(logits(&m, m.x), 1, false);
    double acc = tj_item(tj_mean(tj_cast(tj_eq(pred, m.y), TJ_F32), NULL, 0, false));
    tj_no_grad_end();
    tj_scope_end();
    char *ex = tj_explain(step);
    printf("accuracy %.1f%%\n%s", 100 * acc, ex);
    free(ex);
    tj_compiled_free(step);
    tj_optimizer_free(m.opt);
    for (int k = 0; k < 6; k++)
        tj_release(m.w[k]);
    tj_release(m.x);
    tj_release(m.y);
    return acc >= 0.9 ? 0 : 1;
}
