#!/usr/bin/env bash
# install-deps.sh - installs exactly what tjit's build and tests need, with
# apt-get, on Debian 12. Does nothing when everything is present; when not
# root, prints the command to run instead.
#
#   llvm-19-dev      LLVM 19 C API (ORC LLJIT, new pass manager) for codegen; its llvm-19
#                    dependency brings llvm-extract-19, which cuts the formula bitcode per dtype
#   clang-19         compiles the pointwise formulas (runtime/vmath.h, ops.def) to the
#                    LLVM bitcode the JIT inlines, so compiled == eager to the last ulp
#   libopenblas-dev  GEMM (loaded at run time with its AVX-512 kernels when the CPU has them)
#   libcmocka-dev    the test suites
#   libopenmpi-dev, openmpi-bin  libtjit_dist (data parallelism over MPI) and its
#                    mpirun tests; without them everything else builds and those are skipped
#   iproute2         the two-host (network namespace) test of libtjit_dist
#   make, gcc        the build
set -euo pipefail

pkgs=(make gcc llvm-19-dev clang-19 libopenblas-dev libcmocka-dev libopenmpi-dev openmpi-bin iproute2)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "tjit: missing packages: ${missing[*]}" >&2
    echo "tjit: run as root:  sudo sh -c '$cmd'" >&2
    exit 1
fi
echo "tjit: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
