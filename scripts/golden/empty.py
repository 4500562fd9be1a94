"""empty.py - golden data for ops on tensors with no elements (tests/test_empty.c):
views, contractions with K = 0, the neural-network ops, data movement with
empty pieces, index tensors with no entries, padding an empty dim. Each case
runs eagerly and compiled in the C test; the pointwise rows and reductions
are swept there without golden data (their empty results carry no values;
test_reduce.c has the reductions' identities).

Every case is one line of cases.txt:
    <name> <nin> <input>... <dtype> <shape> <offset>
An input is dt:shape[:mod] (shape "3,0", "-" for 0-dim): element i of a
float input is (i % 7) / 2 - 1, of an integer input i % mod (mod 5 unless
given), of a bool input i % 2. <dtype> is the result's, or "err" when PyTorch
refuses the case; <shape> comma-separated ("-" for 0-dim). Expected values
are stored flattened as f64 in want.npy from <offset>.

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import math
import os

import torch
import torch.nn.functional as F

from common import Family

g = Family("empty")
DT = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64, "i32": torch.int32,
      "u8": torch.uint8, "bool": torch.bool}
NAME = {v: k for k, v in DT.items()}
lines, want = [], []


def make(spec):
    """The input a spec names, built the way tests/test_empty.c builds it."""
    parts = spec.split(":")
    dt, shape = DT[parts[0]], [] if parts[1] == "-" else [int(s) for s in parts[1].split(",")]
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.float64)
    if dt.is_floating_point:
        v = (i % 7) / 2 - 1
    elif dt == torch.bool:
        v = i % 2
    else:
        v = i % (int(parts[2]) if len(parts) > 2 else 5)
    return v.reshape(shape).to(dt)


def case(name, specs, fn):
    args = [make(s) for s in specs]
    try:
        r = fn(*args)
    except RuntimeError:
        lines.append(f"{name} {len(specs)} {' '.join(specs)} err - 0")
        return
    shape = ",".join(str(s) for s in r.shape) or "-"
    lines.append(f"{name} {len(specs)} {' '.join(specs)} {NAME[r.dtype]} {shape} {len(want)}")
    want.extend(r.double().flatten().tolist())


def sdpa(q, k, v):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return torch.softmax(s, -1) @ v


def rms_norm(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w


# ---- views and copies ----------------------------------------------------------------------
case("reshape_0_5", ["f32:3,0"], lambda x: x.reshape(0, 5))
case("reshape_neg1", ["f32:2,0,4"], lambda x: x.reshape(-1, 4))
case("reshape_ambiguous", ["f32:0,3"], lambda x: x.reshape(0, -1))
case("permute", ["f32:2,0,4"], lambda x: x.permute(2, 0, 1))
case("transpose", ["f32:3,0"], lambda x: x.transpose(0, 1))
case("slice_rows", ["f32:3,0"], lambda x: x[1:3])
case("slice_to_empty", ["f32:3,4"], lambda x: x[:, 2:2])
case("expand_to_0", ["f32:3,1"], lambda x: x.expand(3, 0))
case("expand_rows", ["f32:1,0"], lambda x: x.expand(5, 0))
case("squeeze", ["f32:1,0"], lambda x: x.squeeze())
case("unsqueeze", ["f32:3,0"], lambda x: x.unsqueeze(1))
case("flatten", ["f32:2,0,4"], lambda x: x.flatten())
case("clone_t", ["f32:3,0"], lambda x: x.transpose(0, 1).clone())
case("cast_i64", ["f32:2,0,4"], lambda x: x.long())

# ---- contractions ----------------------------------------------------------------------------
case("matmul_k0", ["f32:3,0", "f32:0,4"], lambda a, b: a @ b)
case("matmul_m0", ["f32:0,3", "f32:3,4"], lambda a, b: a @ b)
case("matmul_n0", ["f32:3,4", "f32:4,0"], lambda a, b: a @ b)
case("matmul_batch_k0", ["f32:2,3,0", "f32:2,0,5"], lambda a, b: a @ b)
case("matmul_dot0", ["f32:0", "f32:0"], lambda a, b: a @ b)
case("matmul_vec_k0", ["f32:0", "f32:0,4"], lambda a, b: a @ b)
case("matmul_k0_f64", ["f64:3,0", "f64:0,2"], lambda a, b: a @ b)
case("linear_k0", ["f32:3,0", "f32:4,0", "f32:4"], F.linear)
case("conv2d_n0", ["f32:0,2,5,5", "f32:3,2,3,3"], F.conv2d)

# ---- neural-network ops ----------------------------------------------------------------------
case("softmax_empty_dim", ["f32:3,0"], lambda x: torch.softmax(x, 1))
case("softmax_empty_rows", ["f32:0,4"], lambda x: torch.softmax(x, 1))
case("log_softmax_empty_dim", ["f32:3,0"], lambda x: torch.log_softmax(x, 1))
case("layer_norm_rows", ["f32:0,8", "f32:8", "f32:8"], lambda x, w, b: F.layer_norm(x, (8,), w, b))
case("layer_norm_empty", ["f32:3,0"], lambda x: F.layer_norm(x, (0,)))
case("rms_norm_rows", ["f32:0,8", "f32:8"], rms_norm)
case("batch_norm", ["f32:0,3,2,2", "f32:3", "f32:3"],
     lambda x, m, v: F.batch_norm(x, m, v.abs() + 1))
case("max_pool2d", ["f32:0,2,4,4"], lambda x: F.max_pool2d(x, 2))
case("avg_pool2d", ["f32:0,2,4,4"], lambda x: F.avg_pool2d(x, 2))
case("max_pool2d_indices", ["f32:0,2,5,5"],
     lambda x: F.max_pool2d(x, 2, ceil_mode=True, return_indices=True)[1])
case("avg_pool2d_options", ["f32:0,2,5,5"],
     lambda x: F.avg_pool2d(x, 2, ceil_mode=True, divisor_override=3))
case("embedding_none", ["f32:5,3", "i64:0"], lambda w, i: F.embedding(i, w))
case("embedding_2d", ["f32:5,3", "i64:2,0"], lambda w, i: F.embedding(i, w))
case("sdpa_no_queries", ["f32:2,0,4", "f32:2,3,4", "f32:2,3,5"], sdpa)
case("sdpa_no_keys", ["f32:2,3,4", "f32:2,0,4", "f32:2,0,5"], sdpa)
case("cross_entropy", ["f32:0,5", "i64:0"], F.cross_entropy)

# ---- data movement ---------------------------------------------------------------------------
case("cat_empty_piece", ["f32:3,0", "f32:3,2"], lambda a, b: torch.cat([a, b], 1))
case("cat_rows", ["f32:0,4", "f32:2,4"], lambda a, b: torch.cat([a, b], 0))
case("cat_all_empty", ["f32:2,0", "f32:3,0"], lambda a, b: torch.cat([a, b], 0))
case("stack", ["f32:3,0", "f32:3,0"], lambda a, b: torch.stack([a, b]))
case("gather", ["f32:3,4", "i64:3,0"], lambda x, i: torch.gather(x, 1, i))
case("gather_empty", ["f32:3,0", "i64:3,0"], lambda x, i: torch.gather(x, 1, i))
case("index_select_none", ["f32:3,4", "i64:0"], lambda x, i: torch.index_select(x, 0, i))
case("index_select_rows0", ["f32:0,4", "i64:2:4"], lambda x, i: torch.index_select(x, 1, i))
case("pad_empty_dim", ["f32:2,0"], lambda x: F.pad(x, (1, 2), value=7.0))
case("pad_empty_rows", ["f32:0,3"], lambda x: F.pad(x, (1, 1), value=7.0))
case("flip", ["f32:2,0,4"], lambda x: torch.flip(x, (0, 2)))
case("where", ["bool:3,0", "f32:3,0", "f32:1"], torch.where)

# ---- pointwise chains and reductions mixed with the above --------------------------------
case("sum_of_matmul_k0", ["f32:3,0", "f32:0,4"], lambda a, b: (a @ b + 1).sum(0))
case("mean_then_add", ["f32:4,0", "f32:4"], lambda x, b: x.mean(1) + b)
case("softmax_sum_rows0", ["f32:0,4"], lambda x: torch.softmax(x * 2, 1).sum(0))

g.save("want", torch.tensor(want, dtype=torch.float64))
with open(os.path.join(g.dir, "cases.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
g.done()
