/* pool.c - parallel_for (serial placeholder until the thread pool lands). */
#include "rt.h"

void rt_parallel_for(int64_t n, int64_t grain, rt_range_fn fn, void *ctx)
{
    (void)grain;
    if (n > 0)
        fn(ctx, 0, n);
}

int rt_threads(void) { return 1; }
int tj_num_threads(void) { return 1; }
void tj_set_num_threads(int n) { (void)n; }
