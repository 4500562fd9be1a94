/* test_api.c - the public API as a whole (include/tjit.h): every row of
 * ir/ops.def has its public entry point, and the runtime services a user's
 * own benchmark needs work as documented: compiled-plan statistics, the
 * allocator's trim, the thread pool's parallel_for, dtype facts.
 *
 * The entry-point table is generated from ops.def: one row, one address of
 * tj_<name> (with its exact signature for the pointwise rows, and tj_<name>_s
 * for the binary ones), so an op without its entry point fails to compile.
 * Rows whose entry point has another name, and internal rows with none, are
 * listed below with the reason. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tjit_inspect.h>

#include "util.h"

#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ON 0   /* runtime/alloc.c bypasses its cache under ASan */
#else
#define CACHE_ON 1
#endif

/* ---- every op has its entry point ------------------------------------------------ */

typedef void (*entry_fn)(void);
typedef tj_tensor *(*unary_fn)(tj_tensor *);
typedef tj_tensor *(*binary_fn)(tj_tensor *, tj_tensor *);
typedef tj_tensor *(*binary_s_fn)(tj_tensor *, double);

typedef struct entry {
    const char *op;
    entry_fn fn;     /* tj_<name>; NULL for an internal row */
    entry_fn fn_s;   /* binary rows: tj_<name>_s */
} entry;

/* Rows whose entry point has another name. */
#define tj_sdpa tj_scaled_dot_product_attention   /* PyTorch's name */
#define tj_copy tj_clone                          /* (tj_contiguous too, when strided) */
#define tj_add_alpha tj_add_ex                    /* torch.add(a, b, alpha=); tj_add_s_ex too */
#define tj_sub_alpha tj_sub_ex
#define tj_div_mode tj_div_ex                     /* torch.div(a, b, rounding_mode=) */
#define tj_qr_q tj_qr                             /* linalg via LAPACK: Q, and R when asked */
/* interpolate, embedding_bag, einsum, scatter_reduce (issue 11) */
#define tj_upsample_nearest tj_interpolate         /* F.interpolate: its mode picks the row */
#define tj_upsample_bilinear2d tj_interpolate
#define tj_upsample_bicubic2d tj_interpolate

/* Internal rows: no public function records them. Each maps to NULL here
 * and has its reason in internal_rows[]. */
#define TJ_NO_ENTRY 0
#undef tj_scalar          /* its call-site macro (tjit.h) */
#define tj_scalar TJ_NO_ENTRY   /* tj_scalar() exists but makes a 0-dim `full` */
#define tj_max_pool2d_indices TJ_NO_ENTRY
#define tj_cummax_indices TJ_NO_ENTRY
#define tj_cummin_indices TJ_NO_ENTRY
#define tj_slogdet_sign TJ_NO_ENTRY   /* linalg via LAPACK (issue 11) */
#define tj_qr_r TJ_NO_ENTRY
#define tj_qlinear TJ_NO_ENTRY
#define tj_qconv2d TJ_NO_ENTRY

static const struct {
    const char *op, *why;
} internal_rows[] = {
    {"scalar", "a wrapped number (weak 0-dim tensor) that the _s variants of the binary ops "
               "(tj_add_s, ...) make for their double operand; it promotes like a Python "
               "number, which no user-made tensor does"},
    {"max_pool2d_indices", "max_pool2d's return_indices: tj_max_pool2d_ex records it next to "
                           "max_pool2d when asked for the indices (a node has one result)"},
    {"cummax_indices", "tj_cummax's indices: recorded when asked for (a node has one result)"},
    {"cummin_indices", "tj_cummin's indices: recorded when asked for (a node has one result)"},
    {"slogdet_sign", "tj_slogdet's sign: recorded when asked for (a node has one result)"},
    {"qr_r", "tj_qr's R: recorded when asked for (a node has one result)"},
    {"qlinear", "the int8 GEMM the quantization fold (passes/fold_quant.c) makes of "
                "dequantize -> linear/matmul -> quantize; users write those ops"},
    {"qconv2d", "the int8 convolution the quantization fold makes of dequantize -> conv2d -> "
                "quantize; users write those ops"},
};

/* Fills out (IR rows at most) from ops.def; returns the row count. */
static int entry_table(entry *out, int max)
{
    int n = 0;
#define OP(name, kind, nmin, nmax, decomp, attrs) \
    if (n < max)                                  \
        out[n] = (entry){#name, (entry_fn)tj_##name, NULL};    \
    n++;
#define UNARY(name, ...)                          \
    {                                             \
        unary_fn f = tj_##name;                   \
        if (n < max)                              \
            out[n] = (entry){#name, (entry_fn)f, NULL}; \
        n++;                                      \
    }
#define BINARY(name, ...)                         \
    {                                             \
        binary_fn f = tj_##name;                  \
        binary_s_fn s = tj_##name##_s;            \
        if (n < max)                              \
            out[n] = (entry){#name, (entry_fn)f, (entry_fn)s}; \
        n++;                                      \
    }
#include "../ir/ops.def"
    return n;
}
#undef tj_scalar
#undef tj_max_pool2d_indices
#undef tj_cummax_indices
#undef tj_cummin_indices
#undef tj_slogdet_sign
#undef tj_qr_r
#undef tj_qr_q
#undef tj_qlinear
#undef tj_qconv2d
#undef tj_sdpa
#undef tj_copy
#undef tj_add_alpha
#undef tj_sub_alpha
#undef tj_div_mode
#undef tj_upsample_nearest
#undef tj_upsample_bilinear2d
#undef tj_upsample_bicubic2d

static const char *internal_why(const char *op)
{
    for (size_t k = 0; k < sizeof internal_rows / sizeof *internal_rows; k++)
        if (!strcmp(internal_rows[k].op, op))
            return internal_rows[k].why;
    return NULL;
}

static void test_every_op_has_an_entry_point(void **state)
{
    (void)state;
    entry rows[512];
    int n = entry_table(rows, 512);
    assert_true(n <= 512);
    /* the generated table is the op table, row for row */
    assert_int_equal(n, tj_op_count());
    int internal = 0;
    for (int k = 0; k < n; k++) {
        tj_op_info o;
        assert_int_equal(tj_op_get(k, &o), 0);
        assert_string_equal(rows[k].op, o.name);
        const char *why = internal_why(rows[k].op);
        if (!rows[k].fn && !why)
            fail_msg("op %s has no public entry point and no reason in internal_rows", rows[k].op);
        if (rows[k].fn && why)
            fail_msg("op %s is listed as internal but has an entry point", rows[k].op);
        if (!strcmp(o.kind, "binary") && !rows[k].fn_s)
            fail_msg("binary op %s has no tj_%s_s", o.name, o.name);
        internal += !rows[k].fn;
    }
    /* every exemption names a row of the table, with a reason */
    for (size_t k = 0; k < sizeof internal_rows / sizeof *internal_rows; k++) {
        if (tj_op_find(internal_rows[k].op) < 0)
            fail_msg("internal_rows names '%s', which is no op", internal_rows[k].op);
        assert_true(strlen(internal_rows[k].why) > 20);
    }
    assert_int_equal(internal, (int)(sizeof internal_rows / sizeof *internal_rows));
}

/* ---- the _ex forms: torch's other arguments in an options struct ------------------- */

/* Each _ex form with its defaults (or NULL options) is its plain form; the
 * options change the result. tests/test_contract.c checks them against PyTorch. */
static void test_ex_entry_points(void **state)
{
    (void)state;
    tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){2, 3, 7, 7});
    const int64_t k[2] = {3, 3}, s[2] = {2, 2};
    tj_max_pool2d_options mo = tj_max_pool2d_defaults(), mz;
    memset(&mz, 0, sizeof mz);   /* a zeroed struct is the defaults */
    assert_true(mo.stride == mz.stride && mo.padding == mz.padding &&
                mo.dilation == mz.dilation && mo.ceil_mode == mz.ceil_mode);
    tj_tensor *idx = NULL, *plain = tj_max_pool2d(x, k, s, NULL, NULL);
    tu_assert_close(tj_max_pool2d_ex(x, k, NULL, NULL), tj_max_pool2d(x, k, NULL, NULL, NULL), 0, 0);
    mo.stride = s;
    tu_assert_close(tj_max_pool2d_ex(x, k, &mo, &idx), plain, 0, 0);
    assert_int_equal(tj_dtype_of(idx), TJ_I64);
    tj_tensor *x8 = tj_randn(TJ_F32, 4, (int64_t[]){1, 1, 3, 8});
    assert_int_equal(tj_shape(tj_max_pool2d_ex(x8, k, &mo, NULL))[3], 3);
    mo.ceil_mode = true;   /* 8 = 3 + 2 * 2 + 1: a 4th window hangs over the edge */
    assert_int_equal(tj_shape(tj_max_pool2d_ex(x8, k, &mo, NULL))[3], 4);
    mo.padding = (int64_t[]){1, 1};   /* 10 = 3 + 3 * 2 + 1: a 5th */
    assert_int_equal(tj_shape(tj_max_pool2d_ex(x8, k, &mo, NULL))[3], 5);

    tj_avg_pool2d_options ao = tj_avg_pool2d_defaults();
    assert_true(!ao.stride && !ao.padding && !ao.ceil_mode && ao.count_include_pad &&
                !ao.divisor_override);
    tu_assert_close(tj_avg_pool2d_ex(x, k, NULL), tj_avg_pool2d(x, k, NULL, NULL, true), 0, 0);
    ao.divisor_override = 1;   /* the window sums */
    tu_assert_close(tj_avg_pool2d_ex(x, k, &ao), tj_mul_s(tj_avg_pool2d_ex(x, k, NULL), 9),
                    1e-5, 1e-5);
    tj_max_pool2d_options bad = tj_max_pool2d_defaults();
    bad.dilation = (int64_t[]){0, 1};
    idx = x;
    tu_assert_error(tj_max_pool2d_ex(x, k, &bad, &idx), "max_pool2d(f32[2,3,7,7])",
                    "dilation must be positive, got [0, 1]", NULL);
    assert_null(idx);
}

/* ---- dtypes ------------------------------------------------------------------------ */

static void test_dtype_facts(void **state)
{
    (void)state;
    for (int d = 0; d < TJ_NUM_DTYPES; d++) {
        const char *name = tj_dtype_name((tj_dtype)d);
        bool want_float = name[0] == 'f' || !strcmp(name, "bf16");
        assert_int_equal(tj_dtype_is_float((tj_dtype)d), want_float);
        assert_true(tj_dtype_size((tj_dtype)d) >= 1);
    }
    assert_false(tj_dtype_is_float(TJ_NUM_DTYPES));
    assert_false(tj_dtype_is_float((tj_dtype)-1));
    assert_string_equal(tj_dtype_name(TJ_NUM_DTYPES), "?");
}

/* ---- compiled-plan statistics ---------------------------------------------------- */

static tj_tensor *model_pointwise(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    return tj_add_s(tj_mul(tj_sigmoid(args[0]), args[0]), 0.5);
}

/* exp is an intermediate (a kernel's output that flip, an eager call, reads):
 * the memory plan puts it in the arena. */
static tj_tensor *model_flip(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    tj_tensor *e = tj_exp(args[0]);
    return tj_mul(e, tj_flip(e, (int[]){0}, 1));
}

static tj_tensor *model_breaks(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx;
    (void)nargs;
    double s = tj_item(tj_sum(args[0], NULL, 0, false));   /* a graph break */
    return tj_mul_s(args[0], s);
}

static bool backend_eager(void)
{
    const char *b = getenv("TJIT_BACKEND");
    return b && !strcmp(b, "eager");
}

static void test_compiled_stats(void **state)
{
    (void)state;
    tj_compiled_stats st;
    st.graphs = 7;
    assert_int_equal(tj_compiled_stats_get(NULL, &st), -1);
    assert_int_equal(st.graphs, 0);
    tu_assert_error(NULL, "tj_compiled_stats_get", "NULL", NULL);

    tj_compiled *c = tj_compile(model_pointwise, NULL, &(tj_compile_options){.name = "stats"});
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.graphs + st.breaks, 0);
    assert_false(st.plan.compiled);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 16});   /* 256 bytes: no rounding */
    tj_tensor *y = NULL;
    for (int k = 0; k < 2; k++)
        tu_assert_close(y = tj_call(c, &x, 1), model_pointwise(NULL, &x, 1), 1e-6, 1e-6);
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.graphs, 1);
    assert_int_equal(st.breaks, 0);
    assert_int_equal(st.calls, 2);
    assert_int_equal(st.eager_calls, 0);
    if (st.plan.compiled) {   /* sigmoid(x) * x + 0.5: one fused kernel, nothing in between */
        assert_int_equal(st.plan.kernels, 1);
        assert_int_equal(st.plan.eager_calls, 0);
        assert_true(st.plan.compile_ms >= 0);
        assert_int_equal(st.plan.output_bytes, tj_numel(y) * (int64_t)tj_dtype_size(TJ_F32));
        assert_int_equal(st.plan.arena_bytes, 0);
        assert_int_equal(st.plan.buffers, 1);   /* the output */
        assert_int_equal(st.plan.peak_bytes,
                         st.plan.arena_bytes + st.plan.output_bytes + st.plan.scratch_bytes);
    } else {   /* TJIT_BACKEND=eager, or built without the JIT */
        assert_true(backend_eager() || st.plan.why[0]);
    }
    tj_compiled_free(c);

    c = tj_compile(model_flip, NULL, &(tj_compile_options){.name = "stats_flip"});
    x = tj_randn(TJ_F32, 2, (int64_t[]){64, 32});
    tu_assert_close(y = tj_call(c, &x, 1), model_flip(NULL, &x, 1), 1e-6, 1e-6);
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    if (st.plan.compiled) {   /* exp (kernel), flip (eager), mul (kernel) */
        assert_int_equal(st.plan.kernels, 2);
        assert_int_equal(st.plan.eager_calls, 1);
        assert_int_equal(st.plan.output_bytes, tj_numel(y) * 4);
        assert_true(st.plan.buffers >= 2);   /* exp(x) and the output at least */
        assert_true(st.plan.arena_bytes >= tj_numel(x) * 4);   /* exp(x) at least */
        assert_int_equal(st.plan.peak_bytes,
                         st.plan.arena_bytes + st.plan.output_bytes + st.plan.scratch_bytes);
    }
    tj_compiled_free(c);

    c = tj_compile(model_breaks, NULL, &(tj_compile_options){.name = "stats_break"});
    assert_non_null(tj_call(c, &x, 1));
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(st.graphs, 0);   /* split at its break: counted in split */
    assert_int_equal(st.breaks, 0);
    assert_int_equal(st.calls, 1);
    assert_int_equal(st.eager_calls, 0);
    assert_int_equal(st.split.graphs, 2);   /* the sum; the product */
    assert_int_equal(st.split.breaks, 1);
    assert_int_equal((int)st.split.executor_runs, 2);   /* new pieces run on the executor */
    assert_int_equal(st.split.runs, 0);
    assert_false(st.plan.compiled);
    tj_compiled_free(c);
}

/* ---- allocator ---------------------------------------------------------------------- */

static void test_alloc_trim(void **state)
{
    (void)state;
    tj_alloc_trim();
    assert_int_equal(tj_alloc_cached_bytes(), 0);
    int64_t n = 1 << 18;   /* 1 MiB of f32: a cached size */
    tj_scope_begin();
    assert_non_null(tj_zeros(TJ_F32, 1, &n));
    tj_scope_end();   /* frees it: into the cache */
    if (CACHE_ON)
        assert_true(tj_alloc_cached_bytes() >= (size_t)n * 4);
    tj_alloc_trim();
    assert_int_equal(tj_alloc_cached_bytes(), 0);
}

/* ---- parallel_for ------------------------------------------------------------------- */

typedef struct cover {
    int64_t n;
    unsigned char *seen;
} cover;

static void mark(void *ctx, int64_t begin, int64_t end)
{
    cover *c = ctx;
    for (int64_t i = begin; i < end; i++)
        c->seen[i]++;
}

static void test_parallel_for(void **state)
{
    (void)state;
    int64_t sizes[] = {0, 1, 7, 1000, 100003};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        cover c = {sizes[s], calloc((size_t)sizes[s] + 1, 1)};
        assert_non_null(c.seen);
        assert_int_equal(tj_parallel_for(c.n, 100, mark, &c), 0);
        for (int64_t i = 0; i < c.n; i++)
            if (c.seen[i] != 1)
                fail_msg("n=%lld: item %lld ran %d times", (long long)c.n, (long long)i, c.seen[i]);
        assert_int_equal(c.seen[c.n], 0);
        free(c.seen);
    }
    assert_int_equal(tj_parallel_for(10, 1, NULL, NULL), -1);
    tu_assert_error(NULL, "parallel_for", "NULL", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_every_op_has_an_entry_point),
        T(test_ex_entry_points),
        T(test_dtype_facts),
        T(test_compiled_stats),
        T(test_alloc_trim),
        T(test_parallel_for),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
