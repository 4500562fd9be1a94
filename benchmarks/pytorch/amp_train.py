#!/usr/bin/python3
"""amp_train.py - the steps of benchmarks/backward/amp.c (`make
bench-backward-amp`) in PyTorch eager, for docs/perf.md: an MLP 784-1024-1024-10
with relu and cross-entropy, AdamW (lr 1e-3, weight decay 0.01), one step =
zero_grad, forward, backward, update, on the same batch each step; in f32
and under CPU autocast to bf16 (PyTorch 1.13 has no CPU f16 autocast and no
CPU GradScaler). Prints the median and best wall ms over --reps steps after
2 warm-up steps, and the loss after them.

    /usr/bin/python3 benchmarks/pytorch/amp_train.py [--threads N] [--reps N] [--batch B]
"""
import argparse

import torch
import torch.nn.functional as F

from steps import time_steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=512)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    n_in, hid, out = 784, 1024, 10
    torch.manual_seed(2)
    x = torch.randn(a.batch, n_in)
    y = torch.randint(0, out, (a.batch,))
    print(f"MLP {n_in}-{hid}-{hid}-{out}, relu, cross-entropy, AdamW, batch {a.batch}, {a.threads} threads, "
          f"PyTorch {torch.__version__} eager, wall ms, {a.reps} steps after 2:")
    for bf16 in (False, True):
        torch.manual_seed(1)
        ws = [(torch.randn(hid, n_in) * 0.03).requires_grad_(), torch.zeros(hid, requires_grad=True),
              (torch.randn(hid, hid) * 0.03).requires_grad_(), torch.zeros(hid, requires_grad=True),
              (torch.randn(out, hid) * 0.03).requires_grad_(), torch.zeros(out, requires_grad=True)]
        opt = torch.optim.AdamW(ws, lr=1e-3, weight_decay=0.01)
        last = [0.0]

        def step():
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                h = F.relu(F.linear(x, ws[0], ws[1]))
                h = F.relu(F.linear(h, ws[2], ws[3]))
                loss = F.cross_entropy(F.linear(h, ws[4], ws[5]), y)
            loss.backward()
            opt.step()
            last[0] = loss.item()
        ts = time_steps(step, a.reps, warm=2)
        print(f"  {'bf16 autocast' if bf16 else 'f32':20s} eager    median {ts[len(ts) // 2]:8.2f}  "
              f"best {ts[0]:8.2f}  loss after {a.reps + 2} steps {last[0]:.4f}")


if __name__ == "__main__":
    main()
