/* test_pointwise.c - the pointwise ops against PyTorch: every UNARY and BINARY
 * row of ir/ops.def (f32, f64, the integer dtypes and bool where defined),
 * the _s tensor-scalar forms, where, lerp, clamp and cast, on the cases of
 * tests/golden/pointwise/cases.txt (scripts/golden/pointwise.py: broadcasting,
 * type promotion for every dtype pair, extreme values, views as PyTorch sees
 * them). Every same-shape case is also rerun here on permuted, sliced and
 * expanded views of its inputs. Then what the golden data cannot show:
 * empty tensors, large (parallel, multi-row) problems, integer corner cases,
 * and every error path. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/iter.h"
#include "util.h"

/* ---- the op table, generated from ops.def ---------------------------------------------- */
typedef tj_tensor *(*fn1)(tj_tensor *);
typedef tj_tensor *(*fn2)(tj_tensor *, tj_tensor *);
typedef tj_tensor *(*fn2s)(tj_tensor *, double);

static const struct {
    const char *name;
    fn1 u;
    fn2 b;
    fn2s s;
} ops[] = {
#define UNARY(name, ...) {#name, tj_##name, NULL, NULL},
#define BINARY(name, ...) {#name, NULL, tj_##name, tj_##name##_s},
#include "../ir/ops.def"
};

static int find_op(const char *name)
{
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (!strcmp(ops[k].name, name))
            return (int)k;
    return -1;
}

static tj_dtype dtype_named(const char *s)
{
    for (int d = 0; d < TJ_NUM_DTYPES; d++)
        if (!strcmp(tj_dtype_name((tj_dtype)d), s))
            return (tj_dtype)d;
    fail_msg("unknown dtype %s", s);
    return TJ_NUM_DTYPES;
}

/* ---- views --------------------------------------------------------------------------------- */
static tj_tensor *make_view(tj_tensor *x, char v)
{
    int nd = tj_ndim(x);
    switch (v) {
    case 'p': {
        int perm[TJ_MAX_DIMS];
        for (int d = 0; d < nd; d++)
            perm[d] = nd - 1 - d;
        return tj_permute(x, perm);
    }
    case 's':
        return tj_slice(x, 1, 1, INT64_MAX, 2);
    case 'e':
        return tj_expand(tj_slice(x, 1, 0, 1, 1), nd, tj_shape(x));
    default:
        return x;
    }
}

/* ---- the golden cases ------------------------------------------------------------------ */
typedef struct {
    char op[32], in[3][32], views[4], dtype[8], shape[64], tol[8];
    long long offset;
} gcase;

static tj_tensor *input(const char *spec, char view)
{
    if (!strcmp(spec, "-") || spec[0] == '=')
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "in_%s", spec);
    return make_view(tu_golden("pointwise", name), view);
}

static double scalar(const char *spec) { return strtod(spec + 1, NULL); }

/* Input k of the case as a tensor (NULL: absent, a scalar, or cast's dtype). */
static tj_tensor *tensor_arg(const gcase *c, int k, char view)
{
    return !strcmp(c->op, "cast") && k > 0 ? NULL : input(c->in[k], view);
}

/* Runs one case with its inputs viewed as `views` says (extra: one more view
 * letter applied to every tensor input, for the reruns). */
static tj_tensor *run(const gcase *c, char extra)
{
    tj_tensor *t[3];
    for (int k = 0; k < 3; k++) {
        t[k] = tensor_arg(c, k, c->views[k] ? c->views[k] : 'c');
        if (t[k] && extra != 'c')
            t[k] = make_view(t[k], extra);
    }
    if (!strcmp(c->op, "where"))
        return tj_where(t[0], t[1], t[2]);
    if (!strcmp(c->op, "lerp"))
        return t[2] ? tj_lerp(t[0], t[1], t[2]) : tj_lerp_s(t[0], t[1], scalar(c->in[2]));
    if (!strcmp(c->op, "clamp"))
        return tj_clamp(t[0], scalar(c->in[1]), scalar(c->in[2]));
    if (!strcmp(c->op, "add_alpha") || !strcmp(c->op, "sub_alpha")) {
        bool add = c->op[0] == 'a';
        double al = scalar(c->in[2]);
        if (t[1])
            return add ? tj_add_ex(t[0], t[1], al) : tj_sub_ex(t[0], t[1], al);
        return add ? tj_add_s_ex(t[0], scalar(c->in[1]), al) : tj_sub_s_ex(t[0], scalar(c->in[1]), al);
    }
    if (!strcmp(c->op, "div_mode")) {
        tj_rounding m = !strcmp(c->in[2], "=floor") ? TJ_ROUNDING_FLOOR : TJ_ROUNDING_TRUNC;
        return t[1] ? tj_div_ex(t[0], t[1], m) : tj_div_s_ex(t[0], scalar(c->in[1]), m);
    }
    if (!strcmp(c->op, "softplus"))
        return tj_softplus_ex(t[0], scalar(c->in[1]), scalar(c->in[2]));
    if (!strcmp(c->op, "cast"))
        return tj_cast(t[0], dtype_named(c->in[1]));
    int k = find_op(c->op);
    if (k < 0)
        fail_msg("unknown op %s", c->op);
    if (ops[k].u)
        return ops[k].u(t[0]);
    return t[1] ? ops[k].b(t[0], t[1]) : ops[k].s(t[0], scalar(c->in[1]));
}

static tj_tensor *expected(tj_tensor *want, const gcase *c)
{
    int64_t shape[TJ_MAX_DIMS], n = 1;
    int nd = 0;
    for (char *p = strcmp(c->shape, "-") ? (char *)c->shape : NULL; p && *p; nd++) {
        shape[nd] = strtoll(p, &p, 10);
        n *= shape[nd];
        if (*p == ',')
            p++;
    }
    tj_tensor *w = tj_slice(want, 0, c->offset, c->offset + n, 1);
    return tj_reshape(w, nd, shape);
}

/* Where tjit's dtype rules (ir/infer.c) and PyTorch 1.13 disagree on
 * accepting a case; the values of everything both accept are checked. */
static bool known_difference(const gcase *c)
{
    bool a_bool = strstr(c->in[0], "bool") != NULL;
    /* sign, square on bool: torch computes them; tjit's SAME rule rejects bool */
    if ((!strcmp(c->op, "sign") || !strcmp(c->op, "square")) && a_bool)
        return true;
    return false;
}

static void check_result(const gcase *c, tj_tensor *got, tj_tensor *want, const char *what)
{
    if (!got)
        fail_msg("%s %s %s %s (%s): %s", c->op, c->in[0], c->in[1], c->in[2], what,
                 tj_last_error());
    if (tj_dtype_of(got) != dtype_named(c->dtype))
        fail_msg("%s %s %s: dtype %s, want %s", c->op, c->in[0], c->in[1],
                 tj_dtype_name(tj_dtype_of(got)), c->dtype);
    double rtol = 0, atol = 0;
    if (!strcmp(c->tol, "f32"))
        rtol = 1e-5, atol = 1e-7;
    if (!strcmp(c->tol, "f64"))
        rtol = 1e-11, atol = 1e-15;
    tu_assert_close_any(got, want, rtol, atol);
}

static void test_golden(void **state)
{
    (void)state;
    FILE *f = fopen("tests/golden/pointwise/cases.txt", "r");
    if (!f)
        fail_msg("cannot open tests/golden/pointwise/cases.txt (run from the repository root)");
    tj_tensor *want = tu_golden("pointwise", "want");
    char line[512];
    int n = 0, reruns = 0;
    while (fgets(line, sizeof line, f)) {
        gcase c = {0};
        if (sscanf(line, "%31s %31s %31s %31s %3s %7s %63s %lld %7s", c.op, c.in[0], c.in[1],
                   c.in[2], c.views, c.dtype, c.shape, &c.offset, c.tol) != 9)
            fail_msg("bad line: %s", line);
        tj_scope_begin();
        tj_tensor *got = run(&c, 'c');
        if (!got && known_difference(&c)) {
            tj_clear_error();
        } else if (!strcmp(c.dtype, "err")) {
            if (got && !known_difference(&c))
                fail_msg("%s %s %s %s: PyTorch refuses it, tjit gave a result", c.op, c.in[0],
                         c.in[1], c.in[2]);
            tj_clear_error();
        } else {
            tj_tensor *w = expected(want, &c);
            check_result(&c, got, w, "as given");
            /* rerun on views: same-shape tensor inputs, all given contiguously */
            bool same = strspn(c.views, "c") == strlen(c.views) && tj_ndim(got) >= 2 &&
                        tj_size(got, 1) >= 2;
            for (int k = 0; k < 3 && same; k++) {
                tj_tensor *t = tensor_arg(&c, k, 'c');
                same = !t || (tj_ndim(t) == tj_ndim(got) &&
                              !memcmp(tj_shape(t), tj_shape(got),
                                      sizeof(int64_t) * (size_t)tj_ndim(t)));
            }
            for (const char *v = "pse"; same && *v; v++, reruns++)
                check_result(&c, run(&c, *v), make_view(w, *v),
                             (char[]){'v', 'i', 'e', 'w', ' ', *v, 0});
        }
        tj_scope_end();
        n++;
    }
    fclose(f);
    assert_true(n > 1000 && reruns > 1000);
}

/* ---- what the golden data cannot show -------------------------------------------------- */
static tj_tensor *vec(tj_dtype dt, int n, const double *v)
{
    return tu_tensor(dt, 1, (int64_t[]){n}, v);
}

/* softplus with beta and threshold compiled: the decomposition (mul, exp,
 * log1p, div, gt, where) equals the eager kernel, on random and extreme
 * values (x_*: 0, -0, denormals, huge, +-inf, NaN), f32 and f64. */
static const double softplus_args[][2] = {{1, 20}, {2, 3}, {-1.5, 0.5}, {1e-3, 20}};

static tj_tensor *softplus_model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    const double *bt = ctx;
    return tj_softplus_ex(args[0], bt[0], bt[1]);
}

static void test_softplus_compiled(void **state)
{
    (void)state;
    static const char *const inputs[] = {"in_s_f32", "in_x_f32", "in_s_f64", "in_x_f64"};
    for (size_t k = 0; k < sizeof softplus_args / sizeof *softplus_args; k++) {
        tj_compiled *m = tj_compile(softplus_model, (void *)softplus_args[k], NULL);
        for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
            tj_tensor *x = tu_golden("pointwise", inputs[i]);
            tj_tensor *want = tj_softplus_ex(x, softplus_args[k][0], softplus_args[k][1]);
            tj_tensor *got = tj_call(m, &x, 1);
            if (!got)
                fail_msg("softplus %s: %s", inputs[i], tj_last_error());
            bool f32 = tj_dtype_of(x) == TJ_F32;
            tu_assert_close(got, want, f32 ? 1e-6 : 1e-14, f32 ? 1e-30 : 1e-300);
        }
        tj_compiled_free(m);
    }
}

/* add/sub with alpha and div with a rounding mode, compiled: add_alpha and
 * sub_alpha decompose (mul, add/sub, casts) and fuse, div_mode is an eager
 * call in the plan; each equals the eager op exactly, on random, integer,
 * u8 (wrapping), bool and extreme values (every pair of 0, -0, denormals,
 * huge, +-inf, NaN); an integer zero divisor fails compiled too. */
typedef struct {
    char op;       /* '+', '-', 't' (trunc), 'f' (floor) */
    double alpha;  /* '+' and '-' */
    bool scalar;   /* b a number (the _s_ex forms): 3 */
} arg_case;

static tj_tensor *arg_apply(const arg_case *c, tj_tensor *a, tj_tensor *b)
{
    switch (c->op) {
    case '+': return c->scalar ? tj_add_s_ex(a, 3, c->alpha) : tj_add_ex(a, b, c->alpha);
    case '-': return c->scalar ? tj_sub_s_ex(a, 3, c->alpha) : tj_sub_ex(a, b, c->alpha);
    default: {
        tj_rounding m = c->op == 'f' ? TJ_ROUNDING_FLOOR : TJ_ROUNDING_TRUNC;
        return c->scalar ? tj_div_s_ex(a, 3, m) : tj_div_ex(a, b, m);
    }
    }
}

static tj_tensor *arg_model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    return arg_apply(ctx, args[0], args[1]);
}

static void test_args_compiled(void **state)
{
    (void)state;
    static const arg_case cases[] = {
        {'+', 2.5, false}, {'+', -3, false}, {'+', 0, false}, {'-', 0.1, false},
        {'-', -7, false},  {'+', 2, true},   {'-', -0.5, true}, {'t', 0, false},
        {'f', 0, false},   {'t', 0, true},   {'f', 0, true},
    };
    static const char *const pairs[][2] = {
        {"in_s_f32", "in_t_f32"}, {"in_s_f64", "in_r5_f64"}, {"in_xa_f32", "in_xb_f32"},
        {"in_a_i32", "in_b_i32"}, {"in_a_i64", "in_b_i64"},  {"in_a_u8", "in_b_u8"},
        {"in_a_bool", "in_b_bool"}, {"in_dz_i32", "in_dd_i32"},
    };
    int runs = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tj_compiled *m = tj_compile(arg_model, (void *)&cases[k], NULL);
        for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
            tj_tensor *in[2] = {tu_golden("pointwise", pairs[i][0]), tu_golden("pointwise", pairs[i][1])};
            tj_tensor *want = arg_apply(&cases[k], in[0], in[1]);
            if (!want) {   /* refused (bool sub, bool div, a fractional alpha): the same compiled */
                assert_null(tj_call(m, in, 2));
                tj_clear_error();
                continue;
            }
            tj_tensor *got = tj_call(m, in, 2);
            if (!got)
                fail_msg("%c %g %s %s: %s", cases[k].op, cases[k].alpha, pairs[i][0], pairs[i][1],
                         tj_last_error());
            tu_assert_close(got, want, 0, 0);
            runs++;
        }
        tj_compiled_free(m);
    }
    assert_true(runs > 60);
    /* an integer zero divisor: PyTorch's ZeroDivisionError, eager and compiled */
    arg_case c = {'f', 0, false};
    tj_tensor *in[2] = {tu_golden("pointwise", "in_dz_i32"), tu_golden("pointwise", "in_dzero_i32")};
    tu_assert_error(arg_apply(&c, in[0], in[1]), "div_mode(i32[8], i32[8])", "ZeroDivisionError", NULL);
    tj_compiled *m = tj_compile(arg_model, &c, NULL);
    tu_assert_error(tj_call(m, in, 2), "ZeroDivisionError", NULL);
    tj_compiled_free(m);
}

static void test_promotion(void **state)
{
    (void)state;
    tj_tensor *i = vec(TJ_I32, 3, (double[]){1, -2, 3});
    tj_tensor *r = tj_mul_s(i, 2.5);                       /* int tensor * 2.5 -> f32 */
    assert_int_equal(tj_dtype_of(r), TJ_F32);
    tu_assert_close(r, vec(TJ_F32, 3, (double[]){2.5, -5, 7.5}), 0, 0);
    r = tj_add_s(i, 5);                                    /* i32 + 5 -> i32 */
    tu_assert_close(r, vec(TJ_I32, 3, (double[]){6, 3, 8}), 0, 0);
    tj_tensor *b = vec(TJ_BOOL, 3, (double[]){1, 0, 1});
    tu_assert_close(tj_add_s(b, 1), vec(TJ_I64, 3, (double[]){2, 1, 2}), 0, 0);   /* bool + 1 */
    tj_tensor *z = tj_scalar(TJ_F64, 0.25);                /* 0-dim f64 + f32[3] -> f32 */
    tj_tensor *f = vec(TJ_F32, 3, (double[]){1, 2, 3});
    tu_assert_close(tj_add(z, f), vec(TJ_F32, 3, (double[]){1.25, 2.25, 3.25}), 0, 0);
    tu_assert_close(tj_add(f, tj_cast(f, TJ_F64)), vec(TJ_F64, 3, (double[]){2, 4, 6}), 0, 0);
    tu_assert_close(tj_div(i, i), vec(TJ_F32, 3, (double[]){1, 1, 1}), 0, 0);
    tu_assert_close(tj_eq_s(f, 2), vec(TJ_BOOL, 3, (double[]){0, 1, 0}), 0, 0);
    tj_tensor *u = vec(TJ_U8, 2, (double[]){0, 200});
    tu_assert_close(tj_add_s(u, -1), vec(TJ_U8, 2, (double[]){255, 199}), 0, 0);   /* wraps */
    tu_assert_close(tj_exp(vec(TJ_I64, 1, (double[]){0})), vec(TJ_F32, 1, (double[]){1}), 0, 0);
}

static void test_empty(void **state)
{
    (void)state;
    int64_t s03[2] = {0, 3}, s13[2] = {1, 3};
    tj_tensor *e = tj_zeros(TJ_F32, 2, s03), *r = tj_ones(TJ_F32, 2, s13);
    tj_tensor *outs[] = {tj_exp(e), tj_sin(e), tj_add(e, r), tj_mul_s(e, 2), tj_neg(e),
                         tj_where(tj_gt(e, e), e, r), tj_lerp_s(e, r, 0.5), tj_clamp(e, 0, 1),
                         tj_cast(e, TJ_I64), tj_isnan(e), tj_pow(r, e)};
    for (size_t k = 0; k < sizeof outs / sizeof *outs; k++) {
        assert_non_null(outs[k]);
        assert_int_equal(tj_numel(outs[k]), 0);
        assert_int_equal(tj_ndim(outs[k]), 2);
        assert_int_equal(tj_size(outs[k], 0), 0);
        assert_int_equal(tj_size(outs[k], 1), 3);
    }
    tj_tensor *x0 = tj_zeros(TJ_I32, 1, (int64_t[]){0});
    assert_int_equal(tj_numel(tj_bitwise_not(x0)), 0);
    assert_int_equal(tj_numel(tj_add_s(x0, 1)), 0);
}

/* A problem big enough for several parallel chunks, with broadcasting,
 * non-contiguous and mixed-dtype inputs, checked element by element. */
static void test_large(void **state)
{
    (void)state;
    int64_t n = 300 * 701;
    tj_tensor *x = tj_reshape(tj_arange(TJ_F32, 0, (double)n, 1), 2, (int64_t[]){300, 701});
    tj_tensor *xt = tj_transpose(x, 0, 1);                              /* [701,300] strided */
    tj_tensor *row = tj_arange(TJ_I32, 0, 300, 1);                      /* [300], i32 */
    tj_tensor *y = tj_add(tj_mul_s(xt, 0.5), row);                      /* f32 [701,300] */
    tj_tensor *s = tj_sin(tj_mul_s(xt, 1e-4));
    assert_non_null(y);
    assert_non_null(s);
    for (int64_t i = 0; i < 701; i += 7)
        for (int64_t j = 0; j < 300; j += 3) {
            int64_t at[2] = {i, j};
            double v = (double)(j * 701 + i);
            assert_float_equal(tj_get(y, at), (float)((float)v * 0.5f + (float)j), 0);
            assert_float_equal(tj_get(s, at), sin((double)((float)v * 1e-4f)), 2e-7);
        }
    /* one long contiguous row, split across chunks */
    tj_tensor *flat = tj_reshape(x, 1, &n);
    tj_tensor *d = tj_sub(tj_exp(tj_mul_s(flat, 1e-6)), tj_exp(tj_mul_s(flat, 1e-6)));
    tu_assert_close(tj_amax(tj_abs(d), NULL, 0, false), tj_scalar(TJ_F32, 0), 0, 0);
}

static void test_int_corners(void **state)
{
    (void)state;
    tj_tensor *a = vec(TJ_I64, 5, (double[]){7, -7, 0, 5, 1});
    tj_tensor *z = vec(TJ_I64, 5, (double[]){0, 0, 0, -1, -1});
    /* integer division by zero is an error, as in PyTorch (eager and compiled) */
    tu_assert_error(tj_remainder(a, z), "remainder(i64[5], i64[5])", "ZeroDivisionError", NULL);
    tu_assert_error(tj_fmod(a, z), "fmod(i64[5], i64[5])", "integer division by zero", NULL);
    tu_assert_error(tj_fmod_s(a, 0), "fmod(i64[5], i64[])", "ZeroDivisionError", NULL);
    tu_assert_error(tj_remainder(vec(TJ_U8, 2, (double[]){1, 2}), vec(TJ_BOOL, 2, (double[]){1, 0})),
                    "remainder(u8[2], bool[2])", "ZeroDivisionError", NULL);
    tu_assert_close(tj_fmod_s(vec(TJ_F32, 2, (double[]){1, -1}), 0), vec(TJ_F32, 2, (double[]){NAN, NAN}),
                    0, 0);   /* floats: NaN */
    int64_t mn = INT64_MIN, m1 = -1;
    tj_tensor *big = tj_from_data(TJ_I64, 1, (int64_t[]){1}, &mn);
    tj_tensor *neg1 = tj_from_data(TJ_I64, 1, (int64_t[]){1}, &m1);
    assert_float_equal(tj_item(tj_fmod(big, neg1)), 0, 0);
    assert_float_equal(tj_item(tj_remainder(big, neg1)), 0, 0);
    /* negative integer powers: 0 except for bases 1 and -1 */
    tj_tensor *base = vec(TJ_I32, 4, (double[]){2, -1, 1, 0});
    tu_assert_close(tj_pow_s(base, -3), vec(TJ_I32, 4, (double[]){0, -1, 1, 0}), 0, 0);
    /* bool: ~ is logical not; + is or */
    tj_tensor *b = vec(TJ_BOOL, 2, (double[]){1, 0});
    tu_assert_close(tj_bitwise_not(b), vec(TJ_BOOL, 2, (double[]){0, 1}), 0, 0);
    tu_assert_close(tj_add(b, b), vec(TJ_BOOL, 2, (double[]){1, 0}), 0, 0);
    tu_assert_close(tj_neg(vec(TJ_U8, 2, (double[]){1, 0})), vec(TJ_U8, 2, (double[]){255, 0}),
                    0, 0);
    /* clamp on integers: integer bounds keep the dtype, a fractional one
     * makes it f32 (PyTorch's promotion; test_promotion.c has every case) */
    tj_tensor *c = vec(TJ_I32, 4, (double[]){-5, -2, 3, 9});
    tu_assert_close(tj_clamp(c, -2, 3), vec(TJ_I32, 4, (double[]){-2, -2, 3, 3}), 0, 0);
    tu_assert_close(tj_clamp(c, -2.5, 3.7), vec(TJ_F32, 4, (double[]){-2.5, -2, 3, 3.7}), 0, 0);
    tu_assert_close(tj_clamp(vec(TJ_U8, 2, (double[]){0, 250}), 10, INFINITY),
                    vec(TJ_U8, 2, (double[]){10, 250}), 0, 0);
    tu_assert_close(tj_clamp(c, -INFINITY, INFINITY), c, 0, 0);
    /* clamp propagates a NaN bound like torch */
    tj_tensor *cn = tj_clamp(vec(TJ_F32, 2, (double[]){1, 2}), NAN, 5);
    assert_true(isnan(tj_get(cn, (int64_t[]){0})) && isnan(tj_get(cn, (int64_t[]){1})));
    /* cast: nonzero and NaN are true; float -> int truncates */
    tj_tensor *f = vec(TJ_F32, 4, (double[]){NAN, -0.0, 0.1, -2.7});
    tu_assert_close(tj_cast(f, TJ_BOOL), vec(TJ_BOOL, 4, (double[]){1, 0, 1, 1}), 0, 0);
    tu_assert_close(tj_cast(tj_slice(f, 0, 1, 4, 1), TJ_I64), vec(TJ_I64, 3, (double[]){0, 0, -2}),
                    0, 0);
}

/* rt_convert (the runtime's strided copy with conversion, behind cast and
 * copy_): every dtype pair, a broadcast input, a transposed output. */
static double convert_ref(double v, tj_dtype from, tj_dtype to)
{
    bool from_int = from != TJ_F32 && from != TJ_F64;   /* integers wrap */
    int64_t w = from_int ? (int64_t)v : v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v
                                                                              : INT32_MIN;
    switch (to) {
    case TJ_BOOL:
        return v != 0;
    case TJ_U8:
        return (double)(uint8_t)w;   /* floats through i32, like torch */
    case TJ_I8:
        return (double)(int8_t)w;
    case TJ_I16:
        return (double)(int16_t)w;
    case TJ_I32:
        return (double)(int32_t)w;
    case TJ_I64:
        return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (double)(int64_t)v
                                                                         : (double)INT64_MIN;
    case TJ_F32:
        return (float)v;
    default:
        return v;
    }
}

static void test_convert(void **state)
{
    (void)state;
    const double vals[] = {0, 1, -1, 2.75, -3.5, 255, 256, 300.5, -129, 1e10, 70000, 0.25};
    const tj_dtype dts[] = {TJ_BOOL, TJ_U8, TJ_I8, TJ_I16, TJ_I32, TJ_I64, TJ_F32, TJ_F64};
    for (int s = 0; s < 8; s++)
        for (int d = 0; d < 8; d++) {
            tj_tensor *src = tu_tensor(dts[s], 2, (int64_t[]){1, 12}, vals);   /* broadcast rows */
            tj_tensor *buf = tj_zeros(dts[d], 2, (int64_t[]){12, 5});
            tj_tensor *out = tj_transpose(buf, 0, 1);                          /* [5,12] strided */
            assert_int_equal(rt_convert(out, src), 0);
            for (int64_t i = 0; i < 5; i++)
                for (int64_t j = 0; j < 12; j++) {
                    double v = tj_get(src, (int64_t[]){0, j});
                    double got = tj_get(out, (int64_t[]){i, j});
                    double want = convert_ref(v, dts[s], dts[d]);
                    if (got != want)
                        fail_msg("%s -> %s: %g gave %g, want %g", tj_dtype_name(dts[s]),
                                 tj_dtype_name(dts[d]), v, got, want);
                }
        }
    tj_tensor *a = tj_zeros(TJ_F32, 1, (int64_t[]){3}), *b = tj_zeros(TJ_F32, 1, (int64_t[]){4});
    assert_int_equal(rt_convert(a, b), -1);
    assert_non_null(strstr(tj_last_error(), "cannot broadcast f32[4] to f32[3]"));
    tj_clear_error();
}

/* Every error names the op and the input shapes, and says why. */
static void test_errors(void **state)
{
    (void)state;
    tj_tensor *a = tj_zeros(TJ_F32, 2, (int64_t[]){2, 3});
    tj_tensor *b = tj_zeros(TJ_F32, 1, (int64_t[]){4});
    tj_tensor *bo = tj_zeros(TJ_BOOL, 1, (int64_t[]){3});
    tj_tensor *i = tj_zeros(TJ_I64, 1, (int64_t[]){3});
    tu_assert_error(tj_add(a, b), "add(f32[2,3], f32[4])", "broadcast", NULL);
    tu_assert_error(tj_atan2(b, a), "atan2(f32[4], f32[2,3])", "broadcast", NULL);
    tu_assert_error(tj_neg(bo), "neg(bool[3])", "bool", NULL);
    tu_assert_error(tj_sub(bo, bo), "sub(bool[3], bool[3])", "bool", NULL);
    tu_assert_error(tj_abs(bo), "abs(bool[3])", "bool", NULL);
    tu_assert_error(tj_floor(bo), "floor(bool[3])", "bool", NULL);
    tu_assert_error(tj_bitwise_and(a, a), "bitwise_and(f32[2,3], f32[2,3])", "f32", NULL);
    tu_assert_error(tj_bitwise_or(i, a), "bitwise_or(i64[3], f32[2,3])", "f32", NULL);
    tu_assert_error(tj_bitwise_not(a), "bitwise_not(f32[2,3])", "integer", NULL);
    tu_assert_error(tj_bitwise_xor_s(i, 1.5), "bitwise_xor(i64[3], f64[])", NULL);
    tu_assert_error(tj_cast(a, TJ_C64), "cast(f32[2,3])", "c64", "unsupported", NULL);
    tu_assert_error(tj_cast(a, (tj_dtype)99), "cast(f32[2,3])", "99", NULL);
    tu_assert_error(tj_clamp(bo, -INFINITY, INFINITY), "clamp(bool[3])", "bool", NULL);
    tu_assert_error(tj_add_ex(a, b, 2), "add_alpha(f32[2,3], f32[4])", "broadcast", NULL);
    tu_assert_error(tj_add_ex(i, i, 0.5), "add_alpha(i64[3], i64[3])",
                    "alpha 0.5 must be an integer for i64 results", NULL);
    tu_assert_error(tj_add_ex(bo, bo, 0.5), "add_alpha(bool[3], bool[3])", "integer", NULL);
    assert_non_null(tj_add_ex(tj_cast(i, TJ_U8), i, 2));   /* an i64 result: fine */
    tu_assert_error(tj_sub_ex(tj_cast(i, TJ_U8), tj_cast(i, TJ_U8), 256), "sub_alpha(u8[3], u8[3])",
                    "alpha 256 does not fit u8", NULL);
    tu_assert_error(tj_add_ex(tj_cast(i, TJ_I32), tj_cast(i, TJ_I32), NAN), "add_alpha", "integer", NULL);
    tu_assert_error(tj_add_ex(a, a, 1e39), "add_alpha(f32[2,3], f32[2,3])", "does not fit f32", NULL);
    tu_assert_error(tj_sub_ex(bo, bo, 2), "sub_alpha(bool[3], bool[3])", "bool", NULL);
    tu_assert_error(tj_sub_s_ex(bo, 1, 2), "sub_alpha(bool[3], i64[])", "bool", NULL);
    tu_assert_error(tj_add_s_ex(NULL, 1, 2), "add_alpha", "NULL", NULL);
    tu_assert_error(tj_div_ex(bo, bo, TJ_ROUNDING_FLOOR), "div_mode(bool[3], bool[3])",
                    "rounding_mode floor is not defined for bool", NULL);
    tu_assert_error(tj_div_ex(a, b, TJ_ROUNDING_TRUNC), "div_mode(f32[2,3], f32[4])", "broadcast", NULL);
    tu_assert_error(tj_div_ex(a, a, (tj_rounding)7), "div_mode(f32[2,3], f32[2,3])", "rounding_mode ?",
                    NULL);
    tu_assert_error(tj_div_s_ex(i, 0, TJ_ROUNDING_TRUNC), "div_mode(i64[3], i64[])",
                    "ZeroDivisionError", NULL);
    tu_assert_error(tj_div_s_ex(NULL, 2, TJ_ROUNDING_TRUNC), "div_mode", "NULL", NULL);
    tu_assert_error(tj_clamp(tj_cast(i, TJ_U8), -10, 300), "clamp(u8[3])",
                    "min bound -10 is out of range for u8", NULL);
    tu_assert_error(tj_clamp(tj_cast(i, TJ_I32), 0, 1e10), "clamp(i32[3])",
                    "max bound 10000000000 is out of range for i32", NULL);
    tu_assert_error(tj_pow(bo, bo), "pow(bool[3], bool[3])", "not defined for bool", NULL);
    tu_assert_error(tj_fmod(bo, bo), "fmod(bool[3], bool[3])", "not defined for bool", NULL);
    tu_assert_error(tj_remainder(bo, bo), "remainder(bool[3], bool[3])", "bool", NULL);
    tu_assert_error(tj_lerp(i, i, i), "lerp(i64[3], i64[3], i64[3])", "floating", NULL);
    tu_assert_error(tj_lerp(a, tj_cast(a, TJ_F64), a), "lerp(f32[2,3], f64[2,3], f32[2,3])",
                    "expected f32 for end (start's dtype), got f64", NULL);
    tu_assert_error(tj_lerp(a, a, tj_scalar(TJ_F64, 0.5)), "lerp(f32[2,3], f32[2,3], f64[])",
                    "expected f32 for weight", NULL);
    tu_assert_error(tj_lerp(a, b, a), "lerp(f32[2,3], f32[4], f32[2,3])", "broadcast", NULL);
    tu_assert_error(tj_where(bo, a, b), "where(bool[3], f32[2,3], f32[4])", "broadcast", NULL);
    /* NULL in, NULL out; the message says which input */
    assert_null(tj_exp(NULL));
    assert_non_null(strstr(tj_last_error(), "exp"));
    tj_clear_error();
    assert_null(tj_add(a, NULL));
    tj_clear_error();
    assert_null(tj_mul_s(NULL, 2));
    tj_clear_error();
    assert_null(tj_where(NULL, a, a));
    tj_clear_error();
    assert_null(tj_lerp_s(a, NULL, 0.5));
    tj_clear_error();
    assert_null(tj_clamp(NULL, 0, 1));
    tj_clear_error();
    assert_null(tj_cast(NULL, TJ_F32));
    tj_clear_error();
    /* an error inside a chain survives to its end */
    assert_null(tj_exp(tj_add(a, b)));
    assert_non_null(strstr(tj_last_error(), "add(f32[2,3], f32[4])"));
    tj_clear_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_golden, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_softplus_compiled, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_args_compiled, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_promotion, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_empty, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_large, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_int_corners, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_convert, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_errors, tu_scope_setup, tu_scope_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
