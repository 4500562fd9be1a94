/* conv_shapes.c - conv2d per shape class on each of tjit's f32 kernels: the
 * measurement behind the choice in runtime/k_conv_direct.c (docs/perf.md,
 * Convolution). For each shape it times tj_conv2d with TJIT_CONV=gemm (the
 * OpenBLAS paths), direct (the grid kernel), rows (the row kernel), wino
 * and wino4 (Winograd F(2x2, 3x3) and F(4x4, 3x3) where the CPU has them
 * and the shape is 3x3 stride 1, else the grid kernel again) and unset (the
 * rule's choice): the best of RUNS calls (default 5) by the process's CPU
 * time, and GFLOP/s; the paths take turns call by call, so a change in the
 * machine's load falls on all of them. Built and run by `make bench-conv`
 * (one thread; arguments set the threads, the calls per path and the first
 * shape to run, counting from 0).
 *
 *     build/bench/conv_shapes [THREADS [RUNS [FIRST]]]
 *     build/bench/conv_shapes err
 *
 * err: the error of each f32 path against the f64 conv (the GEMM paths on
 * f64 copies) on the 3x3 stride-1 shapes, batch 1, P6-like data (input
 * N(0,1), weights N(0,1)/sqrt(fan_in), no bias): the max abs error, it over
 * the output's rms and over max(1, |ref|) (the suite's check).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tjit.h>

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* batch, channels, height = width, outputs, kernel, stride, padding, groups */
static const int shapes[][8] = {
    {8, 64, 56, 64, 3, 1, 1, 1},    {8, 128, 28, 128, 3, 1, 1, 1}, {8, 256, 14, 256, 3, 1, 1, 1},
    {8, 512, 7, 512, 3, 1, 1, 1},   {8, 64, 56, 256, 1, 1, 0, 1},  {8, 256, 56, 64, 1, 1, 0, 1},
    {8, 128, 28, 256, 1, 2, 0, 1},  {8, 3, 224, 64, 7, 2, 3, 1},   {8, 64, 56, 128, 3, 2, 1, 1},
    {8, 128, 28, 128, 3, 1, 1, 128}, {8, 128, 28, 128, 3, 2, 1, 128}, {8, 32, 28, 32, 5, 1, 2, 1},
    {8, 128, 28, 128, 3, 1, 1, 8},  {1, 64, 56, 64, 3, 1, 1, 1},   {8, 32, 14, 32, 3, 1, 1, 1},
    {8, 512, 7, 2048, 1, 1, 0, 1},
    /* the ResNet 3x3 shapes at batch 1, padding 0, few channels */
    {1, 128, 28, 128, 3, 1, 1, 1},  {1, 256, 14, 256, 3, 1, 1, 1}, {1, 512, 7, 512, 3, 1, 1, 1},
    {8, 64, 56, 64, 3, 1, 0, 1},    {8, 16, 28, 16, 3, 1, 1, 1},
    /* P11's and P12's convs as their compiled regions call them: an image at a time */
    {1, 3, 224, 64, 7, 2, 3, 1},    {1, 1, 28, 32, 3, 1, 1, 1},    {1, 32, 14, 64, 3, 1, 1, 1},
};

enum { NSHAPE = sizeof shapes / sizeof *shapes };

/* The err mode (above). */
static int errors(void)
{
    static const char *const paths[] = {"gemm", "direct", "wino", "wino4"};
    tj_manual_seed(6);
    for (size_t k = 0; k < NSHAPE; k++) {
        const int *s = shapes[k];
        if (s[4] != 3 || s[5] != 1 || s[7] != 1 || s[0] != 1)
            continue;
        tj_scope_begin();
        tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){1, s[1], s[2], s[2]});
        tj_tensor *w = tj_randn(TJ_F32, 4, (int64_t[]){s[3], s[1], 3, 3});
        float *wd = tj_data(w);
        for (int64_t i = 0; i < tj_numel(w); i++)
            wd[i] /= sqrtf((float)(s[1] * 9));
        int64_t st[2] = {1, 1}, pd[2] = {s[6], s[6]}, dl[2] = {1, 1};
        setenv("TJIT_CONV", "gemm", 1);
        tj_tensor *ref = tj_conv2d(tj_cast(x, TJ_F64), tj_cast(w, TJ_F64), NULL, st, pd, dl, 1);
        if (!ref)
            return fprintf(stderr, "conv_shapes: %s\n", tj_last_error()), 1;
        const double *r = tj_data(ref);
        double rms = 0;
        for (int64_t i = 0; i < tj_numel(ref); i++)
            rms += r[i] * r[i];
        rms = sqrt(rms / (double)tj_numel(ref));
        printf("c%-3d %3dx%-3d p%d rms %.3f:", s[1], s[2], s[2], s[6], rms);
        for (int p = 0; p < 4; p++) {
            setenv("TJIT_CONV", paths[p], 1);
            tj_tensor *y = tj_conv2d(x, w, NULL, st, pd, dl, 1);
            if (!y)
                return fprintf(stderr, "conv_shapes: %s\n", tj_last_error()), 1;
            const float *v = tj_data(y);
            double ea = 0, es = 0;
            for (int64_t i = 0; i < tj_numel(y); i++) {
                double e = fabs((double)v[i] - r[i]);
                ea = e > ea ? e : ea;
                e /= fmax(1.0, fabs(r[i]));
                es = e > es ? e : es;
            }
            printf("  %s %.2e (%.2e rms, %.2e suite)", paths[p], ea, ea / rms, es);
        }
        printf("\n");
        tj_scope_end();
    }
    unsetenv("TJIT_CONV");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "err"))
        return errors();
    tj_set_num_threads(argc > 1 ? atoi(argv[1]) : 1);
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    static const char *const paths[] = {"gemm", "direct", "rows", "wino", "wino4", NULL};
    enum { NPATH = sizeof paths / sizeof *paths };
    for (size_t k = argc > 3 ? (size_t)atoi(argv[3]) : 0; k < NSHAPE; k++) {
        const int *s = shapes[k];
        tj_scope_begin();
        tj_tensor *x = tj_randn(TJ_F32, 4, (int64_t[]){s[0], s[1], s[2], s[2]});
        tj_tensor *w = tj_randn(TJ_F32, 4, (int64_t[]){s[3], s[1] / s[7], s[4], s[4]});
        int64_t st[2] = {s[5], s[5]}, pd[2] = {s[6], s[6]}, dl[2] = {1, 1};
        int64_t oh = (s[2] + 2 * s[6] - s[4]) / s[5] + 1;
        double gf = 2.0 * s[0] * s[3] * oh * oh * (s[1] / s[7]) * s[4] * s[4] / 1e9;
        printf("n%d c%-3d %3dx%-3d o%-4d k%d s%d g%-3d %6.3f GFLOP:", s[0], s[1], s[2], s[2],
               s[3], s[4], s[5], s[7], gf);
        double best[NPATH];
        for (int p = 0; p < NPATH; p++)
            best[p] = 1e9;
        for (int r = 0; r < runs; r++)
            for (int p = 0; p < NPATH; p++) {
                if (paths[p])
                    setenv("TJIT_CONV", paths[p], 1);
                else
                    unsetenv("TJIT_CONV");
                tj_scope_begin();
                double t0 = cpu_s();
                tj_tensor *y = tj_conv2d(x, w, NULL, st, pd, dl, s[7]);
                double t = cpu_s() - t0;
                if (!y) {
                    fprintf(stderr, "conv_shapes: %s\n", tj_last_error());
                    return 1;
                }
                tj_scope_end();
                best[p] = t < best[p] ? t : best[p];
            }
        for (int p = 0; p < NPATH; p++)
            printf("  %s %7.2f ms (%5.1f GFLOP/s)", paths[p] ? paths[p] : "rule", best[p] * 1e3,
                   gf / best[p]);
        printf("\n");
        tj_scope_end();
    }
    return 0;
}
