/* k_create.c - eager kernels: full, arange, rand, randn (to be written). */
#include "kernels.h"

int rt_k_full(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_arange(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_rand(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_randn(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

