/* sampler.c - this rank's share of a dataset's indices, like PyTorch's
 * DistributedSampler: one permutation for all ranks (seed + epoch), padded by
 * wrapping to a multiple of the world size, then every world-th index. */
#include <stdlib.h>

#include "dist.h"

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int64_t tj_dist_shard_len(int64_t n)
{
    int world = tj_dist_world_size();
    return world > 0 && n >= 0 ? (n + world - 1) / world : -1;
}

int64_t tj_dist_shard(int64_t n, uint64_t seed, int64_t epoch, bool shuffle, int64_t *out)
{
    int world = tj_dist_world_size(), me = tj_dist_rank();
    if (dist_ready() != 0)
        return -1;
    if (n <= 0 || !out) {
        tj_set_error("dist: shard: needs n > 0 samples (got %lld) and an output array", (long long)n);
        return -1;
    }
    int64_t len = tj_dist_shard_len(n);
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    if (!perm) {
        tj_set_error("dist: shard: out of memory for %lld indices", (long long)n);
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    if (shuffle) {
        uint64_t s = seed ^ (0x5851f42d4c957f2dull * (uint64_t)(epoch + 1));
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)(splitmix64(&s) % (uint64_t)(i + 1));
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    }
    for (int64_t k = 0; k < len; k++)
        out[k] = perm[(me + k * world) % n];   /* past n: wraps to the start */
    free(perm);
    return len;
}
