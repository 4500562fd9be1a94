/* optim_clip.c - gradient clipping (torch.nn.utils.clip_grad_norm_ and
 * clip_grad_value_): the gradients of a parameter list scaled or clamped in
 * place, in tjit ops under no_grad, so that inside a compiled training step
 * they are traced (the total norm stays a tensor: no tj_item, no break) and
 * the optimizer's step after them reads the clipped values.
 */
#include <math.h>
#include <stdlib.h>

#include "autograd.h"

static int check_params(const char *what, tj_tensor *const *params, int n)
{
    if (n < 0 || (n && !params)) {
        rt_error("%s: %d parameters", what, n);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        if (!params[k]) {
            if (!rt_has_error())
                rt_error("%s: parameter %d is NULL", what, k);
            return -1;
        }
    }
    return rt_check_live((tj_tensor **)params, n, what);
}

tj_tensor *tj_clip_grad_norm(tj_tensor *const *params, int n, double max_norm, double norm_type)
{
    const char *what = "clip_grad_norm";
    if (check_params(what, params, n) != 0)
        return NULL;
    if (!(max_norm >= 0) || isnan(norm_type) || norm_type <= 0) {
        rt_error("%s: max_norm %g, norm_type %g: max_norm must be >= 0 and norm_type > 0 "
                 "(INFINITY for the largest |g|)", what, max_norm, norm_type);
        return NULL;
    }
    tj_tensor **norms = malloc(sizeof *norms * ((size_t)n + 1));
    if (!norms) {
        rt_error("%s: out of memory", what);
        return NULL;
    }
    int m = 0;
    for (int k = 0; k < n; k++)
        if (tj_grad(params[k]))
            norms[m++] = params[k];
    tj_no_grad_begin();
    tj_tensor *total = NULL;
    if (m == 0) {
        total = tj_zeros(TJ_F64, 0, NULL);
        goto out;
    }
    /* each gradient's norm in its dtype (as torch), then all of them as one
     * vector in f64 */
    tj_scope_begin();
    for (int j = 0; j < m; j++)
        norms[j] = tj_cast(tj_vector_norm(tj_grad(norms[j]), norm_type, NULL, 0, false), TJ_F64);
    tj_tensor *all = tj_vector_norm(tj_stack(norms, m, 0), norm_type, NULL, 0, false);
    tj_tensor *coef = tj_clamp_max(tj_div(tj_scalar(TJ_F64, max_norm), tj_add_s(all, 1e-6)), 1.0);
    int rc = coef ? 0 : -1;
    for (int k = 0; k < n && rc == 0; k++) {
        tj_tensor *g = tj_grad(params[k]);
        if (g)
            rc = tj_copy_(g, tj_mul(g, tj_cast(coef, g->dtype)));
    }
    if (rc == 0)
        tj_retain(all);   /* the caller's, past the scope */
    tj_scope_end();
    total = rc == 0 ? rt_own(all) : NULL;
out:
    tj_no_grad_end();
    free(norms);
    return total;
}

int tj_clip_grad_value(tj_tensor *const *params, int n, double clip_value)
{
    const char *what = "clip_grad_value";
    if (check_params(what, params, n) != 0)
        return -1;
    if (!(clip_value >= 0)) {
        rt_error("%s: clip_value %g: must be >= 0", what, clip_value);
        return -1;
    }
    tj_no_grad_begin();
    tj_scope_begin();
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        tj_tensor *g = tj_grad(params[k]);
        if (g) {
            tj_tensor *c = tj_clamp(g, -clip_value, clip_value);
            rc = c ? tj_copy_(g, c) : -1;
        }
    }
    tj_scope_end();
    tj_no_grad_end();
    return rc;
}
