#!/usr/bin/env bash
# train --sample-interval: one sample line per interval, from rank 0 only, under tensor
# parallelism (tp 2) and under ZeRO stage 3 over 2 data-parallel ranks (every rank takes part in
# the gathers, one prints); for GPT-2 and for Llama's shape (rope, RMSNorm, SwiGLU, 2 key/value
# heads of 4, untied head, no biases).
# usage: sample_interval.sh ZEROTRON MPIRUN
set -euo pipefail
zt=${1:?usage: sample_interval.sh ZEROTRON MPIRUN}
mpirun=${2:?usage: sample_interval.sh ZEROTRON MPIRUN}
common=(train --device cpu --mock-data --vocab-size 64 --num-layers 2 --hidden-size 32
        --num-attention-heads 4 --seq-length 16 --micro-batch-size 2 --global-batch-size 4
        --train-iters 4 --lr 3e-3 --log-interval 100 --sample-interval 2)
llama="--position-embedding-type rope --normalization RMSNorm --swiglu --group-query-attention
       --num-query-groups 2 --untie-embeddings-and-output-weights --disable-bias-linear"
for arch in gpt2 llama; do
  flags=""
  if [[ $arch == llama ]]; then flags=$llama; fi
  for layout in "--tensor-model-parallel-size 2" "--zero-stage 3"; do
    # shellcheck disable=SC2086
    out=$("$mpirun" -np 2 "$zt" "${common[@]}" $layout $flags)
    lines=$(grep -c '^zerotron: sample at iteration [24]: ids [0-9,]*$' <<<"$out" || true)
    all=$(grep -c 'sample at iteration' <<<"$out" || true)
    if [[ $lines != 2 || $all != 2 ]]; then
      echo "FAIL ($arch, $layout): expected 2 sample lines (iterations 2 and 4), got $all:" >&2
      echo "$out" >&2
      exit 1
    fi
    echo "$arch, $layout: $(grep 'sample at iteration 4' <<<"$out")"
  done
done
echo PASS
