/* blas.c - the bridge to OpenBLAS (see blas.h): loads libopenblas.so.0 with
 * dlopen on first use, after telling it to use its AVX-512 kernels when the
 * CPU has them, and forwards row-major GEMM calls to its CBLAS interface.
 *
 * Why dlopen: OpenBLAS picks its kernels from OPENBLAS_CORETYPE when it
 * initializes. Debian's 0.3.21 does not know recent CPUs (Zen 5, Emerald
 * Rapids) and falls back to AVX2 "Haswell" or even SSE3 "Prescott" kernels,
 * 2-5x slower than its AVX-512 "SkylakeX" ones. libtjit therefore never links
 * -lopenblas: the library is loaded here, after the variable is set.
 * TJIT_OPENBLAS=path loads another OpenBLAS build instead.
 *
 * A failed load is reported on the call that needed it (not found, or found
 * and failed to load, with dlopen's reason) and tried again by the next one:
 * a transient failure, an allocation inside dlopen, is not kept for the life
 * of the process.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "blas.h"
#include "env.h"
#include "rt.h"

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                         const float *, int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int,
                         const double *, int, double, double *, int);

static struct {
    pthread_mutex_t mu;       /* guards an attempt to load (and why) */
    void *lib;
    sgemm_fn sgemm;
    dgemm_fn dgemm;
    void (*set_threads)(int);
    char *(*corename)(void);
} blas = {.mu = PTHREAD_MUTEX_INITIALIZER};

static atomic_int want_threads;   /* 0: not set yet, the pool's count applies */
static atomic_int serial_depth;   /* open rt_blas_serial_begin() calls */
static atomic_bool loaded;        /* blas.lib and the symbols are set (then never change) */

static bool cpu_has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

/* The library: libopenblas.so.0, or the file TJIT_OPENBLAS names (another
 * OpenBLAS build, say one that knows the CPU). */
static const char *blas_name(bool *custom)
{
    const char *env = getenv("TJIT_OPENBLAS");
    *custom = env && *env;
    return *custom ? env : "libopenblas.so.0";
}

/* Whether dlopen's message says the file is not there (rather than there
 * but not loadable: no memory, a bad ELF file, a missing dependency). */
static bool dl_not_found(const char *msg, const char *name)
{
    if (!strstr(msg, "No such file or directory"))
        return false;
    size_t n = strlen(name);   /* "<name>: cannot open shared object file: ..." */
    return !strncmp(msg, name, n) && msg[n] == ':';
}

/* One attempt, under blas.mu: true with the library loaded, else false with
 * the reason recorded (rt_error). A failure is not remembered: the next call
 * tries again, so a transient one (an allocation inside dlopen) passes. */
static bool blas_load(void)
{
    if (cpu_has_avx512() && !getenv("OPENBLAS_CORETYPE"))
        setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
    bool custom;
    const char *name = blas_name(&custom);
    const char *from = custom ? ", from TJIT_OPENBLAS" : "";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *msg = dlerror();
        msg = msg ? msg : "dlopen gave no reason (out of memory?)";
        if (dl_not_found(msg, name))
            rt_error("OpenBLAS (%s%s) not found: install libopenblas0 or run "
                     "scripts/install-deps.sh",
                     name, from);
        else
            rt_error("OpenBLAS (%s%s) failed to load: %s", name, from, msg);
        return false;
    }
    sgemm_fn sg = (sgemm_fn)dlsym(lib, "cblas_sgemm");
    dgemm_fn dg = (dgemm_fn)dlsym(lib, "cblas_dgemm");
    if (!sg || !dg) {
        rt_error("%s lacks cblas_sgemm/cblas_dgemm: install libopenblas0 or run "
                 "scripts/install-deps.sh",
                 name);
        dlclose(lib);
        return false;
    }
    blas.sgemm = sg;
    blas.dgemm = dg;
    blas.set_threads = (void (*)(int))dlsym(lib, "openblas_set_num_threads");
    blas.corename = (char *(*)(void))dlsym(lib, "openblas_get_corename");
    blas.lib = lib;
    atomic_store(&loaded, true);
    int n = atomic_load(&want_threads);
    if (blas.set_threads)
        blas.set_threads(n > 0 ? n : rt_threads());
    return true;
}

/* Loads OpenBLAS on first use; false with the reason recorded when it cannot
 * (tried again on the next call). */
static bool blas_ready(void)
{
    if (atomic_load(&loaded))
        return true;
    pthread_mutex_lock(&blas.mu);
    bool ok = atomic_load(&loaded) || blas_load();
    pthread_mutex_unlock(&blas.mu);
    return ok;
}

void rt_blas_set_threads(int n)
{
    if (n < 1)
        n = 1;
    if (atomic_exchange(&want_threads, n) == n)
        return;
    /* Applied now if loaded, else by blas_load: both sides store, then load
     * the other's flag (sequentially consistent), so one of them applies it. */
    if (atomic_load(&loaded) && blas.set_threads && atomic_load(&serial_depth) == 0)
        blas.set_threads(n);
}

void rt_blas_serial_begin(void)
{
    /* Load now, so the count applies to the GEMMs about to run in parallel. */
    if (!atomic_load(&loaded))
        (void)rt_blas_core();
    if (atomic_fetch_add(&serial_depth, 1) == 0 && rt_threads() > 1 && atomic_load(&loaded) &&
        blas.set_threads)
        blas.set_threads(1);
}

void rt_blas_serial_end(void)
{
    if (atomic_fetch_sub(&serial_depth, 1) == 1 && atomic_load(&loaded) && blas.set_threads) {
        int n = atomic_load(&want_threads);
        blas.set_threads(n > 0 ? n : rt_threads());
    }
}

const char *rt_blas_core(void)
{
    if (!blas_ready())
        return NULL;
    return blas.corename ? blas.corename() : "unknown";
}

/* 0: not known yet, 1: no, 2: yes (one answer per process: the CPU and
 * OpenBLAS's core do not change once it is loaded) */
static atomic_int narrow_state;

static bool core_is_avx512(const char *core)
{
    static const char *const wide[] = {"skylakex", "cooperlake", "sapphirerapids"};
    for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
        if (!strcasecmp(core, wide[i]))
            return true;
    return false;
}

bool rt_blas_narrow(void)
{
    int sw = rt_env_switch("TJIT_BLAS_NARROW");   /* read per call: tests flip it */
    if (sw >= 0)
        return sw;
    int s = atomic_load(&narrow_state);
    if (s)
        return s == 2;
    if (!cpu_has_avx512()) {
        atomic_store(&narrow_state, 1);
        return false;
    }
    if (!blas_ready())
        return false;   /* asked again next time: the load may pass then */
    const char *core = blas.corename ? blas.corename() : NULL;
    s = core && !core_is_avx512(core) ? 2 : 1;
    atomic_store(&narrow_state, s);
    return s == 2;
}

void *rt_blas_sym(const char *name)
{
    if (!blas_ready())
        return NULL;
    void *f = dlsym(blas.lib, name);
    if (!f)
        rt_error("OpenBLAS (%s) lacks the LAPACK routine %s: install libopenblas0 (its LAPACK "
                 "is built in) or run scripts/install-deps.sh",
                 blas_name(&(bool){false}), name);
    return f;
}

bool rt_blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans, int64_t *ld)
{
    int64_t c1 = cols > 1 ? cols : 1, r1 = rows > 1 ? rows : 1;
    if ((cs == 1 || cols == 1) && (rows == 1 || rs >= c1)) {
        *trans = false;
        *ld = rows == 1 ? c1 : rs;
        return true;
    }
    if ((rs == 1 || rows == 1) && (cols == 1 || cs >= r1)) {
        *trans = true;
        *ld = cols == 1 ? r1 : cs;
        return true;
    }
    return false;
}

/* CBLAS takes int sizes: larger problems are refused with a clear message. */
static bool fits_int(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc)
{
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX) {
        rt_error("matrix dimension exceeds the BLAS limit of %d", INT_MAX);
        return false;
    }
    return true;
}

/* C = beta * C for an empty inner dimension (BLAS would reject lda = 0);
 * beta 0 writes zeros without reading C, as BLAS does. */
#define SCALE_C(T)                                                                  \
    static void scale_##T(int64_t m, int64_t n, T beta, T *c, int64_t ldc)          \
    {                                                                               \
        for (int64_t i = 0; i < m; i++)                                             \
            for (int64_t j = 0; j < n; j++)                                         \
                c[i * ldc + j] = beta == 0 ? (T)0 : beta * c[i * ldc + j];          \
    }
SCALE_C(float)
SCALE_C(double)
#undef SCALE_C

int rt_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc)
{
    if (m == 0 || n == 0)
        return 0;
    if (k == 0) {
        scale_float(m, n, beta, c, ldc);
        return 0;
    }
    if (!blas_ready() || !fits_int(m, n, k, lda, ldb, ldc))
        return -1;
    blas.sgemm(CBLAS_ROW_MAJOR, trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS,
               trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, (int)m, (int)n, (int)k, alpha, a,
               (int)lda, b, (int)ldb, beta, c, (int)ldc);
    return 0;
}

int rt_dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
             const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
             double *c, int64_t ldc)
{
    if (m == 0 || n == 0)
        return 0;
    if (k == 0) {
        scale_double(m, n, beta, c, ldc);
        return 0;
    }
    if (!blas_ready() || !fits_int(m, n, k, lda, ldb, ldc))
        return -1;
    blas.dgemm(CBLAS_ROW_MAJOR, trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS,
               trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, (int)m, (int)n, (int)k, alpha, a,
               (int)lda, b, (int)ldb, beta, c, (int)ldc);
    return 0;
}
