#!/usr/bin/env bash
# tests/multinode/slurm_cluster.sh [command [args...]]
# A two-node SLURM cluster on this one machine, for as long as `command` runs (an interactive
# shell when none is given); everything is torn down afterwards, also on failure or Ctrl-C.
#
#   zts-ctl  10.78.0.1   munge's socket, slurmctld; `command` runs here (SLURM_CONF set)
#   zts-n1   10.78.0.11  slurmd, 2 CPUs
#   zts-n2   10.78.0.12  slurmd, 2 CPUs
#
# Each node is a network namespace (veth on a bridge inside zts-ctl; the host's network is not
# touched) plus, like a real machine, its own hostname (UTS namespace) and its own /tmp and
# /dev/shm (mount namespace). The last two matter: Open MPI names its shared-memory segments
# (btl/vader: /dev/shm/vader_segment.<hostname>.<jobid>.<local rank>) and its session
# directory (/tmp/ompi.<hostname>.<uid>) after the hostname, so two "nodes" that share the
# hostname and /dev/shm map the SAME segment for local rank 0 of node 1 and local rank 0 of
# node 2: the job hangs in a collective or crashes. ZTS_SHARED=1 builds the nodes that way
# (network namespace only) to show it.
#
# Environment:
#   ZTS_TASK_PLUGIN  TaskPlugin (default task/affinity; task/none = a cluster without binding)
#   ZTS_SHARED=1     nodes share the host's hostname, /tmp and /dev/shm (the broken layout)
#   ZTS_KEEP=1       keep the state directory (logs) after tear-down
#   ZTS_NO_INSTALL=1 do not apt-get install slurm-wlm / munge when they are missing
# Exit status: the command's; 77 (skip) when the cluster cannot be built here (not root, no
# iproute2 / unshare, slurm not installable), with the reason on stderr.
set -euo pipefail
skip() {
  echo "slurm_cluster: SKIP: $*" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (network and mount namespaces)"
for t in ip unshare nsenter; do command -v "$t" >/dev/null || skip "no $t (iproute2 / util-linux)"; done
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  if [ -n "${ZTS_NO_INSTALL:-}" ] || ! command -v apt-get >/dev/null; then
    skip "slurm-wlm / munge not installed"
  fi
  echo "slurm_cluster: installing slurm-wlm munge" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge; } \
    >/dev/null 2>&1 || skip "apt-get install slurm-wlm munge failed"
fi
ip netns list 2>/dev/null | grep -q '^zts-' && skip "namespaces zts-* exist already (another cluster running?)"

task_plugin=${ZTS_TASK_PLUGIN:-task/affinity}
nodes=(zts-n1 zts-n2)
# Not under /tmp: the nodes get their own /tmp, and they must see this directory.
D=$(mktemp -d /var/tmp/zts.XXXXXX)
chmod 755 "$D"
pids=()
# shellcheck disable=SC2317  # called by the trap
teardown() {
  local rc=$? ns p
  trap - EXIT INT TERM
  # Jobs first (their steps run under slurmstepd, not under slurmd), then every process left in
  # this cluster's namespaces (all started here), then the namespaces.
  if [ -f "$D/conf/slurm.conf" ]; then
    SLURM_CONF=$D/conf/slurm.conf timeout 5 scancel --full -u root >/dev/null 2>&1 || true
  fi
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for ns in zts-n1 zts-n2 zts-ctl; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  done
  if [ -f "$D/munge/munged.pid" ]; then kill -TERM "$(cat "$D/munge/munged.pid")" 2>/dev/null || true; fi
  sleep 0.5
  for ns in zts-n1 zts-n2 zts-ctl; do ip netns del "$ns" 2>/dev/null || true; done
  if [ -n "${ZTS_KEEP:-}" ]; then echo "slurm_cluster: state kept in $D" >&2; else rm -rf "$D"; fi
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$D"/{conf,munge,ctld,log,spool} "$D/munge/run"
for n in "${nodes[@]}"; do mkdir -p "$D/$n"/{tmp,shm,pmix} "$D/spool/$n"; chmod 1777 "$D/$n"/{tmp,shm}; done
cat >"$D/hosts" <<EOF
127.0.0.1 localhost
10.78.0.1 zts-ctl
10.78.0.11 zts-n1
10.78.0.12 zts-n2
EOF

# --- network: a bridge in zts-ctl, one veth per node
ip netns add zts-ctl
ip -n zts-ctl link set lo up
ip -n zts-ctl link add zts-br type bridge
ip -n zts-ctl addr add 10.78.0.1/24 dev zts-br
ip -n zts-ctl link set zts-br up
i=11
for n in "${nodes[@]}"; do
  ip netns add "$n"
  ip -n "$n" link set lo up
  ip -n zts-ctl link add "v-$n" type veth peer name eth0 netns "$n"
  ip -n zts-ctl link set "v-$n" master zts-br up
  ip -n "$n" addr add "10.78.0.$i/24" dev eth0
  ip -n "$n" link set eth0 up
  i=$((i + 1))
done

# --- munge (its own key and socket; the host's munged, if any, is not used)
dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$D/munge/munge.key"
munged --force --socket="$D/munge/run/munge.sock" --key-file="$D/munge/munge.key" \
  --pid-file="$D/munge/munged.pid" --log-file="$D/log/munged.log" --seed-file="$D/munge/seed" ||
  skip "munged does not start: $(tail -n 2 "$D/log/munged.log" 2>/dev/null)"

# --- slurm.conf (one per cluster) and mpi.conf
cat >"$D/conf/slurm.conf" <<EOF
ClusterName=zts
SlurmctldHost=zts-ctl(10.78.0.1)
SlurmctldPort=6917
SlurmdPort=6918
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/run/munge.sock
StateSaveLocation=$D/ctld
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/ctld/slurmctld.pid
SlurmdPidFile=$D/spool/%n/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=$task_plugin
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=30
InactiveLimit=0
MinJobAge=10
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
NodeName=zts-n1 NodeHostname=zts-n1 NodeAddr=10.78.0.11 CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
NodeName=zts-n2 NodeHostname=zts-n2 NodeAddr=10.78.0.12 CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
PartitionName=zts Nodes=zts-n[1-2] Default=YES MaxTime=INFINITE State=UP
EOF
# Each node reads its own copy (like /etc/slurm on a real node), with its own PMIx client
# directory: slurmstepd creates <PMIxCliTmpDirBase>/spmix_appdir_<uid>_<job>.<step> and fails
# the launch when it exists, i.e. when another node on a shared /tmp created it first.
for n in "${nodes[@]}"; do
  mkdir -p "$D/$n/conf"
  cp "$D/conf/slurm.conf" "$D/$n/conf/"
  echo "PMIxCliTmpDirBase=$D/$n/pmix" >"$D/$n/conf/mpi.conf"
done
export SLURM_CONF=$D/conf/slurm.conf

# A process in namespace $1 with hostname $2 ("" keeps the host's), /etc/hosts of this cluster
# and, for a node, its own /tmp and /dev/shm.
in_node() {
  local ns=$1 host=$2 own_dirs=$3
  shift 3
  local setup="mount --bind $D/hosts /etc/hosts"
  [ -n "$host" ] && setup+="; hostname $host"
  [ "$own_dirs" = 1 ] && setup+="; mount --bind $D/$ns/tmp /tmp; mount --bind $D/$ns/shm /dev/shm"
  # shellcheck disable=SC2016
  # nsenter, not `ip netns exec`: that remounts /sys, hiding /sys/fs/cgroup from slurmd.
  nsenter --net="/run/netns/$ns" unshare --mount --uts --propagation private \
    sh -c "$setup"'; exec "$@"' sh "$@"
}
in_node zts-ctl zts-ctl 0 slurmctld -D -i >"$D/log/slurmctld.out" 2>&1 &
pids+=($!)
for n in "${nodes[@]}"; do
  if [ -n "${ZTS_SHARED:-}" ]; then
    SLURM_CONF=$D/$n/conf/slurm.conf in_node "$n" "" 0 slurmd -D -N "$n" >"$D/log/slurmd.$n.out" 2>&1 &
  else
    SLURM_CONF=$D/$n/conf/slurm.conf in_node "$n" "$n" 1 slurmd -D -N "$n" >"$D/log/slurmd.$n.out" 2>&1 &
  fi
  pids+=($!)
done
ctl() { in_node zts-ctl zts-ctl 0 "$@"; }
for _ in $(seq 100); do
  [ "$(ctl sinfo -h -o '%t' 2>/dev/null | sort -u)" = "idle" ] && break
  sleep 0.3
done
if [ "$(ctl sinfo -h -o '%t' 2>/dev/null | sort -u)" != "idle" ]; then
  echo "slurm_cluster: the nodes did not come up:" >&2
  ctl sinfo >&2 || true
  tail -n 5 "$D"/log/*.log >&2 || true
  exit 1
fi
echo "slurm_cluster: up (TaskPlugin=$task_plugin${ZTS_SHARED:+, nodes sharing hostname /tmp /dev/shm}, state $D)" >&2
export ZTS_STATE=$D
if [ $# -eq 0 ]; then set -- bash -i; fi
rc=0
ctl "$@" || rc=$?
exit "$rc"
