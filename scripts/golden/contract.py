"""contract.py - golden data for the contractions and pools (tests/test_contract.c):
matmul, linear, conv2d, max_pool2d, avg_pool2d.

Each case saves its inputs as <case>_<input> and the result as <case>_out.
Where a case takes a non-contiguous view (transpose, strided slice, permute),
the C test rebuilds the same view from the saved contiguous input and the
expected value is PyTorch's result on that view; the comment names the view.

Run with /usr/bin/python3 (Debian's python3-torch).
"""
import torch
import torch.nn.functional as F

from common import Family

g = Family("contract")


def rnd(*shape, dtype=torch.float32):
    if dtype.is_floating_point:
        return torch.randn(*shape, dtype=dtype)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=dtype)
    return torch.randint(-5, 6, shape, dtype=dtype)


def case(name, fn, **inputs):
    for k, v in inputs.items():
        g.save(f"{name}_{k}", v)
    g.save(f"{name}_out", fn(**inputs))


# ---- matmul: every rank combination ---------------------------------------------------
mm = lambda a, b: torch.matmul(a, b)
case("mm_1_1", mm, a=rnd(5), b=rnd(5))
case("mm_1_2", mm, a=rnd(4), b=rnd(4, 3))
case("mm_2_1", mm, a=rnd(3, 4), b=rnd(4))
case("mm_2_2", mm, a=rnd(3, 4), b=rnd(4, 5))
case("mm_3_2", mm, a=rnd(2, 3, 4), b=rnd(4, 5))          # folds into one GEMM
case("mm_2_3", mm, a=rnd(3, 4), b=rnd(2, 4, 5))
case("mm_1_3", mm, a=rnd(4), b=rnd(2, 4, 5))
case("mm_3_1", mm, a=rnd(2, 3, 4), b=rnd(4))
case("mm_bcast", mm, a=rnd(2, 1, 3, 4), b=rnd(3, 4, 5))  # batch [2,1] x [3] -> [2,3]
case("mm_4_4", mm, a=rnd(2, 3, 2, 4), b=rnd(2, 3, 4, 6))
# transposed operands: C passes a.T, b.T (saved as their contiguous transposes)
a, b = rnd(4, 3), rnd(5, 4)
case("mm_tt", lambda a, b: a.T @ b.T, a=a, b=b)
a, b = rnd(2, 4, 3), rnd(2, 5, 4)
case("mm_btt", lambda a, b: a.transpose(1, 2) @ b.transpose(1, 2), a=a, b=b)
# strided slices (BLAS cannot read them: packed): a[:, ::2], b[::2, 1:]
a, b = rnd(3, 8), rnd(8, 6)
case("mm_slice", lambda a, b: a[:, ::2] @ b[::2, 1:], a=a, b=b)
# batch broadcast with a stride-0 expand: a[1,3,4] expanded to [2,3,4]
case("mm_expand", lambda a, b: a.expand(2, 3, 4) @ b, a=rnd(1, 3, 4), b=rnd(2, 4, 5))
case("mm_f64", mm, a=rnd(2, 3, 4, dtype=torch.float64), b=rnd(4, 5, dtype=torch.float64))
case("mm_i64", mm, a=rnd(2, 3, 4, dtype=torch.int64), b=rnd(2, 4, 5, dtype=torch.int64))
case("mm_i64_1_1", mm, a=rnd(6, dtype=torch.int64), b=rnd(6, dtype=torch.int64))
a, b = rnd(3, 5, dtype=torch.int32), rnd(4, 5, dtype=torch.int32)
case("mm_i32_t", lambda a, b: a @ b.T, a=a, b=b)         # transposed right operand: packed
case("mm_u8", mm, a=rnd(3, 7, dtype=torch.uint8), b=rnd(7, 4, dtype=torch.uint8))  # wraps
case("mm_k0", mm, a=rnd(3, 0), b=rnd(0, 4))              # zeros
case("mm_k0_i64", mm, a=rnd(3, 0, dtype=torch.int64), b=rnd(0, 4, dtype=torch.int64))
case("mm_m0", mm, a=rnd(2, 0, 4), b=rnd(4, 5))
case("mm_big", mm, a=rnd(33, 70), b=rnd(70, 65))
ext = torch.tensor([[1e30, -1e30, float("inf")], [float("nan"), 1.0, 2.0]])
case("mm_ext", mm, a=ext, b=torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]))

# ---- linear ------------------------------------------------------------------------------
lin = lambda x, w, b=None: F.linear(x, w, b)
case("lin_bias", lin, x=rnd(2, 3, 4), w=rnd(5, 4), b=rnd(5))
case("lin_nobias", lin, x=rnd(2, 3, 4), w=rnd(5, 4))
case("lin_x1", lin, x=rnd(4), w=rnd(5, 4), b=rnd(5))
case("lin_w1", lin, x=rnd(3, 4), w=rnd(4))
# PyTorch rejects a 1-D weight with a bias ("mat2 must be a matrix"); tjit takes
# it as matmul + bias, which is what F.linear does without the bias
case("lin_w1b", lambda x, w, b: x @ w + b, x=rnd(2, 3, 4), w=rnd(4), b=rnd(()))
case("lin_b2", lin, x=rnd(3, 4), w=rnd(5, 4), b=rnd(3, 1))   # bias broadcast [3,1]
# x.transpose(0, 1) (x saved [4,3]), w as wt.T (wt saved [4,5], i.e. w [in,out] storage)
x, wt = rnd(4, 3), rnd(4, 5)
case("lin_views", lambda x, wt, b: F.linear(x.T, wt.T, b), x=x, wt=wt, b=rnd(5))
# x.permute(1, 0, 2)[::2] of x [3,8,4]: leading dims that do not fold into one
# row stride (a loop of GEMMs over the batch)
x = rnd(3, 8, 4)
case("lin_nofold", lambda x, w, b: F.linear(x.permute(1, 0, 2)[::2], w, b),
     x=x, w=rnd(6, 4), b=rnd(6))
case("lin_i64", lin, x=rnd(2, 4, dtype=torch.int64), w=rnd(3, 4, dtype=torch.int64),
     b=rnd(3, dtype=torch.int64))
case("lin_k0", lin, x=rnd(2, 0), w=rnd(3, 0), b=rnd(3))
case("lin_f64", lin, x=rnd(3, 6, dtype=torch.float64), w=rnd(2, 6, dtype=torch.float64),
     b=rnd(2, dtype=torch.float64))

# ---- conv2d ------------------------------------------------------------------------------
def conv(stride=1, padding=0, dilation=1, groups=1):
    return lambda x, w, b=None: F.conv2d(x, w, b, stride, padding, dilation, groups)


case("conv_basic", conv(), x=rnd(2, 3, 7, 7), w=rnd(4, 3, 3, 3), b=rnd(4))
case("conv_nobias", conv(), x=rnd(2, 3, 7, 7), w=rnd(4, 3, 3, 3))
case("conv_spd", conv((2, 1), (1, 2), (2, 1)), x=rnd(2, 3, 9, 8), w=rnd(4, 3, 3, 2), b=rnd(4))
case("conv_groups", conv(1, 1, 1, 2), x=rnd(2, 4, 6, 6), w=rnd(6, 2, 3, 3), b=rnd(6))
case("conv_dw", conv(2, 1, 1, 4), x=rnd(2, 4, 6, 6), w=rnd(4, 1, 3, 3), b=rnd(4))
case("conv_dw_mult", conv(1, (1, 0), (1, 2), 4), x=rnd(2, 4, 6, 7), w=rnd(8, 1, 3, 3))
case("conv_1x1", conv(), x=rnd(2, 4, 5, 5), w=rnd(3, 4, 1, 1), b=rnd(3))
case("conv_1x1_s2", conv(2), x=rnd(2, 4, 5, 5), w=rnd(3, 4, 1, 1), b=rnd(3))
# input given as x.permute(0, 3, 1, 2) of NHWC storage x [2,5,5,4]
case("conv_nhwc", lambda x, w, b: F.conv2d(x.permute(0, 3, 1, 2), w, b, 1, 1),
     x=rnd(2, 5, 5, 4), w=rnd(3, 4, 3, 3), b=rnd(3))
case("conv_nhwc_1x1", lambda x, w: F.conv2d(x.permute(0, 3, 1, 2), w),
     x=rnd(2, 5, 5, 4), w=rnd(3, 4, 1, 1))
# weight given as wt.permute(3, 0, 1, 2) of wt [4,3,3,5] (non-contiguous weight: packed)
case("conv_wview", lambda x, wt: F.conv2d(x, wt.permute(3, 0, 1, 2), None, 1, 1),
     x=rnd(1, 4, 5, 6), wt=rnd(4, 3, 3, 5))
case("conv_3d", conv(1, 1), x=rnd(3, 6, 6), w=rnd(2, 3, 3, 3), b=rnd(2))
case("conv_tiles", conv(1, 1), x=rnd(1, 4, 24, 20), w=rnd(5, 4, 3, 3), b=rnd(5))
case("conv_f64", conv(1, 1, 1, 2), x=rnd(1, 4, 5, 5, dtype=torch.float64),
     w=rnd(2, 2, 3, 3, dtype=torch.float64), b=rnd(2, dtype=torch.float64))
case("conv_i64", conv(2, 1), x=rnd(2, 2, 5, 5, dtype=torch.int64),
     w=rnd(3, 2, 3, 3, dtype=torch.int64), b=rnd(3, dtype=torch.int64))
case("conv_dw_i64", conv(1, 1, 1, 2), x=rnd(1, 2, 4, 4, dtype=torch.int64),
     w=rnd(2, 1, 3, 3, dtype=torch.int64))
# no input channels: the sum over them is empty, so the result is the bias
# (PyTorch 1.13 returns a [2,0,2,2] tensor here instead; tjit keeps O channels)
# 16+ input channels per group, stride 1, at most 1/8 of the padded width
# dropped (Wp - OW <= Wp / 8): the shifted-GEMM path
case("conv_shift", conv(1, 1), x=rnd(2, 16, 5, 14), w=rnd(4, 16, 3, 3), b=rnd(4))
case("conv_shift_gd", conv(1, (2, 1), (2, 1), 2), x=rnd(1, 32, 7, 6), w=rnd(6, 16, 3, 2),
     b=rnd(6))
case("conv_shift_1x1p", conv(1, 1), x=rnd(1, 16, 4, 4), w=rnd(3, 16, 1, 1))
case("conv_shift_f64", conv(1, 1), x=rnd(1, 16, 5, 14, dtype=torch.float64),
     w=rnd(2, 16, 3, 3, dtype=torch.float64))
case("conv_shift_i64", conv(1, 1), x=rnd(1, 16, 4, 14, dtype=torch.int64),
     w=rnd(3, 16, 3, 3, dtype=torch.int64), b=rnd(3, dtype=torch.int64))
# input given as x.permute(0, 3, 1, 2) of NHWC storage x [1,5,14,16]
case("conv_shift_nhwc", lambda x, w: F.conv2d(x.permute(0, 3, 1, 2), w, None, 1, 1),
     x=rnd(1, 5, 14, 16), w=rnd(3, 16, 3, 3))
# the same with 7 columns: too much of the padded width is dropped, im2col instead
case("conv_noshift", conv(1, 1), x=rnd(1, 16, 5, 7), w=rnd(3, 16, 3, 3), b=rnd(3))
# small-integer dtypes (u8 wraps mod 256 like PyTorch): direct (grid and row
# paths), im2col and shifted
case("conv_dw_u8", conv(1, 1, 1, 2), x=rnd(1, 2, 4, 5, dtype=torch.uint8),
     w=rnd(2, 1, 3, 3, dtype=torch.uint8))
case("conv_dw_i32", conv(2, 1, 1, 2), x=rnd(1, 2, 5, 5, dtype=torch.int32),
     w=rnd(4, 1, 3, 3, dtype=torch.int32), b=rnd(4, dtype=torch.int32))
case("conv_u8", conv(2, 1), x=rnd(1, 3, 5, 5, dtype=torch.uint8),
     w=rnd(2, 3, 3, 3, dtype=torch.uint8), b=rnd(2, dtype=torch.uint8))
case("conv_shift_u8", conv(1, 1), x=rnd(1, 16, 3, 14, dtype=torch.uint8),
     w=rnd(2, 16, 3, 3, dtype=torch.uint8))
case("conv_c0", lambda x, w, b: b.reshape(1, 3, 1, 1).expand(2, 3, 2, 2),
     x=rnd(2, 0, 4, 4), w=rnd(3, 0, 3, 3), b=rnd(3))
case("conv_n0", conv(), x=rnd(0, 2, 4, 4), w=rnd(3, 2, 3, 3), b=rnd(3))

# ---- pools ---------------------------------------------------------------------------------
def maxp(k, s=None, p=0, d=1):
    return lambda x: F.max_pool2d(x, k, s, p, d)


def avgp(k, s=None, p=0, cip=True):
    return lambda x: F.avg_pool2d(x, k, s, p, count_include_pad=cip)


case("max_k2", maxp(2), x=rnd(2, 3, 7, 7))
case("max_k3s2p1", maxp(3, 2, 1), x=rnd(2, 3, 7, 7))
case("max_dil", maxp(3, 1, 1, 2), x=rnd(1, 2, 7, 8))
case("max_rect", maxp((2, 3), (1, 2), (1, 1), (2, 1)), x=rnd(1, 2, 6, 7))
case("max_3d", maxp(2, 1), x=rnd(3, 4, 5))
case("max_f64", maxp(3, 2, 1), x=rnd(1, 2, 6, 6, dtype=torch.float64))
xe = rnd(1, 1, 4, 4)
xe[0, 0, 0, 0], xe[0, 0, 1, 3], xe[0, 0, 3, 3] = float("nan"), float("inf"), float("-inf")
xe[0, 0, 2, :2] = float("-inf")
case("max_ext", maxp(2, 1), x=xe)
# input given as x.transpose(2, 3) of x [1,2,6,5]
case("max_tr", lambda x: F.max_pool2d(x.transpose(2, 3), 3, 2, 1), x=rnd(1, 2, 6, 5))
case("avg_k2", avgp(2), x=rnd(2, 3, 7, 7))
case("avg_pad_in", avgp(3, 2, 1, True), x=rnd(2, 3, 7, 7))
case("avg_pad_ex", avgp(3, 2, 1, False), x=rnd(2, 3, 7, 7))
case("avg_rect", avgp((3, 2), (2, 1), (1, 1), False), x=rnd(1, 2, 6, 5))
case("avg_rect_in", avgp((3, 2), (2, 1), (1, 1), True), x=rnd(1, 2, 6, 5))
case("avg_f64", avgp(2, 1, 1), x=rnd(1, 2, 4, 4, dtype=torch.float64))
case("avg_i64", avgp(3, 2, 1), x=rnd(1, 2, 5, 5, dtype=torch.int64) * 3)
case("avg_tr", lambda x: F.avg_pool2d(x.transpose(2, 3), 2, 1, 1, count_include_pad=False),
     x=rnd(1, 2, 6, 5))
case("pool_n0_max", maxp(2), x=rnd(0, 2, 4, 4))
case("pool_n0_avg", avgp(2), x=rnd(0, 2, 4, 4))

# ---- i8 and i16 (wrapping like PyTorch), from a stream of their own so that the
# cases above keep their data: GEMM, packed GEMM, direct, im2col and shifted convs
gi = torch.Generator().manual_seed(17)


def rndi(*shape, dtype):
    lim = 128 if dtype == torch.int8 else 400
    return torch.randint(-lim, lim, shape, dtype=dtype, generator=gi)


i8, i16 = torch.int8, torch.int16
case("mm_i8", mm, a=rndi(2, 3, 7, dtype=i8), b=rndi(7, 4, dtype=i8))
case("mm_i16_t", lambda a, b: a @ b.T, a=rndi(3, 5, dtype=i16), b=rndi(4, 5, dtype=i16))
case("conv_dw_i8", conv(1, 1, 1, 2), x=rndi(1, 2, 4, 5, dtype=i8), w=rndi(2, 1, 3, 3, dtype=i8))
case("conv_dw_i16", conv(2, 1, 1, 2), x=rndi(1, 2, 5, 5, dtype=i16),
     w=rndi(4, 1, 3, 3, dtype=i16), b=rndi(4, dtype=i16))
case("conv_i16", conv(2, 1), x=rndi(1, 3, 5, 5, dtype=i16), w=rndi(2, 3, 3, 3, dtype=i16),
     b=rndi(2, dtype=i16))
case("conv_shift_i8", conv(1, 1), x=rndi(1, 16, 3, 14, dtype=i8), w=rndi(2, 16, 3, 3, dtype=i8))

# ---- ceil_mode, return_indices, divisor_override --------------------------------------------
# A max case saves <case>_idx too: torch's indices (h * W + w in each input plane).
def maxi(k, s=None, p=0, d=1, ceil=False):
    return lambda x: F.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True)


def icase(name, fn, x):
    y, i = fn(x)
    g.save(f"{name}_x", x)
    g.save(f"{name}_out", y)
    g.save(f"{name}_idx", i)


def avgx(k, s=None, p=0, cip=True, ceil=False, div=None):
    return lambda x: F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=cip,
                                  divisor_override=div)


icase("maxc_k3s2", maxi(3, 2, 0, 1, True), rnd(2, 3, 6, 6))          # 3x3 (floor: 2x2)
icase("maxc_p1", maxi(3, 2, 1, 1, True), rnd(1, 2, 6, 7))            # 4x4
icase("maxc_drop", maxi(2, 2, 1, 1, True), rnd(1, 2, 5, 5))          # a 4th window would start in the padding: 3x3
icase("maxc_big", maxi(6, 2, 0, 1, True), rnd(1, 2, 5, 5))           # kernel over the input: 1x1
icase("maxc_dil", maxi(3, 2, 1, 2, True), rnd(1, 2, 7, 8))
icase("maxc_rect", maxi((2, 3), (3, 2), (1, 1), (1, 2), True), rnd(2, 2, 7, 6))
icase("maxc_3d", maxi(2, 2, 0, 1, True), rnd(3, 5, 5))
icase("maxc_f64", maxi(3, 2, 1, 1, True), rnd(1, 2, 6, 6, dtype=torch.float64))
icase("maxi_k3s2p1", maxi(3, 2, 1), rnd(2, 3, 7, 7))
icase("maxi_ties", maxi(3, 1, 1), torch.randint(-1, 2, (1, 2, 5, 6)).float())  # first maximum wins
xe = rnd(1, 1, 5, 5)
xe[0, 0, :3, :3] = float("-inf")                                     # all -inf: the first tap in the input
xe[0, 0, 3, 3], xe[0, 0, 3, 4], xe[0, 0, 4, 0] = float("nan"), float("nan"), float("inf")  # the last NaN
icase("maxi_ext", maxi(3, 2, 1, 1, True), xe)
# input given as x.transpose(2, 3) of x [1,2,7,5]: indices in the transposed plane
xt = rnd(1, 2, 7, 5)
y, i = F.max_pool2d(xt.transpose(2, 3), 3, 2, 1, ceil_mode=True, return_indices=True)
g.save("maxi_tr_x", xt)
g.save("maxi_tr_out", y)
g.save("maxi_tr_idx", i)
case("avgc_in", avgx(3, 2, 1, True, True), x=rnd(2, 3, 6, 6))
case("avgc_ex", avgx(3, 2, 1, False, True), x=rnd(2, 3, 6, 6))
case("avgc_drop", avgx(2, 2, 1, True, True), x=rnd(1, 2, 5, 5))
case("avgc_big", avgx(6, 2, 0, True, True), x=rnd(1, 2, 5, 5))
case("avgc_rect", avgx((3, 2), (2, 3), (1, 1), True, True), x=rnd(1, 2, 6, 7))
case("avgd_5", avgx(3, 2, 1, True, False, 5), x=rnd(2, 3, 7, 7))
case("avgd_neg", avgx(2, None, 0, True, False, -3), x=rnd(1, 2, 4, 6))
case("avgd_ceil", avgx(3, 2, 1, False, True, 4), x=rnd(1, 2, 6, 6))
case("avgd_f64", avgx(2, 1, 1, True, True, 7), x=rnd(1, 2, 4, 5, dtype=torch.float64))
case("avgd_i64", avgx(3, 2, 1, True, True, 4), x=rnd(1, 2, 5, 5, dtype=torch.int64) * 3)
case("avgc_i64", avgx(3, 2, 1, False, True), x=rnd(1, 2, 6, 5, dtype=torch.int64) * 3)
case("avgd_i64_neg", avgx(2, 2, 0, True, True, -1), x=rnd(1, 2, 5, 5, dtype=torch.int64) * 7)
# 300 output columns: the index kernel's blocks of 256 columns meet inside a row
icase("maxi_wide", maxi((2, 3), (1, 2), (0, 1), 1, True), torch.randint(-2, 3, (1, 1, 3, 600)).float())

# ---- the direct f32 conv (runtime/k_conv_direct.c): one case per shape class, from a
# stream of their own; weights scaled by 1/sqrt(fan_in) as in a network. The test runs
# each case with the direct kernel and with the GEMM paths (TJIT_CONV=direct, gemm).
gd = torch.Generator().manual_seed(23)


def rndd(*shape, fan_in=1):
    return torch.randn(*shape, generator=gd) / fan_in ** 0.5


def dcase(name, fn, x, w, b=True):
    fan = w[1] * w[2] * w[3]
    inputs = dict(x=rndd(*x), w=rndd(*w, fan_in=fan))
    if b:
        inputs["b"] = rndd(w[0])
    case(name, fn, **inputs)


S = torch.Size
dcase("convd_3x3", conv(1, 1), S([2, 16, 12, 12]), S([16, 16, 3, 3]))
dcase("convd_3x3_s2", conv(2, 1), S([2, 16, 13, 13]), S([8, 16, 3, 3]))
dcase("convd_5x5", conv(1, 2), S([1, 8, 16, 16]), S([8, 8, 5, 5]), b=False)
dcase("convd_7x7_s2", conv(2, 3), S([1, 3, 23, 23]), S([8, 3, 7, 7]))
dcase("convd_1x1", conv(), S([2, 32, 12, 12]), S([18, 32, 1, 1]))
dcase("convd_1x1_s2", conv(2), S([1, 16, 14, 14]), S([8, 16, 1, 1]), b=False)
dcase("convd_dw", conv(1, 1, 1, 32), S([2, 32, 14, 14]), S([32, 1, 3, 3]))
dcase("convd_dw_s2", conv(2, 1, 1, 16), S([1, 16, 15, 15]), S([32, 1, 3, 3]))
dcase("convd_groups", conv(1, 1, 1, 4), S([1, 16, 10, 10]), S([24, 4, 3, 3]))
dcase("convd_dil", conv(1, 2, 2), S([1, 8, 14, 14]), S([6, 8, 3, 3]))
dcase("convd_small", conv(1, 1), S([2, 32, 7, 7]), S([32, 32, 3, 3]))
dcase("convd_rect", conv((2, 1), (0, 2), (1, 3)), S([1, 4, 11, 19]), S([5, 4, 2, 3]))

g.done()
