"""grad2.py - golden second-order gradients from PyTorch for
tests/test_autograd_higher.c (gradients of gradients, create_graph=True).

Each case saves its inputs (<case>.<name>), and what the C test recomputes
with tj_gradients: a gradient penalty's gradient, or a Hessian-vector product
sum_k d<dL/dx_k, v_k>/dx (<case>.v_<name> the directions, <case>.hv_<name>
the products). f64, small shapes."""
import torch
import torch.nn.functional as F

from common import Family

f = Family("grad2")
torch.set_default_dtype(torch.float64)
r = torch.randn


def save_all(name, **ts):
    for k, t in ts.items():
        f.save(f"{name}.{k}", t)


def hvp(name, loss, const=None, **inputs):
    """The Hessian-vector product of loss(**inputs) along random directions."""
    xs = {k: t.clone().requires_grad_(True) for k, t in inputs.items()}
    vs = {k: r(t.shape) for k, t in inputs.items()}
    out = loss(**xs)
    gs = torch.autograd.grad(out, list(xs.values()), create_graph=True)
    s = sum((g * vs[k]).sum() for g, k in zip(gs, xs))
    hv = torch.autograd.grad(s, list(xs.values()))
    save_all(name, **inputs, **(const or {}))
    save_all(name, **{f"v_{k}": v for k, v in vs.items()})
    save_all(name, **{f"hv_{k}": h for k, h in zip(xs, hv)})


# A gradient penalty (WGAN-GP): D(x) = sum(tanh(x W)), gp = sum((dD/dx)^2);
# gp's gradients in x and W.
x, w = r(4, 3), r(3, 5)
xg, wg = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
d = torch.tanh(xg @ wg).sum()
(gx,) = torch.autograd.grad(d, xg, create_graph=True)
gx.pow(2).sum().backward()
save_all("penalty", x=x, w=w, gp_x=xg.grad, gp_w=wg.grad)

# An MLP's loss: cross_entropy(layer_norm(gelu(x W1 + b1)) W2, t).
t = torch.tensor([1, 0, 3, 2, 3])
hvp("mlp", lambda x, w1, b1, w2: F.cross_entropy(
        F.layer_norm(F.gelu(x @ w1 + b1), (6,), eps=1e-5) @ w2, t),
    x=r(5, 4), w1=r(4, 6), b1=r(6), w2=r(6, 4), const={"t": t})

# Causal attention written out (this PyTorch has no fused sdpa): softmax of
# masked scores by v, against a fixed weighting of the output.
mask = torch.ones(4, 4).triu(1).bool()
wo = r(2, 4, 3)
hvp("attention", lambda q, k, v: (torch.softmax((q @ k.transpose(-1, -2) / 3 ** 0.5).masked_fill(
        mask, float("-inf")), -1) @ v * wo).sum(),
    q=r(2, 4, 3), k=r(2, 4, 3), v=r(2, 4, 3), const={"wo": wo})

# A strided, padded, grouped convolution under tanh and a mean.
wc = r(4, 2, 3, 3)
hvp("conv", lambda x, w: torch.tanh(F.conv2d(x, w, stride=2, padding=1, groups=2)).mean(),
    x=r(2, 4, 5, 6), w=wc)

f.done()
