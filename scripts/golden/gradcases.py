"""gradcases.py - PyTorch's gradients for every graph of tests/grad/cases.tir.

tests/test_autograd.c checks each rule against f64 finite differences on
these graphs; this script gives the second, independent reference: for each
graph it draws the inputs (by the first letter of their names, as the test
does), saves them, runs the graph op by op in PyTorch (f64), and saves the
gradient of L = sum_k sum(y_k * r_k) for fixed r_k with respect to every
float input: tests/golden/gradcases/<graph>.<input>.npy, <graph>.r<k>.npy,
<graph>.<input>.grad.npy. Ops PyTorch cannot reproduce bit for bit (dropout:
tjit's own Philox stream) are listed in SKIP, and their graphs have no golden
data (the test says so)."""
import re

import numpy as np
import torch
import torch.nn.functional as F

from common import Family, ROOT

import os

CASES = os.path.join(ROOT, "..", "grad", "cases.tir")
SKIP = {"dropout": "tjit's dropout mask comes from its own Philox stream",
        "bessel_j0": "PyTorch 1.13 has no derivative for it", "bessel_j1": "PyTorch 1.13 has no derivative for it"}
DT = {"f64": torch.float64, "f32": torch.float32, "i64": torch.int64, "i32": torch.int32,
      "bool": torch.bool}


def parse_attrs(text):
    out = {}
    for m in re.finditer(r"(\w+)=(\[[^\]]*\]|[^,}]+)", text or ""):
        k, v = m.group(1), m.group(2).strip()
        if v.startswith("["):
            out[k] = [int(x) for x in v[1:-1].split(",") if x.strip()]
        elif v in ("true", "false"):
            out[k] = v == "true"
        elif v in DT:
            out[k] = DT[v]
        else:
            try:
                out[k] = int(v)
            except ValueError:
                try:
                    out[k] = float(v)
                except ValueError:
                    out[k] = v
    return out


def dims_of(a, x):
    return tuple(a["dims"]) if a.get("dims") else tuple(range(x.dim()))


def pair(v, default):
    return tuple(v) if v else default


def sdpa(q, k, v, mask=None, causal=False, scale=0.0):
    scale = scale if scale > 0 else 1.0 / q.shape[-1] ** 0.5
    s = (q @ k.transpose(-1, -2)) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


def cross_entropy(x, t, w=None, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    return F.cross_entropy(x, t, weight=w, reduction=reduction, ignore_index=ignore_index,
                           label_smoothing=label_smoothing)


UNARY = {"gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "gelu": F.gelu, "silu": F.silu,
         "relu": torch.relu, "sigmoid": torch.sigmoid,
         "square": torch.square}


# ==== nn and linalg (issue 11) ====================================================
NN_GRAD = {
    "mse_loss": lambda i, a: F.mse_loss(i[0], i[1], reduction=a["reduction"]),
    "l1_loss": lambda i, a: F.l1_loss(i[0], i[1], reduction=a["reduction"]),
    "smooth_l1_loss": lambda i, a: F.smooth_l1_loss(i[0], i[1], reduction=a["reduction"],
                                                    beta=a["beta"]),
    "huber_loss": lambda i, a: F.huber_loss(i[0], i[1], reduction=a["reduction"], delta=a["delta"]),
    "binary_cross_entropy": lambda i, a: F.binary_cross_entropy(
        i[0], i[1], i[2] if len(i) > 2 else None, reduction=a["reduction"]),
    "binary_cross_entropy_with_logits": lambda i, a: F.binary_cross_entropy_with_logits(
        i[0], i[1], i[2] if len(i) > 2 else None, reduction=a["reduction"],
        pos_weight=i[3] if len(i) > 3 else None),
    "kl_div": lambda i, a: F.kl_div(i[0], i[1], reduction=a["reduction"],
                                    log_target=a["log_target"]),
    **{op: (lambda op: lambda i, a: getattr(torch, op)(*i))(op) for op in ("bmm", "mv", "dot", "outer")},
    **{op: (lambda op: lambda i, a: getattr(torch, op)(*i, beta=a["beta"], alpha=a["alpha"]))(op)
       for op in ("addmm", "addmv", "baddbmm")},
    "tensordot": lambda i, a: torch.tensordot(i[0], i[1], dims=(a["dims_a"], a["dims_b"])),
    "trace": lambda i, a: torch.trace(i[0]),
    "cross": lambda i, a: torch.linalg.cross(i[0], i[1], dim=a["dim"]),
    "conv1d": lambda i, a: F.conv1d(i[0], i[1], i[2] if len(i) > 2 else None, a["stride"],
                                    a["padding"], a["dilation"], a["groups"]),
    "max_pool1d": lambda i, a: F.max_pool1d(i[0], a["kernel"], a["stride"] or None, a["padding"],
                                            a["dilation"], a["ceil_mode"]),
    "avg_pool1d": lambda i, a: F.avg_pool1d(i[0], a["kernel"], a["stride"] or None, a["padding"],
                                            a["ceil_mode"], a["count_include_pad"]),
    "pixel_shuffle": lambda i, a: F.pixel_shuffle(i[0], a["upscale_factor"]),
    "pixel_unshuffle": lambda i, a: F.pixel_unshuffle(i[0], a["downscale_factor"]),
    "group_norm": lambda i, a: F.group_norm(i[0], a["groups"], *(i[1:] + [None] * (3 - len(i))),
                                            a["eps"]),
    "instance_norm": lambda i, a: F.instance_norm(i[0], weight=i[1] if len(i) > 1 else None,
                                                  bias=i[2] if len(i) > 2 else None, eps=a["eps"]),
    "local_response_norm": lambda i, a: F.local_response_norm(i[0], a["size"], a["alpha"],
                                                              a["beta"], a["k"]),
    "vector_norm": lambda i, a: torch.linalg.vector_norm(i[0], a["ord"], tuple(a["dims"]) or None,
                                                         a["keepdim"]),
    "cosine_similarity": lambda i, a: F.cosine_similarity(i[0], i[1], a["dim"], a["eps"]),
    "pairwise_distance": lambda i, a: F.pairwise_distance(i[0], i[1], a["p"], a["eps"], a["keepdim"]),
    "nll_loss": lambda i, a: F.nll_loss(i[0], i[1], i[2] if len(i) > 2 else None,
                                        ignore_index=a["ignore_index"], reduction=a["reduction"]),
    "adaptive_avg_pool2d": lambda i, a: F.adaptive_avg_pool2d(i[0], a["output_size"]),
    "adaptive_avg_pool1d": lambda i, a: F.adaptive_avg_pool1d(i[0], a["output_size"]),
    "adaptive_avg_pool3d": lambda i, a: F.adaptive_avg_pool3d(i[0], a["output_size"]),
    "adaptive_max_pool2d": lambda i, a: F.adaptive_max_pool2d(i[0], a["output_size"]),
    "cdist": lambda i, a: torch.cdist(i[0], i[1], a["p"], compute_mode="donot_use_mm_for_euclid_dist"),
    "matrix_norm": lambda i, a: torch.linalg.matrix_norm(i[0], "fro", tuple(a["dims"]) or (-2, -1),
                                                         a["keepdim"]),
}
# ==== end of nn and linalg ==========================================================
# ==== linalg via LAPACK (issue 11) ==================================================
LAPACK = {
    "inv": lambda i, a: torch.linalg.inv(i[0]),
    "det": lambda i, a: torch.linalg.det(i[0]),
    "slogdet": lambda i, a: torch.linalg.slogdet(i[0])[1],
    "slogdet_sign": lambda i, a: torch.linalg.slogdet(i[0])[0],
    "solve": lambda i, a: torch.linalg.solve(i[0], i[1]),
    "cholesky": lambda i, a: torch.linalg.cholesky(i[0], upper=a["upper"]),
    "qr_q": lambda i, a: torch.linalg.qr(i[0])[0],
    "qr_r": lambda i, a: torch.linalg.qr(i[0])[1],
}
# ==== end of linalg via LAPACK ======================================================
# ==== 3-D and transposed convolution, 3-D pools (issue 11) ==========================
def _l(v, default):
    """An INT or INTS attribute for torch: [] is the default."""
    if isinstance(v, int):
        return v
    return default if not v else (v[0] if len(v) == 1 else tuple(v))


def _conv_t(fn):
    return lambda i, a: fn(i[0], i[1], i[2] if len(i) > 2 else None, _l(a["stride"], 1),
                           _l(a["padding"], 0), _l(a["output_padding"], 0), a["groups"],
                           _l(a["dilation"], 1))


CONV3D_GRAD = {
    "conv3d": lambda i, a: F.conv3d(i[0], i[1], i[2] if len(i) > 2 else None, _l(a["stride"], 1),
                                    _l(a["padding"], 0), _l(a["dilation"], 1), a["groups"]),
    "conv_transpose1d": _conv_t(F.conv_transpose1d),
    "conv_transpose2d": _conv_t(F.conv_transpose2d),
    "conv_transpose3d": _conv_t(F.conv_transpose3d),
    "max_pool3d": lambda i, a: F.max_pool3d(i[0], _l(a["kernel"], None), _l(a["stride"], None),
                                            _l(a["padding"], 0), _l(a["dilation"], 1),
                                            a["ceil_mode"]),
    "avg_pool3d": lambda i, a: F.avg_pool3d(i[0], _l(a["kernel"], None), _l(a["stride"], None),
                                            _l(a["padding"], 0), a["ceil_mode"],
                                            a["count_include_pad"]),
}
NN_GRAD.update(CONV3D_GRAD)
# ==== end of 3-D and transposed convolution ==========================================
# ---- indexing, scans and shapes (ops.def's section of that name) ----
IDX = {
    "narrow": lambda i, a: torch.narrow(i[0], a["dim"], a["start"], a["length"]),
    "movedim": lambda i, a: torch.movedim(i[0], tuple(a["src"]), tuple(a["dst"])),
    "t": lambda i, a: i[0].t(),
    "unflatten": lambda i, a: torch.unflatten(i[0], a["dim"], tuple(a["sizes"])),
    "expand_as": lambda i, a: i[0].expand_as(i[1]),
    "view_as": lambda i, a: i[0].reshape(i[1].shape),
    "tril": lambda i, a: torch.tril(i[0], a["diagonal"]),
    "triu": lambda i, a: torch.triu(i[0], a["diagonal"]),
    "masked_fill": lambda i, a: i[0].masked_fill(i[1], a["value"]),
    "diagonal": lambda i, a: torch.diagonal(i[0], a["offset"], a["dim1"], a["dim2"]),
    "diag_embed": lambda i, a: torch.diag_embed(i[0], a["offset"], a["dim1"], a["dim2"]),
    "repeat": lambda i, a: i[0].repeat(*a["repeats"]),
    "tile": lambda i, a: torch.tile(i[0], tuple(a["dims"])),
    "repeat_interleave": lambda i, a: torch.repeat_interleave(i[0], a["repeats"], a["dim"]),
    "roll": lambda i, a: torch.roll(i[0], tuple(a["shifts"]), tuple(a["dims"])),
    "take": lambda i, a: torch.take(i[0], i[1]),
    "take_along_dim": lambda i, a: torch.take_along_dim(i[0], i[1], a["dim"]),
    "unfold": lambda i, a: i[0].unfold(a["dim"], a["size"], a["step"]),
    "as_strided": lambda i, a: i[0].contiguous().as_strided(a["size"], a["stride"], a["storage_offset"]),
    "index_fill": lambda i, a: i[0].index_fill(a["dim"], i[1], a["value"]),
    "full_like": lambda i, a: torch.full_like(i[0], a["value"]),
    "cumsum": lambda i, a: torch.cumsum(i[0], a["dim"]),
    "cumprod": lambda i, a: torch.cumprod(i[0], a["dim"]),
    "logcumsumexp": lambda i, a: torch.logcumsumexp(i[0], a["dim"]),
    "cummax": lambda i, a: torch.cummax(i[0], a["dim"])[0],
    "cummin": lambda i, a: torch.cummin(i[0], a["dim"])[0],
    "sort": lambda i, a: torch.sort(i[0], stable=True, dim=a["dim"], descending=a["descending"])[0],
    "topk": lambda i, a: torch.topk(i[0], a["k"], a["dim"], a["largest"])[0],
    "kthvalue": lambda i, a: torch.kthvalue(i[0], a["k"], a["dim"], a["keepdim"])[0],
    "median": lambda i, a: torch.median(i[0], a["dim"], a["keepdim"])[0],
    "scatter": lambda i, a: torch.scatter(i[0], a["dim"], i[1], i[2]),
    "scatter_add": lambda i, a: torch.scatter_add(i[0], a["dim"], i[1], i[2]),
    "index_add": lambda i, a: i[0].index_add(a["dim"], i[1], i[2], alpha=a["alpha"]),
    "index_copy": lambda i, a: i[0].index_copy(a["dim"], i[1], i[2]),
    "index_put": lambda i, a: i[0].index_put(tuple(i[2:]), i[1], a["accumulate"]),
}
UNARY.update(cbrt=lambda x: x.sign() * x.abs().pow(1 / 3), selu=F.selu, hardswish=F.hardswish,
             hardsigmoid=F.hardsigmoid, relu6=F.relu6, mish=F.mish, softsign=F.softsign,
             logsigmoid=F.logsigmoid, tanhshrink=F.tanhshrink, ndtr=torch.special.ndtr)
ATTR_OPS = {
    "leaky_relu": lambda x, a: F.leaky_relu(x, a["negative_slope"]),
    "elu": lambda x, a: F.elu(x, a["alpha"]), "celu": lambda x, a: F.celu(x, a["alpha"]),
    "hardtanh": lambda x, a: F.hardtanh(x, a["min_val"], a["max_val"]),
    "softshrink": lambda x, a: F.softshrink(x, a["lambd"]),
    "hardshrink": lambda x, a: F.hardshrink(x, a["lambd"]),
    "threshold": lambda x, a: F.threshold(x, a["threshold"], a["value"]),
    "glu": lambda x, a: F.glu(x, a["dim"]),
    "logit": lambda x, a: torch.logit(x, None if a["eps"] < 0 else a["eps"]),
    "nan_to_num": lambda x, a: torch.nan_to_num(x, a["nan"]),
}


# ---- interpolate, embedding_bag, scatter_reduce (issue 11) ----
def interp_nearest(i, a):
    k = len(a["size"])
    sc = [a["scale_d"], a["scale_h"], a["scale_w"]][3 - k:]
    if any(s > 0 for s in sc):
        return F.interpolate(i[0], scale_factor=sc, mode="nearest")
    return F.interpolate(i[0], size=a["size"], mode="nearest")


def interp_2d(mode):
    def run(i, a):
        sc = [a["scale_h"], a["scale_w"]]
        if any(s > 0 for s in sc) and not a["align_corners"]:
            return F.interpolate(i[0], scale_factor=sc, mode=mode, align_corners=False)
        return F.interpolate(i[0], size=a["size"], mode=mode, align_corners=a["align_corners"])
    return run


INTERP = {
    "upsample_nearest": interp_nearest,
    "upsample_bilinear2d": interp_2d("bilinear"),
    "upsample_bicubic2d": interp_2d("bicubic"),
    "scatter_reduce": lambda i, a: torch.scatter_reduce(i[0], a["dim"], i[1], i[2], a["reduce"],
                                                        include_self=a["include_self"]),
    "embedding_bag": lambda i, a: F.embedding_bag(
        i[1], i[0], i[2] if len(i) > 2 else None, mode={"amax": "max"}.get(a["mode"], a["mode"]),
        per_sample_weights=i[3] if len(i) > 3 else None,
        include_last_offset=a["include_last_offset"],
        padding_idx=a["padding_idx"][0] if a["padding_idx"] else None),
    "arange": lambda i, a: torch.arange(a["start"], a["end"], a["step"], dtype=a["dtype"]),
}
SPECIAL = {"polygamma": lambda i: torch.polygamma(int(i[0].item()), i[1]),
           "igamma": lambda i: torch.igamma(*i), "igammac": lambda i: torch.igammac(*i),
           "frexp": lambda i: torch.frexp(i[0]).mantissa,
           **{op: (lambda f: lambda i: f(i[0]))(getattr(torch.special, op))
              for op in ("erfcx", "ndtri", "i0", "i0e", "i1", "i1e")}}


def run_op(op, ins, a):
    x = ins[0] if ins else None
    if op in INTERP:
        return INTERP[op](ins, a)
    if op in SPECIAL:
        return SPECIAL[op](ins)
    if op in NN_GRAD:
        return NN_GRAD[op](ins, a)
    if op in IDX:
        return IDX[op](ins, a)
    if op in LAPACK:
        return LAPACK[op](ins, a)
    if op in UNARY:
        return UNARY[op](x)
    if op == "scalar":
        return torch.tensor(a["value"], dtype=a["dtype"])
    if op in ATTR_OPS:
        return ATTR_OPS[op](x, a)
    if op in ("copysign", "hypot", "fmax", "fmin", "xlogy", "logaddexp", "logaddexp2",
              "float_power"):
        return getattr(torch, op)(ins[0], ins[1])
    if op == "prelu":
        return F.prelu(ins[0], ins[1])
    if op in ("addcmul", "addcdiv"):
        return getattr(torch, op)(*ins, value=a["value"])
    if op in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "fmod",
              "remainder"):
        return getattr(torch, op)(ins[0], ins[1])
    if op == "where":
        return torch.where(*ins)
    if op == "lerp":
        return torch.lerp(*ins)
    if op == "clamp":
        return torch.clamp(x, a["min"], a["max"])
    if op == "softplus":
        return F.softplus(x, a["beta"], a["threshold"])
    if op in ("add_alpha", "sub_alpha"):
        return getattr(torch, op[:3])(ins[0], ins[1], alpha=a["alpha"])
    if op == "div_mode":
        return torch.div(ins[0], ins[1], rounding_mode=a["rounding_mode"])
    if op == "cast":
        return x.to(a["dtype"])
    if op in ("sum", "mean", "amax", "amin", "logsumexp"):
        return getattr(torch, op)(x, dims_of(a, x), keepdim=a["keepdim"])
    if op == "prod":
        d = dims_of(a, x)
        y = x
        for k in sorted(d, reverse=True):
            y = y.prod(k, keepdim=a["keepdim"])
        return y
    if op in ("var", "std"):
        return getattr(torch, op)(x, dims_of(a, x), unbiased=a["correction"] == 1,
                                  keepdim=a["keepdim"])
    if op == "reshape":
        return x.reshape(a["shape"])
    if op == "permute":
        return x.permute(*a["perm"])
    if op == "slice":
        idx = [slice(None)] * x.dim()
        idx[a["dim"]] = slice(a["start"], a["end"], a["step"])
        return x[tuple(idx)]
    if op == "unsqueeze":
        return x.unsqueeze(a["dim"])
    if op == "squeeze":
        for d in sorted(a["dims"], reverse=True):
            x = x.squeeze(d)
        return x
    if op == "expand":
        return x.expand(*a["shape"])
    if op == "flip":
        return x.flip(a["dims"])
    if op == "copy":
        return x.clone()
    if op == "cat":
        return torch.cat(ins, a["dim"])
    if op == "pad":
        return F.pad(x, a["pads"], value=a["value"])
    if op == "gather":
        return torch.gather(x, a["dim"], ins[1])
    if op == "index_select":
        return torch.index_select(x, a["dim"], ins[1])
    if op == "matmul":
        return ins[0] @ ins[1]
    if op == "linear":
        return F.linear(*ins)
    if op == "conv2d":
        return F.conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a["stride"],
                        a["padding"], a["dilation"], a["groups"])
    if op == "max_pool2d":
        return F.max_pool2d(x, a["kernel"], pair(a["stride"], a["kernel"]), a["padding"],
                            a["dilation"], ceil_mode=a.get("ceil_mode", False))
    if op == "avg_pool2d":
        dov = a.get("divisor_override", 0)
        return F.avg_pool2d(x, a["kernel"], pair(a["stride"], a["kernel"]), a["padding"],
                            ceil_mode=a.get("ceil_mode", False),
                            count_include_pad=a["count_include_pad"],
                            divisor_override=dov if dov else None)
    if op == "softmax":
        return torch.softmax(x, a["dim"])
    if op == "log_softmax":
        return torch.log_softmax(x, a["dim"])
    if op == "layer_norm":
        n = a["ndims"]
        return F.layer_norm(x, x.shape[-n:], *(ins[1:] + [None] * (3 - len(ins))), a["eps"])
    if op == "rms_norm":
        n = a["ndims"]
        y = x * torch.rsqrt(x.pow(2).mean(tuple(range(-n, 0)), keepdim=True) + a["eps"])
        return y * ins[1] if len(ins) > 1 else y
    if op == "batch_norm":
        shape = [1, -1] + [1] * (x.dim() - 2)
        y = (x - ins[1].reshape(shape)) / torch.sqrt(ins[2].reshape(shape) + a["eps"])
        if len(ins) > 3 and ins[3] is not None:
            y = y * ins[3].reshape(shape)
        if len(ins) > 4 and ins[4] is not None:
            y = y + ins[4].reshape(shape)
        return y
    if op == "embedding":
        return F.embedding(ins[1], ins[0])
    if op == "sdpa":
        return sdpa(*ins, causal=a["causal"], scale=a["scale"])
    if op == "cross_entropy":
        w = ins[2] if len(ins) > 2 else None
        return cross_entropy(ins[0], ins[1], w, a.get("reduction", "mean"),
                             a.get("ignore_index", -100), a.get("label_smoothing", 0.0))
    if hasattr(torch, op):
        return getattr(torch, op)(x)
    raise KeyError(op)


def draw(name, dtype, shape, rng):
    n = int(np.prod(shape)) if shape else 1
    kind = name[0]
    if kind == "p":
        v = 0.5 + 1.5 * rng.random(n)
    elif kind == "u":
        v = -0.8 + 1.6 * rng.random(n)
    elif kind == "g":
        v = 1.2 + 1.8 * rng.random(n)
    elif kind == "m":
        last = shape[-1] if shape else 1
        v = np.array([(k % last == 0) or rng.random() < 0.6 for k in range(n)], dtype=float)
    elif kind == "i":
        hi = int(re.match(r"i(\d+)", name).group(1))
        v = np.floor(rng.random(n) * hi)
    elif kind == "z":
        v = np.array([0.0 if (k % 3 == 0 or k == 4) else 1.0 for k in range(n)])
    elif kind == "o":
        v = 0.5 + 1.5 * rng.random(n)
        v[::3] = 0.0
    else:
        v = rng.standard_normal(n)
    return torch.tensor(v.reshape(shape)).to(dtype)


def parse_type(t):
    m = re.match(r"(\w+)\[([^\]]*)\]", t.strip())
    return DT[m.group(1)], [int(x) for x in m.group(2).split(",") if x.strip()]


def main():
    f = Family("gradcases")
    src = open(CASES).read()
    rng = np.random.default_rng(0)
    for g in re.finditer(r"graph @(\w+)\((.*?)\) \{(.*?)\n\}", src, re.S):
        name, sig, body = g.group(1), g.group(2), g.group(3)
        ops = re.findall(r"%\w+ = (\w+)", body)
        if any(op in SKIP for op in ops):
            continue
        # torch has no gradient for cross_entropy's class weights: constants here
        const = set(re.findall(r"cross_entropy %\w+, %\w+, %(\w+)", body))
        env, inputs = {}, []
        for m in re.finditer(r"%(\w+): (\w+\[[^\]]*\])", sig):
            iname, (dt, shape) = m.group(1), parse_type(m.group(2))
            t = draw(iname, dt, shape, rng)
            f.save(f"{name}.{iname}", t)
            if dt.is_floating_point and iname[0] != "z" and iname not in const:
                t = t.clone().requires_grad_(True)
            env[iname] = t
            inputs.append(iname)
        outs = []
        for line in body.strip().splitlines():
            line = line.strip()
            if line.startswith("return"):
                outs = [o.strip()[1:] for o in line[len("return"):].split(",")]
                continue
            m = re.match(r"%(\w+) = (\w+) ([^{:]*)(\{[^}]*\})? ?:", line)
            if not m:
                continue
            res, op, args, attrs = m.group(1), m.group(2), m.group(3), m.group(4)
            ins = [env[x.strip()[1:]] if x.strip() != "none" else None
                   for x in args.split(",") if x.strip()]
            env[res] = run_op(op, ins, parse_attrs(attrs))
        loss = 0
        for k, o in enumerate(outs):
            y = env[o].to(torch.float64)
            r = torch.tensor(rng.standard_normal(tuple(y.shape)))
            f.save(f"{name}.r{k}", r)
            loss = loss + (y * r).sum()
        loss.backward()
        for iname in inputs:
            t = env[iname]
            if t.requires_grad:
                gr = t.grad if t.grad is not None else torch.zeros_like(t)
                f.save(f"{name}.{iname}.grad", gr)
    with open(os.path.join(f.dir, "skipped.txt"), "w") as out:
        for op, why in SKIP.items():
            out.write(f"{op}: {why}\n")
    f.done()


main()
