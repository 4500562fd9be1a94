"""strided.py - golden data for tj_as_strided (tests/test_prims_rest.c):
PyTorch's storage-absolute view of x's storage and its gradient
(as_strided_backward) where x is not its whole storage: a slice (offset),
a transposed view, an expanded view (shared positions, divided), windows
that overlap. The storage is arange(12) in f64, a leaf; each case saves the
view's values, a seed g and the leaf's gradient.
tests/test_prims_rest.c reads tests/golden/strided/<name>.npy.
Run: /usr/bin/python3 scripts/golden/strided.py"""
import torch

from common import Family

CASES = {
    # name: (x from the leaf, size, stride, storage_offset)
    "slice": (lambda s: s[2:8], (2, 3), (3, 1), 0),
    "slice_own": (lambda s: s[2:8], (3,), (2,), 2),
    "transposed": (lambda s: s.reshape(3, 4).t(), (4, 2), (1, 4), 3),
    "expanded": (lambda s: s[:3].expand(4, 3), (3,), (1,), 1),
    "windows": (lambda s: s[1:11], (4, 3), (2, 1), 1),
}


def main():
    f = Family("strided", seed=11)
    for name, (view, size, stride, off) in CASES.items():
        leaf = torch.arange(12.0, dtype=torch.float64, requires_grad=True)
        y = view(leaf).as_strided(size, stride, off)
        g = torch.randn(size, dtype=torch.float64)
        y.backward(g)
        f.save(f"{name}_y", y)
        f.save(f"{name}_g", g)
        f.save(f"{name}_grad", leaf.grad)
    f.done()


if __name__ == "__main__":
    main()
