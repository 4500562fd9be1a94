/* test_export.c - ahead-of-time export in process (docs/export.md): a small
 * model compiled at two signatures, exported with and without its weights,
 * loaded back with tj_aot_load and run against the compiled calls; errors:
 * nothing compiled yet, a bad name, a missing file, a file that is not a
 * model, a truncated one, a corrupted blob, arguments of no exported
 * signature, a CPU without the kernels' features (TJIT_ISA=generic).
 * scripts/test-export.sh runs exported models in processes of their own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

typedef struct { tj_tensor *w, *b; } mlp_w;

/* y = tanh(x @ w + b) * 2 - x[:, :4] */
static tj_tensor *model(void *ctx, tj_tensor *const *a, int n)
{
    mlp_w *m = ctx;
    tj_tensor *h = tj_add(tj_matmul(a[0], m->w), m->b);
    return tj_sub(tj_mul_s(tj_tanh(h), 2), tj_slice(a[0], 1, 0, 4, 1));
}

static char dir[64];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/tjit-test-export-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *path(const char *name)
{
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

typedef struct fixture {
    mlp_w w;
    tj_compiled *c;
    tj_tensor *x[2], *y[2];
} fixture;

static void fixture_make(fixture *f)
{
    f->w.w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){8, 4}));
    f->w.b = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){4}));
    f->c = tj_compile(model, &f->w, &(tj_compile_options){.name = "small", .no_dynamic = true});
    f->x[0] = tj_randn(TJ_F32, 2, (int64_t[]){3, 8});
    f->x[1] = tj_randn(TJ_F32, 2, (int64_t[]){5, 8});
    for (int k = 0; k < 2; k++)
        assert_non_null(f->y[k] = tj_call(f->c, &f->x[k], 1));
}

static void fixture_free(fixture *f)
{
    tj_compiled_free(f->c);
    tj_release(f->w.w);
    tj_release(f->w.b);
}

static void test_roundtrip(void **state)
{
    fixture f;
    fixture_make(&f);
    assert_int_equal(tj_export(f.c, path("small.so"), NULL), 0);
    assert_int_equal(access(path("small.h"), R_OK), 0);
    tj_aot_model *m = tj_aot_load(path("small.so"));
    assert_non_null(m);
    for (int k = 0; k < 2; k++) {
        tj_tensor *out[2];
        assert_int_equal(tj_aot_run(m, &f.x[k], 1, out, 2), 1);
        tu_assert_close(out[0], f.y[k], 0, 0);   /* the same kernels, the same plan */
    }
    /* a third size was never compiled: a clear error, not a crash */
    tj_tensor *z = tj_randn(TJ_F32, 2, (int64_t[]){7, 8}), *out[1];
    assert_int_equal(tj_aot_run(m, &z, 1, out, 1), -1);
    assert_non_null(strstr(tj_last_error(), "no exported signature takes (f32[7,8])"));
    assert_non_null(strstr(tj_last_error(), "(f32[3,8]) (f32[5,8])"));
    tj_clear_error();
    assert_int_equal(tj_aot_run(m, f.x, 2, out, 1), -1);   /* two arguments */
    tj_clear_error();
    tj_aot_free(m);
    fixture_free(&f);
}

/* c exported to dir/name, loaded back: on x it gives y, bit for bit. */
static void assert_exported_gives(tj_compiled *c, const char *name, tj_tensor *x, tj_tensor *y)
{
    tj_tensor *out[1];
    assert_int_equal(tj_export(c, path(name), NULL), 0);
    tj_aot_model *m = tj_aot_load(path(name));
    assert_non_null(m);
    assert_int_equal(tj_aot_run(m, &x, 1, out, 1), 1);
    tu_assert_close(out[0], y, 0, 0);
    tj_aot_free(m);
}

/* A frozen signature whose weight was written after it was traced is stale
 * (the next call traced it again, folding the new weight): the export holds
 * the current plan, not the stale one of the same signature (found by
 * test_programs). */
static tj_tensor *model_folded(void *ctx, tj_tensor *const *a, int n)
{
    mlp_w *m = ctx;
    return tj_add(tj_matmul(a[0], m->w), tj_exp(m->b));   /* exp(b): folded once under freeze */
}

static void test_stale_frozen_entry(void **state)
{
    mlp_w w = {tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){8, 4})), tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){4}))};
    tj_compiled *c =
        tj_compile(model_folded, &w, &(tj_compile_options){.name = "frozen", .no_dynamic = true, .freeze = true});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){3, 8});
    assert_non_null(tj_call(c, &x, 1));
    assert_int_equal(tj_add_s_(w.b, 0.5), 0);
    tj_tensor *y = tj_call(c, &x, 1);
    tu_assert_close(y, model_folded(&w, &x, 1), 1e-5, 1e-5);
    assert_exported_gives(c, "frozen.so", x, y);
    tj_compiled_free(c);
    tj_release(w.w);
    tj_release(w.b);
}

/* Under freeze a weight's transpose is folded into a constant view ([8,1],
 * strides [1,8]); exported, it is a contiguous copy (strides [1,1]): the
 * stride of a dim of size 1 must not make the plan refuse it. */
static tj_tensor *model_column(void *ctx, tj_tensor *const *a, int n)
{
    mlp_w *m = ctx;
    return tj_matmul(a[0], tj_transpose(m->b, 0, 1));
}

static void test_folded_view_weight(void **state)
{
    mlp_w w = {NULL, tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){1, 8}))};
    tj_compiled *c =
        tj_compile(model_column, &w, &(tj_compile_options){.name = "column", .no_dynamic = true, .freeze = true});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){3, 8});
    tj_tensor *y = tj_call(c, &x, 1);
    tu_assert_close(y, model_column(&w, &x, 1), 1e-5, 1e-5);
    assert_exported_gives(c, "column.so", x, y);
    tj_compiled_free(c);
    tj_release(w.b);
}

/* An argument with a dim of size 0: its strides address nothing, so the
 * loaded model takes the same shape with any strides (found by
 * test_programs: an empty argument of another layout was refused). */
static tj_tensor *model_double(void *ctx, tj_tensor *const *a, int n) { return tj_mul_s(a[0], 2); }

static void test_empty_argument_strides(void **state)
{
    tj_compiled *c = tj_compile(model_double, NULL, &(tj_compile_options){.name = "empty", .no_dynamic = true});
    tj_tensor *x = tj_zeros(TJ_F32, 2, (int64_t[]){0, 3});
    tj_tensor *y = tj_call(c, &x, 1);
    assert_non_null(y);
    tj_tensor *xt = tj_transpose(tj_zeros(TJ_F32, 2, (int64_t[]){3, 0}), 0, 1);   /* [0,3], strides [1,0] */
    assert_int_equal(tj_size(xt, 0), 0);
    assert_exported_gives(c, "empty.so", xt, y);
    tj_compiled_free(c);
}

static void test_no_weights(void **state)
{
    fixture f;
    fixture_make(&f);
    assert_int_equal(tj_export(f.c, path("nw.so"), &(tj_export_options){.name = "nw", .no_weights = true}), 0);
    tj_aot_model *m = tj_aot_load(path("nw.so"));
    assert_non_null(m);
    tj_tensor *out[1], *args[3] = {f.x[1], f.w.w, f.w.b};
    assert_int_equal(tj_aot_run(m, args, 3, out, 1), 1);
    tu_assert_close(out[0], f.y[1], 0, 0);
    tu_assert_error(tj_aot_run(m, f.x, 1, out, 1) == 1 ? m : NULL, "no exported signature", NULL);
    tj_aot_free(m);
    fixture_free(&f);
}

/* A result that views a weight: the weight is used in place in the loaded
 * object, so the result must stay readable after tj_aot_free. */
static int weight_view(void *ctx, tj_tensor *const *a, int n, tj_tensor **outs, int max)
{
    mlp_w *m = ctx;
    outs[0] = tj_mul_s(a[0], 2);
    outs[1] = tj_t(m->w);
    return outs[0] && outs[1] ? 2 : -1;
}

static void test_result_views_weight(void **state)
{
    mlp_w w = {tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){8, 4})), tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){4}))};
    tj_compiled *c = tj_compile_multi(weight_view, &w, &(tj_compile_options){.name = "view"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){3, 8}), *want[2], *out[2];
    assert_int_equal(tj_call_multi(c, &x, 1, want, 2), 2);
    assert_int_equal(tj_export(c, path("view.so"), NULL), 0);
    tj_aot_model *m = tj_aot_load(path("view.so"));
    assert_non_null(m);
    assert_int_equal(tj_aot_run(m, &x, 1, out, 2), 2);
    tj_aot_free(m);
    tu_assert_close(out[0], want[0], 0, 0);
    tu_assert_close(out[1], want[1], 0, 0);   /* still mapped */
    tj_compiled_free(c);
    tj_release(w.w);
    tj_release(w.b);
}

static tj_tensor *model_dropout(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    return tj_exp(tj_dropout(x[0], 0.5, true));
}

static void test_export_errors(void **state)
{
    mlp_w w = {tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){8, 4})), tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){4}))};
    tj_compiled *c = tj_compile(model, &w, &(tj_compile_options){.name = "small"});
    assert_int_equal(tj_export(c, path("none.so"), NULL), -1);
    assert_non_null(strstr(tj_last_error(), "no exportable signature"));
    tj_clear_error();
    assert_int_equal(tj_export(c, path("bad.so"), &(tj_export_options){.name = "not-an-ident"}), -1);
    assert_non_null(strstr(tj_last_error(), "C identifier"));
    tj_clear_error();
    assert_int_equal(tj_export(NULL, path("x.so"), NULL), -1);
    tj_clear_error();
    tj_compiled_free(c);
    /* random ops: their draws are reserved by each compiled call */
    c = tj_compile(model_dropout, NULL, &(tj_compile_options){.name = "drop"});
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){4, 8});
    assert_non_null(tj_call(c, &x, 1));
    assert_int_equal(tj_export(c, path("drop.so"), NULL), -1);
    assert_non_null(strstr(tj_last_error(), "has random ops"));
    tj_clear_error();
    tj_compiled_free(c);
    tj_release(w.w);
    tj_release(w.b);
}

static void write_bytes(const char *p, const char *b, size_t n)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

static void test_load_errors(void **state)
{
    fixture f;
    fixture_make(&f);
    assert_int_equal(tj_export(f.c, path("ok.so"), NULL), 0);
    tu_assert_error(tj_aot_load(path("missing.so")), "tj_aot_load", "cannot open", NULL);
    write_bytes(path("text.so"), "hello", 5);
    tu_assert_error(tj_aot_load(path("text.so")), "cannot open", NULL);
    FILE *in = fopen(path("ok.so"), "rb");
    assert_non_null(in);
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf, in);
    fclose(in);
    assert_true(n > 4096 && n < sizeof buf);
    write_bytes(path("trunc.so"), buf, n / 2);
    tu_assert_error(tj_aot_load(path("trunc.so")), "cannot open", NULL);
    char *magic = memmem(buf, n, "TJITAOT1", 8);
    assert_non_null(magic);
    magic[40] ^= 0x55;   /* a byte of the payload */
    write_bytes(path("flip.so"), buf, n);
    tu_assert_error(tj_aot_load(path("flip.so")), "corrupted", "checksum", NULL);
    magic[40] ^= 0x55;
    magic[8] = 99;       /* the format version */
    write_bytes(path("ver.so"), buf, n);
    tu_assert_error(tj_aot_load(path("ver.so")), "another tjit version", NULL);
    tu_assert_error(tj_aot_load(NULL), "no path", NULL);
    fixture_free(&f);
}

/* TJIT_ISA=generic masks AVX-512 and AVX2: a model compiled on an AVX-512
 * (or AVX2) host is refused, naming the features. */
static void test_cpu_features(void **state)
{
    fixture f;
    fixture_make(&f);
    assert_int_equal(tj_export(f.c, path("cpu.so"), NULL), 0);
    FILE *ci = fopen("/proc/cpuinfo", "r");
    static char info[1 << 16];
    size_t n = ci ? fread(info, 1, sizeof info - 1, ci) : 0;
    if (ci)
        fclose(ci);
    info[n] = '\0';
    if (strstr(info, "avx512f")) {
        setenv("TJIT_ISA", "generic", 1);
        tu_assert_error(tj_aot_load(path("cpu.so")), "lacks features", "avx512f", NULL);
        unsetenv("TJIT_ISA");
    } else if (strstr(info, "avx2")) {
        setenv("TJIT_ISA", "generic", 1);
        tu_assert_error(tj_aot_load(path("cpu.so")), "lacks features", "avx2", NULL);
        unsetenv("TJIT_ISA");
    }
    tj_aot_model *m = tj_aot_load(path("cpu.so"));
    assert_non_null(m);
    tj_aot_free(m);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_roundtrip), T(test_no_weights), T(test_export_errors), T(test_load_errors),
        T(test_cpu_features), T(test_result_views_weight), T(test_stale_frozen_entry),
        T(test_folded_view_weight),
        T(test_empty_argument_strides),
#undef T
    };
    return cmocka_run_group_tests_name("export", tests, setup, teardown);
}
