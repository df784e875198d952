#!/usr/bin/env bash
# launch/srun.sh [srun options...] <program> [args...]
# Multi-node launch under SLURM, inside an allocation (salloc / sbatch), e.g.
#   sbatch -N 4 --ntasks-per-node=8 --gpus-per-node=8 --wrap \
#     "launch/srun.sh build/bin/zerotron train --tensor-model-parallel-size 8 ..."
# Rules:
#   - One rank per GPU (CUDA backend): --ntasks-per-node = GPUs per node; a rank uses the GPU
#     numbered by its local rank (SLURM_LOCALID). On CPU clusters: a few ranks per node and
#     OMP_NUM_THREADS = cores per rank.
#   - Tensor parallelism stays inside a node: zerotron numbers ranks tp fastest
#     (rank = tp_rank + tp*(dp_rank + dp*pp_rank)), so tp must divide --ntasks-per-node and
#     SLURM must place consecutive ranks on the same node (--distribution=block, the default).
#   - zerotron reads SLURM_PROCID / SLURM_LOCALID / SLURM_NTASKS and checks them against MPI;
#     srun must start the tasks through the PMI of the same Open MPI (--mpi=pmix usually).
set -euo pipefail
cpus=${SLURM_CPUS_PER_TASK:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$cpus}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$cpus}
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296}
exec srun --mpi="${ZT_SRUN_MPI:-pmix}" --distribution=block:block --cpu-bind=cores "$@"
