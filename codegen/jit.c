/* jit.c - the code generator's entry point: a cg_kernel in, a function
 * pointer out, through the kernel cache and the process-wide LLJIT.
 *
 * Its part of the compiled-graph pipeline (the whole list of steps is in
 * sched/plan.c; [stage] is what TJIT_DUMP=stage prints):
 *
 *   kernel group of a fusion (ir/fusion.h)
 *        |  cg_lower, at the call's sizes           codegen/lower.c  [lower]
 *        v
 *   cg_kernel + launch data (sz, tiles)             codegen/kernel.h [compile]
 *        |  text -> key                             codegen/cache.h
 *        |  loaded in this process? -----------------------------------+
 *        |  in the cache (memory, disk)? --- object ---+               |
 *        |  cg_emit: IR, formulas linked, O2, object   | codegen/emit.c| [llvm, asm]
 *        v                                             v               |
 *   object --> cg_cache_put --> LLJIT: add, look up (this file)        |
 *        v                                                             v
 *   void tjk_<key>(char **bufs, int64_t begin, int64_t end, const int64_t *sz)
 *        launched over tiles with rt_parallel_for by the plan (sched/)
 *
 * Kernels of one graph compile in parallel on the runtime pool, each on its
 * own LLVM context and target machine, from one queue, the longest first
 * (cost_of), each text once; adding objects to the LLJIT and
 * looking symbols up happen under one mutex (two threads adding to one LLJIT
 * crash, shared/notes/LLVM.md). The LLJIT is made on first use (a failure,
 * such as an allocation, is reported and retried by the next call); JIT
 * session errors go to the failing call's message instead of stderr.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "../runtime/rt.h"
#include "emit.h"
#include "jit.h"
#include "sha256.h"

typedef struct loaded {
    char name[72];
    cg_kernel_fn fn;
    LLVMOrcResourceTrackerRef rt;   /* removing it unloads the kernel */
    int refs;                        /* plans holding fn (cg_jit_release) */
    uint64_t used;                   /* J.tick at the last cg_jit_get */
} loaded;

static struct {
    pthread_mutex_t init_mu;  /* guards the making of jit and init_err */
    atomic_bool ready;        /* jit is made (set once, after jit) */
    bool env_read;
    pthread_mutex_t mu;
    LLVMOrcLLJITRef jit;
    char init_err[320];
    char formulas[65];        /* SHA-256 of the formula bitcode */
    loaded *tab;
    int n, cap;
    int max_loaded;           /* unreferenced kernels beyond this are unloaded */
    uint64_t tick;
    cg_jit_stats stats;
} J = {.init_mu = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER,
       .max_loaded = CG_JIT_MAX_LOADED};

static __thread char tls_session_err[256];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void error_msg(LLVMErrorRef e, char *out, size_t n)
{
    char *m = LLVMGetErrorMessage(e);   /* consumes e */
    snprintf(out, n, "%s", m);
    LLVMDisposeErrorMessage(m);
}

static void report(void *ctx, LLVMErrorRef e)
{
    (void)ctx;
    error_msg(e, tls_session_err, sizeof tls_session_err);
}

/* One attempt to make the LLJIT, under J.init_mu: J.ready, or J.init_err
 * set. A failure (an allocation, say) is not remembered: the next
 * cg_jit_available tries again. */
static void jit_init(void)
{
    char err[256] = "";
    if (!J.env_read) {
        const char *mx = getenv("TJIT_JIT_MAX_KERNELS");
        if (mx && atoi(mx) > 0)
            J.max_loaded = atoi(mx);
        J.env_read = true;
    }
    if (cg_formulas_nparts() == 0) {
        snprintf(J.init_err, sizeof J.init_err,
                 "no formula bitcode: the library was built without clang-19");
        return;
    }
    cg_sha256_ctx sc;   /* every part, in order, names and bytes */
    cg_sha256_init(&sc);
    for (int i = 0; i < cg_formulas_nparts(); i++) {
        const char *suffix;
        size_t len;
        const void *bc = cg_formulas_part(i, &suffix, &len);
        cg_sha256_update(&sc, suffix, strlen(suffix) + 1);
        cg_sha256_update(&sc, &len, sizeof len);
        cg_sha256_update(&sc, bc, len);
    }
    uint8_t d[32];
    cg_sha256_final(&sc, d);
    cg_sha256_hex(d, J.formulas);
    LLVMTargetMachineRef tm = cg_tm_create(err, sizeof err);
    if (!tm) {
        snprintf(J.init_err, sizeof J.init_err, "%s", err);
        return;
    }
    LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
    /* ownership: tm -> the JTMB -> the builder -> the LLJIT */
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(b, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&J.jit, b);
    if (e) {
        error_msg(e, err, sizeof err);
        snprintf(J.init_err, sizeof J.init_err, "cannot create the LLJIT: %.256s", err);
        J.jit = NULL;
        return;
    }
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(J.jit), report, NULL);
    atomic_store(&J.ready, true);
}

bool cg_jit_available(char *err, size_t nerr)
{
    if (atomic_load(&J.ready))
        return true;
    pthread_mutex_lock(&J.init_mu);
    if (!atomic_load(&J.ready))
        jit_init();
    bool ok = atomic_load(&J.ready);
    if (!ok && err && nerr) {   /* cut to fit, as snprintf would (without its warning) */
        size_t m = strnlen(J.init_err, nerr - 1);
        memcpy(err, J.init_err, m);
        err[m] = '\0';
    }
    pthread_mutex_unlock(&J.init_mu);
    return ok;
}

/* ---- the loaded-kernel table (under J.mu) -------------------------------------------- */

/* The loaded kernel `name`, acquired (one more reference, used now), or NULL. */
static cg_kernel_fn find_loaded(const char *name)
{
    for (int i = 0; i < J.n; i++)
        if (!strcmp(J.tab[i].name, name)) {
            J.tab[i].refs++;
            J.tab[i].used = ++J.tick;
            return J.tab[i].fn;
        }
    return NULL;
}

/* Unloads least recently used kernels no plan holds while more than
 * J.max_loaded are loaded. Under J.mu. */
static void evict(void)
{
    while (J.n > J.max_loaded) {
        int v = -1;
        for (int i = 0; i < J.n; i++)
            if (J.tab[i].refs == 0 && (v < 0 || J.tab[i].used < J.tab[v].used))
                v = i;
        if (v < 0)
            return;
        LLVMErrorRef e = LLVMOrcResourceTrackerRemove(J.tab[v].rt);
        if (e)
            LLVMConsumeError(e);
        LLVMOrcReleaseResourceTracker(J.tab[v].rt);
        J.tab[v] = J.tab[--J.n];
        J.stats.evicted++;
    }
}

void cg_jit_release(cg_kernel_fn fn)
{
    if (!fn)
        return;
    pthread_mutex_lock(&J.mu);
    for (int i = 0; i < J.n; i++)
        if (J.tab[i].fn == fn && J.tab[i].refs > 0) {
            J.tab[i].refs--;
            break;
        }
    evict();
    pthread_mutex_unlock(&J.mu);
}

void cg_jit_set_max_loaded(int n)
{
    pthread_mutex_lock(&J.mu);
    J.max_loaded = n > 0 ? n : CG_JIT_MAX_LOADED;
    evict();
    pthread_mutex_unlock(&J.mu);
}

/* Adds an object defining `name` to the JIT (or finds name already loaded);
 * takes a copy of the bytes. */
static cg_kernel_fn add_object(const char *name, const void *obj, size_t len, char *err, size_t nerr)
{
    pthread_mutex_lock(&J.mu);
    cg_kernel_fn fn = find_loaded(name);
    if (fn)
        goto out;
    if (J.n == J.cap) {
        int cap = J.cap ? 2 * J.cap : 64;
        loaded *t = realloc(J.tab, (size_t)cap * sizeof *t);
        if (!t)
            goto out;
        J.tab = t;
        J.cap = cap;
    }
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(J.jit);
    LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(jd);
    /* ownership: the buffer goes to the JIT */
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len, name);
    LLVMOrcExecutorAddress addr = 0;
    tls_session_err[0] = '\0';
    if (!mb) {   /* the copy is allocated with nothrow new: NULL when that fails */
        snprintf(err, nerr, "out of memory copying the object of %s", name);
        LLVMOrcReleaseResourceTracker(rt);
        goto out;
    }
    LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(J.jit, rt, mb);
    if (!e)
        e = LLVMOrcLLJITLookup(J.jit, &addr, name);
    if (e || !addr) {
        if (e)
            error_msg(e, err, nerr);
        else
            snprintf(err, nerr, "symbol %s not found", name);
        if (tls_session_err[0])
            snprintf(err, nerr, "%s", tls_session_err);
        LLVMErrorRef r = LLVMOrcResourceTrackerRemove(rt);
        if (r)
            LLVMConsumeError(r);
        LLVMOrcReleaseResourceTracker(rt);
        goto out;
    }
    fn = (cg_kernel_fn)(uintptr_t)addr;
    cg_perfmap_add(name, (uintptr_t)addr, obj, len);
    loaded *l = &J.tab[J.n++];
    snprintf(l->name, sizeof l->name, "%s", name);
    l->fn = fn;
    l->rt = rt;
    l->refs = 1;
    l->used = ++J.tick;
    evict();
out:
    pthread_mutex_unlock(&J.mu);
    if (!fn && !err[0])
        snprintf(err, nerr, "out of memory");
    return fn;
}

/* ---- getting a kernel ------------------------------------------------------------------ */

static void count(cg_origin o, double ms)
{
    pthread_mutex_lock(&J.mu);
    if (o == CG_FROM_COMPILE) {
        J.stats.compiled++;
        J.stats.ms_compile += ms;
    } else if (o == CG_FROM_CACHE) {
        J.stats.from_cache++;
    } else {
        J.stats.reused++;
    }
    pthread_mutex_unlock(&J.mu);
}

/* The key of k: its text (with a fixed name) and the formula bitcode's hash
 * (cache.h adds the CPU, LLVM and the hash of codegen's sources). */
static int key_of(const cg_kernel *k, cg_compiled *out, cg_key *key)
{
    out->text = cg_kernel_text(k, "k");
    if (!out->text) {
        snprintf(out->err, sizeof out->err, "out of memory");
        return -1;
    }
    char *keyed = NULL;
    if (asprintf(&keyed, "formulas %s\n%s", J.formulas, out->text) < 0) {
        snprintf(out->err, sizeof out->err, "out of memory");
        return -1;
    }
    int rc = cg_key_make(keyed, strlen(keyed), key);
    free(keyed);
    if (rc) {
        snprintf(out->err, sizeof out->err, "out of memory reading the host CPU for the kernel key");
        return -1;
    }
    snprintf(out->name, sizeof out->name, "tjk_%s", key->hex);
    return 0;
}

static int compile_new(const cg_kernel *k, cg_cache *cache, const cg_key *key, unsigned flags,
                       cg_compiled *out)
{
    cg_object o;
    if (cg_emit(k, out->name, flags, &o, out->err, sizeof out->err))
        return -1;
    cg_cache_put(cache, key, o.obj, o.len);   /* stored nowhere: still usable now */
    out->fn = add_object(out->name, o.obj, o.len, out->err, sizeof out->err);
    out->llvm = o.llvm;
    out->asm_text = o.asm_text;
    out->ms_opt = o.ms_opt;
    out->ms_codegen = o.ms_codegen;
    o.llvm = o.asm_text = NULL;
    cg_object_free(&o);
    out->origin = CG_FROM_COMPILE;
    return out->fn ? 0 : -1;
}

int cg_jit_get(const cg_kernel *k, cg_cache *cache, unsigned flags, cg_compiled *out)
{
    memset(out, 0, sizeof *out);
    double t0 = now_ms();
    if (!cg_jit_available(out->err, sizeof out->err))
        return -1;
    if (!cache)
        cache = cg_cache_global();
    cg_key key;
    if (key_of(k, out, &key))
        return -1;
    int rc = 0;
    if (!(flags & (CG_EMIT_LLVM | CG_EMIT_ASM))) {
        pthread_mutex_lock(&J.mu);
        out->fn = find_loaded(out->name);
        pthread_mutex_unlock(&J.mu);
        out->origin = CG_FROM_LOADED;
        void *obj = NULL;
        size_t len = 0;
        if (!out->fn && cg_cache_get(cache, &key, &obj, &len) == 0) {
            out->fn = add_object(out->name, obj, len, out->err, sizeof out->err);
            out->origin = CG_FROM_CACHE;
            free(obj);
        }
    }
    if (!out->fn)
        rc = compile_new(k, cache, &key, flags, out);
    out->ms = now_ms() - t0;
    if (rc == 0)
        count(out->origin, out->ms);
    return rc;
}

/* A guess of what compiling k costs, in about 2.5 ms units of LLVM time on
 * the 2026-11-29 measurements (docs/perf.md): a fixed part per kernel, more
 * per instruction and formula call, per stage (a loop each), per runtime
 * stride (gathers), and a column kernel's block loops. Only the order
 * matters: the longest kernels start first. */
static int cost_of(const cg_kernel *k)
{
    int c = 8 + k->ninst + 4 * k->nstages + (k->lanes ? 24 : 0);
    for (int i = 0; i < k->ninst; i++)
        c += k->inst[i].k == CG_CALL;
    for (int b = 0; b < k->nbufs; b++)
        c += 8 * (k->bufs[b].inner == CG_STRIDED || (k->lanes && k->bufs[b].lane == CG_STRIDED));
    return c;
}

typedef struct {
    int i, cost;
} queued;

typedef struct {
    const cg_kernel *const *ks;
    cg_cache *cache;
    unsigned flags;
    cg_compiled *outs;
    const queued *q;        /* the kernels to get, longest first */
    int n;
    atomic_int next;        /* the next one of q to take */
} all_ctx;

/* One worker: takes the next kernel of the queue until none is left. */
static void get_queue(void *ctx, int64_t b, int64_t e)
{
    (void)b, (void)e;
    all_ctx *c = ctx;
    for (int i; (i = atomic_fetch_add(&c->next, 1)) < c->n;)
        cg_jit_get(c->ks[c->q[i].i], c->cache, c->flags, &c->outs[c->q[i].i]);
}

static int longest_first(const void *a, const void *b)
{
    const queued *x = a, *y = b;
    return y->cost != x->cost ? y->cost - x->cost : x->i - y->i;
}

int cg_jit_get_all(const cg_kernel *const *ks, int n, cg_cache *cache, unsigned flags,
                   cg_compiled *outs)
{
    if (n <= 0)
        return 0;
    cg_jit_available(NULL, 0);   /* make the LLJIT before the threads race to */
    /* The first kernel of each text is queued, the longest first: with two
     * threads, the last long kernel to start decides when all are done. A
     * copy of an earlier text is got after the queue, found loaded (not
     * compiled twice at once on two threads). The dumps ask for every one. */
    bool dumps = flags & (CG_EMIT_LLVM | CG_EMIT_ASM);
    queued *q = malloc(sizeof *q * (size_t)n);
    char **text = calloc((size_t)n, sizeof *text);
    bool *copy = calloc((size_t)n, sizeof *copy);
    int nq = 0;
    for (int i = 0; q && text && copy && i < n; i++) {
        text[i] = dumps ? NULL : cg_kernel_text(ks[i], "k");
        for (int j = 0; j < i && text[i] && !copy[i]; j++)
            copy[i] = text[j] && !strcmp(text[i], text[j]);
        if (!copy[i])
            q[nq++] = (queued){i, cost_of(ks[i])};
    }
    if (q && text && copy) {
        qsort(q, (size_t)nq, sizeof *q, longest_first);
        all_ctx c = {ks, cache, flags, outs, q, nq, 0};
        int threads = rt_threads();
        rt_parallel_for(nq < threads ? nq : threads, 1, get_queue, &c);
    }
    for (int i = 0; i < n; i++) {
        if (!q || !text || !copy || copy[i])   /* (out of memory: one at a time) */
            cg_jit_get(ks[i], cache, flags, &outs[i]);
        if (text)
            free(text[i]);
    }
    free(q), free(text), free(copy);
    int failed = 0;
    for (int i = 0; i < n; i++)
        failed += outs[i].fn == NULL;
    return failed;
}

int cg_jit_object(const cg_kernel *k, char name[72], void **obj, size_t *len, char *err, size_t nerr)
{
    cg_compiled c;
    memset(&c, 0, sizeof c);
    cg_key key;
    int rc = -1;
    if (!cg_jit_available(c.err, sizeof c.err) || key_of(k, &c, &key))
        goto out;
    memcpy(name, c.name, sizeof c.name);
    cg_cache *cache = cg_cache_global();
    if (cg_cache_get(cache, &key, obj, len) == 0) {
        rc = 0;
        goto out;
    }
    cg_object o;
    if (cg_emit(k, c.name, 0, &o, c.err, sizeof c.err))
        goto out;
    cg_cache_put(cache, &key, o.obj, o.len);
    if ((*obj = malloc(o.len ? o.len : 1))) {
        memcpy(*obj, o.obj, o.len);
        *len = o.len;
        rc = 0;
    } else {
        snprintf(c.err, sizeof c.err, "out of memory");
    }
    cg_object_free(&o);
out:
    if (rc)
        snprintf(err, nerr, "%s", c.err);
    cg_compiled_clear(&c);
    return rc;
}

void cg_compiled_clear(cg_compiled *c)
{
    free(c->text);
    free(c->llvm);
    free(c->asm_text);
    memset(c, 0, sizeof *c);
}

void cg_jit_stats_get(cg_jit_stats *s)
{
    pthread_mutex_lock(&J.mu);
    *s = J.stats;
    s->loaded = (uint64_t)J.n;
    pthread_mutex_unlock(&J.mu);
}
