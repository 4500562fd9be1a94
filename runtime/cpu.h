/* cpu.h - whether this CPU has the features code was compiled for (cpu.c):
 * exported models (sched/aot_load.c) name LLVM's host feature string of the
 * machine that compiled their kernels and refuse to run where one is missing. */
#ifndef TJ_RT_CPU_H
#define TJ_RT_CPU_H

#include <stddef.h>

/* feats: LLVM's feature string ("+avx2,+avx512f,-amx-tile,..."). Counts the
 * "+" features this CPU lacks (cpuid, and the OS's saved register state),
 * naming them in missing[0..n) ("avx512f, avx512bw"). Features cpu.c has no
 * cpuid bit for are not checked. TJIT_ISA (runtime/gemm_isa.c's cap: generic,
 * avx2, avx512, avx512_bf16) masks the features above the cap, as if absent
 * (generic: avx2 and fma, and AVX-512's). */
int rt_cpu_missing(const char *feats, char *missing, size_t n);

#endif
