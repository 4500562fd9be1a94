#!/usr/bin/env bash
# bench-dist.sh - `make bench-dist`: data-parallel training speed
# (benchmarks/dist/ddp_bench.c) for P7 and P8, at 1 and 2 ranks, over shared
# memory and over TCP (loopback, and between two network namespaces when
# they can be made), and allreduce time against size. Markdown on stdout for
# docs/distributed.md. Each rank runs its kernels on TJIT_NUM_THREADS threads
# (default 1: two ranks fill this machine's two cores).
set -u
BUILD=${BUILD:-${TJ_BUILD:-build}}
bin=$BUILD/benchmarks/dist/ddp_bench
steps=${STEPS:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none TJIT_NUM_THREADS=${TJIT_NUM_THREADS:-1}
shm="--mca btl self,vader"
tcp="--mca btl self,tcp --mca btl_tcp_if_include lo"
run() { local np=$1 net=$2; shift 2; mpirun -np "$np" --oversubscribe --bind-to none -x TJIT_NUM_THREADS $net "$bin" "$@"; }

echo "lscpu: $(lscpu | sed -n 's/^Model name: *//p'); load: $(cut -d' ' -f1-3 /proc/loadavg); TJIT_NUM_THREADS=$TJIT_NUM_THREADS"
echo
echo "| case | ranks | ms/step | steps/s | sync wait ms | one bucket ms | local ms | buckets started in backward | overlap |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in P7 P8; do
    for mode in "" --compiled; do
        run 1 "$shm" $c --steps "$steps" $mode
        run 2 "$shm" $c --steps "$steps" $mode
        run 2 "$tcp" $c --steps "$steps" $mode | sed 's/| 2 |/| 2 (tcp) |/'
    done
done
echo
echo "allreduce, 2 ranks, shared memory:"
run 2 "$shm" --allreduce
echo
echo "allreduce, 2 ranks, TCP on loopback:"
run 2 "$tcp" --allreduce
