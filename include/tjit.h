/* tjit.h - the one public header of tjit, a tracing JIT for tensor programs.
 *
 * A model is an ordinary C function over the eager tensor API below. Every op
 * returns a new tensor (or a view sharing storage), or NULL on bad input with
 * a message in tj_last_error(). An op given NULL returns NULL, so a chain of
 * calls needs one check at its end.
 *
 * Memory: a tensor returned by an op belongs to the innermost open scope of
 * the calling thread and is released when that scope ends; with no scope open
 * the caller owns it and must tj_release() it. tj_keep() lets a tensor outlive
 * its scope (the caller then releases it). Tensors made by the creation
 * functions (tj_zeros, tj_from_data, tj_load_npy, ...) follow the same rule.
 *
 *   #include <tjit.h>
 *
 *   static tj_tensor *mlp(tj_tensor *x, tj_tensor *w1, tj_tensor *b1) {
 *       return tj_gelu_tanh(tj_linear(x, w1, b1));
 *   }
 *
 *   int main(void) {
 *       tj_manual_seed(0);
 *       tj_tensor *w1 = tj_randn(TJ_F32, 2, (int64_t[]){2048, 1024}); // owned
 *       tj_tensor *b1 = tj_zeros(TJ_F32, 1, (int64_t[]){2048});
 *       tj_scope_begin();
 *       tj_tensor *x = tj_randn(TJ_F32, 2, (int64_t[]){256, 1024});
 *       tj_tensor *y = mlp(x, w1, b1);              // x, y freed by scope end
 *       if (!y) fprintf(stderr, "%s\n", tj_last_error());
 *       else tj_save_npy(y, "y.npy");
 *       tj_scope_end();
 *       tj_release(w1); tj_release(b1);
 *   }
 *
 * Conventions: dims may be negative (counted from the end); a list of dims
 * with count 0 means "all dims"; shapes are int64_t arrays of at most
 * TJ_MAX_DIMS entries. Binary ops broadcast like NumPy and promote dtypes like
 * PyTorch; the _s variants take a double scalar that promotes like a Python
 * number (it never widens a tensor of the same category): an integral value
 * beside an integer or bool tensor is a Python int (bool + 1 is i64), any
 * other a Python float (i32 * 2.5 is f32).
 */
#ifndef TJIT_H
#define TJIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the public headers declare between TJ_API_BEGIN and TJ_API_END is
 * exported from libtjit.so; the library's internals are built with
 * -fvisibility=hidden and stay private. */
#if defined(__GNUC__) || defined(__clang__)
#define TJ_API_BEGIN _Pragma("GCC visibility push(default)")
#define TJ_API_END _Pragma("GCC visibility pop")
#else
#define TJ_API_BEGIN
#define TJ_API_END
#endif
TJ_API_BEGIN

#define TJ_MAX_DIMS 8

/* ---- version ------------------------------------------------------------ */
/* The header's version (the one place it is written; the Makefile reads it
 * for the shared library's name). tj_version() is the library's, at run time. */
#define TJ_VERSION_MAJOR 0
#define TJ_VERSION_MINOR 1
#define TJ_VERSION_PATCH 0
#define TJ_STR_(x) #x
#define TJ_STR(x) TJ_STR_(x)
#define TJ_VERSION \
    TJ_STR(TJ_VERSION_MAJOR) "." TJ_STR(TJ_VERSION_MINOR) "." TJ_STR(TJ_VERSION_PATCH)
const char *tj_version(void);   /* "MAJOR.MINOR.PATCH" of the linked library */

/* Element types. The constants are written out here so that this header needs
 * nothing but the standard headers; their values are part of the ABI. Their
 * facts (text name, size, category) live in ir/dtypes.def, one row per
 * constant in this order, and ir/types.c checks at compile time that the rows
 * and this enum match one for one: a dtype is added here and there, or the
 * build fails. Within a category the order is PyTorch's promotion order
 * (torch's ScalarType order: u8, i8, i16, i32, i64). A new dtype goes where
 * that order puts it, renumbering the constants after it: an ABI change, which
 * CHANGELOG.md records (allowed before 1.0; code built on an older header
 * must be rebuilt). */
typedef enum tj_dtype {
    TJ_BOOL,   /* bool: 1 byte, 0 or 1 */
    TJ_U8,     /* u8 */
    TJ_I8,     /* i8 */
    TJ_I16,    /* i16 */
    TJ_I32,    /* i32 */
    TJ_I64,    /* i64 */
    TJ_F16,    /* f16 (IEEE binary16): computed in f32, rounded once per op */
    TJ_BF16,   /* bf16 (bfloat16): likewise */
    TJ_F32,    /* f32 */
    TJ_F64,    /* f64 */
    TJ_C64,    /* c64: no kernels yet */
    TJ_NUM_DTYPES
} tj_dtype;

typedef struct tj_tensor tj_tensor;

/* ---- errors ------------------------------------------------------------ */
const char *tj_last_error(void);   /* message of the last failure on this thread, "" if none */
void tj_clear_error(void);
/* Records a message as tj_last_error() does (for libraries built on tjit,
 * such as libtjit_dist). */
void tj_set_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Records the caller's file and line (a string literal that outlives the
 * graphs it is in) for the next op on this thread: graph nodes carry it, and
 * error messages end with " at FILE:LINE". The call-site macros at the end of
 * this header call it; define TJ_NO_CALLSITE to leave them out. */
void tj__callsite(const char *file, int line);

/* ---- dtypes ------------------------------------------------------------ */
const char *tj_dtype_name(tj_dtype dt);   /* "f32", ...; "?" when out of range */
size_t tj_dtype_size(tj_dtype dt);
bool tj_dtype_is_float(tj_dtype dt);      /* f16, bf16, f32, f64 */

/* ---- lifetime ---------------------------------------------------------- */
/* A scope that cannot be allocated is still ended by its tj_scope_end (the
 * enclosing one is untouched); until then results fail with an error. */
void tj_scope_begin(void);
void tj_scope_end(void);
tj_tensor *tj_keep(tj_tensor *t);     /* retain so it outlives the scope; caller releases */
tj_tensor *tj_retain(tj_tensor *t);
void tj_release(tj_tensor *t);        /* NULL is fine */
/* A released handle must not be used again; ops, tj_call and the value
 * readers report one used soon after its release as an error ("input 0 is a
 * released tensor"), not a crash. Not every late use can be detected
 * (docs/api.md). */

/* ---- inspection -------------------------------------------------------- */
tj_dtype tj_dtype_of(const tj_tensor *t);
int tj_ndim(const tj_tensor *t);
int64_t tj_size(const tj_tensor *t, int dim);      /* dim may be negative */
const int64_t *tj_shape(const tj_tensor *t);
const int64_t *tj_strides(const tj_tensor *t);     /* in elements */
int64_t tj_offset(const tj_tensor *t);             /* storage offset, elements */
int64_t tj_numel(const tj_tensor *t);
bool tj_is_contiguous(const tj_tensor *t);
void *tj_data(tj_tensor *t);        /* first element; NULL (with error) while tracing */
double tj_item(tj_tensor *t);       /* value of a one-element tensor as double; NAN on error */
/* Element at a multi-index as double (for tests and tools). */
double tj_get(const tj_tensor *t, const int64_t *index);
/* Writes a short description ("f32[2,3]") into buf; returns buf. */
char *tj_describe(const tj_tensor *t, char *buf, size_t n);

/* ---- creation ---------------------------------------------------------- */
tj_tensor *tj_empty(tj_dtype dt, int ndim, const int64_t *shape);
tj_tensor *tj_zeros(tj_dtype dt, int ndim, const int64_t *shape);
tj_tensor *tj_ones(tj_dtype dt, int ndim, const int64_t *shape);
tj_tensor *tj_full(tj_dtype dt, int ndim, const int64_t *shape, double value);
tj_tensor *tj_arange(tj_dtype dt, double start, double end, double step);
tj_tensor *tj_scalar(tj_dtype dt, double value);   /* 0-dim tensor */
/* Copies ndim/shape and numel*size bytes of contiguous data. */
tj_tensor *tj_from_data(tj_dtype dt, int ndim, const int64_t *shape, const void *data);

/* ---- random (counter-based Philox 4x32-10; same values for any thread count) */
void tj_manual_seed(uint64_t seed);
tj_tensor *tj_rand(tj_dtype dt, int ndim, const int64_t *shape);    /* U[0,1) */
tj_tensor *tj_randn(tj_dtype dt, int ndim, const int64_t *shape);   /* N(0,1) */

/* ---- .npy I/O ---------------------------------------------------------- */
tj_tensor *tj_load_npy(const char *path);
int tj_save_npy(tj_tensor *t, const char *path);   /* 0 on success, -1 with error */

/* ---- views (share storage) and copies ----------------------------------- */
tj_tensor *tj_reshape(tj_tensor *x, int ndim, const int64_t *shape);  /* one -1 allowed; copies if strides forbid a view */
tj_tensor *tj_view(tj_tensor *x, int ndim, const int64_t *shape);     /* like reshape, error if a copy is needed */
tj_tensor *tj_permute(tj_tensor *x, const int *perm);                  /* perm has ndim entries */
tj_tensor *tj_transpose(tj_tensor *x, int dim0, int dim1);
tj_tensor *tj_slice(tj_tensor *x, int dim, int64_t start, int64_t end, int64_t step); /* Python slice rules, step > 0 */
tj_tensor *tj_expand(tj_tensor *x, int ndim, const int64_t *shape);   /* -1 keeps a dim */
tj_tensor *tj_broadcast_to(tj_tensor *x, int ndim, const int64_t *shape);
tj_tensor *tj_squeeze(tj_tensor *x, const int *dims, int ndims);       /* ndims 0: all size-1 dims */
tj_tensor *tj_unsqueeze(tj_tensor *x, int dim);
tj_tensor *tj_flatten(tj_tensor *x, int start_dim, int end_dim);
tj_tensor *tj_contiguous(tj_tensor *x);   /* x itself (retained into scope) when already contiguous */
tj_tensor *tj_clone(tj_tensor *x);        /* always a fresh contiguous copy */
tj_tensor *tj_cast(tj_tensor *x, tj_dtype dt);
int tj_copy_(tj_tensor *dst, tj_tensor *src);   /* in place, src broadcast to dst; 0 or -1 */
/* ---- in-place ops (mutation) ---- */
/* dst = dst op src (src broadcast to dst's shape, the result converted to
 * dst's dtype; an error, as in PyTorch, when the result is of a higher
 * category than dst: float into an integer or bool tensor, integer into a
 * bool one), written into dst's storage like tj_copy_; 0 or -1. Inside a
 * compiled model they are functionalized, not graph breaks: into a weight,
 * a buffer or an argument, or into slices of one (tj_slice(w, ...) as dst),
 * the graph computes the new value and each call writes it back
 * (docs/tracing.md). */
int tj_add_(tj_tensor *dst, tj_tensor *src);
int tj_sub_(tj_tensor *dst, tj_tensor *src);
int tj_mul_(tj_tensor *dst, tj_tensor *src);
int tj_div_(tj_tensor *dst, tj_tensor *src);
int tj_add_s_(tj_tensor *dst, double s);
int tj_mul_s_(tj_tensor *dst, double s);

/* ---- pointwise unary --------------------------------------------------- */
/* Float math (exp, sin, ...) on integer or bool input computes in f32. */
tj_tensor *tj_abs(tj_tensor *x);
tj_tensor *tj_neg(tj_tensor *x);
tj_tensor *tj_sign(tj_tensor *x);
tj_tensor *tj_exp(tj_tensor *x);
tj_tensor *tj_exp2(tj_tensor *x);
tj_tensor *tj_expm1(tj_tensor *x);
tj_tensor *tj_log(tj_tensor *x);
tj_tensor *tj_log2(tj_tensor *x);
tj_tensor *tj_log10(tj_tensor *x);
tj_tensor *tj_log1p(tj_tensor *x);
tj_tensor *tj_sqrt(tj_tensor *x);
tj_tensor *tj_rsqrt(tj_tensor *x);
tj_tensor *tj_reciprocal(tj_tensor *x);
tj_tensor *tj_square(tj_tensor *x);
tj_tensor *tj_sin(tj_tensor *x);
tj_tensor *tj_cos(tj_tensor *x);
tj_tensor *tj_tan(tj_tensor *x);
tj_tensor *tj_asin(tj_tensor *x);
tj_tensor *tj_acos(tj_tensor *x);
tj_tensor *tj_atan(tj_tensor *x);
tj_tensor *tj_sinh(tj_tensor *x);
tj_tensor *tj_cosh(tj_tensor *x);
tj_tensor *tj_tanh(tj_tensor *x);
tj_tensor *tj_asinh(tj_tensor *x);
tj_tensor *tj_acosh(tj_tensor *x);
tj_tensor *tj_atanh(tj_tensor *x);
tj_tensor *tj_erf(tj_tensor *x);
tj_tensor *tj_erfc(tj_tensor *x);
tj_tensor *tj_sigmoid(tj_tensor *x);
tj_tensor *tj_relu(tj_tensor *x);
tj_tensor *tj_silu(tj_tensor *x);
tj_tensor *tj_softplus(tj_tensor *x);      /* beta 1, threshold 20 */
/* torch.nn.functional.softplus(x, beta, threshold): log1p(exp(x beta)) / beta,
 * x itself where x beta > threshold; beta and threshold round to x's dtype. */
tj_tensor *tj_softplus_ex(tj_tensor *x, double beta, double threshold);
tj_tensor *tj_floor(tj_tensor *x);
tj_tensor *tj_ceil(tj_tensor *x);
tj_tensor *tj_round(tj_tensor *x);         /* half to even */
tj_tensor *tj_trunc(tj_tensor *x);
tj_tensor *tj_isnan(tj_tensor *x);
tj_tensor *tj_isinf(tj_tensor *x);
tj_tensor *tj_isfinite(tj_tensor *x);
tj_tensor *tj_logical_not(tj_tensor *x);
tj_tensor *tj_bitwise_not(tj_tensor *x);

tj_tensor *tj_gelu(tj_tensor *x);          /* x * Phi(x), the erf form */
tj_tensor *tj_gelu_tanh(tj_tensor *x);     /* the tanh approximation */

/* ---- pointwise binary (tensor-tensor, and tensor-scalar as _s) ----------- */
#define TJ_BINARY_DECL(name) \
    tj_tensor *tj_##name(tj_tensor *a, tj_tensor *b); \
    tj_tensor *tj_##name##_s(tj_tensor *a, double b);
TJ_BINARY_DECL(add)
TJ_BINARY_DECL(sub)
TJ_BINARY_DECL(mul)
TJ_BINARY_DECL(div)         /* true division: integers give f32 */
TJ_BINARY_DECL(pow)
TJ_BINARY_DECL(maximum)
TJ_BINARY_DECL(minimum)
TJ_BINARY_DECL(atan2)
TJ_BINARY_DECL(fmod)        /* sign of dividend (C fmod) */
TJ_BINARY_DECL(remainder)   /* sign of divisor (Python %) */
TJ_BINARY_DECL(eq)
TJ_BINARY_DECL(ne)
TJ_BINARY_DECL(lt)
TJ_BINARY_DECL(le)
TJ_BINARY_DECL(gt)
TJ_BINARY_DECL(ge)
TJ_BINARY_DECL(logical_and)
TJ_BINARY_DECL(logical_or)
TJ_BINARY_DECL(logical_xor)
TJ_BINARY_DECL(bitwise_and)
TJ_BINARY_DECL(bitwise_or)
TJ_BINARY_DECL(bitwise_xor)
#undef TJ_BINARY_DECL
/* torch.add(a, b, alpha=) and torch.sub: a + alpha b and a - alpha b, b a
 * tensor or (_s_ex) a number. alpha does not take part in promotion; it
 * rounds to the result dtype. An integer or bool result needs an integral
 * alpha (an integral double counts as a Python int), an integer result one
 * that fits its dtype (u8: -255..255); a float one a finite alpha that fits
 * it, or +-inf or NaN. */
tj_tensor *tj_add_ex(tj_tensor *a, tj_tensor *b, double alpha);
tj_tensor *tj_add_s_ex(tj_tensor *a, double b, double alpha);
tj_tensor *tj_sub_ex(tj_tensor *a, tj_tensor *b, double alpha);
tj_tensor *tj_sub_s_ex(tj_tensor *a, double b, double alpha);

/* torch.div's rounding_mode. */
typedef enum tj_rounding {
    TJ_ROUNDING_NONE,    /* None: true division (tj_div) */
    TJ_ROUNDING_TRUNC,   /* "trunc": toward zero */
    TJ_ROUNDING_FLOOR    /* "floor": toward -inf (Python's //) */
} tj_rounding;
/* torch.div(a, b, rounding_mode=): trunc and floor keep the promoted dtype
 * (integers stay integers; bool is refused). An integer division by zero is
 * an error, as in PyTorch (eager and compiled); the most negative integer
 * divided by -1 wraps to itself. */
tj_tensor *tj_div_ex(tj_tensor *a, tj_tensor *b, tj_rounding mode);
tj_tensor *tj_div_s_ex(tj_tensor *a, double b, tj_rounding mode);

/* ---- ternary ----------------------------------------------------------- */
tj_tensor *tj_where(tj_tensor *cond, tj_tensor *a, tj_tensor *b);
/* lo, hi: -INFINITY / INFINITY for none; each promotes like an _s scalar
 * (clamp of i32 by 2.5 is f32); an integer bound must fit an integer result. */
tj_tensor *tj_clamp(tj_tensor *x, double lo, double hi);
tj_tensor *tj_lerp(tj_tensor *a, tj_tensor *b, tj_tensor *w);   /* a + w*(b-a); one dtype, no promotion */
tj_tensor *tj_lerp_s(tj_tensor *a, tj_tensor *b, double w);

/* ---- more pointwise prims and elementwise ops (PyTorch's names and dtypes) -- */
tj_tensor *tj_cbrt(tj_tensor *x);
tj_tensor *tj_erfinv(tj_tensor *x);         /* +-1 -> +-inf, |x| > 1 -> NaN */
tj_tensor *tj_signbit(tj_tensor *x);        /* bool: the sign bit (-0 and -NaN too) */
tj_tensor *tj_lgamma(tj_tensor *x);         /* ln|Gamma(x)|; poles give inf */
tj_tensor *tj_digamma(tj_tensor *x);        /* psi(x); NaN at the poles < 0, -+inf at +-0 */
#define TJ_BINARY_DECL(name) \
    tj_tensor *tj_##name(tj_tensor *a, tj_tensor *b); \
    tj_tensor *tj_##name##_s(tj_tensor *a, double b);
TJ_BINARY_DECL(copysign)    /* |a| with b's sign; integers give f32 */
TJ_BINARY_DECL(hypot)       /* floating-point only */
TJ_BINARY_DECL(nextafter)   /* floating-point only */
TJ_BINARY_DECL(fmax)        /* a NaN operand is ignored */
TJ_BINARY_DECL(fmin)
TJ_BINARY_DECL(gcd)         /* integers only; non-negative */
/* integers only; a count outside [0, bits) gives 0 (left) or the sign (right) */
TJ_BINARY_DECL(bitwise_left_shift)
TJ_BINARY_DECL(bitwise_right_shift)
#undef TJ_BINARY_DECL
/* Activations (torch.nn.functional), floating-point input unless noted. */
tj_tensor *tj_leaky_relu(tj_tensor *x, double negative_slope);   /* torch's default 0.01 */
tj_tensor *tj_elu(tj_tensor *x, double alpha);                   /* 1 */
tj_tensor *tj_selu(tj_tensor *x);
tj_tensor *tj_celu(tj_tensor *x, double alpha);                  /* 1 */
tj_tensor *tj_hardswish(tj_tensor *x);
tj_tensor *tj_hardsigmoid(tj_tensor *x);
tj_tensor *tj_hardtanh(tj_tensor *x, double min_val, double max_val);  /* -1, 1; numbers, as clamp */
tj_tensor *tj_relu6(tj_tensor *x);                               /* numbers, as clamp */
tj_tensor *tj_mish(tj_tensor *x);
tj_tensor *tj_softsign(tj_tensor *x);                            /* integers give f32 */
tj_tensor *tj_logsigmoid(tj_tensor *x);
tj_tensor *tj_tanhshrink(tj_tensor *x);                          /* integers give f32 */
tj_tensor *tj_softshrink(tj_tensor *x, double lambd);            /* 0.5 */
tj_tensor *tj_hardshrink(tj_tensor *x, double lambd);            /* 0.5 */
tj_tensor *tj_threshold(tj_tensor *x, double threshold, double value);  /* numbers */
tj_tensor *tj_glu(tj_tensor *x, int dim);                        /* -1 */
tj_tensor *tj_prelu(tj_tensor *x, tj_tensor *weight);            /* 1 or channel (dim 1) weights */
/* Elementwise math (torch.*, torch.special.*). */
tj_tensor *tj_logit(tj_tensor *x, double eps);      /* eps < 0: none (torch's None) */
tj_tensor *tj_sinc(tj_tensor *x);
tj_tensor *tj_deg2rad(tj_tensor *x);
tj_tensor *tj_rad2deg(tj_tensor *x);
tj_tensor *tj_frac(tj_tensor *x);                   /* x - trunc(x), floating-point only */
tj_tensor *tj_isposinf(tj_tensor *x);
tj_tensor *tj_isneginf(tj_tensor *x);
/* NaN, +inf, -inf replaced; posinf/neginf NAN: the dtype's largest/lowest
 * finite value (torch's None); integers unchanged. */
tj_tensor *tj_nan_to_num(tj_tensor *x, double nan, double posinf, double neginf);
tj_tensor *tj_ndtr(tj_tensor *x);                   /* the standard normal CDF */
tj_tensor *tj_xlogy(tj_tensor *x, tj_tensor *y);    /* x log y, 0 where x == 0 (y not NaN) */
tj_tensor *tj_heaviside(tj_tensor *x, tj_tensor *values);   /* one dtype */
tj_tensor *tj_logaddexp(tj_tensor *a, tj_tensor *b);
tj_tensor *tj_logaddexp2(tj_tensor *a, tj_tensor *b);
tj_tensor *tj_float_power(tj_tensor *a, tj_tensor *b);      /* pow in f64 */
tj_tensor *tj_addcmul(tj_tensor *a, tj_tensor *t1, tj_tensor *t2, double value);  /* a + value t1 t2 */
tj_tensor *tj_addcdiv(tj_tensor *a, tj_tensor *t1, tj_tensor *t2, double value);  /* a + value t1 / t2 */
/* Aliases: div_ex floor, div, sub_ex with the operands swapped (b - alpha a),
 * clamp with one bound, trunc. */
tj_tensor *tj_floor_divide(tj_tensor *a, tj_tensor *b);
tj_tensor *tj_floor_divide_s(tj_tensor *a, double b);
tj_tensor *tj_true_divide(tj_tensor *a, tj_tensor *b);
tj_tensor *tj_rsub(tj_tensor *a, tj_tensor *b, double alpha);
tj_tensor *tj_rsub_s(tj_tensor *a, double b, double alpha);
tj_tensor *tj_clamp_min(tj_tensor *x, double min);
tj_tensor *tj_clamp_max(tj_tensor *x, double max);
tj_tensor *tj_fix(tj_tensor *x);

/* ---- special functions and remaining prims (issue 11) --------------------
 * torch.special's names and dtypes (integers and bool compute in f32); each
 * f32 formula's accuracy is stated in docs/api.md. */
tj_tensor *tj_erfcx(tj_tensor *x);          /* e^(x^2) erfc(x) */
tj_tensor *tj_ndtri(tj_tensor *x);          /* the inverse of ndtr; 0 -> -inf, 1 -> inf */
tj_tensor *tj_i0(tj_tensor *x);             /* modified Bessel I0 */
tj_tensor *tj_i0e(tj_tensor *x);            /* e^-|x| I0(x) */
tj_tensor *tj_i1(tj_tensor *x);
tj_tensor *tj_i1e(tj_tensor *x);
tj_tensor *tj_bessel_j0(tj_tensor *x);      /* Bessel J0 */
tj_tensor *tj_bessel_j1(tj_tensor *x);
/* x = m 2^e: the mantissa (|m| in [1/2, 1), x's dtype) and the i32 exponent;
 * 0, inf and NaN give m = x, e = 0; floating-point x only. */
tj_tensor *tj_frexp(tj_tensor *x);
tj_tensor *tj_frexp_exponent(tj_tensor *x);
/* polygamma(n, x), the n-th derivative of digamma (n >= 0) */
tj_tensor *tj_polygamma_n(int n, tj_tensor *x);
/* Regularized lower and upper incomplete gamma P(a, x), Q(a, x); floating-point only. */
#define TJ_BINARY_DECL(name) \
    tj_tensor *tj_##name(tj_tensor *a, tj_tensor *b); \
    tj_tensor *tj_##name##_s(tj_tensor *a, double b);
TJ_BINARY_DECL(igamma)
TJ_BINARY_DECL(igammac)
TJ_BINARY_DECL(polygamma)   /* n as a tensor (integer values), x */
#undef TJ_BINARY_DECL

/* ---- reductions (dims, ndims: ndims 0 means every dim) ------------------- */
tj_tensor *tj_sum(tj_tensor *x, const int *dims, int ndims, bool keepdim);
tj_tensor *tj_mean(tj_tensor *x, const int *dims, int ndims, bool keepdim);
tj_tensor *tj_prod(tj_tensor *x, const int *dims, int ndims, bool keepdim);
tj_tensor *tj_amax(tj_tensor *x, const int *dims, int ndims, bool keepdim);
tj_tensor *tj_amin(tj_tensor *x, const int *dims, int ndims, bool keepdim);
tj_tensor *tj_logsumexp(tj_tensor *x, const int *dims, int ndims, bool keepdim);
tj_tensor *tj_all(tj_tensor *x, const int *dims, int ndims, bool keepdim);
tj_tensor *tj_any(tj_tensor *x, const int *dims, int ndims, bool keepdim);
tj_tensor *tj_var(tj_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim);
tj_tensor *tj_std(tj_tensor *x, const int *dims, int ndims, int64_t correction, bool keepdim);
#define TJ_ALL_DIMS INT32_MIN   /* argmax/argmin over the flattened tensor */
tj_tensor *tj_argmax(tj_tensor *x, int dim, bool keepdim);
tj_tensor *tj_argmin(tj_tensor *x, int dim, bool keepdim);

/* ---- contractions ------------------------------------------------------ */
tj_tensor *tj_matmul(tj_tensor *a, tj_tensor *b);                 /* torch.matmul rules */
tj_tensor *tj_linear(tj_tensor *x, tj_tensor *w, tj_tensor *b);   /* x @ w^T + b; w [out,in]; b may be NULL */
/* x [N,C,H,W], w [O,C/groups,KH,KW], b [O] or NULL */
tj_tensor *tj_conv2d(tj_tensor *x, tj_tensor *w, tj_tensor *b, const int64_t stride[2],
                     const int64_t padding[2], const int64_t dilation[2], int64_t groups);

/* ---- neural-network ops ------------------------------------------------ */
tj_tensor *tj_softmax(tj_tensor *x, int dim);
tj_tensor *tj_log_softmax(tj_tensor *x, int dim);
/* Normalizes over the last `ndims` dims; w, b may be NULL. */
tj_tensor *tj_layer_norm(tj_tensor *x, int ndims, tj_tensor *w, tj_tensor *b, double eps);
tj_tensor *tj_rms_norm(tj_tensor *x, int ndims, tj_tensor *w, double eps);
/* Eval mode: x [N,C,...], running mean/var [C]; w, b may be NULL. */
tj_tensor *tj_batch_norm(tj_tensor *x, tj_tensor *mean, tj_tensor *var, tj_tensor *w,
                         tj_tensor *b, double eps);
/* Training mode (torch's F.batch_norm(training=True)): normalizes with the
 * batch's statistics over every dim but 1 and, when given, updates the running
 * mean/var in place: r = (1 - momentum) r + momentum * batch (variance unbiased). */
tj_tensor *tj_batch_norm_train(tj_tensor *x, tj_tensor *running_mean, tj_tensor *running_var,
                               tj_tensor *w, tj_tensor *b, double momentum, double eps);
/* torch.nn.functional.max_pool2d and avg_pool2d on x [N,C,H,W] or [C,H,W]:
 * a NULL stride means the kernel, NULL padding 0, NULL dilation 1; padding
 * is at most half the kernel. The _ex forms below take torch's other arguments. */
tj_tensor *tj_max_pool2d(tj_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], const int64_t dilation[2]);
tj_tensor *tj_avg_pool2d(tj_tensor *x, const int64_t kernel[2], const int64_t stride[2],
                         const int64_t padding[2], bool count_include_pad);

/* Start from tj_max_pool2d_defaults() (a zeroed struct is the same). ceil_mode
 * rounds the output size up, as torch does: a last window that would start
 * past the input and its left padding is dropped; windows may hang over the
 * right edge, whose missing elements take no part. */
typedef struct tj_max_pool2d_options {
    const int64_t *stride;     /* [2] or NULL: the kernel */
    const int64_t *padding;    /* [2] or NULL: 0 */
    const int64_t *dilation;   /* [2] or NULL: 1 */
    bool ceil_mode;
} tj_max_pool2d_options;

/* stride = kernel, no padding, no dilation, floor mode */
tj_max_pool2d_options tj_max_pool2d_defaults(void);
/* max_pool2d with torch's arguments; opts NULL means the defaults. indices
 * non-NULL is torch's return_indices: *indices receives, for each result,
 * where its maximum is in its input plane (h * W + w, i64, as
 * max_pool2d_with_indices: the first maximum in window order, the last NaN
 * when there are NaNs), owned by the scope like the result; on error the
 * function returns NULL and *indices is NULL. */
tj_tensor *tj_max_pool2d_ex(tj_tensor *x, const int64_t kernel[2],
                            const tj_max_pool2d_options *opts, tj_tensor **indices);

/* Start from tj_avg_pool2d_defaults(): a zeroed struct has count_include_pad
 * false. ceil_mode as for max_pool2d; a window that hangs over the right edge
 * counts (with count_include_pad) the padding it covers, not what lies past it. */
typedef struct tj_avg_pool2d_options {
    const int64_t *stride;     /* [2] or NULL: the kernel */
    const int64_t *padding;    /* [2] or NULL: 0 */
    bool ceil_mode;
    bool count_include_pad;    /* padding counts in the divisor */
    int64_t divisor_override;  /* 0: none (torch's None); else every window's sum is
                                  divided by it, negative too (torch refuses 0) */
} tj_avg_pool2d_options;

/* stride = kernel, no padding, floor mode, count_include_pad, no divisor_override */
tj_avg_pool2d_options tj_avg_pool2d_defaults(void);
/* avg_pool2d with torch's arguments; opts NULL means the defaults. Integer
 * (i64) quotients truncate toward zero, as in torch. */
tj_tensor *tj_avg_pool2d_ex(tj_tensor *x, const int64_t kernel[2],
                            const tj_avg_pool2d_options *opts);
tj_tensor *tj_embedding(tj_tensor *weight, tj_tensor *indices);

/* ---- int8 quantization (PyTorch's quantize_per_tensor/_per_channel(...).int_repr(),
 * dequantize); no gradient. dtype: TJ_U8 or TJ_I8; q = clamp(rne(x / scale) + zero_point).
 * Errors: a scale not positive and finite, a zero point outside dtype, an axis out of
 * range, scales/zero_points not 1-D of x's size along axis. ---- */
tj_tensor *tj_quantize_per_tensor(tj_tensor *x, double scale, int64_t zero_point, tj_dtype dtype);
/* scales: float [C], zero_points: integer [C], C = x's size along axis */
tj_tensor *tj_quantize_per_channel(tj_tensor *x, tj_tensor *scales, tj_tensor *zero_points,
                                   int axis, tj_dtype dtype);
/* f32 (q - zero_point) * scale */
tj_tensor *tj_dequantize(tj_tensor *q, double scale, int64_t zero_point);
tj_tensor *tj_dequantize_per_channel(tj_tensor *q, tj_tensor *scales, tj_tensor *zero_points,
                                     int axis);
/* Training: zeroes with probability p, scales the rest by 1/(1-p), draws from the
 * global generator. Not training: returns x. */
tj_tensor *tj_dropout(tj_tensor *x, double p, bool training);
/* q [...,L,E], k [...,S,E], v [...,S,Ev]; mask bool (true = attend) or float (added),
 * broadcastable to [...,L,S], or NULL; scale <= 0 means 1/sqrt(E). */
tj_tensor *tj_scaled_dot_product_attention(tj_tensor *q, tj_tensor *k, tj_tensor *v,
                                           tj_tensor *mask, bool causal, double scale);
/* torch.nn.functional.cross_entropy with its defaults: logits [N,C] (or [C],
 * or [N,C,d1,...]), target of class indices (i64 or i32, logits' shape without
 * C) or of class probabilities (float, logits' shape); mean over the batch. */
tj_tensor *tj_cross_entropy(tj_tensor *logits, tj_tensor *target);

/* How a loss combines its per-element values. */
typedef enum tj_reduction {
    TJ_REDUCTION_MEAN,   /* "mean" (0): the default */
    TJ_REDUCTION_SUM,    /* "sum" */
    TJ_REDUCTION_NONE    /* "none": one value per batch element */
} tj_reduction;

#define TJ_IGNORE_INDEX_DEFAULT (-100)   /* torch's default ignore_index */

/* Start from tj_cross_entropy_defaults(): a zeroed struct has ignore_index 0,
 * which ignores class 0. */
typedef struct tj_cross_entropy_options {
    tj_reduction reduction;
    tj_tensor *weight;        /* [C] per-class weights of logits' dtype, or NULL */
    int64_t ignore_index;     /* class-index targets equal to it add nothing (and
                                 count nothing in the mean); any value, in range or not */
    double label_smoothing;   /* in [0, 1] (a negative value acts as 0, as in torch) */
} tj_cross_entropy_options;

/* reduction mean, no weight, ignore_index -100, no label smoothing */
tj_cross_entropy_options tj_cross_entropy_defaults(void);
/* cross_entropy with torch's arguments; opts NULL means the defaults. A mean
 * of class-index targets divides by the sum of their weights (the count when
 * unweighted), that of probability targets by the number of rows. */
tj_tensor *tj_cross_entropy_ex(tj_tensor *logits, tj_tensor *target,
                               const tj_cross_entropy_options *opts);

/* ==== nn and linalg ops (issue 11) ======================================== */
/* Element-wise losses, torch.nn.functional's (input first, then target; the
 * two broadcast where torch lets them; reduction mean averages every element).
 * smooth_l1_loss: beta >= 0 (0 is l1_loss); huber_loss: delta > 0, input's dtype.
 * binary_cross_entropy: probabilities p and target of one shape and dtype,
 * weight (or NULL) broadcastable to them, each log clamped at -100.
 * ..._with_logits: logits; pos_weight (or NULL) weighs the positive term.
 * kl_div: input holds log-probabilities; target probabilities, or
 * log-probabilities when log_target. */
tj_tensor *tj_mse_loss(tj_tensor *input, tj_tensor *target, tj_reduction reduction);
tj_tensor *tj_l1_loss(tj_tensor *input, tj_tensor *target, tj_reduction reduction);
tj_tensor *tj_smooth_l1_loss(tj_tensor *input, tj_tensor *target, tj_reduction reduction,
                             double beta);
tj_tensor *tj_huber_loss(tj_tensor *input, tj_tensor *target, tj_reduction reduction,
                         double delta);
tj_tensor *tj_binary_cross_entropy(tj_tensor *p, tj_tensor *target, tj_tensor *weight,
                                   tj_reduction reduction);
tj_tensor *tj_binary_cross_entropy_with_logits(tj_tensor *logits, tj_tensor *target,
                                               tj_tensor *weight, tj_tensor *pos_weight,
                                               tj_reduction reduction);
tj_tensor *tj_kl_div(tj_tensor *input, tj_tensor *target, tj_reduction reduction,
                     bool log_target);
/* Products on matmul (operands of one dtype): tj_bmm [B,N,K] x [B,K,M] (no
 * broadcasting), tj_mv [N,M] x [M], tj_dot [N] x [N] -> 0-dim, tj_outer [N],
 * [M] -> [N,M] (promoted). tj_addmm/addmv/baddbmm: beta c + alpha (a b), c
 * broadcast to the product (beta 0 ignores c, NaN too; integer operands take
 * integral beta and alpha). tj_tensordot: dims_a[k] of a contracts with
 * dims_b[k] of b; the result has a's other dims, then b's. tj_trace: the sum
 * of a matrix's diagonal (integers give i64). tj_cross: the cross product of
 * 3-vectors along dim (torch.linalg.cross; a and b broadcast). */
tj_tensor *tj_bmm(tj_tensor *a, tj_tensor *b);
tj_tensor *tj_mv(tj_tensor *m, tj_tensor *v);
tj_tensor *tj_dot(tj_tensor *a, tj_tensor *b);
tj_tensor *tj_outer(tj_tensor *a, tj_tensor *b);
tj_tensor *tj_addmm(tj_tensor *c, tj_tensor *a, tj_tensor *b, double beta, double alpha);
tj_tensor *tj_addmv(tj_tensor *c, tj_tensor *m, tj_tensor *v, double beta, double alpha);
tj_tensor *tj_baddbmm(tj_tensor *c, tj_tensor *a, tj_tensor *b, double beta, double alpha);
tj_tensor *tj_tensordot(tj_tensor *a, tj_tensor *b, const int *dims_a, const int *dims_b, int n);
tj_tensor *tj_trace(tj_tensor *x);
tj_tensor *tj_cross(tj_tensor *a, tj_tensor *b, int dim);
/* 1-D convolution and pools, torch's (x [N,C,L] or [C,L]; w [O,C/groups,K]):
 * conv2d and the 2-D pools at H = 1. A pool's stride 0 means the kernel size
 * (torch's None). Pixel shuffles: [.., C r^2, H, W] <-> [.., C, H r, W r]. */
tj_tensor *tj_conv1d(tj_tensor *x, tj_tensor *w, tj_tensor *bias, int64_t stride,
                     int64_t padding, int64_t dilation, int64_t groups);
tj_tensor *tj_max_pool1d(tj_tensor *x, int64_t kernel, int64_t stride, int64_t padding,
                         int64_t dilation, bool ceil_mode);
tj_tensor *tj_avg_pool1d(tj_tensor *x, int64_t kernel, int64_t stride, int64_t padding,
                         bool count_include_pad, bool ceil_mode);
tj_tensor *tj_pixel_shuffle(tj_tensor *x, int64_t upscale_factor);
tj_tensor *tj_pixel_unshuffle(tj_tensor *x, int64_t downscale_factor);
/* Normalization (x [N, C, ...] float; w, b [C] or NULL): tj_group_norm
 * (groups divides C), tj_instance_norm (per sample and channel over the spatial
 * dims, no running statistics), tj_local_response_norm (torch's
 * F.local_response_norm). tj_vector_norm: torch.linalg.vector_norm over dims
 * (ndims 0: every dim); ord 2, 1, 0, INFINITY, -INFINITY or any p.
 * tj_cosine_similarity and tj_pairwise_distance: torch.nn.functional's (x1 and
 * x2 broadcast). tj_nll_loss: log-probabilities [C], [N,C] or [N,C,d...],
 * class-index targets, weight [C] or NULL; torch's ignore_index is
 * TJ_IGNORE_INDEX_DEFAULT. */
tj_tensor *tj_group_norm(tj_tensor *x, int64_t groups, tj_tensor *w, tj_tensor *b, double eps);
tj_tensor *tj_instance_norm(tj_tensor *x, tj_tensor *w, tj_tensor *b, double eps);
tj_tensor *tj_local_response_norm(tj_tensor *x, int64_t size, double alpha, double beta, double k);
tj_tensor *tj_vector_norm(tj_tensor *x, double ord, const int *dims, int ndims, bool keepdim);
tj_tensor *tj_cosine_similarity(tj_tensor *x1, tj_tensor *x2, int dim, double eps);
tj_tensor *tj_pairwise_distance(tj_tensor *x1, tj_tensor *x2, double p, double eps, bool keepdim);
tj_tensor *tj_nll_loss(tj_tensor *logp, tj_tensor *target, tj_tensor *weight,
                       tj_reduction reduction, int64_t ignore_index);
/* Adaptive pools (torch's: window i of n inputs covers [floor(i n/o),
 * ceil((i+1) n/o))): x [N,C,L] / [N,C,H,W] / [N,C,D,H,W] or without N; max
 * gives values only.
 * tj_cdist: x1 [..., P, M], x2 [..., R, M] -> p-norm distances [..., P, R].
 * tj_matrix_norm: the Frobenius norm over dims[0..2) (NULL: the last two). */
tj_tensor *tj_adaptive_avg_pool1d(tj_tensor *x, int64_t size);
tj_tensor *tj_adaptive_avg_pool2d(tj_tensor *x, int64_t h, int64_t w);
tj_tensor *tj_adaptive_avg_pool3d(tj_tensor *x, int64_t d, int64_t h, int64_t w);
tj_tensor *tj_adaptive_max_pool2d(tj_tensor *x, int64_t h, int64_t w);
tj_tensor *tj_cdist(tj_tensor *x1, tj_tensor *x2, double p);
tj_tensor *tj_matrix_norm(tj_tensor *x, const int *dims, bool keepdim);
/* ==== end of nn and linalg ops ============================================= */

/* ==== linalg via LAPACK (issue 11; torch.linalg's names and semantics) ======
 * Matrices are the last two dims, batched over the leading ones; f32 and f64
 * (f16/bf16 compute in f32), integer inputs are refused. A singular matrix
 * (tj_inv, tj_solve) or one that is not positive-definite (tj_cholesky) gives
 * NULL with the batch element and pivot in the message.
 * tj_solve(a, b): X with a X = b; b [*,n,k], or a vector [*,n] when it is 1-D
 * or has a's shape without its last dim; batch dims broadcast; one dtype.
 * tj_det, tj_slogdet: [*,n,n] -> [*]; tj_slogdet returns log|det| and, through
 * *sign if not NULL, the sign (-1, 0, 1; a singular matrix: 0 and -inf).
 * tj_cholesky: L with a = L L^T from a's lower triangle (upper: U with
 * a = U^T U, from the upper triangle). tj_qr: reduced QR, Q [*,m,k] returned
 * and R [*,k,n] through *r if not NULL, k = min(m,n), LAPACK's signs. */
tj_tensor *tj_inv(tj_tensor *a);
tj_tensor *tj_solve(tj_tensor *a, tj_tensor *b);
tj_tensor *tj_det(tj_tensor *a);
tj_tensor *tj_slogdet(tj_tensor *a, tj_tensor **sign);
tj_tensor *tj_cholesky(tj_tensor *a, bool upper);
tj_tensor *tj_qr(tj_tensor *a, tj_tensor **r);
/* ==== end of linalg via LAPACK ============================================== */
/* ==== 3-D and transposed convolution, 3-D pools (issue 11) ================= */
/* torch.nn.functional's conv3d, conv_transpose1d/2d/3d, max_pool3d and
 * avg_pool3d (float inputs; input, weight and bias of one dtype). x has a batch
 * dim or not: [N,C,D,H,W] or [C,D,H,W] (1-D and 2-D: [N,C,L], [N,C,H,W]). A NULL
 * list means torch's default: stride 1 (pools: the kernel), padding 0,
 * output_padding 0, dilation 1. conv3d: w [O, C/groups, kD, kH, kW].
 * conv_transpose: w [C, O/groups, k..], bias [O] or NULL; output_padding (added
 * on one side of the result) must be smaller than the stride or the dilation.
 * Pools: padding at most half the kernel; ceil_mode as for max_pool2d. */
tj_tensor *tj_conv3d(tj_tensor *x, tj_tensor *w, tj_tensor *bias, const int64_t stride[3],
                     const int64_t padding[3], const int64_t dilation[3], int64_t groups);
tj_tensor *tj_conv_transpose1d(tj_tensor *x, tj_tensor *w, tj_tensor *bias, int64_t stride,
                               int64_t padding, int64_t output_padding, int64_t groups,
                               int64_t dilation);
tj_tensor *tj_conv_transpose2d(tj_tensor *x, tj_tensor *w, tj_tensor *bias,
                               const int64_t stride[2], const int64_t padding[2],
                               const int64_t output_padding[2], int64_t groups,
                               const int64_t dilation[2]);
tj_tensor *tj_conv_transpose3d(tj_tensor *x, tj_tensor *w, tj_tensor *bias,
                               const int64_t stride[3], const int64_t padding[3],
                               const int64_t output_padding[3], int64_t groups,
                               const int64_t dilation[3]);
tj_tensor *tj_max_pool3d(tj_tensor *x, const int64_t kernel[3], const int64_t stride[3],
                         const int64_t padding[3], const int64_t dilation[3], bool ceil_mode);
tj_tensor *tj_avg_pool3d(tj_tensor *x, const int64_t kernel[3], const int64_t stride[3],
                         const int64_t padding[3], bool ceil_mode, bool count_include_pad);
/* ==== end of 3-D and transposed convolution ================================ */

/* ---- data movement ----------------------------------------------------- */
tj_tensor *tj_cat(tj_tensor *const *xs, int n, int dim);
tj_tensor *tj_stack(tj_tensor *const *xs, int n, int dim);
/* Splits into pieces of `size` along dim (the last may be smaller); writes up to
 * max pointers to out and returns the number of pieces, or -1 on error. */
int tj_split(tj_tensor *x, int64_t size, int dim, tj_tensor **out, int max);
/* torch.split(x, [s0, s1, ...], dim): n pieces of the given sizes (each >= 0;
 * they must sum to the size of dim) written to out[0..n); returns n, or -1. */
int tj_split_with_sizes(tj_tensor *x, const int64_t *sizes, int n, int dim, tj_tensor **out);
tj_tensor *tj_gather(tj_tensor *x, int dim, tj_tensor *index);
tj_tensor *tj_index_select(tj_tensor *x, int dim, tj_tensor *index);
/* pads: (before, after) pairs starting from the LAST dim, like torch.nn.functional.pad. */
tj_tensor *tj_pad(tj_tensor *x, const int64_t *pads, int npairs, double value);
tj_tensor *tj_flip(tj_tensor *x, const int *dims, int ndims);   /* ndims 0: every dim (torch.flip: none) */

/* ---- indexing, scans and shapes (PyTorch's names and semantics) ---------- */
/* Views and shape changes. */
tj_tensor *tj_narrow(tj_tensor *x, int dim, int64_t start, int64_t length);  /* start < 0 counts from the end */
tj_tensor *tj_movedim(tj_tensor *x, const int *src, const int *dst, int n);
tj_tensor *tj_t(tj_tensor *x);                                /* at most 2 dims: swaps them */
tj_tensor *tj_unflatten(tj_tensor *x, int dim, const int64_t *sizes, int n);  /* one size may be -1 */
tj_tensor *tj_expand_as(tj_tensor *x, tj_tensor *other);
tj_tensor *tj_view_as(tj_tensor *x, tj_tensor *other);       /* a reshape: copies if strides forbid a view */
/* Masks. */
tj_tensor *tj_tril(tj_tensor *x, int64_t diagonal);           /* zero above the diagonal (last 2 dims) */
tj_tensor *tj_triu(tj_tensor *x, int64_t diagonal);           /* zero below it */
tj_tensor *tj_masked_fill(tj_tensor *x, tj_tensor *mask, double value);  /* bool mask broadcast to x */
tj_tensor *tj_index_fill(tj_tensor *x, int dim, tj_tensor *index, double value);  /* i64 index, 0 or 1 dims */
/* Diagonals (torch.diagonal, torch.diag_embed: dim1, dim2 default -2, -1 there). */
tj_tensor *tj_diagonal(tj_tensor *x, int64_t offset, int dim1, int dim2);
tj_tensor *tj_diag_embed(tj_tensor *x, int64_t offset, int dim1, int dim2);
/* torch.diag: a vector to a matrix with it on diagonal `diagonal`, a matrix to that diagonal. */
tj_tensor *tj_diag(tj_tensor *x, int64_t diagonal);
/* Repeats and rolls. */
tj_tensor *tj_repeat(tj_tensor *x, const int64_t *repeats, int n);   /* Tensor.repeat: n >= x's dims */
tj_tensor *tj_tile(tj_tensor *x, const int64_t *dims, int n);
tj_tensor *tj_repeat_interleave(tj_tensor *x, int64_t repeats, int dim);
tj_tensor *tj_roll(tj_tensor *x, const int64_t *shifts, const int *dims, int n);  /* n dims; ndims 0: flattened, one shift */
tj_tensor *tj_unfold(tj_tensor *x, int dim, int64_t size, int64_t step);  /* Tensor.unfold: windows as a last dim */
/* Index-based reads (i64 indices). */
tj_tensor *tj_take(tj_tensor *x, tj_tensor *index);          /* into the flattened x; negative counts from the end */
tj_tensor *tj_take_along_dim(tj_tensor *x, tj_tensor *index, int dim);
tj_tensor *tj_one_hot(tj_tensor *index, int64_t num_classes);   /* i64[..., num_classes] */
/* Scans along dim (integer and bool cumsum/cumprod give i64; logcumsumexp takes floats). */
tj_tensor *tj_cumsum(tj_tensor *x, int dim);
tj_tensor *tj_cumprod(tj_tensor *x, int dim);
tj_tensor *tj_logcumsumexp(tj_tensor *x, int dim);
/* Running max/min; *indices (if not NULL) gets where each is (PyTorch's ties: the later). */
tj_tensor *tj_cummax(tj_tensor *x, int dim, tj_tensor **indices);
tj_tensor *tj_cummin(tj_tensor *x, int dim, tj_tensor **indices);
/* Sorting (stable; NaN sorts as the largest value). *indices, if not NULL, gets the i64 positions. */
tj_tensor *tj_argsort(tj_tensor *x, int dim, bool descending);
tj_tensor *tj_sort(tj_tensor *x, int dim, bool descending, tj_tensor **indices);
tj_tensor *tj_topk(tj_tensor *x, int64_t k, int dim, bool largest, tj_tensor **indices);  /* sorted */
tj_tensor *tj_kthvalue(tj_tensor *x, int64_t k, int dim, bool keepdim, tj_tensor **indices);  /* k from 1 */
tj_tensor *tj_median(tj_tensor *x, int dim, bool keepdim);   /* the lower median; NaN where a line has one */
/* torch.max(x, dim) and torch.min(x, dim): amax/amin values, argmax/argmin in *indices. */
tj_tensor *tj_max_dim(tj_tensor *x, int dim, bool keepdim, tj_tensor **indices);
tj_tensor *tj_min_dim(tj_tensor *x, int dim, bool keepdim, tj_tensor **indices);
/* Scatters (i64 indices, src of x's dtype): a copy of x with src written (or added) at index along dim. */
tj_tensor *tj_scatter(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *src);
tj_tensor *tj_scatter_add(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *src);
tj_tensor *tj_index_add(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *source, double alpha);
tj_tensor *tj_index_copy(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *source);
/* x[indices[0], .., indices[n-1]] = values (accumulate: +=), indices for x's first n dims. */
tj_tensor *tj_index_put(tj_tensor *x, tj_tensor *const *indices, int n, tj_tensor *values,
                        bool accumulate);
/* Positions that keep a sorted sequence sorted (i64; right: after equal entries). */
tj_tensor *tj_searchsorted(tj_tensor *sorted, tj_tensor *values, bool right);
tj_tensor *tj_bucketize(tj_tensor *values, tj_tensor *boundaries, bool right);
/* Data-dependent shapes: these read values, so inside a traced model they are a
 * graph break (the call runs eagerly; docs/tracing.md). */
tj_tensor *tj_nonzero(tj_tensor *x);                       /* i64[count, ndim] */
tj_tensor *tj_masked_select(tj_tensor *x, tj_tensor *mask);   /* 1-D; broadcast; differentiable in x */
/* Lists of tensors (views): each returns the count, or -1 with an error; out holds max. */
int tj_chunk(tj_tensor *x, int chunks, int dim, tj_tensor **out, int max);
int tj_unbind(tj_tensor *x, int dim, tj_tensor **out, int max);
int tj_meshgrid(tj_tensor *const *xs, int n, bool xy, tj_tensor **out);   /* 1-D inputs; xy: indexing='xy' */
tj_tensor *tj_hstack(tj_tensor *const *xs, int n);
tj_tensor *tj_vstack(tj_tensor *const *xs, int n);
/* where with a number for an arm (torch.where(c, x, 2.0)): the number is a weak scalar. */
tj_tensor *tj_where_xs(tj_tensor *cond, tj_tensor *a, double b);
tj_tensor *tj_where_sx(tj_tensor *cond, double a, tj_tensor *b);
/* Creation: like x (its shape and dtype), and ranges. */
tj_tensor *tj_full_like(tj_tensor *x, double value);
tj_tensor *tj_zeros_like(tj_tensor *x);
tj_tensor *tj_ones_like(tj_tensor *x);
tj_tensor *tj_empty_like(tj_tensor *x);   /* zeros, as tj_empty */
tj_tensor *tj_fill(tj_tensor *x, double value);         /* PrimTorch's fill: tj_full_like */
tj_tensor *tj_eye(tj_dtype dt, int64_t n, int64_t m);   /* m -1: n */
/* 0-dim: the largest and smallest finite values of a dtype (torch.finfo/iinfo max and min). */
tj_tensor *tj_maximum_value(tj_dtype dt);
tj_tensor *tj_minimum_value(tj_dtype dt);
tj_tensor *tj_linspace(tj_dtype dt, double start, double end, int64_t steps);
tj_tensor *tj_logspace(tj_dtype dt, double start, double end, int64_t steps, double base);

/* ==== interpolate, embedding_bag, einsum, scatter_reduce (issue 11) =========== */
/* How scatter_reduce combines (torch's reduce=) and embedding_bag's mode
 * (TJ_REDUCE_AMAX is its "max"). */
typedef enum tj_reduce_op {
    TJ_REDUCE_SUM, TJ_REDUCE_PROD, TJ_REDUCE_MEAN, TJ_REDUCE_AMAX, TJ_REDUCE_AMIN
} tj_reduce_op;
/* torch.scatter_reduce(x, dim, index, src, reduce, include_self): x with src's
 * values combined at index along dim (scatter's shape rules); include_self
 * false leaves x's value out where index reaches. An integer mean rounds down. */
tj_tensor *tj_scatter_reduce(tj_tensor *x, int dim, tj_tensor *index, tj_tensor *src,
                             tj_reduce_op reduce, bool include_self);
/* F.interpolate's modes. */
typedef enum tj_interp_mode {
    TJ_INTERP_NEAREST,    /* "nearest": 1, 2 or 3 spatial dims */
    TJ_INTERP_BILINEAR,   /* "bilinear": 2 spatial dims */
    TJ_INTERP_BICUBIC,    /* "bicubic": 2 spatial dims, A = -0.75, border clamped */
    TJ_INTERP_AREA        /* "area": 1, 2 or 3 spatial dims, adaptive_avg_pool{1,2,3}d */
} tj_interp_mode;
/* F.interpolate(x, size or scale_factor, mode, align_corners) on x [N,C,spatial...]
 * with k spatial dims: size (k entries) or, when size is NULL, scale_factor (k
 * entries > 0; the output size is floor(in * scale), and the scale sets the
 * source coordinates, as torch's recompute_scale_factor=None; area uses only
 * the size). align_corners is for bilinear and bicubic (false otherwise). */
tj_tensor *tj_interpolate(tj_tensor *x, const int64_t *size, const double *scale_factor, int k,
                          tj_interp_mode mode, bool align_corners);
/* F.embedding_bag(indices, weight, offsets, mode, per_sample_weights,
 * include_last_offset): weight [V,D]; indices 1-D with offsets (bag b is
 * indices[offsets[b] : offsets[b+1]]), or 2-D [B,L] with offsets NULL (a bag per
 * row); mode TJ_REDUCE_SUM, _MEAN or _AMAX (torch's "max"); per_sample_weights
 * (indices' shape, or NULL) for sum only. An empty bag gives zeros. -> [B, D] */
tj_tensor *tj_embedding_bag(tj_tensor *weight, tj_tensor *indices, tj_tensor *offsets,
                            tj_reduce_op mode, tj_tensor *per_sample_weights,
                            bool include_last_offset);
/* F.embedding_bag's further arguments; zeroed (or NULL) are tj_embedding_bag's. */
typedef struct tj_embedding_bag_options {
    tj_reduce_op mode;               /* TJ_REDUCE_SUM (0), _MEAN or _AMAX */
    tj_tensor *per_sample_weights;   /* indices' shape, mode sum only; or NULL */
    bool include_last_offset;
    bool has_padding_idx;            /* padding_idx is given: */
    int64_t padding_idx;             /* in [-V, V): its entries are skipped (not summed or
                                      * counted, no gradient); a bag of only them is zeros */
    double max_norm;                 /* > 0: torch's max_norm, which WRITES weight: rows
                                      * named (padding too) with norm > max_norm are scaled
                                      * by max_norm / (norm + 1e-7) in place, no gradient,
                                      * first (traced: functionalized, written back); 0: none */
    double norm_type;                /* the p of that norm (inf too); 0 means 2 */
} tj_embedding_bag_options;
tj_tensor *tj_embedding_bag_ex(tj_tensor *weight, tj_tensor *indices, tj_tensor *offsets,
                               const tj_embedding_bag_options *options);
/* torch.einsum(equation, operands): "ij,jk->ik", implicit output (no "->": the
 * letters seen once, sorted), a letter repeated in one operand (its diagonal),
 * "..." for broadcast batch dims; letters a-z, A-Z. Each pair of operands is
 * one permute + reshape + matmul, as PyTorch's; letters in one operand only are
 * summed first. */
tj_tensor *tj_einsum(const char *equation, tj_tensor *const *operands, int n);
/* ==== end of interpolate, embedding_bag, einsum, scatter_reduce ================ */

/* ==== remaining prims: xor_sum, as_strided, empty_strided (issue 11) ========= */
/* PrimTorch's xor_sum: bitwise xor of x over dims (ndims 0: every dim), integer
 * and bool x only, in x's dtype; an empty reduction gives 0. */
tj_tensor *tj_xor_sum(tj_tensor *x, const int *dims, int ndims, bool keepdim);
/* x.as_strided(size, stride, storage_offset), PyTorch's: a view of x's storage,
 * strides (none negative) in its elements from storage element storage_offset
 * (absolute: tj_offset(x) is torch's default), within the storage. Gradient:
 * PyTorch's (g summed at the positions read, shared among x's elements there).
 * Traced, x must hold its whole storage from offset 0 in row-major order (a
 * fresh op result does; such an argument is guarded so); else (a view, a
 * composite's result) it is a graph break, run eagerly, which tj_explain names. */
tj_tensor *tj_as_strided(tj_tensor *x, int ndim, const int64_t *size, const int64_t *stride,
                         int64_t storage_offset);
/* torch.empty_strided: a tensor of that size and those strides (none
 * negative) over storage of just the size they reach, filled with zeros
 * (deterministic, unlike torch's uninitialized memory). */
tj_tensor *tj_empty_strided(tj_dtype dt, int ndim, const int64_t *size, const int64_t *stride);
/* ==== end of remaining prims ================================================== */

/* ---- ONNX import (docs/onnx.md) -------------------------------------------
 * tj_onnx_load reads an ONNX model file (default domain, opsets 13-17, the
 * operators tj_onnx_op_name lists; initializers become the model's weights).
 * tj_onnx_run runs it eagerly on its inputs, in the model's input order,
 * checked against the declared types (a symbolic dim takes any size); it is a
 * tj_model_multi_fn, so tj_compile_multi(tj_onnx_run, model, opts) compiles
 * the model like one written in C (dumps, explain, the kernel cache). An
 * operator, attribute or form tjit does not support is an error naming the
 * node and its op type. */
typedef struct tj_onnx tj_onnx;
tj_onnx *tj_onnx_load(const char *path);       /* NULL with an error */
/* The same from size bytes in memory (a model embedded in a program); name
 * stands for the file in errors (NULL: "(memory)"). */
tj_onnx *tj_onnx_load_bytes(const void *data, size_t size, const char *name);
void tj_onnx_free(tj_onnx *m);                 /* NULL is fine */
int tj_onnx_num_inputs(const tj_onnx *m);
int tj_onnx_num_outputs(const tj_onnx *m);
const char *tj_onnx_input_name(const tj_onnx *m, int k);    /* NULL when out of range */
const char *tj_onnx_output_name(const tj_onnx *m, int k);
/* Writes the outputs to outs[0..n) (current scope) and returns n, or -1. */
int tj_onnx_run(void *model, tj_tensor *const *args, int nargs, tj_tensor **outs, int max);
int tj_onnx_num_ops(void);                     /* the ONNX operators tjit maps */
const char *tj_onnx_op_name(int k);

/* ---- compile: trace a model function into a graph ------------------------ */
/* A model: computes one tensor from args[0..nargs) with the ops above. Tensors
 * it reaches through ctx (weights) are captured by reference: an in-place
 * update (tj_copy_) is seen by the next call. Per-layer weights of a model
 * that calls one compiled function for N identical layers should be passed as
 * args, so that one trace serves every layer (regional compilation). */
typedef tj_tensor *(*tj_model_fn)(void *ctx, tj_tensor *const *args, int nargs);

typedef struct tj_compile_options {
    const char *name;        /* for dumps and tj_explain; default "model" */
    int recompile_limit;     /* graphs kept before falling back to eager; 0: 8 */
    bool no_dynamic;         /* never make a changing dim symbolic (dynamic=False);
                              * dims marked with tj_mark_dynamic still are */
    bool freeze;             /* weights are constants: what reads only weights (a
                              * transpose, batch norm's scale and shift) is folded
                              * once, a batch norm after a conv2d/linear/matmul on
                              * weights goes into their weight and bias; writing or
                              * releasing a weight retraces (a write through a tj_data
                              * pointer is not seen by the folds: in-place ops bump
                              * the version). Frozen or not, a GEMM weight's packed
                              * panels are kept across calls while its storage is
                              * unchanged (version and tj_data calls; without
                              * freeze, from the second call that finds it so) */
    /* ---- GEMM templates (runtime/gemm.h) ---- */
    bool autotune;           /* with freeze: time tjit's GEMM against OpenBLAS for each
                              * frozen weight's shape once, keep the faster (TJIT_AUTOTUNE=1
                              * turns it on for every handle) */
    bool quantize_dynamic;   /* implies freeze: f32 matmul/linear on a captured weight run
                              * in int8 like torch.ao's quantize_dynamic (per-channel
                              * symmetric s8 weights, per-row u8 activations, s32 sums);
                              * results carry the quantization error */
} tj_compile_options;

/* ---- shape marks (dynamic shapes) ---- */
/* Marks dim of t, a future argument of tj_call: dynamic makes it symbolic
 * from the first trace on (no recompile when it changes; sizes 0 and 1 stay
 * specialized, as in PyTorch); static keeps it a guarded constant even when
 * it changes (a recompile per size instead of a symbolic dim). The marks
 * belong to the tensor (not its views); a later mark of the same dim
 * replaces the other. 0, or -1 with an error (NULL, dim out of range). */
int tj_mark_dynamic(tj_tensor *t, int dim);
int tj_mark_static(tj_tensor *t, int dim);

typedef struct tj_compiled tj_compiled;

/* A handle that traces fn on its first call with each new input signature and
 * runs the recorded graph afterwards, behind guards. opts may be NULL. Tensors
 * fn reaches through ctx (weights) are guarded by identity: release one and
 * point ctx at a new one, and the next call traces again (docs/tracing.md). */
tj_compiled *tj_compile(tj_model_fn fn, void *ctx, const tj_compile_options *opts);
/* Calls the compiled model: returns what fn would return (owned by the current
 * scope), or NULL with an error. Results always equal eager ones. nargs must
 * be the count of the first call (the model's signature). A success leaves
 * tj_last_error() as it found it (never a message of the trace, a graph break
 * or a fallback inside the call). */
tj_tensor *tj_call(tj_compiled *c, tj_tensor *const *args, int nargs);
/* A model with several results (the loss and the logits, say): it writes its
 * results to outs[0..n), owned by the current scope, and returns n (at most
 * max), or -1 with an error. tj_call_multi returns them the same way, with
 * eager's aliasing: a result that is an argument is that tensor, one that is
 * a view of an argument, a weight or another result is such a view (a write
 * through one is seen through the other); a computed result is fresh. */
typedef int (*tj_model_multi_fn)(void *ctx, tj_tensor *const *args, int nargs, tj_tensor **outs,
                                 int max);
tj_compiled *tj_compile_multi(tj_model_multi_fn fn, void *ctx, const tj_compile_options *opts);
int tj_call_multi(tj_compiled *c, tj_tensor *const *args, int nargs, tj_tensor **outs, int max);
void tj_compiled_free(tj_compiled *c);
/* Graphs captured, node counts, guards, recompiles and the guard that failed,
 * graph breaks with reasons. malloc'd; the caller frees it. */
char *tj_explain(const tj_compiled *c);

/* What a compiled handle holds, as numbers (tj_explain prints the same facts
 * as text): what `tjit bench` reports, for a benchmark of your own. */
typedef struct tj_compiled_stats {
    int graphs;                 /* input signatures captured as graphs */
    int breaks;                 /* signatures that run eagerly (graph breaks) */
    unsigned long calls;        /* tj_call so far */
    unsigned long eager_calls;  /* of those, run eagerly (breaks, recompile limit) */
    /* The plan of the most recently captured graph, as built for its last
     * input shapes. compiled false: no plan built yet, or the graph runs on
     * the graph executor, because of why. */
    struct {
        bool compiled;
        char why[512];
        int kernels;            /* fused kernels launched per call */
        int eager_calls;        /* ops run by their eager kernel per call (matmul, ...) */
        double compile_ms;      /* what the plan's first call spent compiling */
        /* Its memory plan: intermediates share one arena, placed by lifetime;
         * outputs get their own allocations; blocked regions take scratch.
         * Each buffer's bytes are rounded up to 64. */
        int64_t arena_bytes;    /* intermediates */
        int64_t output_bytes;   /* outputs (not those stored into their tensors) */
        int64_t scratch_bytes;  /* blocked regions' per-thread scratch */
        int64_t peak_bytes;     /* the sum: the most one call holds at once */
        int buffers;            /* buffers it allocates: intermediates and outputs */
        int writes_stored;      /* write-backs (weights, optimizer state, tj_copy_ args)
                                 * the kernels store straight into their tensor (the
                                 * rest are copied after the call; docs/training.md) */
    } plan;
    /* The compiled backward (docs/training.md): one partitioned backward for
     * a call's results that require grad, made the first time a call in grad
     * mode had a weight or an argument that requires grad; where that cannot
     * be made, one per result, traced at the first tj_backward through it.
     * Counts summed over them. */
    struct {
        int graphs;             /* signatures traced as backward graphs */
        int breaks;             /* signatures whose backward runs eagerly */
        unsigned long calls;    /* backward runs */
        unsigned long eager_calls;
        /* ---- partitioned backwards (the joint graph split: the forward
         * saves what the backward reads; docs/training.md). Counted in graphs
         * and calls too; summed over the graph entries. */
        int partitioned;        /* entries whose backward is partitioned */
        int saved;              /* values their forwards save for the backward */
        int64_t saved_bytes;    /* what those hold per call (symbolic dims at their traced sizes) */
        int recomputed;         /* pointwise forward values the backwards compute again */
        int contractions;       /* matmul/conv2d in the backward graphs (none recomputed) */
    } backward;
    /* ---- graphs split at graph breaks (docs/tracing.md) ---- */
    /* A signature whose trace broke (tj_item, tj_data, tj_get, tj_manual_seed)
     * runs as compiled pieces with the break eagerly between them; its
     * entries count here, not in graphs or breaks. */
    struct {
        int graphs;             /* compiled pieces (one per path taken) */
        int breaks;             /* of those, pieces that end at a break */
        int compiled;           /* pieces built as LLVM kernels */
        int kernels;            /* kernels over all pieces */
        unsigned long runs;     /* piece runs of compiled plans */
        unsigned long executor_runs;  /* piece runs on the graph executor (a new
                                       * piece's first run, a late value) */
        unsigned long late;     /* values a piece recomputed because it did not
                                 * output them (the next call outputs them) */
    } split;
} tj_compiled_stats;

/* Fills out (thread-safe). 0, or -1 with an error when c is NULL (out zeroed). */
int tj_compiled_stats_get(const tj_compiled *c, tj_compiled_stats *out);

/* ---- static post-training quantization (docs/api.md) ----------------------
 * torch.ao's eager-mode flow: the model marks where activations are quantized
 * (tj_qstatic_act) and which weights (tj_qstatic_weight), each site by an id
 * of the user's choosing in [0, 256). tj_quantize_static runs the model
 * eagerly over calibration batches with observers at the sites (activations:
 * min/max per tensor; weights: recorded), then chooses the parameters
 * (activations affine u8 over the observed range widened to hold 0; weights
 * symmetric i8 per output channel, dim 0) and switches q to quantized: the
 * sites then return dequantize(quantize(x)), and tj_compile of the same model
 * folds each dequantize -> conv2d/linear (-> relu) (-> quantize) into int8
 * kernels (passes/fold_quant.c). A weight changed later is not seen. */
typedef struct tj_qstatic tj_qstatic;
#define TJ_QSTATIC_MAX_INPUTS 16
/* Calibration batch i: fills inputs[0..n) (in the current scope) and returns
 * n (at most TJ_QSTATIC_MAX_INPUTS), or 0 when there are no more. */
typedef int (*tj_calib_fn)(void *ctx, int i, tj_tensor **inputs);
tj_qstatic *tj_qstatic_new(void);
void tj_qstatic_free(tj_qstatic *q);
tj_tensor *tj_qstatic_act(tj_qstatic *q, int id, tj_tensor *x);
tj_tensor *tj_qstatic_weight(tj_qstatic *q, int id, tj_tensor *w);
/* 0, or -1 with an error (NULL arguments, no batch, the model failed, q
 * quantized already, a site given two weights). */
int tj_quantize_static(tj_qstatic *q, tj_model_fn fn, void *ctx, tj_calib_fn calib,
                       void *calib_ctx);

/* ---- runtime ----------------------------------------------------------- */
int tj_num_threads(void);
void tj_set_num_threads(int n);   /* also sets OpenBLAS's count */

/* Runs fn(ctx, begin, end) over [0, n) in chunks of at least grain items
 * split across tjit's thread pool, one contiguous chunk per thread (the
 * calling thread takes part), and returns when all are done; serial when
 * n <= grain or with one thread, and when called from inside a chunk.
 * 0, or -1 with an error when fn is NULL. */
typedef void (*tj_range_fn)(void *ctx, int64_t begin, int64_t end);
int tj_parallel_for(int64_t n, int64_t grain, tj_range_fn fn, void *ctx);

/* Large tensor buffers are cached by size class and reused. tj_alloc_trim
 * returns every cached block to the system (before measuring memory, say),
 * and the headers of released tensors held back to catch their use after
 * release; tj_alloc_cached_bytes is how much the cache holds now. */
void tj_alloc_trim(void);
size_t tj_alloc_cached_bytes(void);
/* Bytes of tensor data (and the runtime's buffers) allocated now and not
 * freed, cached blocks not counted (torch.cuda.memory_allocated's
 * counterpart), and their maximum since the last reset (reset: the maximum
 * starts again from what is allocated now; max_memory_allocated). */
size_t tj_alloc_live_bytes(void);
size_t tj_alloc_peak_bytes(bool reset);

/* ---- ahead-of-time export (docs/export.md) --------------------------------
 * tj_export writes the signatures c has compiled so far into one shared object:
 * their kernels' object code (linked with the system's `cc -shared`, which the
 * exporting machine must have), the plans as data (steps, buffers, shapes,
 * guards) and, unless no_weights, the captured weights; plus a C header with a
 * typed entry point <name>_run. Only signatures that ran as compiled plans, with
 * no graph break and no writes to their captures, can be exported.
 * tj_aot_load/run/free are in libtjit_rt (no LLVM): a program that only runs
 * exported models links -ltjit_rt. A call whose arguments match no exported
 * signature (dtype, shape, strides) is an error naming them; a CPU without the
 * features the kernels were compiled for is refused at load. */
typedef struct tj_export_options {
    const char *name;     /* C identifier of the header's entry points; default: the
                           * compiled function's name (tj_compile_options.name) */
    const char *header;   /* the header's path; default: path with ".so" -> ".h" */
    bool no_weights;      /* leave the weights out: they become trailing arguments */
} tj_export_options;
int tj_export(tj_compiled *c, const char *path, const tj_export_options *opts);   /* 0 or -1 */

typedef struct tj_aot_model tj_aot_model;
tj_aot_model *tj_aot_load(const char *path);     /* NULL with an error */
/* Runs the model: outs[0..) get its results (in the current scope, like
 * tj_call's); returns their count, or -1 with an error. Thread-safe. */
int tj_aot_run(tj_aot_model *m, tj_tensor *const *args, int nargs, tj_tensor **outs, int max);
void tj_aot_free(tj_aot_model *m);               /* NULL is fine */

TJ_API_END

/* The profiler: tjit_profile.h, a part of this header. A part is included
 * here, before the call-site macros, so that its declarations are not
 * expanded by them (scripts/callsites.sh reads the parts too). */
#include "tjit_profile.h"
/* Training: autograd, mixed precision, optimizers, schedules, clipping
 * (tjit_train.h, a part of this header; docs/training.md). */
#include "tjit_train.h"

/* ---- call sites ---------------------------------------------------------
 * Each op entry point above is also a function-like macro of its own name that
 * records the caller's __FILE__ and __LINE__ (one thread-local store) before
 * calling it: dumps (`# model.c:42` on a node) and error messages ("... at
 * model.c:42") name the line of your code that made the op. &tj_add and
 * (tj_add)(a, b) bypass the macro; #define TJ_NO_CALLSITE before including
 * tjit.h leaves them all out. Generated from the declarations above into
 * tjit_callsites.h by scripts/callsites.sh (every build refreshes it; make
 * test checks it). */
#include "tjit_callsites.h"

#ifdef __cplusplus
}
#endif
#endif /* TJIT_H */
