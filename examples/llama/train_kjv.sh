#!/usr/bin/env bash
# A Llama-shaped model of 107M parameters (106980096) on the King James Bible: 16 layers, hidden
# 768, 12 attention heads sharing 4 key/value groups, rotary embeddings, RMSNorm, SwiGLU MLP of
# Megatron's default width (2048), an untied output layer and no linear biases; sequence 512, the
# corpus's own 4096-token BPE (launch/prepare_kjv.sh, cached in build/quickstart/ as for the
# quickstart). Global batch 16 x 512 tokens; 600 steps see the ~1M-token corpus about 5 times,
# so a model this size will overfit it: the run shows the recipe, not a useful model.
# One process by default; ZT_NP=N runs N ranks through launch/mpirun.sh (add layout flags such
# as --zero-stage 3 or --tensor-model-parallel-size 2). Extra flags go to `zerotron train` and
# override the ones here (e.g. --bf16, --save DIR; a check: --train-iters 3 --lr-warmup-iters 1).
# Usage: examples/llama/train_kjv.sh [zerotron train flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
zt="$root/build/bin/zerotron"
data="$root/build/quickstart"
[[ -x $zt ]] || "$root/scripts/build.sh" release --target zerotron
"$root/launch/prepare_kjv.sh" "$data" "$zt"

run=("$zt")
np=${ZT_NP:-1}
((np > 1)) && run=("$root/launch/mpirun.sh" -np "$np" "$zt")
exec "${run[@]}" train \
  --data-path "$data/kjv_text_document" --split 969,30,1 --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$data/tokenizer/vocab.json" --merge-file "$data/tokenizer/merges.txt" \
  --num-layers 16 --hidden-size 768 --num-attention-heads 12 --seq-length 512 \
  --max-position-embeddings 512 --position-embedding-type rope --rotary-base 10000 \
  --normalization RMSNorm --norm-epsilon 1e-5 --swiglu \
  --group-query-attention --num-query-groups 4 \
  --untie-embeddings-and-output-weights --disable-bias-linear --init-method-std 0.02 \
  --attention-dropout 0 --hidden-dropout 0 \
  --micro-batch-size 4 --global-batch-size 16 --train-iters 600 \
  --lr 6e-4 --min-lr 6e-5 --lr-warmup-iters 60 --lr-decay-style cosine \
  --weight-decay 0.1 --clip-grad 1.0 --adam-beta2 0.95 \
  --log-interval 10 --eval-interval 100 --eval-iters 10 "$@"
