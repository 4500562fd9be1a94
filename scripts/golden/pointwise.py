"""pointwise.py - golden data for the pointwise ops (tests/test_pointwise.c):
every UNARY and BINARY row of ir/ops.def, the _s (tensor-scalar) forms, where,
lerp, clamp and cast, against PyTorch.

Inputs are saved as in_<name>.npy. Every case is one line of cases.txt,
    <op> <a> <b> <c> <views> <dtype> <shape> <offset> <tol>
<a>, <b>, <c> name inputs ("-" when absent; "=<number>" is a Python scalar for
the _s form; "~cond/a/b" are where/lerp inputs); <views> says how the C test
views a and b before the op (one letter each: c contiguous, p permuted
(reversed dims), s x[:, 1::2], e x[:, :1].expand(x.shape)); <dtype> is the
result dtype or "err" when PyTorch rejects the case; <shape> comma-separated
("-" for 0-dim). Expected values are stored flattened as f64 in want.npy from
<offset>. <tol>: exact, f32 or f64. Float results are computed by PyTorch in
f64 from the same inputs and rounded to the result dtype (the true value, not
torch's f32 approximation of it).

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import math
import os
import re

import torch
import torch.nn.functional as F

from common import DTYPES, Family

g = Family("pointwise")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# torch dtype -> name, in the order the inputs are drawn (kept: the committed
# files stay byte-identical)
DT = {DTYPES[n]: n for n in ("f32", "f64", "i64", "i32", "i16", "i8", "u8", "bool")}
TD = {v: k for k, v in DT.items()}
lines, want, inputs = [], [], {}


def rows(kind):
    """(name, rule) of the UNARY or BINARY rows of ops.def."""
    text = open(os.path.join(ROOT, "ir", "ops.def")).read()
    return re.findall(r"^%s\((\w+),\s*(\w+)," % kind, text, re.M)


UNARY, BINARY = rows("UNARY"), rows("BINARY")
RULE = dict(UNARY + BINARY)


def add_input(name, t):
    inputs[name] = t
    g.save("in_" + name, t)


def view(t, v):
    return {"c": lambda: t, "p": lambda: t.permute(*reversed(range(t.dim()))),
            "s": lambda: t[:, 1::2], "e": lambda: t[:, :1].expand(t.shape)}[v]()


def cbrt(x):
    """numpy's cbrt (torch 1.13 has none), in x's float dtype (f32 for integers)."""
    import numpy as np
    dt = x.dtype if x.is_floating_point() else torch.float32
    return torch.as_tensor(np.asarray(np.cbrt(x.double().numpy()))).to(dt)


SHIFTS = ("bitwise_left_shift", "bitwise_right_shift")


def odd_shift(op, args):
    """A shift count outside [0, 8): PyTorch 1.13's result depends on its loop
    (the vectorized one gives 0, the scalar one shifts by the count modulo
    the width); tjit defines it (0, or the sign fill). Left to test_opinfo's
    known differences."""
    if op not in SHIFTS:
        return False
    c = args[1]
    c = c if isinstance(c, torch.Tensor) else torch.tensor(c)
    return not c.is_floating_point() and bool(((c < 0) | (c >= 8)).any())


def torch_fn(op):
    special = {"relu": torch.relu, "gelu": torch.nn.functional.gelu,
               "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
               "silu": torch.nn.functional.silu,
               "sign": torch.sign, "maximum": torch.maximum, "minimum": torch.minimum,
               "cbrt": cbrt}
    return special.get(op) or getattr(torch, op)


def arg(spec, views, k):
    if spec == "-":
        return None
    if spec.startswith("="):
        v = float(spec[1:])
        return int(v) if v == int(v) and "." not in spec[1:] else v
    return view(inputs[spec], views[k] if k < len(views) else "c")


def compute(op, args):
    """torch's result; float inputs go through f64 and back (the true value)."""
    ts = [a for a in args if isinstance(a, torch.Tensor)]
    fl = [a for a in ts if a.is_floating_point()]
    if op in ("where", "lerp", "clamp", "cast"):
        f = {"where": torch.where, "lerp": torch.lerp}.get(op)
    else:
        f = torch_fn(op)
    try:
        ref = f(*args) if f else None
    except (TypeError, RuntimeError):
        if any(not isinstance(a, torch.Tensor) for a in args):
            # torch.maximum takes no Python scalar, and int ** -1 is refused for a
            # scalar only: the 0-dim tensor promotes the same way
            return compute(op, [torch.tensor(a) if not isinstance(a, torch.Tensor) else a
                                for a in args])
        if RULE.get(op) == "FLOAT" and not fl:
            # tjit's float math on integers computes in f32 (torch has no int kernel)
            return compute(op, [a.float() for a in args])
        return None
    if ref is not None and ref.is_floating_point() and fl:
        up = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
              for a in args]
        try:
            ref = f(*up).to(ref.dtype)
        except RuntimeError:
            pass
    return ref


def case(op, a, b="-", c="-", views="cc", tol=None, ref=None):
    if ref is None:
        args = [x for x in (arg(a, views, 0), arg(b, views, 1), arg(c, views, 2)) if x is not None]
        d = args[-1]
        if op in ("fmod", "remainder") and isinstance(d, torch.Tensor) and \
                not d.is_floating_point() and not args[0].is_floating_point() and (d == 0).any():
            return   # torch raises on an integer zero divisor, as tjit does (test_pointwise.c)
        if odd_shift(op, args):
            return
    if ref is None:
        ref = compute(op, args)
    if ref is None:
        lines.append(f"{op} {a} {b} {c} {views} err - 0 exact")
        return
    r = ref.double().flatten().tolist()
    shape = ",".join(str(s) for s in ref.shape) or "-"
    if tol is None:
        tol = DT[ref.dtype] if ref.is_floating_point() else "exact"
    lines.append(f"{op} {a} {b} {c} {views} {DT[ref.dtype]} {shape} {len(want)} {tol}")
    want.extend(r)


# ---- inputs -------------------------------------------------------------------------------------
S = (3, 4, 5)
for dt in (torch.float32, torch.float64):
    n = DT[dt]
    add_input("s_" + n, (torch.randn(S, dtype=torch.float64) * 2).to(dt))     # any sign
    add_input("t_" + n, (torch.randn(S, dtype=torch.float64) * 2).to(dt))     # a second one
    add_input("p_" + n, (torch.rand(S, dtype=torch.float64) * 5 + 0.05).to(dt))   # positive
    add_input("u_" + n, (torch.rand(S, dtype=torch.float64) * 1.96 - 0.98).to(dt))  # (-1, 1)
    add_input("g_" + n, (torch.rand(S, dtype=torch.float64) * 6 + 1).to(dt))      # >= 1
    add_input("r4_" + n, (torch.randn(4, 1, dtype=torch.float64)).to(dt))        # broadcast
    add_input("r5_" + n, (torch.randn(5, dtype=torch.float64)).to(dt))
SI = (2, 3, 4)   # integer and bool inputs: exact, so fewer values do


def signed_inputs(dt):
    n = DT[dt]
    add_input("a_" + n, torch.randint(-9, 10, SI, dtype=dt))
    b = torch.randint(1, 8, SI, dtype=dt) * (torch.randint(0, 2, SI, dtype=dt) * 2 - 1)
    add_input("b_" + n, b)                                                     # nonzero
    add_input("e_" + n, torch.randint(-3, 6, SI, dtype=dt))                    # exponents
    add_input("r5_" + n, torch.randint(-9, 10, (4,), dtype=dt))


for dt in (torch.int32, torch.int64):
    signed_inputs(dt)
add_input("a_u8", torch.randint(0, 256, SI, dtype=torch.uint8))
add_input("b_u8", torch.randint(1, 20, SI, dtype=torch.uint8))
add_input("e_u8", torch.randint(0, 4, SI, dtype=torch.uint8))
add_input("a_bool", torch.rand(SI) > 0.5)
add_input("b_bool", torch.rand(SI) > 0.5)
for dt in (torch.int8, torch.int16):   # drawn after the others, which keep their values
    signed_inputs(dt)
# the ends of the range, where torch's integer arithmetic wraps around
add_input("w_i8", torch.tensor([-128, -127, -100, -1, 0, 1, 99, 127], dtype=torch.int8))
add_input("v_i8", torch.tensor([-1, 127, -100, 2, 3, 127, 100, 1], dtype=torch.int8))
add_input("w_i16", torch.tensor([-32768, -32767, -300, -1, 0, 1, 300, 32767], dtype=torch.int16))
add_input("v_i16", torch.tensor([-1, 32767, -200, 2, 3, 32767, 200, 1], dtype=torch.int16))
for dt in DT:
    add_input("k_" + DT[dt], torch.tensor([[1, 2, 3], [4, 0, 1]]).to(dt))     # small, exact
add_input("z_f64", torch.tensor(2.5, dtype=torch.float64))                   # 0-dim
add_input("z_i64", torch.tensor(3, dtype=torch.int64))

ext = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-38, -1e-38, 1e-45, 88.0, -88.0, 89.0,
       -89.0, 100.0, -100.0, 1e30, -1e30, 1e10, -1e10, 3.4e38, 0.5, -0.5, 1.0, -1.0, 2.5,
       -2.5, 3.0, 1e6, 12345.678]
pairs = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-38, 1e-45, 89.0, -100.0, 1e30, -1e10,
         0.5, -1.0, 2.5, -3.0, 7.0]
for dt in (torch.float32, torch.float64):
    add_input("x_" + DT[dt], torch.tensor(ext, dtype=dt))
e = torch.tensor(pairs, dtype=torch.float32)
add_input("xa_f32", e.repeat_interleave(len(pairs)))   # all pairs
add_input("xb_f32", e.repeat(len(pairs)))

# ---- unary ------------------------------------------------------------------------------------
DOMAIN = {"log": "p", "log2": "p", "log10": "p", "sqrt": "p", "rsqrt": "p", "log1p": "p",
          "acosh": "g", "asin": "u", "acos": "u", "atanh": "u"}
for op, rule in UNARY:
    for n in ("f32", "f64"):
        case(op, f"{DOMAIN.get(op, 's')}_{n}")
        case(op, f"x_{n}")
    for n in ("i32", "i64", "i16", "i8", "u8", "bool"):
        case(op, f"a_{n}")
    for n in ("i16", "i8"):
        case(op, f"w_{n}")

# ---- binary -------------------------------------------------------------------------------------
BDOM = {"pow": ("p", "s")}
for op, rule in BINARY:
    da, db = BDOM.get(op, ("s", "t"))
    for n in ("f32", "f64"):
        case(op, f"{da}_{n}", f"{db}_{n}")
    case(op, f"{da}_f32", "r4_f32")                         # broadcast [3,4,5] with [4,1]
    case(op, "r5_f32", f"{db}_f32")                         # [5] with [3,4,5]
    case(op, f"{da}_f32", "=2.5")
    case(op, f"{da}_f32", "=-3")
    case(op, "r4_f64", "r5_f64")                            # [4,1] with [5] -> [4,5]
    case(op, "xa_f32", "xb_f32")
    for n in ("i32", "i64", "i16", "i8"):
        case(op, f"a_{n}", f"e_{n}" if op == "pow" else f"b_{n}")
        case(op, f"a_{n}", f"r5_{n}")
        case(op, f"a_{n}", "=3")
        case(op, f"a_{n}", "=2.5")
    case(op, "a_u8", "e_u8" if op == "pow" else "b_u8")
    case(op, "w_i8", "v_i8")                                # wraps around, like torch
    case(op, "w_i16", "v_i16")
    case(op, "w_i8", "=100")
    case(op, "a_i8", "a_u8")                                # u8 with i8 promotes to i16
    case(op, "a_bool", "b_bool")
    case(op, "a_bool", "=1")
    # non-contiguous views, as PyTorch sees them
    case(op, "s_f32", "t_f32", views="pp")
    case(op, "s_f32", "t_f32", views="ss")
    case(op, "s_f64", "t_f64", views="ec")
    case(op, "a_i32", "b_i32", views="ce")

# ---- promotion: every dtype pair, tensor-tensor and tensor-scalar -------------------------
for op in ("add", "sub", "mul", "div", "maximum", "eq", "lt", "logical_and", "bitwise_or",
           "pow", "remainder"):
    for da in DT.values():
        for db in DT.values():
            case(op, f"k_{da}", f"k_{db}")
        for s in ("=2", "=2.5", "=-1"):
            case(op, f"k_{da}", s)
    case(op, "k_f32", "z_f64")     # a 0-dim f64 tensor does not widen an f32 one
    case(op, "k_i32", "z_f64")
    case(op, "k_u8", "z_i64")
    case(op, "k_i8", "z_i64")      # a 0-dim i64 does not widen i8
    case(op, "k_i16", "z_f64")

# ---- where, lerp, clamp, cast -------------------------------------------------------------
cond = inputs["s_f32"] > 0
add_input("cond_bool", cond)
add_input("cond_i32", (inputs["a_i32"] % 3).to(torch.int32))
case("where", "cond_bool", "s_f32", "t_f32", views="ccc")
case("where", "cond_bool", "s_f32", "r5_f64", views="ccc")     # promote + broadcast
cz = inputs["cond_i32"]
case("where", "cond_i32", "a_i32", "z_f64", views="ccc",    # tjit: any cond dtype, nonzero
     ref=torch.where(cz != 0, inputs["a_i32"], inputs["z_f64"]))
add_input("cond2_bool", cond[:2, :3, :4].contiguous())
case("where", "cond2_bool", "a_bool", "b_bool", views="ccc",   # torch 1.13 has no bool where
     ref=torch.where(inputs["cond2_bool"], inputs["a_bool"].byte(), inputs["b_bool"].byte()).bool())
case("where", "cond_bool", "s_f32", "t_f32", views="ppp")
case("lerp", "s_f32", "t_f32", "u_f32", views="ccc")
case("lerp", "s_f64", "r5_f64", "r4_f64", views="ccc")           # 3-way broadcast
case("lerp", "s_f32", "t_f32", "=0.3", views="ccc")
case("lerp", "s_f32", "t_f32", "=0.7", views="ccc")
case("lerp", "s_f32", "t_f32", "p_f32", views="ppp")
case("lerp", "a_i64", "a_i64", "=0.5", views="ccc")             # ints: rejected
for lo, hi in ((-1.0, 1.0), (-math.inf, 0.5), (0.25, math.inf), (3.0, 2.0)):
    for n in ("s_f32", "x_f32", "s_f64"):
        t = inputs[n]
        case("clamp", n, f"={lo!r}", f"={hi!r}", views="c", ref=torch.clamp(t, lo, hi))
case("clamp", "s_f32", "=-1.0", "=1.0", views="p",
     ref=torch.clamp(view(inputs["s_f32"], "p"), -1, 1))
# softplus(x, beta, threshold), in f64 and rounded; integer x is refused, as
# PyTorch refuses it
for beta, th in ((1.0, 20.0), (2.0, 3.0), (-1.5, 0.5), (0.5, 1.0), (1e-3, 20.0)):
    for n in ("s_f32", "x_f32", "s_f64", "x_f64", "a_i32", "a_bool"):
        t = inputs[n]
        if not t.is_floating_point():
            lines.append(f"softplus {n} ={beta!r} ={th!r} c err - 0 exact")
            continue
        ref = F.softplus(t.double(), beta, th).to(t.dtype)
        case("softplus", n, f"={beta!r}", f"={th!r}", views="c", ref=ref)
case("softplus", "s_f32", "=2.0", "=3.0", views="p",
     ref=F.softplus(view(inputs["s_f32"], "p").double(), 2.0, 3.0).float())


def num(spec):
    """A case's scalar as the Python number tjit's double stands for: integral
    values are ints (tjit cannot tell 2.0 from 2)."""
    v = float(spec[1:])
    return int(v) if math.isfinite(v) and v == int(v) else v


def torch_case(op, a, b, c, fn):
    """A case whose reference is fn(x, y) run by PyTorch on the inputs as
    they are (err when PyTorch raises)."""
    x = inputs[a]
    y = num(b) if b.startswith("=") else inputs[b]
    try:
        ref = fn(x, y)
    except RuntimeError:
        lines.append(f"{op} {a} {b} {c} c err - 0 exact")
        return
    case(op, a, b, c, views="c", ref=ref)


# add/sub with alpha: the alphas keep alpha * b exact in f32 (powers of two),
# so PyTorch's fused multiply-add and tjit's two roundings agree
for op in ("add", "sub"):
    fn = getattr(torch, op)
    for a, b, al in (("s_f32", "t_f32", "=2"), ("s_f32", "t_f32", "=-0.5"), ("s_f64", "t_f64", "=0.1"),
                     ("s_f32", "r4_f32", "=0.25"), ("a_i32", "b_i32", "=3"), ("a_i64", "b_i64", "=-2"),
                     ("a_u8", "b_u8", "=-1"), ("a_u8", "b_u8", "=7"), ("k_i32", "k_f32", "=0.5"),
                     ("a_bool", "b_bool", "=0"), ("a_bool", "b_bool", "=2"), ("a_bool", "b_bool", "=1"),
                     ("a_i32", "b_i32", "=2.5"), ("a_i32", "b_i32", "=4294967296"),
                     ("a_u8", "b_u8", "=300"), ("a_u8", "b_u8", "=-256"), ("a_bool", "b_bool", "=0.5"),
                     ("s_f32", "t_f32", "=1e300"), ("s_f32", "t_f32", "=inf"),
                     ("a_i32", "b_bool", "=2"), ("a_i32", "=3", "=-4"), ("s_f32", "=2.5", "=4"),
                     ("a_i64", "=2.5", "=2"), ("a_bool", "=1", "=3")):
        torch_case(op + "_alpha", a, b, al, lambda x, y, fn=fn, al=al: fn(x, y, alpha=num(al)))

# div with rounding_mode: PyTorch raises on an integer zero divisor, and so does tjit
add_input("dz_i32", torch.tensor([7, -7, 7, -7, 0, 5, -5, 1], dtype=torch.int32))
add_input("dd_i32", torch.tensor([2, 2, -2, -2, 3, 5, 5, -1], dtype=torch.int32))
add_input("dzero_i32", torch.tensor([2, 0, 1, 1, 1, 1, 1, 1], dtype=torch.int32))
add_input("df_f32", torch.tensor([5, -5, -0.5, 0.5, 7, 0, math.inf, -1, math.nan, 1e30]))
add_input("dg_f32", torch.tensor([-3, 3, 4, -4, 0, 0, 2, math.inf, 1, 3e-30]))
for mode in ("trunc", "floor"):
    fn = lambda x, y, mode=mode: torch.div(x, y, rounding_mode=mode)
    for a, b in (("s_f32", "t_f32"), ("s_f64", "t_f64"), ("df_f32", "dg_f32"), ("s_f32", "r4_f32"),
                 ("a_i32", "r5_i32"), ("dz_i32", "dd_i32"), ("dz_i32", "dzero_i32"),
                 ("a_u8", "b_u8"), ("k_i64", "k_f32"), ("a_bool", "b_bool"), ("dz_i32", "=2"),
                 ("dz_i32", "=-3"), ("dz_i32", "=2.5"), ("s_f32", "=0.3"), ("dz_i32", "=0")):
        torch_case("div_mode", a, b, "=" + mode, fn)
src = {"f32": [-1.7, 2.9, 300.5, -300.5, 0.0, -0.0, 0.5, 255.9, 1e9, -129.0, 70000.25],
       "i64": [-1, 0, 1, 255, 256, -129, 1000, 70000, -70000, 2**40 + 3],
       "i32": [-1, 0, 1, 255, 256, -129, 1000, 70000, -70000],
       "i16": [-32768, -129, -1, 0, 255, 256, 32767], "i8": [-128, -1, 0, 1, 127],
       "u8": [0, 1, 127, 128, 255], "bool": [True, False, True]}
src["f64"] = src["f32"] + [1e300]
for sn, vals in src.items():
    t = torch.tensor(vals, dtype=TD[sn])
    add_input("c_" + sn, t)
    for dn in DT.values():
        r = t.to(TD[dn])
        case("cast", "c_" + sn, dn, views="c", ref=r, tol="exact")

g.save("want", torch.tensor(want, dtype=torch.float64))
with open(os.path.join(g.dir, "cases.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
g.done()
