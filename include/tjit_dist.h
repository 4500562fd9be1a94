/* tjit_dist.h - data-parallel training over MPI: libtjit_dist (docs/distributed.md).
 *
 * A separate library so that libtjit itself never depends on MPI; link
 * -ltjit_dist -ltjit and MPI (mpicc, or `pkg-config --libs ompi-c`). Every
 * call is collective unless it says otherwise: all ranks make the same calls
 * in the same order. Functions return 0, or -1 with a message in
 * tj_last_error(); after an error a program should call tj_dist_abort (the
 * other ranks may be waiting on it). Waits time out after
 * tj_dist_set_timeout's seconds (default 300, or TJIT_DIST_TIMEOUT) with an
 * error naming what was waited for, so a rank that died or stopped makes the
 * others fail instead of hanging.
 *
 *     tj_dist_init(&argc, &argv);
 *     tj_ddp *ddp = tj_ddp_new(params, n, NULL);     // broadcast from rank 0
 *     for (...) {
 *         tj_tensor *loss = ...;                     // this rank's shard of the batch
 *         tj_backward(loss);                         // buckets are averaged meanwhile
 *         tj_ddp_sync(ddp);                          // wait: grads are the mean over ranks
 *         tj_optimizer_step(opt);
 *     }
 *     tj_ddp_free(ddp); tj_dist_finalize();
 */
#ifndef TJIT_DIST_H
#define TJIT_DIST_H

#include <stdbool.h>
#include <stdint.h>

#include "tjit.h"

#ifdef __cplusplus
extern "C" {
#endif
TJ_API_BEGIN

/* ---- communication --------------------------------------------------------- */
int tj_dist_init(int *argc, char ***argv);   /* MPI_Init_thread, or joins an MPI already initialised */
int tj_dist_finalize(void);                   /* MPI_Finalize when tj_dist_init initialised it */
int tj_dist_rank(void);                       /* this process's rank; -1 before init (not collective) */
int tj_dist_world_size(void);                 /* number of ranks; -1 before init (not collective) */
void tj_dist_abort(int code);                 /* stops every rank (MPI_Abort); does not return */
void tj_dist_set_timeout(double seconds);     /* for every later wait on this process (not collective) */

typedef enum tj_dist_op { TJ_DIST_SUM, TJ_DIST_AVG, TJ_DIST_MAX, TJ_DIST_MIN } tj_dist_op;
/* In place on a contiguous f32, f64, i32 or i64 tensor (AVG: float only). */
int tj_dist_allreduce(tj_tensor *t, tj_dist_op op);
int tj_dist_broadcast(tj_tensor *t, int root);  /* t's data from rank root to all */
int tj_dist_barrier(void);

/* ---- data parallelism (like torch.nn.parallel.DistributedDataParallel) ------ */
typedef struct tj_ddp tj_ddp;
typedef struct tj_ddp_options {
    double bucket_mb;   /* gradient bytes per allreduce, in MiB; 0: 25 */
} tj_ddp_options;
/* The parameters (float leaves that require grad, retained): checked for the
 * same count, dtypes and shapes on every rank (an error names the first
 * mismatch), overwritten with rank 0's values, and watched: during each
 * backward, a bucket's allreduce starts as soon as its last gradient is
 * ready (buckets hold parameters in reverse order, roughly the order their
 * gradients become ready), overlapping the rest of the backward. */
tj_ddp *tj_ddp_new(tj_tensor *const *params, int n, const tj_ddp_options *opt);
/* Waits for every bucket and sets each parameter's gradient to the mean over
 * the ranks (a parameter that got no gradient on a rank counts as zeros
 * there). Call it between the backward and the optimizer step. */
int tj_ddp_sync(tj_ddp *d);
/* on: backwards only accumulate locally (gradient accumulation, like
 * DDP.no_sync()); the next tj_ddp_sync after turning it off averages the sum. */
void tj_ddp_no_sync(tj_ddp *d, bool on);
typedef struct tj_ddp_stats {
    int buckets;             /* how many */
    int64_t bytes;           /* gradient bytes per step */
    int64_t syncs;           /* tj_ddp_sync calls that averaged */
    double started_in_backward;  /* share of buckets of the last sync started during the backward */
    double wait_s;           /* seconds spent in tj_ddp_sync waiting, all syncs */
} tj_ddp_stats;
void tj_ddp_stats_get(const tj_ddp *d, tj_ddp_stats *s);
void tj_ddp_free(tj_ddp *d);                  /* removes its hooks; NULL is fine (not collective) */

/* ---- data sharding (like torch.utils.data.DistributedSampler) ---------------- */
/* This rank's sample indices for an epoch of n samples: the same permutation
 * on every rank (seed + epoch; identity when !shuffle), padded by wrapping
 * to a multiple of the world size, every world_size-th from this rank's
 * position. Writes ceil(n / world) indices to out and returns their count
 * (-1 with an error). Not collective. */
int64_t tj_dist_shard(int64_t n, uint64_t seed, int64_t epoch, bool shuffle, int64_t *out);
/* ceil(n / world size): the length of out that tj_dist_shard needs. */
int64_t tj_dist_shard_len(int64_t n);

TJ_API_END
#ifdef __cplusplus
}
#endif
#endif
