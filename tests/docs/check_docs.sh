#!/usr/bin/env bash
# check_docs.sh ROOT [--allow-missing PATH]...
# Fails when README.md is longer than 300 lines, when it mentions "issue" followed by a number,
# when a relative Markdown link in README.md or docs/ points to a file that does not exist, or
# when a Markdown file or a code comment anywhere in the repository names a repository path
# (one starting with src/, kernels/, tests/, docs/, scripts/, launch/, bench/, examples/, apps/,
# cmake/ or .ci/) that does not exist. Such a path may name a file's stem (src/comm/watchdog for
# watchdog.h and watchdog.cpp, or a test binary tests/fuzz/idx_fuzz); another project's path is
# written after its name and a colon (NVIDIA/nccl:src/include/device.h) and is not checked.
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
# Repository paths named in prose: every line of a Markdown or Python file (docstrings), the
# comments of C++, shell and CMake files.
while IFS=: read -r f line path; do
  [[ -e $path ]] && continue
  compgen -G "$path.*" >/dev/null && continue
  echo "$f:$line: names '$path', which does not exist" >&2
  status=1
done < <(
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -- '*.md' '*.py' '*.h' '*.cpp' '*.cu' '*.cuh' '*.inc' '*.sh' '*.cmake' \
      'CMakeLists.txt' '*/CMakeLists.txt' '.ci/*'
  else # a source tree without git: every such file outside the build folders
    find . \( -name 'build*' -o -name '.git' \) -prune -o -type f \( -name '*.md' -o -name '*.py' \
      -o -name '*.[ch]' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.inc' \
      -o -name '*.sh' -o -name '*.cmake' -o -name CMakeLists.txt -o -path './.ci/*' \) -printf '%P\0'
  fi |
    xargs -0 awk '
      { text = $0 }
      FILENAME ~ /[.](h|cpp|cu|cuh|inc)$/ { i = index(text, "//"); text = i ? substr(text, i) : "" }
      FILENAME !~ /[.](md|py|h|cpp|cu|cuh|inc)$/ { i = index(text, "#"); text = i ? substr(text, i) : "" }
      { while (match(text, /(^|[^A-Za-z0-9_.\/:$-])(src|kernels|tests|docs|scripts|launch|bench|examples|apps|cmake|[.]ci)\/[A-Za-z0-9_.\/+-]*[A-Za-z0-9_\/+-]/)) {
          path = substr(text, RSTART, RLENGTH); sub(/^[^a-z.]/, "", path)
          print FILENAME ":" FNR ":" path
          text = substr(text, RSTART + RLENGTH)
        } }'
)
exit "$status"
