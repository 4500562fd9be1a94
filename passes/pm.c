/* pm.c - the pass manager: the pass registry and pipelines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass.h"

const ps_pass ps_passes[] = {
    {"dce", "drop nodes no output depends on", ps_dce},
    {"cse", "merge identical nodes (rebuilds through hash-consing)", ps_cse},
    {"decompose", "rewrite composite ops (softmax, layer_norm, ...) into primitives", ps_decompose},
    {"decompose_codegen",
     "decompose, keeping sdpa and pointwise rows whole (kernels inline their formulas), and "
     "composites whose decomposition cannot follow symbolic dims (eager calls)",
     ps_decompose_codegen},
    {"simplify", "fold constants, algebraic identities, view/cast cleanups, dce", ps_simplify},
    {"split_reductions", "split reductions to a few long rows in two, so their kernels run in parallel",
     ps_split_reductions},
    {"fold_bn", "fold inference batch_norm after conv2d/linear/matmul on weights into their weight and bias",
     ps_fold_bn},
    {"merge_matmuls", "matmuls with few rows on one right operand, independent of each other, into one taller matmul",
     ps_merge_matmuls},
    /* ---- int8 quantization ---- */
    {"fold_quant", "dequantize -> linear/matmul/conv2d (-> relu) (-> quantize) into int8 ops (qlinear, qconv2d)",
     ps_fold_quant},
    {NULL, NULL, NULL},
};

const ps_pass *ps_pass_find(const char *name)
{
    for (const ps_pass *p = ps_passes; p->name; p++)
        if (!strcmp(p->name, name))
            return p;
    return NULL;
}

static bool list_has(const char *list, const char *name)
{
    if (!list)
        return false;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if ((len == n && !strncmp(p, name, n)) || (len == 3 && !strncmp(p, "all", 3)))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

ir_graph *ps_run_pipeline(ir_graph *g, const char *pipeline, const ps_options *opt, char *err,
                          size_t nerr)
{
    ir_graph *cur = g;
    const char *p = pipeline ? pipeline : "";
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        if (len == 0 || len >= sizeof name) {
            snprintf(err, nerr, "bad pass name in pipeline \"%s\"", pipeline);
            goto fail;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        const ps_pass *pass = ps_pass_find(name);
        if (!pass) {
            snprintf(err, nerr, "unknown pass \"%s\" (tjit opt --list-passes)", name);
            goto fail;
        }
        char why[512] = "";
        ir_graph *next = pass->run(cur, why, sizeof why);
        if (!next) {
            snprintf(err, nerr, "pass %s: %s", name, why);
            goto fail;
        }
        if (next != cur && cur != g)
            ir_graph_free(cur);
        cur = next;
        if (opt && opt->verify && ir_verify(cur, why, sizeof why) != 0) {
            snprintf(err, nerr, "pass %s produced an invalid graph: %s", name, why);
            goto fail;
        }
        if (opt && list_has(opt->dump_after, name)) {
            fprintf(stderr, "// ---- after pass %s ----\n", name);
            ir_print_file(cur, stderr);
        }
        p = e ? e + 1 : p + len;
    }
    return cur;
fail:
    if (cur != g)
        ir_graph_free(cur);
    return NULL;
}
