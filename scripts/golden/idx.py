"""idx.py - golden data for tests/test_idx.c: the indexing functions that
are not rows of ops.def (their shapes depend on values, or they return
several tensors): nonzero, masked_select (and its gradient), chunk, unbind,
meshgrid, hstack, vstack, where with a number arm, topk/sort/kthvalue/cummax
indices and max/min along a dim, all from PyTorch 1.13."""
import torch

from common import Family

f = Family("idx")
x = torch.tensor([[0.0, 1.5, -2.0, 0.0], [float("nan"), 0.0, 3.0, -0.5], [2.0, 2.0, 0.0, 1.0]],
                 dtype=torch.float64)
f.save("x", x)
f.save("nonzero", torch.nonzero(x))
f.save("nonzero_i", torch.nonzero(torch.tensor([[0, 3], [7, 0]], dtype=torch.int32)))
mask = torch.tensor([True, False, True, True])
f.save("mask", mask)
xg = x.clone().requires_grad_(True)
sel = torch.masked_select(xg, mask)
f.save("masked_select", sel.detach())
r = torch.arange(1.0, sel.numel() + 1, dtype=torch.float64)
f.save("masked_select_r", r)
(sel * r).sum().backward()
f.save("masked_select_grad", xg.grad)
for k, c in enumerate(torch.chunk(x, 3, 1)):
    f.save(f"chunk{k}", c)
for k, c in enumerate(torch.unbind(x, 1)):
    f.save(f"unbind{k}", c)
a, b, c = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0, 5.0]), torch.tensor([6.0])
for k, m in enumerate(torch.meshgrid(a, b, c, indexing="xy")):
    f.save(f"mesh_xy{k}", m)
for k, m in enumerate(torch.meshgrid(a, b, indexing="ij")):
    f.save(f"mesh_ij{k}", m)
f.save("hstack", torch.hstack([a, b, c]))
f.save("hstack2", torch.hstack([x, x[:, :1]]))
f.save("vstack", torch.vstack([a[None].expand(2, 2), torch.tensor([7.0, 8.0])]))
f.save("where_xs", torch.where(mask, x, torch.tensor(2.5, dtype=torch.float64)))
y = torch.tensor([[1.0, 5.0, 3.0, 0.0, 4.0], [2.0, 9.0, 1.0, 7.0, -1.0]], dtype=torch.float64)
f.save("y", y)
f.save("topk_i", torch.topk(y, 2, 1)[1])
f.save("sort_i", torch.sort(y, stable=True, dim=1, descending=True)[1])
f.save("kth_i", torch.kthvalue(y, 2, 1)[1])
f.save("cummax_i", torch.cummax(y, 1)[1])
f.save("max_v", torch.max(y, 0)[0])
f.save("max_i", torch.max(y, 0)[1])
f.save("min_i", torch.min(y, 1, keepdim=True)[1])
f.done()
