/* profile.h - the profiler's recording side (profile.c), for the layers that
 * time work: runtime/eager.c (eager ops), runtime/pool.c (parallel-for
 * chunks), sched/ (kernel launches, eager calls, regions and plan runs of
 * compiled graphs). The public side is tj_profile_* (include/tjit.h); the
 * report (table and chrome trace) is profile_report.c.
 *
 * Off, a hook costs one relaxed load of rt_prof_flag and a predictable
 * branch. On, each thread appends events to its own buffer (no lock per
 * event); a session's end copies every thread's events into a snapshot.
 */
#ifndef TJ_RT_PROFILE_H
#define TJ_RT_PROFILE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rt.h"

/* What an event is. The table aggregates the first five; chunks and blocks
 * are parts of them, shown in the trace only. */
typedef enum {
    RT_PROF_OP,       /* an eager op (the eager API, the graph executor) */
    RT_PROF_KERNEL,   /* a compiled kernel's launch */
    RT_PROF_EAGER,    /* an eager call inside a compiled plan */
    RT_PROF_REGION,   /* a blocked region: a GEMM and its epilogue, block by block */
    RT_PROF_GRAPH,    /* one run of a compiled plan */
    RT_PROF_CHUNK,    /* a parallel-for chunk, on the thread that ran it */
    RT_PROF_BLOCK,    /* one step of one block of a region */
    RT_PROF_NCATS
} rt_prof_cat;

extern atomic_bool rt_prof_flag;

static inline bool rt_prof_on(void)
{
    return __builtin_expect(atomic_load_explicit(&rt_prof_flag, memory_order_relaxed), 0);
}

/* CLOCK_MONOTONIC in ns. */
int64_t rt_prof_now(void);

/* A name for events: ids below IR_NUM_OPS are op names; others are interned
 * strings (kept for the life of the process; interning takes a lock, so
 * callers intern once, when they build what they will run). */
typedef uint32_t rt_prof_id;
#define RT_PROF_NONE ((rt_prof_id)-1)   /* no label: a parallel_for of the user's */
static inline rt_prof_id rt_prof_op(ir_op op) { return (rt_prof_id)op; }
rt_prof_id rt_prof_name(const char *s);

/* Appends an event [t0, t1) to this thread's buffer. bytes: moved (read +
 * written); flops: -1 when not known. */
void rt_prof_emit(rt_prof_id name, rt_prof_cat cat, int64_t t0, int64_t t1, int64_t bytes,
                  int64_t flops);

/* What this thread runs now, for the chunks it hands to the pool: sets it
 * and returns the previous one (to restore). */
rt_prof_id rt_prof_label_set(rt_prof_id name);
rt_prof_id rt_prof_label(void);

/* An eager op finished (rt_eager): its event, with its bytes (each input's
 * distinct elements read, the result written; none for a view) and flops. */
void rt_prof_eager_done(ir_op op, tj_tensor *const *in, int nin, const tj_tensor *out,
                        int64_t t0);

/* ---- the snapshot a session's end makes (profile.c -> profile_report.c) ------ */
typedef struct rt_prof_ev {
    int64_t t0, t1, bytes, flops;
    rt_prof_id name;
    uint16_t lane;
    uint8_t cat;
} rt_prof_ev;

typedef struct rt_prof_snap {
    rt_prof_ev *ev;        /* sorted by lane, then t0 */
    int64_t nev, dropped;
    char **names;          /* interned names, by id - IR_NUM_OPS */
    uint32_t nnames;
    int nlanes;
    char (*lane_names)[32];
    int64_t t_begin, t_end;
} rt_prof_snap;

const char *rt_prof_snap_name(const rt_prof_snap *s, rt_prof_id id);
extern const char *const rt_prof_cat_names[RT_PROF_NCATS];

/* The last session's snapshot, under the profiler's lock (unlock after use);
 * NULL (lock not held) with an error naming `who` when no session has ended. */
const rt_prof_snap *rt_prof_snap_get(const char *who);
void rt_prof_snap_put(void);

#endif /* TJ_RT_PROFILE_H */
