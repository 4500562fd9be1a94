/* ddp_check.c - run under mpirun by scripts/test-dist.sh: N ranks training an
 * MLP data-parallel (per-rank batch B, tj_ddp) must end with the parameters
 * that one process gets with batch N*B, and all ranks the same ones.
 *
 *   ddp_check [--opt sgd|adam] [--bucket-kb K] [--steps S] [--compiled]
 *             [--compiled-step] [--accum] [--fail hang|kill|mismatch]
 *
 * Every rank also trains the single-process reference itself (no
 * communication), from rank 0's initial values; DDP's parameters start from
 * each rank's own values (so the broadcast is tested). --compiled runs the
 * forward through tj_compile (its backward is the compiled one);
 * --compiled-step compiles zero_grad + forward + backward as one function
 * (each bucket starts inside its plan, as the step making its last gradient
 * ends) and the optimizer update as another, chained around tj_ddp_sync,
 * and checks that neither broke nor ran eagerly; --accum
 * splits each rank's batch into two backwards under tj_ddp_no_sync. --fail
 * makes rank 1 misbehave: the others must exit non-zero with a clear error.
 * Exit 0 and "ok ..." from rank 0 when everything matches. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tjit_dist.h>

#define IN 16
#define HID 32
#define OUT 4
#define B 8
#define TOL 2e-5   /* f32: the mean of N shard means against one mean of N*B */

enum { W1, B1, W2, B2, NP };

static tj_tensor *mlp_loss(void *ctx, tj_tensor *const *a, int nargs)
{
    tj_tensor **p = ctx;
    (void)nargs;
    tj_tensor *h = tj_relu(tj_add(tj_matmul(a[0], p[W1]), p[B1]));
    tj_tensor *y = tj_add(tj_matmul(h, p[W2]), p[B2]);
    tj_tensor *d = tj_sub(y, a[1]);
    return tj_mean(tj_mul(d, d), NULL, 0, false);
}

typedef struct step_ctx {
    tj_tensor **p;
    tj_optimizer *o;
} step_ctx;

/* zero_grad, forward, backward: the gradients are the call's writes */
static tj_tensor *fwd_bwd(void *ctx, tj_tensor *const *a, int nargs)
{
    step_ctx *sc = ctx;
    tj_optimizer_zero_grad(sc->o);
    tj_tensor *loss = mlp_loss(sc->p, a, nargs);
    return tj_backward(loss) == 0 ? tj_detach(loss) : NULL;
}

static tj_tensor *update(void *ctx, tj_tensor *const *a, int nargs)
{
    step_ctx *sc = ctx;
    (void)a;
    (void)nargs;
    return tj_optimizer_step(sc->o) == 0 ? tj_detach(sc->p[B2]) : NULL;
}

/* 0 when c captured one graph that never broke nor ran eagerly. */
static int all_compiled(tj_compiled *c)
{
    tj_compiled_stats st;
    tj_compiled_stats_get(c, &st);
    return st.graphs == 1 && st.breaks == 0 && st.eager_calls == 0 ? 0 : -1;
}

static void init_params(tj_tensor **p, uint64_t seed, int bad_shape)
{
    tj_manual_seed(seed);
    int64_t s[4][2] = {{IN, HID}, {HID, 0}, {HID, OUT}, {OUT, 0}};
    for (int i = 0; i < NP; i++) {
        int64_t shape[2] = {s[i][0], s[i][1]};
        if (bad_shape && i == W2)
            shape[1] = OUT + 1;
        p[i] = tj_keep(tj_mul(tj_randn(TJ_F32, shape[1] ? 2 : 1, shape), tj_scalar(TJ_F32, 0.3)));
        tj_requires_grad(p[i], true);
    }
}

static tj_optimizer *make_opt(tj_tensor **p, const char *opt)
{
    if (!strcmp(opt, "adam"))
        return tj_adam(p, NP, &(tj_adam_options){.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
    return tj_sgd(p, NP, &(tj_sgd_options){.lr = 0.1, .momentum = 0.9});
}

static void die(const char *what)
{
    fprintf(stderr, "rank %d: %s: %s\n", tj_dist_rank(), what, tj_last_error());
    tj_dist_abort(2);
}

int main(int argc, char **argv)
{
    const char *opt = "sgd", *fail = "";
    double bucket_kb = 0;
    int steps = 4;
    bool compiled = false, accum = false, cstep = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--opt") && i + 1 < argc) opt = argv[++i];
        else if (!strcmp(argv[i], "--bucket-kb") && i + 1 < argc) bucket_kb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--compiled")) compiled = true;
        else if (!strcmp(argv[i], "--compiled-step")) cstep = true;
        else if (!strcmp(argv[i], "--accum")) accum = true;
        else if (!strcmp(argv[i], "--fail") && i + 1 < argc) fail = argv[++i];
        else { fprintf(stderr, "ddp_check: unknown argument %s\n", argv[i]); return 2; }
    }
    if (tj_dist_init(&argc, &argv) != 0)
        die("init");
    int rank = tj_dist_rank(), world = tj_dist_world_size();

    /* data: the same N*B*steps samples on every rank */
    tj_manual_seed(7);
    int64_t xs[2] = {(int64_t)world * B * steps, IN}, ys[2] = {xs[0], OUT};
    tj_tensor *X = tj_keep(tj_randn(TJ_F32, 2, xs)), *Y = tj_keep(tj_randn(TJ_F32, 2, ys));

    tj_tensor *ref[NP], *p[NP];
    init_params(ref, 1, 0);
    init_params(p, 1 + (uint64_t)rank, !strcmp(fail, "mismatch") && rank == 1);
    tj_ddp *ddp = tj_ddp_new(p, NP, &(tj_ddp_options){.bucket_mb = bucket_kb / 1024});
    if (!ddp)
        die("tj_ddp_new");
    tj_optimizer *ro = make_opt(ref, opt), *o = make_opt(p, opt);
    tj_compiled *c = compiled ? tj_compile(mlp_loss, p, NULL) : NULL;
    step_ctx sc = {p, o};
    tj_compiled *fb = cstep ? tj_compile(fwd_bwd, &sc, &(tj_compile_options){.name = "fwd_bwd"}) : NULL;
    tj_compiled *up = cstep ? tj_compile(update, &sc, &(tj_compile_options){.name = "update"}) : NULL;

    for (int s = 0; s < steps; s++) {
        tj_scope_begin();
        /* reference: the whole global batch in one process */
        tj_tensor *xa = tj_slice(X, 0, (int64_t)s * world * B, (int64_t)(s + 1) * world * B, 1);
        tj_tensor *ya = tj_slice(Y, 0, (int64_t)s * world * B, (int64_t)(s + 1) * world * B, 1);
        if (tj_backward(mlp_loss(ref, (tj_tensor *[]){xa, ya}, 2)) != 0 || tj_optimizer_step(ro) != 0)
            die("reference step");
        tj_optimizer_zero_grad(ro);

        if (rank == 1 && s == 1 && !strcmp(fail, "kill"))
            raise(SIGKILL);
        if (rank == 1 && s == 1 && !strcmp(fail, "hang"))
            sleep(600);
        int64_t lo = (int64_t)s * world * B + (int64_t)rank * B;
        int parts = accum ? 2 : 1;
        if (cstep) {
            tj_tensor *in[2] = {tj_contiguous(tj_slice(X, 0, lo, lo + B, 1)),
                                tj_contiguous(tj_slice(Y, 0, lo, lo + B, 1))};
            if (!tj_call(fb, in, 2))
                die("compiled forward + backward");
            if (tj_ddp_sync(ddp) != 0)
                die("tj_ddp_sync");
            if (!tj_call(up, NULL, 0))
                die("compiled update");
            tj_scope_end();
            continue;
        }
        for (int k = 0; k < parts; k++) {
            int64_t a = lo + k * B / parts, b = lo + (k + 1) * B / parts;
            tj_tensor *in[2] = {tj_slice(X, 0, a, b, 1), tj_slice(Y, 0, a, b, 1)};
            tj_tensor *loss = c ? tj_call(c, in, 2) : mlp_loss(p, in, 2);
            /* the mean over this rank's B rows: each part's share of it */
            if (parts > 1)
                loss = tj_mul(loss, tj_scalar(TJ_F32, (double)(b - a) / B));
            tj_ddp_no_sync(ddp, k + 1 < parts);
            if (!loss || tj_backward(loss) != 0)
                die("backward");
        }
        if (tj_ddp_sync(ddp) != 0)
            die("tj_ddp_sync");
        if (tj_optimizer_step(o) != 0)
            die("step");
        tj_optimizer_zero_grad(o);
        tj_scope_end();
    }

    /* against the reference, and every rank against rank 0 (bitwise) */
    double diff = 0, spread = 0;
    for (int i = 0; i < NP; i++) {
        tj_tensor *r0 = tj_keep(tj_contiguous(p[i]));
        tj_tensor *mine = tj_keep(tj_contiguous(p[i]));
        if (tj_dist_broadcast(r0, 0) != 0)
            die("broadcast");
        const float *a = tj_data(mine), *b = tj_data(ref[i]), *z = tj_data(r0);
        for (int64_t k = 0; k < tj_numel(p[i]); k++) {
            diff = fmax(diff, fabs((double)a[k] - b[k]));
            spread = fmax(spread, fabs((double)a[k] - z[k]));
        }
        tj_release(r0);
        tj_release(mine);
    }
    tj_tensor *worst = tj_from_data(TJ_F64, 1, (int64_t[]){2}, (double[]){diff, spread});
    if (tj_dist_allreduce(worst, TJ_DIST_MAX) != 0)
        die("allreduce");
    diff = ((double *)tj_data(worst))[0];
    spread = ((double *)tj_data(worst))[1];
    tj_ddp_stats st;
    tj_ddp_stats_get(ddp, &st);
    bool ok = diff <= TOL && spread == 0;
    if (cstep && (all_compiled(fb) != 0 || all_compiled(up) != 0)) {
        char *e1 = tj_explain(fb), *e2 = tj_explain(up);
        fprintf(stderr, "rank %d: a compiled step broke or ran eagerly:\n%s%s", rank, e1, e2);
        free(e1);
        free(e2);
        ok = false;
    }
    if (rank == 0)
        printf("%s ranks=%d opt=%s buckets=%d steps=%d%s%s max|ddp-ref|=%.2e max|rank-rank0|=%.1e "
               "started-in-backward=%.0f%%\n", ok ? "ok" : "MISMATCH", world, opt, st.buckets, steps,
               compiled ? " compiled" : cstep ? " compiled-step" : "", accum ? " accum" : "", diff, spread,
               100 * st.started_in_backward);
    tj_release(worst);
    tj_ddp_free(ddp);
    tj_optimizer_free(ro);
    tj_optimizer_free(o);
    tj_compiled_free(c);
    tj_compiled_free(fb);
    tj_compiled_free(up);
    for (int i = 0; i < NP; i++) {
        tj_release(ref[i]);
        tj_release(p[i]);
    }
    tj_release(X);
    tj_release(Y);
    tj_dist_finalize();
    return ok ? 0 : 1;
}
