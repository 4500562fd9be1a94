/* emit.h - internal to codegen: cg_kernel -> LLVM IR -> object code (emit.c),
 * and the formula bitcode embedded at build time (bitcode.c). */
#ifndef TJ_CG_EMIT_H
#define TJ_CG_EMIT_H

#include <stddef.h>

#include <llvm-c/TargetMachine.h>

#include "kernel.h"

/* The bitcode of codegen/formulas/pw.c in parts, one per compute dtype
 * (bitcode.c): cg_formulas_nparts() of them, 0 when the build had no clang-19
 * (then nothing can be compiled and kernels fall back to eager); part i holds
 * the formulas tj_pw_<op>_<suffix>. cg_formulas_find: the part of a suffix
 * ("F32", ...), or -1. */
enum { CG_PW_MAX_PARTS = 16 };
int cg_formulas_nparts(void);
const void *cg_formulas_part(int i, const char **suffix, size_t *len);
int cg_formulas_find(const char *suffix);

/* With TJIT_PERF_MAP=1: names the functions of a kernel object the JIT
 * loaded (`name` at runtime address addr) in /tmp/perf-<pid>.map (perfmap.c). */
void cg_perfmap_add(const char *name, uintptr_t addr, const void *obj, size_t len);

/* What cg_emit produces: the object file, and on request the optimized IR
 * and the assembly (for the `llvm` and `asm` dumps). All malloc'd. */
typedef struct cg_object {
    void *obj;
    size_t len;
    char *llvm;
    char *asm_text;
    double ms_build, ms_opt, ms_codegen;   /* time of each step */
} cg_object;

/* Emits kernel k as the function `fname` (the ABI in kernel.h), links the
 * formulas it calls, optimizes (default<O2>, host CPU, 512-bit vectors) and
 * emits an object file. Thread-safe: each call has its own LLVM context;
 * each thread its own target machine. 0, or -1 with the reason in err. */
int cg_emit(const cg_kernel *k, const char *fname, unsigned flags, cg_object *out, char *err,
            size_t nerr);
void cg_object_free(cg_object *o);

/* Initializes LLVM's native target once (thread-safe); 0 or -1 with a reason. */
int cg_llvm_init(char *err, size_t nerr);
/* A new target machine for the host CPU and its features (owned by the
 * caller), or NULL with a reason. */
LLVMTargetMachineRef cg_tm_create(char *err, size_t nerr);

#endif
