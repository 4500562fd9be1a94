/* qstatic_bench.c - static post-training quantization (tj_quantize_static)
 * of a small convnet, for docs/perf.md: its accuracy against f32 (top-1
 * agreement on a fixed synthetic dataset) and its speed compiled (f32 vs
 * int8: conv2d and linear folded into qconv2d/qlinear).
 *
 *   make build/examples/qstatic_bench && build/examples/qstatic_bench [batches] [iters]
 *
 * The net: conv 3->32 3x3 pad 1, relu, conv 32->64 3x3 stride 2, relu,
 * conv 64->64 3x3 pad 1, relu, global average pool, linear 64->10; random
 * weights (He scaled), inputs N(0, 1) 8x3x32x32, seeded. Calibration: 8
 * batches; evaluation: other batches. Prints CPU time per call (this
 * process, all threads; TJIT_NUM_THREADS=1 for one thread). A benchmark,
 * not a test.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tjit.h>

typedef struct net {
    tj_tensor *w[4], *b[4];
    tj_qstatic *q;   /* NULL: f32 */
} net;

static tj_tensor *act(const net *n, int id, tj_tensor *x) { return n->q ? tj_qstatic_act(n->q, id, x) : x; }
static tj_tensor *wt(const net *n, int id) { return n->q ? tj_qstatic_weight(n->q, id, n->w[id]) : n->w[id]; }

static tj_tensor *conv(const net *n, int id, tj_tensor *x, int64_t stride, int64_t pad)
{
    return tj_relu(tj_conv2d(act(n, id, x), wt(n, id), n->b[id], (int64_t[]){stride, stride},
                             (int64_t[]){pad, pad}, (int64_t[]){1, 1}, 1));
}

static tj_tensor *model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    const net *n = ctx;
    tj_tensor *x = conv(n, 2, conv(n, 1, conv(n, 0, args[0], 1, 1), 2, 0), 1, 1);
    x = tj_mean(x, (int[]){2, 3}, 2, false);
    return tj_linear(act(n, 3, x), wt(n, 3), n->b[3]);
}

static tj_tensor *batch(int i)
{
    tj_manual_seed(1000 + (uint64_t)i);
    return tj_randn(TJ_F32, 4, (int64_t[]){8, 3, 32, 32});
}

static int calib(void *ctx, int i, tj_tensor **in)
{
    (void)ctx;
    if (i >= 8)
        return 0;
    in[0] = batch(i);
    return 1;
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static double time_calls(tj_compiled *c, tj_tensor *x, int iters)
{
    for (int w = 0; w < 2; w++)
        tj_release(tj_call(c, &x, 1));
    double t0 = cpu_ms();
    for (int i = 0; i < iters; i++)
        tj_release(tj_call(c, &x, 1));
    return (cpu_ms() - t0) / iters;
}

static int argmax(const float *p) { int b = 0; for (int j = 1; j < 10; j++) b = p[j] > p[b] ? j : b; return b; }

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 32, iters = argc > 2 ? atoi(argv[2]) : 20;
    tj_manual_seed(7);
    static const int64_t ws[4][4] = {{32, 3, 3, 3}, {64, 32, 3, 3}, {64, 64, 3, 3}, {10, 64, 1, 1}};
    net f = {0};
    for (int k = 0; k < 4; k++) {
        int nd = k == 3 ? 2 : 4;
        double fan = (double)(ws[k][1] * ws[k][2] * ws[k][3]);
        f.w[k] = tj_keep(tj_mul_s(tj_randn(TJ_F32, nd, ws[k]), sqrt(2.0 / fan)));
        f.b[k] = tj_keep(tj_mul_s(tj_randn(TJ_F32, 1, ws[k]), 0.05));
    }
    net qn = f;
    qn.q = tj_qstatic_new();
    tj_scope_begin();
    if (tj_quantize_static(qn.q, model, &qn, calib, NULL)) {
        fprintf(stderr, "qstatic_bench: %s\n", tj_last_error());
        return 1;
    }
    tj_compiled *cf = tj_compile(model, &f, NULL), *cq = tj_compile(model, &qn, NULL);
    int agree = 0, total = 0;
    double maxdiff = 0;
    for (int i = 100; i < 100 + batches; i++) {
        tj_scope_begin();
        tj_tensor *x = batch(i), *yf = tj_call(cf, &x, 1), *yq = tj_call(cq, &x, 1);
        if (!yf || !yq) {
            fprintf(stderr, "qstatic_bench: %s\n", tj_last_error());
            return 1;
        }
        const float *pf = tj_data(yf), *pq = tj_data(yq);
        for (int r = 0; r < 8; r++, total++) {
            agree += argmax(pf + r * 10) == argmax(pq + r * 10);
            for (int j = 0; j < 10; j++)
                maxdiff = fmax(maxdiff, fabs(pf[r * 10 + j] - pq[r * 10 + j]));
        }
        tj_scope_end();
    }
    tj_tensor *x = batch(0);
    double tf = time_calls(cf, x, iters), tq = time_calls(cq, x, iters);
    printf("qstatic_bench: top-1 agreement int8 vs f32 %d of %d (%.1f%%), max |logit diff| %.4f\n",
           agree, total, 100.0 * agree / total, maxdiff);
    printf("qstatic_bench: compiled f32 %.3f ms, int8 %.3f ms CPU per call (8x3x32x32; %d threads)\n",
           tf, tq, tj_num_threads());
    tj_compiled_free(cf);
    tj_compiled_free(cq);
    tj_scope_end();
    tj_qstatic_free(qn.q);
    for (int k = 0; k < 4; k++)
        tj_release(f.w[k]), tj_release(f.b[k]);
    return 0;
}
