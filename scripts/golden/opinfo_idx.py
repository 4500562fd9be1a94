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
