#!/usr/bin/env bash
# bench-export.sh - cold start of exported models (docs/perf.md, Export):
# exports CASE (default P4) and the ONNX convnet, then per model RUNS times
# (default 5) a fresh driver process (tests/aot/driver.c on libtjit_rt):
# the wall time of the whole process, the driver's main-to-first-result, and
# the process's CPU time (every thread) to its first result. Against it the
# JIT with a warm kernel cache in a fresh process: `tjit export` times its
# first tj_call (trace, passes, kernels from the disk cache, the pool and
# OpenBLAS started, the run; wall and CPU), and `tjit bench --first-call`'s
# (the same after one eager run warmed the runtime; wall). Prints medians in
# ms; on a loaded machine compare the CPU figures.
#   BUILD=build bash scripts/bench-export.sh [RUNS]
set -eu
BUILD=${BUILD:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
b=$(cd "$src/$BUILD" && pwd)
runs=${1:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tjit-bench-export.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export TJIT_CACHE_DIR=$tmp/cache
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
build_model() {   # name src [tjit export args]
    local name=$1 m=$2; shift 2
    mkdir -p "$tmp/$name"
    "$b/tjit" export "$m" -o "$tmp/$name.so" --name "$name" --save-io "$tmp/$name" "$@" 2>/dev/null
    cc -std=c11 -D_GNU_SOURCE -O2 -I"$src/include" -I"$tmp" -DMODEL="$name" -DMODEL_H="\"$name.h\"" \
        -DNARGS=1 -DNRES=1 "$src/tests/aot/driver.c" -o "$tmp/drv_$name" -L"$b" -ltjit_rt -Wl,-rpath,"$b" -lm
}
cold() {   # name: wall ms of the process, main-to-first-result ms, CPU ms to it
    local name=$1 w="" f="" c=""
    for _ in $(seq "$runs"); do
        t0=$(date +%s%N)
        out=$("$tmp/drv_$name" "$tmp/$name.so" "$tmp/$name")
        t1=$(date +%s%N)
        w="$w $(( (t1 - t0) / 1000 ))"
        f="$f $(printf '%s\n' "$out" | sed -n 's/.*main to first result \([0-9.]*\).*/\1/p')"
        c="$c $(printf '%s\n' "$out" | sed -n 's/.*to its first result \([0-9.]*\).*/\1/p')"
    done
    printf 'exported %s: process wall %s ms, main to first result %s ms, CPU %s ms (medians of %s)\n' "$name" \
        "$(echo $w | tr ' ' '\n' | med | awk '{printf "%.1f", $1 / 1000}')" "$(echo $f | tr ' ' '\n' | med)" \
        "$(echo $c | tr ' ' '\n' | med)" "$runs"
}
jit() {   # name src [args]: tjit export's first compiled call, warm cache (wall, CPU)
    local name=$1 m=$2 w="" c=""; shift 2
    for _ in $(seq "$runs"); do
        out=$("$b/tjit" export "$m" -o "$tmp/jit_$name.so" --name "$name" "$@" 2>&1)
        w="$w $(printf '%s\n' "$out" | sed -n 's/.*first compiled call \([0-9.]*\) ms.*/\1/p')"
        c="$c $(printf '%s\n' "$out" | sed -n 's/.*ms, \([0-9.]*\) CPU ms.*/\1/p')"
    done
    printf 'JIT %s, warm kernel cache, first tj_call: wall %s ms, CPU %s ms (medians of %s)\n' "$name" \
        "$(echo $w | tr ' ' '\n' | med)" "$(echo $c | tr ' ' '\n' | med)" "$runs"
}
build_model p4 "${CASE:-P4}"
build_model convnet "$src/tests/golden/onnx/convnet.onnx" --in "$src/tests/golden/onnx/convnet.in0.npy"
ls -l "$tmp/p4.so" "$tmp/convnet.so" | awk '{print "# " $5 " bytes " $9}'
cold p4
cold convnet
jit p4 "${CASE:-P4}"
jit convnet "$src/tests/golden/onnx/convnet.onnx" --in "$src/tests/golden/onnx/convnet.in0.npy"
"$b/tjit" bench --first-call "${CASE:-P4}" >/dev/null   # the cache is warm after export; once more
fc=""
for _ in $(seq "$runs"); do fc="$fc $("$b/tjit" bench --first-call "${CASE:-P4}" | awk '{print $1}')"; done
printf '%s JIT first call, warm kernel cache: %s ms (median of %s)\n' "${CASE:-P4}" \
    "$(echo $fc | tr ' ' '\n' | med)" "$runs"
