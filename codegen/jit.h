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
 * kernel has its own resource tracker and a count of the plans holding it
 * (every successful cg_jit_get is one, given back with cg_jit_release). When
 * more than CG_JIT_MAX_LOADED kernels are loaded (TJIT_JIT_MAX_KERNELS
 * overrides it), the least recently used ones no plan holds are unloaded
 * (their code freed); asked for again, they come back from the kernel cache.
 */
#ifndef TJ_CG_JIT_H
#define TJ_CG_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "kernel.h"

#define CG_JIT_MAX_LOADED 1024

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
 * its own LLVM context and target machine; adding to the JIT is serialized):
 * the threads take kernels from one queue, the longest (by a guess from the
 * kernel's structure) first; a kernel with the text of an earlier one is got
 * after the queue (found loaded: compiled once). Returns the number that
 * failed. */
int cg_jit_get_all(const cg_kernel *const *ks, int n, cg_cache *cache, unsigned flags,
                   cg_compiled *outs);

void cg_compiled_clear(cg_compiled *c);

/* For ahead-of-time export: the object code of kernel k (what cg_jit_get
 * loads: from the global kernel cache, else compiled and stored there) and
 * its symbol name (tjk_<key>). 0 with *obj malloc'd; -1 with the reason in err. */
int cg_jit_object(const cg_kernel *k, char name[72], void **obj, size_t *len, char *err, size_t nerr);

/* Gives back one reference to fn (from cg_jit_get); a kernel nobody holds
 * may be unloaded. NULL is fine. */
void cg_jit_release(cg_kernel_fn fn);
/* Sets the number of loaded kernels beyond which unreferenced ones are
 * unloaded (n <= 0: the default), unloading at once (tests). */
void cg_jit_set_max_loaded(int n);

/* Whether kernels can be compiled in this process (LLVM target, formula
 * bitcode, an LLJIT); when not, why in err. */
bool cg_jit_available(char *err, size_t nerr);

/* Counters for tests and tools. */
typedef struct cg_jit_stats {
    uint64_t compiled, from_cache, reused;
    uint64_t evicted;        /* kernels unloaded */
    uint64_t loaded;         /* kernels loaded now */
    double ms_compile;       /* total time spent compiling */
} cg_jit_stats;
void cg_jit_stats_get(cg_jit_stats *s);

#endif
