/* suite.c - the cases of the benchmark suite (see suite.h and
 * shared/bench/SUITE.md): setup, model and teardown of P1-P7, written over
 * the public API the way a user would write them. All float32 but the bf16
 * variants B1 and B4, the f16 variant H4, the autocast variants A4 and A6 and the int8 Q4. P9 and P10 are ours: small ops and small GEMMs, and the
 * per-call overhead; P11 and P12 too: convolutions followed by pooling. */
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
    tj_optimizer_free(a->opt);
    a->opt = NULL;
}

/* Training cases: every weight requires grad. */
static int trainable(bench_args *a)
{
    for (int k = a->ninputs; k < a->n; k++)
        if (a->t[k] && tj_requires_grad(a->t[k], true) != 0)
            return -1;
    return 0;
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
    if (trainable(a) != 0)
        return -1;
    return setup_done(a);
}

static tj_tensor *p7_loss(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *const *w = weights(ctx);
    tj_tensor *h = tj_relu(tj_linear(in[0], w[0], w[1]));
    h = tj_relu(tj_linear(h, w[2], w[3]));
    return tj_cross_entropy(tj_linear(h, w[4], w[5]), in[1]);
}

static tj_tensor *p7_run(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *const *w = weights(ctx);
    for (int k = 0; k < 6; k++)
        tj_zero_grad(w[k]);
    tj_tensor *loss = p7_loss(ctx, in, n);
    if (tj_backward(loss) != 0)
        return NULL;
    int rc = 0;
    tj_no_grad_begin();
    for (int k = 0; k < 6 && rc == 0; k++)
        rc = tj_copy_(w[k], tj_sub(w[k], tj_mul_s(tj_grad(w[k]), 0.01)));
    tj_no_grad_end();
    return rc == 0 ? tj_detach(loss) : NULL;
}

/* ---- P8 train_block: a pre-norm transformer block, one Adam step ----------
 * inputs x, target [16,64,128]; weights ln1 w, b; qkv w [384,128], b; out w
 * [128,128], b; ln2 w, b; fc1 w [512,128], b; fc2 w [128,512], b. 4 heads,
 * causal attention, gelu (tanh), loss mean((block(x) - target)^2), Adam 1e-3. */
enum { P8_B = 16, P8_L = 64, P8_D = 128, P8_H = 4, P8_F = 512 };

static void norm_weights(bench_args *a)
{
    add_arg(a, tj_ones(TJ_F32, 1, (int64_t[]){P8_D}));
    add_arg(a, tj_zeros(TJ_F32, 1, (int64_t[]){P8_D}));
}

static void linear_weights(bench_args *a, int64_t out, int64_t in)
{
    weight(a, 2, (int64_t[]){out, in}, (double)in);
    weight(a, 1, (int64_t[]){out}, (double)in);
}

static int p8_setup(bench_args *a)
{
    input(a, 3, (int64_t[]){P8_B, P8_L, P8_D});
    input(a, 3, (int64_t[]){P8_B, P8_L, P8_D});
    norm_weights(a);
    linear_weights(a, 3 * P8_D, P8_D);
    linear_weights(a, P8_D, P8_D);
    norm_weights(a);
    linear_weights(a, P8_F, P8_D);
    linear_weights(a, P8_D, P8_F);
    if (setup_done(a) != 0 || trainable(a) != 0)
        return -1;
    a->opt = tj_adam(a->t + a->ninputs, a->n - a->ninputs,
                     &(tj_adam_options){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
    return a->opt ? 0 : -1;
}

/* [B,L,D] slice k of qkv as heads [B,H,L,D/H] */
static tj_tensor *heads(tj_tensor *qkv, int k)
{
    tj_tensor *t = tj_slice(qkv, 2, k * P8_D, (k + 1) * P8_D, 1);
    t = tj_reshape(t, 4, (int64_t[]){-1, P8_L, P8_H, P8_D / P8_H});   /* any batch (benchmarks/dist) */
    return tj_permute(t, (int[]){0, 2, 1, 3});
}

static tj_tensor *p8_block(tj_tensor *x, tj_tensor *const *w)
{
    tj_tensor *qkv = tj_linear(tj_layer_norm(x, 1, w[0], w[1], 1e-5), w[2], w[3]);
    tj_tensor *att = tj_scaled_dot_product_attention(heads(qkv, 0), heads(qkv, 1), heads(qkv, 2),
                                                     NULL, true, 0);
    att = tj_reshape(tj_permute(att, (int[]){0, 2, 1, 3}), 3, (int64_t[]){-1, P8_L, P8_D});
    tj_tensor *y = tj_add(x, tj_linear(att, w[4], w[5]));
    tj_tensor *h = tj_gelu_tanh(tj_linear(tj_layer_norm(y, 1, w[6], w[7], 1e-5), w[8], w[9]));
    return tj_add(y, tj_linear(h, w[10], w[11]));
}

static tj_tensor *p8_loss(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *d = tj_sub(p8_block(in[0], weights(ctx)), in[1]);
    return tj_mean(tj_mul(d, d), NULL, 0, false);
}

static tj_tensor *p8_run(void *ctx, tj_tensor *const *in, int n)
{
    bench_args *a = ctx;
    tj_optimizer_zero_grad(a->opt);
    tj_tensor *loss = p8_loss(ctx, in, n);
    if (tj_backward(loss) != 0 || tj_optimizer_step(a->opt) != 0)
        return NULL;
    return tj_detach(loss);
}

/* ---- bf16 variants: B1 = P1, B4 = P4 with inputs and weights in bf16 --------
 * (computed in f32, rounded to bf16 per op; the linears on tjit's bf16
 * GEMM); H4 = P4 in f16 likewise (the linears on its f16 GEMM, F16C). The
 * result is cast to f32 for the runner's comparison. */
static int to_half(bench_args *a, tj_dtype dt)
{
    for (int k = 0; k < a->n; k++) {
        tj_tensor *h = a->t[k] ? tj_cast(a->t[k], dt) : NULL;
        tj_release(a->t[k]);
        a->t[k] = h ? tj_keep(h) : NULL;
    }
    return setup_done(a);
}

static int b1_setup(bench_args *a) { return p1_setup(a) ? -1 : to_half(a, TJ_BF16); }
static int b4_setup(bench_args *a) { return p4_setup(a) ? -1 : to_half(a, TJ_BF16); }
static int h4_setup(bench_args *a) { return p4_setup(a) ? -1 : to_half(a, TJ_F16); }

static tj_tensor *b1_run(void *ctx, tj_tensor *const *in, int n)
{
    return tj_cast(p1_run(ctx, in, n), TJ_F32);
}

static tj_tensor *b4_run(void *ctx, tj_tensor *const *in, int n)
{
    return tj_cast(p4_run(ctx, in, n), TJ_F32);
}

/* ---- low precision as PyTorch users get it ----------------------------------
 * A4, A6 = P4, P6 with f32 weights under tj_autocast(TJ_BF16) (PyTorch:
 * torch.autocast("cpu", torch.bfloat16)): linear and conv2d run in bf16, the
 * norms in f32. Q4 = P4 compiled with quantize_dynamic (int8 weights per
 * channel, rows quantized per call; PyTorch: torch.ao's quantize_dynamic);
 * its eager column is P4's f32 eager. */
static tj_tensor *autocast_bf16(bench_model_fn run, void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *y = tj_autocast(TJ_BF16) == 0 ? run(ctx, in, n) : NULL;
    tj_autocast_end();
    return tj_cast(y, TJ_F32);
}

static tj_tensor *a4_run(void *ctx, tj_tensor *const *in, int n)
{
    return autocast_bf16(p4_run, ctx, in, n);
}

static tj_tensor *a6_run(void *ctx, tj_tensor *const *in, int n)
{
    return autocast_bf16(p6_run, ctx, in, n);
}

/* What a case's compiled result may differ from its eager one by, and how it
 * compiles. bf16: eager and compiled differ by a bf16 ulp (2^-8 relative)
 * where their f32 sums, in another order, round to either side. */
static const struct {
    const char *id;
    double tol;
    bool int8;
} case_options[] = {{"B1", 1e-2, false}, {"B4", 3e-2, false}, {"H4", 3e-2, false},
                    {"A4", 3e-2, false},
                    {"A6", 3e-2, false}, {"Q4", BENCH_TOLERANCE_INT8, true}};

static int case_option(const bench_case *c)
{
    for (int k = 0; k < (int)(sizeof case_options / sizeof *case_options); k++)
        if (!strcasecmp(c->id, case_options[k].id))
            return k;
    return -1;
}

double bench_tolerance(const bench_case *c)
{
    int k = case_option(c);
    return k < 0 ? 0 : case_options[k].tol;
}

bool bench_int8(const bench_case *c)
{
    int k = case_option(c);
    return k >= 0 && case_options[k].int8;
}

/* ---- P9 rnn: an unrolled LSTM (many small ops and small GEMMs) -------------
 * input x [T=8, 64, 256]; weights w_ih [1024,256], b_ih, w_hh [1024,256],
 * b_hh (torch.nn.LSTMCell's); h, c start at zero; the result is h after T. */
#define P9_T 8
#define P9_B 64
#define P9_H 256

static int p9_setup(bench_args *a)
{
    input(a, 3, (int64_t[]){P9_T, P9_B, P9_H});
    weight(a, 2, (int64_t[]){4 * P9_H, P9_H}, P9_H);
    weight(a, 1, (int64_t[]){4 * P9_H}, P9_H);
    weight(a, 2, (int64_t[]){4 * P9_H, P9_H}, P9_H);
    weight(a, 1, (int64_t[]){4 * P9_H}, P9_H);
    return setup_done(a);
}

static tj_tensor *p9_run(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *const *w = weights(ctx);
    tj_tensor *h = tj_zeros(TJ_F32, 2, (int64_t[]){P9_B, P9_H}), *c = h;
    for (int t = 0; t < P9_T; t++) {
        tj_tensor *xt = tj_reshape(tj_slice(in[0], 0, t, t + 1, 1), 2,
                                   (int64_t[]){P9_B, P9_H});
        tj_tensor *g = tj_add(tj_linear(xt, w[0], w[1]), tj_linear(h, w[2], w[3])), *q[4];
        if (tj_split(g, P9_H, 1, q, 4) != 4)
            return NULL;
        c = tj_add(tj_mul(tj_sigmoid(q[1]), c), tj_mul(tj_sigmoid(q[0]), tj_tanh(q[2])));
        h = tj_mul(tj_sigmoid(q[3]), tj_tanh(c));
    }
    return h;
}

/* ---- P10 small: ten pointwise ops on 256 floats (the per-call overhead) --- */
static int p10_setup(bench_args *a)
{
    input(a, 1, (int64_t[]){256});
    return setup_done(a);
}

static tj_tensor *p10_run(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *x = in[0];
    tj_tensor *y = tj_tanh(tj_add_s(tj_mul_s(x, 2.0), 1.0));
    y = tj_sub_s(tj_mul(y, x), 0.5);
    y = tj_relu(tj_add(tj_exp(tj_neg(y)), x));
    return tj_div(tj_sigmoid(y), tj_add_s(tj_abs(x), 1.0));
}

/* ---- P11 stem: ResNet stem, eval mode: conv7x7/2 3->64, bn, relu, max_pool 3x3/2 pad 1 --
 * input x; weights: conv weight, bn running mean, running var, bn weight, bn bias */
static void bn_weights(bench_args *a, int64_t c)
{
    weight(a, 1, (int64_t[]){c}, 1);
    variance(a, c);
    weight(a, 1, (int64_t[]){c}, 1);
    weight(a, 1, (int64_t[]){c}, 1);
}

static int p11_setup(bench_args *a)
{
    input(a, 4, (int64_t[]){8, 3, 224, 224});
    weight(a, 4, (int64_t[]){64, 3, 7, 7}, 3 * 7 * 7);
    bn_weights(a, 64);
    return setup_done(a);
}

static tj_tensor *p11_run(void *ctx, tj_tensor *const *in, int n)
{
    static const int64_t two[2] = {2, 2}, three[2] = {3, 3}, one[2] = {1, 1};
    tj_tensor *const *w = weights(ctx);
    tj_tensor *y = tj_conv2d(in[0], w[0], NULL, two, three, one, 1);
    y = tj_relu(tj_batch_norm(y, w[1], w[2], w[3], w[4], 1e-5));
    return tj_max_pool2d(y, three, two, one, NULL);
}

/* ---- P12 convnet: 28x28 images, twice (conv3x3 pad 1, bn, relu, max_pool 2x2),
 * then linear 64*7*7 -> 10; weights: per conv weight, bias and bn; linear w, b */
static int p12_setup(bench_args *a)
{
    input(a, 4, (int64_t[]){32, 1, 28, 28});
    weight(a, 4, (int64_t[]){32, 1, 3, 3}, 9);
    weight(a, 1, (int64_t[]){32}, 9);
    bn_weights(a, 32);
    weight(a, 4, (int64_t[]){64, 32, 3, 3}, 32 * 9);
    weight(a, 1, (int64_t[]){64}, 32 * 9);
    bn_weights(a, 64);
    weight(a, 2, (int64_t[]){10, 64 * 7 * 7}, 64 * 7 * 7);
    weight(a, 1, (int64_t[]){10}, 64 * 7 * 7);
    return setup_done(a);
}

/* max_pool2x2(relu(bn(conv3x3(x) + b))); w = weight, bias, mean, var, gamma, beta. */
static tj_tensor *conv_block(tj_tensor *x, tj_tensor *const *w)
{
    static const int64_t one[2] = {1, 1}, two[2] = {2, 2};
    tj_tensor *y = tj_conv2d(x, w[0], w[1], one, one, one, 1);
    y = tj_relu(tj_batch_norm(y, w[2], w[3], w[4], w[5], 1e-5));
    return tj_max_pool2d(y, two, NULL, NULL, NULL);
}

static tj_tensor *p12_run(void *ctx, tj_tensor *const *in, int n)
{
    tj_tensor *const *w = weights(ctx);
    tj_tensor *h = conv_block(conv_block(in[0], w), w + 6);
    return tj_linear(tj_flatten(h, 1, -1), w[12], w[13]);
}

/* ---- the table ------------------------------------------------------------ */
const bench_case bench_cases[] = {
    {"P1", "pointwise", "x f32[4194304]; tanh(x) * sigmoid(1.702*x) + 0.5*x", p1_setup, p1_run,
     teardown, NULL, false, NULL},
    {"P2", "softmax", "x f32[2048,1024]; softmax over the last dim", p2_setup, p2_run, teardown,
     NULL, false, NULL},
    {"P3", "layernorm", "x f32[4096,1024], w,b f32[1024]; layer_norm, eps 1e-5", p3_setup, p3_run,
     teardown, NULL, false, NULL},
    {"P4", "mlp", "x f32[256,1024]; layer_norm(linear(gelu_tanh(linear(x))) + x), 1024-2048-1024",
     p4_setup, p4_run, teardown, NULL, false, NULL},
    {"P5", "attention", "q,k,v f32[4,8,256,64]; causal sdpa, scale 1/8", p5_setup, p5_run,
     teardown, NULL, false, NULL},
    {"P6", "conv", "x f32[8,64,56,56]; ResNet basic block (conv3x3 64->64, bn, relu), eval",
     p6_setup, p6_run, teardown, NULL, false, NULL},
    {"P7", "train_mlp", "x f32[128,784]; MLP 784-512-512-10, cross-entropy, one SGD step",
     p7_setup, p7_run, teardown, NULL, true, p7_loss},
    {"P8", "train_block", "x f32[16,64,128]; pre-norm transformer block (4 heads, causal, MLP 512), "
     "MSE, one Adam step", p8_setup, p8_run, teardown, NULL, true, p8_loss},
    {"P9", "rnn", "x f32[8,64,256]; LSTM cell (hidden 256) unrolled over 8 steps, last h",
     p9_setup, p9_run, teardown, NULL, false, NULL},
    {"P10", "small", "x f32[256]; ten pointwise ops (the per-call overhead)", p10_setup,
     p10_run, teardown, NULL, false, NULL},
    {"P11", "stem", "x f32[8,3,224,224]; ResNet stem (conv7x7/2 3->64, bn, relu, max_pool 3x3/2 pad 1), eval",
     p11_setup, p11_run, teardown, NULL, false, NULL},
    {"P12", "convnet", "x f32[32,1,28,28]; 2x (conv3x3 +b, bn, relu, max_pool 2x2), linear 3136->10, eval",
     p12_setup, p12_run, teardown, NULL, false, NULL},
    /* bf16 (docs/perf.md) */
    {"B1", "pointwise_bf16", "P1 in bf16: x bf16[4194304]", b1_setup, b1_run, teardown, NULL, false,
     NULL},
    {"B4", "mlp_bf16", "P4 in bf16: x bf16[256,1024], bf16 weights", b4_setup, b4_run, teardown,
     NULL, false, NULL},
    {"H4", "mlp_f16", "P4 in f16: x f16[256,1024], f16 weights", h4_setup, b4_run, teardown,
     NULL, false, NULL},
    {"A4", "mlp_autocast", "P4 under autocast(bf16): linears in bf16, layer_norm in f32",
     p4_setup, a4_run, teardown, NULL, false, NULL},
    {"A6", "conv_autocast", "P6 under autocast(bf16): convolutions in bf16, batch norms in f32",
     p6_setup, a6_run, teardown, NULL, false, NULL},
    {"Q4", "mlp_int8", "P4 compiled with quantize_dynamic (int8 weights, rows quantized per call)",
     p4_setup, p4_run, teardown, NULL, false, NULL},
};
const int bench_ncases = (int)(sizeof bench_cases / sizeof *bench_cases);

const bench_case *bench_find(const char *s)
{
    for (int k = 0; k < bench_ncases; k++)
        if (!strcasecmp(s, bench_cases[k].id) || !strcasecmp(s, bench_cases[k].name))
            return &bench_cases[k];
    return NULL;
}

int bench_snapshot(const bench_args *a, tj_tensor **snap)
{
    int rc = 0;
    tj_scope_begin();
    for (int k = a->ninputs; k < a->n && rc == 0; k++)
        if (!(snap[k] = tj_keep(tj_clone(a->t[k]))))
            rc = -1;
    tj_scope_end();
    return rc;
}

void bench_restore(bench_args *a, tj_tensor *const *snap)
{
    if (!snap)
        return;
    tj_no_grad_begin();
    for (int k = a->ninputs; k < a->n; k++) {
        tj_copy_(a->t[k], snap[k]);
        tj_zero_grad(a->t[k]);
    }
    tj_no_grad_end();
}
