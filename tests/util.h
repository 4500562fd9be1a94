/* util.h - helpers shared by the cmocka suites: golden data and comparisons.
 *
 * Golden files live in tests/golden/<family>/<name>.npy (made by
 * scripts/golden/<family>.py with PyTorch; committed). Suites run from the
 * repository root; TJ_GOLDEN_DIR overrides the directory.
 * Include after <cmocka.h> and its prerequisites.
 */
#ifndef TJ_TEST_UTIL_H
#define TJ_TEST_UTIL_H

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

/* A tensor from a literal list of doubles, cast to dt (current scope). */
tj_tensor *tu_tensor(tj_dtype dt, int ndim, const int64_t *shape, const double *values);

/* cmocka group setup/teardown that open and close a scope around each test. */
int tu_scope_setup(void **state);
int tu_scope_teardown(void **state);

#endif
