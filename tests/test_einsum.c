/* test_einsum.c - tj_einsum (frontend/ops_einsum.c) against torch.einsum
 * (tests/golden/einsum, scripts/golden/einsum.py): values eager in f64 and f32,
 * compiled equal to eager, gradients against PyTorch's and against f64 central
 * finite differences; and one test per malformed equation, each message naming
 * einsum, the operands and the equation. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

#define MAX_OPS 4

typedef struct ecase {
    char name[32], eq[64], views[MAX_OPS + 1];
    int n;
    tj_tensor *in[MAX_OPS];   /* the base operands (before their views) */
} ecase;

/* Reads the next case; false at the end. */
static bool next_case(FILE *f, ecase *c)
{
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        if (sscanf(line, "%31s %63s %d %4s", c->name, c->eq, &c->n, c->views) != 4)
            fail_msg("bad line in einsum/cases.txt: %s", line);
        for (char *p = c->eq; *p; p++)
            if (*p == '_')
                *p = ' ';
        char what[48];
        for (int k = 0; k < c->n; k++) {
            snprintf(what, sizeof what, "%s.in%d", c->name, k);
            c->in[k] = tu_golden("einsum", what);
        }
        return true;
    }
    return false;
}

static tj_tensor *golden(const ecase *c, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "%s.%s", c->name, what);
    return tu_golden("einsum", name);
}

/* The model: ctx is the case; args are the base operands. */
static tj_tensor *model(void *ctx, tj_tensor *const *args, int nargs)
{
    const ecase *c = ctx;
    tj_tensor *ops[MAX_OPS];
    for (int k = 0; k < nargs; k++)
        ops[k] = tu_view(args[k], c->views[k]);
    return tj_einsum(c->eq, ops, nargs);
}

static void test_values(void **state)
{
    (void)state;
    FILE *f = tu_golden_cases("einsum");
    ecase c;
    int cases = 0;
    while (next_case(f, &c)) {
        tj_tensor *want = golden(&c, "out");
        tj_tensor *got = model(&c, c.in, c.n);
        if (!got)
            fail_msg("%s (%s): %s", c.name, c.eq, tj_last_error());
        tu_assert_close(got, want, 1e-12, 1e-12);
        tj_tensor *in32[MAX_OPS];   /* f32 operands: within f32 rounding */
        for (int k = 0; k < c.n; k++)
            in32[k] = tj_cast(c.in[k], TJ_F32);
        tu_assert_close(model(&c, in32, c.n), tj_cast(want, TJ_F32), 1e-5, 1e-5);
        cases++;
    }
    fclose(f);
    assert_true(cases >= 20);
}

static void test_compiled_equals_eager(void **state)
{
    (void)state;
    FILE *f = tu_golden_cases("einsum");
    ecase c;
    while (next_case(f, &c)) {
        tj_tensor *want = model(&c, c.in, c.n);
        tj_compiled *m = tj_compile(model, &c, &(tj_compile_options){.name = "einsum"});
        assert_non_null(m);
        tj_tensor *got = tj_call(m, c.in, c.n);
        if (!got)
            fail_msg("%s (%s) compiled: %s", c.name, c.eq, tj_last_error());
        tu_assert_close(got, want, 1e-12, 1e-12);
        tj_compiled_free(m);
    }
    fclose(f);
}

/* L = sum(einsum(...) * r) in f64 at the operands' current values. */
static double loss(const ecase *c, tj_tensor *const *in, tj_tensor *r)
{
    tj_scope_begin();
    double v = tj_item(tj_sum(tj_mul(model((void *)c, in, c->n), r), NULL, 0, false));
    tj_scope_end();
    return v;
}

static void test_gradients(void **state)
{
    (void)state;
    FILE *f = tu_golden_cases("einsum");
    ecase c;
    while (next_case(f, &c)) {
        tj_tensor *r = golden(&c, "r"), *leaf[MAX_OPS];
        for (int k = 0; k < c.n; k++) {
            leaf[k] = tj_clone(c.in[k]);
            assert_int_equal(tj_requires_grad(leaf[k], true), 0);
        }
        tj_tensor *l = tj_sum(tj_mul(model(&c, leaf, c.n), r), NULL, 0, false);
        assert_non_null(l);
        assert_int_equal(tj_backward(l), 0);
        for (int k = 0; k < c.n; k++) {
            char what[16];
            snprintf(what, sizeof what, "grad%d", k);
            tj_tensor *g = tj_grad(leaf[k]);
            if (tj_numel(leaf[k]) == 0)
                continue;
            assert_non_null(g);
            tu_assert_close(g, golden(&c, what), 1e-10, 1e-12);
            /* central differences in f64, element by element */
            tj_tensor *x = tj_clone(c.in[k]);
            tj_tensor *xs[MAX_OPS];
            memcpy(xs, c.in, sizeof xs);
            xs[k] = x;
            double *p = tj_data(x), *gp = tj_data(tj_contiguous(g));
            for (int64_t e = 0; e < tj_numel(x); e++) {
                double h = 1e-6, v = p[e];
                p[e] = v + h;
                double up = loss(&c, xs, r);
                p[e] = v - h;
                double dn = loss(&c, xs, r);
                p[e] = v;
                double fd = (up - dn) / (2 * h);
                if (fabs(fd - gp[e]) > 1e-6 * (1 + fabs(fd)))
                    fail_msg("%s: d/d in%d[%lld]: tape %.10g, finite differences %.10g", c.name, k,
                             (long long)e, gp[e], fd);
            }
        }
    }
    fclose(f);
}

/* ---- malformed equations: one test each ------------------------------------------------ */

static tj_tensor *M(int64_t r, int64_t c) { return tj_rand(TJ_F32, 2, (int64_t[]){r, c}); }

static void expect(const char *eq, tj_tensor *const *ops, int n, const char *why)
{
    tu_assert_error(tj_einsum(eq, ops, n), "einsum(", why, NULL);
}

static void test_err_term_count(void **state)
{
    (void)state;
    tj_tensor *a = M(2, 3), *b = M(3, 4);
    expect("ij,jk", (tj_tensor *[]){a}, 1, "more terms than the 1 operands");
    expect("ij", (tj_tensor *[]){a, b}, 2, "2 operands for 1 terms");
}

static void test_err_arrows(void **state)
{
    (void)state;
    expect("ij->ij->i", (tj_tensor *[]){M(2, 3)}, 1, "more than one \"->\"");
}

static void test_err_not_a_letter(void **state)
{
    (void)state;
    expect("i1", (tj_tensor *[]){M(2, 3)}, 1, "'1' is not a letter (term 0)");
    expect("ij->i_", (tj_tensor *[]){M(2, 3)}, 1, "'_' is not a letter (term -1)");
}

static void test_err_dots(void **state)
{
    (void)state;
    expect("i.j", (tj_tensor *[]){M(2, 3)}, 1, "a '.' that is not part of one \"...\" in term 0");
    expect("...i...", (tj_tensor *[]){M(2, 3)}, 1, "in term 0");
}

static void test_err_dims(void **state)
{
    (void)state;
    expect("ijk", (tj_tensor *[]){M(2, 3)}, 1, "term 0 does not match operand 0's 2 dims");
    expect("i", (tj_tensor *[]){M(2, 3)}, 1, "term 0 does not match operand 0's 2 dims");
    expect("ij...k", (tj_tensor *[]){M(2, 3)}, 1, "term 0 does not match operand 0's 2 dims");
}

static void test_err_output_twice(void **state)
{
    (void)state;
    expect("ij->ii", (tj_tensor *[]){M(2, 3)}, 1, "output subscript 'i' appears twice");
}

static void test_err_output_unknown(void **state)
{
    (void)state;
    expect("ij->k", (tj_tensor *[]){M(2, 3)}, 1, "output subscript 'k' is in no input");
}

static void test_err_diagonal_sizes(void **state)
{
    (void)state;
    expect("ii->i", (tj_tensor *[]){M(2, 3)}, 1,
           "subscript 'i' repeats in operand 0 with two sizes");
}

static void test_err_sizes(void **state)
{
    (void)state;
    expect("ij,jk->ik", (tj_tensor *[]){M(2, 3), M(4, 5)}, 2,
           "subscript 'j' has sizes 3 and 4, which do not broadcast");
}

static void test_err_too_many_subscripts(void **state)
{
    (void)state;
    int64_t s5[5] = {1, 1, 1, 1, 1};
    tj_tensor *a = tj_rand(TJ_F32, 5, s5), *b = tj_rand(TJ_F32, 5, s5);
    expect("abcde,fghij->a", (tj_tensor *[]){a, b}, 2, "more than 8 distinct subscripts");
    expect("abcde,fghij", (tj_tensor *[]){a, b}, 2, "the output has more than 8 dims");
}

static void test_err_arguments(void **state)
{
    (void)state;
    tj_tensor *a = M(2, 3);
    tu_assert_error(tj_einsum(NULL, &a, 1), "einsum: needs an equation", NULL);
    tu_assert_error(tj_einsum("ij", NULL, 1), "einsum: needs an equation", NULL);
    tu_assert_error(tj_einsum("", (tj_tensor *[]){M(2, 3)}, 0), "einsum: needs an equation", NULL);
    char longeq[400];
    memset(longeq, 'i', sizeof longeq - 1);
    longeq[sizeof longeq - 1] = 0;
    expect(longeq, (tj_tensor *[]){M(2, 3)}, 1, "longer than 255 characters");
    /* a failed operand: its own error stands */
    tj_tensor *bad = tj_matmul(M(2, 3), M(2, 3));
    assert_null(bad);
    tu_assert_error(tj_einsum("ij", (tj_tensor *[]){bad}, 1), "matmul", NULL);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
    const struct CMUnitTest tests[] = {
        T(test_values), T(test_compiled_equals_eager), T(test_gradients),
        T(test_err_term_count), T(test_err_arrows), T(test_err_not_a_letter), T(test_err_dots),
        T(test_err_dims), T(test_err_output_twice), T(test_err_output_unknown),
        T(test_err_diagonal_sizes), T(test_err_sizes), T(test_err_too_many_subscripts),
        T(test_err_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
