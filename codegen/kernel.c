/* kernel.c - building, checking and printing cg_kernel (see kernel.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/graph.h"
#include "kernel.h"

static const char *const red_names[] = {"sum", "prod", "max", "min", "xor"};

const char *cg_red_name(cg_red r) { return red_names[r]; }

void cg_kernel_init(cg_kernel *k, cg_kind kind, int nouter)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->nouter = nouter;
}

int cg_add_buf(cg_kernel *k, tj_dtype dt, bool out, int inner)
{
    if (k->nbufs == CG_MAX_BUFS)
        return -1;
    k->bufs[k->nbufs] = (cg_buf){dt, out, inner, 0};
    return k->nbufs++;
}

static bool same_inst(const cg_inst *a, const cg_inst *b)
{
    return a->k == b->k && a->dt == b->dt && a->op == b->op && a->cdt == b->cdt &&
           a->a[0] == b->a[0] && a->a[1] == b->a[1] && a->a[2] == b->a[2] && a->buf == b->buf &&
           a->stage == b->stage && !memcmp(&a->c, &b->c, sizeof a->c);
}

int cg_add_inst(cg_kernel *k, const cg_inst *in)
{
    cg_inst n = *in;
    int nops = cg_inst_nops(&n);
    for (int j = nops; j < 3; j++)
        n.a[j] = 0;   /* unused operand slots do not tell instructions apart */
    if (n.k != CG_LOAD)
        n.buf = 0;
    if (n.k != CG_RED)
        n.stage = 0;
    if (n.k != CG_CALL)
        n.op = 0, n.cdt = 0;
    for (int i = 0; i < k->ninst; i++)
        if (same_inst(&k->inst[i], &n))
            return i;
    if (k->ninst == CG_MAX_INSTS)
        return -1;
    k->inst[k->ninst] = n;
    return k->ninst++;
}

int cg_add_load(cg_kernel *k, int buf)
{
    return cg_add_inst(k, &(cg_inst){.k = CG_LOAD, .dt = k->bufs[buf].dt, .buf = buf});
}

int cg_add_const(cg_kernel *k, tj_dtype dt, double c)
{
    return cg_add_inst(k, &(cg_inst){.k = CG_CONST, .dt = dt, .c = c});
}

int cg_add_cvt(cg_kernel *k, int a, tj_dtype dt)
{
    if (a < 0 || k->inst[a].dt == dt)
        return a;
    return cg_add_inst(k, &(cg_inst){.k = CG_CVT, .dt = dt, .a = {a}});
}

int cg_add_reduce(cg_kernel *k, cg_red red, int val)
{
    for (int s = 0; val >= 0 && s < k->nstages; s++)
        if (k->stages[s].reduce && k->stages[s].red == red && k->stages[s].val == val)
            return cg_add_inst(k, &(cg_inst){.k = CG_RED, .dt = k->inst[val].dt, .stage = s});
    if (k->nstages == CG_MAX_STAGES || val < 0)
        return -1;
    cg_stage *s = &k->stages[k->nstages];
    memset(s, 0, sizeof *s);
    s->reduce = true;
    s->red = red;
    s->val = val;
    int stage = k->nstages++;
    return cg_add_inst(k, &(cg_inst){.k = CG_RED, .dt = k->inst[val].dt, .stage = stage});
}

int cg_add_store(cg_kernel *k, int val, int buf)
{
    if (val < 0)
        return -1;
    if (k->nstages == 0 || k->stages[k->nstages - 1].reduce) {
        if (k->nstages == CG_MAX_STAGES)
            return -1;
        memset(&k->stages[k->nstages++], 0, sizeof(cg_stage));
    }
    cg_stage *s = &k->stages[k->nstages - 1];
    if (s->nst == CG_MAX_STORES)
        return -1;
    s->st_val[s->nst] = val;
    s->st_buf[s->nst++] = buf;
    return 0;
}

int cg_stage_store(cg_kernel *k, int s, int val, int buf)
{
    cg_stage *st = &k->stages[s];
    if (val < 0 || s < 0 || s >= k->nstages || st->nst == CG_MAX_STORES)
        return -1;
    st->st_val[st->nst] = val;
    st->st_buf[st->nst++] = buf;
    return 0;
}

int cg_add_row_store(cg_kernel *k, int val, int buf)
{
    if (val < 0 || k->nrow == CG_MAX_STORES)
        return -1;
    k->row_val[k->nrow] = val;
    k->row_buf[k->nrow++] = buf;
    return 0;
}

int cg_inst_nops(const cg_inst *in)
{
    return in->k == CG_CVT ? 1 : in->k == CG_WHERE ? 3 : in->k == CG_CALL ? ir_ops[in->op].nmin : 0;
}

static void mark_live(const cg_kernel *k, int i, bool *live)
{
    if (i < 0 || live[i])
        return;
    live[i] = true;
    const cg_inst *in = &k->inst[i];
    for (int j = 0; j < cg_inst_nops(in); j++)
        mark_live(k, in->a[j], live);
    if (in->k == CG_RED)
        mark_live(k, k->stages[in->stage].val, live);
}

void cg_kernel_compact(cg_kernel *k)
{
    bool live[CG_MAX_INSTS] = {false};
    int to[CG_MAX_INSTS], n = 0;
    for (int s = 0; s < k->nstages; s++) {
        const cg_stage *st = &k->stages[s];
        if (st->reduce)
            mark_live(k, st->val, live);
        for (int j = 0; j < st->nst; j++)
            mark_live(k, st->st_val[j], live);
    }
    for (int j = 0; j < k->nrow; j++)
        mark_live(k, k->row_val[j], live);
    for (int i = 0; i < k->ninst; i++) {
        to[i] = live[i] ? n : -1;
        if (!live[i])
            continue;
        cg_inst in = k->inst[i];
        for (int j = 0; j < cg_inst_nops(&in); j++)
            in.a[j] = to[in.a[j]];
        k->inst[n++] = in;
    }
    k->ninst = n;
    for (int s = 0; s < k->nstages; s++) {
        cg_stage *st = &k->stages[s];
        if (st->reduce)
            st->val = to[st->val];
        for (int j = 0; j < st->nst; j++)
            st->st_val[j] = to[st->st_val[j]];
    }
    for (int j = 0; j < k->nrow; j++)
        k->row_val[j] = to[k->row_val[j]];
}

/* ---- checking ------------------------------------------------------------------ */

static int bad(char *err, size_t n, const char *what, int i)
{
    snprintf(err, n, "%s (at %d)", what, i);
    return -1;
}

static int check_inst(const cg_kernel *k, int i, char *err, size_t n)
{
    const cg_inst *in = &k->inst[i];
    int nops = cg_inst_nops(in);
    if (in->k == CG_CALL && ir_ops[in->op].kind != IR_UNARY && ir_ops[in->op].kind != IR_BINARY)
        return bad(err, n, "call of a non-formula op", i);
    for (int j = 0; j < nops; j++)
        if (in->a[j] < 0 || in->a[j] >= i)
            return bad(err, n, "operand not defined before use", i);
    for (int j = 0; in->k == CG_CALL && j < nops; j++)
        if (k->inst[in->a[j]].dt != in->cdt)
            return bad(err, n, "call operand not in the compute dtype", i);
    if (in->k == CG_WHERE && (k->inst[in->a[0]].dt != TJ_BOOL || k->inst[in->a[1]].dt != in->dt ||
                              k->inst[in->a[2]].dt != in->dt))
        return bad(err, n, "where operands of the wrong dtype", i);
    if (in->k == CG_LOAD && (in->buf < 0 || in->buf >= k->nbufs || k->bufs[in->buf].dt != in->dt))
        return bad(err, n, "load of a bad buffer", i);
    if (in->k == CG_RED && (in->stage < 0 || in->stage >= k->nstages || !k->stages[in->stage].reduce))
        return bad(err, n, "red of a stage that is not a reduction", i);
    if (in->k == CG_ROWLEN && (k->kind != CG_ROWS || in->dt != TJ_I64))
        return bad(err, n, "rowlen outside a rows kernel", i);
    if (!ir_dtype_supported(in->dt))
        return bad(err, n, "unsupported dtype", i);
    /* f16 and bf16 are storage: formulas and accumulators run in f32 */
    if ((in->k == CG_CALL && ir_dtype_is_half(in->cdt)) || (in->k == CG_RED && ir_dtype_is_half(in->dt)))
        return bad(err, n, "f16/bf16 arithmetic (compute in f32)", i);
    return 0;
}

static int check_store(const cg_kernel *k, int val, int buf, char *err, size_t n)
{
    if (val < 0 || val >= k->ninst || buf < 0 || buf >= k->nbufs || !k->bufs[buf].out ||
        k->bufs[buf].dt != k->inst[val].dt)
        return bad(err, n, "bad store", val);
    return 0;
}

int cg_kernel_check(const cg_kernel *k, char *err, size_t n)
{
    if (k->nouter < 0 || k->nouter > CG_MAX_OUTER)
        return bad(err, n, "bad outer rank", k->nouter);
    if (k->lanes < 0 || k->lanes > CG_MAX_LANES ||
        (k->lanes && (k->kind != CG_ROWS || k->nouter < 1)))
        return bad(err, n, "bad column lanes", k->lanes);
    for (int i = 0; i < k->ninst; i++)
        if (check_inst(k, i, err, n))
            return -1;
    for (int s = 0; s < k->nstages; s++) {
        const cg_stage *st = &k->stages[s];
        if (st->reduce && (k->kind != CG_ROWS || st->val < 0 || st->val >= k->ninst ||
                           ir_dtype_is_half(k->inst[st->val].dt) ||
                           (st->red == CG_XOR && ir_dtype_is_float(k->inst[st->val].dt))))
            return bad(err, n, "bad reduction stage", s);
        for (int j = 0; j < st->nst; j++)
            if (check_store(k, st->st_val[j], st->st_buf[j], err, n))
                return -1;
    }
    for (int j = 0; j < k->nrow; j++)
        if (k->kind != CG_ROWS || check_store(k, k->row_val[j], k->row_buf[j], err, n) ||
            k->bufs[k->row_buf[j]].inner != 0)
            return bad(err, n, "bad row store", j);
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b].inner != 0 && k->bufs[b].inner != 1 && k->bufs[b].inner != CG_STRIDED)
            return bad(err, n, "bad inner stride class", b);
    return 0;
}

/* ---- text ----------------------------------------------------------------------- */

static void print_inst(FILE *f, const cg_kernel *k, int i)
{
    const cg_inst *in = &k->inst[i];
    fprintf(f, "  %%%d = ", i);
    switch (in->k) {
    case CG_LOAD: fprintf(f, "load buf%d", in->buf); break;
    case CG_CONST: {
        char b[IR_DOUBLE_BUF];
        fprintf(f, "const %s", ir_double_fmt(in->c, b));
        break;
    }
    case CG_CVT: fprintf(f, "cvt %%%d", in->a[0]); break;
    case CG_CALL:
        fprintf(f, "call %s.%s %%%d", ir_ops[in->op].name, tj_dtype_name(in->cdt), in->a[0]);
        if (ir_ops[in->op].nmin == 2)
            fprintf(f, ", %%%d", in->a[1]);
        break;
    case CG_WHERE: fprintf(f, "where %%%d, %%%d, %%%d", in->a[0], in->a[1], in->a[2]); break;
    case CG_RED: fprintf(f, "red %d", in->stage); break;
    case CG_ROWLEN: fprintf(f, "rowlen"); break;
    }
    fprintf(f, " : %s\n", tj_dtype_name(in->dt));
}

static const char *stride_class_name(int c)
{
    return c == CG_STRIDED ? "strided" : c ? "1" : "0";
}

static bool loads(const cg_kernel *k, int i, int buf, int depth)
{
    const cg_inst *in = &k->inst[i];
    if (in->k == CG_LOAD)
        return in->buf == buf;
    int nops = cg_inst_nops(in);
    for (int j = 0; j < nops && depth < 256; j++)
        if (loads(k, in->a[j], buf, depth + 1))
            return true;
    return false;
}

bool cg_inst_loads(const cg_kernel *k, int i, int buf) { return loads(k, i, buf, 0); }

char *cg_kernel_text(const cg_kernel *k, const char *name)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fprintf(f, "kernel @%s %s outer=%d", name ? name : "k", k->kind == CG_ROWS ? "rows" : "tiles",
            k->nouter);
    if (k->lanes)
        fprintf(f, " cols lanes=%d", k->lanes);
    fprintf(f, " {\n");
    for (int b = 0; b < k->nbufs; b++) {
        const cg_buf *cb = &k->bufs[b];
        fprintf(f, "  buf%d: %s %s inner=%s", b, tj_dtype_name(cb->dt), cb->out ? "out" : "in",
                stride_class_name(cb->inner));
        if (k->lanes)
            fprintf(f, " lane=%s", stride_class_name(cb->lane));
        fprintf(f, "\n");
    }
    for (int i = 0; i < k->ninst; i++)
        print_inst(f, k, i);
    for (int s = 0; s < k->nstages; s++) {
        const cg_stage *st = &k->stages[s];
        fprintf(f, "  stage %d%s:", s, st->nt ? " nt" : "");
        if (st->reduce)
            fprintf(f, " reduce %s %%%d%s", cg_red_name(st->red), st->val, st->nst ? ";" : "");
        if (st->nst)
            fprintf(f, " store");
        for (int j = 0; j < st->nst; j++)
            fprintf(f, "%s buf%d <- %%%d", j ? "," : "", st->st_buf[j], st->st_val[j]);
        fprintf(f, "\n");
    }
    for (int j = 0; j < k->nrow; j++)
        fprintf(f, "  row: store buf%d <- %%%d\n", k->row_buf[j], k->row_val[j]);
    fprintf(f, "}\n");
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
