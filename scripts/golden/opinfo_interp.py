"""OpInfo samples of ops.def's "interpolate, embedding_bag, einsum,
scatter_reduce" block (issue 11; einsum has no row: scripts/golden/einsum.py),
registered into opinfo.py's tables by register(); run through opinfo.py
(/usr/bin/python3 scripts/golden/opinfo.py)."""
import math

import torch
import torch.nn.functional as F

MODE = {"sum": "sum", "mean": "mean", "amax": "max"}   # embedding_bag: tjit's word -> torch's


def register(o):
    t, T, sample, DT = o.t, o.T, o.sample, o.DT

    def ix(vals, v="c"):
        return T(vals, "i64", v)

    def scales(k, *s):
        """torch's scale_factor for the last k dims from the scale_d/h/w attributes."""
        got = [x for x in s[3 - k:]]
        return None if all(x == 0 for x in got) else got

    def nearest_ref(x, size, sd, sh, sw):
        k = len(size)
        sc = scales(k, sd, sh, sw)
        if sc is not None:   # the scale sets the output size: check it is size
            want = [math.floor(x.shape[2 + j] * sc[j]) for j in range(k)]
            if want != list(size):
                raise RuntimeError("size and scale disagree")
            return F.interpolate(x, scale_factor=sc, mode="nearest")
        return F.interpolate(x, size=list(size), mode="nearest")

    def linear_ref(mode):
        def ref(x, size, corners, sh, sw):
            sc = None if sh == 0 and sw == 0 else [sh, sw]
            if sc is not None and not corners:
                return F.interpolate(x, scale_factor=sc, mode=mode, align_corners=False)
            return F.interpolate(x, size=list(size), mode=mode, align_corners=bool(corners))
        return ref

    def bag_ref(w, i, off, psw, mode, last, pad):
        return F.embedding_bag(i, w, off, mode=MODE[mode], per_sample_weights=psw,
                               include_last_offset=bool(last), padding_idx=pad[0] if pad else None)

    o.REF.update({
        "scatter_reduce": lambda x, i, s, d, r, inc: torch.scatter_reduce(x, d, i, s, r,
                                                                          include_self=bool(inc)),
        "upsample_nearest": nearest_ref,
        "upsample_bilinear2d": linear_ref("bilinear"),
        "upsample_bicubic2d": linear_ref("bicubic"),
        "embedding_bag": bag_ref,
    })
    o.DEFAULTS.update(scatter_reduce={"include_self": 1},
                      upsample_nearest={"scale_d": 0.0, "scale_h": 0.0, "scale_w": 0.0},
                      upsample_bilinear2d={"align_corners": 0, "scale_h": 0.0, "scale_w": 0.0},
                      upsample_bicubic2d={"align_corners": 0, "scale_h": 0.0, "scale_w": 0.0},
                      embedding_bag={"include_last_offset": 0, "padding_idx": []})
    # sums in f64 and rounded once, against PyTorch's f32 sums; bilinear weights
    o.TOL.update({op: (1e-5, 1e-12, 1e-6, 1e-5) for op in (
        "scatter_reduce", "upsample_bilinear2d", "embedding_bag")})
    # PyTorch's f32 bicubic (float weights that cancel) is off by up to 3.4e-6 of
    # the f64 result on the ramp in [-1, 3]; tjit's weights and sums are f64
    o.TOL["upsample_bicubic2d"] = (1e-5, 1e-12, 1e-5, 1e-5)

    @o.samples_for("scatter_reduce")
    def scatter_reduce(op):
        for r in ("sum", "prod", "mean", "amax", "amin"):
            for inc in (1, 0):
                sample(op, ["plain", "args"], [t([3, 4]), ix([[0, 2, 1, 0], [0, 0, 2, 0]]),
                                               t([2, 4])], (0, r, inc))
                sample(op, ["args"], [t([3, 4]), ix([[3, 1], [0, 3], [1, 1]]), t([3, 3])], (1, r, inc))
            for dt in ("f64", "i64", "i32"):
                sample(op, ["dtype"], [t([2, 3], dt), ix([[2, 0], [2, 2]]), t([2, 2], dt)],
                       (1, r, 1))
            sample(op, ["dtype"], [t([2, 3], "i64"), ix([[2, 0], [2, 2]]), t([2, 2], "i64", lo=-9)],
                   (1, r, 0))
            sample(op, ["extreme"], [T([[math.inf, 1.0], [math.nan, 0.0]]), ix([[1, 0], [1, 0]]),
                                     T([[-math.inf, 5e-324], [2.0, math.nan]])], (0, r, 1))
        sample(op, ["args"], [t([3, 4]), ix([[3]]), t([1, 1])], (0, "sum", 1))
        sample(op, ["args"], [t([3, 4]), ix([[0]]), t([1, 1], "f64")], (1, "amax", 1))
        sample(op, ["args"], [t([3, 4]), T([[0]], "i32"), t([1, 1])], (1, "sum", 1))
        sample(op, ["args"], [t([3, 4]), ix([[0]]), t([1, 1])], (2, "mean", 1))
        sample(op, ["empty"], [t([3, 4]), T(torch.zeros(0, 4), "i64"), t([0, 4])], (0, "amax", 0))
        sample(op, ["0d"], [t([]), ix(0), t([])], (0, "prod", 1))
        sample(op, ["transposed"], [t([4, 3], v="t"), ix([[2, 0, 2]]), t([1, 3])], (0, "mean", 0))
        sample(op, ["noncontig"], [t([3, 8], v="s"), ix([[1, 0], [1, 2]], "t"), t([2, 2], v="t")],
               (1, "amin", 1))

    @o.samples_for("upsample_nearest")
    def nearest(op):
        sample(op, ["plain"], [t([1, 2, 3, 4])], ([6, 8],))
        for shape, size in (([1, 2, 3, 4], [5, 7]), ([2, 1, 5, 3], [2, 3]), ([1, 1, 4, 4], [4, 9]),
                            ([1, 1, 7], [3]), ([1, 1, 3], [10]), ([1, 2, 2, 3, 2], [3, 5, 4])):
            sample(op, ["args"], [t(shape)], (size,))
        # scale factors: the coordinates follow 1 / scale, not in / out
        for shape, sc in (([1, 1, 5, 5], [1.7, 2.3]), ([1, 1, 3, 4], [2.5, 0.6]),
                          ([1, 1, 5, 4], [2.1, 2.0]), ([1, 1, 3, 3], [1.2, 1.4])):
            size = [math.floor(shape[2 + j] * sc[j]) for j in range(2)]
            sample(op, ["args"], [t(shape)], (size, 0.0, *sc))
        sample(op, ["args"], [t([1, 1, 6])], ([13], 0.0, 0.0, 2.2))
        # integer factors: views (expand + reshape, or a strided slice) where the indices allow
        for shape, size in (([1, 1, 2, 3], [6, 9]), ([1, 2, 6, 8], [3, 2]), ([1, 1, 4], [12]),
                            ([1, 1, 2, 2, 2], [4, 2, 6]), ([1, 1, 9, 4], [3, 8])):
            sample(op, ["args"], [t(shape)], (size,))
        sample(op, ["args"], [t([1, 1, 2, 2])], ([6, 6], 0.0, 3.0, 3.0))
        sample(op, ["args"], [t([1, 1, 4, 6])], ([2, 3], 0.0, 0.5, 0.5))
        sample(op, ["args"], [t([1, 1, 3, 5])], ([9, 5], 0.0, 3.0, 1.0))
        sample(op, ["args"], [t([1, 2, 3, 4])], ([0, 4],))
        sample(op, ["args"], [t([2, 3, 4])], ([6, 8],))
        sample(op, ["args"], [t([1, 1, 2, 2, 2, 2])], ([3, 3, 3, 3],))
        for dt in ("f64", "u8"):
            sample(op, ["dtype"], [t([1, 2, 3, 3], dt)], ([5, 4],))
        sample(op, ["dtype"], [t([1, 2, 3, 3], "i64")], ([5, 4],))
        sample(op, ["extreme"], [T(torch.tensor(o.EXTREME[:24]).reshape(1, 2, 3, 4))], ([5, 7],))
        sample(op, ["empty"], [t([0, 2, 3, 4])], ([6, 8],))
        sample(op, ["empty"], [t([1, 2, 0, 4])], ([3, 8],))
        sample(op, ["noncontig"], [t([2, 3, 4, 8], v="s")], ([5, 3],))
        sample(op, ["transposed"], [t([2, 3, 5, 4], v="t")], ([7, 9],))
        sample(op, ["large"], [T(o.ramp([1, 2, 40, 50]), "f32", is_ramp=True)], ([97, 33],))

    @o.samples_for("upsample_bilinear2d", "upsample_bicubic2d")
    def bilinear(op):
        for c in (0, 1):
            sample(op, ["plain", "args"], [t([1, 2, 3, 4])], ([6, 8], c))
            for shape, size in (([1, 2, 3, 4], [5, 7]), ([2, 1, 5, 3], [2, 3]), ([1, 1, 4, 4], [1, 9]),
                                ([1, 1, 1, 5], [3, 2]), ([1, 1, 4, 4], [4, 6])):
                sample(op, ["args"], [t(shape)], (size, c))
            sample(op, ["dtype"], [t([1, 2, 3, 3], "f64")], ([5, 4], c))
        for shape, sc in (([1, 1, 5, 5], [1.7, 2.3]), ([1, 1, 3, 4], [2.5, 0.6]),
                          ([1, 1, 3, 3], [1.2, 1.4]), ([1, 1, 4, 3], [0.5, 3.0])):
            size = [math.floor(shape[2 + j] * sc[j]) for j in range(2)]
            sample(op, ["args"], [t(shape)], (size, 0, *sc))
        sample(op, ["args"], [t([1, 1, 3])], ([6, 8], 0))
        sample(op, ["args"], [t([1, 2, 3, 4])], ([6, 0], 0))
        sample(op, ["dtype"], [t([1, 2, 3, 3], "i64")], ([5, 4], 0))
        sample(op, ["extreme"], [T(torch.tensor(o.EXTREME[:24]).reshape(1, 2, 3, 4))], ([5, 7], 0))
        sample(op, ["empty"], [t([0, 2, 3, 4])], ([6, 8], 0))
        sample(op, ["noncontig"], [t([2, 3, 4, 8], v="s")], ([5, 3], 1))
        sample(op, ["transposed"], [t([2, 3, 5, 4], v="t")], ([7, 9], 0))
        sample(op, ["large"], [T(o.ramp([1, 2, 40, 50]), "f32", is_ramp=True)], ([97, 33], 0))

    @o.samples_for("embedding_bag")
    def embedding_bag(op):
        w = [10, 3]
        for m in ("sum", "mean", "amax"):
            sample(op, ["plain", "args"], [t(w), ix([1, 2, 4, 5, 4, 3, 2, 9]), ix([0, 4]), None],
                   (m,))
            sample(op, ["args"], [t(w), ix([[1, 2, 4], [4, 3, 9]]), None, None], (m,))
            sample(op, ["args"], [t(w), ix([1, 2, 4, 5, 4, 3]), ix([0, 2, 2, 5]), None], (m,))
            sample(op, ["args"], [t(w), ix([1, 2, 4, 5, 4, 3]), ix([0, 2, 2, 6]), None], (m, 1))
            sample(op, ["args"], [t(w), ix([1, 1, 1]), ix([0]), None], (m,))
            sample(op, ["args"], [t(w), ix([1, 2]), T([0, 1], "i32"), None], (m,))
            sample(op, ["dtype"], [t(w, "f64"), ix([1, 2, 4, 5]), ix([0, 1]), None], (m,))
            sample(op, ["dtype"], [t(w), T([1, 2, 4, 5], "i32"), T([0, 1], "i32"), None], (m,))
            sample(op, ["empty"], [t(w), T(torch.zeros(0), "i64"), ix([0, 0]), None], (m,))
            sample(op, ["transposed"], [t([3, 10], v="t"), ix([[0, 9], [5, 5]]), None, None], (m,))
        sample(op, ["args"], [t(w), ix([1, 2, 4, 5]), ix([0, 3]), t([4])], ("sum",))
        sample(op, ["args"], [t(w), ix([[1, 2], [4, 5]]), None, t([2, 2])], ("sum",))
        sample(op, ["args"], [t(w), ix([1, 2, 4, 5]), ix([0, 3]), t([4])], ("mean",))
        sample(op, ["args"], [t(w), ix([1, 2, 4, 5]), None, None], ("sum",))
        sample(op, ["args"], [t(w), ix([[1, 2], [4, 5]]), ix([0, 1]), None], ("sum",))
        sample(op, ["args"], [t(w), ix([1, 2, 4, 5]), ix([0, 3]), t([3])], ("sum",))
        sample(op, ["args"], [t(w), ix([1, 2, 4, 5]), ix([0, 3]), t([4], "f64")], ("sum",))
        sample(op, ["args"], [t([10]), ix([1, 2]), ix([0]), None], ("sum",))
        sample(op, ["args"], [t(w), ix([1, 12]), ix([0]), None], ("sum",))
        sample(op, ["dtype"], [t(w, "i64"), ix([1, 2]), ix([0]), None], ("sum",))
        sample(op, ["dtype"], [t(w), t([2]), ix([0]), None], ("sum",))
        sample(op, ["extreme"], [T(torch.tensor(o.EXTREME[:24]).reshape(8, 3)), ix([0, 1, 2, 3, 4, 5, 6, 7]),
                                 ix([0, 2, 5]), None], ("amax",))
        sample(op, ["noncontig"], [t([10, 6], v="s"), ix([1, 2, 4, 5]), ix([0, 3]), None], ("mean",))
        # padding_idx (the row's is a row of weight: tj_embedding_bag_ex adds V to a
        # negative one); not with include_last_offset, where PyTorch 1.13 corrupts its heap
        for m in ("sum", "mean", "amax"):
            sample(op, ["args"], [t(w), ix([1, 2, 4, 5, 2, 3, 2, 9]), ix([0, 4, 5]), None], (m, 0, [2]))
            sample(op, ["args"], [t(w), ix([[2, 2, 2], [4, 3, 9]]), None, None], (m, 0, [2]))
        sample(op, ["args"], [t(w), ix([1, 2, 4, 5]), ix([0, 3]), t([4])], ("sum", 0, [4]))
        sample(op, ["args"], [t(w), ix([1, 2]), ix([0]), None], ("sum", 0, [10]))
