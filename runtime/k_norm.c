/* k_norm.c - eager kernels: softmax, log_softmax, layer_norm, rms_norm, batch_norm (to be written). */
#include "kernels.h"

int rt_k_softmax(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_log_softmax(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_layer_norm(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_rms_norm(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

int rt_k_batch_norm(RT_KERNEL_ARGS)
{
    rt_error("not implemented yet");
    return -1;
}

