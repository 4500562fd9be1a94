/* profile.c - the profiler's sessions and per-thread event buffers.
 *
 * tj_profile_begin starts a session (nested begins count; the outermost end
 * stops it). While one runs, rt_prof_flag is set and the hooks (profile.h)
 * append events to the calling thread's buffer: a list of fixed-size chunks
 * that only its thread writes, publishing each event by a release store of
 * the chunk's count, so recording takes no lock. Buffers are registered once
 * per thread (under the lock) and belong to the registry, not the thread, so
 * a thread that exits leaves its events for the report. A buffer that last
 * wrote in an older session is emptied by its own thread on its next event.
 *
 * tj_profile_end (every end, nested or not) copies the session's events from
 * every buffer into a snapshot (profile.h), which tj_profile_table/rows and
 * tj_profile_write_trace read (profile_report.c). Events recorded while an
 * end copies may be left out of that snapshot; none is read half-written.
 *
 * TJIT_PROFILE=1 (or TJIT_PROFILE_TRACE=path) starts a session when the
 * library loads; at exit it ends, the table goes to stderr and the trace to
 * TJIT_PROFILE_TRACE.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile.h"

#define CHUNK_EVENTS 4096
#define MAX_CHUNKS 256          /* per thread and session: 1M events, then dropped */
#define MAX_LANES 65535

typedef struct ev_chunk {
    _Atomic(struct ev_chunk *) next;   /* written by the owner, read by a snapshot */
    atomic_int n;
    rt_prof_ev ev[CHUNK_EVENTS];
} ev_chunk;

typedef struct prof_buf {
    struct prof_buf *next;       /* the registry */
    int lane;
    char name[32];
    atomic_uint session;         /* the session its events belong to */
    ev_chunk *first, *cur;
    atomic_int nchunks;          /* in use this session */
    atomic_llong dropped;
} prof_buf;

atomic_bool rt_prof_flag;

static struct {
    pthread_mutex_t mu;          /* everything below but the atomics */
    prof_buf *bufs;
    int nlanes;
    atomic_uint session;
    int depth;
    int64_t t_begin;
    char **names;
    uint32_t nnames, capnames;
    rt_prof_snap snap;
    bool have_snap, from_env;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local prof_buf *tl_buf;
static _Thread_local rt_prof_id tl_label = RT_PROF_NONE;

const char *const rt_prof_cat_names[RT_PROF_NCATS] = {"op", "kernel", "eager", "region", "graph",
                                                      "chunk", "block"};

int64_t rt_prof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

rt_prof_id rt_prof_label_set(rt_prof_id name)
{
    rt_prof_id prev = tl_label;
    tl_label = name;
    return prev;
}

rt_prof_id rt_prof_label(void) { return tl_label; }

/* ---- names ------------------------------------------------------------------ */

rt_prof_id rt_prof_name(const char *s)
{
    pthread_mutex_lock(&P.mu);
    rt_prof_id id = (rt_prof_id)IR_NUM_OPS + P.nnames;
    for (uint32_t k = 0; k < P.nnames; k++)
        if (!strcmp(P.names[k], s)) {
            id = (rt_prof_id)IR_NUM_OPS + k;
            goto out;
        }
    if (P.nnames == P.capnames) {
        uint32_t cap = P.capnames ? 2 * P.capnames : 64;
        char **n = realloc(P.names, sizeof *n * cap);
        if (!n) {
            id = (rt_prof_id)OP_copy;   /* out of memory: a name that exists */
            goto out;
        }
        P.names = n;
        P.capnames = cap;
    }
    if (!(P.names[P.nnames] = strdup(s)))
        id = (rt_prof_id)OP_copy;
    else
        P.nnames++;
out:
    pthread_mutex_unlock(&P.mu);
    return id;
}

const char *rt_prof_snap_name(const rt_prof_snap *s, rt_prof_id id)
{
    if (id == RT_PROF_NONE)
        return "parallel_for";
    if (id < (rt_prof_id)IR_NUM_OPS)
        return ir_ops[id].name;
    id -= (rt_prof_id)IR_NUM_OPS;
    return id < s->nnames ? s->names[id] : "?";
}

/* ---- per-thread buffers -------------------------------------------------------- */

static prof_buf *buf_new(void)
{
    prof_buf *b = calloc(1, sizeof *b);
    if (!b || !(b->first = calloc(1, sizeof *b->first))) {
        free(b);
        return NULL;
    }
    b->cur = b->first;
    atomic_init(&b->nchunks, 1);
    if (pthread_getname_np(pthread_self(), b->name, sizeof b->name) != 0 || !b->name[0])
        snprintf(b->name, sizeof b->name, "thread");
    pthread_mutex_lock(&P.mu);
    if (P.nlanes >= MAX_LANES) {
        pthread_mutex_unlock(&P.mu);
        free(b->first);
        free(b);
        return NULL;
    }
    b->lane = P.nlanes++;
    atomic_store(&b->session, atomic_load(&P.session));
    b->next = P.bufs;
    P.bufs = b;
    pthread_mutex_unlock(&P.mu);
    return b;
}

/* Empties b for session s (its own thread only). */
static void buf_reset(prof_buf *b, unsigned s)
{
    for (ev_chunk *c = b->first; c; c = atomic_load_explicit(&c->next, memory_order_relaxed))
        atomic_store_explicit(&c->n, 0, memory_order_relaxed);
    b->cur = b->first;
    atomic_store_explicit(&b->nchunks, 1, memory_order_relaxed);
    atomic_store(&b->dropped, 0);
    atomic_store_explicit(&b->session, s, memory_order_release);
}

void rt_prof_emit(rt_prof_id name, rt_prof_cat cat, int64_t t0, int64_t t1, int64_t bytes,
                  int64_t flops)
{
    prof_buf *b = tl_buf;
    if (!b && !(b = tl_buf = buf_new()))
        return;
    unsigned s = atomic_load_explicit(&P.session, memory_order_acquire);
    if (atomic_load_explicit(&b->session, memory_order_relaxed) != s)
        buf_reset(b, s);
    ev_chunk *c = b->cur;
    int n = atomic_load_explicit(&c->n, memory_order_relaxed);
    if (n == CHUNK_EVENTS) {
        ev_chunk *next = atomic_load_explicit(&c->next, memory_order_relaxed);
        if (!next && (atomic_load_explicit(&b->nchunks, memory_order_relaxed) >= MAX_CHUNKS ||
                      !(next = calloc(1, sizeof *next)))) {
            atomic_fetch_add_explicit(&b->dropped, 1, memory_order_relaxed);
            return;
        }
        atomic_store_explicit(&c->next, next, memory_order_release);
        c = b->cur = next;
        atomic_fetch_add_explicit(&b->nchunks, 1, memory_order_relaxed);
        n = 0;
    }
    c->ev[n] = (rt_prof_ev){t0, t1, bytes, flops, name, (uint16_t)b->lane, (uint8_t)cat};
    atomic_store_explicit(&c->n, n + 1, memory_order_release);
}

void rt_prof_eager_done(ir_op op, tj_tensor *const *in, int nin, const tj_tensor *out, int64_t t0)
{
    int64_t t1 = rt_prof_now();
    ir_type ty[8], oty;
    const ir_type *tp[8];
    int64_t bytes = 0;
    bool view = ir_ops[op].kind == IR_VIEW;
    for (int k = 0; k < nin && k < 8; k++) {
        tp[k] = NULL;
        if (!in[k])
            continue;
        rt_type_of(in[k], &ty[k]);
        tp[k] = &ty[k];
        int64_t distinct = 1;   /* a broadcast (stride 0) dim is read once */
        for (int d = 0; d < in[k]->ndim; d++)
            if (in[k]->strides[d] != 0)
                distinct *= in[k]->shape[d];
        if (!view)
            bytes += distinct * (int64_t)tj_dtype_size(in[k]->dtype);
    }
    rt_type_of(out, &oty);
    if (!view)
        bytes += ir_type_bytes(&oty);
    int64_t flops = nin <= 8 ? ir_flops(op, tp, nin, &oty) : -1;
    rt_prof_emit(rt_prof_op(op), RT_PROF_OP, t0, t1, bytes, flops);
}

/* ---- sessions ------------------------------------------------------------------- */

static int cmp_ev(const void *a_, const void *b_)
{
    const rt_prof_ev *a = a_, *b = b_;
    if (a->lane != b->lane)
        return a->lane < b->lane ? -1 : 1;
    if (a->t0 != b->t0)
        return a->t0 < b->t0 ? -1 : 1;
    return (a->t1 > b->t1) - (a->t1 < b->t1);   /* the longer (outer) event first */
}

static void snap_free(rt_prof_snap *s)
{
    free(s->ev);
    for (uint32_t k = 0; k < s->nnames; k++)
        free(s->names[k]);
    free(s->names);
    free(s->lane_names);
    memset(s, 0, sizeof *s);
}

/* Copies the running session's events (under P.mu). -1 when out of memory. */
static int snap_take(rt_prof_snap *s)
{
    unsigned sess = atomic_load(&P.session);
    int64_t total = 0;
    memset(s, 0, sizeof *s);
    for (prof_buf *b = P.bufs; b; b = b->next)
        if (atomic_load_explicit(&b->session, memory_order_acquire) == sess)
            total += (int64_t)(atomic_load(&b->nchunks) + 1) * CHUNK_EVENTS;
    s->nlanes = P.nlanes;
    s->ev = malloc(sizeof *s->ev * (size_t)(total + 1));
    s->lane_names = calloc((size_t)s->nlanes + 1, sizeof *s->lane_names);
    s->names = calloc((size_t)P.nnames + 1, sizeof *s->names);
    if (!s->ev || !s->lane_names || !s->names) {
        snap_free(s);
        return -1;
    }
    for (uint32_t k = 0; k < P.nnames; k++)
        if ((s->names[k] = strdup(P.names[k])))
            s->nnames = k + 1;
    for (prof_buf *b = P.bufs; b; b = b->next) {
        snprintf(s->lane_names[b->lane], sizeof s->lane_names[b->lane], "%s", b->name);
        if (atomic_load_explicit(&b->session, memory_order_acquire) != sess)
            continue;
        for (ev_chunk *c = b->first; c; c = atomic_load_explicit(&c->next, memory_order_acquire)) {
            int n = atomic_load_explicit(&c->n, memory_order_acquire);
            for (int k = 0; k < n && s->nev < total; k++)
                s->ev[s->nev++] = c->ev[k];
            if (n < CHUNK_EVENTS)
                break;
        }
        s->dropped += atomic_load(&b->dropped);
    }
    qsort(s->ev, (size_t)s->nev, sizeof *s->ev, cmp_ev);
    s->t_begin = P.t_begin;
    s->t_end = rt_prof_now();
    return 0;
}

int tj_profile_begin(void)
{
    pthread_mutex_lock(&P.mu);
    if (P.depth++ == 0) {
        atomic_fetch_add(&P.session, 1);
        P.t_begin = rt_prof_now();
        atomic_store(&rt_prof_flag, true);
    }
    pthread_mutex_unlock(&P.mu);
    return 0;
}

int tj_profile_end(void)
{
    pthread_mutex_lock(&P.mu);
    if (P.depth == 0) {
        pthread_mutex_unlock(&P.mu);
        rt_error("profile_end: no profiling session is running (tj_profile_end without "
                 "tj_profile_begin)");
        return -1;
    }
    if (--P.depth == 0)
        atomic_store(&rt_prof_flag, false);
    rt_prof_snap s;
    int rc = snap_take(&s);
    if (rc == 0) {
        snap_free(&P.snap);
        P.snap = s;
        P.have_snap = true;
    }
    pthread_mutex_unlock(&P.mu);
    if (rc)
        rt_error("profile_end: out of memory copying the events");
    return rc;
}

bool tj_profile_running(void) { return atomic_load(&rt_prof_flag); }

const rt_prof_snap *rt_prof_snap_get(const char *who)
{
    pthread_mutex_lock(&P.mu);
    if (P.have_snap)
        return &P.snap;
    pthread_mutex_unlock(&P.mu);
    rt_error("%s: no profiling session has ended yet (call tj_profile_begin, run, then "
             "tj_profile_end)", who);
    return NULL;
}

void rt_prof_snap_put(void) { pthread_mutex_unlock(&P.mu); }

/* ---- TJIT_PROFILE ------------------------------------------------------------------ */

static void env_report(void)
{
    if (!P.from_env || tj_profile_end() != 0)
        return;
    char *t = tj_profile_table(40);
    if (t)
        fputs(t, stderr);
    free(t);
    const char *path = getenv("TJIT_PROFILE_TRACE");
    if (path && *path) {
        if (tj_profile_write_trace(path) == 0)
            fprintf(stderr, "tjit profile: trace written to %s (load it in ui.perfetto.dev "
                            "or chrome://tracing)\n", path);
        else
            fprintf(stderr, "tjit profile: %s\n", tj_last_error());
    }
}

__attribute__((constructor)) static void env_start(void)
{
    const char *on = getenv("TJIT_PROFILE"), *trace = getenv("TJIT_PROFILE_TRACE");
    bool want = (on && *on && strcmp(on, "0") != 0) || (trace && *trace);
    if (!want)
        return;
    P.from_env = true;
    tj_profile_begin();
    atexit(env_report);
}
