/* lower.c - a fused group at concrete sizes -> cg_kernel + launch data.
 *
 *   domain D (ir/fusion.h) -----------------------------------------+
 *   nodes: formula calls, where, casts, constants, reductions (stages)  |
 *   operands from outside: loads, strides per domain dim <-- geometry   |
 *   stored nodes: stores (full) or row stores (row values)              |
 *                                                                       v
 *   domain dims -> kernel dims: drop size-1 dims, merge neighbours whose
 *   strides line up in every buffer (pointwise: all dims, the last one
 *   inner; rows: outer and reduced dims apart, the reduced ones must become
 *   one inner dim) -> stride classes (0, 1, strided) and the sz array.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lower.h"

typedef struct lw {
    const cg_lower_in *in;
    const ir_group *gr;
    cg_launch *out;
    int r;                             /* domain rank */
    int64_t dom[TJ_MAX_DIMS];          /* concrete domain sizes */
    int64_t dstr[CG_MAX_BUFS][TJ_MAX_DIMS];   /* per buffer: strides per domain dim */
    int memo_n;
    int *memo;                         /* per node id: instruction, -1 */
    char *err;
    size_t nerr;
    bool failed;
} lw;

static int fail(lw *L, const char *fmt, const char *detail)
{
    if (!L->failed)
        snprintf(L->err, L->nerr, fmt, detail ? detail : "");
    L->failed = true;
    return -1;
}

static bool is_member(const lw *L, const ir_node *n)
{
    return n && !ir_node_is_input(n) && L->in->f->group_of[n->id] == (int)(L->gr - L->in->f->groups);
}

/* ---- buffers ------------------------------------------------------------------------- */

/* The buffer for value `slot` read (or written) at map m over its dims. */
static int buffer(lw *L, int slot, const signed char *m, tj_dtype dt, bool out)
{
    const cg_geom *ge = &L->in->geom[slot];
    const ir_type *t = &L->in->types[slot];
    if (ge->base < 0)
        return fail(L, "a value read by the kernel is not in memory%s", NULL);
    int64_t s[TJ_MAX_DIMS] = {0};
    for (int d = 0; d < t->ndim; d++)
        if (m[d] >= 0 && t->shape[d] != 1)
            s[(int)m[d]] += ge->strides[d];
    cg_launch *o = L->out;
    for (int b = 0; !out && b < o->k.nbufs; b++)
        if (!o->k.bufs[b].out && o->args[b].base == ge->base && o->args[b].offset == ge->offset &&
            o->k.bufs[b].dt == dt && !memcmp(L->dstr[b], s, sizeof s))
            return b;
    int b = cg_add_buf(&o->k, dt, out, 1);
    if (b < 0)
        return fail(L, "too many buffers%s", NULL);
    o->args[b] = (cg_arg){ge->base, ge->offset};
    memcpy(L->dstr[b], s, sizeof s);
    o->nargs = o->k.nbufs;
    return b;
}

/* ---- values ---------------------------------------------------------------------------- */

static int val(lw *L, const ir_node *n);

/* Operand j of n as an instruction, read at the index n's map implies. */
static int operand(lw *L, const ir_node *n, int j)
{
    const ir_node *o = n->in[j];
    const ir_node *end = ir_view_root(o);
    if (is_member(L, end))
        return val(L, end);
    if (!ir_node_is_input(end) && (end->op == OP_scalar || end->op == OP_full))   /* inlined */
        return cg_add_const(&L->out->k, end->type.dtype, end->op == OP_scalar ? end->attrs[0].f : end->attrs[1].f);
    const ir_graph *g = L->in->g;
    signed char m[TJ_MAX_DIMS];
    memset(m, -1, sizeof m);
    const signed char *mn = L->in->f->map[n->id];
    if (ir_ops[n->op].kind == IR_REDUCE) {
        for (int d = 0; d < o->type.ndim; d++)
            m[d] = (signed char)d;
    } else {
        int lead = n->type.ndim - o->type.ndim;
        for (int d = 0; d < o->type.ndim; d++)
            m[d] = o->type.shape[d] == 1 && n->type.shape[d + lead] != 1 ? -1 : mn[d + lead];
    }
    int slot = ir_slot(g, o);
    int b = buffer(L, slot, m, L->in->types[slot].dtype, false);
    return b < 0 ? -1 : cg_add_load(&L->out->k, b);
}

/* Whether instruction i varies along the inner (reduced) dims of a ROWS
 * kernel: it reads a buffer with a nonzero stride there. */
static bool inner_dep(const lw *L, int i)
{
    const cg_kernel *k = &L->out->k;
    const cg_inst *in = &k->inst[i];
    if (in->k == CG_LOAD) {
        for (int d = L->r - L->gr->nred; d < L->r; d++)
            if (L->dom[d] != 1 && L->dstr[in->buf][d] != 0)
                return true;
        return false;
    }
    int nops = cg_inst_nops(in);
    for (int j = 0; j < nops; j++)
        if (inner_dep(L, in->a[j]))
            return true;
    return false;
}

static int call(lw *L, const ir_node *n, ir_op op, const int *a, int na)
{
    const ir_type *tp[2] = {&n->in[0]->type, na > 1 ? &n->in[1]->type : NULL};
    tj_dtype cd = ir_dtype_wide(ir_compute_dtype(op, tp, na));   /* f16, bf16: in f32 */
    cg_inst ci = {.k = CG_CALL, .dt = n->type.dtype, .op = op, .cdt = cd};
    for (int j = 0; j < na; j++)
        ci.a[j] = cg_add_cvt(&L->out->k, a[j], cd);
    /* x / r with r constant along the row: x * (1 / r), one division per
     * row instead of per element, as the eager softmax does (<= 1 ulp) */
    if (op == OP_div && L->gr->kind == IR_GROUP_ROWS && ir_dtype_is_float(cd) && cd == ci.dt &&
        inner_dep(L, ci.a[0]) && !inner_dep(L, ci.a[1])) {
        int r = cg_add_inst(&L->out->k, &(cg_inst){.k = CG_CALL, .dt = cd, .op = OP_reciprocal, .cdt = cd,
                                                   .a = {ci.a[1]}});
        ci.op = OP_mul;
        ci.a[1] = r;
    }
    return cg_add_inst(&L->out->k, &ci);
}

static int clamp(lw *L, const ir_node *n, int x)
{
    cg_kernel *k = &L->out->k;
    tj_dtype dt = ir_dtype_wide(n->type.dtype);   /* val() rounds an f16/bf16 result */
    int lo = cg_add_cvt(k, cg_add_const(k, TJ_F64, n->attrs[0].f), dt);
    int hi = cg_add_cvt(k, cg_add_const(k, TJ_F64, n->attrs[1].f), dt);
    x = cg_add_cvt(k, x, dt);
    int m = cg_add_inst(k, &(cg_inst){.k = CG_CALL, .dt = dt, .op = OP_maximum, .cdt = dt, .a = {x, lo}});
    return cg_add_inst(k, &(cg_inst){.k = CG_CALL, .dt = dt, .op = OP_minimum, .cdt = dt, .a = {m, hi}});
}

static int formula(lw *L, ir_op op, tj_dtype dt, int a, int b)
{
    return cg_add_inst(&L->out->k, &(cg_inst){.k = CG_CALL, .dt = dt, .op = op, .cdt = dt, .a = {a, b}});
}

/* var over the row, two passes like the eager kernel: mean = sum(x) / N,
 * m2 = sum((x - mean)^2), var = m2 / max(N - correction, 0) (in the input's
 * float dtype; the eager kernel accumulates f32 rows in double). */
static int variance(lw *L, const ir_node *n, int x)
{
    cg_kernel *k = &L->out->k;
    tj_dtype dt = ir_dtype_wide(n->type.dtype);
    int len = cg_add_cvt(k, cg_add_inst(k, &(cg_inst){.k = CG_ROWLEN, .dt = TJ_I64}), dt);
    int mean = formula(L, OP_div, dt, cg_add_reduce(k, CG_SUM, x), len);
    int d = formula(L, OP_sub, dt, x, mean);
    int m2 = cg_add_reduce(k, CG_SUM, formula(L, OP_mul, dt, d, d));
    int corr = cg_add_cvt(k, cg_add_const(k, TJ_I64, (double)n->attrs[1].i[0]), dt);
    int den = formula(L, OP_maximum, dt, formula(L, OP_sub, dt, len, corr), cg_add_const(k, dt, 0));
    return formula(L, OP_div, dt, m2, den);
}

/* any and all are amax and amin of x as bool (whose identities are false and
 * true, so an empty row needs no special case), stored as bool (u8 for a u8
 * x, as torch does). */
static int reduce(lw *L, const ir_node *n, int x)
{
    cg_kernel *k = &L->out->k;
    if (n->op == OP_any || n->op == OP_all)
        return cg_add_cvt(k, cg_add_reduce(k, n->op == OP_any ? CG_MAX : CG_MIN, cg_add_cvt(k, x, TJ_BOOL)),
                          n->type.dtype);
    x = cg_add_cvt(k, x, ir_dtype_wide(n->type.dtype));   /* f16, bf16: f32 accumulators */
    if (n->op == OP_var)
        return variance(L, n, x);
    cg_red r = n->op == OP_sum ? CG_SUM : n->op == OP_prod ? CG_PROD : n->op == OP_xor_sum ? CG_XOR
               : n->op == OP_amax ? CG_MAX : CG_MIN;
    if (L->dom[L->r - 1] == 0 && (r == CG_MAX || r == CG_MIN))
        return fail(L, "%s of an empty row (the eager kernel reports it)", ir_ops[n->op].name);
    return cg_add_reduce(&L->out->k, r, x);
}

static int val(lw *L, const ir_node *n)
{
    if (L->memo[n->id] >= 0)
        return L->memo[n->id];
    cg_kernel *k = &L->out->k;
    int a[3] = {-1, -1, -1}, v = -1;
    for (int j = 0; j < n->nin && j < 3 && !L->failed; j++)
        a[j] = operand(L, n, j);
    if (L->failed)
        return -1;
    switch (ir_ops[n->op].kind) {
    case IR_UNARY:
    case IR_BINARY: v = call(L, n, n->op, a, n->nin); break;
    case IR_TERNARY: /* where */
        v = cg_add_inst(k, &(cg_inst){.k = CG_WHERE, .dt = n->type.dtype,
                                      .a = {cg_add_cvt(k, a[0], TJ_BOOL), cg_add_cvt(k, a[1], n->type.dtype),
                                            cg_add_cvt(k, a[2], n->type.dtype)}});
        break;
    case IR_POINTWISE: v = n->op == OP_cast ? cg_add_cvt(k, a[0], n->type.dtype) : clamp(L, n, a[0]); break;
    case IR_CREATE:
        v = cg_add_const(k, n->type.dtype, n->op == OP_scalar ? n->attrs[0].f : n->attrs[1].f);
        break;
    case IR_REDUCE: v = reduce(L, n, a[0]); break;
    default: return fail(L, "%s has no lowering", ir_ops[n->op].name);
    }
    /* f16 and bf16 values are their 16 bits, rounded once per node as the
     * eager kernels round each op's result (emit.c converts) */
    if (v >= 0 && ir_dtype_is_half(n->type.dtype))
        v = cg_add_cvt(k, v, n->type.dtype);
    if (v < 0)
        return fail(L, "the kernel is too large%s", NULL);
    return L->memo[n->id] = v;
}

/* ---- kernel dims ------------------------------------------------------------------------ */

/* Merges domain dims [lo, hi) that line up in every buffer into runs;
 * writes run sizes and per-buffer strides; returns the number of runs. */
static int merge_dims(lw *L, int lo, int hi, int64_t *size, int64_t (*str)[TJ_MAX_DIMS])
{
    int nb = L->out->k.nbufs, n = 0;
    for (int d = lo; d < hi; d++) {
        if (L->dom[d] == 1)
            continue;
        bool merge = n > 0;
        for (int b = 0; merge && b < nb; b++)
            merge = str[b][n - 1] == L->dstr[b][d] * L->dom[d];
        if (merge) {
            size[n - 1] *= L->dom[d];
            for (int b = 0; b < nb; b++)
                str[b][n - 1] = L->dstr[b][d];
            continue;
        }
        size[n] = L->dom[d];
        for (int b = 0; b < nb; b++)
            str[b][n] = L->dstr[b][d];
        n++;
    }
    return n;
}

/* A ROWS kernel becomes a column kernel (kernel.h) when its rows are adjacent
 * in memory and their elements are not: no buffer is contiguous along the
 * inner (reduced) dim and one is along the last outer dim. */
static void columns(cg_launch *o, int no, const int64_t *osz, int64_t (*ostr)[TJ_MAX_DIMS],
                    int64_t rows, int64_t N)
{
    cg_kernel *k = &o->k;
    bool inner1 = false, lane1 = false;
    for (int b = 0; b < k->nbufs; b++) {
        inner1 = inner1 || o->sz[CG_SZ_STRIDE(k, b, no)] == 1;
        lane1 = lane1 || ostr[b][no - 1] == 1;
    }
    /* fewer than 16 adjacent rows fill no vector: the rows kernel's strided
     * loads then stay within the same cache lines anyway */
    if (inner1 || !lane1 || rows == 0 || osz[no - 1] < 16)
        return;
    int64_t last = osz[no - 1], nb = (last + CG_COLS_LANES - 1) / CG_COLS_LANES;
    k->lanes = CG_COLS_LANES;
    for (int b = 0; b < k->nbufs; b++)
        k->bufs[b].lane = ostr[b][no - 1] == 0 ? 0 : ostr[b][no - 1] == 1 ? 1 : CG_STRIDED;
    o->sz[1] = CG_COLS_LANES;
    o->sz[2] = nb;
    o->ntiles = rows / last * nb;
    int64_t per = CG_COLS_LANES * N;
    o->grain = per >= 32768 ? 1 : 32768 / per;
}

static int kernel_dims(lw *L)
{
    cg_launch *o = L->out;
    cg_kernel *k = &o->k;
    int nb = k->nbufs, split = k->kind == CG_ROWS ? L->r - L->gr->nred : L->r;
    int64_t osz[TJ_MAX_DIMS], isz[TJ_MAX_DIMS], ostr[CG_MAX_BUFS][TJ_MAX_DIMS], istr[CG_MAX_BUFS][TJ_MAX_DIMS];
    int no = merge_dims(L, 0, split, osz, ostr);
    int ni = merge_dims(L, split, L->r, isz, istr);
    if (k->kind == CG_TILES && ni == 0 && no > 0) {   /* the last run is the inner one */
        isz[0] = osz[--no];
        for (int b = 0; b < nb; b++)
            istr[b][0] = ostr[b][no];
        ni = 1;
    }
    if (ni > 1)
        return fail(L, "the reduced dims are not contiguous in memory%s", NULL);
    if (ni == 0) {
        isz[0] = 1;
        for (int b = 0; b < nb; b++)
            istr[b][0] = 0;
    }
    k->nouter = no;
    int64_t N = isz[0], rows = 1;
    for (int d = 0; d < no; d++)
        rows *= osz[d];
    int64_t B = k->kind == CG_ROWS || N <= 65536 ? N : 16384;
    int64_t NB = B > 0 ? (N + B - 1) / B : 0;
    o->sz[0] = N;
    o->sz[1] = B;
    o->sz[2] = NB;
    for (int d = 0; d < no; d++)
        o->sz[3 + d] = osz[d];
    for (int b = 0; b < nb; b++) {
        for (int d = 0; d < no; d++)
            o->sz[CG_SZ_STRIDE(k, b, d)] = ostr[b][d];
        int64_t s = istr[b][0];
        o->sz[CG_SZ_STRIDE(k, b, no)] = s;
        k->bufs[b].inner = s == 0 ? 0 : s == 1 ? 1 : CG_STRIDED;
    }
    /* a rows kernel runs every row even when the rows are empty (N == 0):
     * its reductions then store their identity (sum 0, prod 1, mean 0/0) */
    o->ntiles = k->kind == CG_ROWS ? rows : N == 0 ? 0 : rows * NB;
    int64_t per = B > 0 ? B : 1;
    o->grain = per >= 32768 ? 1 : 32768 / per;
    if (k->kind == CG_ROWS && no >= 1 && N > 1)
        columns(o, no, osz, ostr, rows, N);
    return 0;
}

/* Whether the launch writes every element of every value it stores: a value
 * left partly unwritten would hand out memory nobody wrote (the plan then
 * runs the group eagerly). Full values have the domain's rows x N elements,
 * row values one per row; count the rows the tiles reach. */
static int check_coverage(lw *L)
{
    const cg_launch *o = L->out;
    const cg_kernel *k = &o->k;
    int64_t N = o->sz[0], NB = o->sz[2], rows;
    if (k->lanes)
        rows = o->ntiles / NB * o->sz[3 + k->nouter - 1];
    else
        rows = k->kind == CG_ROWS ? o->ntiles : NB > 0 ? o->ntiles / NB : 0;
    for (int b = 0; b < k->nbufs; b++) {
        if (!k->bufs[b].out)
            continue;
        bool row = false;
        for (int j = 0; j < k->nrow; j++)
            row = row || k->row_buf[j] == b;
        const ir_type *t = &L->in->types[o->args[b].base];
        if (ir_type_numel(t) != (row ? rows : rows * N)) {
            char ts[96];
            return fail(L, "the launch would leave part of a stored %s unwritten", ir_type_str(t, ts, sizeof ts));
        }
    }
    return 0;
}

/* ---- driver ------------------------------------------------------------------------------ */

/* Whether a node of a ROWS group varies along the reduced (inner) dims. */
static bool uses_inner(const lw *L, const ir_node *n)
{
    const signed char *m = L->in->f->map[n->id];
    for (int d = 0; d < n->type.ndim; d++)
        if (m[d] >= L->r - L->gr->nred && L->dom[(int)m[d]] != 1)
            return true;
    return false;
}

/* ---- caching a reduced value in an output row ---------------------------------------- */

/* A call that costs more than a few instructions. */
static bool costly_call(const cg_inst *in)
{
    static const ir_op cheap[] = {OP_add, OP_sub, OP_mul, OP_neg, OP_abs, OP_maximum, OP_minimum};
    bool c = false;
    for (size_t j = 0; j < sizeof cheap / sizeof *cheap; j++)
        c = c || in->op == cheap[j];
    return in->k == CG_CALL && !c;
}

/* Calls that cost more than a few instructions. */
static bool expensive(const cg_kernel *k, int i, int depth)
{
    const cg_inst *in = &k->inst[i];
    int nops = cg_inst_nops(in);
    if (costly_call(in))
        return true;
    for (int j = 0; j < nops && depth < 64; j++)
        if (expensive(k, in->a[j], depth + 1))
            return true;
    return false;
}

/* i with every use of `from` replaced by `to` (new instructions as needed). */
static int subst(cg_kernel *k, int i, int from, int to, int *memo)
{
    if (i == from)
        return to;
    if (memo[i] >= 0)
        return memo[i];
    cg_inst in = k->inst[i];
    int nops = cg_inst_nops(&in);
    bool changed = false;
    for (int j = 0; j < nops; j++) {
        int a = subst(k, in.a[j], from, to, memo);
        changed = changed || a != in.a[j];
        in.a[j] = a;
    }
    return memo[i] = changed ? cg_add_inst(k, &in) : i;
}

static bool uses_inst(const cg_kernel *k, int i, int what)
{
    if (i == what)
        return true;
    const cg_inst *in = &k->inst[i];
    int nops = cg_inst_nops(in);
    for (int j = 0; j < nops; j++)
        if (in->a[j] >= what && uses_inst(k, in->a[j], what))
            return true;
    return false;
}

/* A full value v stored to buffer b after the reductions that reuses an
 * expensive value a reduction stage computed (softmax: exp(x - max) in the
 * sum and again in the division): that stage also stores it into b's row,
 * and v reads it back instead of computing it again. v the reduced value
 * itself, however cheap (a training step's relu backward, where(mask, dy,
 * 0), stored and summed over the batch for the bias gradient): stored by
 * that stage, so no later pass reads the inputs again. Returns the value to
 * store after the reductions, or -1 when the stage's store is all. */
static int cache_in_row(lw *L, int v, int b)
{
    cg_kernel *k = &L->out->k;
    for (int s = k->nstages - 1; s >= 0; s--) {
        const cg_stage *st = &k->stages[s];
        if (!st->reduce || k->inst[st->val].dt != k->bufs[b].dt ||
            (v != st->val && (!expensive(k, st->val, 0) || !uses_inst(k, v, st->val))))
            continue;
        if (cg_stage_store(k, s, st->val, b))
            return v;
        if (v == st->val)
            return -1;
        int memo[CG_MAX_INSTS];
        for (int i = 0; i < CG_MAX_INSTS; i++)
            memo[i] = -1;
        int w = subst(k, v, st->val, cg_add_load(k, b), memo);
        return w >= 0 ? w : v;
    }
    return v;
}

/* ---- stores ------------------------------------------------------------------------------- */

/* Values of the stored nodes first (that creates every reduction stage, in
 * dependence order), then their stores: full values after the last stage,
 * row values once per row. */
static int stores(lw *L)
{
    const ir_fusion *f = L->in->f;
    const ir_graph *g = L->in->g;
    int vals[CG_MAX_BUFS], n = 0;
    for (int i = 0; i < L->gr->nnodes; i++) {
        const ir_node *nd = g->nodes[L->gr->nodes[i]];
        if (!f->stored[nd->id])
            continue;
        if (n == CG_MAX_BUFS)
            return fail(L, "too many stores%s", NULL);
        vals[n++] = val(L, nd);
    }
    if (L->failed)
        return -1;
    n = 0;
    for (int i = 0; i < L->gr->nnodes; i++) {
        const ir_node *nd = g->nodes[L->gr->nodes[i]];
        if (!f->stored[nd->id])
            continue;
        int slot = ir_slot(g, nd);
        int b = buffer(L, slot, f->map[nd->id], nd->type.dtype, true);
        if (b < 0)
            return -1;
        L->out->store_slot[L->out->nstore++] = slot;
        int v = vals[n++];
        bool row = L->gr->kind == IR_GROUP_ROWS && !uses_inner(L, nd);
        if (!row && L->gr->kind == IR_GROUP_ROWS && (v = cache_in_row(L, v, b)) < 0)
            continue;
        if (row ? cg_add_row_store(&L->out->k, v, b) : cg_add_store(&L->out->k, v, b))
            return fail(L, "too many stores%s", NULL);
    }
    return 0;
}

/* ---- streaming stores ------------------------------------------------------------------ */

static pthread_once_t nt_once = PTHREAD_ONCE_INIT;
static int64_t nt_min;   /* written once under nt_once */
static int nt_mode;      /* TJIT_NT_STORES: 0 off, 1 memory-bound stages, 2 every stage */

/* Bytes of one instance of the last-level cache: from sysfs (the highest
 * cache level of cpu0, "32768K"), which on a VM tells what the guest shares,
 * where sysconf may give the whole host's (256 MB on this Zen 3 VM for an L3
 * of 32 MB); then sysconf; 0 when neither knows. */
static int64_t last_level_cache(void)
{
    int64_t best = 0;
    for (int i = 0, top = 0; i < 8; i++) {
        char path[80], buf[32];
        int level = 0;
        long long size = 0;
        char unit = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        bool ok = f && fgets(buf, sizeof buf, f) && sscanf(buf, "%d", &level) == 1;
        if (f)
            fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = ok ? fopen(path, "r") : NULL;
        ok = f && fgets(buf, sizeof buf, f) && sscanf(buf, "%lld%c", &size, &unit) >= 1;
        if (f)
            fclose(f);
        if (ok && level > top) {
            top = level;
            best = size * (unit == 'K' ? 1024 : unit == 'M' ? 1 << 20 : 1);
        }
    }
    long sc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return best > 0 ? best : sc > 0 ? sc : 0;
}

/* A quarter of the last-level cache, glibc's memcpy threshold for
 * non-temporal stores (since 2.38): an output that large is mostly evicted
 * by the time its kernel ends, so its consumer reads it from memory either
 * way, and streaming saves the read of each line before it is written. */
static void nt_init(void)
{
    const char *on = getenv("TJIT_NT_STORES"), *min = getenv("TJIT_NT_MIN_BYTES");
    int64_t llc = last_level_cache();
    nt_min = llc > 0 ? llc / 4 : 8 << 20;
    if (min && *min)
        nt_min = strtoll(min, NULL, 10);
    nt_mode = on && *on ? (int)strtol(on, NULL, 10) : CG_NT_DEFAULT;
    if (nt_mode <= 0 || nt_min < 0)
        nt_min = -1;
}

int64_t cg_nt_min_bytes(void)
{
    pthread_once(&nt_once, nt_init);
    return nt_min;
}

int cg_nt_mode(void)
{
    pthread_once(&nt_once, nt_init);
    return nt_min < 0 ? 0 : nt_mode;
}

/* Whether an instruction of i's DAG (i included) satisfies pred. */
static bool dag_any(const cg_kernel *k, int i, bool (*pred)(const cg_kernel *, int), int depth)
{
    if (pred(k, i))
        return true;
    const cg_inst *in = &k->inst[i];
    int nops = cg_inst_nops(in);
    for (int j = 0; j < nops && depth < 64; j++)
        if (dag_any(k, in->a[j], pred, depth + 1))
            return true;
    return false;
}

/* A load of an element of a buffer that is not broadcast along the inner dim. */
static bool inner_load(const cg_kernel *k, int i)
{
    return k->inst[i].k == CG_LOAD && k->bufs[k->inst[i].buf].inner != 0;
}

/* A costly call per element (a tanh of x; not an rsqrt of a row's variance,
 * which LLVM hoists out of the loop). */
static bool costly_per_element(const cg_kernel *k, int i)
{
    return costly_call(&k->inst[i]) && dag_any(k, i, inner_load, 0);
}

/* Whether stage s may stream its stores to buffer b: no stage loads b (an
 * in-place input, softmax's exp read back: its lines are in cache, so a
 * streaming store saves no read) and no earlier stage stores it. */
static bool nt_buffer_ok(const cg_kernel *k, int s, int b)
{
    for (int t = 0; t < k->nstages; t++) {
        const cg_stage *u = &k->stages[t];
        if (u->reduce && cg_inst_loads(k, u->val, b))
            return false;
        for (int j = 0; j < u->nst; j++)
            if (cg_inst_loads(k, u->st_val[j], b) || (t < s && u->st_buf[j] == b))
                return false;
    }
    for (int j = 0; j < k->nrow; j++)
        if (cg_inst_loads(k, k->row_val[j], b))
            return false;
    return true;
}

/* The first contiguous buffer stage s stores, -1 when none. */
static int nt_target(const cg_kernel *k, int s)
{
    const cg_stage *st = &k->stages[s];
    for (int j = 0; j < st->nst; j++)
        if (k->bufs[st->st_buf[j]].inner == 1)
            return st->st_buf[j];
    return -1;
}

/* Streaming stores (kernel.h) in the stages that may stream, when the
 * contiguous values the stages store come to at least cg_nt_min_bytes; by
 * default (TJIT_NT_STORES=1) only in stages whose values cost no formula
 * call per element: an arithmetic-bound loop (P1, B1) measured no faster
 * with them (docs/perf.md, Streaming stores). */
static void choose_nt(cg_launch *o)
{
    cg_kernel *k = &o->k;
    int64_t min = cg_nt_min_bytes(), n = o->sz[0], bytes = 0;
    if (min < 0 || k->lanes)
        return;
    for (int d = 0; d < k->nouter; d++)
        n *= o->sz[3 + d];
    for (int s = 0; s < k->nstages; s++)
        for (int j = 0; j < k->stages[s].nst; j++)
            if (k->bufs[k->stages[s].st_buf[j]].inner == 1)
                bytes += n * (int64_t)tj_dtype_size(k->bufs[k->stages[s].st_buf[j]].dt);
    if (bytes == 0 || bytes < min)
        return;
    for (int s = 0; s < k->nstages; s++) {
        cg_stage *st = &k->stages[s];
        int b = st->reduce ? -1 : nt_target(k, s);
        bool costly = false;
        for (int j = 0; j < st->nst && nt_mode < 2; j++)
            costly = costly || dag_any(k, st->st_val[j], costly_per_element, 0);
        st->nt = b >= 0 && !costly && nt_buffer_ok(k, s, b);
    }
}

int cg_lower(const cg_lower_in *in, int gi, cg_launch *out, char *err, size_t nerr)
{
    const ir_group *gr = &in->f->groups[gi];
    int *memo = malloc(sizeof(int) * ((size_t)in->g->nnodes + 1));
    if (!memo) {
        snprintf(err, nerr, "out of memory");
        return -1;
    }
    lw L = {.in = in, .gr = gr, .out = out, .memo = memo, .err = err, .nerr = nerr};
    for (int k = 0; k < in->g->nnodes; k++)
        memo[k] = -1;
    memset(out, 0, sizeof *out);
    cg_kernel_init(&out->k, gr->kind == IR_GROUP_ROWS ? CG_ROWS : CG_TILES, 0);
    const ir_node *dn = in->g->nodes[gr->dom_node];
    const ir_type *dt = &in->types[ir_slot(in->g, gr->dom_input ? dn->in[0] : dn)];
    L.r = dt->ndim;
    memcpy(L.dom, dt->shape, sizeof L.dom);
    int rc = stores(&L) || kernel_dims(&L) || check_coverage(&L) ? -1 : 0;
    if (rc == 0) {
        choose_nt(out);
        cg_kernel_compact(&out->k);
        rc = cg_kernel_check(&out->k, err, nerr);
    }
    free(memo);
    return rc;
}

/* ---- in place ------------------------------------------------------------------------- */

/* Whether every element of bi is loaded before bo's element is stored over
 * it: emit.c evaluates a stage's reduction first, then each stored value
 * followed by its store, each load once per element and stage. So bi may be
 * read by stages up to the first one that stores bo, there only by its
 * reduction and the values stored up to bo's (a later value reuses that
 * load), and not at all after it. */
static bool alias_order_ok(const cg_kernel *k, int bi, int bo)
{
    int sf = -1, kf = -1;
    for (int s = 0; s < k->nstages && sf < 0; s++)
        for (int j = 0; j < k->stages[s].nst && sf < 0; j++)
            if (k->stages[s].st_buf[j] == bo)
                sf = s, kf = j;
    if (sf < 0)
        return false;
    for (int s = sf; s < k->nstages; s++) {
        const cg_stage *st = &k->stages[s];
        bool before = s == sf && st->reduce && cg_inst_loads(k, st->val, bi);
        if (s > sf && st->reduce && cg_inst_loads(k, st->val, bi))
            return false;
        for (int j = 0; j < st->nst; j++) {
            bool uses = cg_inst_loads(k, st->st_val[j], bi);
            if (s == sf && j <= kf)
                before = before || uses;
            else if (uses && !(s == sf && before))
                return false;
        }
    }
    for (int j = 0; j < k->nrow; j++)
        if (k->row_buf[j] == bo || cg_inst_loads(k, k->row_val[j], bi))
            return false;
    return true;
}

bool cg_launch_can_alias(const cg_launch *l, int bi, int bo)
{
    const cg_kernel *k = &l->k;
    if (k->lanes)   /* column kernels: alias_order_ok's order does not hold */
        return false;
    if (bi < 0 || bo < 0 || bi >= k->nbufs || bo >= k->nbufs || k->bufs[bi].out || !k->bufs[bo].out ||
        k->bufs[bi].dt != k->bufs[bo].dt || k->bufs[bi].inner != k->bufs[bo].inner)
        return false;
    for (int d = 0; d <= k->nouter; d++)
        if (l->sz[CG_SZ_STRIDE(k, bi, d)] != l->sz[CG_SZ_STRIDE(k, bo, d)])
            return false;
    return alias_order_ok(k, bi, bo);
}

void cg_launch_alias(cg_launch *l, int bi, int bo)
{
    cg_kernel *k = &l->k;
    int64_t sz[sizeof l->sz / sizeof *l->sz];
    memcpy(sz, l->sz, sizeof sz);
    for (int i = 0; i < k->ninst; i++)
        if (k->inst[i].k == CG_LOAD && k->inst[i].buf == bi)
            k->inst[i].buf = bo;
    /* drop buffer bi: renumber the ones after it */
    for (int i = 0; i < k->ninst; i++)
        if (k->inst[i].k == CG_LOAD && k->inst[i].buf > bi)
            k->inst[i].buf--;
    for (int s = 0; s < k->nstages; s++)
        for (int j = 0; j < k->stages[s].nst; j++)
            k->stages[s].st_buf[j] -= k->stages[s].st_buf[j] > bi;
    for (int j = 0; j < k->nrow; j++)
        k->row_buf[j] -= k->row_buf[j] > bi;
    int nb = k->nbufs;
    for (int b = bi; b + 1 < nb; b++) {
        k->bufs[b] = k->bufs[b + 1];
        l->args[b] = l->args[b + 1];
    }
    k->nbufs = l->nargs = nb - 1;
    for (int s = 0; s < k->nstages; s++)   /* the output is now loaded: it no longer streams */
        k->stages[s].nt = k->stages[s].nt && nt_buffer_ok(k, s, nt_target(k, s));
    for (int b = 0; b < k->nbufs; b++)
        for (int d = 0; d <= k->nouter; d++)
            l->sz[CG_SZ_STRIDE(k, b, d)] = sz[3 + k->nouter + (b + (b >= bi)) * (k->nouter + 1) + d];
}
