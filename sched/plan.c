/* plan.c - a captured graph run as compiled kernels and eager calls (sched.h).
 *
 * The pipeline, from a traced graph to a runnable plan: one named step a
 * line, in the table `pipeline` below. TJIT_DUMP=<step> prints what a step
 * made (an older stage name, in brackets, prints the same).
 *
 *   once per graph, at the first call
 *     fold_quant         dequantize -> linear/matmul/conv2d -> quantize: int8 passes/fold_quant.c
 *     decompose_codegen  composites -> prims (sdpa and pointwise rows kept)  passes/decompose.c
 *     simplify           folding, algebra, view and cast cleanups            passes/simplify.c
 *     merge_matmuls      small independent matmuls on one right operand
 *                        into one taller one (TJIT_MERGE_MATMULS=0: off)     passes/merge_mm.c
 *     split_reductions   long reductions to few results in two; reduced
 *                        dims last                                          passes/split.c
 *     dce                dead nodes dropped: the prims [prims]               passes/dce.c
 *     fuse               groups: kernels, eager calls, views [fused]         passes/fuse.c
 *     jit                LLVM started if a group is a kernel                 codegen/jit.c
 *   per input signature (shapes, strides)
 *     types              the concrete type of every value                    sched/plan.c
 *     lower              groups in order -> steps: kernel (cg_lower) |
 *                        eager call | view; geometry of every value          sched/plan.c, codegen/lower.c
 *     regions            blocked regions: a GEMM and its epilogue by block   sched/block.c
 *     inplace            outputs stored into the inputs they are written
 *                        back to; kernels storing over an input dying
 *                        there                                               sched/reinplace.c, mem.c
 *     compile            kernels -> code, in parallel, through the kernel
 *                        cache [kernels; llvm, asm]; a kernel that fails
 *                        makes its group eager: lower again, once            codegen/jit.c
 *     memory             lifetimes, buffers, arena offsets [plan]            sched/mem.c
 *
 *   run: take the call's arena; each step writes its buffers (eager kernels
 *        too), a region runs its blocks in parallel; outputs get their own
 *        memory, handed to the caller, except those stored into inputs
 *        (sc_plans_set_into), by the last steps
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../passes/pass.h"
#include "../ir/dump.h"
#include "sched_int.h"

#define SC_MAX_PLANS 8

struct sc_plan_set {
    pthread_mutex_t mu;
    const ir_graph *src;
    char name[64];
    bool prepared, unavailable;
    double prepare_ms;    /* the once-per-graph steps */
    char why[512];
    ir_graph *prims;
    ir_fusion *fusion;
    sc_plan *plans[SC_MAX_PLANS];
    int nplans;
    int *into;            /* per output: the input it may be stored into (sc_plans_set_into) */
    sc_plan_info info;
    sc_plan_mem mem;
    rt_prof_id prof_name;   /* "@name", for the profiler */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

bool sc_backend_llvm(void)
{
    const char *b = getenv("TJIT_BACKEND");
    return !b || strcmp(b, "eager") != 0;
}

/* ---- the plan set ------------------------------------------------------------------------ */

sc_plan_set *sc_plans_new(const ir_graph *g, const char *name)
{
    sc_plan_set *ps = calloc(1, sizeof *ps);
    if (!ps)
        return NULL;
    pthread_mutex_init(&ps->mu, NULL);
    ps->src = g;
    snprintf(ps->name, sizeof ps->name, "%s", name);
    char pn[80];
    snprintf(pn, sizeof pn, "@%s", name);
    ps->prof_name = rt_prof_name(pn);
    return ps;
}

static void no_tiles(char **bufs, int64_t begin, int64_t end, const int64_t *sz);

/* Frees the steps, giving their kernels back to the JIT (which may unload them). */
static void free_steps(sc_plan *p)
{
    for (int i = 0; i < p->nsteps; i++) {
        if (p->steps[i].fn != no_tiles)
            cg_jit_release(p->steps[i].fn);
        free(p->steps[i].launch);
    }
    free(p->steps);
    p->steps = NULL;
    p->nsteps = 0;
}

static void plan_free(sc_plan *p)
{
    if (!p)
        return;
    free_steps(p);
    free(p->types);
    free(p->in_strides);
    free(p->geom);
    free(p->last_use);
    free(p->rel_start);
    free(p->rel);
    free(p->epi);
    free(p->cpost);
    sc_mem_free(p);
    free(p);
}

void sc_plans_free(sc_plan_set *ps)
{
    if (!ps)
        return;
    for (int i = 0; i < ps->nplans; i++)
        plan_free(ps->plans[i]);
    ir_fusion_free(ps->fusion);
    free(ps->into);
    if (ps->prims != ps->src)
        ir_graph_free(ps->prims);
    pthread_mutex_destroy(&ps->mu);
    free(ps);
}

/* ---- building a plan ------------------------------------------------------------------------ */

static step *add_step(builder *b, skind kind, int node, int group)
{
    sc_plan *p = b->p;
    if (p->nsteps == b->cap) {
        int cap = b->cap ? 2 * b->cap : 32;
        step *s = realloc(p->steps, (size_t)cap * sizeof *s);
        if (!s) {
            b->failed = true;
            return NULL;
        }
        p->steps = s;
        b->cap = cap;
    }
    step *s = &p->steps[p->nsteps++];
    *s = (step){kind, node, group, NULL, NULL, -1, 0, {{0}}, 0, 0, 0};
    return s;
}

static void contiguous_geom(sc_plan *p, int slot)
{
    cg_geom *ge = &p->geom[slot];
    ge->base = slot;
    ge->offset = 0;
    rt_contiguous_strides(p->types[slot].ndim, p->types[slot].shape, ge->strides);
}

/* The geometry of view node v from its input's: the runtime's own view
 * arithmetic on a tensor header without storage. */
static void view_geom(builder *b, const ir_node *v)
{
    sc_plan *p = b->p;
    int in = ir_slot(b->g, v->in[0]), out = ir_slot(b->g, v);
    const cg_geom *gi = &p->geom[in];
    p->geom[out].base = -1;
    if (gi->base < 0)
        return;
    tj_tensor x = {.magic = RT_LIVE, .refs = 1, .dtype = p->types[in].dtype, .ndim = p->types[in].ndim, .offset = gi->offset};
    memcpy(x.shape, p->types[in].shape, sizeof x.shape);
    memcpy(x.strides, gi->strides, sizeof x.strides);
    ir_attrs a;
    ir_node_attrs(v, &a);
    bool copy = false;
    tj_tensor *t = rt_view_op(v->op, &x, &a, &p->types[out], &copy);
    if (!t) {   /* a reshape or as_strided that needs a copy: an eager step copies, then views */
        contiguous_geom(p, out);
        x.offset = 0;
        rt_contiguous_strides(x.ndim, x.shape, x.strides);
        if ((t = rt_view_op(v->op, &x, &a, &p->types[out], &copy))) {   /* as_strided's own strides */
            memcpy(p->geom[out].strides, t->strides, sizeof t->strides);
            tj_release(t);
        }
        add_step(b, S_EAGER, v->id, b->f->group_of[v->id]);
        b->done[out] = true;
        return;
    }
    p->geom[out] = (cg_geom){gi->base, t->offset, {0}};
    memcpy(p->geom[out].strides, t->strides, sizeof t->strides);
    tj_release(t);
    add_step(b, S_VIEW, v->id, b->f->group_of[v->id]);
    b->done[out] = true;
}

static void eager_node(builder *b, int k)
{
    int slot = ir_slot(b->g, b->g->nodes[k]);
    if (b->done[slot])
        return;
    if (ir_ops[b->g->nodes[k]->op].kind == IR_VIEW) {
        view_geom(b, b->g->nodes[k]);
        return;
    }
    contiguous_geom(b->p, slot);
    add_step(b, S_EAGER, k, b->f->group_of[k]);
    b->done[slot] = true;
}

/* A kernel group run node by node: its members and the views between them. */
static void eager_group(builder *b, int gi)
{
    for (int k = 0; k < b->g->nnodes; k++) {
        const ir_node *n = b->g->nodes[k];
        const ir_node *e = ir_view_root(n);
        if (b->f->group_of[k] == gi || (!ir_node_is_input(e) && b->f->group_of[e->id] == gi))
            eager_node(b, k);
    }
}

static void kernel_group(builder *b, int gi)
{
    const ir_group *gr = &b->f->groups[gi];
    if (b->force_eager[gi]) {
        eager_group(b, gi);
        return;
    }
    int nstored = 0;
    for (int i = 0; i < gr->nnodes; i++)
        if (b->f->stored[gr->nodes[i]]) {
            contiguous_geom(b->p, ir_slot(b->g, b->g->nodes[gr->nodes[i]]));
            nstored++;
        }
    if (nstored == 0)   /* nothing reads it (dead code the passes left) */
        return;
    cg_launch *l = malloc(sizeof *l);
    char err[256];
    cg_lower_in in = {b->g, b->f, b->p->types, b->p->geom};
    if (!l || cg_lower(&in, gi, l, err, sizeof err)) {
        free(l);
        b->force_eager[gi] = true;
        eager_group(b, gi);
        return;
    }
    step *s = add_step(b, S_KERNEL, -1, gi);
    if (!s) {
        free(l);
        return;
    }
    s->launch = l;
    for (int i = 0; i < gr->nnodes; i++)
        b->done[ir_slot(b->g, b->g->nodes[gr->nodes[i]])] = true;
}

static void build_steps(builder *b)
{
    for (int gi = 0; gi < b->f->ngroups && !b->failed; gi++) {
        const ir_group *gr = &b->f->groups[gi];
        switch (gr->kind) {
        case IR_GROUP_VIEW:
            if (!b->done[ir_slot(b->g, b->g->nodes[gr->nodes[0]])])
                view_geom(b, b->g->nodes[gr->nodes[0]]);
            break;
        case IR_GROUP_EAGER:
        case IR_GROUP_CONST: eager_node(b, gr->nodes[0]); break;
        default: kernel_group(b, gi); break;
        }
    }
}

/* Drops the view and constant steps nobody needs as a tensor. */
static void drop_steps(builder *b)
{
    sc_plan *p = b->p;
    bool *need = calloc((size_t)p->nslots + 1, sizeof *need);
    if (!need) {
        b->failed = true;
        return;
    }
    for (int k = 0; k < b->g->noutputs; k++)
        need[ir_slot(b->g, b->g->outputs[k])] = true;
    for (int i = p->nsteps - 1; i >= 0; i--) {
        step *s = &p->steps[i];
        if (s->kind == S_KERNEL) {
            for (int a = 0; a < s->launch->nargs; a++)
                need[s->launch->args[a].base] = true;
            continue;
        }
        const ir_node *n = b->g->nodes[s->node];
        bool optional = s->kind == S_VIEW || ir_ops[n->op].kind == IR_CREATE;
        if (optional && !need[ir_slot(b->g, n)]) {
            s->node = -1;   /* dropped: views and constants nobody needs as a tensor */
            continue;
        }
        for (int j = 0; j < n->nin; j++)
            if (n->in[j])
                need[ir_slot(b->g, n->in[j])] = true;
    }
    free(need);
    int w = 0;
    for (int i = 0; i < p->nsteps; i++)
        if (!(p->steps[i].kind != S_KERNEL && p->steps[i].node < 0))
            p->steps[w++] = p->steps[i];
    p->nsteps = w;
}

/* Last uses, the releases after each step, and the memory plan. */
static void finish_steps(builder *b)
{
    sc_plan *p = b->p;
    if (sc_mem_plan(b->g, p)) {
        b->failed = true;
        return;
    }
    p->rel_start = calloc((size_t)p->nsteps + 2, sizeof(int));
    p->rel = calloc((size_t)p->nslots + 1, sizeof(int));
    if (!p->rel_start || !p->rel) {
        b->failed = true;
        return;
    }
    for (int k = b->g->ninputs; k < p->nslots; k++)
        if (p->last_use[k] >= 0 && p->last_use[k] < p->nsteps)
            p->rel_start[p->last_use[k] + 1]++;
    for (int i = 0; i < p->nsteps; i++)
        p->rel_start[i + 1] += p->rel_start[i];
    int *fill = calloc((size_t)p->nsteps + 1, sizeof(int));
    if (!fill) {
        b->failed = true;
        return;
    }
    for (int k = b->g->ninputs; k < p->nslots; k++)
        if (p->last_use[k] >= 0 && p->last_use[k] < p->nsteps)
            p->rel[p->rel_start[p->last_use[k]] + fill[p->last_use[k]]++] = k;
    free(fill);
    if (sc_plan_epilogues(b->g, b->f, p) || sc_plan_conv_posts(b->g, b->f, p) ||
        sc_plan_pairs(b->g, p)) {   /* pairs leave epilogues and regions be */
        b->failed = true;
        return;
    }
    p->kernels = p->eager = 0;
    for (int i = 0; i < p->nsteps; i++) {
        p->kernels += p->steps[i].kind == S_KERNEL;
        p->eager += p->steps[i].kind == S_EAGER;
    }
}

/* Concrete types of every slot (the example's), like the graph executor. */
static int infer_types(const ir_graph *g, sc_plan *p, tj_tensor *const *inputs)
{
    for (int k = 0; k < g->ninputs; k++) {
        rt_type_of(inputs[k], &p->types[k]);
        memcpy(p->in_strides[k], inputs[k]->strides, sizeof p->in_strides[k]);
        p->geom[k] = (cg_geom){k, 0, {0}};
        memcpy(p->geom[k].strides, inputs[k]->strides, sizeof inputs[k]->strides);
    }
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        const ir_type *tp[64];
        for (int j = 0; j < n->nin && j < 64; j++)
            tp[j] = n->in[j] ? &p->types[ir_slot(g, n->in[j])] : NULL;
        ir_attrs a;
        ir_node_attrs(n, &a);
        char why[256];
        if (n->nin > 64 || ir_infer(n->op, tp, n->nin, &a, &p->types[ir_slot(g, n)], why, sizeof why))
            return -1;
        p->geom[ir_slot(g, n)].base = -1;
    }
    return 0;
}

static unsigned dump_flags(void)
{
    return (ir_dump_enabled(NULL, "llvm") ? CG_EMIT_LLVM : 0u) |
           (ir_dump_enabled(NULL, "asm") ? CG_EMIT_ASM : 0u);
}

static void dump_text(const sc_plan_set *ps, const char *stage, const char *text)
{
    if (text && stage && ir_dump_enabled(NULL, stage))
        ir_dump_text(stage, ps->name, text);
}

/* A compiled kernel's dumps: its kernel text under `as` (NULL: not asked for). */
static void dump_kernel(const sc_plan_set *ps, const char *as, const cg_launch *l, const cg_compiled *c)
{
    if (as) {
        char *t = cg_kernel_text(&l->k, c->name);
        dump_text(ps, as, t);
        free(t);
    }
    dump_text(ps, "llvm", c->llvm);
    dump_text(ps, "asm", c->asm_text);
}

/* The code of a launch without tiles: its stored values have no elements
 * (cg_lower checks it), so nothing is compiled for it. */
static void no_tiles(char **bufs, int64_t begin, int64_t end, const int64_t *sz)
{
    (void)bufs, (void)begin, (void)end, (void)sz;
}

/* Compiles every kernel step; a kernel that fails marks its group eager.
 * Returns the number that failed. */
static int compile_steps(sc_plan_set *ps, builder *b, const char *dump_as)
{
    sc_plan *p = b->p;
    const cg_kernel **ks = malloc(sizeof *ks * ((size_t)p->nsteps + 1));
    int *at = malloc(sizeof *at * ((size_t)p->nsteps + 1)), n = 0;
    cg_compiled *cs = calloc((size_t)p->nsteps + 1, sizeof *cs);
    if (!ks || !at || !cs) {
        free(ks), free(at), free(cs);
        b->failed = true;
        return 0;
    }
    for (int i = 0; i < p->nsteps; i++)
        if (p->steps[i].kind == S_KERNEL && p->steps[i].launch->ntiles == 0)
            p->steps[i].fn = no_tiles;   /* writes nothing (all it stores is empty) */
        else if (p->steps[i].kind == S_KERNEL) {
            at[n] = i;
            ks[n++] = &p->steps[i].launch->k;
        }
    int failed = cg_jit_get_all(ks, n, NULL, dump_flags(), cs);
    for (int j = 0; j < n; j++) {
        step *s = &p->steps[at[j]];
        s->fn = cs[j].fn;
        if (!s->fn)
            b->force_eager[s->group] = true;
        else
            dump_kernel(ps, dump_as, s->launch, &cs[j]);
        cg_compiled_clear(&cs[j]);
    }
    free(ks), free(at), free(cs);
    return failed;
}

static sc_plan *plan_alloc(const ir_graph *g)
{
    sc_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ninputs = g->ninputs;
    p->nslots = ir_nslots(g);
    size_t n = (size_t)p->nslots + 1;
    p->types = calloc(n, sizeof *p->types);
    p->in_strides = calloc((size_t)g->ninputs + 1, sizeof *p->in_strides);
    p->geom = calloc(n, sizeof *p->geom);
    p->last_use = calloc(n, sizeof *p->last_use);
    if (!p->types || !p->in_strides || !p->geom || !p->last_use) {
        plan_free(p);
        return NULL;
    }
    return p;
}

/* ---- the pipeline ------------------------------------------------------------------------ */

#ifdef NDEBUG
#define PLAN_VERIFY false
#else
#define PLAN_VERIFY true
#endif

/* What the steps of the pipeline work on: the set (graph, fusion) and, per
 * input signature, the plan being built. */
typedef struct pipe_ctx {
    sc_plan_set *ps;
    tj_tensor *const *inputs;
    builder b;
    int round;            /* lower .. compile: 1 after a kernel failed to compile */
    const int *grp;       /* outputs may be stored into inputs: the inputs' memory
                           * groups (sc_input_groups); NULL: not */
} pipe_ctx;

typedef struct pipe_step {
    ir_dump_stage dump;   /* TJIT_DUMP=name (or also, or its level) prints what
                             the step made (first: ir/dump.c reads the table) */
    bool per_signature;   /* false: once per graph */
    int (*run)(pipe_ctx *c, const struct pipe_step *s);   /* 0; -1: failed; 1: again from `again` */
    char *(*print)(const pipe_ctx *c);                      /* the dump (malloc'd); NULL: none */
    const char *again;
} pipe_step;

/* The name step s dumps under, or NULL: its own when TJIT_DUMP lists it,
 * else its old one. */
static const char *dump_name(const pipe_step *s)
{
    if (ir_dump_enabled(NULL, s->dump.name))
        return s->dump.name;
    return s->dump.also && ir_dump_enabled(NULL, s->dump.also) ? s->dump.also : NULL;
}

/* Once per graph: a pass of passes/pm.c, named by the step (the graph is
 * verified after it in debug and test builds: no NDEBUG). */
static int run_pass(pipe_ctx *c, const pipe_step *s)
{
    sc_plan_set *ps = c->ps;
    ir_graph *cur = ps->prims ? ps->prims : (ir_graph *)ps->src;
    ps_options opt = {.verify = PLAN_VERIFY};
    char err[512];
    ir_graph *next = ps_run_pipeline(cur, s->dump.name, &opt, err, sizeof err);
    if (!next) {
        snprintf(ps->why, sizeof ps->why, "%s", err);
        return -1;
    }
    if (next != cur && cur != ps->src)
        ir_graph_free(cur);
    ps->prims = next;
    return 0;
}

/* merge_matmuls unless TJIT_MERGE_MATMULS=0 (for measuring). */
static int run_merge(pipe_ctx *c, const pipe_step *s)
{
    const char *e = getenv("TJIT_MERGE_MATMULS");
    return e && !strcmp(e, "0") ? 0 : run_pass(c, s);
}

static int run_fuse(pipe_ctx *c, const pipe_step *s)
{
    sc_plan_set *ps = c->ps;
    char err[512];
    if (!(ps->fusion = ps_fuse(ps->prims, err, sizeof err))) {
        snprintf(ps->why, sizeof ps->why, "%s", err);
        return -1;
    }
    return 0;
}

/* LLVM starts (about 1.3 ms, once per process) only for a graph with a
 * kernel: one made of library calls alone (sdpa, a matmul) never needs it. */
static int run_jit(pipe_ctx *c, const pipe_step *s)
{
    sc_plan_set *ps = c->ps;
    if (ir_fusion_count(ps->fusion, IR_GROUP_PW) > 0 && !cg_jit_available(ps->why, sizeof ps->why))
        return -1;
    return 0;
}

static int run_types(pipe_ctx *c, const pipe_step *s) { return infer_types(c->b.g, c->b.p, c->inputs); }

/* Groups in order -> steps (kernel groups lowered, the rest eager calls and
 * views), from scratch: a second round keeps the groups that failed to
 * compile eager. */
static int run_lower(pipe_ctx *c, const pipe_step *s)
{
    builder *b = &c->b;
    sc_plan *p = b->p;
    free_steps(p);
    b->cap = 0;
    memset(b->done, 0, sizeof(bool) * (size_t)p->nslots);
    for (int k = b->g->ninputs; k < p->nslots; k++)
        p->geom[k].base = -1;
    build_steps(b);
    if (!b->failed)
        drop_steps(b);
    return b->failed ? -1 : 0;
}

static int run_regions(pipe_ctx *c, const pipe_step *s) { return sc_block_regions(&c->b); }

static int run_inplace(pipe_ctx *c, const pipe_step *s)
{
    if (sc_mem_reinplace(c->b.g, c->b.p, c->ps->into, c->grp))
        return -1;
    return sc_mem_inplace(c->b.g, c->b.p);
}

/* Every kernel compiled (in parallel, through the cache); when one fails,
 * its group runs eagerly: lower again, once. */
static int run_compile(pipe_ctx *c, const pipe_step *s)
{
    const char *as = dump_name(s);
    int failed = compile_steps(c->ps, &c->b, as);
    if (c->b.failed)
        return -1;
    if (failed && c->round++ == 0)
        return 1;
    for (int i = 0; i < c->b.p->nsteps; i++)
        if (c->b.p->steps[i].kind == S_KERNEL && !c->b.p->steps[i].fn)
            return -1;
    return 0;
}

static int run_memory(pipe_ctx *c, const pipe_step *s)
{
    finish_steps(&c->b);
    return c->b.failed ? -1 : 0;
}

static char *print_graph(const pipe_ctx *c) { return ir_print(c->ps->prims, NULL); }

static char *print_fusion(const pipe_ctx *c) { return ir_fusion_print(c->ps->fusion); }

static char *print_jit(const pipe_ctx *c)
{
    int n = ir_fusion_count(c->ps->fusion, IR_GROUP_PW);
    char *t = NULL;
    if (asprintf(&t, "jit @%s: %d kernel group%s: %s\n", c->ps->prims->name, n, n == 1 ? "" : "s",
                 n ? "LLVM started" : "LLVM not needed") < 0)
        return NULL;
    return t;
}

static char *print_plan(const pipe_ctx *c) { return sc_plan_print(c->b.g, c->b.p); }

static char *print_types(const pipe_ctx *c)
{
    const ir_graph *g = c->b.g;
    char *buf = NULL, t[IR_TYPE_BUF];
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (!o)
        return NULL;
    fprintf(o, "types @%s {\n", g->name);
    for (int k = 0; k < g->ninputs; k++)
        fprintf(o, "  %%%s: %s\n", g->inputs[k]->name, ir_type_fmt(&c->b.p->types[k], t, sizeof t));
    for (int k = 0; k < g->nnodes; k++)
        fprintf(o, "  %%%d: %s\n", k, ir_type_fmt(&c->b.p->types[ir_slot(g, g->nodes[k])], t, sizeof t));
    fprintf(o, "}\n");
    if (fclose(o) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The pipeline, one step a line (the file's header comment draws it): the
 * step's dump {name, older name, level of TJIT_DUMP=N, file suffix}. */
static const pipe_step pipeline[] = {
    /* once per graph */
    {{"fold_quant", NULL, 3, "tir"}, false, run_pass, print_graph, NULL},
    {{"decompose_codegen", NULL, 3, "tir"}, false, run_pass, print_graph, NULL},
    {{"simplify", NULL, 3, "tir"}, false, run_pass, print_graph, NULL},
    {{"merge_matmuls", NULL, 3, "tir"}, false, run_merge, print_graph, NULL},
    {{"split_reductions", NULL, 3, "tir"}, false, run_pass, print_graph, NULL},
    {{"dce", "prims", 3, "tir"}, false, run_pass, print_graph, NULL},
    {{"fuse", "fused", 2, "txt"}, false, run_fuse, print_fusion, NULL},
    {{"jit", NULL, 3, "txt"}, false, run_jit, print_jit, NULL},
    /* per input signature (shapes and strides) */
    {{"types", NULL, 3, "txt"}, true, run_types, print_types, NULL},
    {{"lower", NULL, 3, "txt"}, true, run_lower, print_plan, NULL},
    {{"regions", NULL, 3, "txt"}, true, run_regions, print_plan, NULL},
    {{"inplace", NULL, 3, "txt"}, true, run_inplace, print_plan, NULL},
    {{"compile", "kernels", 3, "txt"}, true, run_compile, NULL, "lower"},
    {{"memory", "plan", 3, "txt"}, true, run_memory, print_plan, NULL},
};
enum { NSTEPS = sizeof pipeline / sizeof *pipeline };

/* TJIT_DUMP's stage names include the steps' (ir/dump.c checks them). */
__attribute__((constructor)) static void register_dumps(void)
{
    ir_dump_register(pipeline, NSTEPS, sizeof *pipeline);
}

/* Runs the steps of one scope in order, dumping after each. 0 or -1. */
static int run_pipeline(pipe_ctx *c, bool per_signature)
{
    for (int i = 0; i < NSTEPS; i++) {
        const pipe_step *s = &pipeline[i];
        if (s->per_signature != per_signature)
            continue;
        int rc = s->run(c, s);
        if (rc < 0)
            return -1;
        if (rc > 0) {   /* back to s->again */
            for (i = 0; strcmp(pipeline[i].dump.name, s->again) != 0; i++)
                ;
            i--;
            continue;
        }
        const char *as = s->print ? dump_name(s) : NULL;
        if (as) {
            char *t = s->print(c);
            dump_text(c->ps, as, t);
            free(t);
        }
    }
    return 0;
}

/* The once-per-graph steps, at the set's first run. */
static void prepare(sc_plan_set *ps)
{
    double t0 = now_ms();
    ps->prepared = true;
    pipe_ctx c = {.ps = ps};
    if (run_pipeline(&c, false))
        ps->unavailable = true;
    ps->prepare_ms = now_ms() - t0;
}

/* TJIT_DUMP=stats (level 1): a line per plan, its counts and compile times. */
static void dump_stats(const sc_plan_set *ps, const sc_plan *p)
{
    if (!ir_dump_enabled(NULL, "stats"))
        return;
    char *t = NULL;
    if (asprintf(&t,
                 "stats @%s: nodes %d, prims %d, groups %d; plan %d: steps %d, kernels %d, eager calls %d, "
                 "buffers %d; ms: graph steps %.3f, plan steps %.3f\n",
                 ps->name, ps->src->nnodes, ps->prims->nnodes, ps->fusion->ngroups, ps->nplans,
                 p->nsteps, p->kernels, p->eager, p->nbufs, ps->prepare_ms, p->compile_ms) >= 0)
        dump_text(ps, "stats", t);
    free(t);
}

/* The per-signature steps: the plan for these inputs; NULL when the graph
 * executor should run this call instead. */
static sc_plan *plan_build(sc_plan_set *ps, tj_tensor *const *inputs, const int *grp)
{
    double t0 = now_ms();
    const ir_graph *g = ps->prims;
    sc_plan *p = plan_alloc(g);
    pipe_ctx c = {ps, inputs, {g, ps->fusion, p, 0, NULL, NULL, false}, 0, grp};
    if (p && grp && (p->in_grp = malloc(sizeof *grp * ((size_t)g->ninputs + 1))))
        memcpy(p->in_grp, grp, sizeof *grp * (size_t)g->ninputs);
    if (p && grp && !p->in_grp) {
        plan_free(p);
        return NULL;
    }
    if (!p || !(c.b.force_eager = calloc((size_t)ps->fusion->ngroups + 1, sizeof(bool))) ||
        !(c.b.done = calloc((size_t)p->nslots + 1, sizeof(bool))) || run_pipeline(&c, true)) {
        free(c.b.force_eager);
        free(c.b.done);
        plan_free(p);
        return NULL;
    }
    p->compile_ms = now_ms() - t0;
    dump_stats(ps, p);
    sc_prof_plan(g, ps->fusion, p);
    free(c.b.force_eager);
    free(c.b.done);
    return p;
}

/* ---- entry points --------------------------------------------------------------------------------- */

int sc_plans_run(sc_plan_set *ps, tj_tensor *const *inputs, tj_tensor **outs)
{
    return sc_plans_run_notify(ps, inputs, outs, NULL);
}

int sc_plans_set_into(sc_plan_set *ps, const int *into)
{
    int n = ps->src->noutputs;
    free(ps->into);
    ps->into = NULL;
    for (int j = 0; into && j < n && !ps->into; j++)
        if (into[j] >= 0 && !(ps->into = malloc(sizeof *into * (size_t)n)))
            return -1;
    if (ps->into)
        memcpy(ps->into, into, sizeof *into * (size_t)n);
    return 0;
}

/* Whether plan p serves this call: built for these types and strides, and
 * for storing into inputs with these memory groups (grp) or without (NULL). */
static bool plan_fits(const sc_plan *p, tj_tensor *const *inputs, const int *grp)
{
    if (!sc_plan_matches(p, inputs) || !p->in_grp != !grp)
        return false;
    return !grp || !memcmp(p->in_grp, grp, sizeof *grp * (size_t)p->ninputs);
}

int sc_plans_run_notify(sc_plan_set *ps, tj_tensor *const *inputs, tj_tensor **outs, const sc_notify *nt)
{
    if (!ps || !sc_backend_llvm())
        return 1;
    pthread_mutex_lock(&ps->mu);
    if (!ps->prepared)
        prepare(ps);
    if (ps->unavailable) {
        ps->info.compiled = false;
        snprintf(ps->info.why, sizeof ps->info.why, "%s", ps->why);
        pthread_mutex_unlock(&ps->mu);
        return 1;
    }
    /* outputs may be stored into inputs (none watched: a callback must not
     * see an input half-updated): the inputs' memory groups for it */
    int few[64], *grp = NULL;
    if (ps->into && !(nt && nt->n > 0))
        grp = ps->src->ninputs <= 64 ? few : malloc(sizeof *grp * (size_t)ps->src->ninputs);
    if (grp && sc_input_groups(inputs, ps->src->ninputs, grp) != 0) {
        if (grp != few)
            free(grp);
        grp = NULL;
    }
    sc_plan *p = NULL;
    for (int i = 0; i < ps->nplans && !p; i++)
        if (plan_fits(ps->plans[i], inputs, grp))
            p = ps->plans[i];
    bool temp = false;
    if (!p) {
        p = plan_build(ps, inputs, grp);
        if (p && ps->nplans < SC_MAX_PLANS)
            ps->plans[ps->nplans++] = p;
        else
            temp = p != NULL;
        if (p) {
            ps->info = (sc_plan_info){p->kernels, p->eager, p->compile_ms, true, "", p->conv_pools, ""};
            snprintf(ps->info.pool_notes, sizeof ps->info.pool_notes, "%s", p->pool_notes);
            ps->mem = p->mem;
        }
    }
    pthread_mutex_unlock(&ps->mu);
    if (grp != few)
        free(grp);
    if (!p)
        return 1;
    int64_t t0 = rt_prof_on() ? rt_prof_now() : 0;
    int rc = sc_plan_run(ps->prims, p, inputs, outs, nt);
    if (t0)
        rt_prof_emit(ps->prof_name, RT_PROF_GRAPH, t0, rt_prof_now(), p->prof_bytes, p->prof_flops);
    if (temp)
        plan_free(p);
    return rc;
}

int sc_plans_get(sc_plan_set *ps, const ir_graph **g, const sc_plan **plans, int max)
{
    pthread_mutex_lock(&ps->mu);
    int n = 0;
    *g = ps->prims;
    for (int i = 0; i < ps->nplans && n < max; i++)
        plans[n++] = ps->plans[i];
    pthread_mutex_unlock(&ps->mu);
    return n;
}

void sc_plans_info(sc_plan_set *ps, sc_plan_info *out)
{
    pthread_mutex_lock(&ps->mu);
    *out = ps->info;
    pthread_mutex_unlock(&ps->mu);
}

void sc_plans_mem(sc_plan_set *ps, sc_plan_mem *out)
{
    pthread_mutex_lock(&ps->mu);
    *out = ps->mem;
    pthread_mutex_unlock(&ps->mu);
}
