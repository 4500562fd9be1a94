#!/usr/bin/env bash
# netns-rsh.sh - Open MPI's remote launcher (plm_rsh_agent) for hosts that are
# network namespaces of this machine (scripts/test-dist-hosts.sh): called as
# `netns-rsh.sh [ssh options] HOST COMMAND...`, runs COMMAND with sh inside the
# namespace whose address is HOST (TJ_NETNS_MAP: "addr=ns addr=ns").
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done   # ssh options, if any
host=$1; shift
for pair in ${TJ_NETNS_MAP:-}; do
    [ "${pair%%=*}" = "$host" ] && exec ip netns exec "${pair#*=}" sh -c "$*"
done
echo "netns-rsh: no namespace for host $host (TJ_NETNS_MAP='${TJ_NETNS_MAP:-}')" >&2
exit 255
