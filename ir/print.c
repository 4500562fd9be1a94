/* print.c - the text form of a graph (docs/ir.md), and of types and doubles.
 *
 * The output is canonical: one header line, one line per op node numbered %0..
 * in SSA order, attributes in schema order, the return line, "}". Together
 * with the canonical node storage (graph.h) this makes print(parse(t)) == t
 * for any printed t. Doubles print in the shortest form that reads back to
 * the same bits, so attributes survive a round trip exactly.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* ---- types and doubles ---------------------------------------------------- */

char *ir_type_fmt(const ir_type *t, char *buf, size_t n)
{
    if (!n)
        return buf;
    ir_type_str(t, buf, n);
    size_t k = strlen(buf);
    if (t->weak && k < n)
        snprintf(buf + k, n - k, " weak");
    return buf;
}

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

char *ir_double_fmt(double v, char *buf)
{
    if (isnan(v))
        return strcpy(buf, "nan");
    if (isinf(v))
        return strcpy(buf, v < 0 ? "-inf" : "inf");
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, IR_DOUBLE_BUF, "%.*g", prec, v);
        if (same_bits(strtod(buf, NULL), v))
            break;
    }
    return buf;
}

/* ---- a growing string ------------------------------------------------------- */

typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(strbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_fmt(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Formatted, whatever its length (a call site's path may be long: cut, it
 * would no longer read back as one). */
static void sb_fmt(strbuf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    if ((size_t)n < sizeof tmp) {
        sb_put(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_put(b, big, (size_t)n);
    free(big);
}

/* ---- graphs ----------------------------------------------------------------- */

static void put_ref(strbuf *b, const ir_node *n)
{
    if (!n)
        sb_str(b, "none");
    else if (n->op == IR_OP_INPUT) {
        sb_str(b, "%");
        sb_str(b, n->name);
    } else
        sb_fmt(b, "%%%d", n->id);
}

static void put_type(strbuf *b, const ir_type *t)
{
    char buf[IR_TYPE_BUF];
    sb_str(b, ir_type_fmt(t, buf, sizeof buf));
}

char *ir_attr_fmt(ir_attr_kind kind, const ir_attr *v, char *buf, size_t n)
{
    char d[IR_DOUBLE_BUF];
    const char *w = NULL;
    buf[0] = '\0';
    switch (kind) {
    case IR_ATTR_INT:
        snprintf(buf, n, "%lld", (long long)v->i[0]);
        break;
    case IR_ATTR_RNG:
        if ((uint64_t)v->i[0] & IR_RNG_CALL)
            snprintf(buf, n, "call+%llu", (unsigned long long)((uint64_t)v->i[0] & ~IR_RNG_CALL));
        else
            snprintf(buf, n, "%lld", (long long)v->i[0]);
        break;
    case IR_ATTR_INTS:
        for (int k = 0, o = 0; o < (int)n && k < v->n && k < IR_MAX_LIST; k++)
            o += snprintf(buf + o, n - (size_t)o, k ? ",%lld" : "[%lld", (long long)v->i[k]);
        if (strlen(buf) + 2 <= n)
            strcat(buf, v->n ? "]" : "[]");
        break;
    case IR_ATTR_BOOL: w = v->i[0] ? "true" : "false"; break;
    case IR_ATTR_FLOAT: w = ir_double_fmt(v->f, d); break;
    case IR_ATTR_DTYPE: w = tj_dtype_name((tj_dtype)v->i[0]); break;
    case IR_ATTR_REDUCTION:
    case IR_ATTR_ROUNDING:
    case IR_ATTR_REDUCE_OP: w = ir_attr_word(kind, v->i[0]) ? ir_attr_word(kind, v->i[0]) : "?"; break;
    }
    if (w)
        snprintf(buf, n, "%s", w);
    return buf;
}

static void put_attr(strbuf *b, ir_attr_kind kind, const ir_attr *v)
{
    char buf[IR_ATTR_BUF];
    sb_str(b, ir_attr_fmt(kind, v, buf, sizeof buf));
}

static void put_header(strbuf *b, const ir_graph *g)
{
    sb_str(b, "graph @");
    sb_str(b, g->name);
    sb_str(b, "(");
    for (int k = 0; k < g->ninputs; k++) {
        const ir_node *n = g->inputs[k];
        sb_str(b, k ? ", %" : "%");
        sb_str(b, n->name);
        sb_str(b, ": ");
        put_type(b, &n->type);
        if (n->param)
            sb_str(b, " param");
    }
    sb_str(b, ") {\n");
}

static void put_node(strbuf *b, const ir_node *n)
{
    const ir_opinfo *info = &ir_ops[n->op];
    sb_fmt(b, "  %%%d = %s", n->id, info->name);
    for (int k = 0; k < n->nin; k++) {
        sb_str(b, k ? ", " : " ");
        put_ref(b, n->in[k]);
    }
    for (int k = 0; k < info->nattrs; k++) {
        sb_str(b, k ? ", " : " {");
        sb_str(b, info->attrs[k].name);
        sb_str(b, "=");
        put_attr(b, info->attrs[k].kind, &n->attrs[k]);
    }
    sb_str(b, info->nattrs ? "} : " : " : ");
    put_type(b, &n->type);
    if (n->file)   /* the call site, a comment the parser reads back */
        sb_fmt(b, "  # %s:%d", n->file, n->line);
    sb_str(b, "\n");
}

char *ir_print(const ir_graph *g, size_t *len)
{
    strbuf b = {0};
    put_header(&b, g);
    for (int k = 0; k < g->nnodes; k++)
        put_node(&b, g->nodes[k]);
    sb_str(&b, "  return");
    for (int k = 0; k < g->noutputs; k++) {
        sb_str(&b, k ? ", " : " ");
        put_ref(&b, g->outputs[k]);
    }
    sb_str(&b, "\n}\n");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    if (len)
        *len = b.len;
    return b.s;
}

int ir_print_file(const ir_graph *g, FILE *f)
{
    size_t n;
    char *s = ir_print(g, &n);
    if (!s)
        return -1;
    size_t w = fwrite(s, 1, n, f);
    free(s);
    return w == n ? 0 : -1;
}
