#!/bin/bash
# Several temp dirs (issue 3, -T repeated): two tmpfs mounts (two plain directories when not
# root) given as -T A -T B. While the sort runs, every rank has a per-job directory
# (dsort-*-rRANK, mode 0700) with run files in both, and both hold a fair share of the spilled
# bytes; afterwards nothing is left in either, and the output is right (dsort-validate count
# and checksum against dsort-gen -c). Without mount permission it uses the two directories.
# Then one of them named four times (-T A -T A -T A/ -T link-to-A): the sort runs, as GNU's.
# Usage: tempdirs.sh NRANKS
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

COUNT=300000 # 30 MB
A=$T/tmpA
B=$T/tmpB
mkdir -p "$A" "$B" "$T/out"
if mount_tmpfs "$A" 64M && mount_tmpfs "$B" 64M; then
    echo "temp dirs: two tmpfs mounts $A and $B"
else
    echo "temp dirs: two directories $A and $B ($MOUNT_WHY)"
fi
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish
SUM=$GEN_SUM
STATS=$T/stats.json

# A slowish out-of-core run (small budget and blocks: many runs) that we watch.
LAST_CMD="$MPIEXEC -q ${MPI_PREFLAGS[*]} -n $N $DSORT -S 1M --block-size 8K -T $A -T $B --stats $STATS -o $T/out/sorted.dat $T/in.dat"
kto "$EXT_TIMEOUT" "$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" -S 1M --block-size 8K \
    -T "$A" -T "$B" --stats "$STATS" -o "$T/out/sorted.dat" "$T/in.dat" \
    </dev/null >"$T/stdout" 2>"$T/stderr" &
job=$!
peakA=0
peakB=0
: >"$T/seen"
while kill -0 "$job" 2>/dev/null; do
    # Directories holding run files (with their modes), and the space used in each temp dir.
    find "$A" "$B" -mindepth 2 -maxdepth 2 -name 'run-*' -printf '%h\n' 2>/dev/null |
        sort -u | while read -r d; do
            # a directory removed between find and stat (the sort is ending) has no mode
            m=$(stat -c %a "$d" 2>/dev/null) && echo "$d $m"
        done >>"$T/seen"
    useA=$(du -sk "$A" 2>/dev/null | cut -f1)
    useB=$(du -sk "$B" 2>/dev/null | cut -f1)
    [ "${useA:-0}" -gt "$peakA" ] && peakA=$useA
    [ "${useB:-0}" -gt "$peakB" ] && peakB=$useB
    sleep 0.02
done
wait "$job"
RC=$?
echo "sort: exit $RC; peak use of $A: $peakA KB, of $B: $peakB KB"
ok_status
sort -u "$T/seen" -o "$T/seen"
echo "directories seen with run files:"
sed 's/^/  /' "$T/seen"
for ((r = 0; r < N; r++)); do
    for d in "$A" "$B"; do
        contains "rank $r had runs in a per-job directory in $d" "$T/seen" "^$d/dsort-[^/ ]*-r$r "
    done
done
eq "modes of the per-job directories" "700" "$(awk '{ print $2 }' "$T/seen" | sort -u | tr '\n' ' ' | sed 's/ $//')"
cond "both temp dirs took a fair share of the runs (peaks $peakA KB and $peakB KB)" \
    "min($peakA, $peakB) >= 0.3 * max($peakA, $peakB) and min($peakA, $peakB) > 0"
empty_dir "files left in the first temp dir" "$A"
empty_dir "files left in the second temp dir" "$B"
validate "$N" "" "$T/out/sorted.dat" "$COUNT" "$SUM"
[ -f "$STATS" ] && echo "runs per rank: $(st "$STATS" ranks runs); spill bytes: $(st "$STATS" ranks spill_bytes)"

# One directory named several times (as GNU sort takes it): the same path twice, with a
# trailing slash, and through a symbolic link: one per-job directory in it, the sort right.
ln -s "$A" "$T/link-to-A"
rm -f "$T/out/sorted.dat"
ok "$N" "$DSORT" -S 1M -T "$A" -T "$A" -T "$A/" -T "$T/link-to-A" -T "$B" -o "$T/out/sorted.dat" \
    "$T/in.dat"
validate "$N" "" "$T/out/sorted.dat" "$COUNT" "$SUM"
empty_dir "files left in the temp dir named four times" "$A"
suite_finish
