#!/usr/bin/env bash
# A mixture of experts end to end: a small random Hugging Face MixtralForCausalLM (4 layers,
# hidden 128, 4 heads in 2 key/value groups, 8 experts of width 256, top 2, the KJV tokenizer's
# 4096 tokens) made by transformers, imported, trained on the King James Bible (the corpus and
# tokenizer of the quickstart, launch/prepare_kjv.sh), sampled, and exported back; transformers
# loads the export. Python (transformers, in the reference checks' environment:
# scripts/install-python-deps.sh) only makes the random model and reads the export back.
# One process by default; ZT_NP=N runs training on N ranks. Extra flags go to `zerotron train`
# (e.g. --train-iters 3 for a check, --tensor-model-parallel-size 2 with ZT_NP=2).
# Usage: examples/moe/mixtral_kjv.sh [zerotron train flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
zt="$root/build/bin/zerotron"
data="$root/build/quickstart"
work="$root/build/moe-example"
[[ -x $zt ]] || "$root/scripts/build.sh" release --target zerotron
"$root/launch/prepare_kjv.sh" "$data" "$zt"
"$root/scripts/install-python-deps.sh"
py="$("$root/scripts/install-python-deps.sh" --print-path)/bin/python"
rm -rf "$work"
mkdir -p "$work"

"$py" - "$work/hf-random" <<'PY'
import sys
import torch
from transformers import MixtralConfig, MixtralForCausalLM
torch.manual_seed(0)
config = MixtralConfig(vocab_size=4096, hidden_size=128, intermediate_size=256,
                       num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                       num_local_experts=8, num_experts_per_tok=2, max_position_embeddings=256,
                       router_aux_loss_coef=0.01, tie_word_embeddings=False)
MixtralForCausalLM(config).save_pretrained(sys.argv[1])
PY
"$zt" import --input "$work/hf-random" --save "$work/ckpt"

run=("$zt")
np=${ZT_NP:-1}
((np > 1)) && run=("$root/launch/mpirun.sh" -np "$np" "$zt")
"${run[@]}" train --load "$work/ckpt" --save "$work/ckpt" --seq-length 256 \
  --data-path "$data/kjv_text_document" --split 969,30,1 --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$data/tokenizer/vocab.json" --merge-file "$data/tokenizer/merges.txt" \
  --micro-batch-size 8 --global-batch-size 16 --train-iters 300 --lr 1e-3 --min-lr 1e-4 \
  --lr-warmup-iters 30 --lr-decay-style cosine --clip-grad 1.0 --log-interval 20 \
  --eval-interval 100 --eval-iters 4 --save-interval 300 "$@"

"$zt" generate --load "$work/ckpt" --prompt "And God said" --max-new-tokens 24 --greedy
"$zt" export --load "$work/ckpt" --output "$work/hf/model.safetensors"
"$py" - "$work/hf" <<'PY'
import sys
from transformers import MixtralForCausalLM
m = MixtralForCausalLM.from_pretrained(sys.argv[1])
print(f"transformers loaded the export: {sum(p.numel() for p in m.parameters())} parameters, "
      f"{m.config.num_local_experts} experts, top {m.config.num_experts_per_tok}")
PY
