"""onnx_bench.py - imported ONNX models, tjit against PyTorch eager on the
same inputs (docs/perf.md, docs/onnx.md): a convnet (two ResNet-style conv
blocks with batch norm, 8x64x56x56) and a transformer encoder layer
(d_model 256, 8 heads, ffn 1024, batch 8, sequence 128), exported with
torch.onnx.export (opset 17) into a temporary directory, then timed:
PyTorch eager (median of --repeat calls after warm-up, torch.no_grad) and
`tjit run MODEL.onnx --repeat` (compiled and eager). Checks tjit's output
against PyTorch's first. Markdown on stdout.

    /usr/bin/python3 benchmarks/pytorch/onnx_bench.py [--tjit build/tjit] [--threads 2] [--repeat 30]
"""
import argparse
import os
import re
import subprocess
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + x)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(64), Block(64))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(nn.functional.adaptive_avg_pool2d(self.blocks(x), 1).flatten(1))


def median_ms(f, repeat):
    f()
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    return sorted(t)[len(t) // 2]


def tjit_ms(tjit, model, x, repeat, eager, threads):
    env = dict(os.environ, TJIT_NUM_THREADS=str(threads))
    cmd = [tjit, "run", model, "--in", x, "--repeat", str(repeat)] + (["--eager"] if eager else [])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tjit", default="build/tjit")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=30)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    models = [("convnet", ConvNet(), torch.randn(8, 64, 56, 56)),
              ("encoder", nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True),
               torch.randn(8, 128, 256))]
    print("| model | PyTorch eager ms | tjit eager ms | tjit compiled ms | PyTorch / tjit compiled | max abs diff |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for name, m, x in models:
            m.eval()
            path, xin, yout = (os.path.join(d, name + s) for s in (".onnx", ".x.npy", ".y"))
            torch.onnx.export(m, (x,), path, opset_version=17, input_names=["x"], output_names=["y"])
            np.save(xin, x.numpy())
            with torch.no_grad():
                want = m(x).numpy()
                pt = median_ms(lambda: m(x), a.repeat)
            os.makedirs(yout, exist_ok=True)
            subprocess.run([a.tjit, "run", path, "--in", xin, "--out", yout], check=True,
                           capture_output=True)
            diff = float(np.abs(np.load(os.path.join(yout, "out0.npy")) - want).max())
            te = tjit_ms(a.tjit, path, xin, a.repeat, True, a.threads)
            tc = tjit_ms(a.tjit, path, xin, a.repeat, False, a.threads)
            print("| %s | %.2f | %.2f | %.2f | %.2fx | %.1e |" % (name, pt, te, tc, pt / tc, diff))


if __name__ == "__main__":
    main()
