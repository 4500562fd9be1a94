/* tensor.c - tensor handles: creation, views, reference counts, scopes
 * (autorelease pools), weak references, the released-header poison and the
 * inspection functions of the public API. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/half.h"
#include "rt.h"

/* ---- storage ----------------------------------------------------------------- */

static atomic_uint_fast64_t serials = 1;   /* thread-safe; 2^64 never wraps */

uint64_t rt_storage_serial_next(void)
{
    return atomic_load_explicit(&serials, memory_order_relaxed);
}

static rt_storage *storage_new(size_t nbytes)
{
    rt_storage *s = malloc(sizeof *s);
    if (!s) {
        rt_error("out of memory allocating a storage header");
        return NULL;
    }
    s->data = rt_alloc(nbytes);
    if (!s->data) {
        free(s);
        return NULL;
    }
    atomic_init(&s->refs, 1);
    atomic_init(&s->version, 0);
    atomic_init(&s->raw, 0);
    s->nbytes = nbytes;
    s->serial = atomic_fetch_add_explicit(&serials, 1, memory_order_relaxed);
    return s;
}

static void storage_release(rt_storage *s)
{
    if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        if (s->serial)   /* 0: borrowed memory (an exported model's weights), not ours */
            rt_free(s->data, s->nbytes);
        free(s);
    }
}

/* ---- tensors ------------------------------------------------------------------- */

void rt_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

static _Thread_local bool tracing;

void rt_set_tracing(bool on) { tracing = on; }

static tj_tensor *header_new(tj_dtype dt, int ndim, const int64_t *shape)
{
    tj_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        rt_error("out of memory allocating a tensor header");
        return NULL;
    }
    t->magic = RT_LIVE;
    t->made_tracing = tracing;
    atomic_init(&t->refs, 1);
    t->dtype = dt;
    t->ndim = ndim;
    if (ndim)
        memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    return t;
}

tj_tensor *rt_tensor_new(tj_dtype dt, int ndim, const int64_t *shape)
{
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0) {
            rt_error("negative size %lld in dim %d", (long long)shape[d], d);
            return NULL;
        }
    int64_t n;
    size_t bytes;
    if (!ir_numel_checked(ndim, shape, &n) ||
        __builtin_mul_overflow((size_t)n, tj_dtype_size(dt), &bytes)) {
        ir_type ty = {.dtype = dt, .ndim = ndim};
        memcpy(ty.shape, shape, sizeof(int64_t) * (size_t)ndim);
        char s[96];
        rt_error("tensor size overflows: %s needs more than %zu bytes", ir_type_str(&ty, s, sizeof s),
                 SIZE_MAX);
        return NULL;
    }
    tj_tensor *t = header_new(dt, ndim, shape);
    if (!t)
        return NULL;
    rt_contiguous_strides(ndim, shape, t->strides);
    t->storage = storage_new(bytes);
    if (!t->storage) {
        free(t);
        return NULL;
    }
    return t;
}

tj_tensor *rt_tensor_of(const ir_type *ty)
{
    tj_tensor *t = rt_tensor_new(ty->dtype, ty->ndim, ty->shape);
    if (t)
        t->weak = ty->weak;
    return t;
}

tj_tensor *rt_tensor_view(const tj_tensor *base, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset)
{
    tj_tensor *t = header_new(base->dtype, ndim, shape);
    if (!t)
        return NULL;
    if (ndim)
        memcpy(t->strides, strides, (size_t)ndim * sizeof *strides);
    t->offset = offset;
    t->storage = base->storage;
    if (t->storage)
        atomic_fetch_add_explicit(&t->storage->refs, 1, memory_order_relaxed);
    return t;
}

tj_tensor *rt_tensor_symbolic(const ir_type *ty, void *sym)
{
    tj_tensor *t = header_new(ty->dtype, ty->ndim, ty->shape);
    if (!t)
        return NULL;
    rt_contiguous_strides(ty->ndim, ty->shape, t->strides);
    t->weak = ty->weak;
    t->sym = sym;
    return t;
}

void rt_tensor_rebind(tj_tensor *h, const tj_tensor *v)
{
    rt_storage *old = h->storage;
    h->storage = v->storage;
    atomic_fetch_add_explicit(&v->storage->refs, 1, memory_order_relaxed);
    h->offset = v->offset;
    memcpy(h->strides, v->strides, sizeof h->strides);
    rt_wref *was = h->view_of;   /* h views what v views (unless that is h) */
    h->view_of = v->view_of && rt_wref_get(v->view_of) != h ? rt_wref_view(rt_wref_retain(v->view_of)) : NULL;
    rt_wref_view_release(was);
    h->view_no_grad = v->view_no_grad;
    h->sym = NULL;
    h->made_tracing = false;
    storage_release(old);
}

void rt_type_of(const tj_tensor *t, ir_type *out)
{
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    out->weak = t->weak;
    if (t->ndim)
        memcpy(out->shape, t->shape, (size_t)t->ndim * sizeof *t->shape);
}

/* PyTorch's rule: size-1 dims may have any stride, and a tensor without
 * elements is contiguous whatever its strides (rt_contiguous_strides gives
 * [1, 1] to a [3, 0] tensor, strides no element is ever read through). */
bool rt_is_contiguous(const tj_tensor *t)
{
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0)
            return true;
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != s)
            return false;
        s *= t->shape[d];
    }
    return true;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

bool rt_overlaps_itself(const tj_tensor *t)
{
    int64_t n = rt_numel(t), st[TJ_MAX_DIMS], sz[TJ_MAX_DIMS];
    int nd = 0;
    if (n <= 1)
        return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] > 1) {
            if (t->strides[d] == 0)
                return true;
            /* insertion by |stride| */
            int64_t s = t->strides[d] < 0 ? -t->strides[d] : t->strides[d];
            int k = nd++;
            for (; k > 0 && st[k - 1] > s; k--)
                st[k] = st[k - 1], sz[k] = sz[k - 1];
            st[k] = s, sz[k] = t->shape[d];
        }
    /* each stride past the reach of the smaller ones: no overlap (the usual
     * case, a permutation of a dense layout or slices of one) */
    bool clear = true;
    int64_t reach = 0;
    for (int k = 0; k < nd && clear; k++) {
        clear = st[k] > reach;
        reach += (sz[k] - 1) * st[k];
    }
    if (clear)
        return false;
    /* else exactly: the sorted offsets, duplicates or not (interleaved
     * strides without overlap are rare; too many to list: say it overlaps) */
    if (n > ((int64_t)1 << 22))
        return true;
    int64_t *off = malloc((size_t)n * sizeof *off), idx[TJ_MAX_DIMS] = {0};
    if (!off)
        return true;
    for (int64_t e = 0; e < n; e++) {
        int64_t o = 0;
        for (int d = 0; d < t->ndim; d++)
            o += idx[d] * t->strides[d];
        off[e] = o;
        for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->shape[d]; d--)
            idx[d] = 0;
    }
    qsort(off, (size_t)n, sizeof *off, cmp_i64);
    bool dup = false;
    for (int64_t e = 1; e < n && !dup; e++)
        dup = off[e] == off[e - 1];
    free(off);
    return dup;
}

bool rt_holds_storage(const tj_tensor *t)
{
    return t->storage && t->offset == 0 && rt_is_contiguous(t) &&
           t->storage->nbytes == (size_t)rt_numel(t) * tj_dtype_size(t->dtype);
}

/* ---- liveness and weak references ---------------------------------------------- */

/* Freed headers wait here, poisoned, before free() may hand their memory to
 * a new header: a slot is taken by an atomic ticket and its previous
 * occupant freed, so each header is freed exactly once. */
static tj_tensor *_Atomic quarantine[RT_QUARANTINE];
static atomic_uint quarantine_next;

static void header_free(tj_tensor *t)
{
    t->magic = RT_DEAD;
    unsigned k = atomic_fetch_add_explicit(&quarantine_next, 1, memory_order_relaxed);
    free(atomic_exchange_explicit(&quarantine[k % RT_QUARANTINE], t, memory_order_acq_rel));
}

void rt_quarantine_drain(void)
{
    for (int k = 0; k < RT_QUARANTINE; k++)
        free(atomic_exchange_explicit(&quarantine[k], NULL, memory_order_acq_rel));
}

int rt_check_live(tj_tensor *const *in, int n, const char *what)
{
    for (int k = 0; k < n; k++)
        if (in[k] && rt_dead(in[k])) {
            if (n == 1)
                rt_error("%s: the tensor was released (used after tj_release)", what);
            else
                rt_error("%s: input %d is a released tensor (used after tj_release)", what, k);
            return -1;
        }
    return 0;
}

rt_wref *rt_wref_of(tj_tensor *t)
{
    rt_wref *have = atomic_load_explicit(&t->wref, memory_order_acquire);
    if (!have) {
        rt_wref *w = malloc(sizeof *w);
        if (!w) {
            rt_error("out of memory making a weak reference");
            return NULL;
        }
        atomic_init(&w->refs, 1);   /* the tensor's own */
        atomic_init(&w->t, t);
        atomic_init(&w->views, 0);
        atomic_init(&w->pin, NULL);
        if (atomic_compare_exchange_strong_explicit(&t->wref, &have, w,
                                                    memory_order_acq_rel, memory_order_acquire))
            have = w;
        else
            free(w);   /* another thread's came first */
    }
    atomic_fetch_add_explicit(&have->refs, 1, memory_order_relaxed);
    return have;
}

void rt_wref_release(rt_wref *w)
{
    if (w && atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) == 1)
        free(w);
}

rt_wref *rt_wref_view(rt_wref *w)
{
    if (w)
        atomic_fetch_add_explicit(&w->views, 1, memory_order_relaxed);
    return w;
}

void rt_wref_view_release(rt_wref *w)
{
    if (!w)
        return;
    if (atomic_fetch_sub_explicit(&w->views, 1, memory_order_acq_rel) == 1)   /* the last view */
        tj_release(atomic_exchange_explicit(&w->pin, NULL, memory_order_acq_rel));
    rt_wref_release(w);   /* w lives until here: this view's hold */
}

void rt_wref_pin(tj_tensor *t)
{
    rt_wref *w = atomic_load_explicit(&t->wref, memory_order_acquire);
    if (!w || atomic_load_explicit(&w->views, memory_order_acquire) < 1)
        return;   /* no view holds it */
    tj_tensor *none = NULL;
    tj_retain(t);
    if (!atomic_compare_exchange_strong_explicit(&w->pin, &none, t, memory_order_acq_rel, memory_order_acquire))
        tj_release(t);   /* pinned already */
}

tj_tensor *tj_retain(tj_tensor *t)
{
    if (t && rt_check_live(&t, 1, "tj_retain") != 0)
        return NULL;
    if (t)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void tj_release(tj_tensor *t)
{
    if (t && rt_check_live(&t, 1, "tj_release") != 0)
        return;   /* released twice: reported, nothing freed again */
    if (t && atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) {
        if (t->ag)
            t->ag->release(t->ag);
        rt_wref_view_release(t->view_of);
        storage_release(t->storage);
        if (t->wref) {
            atomic_store_explicit(&t->wref->t, NULL, memory_order_release);
            rt_wref_release(t->wref);
        }
        header_free(t);
    }
}

/* ---- scopes ---------------------------------------------------------------------- */

/* A scope's first SCOPE_INLINE results sit in the scope itself: a scope per
 * node of a backward (frontend/backward.c) or per op costs one allocation. */
#define SCOPE_INLINE 16

typedef struct scope {
    tj_tensor **items;       /* inline, or grown on the heap */
    size_t n, cap;
    struct scope *prev;
    tj_tensor *inline_items[SCOPE_INLINE];
} scope;

static _Thread_local scope *scope_top;
/* tj_scope_begin calls that could not allocate their scope, innermost and
 * not yet ended: their tj_scope_end pops nothing (never the enclosing
 * scope), and while one is open no result can be owned, so ops fail with a
 * message instead of handing the caller tensors it does not know it owns. */
static _Thread_local size_t scope_lost;

void tj_scope_begin(void)
{
    scope *s = scope_lost ? NULL : calloc(1, sizeof *s);
    if (!s) {
        scope_lost++;
        rt_error("out of memory opening a scope");
        return;
    }
    s->items = s->inline_items;
    s->cap = SCOPE_INLINE;
    s->prev = scope_top;
    scope_top = s;
}

void tj_scope_end(void)
{
    if (scope_lost) {
        scope_lost--;
        return;
    }
    scope *s = scope_top;
    if (!s)
        return;
    scope_top = s->prev;
    for (size_t k = 0; k < s->n; k++)
        tj_release(s->items[k]);
    if (s->items != s->inline_items)
        free(s->items);
    free(s);
}

tj_tensor *rt_own(tj_tensor *t)
{
    scope *s = scope_top;
    if (t && scope_lost) {
        rt_error("out of memory: the scope this result belongs to could not be opened");
        tj_release(t);
        return NULL;
    }
    if (!t || !s)
        return t;
    if (s->n == s->cap) {
        size_t cap = 4 * s->cap;
        bool first = s->items == s->inline_items;
        tj_tensor **items = realloc(first ? NULL : s->items, cap * sizeof *items);
        if (!items) {
            rt_error("out of memory growing a scope");
            tj_release(t);
            return NULL;
        }
        if (first)
            memcpy(items, s->inline_items, sizeof s->inline_items);
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = t;
    return t;
}

tj_tensor *tj_keep(tj_tensor *t) { return tj_retain(t); }

/* ---- inspection ---------------------------------------------------------------------- */

tj_dtype tj_dtype_of(const tj_tensor *t) { return t ? t->dtype : TJ_NUM_DTYPES; }

int tj_ndim(const tj_tensor *t) { return t ? t->ndim : -1; }

/* tj_shape, tj_strides, tj_offset, tj_numel: runtime/access.c (reads of
 * sizes while tracing are recorded there). */

int64_t rt_numel(const tj_tensor *t)
{
    if (!t)
        return -1;
    int64_t n;
    if (!ir_numel_checked(t->ndim, t->shape, &n)) {   /* no op makes such a tensor */
        char d[96];
        rt_error("numel(%s): the shape has more than 2^63-1 elements", tj_describe(t, d, sizeof d));
        return -1;
    }
    return n;
}

bool tj_is_contiguous(const tj_tensor *t) { return t && rt_is_contiguous(t); }

char *tj_describe(const tj_tensor *t, char *buf, size_t n)
{
    if (!t || rt_dead(t)) {
        snprintf(buf, n, t ? "released" : "none");
        return buf;
    }
    ir_type ty;
    rt_type_of(t, &ty);
    return ir_type_str(&ty, buf, n);
}

double rt_load_f64(const tj_tensor *t, const int64_t *index)
{
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++)
        off += index[d] * t->strides[d];
    const char *p = (const char *)t->storage->data + off * (int64_t)tj_dtype_size(t->dtype);
    switch (t->dtype) {
    case TJ_F32: return *(const float *)p;
    case TJ_F64: return *(const double *)p;
    case TJ_I32: return *(const int32_t *)p;
    case TJ_I16: return *(const int16_t *)p;
    case TJ_I8: return *(const int8_t *)p;
    case TJ_I64: return (double)*(const int64_t *)p;
    case TJ_BOOL:
    case TJ_U8: return *(const uint8_t *)p;
    case TJ_F16: return ir_f16_to_f32(*(const uint16_t *)p);
    case TJ_BF16: return ir_bf16_to_f32(*(const uint16_t *)p);
    default: return NAN;
    }
}

tj_tensor *tj_from_data(tj_dtype dt, int ndim, const int64_t *shape, const void *data)
{
    if (!ir_dtype_supported(dt) || ndim < 0 || ndim > TJ_MAX_DIMS || (ndim && !shape) ||
        !data) {
        rt_error("from_data: bad arguments (dtype %s, %d dims%s)", tj_dtype_name(dt), ndim,
                 data ? "" : ", data is NULL");
        return NULL;
    }
    tj_tensor *t = rt_tensor_new(dt, ndim, shape);
    if (!t)
        return NULL;
    memcpy(t->storage->data, data, t->storage->nbytes);
    return rt_own(t);
}
