/* keep.c - values of a compiled graph that depend only on captured weights,
 * computed once and kept with the entry across calls (issues 13 and 18).
 *
 * Under tj_autocast(TJ_BF16) a linear on an f32 weight casts the weight to
 * bf16 on every call: 8 MB read and 4 MB written for a 2048x1024 weight, and
 * the bf16 GEMM cannot keep its packed copy since the cast weight is a fresh
 * tensor each call. The nodes of the traced graph that read only captures
 * (no argument) and do pointwise or move work (casts, transposes made
 * contiguous, scalings) are split off into a prologue graph; the entry's
 * graph reads the prologue's outputs, the kept values, as inputs after the
 * captures:
 *
 *   graph(x, w1, b1)                    prologue(w1, b1)    run(x, w1, b1, k0, k1)
 *     c = cast w1 bf16        ->          k0 = cast w1        y = linear xb, k0, k1
 *     d = cast b1 bf16                    k1 = cast b1
 *     y = linear xb, c, d
 *
 * The prologue runs (as compiled code, like any plan) on the first call and
 * again on a call where a capture it reads has changed: each source's
 * storage serial and stamp (version + tj_data count, as runtime/k_matmul.c
 * keys packed weights) are recorded when the values are computed and
 * compared on every call, so a weight written in place between calls gives
 * the right answer. Candidates: nodes whose inputs are captures (not
 * written back by this graph, over memory with a serial), candidates and
 * constants; of the ops that move or compute elementwise (views, casts,
 * copies, pointwise, reductions), never GEMMs, random ops or as_strided.
 * Walking back from the outputs, the first candidate on each path is kept
 * unless it is an output (the caller may write into a result), a bare view
 * or larger than the captures it reads. TJIT_KEEP_WEIGHT_VALUES=0 turns it
 * off (for measuring); tj_compile_options.freeze folds instead (freeze.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dump.h"
#include "../runtime/iter.h"
#include "../sched/exec.h"
#include "compiled.h"

struct fe_keep {
    ir_graph *pro;         /* sources -> kept values */
    ir_graph *run;         /* the entry's graph: args, captures, kept values */
    sc_plan_set *plans;    /* pro's */
    int *last_use;         /* pro's, for the graph executor */
    int nsrc, n;
    int *src;              /* per prologue input: its capture index */
    uint64_t *serial;      /* per source: its storage and stamp when computed */
    unsigned *stamp;
    tj_tensor **vals;      /* the kept values */
    bool valid;            /* vals are those of the recorded stamps */
    char **what;           /* per kept value: a line for explain */
    int64_t bytes;
    pthread_mutex_t lock;
    atomic_ulong runs;     /* computations of the values */
};

/* Ops whose value may be kept: functional, deterministic, no GEMM. */
static bool keepable_op(ir_op op)
{
    if (op == OP_as_strided)
        return false;
    switch (ir_ops[op].kind) {
    case IR_UNARY: case IR_BINARY: case IR_TERNARY: case IR_POINTWISE:
    case IR_REDUCE: case IR_VIEW: case IR_MOVE:
        return true;
    default:
        return false;
    }
}

/* A constant node: no inputs, not random, static shape. */
static bool pure_const(const ir_node *n)
{
    return !ir_node_is_input(n) && n->nin == 0 && ir_ops[n->op].kind == IR_CREATE && !ir_type_has_sym(&n->type);
}

void fe_keep_free(fe_keep *k)
{
    if (!k)
        return;
    for (int i = 0; k->vals && i < k->n; i++)
        tj_release(k->vals[i]);
    for (int i = 0; k->what && i < k->n; i++)
        free(k->what[i]);
    free(k->vals);
    free(k->what);
    sc_plans_free(k->plans);
    free(k->last_use);
    free(k->src);
    free(k->serial);
    free(k->stamp);
    ir_graph_free(k->pro);
    ir_graph_free(k->run);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

/* Copies g's nodes marked in part (by slot) into out, in order, their
 * inputs mapped through map (slot -> node of out), which gets the copies. */
static int copy_nodes(ir_graph *out, const ir_graph *g, const bool *part, ir_node **map)
{
    ir_node *in[FE_MAX_INPUTS];
    for (int s = g->ninputs; s < ir_nslots(g); s++) {
        const ir_node *n = g->nodes[s - g->ninputs];
        if (!part[s])
            continue;
        for (int i = 0; i < n->nin; i++)
            in[i] = n->in[i] ? map[ir_slot(g, n->in[i])] : NULL;
        ir_attrs at;
        ir_node_attrs(n, &at);
        if (!(map[s] = ir_graph_add(out, n->op, in, n->nin, &at)))
            return -1;
    }
    return 0;
}

/* The selection on g (a walk back from the outputs): kept[s] for the kept
 * values, pro[s] for the nodes the prologue computes (the kept values and
 * what they read), run[s] for those the run graph computes. Returns the
 * count of kept values, or -1. */
static int select_nodes(const ir_graph *g, const bool *source, bool *kept, bool *pro, bool *run)
{
    int ns = ir_nslots(g), ni = g->ninputs, nk = 0;
    int64_t *srcb = calloc((size_t)ns + 1, sizeof *srcb);   /* bytes of the captures read */
    bool *cand = calloc((size_t)ns + 1, sizeof *cand), *out = calloc((size_t)ns + 1, sizeof *out);
    if (!srcb || !cand || !out) {
        free(srcb);
        free(cand);
        free(out);
        return -1;
    }
    /* cand: computable from sources (and constants) alone, by an op that may be kept */
    for (int k = 0; k < ni; k++)
        srcb[k] = source[k] ? ir_type_bytes(&g->inputs[k]->type) : 0;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        bool ok = keepable_op(n->op) && !ir_type_has_sym(&n->type) && !n->type.weak, w = false;
        for (int i = 0; ok && i < n->nin; i++) {
            if (!n->in[i])
                continue;
            int s = ir_slot(g, n->in[i]);
            bool from_w = s < ni ? source[s] : cand[s];
            ok = from_w || pure_const(n->in[i]);
            w |= from_w;
            srcb[ni + k] += from_w ? srcb[s] : 0;
        }
        cand[ni + k] = ok && w;
    }
    /* back from the outputs (results and write-backs: made per call, the
     * caller may write into a result): the first candidate reached on a
     * path is kept unless it is a bare view (its input may be kept instead)
     * or larger than what it reads (a broadcast weight stays per call) */
    for (int k = 0; k < g->noutputs; k++)
        out[ir_slot(g, g->outputs[k])] = run[ir_slot(g, g->outputs[k])] = true;
    for (int s = ns - 1; s >= ni; s--) {
        const ir_node *n = g->nodes[s - ni];
        if (!run[s])
            continue;
        if (cand[s] && !out[s] && ir_ops[n->op].kind != IR_VIEW && ir_type_bytes(&n->type) <= srcb[s]) {
            run[s] = false;
            kept[s] = pro[s] = true;
            nk++;
            continue;
        }
        for (int i = 0; i < n->nin; i++)
            if (n->in[i])
                run[ir_slot(g, n->in[i])] = true;
    }
    for (int s = ns - 1; s >= ni; s--)   /* what the kept values read */
        for (int i = 0; pro[s] && i < g->nodes[s - ni]->nin; i++)
            if (g->nodes[s - ni]->in[i])
                pro[ir_slot(g, g->nodes[s - ni]->in[i])] = true;
    free(srcb);
    free(cand);
    free(out);
    return nk;
}

/* The explain line of kept value v (node n of g): its type, op and the
 * captures it reads. */
static char *describe(const ir_graph *g, const ir_node *n, const bool *pro, int nargs)
{
    int ns = ir_nslots(g);
    bool *reach = calloc((size_t)ns + 1, sizeof *reach);
    if (!reach)
        return NULL;
    reach[ir_slot(g, n)] = true;
    for (int k = ir_slot(g, n); k >= g->ninputs; k--) {
        const ir_node *m = g->nodes[k - g->ninputs];
        for (int i = 0; reach[k] && pro[k] && i < m->nin; i++)
            if (m->in[i])
                reach[ir_slot(g, m->in[i])] = true;
    }
    char t[IR_TYPE_BUF], caps[160] = "";
    size_t len = 0;
    for (int k = nargs; k < g->ninputs && len < sizeof caps - 16; k++)
        if (reach[k])
            len += (size_t)snprintf(caps + len, sizeof caps - len, "%s%d", len ? ", " : "", k - nargs);
    free(reach);
    char *s = NULL;
    if (asprintf(&s, "%s = %s of captured tensor%s %s", ir_type_fmt(&n->type, t, sizeof t),
                 ir_ops[n->op].name, strchr(caps, ',') ? "s" : "", caps) < 0)
        return NULL;
    return s;
}

/* Builds the prologue and run graphs of k from g (inputs: nargs arguments,
 * then the captures), as select_nodes chose. 0 or -1. */
static int build(fe_keep *k, const ir_graph *g, int nargs, const bool *kept, const bool *pro,
                 const bool *run)
{
    int ns = ir_nslots(g), ni = g->ninputs;
    ir_node **pm = calloc((size_t)ns + 1, sizeof *pm), **rm = calloc((size_t)ns + 1, sizeof *rm);
    ir_node **po = calloc((size_t)k->n + 1, sizeof *po), **ro = calloc((size_t)g->noutputs + 1, sizeof *ro);
    k->src = calloc((size_t)ni + 1, sizeof *k->src);
    k->what = calloc((size_t)k->n + 1, sizeof *k->what);
    int rc = -1;
    if (!pm || !rm || !po || !ro || !k->src || !k->what)
        goto out;
    for (int s = 0; s < ni; s++) {   /* every input as traced; the sources the prologue reads */
        const ir_node *in = g->inputs[s];
        if (!(rm[s] = ir_graph_input(k->run, in->name, &in->type, in->param)))
            goto out;
        if (pro[s]) {
            k->src[k->nsrc++] = s - nargs;
            if (!(pm[s] = ir_graph_input(k->pro, NULL, &in->type, true)))
                goto out;
        }
    }
    if (copy_nodes(k->pro, g, pro, pm) != 0)   /* the prologue */
        goto out;
    for (int s = ni, v = 0; s < ns; s++)   /* the kept values: inputs of the run graph */
        if (kept[s]) {
            const ir_node *n = g->nodes[s - ni];
            po[v] = pm[s];
            if (!(rm[s] = ir_graph_input(k->run, NULL, &n->type, true)) ||
                !(k->what[v++] = describe(g, n, pro, nargs)))
                goto out;
            k->bytes += ir_type_bytes(&n->type);
        }
    if (copy_nodes(k->run, g, run, rm) != 0)   /* the rest, as traced */
        goto out;
    for (int j = 0; j < g->noutputs; j++)
        ro[j] = rm[ir_slot(g, g->outputs[j])];
    if (ir_graph_set_outputs(k->pro, po, k->n) != 0 || ir_graph_set_outputs(k->run, ro, g->noutputs) != 0)
        goto out;
    rc = 0;
out:
    free(pm);
    free(rm);
    free(po);
    free(ro);
    return rc;
}

/* TJIT_DUMP=keep: the kept values and the prologue that makes them. */
static void dump_keep(const fe_keep *k, const char *name)
{
    if (!ir_dump_enabled(NULL, "keep"))
        return;
    char *buf = NULL, *pro = ir_print(k->pro, NULL);
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (o) {
        for (int v = 0; v < k->n; v++)
            fprintf(o, "kept across calls: value %d: %s\n", v, k->what[v]);
        fprintf(o, "%s", pro ? pro : "");
        if (fclose(o) == 0)
            ir_dump_text("keep", name, buf);
    }
    free(buf);
    free(pro);
}

static int keep_new(const ir_graph *g, int nargs, tj_tensor *const *caps, int ncaps, const bool *written,
                    const char *name, fe_keep **out)
{
    *out = NULL;
    const char *env = getenv("TJIT_KEEP_WEIGHT_VALUES");
    if ((env && !strcmp(env, "0")) || g->ninputs != nargs + ncaps)
        return 0;
    int ns = ir_nslots(g);
    bool *source = calloc((size_t)ns + 1, sizeof *source), *kept = calloc((size_t)ns + 1, sizeof *kept);
    bool *pro = calloc((size_t)ns + 1, sizeof *pro), *run = calloc((size_t)ns + 1, sizeof *run);
    fe_keep *k = NULL;
    int rc = -1, nf = -1;
    if (!source || !kept || !pro || !run)
        goto out;
    for (int c = 0; c < ncaps; c++)   /* a weight over borrowed memory has no serial: not tracked */
        source[nargs + c] = g->inputs[nargs + c]->param && !written[c] && caps[c]->storage &&
                            caps[c]->storage->serial != 0;
    if ((nf = select_nodes(g, source, kept, pro, run)) <= 0) {
        rc = nf < 0 ? -1 : 0;
        goto out;
    }
    if (!(k = calloc(1, sizeof *k)))
        goto out;
    pthread_mutex_init(&k->lock, NULL);
    k->n = nf;
    char pname[96];
    snprintf(pname, sizeof pname, "%s_kept", g->name);
    if (!(k->pro = ir_graph_new(pname)) || !(k->run = ir_graph_new(g->name)) ||
        build(k, g, nargs, kept, pro, run) != 0)
        goto out;
    k->serial = calloc((size_t)k->nsrc + 1, sizeof *k->serial);
    k->stamp = calloc((size_t)k->nsrc + 1, sizeof *k->stamp);
    k->vals = calloc((size_t)k->n + 1, sizeof *k->vals);
    if (!k->serial || !k->stamp || !k->vals || !(k->last_use = sc_exec_last_use(k->pro)) ||
        !(k->plans = sc_plans_new(k->pro, pname)))
        goto out;
    dump_keep(k, name);
    *out = k;
    k = NULL;
    rc = 0;
out:
    if (rc < 0 && !rt_has_error())
        rt_error("%s: keeping weight-only values: out of memory", name);
    fe_keep_free(k);
    free(source);
    free(kept);
    free(pro);
    free(run);
    return rc;
}

int fe_keep_entry(entry *e, const char *name)
{
    e->keep = NULL;
    tj_tensor *few[64], **caps = e->ncaps <= 64 ? few : malloc(sizeof *caps * (size_t)e->ncaps);
    bool *written = calloc((size_t)e->ncaps + 1, sizeof *written);
    int rc = -1;
    if (caps && written) {
        for (int c = 0; c < e->ncaps; c++)
            caps[c] = e->caps[c].t;
        for (int w = 0; w < e->nwrites; w++)   /* written back by the graph: read per call */
            if (e->write_ref[w] >= 0 && e->write_ref[w] < e->ncaps)
                written[e->write_ref[w]] = true;
        rc = keep_new(e->g, e->nargs, caps, e->ncaps, written, name, &e->keep);
    }
    if (caps != few)
        free(caps);
    free(written);
    if (rc != 0)   /* an optimization: the graph runs as traced */
        tj_clear_error();
    return 0;
}

const ir_graph *fe_keep_run_graph(const entry *e) { return e->keep ? e->keep->run : e->g; }

int fe_keep_count(const fe_keep *k) { return k ? k->n : 0; }

/* Whether the values are those of the captures now. */
static bool fresh(const fe_keep *k, tj_tensor *const *caps)
{
    if (!k->valid)
        return false;
    for (int i = 0; i < k->nsrc; i++) {
        const rt_storage *st = caps[k->src[i]]->storage;
        if (st->serial != k->serial[i] || rt_storage_stamp(st) != k->stamp[i])
            return false;
    }
    return true;
}

int fe_keep_values(fe_keep *k, tj_tensor *const *caps, tj_tensor **out)
{
    pthread_mutex_lock(&k->lock);
    int rc = 0;
    if (!fresh(k, caps)) {
        tj_tensor *few[16], **in = k->nsrc <= 16 ? few : malloc(sizeof *in * (size_t)k->nsrc);
        tj_tensor **vals = calloc((size_t)k->n + 1, sizeof *vals);
        rc = in && vals ? 0 : -1;
        for (int i = 0; rc == 0 && i < k->nsrc; i++) {
            in[i] = caps[k->src[i]];
            k->serial[i] = in[i]->storage->serial;   /* before: a write while it runs shows next call */
            k->stamp[i] = rt_storage_stamp(in[i]->storage);
        }
        if (rc == 0 && (rc = sc_plans_run(k->plans, in, vals)) > 0)
            rc = sc_exec(k->pro, in, k->last_use, vals);
        if (rc == 0) {
            for (int v = 0; v < k->n; v++) {
                tj_release(k->vals[v]);
                k->vals[v] = vals[v];
            }
            atomic_fetch_add(&k->runs, 1);
        } else if (!rt_has_error()) {
            rt_error("kept weight values: out of memory");
        }
        k->valid = rc == 0;   /* else computed again next call */
        if (in != few)
            free(in);
        free(vals);
    }
    for (int v = 0; rc == 0 && v < k->n; v++)
        out[v] = tj_retain(k->vals[v]);
    pthread_mutex_unlock(&k->lock);
    return rc == 0 ? 0 : -1;
}

int fe_keep_unalias(const fe_keep *k, tj_tensor *const *vals, tj_tensor **outs, int nresults)
{
    for (int r = 0; r < nresults; r++)
        for (int v = 0; v < k->n; v++)
            if (outs[r] && outs[r]->storage == vals[v]->storage) {
                /* a result the caller may write into: its own copy */
                tj_tensor *c = rt_tensor_new(outs[r]->dtype, outs[r]->ndim, outs[r]->shape);
                if (!c || rt_convert(c, outs[r]) != 0) {
                    tj_release(c);
                    return -1;
                }
                tj_release(outs[r]);
                outs[r] = c;
                break;
            }
    return 0;
}

void fe_keep_explain(FILE *f, const fe_keep *k)
{
    unsigned long runs = atomic_load(&k->runs);
    fprintf(f, "    keeps %d weight-only value%s across calls (%.1f MB), computed %lu time%s; "
               "again when a captured tensor it reads changes\n",
            k->n, k->n == 1 ? "" : "s", (double)k->bytes / (1 << 20), runs, runs == 1 ? "" : "s");
    for (int v = 0; v < k->n; v++)
        fprintf(f, "    kept value %d: %s\n", v, k->what[v]);
}
