/* mincut.h - a minimum s-t cut of a directed graph with int64 capacities
 * (Dinic's maximum flow, mincut.c), for the joint graph's partition
 * (partition.c): which values to save so that the fewest bytes move.
 *
 *   ps_flow *f = ps_flow_new(nvertices);
 *   ps_flow_edge(f, u, v, cap);          ... PS_FLOW_INF: never cut
 *   ps_flow_max(f, s, t);                the cut's capacity
 *   ps_flow_source_side(f, s, side);     side[v]: s reaches v in the residual graph
 *
 * The source side is the smallest of the minimum cuts' source sides: of
 * several cuts of equal capacity, the one nearest the source. */
#ifndef TJ_PASSES_MINCUT_H
#define TJ_PASSES_MINCUT_H

#include <stdbool.h>
#include <stdint.h>

#define PS_FLOW_INF (INT64_MAX / 4)

typedef struct ps_flow ps_flow;

ps_flow *ps_flow_new(int nvertices);   /* NULL when out of memory */
void ps_flow_free(ps_flow *f);
/* Adds the edge u -> v (cap >= 0; at least PS_FLOW_INF counts as infinite);
 * 0, or -1 when out of memory (the flow is then unusable). */
int ps_flow_edge(ps_flow *f, int u, int v, int64_t cap);
/* The maximum flow from s to t (PS_FLOW_INF or more: no finite cut); -1
 * when out of memory. */
int64_t ps_flow_max(ps_flow *f, int s, int t);
/* After ps_flow_max: side[v] = whether s reaches v through edges with
 * capacity left (the source side of the minimum cut nearest s). */
void ps_flow_source_side(ps_flow *f, int s, bool *side);

#endif
