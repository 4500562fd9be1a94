/* kernel.h - the loop-level kernel description between fusion and LLVM.
 *
 * A cg_kernel is what one fused group becomes (codegen/lower.c builds it,
 * codegen/emit.c turns it into LLVM IR). It says nothing about sizes: sizes
 * and strides arrive at run time in the `sz` array, so one kernel serves
 * every shape with the same structure (and its text, the cache key, stays
 * the same).
 *
 * Iteration space: `nouter` outer dims (any strides) and one inner dim, the
 * loop that vectorizes. Two kinds:
 *
 *   CG_TILES  pointwise: the space is cut into tiles of up to B consecutive
 *             inner elements; a tile is (row, block). Stages: one store stage.
 *   CG_ROWS   reductions: a tile is a whole row (all of the inner dim); the
 *             stages run one after the other over the row, each a reduction
 *             (sum, prod, max, min) whose result later stages may read, and/or
 *             stores of values; row stores write values that depend on the
 *             row only (a reduction result, or math on it). A later stage may
 *             load back what an earlier one stored in an output row (a value
 *             cached there instead of computed twice).
 *
 * Buffers (kernel arguments, bufs[k] in the ABI): each has a dtype, is read
 * (loads) or written (stores), and an inner stride class fixed at compile
 * time: 1 (contiguous: vector loads), 0 (broadcast along the inner dim) or
 * CG_STRIDED (a runtime stride: gathers). A row buffer of a ROWS kernel has
 * class 0. An output buffer may also be loaded: a kernel that writes its
 * result in place over an input it reads at the same index (the plan's
 * memory planner, codegen/lower.h cg_launch_alias) loads the input from the
 * output buffer, each element before it is overwritten.
 *
 * Values: SSA instructions over scalars of a dtype, evaluated per element of
 * the inner loop of the stage that uses them (LLVM hoists what is invariant):
 * loads, constants, conversions, formula calls (an ops.def UNARY/BINARY row
 * in a compute dtype; codegen/formulas/pw.c), where, the result of an
 * earlier reduction stage, and the row length. Building is hash-consed:
 * adding an instruction (or a reduction of the same value) that exists
 * returns the existing one.
 *
 * The function emitted for a kernel (the ABI, see emit.c):
 *
 *   void tjk_<hex>(char **bufs, int64_t begin, int64_t end, const int64_t *sz)
 *
 * runs tiles [begin, end). sz holds, in int64 elements:
 *   sz[0] N      inner extent         sz[1] B  tile width (ROWS: N)
 *   sz[2] NB     tiles per row        sz[3 .. 3+nouter)  outer extents
 *   then per buffer k: nouter outer strides and one inner stride (elements)
 * A tile t is row t / NB (row-major over the outer dims), block t % NB.
 * CG_SZ_LEN(k) gives the length of sz.
 *
 * Column kernels (ROWS with lanes > 0): a reduction over a dim that is not
 * the innermost in memory (sum over dim 0 of [R, C]) is a ROWS kernel whose
 * rows (the C results) are adjacent in memory and whose row elements are
 * C apart. Walking each row would stride through memory; a column kernel
 * instead takes `lanes` consecutive rows at once (along the last outer dim)
 * and vectorizes across them: accumulators acc[l] (one per row of the
 * block, in a stack array) are updated for j = 0..N-1 by a loop over the
 * block, whose loads are contiguous when the last outer dim has stride 1.
 * A tile is then (row of the other outer dims, block of `lanes` rows):
 * sz[1] = lanes, sz[2] = blocks per last outer dim; each buffer's `lane`
 * class (0, 1, CG_STRIDED) is that of its last outer stride.
 *
 * Streaming stores (a stage's `nt`; lower.c sets it, codegen/lower.h
 * cg_nt_min_bytes says when): in a stage without reduction (of a kernel that
 * is not a column kernel), the stores to the first contiguous buffer it
 * stores get aligned loop versioning (emit.c): a scalar peel until that
 * buffer's pointer is aligned to the vector size, then the loop LLVM
 * vectorizes, whose vector stores to it become non-temporal (vmovntps: no
 * read of the line before it is written); the body ends with an sfence.
 * Same values, same bits; the text says `stage 1 nt:`, so the key differs.
 */
#ifndef TJ_CG_KERNEL_H
#define TJ_CG_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ir/fusion.h"
#include "../ir/ir.h"

/* A kernel's capacities: the contract with fusion (ir/fusion.h), which keeps
 * its groups below them. */
#define CG_MAX_BUFS IR_KERNEL_MAX_BUFS
#define CG_MAX_INSTS IR_KERNEL_MAX_INSTS
#define CG_MAX_STAGES IR_KERNEL_MAX_STAGES
#define CG_MAX_STORES 16
#define CG_MAX_OUTER TJ_MAX_DIMS
#define CG_STRIDED 2   /* inner stride class: known only at run time */
#define CG_MAX_LANES 256   /* rows per block of a column kernel */
#define CG_COLS_LANES 64   /* what lower.c picks: 4 zmm of f32 accumulators per j */

typedef enum { CG_TILES, CG_ROWS } cg_kind;

typedef enum {
    CG_LOAD,    /* buf: element of buffer `buf` at the current index */
    CG_CONST,   /* c: a constant of dtype dt */
    CG_CVT,     /* a[0] converted to dt (C conversion; to bool: != 0) */
    CG_CALL,    /* op's formula in compute dtype cdt on a[0] (a[1]), stored as dt */
    CG_WHERE,   /* a[0] (bool) ? a[1] : a[2] */
    CG_RED,     /* the result of reduction stage `stage` (for this row) */
    CG_ROWLEN   /* the inner extent N (i64): a row's length in ROWS kernels */
} cg_iop;

typedef struct cg_inst {
    cg_iop k;
    tj_dtype dt;       /* dtype of the value */
    ir_op op;          /* CALL */
    tj_dtype cdt;      /* CALL: the compute dtype (which formula column) */
    int a[3];          /* operands: earlier instruction ids */
    int buf;           /* LOAD */
    int stage;         /* RED */
    double c;          /* CONST */
} cg_inst;

typedef enum { CG_SUM, CG_PROD, CG_MAX, CG_MIN, CG_XOR } cg_red;   /* xor: integers only */

typedef struct cg_stage {
    bool reduce;
    cg_red red;                    /* reduce: how */
    int val;                       /* reduce: the instruction reduced over the row */
    int nst;                       /* values stored per element (any stage) */
    int st_val[CG_MAX_STORES], st_buf[CG_MAX_STORES];
    bool nt;                       /* streaming stores (below) */
} cg_stage;

typedef struct cg_buf {
    tj_dtype dt;
    bool out;       /* written by the kernel */
    int inner;      /* inner stride class: 0, 1 or CG_STRIDED */
    int lane;       /* column kernels: stride class of the last outer dim */
} cg_buf;

typedef struct cg_kernel {
    cg_kind kind;
    int nouter;
    int lanes;                     /* ROWS: > 0 makes a column kernel (above) */
    int nbufs;
    cg_buf bufs[CG_MAX_BUFS];
    int ninst;
    cg_inst inst[CG_MAX_INSTS];
    int nstages;
    cg_stage stages[CG_MAX_STAGES];
    int nrow;                      /* ROWS: values stored once per row */
    int row_val[CG_MAX_STORES], row_buf[CG_MAX_STORES];
} cg_kernel;

/* Length of the sz array of k. */
#define CG_SZ_LEN(k) (3 + (k)->nouter + (k)->nbufs * ((k)->nouter + 1))
/* Index in sz of buffer b's stride of outer dim d (d == nouter: the inner one). */
#define CG_SZ_STRIDE(k, b, d) (3 + (k)->nouter + (b) * ((k)->nouter + 1) + (d))

/* ---- building ---------------------------------------------------------------- */
void cg_kernel_init(cg_kernel *k, cg_kind kind, int nouter);
/* Each returns the new buffer, instruction or stage index, or -1 when a
 * limit (CG_MAX_*) is reached. */
int cg_add_buf(cg_kernel *k, tj_dtype dt, bool out, int inner);
int cg_add_inst(cg_kernel *k, const cg_inst *in);
int cg_add_load(cg_kernel *k, int buf);
int cg_add_const(cg_kernel *k, tj_dtype dt, double c);
int cg_add_cvt(cg_kernel *k, int a, tj_dtype dt);   /* a itself when already dt */
int cg_add_reduce(cg_kernel *k, cg_red red, int val);
int cg_inst_nops(const cg_inst *in);   /* operands of an instruction: a[0..n) */
/* Whether instruction i depends on a load of buffer `buf`. */
bool cg_inst_loads(const cg_kernel *k, int i, int buf);
/* Adds a store of val to buf: to the store stage opened last (a new one when
 * the last stage is a reduction). 0 or -1. */
int cg_add_store(cg_kernel *k, int val, int buf);
/* Adds a store of val to buf in stage s (a reduction stage too). 0 or -1. */
int cg_stage_store(cg_kernel *k, int s, int val, int buf);
int cg_add_row_store(cg_kernel *k, int val, int buf);

/* Drops instructions nothing stored or reduced depends on (rewrites leave
 * some) and renumbers the rest, keeping their order. */
void cg_kernel_compact(cg_kernel *k);

/* Checks the invariants emit.c relies on (operands defined earlier, dtypes of
 * where/red/loads consistent, stores to output buffers, reductions only in
 * ROWS kernels). 0, or -1 with the reason in err. */
int cg_kernel_check(const cg_kernel *k, char *err, size_t nerr);

/* ---- text form --------------------------------------------------------------- */
/* The kernel's text: the dump `kernels` and the kernel cache key (everything
 * that changes the generated code is in it). name: printed in the header.
 * malloc'd, NULL when out of memory.
 *
 *   kernel @name rows outer=1 {
 *     buf0: f32 in inner=1
 *     buf1: f32 out inner=0
 *     %0 = load buf0 : f32
 *     %1 = red 0 : f32
 *     %2 = call sub.f32 %0, %1 : f32
 *     stage 0: reduce max %0
 *     stage 1: store buf2 <- %3
 *     row: store buf1 <- %1
 *   }
 */
char *cg_kernel_text(const cg_kernel *k, const char *name);

/* Flags asking the emitter (emit.c, through jit.c) for the optimized LLVM IR
 * and the assembly of a kernel, for the `llvm` and `asm` dumps. */
#define CG_EMIT_LLVM 1u
#define CG_EMIT_ASM 2u

/* Name of a reduction ("sum", ...). */
const char *cg_red_name(cg_red r);

#endif
