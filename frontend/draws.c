/* draws.c - the random draws of a traced graph (fe_draws, trace.h): each
 * random op traced is the call's draw j (RT_RNG_CALL | j in its offset
 * attribute) of numel(type) counters, in trace order, which is the order
 * eager reserves them in. Each run of the graph lays them out one after the
 * other (fe_draws_layout, with this call's symbol sizes: a dropout over a
 * symbolic batch draws as many counters as that batch has elements) and
 * reserves the total at once (runtime/random.h): fe_draws_begin, _end.
 */
#include <stdlib.h>

#include "trace.h"

uint64_t fe_draws_add(fe_draws *d, uint64_t n)
{
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 4;
        ir_type *t = realloc(d->t, (size_t)cap * sizeof *t);
        if (!t)
            return UINT64_MAX;
        d->t = t;
        d->cap = cap;
    }
    /* the count the op reserved; its traced type (symbolic dims) replaces
     * it when the node is made (fe_draws_type) */
    d->t[d->n] = (ir_type){.dtype = TJ_F32, .ndim = 1, .shape = {(int64_t)n}};
    return (uint64_t)d->n++;
}

void fe_draws_type(fe_draws *d, uint64_t j, const ir_type *t)
{
    if (j < (uint64_t)d->n)
        d->t[j] = *t;
}

bool fe_draws_symbolic(const fe_draws *d)
{
    for (int j = 0; j < d->n; j++)
        if (ir_type_has_sym(&d->t[j]))
            return true;
    return false;
}

uint64_t fe_draws_layout(const fe_draws *d, const int64_t *symval, uint64_t *at)
{
    uint64_t total = 0;
    for (int j = 0; j < d->n; j++) {
        const ir_type *t = &d->t[j];
        uint64_t n = 1;
        for (int k = 0; k < t->ndim; k++)
            n *= (uint64_t)ir_dim_at(t->shape[k], symval);
        at[j] = total;
        total += n;
    }
    return total;
}

void fe_draws_free(fe_draws *d)
{
    free(d->t);
    *d = (fe_draws){0};
}

void fe_draws_begin(fe_draws_run *r, const fe_draws *d, const int64_t *symval)
{
    r->on = d->n > 0;
    if (!r->on)
        return;
    r->at = d->n <= FE_DRAWS_FEW ? r->few : malloc(sizeof *r->at * (size_t)d->n);
    if (!r->at)
        rt_rng_call_begin(0, NULL, 0, &r->save);
    else
        rt_rng_call_begin(fe_draws_layout(d, symval, r->at), r->at, (uint64_t)d->n, &r->save);
}

void fe_draws_end(fe_draws_run *r)
{
    if (!r->on)
        return;
    rt_rng_call_end(&r->save);
    if (r->at != r->few)
        free(r->at);
    r->on = false;
}
