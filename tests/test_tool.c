/* test_tool.c - text-in, text-out tests of the tjit tool (FileCheck style).
 *
 * Each .tir file under tests/tool/ holds its own commands and expectations:
 *   // RUN: tjit opt %s --passes=dce        run (tjit = $TJ_BUILD/tjit, %s = this file,
 *                                           %b = $TJ_BUILD)
 *   // RUN-FAIL: tjit run %s --bogus        the same, expecting a non-zero exit
 *   // CHECK: text                          a later line contains text
 *   // CHECK-NEXT: text                     the line after the last match contains text
 *   // CHECK-NOT: text                      no line between the last match and the next
 *                                           CHECK (or the end) contains text
 * stdout and stderr are checked together, in the order they were written.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#define MAX_LINES 4096

typedef struct {
    char *lines[MAX_LINES];
    int n;
} text;

static void text_free(text *t)
{
    for (int k = 0; k < t->n; k++)
        free(t->lines[k]);
    t->n = 0;
}

/* Runs cmd through the shell; fills out with its output lines; returns the exit status. */
static int run_cmd(const char *cmd, text *out)
{
    char full[4200];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    char line[8192];
    while (fgets(line, sizeof line, p) && out->n < MAX_LINES)
        out->lines[out->n++] = strdup(line);
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void expand(const char *src, const char *file, char *dst, size_t n)
{
    const char *build = getenv("TJ_BUILD") ? getenv("TJ_BUILD") : "build";
    size_t k = 0;
    for (const char *p = src; *p && k + 1 < n;) {
        if (p[0] == '%' && p[1] == 's') {
            k += (size_t)snprintf(dst + k, n - k, "%s", file);
            p += 2;
        } else if (p[0] == '%' && p[1] == 'b') {   /* the build directory */
            k += (size_t)snprintf(dst + k, n - k, "%s", build);
            p += 2;
        } else if (!strncmp(p, "tjit ", 5) && (p == src || p[-1] == ' ' || p[-1] == '|')) {
            k += (size_t)snprintf(dst + k, n - k, "%s/tjit ", build);
            p += 5;
        } else {
            dst[k++] = *p++;
        }
    }
    dst[k < n ? k : n - 1] = '\0';
}

static char *directive(char *line, const char *name)
{
    char *p = strstr(line, name);
    if (!p || strncmp(line, "//", 2) != 0)
        return NULL;
    p += strlen(name);
    while (*p == ' ')
        p++;
    p[strcspn(p, "\n")] = '\0';
    return p;
}

static void check_file(const char *file)
{
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    text spec = {0}, out = {0};
    char line[8192];
    while (fgets(line, sizeof line, f) && spec.n < MAX_LINES)
        spec.lines[spec.n++] = strdup(line);
    fclose(f);
    int at = -1, runs = 0;
    const char *pending_not = NULL;
    for (int k = 0; k < spec.n; k++) {
        char *l = spec.lines[k], *arg, cmd[4096];
        bool fail_expected = (arg = directive(l, "RUN-FAIL:")) != NULL;
        if (fail_expected || (arg = directive(l, "RUN:"))) {
            text_free(&out);
            expand(arg, file, cmd, sizeof cmd);
            int rc = run_cmd(cmd, &out);
            if (fail_expected ? rc == 0 : rc != 0)
                fail_msg("%s: `%s` exited with %d", file, cmd, rc);
            at = -1;
            runs++;
        } else if ((arg = directive(l, "CHECK-NOT:"))) {
            pending_not = arg;
        } else if ((arg = directive(l, "CHECK-NEXT:"))) {
            if (at + 1 >= out.n || !strstr(out.lines[at + 1], arg))
                fail_msg("%s:%d: CHECK-NEXT \"%s\" not on the line after the last match (\"%s\")",
                         file, k + 1, arg, at + 1 < out.n ? out.lines[at + 1] : "<end>");
            at++;
        } else if ((arg = directive(l, "CHECK:"))) {
            int j = at + 1;
            while (j < out.n && !strstr(out.lines[j], arg))
                j++;
            if (j >= out.n)
                fail_msg("%s:%d: CHECK \"%s\" not found after line %d of the output", file, k + 1,
                         arg, at + 1);
            for (int m = at + 1; pending_not && m < j; m++)
                if (strstr(out.lines[m], pending_not))
                    fail_msg("%s:%d: CHECK-NOT \"%s\" found: %s", file, k + 1, pending_not,
                             out.lines[m]);
            pending_not = NULL;
            at = j;
        }
    }
    for (int m = at + 1; pending_not && m < out.n; m++)
        if (strstr(out.lines[m], pending_not))
            fail_msg("%s: CHECK-NOT \"%s\" found: %s", file, pending_not, out.lines[m]);
    if (!runs)
        fail_msg("%s: no RUN line", file);
    text_free(&spec);
    text_free(&out);
}

static void test_tool_files(void **state)
{
    (void)state;
    DIR *d = opendir("tests/tool");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".tir") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "tests/tool/%s", e->d_name);
        check_file(path);
        n++;
    }
    closedir(d);
    assert_true(n > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tool_files)};
    return cmocka_run_group_tests_name("tool", tests, NULL, NULL);
}
