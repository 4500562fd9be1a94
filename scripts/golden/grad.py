"""grad.py - golden gradients from PyTorch for tests/test_autograd.c.

Each case saves its inputs (<case>.in<k>), a seed gradient for its output
(<case>.seed) and the gradient of every float input (<case>.grad<k>):
L = sum(out * seed). f32, small shapes; views and broadcasting included.
The C test runs the same op through tjit's eager API (by case name)."""
import torch
import torch.nn.functional as F

from common import Family

f = Family("grad")


def case(name, fn, *inputs, const=()):
    ins = [t.clone().requires_grad_(t.is_floating_point() and k not in const)
           for k, t in enumerate(inputs)]
    out = fn(*ins)
    seed = torch.randn(out.shape)
    (out * seed).sum().backward()
    for k, t in enumerate(inputs):
        f.save(f"{name}.in{k}", t)
        if ins[k].grad is not None:
            f.save(f"{name}.grad{k}", ins[k].grad)
    f.save(f"{name}.seed", seed)


r = torch.randn
case("add_broadcast", lambda a, b: a + b, r(3, 1, 4), r(5, 1))
case("mul_broadcast", lambda a, b: a * b, r(2, 3), r(3))
case("div", lambda a, b: a / b, r(2, 3), r(2, 3).abs() + 0.5)
case("maximum_ties", lambda a, b: torch.maximum(a, b), torch.tensor([1., 2., 3.]), torch.tensor([1., 0., 3.]))
case("relu_zero", lambda a: torch.relu(a), torch.tensor([-1., 0., 2.]))
case("abs_zero", lambda a: torch.abs(a), torch.tensor([-1., 0., 2.]))
case("sum_dims", lambda a: a.sum(dim=(0, 2)), r(2, 3, 4))
case("amax_ties", lambda a: a.amax(dim=1), torch.tensor([[1., 3., 3.], [2., 0., 1.]]))
case("transpose_matmul", lambda a, b: a.transpose(0, 1) @ b, r(4, 3), r(4, 5))
case("matmul_batch", lambda a, b: a @ b, r(2, 1, 3, 4), r(3, 4, 2))
case("conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1, groups=2),
     r(2, 4, 7, 6), r(6, 2, 3, 3), r(6))
case("max_pool2d", lambda x: F.max_pool2d(x, 3, stride=2, padding=1), r(2, 3, 7, 6))
case("avg_pool2d", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
     r(2, 3, 7, 6))
case("layer_norm", lambda x, w, b: F.layer_norm(x, (5,), w, b, 1e-5), r(3, 4, 5), r(5), r(5))
case("batch_norm", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, False, 0.1, 1e-5),
     r(4, 3, 5), r(3), r(3).abs() + 0.5, r(3), r(3), const=(1, 2))
case("embedding", lambda w, i: F.embedding(i, w), r(7, 3), torch.tensor([[1, 6], [1, 0]]))
case("sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
     if hasattr(F, "scaled_dot_product_attention")
     else torch.softmax((q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(
         torch.ones(q.shape[-2], k.shape[-2]).triu(1).bool(), float("-inf")), -1) @ v,
     r(2, 4, 3), r(2, 4, 3), r(2, 4, 5))
case("cross_entropy", lambda x, t: F.cross_entropy(x, t), r(4, 5), torch.tensor([1, 0, 4, 4]))
case("log_softmax", lambda x: F.log_softmax(x, 1), r(3, 4))
case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh") if "approximate" in F.gelu.__doc__
     else 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3))), r(2, 5))

# Training-mode batch norm: gradients, and the running statistics it leaves.
rm, rv = r(3), r(3).abs() + 0.5
f.save("batch_norm_train.rm", rm)
f.save("batch_norm_train.rv", rv)
rm2, rv2 = rm.clone(), rv.clone()
case("batch_norm_train", lambda x, w, b: F.batch_norm(x, rm2, rv2, w, b, True, 0.1, 1e-5),
     r(4, 3, 5), r(3), r(3))
f.save("batch_norm_train.rm_after", rm2)
f.save("batch_norm_train.rv_after", rv2)

# cross_entropy with torch's arguments (weights of class-index targets are
# not differentiable in torch: constant there)
case("cross_entropy_nd", lambda x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=2,
                                                         label_smoothing=0.2),
     r(2, 5, 3), torch.tensor([[0, 2, 4], [1, 3, 3]]), r(5).abs() + 0.5, const=(2,))
case("cross_entropy_none", lambda x, t: F.cross_entropy(x, t, reduction="none", ignore_index=-1),
     r(4, 6), torch.tensor([5, -1, 0, 2]))
case("cross_entropy_probs", lambda x, t, w: F.cross_entropy(x, t, weight=w, reduction="sum",
                                                            label_smoothing=0.1),
     r(3, 4, 2), torch.softmax(r(3, 4, 2), 1), r(4).abs() + 0.5)

# max_pool2d in ceil mode where a value-based rule could choose otherwise:
# ties (the first maximum), a window of -inf only (its first element in the
# input, not the padding) and NaNs (the last NaN of the window)
xm = torch.randint(-1, 2, (1, 2, 7, 6)).double()
xm[0, 0, :3, :3] = float("-inf")
xm[0, 1, 2, 1], xm[0, 1, 2, 2], xm[0, 1, 5, 5] = float("nan"), float("nan"), float("nan")
case("max_pool2d_ext", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), xm)
f.done()
