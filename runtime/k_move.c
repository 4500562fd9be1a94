/* k_move.c - eager kernels of the data-movement ops: copy, cat, gather,
 * index_select, pad, flip.
 *
 * copy, cat, pad and flip are layout changes: each describes the part of
 * the output (a window: a stack copy of the header with other shape, strides
 * and offset) and the matching view of the input, and lets rt_convert
 * (runtime/iter.h) move the elements, converting dtypes where cat promotes.
 * flip reads through negative strides. copy tiles a transposed source.
 * gather and index_select walk the output row by row (rows split over the
 * pool) with a strided or an indexed inner loop per element size; their
 * indices are checked first.
 */
#include <string.h>

#include "iter.h"
#include "kernels.h"

/* A header-only copy of t that can be reshaped into a window of its data. */
static void window(tj_tensor *w, const tj_tensor *t) { memcpy(w, t, sizeof *w); }

/* ---- copy ---------------------------------------------------------------------------- */

/* A copy whose source is transposed (innermost dim strided, another dim of
 * stride 1: x.T.contiguous() and the like) goes tile by tile, so reads and
 * writes both stay within a few cache lines; everything else is rt_convert. */
#define TILE 32

#define TILE_COPY(T) \
    RT_CLONES static void tile_##T(T *restrict o, const T *restrict x, int64_t rows, \
                                   int64_t cols, int64_t os, int64_t xs) \
    { \
        for (int64_t i = 0; i < rows; i++) \
            for (int64_t j = 0; j < cols; j++) \
                o[i * os + j] = x[i + j * xs]; \
    }
TILE_COPY(uint8_t)
TILE_COPY(uint16_t)
TILE_COPY(uint32_t)
TILE_COPY(uint64_t)

static void tile(size_t esz, char *o, const char *x, int64_t rows, int64_t cols, int64_t os,
                 int64_t xs)
{
    if (esz == 1)
        tile_uint8_t((uint8_t *)o, (const uint8_t *)x, rows, cols, os, xs);
    else if (esz == 2)
        tile_uint16_t((uint16_t *)o, (const uint16_t *)x, rows, cols, os, xs);
    else if (esz == 4)
        tile_uint32_t((uint32_t *)o, (const uint32_t *)x, rows, cols, os, xs);
    else
        tile_uint64_t((uint64_t *)o, (const uint64_t *)x, rows, cols, os, xs);
}

typedef struct tcopy_ctx {
    int ndim, p;                  /* p: the source's stride-1 dim; the last dim is strided */
    int64_t shape[TJ_MAX_DIMS], xs[TJ_MAX_DIMS], os[TJ_MAX_DIMS];
    int64_t bands;                /* row bands (TILE rows of dim p) per matrix */
    size_t esz;
    char *out;
    const char *x;
} tcopy_ctx;

/* Item = one band of TILE rows of one [shape[p], shape[last]] matrix. */
static void tcopy_range(void *ctx_, int64_t begin, int64_t end)
{
    const tcopy_ctx *c = ctx_;
    int last = c->ndim - 1;
    int64_t rows = c->shape[c->p], cols = c->shape[last];
    for (int64_t it = begin; it < end; it++) {
        int64_t m = it / c->bands, r0 = (it % c->bands) * TILE, xo = r0, oo = r0 * c->os[c->p];
        for (int d = last - 1; d >= 0; d--) {
            if (d == c->p)
                continue;
            xo += (m % c->shape[d]) * c->xs[d];
            oo += (m % c->shape[d]) * c->os[d];
            m /= c->shape[d];
        }
        int64_t nr = rows - r0 < TILE ? rows - r0 : TILE;
        for (int64_t j0 = 0; j0 < cols; j0 += TILE) {
            int64_t nc = cols - j0 < TILE ? cols - j0 : TILE;
            tile(c->esz, c->out + (oo + j0) * (int64_t)c->esz,
                 c->x + (xo + j0 * c->xs[last]) * (int64_t)c->esz, nr, nc, c->os[c->p],
                 c->xs[last]);
        }
    }
}

/* The stride-1 dim of a transposed source, or -1 when the plain path fits. */
static int transposed_dim(const tj_tensor *x, const tj_tensor *out)
{
    int last = x->ndim - 1;
    if (x->dtype != out->dtype || x->ndim < 2 || rt_numel(x) < 4 * TILE * TILE ||
        x->strides[last] == 1 || x->shape[last] < TILE)
        return -1;
    for (int d = last - 1; d >= 0; d--)
        if (x->strides[d] == 1 && x->shape[d] >= TILE)
            return d;
    return -1;
}

int rt_k_copy(RT_KERNEL_ARGS)
{
    const tj_tensor *x = in[0];
    int p = transposed_dim(x, out);
    if (p < 0)
        return rt_convert(out, x);
    tcopy_ctx c = {.ndim = x->ndim, .p = p, .esz = tj_dtype_size(x->dtype),
                   .out = rt_ptr(out), .x = rt_ptr(x)};
    for (int d = 0; d < x->ndim; d++) {
        c.shape[d] = x->shape[d];
        c.xs[d] = x->strides[d];
        c.os[d] = out->strides[d];
    }
    c.bands = (x->shape[p] + TILE - 1) / TILE;
    int64_t items = rt_numel(x) / (x->shape[p] * x->shape[x->ndim - 1]) * c.bands;
    int64_t grain = RT_GRAIN / (TILE * x->shape[x->ndim - 1]);
    rt_parallel_for(items, grain > 0 ? grain : 1, tcopy_range, &c);
    return 0;
}

/* ---- cat ---------------------------------------------------------------------------- */

int rt_k_cat(RT_KERNEL_ARGS)
{
    int d = -1;
    int64_t pos = 0;
    for (int k = 0; k < nin; k++) {
        const tj_tensor *x = in[k];
        if (x->ndim == 1 && x->shape[0] == 0)
            continue;   /* torch skips empty 1-D inputs */
        if (d < 0)
            d = ir_norm_dim(a->a[0].i[0], out->ndim);
        tj_tensor w;
        window(&w, out);
        w.shape[d] = x->shape[d];
        w.offset += pos * out->strides[d];
        pos += x->shape[d];
        if (rt_numel(&w) > 0 && rt_convert(&w, x) != 0)
            return -1;
    }
    return 0;
}

/* ---- pad ------------------------------------------------------------------------------ */

/* Fills out with the value, then copies the part of x that survives the
 * (possibly negative) pads into its place. */
int rt_k_pad(RT_KERNEL_ARGS)
{
    const tj_tensor *x = in[0];
    ir_attrs fill = {0};
    ir_attr_float(&fill.a[1], a->a[1].f);
    rt_k_full(OP_full, out, NULL, 0, &fill);
    tj_tensor src, dst;
    window(&src, x);
    window(&dst, out);
    for (int k = 0; k < a->a[0].n / 2; k++) {
        int d = x->ndim - 1 - k;
        int64_t before = a->a[0].i[2 * k], after = a->a[0].i[2 * k + 1];
        int64_t crop0 = before < 0 ? -before : 0, crop1 = after < 0 ? -after : 0;
        int64_t n = x->shape[d] - crop0 - crop1;
        if (n <= 0)
            return 0;   /* nothing of x survives */
        src.offset += crop0 * x->strides[d];
        src.shape[d] = n;
        dst.offset += (before > 0 ? before : 0) * out->strides[d];
        dst.shape[d] = n;
    }
    return rt_numel(&src) > 0 ? rt_convert(&dst, &src) : 0;
}

/* ---- flip ------------------------------------------------------------------------------ */

int rt_k_flip(RT_KERNEL_ARGS)
{
    const tj_tensor *x = in[0];
    uint32_t mask = a->a[0].n == 0 ? ~0u : 0;   /* the rule checked the dims */
    for (int k = 0; k < a->a[0].n && x->ndim > 0; k++)
        mask |= 1u << ir_norm_dim(a->a[0].i[k], x->ndim);
    if (rt_numel(x) == 0)
        return 0;
    tj_tensor v;
    window(&v, x);
    for (int d = 0; d < x->ndim; d++) {
        if ((mask >> d) & 1) {
            v.offset += (x->shape[d] - 1) * x->strides[d];
            v.strides[d] = -x->strides[d];
        }
    }
    return rt_convert(out, &v);
}

/* ---- gather and index_select ------------------------------------------------------------- */

/* o[k] = x[k*s] and o[k] = x[ix[k]*sx + k*s], per element size. */
#define TAKE_ROWS(T) \
    RT_CLONES static void take_strided_##T(T *restrict o, const T *restrict x, int64_t n, \
                                        int64_t s) \
    { \
        for (int64_t k = 0; k < n; k++) \
            o[k] = x[k * s]; \
    } \
    RT_CLONES static void take_indexed_##T(T *restrict o, const T *restrict x, \
                                        const int64_t *restrict ix, int64_t n, int64_t sx, \
                                        int64_t s) \
    { \
        for (int64_t k = 0; k < n; k++) \
            o[k] = x[ix[k] * sx + k * s]; \
    }
TAKE_ROWS(uint8_t)
TAKE_ROWS(uint16_t)
TAKE_ROWS(uint32_t)
TAKE_ROWS(uint64_t)

/* One output row: out[k] = x[base + k*s] (ix NULL) or x[base + ix[k]*sx + k*s]. */
static void take_row(size_t esz, char *o, const char *x, const int64_t *ix, int64_t n,
                     int64_t sx, int64_t s)
{
#define TAKE_CASE(T) \
    if (esz == sizeof(T)) { \
        if (ix) \
            take_indexed_##T((T *)o, (const T *)x, ix, n, sx, s); \
        else \
            take_strided_##T((T *)o, (const T *)x, n, s); \
        return; \
    }
    TAKE_CASE(uint8_t)
    TAKE_CASE(uint16_t)
    TAKE_CASE(uint32_t)
    TAKE_CASE(uint64_t)
#undef TAKE_CASE
}

/* The shared geometry: out (contiguous) rows of length shape[last]; x's
 * strides; along `dim` the coordinate comes from the index. */
typedef struct take_ctx {
    int ndim, dim;
    bool gather;                  /* else index_select */
    int64_t shape[TJ_MAX_DIMS];   /* of out; a 0-dim op is seen as [1] */
    int64_t xs[TJ_MAX_DIMS];      /* x strides, elements */
    size_t esz;
    char *out;
    const char *x;
    const int64_t *ix;            /* contiguous i64: index values */
} take_ctx;

static void take_rows(void *ctx_, int64_t begin, int64_t end)
{
    const take_ctx *c = ctx_;
    int last = c->ndim - 1;
    int64_t len = c->shape[last];
    for (int64_t r = begin; r < end; r++) {
        int64_t base = 0, rem = r;
        for (int d = last - 1; d >= 0; d--) {
            int64_t i = rem % c->shape[d];
            rem /= c->shape[d];
            if (d != c->dim)
                base += i * c->xs[d];
            else if (!c->gather)
                base += c->ix[i] * c->xs[d];
        }
        const char *x = c->x + base * (int64_t)c->esz;
        char *o = c->out + r * len * (int64_t)c->esz;
        if (c->gather)
            take_row(c->esz, o, x, c->ix + r * len, len, c->xs[c->dim],
                     c->dim == last ? 0 : c->xs[last]);
        else if (c->dim == last)
            take_row(c->esz, o, x, c->ix, len, c->xs[last], 0);
        else
            take_row(c->esz, o, x, NULL, len, 0, c->xs[last]);
    }
}

/* The index as contiguous i64: idx itself, or a converted copy in *tmp. */
static const int64_t *index_i64(tj_tensor *idx, tj_tensor **tmp)
{
    *tmp = NULL;
    if (idx->dtype == TJ_I64 && rt_is_contiguous(idx))
        return rt_ptr(idx);
    *tmp = rt_tensor_new(TJ_I64, idx->ndim, idx->shape);
    if (!*tmp || rt_convert(*tmp, idx) != 0)
        return NULL;
    return rt_ptr(*tmp);
}

RT_CLONES static bool any_out_of_range(const int64_t *restrict ix, int64_t n, int64_t size)
{
    int64_t bad = 0;
    for (int64_t k = 0; k < n; k++)
        bad |= (uint64_t)ix[k] >= (uint64_t)size;
    return bad != 0;
}

/* Every index in [0, size); else an error naming the first bad one. */
static int check_index(const int64_t *ix, int64_t n, int64_t size, int dim)
{
    if (!any_out_of_range(ix, n, size))
        return 0;
    for (int64_t k = 0; k < n; k++) {
        if ((uint64_t)ix[k] >= (uint64_t)size) {
            rt_error("index %lld is out of range for dim %d of size %lld", (long long)ix[k], dim,
                     (long long)size);
            return -1;
        }
    }
    return 0;
}

static int take(tj_tensor *out, const tj_tensor *x, tj_tensor *idx, int64_t dim_attr,
                bool gather)
{
    take_ctx c = {.ndim = out->ndim ? out->ndim : 1, .gather = gather,
                  .esz = tj_dtype_size(x->dtype), .out = rt_ptr(out), .x = rt_ptr(x)};
    c.dim = ir_norm_dim(dim_attr, x->ndim);
    for (int d = 0; d < c.ndim; d++) {
        c.shape[d] = out->ndim ? out->shape[d] : 1;
        c.xs[d] = x->ndim ? x->strides[d] : 0;
    }
    int64_t n = rt_numel(out), size = x->ndim ? x->shape[c.dim] : 1;
    if (n == 0)
        return 0;
    tj_tensor *tmp;
    c.ix = index_i64(idx, &tmp);
    int rc = c.ix ? check_index(c.ix, rt_numel(idx), size, c.dim) : -1;
    if (rc == 0) {
        int64_t len = c.shape[c.ndim - 1], grain = RT_GRAIN / len;
        rt_parallel_for(n / len, grain > 0 ? grain : 1, take_rows, &c);
    }
    tj_release(tmp);
    return rc;
}

int rt_k_gather(RT_KERNEL_ARGS) { return take(out, in[0], in[1], a->a[0].i[0], true); }

int rt_k_index_select(RT_KERNEL_ARGS)
{
    return take(out, in[0], in[1], a->a[0].i[0], false);
}
