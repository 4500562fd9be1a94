/* k_move.c - eager kernels: copy, cat, gather, index_select, pad, flip (to be written). */
#include "kernels.h"

int rt_k_copy(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_cat(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_gather(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_index_select(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_pad(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_flip(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

