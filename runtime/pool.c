/* pool.c - the persistent thread pool behind rt_parallel_for.
 *
 * rt_parallel_for(n, grain, fn, ctx) cuts [0, n) into c contiguous chunks,
 * c = min(threads, n / grain), as equal as possible; rt_parallel_tasks(n, fn,
 * ctx) makes each item a chunk of its own (for a few long tasks). The
 * boundaries depend only on n, grain and the thread count, never on timing,
 * so a kernel that reduces per chunk gives the same bits on every run with
 * the same thread count. The chunks are then claimed dynamically by the
 * caller and the workers.
 *
 * Hand-off: the caller writes the job, then publishes it by storing one atomic
 * word `claim` = generation(32) | chunks(16) | next chunk(16). Workers spin on
 * that word for RT_SPIN_NS (pause instruction), then sleep on a condition
 * variable; the caller wakes sleepers only when there are some. Workers beyond
 * the active count (after tj_set_num_threads lowered it) park on another
 * condition variable and cost a job nothing. A thread claims a chunk with a CAS on `claim`; a CAS of a
 * worker that looked at an older generation fails, so a late worker can never
 * run a chunk of the wrong job. Each finished chunk bumps `done`; the caller
 * spins, then sleeps, until done == chunks. The job fields are read only after
 * a successful claim and rewritten only after every chunk is done.
 *
 * Nested calls (from inside a chunk) and calls made while another user thread
 * owns the pool run the same chunks serially on the calling thread.
 * Workers start on the first parallel call (more are started if
 * tj_set_num_threads raises the count) and are stopped and joined at exit.
 *
 * Thread count: TJIT_NUM_THREADS, else the CPUs this process may run on
 * (sched_getaffinity), at most RT_MAX_THREADS.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "blas.h"
#include "profile.h"

#define RT_MAX_THREADS 256
#define RT_MAX_TASKS 0xffff   /* chunks of one job: claim's 16-bit fields */
/* How long an idle worker (or a waiting caller) spins before sleeping: long
 * enough to cover the gap between two eager ops, short enough not to steal a
 * core from other work for long. Waking a sleeper costs a futex syscall
 * (about 2-8 us on the VMs measured). */
#define RT_SPIN_NS 20000

typedef struct pool_job {
    rt_range_fn fn;
    void *ctx;
    int64_t n;
    rt_prof_id label;   /* while profiling: what the chunks are part of */
} pool_job;

static struct {
    pthread_once_t once;
    atomic_int nthreads;           /* active count, caller included */
    pthread_mutex_t run_mu;        /* held by the thread whose job is in flight */
    pool_job job;
    _Atomic uint64_t claim;        /* gen << 32 | chunks << 16 | next */
    atomic_int done;
    atomic_bool stop;
    /* workers */
    pthread_t tid[RT_MAX_THREADS];
    int nworkers;                  /* started; changed only under run_mu */
    uint32_t start_gen;            /* the generation before the job that starts workers */
    bool hooks;                    /* atexit/atfork registered */
    /* sleeping */
    pthread_mutex_t wake_mu;
    pthread_cond_t wake_cv;
    pthread_cond_t park_cv;        /* workers beyond the active count */
    atomic_int sleepers;
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;
    atomic_bool caller_sleeps;
} pool = {
    .once = PTHREAD_ONCE_INIT,
    .run_mu = PTHREAD_MUTEX_INITIALIZER,
    .wake_mu = PTHREAD_MUTEX_INITIALIZER,
    .wake_cv = PTHREAD_COND_INITIALIZER,
    .park_cv = PTHREAD_COND_INITIALIZER,
    .done_mu = PTHREAD_MUTEX_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
};

/* True on pool workers, and on a caller while it runs chunks. */
static _Thread_local bool in_pool;

#define CLAIM_GEN(c) ((uint32_t)((c) >> 32))
#define CLAIM_CHUNKS(c) ((int)(((c) >> 16) & 0xffff))
#define CLAIM_NEXT(c) ((int)((c) & 0xffff))

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- configuration ---------------------------------------------------------- */

static int default_threads(void)
{
    const char *env = getenv("TJIT_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 1)
            return v > RT_MAX_THREADS ? RT_MAX_THREADS : (int)v;
    }
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    if (n < 1)
        n = 1;
    return n > RT_MAX_THREADS ? RT_MAX_THREADS : n;
}

static void pool_config(void) { atomic_store(&pool.nthreads, default_threads()); }

int rt_threads(void)
{
    pthread_once(&pool.once, pool_config);
    return atomic_load_explicit(&pool.nthreads, memory_order_relaxed);
}

int tj_num_threads(void) { return rt_threads(); }

int rt_threads_here(void) { return in_pool ? 1 : rt_threads(); }

int tj_parallel_for(int64_t n, int64_t grain, tj_range_fn fn, void *ctx)
{
    if (!fn) {
        rt_error("parallel_for: the function is NULL");
        return -1;
    }
    rt_parallel_for(n, grain, fn, ctx);
    return 0;
}

void tj_set_num_threads(int n)
{
    if (n < 1) {
        rt_error("set_num_threads: the count must be at least 1, got %d", n);
        return;
    }
    if (n > RT_MAX_THREADS)
        n = RT_MAX_THREADS;
    pthread_once(&pool.once, pool_config);
    pthread_mutex_lock(&pool.wake_mu);
    atomic_store(&pool.nthreads, n);
    pthread_cond_broadcast(&pool.park_cv);   /* parked workers may be active again */
    pthread_mutex_unlock(&pool.wake_mu);
    rt_blas_set_threads(n);
}

/* ---- chunks ------------------------------------------------------------------ */

static void chunk_range(int64_t n, int chunks, int k, int64_t *b, int64_t *e)
{
    int64_t base = n / chunks, rem = n % chunks;
    *b = k * base + (k < rem ? k : rem);
    *e = *b + base + (k < rem);
}

/* Claims and runs chunks of generation gen until none is left. */
static void run_chunks(uint32_t gen)
{
    uint64_t c = atomic_load_explicit(&pool.claim, memory_order_acquire);
    for (;;) {
        if (CLAIM_GEN(c) != gen || CLAIM_NEXT(c) >= CLAIM_CHUNKS(c))
            return;
        if (!atomic_compare_exchange_weak_explicit(&pool.claim, &c, c + 1,
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        int chunks = CLAIM_CHUNKS(c);
        int64_t b, e;
        chunk_range(pool.job.n, chunks, CLAIM_NEXT(c), &b, &e);
        if (rt_prof_on()) {   /* each chunk an event in its thread's lane */
            int64_t t0 = rt_prof_now();
            pool.job.fn(pool.job.ctx, b, e);
            rt_prof_emit(pool.job.label, RT_PROF_CHUNK, t0, rt_prof_now(), 0, -1);
        } else {
            pool.job.fn(pool.job.ctx, b, e);
        }
        int d = atomic_fetch_add_explicit(&pool.done, 1, memory_order_seq_cst) + 1;
        if (d == chunks && atomic_load_explicit(&pool.caller_sleeps, memory_order_seq_cst)) {
            pthread_mutex_lock(&pool.done_mu);
            pthread_cond_signal(&pool.done_cv);
            pthread_mutex_unlock(&pool.done_mu);
        }
        c = atomic_load_explicit(&pool.claim, memory_order_acquire);
    }
}

/* ---- workers ------------------------------------------------------------------ */

/* One spin of a wait: relaxes the CPU; true once RT_SPIN_NS have passed
 * since the first spin (the clock is read every 64 spins; *until starts 0). */
static bool spun_out(int spins, int64_t *until)
{
    cpu_relax();
    if (spins & 63)
        return false;
    int64_t t = now_ns();
    if (!*until)
        *until = t + RT_SPIN_NS;
    return t > *until;
}

/* Waits until the generation differs from seen (or the pool stops). */
static uint32_t worker_wait(uint32_t seen)
{
    int64_t until = 0;
    for (int spins = 0;; spins++) {
        uint32_t g = CLAIM_GEN(atomic_load_explicit(&pool.claim, memory_order_acquire));
        if (g != seen || atomic_load_explicit(&pool.stop, memory_order_relaxed))
            return g;
        if (spun_out(spins, &until))
            break;
    }
    pthread_mutex_lock(&pool.wake_mu);
    atomic_fetch_add_explicit(&pool.sleepers, 1, memory_order_seq_cst);
    uint32_t g;
    while ((g = CLAIM_GEN(atomic_load_explicit(&pool.claim, memory_order_seq_cst))) == seen &&
           !atomic_load_explicit(&pool.stop, memory_order_seq_cst))
        pthread_cond_wait(&pool.wake_cv, &pool.wake_mu);
    atomic_fetch_sub_explicit(&pool.sleepers, 1, memory_order_relaxed);
    pthread_mutex_unlock(&pool.wake_mu);
    return g;
}

/* A worker beyond the active count (tj_set_num_threads lowered it) sleeps
 * here, not counted as a sleeper, so jobs do not pay to wake it. */
static void worker_park(int id)
{
    pthread_mutex_lock(&pool.wake_mu);
    while (id + 1 >= atomic_load(&pool.nthreads) && !atomic_load(&pool.stop))
        pthread_cond_wait(&pool.park_cv, &pool.wake_mu);
    pthread_mutex_unlock(&pool.wake_mu);
}

static void *worker_main(void *arg)
{
    int id = (int)(intptr_t)arg;   /* worker id is thread number id + 1 (the caller is 0) */
    in_pool = true;
    /* The generation before the job this worker was started for (set before
     * pthread_create), so a worker that starts late still joins that job. */
    uint32_t seen = pool.start_gen;
    for (;;) {
        if (id + 1 >= atomic_load(&pool.nthreads)) {
            worker_park(id);
            seen = CLAIM_GEN(atomic_load_explicit(&pool.claim, memory_order_acquire));
        }
        seen = worker_wait(seen);
        if (atomic_load_explicit(&pool.stop, memory_order_acquire))
            return NULL;
        if (id + 1 < atomic_load_explicit(&pool.nthreads, memory_order_relaxed))
            run_chunks(seen);
    }
}

static void pool_stop(void);
static void pool_after_fork(void);

static void register_hooks(void)
{
    if (pool.hooks)
        return;
    pool.hooks = true;
    atexit(pool_stop);
    pthread_atfork(NULL, NULL, pool_after_fork);
}

/* Starts workers up to want (called under run_mu). Fewer is fine: the
 * caller then runs more chunks itself. */
static void start_workers(int want)
{
    register_hooks();
    pool.start_gen = CLAIM_GEN(atomic_load_explicit(&pool.claim, memory_order_relaxed));
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);   /* workers never take signals */
    while (pool.nworkers < want) {
        int id = pool.nworkers;
        if (pthread_create(&pool.tid[id], NULL, worker_main, (void *)(intptr_t)id) != 0)
            break;
        char name[24];
        snprintf(name, sizeof name, "tjit-%d", (id + 1) % 1000);
        pthread_setname_np(pool.tid[id], name);
        pool.nworkers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* At exit: wake, stop and join the workers, unless a job is in flight or exit
 * was called from inside a chunk (the process is going away either way). */
static void pool_stop(void)
{
    if (in_pool || pthread_mutex_trylock(&pool.run_mu) != 0)
        return;
    pthread_mutex_lock(&pool.wake_mu);
    atomic_store(&pool.stop, true);
    pthread_cond_broadcast(&pool.wake_cv);
    pthread_cond_broadcast(&pool.park_cv);
    pthread_mutex_unlock(&pool.wake_mu);
    for (int k = 0; k < pool.nworkers; k++)
        pthread_join(pool.tid[k], NULL);
    pool.nworkers = 0;
    pthread_mutex_unlock(&pool.run_mu);
}

/* A forked child has only the forking thread: forget the workers. */
static void pool_after_fork(void)
{
    pthread_mutex_init(&pool.run_mu, NULL);
    pthread_mutex_init(&pool.wake_mu, NULL);
    pthread_cond_init(&pool.wake_cv, NULL);
    pthread_cond_init(&pool.park_cv, NULL);
    pthread_mutex_init(&pool.done_mu, NULL);
    pthread_cond_init(&pool.done_cv, NULL);
    atomic_store(&pool.sleepers, 0);
    atomic_store(&pool.caller_sleeps, false);
    pool.nworkers = 0;
    in_pool = false;
}

/* ---- parallel_for ---------------------------------------------------------------- */

static void run_serial(int64_t n, int chunks, rt_range_fn fn, void *ctx)
{
    for (int k = 0; k < chunks; k++) {
        int64_t b, e;
        chunk_range(n, chunks, k, &b, &e);
        fn(ctx, b, e);
    }
}

static void wait_done(int chunks)
{
    int64_t until = 0;
    for (int spins = 0; atomic_load_explicit(&pool.done, memory_order_acquire) < chunks; spins++)
        if (spun_out(spins, &until))
            break;
    if (atomic_load_explicit(&pool.done, memory_order_acquire) >= chunks)
        return;
    pthread_mutex_lock(&pool.done_mu);
    atomic_store_explicit(&pool.caller_sleeps, true, memory_order_seq_cst);
    while (atomic_load_explicit(&pool.done, memory_order_seq_cst) < chunks)
        pthread_cond_wait(&pool.done_cv, &pool.done_mu);
    atomic_store_explicit(&pool.caller_sleeps, false, memory_order_relaxed);
    pthread_mutex_unlock(&pool.done_mu);
}

/* Runs a job on the pool; the caller holds run_mu. */
static void run_parallel(int64_t n, int chunks, rt_range_fn fn, void *ctx)
{
    int want = (chunks < rt_threads() ? chunks : rt_threads()) - 1;   /* tasks may outnumber threads */
    if (pool.nworkers < want)
        start_workers(want);
    pool.job = (pool_job){fn, ctx, n, rt_prof_on() ? rt_prof_label() : 0};
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&pool.claim, memory_order_relaxed);
    uint64_t gen = (uint64_t)(CLAIM_GEN(old) + 1);
    atomic_store_explicit(&pool.claim, gen << 32 | (uint64_t)chunks << 16, memory_order_seq_cst);
    if (atomic_load_explicit(&pool.sleepers, memory_order_seq_cst) > 0) {
        pthread_mutex_lock(&pool.wake_mu);
        pthread_cond_broadcast(&pool.wake_cv);
        pthread_mutex_unlock(&pool.wake_mu);
    }
    in_pool = true;
    run_chunks((uint32_t)gen);
    in_pool = false;
    wait_done(chunks);
}

/* Runs fn over [0, n) in `chunks` chunks on the pool, or serially. */
static void run_chunked(int64_t n, int chunks, rt_range_fn fn, void *ctx)
{
    if (chunks == 1) {
        fn(ctx, 0, n);
        return;
    }
    bool owner = !in_pool && !atomic_load_explicit(&pool.stop, memory_order_relaxed) &&
                 pthread_mutex_trylock(&pool.run_mu) == 0;
    if (owner && atomic_load(&pool.stop)) {   /* exit began after the check above */
        pthread_mutex_unlock(&pool.run_mu);
        owner = false;
    }
    if (owner) {
        run_parallel(n, chunks, fn, ctx);
        pthread_mutex_unlock(&pool.run_mu);
    } else {   /* nested, another thread's job in flight, or exiting */
        bool was = in_pool;
        in_pool = true;   /* calls nested in these chunks stay serial too */
        run_serial(n, chunks, fn, ctx);
        in_pool = was;
    }
}

void rt_parallel_for(int64_t n, int64_t grain, rt_range_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    int threads = rt_threads();
    int64_t c = n / grain;
    run_chunked(n, c < threads ? (int)(c < 1 ? 1 : c) : threads, fn, ctx);
}

void rt_parallel_tasks(int64_t n, rt_range_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    run_chunked(n, rt_threads() == 1 ? 1 : (int)(n < RT_MAX_TASKS ? n : RT_MAX_TASKS), fn, ctx);
}
