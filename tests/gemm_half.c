/* gemm_half.c - tjit's own GEMM and conv2d in bf16 and f16 against f32 on
 * the same shapes, calls interleaved in one process (issue 18: bf16 never
 * slower than f32 on a machine without bf16 instructions; f16 through
 * F16C likewise). Per GEMM shape (P4's two linears, P7's first, 1024^3) it
 * packs B once as f32, bf16 and f16 (as a kept weight is), then times
 * tjg_gemm on f32 A and C, and on bf16 (f16) A and C with a bias (B4's and
 * H4's linears); per conv shape (P6's), tj_conv2d on f32, bf16 and f16
 * tensors; call after call in turn; prints the median CPU ms of each and
 * the ratios to f32. Built and run by `make gemm-half` (one
 * thread; arguments set the threads and the calls per path).
 *
 *     build/gemm_half [THREADS [RUNS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tjit.h>

#include "../ir/half.h"
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

enum { NP = 3 };   /* f32, bf16, f16 */
static const char *const names[NP] = {"f32", "bf16", "f16"};

/* The medians of t[p][0..runs) (sorted in place). */
static void medians(double *t[NP], int runs, double med[NP])
{
    for (int p = 0; p < NP; p++) {
        qsort(t[p], (size_t)runs, sizeof(double), cmp);
        med[p] = t[p][runs / 2];
    }
}

int main(int argc, char **argv)
{
    tj_set_num_threads(argc > 1 ? atoi(argv[1]) : 1);
    int runs = argc > 2 ? atoi(argv[2]) : 11;
    if (runs < 1 || runs > 1000)
        runs = 11;
    printf("isa %s, f16c %d, %d runs per path, median CPU ms\n", tjg_isa_name(tjg_isa_current()),
           (int)tjg_f16c(), runs);
    double *t[NP], med[NP];
    for (int p = 0; p < NP; p++)
        if (!(t[p] = malloc((size_t)runs * sizeof(double))))
            return 1;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = malloc((size_t)(m * k) * 4), *b = malloc((size_t)(k * n) * 4),
              *c = malloc((size_t)(m * n) * 4), *bias = malloc((size_t)n * 4);
        uint16_t *a16[2] = {malloc((size_t)(m * k) * 2), malloc((size_t)(m * k) * 2)},
                 *c16 = malloc((size_t)(m * n) * 2);
        if (!a || !b || !c || !bias || !a16[0] || !a16[1] || !c16)
            return 1;
        srand(1);
        for (int64_t i = 0; i < m * k; i++) {
            a[i] = (float)rand() / RAND_MAX - 0.5f;
            a16[0][i] = tjg_f32_to_bf16(a[i]);
            a16[1][i] = ir_f32_to_f16(a[i]);
        }
        for (int64_t i = 0; i < k * n; i++)
            b[i] = (float)rand() / RAND_MAX - 0.5f;
        for (int64_t j = 0; j < n; j++)
            bias[j] = 0.1f;
        tjg_packed pk[NP] = {{0}};
        if (tjg_pack_f32(&pk[0], b, n, 1, k, n) || tjg_pack_f32_as_bf16(&pk[1], b, n, 1, k, n) ||
            tjg_pack_f32_as_f16(&pk[2], b, n, 1, k, n))
            return 1;
        tjg_epilogue e[NP] = {{.bias = bias}, {.bias = bias, .out_bf16 = true},
                              {.bias = bias, .out_f16 = true}};
        for (int r = -1; r < runs; r++)
            for (int p = 0; p < NP; p++) {
                double t0 = cpu_ms();
                if (p == 0)
                    tjg_gemm(m, a, false, k, 1, &pk[0], c, n, &e[0], NULL);
                else
                    tjg_gemm(m, a16[p - 1], true, k, 1, &pk[p], c16, n, &e[p], NULL);
                if (r >= 0)
                    t[p][r] = cpu_ms() - t0;
            }
        medians(t, runs, med);
        double f = 2e-6 * (double)(m * n * k);
        printf("%5lldx%5lldx%5lld", (long long)m, (long long)n, (long long)k);
        for (int p = 0; p < NP; p++)
            printf("  %s %8.3f ms %6.1f GFLOP/s", names[p], med[p], f / med[p]);
        printf("  bf16/f32 %.3f  f16/f32 %.3f\n", med[1] / med[0], med[2] / med[0]);
        fflush(stdout);
        for (int p = 0; p < NP; p++)
            tjg_packed_free(&pk[p]);
        free(a), free(b), free(c), free(bias), free(a16[0]), free(a16[1]), free(c16);
    }
    /* P6's conv: x [8, 64, 56, 56], w [64, 64, 3, 3], stride and padding 1 */
    tj_tensor *x[NP], *w[NP];
    x[0] = tj_keep(tj_randn(TJ_F32, 4, (int64_t[]){8, 64, 56, 56}));
    w[0] = tj_keep(tj_randn(TJ_F32, 4, (int64_t[]){64, 64, 3, 3}));
    for (int p = 1; p < NP; p++) {
        x[p] = tj_keep(tj_cast(x[0], p == 1 ? TJ_BF16 : TJ_F16));
        w[p] = tj_keep(tj_cast(w[0], p == 1 ? TJ_BF16 : TJ_F16));
        if (!x[p] || !w[p])
            return 1;
    }
    static const int64_t one[2] = {1, 1};
    for (int r = -1; r < runs; r++)
        for (int p = 0; p < NP; p++) {
            double t0 = cpu_ms();
            tj_scope_begin();
            tj_conv2d(x[p], w[p], NULL, one, one, one, 1);
            tj_scope_end();
            if (r >= 0)
                t[p][r] = cpu_ms() - t0;
        }
    medians(t, runs, med);
    printf("conv 8x64x56x56 3x3  f32 %8.3f ms  bf16 %8.3f ms  f16 %8.3f ms  bf16/f32 %.3f  "
           "f16/f32 %.3f\n", med[0], med[1], med[2], med[1] / med[0], med[2] / med[0]);
    for (int p = 0; p < NP; p++)
        tj_release(x[p]), tj_release(w[p]), free(t[p]);
    return 0;
}
