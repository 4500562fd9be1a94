/* test_parse.c - the IR text parser (ir/parse.c): its diagnostics (file,
 * line, column, the source line and a caret), hostile input (truncated text,
 * bytes that are no text, huge lines, deep nesting) and the .tir files in
 * tests/ir/, each of which must print as itself. Runs from the repo root.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../ir/graph.h"
#include "util.h"
#include "util_ir.h"

static void test_parse_errors(void **state)
{
    (void)state;
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = frobnicate %x : f32[2,3]\n  return %0\n}\n", 2,
                8, "unknown op 'frobnicate'", "  %0 = frobnicate %x : f32[2,3]");
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = exp %y : f32[2,3]\n  return %0\n}\n", 2, 12,
                "use of undefined value %y", "  %0 = exp %y : f32[2,3]");
    /* SSA order: a use before its definition */
    tu_check_error("graph @g(%x: f32[2]) {\n  %0 = exp %1 : f32[2]\n  %1 = exp %x : f32[2]\n"
                "  return %0\n}\n",
                2, 12, "use of undefined value %1", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = sum %x {dimz=[1], keepdim=false} : f32[2]\n"
                "  return %0\n}\n",
                2, 16, "sum has no attribute 'dimz'", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = sum %x {dims=[1], keepdim=1} : f32[2]\n}\n", 2,
                34, "expected true or false for 'keepdim', got '1'", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = sum %x {dims=1, keepdim=true} : f32[2]\n}\n", 2,
                21, "expected a list of integers like [0,1] for 'dims', got '1'", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = clamp %x {min=true, max=1} : f32[2,3]\n}\n", 2,
                22, "expected a number for 'min', got 'true'", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = cast %x {dtype=f99} : f32[2,3]\n}\n", 2, 23,
                "expected a dtype like f32 for 'dtype', got 'f99'", NULL);
    tu_check_error("graph @g(%x: f32[2,3], %t: i64[2]) {\n  %0 = cross_entropy %x, %t "
                   "{reduction=avg, ignore_index=-100, label_smoothing=0} : f32[]\n}\n",
                   2, 40, "expected mean, sum or none for 'reduction', got 'avg'", NULL);
    tu_check_error("graph @g(%x: f32[2,3], %t: i64[2]) {\n  %0 = cross_entropy %x, %t "
                   "{reduction=1, ignore_index=-100, label_smoothing=0} : f32[]\n}\n",
                   2, 40, "expected mean, sum or none for 'reduction', got '1'", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = sum %x {dims=[1,2.5], keepdim=true} : f32[2]\n}\n",
                2, 24, "expected an integer, got '2.5'", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = sum %x {dims=[1]} : f32[2]\n}\n", 2, 24,
                "missing attribute 'keepdim' of sum", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = sum %x {dims=[1], dims=[0]} : f32[2]\n}\n", 2,
                26, "attribute 'dims' is given twice", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = sum %x : f32[2]\n}\n", 2, 15,
                "expected '{' with the attributes of sum, got ':'", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = exp %x : f32[3,2]\n  return %0\n}\n", 2, 17,
                "type f32[3,2] does not match the inferred type f32[2,3]", "  %0 = exp %x : f32[3,2]");
    tu_check_error("graph @g(%x: i64[2,3]) {\n  %0 = exp %x : i64[2,3]\n  return %0\n}\n", 2, 17,
                "type i64[2,3] does not match the inferred type f32[2,3]", NULL);
    tu_check_error("graph @g(%x: f64[]) {\n  %0 = neg %x : f64[] weak\n  return %0\n}\n", 2, 17,
                "type f64[] weak does not match the inferred type f64[]", NULL);
    tu_check_error("graph @g(%x: f32[2,3], %y: f32[4]) {\n  %0 = add %x, %y : f32[2,3]\n}\n", 2, 8,
                "add(f32[2,3], f32[4]): shapes cannot be broadcast together", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = add %x : f32[2,3]\n}\n", 2, 8,
                "add: takes 2 inputs, got 1", NULL);
    tu_check_error("graph @g(%x: f32[2,3]) {\n  %0 = exp none : f32[2,3]\n}\n", 2, 8,
                "exp: input 0 is missing", NULL);
    tu_check_error("graph @g(%x: f32[2]) {\n  %0 = exp %x : f32[2]\n  %0 = exp %0 : f32[2]\n}\n", 3,
                3, "%0 is already defined", NULL);
    tu_check_error("graph @g(%x: f32[2], %x: f32[2]) {\n", 1, 22, "%x is already defined", NULL);
    tu_check_error("graph @g(%0: f32[2]) {\n", 1, 10, "an input name starts with a letter", NULL);
    tu_check_error("graph @9g() {\n", 1, 7, "a graph name starts with a letter", NULL);
    tu_check_error("graph g() {\n", 1, 7, "expected a graph name like @main, got 'g'", NULL);
    tu_check_error("grph @g() {\n", 1, 1, "expected 'graph', got 'grph'", NULL);
    tu_check_error("", 1, 1, "expected 'graph', got end of input", "");
    tu_check_error("graph @g(%x: f32[2]) {\n  return\n}\n", 3, 1, "expected a value, got '}'", "}");
    tu_check_error("graph @g(%x: f32[2]) {\n  return %x\n} extra\n", 3, 3,
                "expected end of input after '}', got 'extra'", "} extra");
    tu_check_error("graph @g(%x: f32[1,1,1,1,1,1,1,1,1]) {\n", 1, 34, "more than 8 dims", NULL);
    tu_check_error("graph @g(%x: f32[-2]) {\n", 1, 18, "a dim is a size >= 0", NULL);
    tu_check_error("graph @g(%x: f32[2]) {\n  %0 = flip %x {dims=[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]} "
                ": f32[2]\n}\n",
                2, 55, "more than 16 values", NULL);
    tu_check_error("graph @g(%x: q32[2]) {\n", 1, 14, "unknown dtype 'q32'", NULL);
    tu_check_error("graph @g(%x: f32[99999999999999999999]) {\n", 1, 18, "integer out of range", NULL);
    tu_check_error("graph @g(%x: f32[4611686018427387904,4]) {\n", 1, 14, "more than 2^63-1 elements",
                NULL);
    tu_check_error("graph @g(%x: f32[2]) {\n  %0 = clamp %x {min=1e999, max=1} : f32[2]\n}\n", 2,
                22, "number out of range", NULL);
    tu_check_error("graph @g(%x: f32[2]) {\n  %0 = clamp %x {min=-nan, max=1} : f32[2]\n}\n", 2, 22,
                "expected a number, got '-nan'", NULL);
    tu_check_error("graph @g(%x: f32[2]) {\n  %0 = exp % x : f32[2]\n}\n", 2, 12,
                "expected a name after '%'", NULL);
    tu_check_error("graph @g(%x: f32[2]) {\n  %0 = exp %x ; f32[2]\n}\n", 2, 15,
                "unexpected character ';'", NULL);
    /* a random op's counter offset: N >= 0 or call+N, N below 2^63 */
    tu_check_error("graph @g() {\n  %0 = rand {shape=[2], dtype=f32, seed=0, offset=-1} : f32[2]\n}\n",
                   2, 51, "expected a counter offset N >= 0 or call+N for 'offset', got '-1'", NULL);
    tu_check_error("graph @g() {\n  %0 = rand {shape=[2], dtype=f32, seed=0, offset=call} : f32[2]\n}\n",
                   2, 51, "expected a counter offset N >= 0 or call+N for 'offset', got 'call'", NULL);
    tu_check_error("graph @g() {\n  %0 = rand {shape=[2], dtype=f32, seed=0, offset=call+} : f32[2]\n}\n",
                   2, 51, "expected a counter offset N >= 0 or call+N for 'offset', got 'call'", NULL);
    tu_check_error("graph @g() {\n  %0 = rand {shape=[2], dtype=f32, seed=0, offset=call-1} : f32[2]\n}\n",
                   2, 51, "expected a counter offset N >= 0 or call+N for 'offset', got 'call'", NULL);
    tu_check_error("graph @g() {\n  %0 = rand {shape=[2], dtype=f32, seed=0, offset=call+9223372036854775808} "
                   ": f32[2]\n}\n", 2, 56, "counter offset out of range (below 2^63)", NULL);
    /* CRLF line ends: the \r is not shown */
    tu_check_error("graph @g(%x: f32[2]) {\r\n  %0 = exp %z : f32[2]\r\n}\r\n", 2, 12,
                "use of undefined value %z", "  %0 = exp %z : f32[2]");
}

/* Every proper prefix of a valid text fails cleanly; the whole text parses. */
static void test_truncated_input(void **state)
{
    (void)state;
    const char *src = "graph @g(%x: f32[2,3] param, %y: f32[3]) {\n"
                      "  %0 = add %x, %y : f32[2,3]\n"
                      "  %1 = exp %0 : f32[2,3]\n"
                      "  return %1, %0\n"
                      "}\n";
    size_t n = strlen(src);
    for (size_t k = 0; k + 2 < n; k++) {
        const char *err = tu_parse_error(src, k);
        if (!strstr(err, ": error: ") || !strstr(err, "^\n"))
            fail_msg("prefix %zu: malformed message:\n%s", k, err);
    }
    tu_check_error("graph @g(%x: f32[2,3] param, %y: f32[3]) {\n  %0 = add %x, %y : f32[2,3]\n  %1 = exp",
                3, 11, "expected a value or 'none', got end of input", "  %1 = exp");
    char err[256];
    ir_graph *g = ir_parse(src, n, "ok.tir", err, sizeof err);
    assert_non_null(g);
    ir_graph_free(g);
    /* not NUL-terminated: the parser must stop at len */
    char *copy = malloc(n);
    memcpy(copy, src, n);
    g = ir_parse(copy, n - 1, "ok.tir", err, sizeof err);   /* without the last newline */
    assert_non_null(g);
    ir_graph_free(g);
    free(copy);
}

static void test_garbage_bytes(void **state)
{
    (void)state;
    const char bytes[] = {'\0', '\xff', 'g', '\x80'};
    const char *err = tu_parse_error(bytes, sizeof bytes);
    if (strncmp(err, "e.tir:1:1: error: unexpected byte 0x00\n?", 40))
        fail_msg("%s", err);
    tu_check_error("graph @g(%x: f32[2]) {\n  %0 = exp\x01 %x\n", 2, 11, "unexpected byte 0x01",
                "  %0 = exp? %x");
    tu_check_error("graph @g(%x: f32[2]) {\n\t%0 = \xc3\xa9xp %x\n", 2, 7, "unexpected byte 0xc3",
                " %0 = ??xp %x");
    /* a comment that looks like a call site but holds a NUL is a comment (as
     * a site, its path would print cut at the NUL and not read back) */
    const char site[] = "graph @g(%x: f32[2]) {\n  %0 = exp %x : f32[2]  # a\0b.c:3\n  return %0\n}\n";
    char msg0[512];
    ir_graph *gs = ir_parse(site, sizeof site - 1, "site", msg0, sizeof msg0);
    if (!gs)
        fail_msg("%s", msg0);
    assert_null(gs->nodes[0]->file);
    free(tu_round_trip(gs));
    ir_graph_free(gs);
    /* a pseudo-random byte soup never crashes and always explains itself */
    uint32_t seed = 12345;
    char buf[256];
    for (int iter = 0; iter < 2000; iter++) {
        size_t n = (size_t)(iter % 256);
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1664525u + 1013904223u;
            const char alphabet[] = "graph@%x:f32[2,3]{}()=exp add return none,s0 weak\n\xff";
            buf[k] = (seed >> 24) & 1 ? alphabet[(seed >> 8) % (sizeof alphabet - 1)]
                                      : (char)(seed >> 16);
        }
        char msg[512];
        ir_graph *g = ir_parse(buf, n, "soup", msg, sizeof msg);
        if (g)
            ir_graph_free(g);
        else
            assert_non_null(strstr(msg, "soup:"));
    }
}

static void test_long_lines_and_nesting(void **state)
{
    (void)state;
    /* a 200000-byte line with the error near its end: the message shows a
     * window of the line with the caret under the bad token */
    size_t pad = 200000;
    const char *head = "graph @g(%x: f32[2]) {  %0 = exp %x : f32[2]";
    size_t n = strlen(head) + pad + 32;
    char *src = malloc(n);
    size_t k = (size_t)sprintf(src, "%s", head);
    memset(src + k, ' ', pad);
    k += pad;
    k += (size_t)sprintf(src + k, "%%1 = exp %%q");
    const char *err = tu_parse_error(src, k);
    char want[64];
    snprintf(want, sizeof want, "e.tir:1:%zu: error: use of undefined value %%q\n", k - 1);
    if (strncmp(err, want, strlen(want)))
        fail_msg("want %s got %s", want, err);
    const char *l2 = strchr(err, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
    assert_true(strchr(l2, '\n') - l2 < 200);   /* a window, not the whole line */
    assert_memory_equal(l2, "...", 3);
    int caret = (int)(strchr(l3, '^') - l3);
    assert_memory_equal(l2 + caret, "%q", 2);   /* the caret is under %q */
    free(src);

    /* deep brackets: an error at the second one, in constant stack */
    size_t depth = 1000000;
    src = malloc(depth + 32);
    k = (size_t)sprintf(src, "graph @g(%%x: f32");
    memset(src + k, '[', depth);
    err = tu_parse_error(src, k + depth);
    assert_non_null(strstr(err, "e.tir:1:18: error: expected a dim"));
    memset(src, '(', depth);
    err = tu_parse_error(src, depth);
    assert_non_null(strstr(err, "e.tir:1:1: error: expected 'graph', got '('"));
    memset(src, '{', depth);
    err = tu_parse_error(src, depth);
    assert_non_null(strstr(err, "e.tir:1:1: error:"));
    free(src);

    /* a very long name is fine; messages shorten it */
    size_t len = 100000;
    src = malloc(len + 64);
    k = (size_t)sprintf(src, "graph @g(%%");
    memset(src + k, 'a', len);
    k += len;
    k += (size_t)sprintf(src + k, ": f32[2]) {\n  return %%b\n}\n");
    err = tu_parse_error(src, k);
    assert_non_null(strstr(err, "e.tir:2:10: error: use of undefined value %b"));
    free(src);
}

/* The text cases: each file, without its leading // comment lines, is
 * exactly what printing its parse gives. */
static void test_tir_files(void **state)
{
    (void)state;
    DIR *d = opendir("tests/ir");
    if (!d)
        fail_msg("cannot open tests/ir (run from the repository root)");
    int files = 0, skipped = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".tir"))
            continue;
        char path[512];
        snprintf(path, sizeof path, "tests/ir/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        static char src[1 << 20];
        size_t n = fread(src, 1, sizeof src - 1, f);
        fclose(f);
        src[n] = '\0';
        char *body = src;
        while (!strncmp(body, "//", 2))
            body = strchr(body, '\n') ? strchr(body, '\n') + 1 : body + strlen(body);
        char err[2048];
        ir_graph *g = ir_parse(src, n, path, err, sizeof err);
        if (!g && strstr(err, TU_STUB)) {
            printf("note: %s uses an op whose rule is a stub; skipped\n", path);
            skipped++;
            continue;
        }
        if (!g)
            fail_msg("%s", err);
        char *text = tu_round_trip(g);
        if (strcmp(text, body))
            fail_msg("%s does not print as itself; it prints as:\n%s", path, text);
        free(text);
        ir_graph_free(g);
        files++;
    }
    closedir(d);
    printf("note: %d .tir files round-tripped, %d skipped\n", files, skipped);
    assert_true(files > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parse_errors, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_truncated_input, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_garbage_bytes, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_long_lines_and_nesting, tu_scope_setup,
                                        tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_tir_files, tu_scope_setup, tu_scope_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
