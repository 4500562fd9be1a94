/* util_gradcases.c - running the gradient-check cases of tests/grad/cases.tir
 * (util_gradcases.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../frontend/autograd.h"
#include "util.h"
#include "util_gradcases.h"

int tu_case_run(const ir_graph *g, tj_tensor **slot)
{
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        tj_tensor *in[FE_MAX_INPUTS];
        for (int j = 0; j < n->nin; j++) {
            const ir_node *m = n->in[j];
            in[j] = !m ? NULL : m->op == IR_OP_INPUT ? slot[m->id] : slot[g->ninputs + m->id];
        }
        ir_attrs a = {0};
        for (int j = 0; j < ir_ops[n->op].nattrs; j++)
            a.a[j] = n->attrs[j];
        tj_tensor *r = fe_apply(n->op, in, n->nin, &a);
        if (!r) {
            fprintf(stderr, "%s: %s\n", ir_ops[n->op].name, tj_last_error());
            return -1;
        }
        slot[g->ninputs + k] = r;
    }
    return 0;
}

tj_tensor *tu_case_output(const ir_graph *g, tj_tensor **slot, int k)
{
    const ir_node *o = g->outputs[k];
    return o->op == IR_OP_INPUT ? slot[o->id] : slot[g->ninputs + o->id];
}

static double uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static double normal(uint64_t *s)
{
    double u = uniform(s) + 1e-12, v = uniform(s);
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

tj_tensor *tu_case_input(const ir_node *in, uint64_t *rng)
{
    const ir_type *t = &in->type;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    assert_non_null(v);
    char kind = in->name[0];
    long range = kind == 'i' ? strtol(in->name + 1, NULL, 10) : 0;
    int64_t last = t->ndim ? t->shape[t->ndim - 1] : 1;
    for (int64_t k = 0; k < n; k++) {
        switch (kind) {
        case 'p': v[k] = 0.5 + 1.5 * uniform(rng); break;
        case 'u': v[k] = -0.8 + 1.6 * uniform(rng); break;
        case 'g': v[k] = 1.2 + 1.8 * uniform(rng); break;
        case 'm': v[k] = k % last == 0 || uniform(rng) < 0.6; break;
        case 'i': v[k] = (double)(int64_t)(uniform(rng) * (double)range); break;
        case 'z': v[k] = (k % 3 == 0 || k == 4) ? 0 : 1; break;
        case 'o': v[k] = k % 3 == 0 ? 0 : 0.5 + 1.5 * uniform(rng); break;
        default: v[k] = normal(rng); break;
        }
    }
    tj_tensor *x = tu_tensor(t->dtype, t->ndim, t->shape, v);
    free(v);
    return x;
}

bool tu_case_wants_grad(const ir_node *in) { return in->type.dtype == TJ_F64 && in->name[0] != 'z'; }

tj_tensor *tu_case_loss(const ir_graph *g, tj_tensor **slot, tj_tensor **r)
{
    tj_tensor *l = NULL;
    for (int k = 0; k < g->noutputs; k++) {
        tj_tensor *y = tj_cast(tu_case_output(g, slot, k), TJ_F64);
        tj_tensor *t = tj_sum(tj_mul(y, r[k]), NULL, 0, false);
        l = l ? tj_add(l, t) : t;
    }
    return l;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    return s;
}

int tu_cases_each(int (*fn)(const ir_graph *g, void *ctx), void *ctx)
{
    char *src = read_file("tests/grad/cases.tir");
    assert_non_null(src);
    int sum = 0;
    for (char *p = strstr(src, "graph @"); p;) {
        char *next = strstr(p + 1, "graph @");
        size_t n = next ? (size_t)(next - p) : strlen(p);
        char err[512];
        ir_graph *g = ir_parse(p, n, "tests/grad/cases.tir", err, sizeof err);
        if (!g)
            fail_msg("%s", err);
        tj_scope_begin();
        sum += fn(g, ctx);
        tj_scope_end();
        ir_graph_free(g);
        p = next;
    }
    free(src);
    return sum;
}
