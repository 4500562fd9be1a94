/* k_reduce.c - eager kernels of the reductions: sum, mean, prod, amax, amin,
 * logsumexp, all, any, var, std, argmax, argmin, xor_sum (at the end: its own
 * simple pass).
 *
 * Plan: the input's dims split into kept dims (the O space, in output order)
 * and reduced dims (the R space). Size-1 dims drop out; neighbours contiguous
 * with each other merge (R dims are first sorted by stride, except for argmax
 * and argmin, whose index is row-major over the reduced dims). Two strategies:
 *
 *   inner  the R space's innermost dim is unit-stride and long: every output
 *          element reduces its segments with the lane-parallel row primitives
 *          of k_rows.h; strided segments are gathered into a buffer first.
 *          One row per output and a plain op (sum, mean, prod, amax, amin):
 *          rows go in batches straight to the outputs (inner_rows).
 *   outer  else, when a kept dim has a smaller stride (reducing a leading dim,
 *          or a short last dim): a block of up to RB outputs along that dim
 *          accumulates one R index at a time, vectorized across the block.
 *
 * Work is a list of units (an output element or a column block, times a few
 * parts of R when outputs are too few to keep threads busy) run through
 * rt_parallel_for. The split depends on shapes only, so results do not depend
 * on the thread count. Partial results are `rst` records that combine in index
 * order (argmax keeps the first maximum; NaN wins like in PyTorch).
 * f32 sums and var keep float lanes blocked into double (k_rows.h); var
 * redoes a row in double when float overflows. Integer and bool inputs are
 * first converted to a dense i64 copy (f32 for logsumexp, f32 0/1 for
 * all/any); only f32, f64 and i64 have kernels.
 */
#include <math.h>
#include <string.h>

#include "iter.h"
#include "k_rows.h"
#include "kernels.h"

#define CLONES RT_CLONES

/* GATHER: strided segment chunk; RB: outer block; ROWCHUNK: outer rows summed
 * in the input's type before adding into double; PARTS: units wanted when R
 * must be split; INNER_MIN: the shortest unit-stride segment worth the inner
 * strategy (measured: below it, outputs cost more than their rows). */
enum { GATHER = 1024, RB = 1024, ROWCHUNK = 64, PARTS = 16, INNER_MIN = 48 };

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
    int64_t J, js, jout;  /* outer: the vectorized kept dim: size, input and output strides */
    int64_t bw, nblk;     /* its blocks: width (<= RB) and count */
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

/* Stores v[j] (float results) or iv[j] (integer and bool results) to output
 * elements k0 + j * ks, j < w; the array the output dtype does not use may be
 * NULL. */
CLONES static void store_block(const red *r, const double *v, const int64_t *iv, int64_t w,
                               int64_t k0, int64_t ks)
{
    char *o = r->out;
    switch (r->odt) {
    case TJ_F32:
        for (int64_t j = 0; j < w; j++)
            ((float *)o)[k0 + j * ks] = (float)v[j];
        break;
    case TJ_F64:
        for (int64_t j = 0; j < w; j++)
            ((double *)o)[k0 + j * ks] = v[j];
        break;
    case TJ_I64:
        for (int64_t j = 0; j < w; j++)
            ((int64_t *)o)[k0 + j * ks] = iv[j];
        break;
    case TJ_I32:
        for (int64_t j = 0; j < w; j++)
            ((int32_t *)o)[k0 + j * ks] = (int32_t)iv[j];
        break;
    case TJ_I16:
        for (int64_t j = 0; j < w; j++)
            ((int16_t *)o)[k0 + j * ks] = (int16_t)iv[j];
        break;
    case TJ_I8:
        for (int64_t j = 0; j < w; j++)
            ((int8_t *)o)[k0 + j * ks] = (int8_t)iv[j];
        break;
    case TJ_U8:
        for (int64_t j = 0; j < w; j++)
            ((uint8_t *)o)[k0 + j * ks] = (uint8_t)iv[j];
        break;
    case TJ_BOOL:
        for (int64_t j = 0; j < w; j++)
            ((uint8_t *)o)[k0 + j * ks] = iv[j] != 0;
        break;
    default: break;
    }
}

/* Writes the final values of st[0..w) to output elements k0 + j * ks. */
static void finish_block(const red *r, const rst *st, int64_t w, int64_t k0, int64_t ks)
{
    double v[RB];
    int64_t iv[RB];
    switch (r->op) {
    case OP_mean:
        for (int64_t j = 0; j < w; j++)
            v[j] = st[j].a / (double)r->rcount;
        store_block(r, v, NULL, w, k0, ks);
        break;
    case OP_all:
    case OP_any:
        for (int64_t j = 0; j < w; j++)
            iv[j] = st[j].a != 0;
        store_block(r, NULL, iv, w, k0, ks);
        break;
    case OP_logsumexp:
        for (int64_t j = 0; j < w; j++)
            v[j] = log(st[j].b) + st[j].a;
        store_block(r, v, NULL, w, k0, ks);
        break;
    case OP_var:
    case OP_std:
        for (int64_t j = 0; j < w; j++) {
            double den = (double)st[j].i - (double)r->correction;
            v[j] = st[j].b / (den > 0 ? den : 0);
            v[j] = r->op == OP_std ? sqrt(v[j]) : v[j];
        }
        store_block(r, v, NULL, w, k0, ks);
        break;
    default:   /* sum prod amax amin: a (float) or i (i64); argmax argmin: i */
        for (int64_t j = 0; j < w; j++)
            v[j] = st[j].a, iv[j] = st[j].i;
        store_block(r, v, iv, w, k0, ks);
        break;
    }
}

static void finish(const red *r, const rst *s, int64_t k) { finish_block(r, s, 1, k, 0); }

/* ---- segment kernels: one contiguous run x[0..n), n >= 1 ----------------------- */

/* First index of m in x (of a NaN when m is NaN): a branch-free min over
 * candidate int32 indices in blocks of 2^30, which vectorizes (the row is in
 * L1 after the max pass). */
#define FIND_DEFINE(T, S) \
    RT_ROW_INLINE int64_t find_##S(const T *restrict x, int64_t n, T m) \
    { \
        for (int64_t b = 0; b < n; b += 1 << 30) { \
            const T *xb = x + b; \
            int32_t len = (int32_t)min64(n - b, 1 << 30), best = len; \
            if (m != m) \
                for (int32_t i = 0; i < len; i++) { \
                    int32_t c = xb[i] != xb[i] ? i : len; \
                    best = c < best ? c : best; \
                } \
            else \
                for (int32_t i = 0; i < len; i++) { \
                    int32_t c = xb[i] == m ? i : len; \
                    best = c < best ? c : best; \
                } \
            if (best < len) \
                return b + best; \
        } \
        return n; \
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
            rt_row_moments_##S(x, n, false, &r.a, &r.b); \
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

/* Ops whose value comes straight from one float accumulator. */
static bool direct_op(ir_op op)
{
    return op == OP_sum || op == OP_mean || op == OP_prod || op == OP_amax || op == OP_amin;
}

/* One contiguous row of L elements per output (at base + off[j]), a direct op:
 * the values of cnt outputs into v, with no partial records. */
#define ROWS_DEFINE(T, S) \
    CLONES static void rows_direct_##S(const red *r, const T *base, const int64_t *off, \
                                       int64_t cnt, int64_t L, double *v) \
    { \
        switch (r->kind) { \
        case K_SUM: \
            for (int64_t j = 0; j < cnt; j++) \
                v[j] = rt_row_sum_##S(base + off[j], L); \
            break; \
        case K_PROD: \
            for (int64_t j = 0; j < cnt; j++) \
                v[j] = prod_##S(base + off[j], L); \
            break; \
        case K_MAX: \
            for (int64_t j = 0; j < cnt; j++) \
                v[j] = rt_row_max_##S(base + off[j], L); \
            break; \
        default: \
            for (int64_t j = 0; j < cnt; j++) \
                v[j] = rt_row_min_##S(base + off[j], L); \
            break; \
        } \
        if (r->op == OP_mean) \
            for (int64_t j = 0; j < cnt; j++) \
                v[j] /= (double)L; \
    }
ROWS_DEFINE(float, f32)
ROWS_DEFINE(double, f64)

/* Outputs [u0, u1) that are each one contiguous row: batches of RB. */
static void inner_rows(const red *r, it *o, int64_t u0, int64_t u1)
{
    double v[RB];
    int64_t off[RB], L = r->rcount;
    for (int64_t u = u0; u < u1;) {
        int64_t cnt = min64(RB, u1 - u);
        for (int64_t j = 0; j < cnt; j++, it_next(o))
            off[j] = o->off;
        if (r->elt == E_F32)
            rows_direct_f32(r, (const float *)r->x, off, cnt, L, v);
        else
            rows_direct_f64(r, (const double *)r->x, off, cnt, L, v);
        store_block(r, v, NULL, cnt, u, 1);
        u += cnt;
    }
}

static void inner_units(void *ctx, int64_t u0, int64_t u1)
{
    const red *r = ctx;
    int64_t P = r->parts, task = u0 / P;
    it o;
    it_init(&o, r->no, r->osize, r->ostr, task);
    if (P == 1 && r->nr == 1 && r->rstr[0] == 1 && r->elt != E_I64 && direct_op(r->op)) {
        inner_rows(r, &o, u0, u1);
        return;
    }
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

/* Rows [lo, hi) of the R space, each w columns at x + offset(row) with stride
 * r->js (1 in the common case: gcc versions the loops for a unit stride). */
#define OUTER_DEFINE(T, S) \
    RT_ROW_INLINE void osum_##S(const red *r, const T *x, int64_t lo, int64_t hi, int64_t w, \
                                const T *mean, double *tot) \
    { \
        it ri; \
        const int64_t js = r->js; \
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
                        acc[j] += row[j * js]; \
                else \
                    for (int64_t j = 0; j < w; j++) \
                        acc[j] += RT_EXP_##S(row[j * js] - mean[j]); \
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
        const int64_t js = r->js; \
        for (int pass = 0; pass < 2; pass++) { \
            it_init(&ri, r->nr, r->rsize, r->rstr, lo); \
            for (int64_t j = 0; j < w; j++) \
                acc[j] = 0; \
            for (int64_t q = lo; q < hi; q++, it_next(&ri)) { \
                const T *row = x + ri.off; \
                if (pass == 0) \
                    for (int64_t j = 0; j < w; j++) \
                        acc[j] += row[j * js]; \
                else \
                    for (int64_t j = 0; j < w; j++) { \
                        double d = row[j * js] - st[j].a; \
                        acc[j] += d * d; \
                    } \
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
        const int64_t js = r->js; \
        it_init(&ri, r->nr, r->rsize, r->rstr, lo); \
        T acc[RB]; \
        for (int64_t j = 0; j < w; j++) \
            acc[j] = 1; \
        for (int64_t q = lo; q < hi; q++, it_next(&ri)) \
            for (int64_t j = 0; j < w; j++) \
                acc[j] *= x[ri.off + j * js]; \
        for (int64_t j = 0; j < w; j++) \
            tot[j] = acc[j]; \
    } \
    RT_ROW_INLINE void oext_##S(const red *r, const T *x, int64_t lo, int64_t hi, int64_t w, \
                                bool max, T init, T *acc) \
    { \
        it ri; \
        const int64_t js = r->js; \
        it_init(&ri, r->nr, r->rsize, r->rstr, lo); \
        for (int64_t j = 0; j < w; j++) \
            acc[j] = init; \
        for (int64_t q = lo; q < hi; q++, it_next(&ri)) { \
            const T *row = x + ri.off; \
            if (max) \
                for (int64_t j = 0; j < w; j++) { \
                    T v = row[j * js]; \
                    acc[j] = (v > acc[j] || v != v) ? v : acc[j]; \
                } \
            else \
                for (int64_t j = 0; j < w; j++) { \
                    T v = row[j * js]; \
                    acc[j] = (v < acc[j] || v != v) ? v : acc[j]; \
                } \
        } \
    } \
    RT_ROW_INLINE void oarg_##S(const red *r, const T *x, int64_t lo, int64_t hi, int64_t w, \
                                rst *st) \
    { \
        it ri; \
        const int64_t js = r->js; \
        it_init(&ri, r->nr, r->rsize, r->rstr, lo); \
        T bv[RB]; \
        int64_t bi[RB]; \
        for (int64_t j = 0; j < w; j++) \
            bv[j] = x[ri.off + j * js], bi[j] = lo; \
        bool max = r->kind == K_ARGMAX; \
        for (int64_t q = lo; q < hi; q++, it_next(&ri)) { \
            const T *row = x + ri.off; \
            for (int64_t j = 0; j < w; j++) { \
                T v = row[j * js]; \
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
    } \
    /* The final values of sum, mean, prod, amax, amin over all of R. */ \
    CLONES static void outer_direct_##S(const red *r, const T *x, int64_t w, double *v) \
    { \
        T m[RB]; \
        switch (r->kind) { \
        case K_SUM: \
            osum_##S(r, x, 0, r->rcount, w, NULL, v); \
            if (r->op == OP_mean) \
                for (int64_t j = 0; j < w; j++) \
                    v[j] /= (double)r->rcount; \
            break; \
        case K_PROD: oprod_##S(r, x, 0, r->rcount, w, v); break; \
        default: \
            oext_##S(r, x, 0, r->rcount, w, r->kind == K_MAX, \
                     r->kind == K_MAX ? -INFINITY : INFINITY, m); \
            for (int64_t j = 0; j < w; j++) \
                v[j] = m[j]; \
            break; \
        } \
    }
#define RT_EXP_f32 vm_exp_f32
#define RT_EXP_f64 exp
OUTER_DEFINE(float, f32)
OUTER_DEFINE(double, f64)

/* i64 rows (sum and prod wrap like torch; no var or logsumexp on integers). */
CLONES static void outer_i64(const red *r, const int64_t *x, int64_t lo, int64_t hi, int64_t w,
                             rst *st)
{
    uint64_t acc[RB];
    int64_t bi[RB];
    const int64_t js = r->js;
    rkind k = r->kind;
    it ri;
    it_init(&ri, r->nr, r->rsize, r->rstr, lo);
    for (int64_t j = 0; j < w; j++) {
        acc[j] = k == K_SUM ? 0 : k == K_PROD ? 1 : (uint64_t)(hi > lo ? x[ri.off + j * js] : 0);
        bi[j] = lo;
    }
    for (int64_t q = lo; q < hi; q++, it_next(&ri)) {
        const int64_t *row = x + ri.off;
        switch (k) {
        case K_SUM:
            for (int64_t j = 0; j < w; j++)
                acc[j] += (uint64_t)row[j * js];
            break;
        case K_PROD:
            for (int64_t j = 0; j < w; j++)
                acc[j] *= (uint64_t)row[j * js];
            break;
        case K_MAX:
        case K_MIN:
            for (int64_t j = 0; j < w; j++) {
                int64_t v = row[j * js], a = (int64_t)acc[j];
                acc[j] = (uint64_t)((k == K_MAX ? v > a : v < a) ? v : a);
            }
            break;
        default:   /* argmax, argmin: strictly better wins, so the first stays */
            for (int64_t j = 0; j < w; j++) {
                int64_t v = row[j * js], a = (int64_t)acc[j];
                bool better = k == K_ARGMAX ? v > a : v < a;
                acc[j] = better ? (uint64_t)v : acc[j];
                bi[j] = better ? q : bi[j];
            }
            break;
        }
    }
    rst id = identity(r);
    for (int64_t j = 0; j < w; j++) {
        st[j] = id;
        if (hi <= lo)
            continue;
        if (k == K_ARGMAX || k == K_ARGMIN)
            st[j].j = (int64_t)acc[j], st[j].i = bi[j];
        else
            st[j].i = (int64_t)acc[j];
    }
}

static void outer_units(void *ctx, int64_t u0, int64_t u1)
{
    const red *r = ctx;
    int64_t P = r->parts;
    bool direct = direct_op(r->op);
    rst st[RB];
    for (int64_t u = u0; u < u1; u++) {
        int64_t task = u / P, p = u % P, o = task / r->nblk, j0 = task % r->nblk * r->bw;
        int64_t w = min64(r->bw, r->J - j0), lo = r->rcount * p / P, hi = r->rcount * (p + 1) / P;
        it oi, oo;
        it_init(&oi, r->no, r->osize, r->ostr, o);
        it_init(&oo, r->no, r->osize, r->oout, o);
        const char *x = r->x + (oi.off + j0 * r->js) * (int64_t)r->esz;
        if (P == 1 && direct && r->elt != E_I64) {   /* values straight out */
            double v[RB];
            if (r->elt == E_F32)
                outer_direct_f32(r, (const float *)x, w, v);
            else
                outer_direct_f64(r, (const double *)x, w, v);
            store_block(r, v, NULL, w, oo.off + j0 * r->jout, r->jout);
            continue;
        }
        if (r->elt == E_F32)
            outer_f32(r, (const float *)x, lo, hi, w, st);
        else if (r->elt == E_F64)
            outer_f64(r, (const double *)x, lo, hi, w, st);
        else
            outer_i64(r, (const int64_t *)x, lo, hi, w, st);
        if (P == 1)
            finish_block(r, st, w, oo.off + j0 * r->jout, r->jout);
        else
            memcpy(r->scratch + u * RB, st, (size_t)w * sizeof *st);
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
        int64_t o = task / r->nblk, j0 = task % r->nblk * r->bw, w = min64(r->bw, r->J - j0);
        rst *s = r->scratch + task * P * RB;   /* part 0 accumulates the others */
        it oo;
        it_init(&oo, r->no, r->osize, r->oout, o);
        for (int64_t p = 1; p < P; p++)
            for (int64_t j = 0; j < w; j++)
                combine(r, &s[j], &s[p * RB + j]);
        finish_block(r, s, w, oo.off + j0 * r->jout, r->jout);
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
    /* Vectorize along the innermost R dim when it is unit-stride and long,
     * else along the kept dim of smallest stride when that is smaller. */
    int64_t L = r->nr ? r->rsize[r->nr - 1] : 1, Ls = r->nr ? r->rstr[r->nr - 1] : INT64_MAX;
    int jd = -1;
    for (int d = 0; d < r->no; d++)
        if (r->osize[d] >= 8 && (jd < 0 || r->ostr[d] < r->ostr[jd]))
            jd = d;
    bool inner_fast = Ls == 1 && L >= INNER_MIN;
    r->outer = r->rcount > 0 && !inner_fast && jd >= 0 && (r->ostr[jd] < Ls || Ls == 1);
    int64_t per = r->rcount;
    r->tasks = r->nout;
    if (r->outer) {
        r->J = r->osize[jd], r->js = r->ostr[jd], r->jout = r->oout[jd];
        for (int d = jd; d + 1 < r->no; d++) {
            r->osize[d] = r->osize[d + 1], r->ostr[d] = r->ostr[d + 1];
            r->oout[d] = r->oout[d + 1];
        }
        r->no--;
        /* a strided block spans w * js elements: keep that within L1 (an
         * expanded dim, js 0, reads one element for the whole block) */
        r->bw = r->js <= 1 ? RB : min64(RB, 64 + 8192 / r->js);
        r->nblk = (r->J + r->bw - 1) / r->bw;
        r->tasks = r->nout / r->J * r->nblk;
        per = r->rcount * min64(r->J, r->bw);
    }
    /* Few tasks with much work each: split R so that about PARTS units exist. */
    r->parts = 1;
    if (r->tasks < PARTS && per >= 65536)
        r->parts = min64(min64((PARTS + r->tasks - 1) / r->tasks, per / 32768), r->rcount);
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

static int run(ir_op op, rkind kind, tj_tensor *out, tj_tensor *x, const ir_attrs *a)
{
    red r = {.op = op, .kind = kind, .out = out->storage->data, .odt = out->dtype};
    uint32_t mask = ir_dims_of(&a->a[0], x->ndim);
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

/* ---- xor_sum ----------------------------------------------------------------------- */

/* xor_sum: x (integer or bool, widened to a dense i64 copy: the low bits of
 * a xor are the xor of the low bits) xors into an i64 accumulator of out's
 * shape in one row-major pass, then converts to out's dtype. Bitwise xor is
 * exact and order-free, so one serial pass gives every thread count the same
 * result; an empty reduction leaves 0. */
int rt_k_xor_sum(RT_KERNEL_ARGS)
{
    (void)op, (void)nin;
    tj_tensor *x = in[0];
    uint32_t mask = ir_dims_of(&a->a[0], x->ndim);
    tj_tensor *xi = to_dense(x, TJ_I64);
    tj_tensor *acc = xi ? rt_tensor_new(TJ_I64, out->ndim, out->shape) : NULL;
    if (!acc) {
        tj_release(xi);
        return -1;
    }
    int64_t nout = 1, n = 1, ostr[TJ_MAX_DIMS], idx[TJ_MAX_DIMS] = {0};
    for (int d = 0; d < out->ndim; d++)
        nout *= out->shape[d];
    for (int d = 0; d < x->ndim; d++)
        n *= x->shape[d];
    /* the accumulator's stride of each input dim (0 for a reduced dim) */
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        ostr[d] = (mask & (1u << d)) ? 0 : s;
        s *= (mask & (1u << d)) ? 1 : x->shape[d];
    }
    int64_t *o = rt_ptr(acc);
    const int64_t *v = rt_ptr(xi);
    memset(o, 0, (size_t)nout * sizeof *o);
    int64_t off = 0;
    for (int64_t k = 0; k < n; k++) {
        o[off] ^= v[k];
        for (int d = x->ndim - 1; d >= 0; d--) {   /* next row-major index */
            off += ostr[d];
            if (++idx[d] < x->shape[d])
                break;
            off -= ostr[d] * x->shape[d];
            idx[d] = 0;
        }
    }
    int rc = rt_convert(out, acc);
    tj_release(acc);
    tj_release(xi);
    return rc;
}
