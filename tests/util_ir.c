/* util_ir.c - helpers of the IR text-form suites (util_ir.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"
#include "util_ir.h"
#include "../passes/pass.h"
#include "../runtime/rt.h"
#include "../sched/exec.h"

void tu_assert_verifies(const ir_graph *g)
{
    char err[512];
    if (ir_verify(g, err, sizeof err))
        fail_msg("ir_verify: %s", err);
}

char *tu_round_trip(const ir_graph *g)
{
    tu_assert_verifies(g);
    size_t n1, n2;
    char *t1 = ir_print(g, &n1);
    assert_non_null(t1);
    assert_int_equal(strlen(t1), n1);
    char err[2048];
    ir_graph *g2 = ir_parse(t1, n1, "printed.tir", err, sizeof err);
    if (!g2)
        fail_msg("printed text does not parse:\n%s\n%s", t1, err);
    tu_assert_verifies(g2);
    char *t2 = ir_print(g2, &n2);
    assert_non_null(t2);
    if (n1 != n2 || memcmp(t1, t2, n1))
        fail_msg("round trip differs:\n--- printed\n%s--- reprinted\n%s", t1, t2);
    assert_int_equal(g2->nnodes, g->nnodes);
    assert_int_equal(g2->ninputs, g->ninputs);
    assert_int_equal(g2->noutputs, g->noutputs);
    free(t2);
    ir_graph_free(g2);
    return t1;
}

const char *tu_parse_error(const char *src, size_t len)
{
    static char err[4096];
    ir_graph *g = ir_parse(src, len, "e.tir", err, sizeof err);
    if (g) {
        ir_graph_free(g);
        fail_msg("parsed, but should fail:\n%.*s", (int)(len > 400 ? 400 : len), src);
    }
    return err;
}

void tu_check_error(const char *src, int line, int col, const char *msg, const char *shown)
{
    const char *err = tu_parse_error(src, strlen(src));
    char head[64];
    snprintf(head, sizeof head, "e.tir:%d:%d: error: ", line, col);
    if (strncmp(err, head, strlen(head)) || !strstr(err, msg))
        fail_msg("source:\n%s\nwant \"%s...%s\", got:\n%s", src, head, msg, err);
    const char *l2 = strchr(err, '\n');
    assert_non_null(l2);
    l2++;
    const char *l3 = strchr(l2, '\n');
    assert_non_null(l3);
    l3++;
    if (shown && (strncmp(l2, shown, strlen(shown)) || l2[strlen(shown)] != '\n'))
        fail_msg("source line shown wrong:\n%s\nwant: %s", err, shown);
    /* the caret sits under the column of the (unwindowed, short) line */
    int spaces = 0;
    while (l3[spaces] == ' ')
        spaces++;
    if (shown && (l3[spaces] != '^' || spaces != col - 1 || l3[spaces + 1] != '\n'))
        fail_msg("caret misplaced (want %d spaces):\n%s", col - 1, err);
}

ir_graph *tu_parse(const char *src)
{
    char err[1024];
    ir_graph *g = ir_parse(src, strlen(src), "case.tir", err, sizeof err);
    if (!g)
        fail_msg("%s\n%s", err, src);
    return g;
}

void tu_expect_passes(const char *src, const char *passes, const char *want)
{
    ir_graph *g = tu_parse(src);
    char err[1024];
    ps_options opt = {.verify = true};
    ir_graph *h = ps_run_pipeline(g, passes, &opt, err, sizeof err);
    if (!h)
        fail_msg("%s\n%s", err, src);
    char *got = ir_print(h, NULL);
    assert_non_null(got);
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    free(got);
    if (h != g)
        ir_graph_free(h);
    ir_graph_free(g);
}

int tu_plans_vs_exec(sc_plan_set *ps, const ir_graph *g, tj_tensor **in, double rtol, double atol)
{
    tj_tensor *got[8], *want[8];
    int rc = sc_plans_run(ps, in, got);
    if (rc != 0)
        return rc;
    int *last = sc_exec_last_use(g);
    assert_int_equal(sc_exec(g, in, last, want), 0);
    free(last);
    for (int k = 0; k < g->noutputs; k++) {
        rt_own(got[k]);
        rt_own(want[k]);
        tu_assert_close(got[k], want[k], rtol, atol);
    }
    return 0;
}
