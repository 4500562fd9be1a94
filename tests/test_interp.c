/* test_interp.c - ops.def's "interpolate, embedding_bag, einsum,
 * scatter_reduce" block (einsum: test_einsum.c) beyond what test_opinfo.c
 * (the rows' values against PyTorch, eager and compiled) and test_autograd.c
 * (their gradients) check: the public entry points against PyTorch
 * (tests/golden/interp, scripts/golden/interp.py: scale factors, 1-D and 3-D
 * nearest, bicubic and area with inf and NaN, per_sample_weights,
 * include_last_offset, padding_idx, max_norm's write of the weight,
 * scatter_reduce prod's gradient at zeros), compiled against eager (a
 * compiled backward, a compiled training step writing the weight back), a
 * trace that keeps the composite, and every error path of the shape rules
 * and entry points, with messages naming the op and the shapes. */
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

static tj_tensor *G(const char *name) { return tu_golden("interp", name); }

static tj_tensor *R(tj_dtype dt, int nd, const int64_t *shape) { return tj_rand(dt, nd, shape); }

/* ---- against PyTorch ----------------------------------------------------------------- */

static void test_interpolate_api(void **state)
{
    (void)state;
    tj_tensor *x = G("x");
    tu_assert_close(tj_interpolate(x, NULL, (double[]){1.7, 2.3}, 2, TJ_INTERP_NEAREST, false),
                    G("nearest_scale"), 0, 0);
    tu_assert_close(tj_interpolate(x, (int64_t[]){7, 3}, NULL, 2, TJ_INTERP_NEAREST, false),
                    G("nearest_size"), 0, 0);
    tu_assert_close(tj_interpolate(x, NULL, (double[]){2.5, 0.6}, 2, TJ_INTERP_BILINEAR, false),
                    G("bilinear_scale"), 1e-6, 1e-7);
    tu_assert_close(tj_interpolate(x, (int64_t[]){9, 6}, NULL, 2, TJ_INTERP_BILINEAR, true),
                    G("bilinear_corners"), 1e-6, 1e-7);
    tu_assert_close(tj_interpolate(G("x1"), NULL, (double[]){2.2}, 1, TJ_INTERP_NEAREST, false),
                    G("nearest1d_scale"), 0, 0);
    tu_assert_close(tj_interpolate(G("x3"), NULL, (double[]){1.5, 2.0, 2.5}, 3, TJ_INTERP_NEAREST,
                                   false),
                    G("nearest3d_scale"), 0, 0);
}

/* bicubic and area (scripts/golden/interp.py: interp_cubic_area) */
static void test_interpolate_bicubic_area(void **state)
{
    (void)state;
    tj_tensor *x = G("x");
    const tj_interp_mode C = TJ_INTERP_BICUBIC, A = TJ_INTERP_AREA;
    tu_assert_close(tj_interpolate(x, NULL, (double[]){2.5, 0.6}, 2, C, false), G("bicubic_scale"),
                    1e-5, 1e-6);
    tu_assert_close(tj_interpolate(x, (int64_t[]){9, 6}, NULL, 2, C, false), G("bicubic_size"),
                    1e-5, 1e-6);
    tu_assert_close(tj_interpolate(x, (int64_t[]){9, 6}, NULL, 2, C, true), G("bicubic_corners"),
                    1e-5, 1e-6);
    tu_assert_close(tj_interpolate(x, (int64_t[]){3, 2}, NULL, 2, C, false), G("bicubic_down"),
                    1e-5, 1e-6);
    tu_assert_close(tj_interpolate(x, NULL, (double[]){1.1, 1.2}, 2, C, false),
                    G("bicubic_same_scale"), 1e-5, 1e-6);
    tu_assert_close(tj_interpolate(tj_cast(x, TJ_F64), (int64_t[]){7, 5}, NULL, 2, C, true),
                    G("bicubic_f64"), 1e-12, 1e-13);
    tu_assert_close(tj_interpolate(x, (int64_t[]){7, 3}, NULL, 2, A, false), G("area_size"), 1e-5,
                    1e-6);
    tu_assert_close(tj_interpolate(x, (int64_t[]){5, 2}, NULL, 2, A, false), G("area_halves"), 1e-6,
                    1e-7);
    tu_assert_close(tj_interpolate(x, NULL, (double[]){2.5, 0.6}, 2, A, false), G("area_scale"),
                    1e-5, 1e-6);
    tu_assert_close(tj_interpolate(G("x1"), (int64_t[]){13}, NULL, 1, A, false), G("area1d_up"),
                    1e-6, 1e-7);
    tu_assert_close(tj_interpolate(G("x1"), (int64_t[]){4}, NULL, 1, A, false), G("area1d_down"),
                    1e-5, 1e-6);
    tu_assert_close(tj_interpolate(G("x40"), (int64_t[]){3}, NULL, 1, A, false), G("area1d_long"),
                    1e-5, 1e-6);
    tu_assert_close(tj_interpolate(G("x3"), (int64_t[]){3, 5, 2}, NULL, 3, A, false), G("area3d"),
                    1e-5, 1e-6);
    tu_assert_close(tj_adaptive_avg_pool3d(G("x3"), 3, 5, 2), G("area3d"), 1e-5, 1e-6);
    tu_assert_close(tj_adaptive_avg_pool3d(tj_squeeze(G("x3"), (int[]){0}, 1), 3, 5, 2),
                    tj_squeeze(G("area3d"), (int[]){0}, 1), 1e-5, 1e-6);
    /* inf and NaN reach the outputs PyTorch's do (inf * 0 is NaN in both) */
    tu_assert_close(tj_interpolate(G("xinf"), (int64_t[]){6, 7}, NULL, 2, C, false),
                    G("bicubic_inf"), 1e-5, 1e-5);
    tu_assert_close(tj_interpolate(G("xinf"), (int64_t[]){6, 3}, NULL, 2, A, false), G("area_inf"),
                    1e-6, 1e-6);
}

/* bicubic's gradient is its forward's transpose (a linear map: <y(x), g> =
 * <x, dx>), also where out == in with a scale, where PyTorch 1.13's backward
 * is the identity and its forward is not (dx is not g there). */
static void test_bicubic_grad_same_size(void **state)
{
    (void)state;
    tj_tensor *x = tj_clone(R(TJ_F64, 4, (int64_t[]){1, 2, 3, 4}));
    assert_int_equal(tj_requires_grad(x, true), 0);
    tj_tensor *y = tj_interpolate(x, NULL, (double[]){1.1, 1.2}, 2, TJ_INTERP_BICUBIC, false);
    tj_tensor *g = R(TJ_F64, 4, (int64_t[]){1, 2, 3, 4});
    assert_int_equal(tj_backward_seed(y, g), 0);
    double yg = tj_item(tj_sum(tj_mul(y, g), NULL, 0, false));
    double xd = tj_item(tj_sum(tj_mul(tj_detach(x), tj_grad(x)), NULL, 0, false));
    assert_true(fabs(yg - xd) <= 1e-12 * (1 + fabs(yg)));
    assert_true(tj_item(tj_amax(tj_abs(tj_sub(tj_grad(x), g)), NULL, 0, false)) > 1e-3);
}

/* A compiled call of each new mode equals the eager one. */
static tj_tensor *model_modes(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    tj_tensor *c = tj_interpolate(args[0], (int64_t[]){7, 9}, NULL, 2, TJ_INTERP_BICUBIC, false);
    tj_tensor *a = tj_interpolate(args[0], NULL, (double[]){0.5, 2.4}, 2, TJ_INTERP_AREA, false);
    tj_tensor *a3 = tj_interpolate(args[1], (int64_t[]){3, 2, 5}, NULL, 3, TJ_INTERP_AREA, false);
    return tj_add(tj_add(tj_sum(c, NULL, 0, false), tj_sum(tj_mul(a, a), NULL, 0, false)),
                  tj_sum(tj_exp(a3), NULL, 0, false));
}

static void test_interpolate_modes_compiled(void **state)
{
    (void)state;
    tj_tensor *args[2] = {R(TJ_F32, 4, (int64_t[]){2, 3, 5, 4}),
                          R(TJ_F32, 5, (int64_t[]){1, 2, 2, 3, 4})};
    tj_tensor *want = model_modes(NULL, args, 2);
    tj_compiled *m = tj_compile(model_modes, NULL, &(tj_compile_options){.name = "modes"});
    assert_non_null(m);
    tu_assert_close(tj_call(m, args, 2), want, 1e-5, 1e-5);
    tu_assert_close(tj_call(m, args, 2), want, 1e-5, 1e-5);
    tj_compiled_free(m);
}

static void test_embedding_bag_api(void **state)
{
    (void)state;
    tj_tensor *w = G("w"), *idx = G("idx"), *off = G("off");
    tu_assert_close(tj_embedding_bag(w, idx, off, TJ_REDUCE_SUM, G("psw"), false),
                    G("bag_sum_psw"), 1e-6, 1e-7);
    tu_assert_close(tj_embedding_bag(w, idx, off, TJ_REDUCE_AMAX, NULL, false), G("bag_max"), 0, 0);
    tj_tensor *idx6 = tj_narrow(idx, 0, 0, 6);
    tu_assert_close(tj_embedding_bag(w, idx6, off, TJ_REDUCE_MEAN, NULL, true), G("bag_mean_last"),
                    1e-6, 1e-7);
}

static void infer_fails(ir_op op, const ir_type *const *in, int nin, const ir_attrs *a,
                        const char *why);

/* ---- embedding_bag's padding_idx and max_norm (interp.py: bag_padding_max_norm) ---- */

static tj_tensor *bag(tj_tensor *w, tj_tensor *ix, tj_tensor *off, tj_embedding_bag_options o)
{
    return tj_embedding_bag_ex(w, ix, off, &o);
}

static void test_embedding_bag_padding(void **state)
{
    (void)state;
    tj_tensor *w = G("pw"), *idx = G("pidx"), *off = G("poff");
    const tj_reduce_op modes[3] = {TJ_REDUCE_SUM, TJ_REDUCE_MEAN, TJ_REDUCE_AMAX};
    const char *names[3] = {"sum", "mean", "amax"};
    for (int m = 0; m < 3; m++) {
        char n1[32], n2[32];
        snprintf(n1, sizeof n1, "pad_%s", names[m]);
        snprintf(n2, sizeof n2, "pad2d_%s", names[m]);
        tj_embedding_bag_options o = {.mode = modes[m], .has_padding_idx = true, .padding_idx = 2};
        tu_assert_close(bag(w, idx, off, o), G(n1), 1e-6, 1e-7);
        o.padding_idx = -4; /* row 2 of 6, from the end */
        tu_assert_close(bag(w, G("pi2"), NULL, o), G(n2), 1e-6, 1e-7);
    }
    tu_assert_close(bag(w, idx, off,
                        (tj_embedding_bag_options){.per_sample_weights = G("ppsw"),
                                                   .has_padding_idx = true,
                                                   .padding_idx = 2}),
                    G("pad_psw"), 1e-6, 1e-7);
    /* include_last_offset with padding (PyTorch 1.13 corrupts its heap there): bags
     * [0,2) [2,3) [3,3); the entries past the last offset and the padding are dropped */
    tj_tensor *w1 = tj_narrow(w, 0, 1, 1), *w2 = tj_narrow(w, 0, 2, 1);
    tj_tensor *z = tj_zeros(TJ_F32, 2, (int64_t[]){1, 3});
    for (int m = 0; m < 3; m++) {
        tj_embedding_bag_options o = {.mode = modes[m],
                                      .include_last_offset = true,
                                      .has_padding_idx = true,
                                      .padding_idx = 2};
        tu_assert_close(bag(w, idx, off, o), tj_cat((tj_tensor *[]){w1, z, z}, 3, 0), 0, 0);
        o.padding_idx = 1; /* bag 0 is then row 2, bag 1 row 2, bag 2 empty */
        tu_assert_close(bag(w, idx, off, o), tj_cat((tj_tensor *[]){w2, w2, z}, 3, 0), 0, 0);
        o.padding_idx = 2;   /* 2-D: the last row is dropped; row 0 is padding only */
        tu_assert_close(bag(w, G("pi2"), NULL, o), z, 0, 0);
        /* without padding_idx, entries past the last offset are an error */
        o.has_padding_idx = false;
        tu_assert_error(bag(w, idx, off, o), "embedding_bag(f32[6,3], i64[6], i64[4])",
                        "index 3 is out of range for dim 0 of size 3", NULL);
    }
}

static tj_tensor *model_bag_pad(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    tj_embedding_bag_options o = {.mode = TJ_REDUCE_MEAN,
                                  .has_padding_idx = true,
                                  .padding_idx = 2};
    tj_tensor *a = tj_embedding_bag_ex(args[0], args[1], args[2], &o);
    o.mode = TJ_REDUCE_AMAX;
    return tj_add(a, tj_embedding_bag_ex(args[0], args[1], args[2], &o));
}

static void test_embedding_bag_padding_compiled(void **state)
{
    (void)state;
    tj_tensor *args[3] = {G("pw"), G("pidx"), G("poff")};
    tj_tensor *want = model_bag_pad(NULL, args, 3);
    tj_compiled *m = tj_compile(model_bag_pad, NULL, &(tj_compile_options){.name = "bag_pad"});
    assert_non_null(m);
    tu_assert_close(tj_call(m, args, 3), want, 1e-6, 1e-7);
    tj_compiled_free(m);
}

/* max_norm renormalizes the rows used, in place in weight (torch's), then bags. */
static void test_embedding_bag_max_norm(void **state)
{
    (void)state;
    const struct {
        const char *tag;
        double p;
    } norms[] = {{"2", 0}, {"1", 1}, {"inf", INFINITY}};
    for (size_t k = 0; k < sizeof norms / sizeof *norms; k++) {
        char ny[32], nw[32];
        snprintf(ny, sizeof ny, "mn%s_y", norms[k].tag);
        snprintf(nw, sizeof nw, "mn%s_w", norms[k].tag);
        tj_tensor *w = tj_clone(tj_mul_s(G("pw"), 3));
        tj_embedding_bag_options o = {.mode = TJ_REDUCE_MEAN,
                                      .has_padding_idx = true,
                                      .padding_idx = 4,
                                      .max_norm = 1.5,
                                      .norm_type = norms[k].p};
        tu_assert_close(bag(w, G("pidx"), G("poff"), o), G(ny), 1e-6, 1e-6);
        tu_assert_close(w, G(nw), 1e-6, 1e-7); /* written in place */
    }
    /* the gradient reaches the renormalized weight (the renorm has none) */
    tj_tensor *w = tj_clone(tj_mul_s(G("pw"), 3));
    assert_int_equal(tj_requires_grad(w, true), 0);
    tj_tensor *y = bag(w, G("pidx"), G("poff"), (tj_embedding_bag_options){.max_norm = 2});
    tu_assert_close(y, G("mng_y"), 1e-6, 1e-6);
    tu_assert_close(w, G("mng_w"), 1e-6, 1e-7);
    assert_int_equal(tj_backward_seed(y, G("mng_g")), 0);
    tu_assert_close(tj_grad(w), G("mng_dw"), 1e-6, 1e-7);
    /* a second renorm of a weight the tape saved: as PyTorch, the backward
     * passes (the gather's rule reads no values of the weight); the gradient
     * is twice that of one bag, which is linear in the rows */
    tj_zero_grad(w);
    tj_tensor *y2 = bag(w, G("pidx"), G("poff"), (tj_embedding_bag_options){.max_norm = 1});
    y = bag(w, G("pidx"), G("poff"), (tj_embedding_bag_options){.max_norm = 0.5});
    assert_int_equal(tj_backward(tj_sum(tj_add(y, y2), NULL, 0, false)), 0);
    tj_tensor *w1 = tj_clone(G("pw"));
    assert_int_equal(tj_requires_grad(w1, true), 0);
    assert_int_equal(tj_backward(tj_sum(bag(w1, G("pidx"), G("poff"), (tj_embedding_bag_options){0}), NULL, 0,
                                        false)),
                     0);
    tu_assert_close(tj_grad(w), tj_mul_s(tj_grad(w1), 2), 1e-6, 1e-7);
}

/* Compiled, the renorm is a functionalized write: the graph computes the new
 * weight and the call writes it back, as eagerly; the gradient reaches it. */
static tj_tensor *model_max_norm(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    tj_tensor *w = ctx; /* captured, as a model's embedding table */
    tj_embedding_bag_options o = {.mode = TJ_REDUCE_SUM, .max_norm = 2};
    return tj_embedding_bag_ex(w, args[0], args[1], &o);
}

static void test_embedding_bag_max_norm_compiled(void **state)
{
    (void)state;
    tj_tensor *args[2] = {G("pidx"), G("poff")};
    tj_tensor *we = tj_keep(tj_clone(tj_mul_s(G("pw"), 3)));
    tj_tensor *wc = tj_keep(tj_clone(tj_mul_s(G("pw"), 3)));
    tj_compiled *m = tj_compile(model_max_norm, wc, &(tj_compile_options){.name = "max_norm"});
    assert_non_null(m);
    tu_assert_close(tj_call(m, args, 2), model_max_norm(we, args, 2), 1e-6, 1e-6);
    tu_assert_close(wc, we, 1e-6, 1e-7);
    tu_assert_close(wc, G("mng_w"), 1e-6, 1e-7);
    tu_assert_close(tj_call(m, args, 2), model_max_norm(we, args, 2), 1e-6, 1e-6);
    tj_compiled_free(m);
    /* a training step: weight requires grad, the compiled call's backward */
    assert_int_equal(tj_requires_grad(we, true), 0);
    assert_int_equal(tj_requires_grad(wc, true), 0);
    tj_tensor *rows = tj_clone(tj_mul_s(G("pw"), 3));
    tj_no_grad_begin();
    assert_int_equal(tj_copy_(we, rows), 0);
    assert_int_equal(tj_copy_(wc, rows), 0);
    tj_no_grad_end();
    m = tj_compile(model_max_norm, wc, &(tj_compile_options){.name = "max_norm_grad"});
    assert_int_equal(tj_backward_seed(tj_call(m, args, 2), G("mng_g")), 0);
    assert_int_equal(tj_backward_seed(model_max_norm(we, args, 2), G("mng_g")), 0);
    tu_assert_close(wc, G("mng_w"), 1e-6, 1e-7);
    tu_assert_close(tj_grad(wc), G("mng_dw"), 1e-6, 1e-7);
    tu_assert_close(tj_grad(we), G("mng_dw"), 1e-6, 1e-7);
    tj_compiled_free(m);
    tj_release(we);
    tj_release(wc);
}

static void test_embedding_bag_padding_errors(void **state)
{
    (void)state;
    tj_tensor *w = G("pw"), *idx = G("pidx"), *off = G("poff");
    const char *head = "embedding_bag(f32[6,3], i64[6], i64[4])";
    tu_assert_error(bag(w, idx, off,
                        (tj_embedding_bag_options){.has_padding_idx = true, .padding_idx = 6}),
                    head, "padding_idx 6 is out of range for weight's 6 rows (-6 through 5)", NULL);
    tu_assert_error(bag(w, idx, off,
                        (tj_embedding_bag_options){.has_padding_idx = true, .padding_idx = -7}),
                    head, "padding_idx -7 is out of range", NULL);
    tu_assert_error(bag(w, idx, off, (tj_embedding_bag_options){.max_norm = -1}), head,
                    "max_norm (-1) and norm_type (0) must not be negative or NaN", NULL);
    tu_assert_error(bag(w, idx, off, (tj_embedding_bag_options){.max_norm = NAN}), head,
                    "must not be negative or NaN", NULL);
    tu_assert_error(bag(w, idx, off, (tj_embedding_bag_options){.max_norm = 1, .norm_type = -2}),
                    head, "norm_type (-2)", NULL);
    /* a call refused by the shape rule, or an index out of range: weight unchanged */
    tj_tensor *wm = tj_clone(tj_mul_s(w, 3)), *before = tj_clone(wm);
    tu_assert_error(bag(wm, idx, NULL, (tj_embedding_bag_options){.max_norm = 1}),
                    "embedding_bag(f32[6,3], i64[6])", "1-D indices need offsets", NULL);
    tu_assert_close(wm, before, 0, 0);
    tj_tensor *far = tj_full(TJ_I64, 1, (int64_t[]){6}, 12);
    tu_assert_error(bag(wm, far, off, (tj_embedding_bag_options){.max_norm = 1}), head,
                    "max_norm: ", "index 12 is out of range for dim 0 of size 6", NULL);
    tu_assert_close(wm, before, 0, 0);
    /* a weight that cannot be written (an expanded view) */
    tj_tensor *ex = tj_expand(tj_narrow(w, 0, 0, 1), 2, (int64_t[]){6, 3});
    tu_assert_error(bag(ex, idx, off, (tj_embedding_bag_options){.max_norm = 1}), head,
                    "max_norm: ", "several elements in one memory location", NULL);
    /* the rule itself (text IR): padding_idx must be a row, one at most */
    ir_type wt = {.dtype = TJ_F32, .ndim = 2, .shape = {6, 3}};
    ir_type it = {.dtype = TJ_I64, .ndim = 2, .shape = {2, 3}};
    ir_attrs a = {0};
    ir_attr_int(&a.a[0], TJ_REDUCE_SUM);
    ir_attr_ints(&a.a[2], (int64_t[]){6}, 1);
    infer_fails(OP_embedding_bag, (const ir_type *[]){&wt, &it}, 2, &a,
                "padding_idx 6 is not a row of weight's 6");
    ir_attr_ints(&a.a[2], (int64_t[]){-1}, 1);
    infer_fails(OP_embedding_bag, (const ir_type *[]){&wt, &it}, 2, &a,
                "padding_idx -1 is not a row of weight's 6");
    ir_attr_ints(&a.a[2], (int64_t[]){1, 2}, 2);
    infer_fails(OP_embedding_bag, (const ir_type *[]){&wt, &it}, 2, &a,
                "padding_idx has 2 entries (none or one)");
}

static void test_scatter_reduce_api(void **state)
{
    (void)state;
    tu_assert_close(tj_scatter_reduce(G("s"), 0, G("ix"), G("src"), TJ_REDUCE_AMIN, false),
                    G("scatter_amin"), 0, 0);
}

/* prod's gradient where zeros meet, against PyTorch's (tests/golden/interp/pz_*:
 * a zero of x, zeros of x and src at one position, one zero of src, two), with
 * and without include_self, eager and through a compiled call's backward. */
static tj_tensor *model_prod(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    return tj_scatter_reduce(args[0], 0, G("pz_ix"), args[1], TJ_REDUCE_PROD, ctx != NULL);
}

static void check_prod_grads(tj_compiled *m, bool self)
{
    const char *tag = self ? "self" : "noself";
    char n[3][32];
    snprintf(n[0], sizeof n[0], "pz_%s_y", tag);
    snprintf(n[1], sizeof n[1], "pz_%s_dx", tag);
    snprintf(n[2], sizeof n[2], "pz_%s_dsrc", tag);
    tj_tensor *in[2] = {tj_clone(G("pz_x")), tj_clone(G("pz_src"))};
    for (int k = 0; k < 2; k++)
        assert_int_equal(tj_requires_grad(in[k], true), 0);
    tj_tensor *y = m ? tj_call(m, in, 2) : model_prod(self ? (void *)1 : NULL, in, 2);
    tu_assert_close(y, G(n[0]), 0, 0);
    assert_int_equal(tj_backward_seed(y, G("pz_g")), 0);
    tu_assert_close(tj_grad(in[0]), G(n[1]), 1e-12, 1e-12);
    tu_assert_close(tj_grad(in[1]), G(n[2]), 1e-12, 1e-12);
}

static void test_scatter_prod_grad_zeros(void **state)
{
    (void)state;
    for (int self = 1; self >= 0; self--) {
        check_prod_grads(NULL, self);
        tj_compiled *m = tj_compile(model_prod, self ? (void *)1 : NULL,
                                    &(tj_compile_options){.name = "prod_grad"});
        assert_non_null(m);
        check_prod_grads(m, self);
        tj_compiled_free(m);
    }
}

/* ---- a trace without gradients keeps the composite ------------------------------------- */

static tj_tensor *model_up(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    return tj_interpolate(args[0], (int64_t[]){6, 8}, NULL, 2, TJ_INTERP_BILINEAR, false);
}

static void test_traced_keeps_composite(void **state)
{
    (void)state;
    tj_tensor *x = R(TJ_F32, 4, (int64_t[]){1, 2, 3, 4});
    tj_tensor *want = model_up(NULL, &x, 1);
    tj_compiled *m = tj_compile(model_up, NULL, &(tj_compile_options){.name = "up"});
    assert_non_null(m);
    tu_assert_close(tj_call(m, &x, 1), want, 1e-6, 0);
    char *text = tj_explain(m);
    assert_non_null(text);
    if (!strstr(text, "graph 1: 1 nodes"))
        fail_msg("not one node in:\n%s", text);
    free(text);
    tj_compiled_free(m);
}

/* ---- errors: entry points ---------------------------------------------------------------- */

static void test_interpolate_errors(void **state)
{
    (void)state;
    tj_tensor *x = R(TJ_F32, 4, (int64_t[]){1, 2, 3, 4});
    int64_t sz[3] = {5, 6, 7};
    double sc[3] = {2, 2, 2};
    const char *head = "interpolate(f32[1,2,3,4])";
    tu_assert_error(tj_interpolate(x, sz, NULL, 0, TJ_INTERP_NEAREST, false), head,
                    "1, 2 or 3 spatial dims are supported (k = 0)", NULL);
    tu_assert_error(tj_interpolate(x, sz, NULL, 4, TJ_INTERP_NEAREST, false), head,
                    "(k = 4)", NULL);
    tu_assert_error(tj_interpolate(x, sz, NULL, 3, TJ_INTERP_NEAREST, false), head,
                    "the input must have 2 + k dims", NULL);
    tu_assert_error(tj_interpolate(x, sz, sc, 2, TJ_INTERP_NEAREST, false), head,
                    "give either size or scale_factor", NULL);
    tu_assert_error(tj_interpolate(x, NULL, NULL, 2, TJ_INTERP_NEAREST, false), head,
                    "give either size or scale_factor", NULL);
    tu_assert_error(tj_interpolate(x, sz, NULL, 2, (tj_interp_mode)7, false), head,
                    "mode must be nearest, bilinear, bicubic or area", NULL);
    tu_assert_error(tj_interpolate(R(TJ_F32, 3, (int64_t[]){1, 2, 3}), sz, NULL, 1,
                                   TJ_INTERP_BILINEAR, false),
                    "interpolate(f32[1,2,3])", "bilinear needs 2 spatial dims", NULL);
    tu_assert_error(tj_interpolate(x, sz, NULL, 2, TJ_INTERP_NEAREST, true), head,
                    "align_corners is only for bilinear and bicubic", NULL);
    tu_assert_error(tj_interpolate(x, sz, NULL, 2, TJ_INTERP_AREA, true), head,
                    "align_corners is only for bilinear and bicubic (k = 2)", NULL);
    tu_assert_error(tj_interpolate(R(TJ_F32, 5, (int64_t[]){1, 2, 3, 4, 5}), sz, NULL, 3,
                                   TJ_INTERP_BICUBIC, false),
                    "interpolate(f32[1,2,3,4,5])", "bicubic needs 2 spatial dims (k = 3)", NULL);
    tu_assert_error(tj_interpolate(x, NULL, (double[]){-1, 2}, 2, TJ_INTERP_AREA, false), head,
                    "scale_factor must be positive and finite", NULL);
    tu_assert_error(tj_interpolate(x, NULL, (double[]){2, 0}, 2, TJ_INTERP_NEAREST, false), head,
                    "scale_factor must be positive and finite", NULL);
    tu_assert_error(tj_interpolate(x, NULL, (double[]){INFINITY, 1}, 2, TJ_INTERP_NEAREST, false),
                    head, "scale_factor must be positive and finite", NULL);
    tu_assert_error(tj_interpolate(x, NULL, (double[]){NAN, 1}, 2, TJ_INTERP_BILINEAR, false),
                    head, "scale_factor must be positive and finite", NULL);
    assert_null(tj_interpolate(NULL, sz, NULL, 2, TJ_INTERP_NEAREST, false));
}

/* ---- errors: the shape rules, through the entry points ------------------------------------ */

static void test_upsample_rule_errors(void **state)
{
    (void)state;
    tj_tensor *x = R(TJ_F32, 4, (int64_t[]){1, 2, 3, 4});
    tu_assert_error(tj_interpolate(x, (int64_t[]){0, 4}, NULL, 2, TJ_INTERP_NEAREST, false),
                    "upsample_nearest(f32[1,2,3,4])", "output size 0 must be positive", NULL);
    tu_assert_error(tj_interpolate(tj_ones(TJ_I64, 4, (int64_t[]){1, 2, 3, 4}), (int64_t[]){5, 4},
                                   NULL, 2, TJ_INTERP_NEAREST, false),
                    "upsample_nearest(i64[1,2,3,4])", "input must be float or u8, got i64", NULL);
    tj_tensor *x0 = R(TJ_F32, 4, (int64_t[]){1, 2, 0, 4});
    tu_assert_error(tj_interpolate(x0, (int64_t[]){5, 4}, NULL, 2, TJ_INTERP_NEAREST, false),
                    "upsample_nearest(f32[1,2,0,4])",
                    "resized dim 2 is 0 (it must be static and nonempty)", NULL);
    tu_assert_error(tj_interpolate(x, (int64_t[]){5, -1}, NULL, 2, TJ_INTERP_BILINEAR, false),
                    "upsample_bilinear2d(f32[1,2,3,4])", "output size -1 must be positive", NULL);
    tu_assert_error(tj_interpolate(tj_ones(TJ_U8, 4, (int64_t[]){1, 2, 3, 4}), (int64_t[]){5, 4},
                                   NULL, 2, TJ_INTERP_BILINEAR, false),
                    "upsample_bilinear2d(u8[1,2,3,4])", "input must be float, got u8", NULL);
    tu_assert_error(tj_interpolate(tj_ones(TJ_U8, 4, (int64_t[]){1, 2, 3, 4}), (int64_t[]){5, 4},
                                   NULL, 2, TJ_INTERP_BICUBIC, true),
                    "upsample_bicubic2d(u8[1,2,3,4])", "input must be float, got u8", NULL);
    tu_assert_error(tj_interpolate(x, (int64_t[]){0, 4}, NULL, 2, TJ_INTERP_BICUBIC, false),
                    "upsample_bicubic2d(f32[1,2,3,4])", "output size 0 must be positive", NULL);
    tu_assert_error(tj_interpolate(tj_ones(TJ_U8, 4, (int64_t[]){1, 2, 3, 4}), (int64_t[]){5, 4},
                                   NULL, 2, TJ_INTERP_AREA, false),
                    "adaptive_avg_pool2d(u8[1,2,3,4])", "input must be float, got u8", NULL);
    tu_assert_error(tj_interpolate(x0, (int64_t[]){5, 4}, NULL, 2, TJ_INTERP_AREA, false),
                    "adaptive_avg_pool2d(f32[1,2,0,4])", "pooled dim 2 is 0", NULL);
    tu_assert_error(tj_interpolate(R(TJ_F32, 5, (int64_t[]){1, 2, 3, 0, 4}), (int64_t[]){1, 2, 3},
                                   NULL, 3, TJ_INTERP_AREA, false),
                    "adaptive_avg_pool3d(f32[1,2,3,0,4])", "pooled dim 3 is 0", NULL);
}

/* The rule's checks the entry point cannot reach (it validates first): ir_infer itself. */
static void infer_fails(ir_op op, const ir_type *const *in, int nin, const ir_attrs *a,
                        const char *why)
{
    ir_type out;
    char err[256] = "";
    assert_int_equal(ir_infer(op, in, nin, a, &out, err, sizeof err), -1);
    if (!strstr(err, why))
        fail_msg("\"%s\" lacks \"%s\"", err, why);
}

static void test_rules_direct(void **state)
{
    (void)state;
    ir_type x4 = {.dtype = TJ_F32, .ndim = 4, .shape = {1, 2, 3, 4}};
    ir_type x3 = {.dtype = TJ_F32, .ndim = 3, .shape = {1, 2, 3}};
    const ir_type *in[1] = {&x4};
    ir_attrs a = {0};
    ir_attr_ints(&a.a[0], (int64_t[]){5, 6, 7, 8}, 4);
    infer_fails(OP_upsample_nearest, in, 1, &a, "size must have 1, 2 or 3 entries, got 4");
    ir_attr_ints(&a.a[0], (int64_t[]){5}, 1);
    infer_fails(OP_upsample_nearest, in, 1, &a, "input must be 3-D [N,C,...] for 1 output sizes");
    ir_attr_ints(&a.a[0], (int64_t[]){5, 6}, 2);
    ir_attr_float(&a.a[3], -1);
    infer_fails(OP_upsample_nearest, in, 1, &a, "scale -1 must not be negative");
    ir_attrs b = {0};
    ir_attr_ints(&b.a[0], (int64_t[]){5}, 1);
    infer_fails(OP_upsample_bilinear2d, in, 1, &b, "size must have 2 entries, got 1");
    ir_attr_ints(&b.a[0], (int64_t[]){5, 6}, 2);
    const ir_type *in3[1] = {&x3};
    infer_fails(OP_upsample_bilinear2d, in3, 1, &b, "input must be 4-D [N,C,...]");
    ir_type x5 = {.dtype = TJ_F32, .ndim = 5, .shape = {1, 2, 3, 4, 5}};
    ir_attrs p3 = {0};
    ir_attr_ints(&p3.a[0], (int64_t[]){2, 2}, 2);
    infer_fails(OP_adaptive_avg_pool3d, (const ir_type *[]){&x5}, 1, &p3,
                "output_size must have 3 entries, got 2");
    ir_attr_ints(&p3.a[0], (int64_t[]){2, 2, 2}, 3);
    infer_fails(OP_adaptive_avg_pool3d, in3, 1, &p3, "input must be 4-D or 5-D, got 3-D");
    ir_attr_ints(&p3.a[0], (int64_t[]){2, -2, 2}, 3);
    infer_fails(OP_adaptive_avg_pool3d, (const ir_type *[]){&x5}, 1, &p3,
                "output_size -2 is negative");
    /* embedding_bag with a symbolic size: refused */
    ir_type w = {.dtype = TJ_F32, .ndim = 2, .shape = {10, 3}};
    ir_type ix = {.dtype = TJ_I64, .ndim = 1, .shape = {-1}};
    ir_type off = {.dtype = TJ_I64, .ndim = 1, .shape = {2}};
    ir_attrs e = {0};
    ir_attr_int(&e.a[0], TJ_REDUCE_SUM);
    ir_attr_int(&e.a[1], 0);
    infer_fails(OP_embedding_bag, (const ir_type *[]){&w, &ix, &off}, 3, &e,
                "indices and offsets must have static sizes");
    ir_attr_int(&e.a[0], 42);
    ix.shape[0] = 4;
    infer_fails(OP_embedding_bag, (const ir_type *[]){&w, &ix, &off}, 3, &e,
                "mode must be sum, mean or amax (max), got ?");
}

static void test_embedding_bag_errors(void **state)
{
    (void)state;
    tj_tensor *w = R(TJ_F32, 2, (int64_t[]){10, 3});
    tj_tensor *i1 = tj_zeros(TJ_I64, 1, (int64_t[]){4});
    tj_tensor *i2 = tj_zeros(TJ_I64, 2, (int64_t[]){2, 2});
    tj_tensor *off = tj_zeros(TJ_I64, 1, (int64_t[]){2}), *psw = R(TJ_F32, 1, (int64_t[]){4});
#define BAG_ERR(call, why) tu_assert_error(call, "embedding_bag(", why, NULL)
    BAG_ERR(tj_embedding_bag(R(TJ_F32, 1, (int64_t[]){10}), i1, off, TJ_REDUCE_SUM, NULL, false),
            "weight must be a 2-D float tensor [V,D], got f32 1-D");
    BAG_ERR(tj_embedding_bag(tj_zeros(TJ_I64, 2, (int64_t[]){10, 3}), i1, off, TJ_REDUCE_SUM, NULL,
                             false),
            "weight must be a 2-D float tensor [V,D], got i64 2-D");
    BAG_ERR(tj_embedding_bag(w, R(TJ_F32, 1, (int64_t[]){4}), off, TJ_REDUCE_SUM, NULL, false),
            "indices must be i64 or i32, got f32");
    BAG_ERR(tj_embedding_bag(w, i1, off, TJ_REDUCE_PROD, NULL, false),
            "mode must be sum, mean or amax (max), got prod");
    BAG_ERR(tj_embedding_bag(w, i2, off, TJ_REDUCE_SUM, NULL, false),
            "offsets must be absent when indices are 2-D");
    BAG_ERR(tj_embedding_bag(w, i1, NULL, TJ_REDUCE_SUM, NULL, false), "1-D indices need offsets");
    BAG_ERR(tj_embedding_bag(w, i1, i2, TJ_REDUCE_SUM, NULL, false),
            "offsets must be 1-D i64 or i32, got i64 2-D");
    tj_tensor *i3 = tj_zeros(TJ_I64, 3, (int64_t[]){1, 2, 2});
    BAG_ERR(tj_embedding_bag(w, i3, NULL, TJ_REDUCE_SUM, NULL, false),
            "indices must be 1-D (with offsets) or 2-D, got 3-D");
    BAG_ERR(tj_embedding_bag(w, i1, tj_zeros(TJ_I64, 1, (int64_t[]){0}), TJ_REDUCE_SUM, NULL, true),
            "include_last_offset needs at least one offset");
    BAG_ERR(tj_embedding_bag(w, i1, off, TJ_REDUCE_MEAN, psw, false),
            "per_sample_weights is only for mode sum");
    BAG_ERR(tj_embedding_bag(w, i1, off, TJ_REDUCE_SUM, tj_cast(psw, TJ_F64), false),
            "per_sample_weights has dtype f64, weight f32");
    BAG_ERR(tj_embedding_bag(w, i1, off, TJ_REDUCE_SUM, R(TJ_F32, 1, (int64_t[]){3}), false),
            "per_sample_weights must have the shape of indices");
    /* an index past the weight's rows: the eager run names the composite */
    tj_tensor *far = tj_full(TJ_I64, 1, (int64_t[]){4}, 12);
    BAG_ERR(tj_embedding_bag(w, far, off, TJ_REDUCE_SUM, NULL, false),
            "index 12 is out of range for dim 0 of size 10");
#undef BAG_ERR
}

static void test_scatter_reduce_errors(void **state)
{
    (void)state;
    tj_tensor *x = R(TJ_F32, 2, (int64_t[]){3, 4}), *src = R(TJ_F32, 2, (int64_t[]){2, 4});
    tj_tensor *ix = tj_zeros(TJ_I64, 2, (int64_t[]){2, 4});
    tu_assert_error(tj_scatter_reduce(x, 0, ix, src, (tj_reduce_op)9, true),
                    "scatter_reduce(f32[3,4], i64[2,4], f32[2,4])",
                    "reduce 9 is not sum, prod, mean, amax or amin", NULL);
    tu_assert_error(tj_scatter_reduce(x, 0, ix, tj_cast(src, TJ_F64), TJ_REDUCE_SUM, true),
                    "scatter_reduce(", "src has dtype f64, the input f32", NULL);
    tu_assert_error(tj_scatter_reduce(x, 2, ix, src, TJ_REDUCE_SUM, true), "scatter_reduce(",
                    "dim 2", NULL);
    tu_assert_error(tj_scatter_reduce(x, 0, tj_full(TJ_I64, 2, (int64_t[]){2, 4}, 3), src,
                                      TJ_REDUCE_AMAX, false),
                    "scatter_reduce(", "index 3 is out of range for dim 0 of size 3", NULL);
    tu_assert_error(tj_scatter_reduce(x, 0, tj_full(TJ_I64, 2, (int64_t[]){2, 4}, -1), src,
                                      TJ_REDUCE_MEAN, true),
                    "scatter_reduce(", "index -1 is out of range", NULL);
}

/* The text form of the word attribute round-trips, and a wrong word is refused. */
static void test_reduce_word_text(void **state)
{
    (void)state;
    for (int r = TJ_REDUCE_SUM; r <= TJ_REDUCE_AMIN; r++) {
        const char *w = ir_attr_word(IR_ATTR_REDUCE_OP, r);
        assert_non_null(w);
        assert_int_equal(ir_attr_word_value(IR_ATTR_REDUCE_OP, w, strlen(w)), r);
    }
    assert_null(ir_attr_word(IR_ATTR_REDUCE_OP, 5));
    assert_int_equal(ir_attr_word_value(IR_ATTR_REDUCE_OP, "max", 3), -1);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
    const struct CMUnitTest tests[] = {
        T(test_interpolate_api),
        T(test_embedding_bag_api),
        T(test_scatter_reduce_api),
        T(test_scatter_prod_grad_zeros),
        T(test_interpolate_bicubic_area),
        T(test_interpolate_modes_compiled),
        T(test_bicubic_grad_same_size),
        T(test_embedding_bag_padding),
        T(test_embedding_bag_padding_compiled),
        T(test_embedding_bag_max_norm),
        T(test_embedding_bag_max_norm_compiled),
        T(test_embedding_bag_padding_errors),
        T(test_traced_keeps_composite),
        T(test_interpolate_errors),
        T(test_upsample_rule_errors),
        T(test_rules_direct),
        T(test_embedding_bag_errors),
        T(test_scatter_reduce_errors),
        T(test_reduce_word_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
