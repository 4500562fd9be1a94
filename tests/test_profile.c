/* test_profile.c - the profiler (runtime/profile*.c, hooks in runtime/eager.c,
 * runtime/pool.c, sched/): sessions and their errors, the events of eager
 * ops and of compiled launches with their bytes and flops (exact for ops
 * whose cost rule is simple), the table's order, the chrome trace's form and
 * its lanes per thread, and recording from several threads at once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

/* The row of name and kind in rows[0..n), or NULL. */
static const tj_profile_row *find_row(const tj_profile_row *rows, int n, const char *name, const char *kind)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(rows[k].name, name) && !strcmp(rows[k].kind, kind))
            return &rows[k];
    return NULL;
}

/* The rows of the last session (malloc'd), *n of them. */
static tj_profile_row *all_rows(int *n)
{
    *n = tj_profile_rows(NULL, 0);
    assert_true(*n >= 0);
    tj_profile_row *rows = calloc((size_t)*n + 1, sizeof *rows);
    assert_non_null(rows);
    assert_int_equal(tj_profile_rows(rows, *n), *n);
    return rows;
}

/* ---- sessions ------------------------------------------------------------------- */

static bool env_session;   /* TJIT_PROFILE=1 had started (and main ended) one */

static void test_errors_before_any_session(void **state)
{
    (void)state;
    if (env_session)
        skip();   /* a session has ended already */
    tu_assert_error(tj_profile_table(0), "profile_table", "no profiling session has ended", NULL);
    assert_int_equal(tj_profile_rows(NULL, 0), -1);
    assert_non_null(strstr(tj_last_error(), "profile_rows"));
    assert_int_equal(tj_profile_write_trace("/tmp/never.json"), -1);
    assert_non_null(strstr(tj_last_error(), "profile_write_trace"));
    assert_int_equal(tj_profile_end(), -1);
    assert_non_null(strstr(tj_last_error(), "tj_profile_end without tj_profile_begin"));
}

static void test_nesting(void **state)
{
    (void)state;
    if (tj_profile_running())
        skip();
    assert_int_equal(tj_profile_begin(), 0);
    assert_int_equal(tj_profile_begin(), 0);
    assert_true(tj_profile_running());
    assert_int_equal(tj_profile_end(), 0);   /* inner: still recording, a snapshot made */
    assert_true(tj_profile_running());
    assert_true(tj_profile_rows(NULL, 0) >= 0);
    assert_int_equal(tj_profile_end(), 0);
    assert_false(tj_profile_running());
    tj_clear_error();
    assert_int_equal(tj_profile_end(), -1);
    assert_non_null(strstr(tj_last_error(), "no profiling session is running"));
    int bad = tj_profile_rows(NULL, -1);
    assert_int_equal(bad, -1);
    assert_int_equal(tj_profile_write_trace(NULL), -1);
    assert_non_null(strstr(tj_last_error(), "path is NULL"));
    assert_int_equal(tj_profile_write_trace("/nonexistent-dir/x.json"), -1);
    assert_non_null(strstr(tj_last_error(), "cannot write /nonexistent-dir/x.json"));
}

/* ---- eager ops ------------------------------------------------------------------------ */

static void test_eager_costs(void **state)
{
    (void)state;
    tj_tensor *a = tj_ones(TJ_F32, 2, (int64_t[]){4, 250});
    tj_tensor *b = tj_ones(TJ_F32, 2, (int64_t[]){4, 250});
    tj_tensor *row = tj_ones(TJ_F32, 1, (int64_t[]){250});
    tj_tensor *m1 = tj_ones(TJ_F32, 2, (int64_t[]){8, 16});
    tj_tensor *m2 = tj_ones(TJ_F32, 2, (int64_t[]){16, 4});
    assert_non_null(m2);
    assert_int_equal(tj_profile_begin(), 0);
    for (int k = 0; k < 3; k++)
        assert_non_null(tj_add(a, b));
    assert_non_null(tj_mul(a, row));   /* row is broadcast: read once */
    assert_non_null(tj_sum(a, NULL, 0, false));
    assert_non_null(tj_matmul(m1, m2));
    assert_non_null(tj_transpose(a, 0, 1));   /* a view (permute): no bytes */
    assert_int_equal(tj_profile_end(), 0);
    int n;
    tj_profile_row *rows = all_rows(&n);
    const tj_profile_row *r = find_row(rows, n, "add", "op");
    assert_non_null(r);
    assert_int_equal(r->calls, 3);
    assert_int_equal(r->bytes, 3 * 3 * 1000 * 4);
    assert_int_equal(r->flops, 3 * 1000);
    assert_true(r->total_ms > 0 && r->avg_us > 0 && r->gbps > 0 && r->gflops > 0);
    assert_true(r->self_ms <= r->total_ms + 1e-9);
    r = find_row(rows, n, "mul", "op");
    assert_non_null(r);
    assert_int_equal(r->bytes, (1000 + 250 + 1000) * 4);
    assert_int_equal(r->flops, 1000);
    r = find_row(rows, n, "sum", "op");
    assert_non_null(r);
    assert_int_equal(r->bytes, (1000 + 1) * 4);
    assert_int_equal(r->flops, 1000);
    r = find_row(rows, n, "matmul", "op");
    assert_non_null(r);
    assert_int_equal(r->bytes, (8 * 16 + 16 * 4 + 8 * 4) * 4);
    assert_int_equal(r->flops, 2 * 8 * 4 * 16);
    r = find_row(rows, n, "permute", "op");
    assert_non_null(r);
    assert_int_equal(r->bytes, 0);
    assert_int_equal(r->flops, 0);
    double pct = 0;
    for (int k = 0; k < n; k++) {
        if (k > 0)
            assert_true(rows[k - 1].total_ms >= rows[k].total_ms);   /* sorted by total */
        pct += rows[k].self_percent;
    }
    assert_true(pct > 99.9 && pct < 100.1);
    free(rows);

    char *t = tj_profile_table(3);
    assert_non_null(t);
    assert_non_null(strstr(t, "tjit profile: "));
    assert_non_null(strstr(t, "GFLOP/s"));
    assert_non_null(strstr(t, "more rows"));
    free(t);
}

static void test_off_records_nothing(void **state)
{
    (void)state;
    if (tj_profile_running())
        skip();
    tj_tensor *a = tj_ones(TJ_F32, 1, (int64_t[]){16});
    assert_int_equal(tj_profile_begin(), 0);
    assert_non_null(tj_neg(a));
    assert_int_equal(tj_profile_end(), 0);
    assert_non_null(tj_exp(a));   /* after the end: not recorded */
    assert_int_equal(tj_profile_begin(), 0);
    assert_non_null(tj_neg(a));
    assert_int_equal(tj_profile_end(), 0);
    int n;
    tj_profile_row *rows = all_rows(&n);
    assert_null(find_row(rows, n, "exp", "op"));
    const tj_profile_row *r = find_row(rows, n, "neg", "op");
    assert_non_null(r);
    assert_int_equal(r->calls, 1);   /* the new session starts empty */
    free(rows);
}

/* ---- compiled launches -------------------------------------------------------------------- */

static tj_tensor *model_fma(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)ctx, (void)nargs;
    return tj_add(tj_mul(args[0], args[1]), args[0]);
}

static void test_compiled_costs(void **state)
{
    (void)state;
    enum { N = 4096 };
    tj_compiled *c = tj_compile(model_fma, NULL, &(tj_compile_options){.name = "fma", .no_dynamic = true});
    tj_tensor *x = tj_rand(TJ_F32, 1, (int64_t[]){N}), *y = tj_rand(TJ_F32, 1, (int64_t[]){N});
    assert_non_null(tj_call(c, (tj_tensor *[]){x, y}, 2));   /* compiles */
    tj_compiled_stats st;
    assert_int_equal(tj_compiled_stats_get(c, &st), 0);
    assert_int_equal(tj_profile_begin(), 0);
    for (int k = 0; k < 3; k++)
        assert_non_null(tj_call(c, (tj_tensor *[]){x, y}, 2));
    assert_int_equal(tj_profile_end(), 0);
    int n;
    tj_profile_row *rows = all_rows(&n);
    if (st.plan.compiled) {
        const tj_profile_row *k = find_row(rows, n, "mul+add", "kernel");
        assert_non_null(k);
        assert_int_equal(k->calls, 3);
        assert_int_equal(k->bytes, 3 * 3 * N * 4);   /* x, y read; the result written */
        assert_int_equal(k->flops, 3 * 2 * N);
        const tj_profile_row *g = find_row(rows, n, "@fma", "graph");
        assert_non_null(g);
        assert_int_equal(g->calls, 3);
        assert_true(g->total_ms >= k->total_ms);
        assert_true(g->self_ms <= g->total_ms - k->total_ms + 1e-6);
        assert_null(find_row(rows, n, "mul", "op"));   /* not run eagerly */
    } else {   /* no JIT: the graph executor runs the ops eagerly */
        const tj_profile_row *k = find_row(rows, n, "mul", "op");
        assert_non_null(k);
        assert_int_equal(k->calls, 3);
    }
    free(rows);
    tj_compiled_free(c);
}

/* ---- the trace ------------------------------------------------------------------------------ */

static atomic_int started;

static void wait_both(void *ctx, int64_t b, int64_t e)
{
    (void)ctx, (void)b, (void)e;
    atomic_fetch_add(&started, 1);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do   /* until the other chunk runs too (on another thread), at most 5 s */
        clock_gettime(CLOCK_MONOTONIC, &t);
    while (atomic_load(&started) < 2 && t.tv_sec - t0.tv_sec < 5);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)len + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)len, f), (size_t)len);
    s[len] = '\0';
    fclose(f);
    return s;
}

/* Brackets balance outside strings, strings close, nothing follows the top value. */
static void assert_json_shape(const char *s)
{
    int depth = 0;
    bool str = false;
    for (const char *p = s; *p; p++) {
        if (str) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                str = false;
            else
                assert_true((unsigned char)*p >= 0x20);
            continue;
        }
        if (*p == '"')
            str = true;
        else if (*p == '{' || *p == '[')
            depth++;
        else if (*p == '}' || *p == ']') {
            depth--;
            assert_true(depth >= 0);
            if (depth == 0)
                for (const char *q = p + 1; *q; q++)
                    assert_true(*q == '\n' || *q == ' ');
        }
    }
    assert_false(str);
    assert_int_equal(depth, 0);
}

static void test_trace_lanes(void **state)
{
    (void)state;
    int threads = tj_num_threads();
    tj_set_num_threads(2);
    atomic_store(&started, 0);
    tj_tensor *a = tj_ones(TJ_F32, 1, (int64_t[]){64});
    assert_int_equal(tj_profile_begin(), 0);
    assert_non_null(tj_neg(a));
    assert_int_equal(tj_parallel_for(2, 1, wait_both, NULL), 0);
    assert_int_equal(tj_profile_end(), 0);
    tj_set_num_threads(threads);
    assert_int_equal(atomic_load(&started), 2);
    char path[] = "/tmp/tjit_trace_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(tj_profile_write_trace(path), 0);
    char *s = slurp(path);
    unlink(path);
    assert_json_shape(s);
    assert_true(!strncmp(s, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 38));
    assert_non_null(strstr(s, "\"name\":\"thread_name\",\"ph\":\"M\""));
    assert_non_null(strstr(s, "{\"name\":\"neg\",\"cat\":\"op\",\"ph\":\"X\""));
    /* the two chunks, each in the lane of the thread that ran it */
    int tids[2], nt = 0;
    for (const char *p = s; (p = strstr(p, "\"name\":\"parallel_for\",\"cat\":\"chunk\"")); p++) {
        const char *t = strstr(p, "\"tid\":");
        assert_non_null(t);
        assert_true(nt < 2);
        tids[nt++] = atoi(t + 6);
    }
    if (nt != 2 || tids[0] == tids[1])
        fprintf(stderr, "%s", s);
    assert_int_equal(nt, 2);
    assert_int_not_equal(tids[0], tids[1]);
    free(s);
}

/* ---- threads --------------------------------------------------------------------------------- */

static void *adder(void *arg)
{
    tj_tensor *a = arg;
    tj_scope_begin();
    for (int k = 0; k < 100; k++)
        if (!tj_add(a, a))
            return (void *)1;
    tj_scope_end();
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    tj_tensor *a = tj_ones(TJ_F32, 1, (int64_t[]){32});
    pthread_t th[4];
    assert_int_equal(tj_profile_begin(), 0);
    for (int k = 0; k < 4; k++)
        assert_int_equal(pthread_create(&th[k], NULL, adder, a), 0);
    for (int k = 0; k < 4; k++) {
        void *r;
        pthread_join(th[k], &r);
        assert_null(r);
    }
    assert_int_equal(tj_profile_end(), 0);
    int n;
    tj_profile_row *rows = all_rows(&n);
    const tj_profile_row *r = find_row(rows, n, "add", "op");
    assert_non_null(r);
    assert_int_equal(r->calls, 400);
    assert_int_equal(r->bytes, 400 * 3 * 32 * 4);
    free(rows);
}

int main(void)
{
    if (tj_profile_running()) {   /* TJIT_PROFILE=1 started a session: the tests need none */
        env_session = true;
        tj_profile_end();
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors_before_any_session),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test_setup_teardown(test_eager_costs, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_off_records_nothing, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_compiled_costs, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_trace_lanes, tu_scope_setup, tu_scope_teardown),
        cmocka_unit_test_setup_teardown(test_threads, tu_scope_setup, tu_scope_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
