# shellcheck shell=bash disable=SC2034 # variables set here are read by the scripts sourcing it
# Shared by the GNU-option tests (gnuopts.sh, gnucheck.sh): suite_init, the inputs made from
# the seed (a few kinds of lines, CSV lines, equal-length lines for -c), and the helpers that
# run LC_ALL=C sort and dsort side by side. Sourced with the rank count as $1.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
suite_init "$1"
E2E_TIMEOUT=60
RUN_FLAGS=(-q)
export LC_ALL=C

D=$T/data
mkdir -p "$D" "$T/o"

# The inputs: a few thousand lines of numbers, sizes, months, versions and floats, each kind in
# its own file (so that a whole-line --sort=WORD means something), with duplicates.
python3 - "$SEED" "$D" <<'EOF'
import random, sys
rnd = random.Random(int(sys.argv[1]))
d = sys.argv[2]
def pick(*xs):
    return rnd.choice(xs)
def num():
    return pick(str(rnd.randint(-999, 999)), "%.3f" % rnd.uniform(-50, 50), " %d" % rnd.randint(0, 99),
                "0%d" % rnd.randint(0, 9), "x%d" % rnd.randint(0, 9), "", "-0", "1,234", ".5")
def human():
    return pick("%d%s" % (rnd.randint(-20, 2000), pick("", "K", "M", "G", "T", "k")),
                "%.1f%s" % (rnd.uniform(0, 10), pick("K", "M", "E")), "junk", "", " 7M")
def month():
    return pick("JAN", "feb", " Mar", "apr ", "MAYday", "jun", "Jul", "aug", "SEP", "oct", "Nov",
                "dec", "xyz", "", "ja") + pick("", " %d" % rnd.randint(1, 31))
def version():
    return pick("%d.%d.%d" % (rnd.randint(0, 3), rnd.randint(0, 12), rnd.randint(0, 12)),
                "v%d" % rnd.randint(0, 20), "1.0~rc%d" % rnd.randint(1, 3), "foo-1.%d.tar.gz" % rnd.randint(0, 20),
                "a%02d" % rnd.randint(0, 20), "", "1.2a", "1.2.0")
def general():
    return pick("%ge%d" % (rnd.uniform(-9, 9), rnd.randint(-5, 5)), "inf", "-inf", "nan", "0x1p%d" % rnd.randint(0, 4),
                str(rnd.randint(-100, 100)), "abc", "", "+1.5")
for name, f in (("num", num), ("human", human), ("month", month), ("version", version), ("general", general)):
    lines = [f() for _ in range(500)]
    lines += [rnd.choice(lines) for _ in range(100)]
    rnd.shuffle(lines)
    with open("%s/%s" % (d, name), "w") as out:
        out.write("".join(l + "\n" for l in lines))
# CSV lines for keys: "name,num,month,version"
with open("%s/csv" % d, "w") as out:
    for _ in range(600):
        out.write("%s,%s,%s,%s\n" % (pick("ann", "Bob", "cy", "dee"), num(), month().strip(), version()))
EOF
KINDS=(num human month version general)

# gnu OUT ARG...: LC_ALL=C sort ARG... with stdout to OUT (unless -o is among the ARGs); the
# status in GRC, stderr in $T/gnu.err.
gnu() {
    local out=$1
    shift
    sort "$@" >"$out" 2>"$T/gnu.err" </dev/null
    GRC=$?
}

# said FILE PROG [LINES]: the first LINES (default 1) lines of FILE from the first "PROG: " on,
# that prefix removed (mpirun's own lines before it are skipped).
said() {
    sed -n "/^$2: /,\$p" "$1" | head -n "${3:-1}" | sed "1s/^$2: //"
}

# same WHAT EXPECTED ACTUAL: byte-identical files (ACTUAL must exist).
same() {
    CHECKS=$((CHECKS + 1))
    if [ ! -f "$3" ]; then
        fail "$1: $3 was not written"
        return 1
    fi
    if ! cmp -s "$2" "$3"; then
        fail "$1: dsort's output differs from GNU sort's: $(cmp "$2" "$3" 2>&1 | head -n 1)"
        diff "$2" "$3" | head -n 10 | sed 's/^/  | /' >&2
        return 1
    fi
}

# split_args DSORT_ARG... -- SORT_ARG...: into the caller's (local) arrays dargs and sargs.
split_args() {
    while [ "$1" != -- ]; do
        dargs+=("$1")
        shift
    done
    shift
    sargs=("$@")
}

# agree WHAT DSORT_ARG... -- SORT_ARG...: GNU sort prints $T/gnu.out, dsort --format lines
# writes $T/o/d.out; both exit 0 and the outputs are identical. No temp files left.
agree() {
    local what=$1 dargs=() sargs=()
    shift
    split_args "$@"
    gnu "$T/gnu.out" "${sargs[@]}"
    eq "$what: GNU sort's exit status ($(head -n 1 "$T/gnu.err"))" 0 "$GRC"
    rm -f "$T/o/d.out"
    ok "$N" "$DSORT" --format lines "${dargs[@]}" -o "$T/o/d.out" &&
        same "$what" "$T/gnu.out" "$T/o/d.out"
    eq "$what: files left in \$TMPDIR" "" "$(ls -A "$TMPDIR")"
}

# refuse WHAT WANT_RC LINES DSORT_ARG... -- SORT_ARG...: both fail (GNU with any non-zero
# status when WANT_RC is "any", else WANT_RC too; dsort always 2), print the same first LINES
# lines of error (without their program name), and dsort writes nothing: $T/o/r.out (named by
# the caller with -o where it wants one) does not appear, $T/o/keep keeps its contents.
refuse() {
    local what=$1 want=$2 lines=$3 dargs=() sargs=()
    shift 3
    split_args "$@"
    rm -f "$T/o/r.out" "$T/gnu.out"
    echo keep >"$T/o/keep"
    gnu "$T/gnu.out" "${sargs[@]}"
    if [ "$want" = any ]; then
        cond "$what: GNU sort fails (exit status $GRC)" "$GRC != 0"
    else
        eq "$what: GNU sort's exit status" "$want" "$GRC"
    fi
    local gmsg
    gmsg=$(said "$T/gnu.err" sort "$lines")
    rm -f "$T/o/r.out"
    expect_rc 2 "$N" "$DSORT" "${dargs[@]}"
    eq "$what: dsort's message is GNU's" "$gmsg" "$(said "$T/stderr" dsort "$lines")"
    eq "$what: no output written by dsort" "no" "$([ -e "$T/o/r.out" ] && echo yes || echo no)"
    eq "$what: an existing file left alone" "keep" "$(cat "$T/o/keep")"
    eq "$what: nothing on dsort's stdout" "" "$(cat "$T/stdout")"
    eq "$what: files left in \$TMPDIR" "" "$(ls -A "$TMPDIR")"
}

# dsort_refuses WHAT REGEX DSORT_ARG...: a refusal of dsort's own (GNU accepts): exit 2, a
# message matching REGEX, nothing written to $T/o/r.out.
dsort_refuses() {
    local what=$1 re=$2
    shift 2
    rm -f "$T/o/r.out"
    expect_rc 2 "$N" "$DSORT" "$@"
    contains "$what: dsort's message" "$T/stderr" "$re"
    eq "$what: no output written by dsort" "no" "$([ -e "$T/o/r.out" ] && echo yes || echo no)"
}

IN1=$D/num
L=(--format lines)

# Equal-length lines as fixed records whose key is the whole record: GNU's line order.
python3 - "$SEED" "$D" <<'EOF'
import random, sys
rnd = random.Random(int(sys.argv[1]) + 1)
d = sys.argv[2]
recs = sorted("%07d\n" % rnd.randint(0, 2000) for _ in range(3000))  # duplicates included
open(d + "/c.sorted", "w").write("".join(recs))
open(d + "/c.uniq", "w").write("".join(sorted(set(recs))))
bad = list(recs)
i = rnd.randint(len(bad) // 3, len(bad) - 2)
while bad[i] == bad[i + 1]:
    i += 1
bad[i], bad[i + 1] = bad[i + 1], bad[i]
open(d + "/c.unsorted", "w").write("".join(bad))
EOF
F=(--format fixed:8:0:8)
