/* verify.c - ir_verify: checks every invariant of a graph, whoever built it.
 *
 * A graph made only through ir_graph_* is valid by construction; the verifier
 * exists for graphs that passes rewrote, for memory corruption, and for the
 * pass manager's debug mode (verify after each pass). A node belongs to g
 * when g's list holds it at its own id; an input that does not (a node of
 * another graph, or a later one) is reported before its type is read.
 * Messages name the node as it prints: "%3 = matmul: ...".
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "infer.h"

typedef struct {
    const ir_graph *g;
    char *err;
    size_t nerr;
} verifier;

static int vfail(verifier *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int vfail(verifier *v, const char *fmt, ...)
{
    if (v->err && v->nerr) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->err, v->nerr, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* True when n is one of g's inputs, or one of its first `before` op nodes:
 * a node of g sits at its own id in g's lists. */
static bool defined_before(const ir_graph *g, const ir_node *n, int before)
{
    if (n->op == IR_OP_INPUT)
        return n->id >= 0 && n->id < g->ninputs && g->inputs[n->id] == n;
    return n->id >= 0 && n->id < before && n->id < g->nnodes && g->nodes[n->id] == n;
}

static int check_input(verifier *v, int k)
{
    const ir_node *n = v->g->inputs[k];
    char why[IR_TYPE_BUF + 64];
    if (!n)
        return vfail(v, "input %d is NULL", k);
    if (n->op != IR_OP_INPUT || n->id != k || n->nin != 0)
        return vfail(v, "input %d is not an input node (op %d, id %d)", k, (int)n->op, n->id);
    if (!n->name || !ir_name_valid(n->name, strlen(n->name)))
        return vfail(v, "input %d has no valid name", k);
    for (int j = 0; j < k; j++)
        if (v->g->inputs[j] && v->g->inputs[j]->name && !strcmp(v->g->inputs[j]->name, n->name))
            return vfail(v, "input %%%.64s is defined twice", n->name);
    if (ir_type_check(&n->type, why, sizeof why))
        return vfail(v, "input %%%.64s: %s", n->name, why);
    return 0;
}

/* Arity, absent inputs, SSA order and membership of node k's inputs. */
static int check_uses(verifier *v, const ir_node *n, const char *head)
{
    const ir_opinfo *info = &ir_ops[n->op];
    if (n->nin < info->nmin || (info->nmax >= 0 && n->nin > info->nmax))
        return vfail(v, "%s: %d inputs, the op takes %d..%d", head, n->nin, info->nmin,
                     info->nmax);
    if (n->nin && !n->in)
        return vfail(v, "%s: no input array", head);
    for (int j = 0; j < n->nin; j++) {
        const ir_node *in = n->in[j];
        if (!in && (j < info->nmin || info->nmax < 0))
            return vfail(v, "%s: input %d is missing", head, j);
        if (in && !defined_before(v->g, in, n->id)) {
            bool later = in->op != IR_OP_INPUT && in->id >= n->id && in->id < v->g->nnodes &&
                         v->g->nodes[in->id] == in;
            return vfail(v, "%s: input %d %s", head, j,
                         later ? "is defined after its use (SSA order)"
                               : "is not a node of this graph (dangling use)");
        }
    }
    if (n->nin > info->nmin && !n->in[n->nin - 1])
        return vfail(v, "%s: trailing absent input (not canonical)", head);
    return 0;
}

/* Attributes against the schema, then the type against ir_infer. */
static int check_type(verifier *v, const ir_node *n, const char *head)
{
    ir_attrs a;
    char why[256] = "";
    ir_node_attrs(n, &a);
    if (ir_attrs_check(n->op, &a, why, sizeof why))
        return vfail(v, "%s: %s", head, why);
    const ir_type *small[16], **tp = small;
    if (n->nin > 16 && !(tp = malloc((size_t)n->nin * sizeof *tp)))
        return vfail(v, "%s: out of memory", head);
    for (int j = 0; j < n->nin; j++)
        tp[j] = n->in[j] ? &n->in[j]->type : NULL;
    ir_type t;
    memset(&t, 0, sizeof t);
    int rc = ir_infer(n->op, tp, n->nin, &a, &t, why, sizeof why);
    if (tp != small)
        free(tp);
    if (rc != 0)
        return vfail(v, "%s: the shape rule fails: %s", head, why);
    if (!ir_type_same(&t, &n->type)) {
        char have[IR_TYPE_BUF], want[IR_TYPE_BUF];
        return vfail(v, "%s: type %s differs from the inferred %s", head,
                     ir_type_fmt(&n->type, have, sizeof have), ir_type_fmt(&t, want, sizeof want));
    }
    return 0;
}

static int check_node(verifier *v, int k)
{
    const ir_node *n = v->g->nodes[k];
    if (!n)
        return vfail(v, "node %%%d is NULL", k);
    if ((unsigned)n->op >= IR_NUM_OPS)
        return vfail(v, "node %%%d has bad op %d", k, (int)n->op);
    char head[96];
    snprintf(head, sizeof head, "%%%d = %s", k, ir_ops[n->op].name);
    if (n->id != k)
        return vfail(v, "%s: id is %d, not its position %d", head, n->id, k);
    if (ir_ops[n->op].nattrs && !n->attrs)
        return vfail(v, "%s: no attributes", head);
    return check_uses(v, n, head) || check_type(v, n, head) ? -1 : 0;
}

int ir_verify(const ir_graph *g, char *err, size_t nerr)
{
    verifier v = {g, err, nerr};
    if (err && nerr)
        err[0] = '\0';
    if (!g)
        return vfail(&v, "no graph");
    if (g->ninputs < 0 || g->nnodes < 0 || g->noutputs < 0 || (g->ninputs && !g->inputs) ||
        (g->nnodes && !g->nodes) || (g->noutputs && !g->outputs))
        return vfail(&v, "graph lists are corrupt");
    if (!g->name || !ir_name_valid(g->name, strlen(g->name)))
        return vfail(&v, "graph has no valid name");
    for (int k = 0; k < g->ninputs; k++)
        if (check_input(&v, k))
            return -1;
    for (int k = 0; k < g->nnodes; k++)
        if (check_node(&v, k))
            return -1;
    if (g->noutputs < 1)
        return vfail(&v, "graph returns nothing");
    for (int k = 0; k < g->noutputs; k++)
        if (!g->outputs[k] || !defined_before(g, g->outputs[k], g->nnodes))
            return vfail(&v, "output %d is not a node of this graph", k);
    return 0;
}
