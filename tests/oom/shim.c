/* shim.c - an LD_PRELOAD allocator that fails one allocation on request, for
 * the allocation-failure sweep (scripts/check-oom.sh, tests/oom/driver.c).
 *
 * malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign and valloc
 * forward to glibc's __libc_* functions. The driver calls tj_oom_arm(n)
 * (found with dlsym): from then on allocations are counted, and the n-th
 * returns NULL (n = 0: none fails; only that one, the others succeed). With
 * TJIT_OOM_SCOPE=tjit only the allocations tjit's own code makes (the caller
 * is in the main program) are counted and failed. When
 * it fails one, it writes to stderr, without allocating:
 *
 *   oom-shim: failed allocation N in LLVM|tjit|other
 *
 * "LLVM" when a frame of the call stack is in libLLVM (an allocation LLVM
 * makes, which aborts by design when it fails), "tjit" when the allocation's
 * caller is in the main program (tjit is linked statically into the driver).
 *
 * Leaks: allocations made while armed whose caller is in the main program are
 * kept in a table (pointer -> call site) until freed; tj_oom_report() prints
 * the live ones per call site ("oom-shim: live SITE COUNT"), which the script
 * compares with a run where nothing fails. Allocations tjit makes through libc
 * (strdup, asprintf, fopen) are not attributed to it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_long count;      /* allocations since tj_oom_arm */
static atomic_long fail_at;    /* the one that fails; 0: none */
static atomic_bool armed;
static bool only_main;         /* TJIT_OOM_SCOPE=tjit: count tjit's own allocations only */
static uintptr_t main_lo, main_hi;   /* the main program's mapped range */

static bool in_main(uintptr_t site) { return site >= main_lo && site < main_hi; }

/* ---- live allocations of the main program (open addressing, one lock) ------------ */

#define TAB_BITS 20
#define TAB_SIZE (1u << TAB_BITS)
static struct slot { uintptr_t p, site; } tab[TAB_SIZE];
static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;
static const uintptr_t TOMB = 1;

static size_t hash(uintptr_t p) { return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull >> (64 - TAB_BITS)); }

static void tab_add(void *ptr, uintptr_t site)
{
    uintptr_t p = (uintptr_t)ptr;
    pthread_mutex_lock(&tab_mu);
    for (size_t i = hash(p), k = 0; k < TAB_SIZE; k++, i = (i + 1) & (TAB_SIZE - 1))
        if (tab[i].p == 0 || tab[i].p == TOMB) {
            tab[i].p = p;
            tab[i].site = site;
            break;
        }
    pthread_mutex_unlock(&tab_mu);
}

static void tab_del(void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    if (!p)
        return;
    pthread_mutex_lock(&tab_mu);
    for (size_t i = hash(p), k = 0; k < TAB_SIZE && tab[i].p; k++, i = (i + 1) & (TAB_SIZE - 1))
        if (tab[i].p == p) {
            tab[i].p = TOMB;
            break;
        }
    pthread_mutex_unlock(&tab_mu);
}

/* ---- the decision ------------------------------------------------------------------ */

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

static int find_llvm(void)
{
    void *frames[64];
    int n = backtrace(frames, 64);
    for (int i = 0; i < n; i++) {
        Dl_info di;
        if (dladdr(frames[i], &di) && di.dli_fname && strstr(di.dli_fname, "libLLVM"))
            return 1;
    }
    return 0;
}

/* true: this allocation fails */
static bool should_fail(uintptr_t site)
{
    if (!atomic_load_explicit(&armed, memory_order_relaxed) || (only_main && !in_main(site)))
        return false;
    long n = atomic_fetch_add(&count, 1) + 1;
    if (n != atomic_load(&fail_at))
        return false;
    char buf[96];
    const char *where = find_llvm() ? "LLVM" : in_main(site) ? "tjit" : "other";
    snprintf(buf, sizeof buf, "oom-shim: failed allocation %ld in %s\n", n, where);
    say(buf);
    return true;
}

static void *track(void *p, uintptr_t site)
{
    if (p && atomic_load_explicit(&armed, memory_order_relaxed) && in_main(site))
        tab_add(p, site);
    return p;
}

#define SITE ((uintptr_t)__builtin_return_address(0))

API void *malloc(size_t n)
{
    if (should_fail(SITE)) {
        errno = ENOMEM;
        return NULL;
    }
    return track(__libc_malloc(n), SITE);
}

API void *calloc(size_t a, size_t b)
{
    if (should_fail(SITE)) {
        errno = ENOMEM;
        return NULL;
    }
    return track(__libc_calloc(a, b), SITE);
}

API void *realloc(void *p, size_t n)
{
    if (should_fail(SITE)) {
        errno = ENOMEM;
        return NULL;
    }
    void *q = __libc_realloc(p, n);
    if (q || n == 0)
        tab_del(p);
    return track(q, SITE);
}

API void free(void *p)
{
    tab_del(p);
    __libc_free(p);
}

static void *aligned(size_t al, size_t n, uintptr_t site)
{
    if (should_fail(site)) {
        errno = ENOMEM;
        return NULL;
    }
    return track(__libc_memalign(al, n), site);
}

API int posix_memalign(void **out, size_t al, size_t n)
{
    if (al < sizeof(void *) || (al & (al - 1)))
        return EINVAL;
    void *p = aligned(al, n, SITE);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

API void *aligned_alloc(size_t al, size_t n) { return aligned(al, n, SITE); }
API void *memalign(size_t al, size_t n) { return aligned(al, n, SITE); }
API void *valloc(size_t n) { return aligned((size_t)sysconf(_SC_PAGESIZE), n, SITE); }

/* ---- the driver's side ------------------------------------------------------------- */

API void tj_oom_arm(long n)
{
    const char *scope = getenv("TJIT_OOM_SCOPE");
    only_main = scope && !strcmp(scope, "tjit");
    atomic_store(&armed, false);
    atomic_store(&count, 0);
    atomic_store(&fail_at, n);
    atomic_store(&armed, true);
}

API long tj_oom_disarm(void)
{
    atomic_store(&armed, false);
    return atomic_load(&count);
}

/* Live main-program allocations made while armed, per call site. */
API void tj_oom_report(void)
{
    pthread_mutex_lock(&tab_mu);
    for (size_t i = 0; i < TAB_SIZE; i++) {
        if (tab[i].p <= TOMB || !tab[i].site)
            continue;
        uintptr_t site = tab[i].site;
        long n = 0;
        for (size_t j = i; j < TAB_SIZE; j++)
            if (tab[j].p > TOMB && tab[j].site == site) {
                n++;
                tab[j].site = 0;   /* counted */
            }
        char buf[96];
        snprintf(buf, sizeof buf, "oom-shim: live %#lx %ld\n", (unsigned long)(site - main_lo), n);
        say(buf);
    }
    pthread_mutex_unlock(&tab_mu);
}

static int main_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!main_lo || lo < main_lo)
            main_lo = lo;
        if (hi > main_hi)
            main_hi = hi;
    }
    return 1;   /* the first object is the main program */
}

__attribute__((constructor)) static void shim_init(void)
{
    dl_iterate_phdr(main_range, NULL);
    void *f[4];
    backtrace(f, 4);   /* loads libgcc_s now, not inside a failing allocation */
}
