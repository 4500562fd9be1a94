/* lower.h - a fused group (ir/fusion.h) at concrete sizes -> a cg_kernel
 * and how to launch it (lower.c).
 *
 * Values are numbered by slot (ir_slot: graph inputs first, 0 .. ninputs-1,
 * then node k at ninputs + k), like the graph executor's. The caller (the
 * plan) gives each value's concrete type and, for values that live in memory
 * (inputs, outputs of earlier steps, views of those), where: a base slot, an
 * element offset from the base tensor's element 0, and strides in elements.
 */
#ifndef TJ_CG_LOWER_H
#define TJ_CG_LOWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/fusion.h"
#include "kernel.h"

typedef struct cg_geom {
    int base;                          /* slot of the tensor it lives in; -1: not in memory */
    int64_t offset;                    /* elements from the base's element 0 */
    int64_t strides[TJ_MAX_DIMS];      /* elements */
} cg_geom;

typedef struct cg_lower_in {
    const ir_graph *g;
    const ir_fusion *f;
    const ir_type *types;              /* per slot: the concrete type */
    const cg_geom *geom;               /* per slot */
} cg_lower_in;

/* Buffer k of a launch: bufs[k] = data of slot `base` + offset elements. */
typedef struct cg_arg {
    int base;
    int64_t offset;
} cg_arg;

typedef struct cg_launch {
    cg_kernel k;
    int nargs;
    cg_arg args[CG_MAX_BUFS];
    int nstore;                        /* nodes the kernel writes: their slots */
    int store_slot[CG_MAX_BUFS];
    int64_t sz[3 + CG_MAX_OUTER + CG_MAX_BUFS * (CG_MAX_OUTER + 1)];
    int64_t ntiles, grain;             /* for rt_parallel_for */
} cg_launch;

/* Lowers kernel group gi of in->f. The geometry of every stored node of the
 * group must be given (contiguous buffers the caller allocates). 0, or -1
 * with the reason in err (the caller then runs the group's nodes eagerly). */
int cg_lower(const cg_lower_in *in, int gi, cg_launch *out, char *err, size_t nerr);

/* Streaming stores (kernel.h, a stage's `nt`): a launch gets them when the
 * contiguous values its stages store take at least this many bytes; -1:
 * never. TJIT_NT_STORES=0 turns them off, 1 (CG_NT_DEFAULT) streams the
 * stages without a formula call per element, 2 every stage that may (for
 * measuring); TJIT_NT_MIN_BYTES sets the threshold (default a quarter of the
 * last-level cache). Read once per process. */
#define CG_NT_DEFAULT 1
int64_t cg_nt_min_bytes(void);
int cg_nt_mode(void);   /* TJIT_NT_STORES as read: 0, 1 or 2 */

/* In place: whether the kernel may store output buffer bo over input buffer
 * bi (the caller makes them one memory): same dtype, the same element of
 * each at every index, and no element of bi read after bo's element is
 * stored (emit.c's order within and across stages). */
bool cg_launch_can_alias(const cg_launch *l, int bi, int bo);
/* Makes it so: loads of bi read bo, and bi is dropped (the buffers after it
 * move down one). The kernel's text (and key) changes. */
void cg_launch_alias(cg_launch *l, int bi, int bo);

#endif
