/* tool.c - the `tjit` command-line tool: dispatches subcommands. */
#include <stdio.h>
#include <string.h>

#include <tjit.h>

#include "tool.h"

static const tool_cmd cmds[] = {
    {"ops", "list the op table (--markdown: docs/ops.md)", tool_ops},
    {"run", "run a text graph (.tir) on .npy or random inputs", tool_run},
    {"opt", "run passes on a text graph and print the result", tool_opt},
    {"explain", "compile suite cases and show graphs, guards, recompiles, breaks", tool_explain},
    {"bench", "run the benchmark suite, eager and compiled (--json: one object per case)", tool_bench},
    {"export", "compile a suite case or ONNX model and export it as a shared object", tool_export},
    {"stream", "STREAM-triad memory bandwidth through the thread pool", tool_stream},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: tjit COMMAND [ARGS]   (tjit COMMAND --help for details)\n\ncommands:\n");
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; k++)
        fprintf(f, "  %-8s %s\n", cmds[k].name, cmds[k].help);
    fprintf(f, "  --version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("tjit %s\n", tj_version());
        return 0;
    }
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; k++)
        if (!strcmp(argv[1], cmds[k].name))
            return cmds[k].run(argc - 1, argv + 1);
    fprintf(stderr, "tjit: unknown command '%s' (try tjit --help)\n", argv[1]);
    return 2;
}
