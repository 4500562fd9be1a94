#!/usr/bin/env bash
# bench-compare.sh - tjit eager vs PyTorch eager on the benchmark suite, side by side,
# and tjit compiled vs the strongest of PyTorch eager and TorchScript.
#
#   scripts/bench-compare.sh [CASE...] [--threads N] [--iters N] [--min-time S] [--rounds R]
#   make bench-compare [BENCH_ARGS="..."]
#
# Builds tjit, runs `tjit bench --json --save DIR` and then
# benchmarks/pytorch/suite.py --json --check DIR (Debian's /usr/bin/python3 with
# python3-torch) with the same threads (default: nproc) and options, then the
# same with --torchscript (inference traced, frozen and optimized for inference;
# training with its forward traced), and prints a table with the ratio
# tjit/PyTorch per case, tjit compiled over the faster of PyTorch eager and
# TorchScript (the strongest peer), and max |tjit - torch| of the
# results on the same inputs: plain text on stderr, markdown on stdout (the
# table of docs/perf.md). --rounds R repeats both runs R times, alternating,
# and keeps each case's best median (a shared machine's load comes and goes).
# Also draws build/bench/speedup.png (gnuplot): per case, the speedup of tjit
# eager and tjit compiled over PyTorch eager (= 1). gnuplot is installed
# (apt-get install gnuplot-nox) when missing and root; otherwise the chart is
# skipped with the command to run.
# Exit 1 when PyTorch is missing or a run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
BUILD=${BUILD:-build}
TJIT=${TJIT:-$BUILD/tjit}   # the tjit binary to measure

# PyTorch (Debian's python3-torch): installed here when missing and root.
if ! "$PY" -c 'import torch' 2>/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "bench-compare: installing python3-torch" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y python3-torch >&2 ||
            { apt-get update >&2 && apt-get install -y python3-torch >&2; } || true
    fi
    if ! "$PY" -c 'import torch' 2>/dev/null; then
        echo "bench-compare: PyTorch is missing for $PY; install it with:" >&2
        echo "    sudo apt-get install python3-torch" >&2
        exit 1
    fi
fi

threads=$(nproc) rounds=1
cases=() opts=()
while [ $# -gt 0 ]; do
    case $1 in
    --threads) threads=${2:?--threads needs a count}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a count}; shift 2 ;;
    --iters | --min-time) opts+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench-compare: unknown flag '$1'" >&2; exit 2 ;;
    *) cases+=("$1"); shift ;;
    esac
done

# The chart's gnuplot (not a build or test dependency: scripts/install-deps.sh leaves it).
chart=$BUILD/bench/speedup.png
if ! command -v gnuplot >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "bench-compare: installing gnuplot-nox for the chart" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y gnuplot-nox >&2 ||
            { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y gnuplot-nox >&2; } ||
            echo "bench-compare: could not install gnuplot-nox; no chart" >&2
    else
        echo "bench-compare: gnuplot is missing, so no $chart; install it with:" >&2
        echo "    sudo apt-get install -y gnuplot-nox" >&2
    fi
fi

make -s all >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

trc=0 prc=0
for ((round = 1; round <= rounds; round++)); do
    echo "== round $round/$rounds: tjit bench (threads $threads)" >&2
    rc=0
    "$TJIT" bench --json --threads "$threads" --save "$tmp" ${opts[@]+"${opts[@]}"} \
        ${cases[@]+"${cases[@]}"} >>"$tmp/tjit.jsonl" || rc=$?
    [ $rc -le 1 ] || { echo "bench-compare: tjit bench exited with $rc" >&2; exit 1; }
    trc=$((trc | rc))
    echo "== round $round/$rounds: PyTorch eager (threads $threads)" >&2
    rc=0
    "$PY" benchmarks/pytorch/suite.py --json --threads "$threads" --check "$tmp" \
        ${opts[@]+"${opts[@]}"} ${cases[@]+"${cases[@]}"} >>"$tmp/torch.jsonl" || rc=$?
    [ $rc -le 1 ] || { echo "bench-compare: suite.py exited with $rc" >&2; exit 1; }
    prc=$((prc | rc))
    echo "== round $round/$rounds: TorchScript (threads $threads)" >&2
    rc=0
    "$PY" benchmarks/pytorch/suite.py --json --threads "$threads" --torchscript \
        ${opts[@]+"${opts[@]}"} ${cases[@]+"${cases[@]}"} >>"$tmp/ts.jsonl" || rc=$?
    [ $rc -le 1 ] || { echo "bench-compare: suite.py --torchscript exited with $rc" >&2; exit 1; }
    prc=$((prc | rc))
done

"$PY" - "$tmp/tjit.jsonl" "$tmp/torch.jsonl" "$rounds" "$tmp/chart.dat" "$tmp/ts.jsonl" <<'EOF'
import datetime, json, os, subprocess, sys

def load(path):
    """Per case, the record with the best median over the rounds (tjit: the
    best compiled median too, as best_compiled_ms)."""
    best, compiled = {}, {}
    with open(path) as f:
        for r in map(json.loads, filter(str.strip, f)):
            old = best.get(r["case"])
            if old is None or (r["status"] == "ok" and (old["status"] != "ok" or
                                                        r["eager_ms"] < old["eager_ms"])):
                best[r["case"]] = r
            if r.get("compiled_ms") is not None:
                compiled[r["case"]] = min(compiled.get(r["case"], r["compiled_ms"]), r["compiled_ms"])
    for case, r in best.items():
        r["best_compiled_ms"] = compiled.get(case)
    return best

tj, pt, ts = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[5])

def lscpu(field):
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((l.split(":", 1)[1].strip() for l in out.splitlines()
                 if l.startswith(field + ":")), "?")

def ms(r):
    return f"{r['eager_ms']:.3f}" if r and r["status"] == "ok" else "-"

def cms(r):
    v = r.get("best_compiled_ms") if r else None
    return f"{v:.3f}" if v is not None else "-"

def mb(r):
    return f"{r['peak_bytes'] / 1048576:.1f}" if r and r.get("peak_bytes") is not None else "-"

rows = []
for case in sorted(set(tj) | set(pt), key=lambda c: int(c[1:])):
    t, p = tj.get(case), pt.get(case)
    both = t and p and t["status"] == "ok" and p["status"] == "ok"
    ratio = t["eager_ms"] / p["eager_ms"] if both else None
    diff = p.get("check_max_abs_diff") if p else None
    s = ts.get(case)
    peers = [r["eager_ms"] for r in (p, s) if r and r["status"] == "ok"]
    tc = t.get("best_compiled_ms") if t and t["status"] == "ok" else None
    vs_best = f"{tc / min(peers):.2f}" if tc and peers else "-"
    if t and t["status"] != "ok":
        note = f"tjit {t['status']}: {t['error']}"
    elif p and p["status"] != "ok":
        note = f"pytorch {p['status']}: {p['error']}"
    else:
        note = "slower than 1.5x" if ratio and ratio > 1.5 else "ok"
    rows.append([case, (t or p)["name"], ms(t), ms(p),
                 f"{ratio:.2f}" if ratio else "-", cms(t), ms(s), vs_best, mb(t), mb(p),
                 f"{diff:.2e}" if diff is not None else "-", note])

head = ["case", "name", "tjit ms", "pytorch ms", "tjit/pytorch", "tjit compiled ms",
        "torchscript ms", "compiled/best peer", "tjit peak MB",
        "pytorch peak MB", "max abs diff", "status"]
widths = [max(len(str(r[k])) for r in rows + [head]) for k in range(len(head))]
for r in [head] + rows:
    print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip(), file=sys.stderr)
sys.stderr.flush()

any_pt = next(iter(pt.values()), {})
threads = next((r["threads"] for r in list(tj.values()) + list(pt.values())), "?")
print(f"Measured {datetime.date.today().isoformat()} on {lscpu('Model name')}, "
      f"{lscpu('Core(s) per socket')} cores x {lscpu('Socket(s)')} socket(s), "
      f"{lscpu('CPU(s)')} hardware threads; {threads} threads for both; "
      f"PyTorch {any_pt.get('torch_version', '?')} eager "
      f"(OPENBLAS_CORETYPE={any_pt.get('blas_core', '?')}). "
      f"Median ms per iteration, steady state (best of {sys.argv[3]} round(s)); tjit ms and "
      "tjit/pytorch are eager, tjit compiled ms is tj_compile + tj_call; torchscript ms is "
      "torch.jit (inference: traced, frozen, optimize_for_inference; training: the forward "
      "traced); compiled/best peer is tjit compiled over the faster of PyTorch eager and "
      "TorchScript (below 1: tjit faster); peak MB is the "
      "resident-set growth during one eager call; max abs diff is |tjit eager - torch| on the "
      "same inputs.\n")
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for r in rows:
    print("| " + " | ".join(str(v).replace("|", "\\|") for v in r) + " |")

# The chart's data: speedup over PyTorch eager (torch ms / tjit ms) per case;
# the first line is the title.
def speedup(p, t_ms):
    ok = p and p["status"] == "ok" and t_ms
    return f"{p['eager_ms'] / t_ms:.4f}" if ok else "NaN"

with open(sys.argv[4], "w") as f:
    f.write(f"# tjit vs PyTorch {any_pt.get('torch_version', '?')} eager, "
            f"{datetime.date.today().isoformat()}, {lscpu('Model name')}, {threads} threads\n")
    for case in sorted(set(tj) | set(pt), key=lambda c: int(c[1:])):
        t, p = tj.get(case), pt.get(case)
        te = t["eager_ms"] if t and t["status"] == "ok" else None
        tc = t.get("best_compiled_ms") if t else None
        name = (t or p)["name"].replace('"', "'") + ("" if te else " (no tjit)")
        f.write(f'"{case} {name}" {speedup(p, te)} {speedup(p, tc)} '
                f'{1 if p and p["status"] == "ok" else "NaN"}\n')
EOF

if command -v gnuplot >/dev/null; then
    mkdir -p "$(dirname "$chart")"
    title=$(head -1 "$tmp/chart.dat" | sed 's/^# //; s/["\\]//g')
    if gnuplot -e "out='$chart'; dat='$tmp/chart.dat'; ttl=\"$title\"" scripts/speedup.gp; then
        echo "bench-compare: chart written to $chart" >&2
    else
        echo "bench-compare: gnuplot failed; no chart" >&2
    fi
fi
[ $trc -eq 0 ] && [ $prc -eq 0 ]
