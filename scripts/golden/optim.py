"""optim.py - golden parameters after optimizer steps (torch.optim), for
tests/test_optim.c: w0 [2,3], the loss sum(w * w * c) + sum(w) each step
(its gradient 2 c w + 1), three steps of each configuration."""
import torch

from common import Family

f = Family("optim")
w0 = torch.tensor([[1.0, -2.0, 3.0], [0.5, -0.25, 4.0]], dtype=torch.float64)
c = torch.tensor([[1.0, 2.0, 0.5], [3.0, 1.0, 0.25]], dtype=torch.float64)
f.save("w0", w0)
f.save("c", c)
configs = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
    "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
    "adam": lambda p: torch.optim.Adam(p, lr=0.1),
    "adam_l2": lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.05, weight_decay=0.1),
}
for name, make in configs.items():
    w = w0.clone().requires_grad_(True)
    opt = make([w])
    for _ in range(3):
        opt.zero_grad()
        (w * w * c + w).sum().backward()
        opt.step()
    f.save(name, w)
f.done()
