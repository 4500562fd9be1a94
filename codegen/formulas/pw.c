/* pw.c - the pointwise formulas, compiled to LLVM bitcode for the JIT.
 *
 * Not part of the native library: the Makefile compiles this file with
 * clang-19 into $(BUILD)/codegen/pw.bc, and codegen/bitcode.c embeds that
 * file in libtjit. codegen/emit.c parses it into each kernel's LLVM context,
 * links it into the kernel module and inlines the functions it calls, so a
 * compiled kernel evaluates exactly the formulas the eager kernels do
 * (runtime/k_pointwise.c): the f32, f64 and int columns of the UNARY and
 * BINARY rows of ir/ops.def over ir/vmath.h. One source of truth.
 *
 * For every row and every compute dtype D, one function
 *
 *   double  tj_pw_<name>_F32(float x)      or (float a, float b)
 *   double  tj_pw_<name>_F64(double x)
 *   int64_t tj_pw_<name>_<I8|I16|I32|I64|U8|BOOL>(<ctype> x)
 *
 * returns the row's formula for D (the f32 column for F32, f64 for F64, the
 * int column otherwise), widened exactly to double (float dtypes) or int64_t
 * (integer dtypes: the C value of the int formula, sign-extended). The kernel
 * narrows it to the result dtype the way the eager kernels store a value
 * (a plain C conversion; bool: != 0, or & 1 for bitwise rows).
 *
 * Flags (Makefile): -std=c11 -O2 -fno-math-errno -ffp-contract=off -fwrapv,
 * the eager build's float semantics (gcc in ISO C mode does not contract a*b+c;
 * clang would by default), and wrapping integer overflow as the vectorized
 * eager loops do; -fno-slp-vectorize keeps each formula scalar, so that the
 * kernel's loop around it vectorizes (LLVM's loop vectorizer takes no loop
 * with vector instructions in it).
 */
#include <math.h>
#include <stdint.h>

#include "../../ir/vmath.h"

#define PW_F32 float
#define PW_F64 double
#define PW_I32 int32_t
#define PW_I64 int64_t
#define PW_U8 uint8_t
#define PW_I8 int8_t
#define PW_I16 int16_t
#define PW_BOOL uint8_t

#define PW_U(D, R, name, expr) \
    R tj_pw_##name##_##D(PW_##D x); \
    R tj_pw_##name##_##D(PW_##D x) { return (R)(expr); }
#define PW_B(D, R, name, expr) \
    R tj_pw_##name##_##D(PW_##D a, PW_##D b); \
    R tj_pw_##name##_##D(PW_##D a, PW_##D b) { return (R)(expr); }

#define PW_ALL(G, name, f32, f64, i) \
    G(F32, double, name, f32) G(F64, double, name, f64) G(I32, int64_t, name, i) \
    G(I64, int64_t, name, i) G(U8, int64_t, name, i) G(I8, int64_t, name, i) \
    G(I16, int64_t, name, i) G(BOOL, int64_t, name, i)

#pragma clang diagnostic ignored "-Wtautological-unsigned-zero-compare"
#pragma clang diagnostic ignored "-Wconstant-logical-operand"

#define UNARY(name, rule, decomp, f32, f64, i) PW_ALL(PW_U, name, f32, f64, i)
#define BINARY(name, rule, decomp, f32, f64, i) PW_ALL(PW_B, name, f32, f64, i)
#include "../../ir/ops.def"
