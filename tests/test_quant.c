/* test_quant.c - the int8 quantization ops (ir/ops.def: quantize_per_tensor,
 * quantize_per_channel, dequantize) against PyTorch's (tests/golden/quant,
 * scripts/golden/quant.py: int_repr exact, dequantize within f32 rounding),
 * eagerly, on a strided view and compiled; and every bad input: a scale that
 * is zero, negative, NaN or infinite, a zero point outside the dtype, a
 * dtype other than u8/i8, an input that is not f32/f64 (or not u8/i8 for
 * dequantize), an axis out of range, scales or zero points of the wrong
 * size or type, a per-channel scale or zero point that is bad at run time. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "util.h"

#define G(name) tu_golden("quant", name)

static const struct { double scale; int64_t zp; tj_dtype dt; } pt[] = {
    {0.05, 128, TJ_U8}, {0.25, -3, TJ_I8}};
static const struct { int axis; tj_dtype dt; } pc[] = {{1, TJ_U8}, {2, TJ_I8}};

static void test_per_tensor(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *x = G("x");
    for (int k = 0; k < 2; k++) {
        char qn[16], dn[16];
        snprintf(qn, sizeof qn, "pt%d.q", k);
        snprintf(dn, sizeof dn, "pt%d.dq", k);
        tj_tensor *q = tj_quantize_per_tensor(x, pt[k].scale, pt[k].zp, pt[k].dt);
        tu_assert_close(q, G(qn), 0, 0);
        tu_assert_close(tj_dequantize(q, pt[k].scale, pt[k].zp), G(dn), 1e-6, 1e-6);
        /* a strided view quantizes the same values */
        tj_tensor *xt = tj_transpose(x, 0, 2);
        tu_assert_close(tj_transpose(tj_quantize_per_tensor(xt, pt[k].scale, pt[k].zp, pt[k].dt), 0, 2),
                        G(qn), 0, 0);
    }
    tj_scope_end();
}

static void test_per_channel(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *x = G("x");
    for (int k = 0; k < 2; k++) {
        char n[4][16];
        const char *part[4] = {"scales", "zps", "q", "dq"};
        for (int i = 0; i < 4; i++)
            snprintf(n[i], sizeof n[i], "pc%d.%s", k, part[i]);
        tj_tensor *s = G(n[0]), *z = G(n[1]);
        tj_tensor *q = tj_quantize_per_channel(x, s, z, pc[k].axis, pc[k].dt);
        tu_assert_close(q, G(n[2]), 0, 0);
        tu_assert_close(tj_dequantize_per_channel(q, s, z, pc[k].axis), G(n[3]), 1e-6, 1e-6);
        /* the same axis counted from the end */
        tu_assert_close(tj_quantize_per_channel(x, s, z, pc[k].axis - 3, pc[k].dt), G(n[2]), 0, 0);
    }
    tj_scope_end();
}

typedef struct qctx { tj_tensor *s, *z; } qctx;

static tj_tensor *model_q(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    qctx *c = ctx;
    tj_tensor *q = tj_quantize_per_channel(args[0], c->s, c->z, 1, TJ_U8);
    return tj_add(tj_dequantize_per_channel(q, c->s, c->z, 1),
                  tj_dequantize(tj_quantize_per_tensor(args[0], 0.05, 128, TJ_U8), 0.05, 128));
}

static void test_compiled(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *x = G("x");
    qctx c = {G("pc0.scales"), G("pc0.zps")};
    tj_compiled *m = tj_compile(model_q, &c, NULL);
    tj_tensor *got = tj_call(m, &x, 1);
    tu_assert_close(got, model_q(&c, &x, 1), 0, 0);
    tu_assert_close(got, tj_add(G("pc0.dq"), G("pt0.dq")), 1e-6, 1e-6);
    tj_compiled_free(m);
    tj_scope_end();
}

static void test_errors(void **state)
{
    (void)state;
    tj_scope_begin();
    tj_tensor *x = G("x"), *s5 = G("pc0.scales"), *z5 = G("pc0.zps");
    tj_tensor *q = tj_quantize_per_tensor(x, 0.1, 0, TJ_I8);
    const double bad_scales[] = {0, -0.5, NAN, INFINITY};
    for (int i = 0; i < 4; i++) {
        tu_assert_error(tj_quantize_per_tensor(x, bad_scales[i], 0, TJ_U8), "quantize_per_tensor",
                        "f32[3,5,4]", "scale must be positive and finite", NULL);
        tu_assert_error(tj_dequantize(q, bad_scales[i], 0), "dequantize",
                        "scale must be positive and finite", NULL);
    }
    tu_assert_error(tj_quantize_per_tensor(x, 0.1, 256, TJ_U8), "quantize_per_tensor",
                    "zero_point 256 is out of range for u8 [0, 255]", NULL);
    tu_assert_error(tj_quantize_per_tensor(x, 0.1, -1, TJ_U8), "zero_point -1 is out of range", NULL);
    tu_assert_error(tj_quantize_per_tensor(x, 0.1, 128, TJ_I8), "zero_point 128 is out of range for i8 [-128, 127]", NULL);
    tu_assert_error(tj_dequantize(q, 0.1, 200), "dequantize", "zero_point 200 is out of range for i8", NULL);
    tu_assert_error(tj_quantize_per_tensor(x, 0.1, 0, TJ_I32), "quantize_per_tensor",
                    "the quantized dtype must be u8 or i8, got i32", NULL);
    tu_assert_error(tj_quantize_per_tensor(tj_cast(x, TJ_I32), 0.1, 0, TJ_I8), "x must be f32 or f64, got i32", NULL);
    tu_assert_error(tj_dequantize(x, 0.1, 0), "dequantize", "the quantized dtype must be u8 or i8, got f32", NULL);
    /* per channel: axis, sizes, types */
    tu_assert_error(tj_quantize_per_channel(x, s5, z5, 3, TJ_U8), "quantize_per_channel",
                    "axis 3 is out of range for a 3-D tensor", NULL);
    tu_assert_error(tj_quantize_per_channel(x, s5, z5, -4, TJ_U8), "axis -4 is out of range", NULL);
    tu_assert_error(tj_quantize_per_channel(x, s5, z5, 2, TJ_U8),
                    "scales must be a 1-D float tensor of 4 (the size of dim 2)", NULL);
    tu_assert_error(tj_quantize_per_channel(x, s5, s5, 1, TJ_U8),
                    "zero_points must be a 1-D integer tensor of 5", NULL);
    tu_assert_error(tj_quantize_per_channel(x, z5, z5, 1, TJ_U8), "scales must be a 1-D float tensor", NULL);
    tu_assert_error(tj_dequantize_per_channel(tj_quantize_per_channel(x, s5, z5, 1, TJ_U8), s5, z5, 7),
                    "dequantize", "axis 7 is out of range", NULL);
    tu_assert_error(tj_dequantize_per_channel(q, s5, NULL, 1), "dequantize_per_channel: zero_points is NULL", NULL);
    /* per-channel values checked by the kernel */
    tj_tensor *s0 = tu_tensor(TJ_F32, 1, (int64_t[]){5}, (double[]){0.1, 0.1, 0, 0.1, 0.1});
    tu_assert_error(tj_quantize_per_channel(x, s0, z5, 1, TJ_U8), "quantize_per_channel",
                    "scale 2 is 0: scales must be positive and finite", NULL);
    tj_tensor *sn = tu_tensor(TJ_F32, 1, (int64_t[]){5}, (double[]){0.1, -1, 0.1, 0.1, 0.1});
    tu_assert_error(tj_quantize_per_channel(x, sn, z5, 1, TJ_U8), "scale 1 is -1", NULL);
    tj_tensor *zb = tu_tensor(TJ_I64, 1, (int64_t[]){5}, (double[]){0, 0, 0, 300, 0});
    tu_assert_error(tj_quantize_per_channel(x, s5, zb, 1, TJ_U8), "quantize_per_channel",
                    "zero point 3 is 300, out of range [0, 255]", NULL);
    tj_tensor *zi = tu_tensor(TJ_I64, 1, (int64_t[]){5}, (double[]){0, -129, 0, 0, 0});
    tu_assert_error(tj_dequantize_per_channel(q, s5, zi, 1), "dequantize",
                    "zero point 1 is -129, out of range [-128, 127]", NULL);
    tj_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_per_tensor),
        cmocka_unit_test(test_per_channel),
        cmocka_unit_test(test_compiled),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
