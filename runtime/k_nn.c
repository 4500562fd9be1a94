/* k_nn.c - eager kernels: embedding, dropout, sdpa, cross_entropy (to be written). */
#include "kernels.h"

int rt_k_embedding(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_dropout(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_sdpa(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_cross_entropy(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

