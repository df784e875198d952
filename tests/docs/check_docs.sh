#!/usr/bin/env bash
# check_docs.sh ROOT [--allow-missing PATH]...
# Fails when README.md is longer than 300 lines, when it mentions "issue" followed by a number,
# or when a relative Markdown link in README.md or docs/ points to a file that does not exist.
# Links inside fenced code blocks, absolute URLs and in-page anchors are not checked.
# --allow-missing names a link target (relative to ROOT) that may be absent, e.g. a generated
# file not produced in this build.
set -euo pipefail
root=${1:?usage: check_docs.sh ROOT [--allow-missing PATH]...}
shift
allowed=()
while [[ $# -gt 0 ]]; do
  [[ $1 == --allow-missing && $# -ge 2 ]] || { echo "check_docs.sh: bad argument '$1'" >&2; exit 2; }
  allowed+=("$2")
  shift 2
done
cd "$root"
status=0

lines=$(wc -l <README.md)
if ((lines > 300)); then
  echo "README.md: $lines lines, more than 300: move detail into docs/" >&2
  status=1
fi
if grep -n -i -E 'issue[[:space:]]+#?[0-9]' README.md >&2; then
  echo "README.md: the lines above refer to issue numbers: describe the behaviour instead" >&2
  status=1
fi

mapfile -t files < <(
  echo README.md
  [[ -d docs ]] && find docs -name '*.md' | sort
)
for f in "${files[@]}"; do
  dir=$(dirname "$f")
  # Outside fenced code blocks, every ](target) of an inline link or image.
  while IFS=: read -r line target; do
    target=${target%%#*}                 # drop an anchor
    target=${target%% *}                 # drop a "title"
    [[ -z $target || $target =~ ^[a-zA-Z][a-zA-Z0-9+.-]*: ]] && continue   # anchor only, URL
    if [[ $target == /* ]]; then path=${target#/}; else path=$dir/$target; fi
    [[ -e $path ]] && continue
    norm=$(realpath -m --relative-to=. "$path")
    skip=0
    for a in "${allowed[@]}"; do [[ $norm == "$a" ]] && skip=1; done
    ((skip)) && continue
    echo "$f:$line: link to '$target', which does not exist ($norm)" >&2
    status=1
  done < <(awk '/^[[:space:]]*```/ { fence = !fence; next }
                !fence { s = $0
                  while (match(s, /\]\([^)]*\)/)) {
                    print NR ":" substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH)
                  } }' "$f")
done
exit "$status"
