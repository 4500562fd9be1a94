/* parse.c - reads the text form of a graph (docs/ir.md) back into an ir_graph.
 *
 *   bytes --lexer (next)--> one token of lookahead --recursive descent-->
 *   ir_graph_input / ir_graph_add / ir_graph_set_outputs
 *
 * The grammar is flat (no construct nests inside itself), so the descent
 * never recurses and any input, however deep its brackets, is handled in
 * constant stack. Names map to nodes through a hash table over slices of the
 * source. The first error stops the parse: the graph is freed and err gets
 * "file:line:col: error: message", the source line and a caret under the
 * column. Every byte sequence is safe to feed in (fuzz/parse_fuzz.c).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

typedef enum { TK_EOF, TK_IDENT, TK_VALUE, TK_GLOBAL, TK_NUM, TK_PUNCT } tk_kind;

typedef struct {
    tk_kind kind;
    const char *s;   /* the lexeme (after the sigil for %name and @name) */
    size_t len;
    size_t pos;      /* offset of the token (of its sigil) in the source */
} token;

typedef struct {
    const char *s;   /* a name in the source (no sigil), or NULL: empty slot */
    size_t len;
    ir_node *node;
} name_slot;

typedef struct {
    const char *src, *file;
    size_t len, pos; /* pos: where the lexer resumes */
    token tok;       /* the current token */
    char *err;
    size_t nerr;
    bool failed;
    ir_graph *g;
    name_slot *names;
    size_t nnames, names_cap;
    ir_node **vals;  /* operands of the node being read */
    int nvals, vals_cap;
    const char *site;   /* a `# file:line` comment ending the current token's
                           line, skipped before the next token, or NULL */
    size_t site_len;
} parser;

/* ---- diagnostics ------------------------------------------------------------ */

#define SHOW_WIDTH 120   /* longer source lines are shown as a window */

/* Copies the source line around col0 into out, printable, and returns the
 * caret's offset in it. */
static size_t show_line(const char *line, size_t width, size_t col0, char *out)
{
    size_t start = 0, end = width, k = 0;
    if (width > SHOW_WIDTH) {
        start = col0 > SHOW_WIDTH / 2 ? col0 - SHOW_WIDTH / 2 : 0;
        end = start + SHOW_WIDTH < width ? start + SHOW_WIDTH : width;
    }
    if (start > 0)
        k += (size_t)sprintf(out, "...");
    size_t caret = k + col0 - start;
    for (size_t i = start; i < end; i++) {
        unsigned char c = (unsigned char)line[i];
        out[k++] = c == '\t' ? ' ' : (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    if (end < width)
        k += (size_t)sprintf(out + k, "...");
    out[k] = '\0';
    return caret;
}

static int error_at(parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int error_at(parser *p, size_t pos, const char *fmt, ...)
{
    if (p->failed)
        return -1;
    p->failed = true;
    if (!p->err || !p->nerr)
        return -1;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (pos > p->len)
        pos = p->len;
    size_t line = 1, ls = 0;
    for (size_t k = 0; k < pos; k++)
        if (p->src[k] == '\n')
            line++, ls = k + 1;
    size_t le = ls;
    while (le < p->len && p->src[le] != '\n')
        le++;
    if (le > ls && p->src[le - 1] == '\r' && pos < le - 1)
        le--;
    char shown[SHOW_WIDTH + 8];
    size_t caret = show_line(p->src + ls, le - ls, pos - ls, shown);
    snprintf(p->err, p->nerr, "%s:%zu:%zu: error: %s\n%s\n%*s^\n", p->file, line, pos - ls + 1,
             msg, shown, (int)caret, "");
    return -1;
}

/* The current token for a message: "'foo'" (shortened) or "end of input". */
static const char *tok_desc(const token *t, char *buf, size_t n)
{
    if (t->kind == TK_EOF)
        return "end of input";
    size_t pre = t->kind == TK_VALUE || t->kind == TK_GLOBAL;
    size_t len = t->len + pre;
    if (len > 32)
        snprintf(buf, n, "'%.29s...'", t->s - pre);
    else
        snprintf(buf, n, "'%.*s'", (int)len, t->s - pre);
    return buf;
}

static int error_expected(parser *p, const char *what)
{
    char buf[48];
    return error_at(p, p->tok.pos, "expected %s, got %s", what, tok_desc(&p->tok, buf, sizeof buf));
}

/* ---- lexer ------------------------------------------------------------------ */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(char c) { return is_alpha(c) || is_digit(c) || c == '.'; }

/* Skips blanks and comments (`//` and `#` to the end of the line); a `#`
 * comment on the line of the token before is kept in p->site. */
static void skip_space(parser *p)
{
    bool newline = false;
    p->site = NULL;
    while (p->pos < p->len) {
        char c = p->src[p->pos];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            newline |= c == '\n';
            p->pos++;
        } else if (c == '#' || (c == '/' && p->pos + 1 < p->len && p->src[p->pos + 1] == '/')) {
            size_t start = p->pos;
            while (p->pos < p->len && p->src[p->pos] != '\n')
                p->pos++;
            if (c == '#' && !newline) {
                p->site = p->src + start + 1;
                p->site_len = p->pos - start - 1;
            }
        } else {
            break;
        }
    }
}

static size_t scan_name(parser *p, size_t k)
{
    while (k < p->len && is_name_char(p->src[k]))
        k++;
    return k;
}

static size_t scan_digits(parser *p, size_t k)
{
    while (k < p->len && is_digit(p->src[k]))
        k++;
    return k;
}

/* A number: -?digits[.digits][e[+-]digits], or - followed by a word (-inf). */
static size_t scan_number(parser *p, size_t k)
{
    if (p->src[k] == '-')
        k++;
    if (k < p->len && is_alpha(p->src[k]))
        return scan_name(p, k);
    k = scan_digits(p, k);
    if (k < p->len && p->src[k] == '.')
        k = scan_digits(p, k + 1);
    if (k < p->len && (p->src[k] == 'e' || p->src[k] == 'E')) {
        size_t e = k + 1;
        if (e < p->len && (p->src[e] == '+' || p->src[e] == '-'))
            e++;
        if (e < p->len && is_digit(p->src[e]))
            k = scan_digits(p, e);
    }
    return k;
}

static int next(parser *p)
{
    skip_space(p);
    size_t k = p->pos;
    token *t = &p->tok;
    t->pos = k;
    t->s = p->src + k;
    t->len = 0;
    if (k >= p->len) {
        t->kind = TK_EOF;
        return 0;
    }
    char c = p->src[k];
    size_t end;
    if (c == '%' || c == '@') {
        t->kind = c == '%' ? TK_VALUE : TK_GLOBAL;
        t->s++;
        end = scan_name(p, k + 1);
        if (end == k + 1)
            return error_at(p, k, "expected a name after '%c'", c);
    } else if (is_alpha(c)) {
        t->kind = TK_IDENT;
        end = scan_name(p, k);
    } else if (is_digit(c) || (c == '-' && k + 1 < p->len &&
                               (is_digit(p->src[k + 1]) || is_alpha(p->src[k + 1])))) {
        t->kind = TK_NUM;
        end = scan_number(p, k);
    } else if (c != '\0' && strchr("(){}[],:=", c)) {
        t->kind = TK_PUNCT;
        end = k + 1;
    } else if (c >= 0x21 && c < 0x7f) {
        return error_at(p, k, "unexpected character '%c'", c);
    } else {
        return error_at(p, k, "unexpected byte 0x%02x", (unsigned char)c);
    }
    t->len = end - (size_t)(t->s - p->src);
    p->pos = end;
    return 0;
}

static bool at_punct(const parser *p, char c)
{
    return p->tok.kind == TK_PUNCT && p->tok.s[0] == c;
}

static bool at_word(const parser *p, const char *w)
{
    return p->tok.kind == TK_IDENT && p->tok.len == strlen(w) && !memcmp(p->tok.s, w, p->tok.len);
}

static int expect(parser *p, char c)
{
    if (!at_punct(p, c)) {
        char what[8];
        snprintf(what, sizeof what, "'%c'", c);
        return error_expected(p, what);
    }
    return next(p);
}

/* ---- names -------------------------------------------------------------------- */

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t k = 0; k < n; k++)
        h = (h ^ (unsigned char)s[k]) * 0x100000001b3u;
    return h;
}

static name_slot *name_find(parser *p, const char *s, size_t n)
{
    if (!p->names_cap)
        return NULL;
    size_t mask = p->names_cap - 1;
    for (size_t k = name_hash(s, n) & mask;; k = (k + 1) & mask) {
        name_slot *e = &p->names[k];
        if (!e->s || (e->len == n && !memcmp(e->s, s, n)))
            return e;
    }
}

static ir_node *name_lookup(parser *p, const token *t)
{
    name_slot *e = name_find(p, t->s, t->len);
    return e && e->s ? e->node : NULL;
}

static int names_grow(parser *p)
{
    if (p->names_cap && p->nnames + 1 <= p->names_cap / 2)
        return 0;
    size_t cap = p->names_cap ? p->names_cap * 2 : 64;
    name_slot *old = p->names;
    size_t old_cap = p->names_cap;
    p->names = calloc(cap, sizeof *p->names);
    if (!p->names) {
        p->names = old;
        return error_at(p, p->tok.pos, "out of memory");
    }
    p->names_cap = cap;
    for (size_t k = 0; k < old_cap; k++)
        if (old[k].s)
            *name_find(p, old[k].s, old[k].len) = old[k];
    free(old);
    return 0;
}

/* Defines the name of token t (checked unused by the caller) as node n. */
static int name_define(parser *p, const token *t, ir_node *n)
{
    if (names_grow(p))
        return -1;
    name_slot *e = name_find(p, t->s, t->len);
    e->s = t->s;
    e->len = t->len;
    e->node = n;
    p->nnames++;
    return 0;
}

static int check_new_name(parser *p, const token *t)
{
    if (name_lookup(p, t))
        return error_at(p, t->pos, "%%%.*s is already defined", (int)(t->len > 64 ? 64 : t->len),
                        t->s);
    return 0;
}

/* ---- numbers ----------------------------------------------------------------- */

/* The current token as an int64 (an optional '-' and digits). */
static int parse_int(parser *p, int64_t *v, const char *what)
{
    const token *t = &p->tok;
    size_t k = t->kind == TK_NUM && t->len && t->s[0] == '-';
    if (t->kind != TK_NUM || k == t->len || scan_digits(p, t->pos + k) != t->pos + t->len)
        return error_expected(p, what);
    uint64_t limit = k ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, u = 0;
    for (; k < t->len; k++) {
        unsigned d = (unsigned)(t->s[k] - '0');
        if (u > (limit - d) / 10)
            return error_at(p, t->pos, "integer out of range");
        u = u * 10 + d;
    }
    *v = t->s[0] == '-' ? (int64_t)(0 - u) : (int64_t)u;
    return next(p);
}

/* The current token as a double: a decimal number, inf, -inf or nan. */
static int parse_float(parser *p, double *v)
{
    const token *t = &p->tok;
    if (at_word(p, "inf") || at_word(p, "nan")) {
        *v = t->s[0] == 'i' ? INFINITY : NAN;
        return next(p);
    }
    if (t->kind == TK_NUM && t->len == 4 && !memcmp(t->s, "-inf", 4)) {
        *v = -INFINITY;
        return next(p);
    }
    size_t k = t->kind == TK_NUM && t->s[0] == '-';
    if (t->kind != TK_NUM || !is_digit(t->s[k]))
        return error_expected(p, "a number");
    char *copy = malloc(t->len + 1);
    if (!copy)
        return error_at(p, t->pos, "out of memory");
    memcpy(copy, t->s, t->len);
    copy[t->len] = '\0';
    char *end;
    *v = strtod(copy, &end);
    bool whole = end == copy + t->len;
    free(copy);
    if (!whole)
        return error_expected(p, "a number");
    if (isinf(*v))
        return error_at(p, t->pos, "number out of range");
    return next(p);
}

/* ---- types ------------------------------------------------------------------- */

/* One dim: a size >= 0 or a symbol sK. */
static int parse_dim(parser *p, int64_t *dim)
{
    const token *t = &p->tok;
    if (t->kind == TK_IDENT && t->len >= 2 && t->s[0] == 's' &&
        scan_digits(p, t->pos + 1) == t->pos + t->len) {
        int64_t k = 0;
        for (size_t i = 1; i < t->len; i++) {
            if (k > (IR_MAX_SYM - 1 - (t->s[i] - '0')) / 10)
                return error_at(p, t->pos, "symbol number out of range (at most s%lld)",
                                (long long)IR_MAX_SYM - 1);
            k = k * 10 + (t->s[i] - '0');
        }
        /* an offset right after the symbol: s0-1, s0+2 (ir_sym_at) */
        size_t at = t->pos + t->len;
        int64_t c = 0;
        if (at + 1 < p->len && (p->src[at] == '-' || p->src[at] == '+') && is_digit(p->src[at + 1])) {
            size_t end = scan_digits(p, at + 1);
            for (size_t i = at + 1; i < end; i++) {
                c = c * 10 + (p->src[i] - '0');
                if (c >= IR_MAX_SYM_DELTA)
                    return error_at(p, at, "symbol offset out of range (|offset| < 2^30)");
            }
            if (c == 0)
                return error_at(p, at, "a symbol offset is not 0 (write s%lld)", (long long)k);
            c = p->src[at] == '-' ? -c : c;
            p->pos = end;
        }
        *dim = c ? ir_sym_at(k, c) : IR_SYM(k);
        return next(p);
    }
    if (t->kind == TK_NUM && t->s[0] == '-')
        return error_at(p, t->pos, "a dim is a size >= 0 or a symbol s0, s1, ...");
    return parse_int(p, dim, "a dim (a size or a symbol s0, s1, ...)");
}

/* dtype '[' dims ']' ['weak'] */
static int parse_type(parser *p, ir_type *t)
{
    memset(t, 0, sizeof *t);
    char name[8] = "";
    if (p->tok.kind == TK_IDENT && p->tok.len < sizeof name)
        memcpy(name, p->tok.s, p->tok.len);
    if (p->tok.kind != TK_IDENT)
        return error_expected(p, "a type like f32[2,3]");
    t->dtype = ir_dtype_from_name(name);
    if (t->dtype == TJ_NUM_DTYPES) {
        char buf[48];
        return error_at(p, p->tok.pos, "unknown dtype %s", tok_desc(&p->tok, buf, sizeof buf));
    }
    if (next(p) || expect(p, '['))
        return -1;
    while (!at_punct(p, ']')) {
        if (t->ndim && expect(p, ','))
            return -1;
        if (t->ndim == TJ_MAX_DIMS)
            return error_at(p, p->tok.pos, "more than %d dims", TJ_MAX_DIMS);
        if (parse_dim(p, &t->shape[t->ndim++]))
            return -1;
        if (!at_punct(p, ',') && !at_punct(p, ']'))
            return error_expected(p, "',' or ']'");
    }
    if (next(p))
        return -1;
    if (at_word(p, "weak")) {
        t->weak = true;
        return next(p);
    }
    return 0;
}

/* ---- attributes -------------------------------------------------------------- */

static const char *kind_desc(ir_attr_kind k)
{
    switch (k) {
    case IR_ATTR_INT: return "an integer";
    case IR_ATTR_INTS: return "a list of integers like [0,1]";
    case IR_ATTR_BOOL: return "true or false";
    case IR_ATTR_FLOAT: return "a number";
    case IR_ATTR_DTYPE: return "a dtype like f32";
    case IR_ATTR_REDUCTION: return "mean, sum or none";
    case IR_ATTR_ROUNDING: return "none, trunc or floor";
    case IR_ATTR_REDUCE_OP: return "sum, prod, mean, amax or amin";
    case IR_ATTR_RNG: return "a counter offset N >= 0 or call+N";
    }
    return "?";
}

static int parse_ints(parser *p, ir_attr *v, const char *what)
{
    if (!at_punct(p, '['))
        return error_expected(p, what);
    if (next(p))
        return -1;
    while (!at_punct(p, ']')) {
        if (v->n && expect(p, ','))
            return -1;
        if (v->n == IR_MAX_LIST)
            return error_at(p, p->tok.pos, "more than %d values", IR_MAX_LIST);
        if (parse_int(p, &v->i[v->n++], "an integer"))
            return -1;
        if (!at_punct(p, ',') && !at_punct(p, ']'))
            return error_expected(p, "',' or ']'");
    }
    return next(p);
}

/* A random op's counter offset: N, or call+N (IR_RNG_CALL set). */
static int parse_rng(parser *p, int64_t *v, const char *what)
{
    const token *t = &p->tok;
    if (at_word(p, "call")) {
        size_t at = t->pos + t->len, end = at + 1 < p->len && p->src[at] == '+' ? scan_digits(p, at + 1) : at;
        uint64_t c = 0;
        if (end == at || end == at + 1)
            return error_expected(p, what);
        for (size_t i = at + 1; i < end; i++) {
            c = c * 10 + (uint64_t)(p->src[i] - '0');
            if (c & IR_RNG_CALL)
                return error_at(p, at + 1, "counter offset out of range (below 2^63)");
        }
        *v = (int64_t)(IR_RNG_CALL | c);
        p->pos = end;
        return next(p);
    }
    if (t->kind == TK_NUM && t->s[0] == '-')
        return error_expected(p, what);
    return parse_int(p, v, what);
}

static int parse_attr_value(parser *p, ir_attr_kind kind, ir_attr *v, const char *name)
{
    char what[96];
    snprintf(what, sizeof what, "%s for '%s'", kind_desc(kind), name);
    v->n = 1;
    switch (kind) {
    case IR_ATTR_INT:
        return parse_int(p, &v->i[0], what);
    case IR_ATTR_RNG:
        return parse_rng(p, &v->i[0], what);
    case IR_ATTR_INTS:
        v->n = 0;
        return parse_ints(p, v, what);
    case IR_ATTR_BOOL:
        if (!at_word(p, "true") && !at_word(p, "false"))
            return error_expected(p, what);
        v->i[0] = at_word(p, "true");
        return next(p);
    case IR_ATTR_FLOAT:
        if (p->tok.kind != TK_NUM && !at_word(p, "inf") && !at_word(p, "nan"))
            return error_expected(p, what);
        return parse_float(p, &v->f);
    case IR_ATTR_DTYPE: {
        char dt[8] = "";
        if (p->tok.kind == TK_IDENT && p->tok.len < sizeof dt)
            memcpy(dt, p->tok.s, p->tok.len);
        tj_dtype d = ir_dtype_from_name(dt);
        if (p->tok.kind != TK_IDENT || d == TJ_NUM_DTYPES)
            return error_expected(p, what);
        v->i[0] = d;
        return next(p);
    }
    case IR_ATTR_REDUCTION:
    case IR_ATTR_ROUNDING:
    case IR_ATTR_REDUCE_OP:
        if (p->tok.kind != TK_IDENT ||
            (v->i[0] = ir_attr_word_value(kind, p->tok.s, p->tok.len)) < 0)
            return error_expected(p, what);
        return next(p);
    }
    return -1;
}

/* Index of the attribute named by the current token in op's schema, or -1. */
static int attr_index(const parser *p, ir_op op)
{
    for (int k = 0; k < ir_ops[op].nattrs; k++)
        if (at_word(p, ir_ops[op].attrs[k].name))
            return k;
    return -1;
}

/* '{' [name '=' value {',' name '=' value}] '}': every attribute once. */
static int parse_attrs(parser *p, ir_op op, ir_attrs *a)
{
    const ir_opinfo *info = &ir_ops[op];
    unsigned seen = 0;
    if (expect(p, '{'))
        return -1;
    while (!at_punct(p, '}')) {
        if (seen && expect(p, ','))
            return -1;
        if (p->tok.kind != TK_IDENT)
            return error_expected(p, "an attribute name");
        int k = attr_index(p, op);
        char buf[48];
        if (k < 0)
            return error_at(p, p->tok.pos, "%s has no attribute %s", info->name,
                            tok_desc(&p->tok, buf, sizeof buf));
        if (seen & (1u << k))
            return error_at(p, p->tok.pos, "attribute '%s' is given twice", info->attrs[k].name);
        seen |= 1u << k;
        if (next(p) || expect(p, '=') ||
            parse_attr_value(p, info->attrs[k].kind, &a->a[k], info->attrs[k].name))
            return -1;
        if (!at_punct(p, ',') && !at_punct(p, '}'))
            return error_expected(p, "',' or '}'");
    }
    for (int k = 0; k < info->nattrs; k++)
        if (!(seen & (1u << k)))
            return error_at(p, p->tok.pos, "missing attribute '%s' of %s", info->attrs[k].name,
                            info->name);
    return next(p);
}

/* ---- nodes ------------------------------------------------------------------- */

static int push_val(parser *p, ir_node *n)
{
    if (p->nvals == p->vals_cap) {
        if (p->vals_cap >= (1 << 28))
            return error_at(p, p->tok.pos, "too many values");
        int cap = p->vals_cap ? p->vals_cap * 2 : 16;
        ir_node **v = realloc(p->vals, (size_t)cap * sizeof *v);
        if (!v)
            return error_at(p, p->tok.pos, "out of memory");
        p->vals = v;
        p->vals_cap = cap;
    }
    p->vals[p->nvals++] = n;
    return 0;
}

/* A use of a value: %name (defined before) or, when allowed, none. */
static int parse_use(parser *p, bool allow_none)
{
    if (allow_none && at_word(p, "none"))
        return push_val(p, NULL) || next(p);
    if (p->tok.kind != TK_VALUE)
        return error_expected(p, allow_none ? "a value or 'none'" : "a value");
    ir_node *n = name_lookup(p, &p->tok);
    if (!n) {
        int len = (int)(p->tok.len > 64 ? 64 : p->tok.len);
        return error_at(p, p->tok.pos, "use of undefined value %%%.*s", len, p->tok.s);
    }
    return push_val(p, n) || next(p);
}

/* The op name at the current token. */
static int parse_op(parser *p, ir_op *op)
{
    char name[64] = "";
    if (p->tok.kind != TK_IDENT)
        return error_expected(p, "an op name");
    if (p->tok.len < sizeof name)
        memcpy(name, p->tok.s, p->tok.len);
    *op = ir_op_from_name(name);
    if (*op == IR_NUM_OPS) {
        char buf[48];
        return error_at(p, p->tok.pos, "unknown op %s", tok_desc(&p->tok, buf, sizeof buf));
    }
    return next(p);
}

/* [use {',' use}] into p->vals: required when the op takes inputs. */
static int parse_uses(parser *p, ir_op op)
{
    p->nvals = 0;
    if (ir_ops[op].nmin == 0 && p->tok.kind != TK_VALUE && !at_word(p, "none"))
        return 0;
    if (parse_use(p, true))
        return -1;
    while (at_punct(p, ','))
        if (next(p) || parse_use(p, true))
            return -1;
    return 0;
}

/* The attribute block, required when the op has attributes. */
static int parse_node_attrs(parser *p, ir_op op, ir_attrs *a)
{
    memset(a, 0, sizeof *a);
    if (at_punct(p, '{'))
        return parse_attrs(p, op, a);
    if (!ir_ops[op].nattrs)
        return 0;
    char what[96];
    snprintf(what, sizeof what, "'{' with the attributes of %s", ir_ops[op].name);
    return error_expected(p, what);
}

/* A node's call site from the comment `# file:line` (other comments are
 * left alone): file copied into the graph's arena. 0, or -1 out of memory. */
static int set_site(parser *p, ir_node *n, const char *s, size_t len)
{
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    while (len && (*s == ' ' || *s == '\t'))
        s++, len--;
    size_t colon = len;
    while (colon && s[colon - 1] != ':')
        colon--;
    if (colon < 2 || colon == len || len - colon > 9 || memchr(s, '\0', colon - 1))
        return 0;   /* not a call site (a NUL would cut the path: it would print otherwise) */
    int line = 0;
    for (size_t k = colon; k < len; k++) {
        if (!is_digit(s[k]))
            return 0;
        line = line * 10 + (s[k] - '0');
    }
    char *file = ir_arena_strndup(&p->g->arena, s, colon - 1);
    if (!file)
        return -1;
    n->file = file;
    n->line = line;
    return 0;
}

/* %name '=' op [uses] [attrs] ':' type ['# file:line'] */
static int parse_node(parser *p)
{
    token name = p->tok;
    if (check_new_name(p, &name) || next(p) || expect(p, '='))
        return -1;
    size_t op_pos = p->tok.pos;
    ir_op op = IR_NUM_OPS;
    ir_attrs a;
    if (parse_op(p, &op) || parse_uses(p, op) || parse_node_attrs(p, op, &a) || expect(p, ':'))
        return -1;
    size_t type_pos = p->tok.pos;
    ir_type t;
    if (parse_type(p, &t))
        return -1;
    const char *site = p->site;   /* `# file:line` after the type */
    size_t site_len = p->site_len;
    ir_node *n = ir_graph_add(p->g, op, p->vals, p->nvals, &a);
    if (!n)
        return error_at(p, op_pos, "%s", ir_graph_error(p->g));
    if (site && !n->file && set_site(p, n, site, site_len))
        return error_at(p, type_pos, "out of memory");
    if (!ir_type_same(&n->type, &t)) {
        char want[IR_TYPE_BUF], got[IR_TYPE_BUF];
        return error_at(p, type_pos, "type %s does not match the inferred type %s",
                        ir_type_fmt(&t, got, sizeof got), ir_type_fmt(&n->type, want, sizeof want));
    }
    return name_define(p, &name, n);
}

/* %name ':' type ['param'] */
static int parse_input(parser *p)
{
    token name = p->tok;
    if (p->tok.kind != TK_VALUE)
        return error_expected(p, "an input like %x: f32[2]");
    if (!ir_name_valid(name.s, name.len))
        return error_at(p, name.pos, "an input name starts with a letter or '_'");
    if (check_new_name(p, &name) || next(p) || expect(p, ':'))
        return -1;
    size_t type_pos = p->tok.pos;
    ir_type t;
    if (parse_type(p, &t))
        return -1;
    bool param = at_word(p, "param");
    if (param && next(p))
        return -1;
    char *cname = ir_arena_strndup(&p->g->arena, name.s, name.len);
    if (!cname)
        return error_at(p, name.pos, "out of memory");
    ir_node *n = ir_graph_input(p->g, cname, &t, param);
    if (!n)
        return error_at(p, type_pos, "%s", ir_graph_error(p->g));
    return name_define(p, &name, n);
}

/* ---- graphs ------------------------------------------------------------------ */

/* 'graph' @name '(' [input {',' input}] ')' '{' */
static int parse_header(parser *p)
{
    if (!at_word(p, "graph"))
        return error_expected(p, "'graph'");
    if (next(p))
        return -1;
    if (p->tok.kind != TK_GLOBAL)
        return error_expected(p, "a graph name like @main");
    if (!ir_name_valid(p->tok.s, p->tok.len))
        return error_at(p, p->tok.pos, "a graph name starts with a letter or '_'");
    char *name = malloc(p->tok.len + 1);
    if (!name)
        return error_at(p, p->tok.pos, "out of memory");
    memcpy(name, p->tok.s, p->tok.len);
    name[p->tok.len] = '\0';
    p->g = ir_graph_new(name);
    free(name);
    if (!p->g)
        return error_at(p, p->tok.pos, "out of memory");
    if (next(p) || expect(p, '('))
        return -1;
    while (!at_punct(p, ')')) {
        if (p->g->ninputs && expect(p, ','))
            return -1;
        if (parse_input(p))
            return -1;
        if (!at_punct(p, ',') && !at_punct(p, ')'))
            return error_expected(p, "',' or ')'");
    }
    return next(p) || expect(p, '{');
}

/* 'return' value {',' value} */
static int parse_return(parser *p)
{
    size_t pos = p->tok.pos;
    if (next(p))
        return -1;
    p->nvals = 0;
    if (parse_use(p, false))
        return -1;
    while (at_punct(p, ','))
        if (next(p) || parse_use(p, false))
            return -1;
    if (ir_graph_set_outputs(p->g, p->vals, p->nvals))
        return error_at(p, pos, "%s", ir_graph_error(p->g));
    return 0;
}

static int parse_graph(parser *p)
{
    if (next(p) || parse_header(p))
        return -1;
    while (!at_word(p, "return")) {
        if (p->tok.kind != TK_VALUE)
            return error_expected(p, "a node like '%0 = op ...' or 'return'");
        if (parse_node(p))
            return -1;
    }
    if (parse_return(p) || expect(p, '}'))
        return -1;
    if (p->tok.kind != TK_EOF)
        return error_expected(p, "end of input after '}'");
    return 0;
}

ir_graph *ir_parse(const char *src, size_t len, const char *file, char *err, size_t nerr)
{
    parser p = {.src = src ? src : "", .len = src ? len : 0, .file = file ? file : "<input>",
                .err = err, .nerr = nerr};
    if (err && nerr)
        err[0] = '\0';
    int rc = parse_graph(&p);
    free(p.names);
    free(p.vals);
    if (rc != 0 || p.failed) {
        ir_graph_free(p.g);
        return NULL;
    }
    return p.g;
}
