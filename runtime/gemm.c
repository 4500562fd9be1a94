/* gemm.c - the driver of tjit's own GEMM (runtime/gemm.h): packing of A
 * (per block, with the prologue) and of B in the call by each task for its
 * columns (tjg_gemm_f32_raw; B packed once is gemm_pack.c), the blocked
 * loops split over the pool, the epilogue, and the portable C micro-kernels.
 *
 *   task (i-block of MC rows, j-block of NC columns), on one thread:
 *     for each k-block of KC groups:
 *       pack A[i-block, k-block] (prologue applied)   -> MC x KC, in L2
 *       for each panel of NR columns in the j-block:   (KC x NR of B, in L1)
 *         for each sliver of MR rows: micro-kernel -> C tile (+= after k-block 0)
 *     epilogue over the task's C region while it is in cache
 *
 * f32 with AVX2 (and bf16, its panel widened to f32 per k-block first, A
 * split into f32 halves) swaps the two inner loops by half panels (16 columns):
 * each half is read from L1 by every sliver of the block (the AVX2 kernel
 * works in 6 x 16 sub-tiles), while the next half is prefetched, and the
 * row blocks are up to MC_HALF rows (more with a short k: half_rows). With one row
 * block on several threads (shared_run) A is packed once for all k-blocks
 * over the pool, then column tasks of up to SHARED_PANELS panels (fewer
 * towards the end), each over all k-blocks, are claimed one at a time.
 *
 * f16 is bf16's structure (F16C widening: gemm_avx2.c), its k-blocks
 * KCG_WIDE pairs on every variant, so that the portable kernel, the F16C
 * one and the f32 kernels on the widened operands sum in the same order.
 *
 * AMX (bf16 and int8 from TJG_AMX_MIN_M rows: gemm_amx.c) keeps the task
 * loop: per k-block A's block is packed row-major (pack_a_rows) and the
 * tiles sum a whole j-block into the task's scratch, then the epilogue.
 *
 * f32 output without a scale on an accumulated C is summed in C itself;
 * otherwise (int8's s32 sums, bf16/f16 output, alpha with accumulate, and
 * AVX2 f32 tasks whose C rows are a multiple of 1024 floats apart) a task's
 * sums go to its own scratch block and the epilogue writes C from there.
 */
#include <math.h>
#include <string.h>

#include "../ir/half.h"
#include "../ir/vmath.h"
#include "gemm.h"
#include "gemm_amx.h"
#include "rt.h"

/* Measured on Zen 4 (docs/perf.md): KC 128-512 groups within noise; NC 1024
 * repacks A half as often as 512 (+3-5% bf16 and int8). */
enum { MC = 8 * TJG_MR, NC_MAX = 32 * TJG_NR, KCG = 256 };
/* f32 with AVX2 (the half-panel order, tjg_f32_half_avx2): up to 264 rows
 * per block (A's block 264 KB of Zen 3's 512 KB L2), so B streams from
 * memory once per block rather than once per 96 rows: 256x2048x1024 on one
 * Zen 3 core went from 0.75-0.8x OpenBLAS (96 rows) to 0.9x (docs/perf.md). */
enum { MC_HALF = 22 * TJG_MR };
/* bf16 B widened per panel (tjg_kernel.widen_b): KCG / 2 pairs, so that a
 * widened half panel is f32's (256 k x 16 f32, 16 KB of L1). */
enum { KCG_WIDE = KCG / 2 };

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int group_of(tjg_type t) { return t == TJG_F32 ? 1 : t == TJG_S8 ? 4 : 2; }

/* ---- activations ------------------------------------------------------------------------- */

static float act1(tjg_act act, float x)
{
    switch (act) {
    case TJG_ACT_NONE: return x;
    case TJG_ACT_RELU: return vm_relu_f32(x);
    case TJG_ACT_GELU: return vm_gelu_f32(x);
    case TJG_ACT_SIGMOID: return vm_sigmoid_f32(x);
    case TJG_ACT_TANH: return vm_tanh_f32(x);
    case TJG_ACT_GELU_TANH: return vm_gelu_tanh_f32(x);
    }
    return x;
}

/* The epilogue, activations and row quantizer: AVX-512, AVX2 (+ FMA) or SSE2. */
#define TJG_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

#define ACT_LOOP(F)                                                                       \
    for (int64_t j = 0; j < n; j++)                                                       \
        v[j] = F(v[j]);                                                                   \
    break;

TJG_CLONES static void act_row(tjg_act act, float *restrict v, int64_t n)
{
    switch (act) {
    case TJG_ACT_NONE: break;
    case TJG_ACT_RELU: ACT_LOOP(vm_relu_f32)
    case TJG_ACT_GELU: ACT_LOOP(vm_gelu_f32)
    case TJG_ACT_SIGMOID: ACT_LOOP(vm_sigmoid_f32)
    case TJG_ACT_TANH: ACT_LOOP(vm_tanh_f32)
    case TJG_ACT_GELU_TANH: ACT_LOOP(vm_gelu_tanh_f32)
    }
}

/* ---- the call's state ---------------------------------------------------------------------- */

typedef struct gemm_call {
    int64_t m, n, lda_rs, lda_cs;
    const void *a;
    bool a_bf16;                 /* BF16 B: A given as bf16 bits */
    bool a_f16;                  /* F16 B: A given as f16 bits */
    const int32_t *a_zp;         /* S8: per row */
    const float *a_scale;
    const tjg_packed *b;
    void *c;
    int64_t ldc;
    tjg_epilogue e;
    tjg_prologue pro;
    bool has_pro, in_place;      /* in_place: sums go to C (f32) itself */
    tjg_kernel kern;
    const tjg_amx_ops *amx;      /* the tiles (gemm_amx.h), or NULL: kern */
    tjg_half_kernel half;        /* AVX2 f32, 7-bit int8: the half-panel kernel */
    bool avx2;                   /* the variant has AVX2: packing moves 8 x 8 blocks */
    bool f16c;                   /* tjg_f16c(): f16 C rounded by vcvtps2ph */
    int64_t mc, kc;              /* rows per i-block, k groups per k-block */
    bool a_7bit;                 /* S8: every byte of A <= 127 (the vpmaddubsw kernel) */
    int64_t nc, nbi, nbj;        /* columns per task, task grid */
    const uint32_t *ash;         /* A packed once for all tasks (shared_run, or the
                                  * caller's: a_packed), or NULL */
    bool a_packed;               /* ash given by the caller (tjg_gemm_packed_a) */
    int64_t kc_packed;           /* its k-groups per block */
    int64_t ash_block;           /* words per k-block of ash */
    atomic_llong next;           /* shared_run: the next panel to claim */
    int th;                      /* shared_run: the threads claiming */
    const float *braw;           /* tjg_gemm_f32_raw: B unpacked, (kk, j) at kk*brs + j*bcs */
    int64_t brs, bcs;
} gemm_call;

/* ---- packing A ---------------------------------------------------------------------------- */

static float a_f32(const gemm_call *g, int64_t i, int64_t kk)
{
    int64_t off = i * g->lda_rs + kk * g->lda_cs;
    float x = g->a_bf16  ? tjg_bf16_to_f32(((const uint16_t *)g->a)[off])
              : g->a_f16 ? ir_f16_to_f32(((const uint16_t *)g->a)[off])
                         : ((const float *)g->a)[off];
    if (g->has_pro) {
        x = x * (g->pro.scale ? g->pro.scale[kk] : 1.0f) + (g->pro.shift ? g->pro.shift[kk] : 0.0f);
        x = act1(g->pro.act, x);
    }
    return x;
}

/* Rows i0..i0+mc, groups k-groups kg0..kg0+nkg of A into dst: [sliver][group][MR]. */
static void pack_a(const gemm_call *g, uint32_t *dst, int64_t i0, int64_t mc, int64_t kg0,
                   int64_t nkg)
{
    tjg_type t = g->b->type;
    int gs = group_of(t);
    int64_t k = g->b->k;
    /* contiguous rows without a prologue whose groups lie whole in the
     * row: the row's bytes are the groups (little-endian pairs and quads) */
    bool half = t == TJG_BF16 || t == TJG_F16, a_half = g->a_bf16 || g->a_f16;
    bool bytes = !g->has_pro && g->lda_cs == 1 && (!half || a_half);
    int64_t whole = (k / gs - kg0) < nkg ? k / gs - kg0 : nkg;
    for (int64_t s = 0; s < cdiv(mc, TJG_MR); s++) {
        int64_t done = 0;   /* groups packed for the whole sliver */
        if (bytes && g->avx2 && (s + 1) * TJG_MR <= mc && whole > 0) {
            int64_t ld = g->lda_rs * (4 / gs);   /* bytes between rows */
            const char *src = (const char *)g->a + ((i0 + s * TJG_MR) * g->lda_rs + kg0 * gs) *
                                                       (4 / gs);
            uint32_t *d = dst + s * nkg * TJG_MR;
            tjg_transpose8_avx2(src, ld, whole, d, TJG_MR);   /* rows 0-7, then 4-11 */
            tjg_transpose8_avx2(src + 4 * ld, ld, whole, d + 4, TJG_MR);
            done = whole;
        } else if (t == TJG_F32 && !g->has_pro && g->lda_rs == 1 && (s + 1) * TJG_MR <= mc) {
            /* A read transposed (dY^T of a weight's gradient): each group
             * of the sliver is MR contiguous floats */
            const float *src = (const float *)g->a + i0 + s * TJG_MR + kg0 * g->lda_cs;
            uint32_t *d = dst + s * nkg * TJG_MR;
            for (int64_t q = 0; q < nkg; q++)
                memcpy(d + q * TJG_MR, src + q * g->lda_cs, TJG_MR * 4);
            continue;
        }
        for (int r = 0; r < TJG_MR; r++) {
            int64_t i = i0 + s * TJG_MR + r;
            uint32_t *d = dst + s * nkg * TJG_MR + r;
            if (i >= i0 + mc) {
                for (int64_t q = 0; q < nkg; q++)
                    d[q * TJG_MR] = 0;
                continue;
            }
            /* whole groups from contiguous rows; f32 rows for a bf16 B
             * round pair by pair */
            int64_t q0 = done;
            if (bytes) {
                const char *src = (const char *)g->a + (i * g->lda_rs + kg0 * gs) * (4 / gs);
                for (; q0 < whole; q0++)
                    memcpy(&d[q0 * TJG_MR], src + q0 * 4, 4);
            } else if (!g->has_pro && g->lda_cs == 1 && t == TJG_BF16) {
                const float *src = (const float *)g->a + i * g->lda_rs + kg0 * 2;
                for (; q0 < whole; q0++)
                    d[q0 * TJG_MR] = tjg_f32_to_bf16(src[2 * q0]) |
                                     (uint32_t)tjg_f32_to_bf16(src[2 * q0 + 1]) << 16;
            } else if (!g->has_pro && g->lda_cs == 1 && t == TJG_F16) {
                const float *src = (const float *)g->a + i * g->lda_rs + kg0 * 2;
                for (; q0 < whole; q0++)
                    d[q0 * TJG_MR] = ir_f32_to_f16(src[2 * q0]) |
                                     (uint32_t)ir_f32_to_f16(src[2 * q0 + 1]) << 16;
            }
            for (int64_t q = q0; q < nkg; q++) {
                uint32_t w = 0;
                for (int e = 0; e < gs; e++) {
                    int64_t kk = (kg0 + q) * gs + e;
                    if (kk >= k)
                        break;
                    if (t == TJG_F32) {
                        float x = a_f32(g, i, kk);
                        memcpy(&w, &x, 4);
                    } else if (half) {
                        uint16_t h;
                        if (a_half && !g->has_pro)
                            h = ((const uint16_t *)g->a)[i * g->lda_rs + kk * g->lda_cs];
                        else if (t == TJG_BF16)
                            h = tjg_f32_to_bf16(a_f32(g, i, kk));
                        else
                            h = ir_f32_to_f16(a_f32(g, i, kk));
                        w |= (uint32_t)h << (16 * e);
                    } else {
                        w |= (uint32_t)((const uint8_t *)g->a)[i * g->lda_rs + kk] << (8 * e);
                    }
                }
                d[q * TJG_MR] = w;
            }
        }
    }
}

/* AMX: rows i0..i0+mc of A's k-groups kg0..kg0+nkg row-major into dst (bf16
 * or u8, rows ld bytes apart: the groups rounded up to TJG_AMX_KG), zero
 * past k and in the rows from mc up to a multiple of TJG_AMX_ROWS; the same
 * elements as pack_a's (raw bf16 bits, f32 rounded to nearest even, the
 * prologue applied). */
static void pack_a_rows(const gemm_call *g, uint8_t *dst, int64_t ld, int64_t i0, int64_t mc,
                        int64_t kg0, int64_t nkg)
{
    bool s8 = g->b->type == TJG_S8;
    int gs = group_of(g->b->type), es = s8 ? 1 : 2;
    int64_t k0 = kg0 * gs, kn = g->b->k - k0 < nkg * gs ? g->b->k - k0 : nkg * gs;
    for (int64_t r = 0; r < cdiv(mc, TJG_AMX_ROWS) * TJG_AMX_ROWS; r++) {
        uint8_t *d = dst + r * ld;
        int64_t i = i0 + r, done = r < mc ? kn : 0;
        if (r >= mc) {   /* a padding row: all zero */
        } else if (s8 || (g->a_bf16 && !g->has_pro && g->lda_cs == 1)) {
            memcpy(d, (const char *)g->a + (i * g->lda_rs + k0) * es, (size_t)(kn * es));
        } else if (!g->has_pro && g->lda_cs == 1 && !g->a_bf16) {
            const float *src = (const float *)g->a + i * g->lda_rs + k0;
            uint16_t *h = (uint16_t *)d;
            for (int64_t q = 0; q < kn; q++)
                h[q] = tjg_f32_to_bf16(src[q]);
        } else {
            uint16_t *h = (uint16_t *)d;
            for (int64_t q = 0; q < kn; q++)
                h[q] = g->a_bf16 && !g->has_pro
                           ? ((const uint16_t *)g->a)[i * g->lda_rs + (k0 + q) * g->lda_cs]
                           : tjg_f32_to_bf16(a_f32(g, i, k0 + q));
        }
        memset(d + done * es, 0, (size_t)(ld - done * es));
    }
}

/* ---- packing B in the call (tjg_gemm_f32_raw) ------------------------------------------------ */

/* Rows kg0..kg0+nkg of B's columns j0..j0+cols (cols <= NR) as one panel's
 * k-block (nkg rows of NR floats; columns past cols zero), B not read
 * row by row (pack_b_block does that): 8 x 8 transposes (AVX2) where B's
 * columns are contiguous, element by element otherwise. */
static void pack_b_panel(const gemm_call *g, float *restrict dst, int64_t kg0, int64_t nkg,
                         int64_t j0, int64_t cols)
{
    const float *b = g->braw;
    int64_t rs = g->brs, cs = g->bcs, jt = 0;
    if (rs == 1 && g->avx2)
        for (; jt + 8 <= cols; jt += 8)
            tjg_transpose8_avx2(b + kg0 + (j0 + jt) * cs, cs * 4, nkg, (uint32_t *)dst + jt,
                                TJG_NR);
    for (int64_t q = 0; q < nkg; q++)
        for (int64_t j = jt; j < TJG_NR; j++)
            dst[q * TJG_NR + j] = j < cols ? b[(kg0 + q) * rs + (j0 + j) * cs] : 0.0f;
}

enum { RAW_PANELS = 8 };   /* panels of B packed at once in the call: 256 columns */

/* Up to RAW_PANELS panels' k-block (columns j0..j0+cols) into dst, panel
 * after panel (nkg rows of NR each): B's rows read RAW_PANELS * 128 bytes
 * at a time where they are contiguous, as a stream the hardware prefetches. */
static void pack_b_block(const gemm_call *g, float *restrict dst, int64_t kg0, int64_t nkg,
                         int64_t j0, int64_t cols)
{
    int64_t np = cdiv(cols, TJG_NR);
    if (g->bcs != 1) {
        for (int64_t p = 0; p < np; p++)
            pack_b_panel(g, dst + p * nkg * TJG_NR, kg0, nkg, j0 + p * TJG_NR,
                         cols - p * TJG_NR < TJG_NR ? cols - p * TJG_NR : TJG_NR);
        return;
    }
    for (int64_t q = 0; q < nkg; q++) {
        const float *src = g->braw + (kg0 + q) * g->brs + j0;
        for (int64_t p = 0; p < np; p++) {
            float *d = dst + (p * nkg + q) * TJG_NR;
            int64_t c = cols - p * TJG_NR;
            if (c >= TJG_NR) {
                memcpy(d, src + p * TJG_NR, TJG_NR * 4);
            } else {
                memcpy(d, src + p * TJG_NR, (size_t)c * 4);
                memset(d + c, 0, (size_t)(TJG_NR - c) * 4);
            }
        }
    }
}

/* ---- portable micro-kernels ----------------------------------------------------------------- */

static void uk_generic(tjg_type t, int64_t kg, const uint32_t *a, const uint32_t *b, void *c,
                       int64_t ldc, bool acc)
{
    for (int r = 0; r < TJG_MR; r++)
        for (int j = 0; j < TJG_NR; j++) {
            float sf = 0;
            int32_t si = 0;
            for (int64_t p = 0; p < kg; p++) {
                uint32_t x = a[p * TJG_MR + r], y = b[p * TJG_NR + j];
                if (t == TJG_F32) {
                    float fx, fy;
                    memcpy(&fx, &x, 4);
                    memcpy(&fy, &y, 4);
                    sf = fmaf(fx, fy, sf);
                } else if (t == TJG_BF16) {
                    sf = fmaf(tjg_bf16_to_f32((uint16_t)x), tjg_bf16_to_f32((uint16_t)y), sf);
                    sf = fmaf(tjg_bf16_to_f32((uint16_t)(x >> 16)),
                              tjg_bf16_to_f32((uint16_t)(y >> 16)), sf);
                } else if (t == TJG_F16) {
                    sf = fmaf(ir_f16_to_f32((uint16_t)x), ir_f16_to_f32((uint16_t)y), sf);
                    sf = fmaf(ir_f16_to_f32((uint16_t)(x >> 16)),
                              ir_f16_to_f32((uint16_t)(y >> 16)), sf);
                } else {
                    for (int e = 0; e < 4; e++)
                        si += (int32_t)(uint8_t)(x >> (8 * e)) * (int8_t)(uint8_t)(y >> (8 * e));
                }
            }
            if (t == TJG_S8) {
                int32_t *ci = (int32_t *)c + r * ldc + j;
                *ci = acc ? *ci + si : si;
            } else {
                float *cf = (float *)c + r * ldc + j;
                *cf = acc ? *cf + sf : sf;
            }
        }
}

static void run_uk(const gemm_call *g, int64_t kg, const uint32_t *a, const uint32_t *b, void *c,
                   int64_t ldc, bool acc)
{
    if (g->kern.uk)
        g->kern.uk(kg, a, b, c, ldc, acc);
    else
        uk_generic(g->b->type, kg, a, b, c, ldc, acc);
}

/* ---- epilogue ------------------------------------------------------------------------------- */

/* v[0..n) rounded to f16 into c (vcvtps2ph with F16C: the same bits). */
static void round_f16(const gemm_call *g, const float *v, uint16_t *c, int64_t n)
{
    if (g->f16c) {
        tjg_f32_to_f16_f16c(v, c, n);
        return;
    }
    for (int64_t j = 0; j < n; j++)
        c[j] = ir_f32_to_f16(v[j]);
}

TJG_CLONES void tjg_epi_tail(const tjg_epilogue *e, float *restrict v, int64_t i, int64_t j0,
                             int64_t nj)
{
    if (e->bias)
        for (int64_t j = 0; j < nj; j++)
            v[j] += e->bias[j0 + j];
    const float *res = e->res ? e->res + i * e->ldr + j0 : NULL;
    if (res && !e->res_after_act)
        for (int64_t j = 0; j < nj; j++)
            v[j] += res[j];
    act_row(e->act, v, nj);
    if (res && e->res_after_act)
        for (int64_t j = 0; j < nj; j++)
            v[j] += res[j];
}

TJG_CLONES static void epi_row(const gemm_call *g, int64_t i, int64_t j0, int64_t nj,
                               const void *src, float *restrict v)
{
    const tjg_epilogue *e = &g->e;
    float alpha = e->alpha != 0 ? e->alpha : 1.0f;
    if (g->b->type != TJG_S8 && e->out_f16 && !e->accumulate && !e->res &&
        e->act == TJG_ACT_NONE) {
        /* f16 C: the sums (+ bias) then one vector rounding (as bf16's below) */
        const float *s = src;
        for (int64_t j = 0; j < nj; j++)
            v[j] = alpha * s[j];
        if (e->bias)
            for (int64_t j = 0; j < nj; j++)
                v[j] += e->bias[j0 + j];
        round_f16(g, v, (uint16_t *)g->c + i * g->ldc + j0, nj);
        return;
    }
    if (g->b->type != TJG_S8 && e->out_bf16 && !e->accumulate && !e->res &&
        e->act == TJG_ACT_NONE) {
        /* bf16 C from the sums (+ bias) in one pass rather than three: the
         * same operations as below (a bf16 linear) */
        const float *s = src;
        uint16_t *c = (uint16_t *)g->c + i * g->ldc + j0;
        for (int64_t j = 0; j < nj; j++) {
            float x = alpha * s[j];
            if (e->bias)
                x += e->bias[j0 + j];
            c[j] = tjg_f32_to_bf16(x);
        }
        return;
    }
    if (g->b->type == TJG_S8) {
        const int32_t *s = src, *cs = g->b->colsum + j0;
        const float *bs = g->b->scale + j0;
        int32_t zp = g->a_zp[i];
        float as = g->a_scale[i] * alpha;
        for (int64_t j = 0; j < nj; j++)
            v[j] = (float)(s[j] - zp * cs[j]) * (as * bs[j]);
    } else {
        const float *s = src;
        for (int64_t j = 0; j < nj; j++)
            v[j] = alpha * s[j];
    }
    if (e->accumulate && !g->in_place) {
        if (e->out_bf16) {
            const uint16_t *c = (const uint16_t *)g->c + i * g->ldc + j0;
            for (int64_t j = 0; j < nj; j++)
                v[j] += tjg_bf16_to_f32(c[j]);
        } else if (e->out_f16) {
            const uint16_t *c = (const uint16_t *)g->c + i * g->ldc + j0;
            for (int64_t j = 0; j < nj; j++)
                v[j] += ir_f16_to_f32(c[j]);
        } else {
            const float *c = (const float *)g->c + i * g->ldc + j0;
            for (int64_t j = 0; j < nj; j++)
                v[j] += c[j];
        }
    }
    tjg_epi_tail(e, v, i, j0, nj);
    if (e->out_bf16) {
        uint16_t *c = (uint16_t *)g->c + i * g->ldc + j0;
        for (int64_t j = 0; j < nj; j++)
            c[j] = tjg_f32_to_bf16(v[j]);
    } else if (e->out_f16) {
        round_f16(g, v, (uint16_t *)g->c + i * g->ldc + j0, nj);
    } else if (v != (float *)g->c + i * g->ldc + j0) {
        memcpy((float *)g->c + i * g->ldc + j0, v, (size_t)nj * 4);
    }
}

static bool epi_trivial(const gemm_call *g)
{
    const tjg_epilogue *e = &g->e;
    return g->in_place && (e->alpha == 0 || e->alpha == 1) && !e->bias && !e->res &&
           e->act == TJG_ACT_NONE;
}

/* ---- tasks ---------------------------------------------------------------------------------- */

typedef struct scratch {
    uint32_t *a;     /* MC x KCG groups (x 2 when the kernel splits them) */
    uint32_t *t;     /* MC x nc sums (not in place) */
    float *v;        /* one row for the epilogue */
    uint32_t *tile;  /* MR x NR edge tile */
    float *w;        /* a widened panel: 2 KCG_WIDE x NR (kern.widen_b) */
    float *bp;       /* RAW_PANELS panels of B packed in the call: KCG x NR each (braw) */
    uint32_t *tail;  /* AMX: B's last k-groups, TJG_AMX_KG x NR words */
    void *amx;       /* AMX: the ops' state (the emulation's tiles) */
    size_t bytes;
    void *base;
} scratch;

/* Words between two rows of a task's sums in scratch (not in place): past
 * the task's columns by 16, so that a sub-tile's rows never share one L1 set
 * (they would at a multiple of 1024 floats: see run). */
static int64_t ldt(const gemm_call *g) { return g->nc + 16; }

static int scratch_get(const gemm_call *g, scratch *s)
{
    /* AMX: A's block and the sums padded to whole 32-row tile pairs */
    int64_t rows = g->amx ? cdiv(g->mc, TJG_AMX_ROWS) * TJG_AMX_ROWS : g->mc;
    size_t sa = (size_t)(rows * g->kc) * 4 * (g->kern.split_a ? 3 : 1),
           st = g->in_place ? 0 : (size_t)(rows * ldt(g)) * 4,
           sv = (size_t)g->nc * 4 + 64, stile = (size_t)TJG_MR * TJG_NR * 4,
           sw = g->kern.widen_b ? (size_t)(2 * g->kc * TJG_NR) * 4 : 0,
           sb = g->braw ? (size_t)(g->kc * TJG_NR * RAW_PANELS) * 4 : 0,
           sx = g->amx ? (size_t)TJG_AMX_KG * TJG_NR * 4 + g->amx->state_bytes : 0;
    s->bytes = sa + st + sv + stile + sw + sb + sx;
    if (!(s->base = rt_alloc(s->bytes)))
        return -1;
    s->tile = s->base;
    s->w = (float *)((char *)s->base + stile);
    s->a = (uint32_t *)((char *)s->w + sw);
    s->t = (uint32_t *)((char *)s->a + sa);
    s->v = (float *)((char *)s->t + st);
    s->bp = (float *)((char *)s->v + sv);
    s->tail = (uint32_t *)((char *)s->bp + sb);
    s->amx = s->tail + TJG_AMX_KG * TJG_NR;
    return 0;
}

/* Row block bi, columns [j0, j0 + nj) (j0 a whole panel's, nj <= g->nc). */
static void task(const gemm_call *g, scratch *s, int64_t bi, int64_t j0, int64_t nj)
{
    const tjg_packed *b = g->b;
    int64_t i0 = bi * g->mc, mc = g->m - i0 < g->mc ? g->m - i0 : g->mc;
    int64_t kgt = b->kp / group_of(b->type);
    for (int64_t kg0 = 0; kg0 < kgt || kg0 == 0; kg0 += g->kc) {
        int64_t nkg = kgt - kg0 < g->kc ? kgt - kg0 : g->kc;
        bool acc = kg0 > 0 || (g->in_place && g->e.accumulate);
        if (g->amx) {   /* the tiles: the j-block's sums into s->t */
            int64_t ld = cdiv(nkg, TJG_AMX_KG) * TJG_AMX_KG * 4;
            pack_a_rows(g, (uint8_t *)s->a, ld, i0, mc, kg0, nkg);
            g->amx->block(s->amx, b->type == TJG_BF16, mc, nj, nkg, s->a, ld,
                          (const uint32_t *)b->data + (j0 / TJG_NR * kgt + kg0) * TJG_NR,
                          kgt * TJG_NR, s->t, ldt(g), acc, s->tail);
            continue;
        }
        /* a kernel that reads A split: packed into the last third of
         * s->a, split into the first two */
        int wide = g->kern.split_a ? 2 : 1;
        uint32_t *packed = s->a + (wide - 1) * 2 * g->mc * g->kc;
        const uint32_t *ab = s->a;
        if (g->ash)   /* packed before the tasks (shared_run, the caller) */
            ab = g->ash + kg0 / g->kc * g->ash_block + i0 / TJG_MR * nkg * TJG_MR * wide;
        else if (nkg > 0)
            pack_a(g, packed, i0, mc, kg0, nkg);
        if (!g->ash && nkg > 0 && wide == 2)
            g->kern.split_a(cdiv(mc, TJG_MR) * nkg, packed, s->a);
        /* what the kernel reads per panel: kgk groups (twice nkg f32 rows
         * where the panel is widened) */
        bool widen = g->kern.widen_b && nkg > 0;
        int64_t kgk = widen ? 2 * nkg : nkg;
        for (int64_t jp = 0; jp < nj; jp += TJG_NR) {
            int64_t cols = nj - jp < TJG_NR ? nj - jp : TJG_NR, ir0 = 0;
            const uint32_t *bp = (const uint32_t *)s->bp, *raw_next = bp;
            bool half = g->half && cols == TJG_NR;
            if (g->braw) {
                if (jp % (RAW_PANELS * TJG_NR) == 0)
                    pack_b_block(g, s->bp, kg0, nkg, j0 + jp,
                                 nj - jp < RAW_PANELS * TJG_NR ? nj - jp : RAW_PANELS * TJG_NR);
                bp = (const uint32_t *)s->bp + jp / TJG_NR % RAW_PANELS * nkg * TJG_NR;
            } else
                bp = (const uint32_t *)b->data + ((j0 + jp) / TJG_NR * kgt + kg0) * TJG_NR,
                raw_next = bp + kgt * TJG_NR;
            if (widen) {
                g->kern.widen_b(nkg, bp, s->w);
                bp = (const uint32_t *)s->w;
            }
            if (half) {
                /* half panel by half panel down the whole rows of slivers,
                 * into C or (not in place) the task's sums */
                float *cb = g->in_place ? (float *)g->c + i0 * g->ldc + j0 : (float *)s->t;
                int64_t ldb = g->in_place ? g->ldc : ldt(g);
                ir0 = mc;   /* every sliver, the last one's rows only */
                int64_t nsl = cdiv(mc, TJG_MR), per = cdiv(kgk, nsl);
                for (int h = 0; h < TJG_NR; h += TJG_NR / 2) {
                    /* the next half panel, a share per sliver: from memory
                     * while this one is read from L1; widened, the next
                     * panel's raw groups (two lines each), a share per
                     * sliver of both halves, for widen_b */
                    /* packed in the call: the next panel is the block's next,
                     * nkg groups on, within the block */
                    const uint32_t *nx = h ? bp + (g->braw ? nkg : kgt) * TJG_NR : bp + TJG_NR / 2;
                    bool more = h == 0 || (jp + TJG_NR < nj &&
                                           (!g->braw || (jp / TJG_NR + 1) % RAW_PANELS));
                    int64_t per_raw = cdiv(nkg, 2 * nsl);
                    for (int64_t ir = 0; ir < ir0; ir += TJG_MR) {
                        int64_t sl = ir / TJG_MR, r0 = (h ? nsl + sl : sl) * per_raw;
                        for (int64_t q = r0; widen && jp + TJG_NR < nj && q < nkg &&
                                             q < r0 + per_raw; q++) {
                            __builtin_prefetch(raw_next + q * TJG_NR);
                            __builtin_prefetch(raw_next + q * TJG_NR + 16);
                        }
                        for (int64_t q = sl * per; more && !widen && q < kgk && q < (sl + 1) * per;
                             q++)
                            __builtin_prefetch(nx + q * TJG_NR);
                        g->half(kgk, ab + ir / TJG_MR * nkg * TJG_MR * wide, bp + h,
                                cb + ir * ldb + jp + h, ldb, acc,
                                (int)(mc - ir < TJG_MR ? mc - ir : TJG_MR));
                    }
                }
            }
            for (int64_t ir = ir0; ir < mc; ir += TJG_MR) {
                const uint32_t *ap = ab + ir / TJG_MR * nkg * TJG_MR * wide;
                int64_t rows = mc - ir < TJG_MR ? mc - ir : TJG_MR;
                if (!g->in_place) {
                    run_uk(g, kgk, ap, bp, s->t + ir * ldt(g) + jp, ldt(g), acc);
                    continue;
                }
                float *c = (float *)g->c + (i0 + ir) * g->ldc + j0 + jp;
                if (rows == TJG_MR && cols == TJG_NR) {
                    run_uk(g, kgk, ap, bp, c, g->ldc, acc);
                    continue;
                }
                float *tile = (float *)s->tile;
                for (int64_t r = 0; r < rows && acc; r++)
                    memcpy(tile + r * TJG_NR, c + r * g->ldc, (size_t)cols * 4);
                run_uk(g, kgk, ap, bp, tile, TJG_NR, acc);
                for (int64_t r = 0; r < rows; r++)
                    memcpy(c + r * g->ldc, tile + r * TJG_NR, (size_t)cols * 4);
            }
        }
        if (kgt == 0)
            break;
    }
    if (g->in_place && epi_trivial(g))
        return;
    for (int64_t r = 0; r < mc; r++) {
        const void *src = g->in_place ? (const void *)((float *)g->c + (i0 + r) * g->ldc + j0)
                                      : (const void *)(s->t + r * ldt(g));
        /* f32 C written in place of the row scratch where C is not read
         * (sums from scratch, no accumulate, no residual that could be C):
         * no copy of the row */
        float *row = (float *)g->c + (i0 + r) * g->ldc + j0;
        bool direct = !g->in_place && !g->e.out_bf16 && !g->e.out_f16 && !g->e.accumulate &&
                      !g->e.res;
        epi_row(g, i0 + r, j0, nj, src, direct ? row : s->v);
    }
}

typedef struct tasks_ctx {
    const gemm_call *g;
    atomic_int failed;
} tasks_ctx;

static void tasks_range(void *ctx, int64_t t0, int64_t t1)
{
    tasks_ctx *tc = ctx;
    const gemm_call *g = tc->g;
    scratch s;
    if (scratch_get(g, &s)) {
        atomic_store(&tc->failed, 1);
        return;
    }
    /* column blocks outermost: the pool's contiguous chunks then give each
     * thread whole column blocks (all rows of its part of C and only its
     * part of B) rather than a run of row blocks, whose last one is short
     * (256 rows = 96 + 96 + 64: 288 rows against 224 on two threads) */
    if (g->amx)   /* one tile configuration per call and thread */
        g->amx->begin(s.amx);
    for (int64_t t = t0; t < t1; t++) {
        int64_t j0 = t / g->nbi * g->nc;
        task(g, &s, t % g->nbi, j0, g->n - j0 < g->nc ? g->n - j0 : g->nc);
    }
    if (g->amx && g->amx->end(s.amx)) {
        rt_error("gemm %lldx%lldx%lld: an invalid tile operation (AMX emulation)",
                 (long long)g->m, (long long)g->n, (long long)g->b->k);
        atomic_store(&tc->failed, 1);
    }
    rt_free(s.base, s.bytes);
}

/* ---- one row block on several threads: A packed once, columns claimed ------------------- */

/* Panels per claimed task: C's part (256 rows x 128 columns, 128 KB) stays
 * in L2 beside the A block (264 x 256, 270 KB) over all k-blocks, and a
 * thread that runs slower (a core shared with another process) takes fewer
 * tasks. */
enum { SHARED_PANELS = 4 };

typedef struct shared_ctx {
    gemm_call *g;
    uint32_t *a;         /* every k-block of A, ash_block words apart */
    int64_t nkb, parts;  /* k-blocks; row parts per k-block in the packing */
    atomic_int failed;
} shared_ctx;

/* Packing: task t is k-block t / parts, its part t % parts of the slivers. */
static void shared_pack(void *ctx, int64_t t0, int64_t t1)
{
    shared_ctx *sc = ctx;
    gemm_call *g = sc->g;
    int64_t kgt = g->b->kp / group_of(g->b->type), nsl = cdiv(g->m, TJG_MR);
    int wide = g->kern.split_a ? 2 : 1;
    uint32_t *tmp = NULL;
    size_t tb = (size_t)(cdiv(nsl, sc->parts) * TJG_MR * g->kc) * 4;
    if (wide == 2 && !(tmp = rt_alloc(tb))) {
        atomic_store(&sc->failed, 1);
        return;
    }
    for (int64_t t = t0; t < t1; t++) {
        int64_t kb = t / sc->parts, p = t % sc->parts, kg0 = kb * g->kc;
        int64_t nkg = kgt - kg0 < g->kc ? kgt - kg0 : g->kc;
        int64_t s0 = nsl * p / sc->parts, s1 = nsl * (p + 1) / sc->parts;
        if (s1 <= s0)
            continue;
        int64_t i0 = s0 * TJG_MR, rows = (g->m < s1 * TJG_MR ? g->m : s1 * TJG_MR) - i0;
        uint32_t *dst = sc->a + kb * g->ash_block + s0 * nkg * TJG_MR * wide;
        pack_a(g, wide == 2 ? tmp : dst, i0, rows, kg0, nkg);
        if (wide == 2)
            g->kern.split_a((s1 - s0) * nkg, tmp, dst);
    }
    if (tmp)
        rt_free(tmp, tb);
}

/* The next task's panels from g->next (the first at *p0), 0 when none is
 * left: shrinking as the panels run out, from g->nc's down to 2 (a last
 * single one where 1 is left), so the threads' last tasks end close together:
 * with 8 equal tasks of 4 panels at 256x1024x2048 (1.5 ms each on a Zen 3
 * core) a thread that started late left the other waiting up to a task's
 * time. A task's size depends only on where it starts, and no element's
 * sums depend on which task makes it. */
static int64_t claim(gemm_call *g, int64_t panels, int64_t *p0)
{
    int64_t cur = atomic_load(&g->next), np;
    do {
        if (cur >= panels)
            return 0;
        np = (panels - cur) / (2 * g->th);
        np = np < 2 ? 2 : np;
        np = np > g->nc / TJG_NR ? g->nc / TJG_NR : np;
        np = np > panels - cur ? panels - cur : np;
    } while (!atomic_compare_exchange_weak(&g->next, &cur, cur + np));
    *p0 = cur;
    return np;
}

/* The product: each thread claims column tasks until none is left. Which
 * thread runs a task never changes its sums (one task makes each element). */
static void shared_tasks(void *ctx, int64_t t0, int64_t t1)
{
    (void)t0, (void)t1;
    shared_ctx *sc = ctx;
    gemm_call *g = sc->g;
    scratch s;
    if (scratch_get(g, &s)) {
        atomic_store(&sc->failed, 1);
        return;
    }
    int64_t panels = cdiv(g->n, TJG_NR), p0, np;
    while ((np = claim(g, panels, &p0)) > 0)
        task(g, &s, 0, p0 * TJG_NR,
             g->n - p0 * TJG_NR < np * TJG_NR ? g->n - p0 * TJG_NR : np * TJG_NR);
    rt_free(s.base, s.bytes);
}

/* AVX2's half-panel order with one row block (m <= MC_HALF: P4's 256 rows)
 * on th > 1 threads. Before, each thread took one column half in one task
 * and packed all of A for itself: A packed th times, a thread's C (1 MB at
 * 256x2048) streamed through L2 once per k-block, and a thread slowed by
 * another process left the other waiting at the end. Now A is packed once
 * (k-blocks x row parts over the pool), then tasks of up to SHARED_PANELS
 * panels (fewer as the panels run out: claim) over all k-blocks are claimed
 * one at a time. Returns 1 where it does not
 * apply (the caller runs the per-thread tasks). */
static int shared_run(gemm_call *g, int th)
{
    int64_t kgt = g->b->kp / group_of(g->b->type), panels = cdiv(g->n, TJG_NR);
    if (!g->half || g->braw || g->nbi != 1 || th < 2 || kgt == 0 || panels < 2 * th)
        return 1;
    int64_t per = panels / (4 * th);   /* at least 4 tasks per thread where panels allow */
    per = per < 1 ? 1 : per > SHARED_PANELS ? SHARED_PANELS : per;
    g->nc = per * TJG_NR;
    g->th = th;
    int wide = g->kern.split_a ? 2 : 1;
    shared_ctx sc = {.g = g, .nkb = cdiv(kgt, g->kc), .parts = th};
    atomic_init(&sc.failed, 0);
    size_t ab = 0;
    if (!g->a_packed) {
        g->ash_block = cdiv(g->m, TJG_MR) * TJG_MR * g->kc * wide;
        ab = (size_t)(g->ash_block * sc.nkb) * 4;
        if (!(sc.a = rt_alloc(ab)))
            return -1;
        rt_parallel_for(sc.nkb * sc.parts, 1, shared_pack, &sc);
        g->ash = sc.a;
    }
    atomic_init(&g->next, 0);
    if (!atomic_load(&sc.failed))
        rt_parallel_for(th, 1, shared_tasks, &sc);
    if (!g->a_packed) {
        rt_free(sc.a, ab);
        g->ash = NULL;
    }
    return atomic_load(&sc.failed) ? -1 : 0;
}

/* Rows per block in the half-panel order: MC_HALF (A's block 270 KB); with B
 * packed in the call and k under one k-block, as many as keep that size, so
 * a task packs B once (P7's dW, 512x784x128: one block; tjg_raw_row_blocks). */
static int64_t half_rows(const gemm_call *g)
{
    int64_t kgt = g->b->kp / group_of(g->b->type);
    return !g->braw || kgt == 0 || kgt >= g->kc ? MC_HALF : g->kc * MC_HALF / kgt / TJG_MR * TJG_MR;
}

static atomic_ullong raw_blocks;
unsigned long long tjg_raw_row_blocks(void) { return atomic_load(&raw_blocks); }

static atomic_ullong padded_calls;

unsigned long long tjg_padded_calls(void) { return atomic_load(&padded_calls); }

/* The call's kernel and blocking for this CPU (run's first step). */
static void configure(gemm_call *g)
{
    g->amx = g->braw ? NULL : tjg_amx_ops_for(g->b->type, g->m);
    if (g->amx) {   /* sums in scratch, the epilogue from there */
        g->in_place = false;
        tjg_amx_count();
    }
    g->kern = g->amx      ? (tjg_kernel){NULL, NULL, NULL}
              : g->a_7bit ? tjg_kernel_avx2_q8()
                          : tjg_kernel_x86(g->b->type, tjg_isa_current());
    g->avx2 = tjg_isa_current() >= TJG_AVX2;
    g->f16c = tjg_f16c();
    /* f32, and bf16 widened to f32 per panel: the AVX2 half-panel order */
    g->half = (g->b->type == TJG_F32 || g->kern.widen_b) && tjg_isa_current() == TJG_AVX2
                  ? tjg_f32_half_avx2() : NULL;
    /* int8 on 7-bit rows with AVX2: the same order (a 16 KB half panel in
     * L1 across the slivers, one row block of up to MC_HALF rows, A packed
     * once on several threads: shared_run), sums into the block's scratch */
    if (g->a_7bit && !g->amx && tjg_isa_current() == TJG_AVX2)
        g->half = tjg_q8_half_avx2();
    g->mc = MC, g->kc = g->kern.widen_b || g->b->type == TJG_F16 ? KCG_WIDE : KCG;
    if (g->half)   /* rows in as few even blocks as fit: B read once per block */
        g->mc = cdiv(cdiv(g->m, cdiv(g->m, half_rows(g))), TJG_MR) * TJG_MR;
    g->nbi = cdiv(g->m, g->mc);
}

static int run(gemm_call *g)
{
    if (g->m == 0 || g->n == 0)
        return 0;
    configure(g);
    if (g->a_packed)   /* the caller's layout's k-blocks */
        g->kc = g->kc_packed;
    if (g->a_packed && (g->amx || g->kern.split_a ||
                        g->ash_block != cdiv(g->m, TJG_MR) * TJG_MR * g->kc))
        return 1;   /* not tjg_alayout_f32's layout for this call */
    /* 1 nested in a pool task (a pair's GEMM, a block's), or for a small
     * GEMM (tjg_small: waking the pool costs more than it saves) */
    int th = tjg_small(g->m, g->n, g->b->k) ? 1 : rt_threads_here();
    /* AVX2 f32 on packed B with C's rows a multiple of 1024 floats apart
     * (4 KB: every row of a 6 x 16 sub-tile in one L1 set, where A's and
     * B's lines stream through too): the sums go to the task's scratch,
     * rows padded (ldt), and the epilogue writes them to C. The same
     * operations in the same order as in place (no accumulate: C's old
     * value is not read), so the same bits. 256x2048x1024 and 256x1024x2048
     * on one Zen 3 core: 86.0-86.2 -> 87.5-88.0 and 84.2-87.8 -> 89.4-90.1
     * GFLOP/s; on two (the shared run, CPU time) medians 88.6 -> 89.7 and
     * 88.1 -> 89.4 (docs/perf.md). */
    if (g->in_place && g->half && !g->braw && !g->e.accumulate && g->b->type == TJG_F32 &&
        g->ldc % 1024 == 0) {
        g->in_place = false;
        atomic_fetch_add(&padded_calls, 1);
    }
    int r = shared_run(g, th);
    if (r <= 0)
        return r;
    /* Tasks in a multiple of the threads (the pool gives each thread as
     * many), from column blocks of up to NC_MAX cut evenly in whole panels:
     * with few rows each thread packs A once and reads (or packs) only its
     * own part of B. Where the panels are too few, the rows are cut
     * instead. (Before: column blocks halved until 2 tasks per thread,
     * so A was packed twice per thread and 25 panels went 16 + 9.) */
    int64_t panels = cdiv(g->n, TJG_NR), nbj = cdiv(panels, NC_MAX / TJG_NR);
    /* Row blocks of MC rows with a short last one (128 rows went 96 + 32)
     * and fewer tasks than threads' pairs: the threads' shares were as
     * uneven as the blocks (P7's forward, 128x512x784 with B packed in the
     * call, on two Zen 5 threads: the caller's task 440-560 us, the
     * other's 240-300, each packing all of B). Up to two blocks' rows go
     * in one block, the columns cut per thread; more rows, even blocks.
     * Not AVX2's half-panel order (its own row rule) nor AMX. */
    if (th > 1 && !g->half && !g->amx && g->nbi > 1) {
        if (g->nbi * nbj < 2 * th && g->m <= 2 * MC && panels >= th)
            g->nbi = 1;
        g->mc = cdiv(cdiv(g->m, g->nbi), TJG_MR) * TJG_MR;
        g->nbi = cdiv(g->m, g->mc);
    }
    while (nbj < panels && g->nbi * nbj % th)
        nbj++;
    if (g->nbi * nbj % th && g->m >= cdiv(g->nbi, th) * th * TJG_MR) {
        int64_t nbi = cdiv(g->nbi, th) * th, rq = g->amx ? TJG_AMX_ROWS : TJG_MR;
        g->mc = cdiv(cdiv(g->m, nbi), rq) * rq;
        g->nbi = cdiv(g->m, g->mc);
    }
    int64_t per = cdiv(panels, nbj);
    g->nc = per * TJG_NR;
    g->nbj = cdiv(panels, per);
    if (g->braw)
        atomic_fetch_add(&raw_blocks, (unsigned long long)g->nbi);
    tasks_ctx tc = {.g = g};
    atomic_init(&tc.failed, 0);
    if (th == 1)
        tasks_range(&tc, 0, g->nbi * g->nbj);
    else
        rt_parallel_for(g->nbi * g->nbj, 1, tasks_range, &tc);
    return atomic_load(&tc.failed) ? -1 : 0;
}

int tjg_gemm(int64_t m, const void *a, bool a_half, int64_t rs, int64_t cs, const tjg_packed *b,
             void *c, int64_t ldc, const tjg_epilogue *e, const tjg_prologue *pro)
{
    gemm_call g = {.m = m, .n = b->n, .lda_rs = rs, .lda_cs = cs, .a = a,
                   .a_bf16 = a_half && b->type == TJG_BF16,
                   .a_f16 = a_half && b->type == TJG_F16, .b = b, .c = c, .ldc = ldc};
    if (e)
        g.e = *e;
    if (pro && (pro->scale || pro->shift || pro->act != TJG_ACT_NONE)) {
        g.pro = *pro;
        g.has_pro = true;
    }
    g.in_place = !g.e.out_bf16 && !g.e.out_f16 && b->type != TJG_S8 &&
                 (!g.e.accumulate || g.e.alpha == 0 || g.e.alpha == 1);
    return run(&g);
}

/* ---- A packed by the caller ------------------------------------------------------------------ */

/* A call on an f32 B of k rows, configured: the packing's parameters. */
static void a_call(gemm_call *g, tjg_packed *b, int64_t m, int64_t k)
{
    *b = (tjg_packed){.type = TJG_F32, .k = k, .n = TJG_NR, .kp = k};
    *g = (gemm_call){.m = m, .n = TJG_NR, .b = b, .in_place = true};
    configure(g);
}

int tjg_alayout_f32(int64_t m, int64_t k, int64_t kc, tjg_alayout *l)
{
    gemm_call g;
    tjg_packed b;
    a_call(&g, &b, m, k);
    if (g.amx || g.kern.split_a || m <= 0 || k <= 0 || kc < 0)
        return 1;
    g.kc = kc > 0 ? kc : g.kc;
    *l = (tjg_alayout){.m = m, .k = k, .kc = g.kc, .nkb = cdiv(k, g.kc),
                       .block = cdiv(m, TJG_MR) * TJG_MR * g.kc, .avx2 = g.avx2};
    l->words = l->block * l->nkb;
    return 0;
}

void tjg_pack_a_f32(const tjg_alayout *l, const float *a, int64_t rs, int64_t cs, int64_t kb,
                    int64_t s0, int64_t s1, float *dst)
{
    /* what pack_a reads of the call: no configure per sliver */
    tjg_packed b = {.type = TJG_F32, .k = l->k, .n = TJG_NR, .kp = l->k};
    gemm_call g = {.m = l->m, .b = &b, .a = a, .lda_rs = rs, .lda_cs = cs, .avx2 = l->avx2};
    int64_t kg0 = kb * l->kc, nkg = l->k - kg0 < l->kc ? l->k - kg0 : l->kc;
    int64_t i0 = s0 * TJG_MR, rows = (l->m < s1 * TJG_MR ? l->m : s1 * TJG_MR) - i0;
    if (rows > 0 && nkg > 0)
        pack_a(&g, (uint32_t *)(dst + kb * l->block + s0 * nkg * TJG_MR), i0, rows, kg0, nkg);
}

int tjg_gemm_packed_a(const tjg_alayout *l, const float *ap, const tjg_packed *b, float *c,
                      int64_t ldc, const tjg_epilogue *e)
{
    gemm_call g = {.m = l->m, .n = b->n, .b = b, .c = c, .ldc = ldc, .ash = (const uint32_t *)ap,
                   .ash_block = l->block, .a_packed = true, .kc_packed = l->kc};
    if (e)
        g.e = *e;
    if (b->type != TJG_F32 || b->k != l->k || g.e.out_bf16 || g.e.out_f16)
        return 1;
    g.in_place = !g.e.accumulate || g.e.alpha == 0 || g.e.alpha == 1;
    return run(&g);
}

int tjg_gemm_f32_raw(int64_t m, const float *a, int64_t rs, int64_t cs, const float *b,
                     int64_t brs, int64_t bcs, int64_t k, int64_t n, float *c, int64_t ldc,
                     const tjg_epilogue *e, const tjg_prologue *pro)
{
    /* B's header without data: each task packs its panels (pack_b_block) */
    tjg_packed hb = {.type = TJG_F32, .k = k, .n = n, .kp = k};
    gemm_call g = {.m = m, .n = n, .lda_rs = rs, .lda_cs = cs, .a = a, .b = &hb, .c = c,
                   .ldc = ldc, .braw = b, .brs = brs, .bcs = bcs};
    if (e)
        g.e = *e;
    g.e.out_bf16 = false;
    if (pro && (pro->scale || pro->shift || pro->act != TJG_ACT_NONE)) {
        g.pro = *pro;
        g.has_pro = true;
    }
    g.in_place = !g.e.accumulate || g.e.alpha == 0 || g.e.alpha == 1;
    return run(&g);
}

int tjg_gemm_u8s8(int64_t m, const uint8_t *a, int64_t lda, const int32_t *a_zp,
                  const float *a_scale, const tjg_packed *b, float *c, int64_t ldc,
                  const tjg_epilogue *e)
{
    gemm_call g = {.m = m, .n = b->n, .lda_rs = lda, .lda_cs = 1, .a = a, .a_zp = a_zp,
                   .a_scale = a_scale, .b = b, .c = c, .ldc = ldc};
    if (e)
        g.e = *e;
    g.e.out_bf16 = g.e.out_f16 = false;
    /* 7-bit A (reduced-range rows) on the vpmaddubsw kernel; a full-range
     * A (a byte above 127, where a pair could saturate) on the exact one */
    g.a_7bit = m > 0 && tjg_u8s8_reduce_range(tjg_isa_current()) &&
               tjg_u8_is_7bit(m, b->k, a, lda);
    return run(&g);
}

/* ---- dynamic quantization -------------------------------------------------------------------- */

/* One row: a NaN is left out of the range and quantized to the zero point
 * (it dequantizes to 0); an infinite value gives scale inf, so the row
 * quantizes to its zero point. */
TJG_CLONES static void quantize_row(int64_t k, const float *restrict r, uint8_t *restrict q,
                                    float *scale, int32_t *zp, int qmax)
{
    float lo = 0, hi = 0;   /* the range includes 0, so 0 is exact */
    int64_t j0 = tjg_minmax_avx2(k, r, &lo, &hi);   /* 0 without AVX2 */
    for (int64_t j = j0; j < k; j++) {
        lo = r[j] < lo ? r[j] : lo;
        hi = r[j] > hi ? r[j] : hi;
    }
    float qm = (float)qmax;
    float s = (hi - lo) / qm;
    if (!(s > 0))
        s = 1.0f;
    float zf = nearbyintf(-lo / s);
    int32_t z = zf >= 0 ? (zf <= qm ? (int32_t)zf : qmax) : 0;
    *scale = s;
    *zp = z;
    float inv = 1.0f / s;
    for (int64_t j = tjg_quantize_avx2(k, r, q, inv, z, qmax); j < k; j++) {
        float t = nearbyintf(r[j] * inv);
        float v = (t == t ? t : 0.0f) + (float)z;   /* NaN: the zero point */
        q[j] = (uint8_t)(v >= 0 ? (v <= qm ? v : qm) : 0);
    }
}

typedef struct quant_job {
    int64_t k, ldx;
    const float *x;
    uint8_t *q;
    float *scale;
    int32_t *zp;
    int qmax;
} quant_job;

static void quantize_range(void *ctx, int64_t i0, int64_t i1)
{
    const quant_job *j = ctx;
    for (int64_t i = i0; i < i1; i++)
        quantize_row(j->k, j->x + i * j->ldx, j->q + i * j->k, j->scale + i, j->zp + i, j->qmax);
}

void tjg_quantize_rows_u8(int64_t m, int64_t k, const float *x, int64_t ldx, uint8_t *q,
                          float *scale, int32_t *zp, int qmax)
{
    quant_job j = {k, ldx, x, q, scale, zp, qmax};
    rt_parallel_for(m, cdiv(1 << 16, k > 0 ? k : 1), quantize_range, &j);
}
