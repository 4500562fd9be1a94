/* random.h - the counter-based generator (Philox 4x32-10) behind tj_rand,
 * tj_randn and dropout (runtime/random.c).
 *
 * A stream is (seed, offset): element i of a draw is a pure function of
 * (seed, offset + i), so values do not depend on the thread count or on how
 * the range is split. The global generator hands out offsets atomically.
 */
#ifndef TJ_RT_RANDOM_H
#define TJ_RT_RANDOM_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"

/* Sets the global generator's seed and resets its offset to 0. */
void rt_rng_seed(uint64_t seed);

/* One Philox 4x32-10 block (the Random123 function), for known-answer tests. */
void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Reserves n consecutive counters of the global generator; returns the first
 * and stores the current seed. Thread-safe. */
uint64_t rt_rng_reserve(uint64_t n, uint64_t *seed);

/* A tape of this thread's reservations (autograd's checkpoints, which run
 * a function again and need the same draws): while one records, each
 * rt_rng_reserve of this thread is appended to it; while one replays, the
 * reservations return its entries in order (a reservation of another size,
 * or past its end, reserves from the generator and sets mismatch). A tape
 * that cannot grow sets failed. Begin returns the thread's previous tape,
 * end puts it back. */
typedef struct rt_rng_tape {
    uint64_t (*e)[3];   /* n, seed, first counter */
    int len, cap, pos;
    bool replay, mismatch, failed;
} rt_rng_tape;
rt_rng_tape *rt_rng_tape_begin(rt_rng_tape *t, bool replay);
void rt_rng_tape_end(rt_rng_tape *prev);
void rt_rng_tape_free(rt_rng_tape *t);

/* Draws of a compiled call. A random op traced into a graph (frontend/
 * trace.c) is the call's draw j: RT_RNG_CALL | j in its offset attribute
 * (written call+j), and no seed. Each run of the graph reserves all its
 * counters at once (rt_rng_call_begin: the total, and where each draw starts
 * in it, in trace order: sizes that follow symbolic dims are counted per
 * call) and draw j reads counters base + at[j] of the running call's
 * reservation, so a compiled call draws what eager draws op by op. The
 * reservation is per thread (a call runs its ops on its own thread) and
 * nests (a frame saves the outer one). */
#define RT_RNG_CALL IR_RNG_CALL
typedef struct rt_rng_frame {
    bool on;
    uint64_t seed, base;
    const uint64_t *at;   /* draw j starts at base + at[j] */
    uint64_t ndraws;
} rt_rng_frame;
/* Reserves total counters for the call about to run, whose draw j starts at
 * at[j] of them (at[0..ndraws) stays valid until rt_rng_call_end); *save gets
 * the outer frame. */
void rt_rng_call_begin(uint64_t total, const uint64_t *at, uint64_t ndraws, rt_rng_frame *save);
void rt_rng_call_end(const rt_rng_frame *save);
/* The stream of a random op's attributes (seed, offset): the counters
 * themselves, or, with RT_RNG_CALL in offset, the running call's draw. 0, or
 * -1 (an error: a call-relative op run outside a compiled call, or a draw the
 * call did not reserve). */
int rt_rng_resolve(uint64_t seed_attr, uint64_t offset_attr, uint64_t *seed, uint64_t *offset);

/* out[i] = U[0,1) / N(0,1) for counter offset + i, i in [0, n). */
void rt_philox_uniform_f32(uint64_t seed, uint64_t offset, float *out, int64_t n);
void rt_philox_uniform_f64(uint64_t seed, uint64_t offset, double *out, int64_t n);
void rt_philox_normal_f32(uint64_t seed, uint64_t offset, float *out, int64_t n);
void rt_philox_normal_f64(uint64_t seed, uint64_t offset, double *out, int64_t n);

#endif
