/* conv_wino_kernels.h - Winograd F(2x2, 3x3) and F(4x4, 3x3) input and
 * output transforms written once for every vector width, VL tiles
 * (consecutive grid positions) per vector (k_conv_direct.c: run_wino and
 * the matrices; its GEMMs over the channels are the grid kernel's). A
 * template: k_conv_direct_avx2.c and k_conv_direct_avx512.c each include it
 * once, after defining
 *   CK_TARGET, CK_V, CK_VL, CK_SET1, CK_LOAD, CK_LOADU, CK_STORE, CK_STOREU,
 *   CK_ADD, CK_SUB, CK_FMADD, CK_FNMADD   (conv_direct_kernels.h's, and more)
 * and these width-specific helpers (CK_TARGET static inline):
 *   ck_zip2(c0, c1, r)   r[0], r[1] = columns c0, c1 of VL tiles interleaved
 *                        tile by tile (2 floats each), tiles 0.. in r[0]
 *   ck_zip4(y, r)        the same for 4 columns y[0..3] (4 floats a tile)
 *   ck_put_row(d, r, n)  d[0..n) = r[0..n), n <= 4*VL
 *   ck_store_bf16(d, lo, hi), ck_store_f16(d, lo, hi)   2*VL floats rounded
 *                        to bf16 / f16 (RNE, a NaN quieted: rt_conv_narrow's
 *                        bits) at d; ck_store_f16 only where g->f16c
 * It defines wino_in, wino_out, wino4_in and wino4_out (static) for the
 * including file's rt_conv_kernels.
 */
#ifndef TJ_RT_CONV_WINO_KERNELS_H
#define TJ_RT_CONV_WINO_KERNELS_H

/* ---- F(2x2, 3x3) input ------------------------------------------------------------------ */

/* V = B^T d B per 4x4 tile d, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. */
CK_TARGET static void wino_in(const float *xp, int64_t cg, int64_t plane, const int64_t *toff,
                              int64_t npos, float *v, int64_t vxs)
{
    for (int64_t c = 0; c < cg; c++, xp += plane, v += npos)
        for (int64_t p = 0; p < npos; p += CK_VL) {
            CK_V d[4][4], t[4][4];
            _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++)
                d[k / 4][k % 4] = CK_LOADU(xp + toff[k] + p);
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
                t[0][k] = CK_SUB(d[0][k], d[2][k]);
                t[1][k] = CK_ADD(d[1][k], d[2][k]);
                t[2][k] = CK_SUB(d[2][k], d[1][k]);
                t[3][k] = CK_SUB(d[1][k], d[3][k]);
            }
            float *vp = v + p;
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++, vp += 4 * vxs) {
                CK_STORE(vp, CK_SUB(t[r][0], t[r][2]));
                CK_STORE(vp + vxs, CK_ADD(t[r][1], t[r][2]));
                CK_STORE(vp + 2 * vxs, CK_SUB(t[r][2], t[r][1]));
                CK_STORE(vp + 3 * vxs, CK_SUB(t[r][1], t[r][3]));
            }
        }
}

/* ---- stores ----------------------------------------------------------------------------- */

/* y[at..at+n) = r[0..n) of the block's output (g->y: f32, or bf16/f16
 * rounded once, rt_conv_narrow). */
CK_TARGET static inline void wino_put_out(const rt_conv_wino_out *g, int64_t at, const float *r,
                                          int64_t n)
{
    if (g->dt != TJ_F32)
        rt_conv_narrow(g->dt, (uint16_t *)g->y + at, r, n);
    else
        ck_put_row((float *)g->y + at, r, n);
}

/* Writes rows[a] (output row m*ty + a, a < m), each the m x m tiles of VL
 * grid positions from q interleaved (m*VL floats), to the output channel at
 * yc (elements from g->y): the parts inside the tile grid and the output,
 * row by row of tiles. */
CK_TARGET static void wino_put(const rt_conv_wino_out *g, int64_t yc, int64_t q, int64_t m,
                               const float *rows)
{
    for (int64_t p = 0; p < CK_VL;) {
        int64_t ty = (q + p) / g->wq, tx = (q + p) % g->wq;
        int64_t cnt = CK_VL - p < g->wq - tx ? CK_VL - p : g->wq - tx;
        int64_t nt = cnt < g->txn - tx ? cnt : g->txn - tx;
        int64_t ncol = m * nt < g->ow - m * tx ? m * nt : g->ow - m * tx;
        for (int64_t a = 0; a < m && ty < g->tyn && nt > 0; a++)
            if (m * ty + a < g->oh)
                wino_put_out(g, yc + (m * ty + a) * g->ow + m * tx, rows + a * m * CK_VL + m * p, ncol);
        p += cnt;
    }
}

/* Stores r (wino2_tile's or wino4_tile's, M = 2 or 4), the tiles of VL grid
 * positions from q, to the output channel at yc: whole rows of tiles
 * straight from registers (bf16 and f16 rounded there, as rt_conv_narrow),
 * the others through wino_put. */
CK_TARGET static inline __attribute__((always_inline)) void wino_store(
    const rt_conv_wino_out *g, int64_t yc, int64_t q, int M, CK_V r[4][4])
{
    int64_t ty = q / g->wq, tx = q % g->wq;
    bool whole = tx + CK_VL <= g->txn && ty < g->tyn && M * ty + M - 1 < g->oh &&
                 M * (tx + CK_VL) <= g->ow;
    if (whole && g->dt == TJ_BF16) {
        uint16_t *y0 = (uint16_t *)g->y + yc + M * ty * g->ow + M * tx;
        for (int a = 0; a < M; a++, y0 += g->ow)
            for (int k = 0; k < M; k += 2)
                ck_store_bf16(y0 + k * CK_VL, r[a][k], r[a][k + 1]);
    } else if (whole && g->f16c) {
        uint16_t *y0 = (uint16_t *)g->y + yc + M * ty * g->ow + M * tx;
        for (int a = 0; a < M; a++, y0 += g->ow)
            for (int k = 0; k < M; k += 2)
                ck_store_f16(y0 + k * CK_VL, r[a][k], r[a][k + 1]);
    } else if (whole && g->dt == TJ_F32) {
        float *y0 = (float *)g->y + yc + M * ty * g->ow + M * tx;
        for (int a = 0; a < M; a++, y0 += g->ow)
            for (int k = 0; k < M; k++)
                CK_STOREU(y0 + k * CK_VL, r[a][k]);
    } else {
        float rows[4 * 4 * CK_VL] __attribute__((aligned(64)));
        for (int a = 0; a < M; a++)
            for (int k = 0; k < M; k++)
                CK_STORE(rows + (a * M + k) * CK_VL, r[a][k]);
        wino_put(g, yc, q, M, rows);
    }
}

/* ---- F(2x2, 3x3) output ----------------------------------------------------------------- */

/* Y = A^T M A + bias for VL tiles of F(2x2), A^T = [1 1 1 0; 0 1 -1 -1]
 * (M at mp, its 16 positions mxs apart): r[a][0..1] = output row a of the
 * tiles, interleaved tile by tile (2 columns each). */
CK_TARGET static inline void wino2_tile(const float *mp, int64_t mxs, CK_V b, CK_V r[4][4])
{
    CK_V d[4][4], t[2][4];
    _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++)
        d[k / 4][k % 4] = CK_LOAD(mp + k * mxs);
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
        t[0][k] = CK_ADD(CK_ADD(d[0][k], d[1][k]), d[2][k]);
        t[1][k] = CK_SUB(CK_SUB(d[1][k], d[2][k]), d[3][k]);
    }
    _Pragma("GCC unroll 2") for (int a = 0; a < 2; a++) {
        CK_V c0 = CK_ADD(CK_ADD(CK_ADD(t[a][0], t[a][1]), t[a][2]), b);
        CK_V c1 = CK_ADD(CK_SUB(CK_SUB(t[a][1], t[a][2]), t[a][3]), b);
        ck_zip2(c0, c1, r[a]);
    }
}

/* ---- F(4x4, 3x3) (k_conv_direct.c: the matrices) ------------------------------------------ */

/* v = B^T d for one column (or row) of 6 vectors. */
CK_TARGET static inline void bt6(const CK_V *d, CK_V *v)
{
    CK_V two = CK_SET1(2.0f), four = CK_SET1(4.0f), five = CK_SET1(5.0f);
    CK_V a = CK_SUB(d[3], d[1]), b = CK_SUB(d[4], d[2]);
    v[0] = CK_FMADD(four, d[0], CK_FNMADD(five, d[2], d[4]));
    v[1] = CK_FNMADD(four, CK_ADD(d[1], d[2]), CK_ADD(d[3], d[4]));
    v[2] = CK_FMADD(four, CK_SUB(d[1], d[2]), CK_SUB(d[4], d[3]));
    v[3] = CK_FMADD(two, a, b);
    v[4] = CK_FNMADD(two, a, b);
    v[5] = CK_FMADD(four, d[1], CK_FNMADD(five, d[3], d[5]));
}

/* V = B^T d B per 6x6 tile d: the columns, then the rows, stored at the 36
 * positions. */
CK_TARGET static void wino4_in(const float *xp, int64_t cg, int64_t plane, const int64_t *toff,
                               int64_t npos, float *v, int64_t vxs)
{
    for (int64_t c = 0; c < cg; c++, xp += plane, v += npos)
        for (int64_t p = 0; p < npos; p += CK_VL) {
            CK_V t[6][6];
            _Pragma("GCC unroll 6") for (int k = 0; k < 6; k++) {
                CK_V d[6], r[6];
                _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++)
                    d[i] = CK_LOADU(xp + toff[i * 6 + k] + p);
                bt6(d, r);
                _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++) t[i][k] = r[i];
            }
            float *vp = v + p;
            _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++, vp += 6 * vxs) {
                CK_V r[6];
                bt6(t[i], r);
                _Pragma("GCC unroll 6") for (int k = 0; k < 6; k++)
                    CK_STORE(vp + k * vxs, r[k]);
            }
        }
}

/* y = A^T d for one column (or row) of 6 vectors. */
CK_TARGET static inline void at6(const CK_V *d, CK_V *y)
{
    CK_V s1 = CK_ADD(d[1], d[2]), s2 = CK_ADD(d[3], d[4]);
    CK_V e1 = CK_SUB(d[1], d[2]), e2 = CK_SUB(d[3], d[4]);
    y[0] = CK_ADD(CK_ADD(d[0], s1), s2);
    y[1] = CK_FMADD(CK_SET1(2.0f), e2, e1);
    y[2] = CK_FMADD(CK_SET1(4.0f), s2, s1);
    y[3] = CK_ADD(CK_FMADD(CK_SET1(8.0f), e2, e1), d[5]);
}

/* The same for F(4x4): r[a][0..3] = output row a of VL tiles, 4 columns
 * each, the columns transposed into rows tile by tile. */
CK_TARGET static inline void wino4_tile(const float *mp, int64_t mxs, CK_V b, CK_V r[4][4])
{
    CK_V t[4][6];
    _Pragma("GCC unroll 6") for (int k = 0; k < 6; k++) {
        CK_V d[6], y[4];
        _Pragma("GCC unroll 6") for (int i = 0; i < 6; i++)
            d[i] = CK_LOAD(mp + (i * 6 + k) * mxs);
        at6(d, y);
        _Pragma("GCC unroll 4") for (int a = 0; a < 4; a++) t[a][k] = y[a];
    }
    _Pragma("GCC unroll 4") for (int a = 0; a < 4; a++) {
        CK_V y[4];
        at6(t[a], y);
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) y[k] = CK_ADD(y[k], b);
        ck_zip4(y, r[a]);
    }
}

/* Y = A^T M A + bias per tile of F(M x M, 3x3), M = 2 or 4, for every
 * output channel and grid block of the block (rt_conv_wino_out). */
CK_TARGET static inline __attribute__((always_inline)) void wino_out_m(
    const float *m, int64_t mxs, const rt_conv_wino_out *g, int M)
{
    for (int64_t ob = 0; ob < g->nob; ob++)
        for (int64_t kb = 0; kb < g->nkb; kb++)
            for (int64_t o = 0; o < g->ko && ob * g->ko + o < g->no; o++) {
                int64_t oc = ob * g->ko + o;
                CK_V b = CK_SET1(g->bias ? g->bias[oc] : 0.0f);
                const float *mp = m + ((ob * g->kbs + kb) * g->ko + o) * g->qn;
                for (int64_t v = 0; v < g->qn; v += CK_VL) {
                    CK_V r[4][4];
                    if (M == 2)
                        wino2_tile(mp + v, mxs, b, r);
                    else
                        wino4_tile(mp + v, mxs, b, r);
                    wino_store(g, oc * g->oh * g->ow, g->q0 + kb * g->qn + v, M, r);
                }
            }
}

CK_TARGET static void wino_out(const float *m, int64_t mxs, const rt_conv_wino_out *g)
{
    wino_out_m(m, mxs, g, 2);
}

CK_TARGET static void wino4_out(const float *m, int64_t mxs, const rt_conv_wino_out *g)
{
    wino_out_m(m, mxs, g, 4);
}

#endif
