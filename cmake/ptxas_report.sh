#!/usr/bin/env bash
# CUDA compiler launcher: runs the compile (with any launcher after this one, e.g. ccache) and
# keeps ptxas's per-kernel resource lines (the compile passes -Xptxas=-v) in <object>.ptxas for
# scripts/check_cuda_resources.py, out of the build's console.
set -uo pipefail
obj=""
prev=""
for a in "$@"; do
  [[ ${prev} == -o ]] && obj=${a}
  prev=${a}
done
err=$(mktemp)
"$@" 2>"${err}"
rc=$?
if [[ -n ${obj} ]]; then
  grep -E '^ptxas info|bytes stack frame' "${err}" >"${obj}.ptxas.tmp"
  mv -f "${obj}.ptxas.tmp" "${obj}.ptxas"
fi
grep -vE '^ptxas info|bytes stack frame' "${err}" >&2
rm -f "${err}"
exit "${rc}"
