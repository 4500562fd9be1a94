/* gemm_cache.c - packed right operands kept across calls (runtime/gemm.h),
 * so a weight is packed once, not in every matmul that reads it.
 *
 * Key: the storage's serial (unique for the process's life, so a freed and
 * reused address never hits), its version plus its tj_data count (an
 * in-place update or a pointer handed out misses: k_matmul.c's stamp), the
 * operand's byte offset, strides, k, n and packed type. Only the weights a
 * compiled call names (rt_gemm_frozen: its captures, frozen or not, less
 * those it writes) are kept: other operands change from call to call. Entries are reference-counted while a GEMM reads them;
 * the least recently used idle ones go beyond TJG_CACHE_BYTES. One mutex
 * guards the table (a lookup is a few dozen compares). A weight's Strassen
 * form (gemm_strassen.c) is an entry of its own (key type KEY_STRASSEN).
 * An f32 entry looked up lazily (tjg_cache_get_lazy) is a placeholder: its
 * key and version follow the same rules, but it is packed only when a call
 * needs its data (tjg_cache_fill, or a lookup that is not lazy), so a weight
 * whose GEMMs all take the Strassen form does not keep its plain form too.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "rt.h"

#define TJG_CACHE_BYTES ((size_t)128 << 20)
enum { NENTRY = 64 };

typedef struct wkey {
    uint64_t serial;
    unsigned version;
    int64_t offset, rs, cs, k, n;
    int type;
} wkey;

typedef struct wentry {
    wkey key;
    tjg_packed p;
    uint64_t tick;
    int users;
    bool used;
    atomic_int choice;   /* autotune's winner for this weight: 0 not timed yet */
    bool marker;         /* no data: the weight changed between calls (tjg_cache_get_stable) */
    bool unpacked;       /* a placeholder (tjg_cache_get_lazy): not packed yet */
} wentry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static wentry entries[NENTRY];
static size_t cached_bytes;
static uint64_t ticks;

static bool key_eq(const wkey *a, const wkey *b) { return !memcmp(a, b, sizeof *a); }

static void entry_drop(wentry *e)
{
    cached_bytes -= e->p.nbytes;
    tjg_packed_free(&e->p);
    e->used = false;
}

/* The least recently used idle entry, or NULL. Under the lock. */
static wentry *lru_idle(void)
{
    wentry *lru = NULL;
    for (int i = 0; i < NENTRY; i++) {
        wentry *e = &entries[i];
        if (e->used && e->users == 0 && (!lru || e->tick < lru->tick))
            lru = e;
    }
    return lru;
}

/* An idle slot, evicting the least recently used idle entries while the
 * budget is exceeded; NULL when every slot is busy. Under the lock. */
static wentry *slot_for(size_t bytes)
{
    for (;;) {
        wentry *free_slot = NULL, *lru;
        for (int i = 0; i < NENTRY && !free_slot; i++)
            if (!entries[i].used)
                free_slot = &entries[i];
        if (free_slot && cached_bytes + bytes <= TJG_CACHE_BYTES)
            return free_slot;
        if (!(lru = lru_idle()))
            return NULL;
        entry_drop(lru);
    }
}

/* key.type of a Strassen form (tjg_pack_f32_strassen); others type * 2 + from_f32 */
enum { KEY_STRASSEN = 64 };

static int pack(tjg_packed *p, int key_type, const void *b, int64_t rs, int64_t cs, int64_t k,
                int64_t n)
{
    tjg_type type = (tjg_type)(key_type / 2);
    bool from_f32 = key_type % 2;
    if (key_type == KEY_STRASSEN)
        return tjg_pack_f32_strassen(p, b, rs, cs, k, n);
    if (type == TJG_F32)
        return tjg_pack_f32(p, b, rs, cs, k, n);
    if (type == TJG_S8)
        return tjg_pack_f32_as_s8(p, b, rs, cs, k, n);
    if (type == TJG_F16)
        return from_f32 ? tjg_pack_f32_as_f16(p, b, rs, cs, k, n) : tjg_pack_f16(p, b, rs, cs, k, n);
    return from_f32 ? tjg_pack_f32_as_bf16(p, b, rs, cs, k, n) : tjg_pack_bf16(p, b, rs, cs, k, n);
}

/* Packs placeholder e (in use by the caller) from b, which holds the data
 * of e's key, evicting idle entries over the budget. Under the lock. */
static int fill(wentry *e, const void *b)
{
    if (!e->unpacked)
        return 0;
    tjg_packed p;
    const wkey *kk = &e->key;
    if (pack(&p, kk->type, b, kk->rs, kk->cs, kk->k, kk->n))
        return -1;
    wentry *lru;
    while (cached_bytes + p.nbytes > TJG_CACHE_BYTES && (lru = lru_idle()))
        entry_drop(lru);
    if (cached_bytes + p.nbytes > TJG_CACHE_BYTES) {
        tjg_packed_free(&p);
        return -1;
    }
    e->p = p;
    e->unpacked = false;
    cached_bytes += p.nbytes;
    return 0;
}

static const tjg_packed *get(uint64_t serial, unsigned version, int64_t offset, const void *b,
                             int64_t rs, int64_t cs, int64_t k, int64_t n, int key_type,
                             void **handle, bool stable, bool lazy)
{
    *handle = NULL;
    if (!serial || key_type == TJG_S8 * 2)
        return NULL;
    wkey key;
    memset(&key, 0, sizeof key);   /* padding compared by memcmp */
    key.serial = serial, key.version = version, key.offset = offset;
    key.rs = rs, key.cs = cs, key.k = k, key.n = n, key.type = key_type;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < NENTRY; i++) {
        wentry *e = &entries[i];
        if (e->used && key_eq(&e->key, &key) && !e->marker) {
            e->users++;   /* held first: fill's eviction passes it over */
            if (!lazy && fill(e, b)) {   /* a placeholder whose data is needed now */
                e->users--;
                pthread_mutex_unlock(&lock);
                return NULL;
            }
            e->tick = ++ticks;
            pthread_mutex_unlock(&lock);
            *handle = e;
            return &e->p;
        }
    }
    for (int i = 0; i < NENTRY; i++) {
        wentry *e = &entries[i];
        wkey other = e->key;
        other.version = version;
        if (stable && e->used && e->users == 0 && key_eq(&other, &key) &&
            (e->marker || e->key.version != version)) {
            /* the same weight at another version: changed since it was
             * seen, so not packed now (again when two calls see one
             * version); a marker at this version has been seen once */
            bool seen = e->marker && e->key.version == version;
            entry_drop(e);
            if (!seen) {
                *e = (wentry){.key = key, .tick = ++ticks, .used = true, .marker = true};
                atomic_init(&e->choice, 0);
                pthread_mutex_unlock(&lock);
                return NULL;
            }
            break;
        }
    }
    /* packed under the lock: rare (once per weight and version) */
    tjg_packed p;
    wentry *e = NULL;
    if (lazy) {   /* a placeholder: no data, no bytes */
        if ((e = slot_for(0))) {
            *e = (wentry){.key = key, .tick = ++ticks, .users = 1, .used = true, .unpacked = true,
                          .p = {.type = (tjg_type)(key_type / 2), .k = k, .n = n, .kp = k}};
            atomic_init(&e->choice, 0);
        }
    } else if (pack(&p, key_type, b, rs, cs, k, n) == 0) {
        if ((e = slot_for(p.nbytes))) {
            *e = (wentry){.key = key, .p = p, .tick = ++ticks, .users = 1, .used = true};
            atomic_init(&e->choice, 0);
            cached_bytes += p.nbytes;
        } else {
            tjg_packed_free(&p);
        }
    }
    pthread_mutex_unlock(&lock);
    *handle = e;
    return e ? &e->p : NULL;
}

const tjg_packed *tjg_cache_get(uint64_t serial, unsigned version, int64_t offset, const void *b,
                                int64_t rs, int64_t cs, int64_t k, int64_t n, tjg_type type,
                                bool from_f32, void **handle)
{
    return get(serial, version, offset, b, rs, cs, k, n, (int)type * 2 + from_f32, handle, false,
               false);
}

const tjg_packed *tjg_cache_get_stable(uint64_t serial, unsigned version, int64_t offset,
                                       const void *b, int64_t rs, int64_t cs, int64_t k,
                                       int64_t n, tjg_type type, bool from_f32, void **handle)
{
    return get(serial, version, offset, b, rs, cs, k, n, (int)type * 2 + from_f32, handle, true,
               false);
}

const tjg_packed *tjg_cache_get_lazy(uint64_t serial, unsigned version, int64_t offset,
                                     const float *b, int64_t rs, int64_t cs, int64_t k, int64_t n,
                                     bool stable, void **handle)
{
    return get(serial, version, offset, b, rs, cs, k, n, TJG_F32 * 2, handle, stable, true);
}

int tjg_cache_fill(void *handle, const float *b)
{
    pthread_mutex_lock(&lock);
    int r = fill(handle, b);
    pthread_mutex_unlock(&lock);
    return r;
}

const tjg_packed *tjg_cache_get_strassen(uint64_t serial, unsigned version, int64_t offset,
                                         const float *b, int64_t rs, int64_t cs, int64_t k,
                                         int64_t n, void **handle)
{
    return get(serial, version, offset, b, rs, cs, k, n, KEY_STRASSEN, handle, true, false);
}

void tjg_cache_put(void *handle)
{
    if (!handle)
        return;
    pthread_mutex_lock(&lock);
    ((wentry *)handle)->users--;
    pthread_mutex_unlock(&lock);
}

void tjg_cache_clear(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < NENTRY; i++)
        if (entries[i].used && entries[i].users == 0)
            entry_drop(&entries[i]);
    pthread_mutex_unlock(&lock);
}

atomic_int *tjg_cache_choice(void *handle)
{
    return handle ? &((wentry *)handle)->choice : NULL;
}

/* ---- the frozen weights of this thread's current call ---------------------------------- */

static _Thread_local tj_tensor *const *frozen;
static _Thread_local int nfrozen;
static _Thread_local unsigned frozen_flags;

void rt_gemm_frozen(tj_tensor *const *t, int n, unsigned flags)
{
    frozen = t;
    nfrozen = n;
    frozen_flags = flags;
}

void rt_gemm_frozen_get(tj_tensor *const **t, int *n, unsigned *flags)
{
    *t = frozen;
    *n = nfrozen;
    *flags = frozen_flags;
}

bool tjg_frozen(const rt_storage *st, unsigned *flags)
{
    *flags = frozen_flags;
    for (int i = 0; st && st->serial && i < nfrozen; i++)
        if (frozen[i] && frozen[i]->storage == st)
            return true;
    return false;
}

/* fork() in a threaded program: the child never inherits the lock held. */
static void cache_lock(void) { pthread_mutex_lock(&lock); }
static void cache_unlock(void) { pthread_mutex_unlock(&lock); }
__attribute__((constructor)) static void cache_init(void)
{
    pthread_atfork(cache_lock, cache_unlock, cache_unlock);
}

size_t tjg_cache_bytes(void)
{
    pthread_mutex_lock(&lock);
    size_t b = cached_bytes;
    pthread_mutex_unlock(&lock);
    return b;
}
