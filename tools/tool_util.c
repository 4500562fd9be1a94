/* tool_util.c - helpers shared by the tool's subcommands: reading files and
 * parsing a text graph with a one-line error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

char *tool_read_file(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "tjit: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
        }
    }
    bool err = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf || err) {
        fprintf(stderr, "tjit: cannot read %s\n", path);
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

tj_graph *tool_parse_file(const char *path)
{
    size_t len;
    char *src = tool_read_file(path, &len);
    if (!src)
        return NULL;
    tj_graph *g = tj_graph_parse(src, len, path);
    free(src);
    if (!g)
        fprintf(stderr, "%s\n", tj_last_error());
    return g;
}

bool tool_flag(const char *arg, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return false;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return true;
    }
    return false;
}

bool tool_profile_flag(const char *arg, const char **trace)
{
    *trace = NULL;
    return !strcmp(arg, "--profile") || tool_flag(arg, "--profile", trace);
}

int tool_profile_report(const char *tool, const char *trace)
{
    char *t = tj_profile_end() == 0 ? tj_profile_table(30) : NULL;
    if (!t) {
        fprintf(stderr, "%s: %s\n", tool, tj_last_error());
        return -1;
    }
    fputs(t, stderr);
    free(t);
    if (!trace || !*trace)
        return 0;
    if (tj_profile_write_trace(trace) != 0) {
        fprintf(stderr, "%s: %s\n", tool, tj_last_error());
        return -1;
    }
    fprintf(stderr, "%s: trace written to %s (open it in ui.perfetto.dev)\n", tool, trace);
    return 0;
}
