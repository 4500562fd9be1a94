/* gemm_half.c - tjit's own GEMM and conv2d in bf16 against f32 on the same
 * shapes, calls interleaved in one process (issue 18: bf16 never slower
 * than f32 on a machine without bf16 instructions). Per GEMM shape (P4's
 * two linears, P7's first, 1024^3) it packs B once as f32 and as bf16 (as a
 * kept weight is), then times tjg_gemm on f32 A and C, and on bf16 A and C
 * with a bias (B4's linears); per conv shape (P6's), tj_conv2d on f32 and
 * on bf16 tensors; call after call in turn; prints the median CPU ms of
 * each and their ratio. Built and run by `make gemm-half` (one
 * thread; arguments set the threads and the calls per path).
 *
 *     build/gemm_half [THREADS [RUNS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tjit.h>

#include "../runtime/gemm.h"

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* m, n, k */
static const int64_t shapes[][3] = {
    {256, 2048, 1024}, {256, 1024, 2048}, {128, 512, 784}, {1024, 1024, 1024},
};

int main(int argc, char **argv)
{
    tj_set_num_threads(argc > 1 ? atoi(argv[1]) : 1);
    int runs = argc > 2 ? atoi(argv[2]) : 11;
    if (runs < 1 || runs > 1000)
        runs = 11;
    printf("isa %s, %d runs per path, median CPU ms\n", tjg_isa_name(tjg_isa_current()), runs);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = malloc((size_t)(m * k) * 4), *b = malloc((size_t)(k * n) * 4),
              *c = malloc((size_t)(m * n) * 4), *bias = malloc((size_t)n * 4);
        uint16_t *a16 = malloc((size_t)(m * k) * 2), *c16 = malloc((size_t)(m * n) * 2);
        double *t32 = malloc((size_t)runs * sizeof(double)),
               *t16 = malloc((size_t)runs * sizeof(double));
        if (!a || !b || !c || !bias || !a16 || !c16 || !t32 || !t16)
            return 1;
        srand(1);
        for (int64_t i = 0; i < m * k; i++) {
            a[i] = (float)rand() / RAND_MAX - 0.5f;
            a16[i] = tjg_f32_to_bf16(a[i]);
        }
        for (int64_t i = 0; i < k * n; i++)
            b[i] = (float)rand() / RAND_MAX - 0.5f;
        for (int64_t j = 0; j < n; j++)
            bias[j] = 0.1f;
        tjg_packed p32 = {0}, p16 = {0};
        if (tjg_pack_f32(&p32, b, n, 1, k, n) || tjg_pack_f32_as_bf16(&p16, b, n, 1, k, n))
            return 1;
        tjg_epilogue e32 = {.bias = bias}, e16 = {.bias = bias, .out_bf16 = true};
        for (int r = -1; r < runs; r++) {
            double t0 = cpu_ms();
            tjg_gemm(m, a, false, k, 1, &p32, c, n, &e32, NULL);
            double t1 = cpu_ms();
            tjg_gemm(m, a16, true, k, 1, &p16, c16, n, &e16, NULL);
            double t2 = cpu_ms();
            if (r >= 0)
                t32[r] = t1 - t0, t16[r] = t2 - t1;
        }
        qsort(t32, (size_t)runs, sizeof(double), cmp);
        qsort(t16, (size_t)runs, sizeof(double), cmp);
        double f = 2e-6 * (double)(m * n * k);
        printf("%5lldx%5lldx%5lld  f32 %8.3f ms %6.1f GFLOP/s  bf16 %8.3f ms %6.1f GFLOP/s  "
               "bf16/f32 %.3f\n",
               (long long)m, (long long)n, (long long)k, t32[runs / 2], f / t32[runs / 2],
               t16[runs / 2], f / t16[runs / 2], t16[runs / 2] / t32[runs / 2]);
        fflush(stdout);
        tjg_packed_free(&p32);
        tjg_packed_free(&p16);
        free(a), free(b), free(c), free(bias), free(a16), free(c16), free(t32), free(t16);
    }
    /* P6's conv: x [8, 64, 56, 56], w [64, 64, 3, 3], stride and padding 1 */
    double *t32 = malloc((size_t)runs * sizeof(double)),
           *t16 = malloc((size_t)runs * sizeof(double));
    tj_tensor *x = tj_keep(tj_randn(TJ_F32, 4, (int64_t[]){8, 64, 56, 56}));
    tj_tensor *w = tj_keep(tj_randn(TJ_F32, 4, (int64_t[]){64, 64, 3, 3}));
    tj_tensor *x16 = tj_keep(tj_cast(x, TJ_BF16)), *w16 = tj_keep(tj_cast(w, TJ_BF16));
    if (!t32 || !t16 || !x || !w || !x16 || !w16)
        return 1;
    static const int64_t one[2] = {1, 1};
    for (int r = -1; r < runs; r++) {
        double t0 = cpu_ms();
        tj_scope_begin();
        tj_conv2d(x, w, NULL, one, one, one, 1);
        tj_scope_end();
        double t1 = cpu_ms();
        tj_scope_begin();
        tj_conv2d(x16, w16, NULL, one, one, one, 1);
        tj_scope_end();
        double t2 = cpu_ms();
        if (r >= 0)
            t32[r] = t1 - t0, t16[r] = t2 - t1;
    }
    qsort(t32, (size_t)runs, sizeof(double), cmp);
    qsort(t16, (size_t)runs, sizeof(double), cmp);
    printf("conv 8x64x56x56 3x3  f32 %8.3f ms  bf16 %8.3f ms  bf16/f32 %.3f\n", t32[runs / 2],
           t16[runs / 2], t16[runs / 2] / t32[runs / 2]);
    tj_release(x), tj_release(w), tj_release(x16), tj_release(w16);
    free(t32), free(t16);
    return 0;
}
