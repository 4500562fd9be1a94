"""interp.py - golden data for the public entry points of ops.def's
"interpolate, embedding_bag, einsum, scatter_reduce" block beyond the rows
(opinfo.py samples those): tj_interpolate with scale_factor (the output size
floor(in * scale) and the scale kept for the coordinates) and with size, in
every mode, and tj_embedding_bag / tj_scatter_reduce through their C
signatures (scatter_reduce prod's gradient at zeros, embedding_bag's
padding_idx and max_norm).
tests/test_interp.c reads tests/golden/interp/<name>.npy.
Run: /usr/bin/python3 scripts/golden/interp.py"""
import torch
import torch.nn.functional as F

from common import Family


def interp_cubic_area(f, x, x1, x3):
    """bicubic (A = -0.75, border clamped) by size and scale, align_corners
    both ways, out == in with a scale (not the identity in torch), f64; area
    (adaptive_avg_pool) 1-D, 2-D, 3-D, up and down, equal windows, windows of
    up to 8 entries and longer ones; non-finite inputs (inf reaches only its
    taps and windows, NaN where torch multiplies it by 0)."""
    cubic = lambda t, **k: F.interpolate(t, mode="bicubic", **k)
    area = lambda t, **k: F.interpolate(t, mode="area", **k)
    f.save("bicubic_scale", cubic(x, scale_factor=(2.5, 0.6), align_corners=False))
    f.save("bicubic_size", cubic(x, size=(9, 6), align_corners=False))
    f.save("bicubic_corners", cubic(x, size=(9, 6), align_corners=True))
    f.save("bicubic_down", cubic(x, size=(3, 2), align_corners=False))
    f.save("bicubic_same_scale", cubic(x, scale_factor=(1.1, 1.2), align_corners=False))
    f.save("bicubic_f64", cubic(x.double(), size=(7, 5), align_corners=True))
    f.save("area_size", area(x, size=(7, 3)))
    f.save("area_halves", area(x, size=(5, 2)))
    f.save("area_scale", area(x, scale_factor=(2.5, 0.6)))
    f.save("area1d_up", area(x1, size=(13,)))
    f.save("area1d_down", area(x1, size=(4,)))
    x40 = torch.randn(1, 2, 40)
    f.save("x40", x40)
    f.save("area1d_long", area(x40, size=(3,)))
    f.save("area3d", area(x3, size=(3, 5, 2)))
    xi = torch.arange(20.0).reshape(1, 1, 4, 5)
    xi[0, 0, 1, 2] = float("inf")
    xi[0, 0, 3, 4] = float("nan")
    f.save("xinf", xi)
    f.save("bicubic_inf", cubic(xi, size=(6, 7), align_corners=False))
    f.save("area_inf", area(xi, size=(6, 3)))


def bag_padding_max_norm(f):
    """embedding_bag's padding_idx (1-D and 2-D, negative, every mode, a bag of
    padding only) and max_norm (the weight after its rows are renormalized in
    place, norm_type 2, 1 and inf, with padding, and the gradient through it)."""
    w = torch.randn(6, 3)
    idx = torch.tensor([1, 2, 2, 4, 2, 5])
    off = torch.tensor([0, 2, 3, 3])
    i2 = torch.tensor([[2, 2, 2], [1, 2, 5]])
    f.save("pw", w)
    f.save("pidx", idx)
    f.save("poff", off)
    f.save("pi2", i2)
    for m, tm in (("sum", "sum"), ("mean", "mean"), ("amax", "max")):
        f.save(f"pad_{m}", F.embedding_bag(idx, w, off, mode=tm, padding_idx=2))
        f.save(f"pad2d_{m}", F.embedding_bag(i2, w, mode=tm, padding_idx=-4))
    psw = torch.randn(6)
    f.save("ppsw", psw)
    f.save("pad_psw", F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=psw, padding_idx=2))
    for tag, p in (("2", 2.0), ("1", 1.0), ("inf", float("inf"))):
        wm = (w * 3).clone()
        f.save(f"mn{tag}_y", F.embedding_bag(idx, wm, off, mode="mean", max_norm=1.5, norm_type=p,
                                            padding_idx=4))
        f.save(f"mn{tag}_w", wm)
    wg = (w * 3).clone().requires_grad_()
    g = torch.randn(4, 3)
    y = F.embedding_bag(idx, wg, off, mode="sum", max_norm=2.0)
    y.backward(g)
    f.save("mng_g", g)
    f.save("mng_y", y)
    f.save("mng_w", wg.detach())
    f.save("mng_dw", wg.grad)


def scatter_prod_zeros(f):
    """scatter_reduce prod's gradient where zeros meet (PyTorch's
    scatter_reduce_backward): column 0 a zero of x, 1 zeros of x and src at one
    position, 2 one zero of src, 3 two zeros of src at one position."""
    x = torch.tensor([[0, 2, 3, 1.5], [1, 0, 2, 0.5], [2, 1, 0, 3]], dtype=torch.float64)
    src = torch.tensor([[2, 0, 0, 0], [0.5, 2, 1.5, 0], [3, 1.5, 2, 2]], dtype=torch.float64)
    ix = torch.tensor([[0, 1, 0, 2], [0, 1, 0, 2], [1, 2, 0, 2]])
    g = torch.randn(3, 4, dtype=torch.float64)
    f.save("pz_x", x)
    f.save("pz_src", src)
    f.save("pz_ix", ix)
    f.save("pz_g", g)
    for inc in (True, False):
        a, b = x.clone().requires_grad_(), src.clone().requires_grad_()
        y = torch.scatter_reduce(a, 0, ix, b, "prod", include_self=inc)
        y.backward(g)
        tag = "self" if inc else "noself"
        f.save(f"pz_{tag}_y", y)
        f.save(f"pz_{tag}_dx", a.grad)
        f.save(f"pz_{tag}_dsrc", b.grad)


def main():
    f = Family("interp", seed=5)
    x = torch.randn(2, 3, 5, 4)
    f.save("x", x)
    f.save("nearest_scale", F.interpolate(x, scale_factor=(1.7, 2.3), mode="nearest"))
    f.save("nearest_size", F.interpolate(x, size=(7, 3), mode="nearest"))
    f.save("bilinear_scale", F.interpolate(x, scale_factor=(2.5, 0.6), mode="bilinear",
                                           align_corners=False))
    f.save("bilinear_corners", F.interpolate(x, size=(9, 6), mode="bilinear", align_corners=True))
    x1 = torch.randn(2, 3, 6)
    f.save("x1", x1)
    f.save("nearest1d_scale", F.interpolate(x1, scale_factor=2.2, mode="nearest"))
    x3 = torch.randn(1, 2, 2, 3, 2)
    f.save("x3", x3)
    f.save("nearest3d_scale", F.interpolate(x3, scale_factor=(1.5, 2.0, 2.5), mode="nearest"))
    w = torch.randn(10, 4)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    off = torch.tensor([0, 3, 3, 6])
    psw = torch.randn(8)
    f.save("w", w)
    f.save("idx", idx)
    f.save("off", off)
    f.save("psw", psw)
    f.save("bag_sum_psw", F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=psw))
    f.save("bag_max", F.embedding_bag(idx, w, off, mode="max"))
    f.save("bag_mean_last", F.embedding_bag(idx[:6], w, off, mode="mean", include_last_offset=True))
    s = torch.randn(3, 4)
    ix = torch.tensor([[0, 2, 1, 0], [0, 0, 2, 0]])
    src = torch.randn(2, 4)
    f.save("s", s)
    f.save("ix", ix)
    f.save("src", src)
    f.save("scatter_amin", torch.scatter_reduce(s, 0, ix, src, "amin", include_self=False))
    scatter_prod_zeros(f)
    interp_cubic_area(f, x, x1, x3)
    bag_padding_max_norm(f)
    f.done()


if __name__ == "__main__":
    main()
