/* bitcode.c - embeds the formula bitcode in the library, in parts.
 *
 * The Makefile compiles codegen/formulas/pw.c with clang-19 into
 * $(BUILD)/codegen/pw.bc and cuts it with llvm-extract into one part per
 * compute dtype, pw_<PART>.bc with the functions tj_pw_<op>_<PART> (and the
 * helpers they call); it passes their directory as CG_BITCODE_DIR and the
 * list as CG_PW_PARTS (X(F32) X(F64) ...). The assembler's .incbin copies
 * each file into .rodata here. Without clang-19 or llvm-extract the list is
 * not defined and there is no part (codegen then reports that it cannot
 * compile, and compiled graphs run on the eager executor).
 */
#include <string.h>

#include "emit.h"

#ifdef CG_PW_PARTS
#define X(S)                                                                     \
    __asm__(".section .rodata\n"                                                 \
            ".balign 16\n"                                                       \
            ".globl cg_pw_" #S "_start\n"                                        \
            ".hidden cg_pw_" #S "_start\n"                                       \
            "cg_pw_" #S "_start:\n"                                              \
            ".incbin \"" CG_BITCODE_DIR "/pw_" #S ".bc\"\n"                      \
            ".globl cg_pw_" #S "_end\n"                                          \
            ".hidden cg_pw_" #S "_end\n"                                         \
            "cg_pw_" #S "_end:\n"                                                \
            ".previous\n");                                                      \
    extern const char cg_pw_##S##_start[] __attribute__((visibility("hidden"))); \
    extern const char cg_pw_##S##_end[] __attribute__((visibility("hidden")));
CG_PW_PARTS
#undef X

static const struct part {
    const char *suffix;
    const char *start, *end;
} parts[] = {
#define X(S) {#S, cg_pw_##S##_start, cg_pw_##S##_end},
    CG_PW_PARTS
#undef X
};

int cg_formulas_nparts(void) { return (int)(sizeof parts / sizeof parts[0]); }

const void *cg_formulas_part(int i, const char **suffix, size_t *len)
{
    if (i < 0 || i >= cg_formulas_nparts()) {
        *len = 0;
        return NULL;
    }
    if (suffix)
        *suffix = parts[i].suffix;
    *len = (size_t)(parts[i].end - parts[i].start);
    return parts[i].start;
}
#else
int cg_formulas_nparts(void) { return 0; }

const void *cg_formulas_part(int i, const char **suffix, size_t *len)
{
    (void)i, (void)suffix;
    *len = 0;
    return NULL;
}
#endif

int cg_formulas_find(const char *suffix)
{
    for (int i = 0; i < cg_formulas_nparts(); i++) {
        const char *s;
        size_t len;
        cg_formulas_part(i, &s, &len);
        if (!strcmp(s, suffix))
            return i;
    }
    return -1;
}
