/* compile.h - internal to the frontend and the tool: what a tj_compiled
 * handle holds (compile.c), for `tjit bench`. tj_explain() prints the same
 * facts as text; this gives them as numbers. */
#ifndef TJ_FE_COMPILE_H
#define TJ_FE_COMPILE_H

#include <tjit.h>

#include "../sched/sched.h"

typedef struct fe_compiled_info {
    int graphs;             /* input signatures captured as graphs */
    int breaks;             /* signatures that run eagerly (graph breaks) */
    unsigned long calls, eager_calls;
    /* The plan of the most recently captured graph: kernels and eager calls
     * per call (plan.compiled false: none built, or it runs on the graph
     * executor because plan.why). */
    sc_plan_info plan;
} fe_compiled_info;

/* Fills out; -1 when c is NULL (out zeroed). Thread-safe. */
int fe_compiled_info_get(const tj_compiled *c, fe_compiled_info *out);

#endif
