/* average.c - weight averaging, as torch.optim.swa_utils.AveragedModel: a
 * kept average beside each of a list of tensors (a model's parameters, and
 * its running statistics where wanted), folded in by tj_average_update as an
 * exponential moving average (avg = decay avg + (1 - decay) p) or SWA's
 * equal mean (avg += (p - avg) / (n + 1)); the first update copies. The
 * count is a kept tensor and the first update's copy a where, so an update
 * inside a compiled training step is traced with no break.
 */
#include <math.h>
#include <stdlib.h>

#include "autograd.h"
#include "trace.h"

struct tj_average {
    int n;
    bool ema;
    double decay;
    tj_tensor **params;   /* retained */
    tj_tensor **avg;      /* kept, no history */
    tj_tensor *count;     /* i64 0-dim: updates so far (n_averaged) (kept) */
};

void tj_average_free(tj_average *a)
{
    if (!a)
        return;
    for (int k = 0; k < a->n; k++) {
        tj_release(a->params[k]);
        tj_release(a->avg[k]);
    }
    tj_release(a->count);
    free(a->params);
    free(a->avg);
    free(a);
}

static tj_average *average_new(const char *what, tj_tensor *const *params, int n, bool ema, double decay)
{
    if (fe_trace_refuse_state(what))
        return NULL;
    if (n < 0 || (n && !params)) {
        rt_error("%s: %d tensors", what, n);
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        if (!params[k] || !ir_dtype_is_float(params[k]->dtype)) {
            if (!rt_has_error())
                rt_error("%s: tensor %d is %s", what, k, params[k] ? "not a float tensor" : "NULL");
            return NULL;
        }
    }
    if (rt_check_live((tj_tensor **)params, n, what) != 0)
        return NULL;
    tj_average *a = calloc(1, sizeof *a);
    if (a) {
        a->params = calloc((size_t)n + 1, sizeof *a->params);
        a->avg = calloc((size_t)n + 1, sizeof *a->avg);
    }
    if (!a || !a->params || !a->avg) {
        tj_average_free(a);
        rt_error("%s: out of memory", what);
        return NULL;
    }
    a->ema = ema;
    a->decay = decay;
    tj_no_grad_begin();
    int rc = (a->count = tj_keep(tj_zeros(TJ_I64, 0, NULL))) ? 0 : -1;
    for (; a->n < n && rc == 0; a->n++) {
        a->params[a->n] = tj_retain(params[a->n]);
        rc = (a->avg[a->n] = tj_keep(tj_clone(params[a->n]))) ? 0 : -1;
    }
    tj_no_grad_end();
    if (rc != 0) {
        tj_average_free(a);
        return NULL;
    }
    return a;
}

tj_average *tj_average_ema(tj_tensor *const *params, int n, double decay)
{
    if (!(decay >= 0 && decay <= 1)) {
        rt_error("average_ema: decay %g: must be in [0, 1]", decay);
        return NULL;
    }
    return average_new("average_ema", params, n, true, decay);
}

tj_average *tj_average_swa(tj_tensor *const *params, int n)
{
    return average_new("average_swa", params, n, false, 0);
}

int tj_average_update(tj_average *a)
{
    if (!a) {
        rt_error("average_update: the average is NULL");
        return -1;
    }
    if (rt_check_live(a->params, a->n, "average_update") != 0)
        return -1;
    tj_no_grad_begin();
    tj_scope_begin();
    tj_tensor *first = tj_eq_s(a->count, 0);
    tj_tensor *n1 = tj_add_s(a->count, 1);
    int rc = first && n1 ? 0 : -1;
    for (int k = 0; k < a->n && rc == 0; k++) {
        tj_tensor *p = a->params[k], *av = a->avg[k], *next;
        if (a->ema)   /* torch's EMA avg_fn: decay avg + (1 - decay) p */
            next = tj_add(tj_mul_s(av, a->decay), tj_mul_s(p, 1 - a->decay));
        else          /* AveragedModel's default: avg + (p - avg) / (n + 1) */
            next = tj_add(av, tj_div(tj_sub(p, av), tj_cast(n1, av->dtype)));
        tj_tensor *v = tj_where(first, p, next);
        rc = v ? tj_copy_(av, v) : -1;
    }
    if (rc == 0)
        rc = tj_copy_(a->count, n1);
    tj_scope_end();
    tj_no_grad_end();
    return rc;
}

tj_tensor *tj_average_get(const tj_average *a, int k)
{
    if (!a || k < 0 || k >= a->n) {
        rt_error("average_get: index %d out of [0, %d)", k, a ? a->n : 0);
        return NULL;
    }
    return a->avg[k];
}

int64_t tj_average_count(const tj_average *a)
{
    if (!a) {
        rt_error("average_count: the average is NULL");
        return -1;
    }
    double c = tj_item(a->count);
    return isnan(c) ? -1 : (int64_t)c;
}
