"""opinfo.py - OpInfo-style samples for every row of ir/ops.def against PyTorch
(tests/test_opinfo.c runs each one eager and compiled).

The rows are read from ir/ops.def (never listed here again); SAMPLES below
says how to draw samples for a row (UNARY and BINARY rows by their family)
and REF how PyTorch computes it. A row of ops.def with no samples fails the
test unless tests/golden/opinfo/known.txt exempts it with its reason; that
file also lists where tjit deliberately differs. Kinds of sample, the tags
of a line (docs/ops.md counts them per op):

    plain      same-shape f32 inputs
    dtype      another dtype than f32 (every dtype of DTYPES)
    promo      operands of different dtypes
    bcast      broadcast shapes
    extreme    0, -0, denormals, huge, +-inf, NaN, domain edges (EXTREME)
    empty      a size-0 dim
    0d         0-dim tensors
    ts, st     tensor-scalar and scalar-tensor (a weak Python scalar)
    noncontig  a sliced input (every second column)
    transposed a transposed input
    expanded   an expanded (stride-0) input
    args       the op's other arguments (dims, keepdim, stride, ...)
    large      long rows: vector loops with tails, threads, split reductions
    denorm     denormal divisors (fmod, remainder, ...)

cases.txt holds one line per sample:
    <op> <tags> <attrs> <result> <input>...
<attrs> is "-" or name=value;... in the schema order of the row (INTS as
[1,0], BOOL 0/1, DTYPE by name, floats as C's strtod reads them). <result>
is <dtype>:<shape>:<off> (values want.npy[off, off + numel), f64), or "err"
when PyTorch raises. An input is "-" (absent), s:<number> (a weak Python
scalar: int when written without '.', 'e', 'inf' or 'nan') or
t:<dtype>:<shape>:<off>:<view>: in.npy[off, off + numel) (off "r": ramp()
below, not stored) as <shape>, cast to
<dtype>, then the view of tests/util.c's tu_view (c: none, s: dim 1 sliced
1::2, e: dim 1 expanded, t: last two dims swapped). <shape> "-" is 0-dim.
Shapes are kept small: the committed files stay well under 2 MB.

A tol line per op states its tolerance, read by the test (the one place):
    tol <op> <rtol f32> <rtol f64> <atol> <compiled vs eager rtol>
Integers and bools compare exactly; NaN meets NaN and infinities are exact.

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import math
import os
import re
import sys

import torch
import torch.nn.functional as F

from common import DTYPE_NAME, DTYPES, Family, view

g = Family("opinfo")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

DT, NAME = DTYPES, DTYPE_NAME
# f16 and bf16: samples of the UNARY and BINARY families only (half_samples);
# the expected values are PyTorch's in f64 on the widened inputs, rounded once
# to the narrow type, tjit's promise (PyTorch 1.13 lacks most CPU f16 kernels).
HALF = {"f16": torch.float16, "bf16": torch.bfloat16}
ALL_DT, NAME = {**DT, **HALF}, {**NAME, torch.float16: "f16", torch.bfloat16: "bf16"}
FLOATS, INTS = ("f32", "f64"), ("u8", "i8", "i16", "i32", "i64")

# Extreme and domain-edge values: zeros, denormals, huge, inf, NaN, the
# edges of log/sqrt/asin/acos/acosh/atanh/erf and the rounding halves.
EXTREME = [0.0, -0.0, 1e-40, -1e-40, 5e-324, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5,
           1.0000001, -1.0000001, 3e38, -3e38, 1e300, 88.8, -104.0, 710.0, 20.0, -20.0,
           math.inf, -math.inf, math.nan, 1e-7]
EXTREME_INT = {"u8": [0, 1, 2, 127, 128, 254, 255],
               "i8": [0, 1, -1, 7, -7, 127, -128, 126, 3],
               "i16": [0, 1, -1, 7, -7, 32767, -32768, 32766, 3],
               "i32": [0, 1, -1, 7, -7, 2**31 - 1, -2**31, 2**31 - 2, 3],
               "i64": [0, 1, -1, 7, -7, 2**40, -2**40, 2**52, -3]}

# Tolerances, the one table: (rtol f32, rtol f64, atol, compiled vs eager rtol).
TOL_DEFAULT = (1e-6, 1e-13, 0.0, 1e-6)
TOL = {
    # tjit's branch-free polynomials (ir/vmath.h) against PyTorch's libm/SLEEF
    **{op: (4e-6, 1e-13, 1e-30, 4e-6) for op in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
        "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf",
        "erfc", "sigmoid", "gelu", "gelu_tanh", "silu", "softplus", "atan2", "pow",
        "rsqrt", "lerp",
        "erfinv", "elu", "selu", "celu", "mish", "logsigmoid", "softsign", "ndtr", "sinc",
        "logaddexp", "logaddexp2", "xlogy", "float_power", "glu", "hardswish", "hardsigmoid")},
    # x - tanh(x) and log(x / (1 - x)) cancel near 0 and 1/2: an absolute error
    **{op: (4e-6, 1e-13, 1e-6, 4e-6) for op in ("tanhshrink", "logit")},
    # lgamma and digamma near their zeros (1, 2, 1.46, ...): an absolute error
    **{op: (4e-6, 1e-12, 1e-6, 4e-6) for op in ("lgamma", "digamma")},
    # reductions and contractions sum in another order than PyTorch
    **{op: (1e-5, 1e-12, 1e-6, 1e-5) for op in (
        "sum", "mean", "prod", "logsumexp", "var", "std", "matmul", "linear", "conv2d",
        "softmax", "log_softmax", "avg_pool2d", "sdpa", "cross_entropy")},
    # normalized values near 0 after cancellation (a constant row) keep an absolute error
    **{op: (1e-5, 1e-12, 1e-4, 1e-5) for op in ("layer_norm", "rms_norm", "batch_norm")},
}

TYPE_ERRORS = []   # PyTorch's TypeErrors, printed: a reference's own mistake shows here
KINDS = ("plain dtype promo bcast extreme denorm empty 0d ts st noncontig transposed expanded "
         "args large").split()   # the tags above, in the order docs/ops.md gives them
ROWS = []          # (name, kind, nmin, nmax, [(attr, kind)]), in ops.def order
lines, want, inputs, input_at = [], [], [], {}


def read_ops_def():
    text = open(os.path.join(ROOT, "ir", "ops.def")).read()
    for m in re.finditer(r"^(UNARY\w*|BINARY\w*|OP)\((\w+),\s*(\w+)(.*)$", text, re.M):
        row, name, kind, rest = m.groups()
        attrs = re.findall(r"A\((\w+),\s*(\w+)\)", rest)
        if row != "OP":   # a pointwise row (a variant with attributes too): its family
            family = "UNARY" if row.startswith("UNARY") else "BINARY"
            arity = 1 if family == "UNARY" else 2
            ROWS.append((name, family, arity, arity, attrs))
            continue
        n = re.match(r",\s*(-?\d+),\s*(-?\d+)", rest)
        ROWS.append((name, kind, int(n.group(1)), int(n.group(2)), attrs))


# ---- inputs --------------------------------------------------------------------

def ramp(shape):
    """A long input not stored: element i is ((i * 7919) % 257) / 64 - 1,
    exact in every float dtype (test_opinfo.c makes the same)."""
    n = math.prod(shape)
    return ((torch.arange(n, dtype=torch.float64) * 7919) % 257 / 64 - 1).reshape(shape)


class T:
    """A tensor input: base values (any nesting torch.tensor takes) cast to dt,
    then the view v of tu_view. ramp: the values are ramp(shape), not stored."""
    def __init__(self, values, dt="f32", v="c", is_ramp=False):
        self.base = torch.tensor(values, dtype=torch.float64).to(ALL_DT[dt]) \
            if not isinstance(values, torch.Tensor) else values.to(ALL_DT[dt])
        self.dt, self.v, self.is_ramp = dt, v, is_ramp

    def torch(self):
        return view(self.base, self.v) if self.v != "c" else self.base

    def spec(self):
        if self.is_ramp:
            return f"t:{self.dt}:{shape_str(self.base.shape)}:r:{self.v}"
        flat = self.base.double().flatten().tolist()
        key = (tuple(str(x) for x in flat),)
        if key not in input_at:
            input_at[key] = len(inputs)
            inputs.extend(flat)
        return f"t:{self.dt}:{shape_str(self.base.shape)}:{input_at[key]}:{self.v}"


class S:
    """A weak Python scalar."""
    def __init__(self, v):
        self.v = v

    def spec(self):
        return f"s:{self.v!r}"


def shape_str(shape):
    return ",".join(str(s) for s in shape) or "-"


def rnd(shape, dt="f32", lo=-3, hi=3):
    """Values exact in every dtype: ints for integer dtypes, eighths for floats."""
    if dt == "bool":
        return (torch.rand(shape) > 0.5).double()
    if dt in INTS:
        lo = max(lo, 0) if dt == "u8" else lo
        return torch.randint(lo, hi + 1, shape).double()
    return (torch.randint(lo * 8, hi * 8 + 1, shape) / 8.0).double()


def t(shape, dt="f32", v="c", **kw):
    return T(rnd(shape, dt, **kw), dt, v)


def torch_scalar(s, others):
    """A weak scalar as a 0-dim tensor that promotes as the Python scalar
    would: its own kind (int: i64, float: f32) against dimensioned tensors,
    the result dtype against 0-dim ones (two 0-dim tensors promote fully)."""
    ts = [o for o in others if isinstance(o, torch.Tensor)]
    if ts and all(o.dim() == 0 for o in ts):
        return torch.tensor(s, dtype=torch.result_type(ts[0], s))
    return torch.tensor(s)


# ---- PyTorch's side -------------------------------------------------------------

def dims_arg(x, dims):
    return tuple(dims) if dims else tuple(range(x.dim()))


def reduce_ref(fn):
    def f(x, dims, keepdim):
        return fn(x, dim=dims_arg(x, dims), keepdim=bool(keepdim))
    return f


def one_dim_ref(fn):
    """prod, all, any take one dim in torch 1.13: reduce the dims one by one."""
    def f(x, dims, keepdim):
        if x.dim() == 0 or (not dims and not keepdim):
            if dims and any(d not in (0, -1) for d in dims):
                raise IndexError("dim out of range")
            return fn(x)
        ds = [d % x.dim() if -x.dim() <= d < x.dim() else 99 for d in dims_arg(x, dims)]
        if 99 in ds or len(set(ds)) != len(ds):
            raise IndexError("bad dims")
        for d in sorted(ds, reverse=True):
            x = fn(x, dim=d, keepdim=bool(keepdim))
        return x
    return f


def var_ref(fn):
    def f(x, dims, correction, keepdim):
        return fn(x, dim=dims_arg(x, dims), correction=correction, keepdim=bool(keepdim))
    return f


def arg_ref(fn):
    def f(x, dims, keepdim):
        return fn(x, dim=dims[0], keepdim=bool(keepdim)) if dims else fn(x, keepdim=bool(keepdim))
    return f


def squeeze_ref(x, dims):
    if not dims:
        return torch.squeeze(x)
    for d in sorted((d % max(x.dim(), 1) for d in dims), reverse=True):
        x = torch.squeeze(x, d)
    return x


def slice_ref(x, dim, start, end, step):
    idx = [slice(None)] * x.dim()
    idx[dim] = slice(start, end, step)
    return x[tuple(idx)]


def norm_dims(x, ndims):
    if not 1 <= ndims <= x.dim():
        raise RuntimeError("ndims out of range")
    return x.shape[x.dim() - ndims:]


def rms_norm_ref(x, w, ndims, eps):
    norm_dims(x, ndims)
    dims = tuple(range(-ndims, 0))
    y = x * torch.rsqrt(torch.mean(x * x, dim=dims, keepdim=True) + eps)
    return y * w if w is not None else y


def sdpa_ref(q, k, v, mask, causal, scale):
    s = q @ k.transpose(-1, -2) * (scale if scale > 0 else 1 / math.sqrt(q.shape[-1]))
    if causal:
        L, S_ = s.shape[-2], s.shape[-1]
        s = s.masked_fill(~torch.ones(L, S_, dtype=torch.bool).tril(), -math.inf)
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1) @ v


def clamp_ref(x, lo, hi):
    return torch.clamp(x, None if lo == -math.inf else lo, None if hi == math.inf else hi)


UNARY_TORCH = {"gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
               "silu": F.silu, "softplus": F.softplus, "relu": torch.relu}

REF = {
    "where": torch.where, "lerp": torch.lerp, "clamp": clamp_ref,
    "cast": lambda x, dt: x.to(DT[dt]),
    **{op: reduce_ref(getattr(torch, op)) for op in
       ("sum", "mean", "amax", "amin", "logsumexp")},
    **{op: one_dim_ref(getattr(torch, op)) for op in ("prod", "all", "any")},
    "var": var_ref(torch.var), "std": var_ref(torch.std),
    "argmax": arg_ref(torch.argmax), "argmin": arg_ref(torch.argmin),
    "reshape": torch.reshape, "permute": torch.permute, "slice": slice_ref,
    "expand": lambda x, shape: x.expand(list(shape)), "squeeze": squeeze_ref,
    "unsqueeze": torch.unsqueeze,
    "copy": lambda x: x.clone(memory_format=torch.contiguous_format),
    "cat": lambda *a: torch.cat(a[:-1], a[-1]),
    "gather": lambda x, i, d: torch.gather(x, d, i),
    "index_select": lambda x, i, d: torch.index_select(x, d, i),
    "pad": lambda x, pads, value: F.pad(x, pads, value=value),
    "flip": torch.flip,
    "matmul": torch.matmul, "linear": F.linear,
    "conv2d": lambda x, w, b, s, p, d, gr: F.conv2d(x, w, b, s, p, d, gr),
    "softmax": torch.softmax, "log_softmax": torch.log_softmax,
    "layer_norm": lambda x, w, b, n, eps: F.layer_norm(x, norm_dims(x, n), w, b, eps),
    "rms_norm": lambda x, w, n, eps: rms_norm_ref(x, w, n, eps),
    "batch_norm": lambda x, m, v, w, b, eps: F.batch_norm(x, m, v, w, b, False, 0.1, eps),
    "max_pool2d": lambda x, k, s, p, d, ceil=0: F.max_pool2d(x, k, s, p, d, bool(ceil)),
    "max_pool2d_indices": lambda x, k, s, p, d, ceil=0: F.max_pool2d(
        x, k, s, p, d, bool(ceil), return_indices=True)[1],
    "avg_pool2d": lambda x, k, s, p, cip, ceil=0, div=0: F.avg_pool2d(
        x, k, s, p, bool(ceil), bool(cip), div or None),
    "embedding": lambda w, i: F.embedding(i, w),
    "sdpa": lambda q, k, v, m, c, s: sdpa_ref(q, k, v, m, c, s),
    "cross_entropy": lambda x, y, w, red, ii, ls: F.cross_entropy(
        x, y, w, ignore_index=ii, reduction=red, label_smoothing=ls),
    "scalar": lambda v, dt: torch.tensor(v, dtype=DT[dt]),
    "full": lambda shape, v, dt: torch.full(shape, v, dtype=DT[dt]),
    "arange": lambda a, b, s, dt: torch.arange(a, b, s, dtype=DT[dt]),
}


def ref(op):
    if op in REF:
        return REF[op]
    return UNARY_TORCH.get(op) or getattr(torch, op)


# ---- recording ------------------------------------------------------------------

def attr_str(op, attrs):
    schema = ROW[op][4]
    if not schema:
        return "-"
    out = []
    for (name, kind), v in zip(schema, attrs):
        if kind == "INTS":
            v = "[" + ",".join(str(int(x)) for x in v) + "]"
        elif kind == "BOOL":
            v = str(int(bool(v)))
        elif kind == "FLOAT":
            v = repr(float(v))
        out.append(f"{name}={v}")
    return ";".join(out)


# Where PyTorch's own f32 kernel loses accuracy (gelu's tail, where 1 + erf
# and 1 + tanh cancel; log1p near the top of the range; fmod and remainder of
# a huge by a small value), the reference for an f32 result is PyTorch in f64,
# rounded to f32.
F64_REF = ("gelu", "gelu_tanh", "log1p", "fmod", "remainder")
# ndtr: PyTorch's f32 kernel computes 1 + erf(x / sqrt 2), which cancels below
# about -2; its reference is f64, for integer inputs (computed in f32) too.
F64_ALL = ("ndtr",)


def call(op, ins, attrs, up=False):
    """PyTorch on the inputs: a weak scalar as a Python number, or where the
    op takes none, as a 0-dim tensor that promotes the same way. up: f32
    inputs computed in f64."""
    tens = [i.torch() if isinstance(i, T) else None for i in ins]
    if up:
        tens = [x.double() if x is not None and x.dtype in (torch.float32, *HALF.values()) else x
                for x in tens]
    args = [i.v if isinstance(i, S) else tens[k] for k, i in enumerate(ins)]
    wrapped = [torch_scalar(i.v, tens) if isinstance(i, S) else tens[k] for k, i in enumerate(ins)]
    if op in ("fmod", "remainder") and int_div_by_zero(*wrapped):
        raise RuntimeError("ZeroDivisionError")   # torch's fmod dies of SIGFPE here
    try:
        return ref(op)(*args, *attrs)
    except TypeError:
        if not any(isinstance(i, S) for i in ins):
            raise
        return ref(op)(*wrapped, *attrs)


def sample(op, tags, ins, attrs=()):
    """Runs PyTorch on ins (T, S or None) and attrs (schema order) and records
    the line; an op's positional torch arguments are its inputs, then attrs.
    Attributes left off the end take their DEFAULTS."""
    schema = ROW[op][4]
    attrs = tuple(attrs) + tuple(DEFAULTS[op][name] for name, _ in schema[len(attrs):])
    assert len(attrs) == len(schema), (op, attrs)
    half = {i.dt for i in ins if isinstance(i, T) and i.dt in HALF}
    try:
        r = call(op, ins, attrs, up=bool(half))
        if half and r.is_floating_point():
            r = r.to(HALF[half.pop()])   # one narrow dtype per sample
        elif op in F64_REF and r.dtype == torch.float32:
            r = call(op, ins, attrs, up=True).float()
        if op in F64_ALL and r.dtype == torch.float32:   # integer inputs too
            r = call(op, [T(i.base.float() if op in F32_IN else i.base, "f64", i.v)
                          if isinstance(i, T) else i for i in ins], attrs).float()
        if r.dtype not in NAME:
            raise RuntimeError(f"dtype {r.dtype}")
        res = f"{NAME[r.dtype]}:{shape_str(r.shape)}:{len(want)}"
        want.extend(r.double().flatten().tolist())
    except (RuntimeError, IndexError, ValueError, TypeError) as e:
        TYPE_ERRORS.append(f"{op}: {e}"[:150]) if isinstance(e, TypeError) else None
        res = "err"
    assert all(tag in KINDS for tag in tags), tags
    specs = [i.spec() if i is not None else "-" for i in ins]
    lines.append(" ".join([op, ",".join(tags), attr_str(op, attrs), res, *specs]))


def int_div_by_zero(a, b):
    r = torch.result_type(a, b)
    return not (r.is_floating_point or r == torch.bool) and bool((b.to(r) == 0).any())


SAMPLES = {}

# A new argument of a row (add's alpha, div's rounding_mode, the pools'
# ceil_mode, ...): its default here, so that the family's samples keep their
# meaning; REF[op] when PyTorch takes it by keyword; its own samples in EXTRA:
#     DEFAULTS["add"] = {"alpha": 1}
#     REF["add"] = lambda a, b, alpha: torch.add(a, b, alpha=alpha)
#     EXTRA["add"] = lambda op: [sample(op, ["args"], [t([2, 3]), t([2, 3])], (a,)) for a in (2, -0.5)]
# A new dtype is one line of DT (and of EXTREME_INT).
DEFAULTS = {}
EXTRA = {}


def samples_for(*ops):
    def reg(fn):
        for op in ops:
            SAMPLES[op] = fn
        return fn
    return reg


def views_and_shapes(op, mk, n, attrs=()):
    """The layout samples every op gets: empty, 0-dim, sliced, transposed and
    expanded inputs; mk(shape, dt, v) makes one input, n inputs."""
    sample(op, ["empty"], [mk([3, 0], "f32", "c") for _ in range(n)], attrs)
    sample(op, ["empty"], [mk([0], "f32", "c") for _ in range(n)], attrs)
    sample(op, ["0d"], [mk([], "f32", "c") for _ in range(n)], attrs)
    for v, tag in (("s", "noncontig"), ("t", "transposed"), ("e", "expanded")):
        base = [2, 6] if v == "s" else [3, 2] if v == "t" else [2, 3]
        sample(op, [tag], [mk(base, "f32", v)] + [mk([2, 3], "f32", "c") for _ in range(n - 1)],
               attrs)
        if n > 1:
            sample(op, [tag], [mk([2, 3], "f32", "c")] * (n - 1) + [mk(base, "f32", v)], attrs)


def unary(op):
    for dt in DT:
        sample(op, ["plain"] if dt == "f32" else ["dtype"], [t([2, 3], dt)])
    for dt in FLOATS:
        sample(op, ["extreme"], [T(EXTREME, dt)])
    for dt, vals in EXTREME_INT.items():
        sample(op, ["extreme", "dtype"], [T(vals, dt)])
    sample(op, ["extreme", "dtype"], [T([0, 1], "bool")])
    views_and_shapes(op, t, 1)
    sample(op, ["noncontig", "dtype"], [t([2, 6], "i32", "s")])
    sample(op, ["0d", "extreme"], [T(math.nan)])
    sample(op, ["large"], [T(ramp([3, 70]), "f32", "t", is_ramp=True)])
    half_samples(op, 1)


def half_samples(op, n):
    """The 16-bit floats: plain values, extremes and (binary) a scalar."""
    e = torch.tensor(EXTREME, dtype=torch.float64)
    for dt in HALF:
        sample(op, ["dtype"], [t([2, 3], dt, lo=1 if k else -3) for k in range(n)])
        if n == 1:
            sample(op, ["extreme", "dtype"], [T(EXTREME, dt)])
        else:
            sample(op, ["extreme", "dtype", "bcast"], [T(e[:, None], dt), T(e[None, ::3], dt)])
            sample(op, ["ts", "dtype"], [t([2, 3], dt, lo=1), S(2.5)])


def binary(op):
    for dt in DT:
        sample(op, ["plain"] if dt == "f32" else ["dtype"], [t([2, 3], dt), t([2, 3], dt, lo=1)])
    for a, b in (("i32", "f32"), ("u8", "i64"), ("bool", "f64"), ("f32", "f64"), ("i64", "f32"),
                 ("bool", "u8"), ("u8", "i32"), ("f64", "i32"), ("bool", "i32"), ("u8", "i8"),
                 ("i8", "i16"), ("i16", "f32"), ("i8", "i64")):
        sample(op, ["promo"], [t([2, 3], a), t([2, 3], b, lo=1)])
        sample(op, ["promo", "0d"], [t([2, 3], a), t([], b, lo=1)])
    sample(op, ["bcast"], [t([2, 3]), t([3])])
    sample(op, ["bcast"], [t([2, 1]), t([1, 3])])
    sample(op, ["bcast", "dtype"], [t([4, 1, 2], "i64"), t([3, 1], "i64", lo=1)])
    for dt in FLOATS:
        e = torch.tensor(EXTREME, dtype=torch.float64)
        b = torch.tensor([v for v in EXTREME if v == 0 or abs(v) >= 1e-30], dtype=torch.float64)
        sample(op, ["extreme", "bcast"], [T(e[:, None], dt), T(b[None, :], dt)])
        sample(op, ["extreme", "denorm"], [T([[1.0], [-2.5], [3e38], [0.0]], dt),
                                           T([[1e-40, -1e-40, 5e-324, 2e-310]], dt)])
    for dt, vals in EXTREME_INT.items():
        # no 0 divisor; no -1 for fmod/remainder/div_mode: INT_MIN % -1 and
        # INT_MIN / -1 kill torch (SIGFPE)
        nz = [v for v in vals if v != 0 and (v != -1 or op not in ("fmod", "remainder", "div_mode"))]
        v = torch.tensor(vals, dtype=torch.float64)
        sample(op, ["extreme", "dtype", "bcast"], [T(v[:, None], dt), T(torch.tensor(nz)[None, :].double(), dt)])
    sample(op, ["extreme", "dtype"], [T([[0, 0, 1, 1]], "i32"), T([[0, 1, 0, 1]], "i32")])
    sample(op, ["extreme", "dtype"], [T([0, 0, 1, 1], "bool"), T([0, 1, 0, 1], "bool")])
    for dt in ("f32", "i32", "u8", "f64", "bool", "i64"):
        for s in (2, 2.5, -3, 0.0 if dt in FLOATS else 1, math.inf):
            sample(op, ["ts"] + ([] if dt == "f32" else ["dtype"]), [t([2, 3], dt, lo=1), S(s)])
        sample(op, ["st"] + ([] if dt == "f32" else ["dtype"]), [S(3), t([2, 3], dt, lo=1)])
        sample(op, ["st"] + ([] if dt == "f32" else ["dtype"]), [S(-1.5), t([2, 3], dt, lo=1)])
    sample(op, ["large", "bcast"], [T(ramp([70, 3]), "f32", "t", is_ramp=True), T(ramp([70]), "f64", is_ramp=True)])
    sample(op, ["ts", "0d"], [t([], "i32", lo=1), S(2)])
    sample(op, ["ts", "0d"], [t([], "f32", lo=1), S(2.5)])
    views_and_shapes(op, lambda s, d, v: t(s, d, v, lo=1), 2)
    half_samples(op, 2)


def where(op):
    for a, b in (("f32", "f32"), ("i32", "f32"), ("i64", "f64"), ("u8", "bool"), ("bool", "bool"),
                 ("f64", "f64")):
        sample(op, ["plain" if a == b == "f32" else "promo" if a != b else "dtype"],
               [t([2, 3], "bool"), t([2, 3], a), t([2, 3], b)])
    sample(op, ["bcast"], [t([2, 1], "bool"), t([3]), t([2, 3])])
    sample(op, ["bcast", "0d"], [t([2, 3], "bool"), t([]), t([], "f64")])
    sample(op, ["extreme"], [T([1, 0, 1, 0], "bool"), T([math.nan, 1, math.inf, -0.0]),
                             T([0.0, -math.inf, 2, math.nan])])
    sample(op, ["dtype"], [t([2, 3], "u8"), t([2, 3]), t([2, 3])])
    sample(op, ["empty"], [t([3, 0], "bool"), t([3, 0]), t([3, 0])])
    sample(op, ["0d"], [t([], "bool"), t([]), t([])])
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [t(base, "bool", v), t(base, "f32", v), t([2, 3])])


def lerp(op):
    sample(op, ["plain"], [t([2, 3]), t([2, 3]), t([2, 3], lo=0, hi=1)])
    sample(op, ["dtype"], [t([2, 3], "f64"), t([2, 3], "f64"), t([2, 3], "f64", lo=0, hi=1)])
    sample(op, ["ts"], [t([2, 3]), t([2, 3]), S(0.25)])
    sample(op, ["ts", "dtype"], [t([2, 3], "f64"), t([2, 3], "f64"), S(0.75)])
    sample(op, ["ts", "extreme"], [t([2, 3]), t([2, 3]), S(2.5)])
    sample(op, ["promo"], [t([2, 3]), t([2, 3], "f64"), t([2, 3])])
    sample(op, ["promo"], [t([2, 3], "i64"), t([2, 3], "i64"), S(0.5)])
    sample(op, ["bcast"], [t([2, 3]), t([3]), t([2, 1])])
    sample(op, ["bcast", "0d"], [t([2, 3]), t([2, 3]), t([])])
    sample(op, ["extreme"], [T(EXTREME), T(list(reversed(EXTREME))), T([0.5] * len(EXTREME))])
    sample(op, ["extreme"], [T([0.0, 1, math.inf, -math.inf, 3e38]),
                             T([math.inf, math.nan, 1, 2, -3e38]), T([0.25, 0.5, 0.75, 1.0, 0.6])])
    views_and_shapes(op, lambda s, d, v: t(s, d, v, lo=0, hi=1), 3)


def clamp(op):
    inf = math.inf
    for dt in DT:
        for lo, hi in ((-1, 2), (-1.5, 2.5), (-inf, 1), (0.5, inf), (2, 1), (-inf, inf)):
            sample(op, ["plain" if dt == "f32" else "dtype", "args"], [t([2, 3], dt)], (lo, hi))
    for dt in FLOATS:
        sample(op, ["extreme"], [T(EXTREME, dt)], (-1.0, 1.5))
        sample(op, ["extreme", "args"], [T(EXTREME, dt)], (math.nan, 1.5))
        sample(op, ["extreme", "args"], [T(EXTREME, dt)], (-inf, -inf))
    sample(op, ["extreme", "dtype"], [T(EXTREME_INT["u8"], "u8")], (-5, 300))
    sample(op, ["extreme", "dtype"], [T(EXTREME_INT["i32"], "i32")], (-7, 2**31 - 1))
    views_and_shapes(op, t, 1, (-1.5, 1))


def cast(op):
    safe = [0.0, -0.0, 1.0, 2.5, 3.75, 127.0, 0.5, 200.0, 1e-40]
    for a in DT:
        for b in DT:
            vals = [0, 1, 2, 0, 1, 1] if b == "bool" or a == "bool" else rnd([2, 3], a, lo=0, hi=100)
            sample(op, ["dtype" if a != b else "plain" if a == "f32" else "dtype", "args"],
                   [T(vals, a)], (b,))
    for a in FLOATS:
        for b in ("f32", "f64", "bool"):
            sample(op, ["extreme", "args"], [T(EXTREME, a)], (b,))
        for b in ("i16", "i32", "i64", "u8"):
            sample(op, ["extreme", "args"], [T(safe, a)], (b,))
    sample(op, ["extreme", "args"], [T(EXTREME_INT["i16"], "i16")], ("i8",))
    sample(op, ["extreme", "args"], [T(EXTREME_INT["i8"], "i8")], ("u8",))
    sample(op, ["extreme", "args"], [T(EXTREME_INT["i32"], "i32")], ("u8",))
    sample(op, ["extreme", "args"], [T(EXTREME_INT["i64"], "i64")], ("i32",))
    views_and_shapes(op, t, 1, ("i64",))


def reduction(op):
    attrs = {"var": lambda d, k: (d, 1, k), "std": lambda d, k: (d, 1, k)}.get(
        op, lambda d, k: (d, k))
    argop = op in ("argmax", "argmin")
    dimsets = ([], [0], [1], [-1]) if argop else ([], [0], [1], [0, 1], [-1], [-2, -1])
    for dims in dimsets:
        for keep in (0, 1):
            sample(op, ["plain", "args"], [t([2, 3])], attrs(dims, keep))
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t([2, 3], dt)], attrs([1], 0))
            sample(op, ["dtype"], [t([2, 3], dt)], attrs([], 0))
    sample(op, ["args"], [t([2, 3, 4])], attrs([0, 2] if not argop else [2], 1))
    sample(op, ["args"], [t([2, 3, 4])], attrs([1] if argop else [2, 0], 0))
    sample(op, ["args"], [t([3, 40])], attrs([1], 0))
    for dt in FLOATS:
        sample(op, ["extreme"], [T(torch.tensor(EXTREME).reshape(2, 13), dt)], attrs([1], 0))
        sample(op, ["extreme"], [T([[1.0, math.inf, 2], [-math.inf, 3e38, 3e38]], dt)], attrs([1], 0))
        sample(op, ["extreme"], [T([[-0.0, 0.0, 1e-40], [math.inf, math.inf, 1]], dt)], attrs([1], 0))
    sample(op, ["extreme", "dtype"], [T([[2**31 - 1, 2**31 - 1, 5], [-2**31, 1, -1]], "i32")],
           attrs([1], 0))
    sample(op, ["extreme", "dtype"], [T([[255, 255, 3], [0, 1, 2]], "u8")], attrs([1], 0))
    for shape, dims in (([3, 0], [1]), ([3, 0], [0]), ([3, 0], []), ([0], []), ([0, 2], [1])):
        for keep in (0, 1):
            sample(op, ["empty", "args"], [t(shape)], attrs(dims, keep))
    for dims in ([], [0], [-1]):
        sample(op, ["0d", "args"], [t([])], attrs(dims, 0))
    sample(op, ["0d", "args"], [t([])], attrs([], 1))
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        for dims in ([0], [1], []):
            sample(op, [tag], [t(base, "f32", v)], attrs(dims, 0))
    if op in ("var", "std"):
        for corr in (0, 2, 3, 5):
            sample(op, ["args"], [t([2, 3])], (([1], corr, 0)))
            sample(op, ["args"], [t([2, 3])], (([], corr, 1)))
    sample(op, ["args"], [t([2, 3])], attrs([2], 0))
    sample(op, ["args"], [t([2, 3])], attrs([0, 0], 0) if not argop else attrs([-3], 0))
    for shape, dims in (([2, 1 << 16], [1]), ([1 << 17], []), ([3, 1000], [0]), ([3, 1000], [1])):
        if argop and len(dims) != 1:
            continue
        sample(op, ["large"], [T(ramp(shape), "f32", is_ramp=True)], attrs(dims, 0))
    sample(op, ["large", "dtype"], [T(ramp([2, 1 << 16]), "f64", is_ramp=True)], attrs([1], 1))


for name in ("sum", "mean", "prod", "amax", "amin", "logsumexp", "all", "any", "var", "std",
             "argmax", "argmin"):
    SAMPLES[name] = reduction
SAMPLES.update(where=where, lerp=lerp, clamp=clamp, cast=cast)


# Rows with an argument torch takes by keyword: the family's samples at
# torch's default, then the argument's own (EXTRA).
def alpha_ref(fn):
    """An integral alpha is a Python int, as tjit takes it (tj_add_ex);
    past int64 (1e300) it stays a float, which torch could not hold as an int."""
    def f(a, b, alpha):
        whole = float(alpha).is_integer() and abs(alpha) < 2.0**63
        return fn(a, b, alpha=int(alpha) if whole else alpha)
    return f


def alpha_samples(op):
    for dt in DT:
        alphas = (2, -0.5, 0.375, -3, 0, 1e300) if dt in FLOATS else (2, -3, 0, 1.5, 300, -255)
        for al in alphas:
            sample(op, ["plain" if dt == "f32" else "dtype", "args"], [t([2, 3], dt), t([2, 3], dt)],
                   (al,))
    for a, b, al in (("i32", "f32", -0.5), ("u8", "i64", -3), ("bool", "f64", 2.5), ("u8", "i8", -2),
                     ("i16", "i8", 3), ("bool", "bool", 1), ("i64", "f32", 1e39), ("bool", "i32", 0.5)):
        sample(op, ["promo", "args"], [t([2, 3], a), t([2, 3], b)], (al,))
    sample(op, ["bcast", "args"], [t([2, 3]), t([3])], (-1.5,))
    sample(op, ["bcast", "args"], [t([2, 1], "i16"), t([1, 3], "i16")], (-4,))
    for dt, s, al in (("f32", 2.5, 2), ("i32", 3, -2), ("i8", 3, 2.5), ("u8", 2, -1), ("f64", -1.5, 0.25)):
        sample(op, ["ts", "args"] + ([] if dt == "f32" else ["dtype"]), [t([2, 3], dt), S(s)], (al,))
    sample(op, ["st", "args"], [S(3), t([2, 3])], (0.5,))
    for dt in FLOATS:
        for al in (-0.5, 2, math.inf, math.nan, 3e38):
            sample(op, ["extreme", "args"], [T(EXTREME, dt), T(list(reversed(EXTREME)), dt)], (al,))
    for dt, vals in EXTREME_INT.items():
        for al in (2, -1):
            sample(op, ["extreme", "dtype", "args"], [T(vals, dt), T(list(reversed(vals)), dt)], (al,))
    views_and_shapes(op, t, 2, (-2.5,))
    sample(op, ["large", "bcast", "args"],
           [T(ramp([70, 3]), "f32", "t", is_ramp=True), T(ramp([70]), "f64", is_ramp=True)], (0.75,))


def div_mode_samples(op):
    """The family ran at trunc; floor over the same kinds, negative operands,
    integer division by zero (PyTorch raises) and MIN / -1 where torch wraps."""
    for dt in DT:
        sample(op, ["plain" if dt == "f32" else "dtype", "args"], [t([2, 3], dt), t([2, 3], dt, lo=1)],
               ("floor",))
        if dt != "bool":
            sample(op, ["dtype", "args"] if dt != "f32" else ["args"],
                   [T([7, -7, 7, -7, 0, 5], dt), T([2, 2, -2, -2, 3, -5], dt)], ("floor",))
            sample(op, ["dtype", "args"] if dt != "f32" else ["args"],
                   [T([7, -7, 7, -7, 0, 5], dt), T([2, 2, -2, -2, 3, -5], dt)], ("trunc",))
    for dt in INTS:
        for m in ("trunc", "floor"):
            sample(op, ["extreme", "dtype", "args"], [T([1, -3, 0], dt), T([0, 0, 0], dt)], (m,))
            sample(op, ["extreme", "dtype", "args"], [T([1, 4, 9], dt), T([3, 0, 1], dt)], (m,))
            sample(op, ["ts", "dtype", "args"], [T([1, -3, 0], dt), S(0)], (m,))
    for dt in ("i8", "i16"):
        lo = EXTREME_INT[dt][6]
        for m in ("trunc", "floor"):
            sample(op, ["extreme", "dtype", "args"], [T([lo, lo, -lo - 1], dt), T([-1, 1, -1], dt)], (m,))
    for dt in FLOATS:
        e = torch.tensor(EXTREME, dtype=torch.float64)
        b = torch.tensor([v for v in EXTREME if v == 0 or abs(v) >= 1e-30], dtype=torch.float64)
        sample(op, ["extreme", "bcast", "args"], [T(e[:, None], dt), T(b[None, :], dt)], ("floor",))
        sample(op, ["extreme", "denorm", "args"], [T([[1.0], [-2.5], [3e38], [0.0]], dt),
                                                   T([[1e-40, -1e-40, 5e-324, 2e-310]], dt)], ("floor",))
    for a, b in (("i32", "f32"), ("u8", "i8"), ("i64", "f64"), ("bool", "i32")):
        sample(op, ["promo", "args"], [t([2, 3], a), t([2, 3], b, lo=1)], ("floor",))
    for s in (2, -2.5, math.inf, -3):
        sample(op, ["ts", "args"], [t([2, 3]), S(s)], ("floor",))
        sample(op, ["ts", "dtype", "args"], [t([2, 3], "i64", lo=1), S(s)], ("floor",))
    sample(op, ["st", "args"], [S(-7), t([2, 3], "i32", lo=1)], ("floor",))
    sample(op, ["st", "args"], [S(7.5), t([2, 3], lo=1)], ("floor",))
    sample(op, ["bcast", "args"], [t([2, 1], "i16"), t([1, 3], "i16", lo=1)], ("floor",))
    views_and_shapes(op, lambda s, d, v: t(s, d, v, lo=1), 2, ("floor",))
    sample(op, ["large", "bcast", "args"],
           [T(ramp([70, 3]), "f32", "t", is_ramp=True), T(ramp([70]), "f64", is_ramp=True)], ("floor",))


def softplus_samples(op):
    for beta, th in ((2, 20), (0.5, 1), (-1, 20), (-0.5, 2), (1, 0), (1, -1), (3, 1e-3), (1e-3, 20)):
        sample(op, ["args"], [t([2, 3])], (beta, th))
        sample(op, ["args", "dtype"], [t([2, 3], "f64")], (beta, th))
    for dt in FLOATS:
        for beta, th in ((2, 5), (-1, 20), (0.5, 30)):
            sample(op, ["extreme", "args"], [T(EXTREME, dt)], (beta, th))
    sample(op, ["dtype", "args"], [t([2, 3], "i32")], (2, 1))
    views_and_shapes(op, t, 1, (-2, 3))


DEFAULTS.update(add_alpha={"alpha": 1}, sub_alpha={"alpha": 1}, div_mode={"rounding_mode": "trunc"},
                softplus={"beta": 1, "threshold": 20})
REF.update(add_alpha=alpha_ref(torch.add), sub_alpha=alpha_ref(torch.sub),
           div_mode=lambda a, b, m: torch.div(a, b, rounding_mode=m),
           softplus=lambda x, beta, threshold: F.softplus(x, beta, threshold))
SAMPLES.update(add_alpha=binary, sub_alpha=binary, div_mode=binary, softplus=unary)
EXTRA.update(add_alpha=alpha_samples, sub_alpha=alpha_samples, div_mode=div_mode_samples,
             softplus=softplus_samples)


def each_layout(op, mk, attrs, rest=()):
    """The op on sliced, transposed and expanded [2,3] views as its first
    input (rest: the other inputs)."""
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [mk(base, "f32", v), *rest], attrs)


def dtypes_of(op, shape, attrs):
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t(shape, dt)], attrs)


@samples_for("reshape")
def reshape(op):
    for shape in ([3, 2], [6], [-1], [1, 6, 1], [2, -1], [4, 2], [-1, -1]):
        sample(op, ["plain", "args"], [t([2, 3])], (shape,))
    dtypes_of(op, [2, 3], ([6],))
    sample(op, ["empty", "args"], [t([3, 0])], ([0, 5],))
    sample(op, ["empty", "args"], [t([3, 0])], ([-1],))
    sample(op, ["empty", "args"], [t([3, 0])], ([0, -1],))
    sample(op, ["0d", "args"], [t([])], ([1, 1],))
    sample(op, ["0d", "args"], [t([1])], ([],))
    each_layout(op, t, ([6],))
    each_layout(op, t, ([3, 2],))
    sample(op, ["extreme"], [T(EXTREME)], ([2, 13],))


@samples_for("permute")
def permute(op):
    for perm in ([1, 0], [0, 1], [-1, 0], [0, 0]):
        sample(op, ["plain", "args"], [t([2, 3])], (perm,))
    sample(op, ["args"], [t([2, 3, 4])], ([2, 0, 1],))
    sample(op, ["args"], [t([2, 3, 4])], ([1, 0],))
    dtypes_of(op, [2, 3], ([1, 0],))
    sample(op, ["empty", "args"], [t([3, 0, 2])], ([2, 1, 0],))
    sample(op, ["0d", "args"], [t([])], ([],))
    each_layout(op, t, ([1, 0],))
    sample(op, ["extreme"], [T(torch.tensor(EXTREME).reshape(2, 13))], ([1, 0],))


@samples_for("slice")
def slice_(op):
    big = 2**63 - 1
    for a in ((1, 0, 2, 1), (1, 1, big, 2), (0, -1, big, 1), (1, -2, -1, 1), (1, 5, 9, 1),
              (1, 2, 1, 1), (-1, 0, 3, 2), (1, -100, 100, 1), (1, 0, 3, 0), (1, 0, 3, -1),
              (2, 0, 1, 1)):
        sample(op, ["plain", "args"], [t([2, 3])], a)
    dtypes_of(op, [2, 3], (1, 1, 3, 1))
    sample(op, ["empty", "args"], [t([3, 0])], (1, 0, 1, 1))
    sample(op, ["empty", "args"], [t([3, 0])], (0, 1, 3, 1))
    sample(op, ["0d", "args"], [t([])], (0, 0, 1, 1))
    each_layout(op, t, (1, 0, 2, 1))
    each_layout(op, t, (0, 1, 2, 1))
    sample(op, ["extreme"], [T(EXTREME)], (0, 1, big, 3))


@samples_for("expand")
def expand(op):
    for shape in ([2, 3], [4, 2, 3], [-1, 3], [2, -1], [3, 3], [0, 2, 3]):
        sample(op, ["plain", "args"], [t([2, 3])], (shape,))
    sample(op, ["bcast", "args"], [t([2, 1])], ([2, 5],))
    sample(op, ["bcast", "args"], [t([1])], ([3, 0],))
    sample(op, ["bcast", "args"], [t([1, 3])], ([-1, 3],))
    dtypes_of(op, [1, 3], ([4, 3],))
    sample(op, ["empty", "args"], [t([3, 0])], ([2, 3, 0],))
    sample(op, ["0d", "args"], [t([])], ([2, 2],))
    sample(op, ["0d", "args"], [t([])], ([],))
    each_layout(op, t, ([2, 2, 3],))
    sample(op, ["extreme"], [T(torch.tensor(EXTREME).reshape(26, 1))], ([26, 2],))


@samples_for("squeeze")
def squeeze(op):
    for dims in ([], [0], [2], [-1], [0, 2], [1]):
        sample(op, ["plain", "args"], [t([1, 3, 1])], (dims,))
    dtypes_of(op, [1, 3], ([0],))
    sample(op, ["empty", "args"], [t([1, 0])], ([],))
    sample(op, ["empty", "args"], [t([1, 0])], ([1],))
    sample(op, ["0d", "args"], [t([])], ([],))
    sample(op, ["0d", "args"], [t([])], ([0],))
    each_layout(op, t, ([],))
    sample(op, ["extreme"], [T(torch.tensor(EXTREME).reshape(1, 26))], ([0],))


@samples_for("unsqueeze")
def unsqueeze(op):
    for d in (0, 1, 2, -1, -3, 3, -4):
        sample(op, ["plain", "args"], [t([2, 3])], (d,))
    dtypes_of(op, [2, 3], (1,))
    sample(op, ["empty", "args"], [t([3, 0])], (1,))
    sample(op, ["0d", "args"], [t([])], (0,))
    sample(op, ["0d", "args"], [t([])], (-1,))
    each_layout(op, t, (1,))
    sample(op, ["extreme"], [T(EXTREME)], (1,))


@samples_for("copy")
def copy(op):
    sample(op, ["plain"], [t([2, 3])])
    dtypes_of(op, [2, 3], ())
    sample(op, ["extreme"], [T(EXTREME)])
    sample(op, ["empty"], [t([3, 0])])
    sample(op, ["0d"], [t([])])
    each_layout(op, t, ())


@samples_for("cat")
def cat(op):
    sample(op, ["plain", "args"], [t([2, 3]), t([2, 3])], (0,))
    sample(op, ["plain", "args"], [t([2, 3]), t([2, 1]), t([2, 2])], (1,))
    sample(op, ["plain", "args"], [t([2, 3]), t([2, 3])], (-1,))
    sample(op, ["args"], [t([2, 3])], (0,))
    sample(op, ["args"], [t([2, 3]), t([3, 3])], (1,))
    sample(op, ["args"], [t([2, 3]), t([2, 3])], (2,))
    sample(op, ["args"], [t([2, 3]), t([3])], (0,))
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t([2, 3], dt), t([1, 3], dt)], (0,))
    for a, b in (("i32", "f32"), ("u8", "i64"), ("bool", "f64"), ("f32", "f64")):
        sample(op, ["promo"], [t([2, 3], a), t([1, 3], b)], (0,))
    sample(op, ["empty"], [t([3, 0]), t([3, 2])], (1,))
    sample(op, ["empty"], [t([0, 3]), t([2, 3])], (0,))
    sample(op, ["empty"], [t([0]), t([2, 3])], (0,))
    sample(op, ["empty"], [t([0, 3]), t([0, 3])], (0,))
    sample(op, ["0d"], [t([]), t([])], (0,))
    sample(op, ["extreme"], [T(EXTREME), T(EXTREME, "f32")], (0,))
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [t(base, "f32", v), t([2, 3])], (0,))
        sample(op, [tag], [t([2, 3]), t(base, "f32", v)], (1,))


def index(vals, dt="i64"):
    return T(vals, dt)


@samples_for("gather")
def gather(op):
    sample(op, ["plain", "args"], [t([2, 3]), index([[0, 2], [1, 1]])], (1,))
    sample(op, ["plain", "args"], [t([2, 3]), index([[1, 0, 1]])], (0,))
    sample(op, ["args"], [t([2, 3]), index([[0], [2]])], (-1,))
    sample(op, ["args"], [t([2, 3]), index([[0, 3]])], (1,))
    sample(op, ["args"], [t([2, 3]), index([[0, -1]])], (1,))
    sample(op, ["args"], [t([2, 3]), index([[0, 1]], "i32")], (1,))
    sample(op, ["args"], [t([2, 3]), index([[0, 1]])], (2,))
    dtypes_of2 = [dt for dt in DT if dt != "f32"]
    for dt in dtypes_of2:
        sample(op, ["dtype"], [t([2, 3], dt), index([[2, 0], [1, 0]])], (1,))
    sample(op, ["empty"], [t([3, 0]), index(torch.zeros(3, 0))], (1,))
    sample(op, ["empty"], [t([2, 3]), index(torch.zeros(2, 0))], (1,))
    sample(op, ["0d"], [t([]), index(0)], (0,))
    sample(op, ["extreme"], [T(torch.tensor(EXTREME).reshape(2, 13)), index([[12, 0, 5], [1, 2, 3]])], (1,))
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [t(base, "f32", v), index([[0, 2], [1, 1]])], (1,))
    sample(op, ["expanded"], [t([2, 3]), T([[0, 2, 1], [1, 0, 0]], "i64", "e")], (1,))
    sample(op, ["transposed"], [t([2, 3]), T([[0, 1], [2, 1], [1, 0]], "i64", "t")], (1,))


@samples_for("index_select")
def index_select(op):
    sample(op, ["plain", "args"], [t([2, 3]), index([2, 0, 0, 1])], (1,))
    sample(op, ["plain", "args"], [t([2, 3]), index([1, 0])], (0,))
    sample(op, ["args"], [t([2, 3]), index([1])], (-1,))
    sample(op, ["args"], [t([2, 3]), index([3])], (1,))
    sample(op, ["args"], [t([2, 3]), index([-1])], (1,))
    sample(op, ["args"], [t([2, 3]), index([0, 2], "i32")], (1,))
    sample(op, ["args"], [t([2, 3]), index([[0, 1]])], (1,))
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t([2, 3], dt), index([2, 1])], (1,))
    sample(op, ["empty"], [t([3, 0]), index([1, 2])], (0,))
    sample(op, ["empty"], [t([2, 3]), index(torch.zeros(0))], (1,))
    sample(op, ["0d"], [t([]), index([0])], (0,))
    sample(op, ["0d"], [t([2, 3]), index(1)], (0,))
    sample(op, ["extreme"], [T(EXTREME), index([24, 25, 0, 2])], (0,))
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [t(base, "f32", v), index([2, 0])], (1,))


@samples_for("pad")
def pad(op):
    for pads, v in (([1, 2], 0.0), ([0, 0, 1, 1], 2.5), ([1, 0], -math.inf), ([2, 2, 0, 0], math.nan),
                    ([-1, 1], 0.0), ([0, 0, 0, 0, 1, 0], 1.0), ([3], 0.0)):
        sample(op, ["plain", "args"], [t([2, 3])], (pads, v))
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t([2, 3], dt)], ([1, 1], 1.0))
    sample(op, ["dtype", "args"], [t([2, 3], "i32")], ([1, 1], 2.5))
    sample(op, ["empty"], [t([3, 0])], ([1, 1], 7.0))
    sample(op, ["empty"], [t([0, 2])], ([1, 1, 1, 0], 7.0))
    sample(op, ["0d"], [t([])], ([1, 1], 0.0))
    sample(op, ["extreme"], [T(EXTREME)], ([1, 1], math.inf))
    each_layout(op, t, ([1, 2, 0, 1], 0.5))


@samples_for("flip")
def flip(op):
    for dims in ([0], [1], [0, 1], [-1], [], [2], [0, 0]):
        sample(op, ["plain", "args"], [t([2, 3])], (dims,))
    dtypes_of(op, [2, 3], ([1],))
    sample(op, ["empty"], [t([3, 0])], ([0, 1],))
    sample(op, ["0d"], [t([])], ([],))
    sample(op, ["0d"], [t([])], ([0],))
    sample(op, ["extreme"], [T(EXTREME)], ([0],))
    each_layout(op, t, ([0, 1],))


@samples_for("matmul")
def matmul(op):
    for a, b in (([2, 3], [3, 4]), ([3], [3]), ([2, 3], [3]), ([3], [3, 4]), ([2, 2, 3], [3, 4]),
                 ([2, 1, 2, 3], [3, 3, 2]), ([2, 3], [4, 3]), ([], [3]), ([1, 5], [5, 1])):
        sample(op, ["plain", "bcast" if len(a) > 2 or len(b) > 2 else "args"], [t(a), t(b)])
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t([2, 3], dt), t([3, 2], dt)])
    sample(op, ["promo"], [t([2, 3]), t([3, 2], "f64")])
    sample(op, ["promo"], [t([2, 3], "i64"), t([3, 2], "i32")])
    sample(op, ["empty"], [t([2, 0]), t([0, 3])])
    sample(op, ["empty"], [t([0, 3]), t([3, 2])])
    sample(op, ["empty"], [t([2, 3]), t([3, 0])])
    sample(op, ["empty"], [t([0]), t([0])])
    sample(op, ["0d"], [t([]), t([])])
    sample(op, ["0d"], [t([]), t([3, 2])])
    sample(op, ["extreme"], [T([[1.0, math.inf], [math.nan, 0], [3e38, 3e38]]), T([[0.0, 1], [1, 0]])])
    sample(op, ["extreme"], [T([[1e-40, 1e-40]]), T([[1.0], [1.0]])])
    for v, tag, base in (("s", "noncontig", [3, 6]), ("t", "transposed", [3, 3]),
                         ("e", "expanded", [3, 3])):
        sample(op, [tag], [t(base, "f32", v), t([3, 2])])
        sample(op, [tag], [t([2, 3]), t(base, "f32", v)])


@samples_for("linear")
def linear(op):
    sample(op, ["plain"], [t([2, 3]), t([4, 3]), t([4])])
    sample(op, ["args"], [t([2, 3]), t([4, 3]), None])
    sample(op, ["bcast"], [t([2, 2, 3]), t([4, 3]), t([4])])
    sample(op, ["args"], [t([3]), t([4, 3]), t([4])])
    sample(op, ["args"], [t([2, 3]), t([4, 2]), t([4])])
    sample(op, ["dtype"], [t([2, 3], "f64"), t([4, 3], "f64"), t([4], "f64")])
    sample(op, ["dtype"], [t([2, 3], "i64"), t([4, 3], "i64"), None])
    sample(op, ["promo"], [t([2, 3]), t([4, 3], "f64"), t([4])])
    sample(op, ["empty"], [t([0, 3]), t([4, 3]), t([4])])
    sample(op, ["empty"], [t([2, 0]), t([4, 0]), t([4])])
    sample(op, ["0d"], [t([]), t([4, 3]), t([4])])
    sample(op, ["extreme"], [T([[math.inf, 0, 1], [math.nan, 1, 1]]), t([2, 3]), T([1.0, -math.inf])])
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [t(base, "f32", v), t([4, 3]), t([4])])
    sample(op, ["transposed"], [t([2, 3]), t([3, 4], "f32", "t"), t([4])])


@samples_for("conv2d")
def conv2d(op):
    x, w = [1, 2, 5, 5], [3, 2, 3, 3]
    for s, p, d, gr in (((1, 1), (0, 0), (1, 1), 1), ((2, 2), (1, 1), (1, 1), 1),
                        ((1, 2), (2, 0), (1, 1), 1), ((1, 1), (1, 1), (2, 2), 1),
                        ((1, 1), (0, 0), (1, 1), 2), ((0, 1), (0, 0), (1, 1), 1),
                        ((1, 1), (-1, 0), (1, 1), 1), ((1, 1), (0, 0), (1, 1), 3)):
        wt = [4, 1, 3, 3] if gr == 2 else w
        sample(op, ["plain", "args"], [t(x), t(wt), t([wt[0]])], ([*s], [*p], [*d], gr))
    sample(op, ["args"], [t(x), t(w), None], ([1, 1], [0, 0], [1, 1], 1))
    sample(op, ["args"], [t([2, 5, 5]), t(w), None], ([1, 1], [0, 0], [1, 1], 1))
    sample(op, ["args"], [t([1, 2, 2, 2]), t(w), None], ([1, 1], [0, 0], [1, 1], 1))
    sample(op, ["dtype"], [t(x, "f64"), t(w, "f64"), t([3], "f64")], ([1, 1], [1, 1], [1, 1], 1))
    sample(op, ["dtype"], [t(x, "i64"), t(w, "i64"), None], ([1, 1], [1, 1], [1, 1], 1))
    sample(op, ["promo"], [t(x), t(w, "f64"), None], ([1, 1], [1, 1], [1, 1], 1))
    sample(op, ["empty"], [t([0, 2, 5, 5]), t(w), t([3])], ([1, 1], [0, 0], [1, 1], 1))
    sample(op, ["empty"], [t([1, 2, 5, 5]), t([0, 2, 3, 3]), None], ([1, 1], [0, 0], [1, 1], 1))
    sample(op, ["0d"], [t([]), t(w), None], ([1, 1], [0, 0], [1, 1], 1))
    sample(op, ["extreme"], [T(torch.tensor(EXTREME[:25]).reshape(1, 1, 5, 5)), t([1, 1, 2, 2]), None],
           ([1, 1], [0, 0], [1, 1], 1))
    sample(op, ["transposed"], [t([1, 2, 5, 5], "f32", "t"), t(w), None], ([1, 1], [0, 0], [1, 1], 1))
    sample(op, ["expanded"], [t([1, 2, 5, 5], "f32", "e"), t(w), None], ([1, 1], [0, 0], [1, 1], 1))
    sample(op, ["noncontig"], [t(x), t([3, 4, 3, 3], "f32", "s"), None], ([1, 1], [0, 0], [1, 1], 1))


@samples_for("softmax", "log_softmax")
def softmax(op):
    for d in (0, 1, -1, 2, -3):
        sample(op, ["plain", "args"], [t([2, 3])], (d,))
    sample(op, ["args"], [t([2, 3, 4])], (1,))
    sample(op, ["args"], [t([3, 40])], (1,))
    dtypes_of(op, [2, 3], (1,))
    sample(op, ["extreme"], [T([[math.inf, 1, 2], [-math.inf, -math.inf, -math.inf],
                                [math.nan, 0, 1], [3e38, 3e38, -3e38], [100, -100, 0]])], (1,))
    sample(op, ["extreme"], [T([[math.inf, 1, 2], [-math.inf, 0, 0], [1e-40, 0, -0.0]], "f64")], (1,))
    sample(op, ["empty"], [t([3, 0])], (1,))
    sample(op, ["empty"], [t([3, 0])], (0,))
    sample(op, ["0d"], [t([])], (0,))
    each_layout(op, t, (1,))
    each_layout(op, t, (0,))


@samples_for("layer_norm")
def layer_norm(op):
    sample(op, ["plain"], [t([2, 3]), t([3]), t([3])], (1, 1e-5))
    sample(op, ["args"], [t([2, 3]), None, None], (1, 1e-5))
    sample(op, ["args"], [t([2, 3]), t([3]), None], (1, 0.5))
    sample(op, ["args"], [t([2, 3, 4]), t([3, 4]), t([3, 4])], (2, 1e-5))
    sample(op, ["args"], [t([2, 3]), t([2, 3]), t([2, 3])], (2, 1e-5))
    sample(op, ["args"], [t([2, 3]), t([4]), None], (1, 1e-5))
    sample(op, ["args"], [t([2, 3]), None, None], (3, 1e-5))
    sample(op, ["args"], [t([3, 40]), None, None], (1, 0.0))
    sample(op, ["dtype"], [t([2, 3], "f64"), t([3], "f64"), t([3], "f64")], (1, 1e-5))
    sample(op, ["dtype"], [t([2, 3], "i64"), None, None], (1, 1e-5))
    sample(op, ["promo"], [t([2, 3]), t([3], "f64"), None], (1, 1e-5))
    sample(op, ["extreme"], [T([[math.inf, 1, 2], [1, 1, 1], [math.nan, 0, 1], [3e18, -3e18, 0]]),
                             None, None], (1, 1e-5))
    sample(op, ["empty"], [t([0, 3]), t([3]), t([3])], (1, 1e-5))
    sample(op, ["empty"], [t([3, 0]), None, None], (1, 1e-5))
    sample(op, ["0d"], [t([]), None, None], (0, 1e-5))
    each_layout(op, t, (1, 1e-5), (None, None))
    sample(op, ["expanded"], [t([2, 3]), t([2, 3], "f32", "e"), None], (2, 1e-5))


@samples_for("rms_norm")
def rms_norm(op):
    sample(op, ["plain"], [t([2, 3]), t([3])], (1, 1e-6))
    sample(op, ["args"], [t([2, 3]), None], (1, 1e-6))
    sample(op, ["args"], [t([2, 3]), t([3])], (1, 0.5))
    sample(op, ["args"], [t([2, 3, 4]), t([3, 4])], (2, 1e-6))
    sample(op, ["args"], [t([2, 3]), None], (3, 1e-6))
    sample(op, ["args"], [t([3, 40]), None], (1, 0.0))
    sample(op, ["dtype"], [t([2, 3], "f64"), t([3], "f64")], (1, 1e-6))
    sample(op, ["promo"], [t([2, 3]), t([3], "f64")], (1, 1e-6))
    sample(op, ["extreme"], [T([[math.inf, 1, 2], [0, 0, 0], [math.nan, 0, 1], [3e18, -3e18, 0]]),
                             None], (1, 1e-6))
    sample(op, ["empty"], [t([0, 3]), t([3])], (1, 1e-6))
    sample(op, ["empty"], [t([3, 0]), None], (1, 1e-6))
    sample(op, ["0d"], [t([]), None], (0, 1e-6))
    each_layout(op, t, (1, 1e-6), (None,))


@samples_for("batch_norm")
def batch_norm(op):
    var = lambda shape, dt="f32": t(shape, dt, lo=1, hi=3)
    sample(op, ["plain"], [t([2, 3, 4]), t([3]), var([3]), t([3]), t([3])], (1e-5,))
    sample(op, ["args"], [t([2, 3]), t([3]), var([3]), None, None], (1e-5,))
    sample(op, ["args"], [t([2, 3, 2, 2]), t([3]), var([3]), t([3]), None], (0.5,))
    sample(op, ["args"], [t([2, 3]), t([4]), var([4]), None, None], (1e-5,))
    sample(op, ["dtype"], [t([2, 3], "f64"), t([3], "f64"), var([3], "f64"), None, None], (1e-5,))
    sample(op, ["promo"], [t([2, 3]), t([3], "f64"), var([3]), None, None], (1e-5,))
    sample(op, ["extreme"], [T([[math.inf, 0, math.nan], [1e-40, -0.0, 3e38]]), t([3]),
                             T([0.0, 1, 2]), None, None], (0.0,))
    sample(op, ["empty"], [t([0, 3]), t([3]), var([3]), None, None], (1e-5,))
    sample(op, ["empty"], [t([2, 3, 0]), t([3]), var([3]), None, None], (1e-5,))
    sample(op, ["0d"], [t([3]), t([]), var([]), None, None], (1e-5,))
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [t(base, "f32", v), t([3]), var([3]), None, None], (1e-5,))


def pool(op, extra):
    x = [1, 2, 5, 5]
    for k, s, p, d in (((2, 2), (2, 2), (0, 0), (1, 1)), ((3, 3), (1, 1), (1, 1), (1, 1)),
                       ((3, 2), (2, 1), (1, 0), (1, 1)), ((2, 2), (1, 1), (0, 0), (2, 2)),
                       ((2, 2), (0, 0), (0, 0), (1, 1)), ((2, 2), (2, 2), (2, 2), (1, 1)),
                       ((6, 6), (1, 1), (0, 0), (1, 1))):
        if op == "avg_pool2d" and d != (1, 1):
            continue
        for e in extra:
            a = ([*k], [*s], [*p], [*d]) if op != "avg_pool2d" else ([*k], [*s], [*p], e)
            sample(op, ["plain", "args"], [t(x)], a)
    a = ([2, 2], [2, 2], [1, 1], [1, 1]) if op != "avg_pool2d" else ([2, 2], [2, 2], [1, 1], 1)
    sample(op, ["args"], [t([2, 5, 5])], a)
    sample(op, ["args"], [t([5, 5])], a)
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t(x, dt)], a)
    sample(op, ["extreme"], [T(torch.tensor(EXTREME[:25]).reshape(1, 1, 5, 5))], a)
    sample(op, ["extreme"], [T(torch.full((1, 1, 2, 2), -math.inf))], a)
    sample(op, ["empty"], [t([0, 2, 5, 5])], a)
    sample(op, ["empty"], [t([1, 0, 5, 5])], a)
    sample(op, ["0d"], [t([])], a)
    for v, tag, base in (("s", "noncontig", [1, 4, 5, 5]), ("t", "transposed", [1, 2, 5, 5]),
                         ("e", "expanded", [1, 2, 5, 5])):
        sample(op, [tag], [t(base, "f32", v)], a)


SAMPLES["max_pool2d"] = SAMPLES["max_pool2d_indices"] = lambda op: pool(op, [None])
SAMPLES["avg_pool2d"] = lambda op: pool(op, [0, 1])


def pool_options(op):
    """ceil_mode (max, its indices, avg) and divisor_override (avg; 0 is
    none), samples where the row has them: the output rounds up, a last
    window that would start in the right padding is dropped, ties and NaNs
    pick the index PyTorch picks."""
    names = [n for n, _ in ROW[op][4]]
    if "ceil_mode" not in names:
        return
    avg = op == "avg_pool2d"
    x = [1, 2, 6, 7]
    for k, s, p, d in (((3, 3), (2, 2), (0, 0), (1, 1)), ((3, 3), (2, 2), (1, 1), (1, 1)),
                       ((2, 2), (2, 2), (1, 1), (1, 1)), ((6, 6), (2, 2), (0, 0), (1, 1)),
                       ((2, 3), (3, 2), (1, 1), (1, 2)), ((3, 3), (2, 2), (1, 1), (2, 2))):
        if avg and d != (1, 1):
            continue
        for cip in ((0, 1) if avg else (None,)):
            a = ([*k], [*s], [*p], cip, 1) if avg else ([*k], [*s], [*p], [*d], 1)
            sample(op, ["plain", "args"], [t(x)], a)
    a = ([3, 3], [2, 2], [1, 1], 1, 1) if avg else ([3, 3], [2, 2], [1, 1], [1, 1], 1)
    for dt in ("f64", "i64", "i32", "u8", "i16"):
        sample(op, ["dtype", "args"], [t([1, 2, 5, 5], dt)], a)
    sample(op, ["args"], [t([2, 5, 5])], a)
    sample(op, ["args", "transposed"], [t([1, 2, 7, 5], "f32", "t")], a)
    sample(op, ["args", "empty"], [t([0, 2, 5, 5])], a)
    ties = T(torch.randint(-1, 2, (1, 2, 5, 6)).double())
    sample(op, ["args", "extreme"], [ties], a)
    e = torch.tensor(EXTREME[:25]).reshape(1, 1, 5, 5)
    e[0, 0, :3, :3] = -math.inf
    sample(op, ["args", "extreme"], [T(e)], a)
    sample(op, ["args", "large"], [T(torch.randint(-2, 3, (1, 1, 3, 600)).double())],
           ([2, 3], [1, 2], [0, 1], 1, 1) if avg else ([2, 3], [1, 2], [0, 1], [1, 1], 1))
    if "divisor_override" in names:
        for k, s, p, cip, ceil, div in (((3, 3), (2, 2), (1, 1), 1, 0, 5), ((2, 2), (2, 2), (0, 0), 1, 0, -3),
                                        ((3, 3), (2, 2), (1, 1), 0, 1, 4), ((2, 2), (1, 1), (1, 1), 1, 1, 7),
                                        ((2, 2), (2, 2), (0, 0), 1, 1, -1), ((2, 2), (2, 2), (0, 0), 1, 0, 1)):
            sample(op, ["plain", "args"], [t(x)], ([*k], [*s], [*p], cip, ceil, div))
            sample(op, ["dtype", "args"], [t(x, "i64")], ([*k], [*s], [*p], cip, ceil, div))
        sample(op, ["dtype", "args"], [t(x, "f64")], ([3, 3], [2, 2], [1, 1], 1, 1, 4))


DEFAULTS.update(max_pool2d={"ceil_mode": 0}, max_pool2d_indices={"ceil_mode": 0},
                avg_pool2d={"ceil_mode": 0, "divisor_override": 0})
EXTRA.update(max_pool2d=pool_options, max_pool2d_indices=pool_options, avg_pool2d=pool_options)


@samples_for("embedding")
def embedding(op):
    sample(op, ["plain"], [t([5, 3]), index([0, 4, 2, 2])])
    sample(op, ["args"], [t([5, 3]), index([[0, 1], [4, 3]])])
    sample(op, ["args"], [t([5, 3]), index([5])])
    sample(op, ["args"], [t([5, 3]), index([-1])])
    sample(op, ["args"], [t([5, 3]), index([1, 2], "i32")])
    sample(op, ["args"], [t([5, 3]), index([1.0, 2.0], "f32")])
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t([5, 3], dt), index([3, 1])])
    sample(op, ["extreme"], [T(torch.tensor(EXTREME[:24]).reshape(8, 3)), index([7, 0, 3])])
    sample(op, ["empty"], [t([5, 3]), index(torch.zeros(0))])
    sample(op, ["empty"], [t([5, 0]), index([1, 2])])
    sample(op, ["0d"], [t([5, 3]), index(2)])
    for v, tag, base in (("s", "noncontig", [5, 6]), ("t", "transposed", [3, 5]),
                         ("e", "expanded", [5, 3])):
        sample(op, [tag], [t(base, "f32", v), index([0, 4, 1])])
    sample(op, ["expanded"], [t([5, 3]), T([[0, 1, 2], [3, 4, 0]], "i64", "e")])


@samples_for("sdpa")
def sdpa(op):
    q, k, v = [2, 3, 4], [2, 5, 4], [2, 5, 2]
    for causal, scale in ((0, 0.0), (1, 0.0), (0, 0.25), (1, 2.0)):
        sample(op, ["plain", "args"], [t(q), t(k), t(v), None], (causal, scale))
    sample(op, ["args"], [t(q), t(k), t(v), T(rnd([3, 5], "bool"), "bool")], (0, 0.0))
    sample(op, ["args", "bcast"], [t(q), t(k), t(v), t([1, 5])], (0, 0.0))
    sample(op, ["args"], [t([3, 4]), t([3, 4]), t([3, 4]), None], (1, 0.0))
    sample(op, ["bcast"], [t([2, 2, 3, 4]), t([2, 5, 4]), t([2, 5, 2]), None], (0, 0.0))
    sample(op, ["dtype"], [t(q, "f64"), t(k, "f64"), t(v, "f64"), None], (0, 0.0))
    sample(op, ["dtype"], [t(q, "i64"), t(k, "i64"), t(v, "i64"), None], (0, 0.0))
    sample(op, ["promo"], [t(q), t(k, "f64"), t(v), None], (0, 0.0))
    sample(op, ["extreme"], [T([[[math.inf, 0]], [[1e30, 1]]]), T([[[1.0, 0], [0, 1]], [[1, 1], [3e38, 0]]]),
                             t([2, 2, 2]), None], (0, 0.0))
    sample(op, ["extreme", "args"], [t(q), t(k), t(v), T(torch.zeros(3, 5), "bool")], (0, 0.0))
    sample(op, ["empty"], [t([2, 0, 4]), t(k), t(v), None], (0, 0.0))
    sample(op, ["empty"], [t(q), t([2, 0, 4]), t([2, 0, 2]), None], (0, 0.0))
    sample(op, ["0d"], [t([]), t(k), t(v), None], (0, 0.0))
    for vw, tag, base in (("s", "noncontig", [2, 6, 4]), ("t", "transposed", [2, 4, 3]),
                          ("e", "expanded", [2, 3, 4])):
        sample(op, [tag], [t(base, "f32", vw), t(k), t(v), None], (0, 0.0))
        mask = {"s": [3, 10], "t": [5, 3], "e": [3, 5]}[vw]
        sample(op, [tag], [t(q), t(k), t(v), t(mask, "f32", vw)], (0, 0.0))


@samples_for("cross_entropy")
def cross_entropy(op):
    x, y = [4, 3], index([0, 2, 1, 2])
    for red in ("mean", "sum", "none"):
        for ii, ls in ((-100, 0.0), (1, 0.0), (-100, 0.2), (2, 0.1)):
            sample(op, ["plain", "args"], [t(x), y, None], (red, ii, ls))
        sample(op, ["args"], [t(x), y, t([3], lo=1)], (red, -100, 0.0))
        sample(op, ["args"], [t(x), y, t([3], lo=1)], (red, 1, 0.3))
        sample(op, ["args"], [t(x), T(torch.softmax(rnd(x), 1)), None], (red, -100, 0.0))
        sample(op, ["args"], [t(x), T(torch.softmax(rnd(x), 1)), t([3], lo=1)], (red, -100, 0.1))
        sample(op, ["args"], [t([2, 3, 2, 2]), index([[[0, 1], [2, 2]], [[1, 1], [0, -100]]]), None],
               (red, -100, 0.0))
        sample(op, ["args"], [t([3]), index(1), None], (red, -100, 0.0))
    sample(op, ["args"], [t(x), index([0, 3, 1, 2]), None], ("mean", -100, 0.0))
    sample(op, ["args"], [t(x), index([0, 2, 1]), None], ("mean", -100, 0.0))
    sample(op, ["args"], [t(x), index([0, 2, 1, 2], "i32"), None], ("mean", -100, 0.0))
    sample(op, ["args"], [t(x), index([1, 1, 1, 1]), None], ("mean", 1, 0.0))
    sample(op, ["dtype"], [t(x, "f64"), y, None], ("mean", -100, 0.0))
    sample(op, ["dtype"], [t(x, "i64"), y, None], ("mean", -100, 0.0))
    sample(op, ["extreme"], [T([[math.inf, 0, 1], [-math.inf, 0, 1], [math.nan, 0, 0], [1e30, -1e30, 0]]),
                             y, None], ("none", -100, 0.0))
    sample(op, ["extreme"], [T([[100.0, -100, 0], [-1e4, 0, 1e4], [0, 0, 0], [88, 89, 90]]), y, None],
           ("none", -100, 0.0))
    sample(op, ["empty"], [t([0, 3]), index(torch.zeros(0)), None], ("mean", -100, 0.0))
    sample(op, ["empty"], [t([0, 3]), index(torch.zeros(0)), None], ("sum", -100, 0.0))
    sample(op, ["empty"], [t([0, 3]), index(torch.zeros(0)), None], ("none", -100, 0.0))
    sample(op, ["0d"], [t([3]), index(2), None], ("none", -100, 0.0))
    for vw, tag, base in (("s", "noncontig", [4, 6]), ("t", "transposed", [3, 4]),
                          ("e", "expanded", [4, 3])):
        sample(op, [tag], [t(base, "f32", vw), y, None], ("mean", -100, 0.0))


@samples_for("scalar")
def scalar(op):
    # a wrapped number: i64, f64 or bool only (fe_wrap_scalar), f32 refused
    for v in (2.5, -3, 0.0, -0.0, 1e-40, math.inf, math.nan, 3e38, 300, 1):
        for dt in ("f64", "i64", "bool"):
            if dt == "f64" or isinstance(v, int):
                sample(op, ["plain" if dt == "f64" else "dtype", "0d"], [], (v, dt))


@samples_for("full")
def full(op):
    for shape in ([2, 3], [], [3, 0], [0], [4]):
        sample(op, ["plain" if shape else "0d", "args"] + (["empty"] if 0 in shape else []), [],
               (shape, 2.5, "f32"))
    for dt in DT:
        sample(op, ["dtype", "args"], [], ([2, 2], 1 if dt == "bool" else 7, dt))
    for v in (math.inf, -math.inf, math.nan, -0.0, 1e-40, 3e38):
        sample(op, ["extreme", "args"], [], ([2], v, "f32"))
    sample(op, ["args"], [], ([-1, 2], 1.0, "f32"))


@samples_for("arange")
def arange(op):
    for a in ((0, 5, 1), (1, 2, 0.25), (5, 0, -1), (0, 1, 0.3), (0, 0, 1), (0, 5, -1), (0, 5, 0),
              (-3, 3, 2), (0.5, 3.7, 1)):
        for dt in ("f32", "f64", "i64", "i32"):
            sample(op, ["plain" if dt == "f32" else "dtype", "args"], [], (*a, dt))
    sample(op, ["extreme", "args"], [], (0, math.inf, 1, "f32"))
    sample(op, ["extreme", "args"], [], (0, math.nan, 1, "f32"))
    sample(op, ["empty", "args"], [], (3, 3, 1, "f32"))


# ==== nn and linalg (issue 11) ===================================================
import warnings  # noqa: E402
warnings.filterwarnings("ignore", category=UserWarning)   # torch's broadcast and kl_div notices
# The DCOMP rows: composites with no kernel of their own (their decomposition
# runs eagerly too). Losses take (input, target[, weights]) then reduction.

def prob(shape, dt="f32", v="c"):
    """Probabilities in (0, 1), exact in f32: eighths from 1/8 to 7/8."""
    return T((torch.randint(1, 8, shape) / 8.0).double(), dt, v)


REF.update({
    "mse_loss": lambda x, y, red: F.mse_loss(x, y, reduction=red),
    "l1_loss": lambda x, y, red: F.l1_loss(x, y, reduction=red),
    "smooth_l1_loss": lambda x, y, red, beta: F.smooth_l1_loss(x, y, reduction=red, beta=beta),
    "huber_loss": lambda x, y, red, delta: F.huber_loss(x, y, reduction=red, delta=delta),
    "binary_cross_entropy": lambda p, y, w, red: F.binary_cross_entropy(p, y, w, reduction=red),
    "binary_cross_entropy_with_logits": lambda x, y, w, pw, red: F.binary_cross_entropy_with_logits(
        x, y, w, reduction=red, pos_weight=pw),
    "kl_div": lambda x, y, red, lt: F.kl_div(x, y, reduction=red, log_target=bool(lt)),
})
TOL.update({op: (1e-5, 1e-12, 1e-6, 1e-5) for op in (
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div")})


def loss_layouts(op, mk, rest, attrs):
    sample(op, ["empty"], [mk([0, 3]), mk([0, 3]), *rest], attrs)
    sample(op, ["0d"], [mk([]), mk([]), *rest], attrs)
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [mk(base, "f32", v), mk([2, 3]), *rest], attrs)
        sample(op, [tag], [mk([2, 3]), mk(base, "f32", v), *rest], attrs)


@samples_for("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
def pair_losses(op):
    extra = {"smooth_l1_loss": [(1.0,), (0.5,), (0.0,), (-1.0,)],
             "huber_loss": [(1.0,), (0.25,), (2.0,), (0.0,)]}.get(op, [()])
    for red in ("mean", "sum", "none"):
        for e in extra:
            sample(op, ["plain", "args"], [t([2, 3]), t([2, 3])], (red, *e))
    e = extra[0]
    sample(op, ["bcast"], [t([2, 3]), t([3])], ("none", *e))
    sample(op, ["bcast"], [t([2, 1]), t([1, 3])], ("mean", *e))
    sample(op, ["args"], [t([2, 3]), t([4])], ("mean", *e))
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t([2, 3], dt), t([2, 3], dt)], ("mean", *e))
    for a, b in (("f32", "f64"), ("f64", "f32"), ("f32", "i64"), ("i64", "f32")):
        sample(op, ["promo"], [t([2, 3], a), t([2, 3], b)], ("none", *e))
    ext = T([[math.inf, 0, math.nan], [1e30, -1e30, 3e38]])
    sample(op, ["extreme"], [ext, t([2, 3])], ("none", *e))
    sample(op, ["extreme"], [t([2, 3]), ext], ("sum", *e))
    sample(op, ["large"], [T(ramp([3, 700]), "f32", is_ramp=True), t([700])], ("mean", *e))
    for red in ("mean", "sum", "none"):
        sample(op, ["empty"], [t([0, 3]), t([0, 3])], (red, *e))
    loss_layouts(op, lambda s, dt="f32", v="c": t(s, dt, v), [], ("mean", *e))


@samples_for("binary_cross_entropy", "binary_cross_entropy_with_logits")
def bce(op):
    logits = op.endswith("logits")
    mk = (lambda s, dt="f32", v="c": t(s, dt, v)) if logits else prob
    extra = [None] if not logits else [None, None]
    for red in ("mean", "sum", "none"):
        sample(op, ["plain", "args"], [mk([2, 3]), prob([2, 3]), *extra], (red,))
        sample(op, ["args"], [mk([2, 3]), prob([2, 3]), t([3], lo=0), *extra[1:]], (red,))
        if logits:
            sample(op, ["args"], [mk([2, 3]), prob([2, 3]), None, t([3], lo=0)], (red,))
            sample(op, ["args"], [mk([2, 3]), prob([2, 3]), t([2, 1], lo=0), t([2, 3], lo=0)], (red,))
    sample(op, ["args"], [mk([2, 3]), prob([3]), *extra], ("mean",))
    sample(op, ["args"], [mk([2, 3]), prob([2, 3]), t([4]), *extra[1:]], ("mean",))
    sample(op, ["dtype"], [mk([2, 3], "f64"), prob([2, 3], "f64"), *extra], ("mean",))
    sample(op, ["dtype"], [mk([2, 3], "f64"), prob([2, 3], "f64"), t([3], "f64"), *extra[1:]], ("none",))
    sample(op, ["dtype"], [t([2, 3], "i64", lo=0, hi=1), t([2, 3], "i64", lo=0, hi=1), *extra], ("mean",))
    sample(op, ["promo"], [mk([2, 3]), prob([2, 3], "f64"), *extra], ("mean",))
    sample(op, ["promo"], [mk([2, 3], "f64"), prob([2, 3]), *extra], ("none",))
    if logits:
        sample(op, ["extreme"], [T([[math.inf, -math.inf, math.nan], [100.0, -100.0, 0]]),
                                 prob([2, 3]), None, None], ("none",))
    else:
        sample(op, ["extreme"], [T([[0.0, 1.0, 1e-40], [1e-30, 1 - 1e-7, 0.5]]),
                                 T([[0.0, 1.0, 0.5], [1.0, 0.0, 0.5]]), None], ("none",))
    sample(op, ["large"], [mk([2, 150]), prob([2, 150]), *extra], ("mean",))
    for red in ("mean", "sum", "none"):
        sample(op, ["empty"], [mk([0, 3]), prob([0, 3]), *extra], (red,))
    sample(op, ["0d"], [mk([]), prob([]), *extra], ("mean",))
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [mk(base, "f32", v), prob([2, 3]), *extra], ("mean",))
        sample(op, [tag], [mk([2, 3]), prob(base, "f32", v), *extra], ("mean",))


@samples_for("kl_div")
def kl_div(op):
    lp = lambda s, dt="f32", v="c": T(torch.log(rnd(s, lo=0, hi=1) / 2 + 0.25), dt, v)
    for red in ("mean", "sum", "none"):
        for lt in (0, 1):
            sample(op, ["plain", "args"], [lp([2, 3]), prob([2, 3]) if not lt else lp([2, 3])],
                   (red, lt))
    sample(op, ["args"], [lp([2, 3]), T([[0.0, 0.5, 1.0], [0.25, 0.0, 0.75]])], ("none", 0))
    sample(op, ["bcast"], [lp([2, 3]), prob([3])], ("none", 0))
    sample(op, ["args"], [lp([2, 3]), prob([4])], ("none", 0))
    sample(op, ["dtype"], [lp([2, 3], "f64"), prob([2, 3], "f64")], ("sum", 0))
    sample(op, ["dtype"], [t([2, 3], "i64"), t([2, 3], "i64")], ("sum", 0))
    sample(op, ["promo"], [lp([2, 3]), prob([2, 3], "f64")], ("none", 1))
    sample(op, ["extreme"], [T([[-math.inf, 0, math.nan], [-1e30, 1e-40, 0]]),
                             T([[0.5, 0, 0.5], [math.inf, 1, math.nan]])], ("none", 0))
    sample(op, ["large"], [lp([2, 150]), prob([2, 150])], ("mean", 0))
    sample(op, ["empty"], [lp([0, 3]), prob([0, 3])], ("mean", 0))
    sample(op, ["0d"], [lp([]), prob([])], ("sum", 1))
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, [tag], [lp(base, "f32", v), prob([2, 3])], ("mean", 0))
        sample(op, [tag], [lp([2, 3]), prob(base, "f32", v)], ("mean", 0))


REF.update({
    "bmm": torch.bmm, "mv": torch.mv, "dot": torch.dot, "outer": torch.outer,
    "addmm": lambda c, a, b, beta, alpha: torch.addmm(c, a, b, beta=beta, alpha=alpha),
    "addmv": lambda c, a, b, beta, alpha: torch.addmv(c, a, b, beta=beta, alpha=alpha),
    # beta 0 ignores c (torch's documented rule): the reference is then bmm times alpha,
    # because PyTorch 1.13's CPU baddbmm at beta 0 gave NaN in one regeneration (the
    # samples' c held no NaN; it looks like a read of reused memory, not reproducible alone)
    "baddbmm": lambda c, a, b, beta, alpha: (torch.baddbmm(c, a, b, beta=beta, alpha=alpha)
                                             if beta != 0 else torch.bmm(a, b) * alpha),
    "tensordot": lambda a, b, da, db: torch.tensordot(a, b, dims=(list(da), list(db))),
    "trace": torch.trace,
    "cross": lambda a, b, dim: torch.linalg.cross(a, b, dim=dim),
})
TOL.update({op: (1e-5, 1e-12, 1e-6, 1e-5) for op in (
    "bmm", "mv", "dot", "outer", "addmm", "addmv", "baddbmm", "tensordot", "trace", "cross")})

PRODUCTS = {"bmm": ([2, 3, 4], [2, 4, 5]), "mv": ([3, 4], [4]), "dot": ([4], [4]),
            "outer": ([3], [4])}


@samples_for(*PRODUCTS)
def products(op):
    a, b = PRODUCTS[op]
    sample(op, ["plain"], [t(a), t(b)])
    for dt in DT:
        if dt not in ("f32", "bool"):
            sample(op, ["dtype"], [t(a, dt), t(b, dt)])
    sample(op, ["promo"], [t(a), t(b, "f64")])
    sample(op, ["args"], [t(a[:-1] + [a[-1] + 1]), t(b)])          # inner sizes differ
    sample(op, ["args"], [t(a + [1]), t(b)])                         # wrong ndim
    fin = [0.0, -0.0, 1e-40, -1e-40, 1.0, -1.0, 0.5, math.inf, math.nan, -2.5, 1e-7]   # no overflow
    sample(op, ["extreme"], [T(torch.tensor((fin * 6)[:math.prod(a)]).reshape(a)), t(b)])
    if op in ("dot", "mv"):
        sample(op, ["large"], [T(ramp([700] if op == "dot" else [2, 700]), "f32", is_ramp=True),
                               t([700])])
    sample(op, ["empty"], [t([0] + a[1:]), t(([0] + b[1:]) if op in ("bmm", "dot") else b)])
    if op != "dot":
        sample(op, ["empty"], [t(a), t(b[:-1] + [0])])
    sample(op, ["0d"], [t([]), t(b)])
    for v, tag in (("s", "noncontig"), ("t", "transposed"), ("e", "expanded")):
        if len(a) >= 2 or v == "s":
            base = a[:-1] + [a[-1] * 2] if v == "s" else a[:-2] + [a[-1], a[-2]] if v == "t" else a
            sample(op, [tag], [t(base, "f32", v) if len(a) >= 2 else t([a[0] * 2], "f32", "c"), t(b)])


ADDS = {"addmm": ([3, 5], [3, 4], [4, 5]), "addmv": ([3], [3, 4], [4]),
        "baddbmm": ([2, 3, 5], [2, 3, 4], [2, 4, 5])}


@samples_for(*ADDS)
def add_products(op):
    c, a, b = ADDS[op]
    for beta, alpha in ((1.0, 1.0), (0.5, 2.0), (0.0, 1.0), (-1.0, 0.0), (2.0, -0.5)):
        sample(op, ["plain", "args"], [t(c), t(a), t(b)], (beta, alpha))
    sample(op, ["bcast"], [t(c[-1:]), t(a), t(b)], (1.0, 1.0))
    sample(op, ["bcast"], [t([]), t(a), t(b)], (0.5, 1.0))
    sample(op, ["args"], [t(c[:-1] + [7]), t(a), t(b)], (1.0, 1.0))
    sample(op, ["extreme", "args"], [T(torch.full(c, math.nan)), t(a), t(b)], (0.0, 1.0))
    for dt in ("f64", "i64", "i32"):
        sample(op, ["dtype"], [t(c, dt), t(a, dt), t(b, dt)], (2.0, 3.0))
    sample(op, ["promo"], [t(c, "f64"), t(a), t(b)], (1.0, 1.0))
    sample(op, ["empty"], [t(c), t(a[:-1] + [0]), t([0] + b[1:] if op != "baddbmm" else [2, 0, 5])],
           (1.0, 1.0))
    sample(op, ["noncontig"], [t(c[:-1] + [c[-1] * 2], "f32", "s") if len(c) > 1 else t(c),
                               t(a[:-1] + [a[-1] * 2], "f32", "s"), t(b)], (1.0, 1.0))
    sample(op, ["transposed"], [t(c), t(a[:-2] + [a[-1], a[-2]], "f32", "t"), t(b)], (1.0, 1.0))


@samples_for("tensordot")
def tensordot(op):
    for a, b, da, db in (([2, 3, 4], [4, 3, 5], [1, 2], [1, 0]), ([2, 3], [3, 2], [1], [0]),
                         ([2, 3], [4], [], []), ([2, 3, 4], [3, 4], [-2, -1], [0, 1]),
                         ([3], [3], [0], [0])):
        sample(op, ["plain", "args"], [t(a), t(b)], (da, db))
    sample(op, ["args"], [t([2, 3]), t([3, 2])], ([1], [1]))
    sample(op, ["args"], [t([2, 3]), t([3, 2])], ([1], [0, 1]))
    sample(op, ["args"], [t([2, 3]), t([3, 2])], ([1, 1], [0, 0]))
    sample(op, ["args"], [t([2, 3]), t([3, 2])], ([2], [0]))
    sample(op, ["dtype"], [t([2, 3], "f64"), t([3, 2], "f64")], ([1], [0]))
    sample(op, ["dtype"], [t([2, 3], "i64"), t([3, 2], "i64")], ([1], [0]))
    sample(op, ["promo"], [t([2, 3]), t([3, 2], "f64")], ([1], [0]))
    sample(op, ["empty"], [t([0, 3]), t([3, 2])], ([1], [0]))
    sample(op, ["empty"], [t([2, 0]), t([0, 2])], ([1], [0]))
    sample(op, ["transposed"], [t([3, 2], "f32", "t"), t([3, 2])], ([1], [0]))
    sample(op, ["noncontig"], [t([2, 6], "f32", "s"), t([3, 2])], ([1], [0]))


@samples_for("trace")
def trace(op):
    for shape in ([3, 3], [2, 4], [4, 2], [1, 1]):
        sample(op, ["plain"], [t(shape)])
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype"], [t([3, 3], dt)])
    sample(op, ["extreme"], [T([[math.inf, 0], [0, math.nan]])])
    sample(op, ["args"], [t([2, 2, 2])])
    sample(op, ["empty"], [t([0, 3])])
    sample(op, ["0d"], [t([])])
    sample(op, ["large"], [T(ramp([300, 300]), "f32", is_ramp=True)])
    for v, tag, base in (("s", "noncontig", [3, 6]), ("t", "transposed", [3, 4]),
                         ("e", "expanded", [3, 3])):
        sample(op, [tag], [t(base, "f32", v)])


@samples_for("cross")
def cross(op):
    sample(op, ["plain", "args"], [t([2, 3]), t([2, 3])], (-1,))
    sample(op, ["args"], [t([3, 2]), t([3, 2])], (0,))
    sample(op, ["bcast", "args"], [t([1, 3]), t([4, 3])], (1,))
    sample(op, ["args"], [t([2, 3]), t([2, 3])], (0,))
    sample(op, ["args"], [t([2, 3]), t([2, 3])], (2,))
    sample(op, ["args"], [t([3]), t([2, 3])], (-1,))
    for dt in ("f64", "i64", "i32", "i16"):
        sample(op, ["dtype"], [t([2, 3], dt), t([2, 3], dt)], (1,))
    sample(op, ["promo"], [t([2, 3]), t([2, 3], "f64")], (1,))
    sample(op, ["extreme"], [T([[math.inf, 0, 1], [math.nan, 1, 2]]), t([2, 3])], (1,))
    sample(op, ["empty"], [t([0, 3]), t([0, 3])], (1,))
    sample(op, ["transposed"], [t([3, 2], "f32", "t"), t([2, 3])], (1,))
    sample(op, ["expanded"], [t([2, 3], "f32", "e"), t([2, 3])], (1,))
    sample(op, ["noncontig"], [t([3, 4], "f32", "s"), t([3, 2])], (0,))

REF.update({
    "conv1d": lambda x, w, b, s, p, d, g: F.conv1d(x, w, b, s, p, d, g),
    "max_pool1d": lambda x, k, s, p, d, c: F.max_pool1d(x, k, s or None, p, d, bool(c)),
    "avg_pool1d": lambda x, k, s, p, cip, c: F.avg_pool1d(x, k, s or None, p, bool(c), bool(cip)),
    "pixel_shuffle": F.pixel_shuffle, "pixel_unshuffle": F.pixel_unshuffle,
})
TOL.update({op: (1e-5, 1e-12, 1e-6, 1e-5) for op in ("conv1d", "avg_pool1d")})


@samples_for("conv1d")
def conv1d(op):
    x, w = [2, 4, 9], [6, 4, 3]
    for s, p, d, g in ((1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (3, 0, 1, 2), (1, 1, 1, 4)):
        sample(op, ["plain", "args"], [t(x), t([w[0], w[1] // g, w[2]]), t([6])], (s, p, d, g))
    sample(op, ["args"], [t(x), t(w), None], (1, 0, 1, 1))
    sample(op, ["args"], [t([4, 9]), t(w), None], (1, 0, 1, 1))
    sample(op, ["args"], [t(x), t([6, 3, 3]), None], (1, 0, 1, 1))
    sample(op, ["args"], [t([2, 4, 2]), t(w), None], (1, 0, 1, 1))
    sample(op, ["args"], [t(x), t([6, 4, 3, 1]), None], (1, 0, 1, 1))
    sample(op, ["dtype"], [t(x, "f64"), t(w, "f64"), t([6], "f64")], (1, 1, 1, 1))
    sample(op, ["promo"], [t(x), t(w, "f64"), None], (1, 0, 1, 1))
    sample(op, ["extreme"], [T(torch.tensor((EXTREME * 3)[:36]).reshape(1, 4, 9)), t(w), None],
           (1, 0, 1, 1))
    sample(op, ["empty"], [t([0, 4, 9]), t(w), None], (1, 0, 1, 1))
    sample(op, ["large"], [T(ramp([1, 4, 300]), "f32", is_ramp=True), t([2, 4, 3]), None], (2, 1, 1, 1))
    sample(op, ["noncontig"], [t([2, 4, 18], "f32", "s"), t(w), None], (1, 0, 1, 1))
    sample(op, ["transposed"], [t([2, 9, 4], "f32", "t"), t(w), None], (1, 0, 1, 1))


def pool1d_samples(op):
    mx = op == "max_pool1d"
    x = [2, 3, 9]
    for k, s, p, d, c in ((2, 0, 0, 1, 0), (3, 1, 1, 1, 0), (3, 2, 1, 1, 1), (2, 3, 1, 2, 1),
                          (4, 2, 2, 1, 0), (9, 1, 0, 1, 0)):
        if not mx and d != 1:
            continue
        for cip in ((None,) if mx else (0, 1)):
            sample(op, ["plain", "args"], [t(x)], (k, s, p, d, c) if mx else (k, s, p, cip, c))
    a = (3, 2, 1, 1, 0) if mx else (3, 2, 1, 1, 0)
    sample(op, ["args"], [t([3, 9])], a)
    sample(op, ["args"], [t([2, 3])], a)
    sample(op, ["args"], [t([9])], a)
    sample(op, ["args"], [t(x)], (3, 2, 2, 1, 0))
    for dt in ("f64", "i64"):
        sample(op, ["dtype"], [t(x, dt)], a)
    sample(op, ["extreme"], [T(torch.tensor(EXTREME[:24]).reshape(1, 2, 12))], a)
    sample(op, ["empty"], [t([0, 3, 9])], a)
    sample(op, ["large"], [T(ramp([1, 1, 700]), "f32", is_ramp=True)], (3, 3, 1, 1, 0))
    sample(op, ["noncontig"], [t([2, 3, 18], "f32", "s")], a)
    sample(op, ["transposed"], [t([2, 9, 3], "f32", "t")], a)


SAMPLES["max_pool1d"] = SAMPLES["avg_pool1d"] = pool1d_samples


@samples_for("pixel_shuffle", "pixel_unshuffle")
def pixel_shuffles(op):
    up = op == "pixel_shuffle"
    for shape, r in (([1, 8, 2, 3], 2), ([2, 9, 2, 2], 3), ([4, 3, 3], 1), ([2, 1, 4, 2, 3], 2)):
        if not up:
            shape = shape[:-3] + [shape[-3] // (r * r), shape[-2] * r, shape[-1] * r]
        sample(op, ["plain", "args"], [t(shape)], (r,))
    bad = [1, 6, 2, 2] if up else [1, 2, 3, 4]
    sample(op, ["args"], [t(bad)], (2,))
    sample(op, ["args"], [t([4, 4])], (2,))
    sample(op, ["args"], [t([1, 4, 2, 2])], (0,))
    for dt in ("f64", "i64", "u8", "bool"):
        sample(op, ["dtype"], [t([1, 4, 2, 2], dt)], (2,))
    sample(op, ["empty"], [t([0, 4, 2, 2])], (2,))
    sample(op, ["noncontig"], [t([1, 4, 2, 4], "f32", "s")], (2,))
    sample(op, ["transposed"], [t([1, 4, 2, 2], "f32", "t")], (2,))

REF.update({
    "group_norm": lambda x, w, b, g, eps: F.group_norm(x, g, w, b, eps),
    "instance_norm": lambda x, w, b, eps: F.instance_norm(x, weight=w, bias=b, eps=eps),
    "local_response_norm": lambda x, size, alpha, beta, k: F.local_response_norm(x, size, alpha, beta, k),
    "vector_norm": lambda x, o, dims, keep: torch.linalg.vector_norm(x, o, tuple(dims) or None, bool(keep)),
    "cosine_similarity": lambda a, b, dim, eps: F.cosine_similarity(a, b, dim, eps),
    "pairwise_distance": lambda a, b, p, eps, keep: F.pairwise_distance(a, b, p, eps, bool(keep)),
    "nll_loss": lambda x, y, w, red, ii: F.nll_loss(x, y, w, ignore_index=ii, reduction=red),
})
TOL.update({op: (1e-5, 1e-12, 1e-6, 1e-5) for op in (
    "vector_norm", "cosine_similarity", "pairwise_distance", "nll_loss", "local_response_norm")})
TOL.update({op: (1e-5, 1e-12, 1e-4, 1e-5) for op in ("group_norm", "instance_norm")})


@samples_for("group_norm", "instance_norm")
def group_instance_norm(op):
    gn = op == "group_norm"
    a = (lambda g, eps=1e-5: (g, eps)) if gn else (lambda g, eps=1e-5: (eps,))
    x = [2, 4, 3, 2]
    sample(op, ["plain"], [t(x), t([4]), t([4])], a(2))
    sample(op, ["args"], [t(x), None, None], a(4))
    sample(op, ["args"], [t(x), t([4]), None], a(1, 0.1))
    sample(op, ["args"], [t([2, 4, 5]), t([4]), t([4])], a(2))
    sample(op, ["args"], [t([2, 4]), None, None], a(2))
    sample(op, ["args"], [t(x), t([3]), None], a(2))
    if gn:
        sample(op, ["args"], [t(x), None, None], a(3))
    sample(op, ["dtype"], [t(x, "f64"), t([4], "f64"), t([4], "f64")], a(2))
    sample(op, ["dtype"], [t(x, "i64"), None, None], a(2))
    sample(op, ["promo"], [t(x), t([4], "f64"), None], a(2))
    sample(op, ["extreme"], [T(torch.tensor((EXTREME * 2)[:48]).reshape(x)), None, None], a(2))
    sample(op, ["empty"], [t([0, 4, 3]), None, None], a(2))
    sample(op, ["large"], [T(ramp([1, 2, 300]), "f32", is_ramp=True), None, None], a(2))
    sample(op, ["noncontig"], [t([2, 4, 3, 4], "f32", "s"), None, None], a(2))
    sample(op, ["transposed"], [t([2, 4, 2, 3], "f32", "t"), None, None], a(2))


@samples_for("local_response_norm")
def lrn(op):
    x = [2, 5, 3, 2]
    for size, al, be, k in ((3, 1e-4, 0.75, 1.0), (2, 0.5, 0.5, 2.0), (1, 1.0, 1.0, 1.0), (6, 0.1, 2.0, 0.5)):
        sample(op, ["plain", "args"], [t(x)], (size, al, be, k))
    sample(op, ["args"], [t([2, 5, 4])], (3, 0.1, 0.75, 1.0))
    sample(op, ["args"], [t([2, 5, 2, 2, 2])], (3, 0.1, 0.75, 1.0))
    sample(op, ["args"], [t([2, 5])], (3, 0.1, 0.75, 1.0))
    sample(op, ["args"], [t(x)], (0, 0.1, 0.75, 1.0))
    sample(op, ["dtype"], [t(x, "f64")], (3, 0.1, 0.75, 1.0))
    sample(op, ["extreme"], [T(torch.tensor((EXTREME * 3)[:60]).reshape(x))], (3, 0.1, 0.75, 1.0))
    sample(op, ["empty"], [t([0, 5, 3])], (3, 0.1, 0.75, 1.0))
    sample(op, ["noncontig"], [t([2, 5, 3, 4], "f32", "s")], (3, 0.1, 0.75, 1.0))
    sample(op, ["transposed"], [t([2, 5, 2, 3], "f32", "t")], (3, 0.1, 0.75, 1.0))


@samples_for("vector_norm")
def vector_norm(op):
    for o in (2.0, 1.0, 0.0, math.inf, -math.inf, 3.0, 0.5, -1.0):
        sample(op, ["plain", "args"], [t([3, 4])], (o, [], 0))
        sample(op, ["args"], [t([3, 4])], (o, [1], 1))
    sample(op, ["args"], [t([2, 3, 4])], (2.0, [0, 2], 0))
    sample(op, ["args"], [t([2, 3])], (2.0, [2], 0))
    sample(op, ["dtype"], [t([3, 4], "f64")], (2.0, [1], 0))
    sample(op, ["dtype"], [t([3, 4], "i64")], (2.0, [], 0))
    sample(op, ["extreme"], [T(EXTREME)], (2.0, [], 0))
    sample(op, ["extreme"], [T([3e38, 3e38])], (2.0, [], 0))
    sample(op, ["empty"], [t([0, 3])], (2.0, [0], 0))
    sample(op, ["0d"], [t([])], (2.0, [], 0))
    sample(op, ["large"], [T(ramp([3, 700]), "f32", is_ramp=True)], (2.0, [1], 0))
    each_layout(op, t, (2.0, [1], 0))


@samples_for("cosine_similarity", "pairwise_distance")
def similarity(op):
    cos = op == "cosine_similarity"
    args = [(1, 1e-8), (0, 1e-8), (-1, 0.5)] if cos else [(2.0, 1e-6, 0), (1.0, 0.0, 1), (3.0, 1e-6, 0)]
    for a in args:
        sample(op, ["plain", "args"], [t([3, 4]), t([3, 4])], a)
    a = args[0]
    sample(op, ["bcast"], [t([3, 4]), t([4])], a)
    sample(op, ["bcast"], [t([3, 1]), t([1, 4])], a)
    sample(op, ["args"], [t([3, 4]), t([5])], a)
    sample(op, ["dtype"], [t([3, 4], "f64"), t([3, 4], "f64")], a)
    sample(op, ["dtype"], [t([3, 4], "i64"), t([3, 4], "i64")], a)
    sample(op, ["promo"], [t([3, 4]), t([3, 4], "f64")], a)
    sample(op, ["extreme"], [T([[0.0, 0, 0], [1e-30, 0, 0], [math.inf, 1, 1], [math.nan, 0, 1]]),
                             t([4, 3])], a)
    sample(op, ["empty"], [t([0, 4]), t([0, 4])], a)
    sample(op, ["large"], [T(ramp([3, 700]), "f32", is_ramp=True), t([700])], a)
    for v, tag, base in (("s", "noncontig", [3, 8]), ("t", "transposed", [4, 3]),
                         ("e", "expanded", [3, 4])):
        sample(op, [tag], [t(base, "f32", v), t([3, 4])], a)


@samples_for("nll_loss")
def nll_loss(op):
    lp = lambda s, dt="f32", v="c": T(torch.log_softmax(rnd(s), 1 if len(s) > 1 else 0), dt, v)
    x, y = [4, 3], index([0, 2, 1, 2])
    for red in ("mean", "sum", "none"):
        for ii in (-100, 1):
            sample(op, ["plain", "args"], [lp(x), y, None], (red, ii))
        sample(op, ["args"], [lp(x), y, t([3], lo=1)], (red, -100))
        sample(op, ["args"], [lp(x), y, t([3], lo=1)], (red, 2))
        sample(op, ["args"], [lp([2, 3, 2]), index([[0, 1], [2, -100]]), None], (red, -100))
        sample(op, ["args"], [lp([3]), index(1), None], (red, -100))
    sample(op, ["args"], [lp(x), index([0, 3, 1, 2]), None], ("mean", -100))
    sample(op, ["args"], [lp(x), index([0, 2, 1]), None], ("mean", -100))
    sample(op, ["args"], [lp(x), index([0, 2, 1, 2], "i32"), None], ("mean", -100))
    sample(op, ["args"], [lp(x), index([1, 1, 1, 1]), None], ("mean", 1))
    sample(op, ["dtype"], [lp(x, "f64"), y, None], ("mean", -100))
    sample(op, ["dtype"], [t(x, "i64"), y, None], ("mean", -100))
    sample(op, ["extreme"], [T([[-math.inf, 0, 1], [math.nan, 0, 0], [1e30, -1e30, 0], [0, 0, 0]]),
                             y, None], ("none", -100))
    sample(op, ["empty"], [t([0, 3]), index(torch.zeros(0)), None], ("mean", -100))
    sample(op, ["empty"], [t([0, 3]), index(torch.zeros(0)), None], ("sum", -100))
    for vw, tag, base in (("s", "noncontig", [4, 6]), ("t", "transposed", [3, 4]),
                          ("e", "expanded", [4, 3])):
        sample(op, [tag], [t(base, "f32", vw), y, None], ("mean", -100))

REF.update({
    "adaptive_avg_pool1d": lambda x, s: F.adaptive_avg_pool1d(x, list(s)),
    "adaptive_avg_pool2d": lambda x, s: F.adaptive_avg_pool2d(x, list(s)),
    "adaptive_avg_pool3d": lambda x, s: F.adaptive_avg_pool3d(x, list(s)),
    "adaptive_max_pool2d": lambda x, s: F.adaptive_max_pool2d(x, list(s)),
    "cdist": lambda a, b, p: torch.cdist(a, b, p, compute_mode="donot_use_mm_for_euclid_dist"),
    "matrix_norm": lambda x, dims, keep: torch.linalg.matrix_norm(x, "fro", tuple(dims) or (-2, -1), bool(keep)),
})
TOL.update({op: (1e-5, 1e-12, 1e-6, 1e-5) for op in (
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "cdist", "matrix_norm")})


@samples_for("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
             "adaptive_avg_pool3d")
def adaptive_pools(op):
    k = 1 if op.endswith("1d") else 2 if op.endswith("2d") else 3
    x = [[2, 3, 7], [2, 3, 7, 5], [1, 2, 7, 5, 4]][k - 1]
    for o in ([3, 2, 3], [1, 1, 1], [7, 5, 4], [4, 3, 9], [2, 7, 2]):
        sample(op, ["plain", "args"], [t(x)], (o[:k],))
    sample(op, ["args"], [t(x[1:])], ([2, 2, 2][:k],))
    sample(op, ["args"], [t(x)], ([0, 2, 2][:k],))
    sample(op, ["args"], [t(x)], ([2, 2, 2, 2][:k + 1],))
    sample(op, ["args"], [t(x[-1:])], ([2, 2, 2][:k],))
    sample(op, ["dtype"], [t(x, "f64")], ([3, 2, 3][:k],))
    sample(op, ["dtype"], [t(x, "i64")], ([3, 2, 3][:k],))
    n = math.prod(x[1:])
    sample(op, ["extreme"], [T(torch.tensor((EXTREME * (n // len(EXTREME) + 1))[:n]).reshape(x[1:]))],
           ([3, 2, 3][:k],))
    sample(op, ["empty"], [t([0] + x[1:])], ([3, 2, 3][:k],))
    sample(op, ["noncontig"], [t(x[:-1] + [x[-1] * 2], "f32", "s")], ([3, 2, 3][:k],))
    sample(op, ["transposed"], [t(x[:-2] + [x[-1], x[-2]], "f32", "t")], ([3, 2, 3][:k],))
    if k > 1:   # windows of up to 8 entries (masked gathers) and longer ones (slices)
        sample(op, ["args"], [t(x[:-1] + [30])], ([4, 3, 3][:k],))


@samples_for("cdist")
def cdist(op):
    for p in (2.0, 1.0, 0.0, math.inf, 3.0):
        sample(op, ["plain", "args"], [t([3, 4]), t([5, 4])], (p,))
    sample(op, ["bcast"], [t([2, 3, 4]), t([5, 4])], (2.0,))
    sample(op, ["args"], [t([3, 4]), t([5, 3])], (2.0,))
    sample(op, ["args"], [t([4]), t([5, 4])], (2.0,))
    sample(op, ["args"], [t([3, 4]), t([5, 4])], (-1.0,))
    sample(op, ["dtype"], [t([3, 4], "f64"), t([5, 4], "f64")], (2.0,))
    sample(op, ["promo"], [t([3, 4]), t([5, 4], "f64")], (2.0,))
    sample(op, ["empty"], [t([0, 4]), t([5, 4])], (2.0,))
    sample(op, ["transposed"], [t([4, 3], "f32", "t"), t([5, 4])], (2.0,))
    sample(op, ["noncontig"], [t([3, 8], "f32", "s"), t([5, 4])], (1.0,))


@samples_for("matrix_norm")
def matrix_norm(op):
    sample(op, ["plain", "args"], [t([3, 4])], ([], 0))
    sample(op, ["args"], [t([2, 3, 4])], ([], 1))
    sample(op, ["args"], [t([2, 3, 4])], ([0, 2], 0))
    sample(op, ["args"], [t([4])], ([], 0))
    sample(op, ["args"], [t([2, 3, 4])], ([1, 1], 0))
    sample(op, ["dtype"], [t([3, 4], "f64")], ([], 0))
    sample(op, ["dtype"], [t([3, 4], "i64")], ([], 0))
    sample(op, ["extreme"], [T([[3e38, 3e38], [1e-40, 0]])], ([], 0))
    sample(op, ["empty"], [t([0, 4])], ([], 0))
    each_layout(op, t, ([], 0))

# ==== end of nn and linalg ========================================================


# ==== 3-D and transposed convolution, 3-D pools (issue 11) ========================
def _l(v, default):
    """An INTS attribute for torch: [] is the default."""
    return default if not v else (v[0] if len(v) == 1 else tuple(v))


REF.update({
    "conv3d": lambda x, w, b, s, p, d, g: F.conv3d(x, w, b, _l(s, 1), _l(p, 0), _l(d, 1), g),
    "conv_transpose1d": lambda x, w, b, s, p, op, g, d: F.conv_transpose1d(x, w, b, s, p, op, g, d),
    "conv_transpose2d": lambda x, w, b, s, p, op, g, d: F.conv_transpose2d(
        x, w, b, _l(s, 1), _l(p, 0), _l(op, 0), g, _l(d, 1)),
    "conv_transpose3d": lambda x, w, b, s, p, op, g, d: F.conv_transpose3d(
        x, w, b, _l(s, 1), _l(p, 0), _l(op, 0), g, _l(d, 1)),
    "max_pool3d": lambda x, k, s, p, d, c: F.max_pool3d(x, _l(k, None), _l(s, None), _l(p, 0),
                                                        _l(d, 1), bool(c)),
    "avg_pool3d": lambda x, k, s, p, cip, c: F.avg_pool3d(x, _l(k, None), _l(s, None), _l(p, 0),
                                                          bool(c), bool(cip)),
})
TOL.update({op: (1e-5, 1e-12, 1e-6, 1e-5) for op in (
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "avg_pool3d")})


@samples_for("conv3d")
def conv3d(op):
    x = [1, 4, 4, 5, 4]
    for s, p, d, g in (([1], [0], [1], 1), ([2, 1, 2], [1, 0, 1], [1, 1, 1], 1),
                       ([1], [2, 1, 0], [2, 1, 2], 1), ([1, 2, 1], [1], [1], 2), ([1], [1], [1], 4),
                       ([], [], [], 1), ([3], [0], [1], 1), ([1], [1], [1], 3)):
        w = [4, 4 // g, 3, 2, 2]
        sample(op, ["plain", "args"], [t(x), t(w), t([4])], (s, p, d, g))
    w = [4, 4, 3, 2, 2]
    a = ([1], [1], [1], 1)
    sample(op, ["args"], [t([4, 4, 5, 4]), t(w), None], a)
    sample(op, ["args"], [t(x), t([6, 4, 3, 2]), None], a)        # weight rank
    sample(op, ["args"], [t([4, 5, 4]), t(w), None], a)           # input rank
    sample(op, ["args"], [t(x), t([4, 3, 3, 2, 2]), None], a)     # channels
    sample(op, ["args"], [t(x), t([5, 2, 3, 2, 2]), None], ([1], [1], [1], 2))  # groups
    sample(op, ["args"], [t(x), t(w), None], ([0], [1], [1], 1))  # stride
    sample(op, ["args"], [t(x), t(w), None], ([1], [-1], [1], 1))  # padding
    sample(op, ["args"], [t([1, 4, 2, 5, 4]), t(w), None], ([1], [0], [1], 1))  # kernel > input
    sample(op, ["args"], [t(x), t(w), t([5])], a)                 # bias
    sample(op, ["dtype"], [t(x, "f64"), t(w, "f64"), t([4], "f64")], a)
    sample(op, ["dtype"], [t(x, "i64"), t(w, "i64"), None], a)
    sample(op, ["promo"], [t(x), t(w, "f64"), None], a)
    sample(op, ["extreme"], [T(torch.tensor((EXTREME * 4)[:60]).reshape(1, 1, 3, 4, 5)),
                             t([2, 1, 2, 2, 2]), None], a)
    sample(op, ["empty"], [t([0, 4, 4, 5, 4]), t(w), None], a)
    sample(op, ["large"], [T(ramp([1, 2, 12, 14, 16]), "f32", is_ramp=True), t([3, 2, 3, 3, 3]),
                           None], ([2], [1], [1], 1))
    sample(op, ["noncontig"], [t([1, 8, 4, 5, 4], "f32", "s"), t(w), None], a)
    sample(op, ["transposed"], [t([1, 4, 4, 4, 5], "f32", "t"), t(w), None], a)


def conv_t_samples(op):
    nd = int(op[-2])
    L = [4, 3, 3][:nd]
    x = [1, 4] + L
    k = [3, 2, 2][:nd]
    v = (lambda *a: a[0]) if nd == 1 else (lambda *a: list(a[:nd]))
    for s, p, o, g, d in ((1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (3, 2, 1, 1, 1), (2, 0, 1, 2, 1),
                          (1, 1, 0, 4, 2), (2, 3, 0, 1, 2), (1, 0, 1, 1, 2)):
        w = [4, 4 // g] + k
        sample(op, ["plain", "args"], [t(x), t(w), t([w[1] * g])], (v(s, 1, 2), v(p, 0, 1), v(o, 0, 1), g,
                                                                v(d, 1, 1)))
    w = [4, 3] + k
    a = (v(2, 2, 2), v(1, 1, 1), v(0, 0, 0), 1, v(1, 1, 1))
    sample(op, ["args"], [t(x), t(w), None], a)
    sample(op, ["args"], [t(x[1:]), t(w), None], a)                     # unbatched
    sample(op, ["args"], [t(x), t(w[:-1]), None], a)                    # weight rank
    sample(op, ["args"], [t(x[1:-1] if nd > 1 else [4]), t(w), None], a)  # input rank
    sample(op, ["args"], [t(x), t([3, 3] + k), None], a)                # channels
    sample(op, ["args"], [t(x), t([4, 3] + k), None], a[:3] + (3,) + a[4:])  # groups
    sample(op, ["args"], [t(x), t(w), None], (v(2, 2, 2), v(0, 0, 0), v(2, 2, 2), 1, v(1, 1, 1)))
    sample(op, ["args"], [t(x), t(w), None], (v(0, 1, 1), v(0, 0, 0), v(0, 0, 0), 1, v(1, 1, 1)))
    sample(op, ["args"], [t(x), t(w), None], (v(1, 1, 1), v(9, 9, 9), v(0, 0, 0), 1, v(1, 1, 1)))
    sample(op, ["args"], [t(x), t(w), t([5])], a)
    sample(op, ["dtype"], [t(x, "f64"), t(w, "f64"), t([3], "f64")], a)
    sample(op, ["promo"], [t(x), t(w, "f64"), None], a)
    sample(op, ["extreme"], [T(torch.tensor((EXTREME * 20)[:4 * math.prod(L)]).reshape([1, 4] + L)),
                             t(w), None], a)
    sample(op, ["empty"], [t([0] + x[1:]), t(w), None], a)
    sample(op, ["noncontig"], [t([1, 8] + L, "f32", "s"), t(w), None], a)
    sample(op, ["transposed"], [t(x[:-2] + [x[-1], x[-2]], "f32", "t"), t(w), None], a)


SAMPLES["conv_transpose1d"] = SAMPLES["conv_transpose2d"] = SAMPLES["conv_transpose3d"] = \
    conv_t_samples


def pool3d_samples(op):
    mx = op == "max_pool3d"
    x = [1, 2, 5, 4, 6]
    for k, s, p, d, c in (([2], [], [0], [1], 0), ([3], [1], [1], [1], 0),
                          ([3, 2, 3], [2, 1, 2], [1, 0, 1], [1], 1), ([2], [3], [1], [2, 1, 2], 1),
                          ([4, 2, 3], [2], [2, 1, 0], [1], 0), ([5, 4, 6], [1], [0], [1], 0)):
        if not mx and d != [1]:
            continue
        for cip in ((None,) if mx else (0, 1)):
            sample(op, ["plain", "args"], [t(x)], (k, s, p, d, c) if mx else (k, s, p, cip, c))
    a = ([3], [2], [1], [1], 0) if mx else ([3], [2], [1], 1, 0)
    sample(op, ["args"], [t(x[1:])], a)                       # unbatched
    sample(op, ["args"], [t([2, 4, 6])], a)                   # rank
    sample(op, ["args"], [t(x)], ([3], [2], [2]) + a[3:])     # padding > kernel / 2
    sample(op, ["args"], [t(x)], ([6], [1], [0]) + a[3:])   # kernel > input
    sample(op, ["args"], [t(x)], ([3, 3], [2], [1]) + a[3:])  # two kernel values
    sample(op, ["args"], [t(x)], ([0], [2], [0]) + a[3:])     # kernel 0
    sample(op, ["dtype"], [t(x, "f64")], a)
    sample(op, ["dtype"], [t(x, "i64")], a)
    sample(op, ["extreme"], [T(torch.tensor((EXTREME * 4)[:72]).reshape(1, 2, 3, 3, 4))], a)
    sample(op, ["empty"], [t([0, 2, 5, 4, 6])], a)
    sample(op, ["large"], [T(ramp([1, 1, 10, 12, 14]), "f32", is_ramp=True)], a)
    sample(op, ["noncontig"], [t([1, 2, 5, 4, 12], "f32", "s")], a)
    sample(op, ["transposed"], [t([1, 2, 5, 6, 4], "f32", "t")], a)


SAMPLES["max_pool3d"] = SAMPLES["avg_pool3d"] = pool3d_samples
# ==== end of 3-D and transposed convolution ======================================
# The indexing, scan and shape rows' samples live in opinfo_idx.py.
import opinfo_idx  # noqa: E402
opinfo_idx.register(sys.modules[__name__])
opinfo_idx.register2(sys.modules[__name__])
opinfo_idx.register3(sys.modules[__name__])
opinfo_idx.register4(sys.modules[__name__])
opinfo_idx.register5(sys.modules[__name__])
opinfo_idx.register6(sys.modules[__name__])
# ---- interpolate, embedding_bag, scatter_reduce (issue 11): opinfo_interp.py -------
import opinfo_interp  # noqa: E402
opinfo_interp.register(sys.modules[__name__])
# ---- more pointwise prims and the elementwise composites (issue 11) ---------------

def cbrt_ref(x):
    """numpy's cbrt in f64, rounded to the result dtype (torch 1.13 has none)."""
    import numpy as np
    dt = x.dtype if x.is_floating_point() else torch.float32
    return torch.as_tensor(np.asarray(np.cbrt(x.double().numpy()))).to(dt)


def integral(v):
    """An integral double as the Python int tjit takes it for (alpha, value)."""
    return int(v) if float(v).is_integer() and abs(v) < 2.0**63 else v


UNARY_TORCH.update(cbrt=cbrt_ref, selu=F.selu, hardswish=F.hardswish, hardsigmoid=F.hardsigmoid,
                   relu6=F.relu6, mish=F.mish, softsign=F.softsign, logsigmoid=F.logsigmoid,
                   tanhshrink=F.tanhshrink, ndtr=torch.special.ndtr)
REF.update(
    leaky_relu=lambda x, s: F.leaky_relu(x, s), elu=lambda x, al: F.elu(x, al),
    celu=lambda x, al: F.celu(x, al), hardtanh=lambda x, lo, hi: F.hardtanh(x, lo, hi),
    softshrink=lambda x, l: F.softshrink(x, l), hardshrink=lambda x, l: F.hardshrink(x, l),
    threshold=lambda x, th, v: F.threshold(x, th, v),
    logit=lambda x, eps: torch.logit(x, None if eps < 0 else eps),
    nan_to_num=lambda x, nan, pos, neg: torch.nan_to_num(
        x, nan, None if math.isnan(pos) else pos, None if math.isnan(neg) else neg),
    glu=lambda x, d: F.glu(x, d), prelu=F.prelu,
    addcmul=lambda a, t1, t2, v: torch.addcmul(a, t1, t2, value=integral(v)),
    addcdiv=lambda a, t1, t2, v: torch.addcdiv(a, t1, t2, value=integral(v)))
F64_REF = F64_REF + ("cbrt",)
DEFAULTS.update(leaky_relu={"negative_slope": 0.01}, elu={"alpha": 1.0}, celu={"alpha": 1.0},
                hardtanh={"min_val": -1.0, "max_val": 1.0}, softshrink={"lambd": 0.5},
                hardshrink={"lambd": 0.5}, threshold={"threshold": 0.5, "value": -2.0},
                logit={"eps": -1.0}, nan_to_num={"nan": 0.0, "posinf": math.nan, "neginf": math.nan},
                glu={"dim": -1}, addcmul={"value": 1.0}, addcdiv={"value": 1.0})


def attr_samples(*attrsets):
    """The op's samples at other arguments: f32, f64 and the extreme values."""
    def f(op):
        for attrs in attrsets:
            sample(op, ["args"], [t([2, 3])], attrs)
            sample(op, ["args", "dtype"], [t([2, 3], "f64")], attrs)
            sample(op, ["args", "extreme"], [T(EXTREME)], attrs)
    return f


EXTRA.update(
    leaky_relu=attr_samples((0.2,), (-1.5,), (0.0,)), elu=attr_samples((0.5,), (2.0,)),
    celu=attr_samples((0.5,), (3.0,)), hardtanh=attr_samples((-2.0, 3.0), (0.0, 6.0), (2.0, 1.0)),
    softshrink=attr_samples((0.0,), (1.5,)), hardshrink=attr_samples((0.0,), (1.5,)),
    threshold=attr_samples((0.0, 0.0), (1.0, 5.0), (-1.5, math.inf)),
    logit=attr_samples((0.1,), (0.0,), (0.3,)),
    nan_to_num=attr_samples((1.0, 100.0, -100.0), (-0.5, math.nan, 7.0), (0.0, 1e300, -1e300)))
for name in ("leaky_relu", "elu", "selu", "celu", "hardswish", "hardsigmoid", "hardtanh", "relu6",
             "mish", "softsign", "logsigmoid", "tanhshrink", "softshrink", "hardshrink", "threshold",
             "logit", "sinc", "deg2rad", "rad2deg", "frac", "isposinf", "isneginf", "nan_to_num",
             "ndtr"):
    SAMPLES[name] = unary
for name in ("xlogy", "logaddexp", "logaddexp2", "float_power"):
    SAMPLES[name] = binary


@samples_for("heaviside")
def heaviside(op):
    """values is a tensor of x's dtype (torch has no scalar form)."""
    for dt in DT:
        sample(op, ["plain"] if dt == "f32" else ["dtype"], [t([2, 3], dt), t([2, 3], dt)])
        sample(op, ["dtype", "extreme"] if dt != "f32" else ["extreme"],
               [T([0, 1, 0, 1] if dt == "bool" else [0, -1, 2, -0.0], dt), t([4], dt)])
    sample(op, ["promo"], [t([2, 3]), t([2, 3], "f64")])
    sample(op, ["bcast"], [t([2, 3]), t([3])])
    sample(op, ["extreme"], [T(EXTREME), T(list(reversed(EXTREME)))])
    views_and_shapes(op, t, 2)


@samples_for("glu")
def glu(op):
    sample(op, ["plain"], [t([2, 4])], (-1,))
    for shape, d in (([4, 3], 0), ([2, 3, 6], 2), ([2, 6, 2], 1), ([3, 3], 1), ([2, 4], 5)):
        sample(op, ["args"], [t(shape)], (d,))
    dtypes_of(op, [2, 4], (-1,))
    sample(op, ["extreme"], [T(torch.tensor(EXTREME).reshape(2, 13))], (0,))
    sample(op, ["empty"], [t([0, 4])], (-1,))
    sample(op, ["empty"], [t([3, 0])], (-1,))
    sample(op, ["0d"], [t([])], (0,))
    each_layout(op, t, (0,))
    sample(op, ["large"], [T(ramp([3, 140]), "f32", "t", is_ramp=True)], (0,))


@samples_for("prelu")
def prelu(op):
    sample(op, ["plain"], [t([2, 3, 4]), t([3])])
    sample(op, ["args"], [t([2, 3, 4]), t([1])])
    sample(op, ["args"], [t([2, 3]), t([3])])
    sample(op, ["args"], [t([5]), t([1])])
    sample(op, ["args"], [t([5]), t([5])])
    sample(op, ["args"], [t([2, 3, 4]), t([4])])
    sample(op, ["args"], [t([2, 3, 4]), t([])])
    sample(op, ["dtype"], [t([2, 3], "f64"), t([3], "f64")])
    sample(op, ["dtype"], [t([2, 3], "i32"), t([3], "i32")])
    sample(op, ["promo"], [t([2, 3]), t([3], "f64")])
    sample(op, ["extreme"], [T(torch.tensor(EXTREME).reshape(2, 13)), T([-0.5, 2.0])])
    sample(op, ["empty"], [t([0, 3]), t([3])])
    sample(op, ["0d"], [t([]), t([1])])
    each_layout(op, t, (), (t([1]),))


@samples_for("addcmul", "addcdiv")
def addc(op):
    for v in (1.0, 0.5, -2.0):
        sample(op, ["plain", "args"], [t([2, 3]), t([2, 3]), t([2, 3], lo=1)], (v,))
    sample(op, ["bcast"], [t([2, 3]), t([3]), t([2, 1], lo=1)], (2.0,))
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype", "args"], [t([2, 3], dt), t([2, 3], dt), t([2, 3], dt, lo=1)], (2.0,))
    sample(op, ["dtype", "args"], [t([2, 3], "i32"), t([2, 3], "i32"), t([2, 3], "i32", lo=1)], (0.5,))
    sample(op, ["promo"], [t([2, 3], "i32"), t([2, 3]), t([2, 3], "f64", lo=1)], (1.0,))
    sample(op, ["promo"], [t([2, 3]), t([2, 3], "i64"), t([2, 3], "f32", lo=1)], (1.0,))
    sample(op, ["extreme"], [T(EXTREME), T(list(reversed(EXTREME))), T([2.0] * len(EXTREME))], (1.0,))
    sample(op, ["extreme", "args"], [T(EXTREME), T(EXTREME), T(EXTREME)], (math.inf,))
    views_and_shapes(op, lambda s, d, v: t(s, d, v, lo=1), 3, (1.5,))



# ---- special functions and remaining prims (issue 11) -----------------------------
SPECIAL_UNARY = ("erfcx", "ndtri", "i0", "i0e", "i1", "i1e", "bessel_j0", "bessel_j1")
for _op in SPECIAL_UNARY:
    REF[_op] = getattr(torch.special, _op)
REF["frexp"] = lambda x: torch.frexp(x).mantissa
REF["frexp_exponent"] = lambda x: torch.frexp(x).exponent
REF["polygamma"] = lambda n, x: torch.polygamma(int(n.item()) if isinstance(n, torch.Tensor) else n, x)
# tjit computes the f32 results in double and rounds once; PyTorch's f32
# kernels (float Cephes tables, float sums) are less accurate, so the f32
# reference is PyTorch in f64, rounded (integer inputs too).
F64_ALL = F64_ALL + SPECIAL_UNARY + ("polygamma", "igamma", "igammac")
# ... on the inputs as tjit computes them: integers rounded to f32 first
F32_IN = SPECIAL_UNARY + ("polygamma",)
for _op in SPECIAL_UNARY + ("polygamma", "igamma", "igammac"):
    TOL[_op] = (4e-6, 1e-12, 1e-30, 4e-6)
# J0, J1: PyTorch 1.13's kernels drop the monic leading term of Cephes's
# denominators (RQ, QQ) and are off glibc's j0/j1 by up to 1e-6 absolute
# (tjit follows glibc to 2e-9, tests/test_vmath_special.c): an absolute error
TOL["bessel_j0"] = TOL["bessel_j1"] = (4e-6, 1e-12, 1e-6, 4e-6)
# igamma: the prefactor exp(a ln x - x - lgamma a) in double
TOL["igamma"] = TOL["igammac"] = (4e-6, 1e-11, 1e-9, 4e-6)
# PyTorch's trigamma stops its series at 1/x^7 (about 1e-9 relative in f64)
TOL["polygamma"] = (4e-6, 1e-8, 1e-30, 4e-6)
# values in each function's interesting range, extremes and poles
SPECIAL_VALS = {
    "erfcx": [-9.0, -5.5, -1.0, -0.3, 0.1, 0.49, 0.51, 2.0, 9.9, 10.1, 30.0, 1e5, 1e20, 3e38],
    "ndtri": [1e-30, 1e-10, 1e-3, 0.02, 0.135, 0.3, 0.5, 0.7, 0.865, 0.99, 0.9999999, 1.5, -0.5],
    "i0": [0.1, 2.0, 7.9, 8.1, 20.0, 88.0, 89.5, 100.0, -3.0, -50.0, 700.0, 720.0],
    "bessel_j0": [0.1, 2.404825, 4.9, 5.1, 8.65, 30.0, 1000.5, -7.0, -12.5, 1e6],
}
for _a, _b in (("i0e", "i0"), ("i1", "i0"), ("i1e", "i0"), ("bessel_j1", "bessel_j0")):
    SPECIAL_VALS[_a] = SPECIAL_VALS[_b]


def special_unary(op):
    unary(op)
    for dt in FLOATS:
        sample(op, ["extreme", "args"], [T(SPECIAL_VALS[op], dt)])
    sample(op, ["large"], [T(ramp([3, 70]) * 0.5 + 0.5 if op == "ndtri" else ramp([3, 70]) * 6,
                             "f32", "c")])


for _op in SPECIAL_UNARY:
    SAMPLES[_op] = special_unary


@samples_for("frexp", "frexp_exponent")
def frexp_samples(op):
    unary(op)
    sample(op, ["extreme"], [T([1e-45, 1.17e-38, 1.2e-38, 6.0, -0.75, 1024.0, 3.4e38, -3e-39])])
    sample(op, ["extreme", "dtype"], [T([5e-324, 2.2e-308, 1e308, -3.0, 0.5], "f64")])


@samples_for("polygamma")
def polygamma_samples(op):
    xs = [0.1, 0.5, 1.0, 1.5, 2.4, 7.9, 8.5, 30.0, 1e4, -0.5, -2.3, -5.5, 0.0, -1.0, math.nan]
    # x <= -6, off the poles (the reflection): half-integers, where the odd
    # orders' terms cancel in pairs, and far out
    neg = [-6.5, -6.0001, -7.25, -30.7, -100.5, -333.125, -1000.25, -12345.6]
    for n in (0, 1, 2, 3, 5):
        for dt in FLOATS:
            sample(op, ["plain" if dt == "f32" else "dtype", "extreme", "st"], [S(n), T(xs, dt)])
            sample(op, ["plain" if dt == "f32" else "dtype", "args", "st"], [S(n), T(neg, dt)])
    # +-inf (a known difference: the limit 0 at +inf, a pole at -inf)
    for n in (1, 2, 3):
        for dt in (*FLOATS, *HALF):
            sample(op, ["extreme", "args", "st"] + ([] if dt == "f32" else ["dtype"]),
                   [S(n), T([math.inf, -math.inf, 2.5], dt)])
    # f16, bf16: values off the poles (bf16 rounds -1000.25 to the pole
    # -1000), then the extremes below 1e4
    hx = [0.1, 0.5, 1.5, 2.4, 7.9, 8.5, 30.0, 1e4, -0.5, -2.3, -5.5, -6.5, -7.25, -30.75, -100.5,
          math.nan]
    for dt in HALF:
        for n in (0, 1, 2, 4):
            sample(op, ["dtype", "st"], [S(n), T(hx, dt)])
        sample(op, ["extreme", "dtype", "st"], [S(3), T([v for v in EXTREME if not abs(v) > 1e4], dt)])
    sample(op, ["st", "dtype"], [S(1), t([2, 3], "i32", lo=1)])
    sample(op, ["st", "dtype"], [S(2), t([2, 3], "bool")])
    sample(op, ["st", "0d"], [S(1), t([], lo=1)])
    sample(op, ["st", "empty"], [S(1), t([3, 0])])
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        sample(op, ["st", tag], [S(2), t(base, "f32", v, lo=1)])
    sample(op, ["st", "large"], [S(1), T(ramp([3, 70]) * 4 + 4.5, "f32", "c")])


@samples_for("igamma", "igammac")
def igamma_samples(op):
    a = torch.tensor([0.5, 1.0, 2.5, 10.0, 30.0, 0.0, 1e-3, 90.0], dtype=torch.float64)
    x = torch.tensor([0.0, 0.1, 1.0, 2.0, 3.5, 10.0, 31.0, 100.0, math.inf, 1e-30], dtype=torch.float64)
    for dt in FLOATS:
        sample(op, ["plain" if dt == "f32" else "dtype", "bcast", "extreme"],
               [T(a[:, None], dt), T(x[None, :], dt)])
    sample(op, ["extreme"], [T([-1.0, 1.0, math.inf, math.inf, math.nan, 2.0, 0.0]),
                             T([1.0, -1.0, 1.0, math.inf, 1.0, math.nan, 0.0])])
    sample(op, ["dtype"], [t([2, 3], "i32", lo=1), t([2, 3], "i32", lo=1)])
    sample(op, ["dtype"], [t([2, 3], "bool"), t([2, 3], "bool")])
    sample(op, ["promo"], [t([2, 3], "i64", lo=1), t([2, 3], lo=0)])
    sample(op, ["promo"], [t([2, 3], lo=1), t([2, 3], "f64", lo=0)])
    sample(op, ["ts"], [t([2, 3], lo=1), S(2.5)])
    sample(op, ["st"], [S(3), t([2, 3], lo=0)])
    views_and_shapes(op, lambda s, d, v: t(s, d, v, lo=1), 2)
    sample(op, ["large", "bcast"], [T(ramp([70, 3]) + 1.5, "f32", "c"), T(ramp([70]) * 3 + 3.5, "f32")])
    # large a, x near a (Temme's expansion) and in both tails
    for dt in FLOATS:
        for a_ in (25.0, 150.0, 1000.0, 1e4):
            u = torch.tensor([-40, -12, -5, -1.5, -0.2, 0, 0.3, 1, 2.5, 6, 15, 40], dtype=torch.float64)
            x_ = (a_ + u * math.sqrt(a_)).clamp(min=0)
            sample(op, ["dtype" if dt == "f64" else "plain", "args", "bcast"], [T([a_], dt), T(x_, dt)])
    half_samples(op, 2)
    for dt in HALF:
        sample(op, ["dtype", "bcast"], [T(a[:, None], dt), T(x[None, :], dt)])

# xor_sum: PrimTorch's prim, which PyTorch 1.13 lacks as an op: torch's
# bitwise_xor folded over each reduced dim (0 over an empty one).
def xor_sum_ref(x, dims, keepdim):
    if x.is_floating_point():
        raise RuntimeError("xor_sum of a float")
    n = max(x.dim(), 1)
    if any(not -n <= d < n for d in dims):
        raise IndexError("dim out of range")
    ds = sorted({d % n for d in dims}, reverse=True) if dims else list(range(x.dim() - 1, -1, -1))
    if len(ds) != len(dims) and dims:
        raise RuntimeError("a dim twice")
    for d in ds if x.dim() else []:
        parts = x.unbind(d)
        shape = x.shape[:d] + x.shape[d + 1:]
        acc = torch.zeros(shape, dtype=x.dtype)
        for p in parts:
            acc = torch.bitwise_xor(acc, p)
        x = acc.unsqueeze(d) if keepdim else acc
    return x


REF["xor_sum"] = xor_sum_ref


@samples_for("xor_sum")
def xor_sum_samples(op):
    for dims in ([], [0], [1], [0, 1], [-1], [-2, -1]):
        for keep in (0, 1):
            sample(op, ["plain", "args"], [t([2, 3], "i32", lo=-100, hi=100)], (dims, keep))
    for dt in ("u8", "i8", "i16", "i32", "i64", "bool"):
        sample(op, ["dtype"], [t([3, 4], dt, lo=-100, hi=100)], ([1], 0))
        sample(op, ["dtype"], [t([3, 4], dt, lo=-100, hi=100)], ([], 0))
    for dt, vals in EXTREME_INT.items():
        sample(op, ["extreme", "dtype"], [T([vals, list(reversed(vals))], dt)], ([0], 0))
        sample(op, ["extreme", "dtype"], [T([vals, list(reversed(vals))], dt)], ([1], 1))
    sample(op, ["extreme", "dtype"], [T([[1, 1, 1], [1, 0, 1]], "bool")], ([1], 0))
    sample(op, ["args", "dtype"], [t([2, 3, 4], "i64", lo=-1000, hi=1000)], ([0, 2], 1))
    sample(op, ["args", "dtype"], [t([2, 3, 4], "i16", lo=-1000, hi=1000)], ([2, 0], 0))
    for dt in ("f32", "f64"):   # PyTorch's bitwise ops refuse floats, as tjit does
        sample(op, ["dtype"], [t([2, 3], dt)], ([1], 0))
    sample(op, ["args"], [t([2, 3], "i32")], ([2], 0))
    sample(op, ["args"], [t([2, 3], "i32")], ([0, 0], 0))
    for shape, dims in (([3, 0], [1]), ([3, 0], [0]), ([3, 0], []), ([0], []), ([0, 2], [1])):
        for keep in (0, 1):
            sample(op, ["empty", "args"], [t(shape, "i32")], (dims, keep))
    for dims in ([], [0], [-1]):
        sample(op, ["0d", "args"], [t([], "i64", lo=-50, hi=50)], (dims, 0))
    sample(op, ["0d", "args"], [t([], "i8")], ([], 1))
    for v, tag, base in (("s", "noncontig", [2, 6]), ("t", "transposed", [3, 2]),
                         ("e", "expanded", [2, 3])):
        for dims in ([0], [1], []):
            sample(op, [tag], [t(base, "i32", v, lo=-100, hi=100)], (dims, 0))
    for shape, dims, dt in (([3, 1000], [1], "i32"), ([3, 1000], [0], "i64"), ([1 << 15], [], "i16")):
        sample(op, ["large"], [T(ramp(shape), dt, is_ramp=True)], (dims, 0))


# as_strided: on contiguous inputs at storage offset 0, where tjit's offsets
# (counted in x's elements) and PyTorch's (in its storage) agree
@samples_for("as_strided")
def as_strided_samples(op):
    x6 = lambda dt="f32": T(list(range(6)), dt)
    for size, stride, off in (([4, 3], [1, 1], 0), ([2, 2], [2, 1], 1), ([3], [0], 5), ([], [], 4),
                              ([3, 2], [1, 3], 0), ([2, 3], [3, 1], 0), ([6], [1], 0), ([1, 1], [5, 7], 2),
                              ([2, 2, 2], [1, 2, 1], 0), ([0, 3], [100, 1], 0), ([3], [2], 1)):
        sample(op, ["plain", "args"], [x6()], (size, stride, off))
    for dt in DT:
        if dt != "f32":
            sample(op, ["dtype", "args"], [t([2, 3], dt)], ([3, 2], [1, 2], 0))
    sample(op, ["args"], [t([2, 3, 4])], ([4, 6], [1, 4], 0))
    sample(op, ["args"], [t([2, 3, 4])], ([2, 2, 2], [12, 4, 1], 3))
    sample(op, ["0d"], [t([])], ([], [], 0))
    sample(op, ["0d", "args"], [t([])], ([3], [0], 0))
    sample(op, ["extreme"], [T(EXTREME)], ([5, 4], [5, 1], 1))
    sample(op, ["empty", "args"], [t([0])], ([0], [1], 0))
    # outside the input (PyTorch: outside its storage), negative strides,
    # sizes and offsets: refused
    for size, stride, off in (([4, 3], [1, 1], 1), ([2, 4], [3, 1], 0), ([2], [-1], 3), ([-2], [1], 0),
                              ([2], [1], -1), ([7], [1], 0), ([1], [1], 6)):
        sample(op, ["args"], [x6()], (size, stride, off))
    sample(op, ["large"], [T(ramp([400]), "f32", is_ramp=True)], ([70, 40], [3, 1], 7))


def main():
    global ROW
    read_ops_def()
    ROW = {r[0]: r for r in ROWS}
    by_kind = {"UNARY": unary, "BINARY": binary}
    tols = []
    for name, kind, *_ in ROWS:
        fn = SAMPLES.get(name) or by_kind.get(kind)
        if fn is None:
            print(f"opinfo: no samples for {name} (tests/golden/opinfo/known.txt must exempt it)")
            continue
        n0 = len(lines)
        fn(name)
        if name in EXTRA:
            EXTRA[name](name)
        tols.append("tol %s %g %g %g %g" % (name, *TOL.get(name, TOL_DEFAULT)))
        print(f"  {name}: {len(lines) - n0}")
    g.save("want", torch.tensor(want, dtype=torch.float64))
    g.save("in", torch.tensor(inputs, dtype=torch.float64))
    with open(os.path.join(g.dir, "cases.txt"), "w") as f:
        f.write("# generated by scripts/golden/opinfo.py: the format is described there\n")
        f.write("# kinds: " + " ".join(KINDS) + "\n")
        f.write("\n".join(tols + lines) + "\n")
    for e in sorted(set(TYPE_ERRORS)):
        print("  TypeError", e)
    print(f"opinfo: {len(lines)} samples")
    g.done()


if __name__ == "__main__":
    main()
