/* block.c - blocked regions: GEMMs and their epilogues run block by
 * block, each block's GEMM output finished while it is in cache
 * (sched_int.h, sc_region).
 *
 *   head    an eager matmul or conv2d (f32/f64; conv2d bf16, f16 too) whose output splits along
 *           leading dims into blocks:
 *             matmul with a GEMM per batch (its right operand has batches):
 *               one batch per block
 *             matmul sharing its right operand across rows: `chunk` rows of
 *               one batch per block, only when that operand is small (each
 *               block's GEMM packs it again: SC_SHARED_MAX)
 *             conv2d: one image per block
 *   before  the kernel that makes a conv2d head's input, pointwise, read by
 *           nothing else before it (autocast's cast to bf16): on the
 *           block's tiles, so the head reads the block's part from scratch
 *   then    its epilogue kernel (ir/fusion.h) on the block's tiles; another
 *           matmul or conv2d reading the last value as its sliced (left)
 *           operand, then its epilogue; ... A step in between that reads
 *           nothing the region makes moves before the head.
 *   pool    in a conv2d region (an image per block), an eager max_pool2d or
 *           avg_pool2d (f32, f64) reading the conv's value or its epilogue's
 *           when nothing else reads that value and it is no result of the
 *           graph: the pool runs on the block's image, so that full-size
 *           value lives only in the block's scratch (written and read back
 *           while warm, never as a whole tensor); the pool's output goes on
 *           like any value of the region (another conv can read it). The
 *           pool is the eager kernel on the same values, so its result is the
 *           unfused plan's, bit for bit.
 *           TJIT_CONV_POOL=0 turns it off (for measuring); the plan keeps a
 *           note per pool, fused or why not (tj_explain, TJIT_DUMP=regions).
 *   bands   a region of conv, pointwise epilogues and the pool only: the
 *           conv (grid kernel) computes an image in bands of output
 *           channels and calls back after each, and the epilogue and pool
 *           run on the band while it is in L2, the band's scratch at the
 *           start of the block's (band_chans; opt-in: TJIT_CONV_BAND=N or
 *           cN: N channels per band). Same sums, same bits. TJIT_CONV_BAND=rN:
 *           bands of N output rows of every channel instead, where the
 *           pool is a max pool that computes rows (rows_band).
 *
 * Run: the blocks in parallel (rt_parallel_for, grain 1; claimed one by one
 * by rt_parallel_tasks from 4 blocks per thread) with OpenBLAS serial
 * inside (rt_blas_serial_begin/end); each block calls the eager kernels on
 * slices (tensor headers over the block's part of each value) and the
 * epilogue kernels on the tiles that cover the block. A value no step after
 * the region reads lives in per-thread scratch, one block's part at a time
 * (SC_SCRATCH, mem.c): a kernel addresses it as if it were whole, from a
 * base pointer moved back by the block's offset.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/blas.h"
#include "../ir/window2d.h"
#include "../runtime/conv_direct.h"
#include "sched_int.h"

#define SC_SHARED_MAX ((int64_t)256 << 10) /* bytes of a right operand every block packs */
#define SC_BLOCK_OUT ((int64_t)64 << 10)    /* target bytes of a block of GEMM output rows */
#define SC_BLOCK_ROWS 64                    /* GEMM rows per block, at least */
#define SC_BAND_BYTES ((int64_t)512 << 10) /* bytes of a band of a conv's output, at most (L2) */
#define SC_LOOKAHEAD 64                     /* steps scanned past a region's last step */

static bool blas_dtype(tj_dtype dt) { return dt == TJ_F32 || dt == TJ_F64; }

/* Whether node n's output type suits a region: f32, f64, and bf16 or f16
 * for conv2d (the direct kernels take them: runtime/k_conv.c,
 * rt_k_conv2d_half). */
static bool region_dtype(const ir_node *n, tj_dtype dt)
{
    return blas_dtype(dt) || (n->op == OP_conv2d && (dt == TJ_BF16 || dt == TJ_F16));
}

/* ---- forming regions ------------------------------------------------------------------------ */

typedef struct former {
    builder *b;
    bool *produced;        /* per slot: made by the region being formed */
} former;

static const ir_type *type_of(const former *F, const ir_node *n)
{
    return &F->b->p->types[ir_slot(F->b->g, n)];
}

/* Whether node n reads a value of the region (through views too). */
static bool node_reads(const former *F, const ir_node *n)
{
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] && F->produced[ir_slot(F->b->g, ir_view_root(n->in[j]))])
            return true;
    return false;
}

static bool step_reads(const former *F, const step *s)
{
    if (s->kind != S_KERNEL)
        return node_reads(F, F->b->g->nodes[s->node]);
    for (int a = 0; a < s->launch->nargs; a++)
        if (F->produced[s->launch->args[a].base])
            return true;
    return false;
}

/* Rows per block of GEMMs with m rows of n columns (es bytes) in nbatch
 * batches: at least SC_BLOCK_ROWS (each block packs its right operand again),
 * about SC_BLOCK_OUT bytes of output, and blocks for every thread. */
static int64_t block_rows(int64_t m, int64_t n, size_t es, int64_t nbatch)
{
    int64_t want = 2 * (int64_t)rt_threads(), rb = SC_BLOCK_OUT / (n * (int64_t)es + 1);
    if (rb < SC_BLOCK_ROWS)
        rb = SC_BLOCK_ROWS;
    if (nbatch * ((m + rb - 1) / rb) < want) {   /* enough blocks for the threads */
        rb = (m * nbatch + want - 1) / want;
        rb = (rb + 15) / 16 * 16;
    }
    return rb < m ? rb : m;
}

/* The slices of a matmul's operands for block dims [0, nd) of its output. */
static void matmul_slices(const ir_type *a, const ir_type *b, const ir_type *o, int nd, step *s)
{
    int nb = o->ndim - 2;
    for (int d = 0; d < nd; d++) {
        int ad = d < nb ? d - (nb - (a->ndim - 2)) : a->ndim - 2;
        int bd = d < nb ? d - (nb - (b->ndim - 2)) : -1;
        s->slice[0][d] = (signed char)(ad >= 0 && a->shape[ad] != 1 ? ad : -1);
        s->slice[1][d] = (signed char)(bd >= 0 && b->shape[bd] != 1 ? bd : -1);
    }
}

/* Whether the part of b each block's GEMM reads (and packs) is small enough
 * to be packed again by the blocks that share it: one that stays in cache.
 * Packed again from memory it costs more than the blocks save (measured on a
 * 256-1024-256 MLP, 1 MB weights, 2 threads: 64-row blocks ran 0.75-0.92x
 * eager, 256-row blocks 0.71-1.09x, whole GEMMs with their epilogues
 * 1.08-1.23x, at batch 32-2048). */
static bool shared_ok(const step *s, const sc_region *rg, const ir_type *b)
{
    bool shared = false;
    int64_t bytes = ir_type_numel(b) * (int64_t)tj_dtype_size(b->dtype);
    for (int d = 0; d < rg->nd; d++) {
        int bd = s->slice[1][d];
        if (bd >= 0)
            bytes /= b->shape[bd];
        else
            shared = shared || (d == rg->nd - 1 ? rg->chunk < rg->size[d] : rg->size[d] > 1);
    }
    return !shared || bytes <= SC_SHARED_MAX;
}

static void set_space(sc_region *rg, const ir_type *o, int nd, int64_t chunk)
{
    rg->nd = nd;
    rg->nq = 1;
    for (int d = 0; d < nd; d++) {
        rg->size[d] = o->shape[d];
        rg->nq *= o->shape[d];
    }
    rg->chunk = chunk;
    rg->nblocks = rg->nq / o->shape[nd - 1] * ((o->shape[nd - 1] + chunk - 1) / chunk);
}

/* The block space of a region headed by matmul n (step s): blocks of rows
 * when the right operand's part is small, else whole batches. */
static bool matmul_space(const former *F, const ir_node *n, step *s, sc_region *rg)
{
    const ir_type *a = type_of(F, n->in[0]), *b = type_of(F, n->in[1]), *o = type_of(F, n);
    if (a->ndim < 2 || b->ndim < 2)
        return false;
    int nb = o->ndim - 2;
    int64_t nbatch = 1;
    for (int d = 0; d < nb; d++)
        nbatch *= o->shape[d];
    set_space(rg, o, nb + 1, block_rows(o->shape[nb], o->shape[nb + 1], tj_dtype_size(o->dtype), nbatch));
    matmul_slices(a, b, o, rg->nd, s);
    if (rg->nblocks >= 2 && shared_ok(s, rg, b))
        return true;
    if (nb == 0 || nbatch < 2 || nbatch < rt_threads())
        return false;
    set_space(rg, o, nb, 1);   /* a batch per block */
    memset(s->slice, -1, sizeof s->slice);
    matmul_slices(a, b, o, rg->nd, s);
    return shared_ok(s, rg, b);
}

/* The block space a region headed by eager step s gets, and s's slices. */
static bool head_space(const former *F, step *s, sc_region *rg)
{
    const ir_node *n = F->b->g->nodes[s->node];
    const ir_type *o = type_of(F, n);
    memset(s->slice, -1, sizeof s->slice);
    if (!region_dtype(n, o->dtype) || ir_type_numel(o) == 0)
        return false;
    if (n->op == OP_conv2d) {
        /* an image per block: enough images for the threads (the conv
         * kernel alone splits an image's rows across them) */
        if (o->ndim != 4 || type_of(F, n->in[0])->ndim != 4 || o->shape[0] < 2 || o->shape[0] < rt_threads())
            return false;
        set_space(rg, o, 1, 1);
        s->slice[0][0] = 0;
        return true;
    }
    return n->op == OP_matmul && matmul_space(F, n, s, rg);
}

/* Whether eager step s can continue the region: a matmul or conv2d reading
 * a value of the region (directly) as its sliced operand, nothing else of it. */
static bool chain_ok(const former *F, step *s, const sc_region *rg)
{
    const ir_node *n = F->b->g->nodes[s->node];
    const ir_type *o = type_of(F, n);
    memset(s->slice, -1, sizeof s->slice);
    if ((n->op != OP_matmul && n->op != OP_conv2d) || !region_dtype(n, o->dtype) ||
        !F->produced[ir_slot(F->b->g, n->in[0])])
        return false;
    for (int j = 1; j < n->nin; j++)
        if (n->in[j] && F->produced[ir_slot(F->b->g, ir_view_root(n->in[j]))])
            return false;
    if (o->ndim < rg->nd)
        return false;
    for (int d = 0; d < rg->nd; d++)
        if (o->shape[d] != rg->size[d])
            return false;
    if (n->op == OP_conv2d) {
        s->slice[0][0] = 0;
        return rg->nd == 1 && o->ndim == 4;
    }
    const ir_type *a = type_of(F, n->in[0]), *b = type_of(F, n->in[1]);
    if (a->ndim != o->ndim || b->ndim < 2 || rg->nd - 1 > o->ndim - 2)
        return false;
    matmul_slices(a, b, o, rg->nd, s);
    return shared_ok(s, rg, b);
}

/* ---- pooling after a conv ------------------------------------------------------------------- */

void sc_pool_note(sc_plan *p, const char *fmt, ...)
{
    size_t len = strlen(p->pool_notes);
    if (len + 2 >= sizeof p->pool_notes)
        return;
    if (len)
        len += (size_t)snprintf(p->pool_notes + len, sizeof p->pool_notes - len, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->pool_notes + len, sizeof p->pool_notes - len, fmt, ap);
    va_end(ap);
}

/* Why node v (read by pool node `pool`) cannot stay inside the region, or
 * NULL: it is a result of the graph (a training graph's forward returns what
 * its backward saves), or another node reads it. */
static const char *pool_input_why(const ir_graph *g, const ir_node *v, const ir_node *pool)
{
    for (int j = 0; j < g->noutputs; j++)
        if (g->outputs[j] == v)
            return "is a result of the graph";
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int j = 0; n != pool && j < n->nin; j++)
            if (n->in[j] == v)
                return "has another reader";
    }
    return NULL;
}

/* Whether eager step s, reading a value of the region, is a max_pool2d or
 * avg_pool2d that continues it: on the block's images, reading the conv's
 * value (or its epilogue's) that nothing else reads, so that value stays in
 * the block's scratch (TJIT_CONV_POOL=0: never). A refused pool leaves a
 * note in the plan. */
static bool pool_ok(const former *F, step *s, const sc_region *rg)
{
    const ir_graph *g = F->b->g;
    const ir_node *n = g->nodes[s->node];
    memset(s->slice, -1, sizeof s->slice);
    if (n->op != OP_max_pool2d && n->op != OP_avg_pool2d)
        return false;
    sc_plan *p = F->b->p;
    const ir_node *x = n->in[0];
    const ir_type *o = type_of(F, n), *xt = type_of(F, x);
    const char *env = getenv("TJIT_CONV_POOL"), *why = NULL;
    if (env && strcmp(env, "0") == 0)
        why = "TJIT_CONV_POOL=0";
    else if (ir_view_root(x) != x || !F->produced[ir_slot(g, x)])
        why = "reads the region's value through a view";
    else if (o->dtype != TJ_F32 && o->dtype != TJ_F64)
        why = "not f32 or f64";
    else if (rg->nd != 1 || xt->ndim != 4 || o->ndim != 4 || o->shape[0] != rg->size[0])
        why = "not one image per block";
    else if ((why = pool_input_why(g, x, n)) != NULL) {
        sc_pool_note(p, "%%%d %s not fused after the conv: its input %%%d %s", n->id,
                     ir_ops[n->op].name, x->id, why);
        return false;
    }
    if (why) {
        sc_pool_note(p, "%%%d %s not fused after the conv: %s", n->id, ir_ops[n->op].name, why);
        return false;
    }
    s->slice[0][0] = 0;
    p->conv_pools++;
    const char *band = getenv("TJIT_CONV_BAND");
    sc_pool_note(p,
                 "%%%d %s fused after the conv (its input %%%d stays in the block's scratch; "
                 "%s)",
                 n->id, ir_ops[n->op].name, x->id,
                 band && !strcmp(band, "0")
                     ? "no channel bands: TJIT_CONV_BAND=0"
                 : band && band[0] == 'r'
                     ? "the conv in bands of output rows when the grid or row kernel runs it"
                 : band && band[0]
                     ? "the conv in bands of output channels when the grid kernel runs it"
                     : "the conv whole: TJIT_CONV_BAND=cN or rN cuts it in bands");
    return true;
}

/* Tiles per block unit of launch l over a domain cut into nq units; when
 * tiles cross units, a pointwise launch's tile width is cut to fit (*B).
 * -1 when the tiles cannot follow the units. */
static int64_t tiles_per_unit(const cg_launch *l, int64_t nq, int64_t *B)
{
    int64_t N = l->sz[0], NB = l->sz[2];
    *B = l->sz[1];
    if (l->k.lanes || l->ntiles == 0 || NB == 0 || l->ntiles % NB)
        return -1;
    int64_t rows = l->ntiles / NB, e = rows * N;
    if (e % nq)
        return -1;
    int64_t u = e / nq;
    if (u % N == 0)
        return u / N * NB;
    if (l->k.kind == CG_ROWS || N % u)
        return -1;
    for (*B = u; *B > 65536 && *B % 2 == 0;)
        *B /= 2;
    return u / *B;
}

/* Whether kernel step s is the epilogue of eager step e and can run per block. */
static bool epilogue_ok(const former *F, const step *s, const step *e, const sc_region *rg)
{
    const ir_fusion *f = F->b->f;
    int eslot = ir_slot(F->b->g, F->b->g->nodes[e->node]);
    if (!s->launch || f->groups[s->group].epilogue_of != e->group)
        return false;
    for (int a = 0; a < s->launch->nargs; a++) {
        const cg_arg *ar = &s->launch->args[a];
        if (!s->launch->k.bufs[a].out && F->produced[ar->base] && (ar->base != eslot || ar->offset != 0))
            return false;
    }
    int64_t B;
    return tiles_per_unit(s->launch, rg->nq, &B) > 0;
}

/* Moves the steps hoist[0..nh) to just before step `head` (all are after it). */
static void hoist_steps(sc_plan *p, int head, const int *hoist, int nh)
{
    for (int k = 0; k < nh; k++) {
        step moved = p->steps[hoist[k]];
        memmove(&p->steps[head + k + 1], &p->steps[head + k], sizeof *p->steps * (size_t)(hoist[k] - head - k));
        p->steps[head + k] = moved;
    }
}

static int add_region(sc_plan *p, const sc_region *rg)
{
    sc_region *r = realloc(p->regions, sizeof *r * ((size_t)p->nregions + 1));
    if (!r)
        return -1;
    p->regions = r;
    r[p->nregions] = *rg;
    return p->nregions++;
}

/* The kernel step before conv2d head `head` that makes the head's sliced
 * input, when it can run per block: pointwise over that value's elements in
 * order, in no region, and no step between reads the value. -1 if none.
 * (autocast's cast of a conv's f32 input to bf16, A6: run whole, it wrote
 * the bf16 copy to memory and the conv read it back; per block, the copy
 * stays in the block's scratch.) */
static int prologue_of(former *F, int head, const sc_region *rg)
{
    sc_plan *p = F->b->p;
    const ir_node *hn = F->b->g->nodes[p->steps[head].node];
    if (hn->op != OP_conv2d || ir_view_root(hn->in[0]) != hn->in[0])
        return -1;
    int x = ir_slot(F->b->g, hn->in[0]);
    memset(F->produced, 0, sizeof(bool) * (size_t)p->nslots);
    F->produced[x] = true;
    for (int t = head - 1; t >= 0; t--) {
        const step *s = &p->steps[t];
        const cg_launch *l = s->launch;
        if (s->kind != S_KERNEL || !l || l->nstore < 1 || l->store_slot[0] != x) {
            if (step_reads(F, s))
                return -1;
            continue;
        }
        int64_t B;
        bool ok = s->region < 0 && l->nstore == 1 &&
                  tiles_per_unit(l, rg->nq, &B) > 0 &&
                  l->ntiles / l->sz[2] * l->sz[0] == ir_type_numel(&p->types[x]);
        for (int a = 0; a < l->nargs && ok; a++)
            ok = l->args[a].base != x || (l->k.bufs[a].out && l->args[a].offset == 0);
        return ok ? t : -1;
    }
    return -1;
}

/* Tries a region headed by step i; returns its last step, or i. */
static int form_one(former *F, int i, int *hoist)
{
    sc_plan *p = F->b->p;
    sc_region rg;
    if (p->steps[i].kind != S_EAGER || !head_space(F, &p->steps[i], &rg))
        return i;
    memset(F->produced, 0, sizeof(bool) * (size_t)p->nslots);
    F->produced[ir_slot(F->b->g, F->b->g->nodes[p->steps[i].node])] = true;
    int last = i, nh = 0, nh_used = 0, eager = i;
    for (int t = i + 1; t < p->nsteps && t - last <= SC_LOOKAHEAD; t++) {
        step *s = &p->steps[t];
        if (!step_reads(F, s)) {
            hoist[nh++] = t;
            continue;
        }
        if (s->kind == S_KERNEL && eager >= 0 && epilogue_ok(F, s, &p->steps[eager], &rg)) {
            for (int k = 0; k < s->launch->nstore; k++)
                F->produced[s->launch->store_slot[k]] = true;
            eager = -1;
        } else if (s->kind == S_EAGER && chain_ok(F, s, &rg)) {
            F->produced[ir_slot(F->b->g, F->b->g->nodes[s->node])] = true;
            eager = t;
        } else if (s->kind == S_EAGER && pool_ok(F, s, &rg)) {
            F->produced[ir_slot(F->b->g, F->b->g->nodes[s->node])] = true;
            eager = -1;   /* a pool has no epilogue */
        } else {
            break;
        }
        last = t;
        nh_used = nh;
    }
    if (last == i)
        return i;
    rg.first = i + nh_used;
    rg.last = last;
    hoist_steps(p, i, hoist, nh_used);
    int pro = prologue_of(F, rg.first, &rg);
    if (pro >= 0) {   /* moved to just before the head, into the region */
        step moved = p->steps[pro];
        memmove(&p->steps[pro], &p->steps[pro + 1], sizeof *p->steps * (size_t)(rg.first - 1 - pro));
        /* the regions formed between it and the head moved up one step
         * (the prologue is in none: each lies wholly before or after it) */
        for (int r = 0; r < p->nregions; r++)
            if (p->regions[r].first > pro && p->regions[r].last < rg.first)
                p->regions[r].first--, p->regions[r].last--;
        p->steps[--rg.first] = moved;
    }
    int r = add_region(p, &rg);
    if (r < 0)
        return -1;
    for (int t = rg.first; t <= rg.last; t++) {
        step *s = &p->steps[t];
        s->region = r;
        if (s->kind != S_KERNEL)
            continue;
        int64_t B, tq = tiles_per_unit(s->launch, rg.nq, &B);
        cg_launch *l = s->launch;
        if (B != l->sz[1]) {   /* narrower tiles that stop at block edges */
            int64_t rows = l->ntiles / l->sz[2];
            l->sz[1] = B;
            l->sz[2] = l->sz[0] / B;
            l->ntiles = rows * l->sz[2];
        }
        s->tq = tq;
    }
    return rg.last;
}

/* Each region is the steps [first, last], in order, and they are its alone:
 * what runs a region (sc_block_run) and the memory plan (mem.c) trust its
 * bounds. 0, or -1 with an error (a scheduler bug, not the user's). */
static int check_regions(const sc_plan *p)
{
    for (int r = 0; r < p->nregions; r++) {
        const sc_region *rg = &p->regions[r];
        bool ok = rg->first >= 0 && rg->first <= rg->last && rg->last < p->nsteps &&
                  (r == 0 || p->regions[r - 1].last < rg->first);
        for (int t = 0; t < p->nsteps && ok; t++)
            ok = (p->steps[t].region == r) == (t >= rg->first && t <= rg->last);
        if (!ok) {
            rt_error("scheduler: region %d (steps %d-%d) does not hold exactly its steps", r, rg->first, rg->last);
            return -1;
        }
    }
    return 0;
}

int sc_block_regions(builder *b)
{
    sc_plan *p = b->p;
    free(p->regions);
    p->regions = NULL;
    p->nregions = 0;
    p->conv_pools = 0;
    p->pool_notes[0] = '\0';
    for (int i = 0; i < p->nsteps; i++)
        p->steps[i].region = -1;
    const char *env = getenv("TJIT_BLOCKS");
    if (env && strcmp(env, "0") == 0)   /* off: every step runs whole (tests, measuring) */
        return 0;
    former F = {b, calloc((size_t)p->nslots + 1, sizeof(bool))};
    int *hoist = malloc(sizeof(int) * ((size_t)p->nsteps + 1));
    int rc = F.produced && hoist ? 0 : -1;
    for (int i = 0; i < p->nsteps && rc == 0; i++) {
        int last = form_one(&F, i, hoist);
        if (last < 0)
            rc = -1;
        else
            i = last;
    }
    free(F.produced);
    free(hoist);
    return rc ? rc : check_regions(p);
}

/* ---- running a region ------------------------------------------------------------------------ */

typedef struct region_ctx {
    const ir_graph *g;
    const sc_plan *p;
    const sc_region *rg;
    tj_tensor **vals;
    atomic_int failed;
    int fail_step;
    char msg[512];
    int64_t band, oc;   /* the head conv's output channels per band (0: none) of oc */
    int64_t rows, ov;   /* or its output rows per band (0: none) and the rows kept above
                         * a band for the pool (rows_band) */
    int64_t H, W, ph;   /* the conv's output rows, columns; the pool's output rows */
    ir_window2d pw;     /* the pool's window */
    float *post;        /* per step from the region's first: scale and shift of
                         * its conv's fused epilogue and pool (cpost.c), [2][C]
                         * at post + postat[i], or NULL */
    int64_t *postat;    /* -1: the step runs as planned */
    size_t postbytes;
    uint64_t token;     /* this run's (rt_conv_band.token: the weights hold still) */
} region_ctx;

/* One block: its units [q0, q1) and the index of each block dim (the last
 * one: where its chunk starts). */
typedef struct blk {
    int64_t q0, q1, idx[TJ_MAX_DIMS], len;
    int64_t o0, o1, oc;   /* a band: output channels [o0, o1) of oc (o1 = 0: none) */
    char *scratch;
} blk;

static void block_of(const sc_region *rg, int64_t b, blk *k)
{
    int64_t last = rg->size[rg->nd - 1], nchunks = (last + rg->chunk - 1) / rg->chunk;
    int64_t pre = b / nchunks, r0 = b % nchunks * rg->chunk;
    k->len = last - r0 < rg->chunk ? last - r0 : rg->chunk;
    k->idx[rg->nd - 1] = r0;
    for (int d = rg->nd - 2; d >= 0; d--) {
        k->idx[d] = pre % rg->size[d];
        pre /= rg->size[d];
    }
    pre = b / nchunks;
    k->q0 = pre * last + r0;
    k->q1 = k->q0 + k->len;
}

/* Where slot s would start if it were whole: its buffer, or for a value in
 * scratch, the block's part moved back by the block's offset. */
static char *whole_base(const region_ctx *c, int s, const blk *k)
{
    const sc_plan *p = c->p;
    int b = s >= p->ninputs ? p->buf_of[s] : -1;
    if (b >= 0 && p->bufs[b].where == SC_SCRATCH) {
        int64_t per_unit = ir_type_numel(&p->types[s]) / c->rg->nq;
        int64_t skip = k->q0 * per_unit + (k->o1 ? k->o0 * (per_unit / k->oc) : 0);
        uintptr_t at = (uintptr_t)k->scratch + (uintptr_t)p->bufs[b].offset;
        return (char *)(at - (uintptr_t)(skip * (int64_t)tj_dtype_size(p->types[s].dtype)));
    }
    return rt_ptr(c->vals[s]);
}

/* The tile of launch l that starts at element x of its domain, or -1 when
 * none does (x inside a tile). */
static int64_t tile_at(const cg_launch *l, int64_t x)
{
    int64_t N = l->sz[0], B = l->sz[1], NB = l->sz[2];
    if ((x % N) % B)
        return -1;
    return x / N * NB + x % N / B;
}

static int run_kernel_block(const region_ctx *c, const step *s, const blk *k)
{
    const cg_launch *l = s->launch;
    char *bufs[CG_MAX_BUFS];
    for (int a = 0; a < l->nargs; a++) {
        int base = l->args[a].base;
        bufs[a] = whole_base(c, base, k) + l->args[a].offset * (int64_t)tj_dtype_size(c->p->types[base].dtype);
    }
    int64_t t0 = k->q0 * s->tq, t1 = k->q1 * s->tq;
    if (k->o1) {   /* the band's tiles (band_chans checked that they are whole) */
        int64_t e = l->ntiles / l->sz[2] * l->sz[0] / c->rg->nq;
        t0 = tile_at(l, k->q0 * e + k->o0 * (e / k->oc));
        t1 = tile_at(l, k->q0 * e + k->o1 * (e / k->oc));
    }
    s->fn(bufs, t0, t1, l->sz);
    return 0;
}

/* A header for the block's slice of slot `slot` (sl: the dim each block dim
 * cuts, -1 none) over stack storage st. */
static void slice_header(const region_ctx *c, int slot, const signed char *sl, const blk *k, tj_tensor *h,
                         rt_storage *st)
{
    const sc_plan *p = c->p;
    const ir_type *ty = &p->types[slot];
    const tj_tensor *t = c->vals[slot];
    memset(h, 0, sizeof *h);
    h->magic = RT_LIVE;
    atomic_init(&h->refs, 1);
    h->dtype = ty->dtype;
    h->ndim = ty->ndim;
    h->weak = ty->weak;
    memcpy(h->shape, ty->shape, sizeof h->shape);
    if (t)
        memcpy(h->strides, t->strides, sizeof h->strides);
    else
        rt_contiguous_strides(ty->ndim, ty->shape, h->strides);
    char *ptr = whole_base(c, slot, k);
    for (int d = 0; d < c->rg->nd; d++) {
        if (sl[d] < 0)
            continue;
        ptr += k->idx[d] * h->strides[sl[d]] * (int64_t)tj_dtype_size(ty->dtype);
        h->shape[sl[d]] = d == c->rg->nd - 1 ? k->len : 1;
    }
    if (k->o1) {   /* a band: its channels (dim 1) */
        ptr += k->o0 * h->strides[1] * (int64_t)tj_dtype_size(ty->dtype);
        h->shape[1] = k->o1 - k->o0;
    }
    atomic_init(&st->refs, 1);
    atomic_init(&st->version, 0);
    atomic_init(&st->raw, 0);
    st->nbytes = 0;
    st->data = ptr;
    st->serial = 0;   /* borrowed memory: no cache may key on it */
    h->storage = st;
}

static int run_eager_block(const region_ctx *c, const step *s, const blk *k)
{
    const ir_node *n = c->g->nodes[s->node];
    tj_tensor h[4], *in[3] = {NULL, NULL, NULL};
    rt_storage st[4];
    signed char out_sl[TJ_MAX_DIMS];
    for (int d = 0; d < TJ_MAX_DIMS; d++)
        out_sl[d] = (signed char)(d < c->rg->nd ? d : -1);
    for (int j = 0; j < n->nin && j < 3; j++)
        if (n->in[j]) {
            slice_header(c, ir_slot(c->g, n->in[j]), s->slice[j], k, &h[j], &st[j]);
            in[j] = &h[j];
        }
    slice_header(c, ir_slot(c->g, n), out_sl, k, &h[3], &st[3]);
    ir_attrs a;
    ir_node_attrs(n, &a);
    return rt_run_kernel(n->op, &h[3], in, n->nin, &a);
}

/* Conv step i on block k with its epilogue and pool on its rows (cpost.c)
 * where its row kernel runs it, through hook (its bands, if any, for the
 * grid kernel): 1, the steps up to the pool done; 0, the conv alone done
 * (the rest to run as planned); -1, an error. */
static int run_post_block(const region_ctx *c, const step *s, int i, const blk *k,
                          rt_conv_band *hook)
{
    const sc_cpost *cp = &c->p->cpost[i];
    const float *pv = c->post + c->postat[i - c->rg->first];
    const ir_node *conv = c->g->nodes[s->node], *pool = c->g->nodes[c->p->steps[cp->pstep].node];
    int64_t C = c->p->types[ir_slot(c->g, conv)].shape[1];
    tj_tensor h;
    rt_storage st;
    signed char out_sl[TJ_MAX_DIMS];
    for (int d = 0; d < TJ_MAX_DIMS; d++)
        out_sl[d] = (signed char)(d < c->rg->nd ? d : -1);
    slice_header(c, ir_slot(c->g, pool), out_sl, k, &h, &st);
    ir_attrs a;
    ir_window2d w;
    ir_node_attrs(pool, &a);
    ir_window2d_of(pool->op, &a, NULL, &w, NULL, 0);
    rt_conv_post q = {cp->scale != -1 ? pv : NULL, cp->shift != -1 ? pv + C : NULL, cp->relu,
                      (int)w.kernel[0], (int)w.padding[0], (int)w.padding[1], h.shape[2],
                      h.shape[3], st.data};
    bool whole = h.strides[1] == h.shape[2] * h.shape[3] && h.strides[2] == h.shape[3] &&
                 h.strides[3] == 1;
    hook->post = whole ? &q : NULL;
    rt_conv_band *prev = rt_conv_band_get();
    rt_conv_band_set(hook);
    int rc = run_eager_block(c, s, k);
    rt_conv_band_set(prev);
    hook->post = NULL;
    return rc ? -1 : hook->posted;
}

/* Steps i0..i1 of the region on block k, step i0 through hook when not
 * NULL (rt_conv_band: the head conv's bands); -1 with the error kept in c. */
static int run_steps(region_ctx *c, blk *k, int i0, int i1, rt_conv_band *hook)
{
    bool prof = rt_prof_on();
    for (int i = i0; i <= i1; i++) {
        const step *s = &c->p->steps[i];
        rt_conv_band none = {0}, *h = i == i0 && hook ? hook : &none;
        h->token = c->token;
        int64_t t0 = prof ? rt_prof_now() : 0;
        int rc;
        if (c->post && c->postat[i - c->rg->first] >= 0) {
            rc = run_post_block(c, s, i, k, h);
            if (rc > 0) {   /* and the steps up to the pool */
                if (prof)
                    rt_prof_emit(s->prof_name, RT_PROF_BLOCK, t0, rt_prof_now(), 0, -1);
                i = c->p->cpost[i].pstep;
                continue;
            }
        } else {
            rt_conv_band *prev = rt_conv_band_get();
            rt_conv_band_set(s->kind == S_EAGER ? h : prev);
            rc = s->kind == S_KERNEL ? run_kernel_block(c, s, k) : run_eager_block(c, s, k);
            rt_conv_band_set(prev);
        }
        if (prof)   /* each block's steps in the lane of the thread that ran them */
            rt_prof_emit(s->prof_name, RT_PROF_BLOCK, t0, rt_prof_now(), 0, -1);
        if (rc == 0)
            continue;
        if (atomic_exchange(&c->failed, 1) == 0) {
            snprintf(c->msg, sizeof c->msg, "%s", tj_last_error());
            c->fail_step = i;
        }
        return -1;
    }
    return 0;
}

typedef struct band_ctx {
    region_ctx *c;
    blk *k;
    int64_t pnext;   /* row bands: the pool's next output row */
} band_ctx;

/* After the head conv's band [o0, o1): the region's other steps on it. */
static int band_done(void *ctx, int64_t o0, int64_t o1)
{
    band_ctx *b = ctx;
    b->k->o0 = o0;
    b->k->o1 = o1;
    int rc = run_steps(b->c, b->k, b->c->rg->first + 1, b->c->rg->last, NULL);
    b->k->o1 = 0;
    return rc;
}

/* ---- row bands: the head conv's output rows [r0, r1) of every channel at
 * a time, in a buffer per scratch value at its usual offset in the block's
 * scratch: [C][ov + rows][W], row r of the band at row r - r0 + ov, the ov
 * rows above holding the pool's input rows of the band before (copied
 * down after each band). ---- */

static char *band_buf(const region_ctx *c, const blk *k, int slot)
{
    return k->scratch + c->p->bufs[c->p->buf_of[slot]].offset;
}

static bool in_scratch(const sc_plan *p, int slot)
{
    return slot >= p->ninputs && p->buf_of[slot] >= 0 && p->bufs[p->buf_of[slot]].where == SC_SCRATCH;
}

/* Epilogue kernel step s on rows [r0, r1) of the band: one tile per
 * channel of the rows' (r1 - r0) * W elements (rows_band checked that a
 * tile is a channel's H * W elements, its last outer dim the channel), the
 * scratch values' channel stride the band buffer's. */
static int run_kernel_rows(const region_ctx *c, const step *s, const blk *k, int64_t r0, int64_t r1)
{
    const cg_launch *l = s->launch;
    const cg_kernel *kk = &l->k;
    int no = kk->nouter;
    int64_t sz[3 + CG_MAX_OUTER + CG_MAX_BUFS * (CG_MAX_OUTER + 1)];
    memcpy(sz, l->sz, sizeof(int64_t) * (size_t)CG_SZ_LEN(kk));
    sz[0] = sz[1] = (r1 - r0) * c->W;
    sz[2] = 1;
    char *bufs[CG_MAX_BUFS];
    for (int a = 0; a < l->nargs; a++) {
        int base = l->args[a].base;
        int64_t es = (int64_t)tj_dtype_size(c->p->types[base].dtype);
        if (in_scratch(c->p, base)) {
            for (int d = 0; d < no - 1; d++)
                sz[CG_SZ_STRIDE(kk, a, d)] = 0;
            sz[CG_SZ_STRIDE(kk, a, no - 1)] = (c->rows + c->ov) * c->W;
            bufs[a] = band_buf(c, k, base) + c->ov * c->W * es;
        } else {
            int64_t at = l->args[a].offset + r0 * c->W * l->sz[CG_SZ_STRIDE(kk, a, no)];
            bufs[a] = whole_base(c, base, k) + at * es;
        }
    }
    s->fn(bufs, k->q0 * c->oc, k->q1 * c->oc, sz);
    return 0;
}

/* The pool step (the region's last) on its output rows [p0, p1), its
 * input the band buffer (rows up to r1 - 1 of the conv's output, the band
 * from r0). */
static int run_pool_rows(const region_ctx *c, const step *s, const blk *k, int64_t r0,
                         int64_t p0, int64_t p1)
{
    const ir_node *n = c->g->nodes[s->node];
    tj_tensor h[2], *in[1] = {&h[0]};
    rt_storage st[2];
    signed char out_sl[TJ_MAX_DIMS];
    for (int d = 0; d < TJ_MAX_DIMS; d++)
        out_sl[d] = (signed char)(d < c->rg->nd ? d : -1);
    int xs = ir_slot(c->g, n->in[0]);
    int64_t es = (int64_t)tj_dtype_size(c->p->types[xs].dtype);
    slice_header(c, xs, s->slice[0], k, &h[0], &st[0]);
    h[0].strides[1] = (c->rows + c->ov) * c->W;
    h[0].strides[2] = c->W;
    h[0].strides[3] = 1;
    st[0].data = band_buf(c, k, xs) + (c->ov - r0) * c->W * es;
    slice_header(c, ir_slot(c->g, n), out_sl, k, &h[1], &st[1]);
    ir_attrs a;
    ir_node_attrs(n, &a);
    rt_pool_rows_set(p0, p1);
    int rc = rt_run_kernel(n->op, &h[1], in, 1, &a);
    rt_pool_rows_set(0, 0);
    return rc;
}

/* After the head conv's rows [r0, r1): the epilogue kernels on them, the
 * pool on the output rows whose windows they complete, then the pool's
 * input rows the next band's pool rows read copied to the buffer's top. */
static int band_rows_done(void *ctx, int64_t r0, int64_t r1)
{
    band_ctx *b = ctx;
    region_ctx *c = b->c;
    const sc_plan *p = c->p;
    bool prof = rt_prof_on();
    int last = c->rg->last, rc = 0, i = c->rg->first + 1;
    for (; i <= last && !rc; i++) {
        const step *s = &p->steps[i];
        int64_t t0 = prof ? rt_prof_now() : 0;
        if (i < last) {
            rc = run_kernel_rows(c, s, b->k, r0, r1);
        } else {
            const ir_window2d *w = &c->pw;
            int64_t e = r1 - w->kernel[0] + w->padding[0];
            int64_t p1 = r1 == c->H ? c->ph : e >= 0 ? e / w->stride[0] + 1 : 0;
            p1 = p1 < c->ph ? p1 : c->ph;
            if (p1 > b->pnext)
                rc = run_pool_rows(c, s, b->k, r0, b->pnext, p1);
            b->pnext = p1 > b->pnext ? p1 : b->pnext;
        }
        if (prof)
            rt_prof_emit(s->prof_name, RT_PROF_BLOCK, t0, rt_prof_now(), 0, -1);
    }
    if (rc) {
        if (atomic_exchange(&c->failed, 1) == 0) {
            snprintf(c->msg, sizeof c->msg, "%s", tj_last_error());
            c->fail_step = i - 1;
        }
        return -1;
    }
    if (r1 < c->H && c->ov) {   /* rows r1 - ov .. r1 - 1 to the top */
        int xs = ir_slot(c->g, c->g->nodes[p->steps[last].node]->in[0]);
        int64_t es = (int64_t)tj_dtype_size(p->types[xs].dtype), rs = c->W * es;
        char *bb = band_buf(c, b->k, xs);
        for (int64_t ch = 0; ch < c->oc; ch++) {
            char *d = bb + ch * (c->rows + c->ov) * rs;
            memcpy(d, d + (r1 - r0) * rs, (size_t)(c->ov * rs));
        }
    }
    return 0;
}

static void region_chunk(void *c_, int64_t b0, int64_t b1)
{
    region_ctx *c = c_;
    blk k = {0};
    size_t sb = (size_t)c->rg->scratch_bytes;
    if (sb && !(k.scratch = rt_alloc(sb))) {
        if (atomic_exchange(&c->failed, 1) == 0)
            snprintf(c->msg, sizeof c->msg, "out of memory allocating %zu bytes of block scratch", sb);
        return;
    }
    k.oc = c->oc;
    for (int64_t b = b0; b < b1 && !atomic_load(&c->failed); b++) {
        block_of(c->rg, b, &k);
        int i0 = c->rg->first;
        if (c->band || c->rows) {   /* the conv calls back per band, when it can */
            band_ctx bc = {c, &k, 0};
            int cs = ir_slot(c->g, c->g->nodes[c->p->steps[i0].node]);
            rt_conv_band hook = {c->band, c->rows, (c->rows + c->ov) * c->W, c->ov,
                                 c->rows ? band_buf(c, &k, cs) : NULL, &bc,
                                 c->rows ? band_rows_done : band_done, NULL, c->token, false,
                                 false};
            if (run_steps(c, &k, i0, i0, &hook))
                break;
            i0 = hook.posted ? c->p->cpost[i0].pstep + 1 : hook.used ? c->rg->last + 1 : i0 + 1;
        }
        if (run_steps(c, &k, i0, c->rg->last, NULL))
            break;
    }
    rt_free(k.scratch, sb);
}

/* Output channels per band of the head conv of region rg (TJIT_CONV_BAND=N
 * or cN: that many; c: the most whose output fits in SC_BAND_BYTES, a
 * multiple of 4; unset, 0, or r... where row bands do not apply: none,
 * measured faster since the conv stores straight to its output) when
 * the region is a conv2d whose value lives in scratch, then only pointwise
 * kernels whose tiles stop at the bands' edges, then the fused pool last;
 * else 0 (no bands). rows: 1 when such a region could be cut into bands of
 * any size (row bands: tiles stop at every channel edge). */
static int64_t band_chans(const ir_graph *g, const sc_plan *p, const sc_region *rg, int64_t *oc,
                          bool rows)
{
    const char *env = getenv("TJIT_CONV_BAND");
    if (!rows && (!env || !env[0] || env[0] == 'r'))
        return 0;   /* the default: no bands (docs/perf.md, P11: row bands, ...) */
    env = rows ? NULL : env[0] == 'c' ? (env[1] ? env + 1 : NULL) : env;
    if (rg->last <= rg->first || (env && !strcmp(env, "0")))
        return 0;
    const step *h = &p->steps[rg->first], *t = &p->steps[rg->last];
    if (h->kind != S_EAGER || t->kind != S_EAGER)
        return 0;
    const ir_node *conv = g->nodes[h->node], *pool = g->nodes[t->node];
    int cs = ir_slot(g, conv), b = p->buf_of[cs];
    const ir_type *ty = &p->types[cs];
    if (conv->op != OP_conv2d || (pool->op != OP_max_pool2d && pool->op != OP_avg_pool2d) ||
        ty->ndim != 4 || ty->shape[0] != rg->nq || b < 0 || p->bufs[b].where != SC_SCRATCH)
        return 0;

    int64_t C = ty->shape[1], per = ty->shape[2] * ty->shape[3] * (int64_t)tj_dtype_size(ty->dtype);
    int64_t chans = rows ? 1 : env ? strtoll(env, NULL, 10) : SC_BAND_BYTES / (per > 0 ? per : 1) / 4 * 4;
    if (chans <= 0 || chans >= C)
        return 0;
    for (int i = rg->first + 1; i < rg->last; i++) {
        const step *s = &p->steps[i];
        if (s->kind != S_KERNEL || s->launch->k.kind != CG_TILES)
            return 0;

        int64_t e = s->launch->ntiles / s->launch->sz[2] * s->launch->sz[0];
        if (e % rg->nq || e / rg->nq % C)
            return 0;
        e /= rg->nq;
        for (int64_t o = chans; o <= C; o = o < C && o + chans > C ? C : o + chans)
            if (tile_at(s->launch, o * (e / C)) < 0)
                return 0;

    }
    for (int s = g->ninputs; s < p->nslots; s++)   /* the scratch values: the conv's size */
        if (p->def[s] >= rg->first && p->def[s] <= rg->last && p->buf_of[s] >= 0 &&
            p->bufs[p->buf_of[s]].where == SC_SCRATCH && ir_type_numel(&p->types[s]) != ir_type_numel(ty))
            return 0;
    *oc = C;
    return chans;
}

/* Output rows per band of the head conv of region rg (TJIT_CONV_BAND=rN:
 * N; r alone: the most, even, whose rows of every scratch value, with the
 * pool's rows kept above, fit in SC_BAND_BYTES; else none: channel bands
 * are the default, row bands measured no faster, docs/perf.md) when
 * band_chans would band it at any size, its pool is a max_pool2d that computes rows
 * (rt_pool_rows_fit), every epilogue kernel's tile is one channel of one
 * image (its inner extent H * W, its last outer dim the channel) and reads
 * the scratch values contiguously, and the scratch values lie at one
 * offset or apart; else 0. Fills c's geometry. */
static int64_t rows_band(const ir_graph *g, const sc_plan *p, const sc_region *rg, region_ctx *c)
{
    const char *env = getenv("TJIT_CONV_BAND");
    int64_t oc = 0;
    if (!env || env[0] != 'r' || !band_chans(g, p, rg, &oc, true))
        return 0;
    const ir_node *conv = g->nodes[p->steps[rg->first].node], *pool = g->nodes[p->steps[rg->last].node];
    const ir_type *ty = &p->types[ir_slot(g, conv)];
    ir_attrs a;
    ir_node_attrs(pool, &a);
    if (pool->op != OP_max_pool2d || !rt_pool_rows_fit(&a) ||
        ir_window2d_of(pool->op, &a, NULL, &c->pw, NULL, 0) < 0)
        return 0;
    int64_t C = ty->shape[1], H = ty->shape[2], W = ty->shape[3], hw = H * W;
    for (int i = rg->first + 1; i < rg->last; i++) {
        const cg_launch *l = p->steps[i].launch;
        int no = l->k.nouter;
        if (l->k.lanes || no < 1 || l->sz[0] != hw || l->sz[1] != hw || l->sz[2] != 1 ||
            l->sz[3 + no - 1] != C || l->ntiles != rg->nq * C)
            return 0;
        for (int b = 0; b < l->nargs; b++)
            if (in_scratch(p, l->args[b].base) &&
                (l->args[b].offset || l->sz[CG_SZ_STRIDE(&l->k, b, no - 1)] != hw ||
                 l->sz[CG_SZ_STRIDE(&l->k, b, no)] != 1))
                return 0;
    }
    int64_t nb = 0, size = ir_type_numel(ty) / rg->nq * (int64_t)tj_dtype_size(ty->dtype);
    for (int s = g->ninputs; s < p->nslots; s++) {
        if (p->def[s] < rg->first || p->def[s] > rg->last || !in_scratch(p, s))
            continue;
        int64_t o = p->bufs[p->buf_of[s]].offset, seen = 0;
        for (int t = g->ninputs; t < s; t++) {
            if (p->def[t] < rg->first || p->def[t] > rg->last || !in_scratch(p, t))
                continue;
            int64_t d = p->bufs[p->buf_of[t]].offset - o;
            if (d && d > -size && d < size)
                return 0;   /* overlapping, not the same place */
            seen |= !d;
        }
        nb += !seen;
    }
    c->ov = c->pw.kernel[0] - 1;
    int64_t per = nb * C * W * (int64_t)tj_dtype_size(ty->dtype), rows;
    rows = env[1] ? strtoll(env + 1, NULL, 10) : (SC_BAND_BYTES / (per > 0 ? per : 1) - c->ov) / 2 * 2;
    if (rows < c->ov || rows < 1 || rows + c->ov > H)
        return 0;
    c->H = H;
    c->W = W;
    c->ph = p->types[ir_slot(g, pool)].shape[2];
    c->oc = C;
    return rows;
}

/* The scale and shift of each conv of region rg that takes its epilogue and
 * pool (cpost.c), as f32 [C] from their values in vals (any strides); a
 * value not made for this call (a constant) leaves its conv's steps as
 * planned. 0, or -1 when out of memory. */
static int post_values(const sc_plan *p, const sc_region *rg, tj_tensor **vals, region_ctx *c)
{
    int n = rg->last - rg->first + 1;
    int64_t floats = 0;
    for (int i = rg->first; p->cpost && i <= rg->last; i++)
        if (p->cpost[i].pstep > i)
            floats += 2 * p->types[ir_slot(c->g, c->g->nodes[p->steps[i].node])].shape[1];
    if (!floats)
        return 0;
    c->postbytes = (size_t)floats * sizeof(float) + (size_t)n * sizeof(int64_t);
    if (!(c->post = rt_alloc(c->postbytes)))
        return -1;
    c->postat = (int64_t *)(c->post + floats);
    int64_t at = 0;
    for (int i = rg->first; i <= rg->last; i++) {
        const sc_cpost *cp = &p->cpost[i];
        c->postat[i - rg->first] = -1;
        if (cp->pstep <= i)
            continue;
        int64_t C = p->types[ir_slot(c->g, c->g->nodes[p->steps[i].node])].shape[1];
        bool ok = true;
        for (int v = 0; v < 2; v++) {
            int slot = v ? cp->shift : cp->scale;
            for (int64_t o = 0; slot == -2 && o < C; o++)   /* a constant */
                c->post[at + v * C + o] = v ? cp->cshift : cp->cscale;
            const tj_tensor *t = slot >= 0 ? vals[slot] : NULL;
            ok = ok && (slot < 0 || t);
            if (!t || !ok)
                continue;
            int64_t cs = 0;   /* the stride of the dim of C elements */
            for (int d = 0; d < t->ndim; d++)
                cs = t->shape[d] == C ? t->strides[d] : cs;
            const float *x = rt_ptr(t);
            for (int64_t o = 0; o < C; o++)
                c->post[at + v * C + o] = x[o * cs];
        }
        if (ok)
            c->postat[i - rg->first] = at;
        at += 2 * C;
    }
    return 0;
}

int sc_block_run(const ir_graph *g, const sc_plan *p, int r, tj_tensor **vals, sc_call_mem *m)
{
    const sc_region *rg = &p->regions[r];
    for (int s = g->ninputs; s < p->nslots; s++)   /* what outlives the region: whole */
        if (p->def[s] >= rg->first && p->def[s] <= rg->last && p->buf_of[s] >= 0 &&
            p->bufs[p->buf_of[s]].where != SC_SCRATCH && !(vals[s] = sc_mem_tensor(p, m, s)))
            return -1;
    if (!rt_blas_core())   /* loaded here: an error on a pool thread would be lost */
        return -1;
    static _Atomic uint64_t runs;   /* the tokens handed out */
    region_ctx c = {.g = g, .p = p, .rg = rg, .vals = vals, .fail_step = -1,
                    .token = atomic_fetch_add(&runs, 1) + 1};
    atomic_init(&c.failed, 0);
    if (post_values(p, rg, vals, &c) < 0) {
        rt_error("out of memory for a conv's fused epilogue (graph @%s)", g->name);
        return -1;
    }
    c.rows = rows_band(g, p, rg, &c);
    c.band = c.rows ? 0 : band_chans(g, p, rg, &c.oc, false);
    rt_blas_serial_begin();
    /* Many blocks are claimed one by one, so a thread slowed by the host
     * takes fewer (P12's 32 images: 0.5-10% faster, the most on a busy
     * host; regions of 16-64 blocks of P8 level); a few stay one chunk per
     * thread (P11's 8 images: 0.7-1.2% slower one by one). docs/perf.md */
    if (rg->nblocks >= 4 * (int64_t)rt_threads())
        rt_parallel_tasks(rg->nblocks, region_chunk, &c);
    else
        rt_parallel_for(rg->nblocks, 1, region_chunk, &c);
    rt_blas_serial_end();
    if (c.post)
        rt_free(c.post, c.postbytes);
    if (!atomic_load(&c.failed))
        return 0;
    const step *s = c.fail_step >= 0 ? &p->steps[c.fail_step] : NULL;
    if (s && s->kind == S_EAGER)
        rt_error("%s: %s (node %%%d of graph @%s)", ir_ops[g->nodes[s->node]->op].name, c.msg, s->node, g->name);
    else
        rt_error("%s (graph @%s)", c.msg, g->name);
    return -1;
}
