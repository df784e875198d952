#!/usr/bin/env bash
# Fresh machine to a training log: installs what is missing, builds, then trains a small GPT.
# Extra flags are passed to `zerotron train` (e.g. --train-iters 50).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" release
exec "$root/build/bin/zerotron" train \
  --num-layers 4 --hidden-size 128 --num-attention-heads 4 --seq-length 128 \
  --mock-data --vocab-size 512 --micro-batch-size 4 --global-batch-size 8 \
  --train-iters 150 --lr 3e-3 --min-lr 3e-4 --lr-warmup-iters 15 --lr-decay-style cosine \
  --attention-dropout 0 --hidden-dropout 0 --log-interval 10 "$@"
