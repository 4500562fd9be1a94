/* optim.c - optimizers: SGD (momentum, Nesterov, weight decay) and Adam /
 * AdamW, as in torch.optim. A step reads each parameter's gradient and writes
 * the parameter and the optimizer's state in place (tj_copy_ under no_grad),
 * in tjit ops: eagerly it runs kernels; inside a compiled function the writes
 * are recorded in the graph and written back after each call, so a whole
 * training step (forward, backward, update) compiles to one plan. The step
 * count is a tensor too, so the traced graph does not change with it.
 */
#include <math.h>
#include <stdlib.h>

#include "autograd.h"

typedef enum { OPT_SGD, OPT_ADAM } opt_kind;

struct tj_optimizer {
    opt_kind kind;
    int n;
    tj_tensor **params;     /* retained */
    tj_tensor **m, **v;     /* SGD: momentum buffers in m; Adam: moments (retained) */
    tj_tensor *step;        /* Adam: f64 0-dim step count (retained) */
    double lr, momentum, weight_decay, beta1, beta2, eps;
    bool nesterov, decoupled;
};

static tj_optimizer *opt_new(opt_kind kind, tj_tensor *const *params, int n)
{
    if (n < 0 || (n && !params)) {
        rt_error("optimizer: %d parameters", n);
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        if (!params[k] || !ir_dtype_is_float(params[k]->dtype)) {
            if (!rt_has_error())
                rt_error("optimizer: parameter %d is %s", k, params[k] ? "not a float tensor" : "NULL");
            return NULL;
        }
    }
    tj_optimizer *o = calloc(1, sizeof *o);
    if (o) {
        o->params = calloc((size_t)n + 1, sizeof *o->params);
        o->m = calloc((size_t)n + 1, sizeof *o->m);
        o->v = calloc((size_t)n + 1, sizeof *o->v);
    }
    if (!o || !o->params || !o->m || !o->v) {
        if (o) {
            free(o->params);
            free(o->m);
            free(o->v);
        }
        free(o);
        rt_error("optimizer: out of memory");
        return NULL;
    }
    o->kind = kind;
    o->n = n;
    for (int k = 0; k < n; k++)
        o->params[k] = tj_retain(params[k]);
    return o;
}

/* Zero state tensors shaped like the parameters (kept by the optimizer),
 * made up front so that a step traced into a compiled function reads and
 * writes concrete state. */
static int make_state(tj_optimizer *o, tj_tensor **slots)
{
    if (fe_trace_current()) {
        rt_error("optimizer: made while a compiled function is traced (make it outside)");
        return -1;
    }
    for (int k = 0; k < o->n; k++) {
        tj_tensor *p = o->params[k];
        if (!(slots[k] = tj_keep(tj_zeros(p->dtype, p->ndim, p->shape))))
            return -1;
    }
    return 0;
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
    tj_optimizer *o = opt_new(OPT_SGD, params, n);
    if (!o)
        return NULL;
    o->lr = opt->lr;
    o->momentum = opt->momentum;
    o->weight_decay = opt->weight_decay;
    o->nesterov = opt->nesterov;
    if (o->momentum && make_state(o, o->m) != 0) {
        tj_optimizer_free(o);
        return NULL;
    }
    return o;
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
    tj_optimizer *o = opt_new(OPT_ADAM, params, n);
    if (!o)
        return NULL;
    o->lr = opt->lr;
    o->beta1 = opt->beta1;
    o->beta2 = opt->beta2;
    o->eps = opt->eps;
    o->weight_decay = opt->weight_decay;
    o->decoupled = opt->decoupled;
    if (make_state(o, o->m) != 0 || make_state(o, o->v) != 0 ||
        !(o->step = tj_keep(tj_zeros(TJ_F64, 0, NULL)))) {
        tj_optimizer_free(o);
        return NULL;
    }
    return o;
}

void tj_optimizer_free(tj_optimizer *o)
{
    if (!o)
        return;
    for (int k = 0; k < o->n; k++) {
        tj_release(o->params[k]);
        tj_release(o->m[k]);
        tj_release(o->v[k]);
    }
    tj_release(o->step);
    free(o->params);
    free(o->m);
    free(o->v);
    free(o);
}

void tj_optimizer_zero_grad(tj_optimizer *o)
{
    for (int k = 0; o && k < o->n; k++)
        tj_zero_grad(o->params[k]);
}

static int sgd_update(tj_optimizer *o, int k, tj_tensor *g)
{
    tj_tensor *p = o->params[k];
    if (o->weight_decay)
        g = tj_add(g, tj_mul_s(p, o->weight_decay));
    if (o->momentum) {
        tj_tensor *buf = o->m[k];
        tj_tensor *nb = tj_add(tj_mul_s(buf, o->momentum), g);
        if (!nb || tj_copy_(buf, nb) != 0)
            return -1;
        g = o->nesterov ? tj_add(g, tj_mul_s(nb, o->momentum)) : nb;
    }
    tj_tensor *np = tj_sub(p, tj_mul_s(g, o->lr));
    return np ? tj_copy_(p, np) : -1;
}

/* PyTorch's Adam: m, v moments; p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps),
 * bc_i = 1 - beta_i^step. AdamW first decays p by lr*weight_decay; Adam adds
 * weight_decay*p to the gradient. */
static int adam_update(tj_optimizer *o, int k, tj_tensor *g, tj_tensor *bc1, tj_tensor *sbc2)
{
    tj_tensor *p = o->params[k];
    if (o->weight_decay && o->decoupled) {
        tj_tensor *dp = tj_mul_s(p, 1 - o->lr * o->weight_decay);
        if (!dp || tj_copy_(p, dp) != 0)
            return -1;
    } else if (o->weight_decay) {
        g = tj_add(g, tj_mul_s(p, o->weight_decay));
    }
    tj_tensor *m = o->m[k], *v = o->v[k];
    tj_tensor *nm = tj_add(tj_mul_s(m, o->beta1), tj_mul_s(g, 1 - o->beta1));
    tj_tensor *nv = tj_add(tj_mul_s(v, o->beta2), tj_mul_s(tj_square(g), 1 - o->beta2));
    if (!nm || !nv || tj_copy_(m, nm) != 0 || tj_copy_(v, nv) != 0)
        return -1;
    tj_tensor *denom = tj_add_s(tj_div(tj_sqrt(nv), tj_cast(sbc2, p->dtype)), o->eps);
    tj_tensor *upd = tj_div(tj_mul(nm, tj_cast(tj_mul_s(tj_reciprocal(bc1), o->lr), p->dtype)), denom);
    tj_tensor *np = tj_sub(p, upd);
    return np ? tj_copy_(p, np) : -1;
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
    tj_tensor *bc1 = NULL, *sbc2 = NULL;
    if (o->kind == OPT_ADAM) {
        tj_tensor *t = tj_add_s(o->step, 1);
        if (!t || tj_copy_(o->step, t) != 0) {
            rc = -1;
            goto out;
        }
        /* 1 - beta^t = -expm1(t log beta) */
        bc1 = tj_neg(tj_expm1(tj_mul_s(t, log(o->beta1))));
        sbc2 = tj_sqrt(tj_neg(tj_expm1(tj_mul_s(t, log(o->beta2)))));
        if (o->beta1 == 0)
            bc1 = tj_ones(TJ_F64, 0, NULL);
        if (o->beta2 == 0)
            sbc2 = tj_ones(TJ_F64, 0, NULL);
    }
    for (int k = 0; k < o->n && rc == 0; k++) {
        tj_tensor *g = tj_grad(o->params[k]);
        if (!g)
            continue;   /* no gradient reached it: left alone, as torch.optim does */
        rc = o->kind == OPT_SGD ? sgd_update(o, k, g) : adam_update(o, k, g, bc1, sbc2);
    }
out:
    tj_scope_end();
    tj_no_grad_end();
    return rc;
}
