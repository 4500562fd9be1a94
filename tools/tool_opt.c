/* tool_opt.c - `tjit opt FILE.tir --passes=a,b`: runs passes on a text graph
 * and prints the result, like mlir-opt. The graph is verified after every
 * pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../passes/fuse.h"
#include "../passes/pass.h"
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
    for (const ps_pass *p = ps_passes; p->name; p++)
        printf("%-10s %s\n", p->name, p->help);
    return 0;
}

static int print_fused(const ir_graph *g)
{
    char err[256];
    ir_fusion *f = ps_fuse(g, err, sizeof err);
    char *text = f ? ir_fusion_print(f) : NULL;
    int rc = text ? 0 : 1;
    if (text)
        fputs(text, stdout);
    else
        fprintf(stderr, "tjit opt: %s\n", f ? "out of memory" : err);
    free(text);
    ir_fusion_free(f);
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
    ir_graph *g = tool_parse_file(file);
    if (!g)
        return 1;
    char err[1024];
    ps_options opt = {.verify = true, .dump_after = dump};
    ir_graph *h = ps_run_pipeline(g, passes, &opt, err, sizeof err);
    if (!h) {
        fprintf(stderr, "tjit opt: %s\n", err);
        ir_graph_free(g);
        return 1;
    }
    int rc = !strcmp(emit, "fused") ? print_fused(h) : ir_print_file(h, stdout) == 0 ? 0 : 1;
    if (h != g)
        ir_graph_free(h);
    ir_graph_free(g);
    return rc;
}
