/* test_onnx.c - ONNX import: models exported by PyTorch (scripts/golden/
 * onnx_models.py: an MLP with the erf GELU, a convnet with batch norm, a
 * transformer encoder layer, an MLP with a dynamic batch dim) run eagerly and
 * compiled against PyTorch's outputs; the compiled runs are whole graphs of
 * kernels (no break); errors: a missing file, every truncation of a model,
 * corrupted bytes, an unmapped operator, inputs of the wrong type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

static const char *dir(void)
{
    const char *d = getenv("TJ_GOLDEN_DIR");
    return d ? d : "tests/golden";
}

static tj_onnx *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/onnx/%s.onnx", dir(), name);
    tj_onnx *m = tj_onnx_load(path);
    if (!m)
        fail_msg("%s: %s", path, tj_last_error());
    return m;
}

/* name's inputs (tag: "" or ".b0") through the model, eager and compiled. */
static void check_model(const char *name, const char *tag, tj_onnx *m, tj_compiled *c, double tol)
{
    char key[128];
    tj_tensor *in[8], *out[8];
    int nin = tj_onnx_num_inputs(m);
    for (int k = 0; k < nin; k++) {
        snprintf(key, sizeof key, "%s%s.in%d", name, tag, k);
        in[k] = tu_golden("onnx", key);
    }
    snprintf(key, sizeof key, "%s%s.out0", name, tag);
    tj_tensor *want = tu_golden("onnx", key);
    assert_int_equal(tj_onnx_run(m, in, nin, out, 8), 1);
    tu_assert_close(out[0], want, tol, tol);
    assert_int_equal(tj_call_multi(c, in, nin, out, 8), 1);
    tu_assert_close(out[0], want, tol, tol);
}

static void run_model(const char *name, double tol)
{
    tj_onnx *m = load(name);
    assert_int_equal(tj_onnx_num_outputs(m), 1);
    assert_string_equal(tj_onnx_output_name(m, 0), "y");
    tj_compiled *c = tj_compile_multi(tj_onnx_run, m, &(tj_compile_options){.name = name});
    check_model(name, "", m, c, tol);
    tj_compiled_stats st;
    tj_compiled_stats_get(c, &st);
    assert_int_equal(st.graphs, 1);    /* the whole model traced as one graph ... */
    assert_int_equal(st.breaks, 0);
    assert_true(st.plan.kernels > 0);  /* ... and run as kernels */
    tj_compiled_free(c);
    tj_onnx_free(m);
}

static void test_mlp(void **state) { (void)state; run_model("mlp", 1e-5); }
static void test_convnet(void **state) { (void)state; run_model("convnet", 1e-5); }
static void test_encoder(void **state) { (void)state; run_model("encoder", 1e-4); }

/* The batch dim is symbolic in the model: two batch sizes, one model. */
static void test_dynamic_batch(void **state)
{
    (void)state;
    tj_onnx *m = load("mlp_dyn");
    tj_compiled *c = tj_compile_multi(tj_onnx_run, m, NULL);
    check_model("mlp_dyn", "", m, c, 1e-5);
    check_model("mlp_dyn", ".b0", m, c, 1e-5);
    tj_compiled_stats st;
    tj_compiled_stats_get(c, &st);
    assert_int_equal(st.breaks, 0);
    assert_in_range(st.graphs, 1, 2);
    tj_compiled_free(c);
    tj_onnx_free(m);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    tj_onnx *m = load("mlp");
    tj_tensor *out[2];
    tj_tensor *x = tj_zeros(TJ_F32, 2, (int64_t[]){4, 15});
    tu_assert_error(tj_onnx_run(m, &x, 1, out, 2) < 0 ? NULL : (void *)1, "input 0 ('x0') is f32[4,15]",
                    "declares f32[4,16]", NULL);
    x = tj_zeros(TJ_F64, 2, (int64_t[]){4, 16});
    tu_assert_error(tj_onnx_run(m, &x, 1, out, 2) < 0 ? NULL : (void *)1, "declares f32[4,16]", NULL);
    tu_assert_error(tj_onnx_run(m, &x, 0, out, 2) < 0 ? NULL : (void *)1, "0 inputs given, the model takes 1", NULL);
    tu_assert_error(tj_onnx_run(m, &x, 1, out, 0) < 0 ? NULL : (void *)1, "room for 0 outputs", NULL);
    tu_assert_error(tj_onnx_run(NULL, &x, 1, out, 1) < 0 ? NULL : (void *)1, "model is NULL", NULL);
    tj_onnx_free(m);
    tj_onnx *d = load("mlp_dyn");   /* the batch dim is free, the other is not */
    x = tj_zeros(TJ_F32, 2, (int64_t[]){5, 3});
    tu_assert_error(tj_onnx_run(d, &x, 1, out, 2) < 0 ? NULL : (void *)1, "declares f32[batch,16]", NULL);
    tj_onnx_free(d);
}

static void test_load_errors(void **state)
{
    (void)state;
    tu_assert_error(tj_onnx_load("no/such/model.onnx"), "cannot open no/such/model.onnx", NULL);
    tu_assert_error(tj_onnx_load(NULL), "path is NULL", NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/onnx/unsupported.onnx", dir());
    tu_assert_error(tj_onnx_load(path), "node 'hm' (Hardmax): tjit has no mapping for this operator", NULL);
    tj_onnx_free(NULL);
}

static unsigned char *slurp(const char *name, long *size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/onnx/%s.onnx", dir(), name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*size);
    assert_int_equal(fread(b, 1, (size_t)*size, f), (size_t)*size);
    fclose(f);
    return b;
}

static tj_onnx *load_bytes(const unsigned char *b, long n)
{
    char path[] = "/tmp/tjit-onnx-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    fwrite(b, 1, (size_t)n, f);
    fclose(f);
    tj_onnx *m = tj_onnx_load(path);
    remove(path);
    return m;
}

/* Every prefix of a model: an error starting "onnx:" naming the file, or a
 * model (a prefix that ends between fields is a valid, smaller message);
 * never a crash or a read past the buffer (make asan). */
static void test_truncated(void **state)
{
    (void)state;
    long n;
    unsigned char *b = slurp("mlp", &n);
    int errors = 0;
    for (long len = 0; len < n; len += len < 512 ? 1 : 7) {
        tj_onnx *m = load_bytes(b, len);
        if (!m) {
            errors++;
            assert_true(!strncmp(tj_last_error(), "onnx: ", 6));
            tj_clear_error();
        }
        tj_onnx_free(m);
    }
    assert_true(errors > 100);
    free(b);
}

/* Bytes overwritten at random: loads fail cleanly or give a model that runs
 * or fails cleanly. */
static void test_corrupted(void **state)
{
    (void)state;
    long n;
    unsigned char *b = slurp("convnet", &n);
    unsigned char *c = malloc((size_t)n);
    srand(1);
    for (int trial = 0; trial < 200; trial++) {
        memcpy(c, b, (size_t)n);
        for (int k = 0; k < 4; k++)
            c[rand() % n] = (unsigned char)rand();
        tj_onnx *m = load_bytes(c, n);
        if (m) {
            tj_tensor *x = tj_zeros(TJ_F32, 4, (int64_t[]){2, 3, 16, 16}), *out[4];
            tj_scope_begin();
            tj_onnx_run(m, &x, 1, out, 4);
            tj_scope_end();
        }
        tj_clear_error();
        tj_onnx_free(m);
    }
    free(c);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_mlp),        T(test_convnet),   T(test_encoder), T(test_dynamic_batch),
        T(test_bad_inputs), T(test_load_errors), T(test_truncated), T(test_corrupted),
#undef T
    };
    return cmocka_run_group_tests_name("onnx", tests, NULL, NULL);
}
