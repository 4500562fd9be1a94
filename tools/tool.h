/* tool.h - subcommands of the `tjit` tool; each takes argv from its own name.
 * The tool uses the public API (tjit.h), the inspection API (tjit_inspect.h)
 * and the benchmark suite (benchmarks/, itself on the public API) only. */
#ifndef TJ_TOOL_H
#define TJ_TOOL_H

typedef struct tool_cmd {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
} tool_cmd;

int tool_ops(int argc, char **argv);
int tool_run(int argc, char **argv);
int tool_opt(int argc, char **argv);
int tool_explain(int argc, char **argv);
int tool_bench(int argc, char **argv);   /* tool_bench.c */
int tool_stream(int argc, char **argv);  /* tool_stream.c */
int tool_export(int argc, char **argv);  /* tool_export.c */

/* tool_explain_prog.c: `tjit explain` on an ONNX model or a user's shared object */
#include <stdbool.h>
int tool_explain_onnx(const char *file, const char **in_files, int nin, int calls, bool freeze);
int tool_explain_so(const char *file, int calls, bool freeze);

/* tool_util.c */
#include <stdbool.h>
#include <stddef.h>

#include <tjit_inspect.h>

/* The whole file ("-": stdin), malloc'd; NULL after a one-line message. */
char *tool_read_file(const char *path, size_t *len);
/* The graph in a .tir file; NULL after printing the parse error. */
tj_graph *tool_parse_file(const char *path);
/* Whether arg is "name=VALUE"; sets *value. */
bool tool_flag(const char *arg, const char *name, const char **value);
/* Whether arg is --profile or --profile=TRACE.json (sets *trace, else NULL). */
bool tool_profile_flag(const char *arg, const char **trace);
/* Ends the session tool began: the table to stderr, the trace to trace (NULL:
 * none). 0, or -1 after a message. */
int tool_profile_report(const char *tool, const char *trace);

#endif
