/* suite.h - the benchmark suite (shared/bench/SUITE.md, cases P1-P7) as C
 * model functions over the public API, and the table runners iterate.
 *
 * A case is three functions. setup() makes the inputs and then the weights
 * (random normal from a fixed seed; weights scaled by 1/sqrt(fan_in)) into a
 * bench_args; run() is the model: one forward pass, returning its result in
 * the caller's scope. It has the shape of a tj_model_fn, what a user hands to
 * tj_compile(): the inputs come as args (they vary per call), the weights
 * through ctx, the bench_args (captured by reference when traced):
 *
 *     y = c->run(&a, a.t, a.ninputs);
 *
 * teardown() releases the tensors. The order of the tensors is part of the
 * case: benchmarks/pytorch/suite.py takes them in the same order (its --check
 * mode loads them from the .npy files `tjit bench --save` writes).
 */
#ifndef TJ_BENCH_SUITE_H
#define TJ_BENCH_SUITE_H

#include <tjit.h>

#define BENCH_MAX_ARGS 16
#define BENCH_SEED 0

typedef struct bench_args {
    int n;          /* tensors in t[] */
    int ninputs;    /* t[0..ninputs) are inputs; the rest are weights */
    tj_tensor *t[BENCH_MAX_ARGS];   /* owned (tj_keep), released by teardown */
    tj_optimizer *opt;              /* training cases that keep optimizer state */
} bench_args;

/* The model: ctx is the case's bench_args, args its inputs (t[0..ninputs));
 * the result is owned by the current scope (NULL with tj_last_error() on
 * failure). Same shape as tj_model_fn. */
typedef tj_tensor *(*bench_model_fn)(void *ctx, tj_tensor *const *args, int nargs);

typedef struct bench_case {
    const char *id;     /* "P1" */
    const char *name;   /* "pointwise" */
    const char *work;   /* one line: shapes and what is computed */
    /* Fills args (seeded with BENCH_SEED first); 0, or -1 with tj_last_error()
     * set, in which case args holds what was made so far (teardown frees it). */
    int (*setup)(bench_args *args);
    bench_model_fn run;
    void (*teardown)(bench_args *args);
    const char *skip;   /* non-NULL: why the case cannot run on tjit yet (and
                         * setup, run, teardown are NULL) */
    bool trains;        /* run() updates the weights (a training step): the
                         * runner restores them before each checked call */
    bench_model_fn loss;   /* a training case's forward and loss alone (run() is
                            * it, then backward and the update), for drivers
                            * that step themselves (benchmarks/dist) */
} bench_case;

extern const bench_case bench_cases[];
extern const int bench_ncases;

/* Compiled and eager results differ by more than this times max(1, max|eager|):
 * the case fails. */
#define BENCH_TOLERANCE 1e-4
#define BENCH_TOLERANCE_INT8 5e-2

/* What c's compiled result may differ from eager by: max |diff| /
 * max(1, |eager|); 0 for the default, BENCH_TOLERANCE (the bf16 and int8
 * cases, whose results round to bf16 or are quantized, allow more). */
double bench_tolerance(const bench_case *c);
/* Whether c compiles with tj_compile_options.quantize_dynamic (Q4). */
bool bench_int8(const bench_case *c);

/* A training case's weights (args->t[ninputs..n)) copied into snap[ninputs..n)
 * (kept, caller releases), and copied back with their gradients zeroed, so
 * two runners start from the same weights. 0, or -1 with tj_last_error(). */
int bench_snapshot(const bench_args *args, tj_tensor **snap);
void bench_restore(bench_args *args, tj_tensor *const *snap);

/* The case whose id or name is s (case-insensitive), or NULL. */
const bench_case *bench_find(const char *s);

#endif
