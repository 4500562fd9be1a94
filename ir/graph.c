/* graph.c - building SSA graphs: inputs, hash-consed op nodes, outputs.
 *
 * ir_graph_add is the one way a node enters a graph:
 *
 *   check inputs belong to g -> normalize attributes -> ir_infer the type
 *     -> look the (op, inputs, attributes, type) key up in the hash table
 *     -> found: return that node | else: copy into the arena, append, insert
 *
 * Nodes, their input arrays, attributes and names live in the graph's arena;
 * the node lists and the hash table are malloc'd arrays that grow by
 * doubling. Nothing is ever removed from a graph.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "infer.h"

#define IR_MAX_NODES (1 << 28)   /* far beyond any real graph; keeps ints safe */

static int graph_fail(ir_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int graph_fail(ir_graph *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- names, types, attributes ---------------------------------------------- */

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

bool ir_name_valid(const char *s, size_t n)
{
    if (!s || n == 0 || !ident_start(s[0]))
        return false;
    for (size_t k = 1; k < n; k++)
        if (!ident_start(s[k]) && !(s[k] >= '0' && s[k] <= '9') && s[k] != '.')
            return false;
    return true;
}

bool ir_type_has_sym(const ir_type *t)
{
    for (int d = 0; d < t->ndim; d++)
        if (IR_IS_SYM(t->shape[d]))
            return true;
    return false;
}

bool ir_type_same(const ir_type *a, const ir_type *b)
{
    return ir_type_equal(a, b) && a->weak == b->weak;
}

int ir_type_check(const ir_type *t, char *err, size_t nerr)
{
    char e[IR_TYPE_BUF];
    if (!ir_dtype_valid(t->dtype))
        return ir_fail(err, nerr, "invalid dtype %d", (int)t->dtype);
    if (t->ndim < 0 || t->ndim > TJ_MAX_DIMS)
        return ir_fail(err, nerr, "%d dims (at most %d)", t->ndim, TJ_MAX_DIMS);
    for (int d = 0; d < t->ndim; d++)
        if (IR_IS_SYM(t->shape[d]) && ir_sym_index(t->shape[d]) >= IR_MAX_SYM)
            return ir_fail(err, nerr, "symbol number %lld out of range",
                           (long long)ir_sym_index(t->shape[d]));
        else if (IR_IS_SYM(t->shape[d]) && (ir_sym_delta(t->shape[d]) <= -IR_MAX_SYM_DELTA ||
                                            ir_sym_delta(t->shape[d]) >= IR_MAX_SYM_DELTA))
            return ir_fail(err, nerr, "symbol offset %lld out of range",
                           (long long)ir_sym_delta(t->shape[d]));
    int64_t n;
    if (!ir_numel_checked(t->ndim, t->shape, &n))
        return ir_fail(err, nerr, "type %s has more than 2^63-1 elements", ir_type_fmt(t, e, sizeof e));
    return 0;
}

int ir_attrs_check(ir_op op, const ir_attrs *a, char *err, size_t nerr)
{
    if ((unsigned)op >= IR_NUM_OPS)
        return ir_fail(err, nerr, "unknown op %d", (int)op);
    const ir_opinfo *info = &ir_ops[op];
    for (int k = 0; k < info->nattrs; k++) {
        const ir_attr *v = &a->a[k];
        const char *name = info->attrs[k].name;
        switch (info->attrs[k].kind) {
        case IR_ATTR_INTS:
            if (v->n < 0 || v->n > IR_MAX_LIST)
                return ir_fail(err, nerr, "attribute '%s' has %d values (at most %d)", name,
                               v->n, IR_MAX_LIST);
            break;
        case IR_ATTR_BOOL:
            if (v->i[0] != 0 && v->i[0] != 1)
                return ir_fail(err, nerr, "attribute '%s' is %lld, not a bool", name,
                               (long long)v->i[0]);
            break;
        case IR_ATTR_DTYPE:
            if (v->i[0] < 0 || v->i[0] >= TJ_NUM_DTYPES)
                return ir_fail(err, nerr, "attribute '%s' is %lld, not a dtype", name,
                               (long long)v->i[0]);
            break;
        case IR_ATTR_REDUCTION:
        case IR_ATTR_ROUNDING:
        case IR_ATTR_REDUCE_OP:
            if (!ir_attr_word(info->attrs[k].kind, v->i[0]))
                return ir_fail(err, nerr, "attribute '%s' is %lld, not a %s", name,
                               (long long)v->i[0], info->attrs[k].kind == IR_ATTR_REDUCTION
                                   ? "reduction (mean, sum, none)"
                                   : info->attrs[k].kind == IR_ATTR_ROUNDING
                                   ? "rounding mode (none, trunc, floor)"
                                   : "reduce op (sum, prod, mean, amax, amin)");
            break;
        case IR_ATTR_INT:
        case IR_ATTR_FLOAT:
        case IR_ATTR_RNG:
            break;
        }
    }
    return 0;
}

/* The one NaN a graph stores: quiet, positive, no payload. */
static double canonical_nan(void)
{
    uint64_t bits = 0x7ff8000000000000u;
    double f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The canonical copy of attribute k of op: only its meaningful fields set.
 * INTS lists are clamped to the valid range here and rejected by the caller. */
static void attr_normalize(ir_attr_kind kind, const ir_attr *v, ir_attr *out)
{
    memset(out, 0, sizeof *out);
    switch (kind) {
    case IR_ATTR_INTS:
        out->n = v->n;
        for (int k = 0; k < v->n && k < IR_MAX_LIST; k++)
            out->i[k] = v->i[k];
        break;
    case IR_ATTR_BOOL:
        out->n = 1;
        out->i[0] = v->i[0] != 0;
        break;
    case IR_ATTR_INT:
    case IR_ATTR_RNG:
    case IR_ATTR_DTYPE:
    case IR_ATTR_REDUCTION:
    case IR_ATTR_ROUNDING:
    case IR_ATTR_REDUCE_OP:
        out->n = 1;
        out->i[0] = v->i[0];
        break;
    case IR_ATTR_FLOAT:
        out->n = 1;
        out->f = isnan(v->f) ? canonical_nan() : v->f;
        break;
    }
}

void ir_node_attrs(const ir_node *n, ir_attrs *out)
{
    memset(out, 0, sizeof *out);
    if (n->op == IR_OP_INPUT)
        return;
    for (int k = 0; k < ir_ops[n->op].nattrs; k++)
        out->a[k] = n->attrs[k];
}

bool ir_node_is_view(const ir_node *n)
{
    return !ir_node_is_input(n) && ir_ops[n->op].kind == IR_VIEW;
}

const ir_node *ir_view_root(const ir_node *n)
{
    while (ir_node_is_view(n))
        n = n->in[0];
    return n;
}

bool ir_view_chain_expands(const ir_node *n)
{
    bool reshaped = false;
    for (; ir_node_is_view(n); n = n->in[0]) {
        reshaped |= n->op == OP_reshape;
        if (reshaped && n->op == OP_expand)
            return true;
    }
    return false;
}

const ir_node *ir_view_chain(const ir_node *n, const ir_node **chain, int max, int *len)
{
    *len = 0;
    while (ir_node_is_view(n) && *len < max) {
        chain[(*len)++] = n;
        n = n->in[0];
    }
    return n;
}

/* ---- hashing --------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdu;
}

static uint64_t double_bits(double f)
{
    uint64_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static uint64_t attr_hash(uint64_t h, ir_attr_kind kind, const ir_attr *v)
{
    if (kind == IR_ATTR_FLOAT)
        return mix(h, double_bits(v->f));
    h = mix(h, (uint64_t)v->n);
    for (int k = 0; k < v->n; k++)
        h = mix(h, (uint64_t)v->i[k]);
    return h;
}

static uint64_t node_hash(ir_op op, ir_node *const *in, int nin, const ir_attrs *a,
                          const ir_type *t)
{
    uint64_t h = mix(0x6a09e667f3bcc908u, (uint64_t)op);
    h = mix(h, (uint64_t)nin);
    for (int k = 0; k < nin; k++)
        h = mix(h, (uint64_t)(uintptr_t)in[k]);
    for (int k = 0; k < ir_ops[op].nattrs; k++)
        h = attr_hash(h, ir_ops[op].attrs[k].kind, &a->a[k]);
    h = mix(h, ((uint64_t)t->dtype << 8) | ((uint64_t)t->ndim << 1) | t->weak);
    for (int d = 0; d < t->ndim; d++)
        h = mix(h, (uint64_t)t->shape[d]);
    return h;
}

static bool attr_same(ir_attr_kind kind, const ir_attr *x, const ir_attr *y)
{
    if (kind == IR_ATTR_FLOAT)
        return double_bits(x->f) == double_bits(y->f);
    if (x->n != y->n)
        return false;
    for (int k = 0; k < x->n; k++)
        if (x->i[k] != y->i[k])
            return false;
    return true;
}

static bool node_matches(const ir_node *n, ir_op op, ir_node *const *in, int nin,
                         const ir_attrs *a, const ir_type *t)
{
    if (n->op != op || n->nin != nin || !ir_type_same(&n->type, t))
        return false;
    for (int k = 0; k < nin; k++)
        if (n->in[k] != in[k])
            return false;
    for (int k = 0; k < ir_ops[op].nattrs; k++)
        if (!attr_same(ir_ops[op].attrs[k].kind, &n->attrs[k], &a->a[k]))
            return false;
    return true;
}

/* The slot of the node matching the key, or the empty slot where it goes. */
static ir_node **table_slot(ir_graph *g, uint64_t h, ir_op op, ir_node *const *in, int nin,
                            const ir_attrs *a, const ir_type *t)
{
    size_t mask = g->table_cap - 1;
    for (size_t k = h & mask;; k = (k + 1) & mask) {
        ir_node *n = g->table[k];
        if (!n || (n->hash == h && node_matches(n, op, in, nin, a, t)))
            return &g->table[k];
    }
}

/* Keeps the table at most half full. */
static int table_grow(ir_graph *g)
{
    if (g->table_cap && (size_t)g->nnodes + 1 <= g->table_cap / 2)
        return 0;
    size_t cap = g->table_cap ? g->table_cap * 2 : 64;
    ir_node **t = calloc(cap, sizeof *t);
    if (!t)
        return graph_fail(g, "out of memory");
    for (size_t k = 0; k < g->table_cap; k++) {
        ir_node *n = g->table[k];
        if (!n)
            continue;
        size_t s = n->hash & (cap - 1);
        while (t[s])
            s = (s + 1) & (cap - 1);
        t[s] = n;
    }
    free(g->table);
    g->table = t;
    g->table_cap = cap;
    return 0;
}

/* ---- graphs ----------------------------------------------------------------- */

ir_graph *ir_graph_new(const char *name)
{
    if (!name)
        name = "main";
    if (!ir_name_valid(name, strlen(name)))
        return NULL;
    ir_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    ir_arena_init(&g->arena);
    g->name = ir_arena_strndup(&g->arena, name, strlen(name));
    if (!g->name) {
        free(g);
        return NULL;
    }
    return g;
}

void ir_graph_free(ir_graph *g)
{
    if (!g)
        return;
    free(g->inputs);
    free(g->nodes);
    free(g->table);
    ir_arena_release(&g->arena);
    free(g);
}

const char *ir_graph_error(const ir_graph *g) { return g ? g->err : "no graph"; }

/* Makes room for one more entry in a malloc'd node list. */
static int list_grow(ir_graph *g, ir_node ***list, int n, int *cap)
{
    if (n < *cap)
        return 0;
    if (n >= IR_MAX_NODES)
        return graph_fail(g, "more than %d nodes", IR_MAX_NODES);
    int c = *cap ? *cap * 2 : 16;
    ir_node **p = realloc(*list, (size_t)c * sizeof *p);
    if (!p)
        return graph_fail(g, "out of memory");
    *list = p;
    *cap = c;
    return 0;
}

ir_node *ir_graph_find_input(const ir_graph *g, const char *name)
{
    for (int k = 0; k < g->ninputs; k++)
        if (strcmp(g->inputs[k]->name, name) == 0)
            return g->inputs[k];
    return NULL;
}

/* A fresh input name: arg<k> or param<k>, with '_' appended while taken. */
static char *fresh_name(ir_graph *g, bool param)
{
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%s%d", param ? "param" : "arg", g->ninputs);
    while (ir_graph_find_input(g, buf) && n < (int)sizeof buf - 1)
        buf[n++] = '_', buf[n] = '\0';
    return ir_arena_strndup(&g->arena, buf, (size_t)n);
}

ir_node *ir_graph_input(ir_graph *g, const char *name, const ir_type *t, bool param)
{
    char why[IR_TYPE_BUF + 64];
    g->err[0] = '\0';
    if (!t)
        return graph_fail(g, "input: NULL type"), NULL;
    if (name && !ir_name_valid(name, strlen(name)))
        return graph_fail(g, "input name '%.64s' is not an identifier", name), NULL;
    if (name && ir_graph_find_input(g, name))
        return graph_fail(g, "input %%%.64s is already defined", name), NULL;
    if (ir_type_check(t, why, sizeof why))
        return graph_fail(g, "input %%%.64s: %s", name ? name : "", why), NULL;
    if (list_grow(g, &g->inputs, g->ninputs, &g->cap_inputs))
        return NULL;
    ir_node *n = ir_arena_calloc(&g->arena, 1, sizeof *n);
    char *nm = name ? ir_arena_strndup(&g->arena, name, strlen(name)) : fresh_name(g, param);
    if (!n || !nm)
        return graph_fail(g, "out of memory"), NULL;
    n->op = IR_OP_INPUT;
    n->id = g->ninputs;
    n->param = param;
    n->type = *t;
    n->type.weak = t->weak != 0;
    for (int d = t->ndim; d < TJ_MAX_DIMS; d++)
        n->type.shape[d] = 0;
    n->name = nm;
    g->inputs[g->ninputs++] = n;
    return n;
}

/* True when n is a node of g (pointer identity through its id). */
static bool is_member(const ir_graph *g, const ir_node *n)
{
    if (n->op == IR_OP_INPUT)
        return n->id >= 0 && n->id < g->ninputs && g->inputs[n->id] == n;
    return n->id >= 0 && n->id < g->nnodes && g->nodes[n->id] == n;
}

/* "matmul(f32[2,3], none)" into buf. */
static void describe_call(ir_op op, ir_node *const *in, int nin, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "%s(", ir_ops[op].name);
    for (int i = 0; i < nin && k < n; i++) {
        char t[IR_TYPE_BUF];
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "",
                              in[i] ? ir_type_fmt(&in[i]->type, t, sizeof t) : "none");
    }
    if (k < n)
        snprintf(buf + k, n - k, ")");
}

/* Checks what ir_infer cannot: pointers, membership, arity, attributes. */
static int check_call(ir_graph *g, ir_op op, ir_node *const *in, int nin, const ir_attrs *a)
{
    const ir_opinfo *info = &ir_ops[op];
    char why[256];
    if (nin < 0 || (nin > 0 && !in))
        return graph_fail(g, "%s: bad input array", info->name);
    if (nin < info->nmin || (info->nmax >= 0 && nin > info->nmax) || nin > IR_MAX_NODES) {
        if (info->nmax < 0)
            return graph_fail(g, "%s: takes at least %d input%s, got %d", info->name,
                              info->nmin, info->nmin == 1 ? "" : "s", nin);
        if (info->nmin == info->nmax)
            return graph_fail(g, "%s: takes %d input%s, got %d", info->name, info->nmin,
                              info->nmin == 1 ? "" : "s", nin);
        return graph_fail(g, "%s: takes %d..%d inputs, got %d", info->name, info->nmin,
                          info->nmax, nin);
    }
    for (int k = 0; k < nin; k++) {
        if (!in[k] && (k < info->nmin || info->nmax < 0))
            return graph_fail(g, "%s: input %d is missing", info->name, k);
        if (in[k] && !is_member(g, in[k]))
            return graph_fail(g, "%s: input %d is not a node of this graph", info->name, k);
    }
    if (ir_attrs_check(op, a, why, sizeof why))
        return graph_fail(g, "%s: %s", info->name, why);
    return 0;
}

/* True when every symbol in t appears in some input: the rules copy symbolic
 * dims through, or offset them by ir_dim_add (slice, pad, cat: sK+C from an
 * input's sK+D), so a symbol no input has means a rule did arithmetic on the
 * encoding (reshape's -1, a product). */
static bool symbols_known(const ir_type *t, ir_node *const *in, int nin)
{
    for (int d = 0; d < t->ndim; d++) {
        int64_t s = t->shape[d];
        bool found = !IR_IS_SYM(s);
        for (int k = 0; k < nin && !found; k++)
            for (int e = 0; in[k] && e < in[k]->type.ndim && !found; e++) {
                int64_t v = in[k]->type.shape[e];
                found = IR_IS_SYM(v) && ir_sym_index(v) == ir_sym_index(s);
            }
        if (!found)
            return false;
    }
    return true;
}

/* Runs the shape/dtype rule on the nodes' types. */
static int infer(ir_graph *g, ir_op op, ir_node *const *in, int nin, const ir_attrs *a,
                 ir_type *out)
{
    const ir_type *small[16], **tp = small;
    if (nin > 16 && !(tp = malloc((size_t)nin * sizeof *tp)))
        return graph_fail(g, "out of memory");
    for (int k = 0; k < nin; k++)
        tp[k] = in[k] ? &in[k]->type : NULL;
    char why[256] = "";
    memset(out, 0, sizeof *out);
    int rc = ir_infer(op, tp, nin, a, out, why, sizeof why);
    if (tp != small)
        free(tp);
    if (rc == 0 && ir_type_check(out, why, sizeof why))
        rc = -1;
    if (rc == 0 && !symbols_known(out, in, nin))
        rc = ir_fail(why, sizeof why, "this shape rule cannot compute with symbolic dims yet");
    if (rc != 0) {
        char head[400];
        describe_call(op, in, nin, head, sizeof head);
        return graph_fail(g, "%s: %s", head, why[0] ? why : "failed");
    }
    for (int d = out->ndim; d < TJ_MAX_DIMS; d++)
        out->shape[d] = 0;
    out->weak = out->weak != 0;
    return 0;
}

/* Copies a new node into the arena and appends it. */
static ir_node *node_new(ir_graph *g, ir_op op, ir_node *const *in, int nin, const ir_attrs *a,
                         const ir_type *t, uint64_t h)
{
    int na = ir_ops[op].nattrs;
    if (list_grow(g, &g->nodes, g->nnodes, &g->cap_nodes))
        return NULL;
    ir_node *n = ir_arena_calloc(&g->arena, 1, sizeof *n);
    ir_node **ins = nin ? ir_arena_alloc(&g->arena, (size_t)nin * sizeof *ins) : NULL;
    ir_attr *attrs = na ? ir_arena_alloc(&g->arena, (size_t)na * sizeof *attrs) : NULL;
    if (!n || (nin && !ins) || (na && !attrs))
        return graph_fail(g, "out of memory"), NULL;
    if (nin)
        memcpy(ins, in, (size_t)nin * sizeof *ins);
    if (na)
        memcpy(attrs, a->a, (size_t)na * sizeof *attrs);
    n->op = op;
    n->id = g->nnodes;
    n->nin = nin;
    n->type = *t;
    n->in = ins;
    n->attrs = attrs;
    n->hash = h;
    g->nodes[g->nnodes++] = n;
    return n;
}

ir_node *ir_graph_add(ir_graph *g, ir_op op, ir_node *const *in, int nin, const ir_attrs *attrs)
{
    g->err[0] = '\0';
    if ((unsigned)op >= IR_NUM_OPS)
        return graph_fail(g, "unknown op %d", (int)op), NULL;
    ir_attrs a, zero;
    memset(&a, 0, sizeof a);
    if (!attrs) {
        memset(&zero, 0, sizeof zero);
        attrs = &zero;
    }
    for (int k = 0; k < ir_ops[op].nattrs; k++)
        attr_normalize(ir_ops[op].attrs[k].kind, &attrs->a[k], &a.a[k]);
    if (check_call(g, op, in, nin, &a))
        return NULL;
    while (nin > ir_ops[op].nmin && !in[nin - 1])
        nin--;   /* trailing absent inputs are the same as fewer inputs */
    ir_type t;
    if (infer(g, op, in, nin, &a, &t) || table_grow(g))
        return NULL;
    uint64_t h = node_hash(op, in, nin, &a, &t);
    ir_node **slot = table_slot(g, h, op, in, nin, &a, &t);
    if (*slot)
        return *slot;
    ir_node *n = node_new(g, op, in, nin, &a, &t, h);
    if (n)
        *slot = n;
    return n;
}

int ir_graph_set_outputs(ir_graph *g, ir_node *const *out, int n)
{
    g->err[0] = '\0';
    if (n < 1 || !out)
        return graph_fail(g, "a graph returns at least one value");
    if (n > IR_MAX_NODES)
        return graph_fail(g, "too many outputs");
    for (int k = 0; k < n; k++)
        if (!out[k] || !is_member(g, out[k]))
            return graph_fail(g, "output %d is not a node of this graph", k);
    ir_node **o = ir_arena_alloc(&g->arena, (size_t)n * sizeof *o);
    if (!o)
        return graph_fail(g, "out of memory");
    memcpy(o, out, (size_t)n * sizeof *o);
    g->outputs = o;
    g->noutputs = n;
    return 0;
}

bool ir_graph_same_body(const ir_graph *a, const ir_graph *b)
{
    if (a->ninputs != b->ninputs || a->nnodes != b->nnodes)
        return false;
    for (int k = 0; k < a->ninputs; k++)
        if (a->inputs[k]->param != b->inputs[k]->param ||
            !ir_type_same(&a->inputs[k]->type, &b->inputs[k]->type))
            return false;
    for (int k = 0; k < a->nnodes; k++) {
        const ir_node *x = a->nodes[k], *y = b->nodes[k];
        if (x->op != y->op || x->nin != y->nin || !ir_type_same(&x->type, &y->type))
            return false;
        for (int i = 0; i < x->nin; i++) {
            const ir_node *p = x->in[i], *q = y->in[i];
            if (!p != !q || (p && (ir_node_is_input(p) != ir_node_is_input(q) || p->id != q->id)))
                return false;
        }
        for (int i = 0; i < ir_ops[x->op].nattrs; i++)
            if (!attr_same(ir_ops[x->op].attrs[i].kind, &x->attrs[i], &y->attrs[i]))
                return false;
    }
    return true;
}
