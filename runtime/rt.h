/* rt.h - the runtime layer's internal interface: tensor and storage structs,
 * the allocator, the thread pool, errors, and the eager kernel table.
 *
 * The runtime depends on ir/ (op ids, types) only. Kernels never see scopes:
 * the frontend allocates each output (contiguous, of the type ir_infer gave),
 * calls the op's kernel, and hands the result to the caller's scope.
 */
#ifndef TJ_RT_H
#define TJ_RT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../include/tjit.h"
#include "../ir/ir.h"

/* ---- storage and tensors ---------------------------------------------------- */
typedef struct rt_storage {
    atomic_int refs;
    atomic_uint version;   /* bumped by every in-place write (autograd checks saved tensors) */
    size_t nbytes;
    void *data;        /* 64-byte aligned, from rt_alloc */
    uint64_t serial;   /* unique per storage made by storage_new (never reused; 0: a
                        * header over borrowed memory): caches key on it (gemm_cache.c) */
    atomic_uint raw;   /* bumped by every tj_data (a pointer the caller may write
                        * through, which bumps no version): caches key on it too */
} rt_storage;

/* The serial the next storage will get: storages made from now on have one
 * at least as large (autograd's checkpoints tell their own values by it). */
uint64_t rt_storage_serial_next(void);

/* A tensor's autograd state; its layout belongs to frontend/autograd.c. The
 * runtime only calls release when the tensor is freed. */
typedef struct rt_agmeta rt_agmeta;
struct rt_agmeta {
    void (*release)(rt_agmeta *m);
};

/* A weak reference to a tensor (refcounted cell): get() is the tensor while
 * it lives and NULL once it is freed; holding the cell keeps no tensor alive.
 * The compile cache holds the weights a trace captured this way. */
typedef struct rt_wref {
    atomic_int refs;
    tj_tensor *_Atomic t;
    atomic_int views;         /* of those, views' view_of (rt_wref_view) */
    tj_tensor *_Atomic pin;   /* t itself, held while views hold this (rt_wref_pin) */
} rt_wref;

/* A live header's magic; tj_release sets RT_DEAD when it frees one. */
#define RT_LIVE 0x7e115a7eu
#define RT_DEAD 0xdeadf7eeu
/* A copy of a header that autograd saved, its storage written in place since:
 * a gradient rule may read its shape and dtype; an op given it fails as for a
 * released tensor (frontend/autograd.c, run_node). */
#define RT_STALE 0x57a1e5edu

struct tj_tensor {
    uint32_t magic;                 /* RT_LIVE; RT_DEAD once released (use after release) */
    atomic_int refs;
    tj_dtype dtype;
    int ndim;
    bool weak;                      /* wrapped scalar from an _s op */
    int64_t shape[TJ_MAX_DIMS];
    int64_t strides[TJ_MAX_DIMS];   /* in elements; 0 for broadcast dims */
    int64_t offset;                 /* into storage, in elements */
    rt_storage *storage;            /* NULL only for symbolic tensors */
    void *sym;                      /* tracing: the graph value; NULL when concrete */
    uint64_t alias;                 /* tracing: the storage a symbolic tensor stands for, its
                                     * views' too (frontend/trace.c); 0 when concrete */
    rt_agmeta *ag;                  /* autograd state (frontend/autograd.c) or NULL */
    rt_wref *view_of;               /* an eager view op's float result made in grad mode
                                     * (fe_apply): a weak reference to the tensor under its
                                     * chain of views (autograd finds the base a write
                                     * through it reaches); NULL otherwise */
    bool view_no_grad;              /* a float view made in no-grad mode, or a view of one
                                     * (fe_ag_view_made): a write of a value that requires
                                     * grad through it is refused, as PyTorch does */
    rt_wref *_Atomic wref;          /* its weak reference, made on first request, or NULL */
    bool made_tracing;              /* made while this thread traced (a model's constant) */
    uint32_t dyn_mark, static_mark; /* tj_mark_dynamic / tj_mark_static: bit d per dim */
};

/* ---- liveness and weak references (tensor.c) ------------------------------------ */
/* A freed header is poisoned (RT_DEAD) and kept out of malloc's reuse for the
 * next RT_QUARANTINE frees, so a handle used soon after its release is
 * detected; later the memory may be reused and a stale handle cannot always
 * be told from a live one (docs/api.md). */
#define RT_QUARANTINE 1024
static inline bool rt_dead(const tj_tensor *t) { return t->magic != RT_LIVE; }
/* 0, or -1 with "what: input k is a released tensor" (n == 1: "what: the
 * tensor was released") when in[k] is dead; NULL entries are skipped. */
int rt_check_live(tj_tensor *const *in, int n, const char *what);
/* t's weak reference, retained (release with rt_wref_release); NULL when out
 * of memory. Made once per tensor, safely from several threads. */
rt_wref *rt_wref_of(tj_tensor *t);
static inline tj_tensor *rt_wref_get(rt_wref *w)
{
    return atomic_load_explicit(&w->t, memory_order_acquire);
}
void rt_wref_release(rt_wref *w);
/* A view's hold of w (its view_of): counted apart, for rt_wref_pin; the
 * release lets the pin go with the last view. */
rt_wref *rt_wref_view(rt_wref *w);
void rt_wref_view_release(rt_wref *w);
/* Holds t alive while views hold its weak reference (made while t had no
 * history: t was just written with one, which they must find when read);
 * let go when the last of them goes. No view: nothing to do. */
void rt_wref_pin(tj_tensor *t);
static inline rt_wref *rt_wref_retain(rt_wref *w)
{
    atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
    return w;
}
/* Tensors made while set are marked made_tracing (frontend/trace.c sets it
 * for the thread that traces). */
void rt_set_tracing(bool on);

/* New contiguous tensor, uninitialized, refs 1, in no scope. NULL (error set)
 * when the size overflows or memory runs out. */
tj_tensor *rt_tensor_new(tj_dtype dt, int ndim, const int64_t *shape);
tj_tensor *rt_tensor_of(const ir_type *t);
/* A view of base's storage (retained), refs 1, in no scope. */
tj_tensor *rt_tensor_view(const tj_tensor *base, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset);
/* A tensor without storage standing for a traced value (sym), with the
 * concrete example type ty; refs 1, in no scope. */
tj_tensor *rt_tensor_symbolic(const ir_type *ty, void *sym);
/* Header h takes v's storage (one more reference), offset and strides and
 * drops the storage it had (none while symbolic): concrete from now on, a
 * value of this call rather than a constant of a graph (split calls). */
void rt_tensor_rebind(tj_tensor *h, const tj_tensor *v);
/* Hands a fresh tensor (refs 1) to the innermost scope of this thread, or to
 * the caller when no scope is open. Returns t. */
tj_tensor *rt_own(tj_tensor *t);
void rt_type_of(const tj_tensor *t, ir_type *out);

/* After an in-place write to t's storage: saved copies of it are stale. */
static inline void rt_bump_version(tj_tensor *t)
{
    if (t->storage)
        atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}

/* What data kept from st's contents is valid for (packed GEMM weights,
 * gemm_cache.c; values kept across calls, frontend/keep.c): its version
 * (in-place ops) plus its tj_data count (writes through a pointer); either
 * grows on a write, so the sum never repeats an earlier state's. */
static inline unsigned rt_storage_stamp(const rt_storage *st)
{
    return atomic_load(&st->version) + atomic_load(&st->raw);
}

static inline void *rt_ptr(const tj_tensor *t)
{
    return (char *)t->storage->data + t->offset * (int64_t)tj_dtype_size(t->dtype);
}
void rt_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
bool rt_is_contiguous(const tj_tensor *t);
/* Whether concrete t holds its whole storage from offset 0 in row-major order
 * (its storage has exactly its elements). */
bool rt_holds_storage(const tj_tensor *t);
/* tj_numel without recording a read of t's sizes (a traced t: the library's
 * own uses, which do not bake the count into a graph); -1 for NULL. */
int64_t rt_numel(const tj_tensor *t);
/* Whether two elements of t share one memory location (a dim of stride 0 and
 * size > 1, or overlapping windows of as_strided), by its shape and strides:
 * an in-place write into such a tensor has no single meaning. */
bool rt_overlaps_itself(const tj_tensor *t);
/* Element k (in row-major order of t's shape) converted to double. */
double rt_load_f64(const tj_tensor *t, const int64_t *index);

/* ---- GEMM weights kept packed (gemm_cache.c) ------------------------------------ */
/* For this thread's next GEMMs: the storages of t[0..n) (NULL entries
 * skipped) hold a compiled call's weights, which may be packed once and kept
 * while their version and tj_data count hold (frozen or not); flags: RT_GEMM_AUTOTUNE times tjit's GEMM against OpenBLAS for
 * their shapes, RT_GEMM_INT8 runs f32 GEMMs on them in int8 (dynamic
 * quantization). rt_gemm_frozen(NULL, 0, 0) ends it. */
enum { RT_GEMM_AUTOTUNE = 1, RT_GEMM_INT8 = 2, RT_GEMM_FREEZE = 4 /* the call is frozen */ };
void rt_gemm_frozen(tj_tensor *const *t, int n, unsigned flags);
/* This thread's: what rt_gemm_frozen set (for handing it to a pool thread
 * that runs one of the call's GEMMs, sched/pair.c). */
void rt_gemm_frozen_get(tj_tensor *const **t, int *n, unsigned *flags);
/* For this thread's next f32 matmul of one GEMM with n columns on a kept
 * weight (k_matmul.c): C = act(A @ B + bias[j]) in tjit's GEMM's epilogue
 * (act a tjg_act), where that GEMM runs it; rt_gemm_epi_end then says
 * whether it did (and forgets it). sched/epi.c's fused epilogues. An int8
 * GEMM (quantize_dynamic) takes it always, an f32 one only with f32 set. */
void rt_gemm_epi_begin(const float *bias, int64_t n, int act, bool f32);
bool rt_gemm_epi_end(void);
/* How many such epilogues tjit's GEMM has applied in this process (tests). */
uint64_t rt_gemm_epi_count(void);

/* ---- errors (thread-local, error.c) ------------------------------------------ */
/* rt_error: the library's name for tj_set_error (tjit.h). */
#define rt_error tj_set_error
bool rt_has_error(void);
/* The call site of the latest public call made through tjit.h's macros on
 * this thread: its file (NULL: none) and *line. */
const char *rt_callsite(int *line);
/* " at FILE:LINE" of that call site, or "" (for error messages). */
char *rt_callsite_suffix(char *buf, size_t n);
/* "name(f32[2,3], i64[4])" into buf, for messages; returns buf. */
char *rt_describe_inputs(const char *name, tj_tensor *const *in, int nin, char *buf, size_t n);

/* ---- allocation (alloc.c) ------------------------------------------------------ */
/* 64-byte aligned; large blocks are cached by size class and reused.
 * NULL with an error recorded when memory runs out. */
void *rt_alloc(size_t nbytes);
/* items (*cap entries of size elem, n in use) with room for one more:
 * doubled (8 at first) when full, *cap updated. NULL when out of memory (no
 * error set; items still valid and unchanged). */
void *rt_grow(void *items, int *cap, int n, size_t elem);
/* nbytes must be the size given to rt_alloc (it picks the cache's size class). */
void rt_free(void *p, size_t nbytes);
/* Frees every cached block (tests, tools, shutdown). */
void rt_alloc_trim(void);
/* Frees the released headers held back from reuse (RT_QUARANTINE); a stale
 * handle to one of them is no longer detected. Called by tj_alloc_trim. */
void rt_quarantine_drain(void);
/* Bytes currently held by the cache (tests, tools). */
size_t rt_alloc_cached_bytes(void);

/* ---- threads (pool.c) ------------------------------------------------------------ */
typedef void (*rt_range_fn)(void *ctx, int64_t begin, int64_t end);
/* Runs fn over [0, n) in chunks of at least `grain` items, split across the
 * pool (the calling thread takes part); serial when n <= grain or one thread.
 * Returns when every chunk is done. Safe to call from any thread; a nested
 * call from inside a pool task runs serially. */
void rt_parallel_for(int64_t n, int64_t grain, rt_range_fn fn, void *ctx);
/* Like rt_parallel_for, but each of the n items is a chunk of its own (up
 * to 65535 chunks, then contiguous groups), claimed one at a time: for a
 * few long, independent tasks (a split GEMM's column blocks), so that a
 * thread that starts late (woken late, or preempted on a shared machine)
 * still takes the tasks left instead of the other thread running half of
 * them after its own half. Serial with one thread. */
void rt_parallel_tasks(int64_t n, rt_range_fn fn, void *ctx);
int rt_threads(void);
/* The threads an rt_parallel_for called here can use: 1 inside a pool task
 * (a nested call runs serially), else rt_threads(). */
int rt_threads_here(void);

/* ---- eager kernels ------------------------------------------------------------------ */
/* Writes op(in) into out, which is allocated, contiguous and of the inferred
 * type. Inputs may be non-contiguous, broadcast (stride 0) or of any dtype the
 * op's rule accepts. Returns 0, or -1 with an error recorded (data-dependent
 * failures: index out of range and the like). */
typedef int (*rt_kernel_fn)(ir_op op, tj_tensor *out, tj_tensor *const *in, int nin,
                            const ir_attrs *a);

/* One entry per op, NULL for view ops (runtime/views.c makes those). */
extern const rt_kernel_fn rt_kernels[IR_NUM_OPS];

/* rt_kernels[op], or, when an operand or the result is f16 or bf16, the op
 * computed in f32 and rounded once to the narrow type (k_half.c). Every
 * caller of an eager kernel goes through here. */
int rt_run_kernel(ir_op op, tj_tensor *out, tj_tensor *const *in, int nin, const ir_attrs *a);
/* x (f16 or bf16) widened to a new f32 tensor, exactly; its broadcast
 * (stride 0) dims stay broadcast. refs 1, in no scope; NULL on error. */
tj_tensor *rt_half_widen(const tj_tensor *x);

/* A view op applied to x (refs 1, in no scope). NULL with *need_copy set when
 * a reshape's strides cannot express the new shape (the caller copies x and
 * retries); NULL with an error otherwise. */
tj_tensor *rt_view_op(ir_op op, tj_tensor *x, const ir_attrs *a, const ir_type *out,
                      bool *need_copy);
/* The strides rt_view_op would give its result (x's storage unused: x may be
 * symbolic), into strides (out->ndim of them), and its storage offset into
 * *offset (may be NULL); false when it would need a copy (or op is no view). */
bool rt_view_strides(ir_op op, const tj_tensor *x, const ir_attrs *a, const ir_type *out, int64_t *strides,
                     int64_t *offset);

/* ---- one op on concrete inputs (eager.c) ------------------------------------ */
/* Runs op on concrete inputs whose result type ty was already inferred: makes
 * the view (copying first when a reshape needs it) or runs the eager kernel.
 * Returns a tensor with refs 1 in no scope, or NULL with the kernel's error. */
tj_tensor *rt_eager(ir_op op, tj_tensor *const *in, int nin, const ir_attrs *a,
                  const ir_type *ty);

#endif /* TJ_RT_H */
