/* test_empty.c - every op on tensors without elements ([0], [3,0], [2,0,4],
 * [0,3]), eagerly and compiled.
 *
 * Sweeps: every UNARY and BINARY row of ops.def (tensor-tensor, broadcast,
 * and the _s form) with where, lerp, clamp and cast, in every dtype the row
 * accepts; every reduction over every single dim and over all dims, keepdim
 * both ways (a reduced size-0 dim gives the identity, or PyTorch's error for
 * amax, amin, argmax and argmin, compiled too). Results have the shapes and
 * dtypes of the eager ones, and eager results the shapes the rule gives.
 * Then the golden cases of tests/golden/empty/cases.txt (scripts/golden/
 * empty.py, PyTorch): views, contractions with K = 0, the neural-network ops,
 * data movement with empty pieces, each against PyTorch's shape, dtype and
 * values, eagerly and compiled. Kernels are cached under the default cache. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../frontend/fe.h"
#include "util.h"

static const int64_t shapes[][3] = {{0}, {3, 0}, {2, 0, 4}, {0, 3}};
static const int ranks[] = {1, 2, 3, 2};
#define NSHAPES ((int)(sizeof ranks / sizeof *ranks))
static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I32, TJ_I64, TJ_U8, TJ_BOOL};
#define NDTYPES ((int)(sizeof dtypes / sizeof *dtypes))

/* ---- running a model eagerly and compiled --------------------------------------------------- */

static tj_tensor *compiled(tj_model_fn fn, void *ctx, tj_tensor **args, int nargs)
{
    tj_compiled *c = tj_compile(fn, ctx, &(tj_compile_options){.name = "empty"});
    assert_non_null(c);
    tj_tensor *r = tj_call(c, args, nargs);
    tj_compiled_free(c);
    return r;
}

static void assert_same_type(tj_tensor *got, tj_tensor *want, const char *what)
{
    char g[96], w[96];
    if (!got)
        fail_msg("%s: %s", what, tj_last_error());
    if (tj_dtype_of(got) != tj_dtype_of(want) || tj_ndim(got) != tj_ndim(want) ||
        memcmp(tj_shape(got), tj_shape(want), sizeof(int64_t) * (size_t)tj_ndim(got)))
        fail_msg("%s: %s, eager %s", what, tj_describe(got, g, sizeof g),
                 tj_describe(want, w, sizeof w));
}

/* Runs model compiled: the eager result want must come out. */
static void check_compiled(tj_model_fn fn, void *ctx, tj_tensor **args, int nargs, tj_tensor *want,
                           const char *what)
{
    tj_tensor *got = compiled(fn, ctx, args, nargs);
    assert_same_type(got, want, what);
    tu_assert_close(got, want, 1e-6, 1e-6);
}

/* Runs model compiled: the eager call failed with message why, so must this. */
static void check_compiled_error(tj_model_fn fn, void *ctx, tj_tensor **args, int nargs,
                                 const char *why, const char *what)
{
    tj_tensor *got = compiled(fn, ctx, args, nargs);
    if (got)
        fail_msg("%s: eager failed (%s), compiled gave a result", what, why);
    char base[1024];   /* the message without its call site: the two calls sit on other lines */
    snprintf(base, sizeof base, "%s", why);
    for (char *at = strstr(base, " at tests/"); at; at = strstr(at + 1, " at tests/"))
        if (!strstr(at + 1, " at tests/"))
            *at = '\0';
    if (!strstr(tj_last_error(), base))
        fail_msg("%s: compiled error \"%s\", eager \"%s\"", what, tj_last_error(), why);
    tj_clear_error();
}

/* ---- pointwise rows ---------------------------------------------------------------------------- */

typedef struct pwctx {
    ir_op op;
    int form;        /* 0: x op x; 1: x op ones[1]; 2: x op 2.5 (weak scalar); 3: x op 2 */
    ir_attrs a;
} pwctx;

static tj_tensor *model_pw(void *ctx, tj_tensor *const *args, int nargs)
{
    const pwctx *c = ctx;
    (void)nargs;
    tj_tensor *x = args[0];
    if (ir_ops[c->op].kind != IR_BINARY)
        return fe_apply(c->op, &x, 1, &c->a);
    tj_tensor *in[2] = {x, c->form == 0 ? x : c->form == 1 ? args[1]
                                            : fe_wrap_scalar(c->form == 2 ? 2.5 : 2, x)};
    return fe_apply(c->op, in, 2, NULL);
}

/* Whether op's rule accepts dtype dt (on a one-element tensor). */
static bool accepts(const pwctx *c, tj_dtype dt)
{
    tj_tensor *args[2] = {tj_ones(dt, 1, (int64_t[]){1}), tj_ones(dt, 1, (int64_t[]){1})};
    tj_tensor *r = model_pw((void *)c, args, 2);
    tj_clear_error();
    return r != NULL;
}

static void check_pw(pwctx *c, tj_dtype dt, int s)
{
    if (!accepts(c, dt))
        return;
    tj_tensor *args[2] = {tj_zeros(dt, ranks[s], shapes[s]), tj_ones(dt, 1, (int64_t[]){1})};
    char what[128];
    snprintf(what, sizeof what, "%s form %d on %s", ir_ops[c->op].name, c->form,
             tj_describe(args[0], (char[64]){0}, 64));
    tj_tensor *want = model_pw(c, args, 2);
    if (!want)
        fail_msg("%s: %s", what, tj_last_error());
    assert_int_equal(tj_numel(want), 0);
    assert_int_equal(tj_ndim(want), ranks[s]);
    assert_memory_equal(tj_shape(want), shapes[s], sizeof(int64_t) * (size_t)ranks[s]);
    check_compiled(model_pw, c, args, c->form == 1 ? 2 : 1, want, what);
}

static void test_pointwise_rows(void **state)
{
    (void)state;
    for (int op = 0; op < IR_NUM_OPS; op++) {
        ir_kind k = ir_ops[op].kind;
        if (k != IR_UNARY && k != IR_BINARY)
            continue;
        for (int form = 0; form < (k == IR_BINARY ? 4 : 1); form++)
            for (int d = 0; d < NDTYPES; d++)
                for (int s = 0; s < NSHAPES; s++) {
                    tj_scope_begin();
                    pwctx c = {(ir_op)op, form, {{{0}}}};
                    check_pw(&c, dtypes[d], s);
                    tj_scope_end();
                }
    }
}

/* where, lerp, clamp, cast on every shape, with a broadcast operand. */
static tj_tensor *model_other(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *x = args[0], *one = args[1];
    switch (*(const int *)ctx) {
    case 0: return tj_where(tj_gt(x, one), x, one);
    case 1: return tj_lerp_s(x, one, 0.25);
    case 2: return tj_lerp(one, x, x);
    case 3: return tj_clamp(x, -1, 0.5);
    case 4: return tj_cast(x, TJ_I32);
    case 5: return tj_add(tj_cast(x, TJ_F64), tj_mul_s(one, 3));
    default: return tj_relu(tj_neg(tj_exp(x)));
    }
}

static void test_pointwise_other(void **state)
{
    (void)state;
    for (int k = 0; k < 7; k++)
        for (int s = 0; s < NSHAPES; s++) {
            tj_scope_begin();
            tj_tensor *args[2] = {tj_zeros(TJ_F32, ranks[s], shapes[s]),
                                  tj_ones(TJ_F32, 1, (int64_t[]){1})};
            char what[64];
            snprintf(what, sizeof what, "case %d on shape %d", k, s);
            tj_tensor *want = model_other(&k, args, 2);
            if (!want)
                fail_msg("%s: %s", what, tj_last_error());
            assert_int_equal(tj_numel(want), 0);
            check_compiled(model_other, &k, args, 2, want, what);
            tj_scope_end();
        }
}

/* ---- reductions --------------------------------------------------------------------------------- */

typedef struct redctx {
    ir_op op;
    int dim;         /* -100: every dim */
    bool keep;
} redctx;

static tj_tensor *model_red(void *ctx, tj_tensor *const *args, int nargs)
{
    const redctx *c = ctx;
    (void)nargs;
    int n = c->dim == -100 ? 0 : 1;
    ir_attrs at = {0};
    ir_attr_dims(&at.a[0], &c->dim, n);
    int kd = ir_ops[c->op].nattrs - 1;
    if (c->op == OP_var || c->op == OP_std)
        ir_attr_int(&at.a[1], 1);
    ir_attr_int(&at.a[kd], c->keep);
    return fe_apply(c->op, (tj_tensor *const *)args, 1, &at);
}

/* Whether reducing dim (-100: all) of shape s reduces a size-0 dim. */
static bool reduces_empty(int s, int dim)
{
    for (int d = 0; d < ranks[s]; d++)
        if ((dim == -100 || dim == d) && shapes[s][d] == 0)
            return true;
    return false;
}

static void check_red(ir_op op, tj_dtype dt, int s, int dim, bool keep)
{
    redctx c = {op, dim, keep};
    tj_tensor *x = tj_zeros(dt, ranks[s], shapes[s]);
    char what[128];
    snprintf(what, sizeof what, "%s dim %d keep %d of %s", ir_ops[op].name, dim, keep,
             tj_describe(x, (char[64]){0}, 64));
    tj_tensor *want = model_red(&c, &x, 1);
    bool no_identity = op == OP_amax || op == OP_amin || op == OP_argmax || op == OP_argmin;
    bool float_only = op == OP_mean || op == OP_var || op == OP_std;
    if (!want) {
        /* accepted reasons: no identity over an empty dim, a dtype the op refuses */
        const char *why = tj_last_error();
        bool ok = (no_identity && reduces_empty(s, dim) &&
                   (strstr(why, "size 0") || strstr(why, "empty"))) ||
                  (float_only && !ir_dtype_is_float(dt)) ||
                  (op == OP_xor_sum && ir_dtype_is_float(dt)) ||   /* integers and bool only */
                  (op == OP_argmax || op == OP_argmin ? dt == TJ_BOOL : false);
        if (!ok)
            fail_msg("%s: %s", what, why);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", why);
        tj_clear_error();
        check_compiled_error(model_red, &c, &x, 1, msg, what);
        return;
    }
    if (no_identity && reduces_empty(s, dim))
        fail_msg("%s: reduced an empty dim without an identity", what);
    /* a result element of a reduction over nothing is its identity */
    if (tj_numel(want) > 0 && reduces_empty(s, dim)) {
        double id = op == OP_prod || op == OP_all ? 1 : op == OP_logsumexp ? -INFINITY : 0;
        bool nan = op == OP_mean || op == OP_var || op == OP_std;
        tj_tensor *flat = tj_reshape(want, 1, (int64_t[]){-1});
        for (int64_t i = 0; i < tj_numel(want); i++) {
            double v = tj_get(flat, &i);
            if (nan ? !isnan(v) : v != id)
                fail_msg("%s: element %lld is %g, not the identity", what, (long long)i, v);
        }
    }
    check_compiled(model_red, &c, &x, 1, want, what);
}

static void test_reductions(void **state)
{
    (void)state;
    static const tj_dtype rdt[] = {TJ_F32, TJ_F64, TJ_I64, TJ_U8, TJ_BOOL};
    for (int op = 0; op < IR_NUM_OPS; op++) {
        if (ir_ops[op].kind != IR_REDUCE)
            continue;
        for (size_t d = 0; d < sizeof rdt / sizeof *rdt; d++)
            for (int s = 0; s < NSHAPES; s++)
                for (int dim = -1; dim < ranks[s]; dim++)
                    for (int keep = 0; keep < 2; keep++) {
                        tj_scope_begin();
                        check_red((ir_op)op, rdt[d], s, dim < 0 ? -100 : dim, keep);
                        tj_scope_end();
                    }
    }
}

/* ---- golden cases ------------------------------------------------------------------------------ */

#define A(k) args[k]
#define CASE(name, expr) \
    static tj_tensor *case_##name(void *ctx, tj_tensor *const *args, int nargs) \
    { \
        (void)ctx; \
        (void)nargs; \
        return (expr); \
    }

static tj_tensor *sdpa(tj_tensor *q, tj_tensor *k, tj_tensor *v)
{
    return tj_scaled_dot_product_attention(q, k, v, NULL, false, 0);
}

static tj_tensor *cat2(tj_tensor *a, tj_tensor *b, int dim)
{
    tj_tensor *xs[2] = {a, b};
    return tj_cat(xs, 2, dim);
}

static tj_tensor *stack2(tj_tensor *a, tj_tensor *b)
{
    tj_tensor *xs[2] = {a, b};
    return tj_stack(xs, 2, 0);
}

static const int64_t k2[2] = {2, 2}, s2[2] = {2, 2}, p0[2] = {0, 0}, d1[2] = {1, 1};

/* max_pool2d's indices (torch's return_indices) in ceil mode */
static tj_tensor *pool_indices(tj_tensor *x)
{
    tj_tensor *idx = NULL;
    tj_max_pool2d_options o = tj_max_pool2d_defaults();
    o.ceil_mode = true;
    return tj_max_pool2d_ex(x, k2, &o, &idx) ? idx : NULL;
}
static const int64_t s1[2] = {1, 1};

CASE(reshape_0_5, tj_reshape(A(0), 2, (int64_t[]){0, 5}))
CASE(reshape_neg1, tj_reshape(A(0), 2, (int64_t[]){-1, 4}))
CASE(reshape_ambiguous, tj_reshape(A(0), 2, (int64_t[]){0, -1}))
CASE(permute, tj_permute(A(0), (int[]){2, 0, 1}))
CASE(transpose, tj_transpose(A(0), 0, 1))
CASE(slice_rows, tj_slice(A(0), 0, 1, 3, 1))
CASE(slice_to_empty, tj_slice(A(0), 1, 2, 2, 1))
CASE(expand_to_0, tj_expand(A(0), 2, (int64_t[]){3, 0}))
CASE(expand_rows, tj_expand(A(0), 2, (int64_t[]){5, 0}))
CASE(squeeze, tj_squeeze(A(0), NULL, 0))
CASE(unsqueeze, tj_unsqueeze(A(0), 1))
CASE(flatten, tj_flatten(A(0), 0, -1))
CASE(clone_t, tj_clone(tj_transpose(A(0), 0, 1)))
CASE(cast_i64, tj_cast(A(0), TJ_I64))
CASE(matmul_k0, tj_matmul(A(0), A(1)))
CASE(matmul_m0, tj_matmul(A(0), A(1)))
CASE(matmul_n0, tj_matmul(A(0), A(1)))
CASE(matmul_batch_k0, tj_matmul(A(0), A(1)))
CASE(matmul_dot0, tj_matmul(A(0), A(1)))
CASE(matmul_vec_k0, tj_matmul(A(0), A(1)))
CASE(matmul_k0_f64, tj_matmul(A(0), A(1)))
CASE(linear_k0, tj_linear(A(0), A(1), A(2)))
CASE(conv2d_n0, tj_conv2d(A(0), A(1), NULL, s1, p0, d1, 1))
CASE(softmax_empty_dim, tj_softmax(A(0), 1))
CASE(softmax_empty_rows, tj_softmax(A(0), 1))
CASE(log_softmax_empty_dim, tj_log_softmax(A(0), 1))
CASE(layer_norm_rows, tj_layer_norm(A(0), 1, A(1), A(2), 1e-5))
CASE(layer_norm_empty, tj_layer_norm(A(0), 1, NULL, NULL, 1e-5))
CASE(rms_norm_rows, tj_rms_norm(A(0), 1, A(1), 1e-5))
CASE(batch_norm, tj_batch_norm(A(0), A(1), tj_add_s(tj_abs(A(2)), 1), NULL, NULL, 1e-5))
CASE(max_pool2d, tj_max_pool2d(A(0), k2, s2, p0, d1))
CASE(avg_pool2d, tj_avg_pool2d(A(0), k2, s2, p0, true))
CASE(max_pool2d_indices, pool_indices(A(0)))
CASE(avg_pool2d_options, tj_avg_pool2d_ex(A(0), k2, &(tj_avg_pool2d_options){
                                              .ceil_mode = true, .count_include_pad = true,
                                              .divisor_override = 3}))
CASE(embedding_none, tj_embedding(A(0), A(1)))
CASE(embedding_2d, tj_embedding(A(0), A(1)))
CASE(sdpa_no_queries, sdpa(A(0), A(1), A(2)))
CASE(sdpa_no_keys, sdpa(A(0), A(1), A(2)))
CASE(cross_entropy, tj_cross_entropy(A(0), A(1)))
CASE(cat_empty_piece, cat2(A(0), A(1), 1))
CASE(cat_rows, cat2(A(0), A(1), 0))
CASE(cat_all_empty, cat2(A(0), A(1), 0))
CASE(stack, stack2(A(0), A(1)))
CASE(gather, tj_gather(A(0), 1, A(1)))
CASE(gather_empty, tj_gather(A(0), 1, A(1)))
CASE(index_select_none, tj_index_select(A(0), 0, A(1)))
CASE(index_select_rows0, tj_index_select(A(0), 1, A(1)))
CASE(pad_empty_dim, tj_pad(A(0), (int64_t[]){1, 2}, 1, 7.0))
CASE(pad_empty_rows, tj_pad(A(0), (int64_t[]){1, 1}, 1, 7.0))
CASE(flip, tj_flip(A(0), (int[]){0, 2}, 2))
CASE(where, tj_where(A(0), A(1), A(2)))
CASE(sum_of_matmul_k0, tj_sum(tj_add_s(tj_matmul(A(0), A(1)), 1), (int[]){0}, 1, false))
CASE(mean_then_add, tj_add(tj_mean(A(0), (int[]){1}, 1, false), A(1)))
CASE(softmax_sum_rows0, tj_sum(tj_softmax(tj_mul_s(A(0), 2), 1), (int[]){0}, 1, false))

static const struct {
    const char *name;
    tj_model_fn fn;
} cases[] = {
#define C(name) {#name, case_##name}
    C(reshape_0_5), C(reshape_neg1), C(reshape_ambiguous), C(permute), C(transpose),
    C(slice_rows), C(slice_to_empty), C(expand_to_0), C(expand_rows), C(squeeze),
    C(unsqueeze), C(flatten), C(clone_t), C(cast_i64), C(matmul_k0), C(matmul_m0),
    C(matmul_n0), C(matmul_batch_k0), C(matmul_dot0), C(matmul_vec_k0), C(matmul_k0_f64),
    C(linear_k0), C(conv2d_n0), C(softmax_empty_dim), C(softmax_empty_rows),
    C(log_softmax_empty_dim), C(layer_norm_rows), C(layer_norm_empty), C(rms_norm_rows),
    C(batch_norm), C(max_pool2d), C(avg_pool2d), C(max_pool2d_indices),
    C(avg_pool2d_options), C(embedding_none), C(embedding_2d),
    C(sdpa_no_queries), C(sdpa_no_keys), C(cross_entropy), C(cat_empty_piece), C(cat_rows),
    C(cat_all_empty), C(stack), C(gather), C(gather_empty), C(index_select_none),
    C(index_select_rows0), C(pad_empty_dim), C(pad_empty_rows), C(flip), C(where),
    C(sum_of_matmul_k0), C(mean_then_add), C(softmax_sum_rows0),
#undef C
};
#define NCASES ((int)(sizeof cases / sizeof *cases))

/* The input a spec dt:shape[:mod] names (scripts/golden/empty.py builds the same). */
static tj_tensor *make_input(const char *spec)
{
    char dtn[8] = {0}, shp[64] = {0};
    int mod = 5;
    if (sscanf(spec, "%7[^:]:%63[^:]:%d", dtn, shp, &mod) < 2)
        fail_msg("bad input spec %s", spec);
    tj_dtype dt = ir_dtype_from_name(dtn);
    int64_t shape[TJ_MAX_DIMS], n = 1;
    int nd = tu_parse_ints(shp, shape);
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    double *v = malloc(sizeof *v * (size_t)(n + 1));
    assert_non_null(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = ir_dtype_is_float(dt) ? (double)(i % 7) / 2 - 1 : dt == TJ_BOOL ? (double)(i % 2)
                                                                           : (double)(i % mod);
    tj_tensor *t = tu_tensor(dt, nd, shape, v);
    free(v);
    return t;
}

static void run_golden(int k, int nin, char specs[][32], const char *dt, const char *shape,
                       long off, tj_tensor *want_all)
{
    tj_tensor *args[4];
    for (int j = 0; j < nin; j++)
        args[j] = make_input(specs[j]);
    tj_tensor *eager = cases[k].fn(NULL, args, nin);
    if (!strcmp(dt, "err")) {
        if (eager)
            fail_msg("%s: PyTorch refuses it, tjit gave a result", cases[k].name);
        char why[512];
        snprintf(why, sizeof why, "%s", tj_last_error());
        tj_clear_error();
        check_compiled_error(cases[k].fn, NULL, args, nin, why, cases[k].name);
        return;
    }
    if (!eager)
        fail_msg("%s: %s", cases[k].name, tj_last_error());
    tj_tensor *want = tu_golden_part(want_all, off, shape);
    if (strcmp(tj_dtype_name(tj_dtype_of(eager)), dt))
        fail_msg("%s: dtype %s, PyTorch %s", cases[k].name, tj_dtype_name(tj_dtype_of(eager)), dt);
    tu_assert_close_any(eager, want, 1e-5, 1e-6);
    char what[96];
    snprintf(what, sizeof what, "%s compiled", cases[k].name);
    check_compiled(cases[k].fn, NULL, args, nin, eager, what);
}

static void test_golden(void **state)
{
    (void)state;
    FILE *f = tu_golden_cases("empty");
    tj_tensor *want = tu_golden("empty", "want");
    bool seen[NCASES] = {0};
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char name[64], specs[4][32], dt[8], shape[64];
        int nin, pos, used;
        if (sscanf(line, "%63s %d%n", name, &nin, &pos) != 2 || nin < 0 || nin > 4)
            fail_msg("bad line: %s", line);
        for (int j = 0; j < nin; j++, pos += used)
            if (sscanf(line + pos, "%31s%n", specs[j], &used) != 1)
                fail_msg("bad line: %s", line);
        long off;
        if (sscanf(line + pos, "%7s %63s %ld", dt, shape, &off) != 3)
            fail_msg("bad line: %s", line);
        int k = 0;
        while (k < NCASES && strcmp(cases[k].name, name))
            k++;
        if (k == NCASES)
            fail_msg("cases.txt names %s, which the test lacks", name);
        seen[k] = true;
        tj_scope_begin();
        run_golden(k, nin, specs, dt, shape, off, want);
        tj_scope_end();
    }
    fclose(f);
    for (int k = 0; k < NCASES; k++)
        if (!seen[k])
            fail_msg("%s is not in cases.txt (rerun scripts/golden/empty.py)", cases[k].name);
}

/* ---- creation and splitting ------------------------------------------------------------------------ */

static void test_create_split(void **state)
{
    (void)state;
    int64_t z[2] = {0, 3};
    tj_tensor *made[] = {tj_empty(TJ_F32, 2, z), tj_zeros(TJ_I64, 2, z), tj_ones(TJ_BOOL, 2, z),
                         tj_full(TJ_F64, 2, z, 2), tj_rand(TJ_F32, 2, z), tj_randn(TJ_F64, 2, z),
                         tj_from_data(TJ_F32, 2, z, (float[1]){0})};
    for (size_t k = 0; k < sizeof made / sizeof *made; k++) {
        assert_non_null(made[k]);
        assert_int_equal(tj_numel(made[k]), 0);
        assert_true(tj_is_contiguous(made[k]));
    }
    assert_int_equal(tj_numel(tj_arange(TJ_I64, 5, 5, 1)), 0);
    tu_assert_error(tj_arange(TJ_F32, 0, -1, 1), "wrong side", NULL);   /* PyTorch too */
    /* [3,0] has strides [1,1] like PyTorch's, and is contiguous, transposed or not */
    tj_tensor *e = tj_zeros(TJ_F32, 2, (int64_t[]){3, 0});
    assert_true(tj_is_contiguous(e) && tj_is_contiguous(tj_transpose(e, 0, 1)));
    /* split of an empty dim: one empty piece; along a kept dim: pieces of it */
    tj_tensor *out[4];
    assert_int_equal(tj_split(tj_zeros(TJ_F32, 2, z), 2, 0, out, 4), 1);
    assert_int_equal(tj_size(out[0], 0), 0);
    assert_int_equal(tj_split(tj_zeros(TJ_F32, 2, (int64_t[]){3, 0}), 2, 0, out, 4), 2);
    assert_int_equal(tj_size(out[1], 0), 1);
    /* copy_ into an empty tensor, and .npy round trip */
    assert_int_equal(tj_copy_(e, tj_ones(TJ_F32, 1, (int64_t[]){1})), 0);
    char path[] = "/tmp/tj_empty_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(tj_save_npy(e, path), 0);
    tj_tensor *back = tj_load_npy(path);
    remove(path);
    assert_non_null(back);
    assert_int_equal(tj_ndim(back), 2);
    assert_int_equal(tj_size(back, 0), 3);
    assert_int_equal(tj_size(back, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pointwise_rows, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_pointwise_other, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_reductions, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_golden, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_create_split, tu_scope_setup, tu_scope_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
