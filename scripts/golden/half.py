"""half.py - f16 and bf16 against PyTorch (tests/test_half.c): casts with
extreme values, type promotion with the 16-bit floats, every float UNARY and
BINARY row of ir/ops.def, reductions, matmul, softmax/layer_norm/gelu, and
what torch.autocast("cpu", bf16) gives.

Files (tests/golden/half/), bf16 arrays saved as their raw bits ('<u2', the
convention of runtime/npy.c), f16 as '<f2':
  cast_src_f32, cast_src_f64          values to narrow (inf, NaN, subnormals,
                                      ties, overflow)
  cast_<from>_<to>                    PyTorch's conversion of them
  x_<dt>, a_<dt>, b_<dt>              pointwise inputs; unary_<dt> [nops, N]
                                      and binary_<dt> [nops, N] the results
  r_<dt>, red_<op>_<dt>               reductions over the last dim of [4, 33]
  mm_x_<dt>, mm_w_<dt>, mm_<dt>       matmul [8,16] @ [16,12]
  nn_x_<dt>, softmax_<dt>, ...        [4, 24] rows
  ac_x, ac_w, ac_b, ac_linear, ...    autocast
The expected values are PyTorch's results in f64 on the widened inputs,
rounded once to the narrow type: what tjit promises (compute in f32, round
once), with no f32 formula error in the reference. cases.txt lists the ops in
their order, each with how PyTorch's own kernel in the narrow type compares
(`torch`: within one ulp, `differs`, `none`: PyTorch 1.13 has no CPU kernel),
and the promotion cases `promote <a> <b> <result>`.

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import os
import re

import numpy as np
import torch

from common import Family

g = Family("half", seed=11)
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HALF = {"f16": torch.float16, "bf16": torch.bfloat16}
ALL = {"bool": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16,
       "i32": torch.int32, "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16,
       "f32": torch.float32, "f64": torch.float64}
NAME = {v: k for k, v in ALL.items()}
lines = []


def save(name, t):
    if t.dtype == torch.bfloat16:
        t = t.contiguous().view(torch.int16).numpy().view(np.uint16)
    g.save(name, t)


def rows(kind):
    text = open(os.path.join(ROOT, "ir", "ops.def")).read()
    return re.findall(r"^%s\((\w+),\s*(\w+)," % kind, text, re.M)


def ref(fn, *xs):
    """The result tjit promises: fn computed on the widened inputs (here in
    f64), rounded once to the narrow type. Also whether PyTorch's own kernel
    in the narrow type agrees to one ulp ("torch") or not ("differs"), or has
    none ("none"): PyTorch 1.13's CPU kernels for f16 are few, and some for
    bf16 compute in bf16 (layer_norm is off by 10% on this data; gelu's tail
    becomes -0)."""
    dt = xs[0].dtype
    want = fn(*[x.double() for x in xs]).to(dt)
    try:
        native = fn(*xs)
    except RuntimeError:
        return want, "none"
    ulp = 2.0**-10 if dt == torch.float16 else 2.0**-7
    w, n = want.double(), native.double()
    close = (w == n) | (w.isnan() & n.isnan()) | ((w - n).abs() <= ulp * w.abs() + 1e-30)
    return want, "torch" if bool(close.all()) else "differs"


# ---- casts ------------------------------------------------------------------------
EXTREME = [0.0, -0.0, 1.0, -2.5, 65504.0, 65519.0, 65520.0, 1e5, -1e5, float("inf"),
           float("-inf"), float("nan"), 6e-8, 5.96e-8, 2.98e-8, 3e-8, 1e-40, -3e-39,
           1.1754942e-38, 3.4e38, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8,
           0.1, -0.3, 300.7, -1e-5, 2**-24, 2**-25, 1e-10, 123456.0]
src32 = torch.tensor(EXTREME, dtype=torch.float32)
src64 = torch.tensor(EXTREME + [1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40], dtype=torch.float64)
save("cast_src_f32", src32)
save("cast_src_f64", src64)
for h in HALF:
    save(f"cast_f32_{h}", src32.to(HALF[h]))
    save(f"cast_f64_{h}", src64.to(HALF[h]))
    n = src32.to(HALF[h])
    save(f"cast_{h}_f32", n.float())
    for to in ["bool", "i32", "i64", "u8"]:
        finite = n.clone()
        finite[~torch.isfinite(finite)] = 0   # float -> int of inf/NaN differs by platform
        save(f"cast_{h}_{to}", finite.to(ALL[to]))
    save(f"cast_{h}_fin", finite)
save("cast_f16_bf16", src32.to(torch.float16).to(torch.bfloat16))
save("cast_bf16_f16", src32.to(torch.bfloat16).to(torch.float16))

# ---- promotion ---------------------------------------------------------------------
for a in ALL:
    for b in ALL:
        for kind in ["t", "z"]:
            x = torch.ones(2, dtype=ALL[a])
            y = torch.ones(2 if kind == "t" else (), dtype=ALL[b])
            if "f16" in (a, b) or "bf16" in (a, b):
                lines.append(f"promote t:{a} {kind}:{b} {NAME[torch.result_type(x, y)]}")
for h in HALF:
    for s in ["s:2", "s:2.5"]:
        v = 2 if s == "s:2" else 2.5
        lines.append(f"promote t:{h} {s} {NAME[torch.result_type(torch.ones(2, dtype=HALF[h]), v)]}")
    for a in ["bool", "i32", "i64"]:
        lines.append(f"promote t:{a} z:{h} {NAME[torch.result_type(torch.ones(2, dtype=ALL[a]), torch.ones((), dtype=HALF[h]))]}")

# ---- pointwise ---------------------------------------------------------------------
N = 64
base = torch.cat([torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-6, 3e-5, 60000.0, -60000.0,
                                float("inf"), float("-inf"), float("nan"), 0.75, -0.2, 10.0]),
                  torch.randn(N - 16) * 3])
other = torch.cat([torch.tensor([1.0, 2.0, -0.5, 3.0, 0.0, -0.0, 2.0, 0.5, 2.0, 1.5, 1.0, 2.0,
                                 1.0, float("inf"), 3.0, -4.0]), torch.randn(N - 16) * 2 + 0.1])
for h, dt in HALF.items():
    x, a, b = base.to(dt), base.to(dt), other.to(dt)
    save(f"x_{h}", x)
    save(f"a_{h}", a)
    save(f"b_{h}", b)
    outs = []
    for name, rule in rows("UNARY"):
        if rule in ("BITWISE", "LOGICAL", "PRED") or name in ("bitwise_not",):
            continue
        fn = {"gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
              "relu": torch.relu, "sigmoid": torch.sigmoid, "silu": torch.nn.functional.silu,
              "gelu": torch.nn.functional.gelu}.get(name) or getattr(torch, name)
        r, how = ref(fn, x)
        assert r.dtype == dt, (name, r.dtype)
        outs.append(r.float())
        lines.append(f"unary {h} {name} {how}")
    save(f"unary_{h}", torch.stack(outs).to(dt))
    outs = []
    for name, rule in rows("BINARY"):
        if rule in ("BITWISE", "LOGICAL", "CMP"):
            continue
        r, how = ref(getattr(torch, name), a, b)
        assert r.dtype == dt, (name, r.dtype)
        outs.append(r.float())
        lines.append(f"binary {h} {name} {how}")
    save(f"binary_{h}", torch.stack(outs).to(dt))

# ---- reductions, matmul, nn --------------------------------------------------------
r32 = torch.randn(4, 33) * 2 + 0.5
mx, mw = torch.randn(8, 16), torch.randn(16, 12) * 0.3
nx = torch.randn(4, 24) * 2
REDS = {"sum": lambda t: t.sum(-1), "mean": lambda t: t.mean(-1), "prod": lambda t: (t / 2 + 0.75).prod(-1),
        "amax": lambda t: t.amax(-1), "amin": lambda t: t.amin(-1), "var": lambda t: t.var(-1),
        "std": lambda t: t.std(-1), "logsumexp": lambda t: t.logsumexp(-1)}
NN = {"softmax": lambda t: torch.softmax(t, -1), "log_softmax": lambda t: torch.log_softmax(t, -1),
      "layer_norm": lambda t: torch.nn.functional.layer_norm(t, (24,)),
      "gelu": torch.nn.functional.gelu}
for h, dt in HALF.items():
    r = r32.to(dt)
    save(f"r_{h}", r)
    for name, fn in REDS.items():
        out, how = ref(fn, r)
        save(f"red_{name}_{h}", out)
        lines.append(f"reduce {h} {name} {how}")
    x, w = mx.to(dt), mw.to(dt)
    save(f"mm_x_{h}", x)
    save(f"mm_w_{h}", w)
    out, how = ref(torch.matmul, x, w)
    save(f"mm_{h}", out)
    lines.append(f"matmul {h} matmul {how}")
    x = nx.to(dt)
    save(f"nn_x_{h}", x)
    for name, fn in NN.items():
        out, how = ref(fn, x)
        save(f"{name}_{h}", out)
        lines.append(f"nn {h} {name} {how}")

# ---- autocast ------------------------------------------------------------------------
ax, aw, ab = torch.randn(6, 16), torch.randn(10, 16) * 0.3, torch.randn(10)
save("ac_x", ax)
save("ac_w", aw)
save("ac_b", ab)
with torch.autocast("cpu", dtype=torch.bfloat16):
    lin = torch.nn.functional.linear(ax, aw, ab)
    mm = torch.matmul(ax, aw.t())
    sm = torch.softmax(lin, -1)
    sm2 = torch.sum(lin, -1)
    add = lin + ab
for name, t in [("linear", lin), ("matmul", mm), ("softmax", sm), ("sum", sm2), ("add", add)]:
    save(f"ac_{name}", t)
    lines.append(f"autocast bf16 {name} {NAME[t.dtype]}")

with open(os.path.join(g.dir, "cases.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
g.done()
