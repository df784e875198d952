#!/usr/bin/env bash
# train --load takes the model from the checkpoint: an imported Llama (rope, RMSNorm, SwiGLU, 2
# key/value heads of 4, untied head, no biases, no dropout in its config.json) trains with no
# model flag at all, and its first loss is the one of the same weights loaded with every flag
# restated (--finetune of the checkpoint it was exported from), printed digits equal: the same
# weights (the export and import are fp32 copies), the same data (both start at sample 0) and
# the same dropout (0, the Hugging Face config's; the flags' default 0.1 would change the loss).
# The config's bos/eos token ids survive training the import: its export carries them.
# usage: checkpoint_model.sh ZEROTRON
set -euo pipefail
zt=${1:?usage: checkpoint_model.sh ZEROTRON}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data=(--device cpu --mock-data --vocab-size 96 --train-iters 1 --log-interval 1)
model=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32
       --position-embedding-type rope --normalization RMSNorm --swiglu --group-query-attention
       --num-query-groups 2 --untie-embeddings-and-output-weights --disable-bias-linear
       --attention-dropout 0 --hidden-dropout 0)
"$zt" train "${data[@]}" "${model[@]}" --train-iters 2 --lr 1e-3 --save "$work/trained" >/dev/null
"$zt" export --load "$work/trained" --output "$work/hf/model.safetensors" >/dev/null
python3 -c 'import json, sys; p = sys.argv[1]; c = json.load(open(p))
c.update(bos_token_id=1, eos_token_id=2); json.dump(c, open(p, "w"))' "$work/hf/config.json"
"$zt" import --input "$work/hf" --save "$work/imported" >/dev/null
first_loss() { grep -o 'lm loss: [^ ]*' <<<"$1" | head -1; }
restated=$("$zt" train "${data[@]}" "${model[@]}" --load "$work/trained" --finetune)
taken=$("$zt" train "${data[@]}" --load "$work/imported" --save "$work/retrained" 2>&1) ||
  fail "the imported checkpoint without model flags: $taken"
echo "$taken"
grep -q 'hidden 64, 4 heads, seq 32, vocab 96' <<<"$taken" || fail "not the checkpoint's shape"
! grep -q 'warning' <<<"$taken" || fail "a warning where the checkpoint's settings were taken"
a=$(first_loss "$restated") b=$(first_loss "$taken")
[[ -n $a && $a == "$b" ]] || fail "first loss $b without the flags, $a with them"
"$zt" export --load "$work/retrained" --output "$work/hf2/model.safetensors" >/dev/null
ids=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))
print(c.get("bos_token_id"), c.get("eos_token_id"))' "$work/hf2/config.json")
[[ $ids == "1 2" ]] || fail "the trained import exports bos/eos $ids, not 1 2"
echo "PASS: the imported Llama trains without model flags, $b as with every flag restated; its bos/eos survive"
