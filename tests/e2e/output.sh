#!/bin/bash
# Output modes: -O DIR gives one part per rank (parts may be empty) and a _SUCCESS manifest
# whose figures match the part files and dsort-gen's checksum; the parts concatenated in name
# order equal the -o output; dsort-validate accepts the directory; an existing -o file is
# replaced; no temporary file is left beside the output. Usage: output.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

# out_dir_case NAME RECORDS CHECKSUM ORACLE_FILE INPUT...: -O and -o on the same input.
out_dir_case() {
    local name=$1 records=$2 sum=$3 want=$4
    shift 4
    local d=$T/out/$name.d
    mkdir -p "$T/out"
    ok "$N" "$DSORT" -O "$d" "$@" || return
    LAST_CMD+=" (then checking $d/_SUCCESS)"
    local errs
    errs=$(py manifest "$d" "$N" 100 "$records" "$sum")
    check $? "$name: -O manifest or parts are wrong: $errs"
    local parts=()
    local i
    for ((i = 0; i < N; i++)); do parts+=("$(printf '%s/part-%05d' "$d" "$i")"); done
    cat "${parts[@]}" >"$T/cat.out" 2>/dev/null
    same_records "$name: parts concatenated vs the oracle" 100 "$want" "$T/cat.out"
    ok "$N" "$DSORT" -o "$T/out/$name.o" "$@" &&
        same_records "$name: parts concatenated vs -o" 100 "$T/out/$name.o" "$T/cat.out"
    ok "$N" "$VALIDATE" "$d" &&
        contains "$name: dsort-validate on the directory" "$T/stdout" "^Records: $records\$" &&
        contains "$name: dsort-validate on the directory" "$T/stdout" "^Checksum: $sum\$"
    # Nothing but the outputs beside them: no staging directory, no hidden temporary file.
    eq "$name: files beside the outputs" "$name.d $name.o" "$(find "$T/out" -mindepth 1 -maxdepth 1 -printf '%f\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')"
    rm -rf "$T/out"
}

gen "$N" -b $((SEED % 1000000)) 10000 "$T/bin.dat"
py sort "$T/bin.want" 100 0 10 - "$T/bin.dat"
bin_sum=$GEN_SUM
out_dir_case binary 10000 "$bin_sum" "$T/bin.want" "$T/bin.dat"

gen "$N" -a 5000 "$T/a.txt"
LC_ALL=C sort "$T/a.txt" >"$T/a.want"
out_dir_case ascii 5000 "$GEN_SUM" "$T/a.want" "$T/a.txt"

# Fewer records than ranks (empty parts when N > 2), and no records at all.
head -c 200 "$T/bin.dat" >"$T/two.dat"
py sort "$T/two.want" 100 0 10 - "$T/two.dat"
out_dir_case two 2 "$(py sum 100 "$T/two.dat" | cut -d' ' -f2)" "$T/two.want" "$T/two.dat"
: >"$T/empty.dat"
out_dir_case empty 0 0 "$T/empty.dat" "$T/empty.dat"
# Several inputs, one of them empty.
head -c 100000 "$T/bin.dat" >"$T/p1.dat"
tail -c 300 "$T/bin.dat" >"$T/p2.dat"
py sort "$T/p.want" 100 0 10 - "$T/p1.dat" "$T/empty.dat" "$T/p2.dat"
out_dir_case several 1003 "$(py sum 100 "$T/p.want" | cut -d' ' -f2)" "$T/p.want" \
    "$T/p1.dat" "$T/empty.dat" "$T/p2.dat"

# An existing -o file is replaced, atomically (no temporary left beside it).
mkdir -p "$T/rep"
head -c 5000 /dev/urandom >"$T/rep/out.dat"
ok "$N" "$DSORT" -o "$T/rep/out.dat" "$T/bin.dat" &&
    same_records "-o over an existing file" 100 "$T/bin.want" "$T/rep/out.dat"
eq "files beside the replaced output" "out.dat" "$(ls -A "$T/rep")"

# A relative -o and -O (from the output's directory), including a one-character name.
mkdir -p "$T/rel"
(cd "$T/rel" && kto 60 "$MPIEXEC" "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" -o x "$T/bin.dat" \
    </dev/null >"$T/stdout" 2>"$T/stderr")
RC=$?
LAST_CMD="cd $T/rel && $MPIEXEC ${MPI_PREFLAGS[*]} -n $N $DSORT -o x $T/bin.dat"
check $RC "relative one-character -o x failed: $(head -n 3 "$T/stderr")"
same_records "relative -o x" 100 "$T/bin.want" "$T/rel/x"
(cd "$T/rel" && kto 60 "$MPIEXEC" "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" -O d "$T/bin.dat" \
    </dev/null >"$T/stdout" 2>"$T/stderr")
RC=$?
LAST_CMD="cd $T/rel && $MPIEXEC ${MPI_PREFLAGS[*]} -n $N $DSORT -O d $T/bin.dat"
check $RC "relative one-character -O d failed: $(head -n 3 "$T/stderr")"
errs=$(py manifest "$T/rel/d" "$N" 100 10000 "$bin_sum" 2>&1)
check $? "relative -O d: $errs"

suite_finish
