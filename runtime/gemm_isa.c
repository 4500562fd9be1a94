/* gemm_isa.c - which GEMM micro-kernels this CPU may run (runtime/gemm.h):
 * cpuid for the instructions, xgetbv for the register state the OS saves
 * (and, for AMX, the tile data permission: gemm_amx.c), TJIT_ISA to cap
 * the choice, and a test hook to force a variant.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

unsigned tjg_cpu_features(void)
{
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))   /* OSXSAVE */
        return 0;
    bool avx_fma = (c & (1u << 28)) && (c & (1u << 12));
    bool f16c = c & (1u << 29);   /* a bit of its own: never implied by AVX2 */
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6 || __get_cpuid_max(0, NULL) < 7)   /* SSE, AVX (ymm) state */
        return 0;
    if (f16c && (c & (1u << 28)))
        f |= TJG_F_F16C;
    __cpuid_count(7, 0, a, b, c, d);
    if (avx_fma && (b & (1u << 5)))
        f |= TJG_F_AVX2;
    bool avx512 = (b & (1u << 16)) && (b & (1u << 30)) && (b & (1u << 31)); /* f, bw, vl */
    if (!avx512 || (xcr0 & 0xe6) != 0xe6)   /* + opmask, ZMM_Hi256, Hi16_ZMM state */
        return f;
    f |= TJG_F_AVX512;
    if (c & (1u << 11))
        f |= TJG_F_VNNI;
    /* AMX: tile, bf16, int8, the OS's XTILECFG/XTILEDATA state (xcr0 17,
     * 18), and the process's permission to use the tile data (Linux) */
    if ((d & (1u << 24)) && (d & (1u << 22)) && (d & (1u << 25)) &&
        (xcr0 & (3ull << 17)) == (3ull << 17) && tjg_amx_permitted())
        f |= TJG_F_AMX;
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    if (a1 & (1u << 5))
        f |= TJG_F_BF16;
    return f;
}
#else
unsigned tjg_cpu_features(void) { return 0; }
#endif

static const char *const isa_names[TJG_NISA] = {"generic", "avx2", "avx512", "avx512_bf16",
                                                "amx"};

const char *tjg_isa_name(tjg_isa isa)
{
    return (unsigned)isa < TJG_NISA ? isa_names[isa] : "?";
}

/* The best variant the features allow: each one needs those of the
 * variants below it too. */
static tjg_isa isa_max(unsigned f)
{
    if (!(f & TJG_F_AVX2))
        return TJG_GENERIC;
    if (!(f & TJG_F_AVX512))
        return TJG_AVX2;
    if (!(f & TJG_F_BF16) || !(f & TJG_F_VNNI))
        return TJG_AVX512;
    return f & TJG_F_AMX ? TJG_AMX : TJG_AVX512_BF16;
}

#if defined(__x86_64__) && defined(__GNUC__)
static bool vendor_amd(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return false;
    return b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;   /* "AuthenticAMD" */
}
#else
static bool vendor_amd(void) { return false; }
#endif

bool tjg_bf16_dot_select(bool amd, int sw) { return sw >= 0 ? sw : amd; }

static atomic_int amd_state;   /* 0: not asked yet, 1: no, 2: yes */

bool tjg_bf16_dot(void)
{
    int s = atomic_load_explicit(&amd_state, memory_order_relaxed);
    if (!s) {
        s = vendor_amd() ? 2 : 1;
        atomic_store(&amd_state, s);
    }
    return tjg_bf16_dot_select(s == 2, rt_env_switch("TJIT_BF16_DOT"));   /* per call: tests flip it */
}

tjg_isa tjg_isa_select(unsigned features, const char *env)
{
    tjg_isa best = isa_max(features);
    if (!env || !*env)
        return best;
    for (int i = 0; i < TJG_NISA; i++)
        if (!strcmp(env, isa_names[i]))
            return (tjg_isa)i < best ? (tjg_isa)i : best;
    return best;   /* an unknown name changes nothing */
}

static atomic_int isa_env = -1;     /* from the environment, computed once */
static atomic_int isa_forced = -1;  /* tjg_isa_force */

tjg_isa tjg_isa_current(void)
{
    int v = atomic_load_explicit(&isa_env, memory_order_relaxed);
    if (v < 0) {
        v = (int)tjg_isa_select(tjg_cpu_features(), getenv("TJIT_ISA"));
        atomic_store(&isa_env, v);
    }
    int f = atomic_load_explicit(&isa_forced, memory_order_relaxed);
    return (tjg_isa)(f >= 0 && f < v ? f : v);
}

bool tjg_f16c_usable(tjg_isa isa, unsigned features)
{
    return isa >= TJG_AVX2 && (features & TJG_F_F16C) && (features & TJG_F_AVX2);
}

static atomic_uint cpu_features = ~0u;   /* tjg_cpu_features, computed once */

bool tjg_f16c(void)
{
    unsigned f = atomic_load_explicit(&cpu_features, memory_order_relaxed);
    if (f == ~0u) {
        f = tjg_cpu_features();
        atomic_store(&cpu_features, f);
    }
    return tjg_f16c_usable(tjg_isa_current(), f);
}

void tjg_isa_force(int isa)
{
    atomic_store(&isa_forced, isa);
    if (isa < 0)   /* TJIT_ISA is read again (tests set it) */
        atomic_store(&isa_env, -1);
}
