#!/usr/bin/env bash
# test-export.sh - ahead-of-time export end to end (docs/export.md): exports
# suite case P4 (the MLP) and the ONNX convnet (tests/golden/onnx) with
# `tjit export`, builds tests/aot/driver.c against each generated header and
# libtjit_rt alone, checks with ldd that no libLLVM is linked, and runs the
# driver in its own process: its results must match the exporting process's
# compiled call. Then the error paths of a deployed model: a missing file, a
# truncated one, a corrupted blob, arguments of another signature, a CPU
# without the kernels' features (TJIT_ISA=generic masks AVX-512 and AVX2). TAP lines.
#
#   BUILD=build bash scripts/test-export.sh
set -u
BUILD=${BUILD:-${TJ_BUILD:-build}}
src=$(cd "$(dirname "$0")/.." && pwd)
b=$(cd "$src/$BUILD" 2>/dev/null && pwd || echo "$BUILD")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tjit-export.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# kernels compiled once per test run (not the user's cache)
export TJIT_CACHE_DIR=$tmp/cache TJIT_NUM_THREADS=${TJIT_NUM_THREADS:-2}
n=0 bad=0
check() {   # check "what" command...: one TAP line
    local what=$1; shift
    n=$((n + 1))
    if out=$("$@" 2>&1); then echo "ok $n - $what"
    else bad=$((bad + 1)); echo "not ok $n - $what"; printf '%s\n' "$out" | sed 's/^/#   /' | head -20; fi
}
fails_with() {   # fails_with PATTERN command...: exits non-zero, output matches
    local pat=$1; shift
    local o; if o=$("$@" 2>&1); then echo "succeeded: $o"; return 1; fi
    printf '%s\n' "$o" | grep -q -- "$pat" || { echo "no '$pat' in: $o"; return 1; }
}

# export NAME SRC NARGS NRES [tjit export args...]: exports, builds the driver
export_model() {
    local name=$1 srcm=$2 na=$3 nr=$4; shift 4
    mkdir -p "$tmp/$name" &&
    "$b/tjit" export "$srcm" -o "$tmp/$name.so" --name "$name" --save-io "$tmp/$name" "$@" &&
    cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$src/include" -I"$tmp" \
        -DMODEL="$name" -DMODEL_H="\"$name.h\"" -DNARGS="$na" -DNRES="$nr" \
        "$src/tests/aot/driver.c" -o "$tmp/drv_$name" -L"$b" -ltjit_rt -Wl,-rpath,"$b" -lm
}
no_llvm() { ! ldd "$1" | grep -i llvm && ldd "$1" | grep -q libtjit_rt; }

check "export P4 (MLP), build its driver on libtjit_rt" export_model p4 P4 1 1
check "P4's driver links no libLLVM (ldd)" no_llvm "$tmp/drv_p4"
check "P4 in its own process matches the compiled call" "$tmp/drv_p4" "$tmp/p4.so" "$tmp/p4" 1e-5
check "export the ONNX convnet, build its driver" export_model convnet \
    "$src/tests/golden/onnx/convnet.onnx" 1 1 --in "$src/tests/golden/onnx/convnet.in0.npy"
check "convnet's driver links no libLLVM (ldd)" no_llvm "$tmp/drv_convnet"
check "convnet in its own process matches the compiled call" "$tmp/drv_convnet" "$tmp/convnet.so" "$tmp/convnet" 1e-5

check "a missing file is an error" fails_with "cannot open" "$tmp/drv_p4" "$tmp/none.so" "$tmp/p4"
head -c 3000 "$tmp/p4.so" > "$tmp/trunc.so"
check "a truncated file is an error" fails_with "cannot open" "$tmp/drv_p4" "$tmp/trunc.so" "$tmp/p4"
# one byte of the blob's payload flipped (after its 32-byte header)
off=$(grep -obUaP 'TJITAOT1' "$tmp/p4.so" | head -1 | cut -d: -f1)
cp "$tmp/p4.so" "$tmp/bad.so" && printf '\xff' | dd of="$tmp/bad.so" bs=1 seek=$((off + 100)) conv=notrunc 2>/dev/null
check "a corrupted blob fails its checksum" fails_with "checksum" "$tmp/drv_p4" "$tmp/bad.so" "$tmp/p4"
check "arguments of another signature are refused" fails_with "no exported signature takes" \
    "$tmp/drv_p4" "$tmp/p4.so" "$tmp/convnet"
if grep -q avx512f /proc/cpuinfo; then
    check "a CPU without AVX-512 (TJIT_ISA=generic) is refused" fails_with "lacks features.*avx512f" \
        env TJIT_ISA=generic "$tmp/drv_p4" "$tmp/p4.so" "$tmp/p4"
elif grep -q avx2 /proc/cpuinfo; then
    check "a CPU without AVX2 (TJIT_ISA=generic) is refused" fails_with "lacks features.*avx2" \
        env TJIT_ISA=generic "$tmp/drv_p4" "$tmp/p4.so" "$tmp/p4"
fi
printf '%s\n' "$out" | sed -n 's/^ms: /# summary: P4 driver ms: /p' | head -1
[ "$bad" -eq 0 ]
