/* decomp_linalg.c - decompositions of the linear-algebra DCOMP rows (rules
 * in ir/infer_linalg.c) onto matmul, views and pointwise ops:
 *
 *   bmm, mv, dot   matmul (its rule covers these shapes)
 *   outer          a[:, None] * b[None, :]
 *   addmm, addmv, baddbmm   beta c + alpha (a b); beta 0 ignores c (NaN too),
 *                  as torch does; factors of 1 are left out
 *   tensordot      a permuted to [free.., contracted..] and flattened to
 *                  [Fa, K], b to [K, Fb], one matmul, reshaped to the result
 *   trace          the flattened matrix sliced with step M+1, summed
 *   cross          per component: a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0,
 *                  concatenated along dim
 */
#include "decomp.h"

static ir_node *b_slice(ps_builder *b, ir_node *x, int64_t dim, int64_t start, int64_t end,
                        int64_t step)
{
    ir_attrs a = {0};
    ir_attr_int(&a.a[0], dim);
    ir_attr_int(&a.a[1], start);
    ir_attr_int(&a.a[2], end);
    ir_attr_int(&a.a[3], step);
    return ps_b_op(b, OP_slice, &x, 1, &a);
}

ir_node *ps_decomp_bmm(PS_DECOMP_ARGS) { (void)n, (void)a; return b_matmul(b, in[0], in[1]); }
ir_node *ps_decomp_mv(PS_DECOMP_ARGS) { (void)n, (void)a; return b_matmul(b, in[0], in[1]); }
ir_node *ps_decomp_dot(PS_DECOMP_ARGS) { (void)n, (void)a; return b_matmul(b, in[0], in[1]); }

ir_node *ps_decomp_outer(PS_DECOMP_ARGS)
{
    (void)n, (void)a;
    return b_mul(b, ps_b_unsqueeze(b, in[0], 1), ps_b_unsqueeze(b, in[1], 0));
}

static ir_node *add_product(ps_builder *b, const ir_node *n, const ir_attrs *a,
                            ir_node *const *in)
{
    (void)n;
    double beta = a->a[0].f, alpha = a->a[1].f;
    ir_node *p = b_matmul(b, in[1], in[2]);
    if (alpha != 1)
        p = b_mul_s(b, p, alpha);
    if (beta == 0)
        return p;
    ir_node *c = beta == 1 ? in[0] : b_mul_s(b, in[0], beta);
    return b_add(b, c, p);
}

ir_node *ps_decomp_addmm(PS_DECOMP_ARGS) { return add_product(b, n, a, in); }
ir_node *ps_decomp_addmv(PS_DECOMP_ARGS) { return add_product(b, n, a, in); }
ir_node *ps_decomp_baddbmm(PS_DECOMP_ARGS) { return add_product(b, n, a, in); }

/* x permuted to put the dims of mask last (contracted_last) or first, and
 * flattened to [free, contracted] or [contracted, free]. */
static ir_node *flatten_for(ps_builder *b, ir_node *x, const ir_attr *dims, bool contracted_last)
{
    if (!x)
        return NULL;
    int nd = x->type.ndim, np = 0, nc = dims->n;
    int64_t perm[TJ_MAX_DIMS], fsz = 1, csz = 1;
    uint32_t mask = 0;
    for (int k = 0; k < nc; k++)
        mask |= 1u << ir_norm_dim(dims->i[k], nd);
    if (!contracted_last)
        for (int k = 0; k < nc; k++)
            perm[np++] = ir_norm_dim(dims->i[k], nd);
    for (int d = 0; d < nd; d++)
        if (!(mask >> d & 1))
            perm[np++] = d, fsz *= x->type.shape[d];
    if (contracted_last)
        for (int k = 0; k < nc; k++)
            perm[np++] = ir_norm_dim(dims->i[k], nd);
    for (int k = 0; k < nc; k++)
        csz *= x->type.shape[ir_norm_dim(dims->i[k], nd)];
    for (int d = 0; d < nd; d++)
        if (IR_IS_SYM(x->type.shape[d]))
            return ps_b_fail(b, "tensordot with a symbolic dim is not supported");
    int64_t shape[2] = {contracted_last ? fsz : csz, contracted_last ? csz : fsz};
    return ps_b_reshape(b, nd ? ps_b_permute(b, x, perm) : x, shape, 2);
}

ir_node *ps_decomp_tensordot(PS_DECOMP_ARGS)
{
    ir_node *p = b_matmul(b, flatten_for(b, in[0], &a->a[0], true),
                          flatten_for(b, in[1], &a->a[1], false));
    return ps_b_reshape(b, p, n->type.shape, n->type.ndim);
}

ir_node *ps_decomp_trace(PS_DECOMP_ARGS)
{
    (void)a;
    ir_node *x = in[0];
    int64_t r = x->type.shape[0], c = x->type.shape[1];
    if (IR_IS_SYM(r) || IR_IS_SYM(c))
        return ps_b_fail(b, "trace of a matrix with a symbolic dim is not supported");
    int64_t k = r < c ? r : c;
    ir_node *flat = ps_b_reshape(b, x, (int64_t[]){r * c}, 1);
    ir_node *diag = b_slice(b, flat, 0, 0, k ? (k - 1) * (c + 1) + 1 : 0, c + 1);
    return ps_b_cast(b, b_sum(b, diag, NULL, 0, false), n->type.dtype);
}

ir_node *ps_decomp_cross(PS_DECOMP_ARGS)
{
    int d = ir_norm_dim(a->a[0].i[0], n->type.ndim);
    ir_node *x[3], *y[3], *parts[3];
    for (int k = 0; k < 3; k++) {
        x[k] = b_slice(b, in[0], d, k, k + 1, 1);
        y[k] = b_slice(b, in[1], d, k, k + 1, 1);
    }
    for (int k = 0; k < 3; k++) {
        int i = (k + 1) % 3, j = (k + 2) % 3;
        parts[k] = b_sub(b, b_mul(b, x[i], y[j]), b_mul(b, x[j], y[i]));
    }
    ir_attrs ca = {0};
    ir_attr_int(&ca.a[0], d);
    return ps_b_op(b, OP_cat, parts, 3, &ca);
}
