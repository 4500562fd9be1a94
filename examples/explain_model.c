/* explain_model.c - a user's model as a shared object for `tjit explain
 * LIB.so` (docs/cli.md): the entry points tjit_model and tjit_inputs (and
 * tjit_setup, tjit_teardown for the weights). The model has a graph break in
 * the middle (tj_item of a mean), and its third call takes a batch of
 * another size (a recompile), so explain shows pieces, a break with its call
 * site, and a recompile with its reason.
 *
 *   make build/examples/explain_model.so
 *   build/tjit explain build/examples/explain_model.so --calls 4
 *
 * Built without linking libtjit: the tj_ functions are those of the tjit
 * executable that loads it (it exports its API).
 */
#include <stdlib.h>

#include <tjit.h>

typedef struct weights {
    tj_tensor *w, *b;
} weights;

void *tjit_setup(void);
int tjit_inputs(void *ctx, int call, tj_tensor **args, int max);
tj_tensor *tjit_model(void *ctx, tj_tensor *const *args, int nargs);
void tjit_teardown(void *ctx);

void *tjit_setup(void)
{
    weights *p = malloc(sizeof *p);
    if (!p)
        return NULL;
    tj_manual_seed(7);
    tj_scope_begin();
    p->w = tj_keep(tj_randn(TJ_F32, 2, (int64_t[]){16, 8}));
    p->b = tj_keep(tj_randn(TJ_F32, 1, (int64_t[]){16}));
    tj_scope_end();
    return p;
}

/* Call k: x of [4, 8], then [6, 8] from the third call on. */
int tjit_inputs(void *ctx, int call, tj_tensor **args, int max)
{
    (void)ctx;
    if (max < 1)
        return -1;
    args[0] = tj_randn(TJ_F32, 2, (int64_t[]){call < 2 ? 4 : 6, 8});
    return args[0] ? 1 : -1;
}

tj_tensor *tjit_model(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    weights *p = ctx;
    tj_tensor *h = tj_tanh(tj_linear(args[0], p->w, p->b));
    double m = tj_item(tj_mean(h, NULL, 0, false));   /* the graph break */
    return tj_mul(tj_sigmoid(tj_sub_s(h, m)), h);
}

void tjit_teardown(void *ctx)
{
    weights *p = ctx;
    if (!p)
        return;
    tj_release(p->w);
    tj_release(p->b);
    free(p);
}
