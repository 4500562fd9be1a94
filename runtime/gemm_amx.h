/* gemm_amx.h - the AMX tile path of tjit's GEMM (runtime/gemm_amx.c), for
 * gemm.c and the tests: bf16 (tdpbf16ps, f32 sums) and u8 x s8 (tdpbusd, s32
 * sums) products of a row-major A block and the packed B panels of gemm.h,
 * into the block's sums, which gemm.c's epilogue then reads as it reads any
 * other kernel's (zero point, column sums and scales of int8 included).
 *
 * The block loop (gemm_amx_loop.h) is written once against six tile
 * operations and compiled twice: with the AMX instructions (ldtilecfg,
 * tileloadd, tilestored, tilezero, tdpbf16ps, tdpbusd, tilerelease; each
 * function with its own target attribute), and with a portable emulation of
 * them that follows the Intel SDM's pseudocode (below), so that the loop's
 * logic (tails, blocking, padding) is tested on CPUs without AMX.
 */
#ifndef TJ_RT_GEMM_AMX_H
#define TJ_RT_GEMM_AMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

/* Tiles of the block loop: C 2 x 2 (tmm0-3: 32 rows x 32 columns, one
 * packed panel), A tmm4-5 (16 rows x 16 k-groups each), B tmm6-7 (16
 * k-groups x 16 columns each). Every tile is configured 16 rows x 64 bytes
 * (one ldtilecfg per call and thread); tails are zero padding in memory. */
enum { TJG_AMX_ROWS = 32,   /* A and C rows per step (the A block is padded to it) */
       TJG_AMX_KG = 16 };   /* k-groups per tile step (a row of A is padded to it) */

typedef struct tjg_amx_ops {
    size_t state_bytes;           /* per thread: the emulation's tiles (0: the hardware) */
    void (*begin)(void *state);   /* ldtilecfg (palette 1) */
    /* c (f32 for bf16, s32 for int8; rows ldc elements apart) (+= where acc)
     * = A @ B over nkg k-groups (pairs or quads) for rows x cols:
     *   a     rows rounded up to TJG_AMX_ROWS, each lda bytes apart holding
     *         nkg groups rounded up to TJG_AMX_KG (zero past the data);
     *   b     ceil(cols / NR) packed panels, pstride words apart, nkg groups
     *         of NR words each (the panel's k-block: gemm.h's layout);
     *   c     rows rounded up to 16 and columns rounded up to NR are
     *         written (the caller's scratch has room for TJG_AMX_ROWS);
     *   tail  TJG_AMX_KG x NR words of scratch (B's last groups, zero padded). */
    void (*block)(void *state, bool bf16, int64_t rows, int64_t cols, int64_t nkg,
                  const void *a, int64_t lda, const uint32_t *b, int64_t pstride, void *c,
                  int64_t ldc, bool acc, uint32_t *tail);
    int (*end)(void *state);      /* tilerelease; -1 where the emulation saw an invalid op */
} tjg_amx_ops;

/* The ops for a product of m rows of type t under the process's variant:
 * the hardware's where tjg_amx_wanted(tjg_isa_current(), t, m), the
 * emulation's where tjg_amx_emulate is on and tjg_amx_wanted(TJG_AMX, t, m);
 * else NULL (the other kernels). */
const tjg_amx_ops *tjg_amx_ops_for(tjg_type t, int64_t m);
/* Counts a GEMM call run on the tiles (tjg_amx_calls). */
void tjg_amx_count(void);

/* ---- the emulated tile operations (the SDM's pseudocode, for the tests) ------------- */
/* A tile configuration (ldtilecfg's 64 bytes, palette 1). */
typedef struct tjg_tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tjg_tilecfg;
/* The emulated tile registers: 8 tiles of up to 16 rows x 64 bytes, the
 * configured rows and bytes per row, and whether an operation would have
 * raised #UD (a shape mismatch, a tile used twice, no configuration). */
typedef struct tjg_tile_emu {
    uint8_t t[8][16][64];
    uint8_t rows[8];
    uint16_t colsb[8];
    bool configured, fault;
} tjg_tile_emu;
/* ldtilecfg: the whole state reset (the fault flag too), then rows and
 * colsb per tile, every tile zero (palette 0: the init state, unconfigured;
 * anything but 0 or 1, or a shape past 16 x 64: fault). */
void tjg_tile_config(tjg_tile_emu *s, const tjg_tilecfg *cfg);
/* tileloadd: the configured rows of colsb bytes, row r at base + r*stride;
 * the rest of the tile zero. */
void tjg_tile_load(tjg_tile_emu *s, int t, const void *base, int64_t stride);
/* tilestored: the configured rows of colsb bytes to base + r*stride. */
void tjg_tile_store(tjg_tile_emu *s, int t, void *base, int64_t stride);
void tjg_tile_zero(tjg_tile_emu *s, int t);
/* tdpbf16ps: d[m][n] += a[m][2k] * b[k][2n] then += a[m][2k+1] * b[k][2n+1],
 * k in order, each an f32 FMA rounded to nearest even with denormal inputs
 * read as zero and denormal results flushed to zero (MXCSR not used). */
void tjg_tile_dpbf16ps(tjg_tile_emu *s, int d, int a, int b);
/* tdpbusd: d[m][n] += sum of the four u8 a[m][4k+e] x s8 b[k][4n+e], s32
 * wrapping (exact: no saturation). */
void tjg_tile_dpbusd(tjg_tile_emu *s, int d, int a, int b);
/* tilerelease: back to the init state (unconfigured); the fault flag kept. */
void tjg_tile_release(tjg_tile_emu *s);

#endif
