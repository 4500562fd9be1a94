/* conv_direct.h - internal to the runtime: the direct f32, bf16 and f16 convolution
 * (runtime/k_conv_direct.c), register-blocked micro-kernels per instruction
 * set (k_conv_direct_avx512.c, k_conv_direct_avx2.c), which k_conv.c's
 * conv2d chooses per shape. */
#ifndef TJ_RT_CONV_DIRECT_H
#define TJ_RT_CONV_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

#include <tjit.h>

#include "../ir/half.h"

/* One conv2d's shape: input [n, c, h, w] with element strides xs (n, c, h,
 * w); weight [o, c/groups, kh, kw] with element strides ws; output
 * [n, o, oh, ow], contiguous. */
typedef struct rt_conv_shape {
    int64_t n, c, h, w, xs[4];
    int64_t o, groups, kh, kw, ws[4];
    int64_t sh, sw, ph, pw, dh, dw, oh, ow;
} rt_conv_shape;

/* Whether the direct kernel runs this conv (f32, bf16 or f16) on this CPU and is
 * expected to beat the GEMM paths (the rule measured in docs/perf.md);
 * TJIT_CONV=direct or TJIT_CONV=gemm overrides the expectation (not the
 * CPU). */
bool rt_conv_direct_wins(const rt_conv_shape *s);

/* y = conv(x, w) + bias (bias NULL or [o] with stride bstride), all of
 * dtype dt: f32, or bf16 or f16: then x and w are widened to f32 as they
 * are copied to the phase planes and packed (exact; f16 by F16C where the
 * CPU has it), the sums run in f32 as they do for f32 operands, and y is
 * rounded once to dt (RNE, rt_conv_narrow). w is the weight tensor (read
 * as s->ws says); its storage names it to the kept prepared weights
 * (k_conv_direct.c). Returns -1 with the error recorded when out of
 * memory. */
int rt_conv_direct(const rt_conv_shape *s, tj_dtype dt, const void *x, const tj_tensor *w,
                   const void *bias, int64_t bstride, void *y);

/* A conv's pointwise epilogue and max pool run on its output rows as the
 * row kernel makes them (sched/cpost.c plans it; runtime/k_conv_post.c):
 * v = conv * scale[o] (scale NULL: none), v = v + shift[o] (NULL: none),
 * v = relu(v) when relu, each rounded as the plan's kernel rounds it, then
 * a max pool (square k x k window, 2 or 3, stride 2, undilated, padding
 * padh, padw) into py, [o][poh][pow] contiguous: the same bits as the conv,
 * the kernel and max_pool2d run one after the other, and the conv's output
 * is never stored. */
typedef struct rt_conv_post {
    const float *scale, *shift;   /* [o] each, or NULL */
    bool relu;
    int k, padh, padw;
    int64_t poh, pow;
    float *py;
} rt_conv_post;

/* Output channels in bands (a blocked region's conv, sched/block.c): while
 * set on the calling thread, the next rt_conv_direct of one image, one
 * group, on the grid kernel, with more than `chans` output channels (a
 * multiple of its channel block) computes its output `chans` channels at a
 * time, band [o0, o1) stored at y moved back by o0 planes (so every band
 * lands where the first one starts: a small area that stays in cache), and
 * calls done(ctx, o0, o1) after each band (nonzero: stop, the error
 * recorded); sets `used`. Each output is the same block's same sums as
 * without bands. Else the call runs whole and leaves `used` false. */
typedef struct rt_conv_band {
    int64_t chans;
    /* Row bands instead (rows > 0, fewer than the output's; grid or row
     * kernel): `rows` output rows of every channel at a time, row r of band
     * [r0, r1) of channel o stored at element o * rcs + (r - r0 + rtop) * ow
     * of ry; done(ctx, r0, r1) after each band. */
    int64_t rows, rcs, rtop;
    void *ry;
    void *ctx;
    int (*done)(void *ctx, int64_t o0, int64_t o1);
    /* Or (post non-NULL) the epilogue and pool on the rows, where the call
     * is f32, one image, one group, on the row kernel (else it runs whole,
     * `used` false) */
    const rt_conv_post *post;
    /* Nonzero: the calls made under this token (one run of a region: its
     * images) read weights that do not change between them, so kept
     * prepared weights that one of them matched by content are found again
     * by the weights' address alone (k_conv_direct.c, prepare_weights) */
    uint64_t token;
    bool used;
    bool posted;   /* the post ran (and `used`) */
} rt_conv_band;

void rt_conv_band_set(rt_conv_band *b);   /* NULL: off */
rt_conv_band *rt_conv_band_get(void);     /* the calling thread's, or NULL */
/* Tests: bands run so far (calls of done). */
int64_t rt_conv_band_runs(void);

/* The row kernel's output rows for rt_conv_post_run: bias(ctx, ob, b)
 * sets b[lanes] to the bias of channels [ob*lanes, ob*lanes + lanes) (0
 * past the last), row(ctx, ob, oh, b, buf) writes their output row oh of
 * the one image to buf [cols][lanes] (columns past ow computed and
 * dropped). put: the set's rows_put (NULL: element by element), vl
 * positions at a time. */
typedef struct rt_conv_rowsrc {
    int64_t o, oh, ow, lanes, nob, cols, vl;
    const void *ctx;
    void (*bias)(const void *ctx, int64_t ob, float *b);
    void (*row)(const void *ctx, int64_t ob, int64_t oh, const float *b, float *buf);
    void (*put)(const float *tile, int64_t lanes, int64_t no, int64_t np, float *y, int64_t ys);
} rt_conv_rowsrc;
/* Runs q over src's rows on the calling thread: 0, or -1 with the error
 * recorded when out of memory. */
int rt_conv_post_run(const rt_conv_rowsrc *src, const rt_conv_post *q);
/* Tests: calls of rt_conv_post_run so far (one per image). */
int64_t rt_conv_post_runs(void);

/* max_pool2d on the calling thread computes only output rows [oh0, oh1)
 * (reading only the input rows they read) while set; (0, 0): all. Only for
 * the windows rt_pool_rows_fit takes (k_conv.c: 2x2 and 3x3 at stride 2,
 * undilated, on rows of unit stride); the same bits as the whole call. */
struct ir_attrs;
void rt_pool_rows_set(int64_t oh0, int64_t oh1);
bool rt_pool_rows_fit(const struct ir_attrs *a);

/* ---- instruction sets ------------------------------------------------------------------ */

/* The kernels' instruction set, the GEMM's (tjg_isa_current: the best the
 * CPU and OS have, capped by TJIT_ISA and tjg_isa_force; its AVX-512
 * variants -> AVX-512, AVX2 -> AVX2, generic -> none), further capped by
 * rt_conv_isa_force. */
typedef enum rt_conv_isa { RT_CONV_NONE, RT_CONV_AVX2, RT_CONV_AVX512, RT_CONV_NISA } rt_conv_isa;

rt_conv_isa rt_conv_isa_current(void);
/* Tests: cap the instruction set at isa (-1: no cap). */
void rt_conv_isa_force(int isa);
/* The direct kernels: grid, row, Winograd F(2x2, 3x3), F(4x4, 3x3). */
typedef enum rt_conv_kind {
    RT_CONV_GRID,
    RT_CONV_ROWS,
    RT_CONV_WINO,
    RT_CONV_WINO4,
    RT_CONV_NKIND
} rt_conv_kind;

/* Tests: direct convs run so far on isa by kernel kind, counted by every
 * call of rt_conv_direct. */
int64_t rt_conv_direct_runs(rt_conv_isa isa, rt_conv_kind kind);
/* Tests: calls whose packed or transformed weights came from the kept ones
 * (the same raw weights, compared in full, for the same layout). */
int64_t rt_conv_weight_hits(void);

/* out[...] = b + the sums over cg channels (planes `plane` floats apart) and
 * ntap taps (offsets toff) of packed weights wp: one micro-kernel. The grid
 * kernel's output channel o starts at out + o * os (its tile: os = qv*vl);
 * the row kernel ignores os (out[P][VL*KV]). */
typedef void (*rt_conv_block_fn)(const float *xp, const float *wp, int64_t cg, int64_t plane,
                                 const int64_t *toff, int64_t ntap, const float *b, float *out,
                                 int64_t os);

/* Where the Winograd output transform writes one block: M holds, per
 * transform position xi (mxs floats apart), [ob][kb (kbs per ob)][ko][qn]
 * sums of output channel ob*ko + o at tile grid positions q0 + kb*qn + p;
 * tile (ty, tx) = (q / wq, q % wq) of F(m x m, 3x3) is output rows m*ty ..
 * m*ty + m-1, columns m*tx .. m*tx + m-1 (those inside oh x ow); y is
 * output channel 0 of the block, [no][oh][ow], bias[no] or NULL. */
typedef struct rt_conv_wino_out {
    void *y;            /* of dtype dt: f32, bf16 or f16 */
    tj_dtype dt;
    bool f16c;          /* f16 with F16C (tjg_f16c()): whole rows by vcvtps2ph */
    const float *bias;
    int64_t no, ko, qn, nob, nkb, kbs;
    int64_t q0, wq, tyn, txn, oh, ow;
} rt_conv_wino_out;

/* One instruction set's micro-kernels (k_conv_direct.c's geometry, packing,
 * phase planes and rule are shared; the rule's numbers are per set).
 *   grid: ko output channels x qv vectors of vl positions; the first entry
 *         with ko <= channels per group is taken (the last has ko 1).
 *   rows: vl*kv output channels x len positions of one output row, per kv
 *         (1, 2) up to 4 lengths (0 ends the list), fn[kv-1][length index]. */
typedef struct rt_conv_kernels {
    int vl;
    struct { int ko, qv; rt_conv_block_fn fn; } grid[3];
    /* grid: the first entry's ko with qv vectors, for the last positions of
     * an output row when blocks start at every row (fn NULL: none) */
    struct { int ko, qv; rt_conv_block_fn fn; } tail;
    /* F(4x4)'s GEMMs: this block where its ko <= channels per group (fn
     * NULL: the grid kernel's), so a block's 36 planes of transformed tiles
     * and products stay in L2 */
    struct { int ko, qv; rt_conv_block_fn fn; } wgrid;
    int rlen[2][4];
    rt_conv_block_fn rows[2][4];
    /* the row kernel's f32 stores (NULL: element by element): y[o*ys + p] =
     * tile[p*lanes + o] for o < no, p < np (np <= vl, lanes <= 2*vl) */
    void (*rows_put)(const float *tile, int64_t lanes, int64_t no, int64_t np, float *y,
                     int64_t ys);
    /* Winograd F(2x2, 3x3) transforms (NULL: none): in, the 4x4 input tiles
     * at the npos grid positions of xp (tile offsets toff, channels plane
     * floats apart) to v[xi*vxs + c*npos + p]; out, the 2x2 output tiles
     * from the products (rt_conv_wino_out). */
    void (*wino_in)(const float *xp, int64_t cg, int64_t plane, const int64_t *toff,
                    int64_t npos, float *v, int64_t vxs);
    void (*wino_out)(const float *m, int64_t mxs, const rt_conv_wino_out *g);
    /* Winograd F(4x4, 3x3): the same with 6x6 input tiles (36 positions)
     * and 4x4 output tiles */
    void (*wino4_in)(const float *xp, int64_t cg, int64_t plane, const int64_t *toff,
                     int64_t npos, float *v, int64_t vxs);
    void (*wino4_out)(const float *m, int64_t mxs, const rt_conv_wino_out *g);
    double rows_gain;   /* rule: the row kernel when it keeps this much more */
    int rows_c;         /* rule: ... and has at least this many input channels per group */
    double min_keep;    /* rule: direct only when it keeps this share of its work */
    bool strided_gemm;  /* rule: the GEMM paths for strides > 1 with 8+ channels per group */
    /* rule: Winograd from wino_c[0] input channels per group when it keeps
     * wino_keep[0] of its work, from wino_c[1] when it keeps wino_keep[1] */
    int wino_c[2];
    double wino_keep[2];
    /* rule: where F(2x2) is taken, F(4x4) instead from wino4_c input
     * channels per group when its products per kept output are at most
     * wino4_gain of F(2x2)'s */
    int wino4_c;
    double wino4_gain;
} rt_conv_kernels;

extern const rt_conv_kernels rt_conv_avx2, rt_conv_avx512;

/* d[q] = src[q] rounded to f16 (vcvtps2ph where the CPU has F16C, else
 * ir/half.h: the same bits) for q < n (k_conv_direct.c). */
void rt_conv_narrow_f16(uint16_t *d, const float *src, int64_t n);

/* d[q] = src[q] rounded to bf16, or f16 when dt is TJ_F16 (round to
 * nearest even: ir/half.h) for q < n; inlined into each set's stores,
 * where bf16's vectorizes. */
static inline void rt_conv_narrow(tj_dtype dt, uint16_t *restrict d, const float *restrict src,
                                  int64_t n)
{
    if (dt == TJ_F16) {
        rt_conv_narrow_f16(d, src, n);
        return;
    }
    for (int64_t q = 0; q < n; q++)
        d[q] = ir_f32_to_bf16(src[q]);
}

/* Largest tiles over the sets: floats of a grid block (ko*qv*vl), of a row
 * block (len*kv*vl), and the most output channels of one. */
#define RT_CONV_TILE 512
#define RT_CONV_LANES 32

#endif
