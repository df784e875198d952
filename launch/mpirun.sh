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
# Extra mpirun options can be passed in ZT_MPIRUN_ARGS. For several nodes use launch/srun.sh
# (SLURM) or mpirun --hostfile (launch/hostfile.example).
set -euo pipefail
if [[ $# -lt 3 || "$1" != "-np" ]]; then
  echo "usage: launch/mpirun.sh -np N <program> [args...]" >&2
  exit 2
fi
np=$2
shift 2
if ! [[ "$np" =~ ^[1-9][0-9]*$ ]]; then
  echo "launch/mpirun.sh: -np needs a positive integer, got '$np'" >&2
  exit 2
fi
cores=$(nproc 2>/dev/null || echo 1)
threads=$((cores / np))
((threads < 1)) && threads=1
flags=(-np "$np" --oversubscribe --bind-to none --mca btl self,vader)
[[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
# Oversubscribed ranks must yield the core while they wait in MPI, or they spin against each other.
((np > cores)) && flags+=(--mca mpi_yield_when_idle 1)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$threads}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$threads}
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296}
if [[ -n "${ZT_MPIRUN_VERBOSE:-}" ]]; then
  # shellcheck disable=SC2086
  exec mpirun "${flags[@]}" \
    -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS -x GLIBC_TUNABLES \
    ${ZT_MPIRUN_ARGS:-} "$@"
fi
# Open MPI's help messages are blocks between lines of dashes; a block naming a non-zero exit
# status is dropped, every other line passes at once (flushed, so ranks' lines keep their order).
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
# stdout goes straight through (fd 3); only stderr is filtered; the exit status is mpirun's.
exec 3>&1
set +e
# shellcheck disable=SC2086
mpirun "${flags[@]}" \
  -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS -x GLIBC_TUNABLES \
  ${ZT_MPIRUN_ARGS:-} "$@" 2>&1 1>&3 3>&- | drop_exit_banners >&2
exit "${PIPESTATUS[0]}"
