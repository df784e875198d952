#!/usr/bin/env bash
# The checkpoint format does not drift (CTest: dist.checkpoint_format_compat): each fixture in
# tests/fixtures/checkpoints (fp32 tp 2, bf16 pp 2, fp16 ZeRO-3; written by an earlier zerotron,
# see make.sh there) is loaded by this zerotron on its own layout and saved again at the same
# iteration. Every shard file, `latest` and meta.json (but for the version that wrote it) must
# come back byte for byte: the reader takes the old files whole and the writer still writes them.
set -euo pipefail
zt=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
fixtures=$root/tests/fixtures/checkpoints
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
for dir in "$fixtures"/*/; do
  c=$(basename "$dir")
  # shellcheck disable=SC2046
  "$root/launch/mpirun.sh" -np "$(cat "$dir/np")" "$zt" train $(cat "$dir/args") \
    --load "$dir" --save "$work/$c" >"$work/$c.log" 2>&1 ||
    { echo "FAIL: $c: the load and save failed:"; tail -5 "$work/$c.log"; exit 1; }
  cmp "$dir/latest" "$work/$c/latest" || { echo "FAIL: $c: latest differs"; exit 1; }
  it=$(cat "$dir/latest")
  for f in "$dir/$it"/*.bin; do
    cmp "$f" "$work/$c/$it/$(basename "$f")" ||
      { echo "FAIL: $c: $it/$(basename "$f") differs from the fixture"; exit 1; }
  done
  # meta.json names the zerotron that wrote it; everything else is the same bytes.
  diff <(grep -v '"zerotron_version"' "$dir/$it/meta.json") \
    <(grep -v '"zerotron_version"' "$work/$c/$it/meta.json") ||
    { echo "FAIL: $c: $it/meta.json differs from the fixture"; exit 1; }
  [ "$(ls "$dir/$it" | wc -l)" = "$(ls "$work/$c/$it" | wc -l)" ] ||
    { echo "FAIL: $c: the save wrote other files: $(ls "$work/$c/$it" | tr '\n' ' ')"; exit 1; }
  echo "$c: $(ls "$dir/$it" | wc -l) files identical"
  n=$((n + 1))
done
[ "$n" -ge 3 ] || { echo "FAIL: only $n fixtures found in $fixtures"; exit 1; }
echo "PASS: $n checkpoints of the earlier format loaded and saved again byte for byte"
