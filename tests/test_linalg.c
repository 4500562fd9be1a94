/* test_linalg.c - ops.def's "linalg via LAPACK" rows (inv, solve, det,
 * slogdet, slogdet_sign, cholesky, qr_q, qr_r) against PyTorch's
 * torch.linalg (tests/golden/linalg, scripts/golden/linalg.py): batched, f32
 * and f64, strided inputs, f16 computed in f32, empty matrices, compiled ==
 * eager, a compiled training step (joint forward and backward) == eager;
 * gradients against PyTorch's (f64 finite differences: the gradcheck
 * graph linalg_lapack of tests/grad/cases.tir, test_autograd.c);
 * and every error: integer dtypes, fewer than 2 dims, non-square, solve's
 * dtype, row and batch mismatches, a singular matrix (inv, solve: the batch
 * element and pivot named), not positive-definite (cholesky). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../ir/graph.h"
#include "util.h"

static tj_tensor *G(const char *dt, const char *name)
{
    char full[160];
    snprintf(full, sizeof full, "%s.%s", dt, name);
    return tu_golden("linalg", full);
}

static const char *dts[] = {"f32", "f64"};
static double rtol(int k) { return k == 0 ? 2e-5 : 1e-12; }
static double abstol(int k) { return k == 0 ? 2e-5 : 1e-12; }

static void test_inv_det(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        tj_scope_begin();
        tj_tensor *a = G(dts[k], "a");
        tu_assert_close(tj_inv(a), G(dts[k], "inv"), rtol(k), abstol(k));
        tu_assert_close(tj_det(a), G(dts[k], "det"), rtol(k), abstol(k));
        tj_tensor *sign = NULL, *a2 = G(dts[k], "a2");
        tu_assert_close(tj_slogdet(a2, &sign), G(dts[k], "logabsdet"), rtol(k), abstol(k));
        tu_assert_close(sign, G(dts[k], "sign"), 0, 0);
        assert_non_null(tj_slogdet(a2, NULL));
        /* a transposed (strided) input: inv(A^T) = inv(A)^T, det(A^T) = det(A) */
        tj_tensor *at = tj_transpose(a, -1, -2);
        tu_assert_close(tj_transpose(tj_inv(at), -1, -2), G(dts[k], "inv"), rtol(k), abstol(k));
        tu_assert_close(tj_det(at), G(dts[k], "det"), rtol(k), abstol(k));
        tj_scope_end();
    }
}

static void test_solve(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        tj_scope_begin();
        tj_tensor *a = G(dts[k], "a");
        tu_assert_close(tj_solve(a, G(dts[k], "b")), G(dts[k], "solve"), rtol(k) * 10, abstol(k) * 10);
        tu_assert_close(tj_solve(a, G(dts[k], "bv")), G(dts[k], "solve_v"), rtol(k) * 10, abstol(k) * 10);
        tu_assert_close(tj_solve(a, G(dts[k], "bb")), G(dts[k], "solve_b"), rtol(k) * 10, abstol(k) * 10);
        tj_scope_end();
    }
}

static void test_cholesky_qr(void **state)
{
    (void)state;
    const char *tags[] = {"qr_tall", "qr_wide", "qr_sq"};
    for (int k = 0; k < 2; k++) {
        tj_scope_begin();
        tj_tensor *p = G(dts[k], "spd");
        tu_assert_close(tj_cholesky(p, false), G(dts[k], "chol"), rtol(k), abstol(k));
        tu_assert_close(tj_cholesky(p, true), G(dts[k], "chol_u"), rtol(k), abstol(k));
        for (int t = 0; t < 3; t++) {
            char qn[32], rn[32];
            snprintf(qn, sizeof qn, "%s.q", tags[t]);
            snprintf(rn, sizeof rn, "%s.r", tags[t]);
            tj_tensor *r = NULL, *q = tj_qr(G(dts[k], tags[t]), &r);
            tu_assert_close(q, G(dts[k], qn), rtol(k) * 10, abstol(k) * 10);
            tu_assert_close(r, G(dts[k], rn), rtol(k) * 10, abstol(k) * 10);
        }
        tj_scope_end();
    }
}

/* f16 inputs compute in f32 and round once; 0x0 matrices and empty batches. */
static void test_half_and_empty(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *a = G("f32", "a"), *ah = tj_cast(a, TJ_F16);
    tj_tensor *want = tj_cast(tj_inv(tj_cast(ah, TJ_F32)), TJ_F16);
    tu_assert_close(tj_inv(ah), want, 0, 0);
    tj_tensor *e = tj_zeros(TJ_F32, 3, (int64_t[]){2, 0, 0});
    tj_tensor *d = tj_det(e), *sign = NULL, *l = tj_slogdet(e, &sign);
    tu_assert_close(d, tj_full(TJ_F32, 1, (int64_t[]){2}, 1), 0, 0);
    tu_assert_close(l, tj_zeros(TJ_F32, 1, (int64_t[]){2}), 0, 0);
    tu_assert_close(sign, tj_full(TJ_F32, 1, (int64_t[]){2}, 1), 0, 0);
    assert_int_equal(tj_numel(tj_inv(e)), 0);
    assert_int_equal(tj_numel(tj_cholesky(e, false)), 0);
    tj_tensor *eb = tj_zeros(TJ_F64, 3, (int64_t[]){0, 3, 3}), *r = NULL;
    assert_int_equal(tj_numel(tj_inv(eb)), 0);
    assert_int_equal(tj_numel(tj_qr(eb, &r)), 0);
    assert_int_equal(tj_numel(r), 0);
    /* a singular matrix: det 0, slogdet (0, -inf), not an error */
    tj_tensor *s = tu_tensor(TJ_F64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 2, 4});
    tu_assert_close(tj_det(s), tj_zeros(TJ_F64, 0, NULL), 0, 0);
    l = tj_slogdet(s, &sign);
    assert_true(isinf(tj_item(l)) && tj_item(l) < 0);
    assert_true(tj_item(sign) == 0);
    tj_scope_end();
}

static void test_errors(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *i = tj_zeros(TJ_I64, 2, (int64_t[]){3, 3});
    tu_assert_error(tj_inv(i), "inv", "floating-point", "i64", NULL);
    tu_assert_error(tj_det(i), "det", "floating-point", NULL);
    tu_assert_error(tj_slogdet(i, NULL), "slogdet", "floating-point", NULL);
    tu_assert_error(tj_cholesky(i, false), "cholesky", "floating-point", NULL);
    tu_assert_error(tj_qr(i, NULL), "qr_q", "floating-point", NULL);
    tu_assert_error(tj_solve(i, i), "solve", "floating-point", NULL);
    tj_tensor *v = tj_zeros(TJ_F32, 1, (int64_t[]){3});
    tu_assert_error(tj_inv(v), "inv", "at least 2 dims", NULL);
    tu_assert_error(tj_qr(v, NULL), "qr_q", "at least 2 dims", NULL);
    tj_tensor *ns = tj_zeros(TJ_F32, 3, (int64_t[]){2, 3, 4});
    tu_assert_error(tj_inv(ns), "inv", "square", "f32[2,3,4]", NULL);
    tu_assert_error(tj_det(ns), "det", "square", NULL);
    tu_assert_error(tj_cholesky(ns, true), "cholesky", "square", NULL);
    tu_assert_error(tj_solve(ns, v), "solve", "square", NULL);
    /* solve: dtype, rows, batch */
    tj_tensor *a = tj_zeros(TJ_F32, 3, (int64_t[]){2, 3, 3});
    tu_assert_error(tj_solve(a, tj_zeros(TJ_F64, 2, (int64_t[]){3, 2})), "solve", "one dtype", NULL);
    tu_assert_error(tj_solve(a, tj_zeros(TJ_F32, 2, (int64_t[]){4, 2})), "solve", "4 rows",
                    "f32[2,3,3]", "f32[4,2]", NULL);
    tu_assert_error(tj_solve(a, tj_zeros(TJ_F32, 3, (int64_t[]){3, 3, 2})), "solve", "batch dims",
                    NULL);
    tu_assert_error(tj_solve(a, tj_zeros(TJ_F32, 0, NULL)), "solve", "0-D", NULL);
    /* singular: the batch element and the pivot */
    tj_tensor *s = tu_tensor(TJ_F64, 3, (int64_t[]){2, 2, 2}, (double[]){1, 0, 0, 1, 1, 2, 2, 4});
    tu_assert_error(tj_inv(s), "inv", "singular", "batch element 1 of 2", "U[1,1]", NULL);
    tu_assert_error(tj_solve(s, tj_ones(TJ_F64, 1, (int64_t[]){2})), "solve", "singular",
                    "batch element 1", NULL);
    tj_tensor *sf = tj_cast(s, TJ_F32);
    tu_assert_error(tj_inv(sf), "inv", "singular", NULL);
    /* not positive-definite: the leading minor */
    tj_tensor *np = tu_tensor(TJ_F64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 2, 1});
    tu_assert_error(tj_cholesky(np, false), "cholesky", "not positive-definite",
                    "batch element 0 of 1", "order 2", NULL);
    tu_assert_error(tj_cholesky(np, true), "cholesky", "not positive-definite", NULL);
    tj_scope_end();
}

/* Symbolic sizes (dynamic shapes): a square [s0,s0] is one; qr needs concrete sizes. */
static void test_symbolic(void **state)
{
    (void)state;
    ir_type t = {TJ_F32, 2, false, {IR_SYM(0), IR_SYM(0)}}, out;
    const ir_type *in[2] = {&t, &t};
    ir_attrs at = {0};
    char err[256];
    assert_int_equal(ir_infer(OP_inv, in, 1, &at, &out, err, sizeof err), 0);
    assert_int_equal(out.shape[0], IR_SYM(0));
    assert_int_equal(ir_infer(OP_solve, in, 2, &at, &out, err, sizeof err), 0);
    assert_int_not_equal(ir_infer(OP_qr_q, in, 1, &at, &out, err, sizeof err), 0);
    assert_non_null(strstr(err, "concrete"));
    t.shape[1] = 3;
    assert_int_not_equal(ir_infer(OP_det, in, 1, &at, &out, err, sizeof err), 0);
    assert_non_null(strstr(err, "square"));
}

/* ---- compiled == eager --------------------------------------------------------------- */

static tj_tensor *model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    tj_tensor *a = args[0], *b = args[1], *sign = NULL, *r = NULL;
    tj_tensor *x = tj_add(tj_solve(a, b), tj_matmul(tj_inv(a), b));
    tj_tensor *l = tj_slogdet(a, &sign);
    tj_tensor *d = tj_mul(tj_det(a), tj_mul(sign, tj_exp(l)));
    tj_tensor *spd = tj_add(tj_matmul(a, tj_transpose(a, -1, -2)), a);
    tj_tensor *c = tj_cholesky(tj_add(spd, tj_transpose(spd, -1, -2)), false);
    tj_tensor *q = tj_qr(a, &r);
    tj_tensor *s = tj_add(tj_sum(tj_matmul(q, r), NULL, 0, false), tj_sum(c, NULL, 0, false));
    return tj_add(tj_add(tj_sum(x, NULL, 0, false), tj_sum(d, NULL, 0, false)), s);
}

static void test_compiled(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        tj_scope_begin();
        tj_tensor *args[2] = {G(dts[k], "a"), G(dts[k], "b")};
        tj_compiled *m = tj_compile(model, NULL, NULL);
        assert_non_null(m);
        tj_tensor *got = tj_call(m, args, 2);
        assert_non_null(got);
        tu_assert_close(got, model(NULL, args, 2), k == 0 ? 1e-5 : 1e-12, 0);
        char *ex = tj_explain(m);
        assert_non_null(ex);
        free(ex);
        /* a singular input at run time: the compiled call fails with the message */
        tj_tensor *z[2] = {tj_zeros_like(args[0]), args[1]};
        tu_assert_error(tj_call(m, z, 2), "singular", NULL);
        tj_compiled_free(m);
        tj_scope_end();
    }
}

/* A compiled training step through the LAPACK ops: w requires grad; the
 * compiled backward (the joint graph, VJPs traced) gives eager's gradient. */
static tj_tensor *train_fn(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *w = ctx, *a = tj_add(args[0], w), *sign = NULL;
    tj_tensor *x = tj_solve(a, args[1]), *l = tj_slogdet(a, &sign);
    tj_tensor *spd = tj_add(tj_matmul(a, tj_transpose(a, -1, -2)), tj_eye(tj_dtype_of(a), 4, -1));
    tj_tensor *r = NULL, *q = tj_qr(tj_cholesky(spd, false), &r);
    tj_tensor *t = tj_add(tj_sum(tj_mul(x, x), NULL, 0, false), tj_sum(l, NULL, 0, false));
    tj_tensor *d = tj_unsqueeze(tj_unsqueeze(tj_det(a), -1), -1);
    t = tj_add(t, tj_sum(tj_mul(tj_inv(a), d), NULL, 0, false));
    return tj_add(t, tj_add(tj_sum(q, NULL, 0, false), tj_sum(r, NULL, 0, false)));
}

static void test_compiled_training(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *args[2] = {G("f64", "a"), G("f64", "b")};
    tj_tensor *w = tj_zeros(TJ_F64, 2, (int64_t[]){4, 4});
    assert_int_equal(tj_requires_grad(w, true), 0);
    assert_int_equal(tj_backward(train_fn(w, args, 2)), 0);
    tj_tensor *want = tj_clone((tj_tensor *)tj_grad(w));
    tj_zero_grad(w);
    tj_compiled *m = tj_compile(train_fn, w, NULL);
    assert_non_null(m);
    for (int k = 0; k < 2; k++) {   /* traced once, run twice */
        tj_zero_grad(w);
        tj_tensor *y = tj_call(m, args, 2);
        assert_non_null(y);
        assert_int_equal(tj_backward(y), 0);
        tu_assert_close((tj_tensor *)tj_grad(w), want, 1e-9, 1e-9);
    }
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(m, &st), 0);
    assert_int_equal(st.backward.graphs, 1);
    assert_int_equal((int)st.backward.calls, 2);
    assert_int_equal(st.backward.breaks, 0);
    tj_compiled_free(m);
    tj_scope_end();
}

/* ---- gradients: PyTorch's (f64) ------------------------------------------------------ */

typedef tj_tensor *(*op_fn)(tj_tensor **x);
static tj_tensor *f_inv(tj_tensor **x) { return tj_inv(x[0]); }
static tj_tensor *f_det(tj_tensor **x) { return tj_det(x[0]); }
static tj_tensor *f_slogdet(tj_tensor **x) { return tj_slogdet(x[0], NULL); }
static tj_tensor *f_solve(tj_tensor **x) { return tj_solve(x[0], x[1]); }
static tj_tensor *f_chol(tj_tensor **x) { return tj_cholesky(x[0], false); }
static tj_tensor *f_chol_u(tj_tensor **x) { return tj_cholesky(x[0], true); }
static tj_tensor *f_qr_q(tj_tensor **x) { return tj_qr(x[0], NULL); }
static tj_tensor *f_qr_r(tj_tensor **x)
{
    tj_tensor *r = NULL;
    return tj_qr(x[0], &r) ? r : NULL;
}

static const struct {
    const char *name;
    int nin;
    op_fn fn;
} grads[] = {
    {"inv", 1, f_inv},           {"det", 1, f_det},         {"slogdet", 1, f_slogdet},
    {"solve", 2, f_solve},       {"solve_v", 2, f_solve},   {"cholesky", 1, f_chol},
    {"cholesky_u", 1, f_chol_u}, {"qr_q", 1, f_qr_q},       {"qr_r", 1, f_qr_r},
    {"qr_q_wide", 1, f_qr_q},    {"qr_r_wide", 1, f_qr_r},
};

static tj_tensor *loss(op_fn fn, tj_tensor **x, tj_tensor *r)
{
    return tj_sum(tj_mul(fn(x), r), NULL, 0, false);
}

static void test_grad_golden(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof grads / sizeof *grads; c++) {
        tj_scope_begin();
        char n[64];
        tj_tensor *x[2];
        for (int k = 0; k < grads[c].nin; k++) {
            snprintf(n, sizeof n, "%s.x%d", grads[c].name, k);
            x[k] = G("grad", n);
            assert_int_equal(tj_requires_grad(x[k], true), 0);
        }
        snprintf(n, sizeof n, "%s.r", grads[c].name);
        if (tj_backward(loss(grads[c].fn, x, G("grad", n))) != 0)
            fail_msg("%s: %s", grads[c].name, tj_last_error());
        for (int k = 0; k < grads[c].nin; k++) {
            snprintf(n, sizeof n, "%s.g%d", grads[c].name, k);
            tu_assert_close((tj_tensor *)tj_grad(x[k]), G("grad", n), 1e-8, 1e-10);
        }
        tj_scope_end();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inv_det),       cmocka_unit_test(test_solve),
        cmocka_unit_test(test_cholesky_qr),   cmocka_unit_test(test_half_and_empty),
        cmocka_unit_test(test_errors),        cmocka_unit_test(test_compiled),
        cmocka_unit_test(test_compiled_training), cmocka_unit_test(test_symbolic),
        cmocka_unit_test(test_grad_golden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
