#!/usr/bin/python3
"""convblock_train.py - the step of benchmarks/backward/convblock.c
(`make bench-backward-conv`) in PyTorch eager, for docs/perf.md: P6's ResNet
basic block with training-mode batch norms (or --eval), x [B,64,56,56], the
conv weights and the norms' gamma and beta requiring grad; one step = forward,
backward with a ones seed, the gradients dropped. Prints the median and best
wall ms over --reps steps after 3 warm-up steps.

    /usr/bin/python3 benchmarks/pytorch/convblock_train.py [--threads N] [--reps N] [--batch B] [--eval]
"""
import argparse

import torch
import torch.nn.functional as F

from steps import time_steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--eval", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    blocks = []
    for _ in range(2):
        w = (torch.randn(64, 64, 3, 3) * 0.06).requires_grad_()
        gamma = torch.ones(64, requires_grad=True)
        beta = torch.zeros(64, requires_grad=True)
        blocks.append((w, gamma, beta, torch.zeros(64), torch.ones(64)))
    x = torch.randn(a.batch, 64, 56, 56)
    seed = torch.ones(a.batch, 64, 56, 56)

    def conv_bn(k, t):
        w, gamma, beta, mean, var = blocks[k]
        y = F.conv2d(t, w, None, 1, 1)
        return F.batch_norm(y, mean, var, gamma, beta, not a.eval, 0.1, 1e-5)

    def step():
        h = torch.relu(conv_bn(0, x))
        y = torch.relu(conv_bn(1, h) + x)
        y.backward(seed)
        for b in blocks:
            for p in b[:3]:
                p.grad = None

    ts = time_steps(step, a.reps)
    print("PyTorch %s: ResNet basic block %dx64x56x56 (%s batch norm), forward + backward, %d threads, wall ms, "
          "%d steps:" % (torch.__version__, a.batch, "eval" if a.eval else "training", a.threads, a.reps))
    print("  eager     median %.2f  best %.2f" % (ts[len(ts) // 2], ts[0]))


if __name__ == "__main__":
    main()
