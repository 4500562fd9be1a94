"""linalg.py - golden data of ops.def's "linalg via LAPACK" rows
(tests/test_linalg.c): torch.linalg's inv, solve, det, slogdet, cholesky and
qr on well-conditioned random matrices (a random matrix plus n on the
diagonal; for cholesky M M^T + n I), batched, f32 and f64, and the gradients
of inv, det, slogdet, solve, cholesky and qr (f64, seed r fixed: of
sum(y * r)). Run with /usr/bin/python3 (Debian's python3-torch)."""
import torch

from common import Family

f = Family("linalg", seed=11)


def well(*shape, dt):
    n = shape[-1]
    return (torch.randn(*shape, dtype=torch.float64) + n * torch.eye(n, dtype=torch.float64)).to(dt)


def spd(*shape, dt):
    m = torch.randn(*shape, dtype=torch.float64)
    n = shape[-1]
    return (m @ m.transpose(-1, -2) + n * torch.eye(n, dtype=torch.float64)).to(dt)


for name, dt in (("f32", torch.float32), ("f64", torch.float64)):
    a = well(2, 3, 4, 4, dt=dt)            # batched [2,3,4,4]
    f.save(f"{name}.a", a)
    f.save(f"{name}.inv", torch.linalg.inv(a))
    f.save(f"{name}.det", torch.linalg.det(a))
    # a sign of -1 among them: swap two rows of one matrix
    a2 = a.clone()
    a2[0, 1] = a2[0, 1][[1, 0, 2, 3]]
    f.save(f"{name}.a2", a2)
    s, l = torch.linalg.slogdet(a2)
    f.save(f"{name}.sign", s)
    f.save(f"{name}.logabsdet", l)
    b = torch.randn(2, 3, 4, 2, dtype=dt)
    f.save(f"{name}.b", b)
    f.save(f"{name}.solve", torch.linalg.solve(a, b))
    bv = torch.randn(2, 3, 4, dtype=dt)     # a vector right-hand side (a's shape without its last dim)
    f.save(f"{name}.bv", bv)
    f.save(f"{name}.solve_v", torch.linalg.solve(a, bv))
    bb = torch.randn(5, 1, 1, 4, 3, dtype=dt)  # batch dims broadcast: [5,1,1] with a's [2,3]
    f.save(f"{name}.bb", bb)
    f.save(f"{name}.solve_b", torch.linalg.solve(a, bb))
    p = spd(3, 5, 5, dt=dt)
    f.save(f"{name}.spd", p)
    f.save(f"{name}.chol", torch.linalg.cholesky(p))
    f.save(f"{name}.chol_u", torch.linalg.cholesky(p, upper=True))
    for tag, shape in (("tall", (2, 5, 3)), ("wide", (2, 3, 5)), ("sq", (4, 4))):
        x = torch.randn(*shape, dtype=dt)
        q, r = torch.linalg.qr(x)
        f.save(f"{name}.qr_{tag}", x)
        f.save(f"{name}.qr_{tag}.q", q)
        f.save(f"{name}.qr_{tag}.r", r)

# gradients (f64): of L = sum(y * r) for a fixed r
def grad(name, fn, *xs):
    xs = [x.clone().requires_grad_(True) for x in xs]
    y = fn(*xs)
    r = torch.randn(y.shape, dtype=torch.float64)
    (y * r).sum().backward()
    for k, x in enumerate(xs):
        f.save(f"grad.{name}.x{k}", x.detach())
        f.save(f"grad.{name}.g{k}", x.grad)
    f.save(f"grad.{name}.r", r)


grad("inv", torch.linalg.inv, well(2, 3, 3, dt=torch.float64))
grad("det", torch.linalg.det, well(2, 3, 3, dt=torch.float64))
grad("slogdet", lambda x: torch.linalg.slogdet(x)[1], well(2, 3, 3, dt=torch.float64))
grad("solve", torch.linalg.solve, well(2, 3, 3, dt=torch.float64), torch.randn(2, 3, 2, dtype=torch.float64))
grad("solve_v", torch.linalg.solve, well(2, 3, 3, dt=torch.float64), torch.randn(3, dtype=torch.float64))
grad("cholesky", torch.linalg.cholesky, spd(2, 4, 4, dt=torch.float64))
grad("cholesky_u", lambda x: torch.linalg.cholesky(x, upper=True), spd(2, 4, 4, dt=torch.float64))
grad("qr_q", lambda x: torch.linalg.qr(x)[0], torch.randn(2, 5, 3, dtype=torch.float64))
grad("qr_r", lambda x: torch.linalg.qr(x)[1], torch.randn(2, 5, 3, dtype=torch.float64))
grad("qr_q_wide", lambda x: torch.linalg.qr(x)[0], torch.randn(2, 3, 5, dtype=torch.float64))
grad("qr_r_wide", lambda x: torch.linalg.qr(x)[1], torch.randn(2, 3, 5, dtype=torch.float64))
f.done()
