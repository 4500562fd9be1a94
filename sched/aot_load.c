/* aot_load.c - an exported model loaded and run without LLVM (libtjit_rt):
 * tj_aot_load opens the shared object tj_export wrote (dlopen), checks its
 * blob (aot.h: magic, version, layout, checksum) and that this CPU has the
 * features its kernels were compiled for, then rebuilds the graph (ir_parse
 * of its text) and every plan, binding each kernel step to its symbol
 * (dlsym). tj_aot_run picks the plan whose input signature the arguments
 * have (the guards: dtype, shape and strides of every input) and runs it
 * with the plan runner of compiled calls (run.c).
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../runtime/cpu.h"
#include "aot.h"

uint64_t sc_aot_fnv(const void *p, size_t n)
{
    /* four FNV-1a lanes over 8-byte words (independent multiplies: a 16 MB
     * blob takes a few ms, a byte at a time took tens), then the tail */
    const unsigned char *b = p;
    const uint64_t prime = 1099511628211ull;
    uint64_t h[4] = {1469598103934665603ull, 1, 2, 3};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * l, 8);
            h[l] = (h[l] ^ w) * prime;
        }
    uint64_t r = h[0];
    for (int l = 1; l < 4; l++)
        r = (r ^ h[l]) * prime;
    for (; i < n; i++)
        r = (r ^ b[i]) * prime;
    return r;
}

typedef struct aot_entry {
    int nargs, nweights, nresults;
    ir_graph *g;
    tj_tensor **weights;    /* embedded: owned; else NULL (they are arguments) */
    rt_storage **wst;       /* per weight: a storage over the mapped blob, or NULL (a copy) */
    sc_plan **plans;
    int nplans;
} aot_entry;

struct tj_aot_model {
    void *dl;
    char name[64];
    char path[256];
    aot_entry *e;
    int ne;
};

/* A bounded reader: a read past the end sets bad and yields zeros. */
typedef struct rd {
    const char *p;
    size_t n, off;
    bool bad;
} rd;

static const void *r_take(rd *r, size_t n)
{
    if (r->bad || n > r->n - r->off) {
        r->bad = true;
        return NULL;
    }
    const void *q = r->p + r->off;
    r->off += n;
    return q;
}

static uint32_t r_u32(rd *r)
{
    uint32_t v = 0;
    const void *q = r_take(r, 4);
    if (q)
        memcpy(&v, q, 4);
    return v;
}

static const char *r_str(rd *r)
{
    uint32_t n = r_u32(r);
    const char *s = r_take(r, (size_t)n + 1);
    if (s && s[n] != '\0')
        r->bad = true;
    return r->bad ? "" : s;
}

/* A copy of n elements of size sz (n may be 0), or NULL (r->bad set when short). */
static void *r_arr(rd *r, size_t sz, int64_t n)
{
    if (n < 0 || (uint64_t)n > r->n) {
        r->bad = true;
        return NULL;
    }
    const void *q = r_take(r, sz * (size_t)n);
    void *c = q ? malloc(sz * (size_t)n + 1) : NULL;
    if (c)
        memcpy(c, q, sz * (size_t)n);
    else
        r->bad = true;
    return c;
}

#define R_ARR(r, a, n) ((a) = r_arr((r), sizeof *(a), (n)))

static void noop_kernel(char **bufs, int64_t begin, int64_t end, const int64_t *sz)
{
    (void)bufs, (void)begin, (void)end, (void)sz;
}

static void plan_free(sc_plan *p)
{
    if (!p)
        return;
    for (int i = 0; p->steps && i < p->nsteps; i++)
        free(p->steps[i].launch);
    free(p->steps);
    free(p->types);
    free(p->in_strides);
    free(p->geom);
    free(p->last_use);
    free(p->rel_start);
    free(p->rel);
    sc_mem_free(p);
    free(p);
}

static bool in_range(const int *a, int n, int lo, int hi)
{
    for (int i = 0; a && i < n; i++)
        if (a[i] < lo || a[i] >= hi)
            return false;
    return true;
}

/* One plan (aot_save.c: plan_write); its kernels from the model's symbols. */
static sc_plan *plan_read(rd *r, const ir_graph *g, void *const *syms, int nsyms)
{
    sc_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    const uint32_t *h = r_take(r, 7 * 4);
    if (!h)
        goto bad;
    uint32_t hv[7];
    memcpy(hv, h, sizeof hv);
    p->ninputs = (int)hv[0], p->nslots = (int)hv[1], p->nsteps = (int)hv[2], p->kernels = (int)hv[3];
    p->eager = (int)hv[4], p->nbufs = (int)hv[5], p->nregions = (int)hv[6];
    if (p->ninputs != g->ninputs || p->nslots != ir_nslots(g) || p->nsteps < 0 || p->nbufs < 0 ||
        p->nregions < 0)
        goto bad;
    R_ARR(r, p->types, p->nslots);
    R_ARR(r, p->in_strides, p->ninputs);
    R_ARR(r, p->steps, p->nsteps);
    p->geom = calloc((size_t)p->nslots + 1, sizeof *p->geom);
    if (r->bad || !p->geom)
        goto bad;
    for (int i = 0; i < p->nsteps; i++) {
        step *s = &p->steps[i];
        s->launch = NULL;
        s->fn = NULL;
        s->prof_name = 0;
        if (s->kind != S_KERNEL) {
            if (s->node < 0 || s->node >= g->nnodes || (s->kind != S_EAGER && s->kind != S_VIEW))
                goto bad;
            s->prof_name = rt_prof_op(g->nodes[s->node]->op);
            continue;
        }
        s->launch = r_arr(r, sizeof *s->launch, 1);
        int ki = (int)r_u32(r);
        if (r->bad || (ki >= nsyms) || (ki < 0 && s->launch->ntiles != 0) ||
            s->launch->nargs < 0 || s->launch->nargs > CG_MAX_BUFS ||
            s->launch->nstore < 0 || s->launch->nstore > CG_MAX_BUFS)
            goto bad;
        s->fn = ki < 0 ? noop_kernel : (cg_kernel_fn)(uintptr_t)syms[ki];
        s->prof_name = rt_prof_name("aot kernel");
    }
    R_ARR(r, p->last_use, p->nslots);
    R_ARR(r, p->rel_start, p->nsteps + 1);
    if (r->bad || p->rel_start[0] != 0)
        goto bad;
    R_ARR(r, p->rel, p->rel_start[p->nsteps]);
    R_ARR(r, p->owner, p->nslots);
    R_ARR(r, p->def, p->nslots);
    R_ARR(r, p->unplanned, p->nslots);
    R_ARR(r, p->inplace_of, p->nslots);
    R_ARR(r, p->buf_of, p->nslots);
    R_ARR(r, p->bufs, p->nbufs);
    const void *mem = r_take(r, sizeof p->mem);
    if (mem)
        memcpy(&p->mem, mem, sizeof p->mem);
    R_ARR(r, p->regions, p->nregions);
    const void *pb = r_take(r, 16);
    if (r->bad)
        goto bad;
    memcpy(&p->prof_bytes, pb, 8);
    memcpy(&p->prof_flops, (const char *)pb + 8, 8);
    if (!in_range(p->rel, p->rel_start[p->nsteps], g->ninputs, p->nslots) ||
        !in_range(p->buf_of, p->nslots, -1, p->nbufs))
        goto bad;
    for (int i = 0; i < p->nsteps; i++)
        if (p->steps[i].region < -1 || p->steps[i].region >= p->nregions ||
            p->rel_start[i + 1] < p->rel_start[i])
            goto bad;
    for (int b = 0; b < p->nbufs; b++)   /* an exported model writes none of its inputs */
        if ((unsigned)p->bufs[b].where > SC_UNPLANNED)
            goto bad;
    return p;
bad:
    r->bad = true;
    plan_free(p);
    return NULL;
}

static void entry_clear(aot_entry *e, bool *pinned)
{
    for (int i = 0; i < e->nplans; i++)
        plan_free(e->plans[i]);
    free(e->plans);
    for (int i = 0; e->weights && i < e->nweights; i++)
        tj_release(e->weights[i]);
    free(e->weights);
    for (int i = 0; e->wst && i < e->nweights; i++) {
        /* the entry's reference; a result still viewing the weight keeps
         * the storage (its last release frees the header, not the bytes:
         * serial 0) and the mapping (never closed then) */
        if (e->wst[i] && atomic_fetch_sub(&e->wst[i]->refs, 1) == 1)
            free(e->wst[i]);
        else if (e->wst[i])
            *pinned = true;
    }
    free(e->wst);
    ir_graph_free(e->g);
}

/* A contiguous tensor of type t over the blob's bytes at data: no copy. The
 * storage is the entry's (one reference, freed by entry_clear); serial 0 says
 * borrowed memory (no cache keys on it). The blob sits in the object's
 * writable data, so a write (there is none in a plan) would stay private. */
static tj_tensor *borrow(const ir_type *t, const void *data, size_t nbytes, rt_storage **st)
{
    tj_tensor *w = calloc(1, sizeof *w);
    if (!w || !(*st = calloc(1, sizeof **st))) {
        free(w);
        return NULL;
    }
    atomic_init(&(*st)->refs, 2);   /* the entry's and the tensor's */
    atomic_init(&(*st)->version, 0);
    atomic_init(&(*st)->raw, 0);
    (*st)->nbytes = nbytes;
    (*st)->data = (void *)data;
    (*st)->serial = 0;
    w->magic = RT_LIVE;
    atomic_init(&w->refs, 1);
    w->dtype = t->dtype;
    w->ndim = t->ndim;
    memcpy(w->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    rt_contiguous_strides(t->ndim, t->shape, w->strides);
    w->storage = *st;
    return w;
}

/* One weight: its type and strides, and its bytes when embedded. */
static int weight_read(rd *r, aot_entry *e, int k, bool embedded)
{
    const void *ty = r_take(r, sizeof(ir_type));
    ir_type t;
    if (!ty)
        return -1;
    memcpy(&t, ty, sizeof t);
    uint64_t nbytes = 0;
    const void *nb = r_take(r, 8);
    if (!nb || t.ndim < 0 || t.ndim > TJ_MAX_DIMS)
        return -1;
    memcpy(&nbytes, nb, 8);
    if (!embedded)
        return 0;
    uint32_t pad = r_u32(r);   /* to a multiple of 64 bytes from the blob's start */
    if (pad >= 64 || !r_take(r, pad))
        return -1;
    const void *data = r_take(r, nbytes);
    if (!data || (uint64_t)ir_type_numel(&t) * (uint64_t)tj_dtype_size(t.dtype) != nbytes)
        return -1;
    if ((uintptr_t)data % 64 == 0) {   /* in place */
        e->weights[k] = borrow(&t, data, nbytes, &e->wst[k]);
        return e->weights[k] ? 0 : -1;
    }
    tj_tensor *w = rt_tensor_new(t.dtype, t.ndim, t.shape);
    if (!w)
        return -1;
    memcpy(rt_ptr(w), data, nbytes);
    e->weights[k] = w;
    return 0;
}

static int entry_read(rd *r, aot_entry *e, void *const *syms, int nsyms, char *err, size_t nerr)
{
    e->nargs = (int)r_u32(r);
    e->nweights = (int)r_u32(r);
    e->nresults = (int)r_u32(r);
    bool embedded = r_u32(r) != 0;
    const char *text = r_str(r);
    if (r->bad || e->nargs < 0 || e->nweights < 0 || e->nresults < 1)
        return -1;
    if (!(e->g = ir_parse(text, strlen(text), "<exported graph>", err, nerr)))
        return -2;
    if (e->g->ninputs != e->nargs + e->nweights || e->g->noutputs != e->nresults)
        return -1;
    if (embedded && (!(e->weights = calloc((size_t)e->nweights + 1, sizeof *e->weights)) ||
                     !(e->wst = calloc((size_t)e->nweights + 1, sizeof *e->wst))))
        return -1;
    for (int k = 0; k < e->nweights; k++)
        if (weight_read(r, e, k, embedded))
            return -1;
    int np = (int)r_u32(r);
    if (r->bad || np < 1 || np > 64 || !(e->plans = calloc((size_t)np, sizeof *e->plans)))
        return -1;
    for (; e->nplans < np; e->nplans++)
        if (!(e->plans[e->nplans] = plan_read(r, e->g, syms, nsyms)))
            return -1;
    return 0;
}

/* Checks the header; the payload's bounds in *pay. 0, or -1 with err. */
static int header_check(const char *b, size_t n, rd *pay, char *err, size_t nerr)
{
    uint32_t ver, layout;
    uint64_t len, h;
    if (n < SC_AOT_HEADER || memcmp(b, SC_AOT_MAGIC, 8)) {
        snprintf(err, nerr, "not an exported tjit model (bad magic)");
        return -1;
    }
    memcpy(&ver, b + 8, 4), memcpy(&layout, b + 12, 4), memcpy(&len, b + 16, 8), memcpy(&h, b + 24, 8);
    if (ver != SC_AOT_VERSION || layout != SC_AOT_LAYOUT) {
        snprintf(err, nerr, "written by another tjit version (format %u, layout %08x; this library reads %u, %08x)",
                 ver, layout, SC_AOT_VERSION, SC_AOT_LAYOUT);
        return -1;
    }
    if (len != n - SC_AOT_HEADER || sc_aot_fnv(b + SC_AOT_HEADER, len) != h) {
        snprintf(err, nerr, "corrupted: the model's data fails its checksum");
        return -1;
    }
    *pay = (rd){b + SC_AOT_HEADER, (size_t)len, 0, false};
    return 0;
}

static int model_read(tj_aot_model *m, rd *r, char *err, size_t nerr)
{
    snprintf(m->name, sizeof m->name, "%s", r_str(r));
    const char *feats = r_str(r);
    if (r->bad)
        return -1;
    char missing[512];
    if (rt_cpu_missing(feats, missing, sizeof missing) > 0) {
        snprintf(err, nerr, "this CPU lacks features its kernels were compiled for: %s", missing);
        return -2;
    }
    int nk = (int)r_u32(r);
    if (r->bad || nk < 0 || (size_t)nk > r->n)
        return -1;
    void **syms = calloc((size_t)nk + 1, sizeof *syms);
    if (!syms)
        return -1;
    int rc = 0;
    for (int i = 0; i < nk && rc == 0; i++) {
        const char *s = r_str(r);
        if (r->bad || !(syms[i] = dlsym(m->dl, s))) {
            snprintf(err, nerr, "kernel %s missing from the shared object", r->bad ? "?" : s);
            rc = -2;
        }
    }
    m->ne = (int)r_u32(r);
    uint32_t pad = r_u32(r);   /* the entries start at a multiple of 64 bytes */
    if (pad >= 64 || !r_take(r, pad))
        r->bad = true;
    if (rc == 0 && (r->bad || m->ne < 1 || m->ne > 64 || !(m->e = calloc((size_t)m->ne, sizeof *m->e))))
        rc = -1;
    for (int i = 0; rc == 0 && i < m->ne; i++)
        rc = entry_read(r, &m->e[i], syms, nk, err, nerr);
    free(syms);
    return rc == 0 && r->bad ? -1 : rc;
}

/* dlopen maps a file's segments without checking that the file holds them
 * (a truncated one faults when touched): the ELF header, program headers and
 * every loaded segment must lie within the file. 0, or -1 with err. */
static int elf_check(const char *path, char *err, size_t nerr)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, nerr, "cannot open: no such file, or not readable");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    Elf64_Ehdr eh;
    uint64_t size = (uint64_t)st.st_size;
    int rc = -1;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN || eh.e_phentsize != sizeof(Elf64_Phdr)) {
        snprintf(err, nerr, "cannot open: not a 64-bit shared object");
        goto out;
    }
    if (eh.e_phoff > size || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > size - eh.e_phoff) {
        snprintf(err, nerr, "cannot open: truncated (%llu bytes)", (unsigned long long)size);
        goto out;
    }
    for (int i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph ||
            (ph.p_type == PT_LOAD && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset))) {
            snprintf(err, nerr, "cannot open: truncated (%llu bytes; a segment ends at %llu)",
                     (unsigned long long)size, (unsigned long long)(ph.p_offset + ph.p_filesz));
            goto out;
        }
    }
    rc = 0;
out:
    close(fd);
    return rc;
}

void tj_aot_free(tj_aot_model *m)
{
    if (!m)
        return;
    bool pinned = false;
    for (int i = 0; m->e && i < m->ne; i++)
        entry_clear(&m->e[i], &pinned);
    free(m->e);
    if (m->dl && !pinned)
        dlclose(m->dl);
    free(m);
}

tj_aot_model *tj_aot_load(const char *path)
{
    tj_aot_model *m = calloc(1, sizeof *m);
    char err[768] = "";
    if (!m || !path) {
        rt_error("tj_aot_load: %s", m ? "no path" : "out of memory");
        free(m);
        return NULL;
    }
    snprintf(m->path, sizeof m->path, "%s", path);
    /* a name without '/' is a file here, not a library to search for */
    char rel[4096];
    snprintf(rel, sizeof rel, "%s%s", strchr(path, '/') ? "" : "./", path);
    if (elf_check(rel, err, sizeof err)) {
        rt_error("tj_aot_load(%s): %s", path, err);
        free(m);
        return NULL;
    }
    /* RTLD_LOCAL: two models' kernels of the same name do not meet */
    if (!(m->dl = dlopen(rel, RTLD_NOW | RTLD_LOCAL))) {
        const char *e = dlerror();
        rt_error("tj_aot_load(%s): cannot open: %s", path, e ? e : "?");
        free(m);
        return NULL;
    }
    const char *b = dlsym(m->dl, SC_AOT_BLOB_SYM), *be = dlsym(m->dl, SC_AOT_BLOB_END_SYM);
    rd pay;
    int rc = -2;
    if (!b || !be || be < b)
        snprintf(err, sizeof err, "not an exported tjit model (no %s)", SC_AOT_BLOB_SYM);
    else if (header_check(b, (size_t)(be - b), &pay, err, sizeof err) == 0)
        rc = model_read(m, &pay, err, sizeof err);
    if (rc == -1 && !err[0])
        snprintf(err, sizeof err, "corrupted: the model's data is malformed");
    if (rc) {
        rt_error("tj_aot_load(%s): %s", path, err);
        tj_aot_free(m);
        return NULL;
    }
    return m;
}

/* "(f32[2,3], f32[4])" of n types into buf. */
static void sig_fmt(const ir_type *tys, int n, char *buf, size_t nb)
{
    size_t o = (size_t)snprintf(buf, nb, "(");
    for (int k = 0; k < n && o < nb; k++) {
        char t[IR_TYPE_BUF];
        o += (size_t)snprintf(buf + o, nb - o, "%s%s", k ? ", " : "", ir_type_fmt(&tys[k], t, sizeof t));
    }
    if (o < nb)
        snprintf(buf + o, nb - o, ")");
}

static void no_match(const tj_aot_model *m, tj_tensor *const *args, int nargs)
{
    ir_type got[64];
    for (int k = 0; k < nargs && k < 64; k++)
        rt_type_of(args[k], &got[k]);
    char g[512], have[1024] = "";
    sig_fmt(got, nargs < 64 ? nargs : 64, g, sizeof g);
    size_t o = 0;
    for (int i = 0; i < m->ne; i++)
        for (int j = 0; j < m->e[i].nplans && o < sizeof have; j++) {
            char s[512];
            sig_fmt(m->e[i].plans[j]->types, m->e[i].nargs + (m->e[i].weights ? 0 : m->e[i].nweights), s,
                    sizeof s);
            o += (size_t)snprintf(have + o, sizeof have - o, "%s%s", o ? " " : "", s);
        }
    rt_error("model @%s: no exported signature takes %s (contiguous); exported: %s", m->name, g, have);
}

int tj_aot_run(tj_aot_model *m, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    if (!m || (nargs > 0 && !args) || !outs) {
        rt_error("tj_aot_run: %s", !m ? "no model" : "NULL arguments");
        return -1;
    }
    for (int k = 0; k < nargs; k++)
        if (!args[k] || args[k]->magic != RT_LIVE) {
            rt_error("model @%s: argument %d is %s", m->name, k, args[k] ? "not a live tensor" : "NULL");
            return -1;
        }
    for (int i = 0; i < m->ne; i++) {
        aot_entry *e = &m->e[i];
        int need = e->nargs + (e->weights ? 0 : e->nweights);
        if (need != nargs)
            continue;
        tj_tensor *in[256];
        if (e->nargs + e->nweights > 256)
            continue;
        for (int k = 0; k < nargs; k++)
            in[k] = args[k];
        for (int k = 0; e->weights && k < e->nweights; k++)
            in[e->nargs + k] = e->weights[k];
        for (int j = 0; j < e->nplans; j++) {
            if (!sc_plan_matches(e->plans[j], in))
                continue;
            if (max < e->nresults) {
                rt_error("model @%s: %d results, room for %d", m->name, e->nresults, max);
                return -1;
            }
            if (sc_plan_run(e->g, e->plans[j], in, outs, NULL) != 0)
                return -1;
            for (int k = 0; k < e->nresults; k++)
                outs[k] = rt_own(outs[k]);
            return e->nresults;
        }
    }
    no_match(m, args, nargs);
    return -1;
}
