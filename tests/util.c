/* util.c - shared test helpers (see util.h). */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"
#include "../codegen/jit.h"

tj_tensor *tu_golden(const char *family, const char *name)
{
    const char *dir = getenv("TJ_GOLDEN_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s.npy", dir ? dir : "tests/golden", family, name);
    tj_tensor *t = tj_load_npy(path);
    if (!t)
        fail_msg("cannot load golden %s: %s", path, tj_last_error());
    return t;
}

static bool next_index(int ndim, const int64_t *shape, int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d])
            return true;
        idx[d] = 0;
    }
    return false;
}

static void fmt_index(int ndim, const int64_t *idx, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, d ? ",%lld" : "%lld", (long long)idx[d]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

static void compare(tj_tensor *got, tj_tensor *want, double rtol, double atol, bool same_dtype)
{
    char g[128], w[128];
    if (!got)
        fail_msg("result is NULL: %s", tj_last_error());
    if (!want)
        fail_msg("expected tensor is NULL: %s", tj_last_error());
    tj_describe(got, g, sizeof g);
    tj_describe(want, w, sizeof w);
    bool shape_ok = tj_ndim(got) == tj_ndim(want);
    for (int d = 0; shape_ok && d < tj_ndim(got); d++)
        shape_ok = tj_shape(got)[d] == tj_shape(want)[d];
    if (!shape_ok || (same_dtype && tj_dtype_of(got) != tj_dtype_of(want)))
        fail_msg("got %s, expected %s", g, w);
    if (tj_numel(got) == 0)
        return;
    int64_t idx[TJ_MAX_DIMS] = {0};
    do {
        double a = tj_get(got, idx), b = tj_get(want, idx);
        bool ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= atol + rtol * fabs(b);
        if (!ok) {
            char at[128];
            fmt_index(tj_ndim(got), idx, at, sizeof at);
            fail_msg("%s vs %s: at %s got %.9g, expected %.9g (diff %.3g, rtol %g, atol %g)", g,
                     w, at, a, b, fabs(a - b), rtol, atol);
        }
    } while (next_index(tj_ndim(got), tj_shape(got), idx));
}

void tu_assert_calls(tj_compiled *c, long eager_calls, long backward_calls, const char *what)
{
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    if (eager_calls >= 0 && (long)st.eager_calls != eager_calls)
        fail_msg("%lu eager calls, %ld expected", (unsigned long)st.eager_calls, eager_calls);
    if (backward_calls >= 0 && (long)st.backward.calls != backward_calls)
        fail_msg("%lu backward runs, %ld expected", (unsigned long)st.backward.calls, backward_calls);
    if (what)
        tu_assert_explain(c, what);
}

void tu_assert_one_graph(tj_compiled *c, long eager_calls)
{
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    if (st.graphs != 1 || st.breaks != 0)
        fail_msg("%d graphs and %d breaks, one graph and none expected", st.graphs, st.breaks);
    tu_assert_calls(c, eager_calls, -1, NULL);
}

void tu_assert_explain(tj_compiled *c, const char *what)
{
    char *text = tj_explain(c);
    if (!text)
        fail_msg("tj_explain: %s", tj_last_error());
    if (!strstr(text, what))
        fail_msg("explain lacks \"%s\":\n%s", what, text);
    free(text);
}

void tu_assert_close(tj_tensor *got, tj_tensor *want, double rtol, double atol)
{
    compare(got, want, rtol, atol, true);
}

void tu_assert_close_any(tj_tensor *got, tj_tensor *want, double rtol, double atol)
{
    compare(got, want, rtol, atol, false);
}

void tu_assert_error(const void *got, ...)
{
    if (got)
        fail_msg("expected an error, got a tensor");
    const char *msg = tj_last_error();
    if (!msg[0])
        fail_msg("expected an error message, got none");
    va_list ap;
    va_start(ap, got);
    for (const char *s; (s = va_arg(ap, const char *));) {
        if (!strstr(msg, s)) {
            va_end(ap);
            fail_msg("error message \"%s\" lacks \"%s\"", msg, s);
        }
    }
    va_end(ap);
    tj_clear_error();
}

double tu_max_rel_err(tj_tensor *got, tj_tensor *ref)
{
    assert_non_null(got);
    assert_int_equal(tj_numel(got), tj_numel(ref));
    tj_tensor *g = tj_cast(got, TJ_F64);
    const double *a = tj_data(g), *b = tj_data(ref);
    double e = 0;
    for (int64_t i = 0; i < tj_numel(ref); i++)
        e = fmax(e, fabs(a[i] - b[i]) / fmax(1.0, fabs(b[i])));
    return e;
}

tj_tensor *tu_tensor(tj_dtype dt, int ndim, const int64_t *shape, const double *values)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    tj_tensor *t = tj_from_data(TJ_F64, ndim, shape, values);
    assert_non_null(t);
    (void)n;
    return dt == TJ_F64 ? t : tj_cast(t, dt);
}

int tu_parse_ints(const char *s, int64_t *v)
{
    int n = 0;
    if (!strcmp(s, "all") || !strcmp(s, "-"))
        return 0;
    for (char *end; *s && n < TJ_MAX_DIMS; s = *end ? end + 1 : end)
        v[n++] = strtoll(s, &end, 10);
    return n;
}

tj_tensor *tu_golden_part(tj_tensor *want, long off, const char *shape)
{
    int64_t dims[TJ_MAX_DIMS], n = 1;
    int nd = tu_parse_ints(shape, dims);
    for (int d = 0; d < nd; d++)
        n *= dims[d];
    return tj_reshape(tj_slice(want, 0, off, off + n, 1), nd, dims);
}

FILE *tu_golden_cases(const char *family)
{
    const char *dir = getenv("TJ_GOLDEN_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s/cases.txt", dir ? dir : "tests/golden", family);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    return f;
}

tj_tensor *tu_view(tj_tensor *x, char kind)
{
    int nd = tj_ndim(x), perm[TJ_MAX_DIMS];
    switch (kind) {
    case 'p':
        for (int d = 0; d < nd; d++)
            perm[d] = nd - 1 - d;
        return tj_permute(x, perm);
    case 's': return tj_slice(x, 1, 1, tj_size(x, 1), 2);
    case 'e': return tj_expand(tj_slice(x, 1, 0, 1, 1), nd, tj_shape(x));
    case 't': return tj_transpose(x, -1, -2);
    case '0': return tj_reshape(x, 0, NULL);
    default: return x;
    }
}

bool tu_all_close(tj_tensor *got, tj_tensor *want, double tol)
{
    int64_t n = tj_numel(want);
    if (tj_numel(got) != n)
        return false;
    tj_tensor *g = tj_reshape(got, 1, &n), *w = tj_reshape(want, 1, &n);
    for (int64_t i = 0; i < n; i++) {
        double a = tj_get(g, &i), b = tj_get(w, &i);
        if (!(a == b || (isnan(a) && isnan(b)) || fabs(a - b) <= tol + tol * fabs(b)))
            return false;
    }
    return true;
}

int tu_scope_setup(void **state)
{
    (void)state;
    tj_clear_error();
    tj_scope_begin();
    return 0;
}

int tu_scope_teardown(void **state)
{
    (void)state;
    tj_scope_end();
    return 0;
}

void tu_run_threads(int n, void *(*fn)(void *), void *args, size_t size)
{
    pthread_t t[16];
    assert_true(n >= 1 && n <= 16);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&t[i], NULL, fn, (char *)args + (size_t)i * size), 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

void tu_use_build_cache(void)
{
    char cache[512];
    const char *build = getenv("TJ_BUILD") ? getenv("TJ_BUILD") : "build";
    snprintf(cache, sizeof cache, "%s/kernel-cache", build);
    setenv("TJIT_CACHE_DIR", cache, 0);
}

static void tu_no_jit(void **state) { (void)state; skip(); }

int tu_run_jit_suite(const char *name, const struct CMUnitTest *tests, size_t n, const char *what)
{
    char why[512];
    if (cg_jit_available(why, sizeof why))
        return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
    const struct CMUnitTest none[] = {cmocka_unit_test(tu_no_jit)};
    fprintf(stderr, "%s: no JIT (%s); %s\n", name, why, what);
    return _cmocka_run_group_tests(name, none, 1, NULL, NULL);
}

int tu_count_hook(tj_tensor *leaf, void *ctx)
{
    (void)leaf;
    ++*(int *)ctx;
    return 0;
}
