/* test_passes.c - the decompose and simplify passes (passes/decompose.c,
 * passes/simplify.c) and the rewrite driver (passes/rewrite.c).
 *
 * Every composite op of ops.def has cases below (a test fails when one has
 * none; the elementwise DCOMP rows, whose eager form is their decomposition, are
 * checked against PyTorch by test_opinfo instead): each case is a small text graph; it is decomposed and simplified,
 * verified, checked to hold no composite, and run with the graph executor on
 * random inputs next to the original graph, whose composite runs its eager
 * kernel. The two must agree tightly (f32: 1e-5 relative), which proves each
 * decomposition against the eager kernels. Folding cases run constant graphs
 * before and after simplify and must agree bit for bit. Error cases: unknown
 * passes, decompositions that symbolic dims forbid, rule tables that never
 * reach a fixed point or change a type.
 *
 * Input names pick the random values: idx* integers in [0, 3), pos* floats in
 * [0.5, 1.5), other floats N(0, 1), other integers in [-5, 5] ([0, 10] for
 * u8), bools fair coins. Symbolic dim sK runs with size 5 + K.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../sched/exec.h"
#include "../passes/rewrite.h"
#include "util.h"
#include "util_ir.h"

#define G(sig, body) "graph @t(" sig ") {\n" body "\n}\n"

/* ---- helpers ------------------------------------------------------------------- */

static char *show(const ir_graph *g)
{
    char *s = ir_print(g, NULL);
    assert_non_null(s);
    return s;
}

static uint64_t rng_state = 88172645463325252ull;

static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1p-53;
}

/* A random tensor for graph input n (see the header for the conventions). */
static tj_tensor *make_input(const ir_node *n)
{
    int64_t shape[TJ_MAX_DIMS], numel = 1;
    for (int d = 0; d < n->type.ndim; d++) {
        int64_t s = n->type.shape[d];
        shape[d] = IR_IS_SYM(s) ? 5 + ir_sym_index(s) : s;
        numel *= shape[d];
    }
    tj_dtype dt = n->type.dtype;
    bool idx = !strncmp(n->name, "idx", 3), pos = !strncmp(n->name, "pos", 3);
    bool ext = !strncmp(n->name, "ext", 3);
    if (ir_dtype_is_float(dt) && !pos && !ext)
        return tj_randn(dt, n->type.ndim, shape);
    static const double extremes[] = {0.0, -0.0, 1e30, -1e30, INFINITY, -INFINITY, NAN, 1e-40,
                                      88.5, -100, 20.5, -3.5, 1e-3, 7};
    double *v = malloc((size_t)(numel ? numel : 1) * sizeof *v);
    assert_non_null(v);
    for (int64_t k = 0; k < numel; k++) {
        double u = uniform();
        v[k] = ext ? extremes[k % (int64_t)(sizeof extremes / sizeof *extremes)]
               : pos ? 0.5 + u : idx ? floor(3 * u) : dt == TJ_BOOL ? (u < 0.5)
               : dt == TJ_U8 ? floor(11 * u) : floor(11 * u) - 5;
    }
    tj_tensor *t = tu_tensor(dt, n->type.ndim, shape, v);
    free(v);
    return t;
}

/* Runs g on inputs; outs get g->noutputs tensors (the caller releases them). */
static void run(const ir_graph *g, tj_tensor **inputs, tj_tensor **outs)
{
    int *last = sc_exec_last_use(g);
    assert_non_null(last);
    int rc = sc_exec(g, inputs, last, outs);
    free(last);
    if (rc != 0) {
        char *s = show(g);
        fail_msg("running the graph failed: %s\n%s", tj_last_error(), s);
    }
}

static const ir_node *first_composite(const ir_graph *g)
{
    for (int k = 0; k < g->nnodes; k++)
        if (!ir_ops[g->nodes[k]->op].prim)
            return g->nodes[k];
    return NULL;
}

static ir_graph *pipeline(ir_graph *g, const char *passes)
{
    char err[1024];
    ps_options opt = {.verify = true};
    ir_graph *h = ps_run_pipeline(g, passes, &opt, err, sizeof err);
    if (!h) {
        char *s = show(g);
        fail_msg("%s\n%s", err, s);
    }
    return h;
}

/* Outputs of g and h on the same inputs agree within rtol/atol by dtype
 * (exactly when exact). */
static void compare_runs(const ir_graph *g, const ir_graph *h, bool exact)
{
    tj_tensor *inputs[16], *want[8], *got[8];
    assert_true(g->ninputs <= 16 && g->noutputs <= 8);
    for (int k = 0; k < g->ninputs; k++)
        inputs[k] = make_input(g->inputs[k]);
    run(g, inputs, want);
    run(h, inputs, got);
    for (int k = 0; k < g->noutputs; k++) {
        tj_dtype dt = tj_dtype_of(want[k]);
        double rtol = exact ? 0 : dt == TJ_F32 ? 1e-5 : dt == TJ_F64 ? 1e-12 : 0;
        tu_assert_close(got[k], want[k], rtol, rtol / 10);
        tj_release(got[k]);
        tj_release(want[k]);
    }
}

/* decompose + simplify: verified, no composite left, same results as eager. */
static void check_decomposition(const char *src)
{
    ir_graph *g = tu_parse(src);
    ir_graph *h = pipeline(g, "decompose,simplify");
    char err[512];
    if (ir_verify(h, err, sizeof err) != 0)
        fail_msg("%s", err);
    const ir_node *c = first_composite(h);
    if (c)
        fail_msg("%s is left after decompose", ir_ops[c->op].name);
    compare_runs(g, h, false);
    if (h != g)
        ir_graph_free(h);
    ir_graph_free(g);
}

/* ---- every composite op -------------------------------------------------------------- */

static const char *const composite_cases[] = {
    /* pointwise */
    G("%x: f32[3,4]", "%0 = square %x : f32[3,4]\n return %0"),
    G("%x: i32[3,4], %y: u8[5]", "%0 = square %x : i32[3,4]\n %1 = square %y : u8[5]\n"
                                 " return %0, %1"),
    G("%x: f32[2]", "%w = scalar {value=1.5, dtype=f64} : f64[] weak\n"
                    " %0 = square %w : f64[]\n %1 = relu %w : f64[]\n %2 = sigmoid %w : f64[]\n"
                    " %3 = mul %x, %0 : f32[2]\n return %0, %1, %2, %3"),
    G("%x: f32[3,4], %y: f64[2,5]", "%0 = sigmoid %x : f32[3,4]\n %1 = sigmoid %y : f64[2,5]\n"
                                    " return %0, %1"),
    G("%x: i64[6], %b: bool[4]", "%0 = sigmoid %x : f32[6]\n %1 = sigmoid %b : f32[4]\n"
                                 " return %0, %1"),
    G("%x: f32[3,4], %i: i64[7], %u: u8[5], %y: f64[s0,3]",
      "%0 = relu %x : f32[3,4]\n %1 = relu %i : i64[7]\n %2 = relu %u : u8[5]\n"
      " %3 = relu %y : f64[s0,3]\n return %0, %1, %2, %3"),
    G("%x: f32[3,4], %y: f64[4]",
      "%0 = gelu %x : f32[3,4]\n %1 = gelu %y : f64[4]\n return %0, %1"),
    G("%x: f32[3,4], %y: f64[4]",
      "%0 = gelu_tanh %x : f32[3,4]\n %1 = gelu_tanh %y : f64[4]\n return %0, %1"),
    G("%x: f32[3,4], %y: f64[s0]",
      "%0 = silu %x : f32[3,4]\n %1 = silu %y : f64[s0]\n return %0, %1"),
    G("%x: f32[3,4], %y: f64[6]",
      "%k = scalar {value=15, dtype=i64} : i64[] weak\n %s = mul %x, %k : f32[3,4]\n"
      " %0 = softplus %s {beta=1, threshold=20} : f32[3,4]\n %1 = softplus %y {beta=2.5, threshold=4} : f64[6]\n return %0, %1"),
    G("%a: f32[3,4], %b: f32[4], %w: f32[3,1]", "%0 = lerp %a, %b, %w : f32[3,4]\n return %0"),
    G("%a: f64[3], %b: f64[3]", "%w = scalar {value=0.25, dtype=f64} : f64[] weak\n"
                                " %0 = lerp %a, %b, %w : f64[3]\n return %0"),
    G("%x: f32[3,4], %y: f64[5]",
      "%0 = clamp %x {min=-0.5, max=0.5} : f32[3,4]\n %1 = clamp %x {min=-inf, max=0.3} : "
      "f32[3,4]\n %2 = clamp %y {min=nan, max=1} : f64[5]\n %3 = clamp %y {min=-inf, max=inf} "
      ": f64[5]\n return %0, %1, %2, %3"),
    G("%i: i32[4,3], %u: u8[6], %l: i64[5]",
      "%0 = clamp %i {min=-2.5, max=3} : f32[4,3]\n %1 = clamp %u {min=2, max=200} : u8[6]\n"
      " %2 = clamp %l {min=-inf, max=inf} : i64[5]\n %3 = clamp %l {min=nan, max=-1} : f32[5]\n"
      " %4 = clamp %i {min=-2, max=3} : i32[4,3]\n return %0, %1, %2, %3, %4"),
    /* reductions */
    G("%x: f32[3,4,5]", "%0 = mean %x {dims=[1], keepdim=false} : f32[3,5]\n"
                        " %1 = mean %x {dims=[], keepdim=true} : f32[1,1,1]\n"
                        " %2 = mean %x {dims=[0,-1], keepdim=false} : f32[4]\n return %0, %1, %2"),
    G("%x: f64[s0,4], %y: f32[s0,4], %e: f32[3,0]",
      "%0 = mean %x {dims=[0], keepdim=false} : f64[4]\n"
      " %1 = mean %y {dims=[1], keepdim=true} : f32[s0,1]\n"
      " %2 = mean %y {dims=[], keepdim=false} : f32[]\n"
      " %3 = mean %e {dims=[1], keepdim=false} : f32[3]\n return %0, %1, %2, %3"),
    G("%x: f32[3,4,5], %i: i64[3,4]",
      "%0 = logsumexp %x {dims=[-1], keepdim=false} : f32[3,4]\n"
      " %1 = logsumexp %x {dims=[0,2], keepdim=true} : f32[1,4,1]\n"
      " %2 = logsumexp %i {dims=[1], keepdim=false} : f32[3]\n"
      " %3 = logsumexp %x {dims=[], keepdim=false} : f32[]\n return %0, %1, %2, %3"),
    G("%e: f32[3,0], %y: f64[s0,4]",
      "%0 = logsumexp %e {dims=[1], keepdim=false} : f32[3]\n"
      " %1 = logsumexp %y {dims=[0], keepdim=true} : f64[1,4]\n return %0, %1"),
    G("%x: f32[3,4,5], %y: f64[6]",
      "%0 = std %x {dims=[1], correction=1, keepdim=false} : f32[3,5]\n"
      " %1 = std %y {dims=[], correction=0, keepdim=true} : f64[1]\n return %0, %1"),
    /* contractions */
    G("%x: f32[3,5], %w: f32[4,5], %b: f32[4]", "%0 = linear %x, %w, %b : f32[3,4]\n return %0"),
    G("%x: f32[2,3,5], %w: f32[4,5], %v: f32[5]",
      "%0 = linear %x, %w : f32[2,3,4]\n %1 = linear %x, %v : f32[2,3]\n return %0, %1"),
    G("%x: f64[s0,5], %w: f64[4,5], %b: f64[1]", "%0 = linear %x, %w, %b : f64[s0,4]\n return %0"),
    /* normalizations */
    G("%x: f32[3,4,5]", "%0 = softmax %x {dim=1} : f32[3,4,5]\n"
                        " %1 = softmax %x {dim=-1} : f32[3,4,5]\n return %0, %1"),
    G("%x: f64[s0,6], %e: f32[3,0], %z: f32[]",
      "%0 = softmax %x {dim=1} : f64[s0,6]\n %1 = softmax %e {dim=1} : f32[3,0]\n"
      " %2 = softmax %z {dim=0} : f32[]\n %3 = log_softmax %z {dim=-1} : f32[]\n"
      " return %0, %1, %2, %3"),
    G("%x: f32[3,4,5], %y: f64[2,7]",
      "%0 = log_softmax %x {dim=0} : f32[3,4,5]\n %1 = log_softmax %y {dim=-1} : f64[2,7]\n"
      " return %0, %1"),
    G("%x: f32[3,4,5], %w: f32[4,5], %b: f32[4,5]",
      "%0 = layer_norm %x, %w, %b {ndims=2, eps=1e-05} : f32[3,4,5]\n return %0"),
    G("%x: f32[3,5], %b: f32[5], %y: f64[s0,8]",
      "%0 = layer_norm %x, none, %b {ndims=1, eps=1e-05} : f32[3,5]\n"
      " %1 = layer_norm %y {ndims=1, eps=1e-06} : f64[s0,8]\n"
      " %2 = layer_norm %x {ndims=2, eps=0.001} : f32[3,5]\n return %0, %1, %2"),
    G("%x: f32[3,4,5], %w: f32[5], %y: f64[2,6]",
      "%0 = rms_norm %x, %w {ndims=1, eps=1e-06} : f32[3,4,5]\n"
      " %1 = rms_norm %y {ndims=2, eps=1e-05} : f64[2,6]\n return %0, %1"),
    G("%x: f32[2,3,4,4], %m: f32[3], %posv: f32[3], %w: f32[3], %b: f32[3]",
      "%0 = batch_norm %x, %m, %posv, %w, %b {eps=1e-05} : f32[2,3,4,4]\n return %0"),
    G("%x: f32[5,3], %m: f32[3], %posv: f32[3], %y: f64[2,3,5], %md: f64[3], %posvd: f64[3], "
      "%w: f64[3], %b: f64[3]",
      "%0 = batch_norm %x, %m, %posv {eps=0.001} : f32[5,3]\n"
      " %1 = batch_norm %y, %md, %posvd, %w {eps=1e-05} : f64[2,3,5]\n"
      " %2 = batch_norm %y, %md, %posvd, none, %b {eps=1e-05} : f64[2,3,5]\n return %0, %1, %2"),
    /* neural-network ops */
    G("%w: f32[10,4], %idx: i64[5], %idx2: i32[2,3], %idx0: i64[]",
      "%0 = embedding %w, %idx : f32[5,4]\n %1 = embedding %w, %idx2 : f32[2,3,4]\n"
      " %2 = embedding %w, %idx0 : f32[4]\n return %0, %1, %2"),
    G("%w: f32[10,s0], %idx: i64[2,3]", "%0 = embedding %w, %idx : f32[2,3,s0]\n return %0"),
    G("%x: f32[4,8], %y: f64[3,5]",
      "%0 = dropout %x {p=0.5, seed=42, offset=7} : f32[4,8]\n"
      " %1 = dropout %y {p=0.2, seed=1, offset=0} : f64[3,5]\n"
      " %2 = dropout %x {p=0, seed=3, offset=0} : f32[4,8]\n"
      " %3 = dropout %x {p=1, seed=3, offset=0} : f32[4,8]\n return %0, %1, %2, %3"),
    G("%q: f32[2,4,8], %k: f32[2,6,8], %v: f32[2,6,5]",
      "%0 = sdpa %q, %k, %v {causal=false, scale=0} : f32[2,4,5]\n"
      " %1 = sdpa %q, %k, %v {causal=true, scale=0.3} : f32[2,4,5]\n return %0, %1"),
    G("%q: f32[2,4,8], %k: f32[2,6,8], %v: f32[2,6,5], %mb: bool[4,6], %mf: f32[2,4,6]",
      "%0 = sdpa %q, %k, %v, %mb {causal=false, scale=0} : f32[2,4,5]\n"
      " %1 = sdpa %q, %k, %v, %mf {causal=false, scale=0} : f32[2,4,5]\n return %0, %1"),
    G("%q: f32[2,1,4,8], %k: f32[1,3,6,8], %v: f32[3,6,5]",
      "%0 = sdpa %q, %k, %v {causal=true, scale=0} : f32[2,3,4,5]\n return %0"),
    G("%q: f64[s0,3,4], %k: f64[s0,5,4], %v: f64[5,2], %qe: f32[3,s1], %ke: f32[5,s1], "
      "%ve: f32[5,2]",
      "%0 = sdpa %q, %k, %v {causal=true, scale=0} : f64[s0,3,2]\n"
      " %1 = sdpa %qe, %ke, %ve {causal=false, scale=0} : f32[3,2]\n return %0, %1"),
    G("%x: f32[5,4], %idx: i64[5], %y: f64[3,6], %idx2: i32[3]",
      "%0 = cross_entropy %x, %idx {reduction=mean, ignore_index=-100, label_smoothing=0} : f32[]\n"
      " %1 = cross_entropy %y, %idx2 {reduction=mean, ignore_index=-100, label_smoothing=0} : f64[]\n"
      " return %0, %1"),
    G("%x: f32[s0,4], %idx: i64[s0]",
      "%0 = cross_entropy %x, %idx {reduction=mean, ignore_index=-100, label_smoothing=0} : f32[]\n"
      " return %0"),
    /* cross_entropy's arguments: weights, reductions, ignore_index, smoothing,
     * [N,C,d] and [C] logits, probabilities, a symbolic batch */
    G("%x: f32[2,4,3], %idx: i64[2,3], %w: f32[4], %q: f32[2,4,3], %v: f64[4], %i0: i32[]",
      "%0 = cross_entropy %x, %idx, %w {reduction=mean, ignore_index=1, label_smoothing=0.2} : f32[]\n"
      " %1 = cross_entropy %x, %idx {reduction=none, ignore_index=0, label_smoothing=0} : f32[2,3]\n"
      " %2 = cross_entropy %x, %q, %w {reduction=sum, ignore_index=-100, label_smoothing=0.1} : f32[]\n"
      " %3 = cross_entropy %x, %q {reduction=mean, ignore_index=-1, label_smoothing=0} : f32[]\n"
      " %4 = cross_entropy %v, %i0 {reduction=none, ignore_index=-100, label_smoothing=0.3} : f64[]\n"
      " return %0, %1, %2, %3, %4"),
    G("%x: f32[s0,4], %idx: i64[s0], %w: f32[4], %q: f32[s0,4]",
      "%0 = cross_entropy %x, %idx, %w {reduction=none, ignore_index=2, label_smoothing=0.1} : f32[s0]\n"
      " %1 = cross_entropy %x, %q {reduction=mean, ignore_index=-100, label_smoothing=0} : f32[]\n"
      " return %0, %1"),
    /* extreme values: 0, -0, +-1e30, +-inf, nan, a denormal, ... */
    G("%ext: f32[14], %extd: f64[14]",
      "%0 = sigmoid %ext : f32[14]\n %1 = relu %ext : f32[14]\n %2 = gelu_tanh %ext : f32[14]\n"
      " %3 = silu %ext : f32[14]\n %4 = softplus %ext {beta=1, threshold=20} : f32[14]\n"
      " %5 = clamp %ext {min=-1, max=1} : f32[14]\n %6 = square %extd : f64[14]\n"
      " %7 = gelu %extd : f64[14]\n return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("%ext: f32[14], %extd: f64[14]",
      "%0 = gelu %ext : f32[14]\n %1 = sigmoid %extd : f64[14]\n %2 = silu %extd : f64[14]\n"
      " %3 = softplus %extd {beta=-1.5, threshold=0.5} : f64[14]\n %4 = gelu_tanh %extd : f64[14]\n"
      " %5 = mean %ext {dims=[], keepdim=false} : f32[]\n return %0, %1, %2, %3, %4, %5"),
    G("%ext: f32[2,7], %extd: f64[7,2]",
      "%0 = softmax %ext {dim=1} : f32[2,7]\n %1 = log_softmax %extd {dim=0} : f64[7,2]\n"
      " %2 = logsumexp %ext {dims=[1], keepdim=false} : f32[2]\n"
      " %3 = logsumexp %extd {dims=[0], keepdim=true} : f64[1,2]\n return %0, %1, %2, %3"),
    /* last: the cases above keep their random inputs */
    G("%a: f32[3,4], %b: i32[4], %c: u8[3,4], %d: bool[3,4], %e: i64[4]",
      "%0 = add_alpha %a, %b {alpha=2.5} : f32[3,4]\n %1 = sub_alpha %c, %c {alpha=-1} : u8[3,4]\n"
      " %2 = add_alpha %d, %d {alpha=0} : bool[3,4]\n %3 = add_alpha %d, %d {alpha=-2} : bool[3,4]\n"
      " %4 = sub_alpha %b, %e {alpha=7} : i64[4]\n %5 = add_alpha %c, %d {alpha=200} : u8[3,4]\n"
      " return %0, %1, %2, %3, %4, %5"),
    /* nn and linalg (issue 11): the DCOMP rows (the executor runs them by the
     * same decomposition; this checks it leaves prims, also at symbolic dims) */
    G("%x: f32[3,4], %y: f32[4], %p: f32[3,4], %q: f32[3,4], %w: f32[4], %d: f64[3,4]",
      "%0 = mse_loss %x, %y {reduction=mean} : f32[]\n"
      " %1 = l1_loss %x, %d {reduction=none} : f64[3,4]\n"
      " %2 = smooth_l1_loss %x, %y {reduction=sum, beta=0.5} : f32[]\n"
      " %3 = huber_loss %x, %d {reduction=none, delta=0.7} : f32[3,4]\n"
      " %4 = binary_cross_entropy %p, %q, %w {reduction=mean} : f32[]\n"
      " %5 = binary_cross_entropy_with_logits %x, %q, %w, %y {reduction=none} : f32[3,4]\n"
      " %6 = kl_div %x, %p {reduction=sum, log_target=false} : f32[]\n"
      " %7 = kl_div %x, %q {reduction=mean, log_target=true} : f32[]\n"
      " return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("%x: f32[s0,4], %y: f32[s0,4]",
      "%0 = mse_loss %x, %y {reduction=mean} : f32[]\n"
      " %1 = huber_loss %x, %y {reduction=sum, delta=1} : f32[]\n return %0, %1"),
    G("%a: f32[2,3,4], %b: f32[2,4,5], %c: f32[2,3,5], %m: f32[3,4], %v: f32[4], %w: f32[3], "
      "%s: f32[3,3], %t: f32[4,3], %i: i32[3,3]",
      "%0 = bmm %a, %b : f32[2,3,5]\n %1 = mv %m, %v : f32[3]\n %2 = dot %v, %v : f32[]\n"
      " %3 = outer %w, %v : f32[3,4]\n %4 = addmm %s, %m, %t {beta=0.5, alpha=2} : f32[3,3]\n"
      " %5 = addmv %w, %m, %v {beta=0, alpha=1} : f32[3]\n"
      " %6 = baddbmm %c, %a, %b {beta=1, alpha=-1} : f32[2,3,5]\n"
      " %7 = tensordot %a, %b {dims_a=[2,0], dims_b=[1,0]} : f32[3,5]\n return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("%m: f32[3,4], %s: f32[3,3], %i: i32[3,3]",
      "%0 = trace %m : f32[]\n %1 = trace %i : i64[]\n %2 = cross %s, %s {dim=0} : f32[3,3]\n"
      " return %0, %1, %2"),
    G("%a: f32[s0,3,4], %b: f32[s0,4,5], %m: f32[s0,4], %v: f32[4], %x: f32[s0,3]",
      "%0 = bmm %a, %b : f32[s0,3,5]\n %1 = mv %m, %v : f32[s0]\n"
      " %2 = cross %x, %x {dim=1} : f32[s0,3]\n return %0, %1, %2"),
    G("%x: f32[2,4,9], %w: f32[6,2,3], %b: f32[6], %p: f32[1,8,2,3], %s: f32[s0,4,9]",
      "%0 = conv1d %x, %w, %b {stride=2, padding=1, dilation=1, groups=2} : f32[2,6,5]\n"
      " %1 = max_pool1d %x {kernel=3, stride=2, padding=1, dilation=1, ceil_mode=true} : f32[2,4,5]\n"
      " %2 = avg_pool1d %s {kernel=3, stride=0, padding=1, count_include_pad=false, ceil_mode=false} : f32[s0,4,3]\n"
      " %3 = pixel_shuffle %p {upscale_factor=2} : f32[1,2,4,6]\n"
      " %4 = pixel_unshuffle %3 {downscale_factor=2} : f32[1,8,2,3]\n return %0, %1, %2, %3, %4"),
    G("%x: f32[2,4,3,2], %w: f32[4], %a: f32[3,4], %c: f32[4], %idxt: i64[3], %s: f32[s0,4], %v: f32[3]",
      "%0 = group_norm %x, %w, %w {groups=2, eps=1e-05} : f32[2,4,3,2]\n"
      " %1 = instance_norm %x {eps=1e-05} : f32[2,4,3,2]\n"
      " %2 = local_response_norm %x {size=3, alpha=0.5, beta=0.75, k=1} : f32[2,4,3,2]\n"
      " %3 = vector_norm %s {ord=inf, dims=[1], keepdim=true} : f32[s0,1]\n"
      " %4 = vector_norm %a {ord=0, dims=[], keepdim=false} : f32[]\n"
      " %5 = cosine_similarity %a, %c {dim=1, eps=1e-08} : f32[3]\n"
      " %6 = pairwise_distance %s, %c {p=1, eps=1e-06, keepdim=false} : f32[s0]\n"
      " %7 = nll_loss %a, %idxt {reduction=mean, ignore_index=-100} : f32[]\n"
      " return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("%a: f32[3,4]",
      "%0 = vector_norm %a {ord=0.5, dims=[0], keepdim=false} : f32[4]\n return %0"),
    G("%x: f32[2,3,7,5], %y: f32[3,7], %a: f32[3,4], %b: f32[5,4], %s: f32[s0,3,7], %v: f32[1,2,4,5,3]",
      "%0 = adaptive_avg_pool2d %x {output_size=[3,2]} : f32[2,3,3,2]\n"
      " %1 = adaptive_max_pool2d %x {output_size=[4,3]} : f32[2,3,4,3]\n"
      " %2 = adaptive_avg_pool1d %y {output_size=[3]} : f32[3,3]\n"
      " %3 = cdist %a, %b {p=2} : f32[3,5]\n %4 = matrix_norm %x {dims=[], keepdim=false} : f32[2,3]\n"
      " %5 = adaptive_avg_pool1d %s {output_size=[2]} : f32[s0,3,2]\n"
      " %6 = adaptive_avg_pool3d %v {output_size=[2,3,7]} : f32[1,2,2,3,7]\n"
      " %7 = adaptive_avg_pool2d %x {output_size=[14,1]} : f32[2,3,14,1]\n"
      " return %0, %1, %2, %3, %4, %5, %6, %7"),
    /* indexing, scans and shapes (after the cases above: they keep their inputs) */
    G("%x: f32[2,3,4], %s: f32[3,4], %b: f32[3,1], %m: bool[3,4], %i: i32[3,4]",
      "%0 = narrow %x {dim=2, start=-3, length=2} : f32[2,3,2]\n"
      " %1 = movedim %x {src=[0,2], dst=[2,0]} : f32[4,3,2]\n %2 = t %s : f32[4,3]\n"
      " %3 = unflatten %s {dim=1, sizes=[2,-1]} : f32[3,2,2]\n %4 = expand_as %b, %s : f32[3,4]\n"
      " %5 = view_as %s, %m : f32[3,4]\n %6 = tril %i {diagonal=1} : i32[3,4]\n"
      " %7 = triu %x {diagonal=-1} : f32[2,3,4]\n return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("%m: bool[3,4], %i: i32[3,4], %x: f64[2,3,4]",
      "%0 = masked_fill %i, %m {value=2.5} : i32[3,4]\n"
      " %1 = masked_fill %x, %m {value=-inf} : f64[2,3,4]\n return %0, %1"),
    G("%x: f32[2,3,4], %s: f32[3,4], %v: i32[3], %idx: i64[2,3]",
      "%0 = diagonal %x {offset=1, dim1=1, dim2=2} : f32[2,3]\n"
      " %1 = diag_embed %v {offset=-1, dim1=0, dim2=1} : i32[4,4]\n"
      " %2 = repeat %s {repeats=[2,1,3]} : f32[2,3,12]\n %3 = tile %v {dims=[2,2]} : i32[2,6]\n"
      " %4 = repeat_interleave %s {repeats=2, dim=0} : f32[6,4]\n"
      " %5 = roll %x {shifts=[1,-2], dims=[0,2]} : f32[2,3,4]\n %6 = take %s, %idx : f32[2,3]\n"
      " %7 = one_hot %idx {num_classes=12} : i64[2,3,12]\n return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("%x: f32[2,3,4], %s: f32[3,4], %idx: i64[2,3,2], %idxj: i64[2]",
      "%0 = take_along_dim %x, %idx {dim=2} : f32[2,3,2]\n"
      " %1 = unfold %s {dim=1, size=2, step=1} : f32[3,3,2]\n"
      " %2 = index_fill %s, %idxj {dim=1, value=-2} : f32[3,4]\n %3 = full_like %s {value=3} : f32[3,4]\n"
      " %4 = eye {n=3, m=4, dtype=f32} : f32[3,4]\n"
      " %5 = linspace {start=-1, end=2, steps=7, dtype=f64} : f64[7]\n"
      " %6 = logspace {start=-1, end=2, steps=7, base=10, dtype=f32} : f32[7]\n"
      " return %0, %1, %2, %3, %4, %5, %6"),
    G("%x: f32[3,5], %i: i32[3,5]",
      "%0 = cummax %x {dim=1} : f32[3,5]\n %1 = cummin %i {dim=0} : i32[3,5]\n"
      " %2 = sort %x {dim=1, descending=true} : f32[3,5]\n %3 = topk %x {k=2, dim=1, largest=false} : f32[3,2]\n"
      " %4 = kthvalue %x {k=2, dim=0, keepdim=false} : f32[5]\n"
      " %5 = median %x {dim=1, keepdim=true} : f32[3,1]\n return %0, %1, %2, %3, %4, %5"),
    G("%x: f32[3,4], %s: f32[2,4], %v: f32[3], %idxa: i64[2], %idxb: i64[3]",
      "%0 = index_add %x, %idxa, %s {dim=0, alpha=0.5} : f32[3,4]\n"
      " %1 = index_put %x, %v, %idxb, %idxb {accumulate=true} : f32[3,4]\n"
      " %2 = index_copy %x, %idxa, %s {dim=0} : f32[3,4]\n return %0, %1, %2"),
    G("%s: f32[5], %v: f32[2,3], %r: f64[2,5], %w: f64[2,4]",
      "%0 = searchsorted %s, %v {right=false} : i64[2,3]\n"
      " %1 = bucketize %v, %s {right=true} : i64[2,3]\n"
      " %2 = searchsorted %r, %w {right=true} : i64[2,4]\n"
      " %3 = maximum_value {dtype=i64} : i64[]\n %4 = minimum_value {dtype=f32} : f32[]\n"
      " return %0, %1, %2, %3, %4"),
    /* ---- 3-D and transposed convolution, 3-D pools (issue 11) ---- */
    G("%x: f32[1,4,4,5,4], %w: f32[6,2,2,3,2], %b: f32[6], %t: f32[4,3,2,2,3], %u: f32[4,5,4,3]",
      "%0 = conv3d %x, %w, %b {stride=[2,1,1], padding=[1,0,1], dilation=[2,1,1], groups=2} : f32[1,6,2,3,5]\n"
      " %1 = conv_transpose3d %x, %t, %b {stride=[2,1,2], padding=[1,0,1], output_padding=[1,0,0], groups=2, dilation=[1,1,1]} : f32[1,6,7,6,7]\n"
      " %3 = max_pool3d %x {kernel=[2,3,2], stride=[1,2,2], padding=[1,1,0], dilation=[1,1,1], ceil_mode=true} : f32[1,4,5,3,2]\n"
      " %2 = avg_pool3d %u {kernel=[2], stride=[2], padding=[1], count_include_pad=false, ceil_mode=false} : f32[4,3,3,2]\n"
      " return %0, %1, %3, %2"),
    G("%x: f32[2,4,3,4], %w: f32[4,2,3,2], %v: f32[4,5], %k: f32[4,1,3]",
      "%0 = conv_transpose2d %x, %w {stride=[2,3], padding=[1,0], output_padding=[1,2], groups=2, dilation=[1,1]} : f32[2,4,6,13]\n"
      " %1 = conv_transpose2d %x, %w {stride=[2,1], padding=[2,1], output_padding=[0,0], groups=1, dilation=[2,1]} : f32[2,2,5,3]\n"
      " %2 = conv_transpose1d %v, %k {stride=3, padding=0, output_padding=2, groups=4, dilation=1} : f32[4,17]\n"
      " return %0, %1, %2"),
    /* interpolate, embedding_bag (issue 11): nearest by a view (x2) and by a gather */
    G("%x: f32[1,2,3,4], %y: f64[1,1,5], %w: f32[10,3], %p: f32[6]",
      "%i = arange {start=9, end=3, step=-1, dtype=i64} : i64[6]\n"
      " %j = reshape %i {shape=[2,3]} : i64[2,3]\n"
      " %0 = upsample_nearest %x {size=[6,8], scale_d=0, scale_h=0, scale_w=0} : f32[1,2,6,8]\n"
      " %1 = upsample_nearest %x {size=[5,7], scale_d=0, scale_h=0, scale_w=0} : f32[1,2,5,7]\n"
      " %2 = upsample_nearest %y {size=[8], scale_d=0, scale_h=0, scale_w=1.7} : f64[1,1,8]\n"
      " %3 = upsample_bilinear2d %x {size=[5,7], align_corners=false, scale_h=0, scale_w=0} : f32[1,2,5,7]\n"
      " %4 = upsample_bilinear2d %x {size=[2,9], align_corners=true, scale_h=0, scale_w=0} : f32[1,2,2,9]\n"
      " %o = arange {start=0, end=6, step=2, dtype=i64} : i64[3]\n"
      " %5 = embedding_bag %w, %i, %o, %p {mode=sum, include_last_offset=false, padding_idx=[]} : f32[3,3]\n"
      " %6 = embedding_bag %w, %i, %o {mode=amax, include_last_offset=false, padding_idx=[]} : f32[3,3]\n"
      " %7 = embedding_bag %w, %j {mode=mean, include_last_offset=false, padding_idx=[]} : f32[2,3]\n"
      " return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("%w: f32[10,3], %p: f32[6]",
      "%i = arange {start=9, end=3, step=-1, dtype=i64} : i64[6]\n"
      " %j = reshape %i {shape=[2,3]} : i64[2,3]\n"
      " %o = arange {start=0, end=6, step=2, dtype=i64} : i64[3]\n"
      " %0 = embedding_bag %w, %i, %o, %p {mode=sum, include_last_offset=false, padding_idx=[3]} : f32[3,3]\n"
      " %1 = embedding_bag %w, %i, %o {mode=mean, include_last_offset=true, padding_idx=[8]} : f32[2,3]\n"
      " %2 = embedding_bag %w, %j {mode=amax, include_last_offset=false, padding_idx=[9]} : f32[2,3]\n"
      " return %0, %1, %2"),
    G("%x: f32[1,2,3,4]",
      "%0 = upsample_bicubic2d %x {size=[5,7], align_corners=false, scale_h=0, scale_w=0} : f32[1,2,5,7]\n"
      " %1 = upsample_bicubic2d %x {size=[2,9], align_corners=true, scale_h=0, scale_w=0} : f32[1,2,2,9]\n"
      " %2 = upsample_bicubic2d %x {size=[3,4], align_corners=false, scale_h=1.1, scale_w=1.2} : f32[1,2,3,4]\n"
      " return %0, %1, %2"),
};

static void test_every_composite_decomposes(void **state)
{
    (void)state;
    bool covered[IR_NUM_OPS] = {false};
    tj_manual_seed(1234);
    for (size_t c = 0; c < sizeof composite_cases / sizeof *composite_cases; c++) {
        ir_graph *g = tu_parse(composite_cases[c]);
        for (int k = 0; k < g->nnodes; k++)
            covered[g->nodes[k]->op] = true;
        ir_graph_free(g);
        check_decomposition(composite_cases[c]);
    }
    /* The elementwise DCOMP rows (passes/decompose_pw.c) have no eager
     * kernel to compare with: their decomposition is their eager form,
     * checked against PyTorch by test_opinfo (decompose_all.tir: they leave
     * prims). */
    int n = 0;
    for (int op = 0; op < IR_NUM_OPS; op++) {
        if (ir_ops[op].prim || (ir_ops[op].eager_decomp && ir_ops[op].kind == IR_POINTWISE))
            continue;
        n++;
        if (!covered[op])
            fail_msg("composite %s has no case in test_passes.c", ir_ops[op].name);
        assert_true(ps_has_decomposition((ir_op)op));
    }
    printf("note: %d composite ops decomposed and checked against eager\n", n);
}

static void test_prims_have_no_decomposition(void **state)
{
    (void)state;
    for (int op = 0; op < IR_NUM_OPS; op++)
        assert_int_equal(ps_has_decomposition((ir_op)op), !ir_ops[op].prim);
    assert_false(ps_has_decomposition(IR_NUM_OPS));
}

/* The exact prim graph of one decomposition. */
static void expect_graph(const char *src, const char *passes, const char *want)
{
    tu_expect_passes(src, passes, want);
}

static void test_softmax_graph(void **state)
{
    (void)state;
    expect_graph(G("%x: f32[2,3]", "%0 = softmax %x {dim=-1} : f32[2,3]\n return %0"),
                 "decompose",
                 "graph @t(%x: f32[2,3]) {\n"
                 "  %0 = amax %x {dims=[1], keepdim=true} : f32[2,1]\n"
                 "  %1 = sub %x, %0 : f32[2,3]\n"
                 "  %2 = exp %1 : f32[2,3]\n"
                 "  %3 = sum %2 {dims=[1], keepdim=true} : f32[2,1]\n"
                 "  %4 = reciprocal %3 : f32[2,1]\n"
                 "  %5 = mul %2, %4 : f32[2,3]\n"
                 "  return %5\n"
                 "}\n");
}

/* A weak result is made strong again: square(weak) is f64[], not f64[] weak. */
static void test_weak_result_is_cast(void **state)
{
    (void)state;
    expect_graph(G("", "%w = scalar {value=2, dtype=f64} : f64[] weak\n"
                       " %0 = square %w : f64[]\n return %0"),
                 "decompose",
                 "graph @t() {\n"
                 "  %0 = scalar {value=2, dtype=f64} : f64[] weak\n"
                 "  %1 = mul %0, %0 : f64[] weak\n"
                 "  %2 = cast %1 {dtype=f64} : f64[]\n"
                 "  return %2\n"
                 "}\n");
    expect_graph(G("", "%w = scalar {value=2, dtype=f64} : f64[] weak\n"
                       " %0 = square %w : f64[]\n return %0"),
                 "decompose,simplify",
                 "graph @t() {\n"
                 "  %0 = full {shape=[], value=4, dtype=f64} : f64[]\n"
                 "  return %0\n"
                 "}\n");
}

/* Symbolic dims survive: the count of a mean over s0 is computed in the graph. */
static void test_symbolic_mean(void **state)
{
    (void)state;
    expect_graph(G("%x: f32[s0,4]", "%0 = mean %x {dims=[0], keepdim=false} : f32[4]\n return %0"),
                 "decompose",
                 "graph @t(%x: f32[s0,4]) {\n"
                 "  %0 = sum %x {dims=[0], keepdim=false} : f32[4]\n"
                 "  %1 = scalar {value=1, dtype=i64} : i64[] weak\n"
                 "  %2 = where %x, %1, %1 : i64[s0,4]\n"
                 "  %3 = sum %2 {dims=[0], keepdim=false} : i64[4]\n"
                 "  %4 = div %0, %3 : f32[4]\n"
                 "  return %4\n"
                 "}\n");
}

static void test_prim_graph_is_unchanged(void **state)
{
    (void)state;
    ir_graph *g = tu_parse(G("%x: f32[4]", "%0 = exp %x : f32[4]\n return %0"));
    char err[256];
    assert_ptr_equal(ps_decompose(g, err, sizeof err), g);
    assert_ptr_equal(ps_simplify(g, err, sizeof err), g);
    ir_graph_free(g);
}

static void expect_pipeline_error(const char *src, const char *passes, const char *want)
{
    ir_graph *g = tu_parse(src);
    char err[1024] = "";
    ps_options opt = {.verify = true};
    ir_graph *h = ps_run_pipeline(g, passes, &opt, err, sizeof err);
    if (h) {
        char *s = show(h);
        fail_msg("expected an error containing \"%s\", got a graph:\n%s", want, s);
    }
    if (!strstr(err, want))
        fail_msg("error \"%s\" lacks \"%s\"", err, want);
    ir_graph_free(g);
}

static void test_decompose_errors(void **state)
{
    (void)state;
    expect_pipeline_error(G("%x: f32[4]", "%0 = neg %x : f32[4]\n return %0"),
                          "decompose,nosuch", "unknown pass \"nosuch\"");
    expect_pipeline_error(G("%w: f32[10,4], %i: i64[s0,3]",
                            "%0 = embedding %w, %i : f32[s0,3,4]\n return %0"),
                          "decompose",
                          "pass decompose: %0 = embedding: indices with 2 dims and a symbolic dim");
    expect_pipeline_error(G("%x: f32[s0,3]",
                            "%0 = dropout %x {p=0.5, seed=1, offset=0} : f32[s0,3]\n return %0"),
                          "decompose", "dropout: the random mask needs a static shape");
    /* 3-D and transposed convolution, 3-D pools: views of the batch times other dims */
    expect_pipeline_error(G("%x: f32[s0,2,3,4,4]",
                            "%0 = max_pool3d %x {kernel=[2], stride=[], padding=[], dilation=[], ceil_mode=false} : f32[s0,2,1,2,2]\n return %0"),
                          "decompose", "max_pool3d: a symbolic batch dim is not supported");
}

/* For code generation, a composite with an eager kernel whose decomposition
 * cannot follow symbolic dims stays whole (an eager call of the plan) and
 * the rest decomposes; plain decompose still reports it (above). */
static void test_codegen_keeps_symbolic(void **state)
{
    (void)state;
    expect_graph(G("%w: f32[10,4], %i: i64[2,s0], %x: f32[s0,3]",
                   "%0 = embedding %w, %i : f32[2,s0,4]\n"
                   " %1 = softmax %0 {dim=-1} : f32[2,s0,4]\n"
                   " %2 = dropout %x {p=0.5, seed=0, offset=call+0} : f32[s0,3]\n"
                   " %3 = log_softmax %2 {dim=0} : f32[s0,3]\n"
                   " %4 = embedding %w, %i : f32[2,s0,4]\n return %1, %3"),
                 "decompose_codegen,dce",
                 "graph @t(%w: f32[10,4], %i: i64[2,s0], %x: f32[s0,3]) {\n"
                 "  %0 = embedding %w, %i : f32[2,s0,4]\n"
                 "  %1 = amax %0 {dims=[2], keepdim=true} : f32[2,s0,1]\n"
                 "  %2 = sub %0, %1 : f32[2,s0,4]\n"
                 "  %3 = exp %2 : f32[2,s0,4]\n"
                 "  %4 = sum %3 {dims=[2], keepdim=true} : f32[2,s0,1]\n"
                 "  %5 = reciprocal %4 : f32[2,s0,1]\n"
                 "  %6 = mul %3, %5 : f32[2,s0,4]\n"
                 "  %7 = dropout %x {p=0.5, seed=0, offset=call+0} : f32[s0,3]\n"
                 "  %8 = amax %7 {dims=[0], keepdim=true} : f32[1,3]\n"
                 "  %9 = sub %7, %8 : f32[s0,3]\n"
                 "  %10 = exp %9 : f32[s0,3]\n"
                 "  %11 = sum %10 {dims=[0], keepdim=true} : f32[1,3]\n"
                 "  %12 = log %11 : f32[1,3]\n"
                 "  %13 = sub %9, %12 : f32[s0,3]\n"
                 "  return %6, %13\n"
                 "}\n");
    /* a static dropout still becomes its mask */
    expect_graph(G("%x: f32[2,3]", "%0 = dropout %x {p=0.5, seed=0, offset=call+1} : f32[2,3]\n return %0"),
                 "decompose_codegen,dce",
                 "graph @t(%x: f32[2,3]) {\n"
                 "  %0 = rand {shape=[2,3], dtype=f32, seed=0, offset=call+1} : f32[2,3]\n"
                 "  %1 = scalar {value=0.5, dtype=f64} : f64[] weak\n"
                 "  %2 = ge %0, %1 : bool[2,3]\n"
                 "  %3 = scalar {value=2, dtype=f64} : f64[] weak\n"
                 "  %4 = mul %x, %3 : f32[2,3]\n"
                 "  %5 = scalar {value=0, dtype=f64} : f64[] weak\n"
                 "  %6 = where %2, %4, %5 : f32[2,3]\n"
                 "  return %6\n"
                 "}\n");
}

/* Masks over symbolic dims (tril, triu, sdpa's causal mask): the row and
 * column indices count ones along a line of the input (ps_b_arange_of), so
 * the graph follows every size. */
static void test_symbolic_masks(void **state)
{
    (void)state;
    expect_graph(G("%x: f32[s0,s1]", "%0 = triu %x {diagonal=1} : f32[s0,s1]\n return %0"),
                 "decompose,dce",
                 "graph @t(%x: f32[s0,s1]) {\n"
                 "  %0 = slice %x {dim=1, start=0, end=1, step=1} : f32[s0,1]\n"
                 "  %1 = reshape %0 {shape=[-1]} : f32[s0]\n"
                 "  %2 = scalar {value=1, dtype=i64} : i64[] weak\n"
                 "  %3 = where %1, %2, %2 : i64[s0]\n"
                 "  %4 = cumsum %3 {dim=0} : i64[s0]\n"
                 "  %5 = scalar {value=-1, dtype=i64} : i64[] weak\n"
                 "  %6 = add %4, %5 : i64[s0]\n"
                 "  %7 = unsqueeze %6 {dim=1} : i64[s0,1]\n"
                 "  %8 = slice %x {dim=0, start=0, end=1, step=1} : f32[1,s1]\n"
                 "  %9 = reshape %8 {shape=[-1]} : f32[s1]\n"
                 "  %10 = where %9, %2, %2 : i64[s1]\n"
                 "  %11 = cumsum %10 {dim=0} : i64[s1]\n"
                 "  %12 = add %11, %5 : i64[s1]\n"
                 "  %13 = sub %12, %7 : i64[s0,s1]\n"
                 "  %14 = ge %13, %2 : bool[s0,s1]\n"
                 "  %15 = scalar {value=0, dtype=f64} : f64[] weak\n"
                 "  %16 = cast %15 {dtype=f32} : f32[]\n"
                 "  %17 = where %14, %x, %16 : f32[s0,s1]\n"
                 "  return %17\n"
                 "}\n");
    /* the same with a static size: arange, as before */
    expect_graph(G("%x: f32[2,3]", "%0 = tril %x {diagonal=0} : f32[2,3]\n return %0"),
                 "decompose,dce",
                 "graph @t(%x: f32[2,3]) {\n"
                 "  %0 = arange {start=0, end=2, step=1, dtype=i64} : i64[2]\n"
                 "  %1 = unsqueeze %0 {dim=1} : i64[2,1]\n"
                 "  %2 = arange {start=0, end=3, step=1, dtype=i64} : i64[3]\n"
                 "  %3 = sub %2, %1 : i64[2,3]\n"
                 "  %4 = scalar {value=0, dtype=i64} : i64[] weak\n"
                 "  %5 = le %3, %4 : bool[2,3]\n"
                 "  %6 = scalar {value=0, dtype=f64} : f64[] weak\n"
                 "  %7 = cast %6 {dtype=f32} : f32[]\n"
                 "  %8 = where %5, %x, %7 : f32[2,3]\n"
                 "  return %8\n"
                 "}\n");
}

/* ---- simplify: folding agrees with eager bit for bit ---------------------------------- */

static const char *const fold_cases[] = {
    G("", "%a = full {shape=[2], value=0.7, dtype=f32} : f32[2]\n"
          " %0 = exp %a : f32[2]\n %1 = sin %a : f32[2]\n %2 = tanh %a : f32[2]\n"
          " %3 = erf %a : f32[2]\n %4 = sigmoid %a : f32[2]\n %5 = log1p %a : f32[2]\n"
          " %6 = rsqrt %a : f32[2]\n %7 = gelu %a : f32[2]\n return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("", "%a = full {shape=[3], value=-1.3, dtype=f64} : f64[3]\n"
          " %b = scalar {value=0.1, dtype=f64} : f64[] weak\n"
          " %0 = exp %a : f64[3]\n %1 = atan2 %a, %b : f64[3]\n %2 = pow %a, %b : f64[3]\n"
          " %3 = remainder %a, %b : f64[3]\n %4 = div %a, %b : f64[3]\n %5 = round %a : f64[3]\n"
          " return %0, %1, %2, %3, %4, %5"),
    G("", "%a = full {shape=[2], value=7, dtype=i32} : i32[2]\n"
          " %b = scalar {value=-3, dtype=i64} : i64[] weak\n"
          " %0 = remainder %a, %b : i32[2]\n %1 = fmod %a, %b : i32[2]\n"
          " %2 = pow %a, %b : i32[2]\n %3 = div %a, %b : f32[2]\n %4 = sub %b, %a : i32[2]\n"
          " %5 = bitwise_and %a, %b : i32[2]\n %6 = neg %a : i32[2]\n %7 = abs %b : i64[]\n"
          " return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("", "%u = full {shape=[2], value=3, dtype=u8} : u8[2]\n"
          " %s = scalar {value=5, dtype=i64} : i64[] weak\n"
          " %m = scalar {value=-1, dtype=i64} : i64[] weak\n"
          " %t = full {shape=[], value=1, dtype=bool} : bool[]\n"
          " %0 = sub %u, %s : u8[2]\n %1 = lt %u, %m : bool[2]\n %2 = neg %u : u8[2]\n"
          " %3 = bitwise_not %t : bool[]\n %4 = logical_xor %t, %u : bool[2]\n"
          " %5 = add %t, %t : bool[]\n %6 = mul %u, %u : u8[2]\n %7 = isfinite %u : bool[2]\n"
          " return %0, %1, %2, %3, %4, %5, %6, %7"),
    G("", "%a = full {shape=[2], value=300.7, dtype=f32} : f32[2]\n"
          " %n = full {shape=[2], value=nan, dtype=f32} : f32[2]\n"
          " %h = full {shape=[2], value=-1e+30, dtype=f64} : f64[2]\n"
          " %0 = cast %a {dtype=u8} : u8[2]\n %1 = cast %a {dtype=i32} : i32[2]\n"
          " %2 = cast %a {dtype=bool} : bool[2]\n %3 = cast %n {dtype=i32} : i32[2]\n"
          " %4 = cast %h {dtype=i64} : i64[2]\n %5 = cast %h {dtype=f32} : f32[2]\n"
          " %6 = cast %n {dtype=i64} : i64[2]\n return %0, %1, %2, %3, %4, %5, %6"),
    G("%x: f32[2,3], %y: f32[3]",
      "%t = scalar {value=1, dtype=bool} : bool[] weak\n"
      " %f = full {shape=[3], value=0, dtype=bool} : bool[3]\n"
      " %0 = where %t, %x, %y : f32[2,3]\n %1 = where %f, %x, %y : f32[2,3]\n"
      " %i = scalar {value=3, dtype=i64} : i64[] weak\n %2 = where %t, %i, %y : f32[3]\n"
      " return %0, %1, %2"),
};

/* Constants, or a copy of an input or of a view of one (a result folded
 * into an input stays a tensor of its own: passes/rewrite.c). */
static bool all_constant(const ir_graph *g)
{
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        if (n->op != OP_scalar && n->op != OP_full && n->op != OP_expand && n->op != OP_cast &&
            !(n->op == OP_copy && (ir_node_is_input(n->in[0]) || n->in[0]->op == OP_expand)))
            return false;
    }
    return true;
}

static void test_fold_matches_eager(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof fold_cases / sizeof *fold_cases; c++) {
        ir_graph *g = tu_parse(fold_cases[c]);
        ir_graph *h = pipeline(g, "simplify");
        if (!all_constant(h)) {
            char *s = show(h);
            fail_msg("case %zu did not fold:\n%s", c, s);
        }
        compare_runs(g, h, true);
        if (h != g)
            ir_graph_free(h);
        ir_graph_free(g);
    }
}

/* Whether src after simplify still holds a matmul; with compare, its results
 * must equal the original graph's exactly. */
static bool simplified_has_matmul(const char *src, bool compare)
{
    ir_graph *g = tu_parse(src);
    ir_graph *h = pipeline(g, "simplify");
    bool has = false;
    for (int k = 0; k < h->nnodes; k++)
        has = has || h->nodes[k]->op == OP_matmul;
    if (compare)
        compare_runs(g, h, true);
    if (h != g)
        ir_graph_free(h);
    ir_graph_free(g);
    return has;
}

/* matmul-zero: 0 @ w is 0 * amax(|w|, dim 0) broadcast over the rows; with
 * w holding 0, -0, +-1e30, +-inf, NaN, denormals (ext), the columns with an
 * inf or a NaN are NaN and the others +0, exactly as the GEMM gives. -0.0
 * and f64 zeros too; a zero of another value, a 3-D matmul and an integer
 * one are left alone. */
static void test_matmul_zero(void **state)
{
    (void)state;
    const char *src = G("%ext: f32[4,7]", "%z = full {shape=[3,4], value=0, dtype=f32} : f32[3,4]\n"
                                          " %0 = matmul %z, %ext : f32[3,7]\n return %0");
    expect_graph(src, "simplify",
                 "graph @t(%ext: f32[4,7]) {\n"
                 "  %0 = abs %ext : f32[4,7]\n"
                 "  %1 = amax %0 {dims=[0], keepdim=true} : f32[1,7]\n"
                 "  %2 = scalar {value=0, dtype=f64} : f64[] weak\n"
                 "  %3 = mul %1, %2 : f32[1,7]\n"
                 "  %4 = expand %3 {shape=[3,7]} : f32[3,7]\n"
                 "  return %4\n"
                 "}\n");
    const char *const cases[] = {
        src,
        G("%ext: f64[5,9]", "%z = full {shape=[2,5], value=-0, dtype=f64} : f64[2,5]\n"
                            " %0 = matmul %z, %ext : f64[2,9]\n return %0"),
        G("%w: f32[6,3]", "%z = full {shape=[1,6], value=0, dtype=f32} : f32[1,6]\n"
                          " %0 = matmul %z, %w : f32[1,3]\n return %0"),
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        assert_false(simplified_has_matmul(cases[c], true));
    const char *const kept[] = {
        G("%w: f32[4,7]", "%z = full {shape=[3,4], value=1, dtype=f32} : f32[3,4]\n"
                          " %0 = matmul %z, %w : f32[3,7]\n return %0"),
        G("%w: f32[2,4,7]", "%z = full {shape=[2,3,4], value=0, dtype=f32} : f32[2,3,4]\n"
                            " %0 = matmul %z, %w : f32[2,3,7]\n return %0"),
        G("%w: i32[4,7]", "%z = full {shape=[3,4], value=0, dtype=i32} : i32[3,4]\n"
                          " %0 = matmul %z, %w : i32[3,7]\n return %0"),
    };
    for (size_t c = 0; c < sizeof kept / sizeof *kept; c++)
        assert_true(simplified_has_matmul(kept[c], false));
}

/* An i64 result beyond 2^53 does not fit the double attribute: not folded. */
static void test_fold_refuses_inexact(void **state)
{
    (void)state;
    const char *src = G("", "%a = full {shape=[1], value=3037000499, dtype=i64} : i64[1]\n"
                            " %0 = mul %a, %a : i64[1]\n return %0");
    ir_graph *g = tu_parse(src);
    ir_graph *h = pipeline(g, "simplify");
    assert_ptr_equal(h, g);
    ir_graph_free(g);
}

/* Identities keep the node's exact type: a bool * 1 becomes a cast to i64, x * 1
 * with a bigger constant becomes an expand; a weak x + 0 stays when the
 * result would be strong, and float x * 0 and x + 0.0 are left alone. */
static void test_algebra_types(void **state)
{
    (void)state;
    const char *src =
        G("%x: f32[3], %b: bool[3], %i: i32[3]",
          "%one = scalar {value=1, dtype=i64} : i64[] weak\n"
          " %zero = scalar {value=0, dtype=i64} : i64[] weak\n"
          " %ones = full {shape=[2,3], value=1, dtype=f32} : f32[2,3]\n"
          " %0 = mul %b, %one : i64[3]\n %1 = mul %x, %ones : f32[2,3]\n"
          " %2 = mul %x, %zero : f32[3]\n %3 = add %x, %zero : f32[3]\n"
          " %4 = mul %i, %zero : i32[3]\n %5 = div %i, %one : f32[3]\n"
          " return %0, %1, %2, %3, %4, %5");
    expect_graph(src, "simplify",
                 "graph @t(%x: f32[3], %b: bool[3], %i: i32[3]) {\n"
                 "  %0 = scalar {value=0, dtype=i64} : i64[] weak\n"
                 "  %1 = cast %b {dtype=i64} : i64[3]\n"
                 "  %2 = expand %x {shape=[2,-1]} : f32[2,3]\n"
                 "  %3 = mul %x, %0 : f32[3]\n"
                 "  %4 = add %x, %0 : f32[3]\n"
                 "  %5 = full {shape=[3], value=0, dtype=i32} : i32[3]\n"
                 "  %6 = cast %i {dtype=f32} : f32[3]\n"
                 "  %7 = copy %2 : f32[2,3]\n"
                 "  return %1, %7, %3, %4, %5, %6\n"
                 "}\n");
    ir_graph *g = tu_parse(src);
    ir_graph *h = pipeline(g, "simplify");
    compare_runs(g, h, true);
    ir_graph_free(h);
    ir_graph_free(g);
}

/* ---- the rule driver --------------------------------------------------------------------- */

/* exp(x) -> exp(-(-x)) unless x is a neg: neg-neg undoes it in the next sweep. */
static ir_node *rule_hide(ps_builder *b, ir_node *n)
{
    if (n->in[0]->op == OP_neg)
        return NULL;
    return b_exp(b, b_neg(b, b_neg(b, n->in[0])));
}

/* neg(x) -> neg(neg(neg(x))): the replacement matches again at once. */
static ir_node *rule_grow(ps_builder *b, ir_node *n) { return b_neg(b, b_neg(b, n)); }

/* exp(x) -> x: another type for an integer x. */
static ir_node *rule_bad_type(ps_builder *b, ir_node *n)
{
    (void)b;
    return n->in[0];
}

/* Builds something invalid: the rule does not match, nothing fails. */
static ir_node *rule_cannot_build(ps_builder *b, ir_node *n)
{
    return ps_b_reshape(b, n, (int64_t[]){7}, 1);
}

static ir_node *neg_neg_of_table(ps_builder *b, ir_node *n)
{
    for (int k = 0; k < ps_simplify_nrules; k++)
        if (!strcmp(ps_simplify_rules[k].name, "neg-neg"))
            return ps_simplify_rules[k].fn(b, n);
    fail_msg("simplify has no neg-neg rule");
    return NULL;
}

static void expect_rewrite_error(const char *src, const ps_rule *rules, int n, const char *want)
{
    ir_graph *g = tu_parse(src);
    char err[1024] = "";
    ps_rewrite_opts o = {.pass = "test", .max_sweeps = 5, .max_per_node = 10};
    ir_graph *h = ps_rewrite(g, rules, n, &o, err, sizeof err);
    assert_null(h);
    if (!strstr(err, want))
        fail_msg("error \"%s\" lacks \"%s\"", err, want);
    ir_graph_free(g);
}

static void test_driver_bounds(void **state)
{
    (void)state;
    const char *src = G("%x: f32[4]", "%0 = exp %x : f32[4]\n return %0");
    const ps_rule sweep_loop[] = {{"neg-neg", OP_neg, neg_neg_of_table},
                                  {"hide", OP_exp, rule_hide}};
    expect_rewrite_error(src, sweep_loop, 2, "no fixed point after 5 sweeps (rule ");
    const ps_rule grow[] = {{"grow", OP_neg, rule_grow}};
    expect_rewrite_error(G("%x: f32[4]", "%0 = neg %x : f32[4]\n return %0"), grow, 1,
                         "%0 = neg: no fixed point: rule grow still rewrites one node after 10");
    const ps_rule bad[] = {{"bad-type", OP_exp, rule_bad_type}};
    expect_rewrite_error(G("%x: i32[4]", "%0 = exp %x : f32[4]\n return %0"), bad, 1,
                         "rule bad-type changed the type from f32[4] to i32[4]");
}

static void test_driver_rule_that_cannot_build(void **state)
{
    (void)state;
    ir_graph *g = tu_parse(G("%x: f32[4]", "%0 = exp %x : f32[4]\n return %0"));
    const ps_rule rules[] = {{"cannot-build", OP_exp, rule_cannot_build}};
    char err[512] = "", *buf = NULL;
    size_t len = 0;
    FILE *log = open_memstream(&buf, &len);
    assert_non_null(log);
    ps_rewrite_opts o = {.pass = "test", .log = log};
    ir_graph *h = ps_rewrite(g, rules, 1, &o, err, sizeof err);
    fclose(log);
    assert_ptr_equal(h, g);
    if (!strstr(buf, "test: sweep 1: cannot-build did not apply: reshape(f32[4]): shape has 7"))
        fail_msg("log: %s", buf);
    free(buf);
    ir_graph_free(g);
}

/* The log names each rule where it fires, and sums up. */
static void test_driver_log(void **state)
{
    (void)state;
    ir_graph *g = tu_parse(G("%x: f32[4]", "%0 = neg %x : f32[4]\n %1 = neg %0 : f32[4]\n"
                                        " %2 = exp %1 : f32[4]\n return %2"));
    char err[512] = "", *buf = NULL;
    size_t len = 0;
    FILE *log = open_memstream(&buf, &len);
    assert_non_null(log);
    ps_rewrite_opts o = {.pass = "simplify", .log = log};
    ir_graph *h = ps_rewrite(g, ps_simplify_rules, ps_simplify_nrules, &o, err, sizeof err);
    fclose(log);
    assert_non_null(h);
    assert_int_equal(h->nnodes, 1);
    assert_non_null(strstr(buf, "simplify: sweep 1: neg-neg: neg %0 : f32[4] -> %x\n"));
    assert_non_null(strstr(buf, "simplify: 2 sweeps, 1 rewrite (neg-neg 1)\n"));
    free(buf);
    ir_graph_free(h);
    ir_graph_free(g);
}

static ir_node *hook_fail(ps_builder *b, const ir_node *old, ir_node *const *in, void *ctx)
{
    (void)old, (void)in;
    return ctx ? ps_b_fail(b, "%s", (const char *)ctx) : NULL;
}

/* A hook's failure names the node: with the builder's message, or a generic one. */
static void test_rebuild_hook_errors(void **state)
{
    (void)state;
    ir_graph *g = tu_parse(G("%x: f32[4]", "%0 = exp %x : f32[4]\n return %0"));
    char err[256] = "";
    assert_null(ps_rebuild(g, NULL, hook_fail, "no memory today", err, sizeof err));
    assert_string_equal(err, "%0 = exp: no memory today");
    assert_null(ps_rebuild(g, NULL, hook_fail, NULL, err, sizeof err));
    assert_string_equal(err, "%0 = exp: rewrite failed");
    ir_graph_free(g);
}

/* A cat of more inputs than the rebuild keeps on its stack. */
static void test_long_cat(void **state)
{
    (void)state;
    ir_graph *g = ir_graph_new("cat");
    ir_type t = {TJ_F32, 1, false, {2}};
    ir_node *x = ir_graph_input(g, "x", &t, false), *in[70];
    for (int k = 0; k < 70; k++)
        in[k] = x;
    ir_attrs a;
    memset(&a, 0, sizeof a);
    ir_attr_int(&a.a[0], 0);
    ir_node *c = ir_graph_add(g, OP_cat, in, 70, &a);
    assert_non_null(c);
    ir_node *n = ir_graph_add(g, OP_neg, (ir_node *[]){ir_graph_add(g, OP_neg, &c, 1, NULL)}, 1,
                              NULL);
    assert_int_equal(ir_graph_set_outputs(g, &n, 1), 0);
    ir_graph *h = pipeline(g, "decompose,simplify");
    assert_int_equal(h->nnodes, 1);
    assert_int_equal(h->outputs[0]->op, OP_cat);
    assert_int_equal(h->outputs[0]->nin, 70);
    ir_graph_free(h);
    ir_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_every_composite_decomposes),
        T(test_prims_have_no_decomposition),
        T(test_softmax_graph),
        T(test_weak_result_is_cast),
        T(test_symbolic_mean),
        T(test_prim_graph_is_unchanged),
        T(test_decompose_errors), T(test_codegen_keeps_symbolic), T(test_symbolic_masks),
        T(test_fold_matches_eager),
        T(test_matmul_zero),
        T(test_fold_refuses_inexact),
        T(test_algebra_types),
        T(test_driver_bounds),
        T(test_driver_rule_that_cannot_build),
        T(test_driver_log),
        T(test_rebuild_hook_errors),
        T(test_long_cat),
#undef T
    };
    return cmocka_run_group_tests_name("passes", tests, NULL, NULL);
}
