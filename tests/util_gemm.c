/* util_gemm.c - helpers of the GEMM kernel suites (util_gemm.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>
#include <tjit.h>

#include "util_gemm.h"

float tu_frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

const tu_dims tu_gemm_shapes[] = {{1, 1, 1},     {13, 33, 7},    {12, 32, 256}, {37, 70, 300},
                                  {97, 65, 513}, {5, 100, 1030}, {3, 2, 0},     {7, 17, 1},
                                  {25, 47, 5},   {130, 200, 33}, {26, 64, 40},  {51, 64, 300},
                                  {40, 96, 9}};
const size_t tu_gemm_nshapes = sizeof tu_gemm_shapes / sizeof tu_gemm_shapes[0];

void tu_fill(float *x, int64_t n, unsigned seed)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = tu_frand(&seed);
}

void tu_gemm_check_close(const float *got, const double *want, int64_t n, double tol,
                         const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]))))
            fail_msg("%s: element %lld: %.9g, want %.9g", what, (long long)i, got[i], want[i]);
}

int tu_gemm_variants(tjg_isa *out, tjg_isa top, const char *what)
{
    unsigned f = tjg_cpu_features();
    int n = 0;
    for (int v = TJG_GENERIC; v <= (int)top; v++) {
        if (tjg_isa_select(f, tjg_isa_name((tjg_isa)v)) == (tjg_isa)v)
            out[n++] = (tjg_isa)v;
        else
            printf("#summary skipped variant %s%s: this CPU lacks its features\n",
                   tjg_isa_name((tjg_isa)v), what);
    }
    return n;
}

void tu_gemm_each(tjg_isa top, const char *what, void (*fn)(tjg_isa isa, void *ctx), void *ctx)
{
    tjg_isa vs[TJG_NISA];
    int nv = tu_gemm_variants(vs, top, what), threads = tj_num_threads();
    for (int th = 1; th <= 2; th++) {
        tj_set_num_threads(th);
        for (int v = 0; v < nv; v++) {
            tjg_isa_force(vs[v]);
            fn(vs[v], ctx);
        }
    }
    tj_set_num_threads(threads);
    tjg_isa_force(-1);
}
