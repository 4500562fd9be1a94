/* k_rows.h - row primitives shared by the reduction and normalization kernels
 * (k_reduce.c, k_norm.c): sums, extrema and sums of exp / squared deviations
 * over one contiguous row of f32 or f64.
 *
 * Every function is always inlined and has no target attribute: the kernel
 * files call them from their own target_clones functions, where they
 * vectorize (zmm with x86-64-v4). Sums keep LN independent partial sums in the
 * row's type (several vector registers, reassociated), fold them pairwise, and
 * add blocks of RT_ROW_BLOCK elements into a double: each lane adds at most
 * RT_ROW_BLOCK / LN values in float, so float sums stay close to PyTorch's
 * cascade sum (the last 16 lanes and the tail add up in order). Extrema
 * propagate NaN like torch.amax.
 */
#ifndef TJ_RT_K_ROWS_H
#define TJ_RT_K_ROWS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "../ir/vmath.h"

/* Forced inline: a copy compiled for the baseline target would not vectorize. */
#define RT_ROW_INLINE static inline __attribute__((always_inline))

#define RT_ROW_BLOCK 4096
#define RT_LN_f32 64
#define RT_LN_f64 32

/* Sum over row x[0..n) of EXPR (an expression of the element `v`, of type A,
 * and of its index `k_`) in lanes of A into the double `total`, blocked as
 * described above. */
#define RT_LANE_SUM(T, A, LN, x, n, EXPR, total) \
    do { \
        for (int64_t b_ = 0; b_ < (n); b_ += RT_ROW_BLOCK) { \
            int64_t m_ = (n) - b_ < RT_ROW_BLOCK ? (n) - b_ : RT_ROW_BLOCK; \
            A acc_[LN] = {0}; \
            int64_t i_ = 0; \
            for (; i_ + (LN) <= m_; i_ += (LN)) \
                for (int l_ = 0; l_ < (LN); l_++) { \
                    int64_t k_ = b_ + i_ + l_; \
                    A v = (x)[k_]; \
                    acc_[l_] += (EXPR); \
                } \
            for (; i_ + 16 <= m_; i_ += 16) \
                for (int l_ = 0; l_ < 16; l_++) { \
                    int64_t k_ = b_ + i_ + l_; \
                    A v = (x)[k_]; \
                    acc_[l_] += (EXPR); \
                } \
            A tail_ = 0; \
            for (; i_ < m_; i_++) { \
                int64_t k_ = b_ + i_; \
                A v = (x)[k_]; \
                tail_ += (EXPR); \
            } \
            for (int w_ = m_ >= (LN) ? (LN) / 2 : 0; w_ >= 16; w_ /= 2) \
                for (int l_ = 0; l_ < w_; l_++) \
                    acc_[l_] += acc_[l_ + w_]; \
            for (int l_ = 0; l_ < 16; l_++) \
                tail_ += acc_[l_]; \
            (total) += (double)tail_; \
        } \
    } while (0)

/* Max (CMP >) or min (CMP <) of x[0..n), n >= 1; NaN wins. Each lane keeps a
 * sticky NaN (nan_) beside its extreme, so the compare-selects (vmaxps) and
 * the folds stay free of NaN tests and branches. */
#define RT_EXT_STEP(CMP, acc, nan, v) \
    do { \
        (acc) = (v) CMP (acc) ? (v) : (acc); \
        (nan) = (v) != (v) ? (v) : (nan); \
    } while (0)
#define RT_LANE_EXT(T, LN, x, n, CMP, out) \
    do { \
        T acc_[LN], nan_[LN]; \
        for (int l_ = 0; l_ < (LN); l_++) \
            acc_[l_] = (x)[0], nan_[l_] = 0; \
        int64_t i_ = 0; \
        for (; i_ + (LN) <= (n); i_ += (LN)) \
            for (int l_ = 0; l_ < (LN); l_++) \
                RT_EXT_STEP(CMP, acc_[l_], nan_[l_], (x)[i_ + l_]); \
        for (; i_ + 16 <= (n); i_ += 16) \
            for (int l_ = 0; l_ < 16; l_++) \
                RT_EXT_STEP(CMP, acc_[l_], nan_[l_], (x)[i_ + l_]); \
        for (int l_ = 0; i_ < (n); i_++, l_++) \
            RT_EXT_STEP(CMP, acc_[l_], nan_[l_], (x)[i_]); \
        int nan_any_ = 0, lanes_ = (n) >= (LN) ? (LN) : 16; /* short rows: 16 lanes used */ \
        for (int l_ = 0; l_ < lanes_; l_++) \
            nan_any_ |= nan_[l_] != nan_[l_]; \
        for (int w_ = lanes_ / 2; w_ > 0; w_ /= 2) \
            for (int l_ = 0; l_ < w_; l_++) \
                acc_[l_] = acc_[l_ + w_] CMP acc_[l_] ? acc_[l_ + w_] : acc_[l_]; \
        (out) = nan_any_ ? (T)NAN : acc_[0]; \
    } while (0)

#define RT_ROWS_DEFINE(T, S, EXP) \
    RT_ROW_INLINE double rt_row_sum_##S(const T *restrict x, int64_t n) \
    { \
        double t = 0; \
        RT_LANE_SUM(T, T, RT_LN_##S, x, n, v, t); \
        return t; \
    } \
    /* sum of (x - mean)^2 */ \
    RT_ROW_INLINE double rt_row_sqdev_##S(const T *restrict x, int64_t n, T mean) \
    { \
        double t = 0; \
        RT_LANE_SUM(T, T, RT_LN_##S, x, n, (v - mean) * (v - mean), t); \
        return t; \
    } \
    /* sum of exp(x - shift) */ \
    RT_ROW_INLINE double rt_row_expsum_##S(const T *restrict x, int64_t n, T shift) \
    { \
        double t = 0; \
        RT_LANE_SUM(T, T, RT_LN_##S, x, n, EXP(v - shift), t); \
        return t; \
    } \
    RT_ROW_INLINE T rt_row_max_##S(const T *restrict x, int64_t n) \
    { \
        T r; \
        RT_LANE_EXT(T, RT_LN_##S, x, n, >, r); \
        return r; \
    } \
    RT_ROW_INLINE T rt_row_min_##S(const T *restrict x, int64_t n) \
    { \
        T r; \
        RT_LANE_EXT(T, RT_LN_##S, x, n, <, r); \
        return r; \
    }

RT_ROWS_DEFINE(float, f32, vm_exp_f32)
RT_ROWS_DEFINE(double, f64, exp)

/* f32 rows summed in double lanes (the overflow escape of the moments below). */
RT_ROW_INLINE double rt_row_sum_d_f32(const float *restrict x, int64_t n)
{
    double t = 0;
    RT_LANE_SUM(float, double, RT_LN_f64, x, n, v, t);
    return t;
}

RT_ROW_INLINE double rt_row_sqdev_d_f32(const float *restrict x, int64_t n, double mean)
{
    double t = 0;
    RT_LANE_SUM(float, double, RT_LN_f64, x, n, (v - mean) * (v - mean), t);
    return t;
}

/* Mean and sum of squared deviations (M2) of a row (rms: about 0, mean 0),
 * in the row's type, the M2 corrected for rounding the mean to T. A f32 row
 * whose statistics overflow float is redone in double lanes, so values near
 * FLT_MAX still give finite results (var, layer_norm). */
#define RT_ROW_MOMENTS_DEFINE(T, S, ESCAPE) \
    RT_ROW_INLINE void rt_row_moments_##S(const T *restrict x, int64_t n, bool rms, \
                                          double *mean, double *m2) \
    { \
        *mean = rms ? 0 : rt_row_sum_##S(x, n) / (double)n; \
        T m = (T)*mean; \
        double dm = *mean - m; \
        *m2 = rt_row_sqdev_##S(x, n, m) - (double)n * dm * dm; \
        if (ESCAPE && !(isfinite(*mean) && isfinite(*m2))) { \
            *mean = rms ? 0 : rt_row_sum_d_f32((const float *)x, n) / (double)n; \
            *m2 = rt_row_sqdev_d_f32((const float *)x, n, *mean); \
        } \
        *m2 = *m2 > 0 || *m2 != *m2 ? *m2 : 0; \
    }
RT_ROW_MOMENTS_DEFINE(float, f32, 1)
RT_ROW_MOMENTS_DEFINE(double, f64, 0)

#endif
