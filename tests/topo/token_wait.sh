#!/bin/bash
# Device stream tokens cannot hang a sort (issue 9, item 9). Two ranks read one input on a
# private tmpfs (one stream: they take turns through the slot's lock file). Checks that
#   - the lock file has the uid in its name and mode 0600;
#   - with the token held by another process (this shell, with flock(1): no heartbeat), a
#     sort with DSORT_TOKEN_WAIT_MS=1500 finishes within the bound plus slack, right, and -v
#     says once per rank that it read without its turn;
#   - a symbolic link planted at the lock name is not followed: its target (an existing file,
#     or a dangling name) is left as it was, the link stays, the sort is right.
# Root (for the mount) needed; exit 77 (skip) otherwise. Usage: token_wait.sh BIN_DIR
set -u
bin=${1:?usage: token_wait.sh BIN_DIR}
# skip (exit 77), fail (exit 1 at once: FAIL_FAST), kto and MPI_PREFLAGS are tests/lib/check.sh's.
# shellcheck disable=SC2034 # read by check.sh
FAIL_FAST=1
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
[ "$(id -u)" = 0 ] || skip "not running as root"
for tool in flock mount umount python3 timeout stat; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool is missing"
done
if [ -z "${DSORT_TOKEN_NS:-}" ] && unshare --mount --propagation private true 2>/dev/null; then
    DSORT_TOKEN_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/dsort-token-XXXXXX") || fail mktemp
mounted=""
lock=""
cleanup() {
    exec 9<&- 2>/dev/null
    [ -n "$lock" ] && rm -f "$lock"
    [ -n "$mounted" ] && { umount "$mounted" 2>/dev/null || umount -l "$mounted"; }
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
mkdir "$work/fs" "$work/spill" && mount -t tmpfs -o size=16m tmpfs "$work/fs" ||
    skip "cannot mount a tmpfs"
mounted=$work/fs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpiexec=${DSORT_MPIEXEC:-mpiexec}
run() { kto 60 "$mpiexec" -q "${MPI_PREFLAGS[@]}" "$@" 9<&-; }
sum=$(run -n 1 "$bin/dsort-gen" -a -c 30000 "$work/fs/in.txt" 2>&1 >/dev/null) || fail gen
LC_ALL=C sort "$work/fs/in.txt" >"$work/want.txt" || fail "GNU sort"

# The input's device: read by both ranks, one stream, so they take turns.
run -n 2 "$bin/dsort" --plan --json "$work/fs/in.txt" >"$work/plan.json" || fail "--plan"
key=$(python3 - "$work/plan.json" <<'PY'
import json, sys
node = json.load(open(sys.argv[1]))["nodes"][0]
devs = [d for d in node["devices"] if d["readers"] == 2 and d["streams"] == 1]
print(devs[0]["key"] if devs else "")
PY
) || fail "plan.json"
[ -n "$key" ] || { cat "$work/plan.json"; fail "no device read by both ranks with one stream"; }
safe=$(printf '%s' "$key" | tr '/:' '__')
dir=/tmp
[ -w /dev/shm ] && dir=/dev/shm
uid=$(id -u)
lock=$dir/.dsort-$uid-device-$safe-0.lock
echo "device $key, lock $lock"

# sort NAME [ENV...]: a 2-rank sort of the input with -v, checked against GNU sort.
sort_ok() {
    name=$1
    shift
    rm -f "$work/out.txt"
    t0=$(date +%s%N)
    run -n 2 env "$@" "$bin/dsort" -v -T "$work/spill" "$work/fs/in.txt" -o "$work/out.txt" \
        2>"$work/err" || { cat "$work/err"; fail "$name: dsort failed or timed out"; }
    ms=$((($(date +%s%N) - t0) / 1000000))
    cmp -s "$work/want.txt" "$work/out.txt" || fail "$name: output differs from GNU sort"
    v=$(run -n 1 "$bin/dsort-validate" "$work/out.txt") || fail "$name: validate: $v"
    echo "$v" | grep -q "Checksum: $sum" || fail "$name: checksum: $v, want $sum"
    echo "ok: $name ($ms ms)"
}

rm -f "$dir"/.dsort-*device-"$safe"-*.lock
sort_ok "plain"
[ -f "$lock" ] && [ ! -L "$lock" ] || { ls -la "$dir"; fail "no lock file $lock (uid in the name)"; }
[ "$(stat -c %a "$lock")" = 600 ] || fail "lock file mode $(stat -c %a "$lock"), want 600"
[ "$(stat -c %u "$lock")" = "$uid" ] || fail "lock file owner $(stat -c %u "$lock")"
grep -q "no turn" "$work/err" && fail "-v speaks of a missed turn with no holder: $(cat "$work/err")"

# Hold every lock file of the device (any naming), as a stopped or foreign holder would.
for f in "$dir"/.dsort-*device-"$safe"-*.lock; do
    exec 9<"$f" && flock -x -n 9 || fail "cannot hold $f"
    sort_ok "token held by another process" DSORT_TOKEN_WAIT_MS=1500
    exec 9<&-
    break # the one of this naming
done
[ "$ms" -lt 20000 ] || fail "held token: took $ms ms, bound 1500 ms"
n=$(grep -c "dsort: rank [0-9]*/2 (.*): topology: device $key: no turn after" "$work/err")
[ "$n" -ge 1 ] && [ "$n" -le 2 ] || { cat "$work/err"; fail "-v: $n lines on the missed turn"; }

# A symbolic link at the lock name, to an existing file and to a missing one.
rm -f "$lock"
printf 'keep\n' >"$work/target"
chmod 644 "$work/target"
ln -s "$work/target" "$lock"
sort_ok "symlink to a file"
[ -L "$lock" ] || fail "the symlink was replaced"
[ "$(cat "$work/target")" = keep ] && [ "$(stat -c %a "$work/target")" = 644 ] ||
    fail "the symlink's target was changed"
grep -q "symbolic link" "$work/err" || { cat "$work/err"; fail "-v does not name the refused link"; }
rm -f "$lock"
ln -s "$work/made-by-following" "$lock"
sort_ok "dangling symlink"
[ -e "$work/made-by-following" ] && fail "the dangling symlink was followed (target created)"
[ -z "$(ls -A "$work/spill")" ] || fail "temp files left: $(ls -A "$work/spill")"
echo PASS
