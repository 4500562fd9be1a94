/* vjp_lapack.c - gradient rules of ops.def's "linalg via LAPACK" rows, in
 * tjit ops (so they trace like any other op), as PyTorch's (Y the result, G
 * its gradient, ^-T the inverse transposed):
 *
 *   inv           -Y^T G Y^T
 *   det           (G det) A^-T
 *   slogdet       G A^-T; its sign: zero (piecewise constant)
 *   solve         gB = solve(A^T, G), gA = -gB X^T
 *   cholesky      L^-T P L^-1, P = (T + tril(T, -1)^T) / 2, T = tril(L^T G)
 *                 (Murray 2016; upper: L = U^T, G^T)
 *   qr (m >= n)   (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q, copyltu(M)
 *                 the symmetric matrix of M's lower triangle; qr_q and qr_r
 *                 each give their part (the other gradient zero). m < n:
 *                 A = [X | Y], R = [U | V]: gY = Q gV, gX the square rule
 *                 with gQ + Y gV^T.
 * A singular matrix has no gradient here (det's and slogdet's need A^-1). */
#include "autograd.h"

#define X (c->in[0])
#define Y (c->out)

static tj_tensor *mT(tj_tensor *t) { return t ? tj_transpose(t, -1, -2) : NULL; }
static tj_tensor *mat_of(tj_tensor *t) { return t ? tj_unsqueeze(tj_unsqueeze(t, -1), -1) : NULL; }

AG_VJP(inv)
{
    tj_tensor *yt = mT(Y);
    AG_SET(0, tj_neg(tj_matmul(tj_matmul(yt, g), yt)));
    return 0;
}

AG_VJP(det) { AG_SET(0, tj_mul(mat_of(tj_mul(g, Y)), mT(tj_inv(X)))); return 0; }
AG_VJP(slogdet) { AG_SET(0, tj_mul(mat_of(g), mT(tj_inv(X)))); return 0; }
AG_VJP(slogdet_sign) { AG_SET(0, tj_zeros(X->dtype, X->ndim, X->shape)); return 0; }

AG_VJP(solve)
{
    tj_tensor *a = c->in[0], *b = c->in[1];
    bool vec = ir_solve_vector_rhs(a->ndim, a->shape, b->ndim, b->shape);
    /* a vector right-hand side as an n x 1 matrix, so that A^T's batch may differ */
    tj_tensor *g2 = vec ? tj_unsqueeze(g, -1) : g, *x2 = vec ? tj_unsqueeze(Y, -1) : Y;
    tj_tensor *gb = tj_solve(mT(a), g2);
    if (c->need[1])
        AG_SET(1, vec ? tj_squeeze(gb, (int[]){-1}, 1) : gb);
    AG_SET(0, tj_neg(tj_matmul(gb, mT(x2))));
    return 0;
}

AG_VJP(cholesky)
{
    bool upper = c->a->a[0].i[0] != 0;
    tj_tensor *L = upper ? mT(Y) : Y, *gl = upper ? mT(g) : g;
    tj_tensor *t = tj_tril(tj_matmul(mT(L), gl), 0);
    tj_tensor *p = tj_mul_s(tj_add(t, mT(tj_tril(t, -1))), 0.5);
    tj_tensor *li = tj_inv(L);
    AG_SET(0, tj_matmul(tj_matmul(mT(li), p), li));
    return 0;
}

/* gA of A = QR for a square or tall A (m >= n) given gQ or gR (the other
 * NULL: zero). */
static tj_tensor *qr_grad_tall(tj_tensor *q, tj_tensor *r, tj_tensor *gq, tj_tensor *gr)
{
    tj_tensor *mm = gr ? tj_matmul(r, mT(gr)) : NULL;
    if (gq) {
        tj_tensor *qq = tj_matmul(mT(gq), q);
        mm = mm ? tj_sub(mm, qq) : tj_neg(qq);
    }
    tj_tensor *sym = tj_add(tj_tril(mm, 0), mT(tj_tril(mm, -1)));
    tj_tensor *top = tj_matmul(q, sym);
    if (gq)
        top = tj_add(gq, top);
    return tj_matmul(top, mT(tj_inv(r)));
}

/* A wide A = [X | Y] (m < n) has Q R = A with R = [U | V], X = Q U square:
 * gY = Q gV, and X's gradient is the square one with gQ + Y gV^T (as
 * TensorFlow's QrGrad). */
static tj_tensor *qr_grad(const ag_ctx *c, tj_tensor *gq, tj_tensor *gr)
{
    int64_t m = X->shape[X->ndim - 2], n = X->shape[X->ndim - 1];
    tj_tensor *r = NULL, *q = tj_qr(X, &r);
    if (!q)
        return NULL;
    if (m >= n)
        return qr_grad_tall(q, r, gq, gr);
    tj_tensor *u = tj_narrow(r, -1, 0, m), *y = tj_narrow(X, -1, m, n - m);
    tj_tensor *gu = gr ? tj_narrow(gr, -1, 0, m) : NULL, *gv = gr ? tj_narrow(gr, -1, m, n - m) : NULL;
    if (gv) {
        tj_tensor *ygv = tj_matmul(y, mT(gv));
        gq = gq ? tj_add(gq, ygv) : ygv;
    }
    tj_tensor *parts[2] = {qr_grad_tall(q, u, gq, gu),
                           gv ? tj_matmul(q, gv) : tj_zeros(X->dtype, y->ndim, y->shape)};
    return tj_cat(parts, 2, -1);
}

AG_VJP(qr_q) { AG_SET(0, qr_grad(c, g, NULL)); return 0; }
AG_VJP(qr_r) { AG_SET(0, qr_grad(c, NULL, g)); return 0; }
