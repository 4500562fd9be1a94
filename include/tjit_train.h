/* tjit_train.h - training with tjit, a part of tjit.h (which includes it;
 * including it alone includes tjit.h): reverse-mode autograd (gradients of
 * gradients, forward-mode products), autocast, the optimizers with their
 * learning rate and state, learning-rate schedules and gradient clipping.
 * docs/training.md shows them at work. */
#ifndef TJIT_TRAIN_H
#include "tjit.h"   /* includes this header at its end, before its call-site macros */
#endif
#ifndef TJIT_TRAIN_H
#define TJIT_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
TJ_API_BEGIN

/* ---- autograd (reverse mode; docs/training.md) ----------------------------
 * Mark leaves (weights) with tj_requires_grad; every op on a tensor that
 * requires grad is recorded on a tape (nothing is recorded otherwise). After
 * tj_backward(loss), tj_grad(w) is d loss / d w, summed over backward calls
 * until tj_zero_grad. A backward frees the tape it ran (call the forward again
 * for another backward, or pass TJ_RETAIN_GRAPH to tj_backward_ex). */
int tj_requires_grad(tj_tensor *t, bool on);   /* float leaves only; 0 or -1 */
bool tj_get_requires_grad(const tj_tensor *t);
int tj_backward(tj_tensor *loss);              /* one-element result; 0 or -1 */
int tj_backward_seed(tj_tensor *y, tj_tensor *seed);   /* seed: dL/dy, y's shape */
tj_tensor *tj_grad(const tj_tensor *t);        /* borrowed, NULL before a backward */
/* Flags of tj_backward_ex and tj_gradients (docs/training.md, "Higher-order
 * gradients"). TJ_RETAIN_GRAPH keeps the saved values, so another backward can
 * run through the same graph (PyTorch's retain_graph). TJ_CREATE_GRAPH records
 * the backward itself (its gradients have a history, for gradients of
 * gradients: PyTorch's create_graph; implies TJ_RETAIN_GRAPH; not through a
 * compiled call's node; inside tj_compile traced for tj_gradients, a graph
 * break for tj_backward_ex). TJ_ALLOW_UNUSED: an
 * input of tj_gradients the outputs do not reach gets zeros instead of an
 * error. */
enum { TJ_RETAIN_GRAPH = 1u, TJ_CREATE_GRAPH = 2u, TJ_ALLOW_UNUSED = 4u };
/* tj_backward_seed with flags (seed NULL: ones, y of one element). A leaf's
 * .grad made with TJ_CREATE_GRAPH holds a history that holds the leaf: drop
 * it with tj_zero_grad, or prefer tj_gradients. 0 or -1. */
int tj_backward_ex(tj_tensor *y, tj_tensor *seed, unsigned flags);
/* torch.autograd.grad: gx[j] = d(sum_i <ys[i], seeds[i]>) / d xs[j] (seeds or
 * seeds[i] NULL: ones, ys[i] of one element), for xs that require grad, leaves
 * or results of recorded ops; results in the current scope. No .grad changes
 * and no ready-hook runs; only the part of the graph between the ys and the xs
 * runs. 0 or -1 (an x not reached by the ys is an error without
 * TJ_ALLOW_UNUSED). */
int tj_gradients(tj_tensor *const *ys, tj_tensor *const *seeds, int ny, tj_tensor *const *xs, int nx,
                 unsigned flags, tj_tensor **gx);
/* Forward-mode products (torch.autograd.functional.jvp): jv[i] = sum_j
 * d ys[i] / d xs[j] . vs[j] (vs[j] of xs[j]'s shape), by two backward passes
 * (the first recorded, on zero seeds that require grad: its gradients are
 * linear in the seeds, so the second pass, from <those, vs>, gives J v). The
 * graph of the ys is kept. flags: TJ_CREATE_GRAPH makes jv differentiable
 * again. Results in the current scope; 0 or -1. */
int tj_jvp(tj_tensor *const *ys, int ny, tj_tensor *const *xs, tj_tensor *const *vs, int nx, unsigned flags,
           tj_tensor **jv);
void tj_zero_grad(tj_tensor *t);               /* drops the accumulated gradient */
/* Sets leaf's gradient to g's values (like `p.grad = g`; into the current
 * gradient in place when shapes and dtypes match). 0 or -1. */
int tj_set_grad(tj_tensor *leaf, tj_tensor *g);
tj_tensor *tj_detach(tj_tensor *t);            /* same data, no gradient history */
/* A ready-hook on a leaf (what data parallelism builds on, like PyTorch's
 * post-accumulate-grad hook): during a backward, fn(leaf, ctx) runs once, as
 * soon as the leaf's gradient is final for that backward (every recorded op
 * that reads it, and every compiled call, has added its part), with
 * tj_grad(leaf) the sum. A nonzero return fails the backward. One hook per
 * leaf; fn NULL removes it. A backward traced by tj_compile into a hooked
 * leaf is no graph break: the compiled call sets that gradient, and runs the
 * hook, as soon as the plan's step that makes it has run; a read of that
 * gradient later in the same compiled function (an update) is a graph break
 * (the hook may change it after the call): compile the update separately. */
typedef int (*tj_grad_hook_fn)(tj_tensor *leaf, void *ctx);
int tj_set_grad_hook(tj_tensor *leaf, tj_grad_hook_fn fn, void *ctx);
void tj_no_grad_begin(void);                   /* like torch.no_grad(): nests */
void tj_no_grad_end(void);
bool tj_grad_enabled(void);

/* Activation checkpointing (torch.utils.checkpoint, non-reentrant): runs
 * fn(ctx, args, nargs, outs, max) (a tj_model_multi_fn) with its ops recorded
 * for backward as usual, but drops the values they saved that fn made (its
 * activations); a backward that reaches them runs fn again once, on the same
 * args with the same random draws, to make them. fn must record the same ops
 * when run again (else the backward fails with an error), and its side
 * effects (a training-mode batch norm's running statistics, writes into
 * captured tensors) happen again, as in PyTorch; a compiled function called
 * inside runs eagerly there. Without grad mode it calls
 * fn; inside tj_compile fn is traced inline and the compiled backward
 * computes its values again from the block's inputs (the partition saves
 * what enters and leaves it). The result count, or -1 with an error. */
int tj_checkpoint(tj_model_multi_fn fn, void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs,
                  int max);

/* ---- autocast (mixed precision, like torch.autocast("cpu", bf16)) ------- */
/* Opens a per-thread scope, ended by tj_autocast_end, in which matmul,
 * linear and conv2d cast their f32 inputs to dt (TJ_BF16 or TJ_F16) and run
 * in it, while softmax, log_softmax, the norms, cross_entropy and the float
 * reductions (sum, mean, prod, var, std, logsumexp) cast f16/bf16 inputs to
 * f32 and return f32; other ops promote as usual. TJ_F32 turns it off in a
 * nested scope. Scopes nest (up to 32); compiled handles guard on the dtype.
 * 0, or -1 with an error (a bad dtype still opens a scope: end it). */
int tj_autocast(tj_dtype dt);
void tj_autocast_end(void);

/* ---- optimizers (torch.optim): update parameters in place from their .grad */
typedef struct tj_optimizer tj_optimizer;
typedef struct tj_sgd_options {
    double lr;             /* learning rate */
    double momentum;       /* 0: plain SGD (dampening is 0) */
    double weight_decay;   /* L2: adds weight_decay * p to the gradient */
    bool nesterov;
} tj_sgd_options;
typedef struct tj_adam_options {
    double lr, beta1, beta2, eps;   /* torch's defaults: 1e-3, 0.9, 0.999, 1e-8 */
    double weight_decay;
    bool decoupled;                 /* true: AdamW (decay p by lr * weight_decay) */
    bool amsgrad;                   /* divide by the running maximum of the second moment */
} tj_adam_options;
typedef struct tj_rmsprop_options {
    double lr, alpha, eps;          /* torch's defaults: 1e-2, 0.99, 1e-8 */
    double weight_decay, momentum;  /* 0, 0 */
    bool centered;                  /* divide by the variance estimate instead of the mean square */
} tj_rmsprop_options;
typedef struct tj_adagrad_options {
    double lr, lr_decay, weight_decay;   /* torch's defaults: 1e-2, 0, 0 */
    double initial_accumulator_value;    /* 0 */
    double eps;                          /* 1e-10 */
} tj_adagrad_options;
/* The optimizer holds the parameters (retained); options NULL: torch's
 * defaults, else every field as given (zero is a value, not "default").
 * Made outside tj_compile. */
tj_optimizer *tj_sgd(tj_tensor *const *params, int n, const tj_sgd_options *opt);
tj_optimizer *tj_adam(tj_tensor *const *params, int n, const tj_adam_options *opt);
tj_optimizer *tj_rmsprop(tj_tensor *const *params, int n, const tj_rmsprop_options *opt);
tj_optimizer *tj_adagrad(tj_tensor *const *params, int n, const tj_adagrad_options *opt);
/* Parameter groups (torch's param_groups): the constructor's parameters and
 * options are group 0; each tj_<kind>_add_group adds the next group, with
 * options of its own (NULL: torch's defaults), e.g. no weight decay on
 * biases and norms, or a smaller lr for a pretrained part. The optimizer
 * must be of that kind; a parameter belongs to one group. Returns the
 * group's index, or -1 with an error. Outside tj_compile. */
int tj_sgd_add_group(tj_optimizer *o, tj_tensor *const *params, int n, const tj_sgd_options *opt);
int tj_adam_add_group(tj_optimizer *o, tj_tensor *const *params, int n, const tj_adam_options *opt);
int tj_rmsprop_add_group(tj_optimizer *o, tj_tensor *const *params, int n, const tj_rmsprop_options *opt);
int tj_adagrad_add_group(tj_optimizer *o, tj_tensor *const *params, int n, const tj_adagrad_options *opt);
int tj_optimizer_num_groups(const tj_optimizer *o);
int tj_optimizer_step(tj_optimizer *o);        /* 0 or -1; params without grad are skipped */
void tj_optimizer_zero_grad(tj_optimizer *o);  /* tj_zero_grad of every parameter */
void tj_optimizer_free(tj_optimizer *o);
/* The learning rate is a tensor the steps read: a compiled training step
 * uses the value set before each call, with no retrace. Set it between calls
 * (inside a traced function it is an error). 0 or -1 / the value (NAN). */
int tj_optimizer_set_lr(tj_optimizer *o, double lr);            /* every group's */
double tj_optimizer_lr(const tj_optimizer *o);                   /* group 0's */
int tj_optimizer_set_group_lr(tj_optimizer *o, int group, double lr);
double tj_optimizer_group_lr(const tj_optimizer *o, int group);

/* The optimizer's state, for checkpoints: tensors 0..num_state-1, named like
 * torch's state_dict ("lr", "step", "exp_avg.3", "momentum_buffer.0", ...;
 * the suffix is the parameter's index, counted across groups in order; group
 * G > 0's learning rate is "lr.G"; a slot only where its group keeps it). Borrowed, owned by the optimizer:
 * save them (tj_save_npy) and restore them with tj_copy_ into the same
 * tensors of a fresh optimizer made alike. NULL with an error out of range. */
int tj_optimizer_num_state(const tj_optimizer *o);
tj_tensor *tj_optimizer_state(const tj_optimizer *o, int i, char *name, size_t cap);

/* ---- loss scaling for f16 training (torch.cuda.amp.GradScaler) ----------
 * Under tj_autocast(TJ_F16) a backward's small gradients flush to zero in
 * f16; scale the loss first and let the scaler divide the gradients again:
 *     tj_backward(tj_grad_scaler_scale(sc, loss));
 *     tj_grad_scaler_unscale(sc, opt);   (optional: before clipping)
 *     tj_grad_scaler_step(sc, opt);      (skipped if a gradient is inf/NaN)
 *     tj_grad_scaler_update(sc);         (backs off or grows the scale)
 * unscale divides opt's gradients by the scale and records whether any is
 * inf or NaN; step unscales if that was not done, then steps unless one
 * was; update multiplies the scale by backoff_factor after a non-finite
 * gradient, else by growth_factor after growth_interval clean steps. Each
 * optimizer is unscaled and stepped at most once between updates. All of
 * it is tensor ops: a compiled step that does these has no graph break
 * (its skip is a mask on the optimizer's writes). 0 or -1 with an error. */
typedef struct tj_grad_scaler tj_grad_scaler;
typedef struct tj_grad_scaler_options {
    double init_scale;         /* 65536 (2^16) */
    double growth_factor;      /* 2 */
    double backoff_factor;     /* 0.5 */
    int64_t growth_interval;   /* 2000 */
} tj_grad_scaler_options;
tj_grad_scaler *tj_grad_scaler_new(const tj_grad_scaler_options *opt);   /* NULL: the defaults */
void tj_grad_scaler_free(tj_grad_scaler *s);
tj_tensor *tj_grad_scaler_scale(tj_grad_scaler *s, tj_tensor *loss);    /* loss * scale, current scope */
int tj_grad_scaler_unscale(tj_grad_scaler *s, tj_optimizer *o);
int tj_grad_scaler_step(tj_grad_scaler *s, tj_optimizer *o);
int tj_grad_scaler_update(tj_grad_scaler *s);
double tj_grad_scaler_get_scale(const tj_grad_scaler *s);   /* outside a compiled function */
/* For checkpoints, as the optimizer's: "scale" (f32 0-dim) and
 * "_growth_tracker" (i32 0-dim), borrowed. */
int tj_grad_scaler_num_state(const tj_grad_scaler *s);
tj_tensor *tj_grad_scaler_state(const tj_grad_scaler *s, int i, char *name, size_t cap);

/* ---- weight averaging (torch.optim.swa_utils.AveragedModel) -------------
 * An average kept beside each of n float tensors (a model's parameters; add
 * its running statistics to average those too), made as a copy of them.
 * tj_average_update folds their current values in: the first update copies
 * them, later ones give avg = decay avg + (1 - decay) p (tj_average_ema) or
 * the mean of all updates so far, avg += (p - avg) / (count + 1)
 * (tj_average_swa). Tensor ops on kept tensors: inside a compiled training
 * step, traced with no break. Evaluate with tj_average_get(a, k) in place of
 * params[k] (borrowed, owned by the average), or tj_copy_ them over the
 * parameters. Made outside tj_compile; NULL or -1 with an error. */
typedef struct tj_average tj_average;
tj_average *tj_average_ema(tj_tensor *const *params, int n, double decay);   /* decay in [0, 1] */
tj_average *tj_average_swa(tj_tensor *const *params, int n);
int tj_average_update(tj_average *a);
tj_tensor *tj_average_get(const tj_average *a, int k);
int64_t tj_average_count(const tj_average *a);   /* updates so far; outside a compiled function */
void tj_average_free(tj_average *a);

/* ---- gradient clipping (torch.nn.utils; traced by tj_compile, no break) --
 * tj_clip_grad_norm: total = the norm_type norm of all the gradients as one
 * vector (INFINITY: the largest |g|); every gradient is scaled in place by
 * min(1, max_norm / (total + 1e-6)). Returns total (f64 0-dim, current
 * scope), or NULL with an error; parameters without a gradient are skipped
 * (none: total 0). tj_clip_grad_value clamps every gradient to
 * [-clip_value, clip_value] in place; 0 or -1. */
tj_tensor *tj_clip_grad_norm(tj_tensor *const *params, int n, double max_norm, double norm_type);
int tj_clip_grad_value(tj_tensor *const *params, int n, double clip_value);

/* ---- learning-rate schedules (torch.optim.lr_scheduler, closed forms) ----
 * tj_lr_at gives the learning rate for step t (t = 0 for the first step):
 * feed it to tj_optimizer_set_lr before each step. With warmup > 0, steps
 * t < warmup ramp linearly from warmup_factor * base_lr to base_lr
 * (LinearLR), then the kind runs from its own step 0 at t = warmup (as
 * SequentialLR chains them). NAN with an error for a bad schedule. */
typedef enum {
    TJ_LR_CONSTANT,      /* base_lr */
    TJ_LR_STEP,          /* StepLR: base_lr gamma^floor(t / step_size) */
    TJ_LR_EXPONENTIAL,   /* ExponentialLR: base_lr gamma^t */
    TJ_LR_COSINE,        /* CosineAnnealingLR: min_lr + (base_lr - min_lr)(1 + cos(pi t / total)) / 2 */
    TJ_LR_LINEAR,        /* LinearLR: base_lr (start + (end - start) min(t, total) / total) */
    TJ_LR_MULTISTEP,     /* MultiStepLR: base_lr gamma^(milestones <= t) */
    TJ_LR_POLYNOMIAL,    /* PolynomialLR: base_lr (1 - min(t, total) / total)^power */
    TJ_LR_ONECYCLE,      /* OneCycleLR (base_lr is max_lr): from max_lr / div_factor up to max_lr over
                          * pct_start of total steps, then down to that / final_div_factor (cosine, or
                          * linear with anneal_linear; three_phase: up, down to the start, then lower) */
} tj_lr_kind;
typedef struct tj_lr_schedule {
    tj_lr_kind kind;
    int64_t warmup;                     /* steps of linear warmup first; 0: none */
    double warmup_factor;               /* the first warmup step's fraction of base_lr, in [0, 1] */
    int64_t step_size;                  /* STEP */
    double gamma;                       /* STEP, EXPONENTIAL, MULTISTEP */
    int64_t total;                      /* COSINE (T_max), LINEAR and POLYNOMIAL (total_iters), ONECYCLE (total_steps) */
    double min_lr;                      /* COSINE (eta_min) */
    double start_factor, end_factor;    /* LINEAR */
    const int64_t *milestones;          /* MULTISTEP: increasing steps */
    int nmilestones;
    double power;                       /* POLYNOMIAL (torch's default 1) */
    double pct_start, div_factor, final_div_factor;   /* ONECYCLE (torch's defaults 0.3, 25, 1e4) */
    bool three_phase, anneal_linear;    /* ONECYCLE */
} tj_lr_schedule;
double tj_lr_at(const tj_lr_schedule *s, double base_lr, int64_t t);
/* ReduceLROnPlateau: a schedule driven by a metric read on the host (a
 * validation loss). tj_plateau_step(p, metric) between steps: after more
 * than patience steps without an improvement beyond threshold (relative,
 * or absolute with threshold_abs), every group's lr is multiplied by factor
 * (not below min_lr; a change under eps is skipped), then cooldown steps
 * pass before bad steps count again. Returns 1 when it reduced a group's lr,
 * 0 when not (inside a traced function: a graph break), -1 with an error.
 * The optimizer must outlive the plateau. */
typedef struct tj_plateau tj_plateau;
typedef struct tj_plateau_options {
    bool maximize;            /* mode "max" (false: "min") */
    double factor;            /* 0.1; in [0, 1) */
    int64_t patience;         /* 10 */
    double threshold;         /* 1e-4 */
    bool threshold_abs;       /* threshold_mode "abs" (false: "rel") */
    int64_t cooldown;         /* 0 */
    double min_lr;            /* 0 */
    double eps;               /* 1e-8 */
} tj_plateau_options;
tj_plateau *tj_plateau_new(tj_optimizer *o, const tj_plateau_options *opt);   /* NULL: torch's defaults */
int tj_plateau_step(tj_plateau *p, double metric);
void tj_plateau_free(tj_plateau *p);
/* Every group's lr set to tj_lr_at(s, the lr the group was made with, t):
 * torch's scheduler.step() over all groups (their base_lrs); between calls
 * of a compiled step, as tj_optimizer_set_lr. 0 or -1. */
int tj_optimizer_schedule(tj_optimizer *o, const tj_lr_schedule *s, int64_t t);

TJ_API_END

#ifdef __cplusplus
}
#endif
#endif /* TJIT_TRAIN_H */
