/* fusion.c - an ir_fusion's memory, counts and text form (fusion.h). The
 * fusion itself is made by passes/fuse.c. */
#include <stdio.h>
#include <stdlib.h>

#include "fusion.h"

void ir_fusion_free(ir_fusion *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->ngroups; i++)
        free(f->groups[i].nodes);
    free(f->groups);
    free(f->group_of);
    free(f->map);
    free(f->stored);
    for (int i = 0; i < f->nreasons; i++)
        free(f->reasons[i]);
    free(f->reasons);
    free(f);
}

int ir_fusion_count(const ir_fusion *f, ir_group_kind kind)
{
    int n = 0;
    for (int i = 0; i < f->ngroups; i++)
        n += f->groups[i].kind == kind || (kind == IR_GROUP_PW && ir_group_is_kernel(f->groups[i].kind));
    return n;
}

/* ---- text ------------------------------------------------------------------------------------ */

static const char *kind_name(ir_group_kind k)
{
    static const char *const names[] = {"kernel", "kernel", "eager", "view", "const"};
    return names[k];
}

static void print_group(FILE *o, const ir_fusion *f, int i)
{
    const ir_group *gr = &f->groups[i];
    fprintf(o, "  %s %d", kind_name(gr->kind), i);
    if (ir_group_is_kernel(gr->kind)) {
        const ir_node *d = f->g->nodes[gr->dom_node];
        ir_type t = gr->dom_input ? d->in[0]->type : d->type;
        char b[IR_TYPE_BUF];
        fprintf(o, " %s %s", gr->kind == IR_GROUP_ROWS ? "rows" : "pointwise", ir_type_fmt(&t, b, sizeof b));
        if (gr->kind == IR_GROUP_ROWS)
            fprintf(o, " reduce %d", gr->nred);
    }
    fprintf(o, ":");
    for (int j = 0; j < gr->nnodes; j++)
        fprintf(o, "%s %%%d %s", j ? "," : "", gr->nodes[j], ir_ops[f->g->nodes[gr->nodes[j]]->op].name);
    if (ir_group_is_kernel(gr->kind)) {
        fprintf(o, "; stores");
        for (int j = 0; j < gr->nnodes; j++)
            if (f->stored[gr->nodes[j]])
                fprintf(o, " %%%d", gr->nodes[j]);
        if (gr->epilogue_of >= 0) {
            const ir_node *m = f->g->nodes[f->groups[gr->epilogue_of].nodes[0]];
            fprintf(o, "; epilogue of %%%d %s", m->id, ir_ops[m->op].name);
        }
    }
    fprintf(o, "\n");
}

char *ir_fusion_print(const ir_fusion *f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    if (!o)
        return NULL;
    int nk = ir_fusion_count(f, IR_GROUP_PW), ne = ir_fusion_count(f, IR_GROUP_EAGER);
    fprintf(o, "fused @%s: %d kernel%s, %d eager call%s {\n", f->g->name, nk, nk == 1 ? "" : "s", ne,
            ne == 1 ? "" : "s");
    for (int i = 0; i < f->ngroups; i++)
        print_group(o, f, i);
    fprintf(o, "}\n");
    for (int i = 0; i < f->nreasons; i++)
        fprintf(o, "// %s\n", f->reasons[i]);
    if (fclose(o) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
