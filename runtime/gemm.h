/* gemm.h - tjit's own GEMM kernels (runtime/gemm*.c): f32, bf16, f16 and
 * int8 (u8 x s8) products with packed right operands, a fused epilogue and an
 * optional pointwise prologue, chosen by CPU features at run time.
 *
 *   pack     the right operand B[k,n] is packed once (gemm_pack.c; a weight: once per
 *            plan or per model) into panels of TJG_NR columns, in the layout
 *            its micro-kernel reads: f32 k-major, bf16 and f16 in (k, k+1)
 *            pairs (vdpbf16ps), int8 in quads (vpdpbusd) with its column sums.
 *   run      C[m,n] = epilogue(prologue(A)[m,k] @ B): A is packed per call,
 *            block by block, each thread its own blocks (BLIS loop order:
 *            a KC x NR panel of B in L1, an MC x KC block of A in L2); AVX2
 *            with one row block on several threads packs A once and lets
 *            the threads claim column tasks (gemm.c, shared_run).
 *   variant  what the CPU has (cpuid + OS state): AVX2 + FMA (f32 FMA,
 *            bf16 widened to f32, f16 widened to f32 by F16C (vcvtph2ps,
 *            where cpuid has it; else the portable kernel), int8 widened
 *            to s16 pairs, or vpmaddubsw
 *            when the call's A is 7-bit: gemm_avx2_q8.c), AVX-512 f32
 *            FMA (bf16 and f16 widened as on AVX2), avx512_bf16
 *            (vdpbf16ps on AMD: tjg_bf16_dot), VNNI (vpdpbusd); a portable C
 *            kernel elsewhere; AMX tiles (tdpbf16ps, tdpbusd: gemm_amx.c)
 *            for bf16 and int8 from TJG_AMX_MIN_M rows, the avx512_bf16 and
 *            VNNI kernels below that and for f32/f16.
 *            TJIT_ISA=generic|avx2|avx512|avx512_bf16|amx caps the choice (a
 *            variant the CPU lacks is never used; amx also needs Linux's
 *            permission for the tile data, tjg_amx_permitted).
 *
 * The kernels are C with intrinsics, each function compiled for its ISA with
 * target attributes (no -march for the whole library), so one binary runs
 * everywhere.
 */
#ifndef TJ_RT_GEMM_H
#define TJ_RT_GEMM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/half.h"

enum { TJG_NR = 32 };   /* columns per packed panel (two zmm of f32) */

/* ---- variants ------------------------------------------------------------------------ */
/* Each variant includes the ones below it (its CPUs have their features). */
typedef enum tjg_isa {
    TJG_GENERIC = 0,     /* portable C */
    TJG_AVX2 = 1,        /* avx2 + fma: f32 FMA; bf16 and int8 widened (gemm_avx2.c) */
    TJG_AVX512 = 2,      /* avx512f: f32 FMA; bf16 widened to f32; int8 as TJG_AVX2 */
    TJG_AVX512_BF16 = 3, /* + avx512_bf16 (vdpbf16ps) and avx512_vnni (vpdpbusd) */
    TJG_AMX = 4,         /* + amx_tile/amx_bf16/amx_int8: tiles for bf16 and int8 (gemm_amx.c) */
} tjg_isa;
enum { TJG_NISA = TJG_AMX + 1 };

/* CPU feature bits (tjg_cpu_features). */
enum {
    TJG_F_AVX512 = 1 << 0,   /* avx512f+bw+vl with zmm state enabled by the OS */
    TJG_F_BF16 = 1 << 1,     /* avx512_bf16 */
    TJG_F_VNNI = 1 << 2,     /* avx512_vnni */
    TJG_F_AMX = 1 << 3,      /* amx_tile + amx_bf16 + amx_int8, the OS's tile state, and
                                the tile data granted (tjg_amx_permitted) */
    TJG_F_AVX2 = 1 << 4,     /* avx + avx2 + fma with ymm state enabled by the OS */
    TJG_F_F16C = 1 << 5,     /* f16c (CPUID.1:ECX bit 29) with ymm state enabled */
};
unsigned tjg_cpu_features(void);
/* Whether f16 may use the F16C kernels (gemm_avx2.c: vcvtph2ps, vcvtps2ph)
 * under variant isa on a CPU with these features: AVX2 or above and f16c.
 * Pure (tests call it); tjg_f16c() is it for the process's variant. */
bool tjg_f16c_usable(tjg_isa isa, unsigned features);
bool tjg_f16c(void);
/* Whether bf16 GEMMs under the avx512_bf16 variant multiply pairs with
 * vdpbf16ps (true) or take the widened path: A split, each k-block of a B
 * panel widened to f32 once, the f32 micro-kernel (false; the AVX2 and
 * avx512 variants' path). vdpbf16ps ran bf16 at about twice the f32 rate
 * on Zen 4 but at 0.55-0.7x it on an Intel Xeon (family 6 model 207, no
 * AMX) where the widened path ran at f32's rate (docs/perf.md, "bf16 GEMM
 * on Intel without AMX; column blocks off on AVX-512"): so on AMD CPUs,
 * not on others. sw: TJIT_BF16_DOT's switch (rt_env_switch: 1/0 override,
 * -1 the vendor's rule). Pure (tests call it); tjg_bf16_dot() is it for
 * this CPU, TJIT_BF16_DOT read per call. */
bool tjg_bf16_dot_select(bool amd, int sw);
bool tjg_bf16_dot(void);
/* The variant for these features under a TJIT_ISA value (NULL or "": the
 * best); never one whose features are missing. Pure (tests call it). */
tjg_isa tjg_isa_select(unsigned features, const char *env);
/* The process's variant: tjg_isa_select(tjg_cpu_features(), getenv("TJIT_ISA")),
 * unless tjg_isa_force set one (tests); computed once. */
tjg_isa tjg_isa_current(void);
/* Caps the variant (-1: back to the environment's, TJIT_ISA read again);
 * capped to the CPU's. */
void tjg_isa_force(int isa);
const char *tjg_isa_name(tjg_isa isa);

/* ---- packed right operands ------------------------------------------------------------ */
typedef enum tjg_type { TJG_F32, TJG_BF16, TJG_S8, TJG_F16 } tjg_type;

typedef struct tjg_packed {
    tjg_type type;
    int64_t k, n;        /* the logical B[k,n] */
    int64_t kp;          /* k rounded up to the type's group (1, 2 or 4) */
    void *data;          /* ceil(n/NR) panels of kp x NR elements, rt_alloc'ed */
    size_t nbytes;
    int32_t *colsum;     /* S8: sum over k of each column (for the A zero point) */
    const float *scale;  /* S8: per-column weight scale (the caller's, or own_scale) */
    float *own_scale;    /* S8 packed from f32: the scales it chose */
    struct tjg_packed *parts;   /* F32 Strassen form (gemm_strassen.c): 7 packed
                                   k/2 x n/2 operands, data NULL; else NULL */
} tjg_packed;

/* B element (i, j) at b[i*rs + j*cs]. bf16 input is raw uint16 (bf16 bits);
 * tjg_pack_f32_as_bf16 rounds f32 to bf16 (RNE). f16 likewise (IEEE
 * binary16 bits, pairs as bf16's: TJG_F16). Return 0, or -1 with an error
 * recorded (out of memory). */
int tjg_pack_f32(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k, int64_t n);
int tjg_pack_bf16(tjg_packed *p, const uint16_t *b, int64_t rs, int64_t cs, int64_t k,
                  int64_t n);
int tjg_pack_f32_as_bf16(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k,
                         int64_t n);
int tjg_pack_f16(tjg_packed *p, const uint16_t *b, int64_t rs, int64_t cs, int64_t k,
                 int64_t n);
int tjg_pack_f32_as_f16(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k,
                        int64_t n);
/* int8 weights with a per-column scale (kept by pointer: must outlive p). */
int tjg_pack_s8(tjg_packed *p, const int8_t *b, int64_t rs, int64_t cs, int64_t k, int64_t n,
                const float *scale);
/* f32 weights quantized per column, symmetric (torch.ao's quantize_dynamic
 * weights): scale[j] = max_k |b[k,j]| / 127 (1 for a zero column),
 * s8 = round(b / scale) (nearest even). */
int tjg_pack_f32_as_s8(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k,
                       int64_t n);
void tjg_packed_free(tjg_packed *p);

/* ---- AMX (gemm_amx.c; the tile interface: gemm_amx.h) ---------------------------------- */
/* Rows from which a bf16 or int8 GEMM runs on the tiles under TJG_AMX.
 * Below it, the avx512_bf16 and VNNI kernels: a 16-row tile would be
 * mostly zero padding, and the tile work per call (ldtilecfg, A copied
 * row-major, C through memory) is not repaid by so few rows. Not measured:
 * no AMX machine was at hand (docs/perf.md). */
enum { TJG_AMX_MIN_M = 16 };
/* Whether a product of m rows of B type t runs on the tiles under variant
 * isa: TJG_AMX, bf16 or int8, m >= TJG_AMX_MIN_M. Pure (tests call it). */
bool tjg_amx_wanted(tjg_isa isa, tjg_type t, int64_t m);
/* Linux's permission for the tile data (arch_prctl(ARCH_REQ_XCOMP_PERM,
 * XFEATURE_XTILEDATA)), requested once per process; without it the first
 * tile instruction faults, so tjg_cpu_features reports no TJG_F_AMX and the
 * avx512_bf16 variant is used. */
bool tjg_amx_permitted(void);
/* Test hook: where on, the GEMMs tjg_amx_wanted(TJG_AMX, ...) would send to
 * the tiles run the AMX block loop on the emulated tile operations,
 * whatever the CPU (gemm_amx.h). */
void tjg_amx_emulate(bool on);
/* GEMM calls run on the tiles (hardware or emulated) in this process. */
uint64_t tjg_amx_calls(void);

/* ---- prologue and epilogue ----------------------------------------------------------- */
typedef enum tjg_act { TJG_ACT_NONE, TJG_ACT_RELU, TJG_ACT_GELU, TJG_ACT_SIGMOID,
                       TJG_ACT_TANH, TJG_ACT_GELU_TANH /* gelu's tanh form */ } tjg_act;

/* y = act(alpha * (A@B) + bias[j] (+ res before act)) (+ res after act);
 * accumulate: the product is added to C's old value first (before alpha is
 * not applied to it: y = act(C + alpha*A@B + ...)). res[i*ldr + j]. */
typedef struct tjg_epilogue {
    float alpha;                 /* 0 means 1 */
    const float *bias;           /* [n] or NULL */
    const float *res;            /* [m, n] rows ldr apart, or NULL */
    int64_t ldr;
    tjg_act act;
    bool res_after_act;
    bool accumulate;
    bool out_bf16;               /* C is bf16 (uint16, RNE) instead of f32 */
    bool out_f16;                /* C is f16 (uint16, RNE: vcvtps2ph's bits) */
} tjg_epilogue;

/* A's element (i, kk) becomes act(a * scale[kk] + shift[kk]) (NULL: 1, 0)
 * as it is packed: a norm's affine part or an activation of the input. */
typedef struct tjg_prologue {
    const float *scale, *shift;
    tjg_act act;
} tjg_prologue;

/* ---- products -------------------------------------------------------------------------- */
/* C[m,n] (rows ldc apart; f32, or bf16/f16 with e->out_bf16/out_f16) =
 * A[m,k] @ B. A's element (i, kk) at a[i*rs + kk*cs], of type: f32 for an
 * F32 B; f32 or B's 16-bit type (a_half: bf16 bits for a BF16 B, f16 bits
 * for an F16 B) for a BF16 or F16 B (f32 is rounded to B's type as it is
 * packed). e and pro may be NULL. Splits over the runtime's pool (nested
 * calls run serially). Return 0, or -1 with an error recorded. */
int tjg_gemm(int64_t m, const void *a, bool a_half, int64_t rs, int64_t cs,
             const tjg_packed *b, void *c, int64_t ldc, const tjg_epilogue *e,
             const tjg_prologue *pro);

/* f32 C[m,n] (rows ldc apart) = A[m,k] @ B[k,n] with B unpacked, element
 * (kk, j) at b[kk*brs + j*bcs] (an operand that changes every call): each
 * task packs the k-block of up to 8 panels it reads just before reading
 * them, so no pass over all of B precedes the product and a thread packs
 * only its own columns. A as in tjg_gemm (f32); e->out_bf16 is ignored. Return 0, or
 * -1 with an error recorded. */
int tjg_gemm_f32_raw(int64_t m, const float *a, int64_t rs, int64_t cs, const float *b,
                     int64_t brs, int64_t bcs, int64_t k, int64_t n, float *c, int64_t ldc,
                     const tjg_epilogue *e, const tjg_prologue *pro);

/* Whether a GEMM of m x n x k is small enough to run on the calling thread,
 * without waking the pool or OpenBLAS's threads: at most TJIT_GEMM_SMALL
 * multiply-adds (default 3 x 2^18 = 786432; 0: never). tjg_gemm and tjg_gemm_f32_raw
 * then run serially, k_matmul.c runs OpenBLAS serially and sends f32 with
 * B's rows contiguous to tjg_gemm_f32_small (gemm_small.c, docs/perf.md). */
bool tjg_small(int64_t m, int64_t n, int64_t k);

/* f32 C[m,n] (rows ldc apart) = A[m,k] @ B[k,n] (+ C when acc), on the
 * calling thread, nothing packed: A's element (i, kk) at a[i*rs + kk*cs],
 * B's (kk, j) at b[kk*ldb + j]. AVX2 + FMA where tjg_isa_current() has it,
 * else portable C; each element one sum over k in order. */
void tjg_gemm_f32_small(int64_t m, int64_t n, int64_t k, const float *a, int64_t rs,
                        int64_t cs, const float *b, int64_t ldb, float *c, int64_t ldc,
                        bool acc);

/* The same with A's rows and B's columns contiguous in k: A's element
 * (i, kk) at a[i*lda + kk], B's (kk, j) at b[j*ldb + kk] (a linear's x @
 * w^T); each element eight partial sums over k, then added across. */
void tjg_gemm_f32_small_dot(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                            const float *b, int64_t ldb, float *c, int64_t ldc, bool acc);

/* int8: A is u8 with a zero point per row (a_zp[i]) and scale per row
 * (a_scale[i]); C (f32) = (sum_k (a - zp) * b) * a_scale[i] * b->scale[j]
 * then the epilogue (bias, act, residual). s32 accumulation (exact). */
int tjg_gemm_u8s8(int64_t m, const uint8_t *a, int64_t lda, const int32_t *a_zp,
                  const float *a_scale, const tjg_packed *b, float *c, int64_t ldc,
                  const tjg_epilogue *e);

/* Dynamic per-row quantization of f32 rows to u8 0..qmax (asymmetric,
 * PyTorch's quantize_dynamic style): scale[i], zp[i] chosen from the row's
 * min/max. qmax 255, or 127 where tjg_u8s8_reduce_range (PyTorch's
 * reduce_range). Rows split over the pool. */
void tjg_quantize_rows_u8(int64_t m, int64_t k, const float *x, int64_t ldx, uint8_t *q,
                          float *scale, int32_t *zp, int qmax);
/* Whether the variant's fast int8 kernel wants 7-bit A (gemm_avx2_q8.c's
 * vpmaddubsw: AVX2, and AVX-512 without VNNI); an A with a byte above 127
 * still runs exactly, on the slower vpmaddwd kernel. */
bool tjg_u8s8_reduce_range(tjg_isa isa);
/* Whether every A[i, kk] (i < m, kk < k, rows lda apart) is <= 127. */
bool tjg_u8_is_7bit(int64_t m, int64_t k, const uint8_t *a, int64_t lda);

/* bf16 <-> f32 (RNE; NaN stays NaN, quieted): ir/half.h's, the one rule. */
static inline uint16_t tjg_f32_to_bf16(float f) { return ir_f32_to_bf16(f); }
static inline float tjg_bf16_to_f32(uint16_t h) { return ir_bf16_to_f32(h); }

/* Calls whose f32 sums went to a padded scratch because C's rows are a
 * multiple of 1024 floats apart (gemm.c, run; for tests). */
unsigned long long tjg_padded_calls(void);

/* Row blocks of tjg_gemm_f32_raw calls so far (each block's tasks pack their
 * columns of B once: gemm.c, half_rows; for tests). */
unsigned long long tjg_raw_row_blocks(void);

/* ---- f32 A packed once for several GEMMs (gemm.c; gemm_strassen.c's operands) ------- */
/* Where tjg_gemm packs an f32 A of m rows for an f32 B of k rows: k-blocks
 * of kc groups (nkb of them, `block` words apart), each [sliver of TJG_MR
 * rows][k within the block][TJG_MR], rows past m zero; words in all. */
typedef struct tjg_alayout {
    int64_t m, k, kc, nkb, block, words;
    bool avx2;   /* packed through 8 x 8 AVX2 transposes */
} tjg_alayout;
/* The layout for this CPU's f32 kernel with kc k per block (0: the GEMM's
 * own choice), 0; 1 where its kernel reads A in another form (split, AMX
 * tiles): pack it in the call (tjg_gemm). Each element's sum runs over k in
 * order whatever kc is: the same bits. */
int tjg_alayout_f32(int64_t m, int64_t k, int64_t kc, tjg_alayout *l);
/* Slivers [s0, s1) of k-block kb of A (m x k, (i, kk) at a[i*rs + kk*cs])
 * into their place in dst (laid out as l): tjg_gemm's pack of A, the same
 * words. */
void tjg_pack_a_f32(const tjg_alayout *l, const float *a, int64_t rs, int64_t cs, int64_t kb,
                    int64_t s0, int64_t s1, float *dst);
/* tjg_gemm of an f32 A given packed (ap, laid out as l by tjg_alayout_f32
 * for m = l->m and B's k): the same sums, the same bits. */
int tjg_gemm_packed_a(const tjg_alayout *l, const float *ap, const tjg_packed *b, float *c,
                      int64_t ldc, const tjg_epilogue *e);

/* ---- one level of Strassen-Winograd on a kept f32 weight (gemm_strassen.c) -------- */
/* B[k,n] (k, n even; element (kk, j) at b[kk*rs + j*cs]) in its Strassen
 * form: the seven k/2 x n/2 right operands of Winograd's variant (B11, B21,
 * B22 and the B-side sums T1 = B12 - B11, T2 = B22 - T1, T3 = B22 - B12,
 * T4 = T2 - B21), each packed as tjg_pack_f32's; p->parts holds them and
 * p->nbytes their total. Return 0, or -1 with an error recorded. */
int tjg_pack_f32_strassen(tjg_packed *p, const float *b, int64_t rs, int64_t cs, int64_t k,
                          int64_t n);
/* C[m,n] = epilogue(A[m,k] @ B) for B in its Strassen form (m even; A as
 * tjg_gemm's f32): the A-side sums in one pass, the seven m/2 x n/2 x k/2
 * products on tjg_gemm (each over the pool), then one pass that forms C's
 * quadrants and applies the epilogue once. Not for accumulate or 16-bit C
 * (returns 1: run tjg_gemm). Its error bound is normwise, not per element
 * (docs/perf.md). Return 0, 1, or -1 with an error recorded. */
int tjg_gemm_strassen(int64_t m, const float *a, int64_t rs, int64_t cs, const tjg_packed *b,
                      float *c, int64_t ldc, const tjg_epilogue *e);
/* Whether an f32 GEMM of m x n x k on a kept weight takes the Strassen form:
 * m, n, k even, m >= TJG_STRASSEN_MIN_M, n and k >= TJG_STRASSEN_MIN_NK, at
 * least TJG_STRASSEN_MIN_MNK multiply-adds (measured on one Zen 3 core: a
 * gain from 128x512x512 up, a loss where n or k is 256 or m is 64; on two
 * threads 2^26 multiply-adds was level or behind: docs/perf.md), and
 * TJIT_STRASSEN (1 on, 0 off; unset: the default, docs/cli.md). */
enum { TJG_STRASSEN_MIN_M = 128, TJG_STRASSEN_MIN_NK = 512 };
#define TJG_STRASSEN_MIN_MNK ((int64_t)1 << 27)
bool tjg_strassen_wanted(int64_t m, int64_t n, int64_t k);
/* Calls that ran in the Strassen form in this process, and those of them
 * whose A-side operands were packed once (tjg_alayout_f32; tests). */
unsigned long long tjg_strassen_calls(void);
unsigned long long tjg_strassen_packed_calls(void);
/* Bias, residual and activation of e on f32 values v[0, nj) of C's row i
 * from column j0 (alpha and accumulate already applied): gemm.c's epilogue
 * order, for gemm_strassen.c's last pass. */
void tjg_epi_tail(const tjg_epilogue *e, float *v, int64_t i, int64_t j0, int64_t nj);

/* ---- packed operands kept across calls (gemm_cache.c) -------------------------------- */
/* B's packed form from the process-wide cache, keyed by its storage's serial
 * and version, byte offset, strides and size (see gemm_cache.c), or NULL
 * (not cached yet: pack it in the call). from_f32: B is f32 packed as bf16.
 * A non-NULL result is held until tjg_cache_put(*handle). */
const tjg_packed *tjg_cache_get(uint64_t serial, unsigned version, int64_t offset, const void *b,
                                int64_t rs, int64_t cs, int64_t k, int64_t n, tjg_type type,
                                bool from_f32, void **handle);
/* The same for a weight that may change between calls (a compiled call
 * without freeze): a weight seen at another version than its entry's is
 * not packed (NULL: run it elsewhere) until two calls see one version, so
 * a weight updated every call is not packed every call. */
const tjg_packed *tjg_cache_get_stable(uint64_t serial, unsigned version, int64_t offset,
                                       const void *b, int64_t rs, int64_t cs, int64_t k,
                                       int64_t n, tjg_type type, bool from_f32, void **handle);
/* B's Strassen form (tjg_pack_f32_strassen), kept as tjg_cache_get_stable
 * keeps a weight that may change: a new version is packed on the second
 * call that sees it, and the old version's form is dropped then. */
const tjg_packed *tjg_cache_get_strassen(uint64_t serial, unsigned version, int64_t offset,
                                         const float *b, int64_t rs, int64_t cs, int64_t k,
                                         int64_t n, void **handle);
/* tjg_cache_get_stable (stable) or tjg_cache_get of an f32 B, lazily: where
 * those would pack, a placeholder is kept instead (data NULL, nbytes 0; the
 * same version rules), packed by tjg_cache_fill when a call needs it; a
 * lookup that is not lazy packs it too. For a weight whose GEMMs take its
 * Strassen form, which then need no plain form. */
const tjg_packed *tjg_cache_get_lazy(uint64_t serial, unsigned version, int64_t offset,
                                     const float *b, int64_t rs, int64_t cs, int64_t k, int64_t n,
                                     bool stable, void **handle);
/* Packs a held entry's data if it is a placeholder, from b (the data of
 * the key it was looked up with). 0, or -1 (out of memory or over the
 * cache's budget: the entry stays a placeholder). */
int tjg_cache_fill(void *handle, const float *b);
void tjg_cache_put(void *handle);
/* The entry's autotune winner (0: not timed yet), or NULL for no entry. */
atomic_int *tjg_cache_choice(void *handle);
/* Whether storage st belongs to a weight rt_gemm_frozen named for this
 * thread's call (*flags: that call's RT_GEMM_* flags). */
struct rt_storage;
bool tjg_frozen(const struct rt_storage *st, unsigned *flags);
/* Drops every idle entry (tj_alloc_trim). */
void tjg_cache_clear(void);
size_t tjg_cache_bytes(void);

/* ---- internal to runtime/gemm*.c: the micro-kernels ------------------------------------ */
enum { TJG_MR = 12 };   /* rows per micro-tile */
/* C[MR, NR] (f32, or s32 for int8; rows ldc apart) (+)= A-sliver @ B-panel
 * over kg groups of k (1 f32, a bf16 pair, an int8 quad: 4 bytes each):
 * a holds kg x MR groups (or kg x 2 x MR words: see split_a), b kg x NR. */
typedef void (*tjg_ukernel)(int64_t kg, const void *a, const void *b, void *c, int64_t ldc,
                            bool acc);
/* A variant's micro-kernel for a B type. split_a, where set, rewrites n
 * packed groups of MR words (a block of A, sliver after sliver) as 2n: each
 * group's two halves, the form uk reads (the AVX2 bf16 and int8 kernels:
 * done once per block rather than in every micro-kernel call). */
typedef struct tjg_kernel {
    tjg_ukernel uk;      /* NULL: the portable C kernel */
    void (*split_a)(int64_t n, const uint32_t *a, uint32_t *out);
    /* where set (AVX2 bf16): gemm.c widens each k-block of a panel, kg
     * groups of NR words, into 2 kg rows of NR f32 (out) once, and uk (an
     * f32 kernel) reads the split A and that panel over 2 kg: the widening
     * is paid once per panel, not once per sliver of A */
    void (*widen_b)(int64_t kg, const uint32_t *b, float *out);
} tjg_kernel;
tjg_kernel tjg_kernel_x86(tjg_type t, tjg_isa isa);
/* The AVX2 + FMA kernels (gemm_avx2.c); NULL ones off x86-64. */
tjg_kernel tjg_kernel_avx2(tjg_type t);
/* The AVX2 f32 kernel on half a panel (C[rows, 16] for rows <= MR, f32;
 * B's 16 columns NR words apart per group), for gemm.c's half-panel loop
 * order; NULL off x86-64. */
typedef void (*tjg_half_kernel)(int64_t kg, const void *a, const void *b, float *c, int64_t ldc,
                                bool acc, int rows);
tjg_half_kernel tjg_f32_half_avx2(void);
/* The AVX2 vpmaddubsw int8 kernel (gemm_avx2_q8.c): exact only for A <= 127. */
tjg_kernel tjg_kernel_avx2_q8(void);
/* Its half-panel form (tjg_half_kernel's shape, c s32 sums in whole 6-row
 * sub-tiles: room for rows rounded up to 6), for the same loop order. */
tjg_half_kernel tjg_q8_half_avx2(void);
/* The AVX2 + F16C f16 kernel (uk, split_a, widen_b: gemm_avx2.c, as
 * bf16's with vcvtph2ps); NULL ones off x86-64. Only where tjg_f16c(). The
 * AVX-512 variants take its split_a and widen_b with their own f32 uk
 * (gemm_x86.c). */
tjg_kernel tjg_kernel_f16c(void);
/* With F16C (only where tjg_f16c()): d[j] = s[j] rounded to f16 (vcvtps2ph,
 * nearest even: ir_f32_to_f16's bits) for j < n. */
void tjg_f32_to_f16_f16c(const float *s, uint16_t *d, int64_t n);
/* With F16C (only where tjg_f16c()): d[q] = s[q * st] widened from f16
 * (exact), st 1 or 2, for q below the returned count (n, or less for st 2:
 * the vectors never read past s[st * (n - 1)]); the caller does the rest. */
int64_t tjg_f16_to_f32_f16c(const uint16_t *s, int64_t st, float *d, int64_t n);
/* With AVX2: *lo = min(*lo, x[0..j)), *hi likewise (NaN left out) over the
 * first j = k rounded down to 32 elements; returns j (0 without AVX2). The
 * row quantizer's range: gcc left its running min/max scalar. */
int64_t tjg_minmax_avx2(int64_t k, const float *x, float *lo, float *hi);
/* With AVX2: q[j] = clamp(nearbyint(x[j] * inv) (NaN: 0) + z, 0, qmax)
 * over the first j = k rounded down to 32 elements, the row quantizer's
 * bits; returns j (0 without AVX2). */
int64_t tjg_quantize_avx2(int64_t k, const float *x, uint8_t *q, float inv, int32_t z, int qmax);
/* With AVX2 (only where tjg_isa_current() >= TJG_AVX2): 8 rows of 32-bit
 * units (row r at byte r * ldi of in, unaligned) transposed, units q < nq:
 * out[q * ldo + r] = the unit at byte 4 * q of row r. */
void tjg_transpose8_avx2(const void *in, int64_t ldi, int64_t nq, uint32_t *out, int64_t ldo);
#endif
