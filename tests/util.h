/* util.h - helpers shared by the cmocka suites: golden data and comparisons.
 *
 * Golden files live in tests/golden/<family>/<name>.npy (made by
 * scripts/golden/<family>.py with PyTorch; committed). Suites run from the
 * repository root; TJ_GOLDEN_DIR overrides the directory.
 * Include after <cmocka.h> and its prerequisites.
 */
#ifndef TJ_TEST_UTIL_H
#define TJ_TEST_UTIL_H

#include <stdio.h>

#include <tjit.h>

/* Loads tests/golden/<family>/<name>.npy into the current scope; fails the
 * test (with the path and error) when it cannot. */
tj_tensor *tu_golden(const char *family, const char *name);

/* Fails the test unless got and want have the same shape and dtype and every
 * element satisfies |got - want| <= atol + rtol * |want| (NaN matches NaN,
 * infinities match by sign). The message names the first bad index. */
void tu_assert_close(tj_tensor *got, tj_tensor *want, double rtol, double atol);

/* Same, but dtypes may differ (values compared as double). */
void tu_assert_close_any(tj_tensor *got, tj_tensor *want, double rtol, double atol);

/* Fails the test unless got is NULL and tj_last_error() contains every one of
 * the NULL-terminated substrings; then clears the error. */
void tu_assert_error(const void *got, ...);

/* Fails the test unless tj_explain(c) contains what (the message shows it). */
void tu_assert_explain(tj_compiled *c, const char *what);
/* Fails the test unless c made eager_calls eager calls and backward_calls
 * backward runs (-1: not checked) and, what not NULL, tu_assert_explain. */
void tu_assert_calls(tj_compiled *c, long eager_calls, long backward_calls, const char *what);
/* Fails the test unless c captured one graph, broke none and (eager_calls
 * >= 0) made that many eager calls: a step that compiles whole. */
void tu_assert_one_graph(tj_compiled *c, long eager_calls);

/* A tensor from a literal list of doubles, cast to dt (current scope). */
/* Max over elements of |got - ref| / max(1, |ref|); ref f64, got any float
 * type of ref's shape (not NULL). */
double tu_max_rel_err(tj_tensor *got, tj_tensor *ref);
tj_tensor *tu_tensor(tj_dtype dt, int ndim, const int64_t *shape, const double *values);

/* Golden case lists (tests/golden/<family>/cases.txt): a comma-separated
 * list of integers into v (at most TJ_MAX_DIMS); "-" and "all" are empty. */
int tu_parse_ints(const char *s, int64_t *v);

/* Golden case lists store every expected value flattened in one want.npy:
 * the case's values are want[off, off + numel(shape)), shape a "2,3" list. */
tj_tensor *tu_golden_part(tj_tensor *want, long off, const char *shape);

/* Opens tests/golden/<family>/cases.txt (fails the test when missing). */
FILE *tu_golden_cases(const char *family);

/* The view of x a case names (the golden scripts build the same view in
 * PyTorch): 'p' all dims reversed, 's' dim 1 sliced 1::2, 'e' dim 1 expanded
 * from its first entry, 't' last two dims swapped, '0' reshaped to 0 dims,
 * anything else x itself. */
tj_tensor *tu_view(tj_tensor *x, char kind);

/* Whether got and want hold the same values elementwise (NaN equals NaN,
 * |a - b| <= tol * (1 + |b|)), in row-major order, whatever their shapes. */
bool tu_all_close(tj_tensor *got, tj_tensor *want, double tol);

/* Runs fn on n threads at once (n <= 16), thread i on (char *)args + i *
 * size, and waits for them all; fails the test when one cannot start. */
void tu_run_threads(int n, void *(*fn)(void *), void *args, size_t size);
/* A ready-hook (tj_set_grad_hook) that counts its runs in *(int *)ctx. */
int tu_count_hook(tj_tensor *leaf, void *ctx);

/* cmocka group setup/teardown that open and close a scope around each test. */
int tu_scope_setup(void **state);
int tu_scope_teardown(void **state);

/* Suites of compiled graphs: the kernel cache the build's suites share
 * ($TJ_BUILD/kernel-cache, build/ by default; TJIT_CACHE_DIR wins when set). */
void tu_use_build_cache(void);

/* The suite's n tests; or, in a build without the JIT (no clang-19), one
 * skipped test and a line "NAME: no JIT (WHY); WHAT" on stderr. */
int tu_run_jit_suite(const char *name, const struct CMUnitTest *tests, size_t n, const char *what);

#endif
