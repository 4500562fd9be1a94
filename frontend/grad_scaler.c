/* grad_scaler.c - loss scaling for half-precision training, as
 * torch.cuda.amp.GradScaler: the loss is multiplied by a scale before the
 * backward so that small gradients do not flush to zero in f16; the
 * optimizer's gradients are divided by it again (unscale) and checked for
 * inf and NaN; a step with a non-finite gradient is skipped and the scale
 * backs off, and after growth_interval clean steps it grows.
 *
 * All of it is tensor ops on kept 0-dim tensors (the scale, the growth
 * tracker, and per optimizer a found-inf flag and its stage since the last
 * update: ready, unscaled or stepped), so a compiled training step that
 * scales, steps and updates is one graph with no break, and the parts may
 * sit on either side of a compiled call (unscale inside, update outside):
 * the stage travels as a tensor. Eagerly the flags are read on the host
 * (torch's errors for misuse, a branch for the skip); traced, the skip is
 * a mask on the optimizer's writes (fe_optim_step) and a step unscales
 * under a mask of the stage. The misuse checks of a traced call use host
 * flags of that trace alone (fe_trace_serial), so a trace that broke
 * leaves nothing behind for the eager run after it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "autograd.h"
#include "optim.h"
#include "trace.h"

enum { READY, UNSCALED, STEPPED };

typedef struct scaler_rec {
    const tj_optimizer *o;
    tj_tensor *found;            /* f32 0-dim: 1 where its unscale since the last update saw inf/NaN (kept) */
    tj_tensor *stage;            /* i32 0-dim: READY, UNSCALED or STEPPED since the last update (kept) */
    uint64_t trace;              /* the trace that set the host's copy of the stage (below) */
    int traced_stage;            /* that trace's stage, for its misuse checks */
} scaler_rec;

struct tj_grad_scaler {
    double growth_factor, backoff_factor;
    int64_t growth_interval;
    tj_tensor *scale;            /* f32 0-dim (kept) */
    tj_tensor *tracker;          /* i32 0-dim: clean steps since the scale last changed (kept) */
    int n, cap;
    scaler_rec *recs;
};

tj_grad_scaler *tj_grad_scaler_new(const tj_grad_scaler_options *opt)
{
    tj_grad_scaler_options d = {.init_scale = 65536, .growth_factor = 2, .backoff_factor = 0.5,
                                .growth_interval = 2000};
    if (!opt)
        opt = &d;
    if (!(opt->init_scale > 0) || !isfinite(opt->init_scale) || !(opt->growth_factor > 1) ||
        !isfinite(opt->growth_factor) || !(opt->backoff_factor > 0 && opt->backoff_factor < 1) ||
        opt->growth_interval < 1 || opt->growth_interval > INT32_MAX) {
        rt_error("grad_scaler: init_scale %g, growth_factor %g, backoff_factor %g, growth_interval %lld: "
                 "need a finite init_scale > 0, a finite growth_factor > 1, backoff_factor in (0, 1) and "
                 "growth_interval in [1, 2^31)",
                 opt->init_scale, opt->growth_factor, opt->backoff_factor, (long long)opt->growth_interval);
        return NULL;
    }
    if (fe_trace_refuse_state("grad_scaler_new"))
        return NULL;
    tj_grad_scaler *s = calloc(1, sizeof *s);
    if (!s) {
        rt_error("grad_scaler: out of memory");
        return NULL;
    }
    s->growth_factor = opt->growth_factor;
    s->backoff_factor = opt->backoff_factor;
    s->growth_interval = opt->growth_interval;
    s->scale = tj_keep(tj_scalar(TJ_F32, opt->init_scale));
    s->tracker = tj_keep(tj_zeros(TJ_I32, 0, NULL));
    if (!s->scale || !s->tracker) {
        tj_grad_scaler_free(s);
        return NULL;
    }
    return s;
}

void tj_grad_scaler_free(tj_grad_scaler *s)
{
    if (!s)
        return;
    for (int k = 0; k < s->n; k++) {
        tj_release(s->recs[k].found);
        tj_release(s->recs[k].stage);
    }
    free(s->recs);
    tj_release(s->scale);
    tj_release(s->tracker);
    free(s);
}

tj_tensor *tj_grad_scaler_scale(tj_grad_scaler *s, tj_tensor *loss)
{
    if (!s || !loss) {
        if (!rt_has_error() || !loss)
            rt_error("grad_scaler scale: %s is NULL", s ? "the loss" : "the scaler");
        return NULL;
    }
    if (!ir_dtype_is_float(loss->dtype)) {
        rt_error("grad_scaler scale: the loss is %s: scale a float loss", tj_dtype_name(loss->dtype));
        return NULL;
    }
    return tj_mul(loss, s->scale);
}

static scaler_rec *rec_of(tj_grad_scaler *s, const tj_optimizer *o, const char *what)
{
    if (!s || !o) {
        rt_error("%s: the %s is NULL", what, s ? "optimizer" : "scaler");
        return NULL;
    }
    for (int k = 0; k < s->n; k++)
        if (s->recs[k].o == o)
            return &s->recs[k];
    scaler_rec *r = rt_grow(s->recs, &s->cap, s->n, sizeof *r);
    if (!r) {
        rt_error("%s: out of memory", what);
        return NULL;
    }
    s->recs = r;
    /* the flags are state kept across calls: concrete even when the first
     * unscale is traced */
    fe_trace *tr = fe_trace_current();
    if (tr)
        fe_trace_pause(tr);
    tj_tensor *found = tj_keep(tj_zeros(TJ_F32, 0, NULL)), *stage = tj_keep(tj_zeros(TJ_I32, 0, NULL));
    if (tr)
        fe_trace_resume(tr);
    if (!found || !stage) {
        tj_release(found);
        tj_release(stage);
        return NULL;
    }
    s->recs[s->n] = (scaler_rec){.o = o, .found = found, .stage = stage};
    return &s->recs[s->n++];
}

/* The stage of r as this context knows it: eagerly its tensor's value;
 * traced, what this trace did so far (READY if nothing: the stage tensor
 * may still say otherwise, which the traced ops respect). */
static int stage_of(const scaler_rec *r)
{
    uint64_t t = fe_trace_serial();
    if (t)
        return r->trace == t ? r->traced_stage : READY;
    double v = tj_item(r->stage);
    return isnan(v) ? -1 : (int)v;
}

static int set_stage(scaler_rec *r, int stage)
{
    r->trace = fe_trace_serial();
    r->traced_stage = stage;
    tj_no_grad_begin();
    tj_scope_begin();
    int rc = tj_copy_(r->stage, tj_scalar(TJ_I32, stage));
    tj_scope_end();
    tj_no_grad_end();
    return rc;
}

/* g <- g / scale for every gradient of o (the reciprocal formed in f64 and
 * rounded to f32, as torch), and r->found <- whether any result is inf or
 * NaN. masked (traced): only where r's stage tensor is READY, so an unscale
 * that ran before the compiled call is not done twice. */
static int unscale(tj_grad_scaler *s, scaler_rec *r, tj_optimizer *o, bool masked)
{
    int n;
    tj_tensor *const *params = fe_optim_params(o, &n);
    tj_no_grad_begin();
    tj_scope_begin();
    tj_tensor *inv = tj_cast(tj_reciprocal(tj_cast(s->scale, TJ_F64)), TJ_F32);
    tj_tensor *done = masked ? tj_ne_s(r->stage, READY) : NULL;
    if (masked)
        inv = tj_where(done, tj_ones(TJ_F32, 0, NULL), inv);
    tj_tensor *found = tj_zeros(TJ_BOOL, 0, NULL);
    int rc = inv && found ? 0 : -1;
    for (int k = 0; k < n && rc == 0; k++) {
        tj_tensor *g = tj_grad(params[k]);
        if (!g)
            continue;
        tj_tensor *u = tj_mul(g, tj_cast(inv, g->dtype));
        found = tj_logical_or(found, tj_logical_not(tj_all(tj_isfinite(u), NULL, 0, false)));
        rc = u && found ? tj_copy_(g, u) : -1;
    }
    tj_tensor *f = tj_cast(found, TJ_F32);
    if (rc == 0)
        rc = tj_copy_(r->found, masked ? tj_where(done, r->found, f) : f);
    tj_scope_end();
    tj_no_grad_end();
    return rc;
}

int tj_grad_scaler_unscale(tj_grad_scaler *s, tj_optimizer *o)
{
    const char *what = "grad_scaler unscale";
    scaler_rec *r = rec_of(s, o, what);
    int st = r ? stage_of(r) : -1;
    if (st < 0)
        return -1;
    if (st == UNSCALED) {
        rt_error("%s: this optimizer's gradients were already unscaled since the last update "
                 "(call tj_grad_scaler_update after each step)", what);
        return -1;
    }
    if (st == STEPPED) {
        rt_error("%s: the optimizer already stepped since the last update", what);
        return -1;
    }
    if (unscale(s, r, o, fe_trace_serial() != 0) != 0)
        return -1;
    return set_stage(r, UNSCALED);
}

int tj_grad_scaler_step(tj_grad_scaler *s, tj_optimizer *o)
{
    const char *what = "grad_scaler step";
    scaler_rec *r = rec_of(s, o, what);
    int st = r ? stage_of(r) : -1;
    if (st < 0)
        return -1;
    if (st == STEPPED) {
        rt_error("%s: the optimizer already stepped since the last update (call "
                 "tj_grad_scaler_update after each step)", what);
        return -1;
    }
    bool traced = fe_trace_serial() != 0;
    if (st == READY && unscale(s, r, o, traced) != 0)
        return -1;
    int rc;
    if (traced) {
        /* the flag is a value of each call: the step is masked */
        tj_scope_begin();
        tj_tensor *skip = tj_ne_s(r->found, 0);
        rc = skip ? fe_optim_step(o, skip) : -1;
        tj_scope_end();
    } else {
        double f = tj_item(r->found);
        rc = isnan(f) ? -1 : f != 0 ? 0 : tj_optimizer_step(o);
    }
    return rc == 0 ? set_stage(r, STEPPED) : -1;
}

/* torch's _amp_update_scale_: a non-finite gradient in an optimizer unscaled
 * since the last update multiplies the scale by backoff_factor and zeroes
 * the tracker; otherwise the tracker counts the step, and at
 * growth_interval the scale grows by growth_factor (where that stays
 * finite) and the tracker restarts. Every optimizer's flags start again. */
int tj_grad_scaler_update(tj_grad_scaler *s)
{
    const char *what = "grad_scaler update";
    if (!s) {
        rt_error("%s: the scaler is NULL", what);
        return -1;
    }
    int seen = 0;
    for (int k = 0; k < s->n; k++)
        seen += fe_trace_serial() ? 1 : stage_of(&s->recs[k]) > READY;
    if (!seen) {
        rt_error("%s: no optimizer was unscaled or stepped through this scaler since the last "
                 "update (nothing to learn from)", what);
        return -1;
    }
    tj_no_grad_begin();
    tj_scope_begin();
    tj_tensor *found = tj_zeros(TJ_BOOL, 0, NULL);
    for (int k = 0; k < s->n; k++)
        found = tj_logical_or(found, tj_logical_and(tj_ne_s(s->recs[k].stage, READY),
                                                    tj_ne_s(s->recs[k].found, 0)));
    tj_tensor *t1 = tj_add_s(s->tracker, 1);
    tj_tensor *full = tj_eq_s(t1, (double)s->growth_interval);
    tj_tensor *grown = tj_mul_s(s->scale, s->growth_factor);
    tj_tensor *scale = tj_where(found, tj_mul_s(s->scale, s->backoff_factor),
                                tj_where(tj_logical_and(full, tj_isfinite(grown)), grown, s->scale));
    tj_tensor *zero = tj_zeros(TJ_I32, 0, NULL);
    tj_tensor *tracker = tj_where(tj_logical_or(found, full), zero, t1);
    int rc = scale && tracker ? 0 : -1;
    if (rc == 0)
        rc = tj_copy_(s->scale, scale);
    if (rc == 0)
        rc = tj_copy_(s->tracker, tracker);
    for (int k = 0; k < s->n && rc == 0; k++)
        rc = tj_copy_(s->recs[k].found, tj_zeros(TJ_F32, 0, NULL));
    tj_scope_end();
    tj_no_grad_end();
    for (int k = 0; k < s->n && rc == 0; k++)
        rc = set_stage(&s->recs[k], READY);
    return rc;
}

double tj_grad_scaler_get_scale(const tj_grad_scaler *s)
{
    if (!s) {
        rt_error("grad_scaler get_scale: the scaler is NULL");
        return NAN;
    }
    return tj_item(s->scale);
}

int tj_grad_scaler_num_state(const tj_grad_scaler *s)
{
    return s ? 2 : 0;
}

tj_tensor *tj_grad_scaler_state(const tj_grad_scaler *s, int i, char *name, size_t cap)
{
    int n = tj_grad_scaler_num_state(s);
    if (!s || i < 0 || i >= n) {
        rt_error("grad_scaler state: index %d out of [0, %d)", i, n);
        return NULL;
    }
    if (name && cap)
        snprintf(name, cap, "%s", i == 0 ? "scale" : "_growth_tracker");
    return i == 0 ? s->scale : s->tracker;
}
