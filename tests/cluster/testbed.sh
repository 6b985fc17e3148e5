#!/usr/bin/env bash
# testbed.sh - a three-node cluster with a real Slurm on one machine, for dsort's cluster tests.
#
#   testbed.sh up [LAB]         bring it up (LAB: a new directory; default: made under
#                               $DSORT_TESTBED_BASE, else /var/tmp); prints LAB; stays up
#   testbed.sh exec LAB NODE CMD...   run CMD inside node n0, n1 or n2
#   testbed.sh down LAB         tear it down (processes, mounts, loop devices, namespaces)
#   testbed.sh sweep            tear down the test beds of dead owners (left by a SIGKILL)
#
# Or source it from a test script: tb_up [LAB] (tears down on exit), tb_exec, tb_mpirun,
# tb_sbatch, tb_wait_job, tb_job_field ... (see each function). Exit status 77 = skipped:
# namespaces, mounts, loop devices or Slurm are impossible here; the reason is printed.
#
# What a node is: a network namespace joined by a veth pair to a bridge in a "switch"
# namespace (10.200.0.1-3/24 exist only inside the namespaces; the root namespace and the
# machine's network are untouched), entered with nsenter --net plus its own UTS and mount
# namespaces (unshare --uts --mount --propagation private). Each node has its own hostname
# (n0 n1 n2), /dev/shm (a tmpfs: Open MPI's shared-memory transport breaks when nodes share
# it), /etc/hosts naming the three nodes, and its own "local disk" (a loop-mounted ext4 image,
# or a tmpfs with DSORT_TESTBED_DISK=tmpfs) at the common path $LAB/local. Everything else in
# the file system is shared, as a cluster's shared file system is: $LAB/common for data.
# One process per node (a "holder", sleep) keeps the node's namespaces; entering a node is
# nsenter -t HOLDER --net --uts --mount.
#
# Slurm: munged (own key and socket), slurmctld on n0 and one slurmd per node, inside the
# nodes, with a minimal slurm.conf (see tb_slurm_conf); jobs' final state and exit code are in
# $LAB/slurm/jobcomp.txt (jobcomp/filetxt), read by tb_wait_job.
#
# Layout of LAB:
#   owner            pid of the process that brought it up (names the namespaces)
#   nodes/NODE.pid   the node's holder; nodes/NODE.dev the loop device of its disk
#   disk/NODE        its disk mounted in the root namespace (for inspection from the host)
#   local/           where each node sees its own disk (empty in the root namespace)
#   common/          a directory every node sees (the "shared file system")
#   hostfile, rsh    Open MPI's hostfile and plm_rsh_agent (runs a command inside a node)
#   slurm/           slurm.conf, state, spool, logs, jobcomp.txt; munge/ the munge daemon's
#
# Environment: DSORT_TESTBED_DISK=ext4|tmpfs (default ext4, falling back to tmpfs when loop
# devices are impossible), DSORT_TESTBED_DISK_MB (default 1024), DSORT_TESTBED_KEEP=1 (keep
# LAB's files after tear-down, for a post-mortem), DSORT_TESTBED_NO_SLURM=1 (nodes only).

TB_NODES=(n0 n1 n2)
TB_NET=10.200.0
TB_REGISTRY=/run/dsort-testbed
TB_LAB=${TB_LAB:-}

tb_log() {
    echo "testbed: $*" >&2
}

# tb_skip REASON: this machine cannot host the test bed; exit 77 (ctest: skipped).
tb_skip() {
    echo "SKIP: cluster test bed impossible here: $*" >&2
    tb_down
    exit 77
}

tb_die() {
    echo "testbed: ERROR: $*" >&2
    tb_down
    exit 2
}

# Namespace names: unique per test bed, so that two test beds never collide.
tb_ns() {
    echo "dsortlab$(cat "$TB_LAB/owner")-$1"
}

tb_node_ip() {
    echo "$TB_NET.$((${1#n} + 1))"
}

# tb_require: root, the commands, and (with apt-get) install the packages that are missing.
tb_require() {
    [ "$(id -u)" -eq 0 ] || tb_skip "needs root (namespaces, mounts, loop devices, Slurm)"
    local need=(ip:iproute2 nsenter:util-linux unshare:util-linux losetup:mount mount:mount
        mkfs.ext4:e2fsprogs mpirun:openmpi-bin)
    if [ "${DSORT_TESTBED_NO_SLURM:-0}" != 1 ]; then
        need+=(munged:munge mungekey:munge slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client
            srun:slurm-client)
    fi
    local missing=() pkgs=() item
    for item in "${need[@]}"; do
        command -v "${item%%:*}" >/dev/null || command -v "/usr/sbin/${item%%:*}" >/dev/null ||
            { missing+=("${item%%:*}") && pkgs+=("${item#*:}"); }
    done
    if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null; then
        # slurm-wlm pulls slurmctld, slurmd, slurm-client and munge.
        [[ " ${pkgs[*]} " == *" slurm"* ]] && pkgs+=(slurm-wlm)
        tb_log "installing ${pkgs[*]} (for ${missing[*]})"
        apt-get update -qq >/dev/null 2>&1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            $(printf '%s\n' "${pkgs[@]}" | sort -u) >/dev/null 2>&1 ||
            tb_log "apt-get install failed"
    fi
    PATH=$PATH:/usr/sbin:/sbin
    for item in "${need[@]}"; do
        command -v "${item%%:*}" >/dev/null ||
            tb_skip "'${item%%:*}' is missing (Debian package ${item#*:}) and could not be installed"
    done
}

# tb_probe: can we make namespaces and mounts at all? Skip with the reason if not.
tb_probe() {
    local probe="dsortprobe$$" out
    out=$(ip netns add "$probe" 2>&1) || tb_skip "cannot create a network namespace: $out"
    ip netns del "$probe" 2>/dev/null
    out=$(unshare --uts --mount --propagation private sh -c \
        'hostname probe && mount -t tmpfs tmpfs /dev/shm' 2>&1) ||
        tb_skip "cannot make UTS and mount namespaces or mount a tmpfs in them: $out"
}

# tb_up [LAB]: bring the test bed up; tear it down when the calling shell exits.
tb_up() {
    tb_require
    tb_sweep
    tb_probe
    if [ -n "${1:-}" ]; then
        TB_LAB=$1
        mkdir -p "$TB_LAB" || tb_die "cannot make $TB_LAB"
    else
        local base=${DSORT_TESTBED_BASE:-/var/tmp}
        TB_LAB=$(mktemp -d "$base/dsort-lab.XXXXXX") || tb_die "cannot make a directory in $base"
    fi
    TB_LAB=$(cd "$TB_LAB" && pwd)
    chmod 0755 "$TB_LAB" # munged wants every directory above its socket searchable by all
    export TB_LAB
    trap 'tb_down' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    echo $$ >"$TB_LAB/owner"
    mkdir -p "$TB_REGISTRY" && echo "$TB_LAB $$" >"$TB_REGISTRY/$$"
    mkdir -p "$TB_LAB"/{nodes,disk,local,common,slurm,munge}
    local t0
    t0=$(date +%s%N)
    tb_net_up
    tb_disks_up
    tb_nodes_up
    tb_mpi_files
    if [ "${DSORT_TESTBED_NO_SLURM:-0}" != 1 ]; then
        tb_slurm_up
    fi
    tb_log "up in $((($(date +%s%N) - t0) / 1000000)) ms: $TB_LAB (disks: $TB_DISK_KIND)"
}

# The switch namespace with a bridge, one namespace per node, a veth pair from each to the
# bridge. Links are created inside the namespaces, never in the root namespace.
tb_net_up() {
    local sw node ns i
    sw=$(tb_ns sw)
    ip netns add "$sw" || tb_die "ip netns add $sw failed"
    ip -n "$sw" link add br0 type bridge || tb_die "cannot make a bridge"
    ip -n "$sw" link set br0 up
    ip -n "$sw" link set lo up
    for node in "${TB_NODES[@]}"; do
        ns=$(tb_ns "$node")
        i=${node#n}
        ip netns add "$ns" || tb_die "ip netns add $ns failed"
        ip -n "$sw" link add "v$node" type veth peer name eth0 netns "$ns" ||
            tb_die "cannot make a veth pair for $node"
        ip -n "$sw" link set "v$node" master br0
        ip -n "$sw" link set "v$node" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$(tb_node_ip "$node")/24" dev eth0
        ip -n "$ns" link set eth0 up
    done
    # A quick check that the nodes reach each other (ping is not always installed).
    ip -n "$(tb_ns n0)" route get "$(tb_node_ip n2)" >/dev/null 2>&1 ||
        tb_die "no route between the nodes"
}

# One disk per node, mounted in the root namespace at disk/NODE (each with its own st_dev).
tb_disks_up() {
    TB_DISK_KIND=${DSORT_TESTBED_DISK:-ext4}
    local mb=${DSORT_TESTBED_DISK_MB:-1024} node dev out
    for node in "${TB_NODES[@]}"; do
        mkdir -p "$TB_LAB/disk/$node"
        if [ "$TB_DISK_KIND" = ext4 ]; then
            truncate -s "${mb}M" "$TB_LAB/nodes/$node.img"
            if ! out=$(losetup -f --show "$TB_LAB/nodes/$node.img" 2>&1); then
                tb_log "no loop device ($out): the nodes' disks are tmpfs instead"
                TB_DISK_KIND=tmpfs
                rm -f "$TB_LAB/nodes/$node.img"
            else
                dev=$out
                echo "$dev" >"$TB_LAB/nodes/$node.dev"
                mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$dev" >/dev/null 2>&1 ||
                    tb_die "mkfs.ext4 $dev failed"
                out=$(mount "$dev" "$TB_LAB/disk/$node" 2>&1) || tb_skip "cannot mount $dev: $out"
                continue
            fi
        fi
        out=$(mount -t tmpfs -o "size=${mb}m,mode=0755" "tmpfs-$node" "$TB_LAB/disk/$node" 2>&1) ||
            tb_skip "cannot mount a tmpfs: $out"
    done
    # Open MPI's session directories (orte_tmpdir_base) live on each node's own disk.
    for node in "${TB_NODES[@]}"; do
        mkdir -p "$TB_LAB/disk/$node/tmp" "$TB_LAB/disk/$node/ompi"
        chmod 1777 "$TB_LAB/disk/$node/tmp"
    done
}

# Start each node's holder: it sets the hostname, mounts /dev/shm, binds the node's disk at
# LAB/local and LAB/hosts at /etc/hosts, hides the other nodes' disks, then sleeps.
tb_nodes_up() {
    {
        echo "127.0.0.1 localhost"
        local node
        for node in "${TB_NODES[@]}"; do echo "$(tb_node_ip "$node") $node"; done
    } >"$TB_LAB/hosts"
    cat >"$TB_LAB/node-init" <<'EOF'
#!/bin/sh
# node-init LAB NODE: runs inside the node's fresh UTS and mount namespaces, then holds them.
lab=$1 node=$2
set -e
hostname "$node"
mount -t tmpfs -o size=256m,mode=1777 "shm-$node" /dev/shm
mount --bind "$lab/disk/$node" "$lab/local"
mount --bind "$lab/hosts" /etc/hosts
for d in "$lab"/disk/*; do umount -l "$d"; done
touch "$lab/nodes/$node.ready"
exec sleep infinity
EOF
    chmod +x "$TB_LAB/node-init"
    local node pid i
    for node in "${TB_NODES[@]}"; do
        nsenter --net="/run/netns/$(tb_ns "$node")" -- \
            unshare --uts --mount --propagation private -- \
            "$TB_LAB/node-init" "$TB_LAB" "$node" </dev/null >"$TB_LAB/nodes/$node.log" 2>&1 &
        pid=$!
        echo "$pid" >"$TB_LAB/nodes/$node.pid"
    done
    for node in "${TB_NODES[@]}"; do
        for ((i = 0; i < 100; i++)); do
            [ -e "$TB_LAB/nodes/$node.ready" ] && break
            kill -0 "$(cat "$TB_LAB/nodes/$node.pid")" 2>/dev/null || break
            sleep 0.05
        done
        [ -e "$TB_LAB/nodes/$node.ready" ] ||
            tb_skip "node $node did not come up: $(cat "$TB_LAB/nodes/$node.log")"
    done
    # Each node must see its own disk at LAB/local and have its own name.
    for node in "${TB_NODES[@]}"; do
        [ "$(tb_exec "$node" hostname)" = "$node" ] || tb_die "$node has the wrong hostname"
        tb_exec "$node" mountpoint -q "$TB_LAB/local" || tb_die "$node has no disk at $TB_LAB/local"
    done
}

# tb_exec NODE CMD...: run CMD inside NODE (its network, hostname and mounts), in the current
# directory, with the current environment.
tb_exec() {
    local node=$1
    shift
    nsenter -t "$(cat "$TB_LAB/nodes/$node.pid")" --net --uts --mount --wd="$PWD" -- "$@"
}

# Open MPI's files: a hostfile (2 slots per node, like CPUs=2 in slurm.conf) and the rsh
# agent that runs "HOST CMD..." inside node HOST, as ssh would on a real cluster.
tb_mpi_files() {
    local node
    for node in "${TB_NODES[@]}"; do echo "$node slots=2"; done >"$TB_LAB/hostfile"
    cat >"$TB_LAB/rsh" <<EOF
#!/bin/sh
# Open MPI's plm_rsh_agent on the test bed: [OPTIONS] HOST CMD... runs CMD inside node HOST.
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1
shift
pid=\$(cat "$TB_LAB/nodes/\$host.pid") || exit 255
exec nsenter -t "\$pid" --net --uts --mount -- /bin/sh -c "\$*"
EOF
    chmod +x "$TB_LAB/rsh"
    # For every mpirun on the test bed, including those inside Slurm jobs (sbatch exports the
    # environment): TCP between nodes over the lab network only, session dirs on local disks.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_btl_tcp_if_include=$TB_NET.0/24 OMPI_MCA_oob_tcp_if_include=$TB_NET.0/24
    export OMPI_MCA_orte_tmpdir_base=$TB_LAB/local/ompi
    export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
}

# tb_mpirun ARGS...: mpirun on n0 (the login node) over the three nodes by the rsh agent.
tb_mpirun() {
    tb_exec n0 mpirun --hostfile "$TB_LAB/hostfile" --mca plm_rsh_agent "$TB_LAB/rsh" "$@"
}

tb_slurm_conf() {
    local s=$TB_LAB/slurm
    cat <<EOF
# Minimal Slurm for the dsort test bed (see tests/cluster/testbed.sh).
ClusterName=dsortlab
SlurmctldHost=n0($(tb_node_ip n0))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$TB_LAB/munge/munge.socket
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool/%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd-%n.pid
SlurmctldLogFile=$s/log/slurmctld.log
SlurmdLogFile=$s/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# PMIx (srun --mpi=pmix) makes its directories in TmpFS: one per node, the nodes share /tmp.
TmpFS=$s/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$s/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerParameters=sched_interval=1
KillWait=10
MinJobAge=600
MpiDefault=none
MailProg=/bin/true
NodeName=n[0-2] NodeAddr=$TB_NET.[1-3] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=lab Nodes=n[0-2] Default=YES MaxTime=INFINITE State=UP
EOF
}

tb_slurm_up() {
    local s=$TB_LAB/slurm m=$TB_LAB/munge node i out
    mkdir -p "$s"/{state,log,spool,tmp} "$m"
    chmod 0755 "$m"
    for node in "${TB_NODES[@]}"; do mkdir -p "$s/spool/$node" "$s/tmp/$node"; done
    tb_slurm_conf >"$s/slurm.conf"
    export SLURM_CONF=$s/slurm.conf
    # munge: its own key and socket; it runs on n0 and every node reaches its socket through
    # the shared file system (a socket file, not the network).
    out=$(mungekey -c -f -k "$m/munge.key" 2>&1) || tb_die "mungekey failed: $out"
    chmod 0600 "$m/munge.key"
    tb_exec n0 munged --foreground --socket="$m/munge.socket" --key-file="$m/munge.key" \
        --pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed" \
        </dev/null >"$m/munged.out" 2>&1 &
    for ((i = 0; i < 100; i++)); do
        [ -S "$m/munge.socket" ] && break
        sleep 0.05
    done
    [ -S "$m/munge.socket" ] || tb_die "munged did not start: $(cat "$m/munged.out" "$m/munged.log" 2>/dev/null)"
    tb_exec n0 slurmctld -D -i -f "$s/slurm.conf" </dev/null >"$s/log/slurmctld.out" 2>&1 &
    for node in "${TB_NODES[@]}"; do
        tb_exec "$node" slurmd -D -f "$s/slurm.conf" </dev/null >"$s/log/slurmd-$node.out" 2>&1 &
    done
    # All nodes idle: usually well under a second.
    for ((i = 0; i < 300; i++)); do
        out=$(tb_exec n0 sinfo -h -N -o '%N %t' 2>/dev/null | sort -u)
        [ "$(echo "$out" | grep -c ' idle$')" -eq ${#TB_NODES[@]} ] && return 0
        sleep 0.1
    done
    echo "sinfo: $out" >&2
    tail -n 20 "$s/log/slurmctld.log" "$s"/log/slurmd-*.log "$s"/log/*.out >&2 2>/dev/null
    tb_die "Slurm did not come up: the nodes are not idle after 30 s (logs above)"
}

# tb_kill_ns NS: end every process in network namespace NS (all were started by the test
# bed): SIGTERM, then SIGKILL for those still there after 2 s.
tb_kill_ns() {
    local ns=$1 pids i
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] || return 0
    kill -TERM $pids 2>/dev/null
    for ((i = 0; i < 40; i++)); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] || return 0
        sleep 0.05
    done
    kill -KILL $pids 2>/dev/null
    for ((i = 0; i < 40; i++)); do
        [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] || return 0
        sleep 0.05
    done
    tb_log "processes left in $ns: $(ip netns pids "$ns" | tr '\n' ' ')"
}

# tb_down [LAB]: tear down, even half-built: processes by PID (those in the namespaces, the
# holders), the disks' mounts, loop devices, namespaces; then LAB's files.
tb_down() {
    local lab=${1:-$TB_LAB}
    [ -n "$lab" ] && [ -f "$lab/owner" ] || return 0
    local owner node ns dev pid
    owner=$(cat "$lab/owner")
    for node in "${TB_NODES[@]}" sw; do
        ns="dsortlab$owner-$node"
        [ -e "/run/netns/$ns" ] && tb_kill_ns "$ns"
    done
    # Holders whose namespace was never made (a failed nsenter) are not in any lab namespace.
    for node in "${TB_NODES[@]}"; do
        pid=$(cat "$lab/nodes/$node.pid" 2>/dev/null) || continue
        kill -KILL "$pid" 2>/dev/null
    done
    for node in "${TB_NODES[@]}"; do
        if mountpoint -q "$lab/disk/$node" 2>/dev/null; then
            umount "$lab/disk/$node" 2>/dev/null || umount -l "$lab/disk/$node"
        fi
        if [ -f "$lab/nodes/$node.dev" ]; then
            dev=$(cat "$lab/nodes/$node.dev")
            # Only the loop device backed by this lab's image (the number may have been reused).
            if losetup -j "$lab/nodes/$node.img" 2>/dev/null | grep -q "^$dev:"; then
                losetup -d "$dev" 2>/dev/null || tb_log "cannot detach $dev"
            fi
        fi
    done
    for node in "${TB_NODES[@]}" sw; do
        ns="dsortlab$owner-$node"
        [ -e "/run/netns/$ns" ] && ip netns del "$ns"
    done
    rm -f "$TB_REGISTRY/$owner"
    if [ "${DSORT_TESTBED_KEEP:-0}" = 1 ]; then
        rm -f "$lab"/nodes/*.img
        tb_log "kept $lab"
    else
        rm -rf "$lab"
    fi
    [ "$lab" = "$TB_LAB" ] && TB_LAB=""
    return 0
}

# tb_sweep: tear down test beds whose keeper died without tearing down (a SIGKILL, e.g. a
# ctest timeout). $TB_REGISTRY/ID holds "LAB KEEPER_PID" of each test bed that is up.
tb_sweep() {
    local f lab keeper
    for f in "$TB_REGISTRY"/*; do
        [ -f "$f" ] || continue
        read -r lab keeper <"$f"
        kill -0 "$keeper" 2>/dev/null && continue
        tb_log "sweeping the test bed of dead process $keeper: $lab"
        tb_down "$lab"
        rm -f "$f"
    done
}

# ---- Slurm helpers (run on n0, the login node) ----

# tb_sbatch ARGS...: submit; prints the job id.
tb_sbatch() {
    tb_exec n0 sbatch --parsable "$@" | cut -d';' -f1
}

# tb_job_line JOB: the job's jobcomp record (empty while the job has not finished).
tb_job_line() {
    grep -E "^JobId=$1 " "$TB_LAB/slurm/jobcomp.txt" 2>/dev/null | tail -n 1
}

# tb_job_field JOB FIELD: a field of the job's jobcomp record, e.g. JobState, ExitCode.
tb_job_field() {
    tb_job_line "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# tb_wait_job JOB SECONDS: wait until the job's record is in the jobcomp file; 1 on timeout.
tb_wait_job() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [ -n "$(tb_job_line "$1")" ] && return 0
        sleep 0.1
    done
    return 1
}

# tb_wait_running JOB SECONDS: wait until the job is RUNNING; 1 on timeout or if it ended.
tb_wait_running() {
    local i st
    for ((i = 0; i < $2 * 10; i++)); do
        st=$(tb_exec n0 squeue -h -j "$1" -o %T 2>/dev/null)
        [ "$st" = RUNNING ] && return 0
        [ -n "$(tb_job_line "$1")" ] && return 1
        sleep 0.1
    done
    return 1
}

# tb_pids NODE NAME: pids of processes called NAME running inside NODE.
tb_pids() {
    local pid
    for pid in $(ip netns pids "$(tb_ns "$1")" 2>/dev/null); do
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && echo "$pid"
    done
}

# ---- command line ----
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -u
    cmd=${1:-}
    shift || true
    case $cmd in
    up)
        tb_up "${1:-}"
        trap - EXIT # stays up: "testbed.sh down LAB" tears it down
        # This shell is about to exit: the test bed lives as long as n0's holder, so that
        # sweep leaves it alone.
        echo "$TB_LAB $(cat "$TB_LAB/nodes/n0.pid")" >"$TB_REGISTRY/$$"
        echo "$TB_LAB"
        ;;
    exec)
        TB_LAB=$1
        shift
        tb_exec "$@"
        ;;
    down)
        tb_down "$1"
        ;;
    sweep)
        tb_sweep
        ;;
    *)
        sed -n '2,12p' "$0" >&2
        exit 2
        ;;
    esac
fi
