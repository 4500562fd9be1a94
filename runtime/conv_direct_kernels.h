/* conv_direct_kernels.h - the direct convolution's micro-kernels written
 * once for every vector width (runtime/k_conv_direct.c: AVX-512,
 * k_conv_direct_avx2.c: AVX2 + FMA). The including file defines, before
 * instantiating:
 *   CK_TARGET   the function attribute (__attribute__((target(...))))
 *   CK_V, CK_VL the vector type and its floats
 *   CK_SET1, CK_LOAD, CK_LOADU, CK_STOREU, CK_FMADD   its intrinsics
 * All sums run over (c, tap) in that order with one FMA per term.
 */
#ifndef TJ_RT_CONV_DIRECT_KERNELS_H
#define TJ_RT_CONV_DIRECT_KERNELS_H

/* Grid kernel: out[KO][QV*VL] = bias + the sums over cg channels and ntap
 * taps; QV unaligned loads of the shifted plane per tap. WREG 0: the QV
 * loaded vectors stay in registers and each of the KO weights is broadcast
 * in turn (KO*QV + QV + 1 registers); WREG 1: the KO broadcast weights stay
 * and the input is loaded per vector (KO*QV + KO + 1), for small KO. */
#define CK_BLOCK(NAME, KO, QV, WREG)                                                        \
    CK_TARGET static void NAME(const float *xp, const float *wp, int64_t cg, int64_t plane, \
                               const int64_t *toff, int64_t ntap, const float *b,          \
                               float *out, int64_t os)                                     \
    {                                                                                       \
        CK_V acc[KO][QV];                                                                   \
        _Pragma("GCC unroll 8") for (int o = 0; o < KO; o++)                                \
            _Pragma("GCC unroll 8") for (int v = 0; v < QV; v++) acc[o][v] = CK_SET1(b[o]); \
        for (int64_t c = 0; c < cg; c++, xp += plane) {                                     \
            for (int64_t t = 0; t < ntap; t++, wp += KO) {                                  \
                const float *s = xp + toff[t];                                              \
                if (WREG) {                                                                 \
                    CK_V w[KO];                                                             \
                    _Pragma("GCC unroll 8") for (int o = 0; o < KO; o++) w[o] =             \
                        CK_SET1(wp[o]);                                                     \
                    _Pragma("GCC unroll 8") for (int v = 0; v < QV; v++)                    \
                    {                                                                       \
                        CK_V x = CK_LOADU(s + CK_VL * v);                                   \
                        _Pragma("GCC unroll 8") for (int o = 0; o < KO; o++) acc[o][v] =    \
                            CK_FMADD(w[o], x, acc[o][v]);                                   \
                    }                                                                       \
                    continue;                                                               \
                }                                                                           \
                CK_V x[QV];                                                                 \
                _Pragma("GCC unroll 8") for (int v = 0; v < QV; v++) x[v] =                 \
                    CK_LOADU(s + CK_VL * v);                                                \
                _Pragma("GCC unroll 8") for (int o = 0; o < KO; o++)                        \
                {                                                                           \
                    CK_V w = CK_SET1(wp[o]);                                                \
                    _Pragma("GCC unroll 8") for (int v = 0; v < QV; v++) acc[o][v] =        \
                        CK_FMADD(w, x[v], acc[o][v]);                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        _Pragma("GCC unroll 8") for (int o = 0; o < KO; o++)                                \
            _Pragma("GCC unroll 8") for (int v = 0; v < QV; v++)                            \
                CK_STOREU(out + o * os + v * CK_VL, acc[o][v]);                             \
    }

/* Row kernel: the vector runs over VL*KV output channels, a block is P
 * consecutive output columns of one row (broadcast input, weights packed
 * [ob][c][tap][VL*KV]). out[P][VL*KV] = bias + the sums. */
#define CK_RBLOCK(NAME, P, KV)                                                              \
    CK_TARGET static void NAME(const float *xp, const float *wp, int64_t cg, int64_t plane, \
                               const int64_t *toff, int64_t ntap, const float *b,          \
                               float *out, int64_t os)                                     \
    {                                                                                       \
        CK_V acc[P][KV];                                                                    \
        _Pragma("GCC unroll 4") for (int v = 0; v < KV; v++)                                \
        {                                                                                   \
            CK_V bv = CK_LOADU(b + CK_VL * v);                                              \
            _Pragma("GCC unroll 16") for (int p = 0; p < P; p++) acc[p][v] = bv;            \
        }                                                                                   \
        for (int64_t c = 0; c < cg; c++, xp += plane) {                                     \
            for (int64_t t = 0; t < ntap; t++, wp += CK_VL * KV) {                          \
                const float *s = xp + toff[t];                                              \
                CK_V w[KV];                                                                 \
                _Pragma("GCC unroll 4") for (int v = 0; v < KV; v++) w[v] =                 \
                    CK_LOAD(wp + CK_VL * v);                                                \
                _Pragma("GCC unroll 16") for (int p = 0; p < P; p++)                        \
                {                                                                           \
                    CK_V x = CK_SET1(s[p]);                                                 \
                    _Pragma("GCC unroll 4") for (int v = 0; v < KV; v++) acc[p][v] =        \
                        CK_FMADD(x, w[v], acc[p][v]);                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        _Pragma("GCC unroll 16") for (int p = 0; p < P; p++)                                \
            _Pragma("GCC unroll 4") for (int v = 0; v < KV; v++)                            \
                CK_STOREU(out + (p * KV + v) * CK_VL, acc[p][v]);                           \
    }

#endif
