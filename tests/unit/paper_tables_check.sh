#!/usr/bin/env bash
# Runs examples/scaling/table1.sh and table2.sh and fails when any entry differs from the
# paper's by more than the paper's own rounding allows: 0.5% for Table 1 (printed to 3
# significant digits, 128B/1T entries floored), 2.5% for Table 2 (which prints 0.5T, 1T, 2T).
set -euo pipefail
zt=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
check() {  # script limit
  local out
  out=$("$root/examples/scaling/$1" "$zt")
  echo "$out"
  echo "$out" | grep -o '[+-][0-9.]*%' | tr -d '%+-' |
    awk -v lim="$2" -v name="$1" '$1 > lim { bad = 1; print name ": " $1 "% > " lim "%" }
      END { if (NR == 0) { print name ": no rows"; exit 1 } exit bad }'
}
check table1.sh 0.5
check table2.sh 2.5
