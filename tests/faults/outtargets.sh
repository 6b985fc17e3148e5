#!/bin/bash
# Output targets that the rename commit did not fit (issue 25), in memory (root: mounts):
#   - -O DIR where DIR is an empty mount point (a tmpfs with a lost+found, and a directory
#     mounted with mount --bind): exit 0, the right parts and _SUCCESS on the mount, nothing left
#     beside it or hidden inside it (it staged on the parent and failed with EBUSY at the end);
#   - a job killed by SIGKILL while writing there: the next run sweeps its stage and succeeds;
#   - the same mount point too small for the output: exit 2, the mount point empty afterwards;
#   - -o FILE where FILE is a bind-mounted file: refused before any work (exit 2, a line saying it
#     is a mount point), FILE unchanged, no temp left;
#   - -o with a legal 250-byte name: exit 0, the right output (the temp name passed NAME_MAX and
#     the job failed blaming the name); the temp of such a job killed by SIGKILL is swept by the
#     next run; a 256-byte name: exit 2 at once, the line names the limit;
#   - --stats FILE on a full file system: exit 2 (it exited 0), the older stats file unchanged (it
#     was cut at 4 KiB), no temp left, the output committed;
#   - -o replacing a file with user.* extended attributes and an access ACL: both kept.
# Usage: outtargets.sh NRANKS
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
data mem
pipeline_args mem

# bind_mount SRC DST: mount --bind, unmounted on exit. Returns non-zero with MOUNT_WHY.
bind_mount() {
    local err
    if ! err=$(mount --bind "$1" "$2" 2>&1); then
        MOUNT_WHY="cannot bind-mount $1 on $2: $err"
        return 1
    fi
    MOUNTS+=("$2")
}

# mount_case NAME HOW: -O onto an empty mount point made by HOW (tmpfs or bind).
mount_case() {
    case_begin "-O DIR on an empty mount point ($1)" mem \
        "exit 0; the right parts and _SUCCESS on the mount; nothing beside or hidden inside it"
    local mp=$C/out/parts ok=1
    mkdir -p "$mp"
    if [ "$2" = tmpfs ]; then
        mount_tmpfs "$mp" 64M && mkdir "$mp/lost+found" || ok=0
    else
        mkdir -p "$C/src" && bind_mount "$C/src" "$mp" || ok=0
    fi
    if [ "$ok" = 0 ]; then
        case_skip "$MOUNT_WHY"
    else
        out_setup O
        run_job "$N" "${OUTARGS[@]}" "${PARGS[@]}"
        check_exit 0
        same_output
        local want="_SUCCESS part-00000 part-00001"
        [ "$2" = tmpfs ] && want="_SUCCESS lost+found part-00000 part-00001"
        [ "$N" = 2 ] && eq "files in the mount point" "$want" "$(listing "$mp")"
        eq "files beside it" parts "$(listing "$C/out")"
        [ "$2" = bind ] && eq "files in the bind mount's source" "$(listing "$mp")" "$(listing "$C/src")"
        grep -q '^dsort' "$T/stderr" && note "\"$(grep -m1 '^dsort' "$T/stderr" | short_paths | cut -c1-160)\""
    fi
    case_end
}
mount_case tmpfs tmpfs
mount_case "mount --bind" bind

case_begin "kill -9 of a job writing -O into a mount point, then a next run" mem \
    "the dead job's stage inside the mount point is swept by the next run, which succeeds"
mp=$C/out/parts
if ! mount_tmpfs "$mp" 64M; then
    case_skip "$MOUNT_WHY"
elif need_phase_hook; then
    out_setup O
    phase_hook write 1 1 0
    start_job "$N" "${OUTARGS[@]}" "${PARGS[@]}"
    if wait_ready 0; then
        kill -KILL "${READY_PID[0]}"
        wait_end
        check_exit nz
        left=$(listing "$mp")
        note "left in the mount point: $left"
        cond "a hidden stage left inside the mount point ($left)" "'$left'.startswith('.parts.dsort-')"
        FX=()
        run_job "$N" "${OUTARGS[@]}" "${PARGS[@]}"
        check_exit 0
        same_output
        [ "$N" = 2 ] && eq "files in the mount point after the next run" \
            "_SUCCESS part-00000 part-00001" "$(listing "$mp")"
    fi
fi
case_end

case_begin "-O DIR on a mount point too small for the output" mem \
    "exit 2 from the space preflight, and with DSORT_NO_SPACE_CHECK=1 from the full disk; each a line naming the rank and the cause; the mount point empty afterwards"
mp=$C/out/parts
if mount_tmpfs "$mp" 1M; then
    out_setup O
    run_job "$N" "${OUTARGS[@]}" "${PARGS[@]}"
    check_exit 2
    check_rank_line "not enough space for the output's directory"
    eq "files in the mount point (preflight)" "" "$(listing "$mp")"
    # Without the preflight the job fills the mount point; the write's ENOSPC ends it.
    DSORT_NO_SPACE_CHECK=1 run_job "$N" "${OUTARGS[@]}" "${PARGS[@]}"
    check_exit 2
    check_rank_line "No space left on device"
    eq "files in the mount point" "" "$(listing "$mp")"
    eq "files beside it" parts "$(listing "$C/out")"
else
    case_skip "$MOUNT_WHY"
fi
case_end

case_begin "-o FILE where FILE is a bind-mounted file" mem \
    "exit 2 before any work, naming the mount point; FILE unchanged; no temp left"
printf 'the old content\n' >"$C/src.dat"
out_setup o-old
if bind_mount "$C/src.dat" "$OUT_FINAL"; then
    OUT_OLD=$(sha256sum <"$OUT_FINAL") # what the mount shows
    run_job "$N" "${OUTARGS[@]}" "${PARGS[@]}"
    check_exit 2
    check_rank_line "is a mount point"
    check_final
    eq "files in the output directory" sorted.dat "$(listing "$C/out")"
    eq "the bind mount's source" "the old content" "$(cat "$C/src.dat")"
else
    case_skip "$MOUNT_WHY"
fi
case_end

case_begin "-o with a legal 250-byte name" mem "exit 0; the right output under that name; no temp left"
long=$(printf 'n%.0s' $(seq 246)).dat
OUT_KIND=o-new OUT_FINAL=$C/out/$long
run_job "$N" -o "$OUT_FINAL" "${PARGS[@]}"
check_exit 0
same_output
eq "files in the output directory" "$long" "$(listing "$C/out")"
case_end

case_begin "kill -9 of a job with a 250-byte -o name, then a next run" mem \
    "the dead job's temp (its name cut to NAME_MAX) is swept by the next run, which succeeds"
if need_phase_hook; then
    OUT_KIND=o-new OUT_FINAL=$C/out/$long
    phase_hook write 1 1 0
    start_job "$N" -o "$OUT_FINAL" "${PARGS[@]}"
    if wait_ready 0; then
        kill -KILL "${READY_PID[0]}"
        wait_end
        check_exit nz
        left=$(listing "$C/out")
        cond "one hidden temp of at most 255 bytes left by the kill (${#left} bytes: $left)" \
            "${#left} > 200 and ${#left} <= 255 and '$left'.startswith('.nnn')"
        FX=()
        run_job "$N" -o "$OUT_FINAL" "${PARGS[@]}"
        check_exit 0
        same_output
        eq "files in the output directory after the next run" "$long" "$(listing "$C/out")"
    fi
fi
case_end

case_begin "-o with a 256-byte name (over NAME_MAX)" mem \
    "exit 2 at once, the line naming the limit; nothing created"
OUT_KIND=o-new OUT_FINAL=$C/out/${long}xxxxxx
run_job "$N" -o "$OUT_FINAL" "${PARGS[@]}"
check_exit 2
check_rank_line "its name is 256 bytes, more than the 255"
eq "files in the output directory" "" "$(listing "$C/out")"
case_end

case_begin "--stats FILE on a full file system" mem \
    "exit 2 naming the stats file; the older stats file unchanged; no temp left; output committed"
sd=$C/stats
if mount_tmpfs "$sd" 64K; then
    python3 -c 'import json, sys; json.dump({"old": "x" * 20000}, open(sys.argv[1], "w"))' "$sd/s.json"
    old=$(sha256sum <"$sd/s.json")
    head -c 1M /dev/zero >"$sd/fill" 2>/dev/null # fills it up
    out_setup o-new
    run_job "$N" --stats "$sd/s.json" "${OUTARGS[@]}" "${PARGS[@]}"
    check_exit 2
    check_rank_line "cannot write stats '.*s.json'"
    eq "the older stats file's sha256" "$old" "$(sha256sum <"$sd/s.json")"
    eq "files beside the stats file" "fill s.json" "$(listing "$sd")"
    same_output
else
    case_skip "$MOUNT_WHY"
fi
case_end

case_begin "-o replacing a file with user.* xattrs and an ACL" mem \
    "exit 0; the right output; the xattrs and the ACL kept"
out_setup o-old
# An access ACL in the kernel's xattr form (no setfacl needed): user::rw-, user:65534:rw-,
# group::r--, mask::rw-, other::r--.
xattrs='import os, struct, sys
f = sys.argv[2]
if sys.argv[1] == "set":
    os.setxattr(f, "user.project", b"alpha")
    os.setxattr(f, "user.empty", b"")
    U = 0xFFFFFFFF
    e = [(1, 6, U), (2, 6, 65534), (4, 4, U), (0x10, 6, U), (0x20, 4, U)]
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *x) for x in e)
    os.setxattr(f, "system.posix_acl_access", acl)
names = sorted(n for n in os.listxattr(f) if n.startswith("user.") or n.startswith("system.posix"))
print(" ".join(n + "=" + os.getxattr(f, n).hex() for n in names))'
if before=$(python3 -c "$xattrs" set "$OUT_FINAL" 2>&1); then
    run_job "$N" "${OUTARGS[@]}" "${PARGS[@]}"
    check_exit 0
    same_output
    eq "the extended attributes afterwards" "$before" "$(python3 -c "$xattrs" get "$OUT_FINAL" 2>&1)"
    eq "the mode afterwards (ACL mask rw)" 664 "$(stat -c %a "$OUT_FINAL")"
else
    case_skip "cannot set xattrs or an ACL here: $before"
fi
case_end
suite_finish
