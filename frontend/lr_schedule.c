/* lr_schedule.c - learning-rate schedules in closed form, as
 * torch.optim.lr_scheduler's StepLR, ExponentialLR, CosineAnnealingLR and
 * LinearLR, with an optional linear warmup chained in front (SequentialLR).
 * A pure function of the step: the caller sets the optimizer's learning rate
 * from it (tj_optimizer_set_lr), which a compiled step reads as a tensor.
 */
#include <math.h>

#include "fe.h"

static bool bad_factor(double f)
{
    return !(f >= 0) || !isfinite(f);
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
    default:
        rt_error("lr_at: unknown schedule kind %d", (int)s->kind);
        return NAN;
    }
    rt_error("lr_at: kind %d with step_size %lld, gamma %g, total %lld, min_lr %g, factors %g -> %g: "
             "need step_size > 0 (STEP), gamma >= 0 (STEP, EXPONENTIAL), total > 0 and min_lr >= 0 "
             "(COSINE), total > 0 and factors >= 0 (LINEAR)",
             (int)s->kind, (long long)s->step_size, s->gamma, (long long)s->total, s->min_lr,
             s->start_factor, s->end_factor);
    return NAN;
}
