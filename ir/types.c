/* types.c - dtype facts from dtypes.def, value types, promotion, broadcasting. */
#include <stdio.h>
#include <string.h>

#include "ir.h"

static const struct {
    const char *name;
    size_t size;
    ir_category cat;
} dtypes[TJ_NUM_DTYPES] = {
#define DTYPE(ID, dname, ctype, dsize, dcat) [TJ_##ID] = {#dname, dsize, IR_CAT_##dcat},
#include "dtypes.def"
#undef DTYPE
};

/* One source of truth: the public enum tj_dtype (include/tjit.h) numbers the
 * dtypes, dtypes.def gives their facts. Each row must name the enum constant
 * of its position, and there must be one row per constant. */
enum {
#define DTYPE(ID, dname, ctype, dsize, dcat) IR_DTYPE_ROW_##ID,
#include "dtypes.def"
#undef DTYPE
    IR_DTYPE_ROWS
};
#define DTYPE(ID, dname, ctype, dsize, dcat)                                                \
    _Static_assert((int)TJ_##ID == IR_DTYPE_ROW_##ID,                                       \
                   "ir/dtypes.def: row " #ID " is not at the position of TJ_" #ID " in include/tjit.h");
#include "dtypes.def"
#undef DTYPE
_Static_assert(IR_DTYPE_ROWS == (int)TJ_NUM_DTYPES,
               "ir/dtypes.def and enum tj_dtype (include/tjit.h) differ in length");

bool ir_dtype_valid(tj_dtype dt) { return (unsigned)dt < TJ_NUM_DTYPES; }

const char *tj_dtype_name(tj_dtype dt) { return ir_dtype_valid(dt) ? dtypes[dt].name : "?"; }

size_t tj_dtype_size(tj_dtype dt) { return ir_dtype_valid(dt) ? dtypes[dt].size : 0; }

bool tj_dtype_is_float(tj_dtype dt) { return ir_dtype_is_float(dt); }

ir_category ir_dtype_category(tj_dtype dt) { return dtypes[dt].cat; }

bool ir_dtype_is_float(tj_dtype dt) { return ir_dtype_valid(dt) && dtypes[dt].cat == IR_CAT_FLOAT; }

bool ir_dtype_supported(tj_dtype dt)
{
    return dt == TJ_F32 || dt == TJ_F64 || dt == TJ_I32 || dt == TJ_I64 || dt == TJ_BOOL ||
           dt == TJ_U8 || dt == TJ_I8 || dt == TJ_I16 || ir_dtype_is_half(dt);
}

bool ir_dtype_is_half(tj_dtype dt) { return dt == TJ_F16 || dt == TJ_BF16; }

tj_dtype ir_dtype_wide(tj_dtype dt) { return ir_dtype_is_half(dt) ? TJ_F32 : dt; }

void ir_int_range(tj_dtype dt, int64_t *min, int64_t *max)
{
    switch (dt) {
    case TJ_BOOL: *min = 0, *max = 1; break;
    case TJ_U8: *min = 0, *max = UINT8_MAX; break;
    case TJ_I8: *min = INT8_MIN, *max = INT8_MAX; break;
    case TJ_I16: *min = INT16_MIN, *max = INT16_MAX; break;
    case TJ_I32: *min = INT32_MIN, *max = INT32_MAX; break;
    default: *min = INT64_MIN, *max = INT64_MAX; break;
    }
}

tj_dtype ir_scalar_dtype(double v, tj_dtype like)
{
    bool integral = v >= -0x1p63 && v < 0x1p63 && v == (double)(int64_t)v;
    return integral && !ir_dtype_is_float(like) ? TJ_I64 : TJ_F64;
}

tj_dtype ir_dtype_from_name(const char *name)
{
    for (int d = 0; d < TJ_NUM_DTYPES; d++)
        if (strcmp(dtypes[d].name, name) == 0)
            return (tj_dtype)d;
    return TJ_NUM_DTYPES;
}

bool ir_numel_checked(int ndim, const int64_t *shape, int64_t *n)
{
    int64_t p = 1;
    bool fits = true;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            *n = 0;
            return true;
        }
        if (shape[d] > 0 && __builtin_mul_overflow(p, shape[d], &p))
            fits = false;
    }
    *n = fits ? p : -1;
    return fits;
}

int64_t ir_type_numel(const ir_type *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

bool ir_shape_equal(const ir_type *a, const ir_type *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

bool ir_type_equal(const ir_type *a, const ir_type *b)
{
    return a->dtype == b->dtype && ir_shape_equal(a, b);
}

bool ir_dim_add(int64_t d, int64_t c, int64_t *out)
{
    if (!IR_IS_SYM(d))
        return !__builtin_add_overflow(d, c, out) && *out >= 0;
    int64_t delta = ir_sym_delta(d);
    if (c <= -IR_MAX_SYM_DELTA || c >= IR_MAX_SYM_DELTA || delta + c <= -IR_MAX_SYM_DELTA ||
        delta + c >= IR_MAX_SYM_DELTA)
        return false;
    *out = ir_sym_at(ir_sym_index(d), delta + c);
    return true;
}

char *ir_dim_str(int64_t d, char *buf)
{
    long long c = IR_IS_SYM(d) ? (long long)ir_sym_delta(d) : 0;
    if (IR_IS_SYM(d) && c)
        snprintf(buf, IR_DIM_BUF, "s%lld%+lld", (long long)ir_sym_index(d), c);
    else if (IR_IS_SYM(d))
        snprintf(buf, IR_DIM_BUF, "s%lld", (long long)ir_sym_index(d));
    else
        snprintf(buf, IR_DIM_BUF, "%lld", (long long)d);
    return buf;
}

char *ir_type_str(const ir_type *t, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "%s[", tj_dtype_name(t->dtype));
    int ndim = t->ndim < 0 ? 0 : t->ndim > TJ_MAX_DIMS ? TJ_MAX_DIMS : t->ndim;
    for (int d = 0; d < ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, d ? ",%s" : "%s", IR_DIM(t->shape[d]));
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

/* Within a category the dtype enum is ordered narrow to wide (PyTorch's
 * lattice bool < u8, i8 < i16 < i32 < i64, f16, bf16 < f32 < f64), so the
 * wider one wins; u8 and i8 are one pair neither holds, and PyTorch gives
 * i16; f16 and bf16 the other, which gives f32. */
static tj_dtype promote2(tj_dtype a, tj_dtype b)
{
    if (a == b)
        return a;
    ir_category ca = dtypes[a].cat, cb = dtypes[b].cat;
    if (ca != cb)
        return ca > cb ? a : b;
    if ((a == TJ_U8 && b == TJ_I8) || (a == TJ_I8 && b == TJ_U8))
        return TJ_I16;
    if ((a == TJ_F16 && b == TJ_BF16) || (a == TJ_BF16 && b == TJ_F16))
        return TJ_F32;   /* neither holds the other (PyTorch: f32) */
    return a > b ? a : b;
}

tj_dtype ir_promote(const ir_type *const *ts, int n)
{
    /* PyTorch: dimensioned tensors, then 0-dim tensors, then wrapped numbers
     * take part only when their category is higher than all before. */
    tj_dtype tier[3] = {TJ_NUM_DTYPES, TJ_NUM_DTYPES, TJ_NUM_DTYPES};
    for (int k = 0; k < n; k++) {
        if (!ts[k])
            continue;
        int t = ts[k]->weak ? 2 : ts[k]->ndim == 0 ? 1 : 0;
        tier[t] = tier[t] == TJ_NUM_DTYPES ? ts[k]->dtype : promote2(tier[t], ts[k]->dtype);
    }
    tj_dtype r = tier[0];
    for (int t = 1; t < 3; t++) {
        if (tier[t] == TJ_NUM_DTYPES)
            continue;
        if (r == TJ_NUM_DTYPES)
            r = tier[t];
        else if (dtypes[tier[t]].cat > dtypes[r].cat)
            /* a wrapped float joins an int tensor as the default float, f32 */
            r = t == 2 ? (dtypes[tier[t]].cat == IR_CAT_FLOAT ? TJ_F32 : tier[t]) : tier[t];
    }
    return r;
}

bool ir_broadcast(const ir_type *a, const ir_type *b, int *ndim, int64_t *shape)
{
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int d = 0; d < n; d++) {
        int da = d - (n - a->ndim), db = d - (n - b->ndim);
        int64_t sa = da >= 0 ? a->shape[da] : 1, sb = db >= 0 ? b->shape[db] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return false;
        shape[d] = sa == 1 ? sb : sa;
    }
    *ndim = n;
    return true;
}

int ir_norm_dim(int64_t dim, int ndim)
{
    int n = ndim == 0 ? 1 : ndim;
    if (dim < -n || dim >= n)
        return -1;
    return (int)(dim < 0 ? dim + n : dim);
}
