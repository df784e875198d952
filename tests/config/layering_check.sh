#!/usr/bin/env bash
# src/config and src/planner sit below src/train (docs/design/architecture.md, Layout): neither
# includes a src/train header nor links zt_train.
# usage: layering_check.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: layering_check.sh SOURCE_DIR}"
bad=0
for dir in src/config src/planner; do
  if grep -rn '#include "src/train/' "$dir"; then
    echo "$dir includes src/train/" >&2
    bad=1
  fi
  if grep -n 'zt_train' "$dir/CMakeLists.txt"; then
    echo "$dir links zt_train" >&2
    bad=1
  fi
done
[[ $bad == 0 ]] && echo "src/config and src/planner are independent of src/train"
exit $bad
