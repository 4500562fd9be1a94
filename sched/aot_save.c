/* aot_save.c - an exported model's blob (aot.h), the writing half (libtjit):
 * the plans' graph as text, each plan's arrays, and the object code of every
 * kernel the plans launch (codegen/jit.c: from the kernel cache, else
 * compiled again). frontend/export.c puts the blob and the objects into one
 * shared object; aot_load.c reads it back without LLVM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot.h"

#define SC_AOT_MAX_PLANS 64

void sc_w_bytes(sc_wbuf *w, const void *p, size_t n)
{
    if (w->failed || n == 0)
        return;
    if (w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->n + n)
            cap *= 2;
        char *q = realloc(w->p, cap);
        if (!q) {
            w->failed = 1;
            return;
        }
        w->p = q;
        w->cap = cap;
    }
    memcpy(w->p + w->n, p, n);
    w->n += n;
}

void sc_w_u32(sc_wbuf *w, uint32_t v) { sc_w_bytes(w, &v, sizeof v); }

void sc_w_str(sc_wbuf *w, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);
    sc_w_u32(w, n);
    sc_w_bytes(w, s, (size_t)n + 1);
}

void sc_aot_kernels_free(sc_aot_kernels *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->obj[i]);
    free(k->name);
    free(k->obj);
    free(k->len);
    memset(k, 0, sizeof *k);
}

/* The index of kernel k's symbol in ks, its object added when new; -1 with err. */
static int kernel_index(sc_aot_kernels *ks, const cg_kernel *k, char *err, size_t nerr)
{
    char name[72];
    void *obj = NULL;
    size_t len = 0;
    if (cg_jit_object(k, name, &obj, &len, err, nerr))
        return -1;
    for (int i = 0; i < ks->n; i++)
        if (!strcmp(ks->name[i], name)) {
            free(obj);
            return i;
        }
    if (ks->n == ks->cap) {
        int cap = ks->cap ? 2 * ks->cap : 16;
        char(*nm)[72] = realloc(ks->name, sizeof *nm * (size_t)cap);
        if (nm)
            ks->name = nm;
        void **o = realloc(ks->obj, sizeof *o * (size_t)cap);
        if (o)
            ks->obj = o;
        size_t *l = realloc(ks->len, sizeof *l * (size_t)cap);
        if (l)
            ks->len = l;
        if (!nm || !o || !l) {
            free(obj);
            snprintf(err, nerr, "out of memory");
            return -1;
        }
        ks->cap = cap;
    }
    memcpy(ks->name[ks->n], name, sizeof name);
    ks->obj[ks->n] = obj;
    ks->len[ks->n] = len;
    return ks->n++;
}

#define W_ARR(w, a, n) sc_w_bytes((w), (a), sizeof *(a) * (size_t)(n))

static int plan_write(const sc_plan *p, sc_wbuf *w, sc_aot_kernels *ks, char *err, size_t nerr)
{
    if (p->ntail) {   /* the loader refuses it: an exported model writes none of its inputs */
        snprintf(err, nerr, "a plan stores outputs into its inputs (a write-back)");
        return -1;
    }
    uint32_t h[7] = {(uint32_t)p->ninputs, (uint32_t)p->nslots, (uint32_t)p->nsteps, (uint32_t)p->kernels,
                     (uint32_t)p->eager, (uint32_t)p->nbufs, (uint32_t)p->nregions};
    W_ARR(w, h, 7);
    W_ARR(w, p->types, p->nslots);
    W_ARR(w, p->in_strides, p->ninputs);
    W_ARR(w, p->steps, p->nsteps);
    for (int i = 0; i < p->nsteps; i++) {
        const step *s = &p->steps[i];
        if (s->kind != S_KERNEL)
            continue;
        W_ARR(w, s->launch, 1);
        int ki = s->launch->ntiles == 0 ? -1 : kernel_index(ks, &s->launch->k, err, nerr);
        if (ki < 0 && s->launch->ntiles != 0)
            return -1;
        sc_w_u32(w, (uint32_t)ki);
    }
    W_ARR(w, p->last_use, p->nslots);
    W_ARR(w, p->rel_start, p->nsteps + 1);
    W_ARR(w, p->rel, p->rel_start[p->nsteps]);
    W_ARR(w, p->owner, p->nslots);
    W_ARR(w, p->def, p->nslots);
    W_ARR(w, p->unplanned, p->nslots);
    W_ARR(w, p->inplace_of, p->nslots);
    W_ARR(w, p->buf_of, p->nslots);
    W_ARR(w, p->bufs, p->nbufs);
    W_ARR(w, &p->mem, 1);
    W_ARR(w, p->regions, p->nregions);
    W_ARR(w, &p->prof_bytes, 1);
    W_ARR(w, &p->prof_flops, 1);
    return 0;
}

int sc_aot_write_graph(sc_plan_set *ps, sc_wbuf *w, char *err, size_t nerr)
{
    const ir_graph *g;
    const sc_plan *plans[SC_AOT_MAX_PLANS];
    if (sc_plans_get(ps, &g, plans, SC_AOT_MAX_PLANS) == 0 || !g) {
        snprintf(err, nerr, "no compiled plan (the signature ran on the graph executor)");
        return -1;
    }
    size_t len = 0;
    char *text = ir_print(g, NULL), *again = NULL;
    if (!text) {
        snprintf(err, nerr, "out of memory");
        return -1;
    }
    /* the loader's graph must be this one node for node (plans index its
     * slots): its text must read back to the same text */
    char perr[512];
    ir_graph *back = ir_parse(text, strlen(text), "<graph>", perr, sizeof perr);
    if (back)
        again = ir_print(back, &len);
    int rc = again && !strcmp(again, text) ? 0 : -1;
    if (rc)
        snprintf(err, nerr, "graph @%s does not read back from its text form%s%.300s", g->name,
                 back ? "" : ": ", back ? "" : perr);
    else
        sc_w_str(w, text);
    free(again);
    ir_graph_free(back);
    free(text);
    return rc;
}

int sc_aot_write_plans(sc_plan_set *ps, sc_wbuf *w, sc_aot_kernels *ks, char *err, size_t nerr)
{
    const ir_graph *g;
    const sc_plan *plans[SC_AOT_MAX_PLANS];
    int n = sc_plans_get(ps, &g, plans, SC_AOT_MAX_PLANS);
    sc_w_u32(w, (uint32_t)n);
    for (int i = 0; i < n; i++)
        if (plan_write(plans[i], w, ks, err, nerr))
            return -1;
    if (w->failed) {
        snprintf(err, nerr, "out of memory");
        return -1;
    }
    return 0;
}

char *sc_aot_seal(const sc_wbuf *payload, size_t *len)
{
    sc_wbuf w = {0};
    sc_w_bytes(&w, SC_AOT_MAGIC, 8);
    sc_w_u32(&w, SC_AOT_VERSION);
    sc_w_u32(&w, SC_AOT_LAYOUT);
    uint64_t n = payload->n, h = sc_aot_fnv(payload->p, payload->n);
    sc_w_bytes(&w, &n, 8);
    sc_w_bytes(&w, &h, 8);
    sc_w_bytes(&w, payload->p, payload->n);
    if (w.failed) {
        free(w.p);
        return NULL;
    }
    *len = w.n;
    return w.p;
}
