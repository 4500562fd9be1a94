#!/usr/bin/python3
"""checkpoint_train.py - the steps of benchmarks/backward/checkpoint.c
(`make bench-backward-checkpoint`) in PyTorch eager, for docs/perf.md: L
residual MLP blocks h + linear(dropout(gelu(linear(layer_norm(h)))), 0.1)),
width 256, hidden 1024, f32; one step = forward, sum, backward, the gradients
dropped; plain and with torch.utils.checkpoint (use_reentrant=False, as
tj_checkpoint). Prints the median and best wall ms over --reps steps after 1
warm-up step, and the process's peak resident set (ru_maxrss) after each.

    /usr/bin/python3 benchmarks/pytorch/checkpoint_train.py [--threads N] [--reps N] [--batch B] [--layers L]
"""
import argparse
import resource

import torch
import torch.nn.functional as F
import torch.utils.checkpoint as cp

from steps import time_steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=8)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    d, hid = 256, 1024
    layers = [dict(w1=(torch.randn(hid, d) / 16).requires_grad_(), b1=torch.zeros(hid, requires_grad=True),
                   w2=(torch.randn(d, hid) / 32).requires_grad_(), b2=torch.zeros(d, requires_grad=True),
                   g=torch.ones(d, requires_grad=True), beta=torch.zeros(d, requires_grad=True))
              for _ in range(a.layers)]
    x = torch.randn(a.batch, d)

    def block(h, l):
        u = F.gelu(F.linear(F.layer_norm(h, (d,), l["g"], l["beta"], 1e-5), l["w1"], l["b1"]))
        return h + F.linear(F.dropout(u, 0.1, True), l["w2"], l["b2"])

    print(f"residual MLP blocks, {a.layers} layers, batch {a.batch}, width {d}, hidden {hid}, f32, "
          f"{a.threads} threads, PyTorch {torch.__version__} eager, wall ms, {a.reps} steps:")
    for ckpt in (False, True):
        def step():
            h = x
            for l in layers:
                h = cp.checkpoint(block, h, l, use_reentrant=False) if ckpt else block(h, l)
            h.sum().backward()
            for l in layers:
                for t in l.values():
                    t.grad = None
        ts = time_steps(step, a.reps, warm=1)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  {'checkpointed' if ckpt else 'plain':12s} median {ts[len(ts) // 2]:8.1f}  best {ts[0]:8.1f}  "
              f"peak RSS so far {rss:7.1f} MB")


if __name__ == "__main__":
    main()
