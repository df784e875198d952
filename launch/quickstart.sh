#!/usr/bin/env bash
# Fresh machine to a training log on real text: installs what is missing, builds, prepares the
# King James Bible (Debian package bible-kjv, public domain) as a Megatron indexed dataset, then
# trains a small GPT on it on 4 ranks with ZeRO stage 3, printing the validation loss as it falls.
# The prepared corpus and tokenizer are cached in build/quickstart/ (delete it to redo them).
# Extra flags are passed to `zerotron train` (e.g. --train-iters 50).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" release
zt="$root/build/bin/zerotron"
data="$root/build/quickstart"
prefix="$data/kjv_text_document"

"$root/launch/prepare_kjv.sh" "$data" "$zt"

# The layout zerotron exists for, on 4 ranks: tensor parallel 2 x data parallel 2, ZeRO stage 3
# (parameters, gradients and optimizer states partitioned over the data-parallel pair), and
# partitioned activation checkpoints (each tensor-parallel rank keeps half of every layer input).
exec "$root/launch/mpirun.sh" -np 4 "$zt" train \
  --data-path "$prefix" --split 969,30,1 --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$data/tokenizer/vocab.json" --merge-file "$data/tokenizer/merges.txt" \
  --tensor-model-parallel-size 2 --zero-stage 3 \
  --checkpoint-activations --partition-activations \
  --num-layers 4 --hidden-size 128 --num-attention-heads 4 --seq-length 128 \
  --micro-batch-size 4 --global-batch-size 16 \
  --train-iters 600 --lr 3e-3 --min-lr 3e-4 --lr-warmup-iters 60 --lr-decay-style cosine \
  --attention-dropout 0 --hidden-dropout 0 --log-interval 20 \
  --eval-interval 100 --eval-iters 10 "$@"
