/* cache.c - the kernel cache (cache.h): object code by key, in a bounded
 * in-memory LRU and in a directory of files.
 *
 *   get:  memory (hash table + LRU list) -> entry <hex>.o of the open cache
 *         directory, checked and authenticated -> miss.  A disk hit is copied
 *         into memory.
 *   put:  memory, then disk: a temp file renamed over <hex>.o.
 *
 * The directory, its parents, the key file and each entry are opened and
 * checked by cache_fs.c (who owns them, who may write them, no links); this
 * file holds the memory layer and the entry format. An entry is a 120-byte
 * header and the payload (the object file as LLVM emitted it). Header, all
 * integers little-endian:
 *     0  magic "TJITOBJ\n"          8  format version (u32)   12  header size (u32)
 *    16  the key, 64 hex digits    80  payload length (u64)
 *    88  HMAC-SHA256 under the directory's secret key of bytes 0..87 and the payload
 * Every byte of it is checked on read; a file that fails is warned about,
 * removed (if it is still the same file) and counted as corrupt and as a miss.
 *
 * Locking: one mutex per cache guards the memory layer, the statistics and the
 * directory state (opening the directory runs under it, once); entry I/O runs
 * outside it, on a reference to the open directory. Concurrent puts of one key
 * each write their own temp file, and rename makes one of them win whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <llvm/Config/llvm-config.h>

#include "cache.h"
#include "cache_fs.h"
#include "hmac.h"
#include "sha256.h"
#include <cg_source_hash.h>   /* CG_SOURCE_HASH: generated into build/gen/ by the Makefile from codegen's sources */

#define CG_MAGIC "TJITOBJ\n"
#define CG_FORMAT 2u          /* 1: a plain SHA-256 of the payload at CG_MAC_AT */
#define CG_HEADER 120
#define CG_MAC_AT 88
#define CG_MAX_OBJECT ((uint64_t)1 << 30)   /* a longer payload field is corrupt */
#define CG_BUCKETS 1024

/* ---- keys ---------------------------------------------------------------------- */

static pthread_mutex_t host_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const cg_key_env *) host_ready;   /* &host_env once complete */
static cg_key_env host_env;

/* The host's CPU name and features, each a strdup that LLVM returns as NULL
 * when the allocation fails: then no environment (the caller reports it), and
 * the next call tries again. Never a stand-in such as "unknown", which would
 * key kernels of one CPU under a name any other host could match. */
static bool host_init(void)
{
    static char version[96];
    unsigned major = 0, minor = 0, patch = 0;
    LLVMGetVersion(&major, &minor, &patch);
    snprintf(version, sizeof version, "%u.%u.%u (built with %s)", major, minor, patch,
             LLVM_VERSION_STRING);
    if (!host_env.cpu)
        host_env.cpu = LLVMGetHostCPUName();   /* ownership: kept for the process */
    if (!host_env.features)
        host_env.features = LLVMGetHostCPUFeatures();
    host_env.llvm_version = version;
    host_env.codegen = CG_SOURCE_HASH;
    return host_env.cpu && host_env.features;
}

const cg_key_env *cg_key_env_host(void)
{
    const cg_key_env *env = atomic_load(&host_ready);
    if (env)
        return env;
    pthread_mutex_lock(&host_mu);
    if (!(env = atomic_load(&host_ready)) && host_init())
        atomic_store(&host_ready, env = &host_env);
    pthread_mutex_unlock(&host_mu);
    return env;
}

/* A field: its length (u64, little-endian) then its bytes, so no two
 * different field lists hash the same byte string. */
static void hash_field(cg_sha256_ctx *s, const void *p, size_t len)
{
    uint8_t n[8];
    for (int k = 0; k < 8; k++)
        n[k] = (uint8_t)((uint64_t)len >> (8 * k));
    cg_sha256_update(s, n, 8);
    cg_sha256_update(s, p, len);
}

static void hash_str(cg_sha256_ctx *s, const char *str)
{
    str = str ? str : "";
    hash_field(s, str, strlen(str));
}

void cg_key_make_env(const char *kernel_ir, size_t len, const cg_key_env *env, cg_key *out)
{
    char format[24];
    uint8_t digest[32];
    cg_sha256_ctx s;
    snprintf(format, sizeof format, "format %u", CG_FORMAT);
    cg_sha256_init(&s);
    hash_str(&s, "tjit kernel key 1");
    hash_str(&s, format);               /* another entry format: another file name */
    hash_str(&s, env->codegen);
    hash_str(&s, env->llvm_version);
    hash_str(&s, env->cpu);
    hash_str(&s, env->features);
    hash_field(&s, kernel_ir ? kernel_ir : "", kernel_ir ? len : 0);
    cg_sha256_final(&s, digest);
    cg_sha256_hex(digest, out->hex);
}

int cg_key_make(const char *kernel_ir, size_t len, cg_key *out)
{
    const cg_key_env *env = cg_key_env_host();
    if (!env)
        return -1;
    cg_key_make_env(kernel_ir, len, env, out);
    return 0;
}

/* ---- the cache object ---------------------------------------------------------------- */

typedef struct cg_entry {
    char hex[64];
    uint8_t *obj;
    size_t len;
    struct cg_entry *hnext;              /* bucket chain */
    struct cg_entry *prev, *next;        /* LRU list, most recent first */
} cg_entry;

typedef enum { DISK_OFF, DISK_UNCHECKED, DISK_READY } disk_state;
static void dir_drop(cg_dir *d);

struct cg_cache {
    pthread_mutex_t mu;
    char *dir;                  /* as configured; NULL: memory only from the start */
    disk_state disk;
    cg_dir *d;                  /* the open directory when DISK_READY (one reference) */
    bool fsync;
    cg_entry *buckets[CG_BUCKETS];
    cg_entry lru;               /* sentinel */
    size_t mem_bytes, mem_limit;
    cg_cache_stats st;
};

static bool env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && !strcmp(v, value);
}

cg_cache *cg_cache_new(const char *dir)
{
    cg_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (dir && *dir && !env_is("TJIT_CACHE", "0") && !(c->dir = strdup(dir))) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->disk = c->dir ? DISK_UNCHECKED : DISK_OFF;
    c->fsync = env_is("TJIT_CACHE_FSYNC", "1");
    c->lru.prev = c->lru.next = &c->lru;
    c->mem_limit = CG_CACHE_MEM_LIMIT;
    return c;
}

/* The bucket of a key: its first three hex digits. */
static size_t bucket_of(const char *hex)
{
    size_t b = 0;
    for (int k = 0; k < 3; k++)
        b = b * 16 + (size_t)(hex[k] <= '9' ? hex[k] - '0' : hex[k] - 'a' + 10);
    return b % CG_BUCKETS;
}

static void entry_drop(cg_cache *c, cg_entry *e)
{
    cg_entry **p = &c->buckets[bucket_of(e->hex)];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    e->prev->next = e->next;
    e->next->prev = e->prev;
    c->mem_bytes -= e->len;
    free(e->obj);
    free(e);
}

void cg_cache_free(cg_cache *c)
{
    if (!c)
        return;
    for (cg_entry *e = c->lru.next, *n; e != &c->lru; e = n) {
        n = e->next;
        free(e->obj);
        free(e);
    }
    dir_drop(c->d);
    pthread_mutex_destroy(&c->mu);
    free(c->dir);
    free(c);
}

/* The default directory: $TJIT_CACHE_DIR, $XDG_CACHE_HOME/tjit, ~/.cache/tjit. */
static char *default_dir(void)
{
    const char *v = getenv("TJIT_CACHE_DIR");
    if (v && *v)
        return strdup(v);
    char buf[4096];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (!(home && *home)) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
    }
    if (xdg && *xdg && xdg[0] == '/')
        snprintf(buf, sizeof buf, "%s/tjit", xdg);
    else if (home && *home)
        snprintf(buf, sizeof buf, "%s/.cache/tjit", home);
    else
        return NULL;
    return strdup(buf);
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static cg_cache *global_cache;

static void global_init(void)
{
    char *dir = env_is("TJIT_CACHE", "0") ? NULL : default_dir();
    global_cache = cg_cache_new(dir);
    free(dir);
}

cg_cache *cg_cache_global(void)
{
    pthread_once(&global_once, global_init);
    return global_cache;
}

/* ---- memory layer (callers hold c->mu) ------------------------------------------------- */

static cg_entry *mem_find(cg_cache *c, const cg_key *k)
{
    for (cg_entry *e = c->buckets[bucket_of(k->hex)]; e; e = e->hnext)
        if (!memcmp(e->hex, k->hex, 64))
            return e;
    return NULL;
}

static void lru_front(cg_cache *c, cg_entry *e)
{
    e->next = c->lru.next;
    e->prev = &c->lru;
    e->next->prev = e;
    c->lru.next = e;
}

/* Drops least recently used entries until the bound holds. */
static void mem_evict(cg_cache *c)
{
    while (c->mem_bytes > c->mem_limit && c->lru.prev != &c->lru) {
        entry_drop(c, c->lru.prev);
        c->st.evictions++;
    }
}

/* Takes ownership of obj (a malloc'd copy of len bytes), replacing an older
 * entry of the key; false (obj freed) when it is larger than the whole bound
 * or memory ran out. */
static bool mem_insert(cg_cache *c, const cg_key *k, uint8_t *obj, size_t len)
{
    cg_entry *e = mem_find(c, k);
    if (e)
        entry_drop(c, e);
    if (len > c->mem_limit || !(e = malloc(sizeof *e))) {
        free(obj);
        return false;
    }
    memcpy(e->hex, k->hex, 64);
    e->obj = obj;
    e->len = len;
    size_t b = bucket_of(k->hex);
    e->hnext = c->buckets[b];
    c->buckets[b] = e;
    lru_front(c, e);
    c->mem_bytes += len;
    mem_evict(c);
    return true;
}

/* ---- the directory (callers hold c->mu) ------------------------------------------------ */

/* Gives back one reference to d, closing it with the last. */
static void dir_drop(cg_dir *d)
{
    if (d && --d->refs == 0)
        cg_dir_close(d);
}

/* Turns the disk layer off (the reason was warned about). */
static void disk_off(cg_cache *c)
{
    dir_drop(c->d);
    c->d = NULL;
    c->disk = DISK_OFF;
}

/* The open directory to use now, with a reference the caller gives back with
 * dir_release; NULL when there is no disk layer. The directory is opened (its
 * path walked and checked, cache_fs.c) on first use and again after it was
 * removed; every use checks the open directory is still ours alone. create:
 * make the directory and key when missing (a get only looks). */
static cg_dir *dir_acquire(cg_cache *c, bool create)
{
    if (c->disk == DISK_READY) {
        int r = cg_dir_recheck(c->d, c->dir);
        if (r < 0)
            disk_off(c);
        else if (r == 0) {
            disk_off(c);
            c->disk = DISK_UNCHECKED;
        }
    }
    if (c->disk == DISK_UNCHECKED) {
        int r = cg_dir_open(c->dir, create, &c->d);
        if (r < 0)
            c->disk = DISK_OFF;
        else if (r > 0)
            c->disk = DISK_READY;
    }
    if (c->disk != DISK_READY)
        return NULL;
    c->d->refs++;
    return c->d;
}

static void dir_release(cg_cache *c, cg_dir *d)
{
    pthread_mutex_lock(&c->mu);
    dir_drop(d);
    pthread_mutex_unlock(&c->mu);
}

/* ---- disk files (no lock held) ------------------------------------------------------- */

/* An entry's file name in the directory: "<hex>.o". */
static void entry_name(const cg_key *k, char name[68])
{
    snprintf(name, 68, "%.64s.o", k->hex);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

/* The MAC of an entry: HMAC-SHA256 under the directory's key of the header's
 * first CG_MAC_AT bytes and the payload. */
static void entry_mac(const cg_dir *d, const uint8_t *h, const void *obj, size_t len, uint8_t out[32])
{
    cg_hmac_ctx m;
    cg_hmac_init(&m, d->key, sizeof d->key);
    cg_hmac_update(&m, h, CG_MAC_AT);
    cg_hmac_update(&m, obj, len);
    cg_hmac_final(&m, out);
}

static void header_make(uint8_t h[CG_HEADER], const cg_dir *d, const cg_key *k, const void *obj,
                        size_t len)
{
    memcpy(h, CG_MAGIC, 8);
    put_u32(h + 8, CG_FORMAT);
    put_u32(h + 12, CG_HEADER);
    memcpy(h + 16, k->hex, 64);
    put_u64(h + 80, len);
    entry_mac(d, h, obj, len, h + CG_MAC_AT);
}

/* Whether header h fits key k and a file of fsize bytes (the MAC aside). */
static bool header_ok(const uint8_t h[CG_HEADER], const cg_key *k, uint64_t fsize)
{
    uint64_t len = get_le(h + 80, 8);
    return !memcmp(h, CG_MAGIC, 8) && get_le(h + 8, 4) == CG_FORMAT &&
           get_le(h + 12, 4) == CG_HEADER && !memcmp(h + 16, k->hex, 64) &&
           len <= CG_MAX_OBJECT && len + CG_HEADER == fsize && len > 0;
}

/* Reads and verifies the open entry fd (already checked: ours, 0600, regular).
 * CG_R_NONE with *obj malloc'd (NULL when out of memory), or why it is bad. */
static cg_fs_reason entry_read(const cg_dir *d, int fd, const cg_key *k, const struct stat *st,
                               uint8_t **obj, size_t *len)
{
    uint8_t h[CG_HEADER], mac[32];
    *obj = NULL;
    if (st->st_size < CG_HEADER || !cg_read_all(fd, h, CG_HEADER) ||
        !header_ok(h, k, (uint64_t)st->st_size))
        return CG_R_CORRUPT;
    *len = (size_t)get_le(h + 80, 8);
    if (!(*obj = malloc(*len)))
        return CG_R_NONE;
    cg_fs_reason why = CG_R_NONE;
    if (!cg_read_all(fd, *obj, *len))
        why = CG_R_CORRUPT;
    else {
        entry_mac(d, h, *obj, *len, mac);
        why = cg_hmac_equal(mac, h + CG_MAC_AT) ? CG_R_NONE : CG_R_MAC;
    }
    if (why) {
        free(*obj);
        *obj = NULL;
    }
    return why;
}

/* 1: a verified hit (*obj malloc'd); 0: no such entry (or out of memory);
 * -1: the entry is bad (warned about, and removed). */
static int disk_read(cg_cache *c, const cg_dir *d, const cg_key *k, uint8_t **obj, size_t *len)
{
    char name[68];
    struct stat st;
    cg_fs_reason why;
    entry_name(k, name);
    *obj = NULL;
    int fd = cg_entry_open(d, name, &st, &why);
    if (fd >= 0) {
        why = entry_read(d, fd, k, &st, obj, len);
        close(fd);
    }
    if (!why)
        return *obj ? 1 : 0;
    cg_fs_warn(CG_O_ENTRY, why, c->dir, name, 0);
    cg_entry_remove(d, name, &st);
    return -1;
}

/* Writes the entry of k (a temp file renamed into place). 0, or -1 with errno. */
static int disk_write(cg_cache *c, const cg_dir *d, const cg_key *k, const void *obj, size_t len)
{
    char name[68];
    uint8_t h[CG_HEADER];
    entry_name(k, name);
    header_make(h, d, k, obj, len);
    return cg_entry_write(d, name, h, CG_HEADER, obj, len, c->fsync);
}

/* ---- the interface --------------------------------------------------------------------- */

static bool key_ok(const cg_key *k)
{
    if (!k || k->hex[64])
        return false;
    for (int i = 0; i < 64; i++)
        if (!((k->hex[i] >= '0' && k->hex[i] <= '9') || (k->hex[i] >= 'a' && k->hex[i] <= 'f')))
            return false;
    return true;
}

static void *dup_bytes(const void *p, size_t n)
{
    void *q = malloc(n);
    return q ? memcpy(q, p, n) : NULL;
}

/* A disk hit or miss: statistics, and the hit copied into memory. */
static void note_disk(cg_cache *c, const cg_key *k, int r, const void *obj, size_t len)
{
    pthread_mutex_lock(&c->mu);
    if (r == 1) {
        c->st.disk_hits++;
        uint8_t *copy = dup_bytes(obj, len);
        if (copy)
            mem_insert(c, k, copy, len);
    } else {
        c->st.corrupt += r < 0;
        c->st.misses++;
    }
    pthread_mutex_unlock(&c->mu);
}

int cg_cache_get(cg_cache *c, const cg_key *k, void **obj, size_t *len)
{
    if (!c || !obj || !len)
        return -1;
    *obj = NULL;
    *len = 0;
    pthread_mutex_lock(&c->mu);
    cg_entry *e = key_ok(k) ? mem_find(c, k) : NULL;
    if (e && (*obj = dup_bytes(e->obj, e->len))) {
        *len = e->len;
        e->prev->next = e->next;     /* to the front of the LRU list */
        e->next->prev = e->prev;
        lru_front(c, e);
        c->st.mem_hits++;
        pthread_mutex_unlock(&c->mu);
        return 0;
    }
    cg_dir *d = !e && key_ok(k) ? dir_acquire(c, false) : NULL;
    pthread_mutex_unlock(&c->mu);
    int r = 0;
    uint8_t *bytes = NULL;
    if (d) {
        r = disk_read(c, d, k, &bytes, len);
        dir_release(c, d);
    }
    note_disk(c, k, r, bytes, *len);
    if (r != 1) {
        *len = 0;
        return -1;
    }
    *obj = bytes;
    return 0;
}

int cg_cache_put(cg_cache *c, const cg_key *k, const void *obj, size_t len)
{
    if (!c || !key_ok(k) || !obj || !len)
        return -1;
    uint8_t *copy = dup_bytes(obj, len);
    pthread_mutex_lock(&c->mu);
    bool in_mem = copy && mem_insert(c, k, copy, len);
    cg_dir *d = dir_acquire(c, true);
    pthread_mutex_unlock(&c->mu);
    if (!d)
        return in_mem ? 0 : -1;
    /* A directory removed since dir_acquire checked it fails here too (ENOENT):
     * memory only then, like any failed write. */
    int rc = disk_write(c, d, k, obj, len);
    int err = errno;
    pthread_mutex_lock(&c->mu);
    if (!rc)
        c->st.writes += CG_HEADER + len;
    else if (c->d == d) {
        cg_fs_warn(CG_O_DIR, CG_R_WRITE, c->dir, NULL, err);
        disk_off(c);
    }
    dir_drop(d);
    pthread_mutex_unlock(&c->mu);
    return in_mem || !rc ? 0 : -1;
}

void cg_cache_stats_get(cg_cache *c, cg_cache_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    *s = c->st;
    s->mem_bytes = c->mem_bytes;
    pthread_mutex_unlock(&c->mu);
}

void cg_cache_set_mem_limit(cg_cache *c, size_t bytes)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->mem_limit = bytes;
    mem_evict(c);
    pthread_mutex_unlock(&c->mu);
}

const char *cg_cache_dir(cg_cache *c)
{
    if (!c)
        return NULL;
    pthread_mutex_lock(&c->mu);
    const char *d = c->disk != DISK_OFF ? c->dir : NULL;
    pthread_mutex_unlock(&c->mu);
    return d;
}
