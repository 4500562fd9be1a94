"""move.py - golden data for views, data movement and creation
(tests/test_views.c, tests/test_move.c, tests/test_create.c).

Views: x = arange(60) as f32 [3,4,5]; each case saves the values of the view
and "<case>_st", an i64 array of its strides followed by its storage offset.
Movement: random inputs (a, b, c, bl, li, q, sp, e and index tensors) and the
results of torch.cat/stack/split/gather/index_select/pad/flip/contiguous, some
on non-contiguous views (q.transpose(1, 2)) that the C tests rebuild.
Creation: torch.arange for every dtype.

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import torch
import torch.nn.functional as F

from common import Family

g = Family("move")
MAX = 2**62


def save(name, t):
    g.save(name, t)


def view_case(name, v):
    save(name, v.contiguous())
    g.save(name + "_st", torch.tensor(list(v.stride()) + [v.storage_offset()], dtype=torch.int64))


# ---- views ---------------------------------------------------------------------
x = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
views = {
    "r_12_5": x.reshape(12, 5),
    "r_neg1": x.reshape(-1, 10),
    "r_ones": x.reshape(3, 1, 4, 5, 1),
    "r_perm_view": x.permute(2, 0, 1).reshape(5, 12),
    "r_perm_copy": x.permute(2, 1, 0).reshape(5, 12),
    "r_tr_split": x.transpose(0, 1).reshape(2, 2, 3, 5),
    "r_tr_copy": x.transpose(0, 1).reshape(4, 15),
    "r_slice_view": x[:, ::2].reshape(6, 5),
    "r_slice_copy": x[:, ::2].reshape(3, 10),
    "r_expand_view": x[:, :1, :1].expand(3, 4, 2).reshape(3, 2, 2, 2),
    "r_expand_copy": x[:, :1, :1].expand(3, 4, 2).reshape(24),
    "r_mid1": x[:, 1:2, :].reshape(3, 5),
    "r_split_step": x[:, :, ::2].reshape(3, 2, 2, 3),
    "r_expand_split": x[:1].expand(4, 4, 5).reshape(2, 2, 20),
    "r_scalar": torch.tensor(7.0).reshape(1, 1),
    "r_to_scalar": x[1:2, 2:3, 3:4].reshape(()),
    "r_empty": torch.zeros(0, 3).reshape(3, 0),
    "p_201": x.permute(2, 0, 1),
    "t_02": x.transpose(0, 2),
    "s_chain": x[1:, ::2, -3:],
    "s_clamp": x[:, -100:100:3],
    "s_empty": x[:, 3:1],
    "s_step_big": x[..., 1:5:10],
    "e_lead": x[:, :1, :].expand(2, 3, 4, 5),
    "e_neg1": x[:, :1, :].expand(-1, 4, -1),
    "e_new1": x.expand(1, 3, 4, 5),
    "e_new1_bcast": x[0, 0, :].expand(1, 1, 5),
    "sq_all": x[:, :1, :1].squeeze(),
    "sq_dim": x[:, :1, :1].squeeze(1),
    "sq_not1": x.squeeze(0),
    "sq_two": x[:, :1, :1].squeeze(2).squeeze(1),
    "u_0": x.unsqueeze(0),
    "u_expanded": x[:, :1].expand(3, 4, 5).unsqueeze(1),
    "u_last_nc": x[:, ::2].unsqueeze(-1),
    "u_mid_nc": x.permute(2, 0, 1).unsqueeze(2),
    "f_12": x.flatten(1, 2),
    "f_all_copy": x.permute(1, 0, 2).flatten(),
    "f_scalar": torch.tensor(7.0).flatten(),
}
for name, v in views.items():
    view_case(name, v)

# ---- data movement ----------------------------------------------------------------
a = torch.randn(3, 4, 5)
b = torch.randn(3, 2, 5)
c = torch.randint(-5, 5, (3, 4, 5), dtype=torch.int32)
bl = torch.rand(3, 4, 5) > 0.5
li = torch.randint(-100, 100, (2, 4, 5), dtype=torch.int64)
q = torch.randn(3, 5, 4)          # the C tests use q.transpose(1, 2): [3,4,5], not contiguous
e = torch.zeros(0, dtype=torch.float64)
sp = a.clone()
sp[0, 0, :] = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e38, 1e-45])
sp[1, 1, :] = torch.tensor([-0.0, 0.0, -1e-38, -3e38, float("nan")])
qt = q.transpose(1, 2)
for name, t in dict(a=a, b=b, c=c, bl=bl, li=li, q=q, sp=sp).items():
    g.save(name, t)

g.save("cat_d1", torch.cat([a, b], 1))
g.save("cat_promo", torch.cat([a, c], 0))
g.save("cat_bool_i64", torch.cat([bl, li], 0))
g.save("cat_nc", torch.cat([a, qt], -1))
g.save("cat_empty", torch.cat([e, a, e], 0))
g.save("cat_sp", torch.cat([sp, a], 2))
g.save("stack_0", torch.stack([a, qt], 0))
g.save("stack_m1", torch.stack([a, a], -1))
for k, p in enumerate(a.split(3, -1)):
    g.save(f"split_{k}", p)
for k, p in enumerate(a.split([1, 3, 0], 1)):     # split_with_sizes, an empty piece
    g.save(f"splits_{k}", p)
for k, p in enumerate(a.transpose(1, 2).split([2, 0, 3], 1)):
    g.save(f"splits_nc_{k}", p)

gi0 = torch.randint(0, 3, (2, 4, 5))
gi1 = torch.randint(0, 4, (3, 2, 3))
gi2 = torch.randint(0, 5, (3, 4, 7))
git = torch.randint(0, 5, (3, 7, 4))     # used transposed: [3,4,7], not contiguous
for name, t in dict(gi0=gi0, gi1=gi1, gi2=gi2, git=git).items():
    g.save(name, t)
g.save("g_0", torch.gather(a, 0, gi0))
g.save("g_1", torch.gather(a, 1, gi1))
g.save("g_m1", torch.gather(a, -1, gi2))
g.save("g_nc_x", torch.gather(qt, 2, gi2))
g.save("g_nc_index", torch.gather(a, 2, git.transpose(1, 2)))
g.save("g_int", torch.gather(c, 1, gi1))
g.save("g_sp", torch.gather(sp, 2, gi2))

g.save("is_0", torch.index_select(a, 0, torch.tensor([2, 0, 2, 1])))
g.save("is_1", torch.index_select(a, 1, torch.tensor([3, 3, 0], dtype=torch.int32)))
g.save("is_m1_nc", torch.index_select(qt, -1, torch.tensor([4, 0])))
g.save("is_bool", torch.index_select(bl, 2, torch.tensor([1, 4, 1])))

g.save("pad_1", F.pad(a, (1, 2)))
g.save("pad_2", F.pad(a, (1, 0, 2, 3), value=-1.5))
g.save("pad_neg", F.pad(a, (-1, 2, 0, -2)))
g.save("pad_3", F.pad(a, (1, 1, 1, 1, 1, 1), value=7))
g.save("pad_int", F.pad(c, (2, 1), value=3))
g.save("pad_nc", F.pad(qt, (0, 0, 1, -1), value=2))
g.save("pad_crop_all", F.pad(a, (-5, 0)))

g.save("flip_0", a.flip(0))
g.save("flip_12", a.flip(1, 2))
g.save("flip_all", a.flip(0, 1, 2))
g.save("flip_nc", qt.flip(2))
g.save("flip_bool", bl.flip(1))
g.save("flip_sp", sp.flip(-1))

g.save("copy_nc", qt.contiguous())
g.save("copy_exp", a[:, :1].expand(3, 4, 5).contiguous())

# ---- creation ----------------------------------------------------------------------
g.save("ar_f32", torch.arange(0, 1, 0.1, dtype=torch.float32))
g.save("ar_f64", torch.arange(5, -3, -0.7, dtype=torch.float64))
g.save("ar_i64", torch.arange(0, 5, 1.5, dtype=torch.int64))
g.save("ar_i32", torch.arange(0, 5, 1.5, dtype=torch.int32))
g.save("ar_i64_neg", torch.arange(-3, 10.5, 4, dtype=torch.int64))
g.save("ar_u8", torch.arange(250, 0, -7, dtype=torch.uint8))
g.save("ar_i8", torch.arange(-100, 100, 13, dtype=torch.int8))
g.save("ar_i16", torch.arange(-30000, 30000, 1234.5, dtype=torch.int16))
g.save("ar_f32_long", torch.arange(-1000, 1000, 0.37, dtype=torch.float32))
g.save("ar_empty", torch.arange(2, 2, 1, dtype=torch.float32))
g.done()
