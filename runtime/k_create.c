/* k_create.c - eager kernels of the creation and random ops: full, arange,
 * rand, randn. Each writes its (contiguous) output in parallel chunks; the
 * random ones draw from runtime/random.c at the (seed, offset) held in the
 * op's attributes, so the values do not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "iter.h"
#include "kernels.h"
#include "random.h"

/* ---- full ------------------------------------------------------------------------ */

/* value converted like a C cast, but defined for every double: integers
 * truncate and wrap (u8(-1) = 255, like torch), NaN gives 0, bool is v != 0. */
static int64_t to_int(double v)
{
    if (v != v)
        return 0;
    if (v >= 0x1p63)
        return INT64_MAX;
    if (v < -0x1p63)
        return INT64_MIN;
    return (int64_t)v;
}

typedef struct fill_ctx {
    char *p;
    size_t size;
    uint64_t bits;
} fill_ctx;

RT_CLONES static void fill8(uint64_t *restrict p, int64_t n, uint64_t v)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = v;
}

RT_CLONES static void fill4(uint32_t *restrict p, int64_t n, uint32_t v)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = v;
}

RT_CLONES static void fill2(uint16_t *restrict p, int64_t n, uint16_t v)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = v;
}

static void fill_range(void *ctx, int64_t b, int64_t e)
{
    fill_ctx *c = ctx;
    void *p = c->p + b * (int64_t)c->size;
    if (c->size == 8)
        fill8(p, e - b, c->bits);
    else if (c->size == 4)
        fill4(p, e - b, (uint32_t)c->bits);
    else if (c->size == 2)
        fill2(p, e - b, (uint16_t)c->bits);
    else
        memset(p, (int)(c->bits & 0xff), (size_t)(e - b));
}

int rt_k_full(RT_KERNEL_ARGS)
{
    double v = a->a[1].f;
    fill_ctx c = {rt_ptr(out), tj_dtype_size(out->dtype), 0};
    switch (out->dtype) {
    case TJ_F32: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        c.bits = u;
        break;
    }
    case TJ_F64: memcpy(&c.bits, &v, 8); break;
    case TJ_BOOL: c.bits = v != 0; break;
    case TJ_I32: c.bits = (uint32_t)(int32_t)to_int(v); break;
    default: c.bits = (uint64_t)to_int(v); break;   /* i64; u8, i8, i16 keep the low bytes */
    }
    rt_parallel_for(rt_numel(out), RT_GRAIN, fill_range, &c);
    return 0;
}

/* ---- arange ------------------------------------------------------------------------ */

typedef struct arange_ctx {
    void *p;
    tj_dtype dt;
    double start, step;     /* floats: start + step * i in double, then rounded */
    int64_t istart, istep;  /* integers: truncated start and step, like torch */
} arange_ctx;

RT_CLONES static void arange_f32(float *restrict p, int64_t b, int64_t e, double s, double d)
{
    for (int64_t i = b; i < e; i++)
        p[i] = (float)(s + d * (double)i);
}

RT_CLONES static void arange_f64(double *restrict p, int64_t b, int64_t e, double s, double d)
{
    for (int64_t i = b; i < e; i++)
        p[i] = s + d * (double)i;
}

RT_CLONES static void arange_i64(int64_t *restrict p, int64_t b, int64_t e, int64_t s, int64_t d)
{
    for (int64_t i = b; i < e; i++)
        p[i] = s + d * i;
}

RT_CLONES static void arange_i32(int32_t *restrict p, int64_t b, int64_t e, int64_t s, int64_t d)
{
    for (int64_t i = b; i < e; i++)
        p[i] = (int32_t)(s + d * i);
}

RT_CLONES static void arange_u8(uint8_t *restrict p, int64_t b, int64_t e, int64_t s, int64_t d)
{
    for (int64_t i = b; i < e; i++)
        p[i] = (uint8_t)(s + d * i);
}

RT_CLONES static void arange_i16(int16_t *restrict p, int64_t b, int64_t e, int64_t s, int64_t d)
{
    for (int64_t i = b; i < e; i++)
        p[i] = (int16_t)(s + d * i);
}

static void arange_range(void *ctx, int64_t b, int64_t e)
{
    arange_ctx *c = ctx;
    switch (c->dt) {
    case TJ_F32: arange_f32(c->p, b, e, c->start, c->step); break;
    case TJ_F64: arange_f64(c->p, b, e, c->start, c->step); break;
    case TJ_I64: arange_i64(c->p, b, e, c->istart, c->istep); break;
    case TJ_I32: arange_i32(c->p, b, e, c->istart, c->istep); break;
    case TJ_I16: arange_i16(c->p, b, e, c->istart, c->istep); break;
    default: arange_u8(c->p, b, e, c->istart, c->istep); break;   /* u8, i8: one byte */
    }
}

int rt_k_arange(RT_KERNEL_ARGS)
{
    arange_ctx c = {rt_ptr(out), out->dtype, a->a[0].f, a->a[2].f, to_int(a->a[0].f),
                    to_int(a->a[2].f)};
    rt_parallel_for(out->shape[0], RT_GRAIN, arange_range, &c);
    return 0;
}

/* ---- rand, randn ---------------------------------------------------------------------- */

typedef struct rng_ctx {
    void *p;
    tj_dtype dt;
    bool normal;
    uint64_t seed, offset;
} rng_ctx;

static void rng_range(void *ctx, int64_t b, int64_t e)
{
    rng_ctx *c = ctx;
    uint64_t off = c->offset + (uint64_t)b;
    if (c->dt == TJ_F32) {
        float *p = (float *)c->p + b;
        if (c->normal)
            rt_philox_normal_f32(c->seed, off, p, e - b);
        else
            rt_philox_uniform_f32(c->seed, off, p, e - b);
    } else {
        double *p = (double *)c->p + b;
        if (c->normal)
            rt_philox_normal_f64(c->seed, off, p, e - b);
        else
            rt_philox_uniform_f64(c->seed, off, p, e - b);
    }
}

static int draw(tj_tensor *out, const ir_attrs *a, bool normal)
{
    rng_ctx c = {rt_ptr(out), out->dtype, normal, 0, 0};
    if (rt_numel(out) == 0)   /* no draws (a traced one reserved none either) */
        return 0;
    if (rt_rng_resolve((uint64_t)a->a[2].i[0], (uint64_t)a->a[3].i[0], &c.seed, &c.offset) != 0)
        return -1;
    rt_parallel_for(rt_numel(out), normal ? RT_GRAIN / 4 : RT_GRAIN, rng_range, &c);
    return 0;
}

int rt_k_rand(RT_KERNEL_ARGS) { return draw(out, a, false); }

int rt_k_randn(RT_KERNEL_ARGS) { return draw(out, a, true); }
