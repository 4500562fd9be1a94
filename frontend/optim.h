/* optim.h - internal to the frontend: what the gradient scaler
 * (grad_scaler.c) needs of an optimizer (optim.c).
 */
#ifndef TJ_FE_OPTIM_H
#define TJ_FE_OPTIM_H

#include "../include/tjit.h"

/* The optimizer's parameters, all groups in order (borrowed); *n their count. */
tj_tensor *const *fe_optim_params(const tj_optimizer *o, int *n);
/* tj_optimizer_step with every write of a parameter or of the state masked:
 * where skip (a bool 0-dim tensor) is true, each keeps its value. skip NULL:
 * the plain step. */
int fe_optim_step(tj_optimizer *o, tj_tensor *skip);

#endif
