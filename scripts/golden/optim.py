"""optim.py - golden parameters after optimizer steps (torch.optim), for
tests/test_optim.c and tests/test_optim_sched.c: w0 [2,3], the loss
sum(w * w * c) + sum(w) each step (its gradient 2 c w + 1).

- <config>: w after three steps of each optimizer configuration (five for
  amsgrad, whose maximum needs a falling second moment to matter);
- lr_<kind>: the learning rate of steps 0..11 under each lr_scheduler;
- sched: w after 8 SGD-momentum steps under warmup then cosine;
- clip_<norm>_grad, clip_<norm>_total: the gradient at w0 after
  clip_grad_norm_ (max_norm 2) and its returned total norm; clip_value_grad;
- clip_train: w after three SGD steps with clip_grad_norm_(1.5) before each;
- groups_<config>_w, _b: w (group 0) and b0 (group 1) after three steps of
  an optimizer with two parameter groups, L = loss(w) + sum(b * b * cb + b);
- groups_sched_w, _b, _lr1: the same with SGD groups at lr 0.1 and 0.02
  under a cosine schedule for 6 steps, and group 1's lr at each step;
- avg_ema_w, avg_ema_b, avg_swa_w, avg_swa_b: torch.optim.swa_utils's
  AveragedModel of (w, b) after five updates with the weights at
  w0 * (1 + 0.3 t) + sin(t) and b0 * (1 - 0.2 t) (EMA decay 0.9; SWA's mean);
- plateau_<mode>: the lrs of two SGD groups (0.1, 0.05) after each of 14
  ReduceLROnPlateau steps on the metrics plateau_metrics.
"""
import math

import torch

from common import Family

f = Family("optim")
w0 = torch.tensor([[1.0, -2.0, 3.0], [0.5, -0.25, 4.0]], dtype=torch.float64)
c = torch.tensor([[1.0, 2.0, 0.5], [3.0, 1.0, 0.25]], dtype=torch.float64)
f.save("w0", w0)
f.save("c", c)


def loss(w):
    return (w * w * c + w).sum()


configs = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
    "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
    "adam": lambda p: torch.optim.Adam(p, lr=0.1),
    "adam_l2": lambda p: torch.optim.Adam(p, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.05, weight_decay=0.1),
    "adam_amsgrad": lambda p: torch.optim.Adam(p, lr=0.3, betas=(0.5, 0.6), amsgrad=True),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=0.01),
    "rmsprop_centered": lambda p: torch.optim.RMSprop(p, lr=0.02, alpha=0.9, eps=1e-6, weight_decay=0.05,
                                                      momentum=0.7, centered=True),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
    "adagrad_decay": lambda p: torch.optim.Adagrad(p, lr=0.2, lr_decay=0.3, weight_decay=0.05,
                                                   initial_accumulator_value=0.5, eps=1e-8),
}
for name, make in configs.items():
    w = w0.clone().requires_grad_(True)
    opt = make([w])
    for _ in range(5 if "amsgrad" in name else 3):
        opt.zero_grad()
        loss(w).backward()
        opt.step()
    f.save(name, w)

# learning-rate schedules: the lr each of 12 steps uses (base 0.1)
S = torch.optim.lr_scheduler


def sequential(o):
    return S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=3),
                              S.CosineAnnealingLR(o, T_max=8, eta_min=0.01)], milestones=[3])


schedules = {
    "step": lambda o: S.StepLR(o, step_size=3, gamma=0.5),
    "exponential": lambda o: S.ExponentialLR(o, gamma=0.9),
    "cosine": lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "linear": lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=4),
    "warmup_cosine": sequential,
    "multistep": lambda o: S.MultiStepLR(o, milestones=[2, 5, 9], gamma=0.3),
    "polynomial": lambda o: S.PolynomialLR(o, total_iters=8, power=2.0),
    "onecycle": lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=12, cycle_momentum=False),
    "onecycle3": lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=12, pct_start=0.25, anneal_strategy="linear",
                                        div_factor=10.0, final_div_factor=100.0, three_phase=True,
                                        cycle_momentum=False),
}
for name, make in schedules.items():
    w = w0.clone().requires_grad_(True)
    opt = torch.optim.SGD([w], lr=0.1)
    sched = make(opt)
    lrs = []
    for _ in range(12):
        lrs.append(opt.param_groups[0]["lr"])
        opt.zero_grad()
        loss(w).backward()
        opt.step()
        sched.step()
    f.save("lr_" + name, torch.tensor(lrs, dtype=torch.float64))

w = w0.clone().requires_grad_(True)
opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
sched = sequential(opt)
for _ in range(8):
    opt.zero_grad()
    loss(w).backward()
    opt.step()
    sched.step()
f.save("sched", w)

# gradient clipping
for name, p in {"2": 2.0, "inf": math.inf, "1p5": 1.5}.items():
    w = w0.clone().requires_grad_(True)
    loss(w).backward()
    total = torch.nn.utils.clip_grad_norm_([w], max_norm=2.0, norm_type=p)
    f.save(f"clip_{name}_grad", w.grad)
    f.save(f"clip_{name}_total", total)
w = w0.clone().requires_grad_(True)
loss(w).backward()
torch.nn.utils.clip_grad_value_([w], clip_value=3.0)
f.save("clip_value_grad", w.grad)
w = w0.clone().requires_grad_(True)
opt = torch.optim.SGD([w], lr=0.1)
for _ in range(3):
    opt.zero_grad()
    loss(w).backward()
    torch.nn.utils.clip_grad_norm_([w], max_norm=1.5)
    opt.step()
f.save("clip_train", w)

# parameter groups
b0 = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64)
cb = torch.tensor([2.0, 0.5, 1.0], dtype=torch.float64)
f.save("b0", b0)
f.save("cb", cb)


def loss2(w, b):
    return loss(w) + (b * b * cb + b).sum()


O = torch.optim
group_configs = {
    "sgd": lambda w, b: O.SGD([{"params": [w], "momentum": 0.9, "weight_decay": 0.01},
                               {"params": [b], "lr": 0.2}], lr=0.05),
    "adamw": lambda w, b: O.AdamW([{"params": [w]},
                                   {"params": [b], "weight_decay": 0.0, "lr": 0.2, "betas": (0.8, 0.9)}],
                                  lr=0.05, weight_decay=0.1),
    "rmsprop": lambda w, b: O.RMSprop([{"params": [w], "centered": True, "momentum": 0.5},
                                       {"params": [b]}], lr=0.01),
    "adagrad": lambda w, b: O.Adagrad([{"params": [w], "lr_decay": 0.3}, {"params": [b], "lr": 0.3}], lr=0.1),
}
for name, make in group_configs.items():
    w = w0.clone().requires_grad_(True)
    b = b0.clone().requires_grad_(True)
    opt = make(w, b)
    for _ in range(3):
        opt.zero_grad()
        loss2(w, b).backward()
        opt.step()
    f.save(f"groups_{name}_w", w)
    f.save(f"groups_{name}_b", b)

w = w0.clone().requires_grad_(True)
b = b0.clone().requires_grad_(True)
opt = O.SGD([{"params": [w]}, {"params": [b], "lr": 0.02}], lr=0.1)
sched = S.CosineAnnealingLR(opt, T_max=6, eta_min=0.001)
lrs = []
for _ in range(6):
    lrs.append(opt.param_groups[1]["lr"])
    opt.zero_grad()
    loss2(w, b).backward()
    opt.step()
    sched.step()
f.save("groups_sched_w", w)
f.save("groups_sched_b", b)
f.save("groups_sched_lr1", torch.tensor(lrs, dtype=torch.float64))

# weight averaging: AveragedModel over a module holding w and b
from torch.optim.swa_utils import AveragedModel  # noqa: E402


class Pair(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(w0.clone())
        self.b = torch.nn.Parameter(b0.clone())


for name, avg_fn in {"ema": lambda a, p, n: 0.9 * a + (1 - 0.9) * p, "swa": None}.items():
    m = Pair()
    avg = AveragedModel(m, avg_fn=avg_fn) if avg_fn else AveragedModel(m)
    for t in range(5):
        with torch.no_grad():
            m.w.copy_(w0 * (1 + 0.3 * t) + math.sin(t))
            m.b.copy_(b0 * (1 - 0.2 * t))
        avg.update_parameters(m)
    f.save(f"avg_{name}_w", avg.module.w.detach())
    f.save(f"avg_{name}_b", avg.module.b.detach())

# ReduceLROnPlateau on a fixed metric sequence
metrics = [1.0, 0.9, 0.95, 0.91, 0.899, 0.7, 0.71, 0.72, 0.7, 0.69, 0.695, 0.3, 0.31, 0.32]
f.save("plateau_metrics", torch.tensor(metrics, dtype=torch.float64))
plateaus = {
    "min_rel": dict(mode="min", factor=0.5, patience=1, threshold=0.01, cooldown=1, min_lr=0.01),
    "max_abs": dict(mode="max", factor=0.3, patience=2, threshold=0.05, threshold_mode="abs", min_lr=0.0),
}
for name, kw in plateaus.items():
    w = w0.clone().requires_grad_(True)
    b = b0.clone().requires_grad_(True)
    opt = O.SGD([{"params": [w]}, {"params": [b], "lr": 0.05}], lr=0.1)
    sched = S.ReduceLROnPlateau(opt, **kw)
    lrs = []
    for m in metrics:
        sched.step(m)
        lrs.append([g["lr"] for g in opt.param_groups])
    f.save(f"plateau_{name}", torch.tensor(lrs, dtype=torch.float64))
f.done()
