/* test_promotion.c - result dtypes and values of every op that takes a scalar
 * or mixes dtypes, against PyTorch's type promotion, eagerly and (a chosen
 * ~700, see run_compiled) compiled: the table tests/golden/promotion/cases.txt
 * (scripts/golden/promotion.py) of every BINARY row of ops.def over every
 * pair of dtypes, tensor-tensor, with a 0-dim tensor on either side and with
 * a scalar (the _s form: an integral double is a Python int, any other a
 * Python float), clamp with int, float and absent bounds, where and lerp. A
 * case PyTorch refuses must fail in tjit with a message naming the op,
 * unless it is one of the known differences below. Every difference is
 * printed before the test fails. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../ir/ir.h"
#include "util.h"

typedef tj_tensor *(*fn2)(tj_tensor *, tj_tensor *);
typedef tj_tensor *(*fn2s)(tj_tensor *, double);

static const struct {
    const char *name;
    fn2 b;
    fn2s s;
} binary[] = {
#define BINARY(name, ...) {#name, tj_##name, tj_##name##_s},
#define OP(...)
#include "../ir/ops.def"
};
#define NBINARY ((int)(sizeof binary / sizeof *binary))

typedef struct pcase {
    char op[32], spec[3][16], dtype[8], shape[32];
    long off;
    int nt;                  /* tensor operands, passed as the model's args */
    double s[3];             /* scalar operands (none: -inf as a low bound, inf as a high one) */
    bool is_s[3];
} pcase;

static const double A[6] = {1, 2, 3, 4, 0, 1}, B[6] = {2, 1, 3, 1, 2, 5};

static tj_tensor *operand(const char *spec, int k, tj_dtype *dt_out)
{
    tj_dtype dt = ir_dtype_from_name(spec + 2);
    *dt_out = dt;
    if (spec[0] == 'z')
        return tj_cast(tj_scalar(TJ_F64, 2), dt);
    return tu_tensor(dt, 2, (int64_t[]){2, 3}, k == 0 ? A : B);
}

/* Applies the case's op to its operands: tensors from t[], scalars from c. */
static tj_tensor *apply(const pcase *c, tj_tensor *const *t)
{
    tj_tensor *x[3];
    for (int k = 0, j = 0; k < 3; k++)
        x[k] = c->spec[k][0] == 't' || c->spec[k][0] == 'z' ? t[j++] : NULL;
    if (!strcmp(c->op, "clamp"))
        return tj_clamp(x[0], c->s[1], c->s[2]);
    if (!strcmp(c->op, "where"))
        return tj_where(x[0], x[1], x[2]);
    if (!strcmp(c->op, "lerp"))
        return c->is_s[2] ? tj_lerp_s(x[0], x[1], c->s[2]) : tj_lerp(x[0], x[1], x[2]);
    for (int k = 0; k < NBINARY; k++)
        if (!strcmp(binary[k].name, c->op))
            return c->is_s[1] ? binary[k].s(x[0], c->s[1]) : binary[k].b(x[0], x[1]);
    fail_msg("unknown op %s", c->op);
    return NULL;
}

static tj_tensor *model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    return apply(ctx, args);
}

/* Where tjit knowingly differs from PyTorch 1.13 on whether a case is
 * accepted; the values of everything both accept are checked. */
static bool known_difference(const pcase *c)
{
    /* int ** negative int scalar: torch refuses the Python scalar only (a
     * tensor exponent gives 0); tjit gives what the tensor form gives */
    if (!strcmp(c->op, "pow") && c->is_s[1] && c->s[1] < 0 && c->s[1] == floor(c->s[1]))
        return true;
    return false;
}

/* Whether got (NULL: failed) is what PyTorch gives; prints why not. */
static bool check(const pcase *c, tj_tensor *got, tj_tensor *want, const char *how)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s %s %s (%s)", c->op, c->spec[0], c->spec[1], c->spec[2],
             how);
    bool ok = true;
    if (!strcmp(c->dtype, "err")) {
        if (got && !known_difference(c))
            print_error("%s: PyTorch refuses it, tjit gave %s\n", what,
                        tj_dtype_name(tj_dtype_of(got))), ok = false;
        else if (!got && !strstr(tj_last_error(), c->op))
            print_error("%s: the message \"%s\" does not name the op\n", what, tj_last_error()),
                ok = false;
    } else if (!got) {
        print_error("%s: %s\n", what, tj_last_error()), ok = false;
    } else if (strcmp(tj_dtype_name(tj_dtype_of(got)), c->dtype)) {
        print_error("%s: dtype %s, PyTorch %s\n", what, tj_dtype_name(tj_dtype_of(got)), c->dtype);
        ok = false;
    } else {
        bool f32 = !strcmp(c->dtype, "f32"), f64 = !strcmp(c->dtype, "f64");
        if (!tu_all_close(got, want, f32 ? 1e-6 : f64 ? 1e-13 : 0))
            print_error("%s: values differ from PyTorch's\n", what), ok = false;
    }
    tj_clear_error();
    return ok;
}

/* Which cases also run compiled (each compiles kernels of its own; a cold
 * kernel cache compiles them all): every scalar case but the negative ones
 * (the weak scalars go through decompose, simplify and the constants the
 * kernels inline), clamp, where and lerp, and the 0-dim cases of one row per
 * promoting dtype rule (arith, numeric, truediv, cmp, bitwise). */
static bool run_compiled(const pcase *c)
{
    static const char *const zero_dim[] = {"add", "pow", "div", "eq", "bitwise_or"};
    if (c->is_s[1] || c->is_s[2])
        return c->s[1] >= 0 || strcmp(c->op, "clamp") == 0;
    if (!strcmp(c->op, "clamp") || !strcmp(c->op, "where") || !strcmp(c->op, "lerp"))
        return true;
    for (size_t k = 0; k < sizeof zero_dim / sizeof *zero_dim; k++)
        if (!strcmp(c->op, zero_dim[k]))
            return c->spec[0][0] == 'z' || c->spec[1][0] == 'z';
    return false;
}

static int compiled_cases;

static int run_case(pcase *c, tj_tensor *want_all)
{
    tj_tensor *t[3];
    c->nt = 0;
    for (int k = 0; k < 3; k++) {
        const char *sp = c->spec[k];
        c->is_s[k] = sp[0] == 's';
        if (c->is_s[k])
            c->s[k] = !strcmp(sp, "s:none") ? (k == 1 ? -INFINITY : INFINITY) : strtod(sp + 2, NULL);
        else if (sp[0] == 't' || sp[0] == 'z') {
            tj_dtype dt;
            t[c->nt++] = operand(sp, k, &dt);
        }
    }
    tj_tensor *want = strcmp(c->dtype, "err") ? tu_golden_part(want_all, c->off, c->shape) : NULL;
    int bad = !check(c, apply(c, t), want, "eager");
    if (run_compiled(c)) {
        tj_compiled *m = tj_compile(model, c, &(tj_compile_options){.name = "promotion"});
        bad += !check(c, tj_call(m, t, c->nt), want, "compiled");
        tj_compiled_free(m);
        compiled_cases++;
    }
    return bad;
}

static void test_table(void **state)
{
    (void)state;
    FILE *f = tu_golden_cases("promotion");
    tj_tensor *want = tu_golden("promotion", "want");
    char line[256];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        pcase c = {0};
        if (sscanf(line, "%31s %15s %15s %15s %7s %31s %ld", c.op, c.spec[0], c.spec[1], c.spec[2],
                   c.dtype, c.shape, &c.off) != 7)
            fail_msg("bad line: %s", line);
        tj_scope_begin();
        bad += run_case(&c, want);
        tj_scope_end();
        n++;
    }
    fclose(f);
    assert_true(n > 2000 && compiled_cases > 500);
    if (bad)
        fail_msg("%d of %d runs differ from PyTorch (above)", bad, n + compiled_cases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, tu_scope_setup, tu_scope_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
