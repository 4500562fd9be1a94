/* suite.c - the cases of the benchmark suite (see suite.h and
 * shared/bench/SUITE.md): setup, model and teardown of P1-P7, written over
 * the public API the way a user would write them. All float32. */
#include <math.h>
#include <strings.h>

#include "suite.h"

/* ---- making inputs and weights ------------------------------------------- */

/* Keeps t (made in setup's scope) in args; a NULL t is remembered as a
 * failure by setup_done(). */
static tj_tensor *add_arg(bench_args *a, tj_tensor *t)
{
    if (a->n < BENCH_MAX_ARGS)
        a->t[a->n++] = t ? tj_keep(t) : NULL;
    return t;
}

static void input(bench_args *a, int ndim, const int64_t *shape)
{
    add_arg(a, tj_randn(TJ_F32, ndim, shape));
    a->ninputs = a->n;
}

/* Random normal scaled by 1/sqrt(fan_in). */
static void weight(bench_args *a, int ndim, const int64_t *shape, double fan_in)
{
    add_arg(a, tj_mul_s(tj_randn(TJ_F32, ndim, shape), 1.0 / sqrt(fan_in)));
}

/* Running variance of a batch norm: U[0.5, 1.5), away from zero. */
static void variance(bench_args *a, int64_t c)
{
    add_arg(a, tj_add_s(tj_rand(TJ_F32, 1, (int64_t[]){c}), 0.5));
}

static int setup_done(const bench_args *a)
{
    for (int k = 0; k < a->n; k++)
        if (!a->t[k])
            return -1;
    return a->n > 0 ? 0 : -1;
}

/* The weights of a case, from a model's ctx. */
static tj_tensor *const *weights(void *ctx)
{
    const bench_args *a = ctx;
    return a->t + a->ninputs;
}

static void teardown(bench_args *a)
{
    for (int k = 0; k < a->n; k++)
        tj_release(a->t[k]);
    a->n = a->ninputs = 0;
}

/* ---- P1 pointwise: y = tanh(x) * sigmoid(1.702 x) + 0.5 x ----------------- */
static int p1_setup(bench_args *a)
{
    input(a, 1, (int64_t[]){4194304});
    return setup_done(a);
}

static tj_tensor *p1_run(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *x = in[0];
    return tj_add(tj_mul(tj_tanh(x), tj_sigmoid(tj_mul_s(x, 1.702))), tj_mul_s(x, 0.5));
}

/* ---- P2 softmax over the last dim ---------------------------------------- */
static int p2_setup(bench_args *a)
{
    input(a, 2, (int64_t[]){2048, 1024});
    return setup_done(a);
}

static tj_tensor *p2_run(void *ctx, tj_tensor *const *in, int n)
{
    return tj_softmax(in[0], -1);
}

/* ---- P3 layer norm over the last dim: input x; weights w, b ---------------- */
static int p3_setup(bench_args *a)
{
    input(a, 2, (int64_t[]){4096, 1024});
    weight(a, 1, (int64_t[]){1024}, 1);
    weight(a, 1, (int64_t[]){1024}, 1);
    return setup_done(a);
}

static tj_tensor *p3_run(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *const *w = weights(ctx);
    return tj_layer_norm(in[0], 1, w[0], w[1], 1e-5);
}

/* ---- P4 mlp: input x; weights w1, b1, w2, b2, ln_w, ln_b ------------------- */
static int p4_setup(bench_args *a)
{
    input(a, 2, (int64_t[]){256, 1024});
    weight(a, 2, (int64_t[]){2048, 1024}, 1024);   /* linear weights are [out, in] */
    weight(a, 1, (int64_t[]){2048}, 1024);
    weight(a, 2, (int64_t[]){1024, 2048}, 2048);
    weight(a, 1, (int64_t[]){1024}, 2048);
    weight(a, 1, (int64_t[]){1024}, 1);
    weight(a, 1, (int64_t[]){1024}, 1);
    return setup_done(a);
}

static tj_tensor *p4_run(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *const *w = weights(ctx), *x = in[0];
    tj_tensor *h = tj_gelu_tanh(tj_linear(x, w[0], w[1]));
    return tj_layer_norm(tj_add(tj_linear(h, w[2], w[3]), x), 1, w[4], w[5], 1e-5);
}

/* ---- P5 attention: q, k, v; causal, scale 1/8 ----------------------------- */
static int p5_setup(bench_args *a)
{
    for (int k = 0; k < 3; k++)
        input(a, 4, (int64_t[]){4, 8, 256, 64});
    return setup_done(a);
}

static tj_tensor *p5_run(void *ctx, tj_tensor *const *in, int n)
{
    return tj_scaled_dot_product_attention(in[0], in[1], in[2], NULL, true, 0.125);
}

/* ---- P6 conv: ResNet basic block, eval mode -------------------------------
 * input x; weights per conv: weight, bn running mean, running var, bn weight, bn bias */
static void conv_bn_weights(bench_args *a)
{
    weight(a, 4, (int64_t[]){64, 64, 3, 3}, 64 * 3 * 3);
    weight(a, 1, (int64_t[]){64}, 1);
    variance(a, 64);
    weight(a, 1, (int64_t[]){64}, 1);
    weight(a, 1, (int64_t[]){64}, 1);
}

static int p6_setup(bench_args *a)
{
    input(a, 4, (int64_t[]){8, 64, 56, 56});
    conv_bn_weights(a);
    conv_bn_weights(a);
    return setup_done(a);
}

/* bn(conv3x3(x)): stride 1, pad 1, no bias; w = weight, mean, var, gamma, beta. */
static tj_tensor *conv_bn(tj_tensor *x, tj_tensor *const *w)
{
    static const int64_t one[2] = {1, 1};
    tj_tensor *y = tj_conv2d(x, w[0], NULL, one, one, one, 1);
    return tj_batch_norm(y, w[1], w[2], w[3], w[4], 1e-5);
}

static tj_tensor *p6_run(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *const *w = weights(ctx), *x = in[0];
    tj_tensor *h = tj_relu(conv_bn(x, w));
    return tj_relu(tj_add(conv_bn(h, w + 5), x));
}

/* ---- P7 train_mlp: inputs x, labels; weights w1, b1, w2, b2, w3, b3 --------
 * One training step: forward, cross-entropy, backward, SGD (lr 0.01). */
static int p7_setup(bench_args *a)
{
    input(a, 2, (int64_t[]){128, 784});
    add_arg(a, tj_cast(tj_floor(tj_mul_s(tj_rand(TJ_F32, 1, (int64_t[]){128}), 10)), TJ_I64));
    a->ninputs = a->n;
    weight(a, 2, (int64_t[]){512, 784}, 784);
    weight(a, 1, (int64_t[]){512}, 784);
    weight(a, 2, (int64_t[]){512, 512}, 512);
    weight(a, 1, (int64_t[]){512}, 512);
    weight(a, 2, (int64_t[]){10, 512}, 512);
    weight(a, 1, (int64_t[]){10}, 512);
    for (int k = a->ninputs; k < a->n; k++)
        if (a->t[k] && tj_requires_grad(a->t[k], true) != 0)
            return -1;
    return setup_done(a);
}

static tj_tensor *p7_run(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *const *w = weights(ctx);
    for (int k = 0; k < 6; k++)
        tj_zero_grad(w[k]);
    tj_tensor *h = tj_relu(tj_linear(in[0], w[0], w[1]));
    h = tj_relu(tj_linear(h, w[2], w[3]));
    tj_tensor *loss = tj_cross_entropy(tj_linear(h, w[4], w[5]), in[1]);
    if (tj_backward(loss) != 0)
        return NULL;
    int rc = 0;
    tj_no_grad_begin();
    for (int k = 0; k < 6 && rc == 0; k++)
        rc = tj_copy_(w[k], tj_sub(w[k], tj_mul_s(tj_grad(w[k]), 0.01)));
    tj_no_grad_end();
    return rc == 0 ? tj_detach(loss) : NULL;
}

/* ---- the table ------------------------------------------------------------ */
const bench_case bench_cases[] = {
    {"P1", "pointwise", "x f32[4194304]; tanh(x) * sigmoid(1.702*x) + 0.5*x", p1_setup, p1_run,
     teardown, NULL, false},
    {"P2", "softmax", "x f32[2048,1024]; softmax over the last dim", p2_setup, p2_run, teardown,
     NULL, false},
    {"P3", "layernorm", "x f32[4096,1024], w,b f32[1024]; layer_norm, eps 1e-5", p3_setup, p3_run,
     teardown, NULL, false},
    {"P4", "mlp", "x f32[256,1024]; layer_norm(linear(gelu_tanh(linear(x))) + x), 1024-2048-1024",
     p4_setup, p4_run, teardown, NULL, false},
    {"P5", "attention", "q,k,v f32[4,8,256,64]; causal sdpa, scale 1/8", p5_setup, p5_run,
     teardown, NULL, false},
    {"P6", "conv", "x f32[8,64,56,56]; ResNet basic block (conv3x3 64->64, bn, relu), eval",
     p6_setup, p6_run, teardown, NULL, false},
    {"P7", "train_mlp", "x f32[128,784]; MLP 784-512-512-10, cross-entropy, one SGD step",
     p7_setup, p7_run, teardown, NULL, true},
};
const int bench_ncases = (int)(sizeof bench_cases / sizeof *bench_cases);

const bench_case *bench_find(const char *s)
{
    for (int k = 0; k < bench_ncases; k++)
        if (!strcasecmp(s, bench_cases[k].id) || !strcasecmp(s, bench_cases[k].name))
            return &bench_cases[k];
    return NULL;
}
