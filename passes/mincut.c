/* mincut.c - Dinic's maximum flow and the minimum cut it leaves (mincut.h).
 *
 * Edges are stored in pairs, e and e ^ 1 (the reverse, capacity 0 to start),
 * as singly linked lists per vertex; cap[] is the capacity left. Each phase
 * levels the vertices by a breadth-first search from s over edges with
 * capacity left, then pushes paths along rising levels (an explicit path
 * stack, no recursion: joint graphs run to thousands of nodes) until none is
 * left; a vertex found a dead end leaves the level graph. */
#include <stdlib.h>
#include <string.h>

#include "mincut.h"

struct ps_flow {
    int nv, ne, room;
    int *head, *next, *to;
    int64_t *cap;
    int *level, *it, *queue, *path;
};

ps_flow *ps_flow_new(int nvertices)
{
    ps_flow *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    size_t n = (size_t)nvertices + 1;
    f->nv = nvertices;
    f->head = malloc(n * sizeof *f->head);
    f->level = malloc(n * sizeof *f->level);
    f->it = malloc(n * sizeof *f->it);
    f->queue = malloc(n * sizeof *f->queue);
    f->path = malloc(n * sizeof *f->path);
    if (!f->head || !f->level || !f->it || !f->queue || !f->path) {
        ps_flow_free(f);
        return NULL;
    }
    for (int v = 0; v < nvertices; v++)
        f->head[v] = -1;
    return f;
}

void ps_flow_free(ps_flow *f)
{
    if (!f)
        return;
    free(f->head);
    free(f->next);
    free(f->to);
    free(f->cap);
    free(f->level);
    free(f->it);
    free(f->queue);
    free(f->path);
    free(f);
}

static int grow(ps_flow *f)
{
    int room = f->room ? 2 * f->room : 64;
    int *next = realloc(f->next, (size_t)room * sizeof *next);
    if (next)
        f->next = next;
    int *to = realloc(f->to, (size_t)room * sizeof *to);
    if (to)
        f->to = to;
    int64_t *cap = realloc(f->cap, (size_t)room * sizeof *cap);
    if (cap)
        f->cap = cap;
    if (!next || !to || !cap)
        return -1;
    f->room = room;
    return 0;
}

static void link(ps_flow *f, int u, int v, int64_t cap)
{
    int e = f->ne++;
    f->to[e] = v;
    f->cap[e] = cap;
    f->next[e] = f->head[u];
    f->head[u] = e;
}

int ps_flow_edge(ps_flow *f, int u, int v, int64_t cap)
{
    if (f->ne + 2 > f->room && grow(f) != 0)
        return -1;
    link(f, u, v, cap < PS_FLOW_INF ? cap : PS_FLOW_INF);
    link(f, v, u, 0);
    return 0;
}

/* Levels from s over edges with capacity left; whether t has one. */
static bool level(ps_flow *f, int s, int t)
{
    for (int v = 0; v < f->nv; v++)
        f->level[v] = -1;
    int qh = 0, qt = 0;
    f->level[s] = 0;
    f->queue[qt++] = s;
    while (qh < qt) {
        int u = f->queue[qh++];
        for (int e = f->head[u]; e >= 0; e = f->next[e])
            if (f->cap[e] > 0 && f->level[f->to[e]] < 0) {
                f->level[f->to[e]] = f->level[u] + 1;
                f->queue[qt++] = f->to[e];
            }
    }
    return f->level[t] >= 0;
}

/* Pushes one path of the level graph from s to t; what it carried (0: none
 * is left in this phase). */
static int64_t push(ps_flow *f, int s, int t)
{
    int depth = 0, u = s;
    for (;;) {
        if (u == t) {
            int64_t b = PS_FLOW_INF;
            for (int k = 0; k < depth; k++)
                b = f->cap[f->path[k]] < b ? f->cap[f->path[k]] : b;
            for (int k = 0; k < depth; k++) {
                f->cap[f->path[k]] -= b;
                f->cap[f->path[k] ^ 1] += b;
            }
            return b;
        }
        int e = f->it[u];
        while (e >= 0 && !(f->cap[e] > 0 && f->level[f->to[e]] == f->level[u] + 1))
            e = f->next[e];
        f->it[u] = e;
        if (e >= 0) {
            f->path[depth++] = e;
            u = f->to[e];
            continue;
        }
        f->level[u] = -1;   /* a dead end: out of this phase */
        if (depth == 0)
            return 0;
        e = f->path[--depth];
        u = f->to[e ^ 1];
        f->it[u] = f->next[e];
    }
}

int64_t ps_flow_max(ps_flow *f, int s, int t)
{
    int64_t total = 0;
    while (level(f, s, t)) {
        memcpy(f->it, f->head, (size_t)f->nv * sizeof *f->it);
        for (int64_t b; (b = push(f, s, t)) > 0;) {
            total += b;
            if (total >= PS_FLOW_INF)
                return PS_FLOW_INF;
        }
    }
    return total;
}

void ps_flow_source_side(ps_flow *f, int s, bool *side)
{
    level(f, s, s);
    for (int v = 0; v < f->nv; v++)
        side[v] = f->level[v] >= 0;
}
