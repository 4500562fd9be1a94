/* k_matmul.c - eager kernels: matmul, linear (to be written). */
#include "kernels.h"

int rt_k_matmul(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_linear(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

