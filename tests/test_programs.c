/* test_programs.c - random programs, compiled against eager.
 *
 * Each seed's program (tests/util_programs.c writes it: 4-16 steps over
 * three arguments and a captured weight) runs eagerly and through
 * tj_compile_multi, and every result (dtype, shape, values; NaN and
 * infinities by position) and every argument afterwards (the in-place
 * write-back) must agree. Each program is called three times: on new
 * argument values, then after the captured weight changed in place, so a
 * plan that keeps a stale value fails. Arguments come contiguous,
 * transposed, sliced with a step, or expanded (stride 0); a dim of size 0
 * now and then. Every fifth program is compiled with .freeze, every eighth
 * also exported and run from its shared object, every sixteenth makes its
 * first call from two threads at once.
 *
 * Modes: f32, f64, mixed (f32, f64, f16, bf16, i32 and bool arguments:
 * promotion), integer (i32, i64 and bool, compared exactly), dynamic
 * (symbolic sizes), grad (the compiled backward; eager's gradient and its
 * curvature v^T H v, from a double backward, against differences; <dL/dx, v>
 * with its recorded gradient compiled, and its backward, against eager;
 * the gradients through tj_checkpoint against those without, to the bit),
 * autocast (bf16, f16),
 * train (a whole training step compiled: backward, clipping and an
 * optimizer, its learning rate set between calls, the program inside
 * tj_checkpoint on some seeds).
 * Floats agree within tol x max(1, max |eager|) per result: fusion changes
 * the order of sums, not the formulas.
 *
 * TJ_PROGRAMS=N runs N programs per mode, TJ_PROGRAMS_SEED=S starts at seed
 * S (a long campaign: TJ_PROGRAMS=5000), TJ_PROGRAMS_ONLY=PATTERN runs the
 * modes whose test names match (cmocka's filter: "test_train_programs"). A failure names its seed and mode
 * and lists the program's steps.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"
#include "util_programs.h"

static const char *const mode_name[] = {"f32", "f64", "mixed", "int", "dynamic", "grad", "autocast", "train"};

/* ---- arguments ---------------------------------------------------------------------------------- */

typedef struct argspec {
    int ndim;
    int64_t shape[4];
    tj_dtype dt;
    int layout;   /* 0 contiguous, 1 transposed, 2 sliced with step 2, 3 expanded */
} argspec;

/* Normal (or small integer) values from a seed, in dt, with the layout. */
static tj_tensor *make_arg(const argspec *a, unsigned seed)
{
    int64_t shape[4], n = 1;
    memcpy(shape, a->shape, sizeof shape);
    int lay = a->layout, ed = -1;
    if (lay == 1 && a->ndim < 2)
        lay = 0;
    if (lay == 3) {
        for (int d = 0; d < a->ndim; d++)
            if (shape[d] > 1)
                ed = d;
        if (ed < 0)
            lay = 0;
        else
            shape[ed] = 1;
    }
    if (lay == 1) {
        int64_t t = shape[0];
        shape[0] = shape[a->ndim - 1];
        shape[a->ndim - 1] = t;
    }
    if (lay == 2 && a->ndim)
        shape[a->ndim - 1] *= 2;
    for (int d = 0; d < a->ndim; d++)
        n *= shape[d];
    double *buf = malloc(sizeof(double) * (size_t)(n ? n : 1));
    gen g = {.s = seed};
    for (int64_t i = 0; i < n; i++) {
        if (a->dt == TJ_BOOL || a->dt == TJ_I32 || a->dt == TJ_I64)
            buf[i] = a->dt == TJ_BOOL ? rnd(&g, 2) : rnd(&g, 19) - 9;
        else {
            double u1 = (rnd(&g, 1 << 20) + 0.5) / (1 << 20), u2 = rnd(&g, 1 << 20) / (double)(1 << 20);
            buf[i] = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
        }
    }
    tj_tensor *t = tj_cast(tj_from_data(TJ_F64, a->ndim, shape, buf), a->dt);
    free(buf);
    if (lay == 1)
        t = tj_transpose(t, 0, a->ndim - 1);
    else if (lay == 2 && a->ndim)
        t = tj_slice(t, a->ndim - 1, 1, shape[a->ndim - 1], 2);
    else if (lay == 3)
        t = tj_expand(t, a->ndim, a->shape);
    return t;
}

static tj_dtype arg_dtype(gen *g, int mode)
{
    static const tj_dtype mixed[] = {TJ_F32, TJ_F32, TJ_F64, TJ_F16, TJ_BF16, TJ_I32, TJ_BOOL};
    static const tj_dtype ints[] = {TJ_I32, TJ_I32, TJ_I64, TJ_BOOL};
    switch (mode) {
    case M_F32: return TJ_F32;
    case M_F64: return TJ_F64;
    case M_MIXED: return mixed[rnd(g, 7)];
    default: return ints[rnd(g, 4)];
    }
}

/* Three arguments: a base shape of rank 0-4 (at most 2048 elements, a dim
 * of size 0 one time in 25) and two shapes that broadcast to it. */
static void make_specs(unsigned seed, int mode, argspec *spec)
{
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 31};
    gen g = {.s = seed * 40503u + 7u};
    argspec base = {.ndim = rnd(&g, 5)};
    int64_t n = 1;
    bool image = mode != M_INT && rnd(&g, 6) == 0;   /* (N, C, H, W) for conv blocks */
    if (image) {
        int64_t img[4] = {1 + rnd(&g, 3), 1 + rnd(&g, 6), 3 + rnd(&g, 10), 3 + rnd(&g, 10)};
        base.ndim = 4;
        memcpy(base.shape, img, sizeof img);
    }
    for (int d = 0; d < base.ndim && !image; d++) {
        int64_t s = sizes[rnd(&g, 10)];
        while (n * s > 2048)
            s = s > 1 ? s / 2 : 1;
        base.shape[d] = s;
        n *= s;
    }
    if (base.ndim && rnd(&g, 25) == 0)
        base.shape[rnd(&g, base.ndim)] = 0;
    for (int i = 0; i < 3; i++) {
        spec[i] = base;
        if (i > 0) {
            int drop = rnd(&g, base.ndim + 1);   /* leading dims dropped */
            spec[i].ndim = base.ndim - drop;
            for (int d = 0; d < spec[i].ndim; d++)
                spec[i].shape[d] = rnd(&g, 3) ? base.shape[d + drop] : 1;
        }
        spec[i].dt = arg_dtype(&g, mode);
        spec[i].layout = i == 1 ? (rnd(&g, 2) ? 2 : 0) : rnd(&g, 4);
    }
}

/* Twin arguments from one seed: eager's (ea) and the compiled call's (ca),
 * argument i from seed + i. */
static void twin_args(const argspec *spec, unsigned seed, tj_tensor **ea, tj_tensor **ca)
{
    for (int i = 0; i < 3; i++) {
        ea[i] = make_arg(&spec[i], seed + (unsigned)i);
        ca[i] = make_arg(&spec[i], seed + (unsigned)i);
    }
}

/* ---- comparing ---------------------------------------------------------------------------------- */

/* NULL when got matches want, else why (written into why). */
static const char *mismatch(tj_tensor *got, tj_tensor *want, double tol, char *why, size_t nwhy)
{
    if (tj_dtype_of(got) != tj_dtype_of(want)) {
        snprintf(why, nwhy, "dtype %s, eager %s", tj_dtype_name(tj_dtype_of(got)),
                 tj_dtype_name(tj_dtype_of(want)));
        return why;
    }
    if (tj_ndim(got) != tj_ndim(want)) {
        snprintf(why, nwhy, "%d dims, eager %d", tj_ndim(got), tj_ndim(want));
        return why;
    }
    for (int d = 0; d < tj_ndim(got); d++)
        if (tj_size(got, d) != tj_size(want, d)) {
            snprintf(why, nwhy, "dim %d is %lld, eager %lld", d, (long long)tj_size(got, d),
                     (long long)tj_size(want, d));
            return why;
        }
    int64_t n = tj_numel(want);
    if (!n)
        return NULL;
    const double *gv = tj_data(tj_contiguous(tj_cast(got, TJ_F64)));
    const double *wv = tj_data(tj_contiguous(tj_cast(want, TJ_F64)));
    double scale = 1;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(wv[i]) && fabs(wv[i]) > scale)
            scale = fabs(wv[i]);
    for (int64_t i = 0; i < n; i++) {
        bool ok = isnan(wv[i]) ? isnan(gv[i])
                  : isinf(wv[i]) ? gv[i] == wv[i]
                                 : isfinite(gv[i]) && fabs(gv[i] - wv[i]) <= tol * scale;
        if (!ok) {
            snprintf(why, nwhy, "element %lld is %.9g, eager %.9g (tolerance %.3g)", (long long)i, gv[i],
                     wv[i], tol * scale);
            return why;
        }
    }
    return NULL;
}

static double tolerance(const prog *p, tj_tensor *want, const argspec *spec)
{
    if (p->mode == M_INT || !is_float(want))
        return 0;
    if ((p->mode == M_F64 || p->mode == M_GRAD || p->mode == M_TRAIN) && !p->f32_seen)
        return 1e-9;
    double half = p->lowp_tol > 2e-2 ? p->lowp_tol : 2e-2;
    if (p->mode == M_AUTOCAST)
        return half;
    for (int i = 0; i < 3; i++)
        if (spec[i].dt == TJ_F16 || spec[i].dt == TJ_BF16)
            return half;
    return 2e-4;
}

static int programs_per_mode(int dflt)
{
    const char *e = getenv("TJ_PROGRAMS");
    return e && atoi(e) > 0 ? atoi(e) : dflt;
}

/* "f32[2,3]" (a static buffer: one use per call). */
static const char *shape_text(const argspec *a)
{
    static char buf[96];
    int n = snprintf(buf, sizeof buf, "%s[", tj_dtype_name(a->dt));
    for (int d = 0; d < a->ndim && n < 80; d++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld", d ? "," : "", (long long)a->shape[d]);
    snprintf(buf + n, sizeof buf - (size_t)n, "]");
    return buf;
}

/* The program eagerly on ea (its steps logged): the result count, or -1
 * (refused; the error cleared). */
static int eager_run(tj_model_multi_fn fn, void *ectx, prog *p, tj_tensor **ea, int call, tj_tensor **want)
{
    p->log[0] = '\0';
    p->logging = true;
    p->f32_seen = false;
    p->lowp_tol = 0;
    p->not_derivative = false;
    int nw = fn(ectx, ea, 3, want, MAX_OUTS);
    p->logging = false;
    if (getenv("TJ_PROGRAMS_VERBOSE") && call == 0)
        fprintf(stderr, "%s %u: %s%s\n", mode_name[p->mode], p->seed, nw < 0 ? "refused: " : "",
                nw < 0 ? tj_last_error() : p->log);
    return nw;   /* -1: the error stays set */
}

/* ng compiled results got (on ca; err: the call's error) against eager's nw
 * in want (on ea): the same count, then every result and argument. */
static void compare_call(tj_compiled *c, prog *p, int call, int nw, tj_tensor **want, tj_tensor **ea, int ng,
                         tj_tensor **got, tj_tensor **ca, const char *err, const argspec *spec)
{
    if (ng != nw) {
        char *ex = tj_explain(c);
        fail_msg("%s program %u, call %d: %d results, eager %d (%s)\nsteps: %s\n%s", mode_name[p->mode],
                 p->seed, call, ng, nw, ng < 0 ? err : "", p->log, ex);
        free(ex);
    }
    char why[256];
    for (int i = 0; i < nw + 3; i++) {
        tj_tensor *gt = i < nw ? got[i] : ca[i - nw], *wt = i < nw ? want[i] : ea[i - nw];
        if (!mismatch(gt, wt, tolerance(p, wt, spec), why, sizeof why))
            continue;
        if (getenv("TJ_PROGRAMS_EXPLAIN")) {
            char *ex = tj_explain(c);
            fprintf(stderr, "%s\n", ex);
            free(ex);
        }
        fail_msg("%s program %u, call %d, %s %d: %s\nsteps: %s", mode_name[p->mode], p->seed, call,
                 i < nw ? "result" : "argument", i < nw ? i : i - nw, why, p->log);
    }
}

/* One call of a program eagerly (on ea) and compiled (on ca, a copy of
 * ea; or from the exported model p->aot); fails the test where they
 * disagree. Returns the results' count (want: eager's, got: compiled's), or
 * -1 when eager refused the program (then the compiled call must fail too).
 * ectx: eager's context (ctx, or a twin with its own weights). */
static int check_call(tj_compiled *c, tj_model_multi_fn fn, void *ectx, prog *p, tj_tensor **ea,
                      tj_tensor **ca, const argspec *spec, int call, tj_tensor **want, tj_tensor **got)
{
    uint64_t rng = (uint64_t)p->seed * 8u + (uint64_t)call;   /* random steps draw alike */
    tj_manual_seed(rng);
    int nw = eager_run(fn, ectx, p, ea, call, want);
    if (nw < 0) {
        char refusal[512];
        snprintf(refusal, sizeof refusal, "%s", tj_last_error());
        tj_clear_error();
        /* a write into a value the step's own backward saved: eager autograd
         * refuses it, a compiled step reads the value as saved (functionalized,
         * docs/training.md) */
        if (getenv("TJ_PROGRAMS_VERBOSE"))
            fprintf(stderr, "%s %u call %d: eager refused: %s\n", mode_name[p->mode], p->seed, call, refusal);
        bool functional = strstr(refusal, "was modified in place after it was saved") != NULL ||
                          strstr(refusal, "checkpoint: the function wrote argument") != NULL;
        if (tj_call_multi(c, ca, 3, got, MAX_OUTS) >= 0 && !functional)
            fail_msg("%s program %u, call %d: eager refused it (%s), compiled did not\nsteps: %s", mode_name[p->mode],
                     p->seed, call, refusal, p->log);
        tj_clear_error();
        return -1;
    }
    tj_manual_seed(rng);
    int ng = p->aot ? tj_aot_run(p->aot, ca, 3, got, MAX_OUTS) : tj_call_multi(c, ca, 3, got, MAX_OUTS);
    compare_call(c, p, call, nw, want, ea, ng, got, ca, tj_last_error(), spec);
    /* a graph the planner could not build runs right but slowly (the graph
     * executor): only a reason outside the planner's bounds is accepted */
    tj_compiled_stats st;
    tj_compiled_stats_get(c, &st);
    if (st.graphs && !st.plan.compiled && (strstr(st.plan.why, "fuse") || strstr(st.plan.why, "out of memory")))
        fail_msg("%s program %u, call %d: the plan was not built: %s\nsteps: %s", mode_name[p->mode], p->seed,
                 call, st.plan.why, p->log);
    return nw;
}

/* A compiled call on a thread of its own: results kept past its scope. */
typedef struct conc_job {
    tj_compiled *c;
    tj_tensor *ca[3], *got[MAX_OUTS];
    int n;
    char err[256];
} conc_job;

static void *conc_call(void *arg)
{
    conc_job *j = arg;
    tj_scope_begin();
    j->n = tj_call_multi(j->c, j->ca, 3, j->got, MAX_OUTS);
    snprintf(j->err, sizeof j->err, "%s", j->n < 0 ? tj_last_error() : "");
    for (int k = 0; k < j->n; k++)
        tj_keep(j->got[k]);
    tj_scope_end();
    return NULL;
}

/* The first call from two threads at once, on arguments of their own (both
 * trace, compile and run the signature concurrently), each against eager. */
static int check_concurrent(tj_compiled *c, prog *p, const argspec *spec)
{
    conc_job jobs[2] = {{.c = c}, {.c = c}};
    tj_tensor *ea[2][3];
    for (int t = 0; t < 2; t++)
        twin_args(spec, p->seed * 5u + 77u * (unsigned)t, ea[t], jobs[t].ca);
    tu_run_threads(2, conc_call, jobs, sizeof jobs[0]);
    int rc = 0;
    for (int t = 0; t < 2; t++) {
        tj_tensor *want[MAX_OUTS];
        int nw = eager_run(tu_program_model, p, p, ea[t], 0, want);
        if (nw < 0) {
            tj_clear_error();
            assert_true(jobs[t].n < 0);
            rc = -1;
        } else {
            compare_call(c, p, -1 - t, nw, want, ea[t], jobs[t].n, jobs[t].got, jobs[t].ca, jobs[t].err, spec);
        }
        for (int k = 0; k < jobs[t].n; k++)
            tj_release(jobs[t].got[k]);
    }
    return rc;
}

static unsigned first_seed(void)
{
    const char *e = getenv("TJ_PROGRAMS_SEED");
    return e ? (unsigned)strtoul(e, NULL, 10) : 1;
}

/* A generator that writes mostly invalid programs tests nothing. */
static void check_refusals(int mode, int refused, int count)
{
    if (refused * 5 > count)
        fail_msg("%s: eager refused %d of %d programs (last error: %s)", mode_name[mode], refused, count,
                 tj_last_error());
}

/* The signatures c compiled, exported (tj_export) and loaded back
 * (tj_aot_load), run on new arguments against eager: what the shared object
 * holds must compute what the plans did. c's entries that cannot be exported
 * (split at a break, ran eagerly) make tj_export refuse: nothing to check. */
static void check_export(tj_compiled *c, prog *p, const argspec *spec)
{
    char path[96];
    snprintf(path, sizeof path, "%s/tjit_programs_%d_%s_%u.so", P_tmpdir, (int)getpid(), mode_name[p->mode],
             p->seed);
    if (tj_export(c, path, &(tj_export_options){.name = "program"}) != 0) {
        tj_clear_error();
        return;
    }
    char header[100];
    snprintf(header, sizeof header, "%.*s.h", (int)strlen(path) - 3, path);
    p->aot = tj_aot_load(path);
    if (!p->aot)
        fail_msg("%s program %u: the exported model does not load: %s", mode_name[p->mode], p->seed,
                 tj_last_error());
    tj_tensor *ea[3], *ca[3], *want[MAX_OUTS], *got[MAX_OUTS];
    twin_args(spec, p->seed * 3u + 31u, ea, ca);
    if (check_call(c, tu_program_model, p, p, ea, ca, spec, 3, want, got) < 0)
        fail_msg("%s program %u: eager refused the exported signature", mode_name[p->mode], p->seed);
    tj_aot_free(p->aot);
    p->aot = NULL;
    unlink(path);
    unlink(header);
}

/* Runs count programs of one mode from seed TJ_PROGRAMS_SEED (1); fails on
 * the first disagreement, or when eager refuses more than a fifth of them. */
static void run_mode(int mode, int count)
{
    unsigned seed0 = first_seed();
    count = programs_per_mode(count);
    int refused = 0, threads = tj_num_threads();
    for (unsigned seed = seed0; seed < seed0 + (unsigned)count; seed++) {
        tj_set_num_threads(seed % 4 == 0 ? 1 : threads);   /* the one-thread paths too */
        tj_scope_begin();
        argspec spec[3];
        make_specs(seed, mode == M_AUTOCAST ? M_F32 : mode, spec);
        prog p = {.seed = seed, .mode = mode, .logging = true};
        int64_t wlen = spec[0].ndim ? spec[0].shape[spec[0].ndim - 1] : 1;
        tj_dtype wdt = mode == M_F64 ? TJ_F64 : TJ_F32;   /* f32 roundings need f32's tolerance */
        p.w = tj_keep(make_arg(&(argspec){.ndim = 1, .shape = {wlen}, .dt = wdt}, seed + 99));
        /* every fifth program frozen: weights folded and packed once, and the
         * third call's write into the weight makes it trace again */
        bool freeze = seed % 5 == 3 && mode != M_INT;
        p.inner = tj_compile(tu_program_inner, &p, &(tj_compile_options){.name = "inner"});
        tj_compiled *c = tj_compile_multi(
            tu_program_model, &p, &(tj_compile_options){.name = "program", .no_dynamic = true, .freeze = freeze});
        /* every sixteenth program's first call from two threads at once */
        int first = 0;
        if (seed % 16 == 9 && mode != M_AUTOCAST && check_concurrent(c, &p, spec) < 0) {
            refused++;
            first = 3;
        }
        for (int call = first; call < 3; call++) {
            if (call == 2) {   /* the captured weight changes in place */
                tj_tensor *nw = make_arg(&(argspec){.ndim = 1, .shape = {wlen}, .dt = wdt}, seed + 7);
                assert_int_equal(tj_copy_(p.w, nw), 0);
            }
            tj_tensor *ea[3], *ca[3];
            twin_args(spec, seed * 3u + (unsigned)(call * 7), ea, ca);
            for (int i = 0; getenv("TJ_PROGRAMS_VERBOSE") && call == 0 && i < 3; i++)
                fprintf(stderr, "  arg %d: %s layout %d\n", i, shape_text(&spec[i]), spec[i].layout);
            tj_tensor *want[MAX_OUTS], *got[MAX_OUTS];
            if (mode == M_AUTOCAST)   /* matmul and conv2d in bf16 (f16 for odd seeds), eager and compiled */
                assert_int_equal(tj_autocast(seed % 2 ? TJ_F16 : TJ_BF16), 0);
            int n = check_call(c, tu_program_model, &p, &p, ea, ca, spec, call, want, got);
            if (mode == M_AUTOCAST)
                tj_autocast_end();
            if (n < 0) {
                refused++;
                break;
            }
            /* every eighth program exported and run from its shared object */
            if (call == 2 && seed % 8 == 5 && mode != M_AUTOCAST)
                check_export(c, &p, spec);
        }
        tj_compiled_free(c);
        tj_compiled_free(p.inner);
        tj_release(p.w);
        tj_scope_end();
    }
    tj_set_num_threads(threads);
    check_refusals(mode, refused, count);
}

static int backward_of(tj_tensor **res, int n, uint64_t pick);
static void check_grad(const prog *p, int call, const char *what, tj_tensor *got, tj_tensor *want,
                       const argspec *spec);

/* The dynamic mode: f32 arguments of one rank (1-3), their dims of size > 1
 * marked dynamic, called at three sets of sizes (sizes 2-31: 0 and 1 are
 * specialized). In a third of the programs argument 0 requires grad: a
 * backward through every result after each call, argument 0's gradient
 * against eager's (the partitioned backward of a symbolic entry). */
static void run_dyn(int count)
{
    static const int64_t sizes[] = {2, 3, 5, 7, 9, 16, 31};
    unsigned seed0 = first_seed();
    count = programs_per_mode(count);
    int refused = 0, backwards = 0, tries = 0;
    for (unsigned seed = seed0; seed < seed0 + (unsigned)count; seed++) {
        tj_scope_begin();
        gen g = {.s = seed * 7919u + 3u};
        dprog dp = {.p = {.seed = seed, .mode = M_DYN}};
        int nd = 1 + rnd(&g, 3);
        for (int i = 0; i < 3; i++) {
            ashape *a = &dp.arg[i];
            a->nd = i ? nd - rnd(&g, nd) : nd;   /* leading dims dropped */
            for (int k = 0; k < a->nd; k++) {
                int bd = k + (nd - a->nd);
                a->d[k] = i && !rnd(&g, 3) ? -1 : bd;
            }
        }
        tj_compiled *c = tj_compile_multi(tu_program_model_dyn, &dp, &(tj_compile_options){.name = "dynamic"});
        for (int call = 0; call < 3; call++) {
            int64_t size[3];
            for (int k = 0; k < nd; k++)
                size[k] = sizes[rnd(&g, 7)];
            argspec spec[3];
            tj_tensor *ea[3], *ca[3];
            for (int i = 0; i < 3; i++) {
                /* contiguous: strided arguments stay static (docs/tracing.md) */
                spec[i] = (argspec){.ndim = dp.arg[i].nd, .dt = TJ_F32};
                for (int k = 0; k < spec[i].ndim; k++)
                    spec[i].shape[k] = dp.arg[i].d[k] < 0 ? 1 : size[dp.arg[i].d[k]];
                ea[i] = make_arg(&spec[i], seed * 5u + (unsigned)(call * 7 + i));
                ca[i] = make_arg(&spec[i], seed * 5u + (unsigned)(call * 7 + i));
                if (i == 0 && seed % 3 == 1) {
                    assert_int_equal(tj_requires_grad(ea[0], true), 0);
                    assert_int_equal(tj_requires_grad(ca[0], true), 0);
                }
                /* odd seeds unmarked: the second size makes the dims
                 * symbolic by themselves (automatic dynamic shapes) */
                for (int k = 0; seed % 2 == 0 && k < spec[i].ndim; k++)
                    if (dp.arg[i].d[k] >= 0)
                        assert_int_equal(tj_mark_dynamic(ca[i], k), 0);
            }
            if (getenv("TJ_PROGRAMS_VERBOSE"))
                for (int i = 0; i < 3; i++)
                    fprintf(stderr, "  call %d arg %d: %s\n", call, i, shape_text(&spec[i]));
            tj_tensor *want[MAX_OUTS], *got[MAX_OUTS];
            int n = check_call(c, tu_program_model_dyn, &dp, &dp.p, ea, ca, spec, call, want, got);
            if (n < 0) {
                refused++;
                break;
            }
            if (seed % 3 != 1)
                continue;
            int be = backward_of(want, n, ~(uint64_t)0);
            char eerr[512];
            snprintf(eerr, sizeof eerr, "%s", be < 0 ? tj_last_error() : "");
            tj_clear_error();
            int bc = backward_of(got, n, ~(uint64_t)0);
            if (be != bc)
                fail_msg("dynamic program %u, call %d: backward %s eagerly, %s compiled (%s)\nsteps: %s", seed,
                         call, be < 0 ? "failed" : be ? "ran" : "had nothing to do",
                         bc < 0 ? "failed" : bc ? "ran" : "had nothing to do", be < 0 ? eerr : tj_last_error(),
                         dp.p.log);
            tj_clear_error();
            if (be > 0)
                check_grad(&dp.p, call, "argument 0's gradient", tj_grad(ca[0]), tj_grad(ea[0]), spec);
            backwards += be > 0;
            tries++;
        }
        if (getenv("TJ_PROGRAMS_VERBOSE")) {
            tj_compiled_stats st;
            tj_compiled_stats_get(c, &st);
            fprintf(stderr, "  %d graphs, %d breaks, %lu eager calls\n", st.graphs, st.breaks, st.eager_calls);
            if (getenv("TJ_PROGRAMS_EXPLAIN")) {
                char *ex = tj_explain(c);
                fprintf(stderr, "%s\n", ex);
                free(ex);
            }
        }
        tj_compiled_free(c);
        tj_scope_end();
    }
    check_refusals(M_DYN, refused, count);
    if (backwards * 3 < tries)   /* a third of those calls at least must reach a backward */
        fail_msg("dynamic: %d backwards in %d calls with argument 0 requiring grad", backwards, tries);
    if (getenv("TJ_PROGRAMS_VERBOSE"))
        fprintf(stderr, "dynamic: %d backwards in %d calls with argument 0 requiring grad\n", backwards, tries);
}

/* loss = sum_i sum(result_i) / (i + 1) over the float results that require
 * grad; NULL when none does. */
/* A loss of the results picked (bit i: result i) that require grad. */
static tj_tensor *loss_of(tj_tensor **res, int n, uint64_t pick)
{
    tj_tensor *loss = NULL;
    for (int i = 0; i < n; i++)
        if ((pick >> i & 1) && tj_get_requires_grad(res[i]) && tj_numel(res[i]) > 0) {
            tj_tensor *t = tj_mul_s(tj_sum(tj_cast(res[i], TJ_F64), NULL, 0, false), 1.0 / (i + 1));
            loss = loss ? tj_add(loss, t) : t;
        }
    return loss;
}

/* d loss / d (argument 0 and the weight); 0 when no result picked requires
 * grad (no backward). */
static int backward_of(tj_tensor **res, int n, uint64_t pick)
{
    tj_tensor *loss = loss_of(res, n, pick);
    return !loss ? 0 : tj_backward(loss) == 0 ? 1 : -1;
}

/* The loss of program p (eagerly, on arguments made from aseed as
 * twin_args makes them) with argument 0 (w NULL) or the weight w (in place,
 * then put back) moved by s v; NAN when it fails. */
static double eval_at(prog *p, const argspec *spec, unsigned aseed, tj_tensor *w, tj_tensor *v, double s,
                      bool curvature);

static double loss_at(prog *p, const argspec *spec, unsigned aseed, tj_tensor *w, tj_tensor *v, double s)
{
    return eval_at(p, spec, aseed, w, v, s, false);
}

/* v^T H v of the loss in x (argument 0, or the weight w) by a backward
 * through the recorded backward (TJ_CREATE_GRAPH, tj_gradients): 0 where the
 * gradient does not depend on x; NAN where the double backward is refused
 * (through the program's inner compiled call, scatter_reduce's prod with
 * zeros meeting); any other failure fails the test. */
static double curvature_of(prog *p, tj_tensor *loss, tj_tensor *x, tj_tensor *v)
{
    tj_tensor *g, *hv;
    if (tj_gradients(&loss, NULL, 1, &x, 1, TJ_CREATE_GRAPH | TJ_ALLOW_UNUSED, &g) == 0) {
        tj_tensor *gv = tj_sum(tj_mul(g, v), NULL, 0, false);
        if (gv && !tj_get_requires_grad(gv))
            return 0;
        if (gv && tj_gradients(&gv, NULL, 1, &x, 1, TJ_ALLOW_UNUSED, &hv) == 0)
            return tj_item(tj_sum(tj_mul(hv, v), NULL, 0, false));
    }
    const char *e = tj_last_error();
    if (!strstr(e, "goes through a compiled call") && !strstr(e, "several zeros of src reach one place"))
        fail_msg("grad program %u: double backward: %s\nsteps: %s", p->seed, e, p->log);
    tj_clear_error();
    return NAN;
}

/* The loss at x + s v (loss_at), or with curvature its v^T H v there. */
static double eval_at(prog *p, const argspec *spec, unsigned aseed, tj_tensor *w, tj_tensor *v, double s,
                      bool curvature)
{
    tj_scope_begin();
    tj_tensor *a[3], *res[MAX_OUTS], *w0 = w ? tj_clone(tj_detach(w)) : NULL;
    tj_tensor *stat = p->stat ? tj_clone(p->stat) : NULL;   /* as call 0 found it: 0 */
    if (stat)
        tj_copy_(p->stat, tj_zeros(TJ_F64, 0, NULL));
    for (int i = 0; i < 3; i++)
        a[i] = make_arg(&spec[i], aseed + (unsigned)i);
    if (!w)
        a[0] = tj_clone(tj_add(a[0], tj_mul_s(v, s)));   /* a leaf again, as in the run */
    tj_no_grad_begin();
    int moved = w ? tj_copy_(w, tj_add(w0, tj_mul_s(v, s))) : 0;
    tj_no_grad_end();
    double l = NAN;
    if (moved == 0 && tj_requires_grad(a[0], true) == 0) {
        tj_manual_seed((uint64_t)p->seed * 8u);   /* random steps draw as call 0 did */
        int n = tu_program_model(p, a, 3, res, MAX_OUTS);
        tj_tensor *loss = n >= 0 ? loss_of(res, n, ~(uint64_t)0) : NULL;
        l = !loss ? NAN : curvature ? curvature_of(p, loss, w ? w : a[0], v) : tj_item(loss);
    }
    tj_clear_error();
    if (stat)
        tj_copy_(p->stat, stat);
    if (w) {
        tj_no_grad_begin();
        if (tj_copy_(w, w0) != 0)
            fail_msg("grad program %u: the weight not put back: %s", p->seed, tj_last_error());
        tj_no_grad_end();
    }
    tj_scope_end();
    return l;
}

/* Eager's gradient g of x, argument 0 (w NULL) or the weight w (f64; g
 * NULL: none reached it, zeros), against central differences of the loss
 * along a random direction v, at steps h and h / 4: an independent check of
 * the tape (eager and compiled share every gradient rule, so comparing them
 * cannot find a rule or a rebase that is wrong in both). Where the
 * differences show the program is not smooth around x (relu or abs near 0,
 * floor, a comparison flipping, an f32 value's rounding) it is not judged.
 * 1 when judged, 0 when not; fails the test on a mismatch. */
static int fd_check(prog *p, const argspec *spec, unsigned aseed, tj_tensor *x, tj_tensor *w, tj_tensor *g)
{
    if (p->f32_seen || p->not_derivative || tj_dtype_of(x) != TJ_F64 || tj_numel(x) == 0)
        return 0;
    tj_scope_begin();
    if (!g)   /* no gradient reached x: the loss must not change along v */
        g = tj_zeros(TJ_F64, tj_ndim(x), tj_shape(x));
    tj_manual_seed(aseed ^ (w ? 0x9e3779b9u : 0x5bd1e995u));
    tj_tensor *v = tj_randn(TJ_F64, tj_ndim(g), tj_shape(g));
    double gv = tj_item(tj_sum(tj_mul(g, v), NULL, 0, false));
    double mag = tj_item(tj_sum(tj_abs(tj_mul(g, v)), NULL, 0, false));
    const double h = 1e-5;
    double l0 = loss_at(p, spec, aseed, w, v, 0);
    double lp = loss_at(p, spec, aseed, w, v, h), lm = loss_at(p, spec, aseed, w, v, -h);
    double lp4 = loss_at(p, spec, aseed, w, v, h / 4), lm4 = loss_at(p, spec, aseed, w, v, -h / 4);
    tj_scope_end();
    double d1 = (lp - lm) / (2 * h), d2 = (lp4 - lm4) / (h / 2);
    /* forward minus backward difference: h v^T H v where smooth (it shrinks
     * with h), the jump of the slope at a kink in between (it does not) */
    double a1 = (lp - 2 * l0 + lm) / h, a4 = (lp4 - 2 * l0 + lm4) / (h / 4);
    double tol = 1e-6 * (1 + mag + fabs(l0) + fabs(d1));
    if (!isfinite(l0) || !isfinite(d1) || !isfinite(d2) || !isfinite(gv) || fabs(d1 - d2) > tol ||
        fabs(a4 - a1 / 4) > tol) {
        if (getenv("TJ_PROGRAMS_VERBOSE"))
            fprintf(stderr, "grad %u (%s): not judged: d1 %.10g d2 %.10g gv %.10g l0 %g tol %g\n", p->seed,
                    w ? "weight" : "arg 0", d1, d2, gv, l0, tol);
        return 0;
    }
    if (fabs(gv - d1) > tol || fabs(gv - d2) > tol)
        fail_msg("grad program %u: %s gradient along a random direction is %.10g, central "
                 "differences give %.10g (h = %g) and %.10g (h / 4); tolerance %.3g\nsteps: %s",
                 p->seed, w ? "the weight's" : "argument 0's", gv, d1, h, d2, tol, p->log);
    return 1;
}

/* v^T H v of the loss in x (argument 0, w NULL, or the weight w) along a
 * random v from a backward through the recorded backward, against the
 * second central difference of the loss at steps h and h / 2 (judged only
 * where the two agree: smooth there). 1 when judged, 0 when not; fails the
 * test on a mismatch. */
static int curvature_check(prog *p, const argspec *spec, unsigned aseed, tj_tensor *x, tj_tensor *w)
{
    if (p->f32_seen || p->not_derivative || tj_dtype_of(x) != TJ_F64 || tj_numel(x) == 0)
        return 0;
    tj_scope_begin();
    tj_manual_seed(aseed ^ 0x2545f491u);
    tj_tensor *v = tj_randn(TJ_F64, tj_ndim(x), tj_shape(x));
    const double h = 1e-3;
    double hvv = eval_at(p, spec, aseed, w, v, 0, true), l0 = loss_at(p, spec, aseed, w, v, 0);
    double lp = loss_at(p, spec, aseed, w, v, h), lm = loss_at(p, spec, aseed, w, v, -h);
    double lp2 = loss_at(p, spec, aseed, w, v, h / 2), lm2 = loss_at(p, spec, aseed, w, v, -h / 2);
    tj_scope_end();
    double c1 = (lp - 2 * l0 + lm) / (h * h), c2 = (lp2 - 2 * l0 + lm2) / (h * h / 4);
    double tol = 1e-4 * (1 + fabs(c1) + fabs(l0) * 1e-2);
    if (!isfinite(hvv) || !isfinite(c1) || !isfinite(c2) || fabs(c1 - c2) > tol)
        return 0;
    if (fabs(hvv - c2) > 2 * tol)
        fail_msg("grad program %u: %s curvature v^T H v along a random direction is %.10g from the double "
                 "backward, second differences give %.10g (h = %g) and %.10g (h / 2); tolerance %.3g\nsteps: %s",
                 p->seed, w ? "the weight's" : "argument 0's", hvv, c1, h, c2, 2 * tol, p->log);
    return 1;
}

static void check_grad(const prog *p, int call, const char *what, tj_tensor *got, tj_tensor *want,
                       const argspec *spec)
{
    char why[256];
    if (!got != !want)
        fail_msg("%s program %u, call %d: %s %s compiled, %s eagerly\nsteps: %s", mode_name[p->mode], p->seed,
                 call, what, got ? "set" : "missing", want ? "set" : "missing", p->log);
    if (got && mismatch(got, want, tolerance(p, want, spec), why, sizeof why))
        fail_msg("%s program %u, call %d, %s: %s\nsteps: %s", mode_name[p->mode], p->seed, call, what, why, p->log);
}

/* <dL/dx0, v> as a model: argument 0 made a leaf inside, the program run on
 * it, its loss's gradient recorded (TJ_CREATE_GRAPH): a function whose
 * backward is of second order. */
typedef struct gv_ctx {
    prog *p;
    tj_tensor *v;
} gv_ctx;

static tj_tensor *gv_model(void *ctx, tj_tensor *const *a, int n)
{
    gv_ctx *h = ctx;
    (void)n;
    tj_tensor *args[3] = {tj_mul_s(a[0], 1.0), a[1], a[2]}, *res[MAX_OUTS], *g;
    if (!args[0] || tj_requires_grad(args[0], true) != 0)
        return NULL;
    int k = tu_program_model(h->p, args, 3, res, MAX_OUTS);
    tj_tensor *loss = k >= 0 ? loss_of(res, k, ~(uint64_t)0) : NULL;
    if (!loss || tj_gradients(&loss, NULL, 1, &args[0], 1, TJ_CREATE_GRAPH | TJ_ALLOW_UNUSED, &g) != 0)
        return NULL;
    return tj_sum(tj_mul(g, h->v), NULL, 0, false);
}

/* gv_model compiled (its recorded backward traced into the graph) against
 * eager: the value, then the weight's gradient of it (a second-order
 * backward through the compiled call). Arguments without grad (those make a
 * call eager). 1 when compared, 0 when eager refused (the program's inner
 * compiled call, scatter_reduce's prod with zeros meeting: see
 * curvature_of). */
static int second_order_check(prog *pc, prog *pe, const argspec *spec, unsigned aseed)
{
    if (pe->f32_seen || tj_dtype_of(pe->w) != TJ_F64)
        return 0;
    tj_scope_begin();
    /* the running statistic as the calls found it, put back after: the
     * check leaves no trace on the calls that follow (eager may refuse where
     * the compiled model never runs) */
    tj_tensor *stat[2] = {pe->stat ? tj_clone(pe->stat) : NULL, pc->stat ? tj_clone(pc->stat) : NULL};
    tj_tensor *ea[3], *ca[3];
    twin_args(spec, aseed, ea, ca);
    tj_manual_seed(aseed ^ 0x68e31da4u);
    gv_ctx he = {pe, tj_randn(TJ_F64, tj_ndim(ea[0]), tj_shape(ea[0]))}, hc = {pc, tj_clone(he.v)};
    uint64_t rng = (uint64_t)pe->seed * 8u + 5u;
    /* these arguments are not the calls': the forward alone may refuse them
     * (an empty masked_select reduced without an identity, program 7291022),
     * as it would eagerly: nothing of second order to check */
    int judged = 0;
    tj_manual_seed(rng);
    tj_tensor *fwd[MAX_OUTS], *pa[3] = {tj_clone(ea[0]), tj_clone(ea[1]), tj_clone(ea[2])};   /* it may write them */
    tj_no_grad_begin();
    int nf = tu_program_model(pe, pa, 3, fwd, MAX_OUTS);
    tj_no_grad_end();
    if (nf < 0) {
        tj_clear_error();
        goto out;
    }
    tj_no_grad_begin();   /* the statistic as before the probe */
    int put = stat[0] ? tj_copy_(pe->stat, stat[0]) : 0;
    tj_no_grad_end();
    if (put != 0)
        fail_msg("grad program %u: the running statistic not put back: %s", pe->seed, tj_last_error());
    tj_manual_seed(rng);
    tj_tensor *want = gv_model(&he, ea, 3);
    if (!want || tj_numel(ea[0]) == 0) {
        /* no error: no result requires grad (none reached from x, or empty) */
        /* also refused as PyTorch refuses: a leaf written in no-grad mode
         * after a step saved it (program 7298025) */
        const char *e = tj_last_error();
        if (!want && *e && !strstr(e, "goes through a compiled call") &&
            !strstr(e, "several zeros of src reach one place") &&
            !(pe->not_derivative && strstr(e, "modified in place after it was saved")))
            fail_msg("grad program %u: double backward: %s\nsteps: %s", pe->seed, e, pe->log);
        tj_clear_error();
        goto out;
    }
    tj_compiled *c = tj_compile(gv_model, &hc, &(tj_compile_options){.name = "second_order", .no_dynamic = true});
    tj_manual_seed(rng);
    tj_tensor *got = tj_call(c, ca, 3);
    if (!got)
        fail_msg("grad program %u: the compiled second-order model failed: %s\nsteps: %s", pe->seed, tj_last_error(),
                 pe->log);
    check_grad(pe, 0, "<dL/dx, v>", got, want, spec);
    if (!tj_get_requires_grad(want)) {   /* <dL/dx, v> does not depend on the weight */
        tj_compiled_free(c);
        judged = 1;
        goto out;
    }
    /* eagerly it has x's history in any case; compiled, only where it
     * depends on the weight: else the weight's eager gradient is 0 */
    bool on_tape = tj_get_requires_grad(got);
    int be = tj_backward(want), bc = on_tape ? tj_backward(got) : 0;
    if (be != 0 || bc != 0)
        fail_msg("grad program %u: the backward of <dL/dx, v> failed %s: %s\nsteps: %s", pe->seed,
                 be ? "eagerly" : "compiled", tj_last_error(), pe->log);
    tj_tensor *gw = tj_grad(pe->w);
    if (!on_tape && gw && tj_item(tj_amax(tj_abs(gw), NULL, 0, false)) != 0)
        fail_msg("grad program %u: <dL/dx, v> compiled does not depend on the weight, eagerly its gradient is "
                 "not 0\nsteps: %s", pe->seed, pe->log);
    if (on_tape)
        check_grad(pe, 0, "the weight's gradient of <dL/dx, v>", tj_grad(pc->w), gw, spec);
    tj_zero_grad(pc->w);
    tj_zero_grad(pe->w);
    tj_compiled_free(c);
    judged = 1;
out:
    tj_no_grad_begin();
    if ((stat[0] && tj_copy_(pe->stat, stat[0]) != 0) || (stat[1] && tj_copy_(pc->stat, stat[1]) != 0))
        fail_msg("grad program %u: the running statistic not put back: %s", pe->seed, tj_last_error());
    tj_no_grad_end();
    tj_scope_end();
    return judged;
}

/* The training mode: f64 programs whose argument 0 and weight require grad;
 * the compiled call's backward (the compiled backward graph where the call
 * made one) against eager's, over two calls. */
/* The program run inside tj_checkpoint (its saved values dropped, made
 * again by running it once more in the backward, with the same draws): the
 * gradients of the loss in argument 0 and the weight equal those without, to
 * the bit. The running statistic is put back after each forward (the run
 * again would otherwise read the updated one, as a batch norm's in PyTorch).
 * 1 when compared, 0 when not (no gradient, or refused alike). */
static int checkpoint_check(prog *p, const argspec *spec, unsigned aseed)
{
    if (p->not_derivative)
        return 0;
    tj_tensor *g[2][2] = {{0}}, *res[MAX_OUTS];
    int rc[2];
    char err[2][512];
    for (int ck = 0; ck < 2; ck++) {
        tj_tensor *a[3], *stat = p->stat ? tj_clone(p->stat) : NULL;
        for (int i = 0; i < 3; i++)
            a[i] = make_arg(&spec[i], aseed + (unsigned)i);
        assert_int_equal(tj_requires_grad(a[0], true), 0);
        tj_manual_seed((uint64_t)p->seed * 8u + 5u);
        int n = ck ? tj_checkpoint(tu_program_model, p, a, 3, res, MAX_OUTS) : tu_program_model(p, a, 3, res, MAX_OUTS);
        tj_no_grad_begin();
        if (stat)
            tj_copy_(p->stat, stat);
        tj_no_grad_end();
        tj_tensor *loss = n >= 0 ? loss_of(res, n, ~(uint64_t)0) : NULL;
        if (loss && !tj_get_requires_grad(loss))
            return 0;   /* (the statistic is back: this was the first run) */
        tj_tensor *xs[2] = {a[0], p->w};
        rc[ck] = loss ? tj_gradients(&loss, NULL, 1, xs, 2, TJ_ALLOW_UNUSED, g[ck]) : -1;
        snprintf(err[ck], sizeof err[ck], "%s", rc[ck] ? tj_last_error() : "");
        tj_clear_error();
        tj_no_grad_begin();
        if (stat)   /* the run again wrote it too */
            tj_copy_(p->stat, stat);
        tj_no_grad_end();
    }
    if (rc[1] && strstr(err[1], "the function wrote argument"))
        return 0;   /* refused: the program writes its argument in place */
    if (rc[0] && !rc[1] && strstr(err[0], "goes through a compiled call"))
        return 0;   /* the program's compiled call: inside the checkpoint it runs eagerly */
    if (rc[0] != rc[1])
        fail_msg("grad program %u: the gradients %s without a checkpoint (%s), %s with one (%s)\nsteps: %s",
                 p->seed, rc[0] ? "failed" : "ran", err[0], rc[1] ? "failed" : "ran", err[1], p->log);
    for (int k = 0; rc[0] == 0 && k < 2; k++)
        if (!tu_all_close(g[1][k], g[0][k], 0))
            fail_msg("grad program %u: %s gradient through tj_checkpoint differs from the one without\nsteps: %s",
                     p->seed, k ? "the weight's" : "argument 0's", p->log);
    return rc[0] == 0;
}

static void run_grad(int count)
{
    unsigned seed0 = first_seed();
    count = programs_per_mode(count);
    int refused = 0, backwards = 0, tried = 0, judged = 0, wjudged = 0, hjudged = 0, compiled2 = 0, ckpts = 0;
    for (unsigned seed = seed0; seed < seed0 + (unsigned)count; seed++) {
        tj_scope_begin();
        argspec spec[3];
        make_specs(seed, M_F64, spec);
        spec[0].layout = 0;   /* a leaf */
        int64_t wlen = spec[0].ndim ? spec[0].shape[spec[0].ndim - 1] : 1;
        argspec ws = {.ndim = 1, .shape = {wlen}, .dt = TJ_F64};
        prog pc = {.seed = seed, .mode = M_GRAD}, pe = pc;
        pc.w = tj_keep(make_arg(&ws, seed + 99));
        pe.w = tj_keep(make_arg(&ws, seed + 99));
        assert_int_equal(tj_requires_grad(pc.w, true), 0);
        assert_int_equal(tj_requires_grad(pe.w, true), 0);
        pc.stat = tj_keep(tj_zeros(TJ_F64, 0, NULL));
        pe.stat = tj_keep(tj_zeros(TJ_F64, 0, NULL));
        pc.inner = tj_compile(tu_program_inner, &pc, &(tj_compile_options){.name = "inner"});
        pe.inner = tj_compile(tu_program_inner, &pe, &(tj_compile_options){.name = "inner"});
        tj_compiled *c = tj_compile_multi(tu_program_model, &pc, &(tj_compile_options){.name = "grad", .no_dynamic = true});
        for (int call = 0; call < 2; call++) {
            tj_tensor *ea[3], *ca[3], *want[MAX_OUTS], *got[MAX_OUTS];
            twin_args(spec, seed * 3u + (unsigned)(call * 7), ea, ca);
            assert_int_equal(tj_requires_grad(ea[0], true), 0);
            assert_int_equal(tj_requires_grad(ca[0], true), 0);
            int n = check_call(c, tu_program_model, &pe, &pe, ea, ca, spec, call, want, got);
            if (n < 0) {
                refused++;
                break;
            }
            /* call 1 of some programs: a backward through some results only
             * (a compiled call's others get zero tangents, and what only they
             * reach no gradient, as eagerly) */
            uint64_t pick = call == 0 || seed % 3 == 2 ? ~(uint64_t)0 : seed % 3 ? ~(uint64_t)1 : 1;
            int be = backward_of(want, n, pick);
            char eerr[512];
            snprintf(eerr, sizeof eerr, "%s", be < 0 ? tj_last_error() : "");
            tj_clear_error();
            int bc = backward_of(got, n, pick);
            /* a value saved for the backward, written in place after: eager
             * autograd refuses the backward, a compiled call's partitioned
             * backward reads the value as saved (functionalized, as AOTAutograd
             * does): its gradients are judged against central differences */
            if (be < 0 && bc > 0 && strstr(eerr, "was modified in place after it was saved")) {
                if (call == 0)
                    fd_check(&pe, spec, seed * 3u, ea[0], NULL, tj_grad(ca[0])),
                        fd_check(&pe, spec, seed * 3u, pe.w, pe.w, tj_grad(pc.w));
                refused++;
                break;
            }
            if (be != bc)
                fail_msg("grad program %u, call %d: backward %s eagerly, %s compiled (%s)\nsteps: %s", seed, call,
                         be < 0 ? "failed" : be ? "ran" : "had nothing to do",
                         bc < 0 ? "failed" : bc ? "ran" : "had nothing to do", be < 0 ? eerr : tj_last_error(),
                         pe.log);
            if (be < 0) {   /* refused alike: a program with an op without a gradient */
                tj_clear_error();
                refused++;
                break;
            }
            check_grad(&pe, call, "argument 0's gradient", tj_grad(ca[0]), tj_grad(ea[0]), spec);
            check_grad(&pe, call, "the weight's gradient", tj_grad(pc.w), tj_grad(pe.w), spec);
            check_grad(&pe, call, "the running statistic", pc.stat, pe.stat, spec);
            if (call == 0 && be > 0) {
                tried++;
                judged += fd_check(&pe, spec, seed * 3u, ea[0], NULL, tj_grad(ea[0]));
                wjudged += fd_check(&pe, spec, seed * 3u, pe.w, pe.w, tj_grad(pe.w));
                hjudged += curvature_check(&pe, spec, seed * 3u, ea[0], NULL);
                hjudged += curvature_check(&pe, spec, seed * 3u, pe.w, pe.w);
                tj_zero_grad(pc.w);
                tj_zero_grad(pe.w);
                compiled2 += second_order_check(&pc, &pe, spec, seed * 3u + 11u);
                ckpts += checkpoint_check(&pe, spec, seed * 3u + 17u);
            }
            backwards += be;
            tj_zero_grad(pc.w);
            tj_zero_grad(pe.w);
        }
        tj_compiled_free(c);
        tj_compiled_free(pc.inner);
        tj_compiled_free(pe.inner);
        tj_release(pc.w);
        tj_release(pe.w);
        tj_release(pc.stat);
        tj_release(pe.stat);
        tj_scope_end();
    }
    check_refusals(M_GRAD, refused, count);
    if (backwards * 2 < count)   /* most programs must reach a backward */
        fail_msg("grad: %d backwards in %d programs", backwards, count);
    if (getenv("TJ_PROGRAMS_VERBOSE"))
        fprintf(stderr, "grad: %d backwards; of %d first ones, %d (arg 0) and %d (weight) judged against "
                "central differences, %d curvatures (both) against second differences, %d second-order models "
                "compiled against eager, %d through tj_checkpoint against without\n", backwards, tried, judged,
                wjudged, hjudged, compiled2, ckpts);
    /* most run in f64 and are smooth at random inputs (about 65% judged over
     * thousands; a third at least, so that the default few dozen do not fail
     * by the draw) */
    if (judged * 3 < tried || wjudged * 3 < tried)
        fail_msg("grad: of %d backwards, %d (arg 0) and %d (weight) judged against central differences", tried,
                 judged, wjudged);
}

/* ---- training steps ------------------------------------------------------------------------------ */

/* A program as the forward of a training step: its weight is the parameter
 * of an optimizer. */
typedef struct tprog {
    prog p;   /* first: the program's context */
    tj_optimizer *opt;
    double max_norm;   /* > 0: the gradient clipped to that norm before the update */
    bool ckpt;         /* the program run inside tj_checkpoint */
    tj_grad_scaler *sc;   /* not NULL: the loss scaled, the step and the scale's update through it */
    tj_tensor *mult;      /* with sc: f64 0-dim the loss is multiplied by (inf: a step to skip) */
} tprog;

/* The program on clones of its arguments: inside tj_checkpoint, a program
 * that writes its argument in place would be refused (run again, it would
 * start from the written value). */
static int cloned_model(void *ctx, tj_tensor *const *in, int nin, tj_tensor **out, int max)
{
    tj_tensor *c[3];
    for (int i = 0; i < nin && i < 3; i++)
        if (!(c[i] = tj_clone(in[i])))
            return -1;
    return tu_program_model(ctx, c, nin, out, max);
}

/* One step, compiled whole: zero_grad, the program, a loss over its float
 * results, backward (when the loss depends on the weight), the update. */
static int train_step(void *ctx, tj_tensor *const *in, int nin, tj_tensor **out, int max)
{
    tprog *t = ctx;
    tj_tensor *res[MAX_OUTS];
    tj_optimizer_zero_grad(t->opt);
    int n = t->ckpt ? tj_checkpoint(cloned_model, &t->p, in, nin, res, MAX_OUTS)
                    : tu_program_model(&t->p, in, nin, res, MAX_OUTS);
    if (n < 0)
        return -1;
    tj_tensor *loss = tj_zeros(TJ_F64, 0, NULL);
    for (int i = 0; i < n && loss; i++)
        if (is_float(res[i]) && tj_numel(res[i]) > 0)
            loss = tj_add(loss, tj_mul_s(tj_sum(tj_cast(res[i], TJ_F64), NULL, 0, false), 1.0 / (i + 1)));
    if (!loss || (tj_get_requires_grad(loss) && tj_backward(t->sc ? tj_grad_scaler_scale(t->sc, tj_mul(loss, t->mult)) : loss) != 0))
        return -1;
    if (t->max_norm > 0 && ((t->sc && tj_grad_scaler_unscale(t->sc, t->opt) != 0) ||
                            !tj_clip_grad_norm(&t->p.w, 1, t->max_norm, 2)))
        return -1;
    if (t->sc ? tj_grad_scaler_step(t->sc, t->opt) != 0 || tj_grad_scaler_update(t->sc) != 0
              : tj_optimizer_step(t->opt) != 0)
        return -1;
    out[0] = tj_detach(loss);
    return 1;
}

/* SGD (plain, or momentum with weight decay and Nesterov), Adam, AdamW,
 * Adam with amsgrad, RMSprop (plain, or centered with momentum) or Adagrad
 * (eps 1e-3: a gradient at rounding level must not make a full step). */
static tj_optimizer *train_optimizer(unsigned seed, tj_tensor *w)
{
    switch (seed % 8) {
    case 0: return tj_sgd(&w, 1, &(tj_sgd_options){.lr = 0.1});
    case 1: return tj_sgd(&w, 1, &(tj_sgd_options){.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
    case 2: return tj_adam(&w, 1, &(tj_adam_options){.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-3});
    case 3:
        return tj_adam(&w, 1,
                       &(tj_adam_options){.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-3, .weight_decay = 0.1,
                                          .decoupled = true});
    case 4: return tj_adam(&w, 1, &(tj_adam_options){.lr = 0.01, .beta1 = 0.5, .beta2 = 0.6, .eps = 1e-3, .amsgrad = true});
    case 5: return tj_rmsprop(&w, 1, &(tj_rmsprop_options){.lr = 0.01, .alpha = 0.99, .eps = 1e-3});
    case 6:
        return tj_rmsprop(&w, 1, &(tj_rmsprop_options){.lr = 0.01, .alpha = 0.9, .eps = 1e-3, .weight_decay = 0.05,
                                                       .momentum = 0.5, .centered = true});
    default:
        return tj_adagrad(&w, 1, &(tj_adagrad_options){.lr = 0.05, .lr_decay = 0.1, .eps = 1e-3});
    }
}

/* The training mode: f64 programs as training steps compiled whole, against
 * the same steps eager on a twin weight and optimizer: the loss, the
 * weight's gradient and the weight after each of three calls. */
static void run_train(int count)
{
    unsigned seed0 = first_seed();
    count = programs_per_mode(count);
    int refused = 0;
    for (unsigned seed = seed0; seed < seed0 + (unsigned)count; seed++) {
        tj_scope_begin();
        argspec spec[3];
        make_specs(seed, M_F64, spec);
        int64_t wlen = spec[0].ndim ? spec[0].shape[spec[0].ndim - 1] : 1;
        argspec ws = {.ndim = 1, .shape = {wlen}, .dt = TJ_F64};
        tprog tc = {.p = {.seed = seed, .mode = M_TRAIN}}, te = tc;
        tc.p.w = tj_keep(make_arg(&ws, seed + 99));
        te.p.w = tj_keep(make_arg(&ws, seed + 99));
        assert_int_equal(tj_requires_grad(tc.p.w, true), 0);
        assert_int_equal(tj_requires_grad(te.p.w, true), 0);
        tc.p.inner = tj_compile(tu_program_inner, &tc.p, &(tj_compile_options){.name = "inner"});
        te.p.inner = tj_compile(tu_program_inner, &te.p, &(tj_compile_options){.name = "inner"});
        assert_non_null(tc.opt = train_optimizer(seed, tc.p.w));
        assert_non_null(te.opt = train_optimizer(seed, te.p.w));
        /* every other seed clips the gradient inside the step, every fourth
         * pair of them sets a falling lr between calls */
        tc.max_norm = te.max_norm = seed / 8 % 2 ? 0.5 : 0;
        bool schedule = seed / 16 % 2;
        tc.ckpt = te.ckpt = seed / 32 % 2;   /* eager: run again in the backward; compiled: the partition's */
        /* every other 64 seeds scale the loss: the scale moves within the
         * three calls (growth every 2 clean steps), a non-finite gradient
         * skips the step in both */
        if (seed / 64 % 2) {
            tj_grad_scaler_options so = {.init_scale = 16, .growth_factor = 2, .backoff_factor = 0.5,
                                         .growth_interval = 2};
            assert_non_null(tc.sc = tj_grad_scaler_new(&so));
            assert_non_null(te.sc = tj_grad_scaler_new(&so));
            tc.mult = tj_keep(tj_ones(TJ_F64, 0, NULL));
            te.mult = tj_keep(tj_ones(TJ_F64, 0, NULL));
        }
        double lr0 = tj_optimizer_lr(tc.opt);
        tj_compiled *c = tj_compile_multi(train_step, &tc, &(tj_compile_options){.name = "train", .no_dynamic = true});
        for (int call = 0; call < 3; call++) {
            tj_tensor *ea[3], *ca[3], *want[MAX_OUTS], *got[MAX_OUTS];
            if (schedule) {
                assert_int_equal(tj_optimizer_set_lr(tc.opt, lr0 / (call + 1)), 0);
                assert_int_equal(tj_optimizer_set_lr(te.opt, lr0 / (call + 1)), 0);
            }
            if (tc.sc) {   /* every other scaled seed: an inf loss on the second call, skipped */
                double m = call == 1 && seed / 128 % 2 ? INFINITY : 1;
                assert_int_equal(tj_copy_(tc.mult, tj_scalar(TJ_F64, m)), 0);
                assert_int_equal(tj_copy_(te.mult, tj_scalar(TJ_F64, m)), 0);
            }
            twin_args(spec, seed * 3u + (unsigned)(call * 7), ea, ca);
            if (check_call(c, train_step, &te, &te.p, ea, ca, spec, call, want, got) < 0) {
                refused++;
                break;
            }
            check_grad(&te.p, call, "the weight's gradient", tj_grad(tc.p.w), tj_grad(te.p.w), spec);
            check_grad(&te.p, call, "the weight", tc.p.w, te.p.w, spec);
            if (tc.sc && tj_grad_scaler_get_scale(tc.sc) != tj_grad_scaler_get_scale(te.sc))
                fail_msg("seed %u call %d: the loss scale %g compiled, %g eager", seed, call,
                         tj_grad_scaler_get_scale(tc.sc), tj_grad_scaler_get_scale(te.sc));
        }
        if (getenv("TJ_PROGRAMS_VERBOSE")) {
            tj_compiled_stats st;
            tj_compiled_stats_get(c, &st);
            fprintf(stderr, "  %d graphs, %d breaks, %lu eager calls\n", st.graphs, st.breaks, st.eager_calls);
        }
        tj_compiled_free(c);
        tj_optimizer_free(tc.opt);
        tj_optimizer_free(te.opt);
        tj_grad_scaler_free(tc.sc);
        tj_grad_scaler_free(te.sc);
        tj_release(tc.mult);
        tj_release(te.mult);
        tj_compiled_free(tc.p.inner);
        tj_compiled_free(te.p.inner);
        tj_release(tc.p.w);
        tj_release(te.p.w);
        tj_scope_end();
    }
    check_refusals(M_TRAIN, refused, count);
}

static void test_f32_programs(void **state) { (void)state; run_mode(M_F32, 80); }
static void test_f64_programs(void **state) { (void)state; run_mode(M_F64, 40); }
static void test_mixed_programs(void **state) { (void)state; run_mode(M_MIXED, 60); }
static void test_int_programs(void **state) { (void)state; run_mode(M_INT, 40); }
static void test_dynamic_programs(void **state) { (void)state; run_dyn(40); }
static void test_grad_programs(void **state) { (void)state; run_grad(40); }
static void test_autocast_programs(void **state) { (void)state; run_mode(M_AUTOCAST, 40); }
static void test_train_programs(void **state) { (void)state; run_train(40); }

int main(void)
{
    tu_use_build_cache();
    if (getenv("TJ_PROGRAMS_ONLY"))   /* e.g. "test_train_programs", or "*_train_*" */
        cmocka_set_test_filter(getenv("TJ_PROGRAMS_ONLY"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32_programs),
        cmocka_unit_test(test_f64_programs),
        cmocka_unit_test(test_mixed_programs),
        cmocka_unit_test(test_int_programs),
        cmocka_unit_test(test_dynamic_programs),
        cmocka_unit_test(test_grad_programs),
        cmocka_unit_test(test_autocast_programs),
        cmocka_unit_test(test_train_programs),
    };
    return tu_run_jit_suite("programs", tests, sizeof tests / sizeof tests[0],
                            "random programs compiled against eager");
}
