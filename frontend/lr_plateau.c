/* lr_plateau.c - ReduceLROnPlateau: a learning-rate schedule driven by a
 * metric the caller reads on the host (a validation loss, say), as
 * torch.optim.lr_scheduler.ReduceLROnPlateau: after more than `patience`
 * steps without an improvement beyond the threshold, every group's
 * learning rate is multiplied by `factor` (not below min_lr), then
 * `cooldown` steps pass before bad steps count again. It sets the lrs the
 * optimizer's steps read (tj_optimizer_set_group_lr), between calls of a
 * compiled step; inside a traced function a step is a graph break.
 */
#include <math.h>
#include <stdlib.h>

#include "fe.h"
#include "trace.h"

struct tj_plateau {
    tj_optimizer *o;            /* not owned */
    tj_plateau_options opt;
    double best;
    int64_t bad, cooldown_left;
};

tj_plateau *tj_plateau_new(tj_optimizer *o, const tj_plateau_options *opt)
{
    tj_plateau_options d = {.factor = 0.1, .patience = 10, .threshold = 1e-4, .eps = 1e-8};
    if (!opt)
        opt = &d;
    if (!o) {
        rt_error("plateau: the optimizer is NULL");
        return NULL;
    }
    if (!(opt->factor >= 0 && opt->factor < 1) || opt->patience < 0 || !(opt->threshold >= 0) ||
        !isfinite(opt->threshold) || opt->cooldown < 0 || !(opt->min_lr >= 0) || !isfinite(opt->min_lr) ||
        !(opt->eps >= 0)) {
        rt_error("plateau: factor %g, patience %lld, threshold %g, cooldown %lld, min_lr %g, eps %g: need "
                 "factor in [0, 1), patience, cooldown >= 0, a finite threshold and min_lr >= 0, eps >= 0",
                 opt->factor, (long long)opt->patience, opt->threshold, (long long)opt->cooldown, opt->min_lr,
                 opt->eps);
        return NULL;
    }
    tj_plateau *p = calloc(1, sizeof *p);
    if (!p) {
        rt_error("plateau: out of memory");
        return NULL;
    }
    p->o = o;
    p->opt = *opt;
    p->best = opt->maximize ? -INFINITY : INFINITY;
    return p;
}

void tj_plateau_free(tj_plateau *p)
{
    free(p);
}

static bool better(const tj_plateau *p, double a)
{
    const tj_plateau_options *o = &p->opt;
    if (!o->maximize)
        return o->threshold_abs ? a < p->best - o->threshold : a < p->best * (1 - o->threshold);
    return o->threshold_abs ? a > p->best + o->threshold : a > p->best * (1 + o->threshold);
}

int tj_plateau_step(tj_plateau *p, double metric)
{
    if (!p) {
        rt_error("plateau step: the plateau is NULL");
        return -1;
    }
    if (isnan(metric)) {
        rt_error("plateau step: the metric is NaN");
        return -1;
    }
    fe_trace *tr = fe_trace_current();
    if (tr) {
        /* the metric is a host value of this call, and the lrs it sets are
         * read by the steps after it: the call runs eagerly */
        fe_trace_break(tr, "tj_plateau_step inside the compiled function (step it between calls with "
                           "the metric's value)");
        return 0;
    }
    if (better(p, metric)) {
        p->best = metric;
        p->bad = 0;
    } else {
        p->bad++;
    }
    if (p->cooldown_left > 0) {
        p->cooldown_left--;
        p->bad = 0;   /* bad steps in the cooldown do not count */
    }
    if (p->bad <= p->opt.patience)
        return 0;
    p->cooldown_left = p->opt.cooldown;
    p->bad = 0;
    int reduced = 0;
    for (int g = 0; g < tj_optimizer_num_groups(p->o); g++) {
        double old = tj_optimizer_group_lr(p->o, g), lr = fmax(old * p->opt.factor, p->opt.min_lr);
        if (isnan(old))
            return -1;
        if (old - lr > p->opt.eps) {   /* a change under eps is skipped, as torch's */
            if (tj_optimizer_set_group_lr(p->o, g, lr) != 0)
                return -1;
            reduced = 1;
        }
    }
    return reduced;
}
