/* k_reduce.c - eager kernels of the reductions: sum, mean, prod, amax, amin,
 * logsumexp, all, any, var, std, argmax, argmin.
 *
 * Plan: the input's dims split into kept dims (the O space, in output order)
 * and reduced dims (the R space). Size-1 dims drop out; neighbours contiguous
 * with each other merge (R dims are first sorted by stride, except for argmax
 * and argmin, whose index is row-major over the reduced dims). Two strategies:
 *
 *   inner  the R space's innermost dim is unit-stride: every output element
 *          reduces its segments with the lane-parallel row primitives of
 *          k_rows.h; strided segments are gathered into a buffer first.
 *   outer  a kept dim is unit-stride (say, reducing the leading dim): a block
 *          of up to RB output columns accumulates whole rows, one R index at
 *          a time, vectorized across the columns.
 *
 * Work is a list of units (an output element or a column block, times a few
 * parts of R when outputs are too few to keep threads busy) run through
 * rt_parallel_for. The split depends on shapes only, so results do not depend
 * on the thread count. Partial results are `rst` records that combine in index
 * order (argmax keeps the first maximum; NaN wins like in PyTorch).
 * Integer and bool inputs are first converted to a dense i64 copy (f32 for
 * logsumexp, f32 0/1 for all/any); only f32, f64 and i64 have kernels.
 */
#include <math.h>
#include <string.h>

#include "iter.h"
#include "k_rows.h"
#include "kernels.h"

#define CLONES RT_CLONES

enum { GATHER = 1024, RB = 256, ROWCHUNK = 64, FIND = 64 };

typedef enum { K_SUM, K_PROD, K_MAX, K_MIN, K_LSE, K_VAR, K_ARGMAX, K_ARGMIN } rkind;
typedef enum { E_F32, E_F64, E_I64 } relt;

/* A partial result. SUM PROD MAX MIN: a (float kinds) or i (i64); LSE: a the
 * shift, b the sum of exp(x - a); VAR: a the mean, b the sum of squared
 * deviations, i the count; ARGMAX/ARGMIN: a (float) or j (i64) the value,
 * i the index (-1: no element yet). */
typedef struct rst {
    double a, b;
    int64_t i, j;
} rst;

typedef struct red {
    ir_op op;
    rkind kind;
    relt elt;
    size_t esz;
    const char *x;        /* element 0 of the input (maybe a converted copy) */
    char *out;
    tj_dtype odt;
    int64_t correction;
    int no;               /* O space: kept dims of size > 1, merged */
    int64_t osize[TJ_MAX_DIMS], ostr[TJ_MAX_DIMS], oout[TJ_MAX_DIMS];
    int64_t nout;         /* output elements */
    int nr;               /* R space: reduced dims of size > 1, merged */
    int64_t rsize[TJ_MAX_DIMS], rstr[TJ_MAX_DIMS];
    int64_t rcount;       /* elements reduced into each output */
    bool outer;
    int64_t J, jout, nblk; /* outer: unit-stride kept dim, its output stride, blocks */
    int64_t tasks, parts;
    rst *scratch;         /* parts > 1: [task][part][RB or 1] partials */
} red;

/* ---- index iteration ------------------------------------------------------------- */

typedef struct it {
    int n;
    const int64_t *size, *str;
    int64_t idx[TJ_MAX_DIMS];
    int64_t off;
} it;

/* Positions t at row-major linear index lin of the space (sizes > 0). */
static void it_init(it *t, int n, const int64_t *size, const int64_t *str, int64_t lin)
{
    t->n = n;
    t->size = size;
    t->str = str;
    t->off = 0;
    for (int d = n - 1; d >= 0; d--) {
        t->idx[d] = lin % size[d];
        lin /= size[d];
        t->off += t->idx[d] * str[d];
    }
}

static inline void it_next(it *t)
{
    for (int d = t->n - 1; d >= 0; d--) {
        t->off += t->str[d];
        if (++t->idx[d] < t->size[d])
            return;
        t->off -= t->str[d] * t->size[d];
        t->idx[d] = 0;
    }
}

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- partial results ------------------------------------------------------------- */

static rst identity(const red *r)
{
    rst s = {0, 0, 0, 0};
    switch (r->kind) {
    case K_PROD: s.a = 1, s.i = 1; break;
    case K_MAX: s.a = r->op == OP_any ? 0 : -INFINITY, s.i = INT64_MIN; break;
    case K_MIN: s.a = r->op == OP_all ? 1 : INFINITY, s.i = INT64_MAX; break;
    case K_LSE: s.a = -INFINITY; break;
    case K_ARGMAX:
    case K_ARGMIN: s.i = -1; break;
    default: break;
    }
    return s;
}

static void lse_combine(rst *s, const rst *t)
{
    if (t->b == 0)
        return;
    if (s->b == 0) {
        *s = *t;
        return;
    }
    if (!isfinite(s->b) || !isfinite(t->b)) {   /* inf or NaN decides alone */
        s->b += t->b;
        s->a = fmax(s->a, t->a);
        return;
    }
    double m = fmax(s->a, t->a);
    s->b = s->b * exp(s->a - m) + t->b * exp(t->a - m);
    s->a = m;
}

/* Chan et al.'s merge of (count, mean, M2). */
static void var_combine(rst *s, const rst *t)
{
    if (t->i == 0)
        return;
    if (s->i == 0) {
        *s = *t;
        return;
    }
    double n1 = (double)s->i, n2 = (double)t->i, n = n1 + n2;
    double delta = t->a - s->a;
    s->a += delta * (n2 / n);
    s->b += t->b + delta * delta * (n1 * n2 / n);
    s->i += t->i;
}

/* t comes after s in index order: it wins only when strictly better. */
static void arg_combine(bool max, bool isfloat, rst *s, const rst *t)
{
    if (t->i < 0)
        return;
    if (s->i < 0) {
        *s = *t;
        return;
    }
    bool better;
    if (isfloat)
        better = (max ? t->a > s->a : t->a < s->a) || (t->a != t->a && s->a == s->a);
    else
        better = max ? t->j > s->j : t->j < s->j;
    if (better)
        *s = *t;
}

static void combine(const red *r, rst *s, const rst *t)
{
    bool f = r->elt != E_I64;
    switch (r->kind) {
    case K_SUM:
        if (f)
            s->a += t->a;
        else
            s->i = (int64_t)((uint64_t)s->i + (uint64_t)t->i);   /* wraps like torch */
        break;
    case K_PROD:
        if (f)
            s->a *= t->a;
        else
            s->i = (int64_t)((uint64_t)s->i * (uint64_t)t->i);
        break;
    case K_MAX:
        if (f)
            s->a = (t->a > s->a || t->a != t->a) ? t->a : s->a;
        else
            s->i = t->i > s->i ? t->i : s->i;
        break;
    case K_MIN:
        if (f)
            s->a = (t->a < s->a || t->a != t->a) ? t->a : s->a;
        else
            s->i = t->i < s->i ? t->i : s->i;
        break;
    case K_LSE: lse_combine(s, t); break;
    case K_VAR: var_combine(s, t); break;
    case K_ARGMAX:
    case K_ARGMIN: arg_combine(r->kind == K_ARGMAX, f, s, t); break;
    }
}

static void store(const red *r, int64_t k, double v, int64_t iv)
{
    switch (r->odt) {
    case TJ_F32: ((float *)r->out)[k] = (float)v; break;
    case TJ_F64: ((double *)r->out)[k] = v; break;
    case TJ_I64: ((int64_t *)r->out)[k] = iv; break;
    case TJ_I32: ((int32_t *)r->out)[k] = (int32_t)iv; break;
    case TJ_U8: ((uint8_t *)r->out)[k] = (uint8_t)iv; break;
    case TJ_BOOL: ((uint8_t *)r->out)[k] = iv != 0; break;
    default: break;
    }
}

/* Writes the final value of s to output element k. */
static void finish(const red *r, const rst *s, int64_t k)
{
    switch (r->op) {
    case OP_mean: store(r, k, s->a / (double)r->rcount, 0); break;
    case OP_all:
    case OP_any: store(r, k, 0, s->a != 0); break;
    case OP_logsumexp: store(r, k, log(s->b) + s->a, 0); break;
    case OP_var:
    case OP_std: {
        double den = (double)s->i - (double)r->correction;
        double v = s->b / (den > 0 ? den : 0);
        store(r, k, r->op == OP_std ? sqrt(v) : v, 0);
        break;
    }
    case OP_argmax:
    case OP_argmin: store(r, k, 0, s->i); break;
    default: store(r, k, s->a, s->i); break;
    }
}

/* ---- segment kernels: one contiguous run x[0..n), n >= 1 ----------------------- */

/* First index of m in x (of a NaN when m is NaN), scanning FIND at a time. */
#define FIND_DEFINE(T, S) \
    RT_ROW_INLINE int64_t find_##S(const T *restrict x, int64_t n, T m) \
    { \
        for (int64_t b = 0; b < n; b += FIND) { \
            int64_t e = min64(b + FIND, n); \
            int hit = 0; \
            if (m != m) \
                for (int64_t i = b; i < e; i++) \
                    hit |= x[i] != x[i]; \
            else \
                for (int64_t i = b; i < e; i++) \
                    hit |= x[i] == m; \
            for (int64_t i = b; hit && i < e; i++) \
                if (m != m ? x[i] != x[i] : x[i] == m) \
                    return i; \
        } \
        return 0; \
    }
FIND_DEFINE(float, f32)
FIND_DEFINE(double, f64)
FIND_DEFINE(int64_t, i64)

/* Product in LN lanes of T per block, blocks multiplied in double. */
#define PROD_DEFINE(T, S) \
    RT_ROW_INLINE double prod_##S(const T *restrict x, int64_t n) \
    { \
        double t = 1; \
        enum { LN = RT_LN_##S }; \
        for (int64_t b = 0; b < n; b += RT_ROW_BLOCK) { \
            int64_t m = min64(n - b, RT_ROW_BLOCK), i = 0; \
            T acc[LN], tail = 1; \
            for (int l = 0; l < LN; l++) \
                acc[l] = 1; \
            for (; i + LN <= m; i += LN) \
                for (int l = 0; l < LN; l++) \
                    acc[l] *= x[b + i + l]; \
            for (; i < m; i++) \
                tail *= x[b + i]; \
            for (int w = LN / 2; w > 0; w /= 2) \
                for (int l = 0; l < w; l++) \
                    acc[l] *= acc[l + w]; \
            t *= (double)acc[0] * (double)tail; \
        } \
        return t; \
    }
PROD_DEFINE(float, f32)
PROD_DEFINE(double, f64)

/* var and std accumulate f32 in double (no overflow near FLT_MAX, like torch). */
#define VAR_SUM_f32 rt_row_sum_d_f32
#define VAR_SQDEV_f32 rt_row_sqdev_d_f32
#define VAR_SUM_f64 rt_row_sum_f64
#define VAR_SQDEV_f64 rt_row_sqdev_f64

#define SEG_FLOAT_DEFINE(T, S) \
    CLONES static rst seg_##S(rkind k, const T *restrict x, int64_t n) \
    { \
        rst r = {0, 0, 0, 0}; \
        switch (k) { \
        case K_SUM: r.a = rt_row_sum_##S(x, n); break; \
        case K_PROD: r.a = prod_##S(x, n); break; \
        case K_MAX: r.a = rt_row_max_##S(x, n); break; \
        case K_MIN: r.a = rt_row_min_##S(x, n); break; \
        case K_LSE: { \
            T m = rt_row_max_##S(x, n); \
            r.a = isinf(m) ? 0 : m; \
            r.b = rt_row_expsum_##S(x, n, (T)r.a); \
            break; \
        } \
        case K_VAR: \
            r.a = VAR_SUM_##S(x, n) / (double)n; \
            r.b = VAR_SQDEV_##S(x, n, r.a); \
            r.i = n; \
            break; \
        case K_ARGMAX: \
        case K_ARGMIN: { \
            T m = k == K_ARGMAX ? rt_row_max_##S(x, n) : rt_row_min_##S(x, n); \
            r.a = m; \
            r.i = find_##S(x, n, m); \
            break; \
        } \
        } \
        return r; \
    }
SEG_FLOAT_DEFINE(float, f32)
SEG_FLOAT_DEFINE(double, f64)

CLONES static rst seg_i64(rkind k, const int64_t *restrict x, int64_t n)
{
    rst r = {0, 0, 0, 0};
    uint64_t acc = k == K_PROD;
    int64_t m = x[0];
    switch (k) {
    case K_SUM:
        for (int64_t i = 0; i < n; i++)
            acc += (uint64_t)x[i];
        r.i = (int64_t)acc;
        break;
    case K_PROD:
        for (int64_t i = 0; i < n; i++)
            acc *= (uint64_t)x[i];
        r.i = (int64_t)acc;
        break;
    case K_MAX:
    case K_ARGMAX:
        for (int64_t i = 0; i < n; i++)
            m = x[i] > m ? x[i] : m;
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            m = x[i] < m ? x[i] : m;
        break;
    }
    if (k == K_MAX || k == K_MIN)
        r.i = m;
    if (k == K_ARGMAX || k == K_ARGMIN) {
        r.j = m;
        r.i = find_i64(x, n, m);
    }
    return r;
}

static rst seg_contig(const red *r, const void *x, int64_t n)
{
    switch (r->elt) {
    case E_F32: return seg_f32(r->kind, x, n);
    case E_F64: return seg_f64(r->kind, x, n);
    default: return seg_i64(r->kind, x, n);
    }
}

/* A run of n elements at stride `stride`; base is its first R index. */
static rst seg_run(const red *r, const char *p, int64_t n, int64_t stride, int64_t base)
{
    bool arg = r->kind == K_ARGMAX || r->kind == K_ARGMIN;
    if (stride == 1) {
        rst t = seg_contig(r, p, n);
        t.i += arg ? base : 0;
        return t;
    }
    rst s = identity(r);
    _Alignas(64) char buf[GATHER * 8];
    for (int64_t k = 0; k < n; k += GATHER) {
        int64_t m = min64(GATHER, n - k);
        const char *q = p + k * stride * (int64_t)r->esz;
        if (r->esz == 4)
            for (int64_t i = 0; i < m; i++)
                memcpy(buf + 4 * i, q + 4 * i * stride, 4);
        else
            for (int64_t i = 0; i < m; i++)
                memcpy(buf + 8 * i, q + 8 * i * stride, 8);
        rst t = seg_contig(r, buf, m);
        t.i += arg ? base + k : 0;
        combine(r, &s, &t);
    }
    return s;
}

/* ---- inner strategy --------------------------------------------------------------- */

/* Reduces R indices [lo, hi) of the output element whose input offset is xoff. */
static rst inner_range(const red *r, int64_t xoff, int64_t lo, int64_t hi)
{
    rst s = identity(r);
    if (lo >= hi)
        return s;
    int64_t L = r->nr ? r->rsize[r->nr - 1] : 1, Ls = r->nr ? r->rstr[r->nr - 1] : 0;
    it seg;
    it_init(&seg, r->nr ? r->nr - 1 : 0, r->rsize, r->rstr, lo / L);
    int64_t within = lo % L;
    for (int64_t lin = lo; lin < hi;) {
        int64_t take = min64(L - within, hi - lin);
        const char *p = r->x + (xoff + seg.off + within * Ls) * (int64_t)r->esz;
        rst t = seg_run(r, p, take, Ls, lin);
        combine(r, &s, &t);
        lin += take;
        within = 0;
        it_next(&seg);
    }
    return s;
}

static void inner_units(void *ctx, int64_t u0, int64_t u1)
{
    const red *r = ctx;
    int64_t P = r->parts, task = u0 / P;
    it o;
    it_init(&o, r->no, r->osize, r->ostr, task);
    for (int64_t u = u0; u < u1; u++) {
        if (u / P != task) {
            task = u / P;
            it_next(&o);
        }
        int64_t p = u % P;
        rst s = inner_range(r, o.off, r->rcount * p / P, r->rcount * (p + 1) / P);
        if (P == 1)
            finish(r, &s, task);   /* outputs are row-major over the O space */
        else
            r->scratch[u] = s;
    }
}

/* ---- outer strategy (f32, f64) ------------------------------------------------------ */

/* Rows [lo, hi) of the R space, each w contiguous columns at x + offset(row). */
#define OUTER_DEFINE(T, S) \
    RT_ROW_INLINE void osum_##S(const red *r, const T *x, int64_t lo, int64_t hi, int64_t w, \
                                const T *mean, double *tot) \
    { \
        it ri; \
        it_init(&ri, r->nr, r->rsize, r->rstr, lo); \
        for (int64_t j = 0; j < w; j++) \
            tot[j] = 0; \
        for (int64_t q = lo; q < hi;) { \
            int64_t e = min64(q + ROWCHUNK, hi); \
            T acc[RB]; \
            for (int64_t j = 0; j < w; j++) \
                acc[j] = 0; \
            for (; q < e; q++, it_next(&ri)) { \
                const T *row = x + ri.off; \
                if (!mean) \
                    for (int64_t j = 0; j < w; j++) \
                        acc[j] += row[j]; \
                else \
                    for (int64_t j = 0; j < w; j++) \
                        acc[j] += RT_EXP_##S(row[j] - mean[j]); \
            } \
            for (int64_t j = 0; j < w; j++) \
                tot[j] += acc[j]; \
        } \
    } \
    /* (mean, M2, count) in double */ \
    RT_ROW_INLINE void ovar_##S(const red *r, const T *x, int64_t lo, int64_t hi, int64_t w, \
                                rst *st) \
    { \
        double acc[RB]; \
        it ri; \
        for (int pass = 0; pass < 2; pass++) { \
            it_init(&ri, r->nr, r->rsize, r->rstr, lo); \
            for (int64_t j = 0; j < w; j++) \
                acc[j] = 0; \
            for (int64_t q = lo; q < hi; q++, it_next(&ri)) { \
                const T *row = x + ri.off; \
                if (pass == 0) \
                    for (int64_t j = 0; j < w; j++) \
                        acc[j] += row[j]; \
                else \
                    for (int64_t j = 0; j < w; j++) \
                        acc[j] += (row[j] - st[j].a) * (row[j] - st[j].a); \
            } \
            for (int64_t j = 0; j < w; j++) { \
                if (pass == 0) \
                    st[j].a = acc[j] / (double)(hi - lo); \
                else \
                    st[j].b = acc[j], st[j].i = hi - lo; \
            } \
        } \
    } \
    RT_ROW_INLINE void oprod_##S(const red *r, const T *x, int64_t lo, int64_t hi, int64_t w, \
                                 double *tot) \
    { \
        it ri; \
        it_init(&ri, r->nr, r->rsize, r->rstr, lo); \
        T acc[RB]; \
        for (int64_t j = 0; j < w; j++) \
            acc[j] = 1; \
        for (int64_t q = lo; q < hi; q++, it_next(&ri)) \
            for (int64_t j = 0; j < w; j++) \
                acc[j] *= x[ri.off + j]; \
        for (int64_t j = 0; j < w; j++) \
            tot[j] = acc[j]; \
    } \
    RT_ROW_INLINE void oext_##S(const red *r, const T *x, int64_t lo, int64_t hi, int64_t w, \
                                bool max, T init, T *acc) \
    { \
        it ri; \
        it_init(&ri, r->nr, r->rsize, r->rstr, lo); \
        for (int64_t j = 0; j < w; j++) \
            acc[j] = init; \
        for (int64_t q = lo; q < hi; q++, it_next(&ri)) { \
            const T *row = x + ri.off; \
            if (max) \
                for (int64_t j = 0; j < w; j++) \
                    acc[j] = (row[j] > acc[j] || row[j] != row[j]) ? row[j] : acc[j]; \
            else \
                for (int64_t j = 0; j < w; j++) \
                    acc[j] = (row[j] < acc[j] || row[j] != row[j]) ? row[j] : acc[j]; \
        } \
    } \
    RT_ROW_INLINE void oarg_##S(const red *r, const T *x, int64_t lo, int64_t hi, int64_t w, \
                                rst *st) \
    { \
        it ri; \
        it_init(&ri, r->nr, r->rsize, r->rstr, lo); \
        T bv[RB]; \
        int64_t bi[RB]; \
        for (int64_t j = 0; j < w; j++) \
            bv[j] = x[ri.off + j], bi[j] = lo; \
        bool max = r->kind == K_ARGMAX; \
        for (int64_t q = lo; q < hi; q++, it_next(&ri)) { \
            const T *row = x + ri.off; \
            for (int64_t j = 0; j < w; j++) { \
                T v = row[j]; \
                bool better = (max ? v > bv[j] : v < bv[j]) || (v != v && bv[j] == bv[j]); \
                bv[j] = better ? v : bv[j]; \
                bi[j] = better ? q : bi[j]; \
            } \
        } \
        for (int64_t j = 0; j < w; j++) \
            st[j].a = bv[j], st[j].i = bi[j]; \
    } \
    CLONES static void outer_##S(const red *r, const T *x, int64_t lo, int64_t hi, int64_t w, \
                                 rst *st) \
    { \
        double tot[RB]; \
        T m[RB]; \
        rst id = identity(r); \
        for (int64_t j = 0; j < w; j++) \
            st[j] = id; \
        if (lo >= hi) \
            return; \
        switch (r->kind) { \
        case K_SUM: \
            osum_##S(r, x, lo, hi, w, NULL, tot); \
            for (int64_t j = 0; j < w; j++) \
                st[j].a = tot[j]; \
            break; \
        case K_PROD: \
            oprod_##S(r, x, lo, hi, w, tot); \
            for (int64_t j = 0; j < w; j++) \
                st[j].a = tot[j]; \
            break; \
        case K_MAX: \
        case K_MIN: \
            oext_##S(r, x, lo, hi, w, r->kind == K_MAX, (T)id.a, m); \
            for (int64_t j = 0; j < w; j++) \
                st[j].a = m[j]; \
            break; \
        case K_LSE: \
            oext_##S(r, x, lo, hi, w, true, -INFINITY, m); \
            for (int64_t j = 0; j < w; j++) \
                m[j] = isinf(m[j]) ? 0 : m[j]; \
            osum_##S(r, x, lo, hi, w, m, tot); \
            for (int64_t j = 0; j < w; j++) \
                st[j].a = m[j], st[j].b = tot[j]; \
            break; \
        case K_VAR: ovar_##S(r, x, lo, hi, w, st); break; \
        case K_ARGMAX: \
        case K_ARGMIN: oarg_##S(r, x, lo, hi, w, st); break; \
        } \
    }
#define RT_EXP_f32 vm_exp_f32
#define RT_EXP_f64 exp
OUTER_DEFINE(float, f32)
OUTER_DEFINE(double, f64)

static void outer_units(void *ctx, int64_t u0, int64_t u1)
{
    const red *r = ctx;
    int64_t P = r->parts;
    rst st[RB];
    for (int64_t u = u0; u < u1; u++) {
        int64_t task = u / P, p = u % P, o = task / r->nblk, j0 = task % r->nblk * RB;
        int64_t w = min64(RB, r->J - j0), lo = r->rcount * p / P, hi = r->rcount * (p + 1) / P;
        it oi, oo;
        it_init(&oi, r->no, r->osize, r->ostr, o);
        it_init(&oo, r->no, r->osize, r->oout, o);
        const char *x = r->x + (oi.off + j0) * (int64_t)r->esz;
        if (r->elt == E_F32)
            outer_f32(r, (const float *)x, lo, hi, w, st);
        else
            outer_f64(r, (const double *)x, lo, hi, w, st);
        for (int64_t j = 0; j < w; j++) {
            if (P == 1)
                finish(r, &st[j], oo.off + (j0 + j) * r->jout);
            else
                r->scratch[u * RB + j] = st[j];
        }
    }
}

/* Combines the parts of every task in order and writes the outputs. */
static void merge_parts(red *r)
{
    int64_t P = r->parts;
    for (int64_t task = 0; task < r->tasks; task++) {
        if (!r->outer) {
            rst s = r->scratch[task * P];
            for (int64_t p = 1; p < P; p++)
                combine(r, &s, &r->scratch[task * P + p]);
            finish(r, &s, task);
            continue;
        }
        int64_t o = task / r->nblk, j0 = task % r->nblk * RB, w = min64(RB, r->J - j0);
        it oo;
        it_init(&oo, r->no, r->osize, r->oout, o);
        for (int64_t j = 0; j < w; j++) {
            rst s = r->scratch[task * P * RB + j];
            for (int64_t p = 1; p < P; p++)
                combine(r, &s, &r->scratch[(task * P + p) * RB + j]);
            finish(r, &s, oo.off + (j0 + j) * r->jout);
        }
    }
}

/* ---- planning ------------------------------------------------------------------------ */

/* Merges neighbours d-1, d where s[d-1] == s[d] * size[d] (for s1 and s2). */
static int coalesce(int n, int64_t *size, int64_t *s1, int64_t *s2)
{
    int m = 0;
    for (int d = 0; d < n; d++) {
        if (m > 0 && s1[m - 1] == s1[d] * size[d] && (!s2 || s2[m - 1] == s2[d] * size[d])) {
            size[m - 1] *= size[d];
            s1[m - 1] = s1[d];
            if (s2)
                s2[m - 1] = s2[d];
            continue;
        }
        size[m] = size[d];
        s1[m] = s1[d];
        if (s2)
            s2[m] = s2[d];
        m++;
    }
    return m;
}

/* Stable sort of the R dims by stride, largest first (innermost smallest). */
static void sort_r(red *r)
{
    for (int d = 1; d < r->nr; d++)
        for (int e = d; e > 0 && r->rstr[e - 1] < r->rstr[e]; e--) {
            int64_t ts = r->rsize[e], tt = r->rstr[e];
            r->rsize[e] = r->rsize[e - 1], r->rstr[e] = r->rstr[e - 1];
            r->rsize[e - 1] = ts, r->rstr[e - 1] = tt;
        }
}

static void split_dims(red *r, const tj_tensor *x, uint32_t mask)
{
    int64_t oout[TJ_MAX_DIMS], os = 1;
    for (int d = x->ndim - 1; d >= 0; d--)
        if (!(mask & (1u << d)))
            oout[d] = os, os *= x->shape[d];
    r->no = r->nr = 0;
    r->nout = r->rcount = 1;
    for (int d = 0; d < x->ndim; d++) {
        int64_t n = x->shape[d];
        if (mask & (1u << d)) {
            r->rcount *= n;
            if (n != 1)
                r->rsize[r->nr] = n, r->rstr[r->nr++] = x->strides[d];
        } else {
            r->nout *= n;
            if (n != 1) {
                r->osize[r->no] = n, r->ostr[r->no] = x->strides[d];
                r->oout[r->no++] = oout[d];
            }
        }
    }
    if (r->rcount == 0)
        r->nr = 0;   /* nothing to iterate: every output is the identity */
    if (r->kind != K_ARGMAX && r->kind != K_ARGMIN)
        sort_r(r);
    r->nr = coalesce(r->nr, r->rsize, r->rstr, NULL);
    r->no = coalesce(r->no, r->osize, r->ostr, r->oout);
}

/* Chooses the strategy, the units and the parts of R. */
static void choose(red *r)
{
    bool inner_fast = r->nr > 0 && r->rstr[r->nr - 1] == 1 && r->rsize[r->nr - 1] >= 16;
    int jd = -1;
    for (int d = 0; d < r->no && jd < 0; d++)
        if (r->ostr[d] == 1 && r->osize[d] >= 16)
            jd = d;
    r->outer = r->elt != E_I64 && !inner_fast && jd >= 0 && r->rcount > 0;
    int64_t per = r->rcount;
    r->tasks = r->nout;
    if (r->outer) {
        r->J = r->osize[jd], r->jout = r->oout[jd];
        for (int d = jd; d + 1 < r->no; d++) {
            r->osize[d] = r->osize[d + 1], r->ostr[d] = r->ostr[d + 1];
            r->oout[d] = r->oout[d + 1];
        }
        r->no--;
        r->nblk = (r->J + RB - 1) / RB;
        r->tasks = r->nout / r->J * r->nblk;
        per = r->rcount * min64(r->J, RB);
    }
    r->parts = 1;
    if (r->tasks < 8 && per >= 65536)
        r->parts = min64(min64(32, per / 32768), r->rcount > 0 ? r->rcount : 1);
}

/* ---- entry ----------------------------------------------------------------------------- */

/* A dense copy of x converted to dt (rt_convert: integers exactly to i64,
 * anything to bool as x != 0). NULL with an error when memory runs out. */
static tj_tensor *to_dense(const tj_tensor *x, tj_dtype dt)
{
    tj_tensor *t = rt_tensor_new(dt, x->ndim, x->shape);
    if (t && rt_convert(t, x) != 0) {
        tj_release(t);
        return NULL;
    }
    return t;
}

/* The input the kernels read: f32, f64 or i64. all/any reduce f32 0/1 (min,
 * max); logsumexp of integers computes in f32; other integers widen to i64.
 * *tmp receives a converted copy to release, or NULL. Returns NULL on error. */
static tj_tensor *kernel_input(ir_op op, tj_tensor *x, tj_tensor **tmp)
{
    bool isfloat = x->dtype == TJ_F32 || x->dtype == TJ_F64;
    *tmp = NULL;
    if (op == OP_all || op == OP_any) {
        tj_tensor *b = to_dense(x, TJ_BOOL);
        *tmp = b ? to_dense(b, TJ_F32) : NULL;
        tj_release(b);
    } else if (!isfloat && op == OP_logsumexp) {
        *tmp = to_dense(x, TJ_F32);
    } else if (!isfloat && x->dtype != TJ_I64) {
        *tmp = to_dense(x, TJ_I64);
    } else {
        return x;
    }
    return *tmp;
}

/* The reduced dims as a bitmask (ir_infer has validated the list). */
static uint32_t dims_mask(const ir_attr *dims, int ndim)
{
    if (dims->n == 0)
        return ndim ? (uint32_t)((1u << ndim) - 1) : 0;
    uint32_t mask = 0;
    for (int k = 0; k < dims->n; k++) {
        int d = ir_norm_dim(dims->i[k], ndim);
        if (d >= 0 && ndim > 0)
            mask |= 1u << d;
    }
    return mask;
}

static int run(ir_op op, rkind kind, tj_tensor *out, tj_tensor *x, const ir_attrs *a)
{
    red r = {.op = op, .kind = kind, .out = out->storage->data, .odt = out->dtype};
    uint32_t mask = dims_mask(&a->a[0], x->ndim);
    if (op == OP_var || op == OP_std)
        r.correction = a->a[1].i[0];
    tj_tensor *tmp;
    if (!(x = kernel_input(op, x, &tmp)))
        return -1;
    r.elt = x->dtype == TJ_F32 ? E_F32 : x->dtype == TJ_F64 ? E_F64 : E_I64;
    r.esz = tj_dtype_size(x->dtype);
    r.x = rt_ptr(x);
    split_dims(&r, x, mask);
    int rc = 0;
    if (r.nout > 0) {
        choose(&r);
        int64_t units = r.tasks * r.parts, cols = r.outer ? RB : 1;
        if (r.parts > 1 && !(r.scratch = rt_alloc((size_t)(units * cols) * sizeof(rst))))
            rc = -1;
        if (rc == 0) {
            int64_t work = (r.rcount > 0 ? r.rcount : 1) * cols / r.parts;
            int64_t grain = work >= 32768 ? 1 : 32768 / work;
            rt_parallel_for(units, grain, r.outer ? outer_units : inner_units, &r);
            if (r.parts > 1)
                merge_parts(&r);
        }
        if (r.scratch)
            rt_free(r.scratch, (size_t)(units * cols) * sizeof(rst));
    }
    tj_release(tmp);
    return rc;
}

int rt_k_sum(RT_KERNEL_ARGS) { return run(op, K_SUM, out, in[0], a); }
int rt_k_mean(RT_KERNEL_ARGS) { return run(op, K_SUM, out, in[0], a); }
int rt_k_prod(RT_KERNEL_ARGS) { return run(op, K_PROD, out, in[0], a); }
int rt_k_amax(RT_KERNEL_ARGS) { return run(op, K_MAX, out, in[0], a); }
int rt_k_amin(RT_KERNEL_ARGS) { return run(op, K_MIN, out, in[0], a); }
int rt_k_logsumexp(RT_KERNEL_ARGS) { return run(op, K_LSE, out, in[0], a); }
int rt_k_all(RT_KERNEL_ARGS) { return run(op, K_MIN, out, in[0], a); }
int rt_k_any(RT_KERNEL_ARGS) { return run(op, K_MAX, out, in[0], a); }
int rt_k_var(RT_KERNEL_ARGS) { return run(op, K_VAR, out, in[0], a); }
int rt_k_std(RT_KERNEL_ARGS) { return run(op, K_VAR, out, in[0], a); }
int rt_k_argmax(RT_KERNEL_ARGS) { return run(op, K_ARGMAX, out, in[0], a); }
int rt_k_argmin(RT_KERNEL_ARGS) { return run(op, K_ARGMIN, out, in[0], a); }
