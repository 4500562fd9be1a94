/* util_gradcases.h - the gradient-check cases of tests/grad/cases.tir, for
 * the suites that run them (test_autograd: first order; test_autograd_higher:
 * second order): each graph run op by op through the eager API, so the tape
 * records it, on inputs drawn by their names, and its loss.
 */
#ifndef TJ_TESTS_UTIL_GRADCASES_H
#define TJ_TESTS_UTIL_GRADCASES_H

#include <stdbool.h>
#include <stdint.h>

#include "tjit.h"
#include "../ir/graph.h"

/* Values of g's inputs and nodes (slots: inputs, then nodes), in the scope;
 * 0, or -1 with the failing op printed. */
int tu_case_run(const ir_graph *g, tj_tensor **slot);
/* Output k of a run's slots. */
tj_tensor *tu_case_output(const ir_graph *g, tj_tensor **slot, int k);
/* An input drawn by its name's first letter (cases.tir's header), from a
 * generator of its own (*rng: not tjit's, so independent of it). */
tj_tensor *tu_case_input(const ir_node *in, uint64_t *rng);
/* Whether input in gets a gradient (f64, not a constant 'z'). */
bool tu_case_wants_grad(const ir_node *in);
/* L = sum_k sum(y_k * r_k) over the outputs y_k of a run, in f64. */
tj_tensor *tu_case_loss(const ir_graph *g, tj_tensor **slot, tj_tensor **r);
/* Calls fn(g, ctx) on each graph of cases.tir in its own scope; the sum of
 * what fn returned (fails the test on a parse error). */
int tu_cases_each(int (*fn)(const ir_graph *g, void *ctx), void *ctx);

#endif
