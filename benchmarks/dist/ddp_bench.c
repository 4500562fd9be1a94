/* ddp_bench.c - data-parallel training speed (docs/distributed.md), run under
 * mpirun: a suite training case (P7, P8) with its global batch split over the
 * ranks, one step = forward + backward + tj_ddp_sync + optimizer update.
 *
 *   mpirun -np N ddp_bench [P7|P8] [--steps S] [--compiled|--compiled-step]   step times
 *   mpirun -np N ddp_bench --allreduce                         allreduce vs size
 *
 * Per case it prints, from rank 0, medians over S steps of three runs:
 *   ddp       buckets of 25 MiB (P7: about 2.6 MB of gradients, so the
 *             buckets are made smaller, 1 MiB, to have several), started during
 *             the backward;
 *   no-overlap one bucket, so its allreduce starts only after the backward;
 *   local     no communication (tj_ddp_no_sync): the backward alone;
 * the time spent waiting in tj_ddp_sync, and the overlap achieved:
 * (no-overlap - ddp) / (no-overlap - local). Columns: case, ranks, ddp ms per
 * step, steps/s, sync wait ms, no-overlap ms, local ms, buckets started
 * during the backward, overlap. --compiled: the forward compiled (its
 * partitioned backward runs at tj_backward); --compiled-step: zero_grad +
 * forward + backward compiled as one function (the buckets start inside its
 * plan) and the update as another, chained around tj_ddp_sync. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tjit_dist.h>

#include "../suite.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what)
{
    fprintf(stderr, "ddp_bench rank %d: %s: %s\n", tj_dist_rank(), what, tj_last_error());
    tj_dist_abort(2);
}

/* The max over ranks of v (the step is as slow as its slowest rank). */
static double max_over_ranks(double v)
{
    tj_tensor *t = tj_from_data(TJ_F64, 1, (int64_t[]){1}, &v);
    if (!t || tj_dist_allreduce(t, TJ_DIST_MAX) != 0)
        die("allreduce");
    v = *(double *)tj_data(t);
    tj_release(t);
    return v;
}

typedef struct step_ctx {
    const bench_case *c;
    bench_args *a;
    tj_optimizer *opt;
} step_ctx;

static tj_tensor *fwd_bwd(void *ctx, tj_tensor *const *in, int n)
{
    step_ctx *sc = ctx;
    tj_optimizer_zero_grad(sc->opt);
    tj_tensor *loss = sc->c->loss(sc->a, in, n);
    return tj_backward(loss) == 0 ? tj_detach(loss) : NULL;
}

static tj_tensor *update(void *ctx, tj_tensor *const *in, int n)
{
    step_ctx *sc = ctx;
    (void)in;
    (void)n;
    return tj_optimizer_step(sc->opt) == 0 ? tj_detach(sc->a->t[sc->a->n - 1]) : NULL;
}

typedef struct run_result {
    double step_ms, wait_ms, started;
} run_result;

/* S steps of case c on this rank's shard of the batch; medians. */
static run_result run(const bench_case *c, double bucket_mb, bool local, bool compiled, bool cstep,
                      int steps)
{
    bench_args a = {0};
    if (c->setup(&a) != 0)
        die("setup");
    int rank = tj_dist_rank(), world = tj_dist_world_size();
    int64_t rows = tj_shape(a.t[0])[0], lo = rows * rank / world, hi = rows * (rank + 1) / world;
    tj_tensor *in[BENCH_MAX_ARGS];
    for (int k = 0; k < a.ninputs; k++)
        in[k] = tj_keep(tj_contiguous(tj_slice(a.t[k], 0, lo, hi, 1)));
    tj_tensor **w = a.t + a.ninputs;
    int nw = a.n - a.ninputs;
    tj_optimizer *opt = a.opt ? a.opt : tj_sgd(w, nw, &(tj_sgd_options){.lr = 0.01});
    tj_ddp *ddp = tj_ddp_new(w, nw, &(tj_ddp_options){.bucket_mb = bucket_mb});
    if (!ddp || !opt)
        die("tj_ddp_new");
    tj_ddp_no_sync(ddp, local);
    tj_compiled *fn = compiled ? tj_compile(c->loss, &a, NULL) : NULL;
    step_ctx sc = {c, &a, opt};
    tj_compiled *fb = cstep ? tj_compile(fwd_bwd, &sc, NULL) : NULL;
    tj_compiled *up = cstep ? tj_compile(update, &sc, NULL) : NULL;
    double *step = malloc(sizeof(double) * (size_t)steps), *wait = malloc(sizeof(double) * (size_t)steps);
    for (int s = -3; s < steps; s++) {   /* 3 warm-up steps */
        tj_scope_begin();
        if (tj_dist_barrier() != 0)
            die("barrier");
        double t0 = now_ms();
        if (fb) {
            if (!tj_call(fb, in, a.ninputs))
                die("compiled forward + backward");
        } else {
            tj_optimizer_zero_grad(opt);
            tj_tensor *loss = fn ? tj_call(fn, in, a.ninputs) : c->loss(&a, in, a.ninputs);
            if (!loss || tj_backward(loss) != 0)
                die("backward");
        }
        double t1 = now_ms();
        if (tj_ddp_sync(ddp) != 0)
            die("sync");
        double t2 = now_ms();
        if (up ? !tj_call(up, NULL, 0) : tj_optimizer_step(opt) != 0)
            die("step");
        double t3 = now_ms();
        if (s >= 0) {
            step[s] = max_over_ranks(t3 - t0);
            wait[s] = max_over_ranks(t2 - t1);
        }
        tj_scope_end();
    }
    tj_ddp_stats st;
    tj_ddp_stats_get(ddp, &st);
    run_result r = {median(step, steps), median(wait, steps), st.started_in_backward};
    free(step);
    free(wait);
    if (fb) {
        tj_compiled_stats fs, su;
        tj_compiled_stats_get(fb, &fs);
        tj_compiled_stats_get(up, &su);
        if (fs.breaks || fs.eager_calls || su.breaks || su.eager_calls)
            fprintf(stderr, "ddp_bench: the compiled step broke or ran eagerly (%lu, %lu eager calls)\n",
                    fs.eager_calls, su.eager_calls);
    }
    tj_compiled_free(fn);
    tj_compiled_free(fb);
    tj_compiled_free(up);
    tj_ddp_free(ddp);
    if (opt != a.opt)
        tj_optimizer_free(opt);
    for (int k = 0; k < a.ninputs; k++)
        tj_release(in[k]);
    c->teardown(&a);
    return r;
}

static void allreduce_sizes(void)
{
    const double mib[] = {0.25, 1, 4, 16, 25, 64};
    if (tj_dist_rank() == 0)
        printf("| MiB | allreduce ms (median of 10) | GB/s (algorithm bandwidth) |\n|---|---|---|\n");
    for (size_t i = 0; i < sizeof mib / sizeof *mib; i++) {
        int64_t n = (int64_t)(mib[i] * 1024 * 1024 / 4);
        tj_tensor *t = tj_ones(TJ_F32, 1, &n);
        double v[10];
        for (int k = -2; k < 10; k++) {
            tj_dist_barrier();
            double t0 = now_ms();
            if (tj_dist_allreduce(t, TJ_DIST_SUM) != 0)
                die("allreduce");
            if (k >= 0)
                v[k] = max_over_ranks(now_ms() - t0);
        }
        double m = median(v, 10);
        if (tj_dist_rank() == 0)
            printf("| %.2f | %.3f | %.2f |\n", mib[i], m, mib[i] * 1.048576e-3 / (m * 1e-3));
        tj_release(t);
    }
}

int main(int argc, char **argv)
{
    if (tj_dist_init(&argc, &argv) != 0)
        die("init");
    const char *id = "P7";
    int steps = 20;
    bool compiled = false, ar = false, cstep = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--compiled")) compiled = true;
        else if (!strcmp(argv[i], "--compiled-step")) cstep = true;
        else if (!strcmp(argv[i], "--allreduce")) ar = true;
        else id = argv[i];
    }
    if (ar) {
        allreduce_sizes();
        return tj_dist_finalize() == 0 ? 0 : 1;
    }
    const bench_case *c = bench_find(id);
    if (!c || !c->loss) {
        fprintf(stderr, "ddp_bench: %s is not a training case (P7, P8)\n", id);
        tj_dist_abort(2);
    }
    run_result ddp = run(c, 1, false, compiled, cstep, steps);
    run_result one = run(c, 1e6, false, compiled, cstep, steps);
    run_result loc = run(c, 1, true, compiled, cstep, steps);
    if (tj_dist_rank() == 0) {
        /* the communication that one bucket adds to a step, and how much of
         * it the buckets started during the backward hid */
        double comm = one.step_ms - loc.step_ms;
        char overlap[16] = "-";
        if (comm > 0.1 * loc.step_ms)   /* else within the noise */
            snprintf(overlap, sizeof overlap, "%.0f%%", 100 * (one.step_ms - ddp.step_ms) / comm);
        printf("| %s%s | %d | %.2f | %.1f | %.2f | %.2f | %.2f | %.0f%% | %s |\n", c->id,
               compiled ? " compiled" : cstep ? " compiled step" : "", tj_dist_world_size(), ddp.step_ms, 1e3 / ddp.step_ms,
               ddp.wait_ms, one.step_ms, loc.step_ms, 100 * ddp.started, overlap);
    }
    return tj_dist_finalize() == 0 ? 0 : 1;
}
