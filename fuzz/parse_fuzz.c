/* parse_fuzz.c - libFuzzer target for the text IR parser (`make fuzz`).
 *
 * Feeds arbitrary bytes to ir_parse. Any input must either fail with a
 * well-formed message or give a graph that (1) passes ir_verify and (2)
 * round-trips: print -> parse -> print gives the same bytes. A crash, leak,
 * sanitizer report or broken invariant aborts. Built from the ir/ sources only, with
 * clang -fsanitize=fuzzer,address,undefined; the seed corpus is tests/ir/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "parse_fuzz: %s\n%s\n", what, detail ? detail : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    ir_graph *g = ir_parse((const char *)data, size, "fuzz.tir", err, sizeof err);
    if (!g) {
        if (strncmp(err, "fuzz.tir:", 9) || !strstr(err, ": error: ") || !strchr(err, '^'))
            die("malformed error message", err);
        return 0;
    }
    if (ir_verify(g, err, sizeof err))
        die("a parsed graph fails ir_verify", err);
    size_t n1, n2;
    char *t1 = ir_print(g, &n1);
    if (!t1)
        die("ir_print failed", NULL);
    ir_graph *g2 = ir_parse(t1, n1, "printed.tir", err, sizeof err);
    if (!g2)
        die("printed text does not parse", err);
    char *t2 = ir_print(g2, &n2);
    if (!t2 || n1 != n2 || memcmp(t1, t2, n1))
        die("print(parse(print(g))) != print(g)", t1);
    free(t1);
    free(t2);
    ir_graph_free(g2);
    ir_graph_free(g);
    return 0;
}
