"""norm.py - golden data for the normalizations (tests/test_norm.c): softmax,
log_softmax, layer_norm, rms_norm, batch_norm (eval mode).

Inputs are saved as in_<name>.npy. Every case is one line of cases.txt,
    <op> <x> <view> <arg> <eps> <w> <b> <mean> <var> <dtype> <shape> <offset>
where <arg> is softmax's dim or the norms' ndims ("-" for batch_norm), the
parameter columns name inputs ("-" when absent), and the expected result is
stored flattened, as f64, in want.npy from <offset>. Views of x (rebuilt by
the C test): c contiguous, p permuted (reversed dims), s strided slice
x[:, 1::2], e expanded x[:, :1].expand(x.shape), t the last two dims swapped, 0 reshaped
to 0 dims (a saved 0-dim array loads as [1]).

rms_norm has no PyTorch 1.13 op: its reference is the formula
x * rsqrt(mean(x^2, normalized dims) + eps) * w.

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import math
import os

import torch
import torch.nn.functional as F

from common import Family, view

g = Family("norm")
lines = []
inputs = {}
want = []
DT = {torch.float32: "f32", torch.float64: "f64"}


def add_input(name, t):
    inputs[name] = t
    g.save("in_" + name, t)


def rms_norm(x, n, w, eps):
    dims = tuple(range(x.dim() - n, x.dim()))
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return y if w is None else y * w


def run(op, x, arg, eps, p):
    if op == "softmax":
        return torch.softmax(x, arg)
    if op == "log_softmax":
        return torch.log_softmax(x, arg)
    if op == "layer_norm":
        return F.layer_norm(x, x.shape[x.dim() - arg:], p["w"], p["b"], eps)
    if op == "rms_norm":
        return rms_norm(x, arg, p["w"], eps)
    return F.batch_norm(x, p["mean"], p["var"], p["w"], p["b"], False, 0.1, eps)


def case(op, xname, v="c", arg=None, eps=None, ref64=False, **params):
    x = view(inputs[xname], v)
    p = {k: inputs[n] if n else None for k, n in params.items()}
    for k in ("w", "b", "mean", "var"):
        p.setdefault(k, None)
    if ref64:
        r = run(op, x.double(), arg, eps, {k: t if t is None else t.double() for k, t in p.items()})
        r = r.to(x.dtype)
    else:
        r = run(op, x, arg, eps, p)
    off = sum(len(w) for w in want)
    want.append(r.reshape(-1).double().tolist())
    names = " ".join(params.get(k) or "-" for k in ("w", "b", "mean", "var"))
    shape = ",".join(str(n) for n in r.shape) if r.dim() else "-"
    lines.append(f"{op} {xname} {v} {'-' if arg is None else arg} "
                 f"{'-' if eps is None else repr(eps)} {names} {DT[r.dtype]} {shape} {off}")


for dt, sfx in ((torch.float32, "f32"), (torch.float64, "f64")):
    add_input("x_" + sfx, torch.randn(3, 4, 5, dtype=dt) * 2)
    add_input("r_" + sfx, torch.randn(6, 37, dtype=dt) * 3 + 1)   # lane tails
    add_input("z_" + sfx, torch.randn(2, 0, 3, dtype=dt))
    add_input("s_" + sfx, torch.tensor(1.5, dtype=dt))
    for op in ("softmax", "log_softmax"):
        for dim in (0, 1, 2, -1, -2):
            case(op, "x_" + sfx, "c", dim)
        for v in ("p", "s", "e"):
            for dim in (-1, 0, 1):
                case(op, "x_" + sfx, v, dim)
        for dim in (0, 1, -1):
            case(op, "r_" + sfx, "c", dim)
            case(op, "r_" + sfx, "p", dim)
        for dim in (0, 1, 2):
            case(op, "z_" + sfx, "c", dim)
        case(op, "s_" + sfx, "0", 0)
        case(op, "s_" + sfx, "0", -1)

    add_input("w5_" + sfx, torch.randn(5, dtype=dt))
    add_input("b5_" + sfx, torch.randn(5, dtype=dt))
    add_input("w45_" + sfx, torch.randn(4, 5, dtype=dt))
    add_input("b45_" + sfx, torch.randn(4, 5, dtype=dt))
    add_input("w37_" + sfx, torch.randn(37, dtype=dt))
    add_input("b37_" + sfx, torch.randn(37, dtype=dt))
    add_input("w3_" + sfx, torch.randn(3, dtype=dt))
    x = "x_" + sfx
    for eps in (1e-5, 0.1):
        case("layer_norm", x, "c", 1, eps, w="w5_" + sfx, b="b5_" + sfx)
        case("rms_norm", x, "c", 1, eps, w="w5_" + sfx)
    case("layer_norm", x, "c", 1, 1e-5)
    case("layer_norm", x, "c", 1, 1e-5, w="w5_" + sfx)
    case("layer_norm", x, "c", 1, 1e-5, b="b5_" + sfx)
    case("layer_norm", x, "c", 2, 1e-5, w="w45_" + sfx, b="b45_" + sfx)
    case("layer_norm", x, "c", 3, 1e-5)
    case("layer_norm", x, "s", 1, 1e-5, w="w5_" + sfx, b="b5_" + sfx)
    case("layer_norm", x, "e", 1, 1e-5, w="w5_" + sfx, b="b5_" + sfx)
    case("layer_norm", x, "p", 1, 1e-5, w="w3_" + sfx, b="w3_" + sfx)
    case("layer_norm", "r_" + sfx, "c", 1, 1e-5, w="w37_" + sfx, b="b37_" + sfx)
    case("layer_norm", "z_" + sfx, "c", 1, 1e-5)
    case("layer_norm", "z_" + sfx, "c", 2, 1e-5)
    case("rms_norm", x, "c", 1, 1e-6)
    case("rms_norm", x, "c", 2, 1e-6, w="w45_" + sfx)
    case("rms_norm", x, "c", 3, 1e-6)
    case("rms_norm", x, "s", 1, 1e-6, w="w5_" + sfx)
    case("rms_norm", x, "p", 1, 1e-6, w="w3_" + sfx)
    case("rms_norm", "r_" + sfx, "c", 1, 1e-6, w="w37_" + sfx)
    case("rms_norm", "z_" + sfx, "c", 1, 1e-6)

    # batch_norm: x [N, C, ...]; running statistics (var > 0)
    add_input("m4_" + sfx, torch.randn(4, dtype=dt))
    add_input("v4_" + sfx, torch.rand(4, dtype=dt) + 0.5)
    add_input("w4_" + sfx, torch.randn(4, dtype=dt))
    add_input("b4_" + sfx, torch.randn(4, dtype=dt))
    add_input("n2_" + sfx, torch.randn(7, 4, dtype=dt))
    add_input("n4_" + sfx, torch.randn(2, 4, 3, 5, dtype=dt))
    st = dict(mean="m4_" + sfx, var="v4_" + sfx)
    wb = dict(w="w4_" + sfx, b="b4_" + sfx)
    for xn in (x, "n2_" + sfx, "n4_" + sfx):
        case("batch_norm", xn, "c", None, 1e-5, **st, **wb)
        case("batch_norm", xn, "c", None, 1e-3, **st)
    case("batch_norm", x, "c", None, 1e-5, **st, w="w4_" + sfx)
    case("batch_norm", x, "e", None, 1e-5, **st, **wb)
    case("batch_norm", "n4_" + sfx, "t", None, 1e-5, **st, **wb)
    add_input("n0_" + sfx, torch.randn(0, 4, 3, dtype=dt))
    case("batch_norm", "n0_" + sfx, "c", None, 1e-5, **st, **wb)

# extreme values: inf, -inf, nan, huge (softmax must not overflow)
inf, nan = math.inf, math.nan
xe = torch.tensor([
    [1.0, inf, 2.0, -1.0, 0.5, 3.0],
    [1.0, -inf, 2.0, -1.0, 0.5, 3.0],
    [1.0, nan, 2.0, 0.0, 0.5, -inf],
    [-inf, -inf, -inf, -inf, -inf, -inf],
    [1000.0, 999.0, -1000.0, 88.0, 89.0, 1e30],
    [-1e30, -1e30, 0.0, -3e38, 3e38, 1e-45],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3e38, 2e38, 3e38, 1e38, 1e38, 0.0],
])
for sfx, t in (("f32", xe), ("f64", xe.double())):
    add_input("xe_" + sfx, t)
    for op in ("softmax", "log_softmax"):
        case(op, "xe_" + sfx, "c", 1)
        case(op, "xe_" + sfx, "c", 0)
    # The f32 kernels redo a row in double when its statistics overflow float,
    # where PyTorch's float path gives NaN: the reference is the f64 result.
    case("layer_norm", "xe_" + sfx, "c", 1, 1e-5, ref64=True)
    case("rms_norm", "xe_" + sfx, "c", 1, 1e-5, ref64=True)

g.save("want", torch.tensor([v for w in want for v in w], dtype=torch.float64))
with open(os.path.join(g.dir, "cases.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
g.done()
