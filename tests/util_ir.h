/* util_ir.h - helpers of the suites that test the IR's text form
 * (test_ir.c, test_parse.c) and of those that build graphs from text:
 * parsing, round trips, verification, parse errors.
 * Include after <cmocka.h> and its prerequisites.
 */
#ifndef TJ_TEST_UTIL_IR_H
#define TJ_TEST_UTIL_IR_H

#include <stddef.h>

#include "../ir/graph.h"
#include "../sched/sched.h"

/* What a shape rule that is still a stub says. */
#define TU_STUB "not implemented yet"

/* src parsed as "case.tir"; fails the test (the message, then src) when it
 * does not parse. */
ir_graph *tu_parse(const char *src);

/* src through the pass pipeline `passes` (verified after each pass) must
 * print as want; fails the test with both texts (or the pass's error). */
void tu_expect_passes(const char *src, const char *passes, const char *want);

/* Runs g on in through plan set ps and on the graph executor and compares
 * every output within rtol, atol: 0; sc_plans_run's 1 (not compiled) or -1
 * (its error in tj_last_error()) with nothing compared. */
int tu_plans_vs_exec(sc_plan_set *ps, const ir_graph *g, tj_tensor **in, double rtol, double atol);

/* Fails the test unless g verifies. */
void tu_assert_verifies(const ir_graph *g);

/* Prints g, parses it back, prints again: the texts must be equal and both
 * graphs must verify. Returns the text (malloc'd). */
char *tu_round_trip(const ir_graph *g);

/* Parses src[0..len) as "e.tir", which must fail; returns the message (static). */
const char *tu_parse_error(const char *src, size_t len);

/* Checks a parse error: "e.tir:LINE:COL: error: ..." containing msg, then
 * the source line (shown; NULL: not checked), then a caret under the column. */
void tu_check_error(const char *src, int line, int col, const char *msg, const char *shown);

#endif
