"""common.py - shared by the golden-data generators (scripts/golden/<family>.py).

Each generator makes inputs with a fixed seed, runs PyTorch (Debian's
python3-torch, run with /usr/bin/python3) and saves inputs and expected
outputs as .npy under tests/golden/<family>/. Keep arrays small: the whole
golden set stays within a few MB.
"""
import os

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden")

# The dtypes tjit computes in, by their text-IR names, in ir/dtypes.def's
# order (without the storage-only f16, bf16 and c64): the one table of them
# here; a new dtype is one entry.
DTYPES = {"bool": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16,
          "i32": torch.int32, "i64": torch.int64, "f32": torch.float32, "f64": torch.float64}
DTYPE_NAME = {v: k for k, v in DTYPES.items()}


class Family:
    def __init__(self, name, seed=0):
        self.dir = os.path.join(ROOT, name)
        os.makedirs(self.dir, exist_ok=True)
        for f in os.listdir(self.dir):
            if f.endswith(".npy"):
                os.remove(os.path.join(self.dir, f))
        torch.manual_seed(seed)
        self.count = 0

    def save(self, name, t):
        """Saves a tensor (or array) as <family>/<name>.npy, C order, little endian.
        0-dim arrays keep their shape (np.ascontiguousarray would make them 1-dim)."""
        a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        np.save(os.path.join(self.dir, name + ".npy"), a.copy(order="C"))
        self.count += 1

    def done(self):
        total = sum(os.path.getsize(os.path.join(self.dir, f)) for f in os.listdir(self.dir))
        print(f"{os.path.basename(self.dir)}: {self.count} files, {total / 1024:.0f} KiB")


def view(t, kind):
    """The view of t a case names; tests/util.c (tu_view) builds the same one:
    'p' all dims reversed, 's' dim 1 sliced 1::2, 'e' dim 1 expanded from its
    first entry, 't' last two dims swapped, '0' reshaped to 0 dims, 'c' t."""
    if kind == "p":
        return t.permute(*reversed(range(t.dim())))
    if kind == "s":
        return t[:, 1::2]
    if kind == "e":
        return t[:, :1].expand(t.shape)
    if kind == "t":
        return t.transpose(-1, -2)
    if kind == "0":
        return t.reshape(())
    if kind == "c":
        return t
    raise ValueError(kind)
