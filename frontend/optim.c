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
#include "trace.h"

typedef enum { OPT_SGD, OPT_ADAM, OPT_RMSPROP, OPT_ADAGRAD } opt_kind;

enum { NSLOT = 3 };

struct tj_optimizer {
    opt_kind kind;
    int n;
    tj_tensor **params;            /* retained */
    tj_tensor **slot[NSLOT];       /* per-parameter state, NULL where the kind has none (kept) */
    const char *slot_name[NSLOT];  /* torch's state_dict names */
    tj_tensor *step;               /* f64 0-dim step count, Adam and Adagrad (kept) */
    tj_tensor *lr_t;               /* f64 0-dim learning rate the steps read (kept) */
    double momentum, weight_decay, beta1, beta2, eps, alpha, lr_decay;
    bool nesterov, decoupled, amsgrad, centered;
};

static tj_optimizer *opt_new(opt_kind kind, const char *what, tj_tensor *const *params, int n, double lr)
{
    if (fe_trace_current()) {
        rt_error("%s: made while a compiled function is traced (make it outside)", what);
        return NULL;
    }
    if (n < 0 || (n && !params)) {
        rt_error("%s: %d parameters", what, n);
        return NULL;
    }
    if (!isfinite(lr)) {
        rt_error("%s: lr %g: must be finite", what, lr);
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        if (!params[k] || !ir_dtype_is_float(params[k]->dtype)) {
            if (!rt_has_error())
                rt_error("%s: parameter %d is %s", what, k, params[k] ? "not a float tensor" : "NULL");
            return NULL;
        }
    }
    tj_optimizer *o = calloc(1, sizeof *o);
    if (o)
        o->params = calloc((size_t)n + 1, sizeof *o->params);
    if (!o || !o->params) {
        free(o);
        rt_error("%s: out of memory", what);
        return NULL;
    }
    o->kind = kind;
    for (int k = 0; k < n; k++)
        o->params[o->n++] = tj_retain(params[k]);
    if (!(o->lr_t = tj_keep(tj_scalar(TJ_F64, lr)))) {
        tj_optimizer_free(o);
        return NULL;
    }
    return o;
}

/* State tensors shaped like the parameters, filled with init (kept by the
 * optimizer), made up front so that a step traced into a compiled function
 * reads and writes concrete state. */
static int make_state(tj_optimizer *o, int s, const char *name, double init)
{
    o->slot_name[s] = name;
    if (!(o->slot[s] = calloc((size_t)o->n + 1, sizeof *o->slot[s]))) {
        rt_error("optimizer: out of memory");
        return -1;
    }
    for (int k = 0; k < o->n; k++) {
        tj_tensor *p = o->params[k];
        if (!(o->slot[s][k] = tj_keep(tj_full(p->dtype, p->ndim, p->shape, init))))
            return -1;
    }
    return 0;
}

static int make_step(tj_optimizer *o)
{
    return (o->step = tj_keep(tj_zeros(TJ_F64, 0, NULL))) ? 0 : -1;
}

static tj_optimizer *made(tj_optimizer *o, int rc)
{
    if (rc != 0) {
        tj_optimizer_free(o);
        return NULL;
    }
    return o;
}

tj_optimizer *tj_sgd(tj_tensor *const *params, int n, const tj_sgd_options *opt)
{
    tj_sgd_options d = {.lr = 1e-3};
    if (!opt)
        opt = &d;
    if (!(opt->lr >= 0) || !(opt->momentum >= 0) || !(opt->weight_decay >= 0) ||
        (opt->nesterov && opt->momentum <= 0)) {
        rt_error("sgd: lr %g, momentum %g, weight_decay %g, nesterov %d: lr, momentum and "
                 "weight_decay must be >= 0, and nesterov needs momentum > 0",
                 opt->lr, opt->momentum, opt->weight_decay, opt->nesterov);
        return NULL;
    }
    tj_optimizer *o = opt_new(OPT_SGD, "sgd", params, n, opt->lr);
    if (!o)
        return NULL;
    o->momentum = opt->momentum;
    o->weight_decay = opt->weight_decay;
    o->nesterov = opt->nesterov;
    return made(o, o->momentum ? make_state(o, 0, "momentum_buffer", 0) : 0);
}

tj_optimizer *tj_adam(tj_tensor *const *params, int n, const tj_adam_options *opt)
{
    tj_adam_options d = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    if (!opt)
        opt = &d;
    if (!(opt->lr >= 0) || !(opt->beta1 >= 0 && opt->beta1 < 1) ||
        !(opt->beta2 >= 0 && opt->beta2 < 1) || !(opt->eps >= 0) || !(opt->weight_decay >= 0)) {
        rt_error("adam: lr %g, betas (%g, %g), eps %g, weight_decay %g: need lr, eps, "
                 "weight_decay >= 0 and betas in [0, 1)",
                 opt->lr, opt->beta1, opt->beta2, opt->eps, opt->weight_decay);
        return NULL;
    }
    tj_optimizer *o = opt_new(OPT_ADAM, "adam", params, n, opt->lr);
    if (!o)
        return NULL;
    o->beta1 = opt->beta1;
    o->beta2 = opt->beta2;
    o->eps = opt->eps;
    o->weight_decay = opt->weight_decay;
    o->decoupled = opt->decoupled;
    o->amsgrad = opt->amsgrad;
    return made(o, make_state(o, 0, "exp_avg", 0) || make_state(o, 1, "exp_avg_sq", 0) ||
                       (o->amsgrad && make_state(o, 2, "max_exp_avg_sq", 0)) || make_step(o));
}

tj_optimizer *tj_rmsprop(tj_tensor *const *params, int n, const tj_rmsprop_options *opt)
{
    tj_rmsprop_options d = {.lr = 1e-2, .alpha = 0.99, .eps = 1e-8};
    if (!opt)
        opt = &d;
    if (!(opt->lr >= 0) || !(opt->alpha >= 0 && opt->alpha <= 1) || !(opt->eps >= 0) ||
        !(opt->weight_decay >= 0) || !(opt->momentum >= 0)) {
        rt_error("rmsprop: lr %g, alpha %g, eps %g, weight_decay %g, momentum %g: need lr, eps, "
                 "weight_decay, momentum >= 0 and alpha in [0, 1]",
                 opt->lr, opt->alpha, opt->eps, opt->weight_decay, opt->momentum);
        return NULL;
    }
    tj_optimizer *o = opt_new(OPT_RMSPROP, "rmsprop", params, n, opt->lr);
    if (!o)
        return NULL;
    o->alpha = opt->alpha;
    o->eps = opt->eps;
    o->weight_decay = opt->weight_decay;
    o->momentum = opt->momentum;
    o->centered = opt->centered;
    return made(o, make_state(o, 0, "square_avg", 0) ||
                       (o->momentum > 0 && make_state(o, 1, "momentum_buffer", 0)) ||
                       (o->centered && make_state(o, 2, "grad_avg", 0)));
}

tj_optimizer *tj_adagrad(tj_tensor *const *params, int n, const tj_adagrad_options *opt)
{
    tj_adagrad_options d = {.lr = 1e-2, .eps = 1e-10};
    if (!opt)
        opt = &d;
    if (!(opt->lr >= 0) || !(opt->lr_decay >= 0) || !(opt->weight_decay >= 0) ||
        !(opt->initial_accumulator_value >= 0) || !(opt->eps >= 0)) {
        rt_error("adagrad: lr %g, lr_decay %g, weight_decay %g, initial_accumulator_value %g, "
                 "eps %g: all must be >= 0",
                 opt->lr, opt->lr_decay, opt->weight_decay, opt->initial_accumulator_value, opt->eps);
        return NULL;
    }
    tj_optimizer *o = opt_new(OPT_ADAGRAD, "adagrad", params, n, opt->lr);
    if (!o)
        return NULL;
    o->lr_decay = opt->lr_decay;
    o->weight_decay = opt->weight_decay;
    o->eps = opt->eps;
    return made(o, make_state(o, 0, "sum", opt->initial_accumulator_value) || make_step(o));
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
    tj_release(o->step);
    tj_release(o->lr_t);
    free(o->params);
    free(o);
}

void tj_optimizer_zero_grad(tj_optimizer *o)
{
    for (int k = 0; o && k < o->n; k++)
        tj_zero_grad(o->params[k]);
}

/* ---- the learning rate and the state ------------------------------------------------ */

int tj_optimizer_set_lr(tj_optimizer *o, double lr)
{
    if (!o) {
        rt_error("optimizer set_lr: the optimizer is NULL");
        return -1;
    }
    if (!(lr >= 0) || !isfinite(lr)) {
        rt_error("optimizer set_lr: lr %g: must be finite and >= 0", lr);
        return -1;
    }
    fe_trace *tr = fe_trace_current();
    if (tr) {
        /* a traced step would keep this call's value for every later call:
         * the function runs eagerly (set the lr between calls instead) */
        fe_trace_break(tr, "tj_optimizer_set_lr inside the compiled function (a host value each call: "
                           "set it between calls, the compiled step reads the new value)");
        return 0;
    }
    tj_no_grad_begin();
    tj_scope_begin();
    int rc = tj_copy_(o->lr_t, tj_scalar(TJ_F64, lr));
    tj_scope_end();
    tj_no_grad_end();
    return rc;
}

double tj_optimizer_lr(const tj_optimizer *o)
{
    if (!o) {
        rt_error("optimizer lr: the optimizer is NULL");
        return NAN;
    }
    return tj_item(o->lr_t);
}

/* The listing: lr, step (where kept), then each slot's tensors by parameter. */
int tj_optimizer_num_state(const tj_optimizer *o)
{
    if (!o)
        return 0;
    int n = 1 + (o->step != NULL);
    for (int s = 0; s < NSLOT; s++)
        n += o->slot[s] ? o->n : 0;
    return n;
}

tj_tensor *tj_optimizer_state(const tj_optimizer *o, int i, char *name, size_t cap)
{
    int n = tj_optimizer_num_state(o);
    if (!o || i < 0 || i >= n) {
        rt_error("optimizer state: index %d out of [0, %d)", i, n);
        return NULL;
    }
    tj_tensor *t = NULL;
    if (i == 0) {
        t = o->lr_t;
        if (name && cap)
            snprintf(name, cap, "lr");
    } else if (i == 1 && o->step) {
        t = o->step;
        if (name && cap)
            snprintf(name, cap, "step");
    } else {
        i -= 1 + (o->step != NULL);
        for (int s = 0; s < NSLOT && !t; s++) {
            if (!o->slot[s])
                continue;
            if (i < o->n) {
                t = o->slot[s][i];
                if (name && cap)
                    snprintf(name, cap, "%s.%d", o->slot_name[s], i);
            } else {
                i -= o->n;
            }
        }
    }
    return t;
}

/* ---- the updates (under no_grad, in a scope) ---------------------------------------- */

/* x <- v in place; v NULL (an op failed) is -1 */
static int put(tj_tensor *x, tj_tensor *v)
{
    return v ? tj_copy_(x, v) : -1;
}

static tj_tensor *decayed(const tj_optimizer *o, tj_tensor *g, tj_tensor *p)
{
    return o->weight_decay ? tj_add(g, tj_mul_s(p, o->weight_decay)) : g;
}

static int sgd_update(tj_optimizer *o, int k, tj_tensor *g, tj_tensor *lr)
{
    tj_tensor *p = o->params[k];
    g = decayed(o, g, p);
    if (o->momentum) {
        tj_tensor *buf = o->slot[0][k];
        tj_tensor *nb = tj_add(tj_mul_s(buf, o->momentum), g);
        if (put(buf, nb) != 0)
            return -1;
        g = o->nesterov ? tj_add(g, tj_mul_s(nb, o->momentum)) : nb;
    }
    return put(p, tj_sub(p, tj_mul(g, lr)));
}

/* PyTorch's Adam: m, v moments; p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps),
 * bc_i = 1 - beta_i^step, v its running maximum with amsgrad. AdamW first
 * decays p by lr*weight_decay; Adam adds weight_decay*p to the gradient. */
static int adam_update(tj_optimizer *o, int k, tj_tensor *g, tj_tensor *lr_bc1, tj_tensor *sbc2)
{
    tj_tensor *p = o->params[k];
    if (o->weight_decay && o->decoupled) {
        /* 1 - lr weight_decay in f64, then in p's dtype, as torch's Python float */
        tj_tensor *keep = tj_cast(tj_rsub_s(tj_mul_s(o->lr_t, o->weight_decay), 1, 1), p->dtype);
        if (put(p, tj_mul(p, keep)) != 0)
            return -1;
    } else {
        g = decayed(o, g, p);
    }
    tj_tensor *m = o->slot[0][k], *v = o->slot[1][k];
    tj_tensor *nm = tj_add(tj_mul_s(m, o->beta1), tj_mul_s(g, 1 - o->beta1));
    tj_tensor *nv = tj_add(tj_mul_s(v, o->beta2), tj_mul_s(tj_square(g), 1 - o->beta2));
    if (put(m, nm) != 0 || put(v, nv) != 0)
        return -1;
    if (o->amsgrad) {
        tj_tensor *mx = o->slot[2][k];
        if (put(mx, tj_maximum(mx, nv)) != 0)
            return -1;
        nv = mx;
    }
    tj_tensor *denom = tj_add_s(tj_div(tj_sqrt(nv), sbc2), o->eps);
    return put(p, tj_sub(p, tj_div(tj_mul(nm, lr_bc1), denom)));
}

/* torch.optim.RMSprop: s = alpha s + (1 - alpha) g^2; centered subtracts the
 * square of the running mean of g; p -= lr g / (sqrt(s) + eps), through a
 * momentum buffer where momentum > 0. */
static int rmsprop_update(tj_optimizer *o, int k, tj_tensor *g, tj_tensor *lr)
{
    tj_tensor *p = o->params[k];
    g = decayed(o, g, p);
    tj_tensor *s = o->slot[0][k];
    if (put(s, tj_addcmul(tj_mul_s(s, o->alpha), g, g, 1 - o->alpha)) != 0)
        return -1;
    tj_tensor *avg;
    if (o->centered) {
        tj_tensor *ga = o->slot[2][k];
        if (put(ga, tj_add(tj_mul_s(ga, o->alpha), tj_mul_s(g, 1 - o->alpha))) != 0)
            return -1;
        avg = tj_sqrt(tj_addcmul(s, ga, ga, -1));
    } else {
        avg = tj_sqrt(s);
    }
    avg = tj_add_s(avg, o->eps);
    if (o->momentum > 0) {
        tj_tensor *buf = o->slot[1][k];
        if (put(buf, tj_addcdiv(tj_mul_s(buf, o->momentum), g, avg, 1)) != 0)
            return -1;
        return put(p, tj_sub(p, tj_mul(buf, lr)));
    }
    return put(p, tj_sub(p, tj_mul(tj_div(g, avg), lr)));
}

/* torch.optim.Adagrad: sum += g^2; p -= clr g / (sqrt(sum) + eps), clr =
 * lr / (1 + (step - 1) lr_decay). */
static int adagrad_update(tj_optimizer *o, int k, tj_tensor *g, tj_tensor *clr)
{
    tj_tensor *p = o->params[k];
    g = decayed(o, g, p);
    tj_tensor *sum = o->slot[0][k];
    if (put(sum, tj_addcmul(sum, g, g, 1)) != 0)
        return -1;
    return put(p, tj_sub(p, tj_mul(tj_div(g, tj_add_s(tj_sqrt(sum), o->eps)), clr)));
}

int tj_optimizer_step(tj_optimizer *o)
{
    if (!o) {
        rt_error("optimizer step: the optimizer is NULL");
        return -1;
    }
    tj_no_grad_begin();
    tj_scope_begin();
    int rc = 0;
    /* the scalars every parameter's update reads, f64 0-dim */
    tj_tensor *t = NULL, *lr = o->lr_t, *lr_bc1 = NULL, *sbc2 = NULL;
    if (o->step) {
        t = tj_add_s(o->step, 1);
        rc = put(o->step, t);
    }
    if (o->kind == OPT_ADAM) {
        /* 1 - beta^t = -expm1(t log beta) */
        tj_tensor *bc1 = o->beta1 ? tj_neg(tj_expm1(tj_mul_s(t, log(o->beta1)))) : tj_ones(TJ_F64, 0, NULL);
        lr_bc1 = tj_div(lr, bc1);
        sbc2 = o->beta2 ? tj_sqrt(tj_neg(tj_expm1(tj_mul_s(t, log(o->beta2))))) : tj_ones(TJ_F64, 0, NULL);
    } else if (o->kind == OPT_ADAGRAD) {
        lr = tj_div(lr, tj_add_s(tj_mul_s(tj_sub_s(t, 1), o->lr_decay), 1));   /* clr */
    }
    for (int k = 0; k < o->n && rc == 0; k++) {
        tj_tensor *g = tj_grad(o->params[k]);
        if (!g)
            continue;   /* no gradient reached it: left alone, as torch.optim does */
        /* the scalars in the parameter's dtype (as torch's Python floats are) */
        tj_dtype dt = o->params[k]->dtype;
        switch (o->kind) {
        case OPT_SGD:
            rc = sgd_update(o, k, g, tj_cast(lr, dt));
            break;
        case OPT_ADAM:
            rc = adam_update(o, k, g, tj_cast(lr_bc1, dt), tj_cast(sbc2, dt));
            break;
        case OPT_RMSPROP:
            rc = rmsprop_update(o, k, g, tj_cast(lr, dt));
            break;
        case OPT_ADAGRAD:
            rc = adagrad_update(o, k, g, tj_cast(lr, dt));
            break;
        }
    }
    tj_scope_end();
    tj_no_grad_end();
    return rc;
}
