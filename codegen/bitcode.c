/* bitcode.c - embeds the formula bitcode in the library.
 *
 * The Makefile compiles codegen/formulas/pw.c with clang-19 into
 * $(BUILD)/codegen/pw.bc and passes its path as CG_BITCODE_PATH; the
 * assembler's .incbin copies the file into .rodata here. Without clang-19
 * the path is not defined and the bitcode is empty (codegen then reports
 * that it cannot compile, and compiled graphs run on the eager executor).
 */
#include "emit.h"

#ifdef CG_BITCODE_PATH
__asm__(".section .rodata\n"
        ".balign 16\n"
        ".globl cg_pw_bc_start\n"
        ".hidden cg_pw_bc_start\n"
        "cg_pw_bc_start:\n"
        ".incbin \"" CG_BITCODE_PATH "\"\n"
        ".globl cg_pw_bc_end\n"
        ".hidden cg_pw_bc_end\n"
        "cg_pw_bc_end:\n"
        ".previous\n");

extern const char cg_pw_bc_start[] __attribute__((visibility("hidden")));
extern const char cg_pw_bc_end[] __attribute__((visibility("hidden")));

const void *cg_formulas_bitcode(size_t *len)
{
    *len = (size_t)(cg_pw_bc_end - cg_pw_bc_start);
    return cg_pw_bc_start;
}
#else
const void *cg_formulas_bitcode(size_t *len)
{
    *len = 0;
    return NULL;
}
#endif
