/* util_programs_dyn.c - the dynamic mode's random programs
 * (tests/test_programs.c): steps over values whose shapes are followed
 * abstractly (ashape), so the dims marked dynamic stay symbolic.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "util_programs.h"

/* Dim d (a base dim plus an offset) plus c more: x[1:] of s0 is s0-1. */
static int with_offset(int d, int c)
{
    int z = d / 8, off = (z & 1 ? -(z >> 1) - 1 : z >> 1) + c;
    return d % 8 + 8 * (off >= 0 ? 2 * off : -2 * off - 1);
}

static bool abcast(const ashape *a, const ashape *b, ashape *r)
{
    int n = a->nd > b->nd ? a->nd : b->nd;
    r->nd = n;
    for (int i = 0; i < n; i++) {
        int da = i < n - a->nd ? -1 : a->d[i - (n - a->nd)];
        int db = i < n - b->nd ? -1 : b->d[i - (n - b->nd)];
        if (da != db && da != -1 && db != -1)
            return false;
        r->d[i] = da == -1 ? db : da;
    }
    return true;
}

static tj_tensor *dyn_step(gen *g, tj_tensor **v, ashape *sh, int nv, ashape *out)
{
    int ia = rnd(g, nv), ib = rnd(g, nv);
    tj_tensor *a = v[ia];
    ashape s = sh[ia];
    int nd = s.nd, d = nd ? rnd(g, nd) : 0;
    *out = s;
    switch (rnd(g, 23)) {
    case 22:   /* a mask over symbolic dims: as many draws as the call's sizes give */
        note(g, "dropout 0.3 (training)");
        return tj_dropout(a, 0.3, true);
    case 19:   /* composites over symbolic dims: the roll's decomposition reads the size */
        if (nd) {
            note(g, "roll %d by 2", d);
            return tj_roll(a, (int64_t[]){2}, &d, 1);
        }
        break;
    case 20:
        if (nd >= 2) {
            note(g, "tril -1");
            return tj_tril(a, -1);
        }
        break;
    case 21:   /* the last two rows: a start from the back (a plain dim is >= 2) */
        if (nd && s.d[d] >= 0 && s.d[d] < 8) {
            note(g, "narrow %d from -2 by 2", d);
            out->d[d] = -2;
            return tj_narrow(a, d, -2, 2);
        }
        break;
    case 16:   /* sizes a symbol plus a count (docs/tracing.md) */
        if (nd && s.d[d] >= 0) {
            note(g, "slice %d [1:]", d);
            out->d[d] = with_offset(s.d[d], -1);
            return tj_slice(a, d, 1, INT64_MAX, 1);
        }
        break;
    case 17:
        if (nd) {
            note(g, "cat of %d [1:] and [:1]", d);
            return tj_cat((tj_tensor *[]){tj_slice(a, d, 1, INT64_MAX, 1), tj_slice(a, d, 0, 1, 1)}, 2, d);
        }
        break;
    case 18:
        if (nd) {
            note(g, "pad last dim by (1, 2)");
            int e = s.d[nd - 1];
            out->d[nd - 1] = e >= 0 ? with_offset(e, 3) : e == -1 ? -4 : e - 3;
            return tj_pad(a, (int64_t[]){1, 2}, 1, 0.5);
        }
        break;
    case 11: {   /* a write into a clone; a view taken before it, read after */
        tj_tensor *c = tj_clone(a), *view = nd >= 2 ? tj_transpose(c, 0, nd - 1) : tj_unsqueeze(c, 0);
        ashape r;
        bool into = abcast(&s, &sh[ib], &r) && r.nd == nd && !memcmp(r.d, s.d, sizeof(int) * (size_t)nd);
        note(g, into ? "clone += b in place" : "clone *= 2 in place");
        if ((into ? tj_add_(c, v[ib]) : tj_mul_s_(c, 2)) != 0)
            return NULL;
        if (rnd(g, 2))
            return c;
        note(g, "the view taken before");
        if (nd >= 2) {
            out->d[0] = s.d[nd - 1];
            out->d[nd - 1] = s.d[0];
        } else {
            out->nd = nd + 1;
            out->d[0] = -1;
            memcpy(out->d + 1, s.d, sizeof(int) * (size_t)nd);
        }
        return view;
    }
    case 12:   /* an argument written in place (written back after the call) */
        if (ia < 3) {
            note(g, "arg %d *= 1.5 in place", ia);
            return tj_mul_s_(a, 1.5) == 0 ? tj_mul_s(a, 1) : NULL;
        }
        break;
    case 13:
        if (nd) {   /* the first row along d; now and then also zeroed in a clone (a
                     * write into a view of a value of the call: a graph break) */
            out->d[d] = -1;
            tj_tensor *row = tj_narrow(a, d, 0, 1), *c = tj_clone(a);
            if (rnd(g, 4)) {
                note(g, "narrow %d to 1", d);
                return row;
            }
            note(g, "narrow %d to 1, then that row of a clone *= 0", d);
            if (tj_mul_s_(tj_narrow(c, d, 0, 1), 0) != 0)
                return NULL;
            return rnd(g, 2) ? row : tj_sum(c, &d, 1, true);
        }
        break;
    case 14: {
        note(g, "stack(a, a) dim 0");
        out->nd = nd + 1;
        out->d[0] = -2;
        memcpy(out->d + 1, s.d, sizeof(int) * (size_t)nd);
        return tj_stack((tj_tensor *[]){a, a}, 2, 0);
    }
    case 15:
        note(g, "masked_fill(a < 0.3, 2)");
        return tj_masked_fill(a, tj_lt_s(a, 0.3), 2);
    case 0: return tu_program_unary(g, a);
    case 1: return tu_program_unary_more(g, a, false);
    case 8:
        if (!nd)
            break;
        switch (rnd(g, 3)) {
        case 0: note(g, "cumsum %d", d); return tj_cumsum(a, d);
        case 1: note(g, "cummax %d", d); return tj_cummax(a, d, NULL);
        default: note(g, "logcumsumexp %d", d); return tj_logcumsumexp(a, d);
        }
    case 9:
        if (!nd)
            break;
        note(g, "flip %d", d);
        return tj_flip(a, &d, 1);
    case 10:
        if (nd < 2)
            break;
        note(g, "attention(a, a, a) causal");
        return tj_scaled_dot_product_attention(a, a, a, NULL, true, 0.5);
    case 2:
    case 3:
        if (abcast(&s, &sh[ib], out))
            return tu_program_binary(g, a, v[ib]);
        return tu_program_unary(g, a);
    case 4: {
        if (!nd)
            break;
        bool keep = rnd(g, 2);
        out->nd = keep ? nd : nd - 1;
        for (int i = 0, j = 0; i < nd; i++)
            if (i != d)
                out->d[j++] = s.d[i];
            else if (keep)
                out->d[j++] = -1;
        switch (rnd(g, 5)) {
        case 0: note(g, "sum dim %d keep %d", d, keep); return tj_sum(a, &d, 1, keep);
        case 1: note(g, "amax dim %d keep %d", d, keep); return tj_amax(a, &d, 1, keep);
        case 2: note(g, "mean dim %d keep %d", d, keep); return tj_mean(a, &d, 1, keep);
        case 3: note(g, "var dim %d keep %d", d, keep); return tj_var(a, &d, 1, 1, keep);
        default: note(g, "logsumexp dim %d keep %d", d, keep); return tj_logsumexp(a, &d, 1, keep);
        }
    }
    case 5:
        if (!nd)
            break;
        note(g, "softmax %d", d);
        return tj_softmax(a, d);
    case 6:
        if (nd >= 2) {
            int e = rnd(g, nd);
            note(g, "transpose %d %d", d, e);
            out->d[d] = s.d[e];
            out->d[e] = s.d[d];
            return tj_transpose(a, d, e);
        }
        break;
    default:
        if (nd >= 2) {
            note(g, "matmul(a, a^T)");
            out->d[nd - 1] = s.d[nd - 2];
            return tj_matmul(a, tj_transpose(a, -1, -2));
        }
        if (nd) {
            note(g, "layer_norm last");
            return tj_layer_norm(a, 1, NULL, NULL, NORM_EPS);
        }
        break;
    }
    note(g, "unsqueeze 0");
    out->nd = nd + 1;
    out->d[0] = -1;
    memcpy(out->d + 1, s.d, sizeof(int) * (size_t)nd);
    return tj_unsqueeze(a, 0);
}

int tu_program_model_dyn(void *ctx, tj_tensor *const *in, int nin, tj_tensor **out, int max)
{
    dprog *dp = ctx;
    gen g = {.s = dp->p.seed * 2654435761u + 17u, .p = &dp->p};
    tj_tensor *v[MAX_VALUES];
    ashape sh[MAX_VALUES];
    int nv = 0;
    for (int i = 0; i < nin; i++)
        v[nv] = in[i], sh[nv++] = dp->arg[i];
    int steps = 4 + rnd(&g, 13);
    for (int s = 0; s < steps && nv < MAX_VALUES; s++) {
        tj_tensor *r = dyn_step(&g, v, sh, nv, &sh[nv]);
        if (!r)
            return -1;
        v[nv++] = r;
    }
    return tu_program_results(&g, v, nv, nin, out, max);
}

