/* gemm_amx_loop.h - the AMX block loop (gemm_amx.h's tjg_amx_ops), written
 * once against the tile operations and included twice by gemm_amx.c: with
 * the AMX instructions and with the emulation (gemm_amx.h). The includer
 * defines
 *
 *   AMX_FN(x)                   the name of function x in this op set
 *   AMX_ATTR                    the functions' attribute (the target)
 *   T_CFG(st, cfg)              ldtilecfg      T_RELEASE(st)   tilerelease
 *   T_LOAD(st, t, p, stride)    tileloadd      T_STORE(...)    tilestored
 *   T_ZERO(st, t)               tilezero       T_FAULT(st)     1 where an op faulted
 *   T_BF16(st, d, a, b)         tdpbf16ps      T_BUSD(...)     tdpbusd
 *
 * with tile numbers as literal constants (the instructions encode them).
 *
 *   for each packed panel of NR = 32 columns (B's k-block in L1):
 *     B's last nkg % 16 groups copied to `tail`, zero padded to 16 groups
 *     for each 32 rows of the A block (in L2):
 *       C tiles tmm0-3 (2 x 2 of 16 x 16) loaded (acc) or zeroed
 *       per 16 k-groups: A tmm4 (rows 0-15), tmm5 (16-31) at stride lda,
 *         B tmm6 (columns 0-15), tmm7 (16-31) at stride 128 (a group's row
 *         of the panel), four products
 *       C tiles stored
 *
 * A last block of at most 16 rows uses tmm0-1, 4, 6-7 only.
 */

static const tjg_tilecfg AMX_FN(cfg) = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

AMX_ATTR static void AMX_FN(begin)(void *st) { T_CFG(st, &AMX_FN(cfg)); }

AMX_ATTR static int AMX_FN(end)(void *st)
{
    T_RELEASE(st);
    return T_FAULT(st) ? -1 : 0;
}

/* The k loop of one 32-row (two) or 16-row block, with DP the product. */
#define AMX_STEPS(DP)                                                                     \
    for (int64_t s = 0; s < steps; s++) {                                                 \
        const uint32_t *bs = s < full ? bp + s * TJG_AMX_KG * TJG_NR : tail;              \
        T_LOAD(st, 4, a0 + s * TJG_AMX_KG * 4, lda);                                      \
        T_LOAD(st, 6, bs, TJG_NR * 4);                                                    \
        T_LOAD(st, 7, bs + 16, TJG_NR * 4);                                               \
        DP(st, 0, 4, 6);                                                                  \
        DP(st, 1, 4, 7);                                                                  \
        if (two) {                                                                        \
            T_LOAD(st, 5, a0 + 16 * lda + s * TJG_AMX_KG * 4, lda);                       \
            DP(st, 2, 5, 6);                                                              \
            DP(st, 3, 5, 7);                                                              \
        }                                                                                 \
    }

AMX_ATTR static void AMX_FN(block)(void *st, bool bf16, int64_t rows, int64_t cols,
                                   int64_t nkg, const void *a, int64_t lda, const uint32_t *b,
                                   int64_t pstride, void *c, int64_t ldc, bool acc,
                                   uint32_t *tail)
{
    int64_t full = nkg / TJG_AMX_KG, part = nkg % TJG_AMX_KG, steps = full + (part > 0);
    int64_t ldcb = ldc * 4;   /* C's row stride in bytes (f32 and s32 alike) */
    for (int64_t p = 0; p * TJG_NR < cols; p++) {
        const uint32_t *bp = b + p * pstride;
        if (part) {
            memcpy(tail, bp + full * TJG_AMX_KG * TJG_NR, (size_t)(part * TJG_NR) * 4);
            memset(tail + part * TJG_NR, 0, (size_t)((TJG_AMX_KG - part) * TJG_NR) * 4);
        }
        for (int64_t r0 = 0; r0 < rows; r0 += TJG_AMX_ROWS) {
            const uint8_t *a0 = (const uint8_t *)a + r0 * lda;
            char *c0 = (char *)c + r0 * ldcb + p * TJG_NR * 4, *c1 = c0 + 16 * ldcb;
            bool two = rows - r0 > 16;
            if (acc) {
                T_LOAD(st, 0, c0, ldcb);
                T_LOAD(st, 1, c0 + 64, ldcb);
                if (two) {
                    T_LOAD(st, 2, c1, ldcb);
                    T_LOAD(st, 3, c1 + 64, ldcb);
                }
            } else {
                T_ZERO(st, 0);
                T_ZERO(st, 1);
                T_ZERO(st, 2);
                T_ZERO(st, 3);
            }
            if (bf16) {
                AMX_STEPS(T_BF16)
            } else {
                AMX_STEPS(T_BUSD)
            }
            T_STORE(st, 0, c0, ldcb);
            T_STORE(st, 1, c0 + 64, ldcb);
            if (two) {
                T_STORE(st, 2, c1, ldcb);
                T_STORE(st, 3, c1 + 64, ldcb);
            }
        }
    }
}

#undef AMX_STEPS

static const tjg_amx_ops AMX_FN(ops) = {
    .state_bytes = AMX_STATE_BYTES,
    .begin = AMX_FN(begin),
    .block = AMX_FN(block),
    .end = AMX_FN(end),
};
