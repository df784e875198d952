#!/usr/bin/env bash
# zerotron export of a checkpoint saved under expert parallelism (CTest:
# dist.checkpoint_expert_export): a Mixtral-shaped model trained 2 steps on 2 ranks as ep 2 (its
# experts split over the two data-parallel ranks) at ZeRO 1 and at ZeRO 0, each loaded as ep 1
# and saved again at the same iteration; the safetensors and config.json exported from the ep 2
# checkpoint equal, byte for byte, those of its ep 1 copy. (That the ep 1 copy holds the trained
# values is dist_checkpoint_expert's: the reshaped runs continue with the original losses.)
# usage: checkpoint_expert_export.sh ZEROTRON MPIRUN
set -euo pipefail
zt=${1:?usage: checkpoint_expert_export.sh ZEROTRON MPIRUN}
mpirun=${2:?usage: checkpoint_expert_export.sh ZEROTRON MPIRUN}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
args=(--device cpu --mock-data --vocab-size 96 --log-interval 1 --lr 1e-3 --global-batch-size 4
      --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16
      --position-embedding-type rope --normalization RMSNorm --swiglu --group-query-attention
      --num-query-groups 2 --untie-embeddings-and-output-weights --disable-bias-linear
      --attention-dropout 0 --hidden-dropout 0
      --num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 48 --reduce-bucket-size 700
      --train-iters 2)
for stage in 1 0; do
  "$mpirun" -np 2 "$zt" train "${args[@]}" --zero-stage "$stage" --expert-model-parallel-size 2 \
    --save "$work/ep2_$stage" >"$work/ep2_$stage.log" 2>&1 ||
    { tail -5 "$work/ep2_$stage.log"; fail "training at ep 2, ZeRO $stage"; }
  grep -q '"expert_model_parallel_size": 2' "$work/ep2_$stage/iter_0000002/meta.json" ||
    fail "ZeRO $stage: meta.json does not record ep 2"
  "$mpirun" -np 2 "$zt" train "${args[@]}" --zero-stage 3 --load "$work/ep2_$stage" \
    --save "$work/ep1_$stage" >"$work/ep1_$stage.log" 2>&1 ||
    { tail -5 "$work/ep1_$stage.log"; fail "loading ZeRO $stage's ep 2 checkpoint at ep 1"; }
  ! grep -q expert_model_parallel_size "$work/ep1_$stage/iter_0000002/meta.json" ||
    fail "the ep 1 copy records an expert-parallel size"
  # The safetensors metadata names the directory exported: each is exported from the same name.
  for c in ep2 ep1; do
    mv "$work/${c}_$stage" "$work/ck"
    "$zt" export --load "$work/ck" --output "$work/hf_${c}_$stage/model.safetensors" \
      >/dev/null || fail "export of $c, ZeRO $stage"
    mv "$work/ck" "$work/${c}_$stage"
  done
  cmp "$work/hf_ep2_$stage/model.safetensors" "$work/hf_ep1_$stage/model.safetensors" ||
    fail "ZeRO $stage: the ep 2 export differs from the ep 1 export of the same parameters"
  cmp "$work/hf_ep2_$stage/config.json" "$work/hf_ep1_$stage/config.json" ||
    fail "ZeRO $stage: config.json differs"
  echo "ZeRO $stage: $(stat -c %s "$work/hf_ep2_$stage/model.safetensors") bytes identical"
done
echo "PASS: exports of ep 2 checkpoints equal those of their ep 1 copies byte for byte"
