/* tool.h - subcommands of the `tjit` tool; each takes argv from its own name. */
#ifndef TJ_TOOL_H
#define TJ_TOOL_H

typedef struct tool_cmd {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
} tool_cmd;

int tool_ops(int argc, char **argv);

#endif
