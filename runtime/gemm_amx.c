/* gemm_amx.c - the AMX path of tjit's GEMM (runtime/gemm_amx.h): when it is
 * used (TJG_AMX, bf16 or int8, at least TJG_AMX_MIN_M rows), the permission
 * Linux wants before the first tile instruction (arch_prctl, once per
 * process), the tile operations emulated after the Intel SDM's pseudocode,
 * and the block loop (gemm_amx_loop.h) compiled twice: on the AMX
 * instructions and on the emulation.
 *
 * Nothing else changes for an AMX GEMM: gemm.c packs A's block row-major
 * (bf16 or u8, zero padded), calls the ops' block per k-block into its sums
 * scratch, and runs its one epilogue over the sums as for every kernel.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "gemm_amx.h"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

_Static_assert(sizeof(tjg_tilecfg) == 64, "ldtilecfg reads 64 bytes");

bool tjg_amx_wanted(tjg_isa isa, tjg_type t, int64_t m)
{
    return isa == TJG_AMX && (t == TJG_BF16 || t == TJG_S8) && m >= TJG_AMX_MIN_M;
}

/* ---- the tile data permission (Linux 5.16+) --------------------------------------------- */

static pthread_once_t permit_once = PTHREAD_ONCE_INIT;
static atomic_bool permit_ok;

static void permit_request(void)
{
#if defined(__linux__) && defined(__x86_64__)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    atomic_store(&permit_ok, syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0);
#endif
}

bool tjg_amx_permitted(void)
{
    pthread_once(&permit_once, permit_request);
    return atomic_load(&permit_ok);
}

/* ---- test hook and counter ------------------------------------------------------------- */

static atomic_bool emulate;
static atomic_ullong amx_calls;

void tjg_amx_emulate(bool on) { atomic_store(&emulate, on); }
uint64_t tjg_amx_calls(void) { return atomic_load(&amx_calls); }
void tjg_amx_count(void) { atomic_fetch_add(&amx_calls, 1); }

/* ---- the emulation ------------------------------------------------------------------------ */

static bool tile_ok(tjg_tile_emu *s, int t)
{
    if (!s->configured || t < 0 || t > 7 || s->rows[t] == 0 || s->colsb[t] == 0)
        s->fault = true;
    return !s->fault;
}

void tjg_tile_config(tjg_tile_emu *s, const tjg_tilecfg *cfg)
{
    memset(s, 0, sizeof *s);
    if (cfg->palette == 0)
        return;
    if (cfg->palette != 1) {
        s->fault = true;
        return;
    }
    for (int t = 0; t < 8; t++) {
        if (cfg->rows[t] > 16 || cfg->colsb[t] > 64)
            s->fault = true;
        s->rows[t] = cfg->rows[t];
        s->colsb[t] = cfg->colsb[t];
    }
    s->configured = !s->fault;
}

void tjg_tile_load(tjg_tile_emu *s, int t, const void *base, int64_t stride)
{
    if (!tile_ok(s, t))
        return;
    memset(s->t[t], 0, sizeof s->t[t]);
    for (int r = 0; r < s->rows[t]; r++)
        memcpy(s->t[t][r], (const char *)base + r * stride, s->colsb[t]);
}

void tjg_tile_store(tjg_tile_emu *s, int t, void *base, int64_t stride)
{
    if (!tile_ok(s, t))
        return;
    for (int r = 0; r < s->rows[t]; r++)
        memcpy((char *)base + r * stride, s->t[t][r], s->colsb[t]);
}

void tjg_tile_zero(tjg_tile_emu *s, int t)
{
    if (tile_ok(s, t))
        memset(s->t[t], 0, sizeof s->t[t]);
}

void tjg_tile_release(tjg_tile_emu *s)
{
    bool fault = s->fault;   /* kept for the caller to see */
    memset(s, 0, sizeof *s);
    s->fault = fault;
}

/* The SDM's #UD conditions of tdpbf16ps and tdpbusd: three distinct tiles,
 * K = a.colsb / 4 = b.rows, M = d.rows = a.rows, N: d.colsb = b.colsb. */
static bool dp_ok(tjg_tile_emu *s, int d, int a, int b)
{
    if (!tile_ok(s, d) || !tile_ok(s, a) || !tile_ok(s, b))
        return false;
    if (d == a || d == b || a == b || s->colsb[a] % 4 || s->colsb[d] % 4 ||
        s->colsb[a] / 4 != s->rows[b] || s->rows[d] != s->rows[a] || s->colsb[d] != s->colsb[b])
        s->fault = true;
    return !s->fault;
}

/* The pseudocode's tail of both: the written row's bytes past colsb and the
 * rows past the configured ones are zero. */
static void dp_zero_rest(tjg_tile_emu *s, int d)
{
    for (int m = 0; m < 16; m++)
        memset(s->t[d][m] + (m < s->rows[d] ? s->colsb[d] : 0), 0,
               (size_t)(64 - (m < s->rows[d] ? s->colsb[d] : 0)));
}

static float bf16_at(const uint8_t *p)
{
    uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* DAZ on the FMA's inputs, FTZ on its result (the sign kept). */
static float daz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }

void tjg_tile_dpbf16ps(tjg_tile_emu *s, int d, int a, int b)
{
    if (!dp_ok(s, d, a, b))
        return;
    for (int m = 0; m < s->rows[d]; m++) {
        float tmp[16];
        memcpy(tmp, s->t[d][m], sizeof tmp);
        for (int k = 0; k < s->colsb[a] / 4; k++)
            for (int n = 0; n < s->colsb[d] / 4; n++)
                for (int e = 0; e < 2; e++) {
                    float x = daz(bf16_at(&s->t[a][m][4 * k + 2 * e]));
                    float y = daz(bf16_at(&s->t[b][k][4 * n + 2 * e]));
                    tmp[n] = daz(fmaf(x, y, daz(tmp[n])));
                }
        memcpy(s->t[d][m], tmp, s->colsb[d]);
    }
    dp_zero_rest(s, d);
}

void tjg_tile_dpbusd(tjg_tile_emu *s, int d, int a, int b)
{
    if (!dp_ok(s, d, a, b))
        return;
    for (int m = 0; m < s->rows[d]; m++) {
        uint32_t tmp[16];
        memcpy(tmp, s->t[d][m], sizeof tmp);
        for (int k = 0; k < s->colsb[a] / 4; k++)
            for (int n = 0; n < s->colsb[d] / 4; n++)
                for (int e = 0; e < 4; e++)
                    tmp[n] += (uint32_t)((int32_t)s->t[a][m][4 * k + e] *
                                         (int8_t)s->t[b][k][4 * n + e]);
        memcpy(s->t[d][m], tmp, s->colsb[d]);
    }
    dp_zero_rest(s, d);
}

/* ---- the block loop on the emulation ------------------------------------------------------- */

#define AMX_FN(x) x##_emu
#define AMX_ATTR
#define AMX_STATE_BYTES sizeof(tjg_tile_emu)
#define T_CFG(st, cfg) tjg_tile_config(st, cfg)
#define T_RELEASE(st) tjg_tile_release(st)
#define T_FAULT(st) ((tjg_tile_emu *)(st))->fault
#define T_LOAD(st, t, p, stride) tjg_tile_load(st, t, p, stride)
#define T_STORE(st, t, p, stride) tjg_tile_store(st, t, p, stride)
#define T_ZERO(st, t) tjg_tile_zero(st, t)
#define T_BF16(st, d, a, b) tjg_tile_dpbf16ps(st, d, a, b)
#define T_BUSD(st, d, a, b) tjg_tile_dpbusd(st, d, a, b)
#include "gemm_amx_loop.h"
#undef AMX_FN
#undef AMX_ATTR
#undef AMX_STATE_BYTES
#undef T_CFG
#undef T_RELEASE
#undef T_FAULT
#undef T_LOAD
#undef T_STORE
#undef T_ZERO
#undef T_BF16
#undef T_BUSD

/* ---- the block loop on the AMX instructions ------------------------------------------------ */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* gcc's tile intrinsics are asm statements that name no memory they read:
 * the compiler barrier makes the tail copy and the caller's packing land
 * before a tileloadd reads them. */
#define AMX_FN(x) x##_hw
#define AMX_ATTR __attribute__((target("amx-tile,amx-bf16,amx-int8")))
#define AMX_STATE_BYTES 0
#define T_CFG(st, cfg) _tile_loadconfig(cfg)
#define T_RELEASE(st) _tile_release()
#define T_FAULT(st) 0
#define T_LOAD(st, t, p, stride)                                                          \
    do {                                                                                  \
        __asm__ volatile("" ::: "memory");                                                \
        _tile_loadd(t, p, stride);                                                        \
    } while (0)
#define T_STORE(st, t, p, stride) _tile_stored(t, p, stride)
#define T_ZERO(st, t) _tile_zero(t)
#define T_BF16(st, d, a, b) _tile_dpbf16ps(d, a, b)
#define T_BUSD(st, d, a, b) _tile_dpbusd(d, a, b)
#include "gemm_amx_loop.h"
#define OPS_HW (&ops_hw)
#else
#define OPS_HW NULL
#endif

const tjg_amx_ops *tjg_amx_ops_for(tjg_type t, int64_t m)
{
    if (atomic_load_explicit(&emulate, memory_order_relaxed))
        return tjg_amx_wanted(TJG_AMX, t, m) ? &ops_emu : NULL;
    /* TJG_AMX only where cpuid, the OS's state and tjg_amx_permitted agree */
    return tjg_amx_wanted(tjg_isa_current(), t, m) ? OPS_HW : NULL;
}
