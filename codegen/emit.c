/* emit.c - one cg_kernel -> LLVM IR through the C API -> an object file.
 *
 *   cg_kernel --build IR--> module M: @fname (the ABI wrapper) + @fname.body
 *                           (noalias), calling formulas it declares
 *   formula bitcode (pw.c, embedded) --lazy load--> module S (same context):
 *       drop the tj_pw_* functions M does not call, link S into M (only
 *       what is left is deserialized)
 *   verify -> formulas internal + alwaysinline -> default<O2> (host TM)
 *   -> object file (and, on request, optimized IR text and assembly)
 *
 * The body, for tiles [begin, end) (kernel.h has the sz layout):
 *
 *   for t in [begin, end):
 *     row = t / NB; j0 = (t % NB) * B; j1 = min(j0 + B, N)     (ROWS: 0, N)
 *     row -> outer index (i_0 .. i_{n-1}); p_k = bufs[k] + sum_d i_d * stride[k][d]
 *     each stage, in order:
 *       reduce: acc = init; for j in [j0, j1): acc = acc (+|*|max|min) v(j)
 *       store:  for j in [j0, j1): p_k[j * inner_k] = v(j)  for each stored value
 *               (a stage marked nt: a scalar peel to the output's alignment,
 *               then the aligned loop whose vector stores stream; emit_nt_stage)
 *     row stores: p_k[0] = v
 *
 * Column kernels (kernel.h; ROWS with lanes > 0), for tiles [begin, end):
 *
 *   row = t / NB; l0 = (t % NB) * lanes; nl = min(lanes, last - l0)
 *   pointers at (row, l0); acc_s = [lanes] stack array per reduction stage
 *     each stage: acc[l] = init for l < nl (reductions), then
 *       for j in [0, N): for l in [0, nl):       (this loop vectorizes)
 *         acc[l] = acc[l] op v(l, j); p_k[l * lane_k + j * inner_k] = v(l, j)
 *     row stores: for l < nl: p_k[l * lane_k] = v(l)
 *
 * v(j) is the value DAG emitted inside the loop (memoized per loop); LICM
 * hoists what does not depend on j (constants, reduction results, loads of
 * broadcast buffers). Reductions carry the `reassoc` flag so they vectorize;
 * max/min use llvm.maximum/minimum (NaN wins, like torch.amax). Pointwise
 * math never gets fast-math flags: the formulas must round exactly as the
 * eager kernels do (no contraction into FMA either: ir/vmath.h calls fmaf
 * where it means one).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Core.h>
#include <llvm-c/Support.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "../ir/half.h"
#include "emit.h"

/* ---- LLVM setup ------------------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;

/* Loop strength reduction off (-disable-lsr, an LLVM option: the C API sets
 * codegen's options only this way, for the whole process, once). It was a
 * quarter of instruction selection and code generation's instructions for
 * P7's and P8's kernels (callgrind), and the kernels' instruction counts
 * were the same without it: their loops index every buffer from one counter,
 * which x86 addressing takes as it is (docs/perf.md, "Cold compile: the
 * formula bitcode in parts, LSR off"). TJIT_LLVM_LSR=1 keeps it (read once). */
static void init_llvm(void)
{
    init_rc = LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter() ||
              LLVMInitializeNativeAsmParser();
    const char *lsr = getenv("TJIT_LLVM_LSR");
    if (!init_rc && !(lsr && !strcmp(lsr, "1"))) {
        const char *argv[] = {"tjit", "-disable-lsr"};
        LLVMParseCommandLineOptions(2, argv, NULL);
    }
}

int cg_llvm_init(char *err, size_t nerr)
{
    pthread_once(&init_once, init_llvm);
    if (init_rc) {
        snprintf(err, nerr, "LLVM has no native target");
        return -1;
    }
    return 0;
}

/* The host target machine, or NULL with err set. Each LLVM string below is
 * a strdup and NULL when that allocation fails: an error, never passed on. */
LLVMTargetMachineRef cg_tm_create(char *err, size_t nerr)
{
    if (cg_llvm_init(err, nerr))
        return NULL;
    char *triple = LLVMGetDefaultTargetTriple(), *msg = NULL;
    char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
    LLVMTargetRef target;
    LLVMTargetMachineRef tm = NULL;
    if (!triple || !cpu || !features) {
        snprintf(err, nerr, "out of memory reading the host's %s",
                 !triple ? "target triple" : !cpu ? "CPU name" : "CPU features");
    } else if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
        snprintf(err, nerr, "no target for %s: %s", triple, msg ? msg : "?");
    } else {
        tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelAggressive,
                                     LLVMRelocPIC, LLVMCodeModelSmall);
        if (!tm)
            snprintf(err, nerr, "cannot create a target machine for %s", cpu);
    }
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    return tm;
}

/* One host target machine per thread (a TargetMachine is not thread-safe),
 * disposed when its thread exits. */
static pthread_key_t tm_key;
static pthread_once_t tm_once = PTHREAD_ONCE_INIT;

static void tm_dispose(void *tm) { LLVMDisposeTargetMachine(tm); }
static void tm_key_init(void) { pthread_key_create(&tm_key, tm_dispose); }

static LLVMTargetMachineRef host_tm(char *err, size_t nerr)
{
    pthread_once(&tm_once, tm_key_init);
    LLVMTargetMachineRef tm = pthread_getspecific(tm_key);
    if (!tm && (tm = cg_tm_create(err, nerr)) && pthread_setspecific(tm_key, tm) != 0) {
        LLVMDisposeTargetMachine(tm);
        snprintf(err, nerr, "out of memory keeping the target machine");
        tm = NULL;
    }
    return tm;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- the emitter's state ------------------------------------------------------------- */

typedef struct loopctx {
    LLVMValueRef j;            /* the inner index (i64) */
    LLVMValueRef *memo;        /* per instruction, NULL until emitted */
    LLVMValueRef l;            /* column kernels: the row in the block (i64); else NULL */
} loopctx;

typedef struct em {
    const cg_kernel *k;
    LLVMContextRef C;
    LLVMModuleRef M;
    LLVMModuleRef S[CG_PW_MAX_PARTS];   /* the formula parts it calls, lazily loaded */
    LLVMBuilderRef B;
    LLVMValueRef fn;           /* the body */
    LLVMTypeRef i8, i64, f32, f64, ptr;
    LLVMValueRef sz;           /* the sz argument */
    LLVMValueRef p[CG_MAX_BUFS];       /* row base pointer of each buffer */
    LLVMValueRef istride[CG_MAX_BUFS]; /* inner stride (strided buffers) */
    LLVMValueRef lstride[CG_MAX_BUFS]; /* column kernels: last outer stride (strided lanes) */
    LLVMValueRef red[CG_MAX_STAGES];   /* reduction results of this row */
    LLVMValueRef acc[CG_MAX_STAGES];   /* column kernels: per stage, [lanes] accumulators */
    LLVMValueRef nl;                   /* column kernels: rows in this block */
    LLVMValueRef N;                    /* the inner extent */
    LLVMValueRef nt_tag;               /* !alias.scope marking streaming stores (emit_nt_stage) */
    unsigned valign;                   /* bytes of the widest vector: 64 with AVX-512, else 32 */
    bool nt_used;                      /* a stage streams: the body ends with an sfence */
    char *err;
    size_t nerr;
    bool failed;
} em;

static void fail(em *e, const char *what, const char *detail)
{
    if (!e->failed)
        snprintf(e->err, e->nerr, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
    e->failed = true;
}

static LLVMTypeRef ty_of(em *e, tj_dtype dt)
{
    switch (dt) {
    case TJ_F32: return e->f32;
    case TJ_F64: return e->f64;
    case TJ_I16:
    case TJ_F16:    /* f16 and bf16 values are their bits (convert() widens them) */
    case TJ_BF16: return LLVMInt16TypeInContext(e->C);
    case TJ_I32: return LLVMInt32TypeInContext(e->C);
    case TJ_I64: return e->i64;
    default: return e->i8;   /* u8, i8, bool */
    }
}

/* The dtype suffix of the formula functions in pw.c. */
static const char *dt_suffix(tj_dtype dt)
{
    switch (dt) {
    case TJ_F32: return "F32";
    case TJ_F64: return "F64";
    case TJ_I32: return "I32";
    case TJ_I64: return "I64";
    case TJ_U8: return "U8";
    case TJ_I8: return "I8";
    case TJ_I16: return "I16";
    default: return "BOOL";
    }
}

static bool is_signed_int(tj_dtype dt)
{
    return dt == TJ_I8 || dt == TJ_I16 || dt == TJ_I32 || dt == TJ_I64;
}

static LLVMValueRef c64(em *e, int64_t v) { return LLVMConstInt(e->i64, (unsigned long long)v, 1); }

static LLVMValueRef sz_at(em *e, int idx, const char *name)
{
    LLVMValueRef g = LLVMBuildInBoundsGEP2(e->B, e->i64, e->sz, (LLVMValueRef[]){c64(e, idx)}, 1, "");
    return LLVMBuildLoad2(e->B, e->i64, g, name);
}

/* ---- conversions (the C conversions of the eager kernels) ----------------------------- */

/* f16/bf16 bits (i16) -> f32, exactly: f16 through LLVM's half (vcvtph2ps),
 * bf16 by shifting its bits into the top half of an f32. */
static LLVMValueRef half_widen(em *e, LLVMValueRef v, tj_dtype from)
{
    if (from == TJ_F16)
        return LLVMBuildFPExt(e->B, LLVMBuildBitCast(e->B, v, LLVMHalfTypeInContext(e->C), ""), e->f32, "");
    LLVMTypeRef i32 = LLVMInt32TypeInContext(e->C);
    LLVMValueRef w = LLVMBuildShl(e->B, LLVMBuildZExt(e->B, v, i32, ""), LLVMConstInt(i32, 16, 0), "");
    return LLVMBuildBitCast(e->B, w, e->f32, "");
}

/* f32 -> f16/bf16 bits (i16), to nearest even, the bits ir/half.h gives.
 * f16: LLVM's half (vcvtps2ph). bf16: the integer rounding
 * (x + 0x7fff + ((x >> 16) & 1)) >> 16, a NaN quieted ((x >> 16) | 0x40).
 * Not vcvtneps2bf16 (LLVM's fptrunc to bfloat) on CPUs with avx512_bf16: it
 * flushes f32 subnormals to zero, and measured on the bf16 pointwise chain
 * (B1, docs/perf.md) it is slower: LLVM 19 vectorizes a loop with it at 4
 * lanes (9.3 ms), and with the integer rounding for subnormal lanes added
 * 6.0 ms, against 5.1 ms for the integer rounding alone. */
static LLVMValueRef half_narrow(em *e, LLVMValueRef v, tj_dtype to)
{
    LLVMTypeRef i16 = LLVMInt16TypeInContext(e->C), i32 = LLVMInt32TypeInContext(e->C);
    if (to == TJ_F16)
        return LLVMBuildBitCast(e->B, LLVMBuildFPTrunc(e->B, v, LLVMHalfTypeInContext(e->C), ""), i16, "");
    LLVMValueRef x = LLVMBuildBitCast(e->B, v, i32, ""), c16 = LLVMConstInt(i32, 16, 0);
    LLVMValueRef hi = LLVMBuildLShr(e->B, x, c16, "");
    LLVMValueRef lsb = LLVMBuildAnd(e->B, hi, LLVMConstInt(i32, 1, 0), "");
    LLVMValueRef r = LLVMBuildAdd(e->B, LLVMBuildAdd(e->B, x, LLVMConstInt(i32, 0x7fff, 0), ""), lsb, "");
    r = LLVMBuildLShr(e->B, r, c16, "");
    LLVMValueRef nan = LLVMBuildFCmp(e->B, LLVMRealUNO, v, v, "");
    r = LLVMBuildSelect(e->B, nan, LLVMBuildOr(e->B, hi, LLVMConstInt(i32, 0x40, 0), ""), r, "");
    return LLVMBuildTrunc(e->B, r, i16, "");
}

/* Float -> integer as the eager conversions (runtime/iter.c) and torch on x86:
 * truncation toward zero; NaN and values out of range give the most negative
 * value (of i32 for targets up to 32 bits, then truncated to the target's
 * width; of i64 for i64). Compared in double, where both bounds are exact. */
static LLVMValueRef float_to_int(em *e, LLVMValueRef v, tj_dtype from, tj_dtype to)
{
    LLVMTypeRef f64 = LLVMDoubleTypeInContext(e->C);
    if (from != TJ_F64)
        v = LLVMBuildFPExt(e->B, v, f64, "");
    bool wide = to == TJ_I64;
    LLVMTypeRef it = wide ? e->i64 : LLVMInt32TypeInContext(e->C);
    double lo = wide ? -9223372036854775808.0 : -2147483649.0, hi = wide ? 9223372036854775808.0 : 2147483648.0;
    LLVMValueRef in = LLVMBuildAnd(e->B, LLVMBuildFCmp(e->B, wide ? LLVMRealOGE : LLVMRealOGT, v, LLVMConstReal(f64, lo), ""),
                                   LLVMBuildFCmp(e->B, LLVMRealOLT, v, LLVMConstReal(f64, hi), ""), "");
    /* fptosi of an out-of-range lane is poison; the select never picks it */
    LLVMValueRef r = LLVMBuildSelect(e->B, in, LLVMBuildFPToSI(e->B, v, it, ""),
                                     LLVMConstInt(it, wide ? 1ULL << 63 : 1ULL << 31, 0), "");
    return wide ? r : LLVMBuildTrunc(e->B, r, ty_of(e, to), "");
}

/* v of dtype `from` to dtype `to`. f16 and bf16 go through f32, as the
 * runtime's conversions do (runtime/iter.c). */
static LLVMValueRef convert(em *e, LLVMValueRef v, tj_dtype from, tj_dtype to)
{
    if (from == to)
        return v;
    if (ir_dtype_is_half(from))
        return convert(e, half_widen(e, v, from), TJ_F32, to);
    if (ir_dtype_is_half(to))
        return half_narrow(e, convert(e, v, from, TJ_F32), to);
    LLVMTypeRef t = ty_of(e, to);
    bool ff = ir_dtype_is_float(from), tf = ir_dtype_is_float(to);
    if (to == TJ_BOOL) {
        LLVMValueRef nz = ff ? LLVMBuildFCmp(e->B, LLVMRealUNE, v, LLVMConstReal(ty_of(e, from), 0), "")
                             : LLVMBuildICmp(e->B, LLVMIntNE, v, LLVMConstInt(ty_of(e, from), 0, 0), "");
        return LLVMBuildZExt(e->B, nz, e->i8, "");
    }
    if (ff && tf)
        return LLVMBuildFPCast(e->B, v, t, "");
    if (tf)
        return is_signed_int(from) ? LLVMBuildSIToFP(e->B, v, t, "") : LLVMBuildUIToFP(e->B, v, t, "");
    if (ff)
        return float_to_int(e, v, from, to);
    return LLVMBuildIntCast2(e->B, v, t, is_signed_int(from), "");
}

/* The widened result of a formula (double for float compute dtypes, i64 for
 * integer ones) stored as dt, like the eager kernels' STORE. */
static LLVMValueRef narrow(em *e, LLVMValueRef v, const cg_inst *in)
{
    bool wide_float = ir_dtype_is_float(in->cdt);
    if (in->dt == TJ_BOOL && !wide_float && ir_ops[in->op].rule == IR_RULE_BITWISE)
        return LLVMBuildTrunc(e->B, LLVMBuildAnd(e->B, v, c64(e, 1), ""), e->i8, "");
    return convert(e, v, wide_float ? TJ_F64 : TJ_I64, in->dt);
}

/* ---- values ----------------------------------------------------------------------------- */

static LLVMValueRef value(em *e, loopctx *L, int i);

/* Offset of element (l, j) of buffer b from its row (block) pointer. */
static LLVMValueRef elem_index(em *e, const loopctx *L, int b)
{
    int cls = e->k->bufs[b].inner;
    LLVMValueRef idx = cls == 0 ? c64(e, 0) : cls == 1 ? L->j : LLVMBuildMul(e->B, L->j, e->istride[b], "");
    if (L->l) {
        int lc = e->k->bufs[b].lane;
        LLVMValueRef li = lc == 0 ? NULL : lc == 1 ? L->l : LLVMBuildMul(e->B, L->l, e->lstride[b], "");
        if (li)
            idx = LLVMBuildAdd(e->B, idx, li, "");
    }
    return idx;
}

static LLVMValueRef elem_ptr(em *e, const loopctx *L, int b, LLVMTypeRef t)
{
    LLVMValueRef idx = elem_index(e, L, b);
    return LLVMBuildInBoundsGEP2(e->B, t, e->p[b], &idx, 1, "");
}

static LLVMValueRef emit_load(em *e, loopctx *L, const cg_inst *in)
{
    LLVMTypeRef t = ty_of(e, in->dt);
    return LLVMBuildLoad2(e->B, t, elem_ptr(e, L, in->buf, t), "");
}

/* The formula part of this suffix, read on first use in the kernel (lazily:
 * function bodies are read when linked); NULL after fail(). */
static LLVMModuleRef formula_part(em *e, const char *suffix)
{
    int p = cg_formulas_find(suffix);
    if (p < 0 || p >= CG_PW_MAX_PARTS) {
        fail(e, "no formula bitcode for the dtype", suffix);
        return NULL;
    }
    if (e->S[p])
        return e->S[p];
    size_t len;
    const void *bc = cg_formulas_part(p, NULL, &len);
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(bc, len, "pw.bc", 0);
    if (LLVMGetBitcodeModuleInContext2(e->C, mb, &e->S[p]) || !e->S[p]) {   /* mb -> S[p] */
        LLVMDisposeMemoryBuffer(mb);
        e->S[p] = NULL;
        fail(e, "cannot read the formula bitcode", suffix);
    }
    return e->S[p];
}

static LLVMValueRef emit_call(em *e, loopctx *L, const cg_inst *in)
{
    char name[96];
    const char *suffix = dt_suffix(in->cdt);
    snprintf(name, sizeof name, "tj_pw_%s_%s", ir_ops[in->op].name, suffix);
    LLVMValueRef f = LLVMGetNamedFunction(e->M, name);
    if (!f) {   /* declared here, defined by its part when linked */
        LLVMModuleRef S = formula_part(e, suffix);
        if (!S)
            return LLVMGetUndef(ty_of(e, in->dt));
        LLVMValueRef fs = LLVMGetNamedFunction(S, name);
        if (!fs) {
            fail(e, "no formula in the bitcode", name);
            return LLVMGetUndef(ty_of(e, in->dt));
        }
        f = LLVMAddFunction(e->M, name, LLVMGlobalGetValueType(fs));
    }
    LLVMTypeRef ft = LLVMGlobalGetValueType(f);
    int n = ir_ops[in->op].nmin;
    LLVMValueRef args[2];
    for (int j = 0; j < n; j++)
        args[j] = value(e, L, in->a[j]);
    LLVMValueRef r = LLVMBuildCall2(e->B, ft, f, args, (unsigned)n, "");
    return narrow(e, r, in);
}

static LLVMValueRef value(em *e, loopctx *L, int i)
{
    if (L->memo[i])
        return L->memo[i];
    const cg_inst *in = &e->k->inst[i];
    LLVMValueRef v = NULL;
    switch (in->k) {
    case CG_LOAD: v = emit_load(e, L, in); break;
    case CG_CONST:
        if (ir_dtype_is_half(in->dt)) {   /* its bits */
            float f = (float)in->c;
            v = LLVMConstInt(ty_of(e, in->dt), in->dt == TJ_F16 ? ir_f32_to_f16(f) : ir_f32_to_bf16(f), 0);
            break;
        }
        v = ir_dtype_is_float(in->dt) ? LLVMConstReal(ty_of(e, in->dt), in->c)
                                      : LLVMConstInt(ty_of(e, in->dt), (unsigned long long)(int64_t)in->c,
                                                     is_signed_int(in->dt));
        if (in->dt == TJ_BOOL)
            v = LLVMConstInt(e->i8, in->c != 0, 0);
        break;
    case CG_CVT: v = convert(e, value(e, L, in->a[0]), e->k->inst[in->a[0]].dt, in->dt); break;
    case CG_CALL: v = emit_call(e, L, in); break;
    case CG_WHERE: {
        LLVMValueRef c = value(e, L, in->a[0]);
        LLVMValueRef a = value(e, L, in->a[1]), b = value(e, L, in->a[2]);
        v = LLVMBuildSelect(e->B, LLVMBuildICmp(e->B, LLVMIntNE, c, LLVMConstInt(e->i8, 0, 0), ""), a, b, "");
        break;
    }
    case CG_ROWLEN: v = e->N; break;
    case CG_RED:
        if (e->k->lanes) {   /* this row's accumulator */
            LLVMTypeRef t = ty_of(e, in->dt);
            v = LLVMBuildLoad2(e->B, t, LLVMBuildInBoundsGEP2(e->B, t, e->acc[in->stage], &L->l, 1, ""), "");
            break;
        }
        v = e->red[in->stage];
        if (!v) {
            fail(e, "a reduction result is used before its stage", NULL);
            v = LLVMGetUndef(ty_of(e, in->dt));
        }
        break;
    }
    return L->memo[i] = v;
}

/* ---- loops ------------------------------------------------------------------------------ */

/* An inner loop j in [j0, j1), built between loop_open and loop_close.
 * Reduction stages pass init/next so a phi carries the accumulator. */
typedef struct loop {
    LLVMBasicBlockRef pre, body, exit;
    LLVMValueRef j, acc;
    unsigned interleave;   /* > 0: llvm.loop.interleave.count */
    bool scalar;           /* llvm.loop.vectorize.enable false (a peel of a few elements) */
} loop;

static void loop_open(em *e, loop *lp, LLVMValueRef j0, LLVMValueRef j1, LLVMValueRef init)
{
    lp->pre = LLVMGetInsertBlock(e->B);
    lp->body = LLVMAppendBasicBlockInContext(e->C, e->fn, "loop");
    lp->exit = LLVMAppendBasicBlockInContext(e->C, e->fn, "done");
    LLVMBuildCondBr(e->B, LLVMBuildICmp(e->B, LLVMIntSLT, j0, j1, ""), lp->body, lp->exit);
    LLVMPositionBuilderAtEnd(e->B, lp->body);
    lp->j = LLVMBuildPhi(e->B, e->i64, "j");
    LLVMAddIncoming(lp->j, &j0, &lp->pre, 1);
    lp->acc = NULL;
    lp->interleave = 0;
    lp->scalar = false;
    if (init) {
        lp->acc = LLVMBuildPhi(e->B, LLVMTypeOf(init), "acc");
        LLVMAddIncoming(lp->acc, &init, &lp->pre, 1);
    }
}

/* !{"key", ty v} */
static LLVMMetadataRef md_pair(em *e, const char *key, LLVMTypeRef ty, unsigned v)
{
    LLVMMetadataRef kv[2] = {LLVMMDStringInContext2(e->C, key, strlen(key)),
                             LLVMValueAsMetadata(LLVMConstInt(ty, v, 0))};
    return LLVMMDNodeInContext2(e->C, kv, 2);
}

/* !llvm.loop !{self, !{"llvm.loop.interleave.count", i32 n}} or
 * !{self, !{"llvm.loop.vectorize.enable", i1 false}} on a latch. */
static void loop_hint(em *e, LLVMValueRef br, const loop *lp)
{
    LLVMMetadataRef self = LLVMTemporaryMDNode(e->C, NULL, 0);
    LLVMMetadataRef ops[2] = {self, lp->scalar ? md_pair(e, "llvm.loop.vectorize.enable", LLVMInt1TypeInContext(e->C), 0)
                                               : md_pair(e, "llvm.loop.interleave.count",
                                                         LLVMInt32TypeInContext(e->C), lp->interleave)};
    LLVMMetadataRef md = LLVMMDNodeInContext2(e->C, ops, 2);
    LLVMMetadataReplaceAllUsesWith(self, md);   /* ownership: the temporary node is freed */
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(e->C, "llvm.loop", 9), LLVMMetadataAsValue(e->C, md));
}

/* Closes the loop; returns the accumulator after it (init when empty). */
static LLVMValueRef loop_close(em *e, loop *lp, LLVMValueRef j1, LLVMValueRef init,
                               LLVMValueRef acc_next)
{
    LLVMBasicBlockRef last = LLVMGetInsertBlock(e->B);
    LLVMValueRef jn = LLVMBuildAdd(e->B, lp->j, c64(e, 1), "");
    LLVMAddIncoming(lp->j, &jn, &last, 1);
    if (lp->acc)
        LLVMAddIncoming(lp->acc, &acc_next, &last, 1);
    LLVMValueRef br = LLVMBuildCondBr(e->B, LLVMBuildICmp(e->B, LLVMIntSLT, jn, j1, ""), lp->body, lp->exit);
    if (lp->interleave || lp->scalar)
        loop_hint(e, br, lp);
    LLVMPositionBuilderAtEnd(e->B, lp->exit);
    if (!lp->acc)
        return NULL;
    LLVMValueRef r = LLVMBuildPhi(e->B, LLVMTypeOf(init), "red");
    LLVMAddIncoming(r, &init, &lp->pre, 1);
    LLVMAddIncoming(r, &acc_next, &last, 1);
    return r;
}

static LLVMValueRef intrinsic(em *e, const char *name, LLVMTypeRef t)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    return LLVMGetIntrinsicDeclaration(e->M, id, &t, 1);
}

/* One step of a reduction. Floats: reassociable adds and multiplies (so the
 * loop vectorizes) and NaN-propagating max/min, as the eager kernels. Integer
 * accumulators (sum and prod of integers and bools accumulate in i64, as
 * torch.sum does) wrap like the eager loops; max/min compare signed or
 * unsigned by the element type (bool and u8 are unsigned). */
static LLVMValueRef combine(em *e, cg_red red, tj_dtype dt, LLVMValueRef acc, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    bool fl = ir_dtype_is_float(dt);
    if (red == CG_MAX || red == CG_MIN) {
        const char *name = fl ? (red == CG_MAX ? "llvm.maximum" : "llvm.minimum")
                           : is_signed_int(dt) ? (red == CG_MAX ? "llvm.smax" : "llvm.smin")
                                               : (red == CG_MAX ? "llvm.umax" : "llvm.umin");
        LLVMValueRef f = intrinsic(e, name, t);
        LLVMTypeRef ft = LLVMFunctionType(t, (LLVMTypeRef[]){t, t}, 2, 0);
        return LLVMBuildCall2(e->B, ft, f, (LLVMValueRef[]){acc, v}, 2, "");
    }
    if (!fl)
        return red == CG_SUM ? LLVMBuildAdd(e->B, acc, v, "")
               : red == CG_XOR ? LLVMBuildXor(e->B, acc, v, "") : LLVMBuildMul(e->B, acc, v, "");
    LLVMValueRef r = red == CG_SUM ? LLVMBuildFAdd(e->B, acc, v, "") : LLVMBuildFMul(e->B, acc, v, "");
    LLVMSetFastMathFlags(r, LLVMFastMathAllowReassoc);
    return r;
}

/* The identity of a reduction in dtype dt: 0, 1, or the far end of dt's range
 * for max/min (-inf/inf for floats; false and true for bool). */
static LLVMValueRef red_init(em *e, cg_red red, tj_dtype dt)
{
    LLVMTypeRef t = ty_of(e, dt);
    if (ir_dtype_is_float(dt))
        return LLVMConstReal(t, red == CG_SUM ? 0.0 : red == CG_PROD ? 1.0 : red == CG_MAX ? -INFINITY : INFINITY);
    if (red == CG_SUM || red == CG_PROD || red == CG_XOR)
        return LLVMConstInt(t, red == CG_PROD, 0);
    if (dt == TJ_BOOL)
        return LLVMConstInt(t, red == CG_MIN, 0);
    unsigned bits = LLVMGetIntTypeWidth(t);
    unsigned long long ones = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
    unsigned long long v = is_signed_int(dt) ? (red == CG_MAX ? 1ULL << (bits - 1) : ones >> 1)
                                             : (red == CG_MAX ? 0 : ones);
    return LLVMConstInt(t, v, 0);
}

/* The stores of a stage at L's element; those to buffer `tag` get e->nt_tag. */
static void stage_stores(em *e, const cg_stage *st, loopctx *L, int tag)
{
    unsigned kind = LLVMGetMDKindIDInContext(e->C, "alias.scope", 11);
    for (int k = 0; k < st->nst; k++) {
        LLVMValueRef v = value(e, L, st->st_val[k]);
        LLVMValueRef s = LLVMBuildStore(e->B, v, elem_ptr(e, L, st->st_buf[k], LLVMTypeOf(v)));
        if (st->st_buf[k] == tag)
            LLVMSetMetadata(s, kind, e->nt_tag);
    }
}

/* ---- streaming stores (kernel.h, nt) ------------------------------------------------------ */

/* The buffer whose stores in stage st stream (kernel.h): the first
 * contiguous one it stores, when the stage is marked and reduces nothing
 * (lower.c chooses which stages); else -1. */
static int nt_buf(const em *e, const cg_stage *st)
{
    const cg_kernel *k = e->k;
    if (!st->nt || k->lanes || st->reduce)
        return -1;
    for (int j = 0; j < st->nst; j++)
        if (k->bufs[st->st_buf[j]].inner == 1)
            return st->st_buf[j];
    return -1;
}

/* A store stage over [j0, j1) whose stores to buffer nb stream:
 *
 *   peel = elements until &nb[j] is valign-aligned (all of them when nb's
 *          pointer is not even aligned to its element), at most j1 - j0
 *   for j in [j0, j0 + peel): the stores          (scalar: a few elements)
 *   every pointer moved to j0 + peel, nb's through llvm.ptrmask(-valign),
 *   a no-op that tells LLVM its alignment
 *   for j in [0, j1 - j0 - peel): the stores      (the loop LLVM vectorizes)
 *
 * The main loop's stores to nb carry nt_tag; after optimization mark_nt makes
 * those LLVM vectorized with an alignment of their size non-temporal (the
 * vectorizer's scalar remainder keeps normal stores). Values are the same
 * as emit_stage's, element by element. */
static void emit_nt_stage(em *e, const cg_stage *st, int nb, LLVMValueRef j0, LLVMValueRef j1,
                          LLVMValueRef *memo)
{
    const cg_kernel *k = e->k;
    uint64_t es = tj_dtype_size(k->bufs[nb].dt);
    LLVMValueRef len = LLVMBuildSub(e->B, j1, j0, "");
    LLVMValueRef addr = LLVMBuildPtrToInt(e->B, LLVMBuildGEP2(e->B, ty_of(e, k->bufs[nb].dt), e->p[nb], &j0, 1, ""),
                                          e->i64, "");
    LLVMValueRef mis = LLVMBuildAnd(e->B, LLVMBuildNeg(e->B, addr, ""), c64(e, e->valign - 1), "");
    LLVMValueRef peel = LLVMBuildUDiv(e->B, mis, c64(e, (int64_t)es), "");
    LLVMValueRef odd = LLVMBuildICmp(e->B, LLVMIntNE, LLVMBuildAnd(e->B, addr, c64(e, (int64_t)es - 1), ""),
                                     c64(e, 0), "");
    peel = LLVMBuildSelect(e->B, odd, len, peel, "");
    peel = LLVMBuildSelect(e->B, LLVMBuildICmp(e->B, LLVMIntSLT, peel, len, ""), peel, len, "peel");
    LLVMValueRef ja = LLVMBuildAdd(e->B, j0, peel, "ja");

    loop lp;
    loop_open(e, &lp, j0, ja, NULL);
    lp.scalar = true;
    memset(memo, 0, sizeof(LLVMValueRef) * (size_t)k->ninst);
    loopctx L = {lp.j, memo, NULL};
    stage_stores(e, st, &L, -1);
    loop_close(e, &lp, ja, NULL, NULL);

    LLVMValueRef saved[CG_MAX_BUFS];
    memcpy(saved, e->p, sizeof saved);
    loopctx at = {ja, memo, NULL};
    for (int b = 0; b < k->nbufs; b++) {   /* not inbounds: j0 + peel may be j1 */
        LLVMValueRef idx = elem_index(e, &at, b);
        e->p[b] = LLVMBuildGEP2(e->B, ty_of(e, k->bufs[b].dt), saved[b], &idx, 1, "");
    }
    LLVMTypeRef pm[2] = {e->ptr, e->i64};
    unsigned id = LLVMLookupIntrinsicID("llvm.ptrmask", 12);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(e->M, id, pm, 2);
    e->p[nb] = LLVMBuildCall2(e->B, LLVMFunctionType(e->ptr, pm, 2, 0), f,
                              (LLVMValueRef[]){e->p[nb], c64(e, -(int64_t)e->valign)}, 2, "");
    LLVMValueRef n = LLVMBuildSub(e->B, j1, ja, "");
    loop lm;
    loop_open(e, &lm, c64(e, 0), n, NULL);
    lm.interleave = k->kind == CG_TILES ? 4 : 0;   /* as emit_stage */
    memset(memo, 0, sizeof(LLVMValueRef) * (size_t)k->ninst);
    L = (loopctx){lm.j, memo, NULL};
    stage_stores(e, st, &L, nb);
    loop_close(e, &lm, n, NULL, NULL);
    memcpy(e->p, saved, sizeof saved);
    e->nt_used = true;
}

/* After optimization: the tagged stores LLVM vectorized with their size's
 * alignment (LLVM's InferAlignment sees the ptrmask) become !nontemporal;
 * codegen makes them vmovntps/vmovntdq. Returns how many. */
static int mark_nt(em *e)
{
    unsigned scope = LLVMGetMDKindIDInContext(e->C, "alias.scope", 11);
    unsigned ntk = LLVMGetMDKindIDInContext(e->C, "nontemporal", 11);
    LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(e->C), 1, 0));
    LLVMValueRef md = LLVMMetadataAsValue(e->C, LLVMMDNodeInContext2(e->C, &one, 1));
    LLVMTargetDataRef dl = LLVMGetModuleDataLayout(e->M);
    int n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(e->M); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
                if (!LLVMIsAStoreInst(i) || LLVMGetMetadata(i, scope) != e->nt_tag)
                    continue;
                LLVMTypeRef t = LLVMTypeOf(LLVMGetOperand(i, 0));
                unsigned long long size = LLVMStoreSizeOfType(dl, t);
                if (LLVMGetTypeKind(t) == LLVMVectorTypeKind && size >= 16 && size <= e->valign &&
                    LLVMGetAlignment(i) >= size) {
                    LLVMSetMetadata(i, ntk, md);
                    n++;
                }
            }
    return n;
}

/* The scope list !{!{!"tjit.nt", !{!"tjit.nt"}}}: a tag LLVM's vectorizer
 * carries to the vector stores it makes (unlike metadata of our own kind).
 * No access has !noalias naming it, so it tells alias analysis nothing. */
static LLVMValueRef nt_tag(em *e)
{
    LLVMMetadataRef name = LLVMMDStringInContext2(e->C, "tjit.nt", 7);
    LLVMMetadataRef dom = LLVMMDNodeInContext2(e->C, &name, 1);
    LLVMMetadataRef scope = LLVMMDNodeInContext2(e->C, (LLVMMetadataRef[]){name, dom}, 2);
    return LLVMMetadataAsValue(e->C, LLVMMDNodeInContext2(e->C, &scope, 1));
}

static void emit_stage(em *e, const cg_stage *st, int s, LLVMValueRef j0, LLVMValueRef j1,
                       LLVMValueRef *memo)
{
    int nb = nt_buf(e, st);
    if (nb >= 0) {
        emit_nt_stage(e, st, nb, j0, j1, memo);
        return;
    }
    memset(memo, 0, sizeof(LLVMValueRef) * (size_t)e->k->ninst);
    loop lp;
    tj_dtype rdt = st->reduce ? e->k->inst[st->val].dt : TJ_F32;
    LLVMValueRef init = st->reduce ? red_init(e, st->red, rdt) : NULL;
    loop_open(e, &lp, j0, j1, init);
    /* pointwise tiles: 4 vectors in flight hide the latency of long formula
     * chains (P1: 17% faster than LLVM's own choice of 1) */
    lp.interleave = e->k->kind == CG_TILES ? 4 : 0;
    loopctx L = {lp.j, memo, NULL};
    LLVMValueRef next = NULL;
    if (st->reduce)
        next = combine(e, st->red, rdt, lp.acc, value(e, &L, st->val));
    stage_stores(e, st, &L, -1);
    LLVMValueRef r = loop_close(e, &lp, j1, init, next);
    if (st->reduce)
        e->red[s] = r;
}

static void emit_row_stores(em *e, LLVMValueRef *memo)
{
    memset(memo, 0, sizeof(LLVMValueRef) * (size_t)e->k->ninst);
    loopctx L = {c64(e, 0), memo, NULL};
    for (int k = 0; k < e->k->nrow; k++) {
        LLVMValueRef v = value(e, &L, e->k->row_val[k]);
        LLVMBuildStore(e->B, v, e->p[e->k->row_buf[k]]);
    }
}

/* Each buffer's pointer at `row`, a row-major index over the outer dims
 * [0, nrow) (then, in column kernels, index `last` of the last outer dim),
 * and the runtime strides its stride classes need. */
static void row_pointers(em *e, LLVMValueRef row, int nrow, LLVMValueRef last, LLVMValueRef *args)
{
    const cg_kernel *k = e->k;
    LLVMValueRef idx[CG_MAX_OUTER], r = row;
    if (last)
        idx[nrow] = last;
    for (int d = nrow - 1; d >= 0; d--) {
        if (d == 0) {
            idx[d] = r;
            break;
        }
        LLVMValueRef n = sz_at(e, 3 + d, "");
        idx[d] = LLVMBuildURem(e->B, r, n, "");
        r = LLVMBuildUDiv(e->B, r, n, "");
    }
    for (int b = 0; b < k->nbufs; b++) {
        LLVMValueRef off = c64(e, 0);
        for (int d = 0; d < k->nouter; d++)
            off = LLVMBuildAdd(e->B, off, LLVMBuildMul(e->B, idx[d], sz_at(e, CG_SZ_STRIDE(k, b, d), ""), ""), "");
        e->p[b] = LLVMBuildInBoundsGEP2(e->B, ty_of(e, k->bufs[b].dt), args[b], &off, 1, "");
        e->istride[b] = k->bufs[b].inner == CG_STRIDED ? sz_at(e, CG_SZ_STRIDE(k, b, k->nouter), "") : NULL;
        e->lstride[b] = k->lanes && k->bufs[b].lane == CG_STRIDED
                            ? sz_at(e, CG_SZ_STRIDE(k, b, k->nouter - 1), "") : NULL;
    }
}

/* ---- column kernels ------------------------------------------------------------------------ */

/* One stage of a column kernel: for j, for each row l of the block (the loop
 * that vectorizes): acc[l] = acc[l] op v(l, j), and the stores of (l, j). */
static void emit_cols_stage(em *e, const cg_stage *st, int s, LLVMValueRef N, LLVMValueRef *memo)
{
    LLVMValueRef zero = c64(e, 0);
    tj_dtype rdt = st->reduce ? e->k->inst[st->val].dt : TJ_F32;
    if (st->reduce) {
        LLVMTypeRef t = ty_of(e, rdt);
        loop li;
        loop_open(e, &li, zero, e->nl, NULL);
        LLVMBuildStore(e->B, red_init(e, st->red, rdt), LLVMBuildInBoundsGEP2(e->B, t, e->acc[s], &li.j, 1, ""));
        loop_close(e, &li, e->nl, NULL, NULL);
    }
    loop lj, ll;
    loop_open(e, &lj, zero, N, NULL);
    loop_open(e, &ll, zero, e->nl, NULL);
    memset(memo, 0, sizeof(LLVMValueRef) * (size_t)e->k->ninst);
    loopctx L = {lj.j, memo, ll.j};
    if (st->reduce) {
        LLVMTypeRef t = ty_of(e, rdt);
        LLVMValueRef a = LLVMBuildInBoundsGEP2(e->B, t, e->acc[s], &ll.j, 1, "");
        LLVMValueRef v = value(e, &L, st->val);
        LLVMBuildStore(e->B, combine(e, st->red, rdt, LLVMBuildLoad2(e->B, t, a, ""), v), a);
    }
    for (int k = 0; k < st->nst; k++) {
        LLVMValueRef v = value(e, &L, st->st_val[k]);
        LLVMBuildStore(e->B, v, elem_ptr(e, &L, st->st_buf[k], LLVMTypeOf(v)));
    }
    loop_close(e, &ll, e->nl, NULL, NULL);
    loop_close(e, &lj, N, NULL, NULL);
}

/* A column kernel's tile t: row t / NB of the outer dims but the last, rows
 * l0 = (t % NB) * lanes .. of the last; the stages, then the row stores of
 * each row of the block. */
static void emit_cols_tile(em *e, LLVMValueRef t, LLVMValueRef N, LLVMValueRef NB, LLVMValueRef *args,
                           LLVMValueRef *memo)
{
    const cg_kernel *k = e->k;
    int no = k->nouter;
    LLVMValueRef row = LLVMBuildUDiv(e->B, t, NB, "row");
    LLVMValueRef l0 = LLVMBuildMul(e->B, LLVMBuildSub(e->B, t, LLVMBuildMul(e->B, row, NB, ""), ""),
                                   c64(e, k->lanes), "l0");
    LLVMValueRef last = sz_at(e, 3 + no - 1, "");
    LLVMValueRef end = LLVMBuildAdd(e->B, l0, c64(e, k->lanes), "");
    LLVMValueRef l1 = LLVMBuildSelect(e->B, LLVMBuildICmp(e->B, LLVMIntSLT, end, last, ""), end, last, "");
    e->nl = LLVMBuildSub(e->B, l1, l0, "nl");
    row_pointers(e, row, no - 1, l0, args);
    for (int s = 0; s < k->nstages && !e->failed; s++)
        emit_cols_stage(e, &k->stages[s], s, N, memo);
    if (k->nrow == 0)
        return;
    loop ll;
    loop_open(e, &ll, c64(e, 0), e->nl, NULL);
    memset(memo, 0, sizeof(LLVMValueRef) * (size_t)k->ninst);
    loopctx L = {c64(e, 0), memo, ll.j};
    for (int j = 0; j < k->nrow; j++) {
        LLVMValueRef v = value(e, &L, k->row_val[j]);
        LLVMBuildStore(e->B, v, elem_ptr(e, &L, k->row_buf[j], LLVMTypeOf(v)));
    }
    loop_close(e, &ll, e->nl, NULL, NULL);
}

/* The tile: row pointers, then the stages. */
static void emit_tile(em *e, LLVMValueRef t, LLVMValueRef N, LLVMValueRef Bw, LLVMValueRef NB,
                      LLVMValueRef *args, LLVMValueRef *memo)
{
    const cg_kernel *k = e->k;
    LLVMValueRef row = t, j0 = c64(e, 0), j1 = N;
    if (k->kind == CG_TILES) {
        row = LLVMBuildUDiv(e->B, t, NB, "row");
        j0 = LLVMBuildMul(e->B, LLVMBuildSub(e->B, t, LLVMBuildMul(e->B, row, NB, ""), ""), Bw, "j0");
        LLVMValueRef end = LLVMBuildAdd(e->B, j0, Bw, "");
        j1 = LLVMBuildSelect(e->B, LLVMBuildICmp(e->B, LLVMIntSLT, end, N, ""), end, N, "j1");
    }
    row_pointers(e, row, k->nouter, NULL, args);
    memset(e->red, 0, sizeof e->red);
    for (int s = 0; s < k->nstages && !e->failed; s++)
        emit_stage(e, &k->stages[s], s, j0, j1, memo);
    emit_row_stores(e, memo);
}

/* ---- functions ------------------------------------------------------------------------------ */

static void add_attr(em *e, LLVMValueRef f, LLVMAttributeIndex at, const char *name)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(f, at, LLVMCreateEnumAttribute(e->C, kind, 0));
}

static void add_str_attr(em *e, LLVMValueRef f, const char *key, const char *val)
{
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(e->C, key, (unsigned)strlen(key), val,
                                                      (unsigned)strlen(val)));
}

static void host_attrs(em *e, LLVMValueRef f, LLVMTargetMachineRef tm)
{
    char *cpu = LLVMGetTargetMachineCPU(tm), *feat = LLVMGetTargetMachineFeatureString(tm);
    if (cpu && feat) {
        add_str_attr(e, f, "target-cpu", cpu);
        add_str_attr(e, f, "target-features", feat);
    } else {
        fail(e, "out of memory", "the target machine's CPU and features");
    }
    add_str_attr(e, f, "prefer-vector-width", "512");
    add_str_attr(e, f, "min-legal-vector-width", "512");
    add_attr(e, f, LLVMAttributeFunctionIndex, "nounwind");
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(feat);
}

/* body(ptr noalias b0, ..., i64 begin, i64 end, ptr sz) */
static LLVMValueRef build_body(em *e, const char *fname, LLVMTargetMachineRef tm)
{
    const cg_kernel *k = e->k;
    int np = k->nbufs + 3;
    LLVMTypeRef pt[CG_MAX_BUFS + 3];
    for (int b = 0; b < k->nbufs; b++)
        pt[b] = e->ptr;
    pt[k->nbufs] = e->i64;
    pt[k->nbufs + 1] = e->i64;
    pt[k->nbufs + 2] = e->ptr;
    char name[160];
    snprintf(name, sizeof name, "%s.body", fname);
    LLVMValueRef f = LLVMAddFunction(e->M, name, LLVMFunctionType(LLVMVoidTypeInContext(e->C), pt, (unsigned)np, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    host_attrs(e, f, tm);
    add_attr(e, f, LLVMAttributeFunctionIndex, "noinline");
    for (int b = 0; b < k->nbufs; b++) {
        add_attr(e, f, (unsigned)b + 1, "noalias");
        add_attr(e, f, (unsigned)b + 1, "nocapture");
        if (!k->bufs[b].out)
            add_attr(e, f, (unsigned)b + 1, "readonly");
    }
    add_attr(e, f, (unsigned)np, "noalias");
    add_attr(e, f, (unsigned)np, "nocapture");
    add_attr(e, f, (unsigned)np, "readonly");
    e->fn = f;
    LLVMValueRef args[CG_MAX_BUFS];
    for (int b = 0; b < k->nbufs; b++)
        args[b] = LLVMGetParam(f, (unsigned)b);
    LLVMValueRef begin = LLVMGetParam(f, (unsigned)k->nbufs), end = LLVMGetParam(f, (unsigned)k->nbufs + 1);
    e->sz = LLVMGetParam(f, (unsigned)k->nbufs + 2);

    LLVMPositionBuilderAtEnd(e->B, LLVMAppendBasicBlockInContext(e->C, f, "entry"));
    LLVMValueRef N = sz_at(e, 0, "N"), Bw = sz_at(e, 1, "B"), NB = sz_at(e, 2, "NB");
    e->N = N;
    for (int s = 0; k->lanes && s < k->nstages; s++)   /* column accumulators, in the entry block */
        if (k->stages[s].reduce) {
            LLVMTypeRef t = ty_of(e, k->inst[k->stages[s].val].dt);
            e->acc[s] = LLVMBuildAlloca(e->B, LLVMArrayType2(t, (uint64_t)k->lanes), "acc");
            LLVMSetAlignment(e->acc[s], 64);
        }
    loop tl;
    loop_open(e, &tl, begin, end, NULL);
    LLVMValueRef *memo = calloc((size_t)k->ninst + 1, sizeof *memo);
    if (!memo) {
        fail(e, "out of memory", NULL);
        return f;
    }
    if (k->lanes)
        emit_cols_tile(e, tl.j, N, NB, args, memo);
    else
        emit_tile(e, tl.j, N, Bw, NB, args, memo);
    free(memo);
    loop_close(e, &tl, end, NULL, NULL);
    if (e->nt_used) {   /* streaming stores are weakly ordered: drain them before returning */
        unsigned id = LLVMLookupIntrinsicID("llvm.x86.sse.sfence", 19);
        if (id)
            LLVMBuildCall2(e->B, LLVMFunctionType(LLVMVoidTypeInContext(e->C), NULL, 0, 0),
                           LLVMGetIntrinsicDeclaration(e->M, id, NULL, 0), NULL, 0, "");
        else
            LLVMBuildFence(e->B, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
    }
    LLVMBuildRetVoid(e->B);
    return f;
}

/* fname(ptr bufs, i64 begin, i64 end, ptr sz): loads the buffer pointers. */
static void build_wrapper(em *e, const char *fname, LLVMValueRef body)
{
    const cg_kernel *k = e->k;
    LLVMTypeRef pt[4] = {e->ptr, e->i64, e->i64, e->ptr};
    LLVMValueRef f = LLVMAddFunction(e->M, fname, LLVMFunctionType(LLVMVoidTypeInContext(e->C), pt, 4, 0));
    add_attr(e, f, LLVMAttributeFunctionIndex, "nounwind");
    LLVMPositionBuilderAtEnd(e->B, LLVMAppendBasicBlockInContext(e->C, f, "entry"));
    LLVMValueRef args[CG_MAX_BUFS + 3];
    for (int b = 0; b < k->nbufs; b++) {
        LLVMValueRef g = LLVMBuildInBoundsGEP2(e->B, e->ptr, LLVMGetParam(f, 0), (LLVMValueRef[]){c64(e, b)}, 1, "");
        args[b] = LLVMBuildLoad2(e->B, e->ptr, g, "");
    }
    args[k->nbufs] = LLVMGetParam(f, 1);
    args[k->nbufs + 1] = LLVMGetParam(f, 2);
    args[k->nbufs + 2] = LLVMGetParam(f, 3);
    LLVMBuildCall2(e->B, LLVMGlobalGetValueType(body), body, args, (unsigned)k->nbufs + 3, "");
    LLVMBuildRetVoid(e->B);
}

/* The formula functions: internal and always inlined; unused ones are
 * dropped by the optimizer. Their own target attributes give way to the host's. */
static void prepare_formulas(em *e, LLVMTargetMachineRef tm, LLVMValueRef keep)
{
    unsigned noinl = LLVMGetEnumAttributeKindForName("noinline", 8);
    unsigned optnone = LLVMGetEnumAttributeKindForName("optnone", 7);
    for (LLVMValueRef f = LLVMGetFirstFunction(e->M); f; f = LLVMGetNextFunction(f)) {
        if (f == keep || LLVMIsDeclaration(f) || f == e->fn)
            continue;
        LLVMSetLinkage(f, LLVMInternalLinkage);
        LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, noinl);
        LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, optnone);
        LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-cpu", 10);
        LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "target-features", 15);
        LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "tune-cpu", 8);
        host_attrs(e, f, tm);
        add_attr(e, f, LLVMAttributeFunctionIndex, "alwaysinline");
    }
}

/* ---- driver -------------------------------------------------------------------------------- */

/* Links into M the formulas it calls, part by part: the others are deleted
 * from the part first, unread; internal helpers come along only when
 * referenced. The parts are consumed. */
static int link_formulas(em *e)
{
    for (int p = 0; p < CG_PW_MAX_PARTS; p++) {
        LLVMModuleRef S = e->S[p];
        if (!S)
            continue;
        e->S[p] = NULL;
        LLVMValueRef next;
        for (LLVMValueRef f = LLVMGetFirstFunction(S); f; f = next) {
            next = LLVMGetNextFunction(f);
            size_t n;
            const char *name = LLVMGetValueName2(f, &n);
            if (n > 6 && !strncmp(name, "tj_pw_", 6) && !LLVMGetNamedFunction(e->M, name))
                LLVMDeleteFunction(f);
        }
        /* llvm-extract made the part's helpers (vm_*) and constants
         * hidden externals: internal again, so that two parts' copies of
         * a helper link side by side */
        for (LLVMValueRef f = LLVMGetFirstFunction(S); f; f = LLVMGetNextFunction(f))
            if (!LLVMIsDeclaration(f) && strncmp(LLVMGetValueName2(f, &(size_t){0}), "tj_pw_", 6))
                LLVMSetLinkage(f, LLVMInternalLinkage);
        for (LLVMValueRef g = LLVMGetFirstGlobal(S); g; g = LLVMGetNextGlobal(g))
            if (!LLVMIsDeclaration(g))
                LLVMSetLinkage(g, LLVMInternalLinkage);
        LLVMSetModuleDataLayout(S, LLVMGetModuleDataLayout(e->M));
        LLVMSetTarget(S, LLVMGetTarget(e->M));
        if (LLVMLinkModules2(e->M, S)) {   /* ownership: S is destroyed */
            fail(e, "cannot link the formula bitcode", NULL);
            return -1;
        }
    }
    return 0;
}

static char *take_buffer(LLVMMemoryBufferRef mb, size_t *len)
{
    size_t n = LLVMGetBufferSize(mb);
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, LLVMGetBufferStart(mb), n);
        p[n] = '\0';
        if (len)
            *len = n;
    }
    LLVMDisposeMemoryBuffer(mb);
    return p;
}

static int emit_file(LLVMTargetMachineRef tm, LLVMModuleRef M, LLVMCodeGenFileType type, char **out,
                     size_t *len, char *err, size_t nerr)
{
    char *msg = NULL;
    LLVMMemoryBufferRef mb = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, M, type, &msg, &mb)) {
        snprintf(err, nerr, "code generation failed: %s", msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return -1;
    }
    *out = take_buffer(mb, len);
    if (!*out) {
        snprintf(err, nerr, "out of memory");
        return -1;
    }
    return 0;
}

/* default<O2>, not O3: O3 adds non-trivial loop unswitching and a higher
 * unroll threshold, which copy a kernel's loops (a column kernel's block
 * loop once per stride case) for no measured gain; O2 took 17% fewer
 * instructions to optimize P7's kernels and 7% fewer to generate their
 * code, with the same vector loops (docs/perf.md, 2026-11-29 cold compile). */
static int optimize(LLVMModuleRef M, LLVMTargetMachineRef tm, char *err, size_t nerr)
{
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
    LLVMErrorRef pe = LLVMRunPasses(M, "default<O2>", tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (pe) {
        char *m = LLVMGetErrorMessage(pe);
        snprintf(err, nerr, "optimization failed: %s", m);
        LLVMDisposeErrorMessage(m);
        return -1;
    }
    return 0;
}

static int build_module(em *e, const char *fname, LLVMTargetMachineRef tm)
{
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetModuleDataLayout(e->M, dl);
    LLVMDisposeTargetData(dl);
    if (!triple) {
        fail(e, "out of memory", "the target machine's triple");
        return -1;
    }
    LLVMSetTarget(e->M, triple);
    LLVMDisposeMessage(triple);
    e->i8 = LLVMInt8TypeInContext(e->C);
    e->i64 = LLVMInt64TypeInContext(e->C);
    e->f32 = LLVMFloatTypeInContext(e->C);
    e->f64 = LLVMDoubleTypeInContext(e->C);
    e->ptr = LLVMPointerTypeInContext(e->C, 0);
    e->B = LLVMCreateBuilderInContext(e->C);
    e->nt_tag = nt_tag(e);
    char *feat = LLVMGetTargetMachineFeatureString(tm);
    e->valign = feat && strstr(feat, "+avx512f") ? 64 : 32;
    LLVMDisposeMessage(feat);
    LLVMValueRef body = build_body(e, fname, tm);
    build_wrapper(e, fname, body);
    LLVMDisposeBuilder(e->B);
    if (e->failed || link_formulas(e))
        return -1;
    char *msg = NULL;
    if (LLVMVerifyModule(e->M, LLVMReturnStatusAction, &msg)) {
        fail(e, "invalid LLVM IR", msg);
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMDisposeMessage(msg);
    prepare_formulas(e, tm, LLVMGetNamedFunction(e->M, fname));
    return 0;
}

int cg_emit(const cg_kernel *k, const char *fname, unsigned flags, cg_object *out, char *err,
            size_t nerr)
{
    memset(out, 0, sizeof *out);
    if (cg_kernel_check(k, err, nerr))
        return -1;
    LLVMTargetMachineRef tm = host_tm(err, nerr);
    if (!tm)
        return -1;
    double t0 = now_ms();
    if (cg_formulas_nparts() == 0) {
        snprintf(err, nerr, "no formula bitcode: the library was built without clang-19");
        return -1;
    }
    LLVMContextRef C = LLVMContextCreate();
    em e = {.k = k, .C = C, .err = err, .nerr = nerr};
    int rc = -1;
    e.M = LLVMModuleCreateWithNameInContext(fname, C);
    if (build_module(&e, fname, tm))
        goto done;
    double t1 = now_ms();
    if (optimize(e.M, tm, err, nerr))
        goto done;
    if (e.nt_used)
        mark_nt(&e);
    double t2 = now_ms();
    if (flags & CG_EMIT_LLVM) {
        char *s = LLVMPrintModuleToString(e.M);
        out->llvm = s ? strdup(s) : NULL;
        LLVMDisposeMessage(s);
        if (!out->llvm) {
            snprintf(err, nerr, "out of memory printing the LLVM IR");
            goto done;
        }
    }
    if (flags & CG_EMIT_ASM) {
        LLVMModuleRef copy = LLVMCloneModule(e.M);
        size_t n;
        int r = emit_file(tm, copy, LLVMAssemblyFile, &out->asm_text, &n, err, nerr);
        LLVMDisposeModule(copy);
        if (r)
            goto done;
    }
    char *obj = NULL;
    if (emit_file(tm, e.M, LLVMObjectFile, &obj, &out->len, err, nerr))
        goto done;
    out->obj = obj;
    out->ms_build = t1 - t0;
    out->ms_opt = t2 - t1;
    out->ms_codegen = now_ms() - t2;
    rc = 0;
done:
    for (int p = 0; p < CG_PW_MAX_PARTS; p++)
        if (e.S[p])
            LLVMDisposeModule(e.S[p]);
    if (e.M)
        LLVMDisposeModule(e.M);
    LLVMContextDispose(C);
    if (rc)
        cg_object_free(out);
    return rc;
}

void cg_object_free(cg_object *o)
{
    free(o->obj);
    free(o->llvm);
    free(o->asm_text);
    memset(o, 0, sizeof *o);
}
