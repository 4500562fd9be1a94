/* ddp.c - data parallelism like DistributedDataParallel: parameters checked
 * and broadcast at start; gradients copied into buckets (parameters in
 * reverse order) by ready-hooks during the backward; a bucket's
 * non-blocking allreduce starts as soon as it is full (buckets start in
 * index order on every rank, as MPI's collectives must); tj_ddp_sync waits
 * and writes the means back as the gradients. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"

#define SIG_LEN 10   /* dtype, ndim, 8 dims: a parameter's signature */

typedef struct ddp_param {
    tj_ddp *d;
    tj_tensor *p;            /* the parameter (retained) */
    tj_tensor *slot;         /* its part of its bucket, shaped like it (kept) */
    int bucket;
    bool ready;              /* its gradient of this step is in the slot */
} ddp_param;

typedef struct ddp_bucket {
    tj_tensor *buf;          /* 1-D, the bucket's dtype (kept) */
    MPI_Datatype type;
    int64_t numel;
    int nparams, nready;
    bool started, done;
    MPI_Request req;
} ddp_bucket;

struct tj_ddp {
    int n, nb;
    ddp_param *params;
    ddp_bucket *buckets;
    int next;                /* the first bucket not started */
    int started_in_backward; /* of this step */
    bool no_sync;
    tj_ddp_stats stats;
};

/* Starts, in order, every bucket up to the first one not full; tests the
 * started ones (MPI progresses non-blocking collectives inside its calls). */
static int start_full(tj_ddp *d, bool in_backward)
{
    while (d->next < d->nb && d->buckets[d->next].nready == d->buckets[d->next].nparams) {
        ddp_bucket *b = &d->buckets[d->next++];
        if (dist_check(MPI_Iallreduce(MPI_IN_PLACE, tj_data(b->buf), (int)b->numel, b->type, MPI_SUM,
                                      MPI_COMM_WORLD, &b->req), "ddp: bucket allreduce") != 0)
            return -1;
        b->started = true;
        d->started_in_backward += in_backward;
    }
    for (int k = 0; k < d->next; k++) {
        ddp_bucket *b = &d->buckets[k];
        int flag = 0;
        if (!b->done && dist_check(MPI_Test(&b->req, &flag, MPI_STATUS_IGNORE), "ddp: bucket allreduce") != 0)
            return -1;
        b->done |= flag;
    }
    return 0;
}

/* The parameter's gradient (or zeros) into its slot; counts it ready. */
static int fill_slot(ddp_param *e)
{
    char s[64];
    if (e->ready) {
        tj_set_error("ddp: a second backward reached parameter %d (%s) before tj_ddp_sync "
                     "(accumulate gradients inside tj_ddp_no_sync)", (int)(e - e->d->params),
                     tj_describe(e->p, s, sizeof s));
        return -1;
    }
    tj_tensor *g = tj_grad(e->p);
    if (g ? tj_copy_(e->slot, g) != 0 : (memset(tj_data(e->slot), 0, (size_t)tj_numel(e->slot) *
                                         (tj_dtype_of(e->p) == TJ_F32 ? 4 : 8)), 0))
        return -1;
    e->ready = true;
    e->d->buckets[e->bucket].nready++;
    return 0;
}

static int on_grad_ready(tj_tensor *leaf, void *ctx)
{
    (void)leaf;
    ddp_param *e = ctx;
    if (e->d->no_sync)
        return 0;
    return fill_slot(e) == 0 ? start_full(e->d, true) : -1;
}

/* A signature as "f32[32,4]". */
static const char *sig_text(const int64_t *s, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "%s[", tj_dtype_name((tj_dtype)s[0]));
    for (int i = 0; i < s[1] && i < SIG_LEN - 2 && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)s[2 + i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

/* Same count, dtypes and shapes on every rank: an error names the first
 * parameter that differs and the ranks' views of it (the same on all). */
static int check_same(tj_tensor *const *params, int n)
{
    int world = tj_dist_world_size(), me = tj_dist_rank();
    int64_t mm[2] = {n, -n};
    MPI_Request req;
    if (dist_check(MPI_Iallreduce(MPI_IN_PLACE, mm, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD, &req),
                   "ddp: parameter check") != 0 || dist_wait(&req, "ddp: parameter check") != 0)
        return -1;
    if (mm[0] != -mm[1]) {
        tj_set_error("ddp: the ranks have different numbers of parameters (from %lld to %lld; "
                     "rank %d has %d)", (long long)-mm[1], (long long)mm[0], me, n);
        return -1;
    }
    int64_t *all = calloc((size_t)world * (size_t)n * SIG_LEN + 1, sizeof *all);
    int64_t *mine = calloc((size_t)n * SIG_LEN + 1, sizeof *mine);
    int rc = -1;
    if (!all || !mine) {
        tj_set_error("ddp: out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        int64_t *s = mine + (size_t)i * SIG_LEN;
        s[0] = tj_dtype_of(params[i]);
        s[1] = tj_ndim(params[i]);
        for (int k = 0; k < s[1] && k < SIG_LEN - 2; k++)
            s[2 + k] = tj_shape(params[i])[k];
    }
    if (dist_check(MPI_Iallgather(mine, n * SIG_LEN, MPI_INT64_T, all, n * SIG_LEN, MPI_INT64_T,
                                  MPI_COMM_WORLD, &req), "ddp: parameter check") != 0 ||
        dist_wait(&req, "ddp: parameter check") != 0)
        goto out;
    for (int i = 0; i < n; i++)
        for (int r = 1; r < world; r++) {
            const int64_t *a = all + (size_t)i * SIG_LEN, *b = all + ((size_t)r * n + i) * SIG_LEN;
            if (memcmp(a, b, SIG_LEN * sizeof *a)) {
                char x[96], y[96];
                tj_set_error("ddp: parameter %d differs between ranks: rank 0 has %s, rank %d has %s "
                             "(this is rank %d)", i, sig_text(a, x, sizeof x), r, sig_text(b, y, sizeof y), me);
                goto out;
            }
        }
    rc = 0;
out:
    free(all);
    free(mine);
    return rc;
}

/* Parameter i's value from rank 0 (through a copy, so its version moves). */
static int broadcast_param(tj_tensor *p)
{
    tj_tensor *tmp = tj_empty(tj_dtype_of(p), tj_ndim(p), tj_shape(p));
    int rc = tmp && tj_copy_(tmp, p) == 0 && tj_dist_broadcast(tmp, 0) == 0 ? 0 : -1;
    if (rc == 0 && tj_dist_rank() != 0) {
        tj_no_grad_begin();
        rc = tj_copy_(p, tmp);
        tj_no_grad_end();
    }
    tj_release(tmp);
    return rc;
}

/* Buckets of about cap bytes, parameters in reverse order, one dtype each. */
static int make_buckets(tj_ddp *d, double cap)
{
    d->buckets = calloc((size_t)d->n, sizeof *d->buckets);
    if (!d->buckets)
        return -1;
    double bytes = 0;
    for (int i = d->n - 1; i >= 0; i--) {
        tj_tensor *p = d->params[i].p;
        double sz = (double)tj_numel(p) * (tj_dtype_of(p) == TJ_F32 ? 4 : 8);
        ddp_bucket *b = d->nb ? &d->buckets[d->nb - 1] : NULL;
        MPI_Datatype t;
        dist_mpi_type(tj_dtype_of(p), &t);
        if (!b || b->type != t || (bytes > 0 && bytes + sz > cap)) {
            b = &d->buckets[d->nb++];
            b->type = t;
            bytes = 0;
        }
        d->params[i].bucket = (int)(b - d->buckets);
        b->numel += tj_numel(p);
        b->nparams++;
        bytes += sz;
    }
    tj_scope_begin();
    int rc = 0;
    int64_t off[d->nb];
    memset(off, 0, sizeof off);
    for (int k = 0; k < d->nb && rc == 0; k++) {
        ddp_bucket *b = &d->buckets[k];
        b->buf = tj_keep(tj_zeros(b->type == MPI_FLOAT ? TJ_F32 : TJ_F64, 1, &b->numel));
        rc = b->buf ? 0 : -1;
    }
    for (int i = d->n - 1; i >= 0 && rc == 0; i--) {
        ddp_param *e = &d->params[i];
        int64_t n = tj_numel(e->p), *o = &off[e->bucket];
        e->slot = tj_keep(tj_view(tj_slice(d->buckets[e->bucket].buf, 0, *o, *o + n, 1),
                                  tj_ndim(e->p), tj_shape(e->p)));
        *o += n;
        rc = e->slot ? 0 : -1;
    }
    tj_scope_end();
    return rc;
}

tj_ddp *tj_ddp_new(tj_tensor *const *params, int n, const tj_ddp_options *opt)
{
    char s[64];
    if (dist_ready() != 0)
        return NULL;
    if (!params || n <= 0) {
        tj_set_error("ddp: no parameters (n = %d)", n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        tj_dtype dt = params[i] ? tj_dtype_of(params[i]) : TJ_F32;
        if (!params[i] || (dt != TJ_F32 && dt != TJ_F64) || !tj_is_contiguous(params[i]) ||
            !tj_get_requires_grad(params[i])) {
            tj_set_error("ddp: parameter %d (%s) is not a contiguous f32 or f64 tensor that "
                         "requires grad", i, params[i] ? tj_describe(params[i], s, sizeof s) : "NULL");
            return NULL;
        }
    }
    if (check_same(params, n) != 0)
        return NULL;
    tj_ddp *d = calloc(1, sizeof *d);
    if (!d || !(d->params = calloc((size_t)n, sizeof *d->params))) {
        free(d);
        tj_set_error("ddp: out of memory");
        return NULL;
    }
    d->n = n;
    for (int i = 0; i < n; i++)
        d->params[i] = (ddp_param){.d = d, .p = tj_retain(params[i])};
    double mb = opt && opt->bucket_mb > 0 ? opt->bucket_mb : 25;
    int rc = make_buckets(d, mb * 1024 * 1024);
    for (int i = 0; i < n && rc == 0; i++)
        rc = broadcast_param(params[i]);
    for (int i = 0; i < n && rc == 0; i++)
        rc = tj_set_grad_hook(params[i], on_grad_ready, &d->params[i]);
    if (rc != 0) {
        if (!tj_last_error()[0])
            tj_set_error("ddp: out of memory");
        tj_ddp_free(d);
        return NULL;
    }
    d->stats.buckets = d->nb;
    for (int k = 0; k < d->nb; k++)
        d->stats.bytes += d->buckets[k].numel * (d->buckets[k].type == MPI_FLOAT ? 4 : 8);
    return d;
}

int tj_ddp_sync(tj_ddp *d)
{
    if (!d) {
        tj_set_error("ddp: sync: NULL");
        return -1;
    }
    if (d->no_sync)
        return 0;
    double t0 = dist_now();
    int rc = 0;
    for (int i = 0; i < d->n && rc == 0; i++)
        if (!d->params[i].ready)
            rc = fill_slot(&d->params[i]);   /* no gradient in this backward */
    if (rc == 0)
        rc = start_full(d, false);
    for (int k = 0; k < d->nb && rc == 0; k++) {
        ddp_bucket *b = &d->buckets[k];
        if (!b->done)
            rc = dist_wait(&b->req, "ddp: bucket allreduce");
        b->done = true;
        if (rc == 0)
            dist_scale(tj_data(b->buf), b->type, b->numel, 1.0 / tj_dist_world_size());
    }
    for (int i = 0; i < d->n && rc == 0; i++)
        rc = tj_set_grad(d->params[i].p, d->params[i].slot);
    d->stats.started_in_backward = d->nb ? (double)d->started_in_backward / d->nb : 0;
    d->stats.wait_s += dist_now() - t0;
    d->stats.syncs++;
    /* the next step starts empty (after a failure too: the caller aborts) */
    for (int i = 0; i < d->n; i++)
        d->params[i].ready = false;
    for (int k = 0; k < d->nb; k++)
        d->buckets[k] = (ddp_bucket){.buf = d->buckets[k].buf, .type = d->buckets[k].type,
                                     .numel = d->buckets[k].numel, .nparams = d->buckets[k].nparams};
    d->next = d->started_in_backward = 0;
    return rc;
}

void tj_ddp_no_sync(tj_ddp *d, bool on)
{
    if (d)
        d->no_sync = on;
}

void tj_ddp_stats_get(const tj_ddp *d, tj_ddp_stats *s)
{
    if (s)
        *s = d ? d->stats : (tj_ddp_stats){0};
}

void tj_ddp_free(tj_ddp *d)
{
    if (!d)
        return;
    for (int k = 0; k < d->next; k++)
        if (!d->buckets[k].done)
            dist_wait(&d->buckets[k].req, "ddp: bucket allreduce (free)");
    for (int i = 0; i < d->n; i++) {
        tj_set_grad_hook(d->params[i].p, NULL, NULL);
        tj_release(d->params[i].slot);
        tj_release(d->params[i].p);
    }
    for (int k = 0; d->buckets && k < d->nb; k++)
        tj_release(d->buckets[k].buf);
    free(d->buckets);
    free(d->params);
    free(d);
}
