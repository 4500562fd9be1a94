"""reduce.py - golden data for the reductions (tests/test_reduce.c): sum, mean,
prod, amax, amin, logsumexp, all, any, var, std, argmax, argmin.

Inputs are saved as in_<name>.npy. Every case is one line of cases.txt,
    <op> <input> <view> <dims> <keepdim> <correction> <dtype> <shape> <offset>
(dims "all" = none given, else comma-separated; correction "-" when unused;
shape comma-separated, "-" for 0-dim). Expected results are stored flattened,
as f64 (exact for every value here), one after another in want.npy from
<offset>; <dtype> is the result dtype. The C test reads cases.txt, rebuilds
the view from the loaded input, runs the op and compares. Views: c contiguous, p permuted (reversed dims), s strided
slice x[:, 1::2], e expanded x[:, :1].expand(x.shape).

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import math
import os

import torch

from common import Family, view

g = Family("reduce")
lines = []
inputs = {}
want = []
DT = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.int32: "i32",
      torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool"}


def add_input(name, t):
    inputs[name] = t
    g.save("in_" + name, t)


def run(op, x, dims, keep, corr):
    d = dims if dims is not None else tuple(range(x.dim()))
    if op in ("argmax", "argmin"):
        f = getattr(torch, op)
        return f(x, keepdim=keep) if dims is None else f(x, dims[0], keepdim=keep)
    if op in ("var", "std"):
        return getattr(torch, op)(x, d, correction=corr, keepdim=keep)
    if op == "logsumexp":
        return torch.logsumexp(x, d, keepdim=keep)
    if op in ("all", "any"):   # torch 1.13 takes one dim: reduce them one by one
        r = getattr(torch, op)(x) if not d else x   # u8 in, u8 out; else bool
        for k in sorted([k % max(x.dim(), 1) for k in d], reverse=True):
            r = getattr(torch, op)(r, k, keepdim=keep)
        return r
    if op == "prod":           # torch 1.13 takes one dim
        r = x
        for k in sorted([k % max(x.dim(), 1) for k in d], reverse=True):
            r = torch.prod(r, k, keepdim=keep)
        return r
    return getattr(torch, op)(x, d, keepdim=keep)


def case(op, inp, v, dims, keep, corr=None):
    x = view(inputs[inp], v)
    r = run(op, x, dims, keep, 1 if corr is None else corr)
    flat = r.reshape(-1).double()
    assert not r.dtype.is_floating_point or r.dtype == torch.float64 or \
        torch.equal(flat.float().double().nan_to_num(), flat.nan_to_num())
    assert r.dtype.is_floating_point or flat.numel() == 0 or flat.abs().max() < 2**53
    off = sum(len(w) for w in want)
    want.append(flat.tolist())
    dl = "all" if dims is None else ",".join(str(k) for k in dims)
    shape = ",".join(str(n) for n in r.shape) if r.dim() else "-"
    lines.append(f"{op} {inp} {v} {dl} {int(keep)} {'-' if corr is None else corr} "
                 f"{DT[r.dtype]} {shape} {off}")


FLOAT_OPS = ["sum", "mean", "prod", "amax", "amin", "logsumexp", "all", "any", "var", "std"]
DIMS3 = [None, (0,), (-1,), (1,), (0, 2), (-1, 0), (2, 0, 1)]

add_input("x_f32", torch.randn(3, 4, 5))
add_input("x_f64", torch.randn(3, 4, 5, dtype=torch.float64))
for op in FLOAT_OPS:
    for dt in ("f32", "f64"):
        for dims in DIMS3:
            for keep in (False, True):
                case(op, "x_" + dt, "c", dims, keep)
        for v in ("p", "s", "e"):
            for dims in (None, (1,), (0, 2)):
                case(op, "x_" + dt, v, dims, False)
for op in ("var", "std"):
    for corr in (0, 2, 5, -1):
        case(op, "x_f32", "c", (1,), False, corr)
        case(op, "x_f64", "p", (0, 2), True, corr)

# argmax/argmin: flattened, each dim, keepdim; ties (small integers) keep the first index
add_input("t_f32", torch.randint(-2, 3, (3, 4, 5)).float())
add_input("i_i64", torch.randint(-5, 6, (3, 4, 5)))
for op in ("argmax", "argmin"):
    for inp in ("x_f32", "x_f64", "t_f32", "i_i64"):
        for dims in (None, (0,), (1,), (2,), (-1,)):
            for keep in (False, True):
                case(op, inp, "c", dims, keep)
        for v in ("p", "s", "e"):
            for dims in (None, (0,), (1,), (-1,)):
                case(op, inp, v, dims, False)

# integer and bool inputs: sums and products in i64, extremes keep the dtype
add_input("i_i32", torch.randint(-5, 6, (3, 4, 5), dtype=torch.int32))
add_input("b_bool", torch.rand(3, 4, 5) > 0.3)
add_input("u_u8", torch.randint(0, 4, (3, 4, 5), dtype=torch.uint8))
gen = torch.Generator().manual_seed(8)   # its own stream: the inputs above and below keep theirs
for dt in (torch.int8, torch.int16):
    add_input("i_" + DT[dt], torch.randint(-5, 6, (3, 4, 5), dtype=dt, generator=gen))
# the whole i8 / i16 range: a sum leaves the type (torch sums them in i64)
add_input("w_i8", torch.randint(-128, 128, (3, 4, 5), dtype=torch.int8, generator=gen))
add_input("w_i16", torch.randint(-32768, 32768, (3, 4, 5), dtype=torch.int16, generator=gen))
for inp in ("w_i8", "w_i16"):
    for op in ("sum", "amax", "amin", "argmax", "argmin", "any"):
        for dims in (None, (1,), (0, 2)):
            case(op, inp, "c", dims, dims == (1,))
for inp in ("i_i64", "i_i32", "i_i16", "i_i8", "b_bool", "u_u8"):
    for op in ("sum", "prod", "amax", "amin", "all", "any", "logsumexp"):
        for dims in (None, (1,), (0, 2)):
            case(op, inp, "c", dims, dims == (1,))
        case(op, inp, "p", (0,), False)
    if inp != "b_bool":
        for op in ("argmax", "argmin"):
            case(op, inp, "s", (1,), True)

# extreme values: inf, -inf, nan, huge, tiny; rows of special cases
inf, nan = math.inf, math.nan
xe = torch.tensor([
    [1.0, inf, 2.0, -1.0, 0.5, 3.0],
    [1.0, -inf, 2.0, -1.0, 0.5, 3.0],
    [1.0, nan, 2.0, inf, 0.5, -inf],
    [inf, inf, -inf, -inf, 1.0, 2.0],
    [-inf, -inf, -inf, -inf, -inf, -inf],
    [3e38, 3e38, -1e38, 1e-38, 1e-45, 0.0],
    [nan, 1.0, nan, 5.0, 5.0, -2.0],
    [0.0, -0.0, 0.0, 0.0, 0.0, 0.0],
])
add_input("xe_f32", xe)
add_input("xe_f64", xe.double())
for inp in ("xe_f32", "xe_f64"):
    for op in FLOAT_OPS + ["argmax", "argmin"]:
        case(op, inp, "c", (1,), False)
        case(op, inp, "c", (0,), True)
# logsumexp of large magnitudes (a naive exp would overflow or underflow)
add_input("xl_f32", torch.tensor([[1000.0, 999.0, 998.0, -5.0], [-1000.0, -1001.0, -999.0, -1e4],
                                  [88.0, 89.0, 90.0, 1e30], [-1e30, -1e30, 0.0, -3e38]]))
add_input("xl_f64", inputs["xl_f32"].double() * 1e2)
for inp in ("xl_f32", "xl_f64"):
    for dims in ((1,), (0,), None):
        case("logsumexp", inp, "c", dims, False)
        case("var", inp, "c", dims, False)

# empty tensors: a size-0 dim reduced (identity) or kept (empty result)
add_input("z_f32", torch.randn(3, 0, 2))
for op in ("sum", "mean", "prod", "logsumexp", "all", "any", "var", "std"):
    for dims in (None, (1,), (0,), (0, 2)):
        case(op, "z_f32", "c", dims, dims == (0,))
for op in ("amax", "amin", "argmax", "argmin"):
    case(op, "z_f32", "c", (0,), False)
    case(op, "z_f32", "c", (2,), True)
# more empty shapes: rows of length 0 (compiled: a rows kernel whose loops never
# run), leading empty dims (compiled: a reduction over a permuted view), 1-dim
add_input("z2_f32", torch.randn(3, 0))
add_input("z1_f32", torch.randn(0))
add_input("z3_f64", torch.randn(2, 0, 70, dtype=torch.float64))
for op in ("sum", "mean", "prod", "logsumexp", "all", "any", "var", "std"):
    for dims in ((1,), None, (0,)):
        case(op, "z2_f32", "c", dims, dims == (0,))
    case(op, "z2_f32", "t", (0,), False)
    case(op, "z1_f32", "c", None, False)
    for dims in ((1,), (0, 1), (1, 2), (0, 2)):
        case(op, "z3_f64", "c", dims, False)

# larger shapes: lane tails, the column (outer) strategy, several parts of R
add_input("m_f32", torch.randn(9, 37, 21) * 3 + 1)
for op in ("sum", "mean", "amax", "var", "logsumexp", "argmax", "argmin"):
    for dims in ((0,), (1,), (2,), (0, 2), None):
        case(op, "m_f32", "c", dims, False)
    case(op, "m_f32", "p", (1,), False)

g.save("want", torch.tensor([v for w in want for v in w], dtype=torch.float64))
with open(os.path.join(g.dir, "cases.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
g.done()
