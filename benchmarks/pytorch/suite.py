#!/usr/bin/python3
"""suite.py - the benchmark suite (shared/bench/SUITE.md) in PyTorch eager, the
reference tjit's `tjit bench` is compared with (scripts/bench-compare.sh).

Same cases, same argument order and same timing rules as benchmarks/suite.c
and benchmarks/bench.c: inputs random normal from a fixed seed, weights random
normal scaled by 1/sqrt(fan_in); a first call (its resident-memory growth is
the peak), a warm-up, then iterations until both --iters and --min-time are
reached; the median is the result. All but P7 and P8 run under torch.inference_mode();
P7 and P8 are full training steps with autograd (P8 with Adam). B1 and B4 are
P1 and P4 on bf16 tensors, H4 P4 on f16 tensors, A4 and A6 P4 and P6 under torch.autocast("cpu",
bf16), Q4 P4 with torch.ao's quantize_dynamic (int8 linears).

    /usr/bin/python3 benchmarks/pytorch/suite.py [CASE...] [--json] [--threads N]
        [--iters N] [--min-time S] [--cpu-time] [--check DIR] [--torchscript]
        [--blas-core auto|default|NAME]

--check DIR loads the inputs, weights and result `tjit bench --save DIR` wrote
and reports max |tjit - torch| per case (check_max_abs_diff); for a training
step (P7, P8), over the loss and every weight after the step (<id>.upd<k>.npy).
--torchscript times TorchScript (torch.jit) instead of eager: the strongest
CPU configuration of PyTorch 1.13 for inference (traced, frozen, optimized
for inference: oneDNN convolutions with batch norm folded), and for training
the traced forward with autograd and the optimizer around it.
Run it with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import ctypes
import gc
import json
import os
import statistics
import sys
import time

SEED = 0
MAX_ITERS = 100000
WARMUP_FRACTION = 0.2


def cpu_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l for l in f if l.startswith("flags")), "").split()
    except OSError:
        return False
    return all(x in flags for x in ("avx512f", "avx512bw", "avx512vl", "avx512dq"))


def set_blas_core(choice):
    """OpenBLAS reads OPENBLAS_CORETYPE when it loads, so this runs before
    `import torch`. auto mirrors runtime/blas.c: its AVX-512 kernels where the
    CPU has AVX-512 and the user set nothing; default leaves OpenBLAS alone."""
    if choice == "auto":
        if "OPENBLAS_CORETYPE" not in os.environ and cpu_has_avx512():
            os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    elif choice != "default":
        os.environ["OPENBLAS_CORETYPE"] = choice


def build_cases(torch):
    F = torch.nn.functional

    def randn(*shape):
        return torch.randn(*shape, dtype=torch.float32)

    def weight(shape, fan_in):
        return randn(*shape) / fan_in ** 0.5

    def variance(c):   # bn running variance, U[0.5, 1.5)
        return torch.rand(c) + 0.5

    def p1(x):
        return torch.tanh(x) * torch.sigmoid(1.702 * x) + 0.5 * x

    def p2(x):
        return torch.softmax(x, -1)

    def p3(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)

    def p4(x, w1, b1, w2, b2, lw, lb):
        h = F.gelu(F.linear(x, w1, b1), approximate="tanh")
        y = F.linear(h, w2, b2) + x
        return F.layer_norm(y, (y.shape[-1],), lw, lb, 1e-5)

    def p5(q, k, v):
        # torch 1.13 has no public scaled_dot_product_attention: its math form.
        s = (q @ k.transpose(-2, -1)) * 0.125
        L, S = s.shape[-2], s.shape[-1]
        masked = torch.ones(L, S, dtype=torch.bool).triu(1)
        return torch.softmax(s.masked_fill(masked, float("-inf")), -1) @ v

    def conv_bn(x, w, m, v, g, b):
        return F.batch_norm(F.conv2d(x, w, None, 1, 1), m, v, g, b, False, 0.0, 1e-5)

    def p6(x, *w):
        h = torch.relu(conv_bn(x, *w[0:5]))
        return torch.relu(conv_bn(h, *w[5:10]) + x)

    def p7_loss(x, labels, w1, b1, w2, b2, w3, b3):
        h = torch.relu(F.linear(x, w1, b1))
        h = torch.relu(F.linear(h, w2, b2))
        return F.cross_entropy(F.linear(h, w3, b3), labels)

    def p8_block(x, w):
        B, L, D = x.shape
        qkv = F.linear(F.layer_norm(x, (D,), w[0], w[1], 1e-5), w[2], w[3])
        q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, L, 4, D // 4).permute(0, 2, 1, 3)
                   for i in range(3))
        s = (q @ k.transpose(-2, -1)) / (D // 4) ** 0.5
        masked = torch.ones(L, L, dtype=torch.bool).triu(1)
        att = torch.softmax(s.masked_fill(masked, float("-inf")), -1) @ v
        y = x + F.linear(att.permute(0, 2, 1, 3).reshape(B, L, D), w[4], w[5])
        h = F.gelu(F.linear(F.layer_norm(y, (D,), w[6], w[7], 1e-5), w[8], w[9]),
                   approximate="tanh")
        return y + F.linear(h, w[10], w[11])

    def p8_loss(x, target, *w):
        return ((p8_block(x, w) - target) ** 2).mean()

    def p8_setup():
        x, target = randn(16, 64, 128), randn(16, 64, 128)

        def linear(o, i):
            return [weight((o, i), i), weight((o,), i)]
        ws = ([torch.ones(128), torch.zeros(128)] + linear(384, 128) + linear(128, 128) +
              [torch.ones(128), torch.zeros(128)] + linear(512, 128) + linear(128, 512))
        return [x, target] + [w.requires_grad_() for w in ws]

    def p9(x, wih, bih, whh, bhh):   # LSTM cell unrolled over x's 8 steps: the last h
        h = c = torch.zeros(x.shape[1], whh.shape[1])
        for t in range(x.shape[0]):
            i, f, g, o = (F.linear(x[t], wih, bih) + F.linear(h, whh, bhh)).split(whh.shape[1], 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h

    def p10(x):   # ten pointwise ops on 256 floats: the per-call overhead
        y = torch.tanh(x * 2.0 + 1.0)
        y = y * x - 0.5
        y = torch.relu(torch.exp(-y) + x)
        return torch.sigmoid(y) / (torch.abs(x) + 1.0)

    def p11(x, w, m, v, g, b):   # ResNet stem, eval
        y = F.batch_norm(F.conv2d(x, w, None, 2, 3), m, v, g, b, False, 0.0, 1e-5)
        return F.max_pool2d(torch.relu(y), 3, 2, 1)

    def conv_block(x, w, cb, m, v, g, b):
        y = F.batch_norm(F.conv2d(x, w, cb, 1, 1), m, v, g, b, False, 0.0, 1e-5)
        return F.max_pool2d(torch.relu(y), 2)

    def p12(x, *w):   # small convnet at 28x28, eval
        h = conv_block(conv_block(x, *w[0:6]), *w[6:12])
        return F.linear(h.flatten(1), w[12], w[13])

    def bn_weights(c):
        return [weight((c,), 1), variance(c), weight((c,), 1), weight((c,), 1)]

    def conv_bn_weights():
        return [weight((64, 64, 3, 3), 576), weight((64,), 1), variance(64),
                weight((64,), 1), weight((64,), 1)]

    def p7_setup():
        x = randn(128, 784)
        labels = torch.randint(0, 10, (128,), dtype=torch.int64)
        ws = [weight((512, 784), 784), weight((512,), 784), weight((512, 512), 512),
              weight((512,), 512), weight((10, 512), 512), weight((10,), 512)]
        return [x, labels] + [w.requires_grad_() for w in ws]

    def p1_setup():
        return [randn(4194304)]

    def p4_setup():
        return [randn(256, 1024), weight((2048, 1024), 1024), weight((2048,), 1024),
                weight((1024, 2048), 2048), weight((1024,), 2048), weight((1024,), 1),
                weight((1024,), 1)]

    def p6_setup():
        return [randn(8, 64, 56, 56)] + conv_bn_weights() + conv_bn_weights()

    # Low precision, as tjit's B1/B4 (bf16 tensors), H4 (f16 tensors), A4/A6 (autocast) and Q4
    # (int8 dynamic quantization); results in f32, as tjit's cases return them.
    def bf16(setup):
        return lambda: [t.bfloat16() for t in setup()]

    def f16(setup):
        return lambda: [t.half() for t in setup()]

    def as_f32(model):
        return lambda *a: model(*a).float()

    def autocast(model):
        def run(*a):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return model(*a).float()
        return run

    class DynamicInt8:
        """P4 with its two linears through torch.ao's quantize_dynamic (int8
        weights per channel as tjit's quantize_dynamic, made on the first call
        for a weight set, as tjit makes them when it compiles)."""

        def __init__(self):
            self.made = {}

        def linears(self, *wb):
            key = id(wb[0])
            if key not in self.made:
                mods = []
                for w, b in zip(wb[0::2], wb[1::2]):
                    lin = torch.nn.Linear(w.shape[1], w.shape[0])
                    with torch.no_grad():
                        lin.weight.copy_(w)
                        lin.bias.copy_(b)
                    mods.append(torch.ao.quantization.quantize_dynamic(
                        torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8))
                self.made[key] = mods
            return self.made[key]

        def __call__(self, x, w1, b1, w2, b2, lw, lb):
            l1, l2 = self.linears(w1, b1, w2, b2)
            y = l2(F.gelu(l1(x), approximate="tanh")) + x
            return F.layer_norm(y, (y.shape[-1],), lw, lb, 1e-5)

        def module(self, x, w1, b1, w2, b2, lw, lb):
            """The same as a module for TorchScript (its linears its submodules)."""
            outer = self

            class Q4(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.l1, self.l2 = outer.linears(w1, b1, w2, b2)
                    self.register_buffer("lw", lw)
                    self.register_buffer("lb", lb)

                def forward(self, x):
                    y = self.l2(F.gelu(self.l1(x), approximate="tanh")) + x
                    return F.layer_norm(y, (y.shape[-1],), self.lw, self.lb, 1e-5)
            return Q4()

    # (id, name, setup, model, inputs): setup's first `inputs` values are the
    # inputs, the rest weights; a training model is a TrainStep.
    return [
        ("P1", "pointwise", p1_setup, p1, 1),
        ("P2", "softmax", lambda: [randn(2048, 1024)], p2, 1),
        ("P3", "layernorm", lambda: [randn(4096, 1024), weight((1024,), 1),
                                     weight((1024,), 1)], p3, 1),
        ("P4", "mlp", p4_setup, p4, 1),
        ("P5", "attention", lambda: [randn(4, 8, 256, 64) for _ in range(3)], p5, 3),
        ("P6", "conv", p6_setup, p6, 1),
        ("P7", "train_mlp", p7_setup, TrainStep(torch, p7_loss, "sgd"), 2),
        ("P8", "train_block", p8_setup, TrainStep(torch, p8_loss, "adam"), 2),
        ("P9", "rnn", lambda: [randn(8, 64, 256), weight((1024, 256), 256), weight((1024,), 256),
                               weight((1024, 256), 256), weight((1024,), 256)], p9, 1),
        ("P10", "small", lambda: [randn(256)], p10, 1),
        ("P11", "stem", lambda: [randn(8, 3, 224, 224), weight((64, 3, 7, 7), 147)] +
         bn_weights(64), p11, 1),
        ("P12", "convnet", lambda: [randn(32, 1, 28, 28), weight((32, 1, 3, 3), 9), weight((32,), 9)] +
         bn_weights(32) + [weight((64, 32, 3, 3), 288), weight((64,), 288)] + bn_weights(64) +
         [weight((10, 3136), 3136), weight((10,), 3136)], p12, 1),
        ("B1", "pointwise_bf16", bf16(p1_setup), as_f32(p1), 1),
        ("B4", "mlp_bf16", bf16(p4_setup), as_f32(p4), 1),
        ("H4", "mlp_f16", f16(p4_setup), as_f32(p4), 1),
        ("A4", "mlp_autocast", p4_setup, autocast(p4), 1),
        ("A6", "conv_autocast", p6_setup, autocast(p6), 1),
        ("Q4", "mlp_int8", p4_setup, DynamicInt8(), 1),
    ]


class TrainStep:
    """One training step over loss_fn(inputs..., weights...): SGD (lr 0.01) or
    Adam (lr 1e-3, one optimizer per weight set, made on its first step like
    tjit's setup); returns the loss."""

    def __init__(self, torch, loss_fn, opt):
        self.torch, self.loss_fn, self.opt, self.optimizers = torch, loss_fn, opt, {}

    def __call__(self, x, target, *w):
        torch = self.torch
        if self.opt == "sgd":
            with torch.enable_grad():
                loss = self.loss_fn(x, target, *w)
                grads = torch.autograd.grad(loss, w)
            with torch.no_grad():
                for p, g in zip(w, grads):
                    p.sub_(0.01 * g)
            return loss.detach()
        opt = self.optimizers.setdefault(id(w[0]), torch.optim.Adam(w, lr=1e-3))
        with torch.enable_grad():
            opt.zero_grad()
            loss = self.loss_fn(x, target, *w)
            loss.backward()
        opt.step()
        return loss.detach()


def torchscript(torch, model, args, ninputs):
    """The case as TorchScript's best CPU form: an inference model traced with
    its weights as a module's buffers, frozen and optimized for inference
    (conv-bn folding, oneDNN); a training step with its forward and loss
    traced (backward and the optimizer stay eager, as with torch.jit)."""
    if isinstance(model, TrainStep):
        with torch.enable_grad():
            traced = torch.jit.trace(model.loss_fn, tuple(args))
        return TrainStep(torch, traced, model.opt)

    class Frozen(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for i, w in enumerate(args[ninputs:]):
                self.register_buffer(f"w{i}", w)

        def forward(self, *xs):
            return model(*xs, *[getattr(self, f"w{i}") for i in range(len(args) - ninputs)])

    module = model.module(*args) if hasattr(model, "module") else Frozen()
    traced = torch.jit.trace(module.eval(), tuple(args[:ninputs]))
    ts = torch.jit.optimize_for_inference(torch.jit.freeze(traced))
    return lambda *a: ts(*a[:ninputs])


# ---- peak memory: growth of the resident set (Linux /proc) ------------------
def status_bytes(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_reset():
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return status_bytes("VmRSS")


def peak_since(base):
    hwm = status_bytes("VmHWM") if base is not None else None
    return None if hwm is None else max(hwm - base, 0)


# ---- running a case -----------------------------------------------------------
# The clock of the timed calls: wall (perf_counter), or with --cpu-time the
# process's CPU time (every thread), as `tjit bench --cpu-time` measures.
clock = time.perf_counter


def timed(model, args):
    t0 = clock()
    y = model(*args)
    del y
    return (clock() - t0) * 1e3


def measure(model, args, iters, min_time):
    start, warm = time.perf_counter(), min_time * WARMUP_FRACTION
    while time.perf_counter() - start < warm:
        timed(model, args)
    ts, total = [], 0.0
    while len(ts) < MAX_ITERS and (len(ts) < iters or total < min_time * 1e3):
        ts.append(timed(model, args))
        total += ts[-1]
    return ts


def load_tjit_case(torch, check_dir, cid):
    """(args, expected) that `tjit bench --save` wrote, or None."""
    import numpy as np
    path = lambda tail: os.path.join(check_dir, f"{cid}.{tail}.npy")
    if not os.path.exists(path("out")):
        return None
    def load(tail):   # tjit saves bf16 as its raw bits ('<u2', runtime/npy.c)
        a = np.load(path(tail))
        if a.dtype == np.uint16:
            return torch.from_numpy((a.astype(np.uint32) << 16).view(np.float32)).bfloat16()
        return torch.from_numpy(a)
    args, k = [], 0
    while os.path.exists(path(f"arg{k}")):
        args.append(load(f"arg{k}"))
        k += 1
    return args, load("out")


def run_case(torch, case, opts):
    cid, name, setup, model, ninputs = case
    system = "torchscript" if opts.torchscript else "pytorch"
    rec = {"case": cid, "name": name, "system": system, "status": "ok", "error": None,
           "eager_ms": None, "eager_min_ms": None, "eager_first_ms": None, "iters": 0,
           "compiled_ms": None, "speedup": None, "first_call_cold_ms": None,
           "first_call_warm_ms": None, "kernels": None, "peak_bytes": None,
           "max_abs_diff": None, "threads": torch.get_num_threads()}
    grad = torch.enable_grad() if cid in ("P7", "P8") else torch.inference_mode()
    try:
        with grad:
            torch.manual_seed(SEED)
            args = setup()
            if opts.torchscript:
                model = torchscript(torch, model, args, ninputs)
            base = peak_reset()
            t0 = time.perf_counter()
            y = model(*args)
            rec["eager_first_ms"] = (time.perf_counter() - t0) * 1e3
            rec["peak_bytes"] = peak_since(base)
            del y
            if opts.check and not opts.torchscript:
                rec["check_max_abs_diff"] = check(torch, opts.check, cid, model)
            ts = measure(model, args, opts.iters, opts.min_time)
    except Exception as e:   # report and go on, like tjit bench
        # PyTorch's own "not implemented for 'Half'" (1.13 has no CPU f16
        # addmm) is a case this peer cannot run, not a failed run
        missing = isinstance(e, RuntimeError) and "not implemented for" in str(e)
        rec.update(status="unsupported" if missing else "failed",
                   error=f"{type(e).__name__}: {e}")
        return rec
    rec.update(eager_ms=statistics.median(ts), eager_min_ms=min(ts), iters=len(ts))
    return rec


def check(torch, check_dir, cid, model):
    loaded = load_tjit_case(torch, check_dir, cid)
    if loaded is None:
        return None
    args, want = loaded
    pairs = []
    if cid in ("P7", "P8"):   # the weights of a training step need gradients
        import numpy as np
        args = args[:2] + [a.requires_grad_() for a in args[2:]]
        for k in range(2, len(args)):
            upd = os.path.join(check_dir, f"{cid}.upd{k}.npy")
            if not os.path.exists(upd):
                return float("inf")   # an older tjit bench: the weights cannot be checked
            pairs.append((args[k], torch.from_numpy(np.load(upd))))
    got = model(*args)   # a training step updates args[2:] in place
    pairs.append((got, want))
    diff = 0.0
    for g, w in pairs:
        if g.shape != w.shape:
            return float("inf")
        diff = max(diff, float((g.detach().double() - w.double()).abs().max()))
    return diff


# ---- output --------------------------------------------------------------------------
def print_table_row(r, out):
    if r["status"] != "ok":
        print(f"{r['case']:<4} {r['name']:<10} {'-':>10} {'-':>10} {'-':>10} {'-':>6} "
              f"{r['threads']:>7} {'-':>9}  {r['status'].upper()}: {r['error']}", file=out)
        return
    peak = "-" if r["peak_bytes"] is None else f"{r['peak_bytes'] / 1048576:.1f}"
    print(f"{r['case']:<4} {r['name']:<10} {r['eager_ms']:>10.3f} {r['eager_min_ms']:>10.3f} "
          f"{r['eager_first_ms']:>10.3f} {r['iters']:>6} {r['threads']:>7} {peak:>9}  ok",
          file=out)


def parse_args(argv):
    ap = argparse.ArgumentParser(description="The tjit benchmark suite in PyTorch eager.")
    ap.add_argument("cases", nargs="*", help="ids (P1) or names (softmax); default all")
    ap.add_argument("--json", action="store_true", help="one JSON object per case and line")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--iters", type=int, default=None,
                    help="timed iterations; without --min-time exactly N")
    ap.add_argument("--min-time", type=float, default=None,
                    help="time at least S seconds (default 1, with at least 10 iters)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="timed calls by the process's CPU time (every thread), as "
                         "tjit bench --cpu-time; the first call stays wall-clock")
    ap.add_argument("--torchscript", action="store_true",
                    help="TorchScript instead of eager: inference traced, frozen and "
                         "optimized for inference; training with its forward traced")
    ap.add_argument("--check", metavar="DIR",
                    help="compare with the results `tjit bench --save DIR` wrote")
    ap.add_argument("--blas-core", default="auto",
                    help="OPENBLAS_CORETYPE: auto (as tjit: SkylakeX on AVX-512), default, "
                         "or a core name")
    opts = ap.parse_args(argv)
    if opts.threads < 1 or (opts.iters is not None and opts.iters < 1) or \
            (opts.min_time is not None and opts.min_time < 0):
        ap.error("--threads and --iters need a positive count, --min-time seconds >= 0")
    if opts.iters is not None and opts.min_time is None:
        opts.min_time = 0.0
    opts.iters = 10 if opts.iters is None else opts.iters
    opts.min_time = 1.0 if opts.min_time is None else opts.min_time
    return opts


def main(argv):
    global clock
    opts = parse_args(argv)
    set_blas_core(opts.blas_core)
    if opts.cpu_time:
        clock = time.process_time
    try:
        import torch
    except ImportError:
        print("suite.py: PyTorch is missing: apt-get install python3-torch "
              "(and run with /usr/bin/python3)", file=sys.stderr)
        return 2
    torch.set_num_threads(opts.threads)
    cases = build_cases(torch)
    by_key = {k.lower(): c for c in cases for k in c[:2]}
    chosen = []
    for s in opts.cases:
        if s.lower() not in by_key:
            print(f"suite.py: unknown case '{s}' (cases: P1..P{len(cases)} or their names)",
                  file=sys.stderr)
            return 2
        chosen.append(by_key[s.lower()])
    failed = False
    if not opts.json:
        print(f"{'case':<4} {'name':<10} {'eager ms':>10} {'min ms':>10} {'first ms':>10} "
              f"{'iters':>6} {'threads':>7} {'peak MB':>9}  status")
    for case in chosen or cases:
        print(f"{case[0]} {case[1]:<10} ({'torchscript' if opts.torchscript else 'pytorch'}) "
              "running", file=sys.stderr)
        r = run_case(torch, case, opts)
        r["blas_core"] = os.environ.get("OPENBLAS_CORETYPE", "default")
        r["torch_version"] = torch.__version__
        failed |= r["status"] == "failed"
        if r["status"] != "ok":
            print(f"{r['case']} {r['name']:<10} {r['status'].upper()}: {r['error']}",
                  file=sys.stderr)
        if opts.json:
            print(json.dumps(r), flush=True)
        else:
            print_table_row(r, sys.stdout)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
