"""loss.py - golden data for cross_entropy with torch's arguments
(tests/test_loss.c): logits [C], [N,C] and [N,C,d...], class-index and
class-probability targets, reduction none/sum/mean, class weights,
ignore_index (in range, out of range, every target ignored), label
smoothing, f32 and f64, strided logits, mixed-dtype probabilities, empty
batches and extreme logits.

Every case is one line of cases.txt:
    <name> <x> <view> <target> <weight> <reduction> <ignore_index> <label_smoothing>
<x>, <target>, <weight> name .npy files here (weight "-": none); <view> is
applied to x as tests/util.c (tu_view) does; the expected result is
<name>.want.npy (dtype and shape included). The C test runs each case eagerly
and compiled.

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import torch
import torch.nn.functional as F

from common import Family, view

fam = Family("loss")
lines = []
saved = {}
INF, NAN = float("inf"), float("nan")


def save(name, t):
    saved[name] = t
    fam.save(name, t)
    return name


def case(name, x, v, t, w=None, reduction="mean", ignore=-100, ls=0.0):
    xv = view(saved[x], v)
    tv = saved[t].long() if saved[t].dtype == torch.int32 else saved[t]   # tjit takes i32 indices too
    want = F.cross_entropy(xv, tv, weight=saved[w] if w else None, reduction=reduction,
                           ignore_index=ignore, label_smoothing=ls)
    fam.save(name + ".want", want)
    lines.append(f"{name} {x} {v} {t} {w or '-'} {reduction} {ignore} {ls!r}")


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=torch.float64).to(dtype)


def probs(*shape, dim=1, dtype=torch.float32):
    return torch.softmax(randn(*shape, dtype=torch.float64), dim).to(dtype)


REDS = ("mean", "sum", "none")

# [N, C] with class indices: every reduction, weights, ignore_index, smoothing
save("x2", randn(6, 5))
save("t2", torch.tensor([0, 4, 1, 1, 3, 2]))
save("t2_i32", torch.tensor([0, 4, 1, 1, 3, 2], dtype=torch.int32))
save("w5", randn(5).abs() + 0.25)
for r in REDS:
    for w in (None, "w5"):
        for ig in (-100, 1):
            for ls in (0.0, 0.1):
                case(f"idx2_{r}_{'w' if w else 'nw'}_ig{ig}_ls{ls}", "x2", "c", "t2", w, r, ig, ls)
case("idx2_i32", "x2", "c", "t2_i32", "w5", "mean", 4, 0.05)
case("idx2_ignore_out_of_range", "x2", "c", "t2", None, "mean", 7)
case("idx2_ignore_negative_in_target", "x2", "c", save("t2_neg", torch.tensor([0, -1, 1, -1, 3, 2])),
     "w5", "mean", -1, 0.2)
save("t2_all_ignored", torch.full((6,), -100))
for r in REDS:
    case(f"idx2_all_ignored_{r}", "x2", "c", "t2_all_ignored", None, r)
    case(f"idx2_all_ignored_ls_{r}", "x2", "c", "t2_all_ignored", "w5", r, -100, 0.3)
case("idx2_smoothing_1", "x2", "c", "t2", "w5", "mean", -100, 1.0)
case("idx2_smoothing_negative", "x2", "c", "t2", None, "mean", -100, -0.5)
# strided logits: x stored [C, N], the case transposes it
save("x2t", randn(5, 6))
case("idx2_transposed", "x2t", "t", "t2", "w5", "sum", 3, 0.1)

# [C] with a 0-dim target
save("x1", randn(5))
save("t0", torch.tensor(3))
for r in REDS:
    case(f"idx1_{r}", "x1", "c", "t0", "w5", r, -100, 0.1)
case("idx1_ignored", "x1", "c", "t0", None, "mean", 3)

# [N, C, d...]
save("x3", randn(2, 5, 3))
save("t3", torch.tensor([[0, 4, 2], [1, 1, -100]]))
save("x4", randn(2, 5, 3, 2))
save("t4", torch.randint(0, 5, (2, 3, 2)))
for r in REDS:
    case(f"idx3_{r}", "x3", "c", "t3", None, r)
    case(f"idx3_w_ls_{r}", "x3", "c", "t3", "w5", r, -100, 0.2)
    case(f"idx4_{r}", "x4", "c", "t4", "w5", r, 2, 0.1)
save("x3p", randn(3, 5, 2))   # permuted: [2, 5, 3] seen through 'p'
save("t3p", torch.tensor([[0, 4, 2], [1, 1, 3]]))
case("idx3_permuted", "x3p", "p", "t3p", "w5", "none", 4, 0.1)

# class probabilities
save("q2", probs(6, 5))
save("q3", probs(2, 5, 3))
save("q1", probs(5, dim=0))
for r in REDS:
    for w in (None, "w5"):
        for ls in (0.0, 0.25):
            case(f"prob2_{r}_{'w' if w else 'nw'}_ls{ls}", "x2", "c", "q2", w, r, -100, ls)
    case(f"prob3_{r}", "x3", "c", "q3", "w5", r, -100, 0.1)
    case(f"prob1_{r}", "x1", "c", "q1", None, r)
case("prob2_ignore_negative", "x2", "c", "q2", None, "mean", -1)
case("prob2_f64_target", "x2", "c", save("q2_f64", probs(6, 5, dtype=torch.float64)), None, "mean")
case("prob2_f64_weight", "x2", "c", "q2", save("w5_f64", (randn(5).abs() + 0.25).double()), "sum")
case("prob2_unnormalized", "x2", "c", save("q2_raw", randn(6, 5)), "w5", "none", -100, 0.1)

# f64
save("x2_f64", randn(6, 5, dtype=torch.float64))
save("w5_f64b", (randn(5, dtype=torch.float64).abs() + 0.25))
for r in REDS:
    case(f"f64_idx_{r}", "x2_f64", "c", "t2", "w5_f64b", r, 1, 0.1)
    case(f"f64_prob_{r}", "x2_f64", "c", "q2_f64", "w5_f64b", r, -100, 0.1)

# empty batch and extreme logits
save("x_empty", randn(0, 5))
save("t_empty", torch.zeros(0, dtype=torch.int64))
save("q_empty", randn(0, 5))
for r in REDS:
    case(f"empty_idx_{r}", "x_empty", "c", "t_empty", "w5", r, -100, 0.1)
    case(f"empty_prob_{r}", "x_empty", "c", "q_empty", None, r)
save("x_ext", torch.tensor([[INF, 0.0, 1.0], [NAN, 1.0, 2.0], [1e30, -1e30, 0.0],
                            [-INF, 0.0, 0.0], [80.0, 80.0, -80.0]]))
save("t_ext", torch.tensor([0, 1, 1, 0, 2]))
for r in REDS:
    case(f"extreme_{r}", "x_ext", "c", "t_ext", None, r)

with open(fam.dir + "/cases.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
fam.done()
