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
               "  after each, and prints the resulting graph to stdout (--emit=fused, or\n"
               "  the pass fuse last: how it is split into kernels and eager calls,\n"
               "  passes/fuse.h).\n");
}

static int list_passes(void)
{
    for (int k = 0; k < tj_pass_count(); k++)
        printf("%-10s %s\n", tj_pass_name(k), tj_pass_help(k));
    printf("%-10s %s\n", "fuse", "group into kernels and eager calls and print the groups (last only)");
    return 0;
}

/* A trailing "fuse" pass: the graph passes before it in head (at most n
 * bytes); 1 when it was there, 0 when not, -1 when fuse is not last. */
static int split_fuse(const char *passes, char *head, size_t n)
{
    snprintf(head, n, "%s", passes);
    size_t len = strlen(head);
    bool last = len >= 4 && !strcmp(head + len - 4, "fuse") && (len == 4 || head[len - 5] == ',');
    if (last)
        head[len > 4 ? len - 5 : 0] = '\0';
    for (const char *p = head; (p = strstr(p, "fuse")); p += 4)
        if ((p == head || p[-1] == ',') && (p[4] == ',' || !p[4]))
            return -1;
    return last;
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
    char head[1024];
    int fuse = split_fuse(passes, head, sizeof head);
    if (fuse < 0 || strlen(passes) >= sizeof head) {
        fprintf(stderr, "tjit opt: the pass fuse comes last (it makes groups, not a graph)\n");
        return 2;
    }
    tj_graph *g = tool_parse_file(file);
    if (!g)
        return 1;
    int rc = 1;
    if (tj_graph_run_passes(g, head, dump) != 0)
        fprintf(stderr, "tjit opt: %s\n", tj_last_error());
    else
        rc = print_graph(g, fuse || !strcmp(emit, "fused"));
    tj_graph_free(g);
    return rc;
}
