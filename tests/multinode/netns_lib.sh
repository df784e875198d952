# tests/multinode/netns_lib.sh: "nodes" made of Linux namespaces, for multi-node drills on one
# machine.  source it, then:
#   ztm_require            root, iproute2, nsenter/unshare and mpirun present, else exit 77 (SKIP)
#   ztm_up N [DIR]         N nodes ztm-n1..ztm-nN: each its own network, UTS and mount namespace
#                          (hostname ztm-nK), eth0 = 10.77.0.K/24 on a bridge in namespace ztm-sw;
#                          DIR/nK/ is each node's local directory, also mounted at $ZTM_LOCAL on
#                          node K only (the same path, a different disk per node);
#                          DIR/hostfile lists the nodes
#   ztm_exec K CMD...      runs CMD on node K (its network, UTS and mount namespaces)
#   ztm_link K down|up     cuts / restores node K's link (the bridge port)
#   ztm_job_pids           processes of all nodes other than the namespace holders
#   ztm_down               removes everything (also on exit, failure and Ctrl-C: trap installed)
# Open MPI reaches the other nodes through ZTM_AGENT (tests/multinode/rsh_agent.sh), which runs
# the orted inside the named node's namespaces; mpirun itself runs on node 1 (ztm_exec 1 ...).
# Names all start with ztm and the subnet is 10.77.0.0/24, so other drills on the machine
# (SLURM's zts / 10.78) are untouched.
# shellcheck shell=bash
ZTM_DIR=${ZTM_DIR:-}
ZTM_N=0
ZTM_AGENT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/rsh_agent.sh"
export ZTM_STATE=${ZTM_STATE:-/run/ztm}
ZTM_LOCAL=${ZTM_LOCAL:-/var/tmp/ztm-local}

ztm_skip() { echo "SKIP: multinode drill: $*"; exit 77; }

ztm_require() {
  [ "$(id -u)" -eq 0 ] || ztm_skip "needs root (network and UTS namespaces)"
  for c in ip nsenter unshare mpirun; do
    command -v "$c" > /dev/null || ztm_skip "needs $c (iproute2 / util-linux / Open MPI)"
  done
  ip netns add ztm-probe 2> /dev/null || ztm_skip "cannot create a network namespace (ip netns add)"
  ip netns del ztm-probe
  unshare --uts true 2> /dev/null || ztm_skip "cannot create a UTS namespace (unshare --uts)"
}

ztm_holder() { cat "$ZTM_STATE/ztm-n$1.pid"; }

ztm_exec() {
  local k=$1
  shift
  nsenter -t "$(ztm_holder "$k")" -u -n -m --wd="$PWD" -- "$@" 9>&-
}

# The node names are fixed and ztm_down removes every ztm-* namespace with its processes, so two
# drills on one machine would tear down each other's nodes: the first ztm_up waits for the
# machine-wide lock (fd 9, held until the drill exits; ZTM_LOCK_WAIT seconds, default 1200).
ztm_lock() {
  [ -n "${ZTM_LOCKED:-}" ] && return 0
  exec 9> /run/ztm.lock
  if ! flock -n 9; then
    echo "multinode drill: waiting for another drill on this machine (/run/ztm.lock)" >&2
    flock -w "${ZTM_LOCK_WAIT:-1200}" 9 || { echo "FAIL: /run/ztm.lock still held"; exit 1; }
  fi
  ZTM_LOCKED=1
}

ztm_up() {
  local n=${1:-2} dir=${2:-}
  ztm_lock
  ztm_down keep 2> /dev/null
  trap ztm_down EXIT
  trap 'ztm_down; exit 130' INT
  trap 'ztm_down; exit 143' TERM
  mkdir -p "$ZTM_STATE"
  ZTM_N=$n
  ZTM_DIR=${dir:-$(mktemp -d /tmp/ztm.XXXXXX)}
  mkdir -p "$ZTM_DIR"
  ip netns add ztm-sw
  ip -n ztm-sw link add ztm-br0 type bridge
  ip -n ztm-sw link set ztm-br0 up
  : > "$ZTM_DIR/hostfile"
  local k
  for ((k = 1; k <= n; k++)); do
    ip netns add "ztm-n$k"
    ip link add "ztm-p$k" type veth peer name "ztm-e$k"
    ip link set "ztm-p$k" netns ztm-sw
    ip link set "ztm-e$k" netns "ztm-n$k"
    ip -n ztm-sw link set "ztm-p$k" master ztm-br0 up
    ip -n "ztm-n$k" link set "ztm-e$k" name eth0
    ip -n "ztm-n$k" addr add "10.77.0.$k/24" dev eth0
    ip -n "ztm-n$k" link set eth0 up
    ip -n "ztm-n$k" link set lo up
    # The UTS and mount namespaces live as long as this holder process: hostname ztm-nK, and
    # $ZTM_LOCAL is this node's own disk (DIR/nK), as a node-local scratch directory would be.
    mkdir -p "$ZTM_DIR/n$k" "$ZTM_LOCAL"
    ip netns exec "ztm-n$k" unshare --uts --mount --propagation private sh -c \
      "hostname ztm-n$k; mount --bind '$ZTM_DIR/n$k' '$ZTM_LOCAL' &&
       echo \$\$ > '$ZTM_STATE/ztm-n$k.pid'; exec sleep infinity" &
    disown
    echo "ztm-n$k" >> "$ZTM_DIR/hostfile"
  done
  for ((k = 1; k <= n; k++)); do
    local t=0
    while [ ! -s "$ZTM_STATE/ztm-n$k.pid" ] || [ "$(ztm_exec "$k" hostname 2> /dev/null)" != "ztm-n$k" ]; do
      sleep 0.05
      t=$((t + 1))
      ((t < 100)) || { echo "ztm_up: node $k did not come up" >&2; return 1; }
    done
    echo "10.77.0.$k ztm-n$k" >> "$ZTM_STATE/hosts"
  done
}

ztm_link() { ip -n ztm-sw link set "ztm-p$1" "$2"; }

ztm_job_pids() {
  local k p h
  for ((k = 1; k <= ZTM_N; k++)); do
    h=$(ztm_holder "$k" 2> /dev/null) || continue
    for p in $(ip netns pids "ztm-n$k" 2> /dev/null); do
      [ "$p" != "$h" ] && [ -d "/proc/$p" ] && echo "$p"
    done
  done
}

# Seconds until no process of the job is left on any node (at most $1), printed; 1 on timeout.
ztm_wait_gone() {
  local limit=$1 t0 now
  t0=$(date +%s.%N)
  while :; do
    now=$(date +%s.%N)
    [ -z "$(ztm_job_pids)" ] && { awk -v a="$t0" -v b="$now" 'BEGIN{printf "%.1f\n", b-a}'; return 0; }
    awk -v a="$t0" -v b="$now" -v l="$limit" 'BEGIN{exit !(b-a > l)}' && return 1
    sleep 0.2
  done
}

# ztm_down [keep]: with "keep" the nodes go and their directory stays (to bring them up again).
ztm_down() {
  local k p
  for ns in $(ip netns list 2> /dev/null | awk '/^ztm-/{print $1}'); do
    for p in $(ip netns pids "$ns" 2> /dev/null); do kill -9 "$p" 2> /dev/null; done
    ip netns del "$ns" 2> /dev/null
  done
  rm -rf "$ZTM_STATE"
  [ "${1:-}" != keep ] && [ -n "$ZTM_DIR" ] && [[ "$ZTM_DIR" == /tmp/ztm.* ]] && rm -rf "$ZTM_DIR"
  return 0
}
