/* tjit_profile.h - the profiler of tjit, a part of tjit.h (which includes
 * it; including it alone includes tjit.h): time per eager op, fused kernel,
 * blocked region and compiled plan, with bytes and operations, as a table,
 * rows, or a chrome trace. docs/perf.md shows what it finds. */
#ifndef TJIT_PROFILE_H
#include "tjit.h"   /* includes this header at its end, before its call-site macros */
#endif
#ifndef TJIT_PROFILE_H
#define TJIT_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
TJ_API_BEGIN

/* ---- profiler (docs/perf.md) ----------------------------------------------
 * Between tj_profile_begin and tj_profile_end, every eager op, and every
 * kernel launch, eager call, blocked region and plan run of compiled graphs,
 * is timed on the thread that runs it, with the bytes it moves and the
 * operations it does where its op's cost rule knows them (ir/cost.c).
 * TJIT_PROFILE=1 profiles the whole process and prints the table at exit;
 * TJIT_PROFILE_TRACE=path also writes the trace there. Off, the hooks cost one
 * predictable branch; on, well under a microsecond per event.
 *
 *   tj_profile_begin();
 *   ... run the model ...
 *   tj_profile_end();
 *   char *t = tj_profile_table(20); fputs(t, stdout); free(t);
 *   tj_profile_write_trace("trace.json");    // open in ui.perfetto.dev
 */
/* Starts a session; nested calls count, and the session runs until the
 * outermost tj_profile_end. Always 0. */
int tj_profile_begin(void);
/* Ends one level (recording stops at the outermost) and keeps a copy of the
 * session's events so far for the functions below. 0, or -1 with an error
 * when no session is running. */
int tj_profile_end(void);
bool tj_profile_running(void);

/* One line of the summary: the events of one name and kind. */
typedef struct tj_profile_row {
    char name[96];          /* the op ("add"), a fused kernel's ops ("mul+add+gelu"),
                             * a region ("region(matmul; add+gelu)"), a graph ("@mlp") */
    char kind[8];           /* op (eager), kernel, eager (an eager call in a compiled
                             * plan), region, graph (one run of a compiled plan) */
    int64_t calls;
    double total_ms;        /* wall time on the calling thread */
    double self_ms;         /* total minus the rows' events nested in it */
    double avg_us;          /* total / calls */
    int64_t bytes;          /* moved: read + written, summed over calls */
    int64_t flops;          /* summed over calls; -1 when the op's cost is not known */
    double gbps, gflops;    /* bytes and flops per ns of total time (0: not known) */
    double self_percent;    /* of the self time of every row */
} tj_profile_row;

/* The rows of the last session ended, sorted by total time: writes up to max
 * and returns how many there are; -1 with an error when no session has ended. */
int tj_profile_rows(tj_profile_row *rows, int max);
/* The same as a table of text (the first max_rows rows; 0: all). malloc'd;
 * NULL with an error when no session has ended. */
char *tj_profile_table(int max_rows);
/* The last session as a chrome trace (JSON Trace Event Format): one lane per
 * thread, with each pool thread's parallel-for chunks in its lane. 0, or -1
 * with an error. */
int tj_profile_write_trace(const char *path);

TJ_API_END
#ifdef __cplusplus
}
#endif
#endif /* TJIT_PROFILE_H */
