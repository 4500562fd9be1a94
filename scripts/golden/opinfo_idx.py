"""OpInfo samples of the indexing, scan and shape rows of ir/ops.def (its
"indexing, scans and shapes" section), registered into opinfo.py's tables by
register(); run through opinfo.py (/usr/bin/python3 scripts/golden/opinfo.py)."""
import math

import torch


def register(o):
    t, T, sample, each_layout, DT = o.t, o.T, o.sample, o.each_layout, o.DT

    def dtypes_of(op, shape, attrs, rest=()):
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t(shape, dt), *rest], attrs)

    def ex(shape):
        return T(torch.tensor(o.EXTREME[:math.prod(shape)]).reshape(shape))

    def reg(*ops):
        return o.samples_for(*ops)

    o.REF.update({
        "narrow": torch.narrow,
        "movedim": lambda x, s, d: torch.movedim(x, tuple(s), tuple(d)),
        "t": torch.t,
        "unflatten": lambda x, d, s: torch.unflatten(x, d, tuple(s)),
        "expand_as": lambda x, y: x.expand_as(y),
        "view_as": lambda x, y: x.reshape(y.shape),
        "tril": torch.tril, "triu": torch.triu,
        "masked_fill": lambda x, m, v: x.masked_fill(m, v),
    })

    @reg("narrow")
    def narrow(op):
        for a in ((1, 0, 2), (1, 1, 2), (0, -1, 1), (1, -3, 3), (1, 3, 0), (1, 2, 2), (-1, 0, 3),
                  (2, 0, 1), (1, -4, 1), (1, 0, -1)):
            sample(op, ["plain", "args"], [t([2, 3])], a)
        dtypes_of(op, [2, 3], (1, 1, 2))
        sample(op, ["empty", "args"], [t([3, 0])], (1, 0, 0))
        sample(op, ["0d", "args"], [t([])], (0, 0, 1))
        each_layout(op, t, (1, 1, 2))
        sample(op, ["extreme"], [T(o.EXTREME)], (0, 3, 20))

    @reg("movedim")
    def movedim(op):
        for s, d in (([0], [1]), ([1], [0]), ([0], [-1]), ([0, 1], [2, 0]), ([2], [0]), ([0, 0], [1, 2]),
                     ([0], [3]), ([0, 1], [1])):
            sample(op, ["plain", "args"], [t([2, 3, 4])], (s, d))
        dtypes_of(op, [2, 3], ([0], [1]))
        sample(op, ["empty", "args"], [t([3, 0, 2])], ([0], [2]))
        sample(op, ["0d", "args"], [t([])], ([0], [0]))
        each_layout(op, t, ([0], [1]))
        sample(op, ["extreme"], [ex([2, 13])], ([1], [0]))

    @reg("t")
    def t_(op):
        for shape in ([2, 3], [3], [], [2, 3, 4], [1, 5]):
            sample(op, ["plain" if len(shape) == 2 else "args"], [t(shape)])
        dtypes_of(op, [2, 3], ())
        sample(op, ["empty"], [t([3, 0])])
        each_layout(op, t, ())
        sample(op, ["extreme"], [ex([2, 13])])

    @reg("unflatten")
    def unflatten(op):
        for d, s in ((1, [2, 3]), (0, [2, 1]), (-1, [3, 2]), (1, [-1, 2]), (1, [6]), (1, [4, 2]),
                     (2, [6]), (1, [-1, -1]), (1, [])):
            sample(op, ["plain", "args"], [t([2, 6])], (d, s))
        dtypes_of(op, [2, 6], (1, [3, 2]))
        sample(op, ["empty", "args"], [t([3, 0])], (1, [0, 5]))
        sample(op, ["0d", "args"], [t([])], (0, [1]))
        for v, tag, base in (("s", "noncontig", [2, 12]), ("t", "transposed", [6, 2]),
                             ("e", "expanded", [2, 6])):
            sample(op, [tag], [t(base, "f32", v)], (1, [2, 3]))
        sample(op, ["extreme"], [T(o.EXTREME)], (0, [2, 13]))

    @reg("expand_as", "view_as")
    def as_other(op):
        pairs = (([2, 1], [2, 3]), ([3], [2, 3]), ([1], [4]), ([2, 3], [3, 2]), ([2, 3], [6]),
                 ([2, 3], [2, 3]), ([2, 3], [4, 3]), ([], [2]))
        for a, b in pairs:
            sample(op, ["plain", "args"], [t(a), t(b)])
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([1, 3], dt), t([2, 3], "f32")])
                sample(op, ["dtype"], [t([3, 1], "f32"), t([3, 1], dt)])
        sample(op, ["empty"], [t([1, 0]), t([3, 0])])
        sample(op, ["0d"], [t([]), t([])])
        for v, tag, base in (("s", "noncontig", [1, 6]), ("t", "transposed", [3, 1]),
                             ("e", "expanded", [1, 3])):
            sample(op, [tag], [t(base, "f32", v), t([2, 3])])
        sample(op, ["extreme"], [T(o.EXTREME), t([1, 26])])

    @reg("tril", "triu")
    def triangle(op):
        for k in (0, 1, -1, 2, -3, 5):
            sample(op, ["plain", "args"], [t([3, 4])], (k,))
        sample(op, ["args"], [t([2, 3, 2])], (0,))
        sample(op, ["args"], [t([3])], (0,))
        sample(op, ["args"], [t([])], (0,))
        dtypes_of(op, [3, 3], (0,))
        sample(op, ["empty"], [t([3, 0])], (0,))
        sample(op, ["empty"], [t([2, 0, 3])], (1,))
        each_layout(op, t, (0,))
        sample(op, ["extreme"], [ex([2, 13])], (1,))

    @reg("masked_fill")
    def masked_fill(op):
        m = T([[1, 0, 1], [0, 0, 1]], "bool")
        for v in (0.0, -1.5, math.inf, math.nan):
            sample(op, ["plain", "args"], [t([2, 3]), m], (v,))
        sample(op, ["bcast"], [t([2, 3]), T([1, 0, 1], "bool")], (7.0,))
        sample(op, ["bcast"], [t([2, 3]), T([[1], [0]], "bool")], (7.0,))
        sample(op, ["bcast", "args"], [t([3]), m], (7.0,))
        sample(op, ["args"], [t([2, 3]), T([[1, 0, 1], [0, 0, 1]], "i64")], (1.0,))
        sample(op, ["0d"], [t([2, 3]), T(1, "bool")], (2.0,))
        sample(op, ["0d"], [t([]), T(1, "bool")], (2.0,))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([2, 3], dt), m], (1.0 if dt == "bool" else 3.0,))
        sample(op, ["dtype", "args"], [t([2, 3], "i32"), m], (2.5,))
        sample(op, ["empty"], [t([3, 0]), T(torch.zeros(3, 0), "bool")], (1.0,))
        each_layout(op, t, (4.0,), (m,))
        sample(op, ["transposed"], [t([2, 3]), T([[1, 0], [0, 0], [1, 1]], "bool", "t")], (4.0,))
        sample(op, ["extreme"], [T(o.EXTREME), T([k % 2 for k in range(26)], "bool")], (-0.0,))


def register2(o):
    t, T, sample, each_layout, DT = o.t, o.T, o.sample, o.each_layout, o.DT

    def reg(*ops):
        return o.samples_for(*ops)

    def dtypes_of(op, shape, attrs, rest=()):
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t(shape, dt), *rest], attrs)

    def ix(vals):
        return T(vals, "i64")

    def diag_embed_ref(x, off, d1, d2):
        return torch.diag_embed(x, off, d1, d2)

    o.REF.update({
        "diagonal": torch.diagonal, "diag_embed": diag_embed_ref,
        "one_hot": lambda x, c: torch.nn.functional.one_hot(x, c),
        "full_like": lambda x, v: torch.full_like(x, v),
        "repeat": lambda x, r: x.repeat(*r),
        "tile": lambda x, d: torch.tile(x, tuple(d)),
        "repeat_interleave": lambda x, r, d: torch.repeat_interleave(x, r, d),
        "roll": lambda x, s, d: torch.roll(x, tuple(s), tuple(d)),
        "take": torch.take,
        "take_along_dim": lambda x, i, d: torch.take_along_dim(x, i, d),
        "unfold": lambda x, d, s, st: x.unfold(d, s, st),
        "index_fill": lambda x, i, d, v: x.index_fill(d, i, v),
        "eye": lambda n, m, dt: torch.eye(n, m if m != -1 else n, dtype=o.DT[dt]),
        "linspace": lambda a, b, s, dt: torch.linspace(a, b, s, dtype=o.DT[dt]),
        "logspace": lambda a, b, s, base, dt: torch.logspace(a, b, s, base, dtype=o.DT[dt]),
    })

    @reg("diagonal", "diag_embed")
    def diags(op):
        shape = [3, 4] if op == "diagonal" else [3]
        for a in ((0, 0, 1), (1, 0, 1), (-1, 0, 1), (2, -1, -2), (5, 0, 1), (-3, 0, 1), (0, 1, 1),
                  (0, 0, 3)):
            sample(op, ["plain", "args"], [t(shape)], a)
        big = [2, 3, 4] if op == "diagonal" else [2, 3]
        for a in ((0, 0, 2), (1, 2, 0), (-1, -1, 1), (0, -3, -1)):
            sample(op, ["args"], [t(big)], a)
        dtypes_of(op, shape, (0, 0, 1))
        sample(op, ["empty"], [t([3, 0] if op == "diagonal" else [0])], (0, 0, 1))
        sample(op, ["0d"], [t([])], (0, 0, 1))
        each_layout(op, t, (1, 0, 1))
        sample(op, ["extreme"], [T(torch.tensor(o.EXTREME).reshape(2, 13))], (1, 0, 1))

    @reg("one_hot")
    def one_hot(op):
        for c in (3, 5, 0):
            sample(op, ["plain", "args"], [ix([0, 2, 1, 2])], (c,))
        sample(op, ["args"], [ix([[0, 1], [2, 2]])], (3,))
        sample(op, ["args"], [ix([0, 1])], (-1,))
        sample(op, ["0d"], [ix(1)], (2,))
        sample(op, ["empty"], [T(torch.zeros(0), "i64")], (3,))
        sample(op, ["dtype"], [T([0, 1], "i32")], (2,))
        sample(op, ["transposed"], [T([[0, 1], [1, 1], [2, 0]], "i64", "t")], (3,))

    @reg("full_like")
    def full_like(op):
        for v in (2.5, -1.0, math.inf, math.nan, 0.0):
            sample(op, ["plain", "args"], [t([2, 3])], (v,))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([2, 3], dt)], (1.0 if dt == "bool" else 7.0,))
        sample(op, ["dtype", "args"], [t([2], "i32")], (2.5,))
        sample(op, ["empty"], [t([3, 0])], (1.0,))
        sample(op, ["0d"], [t([])], (3.0,))
        each_layout(op, t, (4.0,))

    @reg("repeat", "tile")
    def repeat(op):
        for r in ([1, 1], [2, 1], [1, 3], [2, 2], [2, 1, 2], [0, 2], [3], [], [1, -1]):
            sample(op, ["plain", "args"], [t([2, 3])], (r,))
        sample(op, ["args"], [t([3])], ([2, 2],))
        dtypes_of(op, [2, 3], ([2, 2],))
        sample(op, ["empty"], [t([3, 0])], ([2, 2],))
        sample(op, ["0d"], [t([])], ([2, 3],))
        each_layout(op, t, ([2, 3],))
        sample(op, ["extreme"], [T(o.EXTREME)], ([2],))

    @reg("repeat_interleave")
    def repeat_interleave(op):
        for r, d in ((2, 0), (2, 1), (3, -1), (0, 1), (1, 0), (2, 2), (-1, 0)):
            sample(op, ["plain", "args"], [t([2, 3])], (r, d))
        dtypes_of(op, [2, 3], (2, 1))
        sample(op, ["empty"], [t([3, 0])], (2, 1))
        sample(op, ["0d"], [t([])], (3, 0))
        each_layout(op, t, (2, 0))
        sample(op, ["extreme"], [T(o.EXTREME)], (2, 0))

    @reg("roll")
    def roll(op):
        for s, d in (([1], [0]), ([1], [1]), ([-1], [1]), ([4], [1]), ([1, 2], [0, 1]), ([2], []),
                     ([-7], []), ([1], [2]), ([1, 1], [1]), ([0], [0])):
            sample(op, ["plain", "args"], [t([2, 3])], (s, d))
        dtypes_of(op, [2, 3], ([1], [1]))
        sample(op, ["empty"], [t([3, 0])], ([1], [1]))
        sample(op, ["0d"], [t([])], ([1], []))
        each_layout(op, t, ([1, 1], [0, 1]))
        sample(op, ["extreme"], [T(o.EXTREME)], ([5], [0]))

    @reg("take")
    def take(op):
        sample(op, ["plain", "args"], [t([2, 3]), ix([0, 5, 2])])
        sample(op, ["args"], [t([2, 3]), ix([[1, -1], [-6, 3]])])
        sample(op, ["args"], [t([2, 3]), ix(4)])
        sample(op, ["args"], [t([2, 3]), ix([6])])
        sample(op, ["args"], [t([2, 3]), T([1, 2], "i32")])
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([2, 3], dt), ix([5, 0])])
        sample(op, ["empty"], [t([2, 3]), T(torch.zeros(0), "i64")])
        sample(op, ["empty"], [t([3, 0]), ix([0])])
        sample(op, ["0d"], [t([]), ix([0, 0])])
        each_layout(op, t, (), (ix([0, 4, 5]),))
        sample(op, ["extreme"], [T(o.EXTREME), ix([25, 0, 12])])

    @reg("take_along_dim")
    def take_along_dim(op):
        sample(op, ["plain", "args"], [t([2, 3]), ix([[0, 2], [1, 1]])], (1,))
        sample(op, ["bcast", "args"], [t([2, 3]), ix([[2, 0]])], (1,))
        sample(op, ["bcast", "args"], [t([1, 3]), ix([[2], [0]])], (1,))
        sample(op, ["args"], [t([2, 3]), ix([[1, 0, 1]])], (0,))
        sample(op, ["args"], [t([2, 3]), ix([[3]])], (1,))
        sample(op, ["args"], [t([2, 3]), ix([0, 1])], (1,))
        sample(op, ["args"], [t([2, 3]), ix([[0]])], (2,))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([2, 3], dt), ix([[2], [0]])], (1,))
        sample(op, ["empty"], [t([2, 3]), T(torch.zeros(2, 0), "i64")], (1,))
        sample(op, ["0d"], [t([]), ix(0)], (0,))
        each_layout(op, t, (1,), (ix([[0, 2], [1, 1]]),))
        sample(op, ["extreme"], [T(torch.tensor(o.EXTREME).reshape(2, 13)), ix([[12], [0]])], (1,))

    @reg("unfold")
    def unfold(op):
        for a in ((1, 2, 1), (1, 3, 1), (1, 1, 2), (0, 2, 1), (1, 2, 2), (-1, 0, 1), (1, 4, 1),
                  (1, 2, 0), (2, 1, 1)):
            sample(op, ["plain", "args"], [t([2, 3])], a)
        sample(op, ["args"], [t([7])], (0, 3, 2))
        dtypes_of(op, [2, 3], (1, 2, 1))
        sample(op, ["empty"], [t([0, 3])], (1, 2, 1))
        each_layout(op, t, (1, 2, 1))
        sample(op, ["extreme"], [T(o.EXTREME)], (0, 4, 3))

    @reg("index_fill")
    def index_fill(op):
        for i, d, v in (([0], 1, 2.5), ([2, 0], 1, -1.0), ([1], 0, math.nan), ([-1], 1, 3.0),
                        ([0, 0], 1, math.inf)):
            sample(op, ["plain", "args"], [t([2, 3]), ix(i)], (d, v))
        sample(op, ["args"], [t([2, 3]), ix(1)], (1, 7.0))
        sample(op, ["args"], [t([2, 3]), ix([1])], (2, 7.0))
        sample(op, ["args"], [t([2, 3]), T([1], "i32")], (1, 7.0))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([2, 3], dt), ix([1])], (1, 1.0 if dt == "bool" else 5.0))
        sample(op, ["empty"], [t([3, 0]), ix([1])], (0, 1.0))
        sample(op, ["empty"], [t([2, 3]), T(torch.zeros(0), "i64")], (1, 1.0))
        sample(op, ["0d"], [t([]), ix([0])], (0, 2.0))
        each_layout(op, t, (1, 9.0), (ix([0, 2]),))

    @reg("eye")
    def eye(op):
        for n, m in ((3, -1), (2, 4), (4, 2), (0, -1), (1, 1), (3, 0), (-1, 2)):
            sample(op, ["plain", "args"], [], (n, m, "f32"))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [], (3, 2, dt))

    @reg("linspace", "logspace")
    def spaces(op):
        extra = (2.0,) if op == "logspace" else ()
        for a, b, s in ((0, 1, 5), (-3, 7, 11), (1, 0, 4), (2, 2, 3), (0, 1, 1), (0, 1, 0), (0.5, 3.25, 7),
                        (0, 1, -1), (-1, 1, 100)):
            sample(op, ["plain", "args"], [], (a, b, s, *extra, "f32"))
        for dt in ("f64", "i64", "i32"):
            sample(op, ["dtype"], [], (0, 10, 6, *extra, dt))
        if op == "logspace":
            for base in (10.0, 0.5, math.e):
                sample(op, ["args"], [], (-2, 2, 5, base, "f32"))
        sample(op, ["extreme"], [], (0, math.inf, 3, *extra, "f64"))


def register3(o):
    """Scans and sorts."""
    t, T, sample, each_layout, DT = o.t, o.T, o.sample, o.each_layout, o.DT

    def reg(*ops):
        return o.samples_for(*ops)

    def ties(dt="f32"):
        return T([[1, 3, 3, 0, 3], [2, 2, 1, 2, -1]], dt)

    o.REF.update({
        "cumsum": torch.cumsum, "cumprod": torch.cumprod, "logcumsumexp": torch.logcumsumexp,
        "cummax": lambda x, d: torch.cummax(x, d)[0], "cummin": lambda x, d: torch.cummin(x, d)[0],
        "cummax_indices": lambda x, d: torch.cummax(x, d)[1],
        "cummin_indices": lambda x, d: torch.cummin(x, d)[1],
        "argsort": lambda x, d, desc: torch.sort(x, stable=True, dim=d, descending=bool(desc))[1],
        "sort": lambda x, d, desc: torch.sort(x, stable=True, dim=d, descending=bool(desc))[0],
        "topk": lambda x, k, d, largest: torch.topk(x, k, d, bool(largest))[0],
        "kthvalue": lambda x, k, d, keep: torch.kthvalue(x, k, d, bool(keep))[0],
        "median": lambda x, d, keep: torch.median(x, d, bool(keep))[0],
    })

    @reg("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "cummax_indices",
         "cummin_indices")
    def scans(op):
        for d in (0, 1, -1, 2):
            sample(op, ["plain", "args"], [t([2, 3], lo=-2, hi=2)], (d,))
        sample(op, ["args"], [ties()], (1,))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([2, 3], dt, lo=-2, hi=2)], (1,))
        sample(op, ["empty"], [t([3, 0])], (1,))
        sample(op, ["empty"], [t([0, 3])], (1,))
        sample(op, ["0d"], [t([])], (0,))
        each_layout(op, t, (1,))
        e = o.EXTREME if op not in ("cumprod",) else [v for v in o.EXTREME if abs(v) < 1e30]
        sample(op, ["extreme"], [T(e)], (0,))
        sample(op, ["extreme"], [T([1.0, math.nan, 2.0, math.nan, 5.0])], (0,))
        sample(op, ["extreme", "dtype"], [T([3, -2**40, 2**40, 7], "i64")], (0,))
        sample(op, ["large"], [t([3, 700], lo=-1, hi=1)], (1,))

    @reg("argsort", "sort")
    def sorts(op):
        for d, desc in ((1, 0), (1, 1), (0, 0), (0, 1), (-1, 0), (2, 0)):
            sample(op, ["plain", "args"], [ties()], (d, desc))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [ties(dt) if dt not in ("u8", "bool") else t([2, 5], dt)], (1, 0))
                sample(op, ["dtype"], [t([2, 5], dt)], (1, 1))
        sample(op, ["empty"], [t([3, 0])], (1, 0))
        sample(op, ["0d"], [t([])], (0, 0))
        each_layout(op, t, (1, 0))
        for desc in (0, 1):
            sample(op, ["extreme"], [T(o.EXTREME)], (0, desc))
        sample(op, ["extreme", "dtype"], [T([3, -2**40, 2**52, 2**52 + 1, 7], "i64")], (0, 1))
        sample(op, ["large"], [t([3, 500], lo=-4, hi=4)], (1, 0))

    @reg("topk")
    def topk(op):
        x = T([[1, 5, 3, 0, 4], [2, 9, 1, 7, -1]])
        for k, d, largest in ((2, 1, 1), (2, 1, 0), (1, 0, 1), (5, -1, 1), (0, 1, 1), (6, 1, 1),
                              (2, 2, 1)):
            sample(op, ["plain", "args"], [x], (k, d, largest))
        for dt in DT:
            if dt not in ("f32", "bool", "u8"):
                sample(op, ["dtype"], [T([[1, 5, 3, 0, 4], [2, 9, 1, 7, -1]], dt)], (3, 1, 1))
        sample(op, ["empty"], [t([3, 0])], (0, 1, 1))
        sample(op, ["0d"], [t([])], (1, 0, 1))
        sample(op, ["extreme"], [T(o.EXTREME[:20] + [math.nan])], (4, 0, 1))
        sample(op, ["transposed"], [T([[1, 5], [3, 0], [4, 2]], "f32", "t")], (2, 1, 1))

    @reg("kthvalue")
    def kthvalue(op):
        x = T([[1, 5, 3, 0, 4], [2, 9, 1, 7, -1]])
        for k, d, keep in ((1, 1, 0), (3, 1, 0), (5, 1, 1), (2, 0, 0), (0, 1, 0), (6, 1, 0), (1, 2, 0)):
            sample(op, ["plain", "args"], [x], (k, d, keep))
        for dt in ("f64", "i64", "i32", "i16", "i8"):
            sample(op, ["dtype"], [T([[1, 5, 3, 0, 4], [2, 9, 1, 7, -1]], dt)], (2, 1, 0))
        sample(op, ["0d"], [t([])], (1, 0, 0))
        sample(op, ["extreme"], [T([v for v in o.EXTREME if v == v])], (7, 0, 0))
        sample(op, ["transposed"], [T([[1, 5], [3, 0], [4, 2]], "f32", "t")], (2, 1, 1))

    @reg("median")
    def median(op):
        for shape in ([2, 5], [2, 4]):
            x = T(torch.tensor([[1, 5, 3, 0, 4], [2, 9, 1, 7, -1]])[:, :shape[1]].tolist())
            for d, keep in ((1, 0), (1, 1), (0, 0), (-1, 0), (2, 0)):
                sample(op, ["plain", "args"], [x], (d, keep))
        for dt in ("f64", "i64", "i32"):
            sample(op, ["dtype"], [T([[1, 5, 3, 0, 4], [2, 9, 1, 7, -1]], dt)], (1, 0))
        sample(op, ["empty"], [t([3, 0])], (1, 0))
        sample(op, ["0d"], [t([])], (0, 0))
        sample(op, ["extreme"], [T([[1.0, math.nan, 2.0], [3.0, 1.0, 2.0]])], (1, 0))
        sample(op, ["transposed"], [T([[1, 5], [3, 0], [4, 2]], "f32", "t")], (1, 0))


def register4(o):
    """Scatters."""
    t, T, sample, DT = o.t, o.T, o.sample, o.DT

    def reg(*ops):
        return o.samples_for(*ops)

    def ix(vals, v="c"):
        return T(vals, "i64", v)

    def index_put_ref(x, v, *rest):
        *idx, acc = rest
        return x.index_put(tuple(idx), v, bool(acc))

    o.REF.update({
        "scatter": lambda x, i, s, d: torch.scatter(x, d, i, s),
        "scatter_add": lambda x, i, s, d: torch.scatter_add(x, d, i, s),
        "index_add": lambda x, i, s, d, alpha: x.index_add(d, i, s, alpha=alpha),
        "index_copy": lambda x, i, s, d: x.index_copy(d, i, s),
        "index_put": index_put_ref,
    })

    @reg("scatter", "scatter_add")
    def scatters(op):
        dup = op == "scatter_add"   # duplicates only where the order cannot matter
        sample(op, ["plain", "args"], [t([3, 4]), ix([[0, 2, 1, 0]]), t([1, 4])], (0,))
        sample(op, ["plain", "args"], [t([3, 4]), ix([[3, 1], [0, 2], [1, 3]]), t([3, 2])], (1,))
        sample(op, ["args"], [t([3, 4]), ix([[0, 1], [2, 0]]), t([3, 3])], (0,))
        if dup:
            sample(op, ["args"], [t([3, 4]), ix([[0, 0, 1, 0], [0, 2, 2, 0]]), t([2, 4])], (0,))
        sample(op, ["args"], [t([3, 4]), ix([[3]]), t([1, 1])], (0,))
        sample(op, ["args"], [t([3, 4]), ix([[-1]]), t([1, 1])], (0,))
        sample(op, ["args"], [t([3, 4]), ix([[0, 1]]), t([1, 1])], (1,))
        sample(op, ["args"], [t([3, 4]), ix([[0]]), t([1, 1], "f64")], (1,))
        sample(op, ["args"], [t([3, 4]), T([[0]], "i32"), t([1, 1])], (1,))
        sample(op, ["args"], [t([3, 4]), ix([[0]]), t([1, 1])], (2,))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([2, 3], dt), ix([[2, 0], [1, 1]]), t([2, 2], dt)], (1,))
        sample(op, ["empty"], [t([3, 4]), T(torch.zeros(0, 4), "i64"), t([0, 4])], (0,))
        sample(op, ["0d"], [t([]), ix(0), t([])], (0,))
        sample(op, ["transposed"], [t([4, 3], v="t"), ix([[2, 0, 1]]), t([1, 3])], (0,))
        sample(op, ["transposed"], [t([3, 4]), ix([[1, 0], [0, 2]], "t"), t([2, 2], v="t")], (1,))
        sample(op, ["extreme"], [T([[math.inf, 1.0], [math.nan, 0.0]]), ix([[1, 0]]),
                                 T([[-math.inf, 5e-324]])], (0,))

    @reg("index_add", "index_copy")
    def index_ops(op):
        extra = (1.0,) if op == "index_add" else ()
        add = op == "index_add"
        sample(op, ["plain", "args"], [t([3, 4]), ix([2, 0]), t([2, 4])], (0, *extra))
        sample(op, ["plain", "args"], [t([3, 4]), ix([3, 1, 0]), t([3, 3])], (1, *extra))
        sample(op, ["args"], [t([3, 4]), ix([-1]), t([1, 4])], (0, *extra))
        sample(op, ["args"], [t([3, 4]), ix([3]), t([1, 4])], (0, *extra))
        sample(op, ["args"], [t([3, 4]), ix([1]), t([2, 4])], (0, *extra))
        sample(op, ["args"], [t([3, 4]), ix([1]), t([1, 4])], (2, *extra))
        sample(op, ["args"], [t([4]), ix(2), t([])], (0, *extra))
        if add:
            sample(op, ["args"], [t([3, 4]), ix([0, 0, 2]), t([3, 4])], (0, 1.0))
            for alpha in (2.0, -0.5):
                sample(op, ["args"], [t([3, 4]), ix([2, 0]), t([2, 4])], (0, alpha))
            sample(op, ["args", "dtype"], [t([3, 4], "i64"), ix([2, 0]), t([2, 4], "i64")], (0, 3.0))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([2, 3], dt), ix([1]), t([2, 1], dt)], (1, *extra))
        sample(op, ["empty"], [t([3, 4]), T(torch.zeros(0), "i64"), t([0, 4])], (0, *extra))
        sample(op, ["0d"], [t([]), ix([0]), t([])], (0, *extra))
        sample(op, ["transposed"], [t([4, 3], v="t"), ix([2, 0]), t([3, 2], v="t")], (1, *extra))

    @reg("index_put")
    def index_put(op):
        for acc in (0, 1):
            sample(op, ["plain", "args"], [t([3, 4]), t([2]), ix([0, 2]), ix([1, 3])], (acc,))
            sample(op, ["args"], [t([3, 4]), t([2, 4]), ix([2, 0])], (acc,))
            sample(op, ["bcast", "args"], [t([3, 4]), t([]), ix([[0], [2]]), ix([1, 3])], (acc,))
            sample(op, ["args"], [t([3, 4]), t([2]), ix([-1, 0]), ix([1, -4])], (acc,))
        sample(op, ["args"], [t([3, 4]), t([3]), ix([0, 0, 1]), ix([1, 1, 2])], (1,))
        sample(op, ["args"], [t([3, 4]), t([1]), ix([3]), ix([0])], (0,))
        sample(op, ["args"], [t([3, 4]), t([1]), T([1], "i32"), ix([0])], (0,))
        sample(op, ["args"], [t([2, 3, 4]), t([2, 4]), ix([0, 1]), ix([2, 0])], (0,))
        for dt in DT:
            if dt != "f32":
                sample(op, ["dtype"], [t([2, 3], dt), t([2], dt), ix([0, 1]), ix([2, 0])], (0,))
        sample(op, ["empty"], [t([3, 4]), t([0]), T(torch.zeros(0), "i64"), T(torch.zeros(0), "i64")], (0,))
        sample(op, ["transposed"], [t([4, 3], v="t"), t([2]), ix([0, 2]), ix([1, 3])], (1,))


def register5(o):
    """searchsorted, bucketize."""
    t, T, sample = o.t, o.T, o.sample

    o.REF.update({
        "searchsorted": lambda s, v, right: torch.searchsorted(s, v, right=bool(right)),
        "bucketize": lambda v, bd, right: torch.bucketize(v, bd, right=bool(right)),
    })

    @o.samples_for("searchsorted", "bucketize")
    def search(op):
        seq = T([-1.0, 0.0, 0.0, 2.5, 4.0])
        vals = T([[-2.0, 0.0, 1.0], [2.5, 4.0, 9.0]])

        def s(tags, sq, v, right):
            sample(op, tags, [sq, v] if op == "searchsorted" else [v, sq], (right,))

        for right in (0, 1):
            s(["plain", "args"], seq, vals, right)
            s(["extreme"], seq, T([math.nan, math.inf, -math.inf, -0.0]), right)
        s(["dtype"], T([1, 3, 5, 7], "i64"), T([0, 3, 8], "i64"), 0)
        s(["dtype"], T([1, 3, 5, 7], "i32"), T([0, 3, 8], "i32"), 1)
        s(["dtype"], T([1.0, 3.0], "f64"), T([2.0], "f64"), 0)
        s(["promo"], T([1, 3, 5, 7], "i64"), T([0.5, 3.0]), 0)
        s(["0d"], seq, T(1.5), 0)
        s(["empty"], seq, T(torch.zeros(0)), 0)
        s(["empty"], T(torch.zeros(0)), vals, 0)
        s(["args"], T([]), vals, 0)
        s(["args"], T([1.0, 2.0], "bool"), T([1.0], "bool"), 0)
        if op == "searchsorted":
            s(["args"], T([[0.0, 1.0, 2.0], [5.0, 6.0, 7.0]]), T([[1.5, 0.0], [6.0, 9.0]]), 0)
            s(["args"], T([[0.0, 1.0, 2.0], [5.0, 6.0, 7.0]]), T([[1.5, 0.0]]), 0)
        else:
            s(["args"], T([[0.0, 1.0]]), vals, 0)
        s(["transposed"], seq, T([[-2.0, 0.0], [1.0, 2.5], [4.0, 9.0]], "f32", "t"), 1)


def register6(o):
    """dtype limits."""
    def lim(dt, top):
        d = o.DT[dt]
        if d == torch.bool:
            raise RuntimeError("no limits for bool")
        info = torch.finfo(d) if d.is_floating_point else torch.iinfo(d)
        return torch.tensor(info.max if top else info.min, dtype=d)

    o.REF.update({"maximum_value": lambda dt: lim(dt, True), "minimum_value": lambda dt: lim(dt, False)})

    @o.samples_for("maximum_value", "minimum_value")
    def limits(op):
        for dt in o.DT:
            o.sample(op, ["plain" if dt == "f32" else "dtype", "0d"], [], (dt,))
