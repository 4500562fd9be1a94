/* cpu.c - LLVM feature names checked against cpuid (cpu.h). The table holds
 * the instruction-set features a vector kernel may use; each row is the
 * cpuid leaf, subleaf, register and bit, and the register state (xcr0 bits)
 * the OS must save for it. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "gemm.h"

enum { EAX, EBX, ECX, EDX };
#define XMM 0x2u
#define YMM 0x6u
#define ZMM 0xe6u
#define TMM (3u << 17)
#define V2 TJG_AVX2
#define V5 TJG_AVX512
#define VB TJG_AVX512_BF16
#define VA TJG_AMX

static const struct feat {
    const char *name;
    unsigned leaf, sub;
    int reg, bit;
    uint64_t xcr0;     /* state bits that must be enabled */
    int isa;           /* the TJIT_ISA level (tjg_isa) it needs, to mask it */
} feats[] = {
    {"sse3", 1, 0, ECX, 0, XMM, 0},        {"pclmul", 1, 0, ECX, 1, XMM, 0},
    {"ssse3", 1, 0, ECX, 9, XMM, 0},       {"fma", 1, 0, ECX, 12, YMM, V2},
    {"cx16", 1, 0, ECX, 13, 0, 0},         {"sse4.1", 1, 0, ECX, 19, XMM, 0},
    {"sse4.2", 1, 0, ECX, 20, XMM, 0},     {"movbe", 1, 0, ECX, 22, 0, 0},
    {"popcnt", 1, 0, ECX, 23, 0, 0},       {"aes", 1, 0, ECX, 25, XMM, 0},
    {"avx", 1, 0, ECX, 28, YMM, 0},        {"f16c", 1, 0, ECX, 29, YMM, 0},
    {"sse", 1, 0, EDX, 25, XMM, 0},        {"sse2", 1, 0, EDX, 26, XMM, 0},
    {"bmi", 7, 0, EBX, 3, 0, 0},           {"avx2", 7, 0, EBX, 5, YMM, V2},
    {"bmi2", 7, 0, EBX, 8, 0, 0},          {"avx512f", 7, 0, EBX, 16, ZMM, V5},
    {"avx512dq", 7, 0, EBX, 17, ZMM, V5},  {"avx512ifma", 7, 0, EBX, 21, ZMM, V5},
    {"avx512cd", 7, 0, EBX, 28, ZMM, V5},  {"avx512bw", 7, 0, EBX, 30, ZMM, V5},
    {"avx512vl", 7, 0, EBX, 31, ZMM, V5},  {"avx512vbmi", 7, 0, ECX, 1, ZMM, V5},
    {"avx512vbmi2", 7, 0, ECX, 6, ZMM, V5}, {"gfni", 7, 0, ECX, 8, XMM, 0},
    {"vaes", 7, 0, ECX, 9, YMM, 0},        {"vpclmulqdq", 7, 0, ECX, 10, YMM, 0},
    {"avx512vnni", 7, 0, ECX, 11, ZMM, VB}, {"avx512bitalg", 7, 0, ECX, 12, ZMM, V5},
    {"avx512vpopcntdq", 7, 0, ECX, 14, ZMM, V5},
    {"avx512fp16", 7, 0, EDX, 23, ZMM, VB}, {"amx-bf16", 7, 0, EDX, 22, TMM, VA},
    {"amx-tile", 7, 0, EDX, 24, TMM, VA},  {"amx-int8", 7, 0, EDX, 25, TMM, VA},
    {"avxvnni", 7, 1, EAX, 4, YMM, 0},     {"avx512bf16", 7, 1, EAX, 5, ZMM, VB},
    {"lzcnt", 0x80000001u, 0, ECX, 5, 0, 0}, {"sse4a", 0x80000001u, 0, ECX, 6, XMM, 0},
    {"fma4", 0x80000001u, 0, ECX, 16, YMM, 0},
};

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

static bool has(const struct feat *f)
{
    unsigned r[4] = {0};
    if (__get_cpuid_max(f->leaf & 0x80000000u, NULL) < f->leaf)
        return false;
    __cpuid_count(f->leaf, f->sub, r[0], r[1], r[2], r[3]);
    if (!(r[f->reg] & (1u << f->bit)))
        return false;
    if (!f->xcr0)
        return true;
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))   /* OSXSAVE */
        return false;
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    uint64_t xcr0 = ((uint64_t)hi << 32) | lo;
    return (xcr0 & f->xcr0) == f->xcr0;
}
#else
static bool has(const struct feat *f) { (void)f; return false; }
#endif

int rt_cpu_missing(const char *fs, char *missing, size_t n)
{
    int cap = (int)tjg_isa_select(~0u, getenv("TJIT_ISA"));
    int count = 0;
    size_t o = 0;
    if (n)
        missing[0] = '\0';
    for (const char *p = fs; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 1 && p[0] == '+')
            for (size_t i = 0; i < sizeof feats / sizeof feats[0]; i++)
                if (strlen(feats[i].name) == len - 1 && !memcmp(feats[i].name, p + 1, len - 1) &&
                    (feats[i].isa > cap || !has(&feats[i]))) {
                    count++;
                    if (o < n)
                        o += (size_t)snprintf(missing + o, n - o, "%s%s", o ? ", " : "", feats[i].name);
                }
        p = e ? e + 1 : NULL;
    }
    return count;
}
