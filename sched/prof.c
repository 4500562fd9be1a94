/* prof.c - what the profiler (runtime/profile.h) shows of a compiled plan.
 *
 * When a plan is built, each step gets a name, the bytes it moves and the
 * operations it does at the plan's shapes, computed once: a kernel is named
 * by its group's ops in order ("mul+add+gelu", the ops the fused dump lists,
 * views left out), an eager call by its op, a region by its steps
 * ("region(matmul; add+gelu)"). Bytes: each distinct buffer a step reads or
 * writes, whole; flops: ir_flops of each node (ir/cost.c). A run then only
 * reads the clock around each step (plan.c) and each block's steps (block.c).
 */
#include <stdio.h>
#include <string.h>

#include "sched_int.h"

#define NAME_MAX_CHARS 88

static const ir_type *slot_mem_type(const sc_plan *p, int slot)
{
    int o = p->owner[slot] >= 0 ? p->owner[slot] : slot;
    return &p->types[o];
}

/* Bytes of the distinct buffers among slots[0..n). */
static int64_t distinct_bytes(const sc_plan *p, const int *slots, int n)
{
    int64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        int oi = p->owner[slots[i]] >= 0 ? p->owner[slots[i]] : slots[i];
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = (p->owner[slots[j]] >= 0 ? p->owner[slots[j]] : slots[j]) == oi;
        if (!seen)
            bytes += ir_type_bytes(slot_mem_type(p, slots[i]));
    }
    return bytes;
}

static int64_t node_flops(const ir_graph *g, const sc_plan *p, const ir_node *n)
{
    const ir_type *tp[64];
    if (n->nin > 64)
        return -1;
    for (int j = 0; j < n->nin; j++)
        tp[j] = n->in[j] ? &p->types[ir_slot(g, n->in[j])] : NULL;
    return ir_flops(n->op, tp, n->nin, &p->types[ir_slot(g, n)]);
}

static void add_flops(int64_t *sum, int64_t f) { *sum = *sum < 0 || f < 0 ? -1 : *sum + f; }

static void append(char *buf, size_t cap, const char *sep, const char *s)
{
    size_t n = strlen(buf);
    if (n + strlen(sep) + strlen(s) + 4 >= cap) {
        if (n + 4 < cap && strcmp(buf + (n >= 3 ? n - 3 : 0), "...") != 0)
            snprintf(buf + n, cap - n, "...");
        return;
    }
    snprintf(buf + n, cap - n, "%s%s", n ? sep : "", s);
}

/* A kernel's name: its group's ops in order, views left out. */
static void kernel_name(const ir_graph *g, const ir_fusion *f, const step *s, char *name, size_t cap)
{
    const ir_group *gr = &f->groups[s->group];
    name[0] = '\0';
    for (int i = 0; i < gr->nnodes; i++)
        if (ir_ops[g->nodes[gr->nodes[i]]->op].kind != IR_VIEW)
            append(name, cap, "+", ir_ops[g->nodes[gr->nodes[i]]->op].name);
    if (!name[0])
        snprintf(name, cap, "kernel");
}

static void kernel_cost(const ir_graph *g, const ir_fusion *f, sc_plan *p, step *s)
{
    const ir_group *gr = &f->groups[s->group];
    char name[NAME_MAX_CHARS];
    kernel_name(g, f, s, name, sizeof name);
    s->prof_flops = 0;
    for (int i = 0; i < gr->nnodes; i++) {
        const ir_node *n = g->nodes[gr->nodes[i]];
        if (ir_ops[n->op].kind != IR_VIEW)
            add_flops(&s->prof_flops, node_flops(g, p, n));
    }
    int slots[CG_MAX_BUFS];
    for (int a = 0; a < s->launch->nargs; a++)
        slots[a] = s->launch->args[a].base;
    s->prof_bytes = distinct_bytes(p, slots, s->launch->nargs);
    s->prof_name = rt_prof_name(name);
}

static void eager_cost(const ir_graph *g, sc_plan *p, step *s)
{
    const ir_node *n = g->nodes[s->node];
    int slots[65], k = 0;
    for (int j = 0; j < n->nin && k < 64; j++)
        if (n->in[j])
            slots[k++] = ir_slot(g, n->in[j]);
    slots[k++] = ir_slot(g, n);
    s->prof_name = rt_prof_op(n->op);
    s->prof_bytes = distinct_bytes(p, slots, k);
    s->prof_flops = node_flops(g, p, n);
}

/* "region(matmul; add+gelu)": its steps' names; bytes and flops: their sums. */
static void region_cost(const ir_graph *g, const ir_fusion *f, sc_plan *p, sc_region *rg)
{
    char part[2 * NAME_MAX_CHARS] = "", name[2 * NAME_MAX_CHARS + 16];
    rg->prof_bytes = rg->prof_flops = 0;
    for (int i = rg->first; i <= rg->last; i++) {
        const step *s = &p->steps[i];
        char one[NAME_MAX_CHARS];
        if (s->kind == S_VIEW)
            continue;
        rg->prof_bytes += s->prof_bytes;
        add_flops(&rg->prof_flops, s->prof_flops);
        if (s->kind == S_KERNEL)
            kernel_name(g, f, s, one, sizeof one);
        else
            snprintf(one, sizeof one, "%s", ir_ops[g->nodes[s->node]->op].name);
        append(part, sizeof part, "; ", one);
    }
    snprintf(name, sizeof name, "region(%s)", part);
    rg->prof_name = rt_prof_name(name);
}

void sc_prof_plan(const ir_graph *g, const ir_fusion *f, sc_plan *p)
{
    p->prof_bytes = p->prof_flops = 0;
    for (int i = 0; i < p->nsteps; i++) {
        step *s = &p->steps[i];
        if (s->kind == S_KERNEL)
            kernel_cost(g, f, p, s);
        else if (s->kind == S_EAGER)
            eager_cost(g, p, s);
        else
            continue;
        p->prof_bytes += s->prof_bytes;
        add_flops(&p->prof_flops, s->prof_flops);
    }
    for (int r = 0; r < p->nregions; r++)
        region_cost(g, f, p, &p->regions[r]);
}

int64_t sc_prof_start(const sc_plan *p, int i, rt_prof_id *prev)
{
    const step *s = &p->steps[i];
    *prev = rt_prof_label_set(s->region >= 0 ? p->regions[s->region].prof_name : s->prof_name);
    return rt_prof_now();
}

void sc_prof_stop(const sc_plan *p, int i, int64_t t0, rt_prof_id prev)
{
    int64_t t1 = rt_prof_now();
    const step *s = &p->steps[i];
    rt_prof_label_set(prev);
    if (s->region >= 0) {
        const sc_region *rg = &p->regions[s->region];
        rt_prof_emit(rg->prof_name, RT_PROF_REGION, t0, t1, rg->prof_bytes, rg->prof_flops);
    } else {
        rt_prof_emit(s->prof_name, s->kind == S_KERNEL ? RT_PROF_KERNEL : RT_PROF_EAGER, t0, t1,
                     s->prof_bytes, s->prof_flops);
    }
}
