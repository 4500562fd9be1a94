/* onnx_ops.c - ONNX operators (default domain, opsets 13-17) in tjit's ops:
 * one function per operator, one table. Small integer values (shapes, axes,
 * starts) are computed on the host where all inputs are known there
 * (ox_val.host), as exporters' shape arithmetic needs; everything else
 * becomes tjit ops, so a traced run is one graph. An attribute or input form
 * tjit does not support is an error naming the node, never a guess. */
#include <math.h>
#include <string.h>

#include "onnx.h"

/* ---- attributes and inputs ------------------------------------------------------------ */

static int64_t attr_i(const ox_node *n, const char *name, int64_t def)
{
    const ox_attr *a = ox_attr_get(n, name);
    return a ? a->i : def;
}

static double attr_f(const ox_node *n, const char *name, double def)
{
    const ox_attr *a = ox_attr_get(n, name);
    return a ? a->f : def;
}

/* An INTS attribute: its entries and count, or NULL (count 0) when absent. */
static const int64_t *attr_ints(const ox_node *n, const char *name, int *count)
{
    const ox_attr *a = ox_attr_get(n, name);
    *count = a ? a->n : 0;
    return a ? a->ints : NULL;
}

static tj_tensor *T(ox_run *r, ox_val *v) { return v ? ox_tensor(r, v) : NULL; }

static int rank_of(ox_run *r, ox_val *v)
{
    return v->host && !v->t ? v->ndim : tj_ndim(ox_tensor(r, v));
}

/* axis in -rank..rank-1 to 0..rank-1; -1 with an error when out of range. */
static int norm_axis(ox_run *r, const ox_node *n, int64_t axis, int rank)
{
    if (axis < -rank || axis >= rank)
        return ox_fail(r, n, "axis %lld out of range for rank %d", (long long)axis, rank);
    return (int)(axis < 0 ? axis + rank : axis);
}

/* Axes (from the input at index k from opset 13 on, or the "axes"
 * attribute) into dims[]; returns the count, or -1. */
static int axes_of(ox_run *r, const ox_node *n, ox_val **in, int k, int rank, int *dims)
{
    int64_t cnt = 0;
    const int64_t *ax = NULL;
    int acount;
    if (k < n->nin && in[k]) {
        if (!(ax = ox_ints(r, n, in[k], "axes input", &cnt)))
            return -1;
    } else if ((ax = attr_ints(n, "axes", &acount))) {
        cnt = acount;
    }
    for (int64_t i = 0; i < cnt; i++)
        if (cnt > TJ_MAX_DIMS || (dims[i] = norm_axis(r, n, ax[i], rank)) < 0)
            return cnt > TJ_MAX_DIMS ? ox_fail(r, n, "too many axes") : -1;
    return (int)cnt;
}

static bool all_host(ox_val **in, int nin)
{
    for (int k = 0; k < nin; k++)
        if (!in[k] || !in[k]->host)
            return false;
    return true;
}

/* ---- elementwise ------------------------------------------------------------------------ */

typedef tj_tensor *(*unary_fn)(tj_tensor *);
typedef tj_tensor *(*binary_fn)(tj_tensor *, tj_tensor *);

#define UNARY_OP(name, fn)                                                                   \
    static int op_##name(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)            \
    {                                                                                        \
        (void)n;                                                                             \
        return ox_set(out[0], fn(T(r, in[0])));                                              \
    }
UNARY_OP(relu, tj_relu)
UNARY_OP(sigmoid, tj_sigmoid)
UNARY_OP(tanh, tj_tanh)
UNARY_OP(exp, tj_exp)
UNARY_OP(log, tj_log)
UNARY_OP(sqrt, tj_sqrt)
UNARY_OP(neg, tj_neg)
UNARY_OP(abs, tj_abs)
UNARY_OP(erf, tj_erf)
UNARY_OP(reciprocal, tj_reciprocal)
UNARY_OP(floor, tj_floor)
UNARY_OP(ceil, tj_ceil)
UNARY_OP(sin, tj_sin)
UNARY_OP(cos, tj_cos)
UNARY_OP(not, tj_logical_not)
UNARY_OP(isnan, tj_isnan)

static int op_identity(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    (void)r;
    (void)n;
    *out[0] = *in[0];
    return 0;
}

/* Dropout at inference: the input (a mask output is all true). */
static int op_dropout(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    if (n->nin > 2 && in[2] && in[2]->host && in[2]->hv[0])
        return ox_fail(r, n, "training_mode is true; tjit imports models for inference");
    *out[0] = *in[0];
    if (n->nout > 1 && out[1]) {
        tj_tensor *x = T(r, in[0]);
        return ox_set(out[1], x ? tj_full(TJ_BOOL, tj_ndim(x), tj_shape(x), 1) : NULL);
    }
    return 0;
}

static int op_gelu(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    const ox_attr *a = ox_attr_get(n, "approximate");
    bool tanh_form = a && a->s && !strcmp(a->s, "tanh");
    if (a && a->s && !tanh_form && strcmp(a->s, "none"))
        return ox_fail(r, n, "approximate='%s' (none or tanh)", a->s);
    return ox_set(out[0], (tanh_form ? tj_gelu_tanh : tj_gelu)(T(r, in[0])));
}

/* The shape two host values broadcast to (NumPy rules), or -1. */
static int host_broadcast(const ox_val *a, const ox_val *b, int64_t *shape)
{
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int k = 0; k < nd; k++) {
        int ka = k - (nd - a->ndim), kb = k - (nd - b->ndim);
        int64_t da = ka >= 0 ? a->shape[ka] : 1, db = kb >= 0 ? b->shape[kb] : 1;
        if (da != db && da != 1 && db != 1)
            return -1;
        shape[k] = da == 1 ? db : da;
    }
    return nd;
}

/* Element i of host value v broadcast to shape (nd dims). */
static int64_t host_at(const ox_val *v, const int64_t *shape, int nd, int64_t i)
{
    int64_t off = 0, stride = 1;
    for (int k = nd - 1; k >= 0; k--) {
        int64_t idx = i % shape[k];
        i /= shape[k];
        int kv = k - (nd - v->ndim);
        if (kv >= 0) {
            off += (v->shape[kv] == 1 ? 0 : idx) * stride;
            stride *= v->shape[kv];
        }
    }
    return v->hv[off];
}

enum { H_ADD, H_SUB, H_MUL, H_DIV, H_EQ, H_LT, H_GT };

/* a op b on the host for small integer values; 1 when it does not apply. */
static int host_binary(ox_val *a, ox_val *b, int op, ox_val *out)
{
    int64_t shape[TJ_MAX_DIMS], v[OX_HOST_MAX];
    int nd = host_broadcast(a, b, shape);
    if (nd < 0)
        return 1;
    int64_t cnt = 1;
    for (int k = 0; k < nd; k++)
        cnt *= shape[k];
    if (cnt > OX_HOST_MAX)
        return 1;
    for (int64_t i = 0; i < cnt; i++) {
        int64_t x = host_at(a, shape, nd, i), y = host_at(b, shape, nd, i);
        switch (op) {
        case H_ADD: v[i] = x + y; break;
        case H_SUB: v[i] = x - y; break;
        case H_MUL: v[i] = x * y; break;
        case H_DIV:
            if (y == 0)
                return 1;   /* the device op reports it */
            v[i] = x / y;   /* ONNX integer Div truncates, as C does */
            break;
        case H_EQ: v[i] = x == y; break;
        case H_LT: v[i] = x < y; break;
        default: v[i] = x > y; break;
        }
    }
    return ox_set_host(out, op >= H_EQ ? TJ_BOOL : a->dtype, nd, shape, v);
}

static tj_tensor *int_div(tj_tensor *a, tj_tensor *b)
{
    if (a && b && !tj_dtype_is_float(tj_dtype_of(a)) && !tj_dtype_is_float(tj_dtype_of(b)))
        return tj_div_ex(a, b, TJ_ROUNDING_TRUNC);
    return tj_div(a, b);
}

#define BINARY_OP(name, fn, hostop)                                                          \
    static int op_##name(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)            \
    {                                                                                        \
        (void)n;                                                                             \
        if ((hostop) >= 0 && all_host(in, 2) && in[0]->dtype == in[1]->dtype &&             \
            host_binary(in[0], in[1], (hostop), out[0]) == 0)                                \
            return 0;                                                                        \
        return ox_set(out[0], fn(T(r, in[0]), T(r, in[1])));                                 \
    }
BINARY_OP(add, tj_add, H_ADD)
BINARY_OP(sub, tj_sub, H_SUB)
BINARY_OP(mul, tj_mul, H_MUL)
BINARY_OP(div, int_div, H_DIV)
BINARY_OP(equal, tj_eq, H_EQ)
BINARY_OP(less, tj_lt, H_LT)
BINARY_OP(greater, tj_gt, H_GT)
BINARY_OP(less_equal, tj_le, -1)
BINARY_OP(greater_equal, tj_ge, -1)
BINARY_OP(pow, tj_pow, -1)
BINARY_OP(and, tj_logical_and, -1)
BINARY_OP(or, tj_logical_or, -1)
BINARY_OP(xor, tj_logical_xor, -1)
BINARY_OP(matmul, tj_matmul, -1)

/* Sum, Max, Min, Mean: variadic, broadcasting. */
static int variadic(ox_run *r, const ox_node *n, ox_val **in, ox_val **out, binary_fn f, bool mean)
{
    tj_tensor *acc = T(r, in[0]);
    for (int k = 1; k < n->nin; k++)
        acc = f(acc, T(r, in[k]));
    if (mean && acc)
        acc = tj_div_s(acc, (double)n->nin);
    return ox_set(out[0], acc);
}
static int op_sum(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return variadic(r, n, in, out, tj_add, false); }
static int op_mean(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return variadic(r, n, in, out, tj_add, true); }
static int op_max(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return variadic(r, n, in, out, tj_maximum, false); }
static int op_min(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return variadic(r, n, in, out, tj_minimum, false); }

static int op_where(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    (void)n;
    return ox_set(out[0], tj_where(T(r, in[0]), T(r, in[1]), T(r, in[2])));
}

/* Clip: min and max are optional inputs (tensors, broadcast). */
static int op_clip(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    tj_tensor *x = T(r, in[0]);
    if (n->nin > 1 && in[1])
        x = tj_maximum(x, T(r, in[1]));
    if (n->nin > 2 && in[2])
        x = tj_minimum(x, T(r, in[2]));
    return ox_set(out[0], x);
}

static int op_cast(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int dt = ox_dtype(attr_i(n, "to", 0));
    if (dt < 0)
        return ox_fail(r, n, "to=%lld is not a dtype tjit has", (long long)attr_i(n, "to", 0));
    if (in[0]->host && !tj_dtype_is_float((tj_dtype)dt)) {
        *out[0] = *in[0];
        out[0]->t = NULL;
        out[0]->dtype = dt;
        for (int64_t i = 0; dt == TJ_BOOL && i < out[0]->n; i++)
            out[0]->hv[i] = out[0]->hv[i] != 0;
        return 0;
    }
    return ox_set(out[0], tj_cast(T(r, in[0]), (tj_dtype)dt));
}

/* ---- constants and shapes ------------------------------------------------------------- */

static int op_constant(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    (void)in;
    const ox_attr *a = n->nattrs == 1 ? &n->attrs[0] : NULL;
    if (!a)
        return ox_fail(r, n, "needs exactly one value attribute");
    if (!strcmp(a->name, "value") && a->t) {
        ox_set_const(out[0], a->t);
        return 0;
    }
    if (!strcmp(a->name, "value_int"))
        return ox_set_host(out[0], TJ_I64, 0, NULL, &a->i);
    if (!strcmp(a->name, "value_ints") && a->n <= OX_HOST_MAX)
        return ox_set_host(out[0], TJ_I64, 1, (int64_t[]){a->n}, a->ints);
    if (!strcmp(a->name, "value_float"))
        return ox_set(out[0], tj_scalar(TJ_F32, a->f));
    if (!strcmp(a->name, "value_floats")) {
        float v[a->n > 0 ? a->n : 1];
        for (int k = 0; k < a->n; k++)
            v[k] = (float)a->floats[k];
        return ox_set(out[0], tj_from_data(TJ_F32, 1, (int64_t[]){a->n}, v));
    }
    return ox_fail(r, n, "value attribute '%s' is not supported", a->name);
}

static int op_shape(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int rank = rank_of(r, in[0]);
    int64_t start = attr_i(n, "start", 0), end = attr_i(n, "end", rank), v[TJ_MAX_DIMS];
    start = start < 0 ? start + rank : start;
    end = end < 0 ? end + rank : end;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < start ? start : end > rank ? rank : end;
    for (int64_t k = start; k < end; k++)   /* tj_size: a dynamic dim read is guarded */
        v[k - start] = in[0]->host && !in[0]->t ? in[0]->shape[k] : tj_size(T(r, in[0]), (int)k);
    return ox_set_host(out[0], TJ_I64, 1, (int64_t[]){end - start}, v);
}

static int op_size(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    (void)n;
    int64_t v = in[0]->host && !in[0]->t ? in[0]->n : rt_numel(T(r, in[0]));
    return ox_set_host(out[0], TJ_I64, 0, NULL, &v);
}

static int op_constant_of_shape(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int64_t cnt;
    const int64_t *shape = ox_ints(r, n, in[0], "shape input", &cnt);
    if (!shape)
        return -1;
    const ox_attr *a = ox_attr_get(n, "value");
    tj_dtype dt = a && a->t ? tj_dtype_of(a->t) : TJ_F32;
    double v = a && a->t && rt_numel(a->t) == 1 ? tj_get(a->t, (int64_t[]){0}) : 0;
    return ox_set(out[0], tj_full(dt, (int)cnt, shape, v));
}

/* ---- shape ops ---------------------------------------------------------------------------- */

static int op_reshape(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int64_t cnt, shape[TJ_MAX_DIMS];
    const int64_t *s = ox_ints(r, n, in[1], "shape input", &cnt);
    if (!s)
        return -1;
    if (cnt > TJ_MAX_DIMS)
        return ox_fail(r, n, "a shape of %lld dims", (long long)cnt);
    bool allowzero = attr_i(n, "allowzero", 0);
    int rank = rank_of(r, in[0]);
    for (int k = 0; k < cnt; k++) {
        shape[k] = s[k];
        if (s[k] == 0 && !allowzero) {
            if (k >= rank)
                return ox_fail(r, n, "shape entry %d is 0 (copy) past the input's %d dims", k, rank);
            shape[k] = in[0]->host && !in[0]->t ? in[0]->shape[k] : tj_size(T(r, in[0]), k);
        }
    }
    if (in[0]->host && !in[0]->t) {   /* on the host: same elements, new shape */
        int64_t total = 1, minus = -1;
        for (int k = 0; k < cnt; k++) {
            if (shape[k] == -1)
                minus = k;
            else
                total *= shape[k];
        }
        if (minus >= 0 && total)
            shape[minus] = in[0]->n / total;
        ox_val v = *in[0];
        return ox_set_host(out[0], v.dtype, (int)cnt, shape, v.hv);
    }
    return ox_set(out[0], tj_reshape(T(r, in[0]), (int)cnt, shape));
}

static int op_flatten(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    tj_tensor *x = T(r, in[0]);
    if (!x)
        return -1;
    int rank = tj_ndim(x);
    int64_t axis = attr_i(n, "axis", 1);
    if (axis < -rank || axis > rank)
        return ox_fail(r, n, "axis %lld out of range for rank %d", (long long)axis, rank);
    axis = axis < 0 ? axis + rank : axis;
    int64_t outer = 1;
    for (int k = 0; k < axis; k++)
        outer *= tj_size(x, k);
    return ox_set(out[0], tj_reshape(x, 2, (int64_t[]){outer, -1}));
}

static int op_transpose(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    tj_tensor *x = T(r, in[0]);
    if (!x)
        return -1;
    int rank = tj_ndim(x), perm[TJ_MAX_DIMS], cnt;
    const int64_t *p = attr_ints(n, "perm", &cnt);
    if (p && cnt != rank)
        return ox_fail(r, n, "perm has %d entries for rank %d", cnt, rank);
    for (int k = 0; k < rank; k++)
        perm[k] = p ? (int)p[k] : rank - 1 - k;
    return ox_set(out[0], tj_permute(x, perm));
}

static int op_unsqueeze(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int rank = rank_of(r, in[0]), dims[TJ_MAX_DIMS];
    int64_t cnt;
    const int64_t *ax = n->nin > 1 ? ox_ints(r, n, in[1], "axes input", &cnt) : NULL;
    int acount;
    if (!ax && n->nin > 1)
        return -1;
    if (!ax) {
        ax = attr_ints(n, "axes", &acount);
        cnt = acount;
    }
    int outr = rank + (int)cnt;
    if (outr > TJ_MAX_DIMS)
        return ox_fail(r, n, "the result would have %d dims", outr);
    bool is_new[TJ_MAX_DIMS] = {0};
    for (int k = 0; k < cnt; k++) {
        if ((dims[k] = norm_axis(r, n, ax[k], outr)) < 0)
            return -1;
        is_new[dims[k]] = true;
    }
    if (in[0]->host && !in[0]->t) {
        int64_t shape[TJ_MAX_DIMS];
        for (int k = 0, j = 0; k < outr; k++)
            shape[k] = is_new[k] ? 1 : in[0]->shape[j++];
        ox_val v = *in[0];
        return ox_set_host(out[0], v.dtype, outr, shape, v.hv);
    }
    tj_tensor *x = T(r, in[0]);
    for (int k = 0; k < outr && x; k++)
        if (is_new[k])
            x = tj_unsqueeze(x, k);
    return ox_set(out[0], x);
}

static int op_squeeze(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int rank = rank_of(r, in[0]), dims[TJ_MAX_DIMS];
    int cnt = axes_of(r, n, in, 1, rank, dims);
    if (cnt < 0)
        return -1;
    if (in[0]->host && !in[0]->t) {
        int64_t shape[TJ_MAX_DIMS];
        int nd = 0;
        for (int k = 0; k < rank; k++) {
            bool drop = false;
            for (int j = 0; j < cnt; j++)
                drop |= dims[j] == k;
            if (!(cnt ? drop : in[0]->shape[k] == 1))
                shape[nd++] = in[0]->shape[k];
        }
        ox_val v = *in[0];
        return ox_set_host(out[0], v.dtype, nd, shape, v.hv);
    }
    return ox_set(out[0], tj_squeeze(T(r, in[0]), dims, cnt));
}

static int op_concat(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int rank = rank_of(r, in[0]);
    int axis = norm_axis(r, n, attr_i(n, "axis", 0), rank);
    if (axis < 0)
        return -1;
    if (all_host(in, n->nin) && rank == 1) {
        int64_t v[OX_HOST_MAX], cnt = 0;
        for (int k = 0; k < n->nin; k++) {
            if (cnt + in[k]->n > OX_HOST_MAX || in[k]->ndim != 1)
                goto device;
            memcpy(v + cnt, in[k]->hv, (size_t)in[k]->n * sizeof *v);
            cnt += in[k]->n;
        }
        return ox_set_host(out[0], in[0]->dtype, 1, &cnt, v);
    }
device:;
    tj_tensor *xs[n->nin];
    for (int k = 0; k < n->nin; k++)
        if (!(xs[k] = T(r, in[k])))
            return -1;
    return ox_set(out[0], tj_cat(xs, n->nin, axis));
}

static int op_gather(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int rank = rank_of(r, in[0]);
    int axis = norm_axis(r, n, attr_i(n, "axis", 0), rank);
    if (axis < 0)
        return -1;
    if (all_host(in, 2) && rank == 1) {   /* shape[i] and the like */
        int64_t v[OX_HOST_MAX];
        for (int64_t i = 0; i < in[1]->n; i++) {
            int64_t j = in[1]->hv[i] < 0 ? in[1]->hv[i] + in[0]->n : in[1]->hv[i];
            if (j < 0 || j >= in[0]->n)
                return ox_fail(r, n, "index %lld out of range for %lld entries",
                               (long long)in[1]->hv[i], (long long)in[0]->n);
            v[i] = in[0]->hv[j];
        }
        return ox_set_host(out[0], in[0]->dtype, in[1]->ndim, in[1]->shape, v);
    }
    tj_tensor *x = T(r, in[0]), *idx = T(r, in[1]);
    if (!x || !idx)
        return -1;
    if (in[1]->host)   /* negative indices count from the end */
        for (int64_t i = 0; i < in[1]->n; i++)
            if (in[1]->hv[i] < 0) {
                idx = tj_remainder_s(tj_cast(idx, TJ_I64), (double)tj_size(x, axis));
                break;
            }
    int64_t shape[TJ_MAX_DIMS];
    int nd = 0, ir = tj_ndim(idx);
    if (rank - 1 + ir > TJ_MAX_DIMS)
        return ox_fail(r, n, "the result would have %d dims", rank - 1 + ir);
    for (int k = 0; k < axis; k++)
        shape[nd++] = tj_size(x, k);
    for (int k = 0; k < ir; k++)
        shape[nd++] = tj_size(idx, k);
    for (int k = axis + 1; k < rank; k++)
        shape[nd++] = tj_size(x, k);
    tj_tensor *flat = tj_reshape(tj_cast(idx, TJ_I64), 1, (int64_t[]){-1});
    return ox_set(out[0], tj_reshape(tj_index_select(x, axis, flat), nd, shape));
}

static int op_slice(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int64_t ns, ne, na = 0, nst = 0;
    const int64_t *st = ox_ints(r, n, in[1], "starts input", &ns);
    const int64_t *en = st ? ox_ints(r, n, in[2], "ends input", &ne) : NULL;
    const int64_t *ax = n->nin > 3 && in[3] ? ox_ints(r, n, in[3], "axes input", &na) : NULL;
    const int64_t *sp = n->nin > 4 && in[4] ? ox_ints(r, n, in[4], "steps input", &nst) : NULL;
    if (!st || !en || (n->nin > 3 && in[3] && !ax) || (n->nin > 4 && in[4] && !sp))
        return -1;
    if (ne != ns || (ax && na != ns) || (sp && nst != ns))
        return ox_fail(r, n, "starts, ends, axes and steps differ in length");
    int rank = rank_of(r, in[0]);
    if (in[0]->host && !in[0]->t && rank == 1 && ns == 1 && (!sp || sp[0] == 1)) {
        int64_t len = in[0]->n, a = st[0], b = en[0];
        a = a < 0 ? a + len : a;
        b = b < 0 ? b + len : b;
        a = a < 0 ? 0 : a > len ? len : a;
        b = b < a ? a : b > len ? len : b;
        int64_t cnt = b - a;
        return ox_set_host(out[0], in[0]->dtype, 1, &cnt, in[0]->hv + a);
    }
    tj_tensor *x = T(r, in[0]);
    for (int64_t k = 0; k < ns && x; k++) {
        int axis = norm_axis(r, n, ax ? ax[k] : k, rank);
        if (axis < 0)
            return -1;
        int64_t step = sp ? sp[k] : 1;
        if (step <= 0)
            return ox_fail(r, n, "step %lld: tjit slices with positive steps", (long long)step);
        int64_t b = en[k] > INT64_MAX / 2 ? INT64_MAX / 2 : en[k] < -INT64_MAX / 2 ? -INT64_MAX / 2 : en[k];
        x = tj_slice(x, axis, st[k], b, step);
    }
    return ox_set(out[0], x);
}

static int op_expand(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int64_t cnt, shape[TJ_MAX_DIMS];
    const int64_t *s = ox_ints(r, n, in[1], "shape input", &cnt);
    tj_tensor *x = T(r, in[0]);
    if (!s || !x)
        return -1;
    int rank = tj_ndim(x), nd = rank > cnt ? rank : (int)cnt;
    if (nd > TJ_MAX_DIMS)
        return ox_fail(r, n, "a shape of %d dims", nd);
    for (int k = 0; k < nd; k++) {   /* both ways: a 1 on either side takes the other */
        int kx = k - (nd - rank), ks = k - (nd - (int)cnt);
        int64_t dx = kx >= 0 ? tj_size(x, kx) : 1, ds = ks >= 0 ? s[ks] : 1;
        if (dx != ds && dx != 1 && ds != 1)
            return ox_fail(r, n, "dim %d: %lld does not broadcast to %lld", k, (long long)dx, (long long)ds);
        shape[k] = dx == 1 ? ds : dx;
    }
    return ox_set(out[0], tj_expand(x, nd, shape));
}

static int op_split(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    tj_tensor *x = T(r, in[0]);
    if (!x)
        return -1;
    int axis = norm_axis(r, n, attr_i(n, "axis", 0), tj_ndim(x));
    if (axis < 0)
        return -1;
    int64_t sizes[64], cnt = n->nout;
    if (n->nout > 64)
        return ox_fail(r, n, "more than 64 outputs");
    if (n->nin > 1 && in[1]) {
        const int64_t *s = ox_ints(r, n, in[1], "split input", &cnt);
        if (!s)
            return -1;
        if (cnt != n->nout)
            return ox_fail(r, n, "%lld sizes for %d outputs", (long long)cnt, n->nout);
        memcpy(sizes, s, (size_t)cnt * sizeof *s);
    } else {
        int64_t len = tj_size(x, axis), each = (len + n->nout - 1) / n->nout;
        for (int k = 0; k < n->nout; k++)
            sizes[k] = len - k * each < each ? len - k * each : each;
    }
    tj_tensor *parts[64];
    if (tj_split_with_sizes(x, sizes, (int)cnt, axis, parts) < 0)
        return -1;
    for (int k = 0; k < n->nout; k++)
        if (out[k])
            ox_set(out[k], parts[k]);
    return 0;
}

static int op_pad(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    const ox_attr *mode = ox_attr_get(n, "mode");
    if (mode && mode->s && strcmp(mode->s, "constant"))
        return ox_fail(r, n, "mode '%s' (tjit pads with a constant)", mode->s);
    int64_t cnt;
    const int64_t *p = ox_ints(r, n, in[1], "pads input", &cnt);
    tj_tensor *x = T(r, in[0]);
    if (!p || !x)
        return -1;
    int rank = tj_ndim(x);
    if (cnt != 2 * rank || (n->nin > 3 && in[3]))
        return ox_fail(r, n, "pads for every axis (%d entries) and no axes input", 2 * rank);
    double value = 0;
    if (n->nin > 2 && in[2]) {
        tj_tensor *c = T(r, in[2]);
        if (!c)
            return -1;
        value = tj_item(c);
        if (isnan(value) && tj_last_error()[0])
            return -1;
    }
    int64_t pairs[2 * TJ_MAX_DIMS];   /* tjit's: the last dim first */
    for (int k = 0; k < rank; k++) {
        pairs[2 * k] = p[rank - 1 - k];
        pairs[2 * k + 1] = p[2 * rank - 1 - k];
    }
    return ox_set(out[0], tj_pad(x, pairs, rank, value));
}

/* ---- reductions, normalization ---------------------------------------------------------- */

typedef tj_tensor *(*reduce_fn)(tj_tensor *, const int *, int, bool);

static int reduce(ox_run *r, const ox_node *n, ox_val **in, ox_val **out, reduce_fn f, bool axes_input)
{
    tj_tensor *x = T(r, in[0]);
    if (!x)
        return -1;
    int dims[TJ_MAX_DIMS];
    int cnt = axes_of(r, n, in, axes_input ? 1 : n->nin, tj_ndim(x), dims);
    if (cnt < 0)
        return -1;
    if (cnt == 0 && attr_i(n, "noop_with_empty_axes", 0))
        return ox_set(out[0], x);
    return ox_set(out[0], f(x, dims, cnt, attr_i(n, "keepdims", 1) != 0));
}
/* opset 13-17: ReduceSum takes axes as an input, the others as an attribute */
static int op_reduce_sum(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return reduce(r, n, in, out, tj_sum, true); }
static int op_reduce_mean(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return reduce(r, n, in, out, tj_mean, n->nin > 1); }
static int op_reduce_max(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return reduce(r, n, in, out, tj_amax, n->nin > 1); }
static int op_reduce_min(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return reduce(r, n, in, out, tj_amin, n->nin > 1); }
static int op_reduce_prod(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return reduce(r, n, in, out, tj_prod, n->nin > 1); }

static int global_pool(ox_run *r, ox_val **in, ox_val **out, reduce_fn f)
{
    tj_tensor *x = T(r, in[0]);
    if (!x)
        return -1;
    int dims[TJ_MAX_DIMS], cnt = 0;
    for (int k = 2; k < tj_ndim(x); k++)
        dims[cnt++] = k;
    return ox_set(out[0], f(x, dims, cnt, true));
}
static int op_global_average_pool(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { (void)n; return global_pool(r, in, out, tj_mean); }
static int op_global_max_pool(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { (void)n; return global_pool(r, in, out, tj_amax); }

static int softmax(ox_run *r, const ox_node *n, ox_val **in, ox_val **out, tj_tensor *(*f)(tj_tensor *, int))
{
    tj_tensor *x = T(r, in[0]);
    if (!x)
        return -1;
    int axis = norm_axis(r, n, attr_i(n, "axis", -1), tj_ndim(x));
    return axis < 0 ? -1 : ox_set(out[0], f(x, axis));
}
static int op_softmax(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return softmax(r, n, in, out, tj_softmax); }
static int op_log_softmax(ox_run *r, const ox_node *n, ox_val **in, ox_val **out) { return softmax(r, n, in, out, tj_log_softmax); }

static int op_layer_norm(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    tj_tensor *x = T(r, in[0]);
    if (!x)
        return -1;
    if ((n->nout > 1 && out[1]) || (n->nout > 2 && out[2]))
        return ox_fail(r, n, "the Mean and InvStdDev outputs are not supported");
    int axis = norm_axis(r, n, attr_i(n, "axis", -1), tj_ndim(x));
    if (axis < 0)
        return -1;
    return ox_set(out[0], tj_layer_norm(x, tj_ndim(x) - axis, T(r, in[1]), n->nin > 2 ? T(r, in[2]) : NULL,
                                        attr_f(n, "epsilon", 1e-5)));
}

static int op_batch_norm(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    if (attr_i(n, "training_mode", 0) || n->nout > 1)
        return ox_fail(r, n, "training mode (running statistics outputs) is not supported");
    return ox_set(out[0], tj_batch_norm(T(r, in[0]), T(r, in[3]), T(r, in[4]), T(r, in[1]), T(r, in[2]),
                                        attr_f(n, "epsilon", 1e-5)));
}

/* ---- contractions, convolution, pooling ------------------------------------------------ */

static int op_gemm(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    tj_tensor *a = T(r, in[0]), *b = T(r, in[1]), *c = n->nin > 2 && in[2] ? T(r, in[2]) : NULL;
    if (!a || !b || (n->nin > 2 && in[2] && !c))
        return -1;
    bool ta = attr_i(n, "transA", 0), tb = attr_i(n, "transB", 0);
    double alpha = attr_f(n, "alpha", 1), beta = attr_f(n, "beta", 1);
    if (tj_ndim(a) != 2 || tj_ndim(b) != 2)
        return ox_fail(r, n, "A and B must be 2-D");
    if (tb && !ta && alpha == 1 && beta == 1 && (!c || tj_ndim(c) <= 1))
        return ox_set(out[0], tj_linear(a, b, c));   /* the form PyTorch exports: x @ W^T + b */
    const int t2[2] = {1, 0};
    tj_tensor *y = tj_matmul(ta ? tj_permute(a, t2) : a, tb ? tj_permute(b, t2) : b);
    if (alpha != 1)
        y = tj_mul_s(y, alpha);
    if (c)
        y = tj_add(y, beta == 1 ? c : tj_mul_s(c, beta));
    return ox_set(out[0], y);
}

/* Conv and pools: 2-D only; pads [top, left, bottom, right]. */
static int window2d(ox_run *r, const ox_node *n, int64_t *stride, int64_t *dil, int64_t pads[4])
{
    const ox_attr *ap = ox_attr_get(n, "auto_pad");
    if (ap && ap->s && strcmp(ap->s, "NOTSET") && strcmp(ap->s, "VALID"))
        return ox_fail(r, n, "auto_pad=%s (give explicit pads)", ap->s);
    int cs, cd, cp;
    const int64_t *s = attr_ints(n, "strides", &cs), *d = attr_ints(n, "dilations", &cd),
                  *p = attr_ints(n, "pads", &cp);
    if ((s && cs != 2) || (d && cd != 2) || (p && cp != 4))
        return ox_fail(r, n, "tjit imports 2-D windows (strides, dilations: 2 entries; pads: 4)");
    for (int k = 0; k < 2; k++) {
        stride[k] = s ? s[k] : 1;
        dil[k] = d ? d[k] : 1;
    }
    for (int k = 0; k < 4; k++)
        pads[k] = p ? p[k] : 0;
    return 0;
}

static int op_conv(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    tj_tensor *x = T(r, in[0]), *w = T(r, in[1]), *b = n->nin > 2 && in[2] ? T(r, in[2]) : NULL;
    int64_t stride[2], dil[2], p[4];
    if (!x || !w || window2d(r, n, stride, dil, p) != 0)
        return -1;
    if (tj_ndim(x) != 4)
        return ox_fail(r, n, "input of %d dims (tjit imports 2-D convolutions, NCHW)", tj_ndim(x));
    int64_t pad[2] = {p[0], p[1]};
    if (p[0] != p[2] || p[1] != p[3]) {   /* asymmetric: pad first */
        x = tj_pad(x, (int64_t[]){p[1], p[3], p[0], p[2]}, 2, 0);
        pad[0] = pad[1] = 0;
    }
    return ox_set(out[0], tj_conv2d(x, w, b, stride, pad, dil, attr_i(n, "group", 1)));
}

static int pool_kernel(ox_run *r, const ox_node *n, int64_t k[2])
{
    int cnt;
    const int64_t *ks = attr_ints(n, "kernel_shape", &cnt);
    if (!ks || cnt != 2)
        return ox_fail(r, n, "kernel_shape must have 2 entries (tjit imports 2-D pooling)");
    k[0] = ks[0];
    k[1] = ks[1];
    return 0;
}

static int op_max_pool(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int64_t k[2], stride[2], dil[2], p[4];
    tj_tensor *x = T(r, in[0]);
    if (!x || pool_kernel(r, n, k) || window2d(r, n, stride, dil, p))
        return -1;
    if (n->nout > 1 && out[1])
        return ox_fail(r, n, "the Indices output is not supported");
    int64_t pad[2] = {p[0], p[1]};
    if (p[0] != p[2] || p[1] != p[3]) {
        x = tj_pad(x, (int64_t[]){p[1], p[3], p[0], p[2]}, 2, -INFINITY);
        pad[0] = pad[1] = 0;
    }
    tj_max_pool2d_options o = {stride, pad, dil, attr_i(n, "ceil_mode", 0) != 0};
    return ox_set(out[0], tj_max_pool2d_ex(x, k, &o, NULL));
}

static int op_average_pool(ox_run *r, const ox_node *n, ox_val **in, ox_val **out)
{
    int64_t k[2], stride[2], dil[2], p[4];
    tj_tensor *x = T(r, in[0]);
    if (!x || pool_kernel(r, n, k) || window2d(r, n, stride, dil, p))
        return -1;
    if (p[0] != p[2] || p[1] != p[3] || dil[0] != 1 || dil[1] != 1)
        return ox_fail(r, n, "asymmetric pads or dilations (not supported)");
    tj_avg_pool2d_options o = tj_avg_pool2d_defaults();
    o.stride = stride;
    o.padding = (int64_t[]){p[0], p[1]};
    o.ceil_mode = attr_i(n, "ceil_mode", 0) != 0;
    o.count_include_pad = attr_i(n, "count_include_pad", 0) != 0;
    return ox_set(out[0], tj_avg_pool2d_ex(x, k, &o));
}

/* ---- the table ------------------------------------------------------------------------------ */

static const ox_op ops[] = {
    {"Abs", op_abs, 1, 1},           {"Add", op_add, 2, 2},
    {"And", op_and, 2, 2},           {"AveragePool", op_average_pool, 1, 1},
    {"BatchNormalization", op_batch_norm, 5, 5},
    {"Cast", op_cast, 1, 1},         {"Ceil", op_ceil, 1, 1},
    {"Clip", op_clip, 1, 3},         {"Concat", op_concat, 1, -1},
    {"Constant", op_constant, 0, 0}, {"ConstantOfShape", op_constant_of_shape, 1, 1},
    {"Conv", op_conv, 2, 3},         {"Cos", op_cos, 1, 1},
    {"Div", op_div, 2, 2},           {"Dropout", op_dropout, 1, 3},
    {"Equal", op_equal, 2, 2},       {"Erf", op_erf, 1, 1},
    {"Exp", op_exp, 1, 1},           {"Expand", op_expand, 2, 2},
    {"Flatten", op_flatten, 1, 1},   {"Floor", op_floor, 1, 1},
    {"Gather", op_gather, 2, 2},     {"Gelu", op_gelu, 1, 1},
    {"Gemm", op_gemm, 2, 3},         {"GlobalAveragePool", op_global_average_pool, 1, 1},
    {"GlobalMaxPool", op_global_max_pool, 1, 1},
    {"Greater", op_greater, 2, 2},   {"GreaterOrEqual", op_greater_equal, 2, 2},
    {"Identity", op_identity, 1, 1}, {"IsNaN", op_isnan, 1, 1},
    {"LayerNormalization", op_layer_norm, 2, 3},
    {"Less", op_less, 2, 2},         {"LessOrEqual", op_less_equal, 2, 2},
    {"Log", op_log, 1, 1},           {"LogSoftmax", op_log_softmax, 1, 1},
    {"MatMul", op_matmul, 2, 2},     {"Max", op_max, 1, -1},
    {"MaxPool", op_max_pool, 1, 1},  {"Mean", op_mean, 1, -1},
    {"Min", op_min, 1, -1},          {"Mul", op_mul, 2, 2},
    {"Neg", op_neg, 1, 1},           {"Not", op_not, 1, 1},
    {"Or", op_or, 2, 2},             {"Pad", op_pad, 2, 4},
    {"Pow", op_pow, 2, 2},           {"Reciprocal", op_reciprocal, 1, 1},
    {"ReduceMax", op_reduce_max, 1, 2},   {"ReduceMean", op_reduce_mean, 1, 2},
    {"ReduceMin", op_reduce_min, 1, 2},   {"ReduceProd", op_reduce_prod, 1, 2},
    {"ReduceSum", op_reduce_sum, 1, 2},
    {"Relu", op_relu, 1, 1},         {"Reshape", op_reshape, 2, 2},
    {"Shape", op_shape, 1, 1},       {"Sigmoid", op_sigmoid, 1, 1},
    {"Sin", op_sin, 1, 1},           {"Size", op_size, 1, 1},
    {"Slice", op_slice, 3, 5},       {"Softmax", op_softmax, 1, 1},
    {"Split", op_split, 1, 2},       {"Sqrt", op_sqrt, 1, 1},
    {"Squeeze", op_squeeze, 1, 2},   {"Sub", op_sub, 2, 2},
    {"Sum", op_sum, 1, -1},          {"Tanh", op_tanh, 1, 1},
    {"Transpose", op_transpose, 1, 1},
    {"Unsqueeze", op_unsqueeze, 1, 2},
    {"Where", op_where, 3, 3},       {"Xor", op_xor, 2, 2},
};

const ox_op *ox_op_find(const char *op_type)
{
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (!strcmp(ops[k].name, op_type))
            return &ops[k];
    return NULL;
}

int tj_onnx_num_ops(void) { return (int)(sizeof ops / sizeof *ops); }
const char *tj_onnx_op_name(int k) { return k >= 0 && k < tj_onnx_num_ops() ? ops[k].name : NULL; }
