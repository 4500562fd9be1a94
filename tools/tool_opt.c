/* tool_opt.c - `tjit opt FILE.tir --passes=a,b`: runs passes on a text graph
 * and prints the result, like mlir-opt. The graph is verified after every
 * pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tjit opt FILE.tir --passes=P1,P2,... [--emit=graph|fused] [--dump-after=P|all]\n"
               "       tjit opt --list-passes\n"
               "  Parses FILE (\"-\": stdin), runs the passes in order, verifying the graph\n"
               "  after each, and prints the resulting graph to stdout (--emit=fused: how\n"
               "  it is split into kernels and eager calls, passes/fuse.h).\n");
}

static int list_passes(void)
{
    for (int k = 0; k < tj_pass_count(); k++)
        printf("%-10s %s\n", tj_pass_name(k), tj_pass_help(k));
    return 0;
}

/* The graph (or its fused form) on stdout; 0, or 1 after a message. */
static int print_graph(const tj_graph *g, bool fused)
{
    char *text = fused ? tj_graph_print_fused(g) : tj_graph_print(g);
    if (!text) {
        fprintf(stderr, "tjit opt: %s\n", tj_last_error());
        return 1;
    }
    size_t n = strlen(text);
    int rc = fwrite(text, 1, n, stdout) == n ? 0 : 1;
    free(text);
    return rc;
}

int tool_opt(int argc, char **argv)
{
    const char *file = NULL, *passes = "", *emit = "graph", *dump = NULL, *v;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--list-passes")) {
            return list_passes();
        } else if (tool_flag(argv[i], "--passes", &v)) {
            passes = v;
        } else if (tool_flag(argv[i], "--emit", &v)) {
            emit = v;
        } else if (tool_flag(argv[i], "--dump-after", &v)) {
            dump = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "tjit opt: unknown flag '%s' (tjit opt --help)\n", argv[i]);
            return 2;
        } else if (file) {
            fprintf(stderr, "tjit opt: one input file only ('%s' and '%s')\n", file, argv[i]);
            return 2;
        } else {
            file = argv[i];
        }
    }
    if (!file) {
        fprintf(stderr, "tjit opt: no input file (tjit opt --help)\n");
        return 2;
    }
    if (strcmp(emit, "graph") != 0 && strcmp(emit, "fused") != 0) {
        fprintf(stderr, "tjit opt: unknown stage '%s' for --emit (stages: graph, fused)\n", emit);
        return 2;
    }
    tj_graph *g = tool_parse_file(file);
    if (!g)
        return 1;
    int rc = 1;
    if (tj_graph_run_passes(g, passes, dump) != 0)
        fprintf(stderr, "tjit opt: %s\n", tj_last_error());
    else
        rc = print_graph(g, !strcmp(emit, "fused"));
    tj_graph_free(g);
    return rc;
}
