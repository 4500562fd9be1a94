/* alloc.c - 64-byte aligned allocation (placeholder until the caching allocator lands). */
#include <stdlib.h>

#include "rt.h"

void *rt_alloc(size_t nbytes)
{
    void *p = aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
    if (!p)
        rt_error("out of memory allocating %zu bytes", nbytes);
    return p;
}

void rt_free(void *p, size_t nbytes)
{
    (void)nbytes;
    free(p);
}

void rt_alloc_trim(void) {}
