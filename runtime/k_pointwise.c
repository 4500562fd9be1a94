/* k_pointwise.c - eager kernels: where, lerp, clamp, cast (to be written). */
#include "kernels.h"

int rt_k_unary(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_binary(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_where(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_lerp(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_clamp(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_cast(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

