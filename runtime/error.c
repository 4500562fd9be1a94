/* error.c - the thread-local error message behind tj_last_error(), and the
 * call site of the user's latest op call (tj__callsite, set by tjit.h's
 * macros). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

/* 2048: room for a text-IR parse error (file:line:col, message, the source
 * line and a caret) as the tools print it. */
static _Thread_local char err_msg[2048];

const char *tj_last_error(void) { return err_msg; }

void tj_clear_error(void) { err_msg[0] = '\0'; }

bool rt_has_error(void) { return err_msg[0] != '\0'; }

/* The file (a string literal of the caller's) and line of the latest public
 * call made through tjit.h's call-site macros on this thread. initial-exec:
 * a store at a fixed offset from the thread pointer, no __tls_get_addr call
 * from libtjit.so (16 bytes of the static TLS surplus when dlopen'd). */
static _Thread_local struct {
    const char *file;
    int line;
} site __attribute__((tls_model("initial-exec")));

void tj__callsite(const char *file, int line)
{
    site.file = file;
    site.line = line;
}

const char *rt_callsite(int *line)
{
    *line = site.line;
    return site.file;
}

char *rt_callsite_suffix(char *buf, size_t n)
{
    if (n)
        buf[0] = '\0';
    if (site.file)
        snprintf(buf, n, " at %s:%d", site.file, site.line);
    return buf;
}

void tj_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
}

char *rt_describe_inputs(const char *name, tj_tensor *const *in, int nin, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "%s(", name);
    for (int i = 0; i < nin && k < n; i++) {
        char t[128];
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "",
                              in[i] ? tj_describe(in[i], t, sizeof t) : "none");
    }
    if (k < n)
        snprintf(buf + k, n - k, ")");
    return buf;
}
