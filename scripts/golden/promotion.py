"""promotion.py - the result dtype (and values) of every op that takes a scalar
or mixes dtypes, against PyTorch's type promotion (tests/test_promotion.c):
every BINARY row of ir/ops.def, tensor-tensor, with a 0-dim tensor on either
side and with a Python scalar (the _s form), over every pair of dtypes; clamp
with int, float and absent bounds; where; lerp.

Every case is one line of cases.txt:
    <op> <a> <b> <c> <dtype> <shape> <offset>
An operand is t:<dt> (the [2,3] tensor A or B below, cast to dt), z:<dt> (a
0-dim tensor holding 2, True for bool), s:<number> (a Python scalar: an int
when written without a '.', else a float; clamp's bounds also take s:none)
or "-" (absent). <dtype> is PyTorch's result dtype, or "err" when PyTorch
refuses the case. Expected values are stored flattened as f64 in want.npy
from <offset>.

A scalar reaches the C API as a double: the test passes 3 for s:3 and 2.5
for s:2.5, and tjit takes an integral double with an integer or bool tensor
as a Python int (include/tjit.h). torch.maximum, atan2 and the logical and
bitwise ops take no Python scalar: PyTorch's result for them comes from the
0-dim tensor torch.tensor(s), which promotes the same way (int: i64, float:
the default f32, both weak against dimensioned tensors).

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import os
import re

import torch

from common import DTYPE_NAME, DTYPES, Family

g = Family("promotion")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DT, NAME = DTYPES, DTYPE_NAME
A = [[1, 2, 3], [4, 0, 1]]
B = [[2, 1, 3], [1, 2, 5]]     # no zero: integer remainder and fmod by zero raise in torch
SCALARS = ["s:3", "s:2.5", "s:-2"]
lines, want = [], []


def binary_rows():
    text = open(os.path.join(ROOT, "ir", "ops.def")).read()
    return re.findall(r"^BINARY\((\w+),", text, re.M)


def operand(spec, which):
    kind, v = spec.split(":")
    if kind == "t":
        return torch.tensor(A if which == 0 else B).to(DT[v])
    if kind == "z":
        return torch.tensor(2).to(DT[v])
    if v == "none":
        return None
    return float(v) if "." in v else int(v)


def torch_fn(op):
    return {"maximum": torch.maximum, "minimum": torch.minimum}.get(op) or getattr(torch, op)


def run(op, args):
    f = {"clamp": torch.clamp, "where": torch.where, "lerp": torch.lerp}.get(op) or torch_fn(op)
    try:
        return f(*args)
    except TypeError:
        # no Python-scalar overload: the 0-dim tensor promotes the same way
        return f(*[torch.tensor(a) if isinstance(a, (int, float)) else a for a in args])


def case(op, a, b="-", c="-"):
    specs = [a, b, c]
    args = [operand(s, k) for k, s in enumerate(specs) if s != "-"]
    try:
        r = run(op, args)
    except RuntimeError:
        lines.append(f"{op} {a} {b} {c} err - 0")
        return
    shape = ",".join(str(s) for s in r.shape) or "-"
    lines.append(f"{op} {a} {b} {c} {NAME[r.dtype]} {shape} {len(want)}")
    want.extend(r.double().flatten().tolist())


for op in binary_rows():
    for da in DT:
        for db in DT:
            case(op, f"t:{da}", f"t:{db}")
            case(op, f"t:{da}", f"z:{db}")
            case(op, f"z:{db}", f"t:{da}")
        for s in SCALARS:
            if op.startswith("bitwise_") and op.endswith("_shift") and s == "s:-2":
                continue   # a negative count: PyTorch 1.13 shifts modulo the width, tjit gives 0
            case(op, f"t:{da}", s)

# clamp(x, min, max): a bound is a weak scalar; s:none is no bound (-inf / inf in C)
BOUNDS = [("s:1", "s:3"), ("s:2.5", "s:none"), ("s:none", "s:2.5"), ("s:1", "s:2.5"),
          ("s:-1.5", "s:3"), ("s:none", "s:2"), ("s:-10", "s:300"), ("s:0", "s:1")]
for d in DT:
    for lo, hi in BOUNDS:
        case("clamp", f"t:{d}", lo, hi)

# where(cond, a, b): a and b promote, cond is bool
for da in DT:
    for db in DT:
        case("where", "t:bool", f"t:{da}", f"t:{db}")
        case("where", "t:bool", f"t:{da}", f"z:{db}")

# lerp(start, end, weight): torch wants one dtype for all tensors; a scalar weight
for da in ("f32", "f64", "i64"):
    for db in ("f32", "f64"):
        case("lerp", f"t:{da}", f"t:{db}", "s:0.25")
        for w in ("t:f32", "t:f64", "z:f64", "z:f32"):
            case("lerp", f"t:{da}", f"t:{db}", w)

g.save("want", torch.tensor(want, dtype=torch.float64))
with open(os.path.join(g.dir, "cases.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
g.done()
