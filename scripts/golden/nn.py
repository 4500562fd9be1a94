"""nn.py - golden data for embedding, scaled_dot_product_attention and
cross_entropy (tests/test_nn.c). Dropout draws from tjit's own Philox
generator, so its tests check properties instead of golden values.

torch 1.13 has no F.scaled_dot_product_attention: the reference is the
formula softmax(q @ k^T * scale + mask) @ v, computed in float64 from the
saved inputs and rounded to the inputs' dtype.
Run with /usr/bin/python3 (Debian's python3-torch).
"""
import math

import torch

from common import Family

fam = Family("nn")


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=torch.float64).to(dtype)


# ---- embedding ------------------------------------------------------------------
w = randn(10, 4)
fam.save("emb_w", w)
idx = torch.tensor([[3, 0, 9], [9, 1, 3]], dtype=torch.int64)
fam.save("emb_idx_i64", idx)
fam.save("emb_idx_i32", idx.to(torch.int32))
fam.save("emb_out", torch.nn.functional.embedding(idx, w))
idx3 = torch.randint(0, 10, (2, 2, 3), dtype=torch.int64)
fam.save("emb_idx3", idx3)
fam.save("emb_out3", torch.nn.functional.embedding(idx3, w))
w64 = randn(7, 5, dtype=torch.float64)
idx1 = torch.tensor([6, 0, 6, 2], dtype=torch.int32)
fam.save("emb_w64", w64)
fam.save("emb_idx1", idx1)
fam.save("emb_out64", torch.nn.functional.embedding(idx1.long(), w64))
# Non-contiguous weight: the test transposes emb_wt [4, 10] to [10, 4].
wt = randn(4, 10)
fam.save("emb_wt", wt)
fam.save("emb_out_t", torch.nn.functional.embedding(idx, wt.t()))


# ---- scaled dot-product attention ----------------------------------------------------
def sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    q64, k64, v64 = q.double(), k.double(), v.double()
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q64 @ k64.transpose(-2, -1) * scale
    L, S = q.shape[-2], k.shape[-2]
    if causal:
        mask = torch.ones(L, S, dtype=torch.bool).tril()
    if mask is not None:
        if mask.dtype == torch.bool:
            s = s.masked_fill(~mask, float("-inf"))
        else:
            s = s + mask.double()
    return (torch.softmax(s, -1) @ v64).to(q.dtype)


def sdpa_case(name, qs, ks, vs, dtype=torch.float32, mask=None, causal=False, scale=None):
    q, k, v = randn(*qs, dtype=dtype), randn(*ks, dtype=dtype), randn(*vs, dtype=dtype)
    for n, t in (("q", q), ("k", k), ("v", v)):
        fam.save(f"sdpa_{name}_{n}", t)
    if mask is not None:
        fam.save(f"sdpa_{name}_mask", mask)
    fam.save(f"sdpa_{name}_out", sdpa_ref(q, k, v, mask, causal, scale))
    return q, k, v


# L != S, E != Ev, default scale
sdpa_case("basic", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6))
sdpa_case("scale", (2, 5, 8), (2, 7, 8), (2, 7, 6), scale=0.3)
sdpa_case("f64", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), dtype=torch.float64)
# causal across several 64-row query blocks, L == S, L < S and L > S
sdpa_case("causal", (1, 2, 130, 16), (1, 2, 130, 16), (1, 2, 130, 12), causal=True)
sdpa_case("causal_ls", (2, 70, 8), (2, 100, 8), (2, 100, 4), causal=True)
sdpa_case("causal_sl", (2, 100, 8), (2, 70, 8), (2, 70, 4), causal=True)
sdpa_case("causal64", (2, 70, 8), (2, 70, 8), (2, 70, 4), dtype=torch.float64, causal=True,
          scale=0.25)
# bool mask [L, S] broadcast over batch and heads (every row keeps a key)
bm = torch.rand(5, 7) > 0.5
bm[:, 2] = True
sdpa_case("bmask", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), mask=bm)
# float mask [B, 1, L, S] broadcast over heads, with -inf entries
fm = randn(2, 1, 5, 7)
fm[0, 0, 1, 3] = float("-inf")
fm[1, 0, 4, :6] = float("-inf")
sdpa_case("fmask", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), mask=fm)
# batch dims broadcast like torch.matmul: [2,1] x [1,3] x [3] -> [2,3]
sdpa_case("bcast", (2, 1, 5, 8), (1, 3, 7, 8), (3, 7, 6))
# non-contiguous inputs: the test permutes q [B, L, H, E] -> [B, H, L, E] and
# transposes kt [B, H, E, S] -> [B, H, S, E]
qp, kt, vv = randn(2, 5, 3, 8), randn(2, 3, 8, 7), randn(2, 3, 7, 6)
fam.save("sdpa_strided_q", qp)
fam.save("sdpa_strided_kt", kt)
fam.save("sdpa_strided_v", vv)
fam.save("sdpa_strided_out", sdpa_ref(qp.permute(0, 2, 1, 3), kt.transpose(-2, -1), vv))

# ---- cross_entropy --------------------------------------------------------------------
F = torch.nn.functional
x = randn(6, 5)
t = torch.tensor([0, 4, 2, 2, 1, 3], dtype=torch.int64)
fam.save("ce_x", x)
fam.save("ce_t", t)
fam.save("ce_t_i32", t.to(torch.int32))
fam.save("ce_out", F.cross_entropy(x, t))
x64 = randn(4, 3, dtype=torch.float64)
t64 = torch.tensor([2, 0, 1, 2], dtype=torch.int64)
fam.save("ce_x64", x64)
fam.save("ce_t64", t64)
fam.save("ce_out64", F.cross_entropy(x64, t64))
# extreme logits: 1e4 apart, -inf on non-target classes, target at the bottom
xe = torch.tensor([[1e4, 0.0, -1e4, 5.0],
                   [-1e4, 1e4, 0.0, float("-inf")],
                   [0.0, 0.0, 0.0, 0.0],
                   [3e4, -3e4, 1e4, 2e4]], dtype=torch.float32)
te = torch.tensor([2, 1, 3, 0], dtype=torch.int64)
fam.save("ce_xe", xe)
fam.save("ce_te", te)
fam.save("ce_oute", F.cross_entropy(xe.double(), te).float())
# non-contiguous logits: the test transposes ce_xt [C, N] -> [N, C]
xt = randn(5, 6)
fam.save("ce_xt", xt)
fam.save("ce_out_t", F.cross_entropy(xt.t(), t))

fam.done()
