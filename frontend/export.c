/* export.c - tj_export (docs/export.md): a compiled function's signatures
 * so far as one shared object that libtjit_rt runs without LLVM.
 *
 *   entries with a compiled plan set --sched/aot_save.c--> the blob (graph
 *       text, plans, weights) and the kernels' objects (the kernel cache's)
 *   a temporary directory: blob.bin, k<i>.o, blob.S (.incbin of the blob)
 *   `cc -shared` links them into path (written to path.tmp, then renamed)
 *   the header: <name>_inputs, <name>_outputs, <name>_load/_run/_free
 */
#include <ftw.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../sched/aot.h"
#include "compiled.h"

extern char **environ;

static bool exportable(const entry *e, bool weights, const char **why)
{
    *why = !e->g ? "ran eagerly" : e->split ? "has a graph break" : e->nwrites ? "writes to its captures"
         : !e->plans ? "has no compiled plan"
         : e->draws.n ? "has random ops (their draws are reserved per compiled call, which an "
                          "exported model does not make)"
         : fe_entry_stale(e) ? "is stale (a captured tensor was released, or written after the trace read "
                               "its values: a call traces it again)"
         : e->keep && !weights ? "keeps weight-only values across calls, which no_weights cannot pass "
                                 "(export it with its weights, or with TJIT_KEEP_WEIGHT_VALUES=0)"
         : NULL;
    return *why == NULL;
}

/* Weight k of e as exported: a capture, then (keep.c) each kept value as it
 * is for the captures now, retained into *held. */
static const tj_tensor *weight_of(entry *e, int k, tj_tensor **held, int *nheld)
{
    if (k < e->ncaps)
        return e->caps[k].t;
    if (*nheld == 0) {
        tj_tensor *few[64], **caps = e->ncaps <= 64 ? few : malloc(sizeof *caps * (size_t)e->ncaps);
        for (int c = 0; caps && c < e->ncaps; c++)
            caps[c] = e->caps[c].t;
        if (caps && fe_keep_values(e->keep, caps, held) == 0)
            *nheld = fe_keep_count(e->keep);
        if (caps != few)
            free(caps);
    }
    return *nheld ? held[k - e->ncaps] : NULL;
}

/* One entry into w: counts, graph, weights (the captures, then the values
 * kept across calls: the plans read them as weights), plans. 0 or -1 with
 * err. */
static int entry_write(entry *e, bool weights, sc_wbuf *w, sc_aot_kernels *ks, char *err, size_t nerr)
{
    int nw = e->ncaps + fe_keep_count(e->keep), nheld = 0, rc = -1;   /* kept values: weights too */
    tj_tensor *few[16], **held = nw - e->ncaps <= 16 ? few : malloc(sizeof *held * (size_t)(nw - e->ncaps));
    if (!held) {
        snprintf(err, nerr, "out of memory");
        return -1;
    }
    sc_w_u32(w, (uint32_t)e->nargs);
    sc_w_u32(w, (uint32_t)nw);
    sc_w_u32(w, (uint32_t)e->nresults);
    sc_w_u32(w, weights);
    if (sc_aot_write_graph(e->plans, w, err, nerr))
        goto out;
    for (int k = 0; k < nw; k++) {
        const tj_tensor *t = weight_of(e, k, held, &nheld);
        if (!t && k >= e->ncaps) {
            snprintf(err, nerr, "kept value %d: %s", k - e->ncaps, tj_last_error());
            goto out;
        }
        if ((k < e->ncaps && fe_cap_released(&e->caps[k])) || !tj_is_contiguous(t)) {
            snprintf(err, nerr, "weight %d is %s", k, t && !rt_dead(t) ? "not contiguous" : "released");
            goto out;
        }
        ir_type ty;
        rt_type_of(t, &ty);
        uint64_t nb = (uint64_t)rt_numel(t) * (uint64_t)tj_dtype_size(t->dtype);
        sc_w_bytes(w, &ty, sizeof ty);
        sc_w_bytes(w, &nb, 8);
        if (weights) {   /* aligned to 64 from the blob's start: loaded in place */
            uint32_t pad = (uint32_t)((64 - (w->n + 4) % 64) % 64);
            static const char zeros[64];
            sc_w_u32(w, pad);
            sc_w_bytes(w, zeros, pad);
            sc_w_bytes(w, rt_ptr(t), nb);
        }
    }
    rc = sc_aot_write_plans(e->plans, w, ks, err, nerr);
out:
    for (int k = 0; k < nheld; k++)
        tj_release(held[k]);
    if (held != few)
        free(held);
    return rc;
}

/* The blob of c's exportable entries; the first one's counts in *first. */
static char *make_blob(tj_compiled *c, const char *name, bool weights, sc_aot_kernels *ks, size_t *len,
                       const entry **first, char *err, size_t nerr)
{
    sc_wbuf ents = {0}, pay = {0};
    int n = 0;
    const char *why = NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nentries; i++) {
        const char *w = NULL;
        if (!exportable(c->entries[i], weights, &w)) {
            why = w;
            continue;
        }
        if (entry_write(c->entries[i], weights, &ents, ks, err, nerr)) {
            n = -1;
            break;
        }
        if (n++ == 0)
            *first = c->entries[i];
    }
    pthread_mutex_unlock(&c->lock);
    char *blob = NULL;
    if (n == 0)
        snprintf(err, nerr, "no exportable signature (call it first%s%s)", why ? "; one " : "", why ? why : "");
    if (n > 0) {
        const cg_key_env *env = cg_key_env_host();
        sc_w_str(&pay, name);
        sc_w_str(&pay, env && env->features ? env->features : "");
        sc_w_u32(&pay, (uint32_t)ks->n);
        for (int i = 0; i < ks->n; i++)
            sc_w_str(&pay, ks->name[i]);
        sc_w_u32(&pay, (uint32_t)n);
        /* the entries at a multiple of 64 bytes from the blob's start (its
         * header, SC_AOT_HEADER bytes, comes before the payload) */
        uint32_t pad = (uint32_t)((64 - (SC_AOT_HEADER + pay.n + 4) % 64) % 64);
        static const char zeros[64];
        sc_w_u32(&pay, pad);
        sc_w_bytes(&pay, zeros, pad);
        sc_w_bytes(&pay, ents.p, ents.n);
        if (ents.failed || pay.failed || !(blob = sc_aot_seal(&pay, len)))
            snprintf(err, nerr, "out of memory");
    }
    free(ents.p);
    free(pay.p);
    return blob;
}

static int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = fwrite(p, 1, n, f) == n ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* `cc -shared -o out dir/blob.S dir/k*.o -lm`; 0 or -1 with err. */
static int link_so(const char *dir, int nk, const char *out, char *err, size_t nerr)
{
    int argc = 0;
    char **argv = calloc((size_t)nk + 12, sizeof *argv), *blob_s = NULL;
    if (!argv || asprintf(&blob_s, "%s/blob.S", dir) < 0) {
        free(argv);
        snprintf(err, nerr, "out of memory");
        return -1;
    }
    argv[argc++] = "cc", argv[argc++] = "-shared", argv[argc++] = "-Wl,-z,noexecstack";
    argv[argc++] = "-o", argv[argc++] = (char *)out, argv[argc++] = blob_s;
    int first = argc;
    for (int i = 0; i < nk; i++)
        if (asprintf(&argv[argc++], "%s/k%d.o", dir, i) < 0)
            argv[--argc] = NULL;
    argv[argc++] = "-lm";
    pid_t pid;
    int st = 0, rc = posix_spawnp(&pid, "cc", NULL, NULL, argv, environ);
    if (rc == 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        rc = 0;
    else
        snprintf(err, nerr, "`cc -shared` %s (the exporting machine needs a C compiler and linker)",
                 rc ? "could not be started" : "failed"), rc = -1;
    for (int i = first; i < argc - 1; i++)
        free(argv[i]);
    free(blob_s);
    free(argv);
    return rc;
}

static int write_objects(const char *dir, const char *blob, size_t len, const sc_aot_kernels *ks)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/blob.bin", dir);
    if (write_file(p, blob, len))
        return -1;
    for (int i = 0; i < ks->n; i++) {
        snprintf(p, sizeof p, "%s/k%d.o", dir, i);
        if (write_file(p, ks->obj[i], ks->len[i]))
            return -1;
    }
    char s[8800];
    int n = snprintf(s, sizeof s,
                     "\t.data\n\t.balign 64\n\t.globl %s\n\t.type %s, @object\n%s:\n"
                     "\t.incbin \"%s/blob.bin\"\n\t.globl %s\n%s:\n"
                     "\t.section .note.GNU-stack,\"\",@progbits\n",
                     SC_AOT_BLOB_SYM, SC_AOT_BLOB_SYM, SC_AOT_BLOB_SYM, dir, SC_AOT_BLOB_END_SYM,
                     SC_AOT_BLOB_END_SYM);
    snprintf(p, sizeof p, "%s/blob.S", dir);
    return n > 0 && (size_t)n < sizeof s ? write_file(p, s, (size_t)n) : -1;
}

/* The header: typed structs and inline wrappers over tj_aot_*. */
static int write_header(const char *path, const char *so, const char *name, const entry *e, bool weights)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int na = e->nargs + (weights ? 0 : e->ncaps), nr = e->nresults;
    fprintf(f, "/* %s.h - generated by tj_export: the typed entry point of %s.\n"
               " * Link with -ltjit_rt (no LLVM). %s_run returns 0, or -1 with tj_last_error()\n"
               " * (arguments matching no exported signature, a failed op). */\n"
               "#ifndef TJ_AOT_%s_H\n#define TJ_AOT_%s_H\n\n#include <tjit.h>\n\n",
            name, so, name, name, name);
    fprintf(f, "typedef struct %s_inputs {\n", name);
    for (int k = 0; k < na; k++) {
        char t[IR_TYPE_BUF];
        fprintf(f, "    tj_tensor *in%d;   /* %s%s */\n", k, ir_type_fmt(&e->g->inputs[k]->type, t, sizeof t),
                k >= e->nargs ? " (weight)" : "");
    }
    fprintf(f, "} %s_inputs;\n\ntypedef struct %s_outputs {\n", name, name);
    for (int k = 0; k < nr; k++)
        fprintf(f, "    tj_tensor *out%d;\n", k);
    fprintf(f, "} %s_outputs;\n\n", name);
    fprintf(f, "static inline tj_aot_model *%s_load(const char *path) { return tj_aot_load(path); }\n", name);
    fprintf(f, "static inline void %s_free(tj_aot_model *m) { tj_aot_free(m); }\n\n", name);
    fprintf(f, "static inline int %s_run(tj_aot_model *m, const %s_inputs *in, %s_outputs *out)\n{\n",
            name, name, name);
    fprintf(f, "    tj_tensor *args[%d], *res[%d];\n", na ? na : 1, nr);
    for (int k = 0; k < na; k++)
        fprintf(f, "    args[%d] = in->in%d;\n", k, k);
    fprintf(f, "    if (tj_aot_run(m, args, %d, res, %d) != %d)\n        return -1;\n", na, nr, nr);
    for (int k = 0; k < nr; k++)
        fprintf(f, "    out->out%d = res[%d];\n", k, k);
    fprintf(f, "    return 0;\n}\n\n#endif\n");
    return fclose(f) == 0 ? 0 : -1;
}

static bool c_ident(const char *s)
{
    if (!s || !(*s == '_' || ((*s | 32) >= 'a' && (*s | 32) <= 'z')))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || ((*s | 32) >= 'a' && (*s | 32) <= 'z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

int tj_export(tj_compiled *c, const char *path, const tj_export_options *opts)
{
    tj_export_options o = opts ? *opts : (tj_export_options){0};
    const char *name = o.name ? o.name : c ? c->name : "";
    if (!c || !path || !*path || !c_ident(name)) {
        rt_error("tj_export: %s", !c ? "no compiled function" : !path || !*path ? "no path"
                                 : "the name is not a C identifier (set tj_export_options.name)");
        return -1;
    }
    char err[768] = "", dir[] = "/tmp/tjit-export-XXXXXX", *hdr = NULL, *tmp = NULL;
    sc_aot_kernels ks = {0};
    size_t len = 0;
    const entry *first = NULL;
    int rc = -1;
    char *blob = make_blob(c, name, !o.no_weights, &ks, &len, &first, err, sizeof err);
    bool made = blob && mkdtemp(dir);
    if (blob && !made)
        snprintf(err, sizeof err, "cannot make a temporary directory");
    size_t pl = strlen(path);
    if (o.header)
        hdr = strdup(o.header);
    else if (pl > 3 && !strcmp(path + pl - 3, ".so") && (hdr = strdup(path)))
        strcpy(hdr + pl - 3, ".h");
    else if (asprintf(&hdr, "%s.h", path) < 0)
        hdr = NULL;
    if (made && (!hdr || asprintf(&tmp, "%s.tmp", path) < 0))
        snprintf(err, sizeof err, "out of memory");
    else if (made && write_objects(dir, blob, len, &ks))
        snprintf(err, sizeof err, "cannot write to %s", dir);
    else if (made && link_so(dir, ks.n, tmp, err, sizeof err) == 0) {
        if (rename(tmp, path))
            snprintf(err, sizeof err, "cannot write %s", path);
        else if (write_header(hdr, path, name, first, !o.no_weights))
            snprintf(err, sizeof err, "cannot write the header %s", hdr);
        else
            rc = 0;
    }
    if (tmp)
        remove(tmp);
    if (made)
        nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
    if (rc)
        rt_error("tj_export(%s, %s): %s", c->name, path, err);
    sc_aot_kernels_free(&ks);
    free(blob);
    free(hdr);
    free(tmp);
    return rc;
}
