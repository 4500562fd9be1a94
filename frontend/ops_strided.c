/* ops_strided.c - public entry points of the remaining strided prims of
 * issue 11: as_strided (a VIEW row of ops.def) and empty_strided (zeros of
 * the storage its strides need, viewed by as_strided: no row of its own).
 *
 * The as_strided row views its input's elements in row-major order. Eagerly,
 * tj_as_strided applies it to x's whole storage (a 1-D view of it), which is
 * PyTorch's view: strides and storage_offset count x's storage, bounded by
 * it. A graph has values, not storages, so a trace applies the row to x
 * itself, which is the same view only when x holds its whole storage from
 * offset 0 in row-major order; it refuses the inputs that may not (views,
 * composites that may return a view, such weights and arguments), and an
 * argument it took is guarded to hold its storage so on later calls. */
#include <stdarg.h>
#include <stdio.h>

#include "autograd.h"
#include "trace.h"

static void list_attr(ir_attr *a, const int64_t *v, int n)
{
    if (n < 0 || n > IR_MAX_LIST || (n > 0 && !v))
        a->n = -1;   /* the shape rule reports the bad list */
    else
        ir_attr_ints(a, v, n);
}

static tj_tensor *strided_fail(tj_tensor *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static tj_tensor *strided_fail(tj_tensor *x, const char *fmt, ...)
{
    char head[256], why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rt_describe_inputs("as_strided", &x, 1, head, sizeof head);
    rt_error("%s: %s", head, why);
    return NULL;
}

/* The graph break (and error) of an as_strided a trace cannot express. */
static int no_trace(fe_trace *tr, tj_tensor *x, const char *what)
{
    char why[320];
    snprintf(why, sizeof why, "as_strided of %s: a traced graph has values, not storages, so "
             "PyTorch's view of its storage cannot be expressed", what);
    fe_trace_break(tr, why);
    strided_fail(x, "%s (the call runs eagerly; tj_clone it first to compile it)", why);
    return -1;
}

/* In a trace: 0 when the graph's view of x's elements is PyTorch's view of
 * x's storage (an argument is flagged: compile.c guards whether it holds its
 * storage), else a graph break. */
static int traced_input_ok(fe_trace *tr, tj_tensor *x)
{
    char what[160];
    if (!x->sym) {
        if (rt_holds_storage(x))
            return 0;
        snprintf(what, sizeof what, "a weight at storage offset %lld of %lld elements",
                 (long long)x->offset,
                 (long long)(x->storage ? x->storage->nbytes / tj_dtype_size(x->dtype) : 0));
        return no_trace(tr, x, what);
    }
    const ir_node *n = x->sym;
    /* reshape, squeeze, unsqueeze keep the element order (eagerly a view of
     * the same storage, or a fresh copy) */
    while (!ir_node_is_input(n) &&
           (n->op == OP_reshape || n->op == OP_squeeze || n->op == OP_unsqueeze))
        n = n->in[0];
    for (int k = 0; k < tr->nargs && k < 64; k++)   /* an argument (even written): guarded */
        if (tr->args[k] && (tr->args[k] == x || tr->args[k]->sym == n)) {
            tr->exact_args |= 1ull << k;
            return 0;
        }
    if (ir_node_is_input(n)) {
        for (int k = 0; k < tr->ncaps; k++)
            if (tr->cap_nodes[k] == n && rt_holds_storage(tr->caps[k]))
                return 0;
        return no_trace(tr, x, "an input of the graph that may not hold its whole storage");
    }
    if (ir_ops[n->op].kind == IR_VIEW || ir_ops[n->op].eager_decomp) {
        snprintf(what, sizeof what, "the result of %s, eagerly a view of another tensor's storage "
                 "or possibly one", ir_ops[n->op].name);
        return no_trace(tr, x, what);
    }
    return 0;   /* an op's fresh result: its own storage */
}

tj_tensor *tj_as_strided(tj_tensor *x, int ndim, const int64_t *size, const int64_t *stride,
                         int64_t storage_offset)
{
    ir_attrs at = {0};
    list_attr(&at.a[0], size, ndim);
    list_attr(&at.a[1], stride, ndim);
    ir_attr_int(&at.a[2], storage_offset);
    fe_trace *tr = fe_trace_current();
    if (!x || rt_check_live(&x, 1, "as_strided") != 0)
        return fe_apply(OP_as_strided, &x, 1, &at);   /* its message for a NULL input */
    if (tr)
        return traced_input_ok(tr, x) == 0 ? fe_apply(OP_as_strided, &x, 1, &at) : NULL;
    /* eagerly: the row over x's whole storage, recorded for autograd on x */
    int64_t elems = (int64_t)(x->storage->nbytes / tj_dtype_size(x->dtype)), one = 1;
    tj_tensor *base = rt_tensor_view(x, 1, &elems, &one, 0);
    if (!base)
        return NULL;
    ir_type bt, out;
    rt_type_of(base, &bt);
    char why[256];
    tj_tensor *r = NULL;
    if (ir_infer(OP_as_strided, (const ir_type *[]){&bt}, 1, &at, &out, why, sizeof why) != 0) {
        strided_fail(x, "%s (as_strided counts x's storage: %lld elements)", why, (long long)elems);
    } else {
        tj_no_grad_begin();
        r = fe_apply(OP_as_strided, &base, 1, &at);
        tj_no_grad_end();
        if (r) {   /* a view of x made in the caller's mode, not of base in no-grad mode */
            r->view_no_grad = false;
            if (fe_ag_view_made(OP_as_strided, &at, r, x) != 0) {
                tj_release(r);
                r = NULL;
            }
        }
    }
    tj_release(base);
    ir_attr_int(&at.a[3], 1);   /* not in the row's schema: the VJP counts x's storage */
    return r ? fe_ag_record(OP_as_strided, &x, 1, &at, r) : NULL;
}

tj_tensor *tj_empty_strided(tj_dtype dt, int ndim, const int64_t *size, const int64_t *stride)
{
    if (ndim < 0 || ndim > TJ_MAX_DIMS || (ndim > 0 && (!size || !stride))) {
        rt_error("empty_strided: bad size/stride lists (%d dims%s)", ndim,
                 ndim < 0 || ndim > TJ_MAX_DIMS ? "" : ", a list is NULL");
        return NULL;
    }
    int64_t need = 1;   /* 1 + the last offset reached; 0 with no elements */
    for (int d = 0; d < ndim; d++) {
        if (size[d] < 0 || stride[d] < 0) {
            rt_error("empty_strided: negative %s %lld in dim %d", size[d] < 0 ? "size" : "stride",
                     (long long)(size[d] < 0 ? size[d] : stride[d]), d);
            return NULL;
        }
        int64_t step;
        if (__builtin_mul_overflow(size[d] - 1, stride[d], &step) || __builtin_add_overflow(need, step, &need)) {
            rt_error("empty_strided: the strides overflow");
            return NULL;
        }
    }
    for (int d = 0; d < ndim; d++)
        if (size[d] == 0)
            need = 0;
    return tj_as_strided(tj_zeros(dt, 1, &need), ndim, size, stride, 0);
}
