/* onnx_run.c - tj_onnx_load and tj_onnx_run: a model read (onnx_read.c), its
 * values numbered and its nodes checked once (each input made before use,
 * each op mapped), then run node by node with tjit's ops (onnx_ops.c). Run
 * under tj_compile_multi, the same walk is traced into one graph, so an
 * imported model gets fusion, kernels, dumps, explain and the kernel cache
 * like a model written in C. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"

struct ox_run {
    const tj_onnx *m;
    const ox_node *node;     /* running */
};

int ox_fail(ox_run *r, const ox_node *n, const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    rt_error("onnx: %s: node '%s' (%s): %s", r->m->path, n->name, n->op, why);
    return -1;
}

int ox_set(ox_val *v, tj_tensor *t)
{
    v->t = t;
    v->host = false;
    return t ? 0 : -1;
}

int ox_set_host(ox_val *v, int dt, int ndim, const int64_t *shape, const int64_t *values)
{
    int64_t n = 1;
    for (int k = 0; k < ndim; k++)
        n *= shape[k];
    if (n > OX_HOST_MAX || ndim > TJ_MAX_DIMS)
        return -1;
    v->t = NULL;
    v->host = true;
    v->dtype = dt;
    v->ndim = ndim;
    memcpy(v->shape, shape, (size_t)ndim * sizeof *shape);
    v->n = n;
    memcpy(v->hv, values, (size_t)n * sizeof *values);
    return 0;
}

tj_tensor *ox_tensor(ox_run *r, ox_val *v)
{
    (void)r;
    if (!v->t && v->host) {
        tj_tensor *t = tj_from_data(TJ_I64, v->ndim, v->shape, v->hv);
        v->t = v->dtype == TJ_I64 ? t : tj_cast(t, (tj_dtype)v->dtype);
    }
    return v->t;
}

const int64_t *ox_ints(ox_run *r, const ox_node *n, const ox_val *v, const char *what, int64_t *count)
{
    if (!v->host) {
        ox_fail(r, n, "its %s is computed from tensor data at run time; tjit needs it known "
                "when the graph is built (a constant, or shape arithmetic)", what);
        return NULL;
    }
    *count = v->n;
    return v->hv;
}

void ox_set_const(ox_val *v, tj_tensor *t)
{
    tj_dtype dt = tj_dtype_of(t);
    if (!tj_dtype_is_float(dt) && rt_numel(t) <= OX_HOST_MAX) {
        int64_t vals[OX_HOST_MAX], idx[TJ_MAX_DIMS] = {0};
        int64_t n = rt_numel(t);
        for (int64_t i = 0; i < n; i++) {
            int64_t rem = i;
            for (int k = tj_ndim(t) - 1; k >= 0; k--) {
                idx[k] = rem % tj_shape(t)[k];
                rem /= tj_shape(t)[k];
            }
            vals[i] = (int64_t)tj_get(t, idx);
        }
        ox_set_host(v, dt, tj_ndim(t), tj_shape(t), vals);
    }
    v->t = t;
}

/* ---- load ---------------------------------------------------------------------------- */

static int slot_of(const char **names, int n, const char *s)
{
    for (int k = n - 1; k >= 0; k--)   /* the latest definition */
        if (!strcmp(names[k], s))
            return k;
    return -1;
}

/* Numbers the values and checks the graph: every input of a node made
 * before it (ONNX requires topological order), every op mapped. */
static int resolve(tj_onnx *m)
{
    int cap = m->ninits + m->ninputs;
    for (int i = 0; i < m->nnodes; i++)
        cap += m->nodes[i].nout;
    const char **names = calloc((size_t)cap + 1, sizeof *names);
    m->input_slot = ir_arena_calloc(&m->arena, (size_t)m->ninputs + 1, sizeof *m->input_slot);
    m->output_slot = ir_arena_calloc(&m->arena, (size_t)m->noutputs + 1, sizeof *m->output_slot);
    if (!names || !m->input_slot || !m->output_slot) {
        free(names);
        rt_error("onnx: %s: out of memory", m->path);
        return -1;
    }
    int nv = 0, rc = -1;
    for (int k = 0; k < m->ninits; k++)
        names[nv++] = m->init_names[k];
    for (int k = 0; k < m->ninputs; k++) {
        m->input_slot[k] = nv;
        names[nv++] = m->inputs[k].name;
    }
    for (int i = 0; i < m->nnodes; i++) {
        ox_node *n = &m->nodes[i];
        if (n->domain[0] && strcmp(n->domain, "ai.onnx")) {
            rt_error("onnx: %s: node '%s' (%s) is of domain '%s'; tjit maps the default domain only",
                     m->path, n->name, n->op, n->domain);
            goto out;
        }
        if (!(n->fn = ox_op_find(n->op))) {
            rt_error("onnx: %s: node '%s' (%s): tjit has no mapping for this operator (opset %lld)",
                     m->path, n->name, n->op, (long long)m->opset);
            goto out;
        }
        if (n->nin < n->fn->nmin || (n->fn->nmax >= 0 && n->nin > n->fn->nmax)) {
            rt_error("onnx: %s: node '%s' (%s) has %d inputs (%s takes %d to %d)", m->path, n->name,
                     n->op, n->nin, n->op, n->fn->nmin, n->fn->nmax);
            goto out;
        }
        n->in_slot = ir_arena_alloc(&m->arena, (size_t)(n->nin + 1) * sizeof *n->in_slot);
        n->out_slot = ir_arena_alloc(&m->arena, (size_t)(n->nout + 1) * sizeof *n->out_slot);
        if (!n->in_slot || !n->out_slot) {
            rt_error("onnx: %s: out of memory", m->path);
            goto out;
        }
        for (int k = 0; k < n->nin; k++) {
            n->in_slot[k] = n->in[k][0] ? slot_of(names, nv, n->in[k]) : -1;
            if (n->in[k][0] && n->in_slot[k] < 0) {
                rt_error("onnx: %s: node '%s' (%s): input '%s' is made by no earlier node, graph "
                         "input or initializer", m->path, n->name, n->op, n->in[k]);
                goto out;
            }
        }
        for (int k = 0; k < n->nout; k++) {
            n->out_slot[k] = n->out[k][0] ? nv : -1;
            if (n->out[k][0])
                names[nv++] = n->out[k];
        }
    }
    for (int k = 0; k < m->noutputs; k++)
        if ((m->output_slot[k] = slot_of(names, nv, m->outputs[k].name)) < 0) {
            rt_error("onnx: %s: graph output '%s' is made by no node", m->path, m->outputs[k].name);
            goto out;
        }
    if (m->noutputs == 0) {
        rt_error("onnx: %s: the graph has no outputs", m->path);
        goto out;
    }
    m->nvalues = nv;
    rc = 0;
out:
    free(names);
    return rc;
}

tj_onnx *tj_onnx_load_bytes(const void *data, size_t size, const char *name)
{
    if (!data && size) {
        rt_error("onnx: data is NULL");
        return NULL;
    }
    name = name ? name : "(memory)";
    tj_onnx *m = calloc(1, sizeof *m);
    if (!m || !(m->path = ir_arena_strndup(&m->arena, name, strlen(name)))) {
        free(m);
        rt_error("onnx: %s: out of memory", name);
        return NULL;
    }
    tj_scope_begin();   /* tensors made while reading are kept (tj_keep) or dropped */
    int rc = ox_parse(m, data, size);
    tj_scope_end();
    if (rc != 0 || resolve(m) != 0) {
        tj_onnx_free(m);
        return NULL;
    }
    return m;
}

tj_onnx *tj_onnx_load(const char *path)
{
    if (!path) {
        rt_error("onnx: path is NULL");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        rt_error("onnx: cannot open %s", path);
        return NULL;
    }
    uint8_t *data = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (data = malloc((size_t)size + 1)) && fread(data, 1, (size_t)size, f) != (size_t)size) {
        free(data);
        data = NULL;
    }
    fclose(f);
    if (!data) {
        rt_error("onnx: cannot read %s", path);
        return NULL;
    }
    tj_onnx *m = tj_onnx_load_bytes(data, (size_t)size, path);
    free(data);
    return m;
}

void tj_onnx_free(tj_onnx *m)
{
    if (!m)
        return;
    for (int k = 0; m->inits && k < m->ninits; k++)
        tj_release(m->inits[k]);
    for (int i = 0; m->nodes && i < m->nnodes; i++)
        for (int k = 0; m->nodes[i].attrs && k < m->nodes[i].nattrs; k++)
            tj_release(m->nodes[i].attrs[k].t);
    free(m->inits);
    ir_arena_release(&m->arena);
    free(m);
}

int tj_onnx_num_inputs(const tj_onnx *m) { return m ? m->ninputs : -1; }
int tj_onnx_num_outputs(const tj_onnx *m) { return m ? m->noutputs : -1; }

const char *tj_onnx_input_name(const tj_onnx *m, int k)
{
    return m && k >= 0 && k < m->ninputs ? m->inputs[k].name : NULL;
}

const char *tj_onnx_output_name(const tj_onnx *m, int k)
{
    return m && k >= 0 && k < m->noutputs ? m->outputs[k].name : NULL;
}

/* ---- run ------------------------------------------------------------------------------ */

/* arg against the graph input's declared type: dtype, rank, fixed dims. */
static int check_input(const tj_onnx *m, int k, tj_tensor *arg)
{
    const ox_value_info *v = &m->inputs[k];
    char d[64];
    if (!arg) {
        if (!rt_has_error())
            rt_error("onnx: %s: input %d ('%s') is NULL", m->path, k, v->name);
        return -1;
    }
    bool ok = v->dtype < 0 || tj_dtype_of(arg) == (tj_dtype)v->dtype;
    ok &= v->ndim < 0 || tj_ndim(arg) == v->ndim;
    for (int i = 0; ok && v->ndim > 0 && i < v->ndim; i++)
        ok = v->dims[i] < 0 || tj_size(arg, i) == v->dims[i];
    if (ok)
        return 0;
    char want[160];
    int w = snprintf(want, sizeof want, "%s[", v->dtype >= 0 ? tj_dtype_name((tj_dtype)v->dtype) : "?");
    for (int i = 0; i < v->ndim && w < (int)sizeof want; i++)
        w += v->dims[i] >= 0 ? snprintf(want + w, sizeof want - (size_t)w, "%s%lld", i ? "," : "", (long long)v->dims[i])
                             : snprintf(want + w, sizeof want - (size_t)w, "%s%s", i ? "," : "",
                                        v->dim_param[i] ? v->dim_param[i] : "?");
    if (w < (int)sizeof want)
        snprintf(want + w, sizeof want - (size_t)w, "]");
    rt_error("onnx: %s: input %d ('%s') is %s; the model declares %s", m->path, k, v->name,
             tj_describe(arg, d, sizeof d), want);
    return -1;
}

int tj_onnx_run(void *model, tj_tensor *const *args, int nargs, tj_tensor **outs, int max)
{
    tj_onnx *m = model;
    if (!m) {
        rt_error("onnx: run: model is NULL");
        return -1;
    }
    if (nargs != m->ninputs) {
        rt_error("onnx: %s: %d inputs given, the model takes %d", m->path, nargs, m->ninputs);
        return -1;
    }
    if (max < m->noutputs) {
        rt_error("onnx: %s: room for %d outputs, the model has %d", m->path, max, m->noutputs);
        return -1;
    }
    for (int k = 0; k < nargs; k++)
        if (check_input(m, k, args[k]) != 0)
            return -1;
    ox_val *vals = calloc((size_t)m->nvalues + 1, sizeof *vals);
    if (!vals) {
        rt_error("onnx: %s: out of memory", m->path);
        return -1;
    }
    ox_run r = {m, NULL};
    for (int k = 0; k < m->ninits; k++)
        ox_set_const(&vals[k], m->inits[k]);
    for (int k = 0; k < nargs; k++)
        vals[m->input_slot[k]].t = args[k];
    int rc = 0;
    for (int i = 0; i < m->nnodes && rc == 0; i++) {
        const ox_node *n = &m->nodes[i];
        ox_val *in[n->nin + 1], *out[n->nout + 1];
        for (int k = 0; k < n->nin; k++)
            in[k] = n->in_slot[k] >= 0 ? &vals[n->in_slot[k]] : NULL;
        for (int k = 0; k < n->nout; k++)
            out[k] = n->out_slot[k] >= 0 ? &vals[n->out_slot[k]] : NULL;
        r.node = n;
        rc = n->fn->fn(&r, n, in, out);
        if (rc != 0 && strncmp(tj_last_error(), "onnx:", 5)) {
            char why[1024];
            snprintf(why, sizeof why, "%s", tj_last_error());
            ox_fail(&r, n, "%s", why);
        }
        for (int k = 0; rc == 0 && k < n->nout; k++)
            if (out[k] && !out[k]->t && !out[k]->host)
                rc = ox_fail(&r, n, "output %d was not made", k);
    }
    for (int k = 0; rc == 0 && k < m->noutputs; k++)
        rc = (outs[k] = ox_tensor(&r, &vals[m->output_slot[k]])) ? 0 : -1;
    free(vals);
    return rc == 0 ? m->noutputs : -1;
}
