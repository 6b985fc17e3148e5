# shellcheck shell=bash
# shape.sh - a slow, real network on the cluster test bed (issue 27): each node's link shaped
# with a token bucket, so that the exchange between nodes is limited by a known rate.
# Sourced after testbed.sh (needs TB_LAB, tb_ns). tc runs inside the nodes' network namespaces
# (tc -n NS): the machine's own network is untouched, and tb_down deletes the namespaces and
# with them the qdiscs.
#
#   tb_shape RATE [NODE...]   every NODE's eth0 (default: all) sends at most RATE (tc's syntax:
#                             2gbit, 200mbit); a node's receiving side is the others' sending
#                             side, so with every node shaped each direction of a link is RATE
#   tb_shape_show NODE        the qdisc on NODE's eth0 (tc qdisc show)
#   tb_rate_mbps RATE         RATE in MB/s (10^6 bytes): 2gbit -> 250

# tb_shape RATE [NODE...]: 1 with the reason on stderr if tc is missing or refuses (no sch_tbf).
# The bucket is $TB_BURST (tc's units, 1mb unless set): a burst that size passes at line rate
# after the link was idle, so a job that exchanges in several rounds beats RATE by up to one
# bucket a round.
tb_shape() {
    local rate=$1 node out
    shift
    command -v tc >/dev/null || PATH=$PATH:/usr/sbin:/sbin
    command -v tc >/dev/null || { echo "tb_shape: tc is missing (Debian package iproute2)" >&2 && return 1; }
    [ $# -gt 0 ] || set -- "${TB_NODES[@]}"
    for node in "$@"; do
        # burst: at least 64 KB (TSO hands veth 64 KB segments); latency bounds the queue.
        out=$(tc -n "$(tb_ns "$node")" qdisc replace dev eth0 root tbf rate "$rate" burst "${TB_BURST:-1mb}" \
            latency 100ms 2>&1) || { echo "tb_shape: tc on $node: $out" >&2 && return 1; }
    done
}

tb_shape_show() {
    tc -n "$(tb_ns "$1")" qdisc show dev eth0
}

tb_rate_mbps() {
    python3 -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)([kmg]?)(bit|bps)", sys.argv[1].lower())
if not m:
    sys.exit("tb_rate_mbps: cannot read rate " + sys.argv[1])
v = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
v /= 8 if m.group(3) == "bit" else 1
print("%g" % (v / 1e6))' "$1"
}
