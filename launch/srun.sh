#!/usr/bin/env bash
# launch/srun.sh [srun options...] <program> [args...]
# Multi-node launch under SLURM, inside an allocation (salloc / sbatch), e.g.
#   sbatch -N 4 --ntasks-per-node=8 --gpus-per-node=8 --time=12:00:00 --signal=USR1@300 --wrap \
#     "launch/srun.sh build/bin/zerotron train --tensor-model-parallel-size 8 ... \
#        --save ck --exit-signal-handler"
# Rules:
#   - One rank per GPU (CUDA backend): --ntasks-per-node = GPUs per node; a rank uses the GPU
#     numbered by its local rank (SLURM_LOCALID). On CPU clusters: a few ranks per node and
#     OMP_NUM_THREADS = cores per rank (= --cpus-per-task, set here).
#   - Tensor parallelism stays inside a node: zerotron numbers ranks tp fastest
#     (rank = tp_rank + tp*(dp_rank + dp*pp_rank)), so tp must divide --ntasks-per-node and
#     SLURM must place consecutive ranks on the same node (--distribution=block, set here).
#   - zerotron reads SLURM_PROCID / SLURM_LOCALID / SLURM_NTASKS and checks them against MPI.
# What it adds to srun:
#   --mpi=pmix      Open MPI 4.1 as Debian (and most sites) build it speaks PMIx only (ompi_info:
#                   pmix ext3x, no s1/s2), so --mpi=pmi2 gives every task a world of one.
#                   The check is `srun --mpi=list`; ZT_SRUN_MPI overrides.
#   SLURM_PMIX_FENCE=ring (unless set): PMIx fences that are barriers (below).
#   --cpu-bind=cores only when the cluster has a task plugin that binds (scontrol show config:
#                   TaskPlugin task/affinity or task/cgroup); with task/none, SLURM 22.05 prints
#                   "cluster configuration lacks support for cpu binding" and runs unbound
#                   (other versions and site wrappers refuse the step). ZT_SRUN_CPU_BIND=
#                   none|cores|... overrides.
# Stopping before the time limit (zerotron train --save DIR --exit-signal-handler): every rank
# finishes its step, saves and exits 0 on SIGTERM, SIGINT or SIGUSR1, and --load resumes with
# bitwise the same losses.
#   - At the time limit SLURM sends SIGTERM and, KillWait seconds later (`scontrol show config`,
#     30 s by default), SIGKILL: a step plus the save must fit in KillWait. Safer: ask for a
#     warning, `sbatch --signal=USR1@N` (not B:USR1, which reaches only the batch shell). SLURM
#     sends it up to a minute earlier than N (its timer), so N = time for a step + save + 60 s,
#     and the signal must not come before the ranks have started (USR1 kills a process that
#     has no handler yet): keep N well under the time limit (--time=1 with USR1@50 killed the
#     job at once in a test).
#   - `scancel --signal=TERM <job>` (or USR1) stops a job the same way, now.
# Two "nodes" on one machine (containers, network namespaces) must not share both the hostname
# and /dev/shm: Open MPI's shared-memory transport names its segments
# /dev/shm/vader_segment.<hostname>.<uid>.<job>.<local rank>, so local rank r of one node and
# local rank r of the other map the same segment and the job hangs in a collective
# ("reduce_scatter on group dp timed out") or segfaults. Give each its own hostname (UTS
# namespace) or its own /dev/shm and /tmp, as real nodes have; likewise each slurmd needs its own
# PMIxCliTmpDirBase (mpi.conf), or steps fail with "Cannot create directory spmix_appdir_...:
# File exists". tests/multinode/slurm_cluster.sh builds such a cluster (ZTS_SHARED=1: the
# broken layout), tests/multinode/srun_train.sh runs zerotron on it (ctest -L slurm).
set -euo pipefail
cpus=${SLURM_CPUS_PER_TASK:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$cpus}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$cpus}
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296}
# The PMI that Open MPI speaks: pmix (Open MPI 4.1 as Debian builds it has no PMI-1/PMI-2).
mpi=${ZT_SRUN_MPI:-}
if [[ -z "$mpi" ]]; then
  mpi=pmix
  if ! srun --mpi=list 2>&1 | grep -qw pmix; then
    echo "launch/srun.sh: this SLURM has no pmix plugin (srun --mpi=list); Open MPI needs it" \
      "(set ZT_SRUN_MPI to override)" >&2
    exit 2
  fi
fi
# CPU binding only where a task plugin can do it: srun --cpu-bind on a cluster with
# TaskPlugin=task/none fails the step.
bind=${ZT_SRUN_CPU_BIND:-auto}
if [[ "$bind" == auto ]]; then
  bind=none
  if scontrol show config 2>/dev/null | grep -E '^TaskPlugin ' | grep -Eq 'task/(affinity|cgroup)'; then
    bind=cores
  fi
fi
# SLURM's PMIx plugin runs a fence without data (Open MPI's barrier at the end of MPI_Init) as a
# tree unless told otherwise, and on SLURM 22.05 that tree did not wait for the other node: with
# one rank starting 1.5 s late, the ranks of the first node left PMIx_Fence before the late rank
# entered it (tests/multinode/late_rank_probe). Open MPI 4.1 then sends from early ranks into
# ranks still inside MPI_Init, which segfault there (btl/tcp calls a handler not yet registered).
# On the two-node test cluster: 1 of 80 zerotron starts with SLURM's default fences, 20 of 150
# with tree for both, 0 of 100 with ring for both. The cost is at start-up only: a ring fence
# takes one hop per node. SLURM_PMIX_FENCE set by the user wins.
export SLURM_PMIX_FENCE=${SLURM_PMIX_FENCE:-ring}
flags=(--mpi="$mpi" --distribution=block:block)
[[ "$bind" != none ]] && flags+=(--cpu-bind="$bind")
exec srun "${flags[@]}" "$@"
