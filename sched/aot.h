/* aot.h - an exported model's data (docs/export.md): the blob aot_save.c
 * writes (in libtjit, at tj_export) and aot_load.c reads (in libtjit_rt, at
 * tj_aot_load). Data only: the kernels are code in the same shared object,
 * found by their symbol names.
 *
 *   header   magic "TJITAOT1", u32 version, u32 layout (sizes of the structs
 *            written raw), u64 payload length, u64 checksum of the payload
 *   payload  str name, str CPU features (LLVM's "+avx2,+avx512f,..." of the
 *            exporting host), u32 nkernels, str symbol per kernel,
 *            u32 nentries, u32 pad + pad zeros (the entries start at a
 *            multiple of 64 bytes from the blob's start), per entry:
 *              u32 nargs, nweights, nresults, embedded (weights in the blob)
 *              str graph (ir_print of the plans' graph: symbolic dims kept)
 *              per weight: ir_type, u64 bytes; if embedded u32 pad + pad
 *              zeros, then the bytes (contiguous), at a multiple of 64: the
 *              loader uses them in place (the blob is in .data, 64-aligned)
 *              u32 nplans, per plan its arrays (aot_save.c: plan_write)
 *
 * Structs are written as their bytes: a blob is read by the libtjit_rt of the
 * same tjit version on the same architecture (the layout word and the
 * version say when not). A str is u32 length + bytes + NUL.
 */
#ifndef TJ_SC_AOT_H
#define TJ_SC_AOT_H

#include <stddef.h>
#include <stdint.h>

#include "sched_int.h"

#define SC_AOT_MAGIC "TJITAOT1"
#define SC_AOT_VERSION 2u
#define SC_AOT_HEADER 32    /* bytes before the payload */
/* The symbols of an exported object around the blob. */
#define SC_AOT_BLOB_SYM "tjit_aot_blob"
#define SC_AOT_BLOB_END_SYM "tjit_aot_blob_end"

/* Changes whenever a struct written raw changes size. */
#define SC_AOT_LAYOUT                                                                              \
    ((uint32_t)(sizeof(step) * 7u + sizeof(cg_launch) * 3u + sizeof(sc_buf) * 11u +                \
                sizeof(sc_region) * 13u + sizeof(ir_type) * 17u + sizeof(sc_plan_mem) * 19u +       \
                TJ_MAX_DIMS))

/* The payload's checksum: FNV-1a in four lanes of 8-byte words, 64 bits
 * (against damage, not tampering). */
uint64_t sc_aot_fnv(const void *p, size_t n);

/* ---- aot_save.c (libtjit) ---------------------------------------------------------- */
/* A growing byte buffer; on out of memory `failed` is set and writes stop. */
typedef struct sc_wbuf {
    char *p;
    size_t n, cap;
    int failed;
} sc_wbuf;
void sc_w_bytes(sc_wbuf *w, const void *p, size_t n);
void sc_w_u32(sc_wbuf *w, uint32_t v);
void sc_w_str(sc_wbuf *w, const char *s);

/* The kernels an export collects: symbol names and object code. */
typedef struct sc_aot_kernels {
    int n, cap;
    char (*name)[72];
    void **obj;
    size_t *len;
} sc_aot_kernels;
void sc_aot_kernels_free(sc_aot_kernels *k);

/* One entry's graph text, then (after the caller's weights) its plans, the
 * signatures compiled so far, adding their kernels' objects to ks. 0, or -1
 * with the reason in err (no plan; a kernel whose object cannot be had). */
int sc_aot_write_graph(sc_plan_set *ps, sc_wbuf *w, char *err, size_t nerr);
int sc_aot_write_plans(sc_plan_set *ps, sc_wbuf *w, sc_aot_kernels *ks, char *err, size_t nerr);

/* The finished blob: header + payload (malloc'd, its length in *len); NULL
 * when out of memory. */
char *sc_aot_seal(const sc_wbuf *payload, size_t *len);

#endif
