/* test_loss.c - cross_entropy with torch's arguments (tj_cross_entropy_ex):
 * the cases of tests/golden/loss/cases.txt (scripts/golden/loss.py: logits
 * [C], [N,C], [N,C,d...], class indices and probabilities, reduction
 * none/sum/mean, weights, ignore_index, label smoothing, f32/f64, views,
 * empty batches, extreme logits) run eagerly and compiled against PyTorch;
 * the defaults; and every error path, eager and compiled. */
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

static tj_tensor *G(const char *name) { return tu_golden("loss", name); }

/* ---- the golden cases ------------------------------------------------------------------ */

typedef struct ce_case {
    char name[64], x[16], view[4], t[16], w[16], red[8];
    long long ignore;
    double smoothing;
} ce_case;

static tj_reduction reduction_of(const char *s)
{
    return !strcmp(s, "sum") ? TJ_REDUCTION_SUM : !strcmp(s, "none") ? TJ_REDUCTION_NONE
                                                                     : TJ_REDUCTION_MEAN;
}

/* args: x, target, weight (or absent) */
static tj_tensor *model_ce(void *ctx, tj_tensor *const *args, int nargs)
{
    const ce_case *c = ctx;
    tj_cross_entropy_options o = tj_cross_entropy_defaults();
    o.reduction = reduction_of(c->red);
    o.ignore_index = c->ignore;
    o.label_smoothing = c->smoothing;
    o.weight = nargs > 2 ? args[2] : NULL;
    return tj_cross_entropy_ex(args[0], args[1], &o);
}

/* Runs fn compiled; it must run as one captured graph, not eagerly. */
static tj_tensor *run_compiled(tj_model_fn fn, void *ctx, tj_tensor **args, int nargs)
{
    tj_compiled *m = tj_compile(fn, ctx, &(tj_compile_options){.name = "loss"});
    assert_non_null(m);
    tj_tensor *r = tj_call(m, args, nargs);
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(m, &st), 0);
    tj_compiled_free(m);
    if (r && (st.graphs != 1 || st.eager_calls != 0))
        fail_msg("the model ran eagerly (graphs %d, eager calls %lu)", st.graphs, st.eager_calls);
    return r;
}

static void check_case(const ce_case *c)
{
    tj_tensor *args[3] = {tu_view(G(c->x), c->view[0]), G(c->t), NULL};
    int n = 2;
    if (strcmp(c->w, "-"))
        args[n++] = G(c->w);
    char wname[80];
    snprintf(wname, sizeof wname, "%s.want", c->name);
    tj_tensor *want = G(wname);
    bool f64 = tj_dtype_of(args[0]) == TJ_F64;   /* f32 logits: f32 precision, whatever the result */
    for (int compiled = 0; compiled < 2; compiled++) {
        tj_tensor *got = compiled ? run_compiled(model_ce, (void *)c, args, n)
                                  : model_ce((void *)c, args, n);
        if (!got)
            fail_msg("%s%s: %s", c->name, compiled ? " compiled" : "", tj_last_error());
        if (!tu_all_close(got, want, f64 ? 1e-12 : 2e-6))
            print_error("case %s%s\n", c->name, compiled ? " compiled" : "");
        tu_assert_close(got, want, f64 ? 1e-12 : 2e-6, f64 ? 1e-13 : 2e-6);
    }
}

static void test_golden_cases(void **state)
{
    (void)state;
    FILE *f = tu_golden_cases("loss");
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        ce_case c;
        if (sscanf(line, "%63s %15s %3s %15s %15s %7s %lld %lf", c.name, c.x, c.view, c.t, c.w,
                   c.red, &c.ignore, &c.smoothing) != 8)
            continue;
        tj_scope_begin();
        check_case(&c);
        tj_scope_end();
        n++;
    }
    fclose(f);
    assert_true(n >= 80);
}

/* ---- the simple form and the defaults ---------------------------------------------------- */

static void test_defaults(void **state)
{
    (void)state;
    tj_cross_entropy_options d = tj_cross_entropy_defaults();
    assert_int_equal(d.reduction, TJ_REDUCTION_MEAN);
    assert_null(d.weight);
    assert_int_equal(d.ignore_index, -100);
    assert_true(d.label_smoothing == 0);
    tj_tensor *x = G("x2"), *t = G("t2_all_ignored");
    /* -100 targets are ignored by default: a mean over nothing */
    assert_true(isnan(tj_item(tj_cross_entropy(x, t))));
    assert_true(isnan(tj_item(tj_cross_entropy_ex(x, t, NULL))));
    tu_assert_close(tj_cross_entropy(x, G("t2")), G("idx2_mean_nw_ig-100_ls0.0.want"), 2e-6, 2e-6);
    tu_assert_close(tj_cross_entropy_ex(x, G("t2"), &d), G("idx2_mean_nw_ig-100_ls0.0.want"), 2e-6,
                    2e-6);
}

/* ---- errors ------------------------------------------------------------------------------ */

typedef struct err_case {
    tj_cross_entropy_options o;
    const char *why;
} err_case;

static tj_tensor *model_err(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    return tj_cross_entropy_ex(args[0], args[1], &((err_case *)ctx)->o);
}

/* Fails eagerly with a message naming the op, the inputs and why, and
 * compiled with a message holding cwhy (the decomposition's gather reports a
 * bad target as its index) or else why. */
static void check_error2(tj_tensor *x, tj_tensor *t, tj_cross_entropy_options o, const char *head,
                         const char *why, const char *cwhy)
{
    err_case c = {o, why};
    tj_tensor *args[2] = {x, t};
    tu_assert_error(model_err(&c, args, 2), head, why, NULL);
    if (cwhy)
        tu_assert_error(run_compiled(model_err, &c, args, 2), cwhy, NULL);
    else
        tu_assert_error(run_compiled(model_err, &c, args, 2), "cross_entropy", why, NULL);
}

static void check_error(tj_tensor *x, tj_tensor *t, tj_cross_entropy_options o, const char *head,
                        const char *why)
{
    check_error2(x, t, o, head, why, NULL);
}

static void test_errors(void **state)
{
    (void)state;
    tj_cross_entropy_options d = tj_cross_entropy_defaults(), o;
    tj_tensor *x = G("x2"), *t = G("t2"), *q = G("q2");
    check_error(tj_scalar(TJ_F32, 1), tj_scalar(TJ_I64, 0), d, "cross_entropy(f32[], i64[])",
                "logits must have a class dim");
    check_error(tj_ones(TJ_I32, 2, (int64_t[]){6, 5}), t, d, "cross_entropy(i32[6,5], i64[6])",
                "logits must be float, got i32");
    o = d, o.reduction = (tj_reduction)3;
    check_error(x, t, o, "cross_entropy(f32[6,5], i64[6])", "reduction 3 is not one of mean");
    o = d, o.reduction = (tj_reduction)-1;
    check_error(x, t, o, "cross_entropy(f32[6,5], i64[6])", "reduction -1 is not one of");
    o = d, o.label_smoothing = 1.5;
    check_error(x, t, o, "cross_entropy(f32[6,5], i64[6])", "label_smoothing 1.5 is not in [0, 1]");
    check_error(x, tj_ones(TJ_I64, 2, (int64_t[]){6, 5}), d, "cross_entropy(f32[6,5], i64[6,5])",
                "holds class probabilities and must be float, got i64");
    o = d, o.ignore_index = 0;
    check_error(x, q, o, "cross_entropy(f32[6,5], f32[6,5])",
                "ignore_index 0 is not supported with class-probability targets");
    check_error(x, tj_ones(TJ_I64, 1, (int64_t[]){4}), d, "cross_entropy(f32[6,5], i64[4])",
                "target i64[4] is neither logits' shape without the class dim ([6])");
    check_error(G("x3"), tj_ones(TJ_I64, 2, (int64_t[]){2, 5}), d,
                "cross_entropy(f32[2,5,3], i64[2,5])", "without the class dim ([2,3])");
    check_error(x, tj_ones(TJ_F32, 1, (int64_t[]){6}), d, "cross_entropy(f32[6,5], f32[6])",
                "target of class indices must be i64 or i32, got f32");
    check_error(x, tj_ones(TJ_U8, 1, (int64_t[]){6}), d, "cross_entropy(f32[6,5], u8[6])",
                "must be i64 or i32, got u8");
    o = d, o.weight = tj_ones(TJ_F32, 1, (int64_t[]){4});
    check_error(x, t, o, "cross_entropy(f32[6,5], i64[6], f32[4])",
                "weight must be 1-D [C] with C = 5, got f32[4]");
    o = d, o.weight = tj_ones(TJ_F32, 2, (int64_t[]){1, 5});
    check_error(x, t, o, "cross_entropy(f32[6,5], i64[6], f32[1,5])", "weight must be 1-D [C]");
    o = d, o.weight = tj_ones(TJ_F64, 1, (int64_t[]){5});
    check_error(x, t, o, "cross_entropy(f32[6,5], i64[6], f64[5])",
                "weight must have logits' dtype f32, got f64");
    o = d, o.weight = tj_ones(TJ_I64, 1, (int64_t[]){5});
    check_error(x, q, o, "cross_entropy(f32[6,5], f32[6,5], i64[5])", "weight must be float, got i64");
    /* data-dependent: a target that is neither a class nor ignored */
    int64_t bad[6] = {0, 1, 5, 0, 0, 0}, neg[6] = {0, 1, -2, 0, 0, 0};
    tj_tensor *tb = tj_from_data(TJ_I64, 1, (int64_t[]){6}, bad);
    tj_tensor *tn = tj_from_data(TJ_I64, 1, (int64_t[]){6}, neg);
    check_error2(x, tb, d, "cross_entropy(f32[6,5], i64[6])", "target 5 is out of range",
                 "index 5 is out of range");
    check_error2(x, tn, d, "cross_entropy(f32[6,5], i64[6])", "target -2 is out of range",
                 "index -2 is out of range");
    o = d, o.ignore_index = 5;   /* ignored: fine */
    assert_non_null(tj_cross_entropy_ex(x, tb, &o));
    o = d, o.ignore_index = -2;
    assert_non_null(tj_cross_entropy_ex(x, tn, &o));
    /* NULL inputs: NULL, keeping the first error */
    assert_null(tj_cross_entropy_ex(NULL, t, &d));
    assert_null(tj_cross_entropy_ex(x, NULL, &d));
    tj_clear_error();
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
    const struct CMUnitTest tests[] = {
        T(test_golden_cases),
        T(test_defaults),
        T(test_errors),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
