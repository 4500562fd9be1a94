/* test_gemm_f16.c - tjit's own f16 GEMM (runtime/gemm.h, TJG_F16): every
 * variant this CPU supports (generic: the portable kernel; avx2: the F16C
 * kernel, where cpuid has f16c; avx512: its f32 kernel on operands widened
 * by F16C; a variant the CPU lacks is named as skipped) against a scalar
 * reference bit
 * for bit: f16 operands widened exactly, f32 FMA sums over k in order, in
 * k-blocks of 256 (the GEMM's), the bias, one rounding to nearest even
 * (ties to even, subnormal results, overflow to inf; a NaN result is
 * compared as a NaN, its payload is the FMA's choice); odd shapes, A and B
 * transposed, f32 A rounded as packed, accumulate, 1 and 2 threads. The
 * same bits as tjit's f32 GEMM on the widened operands, rounded once. The
 * F16C feature bit: never used without it, the generic fallback with the
 * variant masked (tjg_isa_force). Eager f16 matmul and linear (k_matmul.c)
 * equal the reference and lie within one f16 rounding step of the old
 * widen-to-f32 path (OpenBLAS sums in another order); linear and conv2d
 * compiled equal eager, the frozen weight kept packed as f16. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../ir/half.h"
#include "../runtime/gemm.h"
#include "../runtime/kernels.h"
#include "../runtime/rt.h"
#include "util.h"
#include "util_gemm.h"

typedef struct dims { int64_t m, n, k; } dims;

/* Around MR (12), NR (32), the AVX2 sub-tiles (6 x 16), the row blocks (96,
 * 264), the k-blocks (256 k); k = 0, 1 and odd (half a pair). */
static const dims shapes[] = {{1, 1, 1},     {13, 33, 7},    {12, 32, 256}, {37, 70, 300},
                              {97, 65, 513}, {5, 100, 1030}, {3, 2, 0},     {7, 17, 1},
                              {25, 47, 5},   {300, 97, 520}, {265, 64, 257}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

enum { KB = 256 };   /* k per k-block of the f16 GEMM (KCG_WIDE pairs) */

static float frand(unsigned *s) { return tu_frand(s); }

/* The variants to run: those the CPU has, named as skipped otherwise. */
static int variants(tjg_isa *out)
{
    int n = tu_gemm_variants(out, TJG_AVX512, " (f16)");
    if (!tjg_f16c_usable(TJG_AVX2, tjg_cpu_features()))
        printf("#summary skipped the F16C kernel: this CPU lacks f16c or avx2\n");
    return n;
}

/* f16 bits of an m x k (or k x n) operand: values in [-0.5, 0.5) with,
 * where special, subnormals, a row (column) of tiny values (subnormal
 * results), one of 255s (sums overflowing to inf), an inf and a NaN. */
static void fill16(uint16_t *x, int64_t rows, int64_t cols, unsigned seed, bool special)
{
    for (int64_t i = 0; i < rows * cols; i++)
        x[i] = ir_f32_to_f16(frand(&seed));
    if (!special || rows < 8 || cols < 2)
        return;
    for (int64_t c = 0; c < cols; c++) {
        x[2 * cols + c] = (uint16_t)((c % 3 ? 0x0001 : 0x03ff) | (c % 2 ? 0x8000 : 0));
        x[3 * cols + c] = (uint16_t)(0x0400 | (c % 2 ? 0x8000 : 0));   /* 2^-14 */
        x[4 * cols + c] = 0x5bf8;                                     /* 255 */
    }
    x[5 * cols + cols / 2] = 0x7c00;   /* inf */
    x[6 * cols + cols - 1] = 0x7e00;   /* NaN */
    x[7 * cols] = 0xfc00;              /* -inf */
}

/* The reference: element (i, kk) of A at a[i*ars + kk*acs] (f16 bits, or f32
 * rounded to f16 when af is set), B's (kk, j) at b[kk*brs + j*bcs]. */
typedef struct gref {
    dims d;
    const uint16_t *a, *b;
    const float *af;
    int64_t ars, acs, brs, bcs;
    const float *bias;
    const uint16_t *c0;   /* accumulate onto these (f16), or NULL */
} gref;

static float ref_a(const gref *r, int64_t i, int64_t kk)
{
    int64_t o = i * r->ars + kk * r->acs;
    return ir_f16_to_f32(r->af ? ir_f32_to_f16(r->af[o]) : r->a[o]);
}

static uint16_t ref_elem(const gref *r, int64_t i, int64_t j)
{
    float tot = 0;
    for (int64_t k0 = 0; k0 < r->d.k; k0 += KB) {
        float s = 0;
        for (int64_t kk = k0; kk < r->d.k && kk < k0 + KB; kk++)
            s = fmaf(ref_a(r, i, kk), ir_f16_to_f32(r->b[kk * r->brs + j * r->bcs]), s);
        tot = k0 ? tot + s : s;
    }
    float v = tot;
    if (r->c0)
        v += ir_f16_to_f32(r->c0[i * r->d.n + j]);
    if (r->bias)
        v += r->bias[j];
    return ir_f32_to_f16(v);
}

static bool is_nan16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

static void check16(const uint16_t *got, const gref *r, const char *what)
{
    for (int64_t i = 0; i < r->d.m; i++)
        for (int64_t j = 0; j < r->d.n; j++) {
            uint16_t g = got[i * r->d.n + j], w = ref_elem(r, i, j);
            if (g != w && !(is_nan16(g) && is_nan16(w)))
                fail_msg("%s: [%lld,%lld]: 0x%04x, want 0x%04x", what, (long long)i,
                         (long long)j, g, w);
        }
}

/* One shape: A as given (f16, transposed or not, or f32), B packed from
 * rows or from a transposed copy (the linear weight's packing), bias,
 * accumulate. */
static void f16_case(tjg_isa isa, dims d, int layout)
{
    bool at = layout & 1, bt = layout & 2, af32 = layout & 4, acc = layout & 8;
    int64_t na = d.m * d.k, nb = d.k * d.n, nc = d.m * d.n;
    uint16_t *a = malloc((size_t)(na + 1) * 2), *b = malloc((size_t)(nb + 1) * 2),
             *bt16 = malloc((size_t)(nb + 1) * 2), *c = malloc((size_t)(nc + 1) * 2),
             *c0 = malloc((size_t)(nc + 1) * 2);
    float *a32 = malloc((size_t)(na + 1) * 4), *bias = malloc((size_t)(d.n + 1) * 4);
    fill16(a, d.m, d.k, 1, true);
    fill16(b, d.k, d.n, 2, d.n >= 8);
    fill16(c0, d.m, d.n, 3, false);
    unsigned s = 4;
    for (int64_t i = 0; i < na; i++)
        a32[i] = frand(&s) * 3;
    for (int64_t j = 0; j < d.n; j++)
        bias[j] = j % 5 ? frand(&s) : 0.0f;
    uint16_t *at16 = malloc((size_t)(na + 1) * 2);
    for (int64_t i = 0; i < d.m; i++)   /* A^T stored: A(i, kk) at i + kk*m */
        for (int64_t kk = 0; kk < d.k; kk++)
            at16[kk * d.m + i] = a[i * d.k + kk];
    for (int64_t kk = 0; kk < d.k; kk++)
        for (int64_t j = 0; j < d.n; j++)
            bt16[j * d.k + kk] = b[kk * d.n + j];
    gref r = {.d = d, .a = at ? at16 : a, .b = b, .af = af32 ? a32 : NULL,
              .ars = at && !af32 ? 1 : d.k, .acs = at && !af32 ? d.m : 1, .brs = d.n, .bcs = 1,
              .bias = bias, .c0 = acc ? c0 : NULL};
    tjg_packed p;
    assert_int_equal(bt ? tjg_pack_f16(&p, bt16, 1, d.k, d.k, d.n)
                        : tjg_pack_f16(&p, b, d.n, 1, d.k, d.n), 0);
    assert_int_equal(p.type, TJG_F16);
    memcpy(c, c0, (size_t)(nc + 1) * 2);
    tjg_epilogue e = {.bias = bias, .out_f16 = true, .accumulate = acc};
    const void *ap = af32 ? (const void *)a32 : (const void *)r.a;
    assert_int_equal(tjg_gemm(d.m, ap, !af32, r.ars, r.acs, &p, c, d.n, &e, NULL), 0);
    char what[128];
    snprintf(what, sizeof what, "f16 %s %lldx%lldx%lld%s%s%s%s threads %d", tjg_isa_name(isa),
             (long long)d.m, (long long)d.n, (long long)d.k, at && !af32 ? " a^T" : "", bt ? " b^T" : "",
             af32 ? " a:f32" : "", acc ? " acc" : "", tj_num_threads());
    check16(c, &r, what);
    tjg_packed_free(&p);
    free(a), free(b), free(bt16), free(c), free(c0), free(a32), free(bias), free(at16);
}

/* One variant's cases: every layout on the small shapes, a third of them
 * (and layout 0) on the others. */
static void f16_cases(tjg_isa isa, void *ctx)
{
    (void)ctx;
    for (size_t s = 0; s < NSHAPES; s++)
        for (int layout = 0; layout < 16; layout++)
            if (layout == 0 || s % 3 == (size_t)layout % 3 || shapes[s].m * shapes[s].n < 4000)
                f16_case(isa, shapes[s], layout);
}

static void test_f16_variants(void **state)
{
    (void)state;
    tu_gemm_each(TJG_AVX512, " (f16)", f16_cases, NULL);
}

/* Sums that fall exactly halfway between two f16 values: 1 + j 2^-10 +
 * 2^-11 (and the same negated, and 2048 + 2j + 1, where f16's step is 2)
 * round to the even neighbour; subnormal inputs and results (2^-15 rows);
 * with a bias, 65505 rounds down to 65504 (below 65520), 1e5 to inf. */
static void test_f16_ties(void **state)
{
    (void)state;
    enum { M = 4, K = 2, N = 40 };
    uint16_t a[M * K], b[K * N], c[M * N], want[M * N];
    const float rows[M][K] = {{1, 1}, {-1, -1}, {2048, 2048}, {0x1p-15f, 0x1p-15f}};
    for (int i = 0; i < M; i++)
        for (int kk = 0; kk < K; kk++)
            a[i * K + kk] = ir_f32_to_f16(rows[i][kk]);
    for (int j = 0; j < N; j++) {
        b[j] = ir_f32_to_f16(1 + (float)j * 0x1p-10f);
        b[N + j] = ir_f32_to_f16(0x1p-11f);
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double x = 0;
            for (int kk = 0; kk < K; kk++)
                x += (double)ir_f16_to_f32(a[i * K + kk]) * ir_f16_to_f32(b[kk * N + j]);
            want[i * N + j] = ir_f32_to_f16((float)x);   /* the f32 sum is exact here */
        }
    /* rounding to even by hand: row 0, column j: 1 + j 2^-10 + 2^-11 ->
     * the even of the two neighbours */
    for (int j = 0; j < N; j++) {
        uint16_t lo = ir_f32_to_f16(1 + (float)j * 0x1p-10f);
        assert_int_equal(want[j], lo & 1 ? lo + 1 : lo);
        assert_int_equal(want[N + j], (lo & 1 ? lo + 1 : lo) | 0x8000);
        lo = ir_f32_to_f16(2048 + 2 * (float)j);
        assert_int_equal(want[2 * N + j], lo & 1 ? lo + 1 : lo);
    }
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    float bias[N];
    for (int j = 0; j < N; j++)
        bias[j] = j == 3 ? 65504.0f : j == 4 ? 1e5f : 0.0f;
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        tjg_packed p;
        assert_int_equal(tjg_pack_f16(&p, b, N, 1, K, N), 0);
        assert_int_equal(tjg_gemm(M, a, true, K, 1, &p, c, N, &(tjg_epilogue){.out_f16 = true},
                                  NULL), 0);
        assert_memory_equal(c, want, sizeof c);
        /* the bias: 65504 + (1 + 3 2^-10 + 2^-11) rounds to 65504 (below
         * 65520), + 1e5 overflows to inf */
        assert_int_equal(tjg_gemm(M, a, true, K, 1, &p, c, N,
                                  &(tjg_epilogue){.out_f16 = true, .bias = bias}, NULL), 0);
        assert_int_equal(c[3], 0x7bff);
        assert_int_equal(c[4], 0x7c00);
        assert_int_equal(c[N + 4], 0x7c00);   /* -1.0... + 1e5 */
        tjg_packed_free(&p);
    }
    tjg_isa_force(-1);
}

/* The f16 GEMM gives the bits of tjit's f32 GEMM on the widened operands
 * (the same kernels and k-blocks), rounded once: every variant, NaNs too. */
static void test_f16_equals_f32_gemm(void **state)
{
    (void)state;
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    static const dims ds[] = {{300, 97, 520}, {37, 70, 300}, {13, 33, 7}, {5, 100, 1030}};
    for (int v = 0; v < nv; v++) {
        tjg_isa_force(vs[v]);
        for (size_t s = 0; s < sizeof ds / sizeof *ds; s++) {
            dims d = ds[s];
            int64_t na = d.m * d.k, nb = d.k * d.n, nc = d.m * d.n;
            uint16_t *a = malloc((size_t)na * 2), *b = malloc((size_t)nb * 2),
                     *c = malloc((size_t)nc * 2);
            float *aw = malloc((size_t)na * 4), *bw = malloc((size_t)nb * 4),
                  *cw = malloc((size_t)nc * 4), *bias = malloc((size_t)d.n * 4);
            fill16(a, d.m, d.k, 11, true);
            fill16(b, d.k, d.n, 12, true);
            unsigned seed = 13;
            for (int64_t j = 0; j < d.n; j++)
                bias[j] = frand(&seed);
            for (int64_t i = 0; i < na; i++)
                aw[i] = ir_f16_to_f32(a[i]);
            for (int64_t i = 0; i < nb; i++)
                bw[i] = ir_f16_to_f32(b[i]);
            tjg_packed p16, p32;
            assert_int_equal(tjg_pack_f16(&p16, b, d.n, 1, d.k, d.n), 0);
            assert_int_equal(tjg_pack_f32(&p32, bw, d.n, 1, d.k, d.n), 0);
            assert_int_equal(tjg_gemm(d.m, a, true, d.k, 1, &p16, c, d.n,
                                      &(tjg_epilogue){.bias = bias, .out_f16 = true}, NULL), 0);
            assert_int_equal(tjg_gemm(d.m, aw, false, d.k, 1, &p32, cw, d.n,
                                      &(tjg_epilogue){.bias = bias}, NULL), 0);
            for (int64_t i = 0; i < nc; i++)
                if (c[i] != ir_f32_to_f16(cw[i]))
                    fail_msg("%s %lldx%lldx%lld: element %lld: 0x%04x, f32 GEMM rounded 0x%04x",
                             tjg_isa_name(vs[v]), (long long)d.m, (long long)d.n,
                             (long long)d.k, (long long)i, c[i], ir_f32_to_f16(cw[i]));
            tjg_packed_free(&p16), tjg_packed_free(&p32);
            free(a), free(b), free(c), free(aw), free(bw), free(cw), free(bias);
        }
    }
    tjg_isa_force(-1);
}

/* F16C is its own cpuid bit: the kernel needs it and AVX2; this CPU's bit
 * as the compiler's runtime check reads it; masked (the variant capped to
 * generic) the portable kernel runs, and gives the same bits. */
static void test_f16c_feature(void **state)
{
    (void)state;
    unsigned all = TJG_F_AVX2 | TJG_F_F16C;
    assert_true(tjg_f16c_usable(TJG_AVX2, all));
    assert_true(tjg_f16c_usable(TJG_AVX512, all | TJG_F_AVX512));
    assert_false(tjg_f16c_usable(TJG_AVX2, TJG_F_AVX2));      /* f16c masked */
    assert_false(tjg_f16c_usable(TJG_GENERIC, all));          /* TJIT_ISA=generic */
    assert_false(tjg_f16c_usable(TJG_AVX2, TJG_F_F16C));      /* no avx2 */
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    assert_int_equal(!!(tjg_cpu_features() & TJG_F_F16C), !!__builtin_cpu_supports("f16c"));
#endif
    tjg_isa_force(TJG_GENERIC);
    assert_false(tjg_f16c());
    assert_null(tjg_kernel_x86(TJG_F16, TJG_GENERIC).uk);
    tjg_isa_force(-1);
    bool have = tjg_f16c_usable(tjg_isa_current(), tjg_cpu_features());
    assert_int_equal(tjg_f16c(), have);
    assert_true((tjg_kernel_x86(TJG_F16, tjg_isa_current()).widen_b != NULL) == have);
    if (!have)
        printf("#summary skipped the F16C kernel: this CPU lacks f16c or avx2\n");
}

/* vcvtps2ph (the epilogue's rounding with F16C) gives ir_f32_to_f16's bits:
 * ties both ways, subnormals, overflow, NaNs with payloads, signed zeros,
 * and a sweep of f32 bit patterns; lengths with a tail. */
static void test_f16c_rounding(void **state)
{
    (void)state;
    if (!tjg_f16c()) {
        printf("#summary skipped the F16C rounding: this CPU lacks f16c or avx2\n");
        return;
    }
    enum { N = 4099 };
    static float x[N];
    static uint16_t h[N];
    const uint32_t special[] = {0x3f801000, 0x3f803000, 0x3f802fff, 0x477fefff, 0x477ff000,
                                0x477fffff, 0x47800000, 0x7f800000, 0xff800000, 0x7fc00001,
                                0xffa00000, 0x7f800001, 0x33000000, 0x33000001, 0x33c00000,
                                0x387fc000, 0x387fe000, 0x80000000, 0x00000001, 0x38800000};
    for (int i = 0; i < N; i++) {
        uint32_t u = i < (int)(sizeof special / 4) ? special[i] : (uint32_t)i * 2654435761u;
        x[i] = ir_bits_f32(u);
    }
    for (int n = 0; n <= 17; n++) {
        memset(h, 0xab, sizeof h);
        tjg_f32_to_f16_f16c(x, h, n);
        for (int i = 0; i < n; i++)
            assert_int_equal(h[i], ir_f32_to_f16(x[i]));
        assert_int_equal(h[n], 0xabab);   /* nothing written past n */
    }
    tjg_f32_to_f16_f16c(x, h, N);
    for (int i = 0; i < N; i++)
        if (h[i] != ir_f32_to_f16(x[i]))
            fail_msg("0x%08x: 0x%04x, want 0x%04x", ir_f32_bits(x[i]), h[i],
                     ir_f32_to_f16(x[i]));
}

/* ---- tensors: eager kernels, the old path, compiled plans ------------------------------------ */

static tj_tensor *f16_tensor(int nd, const int64_t *shape, unsigned seed)
{
    tj_tensor *t = rt_tensor_new(TJ_F16, nd, shape);
    assert_non_null(t);
    uint16_t *h = rt_ptr(t);
    for (int64_t i = 0; i < tj_numel(t); i++)
        h[i] = ir_f32_to_f16(frand(&seed));
    return t;
}

/* got against the widen-to-f32 path (rt_half_via_f32: OpenBLAS's sums, in
 * another order): at most one f16 step apart; returns how many differ. */
static int64_t vs_old_path(ir_op op, tj_tensor *got, tj_tensor *const *in, int nin)
{
    tj_tensor *old = rt_tensor_new(TJ_F16, got->ndim, got->shape);
    assert_int_equal(rt_half_via_f32(op, old, in, nin, NULL), 0);
    const uint16_t *g = rt_ptr(got), *o = rt_ptr(old);
    int64_t ndiff = 0;
    for (int64_t i = 0; i < tj_numel(got); i++) {
        float x = ir_f16_to_f32(g[i]), y = ir_f16_to_f32(o[i]);
        ndiff += g[i] != o[i];
        if (!(fabsf(x - y) <= fmaxf(fabsf(y) * 0x1p-10f, 0x1p-24f)))
            fail_msg("op %d element %lld: 0x%04x, the f32 path 0x%04x", (int)op,
                     (long long)i, g[i], o[i]);
    }
    tj_release(old);
    return ndiff;
}

/* Eager matmul (batched, B shared: one GEMM) and linear (w^T: the
 * transposed packing; the bias in the epilogue, and broadcast into C where
 * the rows do not fold into one GEMM) on f16 tensors: the reference's bits. */
static void test_f16_tensors(void **state)
{
    (void)state;
    enum { B = 3, M = 50, K = 300, N = 70 };
    tj_tensor *x = f16_tensor(3, (int64_t[]){B, M, K}, 31), *w = f16_tensor(2, (int64_t[]){N, K}, 32),
              *b = f16_tensor(1, (int64_t[]){N}, 33);
    tj_tensor *wt = rt_tensor_view(w, 2, (int64_t[]){K, N}, (int64_t[]){1, K}, 0);
    tj_tensor *y = rt_tensor_new(TJ_F16, 3, (int64_t[]){B, M, N});
    float bias[N];
    for (int j = 0; j < N; j++)
        bias[j] = ir_f16_to_f32(((uint16_t *)rt_ptr(b))[j]);
    gref r = {.d = {B * M, N, K}, .a = rt_ptr(x), .b = rt_ptr(w), .ars = K, .acs = 1, .brs = 1,
              .bcs = K};
    assert_int_equal(rt_kernels[OP_matmul](OP_matmul, y, (tj_tensor *[]){x, wt}, 2, NULL), 0);
    check16(rt_ptr(y), &r, "eager matmul");
    int64_t d1 = vs_old_path(OP_matmul, y, (tj_tensor *[]){x, wt}, 2);
    r.bias = bias;
    assert_int_equal(rt_kernels[OP_linear](OP_linear, y, (tj_tensor *[]){x, w, b}, 3, NULL), 0);
    check16(rt_ptr(y), &r, "eager linear");
    int64_t d2 = vs_old_path(OP_linear, y, (tj_tensor *[]){x, w, b}, 3);
    printf("f16 matmul, linear %dx%dx%d: %lld and %lld of %d elements differ from the "
           "widen-to-f32 path by one step\n", B * M, N, K, (long long)d1, (long long)d2, B * M * N);
    /* rows that do not fold (a gap between batches): the bias broadcast
     * into C, the GEMM accumulating onto it: the same bits */
    tj_tensor *big = rt_tensor_new(TJ_F16, 3, (int64_t[]){B, M + 1, K});
    for (int64_t bi = 0; bi < B; bi++)
        memcpy((uint16_t *)rt_ptr(big) + bi * (M + 1) * K, (uint16_t *)rt_ptr(x) + bi * M * K,
               (size_t)(M * K) * 2);
    tj_tensor *xs = rt_tensor_view(big, 3, (int64_t[]){B, M, K},
                                   (int64_t[]){(M + 1) * K, K, 1}, 0);
    tj_tensor *y2 = rt_tensor_new(TJ_F16, 3, (int64_t[]){B, M, N});
    assert_int_equal(rt_kernels[OP_linear](OP_linear, y2, (tj_tensor *[]){xs, w, b}, 3, NULL), 0);
    assert_memory_equal(rt_ptr(y2), rt_ptr(y), (size_t)(B * M * N) * 2);
    tj_release(y2), tj_release(xs), tj_release(big);
    tj_release(y), tj_release(wt), tj_release(x), tj_release(w), tj_release(b);
}

typedef struct lin_ctx { tj_tensor *w, *b, *cw, *cb; } lin_ctx;

static tj_tensor *model_lin(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    lin_ctx *l = ctx;
    return tj_relu(tj_linear(args[0], l->w, l->b));
}

static tj_tensor *model_conv(void *ctx, tj_tensor *const *args, int nargs)
{
    (void)nargs;
    lin_ctx *l = ctx;
    return tj_relu(tj_conv2d(args[0], l->cw, l->cb, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                             (int64_t[]){1, 1}, 1));
}

/* Bit for bit, or (mag: the sums of |products| behind each element, f32)
 * as far apart as two f32 sums of k products in other orders may be, and
 * then rounded to f16: one f16 step of want plus 2 k 2^-24 mag. */
static void assert_f16_near(tj_tensor *got, tj_tensor *want, tj_tensor *mag, int64_t k, const char *what)
{
    assert_non_null(got);
    assert_non_null(want);
    assert_int_equal(tj_dtype_of(got), TJ_F16);
    assert_int_equal(tj_numel(got), tj_numel(want));
    const uint16_t *g = tj_data(got), *w = tj_data(want);
    const float *m = mag ? tj_data(mag) : NULL;
    for (int64_t i = 0; i < tj_numel(got); i++) {
        float x = ir_f16_to_f32(g[i]), y = ir_f16_to_f32(w[i]);
        if (g[i] != w[i] &&
            !(m && fabsf(x - y) <= fmaxf(fabsf(y) * 0x1p-10f, 0x1p-24f) + 2.0f * (float)k * 0x1p-24f * m[i]))
            fail_msg("%s: element %lld: 0x%04x, eager 0x%04x", what, (long long)i, g[i], w[i]);
    }
}

/* model_conv's sums of |x| |w| (no bias), in f32: the scale of its rounding. */
static tj_tensor *conv_magnitude(lin_ctx *l, tj_tensor *x)
{
    return tj_contiguous(tj_conv2d(tj_abs(tj_cast(x, TJ_F32)), tj_abs(tj_cast(l->cw, TJ_F32)), NULL,
                                   (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, 1));
}

/* linear and conv2d on f16 compiled (frozen or not) equal eager bit for bit,
 * on 1 and 2 threads and under each variant; a frozen f16 weight is kept
 * packed as f16 (2 bytes an element), and an in-place update is seen. But
 * conv2d under generic (no direct kernel: OpenBLAS on widened copies), where
 * the compiled plan runs it image by image (sched/block.c) and OpenBLAS's
 * sums over the smaller tiles come out in another order: as far apart as
 * f32 sums of 144 products may be (near zero, more than one f16 step: seen
 * on a Zen 5, where OpenBLAS picks other kernels). */
static void test_f16_compiled(void **state)
{
    (void)state;
    tjg_isa vs[TJG_NISA];
    int nv = variants(vs);
    int threads = tj_num_threads();
    for (int th = 1; th <= 2; th++)
        for (int v = 0; v < nv; v++)
            for (int freeze = 0; freeze < 2; freeze++) {
                tj_set_num_threads(th);
                tjg_isa_force(vs[v]);
                tj_alloc_trim();
                tj_scope_begin();
                lin_ctx l = {
                    tj_keep(tj_cast(tj_randn(TJ_F32, 2, (int64_t[]){512, 384}), TJ_F16)),
                    tj_keep(tj_cast(tj_randn(TJ_F32, 1, (int64_t[]){512}), TJ_F16)),
                    tj_keep(tj_cast(tj_randn(TJ_F32, 4, (int64_t[]){32, 16, 3, 3}), TJ_F16)),
                    tj_keep(tj_cast(tj_randn(TJ_F32, 1, (int64_t[]){32}), TJ_F16))};
                tj_tensor *x = tj_cast(tj_randn(TJ_F32, 2, (int64_t[]){64, 384}), TJ_F16);
                tj_tensor *xi = tj_cast(tj_randn(TJ_F32, 4, (int64_t[]){2, 16, 20, 20}), TJ_F16);
                tj_compile_options o = {.name = "lin16", .freeze = freeze};
                tj_compiled *c = tj_compile(model_lin, &l, &o);
                o.name = "conv16";
                tj_compiled *cc = tj_compile(model_conv, &l, &o);
                char what[96];
                for (int call = 0; call < 3; call++) {
                    snprintf(what, sizeof what, "linear %s threads %d freeze %d call %d",
                             tjg_isa_name(vs[v]), th, freeze, call);
                    assert_f16_near(tj_call(c, &x, 1), model_lin(&l, &x, 1), NULL, 0, what);
                    assert_true(tjg_cache_bytes() >= (size_t)512 * 384 * 2);
                    snprintf(what, sizeof what, "conv2d %s threads %d freeze %d call %d",
                             tjg_isa_name(vs[v]), th, freeze, call);
                    assert_f16_near(tj_call(cc, &xi, 1), model_conv(&l, &xi, 1),
                                    vs[v] == TJG_GENERIC ? conv_magnitude(&l, xi) : NULL, 16 * 9, what);
                    if (call == 0)   /* in place: the next call must see it */
                        assert_int_equal(tj_mul_s_(l.w, -0.5), 0);
                }
                tj_compiled_free(c);
                tj_compiled_free(cc);
                tj_scope_end();
                tj_release(l.w), tj_release(l.b), tj_release(l.cw), tj_release(l.cb);
                tj_alloc_trim();
                assert_int_equal(tjg_cache_bytes(), 0);
            }
    tj_set_num_threads(threads);
    tjg_isa_force(-1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16c_feature),
        cmocka_unit_test(test_f16c_rounding),
        cmocka_unit_test(test_f16_variants),
        cmocka_unit_test(test_f16_ties),
        cmocka_unit_test(test_f16_equals_f32_gemm),
        cmocka_unit_test(test_f16_tensors),
        cmocka_unit_test(test_f16_compiled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
