/* util_gemm.c - helpers of the GEMM kernel suites (util_gemm.h). */
#include <stdio.h>

#include <tjit.h>

#include "util_gemm.h"

float tu_frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
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
