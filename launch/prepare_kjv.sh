#!/usr/bin/env bash
# Prepares the King James Bible (Debian package bible-kjv, public domain) as a Megatron indexed
# dataset with its own 4096-token byte-level BPE, in DIR:
#   DIR/kjv.txt, DIR/tokenizer/{vocab.json,merges.txt}, DIR/kjv_text_document.{bin,idx}
# Does nothing when DIR already holds them (delete DIR to redo them). Used by quickstart.sh and
# by the bf16-tracks-fp32 CTest, which share the cache in build/quickstart/.
# Usage: prepare_kjv.sh DIR ZEROTRON_BINARY
set -euo pipefail
data=$1
zt=$2
prefix="$data/kjv_text_document"
if [[ -f "$prefix.idx" && -f "$data/tokenizer/merges.txt" ]]; then
  echo "zerotron: using the prepared corpus in $data"
  exit 0
fi
command -v bible >/dev/null || {
  echo "zerotron: error: the 'bible' program (Debian package bible-kjv) is missing; run scripts/install-deps.sh" >&2
  exit 2
}
mkdir -p "$data"
# 4.4 MB, one verse per reference ("Ge1:1 In the beginning ..."), long verses wrapped. Each
# chapter becomes one document (1189 of them): references dropped, wrapped lines joined, one
# verse per line, a blank line between chapters (prepare-data's plain-text document break).
bible -f -l 'Gen1:1-Rev22:21' | awk '
  match($0, /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ /) {
    verse = substr($0, 1, RLENGTH - 1); sub(/^[1-3]?[A-Za-z]+[0-9]+:/, "", verse)
    if (n++ > 0) printf (verse == "1" ? "\n\n" : "\n")
    printf "%s", substr($0, RLENGTH + 1); next
  }
  { printf " %s", $0 }
  END { printf "\n" }' >"$data/kjv.txt.tmp"
mv "$data/kjv.txt.tmp" "$data/kjv.txt"
# Written under temporary names and moved into place last, so that an interrupted run (or two
# CTest processes racing) never leaves a half-written corpus that looks complete.
tmp=$(mktemp -d "$data/prep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$zt" train-tokenizer --input "$data/kjv.txt" --vocab-size 4096 --output-dir "$tmp/tokenizer"
"$zt" prepare-data --input "$data/kjv.txt" --output-prefix "$tmp/kjv" \
  --tokenizer-type GPT2BPETokenizer --vocab-file "$tmp/tokenizer/vocab.json" \
  --merge-file "$tmp/tokenizer/merges.txt" --append-eod
rm -rf "$data/tokenizer"
mv "$tmp/tokenizer" "$data/tokenizer"
mv "$tmp/kjv_text_document.bin" "$prefix.bin"
mv "$tmp/kjv_text_document.idx" "$prefix.idx"
