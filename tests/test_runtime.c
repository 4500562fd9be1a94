/* test_runtime.c - the runtime's infrastructure: tensor lifetime and scopes,
 * inspection, the error model, the allocator, the thread pool and .npy I/O. */
#include <math.h>
#include <sched.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../runtime/env.h"
#include "../runtime/rt.h"
#include "util.h"

#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ON 0
#else
#define CACHE_ON 1
#endif

/* Shape argument of 0-dim tensors (tensor.c's header_new memcpy's from it). */
static const int64_t NODIMS[1] = {0};

/* Creation ops belong to another family; these suites use only the runtime. */
static tj_tensor *filled(tj_dtype dt, int ndim, const int64_t *shape, int byte)
{
    tj_tensor *t = rt_tensor_new(dt, ndim, shape);
    assert_non_null(t);
    memset(t->storage->data, byte, t->storage->nbytes);
    return rt_own(t);
}

static int refs(const tj_tensor *t) { return atomic_load(&t->refs); }
static int storage_refs(const tj_tensor *t) { return atomic_load(&t->storage->refs); }

/* ---- lifetime ---------------------------------------------------------------------- */

/* rt_env_switch: exactly "1" or "0" switches; unset, empty or anything
 * else leaves the caller's default (-1); read again on every call. */
static void test_env_switch(void **state)
{
    (void)state;
    static const struct { const char *v; int want; } cases[] = {
        {"1", 1}, {"0", 0}, {"", -1}, {"bogus", -1}, {"10", -1}, {"01", -1}, {" 1", -1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        setenv("TJ_TEST_SWITCH", cases[i].v, 1);
        assert_int_equal(rt_env_switch("TJ_TEST_SWITCH"), cases[i].want);
    }
    unsetenv("TJ_TEST_SWITCH");
    assert_int_equal(rt_env_switch("TJ_TEST_SWITCH"), -1);
}

static void test_retain_release(void **state)
{
    (void)state;
    tj_tensor *t = rt_tensor_new(TJ_F32, 2, (int64_t[]){2, 3});   /* no scope: ours */
    assert_non_null(t);
    assert_int_equal(refs(t), 1);
    assert_ptr_equal(tj_retain(t), t);
    assert_int_equal(refs(t), 2);
    tj_release(t);
    assert_int_equal(refs(t), 1);
    tj_release(t);
    tj_release(NULL);
    assert_null(tj_retain(NULL));
}

static void test_view_keeps_storage(void **state)
{
    (void)state;
    tj_tensor *base = rt_tensor_new(TJ_I32, 1, (int64_t[]){6});
    for (int k = 0; k < 6; k++)
        ((int32_t *)base->storage->data)[k] = k * 10;
    tj_tensor *v = rt_tensor_view(base, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 1);
    assert_int_equal(storage_refs(base), 2);
    tj_release(base);   /* the view still holds the storage */
    assert_int_equal(storage_refs(v), 1);
    assert_true(tj_get(v, (int64_t[]){1, 1}) == 40.0);   /* 1 + 1*1 + 1*2 */
    assert_true(tj_get(v, (int64_t[]){0, 1}) == 30.0);
    assert_int_equal(tj_offset(v), 1);
    assert_false(tj_is_contiguous(v));
    tj_release(v);
}

static void test_scopes_nested(void **state)
{
    (void)state;
    tj_tensor *outer = filled(TJ_F32, 1, (int64_t[]){4}, 0);
    assert_non_null(outer);
    tj_tensor *kept;
    tj_scope_begin();
    {
        tj_tensor *a = tj_from_data(TJ_F64, 1, (int64_t[]){2}, (double[]){1, 2});
        tj_tensor *b = tj_from_data(TJ_F64, 0, NODIMS, (double[]){7});
        assert_non_null(a);
        assert_non_null(b);
        kept = tj_keep(b);
        assert_int_equal(refs(b), 2);
        tj_scope_begin();
        assert_non_null(rt_own(rt_tensor_view(a, 1, (int64_t[]){1}, (int64_t[]){1}, 1)));
        assert_int_equal(storage_refs(a), 2);
        tj_scope_end();   /* the view goes; a stays */
        assert_int_equal(storage_refs(a), 1);
        assert_true(tj_get(a, (int64_t[]){1}) == 2.0);
    }
    tj_scope_end();
    assert_int_equal(refs(kept), 1);   /* survived its scope */
    assert_true(tj_item(kept) == 7.0);
    tj_release(kept);
    assert_int_equal(refs(outer), 1);   /* the test's scope still owns it */
}

static void test_scope_release_order(void **state)
{
    (void)state;
    /* The scope releases the base before its view: the storage lives on in
     * the view that was kept. */
    tj_scope_begin();
    tj_tensor *base = filled(TJ_I64, 1, (int64_t[]){8}, 1);
    tj_tensor *v = rt_own(rt_tensor_view(base, 1, (int64_t[]){4}, (int64_t[]){2}, 0));
    tj_tensor *keepv = tj_keep(v);
    tj_scope_end();
    assert_int_equal(refs(keepv), 1);
    assert_int_equal(storage_refs(keepv), 1);
    /* the bytes (tj_get's double cannot hold this value exactly) */
    assert_true(((const int64_t *)tj_data(keepv))[3 * tj_strides(keepv)[0]] == 0x0101010101010101LL);
    tj_release(keepv);

    /* A base owned by the caller and released while a scope still holds a
     * view of it. */
    tj_tensor *own = rt_tensor_new(TJ_U8, 1, (int64_t[]){4});
    memset(own->storage->data, 9, 4);
    tj_scope_begin();
    tj_tensor *w = rt_own(rt_tensor_view(own, 1, (int64_t[]){2}, (int64_t[]){1}, 2));
    tj_release(own);
    assert_true(tj_get(w, (int64_t[]){1}) == 9.0);
    tj_scope_end();
}

static void test_many_in_scope(void **state)
{
    (void)state;
    tj_scope_begin();
    for (int k = 0; k < 1000; k++)
        assert_non_null(tj_from_data(TJ_F32, 0, NODIMS, &(float){(float)k}));
    tj_scope_end();
}

/* ---- inspection -------------------------------------------------------------------- */

static void test_item_get_describe(void **state)
{
    (void)state;
    char b[96];
    int32_t vals[6] = {1, -2, 3, -4, 5, -6};
    tj_tensor *t = tj_from_data(TJ_I32, 2, (int64_t[]){2, 3}, vals);
    assert_non_null(t);
    assert_string_equal(tj_describe(t, b, sizeof b), "i32[2,3]");
    assert_string_equal(tj_describe(NULL, b, sizeof b), "none");
    assert_true(tj_get(t, (int64_t[]){1, 2}) == -6.0);
    assert_int_equal(tj_numel(t), 6);
    assert_int_equal(tj_ndim(t), 2);
    assert_int_equal(tj_size(t, -1), 3);
    assert_true(tj_is_contiguous(t));
    assert_int_equal(tj_strides(t)[0], 3);
    assert_true(((int32_t *)tj_data(t))[4] == 5);

    assert_true(isnan(tj_item(t)));
    tu_assert_error(NULL, "item", "i32[2,3]", NULL);
    assert_true(isnan(tj_get(t, (int64_t[]){2, 0})));
    tu_assert_error(NULL, "get", "out of range", NULL);
    assert_int_equal(tj_size(t, 2), -1);
    tu_assert_error(NULL, "size", "dim 2", NULL);

    tj_tensor *s = tj_from_data(TJ_BOOL, 0, NODIMS, (uint8_t[]){1});
    assert_true(tj_item(s) == 1.0);
    assert_string_equal(tj_describe(s, b, sizeof b), "bool[]");
    double d = 0.25;
    assert_true(tj_item(tj_from_data(TJ_F64, 1, (int64_t[]){1}, &d)) == 0.25);
    assert_true(tj_item(tj_from_data(TJ_I64, 0, NODIMS, (int64_t[]){-(1LL << 40)})) ==
                -(double)(1LL << 40));
    assert_true(isnan(tj_item(NULL)));
    assert_int_equal(tj_numel(NULL), -1);
}

static void test_from_data_errors(void **state)
{
    (void)state;
    tu_assert_error(tj_from_data(TJ_F32, 1, (int64_t[]){2}, NULL), "from_data", "NULL", NULL);
    tu_assert_error(tj_from_data(TJ_C64, 1, (int64_t[]){2}, (float[]){0, 0, 0, 0}), "from_data",
                    "c64", NULL);
    tu_assert_error(tj_from_data(TJ_F32, TJ_MAX_DIMS + 1, (int64_t[9]){1}, (float[]){0}),
                    "from_data", NULL);
    tu_assert_error(tj_from_data(TJ_F32, 1, (int64_t[]){-1}, (float[]){0}), "negative", NULL);
    tu_assert_error(tj_from_data(TJ_F64, 2, (int64_t[]){INT64_MAX / 2, 4}, (double[]){0}),
                    "overflow", NULL);
}

/* ---- errors ---------------------------------------------------------------------------- */

static void *set_error_thread(void *arg)
{
    char *seen = arg;
    strcpy(seen, tj_last_error());   /* a new thread starts clean */
    rt_error("boom from another thread");
    return NULL;
}

static void test_error_model(void **state)
{
    (void)state;
    tj_clear_error();
    assert_string_equal(tj_last_error(), "");
    assert_false(rt_has_error());
    rt_error("first %d", 1);
    assert_string_equal(tj_last_error(), "first 1");
    assert_true(rt_has_error());

    char seen[64] = "unset";
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, set_error_thread, seen), 0);
    pthread_join(th, NULL);
    assert_string_equal(seen, "");
    assert_string_equal(tj_last_error(), "first 1");   /* untouched by the other thread */
    tj_clear_error();
    assert_string_equal(tj_last_error(), "");

    char buf[4096];
    memset(buf, 'x', sizeof buf - 1);
    buf[sizeof buf - 1] = '\0';
    rt_error("%s", buf);   /* long messages are truncated, not overflowed */
    assert_true(strlen(tj_last_error()) > 500);
    tj_clear_error();
}

/* ---- allocator ------------------------------------------------------------------------- */

static void test_alloc_alignment(void **state)
{
    (void)state;
    size_t sizes[] = {0, 1, 63, 64, 65, 1000, 65535, 65536, 65537, 100000, 1 << 20,
                      (1 << 20) + 3, (5 << 20) + 77};
    void *ps[sizeof sizes / sizeof sizes[0]];
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        ps[k] = rt_alloc(sizes[k]);
        assert_non_null(ps[k]);
        assert_int_equal((uintptr_t)ps[k] % 64, 0);
        memset(ps[k], 0xab, sizes[k]);   /* every byte is ours */
        for (size_t j = 0; j < k; j++)
            assert_ptr_not_equal(ps[j], ps[k]);   /* zero-byte blocks are unique too */
    }
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        rt_free(ps[k], sizes[k]);
    rt_free(NULL, 10);
    rt_alloc_trim();
}

static void test_alloc_reuse_and_trim(void **state)
{
    (void)state;
    rt_alloc_trim();
    assert_int_equal(rt_alloc_cached_bytes(), 0);
    size_t n = (size_t)1 << 20;
    void *p = rt_alloc(n);
    assert_non_null(p);
    memset(p, 1, n);
    rt_free(p, n);
    assert_int_equal(rt_alloc_cached_bytes(), CACHE_ON ? n : 0);
    void *q = rt_alloc(n - 1000);   /* same size class */
    assert_non_null(q);
    memset(q, 2, n - 1000);
    if (CACHE_ON)
        assert_ptr_equal(p, q);
    assert_int_equal(rt_alloc_cached_bytes(), 0);
    void *r = rt_alloc(n);   /* the class is empty again: a fresh block */
    assert_non_null(r);
    assert_ptr_not_equal(q, r);
    rt_free(q, n - 1000);
    rt_free(r, n);
    rt_alloc_trim();
    assert_int_equal(rt_alloc_cached_bytes(), 0);
    /* small blocks are never cached */
    void *s = rt_alloc(1000);
    rt_free(s, 1000);
    assert_int_equal(rt_alloc_cached_bytes(), 0);
}

static void test_alloc_classes(void **state)
{
    (void)state;
    /* Sizes around class boundaries: each block must hold its full size. */
    for (size_t base = (size_t)64 << 10; base <= ((size_t)8 << 20); base *= 2) {
        for (size_t j = 0; j < 8; j++) {
            size_t n = base + j * (base / 8) + (j & 1 ? 1 : -(size_t)(j > 0));
            unsigned char *p = rt_alloc(n);
            assert_non_null(p);
            p[0] = 1;
            p[n - 1] = 2;
            memset(p, 3, n);
            rt_free(p, n);
        }
    }
    rt_alloc_trim();
    assert_int_equal(rt_alloc_cached_bytes(), 0);
}

static void test_alloc_oom(void **state)
{
    (void)state;
    assert_null(rt_alloc(SIZE_MAX - 10));
    tu_assert_error(NULL, "out of memory", NULL);
    assert_null(rt_alloc(SIZE_MAX / 2));
    tu_assert_error(NULL, "out of memory", NULL);
}

typedef struct alloc_ctx {
    atomic_int failures;
} alloc_ctx;

static void alloc_chunk(void *vctx, int64_t b, int64_t e)
{
    alloc_ctx *c = vctx;
    for (int64_t i = b; i < e; i++) {
        size_t n = (size_t)(64 << 10) + (size_t)(i % 7) * 10000;
        unsigned char *p = rt_alloc(n);
        if (!p) {
            atomic_fetch_add(&c->failures, 1);
            continue;
        }
        memset(p, (int)i, n);
        if (p[n - 1] != (unsigned char)i)
            atomic_fetch_add(&c->failures, 1);
        rt_free(p, n);
    }
}

static void test_alloc_threads(void **state)
{
    (void)state;
    alloc_ctx c = {0};
    rt_parallel_for(400, 1, alloc_chunk, &c);
    assert_int_equal(atomic_load(&c.failures), 0);
    rt_alloc_trim();
}

/* ---- thread pool ------------------------------------------------------------------------ */

#define MAX_N 5000

typedef struct visit_ctx {
    atomic_int count[MAX_N];
    atomic_int chunks;
    atomic_int short_chunks;   /* chunks below grain */
    int64_t grain;
} visit_ctx;

static void visit(void *vctx, int64_t b, int64_t e)
{
    visit_ctx *c = vctx;
    atomic_fetch_add(&c->chunks, 1);
    if (e - b < c->grain)
        atomic_fetch_add(&c->short_chunks, 1);
    for (int64_t i = b; i < e; i++)
        atomic_fetch_add(&c->count[i], 1);
}

static void check_visits(int64_t n, int64_t grain)
{
    static visit_ctx c;
    memset(&c, 0, sizeof c);
    c.grain = grain;
    rt_parallel_for(n, grain, visit, &c);
    for (int64_t i = 0; i < n; i++)
        if (atomic_load(&c.count[i]) != 1)
            fail_msg("n %lld grain %lld: index %lld visited %d times", (long long)n,
                     (long long)grain, (long long)i, atomic_load(&c.count[i]));
    int chunks = atomic_load(&c.chunks);
    assert_true(n == 0 || chunks >= 1);
    assert_true(chunks <= rt_threads());
    if (chunks > 1)
        assert_int_equal(atomic_load(&c.short_chunks), 0);
}

static void test_pool_visits_once(void **state)
{
    (void)state;
    int64_t ns[] = {0, 1, 2, 3, 7, 64, 100, 1000, 4999, 5000};
    int64_t grains[] = {-5, 0, 1, 2, 3, 10, 33, 500, 2500, 4999, 100000};
    for (int rep = 0; rep < 3; rep++)
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++)
                check_visits(ns[a], grains[g]);
}

static void test_pool_thread_counts(void **state)
{
    (void)state;
    int orig = tj_num_threads();
    assert_true(orig >= 1);
    int counts[] = {1, 2, 3, 5, 8, 1, orig};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        tj_set_num_threads(counts[k]);
        assert_int_equal(tj_num_threads(), counts[k]);
        assert_int_equal(rt_threads(), counts[k]);
        for (int64_t n = 1; n < 300; n += 37)
            check_visits(n, 1);
        check_visits(MAX_N, 7);
    }
    tj_clear_error();
    tj_set_num_threads(0);
    assert_non_null(strstr(tj_last_error(), "at least 1"));
    tj_clear_error();
    tj_set_num_threads(-3);
    assert_int_equal(tj_num_threads(), orig);
    tj_clear_error();
}

/* rt_parallel_tasks: every item once, each item a chunk of its own (claimed
 * one at a time) when more than one thread runs; serial with one thread. */
static void check_tasks(int64_t n)
{
    static visit_ctx c;
    memset(&c, 0, sizeof c);
    c.grain = 1;
    rt_parallel_tasks(n, visit, &c);
    for (int64_t i = 0; i < n; i++)
        if (atomic_load(&c.count[i]) != 1)
            fail_msg("n %lld: item %lld run %d times", (long long)n, (long long)i, atomic_load(&c.count[i]));
    int want = n <= 0 ? 0 : rt_threads() == 1 ? 1 : (int)n;
    if (atomic_load(&c.chunks) != want)
        fail_msg("n %lld, %d threads: %d chunks, want %d", (long long)n, rt_threads(), atomic_load(&c.chunks), want);
}

static void test_pool_tasks(void **state)
{
    (void)state;
    int orig = tj_num_threads();
    int counts[] = {2, 1, 3, 8};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        tj_set_num_threads(counts[k]);
        int64_t ns[] = {0, 1, 2, 3, 4, 5, 8, 17, 100, MAX_N};
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            check_tasks(ns[a]);
    }
    tj_set_num_threads(orig);
}

/* Chunk boundaries depend only on n, grain and the thread count. */
typedef struct bounds_ctx {
    _Atomic int64_t begin_of[64];
} bounds_ctx;

static void record_bounds(void *vctx, int64_t b, int64_t e)
{
    bounds_ctx *c = vctx;
    atomic_store(&c->begin_of[b % 64], e);
}

static void test_pool_deterministic(void **state)
{
    (void)state;
    int orig = tj_num_threads();
    tj_set_num_threads(4);
    bounds_ctx a, b;
    for (int k = 0; k < 64; k++) {
        atomic_init(&a.begin_of[k], -1);
        atomic_init(&b.begin_of[k], -1);
    }
    rt_parallel_for(1001, 10, record_bounds, &a);
    for (int rep = 0; rep < 20; rep++) {
        rt_parallel_for(1001, 10, record_bounds, &b);
        for (int k = 0; k < 64; k++)
            assert_int_equal(atomic_load(&a.begin_of[k]), atomic_load(&b.begin_of[k]));
    }
    /* four chunks: 0..251, 251..501, 501..751, 751..1001 */
    assert_int_equal(atomic_load(&a.begin_of[0]), 251);
    assert_int_equal(atomic_load(&a.begin_of[751 % 64]), 1001);
    tj_set_num_threads(orig);
}

typedef struct nested_ctx {
    atomic_int count[64][64];
} nested_ctx;

typedef struct inner_arg {
    nested_ctx *c;
    int64_t row;
} inner_arg;

static void inner(void *varg, int64_t b, int64_t e)
{
    inner_arg *a = varg;
    for (int64_t j = b; j < e; j++)
        atomic_fetch_add(&a->c->count[a->row][j], 1);
}

static void outer(void *vctx, int64_t b, int64_t e)
{
    for (int64_t i = b; i < e; i++) {
        inner_arg a = {vctx, i};
        rt_parallel_for(64, 1, inner, &a);   /* nested: runs serially here */
    }
}

static void test_pool_nested(void **state)
{
    (void)state;
    static nested_ctx c;
    memset(&c, 0, sizeof c);
    rt_parallel_for(64, 1, outer, &c);
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j++)
            assert_int_equal(atomic_load(&c.count[i][j]), 1);
}

typedef struct sum_ctx {
    const int64_t *data;
    _Atomic int64_t total;
} sum_ctx;

static void sum_chunk(void *vctx, int64_t b, int64_t e)
{
    sum_ctx *c = vctx;
    int64_t s = 0;
    for (int64_t i = b; i < e; i++)
        s += c->data[i];
    atomic_fetch_add(&c->total, s);
}

static void *caller_thread(void *arg)
{
    int64_t *bad = arg;
    int64_t *data = malloc(10000 * sizeof *data);
    if (!data) {
        (*bad)++;
        return NULL;
    }
    for (int i = 0; i < 10000; i++)
        data[i] = i;
    for (int rep = 0; rep < 2000; rep++) {
        sum_ctx c = {data, 0};
        rt_parallel_for(10000, 100, sum_chunk, &c);
        if (atomic_load(&c.total) != 49995000)
            (*bad)++;
    }
    free(data);
    return NULL;
}

static void test_pool_concurrent_callers(void **state)
{
    (void)state;
    int64_t bad[2] = {0, 0};
    pthread_t th[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&th[k], NULL, caller_thread, &bad[k]), 0);
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    assert_int_equal(bad[0], 0);
    assert_int_equal(bad[1], 0);
}

static void test_pool_many_small_jobs(void **state)
{
    (void)state;
    /* back-to-back jobs exercise the hand-off (late workers must never run a
     * chunk of the wrong job) */
    static int64_t data[256];
    for (int i = 0; i < 256; i++)
        data[i] = i;
    for (int rep = 0; rep < 20000; rep++) {
        sum_ctx c = {data, 0};
        int64_t n = 2 + rep % 255;
        rt_parallel_for(n, 1, sum_chunk, &c);
        assert_int_equal(atomic_load(&c.total), n * (n - 1) / 2);
    }
}

static void test_pool_fork(void **state)
{
    (void)state;
    /* The child of a fork has no workers; the pool and allocator must still work. */
#if defined(__SANITIZE_THREAD__)
    skip();   /* ThreadSanitizer refuses new threads after a multi-threaded fork */
#endif
    check_visits(1000, 1);   /* workers exist in the parent */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        static visit_ctx c;
        rt_parallel_for(1000, 1, visit, &c);
        int ok = 1;
        for (int i = 0; i < 1000; i++)
            ok &= atomic_load(&c.count[i]) == 1;
        void *p = rt_alloc(1 << 20);
        rt_free(p, 1 << 20);
        _exit(ok && p ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    check_visits(1000, 1);
}

/* Runs this test binary with TJIT_NUM_THREADS=env and returns the count it
 * reports (see main). */
static int threads_with_env(const char *env)
{
    char cmd[600], exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    snprintf(cmd, sizeof cmd, "TJIT_NUM_THREADS='%s' '%s' --print-threads", env, exe);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int count = -1;
    if (fscanf(p, "%d", &count) != 1)
        count = -1;
    pclose(p);
    return count;
}

static void test_pool_env(void **state)
{
    (void)state;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    int cpus = CPU_COUNT(&set);
    assert_int_equal(threads_with_env("3"), 3);
    assert_int_equal(threads_with_env("1"), 1);
    assert_int_equal(threads_with_env("100000"), 256);   /* capped */
    assert_int_equal(threads_with_env(""), cpus);
    assert_int_equal(threads_with_env("0"), cpus);
    assert_int_equal(threads_with_env("-2"), cpus);
    assert_int_equal(threads_with_env("4x"), cpus);
}

/* ---- .npy ----------------------------------------------------------------------------------- */

static char tmpdir[256];

static int npy_setup(void **state)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tjit_test_npy_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    return tu_scope_setup(state);
}

static int npy_teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    int rc = system(cmd);
    (void)rc;
    return tu_scope_teardown(state);
}

static const char *tmp(const char *name)
{
    static char path[2][512];
    static int k;
    k ^= 1;
    snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
    return path[k];
}

static void assert_same(tj_tensor *got, tj_tensor *want)
{
    tu_assert_close(got, want, 0, 0);
}

static void test_npy_roundtrip_dtypes(void **state)
{
    (void)state;
    double vals[] = {0, 1, -2.5, 3, 1e30, -7, 126, 0.125, 1, 0, 255, -1};
    tj_dtype dts[] = {TJ_F32, TJ_F64, TJ_I32, TJ_I64, TJ_I16, TJ_I8, TJ_BOOL, TJ_U8};
    const int64_t shapes[][3] = {{3, 4, 0}, {12, 0, 0}, {2, 3, 2}};
    const int ndims[] = {2, 1, 3};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        for (int s = 0; s < 3; s++) {
            char raw[12 * 8];
            size_t es = tj_dtype_size(dts[d]);
            for (int k = 0; k < 12; k++) {
                double v = vals[k];
                switch (dts[d]) {
                case TJ_F32: ((float *)raw)[k] = (float)v; break;
                case TJ_F64: ((double *)raw)[k] = v; break;
                case TJ_I32: ((int32_t *)raw)[k] = (int32_t)(v > 1e9 ? 1000000000 : v); break;
                case TJ_I64: ((int64_t *)raw)[k] = (int64_t)(v > 1e18 ? 1e18 : v); break;
                case TJ_I16: ((int16_t *)raw)[k] = (int16_t)(v > 1e4 ? -32768 : v); break;
                case TJ_I8: ((int8_t *)raw)[k] = (int8_t)(v > 127 ? -128 : v); break;
                case TJ_BOOL: raw[k] = v != 0; break;
                default: ((uint8_t *)raw)[k] = (uint8_t)(v < 0 ? 200 : v > 255 ? 255 : v); break;
                }
            }
            (void)es;
            tj_tensor *t = tj_from_data(dts[d], ndims[s], shapes[s], raw);
            assert_non_null(t);
            const char *p = tmp("rt.npy");
            assert_int_equal(tj_save_npy(t, p), 0);
            tj_tensor *back = tj_load_npy(p);
            assert_non_null(back);
            assert_same(back, t);
        }
    }
}

static void test_npy_roundtrip_special(void **state)
{
    (void)state;
    /* 0-dim */
    tj_tensor *s = tj_from_data(TJ_F64, 0, NODIMS, (double[]){-0.5});
    assert_int_equal(tj_save_npy(s, tmp("s.npy")), 0);
    tj_tensor *sb = tj_load_npy(tmp("s.npy"));
    assert_int_equal(tj_ndim(sb), 0);
    assert_true(tj_item(sb) == -0.5);
    /* empty, each dtype */
    tj_dtype dts[] = {TJ_F32, TJ_F64, TJ_I32, TJ_I64, TJ_BOOL, TJ_U8};
    for (size_t d = 0; d < 6; d++) {
        tj_tensor *e = rt_own(rt_tensor_new(dts[d], 3, (int64_t[]){2, 0, 3}));
        assert_int_equal(tj_save_npy(e, tmp("e.npy")), 0);
        tj_tensor *eb = tj_load_npy(tmp("e.npy"));
        assert_non_null(eb);
        assert_int_equal(tj_dtype_of(eb), dts[d]);
        assert_int_equal(tj_ndim(eb), 3);
        assert_int_equal(tj_shape(eb)[2], 3);
        assert_int_equal(tj_numel(eb), 0);
    }
    tj_tensor *e1 = rt_own(rt_tensor_new(TJ_F32, 1, (int64_t[]){0}));
    assert_int_equal(tj_save_npy(e1, tmp("e1.npy")), 0);
    assert_int_equal(tj_numel(tj_load_npy(tmp("e1.npy"))), 0);
    /* special floats survive bit for bit */
    float sp[4] = {INFINITY, -INFINITY, NAN, -0.0f};
    tj_tensor *f = tj_from_data(TJ_F32, 1, (int64_t[]){4}, sp);
    assert_int_equal(tj_save_npy(f, tmp("f.npy")), 0);
    tj_tensor *fb = tj_load_npy(tmp("f.npy"));
    assert_memory_equal(tj_data(fb), sp, sizeof sp);
}

static void test_npy_noncontiguous(void **state)
{
    (void)state;
    int32_t vals[24];
    for (int k = 0; k < 24; k++)
        vals[k] = k;
    tj_tensor *t = tj_from_data(TJ_I32, 3, (int64_t[]){2, 3, 4}, vals);
    /* a transposed view [4,3] of the second [3,4] block, and a broadcast */
    tj_tensor *tr = rt_own(rt_tensor_view(t, 2, (int64_t[]){4, 3}, (int64_t[]){1, 4}, 12));
    tj_tensor *bc = rt_own(rt_tensor_view(t, 3, (int64_t[]){2, 3, 2}, (int64_t[]){0, 4, 2}, 1));
    tj_tensor *rev = rt_own(rt_tensor_view(t, 1, (int64_t[]){3}, (int64_t[]){-5}, 23));
    tj_tensor *views[] = {tr, bc, rev};
    for (int v = 0; v < 3; v++) {
        assert_false(tj_is_contiguous(views[v]));
        assert_int_equal(tj_save_npy(views[v], tmp("v.npy")), 0);
        tj_tensor *back = tj_load_npy(tmp("v.npy"));
        assert_non_null(back);
        assert_true(tj_is_contiguous(back));
        assert_same(back, views[v]);
    }
    /* a big strided view crosses the writer's buffer */
    tj_tensor *big = rt_own(rt_tensor_new(TJ_F64, 2, (int64_t[]){300, 40}));
    for (int k = 0; k < 12000; k++)
        ((double *)big->storage->data)[k] = k * 0.5;
    tj_tensor *bt = rt_own(rt_tensor_view(big, 2, (int64_t[]){40, 300}, (int64_t[]){1, 40}, 0));
    assert_int_equal(tj_save_npy(bt, tmp("bt.npy")), 0);
    assert_same(tj_load_npy(tmp("bt.npy")), bt);
}

/* Writes a file: magic, version, header text padded to 64, then data bytes. */
static const char *write_raw(const char *name, int major, const char *dict, const void *data,
                             size_t nbytes)
{
    const char *path = tmp(name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 63) / 64 * 64, hl = total - pre;
    unsigned char head[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0,
                              (unsigned char)(hl & 0xff), (unsigned char)(hl >> 8), 0, 0};
    fwrite(head, 1, pre, f);
    fwrite(dict, 1, dl, f);
    for (size_t k = dl; k + 1 < hl; k++)
        fputc(' ', f);
    fputc('\n', f);
    if (nbytes)
        fwrite(data, 1, nbytes, f);
    fclose(f);
    return path;
}

static const char *write_bytes(const char *name, const void *data, size_t n)
{
    const char *path = tmp(name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(data, 1, n, f);
    fclose(f);
    return path;
}

static void test_npy_versions(void **state)
{
    (void)state;
    float d[6] = {1, 2, 3, 4, 5, 6};
    for (int major = 1; major <= 3; major++) {
        const char *p = write_raw("ver.npy", major,
                                  "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                  d, sizeof d);
        tj_tensor *t = tj_load_npy(p);
        assert_non_null(t);
        assert_true(tj_get(t, (int64_t[]){1, 2}) == 6.0);
    }
    /* other spellings numpy accepts: key order, double quotes, no trailing
     * comma, Python 2 longs, native byte order, any order for one byte */
    const char *p = write_raw("alt.npy", 1,
                              "{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"=f4\"}",
                              d, 12);
    tj_tensor *t = tj_load_npy(p);
    assert_non_null(t);
    assert_int_equal(tj_shape(t)[0], 3);
    uint8_t bytes[3] = {0, 1, 7};
    t = tj_load_npy(write_raw("u.npy", 1, "{'descr':'<u1','fortran_order':False,'shape':(3,)}",
                              bytes, 3));
    assert_non_null(t);
    assert_int_equal(tj_dtype_of(t), TJ_U8);
    assert_true(tj_get(t, (int64_t[]){2}) == 7.0);
    /* numpy's int8 and int16 descrs */
    t = tj_load_npy(write_raw("i1.npy", 1, "{'descr':'|i1','fortran_order':False,'shape':(2,)}",
                              (int8_t[]){-128, 127}, 2));
    assert_non_null(t);
    assert_int_equal(tj_dtype_of(t), TJ_I8);
    assert_true(tj_get(t, (int64_t[]){0}) == -128.0);
    t = tj_load_npy(write_raw("i2.npy", 1, "{'descr':'<i2','fortran_order':False,'shape':(2,)}",
                              (int16_t[]){-32768, 300}, 4));
    assert_non_null(t);
    assert_int_equal(tj_dtype_of(t), TJ_I16);
    assert_true(tj_get(t, (int64_t[]){0}) == -32768.0 && tj_get(t, (int64_t[]){1}) == 300.0);
    t = tj_load_npy(write_raw("b.npy", 1, "{'descr':'|b1','fortran_order':False,'shape':(3,)}",
                              bytes, 3));
    assert_non_null(t);
    assert_true(tj_get(t, (int64_t[]){2}) == 1.0);   /* normalized */
    /* trailing bytes after the data are ignored */
    float more[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    t = tj_load_npy(write_raw("trail.npy", 1,
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                              more, sizeof more));
    assert_non_null(t);
    assert_int_equal(tj_numel(t), 6);
}

static void expect_load_error(const char *path, const char *what)
{
    tj_tensor *t = tj_load_npy(path);
    if (t || !strstr(tj_last_error(), what) || !strstr(tj_last_error(), path))
        fail_msg("%s: expected an error with \"%s\" and the path, got \"%s\"", path, what,
                 t ? "a tensor" : tj_last_error());
    tj_clear_error();
}

static void test_npy_load_errors(void **state)
{
    (void)state;
    float d[64] = {0};
    expect_load_error(tmp("missing.npy"), "No such file");
    expect_load_error(tmpdir, "is a directory");
    expect_load_error(write_bytes("text.npy", "hello world, not numpy", 22), "bad magic");
    expect_load_error(write_bytes("short.npy", "\x93NUM", 4), "bad magic");
    expect_load_error(write_bytes("empty.npy", "", 0), "bad magic");
    expect_load_error(write_bytes("ver.npy", "\x93NUMPY\x04\x00\x10\x00", 10), "version 4.0");
    expect_load_error(write_bytes("ver1.npy", "\x93NUMPY\x01\x01\x10\x00", 10), "version 1.1");
    expect_load_error(write_bytes("nolen.npy", "\x93NUMPY\x02\x00\x10", 9), "truncated header");
    expect_load_error(write_bytes("hdr.npy", "\x93NUMPY\x01\x00\x40\x00{'descr'", 17),
                      "truncated header");
    expect_load_error(write_bytes("huge.npy", "\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12),
                      "too large");

#define HDR(descr, fortran, shape) \
    "{'descr': '" descr "', 'fortran_order': " fortran ", 'shape': " shape ", }"
    expect_load_error(write_raw("fort.npy", 1, HDR("<f4", "True", "(2, 3)"), d, 24),
                      "fortran_order True is not supported");
    expect_load_error(write_raw("be.npy", 1, HDR(">f4", "False", "(2,)"), d, 8),
                      "big-endian dtype '>f4'");
    expect_load_error(write_raw("be8.npy", 1, HDR(">i8", "False", "(2,)"), d, 16), "big-endian");
    expect_load_error(write_raw("c8.npy", 1, HDR("<c8", "False", "(2,)"), d, 16),
                      "unsupported dtype '<c8'");
    expect_load_error(write_raw("f2.npy", 1, HDR(">f2", "False", "(2,)"), d, 4),
                      "big-endian dtype '>f2'");
    expect_load_error(write_raw("u4.npy", 1, HDR("<u4", "False", "(2,)"), d, 8),
                      "unsupported dtype '<u4'");
    expect_load_error(write_raw("u3.npy", 1, HDR("<U3", "False", "(2,)"), d, 24),
                      "unsupported dtype '<U3'");
    expect_load_error(write_raw("i2.npy", 1, HDR(">i2", "False", "(2,)"), d, 4),
                      "big-endian dtype '>i2'");
    expect_load_error(write_raw("u8.npy", 1, HDR("<u8", "False", "(2,)"), d, 16),
                      "unsupported dtype '<u8' (supported: <f4 <f8 <i4 <i8 <i2 |i1 |b1 |u1 <f2, <u2 as bf16)");
    expect_load_error(write_raw("struct.npy", 1,
                                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}",
                                d, 4),
                      "structured");

    /* malformed headers */
    const char *bad[] = {
        "'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': False}",
        "{'descr': '<f4', 'shape': (2,)}",
        "{'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)",
        "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
        "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}",
        "{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk",
        "{descr: '<f4', 'fortran_order': False, 'shape': (2,)}",
        "",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        expect_load_error(write_raw("bad.npy", 1, bad[k], d, 64), "malformed header");
    /* a header whose text holds a NUL byte */
    expect_load_error(write_bytes("nul.npy", "\x93NUMPY\x01\x00\x04\x00{\0}\n", 14),
                      "malformed header");

    /* shapes */
    expect_load_error(write_raw("dims.npy", 1, HDR("<f4", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"),
                                d, 4),
                      "more than 8 dims");
    expect_load_error(write_raw("ovf.npy", 1,
                                HDR("<f8", "False", "(4294967296, 4294967296)"), d, 8),
                      "overflows");
    expect_load_error(write_raw("ovf2.npy", 1, HDR("<f4", "False", "(99999999999999999999,)"),
                                d, 8),
                      "overflows");
    expect_load_error(write_raw("ovf3.npy", 1,
                                HDR("<i8", "False", "(2305843009213693952,)"), d, 8),
                      "overflows");

    /* data */
    expect_load_error(write_raw("trunc.npy", 1, HDR("<f4", "False", "(2, 3)"), d, 20),
                      "truncated data: expected 24 bytes");
    expect_load_error(write_raw("trunc0.npy", 3, HDR("<i8", "False", "()"), d, 0),
                      "truncated data");
    expect_load_error(write_raw("big.npy", 1, HDR("<f8", "False", "(1000000000000,)"), d, 8),
                      "truncated data");
}

static void test_npy_load_null_path(void **state)
{
    (void)state;
    tu_assert_error(tj_load_npy(NULL), "load_npy", "NULL", NULL);
}

static void test_npy_save_errors(void **state)
{
    (void)state;
    tj_tensor *t = filled(TJ_F32, 1, (int64_t[]){3}, 0);
    assert_int_equal(tj_save_npy(t, tmp("nodir/x.npy")), -1);
    assert_non_null(strstr(tj_last_error(), "nodir/x.npy"));
    tj_clear_error();
    assert_int_equal(tj_save_npy(t, NULL), -1);
    assert_non_null(strstr(tj_last_error(), "path is NULL"));
    tj_clear_error();
    assert_int_equal(tj_save_npy(NULL, tmp("n.npy")), -1);   /* NULL in: fails quietly */
    assert_int_equal(access(tmp("n.npy"), F_OK), -1);
    tj_tensor sym = {.magic = RT_LIVE, .dtype = TJ_F32, .ndim = 1, .shape = {2}, .strides = {1}};
    assert_int_equal(tj_save_npy(&sym, tmp("sym.npy")), -1);
    assert_non_null(strstr(tj_last_error(), "symbolic"));
    tj_clear_error();
    tj_tensor *h = rt_own(rt_tensor_new(TJ_C64, 1, (int64_t[]){2}));
    assert_int_equal(tj_save_npy(h, tmp("h.npy")), -1);
    assert_non_null(strstr(tj_last_error(), "c64"));
    tj_clear_error();
}

static void test_npy_save_write_error(void **state)
{
    (void)state;
    /* A write that fails half way (file size limit, in a child process): -1,
     * an error naming the file, and no partial file left behind. */
    tj_tensor *big = filled(TJ_F64, 1, (int64_t[]){100000}, 0);
    const char *path = tmp("limited.npy");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        int rc = tj_save_npy(big, path);
        bool named = strstr(tj_last_error(), "limited.npy") != NULL;
        _exit(rc == -1 && named && access(path, F_OK) != 0 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
#define TN(f) cmocka_unit_test_setup_teardown(f, npy_setup, npy_teardown)

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--print-threads") == 0) {   /* for test_pool_env */
        printf("%d\n", tj_num_threads());
        return 0;
    }
    const struct CMUnitTest tests[] = {
        T(test_env_switch),
        T(test_retain_release),
        T(test_view_keeps_storage),
        T(test_scopes_nested),
        T(test_scope_release_order),
        T(test_many_in_scope),
        T(test_item_get_describe),
        T(test_from_data_errors),
        T(test_error_model),
        T(test_alloc_alignment),
        T(test_alloc_reuse_and_trim),
        T(test_alloc_classes),
        T(test_alloc_oom),
        T(test_alloc_threads),
        T(test_pool_visits_once),
        T(test_pool_thread_counts),
        T(test_pool_tasks),
        T(test_pool_deterministic),
        T(test_pool_nested),
        T(test_pool_concurrent_callers),
        T(test_pool_many_small_jobs),
        T(test_pool_fork),
        T(test_pool_env),
        TN(test_npy_roundtrip_dtypes),
        TN(test_npy_roundtrip_special),
        TN(test_npy_noncontiguous),
        TN(test_npy_versions),
        TN(test_npy_load_errors),
        T(test_npy_load_null_path),
        TN(test_npy_save_errors),
        TN(test_npy_save_write_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
