/* test_robust.c - failures that must end in a clear error, never a crash or a
 * message that outlives its cause:
 *
 *   - LLVM's C API returns its strings (triple, host CPU, features, the target
 *     machine's CPU and triple, printed IR) from strdup: NULL when that
 *     allocation fails. This suite defines strdup itself (the dynamic linker
 *     binds libLLVM's calls to it) and fails the k-th call from a point.
 *   - tj_scope_begin cannot allocate its scope (a calloc defined here fails).
 *   - OpenBLAS loads on first use; a failed load says why (not found, or
 *     found and failed to load) and the next call tries again.
 *   - tj_data, tj_item, tj_get, tj_size and tj_save_npy given NULL leave a
 *     message; tj_call leaves no message of its trace or fallbacks.
 *
 * The order matters: the tests that make LLVM's host facts, the JIT and
 * OpenBLAS fail on first use run before anything else uses them.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../codegen/cache.h"
#include "../runtime/blas.h"
#include "../runtime/rt.h"
#include "util.h"

/* codegen/emit.h and jit.h need LLVM's headers; what is used here, spelled
 * with LLVM's own struct names. */
struct LLVMOpaqueTargetMachine;
struct LLVMOpaqueTargetMachine *cg_tm_create(char *err, size_t nerr);
void LLVMDisposeTargetMachine(struct LLVMOpaqueTargetMachine *tm);
bool cg_jit_available(char *err, size_t nerr);

/* ---- a strdup that fails on request ------------------------------------------------ */

static atomic_long strdup_calls;   /* since strdup_fail_at */
static atomic_long strdup_fail;    /* fail call number n (1-based); 0: never */

__attribute__((visibility("default"))) char *strdup(const char *s)
{
    long n = atomic_fetch_add(&strdup_calls, 1) + 1;
    if (atomic_load(&strdup_fail) == n)
        return NULL;
    size_t len = strlen(s) + 1;
    char *p = malloc(len);
    return p ? memcpy(p, s, len) : NULL;
}

static void strdup_fail_at(long n)
{
    atomic_store(&strdup_fail, 0);
    atomic_store(&strdup_calls, 0);
    atomic_store(&strdup_fail, n);
}

/* ---- a calloc that fails on request (tjit is linked in: its calls come here) --------- */

/* Not under AddressSanitizer, whose own calloc must make what its free frees. */
#ifndef __SANITIZE_ADDRESS__
#define HAVE_CALLOC_HOOK 1
extern void *__libc_calloc(size_t, size_t);
static _Thread_local bool calloc_fail_next;

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size)
{
    if (calloc_fail_next) {
        calloc_fail_next = false;
        return NULL;
    }
    return __libc_calloc(n, size);
}
#endif

/* ---- OpenBLAS: the reason, then a retry ----------------------------------------------- */

static void test_blas_load_failure_is_retried(void **state)
{
    (void)state;
    char bad[] = "/tmp/tjit_robust_XXXXXX";
    int fd = mkstemp(bad);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not a library\n", 14), 14);
    close(fd);

    setenv("TJIT_OPENBLAS", bad, 1);   /* there, but not a shared object */
    tj_clear_error();
    assert_null(rt_blas_core());
    assert_non_null(strstr(tj_last_error(), "failed to load"));
    assert_null(strstr(tj_last_error(), "not found"));
    unlink(bad);

    setenv("TJIT_OPENBLAS", "/nonexistent/libopenblas.so.0", 1);
    tj_clear_error();
    assert_null(rt_blas_core());
    assert_non_null(strstr(tj_last_error(), "not found"));

    unsetenv("TJIT_OPENBLAS");   /* the next call tries again, and loads it */
    tj_clear_error();
    assert_non_null(rt_blas_core());
    assert_string_equal(tj_last_error(), "");
}

/* ---- LLVM strings that come back NULL ------------------------------------------------- */

static void test_tm_create_with_each_string_failing(void **state)
{
    (void)state;
    char err[256];
    /* the triple, the CPU name, the CPU features: each NULL in turn */
    for (long k = 1; k <= 3; k++) {
        strdup_fail_at(k);
        err[0] = '\0';
        struct LLVMOpaqueTargetMachine *tm = cg_tm_create(err, sizeof err);
        long calls = atomic_load(&strdup_calls);
        strdup_fail_at(0);
        assert_true(calls >= k);
        assert_null(tm);
        assert_non_null(strstr(err, "out of memory"));
    }
    struct LLVMOpaqueTargetMachine *tm = cg_tm_create(err, sizeof err);
    assert_non_null(tm);
    LLVMDisposeTargetMachine(tm);
}

static void test_key_env_failure_is_retried(void **state)
{
    (void)state;
    strdup_fail_at(1);   /* the CPU name of the kernel key */
    const cg_key_env *env = cg_key_env_host();
    strdup_fail_at(0);
    assert_null(env);    /* no stand-in such as "unknown" that another host could match */
    env = cg_key_env_host();
    assert_non_null(env);
    assert_non_null(env->cpu);
    assert_non_null(env->features);
    assert_string_not_equal(env->cpu, "unknown");
    cg_key k;
    assert_int_equal(cg_key_make("x", 1, &k), 0);
}

static void test_jit_init_failure_is_retried(void **state)
{
    (void)state;
    char err[256] = "";
    strdup_fail_at(1);   /* the triple of the JIT's target machine */
    bool ok = cg_jit_available(err, sizeof err);
    strdup_fail_at(0);
    assert_false(ok);
    assert_non_null(strstr(err, "out of memory"));
    assert_true(cg_jit_available(err, sizeof err));
}

typedef struct { double c; } scale_ctx;

static tj_tensor *scale_model(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    return tj_add_s(tj_mul_s(tj_exp(x[0]), ((scale_ctx *)ctx)->c), 1.0);
}

/* Each strdup of compiling a new kernel fails in turn (a new constant each
 * time, so no cache has the kernel): every call still gives the right values
 * (the kernel's group falls back to eager), and a message only if it fails. */
static void test_compile_with_each_strdup_failing(void **state)
{
    (void)state;
    int64_t shape[] = {4, 33};
    tj_tensor *x = tj_rand(TJ_F32, 2, shape);
    long compiled = 0;
    for (long k = 1; k < 200; k++) {
        scale_ctx ctx = {1.0 + (double)k / 1024};
        tj_compiled *c = tj_compile(scale_model, &ctx, NULL);
        assert_non_null(c);
        tj_clear_error();
        strdup_fail_at(k);
        tj_tensor *y = tj_call(c, &x, 1);
        long calls = atomic_load(&strdup_calls);
        strdup_fail_at(0);
        assert_non_null(y);
        assert_string_equal(tj_last_error(), "");
        tu_assert_close(y, scale_model(&ctx, &x, 1), 1e-6, 1e-6);
        tj_compiled_stats st;
        assert_int_equal(tj_compiled_stats_get(c, &st), 0);
        compiled += st.plan.compiled && st.plan.kernels > 0;
        tj_compiled_free(c);
        if (calls < k)   /* the whole compile made fewer strdups: all were failed once */
            break;
    }
    assert_true(compiled > 0);
}

/* ---- a scope that cannot be opened -------------------------------------------------------- */

/* tj_scope_begin allocates its scope: when that fails, its tj_scope_end must
 * not end the enclosing scope (whose tensors are still in use), and results
 * made meanwhile fail with a message rather than leak to a caller who does not
 * know it owns them. */
static void test_scope_begin_failure(void **state)
{
    (void)state;
#ifndef HAVE_CALLOC_HOOK
    skip();
#else
    int64_t shape[] = {3};
    tj_tensor *x = tj_full(TJ_F32, 1, shape, 2.0);   /* the enclosing scope's */
    tj_clear_error();
    calloc_fail_next = true;
    tj_scope_begin();
    calloc_fail_next = false;
    assert_non_null(strstr(tj_last_error(), "scope"));
    tj_clear_error();
    tj_tensor *y = tj_add(x, x);
    assert_null(y);
    assert_non_null(strstr(tj_last_error(), "scope"));
    tj_scope_begin();   /* nested inside the lost one: ends with it */
    tj_scope_end();
    tj_scope_end();
    tj_clear_error();
    tj_tensor *z = tj_add(x, x);   /* owned again, x still alive */
    assert_non_null(z);
    assert_float_equal(tj_item(tj_sum(z, NULL, 0, false)), 12.0, 1e-6);
#endif
}

/* ---- NULL in, a message out ------------------------------------------------------------- */

static void test_null_tensor_messages(void **state)
{
    (void)state;
    int64_t zero[1] = {0};
    tj_clear_error();
    assert_null(tj_data(NULL));
    assert_non_null(strstr(tj_last_error(), "tj_data"));
    tj_clear_error();
    assert_true(isnan(tj_item(NULL)));
    assert_non_null(strstr(tj_last_error(), "tj_item"));
    tj_clear_error();
    assert_true(isnan(tj_get(NULL, zero)));
    assert_non_null(strstr(tj_last_error(), "tj_get"));
    tj_clear_error();
    assert_int_equal(tj_size(NULL, 0), -1);
    assert_non_null(strstr(tj_last_error(), "tj_size"));
    tj_clear_error();
    assert_int_equal(tj_save_npy(NULL, "/tmp/tjit_robust_never.npy"), -1);
    assert_non_null(strstr(tj_last_error(), "save_npy"));
    assert_int_equal(access("/tmp/tjit_robust_never.npy", F_OK), -1);

    /* the error that made the tensor NULL stays */
    int64_t s2[] = {2}, s3[] = {3};
    tj_tensor *bad = tj_add(tj_zeros(TJ_F32, 1, s2), tj_zeros(TJ_F32, 1, s3));
    assert_null(bad);
    char first[256];
    snprintf(first, sizeof first, "%s", tj_last_error());
    assert_true(first[0] != '\0');
    assert_null(tj_data(bad));
    assert_true(isnan(tj_item(bad)));
    assert_int_equal(tj_save_npy(bad, "/tmp/tjit_robust_never.npy"), -1);
    assert_string_equal(tj_last_error(), first);
    tj_clear_error();
}

/* ---- tj_call and stale messages ------------------------------------------------------- */

/* Reads a value: a graph break while traced (with its message), fine eagerly. */
static tj_tensor *break_model(void *ctx, tj_tensor *const *x, int n)
{
    (void)ctx;
    (void)n;
    double s = tj_item(tj_sum(x[0], NULL, 0, false));
    return tj_mul_s(x[0], isnan(s) ? 0.0 : 2.0);
}

/* Fails when traced (returns NULL with a message), succeeds eagerly. */
static tj_tensor *flaky_model(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    int *calls = ctx;
    if ((*calls)++ == 0) {
        rt_error("flaky: first run fails");
        return NULL;
    }
    return tj_neg(x[0]);
}

/* Fails when traced with a message, then eagerly without one. */
static tj_tensor *silent_model(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    int *calls = ctx;
    if ((*calls)++ == 0)
        rt_error("silent: the trace's message");
    (void)x;
    return NULL;
}

static void test_call_leaves_no_stale_message(void **state)
{
    (void)state;
    int64_t shape[] = {3};
    tj_tensor *x = tj_full(TJ_F32, 1, shape, 1.5);

    tj_compiled *c = tj_compile(break_model, NULL, NULL);
    tj_clear_error();
    tj_tensor *y = tj_call(c, &x, 1);
    assert_non_null(y);
    assert_string_equal(tj_last_error(), "");   /* not "tj_item: ... being traced" */
    assert_float_equal(tj_item(tj_sum(y, NULL, 0, false)), 9.0, 1e-6);
    tj_compiled_free(c);

    int calls = 0;
    c = tj_compile(flaky_model, &calls, NULL);
    tj_clear_error();
    y = tj_call(c, &x, 1);
    assert_non_null(y);
    assert_string_equal(tj_last_error(), "");
    tj_compiled_free(c);

    /* a pending first error of the caller's chain is kept, as by any op */
    calls = 1;
    c = tj_compile(flaky_model, &calls, NULL);
    rt_error("earlier: the caller's first error");
    assert_non_null(tj_call(c, &x, 1));
    assert_string_equal(tj_last_error(), "earlier: the caller's first error");
    tj_clear_error();
    tj_compiled_free(c);

    calls = 0;
    c = tj_compile(silent_model, &calls, NULL);
    tj_clear_error();
    assert_null(tj_call(c, &x, 1));
    assert_null(strstr(tj_last_error(), "the trace's message"));
    assert_non_null(strstr(tj_last_error(), "without a message"));
    tj_clear_error();
    tj_compiled_free(c);
}

int main(void)
{
    setenv("TJIT_CACHE", "0", 1);   /* no disk cache: every new kernel compiles */
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_blas_load_failure_is_retried),
        T(test_tm_create_with_each_string_failing),
        T(test_key_env_failure_is_retried),
        T(test_jit_init_failure_is_retried),
        T(test_compile_with_each_strdup_failing),
        T(test_scope_begin_failure),
        T(test_null_tensor_messages),
        T(test_call_leaves_no_stale_message),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
