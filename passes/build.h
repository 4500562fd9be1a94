/* build.h - a tiny graph builder for passes that write new nodes: the
 * decompositions (passes/decompose.c) and the rewrite rules (passes/simplify.c).
 *
 * Every helper adds one node through ir_graph_add (so results are
 * hash-consed, type-checked by the op's shape rule, and merge with identical
 * nodes) and returns it, or NULL. The first failure is recorded in the
 * builder and every later call returns NULL at once, so a decomposition is
 * written straight through, with one check at its end:
 *
 *   ir_node *m = b_amax(b, x, dims, 1, true);
 *   ir_node *e = b_exp(b, b_sub(b, x, m));
 *   return b_div(b, e, b_sum(b, e, dims, 1, true));   // NULL if anything failed
 *
 * Constants are `scalar` nodes: weak 0-dim wrapped numbers (i64, f64 or bool)
 * that promote like a Python number, exactly like the _s ops of the eager API,
 * so x * 0.5 keeps x's float dtype and x + 1 keeps an integer x's dtype.
 */
#ifndef TJ_PASSES_BUILD_H
#define TJ_PASSES_BUILD_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir/graph.h"

typedef struct ps_builder {
    ir_graph *g;        /* where nodes go */
    const char *file;   /* the call site new nodes get (in g's arena), or NULL: */
    int line;           /* the rebuild sets the one of the node being replaced */
    bool failed;        /* a call failed; err holds the first message */
    char err[512];
} ps_builder;

void ps_b_init(ps_builder *b, ir_graph *g);

/* Records a failure (the first one wins) and returns NULL. */
ir_node *ps_b_fail(ps_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Forgets a failure: the caller takes another way (the nodes the failed
 * attempt added stay unused, for dce). */
void ps_b_clear(ps_builder *b);

/* Adds op(in[0..nin), attrs). NULL when the builder has failed before, when a
 * mandatory input is NULL (an earlier helper failed), or when ir_graph_add
 * refuses (its message is recorded). */
ir_node *ps_b_op(ps_builder *b, ir_op op, ir_node *const *in, int nin, const ir_attrs *a);

/* A weak scalar of dtype dt (i64, f64 or bool) holding v. */
ir_node *ps_b_scalar(ps_builder *b, double v, tj_dtype dt);
/* The wrapped number v as the eager _s ops make it for an operand x
 * (ir_scalar_dtype: i64 for an integer beside an integer or bool value,
 * else f64). */
ir_node *ps_b_number(ps_builder *b, double v, const ir_node *x);

/* Reductions over dims[0..n) (n == 0: every dim). */
ir_node *ps_b_reduce(ps_builder *b, ir_op op, ir_node *x, const int64_t *dims, int n,
                     bool keepdim);
ir_node *ps_b_var(ps_builder *b, ir_node *x, const int64_t *dims, int n, int64_t correction,
                  bool keepdim);

/* Views. */
ir_node *ps_b_permute(ps_builder *b, ir_node *x, const int64_t *perm);
ir_node *ps_b_transpose_last2(ps_builder *b, ir_node *x);
ir_node *ps_b_unsqueeze(ps_builder *b, ir_node *x, int64_t dim);
ir_node *ps_b_squeeze(ps_builder *b, ir_node *x, const int64_t *dims, int n);
ir_node *ps_b_reshape(ps_builder *b, ir_node *x, const int64_t *shape, int n);

/* v [n] shaped [n, 1, ..., 1] to broadcast along dim d of an nd-dim tensor. */
ir_node *ps_b_along(ps_builder *b, ir_node *v, int d, int nd);

/* 0, 1, ..., n - 1 in dtype dt (n static). */
ir_node *ps_b_arange(ps_builder *b, int64_t n, tj_dtype dt);
/* 0, 1, ..., n - 1 in i64, n the size of dim d of x, symbolic too: then the
 * running count of ones along one line of x (its other dims cut to their
 * first index), so the graph follows each call's size. */
ir_node *ps_b_arange_of(ps_builder *b, ir_node *x, int d);
/* index_select(x, dim, ix). */
ir_node *ps_b_index_select(ps_builder *b, ir_node *x, int64_t dim, ir_node *ix);

/* x converted to dt (x itself when it already has dtype dt and is not weak). */
ir_node *ps_b_cast(ps_builder *b, ir_node *x, tj_dtype dt);
/* x itself if it is a float value, else x cast to f32 (the FLOAT rule). */
ir_node *ps_b_float(ps_builder *b, ir_node *x);

/* A node with exactly type t holding x's values: x itself, or x cast and/or
 * expanded. NULL (and no failure recorded) when that is not possible, e.g.
 * when t has a symbolic dim where x has size 1. */
ir_node *ps_b_like(ps_builder *b, ir_node *x, const ir_type *t);

/* A constant of type t (static shape) holding v: a scalar when t is a weak
 * 0-dim type, else a full. NULL (no failure recorded) when t's shape is
 * symbolic or a scalar cannot have t's dtype. */
ir_node *ps_b_const(ps_builder *b, double v, const ir_type *t);

/* ---- short forms ------------------------------------------------------------ */

static inline ir_node *b_un(ps_builder *b, ir_op op, ir_node *x)
{
    return ps_b_op(b, op, &x, 1, NULL);
}
static inline ir_node *b_bin(ps_builder *b, ir_op op, ir_node *x, ir_node *y)
{
    return ps_b_op(b, op, (ir_node *[]){x, y}, 2, NULL);
}
/* x op v and v op x with v a wrapped number. */
static inline ir_node *b_bin_s(ps_builder *b, ir_op op, ir_node *x, double v)
{
    return b_bin(b, op, x, x ? ps_b_number(b, v, x) : NULL);
}
static inline ir_node *b_s_bin(ps_builder *b, ir_op op, double v, ir_node *x)
{
    return b_bin(b, op, x ? ps_b_number(b, v, x) : NULL, x);
}

static inline ir_node *b_add(ps_builder *b, ir_node *x, ir_node *y) { return b_bin(b, OP_add, x, y); }
static inline ir_node *b_sub(ps_builder *b, ir_node *x, ir_node *y) { return b_bin(b, OP_sub, x, y); }
static inline ir_node *b_mul(ps_builder *b, ir_node *x, ir_node *y) { return b_bin(b, OP_mul, x, y); }
static inline ir_node *b_div(ps_builder *b, ir_node *x, ir_node *y) { return b_bin(b, OP_div, x, y); }
static inline ir_node *b_add_s(ps_builder *b, ir_node *x, double v) { return b_bin_s(b, OP_add, x, v); }
static inline ir_node *b_mul_s(ps_builder *b, ir_node *x, double v) { return b_bin_s(b, OP_mul, x, v); }
static inline ir_node *b_div_s(ps_builder *b, ir_node *x, double v) { return b_bin_s(b, OP_div, x, v); }
static inline ir_node *b_rsub_s(ps_builder *b, double v, ir_node *x) { return b_s_bin(b, OP_sub, v, x); }

static inline ir_node *b_neg(ps_builder *b, ir_node *x) { return b_un(b, OP_neg, x); }
static inline ir_node *b_exp(ps_builder *b, ir_node *x) { return b_un(b, OP_exp, x); }
static inline ir_node *b_log(ps_builder *b, ir_node *x) { return b_un(b, OP_log, x); }

static inline ir_node *b_where(ps_builder *b, ir_node *c, ir_node *x, ir_node *y)
{
    return ps_b_op(b, OP_where, (ir_node *[]){c, x, y}, 3, NULL);
}
/* where(c, x, v) and where(c, v, x) with v a wrapped number. */
static inline ir_node *b_where_xs(ps_builder *b, ir_node *c, ir_node *x, double v)
{
    return b_where(b, c, x, x ? ps_b_number(b, v, x) : NULL);
}
static inline ir_node *b_where_sx(ps_builder *b, ir_node *c, double v, ir_node *x)
{
    return b_where(b, c, x ? ps_b_number(b, v, x) : NULL, x);
}

static inline ir_node *b_sum(ps_builder *b, ir_node *x, const int64_t *dims, int n, bool keepdim)
{
    return ps_b_reduce(b, OP_sum, x, dims, n, keepdim);
}
static inline ir_node *b_amax(ps_builder *b, ir_node *x, const int64_t *dims, int n, bool keepdim)
{
    return ps_b_reduce(b, OP_amax, x, dims, n, keepdim);
}
static inline ir_node *b_mean(ps_builder *b, ir_node *x, const int64_t *dims, int n, bool keepdim)
{
    return ps_b_reduce(b, OP_mean, x, dims, n, keepdim);
}
static inline ir_node *b_matmul(ps_builder *b, ir_node *x, ir_node *y)
{
    return b_bin(b, OP_matmul, x, y);
}

#endif
