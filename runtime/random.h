/* random.h - the counter-based generator (Philox 4x32-10) behind tj_rand,
 * tj_randn and dropout (runtime/random.c).
 *
 * A stream is (seed, offset): element i of a draw is a pure function of
 * (seed, offset + i), so values do not depend on the thread count or on how
 * the range is split. The global generator hands out offsets atomically.
 */
#ifndef TJ_RT_RANDOM_H
#define TJ_RT_RANDOM_H

#include <stdint.h>

/* Sets the global generator's seed and resets its offset to 0. */
void rt_rng_seed(uint64_t seed);

/* One Philox 4x32-10 block (the Random123 function), for known-answer tests. */
void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Reserves n consecutive counters of the global generator; returns the first
 * and stores the current seed. Thread-safe. */
uint64_t rt_rng_reserve(uint64_t n, uint64_t *seed);

/* out[i] = U[0,1) / N(0,1) for counter offset + i, i in [0, n). */
void rt_philox_uniform_f32(uint64_t seed, uint64_t offset, float *out, int64_t n);
void rt_philox_uniform_f64(uint64_t seed, uint64_t offset, double *out, int64_t n);
void rt_philox_normal_f32(uint64_t seed, uint64_t offset, float *out, int64_t n);
void rt_philox_normal_f64(uint64_t seed, uint64_t offset, double *out, int64_t n);

#endif
