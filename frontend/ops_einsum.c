/* ops_einsum.c - tj_einsum: torch.einsum built from the public ops, with no
 * row of its own in ops.def (the equation is text, and every step is an op
 * that has a row: a trace records those, autograd differentiates them).
 *
 *   parse     terms of letters (a-z, A-Z) and at most one "..." each, ","
 *             between operands, an optional "->" output (implicit: "..." then
 *             the letters seen once, in ASCII order, as PyTorch)
 *   operands  a letter twice in one term: its diagonal (tj_diagonal); then each
 *             operand is permuted and reshaped to one canonical order of every
 *             label (the "..." dims first), size 1 where it lacks the label;
 *             labels in one operand only and not in the output are summed
 *   pairs     left to right, as PyTorch's sumproduct_pair: the labels no later
 *             operand or the output needs are contracted by one batched matmul
 *             [batch, M, K] x [batch, K, N]; size-1 dims broadcast
 *   output    the result permuted to the output's order, the summed dims dropped
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fe.h"

#define EN_LETTERS 52                  /* A-Z: 0..25, a-z: 26..51 */
#define EN_LABELS (EN_LETTERS + TJ_MAX_DIMS)   /* then the "..." dims, right-aligned */
#define EN_MAX_OPS 16

typedef struct en {
    const char *eq;
    tj_tensor *const *ops;
    int n;
    int nl[EN_MAX_OPS], lab[EN_MAX_OPS][TJ_MAX_DIMS];   /* each operand's labels per dim */
    int ell;                                           /* "..." dims (the most of any operand) */
    int nout, out[TJ_MAX_DIMS];                        /* the output's labels */
    int canon[EN_LABELS], ncanon;                      /* every label used, in canonical order */
    int uses[EN_LABELS];                               /* how many operands have the label */
    bool in_out[EN_LABELS];
} en;

static tj_tensor *en_fail(const en *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tj_tensor *en_fail(const en *e, const char *fmt, ...)
{
    char head[512], why[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rt_describe_inputs("einsum", e->ops, e->n, head, sizeof head);
    rt_error("%s: equation \"%s\": %s", head, e->eq, why);
    return NULL;
}

static int letter_id(char c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? 26 + c - 'a' : -1;
}

static char label_char(int l)
{
    return l < 26 ? (char)('A' + l) : l < 52 ? (char)('a' + l - 26) : '.';
}

/* One term [s, end) of operand k (k < 0: the output) into labels; -1 after an error. */
static int parse_term(en *e, const char *s, const char *end, int k, int ndim, int *nl, int *lab)
{
    int letters = 0, at = -1;
    for (const char *p = s; p < end; p++) {
        if (*p == '.') {
            if (end - p < 3 || strncmp(p, "...", 3) || at >= 0)
                return en_fail(e, "a '.' that is not part of one \"...\" in term %d", k), -1;
            at = letters;
            p += 2;
        } else if (letter_id(*p) < 0) {
            char c[2] = {*p, 0};
            return en_fail(e, "'%s' is not a letter (term %d)", c, k), -1;
        } else {
            letters++;
        }
    }
    int ell = k < 0 ? (at >= 0 ? e->ell : 0) : ndim - letters;
    if (k >= 0 && (ell < 0 || (at < 0 && ell != 0)))
        return en_fail(e, "term %d does not match operand %d's %d dims", k, k, ndim), -1;
    if (letters + ell > TJ_MAX_DIMS)
        return en_fail(e, "the output has more than %d dims", TJ_MAX_DIMS), -1;
    if (k >= 0 && ell > e->ell)
        e->ell = ell;
    *nl = 0;
    for (const char *p = s; p < end; p++) {
        if (*p == '.') {
            for (int j = 0; j < ell; j++)   /* right-aligned among TJ_MAX_DIMS slots */
                lab[(*nl)++] = EN_LETTERS + TJ_MAX_DIMS - ell + j;
            p += 2;
        } else {
            lab[(*nl)++] = letter_id(*p);
        }
    }
    return 0;
}

static int parse(en *e)
{
    const char *arrow = strstr(e->eq, "->"), *lhs_end = arrow ? arrow : e->eq + strlen(e->eq);
    if (arrow && strstr(arrow + 2, "->"))
        return en_fail(e, "more than one \"->\""), -1;
    int k = 0, seen[EN_LABELS] = {0};
    for (const char *s = e->eq;; k++) {
        const char *c = memchr(s, ',', (size_t)(lhs_end - s)), *end = c ? c : lhs_end;
        if (k >= e->n)
            return en_fail(e, "more terms than the %d operands", e->n), -1;
        if (!e->ops[k])
            return -1;   /* a failed input: its error stands */
        if (parse_term(e, s, end, k, e->ops[k]->ndim, &e->nl[k], e->lab[k]))
            return -1;
        for (int j = 0; j < e->nl[k]; j++)
            seen[e->lab[k][j]]++;
        if (!c)
            break;
        s = c + 1;
    }
    if (k + 1 != e->n)
        return en_fail(e, "%d operands for %d terms", e->n, k + 1), -1;
    if (arrow) {
        const char *o = arrow + 2;
        if (parse_term(e, o, o + strlen(o), -1, 0, &e->nout, e->out))
            return -1;
        for (int j = 0; j < e->nout; j++) {
            char c[2] = {label_char(e->out[j]), 0};
            for (int i = 0; i < j; i++)
                if (e->out[i] == e->out[j])
                    return en_fail(e, "output subscript '%s' appears twice", c), -1;
            if (!seen[e->out[j]] && e->out[j] < EN_LETTERS)
                return en_fail(e, "output subscript '%s' is in no input", c), -1;
        }
    } else {   /* implicit: "..." then the letters used once, in ASCII order */
        e->nout = 0;
        for (int j = 0; j < e->ell; j++)
            e->out[e->nout++] = EN_LETTERS + TJ_MAX_DIMS - e->ell + j;
        for (int l = 0; l < EN_LETTERS; l++)
            if (seen[l] == 1) {
                if (e->nout == TJ_MAX_DIMS)
                    return en_fail(e, "the output has more than %d dims", TJ_MAX_DIMS), -1;
                e->out[e->nout++] = l;
            }
    }
    for (int j = 0; j < e->nout; j++)
        e->in_out[e->out[j]] = true;
    return 0;
}

/* Operand k with its repeated labels reduced to diagonals. */
static tj_tensor *diagonals(en *e, int k)
{
    tj_tensor *x = e->ops[k];
    int *lab = e->lab[k];
    for (int p = 0; x && p < e->nl[k]; p++)
        for (int q = p + 1; q < e->nl[k]; q++) {
            if (lab[p] != lab[q])
                continue;
            if (x->shape[p] != x->shape[q]) {
                char c[2] = {label_char(lab[p]), 0};
                return en_fail(e, "subscript '%s' repeats in operand %d with two sizes", c, k);
            }
            x = tj_diagonal(x, 0, p, q);   /* p and q go, the diagonal is last */
            int l = lab[p], m = 0;
            for (int j = 0; j < e->nl[k]; j++)
                if (j != p && j != q)
                    lab[m++] = lab[j];
            lab[m++] = l;
            e->nl[k] = m;
            p = -1;   /* start again */
            break;
        }
    return x;
}

/* Operand k (diagonals taken) in the canonical order, size 1 where absent; the
 * labels only it has and the output lacks summed (kept as size 1). */
static tj_tensor *canonical(en *e, int k, tj_tensor *x)
{
    int perm[TJ_MAX_DIMS], np = 0, sum[TJ_MAX_DIMS], ns = 0;
    int64_t shape[TJ_MAX_DIMS];
    for (int c = 0; c < e->ncanon; c++) {
        shape[c] = 1;
        for (int j = 0; j < e->nl[k]; j++)
            if (e->lab[k][j] == e->canon[c]) {
                perm[np++] = j;
                shape[c] = x->shape[j];
            }
    }
    if (np > 1)
        x = tj_permute(x, perm);
    x = tj_reshape(x, e->ncanon, shape);
    for (int c = 0; c < e->ncanon; c++)
        if (e->uses[e->canon[c]] == 1 && !e->in_out[e->canon[c]] && shape[c] != 1)
            sum[ns++] = c;
    return ns && x ? tj_sum(x, sum, ns, true) : x;
}

/* a and b (canonical) with the dims of mask contracted: [batch, M, K] x [batch, K, N]. */
static tj_tensor *pair(en *e, tj_tensor *a, tj_tensor *b, const bool *sum)
{
    int R = e->ncanon, cls[TJ_MAX_DIMS];   /* 0 batch, 1 M, 2 K, 3 N, 4 size 1 */
    for (int p = 0; p < R && a && b; p++) {
        int64_t sa = a->shape[p], sb = b->shape[p];
        if (sa != 1 && sb != 1 && sa != sb) {
            char c[2] = {label_char(e->canon[p]), 0};
            return en_fail(e, "subscript '%s' has sizes %lld and %lld, which do not broadcast", c,
                           (long long)sa, (long long)sb);
        }
        if (sum[p] && (sa == 1) != (sb == 1)) {   /* summed in one operand only */
            if (sa != 1)
                a = tj_sum(a, &p, 1, true);
            else
                b = tj_sum(b, &p, 1, true);
            sa = sb = 1;
        }
        cls[p] = sa == 1 && sb == 1 ? 4 : sum[p] ? 2 : sa != 1 && sb != 1 ? 0 : sa != 1 ? 1 : 3;
    }
    if (!a || !b)
        return NULL;
    int pa[TJ_MAX_DIMS], pb[TJ_MAX_DIMS], order[TJ_MAX_DIMS], na = 0, nb = 0, no = 0;
    int64_t sz[5] = {1, 1, 1, 1, 1}, rshape[TJ_MAX_DIMS];
    /* the order of the classes in a's, b's and the product's dims */
    static const int a_cls[] = {0, 1, 2, 3, 4}, b_cls[] = {0, 2, 3, 1, 4};
    static const int o_cls[] = {0, 1, 3, 2, 4};
    for (int t = 0; t < 5; t++)
        for (int p = 0; p < R; p++) {
            if (cls[p] == a_cls[t])
                pa[na++] = p;
            if (cls[p] == b_cls[t])
                pb[nb++] = p;
            if (cls[p] == o_cls[t]) {
                order[no] = p;
                rshape[no++] = cls[p] == 1 ? a->shape[p] : cls[p] == 3 ? b->shape[p]
                               : cls[p] == 0 ? a->shape[p] : 1;
            }
            if (cls[p] == t)
                sz[t] *= t == 3 ? b->shape[p] : a->shape[p];
        }
    tj_tensor *a3 = tj_reshape(tj_permute(a, pa), 3, (int64_t[]){sz[0], sz[1], sz[2]});
    tj_tensor *b3 = tj_reshape(tj_permute(b, pb), 3, (int64_t[]){sz[0], sz[2], sz[3]});
    tj_tensor *r = tj_reshape(tj_matmul(a3, b3), R, rshape);
    int inv[TJ_MAX_DIMS];
    for (int j = 0; j < R; j++)
        inv[order[j]] = j;
    return tj_permute(r, inv);
}

tj_tensor *tj_einsum(const char *equation, tj_tensor *const *operands, int n)
{
    en e;
    memset(&e, 0, sizeof e);
    e.eq = equation ? equation : "(null)";
    e.ops = operands, e.n = n;
    if (!equation || n < 1 || n > EN_MAX_OPS || !operands) {
        rt_error("einsum: needs an equation and 1 to %d operands, got %d", EN_MAX_OPS, n);
        return NULL;
    }
    char clean[256];   /* the equation without spaces */
    size_t m = 0;
    for (const char *p = equation; *p; p++)
        if (*p != ' ' && m + 1 < sizeof clean)
            clean[m++] = *p;
        else if (*p != ' ')
            return en_fail(&e, "longer than %d characters", (int)sizeof clean - 1);
    clean[m] = 0;
    e.eq = clean;
    if (parse(&e))
        return NULL;
    tj_tensor *x[EN_MAX_OPS];
    bool used[EN_LABELS] = {false};
    for (int k = 0; k < n; k++) {
        if (!(x[k] = diagonals(&e, k)))
            return NULL;
        for (int j = 0; j < e.nl[k]; j++)
            if (!used[e.lab[k][j]]) {
                used[e.lab[k][j]] = true;
                e.uses[e.lab[k][j]]++;
            }
        memset(used, 0, sizeof used);
    }
    for (int l = EN_LETTERS; l < EN_LABELS; l++)   /* "..." first, then the letters */
        if (e.uses[l] || e.in_out[l])
            e.canon[e.ncanon++] = l;
    for (int l = 0; l < EN_LETTERS; l++)
        if (e.uses[l])
            e.canon[e.ncanon++] = l;
    if (e.ncanon > TJ_MAX_DIMS)
        return en_fail(&e, "more than %d distinct subscripts", TJ_MAX_DIMS);
    for (int k = 0; k < n; k++)
        if (!(x[k] = canonical(&e, k, x[k])))
            return NULL;
    tj_tensor *acc = x[0];
    for (int k = 1; k < n && acc; k++) {
        bool sum[TJ_MAX_DIMS];
        for (int c = 0; c < e.ncanon; c++) {
            int l = e.canon[c];
            bool later = false;
            for (int j = k + 1; j < n && !later; j++)
                for (int i = 0; i < e.nl[j]; i++)
                    later = later || e.lab[j][i] == l;
            sum[c] = !e.in_out[l] && !later;
        }
        acc = pair(&e, acc, x[k], sum);
    }
    if (!acc)
        return NULL;
    int perm[TJ_MAX_DIMS], np = 0;
    int64_t shape[TJ_MAX_DIMS];
    for (int j = 0; j < e.nout; j++)
        for (int c = 0; c < e.ncanon; c++)
            if (e.canon[c] == e.out[j]) {
                shape[np] = acc->shape[c];
                perm[np++] = c;
            }
    for (int c = 0; c < e.ncanon; c++)
        if (!e.in_out[e.canon[c]])
            perm[np++] = c;
    if (e.ncanon > 1)
        acc = tj_permute(acc, perm);
    return acc ? tj_reshape(acc, e.nout, shape) : NULL;
}
