/* k_lapack.c - eager kernels of ops.def's "linalg via LAPACK" rows: inv,
 * solve, det, slogdet, slogdet_sign, cholesky, qr_q, qr_r, through the LAPACK
 * routines OpenBLAS carries (s/d getrf, getrs, potrf, geqrf, orgqr; looked
 * up with rt_blas_sym, as the GEMMs are: OpenBLAS is loaded at run time).
 *
 * The input is copied once into a contiguous work tensor of its dtype (f32
 * or f64; f16/bf16 arrive widened to f32, runtime/k_half.c), each matrix of
 * the batch goes through LAPACK in turn (OpenBLAS threads inside a call),
 * and the result is converted into out. LAPACK is column-major: a row-major
 * matrix read column-major is its transpose, which the kernels use instead
 * of copying where they can:
 *
 *   det, slogdet  LU of A^T (same determinant)
 *   inv           LU of A^T, then inv(A^T) = getrs(I), read row-major: inv(A)
 *   solve         LU of A^T, getrs('T') solves A X = B (B, X transposed copies)
 *   cholesky      potrf('U') of A^T reads A's lower triangle and leaves L
 *                 row-major (upper: potrf('L'), A's upper triangle, U), as
 *                 torch.linalg.cholesky does
 *   qr            geqrf + orgqr on a column-major copy (reduced mode)
 *
 * A singular matrix (inv, solve) or one that is not positive-definite
 * (cholesky) fails with the batch element and the pivot or minor LAPACK
 * names; det and slogdet give 0 and (0, -inf) for a singular one.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "iter.h"
#include "kernels.h"

typedef void (*getrf_fn)(const int *m, const int *n, void *a, const int *lda, int *ipiv,
                         int *info);
typedef void (*getrs_fn)(const char *trans, const int *n, const int *nrhs, const void *a,
                         const int *lda, const int *ipiv, void *b, const int *ldb, int *info,
                         size_t ltrans);
typedef void (*potrf_fn)(const char *uplo, const int *n, void *a, const int *lda, int *info,
                         size_t luplo);
typedef void (*geqrf_fn)(const int *m, const int *n, void *a, const int *lda, void *tau,
                         void *work, const int *lwork, int *info);
typedef void (*orgqr_fn)(const int *m, const int *n, const int *k, void *a, const int *lda,
                         const void *tau, void *work, const int *lwork, int *info);

/* The routine "<s|d><name>_" for dt; NULL with an error when missing. */
static void *routine(tj_dtype dt, const char *name)
{
    char full[32];
    snprintf(full, sizeof full, "%c%s_", dt == TJ_F64 ? 'd' : 's', name);
    return rt_blas_sym(full);
}

static double get(const void *p, bool dbl, int64_t k)
{
    return dbl ? ((const double *)p)[k] : (double)((const float *)p)[k];
}

static void put(void *p, bool dbl, int64_t k, double v)
{
    if (dbl)
        ((double *)p)[k] = v;
    else
        ((float *)p)[k] = (float)v;
}

/* A contiguous copy of t broadcast to shape (nd dims), in dtype dt. */
static tj_tensor *work_of(const tj_tensor *t, tj_dtype dt, int nd, const int64_t *shape)
{
    tj_tensor *w = rt_tensor_new(dt, nd, shape);
    if (w && rt_convert(w, t) != 0) {
        tj_release(w);
        return NULL;
    }
    return w;
}

static int fits(int64_t n, const char *what)
{
    if (n > INT_MAX) {
        rt_error("%s of %lld exceeds LAPACK's limit of %d", what, (long long)n, INT_MAX);
        return -1;
    }
    return 0;
}

/* The matrices of a work tensor: count, rows, columns. */
typedef struct mats {
    int64_t nb, m, n;
    size_t esz;
    bool dbl;
} mats;

static mats mats_of(const tj_tensor *t)
{
    mats M = {1, t->shape[t->ndim - 2], t->shape[t->ndim - 1], tj_dtype_size(t->dtype),
              t->dtype == TJ_F64};
    for (int d = 0; d < t->ndim - 2; d++)
        M.nb *= t->shape[d];
    return M;
}

/* Writes work into out and releases work; rc passes through. */
static int finish(tj_tensor *out, tj_tensor *work, int rc)
{
    if (rc == 0 && work)
        rc = rt_convert(out, work);
    tj_release(work);
    return rc;
}

/* ---- LU: inv, solve, det, slogdet ---------------------------------------------------- */

static int singular(const char *what, int64_t b, int64_t nb, int info)
{
    rt_error("%s is singular: in batch element %lld of %lld, U[%d,%d] of its LU factorization "
             "is zero",
             what, (long long)b, (long long)nb, info - 1, info - 1);
    return -1;
}

int rt_k_inv(RT_KERNEL_ARGS)
{
    (void)op, (void)nin, (void)a;
    tj_tensor *x = in[0];
    tj_tensor *w = work_of(x, x->dtype, x->ndim, x->shape);
    if (!w)
        return -1;
    mats M = mats_of(w);
    if (M.nb == 0 || M.n == 0)
        return finish(out, w, 0);
    getrf_fn getrf = fits(M.n, "a matrix size") ? NULL : (getrf_fn)routine(x->dtype, "getrf");
    getrs_fn getrs = getrf ? (getrs_fn)routine(x->dtype, "getrs") : NULL;
    int n = (int)M.n, info = 0, *ipiv = getrs ? malloc((size_t)n * sizeof *ipiv) : NULL;
    void *lu = ipiv ? malloc((size_t)(n * M.n) * M.esz) : NULL;
    int rc = -1;
    if (!lu) {
        if (getrs)
            rt_error("out of memory");
        goto done;
    }
    for (int64_t b = 0; b < M.nb; b++) {
        char *mat = (char *)rt_ptr(w) + b * M.n * M.n * (int64_t)M.esz;
        memcpy(lu, mat, (size_t)(n * M.n) * M.esz);
        getrf(&n, &n, lu, &n, ipiv, &info);
        if (info > 0) {
            singular("the matrix", b, M.nb, info);
            goto done;
        }
        for (int64_t k = 0; k < M.n * M.n; k++)   /* the identity, then inv(A^T) over it */
            put(mat, M.dbl, k, k % (M.n + 1) == 0);
        getrs("N", &n, &n, lu, &n, ipiv, mat, &n, &info, 1);
    }
    rc = 0;
done:
    free(lu);
    free(ipiv);
    return finish(out, w, rc);
}

/* B (n x k per matrix, row-major) to and from column-major. */
static void transpose(void *dst, const void *src, int64_t rows, int64_t cols, bool dbl)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            put(dst, dbl, j * rows + i, get(src, dbl, i * cols + j));
}

int rt_k_solve(RT_KERNEL_ARGS)
{
    (void)op, (void)nin, (void)a;
    tj_tensor *A = in[0], *B = in[1];
    bool vec = ir_solve_vector_rhs(A->ndim, A->shape, B->ndim, B->shape);
    int64_t shape[TJ_MAX_DIMS + 1];
    int nd = out->ndim - (vec ? 1 : 2);
    memcpy(shape, out->shape, sizeof out->shape);
    int64_t n = A->shape[A->ndim - 1], k = vec ? 1 : out->shape[out->ndim - 1];
    shape[nd] = shape[nd + 1] = n;
    tj_tensor *wa = work_of(A, A->dtype, nd + 2, shape);
    tj_tensor *wb = wa ? work_of(B, A->dtype, out->ndim, out->shape) : NULL;
    if (!wb) {
        tj_release(wa);
        return -1;
    }
    mats M = mats_of(wa);
    int rc = -1, ni = (int)n, ki = (int)k, info = 0, *ipiv = NULL;
    void *bc = NULL;
    if (M.nb == 0 || n == 0 || k == 0) {
        rc = 0;
        goto done;
    }
    getrf_fn getrf = fits(n, "a matrix size") || fits(k, "a right-hand side count")
                         ? NULL
                         : (getrf_fn)routine(A->dtype, "getrf");
    getrs_fn getrs = getrf ? (getrs_fn)routine(A->dtype, "getrs") : NULL;
    ipiv = getrs ? malloc((size_t)n * sizeof *ipiv) : NULL;
    bc = ipiv ? malloc((size_t)(n * k) * M.esz) : NULL;
    if (!bc) {
        if (getrs)
            rt_error("out of memory");
        goto done;
    }
    for (int64_t b = 0; b < M.nb; b++) {
        char *lu = (char *)rt_ptr(wa) + b * n * n * (int64_t)M.esz;
        char *x = (char *)rt_ptr(wb) + b * n * k * (int64_t)M.esz;
        getrf(&ni, &ni, lu, &ni, ipiv, &info);
        if (info > 0) {
            singular("A", b, M.nb, info);
            goto done;
        }
        transpose(bc, x, n, k, M.dbl);
        getrs("T", &ni, &ki, lu, &ni, ipiv, bc, &ni, &info, 1);
        transpose(x, bc, k, n, M.dbl);
    }
    rc = 0;
done:
    free(bc);
    free(ipiv);
    tj_release(wa);
    return finish(out, wb, rc);
}

/* det, log|det| or its sign of every matrix, from LU (a singular one: U has
 * an exact zero on its diagonal, LAPACK's info > 0). */
static int lu_det(ir_op op, tj_tensor *out, const tj_tensor *x)
{
    tj_tensor *w = work_of(x, x->dtype, x->ndim, x->shape);
    tj_tensor *r = w ? rt_tensor_new(TJ_F64, out->ndim, out->shape) : NULL;
    if (!r) {
        tj_release(w);
        return -1;
    }
    mats M = mats_of(w);
    double *res = rt_ptr(r);
    int n = (int)M.n, info = 0, *ipiv = NULL, rc = -1;
    getrf_fn getrf = NULL;
    if (M.nb > 0 && M.n > 0) {
        getrf = fits(M.n, "a matrix size") ? NULL : (getrf_fn)routine(x->dtype, "getrf");
        if (!getrf || !(ipiv = malloc((size_t)n * sizeof *ipiv))) {
            if (getrf)
                rt_error("out of memory");
            goto done;
        }
    }
    for (int64_t b = 0; b < M.nb; b++) {
        char *lu = (char *)rt_ptr(w) + b * M.n * M.n * (int64_t)M.esz;
        double sign = 1, logabs = 0, det = 1;
        if (n > 0)
            getrf(&n, &n, lu, &n, ipiv, &info);
        for (int i = 0; i < n; i++) {
            double u = get(lu, M.dbl, (int64_t)i * (M.n + 1));
            sign *= (ipiv[i] != i + 1 ? -1 : 1) * (u < 0 ? -1 : u > 0 ? 1 : 0);
            logabs += log(fabs(u));
            det *= u * (ipiv[i] != i + 1 ? -1 : 1);
        }
        res[b] = op == OP_det ? det : op == OP_slogdet ? (sign == 0 ? -INFINITY : logabs) : sign;
    }
    rc = 0;
done:
    free(ipiv);
    tj_release(w);
    return finish(out, r, rc);
}

int rt_k_det(RT_KERNEL_ARGS) { (void)nin, (void)a; return lu_det(op, out, in[0]); }
int rt_k_slogdet(RT_KERNEL_ARGS) { (void)nin, (void)a; return lu_det(op, out, in[0]); }
int rt_k_slogdet_sign(RT_KERNEL_ARGS) { (void)nin, (void)a; return lu_det(op, out, in[0]); }

/* ---- cholesky --------------------------------------------------------------------------- */

int rt_k_cholesky(RT_KERNEL_ARGS)
{
    (void)op, (void)nin;
    bool upper = a->a[0].i[0] != 0;
    tj_tensor *x = in[0];
    tj_tensor *w = work_of(x, x->dtype, x->ndim, x->shape);
    if (!w)
        return -1;
    mats M = mats_of(w);
    if (M.nb == 0 || M.n == 0)
        return finish(out, w, 0);
    potrf_fn potrf = fits(M.n, "a matrix size") ? NULL : (potrf_fn)routine(x->dtype, "potrf");
    if (!potrf)
        return finish(out, w, -1);
    int n = (int)M.n, info = 0;
    for (int64_t b = 0; b < M.nb; b++) {
        char *mat = (char *)rt_ptr(w) + b * M.n * M.n * (int64_t)M.esz;
        potrf(upper ? "L" : "U", &n, mat, &n, &info, 1);
        if (info > 0) {
            rt_error("the matrix is not positive-definite: in batch element %lld of %lld, its "
                     "leading minor of order %d is not positive",
                     (long long)b, (long long)M.nb, info);
            return finish(out, w, -1);
        }
        for (int64_t i = 0; i < M.n; i++)   /* the other triangle: zeros */
            for (int64_t j = 0; j < M.n; j++)
                if (upper ? j < i : j > i)
                    put(mat, M.dbl, i * M.n + j, 0);
    }
    return finish(out, w, 0);
}

/* ---- qr (reduced) ---------------------------------------------------------------------- */

static int qr(bool want_q, tj_tensor *out, const tj_tensor *x)
{
    tj_tensor *w = work_of(x, x->dtype, x->ndim, x->shape);
    tj_tensor *r = w ? rt_tensor_new(x->dtype, out->ndim, out->shape) : NULL;
    if (!r) {
        tj_release(w);
        return -1;
    }
    mats M = mats_of(w);
    int64_t k = M.m < M.n ? M.m : M.n;
    if (M.nb == 0 || k == 0) {   /* Q [m,0] or R [0,n]: empty */
        tj_release(w);
        return finish(out, r, 0);
    }
    int rc = -1, m = (int)M.m, n = (int)M.n, ki = (int)k, info = 0, lwork = -1;
    geqrf_fn geqrf = fits(M.m, "a matrix size") || fits(M.n, "a matrix size")
                         ? NULL
                         : (geqrf_fn)routine(x->dtype, "geqrf");
    orgqr_fn orgqr = geqrf ? (orgqr_fn)routine(x->dtype, "orgqr") : NULL;
    void *cm = orgqr ? malloc((size_t)(M.m * M.n + k) * M.esz) : NULL, *work = NULL;
    if (!cm) {
        if (orgqr)
            rt_error("out of memory");
        goto done;
    }
    void *tau = (char *)cm + M.m * M.n * (int64_t)M.esz;
    union { double d; float f; } q1 = {0}, q2 = {0};   /* workspace queries: the sizes asked for */
    geqrf(&m, &n, cm, &m, tau, &q1, &lwork, &info);
    orgqr(&m, &ki, &ki, cm, &m, tau, &q2, &lwork, &info);
    double s1 = M.dbl ? q1.d : q1.f, s2 = M.dbl ? q2.d : q2.f, best = s1 > s2 ? s1 : s2;
    lwork = best > n ? (int)best : n;
    if (!(work = malloc((size_t)lwork * M.esz))) {
        rt_error("out of memory");
        goto done;
    }
    for (int64_t b = 0; b < M.nb; b++) {
        const char *mat = (const char *)rt_ptr(w) + b * M.m * M.n * (int64_t)M.esz;
        char *res = (char *)rt_ptr(r) + b * rt_numel(r) / M.nb * (int64_t)M.esz;
        transpose(cm, mat, M.m, M.n, M.dbl);
        geqrf(&m, &n, cm, &m, tau, work, &lwork, &info);
        if (!want_q) {   /* R [k,n]: the upper triangle of the first k rows */
            for (int64_t i = 0; i < k; i++)
                for (int64_t j = 0; j < M.n; j++)
                    put(res, M.dbl, i * M.n + j, j < i ? 0 : get(cm, M.dbl, j * M.m + i));
            continue;
        }
        orgqr(&m, &ki, &ki, cm, &m, tau, work, &lwork, &info);
        transpose(res, cm, k, M.m, M.dbl);   /* Q [m,k] from its column-major form */
    }
    rc = 0;
done:
    free(work);
    free(cm);
    tj_release(w);
    return finish(out, r, rc);
}

int rt_k_qr_q(RT_KERNEL_ARGS) { (void)op, (void)nin, (void)a; return qr(true, out, in[0]); }
int rt_k_qr_r(RT_KERNEL_ARGS) { (void)op, (void)nin, (void)a; return qr(false, out, in[0]); }
