/* inspect_graph.c - the graph half of the inspection API (tjit_inspect.h):
 * a tj_graph handle around an ir_graph, parsed from text, printed, rewritten
 * by a pass pipeline, shown fused, dumped, and run eagerly (sched/exec.c) or
 * compiled (sched/plan.c). What `tjit opt` and `tjit run` are built on. */
#include <stdlib.h>
#include <string.h>

#include <tjit_inspect.h>

#include "fe.h"
#include "../ir/dump.h"
#include "../passes/fuse.h"
#include "../passes/pass.h"
#include "../sched/exec.h"
#include "../sched/sched.h"

struct tj_graph {
    ir_graph *g;   /* owned; replaced by tj_graph_run_passes */
};

/* The graph of h, or NULL with an error naming the function. */
static const ir_graph *graph_of(const tj_graph *h, const char *fn)
{
    if (!h)
        rt_error("%s: the graph is NULL", fn);
    return h ? h->g : NULL;
}

tj_graph *tj_graph_parse(const char *text, size_t len, const char *file)
{
    if (!text) {
        rt_error("tj_graph_parse: the text is NULL");
        return NULL;
    }
    tj_graph *h = malloc(sizeof *h);
    if (!h) {
        rt_error("tj_graph_parse: out of memory");
        return NULL;
    }
    char err[2048];
    h->g = ir_parse(text, len, file, err, sizeof err);
    if (!h->g) {
        rt_error("%s", err);
        free(h);
        return NULL;
    }
    return h;
}

void tj_graph_free(tj_graph *h)
{
    if (!h)
        return;
    ir_graph_free(h->g);
    free(h);
}

char *tj_graph_print(const tj_graph *h)
{
    const ir_graph *g = graph_of(h, "tj_graph_print");
    char *text = g ? ir_print(g, NULL) : NULL;
    if (g && !text)
        rt_error("tj_graph_print: out of memory");
    return text;
}

const char *tj_graph_name(const tj_graph *h)
{
    const ir_graph *g = graph_of(h, "tj_graph_name");
    return g ? g->name : NULL;
}

int tj_graph_num_inputs(const tj_graph *h)
{
    const ir_graph *g = graph_of(h, "tj_graph_num_inputs");
    return g ? g->ninputs : -1;
}

int tj_graph_num_outputs(const tj_graph *h)
{
    const ir_graph *g = graph_of(h, "tj_graph_num_outputs");
    return g ? g->noutputs : -1;
}

int tj_graph_input_info(const tj_graph *h, int k, tj_graph_input *out)
{
    const ir_graph *g = graph_of(h, "tj_graph_input_info");
    if (!g)
        return -1;
    if (k < 0 || k >= g->ninputs) {
        rt_error("tj_graph_input_info: graph @%s has %d inputs, no input %d", g->name,
                 g->ninputs, k);
        return -1;
    }
    const ir_node *in = g->inputs[k];
    _Static_assert(sizeof out->type >= IR_TYPE_BUF, "tj_graph_input.type fits any type");
    memset(out, 0, sizeof *out);
    out->name = in->name;
    out->dtype = in->type.dtype;
    out->ndim = in->type.ndim;
    out->param = in->param;
    for (int d = 0; d < in->type.ndim; d++) {
        out->shape[d] = in->type.shape[d];
        out->symbolic |= IR_IS_SYM(in->type.shape[d]);
    }
    ir_type_fmt(&in->type, out->type, sizeof out->type);
    return 0;
}

/* ---- passes ------------------------------------------------------------------ */

int tj_pass_count(void)
{
    int n = 0;
    while (ps_passes[n].name)
        n++;
    return n;
}

const char *tj_pass_name(int k) { return k >= 0 && k < tj_pass_count() ? ps_passes[k].name : NULL; }

const char *tj_pass_help(int k) { return k >= 0 && k < tj_pass_count() ? ps_passes[k].help : NULL; }

int tj_graph_run_passes(tj_graph *h, const char *pipeline, const char *dump_after)
{
    if (!graph_of(h, "tj_graph_run_passes"))
        return -1;
    char err[1024];
    ps_options opt = {.verify = true, .dump_after = dump_after};
    ir_graph *r = ps_run_pipeline(h->g, pipeline ? pipeline : "", &opt, err, sizeof err);
    if (!r) {
        rt_error("%s", err);
        return -1;
    }
    if (r != h->g) {   /* the pipeline made a new graph: it replaces ours */
        ir_graph_free(h->g);
        h->g = r;
    }
    return 0;
}

/* ---- fusion and dumps -------------------------------------------------------------- */

char *tj_graph_print_fused(const tj_graph *h)
{
    const ir_graph *g = graph_of(h, "tj_graph_print_fused");
    if (!g)
        return NULL;
    char err[256];
    ir_fusion *f = ps_fuse(g, err, sizeof err);
    char *text = f ? ir_fusion_print(f) : NULL;
    if (!text)
        rt_error("%s", f ? "out of memory" : err);
    ir_fusion_free(f);
    return text;
}

bool tj_dump_enabled(const char *stages, const char *stage)
{
    return stage && ir_dump_enabled(stages, stage);
}

int tj_dump_check(const char *stages)
{
    char why[1024];
    if (!stages || ir_dump_check(stages, why, sizeof why) == 0)
        return 0;
    rt_error("%s", why);
    return -1;
}

int tj_graph_dump(const tj_graph *h, const char *stages)
{
    const ir_graph *g = graph_of(h, "tj_graph_dump");
    if (!g)
        return -1;
    if (!ir_dump_enabled(stages, "graph"))
        return 0;
    char *text = ir_print(g, NULL);
    int rc = text ? ir_dump_text("graph", g->name, text) : -1;
    free(text);
    if (rc != 0)
        rt_error("tj_graph_dump: cannot write the dump of graph @%s", g->name);
    return rc;
}

/* ---- running ----------------------------------------------------------------------- */

/* Where a symbol of the graph's input types was first bound. */
typedef struct sym_binding {
    int64_t sym, size;
    int input, dim;
} sym_binding;

static int input_mismatch(const ir_graph *g, int k, const tj_tensor *t, const char *why)
{
    char want[IR_TYPE_BUF], got[IR_TYPE_BUF];
    rt_error("tj_graph_run: input %%%s of graph @%s: expected %s, got %s%s%s", g->inputs[k]->name,
             g->name, ir_type_fmt(&g->inputs[k]->type, want, sizeof want),
             tj_describe(t, got, sizeof got), why[0] ? ": " : "", why);
    return -1;
}

/* Each input against its declared type: the dtype, the rank, every static
 * size, and one size per symbol wherever it appears (in any input). */
static int check_inputs(const ir_graph *g, tj_tensor *const *inputs)
{
    if (rt_check_live(inputs, g->ninputs, "tj_graph_run") != 0)
        return -1;
    sym_binding *b = malloc(((size_t)g->ninputs * TJ_MAX_DIMS + 1) * sizeof *b);
    if (!b) {
        rt_error("tj_graph_run: out of memory");
        return -1;
    }
    int nb = 0, rc = 0;
    for (int k = 0; k < g->ninputs && rc == 0; k++) {
        const ir_type *ty = &g->inputs[k]->type;
        const tj_tensor *t = inputs[k];
        if (t->sym) {
            rc = input_mismatch(g, k, t, "a symbolic (traced) tensor has no values");
            break;
        }
        if (t->dtype != ty->dtype || t->ndim != ty->ndim) {
            rc = input_mismatch(g, k, t, t->dtype != ty->dtype ? "the dtype differs"
                                                               : "the rank differs");
            break;
        }
        for (int d = 0; d < ty->ndim && rc == 0; d++) {
            int64_t want = ty->shape[d], got = t->shape[d];
            if (!IR_IS_SYM(want)) {
                if (got != want) {
                    char why[96];
                    snprintf(why, sizeof why, "dim %d is %lld, not %lld", d, (long long)got,
                             (long long)want);
                    rc = input_mismatch(g, k, t, why);
                }
                continue;
            }
            /* sK+C binds sK to the size less C: s0 and s0-1 are one symbol */
            int64_t sym = ir_sym_index(want), size = got - ir_sym_delta(want);
            int j = 0;
            while (j < nb && b[j].sym != sym)
                j++;
            if (size < 0) {
                char why[128];
                snprintf(why, sizeof why, "dim %d is %lld, less than %s's offset", d, (long long)got,
                         IR_DIM(want));
                rc = input_mismatch(g, k, t, why);
            } else if (j == nb) {
                b[nb++] = (sym_binding){sym, size, k, d};
            } else if (b[j].size != size) {
                char why[256], as[IR_DIM_BUF + 8] = "";
                if (ir_sym_delta(want))
                    snprintf(as, sizeof as, " (as %s)", IR_DIM(want));
                snprintf(why, sizeof why, "s%lld is %lld (dim %d of %%%s) but dim %d is %lld%s",
                         (long long)sym, (long long)b[j].size, b[j].dim, g->inputs[b[j].input]->name,
                         d, (long long)got, as);
                rc = input_mismatch(g, k, t, why);
            }
        }
    }
    free(b);
    return rc;
}

int tj_graph_run(const tj_graph *h, tj_tensor *const *inputs, tj_tensor **outs, bool eager)
{
    const ir_graph *g = graph_of(h, "tj_graph_run");
    if (!g)
        return -1;
    for (int k = 0; k < g->ninputs; k++)
        if (!inputs || !inputs[k]) {
            rt_error("tj_graph_run: input %%%s of graph @%s is NULL", g->inputs[k]->name, g->name);
            return -1;
        }
    if (check_inputs(g, inputs) != 0)
        return -1;
    sc_plan_set *ps = eager ? NULL : sc_plans_new(g, g->name);
    int rc = sc_plans_run(ps, inputs, outs);   /* 1: not compiled, use the executor */
    sc_plans_free(ps);
    int *last = rc > 0 ? sc_exec_last_use(g) : NULL;
    if (rc > 0 && !last)
        rt_error("tj_graph_run: out of memory");
    if (rc > 0)
        rc = last ? sc_exec(g, inputs, last, outs) : -1;
    free(last);
    if (rc != 0)
        return -1;
    for (int k = 0; k < g->noutputs; k++)
        rt_own(outs[k]);
    return 0;
}
