#!/usr/bin/env bash
# test-dist.sh - data parallelism (libtjit_dist) under mpirun on this machine:
# N ranks with per-rank batch B end with the parameters of one process with
# batch N*B (tests/dist/ddp_check.c), for SGD and Adam, several bucket sizes
# (one bucket per parameter, a few, a single one), eager and compiled
# forward, gradient accumulation; then the failures: a parameter shape that
# differs, a rank that stops (the others time out), a rank that is killed;
# and two hosts made of network namespaces (root), TCP between them.
# Prints TAP lines; skips (one "ok" line with # SKIP) without Open MPI.
#
#   BUILD=build bash scripts/test-dist.sh
set -u
BUILD=${BUILD:-${TJ_BUILD:-build}}
bin=$BUILD/tests/dist/ddp_check
if ! command -v mpirun >/dev/null || [ ! -x "$bin" ]; then
    echo "ok 1 - # SKIP no Open MPI (mpirun) or $bin not built"
    exit 0
fi
# CI runs as root; shared memory between ranks without ptrace (containers)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { local np=$1; shift; timeout 120 mpirun -np "$np" --oversubscribe --bind-to none "$@"; }
n=0 bad=0
check() {   # check "what" command...: passes when the command exits 0
    local what=$1; shift
    n=$((n + 1))
    if out=$("$@" 2>&1); then echo "ok $n - $what"; printf '%s\n' "$out" | grep '^ok ' | sed 's/^/# summary: /'
    else bad=$((bad + 1)); echo "not ok $n - $what"; printf '%s\n' "$out" | sed 's/^/#   /' | head -20; fi
}
# expect_fail "what" "message" command...: must exit non-zero, within the
# timeout, printing message
expect_fail() {
    local what=$1 msg=$2; shift 2
    n=$((n + 1))
    local t0=$SECONDS out rc
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && printf '%s' "$out" | grep -q -- "$msg"; then
        echo "ok $n - $what (exit $rc after $((SECONDS - t0)) s)"
    else bad=$((bad + 1)); echo "not ok $n - $what (exit $rc, wanted a non-zero exit and '$msg')"
        printf '%s\n' "$out" | sed 's/^/#   /' | head -20; fi
}

check "2 ranks, SGD, one bucket per parameter" mpi 2 "$bin" --opt sgd --bucket-kb 0.001
check "2 ranks, Adam, 2 KiB buckets" mpi 2 "$bin" --opt adam --bucket-kb 2
check "2 ranks, SGD, a single bucket (25 MiB)" mpi 2 "$bin" --opt sgd
check "2 ranks, Adam, compiled forward and backward" mpi 2 "$bin" --opt adam --compiled --bucket-kb 2
check "2 ranks, SGD momentum, compiled forward+backward then compiled update, 1 bucket per parameter" mpi 2 "$bin" --opt sgd --compiled-step --bucket-kb 0.001
check "2 ranks, Adam, compiled forward+backward then compiled update, 2 KiB buckets" mpi 2 "$bin" --opt adam --compiled-step --bucket-kb 2
check "2 ranks, SGD, gradient accumulation under no_sync" mpi 2 "$bin" --opt sgd --accum --bucket-kb 2
check "4 ranks (oversubscribed), SGD, one bucket per parameter" mpi 4 "$bin" --opt sgd --bucket-kb 0.001
check "4 ranks (oversubscribed), Adam, a single bucket" mpi 4 "$bin" --opt adam
check "1 rank: the same as one process" mpi 1 "$bin" --opt adam
expect_fail "a parameter shape that differs between ranks is named" "parameter 2 differs between ranks" \
    mpi 2 "$bin" --fail mismatch
expect_fail "a rank that stops: the others time out with an error" "did not complete within" \
    env TJIT_DIST_TIMEOUT=5 timeout 120 mpirun -x TJIT_DIST_TIMEOUT -np 2 --oversubscribe --bind-to none "$bin" --fail hang
expect_fail "a rank killed mid-step: the job stops" "signal 9\|exited on signal\|killed" mpi 2 "$bin" --fail kill

# Two hosts: network namespaces joined by a veth pair, TCP between them; the
# second host's daemon is started by scripts/netns-rsh.sh (Open MPI's
# plm_rsh_agent, as ssh would on a cluster). Names carry the PID, so
# concurrent runs do not meet.
nsa=tjA$$ nsb=tjB$$ va=tjva$$ vb=tjvb$$
cleanup() { ip netns del "$nsa" 2>/dev/null; ip netns del "$nsb" 2>/dev/null; }
trap cleanup EXIT
if ip netns add "$nsa" 2>/dev/null && ip netns add "$nsb" 2>/dev/null &&
   ip link add "$va" type veth peer name "$vb" 2>/dev/null &&
   ip link set "$va" netns "$nsa" && ip link set "$vb" netns "$nsb" &&
   ip -n "$nsa" addr add 10.77.0.1/24 dev "$va" && ip -n "$nsb" addr add 10.77.0.2/24 dev "$vb" &&
   ip -n "$nsa" link set "$va" up && ip -n "$nsb" link set "$vb" up &&
   ip -n "$nsa" link set lo up && ip -n "$nsb" link set lo up; then
    export TJ_NETNS_MAP="10.77.0.1=$nsa 10.77.0.2=$nsb"
    hosts() { timeout 120 ip netns exec "$nsa" mpirun --host 10.77.0.1,10.77.0.2 -np 2 \
        --mca plm_rsh_agent "$(cd "$(dirname "$0")" && pwd)/netns-rsh.sh" --mca btl tcp,self \
        --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 "$@"; }
    check "2 hosts (network namespaces, TCP), SGD, one bucket per parameter" hosts "$bin" --opt sgd --bucket-kb 0.001
    check "2 hosts (network namespaces, TCP), Adam, compiled" hosts "$bin" --opt adam --compiled --bucket-kb 2
else
    n=$((n + 1)); echo "ok $n - # SKIP two hosts: network namespaces cannot be made here (needs root and ip netns)"
fi
[ "$bad" -eq 0 ]
