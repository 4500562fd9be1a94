/* k_conv.c - eager kernels: conv2d, max_pool2d, avg_pool2d (to be written). */
#include "kernels.h"

int rt_k_conv2d(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_max_pool2d(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_avg_pool2d(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

