/* epi.c - fused GEMM epilogues in compiled plans (sched_int.h, sc_plan.epi):
 * an f32 matmul step whose next step is its epilogue kernel computing only
 * act(matmul + bias) (bias f32 [n], act none, relu, gelu, gelu_tanh,
 * sigmoid or tanh) in the matmul's own buffer hands the bias and the
 * activation to the matmul; where tjit's GEMM runs it (a kept weight,
 * runtime/k_matmul.c) its epilogue applies them to each task's part of C
 * while it is in cache, and the kernel step is skipped (run.c). Where
 * OpenBLAS runs it, the kernel runs as before.
 *
 * P4's first layer (x @ W1 + b1, gelu_tanh) was a GEMM writing 2 MB and a
 * kernel reading and writing it again (0.3-0.5 ms of a 17-20 ms call on two
 * threads). Off by default: on the quiet Zen 3 machine it gave P4 nothing
 * measurable (`build/bench/cases_paired P4 P4 2 100` with it on for A or
 * for B: on/off 0.97-1.02, where the same plan twice gives 0.995-1.002;
 * docs/perf.md), so the kernel step, the path every other plan runs, stays
 * the default. TJIT_GEMM_EPILOGUE=1 (read
 * when a plan is built) marks them. Exported models run without it
 * (aot_load.c: epi NULL).
 *
 * In a quantize_dynamic call (RT_GEMM_INT8, plans are built inside it) they
 * are marked by default for the int8 GEMMs only (sc_epi.f32 false): Q4's
 * epilogue already makes a pass over C to dequantize the s32 sums, so the
 * bias and gelu_tanh join that pass and the kernel's 2 MB pass goes
 * (docs/perf.md, "Q4: the int8 GEMM in the half-panel order").
 * TJIT_GEMM_EPILOGUE=0 turns off both.
 */
#include <stdlib.h>
#include <string.h>

#include "../runtime/gemm.h"
#include "../runtime/rt.h"
#include "sched_int.h"

static int act_of(ir_op op)
{
    switch (op) {
    case OP_relu: return TJG_ACT_RELU;
    case OP_gelu: return TJG_ACT_GELU;
    case OP_gelu_tanh: return TJG_ACT_GELU_TANH;
    case OP_sigmoid: return TJG_ACT_SIGMOID;
    case OP_tanh: return TJG_ACT_TANH;
    default: return -1;
    }
}

static bool is_output(const ir_graph *g, const ir_node *n)
{
    for (int j = 0; j < g->noutputs; j++)
        if (g->outputs[j] == n)
            return true;
    return false;
}

/* Whether kernel step e + 1 finishes matmul step e as act(e's value + bias)
 * in place of it; *out then says how. */
static bool fits(const ir_graph *g, const ir_fusion *f, const sc_plan *p, int e, sc_epi *out)
{
    const step *se = &p->steps[e], *sk = &p->steps[e + 1];
    if (se->kind != S_EAGER || sk->kind != S_KERNEL || se->region >= 0 || sk->region >= 0 ||
        e + 1 >= p->nsteps - p->ntail)
        return false;
    const ir_node *mm = g->nodes[se->node];
    int ms = ir_slot(g, mm);
    const ir_type *o = &p->types[ms];
    if (mm->op != OP_matmul || o->dtype != TJ_F32 || o->ndim != 2 || is_output(g, mm) ||
        p->types[ir_slot(g, mm->in[0])].ndim != 2 || p->types[ir_slot(g, mm->in[1])].ndim != 2)
        return false;
    const ir_group *gr = &f->groups[sk->group];
    if (gr->epilogue_of != se->group || gr->nnodes < 1 || gr->nnodes > 2 ||
        sk->launch->nstore != 1)
        return false;
    const ir_node *add = g->nodes[gr->nodes[0]], *last = g->nodes[gr->nodes[gr->nnodes - 1]];
    if (add->op != OP_add || add->nin != 2 || (add->in[0] == mm) == (add->in[1] == mm))
        return false;
    const ir_node *bias = add->in[0] == mm ? add->in[1] : add->in[0];
    const ir_type *bt = &p->types[ir_slot(g, bias)], *at = &p->types[ir_slot(g, add)];
    if (bt->dtype != TJ_F32 || bt->ndim != 1 || bt->shape[0] != o->shape[1] ||
        at->dtype != TJ_F32 || at->ndim != 2 || at->shape[0] != o->shape[0] ||
        at->shape[1] != o->shape[1])
        return false;
    int act = TJG_ACT_NONE;
    if (gr->nnodes == 2 && ((act = act_of(last->op)) < 0 || last->nin != 1 || last->in[0] != add ||
                            p->types[ir_slot(g, last)].dtype != TJ_F32))
        return false;
    int store = sk->launch->store_slot[0];
    /* written in place of the matmul's value (mem.c: only where that value
     * dies there, so nothing after reads it) */
    if (store != ir_slot(g, last) || !p->inplace_of || p->inplace_of[store] != ms ||
        p->buf_of[store] < 0 || p->buf_of[store] != p->buf_of[ms])
        return false;
    *out = (sc_epi){.kstep = e + 1, .bias = ir_slot(g, bias), .act = (signed char)act};
    return true;
}

int sc_plan_epilogues(const ir_graph *g, const ir_fusion *f, sc_plan *p)
{
    const char *env = getenv("TJIT_GEMM_EPILOGUE");
    free(p->epi);   /* a plan built again after a kernel failed */
    p->epi = NULL;
    bool f32 = env && !strcmp(env, "1");
    unsigned flags = 0;
    tjg_frozen(NULL, &flags);   /* the compiled call's: plans are built in it */
    if (!f32 && (!(flags & RT_GEMM_INT8) || (env && !strcmp(env, "0"))))
        return 0;
    for (int e = 0; e + 1 < p->nsteps; e++) {
        sc_epi x;
        if (!fits(g, f, p, e, &x))
            continue;
        if (!p->epi) {
            if (!(p->epi = malloc(sizeof *p->epi * (size_t)p->nsteps)))
                return -1;
            for (int i = 0; i < p->nsteps; i++)
                p->epi[i].kstep = -1;
        }
        x.f32 = f32;
        p->epi[e] = x;
    }
    return 0;
}
