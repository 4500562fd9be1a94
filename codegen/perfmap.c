/* perfmap.c - names for JIT'd kernels in `perf report`.
 *
 * perf resolves samples in code it cannot find in a file through
 * /tmp/perf-<pid>.map, one "START SIZE name" line (hex) per function. With
 * TJIT_PERF_MAP=1 in the environment, every kernel object added to the LLJIT
 * writes a line for each function it defines (the ABI wrapper tjk_<key>
 * and its body tjk_<key>.body), so
 *
 *   TJIT_PERF_MAP=1 perf record -e cpu-clock ./build/tjit bench P1
 *   perf report --sort sym
 *
 * shows the kernels by name next to the eager kernels. A value with a '/'
 * is a path to write instead (tests read it back). The object's symbol
 * table gives each function's offset and size; the runtime address of the
 * one symbol the JIT looked up anchors them (an object has one .text
 * section, which the JIT loads as a whole). Called under jit.c's mutex.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/Object.h>

#include "emit.h"

static FILE *map_file(void)
{
    static FILE *f;
    static int tried;
    if (!tried) {
        tried = 1;
        const char *on = getenv("TJIT_PERF_MAP");
        if (on && *on && strcmp(on, "0") != 0) {
            char path[512];
            if (strchr(on, '/'))
                snprintf(path, sizeof path, "%s", on);
            else
                snprintf(path, sizeof path, "/tmp/perf-%ld.map", (long)getpid());
            f = fopen(path, "a");
            if (!f)
                fprintf(stderr, "tjit: TJIT_PERF_MAP: cannot open %s; kernels stay unnamed\n", path);
        }
    }
    return f;
}

void cg_perfmap_add(const char *name, uintptr_t addr, const void *obj, size_t len)
{
    FILE *f = map_file();
    if (!f)
        return;
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(obj, len, "kernel", 0);
    char *err = NULL;
    LLVMBinaryRef bin = LLVMCreateBinary(mb, NULL, &err);
    if (!bin) {
        LLVMDisposeMessage(err);
        LLVMDisposeMemoryBuffer(mb);
        return;
    }
    uint64_t anchor = UINT64_MAX;
    LLVMSymbolIteratorRef it = LLVMObjectFileCopySymbolIterator(bin);
    for (; !LLVMObjectFileIsSymbolIteratorAtEnd(bin, it); LLVMMoveToNextSymbol(it))
        if (!strcmp(LLVMGetSymbolName(it), name))
            anchor = LLVMGetSymbolAddress(it);
    LLVMDisposeSymbolIterator(it);
    size_t nlen = strlen(name);
    it = LLVMObjectFileCopySymbolIterator(bin);
    for (; anchor != UINT64_MAX && !LLVMObjectFileIsSymbolIteratorAtEnd(bin, it); LLVMMoveToNextSymbol(it)) {
        const char *s = LLVMGetSymbolName(it);
        uint64_t size = LLVMGetSymbolSize(it);
        if (size && !strncmp(s, name, nlen))   /* tjk_<key> and tjk_<key>.body */
            fprintf(f, "%" PRIxPTR " %" PRIx64 " %s\n",
                    addr - (uintptr_t)anchor + (uintptr_t)LLVMGetSymbolAddress(it), size, s);
    }
    LLVMDisposeSymbolIterator(it);
    fflush(f);
    LLVMDisposeBinary(bin);
    LLVMDisposeMemoryBuffer(mb);
}
