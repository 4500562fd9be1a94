/* alloc.c - 64-byte aligned allocation with a cache of large blocks.
 *
 * Blocks under RT_CACHE_MIN (64 KiB) come straight from aligned_alloc. Larger
 * blocks are rounded up to a size class (four classes per power of two, so at
 * most 25% is wasted) and, when freed, kept on their class's free list for the
 * next allocation of that class: glibc hands big blocks back to the kernel on
 * free(), and fresh pages cost a page fault each on first touch. A free list
 * links its blocks through their first bytes; one mutex guards the cache.
 *
 * The cache holds at most RT_CACHE_CAP bytes (1 GiB); a free that would exceed
 * it releases the block instead. When an allocation fails, the cache is
 * trimmed and the allocation retried. rt_alloc_trim() (public: tj_alloc_trim)
 * empties the cache, and so does process exit (after which frees go straight to free()).
 *
 * Under AddressSanitizer the cache is bypassed so leaks and use-after-free of
 * tensor data stay visible.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "gemm.h"
#include "rt.h"

#define RT_ALIGN 64
#define RT_CACHE_MIN ((size_t)64 << 10)
#define RT_CACHE_CAP ((size_t)1 << 30)
#define RT_CLASS_STEPS 4   /* classes per power of two */
#define RT_NCLASSES (64 * RT_CLASS_STEPS)

#if defined(__SANITIZE_ADDRESS__)
#define RT_CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RT_CACHE_ON 0
#endif
#endif
#ifndef RT_CACHE_ON
#define RT_CACHE_ON 1
#endif

/* Requests above this fail at once as out of memory: no machine has that much
 * address space, and AddressSanitizer aborts (rather than returning NULL) on
 * requests above 1 TiB. */
#if RT_CACHE_ON
#define RT_MAX_BYTES ((size_t)1 << 47)
#else
#define RT_MAX_BYTES ((size_t)1 << 40)
#endif

typedef struct free_block {
    struct free_block *next;
} free_block;

/* Bytes handed out and not freed (rounded to the alignment), and their
 * maximum since the last reset: tj_alloc_live_bytes, tj_alloc_peak_bytes. */
static _Atomic size_t live, peak;

static void count_alloc(size_t bytes)
{
    size_t now = atomic_fetch_add_explicit(&live, bytes, memory_order_relaxed) + bytes;
    size_t pk = atomic_load_explicit(&peak, memory_order_relaxed);
    while (now > pk && !atomic_compare_exchange_weak_explicit(&peak, &pk, now, memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
}

static struct {
    pthread_mutex_t mu;
    free_block *lists[RT_NCLASSES];
    size_t cached;     /* bytes on the free lists */
    bool closed;       /* set at exit: no more caching */
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Class index and rounded size of a large request; -1 when it overflows. */
static int size_class(size_t n, size_t *rounded)
{
    int log2 = 63 - __builtin_clzll((unsigned long long)n);   /* n >= RT_CACHE_MIN */
    size_t step = ((size_t)1 << log2) / RT_CLASS_STEPS;
    if (n > SIZE_MAX - step)
        return -1;
    size_t r = (n + step - 1) / step * step;
    /* r may be the next power of two: recompute its class from r. */
    log2 = 63 - __builtin_clzll((unsigned long long)r);
    step = ((size_t)1 << log2) / RT_CLASS_STEPS;
    *rounded = r;
    return log2 * RT_CLASS_STEPS + (int)((r - ((size_t)1 << log2)) / step);
}

static void *fresh(size_t bytes)
{
    void *p = aligned_alloc(RT_ALIGN, bytes);
    if (!p && RT_CACHE_ON) {
        rt_alloc_trim();
        p = aligned_alloc(RT_ALIGN, bytes);
    }
    return p;
}

void *rt_alloc(size_t nbytes)
{
    size_t bytes = nbytes ? (nbytes + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN : RT_ALIGN;
    void *p = NULL;
    if (bytes < nbytes || bytes > RT_MAX_BYTES) {   /* rounding overflowed, or absurd */
    } else if (!RT_CACHE_ON || bytes < RT_CACHE_MIN) {
        p = fresh(bytes);
    } else {
        size_t r;
        int cls = size_class(bytes, &r);
        if (cls >= 0) {
            pthread_mutex_lock(&cache.mu);
            free_block *b = cache.lists[cls];
            if (b) {
                cache.lists[cls] = b->next;
                cache.cached -= r;
            }
            pthread_mutex_unlock(&cache.mu);
            p = b ? (void *)b : fresh(r);
        }
    }
    if (!p)
        rt_error("out of memory allocating %zu bytes", nbytes);
    else
        count_alloc(bytes);
    return p;
}

void *rt_grow(void *items, int *cap, int n, size_t elem)
{
    if (n < *cap)
        return items;
    int c = *cap ? 2 * *cap : 8;
    void *v = realloc(items, elem * (size_t)c);
    if (v)
        *cap = c;
    return v;
}

void rt_free(void *p, size_t nbytes)
{
    if (!p)
        return;
    size_t bytes = nbytes ? (nbytes + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN : RT_ALIGN;
    atomic_fetch_sub_explicit(&live, bytes, memory_order_relaxed);
    size_t r;
    int cls;
    if (!RT_CACHE_ON || bytes < RT_CACHE_MIN || (cls = size_class(bytes, &r)) < 0) {
        free(p);
        return;
    }
    pthread_mutex_lock(&cache.mu);
    bool keep = !cache.closed && cache.cached + r <= RT_CACHE_CAP;
    if (keep) {
        free_block *b = p;
        b->next = cache.lists[cls];
        cache.lists[cls] = b;
        cache.cached += r;
    }
    pthread_mutex_unlock(&cache.mu);
    if (!keep)
        free(p);
}

size_t rt_alloc_cached_bytes(void)
{
    pthread_mutex_lock(&cache.mu);
    size_t n = cache.cached;
    pthread_mutex_unlock(&cache.mu);
    return n;
}

void rt_alloc_trim(void)
{
    free_block *all = NULL;
    pthread_mutex_lock(&cache.mu);
    for (int k = 0; k < RT_NCLASSES; k++) {
        while (cache.lists[k]) {
            free_block *b = cache.lists[k];
            cache.lists[k] = b->next;
            b->next = all;
            all = b;
        }
    }
    cache.cached = 0;
    pthread_mutex_unlock(&cache.mu);
    while (all) {
        free_block *b = all;
        all = b->next;
        free(b);
    }
}

void tj_alloc_trim(void)
{
    tjg_cache_clear();   /* packed weights (gemm_cache.c) first: their blocks come back here */
    rt_alloc_trim();
    rt_quarantine_drain();
}

size_t tj_alloc_cached_bytes(void) { return rt_alloc_cached_bytes(); }

size_t tj_alloc_live_bytes(void) { return atomic_load_explicit(&live, memory_order_relaxed); }

size_t tj_alloc_peak_bytes(bool reset)
{
    size_t p = atomic_load_explicit(&peak, memory_order_relaxed);
    if (reset)
        atomic_store_explicit(&peak, atomic_load_explicit(&live, memory_order_relaxed), memory_order_relaxed);
    return p;
}

/* fork() in a threaded program: hold the lock across it so the child never
 * inherits it locked. */
static void alloc_lock(void) { pthread_mutex_lock(&cache.mu); }
static void alloc_unlock(void) { pthread_mutex_unlock(&cache.mu); }

__attribute__((constructor)) static void alloc_init(void)
{
    pthread_atfork(alloc_lock, alloc_unlock, alloc_unlock);
}

/* At exit: release the cache so leak checkers see nothing, and stop caching
 * for tensors freed later by other exit handlers. */
__attribute__((destructor)) static void alloc_at_exit(void)
{
    tjg_cache_clear();
    pthread_mutex_lock(&cache.mu);
    cache.closed = true;
    pthread_mutex_unlock(&cache.mu);
    rt_alloc_trim();
}
