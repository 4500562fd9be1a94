#!/usr/bin/python3
"""penalty_train.py - the step of benchmarks/backward/penalty.c
(`make bench-backward-penalty`) in PyTorch eager, for docs/perf.md: a WGAN-GP
critic, D = linear(leaky_relu(linear(leaky_relu(linear(x))))) 784-512-512-1
(slope 0.2); one step = x = eps real + (1 - eps) fake, g = dD(x)/dx with
create_graph=True, loss = mean(D(fake)) - mean(D(real)) + 10 mean((|g|_row -
1)^2), backward into the six weights, the gradients dropped. Prints the
median and best wall ms over --reps steps after 3 warm-up steps.

    /usr/bin/python3 benchmarks/pytorch/penalty_train.py [--threads N] [--reps N] [--batch B]
"""
import argparse

import torch
import torch.nn.functional as F

from steps import time_steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=51)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dims = [784, 512, 512, 1]
    ws = [(torch.randn(dims[k + 1], dims[k]) / 28).requires_grad_() for k in range(3)]
    bs = [torch.zeros(dims[k + 1], requires_grad=True) for k in range(3)]
    real, fake, eps = torch.randn(a.batch, 784), torch.randn(a.batch, 784), torch.rand(a.batch, 1)

    def critic(x):
        for k in range(3):
            x = F.linear(x, ws[k], bs[k])
            if k < 2:
                x = F.leaky_relu(x, 0.2)
        return x

    def step():
        x = (eps * real + (1 - eps) * fake).requires_grad_()
        (g,) = torch.autograd.grad(critic(x).sum(), x, create_graph=True)
        gp = ((g.pow(2).sum(1).sqrt() - 1) ** 2).mean()
        loss = critic(fake).mean() - critic(real).mean() + 10 * gp
        loss.backward()
        for p in ws + bs:
            p.grad = None

    ts = time_steps(step, a.reps)
    print("PyTorch %s: WGAN-GP critic step, batch %d, MLP 784-512-512-1, %d threads, wall ms, %d steps:"
          % (torch.__version__, a.batch, a.threads, a.reps))
    print("  eager     median %.3f  best %.3f" % (ts[len(ts) // 2], ts[0]))


if __name__ == "__main__":
    main()
