/* test_inspect.c - the inspection API (include/tjit_inspect.h), from the
 * outside as a tool of one's own would use it: parsing and printing text
 * graphs, their inputs, pass pipelines, the fused form, dumps, running a
 * graph eagerly and compiled against the same ops called directly, the op
 * table, and every error path (NULL handles, bad text, unknown passes,
 * out-of-range indices, a failing node). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <tjit_inspect.h>

#include "util.h"

static const char *mlp_src =
    "graph @mlp(%x: f32[8,32], %w: f32[32,16] param, %b: f32[16] param) {\n"
    "  %0 = matmul %x, %w : f32[8,16]\n"
    "  %1 = add %0, %b : f32[8,16]\n"
    "  %2 = gelu_tanh %1 : f32[8,16]\n"
    "  return %2\n"
    "}\n";

static const char *norm_src =
    "graph @norm(%x: f32[s0,64], %y: f32[s0,64]) {\n"
    "  %0 = layer_norm %x {ndims=1, eps=1e-05} : f32[s0,64]\n"
    "  %1 = exp %y : f32[s0,64]\n"
    "  %2 = mul %1, %1 : f32[s0,64]\n"
    "  return %0\n"
    "}\n";

static tj_graph *parse(const char *src)
{
    tj_graph *g = tj_graph_parse(src, strlen(src), "test.tir");
    if (!g)
        fail_msg("%s", tj_last_error());
    return g;
}

static void assert_has(const char *text, const char *what)
{
    assert_non_null(text);
    if (!strstr(text, what))
        fail_msg("\"%s\" not in:\n%s", what, text);
}

/* ---- graphs -------------------------------------------------------------------- */

static void test_parse_print_round_trip(void **state)
{
    (void)state;
    tj_graph *g = parse(mlp_src);
    char *text = tj_graph_print(g);
    assert_string_equal(text, mlp_src);
    free(text);
    assert_string_equal(tj_graph_name(g), "mlp");
    assert_int_equal(tj_graph_num_inputs(g), 3);
    assert_int_equal(tj_graph_num_outputs(g), 1);
    tj_graph_free(g);
    tj_graph_free(NULL);
}

static void test_input_info(void **state)
{
    (void)state;
    tj_graph *g = parse(mlp_src);
    tj_graph_input in;
    assert_int_equal(tj_graph_input_info(g, 1, &in), 0);
    assert_string_equal(in.name, "w");
    assert_int_equal(in.dtype, TJ_F32);
    assert_int_equal(in.ndim, 2);
    assert_int_equal(in.shape[0], 32);
    assert_int_equal(in.shape[1], 16);
    assert_true(in.param);
    assert_false(in.symbolic);
    assert_string_equal(in.type, "f32[32,16]");
    assert_int_equal(tj_graph_input_info(g, 0, &in), 0);
    assert_false(in.param);
    assert_int_equal(tj_graph_input_info(g, 3, &in), -1);
    tu_assert_error(NULL, "tj_graph_input_info", "@mlp has 3 inputs, no input 3", NULL);
    assert_int_equal(tj_graph_input_info(g, -1, &in), -1);
    tu_assert_error(NULL, "no input -1", NULL);
    tj_graph_free(g);

    g = parse(norm_src);
    assert_int_equal(tj_graph_input_info(g, 0, &in), 0);
    assert_true(in.symbolic);
    assert_int_equal(in.shape[0], -1);   /* s0 */
    assert_int_equal(in.shape[1], 64);
    assert_string_equal(in.type, "f32[s0,64]");
    tj_graph_free(g);
}

static void test_parse_errors(void **state)
{
    (void)state;
    const char *bad = "graph @g(%x: f32[2]) {\n  %0 = frobnicate %x : f32[2]\n  return %0\n}\n";
    tu_assert_error(tj_graph_parse(bad, strlen(bad), "bad.tir"), "bad.tir:2:", "error:",
                    "frobnicate", "\n  %0 = frobnicate %x : f32[2]\n", "^", NULL);
    /* the length bounds the text: a cut graph is an error */
    tu_assert_error(tj_graph_parse(mlp_src, 40, NULL), "<input>:", "error:", NULL);
    tu_assert_error(tj_graph_parse(NULL, 0, "x.tir"), "tj_graph_parse", "NULL", NULL);
}

static void test_null_graph(void **state)
{
    (void)state;
    tj_graph_input in;
    tu_assert_error(tj_graph_print(NULL), "tj_graph_print: the graph is NULL", NULL);
    tu_assert_error(tj_graph_name(NULL), "tj_graph_name", NULL);
    assert_int_equal(tj_graph_num_inputs(NULL), -1);
    tu_assert_error(NULL, "tj_graph_num_inputs", NULL);
    assert_int_equal(tj_graph_num_outputs(NULL), -1);
    tu_assert_error(NULL, "tj_graph_num_outputs", NULL);
    assert_int_equal(tj_graph_input_info(NULL, 0, &in), -1);
    tu_assert_error(NULL, "tj_graph_input_info", NULL);
    assert_int_equal(tj_graph_run_passes(NULL, "dce", NULL), -1);
    tu_assert_error(NULL, "tj_graph_run_passes", NULL);
    tu_assert_error(tj_graph_print_fused(NULL), "tj_graph_print_fused", NULL);
    assert_int_equal(tj_graph_dump(NULL, "graph"), -1);
    tu_assert_error(NULL, "tj_graph_dump", NULL);
    assert_int_equal(tj_graph_run(NULL, NULL, NULL, true), -1);
    tu_assert_error(NULL, "tj_graph_run", NULL);
}

/* ---- passes -------------------------------------------------------------------- */

static void test_pass_registry(void **state)
{
    (void)state;
    int n = tj_pass_count();
    assert_true(n > 0);
    bool dce = false, decompose = false;
    for (int k = 0; k < n; k++) {
        assert_non_null(tj_pass_name(k));
        assert_true(strlen(tj_pass_help(k)) > 0);
        dce |= !strcmp(tj_pass_name(k), "dce");
        decompose |= !strcmp(tj_pass_name(k), "decompose");
    }
    assert_true(dce && decompose);
    assert_null(tj_pass_name(n));
    assert_null(tj_pass_help(n));
    assert_null(tj_pass_name(-1));
}

static void test_run_passes(void **state)
{
    (void)state;
    tj_graph *g = parse(norm_src);
    assert_int_equal(tj_graph_run_passes(g, "", NULL), 0);   /* nothing to run */
    char *text = tj_graph_print(g);
    assert_string_equal(text, norm_src);
    free(text);
    /* dce drops %1, %2 (unused); decompose turns layer_norm into prims */
    assert_int_equal(tj_graph_run_passes(g, "dce,decompose,simplify", NULL), 0);
    text = tj_graph_print(g);
    assert_null(strstr(text, "layer_norm"));
    assert_null(strstr(text, "exp"));
    assert_has(text, "rsqrt");   /* from layer_norm's decomposition */
    free(text);
    tj_graph_free(g);
}

static void test_run_passes_errors(void **state)
{
    (void)state;
    tj_graph *g = parse(norm_src);
    assert_int_equal(tj_graph_run_passes(g, "dce,nosuch", NULL), -1);
    tu_assert_error(NULL, "unknown pass", "nosuch", NULL);
    char *text = tj_graph_print(g);   /* unchanged */
    assert_string_equal(text, norm_src);
    free(text);
    tj_graph_free(g);
}

/* ---- fusion and dumps -------------------------------------------------------------- */

static void test_print_fused(void **state)
{
    (void)state;
    const char *src = "graph @softmax(%x: f32[64,128]) {\n"
                      "  %0 = softmax %x {dim=1} : f32[64,128]\n"
                      "  return %0\n"
                      "}\n";
    tj_graph *g = parse(src);
    assert_int_equal(tj_graph_run_passes(g, "decompose,simplify", NULL), 0);
    char *text = tj_graph_print_fused(g);
    assert_has(text, "fused @softmax: 1 kernel, 0 eager calls {");
    assert_has(text, "kernel 0 rows f32[64,128]");
    free(text);
    tj_graph_free(g);
}

static void test_dump(void **state)
{
    (void)state;
    char dir[] = "/tmp/tjit-test-inspect-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *old = getenv("TJIT_DUMP_DIR") ? strdup(getenv("TJIT_DUMP_DIR")) : NULL;
    setenv("TJIT_DUMP_DIR", dir, 1);
    tj_graph *g = parse(mlp_src);
    assert_int_equal(tj_graph_dump(g, "prims,fused"), 0);   /* no graph stage: nothing */
    assert_int_equal(tj_graph_dump(g, "1"), 0);             /* level 1: stats only */
    assert_int_equal(tj_graph_dump(g, "graph"), 0);
    assert_true(tj_dump_enabled("2", "graph") && tj_dump_enabled("3", "prims") && tj_dump_enabled("all", "asm"));
    assert_false(tj_dump_enabled("3", "llvm") || tj_dump_enabled("0", "stats") || tj_dump_enabled("dce", "fuse"));
    /* stage names: the pipeline's (sched/plan.c) and the other dump points */
    assert_int_equal(tj_dump_check("graph,fuse,fused,memory,stats,llvm,asm,all,5"), 0);
    assert_int_equal(tj_dump_check("graph,frobnicate"), -1);
    tu_assert_error(NULL, "unknown dump stage \"frobnicate\"", "split_reductions", "memory [plan]", NULL);
    assert_int_equal(tj_dump_check("123"), -1);
    char cmd[256], line[512];
    snprintf(cmd, sizeof cmd, "ls %s | wc -l; cat %s/*-mlp.graph.tir", dir, dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(line, sizeof line, p));
    assert_int_equal(atoi(line), 1);
    assert_non_null(fgets(line, sizeof line, p));
    assert_has(line, "graph @mlp(%x: f32[8,32]");
    pclose(p);
    /* a dump directory that cannot be made (one that is missing is made) */
    setenv("TJIT_DUMP_DIR", "/dev/null/dir", 1);   /* cannot be made */
    assert_int_equal(tj_graph_dump(g, "all"), -1);
    tu_assert_error(NULL, "tj_graph_dump", "@mlp", NULL);
    if (old)
        setenv("TJIT_DUMP_DIR", old, 1);
    else
        unsetenv("TJIT_DUMP_DIR");
    free(old);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    tj_graph_free(g);
}

/* ---- running ----------------------------------------------------------------------- */

static void test_run_matches_ops(void **state)
{
    (void)state;
    tj_graph *g = parse(mlp_src);
    tj_tensor *in[3] = {tj_randn(TJ_F32, 2, (int64_t[]){8, 32}),
                        tj_randn(TJ_F32, 2, (int64_t[]){32, 16}),
                        tj_randn(TJ_F32, 1, (int64_t[]){16})};
    tj_tensor *want = tj_gelu_tanh(tj_add(tj_matmul(in[0], in[1]), in[2]));
    for (int eager = 0; eager < 2; eager++) {
        tj_tensor *out[1] = {NULL};
        assert_int_equal(tj_graph_run(g, in, out, eager), 0);
        tu_assert_close(out[0], want, 1e-5, 1e-5);
    }
    tj_graph_free(g);
}

static void test_run_errors(void **state)
{
    (void)state;
    tj_graph *g = parse(mlp_src);
    tj_tensor *out[1];
    tj_tensor *in[3] = {tj_randn(TJ_F32, 2, (int64_t[]){8, 32}), NULL,
                        tj_randn(TJ_F32, 1, (int64_t[]){16})};
    assert_int_equal(tj_graph_run(g, in, out, true), -1);
    tu_assert_error(NULL, "tj_graph_run", "input %w of graph @mlp is NULL", NULL);
    /* an input of another type: named with both types before anything runs */
    in[1] = tj_randn(TJ_F64, 2, (int64_t[]){32, 16});
    for (int eager = 0; eager < 2; eager++) {
        assert_int_equal(tj_graph_run(g, in, out, eager), -1);
        tu_assert_error(NULL, "tj_graph_run: input %w of graph @mlp: expected f32[32,16], got "
                        "f64[32,16]: the dtype differs", NULL);
    }
    in[1] = tj_randn(TJ_F32, 2, (int64_t[]){3, 3});
    assert_int_equal(tj_graph_run(g, in, out, false), -1);
    tu_assert_error(NULL, "input %w of graph @mlp: expected f32[32,16], got f32[3,3]: dim 0 is 3, "
                    "not 32", NULL);
    in[1] = tj_randn(TJ_F32, 1, (int64_t[]){512});
    assert_int_equal(tj_graph_run(g, in, out, true), -1);
    tu_assert_error(NULL, "got f32[512]: the rank differs", NULL);
    tj_graph_free(g);
    /* a symbol binds at its first use and must agree everywhere */
    g = parse(norm_src);
    tj_tensor *sx[2] = {tj_randn(TJ_F32, 2, (int64_t[]){5, 64}), tj_randn(TJ_F32, 2, (int64_t[]){6, 64})};
    for (int eager = 0; eager < 2; eager++) {
        assert_int_equal(tj_graph_run(g, sx, out, eager), -1);
        tu_assert_error(NULL, "input %y of graph @norm: expected f32[s0,64], got f32[6,64]: s0 is 5 "
                        "(dim 0 of %x) but dim 0 is 6", NULL);
    }
    sx[1] = tj_randn(TJ_F32, 2, (int64_t[]){5, 64});
    assert_int_equal(tj_graph_run(g, sx, out, false), 0);
    tj_graph_free(g);
    /* an offset symbol binds its symbol: s0-1 of 4 rows is s0 = 5 */
    g = parse("graph @off(%x: f32[s0], %y: f32[s0-1]) {\n"
              "  %0 = slice %x {dim=0, start=1, end=9223372036854775807, step=1} : f32[s0-1]\n"
              "  %1 = add %0, %y : f32[s0-1]\n"
              "  return %1\n"
              "}\n");
    tj_tensor *ox[2] = {tj_randn(TJ_F32, 1, (int64_t[]){5}), tj_randn(TJ_F32, 1, (int64_t[]){4})};
    for (int eager = 0; eager < 2; eager++) {
        assert_int_equal(tj_graph_run(g, ox, out, eager), 0);
        tu_assert_close(out[0], tj_add(tj_slice(ox[0], 0, 1, INT64_MAX, 1), ox[1]), 0, 0);
    }
    ox[1] = tj_randn(TJ_F32, 1, (int64_t[]){5});
    assert_int_equal(tj_graph_run(g, ox, out, false), -1);
    tu_assert_error(NULL, "input %y of graph @off: expected f32[s0-1], got f32[5]: s0 is 5 (dim 0 of %x) "
                    "but dim 0 is 5 (as s0-1)", NULL);
    tj_graph_free(g);
}

/* A rule's message prints a symbolic dim by its name, as the type does. */
static void test_symbolic_dim_messages(void **state)
{
    (void)state;
    const char *src = "graph @g(%a: f32[4,s0], %b: f32[3,5]) {\n"
                      "  %0 = matmul %a, %b : f32[4,5]\n"
                      "  return %0\n"
                      "}\n";
    assert_null(tj_graph_parse(src, strlen(src), "sym.tir"));
    tu_assert_error(NULL, "matmul(f32[4,s0], f32[3,5])", "a has s0 (dim -1), b has 3", NULL);
    const char *cat = "graph @g(%a: f32[s0,2], %b: f32[s1,3]) {\n"
                      "  %0 = cat %a, %b {dim=0} : f32[s0,2]\n"
                      "  return %0\n"
                      "}\n";
    assert_null(tj_graph_parse(cat, strlen(cat), "sym.tir"));
    tu_assert_error(NULL, "input 1 has size 3 in dim 1, expected 2", NULL);
    const char *lin = "graph @g(%a: f32[2,s1], %w: f32[3,s0]) {\n"
                      "  %0 = linear %a, %w : f32[2,3]\n"
                      "  return %0\n"
                      "}\n";
    assert_null(tj_graph_parse(lin, strlen(lin), "sym.tir"));
    tu_assert_error(NULL, "input has s1 features (last dim), weight expects s0", NULL);
}

/* ---- the op table ------------------------------------------------------------------ */

static void test_op_table(void **state)
{
    (void)state;
    int n = tj_op_count();
    assert_true(n > 0);
    int prims = 0;
    for (int k = 0; k < n; k++) {
        tj_op_info o;
        assert_int_equal(tj_op_get(k, &o), 0);
        assert_int_equal(tj_op_find(o.name), k);
        assert_true(strlen(o.kind) > 0);
        assert_true(o.nmax == -1 || o.nmax >= o.nmin);
        bool pointwise = !strcmp(o.kind, "unary") || !strcmp(o.kind, "binary");
        assert_int_equal(o.rule[0] != '\0', pointwise);
        assert_true(o.nattrs >= 0 && o.nattrs <= TJ_OP_MAX_ATTRS);
        for (int i = 0; i < o.nattrs; i++)
            assert_true(strlen(o.attrs[i].name) > 0 && strlen(o.attrs[i].kind) > 0);
        prims += o.prim;
    }
    assert_true(prims > 0 && prims < n);
    tj_op_info o;
    assert_int_equal(tj_op_get(tj_op_find("layer_norm"), &o), 0);
    assert_string_equal(o.kind, "nn");
    assert_false(o.prim);
    assert_int_equal(o.nmin, 1);
    assert_int_equal(o.nmax, 3);
    assert_int_equal(o.nattrs, 2);
    assert_string_equal(o.attrs[0].name, "ndims");
    assert_string_equal(o.attrs[0].kind, "int");
    assert_string_equal(o.attrs[1].kind, "float");
    assert_int_equal(tj_op_get(tj_op_find("cat"), &o), 0);
    assert_int_equal(o.nmax, -1);
    assert_int_equal(tj_op_get(tj_op_find("div"), &o), 0);
    assert_string_equal(o.rule, "truediv");
    /* lowering: fusion's classification of an f32 node of the op */
    static const char *const lowering[][2] = {
        {"exp", "kernel"},        {"where", "kernel"},   {"cast", "kernel"},      {"sum", "kernel"},
        {"any", "kernel"},        {"permute", "view"},   {"matmul", "eager call"}, {"sort", "decomposed"},
        {"layer_norm", "decomposed"}, {"argsort", "eager call"},
    };
    for (size_t k = 0; k < sizeof lowering / sizeof *lowering; k++) {
        assert_int_equal(tj_op_get(tj_op_find(lowering[k][0]), &o), 0);
        if (strcmp(o.lowering, lowering[k][1]))
            fail_msg("%s lowers as '%s', not '%s'", o.name, o.lowering, lowering[k][1]);
    }
    assert_int_equal(tj_op_find("no_such_op"), -1);
    assert_int_equal(tj_op_find(NULL), -1);
    assert_int_equal(tj_op_get(n, &o), -1);
    tu_assert_error(NULL, "tj_op_get", "no op", NULL);
    assert_null(o.name);
    assert_int_equal(tj_op_get(-1, &o), -1);
    tu_assert_error(NULL, "tj_op_get", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_parse_print_round_trip), T(test_input_info),   T(test_parse_errors),
        T(test_null_graph),             T(test_pass_registry), T(test_run_passes),
        T(test_run_passes_errors),      T(test_print_fused),  T(test_dump),
        T(test_run_matches_ops),        T(test_run_errors),   T(test_op_table), T(test_symbolic_dim_messages),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
