/* k_conv_direct_avx2.c - the direct f32 convolution's micro-kernels for
 * AVX2 + FMA (8 floats per ymm, 16 registers); the geometry, packing, phase
 * planes, drivers and rule are k_conv_direct.c's, which dispatches here when
 * the CPU has AVX2 and FMA but not AVX-512F.
 *
 * Grid kernel (acc[KO][QV] ymm, KO output channels x QV*8 grid positions):
 * 4 x 3 keeps the QV loaded vectors and one broadcast weight in registers,
 * 12 accumulators + 3 + 1 = 16, 3 unaligned loads and 4 broadcasts per 12
 * FMAs. With fewer output channels per group the weights stay in registers
 * instead and the input vector is loaded per column (2 x 6, 1 x 8), so
 * nothing spills. Row kernel (acc[P][KV], 8*KV output channels x P columns
 * of one output row): P*KV + KV + 1 <= 16, so KV = 2 takes up to 6 columns,
 * KV = 1 up to 14. Measured on a Zen 3 in docs/perf.md (Convolution on AVX2
 * machines); every function is compiled for avx2,fma (the library targets
 * baseline x86-64).
 */
#include <immintrin.h>

#include "conv_direct.h"
#include "conv_direct_kernels.h"

#define VL 8                        /* floats per ymm */
#define CK_TARGET __attribute__((target("avx2,fma")))
#define CK_V __m256
#define CK_VL VL
#define CK_SET1 _mm256_set1_ps
#define CK_LOAD _mm256_load_ps
#define CK_LOADU _mm256_loadu_ps
#define CK_STOREU _mm256_storeu_ps
#define CK_FMADD _mm256_fmadd_ps
CK_BLOCK(block_4_3, 4, 3, 0)
CK_BLOCK(blockw_2_6, 2, 6, 1)
CK_BLOCK(blockw_1_8, 1, 8, 1)
CK_RBLOCK(rblock_6_2, 6, 2)
CK_RBLOCK(rblock_5_2, 5, 2)
CK_RBLOCK(rblock_4_2, 4, 2)
CK_RBLOCK(rblock_14_1, 14, 1)
CK_RBLOCK(rblock_12_1, 12, 1)
CK_RBLOCK(rblock_8_1, 8, 1)
CK_RBLOCK(rblock_7_1, 7, 1)

const rt_conv_kernels rt_conv_avx2 = {
    .vl = VL,
    .grid = {{4, 3, block_4_3}, {2, 6, blockw_2_6}, {1, 8, blockw_1_8}},
    .rlen = {{14, 12, 8, 7}, {6, 5, 4, 0}},
    .rows = {{rblock_14_1, rblock_12_1, rblock_8_1, rblock_7_1},
             {rblock_6_2, rblock_5_2, rblock_4_2, NULL}},
    .rows_gain = 0.05,
    .min_keep = 0.7,
    .strided_gemm = true,
};
