/* rewrite.c - the one rebuild loop of the passes (dce, cse, decompose,
 * split_reductions and the rule driver rebuild through it), and the rule
 * driver used by simplify (see rewrite.h for the algorithm and its bounds). */
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

enum { MAX_IN = 64, DEFAULT_SWEEPS = 32, DEFAULT_PER_NODE = 64 };

/* A node re-added as it is (hash-consing merges it with an identical one). */
static ir_node *copy_node(ps_builder *b, const ir_node *old, ir_node *const *in, void *ctx)
{
    ir_attrs a;
    ir_node_attrs(old, &a);
    return ps_b_op(b, old->op, in, old->nin, &a);
}

/* Whether o is an input or a chain of views of one. */
static bool views_input(const ir_node *o) { return ir_node_is_input(ir_view_root(o)); }

/* Whether DCOMP node o's eager run, which replays its decomposition
 * (apply_decomp.c), ends in views of its first input: a chain of views that
 * is neither the input itself nor expands it (both replay as copies: an
 * identity, tile, repeat). A roll by a multiple of its size decomposes to a
 * cat, a copy eagerly, that simplify folds into a view. Unknown: a view. */
static _Thread_local bool probing;   /* in decomp_views_input: its own rebuild asks again */

static bool decomp_views_input(const ir_node *o)
{
    const ir_type *types[MAX_IN];
    if (o->nin > MAX_IN || probing)
        return true;
    for (int k = 0; k < o->nin; k++)
        types[k] = o->in[k] ? &o->in[k]->type : NULL;
    ir_attrs a;
    ir_node_attrs(o, &a);
    char err[64];
    probing = true;
    ir_graph *g = ps_decompose_one(o->op, types, o->nin, &a, err, sizeof err);
    probing = false;
    if (!g)
        return true;
    const ir_node *chain[64];
    int nc;
    bool view = ps_decomp_views_input(g, chain, 64, &nc) && nc > 0;   /* an identity replays as a copy */
    ir_graph_free(g);
    return view;
}

/* Whether old output o, rebuilt as now (an input or views of one), was a
 * tensor of its own eagerly: o did not view an input, and o's bottom is no
 * DCOMP row whose eager replay ends in views of its input (then eagerly a
 * view too, as now). */
static bool own_tensor(const ir_node *o, const ir_node *now)
{
    o = ir_view_root(o);
    return !ir_node_is_input(o) && (ir_node_is_input(now) || !ir_ops[o->op].eager_decomp ||
                                    ir_view_chain_expands(now) || !decomp_views_input(o));
}

ir_graph *ps_rebuild(const ir_graph *g, const bool *keep, ps_node_hook hook, void *ctx, char *err,
                     size_t nerr)
{
    ir_graph *h = ir_graph_new(g->name);
    ir_node **map = calloc((size_t)ir_nslots(g) + 1, sizeof *map);
    ps_builder b;
    ps_b_init(&b, h);
    if (!h || !map) {
        snprintf(err, nerr, "out of memory");
        goto fail;
    }
    if (!hook)
        hook = copy_node;
    const char *site = NULL;   /* the last call site copied into h's arena, */
    const char *site_src = NULL;   /* and where it came from */
    for (int k = 0; k < g->ninputs; k++) {
        const ir_node *in = g->inputs[k];
        if (!(map[k] = ir_graph_input(h, in->name, &in->type, in->param))) {
            snprintf(err, nerr, "%s", ir_graph_error(h));
            goto fail;
        }
    }
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        if (keep && !keep[k])
            continue;
        ir_node *small[MAX_IN] = {0}, **in = small;
        if (n->nin > MAX_IN && !(in = calloc((size_t)n->nin, sizeof *in))) {   /* a long cat */
            snprintf(err, nerr, "out of memory");
            goto fail;
        }
        for (int j = 0; j < n->nin; j++)
            in[j] = n->in[j] ? map[ir_slot(g, n->in[j])] : NULL;
        if (n->file && n->file != site_src) {   /* nodes made for n carry its call site */
            site_src = n->file;
            site = ir_arena_strndup(&h->arena, n->file, strlen(n->file));
        }
        b.file = n->file ? site : NULL;
        b.line = n->line;
        ir_node *r = hook(&b, n, in, ctx);
        if (in != small)
            free(in);
        if (!r) {
            snprintf(err, nerr, "%%%d = %s: %s", k, ir_ops[n->op].name,
                     b.failed ? b.err : "rewrite failed");
            goto fail;
        }
        map[ir_slot(g, n)] = r;
    }
    ir_node **outs = malloc(((size_t)g->noutputs + 1) * sizeof *outs);
    if (!outs) {
        snprintf(err, nerr, "out of memory");
        goto fail;
    }
    for (int k = 0; k < g->noutputs && outs; k++) {
        outs[k] = map[ir_slot(g, g->outputs[k])];
        /* a result a rule folded into an input or a view of one (x * 1, a
         * cast to x's dtype, under a transpose) is a tensor of its own, as
         * eagerly: a copy, unless it viewed the input all along (a write
         * into the input must not reach it) */
        if (views_input(outs[k]) && own_tensor(g->outputs[k], outs[k]) &&
            !(outs[k] = ir_graph_add(h, OP_copy, &outs[k], 1, NULL))) {
            snprintf(err, nerr, "%s", ir_graph_error(h));
            free(outs);
            goto fail;
        }
    }
    int rc = ir_graph_set_outputs(h, outs, g->noutputs);
    free(outs);
    if (rc != 0) {
        snprintf(err, nerr, "%s", ir_graph_error(h));
        goto fail;
    }
    free(map);
    return h;
fail:
    ir_graph_free(h);
    free(map);
    return NULL;
}

/* ---- the rule driver --------------------------------------------------------- */

typedef struct driver {
    const ps_rule *rules;
    int nrules;
    const char *pass;
    int max_per_node, sweep;
    FILE *log;
    int fired;               /* rewrites in this sweep */
    int *counts;             /* per rule, over the whole run */
    const char *last;        /* the rule that fired last */
    bool looping;            /* a node exceeded max_per_node */
} driver;

/* " {perm=[1,0], ...}" as the text form writes attributes. */
static void put_attrs(FILE *f, const ir_node *n)
{
    const ir_opinfo *info = &ir_ops[n->op];
    char buf[IR_ATTR_BUF];
    for (int k = 0; k < info->nattrs; k++)
        fprintf(f, "%s%s=%s", k ? ", " : " {", info->attrs[k].name,
                ir_attr_fmt(info->attrs[k].kind, &n->attrs[k], buf, sizeof buf));
    if (info->nattrs)
        fprintf(f, "}");
}

/* "mul %x, %2 : f32[4,8]" (ids are those of the graph being built). */
static void describe(FILE *f, const ir_node *n)
{
    char t[IR_TYPE_BUF];
    if (ir_node_is_input(n)) {
        fprintf(f, "%%%s", n->name);
        return;
    }
    fprintf(f, "%s", ir_ops[n->op].name);
    for (int j = 0; j < n->nin; j++) {
        const ir_node *in = n->in[j];
        if (!in)
            fprintf(f, "%snone", j ? ", " : " ");
        else if (ir_node_is_input(in))
            fprintf(f, "%s%%%s", j ? ", " : " ", in->name);
        else
            fprintf(f, "%s%%%d", j ? ", " : " ", in->id);
    }
    put_attrs(f, n);
    fprintf(f, " : %s", ir_type_fmt(&n->type, t, sizeof t));
}

static void log_rewrite(const driver *d, const ps_rule *r, const ir_node *from, const ir_node *to)
{
    if (!d->log)
        return;
    fprintf(d->log, "%s: sweep %d: %s: ", d->pass, d->sweep, r->name);
    describe(d->log, from);
    fprintf(d->log, " -> ");
    if (ir_node_is_input(to))
        describe(d->log, to);
    else
        fprintf(d->log, "%%%d = ", to->id), describe(d->log, to);
    fprintf(d->log, "\n");
}

/* Tries the rules on n once; the replacement, n itself (no match), or NULL
 * after recording an error. */
static ir_node *apply_once(driver *d, ps_builder *b, ir_node *n, const ps_rule **which)
{
    for (int k = 0; k < d->nrules; k++) {
        const ps_rule *r = &d->rules[k];
        if (r->op != PS_ANY_OP && r->op != (int)n->op)
            continue;
        ir_node *m = r->fn(b, n);
        if (b->failed) {   /* a rule that cannot build does not match */
            if (d->log)
                fprintf(d->log, "%s: sweep %d: %s did not apply: %s\n", d->pass, d->sweep,
                        r->name, b->err);
            const char *file = b->file;
            int line = b->line;
            ps_b_init(b, b->g);
            b->file = file, b->line = line;
            continue;
        }
        if (!m || m == n)
            continue;
        if (!ir_type_same(&m->type, &n->type)) {
            char t1[IR_TYPE_BUF], t2[IR_TYPE_BUF];
            return ps_b_fail(b, "rule %s changed the type from %s to %s (a bug in the rule)",
                             r->name, ir_type_fmt(&n->type, t1, sizeof t1),
                             ir_type_fmt(&m->type, t2, sizeof t2));
        }
        *which = r;
        return m;
    }
    return n;
}

static ir_node *rule_hook(ps_builder *b, const ir_node *old, ir_node *const *in, void *ctx)
{
    driver *d = ctx;
    ir_attrs a;
    ir_node_attrs(old, &a);
    ir_node *n = ps_b_op(b, old->op, in, old->nin, &a);
    for (int k = 0; n && !ir_node_is_input(n); k++) {
        const ps_rule *r = NULL;
        ir_node *m = apply_once(d, b, n, &r);
        if (!m || m == n)
            return m;
        if (k == d->max_per_node) {
            d->looping = true;
            return ps_b_fail(b, "no fixed point: rule %s still rewrites one node after %d "
                                "rewrites (a rule table that loops?)",
                             r->name, d->max_per_node);
        }
        log_rewrite(d, r, n, m);
        d->counts[r - d->rules]++;
        d->fired++;
        d->last = r->name;
        n = m;
    }
    return n;
}

static void log_summary(const driver *d, int sweeps)
{
    if (!d->log)
        return;
    int total = 0;
    for (int k = 0; k < d->nrules; k++)
        total += d->counts[k];
    fprintf(d->log, "%s: %d sweep%s, %d rewrite%s", d->pass, sweeps, sweeps == 1 ? "" : "s",
            total, total == 1 ? "" : "s");
    const char *sep = " (";
    for (int k = 0; k < d->nrules; k++)
        if (d->counts[k]) {
            fprintf(d->log, "%s%s %d", sep, d->rules[k].name, d->counts[k]);
            sep = ", ";
        }
    fprintf(d->log, "%s\n", total ? ")" : "");
}

static FILE *default_log(void)
{
    const char *v = getenv("TJIT_DEBUG_RULES");
    return v && *v && strcmp(v, "0") != 0 ? stderr : NULL;
}

ir_graph *ps_rewrite(ir_graph *g, const ps_rule *rules, int nrules, const ps_rewrite_opts *opts,
                     char *err, size_t nerr)
{
    ps_rewrite_opts o = opts ? *opts : (ps_rewrite_opts){0};
    driver d = {rules, nrules, o.pass ? o.pass : "rewrite",
                o.max_per_node > 0 ? o.max_per_node : DEFAULT_PER_NODE, 0,
                o.log ? o.log : default_log(), 0, calloc((size_t)nrules + 1, sizeof(int)),
                NULL, false};
    int max_sweeps = o.max_sweeps > 0 ? o.max_sweeps : DEFAULT_SWEEPS;
    if (!d.counts) {
        snprintf(err, nerr, "out of memory");
        return NULL;
    }
    ir_graph *cur = g;
    for (d.sweep = 1;; d.sweep++) {
        if (d.sweep > max_sweeps) {
            snprintf(err, nerr, "no fixed point after %d sweeps (rule %s still fires)",
                     max_sweeps, d.last);
            goto fail;
        }
        d.fired = 0;
        ir_graph *next = ps_rebuild(cur, NULL, rule_hook, &d, err, nerr);
        if (!next)
            goto fail;
        if (d.fired == 0) {   /* the fixed point: keep cur, the graph before this sweep */
            ir_graph_free(next);
            break;
        }
        if (cur != g)
            ir_graph_free(cur);
        cur = next;
        if ((next = ps_dce(cur, err, nerr)) == NULL)   /* no rules on dead nodes */
            goto fail;
        if (next != cur)
            ir_graph_free(cur);
        cur = next;
    }
    log_summary(&d, d.sweep);
    free(d.counts);
    ir_graph *h = ps_dce(cur, err, nerr);
    if (h != cur && cur != g)
        ir_graph_free(cur);
    return h;
fail:
    free(d.counts);
    if (cur != g)
        ir_graph_free(cur);
    return NULL;
}
