/* iter.c - elementwise iteration (broadcast, coalesce, parallel rows) and
 * the dtype conversions built on it (rt_cvt_row, rt_convert). */
#include <string.h>

#include "../ir/half.h"
#include "iter.h"

/* ---- iteration ------------------------------------------------------------------- */

static int64_t in_stride(const tj_tensor *t, int d, int ndim, const int64_t *shape)
{
    int di = d - (ndim - t->ndim);
    if (di < 0 || (t->shape[di] == 1 && shape[d] != 1))
        return 0;
    return t->strides[di] * (int64_t)tj_dtype_size(t->dtype);
}

static int check_broadcast(const tj_tensor *out, const tj_tensor *t)
{
    bool ok = t->ndim <= out->ndim;
    for (int d = 0; ok && d < t->ndim; d++) {
        int64_t s = t->shape[d], o = out->shape[d + out->ndim - t->ndim];
        ok = s == o || s == 1;
    }
    if (ok)
        return 0;
    char a[96], b[96];
    rt_error("cannot broadcast %s to %s", tj_describe(t, a, sizeof a),
             tj_describe(out, b, sizeof b));
    return -1;
}

/* Drops size-1 dims and merges dim d into d+1 when every operand allows it. */
static void coalesce(rt_iter *it)
{
    int n = 0;
    for (int d = 0; d < it->ndim; d++) {
        if (it->shape[d] == 1)
            continue;
        bool merge = n > 0;
        for (int k = 0; merge && k < it->nops; k++)
            merge = it->strides[k][n - 1] == it->strides[k][d] * it->shape[d];
        if (merge) {
            it->shape[n - 1] *= it->shape[d];
            for (int k = 0; k < it->nops; k++)
                it->strides[k][n - 1] = it->strides[k][d];
            continue;
        }
        it->shape[n] = it->shape[d];
        for (int k = 0; k < it->nops; k++)
            it->strides[k][n] = it->strides[k][d];
        n++;
    }
    if (n == 0) {
        it->shape[0] = 1;
        for (int k = 0; k < it->nops; k++)
            it->strides[k][0] = 0;
        n = 1;
    }
    it->ndim = n;
}

int rt_iter_init(rt_iter *it, tj_tensor *out, tj_tensor *const *in, int nin)
{
    if (nin + 1 > RT_ITER_MAX) {
        rt_error("too many operands for elementwise iteration");
        return -1;
    }
    memset(it, 0, sizeof *it);
    it->nops = nin + 1;
    it->ndim = out->ndim;
    it->numel = 1;
    for (int d = 0; d < out->ndim; d++) {
        it->shape[d] = out->shape[d];
        it->numel *= out->shape[d];
        it->strides[0][d] = out->strides[d] * (int64_t)tj_dtype_size(out->dtype);
    }
    it->data[0] = rt_ptr(out);
    for (int k = 0; k < nin; k++) {
        if (check_broadcast(out, in[k]))
            return -1;
        for (int d = 0; d < out->ndim; d++)
            it->strides[k + 1][d] = in_stride(in[k], d, out->ndim, out->shape);
        it->data[k + 1] = rt_ptr(in[k]);
    }
    if (it->numel > 0)
        coalesce(it);
    return 0;
}

typedef struct {
    const rt_iter *it;
    rt_row_fn fn;
    void *ctx;
} run_ctx;

/* Rows of the flat range [begin, end): the first and last may be partial. */
static void run_range(void *c_, int64_t begin, int64_t end)
{
    const run_ctx *c = c_;
    const rt_iter *it = c->it;
    int last = it->ndim - 1, nops = it->nops;
    int64_t idx[TJ_MAX_DIMS], steps[RT_ITER_MAX];
    char *p[RT_ITER_MAX];
    int64_t rem = begin;
    for (int d = last; d >= 0; d--) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
    }
    for (int k = 0; k < nops; k++) {
        p[k] = it->data[k];
        for (int d = 0; d <= last; d++)
            p[k] += idx[d] * it->strides[k][d];
        steps[k] = it->strides[k][last];
    }
    for (int64_t pos = begin; pos < end;) {
        int64_t n = it->shape[last] - idx[last];
        n = n < end - pos ? n : end - pos;
        c->fn(c->ctx, p, steps, n);
        pos += n;
        idx[last] += n;
        for (int k = 0; k < nops; k++)
            p[k] += n * steps[k];
        /* carry into the outer dims */
        for (int d = last; d > 0 && idx[d] == it->shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
            for (int k = 0; k < nops; k++)
                p[k] += it->strides[k][d - 1] - it->shape[d] * it->strides[k][d];
        }
    }
}

void rt_iter_run(const rt_iter *it, int64_t grain, rt_row_fn fn, void *ctx)
{
    if (it->numel <= 0)
        return;
    run_ctx c = {it, fn, ctx};
    rt_parallel_for(it->numel, grain, run_range, &c);
}

/* ---- conversions --------------------------------------------------------------------- */

/* float -> integer like torch on x86: truncation; NaN and out of range give
 * the type's minimum; u8, i8 and i16 go through i32 and wrap. */
static inline int32_t f2i32(double v)
{
    return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN;
}

static inline int64_t f2i64(double v)
{
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}

#define CVT_BOOL(x) ((uint8_t)((x) != 0))
#define CVT_U8(x) _Generic((x), float: (uint8_t)f2i32(x), double: (uint8_t)f2i32(x), \
                           default: (uint8_t)(x))
#define CVT_I8(x) _Generic((x), float: (int8_t)f2i32(x), double: (int8_t)f2i32(x), \
                           default: (int8_t)(x))
#define CVT_I16(x) _Generic((x), float: (int16_t)f2i32(x), double: (int16_t)f2i32(x), \
                            default: (int16_t)(x))
#define CVT_I32(x) _Generic((x), float: f2i32(x), double: f2i32(x), default: (int32_t)(x))
#define CVT_I64(x) _Generic((x), float: f2i64(x), double: f2i64(x), default: (int64_t)(x))
#define CVT_F32(x) ((float)(x))
#define CVT_F64(x) ((double)(x))
/* to the 16-bit floats: through f32, as PyTorch narrows (ir/half.h) */
#define CVT_F16(x) ir_f32_to_f16((float)(x))
#define CVT_BF16(x) ir_f32_to_bf16((float)(x))
/* a source element as the value it stands for: the 16-bit floats widen */
#define LD_BOOL(v) (v)
#define LD_U8(v) (v)
#define LD_I8(v) (v)
#define LD_I16(v) (v)
#define LD_I32(v) (v)
#define LD_I64(v) (v)
#define LD_F32(v) (v)
#define LD_F64(v) (v)
#define LD_F16(v) ir_f16_to_f32(v)
#define LD_BF16(v) ir_bf16_to_f32(v)

typedef void (*cvt_fn)(char *dst, int64_t dstep, const char *src, int64_t sstep, int64_t n);

/* One contiguous loop (vectorized, cloned) and one strided loop per dtype pair. */
#define CVT_PAIR(D, DT, S, ST) \
    RT_CLONES static void cvt_c_##D##_##S(DT *restrict d, const ST *restrict s, int64_t n) \
    { \
        for (int64_t k = 0; k < n; k++) \
            d[k] = CVT_##D(LD_##S(s[k])); \
    } \
    static void cvt_##D##_##S(char *dst, int64_t dstep, const char *src, int64_t sstep, \
                              int64_t n) \
    { \
        if (dstep == sizeof(DT) && sstep == sizeof(ST)) { \
            cvt_c_##D##_##S((DT *)dst, (const ST *)src, n); \
            return; \
        } \
        for (int64_t k = 0; k < n; k++) { \
            ST v; \
            memcpy(&v, src + k * sstep, sizeof v); \
            DT r = CVT_##D(LD_##S(v)); \
            memcpy(dst + k * dstep, &r, sizeof r); \
        } \
    }
#define CVT_FROM(S, ST) \
    CVT_PAIR(BOOL, uint8_t, S, ST) CVT_PAIR(U8, uint8_t, S, ST) CVT_PAIR(I8, int8_t, S, ST) \
    CVT_PAIR(I16, int16_t, S, ST) CVT_PAIR(I32, int32_t, S, ST) CVT_PAIR(I64, int64_t, S, ST) \
    CVT_PAIR(F32, float, S, ST) CVT_PAIR(F64, double, S, ST) \
    CVT_PAIR(F16, uint16_t, S, ST) CVT_PAIR(BF16, uint16_t, S, ST)
RT_DTYPES(CVT_FROM)
RT_HALF(CVT_FROM)
#undef CVT_FROM

#define CVT_ENTRY(D, DT, S) [TJ_##D][TJ_##S] = cvt_##D##_##S,
#define CVT_ROW(S, ST) CVT_ENTRY(BOOL, uint8_t, S) CVT_ENTRY(U8, uint8_t, S) \
    CVT_ENTRY(I8, int8_t, S) CVT_ENTRY(I16, int16_t, S) CVT_ENTRY(I32, int32_t, S) CVT_ENTRY(I64, int64_t, S) CVT_ENTRY(F32, float, S) \
    CVT_ENTRY(F64, double, S) CVT_ENTRY(F16, uint16_t, S) CVT_ENTRY(BF16, uint16_t, S)
static const cvt_fn cvt_table[TJ_NUM_DTYPES][TJ_NUM_DTYPES] = {RT_DTYPES(CVT_ROW) RT_HALF(CVT_ROW)};

void rt_cvt_row(void *dst, tj_dtype dt, int64_t dstep, const void *src, tj_dtype st,
                int64_t sstep, int64_t n)
{
    cvt_table[dt][st]((char *)dst, dstep, (const char *)src, sstep, n);
}

typedef struct {
    tj_dtype dt, st;
} convert_ctx;

static void convert_rows(void *c_, char *const *p, const int64_t *steps, int64_t n)
{
    const convert_ctx *c = c_;
    if (c->dt == c->st && steps[0] == steps[1] && steps[0] == (int64_t)tj_dtype_size(c->dt)) {
        memcpy(p[0], p[1], (size_t)(n * steps[0]));
        return;
    }
    cvt_table[c->dt][c->st](p[0], steps[0], p[1], steps[1], n);
}

int rt_convert(tj_tensor *out, const tj_tensor *in)
{
    if (!ir_dtype_supported(out->dtype) || !ir_dtype_supported(in->dtype)) {
        rt_error("cannot convert %s to %s", tj_dtype_name(in->dtype), tj_dtype_name(out->dtype));
        return -1;
    }
    rt_iter it;
    tj_tensor *src = (tj_tensor *)in;
    if (rt_iter_init(&it, out, &src, 1))
        return -1;
    convert_ctx c = {out->dtype, in->dtype};
    rt_iter_run(&it, RT_GRAIN, convert_rows, &c);
    return 0;
}
