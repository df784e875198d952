#!/usr/bin/env bash
# launch/mpirun.sh -np N <program> [args...]
# The working Open MPI line for one machine (a workstation, a CI runner, one cluster node):
#   - --allow-run-as-root only when running as root (containers, CI)
#   - --oversubscribe: more ranks than cores is fine for tests (8 ranks on 2 cores)
#   - --mca btl self,vader: shared memory only, no network probing
#   - --bind-to none: ranks and their OpenMP threads are not pinned to one core each
#   - GLIBC_TUNABLES: Open MPI allocates a full temporary per all-reduce / reduce-scatter; with
#     glibc's default mmap threshold every call maps and unmaps it (0.2 GB/s at 64 MiB); keeping
#     it on the heap gives ~5 GB/s.
#   - OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = cores / ranks (at least 1), unless already set.
#   - Open MPI 4.1 adds a banner ("Primary job terminated normally, but 1 process returned a
#     non-zero exit code", "mpirun detected that one or more processes exited with non-zero
#     status") whenever a rank exits non-zero, even after a clean MPI_Finalize. zerotron ends bad
#     input that way on purpose (one line, exit 2 on every rank), so those two banners are
#     dropped from mpirun's stderr; the others (a rank killed by a signal, exiting without
#     MPI_Finalize, MPI_ABORT) stay. mpirun's own -q would drop those too. ZT_MPIRUN_VERBOSE=1
#     keeps everything.
# Extra mpirun options can be passed in ZT_MPIRUN_ARGS.
#
# Several nodes: launch/mpirun.sh [--hostfile FILE] [--net-if IF] [--stop-grace S] -np N ...
#   (or ZT_HOSTFILE, ZT_NET_IF, ZT_STOP_GRACE). With a hostfile:
#   - --mca btl self,vader,tcp, and with --net-if (an interface name or a CIDR such as
#     10.1.0.0/16) btl_tcp_if_include and oob_tcp_if_include, so neither MPI traffic nor the
#     daemons' control channel wanders onto a management or container interface;
#   - --map-by slot: consecutive ranks fill a host before the next, so each tensor-parallel
#     group (consecutive ranks) stays on one host when the slots per host are a multiple of tp.
#     ZT_MPIRUN_ARGS='--map-by node' overrides it (zerotron then refuses or warns, see
#     --tp-within-node).
# Clean stop: mpirun runs in its own session, so a Ctrl-C or SIGTERM to this script's process
# group (a terminal's Ctrl-C goes to the whole foreground group) reaches this script only.
# Open MPI 4.1's mpirun answers SIGTERM/SIGINT by killing the job (SIGTERM to the ranks, SIGKILL
# odls_base_sigkill_timeout = 1 s later, exit status 1), which kills a checkpoint being written.
# It forwards SIGUSR2 to every rank on every node and otherwise leaves the job alone; zerotron
# with --save (or --exit-signal-handler; not with --no-exit-signal-handler) treats SIGUSR2 like
# SIGTERM: finish the step, save, exit 0. So when the command line says the ranks stop that way
# (the flags, or the keys of a --config / --deepspeed-config file), the first SIGTERM/SIGINT is
# sent on as SIGUSR2 and mpirun's own status (0 when every rank saved and exited 0) is this
# script's; otherwise, and at a second SIGTERM/SIGINT, or when the job is still running
# ZT_STOP_GRACE / --stop-grace seconds after the first (default 300: a step plus a save of a
# large shard to a slow disk), mpirun gets SIGTERM and the job ends in about 2 s.
set -euo pipefail
hostfile=${ZT_HOSTFILE:-}
net_if=${ZT_NET_IF:-}
grace=${ZT_STOP_GRACE:-}
while [[ $# -gt 0 && "$1" != "-np" ]]; do
  case $1 in
    --hostfile) hostfile=${2:-}; shift 2 || break ;;
    --net-if) net_if=${2:-}; shift 2 || break ;;
    --stop-grace) grace=${2:-}; shift 2 || break ;;
    *) break ;;
  esac
done
if [[ $# -lt 3 || "$1" != "-np" ]]; then
  echo "usage: launch/mpirun.sh [--hostfile FILE] [--net-if IF] [--stop-grace S] -np N <program> [args...]" >&2
  exit 2
fi
np=$2
shift 2
if ! [[ "$np" =~ ^[1-9][0-9]*$ ]]; then
  echo "launch/mpirun.sh: -np needs a positive integer, got '$np'" >&2
  exit 2
fi
if [[ -n "$hostfile" && ! -r "$hostfile" ]]; then
  echo "launch/mpirun.sh: cannot read the hostfile '$hostfile'" >&2
  exit 2
fi
if [[ -n "$grace" && ! "$grace" =~ ^[0-9]+$ ]]; then
  echo "launch/mpirun.sh: the stop grace needs whole seconds, got '$grace'" >&2
  exit 2
fi
cores=$(nproc 2>/dev/null || echo 1)
threads=$((cores / np))
((threads < 1)) && threads=1
if [[ -n "$hostfile" ]]; then
  flags=(-np "$np" --hostfile "$hostfile" --map-by slot --oversubscribe --bind-to none
    --mca btl self,vader,tcp)
  # The heartbeat: TCP keepalive on the daemons' control channel (idle while the job runs), so
  # a node cut off ends the job ("ORTE has lost communication with a remote daemon") about
  # ZT_NET_HEARTBEAT seconds after the cut, independently of --comm-timeout (which bounds one
  # collective and may be minutes). Shorter cuts than about half of it are survived.
  hb=${ZT_NET_HEARTBEAT:-20}
  if ! [[ "$hb" =~ ^[1-9][0-9]*$ ]]; then
    echo "launch/mpirun.sh: ZT_NET_HEARTBEAT needs whole seconds, got '$hb'" >&2
    exit 2
  fi
  flags+=(--mca oob_tcp_keepalive_time $((hb / 2 > 0 ? hb / 2 : 1))
    --mca oob_tcp_keepalive_intvl $((hb / 10 > 0 ? hb / 10 : 1)) --mca oob_tcp_keepalive_probes 5)
  [[ -n "$net_if" ]] && flags+=(--mca btl_tcp_if_include "$net_if" --mca oob_tcp_if_include "$net_if")
else
  flags=(-np "$np" --oversubscribe --bind-to none --mca btl self,vader)
fi
[[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
# Oversubscribed ranks must yield the core while they wait in MPI, or they spin against each other.
((np > cores)) && flags+=(--mca mpi_yield_when_idle 1)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$threads}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$threads}
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296}
# Open MPI's help messages are blocks between lines of dashes; a block naming a non-zero exit
# status is dropped, every other line passes at once (flushed, so ranks' lines keep their order).
# shellcheck disable=SC2317 # called through $filter
drop_exit_banners() {
  awk '
    /^--------------------/ { if (inblock) { block = block $0 "\n"; inblock = 0;
                   if (block !~ /exited with non-zero status|returned\na non-zero exit code/)
                     printf "%s", block;
                   fflush(); block = ""; next }
                 inblock = 1; block = $0 "\n"; next }
    inblock { block = block $0 "\n"; next }
    { print; fflush() }
    END { if (inblock) printf "%s", block }'
}
grace=${grace:-300}
# Whether the ranks stop cleanly on the forwarded SIGUSR2 (zerotron train's
# stops_cleanly_on_signal): --exit-signal-handler, or --save without --no-exit-signal-handler, as
# flags or config keys.
saves=0 handler=0 no_handler=0
# Only a regular file is read (zerotron refuses anything else: a FIFO would block grep).
config_key() { [[ -f "$1" ]] && grep -Eq "\"$2\"[[:space:]]*:[[:space:]]*$3" "$1" 2>/dev/null; }
prev=
for a in "$@"; do
  case $a in
    --save | --save=?*) saves=1 ;;
    --exit-signal-handler | --exit-signal-handler=true | --exit-signal-handler=1) handler=1 ;;
    --no-exit-signal-handler | --no-exit-signal-handler=true | --no-exit-signal-handler=1) no_handler=1 ;;
  esac
  if [[ "$prev" == --config || "$prev" == --deepspeed-config ]]; then
    config_key "$a" save '"[^"]' && saves=1
    config_key "$a" exit_signal_handler true && handler=1
    config_key "$a" no_exit_signal_handler true && no_handler=1
  fi
  prev=$a
done
clean=0
[[ "${2:-}" == train ]] && ((handler || (saves && !no_handler))) && clean=1
# stdout goes straight through (fd 3); only stderr is filtered (ZT_MPIRUN_VERBOSE=1: not even
# that); the exit status is mpirun's; the filter is deaf to the signals.
filter="drop_exit_banners"
[[ -n "${ZT_MPIRUN_VERBOSE:-}" ]] && filter="cat"
exec 3>&1
set +e
errpipe=$(mktemp -u)
mkfifo "$errpipe"
trap 'rm -f "$errpipe"' EXIT
(trap '' INT TERM; "$filter" < "$errpipe" >&2) &
filter=$!
# shellcheck disable=SC2086
setsid mpirun "${flags[@]}" \
  -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS -x GLIBC_TUNABLES \
  ${ZT_MPIRUN_ARGS:-} "$@" 2> "$errpipe" 3>&- &
run=$!
stops=0
timer=
stop() {
  stops=$((stops + 1))
  if ((stops == 1 && !clean)); then
    echo "launch/mpirun.sh: stopping the job (no clean stop: it has no --save, or has --no-exit-signal-handler)" >&2
    kill -TERM "$run" 2>/dev/null
  elif ((stops == 1)); then
    echo "launch/mpirun.sh: stopping: every rank finishes its step, saves and exits (up to ${grace} s; Ctrl-C again to abort)" >&2
    kill -USR2 "$run" 2>/dev/null
    # The timer takes its sleep with it when it is stopped early.
    (
      trap 'kill "$nap" 2>/dev/null; exit 0' TERM
      sleep "$grace" &
      nap=$!
      wait "$nap" && kill -TERM "$run" 2>/dev/null
    ) > /dev/null 2>&1 3>&- &
    timer=$!
  else
    echo "launch/mpirun.sh: aborting the job" >&2
    kill -TERM "$run" 2>/dev/null
  fi
}
trap stop INT TERM
status=0
# wait returns early (> 128) when a trapped signal arrives; wait again until mpirun is gone.
while :; do
  wait "$run"
  status=$?
  kill -0 "$run" 2>/dev/null || break
done
[[ -n "$timer" ]] && kill "$timer" 2>/dev/null
wait "$filter"
exit "$status"
