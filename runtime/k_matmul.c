/* k_matmul.c - eager kernels of matmul and linear, and the GEMM they share
 * with conv2d (rt_gemm, see contract.h).
 *
 * f32 and f64 go to OpenBLAS (runtime/blas.c), except an f32 matmul's GEMM
 * on a kept weight (packed once) or of a shape where tjit's own GEMM
 * measured faster (B packed in the call: rt_gemm_own_f32). An operand whose last two
 * dims are contiguous or transposed-contiguous is passed as it is (a
 * transposed one by BLAS's trans flag); only operands whose strides BLAS
 * cannot express are packed, once per call. Batches that share the right
 * operand and whose rows are evenly strided fold into one GEMM
 * ([B,M,K] @ [K,N] is one [B*M,K] @ [K,N]); other batches loop over GEMM
 * calls. Integer dtypes use a blocked kernel here; bf16 and f16 run tjit's
 * own GEMM (runtime/gemm.h) with f32 sums, rounded once. A GEMM of at most
 * tjg_small's multiply-adds runs on the calling thread: f32 on the direct
 * tiles of runtime/gemm_small.c where its layout suits them, else OpenBLAS
 * serially (tjit's GEMM is serial there by itself).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ir/half.h"
#include "blas.h"
#include "contract.h"
#include "env.h"
#include "gemm.h"
#include "kernels.h"

/* ---- strided copy ------------------------------------------------------------- */

static void copy_row(char *dst, const char *src, int64_t n, int64_t st, size_t es)
{
    if (st == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        memcpy(dst + (size_t)j * es, src + j * st * (int64_t)es, es);
}

void rt_copy_strided(void *dst, int ndim, const int64_t *shape, const void *src, int sndim,
                     const int64_t *sshape, const int64_t *sstrides, size_t esize)
{
    int64_t st[TJ_MAX_DIMS], idx[TJ_MAX_DIMS] = {0}, rows = 1;
    for (int d = 0; d < ndim; d++) {
        int sd = d - (ndim - sndim);
        st[d] = sd >= 0 && sshape[sd] != 1 ? sstrides[sd] : 0;
        if (shape[d] == 0)
            return;
    }
    if (ndim == 0) {
        memcpy(dst, src, esize);
        return;
    }
    for (int d = 0; d < ndim - 1; d++)
        rows *= shape[d];
    int64_t n = shape[ndim - 1];
    char *out = dst;
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = 0;
        for (int d = 0; d < ndim - 1; d++)
            off += idx[d] * st[d];
        copy_row(out + (size_t)(r * n) * esize, (const char *)src + off * (int64_t)esize, n,
                 st[ndim - 1], esize);
        for (int d = ndim - 2; d >= 0 && ++idx[d] == shape[d]; d--)
            idx[d] = 0;
    }
}

/* A contiguous copy of t's data (its own shape) in a fresh rt_alloc block. */
static void *pack_tensor(const tj_tensor *t, int64_t strides[TJ_MAX_DIMS], size_t *nbytes)
{
    size_t es = tj_dtype_size(t->dtype);
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    *nbytes = (size_t)n * es;
    void *p = rt_alloc(*nbytes);
    if (!p)
        return NULL;
    rt_copy_strided(p, t->ndim, t->shape, rt_ptr(t), t->ndim, t->shape, t->strides, es);
    rt_contiguous_strides(t->ndim, t->shape, strides);
    return p;
}

/* ---- GEMM --------------------------------------------------------------------- */

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

static void release(void *p, size_t nbytes)
{
    if (p)
        rt_free(p, nbytes);
}

/* How BLAS can read a rows x cols matrix with strides (rs, cs): as is
 * (trans false) or transposed-contiguous (trans true), with leading dim ld. */
/* Whether rt_gemm reads this operand without packing it. */
static bool gemm_direct(tj_dtype dt, bool left, int64_t rows, int64_t cols, int64_t rs,
                        int64_t cs)
{
    bool t;
    int64_t ld;
    if (dt == TJ_F32 || dt == TJ_F64)
        return rt_blas_layout(rows, cols, rs, cs, &t, &ld);
    if (dt == TJ_BF16 || dt == TJ_F16)
        return true;   /* runtime/gemm.c packs both operands from any strides */
    return left || cs == 1 || cols == 1;   /* the integer kernel streams rows of B */
}

static void *pack_mat(tj_dtype dt, int64_t rows, int64_t cols, rt_mat *m)
{
    size_t es = tj_dtype_size(dt);
    void *p = rt_alloc((size_t)(rows * cols) * es);
    if (!p)
        return NULL;
    rt_copy_strided(p, 2, (int64_t[]){rows, cols}, m->p, 2, (int64_t[]){rows, cols},
                    (int64_t[]){m->rs, m->cs}, es);
    *m = (rt_mat){p, cols, 1};
    return p;
}

static int gemm_blas(tj_dtype dt, int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b,
                     bool acc, void *c, int64_t ldc)
{
    bool ta = false, tb = false;
    int64_t lda = 1, ldb = 1;
    if (k > 0) {
        rt_blas_layout(m, k, a.rs, a.cs, &ta, &lda);
        rt_blas_layout(k, n, b.rs, b.cs, &tb, &ldb);
    }
    /* small: OpenBLAS's own threads not woken (tjg_small) */
    bool serial = rt_threads_here() > 1 && tjg_small(m, n, k);
    if (serial)
        rt_blas_serial_begin();
    int r = dt == TJ_F32
                ? rt_sgemm(ta, tb, m, n, k, 1.0f, a.p, lda, b.p, ldb, acc ? 1.0f : 0.0f, c, ldc)
                : rt_dgemm(ta, tb, m, n, k, 1.0, a.p, lda, b.p, ldb, acc ? 1.0 : 0.0, c, ldc);
    if (serial)
        rt_blas_serial_end();
    return r;
}

/* Integer GEMM: rows of C accumulate a[i,k] * (row k of B), in column blocks
 * that stay in cache. Signed types compute in their unsigned twin, so
 * overflow wraps (defined) like PyTorch's. */
#define INT_AXPY(U)                                                                          \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static void \
    axpy_##U(U *restrict c, const U *restrict b, U a, int64_t n)                             \
    {                                                                                        \
        for (int64_t j = 0; j < n; j++)                                                      \
            c[j] = (U)(c[j] + a * b[j]);                                                     \
    }
INT_AXPY(uint8_t)
INT_AXPY(uint16_t)
INT_AXPY(uint32_t)
INT_AXPY(uint64_t)
#undef INT_AXPY

typedef struct int_gemm {
    int64_t n, k;
    rt_mat a, b;
    bool acc;
    void *c;
    int64_t ldc;
} int_gemm;

enum { INT_NB = 1024 };   /* column block */

#define INT_ROWS(U)                                                                         \
    static void rows_##U(void *ctx, int64_t i0, int64_t i1)                                 \
    {                                                                                       \
        const int_gemm *g = ctx;                                                            \
        const U *a = g->a.p, *b = g->b.p;                                                   \
        for (int64_t j0 = 0; j0 < g->n; j0 += INT_NB) {                                     \
            int64_t nb = g->n - j0 < INT_NB ? g->n - j0 : INT_NB;                           \
            for (int64_t i = i0; i < i1; i++) {                                             \
                U *c = (U *)g->c + i * g->ldc + j0;                                         \
                if (!g->acc)                                                                \
                    memset(c, 0, (size_t)nb * sizeof(U));                                   \
                for (int64_t kk = 0; kk < g->k; kk++)                                       \
                    axpy_##U(c, b + kk * g->b.rs + j0, a[i * g->a.rs + kk * g->a.cs], nb);  \
            }                                                                               \
        }                                                                                   \
    }
INT_ROWS(uint8_t)
INT_ROWS(uint16_t)
INT_ROWS(uint32_t)
INT_ROWS(uint64_t)
#undef INT_ROWS

static int gemm_int(tj_dtype dt, int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b,
                    bool acc, void *c, int64_t ldc)
{
    void *pb = NULL;
    if (n == 1)
        b.cs = 1;   /* one column: its stride is never used */
    if (b.cs != 1 && !(pb = pack_mat(dt, k, n, &b)))
        return -1;
    int_gemm g = {n, k, a, b, acc, c, ldc};
    int64_t grain = 32768 / max1(n * max1(k)) + 1;
    size_t es = tj_dtype_size(dt);
    rt_range_fn fn = es == 1 ? rows_uint8_t : es == 2 ? rows_uint16_t : es == 4 ? rows_uint32_t
                                                                           : rows_uint64_t;
    rt_parallel_for(m, grain, fn, &g);
    release(pb, (size_t)(k * n) * tj_dtype_size(dt));
    return 0;
}

/* What a kept packed copy of st's data is valid for (rt.h). */
static unsigned stamp(const rt_storage *st) { return rt_storage_stamp(st); }

/* B's packed form: kept from an earlier call when B is a kept weight
 * (runtime/gemm_cache.c; *handle then holds it), else packed now into *own.
 * NULL on failure, or with *blas set: run it on OpenBLAS. lazy (f32): a
 * kept form may be a placeholder, packed by tjg_cache_fill if needed. */
static const tjg_packed *packed_b(const rt_storage *bst, rt_mat b, int64_t k, int64_t n,
                                  tjg_type type, bool lazy, tjg_packed *own, void **handle,
                                  bool *blas)
{
    unsigned flags;
    *handle = NULL;
    *blas = false;
    if (bst && tjg_frozen(bst, &flags)) {
        int64_t off = (const char *)b.p - (const char *)bst->data;
        /* not frozen, f32: a weight that changed since the last call runs
         * on OpenBLAS (NULL, handle NULL) rather than packed in every call */
        bool stable = !(flags & RT_GEMM_FREEZE) && type == TJG_F32;
        const tjg_packed *p =
            lazy     ? tjg_cache_get_lazy(bst->serial, stamp(bst), off, b.p, b.rs, b.cs, k, n,
                                          stable, handle)
            : stable ? tjg_cache_get_stable(bst->serial, stamp(bst), off, b.p, b.rs, b.cs, k, n,
                                            type, false, handle)
                     : tjg_cache_get(bst->serial, stamp(bst), off, b.p, b.rs, b.cs, k, n, type,
                                     false, handle);
        *blas = !p && stable;
        if (p || stable)
            return p;
    }
    int r = type == TJG_F32   ? tjg_pack_f32(own, b.p, b.rs, b.cs, k, n)
            : type == TJG_F16 ? tjg_pack_f16(own, b.p, b.rs, b.cs, k, n)
                              : tjg_pack_bf16(own, b.p, b.rs, b.cs, k, n);
    return r ? NULL : own;
}

static int gemm_blas_any(tj_dtype dt, int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b,
                         bool accumulate, void *c, int64_t ldc);

/* f32 on a kept (packed) weight: tjit's GEMM or OpenBLAS. The static rule
 * is where tjit's GEMM measured faster on one Zen 4 core (docs/perf.md: at
 * least 128 columns and up to 2^27 multiply-adds), with AVX-512; with AVX2
 * alone, at least 128 columns, 24 rows, up to 2^30 (own_f32_shape). Autotune
 * times both once per weight on a scratch output and keeps the faster. */
enum { CHOICE_OWN = 1, CHOICE_BLAS = 2 };

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int tune(int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b, const tjg_packed *p)
{
    float *scratch = rt_alloc((size_t)(m * n) * sizeof(float));
    if (!scratch)
        return CHOICE_BLAS;
    double best[2] = {1e30, 1e30};
    for (int rep = 0; rep < 3; rep++)
        for (int w = 0; w < 2; w++) {
            double t0 = seconds();
            int r = w ? gemm_blas_any(TJ_F32, m, n, k, a, b, false, scratch, n)
                      : tjg_gemm(m, a.p, false, a.rs, a.cs, p, scratch, n, NULL, NULL);
            double t = r ? 1e30 : seconds() - t0;
            best[w] = t < best[w] ? t : best[w];
        }
    rt_free(scratch, (size_t)(m * n) * sizeof(float));
    return best[0] <= best[1] ? CHOICE_OWN : CHOICE_BLAS;
}

/* TJIT_OWN_F32=1 or 0 (for measuring): every f32 matmul to tjit's GEMM
 * (kept weights packed once, other operands packed in the call), or none;
 * -1 unset (the shape rules below). */
static int own_f32_env(void) { return rt_env_switch("TJIT_OWN_F32"); }

/* OpenBLAS on kernels narrower than the CPU's (rt_blas_narrow: an AVX2 core
 * on an AVX-512 CPU, as OPENBLAS_CORETYPE=Haswell gives): tjit's AVX-512
 * GEMM then measured ahead at every shape above these, kept or packed in
 * the call, on two Zen 5 threads (gemm_bench --f32, GFLOP/s own kept / raw
 * against OpenBLAS's Haswell core: 256x2048x1024 361 / 294 vs 202,
 * 512x784x128 376 / 338 vs 186, 1000^3 366 / 308 vs 197, 128x10x512 49 /
 * 43 vs 31, 4x512x512 110 / 64 vs 25, 64^3 161 / 143 vs 102), behind or
 * even only below them (16^3 raw 20 vs 39, 1x1000x4096 raw 11 vs
 * 11; the small GEMMs' direct tiles take most of those first).
 * docs/perf.md, "OpenBLAS on AVX2 kernels". */
enum { NARROW_KEPT_MNK = 1 << 15, NARROW_RAW_MNK = 1 << 16, NARROW_RAW_M = 4 };

static bool narrow_blas(void) { return tjg_isa_current() >= TJG_AVX512 && rt_blas_narrow(); }

/* AVX-512: the Zen 4 rule above. AVX2 alone: with the half-panel order
 * (gemm.c) and B packed once, a compiled P4 (256 rows, 8 MB weights) ran
 * about 5% faster than on OpenBLAS's sgemm and P7's shapes 8-13% on one
 * Zen 3 core; 2048^3 trailed by a fifth (docs/perf.md, 2026-11-29). Since
 * the last sliver's own row count and (two threads) A packed once with
 * column tasks claimed, P4's two shapes run 1-6% ahead of OpenBLAS on one
 * core (CPU time) and within 6% either way on two (quiet, docs/perf.md,
 * "AVX2 GEMM on two threads" and the fourth session's suite section). A
 * kept weight here can also take a plan's fused bias + activation
 * (sched/epi.c, TJIT_GEMM_EPILOGUE=1), which OpenBLAS cannot. */
static bool own_f32_shape(int64_t m, int64_t n, int64_t k)
{
    if (narrow_blas())
        return m * n * k >= NARROW_KEPT_MNK;
    if (n < 4 * TJG_NR)
        return false;
    if (tjg_isa_current() == TJG_AVX2)
        return m >= 2 * TJG_MR && m * n * k <= ((int64_t)1 << 30);
    return m * n * k <= ((int64_t)1 << 27);
}

/* f32 with B packed in the call (tjg_gemm_f32_raw): where tjit's GEMM
 * measured ahead of OpenBLAS's sgemm on Zen 3, AVX2's half-panel order only
 * (docs/perf.md, "Own f32 GEMM for per-call operands"). One thread: k up
 * to 256 (P7's and P8's k = 128 shapes 5-10% ahead, k = 10 1.5x; from
 * k = 512 up within noise or behind); two threads the same: on the quiet
 * machine (load 0.0) k = 128 was 8-27% ahead and k = 512 and 784 7-16%
 * behind (1.2-1.9x ahead only under load, where OpenBLAS's fixed split
 * suffers). Not: n < 64 (a panel of 32 mostly empty: 128x10x512 at half
 * OpenBLAS's rate), m < 24 (packing B dominates), over 2^28 multiply-adds
 * (unmeasured; 2048^3 trailed by a fifth). */
static bool own_raw_shape(int64_t m, int64_t n, int64_t k)
{
    if (narrow_blas())
        return m >= NARROW_RAW_M && m * n * k >= NARROW_RAW_MNK;
    if (tjg_isa_current() != TJG_AVX2 || n < 2 * TJG_NR || m < 2 * TJG_MR ||
        m * n * k > ((int64_t)1 << 28))
        return false;
    return k <= 256;
}

bool rt_gemm_own_f32(int64_t m, int64_t n, int64_t k)
{
    int env = own_f32_env();
    if (env >= 0)
        return env == 1 && tjg_isa_current() >= TJG_AVX2;
    return own_raw_shape(m, n, k);
}

/* Whether a kept f32 weight goes to tjit's GEMM (packed and kept). */
static bool own_f32(int64_t m, int64_t n, int64_t k, unsigned flags)
{
    tjg_isa isa = tjg_isa_current();
    if (flags & RT_GEMM_AUTOTUNE)
        return isa >= TJG_AVX2;
    if (own_f32_env() >= 0)
        return isa >= TJG_AVX2 && own_f32_env();
    return isa >= TJG_AVX2 && own_f32_shape(m, n, k);
}

bool rt_gemm_kept(const tj_tensor *b, int64_t m)
{
    unsigned flags;
    const rt_storage *st = b->storage;
    if (!st || !tjg_frozen(st, &flags))
        return false;
    if (b->dtype != TJ_F32 || b->ndim != 2 || (flags & (RT_GEMM_FREEZE | RT_GEMM_INT8)))
        return true;   /* packed once (or quantized) whatever it holds: its own path */
    int64_t k = b->shape[0], n = b->shape[1];
    if (!own_f32(m, n, k, flags))
        return false;
    /* packed_b's lookup: NULL when the weight changed since the last call;
     * lazy: asking packs nothing (the GEMM packs the form it takes) */
    void *handle;
    const tjg_packed *p = tjg_cache_get_lazy(st->serial, stamp(st),
                                             (const char *)rt_ptr(b) - (const char *)st->data,
                                             rt_ptr(b), b->strides[0], b->strides[1], k, n, true,
                                             &handle);
    tjg_cache_put(handle);
    return p != NULL;
}

static int choose_f32(void *handle, int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b,
                      const tjg_packed *p)
{
    unsigned flags;
    tjg_frozen(NULL, &flags);
    if (!(flags & RT_GEMM_AUTOTUNE))
        return own_f32_env() == 1 || (own_f32_env() < 0 && own_f32_shape(m, n, k))
                   ? CHOICE_OWN : CHOICE_BLAS;
    atomic_int *ch = tjg_cache_choice(handle);
    int c = ch ? atomic_load(ch) : 0;
    if (c == 0) {
        c = tune(m, n, k, a, b, p);
        if (ch)
            atomic_store(ch, c);
    }
    return c;
}

/* rt_gemm_epi_begin's request, this thread's (a plan's step runs its
 * matmul on the calling thread). */
static _Thread_local struct {
    const float *bias;
    int64_t n;
    int act;
    bool f32, armed, taken;
} epi_req;

void rt_gemm_epi_begin(const float *bias, int64_t n, int act, bool f32)
{
    epi_req.bias = bias, epi_req.n = n, epi_req.act = act, epi_req.f32 = f32;
    epi_req.armed = true, epi_req.taken = false;
}

static atomic_uint_fast64_t epi_count;   /* rt_gemm_epi_count */

uint64_t rt_gemm_epi_count(void) { return atomic_load(&epi_count); }

bool rt_gemm_epi_end(void)
{
    bool t = epi_req.taken;
    if (t)
        atomic_fetch_add(&epi_count, 1);
    epi_req.armed = epi_req.taken = false;
    return t;
}

/* f32 on a kept weight in Strassen's form (runtime/gemm_strassen.c) where
 * tjg_strassen_wanted and the weight's plain packed form is kept (handle;
 * a placeholder unless a call needed it): 0 done, -1 failed, 1 not taken
 * (the plain GEMM then, its form packed first). */
static int strassen(int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b, const rt_storage *bst,
                    void *handle, float *c, int64_t ldc, const tjg_epilogue *e)
{
    if (!handle || e->accumulate || !tjg_strassen_wanted(m, n, k))
        return 1;
    void *sh;
    int64_t off = (const char *)b.p - (const char *)bst->data;
    const tjg_packed *sp =
        tjg_cache_get_strassen(bst->serial, stamp(bst), off, b.p, b.rs, b.cs, k, n, &sh);
    int r = sp ? tjg_gemm_strassen(m, a.p, a.rs, a.cs, sp, c, ldc, e) : 1;
    tjg_cache_put(sh);
    return r;
}

/* tjit's own GEMM (runtime/gemm.h) on a packed B: bf16 and f16 always
 * (vdpbf16ps where the CPU has it, f16 widened by F16C; f32 sums rounded
 * once), f32 on a frozen weight where choose_f32 says; 1 when f32 should go
 * to OpenBLAS instead, 2 when the weight changed since the last call and
 * was not packed (as any operand, then: rt_gemm_own_f32). */
static int gemm_own(tj_dtype dt, int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b,
                    const rt_storage *bst, bool acc, const float *bias, void *c, int64_t ldc)
{
    tjg_packed own = {0};
    void *handle;
    unsigned flags;
    bool blas, half = dt == TJ_BF16 || dt == TJ_F16;
    tjg_type type = dt == TJ_BF16 ? TJG_BF16 : dt == TJ_F16 ? TJG_F16 : TJG_F32;
    /* a GEMM that will take the Strassen form: the plain form not packed
     * unless it is needed (autotune times it) */
    tjg_frozen(NULL, &flags);
    bool lazy = !half && !acc && !(flags & RT_GEMM_AUTOTUNE) && tjg_strassen_wanted(m, n, k);
    const tjg_packed *p = packed_b(bst, b, k, n, type, lazy, &own, &handle, &blas);
    if (!p)
        return blas ? 2 : -1;
    int r = 1;
    if (half || choose_f32(handle, m, n, k, a, b, p) == CHOICE_OWN) {
        tjg_epilogue e = {.accumulate = acc, .bias = bias, .out_bf16 = dt == TJ_BF16,
                          .out_f16 = dt == TJ_F16};
        /* a plan's fused bias + activation (sched/epi.c), taken once */
        bool epi = epi_req.armed && epi_req.f32 && !half && !acc && !bias && epi_req.n == n;
        if (epi) {
            e.bias = epi_req.bias, e.act = (tjg_act)epi_req.act;
            epi_req.armed = false;
        }
        r = half ? 1 : strassen(m, n, k, a, b, bst, handle, c, ldc, &e);
        if (r == 1 && p != &own && lazy && tjg_cache_fill(handle, b.p)) {
            /* the placeholder not packed (memory, budget): packed here */
            p = tjg_pack_f32(&own, b.p, b.rs, b.cs, k, n) ? NULL : &own;
            r = p ? 1 : -1;
        }
        if (r == 1)
            r = tjg_gemm(m, a.p, half, a.rs, a.cs, p, c, ldc, &e, NULL);
        epi_req.taken = epi && r == 0;
    }
    tjg_cache_put(handle);
    if (p == &own)
        tjg_packed_free(&own);
    return r;
}

/* f32 on a frozen weight in a quantize_dynamic call: the weight quantized
 * once (per-channel symmetric s8, kept), A's rows quantized to u8 in the
 * call, s32 sums dequantized in the epilogue. 1: not possible here (use f32). */
static int gemm_int8(int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b, const rt_storage *bst,
                     bool acc, float *c, int64_t ldc)
{
    void *handle;
    int64_t off = (const char *)b.p - (const char *)bst->data;
    const tjg_packed *p = tjg_cache_get(bst->serial, stamp(bst), off, b.p, b.rs,
                                        b.cs, k, n, TJG_S8, true, &handle);
    if (!p)
        return 1;
    size_t qb = (size_t)(m * k > 0 ? m * k : 1), sb = (size_t)m * sizeof(float);
    uint8_t *q = rt_alloc(qb);
    float *sa = q ? rt_alloc(sb) : NULL;
    int32_t *zp = sa ? rt_alloc(sb) : NULL;
    int r = -1;
    if (zp) {
        const float *ap = a.p;
        int qmax = tjg_u8s8_reduce_range(tjg_isa_current()) ? 127 : 255;
        if (a.cs == 1) {
            tjg_quantize_rows_u8(m, k, ap, a.rs, q, sa, zp, qmax);
        } else {   /* a strided A: rows gathered one at a time */
            float *row = rt_alloc((size_t)(k > 0 ? k : 1) * sizeof(float));
            for (int64_t i = 0; row && i < m; i++) {
                for (int64_t kk = 0; kk < k; kk++)
                    row[kk] = ap[i * a.rs + kk * a.cs];
                tjg_quantize_rows_u8(1, k, row, k, q + i * k, sa + i, zp + i, qmax);
            }
            if (row)
                rt_free(row, (size_t)(k > 0 ? k : 1) * sizeof(float));
            else
                goto done;
        }
        tjg_epilogue e = {.accumulate = acc};
        /* a plan's fused bias + activation (sched/epi.c: int8 takes it by
         * default), applied by the epilogue that dequantizes the sums */
        bool epi = epi_req.armed && !acc && epi_req.n == n;
        if (epi) {
            e.bias = epi_req.bias, e.act = (tjg_act)epi_req.act;
            epi_req.armed = false;
        }
        r = tjg_gemm_u8s8(m, q, k, zp, sa, p, c, ldc, &e);
        epi_req.taken = epi && r == 0;
    }
done:
    if (zp)
        rt_free(zp, sb);
    if (sa)
        rt_free(sa, sb);
    if (q)
        rt_free(q, qb);
    tjg_cache_put(handle);
    return r;
}

/* Small GEMMs on dot products (tjg_gemm_f32_small_dot): at least this k
 * and at most this many rows or columns. On one Zen 3 core (gemm_bench
 * --tb, docs/perf.md) they ran 1.1-1.8x OpenBLAS at n = 10 and 16 from
 * k = 32, and at m = 10; k = 10 at half OpenBLAS's rate, n = 100 at 0.65x. */
enum { SMALL_DOT_K = 32, SMALL_DOT_SIDE = 16 };

/* bias: [n] f32 added to the sums in the epilogue, bf16/f16 only (NULL else).
 * percall: a matmul's or linear's f32 GEMM whose B is not a kept weight
 * may run on tjit's GEMM with B packed in the call (rt_gemm_own_f32); conv's
 * GEMMs (rt_gemm) stay on OpenBLAS, unmeasured there. */
static int gemm_ex(tj_dtype dt, int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b,
                   const rt_storage *bst, bool accumulate, const float *bias, void *c, int64_t ldc,
                   bool percall)
{
    unsigned flags;
    if (m == 0 || n == 0)
        return 0;
    if (dt == TJ_F32 && bst && tjg_frozen(bst, &flags) && (flags & RT_GEMM_INT8) && k > 0) {
        int r = gemm_int8(m, n, k, a, b, bst, accumulate, c, ldc);
        if (r <= 0)
            return r;
    }
    /* f32: only on a frozen weight, and (without autotune) only where
     * tjit's GEMM measured ahead: others are never packed */
    bool raw = percall && dt == TJ_F32 && rt_gemm_own_f32(m, n, k);
    if (dt == TJ_BF16 || dt == TJ_F16 ||
        (dt == TJ_F32 && bst && tjg_frozen(bst, &flags) && own_f32(m, n, k, flags))) {
        int r = gemm_own(dt, m, n, k, a, b, bst, accumulate, bias, c, ldc);
        if (r <= 0)
            return r;
        raw = raw && r == 2;   /* OpenBLAS chosen (autotune, shape): kept */
    }
    /* small, B's rows contiguous (or A's rows and B's columns): the direct
     * tiles on this thread (gemm_small.c); not with TJIT_OWN_F32=0 (every
     * f32 GEMM on OpenBLAS, serial here) */
    if (percall && dt == TJ_F32 && k > 0 && tjg_isa_current() >= TJG_AVX2 &&
        own_f32_env() != 0 && tjg_small(m, n, k)) {
        if (b.cs == 1 || n == 1) {
            tjg_gemm_f32_small(m, n, k, a.p, a.rs, a.cs, b.p, b.rs, c, ldc, accumulate);
            return 0;
        }
        /* dot products: few rows or columns and k long enough that the
         * sums across each vector pay (docs/perf.md) */
        if (b.rs == 1 && a.cs == 1 && k >= SMALL_DOT_K &&
            (n <= SMALL_DOT_SIDE || m <= SMALL_DOT_SIDE)) {
            tjg_gemm_f32_small_dot(m, n, k, a.p, a.rs, b.p, b.cs, c, ldc, accumulate);
            return 0;
        }
    }
    if (raw) {
        tjg_epilogue e = {.accumulate = accumulate};
        return tjg_gemm_f32_raw(m, a.p, a.rs, a.cs, b.p, b.rs, b.cs, k, n, c, ldc, &e, NULL);
    }
    return gemm_blas_any(dt, m, n, k, a, b, accumulate, c, ldc);
}

/* f32/f64 through OpenBLAS (packing what it cannot read), integers here. */
static int gemm_blas_any(tj_dtype dt, int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b,
                         bool accumulate, void *c, int64_t ldc)
{
    if (dt != TJ_F32 && dt != TJ_F64)
        return gemm_int(dt, m, n, k, a, b, accumulate, c, ldc);
    void *pa = NULL, *pb = NULL;
    int r = -1;
    if (k > 0 && !gemm_direct(dt, true, m, k, a.rs, a.cs) && !(pa = pack_mat(dt, m, k, &a)))
        goto done;
    if (k > 0 && !gemm_direct(dt, false, k, n, b.rs, b.cs) && !(pb = pack_mat(dt, k, n, &b)))
        goto done;
    r = gemm_blas(dt, m, n, k, a, b, accumulate, c, ldc);
done:
    release(pa, (size_t)(m * k) * tj_dtype_size(dt));
    release(pb, (size_t)(k * n) * tj_dtype_size(dt));
    return r;
}

int rt_gemm(tj_dtype dt, int64_t m, int64_t n, int64_t k, rt_mat a, rt_mat b, bool accumulate,
            void *c, int64_t ldc)
{
    return gemm_ex(dt, m, n, k, a, b, NULL, accumulate, NULL, c, ldc, false);
}

/* ---- matmul ------------------------------------------------------------------- */

/* One operand of a (batched) matmul: its matrix dims and per-batch strides,
 * aligned to the output's batch dims (0 where it broadcasts). */
typedef struct mm_side {
    const char *p;
    int64_t rows, cols, rs, cs;
    int64_t bs[TJ_MAX_DIMS];
    void *packed;
    size_t nbytes;
    const rt_storage *st;   /* the tensor's storage (NULL when packed here) */
} mm_side;

/* x is the left operand (1-D: one row) or the right one (1-D: one column). */
static int side_init(mm_side *s, const tj_tensor *t, bool left, int nb, const int64_t *bshape)
{
    int64_t st[TJ_MAX_DIMS];
    memcpy(st, t->strides, sizeof st);
    s->packed = NULL;
    s->p = rt_ptr(t);
    s->st = t->storage;
    int nd = t->ndim;
    for (int pass = 0; pass < 2; pass++) {
        if (nd == 1) {
            s->rows = left ? 1 : t->shape[0];
            s->cols = left ? t->shape[0] : 1;
            s->rs = left ? 0 : st[0];
            s->cs = left ? st[0] : 0;
        } else {
            s->rows = t->shape[nd - 2];
            s->cols = t->shape[nd - 1];
            s->rs = st[nd - 2];
            s->cs = st[nd - 1];
        }
        if (pass == 1 || gemm_direct(t->dtype, left, s->rows, s->cols, s->rs, s->cs))
            break;
        if (!(s->packed = pack_tensor(t, st, &s->nbytes)))
            return -1;
        s->p = s->packed;
        s->st = NULL;
    }
    int tb = nd > 2 ? nd - 2 : 0;
    for (int d = 0; d < nb; d++) {
        int td = d - (nb - tb);
        s->bs[d] = td >= 0 && t->shape[td] != 1 ? st[td] : 0;
    }
    return 0;
}

/* When the right operand is shared by all batches and the left one's batch
 * dims and rows step evenly, the whole product is one GEMM with more rows:
 * returns the row stride then, or INT64_MIN. */
static int64_t fold_rows(const mm_side *x, const mm_side *y, int nb, const int64_t *bshape)
{
    int64_t size[TJ_MAX_DIMS + 1], str[TJ_MAX_DIMS + 1];
    int n = 0;
    for (int d = 0; d < nb; d++) {
        if (y->bs[d] != 0 && bshape[d] != 1)
            return INT64_MIN;
        if (bshape[d] != 1) {
            size[n] = bshape[d];
            str[n++] = x->bs[d];
        }
    }
    if (x->rows != 1) {
        size[n] = x->rows;
        str[n++] = x->rs;
    }
    for (int i = 0; i + 1 < n; i++)
        if (str[i] != size[i + 1] * str[i + 1])
            return INT64_MIN;
    return n ? str[n - 1] : x->cols;
}

typedef struct mm_job {
    const mm_side *x, *y;
    int nb;
    const int64_t *bshape;
    bool acc;
    tj_dtype dt;
    char *out;
    atomic_int failed;
} mm_job;

/* GEMMs of batches b0..b1. */
static void mm_range(void *ctx, int64_t b0, int64_t b1)
{
    mm_job *j = ctx;
    const mm_side *x = j->x, *y = j->y;
    int64_t es = (int64_t)tj_dtype_size(j->dt), m = x->rows, n = y->cols, k = x->cols;
    for (int64_t bi = b0; bi < b1; bi++) {
        int64_t ox = 0, oy = 0, rest = bi;
        for (int d = j->nb - 1; d >= 0; d--) {
            int64_t i = rest % j->bshape[d];
            rest /= j->bshape[d];
            ox += i * x->bs[d];
            oy += i * y->bs[d];
        }
        if (rt_gemm(j->dt, m, n, k, (rt_mat){x->p + ox * es, x->rs, x->cs},
                    (rt_mat){y->p + oy * es, y->rs, y->cs}, j->acc, j->out + bi * m * n * es, n))
            atomic_store(&j->failed, 1);
    }
}

/* Batches whose GEMMs are smaller than this (m*n*k) run in parallel on the
 * pool, each GEMM single-threaded; larger ones run one after the other with
 * OpenBLAS's own threads. */
#define RT_MM_SMALL ((int64_t)1 << 24)

/* bias (bf16/f16 only): [n] f32 for the GEMM's epilogue, when the product is one
 * GEMM; 1 (nothing done) when it is not. */
static int matmul_batches(tj_tensor *out, mm_side *x, mm_side *y, int nb,
                          const int64_t *bshape, bool acc, const float *bias)
{
    tj_dtype dt = out->dtype;
    int64_t m = x->rows, n = y->cols, k = x->cols, nbatch = 1;
    for (int d = 0; d < nb; d++)
        nbatch *= bshape[d];
    int64_t frs = fold_rows(x, y, nb, bshape);
    if (frs != INT64_MIN)
        return gemm_ex(dt, nbatch * m, n, k, (rt_mat){x->p, frs, x->cs},
                       (rt_mat){y->p, y->rs, y->cs}, y->st, acc, bias, rt_ptr(out), n, true);
    if (bias)
        return 1;
    mm_job j = {.x = x, .y = y, .nb = nb, .bshape = bshape, .acc = acc, .dt = dt,
                .out = rt_ptr(out)};
    atomic_init(&j.failed, 0);
    bool blas = dt == TJ_F32 || dt == TJ_F64;
    if (nbatch > 1 && rt_threads() > 1 && m * n * k < RT_MM_SMALL) {
        /* Load OpenBLAS here: an error recorded on a pool thread would be lost. */
        if (blas && !rt_blas_core())
            return -1;
        if (blas)
            rt_blas_serial_begin();
        rt_parallel_for(nbatch, 1, mm_range, &j);
        if (blas)
            rt_blas_serial_end();
    } else {
        mm_range(&j, 0, nbatch);
    }
    return atomic_load(&j.failed) ? -1 : 0;
}

/* out = a @ b (+ out when acc), torch.matmul's rules (out has the inferred shape). */
static int contract(tj_tensor *out, const tj_tensor *a, const tj_tensor *b, bool acc,
                    const float *bias)
{
    int nb = out->ndim - (a->ndim >= 2) - (b->ndim >= 2);
    mm_side x, y;
    x.packed = y.packed = NULL;
    int r = -1;
    if (side_init(&x, a, true, nb, out->shape) || side_init(&y, b, false, nb, out->shape))
        goto done;
    r = matmul_batches(out, &x, &y, nb, out->shape, acc, bias);
done:
    release(x.packed, x.nbytes);
    release(y.packed, y.nbytes);
    return r;
}

int rt_k_matmul(RT_KERNEL_ARGS) { return contract(out, in[0], in[1], false, NULL); }

/* Every operand and the result bf16, or every one f16: tjit's bf16 or f16
 * GEMM (runtime/gemm.h: vdpbf16ps where the CPU has it, f16 widened by
 * F16C; f32 sums rounded once) takes it. */
static bool all_one_half(const tj_tensor *out, tj_tensor *const *in, int nin)
{
    if (out->dtype != TJ_BF16 && out->dtype != TJ_F16)
        return false;
    for (int k = 0; k < nin; k++)
        if (in[k] && in[k]->dtype != out->dtype)
            return false;
    return true;
}

/* matmul with an f16 or bf16 operand (runtime/k_half.c sends it here): all
 * bf16 or all f16 runs tjit's GEMM of that type; otherwise (mixed types)
 * the operands widened to f32, sgemm, the result rounded once, since
 * Debian's OpenBLAS has no sbgemm or hgemm. */
int rt_k_matmul_half(RT_KERNEL_ARGS)
{
    if (all_one_half(out, in, nin))
        return contract(out, in[0], in[1], false, NULL);
    return rt_half_via_f32(op, out, in, nin, a);
}

/* linear with an f16 or bf16 operand: likewise (all bf16 or all f16: the
 * bias is added to the f32 sums; else x @ w^T + b in f32, rounded once);
 * compiled plans keep it whole for this hook (passes/decompose.c). */
int rt_k_linear_half(RT_KERNEL_ARGS)
{
    if (all_one_half(out, in, nin))
        return rt_k_linear(op, out, in, nin, a);
    return rt_half_via_f32(op, out, in, nin, a);
}

/* ---- linear ------------------------------------------------------------------- */

/* x @ w^T + b: w^T is a transposed view (BLAS reads it by its trans flag);
 * x's leading dims fold into the rows of one GEMM. The bias is broadcast
 * into the output first and the GEMM accumulates onto it (beta 1), so the
 * bias costs no extra pass. All bf16 (or f16) as one GEMM, the bias (widened: exact)
 * goes to tjit's GEMM's epilogue instead: the same f32 sum + bias, rounded
 * once, without the broadcast copy (1 MB in B4's first linear) and its
 * read back from memory (half of the epilogue's time in B4, by perf). */
int rt_k_linear(RT_KERNEL_ARGS)
{
    tj_tensor *x = in[0], *w = in[1], *bias = nin > 2 ? in[2] : NULL;
    tj_tensor *wt = w->ndim == 2 ? rt_tensor_view(w, 2, (int64_t[]){w->shape[1], w->shape[0]},
                                                  (int64_t[]){w->strides[1], w->strides[0]},
                                                  w->offset)
                                 : tj_retain(w);
    if (!wt)
        return -1;
    int64_t n = out->ndim ? out->shape[out->ndim - 1] : 1;
    float *bf = NULL;
    bool half = out->dtype == TJ_BF16 || out->dtype == TJ_F16;
    if (bias && half && bias->dtype == out->dtype && bias->ndim == 1 && bias->shape[0] == n &&
        (bf = rt_alloc((size_t)n * sizeof(float)))) {
        const uint16_t *bv = rt_ptr(bias);
        for (int64_t j = 0; j < n; j++)
            bf[j] = out->dtype == TJ_F16 ? ir_f16_to_f32(bv[j * bias->strides[0]])
                                         : tjg_bf16_to_f32(bv[j * bias->strides[0]]);
    }
    int r = bf ? contract(out, x, wt, false, bf) : 1;
    if (r == 1) {   /* not one GEMM (or not bf16/f16): the broadcast */
        if (bias)
            rt_copy_strided(rt_ptr(out), out->ndim, out->shape, rt_ptr(bias), bias->ndim,
                            bias->shape, bias->strides, tj_dtype_size(out->dtype));
        r = contract(out, x, wt, bias != NULL, NULL);
    }
    if (bf)
        rt_free(bf, (size_t)n * sizeof(float));
    tj_release(wt);
    return r;
}
