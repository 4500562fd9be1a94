/* jit.h - compiled kernels: the process-wide LLJIT, the kernel cache in
 * front of the emitter, and parallel compilation of a graph's kernels.
 *
 *   cg_kernel --text--> key (cache.h: text + CPU + LLVM + codegen version)
 *     loaded in this process?  -> its address
 *     cg_cache_get hit?        -> add the object to the LLJIT -> address
 *     else cg_emit (emit.c)    -> cg_cache_put -> add -> address
 *
 * The kernel function's symbol is tjk_<key>, so two kernels with the same
 * text share one definition and different texts never collide. Each loaded
 * kernel has its own resource tracker (kept for eviction; kernels stay loaded
 * for the process today).
 */
#ifndef TJ_CG_JIT_H
#define TJ_CG_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "kernel.h"

/* The ABI of every kernel (kernel.h describes sz). */
typedef void (*cg_kernel_fn)(char **bufs, int64_t begin, int64_t end, const int64_t *sz);

typedef enum { CG_FROM_COMPILE, CG_FROM_CACHE, CG_FROM_LOADED } cg_origin;

typedef struct cg_compiled {
    cg_kernel_fn fn;         /* NULL when it failed (err says why) */
    char name[72];           /* tjk_<key> */
    cg_origin origin;
    double ms;               /* time to get fn (compile, or load) */
    double ms_opt, ms_codegen;
    char *text;              /* the kernel's text (malloc'd) */
    char *llvm, *asm_text;   /* on request (CG_EMIT_LLVM / CG_EMIT_ASM flags), malloc'd */
    char err[256];
} cg_compiled;

/* Gets kernel k's function: loaded already, from the cache (NULL: the global
 * one), or compiled (and stored in the cache). flags: CG_EMIT_LLVM and
 * CG_EMIT_ASM ask for those texts (that compiles even on a cache hit).
 * Thread-safe. 0, or -1 with the reason in out->err. */
int cg_jit_get(const cg_kernel *k, cg_cache *cache, unsigned flags, cg_compiled *out);

/* cg_jit_get for ks[0..n) in parallel on the runtime pool (each compile on
 * its own LLVM context and target machine; adding to the JIT is serialized).
 * Returns the number that failed. */
int cg_jit_get_all(const cg_kernel *const *ks, int n, cg_cache *cache, unsigned flags,
                   cg_compiled *outs);

void cg_compiled_clear(cg_compiled *c);

/* Whether kernels can be compiled in this process (LLVM target, formula
 * bitcode, an LLJIT); when not, why in err. */
bool cg_jit_available(char *err, size_t nerr);

/* Counters for tests and tools. */
typedef struct cg_jit_stats {
    uint64_t compiled, from_cache, reused;
    double ms_compile;       /* total time spent compiling */
} cg_jit_stats;
void cg_jit_stats_get(cg_jit_stats *s);

#endif
