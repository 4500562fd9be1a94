#!/usr/bin/python3
"""conv_shapes.py - the 16 conv2d shapes of benchmarks/probes/conv_shapes.c
(`make bench-conv`) in PyTorch, for docs/perf.md: F.conv2d eagerly (oneDNN
where PyTorch picks it) and as a frozen TorchScript module (optimize_for_inference),
the best of RUNS calls by the process's CPU time at one thread, and GFLOP/s.

    /usr/bin/python3 benchmarks/pytorch/conv_shapes.py [RUNS] [--threads N]
"""
import argparse
import time

# batch, channels, height = width, outputs, kernel, stride, padding, groups
SHAPES = [
    (8, 64, 56, 64, 3, 1, 1, 1), (8, 128, 28, 128, 3, 1, 1, 1), (8, 256, 14, 256, 3, 1, 1, 1),
    (8, 512, 7, 512, 3, 1, 1, 1), (8, 64, 56, 256, 1, 1, 0, 1), (8, 256, 56, 64, 1, 1, 0, 1),
    (8, 128, 28, 256, 1, 2, 0, 1), (8, 3, 224, 64, 7, 2, 3, 1), (8, 64, 56, 128, 3, 2, 1, 1),
    (8, 128, 28, 128, 3, 1, 1, 128), (8, 128, 28, 128, 3, 2, 1, 128), (8, 32, 28, 32, 5, 1, 2, 1),
    (8, 128, 28, 128, 3, 1, 1, 8), (1, 64, 56, 64, 3, 1, 1, 1), (8, 32, 14, 32, 3, 1, 1, 1),
    (8, 512, 7, 2048, 1, 1, 0, 1),
]


def best_ms(fn, x, runs):
    best = float("inf")
    for _ in range(runs):
        t0 = time.process_time()
        y = fn(x)
        best = min(best, time.process_time() - t0)
        del y
    return best * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="?", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    opts = ap.parse_args()
    import torch
    torch.set_num_threads(opts.threads)
    torch.manual_seed(0)
    with torch.inference_mode():
        for n, c, h, o, k, s, p, g in SHAPES:
            x = torch.randn(n, c, h, h)
            conv = torch.nn.Conv2d(c, o, k, s, p, groups=g, bias=False).eval()
            oh = (h + 2 * p - k) // s + 1
            gf = 2.0 * n * o * oh * oh * (c // g) * k * k / 1e9
            eager = best_ms(conv, x, opts.runs)
            ts = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(conv, x)))
            ts(x)
            ts(x)
            frozen = best_ms(ts, x, opts.runs)
            print(f"n{n} c{c:<3} {h:3}x{h:<3} o{o:<4} k{k} s{s} g{g:<3} {gf:6.3f} GFLOP:"
                  f"  eager {eager:7.2f} ms ({gf / eager * 1e3:5.1f} GFLOP/s)"
                  f"  torchscript {frozen:7.2f} ms ({gf / frozen * 1e3:5.1f} GFLOP/s)", flush=True)


if __name__ == "__main__":
    main()
