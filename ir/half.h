/* half.h - the two 16-bit float formats: conversions between f32 and f16
 * (IEEE binary16) or bf16 (bfloat16, the high half of an f32), bit exact.
 *
 * Narrowing rounds to nearest, ties to even, like PyTorch's c10::Half and
 * c10::BFloat16 (and vcvtps2ph with imm 0): f16 keeps subnormals, values from
 * 65520 up become inf; a NaN stays a NaN, quiet, with its sign and the top bits of its
 * payload (as vcvtps2ph and vcvtneps2bf16 keep them; c10 gives 0x7e00 and
 * 0x7fc0).
 * Widening is exact. Branchy scalar C, written so that gcc vectorizes the
 * loops of runtime/iter.c over it; the JIT emits its own instructions
 * (codegen/emit.c) that give the same bits.
 *
 * Wider sources (f64, integers) narrow through f32, as PyTorch does
 * (c10::Half and c10::BFloat16 are built from a float): two roundings.
 */
#ifndef TJ_IR_HALF_H
#define TJ_IR_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t ir_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float ir_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float ir_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu, r;
    if (em >= 0x7c00u)                  /* inf, NaN */
        r = 0x7f800000u | ((em & 0x3ffu) << 13);
    else if (em >= 0x0400u)             /* normal: rebias the exponent */
        r = (em << 13) + ((uint32_t)(127 - 15) << 23);
    else                                /* zero, subnormal: em * 2^-24, exact */
        r = ir_f32_bits((float)em * 0x1p-24f);
    return ir_bits_f32(r | sign);
}

static inline uint16_t ir_f32_to_f16(float f)
{
    uint32_t x = ir_f32_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    uint16_t r;
    if (ax >= 0x47800000u)              /* >= 2^16: inf; NaN keeps its top payload, quiet */
        r = ax > 0x7f800000u ? (uint16_t)(0x7e00u | ((ax >> 13) & 0x3ffu)) : 0x7c00u;
    else if (ax < 0x38800000u)          /* below 2^-14: subnormal or zero; the FPU rounds */
        r = (uint16_t)(ir_f32_bits(ir_bits_f32(ax) + 0.5f) - 0x3f000000u);
    else                                /* normal; a carry may round up to inf */
        r = (uint16_t)((ax + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((ax >> 13) & 1u)) >> 13);
    return (uint16_t)(r | sign);
}

static inline float ir_bf16_to_f32(uint16_t h) { return ir_bits_f32((uint32_t)h << 16); }

static inline uint16_t ir_f32_to_bf16(float f)
{
    uint32_t x = ir_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x0040u);   /* NaN: quiet, sign and top payload kept */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#endif
