/* optim.c - optimizers, as in torch.optim: SGD (momentum, Nesterov, weight
 * decay), Adam / AdamW (amsgrad), RMSprop (momentum, centered) and Adagrad.
 * A step reads each parameter's gradient and writes the parameter and the
 * optimizer's state in place (tj_copy_ under no_grad), in tjit ops: eagerly
 * it runs kernels; inside a compiled function the writes are recorded in the
 * graph and written back after each call, so a whole training step (forward,
 * backward, update) compiles to one plan. The step count and the learning
 * rate are tensors too, so the traced graph does not change with them: a
 * schedule (tj_optimizer_set_lr between calls, lr_schedule.c) never
 * retraces; set inside a traced function, it is a graph break. The state is
 * listed by name (tj_optimizer_state) for checkpoints.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "optim.h"
#include "trace.h"

typedef enum { OPT_SGD, OPT_ADAM, OPT_RMSPROP, OPT_ADAGRAD } opt_kind;

enum { NSLOT = 3 };

/* A parameter group (torch's param_groups): a run of the parameters with its
 * own hyperparameters and learning rate. */
typedef struct opt_group {
    int first, n;                  /* parameters first .. first + n - 1 */
    tj_tensor *lr_t;               /* f64 0-dim learning rate the steps read (kept) */
    double base_lr;                /* the lr it was made with: tj_optimizer_schedule's base */
    double momentum, weight_decay, beta1, beta2, eps, alpha, lr_decay;
    bool nesterov, decoupled, amsgrad, centered;
} opt_group;

struct tj_optimizer {
    opt_kind kind;
    const char *what;              /* "sgd", "adam", ... for messages */
    int n, cap;
    tj_tensor **params;            /* retained */
    tj_tensor **slot[NSLOT];       /* per-parameter state; NULL where its group has none (kept) */
    const char *slot_name[NSLOT];  /* torch's state_dict names */
    tj_tensor *step;               /* f64 0-dim step count, Adam and Adagrad (kept) */
    int ngroups, gcap;
    opt_group *groups;
    tj_tensor *skip;               /* while a traced masked step runs: bool 0-dim, true keeps everything */
};

static tj_optimizer *opt_new(opt_kind kind, const char *what)
{
    if (fe_trace_refuse_state(what))
        return NULL;
    tj_optimizer *o = calloc(1, sizeof *o);
    if (!o) {
        rt_error("%s: out of memory", what);
        return NULL;
    }
    o->kind = kind;
    o->what = what;
    return o;
}

/* The checks every group's parameters pass; then room for them. */
static int add_params(tj_optimizer *o, const char *what, tj_tensor *const *params, int n, double lr)
{
    char name[32];
    snprintf(name, sizeof name, "%s_add_group", o->what);
    if (fe_trace_refuse_state(name))
        return -1;
    if (n < 0 || (n && !params)) {
        rt_error("%s: %d parameters", what, n);
        return -1;
    }
    if (!isfinite(lr)) {
        rt_error("%s: lr %g: must be finite", what, lr);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        if (!params[k] || !ir_dtype_is_float(params[k]->dtype)) {
            if (!rt_has_error())
                rt_error("%s: parameter %d is %s", what, k, params[k] ? "not a float tensor" : "NULL");
            return -1;
        }
        for (int j = 0; j < o->n + k; j++) {
            if ((j < o->n ? o->params[j] : params[j - o->n]) == params[k]) {
                rt_error("%s: parameter %d is already optimized (as parameter %d): a parameter "
                         "belongs to one group", what, k, j < o->n ? j : j - o->n);
                return -1;
            }
        }
    }
    int need = o->n + n + 1;
    opt_group *gr = rt_grow(o->groups, &o->gcap, o->ngroups, sizeof *gr);
    bool ok = gr != NULL;
    if (ok)
        o->groups = gr;
    if (ok && need > o->cap) {
        tj_tensor **p = realloc(o->params, sizeof *p * (size_t)need);
        if ((ok = p != NULL))
            o->params = p;
        for (int s = 0; s < NSLOT && ok; s++) {
            tj_tensor **q = realloc(o->slot[s], sizeof *q * (size_t)need);
            if ((ok = q != NULL)) {
                memset(q + o->cap, 0, sizeof *q * (size_t)(need - o->cap));
                o->slot[s] = q;
            }
        }
        if (ok)
            o->cap = need;
    }
    if (!ok) {
        rt_error("%s: out of memory", what);
        return -1;
    }
    opt_group *g = &o->groups[o->ngroups];
    *g = (opt_group){.first = o->n, .base_lr = lr};
    if (!(g->lr_t = tj_keep(tj_scalar(TJ_F64, lr))))
        return -1;
    o->ngroups++;
    for (int k = 0; k < n; k++)
        o->params[o->n++] = tj_retain(params[k]);
    g->n = n;
    return 0;
}

/* State tensors shaped like group g's parameters, filled with init (kept by
 * the optimizer), made up front so that a step traced into a compiled
 * function reads and writes concrete state. */
static int make_state(tj_optimizer *o, opt_group *g, int s, const char *name, double init)
{
    o->slot_name[s] = name;
    for (int k = g->first; k < g->first + g->n; k++) {
        tj_tensor *p = o->params[k];
        if (!(o->slot[s][k] = tj_keep(tj_full(p->dtype, p->ndim, p->shape, init))))
            return -1;
    }
    return 0;
}

static int make_step(tj_optimizer *o)
{
    if (o->step)
        return 0;
    return (o->step = tj_keep(tj_zeros(TJ_F64, 0, NULL))) ? 0 : -1;
}

/* The group just added, its options copied in by the caller; rc != 0 undoes
 * a constructor's optimizer (made) or leaves an added group half made. */
static opt_group *last_group(tj_optimizer *o)
{
    return &o->groups[o->ngroups - 1];
}

static int check_kind(const tj_optimizer *o, opt_kind kind, const char *what)
{
    if (!o) {
        rt_error("%s: the optimizer is NULL", what);
        return -1;
    }
    if (o->kind != kind) {
        rt_error("%s: the optimizer is %s", what, o->what);
        return -1;
    }
    return 0;
}

static tj_optimizer *made(tj_optimizer *o, int group)
{
    if (group < 0) {
        tj_optimizer_free(o);
        return NULL;
    }
    return o;
}

int tj_sgd_add_group(tj_optimizer *o, tj_tensor *const *params, int n, const tj_sgd_options *opt)
{
    const char *what = o && o->ngroups == 0 ? "sgd" : "sgd add_group";
    if (check_kind(o, OPT_SGD, what) != 0)
        return -1;
    tj_sgd_options d = {.lr = 1e-3};
    if (!opt)
        opt = &d;
    if (!(opt->lr >= 0) || !(opt->momentum >= 0) || !(opt->weight_decay >= 0) ||
        (opt->nesterov && opt->momentum <= 0)) {
        rt_error("%s: lr %g, momentum %g, weight_decay %g, nesterov %d: lr, momentum and "
                 "weight_decay must be >= 0, and nesterov needs momentum > 0",
                 what, opt->lr, opt->momentum, opt->weight_decay, opt->nesterov);
        return -1;
    }
    if (add_params(o, what, params, n, opt->lr) != 0)
        return -1;
    opt_group *g = last_group(o);
    g->momentum = opt->momentum;
    g->weight_decay = opt->weight_decay;
    g->nesterov = opt->nesterov;
    return (g->momentum ? make_state(o, g, 0, "momentum_buffer", 0) : 0) ? -1 : o->ngroups - 1;
}

int tj_adam_add_group(tj_optimizer *o, tj_tensor *const *params, int n, const tj_adam_options *opt)
{
    const char *what = o && o->ngroups == 0 ? "adam" : "adam add_group";
    if (check_kind(o, OPT_ADAM, what) != 0)
        return -1;
    tj_adam_options d = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    if (!opt)
        opt = &d;
    if (!(opt->lr >= 0) || !(opt->beta1 >= 0 && opt->beta1 < 1) ||
        !(opt->beta2 >= 0 && opt->beta2 < 1) || !(opt->eps >= 0) || !(opt->weight_decay >= 0)) {
        rt_error("%s: lr %g, betas (%g, %g), eps %g, weight_decay %g: need lr, eps, "
                 "weight_decay >= 0 and betas in [0, 1)",
                 what, opt->lr, opt->beta1, opt->beta2, opt->eps, opt->weight_decay);
        return -1;
    }
    if (add_params(o, what, params, n, opt->lr) != 0)
        return -1;
    opt_group *g = last_group(o);
    g->beta1 = opt->beta1;
    g->beta2 = opt->beta2;
    g->eps = opt->eps;
    g->weight_decay = opt->weight_decay;
    g->decoupled = opt->decoupled;
    g->amsgrad = opt->amsgrad;
    return (make_state(o, g, 0, "exp_avg", 0) || make_state(o, g, 1, "exp_avg_sq", 0) ||
            (g->amsgrad && make_state(o, g, 2, "max_exp_avg_sq", 0)) || make_step(o))
               ? -1 : o->ngroups - 1;
}

int tj_rmsprop_add_group(tj_optimizer *o, tj_tensor *const *params, int n, const tj_rmsprop_options *opt)
{
    const char *what = o && o->ngroups == 0 ? "rmsprop" : "rmsprop add_group";
    if (check_kind(o, OPT_RMSPROP, what) != 0)
        return -1;
    tj_rmsprop_options d = {.lr = 1e-2, .alpha = 0.99, .eps = 1e-8};
    if (!opt)
        opt = &d;
    if (!(opt->lr >= 0) || !(opt->alpha >= 0 && opt->alpha <= 1) || !(opt->eps >= 0) ||
        !(opt->weight_decay >= 0) || !(opt->momentum >= 0)) {
        rt_error("%s: lr %g, alpha %g, eps %g, weight_decay %g, momentum %g: need lr, eps, "
                 "weight_decay, momentum >= 0 and alpha in [0, 1]",
                 what, opt->lr, opt->alpha, opt->eps, opt->weight_decay, opt->momentum);
        return -1;
    }
    if (add_params(o, what, params, n, opt->lr) != 0)
        return -1;
    opt_group *g = last_group(o);
    g->alpha = opt->alpha;
    g->eps = opt->eps;
    g->weight_decay = opt->weight_decay;
    g->momentum = opt->momentum;
    g->centered = opt->centered;
    return (make_state(o, g, 0, "square_avg", 0) ||
            (g->momentum > 0 && make_state(o, g, 1, "momentum_buffer", 0)) ||
            (g->centered && make_state(o, g, 2, "grad_avg", 0)))
               ? -1 : o->ngroups - 1;
}

int tj_adagrad_add_group(tj_optimizer *o, tj_tensor *const *params, int n, const tj_adagrad_options *opt)
{
    const char *what = o && o->ngroups == 0 ? "adagrad" : "adagrad add_group";
    if (check_kind(o, OPT_ADAGRAD, what) != 0)
        return -1;
    tj_adagrad_options d = {.lr = 1e-2, .eps = 1e-10};
    if (!opt)
        opt = &d;
    if (!(opt->lr >= 0) || !(opt->lr_decay >= 0) || !(opt->weight_decay >= 0) ||
        !(opt->initial_accumulator_value >= 0) || !(opt->eps >= 0)) {
        rt_error("%s: lr %g, lr_decay %g, weight_decay %g, initial_accumulator_value %g, "
                 "eps %g: all must be >= 0",
                 what, opt->lr, opt->lr_decay, opt->weight_decay, opt->initial_accumulator_value, opt->eps);
        return -1;
    }
    if (add_params(o, what, params, n, opt->lr) != 0)
        return -1;
    opt_group *g = last_group(o);
    g->lr_decay = opt->lr_decay;
    g->weight_decay = opt->weight_decay;
    g->eps = opt->eps;
    return (make_state(o, g, 0, "sum", opt->initial_accumulator_value) || make_step(o)) ? -1 : o->ngroups - 1;
}

tj_optimizer *tj_sgd(tj_tensor *const *params, int n, const tj_sgd_options *opt)
{
    tj_optimizer *o = opt_new(OPT_SGD, "sgd");
    return o ? made(o, tj_sgd_add_group(o, params, n, opt)) : NULL;
}

tj_optimizer *tj_adam(tj_tensor *const *params, int n, const tj_adam_options *opt)
{
    tj_optimizer *o = opt_new(OPT_ADAM, "adam");
    return o ? made(o, tj_adam_add_group(o, params, n, opt)) : NULL;
}

tj_optimizer *tj_rmsprop(tj_tensor *const *params, int n, const tj_rmsprop_options *opt)
{
    tj_optimizer *o = opt_new(OPT_RMSPROP, "rmsprop");
    return o ? made(o, tj_rmsprop_add_group(o, params, n, opt)) : NULL;
}

tj_optimizer *tj_adagrad(tj_tensor *const *params, int n, const tj_adagrad_options *opt)
{
    tj_optimizer *o = opt_new(OPT_ADAGRAD, "adagrad");
    return o ? made(o, tj_adagrad_add_group(o, params, n, opt)) : NULL;
}

void tj_optimizer_free(tj_optimizer *o)
{
    if (!o)
        return;
    for (int k = 0; k < o->n; k++) {
        tj_release(o->params[k]);
        for (int s = 0; s < NSLOT; s++)
            if (o->slot[s])
                tj_release(o->slot[s][k]);
    }
    for (int s = 0; s < NSLOT; s++)
        free(o->slot[s]);
    for (int g = 0; g < o->ngroups; g++)
        tj_release(o->groups[g].lr_t);
    tj_release(o->step);
    free(o->groups);
    free(o->params);
    free(o);
}

void tj_optimizer_zero_grad(tj_optimizer *o)
{
    for (int k = 0; o && k < o->n; k++)
        tj_zero_grad(o->params[k]);
}

/* ---- the learning rate and the state ------------------------------------------------ */

int tj_optimizer_num_groups(const tj_optimizer *o)
{
    return o ? o->ngroups : 0;
}

static opt_group *group_at(const tj_optimizer *o, int group, const char *what)
{
    if (!o) {
        rt_error("%s: the optimizer is NULL", what);
        return NULL;
    }
    if (group < 0 || group >= o->ngroups) {
        rt_error("%s: group %d out of [0, %d)", what, group, o->ngroups);
        return NULL;
    }
    return &o->groups[group];
}

/* Groups g0 .. g1 - 1 get the learning rates lr_of gives them, all checked
 * first; inside a trace, a graph break. */
static int set_lrs(tj_optimizer *o, int g0, int g1, const char *what, double (*lr_of)(const opt_group *, const void *),
                   const void *ctx)
{
    for (int g = g0; g < g1; g++) {
        double lr = lr_of(&o->groups[g], ctx);
        if (!(lr >= 0) || !isfinite(lr)) {
            if (!rt_has_error())
                rt_error("%s: lr %g for group %d: must be finite and >= 0", what, lr, g);
            return -1;
        }
    }
    fe_trace *tr = fe_trace_current();
    if (tr) {
        /* a traced step would keep this call's value for every later call:
         * the function runs eagerly (set the lr between calls instead) */
        char why[192];
        snprintf(why, sizeof why, "tj_%s inside the compiled function (a host value each call: set it "
                 "between calls, the compiled step reads the new value)", what);
        fe_trace_break(tr, why);
        return 0;
    }
    int rc = 0;
    tj_no_grad_begin();
    tj_scope_begin();
    for (int g = g0; g < g1 && rc == 0; g++)
        rc = tj_copy_(o->groups[g].lr_t, tj_scalar(TJ_F64, lr_of(&o->groups[g], ctx)));
    tj_scope_end();
    tj_no_grad_end();
    return rc;
}

static double lr_given(const opt_group *g, const void *ctx)
{
    (void)g;
    return *(const double *)ctx;
}

int tj_optimizer_set_lr(tj_optimizer *o, double lr)
{
    if (!o) {
        rt_error("optimizer_set_lr: the optimizer is NULL");
        return -1;
    }
    return set_lrs(o, 0, o->ngroups, "optimizer_set_lr", lr_given, &lr);
}

int tj_optimizer_set_group_lr(tj_optimizer *o, int group, double lr)
{
    const char *what = "optimizer_set_group_lr";
    return group_at(o, group, what) ? set_lrs(o, group, group + 1, what, lr_given, &lr) : -1;
}

typedef struct {
    const tj_lr_schedule *s;
    int64_t t;
} sched_at;

static double lr_scheduled(const opt_group *g, const void *ctx)
{
    const sched_at *a = ctx;
    return tj_lr_at(a->s, g->base_lr, a->t);
}

int tj_optimizer_schedule(tj_optimizer *o, const tj_lr_schedule *s, int64_t t)
{
    if (!o) {
        rt_error("optimizer_schedule: the optimizer is NULL");
        return -1;
    }
    return set_lrs(o, 0, o->ngroups, "optimizer_schedule", lr_scheduled, &(sched_at){s, t});
}

double tj_optimizer_group_lr(const tj_optimizer *o, int group)
{
    opt_group *g = group_at(o, group, "optimizer group_lr");
    return g ? tj_item(g->lr_t) : NAN;
}

double tj_optimizer_lr(const tj_optimizer *o)
{
    if (!o) {
        rt_error("optimizer lr: the optimizer is NULL");
        return NAN;
    }
    return tj_optimizer_group_lr(o, 0);
}

/* The listing: each group's lr, step (where kept), then each slot's tensors
 * by parameter (those whose group keeps that slot). */
int tj_optimizer_num_state(const tj_optimizer *o)
{
    if (!o)
        return 0;
    int n = o->ngroups + (o->step != NULL);
    for (int s = 0; s < NSLOT; s++)
        for (int k = 0; o->slot[s] && k < o->n; k++)
            n += o->slot[s][k] != NULL;
    return n;
}

tj_tensor *tj_optimizer_state(const tj_optimizer *o, int i, char *name, size_t cap)
{
    int n = tj_optimizer_num_state(o);
    if (!o || i < 0 || i >= n) {
        rt_error("optimizer state: index %d out of [0, %d)", i, n);
        return NULL;
    }
    char buf[64];
    tj_tensor *t = NULL;
    if (i < o->ngroups) {
        t = o->groups[i].lr_t;
        if (i)
            snprintf(buf, sizeof buf, "lr.%d", i);
        else
            snprintf(buf, sizeof buf, "lr");
    } else if (i == o->ngroups && o->step) {
        t = o->step;
        snprintf(buf, sizeof buf, "step");
    } else {
        i -= o->ngroups + (o->step != NULL);
        for (int s = 0; s < NSLOT && !t; s++)
            for (int k = 0; o->slot[s] && k < o->n && !t; k++)
                if (o->slot[s][k] && i-- == 0) {
                    t = o->slot[s][k];
                    snprintf(buf, sizeof buf, "%s.%d", o->slot_name[s], k);
                }
    }
    if (name && cap)
        snprintf(name, cap, "%s", buf);
    return t;
}

/* ---- the updates (under no_grad, in a scope) ---------------------------------------- */

/* x <- v in place; v NULL (an op failed) is -1. Under a traced masked step
 * (a gradient scaler found a non-finite gradient) x keeps its value. */
static int put(const tj_optimizer *o, tj_tensor *x, tj_tensor *v)
{
    if (v && o->skip)
        v = tj_where(o->skip, x, v);
    return v ? tj_copy_(x, v) : -1;
}

static tj_tensor *decayed(const opt_group *gr, tj_tensor *g, tj_tensor *p)
{
    return gr->weight_decay ? tj_add(g, tj_mul_s(p, gr->weight_decay)) : g;
}

static int sgd_update(tj_optimizer *o, const opt_group *gr, int k, tj_tensor *g, tj_tensor *lr)
{
    tj_tensor *p = o->params[k];
    g = decayed(gr, g, p);
    if (gr->momentum) {
        tj_tensor *buf = o->slot[0][k];
        tj_tensor *nb = tj_add(tj_mul_s(buf, gr->momentum), g);
        if (put(o, buf, nb) != 0)
            return -1;
        g = gr->nesterov ? tj_add(g, tj_mul_s(nb, gr->momentum)) : nb;
    }
    return put(o, p, tj_sub(p, tj_mul(g, lr)));
}

/* PyTorch's Adam: m, v moments; p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps),
 * bc_i = 1 - beta_i^step, v its running maximum with amsgrad. AdamW first
 * decays p by lr*weight_decay; Adam adds weight_decay*p to the gradient. */
static int adam_update(tj_optimizer *o, const opt_group *gr, int k, tj_tensor *g, tj_tensor *lr_bc1,
                       tj_tensor *sbc2)
{
    tj_tensor *p = o->params[k];
    if (gr->weight_decay && gr->decoupled) {
        /* 1 - lr weight_decay in f64, then in p's dtype, as torch's Python float */
        tj_tensor *keep = tj_cast(tj_rsub_s(tj_mul_s(gr->lr_t, gr->weight_decay), 1, 1), p->dtype);
        if (put(o, p, tj_mul(p, keep)) != 0)
            return -1;
    } else {
        g = decayed(gr, g, p);
    }
    tj_tensor *m = o->slot[0][k], *v = o->slot[1][k];
    tj_tensor *nm = tj_add(tj_mul_s(m, gr->beta1), tj_mul_s(g, 1 - gr->beta1));
    tj_tensor *nv = tj_add(tj_mul_s(v, gr->beta2), tj_mul_s(tj_square(g), 1 - gr->beta2));
    if (put(o, m, nm) != 0 || put(o, v, nv) != 0)
        return -1;
    if (gr->amsgrad) {
        tj_tensor *mx = o->slot[2][k];
        nv = tj_maximum(mx, nv);
        if (put(o, mx, nv) != 0)
            return -1;
    }
    tj_tensor *denom = tj_add_s(tj_div(tj_sqrt(nv), sbc2), gr->eps);
    return put(o, p, tj_sub(p, tj_div(tj_mul(nm, lr_bc1), denom)));
}

/* torch.optim.RMSprop: s = alpha s + (1 - alpha) g^2; centered subtracts the
 * square of the running mean of g; p -= lr g / (sqrt(s) + eps), through a
 * momentum buffer where momentum > 0. */
static int rmsprop_update(tj_optimizer *o, const opt_group *gr, int k, tj_tensor *g, tj_tensor *lr)
{
    tj_tensor *p = o->params[k];
    g = decayed(gr, g, p);
    tj_tensor *s = o->slot[0][k];
    tj_tensor *ns = tj_addcmul(tj_mul_s(s, gr->alpha), g, g, 1 - gr->alpha);
    if (put(o, s, ns) != 0)
        return -1;
    tj_tensor *avg;
    if (gr->centered) {
        tj_tensor *ga = o->slot[2][k];
        tj_tensor *nga = tj_add(tj_mul_s(ga, gr->alpha), tj_mul_s(g, 1 - gr->alpha));
        if (put(o, ga, nga) != 0)
            return -1;
        avg = tj_sqrt(tj_addcmul(ns, nga, nga, -1));
    } else {
        avg = tj_sqrt(ns);
    }
    avg = tj_add_s(avg, gr->eps);
    if (gr->momentum > 0) {
        tj_tensor *buf = o->slot[1][k];
        tj_tensor *nb = tj_addcdiv(tj_mul_s(buf, gr->momentum), g, avg, 1);
        if (put(o, buf, nb) != 0)
            return -1;
        return put(o, p, tj_sub(p, tj_mul(nb, lr)));
    }
    return put(o, p, tj_sub(p, tj_mul(tj_div(g, avg), lr)));
}

/* torch.optim.Adagrad: sum += g^2; p -= clr g / (sqrt(sum) + eps), clr =
 * lr / (1 + (step - 1) lr_decay). */
static int adagrad_update(tj_optimizer *o, const opt_group *gr, int k, tj_tensor *g, tj_tensor *clr)
{
    tj_tensor *p = o->params[k];
    g = decayed(gr, g, p);
    tj_tensor *sum = o->slot[0][k];
    tj_tensor *ns = tj_addcmul(sum, g, g, 1);
    if (put(o, sum, ns) != 0)
        return -1;
    return put(o, p, tj_sub(p, tj_mul(tj_div(g, tj_add_s(tj_sqrt(ns), gr->eps)), clr)));
}

/* One group's update; t the step count after this step (f64 0-dim). */
static int group_step(tj_optimizer *o, const opt_group *gr, tj_tensor *t)
{
    /* the scalars every parameter's update reads, f64 0-dim */
    tj_tensor *lr = gr->lr_t, *lr_bc1 = NULL, *sbc2 = NULL;
    if (o->kind == OPT_ADAM) {
        /* 1 - beta^t = -expm1(t log beta) */
        tj_tensor *bc1 = gr->beta1 ? tj_neg(tj_expm1(tj_mul_s(t, log(gr->beta1)))) : tj_ones(TJ_F64, 0, NULL);
        lr_bc1 = tj_div(lr, bc1);
        sbc2 = gr->beta2 ? tj_sqrt(tj_neg(tj_expm1(tj_mul_s(t, log(gr->beta2))))) : tj_ones(TJ_F64, 0, NULL);
    } else if (o->kind == OPT_ADAGRAD) {
        lr = tj_div(lr, tj_add_s(tj_mul_s(tj_sub_s(t, 1), gr->lr_decay), 1));   /* clr */
    }
    int rc = 0;
    for (int k = gr->first; k < gr->first + gr->n && rc == 0; k++) {
        tj_tensor *g = tj_grad(o->params[k]);
        if (!g)
            continue;   /* no gradient reached it: left alone, as torch.optim does */
        /* the scalars in the parameter's dtype (as torch's Python floats are) */
        tj_dtype dt = o->params[k]->dtype;
        switch (o->kind) {
        case OPT_SGD:
            rc = sgd_update(o, gr, k, g, tj_cast(lr, dt));
            break;
        case OPT_ADAM:
            rc = adam_update(o, gr, k, g, tj_cast(lr_bc1, dt), tj_cast(sbc2, dt));
            break;
        case OPT_RMSPROP:
            rc = rmsprop_update(o, gr, k, g, tj_cast(lr, dt));
            break;
        case OPT_ADAGRAD:
            rc = adagrad_update(o, gr, k, g, tj_cast(lr, dt));
            break;
        }
    }
    return rc;
}

int fe_optim_step(tj_optimizer *o, tj_tensor *skip)
{
    if (!o) {
        rt_error("optimizer step: the optimizer is NULL");
        return -1;
    }
    tj_no_grad_begin();
    tj_scope_begin();
    o->skip = skip;
    int rc = 0;
    tj_tensor *t = NULL;
    if (o->step) {
        t = tj_add_s(o->step, 1);
        rc = put(o, o->step, t);
    }
    for (int g = 0; g < o->ngroups && rc == 0; g++)
        rc = group_step(o, &o->groups[g], t);
    o->skip = NULL;
    tj_scope_end();
    tj_no_grad_end();
    return rc;
}

int tj_optimizer_step(tj_optimizer *o)
{
    return fe_optim_step(o, NULL);
}

tj_tensor *const *fe_optim_params(const tj_optimizer *o, int *n)
{
    *n = o ? o->n : 0;
    return o ? o->params : NULL;
}
