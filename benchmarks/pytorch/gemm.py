#!/usr/bin/python3
"""gemm.py - PyTorch's GEMM rates beside tjit's (tests/gemm_bench.c, make
gemm-bench): GFLOP/s of torch.matmul on f32 and on bf16 tensors, and of a
dynamically quantized int8 linear (torch.ao's quantize_dynamic, qint8
weights: the work of tjit's u8s8 column), for the same M x N x K shapes and
thread counts, as one markdown row per shape.

    /usr/bin/python3 benchmarks/pytorch/gemm.py [--threads N] [--cpu-time] [MxNxK ...]

Default shapes: the suite's P4 GEMMs (256x2048x1024, 256x1024x2048) and
2048^3, as gemm_bench. A[M,K] @ B[K,N]; best of several timed repetitions,
wall clock or (--cpu-time) the process's CPU time, as gemm_bench. Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import sys
import time

REPS = 7


def rate(fn, flops, clock):
    fn()   # warm-up (and oneDNN's first-call setup)
    best = float("inf")
    for _ in range(REPS):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return flops / best / 1e9


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="*", help="MxNxK (default: the suite's and 2048^3)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cpu-time", action="store_true", help="time by the process's CPU time")
    opts = ap.parse_args(argv)
    shapes = []
    for s in opts.shapes or ["256x2048x1024", "256x1024x2048", "2048x2048x2048"]:
        try:
            m, n, k = (int(v) for v in s.lower().split("x"))
        except ValueError:
            ap.error(f"'{s}' is not MxNxK")
        shapes.append((m, n, k))
    try:
        import torch
    except ImportError:
        print("gemm.py: PyTorch is missing: apt-get install python3-torch", file=sys.stderr)
        return 2
    torch.set_num_threads(opts.threads)
    torch.manual_seed(0)
    print(f"PyTorch {torch.__version__}, {opts.threads} threads, "
          f"{'CPU time' if opts.cpu_time else 'wall clock'}")
    print("| M x N x K | PyTorch f32 | PyTorch bf16 | PyTorch int8 dynamic |\n|---|---|---|---|")
    with torch.inference_mode():
        for m, n, k in shapes:
            a, b = torch.randn(m, k), torch.randn(k, n)
            a16, b16 = a.bfloat16(), b.bfloat16()
            lin = torch.nn.Linear(k, n, bias=False)
            q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin),
                                                       {torch.nn.Linear}, dtype=torch.qint8)
            flops, clock = 2.0 * m * n * k, time.process_time if opts.cpu_time else time.perf_counter
            print(f"| {m}x{n}x{k} | {rate(lambda: a @ b, flops, clock):.0f} | "
                  f"{rate(lambda: a16 @ b16, flops, clock):.0f} | "
                  f"{rate(lambda: q(a), flops, clock):.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
