/* util_programs.h - the random-program generator (tests/util_programs.c):
 * its state, small helpers, and the entry points tests/test_programs.c runs
 * (the program as a model function; pointwise steps for the dynamic mode).
 */
#ifndef TJ_TEST_UTIL_PROGRAMS_H
#define TJ_TEST_UTIL_PROGRAMS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tjit.h"

enum { M_F32, M_F64, M_MIXED, M_INT, M_DYN, M_GRAD, M_AUTOCAST, M_TRAIN };

#define MAX_NUMEL 4096
/* The norms' eps: a row of equal values (a maximum against its own sum,
 * say) normalizes its rounding residue by 1/sqrt(eps); f32 sums in another
 * order leave another residue, so 1e-5 (x316) would flag conditioning, not
 * bugs. */
#define NORM_EPS 1e-2
#define MAX_VALUES 48
#define MAX_OUTS 4

/* One program: its seed and mode, the captured weight, the steps' names. */
typedef struct prog {
    unsigned seed;
    int mode;
    tj_tensor *w;
    bool logging;
    bool f32_seen;   /* an f32 value in an f64 program: f32's tolerance */
    double lowp_tol; /* a long product in bf16 or f16: its rounding's tolerance */
    bool not_derivative;   /* the gradient is not the loss's derivative (as in
                            * PyTorch): a leaf written in no-grad mode, a value
                            * read as a number (tj_item) */
    tj_aot_model *aot;   /* set: calls run the exported model instead */
    tj_compiled *inner;  /* set: a compiled function the program may call
                          * (tu_program_inner; inlined when the program is traced) */
    tj_tensor *stat;     /* set (grad mode): an f64 running statistic the program may
                          * update in place in no-grad mode, as batch norm's */
    char log[2048];
} prog;

/* The generator's state: a linear congruential sequence (local to a call,
 * so the trace and the eager run make the same choices). */
typedef struct gen {
    unsigned s;
    prog *p;
    bool near_weight;   /* the step's input was made from the weight: may view it */
    bool stat_written;  /* this call wrote prog.stat from its values (no grad) */
} gen;

static inline int rnd(gen *g, int n)
{
    g->s = g->s * 1103515245u + 12345u;
    return (int)((g->s >> 8) % (unsigned)n);
}

static inline void note(gen *g, const char *fmt, ...)
{
    if (!g->p->logging)
        return;
    size_t len = strlen(g->p->log);
    if (len + 2 >= sizeof g->p->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->p->log + len, sizeof g->p->log - len, fmt, ap);
    va_end(ap);
    len = strlen(g->p->log);
    if (len + 2 < sizeof g->p->log)
        strcat(g->p->log, "; ");
}

static inline bool is_float(const tj_tensor *t)
{
    tj_dtype d = tj_dtype_of(t);
    return d == TJ_F32 || d == TJ_F64 || d == TJ_F16 || d == TJ_BF16;
}

/* Numbers for arithmetic: bool becomes i32. */
static inline tj_tensor *num(tj_tensor *t) { return tj_dtype_of(t) == TJ_BOOL ? tj_cast(t, TJ_I32) : t; }

/* Floats for float-only ops (mean, softmax, ...): integers and bool become f32. */
static inline tj_tensor *flt(tj_tensor *t) { return is_float(t) ? t : tj_cast(t, TJ_F32); }

/* A pointwise step over a (and b, broadcast with it): the dynamic mode's
 * generator draws from these too. */
tj_tensor *tu_program_unary(gen *g, tj_tensor *a);
/* An i64 tensor of the given shape with values in [0, hi), repeats allowed
 * (NULL above MAX_NUMEL elements). */
tj_tensor *tu_program_indices(gen *g, int nd, const int64_t *shape, int64_t hi);
/* The third family (tests/util_programs_more.c): the ops the others do not
 * draw; b broadcasts to a's shape. */
tj_tensor *tu_program_more(gen *g, tj_tensor *a, tj_tensor *b, bool exact);
/* M = A A^T / k + 2 I (A: x as r x k, r <= 8, *a2 = A): symmetric positive
 * definite with eigenvalues >= 2, so well conditioned; NULL when x has more
 * than 8 rows of its last dim, or none. */
tj_tensor *tu_program_spd(tj_tensor *x, tj_tensor **a2);
/* The fourth family (tests/util_programs_views.c): pieces and views, sliding
 * windows, in-place writes with tensor operands, and the ops no earlier
 * family draws (b: a partner of a's shape). */
tj_tensor *tu_program_views(gen *g, tj_tensor *a, tj_tensor *b, bool exact);
/* x += 1 in place (a bool x: x = !x, in place), as in-place ops keep x's
 * dtype category; 0 or -1. */
int tu_program_bump_(tj_tensor *x);
/* Whether program p may draw random numbers (dropout, rand, randn): not in
 * the int, dynamic and train modes, nor in the programs whose first call
 * runs on two threads at once (their draws interleave) or that are
 * exported (an exported model does not draw: docs/export.md). The harness
 * seeds the generator alike before the eager and the compiled call. */
bool tu_program_draws(const prog *p);
/* The function a program calls compiled (prog.inner, compiled with ctx the
 * program): a few steps of its own on its argument, maybe writing the
 * argument in place first. */
tj_tensor *tu_program_inner(void *ctx, tj_tensor *const *in, int n);
/* Its pointwise unary steps (a's shape kept: the dynamic mode draws them). */
tj_tensor *tu_program_unary_more(gen *g, tj_tensor *a, bool exact);
tj_tensor *tu_program_binary(gen *g, tj_tensor *a, tj_tensor *b);
/* A program's results into out: its last value and up to two more it made
 * (v[nin..nv)); their count. */
int tu_program_results(gen *g, tj_tensor **v, int nv, int nin, tj_tensor **out, int max);
/* The program of ctx (a prog: its seed and mode; its weight): steps over the
 * arguments and the weight, 1-3 results (a tj_model_multi_fn). */
int tu_program_model(void *ctx, tj_tensor *const *in, int nin, tj_tensor **out, int max);

/* The dynamic mode's programs never read a size: the generator follows each
 * value's shape abstractly (a dim is 1, or base dim k of the arguments), so
 * the dims marked dynamic stay symbolic and one graph serves new sizes. */
typedef struct ashape {
    int nd;
    int d[8];   /* -1: size 1; k + 8 z >= 0: the size of base dim k plus offset
                 * zigzag^-1(z) (with_offset); -s (s >= 2): static size s */
} ashape;

/* A dynamic-mode program: its prog and its arguments' abstract shapes. */
typedef struct dprog {
    prog p;
    ashape arg[3];
} dprog;

/* The dynamic mode's model (ctx a dprog): steps that never read a size. */
int tu_program_model_dyn(void *ctx, tj_tensor *const *in, int nin, tj_tensor **out, int max);

#endif
