/* driver.c - the workload of the allocation-failure sweep (scripts/check-oom.sh):
 * tensors, eager ops (OpenBLAS loads on the first matmul; a conv2d), a small model
 * compiled and called twice and compared with eager (its two linears on one weight
 * merge: passes/merge_mm.c; a scaled bias is kept across calls: frontend/keep.c),
 * a .npy saved and loaded.
 *
 * Run under tests/oom/shim.c: TJIT_OOM_FAIL_AT=n fails the n-th allocation
 * from the start of main (0: none; the count is printed at the end as
 * "allocations N"). Exit status: 0 success, 2 a clear error (the message is
 * printed), 3 an error without a message, 4 a wrong result. Everything is
 * released on every path (the kernel cache's memory layer emptied), so the
 * shim's leak report can be compared with a run where nothing fails.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tjit.h>

#include "../../codegen/cache.h"

static tj_tensor *model(void *ctx, tj_tensor *const *x, int n)
{
    (void)n;
    tj_tensor *const *w = ctx;
    tj_tensor *h = tj_gelu_tanh(tj_add(tj_linear(x[0], w[0], w[1]), tj_linear(tj_tanh(x[0]), w[0], NULL)));
    return tj_softmax(tj_mul(h, tj_mul_s(w[1], 0.5)), 1);   /* w[1] * 0.5: kept across calls */
}

static int status = 0;

/* Records the first failure: 2 with its message, 3 without one. */
static bool check(const void *p, const char *what)
{
    if (p || status)
        return p != NULL;
    const char *m = tj_last_error();
    status = m[0] ? 2 : 3;
    printf("error in %s: %s\n", what, m[0] ? m : "(no message)");
    return false;
}

static bool same(tj_tensor *a, tj_tensor *b, double tol)
{
    const float *p = tj_data(a), *q = tj_data(b);
    if (!p || !q)
        return false;
    for (int64_t i = 0; i < tj_numel(a); i++)
        if (!(fabs((double)p[i] - (double)q[i]) <= tol * (1 + fabs((double)q[i]))))
            return false;
    return true;
}

static void run(const char *npy)
{
    int64_t sx[] = {8, 48}, sw[] = {40, 48}, sb[] = {40};
    tj_tensor *x = tj_rand(TJ_F32, 2, sx), *w = tj_rand(TJ_F32, 2, sw), *b = tj_full(TJ_F32, 1, sb, 0.25);
    if (!check(x, "rand") || !check(w, "rand") || !check(b, "full"))
        return;
    /* eager */
    tj_tensor *e = model((tj_tensor *[]){w, b}, &x, 1);
    tj_tensor *s = tj_sum(tj_add(tj_matmul(x, tj_transpose(w, 0, 1)), b), NULL, 0, false);
    if (!check(e, "eager model") || !check(s, "eager ops"))
        return;
    /* a conv2d the direct kernel runs (its phase planes, packed weights) */
    int64_t cx[] = {1, 8, 16, 16}, cw[] = {8, 8, 3, 3}, one[] = {1, 1};
    tj_tensor *cv = tj_conv2d(tj_rand(TJ_F32, 4, cx), tj_rand(TJ_F32, 4, cw), NULL, one, one, one, 1);
    if (!check(cv, "eager conv"))
        return;
    /* compiled, twice */
    tj_compiled *c = tj_compile(model, (tj_tensor *[]){w, b}, NULL);
    if (!check(c, "tj_compile"))
        return;
    for (int k = 0; k < 2 && !status; k++) {
        tj_tensor *y = tj_call(c, &x, 1);
        if (check(y, "tj_call") && !same(y, e, 1e-5)) {
            printf("wrong result: compiled differs from eager\n");
            status = 4;
        }
    }
    tj_compiled_free(c);
    if (status)
        return;
    /* .npy */
    if (tj_save_npy(e, npy) != 0) {
        check(NULL, "tj_save_npy");
        return;
    }
    tj_tensor *l = tj_load_npy(npy);
    if (check(l, "tj_load_npy") && !same(l, e, 0)) {
        printf("wrong result: the loaded .npy differs\n");
        status = 4;
    }
}

int main(void)
{
    void (*arm)(long) = (void (*)(long))dlsym(RTLD_DEFAULT, "tj_oom_arm");
    long (*disarm)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "tj_oom_disarm");
    void (*report)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "tj_oom_report");
    if (!arm || !disarm || !report) {
        fprintf(stderr, "run me with LD_PRELOAD=liboomshim.so (scripts/check-oom.sh)\n");
        return 1;
    }
    const char *at = getenv("TJIT_OOM_FAIL_AT");
    char npy[64];
    snprintf(npy, sizeof npy, "/tmp/tjit_oom_%ld.npy", (long)getpid());
    setvbuf(stdout, NULL, _IONBF, 0);   /* no stdio buffer to allocate */
    arm(at ? atol(at) : 0);
    tj_scope_begin();
    run(npy);
    tj_scope_end();
    tj_alloc_trim();
    cg_cache_set_mem_limit(cg_cache_global(), 1);   /* the kernel cache's memory layer, emptied */
    long n = disarm();
    unlink(npy);
    report();
    printf("allocations %ld\n", n);
    return status;
}
