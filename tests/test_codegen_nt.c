/* test_codegen_nt.c - streaming (non-temporal) stores in compiled kernels
 * (codegen/kernel.h `nt`, emit.c emit_nt_stage) against the same kernels
 * with normal stores.
 *
 * A kernel with `nt` peels scalar elements until its output pointer is
 * aligned, then runs the vectorized loop with vmovntps stores and a scalar
 * remainder. Every output misalignment (0..7 floats), lengths around the
 * peel, the vector loop's step and tile boundaries, rows of a 2-D output that
 * each start at another misalignment, an output written in place over its
 * input, a rows (softmax-like) kernel and 1 and 2 threads must give the bits
 * of the kernel without `nt`, and leave every byte outside the output alone.
 * Also: lower.c turns `nt` on exactly at cg_nt_min_bytes, and the compiled
 * graph then gives the eager bits. Kernels are cached under
 * $TJ_BUILD/kernel-cache.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../codegen/jit.h"
#include "../codegen/lower.h"
#include "util.h"

enum { GUARD = 64, MAXN = 40000, MAXOFF = 8 };

#define CALL(k, o, p, q) \
    cg_add_inst(k, &(cg_inst){.k = CG_CALL, .dt = TJ_F32, .op = o, .cdt = TJ_F32, .a = {p, q}})

/* P1's y = tanh(x) * sigmoid(1.702 x) + 0.5 x over nouter outer dims; in
 * place: x is loaded from the output buffer (lower.c streams neither a
 * costly stage nor an in-place one by default; the emitter must still get
 * them right). */
static void p1_kernel(cg_kernel *k, int nouter, bool in_place, bool nt)
{
    cg_kernel_init(k, CG_TILES, nouter);
    int by = in_place ? cg_add_buf(k, TJ_F32, true, 1) : -1;
    int bx = in_place ? by : cg_add_buf(k, TJ_F32, false, 1);
    if (!in_place)
        by = cg_add_buf(k, TJ_F32, true, 1);
    int x = cg_add_load(k, bx);
    int h = cg_add_cvt(k, cg_add_const(k, TJ_F64, 0.5), TJ_F32);
    int s = cg_add_cvt(k, cg_add_const(k, TJ_F64, 1.702), TJ_F32);
    int y = CALL(k, OP_add, CALL(k, OP_mul, CALL(k, OP_tanh, x, 0), CALL(k, OP_sigmoid, CALL(k, OP_mul, x, s), 0)),
                 CALL(k, OP_mul, x, h));
    cg_add_store(k, y, by);
    k->stages[0].nt = nt;
}

/* Per row: y = exp(x - max(x)), a rows kernel whose last stage streams. */
static void rows_kernel(cg_kernel *k, bool nt)
{
    cg_kernel_init(k, CG_ROWS, 1);
    int bx = cg_add_buf(k, TJ_F32, false, 1), by = cg_add_buf(k, TJ_F32, true, 1);
    int x = cg_add_load(k, bx);
    int m = cg_add_reduce(k, CG_MAX, x);
    cg_add_store(k, CALL(k, OP_exp, CALL(k, OP_sub, x, m), 0), by);
    k->stages[1].nt = nt;
}

static cg_kernel_fn get(const cg_kernel *k, unsigned flags, cg_compiled *out)
{
    assert_int_equal(cg_jit_get(k, NULL, flags, out), 0);
    assert_non_null(out->fn);
    return out->fn;
}

typedef struct job {
    cg_kernel_fn fn;
    char **bufs;
    int64_t begin, end;
    const int64_t *sz;
} job;

static void *run_job(void *p)
{
    job *j = p;
    j->fn(j->bufs, j->begin, j->end, j->sz);
    return NULL;
}

/* Runs fn over tiles [0, ntiles) on `threads` threads (halves). */
static void run(cg_kernel_fn fn, char **bufs, int64_t ntiles, const int64_t *sz, int threads)
{
    job jobs[2] = {{fn, bufs, 0, threads == 1 ? ntiles : ntiles / 2, sz}, {fn, bufs, ntiles / 2, ntiles, sz}};
    tu_run_threads(threads, run_job, jobs, sizeof jobs[0]);
}

/* A 64-byte aligned float buffer of n + 2 GUARD, its guards and content set
 * from a fixed pattern; the output starts at GUARD + off floats. */
static float *pattern(int64_t n)
{
    size_t bytes = (size_t)(n + 2 * GUARD) * sizeof(float);
    float *p = aligned_alloc(64, (bytes + 63) / 64 * 64);   /* C11: a multiple of the alignment */
    assert_non_null(p);
    for (int64_t i = 0; i < n + 2 * GUARD; i++)
        p[i] = (float)((i * 7919) % 20011 - 10005) / 1500.0f;
    return p;
}

/* Runs kernels a (normal) and b (nt) on the same input into outputs at
 * misalignment off, rows x n elements (row stride n + pad), tile width bw;
 * compares every byte of both output buffers. */
static void compare(cg_kernel_fn a, cg_kernel_fn b, const cg_kernel *k, int64_t rows, int64_t n, int64_t pad,
                    int64_t bw, int off, int threads)
{
    int64_t rs = n + pad, total = rows * rs;
    bool in_place = k->nbufs == 1, rk = k->kind == CG_ROWS;
    float *x = pattern(total), *ya = pattern(total), *yb = pattern(total);
    if (in_place) {   /* the input is the output's own content */
        memcpy(ya, x, (size_t)(total + 2 * GUARD) * sizeof *x);
        memcpy(yb, x, (size_t)(total + 2 * GUARD) * sizeof *x);
    }
    int64_t B = rk ? n : bw, NB = rk ? 1 : (n + bw - 1) / bw;
    int64_t ntiles = rk ? rows : (n == 0 ? 0 : rows * NB);
    int64_t sz[3 + 1 + 2 * 2] = {n, B, NB};
    int no = k->nouter, i = 3;
    if (no)
        sz[i++] = rows;
    for (int bf = 0; bf < k->nbufs; bf++) {
        if (no)
            sz[i++] = rs;
        sz[i++] = 1;
    }
    char *ba[2] = {(char *)(x + GUARD + (in_place ? off : 3)), (char *)(ya + GUARD + off)};
    char *bb[2] = {(char *)(x + GUARD + 3), (char *)(yb + GUARD + off)};
    if (in_place)
        ba[0] = ba[1], bb[0] = bb[1];
    run(a, in_place ? ba + 1 : ba, ntiles, sz, threads);
    run(b, in_place ? bb + 1 : bb, ntiles, sz, threads);
    if (memcmp(ya, yb, (size_t)(total + 2 * GUARD) * sizeof *ya) != 0) {
        int64_t j = 0;
        while (memcmp(&ya[j], &yb[j], sizeof *ya) == 0)
            j++;
        fail_msg("rows %lld n %lld pad %lld tile %lld off %d threads %d: element %lld differs (%a vs %a)",
                 (long long)rows, (long long)n, (long long)pad, (long long)bw, off, threads,
                 (long long)(j - GUARD - off), (double)ya[j], (double)yb[j]);
    }
    free(x);
    free(ya);
    free(yb);
}

static const int64_t lens[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 39, 40, 41, 63, 64, 65, 100, 127,
                               128, 129, 1000, 16383, 16384, 16385, MAXN};

/* 1-D P1, normal or in place: every misalignment, every length, tiles of
 * 16384 (lower.c's width) and of 100 (a peel in every tile), 1 and 2 threads. */
static void check_p1(bool in_place)
{
    cg_kernel ka, kb;
    p1_kernel(&ka, 0, in_place, false);
    p1_kernel(&kb, 0, in_place, true);
    cg_compiled oa, ob;
    cg_kernel_fn a = get(&ka, 0, &oa), b = get(&kb, 0, &ob);
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
        for (int off = 0; off < MAXOFF; off++)
            for (int threads = 1; threads <= 2; threads++) {
                compare(a, b, &ka, 1, lens[l], 0, 16384, off, threads);
                compare(a, b, &ka, 1, lens[l], 0, 100, off, threads);
            }
    cg_jit_release(a);
    cg_jit_release(b);
    cg_compiled_clear(&oa);
    cg_compiled_clear(&ob);
}

static void test_nt_p1_every_misalignment(void **state) { check_p1(false); }
static void test_nt_p1_in_place(void **state) { check_p1(true); }

/* 2-D: rows of n floats, row stride n + pad, so consecutive rows start at
 * other misalignments; also the rows kernel (reduce, then a streamed stage). */
static void test_nt_rows(void **state)
{
    cg_kernel ka, kb, ra, rb;
    p1_kernel(&ka, 1, false, false);
    p1_kernel(&kb, 1, false, true);
    rows_kernel(&ra, false);
    rows_kernel(&rb, true);
    cg_compiled o[4];
    cg_kernel_fn a = get(&ka, 0, &o[0]), b = get(&kb, 0, &o[1]), c = get(&ra, 0, &o[2]), d = get(&rb, 0, &o[3]);
    static const int64_t ns[] = {1, 5, 8, 13, 33, 64, 70, 1001};
    for (size_t l = 0; l < sizeof ns / sizeof *ns; l++)
        for (int pad = 0; pad < 8; pad += 3)
            for (int off = 0; off < MAXOFF; off += 1 + (pad == 3))
                for (int threads = 1; threads <= 2; threads++) {
                    compare(a, b, &ka, 9, ns[l], pad, 16384, off, threads);
                    compare(a, b, &ka, 9, ns[l], pad, 32, off, threads);
                    compare(c, d, &ra, 9, ns[l], pad, 0, off, threads);
                }
    for (int i = 0; i < 4; i++) {
        cg_jit_release(o[i].fn);
        cg_compiled_clear(&o[i]);
    }
}

/* The nt kernel streams with vector stores and ends with an sfence; the
 * other has neither. Its text (the cache key) says so. */
static void test_nt_asm(void **state)
{
    cg_kernel ka, kb;
    p1_kernel(&ka, 0, false, false);
    p1_kernel(&kb, 0, false, true);
    cg_compiled oa, ob;
    get(&ka, CG_EMIT_ASM, &oa);
    get(&kb, CG_EMIT_ASM, &ob);
    const char *reg = __builtin_cpu_supports("avx512f") ? "vmovntps\t%zmm" : "vmovntps\t%ymm";
    if (!strstr(ob.asm_text, reg))
        fail_msg("the nt kernel has no `%s`:\n%s", reg, ob.asm_text);
    assert_non_null(strstr(ob.asm_text, "sfence"));
    assert_null(strstr(oa.asm_text, "movnt"));
    assert_null(strstr(oa.asm_text, "sfence"));
    char *ta = cg_kernel_text(&ka, "k"), *tb = cg_kernel_text(&kb, "k");
    assert_null(strstr(ta, " nt:"));
    assert_non_null(strstr(tb, "stage 0 nt:"));
    free(ta);
    free(tb);
    cg_jit_release(oa.fn);
    cg_jit_release(ob.fn);
    cg_compiled_clear(&oa);
    cg_compiled_clear(&ob);
}

static tj_tensor *model_p1(void *ctx, tj_tensor *const *a, int n)
{
    return tj_add(tj_mul(tj_tanh(a[0]), tj_sigmoid(tj_mul_s(a[0], 1.702))), tj_mul_s(a[0], 0.5));
}

static tj_tensor *model_cheap(void *ctx, tj_tensor *const *a, int n)
{
    return tj_add(tj_mul(a[0], a[0]), tj_mul_s(a[0], 0.5));
}

static tj_tensor *model_softmax(void *ctx, tj_tensor *const *a, int n) { return tj_softmax(a[0], -1); }

static tj_tensor *model_layer_norm(void *ctx, tj_tensor *const *a, int n)
{
    return tj_layer_norm(a[0], 1, NULL, NULL, 1e-5);
}

/* Compiles fn over x f32[rows, cols] with the kernels dumped; whether a
 * stage streams. The result must be eager's (bits for pointwise models). */
static bool compiled_nt(tj_model_fn fn, int64_t rows, int64_t cols, bool exact)
{
    char dir[] = "/tmp/tjit-nt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TJIT_DUMP", "kernels", 1);
    setenv("TJIT_DUMP_DIR", dir, 1);
    tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){rows, cols});
    tj_compiled *c = tj_compile(fn, NULL, &(tj_compile_options){.name = "ntcase"});
    tj_tensor *got = tj_call(c, &x, 1);
    unsetenv("TJIT_DUMP");
    unsetenv("TJIT_DUMP_DIR");
    assert_non_null(got);
    tj_tensor *want = fn(NULL, &x, 1);
    if (exact)
        assert_memory_equal(tj_data(got), tj_data(want), (size_t)(rows * cols) * sizeof(float));
    else
        tu_assert_close(got, want, 1e-5, 1e-5);
    tj_compiled_free(c);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "grep -q ' nt:' %s/*-ntcase.kernels.txt", dir);
    int rc = system(cmd);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return rc == 0;
}

/* lower.c: streaming from cg_nt_min_bytes of output on, not below; not
 * where a formula call per element makes the loop arithmetic-bound (unless
 * TJIT_NT_STORES=2), not when the stage reads its output back (softmax);
 * layer_norm's last stage streams. */
static void test_nt_threshold(void **state)
{
    int64_t min = cg_nt_min_bytes();
    if (min < 0) {
        assert_false(compiled_nt(model_cheap, 1024, 1024, true));
        skip();   /* TJIT_NT_STORES=0: the kernels never stream */
    }
    if (min > (64 << 20))
        skip();   /* a threshold beyond what a test should allocate */
    int64_t hi = (min + 3) / 4;
    if (hi < 16)
        skip();   /* TJIT_NT_MIN_BYTES of a few floats: no threshold to test */
    assert_true(compiled_nt(model_cheap, 1, hi, true));
    assert_false(compiled_nt(model_cheap, 1, hi - 1, true));
    assert_int_equal(compiled_nt(model_p1, 1, hi, true), cg_nt_mode() == 2);
    int64_t rows = (hi + 1023) / 1024;
    assert_false(compiled_nt(model_softmax, rows, 1024, false));
    assert_true(compiled_nt(model_layer_norm, rows, 1024, false));
}

int main(void)
{
    tu_use_build_cache();
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tu_scope_setup, tu_scope_teardown)
        T(test_nt_p1_every_misalignment),
        T(test_nt_p1_in_place),
        T(test_nt_rows),
        T(test_nt_asm),
        T(test_nt_threshold),
#undef T
    };
    return tu_run_jit_suite("codegen_nt", tests, sizeof tests / sizeof tests[0], "no kernels to compare");
}
