/* lr_schedule.c - learning-rate schedules in closed form, as
 * torch.optim.lr_scheduler's StepLR, ExponentialLR, CosineAnnealingLR,
 * LinearLR, MultiStepLR, PolynomialLR and OneCycleLR, with an optional
 * linear warmup chained in front (SequentialLR).
 * A pure function of the step: the caller sets the optimizer's learning rate
 * from it (tj_optimizer_set_lr), which a compiled step reads as a tensor.
 */
#include <math.h>

#include "fe.h"

static bool bad_factor(double f)
{
    return !(f >= 0) || !isfinite(f);
}

static double anneal(const tj_lr_schedule *s, double from, double to, double pct)
{
    return s->anneal_linear ? (to - from) * pct + from : to + (from - to) / 2.0 * (cos(M_PI * pct) + 1);
}

/* OneCycleLR's phases: (end step, start lr, end lr), as torch lists them. */
static double one_cycle(const tj_lr_schedule *s, double max_lr, int64_t t)
{
    double initial = max_lr / s->div_factor, min_lr = initial / s->final_div_factor, n = (double)s->total;
    double ends[3], from[3], to[3];
    int np;
    if (s->three_phase) {
        np = 3;
        ends[0] = s->pct_start * n - 1, from[0] = initial, to[0] = max_lr;
        ends[1] = 2 * s->pct_start * n - 2, from[1] = max_lr, to[1] = initial;
        ends[2] = n - 1, from[2] = initial, to[2] = min_lr;
    } else {
        np = 2;
        ends[0] = s->pct_start * n - 1, from[0] = initial, to[0] = max_lr;
        ends[1] = n - 1, from[1] = max_lr, to[1] = min_lr;
    }
    double start = 0;
    for (int i = 0; i < np; i++) {
        if ((double)t <= ends[i] || i == np - 1)
            return anneal(s, from[i], to[i], ((double)t - start) / (ends[i] - start));
        start = ends[i];
    }
    return NAN;
}

double tj_lr_at(const tj_lr_schedule *s, double base_lr, int64_t t)
{
    if (!s) {
        rt_error("lr_at: the schedule is NULL");
        return NAN;
    }
    if (!(base_lr >= 0) || !isfinite(base_lr) || t < 0 || s->warmup < 0 ||
        (s->warmup && !(s->warmup_factor >= 0 && s->warmup_factor <= 1))) {
        rt_error("lr_at: base_lr %g, step %lld, warmup %lld, warmup_factor %g: need base_lr "
                 "and step >= 0, warmup >= 0 and warmup_factor in [0, 1]",
                 base_lr, (long long)t, (long long)s->warmup, s->warmup_factor);
        return NAN;
    }
    if (t < s->warmup)
        return base_lr * (s->warmup_factor + (1 - s->warmup_factor) * (double)t / (double)s->warmup);
    t -= s->warmup;
    switch (s->kind) {
    case TJ_LR_CONSTANT:
        return base_lr;
    case TJ_LR_STEP:
        if (s->step_size <= 0 || bad_factor(s->gamma))
            break;
        return base_lr * pow(s->gamma, (double)(t / s->step_size));
    case TJ_LR_EXPONENTIAL:
        if (bad_factor(s->gamma))
            break;
        return base_lr * pow(s->gamma, (double)t);
    case TJ_LR_COSINE:
        if (s->total <= 0 || !(s->min_lr >= 0) || !isfinite(s->min_lr))
            break;
        return s->min_lr + (base_lr - s->min_lr) * (1 + cos(M_PI * (double)t / (double)s->total)) / 2;
    case TJ_LR_LINEAR:
        if (s->total <= 0 || bad_factor(s->start_factor) || bad_factor(s->end_factor))
            break;
        return base_lr * (s->start_factor + (s->end_factor - s->start_factor) *
                                                (double)(t < s->total ? t : s->total) / (double)s->total);
    case TJ_LR_MULTISTEP: {
        if (bad_factor(s->gamma) || s->nmilestones < 0 || (s->nmilestones && !s->milestones))
            break;
        int passed = 0;
        for (int k = 0; k < s->nmilestones; k++) {
            if (k && s->milestones[k] <= s->milestones[k - 1]) {
                rt_error("lr_at: MULTISTEP milestones must increase (%lld after %lld)",
                         (long long)s->milestones[k], (long long)s->milestones[k - 1]);
                return NAN;
            }
            passed += s->milestones[k] <= t;
        }
        return base_lr * pow(s->gamma, passed);
    }
    case TJ_LR_POLYNOMIAL:
        if (s->total <= 0 || bad_factor(s->power))
            break;
        return base_lr * pow(1.0 - (double)(t < s->total ? t : s->total) / (double)s->total, s->power);
    case TJ_LR_ONECYCLE:
        if (s->total <= 0 || !(s->pct_start >= 0 && s->pct_start <= 1) || !(s->div_factor > 0) ||
            !isfinite(s->div_factor) || !(s->final_div_factor > 0) || !isfinite(s->final_div_factor))
            break;
        if (t > s->total) {
            rt_error("lr_at: ONECYCLE step %lld past total %lld", (long long)t, (long long)s->total);
            return NAN;
        }
        return one_cycle(s, base_lr, t);
    default:
        rt_error("lr_at: unknown schedule kind %d", (int)s->kind);
        return NAN;
    }
    rt_error("lr_at: kind %d with step_size %lld, gamma %g, total %lld, min_lr %g, factors %g -> %g, "
             "%d milestones, power %g, pct_start %g, div_factor %g, final_div_factor %g: need step_size > 0 "
             "(STEP), gamma >= 0 (STEP, EXPONENTIAL, MULTISTEP), total > 0 and min_lr >= 0 (COSINE), total > 0 "
             "and factors >= 0 (LINEAR), milestones for nmilestones >= 0 (MULTISTEP), total > 0 and power >= 0 "
             "(POLYNOMIAL), total > 0, pct_start in [0, 1] and div factors > 0 (ONECYCLE)",
             (int)s->kind, (long long)s->step_size, s->gamma, (long long)s->total, s->min_lr,
             s->start_factor, s->end_factor, s->nmilestones, s->power, s->pct_start, s->div_factor,
             s->final_div_factor);
    return NAN;
}
