#!/usr/bin/env bash
# check-oom.sh - the allocation-failure sweep (make check-oom; part of make test).
#
# Runs tests/oom/driver.c (tensors, eager ops, OpenBLAS, a compiled model
# called twice, .npy save and load) under tests/oom/shim.c, failing one
# allocation per run:
#   - every allocation tjit's own code makes (TJIT_OOM_SCOPE=tjit), all of them;
#   - one allocation in OOM_STRIDE (default 997) of all the process makes
#     (LLVM, libc, OpenBLAS included), starting at OOM_OFFSET (default 1).
# Each run must end in success (exit 0, values checked) or a clear error
# (exit 2 with a message), within OOM_TIMEOUT seconds, and hold no more live
# allocations of tjit's code per call site than the run where nothing fails
# (a leak). A SIGABRT after a failed allocation with LLVM on the stack is
# LLVM's own out-of-memory abort (by design) and is counted apart.
# TAP lines, then the summary line ("# summary: oom sweep: ...", which
# scripts/run-tests.sh shows under the suite's line). OOM_JOBS runs in parallel
# (default 2).
set -u
B=${TJ_BUILD:-build}
SHIM=$(realpath "$B/tests/oom/liboomshim.so")
DRIVER=$(realpath "$B/tests/oom/driver")
STRIDE=${OOM_STRIDE:-997} OFFSET=${OOM_OFFSET:-1} JOBS=${OOM_JOBS:-2} TMO=${OOM_TIMEOUT:-60}
dir=$(mktemp -d /tmp/tjit-oom.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export TJIT_NUM_THREADS=1 TJIT_CACHE=0 SHIM DRIVER TMO dir

run1() {   # scope n -> $dir/<scope>.<n>.out, last line "rc R"
    local out="$dir/$1.$2.out"
    TJIT_OOM_SCOPE=$1 TJIT_OOM_FAIL_AT=$2 LD_PRELOAD="$SHIM" timeout -s KILL "$TMO" "$DRIVER" >"$out" 2>&1
    echo "rc $?" >>"$out"
}
export -f run1

t0=$(date +%s.%N)
for scope in all tjit; do run1 "$scope" 0; done
for scope in all tjit; do
    if ! grep -q '^rc 0$' "$dir/$scope.0.out"; then
        echo "not ok 1 - the driver fails with nothing failed ($scope)"; sed 's/^/#   /' "$dir/$scope.0.out"
        echo "# summary: oom sweep: 0 points"; exit 1
    fi
done
total=$(sed -n 's/^allocations //p' "$dir/all.0.out")
ntjit=$(sed -n 's/^allocations //p' "$dir/tjit.0.out")
grep '^oom-shim: live' "$dir/all.0.out" | awk '{print $3, $4}' >"$dir/base.live"
{ seq 1 "$ntjit" | sed 's/^/tjit /'; seq "$OFFSET" "$STRIDE" "$total" | sed 's/^/all /'; } |
    xargs -P "$JOBS" -n 2 bash -c 'run1 "$0" "$1"' 2>/dev/null

ok=0 clear=0 llvm=0 bad=0 n=0 t=1
fails=""
for f in "$dir"/tjit.*.out "$dir"/all.*.out; do
    case $f in *.0.out) continue;; esac
    n=$((n + 1))
    rc=$(sed -n 's/^rc //p' "$f" | tail -1)
    name=$(basename "$f" .out)
    why=""
    case $rc in
        0) ;;
        2) grep -q '^error in .*: .\+' "$f" || why="exit 2 without a message" ;;
        134) if grep -q 'failed allocation .* in LLVM' "$f"; then llvm=$((llvm + 1)); continue; fi
             why="SIGABRT" ;;
        137) why="hang (killed after ${TMO}s)" ;;
        *) if [ "$rc" -gt 128 ]; then why="signal $((rc - 128))"; else why="exit $rc"; fi ;;
    esac
    if [ -z "$why" ]; then   # leaks: more live allocations at a call site than with nothing failed
        leak=$(grep '^oom-shim: live' "$f" | awk '{print $3, $4}' |
               awk 'NR == FNR { base[$1] = $2; next } $2 > base[$1] + 0 { print $1 " +" ($2 - base[$1]) }' \
                   "$dir/base.live" - | head -3 | tr '\n' ' ')
        [ -n "$leak" ] && why="leak at driver offset $leak"
    fi
    if [ -n "$why" ]; then
        bad=$((bad + 1))
        fails="$fails$name: $why"$'\n'
        echo "# $name: $why"; grep -v '^oom-shim: live\|^rc ' "$f" | head -5 | sed 's/^/#   /'
        continue
    fi
    [ "$rc" = 0 ] && ok=$((ok + 1)) || clear=$((clear + 1))
done
secs=$(echo "$t0 $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
if [ "$bad" -eq 0 ]; then
    echo "ok $t - $n allocation failures end in success or a clear error, no leak"
else
    echo "not ok $t - $bad of $n allocation failures crash, hang, leak or lose the message"
fi
echo "# summary: oom sweep: $n points ($ntjit tjit allocations, all; 1 in $STRIDE of $total in the process)," \
     "$ok successes, $clear clear errors, $llvm LLVM aborts, $bad failures, ${secs}s"
[ "$bad" -eq 0 ]
