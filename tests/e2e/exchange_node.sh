#!/bin/bash
# The node-aware exchange (--exchange=node) gives byte-identical output to the direct one
# (--exchange=direct): gensort in memory and out of core (several exchange waves), fixed:8:0:8
# with a small --exchange-chunk (many rounds), and text lines in memory and spilled; on the
# machine's own node and on virtual nodes of 1, 2 and 3 ranks (DSORT_EXCHANGE_RANKS_PER_NODE,
# a testing aid; 0 and 1 for one input only). --stats must say which path each run took. Usage: exchange_node.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

# by_node STATS: "exchanges exchanges_by_node" summed over the ranks.
by_node() {
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["per_rank"]; print(sum(x["exchanges"] for x in r), sum(x["exchanges_by_node"] for x in r))' "$1"
}

# same NAME OPTS INPUT [GROUPINGS]: sort INPUT with OPTS directly and by node (on virtual nodes
# of each of GROUPINGS ranks, default 2 and 3; 0: the machine's own node); outputs must be
# identical.
same() {
    local name=$1 opts=$2 input=$3 groupings=${4:-2 3} per moves nodes
    rm -f "$T/direct.out" "$T/stats.json"
    # shellcheck disable=SC2086
    ok "$N" "$DSORT" $opts --exchange=direct --stats "$T/stats.json" -o "$T/direct.out" "$input" || return
    read -r moves nodes <<<"$(by_node "$T/stats.json")"
    eq "$name: --exchange=direct took the node path" 0 "$nodes"
    for per in $groupings; do
        rm -f "$T/node.out" "$T/stats.json"
        if [ "$per" = 0 ]; then unset DSORT_EXCHANGE_RANKS_PER_NODE; else export DSORT_EXCHANGE_RANKS_PER_NODE=$per; fi
        # shellcheck disable=SC2086
        ok "$N" "$DSORT" $opts --exchange=node --stats "$T/stats.json" -o "$T/node.out" "$input" || continue
        read -r moves nodes <<<"$(by_node "$T/stats.json")"
        eq "$name ($per ranks a node): every exchange by node" "$moves" "$nodes"
        cmp -s "$T/direct.out" "$T/node.out"
        check $? "$name ($per ranks a node): --exchange=node output differs from --exchange=direct"
    done
    unset DSORT_EXCHANGE_RANKS_PER_NODE
}

gen "$N" -b $((SEED % 1000000)) 20000 "$T/bin.dat"
same "gensort in memory" "" "$T/bin.dat" "0 1 2 3"
same "gensort out of core" "--out-of-core -S 1M" "$T/bin.dat"
same "gensort -r -s, chunk 1000" "-r -s --exchange-chunk 1000" "$T/bin.dat"
py mk "$T/f8.dat" 8 0 8 20000 dup "$SEED"
same "fixed:8:0:8, chunk 150" "--format fixed:8:0:8 --exchange-chunk 150" "$T/f8.dat"
python3 "$(dirname "$0")/../lines_gen.py" --seed "$SEED" --profile mixed --lines 20000 >"$T/lines.txt" ||
    die "lines_gen.py failed"
same "lines" "--format lines" "$T/lines.txt"
same "lines spilled, -k2,2n" "--format lines -k2,2n -S 1M" "$T/lines.txt"
# The same output as GNU sort, by node.
ok "$N" "$DSORT" --format lines --exchange=node -o "$T/node.out" "$T/lines.txt" &&
    LC_ALL=C sort "$T/lines.txt" >"$T/gnu.out" && cmp -s "$T/gnu.out" "$T/node.out"
check $? "lines by node differ from LC_ALL=C sort"

suite_finish
