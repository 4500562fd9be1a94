/* gemm_bench.c - GFLOP/s of the runtime's GEMMs (runtime/gemm.h) against
 * OpenBLAS's sgemm, per shape and thread count (make gemm-bench).
 *
 *   gemm_bench [--threads N] [--cpu-time] [--f32] [--ta] [--tb] [--peak] [--strassen]
 *              [MxNxK ...]
 *
 * (--f32: bf16, f16, u8s8 not run; --ta, --tb: A or B stored transposed, as a
 * training step's dW = dY^T X and dX = dY W^T read them, f32 only.)
 * Built against the library's internal headers (it measures internals);
 * prints one markdown row per shape: f32 OpenBLAS, f32 tjg (B packed once;
 * packed by tjg_pack_f32 before every call; packed in the call by
 * tjg_gemm_f32_raw, panel by panel; the small GEMMs' direct tiles,
 * tjg_gemm_f32_small, one thread; with --tb tjg_gemm_f32_small_dot, not
 * with --ta too), bf16 tjg (the
 * micro-kernel the CPU runs, TJIT_ISA caps it: AMX tiles from TJG_AMX_MIN_M
 * rows where the variant is amx, as for int8), f16 tjg (f16 A, B and C: F16C
 * widening where the CPU has it, else the portable kernel), int8 tjg (u8 x s8: VNNI,
 * or AVX2's vpmaddwd on full-range A, vpmaddubsw on 7-bit A).
 * Best of several timed repetitions (all columns in turn, rep by rep);
 * times are wall clock unless --cpu-time.
 *
 * --strassen prints instead OpenBLAS, tjg f32 (B packed once), tjg f32 in
 * Strassen's form (gemm_strassen.c, B's form packed once; GFLOP/s of the
 * plain product's 2mnk) and its seven half-size products alone (the same
 * 2mnk over their time), so that the two passes of sums read as the
 * difference. M, N, K even.
 *
 * --peak first prints what bounds those rates on this CPU (x86-64 only):
 * a loop of 12 independent vfmadd231ps on every thread at once (the FMA
 * peak), and the AVX2 half-panel f32 micro-kernel (tjg_f32_half_avx2) on
 * 22 slivers of 12 rows x 256 k against one 16-column half panel (A from
 * L2, B from L1, as in P4's GEMMs), one copy per thread: GFLOP/s per
 * thread (its CPU time) and the threads' sum, so a GEMM's rate reads as a
 * fraction of both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ir/half.h"
#include "../runtime/blas.h"
#include "../runtime/gemm.h"
#include "../runtime/gemm_amx.h"
#include "../runtime/rt.h"

static int cpu_time, f32_only, ta, tb, want_peak, strassen;

static double now(void)
{
    struct timespec t;
    clock_gettime(cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct shape { int64_t m, n, k; } shape;
typedef struct bufs {
    shape s;
    float *a, *b, *c;
    uint16_t *a16, *c16, *ah;
    uint8_t *aq, *aq7;
    int8_t *bq;
    float *sa, *sb;
    int32_t *zp;
    tjg_packed pf, ph, pq, pk, ps;   /* ps: Strassen's form (--strassen) */
    float *prod;                     /* --strassen: the products alone */
} bufs;

static double run(int which, bufs *x)
{
    shape s = x->s;
    /* A[i, kk] at a[i*ars + kk*acs], B[kk, j] at b[kk*brs + j*bcs] */
    int64_t ars = ta ? 1 : s.k, acs = ta ? s.m : 1, brs = tb ? 1 : s.n, bcs = tb ? s.k : 1;
    switch (which) {
    case 0: return rt_sgemm(ta, tb, s.m, s.n, s.k, 1, x->a, ta ? s.m : s.k, x->b, tb ? s.k : s.n,
                            0, x->c, s.n);
    case 1: return tjg_gemm(s.m, x->a, false, ars, acs, &x->pf, x->c, s.n, NULL, NULL);
    case 8:   /* the small GEMMs' direct tiles (with --tb: dot products, A as is) */
        if (tb)
            tjg_gemm_f32_small_dot(s.m, s.n, s.k, x->a, s.k, x->b, s.k, x->c, s.n, false);
        else
            tjg_gemm_f32_small(s.m, s.n, s.k, x->a, ars, acs, x->b, brs, x->c, s.n, false);
        return 0;
    case 6: return tjg_gemm_f32_raw(s.m, x->a, ars, acs, x->b, brs, bcs, s.k, s.n, x->c, s.n,
                                    NULL, NULL);
    case 2: {
        tjg_epilogue e = {.out_bf16 = true};
        return tjg_gemm(s.m, x->a16, true, s.k, 1, &x->ph, x->c16, s.n, &e, NULL);
    }
    case 4: {   /* B packed in the call, as an eager matmul must */
        tjg_packed p;
        if (tjg_pack_f32(&p, x->b, brs, bcs, s.k, s.n))
            return -1;
        int r = tjg_gemm(s.m, x->a, false, ars, acs, &p, x->c, s.n, NULL, NULL);
        tjg_packed_free(&p);
        return r;
    }
    case 7: {
        tjg_epilogue e = {.out_f16 = true};
        return tjg_gemm(s.m, x->ah, true, s.k, 1, &x->pk, x->c16, s.n, &e, NULL);
    }
    case 9: return tjg_gemm_strassen(s.m, x->a, ars, acs, &x->ps, x->c, s.n, NULL);
    case 10: {   /* the seven products alone, on A's quadrants (the S sums' cost aside) */
        int64_t mh = s.m / 2, kh = s.k / 2, nh = s.n / 2;
        for (int q = 0; q < 7; q++) {
            const float *a = x->a + (q & 1) * mh * ars + (q >> 1 & 1) * kh * acs;
            if (tjg_gemm(mh, a, false, ars, acs, &x->ps.parts[q], x->prod + q * mh * (nh + 16),
                         nh + 16, NULL, NULL))
                return -1;
        }
        return 0;
    }
    case 5: return tjg_gemm_u8s8(s.m, x->aq7, s.k, x->zp, x->sa, &x->pq, x->c, s.n, NULL);
    default: return tjg_gemm_u8s8(s.m, x->aq, s.k, x->zp, x->sa, &x->pq, x->c, s.n, NULL);
    }
}

/* The columns (which: 0, 1, 4, 6, 8 (not with --ta --tb), then 2, 7, 3, 5
 * unless --f32) timed in
 * turn, rep after rep, forwards then backwards, so a change in the
 * machine's load falls on all of them alike; best of each. (Before, the
 * bf16, f16 and int8 columns were timed each on its own after the f32
 * ones, with half their repetitions: under load bf16 read 5-13% below f32
 * where the calls interleaved in one process were level, docs/perf.md.) */
static void gflops_all(bufs *x, double out[9], int ncol)
{
    static const int all[9] = {0, 1, 4, 6, 8, 2, 7, 3, 5}, st[4] = {0, 1, 9, 10};
    const int *which = strassen ? st : all;
    double flop = 2.0 * (double)x->s.m * (double)x->s.n * (double)x->s.k, best[9];
    int reps = (int)(4e10 / flop) + 5;
    for (int w = 0; w < ncol; w++)
        run(which[w], x), best[w] = 1e30;
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < ncol; i++) {
            int w = r % 2 ? ncol - 1 - i : i;
            double t0 = now();
            run(which[w], x);
            double t = now() - t0;
            best[w] = t < best[w] ? t : best[w];
        }
    for (int w = 0; w < 9; w++)
        out[w] = w < ncol ? flop / best[w] * 1e-9 : 0.0;
}

/* ---- --peak -------------------------------------------------------------------------- */

static double thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum { PEAK_SLIVERS = 22, PEAK_KG = 256 };

/* rate[thread] = best GFLOP/s of probe `what` (0 FMA loop, 1 micro-kernel)
 * over 5 tries on that thread's CPU time. */
typedef struct peak_ctx {
    int what;
    double rate[64];
} peak_ctx;

static void peak_chunk(void *ctx, int64_t t0, int64_t t1)
{
    peak_ctx *pc = ctx;
    double best = 0;
    for (int64_t t = t0; t < t1; t++) {
#if defined(__x86_64__) && defined(__GNUC__)
        if (pc->what == 0) {
            long n = 20000000;
            for (int r = 0; r < 5; r++) {
                double c0 = thread_cpu();
                for (long i = 0; i < n; i++)
                    __asm__ volatile(
                        "vfmadd231ps %%ymm14, %%ymm15, %%ymm0\n\tvfmadd231ps %%ymm14, %%ymm15, %%ymm1\n\t"
                        "vfmadd231ps %%ymm14, %%ymm15, %%ymm2\n\tvfmadd231ps %%ymm14, %%ymm15, %%ymm3\n\t"
                        "vfmadd231ps %%ymm14, %%ymm15, %%ymm4\n\tvfmadd231ps %%ymm14, %%ymm15, %%ymm5\n\t"
                        "vfmadd231ps %%ymm14, %%ymm15, %%ymm6\n\tvfmadd231ps %%ymm14, %%ymm15, %%ymm7\n\t"
                        "vfmadd231ps %%ymm14, %%ymm15, %%ymm8\n\tvfmadd231ps %%ymm14, %%ymm15, %%ymm9\n\t"
                        "vfmadd231ps %%ymm14, %%ymm15, %%ymm10\n\tvfmadd231ps %%ymm14, %%ymm15, %%ymm11"
                        ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                            "xmm8", "xmm9", "xmm10", "xmm11");
                double g = (double)n * 12 * 16 / (thread_cpu() - c0) * 1e-9;
                best = g > best ? g : best;
            }
        }
#endif
        tjg_half_kernel half = tjg_f32_half_avx2();
        if (pc->what == 1 && half && tjg_isa_current() == TJG_AVX2) {
            float *a = malloc((size_t)PEAK_SLIVERS * TJG_MR * PEAK_KG * 4),
                  *b = malloc((size_t)32 * PEAK_KG * 4),
                  *c = malloc((size_t)PEAK_SLIVERS * TJG_MR * 16 * 4);
            for (int64_t j = 0; j < (int64_t)PEAK_SLIVERS * TJG_MR * PEAK_KG; j++)
                a[j] = (float)(j % 7) * 1e-3f;
            for (int64_t j = 0; j < 32 * PEAK_KG; j++)
                b[j] = (float)(j % 5) * 1e-3f;
            memset(c, 0, (size_t)PEAK_SLIVERS * TJG_MR * 16 * 4);
            for (int r = 0; r < 5; r++) {
                double c0 = thread_cpu();
                for (int i = 0; i < 200; i++)
                    for (int sl = 0; sl < PEAK_SLIVERS; sl++)
                        half(PEAK_KG, a + sl * TJG_MR * PEAK_KG, b, c + sl * TJG_MR * 16, 16,
                             true, TJG_MR);
                double g = 200.0 * PEAK_SLIVERS * TJG_MR * 16 * PEAK_KG * 2 /
                           (thread_cpu() - c0) * 1e-9;
                best = g > best ? g : best;
            }
            free(a), free(b), free(c);
        }
        pc->rate[t] = best;
    }
}

static void peak(void)
{
    int th = rt_threads() < 64 ? rt_threads() : 64;
    static const char *name[2] = {"FMA loop (12 x vfmadd231ps)",
                                  "f32 half-panel micro-kernel, A in L2, B in L1"};
    for (int w = 0; w < 2; w++) {
        peak_ctx pc = {.what = w};
        rt_parallel_for(th, 1, peak_chunk, &pc);
        double sum = 0;
        printf("peak: %s on %d threads at once, GFLOP/s per thread:", name[w], th);
        for (int t = 0; t < th; t++)
            printf(" %.1f", pc.rate[t]), sum += pc.rate[t];
        printf(" (sum %.1f)\n", sum);
    }
}

int main(int argc, char **argv)
{
    int threads = 0;
    shape shapes[16];
    int ns = 0;
    for (int i = 1; i < argc; i++) {
        long long m, n, k;
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cpu-time"))
            cpu_time = 1;
        else if (!strcmp(argv[i], "--f32"))
            f32_only = 1;
        else if (!strcmp(argv[i], "--peak"))
            want_peak = 1;
        else if (!strcmp(argv[i], "--ta"))
            ta = f32_only = 1;
        else if (!strcmp(argv[i], "--strassen"))
            strassen = f32_only = 1;
        else if (!strcmp(argv[i], "--tb"))
            tb = f32_only = 1;
        else if (ns < 16 && sscanf(argv[i], "%lldx%lldx%lld", &m, &n, &k) == 3)
            shapes[ns++] = (shape){m, n, k};
    }
    if (threads > 0)
        tj_set_num_threads(threads);
    if (!ns) {
        shapes[ns++] = (shape){256, 2048, 1024};
        shapes[ns++] = (shape){256, 1024, 2048};
        shapes[ns++] = (shape){2048, 2048, 2048};
    }
    printf("isa %s (bf16 and u8s8 on AMX tiles from %d rows: %s), %d threads, %s; OpenBLAS "
           "core %s%s%s\n", tjg_isa_name(tjg_isa_current()), TJG_AMX_MIN_M,
           tjg_amx_ops_for(TJG_BF16, TJG_AMX_MIN_M) ? "yes" : "no", rt_threads(),
           cpu_time ? "CPU time" : "wall clock", rt_blas_core(), ta ? "; A transposed" : "",
           tb ? "; B transposed" : "");
    if (want_peak)
        peak();
    if (strassen)
        printf("| M x N x K | OpenBLAS f32 | tjg f32 | tjg f32 Strassen | its 7 products alone "
               "|\n|---|---|---|---|---|\n");
    else
    printf("| M x N x K | OpenBLAS f32 | tjg f32 | tjg f32 + pack B | tjg f32 raw B | tjg f32 small | tjg bf16 | tjg f16 | tjg u8s8 | tjg u8s8 7-bit |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < ns; i++) {
        bufs x = {.s = shapes[i]};
        shape s = x.s;
        size_t ma = (size_t)(s.m * s.k), mb = (size_t)(s.k * s.n), mc = (size_t)(s.m * s.n);
        x.a = malloc(ma * 4), x.b = malloc(mb * 4), x.c = malloc(mc * 4);
        x.a16 = malloc(ma * 2), x.c16 = malloc(mc * 2), x.ah = malloc(ma * 2), x.aq = malloc(ma), x.aq7 = malloc(ma), x.bq = malloc(mb);
        x.sa = malloc((size_t)s.m * 4), x.zp = malloc((size_t)s.m * 4), x.sb = malloc((size_t)s.n * 4);
        for (size_t j = 0; j < ma; j++) {
            x.a[j] = (float)((j * 7) % 13) / 13.0f - 0.5f;
            x.a16[j] = tjg_f32_to_bf16(x.a[j]);
            x.ah[j] = ir_f32_to_f16(x.a[j]);
            x.aq[j] = (uint8_t)(j * 31);
            x.aq7[j] = x.aq[j] & 127;
        }
        for (size_t j = 0; j < mb; j++) {
            x.b[j] = (float)((j * 5) % 11) / 11.0f - 0.5f;
            x.bq[j] = (int8_t)(j * 17);
        }
        for (int64_t j = 0; j < s.m; j++)
            x.sa[j] = 0.01f, x.zp[j] = 128;
        for (int64_t j = 0; j < s.n; j++)
            x.sb[j] = 0.02f;
        tjg_pack_f32(&x.pf, x.b, tb ? 1 : s.n, tb ? s.k : 1, s.k, s.n);
        tjg_pack_f32_as_bf16(&x.ph, x.b, s.n, 1, s.k, s.n);
        tjg_pack_s8(&x.pq, x.bq, s.n, 1, s.k, s.n, x.sb);
        tjg_pack_f32_as_f16(&x.pk, x.b, s.n, 1, s.k, s.n);
        double f[9];
        if (strassen) {
            tjg_pack_f32_strassen(&x.ps, x.b, tb ? 1 : s.n, tb ? s.k : 1, s.k, s.n);
            x.prod = malloc((size_t)(7 * (s.m / 2) * (s.n / 2 + 16)) * 4);
            gflops_all(&x, f, 4);
            printf("| %lldx%lldx%lld | %.0f | %.0f | %.0f | %.0f |\n", (long long)s.m,
                   (long long)s.n, (long long)s.k, f[0], f[1], f[2], f[3]);
            tjg_packed_free(&x.ps);
            free(x.prod);
        } else {
        gflops_all(&x, f, f32_only ? (ta && tb ? 4 : 5) : 9);
        printf("| %lldx%lldx%lld | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n",
               (long long)s.m, (long long)s.n, (long long)s.k, f[0], f[1], f[2], f[3], f[4],
               f[5], f[6], f[7], f[8]);
        }
        fflush(stdout);
        tjg_packed_free(&x.pf), tjg_packed_free(&x.ph), tjg_packed_free(&x.pq), tjg_packed_free(&x.pk);
        free(x.a), free(x.b), free(x.c), free(x.a16), free(x.c16), free(x.ah), free(x.aq), free(x.aq7), free(x.bq);
        free(x.sa), free(x.zp), free(x.sb);
    }
    printf("GEMM calls on AMX tiles: %llu\n", (unsigned long long)tjg_amx_calls());
    return 0;
}
