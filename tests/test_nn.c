/* test_nn.c - embedding, dropout, scaled dot-product attention and
 * cross_entropy with its defaults (its arguments: test_loss.c): eager
 * results against PyTorch golden data
 * (scripts/golden/nn.py), against a plain double-precision reference for
 * large attention problems, properties of dropout, and every error path. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

static tj_tensor *G(const char *name) { return tu_golden("nn", name); }

/* Small literal tensors (tj_from_data only: no other op family involved). */
static tj_tensor *i64s(int64_t n, const int64_t *v) { return tj_from_data(TJ_I64, 1, &n, v); }
static tj_tensor *i32s(int64_t n, const int32_t *v) { return tj_from_data(TJ_I32, 1, &n, v); }

/* A golden scalar: numpy saves 0-dim arrays as [1]; view it as 0-dim. */
static tj_tensor *G0(const char *name) { return tj_reshape(G(name), 0, NULL); }

/* ---- embedding ---------------------------------------------------------------- */

static void test_embedding_i64(void **state)
{
    (void)state;
    tu_assert_close(tj_embedding(G("emb_w"), G("emb_idx_i64")), G("emb_out"), 0, 0);
}

static void test_embedding_i32(void **state)
{
    (void)state;
    tu_assert_close(tj_embedding(G("emb_w"), G("emb_idx_i32")), G("emb_out"), 0, 0);
}

static void test_embedding_multidim(void **state)
{
    (void)state;
    tj_tensor *w = G("emb_w");
    tu_assert_close(tj_embedding(w, G("emb_idx3")), G("emb_out3"), 0, 0);
    /* a 0-dim index gives one row [D] */
    tj_tensor *r = tj_embedding(w, tj_scalar(TJ_I64, 7));
    assert_non_null(r);
    assert_int_equal(tj_ndim(r), 1);
    for (int64_t j = 0; j < 4; j++)
        assert_true(tj_get(r, (int64_t[]){j}) == tj_get(w, (int64_t[]){7, j}));
}

static void test_embedding_f64(void **state)
{
    (void)state;
    tu_assert_close(tj_embedding(G("emb_w64"), G("emb_idx1")), G("emb_out64"), 0, 0);
}

static void test_embedding_strided(void **state)
{
    (void)state;
    /* weight [10, 4] with column stride 10; indices transposed [3, 2] */
    tj_tensor *wt = tj_transpose(G("emb_wt"), 0, 1);
    tu_assert_close(tj_embedding(wt, G("emb_idx_i64")), G("emb_out_t"), 0, 0);
    tj_tensor *idx_t = tj_transpose(G("emb_idx_i64"), 0, 1);
    tj_tensor *want = tj_permute(G("emb_out"), (int[]){1, 0, 2});
    tu_assert_close(tj_embedding(G("emb_w"), idx_t), want, 0, 0);
    /* an expanded (stride 0) index tensor */
    tj_tensor *idx_e = tj_expand(tj_scalar(TJ_I64, 2), 2, (int64_t[]){3, 2});
    tj_tensor *r = tj_embedding(G("emb_w"), idx_e);
    assert_non_null(r);
    assert_true(tj_get(r, (int64_t[]){2, 1, 3}) == tj_get(G("emb_w"), (int64_t[]){2, 3}));
}

static void test_embedding_empty(void **state)
{
    (void)state;
    tj_tensor *r = tj_embedding(G("emb_w"), tj_zeros(TJ_I64, 2, (int64_t[]){2, 0}));
    assert_non_null(r);
    assert_int_equal(tj_ndim(r), 3);
    assert_int_equal(tj_size(r, 2), 4);
    assert_int_equal(tj_numel(r), 0);
    /* an empty table: any index is out of range, no index is fine */
    tj_tensor *w0 = tj_zeros(TJ_F32, 2, (int64_t[]){0, 3});
    assert_non_null(tj_embedding(w0, tj_zeros(TJ_I64, 1, (int64_t[]){0})));
    tu_assert_error(tj_embedding(w0, tj_zeros(TJ_I64, 1, (int64_t[]){1})), "index 0",
                    "V = 0", NULL);
}

/* Any dtype of weight, as in PyTorch (an i64 table, read through a transposed
 * view): the rows index_select gives. */
static void test_embedding_int_weight(void **state)
{
    (void)state;
    tj_tensor *w = tj_transpose(tj_reshape(tj_arange(TJ_I64, 0, 40, 1), 2, (int64_t[]){4, 10}), 0, 1);
    tj_tensor *idx = i64s(3, (int64_t[]){2, 9, 2});
    tu_assert_close(tj_embedding(w, idx), tj_index_select(w, 0, idx), 0, 0);
    tj_tensor *b = tj_gt_s(w, 20);
    tu_assert_close(tj_embedding(b, idx), tj_index_select(b, 0, idx), 0, 0);
}

static void test_embedding_errors(void **state)
{
    (void)state;
    tj_tensor *w = G("emb_w"), *idx = G("emb_idx_i64");
    tu_assert_error(tj_embedding(tj_zeros(TJ_F32, 1, (int64_t[]){10}), idx),
                    "embedding(f32[10], i64[2,3])", "weight must be 2-D", NULL);
    tu_assert_error(tj_embedding(w, tj_zeros(TJ_F32, 1, (int64_t[]){2})),
                    "embedding(f32[10,4], f32[2])", "indices must be i32 or i64", NULL);
    int64_t eight[8] = {1, 1, 1, 1, 1, 1, 1, 2};
    tu_assert_error(tj_embedding(w, tj_zeros(TJ_I64, 8, eight)),
                    "embedding(f32[10,4], i64[1,1,1,1,1,1,1,2])", "more than 8 dims", NULL);
    tu_assert_error(tj_embedding(w, i64s(3, (int64_t[]){1, 10, 2})),
                    "embedding(f32[10,4], i64[3])", "index 10 is out of range", "V = 10", NULL);
    tu_assert_error(tj_embedding(w, i32s(2, (int32_t[]){-1, 0})),
                    "embedding(f32[10,4], i32[2])", "index -1", "V = 10", NULL);
    assert_null(tj_embedding(NULL, idx));
    assert_null(tj_embedding(w, NULL));
    tj_clear_error();
}

/* ---- scaled dot-product attention ---------------------------------------------- */

static tj_tensor *sdpa_golden(const char *name, bool mask, bool causal, double scale)
{
    char b[64];
    snprintf(b, sizeof b, "sdpa_%s_q", name);
    tj_tensor *q = G(b);
    snprintf(b, sizeof b, "sdpa_%s_k", name);
    tj_tensor *k = G(b);
    snprintf(b, sizeof b, "sdpa_%s_v", name);
    tj_tensor *v = G(b);
    tj_tensor *m = NULL;
    if (mask) {
        snprintf(b, sizeof b, "sdpa_%s_mask", name);
        m = G(b);
    }
    return tj_scaled_dot_product_attention(q, k, v, m, causal, scale);
}

static void check_sdpa(const char *name, bool mask, bool causal, double scale)
{
    char b[64];
    snprintf(b, sizeof b, "sdpa_%s_out", name);
    tj_tensor *want = G(b);
    bool f64 = tj_dtype_of(want) == TJ_F64;
    tu_assert_close(sdpa_golden(name, mask, causal, scale), want, f64 ? 1e-12 : 2e-5,
                    f64 ? 1e-13 : 2e-6);
}

static void test_sdpa_basic(void **state)
{
    (void)state;
    check_sdpa("basic", false, false, 0);     /* L != S, E != Ev, default scale */
    check_sdpa("scale", false, false, 0.3);   /* 3-D, explicit scale */
    check_sdpa("f64", false, false, -1);
}

static void test_sdpa_causal(void **state)
{
    (void)state;
    check_sdpa("causal", false, true, 0);      /* 130 rows: three query blocks */
    check_sdpa("causal_ls", false, true, 0);   /* L < S */
    check_sdpa("causal_sl", false, true, 0);   /* L > S */
    check_sdpa("causal64", false, true, 0.25);
}

static void test_sdpa_masks(void **state)
{
    (void)state;
    check_sdpa("bmask", true, false, 0);   /* bool [L,S] broadcast */
    check_sdpa("fmask", true, false, 0);   /* float [B,1,L,S] with -inf */
}

static void test_sdpa_broadcast_batch(void **state)
{
    (void)state;
    check_sdpa("bcast", false, false, 0);   /* [2,1] x [1,3] x [3] batch dims */
}

static void test_sdpa_strided(void **state)
{
    (void)state;
    /* q with row stride H*E (read in place), k transposed (copied) */
    tj_tensor *q = tj_permute(G("sdpa_strided_q"), (int[]){0, 2, 1, 3});
    tj_tensor *k = tj_transpose(G("sdpa_strided_kt"), -2, -1);
    tj_tensor *r = tj_scaled_dot_product_attention(q, k, G("sdpa_strided_v"), NULL, false, 0);
    tu_assert_close(r, G("sdpa_strided_out"), 2e-5, 2e-6);
    /* q broadcast along L (row stride 0): every row is the one-row result */
    tj_tensor *q1 = tj_slice(G("sdpa_basic_q"), 2, 0, 1, 1);
    tj_tensor *qe = tj_expand(q1, 4, (int64_t[]){2, 3, 5, 8});
    tj_tensor *k0 = G("sdpa_basic_k"), *v0 = G("sdpa_basic_v");
    tj_tensor *one = tj_scaled_dot_product_attention(q1, k0, v0, NULL, false, 0);
    tj_tensor *want = tj_expand(one, 4, (int64_t[]){2, 3, 5, 6});
    tu_assert_close(tj_scaled_dot_product_attention(qe, k0, v0, NULL, false, 0), want, 1e-6,
                    1e-7);
}

static void test_sdpa_fully_masked_row(void **state)
{
    (void)state;
    /* a query that may attend no key gets NaN, like the formula */
    uint8_t m[2 * 3] = {1, 0, 1, 0, 0, 0};
    tj_tensor *mask = tj_from_data(TJ_BOOL, 2, (int64_t[]){2, 3}, m);
    tj_tensor *q = tj_ones(TJ_F32, 2, (int64_t[]){2, 4});
    tj_tensor *kv = tj_arange(TJ_F32, 0, 12, 1);
    tj_tensor *k = tj_reshape(kv, 2, (int64_t[]){3, 4});
    tj_tensor *r = tj_scaled_dot_product_attention(q, k, k, mask, false, 0);
    assert_non_null(r);
    assert_true(isnan(tj_get(r, (int64_t[]){1, 0})));
    assert_false(isnan(tj_get(r, (int64_t[]){0, 0})));
}

static void test_sdpa_empty(void **state)
{
    (void)state;
    tj_tensor *q = tj_ones(TJ_F32, 3, (int64_t[]){2, 3, 4});
    /* S = 0: softmax over nothing, then an empty sum: zeros */
    tj_tensor *k0 = tj_ones(TJ_F32, 3, (int64_t[]){2, 0, 4});
    tj_tensor *v0 = tj_ones(TJ_F32, 3, (int64_t[]){2, 0, 5});
    tu_assert_close(tj_scaled_dot_product_attention(q, k0, v0, NULL, false, 0),
                    tj_zeros(TJ_F32, 3, (int64_t[]){2, 3, 5}), 0, 0);
    /* L = 0 and an empty batch give empty results */
    tj_tensor *k = tj_ones(TJ_F32, 3, (int64_t[]){2, 6, 4});
    tj_tensor *r = tj_scaled_dot_product_attention(tj_ones(TJ_F32, 3, (int64_t[]){2, 0, 4}), k, k,
                                                   NULL, true, 0);
    assert_non_null(r);
    assert_int_equal(tj_numel(r), 0);
    tj_tensor *e = tj_ones(TJ_F32, 3, (int64_t[]){0, 6, 4});
    r = tj_scaled_dot_product_attention(e, e, e, NULL, false, 0);
    assert_non_null(r);
    assert_int_equal(tj_size(r, 0), 0);
}

/* softmax(q k^T * scale + mask) v in double, for contiguous [n, L, E] etc. */
static void sdpa_naive(tj_tensor *q, tj_tensor *k, tj_tensor *v, tj_tensor *mask, bool causal,
                       double scale, double *out)
{
    int64_t n = tj_size(q, 0), L = tj_size(q, 1), S = tj_size(k, 1), E = tj_size(q, 2),
            Ev = tj_size(v, 2);
    const float *qp = tj_data(q), *kp = tj_data(k), *vp = tj_data(v);
    const float *mp = mask ? tj_data(mask) : NULL;
    double s[512];
    scale = scale > 0 ? scale : 1 / sqrt((double)E);
    for (int64_t b = 0; b < n; b++)
        for (int64_t i = 0; i < L; i++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < S; j++) {
                double d = 0;
                for (int64_t e = 0; e < E; e++)
                    d += (double)qp[(b * L + i) * E + e] * kp[(b * S + j) * E + e];
                s[j] = d * scale + (mp ? mp[i * S + j] : 0);
                if (causal && j > i)
                    s[j] = -INFINITY;
                mx = s[j] > mx ? s[j] : mx;
            }
            for (int64_t j = 0; j < S; j++)
                sum += (s[j] = exp(s[j] - mx));
            for (int64_t e = 0; e < Ev; e++) {
                double o = 0;
                for (int64_t j = 0; j < S; j++)
                    o += s[j] / sum * vp[(b * S + j) * Ev + e];
                out[(b * L + i) * Ev + e] = o;
            }
        }
}

static void check_large(tj_tensor *q, tj_tensor *k, tj_tensor *v, tj_tensor *mask, bool causal,
                        double scale, int threads)
{
    tj_set_num_threads(threads);
    int64_t n = tj_size(q, 0), L = tj_size(q, 1), Ev = tj_size(v, 2);
    tj_tensor *want = tj_zeros(TJ_F64, 3, (int64_t[]){n, L, Ev});
    sdpa_naive(q, k, v, mask, causal, scale, tj_data(want));
    tj_tensor *r = tj_scaled_dot_product_attention(q, k, v, mask, causal, scale);
    tu_assert_close_any(r, want, 1e-4, 1e-5);
}

/* Random q [n,L,E], k [n,S,E], v [n,S,Ev], causal (scale cs) and under a
 * float mask (scale ms), on 1 and 2 threads, against sdpa_naive. */
static void check_sizes(int64_t n, int64_t L, int64_t S, int64_t E, int64_t Ev, double cs,
                        double ms)
{
    tj_tensor *q = tj_randn(TJ_F32, 3, (int64_t[]){n, L, E});
    tj_tensor *k = tj_randn(TJ_F32, 3, (int64_t[]){n, S, E});
    tj_tensor *v = tj_randn(TJ_F32, 3, (int64_t[]){n, S, Ev});
    tj_tensor *m = tj_randn(TJ_F32, 2, (int64_t[]){L, S});
    for (int t = 1; t <= 2; t++) {
        check_large(q, k, v, NULL, true, cs, t);
        check_large(q, k, v, m, false, ms, t);
    }
}

static void test_sdpa_large_threads(void **state)
{
    (void)state;
    int saved = tj_num_threads();
    tj_manual_seed(7);
    check_sizes(6, 200, 150, 40, 24, 0.1, 0);
    /* batches enough for a worker to take one's blocks together (its k
     * transposed once), E and S no multiples of 8 (the transpose's edges) */
    check_sizes(10, 130, 97, 36, 20, 0, 0.2);
    /* S = 300: 32-row blocks causal, 64-row ones under the mask (sdpa_bq) */
    check_sizes(3, 140, 300, 16, 8, 0, 0);
    /* the same bits with 1 and 2 threads */
    tj_tensor *q = tj_randn(TJ_F32, 3, (int64_t[]){6, 200, 40});
    tj_tensor *k = tj_randn(TJ_F32, 3, (int64_t[]){6, 150, 40});
    tj_tensor *v = tj_randn(TJ_F32, 3, (int64_t[]){6, 150, 24});
    tj_set_num_threads(1);
    tj_tensor *r1 = tj_scaled_dot_product_attention(q, k, v, NULL, true, 0);
    tj_set_num_threads(2);
    tj_tensor *r2 = tj_scaled_dot_product_attention(q, k, v, NULL, true, 0);
    tu_assert_close(r2, r1, 0, 0);
    tj_set_num_threads(saved);
}

static void test_sdpa_extreme(void **state)
{
    (void)state;
    /* scores in the hundreds: the max-shifted softmax stays finite and exact */
    tj_tensor *q = tj_clone(tj_reshape(G("sdpa_basic_q"), 3, (int64_t[]){6, 5, 8}));
    float *qp = tj_data(q);
    for (int64_t i = 0; i < tj_numel(q); i++)
        qp[i] *= 30;
    tj_tensor *k = tj_reshape(G("sdpa_basic_k"), 3, (int64_t[]){6, 7, 8});
    tj_tensor *v = tj_reshape(G("sdpa_basic_v"), 3, (int64_t[]){6, 7, 6});
    check_large(q, k, v, NULL, false, 0, tj_num_threads());
    /* a NaN in one query poisons its row only */
    tj_tensor *qn = tj_clone(q);
    ((float *)tj_data(qn))[2 * 8 + 3] = NAN;   /* batch 0, row 2 */
    tj_tensor *r = tj_scaled_dot_product_attention(qn, k, v, NULL, false, 0);
    assert_non_null(r);
    for (int64_t i = 0; i < 5; i++)
        assert_true(isnan(tj_get(r, (int64_t[]){0, i, 0})) == (i == 2));
}

static void test_sdpa_errors(void **state)
{
    (void)state;
    tj_tensor *q = G("sdpa_basic_q"), *k = G("sdpa_basic_k"), *v = G("sdpa_basic_v");
    tj_tensor *v64 = tj_ones(TJ_F64, 4, (int64_t[]){2, 3, 7, 6});
    tu_assert_error(tj_scaled_dot_product_attention(tj_ones(TJ_F32, 1, (int64_t[]){8}), k, v,
                                                    NULL, false, 0),
                    "sdpa(f32[8], f32[2,3,7,8], f32[2,3,7,6])", "at least 2 dims", NULL);
    tu_assert_error(tj_scaled_dot_product_attention(q, k, v64, NULL, false, 0),
                    "sdpa(f32[2,3,5,8], f32[2,3,7,8], f64[2,3,7,6])", "same dtype", NULL);
    tj_tensor *qi = tj_ones(TJ_I64, 2, (int64_t[]){5, 8});
    tu_assert_error(tj_scaled_dot_product_attention(qi, qi, qi, NULL, false, 0),
                    "sdpa(i64[5,8], i64[5,8], i64[5,8])", "must be float", NULL);
    tj_tensor *k9 = tj_ones(TJ_F32, 4, (int64_t[]){2, 3, 7, 9});
    tu_assert_error(tj_scaled_dot_product_attention(q, k9, v, NULL, false, 0),
                    "sdpa(f32[2,3,5,8], f32[2,3,7,9], f32[2,3,7,6])", "E of q (8) and k (9)",
                    NULL);
    tj_tensor *v6 = tj_ones(TJ_F32, 4, (int64_t[]){2, 3, 6, 6});
    tu_assert_error(tj_scaled_dot_product_attention(q, k, v6, NULL, false, 0),
                    "sdpa(f32[2,3,5,8], f32[2,3,7,8], f32[2,3,6,6])", "S of k (7) and v (6)",
                    NULL);
    tj_tensor *k4 = tj_ones(TJ_F32, 4, (int64_t[]){4, 3, 7, 8});
    tu_assert_error(tj_scaled_dot_product_attention(q, k4, v, NULL, false, 0),
                    "sdpa(f32[2,3,5,8], f32[4,3,7,8], f32[2,3,7,6])", "batch dims", NULL);
    tj_tensor *mbad = tj_ones(TJ_BOOL, 2, (int64_t[]){5, 6});
    tu_assert_error(tj_scaled_dot_product_attention(q, k, v, mbad, false, 0),
                    "sdpa(f32[2,3,5,8], f32[2,3,7,8], f32[2,3,7,6], bool[5,6])",
                    "does not broadcast to the scores' shape [2,3,5,7]", NULL);
    tj_tensor *mbig = tj_ones(TJ_BOOL, 5, (int64_t[]){2, 2, 3, 5, 7});
    tu_assert_error(tj_scaled_dot_product_attention(q, k, v, mbig, false, 0),
                    "sdpa(f32[2,3,5,8], f32[2,3,7,8], f32[2,3,7,6], bool[2,2,3,5,7])",
                    "does not broadcast", NULL);
    tj_tensor *mi = tj_ones(TJ_I32, 2, (int64_t[]){5, 7});
    tu_assert_error(tj_scaled_dot_product_attention(q, k, v, mi, false, 0),
                    "sdpa(f32[2,3,5,8], f32[2,3,7,8], f32[2,3,7,6], i32[5,7])",
                    "mask must be bool or f32", NULL);
    tj_tensor *m64 = tj_ones(TJ_F64, 2, (int64_t[]){5, 7});
    tu_assert_error(tj_scaled_dot_product_attention(q, k, v, m64, false, 0),
                    "sdpa(f32[2,3,5,8], f32[2,3,7,8], f32[2,3,7,6], f64[5,7])",
                    "mask must be bool or f32", NULL);
    tj_tensor *mok = tj_ones(TJ_BOOL, 2, (int64_t[]){5, 7});
    tu_assert_error(tj_scaled_dot_product_attention(q, k, v, mok, true, 0),
                    "sdpa(f32[2,3,5,8], f32[2,3,7,8], f32[2,3,7,6], bool[5,7])",
                    "a mask or causal, not both", NULL);
    assert_null(tj_scaled_dot_product_attention(NULL, k, v, NULL, false, 0));
    assert_null(tj_scaled_dot_product_attention(q, NULL, v, NULL, false, 0));
    assert_null(tj_scaled_dot_product_attention(q, k, NULL, NULL, false, 0));
    tj_clear_error();
}

/* ---- cross_entropy ------------------------------------------------------------------ */

static void test_cross_entropy(void **state)
{
    (void)state;
    tu_assert_close(tj_cross_entropy(G("ce_x"), G("ce_t")), G0("ce_out"), 1e-6, 1e-7);
    tu_assert_close(tj_cross_entropy(G("ce_x"), G("ce_t_i32")), G0("ce_out"), 1e-6, 1e-7);
    tu_assert_close(tj_cross_entropy(G("ce_x64"), G("ce_t64")), G0("ce_out64"), 1e-14, 0);
}

static void test_cross_entropy_extreme(void **state)
{
    (void)state;
    /* logits 1e4 apart and -inf: log-sum-exp keeps every row finite */
    tj_tensor *r = tj_cross_entropy(G("ce_xe"), G("ce_te"));
    tu_assert_close(r, G0("ce_oute"), 1e-6, 0);
    assert_true(isfinite(tj_item(r)));
}

static void test_cross_entropy_strided_empty(void **state)
{
    (void)state;
    tj_tensor *x = tj_transpose(G("ce_xt"), 0, 1);   /* [6, 5], column stride 6 */
    tu_assert_close(tj_cross_entropy(x, G("ce_t")), G0("ce_out_t"), 1e-6, 1e-7);
    /* mean over no rows is NaN, like torch */
    tj_tensor *r = tj_cross_entropy(tj_zeros(TJ_F32, 2, (int64_t[]){0, 5}),
                                    tj_zeros(TJ_I64, 1, (int64_t[]){0}));
    assert_non_null(r);
    assert_int_equal(tj_ndim(r), 0);
    assert_true(isnan(tj_item(r)));
}

static void test_cross_entropy_errors(void **state)
{
    (void)state;
    tj_tensor *x = G("ce_x"), *t = G("ce_t");
    tu_assert_error(tj_cross_entropy(tj_ones(TJ_F32, 1, (int64_t[]){5}), t),
                    "cross_entropy(f32[5], i64[6])",
                    "target i64[6] is neither logits' shape without the class dim ([])", NULL);
    tu_assert_error(tj_cross_entropy(tj_ones(TJ_I32, 2, (int64_t[]){6, 5}), t),
                    "cross_entropy(i32[6,5], i64[6])", "logits must be float", NULL);
    tu_assert_error(tj_cross_entropy(x, tj_ones(TJ_I64, 2, (int64_t[]){6, 1})),
                    "cross_entropy(f32[6,5], i64[6,1])", "target i64[6,1] is neither", NULL);
    tu_assert_error(tj_cross_entropy(x, tj_ones(TJ_F32, 1, (int64_t[]){6})),
                    "cross_entropy(f32[6,5], f32[6])", "class indices must be i64 or i32", NULL);
    tu_assert_error(tj_cross_entropy(x, tj_ones(TJ_I64, 1, (int64_t[]){4})),
                    "cross_entropy(f32[6,5], i64[4])", "without the class dim ([6])", NULL);
    tu_assert_error(tj_cross_entropy(x, i64s(6, (int64_t[]){0, 1, 5, 0, 0, 0})),
                    "cross_entropy(f32[6,5], i64[6])", "target 5 is out of range",
                    "class count C = 5", NULL);
    tu_assert_error(tj_cross_entropy(x, i32s(6, (int32_t[]){0, 1, -2, 0, 0, 0})),
                    "cross_entropy(f32[6,5], i32[6])", "target -2", NULL);
    assert_null(tj_cross_entropy(NULL, t));
    assert_null(tj_cross_entropy(x, NULL));
    tj_clear_error();
}

/* ---- dropout ---------------------------------------------------------------------- */

static tj_tensor *ramp(tj_dtype dt, int64_t n)
{
    return tj_arange(dt, 1, (double)n + 1, 1);   /* 1, 2, ..., n: no zeros */
}

static void test_dropout_matches_rand(void **state)
{
    (void)state;
    /* element i is kept when the Philox uniform at (seed, offset + i) >= p,
     * the draw tj_rand makes from the same generator state */
    const double p = 0.3;
    tj_tensor *x = ramp(TJ_F32, 1000);
    tj_manual_seed(11);
    tj_tensor *u = tj_rand(TJ_F32, 1, (int64_t[]){1000});
    tj_manual_seed(11);
    tj_tensor *y = tj_dropout(x, p, true);
    assert_non_null(y);
    float scale = (float)(1.0 / (1.0 - p));
    for (int64_t i = 0; i < 1000; i++) {
        double ui = tj_get(u, &i), xi = tj_get(x, &i), yi = tj_get(y, &i);
        double want = ui >= (float)p ? (double)((float)xi * scale) : 0.0;
        if (yi != want)
            fail_msg("at %lld: u %.9g x %g got %.9g want %.9g", (long long)i, ui, xi, yi, want);
    }
}

static void test_dropout_deterministic(void **state)
{
    (void)state;
    int saved = tj_num_threads();
    tj_tensor *x = ramp(TJ_F32, 300000);   /* several parallel chunks */
    tj_manual_seed(5);
    tj_tensor *a = tj_dropout(x, 0.5, true);
    tj_tensor *b = tj_dropout(x, 0.5, true);   /* the generator moved on */
    tj_manual_seed(5);
    tj_set_num_threads(1);
    tj_tensor *c = tj_dropout(x, 0.5, true);
    tj_set_num_threads(2);
    tj_tensor *d = tj_dropout(x, 0.5, true);
    tj_set_num_threads(saved);
    tu_assert_close(c, a, 0, 0);
    tj_manual_seed(5);
    tj_tensor *a2 = tj_dropout(x, 0.5, true);
    tu_assert_close(a2, a, 0, 0);
    tu_assert_close(d, b, 0, 0);
    const float *ap = tj_data(a), *bp = tj_data(b);
    int64_t same = 0;
    for (int64_t i = 0; i < tj_numel(a); i++)
        same += ap[i] == bp[i];
    assert_true(same < tj_numel(a) * 6 / 10);   /* ~half agree by chance (both 0 or both kept) */
}

static void test_dropout_fraction_and_scale(void **state)
{
    (void)state;
    const int64_t n = 200000;
    const double ps[3] = {0.1, 0.5, 0.9};
    for (int k = 0; k < 3; k++) {
        tj_tensor *x = tj_full(TJ_F32, 1, &n, 2.0);
        tj_tensor *y = tj_dropout(x, ps[k], true);
        assert_non_null(y);
        const float *yp = tj_data(y);
        float kept = (float)(2.0 * (1.0 / (1.0 - ps[k])));
        int64_t zeros = 0;
        for (int64_t i = 0; i < n; i++) {
            if (yp[i] == 0)
                zeros++;
            else if (yp[i] != kept)
                fail_msg("p %g: element %lld is %.9g, want 0 or %.9g", ps[k], (long long)i,
                         yp[i], kept);
        }
        double frac = (double)zeros / (double)n;   /* std ~0.001 */
        if (fabs(frac - ps[k]) > 0.01)
            fail_msg("p %g: fraction of zeros %g", ps[k], frac);
    }
}

static void test_dropout_p0_p1(void **state)
{
    (void)state;
    tj_tensor *x = ramp(TJ_F32, 100);
    assert_ptr_equal(tj_dropout(x, 0, true), x);   /* p 0 is the identity */
    tu_assert_close(tj_dropout(x, 1, true), tj_zeros(TJ_F32, 1, (int64_t[]){100}), 0, 0);
    tj_tensor *e = tj_dropout(tj_ones(TJ_F32, 2, (int64_t[]){0, 3}), 0.5, true);
    assert_non_null(e);
    assert_int_equal(tj_numel(e), 0);
}

static void test_dropout_eval(void **state)
{
    (void)state;
    tj_tensor *x = ramp(TJ_F64, 10);
    tj_tensor *y = tj_dropout(x, 0.5, false);
    assert_ptr_equal(y, x);
    /* y is owned by the scope like any result: keep it past an inner scope */
    tj_scope_begin();
    tj_tensor *z = tj_dropout(x, 0.9, false);
    tj_scope_end();
    assert_ptr_equal(z, x);
    assert_true(tj_get(x, (int64_t[]){3}) == 4);
}

static void test_dropout_f64_strided_nan(void **state)
{
    (void)state;
    /* a transposed input is dropped in its logical (row-major) order */
    tj_tensor *x = tj_transpose(tj_reshape(ramp(TJ_F64, 60), 2, (int64_t[]){6, 10}), 0, 1);
    tj_manual_seed(3);
    tj_tensor *y = tj_dropout(x, 0.4, true);
    tj_manual_seed(3);
    tj_tensor *yc = tj_dropout(tj_clone(x), 0.4, true);
    tu_assert_close(y, yc, 0, 0);
    assert_int_equal(tj_dtype_of(y), TJ_F64);
    /* dropped NaN and inf elements are exactly 0; kept ones stay NaN/inf */
    float v[4] = {NAN, INFINITY, NAN, -INFINITY};
    tj_tensor *s = tj_from_data(TJ_F32, 1, (int64_t[]){4}, v);
    tj_tensor *z = tj_dropout(s, 1, true);
    for (int64_t i = 0; i < 4; i++)
        assert_true(tj_get(z, &i) == 0);
    z = tj_dropout(s, 1e-9, true);
    assert_true(isnan(tj_get(z, (int64_t[]){0})));
    assert_true(tj_get(z, (int64_t[]){1}) == INFINITY);
}

static void test_dropout_errors(void **state)
{
    (void)state;
    tj_tensor *x = tj_ones(TJ_F32, 2, (int64_t[]){2, 3});
    tu_assert_error(tj_dropout(x, 1.5, true), "dropout(f32[2,3])", "p = 1.5 is not in [0, 1]",
                    NULL);
    tu_assert_error(tj_dropout(x, -0.1, true), "dropout(f32[2,3])", "p = -0.1", NULL);
    tu_assert_error(tj_dropout(x, NAN, true), "dropout(f32[2,3])", "p = nan", NULL);
    tu_assert_error(tj_dropout(x, 2, false), "dropout(f32[2,3])", "p = 2 is not", NULL);
    tj_tensor *xi = tj_ones(TJ_I32, 1, (int64_t[]){4});
    tu_assert_error(tj_dropout(xi, 0.5, true), "dropout(i32[4])", "needs a float", NULL);
    tu_assert_error(tj_dropout(xi, 0.5, false), "dropout(i32[4])", "needs a float", NULL);
    assert_null(tj_dropout(NULL, 0.5, true));
    assert_null(tj_dropout(NULL, 0.5, false));
    tj_clear_error();
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_embedding_i64),
        T(test_embedding_i32),
        T(test_embedding_multidim),
        T(test_embedding_f64),
        T(test_embedding_strided),
        T(test_embedding_empty),
        T(test_embedding_int_weight),
        T(test_embedding_errors),
        T(test_sdpa_basic),
        T(test_sdpa_causal),
        T(test_sdpa_masks),
        T(test_sdpa_broadcast_batch),
        T(test_sdpa_strided),
        T(test_sdpa_fully_masked_row),
        T(test_sdpa_empty),
        T(test_sdpa_large_threads),
        T(test_sdpa_extreme),
        T(test_sdpa_errors),
        T(test_cross_entropy),
        T(test_cross_entropy_extreme),
        T(test_cross_entropy_strided_empty),
        T(test_cross_entropy_errors),
        T(test_dropout_matches_rand),
        T(test_dropout_deterministic),
        T(test_dropout_fraction_and_scale),
        T(test_dropout_p0_p1),
        T(test_dropout_eval),
        T(test_dropout_f64_strided_nan),
        T(test_dropout_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
