/* test_gemm_strassen.c - one level of Strassen-Winograd on kept f32 weights
 * (runtime/gemm_strassen.c, docs/perf.md "P4: one level of Strassen on kept
 * weights"). Strassen's error bound is normwise, not per element, so every
 * check is against an f64 reference GEMM: the max abs error of the Strassen
 * form must stay within STRASSEN_ERR_FACTOR times the plain f32 GEMM's own
 * max abs error on the same inputs (measured here, not hard-coded), with
 * each epilogue (none; bias + gelu_tanh; alpha, bias and a residual before
 * the activation; a residual after relu), A contiguous and strided, B
 * contiguous and transposed, one and two threads. Odd shapes are not taken
 * (the plain GEMM runs); in compiled calls the form follows the kept
 * weight's version (tj_copy_ and writes through tj_data between calls), and
 * TJIT_STRASSEN=0 turns it off. A weight whose GEMMs take the form keeps no
 * plain packed form until a GEMM that does not qualify reads it (the
 * cache's bytes; results bit-equal to each GEMM on fresh forms). A's
 * operands packed once per call and the S pass both keep the bound, and a
 * GEMM on an A packed by the caller is tjg_gemm's (bit for bit with its
 * k-blocks). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../runtime/gemm.h"
#include "../runtime/rt.h"
#include "tjit.h"

/* One level's error against plain sums, measured on these inputs: 1.1-4.4x
 * (docs/perf.md); the bound leaves room for other seeds and shapes. */
#define STRASSEN_ERR_FACTOR 8.0

static uint64_t rng = 88172645463325252ull;
static float uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static float *randv(int64_t n)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = uniform();
    return v;
}

static double ref_act(tjg_act act, double x)
{
    if (act == TJG_ACT_RELU)
        return x > 0 ? x : 0;
    if (act == TJG_ACT_GELU_TANH)
        return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    return x;
}

/* The epilogue of gemm.h on an f64 sum. */
static double ref_epi(const tjg_epilogue *e, double s, int64_t i, int64_t j)
{
    double v = (e->alpha != 0 ? e->alpha : 1.0) * s + (e->bias ? e->bias[j] : 0.0);
    double r = e->res ? e->res[i * e->ldr + j] : 0.0;
    return e->res_after_act ? ref_act(e->act, v) + r : ref_act(e->act, v + r);
}

typedef struct gcase {
    int64_t m, n, k;
    bool ta, tb;      /* A, B stored transposed */
} gcase;

static double max_err(const float *c, const double *ref, int64_t m, int64_t n)
{
    double e = 0;
    for (int64_t i = 0; i < m * n; i++)
        e = fmax(e, fabs((double)c[i] - ref[i]));
    return e;
}

/* Plain and Strassen GEMMs of one case against f64, under epilogue e. */
static void check_case(gcase g, const tjg_epilogue *e0)
{
    int64_t m = g.m, n = g.n, k = g.k;
    float *a = randv(m * k), *b = randv(k * n), *bias = randv(n), *res = randv(m * n);
    float *c = malloc((size_t)(m * n) * 4), *cs = malloc((size_t)(m * n) * 4);
    double *ref = malloc((size_t)(m * n) * sizeof *ref);
    tjg_epilogue e = *e0;
    if (e.bias)
        e.bias = bias;
    if (e.res)
        e.res = res, e.ldr = n;
    int64_t ars = g.ta ? 1 : k, acs = g.ta ? m : 1, brs = g.tb ? 1 : n, bcs = g.tb ? k : 1;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t kk = 0; kk < k; kk++)
                s += (double)a[i * ars + kk * acs] * (double)b[kk * brs + j * bcs];
            ref[i * n + j] = ref_epi(&e, s, i, j);
        }
    tjg_packed p, ps;
    assert_int_equal(tjg_pack_f32(&p, b, brs, bcs, k, n), 0);
    assert_int_equal(tjg_gemm(m, a, false, ars, acs, &p, c, n, &e, NULL), 0);
    double plain = max_err(c, ref, m, n);
    if (m % 2 || n % 2 || k % 2) {   /* not taken: the caller runs the plain GEMM */
        assert_false(tjg_strassen_wanted(m, n, k));
    } else {
        assert_int_equal(tjg_pack_f32_strassen(&ps, b, brs, bcs, k, n), 0);
        unsigned long long before = tjg_strassen_calls(), pk = tjg_strassen_packed_calls();
        assert_int_equal(tjg_gemm_strassen(m, a, ars, acs, &ps, cs, n, &e), 0);
        assert_int_equal(tjg_strassen_calls(), before + 1);
        /* A's operands packed once where the kernel reads tjg_gemm's
         * packing (the products' k-blocks shorter: other rounding), and the
         * S pass with the products' own packing: both within the bound */
        tjg_alayout l;
        assert_int_equal(tjg_strassen_packed_calls(), pk + !tjg_alayout_f32(m / 2, k / 2, 0, &l));
        float *c0 = malloc((size_t)(m * n) * 4);
        setenv("TJIT_STRASSEN_PACK", "0", 1);
        assert_int_equal(tjg_gemm_strassen(m, a, ars, acs, &ps, c0, n, &e), 0);
        unsetenv("TJIT_STRASSEN_PACK");
        assert_int_equal(tjg_strassen_packed_calls(), pk + !tjg_alayout_f32(m / 2, k / 2, 0, &l));
        double err0 = max_err(c0, ref, m, n);
        if (!(err0 <= STRASSEN_ERR_FACTOR * plain))
            fail_msg("%lldx%lldx%lld: S pass error %.3g > %.1f x plain %.3g", (long long)m,
                     (long long)n, (long long)k, err0, STRASSEN_ERR_FACTOR, plain);
        free(c0);
        double err = max_err(cs, ref, m, n);
        if (!(err <= STRASSEN_ERR_FACTOR * plain))
            fail_msg("%lldx%lldx%lld ta %d tb %d act %d: Strassen error %.3g > %.1f x plain %.3g",
                     (long long)m, (long long)n, (long long)k, g.ta, g.tb, (int)e.act, err,
                     STRASSEN_ERR_FACTOR, plain);
        print_message("%lldx%lldx%lld act %d threads %d: plain %.3g Strassen %.3g (%.2fx)\n",
                      (long long)m, (long long)n, (long long)k, (int)e.act, tj_num_threads(),
                      plain, err, err / plain);
        /* odd rows, accumulate, 16-bit C: not this form (returns 1) */
        assert_int_equal(tjg_gemm_strassen(m - 1, a, ars, acs, &ps, cs, n, &e), 1);
        tjg_epilogue acc = {.accumulate = true};
        assert_int_equal(tjg_gemm_strassen(m, a, ars, acs, &ps, cs, n, &acc), 1);
        tjg_packed_free(&ps);
        assert_null(ps.parts);
    }
    tjg_packed_free(&p);
    free(a), free(b), free(bias), free(res), free(c), free(cs), free(ref);
}

static void test_strassen_vs_f64(void **state)
{
    (void)state;
    static const gcase cases[] = {
        {256, 512, 512, false, false}, {128, 130, 96, false, true}, {98, 66, 200, true, false},
        {64, 2048, 64, false, false},  /* products' C rows 1024 floats apart */
        {300, 96, 1100, false, false}, /* 150 rows (13 slivers), 550 k (3 k-blocks) */
        {61, 64, 64, false, false},    {64, 62, 63, false, false},   /* odd: plain */
    };
    const tjg_epilogue epis[] = {
        {0},
        {.bias = (float *)1, .act = TJG_ACT_GELU_TANH},
        {.alpha = 0.5f, .bias = (float *)1, .res = (float *)1, .act = TJG_ACT_GELU_TANH},
        {.res = (float *)1, .res_after_act = true, .act = TJG_ACT_RELU},
    };
    int threads = tj_num_threads();
    for (int th = 1; th <= 2; th++) {
        tj_set_num_threads(th);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (size_t e = 0; e < sizeof epis / sizeof epis[0]; e++)
                check_case(cases[c], &epis[e]);
    }
    tj_set_num_threads(threads);
}

/* tjg_gemm_packed_a on A packed by tjg_pack_a_f32 (k-blocks and slivers
 * in any order, in two parts) is tjg_gemm bit for bit with the GEMM's own
 * k-blocks, and within rounding with 128 and 100 k per block: one and several row
 * blocks (the block's slivers found at its rows), A contiguous and
 * transposed, with an epilogue, one and two threads. */
static void test_packed_a(void **state)
{
    (void)state;
    static const gcase cases[] = {
        {50, 64, 100, false, false}, {256, 1000, 512, false, false}, {300, 96, 700, false, false},
        {600, 200, 300, true, false}, {13, 40, 7, true, false},
    };
    int threads = tj_num_threads();
    for (int th = 1; th <= 2; th++) {
        tj_set_num_threads(th);
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            gcase g = cases[ci];
            int64_t m = g.m, n = g.n, k = g.k, ars = g.ta ? 1 : k, acs = g.ta ? m : 1;
            float *a = randv(m * k), *b = randv(k * n), *bias = randv(n);
            float *c = malloc((size_t)(m * n) * 4), *cp = malloc((size_t)(m * n) * 4);
            tjg_epilogue e = {.bias = bias, .act = TJG_ACT_GELU_TANH};
            tjg_packed p;
            tjg_alayout l;
            assert_int_equal(tjg_pack_f32(&p, b, n, 1, k, n), 0);
            assert_int_equal(tjg_gemm(m, a, false, ars, acs, &p, c, n, &e, NULL), 0);
            static const int64_t kcs[] = {0, 128, 100};   /* the GEMM's own k-blocks, others */
            for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++) {
                if (tjg_alayout_f32(m, k, kcs[ki], &l))
                    continue;
                float *ap = malloc((size_t)l.words * 4);
                int64_t nsl = (m + TJG_MR - 1) / TJG_MR, half = nsl / 2;
                for (int64_t kb = l.nkb - 1; kb >= 0; kb--) {
                    tjg_pack_a_f32(&l, a, ars, acs, kb, half, nsl, ap);
                    tjg_pack_a_f32(&l, a, ars, acs, kb, 0, half, ap);
                }
                memset(cp, 0, (size_t)(m * n) * 4);
                assert_int_equal(tjg_gemm_packed_a(&l, ap, &p, cp, n, &e), 0);
                if (kcs[ki] == 0)   /* the GEMM's own k-blocks: the same bits */
                    assert_memory_equal(c, cp, (size_t)(m * n) * 4);
                else   /* other k-blocks: the partial sums added in another order */
                    for (int64_t i = 0; i < m * n; i++)
                        if (!(fabsf(c[i] - cp[i]) <= 1e-5f * (float)k))
                            fail_msg("%lldx%lldx%lld kc %lld: [%lld] %g against %g",
                                     (long long)m, (long long)n, (long long)k,
                                     (long long)kcs[ki], (long long)i, cp[i], c[i]);
                free(ap);
            }
            tjg_packed_free(&p);
            free(a), free(b), free(bias), free(c), free(cp);
        }
    }
    tj_set_num_threads(threads);
}

static void test_strassen_wanted(void **state)
{
    (void)state;
    setenv("TJIT_STRASSEN", "1", 1);
    assert_true(tjg_strassen_wanted(256, 2048, 1024));   /* P4's two GEMMs */
    assert_true(tjg_strassen_wanted(256, 1024, 2048));
    assert_false(tjg_strassen_wanted(255, 2048, 1024));
    assert_false(tjg_strassen_wanted(256, 2048, 1023));
    assert_false(tjg_strassen_wanted(256, 2046 + 1, 1024));
    assert_true(tjg_strassen_wanted(128, 1024, 1024));
    assert_false(tjg_strassen_wanted(64, 2048, 1024));    /* below the thresholds */
    assert_false(tjg_strassen_wanted(256, 256, 2048));
    assert_false(tjg_strassen_wanted(256, 512, 512));
    setenv("TJIT_STRASSEN", "0", 1);
    assert_false(tjg_strassen_wanted(256, 2048, 1024));
    unsetenv("TJIT_STRASSEN");
    /* unset: on with AVX2 kernels only (measured faster there, slower on
     * AVX-512), whichever this CPU supports */
    tjg_isa isa = tjg_isa_current();
    for (int v = TJG_GENERIC; v <= (int)isa; v++) {
        tjg_isa_force(v);
        assert_int_equal(tjg_strassen_wanted(256, 2048, 1024), v == TJG_AVX2);
    }
    tjg_isa_force(-1);
}

/* ---- compiled calls on a kept weight ----------------------------------------------------- */

typedef struct mctx {
    tj_tensor *w, *b;
    bool act;
} mctx;

/* gelu_tanh(x @ w^T + b) (a linear: B = w^T, strided) or x @ w^T */
static tj_tensor *model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    mctx *c = ctx;
    tj_tensor *y = tj_matmul(args[0], tj_transpose(c->w, 0, 1));
    return c->act ? tj_gelu_tanh(tj_add(y, c->b)) : y;
}

static double max_abs(tj_tensor *x, tj_tensor *y)
{
    tj_tensor *d = tj_amax(tj_abs(tj_sub(x, y)), NULL, 0, false);
    assert_non_null(d);
    return tj_item(d);
}

/* The compiled result's error against f64 within the factor of eager's
 * (OpenBLAS, plain sums) error against f64. */
static void close_to_f64(mctx *c, tj_tensor *got, tj_tensor *x)
{
    mctx c64 = {tj_cast(c->w, TJ_F64), tj_cast(c->b, TJ_F64), c->act};
    tj_tensor *x64 = tj_cast(x, TJ_F64), *ref = model(&c64, &x64, 1);
    double err = max_abs(tj_cast(got, TJ_F64), ref);
    double plain = max_abs(tj_cast(model(c, &x, 1), TJ_F64), ref);
    if (!(err <= STRASSEN_ERR_FACTOR * plain))
        fail_msg("compiled error %.3g > %.1f x eager's %.3g", err, STRASSEN_ERR_FACTOR, plain);
}

/* Calls that took the Strassen form in a compiled x @ w^T (+ b, gelu) of
 * m x n x k over the calls made, the weight written between calls. */
static unsigned long long run_compiled(int64_t m, int64_t n, int64_t k, bool act, bool freeze)
{
    tj_alloc_trim();
    tj_scope_begin();
    mctx c = {tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){n, k})),
              tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){n})), act};
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){m, k});
    tj_compiled *cc = tj_compile(model, &c, &(tj_compile_options){.name = "strassen",
                                                                  .freeze = freeze});
    assert_non_null(cc);
    unsigned long long before = tjg_strassen_calls();
    for (int call = 0; call < 4; call++)
        close_to_f64(&c, tj_call(cc, &x, 1), x);
    if (!freeze) {
        /* written in place between calls: the kept form follows the version */
        assert_int_equal(tj_copy_(c.w, tj_randn(TJ_F32, 2, (int64_t[]){n, k})), 0);
        for (int call = 0; call < 4; call++)
            close_to_f64(&c, tj_call(cc, &x, 1), x);
        /* through a tj_data pointer (its count is stamped) */
        float *w = tj_data(c.w);
        for (int64_t i = 0; i < n * k; i += 7)
            w[i] = -w[i];
        for (int call = 0; call < 4; call++)
            close_to_f64(&c, tj_call(cc, &x, 1), x);
    }
    unsigned long long taken = tjg_strassen_calls() - before;
    tj_compiled_free(cc);
    tj_scope_end();
    tj_release(c.w), tj_release(c.b);
    return taken;
}

static void test_strassen_compiled(void **state)
{
    (void)state;
    bool own = tjg_isa_current() >= TJG_AVX2;   /* tjit's GEMM takes kept f32 weights */
    int threads = tj_num_threads();
    setenv("TJIT_STRASSEN", "1", 1);
    for (int th = 1; th <= 2; th++) {
        tj_set_num_threads(th);
        /* 12 calls, three versions of the weight: each version's form packed
         * on its second call (tjg_cache_get_stable's rule), so the first two
         * calls of each run the plain GEMM */
        unsigned long long n = run_compiled(256, 1024, 512, false, false);
        if (own && n < 6)
            fail_msg("threads %d: %llu of 12 calls in Strassen's form", th, n);
        /* with the fused bias + gelu_tanh epilogue, frozen */
        setenv("TJIT_GEMM_EPILOGUE", "1", 1);
        uint64_t fused = rt_gemm_epi_count();
        n = run_compiled(256, 1024, 512, true, true);
        if (own && (n < 2 || rt_gemm_epi_count() - fused != 4))
            fail_msg("threads %d frozen, fused: %llu Strassen, %llu fused of 4", th, n,
                     (unsigned long long)(rt_gemm_epi_count() - fused));
        unsetenv("TJIT_GEMM_EPILOGUE");
        /* odd k, rows below the threshold: not taken */
        assert_int_equal(run_compiled(256, 1024, 511, true, false), 0);
        assert_int_equal(run_compiled(64, 1024, 512, false, false), 0);
    }
    setenv("TJIT_STRASSEN", "0", 1);
    assert_int_equal(run_compiled(256, 1024, 512, true, false), 0);
    unsetenv("TJIT_STRASSEN");
    tj_set_num_threads(threads);
}

/* ---- the kept forms of one weight (gemm_cache.c's placeholders) --------------------------- */

/* x @ w^T on tjit's GEMMs as the compiled call runs it: B = w^T (strides
 * 1, k), in Strassen's form or plain, packed fresh (bits to compare). */
static tj_tensor *direct(tj_tensor *x, tj_tensor *w, bool strassen)
{
    int64_t m = x->shape[0], k = x->shape[1], n = w->shape[0];
    tj_tensor *y = tj_zeros(TJ_F32, 2, (int64_t[]){m, n});
    tjg_packed p;
    const float *b = rt_ptr(w), *a = rt_ptr(x);   /* not tj_data: w's stamp kept */
    if (strassen) {
        assert_int_equal(tjg_pack_f32_strassen(&p, b, 1, k, k, n), 0);
        assert_int_equal(tjg_gemm_strassen(m, a, k, 1, &p, tj_data(y), n, NULL), 0);
    } else {
        assert_int_equal(tjg_pack_f32(&p, b, 1, k, k, n), 0);
        assert_int_equal(tjg_gemm(m, a, false, k, 1, &p, tj_data(y), n, NULL, NULL), 0);
    }
    tjg_packed_free(&p);
    return y;
}

static size_t form_bytes(int64_t k, int64_t n, bool strassen)
{
    float *b = calloc((size_t)(k * n), sizeof *b);
    tjg_packed p;
    assert_int_equal(strassen ? tjg_pack_f32_strassen(&p, b, 1, k, k, n)
                              : tjg_pack_f32(&p, b, 1, k, k, n), 0);
    size_t r = p.nbytes;
    tjg_packed_free(&p);
    free(b);
    return r;
}

static void assert_same(tj_tensor *x, tj_tensor *y)
{
    assert_int_equal(tj_numel(x), tj_numel(y));
    assert_memory_equal(tj_data(x), tj_data(y), (size_t)tj_numel(x) * sizeof(float));
}

/* One weight read by a call that takes its Strassen form (256 rows) and
 * one that does not (64 rows): the plain form is kept only once the second
 * needs it (the cache's bytes), each result has the bits of its GEMM on
 * the weight's current data, and a weight written in place is never
 * served from a stale form (placeholder or packed). */
static void test_strassen_plain_form_lazy(void **state)
{
    (void)state;
    if (tjg_isa_current() < TJG_AVX2)
        skip();   /* kept f32 weights on OpenBLAS: no forms */
    int64_t n = 1024, k = 512;
    size_t plain = form_bytes(k, n, false), form = form_bytes(k, n, true);
    setenv("TJIT_STRASSEN", "1", 1);
    tj_alloc_trim();   /* the cache emptied */
    assert_int_equal(tjg_cache_bytes(), 0);
    tj_scope_begin();
    mctx c = {tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){n, k})), NULL, false};
    tj_tensor *x256 = tj_randn(TJ_F32, 2, (int64_t[]){256, k});
    tj_tensor *x64 = tj_randn(TJ_F32, 2, (int64_t[]){64, k});
    tj_compiled *c256 = tj_compile(model, &c, &(tj_compile_options){.name = "s256"});
    tj_compiled *c64 = tj_compile(model, &c, &(tj_compile_options){.name = "s64"});
    assert_non_null(c256);
    assert_non_null(c64);
    /* the first call traces (eager: OpenBLAS) */
    close_to_f64(&c, tj_call(c256, &x256, 1), x256);
    for (int call = 0; call < 2; call++)
        assert_same(tj_call(c256, &x256, 1), direct(x256, c.w, true));
    assert_int_equal(tjg_cache_bytes(), form);   /* no plain form beside it */
    close_to_f64(&c, tj_call(c64, &x64, 1), x64);
    for (int call = 0; call < 2; call++) {
        assert_same(tj_call(c64, &x64, 1), direct(x64, c.w, false));
        assert_same(tj_call(c256, &x256, 1), direct(x256, c.w, true));
    }
    assert_int_equal(tjg_cache_bytes(), form + plain);   /* both, kept */
    /* written in place, each call order: the first calls after a change run
     * elsewhere (the stable rule), each result close to f64, the last
     * calls' bits those of the new data's forms */
    for (int v = 0; v < 4; v++) {
        assert_int_equal(tj_copy_(c.w, tj_randn(TJ_F32, 2, (int64_t[]){n, k})), 0);
        tj_compiled *first = v % 2 ? c64 : c256, *second = v % 2 ? c256 : c64;
        tj_tensor *xf = v % 2 ? x64 : x256, *xs = v % 2 ? x256 : x64;
        for (int call = 0; call < 3; call++) {
            close_to_f64(&c, tj_call(first, &xf, 1), xf);
            close_to_f64(&c, tj_call(second, &xs, 1), xs);
        }
        assert_same(tj_call(c256, &x256, 1), direct(x256, c.w, true));
        assert_same(tj_call(c64, &x64, 1), direct(x64, c.w, false));
        if (v == 1) {   /* through a tj_data pointer: only 256-row calls after it */
            float *w = tj_data(c.w);
            w[5] = -w[5];
            for (int call = 0; call < 3; call++)
                close_to_f64(&c, tj_call(c256, &x256, 1), x256);
            assert_same(tj_call(c256, &x256, 1), direct(x256, c.w, true));
        }
    }
    assert_int_equal(tjg_cache_bytes(), form + plain);   /* old versions dropped */
    tj_compiled_free(c256);
    tj_compiled_free(c64);
    tj_scope_end();
    tj_release(c.w);
    unsetenv("TJIT_STRASSEN");
}

/* The cache's placeholders alone: a lazy lookup keeps no bytes, a fill or
 * a lookup that is not lazy packs the data it is given (the bits of
 * tjg_pack_f32), and another version of the weight is never served from
 * the placeholder or its packed form. */
static void test_cache_placeholder(void **state)
{
    (void)state;
    int64_t k = 64, n = 96;
    uint64_t serial = UINT64_MAX - 17;   /* no storage's */
    float *b1 = randv(k * n), *b2 = randv(k * n);
    tjg_packed want;
    tj_alloc_trim();
    size_t base = tjg_cache_bytes();
    void *h;
    const tjg_packed *p = tjg_cache_get_lazy(serial, 1, 0, b1, n, 1, k, n, true, &h);
    assert_non_null(p);
    assert_null(p->data);
    assert_int_equal(tjg_cache_bytes(), base);
    assert_int_equal(tjg_cache_fill(h, b1), 0);
    assert_int_equal(tjg_pack_f32(&want, b1, n, 1, k, n), 0);
    assert_int_equal(p->nbytes, want.nbytes);
    assert_memory_equal(p->data, want.data, want.nbytes);
    assert_int_equal(tjg_cache_bytes(), base + want.nbytes);
    tjg_cache_put(h);
    tjg_packed_free(&want);
    /* version 2: the first lookup finds it changed (nothing served) */
    assert_null(tjg_cache_get_lazy(serial, 2, 0, b2, n, 1, k, n, true, &h));
    assert_null(h);
    p = tjg_cache_get_lazy(serial, 2, 0, b2, n, 1, k, n, true, &h);   /* seen twice */
    assert_non_null(p);
    assert_null(p->data);
    tjg_cache_put(h);
    /* a lookup that is not lazy packs the placeholder from version 2's data */
    p = tjg_cache_get_stable(serial, 2, 0, b2, n, 1, k, n, TJG_F32, false, &h);
    assert_non_null(p);
    assert_int_equal(tjg_pack_f32(&want, b2, n, 1, k, n), 0);
    assert_memory_equal(p->data, want.data, want.nbytes);
    assert_int_equal(tjg_cache_bytes(), base + want.nbytes);   /* version 1's dropped */
    tjg_cache_put(h);
    tjg_packed_free(&want);
    tj_alloc_trim();
    free(b1), free(b2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strassen_vs_f64),
        cmocka_unit_test(test_packed_a),
        cmocka_unit_test(test_strassen_wanted),
        cmocka_unit_test(test_strassen_compiled),
        cmocka_unit_test(test_strassen_plain_form_lazy),
        cmocka_unit_test(test_cache_placeholder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
